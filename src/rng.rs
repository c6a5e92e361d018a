//! A small deterministic generator (xorshift64*): the bench's data and places, the fuzzers'
//! cases. Each user adds the draws it needs in an `impl` of its own.

/// xorshift64* from a non-zero seed.
#[derive(Debug, Clone)]
pub(crate) struct XorShift(pub(crate) u64);

impl XorShift {
    /// The next 64 bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}
