//! The CRDs a release's chart ships in `crds/`, against the live CRDs. Helm creates them at the
//! first install and never upgrades or deletes them, so after a chart upgrade the live CRD can
//! lag the chart: a served version missing, a schema without the new fields, a printer column or
//! subresource the operator now expects. And a live CRD whose `status.storedVersions` lists a
//! version the chart's CRD no longer has blocks the upgrade of the CRD itself until the objects
//! are migrated (the API server refuses a CRD whose versions lack one of its stored versions).
//!
//! What is compared is what the API server keeps as written, so its defaulting never shows as
//! drift: each version's `served` and `storage`, the set of property paths of its schema (not the
//! schema's text: the server adds no property, but reorders and may normalise the rest), its
//! printer columns by name (`jsonPath` and `type`), and which subresources it has. A CRD the chart
//! also renders from `templates/` is left to the ordinary comparison (never two findings). Pure:
//! the caller fetches the live CRDs.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::engine::compare::rules::{IgnoreRule, Subject};
use crate::report::field::{Change, Drift};
use crate::report::path::{FieldPath, Seg};
use crate::report::{ObjectReport, ObjectState};
use crate::source::helm::Release;
use crate::source::manifest::{DesiredObject, parse_stream};

/// The kind and apiVersion compared.
pub const CRD_KIND: &str = "CustomResourceDefinition";
pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The note every finding carries: why Helm did not bring the chart's version.
pub const NOT_UPGRADED: &str = "from the chart's crds/: Helm installs crds/ once and never upgrades them";

/// One CRD of the chart's `crds/`.
#[derive(Debug, Clone)]
pub struct ChartCrd {
    pub name: String,
    /// `release NS/NAME revision N (crds/x.yaml)`.
    pub source: String,
    pub body: Value,
}

/// The CRDs of a release's `crds/` (in storage with the chart), except those `templated` also
/// renders (compared as ordinary objects); the problems of files that do not parse.
pub fn chart_crds(release: &Release, templated: &[DesiredObject]) -> (Vec<ChartCrd>, Vec<String>) {
    let origin = format!("release {}/{} revision {}", release.namespace, release.name, release.revision);
    let rendered: BTreeSet<&str> = templated.iter().filter(|d| d.kind == CRD_KIND).map(|d| d.name.as_str()).collect();
    let mut crds = Vec::new();
    let mut errors = Vec::new();
    for (path, text) in release.crd_files() {
        let Some(text) = text else {
            errors.push(format!("{origin}: {path} in the stored chart is not UTF-8 text"));
            continue;
        };
        let (objects, parse_errors) = parse_stream(&text, &format!("{origin} ({path})"));
        errors.extend(parse_errors.iter().map(|e| e.to_string()));
        for o in objects {
            // Only v1 CRDs are compared: the API server has served nothing else since 1.22.
            if o.kind != CRD_KIND || o.api_version != CRD_API_VERSION || rendered.contains(o.name.as_str()) {
                continue;
            }
            crds.push(ChartCrd { name: o.name, source: format!("{origin} ({path})"), body: o.body });
        }
    }
    (crds, errors)
}

fn versions(crd: &Value) -> BTreeMap<String, &Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Some((v.get("name")?.as_str()?.to_string(), v)))
        .collect()
}

fn version_path(name: &str) -> FieldPath {
    FieldPath::root().key("spec").key("versions").child(Seg::Item { field: "name".into(), value: name.into() })
}

/// Every property of a schema, as the path to it (`properties.spec.properties.size`), with the
/// property's schema; into `items` and `additionalProperties` too.
fn properties<'v>(schema: &'v Value, at: FieldPath, out: &mut BTreeMap<FieldPath, &'v Value>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let p = at.key("properties").key(k);
            out.insert(p.clone(), v);
            properties(v, p, out);
        }
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(v) = schema.get(nested).filter(|v| v.is_object()) {
            properties(v, at.key(nested), out);
        }
    }
}

/// The printer columns of a version by name: what the server keeps of each as given.
fn columns(version: &Value) -> BTreeMap<String, Value> {
    version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c.get("name")?.as_str()?.to_string();
            Some((name, json!({"jsonPath": c.get("jsonPath"), "type": c.get("type")})))
        })
        .collect()
}

fn drift(path: FieldPath, change: Change, desired: Option<Value>, live: Option<Value>) -> Drift {
    Drift { path, change, desired, live, owner: None, ignored: None }
}

/// A version as the report shows it when it is on one side only.
fn version_summary(v: &Value) -> Value {
    json!({"served": v.get("served"), "storage": v.get("storage")})
}

/// The differences of the live CRD from the chart's (see the module documentation), and the
/// upgrade blocker: `status.storedVersions` naming a version the chart's CRD does not serve.
pub fn crd_drifts(chart: &Value, live: &Value) -> Vec<Drift> {
    let mut out = Vec::new();
    let (want, have) = (versions(chart), versions(live));
    for (name, w) in &want {
        let at = version_path(name);
        let Some(h) = have.get(name) else {
            out.push(drift(at, Change::Removed, Some(version_summary(w)), None));
            continue;
        };
        for flag in ["served", "storage"] {
            let (a, b) = (w.get(flag).and_then(Value::as_bool), h.get(flag).and_then(Value::as_bool));
            if a != b {
                out.push(drift(at.key(flag), Change::Changed, a.map(Value::Bool), b.map(Value::Bool)));
            }
        }
        let schema = |v: &Value| v.pointer("/schema/openAPIV3Schema").cloned().unwrap_or(Value::Null);
        let (ws, hs) = (schema(w), schema(h));
        let (mut wp, mut hp) = (BTreeMap::new(), BTreeMap::new());
        let base = at.key("schema").key("openAPIV3Schema");
        properties(&ws, base.clone(), &mut wp);
        properties(&hs, base, &mut hp);
        let kind_of = |v: &Value| v.get("type").cloned().unwrap_or(json!("object"));
        for (p, v) in &wp {
            // Below a property missing live, only the property itself is reported.
            if !hp.contains_key(p) && !wp.keys().any(|q| q != p && p.is_under(q) && !hp.contains_key(q)) {
                out.push(drift(p.clone(), Change::Removed, Some(kind_of(v)), None));
            }
        }
        for (p, v) in &hp {
            if !wp.contains_key(p) && !hp.keys().any(|q| q != p && p.is_under(q) && !wp.contains_key(q)) {
                out.push(drift(p.clone(), Change::Added, None, Some(kind_of(v))));
            }
        }
        let (wc, hc) = (columns(w), columns(h));
        for (c, v) in &wc {
            let path = at.key("additionalPrinterColumns").child(Seg::Item { field: "name".into(), value: c.clone() });
            match hc.get(c) {
                None => out.push(drift(path, Change::Removed, Some(v.clone()), None)),
                Some(l) if l != v => out.push(drift(path, Change::Changed, Some(v.clone()), Some(l.clone()))),
                Some(_) => {}
            }
        }
        for (c, v) in hc.iter().filter(|(c, _)| !wc.contains_key(*c)) {
            let path = at.key("additionalPrinterColumns").child(Seg::Item { field: "name".into(), value: c.clone() });
            out.push(drift(path, Change::Added, None, Some(v.clone())));
        }
        for sub in ["status", "scale"] {
            let (a, b) = (w.pointer(&format!("/subresources/{sub}")), h.pointer(&format!("/subresources/{sub}")));
            let path = at.key("subresources").key(sub);
            match (a, b) {
                (Some(a), None) => out.push(drift(path, Change::Removed, Some(a.clone()), None)),
                (None, Some(b)) => out.push(drift(path, Change::Added, None, Some(b.clone()))),
                (Some(a), Some(b)) if a != b => {
                    out.push(drift(path, Change::Changed, Some(a.clone()), Some(b.clone())))
                }
                _ => {}
            }
        }
    }
    for (name, h) in have.iter().filter(|(n, _)| !want.contains_key(*n)) {
        out.push(drift(version_path(name), Change::Added, None, Some(version_summary(h))));
    }
    // The API server refuses a CRD whose spec.versions lacks a version of its
    // status.storedVersions; a version kept in the list with `served: false` is allowed (objects
    // stored in it are still read through the served ones), so only absence blocks.
    let listed: Vec<&str> = want.keys().map(String::as_str).collect();
    let stored: Vec<&str> = live
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if stored.iter().any(|s| !listed.contains(s)) {
        out.push(drift(
            FieldPath::root().key("status").key("storedVersions"),
            Change::Changed,
            Some(json!(listed)),
            Some(json!(stored)),
        ));
    }
    out
}

/// The report of one chart CRD: missing live, changed (the drifts of [`crd_drifts`] after the
/// ignore rules), or nothing when they agree.
pub fn crd_report(crd: &ChartCrd, live: Option<&Value>, rules: &[IgnoreRule]) -> Option<ObjectReport> {
    let (source, note) = (Some(crd.source.clone()), Some(NOT_UPGRADED.to_string()));
    let Some(live) = live else {
        let ignored = rules.iter().any(|r| r.is_whole_object() && r.matches_object(CRD_KIND, "", &crd.name));
        let state = if ignored { ObjectState::Ignored } else { ObjectState::Missing };
        return Some(ObjectReport {
            source,
            note,
            ..ObjectReport::new(CRD_API_VERSION, CRD_KIND, None, crd.name.clone(), state)
        });
    };
    let mut drifts = crd_drifts(&crd.body, live);
    if drifts.is_empty() {
        return None;
    }
    let subject = Subject {
        group: "apiextensions.k8s.io",
        kind: CRD_KIND,
        namespace: "",
        name: &crd.name,
        desired: &crd.body,
        live,
    };
    crate::engine::compare::rules::apply(rules, &subject, &mut drifts);
    let state = if drifts.iter().any(|d| d.ignored.is_none()) { ObjectState::Changed } else { ObjectState::Ignored };
    Some(ObjectReport {
        fields: drifts.iter().map(|d| crate::report::field_report(CRD_KIND, d, false)).collect(),
        source,
        note,
        ..ObjectReport::new(CRD_API_VERSION, CRD_KIND, None, crd.name.clone(), state)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(versions: Value, stored: Option<Value>) -> Value {
        let mut c = json!({
            "apiVersion": CRD_API_VERSION, "kind": CRD_KIND,
            "metadata": {"name": "widgets.drift.test"},
            "spec": {"group": "drift.test", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"}, "versions": versions}
        });
        if let Some(s) = stored {
            c["status"] = json!({"storedVersions": s});
        }
        c
    }

    fn version(name: &str, storage: bool, props: Value) -> Value {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}},
               "subresources": {"status": {}},
               "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]})
    }

    fn paths(d: &[Drift]) -> Vec<(String, Change)> {
        d.iter().map(|d| (d.path.to_string(), d.change)).collect()
    }

    #[test]
    fn the_same_crd_reordered_and_defaulted_is_no_drift() {
        let chart = crd(json!([version("v1", true, json!({"size": {"type": "integer"}}))]), None);
        // As the API server keeps it: keys reordered, defaults added, status set.
        let mut live = crd(
            json!([{"additionalPrinterColumns": [{"jsonPath": ".spec.size", "name": "Size", "type": "integer", "priority": 0}],
                    "subresources": {"status": {}}, "storage": true, "served": true, "name": "v1",
                    "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {"size": {"type": "integer", "format": "int32"}}, "type": "object"}}, "type": "object"}}}]),
            Some(json!(["v1"])),
        );
        live["spec"]["conversion"] = json!({"strategy": "None"});
        assert!(crd_drifts(&chart, &live).is_empty(), "{:?}", paths(&crd_drifts(&chart, &live)));
    }

    #[test]
    fn a_new_version_and_field_in_the_chart_and_a_stale_stored_version() {
        let live = crd(json!([version("v1", true, json!({"size": {"type": "integer"}}))]), Some(json!(["v1"])));
        let chart = crd(
            json!([
                {"name": "v1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer"}, "color": {"type": "string"}}}}}},
                 "subresources": {"status": {}},
                 "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]},
                version("v2", true, json!({"size": {"type": "integer"}, "color": {"type": "string", "properties": {}}})),
            ]),
            None,
        );
        let got = paths(&crd_drifts(&chart, &live));
        assert_eq!(
            got,
            vec![
                ("spec.versions[name=v1].storage".to_string(), Change::Changed),
                (
                    "spec.versions[name=v1].schema.openAPIV3Schema.properties.spec.properties.color".to_string(),
                    Change::Removed
                ),
                ("spec.versions[name=v2]".to_string(), Change::Removed),
            ]
        );
        // The chart's next version serves only v2: v1, stored live, blocks the CRD's upgrade.
        let chart = crd(json!([version("v2", true, json!({"size": {"type": "integer"}}))]), None);
        let live = crd(json!([version("v1", true, json!({})), version("v2", false, json!({}))]), Some(json!(["v1"])));
        let drifts = crd_drifts(&chart, &live);
        let stored = drifts.iter().find(|d| d.path.to_string() == "status.storedVersions").unwrap();
        assert_eq!((stored.desired.clone(), stored.live.clone()), (Some(json!(["v2"])), Some(json!(["v1"]))));
        let crd = ChartCrd {
            name: "widgets.drift.test".into(),
            source: "release a/b revision 2 (crds/w.yaml)".into(),
            body: chart,
        };
        let report = crd_report(&crd, Some(&live), &[]).unwrap();
        assert_eq!(report.note.as_deref(), Some(NOT_UPGRADED));
        assert_eq!(crate::engine::reconcile::blocking_versions(&report), (vec!["v1".to_string()], Vec::new()));
        // A field in live only (a newer CRD than the chart's) is an addition.
        let added = paths(&drifts);
        assert!(added.contains(&("spec.versions[name=v1]".to_string(), Change::Added)), "{added:?}");
    }

    /// A release as Helm stores it: `chart.files` holds every file of the chart; only `crds/`
    /// YAML or JSON is read, and a CRD the templates also render is left to them.
    #[test]
    fn the_crds_of_a_stored_release() {
        use base64::Engine;
        let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
        let one = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.drift.test}\nspec: {group: drift.test}\n";
        let two = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: b.drift.test}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: c.drift.test}\n";
        let release: Release = serde_json::from_value(json!({
            "name": "r", "namespace": "ns", "version": 3,
            "chart": {"metadata": {"name": "c", "version": "1.0.0"}, "files": [
                {"name": "crds/one.yaml", "data": b64(one)},
                {"name": "crds/two.yml", "data": b64(two)},
                {"name": "crds/README.md", "data": b64("# not a CRD")},
                {"name": "files/dashboard.json", "data": b64("{}")},
            ]}
        }))
        .unwrap();
        assert_eq!(release.crd_files().len(), 2, "only crds/ YAML is kept");
        let templated = parse_stream(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: b.drift.test}\n",
            "t",
        )
        .0;
        let (crds, errors) = chart_crds(&release, &templated);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<(&str, &str)> = crds.iter().map(|c| (c.name.as_str(), c.source.as_str())).collect();
        assert_eq!(
            names,
            vec![
                ("a.drift.test", "release ns/r revision 3 (crds/one.yaml)"),
                ("c.drift.test", "release ns/r revision 3 (crds/two.yml)")
            ]
        );
    }

    /// nack 0.34's streamtemplates CRD keeps its only version with `served: false, storage:
    /// true`: the server stores in it, and applying the same CRD is accepted, so no blocker.
    #[test]
    fn a_stored_version_kept_unserved_is_no_blocker() {
        let mut v = version("v1beta1", true, json!({"size": {"type": "integer"}}));
        v["served"] = json!(false);
        let chart = crd(json!([v.clone()]), None);
        let live = crd(json!([v]), Some(json!(["v1beta1"])));
        assert!(crd_drifts(&chart, &live).is_empty(), "{:?}", paths(&crd_drifts(&chart, &live)));
    }

    #[test]
    fn missing_live_and_switched_off_by_a_rule() {
        let live = crd(json!([version("v0", true, json!({}))]), Some(json!(["v0"])));
        let chart = ChartCrd {
            name: "widgets.drift.test".into(),
            source: "release a/b revision 1 (crds/w.yaml)".into(),
            body: crd(json!([version("v1", true, json!({}))]), None),
        };
        assert_eq!(crd_report(&chart, None, &[]).unwrap().state, ObjectState::Missing);
        assert_eq!(crd_report(&chart, Some(&live), &[]).unwrap().state, ObjectState::Changed);
        let rule = IgnoreRule::parse_cli("CustomResourceDefinition:*").unwrap();
        assert_eq!(crd_report(&chart, Some(&live), std::slice::from_ref(&rule)).unwrap().state, ObjectState::Ignored);
    }
}
