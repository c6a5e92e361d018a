//! f32 into f16 and bf16 and back, on the CPU, bit by bit: what the indexed build's
//! conversions give (`gather::builds::Convert`), written from their definitions.

use crate::error::Result;
use crate::gather::builds::Convert;
use crate::tensor::HostTensor;
use crate::DType;

/// `t`'s elements converted into `to` (`t` itself where it is `to` already), as the shader
/// converts them; a pair it does not convert is [`crate::SplitError::DataMismatch`].
pub(crate) fn convert_tensor(t: &HostTensor, to: DType) -> Result<HostTensor> {
    let Some(c) = Convert::of(t.dtype(), to)? else {
        return Ok(t.clone());
    };
    let bytes = t.bytes();
    let out: Vec<u8> = match c.widens() {
        true => bytes
            .chunks_exact(2)
            .flat_map(|h| {
                let h = u16::from_le_bytes([h[0], h[1]]);
                let f = match c {
                    Convert::F16ToF32 => f16_to_f32(h),
                    _ => (h as u32) << 16,
                };
                f.to_le_bytes()
            })
            .collect(),
        false => bytes
            .chunks_exact(4)
            .flat_map(|f| {
                let f = u32::from_le_bytes([f[0], f[1], f[2], f[3]]);
                let h = match c {
                    Convert::F32ToF16 => f32_to_f16(f),
                    _ => f32_to_bf16(f),
                };
                h.to_le_bytes()
            })
            .collect(),
    };
    HostTensor::new(to, t.shape().to_vec(), out)
}

/// f32 bits to f16 bits, as numpy's `astype(np.float16)` (`npy_floatbits_to_halfbits`):
/// round to nearest even, overflow to infinity, subnormals, signed zeros; a NaN keeps its
/// sign and the upper 10 bits of its payload, and stays a NaN where they are all zero.
pub(crate) fn f32_to_f16(f: u32) -> u16 {
    let sign = ((f >> 16) & 0x8000) as u16;
    let exp = (f >> 23) & 0xff;
    let sig = f & 0x007f_ffff;
    if exp == 0xff {
        return match sig {
            0 => sign | 0x7c00,
            _ => sign | (0x7c00 + (sig >> 13) as u16).max(0x7c01),
        };
    }
    // The value is (1.sig) * 2^(exp - 127) (exp > 0); a half keeps 10 bits of significand,
    // down to 2^-24 as a subnormal.
    let e = exp as i32 - 127;
    if e > 15 {
        return sign | 0x7c00;
    }
    if e < -25 || exp == 0 {
        return sign;
    }
    // The significand with its leading one, as a multiple of the half's last place: 2^-24
    // for subnormals (e < -14), 2^(e - 10) for normals; the rest rounded to nearest even.
    let full = (0x0080_0000 | sig) as u64;
    let drop = if e < -14 { (-e - 1) as u32 } else { 13 };
    let kept = full >> drop;
    let rest = full & ((1 << drop) - 1);
    let half = 1u64 << (drop - 1);
    let rounded = kept + u64::from(rest > half || (rest == half && kept & 1 == 1));
    let bits = match e < -14 {
        // A subnormal: the significand alone (a carry makes it the smallest normal).
        true => rounded,
        // A normal: the exponent rebiased, the significand's leading one dropped (a carry
        // steps the exponent, up to infinity).
        false => (((e + 15) as u64) << 10) + rounded - 0x400,
    };
    sign | bits as u16
}

/// f16 bits to f32 bits, exactly (numpy's `npy_halfbits_to_floatbits`): a NaN keeps its
/// payload.
pub(crate) fn f16_to_f32(h: u16) -> u32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let sig = (h & 0x3ff) as u32;
    match (exp, sig) {
        (0, 0) => sign,
        (0, _) => {
            // sig * 2^-24: its leading one at bit `p` gives 2^(p - 24).
            let p = 31 - sig.leading_zeros();
            sign | ((p + 103) << 23) | ((sig << (23 - p)) & 0x007f_ffff)
        }
        (0x1f, _) => sign | 0x7f80_0000 | (sig << 13),
        _ => sign | ((exp + 112) << 23) | (sig << 13),
    }
}

/// f32 bits to bf16 bits: round to nearest even on the upper 16 bits (overflow to infinity);
/// a NaN keeps its upper half with its quiet bit set, so it stays a NaN.
pub(crate) fn f32_to_bf16(f: u32) -> u16 {
    if f & 0x7fff_ffff > 0x7f80_0000 {
        return ((f >> 16) | 0x40) as u16;
    }
    let (kept, rest) = (f >> 16, f & 0xffff);
    (kept + u32::from(rest > 0x8000 || (rest == 0x8000 && kept & 1 == 1))) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// f32 bit patterns: every exponent with significands at their edges and ties (the bits
    /// a half drops: 0, the half-way point, one either side), and a stride through all 2^32.
    fn patterns() -> impl Iterator<Item = u32> {
        let edges = (0..=0x1ffu32).flat_map(|se| {
            [
                0, 1, 0xfff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0x7f_ffff,
            ]
            .map(move |sig| (se << 23) | sig)
        });
        edges.chain((0..=u32::MAX).step_by(65_521))
    }

    /// Round to nearest even into f16 as the `half` crate gives it, for every value but NaN
    /// (whose payload `half` sets its quiet bit in, where numpy keeps it as it is).
    #[test]
    fn f32_to_f16_rounds_as_half_does() {
        for f in patterns().filter(|&f| !f32::from_bits(f).is_nan()) {
            let want = f16::from_f32(f32::from_bits(f)).to_bits();
            assert_eq!(f32_to_f16(f), want, "{f:#010x}");
        }
    }

    /// numpy's NaNs: the sign and the payload's upper bits kept, a payload that shifts away
    /// still a NaN (0x7c01); and the edges numpy's tests name.
    #[test]
    fn f32_to_f16_keeps_numpy_nans_and_edges() {
        let cases = [
            (0x7fc0_0000, 0x7e00),
            (0xffc0_0000, 0xfe00),
            (0x7f80_0001, 0x7c01),
            (0xff80_1fff, 0xfc01),
            (0x7fbf_ffff, 0x7dff),
            (0x7f80_0000, 0x7c00),
            (0x8000_0000, 0x8000),
            (0x477f_e000, 0x7bff), // 65504
            (0x477f_efff, 0x7bff), // just below the tie to infinity
            (0x477f_f000, 0x7c00), // 65520: the tie rounds to even, infinity
            (0x3380_0000, 0x0001), // 2^-24
            (0x3300_0000, 0x0000), // 2^-25: the tie rounds to even, zero
            (0x3300_0001, 0x0001),
            (0x33c0_0000, 0x0002), // 1.5 * 2^-24: the tie rounds to even
            (0x0000_0001, 0x0000),
        ];
        for (f, h) in cases {
            assert_eq!(f32_to_f16(f), h, "{f:#010x}");
        }
    }

    /// Every f16 into f32 exactly, as `half` gives it; a NaN's payload kept as it is.
    #[test]
    fn f16_to_f32_is_exact() {
        for h in 0..=u16::MAX {
            let got = f16_to_f32(h);
            match f16::from_bits(h).is_nan() {
                true => assert_eq!(
                    got,
                    ((h as u32 & 0x8000) << 16) | 0x7f80_0000 | ((h as u32 & 0x3ff) << 13)
                ),
                false => assert_eq!(got, f16::from_bits(h).to_f32().to_bits(), "{h:#06x}"),
            }
            // Every f16 comes back from its f32.
            assert_eq!(f32_to_f16(got), h, "{h:#06x}");
        }
    }

    /// Round to nearest even into bf16 as `half` gives it, NaNs included.
    #[test]
    fn f32_to_bf16_rounds_as_half_does() {
        for f in patterns() {
            let want = bf16::from_f32(f32::from_bits(f)).to_bits();
            assert_eq!(f32_to_bf16(f), want, "{f:#010x}");
        }
        assert_eq!(f32_to_bf16(0x7f80_0001), 0x7fc0); // a NaN stays a NaN
        assert_eq!(f32_to_bf16(0x7f7f_ffff), 0x7f80); // overflow to infinity
    }
}
