//! Attention's layouts as views ([`PartView`]): the packed QKV projection split into Q and
//! into KV caches at a position, and the heads merged back; a plan and one view per part, for
//! [`Outputs::Views`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Outputs.html#variant.Views) and [`Inputs::Views`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Inputs.html#variant.Views).

use crate::error::{Result, SplitError};
use crate::plan::{ConcatPlan, PartView, SplitPlan};
use crate::IntTensor;

/// One attention layer's shapes: `batch` sequences of `seq` tokens, `q_heads` query heads and
/// `kv_heads` key and value heads (fewer in grouped-query attention) of `head_dim` elements.
///
/// ```
/// use wgsl_split::ops::Attention;
/// // A prefill of 2,048 tokens, 32 query heads and 8 KV heads of 128, caches of 4,096 at 1,024.
/// let layer = Attention { batch: 1, seq: 2048, q_heads: 32, kv_heads: 8, head_dim: 128 };
/// let (plan, views) = layer.split_qkv(4096, 1024)?;
/// assert_eq!(plan.whole_shape(), &[1, 2048, 48, 128]);
/// assert_eq!(views[1].offset, 1024 * 128); // K's first element: position 1,024 of head 0
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attention {
    /// Sequences.
    pub batch: usize,
    /// Tokens of each sequence in this step.
    pub seq: usize,
    /// Query heads.
    pub q_heads: usize,
    /// Key and value heads.
    pub kv_heads: usize,
    /// Elements of one head.
    pub head_dim: usize,
}

impl Attention {
    /// The packed projection `[batch, seq, (q_heads + 2 * kv_heads) * head_dim]`, taken as
    /// `[batch, seq, q_heads + 2 * kv_heads, head_dim]` (the same bytes), split into Q written
    /// as `[batch, q_heads, seq, head_dim]`, and K and V each written into a cache
    /// `[batch, kv_heads, cache_len, head_dim]` from sequence position `position` on (each
    /// cache its own region). A decode step makes the views again at its new position; the
    /// plan stays.
    pub fn split_qkv(
        &self,
        cache_len: usize,
        position: usize,
    ) -> Result<(SplitPlan, [PartView; 3])> {
        let Self {
            batch: b,
            seq: s,
            q_heads: hq,
            kv_heads: hkv,
            head_dim: d,
        } = *self;
        let all = hkv
            .checked_mul(2)
            .and_then(|kv| kv.checked_add(hq))
            .ok_or_else(|| {
                SplitError::TooLarge(format!(
                    "{hq} query heads and twice {hkv} key and value heads overflow a usize"
                ))
            })?;
        let lengths = IntTensor::vector(vec![hq as i64, hkv as i64, hkv as i64]);
        let plan = super::variadic_split(&[b, s, all, d], &IntTensor::scalar(2), &lengths)?;
        let heads = [0, 2, 1, 3];
        let q = PartView::within(&[b, s, hq, d], &[b, hq, s, d], &heads, &[0; 4])?;
        let cache = [b, hkv, cache_len, d];
        let kv = PartView::within(&[b, s, hkv, d], &cache, &heads, &[0, 0, position, 0])?;
        Ok((plan, [q, kv.clone(), kv]))
    }

    /// The attention's output, `[batch, q_heads, seq, head_dim]`, read as
    /// `[batch, seq, q_heads, head_dim]`: the concat of that one input is the merged heads,
    /// `[batch, seq, q_heads * head_dim]` in bytes.
    pub fn merge_heads(&self) -> Result<(ConcatPlan, [PartView; 1])> {
        let (b, s, h, d) = (self.batch, self.seq, self.q_heads, self.head_dim);
        let plan = super::concat(&[[b, s, h, d]], 2)?;
        let view = PartView::within(&[b, s, h, d], &[b, h, s, d], &[0, 2, 1, 3], &[0; 4])?;
        Ok((plan, [view]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitError;

    #[test]
    fn grouped_query_heads_land_in_their_caches() {
        let layer = Attention {
            batch: 2,
            seq: 3,
            q_heads: 4,
            kv_heads: 2,
            head_dim: 5,
        };
        let (plan, [q, k, v]) = layer.split_qkv(10, 6).unwrap();
        assert_eq!(
            plan.part_shapes(),
            [vec![2, 3, 4, 5], vec![2, 3, 2, 5], vec![2, 3, 2, 5]]
        );
        // Q [2, 4, 3, 5]: token t of head h of sequence n at n * 60 + h * 15 + t * 5.
        assert_eq!(
            q,
            PartView {
                offset: 0,
                strides: vec![60, 5, 15, 1]
            }
        );
        // K [2, 2, 10, 5] from position 6.
        assert_eq!(
            k,
            PartView {
                offset: 30,
                strides: vec![100, 5, 50, 1]
            }
        );
        assert_eq!(k, v);
        assert!(matches!(layer.split_qkv(8, 6), Err(SplitError::BadView(_))));
        let huge = Attention {
            kv_heads: usize::MAX / 2 + 1,
            ..layer
        };
        assert!(matches!(huge.split_qkv(8, 0), Err(SplitError::TooLarge(_))));
        let (merge, [heads]) = layer.merge_heads().unwrap();
        assert_eq!(merge.whole_shape(), &[2, 3, 4, 5]);
        assert_eq!(heads, q);
    }
}
