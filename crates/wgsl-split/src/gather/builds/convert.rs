//! Conversion on the way ([`Convert`]): rows placed by indices move f32 into f16 or bf16,
//! or f16 or bf16 into f32, in the one dispatch that moves them.
//!
//! The tables address the input as a tensor of the dtype the build writes, the *view*: every
//! address a table holds into the input is a byte of the view, so the plans, the gate and
//! the scatter's walk are the ones without a conversion. One piece of a converting build's
//! shader reads the input and converts: a narrowing build's `scatter_chunk` (each chunk's
//! halves from their f32s), a widening build's gather (each unit's f32s from their halves).
//! The conversion is written once, for four elements at a time, and called from two places
//! at most, so a compiler that inlines every call (SwiftShader's) keeps the module small.
//! The builds without a conversion are the same text as before.

use super::{INDEXED_SCATTER_WGSL, SCATTER_BYTES_WGSL};
use crate::error::{Result, SplitError};
use crate::DType;

/// The conversion a build's input goes through: the dtype it holds, and the dtype the
/// shader sees and writes. The conversions are integer arithmetic (no float is loaded, no
/// device feature is needed): f32 to f16 as numpy's `astype(np.float16)` (round to nearest
/// even; overflow to infinity; subnormals; a NaN keeps its sign and its payload's upper
/// bits, and stays a NaN), f32 to bf16 round to nearest even on the upper 16 bits (a NaN
/// stays a NaN, its quiet bit set), and f16 or bf16 to f32 exactly (NaN payloads kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Convert {
    F16ToF32,
    Bf16ToF32,
    F32ToF16,
    F32ToBf16,
}

impl Convert {
    /// Every conversion.
    pub const ALL: [Convert; 4] = [
        Convert::F16ToF32,
        Convert::Bf16ToF32,
        Convert::F32ToF16,
        Convert::F32ToBf16,
    ];

    /// The conversion of elements of `read` into `written`: `None` where they are one dtype;
    /// [`SplitError::DataMismatch`] for a pair it does not convert.
    pub fn of(read: DType, written: DType) -> Result<Option<Convert>> {
        Ok(Some(match (read, written) {
            _ if read == written => return Ok(None),
            (DType::F16, DType::F32) => Convert::F16ToF32,
            (DType::BF16, DType::F32) => Convert::Bf16ToF32,
            (DType::F32, DType::F16) => Convert::F32ToF16,
            (DType::F32, DType::BF16) => Convert::F32ToBf16,
            _ => {
                return Err(SplitError::DataMismatch(format!(
                    "rows of {read} into {written}: the conversions are f32 into f16 or bf16 \
                     and f16 or bf16 into f32"
                )))
            }
        }))
    }

    /// Whether the view's elements are wider than the input's (f16 or bf16 read as f32).
    pub fn widens(self) -> bool {
        matches!(self, Convert::F16ToF32 | Convert::Bf16ToF32)
    }

    /// The input's bytes behind `view` bytes of the view (a multiple of the view's element
    /// where it narrows: the view's halves come from whole f32s).
    pub fn input_bytes(self, view: u64) -> u64 {
        match self.widens() {
            true => view / 2,
            false => view * 2,
        }
    }

    /// The view's bytes of `input` bytes of the input.
    pub fn view_bytes(self, input: u64) -> u64 {
        match self.widens() {
            true => input * 2,
            false => input / 2,
        }
    }

    /// The indexed rows' piece of a converting build, after `split_gather_indexed.wgsl`: its
    /// entries' dispatcher, the scatter through the conversion where it narrows (its chunks
    /// stored as vec4s where `merged` is `None`, else as words through `merged`, a
    /// `store_merged`), the gather of elements through it where it widens, and the
    /// conversion.
    pub(super) fn indexed_piece(self, merged: Option<&str>) -> String {
        let element = match self {
            Convert::F16ToF32 => F16_TO_F32,
            Convert::Bf16ToF32 => BF16_TO_F32,
            Convert::F32ToF16 => F32_TO_F16,
            Convert::F32ToBf16 => F32_TO_BF16,
        };
        let stores = match merged {
            None => UNITS_CHUNK.to_string(),
            Some(merged) => format!("{WORDS_CHUNK}{SCATTER_BYTES_WGSL}\n{merged}"),
        };
        match self.widens() {
            true => format!("{WIDENING}{element}"),
            false => format!("{NARROWING}{INDEXED_SCATTER_WGSL}{stores}{NARROWED}{element}"),
        }
    }
}

/// A narrowing build's entries: scatters alone (`shaders/split_gather_indexed_scatter.wgsl`).
const NARROWING: &str = "
// The units of entry `e` (MODE_SCATTER, through a conversion) of the lane.
fn indexed_units(p: Params, e: Entry, a: u32, b: u32) {
    let x = read_index_rows(p, entry_index);
    scatter_units(e, x, lane_span(p, a, b, x.count * x.heads * ((e.row_bytes + 15u) / 16u)));
}

";

/// A narrowing build's chunk of whole vec4s (`ScatterStores::Units`): view bytes `src ..
/// src + 16` (eight halves) are the input's two vec4s from byte `2 * src` (their f32s),
/// converted into one vec4 of the destination.
const UNITS_CHUNK: &str = "
fn scatter_chunk(at: u32, src: u32, n: u32) {
    trace(TRACE_DST, at, 16u);
    dst_scatter[at / 16u] = narrowed(load_vec4(src / 8u), load_vec4(src / 8u + 1u));
}

";

/// A narrowing build's chunk stored as words: view bytes `src .. src + n` (halves) are input
/// words `src / 2` on (their f32s), converted (`narrowed`), then stored as words
/// (`scatter_bytes`). A chunk's last f32 stands in for the ones past its end, so nothing
/// past the row is read.
const WORDS_CHUNK: &str = "
fn scatter_chunk(at: u32, src: u32, n: u32) {
    let w = vec4<u32>(src / 2u);
    let last = w + vec4<u32>(n / 2u - 1u);
    let a = min(w + vec4<u32>(0u, 1u, 2u, 3u), last);
    let b = min(w + vec4<u32>(4u, 5u, 6u, 7u), last);
    let x = vec4<u32>(load_word(a.x), load_word(a.y), load_word(a.z), load_word(a.w));
    let y = vec4<u32>(load_word(b.x), load_word(b.y), load_word(b.z), load_word(b.w));
    scatter_bytes(at, narrowed(x, y), n);
}

";

/// The halves of eight f32s, `x` then `y`, in one vec4: the one caller of a narrowing
/// `convert`.
const NARROWED: &str = "
fn narrowed(x: vec4<u32>, y: vec4<u32>) -> vec4<u32> {
    let lo = convert(vec4<u32>(x.x, x.z, y.x, y.z));
    let hi = convert(vec4<u32>(x.y, x.w, y.y, y.w));
    return lo | (hi << vec4<u32>(16u));
}
";

/// A widening build's entries: gathers alone, each unit's four f32s from their rows' halves
/// (view byte `a` is input byte `a / 2`), zeros where an index is out of range or padding,
/// which the unit that starts its row in the first block records. Rows, their source and
/// stride of whole units (an embedding's) are taken a row at a time, as `gather_vec4s` takes
/// them: the index read once, then each unit two words of halves; other rows find each
/// word's row (`widen_unit`).
const WIDENING: &str = "
// The units of entry `e` (MODE_INDEXED, through a conversion) of the lane.
fn indexed_units(p: Params, e: Entry, a: u32, b: u32) {
    let x = read_index_rows(p, entry_index);
    let span = lane_span(p, a, b, entry_units(e));
    if ((e.row_bytes | e.src_offset | e.src_stride) % 16u != 0u) {
        for (var u = span.x; u < span.y; u += span.z) {
            widen_unit(e, x, u);
        }
        return;
    }
    let row_units = e.row_bytes / 16u;
    var u = span.x;
    while (u < span.y) {
        // Units `col .. col + n` of the row: the rest of it in runs, one in lanes.
        let row = u / row_units;
        let col = u - row * row_units;
        let n = select(1u, min(span.y - u, row_units - col), LANES_IN_RUNS);
        let block = row / x.count;
        let i = row - block * x.count;
        let r = indexed_row(x, i);
        if (r < PADDING) {
            let w = (e.src_offset + (block * x.capacity + r) * e.src_stride) / 8u + col * 2u;
            for (var k = 0u; k < n; k++) {
                let lo = load_word(w + 2u * k);
                let hi = load_word(w + 2u * k + 1u);
                store_unit(e.dst_unit + u + k, convert(vec4<u32>(lo & 0xffffu, lo >> 16u, hi & 0xffffu, hi >> 16u)));
            }
        } else {
            for (var k = 0u; k < n; k++) {
                store_unit(e.dst_unit + u + k, vec4<u32>(0u));
            }
            if (r == NO_ROW && col == 0u && block == 0u && x.counts == 1u) {
                record_bad_index(i);
            }
        }
        u += n * span.z;
    }
}

// Unit `u` of the gather `e` of any rows: each word's row found, its half read.
fn widen_unit(e: Entry, x: IndexRows, u: u32) {
    let n = min(16u, e.out_bytes - u * 16u);
    var h = vec4<u32>(0u);
    for (var k = 0u; k < n / 4u; k++) {
        let byte = u * 16u + k * 4u;
        let row = byte / e.row_bytes;
        let col = byte - row * e.row_bytes;
        let block = row / x.count;
        let i = row - block * x.count;
        let r = indexed_row(x, i);
        if (r < PADDING) {
            let a = (e.src_offset + (block * x.capacity + r) * e.src_stride + col) / 2u;
            h[k] = (load_word(a / 4u) >> ((a & 2u) * 8u)) & 0xffffu;
        } else if (r == NO_ROW && col == 0u && block == 0u && x.counts == 1u) {
            record_bad_index(i);
        }
    }
    store_unit_n(e.dst_unit + u, convert(h), n);
}
";

/// f16 bits to f32 bits, exactly (numpy's `npy_halfbits_to_floatbits`), without a branch (a
/// CPU adapter runs every side of one): a subnormal normalized by its leading bit.
const F16_TO_F32: &str = "
fn convert(h: vec4<u32>) -> vec4<u32> {
    let sign = (h & vec4<u32>(0x8000u)) << vec4<u32>(16u);
    let e = h & vec4<u32>(0x7c00u);
    let m = h & vec4<u32>(0x3ffu);
    let shift = vec4<u32>(10u) - firstLeadingBit(m | vec4<u32>(1u));
    let subnormal = ((vec4<u32>(113u) - shift) << vec4<u32>(23u)) | (((m << shift) & vec4<u32>(0x3ffu)) << vec4<u32>(13u));
    var f = ((h & vec4<u32>(0x7fffu)) + vec4<u32>(0x1c000u)) << vec4<u32>(13u);
    f = select(f, subnormal, e == vec4<u32>(0u));
    f = select(f, vec4<u32>(0u), (h & vec4<u32>(0x7fffu)) == vec4<u32>(0u));
    f = select(f, vec4<u32>(0x7f800000u) | (m << vec4<u32>(13u)), e == vec4<u32>(0x7c00u));
    return sign | f;
}
";

/// bf16 bits to f32 bits: the upper half.
const BF16_TO_F32: &str = "
fn convert(h: vec4<u32>) -> vec4<u32> {
    return h << vec4<u32>(16u);
}
";

/// f32 bits to f16 bits as numpy's `npy_floatbits_to_halfbits` (round to nearest even, the
/// bits a subnormal's shift loses counted; overflow to infinity; a NaN's payload shifted,
/// kept a NaN), without a branch.
const F32_TO_F16: &str = "
fn convert(f: vec4<u32>) -> vec4<u32> {
    let sign = (f >> vec4<u32>(16u)) & vec4<u32>(0x8000u);
    let e = f & vec4<u32>(0x7f800000u);
    let sig = f & vec4<u32>(0x007fffffu);
    // A normal half: the exponent rebiased, the significand rounded (a carry steps the exponent).
    let up = select(vec4<u32>(0x1000u), vec4<u32>(0u), (sig & vec4<u32>(0x3fffu)) == vec4<u32>(0x1000u));
    let normal = ((e - vec4<u32>(0x38000000u)) >> vec4<u32>(13u)) + ((sig + up) >> vec4<u32>(13u));
    // A subnormal half: the significand with its leading one, shifted by 1 to 11.
    let shift = min(vec4<u32>(113u) - min(e >> vec4<u32>(23u), vec4<u32>(113u)), vec4<u32>(31u));
    let full = (vec4<u32>(0x00800000u) | sig) >> shift;
    let tie = ((full & vec4<u32>(0x3fffu)) == vec4<u32>(0x1000u)) & ((f & vec4<u32>(0x7ffu)) == vec4<u32>(0u));
    let subnormal = (full + select(vec4<u32>(0x1000u), vec4<u32>(0u), tie)) >> vec4<u32>(13u);
    var h = select(normal, subnormal, e <= vec4<u32>(0x38000000u));
    h = select(h, vec4<u32>(0u), e < vec4<u32>(0x33000000u));
    h = select(h, vec4<u32>(0x7c00u), e >= vec4<u32>(0x47800000u));
    let nan = (e == vec4<u32>(0x7f800000u)) & (sig != vec4<u32>(0u));
    h = select(h, max(vec4<u32>(0x7c00u) + (sig >> vec4<u32>(13u)), vec4<u32>(0x7c01u)), nan);
    return sign | h;
}
";

/// f32 bits to bf16 bits: round to nearest even on the upper half; a NaN keeps its upper
/// half with its quiet bit set, so it stays a NaN.
const F32_TO_BF16: &str = "
fn convert(f: vec4<u32>) -> vec4<u32> {
    let rounded = (f + vec4<u32>(0x7fffu) + ((f >> vec4<u32>(16u)) & vec4<u32>(1u))) >> vec4<u32>(16u);
    let nan = (f & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    return select(rounded, (f >> vec4<u32>(16u)) | vec4<u32>(0x40u), nan);
}
";
