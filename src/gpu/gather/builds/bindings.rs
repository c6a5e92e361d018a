//! The builds' input and output bindings ([`InputBindings`], [`OutputBindings`]), each with
//! the access functions the shader loads and stores through, as pieces of WGSL; where each
//! binding lies is [`super::slots()`]'s.

use crate::error::{Result, SplitError};
use crate::gpu::gather::abi::{DST_BINDING_SHIFT, MAX_DST_BINDINGS, MAX_SRC_BINDINGS, UNIT_BYTES};

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
///
/// An output window is bound in two ranges that do not overlap, so no browser refuses them:
/// its units up to a multiple of [`tail_start`]'s alignment as vec4s (`dst`: whole units in
/// one store, single words as the vec4's components), and the rest, less than that alignment,
/// as words (`dst_tail`), where the window's last unit may end before its last whole vec4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputBindings {
    /// One output buffer: its units (`dst`), then its tail (`dst_tail`, the next binding).
    UnitsAndTail,
    /// One output buffer, bound once as words, for devices that allow only 4 storage buffers
    /// per shader stage (`Limits::downlevel_defaults`): a whole unit is stored as its four
    /// words.
    WordsOnly,
    /// This many output buffers (1 to [`MAX_DST_BINDINGS`]), each's units (`dst{j}`), then
    /// each's tail (`dst_tail{j}`); an entry's buffer is the top bits of its unit
    /// ([`DST_BINDING_SHIFT`]), so one dispatch writes outputs in several buffers.
    Multi(u32),
}

/// Where an output window of `size` bytes stops being bound as units and its tail starts
/// (bytes from the window's start), on a device whose storage bindings start at multiples of
/// `offset_align`: the largest multiple of `offset_align`, and of 32, at most `size`. So the
/// units bound are an even number, and a window with none binds a one-unit stand-in that the
/// shader tells apart (`units_bound`).
pub fn tail_start(size: u64, offset_align: u64) -> u64 {
    let step = offset_align.max(2 * UNIT_BYTES);
    size / step * step
}

impl OutputBindings {
    /// Output buffers the build binds, and the bindings of each (units and tail, or words).
    pub fn count_and_views(self) -> (u32, u32) {
        match self {
            OutputBindings::UnitsAndTail => (1, 2),
            OutputBindings::WordsOnly => (1, 1),
            OutputBindings::Multi(n) => (n, 2),
        }
    }
}

/// [`InputBindings::One`]'s access functions (of `src` and `src4`).
const ONE_INPUT: &str = "
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

/// [`InputBindings::Multi`]'s access functions; each `{..._cases}` the switch arms that reach
/// binding `b` as `src{b}` or `src4_{b}`.
const MULTI_INPUTS: &str = "
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

/// [`OutputBindings::UnitsAndTail`]'s access functions: unit `i` lies in `dst` below
/// `units_bound`, else in `dst_tail`.
const UNITS_AND_TAIL_OUTPUTS: &str = "
fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    let n = units_bound(arrayLength(&dst));
    if (i < n) {
        dst[i] = v;
    } else {
        let w = (i - n) * 4u;
        dst_tail[w] = v.x;
        dst_tail[w + 1u] = v.y;
        dst_tail[w + 2u] = v.z;
        dst_tail[w + 3u] = v.w;
    }
}

fn store_word(i: u32, j: u32, x: u32) {
    trace(TRACE_DST, i * 16u + j * 4u, 4u);
    let n = units_bound(arrayLength(&dst));
    if (i < n) {
        dst[i][j] = x;
    } else {
        dst_tail[(i - n) * 4u + j] = x;
    }
}

fn load_dst_word(i: u32, j: u32) -> u32 {
    let n = units_bound(arrayLength(&dst));
    if (i < n) {
        return dst[i][j];
    }
    return dst_tail[(i - n) * 4u + j];
}

fn units_end(i: u32) -> u32 {
    return units_bound(arrayLength(&dst));
}

fn store_unit_fast(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    dst[i] = v;
}
";

/// The units a window's `dst` binding holds, from its length: an even number (`tail_start`),
/// or none where the host bound the one-unit stand-in.
const UNITS_BOUND: &str = "
fn units_bound(length: u32) -> u32 {
    return select(length, 0u, length == 1u);
}
";

/// [`OutputBindings::WordsOnly`]'s access functions (of `dst_words`): a whole unit is stored
/// as four words, and every unit the same way (`units_end` is never reached).
const WORDS_ONLY_OUTPUTS: &str = "
fn store_unit(i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    dst_words[i * 4u] = v.x;
    dst_words[i * 4u + 1u] = v.y;
    dst_words[i * 4u + 2u] = v.z;
    dst_words[i * 4u + 3u] = v.w;
}

fn store_word(i: u32, j: u32, x: u32) {
    trace(TRACE_DST, i * 16u + j * 4u, 4u);
    dst_words[i * 4u + j] = x;
}

fn load_dst_word(i: u32, j: u32) -> u32 {
    return dst_words[i * 4u + j];
}

fn units_end(i: u32) -> u32 {
    return 0xffffffffu;
}

fn store_unit_fast(i: u32, v: vec4<u32>) {
    store_unit(i, v);
}
";

/// [`OutputBindings::Multi`]'s access functions; each `{..._cases}` the switch arms that reach binding `b` as `dst{b}` or `dst_tail{b}`,
/// or (`copy_units_fast`, in the vec4 entry point) store a run's units into it with `b` a
/// constant, so that a CPU adapter, which runs every arm of a switch with a mask, takes one
/// per run, not per unit.
const MULTI_OUTPUTS: &str = "
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

fn units_end(i: u32) -> u32 {
    var n = 0u;
    switch (i >> {shift}u) {
{units_end_cases}        default: {}
    }
    return (i & ~{mask}u) + n;
}

fn store_unit_fast(i: u32, v: vec4<u32>) {
    store_unit_fast_in(i >> {shift}u, i, v);
}

fn store_unit_fast_in(b: u32, i: u32, v: vec4<u32>) {
    trace(TRACE_DST, i * 16u, 16u);
    let unit = i & {mask}u;
    switch (b) {
{store_fast_cases}        default: {}
    }
}

fn copy_units_fast(e: Entry, first_unit: u32, end_unit: u32, vec4_only: bool) {
    if (vec4_only) {
        switch (e.dst_unit >> {shift}u) {
{copy_fast_cases}            default: {}
        }
    } else {
        copy_units(e, first_unit, end_unit, false, ITS_BINDING);
    }
}
";

/// The single-output builds' `store_unit_fast_in(b, i, v)` and `copy_units_fast`: one
/// binding to choose.
const ONE_OUTPUT_RUNS: &str = "
fn store_unit_fast_in(b: u32, i: u32, v: vec4<u32>) {
    store_unit_fast(i, v);
}

fn copy_units_fast(e: Entry, first_unit: u32, end_unit: u32, vec4_only: bool) {
    copy_units(e, first_unit, end_unit, vec4_only, ITS_BINDING);
}
";

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

/// The inputs' access functions.
pub(super) fn inputs_piece(inputs: InputBindings) -> Result<String> {
    let n = match inputs {
        InputBindings::One => return Ok(ONE_INPUT.into()),
        InputBindings::Multi(n) if (1..=MAX_SRC_BINDINGS).contains(&n) => n,
        InputBindings::Multi(n) => {
            return Err(SplitError::Device(format!(
                "the multi-input build takes 1 to {MAX_SRC_BINDINGS} input bindings, not {n}"
            )))
        }
    };
    Ok(MULTI_INPUTS
        .replace("{word_cases}", &cases(n, "x = src{b}[w]"))
        .replace("{vec4_cases}", &cases(n, "v = src4_{b}[i]"))
        .replace("{length_cases}", &cases(n, "n = arrayLength(&src{b})")))
}

/// The outputs' access functions.
pub(super) fn outputs_piece(outputs: OutputBindings) -> Result<String> {
    let bindings = match outputs {
        OutputBindings::UnitsAndTail => {
            return Ok(format!(
                "{UNITS_AND_TAIL_OUTPUTS}{UNITS_BOUND}{ONE_OUTPUT_RUNS}"
            ))
        }
        OutputBindings::WordsOnly => return Ok(format!("{WORDS_ONLY_OUTPUTS}{ONE_OUTPUT_RUNS}")),
        OutputBindings::Multi(n) if (1..=MAX_DST_BINDINGS).contains(&n) => n,
        OutputBindings::Multi(n) => {
            return Err(SplitError::Device(format!(
                "the multi-output build takes 1 to {MAX_DST_BINDINGS} output bindings, not {n}"
            )))
        }
    };
    // Each arm finds the unit in binding b's units or its tail, as `UNITS_AND_TAIL_OUTPUTS`.
    let n = "let n = units_bound(arrayLength(&dst{b}))";
    let store_unit = format!(
        "{n}; if (unit < n) {{ dst{{b}}[unit] = v; }} else {{ let w = (unit - n) * 4u; \
         dst_tail{{b}}[w] = v.x; dst_tail{{b}}[w + 1u] = v.y; dst_tail{{b}}[w + 2u] = v.z; \
         dst_tail{{b}}[w + 3u] = v.w; }}"
    );
    let store_word = format!(
        "{n}; if (unit < n) {{ dst{{b}}[unit][j] = x; }} else {{ dst_tail{{b}}[(unit - n) * 4u + j] = x; }}"
    );
    let load_word = format!(
        "{n}; if (unit < n) {{ x = dst{{b}}[unit][j]; }} else {{ x = dst_tail{{b}}[(unit - n) * 4u + j]; }}"
    );
    let units_end = "n = units_bound(arrayLength(&dst{b}));";
    let store_fast = "dst{b}[unit] = v;";
    // Each arm passes its binding as a constant: the driver keeps one store in the vec4 entry
    // point's loop (`vec4_only`, a constant of the entry point; the others choose per unit: a
    // loop per binding of every mode would make their pipelines far longer to compile).
    let copy_fast = "    copy_units(e, first_unit, end_unit, true, {b}u)";
    Ok(format!("{MULTI_OUTPUTS}{UNITS_BOUND}")
        .replace("{units_end_cases}", &cases(bindings, units_end))
        .replace("{store_fast_cases}", &cases(bindings, store_fast))
        .replace("{copy_fast_cases}", &cases(bindings, copy_fast))
        .replace("{store_unit_cases}", &cases(bindings, &store_unit))
        .replace("{store_word_cases}", &cases(bindings, &store_word))
        .replace("{load_word_cases}", &cases(bindings, &load_word))
        .replace("{mask}", &format!("{:#x}", (1u32 << DST_BINDING_SHIFT) - 1))
        .replace("{shift}", &DST_BINDING_SHIFT.to_string()))
}
