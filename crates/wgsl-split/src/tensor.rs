//! Host tensors: a dtype, a shape and C-order little-endian bytes. Integer side inputs
//! (`axis`, `split_lengths`, `split`) are [`IntTensor`]s.

use crate::dtype::DType;
use crate::error::{Result, SplitError};
use ndarray::{ArrayD, ArrayViewD, IxDyn};

/// A Rust type that maps one to one onto a [`DType`] and can be viewed as bytes.
pub trait Element: bytemuck::Pod {
    /// The dtype of this Rust type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => { $(impl Element for $t { const DTYPE: DType = DType::$d; })* };
}
element!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, half::f16 => F16, half::bf16 => BF16,
    i32 => I32, u32 => U32, f32 => F32, i64 => I64, u64 => U64, f64 => F64,
);
#[cfg(feature = "complex")]
element!(num_complex::Complex<f32> => Complex64, num_complex::Complex<f64> => Complex128);

/// Number of elements of a shape, or an error naming the shape if the product overflows.
pub fn element_count(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            SplitError::TooLarge(format!(
                "shape {shape:?} has more elements than usize can count"
            ))
        })
}

/// Number of bytes of a shape of `dtype`, or an error if it overflows.
pub fn byte_count(shape: &[usize], dtype: DType) -> Result<usize> {
    element_count(shape)?
        .checked_mul(dtype.size())
        .ok_or_else(|| {
            SplitError::TooLarge(format!(
                "shape {shape:?} of {dtype} has more bytes than usize can count"
            ))
        })
}

/// A tensor on the host: dtype, shape, and its elements as C-order (row-major) little-endian bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostTensor {
    dtype: DType,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl HostTensor {
    /// Wraps C-order bytes; fails if their length is not `elements * dtype.size()`.
    pub fn new(dtype: DType, shape: Vec<usize>, bytes: Vec<u8>) -> Result<Self> {
        let expected = byte_count(&shape, dtype)?;
        if bytes.len() != expected {
            return Err(SplitError::DataMismatch(format!(
                "data of shape {shape:?} and dtype {dtype} needs {expected} bytes, got {}",
                bytes.len()
            )));
        }
        Ok(Self {
            dtype,
            shape,
            bytes,
        })
    }

    /// Copies a C-order slice of elements.
    pub fn from_slice<T: Element>(shape: &[usize], data: &[T]) -> Result<Self> {
        Self::new(
            T::DTYPE,
            shape.to_vec(),
            bytemuck::cast_slice(data).to_vec(),
        )
    }

    /// Copies booleans, one byte each (0 or 1).
    pub fn from_bools(shape: &[usize], data: &[bool]) -> Result<Self> {
        Self::new(
            DType::Bool,
            shape.to_vec(),
            data.iter().map(|&b| b as u8).collect(),
        )
    }

    /// Copies an ndarray array of any memory layout into C order.
    pub fn from_array<T: Element>(array: ArrayViewD<'_, T>) -> Self {
        let data: Vec<T> = array.iter().copied().collect();
        Self {
            dtype: T::DTYPE,
            shape: array.shape().to_vec(),
            bytes: bytemuck::cast_slice(&data).to_vec(),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements as C-order little-endian bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Takes the bytes out.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The elements as a typed vector; fails if `T` is not this tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype {
            return Err(SplitError::DataMismatch(format!(
                "tensor holds {}, not {}",
                self.dtype,
                T::DTYPE
            )));
        }
        // pod_collect_to_vec copies, so the bytes need no particular alignment.
        Ok(bytemuck::pod_collect_to_vec(&self.bytes))
    }

    /// The elements as an ndarray array; fails if `T` is not this tensor's dtype.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        let data = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(&self.shape), data)
            .map_err(|e| SplitError::DataMismatch(e.to_string()))
    }
}

/// An integer input (`axis`, `split_lengths`, `split`) of any integer dtype, widened to i64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntTensor {
    shape: Vec<usize>,
    values: Vec<i64>,
}

impl IntTensor {
    /// A rank-0 tensor.
    pub fn scalar(value: i64) -> Self {
        Self {
            shape: vec![],
            values: vec![value],
        }
    }

    /// A 1-D tensor.
    pub fn vector(values: Vec<i64>) -> Self {
        Self {
            shape: vec![values.len()],
            values,
        }
    }

    /// Any shape; fails if `values` does not fill it.
    pub fn new(shape: Vec<usize>, values: Vec<i64>) -> Result<Self> {
        if element_count(&shape)? != values.len() {
            return Err(SplitError::DataMismatch(format!(
                "integer tensor of shape {shape:?} cannot hold {} values",
                values.len()
            )));
        }
        Ok(Self { shape, values })
    }

    /// Reads a host tensor of any integer dtype; `input` names it in errors. A u64 above
    /// `i64::MAX` is refused rather than wrapped.
    pub fn from_host(tensor: &HostTensor, input: &'static str) -> Result<Self> {
        let bad = |problem: String| SplitError::BadIntegerInput { input, problem };
        let dtype = tensor.dtype();
        if !dtype.is_integer() {
            return Err(bad(format!("must have an integer dtype, got {dtype}")));
        }
        let values = tensor
            .bytes()
            .chunks_exact(dtype.size())
            .map(|c| {
                let mut b8 = [0u8; 8];
                b8[..c.len()].copy_from_slice(c);
                let raw = u64::from_le_bytes(b8);
                let bits = 8 * c.len() as u32;
                match dtype {
                    DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
                        // Sign-extend from the element's width.
                        Ok(((raw << (64 - bits)) as i64) >> (64 - bits))
                    }
                    _ => i64::try_from(raw)
                        .map_err(|_| bad(format!("value {raw} does not fit in i64"))),
                }
            })
            .collect::<Result<Vec<i64>>>()?;
        Self::new(tensor.shape().to_vec(), values)
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The values in C order.
    pub fn values(&self) -> &[i64] {
        &self.values
    }
}

impl From<i64> for IntTensor {
    fn from(v: i64) -> Self {
        IntTensor::scalar(v)
    }
}

impl From<Vec<i64>> for IntTensor {
    fn from(v: Vec<i64>) -> Self {
        IntTensor::vector(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_tensor_widens_every_integer_dtype() {
        let t = HostTensor::from_slice(&[2], &[-3i8, 5]).unwrap();
        assert_eq!(IntTensor::from_host(&t, "axis").unwrap().values(), &[-3, 5]);
        let t = HostTensor::from_slice(&[], &[u16::MAX]).unwrap();
        assert_eq!(IntTensor::from_host(&t, "axis").unwrap().values(), &[65535]);
        let t = HostTensor::from_slice(&[1], &[u64::MAX]).unwrap();
        assert!(matches!(
            IntTensor::from_host(&t, "axis"),
            Err(SplitError::BadIntegerInput { .. })
        ));
        let t = HostTensor::from_slice(&[1], &[1.0f32]).unwrap();
        let e = IntTensor::from_host(&t, "split").unwrap_err();
        assert_eq!(e.to_string(), "split must have an integer dtype, got f32");
    }

    #[test]
    fn host_tensor_checks_length_and_overflow() {
        assert!(HostTensor::new(DType::F32, vec![2, 2], vec![0; 15]).is_err());
        assert!(matches!(
            element_count(&[usize::MAX, 2]),
            Err(SplitError::TooLarge(_))
        ));
        let t = HostTensor::from_slice(&[3], &[1.0f32, -0.0, f32::NAN]).unwrap();
        assert!(t.to_vec::<u32>().is_err());
        assert_eq!(t.to_vec::<f32>().unwrap()[1].to_bits(), (-0.0f32).to_bits());
    }
}
