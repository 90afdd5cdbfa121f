//! The `history` report as text (a timeline per target, newest first) and CSV (one row per
//! finding). JSON is the report serialised as is.

use std::io::{self, Write};

use super::csv::line;
use crate::report::history::{HistoryEntry, HistoryReport, elapsed};

/// The timeline: one block per target (cluster, kind, namespace/name), its findings below,
/// newest first; `now` (Unix seconds) dates the open ones.
pub fn text(report: &HistoryReport, now: i64, out: &mut impl Write) -> io::Result<()> {
    if report.entries.is_empty() {
        return writeln!(out, "No drift recorded.");
    }
    let mut last: Option<(&str, &crate::report::history::TargetRef)> = None;
    for e in &report.entries {
        if last != Some((e.cluster.as_str(), &e.target)) {
            if last.is_some() {
                writeln!(out)?;
            }
            let ns = e.target.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
            let cluster = if e.cluster.is_empty() { String::new() } else { format!(" (cluster {})", e.cluster) };
            writeln!(out, "{} {ns}{}{cluster}", e.target.kind, e.target.name)?;
            last = Some((e.cluster.as_str(), &e.target));
        }
        writeln!(out, "  {}", finding_line(e, now))?;
    }
    let open = report.entries.iter().filter(|e| e.is_open()).count();
    writeln!(out, "\n{} finding(s), {open} open", report.entries.len())
}

/// `Deployment shop/web spec.replicas: drifted since ... (3d 4h), 2 episodes, by kubectl-edit`.
fn finding_line(e: &HistoryEntry, now: i64) -> String {
    let ns = e.object.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default();
    let path = if e.path.is_empty() { String::new() } else { format!(" {}", e.path) };
    let state = match (&e.resolved_at, e.open_since()) {
        (None, Some(since)) => {
            format!("drifted since {} ({})", crate::report::duration::rfc3339_utc(since), elapsed(now - since))
        }
        (None, None) => format!("drifted, last seen {}", e.last_seen),
        (Some(at), _) => format!("resolved {at} (first seen {})", e.first_seen),
    };
    let episodes = if e.episodes == 1 { "1 episode".to_string() } else { format!("{} episodes", e.episodes) };
    let by = if e.managers.is_empty() { String::new() } else { format!(", by {}", e.managers.join(", ")) };
    format!("{} {ns}{}{path}: {state}, {episodes}{by}", e.object.kind, e.object.name)
}

const HEADER: [&str; 14] = [
    "cluster",
    "target_kind",
    "target_namespace",
    "target",
    "kind",
    "namespace",
    "name",
    "path",
    "first_seen",
    "last_seen",
    "resolved_at",
    "episodes",
    "managers",
    "open",
];

/// One row per finding, in the report's order; managers joined by `;`.
pub fn csv(report: &HistoryReport, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{}", line(&HEADER))?;
    for e in &report.entries {
        let cells = [
            e.cluster.clone(),
            e.target.kind.clone(),
            e.target.namespace.clone().unwrap_or_default(),
            e.target.name.clone(),
            e.object.kind.clone(),
            e.object.namespace.clone().unwrap_or_default(),
            e.object.name.clone(),
            e.path.clone(),
            e.first_seen.clone(),
            e.last_seen.clone(),
            e.resolved_at.clone().unwrap_or_default(),
            e.episodes.to_string(),
            e.managers.join(";"),
            e.is_open().to_string(),
        ];
        writeln!(out, "{}", line(&cells))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::history::{FindingKey, FindingRecord, Interval, ObjectRef, TargetRef};

    fn report() -> HistoryReport {
        let key = FindingKey {
            cluster: "prod".into(),
            target: TargetRef { kind: "release".into(), name: "shop".into(), namespace: Some("shop".into()) },
            object: ObjectRef { kind: "Deployment".into(), namespace: Some("shop".into()), name: "web".into() },
            path: "spec.replicas".into(),
        };
        let record = FindingRecord {
            key,
            first_seen: 1_000_000,
            last_seen: 1_300_000,
            resolved_at: None,
            since: 1_200_000,
            episodes: 2,
            digest: "d".into(),
            manager: None,
        };
        let intervals =
            vec![Interval { started: 1_000_000, ended: Some(1_100_000) }, Interval { started: 1_200_000, ended: None }];
        HistoryReport::new(vec![HistoryEntry::new(&record, vec!["kubectl-edit".into()], intervals)])
    }

    #[test]
    fn text_says_since_when_how_often_and_by_whom() {
        let mut out = Vec::new();
        text(&report(), 1_200_000 + 3 * 86400 + 4 * 3600, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("release shop/shop (cluster prod)\n"), "{out}");
        assert!(out.contains("Deployment shop/web spec.replicas: drifted since 1970-01-14T21:20:00Z (3d 4h), 2 episodes, by kubectl-edit"), "{out}");
        assert!(out.ends_with("1 finding(s), 1 open\n"), "{out}");
    }

    #[test]
    fn csv_has_a_row_per_finding() {
        let mut out = Vec::new();
        csv(&report(), &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[1].starts_with("prod,release,shop,shop,Deployment,shop,web,spec.replicas,"), "{out}");
        assert!(lines[1].ends_with(",,2,kubectl-edit,true"), "{out}");
    }
}
