//! The live loop, written once for `watch --live` and `serve --live`, as kube-runtime's
//! `Controller` is one loop whose caller supplies the work: the loop owns the release-storage
//! watch, the [`Inbox`], the generations (a fresh [`LiveCache`] and [`LiveView`] each), the outage
//! clock and the resyncs; a [`LiveSink`] is told what happened and does its own work with it
//! (`watch` alerts and keeps its state, `serve` replaces its page's result and announces it).
//!
//! One generation: a fresh cache (initial LISTs), every target checked ([`LiveView::load`],
//! then [`LiveSink::generation`]), then batches of events ([`LiveView::apply`], then
//! [`LiveSink::updates`]) and ticks ([`LiveSink::tick`], with the outage decision) until a resync
//! (the `resync` timer, the sink's [`LiveSink::interrupt`], or release storage listed again) or a
//! shutdown. A generation whose load failed is retried after `retry` (or at an interrupt).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tracing::Instrument;

use super::inbox::{Batch, Inbox};
use super::view::{LiveView, Update};
use crate::engine::compare::rules::IgnoreRule;
use crate::engine::drift::ReleaseSelection;
use crate::source::cluster::Cluster;
use crate::source::helm::driver::StorageObjects;
use crate::source::helm::watch::{StorageChange, watch_storage};
use crate::source::live_cache::{Change, LiveCache, StreamStats, WatchScope};

/// How long streams may be down, or storage unreadable, before it is reported (an alert in
/// `watch`, the releases scope's error in `serve`). Longer than the window a stream counts as
/// failing after its last failure, so that a short API server restart is not reported.
pub const OUTAGE_GRACE: Duration = Duration::from_secs(60);

/// Why the loop stopped waiting for events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Start a new generation (fresh LISTs and discovery, every target checked).
    Resync,
    /// Return.
    Shutdown,
}

/// Where in a tick's batch the outage is decided and [`LiveSink::tick`] called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickOrder {
    /// Before the batch is applied (`serve`): the storage reads a tick retries count from the
    /// next tick.
    BeforeApply,
    /// After the batch is applied and [`LiveSink::updates`] was called (`watch`): a storage read
    /// the tick retried that worked ends the outage at once.
    AfterApply,
}

/// The release-storage watch of the loop.
pub struct StorageWatch {
    pub objects: StorageObjects,
    /// `None`: every namespace.
    pub namespace: Option<String>,
    /// How long to wait for its first list before reading the targets (`None`: as long as it
    /// takes). A storage list that keeps failing (RBAC) is then reported by the first load.
    pub ready_timeout: Option<Duration>,
}

/// What the loop runs on, and how.
pub struct LiveLoop {
    /// Streams use its stream client, one-off requests its client.
    pub cluster: Cluster,
    /// The releases watched; `None`: none (`watch --live --manifests` only).
    pub selection: Option<ReleaseSelection>,
    /// `None`: no storage watch (no releases, or storage outside the cluster).
    pub storage: Option<StorageWatch>,
    /// The streams' counters (a stream counts as failing: [`OUTAGE_GRACE`]).
    pub stats: Arc<StreamStats>,
    /// A new generation this long after each one started (`None`: only on an interrupt).
    pub resync: Option<Duration>,
    /// How long to wait after a generation whose load failed.
    pub retry: Duration,
    pub tick_order: TickOrder,
    /// The loop's own log lines (a line starting with `error: ` is an error).
    pub log: fn(&str),
    /// Give the heap's freed pages back to the system: called once a generation has read release
    /// storage (before its checks), after its first check, and at a tick when a batch since the
    /// last call checked something. The live loop runs for days; its peaks (a generation's lists,
    /// a burst of edits) left their freed heap with the process (docs/live.md, "Freed memory").
    pub return_freed_memory: fn(),
}

/// A generation whose first check just finished.
pub struct Generation<'a> {
    /// The generation's cache (also when its load failed).
    pub cache: &'a Arc<LiveCache>,
    /// When it started.
    pub started: Instant,
    /// The event that made the loop start it (release storage listed again), if one did.
    pub cause: Option<Instant>,
}

/// A tick's outage decision: streams failing or release storage unreadable, for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// Everything readable.
    Up,
    /// Readable again after being down: clear what was reported.
    Recovered,
    /// Down for less than [`OUTAGE_GRACE`]: nothing to report yet.
    Brief,
    /// Down for [`OUTAGE_GRACE`] or more: report it (at every tick while it lasts).
    Down,
}

/// Since when streams or storage have been down (kept across generations).
#[derive(Debug, Default)]
pub struct OutageClock {
    since: Option<Instant>,
}

impl OutageClock {
    /// Whether it is down at `now`, and what that means.
    pub fn observe(&mut self, down: bool, now: Instant) -> Outage {
        match (down, self.since) {
            (false, None) => Outage::Up,
            (false, Some(_)) => {
                self.since = None;
                Outage::Recovered
            }
            (true, since) => {
                let since = *self.since.get_or_insert(since.unwrap_or(now));
                if now.saturating_duration_since(since) >= OUTAGE_GRACE { Outage::Down } else { Outage::Brief }
            }
        }
    }
}

/// What a caller of the live loop does with its results; every method is called by the loop,
/// in its order (module documentation), never concurrently.
pub trait LiveSink: Send {
    /// A generation starts: the span its load runs in.
    fn begin(&mut self) -> tracing::Span {
        tracing::Span::none()
    }

    /// The ignore rules of the generation's checks (an error fails its load).
    fn rules(&mut self) -> Result<Vec<IgnoreRule>, String>;

    /// The generation's first check finished: every target's result, or why it could not run.
    fn generation(
        &mut self,
        loaded: Result<&LiveView, &str>,
        generation: Generation<'_>,
    ) -> impl Future<Output = ()> + Send;

    /// A batch was applied: what it changed (maybe nothing). With [`TickOrder::AfterApply`], a
    /// tick's batch is followed by [`LiveSink::tick`].
    fn updates(&mut self, view: &LiveView, batch: &Batch, updates: Vec<Update>) -> impl Future<Output = ()> + Send;

    /// A tick (every [`TICK`](super::TICK)), with the outage decision; before or after the
    /// batch's [`LiveSink::updates`] as [`LiveLoop::tick_order`] says.
    fn tick(&mut self, view: &LiveView, batch: &Batch, outage: Outage) -> impl Future<Output = ()> + Send;

    /// Release storage listed again: the loop starts a new generation.
    fn relisted(&mut self);

    /// Resolves when the caller wants a new generation or the loop to return; waited on with
    /// the events (pending forever: only the loop's own reasons).
    fn interrupt(&self) -> impl Future<Output = Stop> + Send;
}

/// Run the live loop until [`Stop::Shutdown`]: the view of the generation running then, or
/// `None` when it came while waiting after a failed load.
pub async fn run<S: LiveSink>(live: LiveLoop, sink: &mut S) -> Option<LiveView> {
    let (storage_tx, storage_rx) = mpsc::unbounded_channel::<StorageChange>();
    let _storage = match &live.storage {
        Some(w) => {
            let (ready_tx, ready) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(watch_storage(
                live.cluster.streams().clone(),
                w.objects,
                w.namespace.clone(),
                storage_tx,
                ready_tx,
                live.stats.clone(),
                live.log,
            ));
            let task = tokio_util::task::AbortOnDropHandle::new(task);
            // Targets are read once the storage stream has listed, so no change falls between the two.
            match w.ready_timeout {
                Some(limit) => {
                    let _ = tokio::time::timeout(limit, ready).await;
                }
                None => {
                    let _ = ready.await;
                }
            }
            (Some(task), None)
        }
        // Kept open, so the inbox waits on it as on a quiet storage stream.
        None => (None, Some(storage_tx)),
    };
    let (change_tx, change_rx) = mpsc::unbounded_channel::<Change>();
    generations(&live, Inbox::new(change_rx, storage_rx), change_tx, sink).await
}

/// Every release in every namespace: one stream per kind (see [`WatchScope`]).
fn watch_scope(selection: Option<&ReleaseSelection>) -> WatchScope {
    match selection {
        Some(s) if s.all && s.all_namespaces => WatchScope::AllNamespaces,
        _ => WatchScope::PerNamespace,
    }
}

/// The generations, one after the other, fed by `inbox` (`change_tx` is the caches' sender).
async fn generations<S: LiveSink>(
    live: &LiveLoop,
    mut inbox: Inbox,
    change_tx: mpsc::UnboundedSender<Change>,
    sink: &mut S,
) -> Option<LiveView> {
    let mut outage = OutageClock::default();
    // The event that made the loop start a new generation, if one did.
    let mut cause: Option<Instant> = None;
    loop {
        // One generation: a fresh cache (initial LISTs), every target checked, then events.
        let span = sink.begin();
        let started = Instant::now();
        let cache = Arc::new(
            LiveCache::new(live.cluster.streams().clone(), change_tx.clone(), live.stats.clone())
                .watching(watch_scope(live.selection.as_ref())),
        );
        let loaded = match sink.rules() {
            Ok(rules) => {
                LiveView::load(
                    &live.cluster,
                    cache.clone(),
                    live.selection.clone(),
                    rules,
                    live.log,
                    live.return_freed_memory,
                )
                .instrument(span)
                .await
            }
            Err(e) => Err(e),
        };
        let generation = Generation { cache: &cache, started, cause: cause.take() };
        sink.generation(loaded.as_ref().map_err(String::as_str), generation).await;
        (live.return_freed_memory)();
        let Ok(mut view) = loaded else {
            // Discovery, storage or the rules failed: try again shortly (as a round would).
            tokio::select! {
                _ = tokio::time::sleep(live.retry) => continue,
                stop = sink.interrupt() => match stop {
                    Stop::Resync => continue,
                    Stop::Shutdown => return None,
                },
            }
        };
        let deadline = live.resync.map(|r| tokio::time::Instant::now() + r);
        // A batch since the last return of freed memory checked something.
        let mut checked = false;
        loop {
            // `true`: the resync timer.
            let stop = async {
                let timer = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = timer => (Stop::Resync, true),
                    stop = sink.interrupt() => (stop, false),
                }
            };
            let batch = match inbox.next(stop).await {
                Ok(b) => b,
                Err((Stop::Resync, timer)) => {
                    if timer {
                        (live.log)("live: periodic full resync");
                    }
                    break;
                }
                Err((Stop::Shutdown, _)) => return Some(view),
            };
            if batch.all_storage {
                sink.relisted();
                cause = batch.first;
                break;
            }
            let down = |view: &LiveView| live.stats.failing() > 0 || view.storage_unreadable();
            if batch.tick && live.tick_order == TickOrder::BeforeApply {
                let step = outage.observe(down(&view), Instant::now());
                sink.tick(&view, &batch, step).await;
            }
            let updates = view.apply(&batch).await;
            checked |= !updates.is_empty();
            sink.updates(&view, &batch, updates).await;
            if batch.tick && live.tick_order == TickOrder::AfterApply {
                let step = outage.observe(down(&view), Instant::now());
                sink.tick(&view, &batch, step).await;
            }
            if batch.tick && std::mem::take(&mut checked) {
                (live.return_freed_memory)();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::engine::live::test_cluster::{release, test_cluster};
    use crate::source::helm::memory::MemoryDriver;

    #[test]
    fn an_outage_is_reported_after_the_grace_and_cleared_once_when_it_ends() {
        let mut clock = OutageClock::default();
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        assert_eq!(clock.observe(false, at(0)), Outage::Up);
        assert_eq!(clock.observe(true, at(5)), Outage::Brief, "down: the grace starts");
        assert_eq!(clock.observe(true, at(60)), Outage::Brief, "55 s down");
        assert_eq!(clock.observe(true, at(65)), Outage::Down, "60 s down");
        assert_eq!(clock.observe(true, at(70)), Outage::Down, "reported at every tick while it lasts");
        assert_eq!(clock.observe(false, at(75)), Outage::Recovered);
        assert_eq!(clock.observe(false, at(80)), Outage::Up, "recovered once");
        // A short outage is recovered from too (nothing was reported; the sinks clear nothing).
        assert_eq!(clock.observe(true, at(85)), Outage::Brief);
        assert_eq!(clock.observe(false, at(90)), Outage::Recovered);
        // Its grace starts again from the next failure, not the first.
        assert_eq!(clock.observe(true, at(100)), Outage::Brief);
        assert_eq!(clock.observe(true, at(159)), Outage::Brief);
        assert_eq!(clock.observe(true, at(160)), Outage::Down);
    }

    /// The test cluster with one deployed release whose manifest has no object.
    async fn cluster() -> (Cluster, crate::source::test_server::TestServer) {
        let memory = Arc::new(MemoryDriver::new());
        memory.create(release("web", 1, "deployed"), "deployed");
        test_cluster(memory).await
    }

    fn live(cluster: Cluster, tick_order: TickOrder) -> LiveLoop {
        LiveLoop {
            cluster,
            selection: Some(ReleaseSelection {
                names: Vec::new(),
                all: true,
                all_namespaces: false,
                namespace: "shop".into(),
                revision: None,
                chart_crds: true,
                admission_changes: crate::engine::compare::AdmissionChanges::default(),
            }),
            storage: None,
            stats: Arc::default(),
            resync: None,
            // Long: the script's interrupts decide.
            retry: Duration::from_secs(3600),
            tick_order,
            log: |_| {},
            return_freed_memory: || RETURNED.with(|n| n.set(n.get() + 1)),
        }
    }

    thread_local! {
        /// How often this test's loop gave freed memory back (each test runs on a thread of its own).
        static RETURNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A sink that notes every call and follows a script: what to answer, and when to stop.
    struct Script {
        calls: Vec<String>,
        /// `rules` fails this many times first.
        bad_rules: usize,
        /// What the next interrupts return (nothing: never).
        stops: Mutex<VecDeque<Stop>>,
        /// Called at each generation with its number (from 1); returns what to queue.
        on_generation: fn(usize) -> Option<Stop>,
        on_tick: Option<Stop>,
        on_updates: Option<Stop>,
        /// Release storage's sender: generation 3 says it listed again.
        storage: mpsc::UnboundedSender<StorageChange>,
        relist_at: Instant,
    }

    impl Script {
        fn queue(&self, stop: Option<Stop>) {
            self.stops.lock().unwrap().extend(stop);
        }
    }

    impl LiveSink for Script {
        fn begin(&mut self) -> tracing::Span {
            self.calls.push("begin".into());
            tracing::Span::none()
        }

        fn rules(&mut self) -> Result<Vec<IgnoreRule>, String> {
            self.calls.push("rules".into());
            if self.bad_rules > 0 {
                self.bad_rules -= 1;
                return Err("config unreadable".into());
            }
            Ok(Vec::new())
        }

        async fn generation(&mut self, loaded: Result<&LiveView, &str>, generation: Generation<'_>) {
            let n = self.calls.iter().filter(|c| c.starts_with("generation")).count() + 1;
            let cause = generation.cause.map(|c| c == self.relist_at);
            self.calls.push(match loaded {
                Ok(view) => format!("generation {} release(s), caused by the relist: {cause:?}", view.targets.len()),
                Err(e) => format!("generation failed: {e}"),
            });
            if n == 3 {
                self.storage.send((None, self.relist_at)).unwrap();
            }
            self.queue((self.on_generation)(n));
        }

        async fn updates(&mut self, _view: &LiveView, batch: &Batch, updates: Vec<Update>) {
            self.calls.push(format!("updates {} (tick: {})", updates.len(), batch.tick));
            self.queue(self.on_updates);
        }

        async fn tick(&mut self, _view: &LiveView, batch: &Batch, outage: Outage) {
            assert!(batch.tick);
            self.calls.push(format!("tick {outage:?}"));
            self.queue(self.on_tick);
        }

        fn relisted(&mut self) {
            self.calls.push("relisted".into());
        }

        async fn interrupt(&self) -> Stop {
            let next = self.stops.lock().unwrap().pop_front();
            match next {
                Some(stop) => stop,
                None => std::future::pending().await,
            }
        }
    }

    /// Run the loop's generations over a fresh inbox with `script`.
    async fn drive(
        tick_order: TickOrder,
        script: impl FnOnce(mpsc::UnboundedSender<StorageChange>) -> Script,
    ) -> (Option<LiveView>, Vec<String>) {
        let (cluster, _server) = cluster().await;
        let (storage_tx, storage_rx) = mpsc::unbounded_channel();
        let (change_tx, change_rx) = mpsc::unbounded_channel();
        let mut sink = script(storage_tx);
        let live = live(cluster, tick_order);
        let view = generations(&live, Inbox::new(change_rx, storage_rx), change_tx, &mut sink);
        let view = tokio::time::timeout(Duration::from_secs(20), view).await.expect("the loop stops");
        (view, sink.calls)
    }

    #[tokio::test]
    async fn the_loop_drives_its_sink_through_generations_ticks_resyncs_and_relists_in_order() {
        let (view, calls) = drive(TickOrder::AfterApply, |storage| Script {
            calls: Vec::new(),
            bad_rules: 1,
            stops: Mutex::default(),
            // 1 fails and is retried at an interrupt; 2 ticks, then is resynced at an
            // interrupt; 3 ends with release storage listed again; 4 is shut down.
            on_generation: |n| match n {
                1 => Some(Stop::Resync),
                4 => Some(Stop::Shutdown),
                _ => None,
            },
            on_tick: Some(Stop::Resync),
            on_updates: None,
            storage,
            relist_at: Instant::now(),
        })
        .await;
        let expected = [
            "begin",
            "rules",
            "generation failed: config unreadable",
            "begin",
            "rules",
            "generation 1 release(s), caused by the relist: None",
            // The first tick comes at once; after the batch is applied.
            "updates 0 (tick: true)",
            "tick Up",
            "begin",
            "rules",
            "generation 1 release(s), caused by the relist: None",
            "relisted",
            "begin",
            "rules",
            "generation 1 release(s), caused by the relist: Some(true)",
        ];
        assert_eq!(calls, expected);
        let view = view.expect("shut down with the running generation's view");
        assert_eq!(view.targets.keys().collect::<Vec<_>>(), ["release/shop/web"]);
        // After each generation's first check (4, the failed one too), and in each of the 3
        // that loaded once release storage was read, before the checks; the tick's batch
        // checked nothing, so it gave nothing back.
        assert_eq!(RETURNED.with(std::cell::Cell::get), 4 + 3);
    }

    #[tokio::test]
    async fn a_tick_is_handed_over_before_the_batch_when_asked() {
        let (view, calls) = drive(TickOrder::BeforeApply, |storage| Script {
            calls: Vec::new(),
            bad_rules: 0,
            stops: Mutex::default(),
            on_generation: |_| None,
            on_tick: None,
            on_updates: Some(Stop::Shutdown),
            storage,
            relist_at: Instant::now(),
        })
        .await;
        let expected = [
            "begin",
            "rules",
            "generation 1 release(s), caused by the relist: None",
            "tick Up",
            "updates 0 (tick: true)",
        ];
        assert_eq!(calls, expected);
        assert!(view.is_some());
    }

    #[tokio::test]
    async fn a_shutdown_while_waiting_after_a_failed_generation_returns_no_view() {
        let (view, calls) = drive(TickOrder::AfterApply, |storage| Script {
            calls: Vec::new(),
            bad_rules: 1,
            stops: Mutex::default(),
            on_generation: |_| Some(Stop::Shutdown),
            on_tick: None,
            on_updates: None,
            storage,
            relist_at: Instant::now(),
        })
        .await;
        assert_eq!(calls, ["begin", "rules", "generation failed: config unreadable"]);
        assert!(view.is_none());
    }
}
