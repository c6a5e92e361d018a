//! [`Plan`]: the two plans the GPU path runs, a split's and a concat's, and what each entry
//! point of [`GpuSplitter`](crate::GpuSplitter) takes and gives for them. Both are one split
//! geometry underneath ([`SplitPlan`]), the bytes moving one way or the other ([`Direction`]).

use crate::error::{Result, SplitError};
use crate::gpu::direction::Direction;
use crate::gpu::gather::UNIT_BYTES;
use crate::gpu::parts::{Inputs, Job, Outputs};
use crate::gpu::placement::{BufferRegion, PartLayout};
use crate::plan::{ConcatPlan, SplitPlan};
use crate::reference;
use crate::tensor::HostTensor;
use crate::DType;
use std::sync::Arc;

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
pub trait Plan: std::fmt::Debug + Send + Sync + sealed::Sealed {
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
    /// included. [`SplitError::Mismatch`] names the first byte
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

    #[doc(hidden)]
    const DIRECTION: Direction;
    /// The split geometry: the split's own, the concat's inverse.
    #[doc(hidden)]
    fn geometry(&self) -> &SplitPlan;
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

    const DIRECTION: Direction = Direction::Split;

    fn geometry(&self) -> &SplitPlan {
        self
    }

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

    const DIRECTION: Direction = Direction::Concat;

    fn geometry(&self) -> &SplitPlan {
        self.split()
    }

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

/// The layouts of a split's or a concat's parts, placed by this crate or checked.
impl PartLayout {
    /// Places the parts of `plan` (a split's outputs, a concat's inputs) for elements of
    /// `dtype`, each at a multiple of `alignment` (raised to 16 if smaller, since the gather
    /// writes whole 16-byte units; must be a power of two). Empty parts take no room.
    pub fn new<P: Plan>(plan: &P, dtype: DType, alignment: u64) -> Result<Self> {
        Self::place(plan.geometry(), dtype, alignment)
    }

    /// The packed placement: every part at a multiple of 16 bytes.
    ///
    /// ```
    /// use wgpu_split::{ops, DType, IntTensor, PartLayout};
    /// let plan = ops::split(&[2, 10], &IntTensor::scalar(1), 2)?;
    /// let layout = PartLayout::packed(&plan, DType::U8)?;
    /// assert_eq!(layout.ranges[1].offset, 16); // 10 bytes, then the next unit
    /// assert_eq!(layout.total_bytes, 28);
    /// # Ok::<(), wgpu_split::SplitError>(())
    /// ```
    pub fn packed<P: Plan>(plan: &P, dtype: DType) -> Result<Self> {
        Self::place(plan.geometry(), dtype, UNIT_BYTES)
    }

    /// Checks that this layout can place the parts of `plan` (a split's outputs, a concat's
    /// inputs) for `dtype`: one range per part of the part's size, offsets at multiples of
    /// `alignment` (a power of two, at least 16) in order without overlap, and `total_bytes` a
    /// multiple of 4 that holds them all. A layout from [`PartLayout::new`] always passes;
    /// one built by hand is checked before [`Outputs::Placed`](crate::Outputs) or
    /// [`Inputs::Placed`](crate::Inputs) records anything.
    pub fn check<P: Plan>(&self, plan: &P, dtype: DType) -> Result<()> {
        self.check_as(P::DIRECTION, plan.geometry(), dtype)
    }

    /// Cuts a region of `plan`'s parts read back (at least `total_bytes` long; a split's
    /// outputs as [`GpuSplitter::encode`](crate::GpuSplitter::encode) left them) into one
    /// host tensor of `dtype` per part.
    pub fn parts_from<P: Plan>(
        &self,
        region: &[u8],
        plan: &P,
        dtype: DType,
    ) -> Result<Vec<HostTensor>> {
        let plan = plan.geometry();
        let (part, _) = P::DIRECTION.names();
        if (region.len() as u64) < self.total_bytes || self.ranges.len() != plan.num_parts() {
            return Err(SplitError::DataMismatch(format!(
                "a region of {} bytes for {} {part}s does not match this layout ({} bytes, {} \
                 {part}s)",
                region.len(),
                plan.num_parts(),
                self.total_bytes,
                self.ranges.len()
            )));
        }
        self.ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                // An empty part may lie past the region's end: it takes no room.
                let bytes = match r.size {
                    0 => Vec::new(),
                    n => region[r.offset as usize..(r.offset + n) as usize].to_vec(),
                };
                HostTensor::new(dtype, plan.part_shape(i), bytes)
            })
            .collect()
    }

    /// The region of `plan`'s parts, `total_bytes` long, with each of `parts` at its range
    /// and zeros between: a concat's inputs to write where [`Inputs::Placed`](crate::Inputs)
    /// reads them (`queue.write_buffer`). `parts` are the plan's, in order, of one dtype,
    /// each of its part's shape and of its range's size.
    ///
    /// ```
    /// use wgpu_split::{ops, HostTensor, PartLayout};
    /// let a = HostTensor::from_slice(&[2, 1], &[1u8, 2])?;
    /// let b = HostTensor::from_slice(&[2, 2], &[3u8, 4, 5, 6])?;
    /// let plan = ops::concat(&[a.shape().to_vec(), b.shape().to_vec()], 1)?;
    /// let layout = PartLayout::packed(&plan, a.dtype())?;
    /// let region = layout.region_of(&plan, &[a, b])?;
    /// assert_eq!(region.len(), 20);
    /// assert_eq!(region[..2], [1, 2]);
    /// assert_eq!(region[16..], [3, 4, 5, 6]);
    /// # Ok::<(), wgpu_split::SplitError>(())
    /// ```
    pub fn region_of<P: Plan>(&self, plan: &P, parts: &[HostTensor]) -> Result<Vec<u8>> {
        let geometry = plan.geometry();
        let (part, _) = P::DIRECTION.names();
        let dtype = parts.first().map(|t| t.dtype());
        if let Some(dtype) = dtype {
            self.check(plan, dtype)?;
        }
        if parts.len() != geometry.num_parts() {
            return Err(SplitError::DataMismatch(format!(
                "{} tensors for {} {part}s",
                parts.len(),
                geometry.num_parts()
            )));
        }
        let mut region = vec![0u8; self.total_bytes as usize];
        for (i, (t, r)) in parts.iter().zip(&self.ranges).enumerate() {
            let shape = geometry.part_shape(i);
            if t.shape() != shape || Some(t.dtype()) != dtype {
                return Err(SplitError::DataMismatch(format!(
                    "{part} {i} is {:?} {}, where the plan's is {shape:?} of the first's dtype",
                    t.shape(),
                    t.dtype().name()
                )));
            }
            let at = r.offset as usize;
            region[at..at + t.bytes().len()].copy_from_slice(t.bytes());
        }
        Ok(region)
    }
}
