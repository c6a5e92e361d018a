//! The shader's builds, each assembled from named pieces (WGSL has no include): the shader's
//! files, the input bindings ([`InputBindings`]) and the output bindings ([`OutputBindings`])
//! with their access functions, the trace hook ([`Hook`]), the channels' bodies
//! ([`Bodies`]), and the entry points stamped from one body. Nothing is made by editing
//! another build's text.
//!
//! Group 0 binds, in the one order [`slots()`] gives (and every declaration, layout and bind
//! group is made from): the table (binding 0), each input as words, each input as vec4s, each
//! output window's units, each output window's tail, and the trace build's records. With one
//! input that is the table at 0, the input at 1 and 2 and the outputs from 3.

use super::abi::{
    Channels, EntryPoint, ProgramKey, CHANNELS_WGSL, GATHER_WGSL, INDEXED_GATHERS_WGSL,
    INDEXED_SCATTER_WGSL, INDEXED_WGSL, JOIN_RUNS_WGSL, JOIN_WGSL, NARROW_WGSL, SCATTER_BYTES_WGSL,
    SCATTER_WORDS_WGSL, SCHEDULES_WGSL, TABLE_WGSL,
};
use crate::error::Result;
use bindings::{inputs_piece, outputs_piece};
pub use bindings::{tail_start, InputBindings, OutputBindings};
use slot::declarations;
#[cfg(feature = "bench")]
use slot::records_declaration;
pub use slot::{fits_stage, single_output, slots, ScatterStores, Slot};

mod bindings;
mod build;
mod convert;
mod slot;
pub use build::{Build, LayoutEntry};
pub use convert::Convert;

/// The trace hook every global access calls: `trace(kind, address, size)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Empty: the builds that split.
    Silent,
    /// Records each access into the buffer of the build's last binding ([`Slot::Trace`],
    /// [`RECORDING_HOOK`]): the memory trace's builds (`bench` feature).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    Recording,
}

/// Which of the channels' bodies a build holds (`shaders/split_gather_channels.wgsl`). A
/// pipeline's compiler takes everything its entry point reaches, the branches its override
/// constants leave dead included, and a CPU adapter's takes seconds over the channels' bodies:
/// so the programs without channels take a build without them, whose schedules are the runs,
/// the lanes and the join's units; the channels' builds schedule the channels alone (no
/// pipeline of theirs reaches the others' code); and the channels of 2 to 4 parts take one
/// without those of 5 to 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bodies {
    None = 0,
    Narrow = 1,
    Wide = 2,
}

impl Bodies {
    /// The bodies `key` runs.
    pub fn of(key: ProgramKey) -> Bodies {
        match key.channels {
            None => Bodies::None,
            Some(Channels { wide: false, .. }) => Bodies::Narrow,
            Some(Channels { wide: true, .. }) => Bodies::Wide,
        }
    }
}

/// [`Bodies::None`]'s schedules in each lane mapping: the rows' runs (`{rows}`: `runs`) or
/// lanes (`lanes`), the join's units.
const NO_CHANNELS: &str = "
fn rows_block(block: u32, lane: u32) {
    {rows}(block, lane, VEC4_ONLY);
}

fn join_schedule(p: Params, h: JoinHeader, block: u32, lane: u32) {
    join_runs_block(p, h, block, lane);
}
";

/// The bodies' dispatchers after `shaders/split_gather_channels.wgsl`: a `switch` on the
/// dispatch's count of parts with a case per count of the build's band (`{split}`, `{join}`:
/// the last is the default), each calling the body with its count a constant; and the
/// build's schedules, the channels alone.
const BODIES: &str = "
fn rows_block(block: u32, lane: u32) {
    channels(block, lane);
}

fn join_schedule(p: Params, h: JoinHeader, block: u32, lane: u32) {
    join_channels(p, h, block, lane);
}

fn join_channel_whole(o: u32, src: u32, step: u32, end: u32, span: vec3<u32>, lane: u32, c: u32) -> u32 {
    return {join_whole};
}

fn channel_bodies(p: Params, block: u32, lane: u32) -> vec3<u32> {
    var left: vec3<u32>;
    switch (p.num_entries) {
{split}    }
    return left;
}

fn join_channel_bodies(p: Params, h: JoinHeader, s: Segment, block: u32, lane: u32) -> vec3<u32> {
    var left: vec3<u32>;
    switch (s.count) {
{join}    }
    return left;
}
";

/// The channels' piece of a build with `bodies`, its lanes each a run of units (`runs`) or
/// consecutive lanes consecutive units: the schedules it holds.
fn channels_piece(bodies: Bodies, runs: bool) -> String {
    let rows = if runs { "runs" } else { "lanes" };
    let join_whole = match runs {
        true => "join_channel_groups(o, src, step, end, span, c)",
        false => "join_channel_lanes(o, src, step, end, span, lane, c)",
    };
    let parts = match bodies {
        Bodies::None => return NO_CHANNELS.replace("{rows}", rows),
        Bodies::Narrow => Channels::NARROW,
        Bodies::Wide => Channels::WIDE,
    };
    let last = *parts.end();
    let cases = |body: &str| -> String {
        parts
            .clone()
            .map(|c| {
                let label = if c == last {
                    "default".into()
                } else {
                    format!("case {c}u")
                };
                format!("        {label}: {{ left = {body}, {c}u); }}\n")
            })
            .collect()
    };
    let dispatchers = BODIES
        .replace("{split}", &cases("channels_of(p, block, lane"))
        .replace("{join}", &cases("join_channels_of(p, h, s, block, lane"))
        .replace("{join_whole}", join_whole);
    format!("{CHANNELS_WGSL}\n{dispatchers}")
}

/// The one body every entry point is stamped from: `{name}` is the entry point's name,
/// `{block}` its block function ([`EntryPoint::STAMPED`]), at the workgroup size the
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

/// [`Hook::Silent`].
const SILENT_HOOK: &str = "
fn trace(kind: u32, address: u32, size: u32) {}
fn trace_skip(kind: u32) {}
";

/// [`Hook::Recording`], over the buffer `trace_out` ([`Slot::Trace`]).
///
/// The buffer starts with one `vec4<u32>` header written by the host (workgroup sampling
/// stride, traced workgroups, records per lane, lanes per workgroup); the `seq`-th access of
/// lane `lane` of traced workgroup `slot` is the `vec4<u32>` (kind, address, size, n + 1) at
/// index `1 + (slot * lanes + lane) * records + seq`, where `n` counts the lane's earlier
/// accesses of the same kind. Lanes in step make their n-th load (or store) together, so `n`
/// is what groups accesses into warp instructions: lane 0's table reads do not shift its loads.
/// A lane that sits out a turn of a loop whose other lanes access memory of a kind calls
/// `trace_skip` for it, so its next access groups with the others' next one.
/// The shader sets `trace_block`, `trace_lane` and `trace_seq` as each lane starts.
pub const RECORDING_HOOK: &str = "
var<private> trace_kind_seq: array<u32, 4>;

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

fn trace_skip(kind: u32) {
    trace_kind_seq[kind] += 1u;
}
";

/// The benchmark's copy kernel, `shaders/bench_copy_vec4.wgsl`, without its hook.
#[cfg(feature = "bench")]
const COPY_WGSL: &str = include_str!("../../shaders/bench_copy_vec4.wgsl");

/// The rows placed by indices in a build without them ([`Slot::Indices`], [`Slot::Status`],
/// [`Slot::OutputScatter`]): none, as no indexed entry is bound to it (`GatherPipeline::bind`).
const NOT_INDEXED: &str = "
fn indexed_units(p: Params, e: Entry, a: u32, b: u32) {}
";

/// The indexed build's store of a scattered chunk (`scatter_chunk(at, src, n)`: `n` bytes
/// from source byte `src` to byte `at` of `dst_scatter`): one vec4 ([`ScatterStores::Units`]),
/// or its words (`shaders/split_gather_scatter_words.wgsl`, then `scatter_bytes` of
/// `split_gather_scatter_bytes.wgsl`) through `store_merged(w, x,
/// mask)`, word `w` with the bytes `mask` marks from
/// `x`: plain ([`ScatterStores::Words`]: every mask whole, no word shared, a read-modify-write
/// otherwise exact), or swapped in until no other lane changed the word between the load and
/// the swap ([`ScatterStores::Shared`]: each failure is another lane's success, so the loop
/// ends).
fn scatter_store(stores: ScatterStores) -> String {
    match merged(stores) {
        None => UNITS_CHUNK.into(),
        Some(merged) => format!("{SCATTER_WORDS_WGSL}{SCATTER_BYTES_WGSL}\n{merged}"),
    }
}

/// The `store_merged` of `stores` (`None`: [`ScatterStores::Units`] stores vec4s).
fn merged(stores: ScatterStores) -> Option<&'static str> {
    match stores {
        ScatterStores::Units => None,
        ScatterStores::Words => Some(WORDS_STORE),
        ScatterStores::Shared => Some(SHARED_STORE),
    }
}

/// [`ScatterStores::Units`]' chunk: one vec4.
const UNITS_CHUNK: &str = "
fn scatter_chunk(at: u32, src: u32, n: u32) {
    trace(TRACE_DST, at, 16u);
    dst_scatter[at / 16u] = load_vec4(src / 16u);
}
";

/// [`ScatterStores::Words`]' `store_merged`.
const WORDS_STORE: &str = "
fn store_merged(w: u32, x: u32, mask: u32) {
    trace(TRACE_DST, 4u * w, 4u);
    if (mask == 0xffffffffu) {
        dst_scatter[w] = x;
    } else {
        dst_scatter[w] = (dst_scatter[w] & ~mask) | (x & mask);
    }
}
";

/// [`ScatterStores::Shared`]'s `store_merged`.
const SHARED_STORE: &str = "
fn store_merged(w: u32, x: u32, mask: u32) {
    trace(TRACE_DST, 4u * w, 4u);
    if (mask == 0xffffffffu) {
        atomicStore(&dst_scatter[w], x);
        return;
    }
    var old = atomicLoad(&dst_scatter[w]);
    loop {
        let r = atomicCompareExchangeWeak(&dst_scatter[w], old, (old & ~mask) | (x & mask));
        if (r.exchanged) {
            break;
        }
        old = r.old_value;
    }
}
";

/// The hook's piece of a build.
fn hook_piece(hook: Hook) -> String {
    match hook {
        Hook::Silent => SILENT_HOOK.into(),
        Hook::Recording => RECORDING_HOOK.into(),
    }
}

/// The gather shader with `inputs`, `outputs` and `hook`, around its channels' piece:
/// `shaders/split_gather_table.wgsl`, `split_gather.wgsl`, the inputs' and the outputs'
/// pieces, the hook, `shaders/split_gather_schedules.wgsl`, `split_gather_narrow.wgsl`, then
/// (after the channels' piece) `split_gather_join.wgsl` and `split_gather_join_runs.wgsl` and
/// one entry point per [`EntryPoint`], stamped from [`ENTRY_POINT`]. Assembled once; each
/// build with its [`Bodies`] is [`GatherSource::with`].
#[derive(Debug)]
pub struct GatherSource {
    head: String,
    tail: String,
    /// Whether it holds the rows placed by indices, and how its scatter stores.
    pub indexed: Option<ScatterStores>,
}

impl GatherSource {
    /// The source with `inputs`, `outputs` and `hook`, and the rows placed by indices
    /// (`shaders/split_gather_indexed*.wgsl`, over [`Slot::Indices`] and [`Slot::Status`])
    /// where `indexed`: their gathers and scatter, or where `convert` converts, the
    /// converting piece of its direction ([`Convert`]).
    pub fn new(
        inputs: InputBindings,
        outputs: OutputBindings,
        hook: Hook,
        indexed: Option<ScatterStores>,
        convert: Option<Convert>,
    ) -> Result<Self> {
        let slots = slots(inputs, outputs, indexed, hook == Hook::Recording);
        let indexed_code = match (indexed, convert) {
            (None, None) => NOT_INDEXED.into(),
            (Some(stores), None) => format!(
                "{INDEXED_WGSL}{INDEXED_GATHERS_WGSL}{INDEXED_SCATTER_WGSL}\n{}",
                scatter_store(stores)
            ),
            (Some(stores), Some(c)) => format!("{INDEXED_WGSL}{}", c.indexed_piece(merged(stores))),
            (None, Some(c)) => {
                return Err(crate::error::SplitError::Device(format!(
                    "a build converting its input ({c:?}) is an indexed build"
                )))
            }
        };
        let rows = match convert {
            None => format!("{indexed:?}"),
            Some(c) => format!("{indexed:?}, {c:?}"),
        };
        let head = format!(
            "// ---- Bindings ----\n{}\n{TABLE_WGSL}\n{GATHER_WGSL}\n// ---- Input bindings: {inputs:?} ----\n{}\n// ---- Output bindings: {outputs:?} ----\n{}\n// ---- Trace hook ----\n{}\n{SCHEDULES_WGSL}\n{NARROW_WGSL}\n// ---- Indexed rows: {rows} ----\n{indexed_code}\n",
            declarations(&slots),
            inputs_piece(inputs)?,
            outputs_piece(outputs)?,
            hook_piece(hook),
        );
        let mut tail = format!("{JOIN_WGSL}\n{JOIN_RUNS_WGSL}\n// ---- Entry points ----\n");
        for (name, block) in EntryPoint::STAMPED {
            tail += &ENTRY_POINT
                .replace("{name}", name)
                .replace("{block}", block);
        }
        Ok(GatherSource {
            head,
            tail,
            indexed,
        })
    }

    /// The build with `bodies`, in the lane mapping of runs (`runs`) or not.
    pub fn with(&self, bodies: Bodies, runs: bool) -> String {
        let channels = channels_piece(bodies, runs);
        format!(
            "{}// ---- Schedules: {bodies:?}, runs {runs} ----\n{channels}\n{}",
            self.head, self.tail
        )
    }
}

/// The build with `inputs`, `outputs`, `hook` and `bodies` ([`GatherSource`]) in lanes, as
/// the tests of the shader's text take it (`GatherSource::with` gives either mapping).
#[cfg(test)]
pub fn gather_source(
    inputs: InputBindings,
    outputs: OutputBindings,
    hook: Hook,
    bodies: Bodies,
) -> Result<String> {
    Ok(GatherSource::new(inputs, outputs, hook, None, None)?.with(bodies, false))
}

/// The build that splits one input buffer into one output buffer ([`InputBindings::ONE`],
/// [`OutputBindings::Units`] of 1, [`Hook::Silent`], [`Bodies::Narrow`]), made once per test
/// binary: what the tests of the shader's text parse.
#[cfg(test)]
pub fn shader_source() -> &'static str {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SOURCE.get_or_init(|| {
        let (inputs, outputs) = (InputBindings::ONE, OutputBindings::Units(1));
        gather_source(inputs, outputs, Hook::Silent, Bodies::Narrow)
            .expect("one input and one output binding are in range")
    })
}

/// The benchmark's copy kernel with `hook`: its records, where it keeps them, at binding 2
/// (after its input and output).
#[cfg(feature = "bench")]
pub fn copy_kernel_source(hook: Hook) -> String {
    let records = match hook {
        Hook::Recording => records_declaration(2),
        Hook::Silent => String::new(),
    };
    format!(
        "{COPY_WGSL}\n// ---- Trace hook ----\n{records}{}",
        hook_piece(hook)
    )
}

#[cfg(test)]
mod builds_tests;
