//! The builds' input and output bindings ([`InputBindings`], [`OutputBindings`]), each with
//! the access functions the shader loads and stores through, as pieces of WGSL; where each
//! binding lies is [`super::slots()`]'s.

use crate::error::{Result, SplitError};
use crate::gather::abi::{MAX_DST_BINDINGS, MAX_SRC_BINDINGS, UNIT_BYTES};

/// How a build binds the inputs, from binding 1 of group 0: this many input buffers (1 to
/// [`MAX_SRC_BINDINGS`]), each as words (`src{j}` at binding 1 + j), then each as vec4s
/// (`src4_{j}` at 1 + n + j: the same window twice). The shader loads input words through
/// three functions, `load_word_in(b, w)`, `load_vec4_in(b, i)` and `input_words(b)`, of input
/// binding `b`; a join's segment names its binding (`Segment.binding`), so one dispatch of a
/// concat reads inputs in several buffers. Every other build binds one ([`InputBindings::ONE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InputBindings(pub u32);

impl InputBindings {
    /// One input buffer, `b` always 0.
    pub const ONE: InputBindings = InputBindings(1);

    /// Input buffers the build binds.
    pub fn count(self) -> u32 {
        self.0
    }
}

/// How a build binds the outputs, after the inputs. The shader stores and loads output words
/// through three functions: `store_unit(i, v)`, `store_word(i, j, x)` (word `j` of unit `i`)
/// and `load_dst_word(i, j)`, of output binding `dst_binding` (the lane's record's).
///
/// An output window is bound in two ranges that do not overlap, so no browser refuses them:
/// its units up to a multiple of [`tail_start`]'s alignment as vec4s (`dst{j}`: whole units in
/// one store, single words as the vec4's components), and the rest, less than that alignment,
/// as words (`dst_tail{j}`), where the window's last unit may end before its last whole vec4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputBindings {
    /// This many output buffers (1 to [`MAX_DST_BINDINGS`]), each's units (`dst{j}`), then
    /// each's tail (`dst_tail{j}`); a record names its buffer (`Entry::binding`,
    /// `JoinHeader::binding`), so one dispatch writes outputs in several buffers.
    Units(u32),
    /// One output buffer, bound once as words, for devices that allow only 4 storage buffers
    /// per shader stage (`Limits::downlevel_defaults`): a whole unit is stored as its four
    /// words.
    WordsOnly,
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
            OutputBindings::Units(n) => (n, 2),
            OutputBindings::WordsOnly => (1, 1),
        }
    }
}

/// The inputs' access functions; each `{..._arms}` reaches binding `b` as `src{b}` or
/// `src4_{b}` ([`on_binding`]).
const INPUTS: &str = "
fn load_word_in(b: u32, w: u32) -> u32 {
    trace(TRACE_SRC, w * 4u, 4u);
    var x = 0u;
{word_arms}    return x;
}

fn load_vec4_in(b: u32, i: u32) -> vec4<u32> {
    trace(TRACE_SRC, i * 16u, 16u);
    var v = vec4<u32>(0u);
{vec4_arms}    return v;
}

fn input_words(b: u32) -> u32 {
    var n = 0u;
{length_arms}    return n;
}
";

/// [`OutputBindings::Units`]' access functions: unit `i` of binding `j` (`dst_binding`, the
/// lane's record's, or a function's `b`) lies in `dst{j}` below `units_bound`, the units the
/// window binds there (an even number, [`tail_start`], or none where the host bound the
/// one-unit stand-in), else in `dst_tail{j}`; each `{..._arms}` reaches one binding
/// ([`on_binding`]).
/// `copy_units_fast`, in the vec4 entry point, stores a run's units into its binding with the
/// binding a constant, so that a CPU adapter, which runs every arm of a switch with a mask,
/// takes one per run, not per unit; elsewhere a run passes its entry's binding.
const UNITS_OUTPUTS: &str = "
fn store_unit(unit: u32, v: vec4<u32>) {
    trace(TRACE_DST, unit * 16u, 16u);
{store_unit_arms}}

fn store_word(unit: u32, j: u32, x: u32) {
    trace(TRACE_DST, unit * 16u + j * 4u, 4u);
{store_word_arms}}

fn load_dst_word(unit: u32, j: u32) -> u32 {
    var x = 0u;
{load_word_arms}    return x;
}

fn units_end(b: u32) -> u32 {
    var n = 0u;
{units_end_arms}    return n;
}

fn store_unit_fast(unit: u32, v: vec4<u32>) {
    store_unit_fast_in(dst_binding, unit, v);
}

fn store_unit_fast_in(b: u32, unit: u32, v: vec4<u32>) {
    trace(TRACE_DST, unit * 16u, 16u);
{store_fast_arms}}

fn copy_units_fast(e: Entry, first_unit: u32, end_unit: u32, vec4_only: bool) {
    if (vec4_only) {
{copy_fast_arms}    } else {
        copy_units(e, first_unit, end_unit, false, e.binding);
    }
}

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

fn units_end(b: u32) -> u32 {
    return 0xffffffffu;
}

fn store_unit_fast(i: u32, v: vec4<u32>) {
    store_unit(i, v);
}

fn store_unit_fast_in(b: u32, i: u32, v: vec4<u32>) {
    store_unit(i, v);
}

fn copy_units_fast(e: Entry, first_unit: u32, end_unit: u32, vec4_only: bool) {
    copy_units(e, first_unit, end_unit, vec4_only, 0u);
}
";

/// The code that runs `access` on binding `b` (`{b}` in it) chosen by `selector`, one of `0..n`,
/// at `indent`: a switch with an arm per binding, or with one binding the access alone (the
/// selector is then 0).
fn on_binding(n: u32, selector: &str, access: &str, indent: &str) -> String {
    let arm = |b: u32| access.replace("{b}", &b.to_string());
    if n == 1 {
        return format!("{indent}{};\n", arm(0));
    }
    let arms: String = (0..n)
        .map(|b| format!("{indent}    case {b}u: {{ {}; }}\n", arm(b)))
        .collect();
    format!("{indent}switch ({selector}) {{\n{arms}{indent}    default: {{}}\n{indent}}}\n")
}

/// The inputs' access functions.
pub(super) fn inputs_piece(inputs: InputBindings) -> Result<String> {
    let n = inputs.count();
    if !(1..=MAX_SRC_BINDINGS).contains(&n) {
        return Err(SplitError::Device(format!(
            "a build takes 1 to {MAX_SRC_BINDINGS} input bindings, not {n}"
        )));
    }
    let arms = |access| on_binding(n, "b", access, "    ");
    Ok(INPUTS
        .replace("{word_arms}", &arms("x = src{b}[w]"))
        .replace("{vec4_arms}", &arms("v = src4_{b}[i]"))
        .replace("{length_arms}", &arms("n = arrayLength(&src{b})")))
}

/// The outputs' access functions.
pub(super) fn outputs_piece(outputs: OutputBindings) -> Result<String> {
    let n = match outputs {
        OutputBindings::WordsOnly => return Ok(WORDS_ONLY_OUTPUTS.into()),
        OutputBindings::Units(n) if (1..=MAX_DST_BINDINGS).contains(&n) => n,
        OutputBindings::Units(n) => {
            return Err(SplitError::Device(format!(
                "a build takes 1 to {MAX_DST_BINDINGS} output bindings, not {n}"
            )))
        }
    };
    // Each arm finds the unit in binding b's units or its tail.
    let bound = "let n = units_bound(arrayLength(&dst{b}))";
    let store_unit = format!(
        "{bound}; if (unit < n) {{ dst{{b}}[unit] = v; }} else {{ let w = (unit - n) * 4u; \
         dst_tail{{b}}[w] = v.x; dst_tail{{b}}[w + 1u] = v.y; dst_tail{{b}}[w + 2u] = v.z; \
         dst_tail{{b}}[w + 3u] = v.w; }}"
    );
    let store_word = format!(
        "{bound}; if (unit < n) {{ dst{{b}}[unit][j] = x; }} else {{ dst_tail{{b}}[(unit - n) * 4u + j] = x; }}"
    );
    let load_word = format!(
        "{bound}; if (unit < n) {{ x = dst{{b}}[unit][j]; }} else {{ x = dst_tail{{b}}[(unit - n) * 4u + j]; }}"
    );
    let arms = |access: &str| on_binding(n, "dst_binding", access, "    ");
    // Each arm passes its binding as a constant: the driver keeps one store in the vec4 entry
    // point's loop (`vec4_only`, a constant of the entry point; the others choose per unit: a
    // loop per binding of every mode would make their pipelines far longer to compile).
    let copy_fast = on_binding(
        n,
        "e.binding",
        "copy_units(e, first_unit, end_unit, true, {b}u)",
        "        ",
    );
    Ok(UNITS_OUTPUTS
        .replace("{store_unit_arms}", &arms(&store_unit))
        .replace("{store_word_arms}", &arms(&store_word))
        .replace("{load_word_arms}", &arms(&load_word))
        .replace(
            "{units_end_arms}",
            &on_binding(n, "b", "n = units_bound(arrayLength(&dst{b}))", "    "),
        )
        .replace(
            "{store_fast_arms}",
            &on_binding(n, "b", "dst{b}[unit] = v", "    "),
        )
        .replace("{copy_fast_arms}", &copy_fast))
}
