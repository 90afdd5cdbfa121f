//! The release check end to end without a cluster: [`check_releases`] on a [`Cluster`] whose
//! release storage is the memory driver and whose API server is a recording of the real one
//! (`tests/fixtures/live/`, `record.sh` there: the "fx" release applied as Helm 3 applies it,
//! then edited by hand with kubectl; aggregated discovery; every LIST the check reads). Each case
//! is a state of Helm's storage (deployed, failed upgrade, pending install, corrupt record, many
//! namespaces, a Flux HelmRelease) or of the API server (a LIST forbidden) against the same
//! recording; plan and fetch are tested on the recording too. And the one release check
//! ([`release`]) seen from its three callers: `release`, `adopt` and live mode's view.

use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::report::progress::NoProgress;
use crate::report::{DriftReport, ObjectState, Status};
use crate::source::cluster::{ClusterParts, Target};
use crate::source::helm::memory::MemoryDriver;
use crate::source::helm::{Release, ReleaseStore};
use crate::source::live::LiveReader;
use crate::source::manifest::parse_stream;
use crate::source::recorded::{Recorded, fixture};

/// The recorded LISTs of namespace "fx": (path below the group version, file).
const LISTS: &[(&str, &str, &str)] = &[
    ("/api/v1", "configmaps", "fx-configmaps.json"),
    ("/api/v1", "services", "fx-services.json"),
    ("/api/v1", "secrets", "fx-secrets.json"),
    ("/api/v1", "serviceaccounts", "fx-serviceaccounts.json"),
    ("/api/v1", "persistentvolumeclaims", "fx-persistentvolumeclaims.json"),
    ("/api/v1", "pods", "fx-pods.json"),
    ("/apis/apps/v1", "deployments", "fx-deployments.json"),
    ("/apis/apps/v1", "statefulsets", "fx-statefulsets.json"),
    ("/apis/apps/v1", "daemonsets", "fx-daemonsets.json"),
    ("/apis/batch/v1", "jobs", "fx-jobs.json"),
    ("/apis/batch/v1", "cronjobs", "fx-cronjobs.json"),
    ("/apis/networking.k8s.io/v1", "ingresses", "fx-ingresses.json"),
    ("/apis/networking.k8s.io/v1", "networkpolicies", "fx-networkpolicies.json"),
    ("/apis/rbac.authorization.k8s.io/v1", "roles", "fx-roles.json"),
    ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", "fx-rolebindings.json"),
    ("/apis/autoscaling/v2", "horizontalpodautoscalers", "fx-horizontalpodautoscalers.json"),
    ("/apis/policy/v1", "poddisruptionbudgets", "fx-poddisruptionbudgets.json"),
];

const HELM_RELEASES: &str = "/apis/helm.toolkit.fluxcd.io/v2/helmreleases";

/// The recorded items of `file`, with every string value "fx" (the namespace, the release's
/// labels and annotations) made `namespace`: the same objects as another release in another
/// namespace.
fn items_in(file: &str, namespace: &str) -> Vec<Value> {
    let text = fixture(file).to_string().replace("\"fx\"", &format!("{namespace:?}"));
    match serde_json::from_str(&text).unwrap() {
        Value::Array(items) => items,
        other => panic!("{file}: not a list of items: {other}"),
    }
}

/// The recording: discovery, and every LIST of each namespace given (the "fx" objects, renamed
/// for another namespace); the cluster's HelmReleases are `helm_releases`.
fn recording(namespaces: &[&str], helm_releases: Vec<Value>) -> Recorded {
    let mut r = Recorded::with_discovery().list(HELM_RELEASES, helm_releases);
    for ns in namespaces {
        for (gv, plural, file) in LISTS {
            r = r.list(&format!("{gv}/namespaces/{ns}/{plural}"), items_in(file, ns));
        }
    }
    r
}

/// The "fx" release's manifest (what record.sh applied as Helm), for `namespace`.
fn manifest(namespace: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live/desired.yaml");
    std::fs::read_to_string(path).unwrap().replace(": fx", &format!(": {namespace}"))
}

fn release(namespace: &str, name: &str, revision: u32, status: &str, manifest: &str) -> Release {
    serde_json::from_value(serde_json::json!({
        "name": name, "namespace": namespace, "version": revision, "manifest": manifest,
        "info": {"status": status, "description": format!("{status} by the test")},
        "chart": {"metadata": {"name": "fx", "version": "1.0.0", "appVersion": "1.0"}},
        "config": {"replicas": 2},
    }))
    .unwrap()
}

fn cluster(recorded: &Recorded, store: MemoryDriver) -> Cluster {
    let client = recorded.client();
    Cluster::new(ClusterParts {
        name: "recorded".into(),
        client: client.clone(),
        streams: client,
        namespace: "fx".into(),
        store: ReleaseStore::new(Arc::new(store)),
        target: Target::default(),
    })
}

fn named(namespace: &str, names: &[&str]) -> ReleaseSelection {
    ReleaseSelection {
        names: names.iter().map(|n| n.to_string()).collect(),
        all: false,
        all_namespaces: false,
        namespace: namespace.into(),
        revision: None,
        chart_crds: true,
        admission_changes: crate::engine::compare::AdmissionChanges::default(),
    }
}

fn everywhere() -> ReleaseSelection {
    ReleaseSelection {
        names: Vec::new(),
        all: true,
        all_namespaces: true,
        namespace: "fx".into(),
        revision: None,
        chart_crds: true,
        admission_changes: crate::engine::compare::AdmissionChanges::default(),
    }
}

async fn check(recorded: &Recorded, store: MemoryDriver, sel: &ReleaseSelection) -> DriftReport {
    check_releases(&cluster(recorded, store), sel, Vec::new(), false, &NoProgress).await.expect("storage was read")
}

/// (kind, name, state) of each object reported, in the report's order.
fn states(r: &ReleaseReport) -> Vec<(String, String, ObjectState)> {
    r.objects.iter().map(|o| (o.kind.clone(), o.name.clone(), o.state)).collect()
}

fn object<'a>(r: &'a ReleaseReport, kind: &str, name: &str) -> &'a ObjectReport {
    r.objects.iter().find(|o| o.kind == kind && o.name == name).unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn field<'a>(o: &'a ObjectReport, path: &str) -> &'a crate::report::FieldReport {
    o.fields.iter().find(|f| f.path.to_string() == path).unwrap_or_else(|| panic!("no field {path} in {o:?}"))
}

/// The hand edits record.sh made, as a check of the deployed "fx" release reports them.
fn assert_hand_edits(r: &ReleaseReport) {
    use ObjectState::*;
    let s = |k: &str, n: &str, st| (k.to_string(), n.to_string(), st);
    assert_eq!(
        states(r),
        vec![
            s("Service", "api", Missing),
            s("ConfigMap", "settings", Changed),
            s("ConfigMap", "tuned", Changed),
            s("Deployment", "web", Changed),
            s("ConfigMap", "stray", Extra),
        ]
    );
    let web = object(r, "Deployment", "web");
    let replicas = field(web, "spec.replicas");
    assert!(replicas.reason.as_deref().is_some_and(|w| w.contains("HorizontalPodAutoscaler")), "{replicas:?}");
    let env = field(web, "spec.template.spec.containers[name=web].env[name=EXTRA]");
    assert_eq!((env.change, env.reason.as_deref()), (crate::report::Change::Added, None));
    let mode = field(object(r, "ConfigMap", "settings"), "data.mode");
    assert_eq!((mode.desired.as_ref(), mode.live.as_ref()), (Some(&"fast".into()), Some(&"slow".into())));
    assert_eq!(mode.manager.as_deref(), Some("kubectl-patch"));
}

#[tokio::test]
async fn a_deployed_release_edited_by_hand_is_drifted_with_its_rollback() {
    let recorded = recording(&["fx"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    let report = check(&recorded, store, &named("fx", &["fx"])).await;
    assert_eq!(report.cluster, "recorded");
    assert_eq!(report.releases.len(), 1);
    let fx = &report.releases[0];
    assert_eq!((fx.status, &fx.problem), (Status::Drifted, &None));
    assert_hand_edits(fx);
    assert_eq!((fx.origin.revision, fx.origin.chart_version.as_str()), (1, "1.0.0"));
    assert_eq!(fx.origin.gitops, None, "no HelmRelease manages it");
    assert_eq!(fx.reconcile.first().map(String::as_str), Some("helm rollback fx 1 -n fx"), "{:?}", fx.reconcile);
    assert!(fx.reconcile.iter().any(|c| c.contains("configmap/stray")), "{:?}", fx.reconcile);
    assert_eq!(report.summary.objects, 5);
    // Every LIST read once, nothing but reads.
    let seen = recorded.seen();
    assert!(seen.iter().all(|r| r.starts_with("GET ")), "{seen:?}");
    let configmaps = seen.iter().filter(|r| r.ends_with("/namespaces/fx/configmaps")).count();
    assert_eq!(configmaps, 1, "{seen:?}");
    // Pods are only searched for extra objects: their metadata is enough.
    let pods: Vec<_> = seen.iter().filter(|r| r.contains("/namespaces/fx/pods")).collect();
    assert_eq!(pods, ["GET /api/v1/namespaces/fx/pods (metadata)"], "{seen:?}");
}

#[tokio::test]
async fn a_failed_upgrade_owns_what_it_applied_and_the_rest_is_by_hand() {
    let recorded = recording(&["fx"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    // Revision 2 set the mode that is live now, then failed.
    store.create(release("fx", "fx", 2, "failed", &manifest("fx").replace("mode: fast", "mode: slow")), "failed");
    let report = check(&recorded, store, &named("fx", &["fx"])).await;
    let fx = &report.releases[0];
    assert_eq!(fx.status, Status::Drifted, "hand edits remain: {:?}", states(fx));
    assert_eq!((fx.origin.revision, fx.origin.latest_revision), (1, Some(2)));
    assert_eq!(fx.origin.helm_status.as_deref(), Some("failed"));
    assert_eq!(fx.origin.helm_description.as_deref(), Some("failed by the test"));
    assert_eq!(field(object(fx, "ConfigMap", "settings"), "data.mode").from_revision, Some(2));
    assert_eq!(field(object(fx, "ConfigMap", "tuned"), "data.level").from_revision, None);
    assert!(!fx.reconcile.is_empty());
}

/// A release named "cm" of the ConfigMap the controller-manager keeps in every namespace,
/// `kube-root-ca.crt`, as it is live: nothing differs, nothing carries the release's labels.
fn quiet_manifest() -> String {
    let configmaps = fixture("fx-configmaps.json");
    let live = configmaps.as_array().unwrap().iter().find(|c| c["metadata"]["name"] == "kube-root-ca.crt").unwrap();
    let manifest = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kube-root-ca.crt", "namespace": "fx"},
        "data": live["data"],
    });
    manifest.to_string()
}

#[tokio::test]
async fn a_release_as_it_is_live_is_clean_and_an_unfinished_install_is_incomplete() {
    let recorded = recording(&["fx"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "cm", 1, "deployed", &quiet_manifest()), "deployed");
    let report = check(&recorded, store, &named("fx", &["cm"])).await;
    let cm = &report.releases[0];
    assert_eq!((cm.status, cm.objects.len(), cm.reconcile.len()), (Status::Clean, 0, 0), "{cm:?}");

    let store = MemoryDriver::new();
    store.create(release("fx", "cm", 1, "pending-install", &quiet_manifest()), "pending-install");
    let report = check(&recorded, store, &named("fx", &["cm"])).await;
    let cm = &report.releases[0];
    assert_eq!((cm.status, cm.origin.helm_status.as_deref()), (Status::Incomplete, Some("pending-install")));
    assert!(cm.objects.is_empty(), "{:?}", cm.objects);
}

#[tokio::test]
async fn every_namespace_is_checked_and_shares_its_lists() {
    let recorded = recording(&["fx", "fy"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    store.create(release("fy", "fy", 3, "deployed", &manifest("fy")), "deployed");
    store.create(release("fx", "cm", 1, "deployed", &quiet_manifest()), "deployed");
    store.create(release("fx", "gone", 1, "uninstalled", &quiet_manifest()), "uninstalled");
    let report = check(&recorded, store, &everywhere()).await;
    let mut got: Vec<(&str, &str, Status)> =
        report.releases.iter().map(|r| (r.origin.namespace.as_str(), r.origin.name.as_str(), r.status)).collect();
    got.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    assert_eq!(got, vec![("fx", "cm", Status::Clean), ("fx", "fx", Status::Drifted), ("fy", "fy", Status::Drifted)]);
    let fy = report.releases.iter().find(|r| r.origin.name == "fy").unwrap();
    assert_hand_edits(fy);
    assert_eq!(fy.reconcile.first().map(String::as_str), Some("helm rollback fy 3 -n fy"));
    assert_eq!(report.status(), Status::Drifted);
    // The two releases of fx read its LISTs once.
    let seen = recorded.seen();
    for ns in ["fx", "fy"] {
        let n = seen.iter().filter(|r| r.ends_with(&format!("/namespaces/{ns}/configmaps"))).count();
        assert_eq!(n, 1, "{ns}: {seen:?}");
    }
}

#[tokio::test]
async fn releases_in_flight_is_the_clusters_setting_and_one_at_a_time_reports_the_same() {
    let recorded = recording(&["fx", "fy"], Vec::new());
    let store = || {
        let store = MemoryDriver::new();
        store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
        store.create(release("fy", "fy", 3, "deployed", &manifest("fy")), "deployed");
        store.create(release("fx", "cm", 1, "deployed", &quiet_manifest()), "deployed");
        store
    };
    let default = cluster(&recorded, store());
    assert_eq!(super::releases_in_flight(&default), 24);
    let one = cluster(&recorded, store()).with_releases_in_flight(Some(1));
    assert_eq!(super::releases_in_flight(&one), 1);
    // A fresh handle (each scan of a server) keeps it; 0 is taken as 1.
    assert_eq!(super::releases_in_flight(&one.fresh()), 1);
    assert_eq!(super::releases_in_flight(&default.clone().with_releases_in_flight(Some(0))), 1);
    let statuses = |r: &DriftReport| {
        let mut s: Vec<(String, String, &str, usize)> = r
            .releases
            .iter()
            .map(|r| (r.origin.namespace.clone(), r.origin.name.clone(), r.status.name(), r.objects.len()))
            .collect();
        s.sort();
        s
    };
    let all = check_releases(&default, &everywhere(), Vec::new(), false, &NoProgress).await.expect("storage was read");
    let sequenced =
        check_releases(&one, &everywhere(), Vec::new(), false, &NoProgress).await.expect("storage was read");
    assert_eq!(statuses(&sequenced), statuses(&all));
    assert_eq!(sequenced.releases.len(), 3);
    assert_eq!(sequenced.status(), Status::Drifted);
}

#[tokio::test]
async fn a_release_flux_manages_gets_its_helm_release_and_flux_advice() {
    let helm_releases = match fixture("flux-helmreleases.json") {
        Value::Array(items) => items,
        other => panic!("flux-helmreleases.json: {other}"),
    };
    assert_eq!(helm_releases.len(), 1);
    let recorded = recording(&["fx"], helm_releases);
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    let report = check(&recorded, store, &named("fx", &["fx"])).await;
    let fx = &report.releases[0];
    assert_eq!(fx.status, Status::Drifted);
    let gitops = fx.origin.gitops.as_ref().expect("the HelmRelease is found by its release name");
    assert_eq!(
        (gitops.controller.as_str(), gitops.kind.as_str(), gitops.namespace.as_str(), gitops.name.as_str()),
        ("flux", "HelmRelease", "fx", "fx")
    );
    assert_eq!(gitops.error, None);
    assert!(fx.reconcile.iter().all(|c| !c.starts_with("helm rollback")), "{:?}", fx.reconcile);
    assert!(fx.reconcile.iter().any(|c| c.contains("helmrelease") && c.contains("fx")), "{:?}", fx.reconcile);
}

#[tokio::test]
async fn a_corrupt_record_is_an_error_of_its_release_alone() {
    let recorded = recording(&["fx"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    store.create_raw("fx", "old", 4, "deployed", b"%%% not a release %%%");
    let report = check(&recorded, store, &named("fx", &["fx", "old"])).await;
    let old = report.releases.iter().find(|r| r.origin.name == "old").unwrap();
    assert_eq!((old.status, old.origin.revision), (Status::Error, 4));
    let message = old.problem.as_ref().map(|p| p.to_string()).unwrap_or_default();
    assert!(message.contains("fx/sh.helm.release.v1.old.v4"), "{message}");
    let fx = report.releases.iter().find(|r| r.origin.name == "fx").unwrap();
    assert_eq!(fx.status, Status::Drifted);
    assert_eq!(report.status(), Status::Error, "a release that could not be checked is never clean");
}

#[tokio::test]
async fn a_forbidden_list_makes_the_release_an_error_never_clean() {
    let recorded = recording(&["fx"], Vec::new()).forbidden("/api/v1/namespaces/fx/secrets");
    let store = MemoryDriver::new();
    store.create(release("fx", "cm", 1, "deployed", &quiet_manifest()), "deployed");
    let report = check(&recorded, store, &named("fx", &["cm"])).await;
    let cm = &report.releases[0];
    assert_eq!(cm.status, Status::Error);
    let message = cm.problem.as_ref().map(|p| p.to_string()).unwrap_or_default();
    assert!(message.contains("secrets"), "{message}");
}

#[tokio::test]
async fn an_unknown_release_is_reported_and_storage_errors_stop_the_run() {
    let recorded = recording(&["fx"], Vec::new());
    let report = check(&recorded, MemoryDriver::new(), &named("fx", &["nope"])).await;
    assert_eq!(report.releases.len(), 1);
    let nope = &report.releases[0];
    assert_eq!((nope.origin.name.as_str(), nope.status), ("nope", Status::Error));
}

/// `release`, `adopt` (its first step, the release's drift) and live mode's view (on its
/// watch-fed cache, each revision kept decoded) check a release through the one release check:
/// the same report, object for object and field for field, with the same status and commands.
/// The release's last upgrade failed, so Helm's lifecycle is part of what they agree on.
#[tokio::test]
async fn release_adopt_and_the_live_view_report_a_release_alike() {
    use crate::engine::adopt::{AdoptOptions, release_drift};
    use crate::engine::live::LiveView;
    use crate::source::live_cache::LiveCache;

    let recorded = recording(&["fx"], Vec::new());
    let store = MemoryDriver::new();
    store.create(release("fx", "fx", 1, "deployed", &manifest("fx")), "deployed");
    store.create(release("fx", "fx", 2, "failed", &manifest("fx").replace("mode: fast", "mode: slow")), "failed");
    let cluster = cluster(&recorded, store);
    let selection = named("fx", &["fx"]);
    let report = check_releases(&cluster, &selection, Vec::new(), false, &NoProgress).await.expect("storage was read");
    let fx = &report.releases[0];
    assert_eq!((fx.status, fx.origin.latest_revision), (Status::Drifted, Some(2)));
    assert_eq!(field(object(fx, "ConfigMap", "settings"), "data.mode").from_revision, Some(2));
    assert!(!fx.reconcile.is_empty());

    let opts = AdoptOptions {
        release: "fx".into(),
        namespace: "fx".into(),
        helm: "helm".into(),
        show_secrets: false,
        rules: Vec::new(),
        render_timeout: std::time::Duration::from_secs(1),
        admission_changes: crate::engine::compare::AdmissionChanges::default(),
    };
    let adopt = release_drift(&cluster, &opts).await.expect("adopt checked the release");

    let (changes, _) = tokio::sync::mpsc::unbounded_channel();
    let cache = Arc::new(LiveCache::new(cluster.streams().clone(), changes, Arc::default()));
    let view =
        LiveView::load(&cluster, cache, Some(selection), Vec::new(), |_| {}, || {}).await.expect("the view loaded");
    let (live, objects) = view.reports();
    assert_eq!((live.len(), objects), (1, report.summary.objects));

    let json = |r: &ReleaseReport| serde_json::to_value(r).expect("a report serialises");
    assert_eq!(json(&adopt.check.report), json(fx), "adopt");
    assert_eq!(json(&live[0]), json(fx), "live view");
}

/// Discovery as the recorded API server answers it.
async fn kinds() -> Kinds {
    Kinds::discover(&Recorded::with_discovery().client()).await.expect("recorded discovery parses")
}

#[tokio::test]
async fn the_plan_lists_each_kind_once_per_namespace_and_names_unserved_kinds() {
    let kinds = kinds().await;
    let mut text = manifest("fx");
    text.push_str("---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: fx}\n");
    let (desired, errors) = parse_stream(&text, "fx");
    assert!(errors.is_empty(), "{errors:?}");
    let identity = ReleaseIdentity { name: "fx".into(), namespace: "fx".into(), also_kinds: Vec::new() };
    let plan = plan::plan(&kinds, &desired, "default", Some(&identity));
    assert_eq!(plan.unresolved.len(), 1);
    assert_eq!(desired[plan.unresolved[0].0].kind, "Widget");
    assert_eq!(plan.targets.len(), desired.len() - 1);
    let lists: Vec<String> = plan
        .lists()
        .iter()
        .map(|(k, ns)| format!("{}/{} {}", k.resource.group, k.resource.plural, ns.as_deref().unwrap_or("-")))
        .collect();
    let mut unique = lists.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), lists.len(), "each LIST once: {lists:?}");
    // The desired kinds, then the extra-object kinds; everything in the release's namespace.
    assert_eq!(
        &lists[..4],
        ["/configmaps fx", "/services fx", "apps/deployments fx", "autoscaling/horizontalpodautoscalers fx"]
    );
    assert_eq!(lists.len(), LISTS.len(), "{lists:?}");
    assert_eq!(plan.hpa.as_ref().map(|k| k.resource.version.as_str()), Some("v2"));
}

#[tokio::test]
async fn fetch_reads_the_plan_and_keeps_each_failure_with_its_list() {
    let recorded = recording(&["fx"], Vec::new()).forbidden("/api/v1/namespaces/fx/secrets");
    let client = recorded.client();
    let kinds = Kinds::discover(&client).await.unwrap();
    let (desired, _) = parse_stream(&manifest("fx"), "fx");
    let identity = ReleaseIdentity { name: "fx".into(), namespace: "fx".into(), also_kinds: Vec::new() };
    let plan = plan::plan(&kinds, &desired, "fx", Some(&identity));
    let reader = LiveReader::new(client, 4);
    let fetched = fetch::fetch(&plan, &reader, &fetch::Indexes::default()).await;
    let configmap = kinds.resolve("v1", "ConfigMap").unwrap();
    let live = fetched.get(&configmap, Some("fx")).expect("configmaps were read");
    assert_eq!(live.len(), fixture("fx-configmaps.json").as_array().unwrap().len());
    let secret = kinds.resolve("v1", "Secret").unwrap();
    let err = fetched.get(&secret, Some("fx")).unwrap_err().to_string();
    assert!(err.contains("secrets") && err.to_lowercase().contains("forbidden"), "{err}");
    // A LIST the plan did not ask for is an error, never an empty list.
    assert!(fetched.get(&configmap, Some("elsewhere")).is_err());
}

#[test]
fn helm_writes_its_own_metadata_over_the_templates_and_adds_none() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {app.kubernetes.io/managed-by: mb-operator, team: x}\n  \
                annotations: {meta.helm.sh/release-name: other, meta.helm.sh/release-namespace: elsewhere}\n\
                ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels: {team: web}\n";
    let (mut desired, errors) = parse_stream(text, "t");
    assert!(errors.is_empty(), "{errors:?}");
    helm_metadata(&mut desired, "shop", "prod");
    let meta = |i: usize| &desired[i].body["metadata"];
    assert_eq!(meta(0)["labels"], serde_json::json!({"app.kubernetes.io/managed-by": "Helm", "team": "x"}));
    assert_eq!(
        meta(0)["annotations"],
        serde_json::json!({"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "prod"})
    );
    // What the template left out stays out (releases installed before Helm 3.2 have none of it).
    assert_eq!(meta(1)["labels"], serde_json::json!({"team": "web"}));
    assert!(meta(1).get("annotations").is_none());
}

/// Live mode's cache hands a check only the objects the compare step looks at (`Plan::wanted`):
/// the desired objects by name and, in the kinds searched for extra objects, those that may be
/// the release's; a namespace's HPAs whole. The check itself is the same as over LISTs
/// (`release_adopt_and_the_live_view_report_a_release_alike`).
#[tokio::test]
async fn the_watch_fed_cache_hands_a_check_only_the_objects_it_looks_at() {
    use crate::source::live::Wanted;
    use crate::source::live_cache::LiveCache;

    let role = |name: &str, instance: Option<&str>| {
        let labels = instance.map(|i| serde_json::json!({"app.kubernetes.io/instance": i})).unwrap_or_default();
        serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels}, "rules": []})
    };
    let roles = vec![
        role("fx-reader", Some("fx")),
        role("fx-left", Some("fx")),
        role("other", Some("other")),
        role("plain", None),
    ];
    let recorded = recording(&["fx"], Vec::new()).list("/apis/rbac.authorization.k8s.io/v1/clusterroles", roles);
    let kinds = Kinds::discover(&recorded.client()).await.expect("recorded discovery parses");
    let mut text = manifest("fx");
    text.push_str(
        "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: fx-reader}\nrules: []\n",
    );
    let (desired, errors) = parse_stream(&text, "fx");
    assert!(errors.is_empty(), "{errors:?}");
    let identity = ReleaseIdentity { name: "fx".into(), namespace: "fx".into(), also_kinds: Vec::new() };
    let plan = plan::plan(&kinds, &desired, "fx", Some(&identity));
    let kind = |v: &str, k: &str| kinds.resolve(v, k).expect("served");
    let (configmap, hpa, pod) =
        (kind("v1", "ConfigMap"), kind("autoscaling/v2", "HorizontalPodAutoscaler"), kind("v1", "Pod"));
    let clusterrole = kind("rbac.authorization.k8s.io/v1", "ClusterRole");

    // The plan: names and the release where the compare step searches by them, HPAs whole.
    let names = |w: &Wanted| w.names.iter().cloned().collect::<Vec<_>>();
    let wanted = plan.wanted(&configmap, Some("fx")).expect("configmaps are searched by name");
    assert_eq!(
        (names(&wanted), wanted.release.as_deref(), wanted.metadata),
        (vec!["settings".into(), "tuned".into()], Some("fx"), false)
    );
    assert_eq!(plan.wanted(&hpa, Some("fx")), None, "any HPA may scale a desired object");
    let pods = plan.wanted(&pod, Some("fx")).expect("pods are searched for extra objects");
    assert_eq!((names(&pods).len(), pods.release.as_deref(), pods.metadata), (0, Some("fx"), true));
    let roles = plan.wanted(&clusterrole, None).expect("cluster roles by name");
    assert_eq!((names(&roles), roles.release.as_deref()), (vec!["fx-reader".to_string()], Some("fx")));

    // What the cache hands out for them, and for a few questions of its own.
    let (changes, _) = tokio::sync::mpsc::unbounded_channel();
    let cache = LiveCache::new(recorded.client(), changes, Arc::default());
    let fetched = fetch::fetch(&plan, &cache, &fetch::Indexes::default()).await;
    let got = |kind: &ResolvedKind, ns: Option<&str>| -> Vec<String> {
        let list = fetched.get(kind, ns).expect("read");
        list.iter().map(|o| crate::source::live::object_key(o).1).collect()
    };
    // kube-root-ca.crt is neither desired nor labelled for fx.
    assert_eq!(got(&configmap, Some("fx")), ["settings", "stray", "tuned"]);
    assert_eq!(got(&hpa, Some("fx")).len(), fixture("fx-horizontalpodautoscalers.json").as_array().unwrap().len());
    assert_eq!(got(&clusterrole, None), ["fx-left", "fx-reader"]);
    let ask = |names: &[&str], release: Option<&str>| Wanted {
        names: names.iter().map(|n| n.to_string()).collect(),
        release: release.map(str::to_string),
        metadata: false,
    };
    let read = |w: Wanted, ns: Option<&'static str>, k: ResolvedKind| {
        let cache = &cache;
        async move {
            let list = cache.list_wanted(&k, ns, &w).await.expect("read");
            list.iter().map(|o| crate::source::live::object_key(o).1).collect::<Vec<_>>()
        }
    };
    assert_eq!(read(ask(&["tuned", "nope"], None), Some("fx"), configmap.clone()).await, ["tuned"]);
    assert_eq!(read(ask(&[], Some("other")), None, clusterrole.clone()).await, ["other"]);
    assert_eq!(read(ask(&["plain"], Some("fx")), None, clusterrole.clone()).await, ["fx-left", "fx-reader", "plain"]);
    assert!(read(Wanted::default(), Some("fx"), configmap.clone()).await.is_empty());
    // The whole list is still there for whoever asks for it.
    assert_eq!(cache.list(&configmap, Some("fx")).await.expect("read").len(), 4);
}
