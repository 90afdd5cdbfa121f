//! Compare: the desired objects of a [`Plan`] against the live objects [`Fetched`] for it, with
//! no I/O. Each pair is compared field by field ([`crate::engine::compare::compare_object`]); replicas an
//! HPA owns and fields the user's rules name are marked ignored; a desired object with no live
//! twin is missing; with a release, live objects carrying its labels that no desired object
//! names are extra. Unit-tested over recorded live objects (`tests/fixtures/live/`).

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::fetch::Fetched;
use super::plan::Plan;
use super::{ObjectsOutcome, belongs_to, error_object};
use crate::engine::compare::rules::{IgnoreRule, Subject};
use crate::engine::compare::{CompareContext, compare_object};
use crate::report::{ObjectReport, ObjectState, field_report};
use crate::source::manifest::DesiredObject;

type Key = (String, String, String);

fn key_of(kind: &str, namespace: &str, name: &str) -> Key {
    (kind.to_string(), namespace.to_string(), name.to_string())
}

fn meta_str<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    crate::source::live::at(v, pointer).and_then(Value::as_str)
}

/// How to judge differences: the comparison context, the user's ignore rules, and whether
/// Secret values may be shown.
pub struct Judge<'a> {
    pub ctx: &'a CompareContext,
    pub rules: &'a [IgnoreRule],
    pub show_secrets: bool,
}

/// Compare `desired` (the objects `plan` was made for) with what was fetched.
pub fn compare(desired: &[DesiredObject], plan: &Plan, fetched: &Fetched, judge: &Judge) -> ObjectsOutcome {
    let mut out = ObjectsOutcome { checked: desired.len(), ..Default::default() };
    for (index, e) in &plan.unresolved {
        let d = &desired[*index];
        out.errors.push(format!("{} {}: {e}", d.kind, d.name));
        out.objects.push(error_object(d, d.namespace.clone(), e.to_string()));
    }

    // Which replicas an autoscaler owns: (kind, namespace, name) -> "namespace/hpa".
    let mut hpa_targets: HashMap<Key, String> = HashMap::new();
    if let Some(hk) = &plan.hpa {
        for ns in &plan.hpa_namespaces {
            match fetched.get(hk, Some(ns)) {
                Ok(items) => {
                    for h in items.iter() {
                        if let (Some(kind), Some(name), Some(hname)) = (
                            meta_str(h, "/spec/scaleTargetRef/kind"),
                            meta_str(h, "/spec/scaleTargetRef/name"),
                            meta_str(h, "/metadata/name"),
                        ) {
                            hpa_targets.insert(key_of(kind, ns, name), format!("{ns}/{hname}"));
                        }
                    }
                }
                Err(e) => out.errors.push(e.to_string()),
            }
        }
    }

    let mut desired_keys: BTreeSet<Key> = BTreeSet::new();
    for t in &plan.targets {
        let d = &desired[t.index];
        let ns = &t.namespace;
        let ns_str = ns.clone().unwrap_or_default();
        desired_keys.insert(key_of(&d.kind, &ns_str, &d.name));
        // Data the API server would refuse: neither comparable nor appliable.
        if let Some(why) = crate::engine::compare::invalid_data(&d.body) {
            let e = format!("{why}: the API server would refuse this {}", d.kind);
            out.errors.push(format!("{} {}: {e}", d.kind, d.name));
            out.objects.push(error_object(d, ns.clone(), e));
            continue;
        }
        let items = match fetched.get(&t.kind, ns.as_deref()) {
            Ok(items) => items,
            Err(e) => {
                out.errors.push(format!("{} {}: {e}", d.kind, d.name));
                out.objects.push(error_object(d, ns.clone(), e.to_string()));
                continue;
            }
        };
        let live = match fetched.index(&t.kind, ns.as_deref()) {
            Some(ix) => ix.named(&d.name).map(|i| &items[i]),
            None => items.iter().find(|o| meta_str(o, "/metadata/name") == Some(d.name.as_str())),
        };
        let Some(live) = live else {
            out.objects.push(ObjectReport {
                source: Some(d.source.clone()),
                ..ObjectReport::new(
                    d.api_version.clone(),
                    d.kind.clone(),
                    ns.clone(),
                    d.name.clone(),
                    ObjectState::Missing,
                )
            });
            continue;
        };
        let mut body = d.body.clone();
        if let (Some(ns), Some(meta)) = (ns, body.get_mut("metadata").and_then(Value::as_object_mut)) {
            meta.insert("namespace".into(), Value::String(ns.clone()));
        }
        let mut drifts = compare_object(&body, live, judge.ctx);
        if let Some(hpa) = hpa_targets.get(&key_of(&d.kind, &ns_str, &d.name)) {
            for dr in drifts.iter_mut().filter(|dr| dr.path.to_string() == "spec.replicas") {
                dr.ignored = Some(format!("replicas are managed by HorizontalPodAutoscaler {hpa}"));
            }
        }
        let subject =
            Subject { group: d.group(), kind: &d.kind, namespace: &ns_str, name: &d.name, desired: &body, live };
        crate::engine::compare::rules::apply(judge.rules, &subject, &mut drifts);
        out.live.insert(key_of(&d.kind, &ns_str, &d.name), live.clone());
        if drifts.is_empty() {
            continue;
        }
        let state =
            if drifts.iter().any(|d| d.ignored.is_none()) { ObjectState::Changed } else { ObjectState::Ignored };
        out.objects.push(ObjectReport {
            fields: drifts.iter().map(|dr| field_report(&d.kind, dr, judge.show_secrets)).collect(),
            source: Some(d.source.clone()),
            ..ObjectReport::new(d.api_version.clone(), d.kind.clone(), ns.clone(), d.name.clone(), state)
        });
    }

    // Extra objects labelled for the release.
    if let Some(extra) = &plan.extra {
        let rel = &extra.release;
        for rk in &extra.kinds {
            let ns = extra.namespace_of(rk);
            let items = match fetched.get(rk, ns.as_deref()) {
                Ok(items) => items,
                Err(e) => {
                    out.errors.push(format!("while looking for extra objects: {e}"));
                    continue;
                }
            };
            let candidates: Box<dyn Iterator<Item = &Value>> = match fetched.index(rk, ns.as_deref()) {
                Some(ix) => Box::new(ix.of_release(&rel.name).iter().map(|i| &items[*i])),
                None => Box::new(items.iter()),
            };
            for o in candidates {
                if !belongs_to(o, rel) {
                    continue;
                }
                let (ons, oname) = crate::source::live::object_key(o);
                if desired_keys.contains(&key_of(&rk.resource.kind, &ons, &oname)) {
                    continue;
                }
                if rk.resource.kind == "PersistentVolumeClaim"
                    && extra.claim_prefixes.iter().any(|p| oname.starts_with(p.as_str()))
                {
                    continue;
                }
                let ignored = judge
                    .rules
                    .iter()
                    .any(|r| r.is_whole_object() && r.matches_object(&rk.resource.kind, &ons, &oname));
                let state = if ignored { ObjectState::Ignored } else { ObjectState::Extra };
                out.objects.push(ObjectReport::new(
                    rk.resource.api_version.clone(),
                    rk.resource.kind.clone(),
                    ns.clone(),
                    oname,
                    state,
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The compare step over objects recorded from a real API server (`tests/fixtures/live/`,
    //! written by `record.sh` there): the desired objects of a release "fx" as Helm applied them,
    //! then edited by hand with kubectl.
    use std::path::PathBuf;

    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use kube::discovery::ApiResource;

    use super::*;
    use crate::engine::drift::ReleaseIdentity;
    use crate::engine::drift::plan::{ExtraSearch, Target};
    use crate::report::field::Change;
    use crate::source::live::{LiveError, ResolvedKind};

    fn fixture(name: &str) -> String {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn recorded(name: &str) -> Vec<Value> {
        serde_json::from_str(&fixture(name)).expect("a recorded list is a JSON array")
    }

    fn kind<K: kube::Resource<DynamicType = ()>>() -> ResolvedKind {
        ResolvedKind { resource: ApiResource::erase::<K>(&()), namespaced: true }
    }

    fn desired() -> Vec<DesiredObject> {
        let (objects, errors) = crate::source::manifest::parse_stream(&fixture("desired.yaml"), "fx");
        assert!(errors.is_empty(), "{errors:?}");
        objects
    }

    /// The plan `plan::plan` makes for the release on a cluster serving these kinds (discovery
    /// needs a server; what it resolves is spelled out here).
    fn release_plan(desired: &[DesiredObject]) -> Plan {
        let ns = Some("fx".to_string());
        let kind_of = |d: &DesiredObject| match d.kind.as_str() {
            "ConfigMap" => kind::<ConfigMap>(),
            "Service" => kind::<Service>(),
            "Deployment" => kind::<Deployment>(),
            "HorizontalPodAutoscaler" => kind::<HorizontalPodAutoscaler>(),
            other => panic!("no kind {other} in the fixture"),
        };
        Plan {
            unresolved: Vec::new(),
            targets: desired
                .iter()
                .enumerate()
                .map(|(index, d)| Target { index, kind: kind_of(d), namespace: ns.clone(), name: d.name.clone() })
                .collect(),
            hpa: Some(kind::<HorizontalPodAutoscaler>()),
            hpa_namespaces: vec!["fx".into()],
            extra: Some(ExtraSearch {
                release: ReleaseIdentity { name: "fx".into(), namespace: "fx".into(), also_kinds: Vec::new() },
                kinds: vec![kind::<ConfigMap>(), kind::<Service>(), kind::<Deployment>()],
                claim_prefixes: Vec::new(),
            }),
        }
    }

    fn recorded_cluster() -> Fetched {
        let mut fetched = Fetched::default();
        let ns = Some("fx");
        fetched.insert_objects(&kind::<ConfigMap>(), ns, recorded("fx-configmaps.json"));
        fetched.insert_objects(&kind::<Service>(), ns, recorded("fx-services.json"));
        fetched.insert_objects(&kind::<Deployment>(), ns, recorded("fx-deployments.json"));
        fetched.insert_objects(&kind::<HorizontalPodAutoscaler>(), ns, recorded("fx-horizontalpodautoscalers.json"));
        fetched
    }

    fn run(rules: &[IgnoreRule]) -> ObjectsOutcome {
        let desired = desired();
        let plan = release_plan(&desired);
        let ctx = CompareContext { deployers: crate::engine::drift::helm_deployers(), ..Default::default() };
        compare(&desired, &plan, &recorded_cluster(), &Judge { ctx: &ctx, rules, show_secrets: false })
    }

    fn object<'o>(out: &'o ObjectsOutcome, kind: &str, name: &str) -> &'o ObjectReport {
        out.objects
            .iter()
            .find(|o| o.kind == kind && o.name == name)
            .unwrap_or_else(|| panic!("no report for {kind} {name}: {:#?}", out.objects))
    }

    fn field<'o>(o: &'o ObjectReport, path: &str) -> &'o crate::report::FieldReport {
        o.fields
            .iter()
            .find(|f| f.path.to_string() == path)
            .unwrap_or_else(|| panic!("no field {path}: {:#?}", o.fields))
    }

    #[test]
    fn changed_field_names_desired_live_and_who() {
        let out = run(&[]);
        let cm = object(&out, "ConfigMap", "settings");
        assert_eq!(cm.state, ObjectState::Changed);
        let mode = field(cm, "data.mode");
        assert_eq!(mode.change, Change::Changed);
        assert_eq!(mode.desired, Some(Value::from("fast")));
        assert_eq!(mode.live, Some(Value::from("slow")));
        assert_eq!(mode.manager.as_deref(), Some("kubectl-patch"));
        assert_eq!(cm.fields.len(), 1, "only data.mode differs: {:#?}", cm.fields);
    }

    #[test]
    fn data_the_api_server_would_refuse_is_an_error_not_drift() {
        let mut desired = desired();
        let settings = desired.iter_mut().find(|d| d.name == "settings").expect("the fixture has settings");
        settings.body["binaryData"] = serde_json::json!({"blob": "c2VjcmV0 LWNhbmFyeQ=="});
        let plan = release_plan(&desired);
        let ctx = CompareContext { deployers: crate::engine::drift::helm_deployers(), ..Default::default() };
        let out = compare(&desired, &plan, &recorded_cluster(), &Judge { ctx: &ctx, rules: &[], show_secrets: false });
        let cm = object(&out, "ConfigMap", "settings");
        assert_eq!(cm.state, ObjectState::Error);
        let error = cm.error.clone().unwrap_or_default();
        assert_eq!(error, "binaryData.blob is not valid base64: the API server would refuse this ConfigMap");
        assert!(cm.fields.is_empty());
        assert!(out.errors.iter().any(|e| e.starts_with("ConfigMap settings: binaryData.blob")), "{:?}", out.errors);
        // Still a desired object: its live twin is not reported as extra.
        assert_eq!(out.objects.iter().filter(|o| o.state == ObjectState::Extra).count(), 1, "{:#?}", out.objects);
    }

    #[test]
    fn deleted_object_is_missing() {
        let out = run(&[]);
        let svc = object(&out, "Service", "api");
        assert_eq!(svc.state, ObjectState::Missing);
        assert!(svc.fields.is_empty());
        assert!(!out.live.contains_key(&key_of("Service", "fx", "api")));
    }

    #[test]
    fn env_var_set_by_hand_is_added_and_hpa_replicas_are_ignored() {
        let out = run(&[]);
        let web = object(&out, "Deployment", "web");
        assert_eq!(web.state, ObjectState::Changed);
        let added: Vec<_> = web.fields.iter().filter(|f| f.change == Change::Added).collect();
        assert_eq!(added.len(), 1, "{:#?}", web.fields);
        assert_eq!(added[0].path.to_string(), "spec.template.spec.containers[name=web].env[name=EXTRA]");
        assert_eq!(added[0].manager.as_deref(), Some("kubectl-set"));
        let replicas = field(web, "spec.replicas");
        assert_eq!((replicas.desired.clone(), replicas.live.clone()), (Some(2.into()), Some(3.into())));
        assert_eq!(replicas.reason.as_deref(), Some("replicas are managed by HorizontalPodAutoscaler fx/web"));
    }

    #[test]
    fn object_with_the_release_labels_in_no_manifest_is_extra() {
        let out = run(&[]);
        let stray = object(&out, "ConfigMap", "stray");
        assert_eq!(stray.state, ObjectState::Extra);
        // kube-root-ca.crt carries no release label; desired objects are never extra.
        assert_eq!(out.objects.iter().filter(|o| o.state == ObjectState::Extra).count(), 1, "{:#?}", out.objects);
    }

    #[test]
    fn clean_objects_are_left_out_and_every_desired_object_is_counted() {
        let out = run(&[]);
        assert_eq!(out.checked, 5);
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert!(out.objects.iter().all(|o| o.name != "web" || o.kind != "HorizontalPodAutoscaler"));
        // Compared objects keep their live body for the reconcile commands.
        assert!(out.live.contains_key(&key_of("HorizontalPodAutoscaler", "fx", "web")));
    }

    #[test]
    fn fields_and_objects_a_rule_names_are_ignored() {
        let rules = [
            IgnoreRule::parse_cli("ConfigMap:data.level").unwrap(),
            serde_json::from_value(serde_json::json!({"kind": "ConfigMap", "name": "stray"})).unwrap(),
        ];
        let out = run(&rules);
        let tuned = object(&out, "ConfigMap", "tuned");
        assert_eq!(tuned.state, ObjectState::Ignored);
        assert_eq!(
            field(tuned, "data.level").reason.as_deref(),
            Some("ignored by rule (--ignore ConfigMap:data.level)")
        );
        assert_eq!(object(&out, "ConfigMap", "stray").state, ObjectState::Ignored);
        // Without the rule the same change is drift.
        assert_eq!(object(&run(&[]), "ConfigMap", "tuned").state, ObjectState::Changed);
    }

    #[test]
    fn a_list_that_failed_is_an_error_of_each_object_never_missing() {
        let desired = desired();
        let plan = release_plan(&desired);
        let mut fetched = recorded_cluster();
        let denied = LiveError::Forbidden {
            resource: "configmaps".into(),
            scope: "in namespace fx".into(),
            source: std::sync::Arc::new(kube::Error::Api(
                kube::core::Status::failure("denied", "Forbidden").with_code(403).boxed(),
            )),
        };
        fetched.insert(&kind::<ConfigMap>(), Some("fx"), Err(denied));
        let ctx = CompareContext { deployers: crate::engine::drift::helm_deployers(), ..Default::default() };
        let out = compare(&desired, &plan, &fetched, &Judge { ctx: &ctx, rules: &[], show_secrets: false });
        assert_eq!(object(&out, "ConfigMap", "settings").state, ObjectState::Error);
        assert_eq!(object(&out, "ConfigMap", "tuned").state, ObjectState::Error);
        assert!(out.errors.iter().any(|e| e.starts_with("while looking for extra objects: forbidden")));
        assert!(out.objects.iter().all(|o| o.state != ObjectState::Missing || o.kind == "Service"));
    }

    #[test]
    fn a_kind_the_cluster_does_not_serve_is_an_error_and_a_list_not_read_is_never_empty() {
        let desired = desired();
        let mut plan = release_plan(&desired);
        let web = plan.targets.remove(3);
        plan.unresolved
            .push((web.index, LiveError::NotServed { api_version: "apps/v1".into(), kind: "Deployment".into() }));
        let mut fetched = Fetched::default();
        fetched.insert_objects(&kind::<ConfigMap>(), Some("fx"), recorded("fx-configmaps.json"));
        let ctx = CompareContext::default();
        let out = compare(&desired, &plan, &fetched, &Judge { ctx: &ctx, rules: &[], show_secrets: false });
        let web = object(&out, "Deployment", "web");
        assert_eq!(web.state, ObjectState::Error);
        assert_eq!(web.error.as_deref(), Some("Deployment (apps/v1) is not served by the cluster"));
        // Services were not fetched: an error, not "missing".
        assert_eq!(object(&out, "Service", "api").state, ObjectState::Error);
    }

    /// Large listings are searched through a shared index (by name, and by the release an object
    /// may belong to); the outcome is the same as searching them object by object.
    #[test]
    fn an_indexed_listing_gives_the_same_outcome_as_a_search() {
        use super::super::fetch::Indexes;
        let desired = desired();
        let plan = release_plan(&desired);
        let mut fetched = Fetched::default();
        let ns = Some("fx");
        let filler = |kind: &str, i: usize| {
            let mut o = serde_json::json!({"apiVersion": "v1", "kind": kind,
                "metadata": {"name": format!("other-{i}"), "namespace": "fx", "labels": {}, "annotations": {}}});
            match i % 5 {
                // Another release's.
                0 => o["metadata"]["annotations"]["meta.helm.sh/release-name"] = "other".into(),
                // Labelled for fx: extra.
                1 => o["metadata"]["labels"]["app.kubernetes.io/instance"] = "fx".into(),
                // Labelled for fx but owned by a controller: never extra.
                2 => {
                    o["metadata"]["labels"]["app.kubernetes.io/instance"] = "fx".into();
                    o["metadata"]["ownerReferences"] = serde_json::json!([{"kind": "ReplicaSet", "name": "x"}]);
                }
                // Annotated for fx (name and namespace): extra.
                3 => {
                    o["metadata"]["annotations"]["meta.helm.sh/release-name"] = "fx".into();
                    o["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = "fx".into();
                }
                // Annotated for a release of the same name in another namespace: not extra.
                _ => {
                    o["metadata"]["annotations"]["meta.helm.sh/release-name"] = "fx".into();
                    o["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = "elsewhere".into();
                }
            }
            o
        };
        for (k, file) in [
            (kind::<ConfigMap>(), "fx-configmaps.json"),
            (kind::<Service>(), "fx-services.json"),
            (kind::<Deployment>(), "fx-deployments.json"),
        ] {
            let mut objects = (0..40).map(|i| filler(&k.resource.kind, i)).collect::<Vec<_>>();
            objects.extend(recorded(file));
            objects.extend((40..80).map(|i| filler(&k.resource.kind, i)));
            fetched.insert_objects(&k, ns, objects);
        }
        fetched.insert_objects(&kind::<HorizontalPodAutoscaler>(), ns, recorded("fx-horizontalpodautoscalers.json"));
        let indexed = fetched.clone().indexed(&Indexes::default());
        assert!(indexed.index(&kind::<ConfigMap>(), ns).is_some() && fetched.index(&kind::<ConfigMap>(), ns).is_none());
        assert!(indexed.index(&kind::<HorizontalPodAutoscaler>(), ns).is_none(), "a short listing is not indexed");
        let ctx = CompareContext { deployers: crate::engine::drift::helm_deployers(), ..Default::default() };
        let judge = Judge { ctx: &ctx, rules: &[], show_secrets: false };
        let searched = compare(&desired, &plan, &fetched, &judge);
        let looked_up = compare(&desired, &plan, &indexed, &judge);
        let json = |o: &ObjectsOutcome| serde_json::to_value(&o.objects).unwrap();
        assert_eq!(json(&looked_up), json(&searched));
        assert_eq!(looked_up.live, searched.live);
        assert_eq!(looked_up.errors, searched.errors);
        // 3 kinds x 80 fillers, 2 in 5 of them extra.
        let extra = searched.objects.iter().filter(|o| o.state == ObjectState::Extra && o.name.starts_with("other-"));
        assert_eq!(extra.count(), 3 * 32);
        assert_eq!(object(&looked_up, "ConfigMap", "settings").state, ObjectState::Changed);
    }

    /// The JSON of `kubectl drift release -o json` (docs/output.md), from the compare step over the
    /// recorded objects: a field renamed, added or dropped changes this snapshot, and needs a
    /// reviewed snapshot change and a `schemaVersion` decision.
    #[test]
    fn release_report_schema() {
        use crate::report::{DriftReport, ReleaseOrigin, ReleaseReport, Status};
        let rules = [IgnoreRule::parse_cli("ConfigMap:data.level").unwrap()];
        let mut objects = run(&rules).objects;
        // What a failed upgrade applied is attributed to its revision (fields and objects).
        objects[0].fields[0].from_revision = Some(3);
        objects[1].from_revision = Some(3);
        // A CRD of the chart's crds/ that the upgrade left behind (drift::crds), with its note.
        let chart_crd = crate::engine::drift::crds::ChartCrd {
            name: "gizmos.fx.test".into(),
            source: "release fx/fx revision 2 (crds/gizmos.yaml)".into(),
            body: serde_json::json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true}]}}),
        };
        objects.push(crate::engine::drift::crds::crd_report(&chart_crd, None, &[]).unwrap());
        let fx = ReleaseReport {
            problem: None,
            objects,
            reconcile: vec!["helm rollback fx 2 -n fx".into()],
            ..ReleaseReport::new(
                ReleaseOrigin {
                    gitops: None,
                    name: "fx".into(),
                    namespace: "fx".into(),
                    revision: 2,
                    chart: "fx".into(),
                    chart_version: "1.0.0".into(),
                    app_version: "1.0".into(),
                    helm_status: Some("failed".into()),
                    latest_revision: Some(3),
                    helm_description: Some("Upgrade \"fx\" failed: context deadline exceeded".into()),
                    values_digest: Some("not serialised".into()),
                },
                Status::Drifted,
            )
        };
        let broken =
            ReleaseReport::failed_release("old".into(), "fx".into(), 1, "release data is not valid base64".into());
        let json = serde_json::to_string_pretty(&DriftReport::new(vec![fx, broken], 5)).unwrap();
        insta::assert_snapshot!("release_report_schema", json);
    }
}
