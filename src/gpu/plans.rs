//! [`Plan`]: the two plans the GPU path runs, a split's and a concat's, and what each entry
//! point of [`GpuSplitter`](crate::GpuSplitter) takes and gives for them. Both are one split
//! geometry underneath ([`SplitPlan`]), the bytes moving one way or the other ([`Direction`]).

use crate::error::Result;
use crate::gpu::direction::Direction;
use crate::gpu::parts::{Inputs, Job, Outputs};
use crate::gpu::placement::{BufferRegion, PartLayout};
use crate::plan::{ConcatPlan, SplitPlan};
use crate::reference;
use crate::tensor::HostTensor;
use crate::DType;
use std::sync::Arc;
use wgsl_split::placement::Geometry;

/// A split's plan ([`SplitPlan`]) or a concat's ([`ConcatPlan`]): what the entry points of
/// [`GpuSplitter`](crate::GpuSplitter) take, each giving the types of its own direction.
/// Implemented by those two alone.
///
/// | | [`SplitPlan`] | [`ConcatPlan`] |
/// | --- | --- | --- |
/// | `encode`'s `from` | [`BufferRegion`] (the input) | [`Inputs`] |
/// | `encode`'s `to` | [`Outputs`] | [`BufferRegion`] (the output) |
/// | `encode` gives | [`Encoded`]: the outputs' layout | [`Encoded`]: the inputs' layout |
/// | `run` takes | `&HostTensor` | `&[HostTensor]` |
/// | `run` gives | `Vec<HostTensor>` | `HostTensor` |
pub trait Plan: Geometry + std::fmt::Debug + Send + Sync + sealed::Sealed {
    /// Where [`GpuSplitter::encode`](crate::GpuSplitter::encode) reads.
    type From<'a>;
    /// Where [`GpuSplitter::encode`](crate::GpuSplitter::encode) writes.
    type To<'a>;
    /// What [`GpuSplitter::run`](crate::GpuSplitter::run) uploads.
    type HostInput: ?Sized + Sync;
    /// What [`GpuSplitter::run`](crate::GpuSplitter::run) reads back.
    type HostOutput: std::fmt::Debug + Send;

    /// Checks `output`, what [`GpuSplitter::run`](crate::GpuSplitter::run) (or `run_async`)
    /// gave for this plan and `input`, against the same split or concat on the CPU
    /// ([`reference`](mod@crate::reference)), byte for byte: NaN payloads, -0.0 and denormals
    /// included. [`SplitError::Mismatch`](crate::SplitError::Mismatch) names the first byte
    /// that differs.
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
    fn verify(&self, input: &Self::HostInput, output: &Self::HostOutput) -> Result<()> {
        let want = self.reference(input)?;
        crate::verify::compare_outputs(Self::tensors(output), Self::tensors(&want))
    }

    /// The whole tensor's region and the parts', from `encode`'s arguments.
    #[doc(hidden)]
    fn job<'a>(from: Self::From<'a>, to: Self::To<'a>) -> Job<'a>;
    /// Checks what `run` uploads against the plan; returns its dtype.
    #[doc(hidden)]
    fn host_dtype(&self, input: &Self::HostInput) -> Result<DType>;
    /// What `run` uploads: each host tensor's bytes, with its offset in the buffer read when
    /// the parts lie as `parts` places them.
    #[doc(hidden)]
    fn upload<'a>(input: &'a Self::HostInput, parts: &PartLayout) -> Vec<(u64, &'a [u8])>;
    /// What `run` gives, from the bytes read back (the written buffer, from its start).
    #[doc(hidden)]
    fn download(&self, bytes: &[u8], parts: &PartLayout, dtype: DType) -> Result<Self::HostOutput>;
    /// The same on the CPU reference.
    #[doc(hidden)]
    fn reference(&self, input: &Self::HostInput) -> Result<Self::HostOutput>;
    /// The tensors of a result, in order.
    #[doc(hidden)]
    fn tensors(output: &Self::HostOutput) -> &[HostTensor];
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::SplitPlan {}
    impl Sealed for crate::ConcatPlan {}
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

impl Plan for SplitPlan {
    type From<'a> = BufferRegion<'a>;
    type To<'a> = Outputs<'a>;
    type HostInput = HostTensor;
    type HostOutput = Vec<HostTensor>;

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

    fn reference(&self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        reference::split_tensor(input, self)
    }

    fn tensors(output: &Vec<HostTensor>) -> &[HostTensor] {
        output
    }
}

impl Plan for ConcatPlan {
    type From<'a> = Inputs<'a>;
    type To<'a> = BufferRegion<'a>;
    type HostInput = [HostTensor];
    type HostOutput = HostTensor;

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

    fn reference(&self, inputs: &[HostTensor]) -> Result<HostTensor> {
        reference::concat_tensors(inputs, self)
    }

    fn tensors(output: &HostTensor) -> &[HostTensor] {
        std::slice::from_ref(output)
    }
}
