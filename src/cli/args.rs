//! The command line, as clap sees it, and the parsing of the tensor-valued options.

use super::exit::{CliError, CliResult};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use wgpu_split::{npy, DeviceChoice, GatherMode, IntTensor};

/// Split-1, VariadicSplit-1, SplitToSequence-11 and ONNX Split on the GPU through wgpu.
///
/// With no subcommand, runs the examples of the operator specifications on the default
/// adapter and checks each against the CPU reference.
#[derive(Debug, Parser)]
#[command(name = "wgpu-split", version)]
pub struct Cli {
    /// Subcommand; none runs the spec examples.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Backend for the demo: auto, vulkan, gl, metal or dx12 (default: $WGPU_SPLIT_BACKEND,
    /// $WGPU_BACKEND or auto).
    #[arg(long, global = false)]
    pub backend: Option<String>,
    /// Adapter for the demo: an index of `wgpu-split info` or part of a name (default:
    /// $WGPU_ADAPTER_NAME, else the preferred one).
    #[arg(long, global = false)]
    pub adapter: Option<String>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the spec examples (the default).
    Demo,
    /// List adapters and the limits that matter to a split.
    Info(InfoArgs),
    /// Split a .npy file into DIR/output_0.npy ... DIR/output_{k-1}.npy.
    Run(Box<RunArgs>),
    /// Time the standard suite against the device's own copies.
    Bench(BenchArgs),
}

/// Options of `bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// auto, vulkan, gl, metal or dx12 (default: $WGPU_SPLIT_BACKEND, $WGPU_BACKEND or auto).
    #[arg(long)]
    pub backend: Option<String>,
    /// An adapter index of `wgpu-split info`, or part of an adapter's name.
    #[arg(long)]
    pub adapter: Option<String>,
    /// Five timed runs per figure instead of fifteen.
    #[arg(long)]
    pub quick: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run only these cases (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// Which routes the splits may take: auto (the device's cheapest), gather (the gather
    /// dispatch alone, to measure the kernel on any adapter) or copies.
    #[arg(long, default_value = "auto")]
    pub route: String,
    /// Also draw the rates as an SVG chart: per case, the split beside the device's copy and
    /// copy kernel in the same run.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Splits (and copies, and copy kernels) recorded into each timed submission; figures
    /// are per split. On a GPU, 20 or more takes the fixed cost of a submission out of them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub batch: u16,
    /// Also trace each case's gather as a GPU runs it and report its memory figures (sector
    /// efficiency, lines and table bytes per 512 bytes moved) beside the copy kernel's.
    #[arg(long)]
    pub memory: bool,
    /// How the gather's lanes map to units: cpu (each lane a run) or gpu (consecutive lanes,
    /// consecutive units); default: the adapter's kind.
    #[arg(long)]
    pub gather_mode: Option<GatherMode>,
    /// The most units (or groups of rows) one gather lane takes, 1 to 468: fewer workgroups
    /// the higher it is; default: the adapter's kind (4 on GPUs, 468 on CPU adapters).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=468))]
    pub max_steps_per_lane: Option<u32>,
}

/// Options of `info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The operators `run` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    /// OpenVINO Split-1.
    Split,
    /// OpenVINO VariadicSplit-1.
    VariadicSplit,
    /// ONNX SplitToSequence-11.
    SplitToSequence,
    /// ONNX Split, at any opset (--opset).
    OnnxSplit,
    /// OpenVINO Concat-1, or ONNX Concat with --opset: the inputs joined along --axis.
    Concat,
    /// ONNX ConcatFromSequence-11: joined along --axis (--new-axis=0), or stacked on a new
    /// axis there (--new-axis=1).
    ConcatFromSequence,
    /// ONNX Gather-13: rows of the input on --axis (default 0) picked by --indices (i32 or
    /// i64, any shape; a negative one counts from the end). An index out of range is an
    /// error (exit 2) naming the first, and nothing is written.
    Gather,
    /// ONNX ScatterND-18 (reduction none) with --indices of shape [..., 1] (i32, i64 or u32): the
    /// rows of --updates placed into a copy of the input; an index out of range as for
    /// gather.
    ScatterNd,
    /// Get rows (ggml's GET_ROWS, PyTorch's index_select on dim 0, an embedding): rows of the
    /// input's first axis picked by --indices (i32, i64 or u32, any shape); a negative index
    /// is out of range, and an index out of range is an error (exit 2), as for gather.
    GetRows,
    /// Set rows (ggml's SET_ROWS, PyTorch's index_copy_ on dim 0): row i of --updates (of
    /// shape indices ++ input[1..]) placed at row indices[i] of a copy of the input; an index
    /// out of range as for get-rows.
    SetRows,
}

impl Op {
    /// Whether this operator joins several inputs into one output.
    pub fn is_concat(self) -> bool {
        matches!(self, Op::Concat | Op::ConcatFromSequence)
    }

    /// Whether this operator moves rows placed by indices.
    pub fn moves_rows(self) -> bool {
        matches!(self, Op::Gather | Op::ScatterNd | Op::GetRows | Op::SetRows)
    }
}

/// Options of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The operator.
    #[arg(long, value_enum)]
    pub op: Op,
    /// Input tensor (.npy); the concat operators take it once per input, in order.
    #[arg(long, required = true)]
    pub input: Vec<PathBuf>,
    /// Directory for output_{i}.npy; created if missing, written only on success.
    #[arg(long)]
    pub out: PathBuf,
    /// gather, scatter-nd, get-rows, set-rows: the indices (.npy of i32, i64 or u32).
    #[arg(long)]
    pub indices: Option<PathBuf>,
    /// scatter-nd, set-rows: the updates (.npy of the input's dtype, or f32 into an f16 or
    /// bf16 input, rounded to nearest even).
    #[arg(long)]
    pub updates: Option<PathBuf>,
    /// gather, get-rows: the output's dtype, f32 to read an f16 or bf16 input into f32
    /// (default: the input's).
    #[arg(long)]
    pub rows_dtype: Option<String>,
    /// Axis: an integer or a .npy holding a scalar or shape [1] integer tensor.
    #[arg(long, allow_hyphen_values = true)]
    pub axis: Option<String>,
    /// split: number of equal parts.
    #[arg(long, allow_hyphen_values = true)]
    pub num_splits: Option<i64>,
    /// variadic-split: L1,L2,... (one may be -1) or a 1-D integer .npy.
    #[arg(long, allow_hyphen_values = true)]
    pub lengths: Option<String>,
    /// split-to-sequence / onnx-split: N (scalar), [L1,L2,...] (1-D) or a 0-d/1-D integer .npy.
    #[arg(long, allow_hyphen_values = true)]
    pub split: Option<String>,
    /// split-to-sequence: keep the split axis when no split is given (0 or 1, default 1).
    #[arg(long, allow_hyphen_values = true)]
    pub keepdims: Option<i64>,
    /// onnx-split: number of outputs (equal parts before opset 18, ceil-sized chunks from 18).
    #[arg(long, allow_hyphen_values = true)]
    pub num_outputs: Option<i64>,
    /// onnx-split: the model's ONNX opset, 1 to 27 (default 27). The Split version in force:
    /// opset 1 Split-1, 2-10 Split-2, 11-12 Split-11, 13-17 Split-13, 18-27 Split-18.
    /// concat: run ONNX Concat at this opset (1-3 Concat-1, 4-10 Concat-4, 11-12 Concat-11,
    /// 13-27 Concat-13) instead of OpenVINO Concat-1.
    #[arg(long)]
    pub opset: Option<u32>,
    /// concat-from-sequence: 1 stacks the inputs on a new axis, 0 (the default) joins them.
    #[arg(long, allow_hyphen_values = true)]
    pub new_axis: Option<i64>,
    /// auto, vulkan, gl, metal, dx12, or cpu (the CPU reference alone).
    #[arg(long)]
    pub backend: Option<String>,
    /// An adapter index of `wgpu-split info`, or part of an adapter's name.
    #[arg(long)]
    pub adapter: Option<String>,
    /// Skip the check against the CPU reference.
    #[arg(long)]
    pub no_verify: bool,
    /// Print one JSON object instead of text (and no progress bar).
    #[arg(long)]
    pub json: bool,
    /// No progress bar (it otherwise appears on a terminal once a split takes a second).
    #[arg(long)]
    pub quiet: bool,
    /// Input bytes split at a time, with a K, M or G suffix (default 4M, at most 1G; at least
    /// one element, a smaller window is raised to one): memory holds a few windows, whatever
    /// the size of the input.
    #[arg(long, value_parser = size)]
    pub window: Option<u64>,
    /// The split operators: each output written with its axes permuted, P0,P1,... (numpy's
    /// transpose of the output, e.g. 0,2,1,3), through a view in the split's one pass. Reads
    /// the whole input into memory.
    #[arg(long)]
    pub transpose: Option<String>,
}

/// A byte count with an optional K, M or G suffix (powers of 1024): `--window=64M`.
fn size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 10),
        Some((i, 'm' | 'M')) => (&t[..i], 20),
        Some((i, 'g' | 'G')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a byte count (like 65536, 64K, 16M or 1G)"))?;
    match n.checked_mul(1 << shift) {
        Some(bytes) if bytes > 0 => Ok(bytes),
        Some(_) => Err("a window must hold at least one byte".into()),
        None => Err(format!("{text:?} overflows a 64-bit byte count")),
    }
}

/// The device `--backend` and `--adapter` pick, the environment filling in what they leave
/// out (`WGPU_SPLIT_BACKEND` or `WGPU_BACKEND`, `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`).
pub fn device(backend: Option<&str>, adapter: Option<&str>) -> CliResult<DeviceChoice> {
    let mut choice = DeviceChoice::from_env()?;
    if let Some(b) = backend {
        choice.backend = b.parse()?;
    }
    if let Some(a) = adapter {
        choice.adapter = a.parse()?;
    }
    Ok(choice)
}

fn is_npy(value: &str) -> bool {
    value.to_ascii_lowercase().ends_with(".npy")
}

fn parse_int(option: &str, text: &str) -> CliResult<i64> {
    text.trim()
        .parse()
        .map_err(|_| CliError::usage(format!("--{option}: {text:?} is not an integer")))
}

fn parse_list(option: &str, text: &str) -> CliResult<Vec<i64>> {
    let inner = text.trim();
    if inner.is_empty() {
        return Ok(vec![]);
    }
    inner.split(',').map(|t| parse_int(option, t)).collect()
}

/// Reads an integer tensor from a .npy file.
fn int_tensor_file(path: &str, input: &'static str) -> CliResult<IntTensor> {
    let tensor = npy::read(Path::new(path))?;
    Ok(IntTensor::from_host(&tensor, input)?)
}

/// `--axis=N` or `--axis=FILE.npy`.
pub fn axis(value: &str) -> CliResult<IntTensor> {
    if is_npy(value) {
        int_tensor_file(value, "axis")
    } else {
        Ok(IntTensor::scalar(parse_int("axis", value)?))
    }
}

/// `--lengths=L1,L2,...` or `--lengths=FILE.npy`.
pub fn lengths(value: &str) -> CliResult<IntTensor> {
    if is_npy(value) {
        int_tensor_file(value, "split_lengths")
    } else {
        Ok(IntTensor::vector(parse_list("lengths", value)?))
    }
}

/// `--split=N`, `--split=[L1,L2,...]` or `--split=FILE.npy`.
pub fn split(value: &str) -> CliResult<IntTensor> {
    let v = value.trim();
    if is_npy(v) {
        int_tensor_file(v, "split")
    } else if let Some(list) = v.strip_prefix('[') {
        let list = list.strip_suffix(']').ok_or_else(|| {
            CliError::usage(format!(
                "--split: {value:?} opens '[' but does not close it"
            ))
        })?;
        Ok(IntTensor::vector(parse_list("split", list)?))
    } else {
        Ok(IntTensor::scalar(parse_int("split", v)?))
    }
}
