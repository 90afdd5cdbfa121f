//! The drift history's data (issue 52, docs/history.md): a finding's identity ([`FindingKey`]:
//! cluster, target, object, field path), what one round saw of it ([`Observation`]: a digest of
//! the value as the report shows it, never the value), what the store keeps of it
//! ([`FindingRecord`]: first and last seen, resolved, episodes), and the `history` report
//! ([`HistoryReport`], its JSON pinned by a schema snapshot).
//!
//! Values are never kept: [`Observation::from_report`] digests what the report shows (Secret
//! values are already redacted there), which is enough to tell one change from the next.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ObjectState, Origin, Status, TargetReport};

/// The `schemaVersion` of the `history` report's JSON.
pub const HISTORY_SCHEMA_VERSION: u32 = 1;

/// What a finding is about: a release, a manifests file or PATH, a Flux Kustomization, an Argo
/// CD Application.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TargetRef {
    /// As alerts and metrics name it (`release`, `file`, `manifests`, `flux-kustomization`, ...).
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl TargetRef {
    /// The target a report is about; `None` for the whole cluster (a round that could not list).
    pub fn of(origin: &Origin) -> Option<TargetRef> {
        let kind = origin.kind().to_string();
        match origin {
            Origin::Cluster => None,
            Origin::Release(r) => Some(TargetRef { kind, name: r.name.clone(), namespace: Some(r.namespace.clone()) }),
            Origin::File(f) if f.gitops.is_some() => {
                // A GitOps object's path is NAMESPACE/NAME.
                let (namespace, name) = match f.path.split_once('/') {
                    Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
                    None => (None, f.path.clone()),
                };
                Some(TargetRef { kind, name, namespace })
            }
            _ => Some(TargetRef { kind, name: origin.name(), namespace: None }),
        }
    }
}

/// The object a finding is in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// One finding's identity: the same key in two rounds is the same finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FindingKey {
    pub cluster: String,
    pub target: TargetRef,
    pub object: ObjectRef,
    /// The field path as reports write it; empty for a whole object (missing or extra).
    pub path: String,
}

impl FindingKey {
    /// A stable id of the key (32 hex digits), the store's primary key: the same in SQLite and
    /// PostgreSQL, so both hold the same rows.
    pub fn id(&self) -> String {
        let text = [
            self.cluster.as_str(),
            &self.target.kind,
            self.target.namespace.as_deref().unwrap_or(""),
            &self.target.name,
            &self.object.kind,
            self.object.namespace.as_deref().unwrap_or(""),
            &self.object.name,
            &self.path,
        ]
        .join("\u{0}");
        hex16(&Sha256::digest(text.as_bytes()))
    }

    /// For tests of the history: the field `path` of Deployment shop/web in release shop/shop of
    /// cluster prod.
    #[cfg(test)]
    pub(crate) fn example(path: &str) -> FindingKey {
        FindingKey {
            cluster: "prod".into(),
            target: TargetRef { kind: "release".into(), name: "shop".into(), namespace: Some("shop".into()) },
            object: ObjectRef { kind: "Deployment".into(), namespace: Some("shop".into()), name: "web".into() },
            path: path.into(),
        }
    }
}

fn hex16(digest: &[u8]) -> String {
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// What one round saw of one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub key: FindingKey,
    /// A digest of the difference as the report shows it (change, desired, live: Secret values
    /// already redacted); never the value.
    pub digest: String,
    /// The field manager that owns the field now (managedFields), if known.
    pub manager: Option<String>,
    /// When that manager last wrote the object (Unix seconds), if known.
    pub changed_at: Option<i64>,
}

/// The targets a round checked (their open findings that were not seen again are resolved), and
/// what it saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundFindings {
    /// (cluster, target) of every target whose check completed (an error says nothing about
    /// drift: its findings are left as they were).
    pub checked: Vec<(String, TargetRef)>,
    pub observations: Vec<Observation>,
}

impl RoundFindings {
    /// Add one target's result (its `cluster` set).
    pub fn add(&mut self, report: &TargetReport) {
        if report.status == Status::Error {
            return;
        }
        let Some(target) = TargetRef::of(&report.origin) else { return };
        self.checked.push((report.cluster.clone(), target.clone()));
        for (key, o, f) in finding_keys(&report.cluster, &target, &report.objects) {
            let o = &report.objects[o];
            let observation = match f {
                // A whole object (missing, extra): one finding without a path.
                None => {
                    Observation { key, digest: digest(&[&format!("{:?}", o.state)]), manager: None, changed_at: None }
                }
                Some(f) => {
                    let f = &o.fields[f];
                    let show = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
                    Observation {
                        key,
                        digest: digest(&[&format!("{:?}", f.change), &show(&f.desired), &show(&f.live)]),
                        manager: f.manager.clone(),
                        changed_at: f.time.as_deref().and_then(super::duration::parse_timestamp),
                    }
                }
            };
            self.observations.push(observation);
        }
    }

    /// The findings of several results.
    pub fn of<'a>(reports: impl IntoIterator<Item = &'a TargetReport>) -> RoundFindings {
        let mut round = RoundFindings::default();
        for r in reports {
            round.add(r);
        }
        round
    }
}

/// The findings of one target's objects, each with its key and where it is (the object's index,
/// and the field's, `None` for a whole object missing or extra): drift by hand only. The one place
/// a finding's key is built, for what `watch` and `serve` record and what `release --history`
/// looks up.
pub fn finding_keys(
    cluster: &str,
    target: &TargetRef,
    objects: &[super::ObjectReport],
) -> Vec<(FindingKey, usize, Option<usize>)> {
    let mut keys = Vec::new();
    for (i, o) in objects.iter().enumerate().filter(|(_, o)| o.is_hand_drift()) {
        let object = ObjectRef { kind: o.kind.clone(), namespace: o.namespace.clone(), name: o.name.clone() };
        let key = |path: String| FindingKey {
            cluster: cluster.to_string(),
            target: target.clone(),
            object: object.clone(),
            path,
        };
        let fields: Vec<usize> = (0..o.fields.len()).filter(|&f| o.fields[f].is_hand_drift()).collect();
        if fields.is_empty() {
            if o.state != ObjectState::Ignored {
                keys.push((key(String::new()), i, None));
            }
            continue;
        }
        keys.extend(fields.into_iter().map(|f| (key(o.fields[f].path.to_string()), i, Some(f))));
    }
    keys
}

/// The lifecycle of a drifted field's open finding, from the history (`release --history`;
/// `history` in a field's JSON): the names and forms of the `history -o json` contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldHistory {
    /// When the current episode started (RFC 3339, UTC).
    pub since: String,
    pub first_seen: String,
    pub last_seen: String,
    pub episodes: u32,
    /// The field managers that made its changes, first one first.
    pub managers: Vec<String>,
    /// How long the current episode had lasted when the report was made, in seconds (the text
    /// output's `drifted since 3d 4h`; not in the JSON, which has `since`).
    #[serde(skip)]
    pub age: i64,
}

fn digest(parts: &[&str]) -> String {
    hex16(&Sha256::digest(parts.join("\u{0}").as_bytes()))
}

/// What the store keeps of one finding (times in Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRecord {
    pub key: FindingKey,
    pub first_seen: i64,
    pub last_seen: i64,
    /// `None` while the finding is open.
    pub resolved_at: Option<i64>,
    /// When its current (or last) episode started.
    pub since: i64,
    /// How many times it appeared (1, then one more each time it came back after being resolved).
    pub episodes: u32,
    /// The last value's digest and manager.
    pub digest: String,
    pub manager: Option<String>,
}

/// One change of a finding: when, by whom, to which value (its digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRecord {
    pub at: i64,
    pub manager: Option<String>,
    pub digest: String,
}

/// One interval a finding was open (`ended` `None`: still open), in Unix seconds. In JSON
/// (`intervals` of a `history` entry): `{"start": RFC 3339, "end": RFC 3339 or null}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "IntervalJson", try_from = "IntervalJson")]
pub struct Interval {
    pub started: i64,
    pub ended: Option<i64>,
}

/// An [`Interval`] as JSON writes it: times as the entry's other times are written.
#[derive(Serialize, Deserialize)]
struct IntervalJson {
    start: String,
    end: Option<String>,
}

impl From<Interval> for IntervalJson {
    fn from(i: Interval) -> IntervalJson {
        let ts = super::duration::rfc3339_utc;
        IntervalJson { start: ts(i.started), end: i.ended.map(ts) }
    }
}

impl TryFrom<IntervalJson> for Interval {
    type Error = String;

    fn try_from(j: IntervalJson) -> Result<Interval, String> {
        let parse = |t: &str| super::duration::parse_timestamp(t).ok_or_else(|| format!("not an RFC 3339 time: {t}"));
        Ok(Interval { started: parse(&j.start)?, ended: j.end.as_deref().map(parse).transpose()? })
    }
}

/// An episode starting or ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpisodeEdge {
    Opened(i64),
    Closed(i64),
}

/// What one round writes for one finding: its record as it is now, and the change and episode
/// edge it adds (each finding's writes are one statement each, in one transaction per round).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingWrite {
    pub record: FindingRecord,
    pub change: Option<ChangeRecord>,
    pub episode: Option<EpisodeEdge>,
}

/// Which entries the `history` command, `/api/history` and `release --history` read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only this cluster.
    pub cluster: Option<String>,
    /// Only targets in this namespace (`-n`; `None`: every namespace, `-A`).
    pub namespace: Option<String>,
    /// Only targets of this name (a RELEASE).
    pub target: Option<String>,
    /// Only findings open now or seen at or after this time (Unix seconds).
    pub since: Option<i64>,
}

impl HistoryFilter {
    /// Whether a record passes the filter.
    pub fn accepts(&self, r: &FindingRecord) -> bool {
        self.cluster.as_ref().is_none_or(|c| *c == r.key.cluster)
            && self.namespace.as_ref().is_none_or(|n| r.key.target.namespace.as_ref() == Some(n))
            && self.target.as_ref().is_none_or(|t| *t == r.key.target.name)
            && self.since.is_none_or(|s| r.resolved_at.is_none() || r.last_seen >= s)
    }
}

/// The `history` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryReport {
    pub schema_version: u32,
    /// Newest first (by last seen), grouped by target.
    pub entries: Vec<HistoryEntry>,
}

/// One finding's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub cluster: String,
    pub target: TargetRef,
    pub object: ObjectRef,
    pub path: String,
    /// RFC 3339, UTC.
    pub first_seen: String,
    pub last_seen: String,
    /// Null while the finding is open.
    pub resolved_at: Option<String>,
    pub episodes: u32,
    /// The field managers that made its changes, first one first.
    pub managers: Vec<String>,
    /// The intervals it was open that the store still keeps (retention forgets older ones),
    /// oldest first; the last one's `end` is null while the finding is open. Added to the
    /// pinned contract (a field more, none renamed): the dashboard's strips draw them.
    #[serde(default)]
    pub intervals: Vec<Interval>,
}

impl HistoryEntry {
    /// Still drifted.
    pub fn is_open(&self) -> bool {
        self.resolved_at.is_none()
    }

    /// The entry of a record, with its managers and intervals.
    pub fn new(record: &FindingRecord, managers: Vec<String>, intervals: Vec<Interval>) -> HistoryEntry {
        let ts = super::duration::rfc3339_utc;
        HistoryEntry {
            cluster: record.key.cluster.clone(),
            target: record.key.target.clone(),
            object: record.key.object.clone(),
            path: record.key.path.clone(),
            first_seen: ts(record.first_seen),
            last_seen: ts(record.last_seen),
            resolved_at: record.resolved_at.map(ts),
            episodes: record.episodes,
            managers,
            intervals,
        }
    }

    /// When the current episode started (Unix seconds): the last interval's start, else the first
    /// seen time.
    pub fn open_since(&self) -> Option<i64> {
        if !self.is_open() {
            return None;
        }
        self.intervals.last().map(|i| i.started).or_else(|| super::duration::parse_timestamp(&self.first_seen))
    }
}

impl HistoryReport {
    /// The report of these entries, in its order: targets by their newest finding, newest first;
    /// a target's findings newest first.
    pub fn new(mut entries: Vec<HistoryEntry>) -> HistoryReport {
        use std::collections::BTreeMap;
        let mut newest: BTreeMap<(String, TargetRef), String> = BTreeMap::new();
        for e in &entries {
            let n = newest.entry((e.cluster.clone(), e.target.clone())).or_default();
            if e.last_seen > *n {
                *n = e.last_seen.clone();
            }
        }
        entries.sort_by(|a, b| {
            let ta = &newest[&(a.cluster.clone(), a.target.clone())];
            let tb = &newest[&(b.cluster.clone(), b.target.clone())];
            tb.cmp(ta)
                .then_with(|| (&a.cluster, &a.target).cmp(&(&b.cluster, &b.target)))
                .then_with(|| b.last_seen.cmp(&a.last_seen))
                .then_with(|| (&a.object, &a.path).cmp(&(&b.object, &b.path)))
        });
        HistoryReport { schema_version: HISTORY_SCHEMA_VERSION, entries }
    }

    /// Drifted now or not: the `history` command's exit status (1 when a finding is open).
    pub fn status(&self) -> Status {
        if self.entries.iter().any(HistoryEntry::is_open) { Status::Drifted } else { Status::Clean }
    }
}

/// How long something has lasted, as "since" texts show it: `45s`, `12m`, `5h 3m`, `3d 4h`.
pub fn elapsed(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        s => format!("{}d {}h", s / 86400, s % 86400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::field::Change;
    use crate::report::{FieldReport, ObjectReport, ReleaseOrigin};
    use serde_json::json;

    fn release_report(live: serde_json::Value) -> TargetReport {
        let field = FieldReport {
            history: None,
            path: "data.password".parse().unwrap(),
            change: Change::Changed,
            desired: Some(json!(crate::report::redaction(b"old-secret"))),
            live: Some(live),
            manager: Some("kubectl-edit".into()),
            time: Some("2026-12-01T10:00:00Z".into()),
            reason: None,
            from_revision: None,
            admission: None,
        };
        let missing = ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "gone", ObjectState::Missing);
        let mut r = TargetReport {
            objects: vec![
                ObjectReport {
                    fields: vec![field],
                    ..ObjectReport::new("v1", "Secret", Some("shop".into()), "creds", ObjectState::Changed)
                },
                missing,
            ],
            ..TargetReport::new(
                Origin::Release(ReleaseOrigin { name: "shop".into(), namespace: "shop".into(), ..Default::default() }),
                Status::Drifted,
            )
        };
        r.cluster = "prod".into();
        r
    }

    #[test]
    fn a_round_keeps_digests_of_what_the_report_shows_never_a_value() {
        let shown = json!(crate::report::redaction(b"canary-new-secret"));
        let round = RoundFindings::of([&release_report(shown.clone())]);
        assert_eq!(round.checked.len(), 1);
        assert_eq!(round.observations.len(), 2, "{round:?}");
        let field = &round.observations[0];
        assert_eq!(field.key.path, "data.password");
        assert_eq!(field.manager.as_deref(), Some("kubectl-edit"));
        assert_eq!(field.changed_at, crate::report::duration::parse_timestamp("2026-12-01T10:00:00Z"));
        assert_eq!(field.digest.len(), 32);
        let debug = format!("{round:?}");
        assert!(!debug.contains("canary") && !debug.contains(shown.as_str().unwrap()), "{debug}");
        assert_eq!(round.observations[1].key.path, "", "a missing object is one finding without a path");
        // Another value, another digest; the same value, the same one.
        let other = RoundFindings::of([&release_report(json!(crate::report::redaction(b"other")))]);
        assert_ne!(other.observations[0].digest, field.digest);
        assert_eq!(RoundFindings::of([&release_report(shown)]).observations[0].digest, field.digest);
    }

    #[test]
    fn an_error_checks_nothing() {
        let mut r = release_report(json!(1));
        r.status = Status::Error;
        assert_eq!(RoundFindings::of([&r]), RoundFindings::default());
    }

    #[test]
    fn history_report_schema() {
        let key = |name: &str, path: &str| FindingKey {
            cluster: "prod".into(),
            target: TargetRef { kind: "release".into(), name: "shop".into(), namespace: Some("shop".into()) },
            object: ObjectRef { kind: "Deployment".into(), namespace: Some("shop".into()), name: name.into() },
            path: path.into(),
        };
        let record = |k: FindingKey, first: i64, last: i64, resolved: Option<i64>, episodes: u32| FindingRecord {
            key: k,
            first_seen: first,
            last_seen: last,
            resolved_at: resolved,
            since: first,
            episodes,
            digest: "d".into(),
            manager: None,
        };
        let report = HistoryReport::new(vec![
            HistoryEntry::new(
                &record(key("web", "spec.replicas"), 1_764_000_000, 1_764_500_000, Some(1_764_500_060), 1),
                vec!["kubectl-scale".into()],
                vec![Interval { started: 1_764_000_000, ended: Some(1_764_500_060) }],
            ),
            HistoryEntry::new(
                &record(
                    key("web", "spec.template.spec.containers[name=web].image"),
                    1_764_000_000,
                    1_764_600_000,
                    None,
                    2,
                ),
                vec!["kubectl-edit".into(), "kubectl-set".into()],
                vec![
                    Interval { started: 1_764_000_000, ended: Some(1_764_100_000) },
                    Interval { started: 1_764_200_000, ended: None },
                ],
            ),
        ]);
        assert_eq!(report.status(), Status::Drifted);
        assert_eq!(report.entries[0].episodes, 2, "newest first");
        let json = serde_json::to_string_pretty(&report).unwrap();
        // The intervals read back as they were written.
        let back: HistoryReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        insta::assert_snapshot!("history_report_schema", json);
    }
}
