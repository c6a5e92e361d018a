//! Conversion on the way in ([`Convert`]): the indexed build's input read through a
//! conversion of its elements, so rows placed by indices move f32 into f16 or bf16, or f16
//! or bf16 into f32, in the one dispatch that moves them.
//!
//! The shader then sees its input as a tensor of the dtype it writes, the *view*: every
//! address a table holds into the input is a byte of the view, and its access functions
//! (`load_word_in`, `load_vec4_in`, `input_words`) read the elements the view's bytes come
//! from and convert them. Nothing else of the shader changes, and the builds without a
//! conversion are the same text as before.

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

    /// The input's access functions through this conversion (of input binding 0, the one a
    /// converting build binds), and the element's conversion they call.
    pub(super) fn inputs_piece(self) -> String {
        let (access, element) = match self {
            Convert::F16ToF32 => (WIDENING, F16_TO_F32),
            Convert::Bf16ToF32 => (WIDENING, BF16_TO_F32),
            Convert::F32ToF16 => (NARROWING, F32_TO_F16),
            Convert::F32ToBf16 => (NARROWING, F32_TO_BF16),
        };
        format!("{access}\n{element}")
    }
}

/// The view of an input of f16 or bf16 as f32: view word `w` is input half `w`, converted
/// (`convert`); the view holds twice the input's words.
const WIDENING: &str = "
fn load_word_in(b: u32, w: u32) -> u32 {
    trace(TRACE_SRC, w * 2u, 2u);
    return convert((src0[w / 2u] >> ((w & 1u) * 16u)) & 0xffffu);
}

fn load_vec4_in(b: u32, i: u32) -> vec4<u32> {
    trace(TRACE_SRC, i * 8u, 8u);
    let x = src0[2u * i];
    let y = src0[2u * i + 1u];
    return vec4<u32>(convert(x & 0xffffu), convert(x >> 16u), convert(y & 0xffffu), convert(y >> 16u));
}

fn input_words(b: u32) -> u32 {
    return arrayLength(&src0) * 2u;
}
";

/// The view of an input of f32 as f16 or bf16: view word `w` holds input words `2w` and
/// `2w + 1`, each converted (`convert`, four at once `convert4`) into its half; the view holds half the input's words,
/// rounded up (an odd last f32 takes the lower half of the view's last word, which is all
/// any row of the input reaches there).
const NARROWING: &str = "
fn load_word_in(b: u32, w: u32) -> u32 {
    trace(TRACE_SRC, w * 8u, 8u);
    let n = arrayLength(&src0);
    let hi = select(0u, src0[min(2u * w + 1u, n - 1u)], 2u * w + 1u < n);
    return convert(src0[2u * w]) | (convert(hi) << 16u);
}

fn load_vec4_in(b: u32, i: u32) -> vec4<u32> {
    trace(TRACE_SRC, i * 32u, 32u);
    let x = src4_0[2u * i];
    let y = src4_0[2u * i + 1u];
    return convert4(vec4<u32>(x.xz, y.xz)) | (convert4(vec4<u32>(x.yw, y.yw)) << vec4<u32>(16u));
}

fn input_words(b: u32) -> u32 {
    return (arrayLength(&src0) + 1u) / 2u;
}
";

/// f16 bits to f32 bits, exactly (numpy's `npy_halfbits_to_floatbits`), without a branch (a
/// CPU adapter runs every side of one): a subnormal normalized by its leading bit.
const F16_TO_F32: &str = "
fn convert(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = h & 0x7c00u;
    let m = h & 0x3ffu;
    let shift = 10u - firstLeadingBit(m | 1u);
    let subnormal = ((113u - shift) << 23u) | (((m << shift) & 0x3ffu) << 13u);
    var f = ((h & 0x7fffu) + 0x1c000u) << 13u;
    f = select(f, subnormal, e == 0u);
    f = select(f, 0u, (h & 0x7fffu) == 0u);
    f = select(f, 0x7f800000u | (m << 13u), e == 0x7c00u);
    return sign | f;
}
";

/// bf16 bits to f32 bits: the upper half.
const BF16_TO_F32: &str = "
fn convert(h: u32) -> u32 {
    return h << 16u;
}
";

/// f32 bits to f16 bits as numpy's `npy_floatbits_to_halfbits` (round to nearest even, the
/// bits a subnormal's shift loses counted; overflow to infinity; a NaN's payload shifted,
/// kept a NaN), without a branch.
const F32_TO_F16: &str = "
fn convert(f: u32) -> u32 {
    let sign = (f >> 16u) & 0x8000u;
    let e = f & 0x7f800000u;
    let sig = f & 0x007fffffu;
    // A normal half: the exponent rebiased, the significand rounded (a carry steps the exponent).
    let up = select(0x1000u, 0u, (sig & 0x3fffu) == 0x1000u);
    let normal = ((e - 0x38000000u) >> 13u) + ((sig + up) >> 13u);
    // A subnormal half: the significand with its leading one, shifted by 1 to 11.
    let shift = min(113u - min(e >> 23u, 113u), 31u);
    let full = (0x00800000u | sig) >> shift;
    let tie = (full & 0x3fffu) == 0x1000u && (f & 0x7ffu) == 0u;
    let subnormal = (full + select(0x1000u, 0u, tie)) >> 13u;
    var h = select(normal, subnormal, e <= 0x38000000u);
    h = select(h, 0u, e < 0x33000000u);
    h = select(h, 0x7c00u, e >= 0x47800000u);
    h = select(h, max(0x7c00u + (sig >> 13u), 0x7c01u), e == 0x7f800000u && sig != 0u);
    return sign | h;
}

// Four at once: where each is zero or rounds to a normal half (activations, mostly), the
// exponent rebiased and the significand rounded to nearest even (a carry steps the
// exponent), in a few operations; else each through `convert`.
fn convert4(f: vec4<u32>) -> vec4<u32> {
    let a = f & vec4<u32>(0x7fffffffu);
    let zero = a == vec4<u32>(0u);
    if (all(zero | ((a >= vec4<u32>(0x38800000u)) & (a < vec4<u32>(0x477ff000u))))) {
        let odd = (a >> vec4<u32>(13u)) & vec4<u32>(1u);
        let h = (a + vec4<u32>(0xc8000fffu) + odd) >> vec4<u32>(13u);
        return ((f >> vec4<u32>(16u)) & vec4<u32>(0x8000u)) | select(h, vec4<u32>(0u), zero);
    }
    return vec4<u32>(convert(f.x), convert(f.y), convert(f.z), convert(f.w));
}
";

/// f32 bits to bf16 bits: round to nearest even on the upper half; a NaN keeps its upper
/// half with its quiet bit set, so it stays a NaN.
const F32_TO_BF16: &str = "
fn convert(f: u32) -> u32 {
    let rounded = (f + 0x7fffu + ((f >> 16u) & 1u)) >> 16u;
    return select(rounded, (f >> 16u) | 0x40u, (f & 0x7fffffffu) > 0x7f800000u);
}

fn convert4(f: vec4<u32>) -> vec4<u32> {
    let rounded = (f + vec4<u32>(0x7fffu) + ((f >> vec4<u32>(16u)) & vec4<u32>(1u))) >> vec4<u32>(16u);
    let nan = (f & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    return select(rounded, (f >> vec4<u32>(16u)) | vec4<u32>(0x40u), nan);
}
";
