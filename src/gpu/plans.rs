//! [`Plan`]: the plans the GPU path runs (a split's, a concat's, rows placed by indices, a
//! paged KV write) and what each entry point of [`GpuSplitter`] takes and gives for them. A
//! split and a concat are one split geometry underneath ([`SplitPlan`]), the bytes moving one
//! way or the other ([`Direction`]): [`Parts`] is what the two share.

use crate::error::Result;
use crate::gpu::direction::Direction;
use crate::gpu::parts::{Inputs, Job, Outputs};
use crate::gpu::placement::{BufferRegion, PartLayout};
use crate::gpu::GpuSplitter;
#[cfg(doc)]
use crate::plan::RowsStatus;
use crate::plan::{ConcatPlan, PagedKvPlan, RowsPlan, SplitPlan};
#[cfg(doc)]
use crate::reference::PagedKvOutput;
use crate::tensor::HostTensor;
use crate::DType;
use crate::{PagedKvBuffers, RowsBuffers};
use std::sync::Arc;
use wgsl_split::placement::Geometry;

/// A plan the GPU runs: a split's ([`SplitPlan`]), a concat's ([`ConcatPlan`]), rows placed
/// by indices ([`RowsPlan`]) or a paged KV write ([`PagedKvPlan`]). Each says what the entry
/// points of [`GpuSplitter`] take and give for it; implemented by those four alone.
///
/// | | `encode`'s and `prepare`'s `from` | `to` | `run` takes | `run` gives |
/// | --- | --- | --- | --- | --- |
/// | [`SplitPlan`] | [`BufferRegion`] (the input) | [`Outputs`] | `&HostTensor` | `Vec<HostTensor>` |
/// | [`ConcatPlan`] | [`Inputs`] | [`BufferRegion`] (the output) | `&[HostTensor]` | `HostTensor` |
/// | [`RowsPlan`] | [`RowsBuffers`] | [`BufferRegion`] (the target) | `&[data, indices]`, a scatter's `&[data, indices, updates]` | `(HostTensor, RowsStatus)` |
/// | [`PagedKvPlan`] | [`PagedKvBuffers`] | [`Outputs::Regions`]: queries, key cache, value cache | `&[qkv, slots, k_cache, v_cache]` | [`PagedKvOutput`] |
///
/// `encode` gives an [`Encoded`]: where each part lies (a split's outputs, a concat's
/// inputs; the regions rows and a paged write write), and the commands recorded.
pub trait Plan: std::fmt::Debug + Send + Sync + sealed::Sealed {
    /// Where [`GpuSplitter::encode`] reads.
    type From<'a>;
    /// Where [`GpuSplitter::encode`] writes.
    type To<'a>;
    /// What [`GpuSplitter::run`] uploads.
    type HostInput: ?Sized + Sync;
    /// What [`GpuSplitter::run`] reads back.
    type HostOutput: std::fmt::Debug + Send;

    /// Checks `output`, what [`GpuSplitter::run`] (or `run_async`) gave for this plan and
    /// `input`, against the same operation on the CPU ([`reference`](mod@crate::reference)),
    /// byte for byte: NaN payloads, -0.0 and denormals included.
    /// [`SplitError::Mismatch`](crate::SplitError::Mismatch) names the first byte that
    /// differs.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, BackendChoice, GpuSplitter, HostTensor, Plan};
    /// let gpu = GpuSplitter::open(BackendChoice::Auto)?;
    /// let a = HostTensor::from_slice(&[2, 2], &[f32::NAN, -0.0, 1e-42, 4.0])?;
    /// let plan = ops::concat(&[[2, 2], [2, 2]], 1)?;
    /// let inputs = [a.clone(), a];
    /// let joined = gpu.run(&plan, &inputs)?;
    /// plan.verify(&inputs, &joined)?;
    /// # Ok::<(), wgpu_split::SplitError>(())
    /// ```
    fn verify(&self, input: &Self::HostInput, output: &Self::HostOutput) -> Result<()>;

    /// What [`GpuSplitter::prepare`] prepares: this plan with `encode`'s arguments.
    #[doc(hidden)]
    fn node<'p, 'a>(&'p self, from: Self::From<'a>, to: Self::To<'a>) -> Node<'p, 'a>;

    /// Uploads, runs and reads back: [`GpuSplitter::run_async`].
    #[doc(hidden)]
    #[allow(async_fn_in_trait)]
    async fn run_on(&self, gpu: &GpuSplitter, input: &Self::HostInput) -> Result<Self::HostOutput>;

    /// [`GpuSplitter::run`]: the same, the read-back waited for on this thread.
    #[doc(hidden)]
    fn run_blocking(&self, gpu: &GpuSplitter, input: &Self::HostInput) -> Result<Self::HostOutput>;
}

/// A plan with the caller's regions, of each kind: what [`GpuSplitter::prepare`] chooses
/// the preparation by.
#[derive(Debug, Clone, Copy)]
pub enum Node<'p, 'a> {
    /// A split or a concat: its split geometry and its regions.
    Parts(&'p SplitPlan, Job<'a>),
    /// Rows placed by indices, and their target.
    Rows(&'p RowsPlan, RowsBuffers<'a>, BufferRegion<'a>),
    /// A paged KV write, and the regions it writes.
    Paged(&'p PagedKvPlan, PagedKvBuffers<'a>, Outputs<'a>),
}

/// What a split and a concat share on the GPU path: one split geometry, the parts in the
/// caller's regions ([`Job`]), and the host round trip's upload and download.
pub(crate) trait Parts: Plan + Geometry {
    /// The whole tensor's region and the parts', from `encode`'s arguments.
    fn job<'a>(from: Self::From<'a>, to: Self::To<'a>) -> Job<'a>;
    /// Checks what `run` uploads against the plan; returns its dtype.
    fn host_dtype(&self, input: &Self::HostInput) -> Result<DType>;
    /// What `run` uploads: each host tensor's bytes, with its offset in the buffer read when
    /// the parts lie as `parts` places them.
    fn upload<'a>(input: &'a Self::HostInput, parts: &PartLayout) -> Vec<(u64, &'a [u8])>;
    /// What `run` gives, from the bytes read back (the written buffer, from its start).
    fn download(&self, bytes: &[u8], parts: &PartLayout, dtype: DType) -> Result<Self::HostOutput>;
    /// The tensors of a result, in order.
    fn tensors(output: &Self::HostOutput) -> &[HostTensor];
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::SplitPlan {}
    impl Sealed for crate::ConcatPlan {}
    impl Sealed for crate::RowsPlan {}
    impl Sealed for crate::PagedKvPlan {}
}

/// What [`GpuSplitter::encode`](crate::GpuSplitter::encode) recorded, for a split or a
/// concat alike (a [`Prepared`](crate::Prepared) node says it before its first encode).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Encoded {
    /// Where each part lies (a split's outputs, a concat's inputs): its offset and size in
    /// its region's buffer (shared with the route kept for the next encode of the same plan).
    pub parts: Arc<PartLayout>,
    /// Compute dispatches of the gather shader (0 when copies moved the parts).
    pub dispatches: u32,
    /// `copy_buffer_to_buffer` commands.
    pub buffer_copies: u32,
}

/// [`Encoded`], as the library makes it.
pub(crate) type Recorded = Encoded;

/// The [`Plan`] of a split or a concat: each entry point runs its [`Parts`].
macro_rules! parts_plan {
    ($plan:ty, $from:ty, $to:ty, $input:ty, $output:ty) => {
        impl Plan for $plan {
            type From<'a> = $from;
            type To<'a> = $to;
            type HostInput = $input;
            type HostOutput = $output;

            fn verify(&self, input: &$input, output: &$output) -> Result<()> {
                let want = self.reference(input)?;
                crate::verify::compare_outputs(Self::tensors(output), Self::tensors(&want))
            }

            fn node<'p, 'a>(&'p self, from: Self::From<'a>, to: Self::To<'a>) -> Node<'p, 'a> {
                Node::Parts(self.geometry(), Self::job(from, to))
            }

            async fn run_on(&self, gpu: &GpuSplitter, input: &$input) -> Result<$output> {
                gpu.run_parts_async(self, input).await
            }

            fn run_blocking(&self, gpu: &GpuSplitter, input: &$input) -> Result<$output> {
                gpu.run_parts(self, input)
            }
        }
    };
}

parts_plan!(
    SplitPlan,
    BufferRegion<'a>,
    Outputs<'a>,
    HostTensor,
    Vec<HostTensor>
);
parts_plan!(
    ConcatPlan,
    Inputs<'a>,
    BufferRegion<'a>,
    [HostTensor],
    HostTensor
);

impl Parts for SplitPlan {
    fn job<'a>(from: Self::From<'a>, to: Self::To<'a>) -> Job<'a> {
        Job {
            direction: Direction::Split,
            whole: from,
            parts: to.into(),
        }
    }

    fn host_dtype(&self, input: &HostTensor) -> Result<DType> {
        self.check_whole_shape(input.shape())?;
        Ok(input.dtype())
    }

    fn upload<'a>(input: &'a HostTensor, _: &PartLayout) -> Vec<(u64, &'a [u8])> {
        vec![(0, input.bytes())]
    }

    fn download(&self, bytes: &[u8], parts: &PartLayout, dtype: DType) -> Result<Vec<HostTensor>> {
        parts.parts_from(bytes, self, dtype)
    }

    fn tensors(output: &Vec<HostTensor>) -> &[HostTensor] {
        output
    }
}

impl Parts for ConcatPlan {
    fn job<'a>(from: Self::From<'a>, to: Self::To<'a>) -> Job<'a> {
        Job {
            direction: Direction::Concat,
            whole: to,
            parts: from.into(),
        }
    }

    fn host_dtype(&self, inputs: &[HostTensor]) -> Result<DType> {
        self.check_inputs(inputs)
    }

    fn upload<'a>(inputs: &'a [HostTensor], parts: &PartLayout) -> Vec<(u64, &'a [u8])> {
        // An empty input may lie past the region's end: it takes no room.
        inputs
            .iter()
            .zip(&parts.ranges)
            .filter(|(_, r)| r.size > 0)
            .map(|(t, r)| (r.offset, t.bytes()))
            .collect()
    }

    fn download(&self, bytes: &[u8], _: &PartLayout, dtype: DType) -> Result<HostTensor> {
        self.output_from(bytes, dtype)
    }

    fn tensors(output: &HostTensor) -> &[HostTensor] {
        std::slice::from_ref(output)
    }
}
