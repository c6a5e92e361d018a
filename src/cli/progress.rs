//! The progress bar of `wgpu-split run`: bytes, rate and time left on stderr, shown once a
//! split has taken a second, never with `--quiet` or `--json`, and only on a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::{Duration, Instant};

/// How long a split runs before the bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// A progress bar that appears when a split turns out to be slow.
pub struct Progress {
    enabled: bool,
    start: Instant,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar that may appear (`enabled`) or never does.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            start: Instant::now(),
            bar: None,
        }
    }

    /// `done` of `total` input bytes are split.
    pub fn update(&mut self, done: u64, total: u64) {
        if !self.enabled || (self.bar.is_none() && self.start.elapsed() < SHOW_AFTER) {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            // indicatif draws nothing when stderr is not a terminal.
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec}, {eta} left",
            ) {
                bar.set_style(style);
            }
            bar
        });
        bar.set_position(done);
    }

    /// Removes the bar, if it was shown.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A progress whose split started `ago`.
    fn started(enabled: bool, ago: Duration) -> Progress {
        let mut p = Progress::new(enabled);
        p.start = Instant::now().checked_sub(ago).unwrap_or(p.start);
        p
    }

    #[test]
    fn the_bar_appears_after_a_second_unless_turned_off() {
        let mut quick = started(true, Duration::ZERO);
        quick.update(1, 2);
        assert!(quick.bar.is_none(), "a split under a second shows no bar");
        let mut slow = started(true, 2 * SHOW_AFTER);
        slow.update(1, 2);
        assert_eq!(slow.bar.as_ref().map(|b| b.position()), Some(1));
        slow.finish();
        assert!(slow.bar.is_none());
        let mut quiet = started(false, 2 * SHOW_AFTER);
        quiet.update(1, 2);
        assert!(quiet.bar.is_none(), "--quiet and --json show none");
    }
}
