//! Which way bytes move between a plan's whole tensor and its parts: a split or a concat.

/// Which way a route moves a plan's bytes: from the split's input into its outputs, or from
/// the concat's inputs (the split's outputs, placed by the layout) into its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Split,
    Concat,
}

impl Direction {
    /// The operation, as messages name it.
    #[doc(hidden)]
    pub fn op(self) -> &'static str {
        match self {
            Direction::Split => "split",
            Direction::Concat => "concat",
        }
    }

    /// What messages call a part (a split's output, a concat's input) and the whole tensor.
    #[doc(hidden)]
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Direction::Split => ("output", "input"),
            Direction::Concat => ("input", "output"),
        }
    }

    /// The whole tensor's and the parts' `(whole, parts)` in the order the bytes move (read,
    /// then written), and back: as given for a split, swapped for a concat.
    #[doc(hidden)]
    pub fn in_order<T>(self, whole: T, parts: T) -> (T, T) {
        match self {
            Direction::Split => (whole, parts),
            Direction::Concat => (parts, whole),
        }
    }
}
