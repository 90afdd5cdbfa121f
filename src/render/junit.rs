//! JUnit XML (`-o junit`) for `release`, `manifests`, `orphans` and `versions`, the report CI
//! servers read (GitLab's merge request widget, Jenkins, Azure DevOps), written by `quick-junit`.
//!
//! One `testsuite` per release, file or kustomization (and the search for extra objects), per
//! examined kind for orphans, per category for versions; one `testcase` per object or row. A
//! drifted object is a `failure` whose message is its redacted field list and whose text gives
//! each field's values (redacted as in every output); what could not be checked is an `error`;
//! ignored objects and unknown versions are `skipped`. A target with nothing to report still has
//! one passing case, so a clean run counts its targets. With several clusters each suite's name
//! starts with its cluster (`prod-eu: release shop/web`); a cluster that could not be read is a
//! suite with one `error`.

use std::io::Write;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::render::ci::{self, Finding};
use crate::report::fleet::Fleet;
use crate::report::orphans::{EvidenceClass, OrphanReport};
use crate::report::upgrade::{UpgradeClass, UpgradeReport};
use crate::report::versions::{VersionStatus, VersionsReport};
use crate::report::{DriftReport, ManifestsReport, ObjectReport, Problem, TargetReport};

/// Text for an attribute (a name, a message) on one line: XML readers turn a line break in an
/// attribute into a space anyway (attribute-value normalisation); doing it here makes every
/// reader see the same text. Element text (the failure's details) keeps its lines.
fn one_line(s: &str) -> String {
    s.replace("\r\n", " ").replace(['\r', '\n', '\t'], " ")
}

fn failure(kind: NonSuccessKind, message: &str, text: &str) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_message(one_line(message));
    if !text.is_empty() {
        status.set_description(text);
    }
    status
}

fn case(suite: &str, name: &str, status: TestCaseStatus) -> TestCase {
    let mut case = TestCase::new(one_line(name), status);
    case.set_classname(one_line(suite));
    case
}

fn object_case(suite: &str, o: &ObjectReport) -> TestCase {
    let status = match Finding::of(o) {
        None => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(one_line(&ci::ignored_reasons(o)));
            s
        }
        Some(Finding::Error) => failure(NonSuccessKind::Error, &ci::message(o, Finding::Error), ""),
        Some(f) => failure(NonSuccessKind::Failure, &ci::message(o, f), &ci::details(o).join("\n")),
    };
    case(suite, &o.title(), status)
}

/// One target's suite: a case per object, an `error` case when the target itself failed, and a
/// passing case named after the target when there is nothing else.
fn target_suite<O>(name: String, target: &TargetReport<O>) -> TestSuite {
    let mut suite = TestSuite::new(one_line(&name));
    suite.add_test_cases(target.objects.iter().map(|o| object_case(&name, o)));
    if let Some(Problem::Failed(messages)) = &target.problem {
        suite.add_test_case(case(&name, &name, failure(NonSuccessKind::Error, &messages.join("; "), "")));
    }
    if suite.test_cases.is_empty() {
        suite.add_test_case(case(&name, &name, TestCaseStatus::success()));
    }
    suite
}

/// A cluster that could not be read: its suite, one `error`.
fn cluster_error(cluster: &str, error: &str) -> TestSuite {
    let name = format!("cluster {cluster}");
    let mut suite = TestSuite::new(one_line(&name));
    suite.add_test_case(case(&name, &name, failure(NonSuccessKind::Error, error, "")));
    suite
}

/// Every cluster's suites (`suites` of its report, given the name prefix), or its error suite.
fn write<W: Write, T>(
    out: &mut W,
    title: &str,
    fleet: &Fleet<T>,
    suites: impl Fn(&T, Option<&str>) -> Vec<TestSuite>,
) -> std::io::Result<()> {
    let mut report = Report::new(title);
    for c in &fleet.clusters {
        match &c.report {
            Some(r) => {
                report.add_test_suites(suites(r, fleet.many().then_some(c.cluster.as_str())));
            }
            None => {
                report.add_test_suite(cluster_error(&c.cluster, c.error.as_deref().unwrap_or("no report")));
            }
        }
    }
    report.serialize(&mut *out).map_err(std::io::Error::other)?;
    writeln!(out)
}

/// `release -o junit`: a suite per release.
pub fn releases<W: Write>(out: &mut W, fleet: &Fleet<DriftReport>) -> std::io::Result<()> {
    write(out, "kubectl-drift release", fleet, |report, cluster| {
        report.releases.iter().map(|r| target_suite(ci::in_cluster(cluster, &ci::release_name(&r.origin)), r)).collect()
    })
}

/// `manifests -o junit`: a suite per file or kustomization, and one for the extra-object search.
pub fn manifests<W: Write>(out: &mut W, fleet: &Fleet<ManifestsReport>) -> std::io::Result<()> {
    write(out, "kubectl-drift manifests", fleet, |report, cluster| {
        let files = report.files.iter().map(|f| target_suite(ci::in_cluster(cluster, &ci::file_name(&f.origin)), f));
        let extra = report.extra.iter().map(|e| target_suite(ci::in_cluster(cluster, &ci::extra_name(&e.origin)), e));
        files.chain(extra).collect()
    })
}

/// `orphans -o junit`: a suite per examined kind (`orphans ConfigMap`), a case per object shown
/// (an orphan fails; in use, managed and protected pass; ignored is skipped), and the custom
/// kinds that could not be read as `error` cases of `orphans (unread kinds)`.
pub fn orphans<W: Write>(out: &mut W, fleet: &Fleet<OrphanReport>) -> std::io::Result<()> {
    write(out, "kubectl-drift orphans", fleet, |report, cluster| {
        let mut suites = Vec::new();
        for kind in &report.summary.kinds {
            let name = ci::in_cluster(cluster, &format!("orphans {kind}"));
            let mut suite = TestSuite::new(one_line(&name));
            for item in report.items.iter().filter(|i| &i.kind == kind) {
                let reasons = item.reasons.join("; ");
                let status = match item.class {
                    EvidenceClass::Orphan => failure(NonSuccessKind::Failure, &format!("orphan: {reasons}"), ""),
                    EvidenceClass::Ignored => {
                        let mut s = TestCaseStatus::skipped();
                        s.set_message(one_line(&format!("ignored: {reasons}")));
                        s
                    }
                    EvidenceClass::InUse | EvidenceClass::Managed | EvidenceClass::Protected => {
                        TestCaseStatus::success()
                    }
                };
                suite.add_test_case(case(&name, &item.title(), status));
            }
            if suite.test_cases.is_empty() {
                suite.add_test_case(case(&name, &format!("no orphan {kind}"), TestCaseStatus::success()));
            }
            suites.push(suite);
        }
        if !report.summary.skipped_kinds.is_empty() {
            let name = ci::in_cluster(cluster, "orphans (unread kinds)");
            let mut suite = TestSuite::new(one_line(&name));
            for k in &report.summary.skipped_kinds {
                let title = match &k.namespace {
                    Some(ns) => format!("{} in {ns}", k.resource),
                    None => k.resource.clone(),
                };
                suite.add_test_case(case(&name, &title, failure(NonSuccessKind::Error, &k.reason, "")));
            }
            suites.push(suite);
        }
        suites
    })
}

/// `versions -o junit`: a suite per category (`versions helm`), a case per row (behind, newer
/// image, deprecated or removed fail; unknown is skipped; a failed lookup is an `error`).
pub fn versions<W: Write>(out: &mut W, fleet: &Fleet<VersionsReport>) -> std::io::Result<()> {
    write(out, "kubectl-drift versions", fleet, |report, cluster| {
        let mut suites: Vec<TestSuite> = Vec::new();
        for row in &report.rows {
            let name = ci::in_cluster(cluster, &format!("versions {}", row.category.word()));
            let at = match suites.iter().position(|s| s.name.as_str() == one_line(&name)) {
                Some(at) => at,
                None => {
                    suites.push(TestSuite::new(one_line(&name)));
                    suites.len() - 1
                }
            };
            let title = match (&row.namespace, &row.component) {
                (Some(ns), Some(c)) => format!("{ns}/{} {c}", row.name),
                (Some(ns), None) => format!("{ns}/{}", row.name),
                (None, Some(c)) => format!("{} {c}", row.name),
                (None, None) => row.name.clone(),
            };
            let why = row.why.clone().unwrap_or_default();
            let status = match row.status {
                VersionStatus::Current => TestCaseStatus::success(),
                VersionStatus::Unknown => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(one_line(&format!("unknown: {why}")));
                    s
                }
                VersionStatus::Error => failure(NonSuccessKind::Error, &why, ""),
                other => {
                    let latest = row.latest.as_deref().unwrap_or("-");
                    let message = format!("{}: installed {}, latest {latest}", other.word(), row.installed);
                    failure(NonSuccessKind::Failure, &message, &why)
                }
            };
            suites[at].add_test_case(case(&name, &title, status));
        }
        suites
    })
}

/// `upgrade -o junit`: one suite for the release, a case per change: the classes in `failing`
/// (what `--fail-on` counts) fail, a hand edit kept is skipped, the other changes pass.
pub fn upgrade<W: Write>(out: &mut W, report: &UpgradeReport, failing: &[UpgradeClass]) -> std::io::Result<()> {
    let name = format!("upgrade {}/{}", report.namespace, report.release);
    let mut suite = TestSuite::new(one_line(&name));
    for c in &report.changes {
        let message = crate::render::upgrade::message(c);
        let status = if failing.contains(&c.class) {
            failure(NonSuccessKind::Failure, &message, "")
        } else if c.class == UpgradeClass::Kept {
            let mut s = TestCaseStatus::skipped();
            s.set_message(one_line(&message));
            s
        } else {
            TestCaseStatus::success()
        };
        suite.add_test_case(case(&name, &format!("{}: {}", c.class.title(), crate::render::upgrade::what(c)), status));
    }
    if suite.test_cases.is_empty() {
        suite.add_test_case(case(&name, "nothing changes", TestCaseStatus::success()));
    }
    let mut junit = Report::new("kubectl-drift upgrade");
    junit.add_test_suite(suite);
    junit.serialize(&mut *out).map_err(std::io::Error::other)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

    use crate::render::ci::fixture;
    use crate::render::ci::fixture::render;

    /// The shape a JUnit reader sees: suites, cases, and which failed or erred.
    #[test]
    fn junit_of_releases_reads_back() {
        let xml = render(|o| super::releases(o, &fixture::releases()));
        fixture::assert_redacted(&xml);
        // Hostile text is escaped: no element or entity of its own.
        assert!(!xml.contains("<b>") && !xml.contains("<tag") && xml.contains("&lt;b&gt;&amp;amp;"), "{xml}");
        let report = Report::deserialize_from_str(&xml).unwrap();
        let names: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["release shop/shop", "release shop/clean", "release shop/gone", "release shop/extra"]);
        let shop = &report.test_suites[0];
        assert_eq!((shop.tests, shop.failures, shop.errors), (6, 4, 1));
        let first = &shop.test_cases[0];
        assert!(first.name.as_str().starts_with("Deployment shop/web"), "{:?}", first.name);
        match &first.status {
            TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, message, description, .. } => {
                assert_eq!(message.as_ref().unwrap().as_str(), "changed: spec.replicas, data.motd");
                let text = description.as_ref().unwrap().as_str();
                assert!(text.contains("spec.replicas: 2 -> 5 (by kubectl-edit)"), "{text}");
                assert!(text.contains(":: <tag attr=\"v\">&'"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(shop.test_cases[5].status, TestCaseStatus::Skipped { .. }));
        assert_eq!((report.test_suites[1].tests, report.test_suites[1].failures), (1, 0));
        assert_eq!(report.test_suites[2].errors, 1);
        insta::assert_snapshot!("junit_releases", xml);
    }

    #[test]
    fn junit_names_the_cluster_of_each_suite_when_several() {
        let xml = render(|o| super::manifests(o, &fixture::manifests_two()));
        fixture::assert_redacted(&xml);
        let report = Report::deserialize_from_str(&xml).unwrap();
        let names: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "prod-eu: file k8s/we b,1:%.yaml",
                "prod-eu: file k8s/clean.yaml",
                "prod-eu: file k8s/bad.yaml",
                "prod-eu: kustomization overlays/prod",
                "prod-eu: extra objects (app=shop)",
                "cluster prod-us",
            ]
        );
        assert_eq!(report.test_suites[5].errors, 1);
        insta::assert_snapshot!("junit_manifests_two_clusters", xml);
    }

    #[test]
    fn junit_of_orphans_and_versions() {
        use crate::report::fleet::{ClusterResult, Fleet};
        use crate::report::orphan_kinds::ExaminedKind;
        use crate::report::orphans::{EvidenceClass, OrphanItem, OrphanReport, SkippedKind};
        use crate::report::versions::{Category, VersionRow, VersionStatus, VersionsReport};
        let items = vec![
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), "old<&>", EvidenceClass::Orphan),
            OrphanItem::sample(ExaminedKind::ConfigMap, Some("shop"), "used", EvidenceClass::InUse),
            OrphanItem::sample(ExaminedKind::Secret, Some("shop"), "kept", EvidenceClass::Ignored),
        ];
        let mut orphans =
            OrphanReport::new(items, true, Some("shop".into()), &[ExaminedKind::ConfigMap, ExaminedKind::Secret], 0);
        orphans.summary.skipped_kinds.push(SkippedKind {
            resource: "widgets.example.com".into(),
            kind: "Widget".into(),
            namespace: Some("shop".into()),
            namespaced: true,
            reason: "forbidden".into(),
        });
        let xml = render(|o| super::orphans(o, &Fleet::new(vec![ClusterResult::report("a".into(), orphans.clone())])));
        let report = Report::deserialize_from_str(&xml).unwrap();
        let counts: Vec<_> =
            report.test_suites.iter().map(|s| (s.name.as_str(), s.tests, s.failures, s.errors)).collect();
        assert_eq!(
            counts,
            [("orphans ConfigMap", 2, 1, 0), ("orphans Secret", 1, 0, 0), ("orphans (unread kinds)", 1, 0, 1)]
        );
        let mut behind = VersionRow::new(Category::Helm, "shop", "1.2.0");
        behind.namespace = Some("shop".into());
        behind.component = Some("shop".into());
        behind.latest = Some("1.4.0".into());
        behind.status = VersionStatus::MinorBehind;
        let mut current = VersionRow::new(Category::Nodes, "kubelet", "v1.36.0");
        current.status = VersionStatus::Current;
        let failed = VersionRow::new(Category::Helm, "web", "2.0.0").error("index.yaml: 503");
        let versions = VersionsReport::new(vec![behind, current, failed], 0);
        let vxml =
            render(|o| super::versions(o, &Fleet::new(vec![ClusterResult::report("a".into(), versions.clone())])));
        let report = Report::deserialize_from_str(&vxml).unwrap();
        let counts: Vec<_> =
            report.test_suites.iter().map(|s| (s.name.as_str(), s.tests, s.failures, s.errors)).collect();
        assert_eq!(counts, [("versions helm", 2, 1, 1), ("versions nodes", 1, 0, 0)]);
        insta::assert_snapshot!("junit_orphans_versions", format!("{xml}\n{vxml}"));
    }
}
