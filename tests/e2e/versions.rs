//! `kubectl drift versions` on the real control plane: Node objects with `status.nodeInfo` and
//! kube-system Pods created by the test (no kubelet runs here), a Helm release, and upstream
//! answers from the fixture server (tests/e2e/upstream_fixtures.rs).

use serde_json::Value;

use crate::cluster_or_skip;
use crate::common::{Cluster, Helm, unique_ns};
use crate::upstream_fixtures::{self, Fixtures};

/// A Node with the given kubelet and runtime versions (set through the status subresource).
fn node(c: &Cluster, name: &str, kubelet: &str, runtime: &str) {
    c.kubectl_stdin(
        &["create", "-f", "-"],
        &format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{drift-e2e: versions}}\n"),
    )
    .ok();
    let patch = format!(
        r#"{{"status":{{"nodeInfo":{{"kubeletVersion":"{kubelet}","containerRuntimeVersion":"{runtime}","kubeProxyVersion":"","machineID":"m","systemUUID":"u","bootID":"b","kernelVersion":"6.1.0","osImage":"Debian","operatingSystem":"linux","architecture":"amd64"}}}}}}"#
    );
    c.kubectl(&["patch", "node", name, "--subresource=status", "--type=merge", "-p", &patch]).ok();
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

/// A chart in the scratch folder: `drift-shop` at `version`, with its home link.
fn chart(c: &Cluster, version: &str) -> std::path::PathBuf {
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
fn config(c: &Cluster, f: &Fixtures, prefix: &str, extra: &str) -> String {
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

/// Run `versions` with a private cache home; returns (exit code, JSON report or null, stderr).
fn versions(c: &Cluster, args: &[&str]) -> (i32, Value, String) {
    let cache = c.scratch.join("cache");
    let run = c.drift_with_env(&[&["versions"], args].concat(), &[("XDG_CACHE_HOME", cache.to_str().unwrap())]);
    let json = serde_json::from_str(&run.stdout()).unwrap_or(Value::Null);
    (run.code(), json, run.stderr())
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

#[test]
fn versions_cluster_nodes_and_helm_against_upstream_fixtures() {
    let c = cluster_or_skip!("versions_cluster_nodes_and_helm_against_upstream_fixtures");
    let f = upstream_fixtures::start();
    let ns = unique_ns("versions");
    c.create_namespace(&ns);
    let (a, b, o) = (format!("{ns}-a"), format!("{ns}-b"), format!("{ns}-o"));
    let _gone = NodesGone(&c, vec![a.clone(), b.clone(), o.clone()]);
    node(&c, &a, "v1.35.2", "containerd://1.7.27");
    node(&c, &b, "v1.35.2", "containerd://1.7.27");
    node(&c, &o, "v1.35.2-eks-4a1b2c", "cri-o://1.30.0");
    let dir = chart(&c, "1.2.0");
    c.helm(Helm::V4, &["install", "shop", dir.to_str().unwrap(), "-n", &ns]).ok();

    let cfg = config(&c, &f, "", "");
    let (code, report, err) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg]);
    assert_eq!(code, 1, "something is behind: exit 1\n{report:#}\n{err}");
    assert_eq!(report["schemaVersion"], 1);

    // The cluster: /version against stable-1.N.txt and stable.txt (v1.37.1): a minor behind.
    let k = row(&report, "cluster", "kubernetes", &server_version(&c));
    assert_eq!((k["status"].as_str(), k["latest"].as_str()), (Some("minor-behind"), Some("v1.37.1")), "{k:#}");
    assert!(k["notes"].as_str().unwrap().ends_with("CHANGELOG-1.37.md"), "{k:#}");
    assert!(k["source"].as_str().unwrap().starts_with(&f.url("/release/stable-1.")), "{k:#}");

    // Nodes grouped by version, with a count; the vendor suffix kept for display, stripped for
    // comparison.
    let kubelet = row(&report, "nodes", "kubelet", "v1.35.2");
    assert_eq!(kubelet["count"], 2, "{kubelet:#}");
    assert_eq!(kubelet["status"], "minor-behind");
    let eks = row(&report, "nodes", "kubelet", "v1.35.2-eks-4a1b2c");
    assert_eq!((eks["count"].as_u64(), eks["latest"].as_str()), (Some(1), Some("v1.37.1")));
    // containerd from GitHub releases (drafts and prereleases skipped): v2.1.4 is a major ahead.
    let ctr = row(&report, "nodes", "containerd", "1.7.27");
    assert_eq!(
        (ctr["count"].as_u64(), ctr["status"].as_str(), ctr["latest"].as_str()),
        (Some(2), Some("major-behind"), Some("v2.1.4")),
        "{ctr:#}"
    );
    assert_eq!(ctr["notes"], "https://github.com/containerd/containerd/releases/tag/v2.1.4");
    // Another runtime: unknown, never a guess.
    let crio = row(&report, "nodes", "cri-o", "1.30.0");
    assert_eq!(crio["status"], "unknown");
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

    // A rerun within the TTL asks upstream nothing.
    f.clear();
    let (code2, report2, _) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg]);
    assert_eq!(code2, 1);
    assert!(f.seen().is_empty(), "warm rerun made requests: {:?}", f.seen());
    assert_eq!(report2["rows"], report["rows"]);

    // With a zero TTL every answer is revalidated: If-None-Match, 304, the same report.
    let cfg0 = config(&c, &f, "", "  cache_ttl: 0s\n");
    let (_, report3, _) = versions(&c, &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg0]);
    let seen = f.seen();
    assert!(!seen.is_empty() && seen.iter().all(|s| s.status == 304 && s.if_none_match.is_some()), "{seen:?}");
    assert_eq!(report3["rows"], report["rows"]);

    // track: patch holds the answer to the installed minor and shows the newest as "newer track".
    let cfgp = config(&c, &f, "", "  track: patch\n");
    let (_, patch, _) = versions(&c, &["-A", "--category", "nodes", "-o", "json", "--config", &cfgp]);
    let kubelet = row(&patch, "nodes", "kubelet", "v1.35.2");
    assert_eq!(
        (kubelet["status"].as_str(), kubelet["latest"].as_str(), kubelet["newerTrack"].as_str()),
        (Some("patch-behind"), Some("v1.35.9"), Some("v1.37.1"))
    );
    let ctr = row(&patch, "nodes", "containerd", "1.7.27");
    assert_eq!(
        (ctr["latest"].as_str(), ctr["newerTrack"].as_str()),
        (Some("v1.7.29"), Some("v2.1.4")),
        "page 2 holds v1.7.29"
    );

    // The readonly context gives the same answer; so does `helm drift versions`.
    let (ro_code, ro, _) = versions(
        &c,
        &["-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg, "--context", "readonly"],
    );
    assert_eq!((ro_code, &ro["rows"]), (1, &report["rows"]));
    let cache = c.scratch.join("cache");
    let helm = c.drift_with_env(
        &["versions", "-A", "--category", "cluster,nodes,helm", "-o", "json", "--config", &cfg],
        &[("HELM_PLUGIN_NAME", "drift"), ("XDG_CACHE_HOME", cache.to_str().unwrap())],
    );
    assert_eq!(serde_json::from_str::<Value>(&helm.stdout()).unwrap()["rows"], report["rows"]);

    // The table: one line per row, status words, the summary.
    let table = c
        .drift_with_env(
            &["versions", "-A", "--category", "nodes", "--config", &cfg],
            &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
        )
        .stdout();
    assert!(table.starts_with("CATEGORY"), "{table}");
    assert!(table.lines().any(|l| l.contains("containerd (x2)") && l.contains("major behind")), "{table}");
}

#[test]
fn versions_upstream_rate_limits() {
    let c = cluster_or_skip!("versions_upstream_rate_limits");
    let f = upstream_fixtures::start();
    // A 429 with a short Retry-After is waited out once: the answer is the same.
    let cfg = config(&c, &f, "/ratelimited", "");
    let (code, report, err) = versions(&c, &["--category", "cluster", "-o", "json", "--config", &cfg, "--no-cache"]);
    let k = rows(&report, "cluster", "kubernetes")[0];
    assert_eq!(k["status"], "minor-behind", "{report:#}\n{err}");
    assert_eq!(code, 1);
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
