//! Timing for the suite: medians of timed runs, and several closures timed in turn so their
//! ratios share one stretch of time.

use crate::error::Result;
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

/// Timed runs stop once they add up to this long (and at least the requested count ran):
/// short cases get many runs, so their medians are steady on a noisy machine.
const MIN_TIMED_SECONDS: f64 = 1.0;

/// Most timed runs of one figure.
const MAX_RUNS: usize = 400;

/// Times `f` once for warm-up, then at least `runs` times and at least
/// [`MIN_TIMED_SECONDS`] in all (at most [`MAX_RUNS`] runs); returns the median in ms.
pub(super) fn time_ms(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let [ms] = time_interleaved_ms(runs, [&mut f])?;
    Ok(ms)
}

/// [`time_ms`] for several closures at once, run in turn (a, b, a, b, ...): each median is
/// then taken over the same stretch of time, so a ratio of two of them does not carry the
/// drift of a shared, noisy machine between two separate measurements.
pub(super) fn time_interleaved_ms<const N: usize>(
    runs: usize,
    mut fs: [&mut dyn FnMut() -> Result<()>; N],
) -> Result<[f64; N]> {
    for f in fs.iter_mut() {
        f()?;
    }
    let mut times: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(runs));
    let mut total = 0.0;
    let mut done = 0;
    while done < runs || (total < MIN_TIMED_SECONDS && done < MAX_RUNS) {
        for (f, times) in fs.iter_mut().zip(times.iter_mut()) {
            let t = Instant::now();
            f()?;
            let seconds = t.elapsed().as_secs_f64();
            total += seconds;
            times.push(seconds * 1e3);
        }
        done += 1;
    }
    Ok(times.map(median))
}
