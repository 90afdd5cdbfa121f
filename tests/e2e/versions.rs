//! `kubectl drift versions` on the real control plane: the KWOK nodes of `scripts/test-env up`
//! (kubelet and containerd versions in their `status.nodeInfo`), pods that the scheduler places and
//! KWOK runs, with the `imageID`s that the environment's kubelet stand-in (image-ids) reports from
//! the local registry, a Helm release, and upstream answers from the fixture server
//! (tests/e2e/upstream_fixtures.rs).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, unique_ns};
use crate::needs_cluster;
use crate::upstream_fixtures::{self, Fixtures};

/// The KWOK nodes `scripts/test-env up` creates (`KWOK_NODES` there): name, kubelet, runtime.
const KWOK_NODES: [(&str, &str, &str); 3] = [
    ("kwok-node-1", "v1.35.2", "containerd://1.7.27"),
    ("kwok-node-2", "v1.35.2", "containerd://1.7.27"),
    ("kwok-node-3", "v1.36.3", "containerd://2.1.4"),
];

/// One more Node that KWOK manages (its annotation selects it), created as `scripts/test-env`
/// creates its own: `status.nodeInfo` set in the create, which KWOK keeps. Tainted NoSchedule so
/// no other test's pod lands on it, and labelled `type: kwok-test` (not `type: kwok`, the
/// environment's own three).
fn kwok_node(c: &Cluster, name: &str, kubelet: &str, runtime: &str) {
    c.kubectl_stdin(
        &["create", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  annotations: {{kwok.x-k8s.io/node: fake}}\n  labels: {{type: kwok-test, drift-e2e: versions, kubernetes.io/hostname: {name}}}\nspec:\n  taints: [{{key: drift-e2e/versions, value: vendor, effect: NoSchedule}}]\nstatus:\n  nodeInfo: {{kubeletVersion: {kubelet}, kubeProxyVersion: {kubelet}, containerRuntimeVersion: \"{runtime}\", kernelVersion: 6.1.0, osImage: Amazon Linux 2023, operatingSystem: linux, architecture: amd64, machineID: {name}, systemUUID: {name}, bootID: {name}}}\n"
        ),
    )
    .ok();
}

/// Held by the tests that add cluster-wide rows (a control-plane Pod in kube-system, a Node) and by
/// the tests whose exit code counts every row of the cluster or nodes category: that Pod is a
/// cluster row of every `--category cluster` run, looked up in a registry only its own test
/// configures (an error row, exit 2, elsewhere), and that Node adds to the KWOK nodes' counts. Seen
/// as a CI flake of `versions_upstream_rate_limits`.
static KUBE_SYSTEM: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn kube_system() -> std::sync::MutexGuard<'static, ()> {
    KUBE_SYSTEM.lock().unwrap_or_else(|e| e.into_inner())
}

/// Deletes a Pod when the test ends, passed or not, so no later test of the cluster category sees
/// it (forced: gone at once even if KWOK were slow to confirm it).
struct PodGone<'a>(&'a Cluster, String, String);

impl Drop for PodGone<'_> {
    fn drop(&mut self) {
        let _ =
            self.0.kubectl(&["-n", &self.1, "delete", "pod", &self.2, "--grace-period=0", "--force", "--wait=false"]);
    }
}

/// Deletes the Nodes a test made when it ends, passed or not (Nodes are cluster-wide).
struct NodesGone<'a>(&'a Cluster, Vec<String>);

impl Drop for NodesGone<'_> {
    fn drop(&mut self) {
        for n in &self.1 {
            let _ = self.0.kubectl(&["delete", "node", n, "--wait=false"]);
        }
    }
}

/// The `imageID` of every container of the live pods `selector` picks in `ns`, once `done` holds
/// for them (`""` for a container that has none yet). The scheduler places the pods, KWOK runs
/// them and image-ids fills `imageID` from the local registry, as a kubelet would; nothing here
/// writes a pod's status. Fails after 60 s, naming what the pods said.
fn image_ids_when(c: &Cluster, ns: &str, selector: &str, what: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods: Value =
            serde_json::from_str(&c.kubectl(&["-n", ns, "get", "pods", "-l", selector, "-o", "json"]).ok()).unwrap();
        let live: Vec<&Value> = pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect();
        let ids: Vec<String> = live
            .iter()
            .flat_map(|p| {
                let running = p["status"]["phase"] == "Running";
                p["spec"]["containers"].as_array().into_iter().flatten().map(move |ctr| {
                    p["status"]["containerStatuses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|s| running && s["name"] == ctr["name"])
                        .and_then(|s| s["imageID"].as_str())
                        .unwrap_or("")
                        .to_string()
                })
            })
            .collect();
        if done(&ids) {
            return ids;
        }
        if Instant::now() > deadline {
            let status: Vec<String> = live
                .iter()
                .map(|p| format!("{} on {:?}: {}", p["metadata"]["name"], p["spec"]["nodeName"], p["status"]))
                .collect();
            panic!(
                "after 60 s the pods {selector} in {ns} are not {what}: imageIDs {ids:?}\n{}\n(scripts/test-env up runs kube-scheduler, KWOK and image-ids, which fill them)",
                status.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`image_ids_when`] `want` pods all report an `imageID`.
fn running_image_ids(c: &Cluster, ns: &str, selector: &str, want: usize) -> Vec<String> {
    image_ids_when(c, ns, selector, &format!("{want} running with an imageID"), |ids| {
        ids.len() == want && ids.iter().all(|i| !i.is_empty())
    })
}

/// A chart in the scratch folder: `drift-shop` at `version`, with its home link.
pub(crate) fn chart(c: &Cluster, version: &str) -> std::path::PathBuf {
    let dir = c.scratch.join(format!("drift-shop-{version}"));
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: drift-shop\nversion: {version}\nappVersion: \"2.3.0\"\nhome: https://charts.drift.example/stable\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  a: \"1\"\n",
    )
    .unwrap();
    dir
}

/// A config file whose upstream base URLs point at the fixture server (`prefix`: `""`,
/// `/ratelimited`, `/blocked`), plus `extra` YAML lines under `versions:`.
pub(crate) fn config(c: &Cluster, f: &Fixtures, prefix: &str, extra: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = c.scratch.join(format!("versions-{}-{n}.yaml", prefix.trim_start_matches('/')));
    std::fs::write(
        &path,
        format!(
            "versions:\n  upstreams:\n    kubernetes: {}\n    github: {}\n    artifacthub: {}\n{extra}",
            f.url(&format!("{prefix}/release")),
            f.url(prefix),
            f.url(prefix)
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// A `versions.registries` entry for a test registry: plain HTTP, with the test's Basic
/// credentials from the variables [`registry_env`] sets.
fn registry_entry(host: &str) -> String {
    format!("  - {{host: \"{host}\", plain_http: true, username_env: E2E_REG_USER, password_env: E2E_REG_PASSWORD}}\n")
}

/// The environment of a `versions` run against the test registries: a private cache home and the
/// credentials [`registry_entry`] names.
fn registry_env<'a>(cache: &'a std::path::Path, oci: &'a crate::oci::Oci) -> [(&'static str, &'a str); 3] {
    [
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("E2E_REG_USER", oci.user.as_str()),
        ("E2E_REG_PASSWORD", oci.password.as_str()),
    ]
}

/// Run `versions ... -o json` with a private cache home; returns (exit code, the report, stderr).
fn versions(c: &Cluster, args: &[&str]) -> (i32, Value, String) {
    let cache = c.scratch.join("cache");
    let run = c.drift_with_env(&[&["versions"], args].concat(), &[("XDG_CACHE_HOME", cache.to_str().unwrap())]);
    (run.code(), run.report(), run.stderr())
}

fn rows<'a>(report: &'a Value, category: &str, name: &str) -> Vec<&'a Value> {
    report["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows in {report}"))
        .iter()
        .filter(|r| r["category"] == category && r["name"] == name)
        .collect()
}

fn row<'a>(report: &'a Value, category: &str, name: &str, installed: &str) -> &'a Value {
    rows(report, category, name)
        .into_iter()
        .find(|r| r["installed"] == installed)
        .unwrap_or_else(|| panic!("no {category} row {name} {installed} in {report:#}"))
}

fn server_version(c: &Cluster) -> String {
    let v: Value = serde_json::from_str(&c.kubectl(&["version", "-o", "json"]).ok()).unwrap();
    v["serverVersion"]["gitVersion"].as_str().unwrap().to_string()
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_cluster_nodes_and_helm_against_upstream_fixtures() {
    let c = needs_cluster!("versions_cluster_nodes_and_helm_against_upstream_fixtures");
    let _kube_system = kube_system();
    let f = upstream_fixtures::start();
    let ns = unique_ns("versions");
    c.create_namespace(&ns);
    // The environment's three KWOK nodes, and one more of a vendor's build on another runtime.
    let vendor = format!("{ns}-eks");
    let _gone = NodesGone(&c, vec![vendor.clone()]);
    kwok_node(&c, &vendor, "v1.35.2-eks-4a1b2c", "cri-o://1.30.0");
    let dir = chart(&c, "1.2.0");
    c.helm(Helm::V4, &["install", "shop", dir.to_str().unwrap(), "-n", &ns]).ok();

    let cfg = config(&c, &f, "", "");
    let (code, report, err) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg]);
    assert_eq!(code, 1, "something is behind: exit 1\n{report:#}\n{err}");
    assert_eq!(report["schemaVersion"], 2);
    assert_eq!(report["cluster"], "admin");

    // The cluster: /version against stable-1.N.txt and stable.txt (v1.37.1): a minor behind.
    let k = row(&report, "cluster", "kubernetes", &server_version(&c));
    assert_eq!((k["status"].as_str(), k["latest"].as_str()), (Some("minor-behind"), Some("v1.37.1")), "{k:#}");
    assert!(k["notes"].as_str().unwrap().ends_with("CHANGELOG-1.37.md"), "{k:#}");
    assert!(k["source"].as_str().unwrap().starts_with(&f.url("/release/stable-1.")), "{k:#}");

    // Nodes grouped by version, with a count and the nodes' names: the KWOK nodes as
    // scripts/test-env made them, in the middle of an upgrade.
    let nodes = |component: &str, version: &str| -> Vec<&str> {
        let runtime = format!("{component}://{version}");
        let on = |(_, kubelet, rt): &&(&str, &str, &str)| match component {
            "kubelet" => *kubelet == version,
            _ => *rt == runtime,
        };
        KWOK_NODES.iter().filter(on).map(|(n, _, _)| *n).collect()
    };
    for (component, version, status, latest) in [
        ("kubelet", "v1.35.2", "minor-behind", "v1.37.1"),
        ("kubelet", "v1.36.3", "minor-behind", "v1.37.1"),
        // containerd from GitHub releases (drafts and prereleases skipped): v2.1.4 is the newest.
        ("containerd", "1.7.27", "major-behind", "v2.1.4"),
        ("containerd", "2.1.4", "current", "2.1.4"),
    ] {
        let r = row(&report, "nodes", component, version);
        let names = nodes(component, version);
        assert_eq!(r["objects"], serde_json::json!(names), "{component} {version}: {r:#}");
        assert_eq!(r["count"].as_u64(), Some(names.len() as u64), "{r:#}");
        assert_eq!((r["status"].as_str(), r["latest"].as_str()), (Some(status), Some(latest)), "{r:#}");
    }
    let k136 = row(&report, "nodes", "kubelet", "v1.36.3");
    assert!(k136["source"].as_str().unwrap().ends_with("/release/stable-1.36.txt"), "{k136:#}");
    let ctr = row(&report, "nodes", "containerd", "1.7.27");
    assert_eq!(ctr["notes"], "https://github.com/containerd/containerd/releases/tag/v2.1.4");
    // A current row links its own release's notes too (its latest is written without the "v").
    let ctr_current = row(&report, "nodes", "containerd", "2.1.4");
    assert_eq!(ctr_current["notes"], "https://github.com/containerd/containerd/releases/tag/v2.1.4");
    // The vendor suffix kept for display, stripped for comparison.
    let eks = row(&report, "nodes", "kubelet", "v1.35.2-eks-4a1b2c");
    assert_eq!(
        (eks["count"].as_u64(), eks["status"].as_str(), eks["latest"].as_str()),
        (Some(1), Some("minor-behind"), Some("v1.37.1")),
        "{eks:#}"
    );
    assert_eq!(eks["objects"], serde_json::json!([vendor]));
    // Another runtime: unknown, never a guess.
    let crio = row(&report, "nodes", "cri-o", "1.30.0");
    assert_eq!((crio["count"].as_u64(), crio["status"].as_str()), (Some(1), Some("unknown")), "{crio:#}");
    assert!(crio["why"].as_str().unwrap().contains("no upstream source"), "{crio:#}");

    // The Helm release: ArtifactHub search scored (exact name + verified publisher + the chart's
    // home link), prerelease 2.0.0-beta.1 ignored, deprecated flagged, changelog linked.
    let shop = rows(&report, "helm", "shop").into_iter().find(|r| r["namespace"] == ns.as_str()).unwrap();
    assert_eq!((shop["installed"].as_str(), shop["latest"].as_str()), (Some("1.2.0"), Some("1.3.0")), "{shop:#}");
    assert_eq!(shop["status"], "minor-behind");
    assert_eq!(shop["component"], "drift-shop");
    let source = shop["source"].as_str().unwrap();
    assert!(source.contains("drift-charts/drift-shop") && source.contains("high confidence"), "{source}");
    assert!(shop["why"].as_str().unwrap().contains("deprecated"), "{shop:#}");
    assert!(
        shop["notes"]
            .as_str()
            .unwrap()
            .contains("/packages/helm/drift-charts/drift-shop?modal=changelog&version=1.3.0")
    );

    // GitHub paging: both pages were read, once each.
    let seen = f.seen();
    let pages: Vec<&str> =
        seen.iter().filter(|s| s.path == "/repos/containerd/containerd/releases").map(|s| s.query.as_str()).collect();
    assert_eq!(pages, vec!["per_page=100", "per_page=100&page=2"], "{seen:?}");

    // A rerun within the TTL asks upstream nothing. With -A, a release another test installs in
    // the meantime is new to the cache: a search for its chart is the only request allowed, and
    // only this scenario's rows are compared.
    let cold_searches: Vec<String> =
        seen.iter().filter(|s| s.path == "/api/v1/packages/search").map(|s| s.query.clone()).collect();
    f.clear();
    let (code2, report2, _) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg]);
    assert_eq!(code2, 1);
    let warm: Vec<_> = f
        .seen()
        .into_iter()
        .filter(|s| s.path != "/api/v1/packages/search" || cold_searches.contains(&s.query))
        .collect();
    assert!(warm.is_empty(), "warm rerun made requests: {warm:?}");
    let ours = |r: &serde_json::Value| {
        r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["category"] != "helm" || row["namespace"] == ns.as_str())
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(ours(&report2), ours(&report));

    // With a zero TTL every answer is revalidated: If-None-Match, 304, the same report.
    let cfg0 = config(&c, &f, "", "  cache_ttl: 0s\n");
    let (_, report3, _) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg0]);
    // (Again, a search for a chart that another test installed meanwhile is new, so not a 304.)
    let seen: Vec<_> = f
        .seen()
        .into_iter()
        .filter(|s| s.path != "/api/v1/packages/search" || cold_searches.contains(&s.query))
        .collect();
    assert!(!seen.is_empty() && seen.iter().all(|s| s.status == 304 && s.if_none_match.is_some()), "{seen:?}");
    assert_eq!(ours(&report3), ours(&report));

    // track: patch holds the answer to the installed minor and shows the newest as "newer track".
    let cfgp = config(&c, &f, "", "  track: patch\n");
    let (_, patch, _) = versions(&c, &["-A", "--category", "nodes", "-o", "json", "--config", &cfgp]);
    for (version, latest) in [("v1.35.2", "v1.35.9"), ("v1.36.3", "v1.36.5")] {
        let kubelet = row(&patch, "nodes", "kubelet", version);
        assert_eq!(
            (kubelet["status"].as_str(), kubelet["latest"].as_str(), kubelet["newerTrack"].as_str()),
            (Some("patch-behind"), Some(latest), Some("v1.37.1")),
            "{kubelet:#}"
        );
    }
    let ctr = row(&patch, "nodes", "containerd", "1.7.27");
    assert_eq!(
        (ctr["latest"].as_str(), ctr["newerTrack"].as_str()),
        (Some("v1.7.29"), Some("v2.1.4")),
        "page 2 holds v1.7.29"
    );
    // The newest release on its own track: current, no newer track (v2.2.0 is a draft and
    // v2.2.0-rc.1 a prerelease).
    let ctr2 = row(&patch, "nodes", "containerd", "2.1.4");
    assert_eq!((ctr2["status"].as_str(), ctr2["newerTrack"].as_str()), (Some("current"), None), "{ctr2:#}");

    // The readonly context gives the same answer; so does `helm drift versions` (this scenario's
    // rows: with -A, releases other tests install meanwhile come and go).
    let (ro_code, ro, _) = versions(
        &c,
        &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg, "--context", "readonly"],
    );
    assert_eq!((ro_code, ours(&ro)), (1, ours(&report)));
    assert_eq!(ro["cluster"], "readonly");
    let cache = c.scratch.join("cache");
    let helm = c.drift_with_env(
        &["versions", "-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg],
        &[("HELM_PLUGIN_NAME", "drift"), ("XDG_CACHE_HOME", cache.to_str().unwrap())],
    );
    assert_eq!(ours(&helm.report()), ours(&report));

    // The table: one line per row, status words, the summary.
    let table = c
        .drift_with_env(
            &["versions", "-A", "--category", "nodes", "--config", &cfg],
            &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
        )
        .stdout();
    assert!(table.starts_with("CATEGORY"), "{table}");
    assert!(table.lines().any(|l| l.contains("containerd (x2)") && l.contains("major behind")), "{table}");
    assert!(table.lines().any(|l| l.contains("kubelet (x2)") && l.contains("v1.35.2 ")), "{table}");
    assert!(
        table.lines().any(|l| l.contains("kubelet ") && l.contains("v1.36.3 ") && l.contains("minor behind")),
        "{table}"
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_upstream_rate_limits() {
    let c = needs_cluster!("versions_upstream_rate_limits");
    let _kube_system = kube_system();
    let f = upstream_fixtures::start();
    // A 429 with a short Retry-After is waited out once: the answer is the same.
    let cfg = config(&c, &f, "/ratelimited", "");
    let (code, report, err) = versions(&c, &["--category", "cluster", "-o", "json", "--config", &cfg, "--no-cache"]);
    let k = rows(&report, "cluster", "kubernetes")[0];
    assert_eq!(k["status"], "minor-behind", "{report:#}\n{err}");
    assert_eq!(code, 1, "{report:#}\n{err}\nrequests: {:?}", f.seen());
    let statuses: Vec<u16> = f.seen().iter().filter(|s| s.path.ends_with("/stable.txt")).map(|s| s.status).collect();
    assert_eq!(statuses, vec![429, 200]);

    // A long Retry-After: that row is an error naming the host and when to retry; exit 2; the
    // other categories are still reported.
    let cfg = config(&c, &f, "/blocked", "");
    let started = std::time::Instant::now();
    let (code, report, _) = versions(&c, &["--category", "cluster,helm", "-o", "json", "--config", &cfg, "--no-cache"]);
    assert!(started.elapsed().as_secs() < 30, "a long Retry-After is not waited out");
    assert_eq!(code, 2, "{report:#}");
    let k = rows(&report, "cluster", "kubernetes")[0];
    assert_eq!(k["status"], "error");
    let why = k["why"].as_str().unwrap();
    assert!(why.contains(&f.addr.to_string()) && why.contains("3600 s"), "{why}");
    assert_eq!(report["status"], "error");
}

/// A Deployment with no replicas running `image`: what is installed, with no pod (a tag is judged
/// by its name; a floating tag has no running digest to compare).
fn deployment(c: &Cluster, ns: &str, name: &str, image: &str) {
    deployment_with(c, ns, name, image, "");
}

/// [`deployment`] with more pod spec lines (`pod_spec`: YAML indented by six spaces).
pub fn deployment_with(c: &Cluster, ns: &str, name: &str, image: &str, pod_spec: &str) {
    scaled_deployment(c, ns, name, image, pod_spec, 0);
}

fn scaled_deployment(c: &Cluster, ns: &str, name: &str, image: &str, pod_spec: &str, replicas: u32) {
    c.kubectl_stdin(
        &["apply", "-n", ns, "-f", "-"],
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{pod_spec}      containers: [{{name: app, image: \"{image}\"}}]\n"
        ),
    )
    .ok();
}

/// A Deployment of `replicas` pods running `image`, once every pod runs it and reports the digest
/// it runs: returns those `imageID`s.
fn running_deployment(c: &Cluster, ns: &str, name: &str, image: &str, replicas: u32) -> Vec<String> {
    scaled_deployment(c, ns, name, image, "", replicas);
    running_image_ids(c, ns, &format!("app={name}"), replicas as usize)
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_images_from_real_registries() {
    let c = needs_cluster!("versions_images_from_real_registries");
    let _kube_system = kube_system();
    let oci = crate::oci::oci();
    crate::oci::token_endpoint();
    let f = upstream_fixtures::start();
    let ns = unique_ns("versions-img");
    c.create_namespace(&ns);
    let reg = &oci.registry;
    // One repository with tags of many shapes and a multi-arch index as `latest`. (A floating tag
    // re-pushed after its pods started: versions_floating_tag_moved_after_the_pods_started.)
    let repo = crate::oci::unique_repo("vimg");
    oci.push_tag_shapes(&repo);
    let (index, _platforms) = oci.push_index(&repo, "latest", &["linux/amd64", "linux/arm64/v8"]);

    for (name, tag) in [
        ("semver", "1.2.3"),
        ("suffix", "9.0-alpine"),
        ("prefix", "distroless-v1.39.1"),
        ("vtag", "v1.35.9"),
        ("pre", "1.2.4"),
    ] {
        deployment(&c, &ns, name, &format!("{reg}/{repo}:{tag}"));
    }
    // 20 more workloads on the same repository: still one tag list.
    for i in 0..20 {
        deployment(&c, &ns, &format!("many-{i}"), &format!("{reg}/{repo}:1.2.3"));
    }
    // A pod running the index by its tag reports the index digest, as containerd does.
    let ids = running_deployment(&c, &ns, "index", &format!("{reg}/{repo}:latest"), 1);
    assert_eq!(ids, vec![format!("{reg}/{repo}@{index}")], "the pod's imageID");
    // The same content through the Bearer-token registry.
    deployment(&c, &ns, "bearer", &format!("{}/{repo}:1.2.3", oci.token_registry));
    // A control-plane static pod in kube-system: its mirror pod, as a kubelet posts it (annotated,
    // owned by its Node), on one of KWOK's nodes, which runs it.
    let node_name = KWOK_NODES[2].0;
    let node_uid = c.kubectl(&["get", "node", node_name, "-o", "jsonpath={.metadata.uid}"]).ok();
    let component = format!("{ns}-etcd");
    let static_pod = format!("{component}-{node_name}");
    let _pod_gone = PodGone(&c, "kube-system".into(), static_pod.clone());
    c.kubectl_stdin(
        &["create", "-n", "kube-system", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {static_pod}\n  labels: {{component: {component}, tier: control-plane}}\n  annotations: {{kubernetes.io/config.mirror: mirror, kubernetes.io/config.source: file}}\n  ownerReferences: [{{apiVersion: v1, kind: Node, name: {node_name}, uid: {node_uid}, controller: true}}]\nspec:\n  nodeName: {node_name}\n  containers: [{{name: app, image: \"{reg}/{repo}:v1.35.9\"}}]\n"
        ),
    )
    .ok();
    running_image_ids(&c, "kube-system", &format!("component={component}"), 1);
    // A Helm-managed workload: hidden unless --show all.
    let chart = c.one_template_chart(
        "imgchart",
        &format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: helmed\nspec:\n  replicas: 0\n  selector: {{matchLabels: {{app: helmed}}}}\n  template:\n    metadata: {{labels: {{app: helmed}}}}\n    spec:\n      containers: [{{name: app, image: \"{reg}/{repo}:1.2.3\"}}]\n"),
    );
    c.helm(Helm::V4, &["install", "imgs", chart.to_str().unwrap(), "-n", &ns]).ok();

    let extra = format!("  registries:\n{}{}", registry_entry(reg), registry_entry(&oci.token_registry));
    let cfg = config(&c, &f, "", &extra);
    let cache = c.scratch.join("cache");
    let env = registry_env(&cache, &oci);
    let run = |args: &[&str]| {
        let r = c.drift_with_env(&[&["versions"], args].concat(), &env);
        assert!(!r.stdout().contains(&oci.password) && !r.stderr().contains(&oci.password), "the password was printed");
        r
    };
    let out = run(&["-n", &ns, "--category", "workloads,cluster", "-o", "json", "--config", &cfg]);
    let report = out.report();
    assert_eq!(out.code(), 1, "{report:#}");
    let w = |name: &str| {
        rows(&report, "workloads", &format!("Deployment/{name}"))
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no row for {name}: {report:#}"))
            .clone()
    };
    let expect = [
        ("semver", "patch-behind", "1.2.4"),
        ("suffix", "minor-behind", "9.1-alpine"),
        ("prefix", "minor-behind", "distroless-v1.40.0"),
        ("vtag", "minor-behind", "v1.36.0"),
        ("pre", "current", "1.2.4"),
        ("bearer", "patch-behind", "1.2.4"),
    ];
    for (name, status, latest) in expect {
        let r = w(name);
        assert_eq!((r["status"].as_str(), r["latest"].as_str()), (Some(status), Some(latest)), "{name}: {r:#}");
    }
    // The floating tag judged by the digest its pod runs: the index's, the tag's own. (A platform
    // manifest's digest counts as the same image: tests/e2e/registry.rs and the engine's unit
    // tests; a pod pulled by tag reports the index digest, as here.)
    let idx = w("index");
    assert_eq!(
        (idx["status"].as_str(), idx["latest"].as_str(), &idx["runningDigests"]),
        (Some("current"), Some(index.as_str()), &serde_json::json!([index])),
        "{idx:#}"
    );
    // The static pod: a cluster row.
    let cp = rows(&report, "cluster", &format!("Pod/{component}"));
    assert_eq!(cp.len(), 1, "{report:#}");
    assert_eq!((cp[0]["status"].as_str(), cp[0]["latest"].as_str()), (Some("minor-behind"), Some("v1.36.0")));
    // Helm-managed: hidden by default, shown (and looked up) with --show all.
    assert!(rows(&report, "workloads", "Deployment/helmed").is_empty());
    assert!(report["summary"]["hidden"].as_u64().unwrap() >= 1);
    // Requests per registry host are O(unique repositories): 26 workloads on `repo` cost one tag list.
    let requests = report["summary"]["requests"][reg.as_str()].as_u64().unwrap();
    assert!(requests <= 12, "requests to {reg}: {requests}: {report:#}");

    // A warm rerun makes no registry request.
    let warm = run(&["-n", &ns, "--category", "workloads,cluster", "-o", "json", "--config", &cfg]).report();
    assert_eq!(warm["summary"]["requests"].get(reg.as_str()), None, "{:#}", warm["summary"]);
    assert_eq!(warm["rows"], report["rows"]);

    let all = run(&["-n", &ns, "--category", "workloads", "--show", "all", "-o", "json", "--config", &cfg]).report();
    let helmed = rows(&all, "workloads", "Deployment/helmed");
    assert_eq!(
        (helmed[0]["helmManaged"].as_bool(), helmed[0]["status"].as_str()),
        (Some(true), Some("patch-behind")),
        "{all:#}"
    );
    // --show outdated keeps only what is not current.
    let outdated =
        run(&["-n", &ns, "--category", "workloads", "--show", "outdated", "-o", "json", "--config", &cfg]).report();
    assert!(outdated["rows"].as_array().unwrap().iter().all(|r| r["status"] != "current"));
    assert!(rows(&outdated, "workloads", "Deployment/pre").is_empty());

    // CSV: one line per row plus the header; YAML: the same data.
    let csv = run(&["-n", &ns, "--category", "workloads", "-o", "csv", "--config", &cfg]).stdout();
    assert_eq!(
        csv.lines().count(),
        report["rows"].as_array().unwrap().iter().filter(|r| r["category"] == "workloads").count() + 1
    );
    assert!(csv.starts_with("category,namespace,name,"));
    let yaml = run(&["-n", &ns, "--category", "workloads", "-o", "yaml", "--config", &cfg]).report();
    assert_eq!(yaml["rows"].as_array().unwrap().len(), csv.lines().count() - 1, "{yaml:#}");

    // The readonly context gives the same answer.
    let ro =
        run(&["-n", &ns, "--category", "workloads,cluster", "-o", "json", "--config", &cfg, "--context", "readonly"])
            .report();
    assert_eq!(ro["rows"], report["rows"]);

    // Wrong credentials: error rows naming the registry; exit 2; no credential in any output.
    let bad = [
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("E2E_REG_USER", oci.user.as_str()),
        ("E2E_REG_PASSWORD", "wrong-pass-xyz"),
    ];
    let r = c.drift_with_env(
        &["versions", "-n", &ns, "--category", "workloads", "-o", "json", "--config", &cfg, "--no-cache"],
        &bad,
    );
    assert_eq!(r.code(), 2, "{}", r.stdout());
    assert!(!r.stdout().contains("wrong-pass-xyz") && !r.stderr().contains("wrong-pass-xyz"));
    let bad_report = r.report();
    let sem = rows(&bad_report, "workloads", "Deployment/semver");
    assert_eq!(sem[0]["status"], "error");
    assert!(sem[0]["why"].as_str().unwrap().contains(reg.as_str()), "{:#}", sem[0]);
}

/// A floating tag moved after its pods started: the pods keep running the image they pulled (their
/// `imageID`, kept by the kubelet), the registry's tag now names another: "newer image behind tag",
/// judged from what the pods report. A floating tag that did not move is current; after a rollout
/// the new pods run the new image and the row is current again.
#[ignore = "needs the local control plane"]
#[test]
fn versions_floating_tag_moved_after_the_pods_started() {
    let c = needs_cluster!("versions_floating_tag_moved_after_the_pods_started");
    let oci = crate::oci::oci();
    let f = upstream_fixtures::start();
    let ns = unique_ns("versions-float");
    c.create_namespace(&ns);
    let reg = &oci.registry;
    let moving = crate::oci::unique_repo("vmoving");
    let steady = crate::oci::unique_repo("vsteady");
    let first = oci.push_image(&moving, "latest", "first build");
    let kept = oci.push_image(&steady, "latest", "the only build");

    // Two pods on the tag that will move, one on the tag that stays: the digests they pulled.
    let ids = running_deployment(&c, &ns, "moving", &format!("{reg}/{moving}:latest"), 2);
    assert_eq!(ids, vec![format!("{reg}/{moving}@{first}"); 2], "the pods' imageIDs");
    let ids = running_deployment(&c, &ns, "steady", &format!("{reg}/{steady}:latest"), 1);
    assert_eq!(ids, vec![format!("{reg}/{steady}@{kept}")], "the pod's imageID");

    // The tag moves to a new build; the running pods keep the digest they run.
    let second = oci.push_image(&moving, "latest", "second build");
    assert_ne!(first, second);
    let ids = running_image_ids(&c, &ns, "app=moving", 2);
    assert_eq!(ids, vec![format!("{reg}/{moving}@{first}"); 2], "a running pod keeps its imageID");

    let cfg = config(&c, &f, "", &format!("  registries:\n{}", registry_entry(reg)));
    let cache = c.scratch.join("cache");
    let env = registry_env(&cache, &oci);
    let run = |args: &[&str]| {
        c.drift_with_env(
            &[&["versions", "-n", &ns, "--category", "workloads", "--config", &cfg, "--no-cache"], args].concat(),
            &env,
        )
    };
    let out = run(&["-o", "json"]);
    let report = out.report();
    assert_eq!(out.code(), 1, "a newer image behind a tag: exit 1\n{report:#}\n{}", out.stderr());
    let w = |report: &Value, name: &str| row(report, "workloads", &format!("Deployment/{name}"), "latest").clone();
    let m = w(&report, "moving");
    assert_eq!(
        (m["status"].as_str(), m["latest"].as_str(), &m["runningDigests"]),
        (Some("newer-image"), Some(second.as_str()), &serde_json::json!([first])),
        "{m:#}"
    );
    assert_eq!(
        m["why"].as_str(),
        Some(format!("running {first} differs from the tag's current digest").as_str()),
        "{m:#}"
    );
    let s = w(&report, "steady");
    assert_eq!(
        (s["status"].as_str(), s["latest"].as_str(), &s["runningDigests"]),
        (Some("current"), Some(kept.as_str()), &serde_json::json!([kept])),
        "{s:#}"
    );
    assert_eq!(report["summary"]["newerImage"], 1, "{:#}", report["summary"]);

    // The table says it in words.
    let table = run(&[]);
    let text = table.stdout();
    let line = text.lines().find(|l| l.contains("Deployment/moving")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("newer image behind tag"), "{line}");
    let line = text.lines().find(|l| l.contains("Deployment/steady")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("current"), "{line}");

    // A rollout: the new pods pull the tag's new digest; the old ones go. Current again.
    c.kubectl(&["-n", &ns, "rollout", "restart", "deployment/moving"]).ok();
    let want = format!("{reg}/{moving}@{second}");
    image_ids_when(&c, &ns, "app=moving", "rolled out to the new digest", |ids| {
        ids.len() == 2 && ids.iter().all(|i| *i == want)
    });
    let after = run(&["-o", "json"]);
    let report = after.report();
    assert_eq!(after.code(), 0, "everything current: exit 0\n{report:#}\n{}", after.stderr());
    let m = w(&report, "moving");
    assert_eq!((m["status"].as_str(), &m["runningDigests"]), (Some("current"), &serde_json::json!([second])), "{m:#}");
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_chart_sources_groups_and_apis() {
    let c = needs_cluster!("versions_chart_sources_groups_and_apis");
    let oci = crate::oci::oci();
    let f = upstream_fixtures::start();
    let rt = crate::common::runtime();
    let ns = unique_ns("versions-charts");
    c.create_namespace(&ns);
    // Chart versions in an OCI repository (helm push) and a classic repository (index.yaml).
    let src = crate::oci::tempdir("vcharts-src");
    let pkgs = crate::oci::tempdir("vcharts-pkg");
    for v in ["1.0.0", "1.0.2", "1.1.0", "2.0.0-rc.1"] {
        let chart = crate::oci::write_chart(&src, "vchart", v, "1.0", false);
        c.helm(Helm::V4, &["package", chart.to_str().unwrap(), "-d", pkgs.to_str().unwrap()]).ok();
    }
    oci.helm_login(&c, Helm::V4);
    let prefix = crate::oci::unique_repo("vcharts").replace("/app", "");
    for entry in std::fs::read_dir(&pkgs).unwrap() {
        let tgz = entry.unwrap().path();
        c.helm(Helm::V4, &["push", tgz.to_str().unwrap(), &format!("oci://{}/{prefix}", oci.registry), "--plain-http"])
            .ok();
    }
    let addr = rt.block_on(crate::oci::serve_dir(pkgs.clone()));
    c.helm(Helm::V4, &["repo", "index", pkgs.to_str().unwrap(), "--url", &format!("http://{addr}/")]).ok();
    let installed = src.join("vchart-1.0.0");
    for rel in ["from-oci", "from-classic"] {
        c.helm(Helm::V4, &["install", rel, installed.to_str().unwrap(), "-n", &ns]).ok();
    }
    // Generated copies: three Deployments on one image fold into one row.
    let repo = crate::oci::unique_repo("vgroup");
    oci.push_image(&repo, "1.0.0", "one");
    oci.push_image(&repo, "1.0.1", "two");
    for n in ["runner-a1", "runner-b2", "runner-c3"] {
        deployment(&c, &ns, n, &format!("{}/{repo}:1.0.0", oci.registry));
    }
    // Manifests with apiVersions removed long ago, and one that is fine.
    let manifests = c.scratch.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(
        manifests.join("old.yaml"),
        "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\n---\napiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: nightly}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: fine}\n",
    )
    .unwrap();

    let extra = format!(
        "  registries:\n  - {{host: \"{reg}\", plain_http: true, username_env: E2E_REG_USER, password_env: E2E_REG_PASSWORD}}\n  charts:\n  - {{release: from-oci, repo: \"oci://{reg}/{prefix}\", track: patch}}\n  - {{release: from-classic, namespace: \"{ns}\", repo: \"http://{addr}\"}}\n  groups:\n  - {{name: runners, name_regex: \"^runner-\"}}\n",
        reg = oci.registry
    );
    let cfg = config(&c, &f, "", &extra);
    let cache = c.scratch.join("cache");
    let env = [
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("E2E_REG_USER", oci.user.as_str()),
        ("E2E_REG_PASSWORD", oci.password.as_str()),
    ];
    let r = c.drift_with_env(
        &[
            "versions",
            "-n",
            &ns,
            "--category",
            "helm,workloads,apis",
            "--manifests",
            manifests.to_str().unwrap(),
            "-o",
            "json",
            "--config",
            &cfg,
        ],
        &env,
    );
    let report = r.report();
    assert_eq!(r.code(), 1, "{report:#}");
    let o = &rows(&report, "helm", "from-oci")[0];
    assert_eq!(
        (o["status"].as_str(), o["latest"].as_str(), o["newerTrack"].as_str()),
        (Some("patch-behind"), Some("1.0.2"), Some("1.1.0")),
        "{o:#}"
    );
    assert!(o["source"].as_str().unwrap().starts_with("oci://"));
    let cl = &rows(&report, "helm", "from-classic")[0];
    assert_eq!((cl["status"].as_str(), cl["latest"].as_str()), (Some("minor-behind"), Some("1.1.0")), "{cl:#}");
    // The group: one row, three objects.
    let g = &rows(&report, "workloads", "runners")[0];
    assert_eq!(
        (g["count"].as_u64(), g["status"].as_str(), g["latest"].as_str()),
        (Some(3), Some("patch-behind"), Some("1.0.1")),
        "{g:#}"
    );
    assert!(rows(&report, "workloads", "Deployment/runner-a1").is_empty());
    // apis: one row per object whose apiVersion is removed, with the replacement.
    let ing = &rows(&report, "apis", "Ingress/web")[0];
    assert_eq!(
        (ing["status"].as_str(), ing["latest"].as_str(), ing["installed"].as_str()),
        (Some("removed"), Some("networking.k8s.io/v1"), Some("extensions/v1beta1"))
    );
    assert!(ing["why"].as_str().unwrap().contains("removed in 1.22"));
    assert_eq!(rows(&report, "apis", "CronJob/nightly")[0]["latest"], "batch/v1");
    assert!(rows(&report, "apis", "Deployment/fine").is_empty());
    // A manifests path that does not exist: an error row naming it, exit 2.
    let r = c.drift_with_env(
        &[
            "versions",
            "-n",
            &ns,
            "--category",
            "apis",
            "--manifests",
            "/nonexistent/x.yaml",
            "-o",
            "json",
            "--config",
            &cfg,
        ],
        &env,
    );
    assert_eq!(r.code(), 2, "{}", r.stdout());
    assert!(r.stdout().contains("/nonexistent/x.yaml"));
}

/// The app's version endpoint, served on loopback for the probe test: `/<workload>/version`.
/// `ok` and `tagged` answer JSON (only with the Bearer token) that also carries canary secrets in
/// a field and in headers; `fail` answers 500; `redirect` sends to another host (`localhost`);
/// `big` answers more than the probe reads. Returns the address.
fn probe_server(token: &'static str) -> std::net::SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let port = std::sync::Arc::new(std::sync::OnceLock::<u16>::new());
            let p = port.clone();
            let addr = crate::oci::serve(0, move |_, path, headers| {
                let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
                let canary_headers = vec![
                    ("set-cookie".to_string(), "session=CANARY-cookie-7f3a".to_string()),
                    ("x-api-key".to_string(), "CANARY-header-7f3a".to_string()),
                ];
                match path {
                    "/ok/version" | "/tagged/version" if auth == format!("Bearer {token}") => (
                        200,
                        [canary_headers, vec![("content-type".to_string(), "application/json".to_string())]].concat(),
                        br#"{"version":"1.0.0","build":{"commit":"abc"},"apiToken":"CANARY-body-7f3a"}"#.to_vec(),
                    ),
                    "/ok/version" | "/tagged/version" => (401, vec![], b"no".to_vec()),
                    "/fail/version" => (500, canary_headers, b"CANARY-body-7f3a".to_vec()),
                    "/redirect/version" => {
                        let to = format!("http://localhost:{}/ok/version", p.get().unwrap());
                        (302, vec![("location".to_string(), to)], vec![])
                    }
                    "/big/version" => (
                        200,
                        vec![],
                        format!("{{\"version\":\"1.0.0\",\"pad\":\"{}\"}}", "x".repeat(100_000)).into_bytes(),
                    ),
                    _ => (404, vec![], vec![]),
                }
            })
            .await;
            port.set(addr.port()).unwrap();
            tx.send(addr).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_app_probes_on_floating_tags() {
    let c = needs_cluster!("versions_app_probes_on_floating_tags");
    let oci = crate::oci::oci();
    let ns = unique_ns("versions-probe");
    c.create_namespace(&ns);
    let reg = &oci.registry;
    let repo = crate::oci::unique_repo("vprobe");
    for tag in ["1.0.0", "1.1.0", "latest", "main"] {
        oci.push_image(&repo, tag, &format!("build {tag}"));
    }
    const TOKEN: &str = "probe-token-CANARY-9c1d";
    let addr = probe_server(TOKEN);
    for name in ["ok", "fail", "redirect", "big"] {
        deployment(&c, &ns, name, &format!("{reg}/{repo}:latest"));
    }
    deployment(&c, &ns, "unprobed", &format!("{reg}/{repo}:main"));
    deployment(&c, &ns, "tagged", &format!("{reg}/{repo}:1.1.0"));
    let cfg = c.scratch.join("versions-probes.yaml");
    std::fs::write(
        &cfg,
        format!(
            "versions:\n  registries:\n  - {{host: \"{reg}\", plain_http: true, username_env: E2E_REG_USER, password_env: E2E_REG_PASSWORD}}\n  probes:\n  - image: \"{reg}/{repo}:latest\"\n    url: \"http://{addr}/{{name}}/version\"\n    json_pointer: /version\n    token_env: E2E_PROBE_TOKEN\n    timeout: 3s\n  - {{image: \"{reg}/{repo}:1.1.0\", url: \"http://{addr}/{{name}}/version\", json_pointer: /version, token_env: E2E_PROBE_TOKEN}}\n"
        ),
    )
    .unwrap();
    let cache = c.scratch.join("cache");
    let env = [
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("E2E_REG_USER", oci.user.as_str()),
        ("E2E_REG_PASSWORD", oci.password.as_str()),
        ("E2E_PROBE_TOKEN", TOKEN),
    ];
    let run = |args: &[&str]| {
        let r = c.drift_with_env(
            &[&["versions", "-n", &ns, "--category", "workloads", "--config", cfg.to_str().unwrap()], args].concat(),
            &env,
        );
        for text in [r.stdout(), r.stderr()] {
            assert!(!text.contains("CANARY"), "a probe's secret or the token was printed:\n{text}");
        }
        r
    };
    let out = run(&["-o", "json"]);
    let report = out.report();
    // Failed probes are lookup failures: exit 2, the other rows still reported.
    assert_eq!(out.code(), 2, "{report:#}");
    let w = |name: &str| {
        row(
            &report,
            "workloads",
            &format!("Deployment/{name}"),
            match name {
                "tagged" => "1.1.0",
                "unprobed" => "main",
                _ => "latest",
            },
        )
        .clone()
    };
    // A floating tag judged by the version the app reports, against tags of the same shape.
    let ok = w("ok");
    assert_eq!(
        (ok["status"].as_str(), ok["probed"].as_str(), ok["latest"].as_str()),
        (Some("minor-behind"), Some("1.0.0"), Some("1.1.0")),
        "{ok:#}"
    );
    assert!(ok["source"].as_str().unwrap().contains(&format!("probe http://{addr}/ok/version")), "{ok:#}");
    // On a version tag the probe is shown beside the tag's own answer.
    let tagged = w("tagged");
    assert_eq!((tagged["status"].as_str(), tagged["probed"].as_str()), (Some("current"), Some("1.0.0")), "{tagged:#}");
    // Failures say why, never a guess.
    for (name, why) in [
        ("fail", "HTTP 500".to_string()),
        ("redirect", "redirect to another host".to_string()),
        ("big", "larger than 65536 bytes".to_string()),
    ] {
        let r = w(name);
        assert_eq!(r["status"], "error", "{name}: {r:#}");
        assert!(r["probed"].is_null(), "{name}: {r:#}");
        let got = r["why"].as_str().unwrap();
        assert!(
            got.starts_with(&format!("probe http://{addr}/{name}/version: ")) && got.contains(&why),
            "{name}: {got}"
        );
    }
    // Without a probe a floating tag is still judged by digest (no pod: unknown).
    assert_eq!(w("unprobed")["status"], "unknown", "{report:#}");
    // One request per probe URL.
    assert_eq!(report["summary"]["requests"][addr.to_string()].as_u64(), Some(5), "{:#}", report["summary"]);

    // The table shows the probed version beside the tag; CSV has it in its own column.
    let table = run(&[]).stdout();
    let line = table.lines().find(|l| l.contains("Deployment/ok")).unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("latest (app 1.0.0)") && line.contains("minor behind"), "{line}");
    let csv = run(&["-o", "csv"]).stdout();
    assert!(csv.lines().next().unwrap().ends_with(",probed,deprecated_in,removed_in,replacement"), "{csv}");
    assert!(csv.lines().any(|l| l.contains("Deployment/ok") && l.ends_with(",1.0.0,,,")), "{csv}");

    // The readonly context gives the same answer (a probe makes no Kubernetes request at all).
    let ro = run(&["-o", "json", "--context", "readonly"]).report();
    assert_eq!(ro["rows"], report["rows"]);

    // Without the token variable the probe is an error naming the variable, not a guess.
    let r = c.drift_with_env(
        &["versions", "-n", &ns, "--category", "workloads", "--config", cfg.to_str().unwrap(), "-o", "json"],
        &env[..3],
    );
    let report = r.report();
    let ok = row(&report, "workloads", "Deployment/ok", "latest");
    assert_eq!(ok["status"], "error");
    assert!(ok["why"].as_str().unwrap().contains("E2E_PROBE_TOKEN"), "{ok:#}");
}

/// `versions -n NS` answers for the namespace alone, as kubectl scopes to it: a user whose rights
/// end at the namespace gets its image rows and exit 1 (something is behind), not a forbidden
/// kube-system row and exit 2; the summary names what was left out. A category named with
/// --category is scanned whatever the scope (here: forbidden, so an error row and exit 2).
#[ignore = "needs the local control plane"]
#[test]
fn versions_in_one_namespace_leaves_the_cluster_wide_categories_out() {
    let c = needs_cluster!("versions_in_one_namespace_leaves_the_cluster_wide_categories_out");
    let _kube_system = kube_system();
    let oci = crate::oci::oci();
    let f = upstream_fixtures::start();
    let ns = unique_ns("versions-ns");
    c.create_namespace(&ns);
    let repo = crate::oci::unique_repo("vns");
    oci.push_tag_shapes(&repo);
    deployment(&c, &ns, "behind", &format!("{}/{repo}:1.2.3", oci.registry));
    // A ServiceAccount that may read everything in the namespace and nothing outside it.
    c.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: ns-reader, namespace: {ns}}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: ns-reader, namespace: {ns}}}\n\
             rules: [{{apiGroups: ['*'], resources: ['*'], verbs: [get, list, watch]}}]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: ns-reader, namespace: {ns}}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: ns-reader}}\n\
             subjects: [{{kind: ServiceAccount, name: ns-reader, namespace: {ns}}}]\n"
        ),
    )
    .ok();
    let kc = c.token_kubeconfig(&ns, "ns-reader");
    let kc = kc.to_str().unwrap();
    let extra = format!("  registries:\n{}", registry_entry(&oci.registry));
    let cfg = config(&c, &f, "", &extra);
    let cache = c.scratch.join("cache");
    let env = registry_env(&cache, &oci);
    let run = |args: &[&str]| c.drift_with_env(&[&["--kubeconfig", kc, "versions"], args].concat(), &env);

    let out = run(&["-n", &ns, "-o", "json", "--config", &cfg]);
    let report = out.report();
    assert_eq!(out.code(), 1, "a patch behind, nothing forbidden: exit 1\n{report:#}\n{}", out.stderr());
    let categories: Vec<&str> =
        report["rows"].as_array().unwrap().iter().map(|r| r["category"].as_str().unwrap()).collect();
    assert!(!categories.iter().any(|c| *c == "cluster" || *c == "nodes"), "{report:#}");
    assert_eq!(report["summary"]["errors"], 0, "{report:#}");
    assert_eq!(report["summary"]["leftOut"], serde_json::json!(["cluster", "nodes"]), "{report:#}");
    let behind = rows(&report, "workloads", "Deployment/behind");
    assert_eq!(behind.len(), 1, "{report:#}");
    assert_eq!((behind[0]["status"].as_str(), behind[0]["latest"].as_str()), (Some("patch-behind"), Some("1.2.4")));

    // The table says what was left out and how to have it.
    let text = run(&["-n", &ns, "--config", &cfg]);
    assert_eq!(text.code(), 1, "{}\n{}", text.stdout(), text.stderr());
    assert!(
        text.stdout().contains(
            "cluster and nodes left out: scoped to one namespace (name them with --category cluster,nodes, or use -A)"
        ),
        "{}",
        text.stdout()
    );

    // Named, the cluster category is scanned: this user may not list kube-system's pods.
    let named = run(&["-n", &ns, "--category", "cluster,workloads", "-o", "json", "--config", &cfg]);
    let report = named.report();
    assert_eq!(named.code(), 2, "{report:#}");
    assert!(report["summary"]["leftOut"].is_null(), "{report:#}");
    let forbidden = rows(&report, "cluster", "control plane");
    assert!(
        forbidden
            .first()
            .is_some_and(|r| r["status"] == "error" && r["why"].as_str().unwrap_or("").contains("forbidden")),
        "{report:#}"
    );
    assert_eq!(rows(&report, "workloads", "Deployment/behind")[0]["status"], "patch-behind");
}
