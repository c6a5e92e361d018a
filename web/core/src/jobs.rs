//! The page's checks of the JavaScript driver ([`Jobs`]): each job is a recording with the
//! buffers it runs on, the bytes each starts with and the bytes each must hold after it,
//! byte for byte, the guard bytes after every region included.

mod rows;

use crate::cases::{random_case, random_views, Rng, OPERATORS};
use crate::{parts_recording, recordings_json, role_name, Device};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wgsl_split::planner::Direction;
use wgsl_split::recording::Recording;
use wgsl_split::recording::Role;
use wgsl_split::views::{record_views, HostRegion};
use wgsl_split::{ops, reference, HostTensor, IntTensor, PartView, SplitPlan};

/// Bytes of guard after each region, and their value.
const GUARD: usize = 256;
const GUARD_BYTE: u8 = 0xA5;

/// One buffer of a job: the bytes it starts with and those it must hold after the job.
struct Buffer {
    name: String,
    start: Vec<u8>,
    end: Vec<u8>,
}

struct Job {
    title: String,
    kind: &'static str,
    recording: Value,
    buffers: Vec<Buffer>,
    /// The buffer each role of the recording binds, by the role's name in its JSON.
    roles: Vec<(String, String)>,
}

/// A job as made: its recording's JSON, its buffers, and the buffer of each role.
type Made = wgsl_split::Result<(Value, Vec<Buffer>, Vec<(String, String)>)>;

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
            // The smaller ones into random views too, as the wgpu-split sweep takes them.
            if plan.num_parts() <= 64 && input.bytes().len() <= 1 << 20 {
                let es = input.dtype().size();
                let views = random_views(&plan, es, &mut |n| rng.below(n));
                jobs.views(&what, &plan, &input, &views, &device);
            }
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
        jobs.paged(&device);
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
            .map(|(role, name)| (role.clone(), json!(name)))
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
    /// Adds the job `made` gave (its recording, its buffers and the buffer of each role), or
    /// the core's refusal.
    fn add(&mut self, title: String, kind: &'static str, made: Made) {
        match made {
            Ok((recording, buffers, roles)) => self.jobs.push(Job {
                title,
                kind,
                recording,
                buffers,
                roles,
            }),
            Err(e) => self.refused.push(format!("{title}: {e}")),
        }
    }

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
            let job = parts_job(direction, plan, input, device, copies);
            let read_written = [(Role::Input(0), "read"), (Role::Output(0), "written")];
            self.add(title, kind, job.map(|(r, b)| (r, b, roles(&read_written))));
        }
    }

    /// The split of `input` as `plan` says into `views` (each with the bytes of its region),
    /// each part in a buffer of its own that starts with a pattern; every buffer must come out
    /// as the reference's.
    fn views(
        &mut self,
        what: &str,
        plan: &SplitPlan,
        input: &HostTensor,
        views: &[(PartView, usize)],
        device: &Device,
    ) {
        let title = format!(
            "split into views of {what}, {} {:?}",
            input.dtype().name(),
            input.shape()
        );
        self.add(title, "views", views_job(plan, input, views, device));
    }
}

/// Each role's name in a recording's JSON, with the buffer it binds.
fn roles(pairs: &[(Role, &str)]) -> Vec<(String, String)> {
    (pairs.iter())
        .map(|(role, buffer)| (role_name(*role), buffer.to_string()))
        .collect()
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
    let parts = plan.reference(input)?;
    let whole = placed(whole_at, input.bytes().len() as u64, [(0, input.bytes())]);
    let pieces = (layout.ranges.iter())
        .zip(&parts)
        .map(|(r, p)| (r.offset, p.bytes()));
    let region = placed(region_at, layout.total_bytes, pieces);
    let (read, written) = direction.in_order(whole, region);
    let guard = vec![GUARD_BYTE; written.len()];
    let buffers = vec![
        Buffer {
            name: "read".into(),
            start: read.clone(),
            end: read,
        },
        Buffer {
            name: "written".into(),
            start: guard,
            end: written,
        },
    ];
    Ok((recording, buffers))
}

/// The split of `input` into `views`, the input one alignment into buffer `read`, part `k`
/// at the start of buffer `part{k}`, which starts with a pattern; each batch of the core's
/// recording binds its windows' buffers in its roles.
fn views_job(
    plan: &SplitPlan,
    input: &HostTensor,
    views: &[(PartView, usize)],
    device: &Device,
) -> Made {
    let align = device.limits.min_storage_buffer_offset_alignment as u64;
    let (views, sizes): (Vec<PartView>, Vec<usize>) = views.iter().cloned().unzip();
    let start: Vec<Vec<u8>> = (sizes.iter().enumerate())
        .map(|(k, &n)| {
            let padded = n.next_multiple_of(16).max(16);
            (0..padded).map(|i| (i * 131 + k * 7 + 3) as u8).collect()
        })
        .collect();
    let mut end = start.clone();
    reference::split_into_views(input, plan, &views, &mut end)?;
    let whole = placed(align, input.bytes().len() as u64, [(0, input.bytes())]);
    // The host's buffers by number: the whole tensor's 0, part k's k + 1.
    let region = |buffer, offset, bytes: &Vec<u8>| HostRegion {
        buffer,
        offset,
        buffer_size: bytes.len() as u64,
    };
    let parts: Vec<HostRegion<usize>> = (start.iter().enumerate())
        .map(|(k, b)| region(k + 1, 0, b))
        .collect();
    let recorded = record_views(
        Direction::Split,
        plan,
        input.dtype(),
        region(0, align, &whole),
        &parts,
        &views,
        &device.limits,
        (device.tuning(), device.most_outputs()),
    )?;
    let names: Vec<Box<dyn Fn(Role) -> String>> = (recorded.batches.iter())
        .map(|batch| {
            let buffers: Vec<usize> = batch.windows.iter().map(|w| w.buffer).collect();
            let name = move |role| match role {
                Role::Output(k) => format!("part{}", buffers[k as usize] - 1),
                other => role_name(other),
            };
            Box::new(name) as Box<dyn Fn(Role) -> String>
        })
        .collect();
    let batches: Vec<(&Recording, &dyn Fn(Role) -> String)> = (recorded.batches.iter())
        .zip(&names)
        .map(|(b, name)| (&b.recording, name.as_ref()))
        .collect();
    let recording = recordings_json(&batches, &device.limits)?;
    let mut roles = roles(&[(Role::Input(0), "read")]);
    let mut buffers = vec![Buffer {
        name: "read".into(),
        start: whole.clone(),
        end: whole,
    }];
    for (k, (start, end)) in start.into_iter().zip(end).enumerate() {
        roles.push((format!("part{k}"), format!("part{k}")));
        buffers.push(Buffer {
            name: format!("part{k}"),
            start,
            end,
        });
    }
    Ok((recording, buffers, roles))
}
