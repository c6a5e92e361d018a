//! Outputs where the engine's allocator put them: one region per output, in any buffers.

use crate::error::{Result, SplitError};
use crate::gpu::gather::abi::{binding_bytes, window_limit, UNIT_BYTES};
use crate::gpu::gather::plan::multi_output_dispatch;
use crate::gpu::gather::record::{BoundDispatch, Targets};
use crate::gpu::output_layout::{OutputLayout, OutputRange};
use crate::gpu::prepared::{Commands, PreparedSplit};
use crate::gpu::region::BufferRegion;
use crate::gpu::route::Route;
use crate::gpu::splitter::{multi_output_group_limit, GpuSplitter};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::DType;
use std::collections::BTreeMap;

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] with one region per output ([`Outputs::Regions`]).
    pub(crate) async fn prepare_regions(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        outputs: &[BufferRegion<'_>],
    ) -> Result<PreparedSplit> {
        if outputs.len() != plan.num_outputs() {
            return Err(SplitError::BadBuffer(format!(
                "{} output regions for {} outputs",
                outputs.len(),
                plan.num_outputs()
            )));
        }
        self.probe.check("preparing the split")?;
        self.check_input(&input, plan, dtype)?;
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        let storage = wgpu::BufferUsages::STORAGE;
        let bytes = ByteRows::new(plan, dtype.size())?;
        let mut ranges = vec![OutputRange { offset: 0, size: 0 }; plan.num_outputs()];
        // The non-empty outputs of each buffer. A buffer compares by wgpu's resource id, which
        // never changes, so its interior mutability cannot move it within the map.
        #[allow(clippy::mutable_key_type)]
        let mut groups: BTreeMap<&wgpu::Buffer, Vec<usize>> = BTreeMap::new();
        for (k, o) in bytes.outputs.iter().enumerate() {
            let region = &outputs[o.output];
            let size = bytes.size(o);
            region.check(
                &format!("output {}", o.output),
                binding_bytes(size),
                &format!("its {size} bytes rounded up to 4"),
                storage,
                align,
            )?;
            if region.buffer == input.buffer {
                return Err(SplitError::BadBuffer(format!(
                    "output {} is in the input's buffer; a split reads one buffer and writes others",
                    o.output
                )));
            }
            ranges[o.output] = OutputRange {
                offset: region.offset,
                size,
            };
            groups.entry(region.buffer).or_default().push(k);
        }
        let mut prepared = self.prepare_nothing(OutputLayout {
            total_bytes: ranges.iter().map(|r| r.offset + r.size).max().unwrap_or(0),
            ranges: ranges.clone(),
            alignment: align.max(UNIT_BYTES),
        });
        // Buffers whose outputs take one gather dispatch each are gathered up, up to
        // `bindings` of them per dispatch of the multi-output build.
        let bindings = self.output_bindings;
        let mut gathered: Vec<Group<'_>> = Vec::new();
        // One window over a buffer's outputs, from the first offset, while their offsets stay
        // whole units apart (the gather addresses outputs by unit); a new window where not.
        let mut windows: Vec<(&wgpu::Buffer, Vec<usize>)> = Vec::new();
        for (buffer, mut members) in groups {
            members.sort_by_key(|&k| ranges[bytes.outputs[k].output].offset);
            let (mut base, mut end): (Option<u64>, u64) = (None, 0);
            for k in members {
                let i = bytes.outputs[k].output;
                let offset = ranges[i].offset;
                if offset < end {
                    return Err(SplitError::BadBuffer(format!(
                        "output {i} at offset {offset} overlaps the output before it in its \
                         buffer, which ends at byte {end} (its size rounded up to 4)"
                    )));
                }
                end = offset + binding_bytes(ranges[i].size);
                match (base, windows.last_mut()) {
                    (Some(b), Some(w)) if (offset - b).is_multiple_of(UNIT_BYTES) => w.1.push(k),
                    _ => {
                        base = Some(offset);
                        windows.push((buffer, vec![k]));
                    }
                }
            }
        }
        for (buffer, members) in windows {
            let base = ranges[bytes.outputs[members[0]].output].offset;
            let mut end = base;
            // The buffer's outputs on their own, numbered in offset order, and their places.
            let mut window = Vec::with_capacity(members.len());
            for &k in &members {
                let r = ranges[bytes.outputs[k].output];
                window.push(OutputRange {
                    offset: r.offset - base,
                    size: r.size,
                });
                end = r.offset + binding_bytes(r.size);
            }
            let group = bytes.subset(members.iter().copied());
            let layout = OutputLayout {
                ranges: window,
                total_bytes: end - base,
                alignment: align.max(UNIT_BYTES),
            };
            let region = BufferRegion {
                buffer,
                offset: base,
            };
            let (route, scratch) = self.choose_route(&group, &layout, &input, &region).await?;
            let small = layout.total_bytes <= multi_output_group_limit(self.info.device_type);
            if bindings > 1 && small && matches!(&route, Route::Gather(d) if d.len() == 1) {
                gathered.push(Group {
                    members,
                    layout,
                    region,
                });
                continue;
            }
            let tables = self.upload_tables(&route).await?;
            let part = self
                .prepare_chosen(&route, &tables, scratch, layout, input, region)
                .await?;
            prepared.append(part);
        }
        for batch in gathered.chunks(bindings as usize) {
            let bound = self.bind_multi_output(&bytes, batch, input).await?;
            prepared.encoded.dispatches += 1;
            prepared.commands.push(Commands::Gather(bound));
        }
        Ok(prepared)
    }
}

/// The outputs of one buffer: their positions in the split's [`ByteRows`], in offset order,
/// their places in the buffer's window (`layout.ranges`, in the same order), and the window.
struct Group<'a> {
    members: Vec<usize>,
    layout: OutputLayout,
    region: BufferRegion<'a>,
}

impl GpuSplitter {
    /// Binds one dispatch of the multi-output build writing the outputs of every group in
    /// `batch`, group `j` through output binding `j`.
    async fn bind_multi_output(
        &self,
        bytes: &ByteRows,
        batch: &[Group<'_>],
        input: BufferRegion<'_>,
    ) -> Result<Vec<BoundDispatch>> {
        // The batch's outputs on their own, group after group, as `subset` numbers them.
        let keep = batch.iter().flat_map(|g| g.members.iter().copied());
        let layout = OutputLayout {
            ranges: batch
                .iter()
                .flat_map(|g| g.layout.ranges.iter().copied())
                .collect(),
            total_bytes: 0,
            alignment: UNIT_BYTES,
        };
        let bindings: Vec<u32> = (0..batch.len() as u32)
            .flat_map(|j| std::iter::repeat_n(j, batch[j as usize].members.len()))
            .collect();
        let windows: Vec<(BufferRegion<'_>, u64)> = batch
            .iter()
            .map(|g| (g.region, g.layout.total_bytes))
            .collect();
        let dispatch = multi_output_dispatch(
            &bytes.subset(keep),
            &layout,
            &bindings,
            self.gather_tuning,
            window_limit(&self.limits),
        )?;
        let tables = self
            .tables
            .buffers(&self.device, &[dispatch.table_bytes()])
            .await?;
        let pipeline = self.multi_output_pipeline(batch.len() as u32).await?;
        pipeline
            .bind(
                &self.device,
                std::slice::from_ref(&dispatch),
                &tables,
                &input,
                Targets::Windows(&windows),
                None,
            )
            .await
    }
}
