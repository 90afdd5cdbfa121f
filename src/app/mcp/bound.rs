//! Bounded answers: an assistant's context is small, a cluster's report is not. Each tool's
//! report keeps at most `limit` releases, files or rows per cluster (findings first: errors, then
//! drift or what is behind, then the rest), and fewer while its JSON is larger than a byte budget;
//! the report's own summary still counts everything. What was left out is said in a `truncated`
//! note beside the report, with how to narrow the question.

use serde::Serialize;
use serde_json::Value;

use crate::report::fleet::Fleet;
use crate::report::orphans::{EvidenceClass, OrphanReport};
use crate::report::versions::{VersionStatus, VersionsReport};
use crate::report::{DriftReport, ManifestsReport, Status};

/// The largest answer's JSON, in bytes (about 64k tokens): past it, fewer rows are kept.
pub(crate) const MAX_JSON_BYTES: usize = 256 * 1024;

/// A report whose main list can be cut: which list, and which of its rows matter most.
pub(crate) trait Rows {
    type Row;
    /// What its rows are called in a note (`releases`).
    const NAME: &'static str;
    fn rows(&mut self) -> &mut Vec<Self::Row>;
    /// 0 first: the rows kept when some must go.
    fn rank(row: &Self::Row) -> u8;
}

fn status_rank(s: Status) -> u8 {
    match s {
        Status::Error => 0,
        Status::Drifted => 1,
        Status::Incomplete => 2,
        Status::Clean => 3,
    }
}

/// A report's [`Rows`]: its row type, the field holding them (also their name in a note), and
/// the rank of a row `r`.
macro_rules! rows {
    ($report:ty, $row:ty, $field:ident, |$r:ident| $rank:expr) => {
        impl Rows for $report {
            type Row = $row;
            const NAME: &'static str = stringify!($field);
            fn rows(&mut self) -> &mut Vec<Self::Row> {
                &mut self.$field
            }
            fn rank($r: &Self::Row) -> u8 {
                $rank
            }
        }
    };
}

rows!(DriftReport, crate::report::ReleaseReport, releases, |r| status_rank(r.status));
rows!(ManifestsReport, crate::report::FileReport, files, |r| status_rank(r.status));
rows!(OrphanReport, crate::report::orphans::OrphanItem, items, |r| u8::from(r.class != EvidenceClass::Orphan));
rows!(VersionsReport, crate::report::versions::VersionRow, rows, |r| version_rank(r.status));

/// Errors and removed APIs first, then the furthest behind.
fn version_rank(s: VersionStatus) -> u8 {
    match s {
        VersionStatus::Error | VersionStatus::Removed => 0,
        VersionStatus::MajorBehind | VersionStatus::Deprecated | VersionStatus::BehindChart => 1,
        VersionStatus::MinorBehind | VersionStatus::NewerImage => 2,
        VersionStatus::PatchBehind => 3,
        VersionStatus::Unknown => 4,
        VersionStatus::Current => 5,
    }
}

/// What a bounded answer left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Truncated {
    /// The list that was cut in each cluster's report (`releases`, `files`, `items`, `rows`).
    pub list: &'static str,
    /// At most this many were kept per cluster.
    pub limit: usize,
    /// Each cut cluster: how many were kept of how many.
    pub clusters: Vec<Cut>,
    /// How to ask for the rest.
    pub narrow: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Cut {
    pub cluster: String,
    pub shown: usize,
    pub total: usize,
}

/// A bounded report: the cut fleet (for the text summary), its JSON as `-o json` writes it with
/// a `truncated` note when something was left out.
pub(crate) struct Bounded<T> {
    pub fleet: Fleet<T>,
    pub json: Value,
    pub truncated: Option<Truncated>,
}

/// Keep at most `limit` of `rows`, the lowest rank first (a stable sort: the order among equals is
/// the report's); how many were dropped. Under the limit, nothing moves.
pub(crate) fn keep<T>(rows: &mut Vec<T>, limit: usize, rank: impl Fn(&T) -> u8) -> usize {
    if rows.len() <= limit {
        return 0;
    }
    rows.sort_by_key(|r| rank(r));
    let dropped = rows.len() - limit;
    rows.truncate(limit);
    dropped
}

/// `fleet` with each cluster's rows cut to `limit`, then halved while its JSON is over
/// `max_bytes` (never below one row); `narrow` says how to ask for less.
pub(crate) fn bound<T: Rows + Clone + Serialize>(
    fleet: &Fleet<T>,
    limit: usize,
    max_bytes: usize,
    narrow: &str,
) -> Result<Bounded<T>, serde_json::Error> {
    let mut limit = limit.max(1);
    loop {
        let mut cut = fleet.clone();
        let mut cuts = Vec::new();
        for c in &mut cut.clusters {
            if let Some(report) = &mut c.report {
                let total = report.rows().len();
                if keep(report.rows(), limit, T::rank) > 0 {
                    cuts.push(Cut { cluster: c.cluster.clone(), shown: limit, total });
                }
            }
        }
        let mut json = serde_json::to_value(&cut)?;
        let truncated =
            (!cuts.is_empty()).then(|| Truncated { list: T::NAME, limit, clusters: cuts, narrow: narrow.to_string() });
        if let (Some(t), Value::Object(map)) = (&truncated, &mut json) {
            map.insert("truncated".into(), serde_json::to_value(t)?);
        }
        let size = serde_json::to_vec(&json)?.len();
        if size <= max_bytes || limit == 1 {
            return Ok(Bounded { fleet: cut, json, truncated });
        }
        // Too big: the next round keeps half as many (of the largest list, if that is fewer).
        limit = (limit.min(largest(fleet)) / 2).max(1);
    }
}

/// The longest list of any cluster's report.
fn largest<T: Rows + Clone>(fleet: &Fleet<T>) -> usize {
    fleet.clusters.iter().filter_map(|c| c.report.clone()).map(|mut r| r.rows().len()).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fleet::ClusterResult;
    use crate::report::versions::{Category, VersionRow};

    #[test]
    fn keep_moves_nothing_under_the_limit_and_findings_first_over_it() {
        let mut rows = vec![3, 1, 3, 0, 2];
        assert_eq!(keep(&mut rows, 5, |r| *r), 0);
        assert_eq!(rows, vec![3, 1, 3, 0, 2]);
        assert_eq!(keep(&mut rows, 2, |r| *r), 3);
        assert_eq!(rows, vec![0, 1]);
        // Stable: equals keep the report's order.
        let mut pairs = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
        assert_eq!(keep(&mut pairs, 3, |p| p.0), 1);
        assert_eq!(pairs, vec![(0, 'b'), (0, 'd'), (1, 'a')]);
    }

    /// A report of `n` rows for the tests: a versions report, whose rows are the simplest to make.
    fn versions(n: usize, status: impl Fn(usize) -> VersionStatus) -> VersionsReport {
        let rows = (0..n)
            .map(|i| {
                let mut row = VersionRow::new(Category::Helm, format!("release-{i}"), "1.0.0");
                row.status = status(i);
                row
            })
            .collect();
        VersionsReport::new(rows, 0)
    }

    #[test]
    fn a_big_report_is_cut_with_a_note_and_its_summary_still_counts_everything() {
        let report = versions(30, |i| if i % 10 == 9 { VersionStatus::MajorBehind } else { VersionStatus::Current });
        let summary = serde_json::to_value(&report.summary).unwrap();
        let fleet = Fleet::new(vec![
            ClusterResult::report("prod".into(), report),
            ClusterResult::error("gone".into(), "unreachable".into()),
        ]);
        let b = bound(&fleet, 5, MAX_JSON_BYTES, "name one release").unwrap();
        let rows = b.json["clusters"][0]["report"]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 5);
        // The three behind come first.
        let names: Vec<&str> = rows.iter().take(3).map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["release-9", "release-19", "release-29"]);
        assert_eq!(b.json["clusters"][0]["report"]["summary"], summary);
        assert_eq!(b.json["clusters"][1]["error"], "unreachable");
        assert_eq!(
            b.json["truncated"],
            serde_json::json!({"list": "rows", "limit": 5, "clusters": [{"cluster": "prod", "shown": 5, "total": 30}], "narrow": "name one release"})
        );
        assert_eq!(b.truncated.unwrap().clusters[0].total, 30);
        assert_eq!(b.fleet.clusters[0].report.as_ref().unwrap().rows.len(), 5);
    }

    #[test]
    fn a_small_report_is_the_commands_json_unchanged() {
        let fleet = Fleet::new(vec![ClusterResult::report("prod".into(), versions(3, |_| VersionStatus::Current))]);
        let b = bound(&fleet, 50, MAX_JSON_BYTES, "").unwrap();
        assert!(b.truncated.is_none());
        assert_eq!(b.json, serde_json::to_value(&fleet).unwrap());
        assert!(b.json.get("truncated").is_none());
    }

    #[test]
    fn rows_are_halved_until_the_json_fits_the_byte_budget() {
        let fleet = Fleet::new(vec![ClusterResult::report("prod".into(), versions(40, |_| VersionStatus::Current))]);
        let whole = serde_json::to_vec(&fleet).unwrap().len();
        // A budget a quarter of the whole: 40 rows do not fit, nor 20; 10 do.
        let b = bound(&fleet, 50, whole / 4, "").unwrap();
        let kept = b.fleet.clusters[0].report.as_ref().unwrap().rows.len();
        assert!((5..=10).contains(&kept), "{kept}");
        assert!(serde_json::to_vec(&b.json).unwrap().len() <= whole / 4);
        assert_eq!(b.truncated.as_ref().unwrap().limit, kept);
        // A budget nothing fits: one row, said so.
        let b = bound(&fleet, 50, 10, "").unwrap();
        assert_eq!(b.fleet.clusters[0].report.as_ref().unwrap().rows.len(), 1);
        assert_eq!(b.truncated.unwrap().clusters[0].shown, 1);
    }
}
