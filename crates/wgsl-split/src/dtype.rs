//! Element types. A split only moves bytes, so all the GPU path needs of a dtype is its size;
//! the names are kept for files, messages and the CPU reference.

use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// One byte per element, 0 or 1.
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// IEEE single precision.
    F32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE double precision.
    F64,
    /// Two f32: real, imaginary.
    Complex64,
    /// Two f64: real, imaginary.
    Complex128,
    /// A fixed-width string of this many UTF-32 code points (numpy `<U`), zero padded.
    Utf32(usize),
}

impl DType {
    /// Every numeric dtype the library supports, in the order of the README's table.
    pub const ALL_NUMERIC: [DType; 15] = [
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U32,
        DType::F32,
        DType::I64,
        DType::U64,
        DType::F64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
            DType::Utf32(n) => 4 * n,
        }
    }

    /// Whether the dtype is an integer type (allowed for `axis`, `split_lengths` and `split`).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I8
                | DType::U8
                | DType::I16
                | DType::U16
                | DType::I32
                | DType::U32
                | DType::I64
                | DType::U64
        )
    }

    /// The short name used in messages and on the command line (`f32`, `complex64`, `<U5`).
    pub fn name(self) -> String {
        match self {
            DType::Utf32(n) => format!("<U{n}"),
            other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Parses a name as printed by [`DType::name`].
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL_NUMERIC
            .into_iter()
            .find(|d| d.name() == name)
            .or_else(|| name.strip_prefix("<U")?.parse().ok().map(DType::Utf32))
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL_NUMERIC.into_iter().chain([DType::Utf32(7)]) {
            assert_eq!(DType::from_name(&d.name()), Some(d));
        }
        assert_eq!(DType::Complex128.size(), 16);
        assert_eq!(DType::Utf32(3).size(), 12);
        assert!(!DType::F32.is_integer() && DType::U64.is_integer());
    }
}
