//! SARIF 2.1.0 (`-o sarif`) for `manifests` and `release`, what GitHub code scanning and other
//! static-analysis viewers read; built with `serde-sarif`'s types (generated from the OASIS
//! schema).
//!
//! One run, one rule per kind of finding ([`Finding`]: changed, missing, added by hand, extra,
//! error), one result per object that drifted or could not be checked (ignored objects are left
//! out), and one per target or cluster that could not be checked. A manifests object points at
//! its file and the line its document starts on; a kustomization's objects at the
//! kustomization file. Every result also has logical locations: the cluster, the namespace, the
//! release, file or search, the object, and each drifted field's path (a release's objects have
//! no file, so these are their only location). `partialFingerprints` hash what identifies the
//! finding (cluster, target, object, rule), never the values, so a rerun keeps the same alert.

use std::collections::BTreeMap;
use std::io::Write;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_sarif::sarif::{
    ArtifactLocation, Location, LogicalLocation, Message, MultiformatMessageString, PhysicalLocation, Region,
    ReportingConfiguration, ReportingDescriptor, Result as SarifResult, ResultLevel, Run, Sarif, Tool, ToolComponent,
};
use sha2::{Digest, Sha256};

use crate::render::ci::{self, Finding, Level, Place, Places};
use crate::report::fleet::Fleet;
use crate::report::upgrade::{UpgradeClass, UpgradeReport};
use crate::report::{DriftReport, ManifestsReport, ObjectReport, Problem, TargetReport};

/// The schema a SARIF log names (`$schema`).
pub const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The key of the one partial fingerprint.
pub const FINGERPRINT: &str = "driftFinding/v1";

/// Characters a path keeps in a URI: unreserved ones and `/`.
const PATH: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// A file path as a SARIF URI: relative paths stay relative (code scanning resolves them from
/// the repository's root), absolute ones become `file://` URIs; both percent-encoded.
pub fn uri(path: &str) -> String {
    let encoded = utf8_percent_encode(path, PATH).to_string();
    if path.starts_with('/') { format!("file://{encoded}") } else { encoded }
}

fn level(l: Level) -> ResultLevel {
    match l {
        Level::Error => ResultLevel::Error,
        Level::Warning => ResultLevel::Warning,
    }
}

fn rules() -> Vec<ReportingDescriptor> {
    Finding::ALL
        .iter()
        .map(|f| {
            let level = serde_json::to_value(level(f.level())).expect("a level serialises");
            ReportingDescriptor::builder()
                .id(f.id())
                .name(f.id().trim_start_matches("drift/").replace('-', " "))
                .short_description(MultiformatMessageString::builder().text(f.description()).build())
                .default_configuration(ReportingConfiguration::builder().level(level).build())
                .build()
        })
        .collect()
}

/// The target a result belongs to, as its logical location and fingerprint name it.
struct Target<'a> {
    cluster: &'a str,
    /// `release`, `file`, `kustomization`, `extra`.
    kind: &'static str,
    /// `namespace/name`, the path, the selectors.
    name: String,
    /// A release's namespace.
    namespace: Option<&'a str>,
}

fn fingerprint(parts: &[&str]) -> BTreeMap<String, String> {
    let mut hash = Sha256::new();
    for p in parts {
        hash.update(p.as_bytes());
        hash.update([0]);
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    BTreeMap::from([(FINGERPRINT.to_string(), hex)])
}

fn logical(name: &str, fully: String, kind: &str) -> LogicalLocation {
    LogicalLocation::builder().name(name).fully_qualified_name(fully).kind(kind).build()
}

/// cluster > namespace > target > object > fields, each fully qualified by the ones before.
fn logical_locations(target: &Target<'_>, object: Option<&ObjectReport>) -> Vec<LogicalLocation> {
    let mut out = vec![logical(target.cluster, target.cluster.to_string(), "namespace")];
    let mut prefix = target.cluster.to_string();
    if let Some(ns) = target.namespace {
        prefix = format!("{prefix}/{ns}");
        out.push(logical(ns, prefix.clone(), "namespace"));
    }
    let target_name = match target.namespace {
        Some(ns) => target.name.strip_prefix(&format!("{ns}/")).unwrap_or(&target.name).to_string(),
        None => target.name.clone(),
    };
    prefix = format!("{prefix}/{}:{target_name}", target.kind);
    out.push(logical(&target_name, prefix.clone(), "module"));
    if let Some(o) = object {
        let object_name = match &o.namespace {
            Some(ns) if !ns.is_empty() => format!("{}/{ns}/{}", o.kind, o.name),
            _ => format!("{}/{}", o.kind, o.name),
        };
        let object_fqn = format!("{prefix}/{object_name}");
        out.push(logical(&object_name, object_fqn.clone(), "object"));
        for f in o.fields.iter().filter(|f| f.reason.is_none()) {
            let path = f.path.to_string();
            out.push(logical(&path, format!("{object_fqn}/{path}"), "member"));
        }
    }
    out
}

fn location(place: Option<&Place>, logical: Vec<LogicalLocation>) -> Location {
    let physical = place.map(|p| {
        let artifact = ArtifactLocation::builder().uri(uri(&p.file)).build();
        match p.line {
            Some(line) => PhysicalLocation::builder()
                .artifact_location(artifact)
                .region(Region::builder().start_line(line as i64).build())
                .build(),
            None => PhysicalLocation::builder().artifact_location(artifact).build(),
        }
    });
    match physical {
        Some(p) => Location::builder().physical_location(p).logical_locations(logical).build(),
        None => Location::builder().logical_locations(logical).build(),
    }
}

fn result(finding: Finding, text: String, location: Location, fingerprint: BTreeMap<String, String>) -> SarifResult {
    SarifResult::builder()
        .rule_id(finding.id())
        .level(level(finding.level()))
        .message(Message::builder().text(text).build())
        .locations(vec![location])
        .partial_fingerprints(fingerprint)
        .build()
}

/// A target's results: one per object with a finding, and one for a target that failed.
fn target_results<O>(
    target: &Target<'_>,
    report: &TargetReport<O>,
    place: impl Fn(Option<&ObjectReport>) -> Option<Place>,
    cluster_prefix: &str,
) -> Vec<SarifResult> {
    let mut out = Vec::new();
    for o in &report.objects {
        let Some(finding) = Finding::of(o) else { continue };
        let mut text = format!("{cluster_prefix}{} {}: {}", o.title(), finding.words(), ci::message(o, finding));
        for line in ci::details(o) {
            text.push_str("\n  ");
            text.push_str(&line);
        }
        let group = crate::report::group_version(&o.api_version).0;
        let ns = o.namespace.as_deref().unwrap_or("");
        let print =
            fingerprint(&[target.cluster, target.kind, &target.name, group, &o.kind, ns, &o.name, finding.id()]);
        out.push(result(finding, text, location(place(Some(o)).as_ref(), logical_locations(target, Some(o))), print));
    }
    if let Some(Problem::Failed(messages)) = &report.problem {
        let text =
            format!("{cluster_prefix}{} {} could not be checked: {}", target.kind, target.name, messages.join("; "));
        let print = fingerprint(&[target.cluster, target.kind, &target.name, Finding::Error.id()]);
        out.push(result(Finding::Error, text, location(place(None).as_ref(), logical_locations(target, None)), print));
    }
    out
}

fn cluster_error(cluster: &str, error: &str) -> SarifResult {
    let location =
        Location::builder().logical_locations(vec![logical(cluster, cluster.to_string(), "namespace")]).build();
    let print = fingerprint(&[cluster, "cluster", Finding::Error.id()]);
    result(Finding::Error, format!("cluster {cluster} could not be read: {error}"), location, print)
}

fn write<W: Write, T>(
    out: &mut W,
    fleet: &Fleet<T>,
    results: impl Fn(&T, &str, &str) -> Vec<SarifResult>,
) -> std::io::Result<()> {
    let mut all = Vec::new();
    for c in &fleet.clusters {
        let prefix = if fleet.many() { format!("cluster {}: ", c.cluster) } else { String::new() };
        match &c.report {
            Some(r) => all.extend(results(r, &c.cluster, &prefix)),
            None => all.push(cluster_error(&c.cluster, c.error.as_deref().unwrap_or("no report"))),
        }
    }
    let driver = ToolComponent::builder()
        .name("kubectl-drift")
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(rules())
        .build();
    let run = Run::builder().tool(Tool::builder().driver(driver).build()).results(all).build();
    let log = Sarif::builder().schema(SCHEMA_URI).version(serde_json::json!("2.1.0")).runs(vec![run]).build();
    serde_json::to_writer_pretty(&mut *out, &log).map_err(std::io::Error::from)?;
    writeln!(out)
}

/// `release -o sarif`: results with logical locations only (a release has no file).
pub fn releases<W: Write>(out: &mut W, fleet: &Fleet<DriftReport>) -> std::io::Result<()> {
    write(out, fleet, |report, cluster, prefix| {
        report
            .releases
            .iter()
            .flat_map(|r| {
                let target = Target {
                    cluster,
                    kind: "release",
                    name: format!("{}/{}", r.origin.namespace, r.origin.name),
                    namespace: Some(r.origin.namespace.as_str()),
                };
                target_results(&target, r, |_| None, prefix)
            })
            .collect()
    })
}

/// `manifests -o sarif`: each object at its file and line ([`Places`]); extra objects, which are
/// in no file, with logical locations only.
pub fn manifests<W: Write>(out: &mut W, fleet: &Fleet<ManifestsReport>, places: &Places) -> std::io::Result<()> {
    write(out, fleet, |report, cluster, prefix| {
        let mut results = Vec::new();
        for f in &report.files {
            let kind =
                if f.origin.source_type == crate::report::SourceType::Kustomization { "kustomization" } else { "file" };
            let target = Target { cluster, kind, name: f.origin.path.clone(), namespace: None };
            results.extend(target_results(&target, f, |o| Some(places.of(&f.origin, o)), prefix));
        }
        if let Some(e) = &report.extra {
            let target = Target { cluster, kind: "extra", name: e.origin.selectors.join(","), namespace: None };
            results.extend(target_results(&target, e, |_| None, prefix));
        }
        results
    })
}

/// `upgrade -o sarif`: one rule per class, one result per change of a class in `failing` (what
/// `--fail-on` counts; blocking ones at level error, the others warning), with the release, the
/// object and the field as logical locations.
pub fn upgrade<W: Write>(out: &mut W, report: &UpgradeReport, failing: &[UpgradeClass]) -> std::io::Result<()> {
    let level_of = |c: UpgradeClass| if c == UpgradeClass::Blocking { Level::Error } else { Level::Warning };
    let rules = UpgradeClass::ALL
        .iter()
        .map(|c| {
            let level = serde_json::to_value(level(level_of(*c))).expect("a level serialises");
            ReportingDescriptor::builder()
                .id(c.id())
                .name(c.title())
                .short_description(MultiformatMessageString::builder().text(c.title()).build())
                .default_configuration(ReportingConfiguration::builder().level(level).build())
                .build()
        })
        .collect::<Vec<_>>();
    let release = format!("{}/{}", report.namespace, report.release);
    let results: Vec<SarifResult> = report
        .changes
        .iter()
        .filter(|c| failing.contains(&c.class))
        .map(|c| {
            let object = format!("{}/{}/{}", c.object.kind, c.object.namespace.as_deref().unwrap_or(""), c.object.name);
            let mut logical_locations = vec![
                logical(&report.namespace, report.namespace.clone(), "namespace"),
                logical(&report.release, format!("{}/release:{}", report.namespace, report.release), "module"),
                logical(&object, format!("{release}/{object}"), "object"),
            ];
            let path = c.path.as_ref().map(ToString::to_string).unwrap_or_default();
            if !path.is_empty() {
                logical_locations.push(logical(&path, format!("{release}/{object}/{path}"), "member"));
            }
            SarifResult::builder()
                .rule_id(c.class.id())
                .level(level(level_of(c.class)))
                .message(Message::builder().text(crate::render::upgrade::message(c)).build())
                .locations(vec![Location::builder().logical_locations(logical_locations).build()])
                .partial_fingerprints(fingerprint(&["upgrade", &release, &object, &path, c.class.id()]))
                .build()
        })
        .collect();
    let driver =
        ToolComponent::builder().name("kubectl-drift").semantic_version(env!("CARGO_PKG_VERSION")).rules(rules).build();
    let run = Run::builder().tool(Tool::builder().driver(driver).build()).results(results).build();
    let log = Sarif::builder().schema(SCHEMA_URI).version(serde_json::json!("2.1.0")).runs(vec![run]).build();
    serde_json::to_writer_pretty(&mut *out, &log).map_err(std::io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use serde_sarif::sarif::Sarif;

    use crate::render::ci::fixture;
    use crate::render::ci::fixture::render;

    fn results(json: &str) -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["runs"][0]["results"].as_array().unwrap().clone()
    }

    #[test]
    fn sarif_of_manifests_points_at_files_and_lines() {
        let json = render(|o| super::manifests(o, &fixture::manifests(), &fixture::places()));
        fixture::assert_redacted(&json);
        // Read back by the typed model.
        let log: Sarif = serde_json::from_str(&json).unwrap();
        assert_eq!(log.runs[0].tool.driver.rules.as_ref().unwrap().len(), 5);
        let results = results(&json);
        let summary: Vec<(String, String, String, i64)> = results
            .iter()
            .map(|r| {
                let phys = &r["locations"][0]["physicalLocation"];
                (
                    r["ruleId"].as_str().unwrap().to_string(),
                    r["level"].as_str().unwrap().to_string(),
                    phys["artifactLocation"]["uri"].as_str().unwrap_or("-").to_string(),
                    phys["region"]["startLine"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        let s = |r: &str, l: &str, u: &str, n| (r.to_string(), l.to_string(), u.to_string(), n);
        let file = "k8s/we%20b%2C1%3A%25.yaml";
        assert_eq!(
            summary,
            [
                s("drift/changed", "error", file, 2),
                s("drift/changed", "error", file, 14),
                s("drift/added-by-hand", "warning", file, 20),
                s("drift/missing", "error", file, 27),
                s("drift/error", "error", file, 33),
                s("drift/error", "error", "k8s/bad.yaml", 0),
                s("drift/missing", "error", "overlays/prod/kustomization.yaml", 0),
                // A kustomized object at the file it came from.
                s("drift/missing", "error", "base/worker.yaml", 7),
                s("drift/extra", "warning", "-", 0),
            ]
        );
        insta::assert_snapshot!("sarif_manifests", json);
    }

    /// A release has no file: logical locations name cluster, namespace, release, object and
    /// fields. Fingerprints are the same on a rerun, differ between findings, and do not follow
    /// the values.
    #[test]
    fn sarif_of_releases_has_logical_locations_and_stable_fingerprints() {
        let json = render(|o| super::releases(o, &fixture::releases_two()));
        fixture::assert_redacted(&json);
        let all = results(&json);
        let first = &all[0];
        let names: Vec<&str> = first["locations"][0]["logicalLocations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["fullyQualifiedName"].as_str().unwrap())
            .collect();
        assert_eq!(names[..3], ["prod-eu", "prod-eu/shop", "prod-eu/shop/release:shop"]);
        assert!(names[3].starts_with("prod-eu/shop/release:shop/Deployment/shop/web"), "{names:?}");
        assert!(names[4].ends_with("/spec.replicas"), "{names:?}");
        assert!(first["locations"][0].get("physicalLocation").is_none());
        let prints: Vec<&str> =
            all.iter().map(|r| r["partialFingerprints"][super::FINGERPRINT].as_str().unwrap()).collect();
        let unique: std::collections::BTreeSet<_> = prints.iter().collect();
        assert_eq!(unique.len(), prints.len(), "{prints:?}");
        // Another value of the same field: the same fingerprint.
        let mut fleet = fixture::releases_two();
        fleet.clusters[0].report.as_mut().unwrap().releases[0].objects[0].fields[0].live = Some(serde_json::json!(7));
        let again = render(|o| super::releases(o, &fleet));
        assert_eq!(results(&again)[0]["partialFingerprints"], first["partialFingerprints"]);
        assert_ne!(results(&again)[0]["message"], first["message"]);
        // The unreachable cluster is one error result.
        let last = all.last().unwrap();
        assert_eq!(last["ruleId"], "drift/error");
        assert!(last["message"]["text"].as_str().unwrap().starts_with("cluster prod-us could not be read"));
        insta::assert_snapshot!("sarif_releases_two_clusters", json);
    }

    #[test]
    fn uris_are_encoded() {
        assert_eq!(super::uri("k8s/a b.yaml"), "k8s/a%20b.yaml");
        assert_eq!(super::uri("/tmp/x,y.yaml"), "file:///tmp/x%2Cy.yaml");
    }
}
