//! Table and CSV output of the orphans report: columns namespace, kind, name, class, age,
//! reason. The table colours the class through the one [`Theme`]; CSV never colours.

use std::io::{self, Write};

use crate::render::Theme;
use crate::report::duration::short_duration;
use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport};

const HEADER: [&str; 6] = ["NAMESPACE", "KIND", "NAME", "CLASS", "AGE", "REASON"];

/// The six cells of a row, as text.
fn cells(i: &OrphanItem) -> [String; 6] {
    [
        i.namespace.clone().unwrap_or_else(|| "-".into()),
        i.kind.clone(),
        i.name.clone(),
        i.class.word().to_string(),
        i.age_seconds.map(short_duration).unwrap_or_else(|| "?".into()),
        i.reasons.join("; "),
    ]
}

fn paint(class: EvidenceClass, text: &str, theme: &Theme) -> String {
    match class {
        EvidenceClass::Orphan => theme.drifted(text),
        EvidenceClass::InUse => theme.clean(text),
        EvidenceClass::Managed => theme.command(text),
        EvidenceClass::Protected | EvidenceClass::Ignored => theme.dim(text),
    }
}

/// The table, then a summary line.
pub fn table<W: Write>(out: &mut W, report: &OrphanReport, theme: &Theme) -> io::Result<()> {
    table_of(out, &[("", Ok(report))], theme)
}

/// The orphans table: its columns, rows and summary, for [`super::across`].
const TABLE: super::TableKind<'static, OrphanReport, EvidenceClass> = super::TableKind {
    header: &HEADER,
    painted: 3,
    empty: "no orphans found",
    rows: |r| r.items.iter().map(|i| (cells(i).to_vec(), i.class)).collect(),
    paint,
    summary,
};

/// Several clusters' reports (or why a cluster could not be read) in one table with a first
/// CLUSTER column, then each cluster's summary, named. One cluster (named `""`): its table as
/// [`table`] writes it.
pub fn table_of<W: Write>(
    out: &mut W,
    clusters: &[(&str, Result<&OrphanReport, &str>)],
    theme: &Theme,
) -> io::Result<()> {
    super::across(out, &TABLE, clusters, theme)
}

/// The summary line of one report and what it could not read, each after `named`.
fn summary(out: &mut dyn Write, report: &OrphanReport, theme: &Theme, named: &str) -> io::Result<()> {
    let (s, counts) = (&report.summary, &report.summary.counts);
    writeln!(
        out,
        "{}",
        theme.dim(&format!(
            "{named}{} object(s) examined in {}: {} orphan ({} Helm leftover), {} in use, {} managed, {} protected, {} ignored",
            counts.examined,
            s.namespace.as_deref().map(|n| format!("namespace {n}")).unwrap_or_else(|| "all namespaces".into()),
            counts.orphan,
            counts.leftover,
            counts.in_use,
            counts.managed,
            counts.protected,
            counts.ignored
        ))
    )?;
    for k in &s.skipped_kinds {
        let scope = k.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
        writeln!(
            out,
            "{}",
            theme.drifted(&format!(
                "{named}incomplete: custom resources {}{scope} were not read ({}); what they could reference is ignored, not orphan",
                k.resource, k.reason
            ))
        )?;
    }
    Ok(())
}

/// CSV with the table's columns (lower-case header), RFC 4180 quoting; cells a spreadsheet
/// would run as formulas are defused ([`super::csv::cell`]).
/// `cluster`: a first column naming it (several clusters in one file); `header`: write the header
/// line (the first cluster's part of a file).
pub fn csv<W: Write>(out: &mut W, report: &OrphanReport, cluster: Option<&str>, header: bool) -> io::Result<()> {
    csv_items(out, &report.items, cluster, header)
}

/// [`csv`] of `items` (a report's, or a view of one).
pub fn csv_items<W: Write>(
    out: &mut W,
    items: impl IntoIterator<Item = impl std::borrow::Borrow<OrphanItem>>,
    cluster: Option<&str>,
    header: bool,
) -> io::Result<()> {
    if header {
        csv_header(out, cluster.is_some())?;
    }
    for item in items {
        let item = item.borrow();
        let mut c = cells(item);
        if item.namespace.is_none() {
            c[0].clear();
        }
        writeln!(out, "{}", super::csv::line(&super::csv::with_cluster(cluster, &c)))?;
    }
    Ok(())
}

/// The CSV header line (`with_cluster`: a first `cluster` column).
pub fn csv_header<W: Write>(out: &mut W, with_cluster: bool) -> io::Result<()> {
    let names = HEADER.map(|h| h.to_ascii_lowercase());
    writeln!(out, "{}", super::csv::line(&super::csv::with_cluster(with_cluster.then_some("cluster"), &names)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::orphan_kinds::ExaminedKind;

    fn item(name: &str, class: EvidenceClass, reasons: &[&str]) -> OrphanItem {
        let reasons = reasons.iter().map(|s| s.to_string()).collect();
        OrphanItem { reasons, ..OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), name, class) }
    }

    #[test]
    fn several_clusters_share_one_table_with_a_cluster_column() {
        let report = |cluster: &str, name: &str| {
            let mut r = OrphanReport::new(
                vec![item(name, EvidenceClass::Orphan, &["no pod or pod template references it"])],
                false,
                Some("shop".into()),
                &[ExaminedKind::ConfigMap],
                3600,
            );
            r.cluster = cluster.into();
            r
        };
        let (eu, us) = (report("prod-eu", "old"), report("prod-us", "older-still"));
        let mut out = Vec::new();
        table_of(
            &mut out,
            &[("prod-eu", Ok(&eu)), ("prod-us", Ok(&us)), ("staging", Err("Unauthorized (401)"))],
            &Theme::plain(),
        )
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap(), @r"
        CLUSTER  NAMESPACE  KIND       NAME         CLASS   AGE  REASON
        prod-eu  shop       ConfigMap  old          orphan  2h   no pod or pod template references it
        prod-us  shop       ConfigMap  older-still  orphan  2h   no pod or pod template references it
        cluster prod-eu: 1 object(s) examined in namespace shop: 1 orphan (0 Helm leftover), 0 in use, 0 managed, 0 protected, 0 ignored
        cluster prod-us: 1 object(s) examined in namespace shop: 1 orphan (0 Helm leftover), 0 in use, 0 managed, 0 protected, 0 ignored
        cluster staging: error: Unauthorized (401)
        ");
    }

    #[test]
    fn table_and_csv() {
        let report = OrphanReport::new(
            vec![
                item("old", EvidenceClass::Orphan, &["no pod or pod template references it"]),
                item("web", EvidenceClass::InUse, &["used by Deployment shop/web volume config"]),
            ],
            true,
            Some("shop".into()),
            &[ExaminedKind::ConfigMap],
            3600,
        );
        let mut out = Vec::new();
        table(&mut out, &report, &Theme::plain()).unwrap();
        let text = String::from_utf8(out).unwrap();
        insta::assert_snapshot!(text, @r"
        NAMESPACE  KIND       NAME  CLASS   AGE  REASON
        shop       ConfigMap  old   orphan  2h   no pod or pod template references it
        shop       ConfigMap  web   in use  2h   used by Deployment shop/web volume config
        2 object(s) examined in namespace shop: 1 orphan (0 Helm leftover), 1 in use, 0 managed, 0 protected, 0 ignored
        ");
        let mut out = Vec::new();
        let mut r2 = report.clone();
        r2.items[0].reasons = vec!["a, \"b\"".into()];
        csv(&mut out, &r2, None, true).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "namespace,kind,name,class,age,reason\nshop,ConfigMap,old,orphan,2h,\"a, \"\"b\"\"\"\nshop,ConfigMap,web,in use,2h,used by Deployment shop/web volume config\n"
        );
    }

    #[test]
    fn nothing_found() {
        let report = OrphanReport::new(vec![], false, None, &[], 3600);
        let mut out = Vec::new();
        table(&mut out, &report, &Theme::plain()).unwrap();
        assert!(
            String::from_utf8(out).unwrap().starts_with("no orphans found\n0 object(s) examined in all namespaces")
        );
    }
}
