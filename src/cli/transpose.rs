//! `wgpu-split run --transpose=P`: each output written with its axes permuted, through a view
//! ([`PartView`]) in the split's one pass, and checked against the CPU reference's views.

use super::exit::{CliError, CliResult};
use std::io::Read;
use std::time::Instant;
use wgpu_split::{
    reference, DType, GpuSplitter, HostTensor, OutputSink, PartView, SplitError, SplitPlan,
    StreamReport,
};

/// The outputs' permutation: each output's view and the shape it is written in.
pub struct Transposed {
    views: Vec<PartView>,
    /// Output `i` as written: `shape[perm[j]]` on axis `j`.
    pub shapes: Vec<Vec<usize>>,
}

impl Transposed {
    /// The permutation `text` (`P0,P1,...`, of the outputs' axes) of `plan`'s outputs.
    pub fn new(plan: &SplitPlan, text: &str) -> CliResult<Self> {
        let perm: Vec<usize> = text
            .split(',')
            .map(|p| p.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|e| CliError::usage(format!("--transpose {text:?}: {e}")))?;
        let mut views = Vec::with_capacity(plan.num_parts());
        let mut shapes = Vec::with_capacity(plan.num_parts());
        for shape in plan.part_shapes() {
            let rank = shape.len();
            let mut seen = vec![false; rank];
            if perm.len() != rank
                || perm
                    .iter()
                    .any(|&p| p >= rank || std::mem::replace(&mut seen[p], true))
            {
                return Err(CliError::usage(format!(
                    "--transpose {text:?} is not a permutation of the outputs' {rank} axes"
                )));
            }
            let stored: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            views.push(PartView::within(&shape, &stored, &perm, &vec![0; rank])?);
            shapes.push(stored);
        }
        Ok(Self { views, shapes })
    }

    /// Reads the whole input from `data` (`plan`'s input of `dtype`), splits it through the
    /// views on `gpu` (checked against the CPU reference when `verify`), or on the CPU
    /// reference without one, and hands each output to `sink`.
    pub fn split(
        &self,
        gpu: Option<&GpuSplitter>,
        plan: &SplitPlan,
        dtype: DType,
        mut data: impl Read,
        sink: &mut impl OutputSink,
        verify: bool,
    ) -> CliResult<StreamReport> {
        let t = Instant::now();
        let mut bytes = Vec::new();
        data.read_to_end(&mut bytes)
            .map_err(|e| CliError::usage(format!("reading the input: {e}")))?;
        let input = HostTensor::new(dtype, plan.whole_shape().to_vec(), bytes)?;
        let read = t.elapsed();
        let fresh = || -> Vec<Vec<u8>> {
            self.shapes
                .iter()
                .map(|s| vec![0; s.iter().product::<usize>() * dtype.size()])
                .collect()
        };
        let t = Instant::now();
        let mut outputs = fresh();
        match gpu {
            None => reference::split_into_views(&input, plan, &self.views, &mut outputs)?,
            Some(g) => {
                g.run_into_views(plan, &input, &self.views, &mut outputs)?;
            }
        }
        let split = t.elapsed();
        let t = Instant::now();
        let verified = verify && gpu.is_some();
        if verified {
            let mut want = fresh();
            reference::split_into_views(&input, plan, &self.views, &mut want)?;
            if let Some(i) = (0..want.len()).find(|&i| outputs[i] != want[i]) {
                return Err(
                    SplitError::Mismatch(format!("output {i} (transposed) differs")).into(),
                );
            }
        }
        let checked = t.elapsed();
        let t = Instant::now();
        for (i, bytes) in outputs.iter().enumerate() {
            sink.write(i, bytes)
                .map_err(|e| CliError::usage(format!("writing output {i}: {e}")))?;
        }
        Ok(StreamReport {
            windows: 1,
            input_bytes: input.bytes().len() as u64,
            verified,
            read_time: read,
            split_time: split,
            verify_time: checked,
            write_time: t.elapsed(),
        })
    }
}
