//! The shader's builds, each assembled from named pieces (WGSL has no include): the shader's
//! files, the input bindings ([`InputBindings`]) and the output bindings ([`OutputBindings`])
//! with their access functions, the trace hook ([`Hook`]), and the entry points stamped from
//! one body. Nothing is made by editing another build's text.
//!
//! Group 0 binds, in order: the table (binding 0), each input as words, each input as vec4s,
//! each output as units, each output as words, and the trace build's records. With one input
//! that is the table at 0, the input at 1 and 2 and the outputs from 3.

use super::abi::{
    EntryPoint, DST_BINDING_SHIFT, GATHER_WGSL, JOIN_WGSL, MAX_DST_BINDINGS, MAX_SRC_BINDINGS,
    SCHEDULES_WGSL,
};
use crate::error::{Result, SplitError};
use std::sync::OnceLock;

/// How a build binds the inputs, from binding 1 of group 0: each as words, then each as vec4s
/// (the same window twice). Each comes with the three functions the shader loads input words
/// through: `load_word_in(b, w)`, `load_vec4_in(b, i)` and `input_words(b)`, of input binding
/// `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputBindings {
    /// One input buffer (`src` at binding 1, `src4` at 2); `b` is always 0.
    One,
    /// This many input buffers (1 to [`MAX_SRC_BINDINGS`]), `src{j}` at binding 1 + j and
    /// `src4_{j}` at 1 + n + j; a join's segment names its binding (`Segment.binding`), so one
    /// dispatch of a concat reads inputs in several buffers.
    Multi(u32),
}

impl InputBindings {
    /// Input buffers the build binds.
    pub fn count(self) -> u32 {
        match self {
            InputBindings::One => 1,
            InputBindings::Multi(n) => n,
        }
    }
}

/// How a build binds the outputs, after the inputs. Each comes with the three functions the
/// shader stores and loads output words through: `store_unit(i, v)`, `store_word(i, j, x)`
/// (word `j` of unit `i`) and `load_dst_word(i, j)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputBindings {
    /// One output buffer, bound twice: as units (`dst`) for whole units, and as words
    /// (`dst_words`, the next binding) for an output's last unit, which may lie past the
    /// binding's last whole vec4. No lane writes one word through both.
    Pair,
    /// One output buffer, bound once as words, for devices that allow only 4 storage buffers
    /// per shader stage (`Limits::downlevel_defaults`) and for WebGPU: a whole unit is stored
    /// as its four words.
    WordsOnly,
    /// This many output buffers (1 to [`MAX_DST_BINDINGS`]), each as units (`dst{j}`) and
    /// then each as words (`dst_words{j}`); an entry's buffer is the top bits of its unit
    /// ([`DST_BINDING_SHIFT`]), so one dispatch writes outputs in several buffers.
    Multi(u32),
}

impl OutputBindings {
    /// Output buffers the build binds, and the views of each (units and words, or words).
    pub fn count_and_views(self) -> (u32, u32) {
        match self {
            OutputBindings::Pair => (1, 2),
            OutputBindings::WordsOnly => (1, 1),
            OutputBindings::Multi(n) => (n, 2),
        }
    }
}

/// The trace hook every global access calls: `trace(kind, address, size)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Empty: the builds that split.
    Silent,
    /// Records each access into a buffer at this binding of group 0 ([`RECORDING_HOOK`]): the
    /// memory trace's builds (`bench` feature).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    Recording(u32),
}

/// The one body every entry point is stamped from: `{name}` is the entry point's name,
/// `{block}` its block function ([`EntryPoint::block_function`]), at the workgroup size the
/// pipeline's override constant sets ([`super::abi::ProgramKey`]).
const ENTRY_POINT: &str = "
@compute @workgroup_size(WORKGROUP_SIZE)
fn {name}(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    {block}(start(wg, num_wg, lane), lane);
}
";

/// [`InputBindings::One`]'s declarations (from binding `{first}`) and access functions.
const ONE_INPUT: &str = "
@group(0) @binding({first}) var<storage, read> src: array<u32>;
@group(0) @binding({second}) var<storage, read> src4: array<vec4<u32>>;

fn load_word_in(b: u32, w: u32) -> u32 {
    trace(TRACE_SRC, w * 4u, 4u);
    return src[w];
}

fn load_vec4_in(b: u32, i: u32) -> vec4<u32> {
    trace(TRACE_SRC, i * 16u, 16u);
    return src4[i];
}

fn input_words(b: u32) -> u32 {
    return arrayLength(&src);
}
";

/// [`InputBindings::Multi`]'s access functions; `{declarations}` are its bindings, and each
/// `{..._cases}` the switch arms that reach binding `b` as `src{b}` or `src4_{b}`.
const MULTI_INPUTS: &str = "
{declarations}
fn load_word_in(b: u32, w: u32) -> u32 {
    trace(TRACE_SRC, w * 4u, 4u);
    var x = 0u;
    switch (b) {
{word_cases}        default: {}
    }
    return x;
}

fn load_vec4_in(b: u32, i: u32) -> vec4<u32> {
    trace(TRACE_SRC, i * 16u, 16u);
    var v = vec4<u32>(0u);
    switch (b) {
{vec4_cases}        default: {}
    }
    return v;
}

fn input_words(b: u32) -> u32 {
    var n = 0u;
    switch (b) {
{length_cases}        default: {}
    }
    return n;
}
";

/// [`OutputBindings::Pair`]'s declarations (from binding `{first}`) and its store of a whole
/// unit.
const PAIR_OUTPUTS: &str = "
@group(0) @binding({first}) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding({second}) var<storage, read_write> dst_words: array<u32>;

fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    dst[i] = v;
}
";

/// [`OutputBindings::WordsOnly`]'s declaration and its store of a whole unit, as four words.
const WORDS_ONLY_OUTPUTS: &str = "
@group(0) @binding({first}) var<storage, read_write> dst_words: array<u32>;

fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    dst_words[i * 4u] = v.x;
    dst_words[i * 4u + 1u] = v.y;
    dst_words[i * 4u + 2u] = v.z;
    dst_words[i * 4u + 3u] = v.w;
}
";

/// The word accesses of both single-buffer builds, through `dst_words`.
const WORD_ACCESSES: &str = "
fn store_word(i: u32, j: u32, x: u32) {
    trace(TRACE_DST, i * 16u + j * 4u, 4u);
    dst_words[i * 4u + j] = x;
}

fn load_dst_word(i: u32, j: u32) -> u32 {
    return dst_words[i * 4u + j];
}
";

/// [`OutputBindings::Multi`]'s access functions; `{declarations}` are its bindings, and
/// each `{..._cases}` the switch arms that reach binding `b` as `dst{b}` or `dst_words{b}`.
const MULTI_OUTPUTS: &str = "
{declarations}
fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    let unit = i & {mask}u;
    switch (i >> {shift}u) {
{store_unit_cases}        default: {}
    }
}

fn store_word(i: u32, j: u32, x: u32) {
    trace(TRACE_DST, i * 16u + j * 4u, 4u);
    let unit = i & {mask}u;
    switch (i >> {shift}u) {
{store_word_cases}        default: {}
    }
}

fn load_dst_word(i: u32, j: u32) -> u32 {
    var x = 0u;
    let unit = i & {mask}u;
    switch (i >> {shift}u) {
{load_word_cases}        default: {}
    }
    return x;
}
";

/// [`Hook::Silent`].
const SILENT_HOOK: &str = "
fn trace(kind: u32, address: u32, size: u32) {}
";

/// [`Hook::Recording`]: `{binding}` is the trace buffer's.
///
/// The buffer starts with one `vec4<u32>` header written by the host (workgroup sampling
/// stride, traced workgroups, records per lane, lanes per workgroup); the `seq`-th access of
/// lane `lane` of traced workgroup `slot` is the `vec4<u32>` (kind, address, size, n + 1) at
/// index `1 + (slot * lanes + lane) * records + seq`, where `n` counts the lane's earlier
/// accesses of the same kind. Lanes in step make their n-th load (or store) together, so `n`
/// is what groups accesses into warp instructions: lane 0's table reads do not shift its loads.
/// The shader sets `trace_block`, `trace_lane` and `trace_seq` as each lane starts.
pub const RECORDING_HOOK: &str = "
@group(0) @binding({binding}) var<storage, read_write> trace_out: array<vec4<u32>>;
var<private> trace_kind_seq: array<u32, 3>;

fn trace(kind: u32, address: u32, size: u32) {
    let seq = trace_seq;
    trace_seq = seq + 1u;
    let n = trace_kind_seq[kind];
    trace_kind_seq[kind] = n + 1u;
    let cfg = trace_out[0];
    let slot = trace_block / cfg.x;
    if (trace_block % cfg.x != 0u || slot >= cfg.y || seq >= cfg.z) {
        return;
    }
    trace_out[1u + (slot * cfg.w + trace_lane) * cfg.z + seq] = vec4<u32>(kind, address, size, n + 1u);
}
";

/// The benchmark's copy kernel, `shaders/bench_copy_vec4.wgsl`, without its hook.
#[cfg(feature = "bench")]
const COPY_WGSL: &str = include_str!("../../../shaders/bench_copy_vec4.wgsl");

/// Switch arms, one per binding `b` in `0..n`, each running `access` with `{b}` replaced.
fn cases(n: u32, access: &str) -> String {
    (0..n)
        .map(|b| {
            format!(
                "        case {b}u: {{ {}; }}\n",
                access.replace("{b}", &b.to_string())
            )
        })
        .collect()
}

/// A storage declaration at `binding` of group 0.
fn declare(name: &str, binding: u32, access: &str, ty: &str) -> String {
    format!("@group(0) @binding({binding}) var<storage, {access}> {name}: array<{ty}>;\n")
}

/// The inputs' piece of a build, from binding 1.
fn inputs_piece(inputs: InputBindings) -> Result<String> {
    let n = match inputs {
        InputBindings::One => {
            return Ok(ONE_INPUT.replace("{first}", "1").replace("{second}", "2"))
        }
        InputBindings::Multi(n) if (1..=MAX_SRC_BINDINGS).contains(&n) => n,
        InputBindings::Multi(n) => {
            return Err(SplitError::Device(format!(
                "the multi-input build takes 1 to {MAX_SRC_BINDINGS} input bindings, not {n}"
            )))
        }
    };
    let words = (0..n).map(|j| declare(&format!("src{j}"), 1 + j, "read", "u32"));
    let vec4s = (0..n).map(|j| declare(&format!("src4_{j}"), 1 + n + j, "read", "vec4<u32>"));
    Ok(MULTI_INPUTS
        .replace("{declarations}", &words.chain(vec4s).collect::<String>())
        .replace("{word_cases}", &cases(n, "x = src{b}[w]"))
        .replace("{vec4_cases}", &cases(n, "v = src4_{b}[i]"))
        .replace("{length_cases}", &cases(n, "n = arrayLength(&src{b})")))
}

/// The outputs' piece of a build, from binding `first`.
fn outputs_piece(outputs: OutputBindings, first: u32) -> Result<String> {
    let single = |piece: &str| {
        format!("{piece}{WORD_ACCESSES}")
            .replace("{first}", &first.to_string())
            .replace("{second}", &(first + 1).to_string())
    };
    let bindings = match outputs {
        OutputBindings::Pair => return Ok(single(PAIR_OUTPUTS)),
        OutputBindings::WordsOnly => return Ok(single(WORDS_ONLY_OUTPUTS)),
        OutputBindings::Multi(n) if (1..=MAX_DST_BINDINGS).contains(&n) => n,
        OutputBindings::Multi(n) => {
            return Err(SplitError::Device(format!(
                "the multi-output build takes 1 to {MAX_DST_BINDINGS} output bindings, not {n}"
            )))
        }
    };
    let units =
        (0..bindings).map(|j| declare(&format!("dst{j}"), first + j, "read_write", "vec4<u32>"));
    let words = (0..bindings).map(|j| {
        declare(
            &format!("dst_words{j}"),
            first + bindings + j,
            "read_write",
            "u32",
        )
    });
    Ok(MULTI_OUTPUTS
        .replace("{declarations}", &units.chain(words).collect::<String>())
        .replace("{store_unit_cases}", &cases(bindings, "dst{b}[unit] = v"))
        .replace(
            "{store_word_cases}",
            &cases(bindings, "dst_words{b}[unit * 4u + j] = x"),
        )
        .replace(
            "{load_word_cases}",
            &cases(bindings, "x = dst_words{b}[unit * 4u + j]"),
        )
        .replace("{mask}", &format!("{:#x}", (1u32 << DST_BINDING_SHIFT) - 1))
        .replace("{shift}", &DST_BINDING_SHIFT.to_string()))
}

/// The hook's piece of a build.
fn hook_piece(hook: Hook) -> String {
    match hook {
        Hook::Silent => SILENT_HOOK.into(),
        Hook::Recording(binding) => RECORDING_HOOK.replace("{binding}", &binding.to_string()),
    }
}

/// The gather shader with `inputs`, `outputs` and `hook`: `shaders/split_gather.wgsl`, the
/// inputs' and the outputs' pieces, the hook, `shaders/split_gather_schedules.wgsl` and
/// `split_gather_join.wgsl`, then one entry point per [`EntryPoint`], stamped from
/// [`ENTRY_POINT`].
pub fn gather_source(inputs: InputBindings, outputs: OutputBindings, hook: Hook) -> Result<String> {
    let first_output = 1 + 2 * inputs.count();
    let mut source = format!(
        "{GATHER_WGSL}\n// ---- Input bindings: {inputs:?} ----\n{}\n// ---- Output bindings: {outputs:?} ----\n{}\n// ---- Trace hook ----\n{}\n{SCHEDULES_WGSL}\n{JOIN_WGSL}\n// ---- Entry points ----\n",
        inputs_piece(inputs)?,
        outputs_piece(outputs, first_output)?,
        hook_piece(hook)
    );
    for entry in EntryPoint::ALL {
        let block = entry.block_function();
        source += &ENTRY_POINT
            .replace("{name}", entry.name())
            .replace("{block}", block);
    }
    Ok(source)
}

/// The build that splits into one output buffer ([`OutputBindings::Pair`], [`Hook::Silent`]),
/// made once per process.
pub fn shader_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        gather_source(InputBindings::One, OutputBindings::Pair, Hook::Silent)
            .expect("the plain build takes no count")
    })
}

/// The benchmark's copy kernel with `hook`.
#[cfg(feature = "bench")]
pub fn copy_kernel_source(hook: Hook) -> String {
    format!("{COPY_WGSL}\n// ---- Trace hook ----\n{}", hook_piece(hook))
}

#[cfg(test)]
mod builds_tests;
