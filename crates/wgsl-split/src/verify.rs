//! Checking GPU results against the CPU reference, byte for byte ([`Plan::verify`](https://docs.rs/wgpu-split/latest/wgpu_split/trait.Plan.html#method.verify)).

use crate::error::{Result, SplitError};
use crate::tensor::HostTensor;

/// Byte-for-byte comparison of two lists of tensors; the error names the first difference.
#[doc(hidden)]
pub fn compare_outputs(got: &[HostTensor], want: &[HostTensor]) -> Result<()> {
    if got.len() != want.len() {
        return Err(SplitError::Mismatch(format!(
            "{} outputs, expected {}",
            got.len(),
            want.len()
        )));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape() != w.shape() {
            return Err(SplitError::Mismatch(format!(
                "output {i} has shape {:?}, expected {:?}",
                g.shape(),
                w.shape()
            )));
        }
        if let Some(b) = g.bytes().iter().zip(w.bytes()).position(|(a, b)| a != b) {
            return Err(SplitError::Mismatch(format!(
                "output {i} differs at byte {b}: {:#04x}, expected {:#04x}",
                g.bytes()[b],
                w.bytes()[b]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_difference_is_named() {
        let a = vec![HostTensor::from_slice(&[3], &[1u8, 2, 3]).unwrap()];
        let b = vec![HostTensor::from_slice(&[3], &[1u8, 9, 3]).unwrap()];
        let c = vec![HostTensor::from_slice(&[1, 3], &[1u8, 2, 3]).unwrap()];
        assert_eq!(compare_outputs(&a, &a), Ok(()));
        let e = compare_outputs(&a, &b).unwrap_err().to_string();
        assert!(
            e.contains("output 0 differs at byte 1: 0x02, expected 0x09"),
            "{e}"
        );
        assert!(compare_outputs(&a, &c).is_err());
        assert!(compare_outputs(&a, &[]).is_err());
    }
}
