//! The drift history's rule (issue 52, docs/history.md): what a round means for each finding.
//! [`transition`] is pure (the records before, what the round saw, the time: the writes); the
//! [`History`] above it is the one way in to a history backend (`source::history`): it loads the
//! records, writes what the rule decided in one transaction and applies the retention, and
//! answers every read (the `history` command, the dashboard's `/api/history`, `release --history`).
//!
//! A finding seen for the first time opens with episode 1; seen again while open, its last-seen
//! time moves (and a new value or manager is one more change); not seen by a round whose check
//! of its target completed, it is resolved; seen again after being resolved, it reopens as one
//! more episode (someone fighting the controller). A target whose check failed says nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::report::ReleaseReport;
use crate::report::history::{
    ChangeRecord, EpisodeEdge, FieldHistory, FindingKey, FindingRecord, FindingWrite, HistoryEntry, HistoryFilter,
    RoundFindings, TargetRef, finding_keys,
};
use crate::source::history::{HistoryBackend, HistoryError, entries_of};

/// The writes one round makes, given every record of its clusters.
pub fn transition(records: &[FindingRecord], round: &RoundFindings, now: i64) -> Vec<FindingWrite> {
    let known: HashMap<&FindingKey, &FindingRecord> = records.iter().map(|r| (&r.key, r)).collect();
    let mut writes = Vec::new();
    let mut seen: BTreeSet<&FindingKey> = BTreeSet::new();
    for o in &round.observations {
        if !seen.insert(&o.key) {
            continue;
        }
        let change =
            ChangeRecord { at: o.changed_at.unwrap_or(now), manager: o.manager.clone(), digest: o.digest.clone() };
        let write = match known.get(&o.key) {
            None => FindingWrite {
                record: FindingRecord {
                    key: o.key.clone(),
                    first_seen: now,
                    last_seen: now,
                    resolved_at: None,
                    since: now,
                    episodes: 1,
                    digest: o.digest.clone(),
                    manager: o.manager.clone(),
                },
                change: Some(change),
                episode: Some(EpisodeEdge::Opened(now)),
            },
            Some(r) if r.resolved_at.is_some() => FindingWrite {
                record: FindingRecord {
                    last_seen: now,
                    resolved_at: None,
                    since: now,
                    episodes: r.episodes.saturating_add(1),
                    digest: o.digest.clone(),
                    manager: o.manager.clone(),
                    ..(*r).clone()
                },
                change: Some(change),
                episode: Some(EpisodeEdge::Opened(now)),
            },
            Some(r) => {
                let changed = r.digest != o.digest || r.manager != o.manager;
                FindingWrite {
                    record: FindingRecord {
                        last_seen: now.max(r.last_seen),
                        digest: o.digest.clone(),
                        manager: o.manager.clone(),
                        ..(*r).clone()
                    },
                    change: changed.then_some(change),
                    episode: None,
                }
            }
        };
        writes.push(write);
    }
    let checked: BTreeSet<(&str, &TargetRef)> = round.checked.iter().map(|(c, t)| (c.as_str(), t)).collect();
    for r in records {
        if r.resolved_at.is_none()
            && !seen.contains(&r.key)
            && checked.contains(&(r.key.cluster.as_str(), &r.key.target))
        {
            writes.push(FindingWrite {
                record: FindingRecord { resolved_at: Some(now), ..r.clone() },
                change: None,
                episode: Some(EpisodeEdge::Closed(now)),
            });
        }
    }
    writes
}

/// What a round changed, for the alerts: findings that came back (episode 2 or more) and when
/// each open finding started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    /// Every open finding after the round: its record (first seen, episodes, manager).
    pub open: Vec<FindingRecord>,
    /// The findings this round reopened (someone fighting the controller).
    pub reopened: Vec<FindingKey>,
}

/// A history: its backend, its retention when written, and when it was last pruned.
pub struct History {
    backend: Box<dyn HistoryBackend>,
    /// How long a resolved finding is kept; `None`: opened only to read, never pruned.
    retention: Option<Duration>,
    pruned: Option<i64>,
}

/// Retention is applied at most this often.
const PRUNE_EVERY: i64 = 3600;

impl History {
    /// A history to write (`watch`, `serve`): what is resolved is kept `retention`.
    pub fn writer(backend: Box<dyn HistoryBackend>, retention: Duration) -> History {
        History { backend, retention: Some(retention), pruned: None }
    }

    /// A history only to read (`history`, `release --history`).
    pub fn reader(backend: Box<dyn HistoryBackend>) -> History {
        History { backend, retention: None, pruned: None }
    }

    /// The file or database, as errors name it.
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// Record one round at `now` (Unix seconds): one transaction.
    pub async fn record(&mut self, round: &RoundFindings, now: i64) -> Result<Recorded, HistoryError> {
        let clusters: BTreeSet<&str> = round
            .checked
            .iter()
            .map(|(c, _)| c.as_str())
            .chain(round.observations.iter().map(|o| o.key.cluster.as_str()))
            .collect();
        let mut records = Vec::new();
        for c in clusters {
            records.extend(self.backend.records(c).await?);
        }
        let writes = transition(&records, round, now);
        self.backend.apply(&writes).await?;
        if let Some(retention) = self.retention
            && self.pruned.is_none_or(|at| now - at >= PRUNE_EVERY)
        {
            let keep = i64::try_from(retention.as_secs()).unwrap_or(i64::MAX);
            self.backend.prune(now.saturating_sub(keep)).await?;
            self.pruned = Some(now);
        }
        let mut open: BTreeMap<FindingKey, FindingRecord> =
            records.into_iter().filter(|r| r.resolved_at.is_none()).map(|r| (r.key.clone(), r)).collect();
        let mut reopened = Vec::new();
        for w in writes {
            if w.record.resolved_at.is_some() {
                open.remove(&w.record.key);
                continue;
            }
            if w.record.episodes >= 2 && matches!(w.episode, Some(EpisodeEdge::Opened(_))) {
                reopened.push(w.record.key.clone());
            }
            open.insert(w.record.key.clone(), w.record);
        }
        Ok(Recorded { open: open.into_values().collect(), reopened })
    }

    /// The entries `filter` accepts (unsorted), read in one transaction.
    pub async fn entries(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryEntry>, HistoryError> {
        Ok(entries_of(self.backend.tables(filter.cluster.as_deref()).await?, filter))
    }

    /// Give each drifted field of one cluster's release reports the lifecycle of its open finding
    /// (`release --history`): since when (its current episode), first seen, episodes, managers.
    /// A field without an open finding is left as it is. Keys are those `watch` and `serve`
    /// record ([`crate::report::history::finding_keys`]). Returns how many fields were annotated.
    pub async fn annotate(
        &mut self,
        reports: &mut [ReleaseReport],
        cluster: &str,
        now: i64,
    ) -> Result<usize, HistoryError> {
        let entries = self.entries(&HistoryFilter { cluster: Some(cluster.to_string()), ..Default::default() }).await?;
        Ok(annotate(reports, cluster, &entries, now))
    }
}

/// [`History::annotate`] over the entries read.
fn annotate(reports: &mut [ReleaseReport], cluster: &str, entries: &[HistoryEntry], now: i64) -> usize {
    let open: HashMap<FindingKey, &HistoryEntry> = entries
        .iter()
        .filter(|e| e.is_open())
        .map(|e| {
            let key = FindingKey {
                cluster: e.cluster.clone(),
                target: e.target.clone(),
                object: e.object.clone(),
                path: e.path.clone(),
            };
            (key, e)
        })
        .collect();
    let mut annotated = 0;
    for report in reports {
        let Some(target) = TargetRef::of(&report.origin.clone().into()) else { continue };
        for (key, o, f) in finding_keys(cluster, &target, &report.objects) {
            let (Some(f), Some(entry)) = (f, open.get(&key)) else { continue };
            let Some(since) = entry.open_since() else { continue };
            report.objects[o].fields[f].history = Some(FieldHistory {
                since: crate::report::duration::rfc3339_utc(since),
                first_seen: entry.first_seen.clone(),
                last_seen: entry.last_seen.clone(),
                episodes: entry.episodes,
                managers: entry.managers.clone(),
                age: now.saturating_sub(since),
            });
            annotated += 1;
        }
    }
    annotated
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::history::Observation;
    use crate::source::history::memory::MemoryBackend;

    fn key(path: &str) -> FindingKey {
        FindingKey::example(path)
    }

    fn round(seen: &[(&str, &str, &str)]) -> RoundFindings {
        RoundFindings {
            checked: vec![("prod".into(), key("").target)],
            observations: seen
                .iter()
                .map(|(path, digest, manager)| Observation {
                    key: key(path),
                    digest: (*digest).into(),
                    manager: Some((*manager).into()),
                    changed_at: None,
                })
                .collect(),
        }
    }

    /// Apply `writes` to `records` as a store would.
    fn apply(records: &mut Vec<FindingRecord>, writes: &[FindingWrite]) {
        for w in writes {
            match records.iter_mut().find(|r| r.key == w.record.key) {
                Some(r) => *r = w.record.clone(),
                None => records.push(w.record.clone()),
            }
        }
    }

    #[test]
    fn open_resolved_reopened_is_two_episodes() {
        let mut records = Vec::new();
        let w = transition(&records, &round(&[("spec.replicas", "d5", "kubectl-scale")]), 100);
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].record.episodes, w[0].record.first_seen), (1, 100));
        assert_eq!(w[0].episode, Some(EpisodeEdge::Opened(100)));
        assert!(w[0].change.is_some());
        apply(&mut records, &w);
        // Seen again, unchanged: last seen moves, no change, no episode.
        let w = transition(&records, &round(&[("spec.replicas", "d5", "kubectl-scale")]), 200);
        assert_eq!((w[0].record.last_seen, w[0].change.is_none(), w[0].episode), (200, true, None));
        apply(&mut records, &w);
        // Gone from a completed check: resolved.
        let w = transition(&records, &round(&[]), 300);
        assert_eq!((w[0].record.resolved_at, w[0].episode), (Some(300), Some(EpisodeEdge::Closed(300))));
        apply(&mut records, &w);
        // Nothing more to resolve.
        assert!(transition(&records, &round(&[]), 350).is_empty());
        // Back: episode 2, first seen kept.
        let w = transition(&records, &round(&[("spec.replicas", "d7", "kubectl-scale")]), 400);
        let r = &w[0].record;
        assert_eq!((r.episodes, r.first_seen, r.last_seen, r.resolved_at), (2, 100, 400, None));
        assert_eq!(r.since, 400, "the new episode's start");
        assert_eq!(w[0].episode, Some(EpisodeEdge::Opened(400)));
        apply(&mut records, &w);
        // A new value while open is one more change, not an episode.
        let w = transition(&records, &round(&[("spec.replicas", "d9", "kubectl-edit")]), 500);
        assert_eq!(
            (w[0].record.episodes, w[0].episode, w[0].change.as_ref().map(|c| c.digest.as_str())),
            (2, None, Some("d9"))
        );
    }

    #[test]
    fn a_failed_check_resolves_nothing() {
        let records = vec![FindingRecord {
            key: key("spec.replicas"),
            first_seen: 1,
            last_seen: 1,
            resolved_at: None,
            since: 1,
            episodes: 1,
            digest: "d".into(),
            manager: None,
        }];
        let failed = RoundFindings::default();
        assert!(transition(&records, &failed, 10).is_empty());
        // Another cluster's round neither.
        let mut other = round(&[]);
        other.checked[0].0 = "staging".into();
        assert!(transition(&records, &other, 10).is_empty());
    }

    /// A writer with `retention` over `backend`, and a reader of the same tables.
    fn over(backend: &MemoryBackend, retention: Duration) -> (History, History) {
        (History::writer(Box::new(backend.clone()), retention), History::reader(Box::new(backend.clone())))
    }

    #[tokio::test]
    async fn a_history_keeps_episodes_managers_and_digests() {
        let backend = MemoryBackend::default();
        let (mut history, mut reader) = over(&backend, Duration::from_secs(90 * 86400));
        history.record(&round(&[("spec.replicas", "d5", "kubectl-scale")]), 1000).await.unwrap();
        history.record(&round(&[]), 2000).await.unwrap();
        let recorded = history.record(&round(&[("spec.replicas", "d6", "kubectl-edit")]), 3000).await.unwrap();
        assert_eq!(recorded.reopened, vec![key("spec.replicas")]);
        assert_eq!(recorded.open.len(), 1);
        assert_eq!((recorded.open[0].digest.as_str(), recorded.open[0].since), ("d6", 3000));
        let entries = reader.entries(&HistoryFilter::default()).await.unwrap();
        assert_eq!(entries.len(), 1);
        let e = &entries[0];
        assert_eq!((e.episodes, e.managers.clone()), (2, vec!["kubectl-scale".to_string(), "kubectl-edit".into()]));
        assert_eq!(e.first_seen, crate::report::duration::rfc3339_utc(1000));
        assert_eq!(e.last_seen, crate::report::duration::rfc3339_utc(3000));
        assert!(e.resolved_at.is_none());
        assert_eq!(e.intervals.len(), 2);
        assert_eq!((e.intervals[0].ended, e.intervals[1].started), (Some(2000), 3000));
        // Filters: another release, another namespace, another cluster.
        for f in [
            HistoryFilter { target: Some("other".into()), ..Default::default() },
            HistoryFilter { namespace: Some("other".into()), ..Default::default() },
            HistoryFilter { cluster: Some("staging".into()), ..Default::default() },
        ] {
            assert!(reader.entries(&f).await.unwrap().is_empty(), "{f:?}");
        }
        // Another writer goes on from the same history; resolved, then pruned by the retention
        // once it is older than it.
        let (mut history, mut reader) = over(&backend, Duration::from_secs(100));
        history.record(&round(&[]), 4000).await.unwrap();
        assert_eq!(reader.entries(&HistoryFilter::default()).await.unwrap().len(), 1, "resolved, kept");
        let mut history = History { pruned: None, ..history };
        history.record(&round(&[]), 4200).await.unwrap();
        assert!(reader.entries(&HistoryFilter::default()).await.unwrap().is_empty(), "pruned after retention");
    }

    /// A release report of Deployment shop/web with these drifted fields (and one ignored).
    fn release_report(paths: &[&str]) -> crate::report::ReleaseReport {
        use crate::report::field::Change;
        use crate::report::{FieldReport, ObjectReport, ObjectState, ReleaseOrigin, Status, TargetReport};
        let field = |path: &str, reason: Option<&str>| FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change: Change::Changed,
            desired: Some(serde_json::json!(1)),
            live: Some(serde_json::json!(2)),
            manager: Some("kubectl-edit".into()),
            time: None,
            reason: reason.map(str::to_string),
            from_revision: None,
            admission: None,
        };
        let mut fields: Vec<FieldReport> = paths.iter().map(|p| field(p, None)).collect();
        fields.push(field("spec.minReadySeconds", Some("ignored by a rule")));
        TargetReport {
            objects: vec![ObjectReport {
                fields,
                ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
            }],
            ..TargetReport::new(
                ReleaseOrigin { name: "shop".into(), namespace: "shop".into(), ..Default::default() },
                Status::Drifted,
            )
        }
    }

    #[tokio::test]
    async fn release_fields_get_their_open_finding() {
        // Recorded as watch records a release: its report, its cluster named.
        let round = |paths: &[&str]| {
            let mut r = release_report(paths).to_any();
            r.cluster = "prod".into();
            RoundFindings::of([&r])
        };
        let (mut history, mut reader) = over(&MemoryBackend::default(), Duration::from_secs(90 * 86400));
        history.record(&round(&["spec.replicas", "spec.paused"]), 1000).await.unwrap();
        history.record(&round(&["spec.paused"]), 2000).await.unwrap();
        history.record(&round(&["spec.replicas"]), 3000).await.unwrap();

        // Now: spec.replicas open (episode 2, since 3000), spec.paused resolved, spec.strategy never seen.
        let mut reports = vec![release_report(&["spec.replicas", "spec.paused", "spec.strategy"])];
        assert_eq!(reader.annotate(&mut reports, "prod", 3600).await.unwrap(), 1);
        let fields = &reports[0].objects[0].fields;
        let h = fields[0].history.as_ref().expect("spec.replicas is open");
        assert_eq!(h.since, crate::report::duration::rfc3339_utc(3000));
        assert_eq!(h.first_seen, crate::report::duration::rfc3339_utc(1000));
        assert_eq!((h.episodes, h.managers.clone(), h.age), (2, vec!["kubectl-edit".to_string()], 600));
        assert!(fields[1].history.is_none(), "a resolved finding is not shown");
        assert!(fields[2].history.is_none(), "a field the history never saw");
        assert!(fields[3].history.is_none(), "an ignored field");
        // Another cluster's history says nothing about this one.
        let mut other = vec![release_report(&["spec.replicas"])];
        assert_eq!(reader.annotate(&mut other, "staging", 3600).await.unwrap(), 0);
        assert!(other[0].objects[0].fields[0].history.is_none());
        // In JSON: the history object on the field, with the `history -o json` names.
        let json = serde_json::to_value(&reports[0]).unwrap();
        let field = &json["objects"][0]["fields"][0]["history"];
        assert_eq!(field["episodes"], 2);
        assert_eq!(field["since"], "1970-01-01T00:50:00Z");
        assert!(json["objects"][0]["fields"][1].get("history").is_none());
    }
}
