//! Table and CSV output of the versions report. The table colours the status through the one
//! [`Theme`] (current green, behind and newer image red, unknown dim, error red bold); CSV never
//! colours and escapes cells that a spreadsheet would run as a formula.

use std::io::{self, Write};

use crate::render::Theme;
use crate::report::versions::{VersionRow, VersionStatus, VersionsReport};

const HEADER: [&str; 8] = ["CATEGORY", "NAMESPACE", "NAME", "COMPONENT", "INSTALLED", "LATEST", "STATUS", "NOTES"];

/// What the last column says: why (for unknown, error and apis rows), the newer track, the
/// release-notes link.
fn notes(r: &VersionRow) -> String {
    let mut parts = Vec::new();
    if let Some(w) = &r.why {
        parts.push(w.clone());
    }
    if let Some(n) = &r.newer_track {
        parts.push(format!("newer track: {n}"));
    }
    if let Some(n) = &r.notes {
        parts.push(n.clone());
    }
    parts.join("; ")
}

fn name(r: &VersionRow) -> String {
    if r.count > 1 { format!("{} (x{})", r.name, r.count) } else { r.name.clone() }
}

fn component(r: &VersionRow) -> String {
    match (&r.image, &r.component) {
        (Some(i), Some(c)) => format!("{c}={i}"),
        (Some(i), None) => i.clone(),
        (None, Some(c)) => c.clone(),
        (None, None) => "-".into(),
    }
}

/// A running digest is long; the table shows its first 12 hex digits.
fn short(v: &str) -> String {
    match v.strip_prefix("sha256:") {
        Some(hex) if hex.len() > 12 => format!("sha256:{}", &hex[..12]),
        _ => v.to_string(),
    }
}

/// The installed version, with what the app reported to a probe beside it (`latest (app 1.2.3)`).
fn installed(r: &VersionRow) -> String {
    match &r.probed {
        Some(p) => format!("{} (app {p})", short(&r.installed)),
        None => short(&r.installed),
    }
}

fn cells(r: &VersionRow) -> [String; 8] {
    [
        r.category.word().to_string(),
        r.namespace.clone().unwrap_or_else(|| "-".into()),
        name(r),
        component(r),
        installed(r),
        r.latest.as_deref().map(short).unwrap_or_else(|| "-".into()),
        r.status.word().to_string(),
        notes(r),
    ]
}

fn paint(status: VersionStatus, text: &str, theme: &Theme) -> String {
    match status {
        VersionStatus::Current => theme.clean(text),
        VersionStatus::Error => theme.error(text),
        VersionStatus::Unknown => theme.dim(text),
        _ => theme.drifted(text),
    }
}

/// The table, then a summary line.
pub fn table<W: Write>(out: &mut W, report: &VersionsReport, theme: &Theme) -> io::Result<()> {
    table_of(out, &[("", Ok(report))], theme)
}

/// The versions table: its columns, rows and summary, for [`super::across`].
const TABLE: super::TableKind<'static, VersionsReport, VersionStatus> = super::TableKind {
    header: &HEADER,
    painted: 6,
    empty: "nothing to report",
    rows: |r| r.rows.iter().map(|row| (cells(row).to_vec(), row.status)).collect(),
    paint,
    summary,
};

/// Several clusters' reports (or why a cluster could not be read) in one table with a first
/// CLUSTER column, then each cluster's summary, named. One cluster (named `""`): its table as
/// [`table`] writes it.
pub fn table_of<W: Write>(
    out: &mut W,
    clusters: &[(&str, Result<&VersionsReport, &str>)],
    theme: &Theme,
) -> io::Result<()> {
    super::across(out, &TABLE, clusters, theme)
}

/// The summary lines of one report, each after `named`.
fn summary(out: &mut dyn Write, report: &VersionsReport, theme: &Theme, named: &str) -> io::Result<()> {
    let s = &report.summary;
    let hidden = if s.hidden > 0 { format!(" ({} hidden; --show all shows them)", s.hidden) } else { String::new() };
    if !s.left_out.is_empty() {
        let words: Vec<&str> = s.left_out.iter().map(|c| c.word()).collect();
        writeln!(
            out,
            "{}",
            theme.dim(&format!(
                "{named}{} left out: scoped to one namespace (name them with --category {}, or use -A)",
                words.join(" and "),
                words.join(",")
            ))
        )?;
    }
    writeln!(
        out,
        "{}",
        theme.dim(&format!(
            "{named}{} row(s): {} current, {} behind, {} newer image behind tag, {} API problem(s), {} unknown, {} error(s){hidden}",
            s.rows, s.current, s.behind, s.newer_image, s.apis, s.unknown, s.errors
        ))
    )
}

/// CSV with every field of a row (lower-case header), RFC 4180 quoting, formula cells escaped
/// (the one CSV rule, [`super::csv::cell`]).
/// `cluster`: a first column naming it (several clusters in one file); `header`: write the header
/// line (the first cluster's part of a file).
pub fn csv<W: Write>(out: &mut W, report: &VersionsReport, cluster: Option<&str>, header: bool) -> io::Result<()> {
    if header {
        csv_header(out, cluster.is_some())?;
    }
    for r in &report.rows {
        let fields = [
            r.category.word().to_string(),
            r.namespace.clone().unwrap_or_default(),
            r.name.clone(),
            r.component.clone().unwrap_or_default(),
            r.image.clone().unwrap_or_default(),
            r.installed.clone(),
            r.latest.clone().unwrap_or_default(),
            r.newer_track.clone().unwrap_or_default(),
            r.status.word().to_string(),
            r.why.clone().unwrap_or_default(),
            r.source.clone().unwrap_or_default(),
            r.notes.clone().unwrap_or_default(),
            r.count.to_string(),
            r.running_digests.join(" "),
            r.probed.clone().unwrap_or_default(),
            r.deprecated_in.clone().unwrap_or_default(),
            r.removed_in.clone().unwrap_or_default(),
            r.replacement.clone().unwrap_or_default(),
        ];
        writeln!(out, "{}", super::csv::line(&super::csv::with_cluster(cluster, &fields)))?;
    }
    Ok(())
}

/// The CSV header line (`with_cluster`: a first `cluster` column).
pub fn csv_header<W: Write>(out: &mut W, with_cluster: bool) -> io::Result<()> {
    writeln!(
        out,
        "{}category,namespace,name,component,image,installed,latest,newer_track,status,why,source,notes,count,running_digests,probed,deprecated_in,removed_in,replacement",
        if with_cluster { "cluster," } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::versions::Category;

    fn report() -> VersionsReport {
        let mut a = VersionRow::new(Category::Cluster, "kubernetes", "v1.35.2-eks-1");
        a.latest = Some("v1.36.3".into());
        a.status = VersionStatus::MinorBehind;
        a.notes = Some("https://example/CHANGELOG-1.36.md".into());
        let mut b = VersionRow::new(Category::Nodes, "kubelet", "v1.36.3");
        b.count = 3;
        b.latest = Some("v1.36.3".into());
        b.status = VersionStatus::Current;
        let mut c = VersionRow::new(Category::Workloads, "Deployment/=cmd", "latest").error("-boom @x");
        c.namespace = Some("shop".into());
        c.component = Some("app".into());
        c.image = Some("r:5000/x:latest".into());
        VersionsReport::new(vec![a, b, c], 2)
    }

    #[test]
    fn table_text() {
        let mut out = Vec::new();
        table(&mut out, &report(), &Theme::plain()).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap(), @r"
        CATEGORY   NAMESPACE  NAME             COMPONENT            INSTALLED      LATEST   STATUS        NOTES
        cluster    -          kubernetes       -                    v1.35.2-eks-1  v1.36.3  minor behind  https://example/CHANGELOG-1.36.md
        nodes      -          kubelet (x3)     -                    v1.36.3        v1.36.3  current
        workloads  shop       Deployment/=cmd  app=r:5000/x:latest  latest         -        error         -boom @x
        3 row(s): 1 current, 1 behind, 0 newer image behind tag, 0 API problem(s), 0 unknown, 1 error(s) (2 hidden; --show all shows them)
        ");
    }

    #[test]
    fn csv_escapes_formulas() {
        let mut out = Vec::new();
        csv(&mut out, &report(), None, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let last = text.lines().last().unwrap();
        assert!(last.contains(",Deployment/=cmd,"), "{last}");
        assert!(last.contains(",'-boom @x,"), "{last}");
        assert_eq!(text.lines().count(), 4);
    }
}
