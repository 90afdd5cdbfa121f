//! Deprecated APIs (`versions --category apis`) on the real API server: the table's entries,
//! the API server's own `Warning: 299` as a second source (a CRD version marked deprecated, which
//! no table can know), `--target-version`, and the table itself checked against what the server
//! says on the second cluster of `scripts/test-env`, which also serves the deprecated beta and
//! alpha versions Kubernetes 1.36 still has (`DEPRECATED_SERVED` there).

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use kubectl_drift::engine::versions::apis::{DEPRECATED_APIS, Replacement};

use crate::common::{Cluster, Helm, unique_ns};
use crate::needs_cluster;

/// The apis rows named `name` (`Kind/object`).
fn rows<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    report["rows"].as_array().unwrap().iter().filter(|r| r["category"] == "apis" && r["name"] == name).collect()
}

/// The status of the one apis row `name` (`None`: no row).
fn status(report: &Value, name: &str) -> Option<String> {
    let found = rows(report, name);
    assert!(found.len() <= 1, "one row for {name}: {report:#}");
    found.first().map(|r| r["status"].as_str().unwrap().to_string())
}

/// The installed minor of the test cluster.
fn minor(c: &Cluster) -> u64 {
    let v: Value = serde_json::from_str(&c.kubectl(&["version", "-o", "json"]).stdout()).unwrap();
    v["serverVersion"]["minor"].as_str().unwrap().trim_end_matches('+').parse().unwrap()
}

#[test]
#[ignore = "needs the local control plane"]
fn versions_deprecated_apis_from_the_table_and_the_servers_warnings() {
    let c = needs_cluster!("versions_deprecated_apis_from_the_table_and_the_servers_warnings");
    let ns = unique_ns("versions-deprecated");
    c.create_namespace(&ns);
    // A CRD whose v1beta1 is deprecated in its own words: no table knows it.
    let group = format!("{ns}.drift.test");
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: gadgets.{group}}}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}}\n  versions:\n  - name: v1beta1\n    served: true\n    storage: false\n    deprecated: true\n    deprecationWarning: \"{group}/v1beta1 Gadget goes away with operator 3.0\"\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n"
    );
    c.kubectl_stdin(&["apply", "-f", "-"], &crd).ok();
    c.kubectl(&["wait", "--for=condition=Established", &format!("crd/gadgets.{group}"), "--timeout=60s"]).ok();
    // A release whose chart ships v1 Endpoints (Helm installs it; the server only warns).
    let chart = c.one_template_chart(
        "external-db",
        "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: db\nsubsets:\n- addresses: [{ip: 10.9.8.7}]\n  ports: [{port: 5432}]\n",
    );
    c.helm(Helm::V4, &["install", "external-db", chart.to_str().unwrap(), "-n", &ns]).ok();
    // Live: a Gadget written with the deprecated version, Endpoints written by hand, and a
    // Service whose Endpoints only the control plane writes (no row: the cluster's own business).
    c.kubectl_stdin(
        &["apply", "-n", &ns, "-f", "-"],
        &format!(
            "apiVersion: {group}/v1beta1\nkind: Gadget\nmetadata: {{name: old}}\nspec: {{size: 1}}\n---\napiVersion: {group}/v1\nkind: Gadget\nmetadata: {{name: new}}\nspec: {{size: 2}}\n---\napiVersion: v1\nkind: Endpoints\nmetadata: {{name: manual}}\nsubsets: [{{addresses: [{{ip: 10.1.2.3}}], ports: [{{port: 80}}]}}]\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}\n"
        ),
    )
    .ok();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while c.kubectl(&["-n", &ns, "get", "endpoints", "web"]).code() != 0 {
        assert!(std::time::Instant::now() < deadline, "the endpoints controller never wrote Endpoints web");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    // Manifests with APIs of the newest minors.
    let manifests = c.scratch.join("deprecated.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: resource.k8s.io/v1beta2\nkind: ResourceClaim\nmetadata: {name: gpu}\n---\n\
         apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingAdmissionPolicy\nmetadata: {name: defaults}\n---\n\
         apiVersion: storage.k8s.io/v1beta1\nkind: VolumeAttributesClass\nmetadata: {name: fast}\n---\n\
         apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: legacy}\n",
    )
    .unwrap();
    let scan = |extra: &[&str]| {
        let mut args = vec!["versions", "-n", &ns, "--category", "apis", "--manifests", manifests.to_str().unwrap()];
        args.extend_from_slice(extra);
        args.extend(["-o", "json"]);
        let r = c.drift(&args);
        assert_eq!(r.code(), 1, "{}\n{}", r.stdout(), r.stderr());
        r.report()
    };

    let m = minor(&c);
    let report = scan(&[]);
    // The release's v1 Endpoints: deprecated since 1.33, no removal planned, EndpointSlice.
    let from_release: Vec<_> = rows(&report, "Endpoints/db")
        .into_iter()
        .filter(|r| r["source"].as_str().unwrap().starts_with(&format!("release {ns}/external-db revision 1")))
        .collect();
    assert_eq!(from_release.len(), 1, "{report:#}");
    let e = from_release[0];
    assert_eq!(
        (e["status"].as_str(), e["deprecatedIn"].as_str(), e["removedIn"].as_str(), e["replacement"].as_str()),
        (Some("deprecated"), Some("1.33"), Some("not planned"), Some("discovery.k8s.io/v1 EndpointSlice")),
        "{e:#}"
    );
    // Written by hand: its row names the field manager; the controller's Endpoints give none.
    let manual = rows(&report, "Endpoints/manual");
    assert_eq!(manual.len(), 1, "{report:#}");
    assert!(manual[0]["source"].as_str().unwrap().contains("kubectl-client-side-apply"), "{:#}", manual[0]);
    assert!(rows(&report, "Endpoints/web").is_empty(), "{report:#}");
    // The CRD's deprecated version: from the server's warning, in its words; v1 gives no row.
    let gadget = rows(&report, "Gadget/old");
    assert_eq!(gadget.len(), 1, "{report:#}");
    assert_eq!(gadget[0]["status"], "deprecated");
    assert_eq!(gadget[0]["installed"].as_str(), Some(format!("{group}/v1beta1").as_str()));
    let why = gadget[0]["why"].as_str().unwrap();
    assert!(why.contains("goes away with operator 3.0") && why.starts_with("the API server warns"), "{why}");
    assert!(rows(&report, "Gadget/new").is_empty(), "{report:#}");
    // The manifests, judged at the installed minor and the next two.
    let expect = |deprecated: u64, removed: u64, horizon_deprecated: u64, horizon_removed: u64| {
        if removed <= horizon_removed {
            Some("removed".to_string())
        } else if deprecated <= horizon_deprecated {
            Some("deprecated".to_string())
        } else {
            None
        }
    };
    assert_eq!(status(&report, "ResourceClaim/gpu"), expect(36, 39, m, m + 2), "{report:#}");
    assert_eq!(status(&report, "MutatingAdmissionPolicy/defaults"), expect(37, 40, m, m + 2), "{report:#}");
    assert_eq!(status(&report, "VolumeAttributesClass/fast"), expect(34, 37, m, m + 2), "{report:#}");
    assert_eq!(status(&report, "Ingress/legacy").as_deref(), Some("removed"));
    let rc = &rows(&report, "ResourceClaim/gpu")[0];
    assert_eq!(
        (rc["deprecatedIn"].as_str(), rc["removedIn"].as_str(), rc["replacement"].as_str()),
        (Some("1.36"), Some("1.39"), Some("resource.k8s.io/v1 ResourceClaim"))
    );

    // A planned upgrade to 1.39: what is removed by then, and what is deprecated by then.
    let report = scan(&["--target-version", "1.39"]);
    assert_eq!(status(&report, "ResourceClaim/gpu").as_deref(), Some("removed"), "{report:#}");
    assert_eq!(status(&report, "MutatingAdmissionPolicy/defaults").as_deref(), Some("deprecated"));
    assert!(rows(&report, "ResourceClaim/gpu")[0]["why"].as_str().unwrap().contains("the target is 1.39"));
    // An older target: fewer verdicts.
    let report = scan(&["--target-version", "v1.35"]);
    assert_eq!(status(&report, "ResourceClaim/gpu"), None, "{report:#}");
    assert_eq!(status(&report, "MutatingAdmissionPolicy/defaults"), None);
    assert_eq!(status(&report, "VolumeAttributesClass/fast").as_deref(), Some("deprecated"));
    assert_eq!(status(&report, "Endpoints/manual").as_deref(), Some("deprecated"));
    // A target that is not a version: exit 2, naming it.
    let r = c.drift(&["versions", "--category", "apis", "--target-version", "soon"]);
    assert_eq!(r.code(), 2);
    assert!(r.stderr().contains("'soon' is not a Kubernetes version"), "{}", r.stderr());

    c.kubectl(&["delete", "crd", &format!("gadgets.{group}"), "--wait=false"]).ok();
}

/// `kubectl get --raw PATH` on the second cluster: (stdout, the `Warning:` lines it printed).
fn raw(c: &Cluster, path: &str) -> (String, Vec<String>) {
    let (kubeconfig, contexts) = crate::fleet::fleet();
    let out = Command::new(&c.kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--context", &contexts[1], "get", "--raw", path])
        .output()
        .unwrap();
    assert!(out.status.success(), "GET {path}: {}", String::from_utf8_lossy(&out.stderr));
    let warnings = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("Warning: ").map(str::to_string))
        .collect();
    (String::from_utf8(out.stdout).unwrap(), warnings)
}

/// Every served group version of the second cluster: its URL path and (kind → resource) of the
/// resources that can be listed.
fn served(c: &Cluster) -> BTreeMap<String, (String, BTreeMap<String, String>)> {
    let mut gvs = vec![("v1".to_string(), "/api/v1".to_string())];
    let groups: Value = serde_json::from_str(&raw(c, "/apis").0).unwrap();
    for g in groups["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            let gv = v["groupVersion"].as_str().unwrap().to_string();
            gvs.push((gv.clone(), format!("/apis/{gv}")));
        }
    }
    let mut out = BTreeMap::new();
    for (gv, path) in gvs {
        let list: Value = serde_json::from_str(&raw(c, &path).0).unwrap();
        let kinds = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["name"].as_str().unwrap().contains('/'))
            .filter(|r| r["verbs"].as_array().is_some_and(|v| v.iter().any(|v| v == "list")))
            .map(|r| (r["kind"].as_str().unwrap().to_string(), r["name"].as_str().unwrap().to_string()))
            .collect();
        out.insert(gv, (path, kinds));
    }
    out
}

/// The table against the API server itself (the second cluster serves the deprecated versions
/// 1.36 still has): every deprecation warning the server sends is in the table with the same
/// minors (ComponentStatus and alpha versions aside: see the loop); every table entry the
/// server serves is warned about exactly when the table says it is deprecated by this minor; and
/// every replacement the table names of a served entry is served.
#[test]
#[ignore = "needs the local control plane"]
fn the_deprecation_table_agrees_with_the_api_server() {
    let c = needs_cluster!("the_deprecation_table_agrees_with_the_api_server");
    let m = minor(&c);
    let served = served(&c);
    let table: BTreeMap<(&str, &str), _> = DEPRECATED_APIS.iter().map(|d| ((d.api_version, d.kind), d)).collect();
    let mut warned = BTreeSet::new();
    for (gv, (path, kinds)) in &served {
        for (kind, resource) in kinds {
            let (_, warnings) = raw(&c, &format!("{path}/{resource}?limit=1"));
            let Some(text) = warnings.first() else { continue };
            warned.insert((gv.clone(), kind.clone()));
            // ComponentStatus: read-only, no manifest holds one. Alpha versions: left to the
            // server's own warnings (docs/versions.md).
            if (gv.as_str(), kind.as_str()) == ("v1", "ComponentStatus") || gv.contains("alpha") {
                continue;
            }
            let d = table
                .get(&(gv.as_str(), kind.as_str()))
                .unwrap_or_else(|| panic!("the API server deprecates {gv} {kind} and the table lacks it: {text}"));
            assert!(
                text.contains(&format!("is deprecated in v1.{}+", d.deprecated_in)),
                "{gv} {kind}: {text} vs {d:?}"
            );
            match d.removed_in {
                Some(r) => assert!(text.contains(&format!("unavailable in v1.{r}+")), "{gv} {kind}: {text} vs {d:?}"),
                None => assert!(!text.contains("unavailable in"), "{gv} {kind}: {text} vs {d:?}"),
            }
        }
    }
    let mut checked = 0;
    for d in DEPRECATED_APIS {
        let Some((_, kinds)) = served.get(d.api_version) else { continue };
        if !kinds.contains_key(d.kind) {
            continue;
        }
        checked += 1;
        let is_warned = warned.contains(&(d.api_version.to_string(), d.kind.to_string()));
        assert_eq!(is_warned, d.deprecated_in <= m, "{d:?}: served by 1.{m}, warned: {is_warned}");
        let (api, kind) = match d.replacement {
            Replacement::Version(v) => (v, d.kind),
            Replacement::Kind(v, k) => (v, k),
            Replacement::Nothing(_) => continue,
        };
        assert!(
            served.get(api).is_some_and(|(_, kinds)| kinds.contains_key(kind)),
            "{d:?}: its replacement {api} {kind} is not served"
        );
    }
    // The second cluster serves what Kubernetes 1.36 still has: Endpoints, the DRA betas,
    // VolumeAttributesClass, IPAddress and ServiceCIDR v1beta1, LeaseCandidate v1beta1 and the
    // MutatingAdmissionPolicy betas (15 entries of the table).
    assert!(checked >= 15, "only {checked} table entries are served by the second cluster: {served:#?}");
}
