//! [`RowsCaseBuffers`]: one case of rows placed by indices on the device (its data, indices
//! and destinations, filled from a fixed seed), prepared on them, and the bytes the CPU
//! reference expects there.

use crate::error::Result;
use crate::gpu::device::buffer_with;
use crate::gpu::prepared::PreparedParts;
use crate::rng::XorShift;
use crate::tensor::HostTensor;
use crate::{BufferRegion, DType, GpuSplitter, Outputs, PagedKvBuffers, RowsBuffers};
use wgsl_split::suite::{RowsCase, RowsCaseKind};

/// One case's buffers, each with its name, and what the case writes into them.
pub(crate) struct RowsCaseBuffers {
    /// The buffers, named: `data` (or `updates`), `ids`, `out` (or `data`) for rows; for a
    /// paged write `slots`, its sources (`qkv`, or `keys` and `values`), its caches (both in
    /// `caches`, or `k_cache` and `v_cache`), and `queries` where they go out.
    pub(crate) named: Vec<(&'static str, wgpu::Buffer)>,
    /// A paged write's key and value caches: each buffer's place in `named`, its offset.
    caches: [(usize, u64); 2],
    /// Bytes moved: the rows', or the tokens'.
    pub(crate) moved: u64,
    /// Where the CPU reference's bytes must lie after the case runs: the buffer's place in
    /// `named`, the offset, the bytes.
    pub(crate) want: Vec<(usize, u64, Vec<u8>)>,
}

/// The cases' data and places.
impl XorShift {
    fn tensor(&mut self, dtype: DType, shape: Vec<usize>) -> Result<HostTensor> {
        let n = shape.iter().product::<usize>() * dtype.size();
        HostTensor::new(dtype, shape, (0..n).map(|_| self.next() as u8).collect())
    }

    /// Activations of `shape`: f32 values uniform in [-4, 4) (an f16 holds each as a normal
    /// or as zero: what a cache is written from).
    fn activations(&mut self, dtype: DType, shape: Vec<usize>) -> Result<HostTensor> {
        if dtype != DType::F32 {
            return self.tensor(dtype, shape);
        }
        let n = shape.iter().product::<usize>();
        let values: Vec<f32> = (0..n)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0)
            .collect();
        HostTensor::from_slice(&shape, &values)
    }

    /// `count` distinct places of `len`, as `index_type`.
    fn places(&mut self, count: usize, len: usize, index_type: DType) -> Result<HostTensor> {
        let mut all: Vec<i64> = (0..len as i64).collect();
        for i in 0..count.min(len) {
            let j = i + (self.next() % (len - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        match index_type {
            DType::I64 => HostTensor::from_slice(&[count], &all),
            _ => {
                HostTensor::from_slice(&[count], &all.iter().map(|&v| v as i32).collect::<Vec<_>>())
            }
        }
    }
}

impl RowsCaseBuffers {
    /// Fills the buffers of `case` on `gpu`'s device.
    pub(crate) fn new(gpu: &GpuSplitter, case: &RowsCase) -> Result<Self> {
        let mut rng = XorShift(0x0b5e_55ed);
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let device = gpu.device();
        let upload = |label, bytes: &[u8]| buffer_with(device, label, bytes, storage);
        match &case.kind {
            RowsCaseKind::Rows { plan, index_type } => {
                let len = plan.data_shape()[plan.axis()];
                let data = rng.tensor(case.dtype, plan.data_shape().to_vec())?;
                let ids = rng.places(plan.index_count(), len, *index_type)?;
                // The bytes written: a gather's output (of the plan's rows dtype), a
                // scatter's rows of the data.
                let (_, written) = plan.conversion(case.dtype)?;
                let moved = plan.rows(written)?.output_bytes()?;
                let (named, want) = match plan.kind() {
                    crate::plan::RowsKind::Scatter => {
                        // Rows rounded on the way are activations; rows moved as they are,
                        // any bits.
                        let (rows, shape) = (plan.rows_dtype(case.dtype), plan.updates_shape());
                        let updates = match rows == case.dtype {
                            true => rng.tensor(rows, shape)?,
                            false => rng.activations(rows, shape)?,
                        };
                        let source = ("updates", upload("bench updates", updates.bytes())?);
                        let want = plan.reference(&[data.clone(), ids.clone(), updates])?.0;
                        (
                            vec![source, ("data", upload("bench data", data.bytes())?)],
                            want,
                        )
                    }
                    crate::plan::RowsKind::Gather => {
                        let want = plan.reference(&[data.clone(), ids.clone()])?.0;
                        let zeros = vec![0u8; moved as usize];
                        let source = ("data", upload("bench data", data.bytes())?);
                        (vec![source, ("out", upload("bench out", &zeros)?)], want)
                    }
                };
                let [source, target] = [&named[0], &named[1]];
                let named = vec![
                    source.clone(),
                    ("ids", upload("bench ids", ids.bytes())?),
                    target.clone(),
                ];
                let want = vec![(2, 0, want.bytes().to_vec())];
                Ok(Self {
                    named,
                    caches: [(0, 0); 2],
                    moved,
                    want,
                })
            }
            RowsCaseKind::Paged { plan, padding } => {
                let sources: Vec<HostTensor> = plan
                    .source_shapes()
                    .into_iter()
                    .map(|shape| rng.tensor(case.dtype, shape))
                    .collect::<Result<_>>()?;
                let k = rng.tensor(case.dtype, plan.cache_shape())?;
                let v = rng.tensor(case.dtype, plan.cache_shape())?;
                let slots = rng.places(plan.tokens(), plan.slots(), DType::I32)?;
                let mut values = slots.to_vec::<i32>()?;
                values[..*padding].fill(-1);
                let slots = HostTensor::from_slice(&[plan.tokens()], &values)?;
                let mut tensors = sources.clone();
                tensors.extend([slots.clone(), k.clone(), v.clone()]);
                let want = plan.reference(&tensors)?;
                let q_len = plan.tokens() * plan.q_shape()[1] * case.dtype.size();
                let mut named = vec![("slots", upload("bench slots", slots.bytes())?)];
                let mut moved = 0;
                for (name, s) in ["qkv", "values"].into_iter().zip(&sources) {
                    named.push((name, upload("bench source", s.bytes())?));
                    moved += s.bytes().len() as u64;
                }
                let mut want_at = Vec::new();
                let (k_at, v_at) = match sources.len() {
                    // Both caches in one buffer, the values' after the keys'.
                    1 => {
                        let v_at = (k.bytes().len() as u64).next_multiple_of(gpu.offset_align());
                        let mut both = k.bytes().to_vec();
                        both.resize(v_at as usize, 0);
                        both.extend_from_slice(v.bytes());
                        named.push(("caches", upload("bench caches", &both)?));
                        ((2, 0), (2, v_at))
                    }
                    // Separate K and V, each cache in a buffer of its own.
                    _ => {
                        named[1].0 = "keys";
                        let kv = (plan.tokens()
                            * plan.cache_shape()[2..].iter().product::<usize>()
                            * case.dtype.size()) as u64;
                        moved = 2 * kv;
                        named.push(("k_cache", upload("bench k_cache", k.bytes())?));
                        named.push(("v_cache", upload("bench v_cache", v.bytes())?));
                        ((3, 0), (4, 0))
                    }
                };
                want_at.push((k_at.0, k_at.1, want.k_cache.bytes().to_vec()));
                want_at.push((v_at.0, v_at.1, want.v_cache.bytes().to_vec()));
                if plan.writes_queries() {
                    want_at.push((named.len(), 0, want.queries.bytes().to_vec()));
                    named.push(("queries", upload("bench queries", &vec![0; q_len.max(16)])?));
                }
                Ok(Self {
                    named,
                    caches: [k_at, v_at],
                    moved,
                    want: want_at,
                })
            }
        }
    }

    /// The buffer named at `k`.
    fn at(&self, k: usize) -> BufferRegion<'_> {
        BufferRegion::from(&self.named[k].1)
    }

    /// `case` prepared on these buffers, as an engine prepares its node.
    pub(crate) fn prepare(&self, gpu: &GpuSplitter, case: &RowsCase) -> Result<PreparedParts> {
        Ok(match &case.kind {
            RowsCaseKind::Rows { plan, index_type } => {
                let from = RowsBuffers {
                    source: self.at(0),
                    indices: self.at(1),
                    index_type: *index_type,
                    status: None,
                };
                gpu.prepare(plan, case.dtype, from, self.at(2))?.parts
            }
            RowsCaseKind::Paged { plan, .. } => {
                let n = plan.source_shapes().len();
                let sources: Vec<BufferRegion> = (1..=n).map(|k| self.at(k)).collect();
                let from = PagedKvBuffers {
                    sources: &sources,
                    slots: self.at(0),
                    index_type: DType::I32,
                    status: None,
                };
                let cache = |(k, offset): (usize, u64)| BufferRegion {
                    buffer: &self.named[k].1,
                    offset,
                };
                let mut to: Vec<BufferRegion> = match plan.writes_queries() {
                    true => vec![self.at(self.named.len() - 1)],
                    false => Vec::new(),
                };
                to.extend(self.caches.map(cache));
                gpu.prepare(plan, case.dtype, from, Outputs::Regions(&to))?
                    .parts
            }
        })
    }
}
