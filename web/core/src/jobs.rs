//! The page's checks of the JavaScript driver ([`Jobs`]): each job is a recording with the
//! buffers it runs on, the bytes each starts with and the bytes each must hold after it,
//! byte for byte, the guard bytes after every region included.

use crate::cases::{random_case, Rng, OPERATORS};
use crate::{parts_recording, recording_json, role_name, Device};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wgsl_split::paged::{paged_sizes, record_paged, PagedRegions};
use wgsl_split::plan::NegativeIndex;
use wgsl_split::planner::Direction;
use wgsl_split::recording::Role;
use wgsl_split::rows::{index_rule, record_rows, RowsRegions};
use wgsl_split::{
    ops, reference, CacheLayout, DType, HostTensor, IntTensor, RowsPlan, RowsStatus, SplitPlan,
};

/// Bytes of guard after each region, and their value.
const GUARD: usize = 256;
const GUARD_BYTE: u8 = 0xA5;

/// One buffer of a job: the bytes it starts with and those it must hold after the job.
struct Buffer {
    name: &'static str,
    start: Vec<u8>,
    end: Vec<u8>,
}

struct Job {
    title: String,
    kind: &'static str,
    recording: Value,
    buffers: Vec<Buffer>,
    /// The buffer each role of the recording binds.
    roles: Vec<(Role, &'static str)>,
}

/// The page's checks of the JavaScript driver on a device of the limits given: the
/// specifications' examples, `sweep` random splits from `seed` (every third allowed buffer
/// copies), each with the concat of its parts back, and rows placed by indices.
#[wasm_bindgen]
pub struct Jobs {
    jobs: Vec<Job>,
    refused: Vec<String>,
}

#[wasm_bindgen]
impl Jobs {
    /// The jobs for `device` (JSON: its limits, named as `GPUSupportedLimits` names them, and
    /// `isFallbackAdapter`).
    #[wasm_bindgen(constructor)]
    pub fn new(device: &str, sweep: u32, seed: u32) -> Result<Jobs, String> {
        let device = Device::from_json(device)?;
        let mut jobs = Jobs {
            jobs: Vec::new(),
            refused: Vec::new(),
        };
        for ex in ops::spec_examples() {
            let n: usize = ex.shape.iter().product();
            let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let input = HostTensor::from_slice(&ex.shape, &data);
            match (ex.plan, input) {
                (Ok(plan), Ok(input)) => {
                    jobs.parts(ex.title, "example", &plan, &input, &device, false)
                }
                (Err(e), _) | (_, Err(e)) => jobs.refused.push(format!("{}: {e}", ex.title)),
            }
        }
        let (mut rng, mut cases, mut i) = (Rng(seed as u64), 0, 0);
        while cases < sweep as usize {
            let op = i % OPERATORS.len();
            i += 1;
            let Some((what, plan, input)) = random_case(op, cases, &mut rng) else {
                continue;
            };
            cases += 1;
            jobs.parts(&what, "sweep", &plan, &input, &device, cases % 3 == 0);
        }
        // 10,000 outputs of 3 floats.
        let shape = [10_000, 3];
        let data: Vec<f32> = (0..30_000).map(|i| i as f32).collect();
        if let (Ok(plan), Ok(input)) = (
            ops::split_to_sequence(&shape, 0, None, false),
            HostTensor::from_slice(&shape, &data),
        ) {
            jobs.parts("10,000 outputs", "sweep", &plan, &input, &device, false);
        }
        // Splits whose bytes move in buffer copies: whole outputs, and rows of 2 KiB.
        for (shape, axis) in [([8, 1024], 0), ([16, 1024], 1)] {
            let data: Vec<f32> = (0..shape[0] * shape[1]).map(|i| i as f32).collect();
            let axis_t = IntTensor::scalar(axis);
            if let (Ok(plan), Ok(input)) = (
                ops::split(&shape, &axis_t, 2),
                HostTensor::from_slice(&shape, &data),
            ) {
                let what = format!("split axis {axis} num_splits 2 in copies");
                jobs.parts(&what, "copies", &plan, &input, &device, true);
            }
        }
        jobs.rows(&device);
        for layout in [CacheLayout::Nhd, CacheLayout::Hnd] {
            let name = format!("paged write {layout:?}");
            match paged_job(layout, &device) {
                Ok((recording, buffers)) => jobs.jobs.push(Job {
                    title: name,
                    kind: "paged",
                    recording,
                    buffers,
                    roles: vec![
                        (Role::Input(0), "qkv"),
                        (Role::Indices, "slots"),
                        (Role::Output(0), "queries"),
                        (Role::Scatter, "caches"),
                        (Role::Status, "status"),
                    ],
                }),
                Err(e) => jobs.refused.push(format!("{name}: {e}")),
            }
        }
        Ok(jobs)
    }

    /// How many jobs there are.
    pub fn count(&self) -> usize {
        self.jobs.len()
    }

    /// Job `i` as JSON: `title`, `kind` (`example`, `sweep`, `rows`), `recording`,
    /// `buffers` (each `name` and `size`) and `roles` (each role's buffer).
    pub fn job(&self, i: usize) -> String {
        let Some(job) = self.jobs.get(i) else {
            return "null".into();
        };
        let buffers: Vec<Value> = (job.buffers.iter())
            .map(|b| json!({"name": b.name, "size": b.start.len()}))
            .collect();
        let roles: serde_json::Map<String, Value> = (job.roles.iter())
            .map(|(role, name)| (role_name(*role), json!(name)))
            .collect();
        json!({"title": job.title, "kind": job.kind, "recording": job.recording,
               "buffers": buffers, "roles": roles})
        .to_string()
    }

    /// The bytes buffer `name` of job `i` starts with.
    pub fn start(&self, i: usize, name: &str) -> Vec<u8> {
        self.buffer(i, name)
            .map(|b| b.start.clone())
            .unwrap_or_default()
    }

    /// Compares what buffer `name` of job `i` holds after the job with what it must:
    /// `undefined` where they agree byte for byte, else the first difference.
    pub fn check(&self, i: usize, name: &str, got: &[u8]) -> Option<String> {
        let Some(b) = self.buffer(i, name) else {
            return Some(format!("job {i} has no buffer {name}"));
        };
        if got.len() != b.end.len() {
            return Some(format!(
                "{name}: {} bytes read, {} expected",
                got.len(),
                b.end.len()
            ));
        }
        let k = got.iter().zip(&b.end).position(|(g, w)| g != w)?;
        Some(format!(
            "{name}: byte {k} is {:#04x}, expected {:#04x}",
            got[k], b.end[k]
        ))
    }

    /// The cases the core refused to plan, as a JSON array of lines (none expected).
    pub fn refused(&self) -> String {
        json!(self.refused).to_string()
    }
}

impl Jobs {
    fn buffer(&self, i: usize, name: &str) -> Option<&Buffer> {
        self.jobs.get(i)?.buffers.iter().find(|b| b.name == name)
    }

    /// The split of `input` as `plan` says, and the concat of its parts back.
    fn parts(
        &mut self,
        what: &str,
        kind: &'static str,
        plan: &SplitPlan,
        input: &HostTensor,
        device: &Device,
        copies: bool,
    ) {
        for direction in [Direction::Split, Direction::Concat] {
            let title = format!(
                "{} of {what}, {} {:?}",
                if direction == Direction::Split {
                    "split"
                } else {
                    "concat"
                },
                input.dtype().name(),
                input.shape()
            );
            match parts_job(direction, plan, input, device, copies) {
                Ok((recording, buffers)) => self.jobs.push(Job {
                    title,
                    kind,
                    recording,
                    buffers,
                    roles: vec![(Role::Input(0), "read"), (Role::Output(0), "written")],
                }),
                Err(e) => self.refused.push(format!("{title}: {e}")),
            }
        }
    }

    /// Rows placed by indices: a gather of one-byte rows on the last axis, an embedding's
    /// rows by i64 ids, a set rows of one-byte rows sharing words and a ScatterND, indices
    /// out of range in each.
    fn rows(&mut self, device: &Device) {
        let tensor = |shape: &[usize], dtype: DType, seed: usize| {
            let n = shape.iter().product::<usize>() * dtype.size();
            let bytes = (0..n)
                .map(|i| ((i * 37 + seed * 11 + 5) % 251) as u8)
                .collect();
            HostTensor::new(dtype, shape.to_vec(), bytes)
        };
        let slots: Vec<i32> = (0..1000).map(|i| (i * 7 + 3) % 1002).collect();
        let cases = [
            (
                "gather of bytes",
                ops::gather(&[37, 50], &[3, 2], -1),
                tensor(&[37, 50], DType::U8, 1),
                HostTensor::from_slice(&[3, 2], &[0i32, 49, -1, -50, 50, 7]),
                None,
            ),
            (
                "get rows",
                ops::get_rows(&[300, 256], &[4]),
                tensor(&[300, 256], DType::F16, 2),
                HostTensor::from_slice(&[4], &[299i64, (1 << 32) + 1, 0, -1]),
                None,
            ),
            (
                "set rows of bytes",
                ops::set_rows(&[1002, 1], &[1000]),
                tensor(&[1002, 1], DType::U8, 3),
                HostTensor::from_slice(&[1000], &slots),
                Some(tensor(&[1000, 1], DType::U8, 4)),
            ),
            (
                "ScatterND",
                ops::scatter_nd(&[64, 24], &[3, 1], &[3, 24]),
                tensor(&[64, 24], DType::F32, 5),
                HostTensor::from_slice(&[3, 1], &[-1i64, 5, 64]),
                Some(tensor(&[3, 24], DType::F32, 6)),
            ),
        ];
        for (name, plan, data, ids, updates) in cases {
            let job = (|| {
                let updates = updates.transpose()?;
                rows_job(&plan?, &data?, &ids?, updates.as_ref(), device)
            })();
            match job {
                Ok((recording, buffers)) => self.jobs.push(Job {
                    title: name.into(),
                    kind: "rows",
                    recording,
                    buffers,
                    roles: vec![
                        (Role::Input(0), "source"),
                        (Role::Indices, "indices"),
                        (Role::Output(0), "target"),
                        (Role::Scatter, "target"),
                        (Role::Status, "status"),
                    ],
                }),
                Err(e) => self.refused.push(format!("{name}: {e}")),
            }
        }
    }
}

/// A buffer of guard bytes holding each of `pieces` (offset, bytes) from `at`, `size` bytes
/// from `at` and the guard after them.
fn placed<'a>(at: u64, size: u64, pieces: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<u8> {
    let mut out = vec![GUARD_BYTE; (at + size.next_multiple_of(4)) as usize + GUARD];
    for (offset, bytes) in pieces {
        let from = (at + offset) as usize;
        out[from..from + bytes.len()].copy_from_slice(bytes);
    }
    out
}

/// The split (or concat, `direction`) of `input` as `plan` says between a buffer holding the
/// whole tensor (`read` for a split, `written` for a concat) and one holding the parts as
/// placed for a device of `limits`, each region one alignment past its buffer's start.
fn parts_job(
    direction: Direction,
    plan: &SplitPlan,
    input: &HostTensor,
    device: &Device,
    copies: bool,
) -> wgsl_split::Result<(Value, Vec<Buffer>)> {
    let dtype = input.dtype();
    let align = device.limits.min_storage_buffer_offset_alignment as u64;
    let (whole_at, region_at) = (align, 2 * align);
    let at = (whole_at, region_at);
    let (recording, layout) = parts_recording(direction, plan, dtype, device, copies, at)?;
    let parts = reference::split_tensor(input, plan)?;
    let whole = placed(whole_at, input.bytes().len() as u64, [(0, input.bytes())]);
    let pieces = (layout.ranges.iter())
        .zip(&parts)
        .map(|(r, p)| (r.offset, p.bytes()));
    let region = placed(region_at, layout.total_bytes, pieces);
    let (read, written) = direction.in_order(whole, region);
    let guard = vec![GUARD_BYTE; written.len()];
    let buffers = vec![
        Buffer {
            name: "read",
            start: read.clone(),
            end: read,
        },
        Buffer {
            name: "written",
            start: guard,
            end: written,
        },
    ];
    Ok((recording, buffers))
}

/// `bytes` then zeros to `size` bytes (rounded up to 4), then the guard.
fn padded(bytes: &[u8], size: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out.resize((size as usize).max(bytes.len()).next_multiple_of(4), 0);
    out.extend([GUARD_BYTE; GUARD]);
    out
}

/// The rows `plan` places of `data` by `ids` (and a scatter's `updates`), each region at the
/// start of its buffer, and the status in a buffer of its own.
fn rows_job(
    plan: &RowsPlan,
    data: &HostTensor,
    ids: &HostTensor,
    updates: Option<&HostTensor>,
    device: &Device,
) -> wgsl_split::Result<(Value, Vec<Buffer>)> {
    let limits = &device.limits;
    let at = RowsRegions {
        source: 0,
        indices: 0,
        target: 0,
        status: Some(0),
    };
    let tuning = device.tuning();
    let (recording, sizes) = record_rows(plan, data.dtype(), ids.dtype(), at, limits, tuning)?;
    let ((want, status), source, first) = match updates {
        Some(u) => (
            reference::scatter_rows(plan, data, ids, u)?,
            u.bytes(),
            data.bytes(),
        ),
        None => (
            reference::gather_rows(plan, data, ids)?,
            data.bytes(),
            &[][..],
        ),
    };
    let same = |name, bytes: Vec<u8>| Buffer {
        name,
        start: bytes.clone(),
        end: bytes,
    };
    let buffers = vec![
        same("source", padded(source, sizes.source)),
        same("indices", padded(ids.bytes(), sizes.indices)),
        Buffer {
            name: "target",
            start: padded(first, sizes.target),
            end: padded(want.bytes(), sizes.target),
        },
        status_buffer(status),
    ];
    Ok((recording_json(&recording, limits)?, buffers))
}

/// A status buffer, zeroed before the job, that must hold `status` after it (two words), and
/// zeros to 16 bytes, then the guard.
fn status_buffer(status: RowsStatus) -> Buffer {
    let first_bad = status.first_bad.map_or(0, |k| !k);
    let words = [status.bad_indices, first_bad, 0, 0]
        .map(u32::to_le_bytes)
        .concat();
    Buffer {
        name: "status",
        start: padded(&[0; 16], 16),
        end: padded(&words, 16),
    }
}

/// A paged write of 6 tokens (a padding slot and one out of range among them) into caches
/// of 5 blocks of 4 slots in `layout`, both caches in one buffer, the value cache one
/// alignment past the key cache's end.
fn paged_job(layout: CacheLayout, device: &Device) -> wgsl_split::Result<(Value, Vec<Buffer>)> {
    let limits = &device.limits;
    let plan = ops::paged_kv_write(6, 4, 2, 64, 4, 5, layout)?;
    let tensor = |shape: Vec<usize>, seed: usize| {
        let n = shape.iter().product::<usize>() * 2;
        let bytes = (0..n)
            .map(|i| ((i * 37 + seed * 11 + 5) % 251) as u8)
            .collect();
        HostTensor::new(DType::F16, shape, bytes)
    };
    let qkv = tensor(plan.qkv_shape(), 7)?;
    let (k, v) = (
        tensor(plan.cache_shape(), 8)?,
        tensor(plan.cache_shape(), 9)?,
    );
    let slots = HostTensor::from_slice(&[6], &[3i32, -1, 19, 20, 0, 7])?;
    let want = reference::paged_write(&plan, &qkv, &slots, &k, &v)?;
    let rule = index_rule(DType::I32, NegativeIndex::Padding)?;
    let sizes = paged_sizes(&plan, DType::F16, rule.words);
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let v_at = sizes.cache.next_multiple_of(align);
    let at = PagedRegions {
        qkv: 0,
        slots: 0,
        queries: 0,
        caches: 0,
        k_at: 0,
        v_at,
        status: Some(0),
    };
    let tuning = device.tuning();
    let recording = record_paged(&plan, DType::F16, rule, at, limits, tuning)?;
    let caches = |k: &[u8], v: &[u8]| placed(0, v_at + sizes.cache, [(0, k), (v_at, v)]);
    let same = |name, bytes: Vec<u8>| Buffer {
        name,
        start: bytes.clone(),
        end: bytes,
    };
    let buffers = vec![
        same("qkv", padded(qkv.bytes(), sizes.qkv)),
        same("slots", padded(slots.bytes(), sizes.slots)),
        Buffer {
            name: "queries",
            start: padded(&[], sizes.queries),
            end: padded(want.queries.bytes(), sizes.queries),
        },
        Buffer {
            name: "caches",
            start: caches(k.bytes(), v.bytes()),
            end: caches(want.k_cache.bytes(), want.v_cache.bytes()),
        },
        status_buffer(want.status),
    ];
    Ok((recording_json(&recording, limits)?, buffers))
}
