//! Timing for the suite: medians of timed runs, several closures timed in turn so their ratios
//! share one stretch of time, and the device's own clock where it has timestamps.

use crate::error::Result;
use crate::gpu::device::scoped;
use crate::GpuSplitter;
use std::cell::Cell;
use std::time::Instant;

/// GB/s for `bytes` moved in `ms`.
pub fn gbps(bytes: usize, ms: f64) -> f64 {
    bytes as f64 / (ms * 1e6)
}

/// Median of a list (the upper one of the middle two for an even count); NaN when empty.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One figure's medians: from submit to the end of the wait on the host, and between two
/// timestamps around its commands on the device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Time {
    /// Median wall time, ms: recording, submit and wait.
    pub wall_ms: f64,
    /// Median device time, ms; `None` where the device has no timestamps inside encoders.
    pub device_ms: Option<f64>,
}

impl Time {
    /// The time ratios are taken from: the device's where it has one, else the wall time.
    pub fn ms(&self) -> f64 {
        self.device_ms.unwrap_or(self.wall_ms)
    }

    /// Both times divided by `n`: one of `n` commands recorded into each submission.
    pub(super) fn per(self, n: usize) -> Self {
        Self {
            wall_ms: self.wall_ms / n as f64,
            device_ms: self.device_ms.map(|ms| ms / n as f64),
        }
    }
}

/// Timed runs stop once they add up to this long (and at least the requested count ran):
/// short cases get many runs, so their medians are steady on a noisy machine.
const MIN_TIMED_SECONDS: f64 = 0.5;

/// Most timed runs of one figure.
const MAX_RUNS: usize = 400;

/// Times `f` once for warm-up, then at least `runs` times and at least
/// [`MIN_TIMED_SECONDS`] in all (at most [`MAX_RUNS`] runs); returns the median wall time in ms.
pub(super) fn time_ms(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let [t] = time_interleaved(runs, None, [&mut f])?;
    Ok(t.wall_ms)
}

/// [`time_ms`] for several closures at once, run in turn (a, b, a, b, ...): each median is
/// then taken over the same stretch of time, so a ratio of two of them does not carry the
/// drift of a shared, noisy machine between two separate measurements. After each run, out of
/// the wall time, `clock` gives the device time of the commands the closure timed with it.
pub(super) fn time_interleaved<const N: usize>(
    runs: usize,
    clock: Option<&DeviceClock>,
    mut fs: [&mut dyn FnMut() -> Result<()>; N],
) -> Result<[Time; N]> {
    let device_ms = || clock.map_or(Ok(None), DeviceClock::take_ms);
    for f in fs.iter_mut() {
        f()?;
        device_ms()?;
    }
    let mut wall: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    let mut device: [Vec<f64>; N] = std::array::from_fn(|_| Vec::new());
    let mut total = 0.0;
    let mut done = 0;
    while done < runs || (total < MIN_TIMED_SECONDS && done < MAX_RUNS) {
        for (k, f) in fs.iter_mut().enumerate() {
            let t = Instant::now();
            f()?;
            let seconds = t.elapsed().as_secs_f64();
            total += seconds;
            wall[k].push(seconds * 1e3);
            if let Some(ms) = device_ms()? {
                device[k].push(ms);
            }
        }
        done += 1;
    }
    let mut times = std::array::from_fn(|_| Time {
        wall_ms: 0.0,
        device_ms: None,
    });
    for (k, (wall, device)) in wall.into_iter().zip(device).enumerate() {
        times[k] = Time {
            wall_ms: median(wall),
            device_ms: (!device.is_empty()).then(|| median(device)),
        };
    }
    Ok(times)
}

/// The device's clock: a timestamp before and after a submission's commands, resolved into a
/// buffer the host reads once the submission is done.
pub(super) struct DeviceClock {
    /// Its device, which reads the timestamps back.
    gpu: GpuSplitter,
    queries: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readback: wgpu::Buffer,
    ns_per_tick: f64,
    /// Whether [`DeviceClock::stop`] recorded timestamps not read yet.
    pending: Cell<bool>,
}

impl DeviceClock {
    /// The clock of `gpu`'s device; `None` where the device was opened without timestamps
    /// inside encoders.
    pub(super) fn new(gpu: &GpuSplitter) -> Result<Option<Self>> {
        let device = gpu.device();
        let needed =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        if !device.features().contains(needed) {
            return Ok(None);
        }
        let ns_per_tick = gpu.queue().get_timestamp_period() as f64;
        scoped(device, "creating the bench's timestamp queries", || {
            let buffer = |label, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: 16,
                    usage,
                    mapped_at_creation: false,
                })
            };
            Self {
                gpu: gpu.clone(),
                queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("bench timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                }),
                resolved: buffer(
                    "bench timestamps resolved",
                    wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                ),
                readback: buffer(
                    "bench timestamps readback",
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                ),
                ns_per_tick,
                pending: Cell::new(false),
            }
        })
        .map(Some)
    }

    /// Records the first timestamp, before the commands to time.
    pub(super) fn start(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.write_timestamp(&self.queries, 0);
    }

    /// Records the second timestamp, after the commands to time, and its copy to the host.
    pub(super) fn stop(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.write_timestamp(&self.queries, 1);
        encoder.resolve_query_set(&self.queries, 0..2, &self.resolved, 0);
        encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readback, 0, 16);
        self.pending.set(true);
    }

    /// The time between the two timestamps last recorded, ms, once their submission is done;
    /// `None` when none were recorded since the last call.
    pub(super) fn take_ms(&self) -> Result<Option<f64>> {
        if !self.pending.replace(false) {
            return Ok(None);
        }
        Ok(Some(self.read_ms()?))
    }

    fn read_ms(&self) -> Result<f64> {
        let ticks: [u64; 2] = self.gpu.read_back(&self.readback, |view| {
            Ok(bytemuck::pod_read_unaligned(&view[..16]))
        })?;
        Ok(ticks[1].saturating_sub(ticks[0]) as f64 * self.ns_per_tick / 1e6)
    }
}
