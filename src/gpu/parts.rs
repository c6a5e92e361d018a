//! Where a plan's parts are, as the caller describes them: a split's [`Outputs`], a concat's
//! [`Inputs`]; and [`Job`], both directions in one form for the GPU path: the whole tensor's
//! region and the parts'.

use crate::gpu::direction::Direction;
use crate::gpu::placement::{BufferRegion, PartLayout};
use crate::plan::PartView;

/// Where a split's outputs go: the `to` of [`GpuSplitter::encode`](crate::GpuSplitter::encode) and
/// [`GpuSplitter::prepare`](crate::GpuSplitter::prepare) with a [`SplitPlan`](crate::SplitPlan).
///
/// Every region needs usage STORAGE and an offset at the device's storage offset alignment.
/// No byte outside the outputs is written: the bytes between outputs, and after the last one,
/// keep their values (an output whose size is not a multiple of 4 has its last word read and
/// written back with the bytes after it unchanged, so nothing else may write those bytes in
/// the same submission's split).
#[derive(Debug, Clone, Copy)]
pub enum Outputs<'a> {
    /// Every output in one region, each at the device's storage offset alignment
    /// ([`GpuSplitter::layout`](crate::GpuSplitter::layout)), so a following
    /// kernel can bind each on its own. The region holds at least the layout's `total_bytes`:
    /// the last output's end, rounded up to 4.
    Region(BufferRegion<'a>),
    /// Every output in one region, placed by the layout: for example
    /// [`PartLayout::packed`] (16 bytes), where 10,000 outputs of 12 bytes take 160 KB
    /// instead of 2.5 MB at a 256-byte alignment. A layout built by hand is checked first
    /// ([`PartLayout::check`]). Past one storage binding (`max_storage_buffer_binding_size`)
    /// the split runs in pieces that bind the outputs at their offsets, so the layout's
    /// alignment must then be at least the device's storage offset alignment.
    Placed(BufferRegion<'a>, &'a PartLayout),
    /// One region per output, in output order, each in any buffer: the engine allocates every
    /// tensor itself. Output `i` needs `plan.part_bytes(i)` rounded up to 4 bytes: a tensor
    /// of the engine's exact size. Regions in one buffer must not overlap; the regions of
    /// empty outputs are not touched. Outputs that share a buffer move together (copy commands
    /// where the buffers allow them and they are cheaper, else the gather).
    ///
    /// **The device's limits set the number of dispatches.** The gather writes several
    /// buffers in one dispatch, `b` of them, so `n` buffers take `n / b` dispatches, rounded
    /// up (on CPU adapters only buffers of up to 4 KiB of outputs share dispatches). `b` comes
    /// from the `max_storage_buffers_per_shader_stage` the device was **opened with**, less
    /// the three the table and the input take, halved (each output buffer is bound as units
    /// and as words), at most 32 ([`Prepared::recorded`](crate::Prepared::recorded)
    /// says the dispatches a node takes): 32 on a GPU of 524,288, 14 on lavapipe and 6 on llvmpipe GL opened with their
    /// adapters' limits ([`GpuSplitter::open`](crate::GpuSplitter::open) does), but 1 on a
    /// device opened with `wgpu::Limits::downlevel_defaults()` (4 storage buffers) and 2 with
    /// `wgpu::Limits::default()` (8): 64 outputs of 1 KiB in 64 buffers take 5, 11, 64 and
    /// 32 dispatches (`tests/separate_buffers.rs`). An engine
    /// that splits into many buffers requests the adapter's limit when it opens its device:
    ///
    /// ```no_run
    /// # async fn open(adapter: wgpu_split::wgpu::Adapter) -> Result<(), Box<dyn std::error::Error>> {
    /// let (device, queue) = adapter
    ///     .request_device(&wgpu_split::wgpu::DeviceDescriptor {
    ///         required_limits: adapter.limits(), // not wgpu's defaults
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// let gpu = wgpu_split::GpuSplitter::new_async(device, queue).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// [`Encoded::parts`](crate::Encoded) gives each output's offset in its own buffer.
    Regions(&'a [BufferRegion<'a>]),
    /// Output `i` written through `views[i]` ([`PartView`]) into `regions[i]`: transposed
    /// (attention heads), into a bigger tensor (a KV cache at a position), with padded rows.
    /// Only the views' elements are written; every other byte of the regions keeps its value.
    /// Each view is checked against its region first (inside it, its strides nesting, no
    /// two outputs on one byte). One dispatch writes the outputs of as many buffers as
    /// [`Outputs::Regions`] binds at once (two where rows of several outputs share a 16-byte
    /// unit, one after the other); each buffer's outputs and the input must fit one storage
    /// binding (`docs/views.md`).
    Views(&'a [BufferRegion<'a>], &'a [PartView]),
}

/// Where a concat's inputs are: the `from` of
/// [`GpuSplitter::encode`](crate::GpuSplitter::encode) and
/// [`GpuSplitter::prepare`](crate::GpuSplitter::prepare) with a
/// [`ConcatPlan`](crate::ConcatPlan), the mirror of [`Outputs`]. Every region needs usage STORAGE (and COPY_SRC where copy
/// commands may read it) and an offset at the device's storage offset alignment; no input may
/// share a buffer with the output.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// Every input in one region, each at the device's storage offset alignment
    /// ([`GpuSplitter::layout`](crate::GpuSplitter::layout) of the concat's plan), so each
    /// one's producer can bind it on its own.
    Region(BufferRegion<'a>),
    /// Every input in one region, placed by the layout: for example
    /// [`PartLayout::packed`] (16 bytes). A layout built by hand is checked first
    /// ([`PartLayout::check`]); past one storage binding its alignment must be at least the
    /// device's storage offset alignment, as for [`Outputs::Placed`].
    Placed(BufferRegion<'a>, &'a PartLayout),
    /// One region per input, in input order, each in any buffer, holding its input's bytes
    /// rounded up to 4. Inputs are only read, so regions may repeat or overlap: the concat of
    /// `x` with itself passes `x`'s region twice. The regions of empty inputs are not read.
    ///
    /// **The device's limits set the number of dispatches**, as for
    /// [`Outputs::Regions`]: inputs that share a buffer move together
    /// (one dispatch, or copies), and the gather reads `b` buffers per dispatch, `b` the
    /// device's `max_storage_buffers_per_shader_stage` less those the table and the output
    /// take (three, or two on a device of 4), halved, at most 32
    /// ([`Prepared::recorded`](crate::Prepared::recorded) says the dispatches): 14 on lavapipe and 6 on
    /// llvmpipe GL opened with their adapters' limits, 1 with
    /// `wgpu::Limits::downlevel_defaults()` and 2 with `wgpu::Limits::default()` (on CPU
    /// adapters only buffers of up to 4 KiB of inputs share dispatches). 64 inputs of 1 KiB
    /// in 64 buffers take 5, 11, 64 and 32 dispatches (`tests/separate_buffers.rs`): request
    /// the adapter's limits when you open the device.
    Regions(&'a [BufferRegion<'a>]),
    /// Input `k` read through `views[k]` ([`PartView`]) from `regions[k]`: attention heads
    /// `[B, H, S, D]` read as `[B, S, H, D]`, a block of a bigger tensor. Views are only read,
    /// so their elements may repeat. One dispatch per buffer of inputs (more where inputs'
    /// rows share a 16-byte unit of the output); each buffer's inputs and the output must fit
    /// one storage binding (`docs/views.md`).
    Views(&'a [BufferRegion<'a>], &'a [PartView]),
}

/// The parts of a split or a concat, in one region (placed at the device's storage offset
/// alignment, or by a layout) or one region each: [`Outputs`] and [`Inputs`] alike.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Parts<'a> {
    Region(BufferRegion<'a>),
    Placed(BufferRegion<'a>, &'a PartLayout),
    Regions(&'a [BufferRegion<'a>]),
    Views(&'a [BufferRegion<'a>], &'a [PartView]),
}

impl<'a> From<Outputs<'a>> for Parts<'a> {
    fn from(outputs: Outputs<'a>) -> Self {
        match outputs {
            Outputs::Region(r) => Parts::Region(r),
            Outputs::Placed(r, layout) => Parts::Placed(r, layout),
            Outputs::Regions(regions) => Parts::Regions(regions),
            Outputs::Views(regions, views) => Parts::Views(regions, views),
        }
    }
}

impl<'a> From<Inputs<'a>> for Parts<'a> {
    fn from(inputs: Inputs<'a>) -> Self {
        match inputs {
            Inputs::Region(r) => Parts::Region(r),
            Inputs::Placed(r, layout) => Parts::Placed(r, layout),
            Inputs::Regions(regions) => Parts::Regions(regions),
            Inputs::Views(regions, views) => Parts::Views(regions, views),
        }
    }
}

/// What one split or concat reads and writes: the whole tensor's region (the split's input,
/// the concat's output) and its parts', and which way the bytes move.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub(crate) direction: Direction,
    pub(crate) whole: BufferRegion<'a>,
    pub(crate) parts: Parts<'a>,
}
