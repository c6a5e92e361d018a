//! [`Prepared`]: a split's or a concat's route, tables and bind groups made once, recorded as
//! often as wanted; [`GpuSplitter::prepare`] makes it and [`GpuSplitter::encode`] prepares and
//! records in one call.

use crate::error::Result;
use crate::gpu::device::{self, scoped_async, LossProbe};
use crate::gpu::gather::{record_bound, BoundDispatch};
use crate::gpu::kept::RouteKey;
use crate::gpu::moving::Movable;
use crate::gpu::parts::{Job, Parts};
use crate::gpu::placement::{BufferRegion, PartLayout, Placement};
use crate::gpu::planner::{BufferCopy, Direction};
use crate::gpu::plans::{Encoded, Node, Plan, Recorded};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::DType;
use std::marker::PhantomData;
use std::sync::Arc;
use wgsl_split::recording::{Command, Recording, Role};

/// A split or a concat of one plan between the caller's buffer regions, with everything but
/// the commands made: the route, the gather's tables and bind groups. A
/// graph runtime that runs the same node on the same buffers again and again prepares it once
/// ([`GpuSplitter::prepare`]) and records it each time with [`Prepared::encode`], which does
/// no planning and creates nothing (`docs/performance.md` compares the two).
///
/// It holds the buffers it was prepared with (its bind groups and copies name them): they stay
/// allocated while it lives, even if the caller drops its own handles. A buffer destroyed
/// after `prepare` is reported when the caller's encoder is finished or submitted, by wgpu,
/// not by `encode`: prepare again after replacing a buffer. A device lost since `prepare` is
/// [`SplitError::Device`](crate::SplitError::Device) from `encode`.
///
/// ```no_run
/// # use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, IntTensor, Outputs};
/// # fn node(gpu: &GpuSplitter, input: &wgpu::Buffer, outputs: &wgpu::Buffer)
/// #     -> wgpu_split::Result<()> {
/// let plan = ops::split(&[8, 3072], &IntTensor::scalar(1), 3)?;
/// let node = gpu.prepare(&plan, DType::F16, input.into(), Outputs::Region(outputs.into()))?;
/// for _step in 0..100 {
///     let mut encoder = gpu.device().create_command_encoder(&Default::default());
///     node.encode(&mut encoder)?; // no planning, no allocation
///     gpu.queue().submit([encoder.finish()]);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Prepared<P: Plan> {
    pub(crate) parts: PreparedParts,
    plan: PhantomData<fn() -> P>,
}

impl<P: Plan> Prepared<P> {
    /// What each [`Prepared::encode`] of this node records, known since `prepare`, before
    /// any `encode`: where each part lies in its region's buffer (its offset and size; with
    /// parts in regions of their own, in each one's), the gather dispatches and the buffer
    /// copies. `encode` returns the same; a node moved by [`Prepared::set_views`] the same
    /// counts, with the parts' offsets of its views.
    pub fn recorded(&self) -> Encoded {
        self.parts.recorded.clone()
    }

    /// Records the split or concat into `encoder`, as [`GpuSplitter::encode`] would have: the
    /// same commands, the same layout. A device error becomes [`SplitError::Device`](crate::SplitError::Device).
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) -> Result<Encoded> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on("Prepared::encode", self.encode_async(encoder))
    }

    /// [`Prepared::encode`] for async callers, as [`GpuSplitter::encode_async`].
    pub async fn encode_async(&self, encoder: &mut wgpu::CommandEncoder) -> Result<Encoded> {
        self.parts.encode(encoder).await
    }
}

/// The commands of a split or concat, prepared: what [`Prepared`] holds, in either direction.
#[derive(Debug, Clone)]
pub struct PreparedParts {
    pub(crate) device: wgpu::Device,
    pub(crate) probe: Arc<LossProbe>,
    /// What it is, for errors: "split", "concat", "rows placed by indices", ...
    pub(crate) op: &'static str,
    /// Recorded in order; none when every part is empty.
    pub(crate) commands: Vec<Commands>,
    pub(crate) recorded: Recorded,
    /// Parts through views: what binds them again at new offsets
    /// ([`Prepared::set_views`]).
    pub(crate) movable: Option<Arc<Movable>>,
}

/// The commands of one route of a prepared split or concat.
#[derive(Debug, Clone)]
pub(crate) enum Commands {
    /// `copy_buffer_to_buffer` commands between the caller's buffers.
    BufferCopies {
        input: wgpu::Buffer,
        output: wgpu::Buffer,
        copies: Vec<BufferCopy>,
    },
    /// Gather dispatches, bound.
    Gather(Vec<BoundDispatch>),
}

impl PreparedParts {
    /// Records the commands into `encoder` after checking the device: [`Prepared::encode`].
    pub(crate) async fn encode(&self, encoder: &mut wgpu::CommandEncoder) -> Result<Recorded> {
        self.probe
            .check(format_args!("encoding the prepared {}", self.op))?;
        self.record(encoder).await?;
        Ok(self.recorded.clone())
    }

    /// Records once and hands back what was recorded without copying it: `encode`, which has
    /// just checked the device in `prepare`.
    pub(crate) async fn encode_once(self, encoder: &mut wgpu::CommandEncoder) -> Result<Recorded> {
        self.record(encoder).await?;
        Ok(self.recorded)
    }

    #[cfg(feature = "bench")]
    /// The programs of its gather dispatches, in order, as [`ProgramKey`](crate::gpu::gather::abi::ProgramKey) names them
    /// (`main_rows vec4 lanes`): what the bench reports each case runs.
    pub(crate) fn programs(&self) -> Vec<String> {
        self.commands
            .iter()
            .flat_map(|c| match c {
                Commands::Gather(bound) => bound.iter().map(|b| b.program.to_string()).collect(),
                Commands::BufferCopies { .. } => Vec::new(),
            })
            .collect()
    }

    /// Adds `part`'s commands after these, and its counts to these; the layout stays.
    pub(crate) fn append(&mut self, part: PreparedParts) {
        self.commands.extend(part.commands);
        self.recorded.dispatches += part.recorded.dispatches;
        self.recorded.buffer_copies += part.recorded.buffer_copies;
    }

    /// Records the commands into `encoder`.
    async fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        for commands in &self.commands {
            self.record_one(encoder, commands).await?;
        }
        Ok(())
    }

    /// Records one route's commands into `encoder`.
    async fn record_one(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        commands: &Commands,
    ) -> Result<()> {
        match commands {
            Commands::BufferCopies {
                input,
                output,
                copies,
            } => {
                scoped_async(&self.device, &self.copies_what(), || {
                    for c in copies {
                        encoder.copy_buffer_to_buffer(input, c.src, output, c.dst, c.size);
                    }
                })
                .await?
            }
            Commands::Gather(bound) => record_bound(&self.device, encoder, self.op, bound).await?,
        }
        Ok(())
    }

    /// What a failed copy command's error names.
    fn copies_what(&self) -> String {
        format!("encoding the {} copies", self.op)
    }
}

impl GpuSplitter {
    /// Records what `plan` does into `encoder` without submitting it, reading `from` and
    /// writing `to` ([`Plan`] says what they are for each kind of plan), and returns where
    /// each part lies:
    ///
    /// - a split ([`SplitPlan`]): `from` is the input's [`BufferRegion`], `to` the
    ///   [`Outputs`](crate::Outputs);
    /// - a concat ([`ConcatPlan`](crate::ConcatPlan)): `from` is the
    ///   [`Inputs`](crate::Inputs), `to` the output's [`BufferRegion`];
    /// - rows placed by indices and a paged KV write: see [`RowsBuffers`](crate::RowsBuffers)
    ///   and [`PagedKvBuffers`](crate::PagedKvBuffers).
    ///
    /// The whole tensor's region (the split's input, the concat's output) holds its C-order
    /// bytes: at least [`SplitPlan::whole_binding_size`] (or
    /// [`ConcatPlan::whole_binding_size`](crate::ConcatPlan::whole_binding_size)) bytes from
    /// its offset, usage STORAGE. Parts in one buffer take one dispatch, however many they
    /// are; where the buffers allow copies (COPY_SRC on what is read, COPY_DST on what is
    /// written), copy commands replace it where they are cheaper: `copy_buffer_to_buffer`
    /// where the parts are a few long, word-aligned runs. Tensors larger than one storage binding are dispatched in
    /// pieces. Nothing is recorded when every part is empty.
    ///
    /// Misuse comes back as a [`SplitError`](crate::SplitError) before anything is recorded: a region with the
    /// wrong usage, size or offset alignment, the whole tensor and a part in one buffer (wgpu
    /// binds a buffer read-only or writable within one dispatch: an engine whose arena keeps
    /// every tensor in one buffer gives the split's input, or the concat's output, a buffer
    /// of its own), a destroyed buffer or a buffer of another device of the same instance
    /// (wgpu validation errors, captured), a lost device ([`SplitError::Device`](crate::SplitError::Device)). wgpu gives
    /// `encode` no way to see which device or instance an encoder belongs to, nor which
    /// instance a buffer does, so these misuses are the caller's to avoid: an `encoder` of
    /// another device of the same instance (wgpu reports it at `finish` or `submit`, through
    /// that device's error handler, which panics by default); an `encoder` of another
    /// `wgpu::Instance` (wgpu-core panics inside `encode`); and a buffer of another instance,
    /// which wgpu looks up by its id (an index and an epoch) in this instance's registry:
    /// wgpu-core panics inside `encode` ("Cannot get non-existent resource" where no buffer
    /// of this instance has the index, "found other resource" where one has it at another
    /// epoch, the usual case), and where one has both, that buffer is used, silently.
    /// `tests/errors.rs` checks that none of these comes back as an error.
    ///
    /// This is [`GpuSplitter::prepare`] and [`Prepared::encode`] in one call: a caller that
    /// records the same node on the same buffers again and again prepares it once.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, wgpu, DType, GpuSplitter, Inputs};
    /// # fn node(gpu: &GpuSplitter, k_cache: &wgpu::Buffer, k_new: &wgpu::Buffer,
    /// #         out: &wgpu::Buffer) -> wgpu_split::Result<()> {
    /// // torch.cat([k_cache, k_new], dim=2): two inputs in buffers of their own.
    /// let plan = ops::concat(&[[1, 8, 1023, 128], [1, 8, 1, 128]], 2)?;
    /// let inputs = [k_cache.into(), k_new.into()];
    /// let mut encoder = gpu.device().create_command_encoder(&Default::default());
    /// let from = Inputs::Regions(&inputs);
    /// let encoded = gpu.encode(&mut encoder, &plan, DType::F16, from, out.into())?;
    /// assert_eq!(encoded.parts.ranges.len(), 2);
    /// gpu.queue().submit([encoder.finish()]);
    /// # Ok(()) }
    /// ```
    pub fn encode<'a, P: Plan>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &P,
        dtype: DType,
        from: P::From<'a>,
        to: P::To<'a>,
    ) -> Result<Encoded> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on(
            "GpuSplitter::encode",
            self.encode_async(encoder, plan, dtype, from, to),
        )
    }

    /// [`GpuSplitter::encode`] for async callers: wgpu's error scopes are awaited, never
    /// blocked on, so it runs under any executor and on WebGPU.
    pub async fn encode_async<'a, P: Plan>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &P,
        dtype: DType,
        from: P::From<'a>,
        to: P::To<'a>,
    ) -> Result<Encoded> {
        let prepared = self.prepare_node(dtype, plan.node(from, to)).await?;
        prepared.encode_once(encoder).await
    }

    /// Prepares what [`GpuSplitter::encode`] records once: the checks, the route, the tables
    /// and the bind groups, to record as often as wanted with [`Prepared::encode`]. Misuse
    /// comes back as a [`SplitError`](crate::SplitError) here, as it would from `encode`.
    pub fn prepare<'a, P: Plan>(
        &self,
        plan: &P,
        dtype: DType,
        from: P::From<'a>,
        to: P::To<'a>,
    ) -> Result<Prepared<P>> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on(
            "GpuSplitter::prepare",
            self.prepare_async(plan, dtype, from, to),
        )
    }

    /// [`GpuSplitter::prepare`] for async callers, as [`GpuSplitter::encode_async`].
    pub async fn prepare_async<'a, P: Plan>(
        &self,
        plan: &P,
        dtype: DType,
        from: P::From<'a>,
        to: P::To<'a>,
    ) -> Result<Prepared<P>> {
        let parts = self.prepare_node(dtype, plan.node(from, to)).await?;
        Ok(Prepared {
            parts,
            plan: PhantomData,
        })
    }

    /// Prepares `node`, elements of `dtype`, as its kind of plan prepares.
    async fn prepare_node(&self, dtype: DType, node: Node<'_, '_>) -> Result<PreparedParts> {
        match node {
            Node::Parts(plan, job) => self.prepare_job(plan, dtype, job).await,
            Node::Rows(plan, from, to) => self.prepare_rows(plan, dtype, &from, to).await,
            Node::Paged(plan, from, to) => self.prepare_paged(plan, dtype, &from, to).await,
        }
    }

    /// Prepares `job` over the split geometry `plan`: parts in one region take the route kept
    /// between calls; parts in regions of their own are planned each time.
    pub(crate) async fn prepare_job(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        job: Job<'_>,
    ) -> Result<PreparedParts> {
        let direction = job.direction;
        let (region, placement) = match job.parts {
            Parts::Region(region) => (region, Placement::Bindable),
            Parts::Placed(region, layout) => {
                layout.check_as(direction, plan, dtype)?;
                self.check_pieces_bind(direction, plan, dtype, layout)?;
                (region, Placement::Given(layout))
            }
            Parts::Regions(regions) => {
                return self
                    .prepare_regions(direction, plan, dtype, job.whole, regions)
                    .await
            }
            Parts::Views(regions, views) => {
                return self
                    .prepare_views(direction, plan, dtype, job.whole, regions, views)
                    .await
            }
        };
        let (from, to) = direction.in_order(job.whole, region);
        self.prepare_placed(direction, plan, dtype, from, to, placement)
            .await
    }

    /// [`GpuSplitter::prepare`] with the split's outputs in one region, placed as `placement`
    /// says (at the storage offset alignment, or by a layout that was checked or placed by
    /// this crate), or the concat of inputs placed so: the route kept or chosen, then
    /// prepared. `input` is where the bytes are read.
    pub(crate) async fn prepare_placed(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        output: BufferRegion<'_>,
        placement: Placement<'_>,
    ) -> Result<PreparedParts> {
        self.probe
            .check(format_args!("preparing the {}", direction.op()))?;
        let regions = self.regions(&input, &output);
        let key = RouteKey {
            direction,
            plan,
            dtype,
            layout: placement,
            regions,
            caps: self.caps(),
        };
        let kept = self.kept_route(&key, &input, &output).await?;
        let layout = kept.layout.clone();
        let (tables, recording) = (&kept.tables, &kept.recording);
        self.prepare_chosen(direction, recording, tables, layout, input, output)
            .await
    }

    /// A node of `op` (a split, a concat, rows placed by indices, ...) whose parts `layout`
    /// places, that records nothing yet.
    pub(crate) fn prepare_nothing(
        &self,
        op: &'static str,
        layout: Arc<PartLayout>,
    ) -> PreparedParts {
        PreparedParts {
            device: self.device.clone(),
            probe: self.probe.clone(),
            op,
            commands: Vec::new(),
            recorded: Recorded {
                parts: layout,
                dispatches: 0,
                buffer_copies: 0,
            },
            movable: None,
        }
    }

    /// Prepares `recording`, a route between `input` and `output`, with `tables` for its
    /// dispatches ([`GpuSplitter::upload_tables`]): the gather's bind groups are made here.
    pub(crate) async fn prepare_chosen(
        &self,
        direction: Direction,
        recording: &Recording,
        tables: &[wgpu::Buffer],
        layout: Arc<PartLayout>,
        input: BufferRegion<'_>,
        output: BufferRegion<'_>,
    ) -> Result<PreparedParts> {
        let mut prepared = self.prepare_nothing(direction.op(), layout);
        let buffer = |role| match role {
            Role::Input(0) => Some(input.buffer),
            Role::Output(0) => Some(output.buffer),
            _ => None,
        };
        let (mut copies, mut bound) = (Vec::new(), Vec::new());
        let mut tables = tables.iter();
        for command in &recording.commands {
            match command {
                Command::Copy { from, to, size } => copies.push(BufferCopy {
                    src: from.1,
                    dst: to.1,
                    size: *size,
                }),
                Command::Dispatch(d) => {
                    let table = tables.next().ok_or_else(|| {
                        crate::SplitError::Device(
                            "a dispatch of the route without its table".into(),
                        )
                    })?;
                    let gather = &self.gather;
                    bound.push(
                        gather
                            .bind_recorded(&self.device, direction.op(), d, table, &buffer)
                            .await?,
                    );
                }
            }
        }
        let encoded = &mut prepared.recorded;
        if !copies.is_empty() {
            encoded.buffer_copies = copies.len() as u32;
            prepared.commands.push(Commands::BufferCopies {
                input: input.buffer.clone(),
                output: output.buffer.clone(),
                copies,
            });
        }
        if !bound.is_empty() {
            encoded.dispatches = bound.len() as u32;
            prepared.commands.push(Commands::Gather(bound));
        }
        Ok(prepared)
    }
}
