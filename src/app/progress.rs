//! The progress display of the one-shot commands (`release`, `manifests`, `orphans`,
//! `versions`): one line on stderr, redrawn in place by indicatif, showing the phase, the items
//! done out of the total, the running counters and the item just done. It is drawn only when
//! [`Settings::progress`](crate::app::context::Settings) says so and the output is for a person, and
//! it is cleared before the report is written, so the report reads as it does without it.
//! `watch` and `serve` never make one (they pass the engines `NoProgress`).
//!
//! Cost: counters are atomics read when the line is drawn; a step (one per release, file or LIST,
//! never per object) sets the item and the position; drawing is limited by indicatif (a short
//! burst, then 20 times a second), and a steady tick redraws a phase without steps so it shows it
//! is alive.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{HumanCount, MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::report::progress::{Counter, Progress};

/// How often the line is redrawn when nothing happens (the spinner and elapsed time move).
const TICK: Duration = Duration::from_millis(100);

/// The counters shown after the position, updated without a lock.
#[derive(Debug, Default)]
struct Counters {
    objects: AtomicU64,
    cache_hits: AtomicU64,
}

impl Counters {
    fn cell(&self, counter: Counter) -> &AtomicU64 {
        match counter {
            Counter::Objects => &self.objects,
            Counter::CacheHits => &self.cache_hits,
        }
    }

    /// ` · 4,512 objects · 3 cache hits`, leaving out counters still at zero.
    fn write(&self, w: &mut dyn std::fmt::Write) {
        let objects = self.objects.load(Ordering::Relaxed);
        let hits = self.cache_hits.load(Ordering::Relaxed);
        if objects > 0 {
            let _ = write!(w, " · {} object{}", HumanCount(objects), if objects == 1 { "" } else { "s" });
        }
        if hits > 0 {
            let _ = write!(w, " · {} cache hit{}", HumanCount(hits), if hits == 1 { "" } else { "s" });
        }
    }
}

/// The progress line on stderr, or nothing (when progress is off it holds no bar and every call
/// returns at once). Each phase gets a bar of its own: its first frames are never held back by
/// the drawing done for the phase before (indicatif allows a burst of draws per bar, then 20 a
/// second).
pub struct Display {
    enabled: bool,
    bar: Mutex<Option<ProgressBar>>,
    counters: Arc<Counters>,
    /// With several clusters: the lines of all of them, and this cluster's name before its phase.
    group: Option<(MultiProgress, String)>,
}

impl Display {
    /// A display on stderr when `enabled`, else one that shows nothing. indicatif itself also
    /// hides the bar when stderr is not a terminal or `TERM` is dumb or unset.
    pub fn new(enabled: bool) -> Display {
        Display { enabled, bar: Mutex::new(None), counters: Arc::new(Counters::default()), group: None }
    }

    /// One cluster's line among several (`group` draws them together, one line each), its phase
    /// shown after the cluster's name.
    pub fn in_group(enabled: bool, group: &MultiProgress, cluster: &str) -> Display {
        Display {
            enabled,
            bar: Mutex::new(None),
            counters: Arc::new(Counters::default()),
            group: Some((group.clone(), cluster.to_string())),
        }
    }

    /// A display that shows nothing.
    pub fn off() -> Display {
        Display::new(false)
    }

    /// Erase the line (before the report, or an error, is written). Idempotent.
    pub fn clear(&self) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take() {
            bar.finish_and_clear();
        }
    }

    /// The bar of the current phase (a handle: drawing happens without holding the lock).
    fn current(&self) -> Option<ProgressBar> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        // indicatif leaves an unfinished bar on screen when dropped; an early return (an error)
        // must not leave it above the error message.
        self.clear();
    }
}

impl Progress for Display {
    fn start(&self, what: &str, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        // The previous phase's line is erased before the new one is first drawn on it.
        self.clear();
        let bar =
            ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr()).with_style(style(total, &self.counters));
        let bar = match &self.group {
            Some((group, cluster)) => group.add(bar).with_prefix(format!("{cluster}: {what}")),
            None => bar.with_prefix(what.to_string()),
        };
        bar.enable_steady_tick(TICK);
        *self.bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }

    fn step(&self, item: &str) {
        let Some(bar) = self.current() else { return };
        bar.inc(1);
        bar.set_message(item.to_string());
    }

    fn add(&self, counter: Counter, n: u64) {
        if self.enabled {
            self.counters.cell(counter).fetch_add(n, Ordering::Relaxed);
        }
    }

    fn set(&self, counter: Counter, n: u64) {
        if self.enabled {
            self.counters.cell(counter).store(n, Ordering::Relaxed);
        }
    }
}

/// A bar with `done/total` when the total is known, else a spinner with the time spent; both
/// followed by the counters and the item just done (cut to the terminal's width, so the line
/// never wraps).
fn style(total: Option<u64>, counters: &Arc<Counters>) -> ProgressStyle {
    let template = match total {
        Some(_) => "{prefix} [{bar:24}] {pos}/{len}{counters}  {wide_msg}",
        None => "{prefix} {spinner} {elapsed}{counters}  {wide_msg}",
    };
    let counters = counters.clone();
    ProgressStyle::with_template(template)
        .expect("the progress templates are valid")
        .progress_chars("=> ")
        .with_key("counters", move |_: &ProgressState, w: &mut dyn std::fmt::Write| counters.write(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_only_what_moved() {
        let c = Counters::default();
        let mut s = String::new();
        c.write(&mut s);
        assert_eq!(s, "");
        c.cell(Counter::Objects).fetch_add(4512, Ordering::Relaxed);
        c.write(&mut s);
        assert_eq!(s, " · 4,512 objects");
        s.clear();
        c.cell(Counter::CacheHits).store(1, Ordering::Relaxed);
        c.write(&mut s);
        assert_eq!(s, " · 4,512 objects · 1 cache hit");
    }

    #[test]
    fn both_templates_parse() {
        let c = Arc::new(Counters::default());
        let _ = style(Some(3), &c);
        let _ = style(None, &c);
    }

    #[test]
    fn off_ignores_everything() {
        let d = Display::off();
        d.start("releases", Some(2));
        d.step("shop");
        d.add(Counter::Objects, 9);
        d.clear();
        assert!(d.current().is_none());
        assert_eq!(d.counters.objects.load(Ordering::Relaxed), 0);
    }
}
