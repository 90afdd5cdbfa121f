//! What the CI formats (JUnit, SARIF, GitHub annotations) share: the kind of finding an object
//! is (one SARIF rule each), its redacted field list and detail lines, the names of targets, and
//! where a manifests object sits in its file ([`Places`]).
//!
//! Secret values are redacted when the report is built, so the values shown here are the
//! report's (`<redacted, N bytes, sha256:...>` unless `--show-secrets`).

use std::collections::HashMap;

use serde_json::Value;

use crate::report::{Change, ExtraOrigin, FileOrigin, ObjectReport, ObjectState, ReleaseOrigin, SourceType};

/// What is wrong with one object, as the CI formats classify it (a SARIF rule each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Fields differ from the desired state.
    Changed,
    /// The object is not live.
    Missing,
    /// Only fields added live, by hand or by another tool; every desired field is as desired.
    AddedByHand,
    /// Live, not in the desired state.
    Extra,
    /// Could not be checked.
    Error,
}

/// How serious a finding is (SARIF `level`, the GitHub command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
}

impl Finding {
    pub const ALL: [Finding; 5] =
        [Finding::Changed, Finding::Missing, Finding::AddedByHand, Finding::Extra, Finding::Error];

    /// The object's finding; `None` for an object whose differences are all ignored.
    pub fn of(o: &ObjectReport) -> Option<Finding> {
        match o.state {
            ObjectState::Missing => Some(Finding::Missing),
            ObjectState::Extra => Some(Finding::Extra),
            ObjectState::Error => Some(Finding::Error),
            ObjectState::Ignored => None,
            ObjectState::Changed => {
                let counted: Vec<_> = o.fields.iter().filter(|f| f.reason.is_none()).collect();
                if !counted.is_empty() && counted.iter().all(|f| f.change == Change::Added) {
                    Some(Finding::AddedByHand)
                } else {
                    Some(Finding::Changed)
                }
            }
        }
    }

    /// The rule id (SARIF `ruleId`).
    pub fn id(self) -> &'static str {
        match self {
            Finding::Changed => "drift/changed",
            Finding::Missing => "drift/missing",
            Finding::AddedByHand => "drift/added-by-hand",
            Finding::Extra => "drift/extra",
            Finding::Error => "drift/error",
        }
    }

    /// What happened, after the object's title (`Deployment shop/web changed`).
    pub fn words(self) -> &'static str {
        match self {
            Finding::Changed => "changed",
            Finding::Missing => "missing",
            Finding::AddedByHand => "has fields added by hand",
            Finding::Extra => "extra",
            Finding::Error => "could not be checked",
        }
    }

    /// The rule's one-line description.
    pub fn description(self) -> &'static str {
        match self {
            Finding::Changed => "A live object's fields differ from its desired state",
            Finding::Missing => "An object of the desired state is not live",
            Finding::AddedByHand => {
                "A live object has fields that are not in its desired state (added by hand or by another tool)"
            }
            Finding::Extra => {
                "A live object carries the release's or the manifests' labels but is not in the desired state"
            }
            Finding::Error => "An object or target could not be checked (forbidden, kind not served, unreadable file)",
        }
    }

    /// Missing objects, changed fields and what could not be checked are errors; what was only
    /// added (fields, objects) is a warning: the desired state is still there.
    pub fn level(self) -> Level {
        match self {
            Finding::Changed | Finding::Missing | Finding::Error => Level::Error,
            Finding::AddedByHand | Finding::Extra => Level::Warning,
        }
    }
}

/// One value as a line shows it: strings as they are, anything else as compact JSON; long
/// values cut at 200 characters.
fn shown(v: &Option<Value>) -> String {
    let text = match v {
        None => "(absent)".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// The failure message: the object's finding and its redacted field list (paths only), e.g.
/// `changed: spec.replicas, data.password`.
pub fn message(o: &ObjectReport, finding: Finding) -> String {
    match finding {
        Finding::Missing => "missing: the object is not live".into(),
        Finding::Extra => "extra: live, not in the desired state".into(),
        Finding::Error => format!("could not be checked: {}", o.error.as_deref().unwrap_or("unknown error")),
        Finding::Changed | Finding::AddedByHand => {
            let paths: Vec<String> =
                o.fields.iter().filter(|f| f.reason.is_none()).map(|f| f.path.to_string()).collect();
            format!("{}: {}", if finding == Finding::Changed { "changed" } else { "added by hand" }, paths.join(", "))
        }
    }
}

/// One line per counted field: `spec.replicas: 2 -> 5 (by kubectl-scale)`, values as the report
/// has them (Secret values redacted); a field a newer, incomplete Helm revision set says so.
pub fn details(o: &ObjectReport) -> Vec<String> {
    let mut lines: Vec<String> = o
        .fields
        .iter()
        .filter(|f| f.reason.is_none())
        .map(|f| {
            let what = match f.change {
                Change::Changed => format!("{} -> {}", shown(&f.desired), shown(&f.live)),
                Change::Added => format!("added live: {}", shown(&f.live)),
                Change::Removed => format!("removed live (desired: {})", shown(&f.desired)),
            };
            let by = f.manager.as_ref().map(|m| format!(" (by {m})")).unwrap_or_default();
            let rev = f.from_revision.map(|r| format!(" (from revision {r})")).unwrap_or_default();
            format!("{}: {what}{by}{rev}", f.path)
        })
        .collect();
    if let Some(r) = o.from_revision {
        lines.push(format!("from revision {r} (a newer, incomplete Helm revision)"));
    }
    lines
}

/// What an ignored object's differences were ignored for.
pub fn ignored_reasons(o: &ObjectReport) -> String {
    let mut reasons: Vec<&str> = o.fields.iter().filter_map(|f| f.reason.as_deref()).collect();
    reasons.dedup();
    if reasons.is_empty() { "ignored".into() } else { format!("ignored: {}", reasons.join("; ")) }
}

/// `cluster: name` when several clusters are reported, else `name`.
pub fn in_cluster(cluster: Option<&str>, name: &str) -> String {
    match cluster {
        Some(c) => format!("{c}: {name}"),
        None => name.to_string(),
    }
}

pub fn release_name(r: &ReleaseOrigin) -> String {
    format!("release {}/{}", r.namespace, r.name)
}

pub fn file_name(f: &FileOrigin) -> String {
    match f.source_type {
        SourceType::File => format!("file {}", f.path),
        SourceType::Kustomization => format!("kustomization {}", f.path),
        SourceType::FluxKustomization => format!("Flux Kustomization {}", f.path),
        SourceType::ArgoApplication => format!("Argo CD Application {}", f.path),
    }
}

pub fn extra_name(e: &ExtraOrigin) -> String {
    format!("extra objects ({})", e.selectors.join(", "))
}

/// Where manifests objects sit: an object's source (`file#N`) to the line its document starts
/// on, and a kustomization directory to its kustomization file (a rendered object's origin is
/// not kept by `kubectl kustomize`, so it points at the kustomization). The app reads them
/// (`source::manifest_files::document_lines`); the renderers only look them up.
///
/// A kustomization's object whose `source` is the file it came from (kustomize's origin
/// annotation) points at that file, at the line of its document found by kind and name
/// (`objects`); a name kustomize changed (`namePrefix`) finds no line.
#[derive(Debug, Clone, Default)]
pub struct Places {
    pub lines: HashMap<String, usize>,
    pub kustomizations: HashMap<String, String>,
    /// Files kustomized objects came from, read: (file, kind, name) to line.
    pub objects: HashMap<(String, String, String), usize>,
    /// Those files (an object's `source` that is one of them is a file, not `DIR#N`).
    pub origin_files: std::collections::HashSet<String>,
}

/// A file and a line in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: Option<usize>,
}

impl Places {
    /// Where an object of `file` (or, with no object, the file itself) is.
    pub fn of(&self, file: &FileOrigin, object: Option<&ObjectReport>) -> Place {
        match file.source_type {
            SourceType::File => Place {
                file: file.path.clone(),
                line: object.and_then(|o| o.source.as_ref()).and_then(|s| self.lines.get(s)).copied(),
            },
            SourceType::Kustomization => match object.and_then(|o| o.source.as_ref().map(|s| (o, s))) {
                Some((o, source)) if self.origin_files.contains(source) => Place {
                    file: source.clone(),
                    line: self.objects.get(&(source.clone(), o.kind.clone(), o.name.clone())).copied(),
                },
                _ => Place {
                    file: self.kustomizations.get(&file.path).cloned().unwrap_or_else(|| file.path.clone()),
                    line: None,
                },
            },
            // No file here: the object's place is its GitOps object.
            SourceType::FluxKustomization | SourceType::ArgoApplication => {
                Place { file: file.path.clone(), line: None }
            }
        }
    }
}

/// Reports the CI formats' tests render: hostile names and values (newlines, `%`, `::`, `<`,
/// `&`, `,`), a Secret's values (redacted as the report redacts them), every kind of finding,
/// a target that failed, extra and ignored objects, and a cluster that could not be read.
#[cfg(test)]
pub(crate) mod fixture {
    use serde_json::json;

    use crate::report::fleet::{ClusterResult, Fleet};
    use crate::report::{
        Change, Drift, DriftReport, ExtraOrigin, FieldReport, FileOrigin, ManifestsReport, ObjectReport, ObjectState,
        Problem, ReleaseOrigin, SourceType, Status, TargetReport, field_report,
    };

    /// What a writer wrote, as text.
    pub fn render(f: impl Fn(&mut Vec<u8>) -> std::io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// A Secret's values in the clear (base64 of `hunter2` and `supers3cret`): no output may show them.
    pub const SECRETS: [&str; 4] = ["aHVudGVyMg==", "hunter2", "c3VwZXJzM2NyZXQ=", "supers3cret"];
    /// A name no cluster accepts but a format must survive.
    pub const HOSTILE: &str = "web\n::error::pwned %0A <b>&amp;, x:y";
    pub const HOSTILE_VALUE: &str = "line1\r\nline2 100% :: <tag attr=\"v\">&'";

    fn field(path: &str, change: Change, desired: serde_json::Value, live: serde_json::Value) -> FieldReport {
        FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change,
            desired: Some(desired),
            live: Some(live),
            manager: Some("kubectl-edit".into()),
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    fn secret() -> ObjectReport {
        let d = Drift {
            path: "data".parse().unwrap(),
            change: Change::Changed,
            desired: Some(json!({"password": "aHVudGVyMg=="})),
            live: Some(json!({"password": "c3VwZXJzM2NyZXQ="})),
            owner: None,
            ignored: None,
        };
        ObjectReport {
            fields: vec![field_report("Secret", &d, false)],
            source: Some("k8s/we b,1:%.yaml#2".into()),
            ..ObjectReport::new("v1", "Secret", Some("shop".into()), "db", ObjectState::Changed)
        }
    }

    /// Objects of every kind of finding, in a file whose path is hostile too.
    pub fn objects() -> Vec<ObjectReport> {
        let changed = ObjectReport {
            fields: vec![
                field("spec.replicas", Change::Changed, json!(2), json!(5)),
                field("data.motd", Change::Changed, json!("hello"), json!(HOSTILE_VALUE)),
            ],
            source: Some("k8s/we b,1:%.yaml#1".into()),
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), HOSTILE, ObjectState::Changed)
        };
        let added = ObjectReport {
            fields: vec![field("metadata.labels.debug", Change::Added, json!(null), json!("true"))],
            source: Some("k8s/we b,1:%.yaml#3".into()),
            ..ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "settings", ObjectState::Changed)
        };
        let missing = ObjectReport {
            source: Some("k8s/we b,1:%.yaml#4".into()),
            ..ObjectReport::new("v1", "Service", Some("shop".into()), "web", ObjectState::Missing)
        };
        let error = ObjectReport {
            error: Some("Widget (example.com/v1) is not served by the cluster".into()),
            source: Some("k8s/we b,1:%.yaml#5".into()),
            ..ObjectReport::new("example.com/v1", "Widget", Some("shop".into()), "w", ObjectState::Error)
        };
        let mut ignored_field = field("spec.replicas", Change::Changed, json!(1), json!(3));
        ignored_field.reason = Some("owned by HorizontalPodAutoscaler shop/api".into());
        let ignored = ObjectReport {
            fields: vec![ignored_field],
            source: Some("k8s/we b,1:%.yaml#6".into()),
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "api", ObjectState::Ignored)
        };
        vec![changed, secret(), added, missing, error, ignored]
    }

    fn release_report() -> DriftReport {
        let origin = |name: &str| ReleaseOrigin {
            name: name.into(),
            namespace: "shop".into(),
            revision: 3,
            ..Default::default()
        };
        let drifted = TargetReport { objects: objects(), ..TargetReport::new(origin("shop"), Status::Error) };
        let clean = TargetReport::new(origin("clean"), Status::Clean);
        let failed = TargetReport::failed(origin("gone"), "release \"gone\" not found in namespace shop");
        let extra = TargetReport {
            objects: vec![ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "stray", ObjectState::Extra)],
            ..TargetReport::new(origin("extra"), Status::Drifted)
        };
        let mut report = DriftReport::new(vec![drifted, clean, failed, extra], 9);
        report.cluster = "prod-eu".into();
        report
    }

    fn manifests_report() -> ManifestsReport {
        let file = |path: &str, source_type| FileOrigin { path: path.into(), source_type, ..Default::default() };
        let drifted = TargetReport {
            problem: Some(Problem::ObjectsUnchecked(1)),
            objects: objects(),
            ..TargetReport::new(file("k8s/we b,1:%.yaml", SourceType::File), Status::Error)
        };
        let clean = TargetReport::new(file("k8s/clean.yaml", SourceType::File), Status::Clean);
        let unreadable =
            TargetReport::failed(file("k8s/bad.yaml", SourceType::File), "k8s/bad.yaml: document 1 is not valid YAML");
        let kustomized = TargetReport {
            objects: vec![
                ObjectReport {
                    source: Some("overlays/prod#1".into()),
                    ..ObjectReport::new("v1", "Service", Some("shop".into()), "api", ObjectState::Missing)
                },
                ObjectReport {
                    source: Some("base/worker.yaml".into()),
                    ..ObjectReport::new("v1", "ServiceAccount", Some("shop".into()), "worker", ObjectState::Missing)
                },
            ],
            ..TargetReport::new(file("overlays/prod", SourceType::Kustomization), Status::Drifted)
        };
        let extra = TargetReport {
            objects: vec![ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "stray", ObjectState::Extra)],
            ..TargetReport::new(
                ExtraOrigin { selectors: vec!["app=shop".into()], namespaces: vec!["shop".into()] },
                Status::Drifted,
            )
        };
        let mut report =
            ManifestsReport::with_extra(vec![drifted, clean, unreadable, kustomized], vec![], Some(extra), 8);
        report.cluster = "prod-eu".into();
        report
    }

    /// One cluster.
    pub fn releases() -> Fleet<DriftReport> {
        Fleet::new(vec![ClusterResult::report("prod-eu".into(), release_report())])
    }

    /// Two clusters, the second unreachable.
    pub fn releases_two() -> Fleet<DriftReport> {
        Fleet::new(vec![
            ClusterResult::report("prod-eu".into(), release_report()),
            ClusterResult::error("prod-us".into(), "failed to list Helm releases: Unauthorized (401)".into()),
        ])
    }

    pub fn manifests() -> Fleet<ManifestsReport> {
        Fleet::new(vec![ClusterResult::report("prod-eu".into(), manifests_report())])
    }

    pub fn manifests_two() -> Fleet<ManifestsReport> {
        Fleet::new(vec![
            ClusterResult::report("prod-eu".into(), manifests_report()),
            ClusterResult::error("prod-us".into(), "connection refused".into()),
        ])
    }

    /// Lines as `source::manifest::document_lines` would give them for the hostile file.
    pub fn places() -> super::Places {
        let mut p = super::Places::default();
        for (n, line) in [(1, 2), (2, 14), (3, 20), (4, 27), (5, 33), (6, 40)] {
            p.lines.insert(format!("k8s/we b,1:%.yaml#{n}"), line);
        }
        p.kustomizations.insert("overlays/prod".into(), "overlays/prod/kustomization.yaml".into());
        p.origin_files.insert("base/worker.yaml".into());
        p.objects.insert(("base/worker.yaml".into(), "ServiceAccount".into(), "worker".into()), 7);
        p
    }

    /// Fails when a Secret value in the clear is in `text`.
    pub fn assert_redacted(text: &str) {
        for s in SECRETS {
            assert!(!text.contains(s), "{s:?} in:\n{text}");
        }
        // `<` is escaped in XML: look for what follows it.
        assert!(text.contains("redacted, 7 bytes"), "no redaction in:\n{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FieldReport;
    use serde_json::json;

    fn field(path: &str, change: Change) -> FieldReport {
        FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change,
            desired: Some(json!(2)),
            live: Some(json!(5)),
            manager: None,
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    #[test]
    fn an_object_with_only_added_fields_is_added_by_hand() {
        let mut o = ObjectReport::new("v1", "ConfigMap", Some("a".into()), "b", ObjectState::Changed);
        o.fields = vec![field("metadata.labels.x", Change::Added)];
        assert_eq!(Finding::of(&o), Some(Finding::AddedByHand));
        o.fields.push(field("data.k", Change::Changed));
        assert_eq!(Finding::of(&o), Some(Finding::Changed));
        assert_eq!(message(&o, Finding::Changed), "changed: metadata.labels.x, data.k");
        o.state = ObjectState::Ignored;
        assert_eq!(Finding::of(&o), None);
    }

    #[test]
    fn long_values_are_cut() {
        let long = Some(json!("x".repeat(300)));
        assert_eq!(shown(&long).chars().count(), 201);
    }
}
