//! The one order every build binds group 0 in ([`Slot`], [`slots`]), from which the WGSL
//! declarations, the pipeline's layout and each dispatch's bind group are made.

use super::bindings::{InputBindings, OutputBindings};

/// How the indexed build's scatter stores its words ([`Slot::OutputScatter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScatterStores {
    /// A vec4 a chunk: every scattered row of whole vec4s, read and placed at whole vec4s.
    Units,
    /// Plain stores: every scattered row of whole words at whole words, so no two rows share
    /// a word.
    Words,
    /// Atomic words: rows not of whole words share words with their neighbours, merged by
    /// compare-and-swap.
    Shared,
}

/// One storage binding of group 0. Every build binds them in the order [`slots`] gives, and
/// everything that names a binding is made from that list: the WGSL declarations
/// ([`declarations`]), the pipeline's bind group layout and each dispatch's bind group
/// (`gather::pipeline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The dispatch's table (`table`).
    Table,
    /// Input binding `j` as words (`src{j}`).
    InputWords(u32),
    /// Input binding `j` as vec4s, the same window (`src4_{j}`).
    InputVec4s(u32),
    /// Output binding `j`'s units (`dst{j}`).
    OutputUnits(u32),
    /// Output binding `j`'s tail, the window's bytes past its units (`dst_tail{j}`).
    OutputTail(u32),
    /// The one output window as words (`dst_words`, the words-only build).
    OutputWords,
    /// The indexed build's indices, as words (`indices`).
    Indices,
    /// The indexed build's status of indices out of range (`status`, atomic words).
    Status,
    /// The indexed build's destination of scattered rows, as words (`dst_scatter`):
    /// atomic where rows share words ([`ScatterStores::Shared`]).
    OutputScatter(ScatterStores),
    /// The trace build's records (`trace_out`).
    Trace,
}

impl Slot {
    /// Whether the shader writes it.
    pub fn writable(self) -> bool {
        !matches!(
            self,
            Slot::Table | Slot::InputWords(_) | Slot::InputVec4s(_) | Slot::Indices
        )
    }

    /// Whether it binds an input window.
    pub fn input(self) -> bool {
        matches!(self, Slot::InputWords(_) | Slot::InputVec4s(_))
    }

    /// Whether it binds an output window.
    pub fn output(self) -> bool {
        matches!(
            self,
            Slot::OutputUnits(_) | Slot::OutputTail(_) | Slot::OutputWords | Slot::OutputScatter(_)
        )
    }

    /// Its WGSL declaration at `binding`, named as the access functions reach it.
    fn declaration(self, binding: u32) -> String {
        let (name, ty) = match self {
            Slot::Table => ("table".into(), "u32"),
            Slot::InputWords(j) => (format!("src{j}"), "u32"),
            Slot::InputVec4s(j) => (format!("src4_{j}"), "vec4<u32>"),
            Slot::OutputUnits(j) => (format!("dst{j}"), "vec4<u32>"),
            Slot::OutputTail(j) => (format!("dst_tail{j}"), "u32"),
            Slot::OutputWords => ("dst_words".into(), "u32"),
            Slot::Indices => ("indices".into(), "u32"),
            Slot::Status => ("status".into(), "atomic<u32>"),
            Slot::OutputScatter(ScatterStores::Units) => ("dst_scatter".into(), "vec4<u32>"),
            Slot::OutputScatter(ScatterStores::Words) => ("dst_scatter".into(), "u32"),
            Slot::OutputScatter(ScatterStores::Shared) => ("dst_scatter".into(), "atomic<u32>"),
            Slot::Trace => return records_declaration(binding),
        };
        let access = if self.writable() {
            "read_write"
        } else {
            "read"
        };
        declare(&name, binding, access, ty)
    }
}

/// Every binding of a build, in binding order: the table; each input as words, then each as
/// vec4s; each output window's units, then each one's tail (or the one output as words);
/// the indexed build's indices and status; the trace build's records last.
pub fn slots(
    inputs: InputBindings,
    outputs: OutputBindings,
    indexed: Option<ScatterStores>,
    traced: bool,
) -> Vec<Slot> {
    let n = inputs.count();
    let mut slots = vec![Slot::Table];
    slots.extend((0..n).map(Slot::InputWords));
    slots.extend((0..n).map(Slot::InputVec4s));
    match outputs {
        OutputBindings::WordsOnly => slots.push(Slot::OutputWords),
        OutputBindings::Units(m) => {
            slots.extend((0..m).map(Slot::OutputUnits));
            slots.extend((0..m).map(Slot::OutputTail));
        }
    }
    if let Some(stores) = indexed {
        slots.extend([Slot::Indices, Slot::Status, Slot::OutputScatter(stores)]);
    }
    if traced {
        slots.push(Slot::Trace);
    }
    slots
}

/// Whether a shader stage of `limits` holds every binding of the build of `inputs` and
/// `outputs`, `indexed` or not (the trace's aside).
pub fn fits_stage(
    limits: &crate::Limits,
    inputs: InputBindings,
    outputs: OutputBindings,
    indexed: bool,
) -> bool {
    let stores = indexed.then_some(ScatterStores::Words);
    slots(inputs, outputs, stores, false).len()
        <= limits.max_storage_buffers_per_shader_stage as usize
}

/// The single-output build a device of `limits` takes: each output window's units and tail,
/// where its stage holds them with one input; else the window once, as words.
pub fn single_output(limits: &crate::Limits) -> OutputBindings {
    match fits_stage(limits, InputBindings::ONE, OutputBindings::Units(1), false) {
        true => OutputBindings::Units(1),
        false => OutputBindings::WordsOnly,
    }
}

/// The WGSL declarations of `slots`, at their places.
pub(super) fn declarations(slots: &[Slot]) -> String {
    (0..)
        .zip(slots)
        .map(|(binding, slot)| slot.declaration(binding))
        .collect()
}

/// A storage declaration at `binding` of group 0.
pub(super) fn declare(name: &str, binding: u32, access: &str, ty: &str) -> String {
    format!("@group(0) @binding({binding}) var<storage, {access}> {name}: array<{ty}>;\n")
}

/// The trace's records (`trace_out`) at `binding`: a trace build's last slot, the copy
/// kernel's third binding.
pub(super) fn records_declaration(binding: u32) -> String {
    declare("trace_out", binding, "read_write", "vec4<u32>")
}
