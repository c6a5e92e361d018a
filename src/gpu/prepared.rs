//! [`PreparedSplit`]: a split's route, tables and bind groups made once, recorded as often as
//! wanted. [`GpuSplitter::encode`] prepares and records in one call.

use crate::error::{Result, SplitError};
use crate::gpu::cpu_texture::{self, TexturePlan};
use crate::gpu::device::{self, scoped_async, LossProbe};
use crate::gpu::gather::{record_bound, BoundDispatch, Windows};
use crate::gpu::placement::{BufferRegion, OutputLayout, Outputs, Placement};
use crate::gpu::planner::{BufferCopy, Direction, Route, RouteKey};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::Arc;

/// What [`GpuSplitter::encode`] recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedSplit {
    /// Where each output lies in the output region (shared with the route kept for the next
    /// split of the same plan).
    pub layout: Arc<OutputLayout>,
    /// Compute dispatches of the gather shader (0 when copies moved the outputs).
    pub dispatches: u32,
    /// `copy_buffer_to_buffer` commands.
    pub buffer_copies: u32,
    /// Buffer-to-texture plus texture-to-buffer copy commands (two per band of rows).
    pub texture_copies: u32,
}

/// A split of one plan between two buffer regions, with everything but the commands made:
/// the route, the gather's tables and bind groups, the scratch texture. A graph runtime that
/// runs the same split node on the same buffers again and again prepares it once
/// ([`GpuSplitter::prepare`]) and records it each time with [`PreparedSplit::encode`], which
/// does no planning and creates nothing (`docs/performance.md` compares the two).
///
/// It holds the buffers it was prepared with (its bind groups and copies name them): they stay
/// allocated while it lives, even if the caller drops its own handles. A buffer destroyed
/// after `prepare` is reported when the caller's encoder is finished or submitted, by wgpu,
/// not by `encode`: prepare again after replacing a buffer. A device lost since `prepare` is
/// [`SplitError::Device`] from `encode`.
#[derive(Debug, Clone)]
pub struct PreparedSplit {
    device: wgpu::Device,
    probe: Arc<LossProbe>,
    /// Recorded in order; none when every output is empty.
    pub(crate) commands: Vec<Commands>,
    pub(crate) encoded: EncodedSplit,
}

/// The commands of one route of a prepared split.
#[derive(Debug, Clone)]
pub(crate) enum Commands {
    /// `copy_buffer_to_buffer` commands between the caller's buffers.
    BufferCopies {
        input: wgpu::Buffer,
        output: wgpu::Buffer,
        copies: Vec<BufferCopy>,
    },
    /// Bands of rows through the scratch texture.
    Texture {
        plan: TexturePlan,
        scratch: wgpu::Texture,
        input: wgpu::Buffer,
        output: wgpu::Buffer,
    },
    /// Gather dispatches, bound.
    Gather(Vec<BoundDispatch>),
}

impl PreparedSplit {
    /// Records the split into `encoder`, as [`GpuSplitter::encode`] would have: the same
    /// commands, the same layout. A device error becomes [`SplitError::Device`].
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) -> Result<EncodedSplit> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on("PreparedSplit::encode", self.encode_async(encoder))
    }

    /// [`PreparedSplit::encode`] for async callers, as [`GpuSplitter::encode_async`].
    pub async fn encode_async(&self, encoder: &mut wgpu::CommandEncoder) -> Result<EncodedSplit> {
        self.probe.check("encoding the prepared split")?;
        self.record(encoder).await?;
        Ok(self.encoded.clone())
    }

    /// Records once and hands back what was recorded without copying it: `encode`, which has
    /// just checked the device in `prepare`.
    pub(crate) async fn encode_once(
        self,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<EncodedSplit> {
        self.record(encoder).await?;
        Ok(self.encoded)
    }

    /// Adds `part`'s commands after these, and its counts to these; the layout stays.
    pub(crate) fn append(&mut self, part: PreparedSplit) {
        self.commands.extend(part.commands);
        self.encoded.dispatches += part.encoded.dispatches;
        self.encoded.buffer_copies += part.encoded.buffer_copies;
        self.encoded.texture_copies += part.encoded.texture_copies;
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
                scoped_async(&self.device, "encoding the split copies", || {
                    for c in copies {
                        encoder.copy_buffer_to_buffer(input, c.src, output, c.dst, c.size);
                    }
                })
                .await?
            }
            Commands::Texture {
                plan,
                scratch,
                input,
                output,
            } => {
                scoped_async(&self.device, "encoding the split copies", || {
                    cpu_texture::record(encoder, plan, scratch, input, output)
                })
                .await?
            }
            Commands::Gather(bound) => record_bound(&self.device, encoder, bound).await?,
        }
        Ok(())
    }

    /// What each [`PreparedSplit::encode`] records: the layout of the outputs and the counts
    /// of commands.
    pub fn encoded(&self) -> &EncodedSplit {
        &self.encoded
    }
}

impl GpuSplitter {
    /// Prepares the split of `plan` from `input` into `outputs`: the checks, the route and the
    /// bind groups of [`GpuSplitter::encode`], once. Misuse comes back as a [`SplitError`]
    /// here, as it would from `encode`.
    pub fn prepare(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        outputs: Outputs<'_>,
    ) -> Result<PreparedSplit> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on(
            "GpuSplitter::prepare",
            self.prepare_async(plan, dtype, input, outputs),
        )
    }

    /// [`GpuSplitter::prepare`] for async callers, as [`GpuSplitter::encode_async`].
    pub async fn prepare_async(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        outputs: Outputs<'_>,
    ) -> Result<PreparedSplit> {
        match outputs {
            Outputs::Region(output) => {
                let placement = Placement::Bindable;
                self.prepare_placed(Direction::Split, plan, dtype, input, output, placement)
                    .await
            }
            Outputs::Placed(output, layout) => {
                layout.check(plan, dtype)?;
                let placement = Placement::Given(layout);
                self.prepare_placed(Direction::Split, plan, dtype, input, output, placement)
                    .await
            }
            Outputs::Regions(regions) => {
                self.prepare_regions(Direction::Split, plan, dtype, input, regions)
                    .await
            }
        }
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
    ) -> Result<PreparedSplit> {
        self.probe
            .check(format_args!("preparing the {}", direction.op()))?;
        let regions = self.regions(&input, &output);
        let (kept, scratch) = self
            .with_scratch(|caps| {
                let key = RouteKey {
                    direction,
                    plan,
                    dtype,
                    layout: placement,
                    regions,
                    caps,
                };
                let (input, output) = (&input, &output);
                async move { self.kept_route(&key, input, output).await }
            })
            .await?;
        let layout = kept.layout.clone();
        self.prepare_chosen(&kept.route, &kept.tables, scratch, layout, input, output)
            .await
    }

    /// A split of outputs placed by `layout` that records nothing yet.
    pub(crate) fn prepare_nothing(&self, layout: Arc<OutputLayout>) -> PreparedSplit {
        PreparedSplit {
            device: self.device.clone(),
            probe: self.probe.clone(),
            commands: Vec::new(),
            encoded: EncodedSplit {
                layout,
                dispatches: 0,
                buffer_copies: 0,
                texture_copies: 0,
            },
        }
    }

    /// Prepares `route`, with `tables` for the gather's dispatches
    /// ([`GpuSplitter::upload_tables`]) and `scratch` for the texture route: the gather's bind
    /// groups are made here.
    pub(crate) async fn prepare_chosen(
        &self,
        route: &Route,
        tables: &[wgpu::Buffer],
        scratch: Option<wgpu::Texture>,
        layout: Arc<OutputLayout>,
        input: BufferRegion<'_>,
        output: BufferRegion<'_>,
    ) -> Result<PreparedSplit> {
        let mut prepared = self.prepare_nothing(layout);
        let encoded = &mut prepared.encoded;
        let commands = match (route, scratch) {
            (Route::BufferCopies(copies), _) => {
                encoded.buffer_copies = copies.len() as u32;
                Some(Commands::BufferCopies {
                    input: input.buffer.clone(),
                    output: output.buffer.clone(),
                    copies: copies.clone(),
                })
            }
            (Route::Texture(plan), Some(scratch)) => {
                encoded.texture_copies = plan.commands() as u32;
                Some(Commands::Texture {
                    plan: plan.clone(),
                    scratch,
                    input: input.buffer.clone(),
                    output: output.buffer.clone(),
                })
            }
            (Route::Texture(_), None) => {
                return Err(SplitError::Device(
                    "the texture route was chosen without a scratch texture".into(),
                ))
            }
            (Route::Gather(dispatches), _) if dispatches.is_empty() => None,
            (Route::Gather(dispatches), _) => {
                let bound = self
                    .gather
                    .bind(
                        &self.device,
                        dispatches,
                        tables,
                        Windows::Region(&input),
                        Windows::Region(&output),
                        None,
                    )
                    .await?;
                encoded.dispatches = dispatches.len() as u32;
                Some(Commands::Gather(bound))
            }
        };
        prepared.commands.extend(commands);
        Ok(prepared)
    }
}
