//! The shader's builds, each assembled from named pieces (WGSL has no include): the shader's
//! files, the output bindings with their access functions ([`OutputBindings`]), the trace hook
//! ([`Hook`]), and the entry points stamped from one body. Nothing is made by editing another
//! build's text.

use super::abi::{
    EntryPoint, DST_BINDING_SHIFT, GATHER_WGSL, JOIN_WGSL, MAX_DST_BINDINGS, SCHEDULES_WGSL,
};
use crate::error::{Result, SplitError};
use std::sync::OnceLock;

/// How a build binds the outputs, from binding 3 of group 0. Each comes with the three
/// functions the shader stores and loads output words through: `store_unit(i, v)`,
/// `store_word(i, j, x)` (word `j` of unit `i`) and `load_dst_word(i, j)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputBindings {
    /// One output buffer, bound twice: as units (`dst`, binding 3) for whole units, and as
    /// words (`dst_words`, binding 4) for an output's last unit, which may lie past the
    /// binding's last whole vec4. No lane writes one word through both.
    Pair,
    /// One output buffer, bound once as words (binding 3), for devices that allow only 4
    /// storage buffers per shader stage (`Limits::downlevel_defaults`): a whole unit is stored
    /// as its four words.
    WordsOnly,
    /// This many output buffers (1 to [`MAX_DST_BINDINGS`]), each as units at binding 3 + j
    /// and as words at 3 + n + j; an entry's buffer is the top bits of its unit
    /// ([`DST_BINDING_SHIFT`]), so one dispatch writes outputs in several buffers.
    Multi(u32),
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
/// `{size}` the shader constant of its workgroup size and `{block}` its schedule's block
/// function ([`EntryPoint::block_function`]).
const ENTRY_POINT: &str = "
@compute @workgroup_size({size})
fn {name}(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    {block}(start(wg, num_wg, lane), lane);
}
";

/// [`OutputBindings::Pair`]'s declarations and its store of a whole unit.
const PAIR_OUTPUTS: &str = "
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> dst_words: array<u32>;

fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    dst[i] = v;
}
";

/// [`OutputBindings::WordsOnly`]'s declaration and its store of a whole unit, as four words.
const WORDS_ONLY_OUTPUTS: &str = "
@group(0) @binding(3) var<storage, read_write> dst_words: array<u32>;

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

/// The outputs' piece of a build.
fn outputs_piece(outputs: OutputBindings) -> Result<String> {
    let bindings = match outputs {
        OutputBindings::Pair => return Ok(format!("{PAIR_OUTPUTS}{WORD_ACCESSES}")),
        OutputBindings::WordsOnly => return Ok(format!("{WORDS_ONLY_OUTPUTS}{WORD_ACCESSES}")),
        OutputBindings::Multi(n) if (1..=MAX_DST_BINDINGS).contains(&n) => n,
        OutputBindings::Multi(n) => {
            return Err(SplitError::Device(format!(
                "the multi-output build takes 1 to {MAX_DST_BINDINGS} output bindings, not {n}"
            )))
        }
    };
    let declare = |name: &str, binding: u32, ty: &str| {
        format!("@group(0) @binding({binding}) var<storage, read_write> {name}: array<{ty}>;\n")
    };
    let units = (0..bindings).map(|j| declare(&format!("dst{j}"), 3 + j, "vec4<u32>"));
    let words = (0..bindings).map(|j| declare(&format!("dst_words{j}"), 3 + bindings + j, "u32"));
    let cases = |access: &str| -> String {
        (0..bindings)
            .map(|b| {
                format!(
                    "        case {b}u: {{ {}; }}\n",
                    access.replace("{b}", &b.to_string())
                )
            })
            .collect()
    };
    Ok(MULTI_OUTPUTS
        .replace("{declarations}", &units.chain(words).collect::<String>())
        .replace("{store_unit_cases}", &cases("dst{b}[unit] = v"))
        .replace(
            "{store_word_cases}",
            &cases("dst_words{b}[unit * 4u + j] = x"),
        )
        .replace(
            "{load_word_cases}",
            &cases("x = dst_words{b}[unit * 4u + j]"),
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

/// The gather shader with `outputs` and `hook`: `shaders/split_gather.wgsl`, the outputs'
/// piece, the hook, `shaders/split_gather_schedules.wgsl` and `split_gather_join.wgsl`, then
/// one entry point per [`EntryPoint`], stamped from [`ENTRY_POINT`].
pub fn gather_source(outputs: OutputBindings, hook: Hook) -> Result<String> {
    let mut source = format!(
        "{GATHER_WGSL}\n// ---- Output bindings: {outputs:?} ----\n{}\n// ---- Trace hook ----\n{}\n{SCHEDULES_WGSL}\n{JOIN_WGSL}\n// ---- Entry points ----\n",
        outputs_piece(outputs)?,
        hook_piece(hook)
    );
    for entry in EntryPoint::ALL {
        let (block, size) = entry.block_function();
        source += &ENTRY_POINT
            .replace("{name}", entry.name())
            .replace("{size}", size)
            .replace("{block}", block);
    }
    Ok(source)
}

/// The build that splits into one output buffer ([`OutputBindings::Pair`], [`Hook::Silent`]),
/// made once per process.
pub fn shader_source() -> &'static str {
    static SOURCE: OnceLock<String> = OnceLock::new();
    SOURCE.get_or_init(|| {
        gather_source(OutputBindings::Pair, Hook::Silent).expect("the pair build takes no count")
    })
}

/// The benchmark's copy kernel with `hook`.
#[cfg(feature = "bench")]
pub fn copy_kernel_source(hook: Hook) -> String {
    format!("{COPY_WGSL}\n// ---- Trace hook ----\n{}", hook_piece(hook))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(source: &str) -> naga::Module {
        let module = naga::front::wgsl::parse_str(source).expect("the build parses");
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .expect("the build validates");
        module
    }

    /// `(name, binding)` of each storage variable whose name starts with `dst`.
    fn outputs(module: &naga::Module) -> Vec<(String, u32)> {
        let mut dst: Vec<(String, u32)> = module
            .global_variables
            .iter()
            .filter_map(|(_, v)| {
                let name = v.name.clone()?;
                let binding = v.binding.as_ref()?.binding;
                name.starts_with("dst").then_some((name, binding))
            })
            .collect();
        dst.sort_by_key(|d| d.1);
        dst
    }

    #[test]
    fn each_build_binds_its_outputs() {
        let pair = module(shader_source());
        assert_eq!(
            outputs(&pair),
            [("dst".to_string(), 3), ("dst_words".to_string(), 4)]
        );
        for bindings in [1, 2, MAX_DST_BINDINGS] {
            let source = gather_source(OutputBindings::Multi(bindings), Hook::Silent).unwrap();
            let units = (0..bindings).map(|j| (format!("dst{j}"), 3 + j));
            let words = (0..bindings).map(|j| (format!("dst_words{j}"), 3 + bindings + j));
            let want: Vec<(String, u32)> = units.chain(words).collect();
            assert_eq!(outputs(&module(&source)), want);
        }
        let words = gather_source(OutputBindings::WordsOnly, Hook::Silent).unwrap();
        let words = module(&words);
        assert_eq!(outputs(&words), [("dst_words".to_string(), 3)]);
        let storage = words
            .global_variables
            .iter()
            .filter(|(_, v)| matches!(v.space, naga::AddressSpace::Storage { .. }))
            .count();
        assert_eq!(storage, 4, "the words build fits downlevel devices");
        for bad in [0, MAX_DST_BINDINGS + 1] {
            let err = gather_source(OutputBindings::Multi(bad), Hook::Silent).unwrap_err();
            assert!(err.to_string().contains(&bad.to_string()), "{err}");
        }
    }

    #[test]
    fn the_recording_hook_adds_its_buffer_at_its_binding() {
        let source = gather_source(OutputBindings::Pair, Hook::Recording(5)).unwrap();
        let traced = module(&source);
        let trace = traced
            .global_variables
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some("trace_out"))
            .expect("the trace buffer")
            .1;
        assert_eq!(trace.binding.as_ref().map(|b| b.binding), Some(5));
        assert!(module(shader_source())
            .global_variables
            .iter()
            .all(|(_, v)| v.name.as_deref() != Some("trace_out")));
    }
}
