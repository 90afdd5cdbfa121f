//! The fleet view through Prometheus: two control planes, a `serve` on each, and one real
//! Prometheus (built by `scripts/test-env build`) scraping both with a `cluster` label, as a
//! central Prometheus with one scrape job per cluster would. What PromQL says per cluster must be
//! what each server's API says; an edit in one cluster moves only that cluster's series; every
//! query of the shipped Grafana dashboard runs and returns series; the shipped rules load and
//! evaluate without error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, fixture, free_port, unique_ns};
use crate::fleet::{fleet, on};
use crate::serve::{Served, http, serve_env};

/// A Prometheus of the test's own.
pub struct Prometheus {
    child: Child,
    pub addr: String,
    log: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scrape each `(cluster, address)` every second with that `cluster` label, evaluate `rules`.
    pub fn start(c: &Cluster, name: &str, targets: &[(&str, &str)], rules: &[PathBuf]) -> Prometheus {
        let bin = std::env::var("DRIFT_PROMETHEUS")
            .expect("DRIFT_PROMETHEUS is not set: scripts/test runs scripts/test-env, which builds Prometheus");
        let dir = c.scratch.join(format!("prometheus-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let mut config = String::from("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n");
        if !rules.is_empty() {
            config.push_str("rule_files:\n");
            for r in rules {
                config.push_str(&format!("  - {}\n", r.display()));
            }
        }
        config.push_str("scrape_configs:\n  - job_name: kubectl-drift\n    static_configs:\n");
        for (cluster, addr) in targets {
            config.push_str(&format!("      - targets: ['{addr}']\n        labels:\n          cluster: {cluster}\n"));
        }
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, &config).unwrap();
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let log = dir.join("prometheus.log");
        let child = Command::new(&bin)
            .arg(format!("--config.file={}", file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("start {bin}: {e}"));
        let p = Prometheus { child, addr, log };
        p.wait("Prometheus to be ready", Duration::from_secs(60), || {
            use std::io::{Read, Write};
            // Not listening yet is not an error here (the shared helper panics on it).
            let Ok(mut conn) = std::net::TcpStream::connect(&p.addr) else { return false };
            let _ = write!(conn, "GET /-/ready HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", p.addr);
            let mut answer = String::new();
            let _ = conn.read_to_string(&mut answer);
            answer.starts_with("HTTP/1.1 200")
        });
        p
    }

    /// Wait until `f` holds; the failure shows Prometheus' log.
    pub fn wait(&self, what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < limit, "timed out waiting for {what}; Prometheus log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// An instant query: the answer's `data` (`resultType`, `result`), or the error Prometheus gave.
    pub fn query(&self, promql: &str) -> Result<Value, String> {
        let path = format!("/api/v1/query?query={}", encode(promql));
        let r = http(&self.addr, "GET", &path, &[], None);
        let v: Value = serde_json::from_str(&r.body).map_err(|e| format!("{e}: {}", r.body))?;
        if v["status"] != "success" {
            return Err(format!("{promql}: {}", r.body));
        }
        Ok(v["data"].clone())
    }

    /// The vector a query returns, as (labels, value) rows.
    pub fn vector(&self, promql: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let data = self.query(promql).unwrap_or_else(|e| panic!("{e}"));
        data["result"]
            .as_array()
            .unwrap_or_else(|| panic!("{promql}: not a vector: {data}"))
            .iter()
            .map(|s| {
                let labels = s["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect();
                (labels, s["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN))
            })
            .collect()
    }

    /// `promql`'s rows keyed by the values of `by` labels.
    pub fn by(&self, promql: &str, by: &[&str]) -> BTreeMap<Vec<String>, f64> {
        self.vector(promql)
            .into_iter()
            .map(|(l, v)| (by.iter().map(|k| l.get(*k).cloned().unwrap_or_default()).collect(), v))
            .collect()
    }
}

/// Percent-encode a query for the URL.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Every expression of the dashboard: its panels' targets (rows' panels too) and its template
/// variables' queries, with Grafana's variables replaced as Grafana would for "All".
pub fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    fn panels(v: &Value, out: &mut Vec<(String, String)>) {
        for p in v.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(e) = t["expr"].as_str() {
                    out.push((format!("panel {title:?}"), e.to_string()));
                }
            }
            panels(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    panels(&dashboard["panels"], &mut out);
    for var in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if var["type"] != "query" {
            continue;
        }
        let q = match &var["query"] {
            Value::String(s) => s.clone(),
            Value::Object(o) => o.get("query").and_then(Value::as_str).unwrap_or_default().to_string(),
            _ => String::new(),
        };
        // label_values(METRIC, LABEL): Grafana asks for the metric's series.
        let q = match q.strip_prefix("label_values(").and_then(|r| r.strip_suffix(')')) {
            Some(args) => args.rsplit_once(',').map(|(m, _)| m.trim().to_string()).unwrap_or_default(),
            None => q,
        };
        if !q.is_empty() {
            out.push((format!("variable {}", var["name"]), q));
        }
    }
    out.into_iter()
        .map(|(w, e)| {
            let e = e
                .replace("${cluster:regex}", ".*")
                .replace("$cluster", ".*")
                .replace("${cluster}", ".*")
                .replace("${namespace:regex}", ".*")
                .replace("$namespace", ".*")
                .replace("${namespace}", ".*")
                .replace("$__rate_interval", "5m")
                .replace("$__interval", "1m")
                .replace("$__range", "1h");
            (w, e)
        })
        .collect()
}

/// The API's view of one server: release statuses and drifted objects, orphans by class,
/// version rows by status.
struct ApiView {
    releases: BTreeMap<String, (String, f64)>,
    orphans: BTreeMap<String, f64>,
    versions: BTreeMap<String, f64>,
}

fn api_view(s: &Served) -> ApiView {
    let rel = s.get("/api/releases").json();
    let mut releases = BTreeMap::new();
    for r in rel["report"]["releases"].as_array().unwrap_or_else(|| panic!("no releases: {rel:#}")) {
        let drifted = r["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| matches!(o["state"].as_str(), Some("changed" | "missing" | "extra")))
            .count();
        releases.insert(
            r["name"].as_str().unwrap().to_string(),
            (r["status"].as_str().unwrap().to_string(), drifted as f64),
        );
    }
    let orph = s.get("/api/orphans").json();
    let mut orphans = BTreeMap::new();
    for i in orph["report"]["items"].as_array().unwrap_or_else(|| panic!("no orphans: {orph:#}")) {
        *orphans.entry(i["class"].as_str().unwrap().to_string()).or_default() += 1.0;
    }
    let ver = s.get("/api/drift").json();
    let mut versions = BTreeMap::new();
    for r in ver["report"]["rows"].as_array().unwrap_or_else(|| panic!("no version rows: {ver:#}")) {
        *versions.entry(r["status"].as_str().unwrap().to_string()).or_default() += 1.0;
    }
    ApiView { releases, orphans, versions }
}

/// What Prometheus says of `cluster`, in the same shape.
fn prom_view(p: &Prometheus, cluster: &str, ns: &str) -> ApiView {
    let sel = format!("cluster=\"{cluster}\",namespace=\"{ns}\"");
    let status = p.by(&format!("kubectl_drift_release_status{{{sel}}}"), &["release", "status"]);
    let drifted = p.by(&format!("kubectl_drift_release_drifted_objects{{{sel}}}"), &["release"]);
    let releases = status
        .keys()
        .map(|k| (k[0].clone(), (k[1].clone(), drifted.get(&vec![k[0].clone()]).copied().unwrap_or(f64::NAN))))
        .collect();
    let orphans = p
        .by(&format!("sum by (class) (kubectl_drift_orphan_objects{{{sel}}})"), &["class"])
        .into_iter()
        .map(|(k, v)| (k[0].clone(), v))
        .collect();
    let versions = p
        .by(&format!("sum by (status) (kubectl_drift_version_rows{{cluster=\"{cluster}\"}})"), &["status"])
        .into_iter()
        .map(|(k, v)| (k[0].clone(), v))
        .collect();
    ApiView { releases, orphans, versions }
}

fn same(p: &Prometheus, s: &Served, cluster: &str, ns: &str) -> Result<(), String> {
    let (api, prom) = (api_view(s), prom_view(p, cluster, ns));
    if api.releases != prom.releases || api.orphans != prom.orphans || api.versions != prom.versions {
        return Err(format!(
            "{cluster}: API releases {:?} orphans {:?} versions {:?}; Prometheus releases {:?} orphans {:?} versions {:?}",
            api.releases, api.orphans, api.versions, prom.releases, prom.orphans, prom.versions
        ));
    }
    Ok(())
}

#[ignore = "needs the local control plane"]
#[test]
fn prometheus_sees_each_clusters_findings_as_its_api_does() {
    let c = crate::needs_cluster!("prometheus_sees_each_clusters_findings_as_its_api_does");
    let (kubeconfig, contexts) = fleet();
    let (one, two) = (contexts[0].as_str(), contexts[1].as_str());
    let ns = unique_ns("prom");
    let chart = fixture("charts/shop");
    for ctx in [one, two] {
        on(&c, &kubeconfig, ctx, "kubectl", &["create", "namespace", &ns]);
        on(
            &c,
            &kubeconfig,
            ctx,
            "helm",
            &["install", "shop", chart.to_str().unwrap(), "-n", &ns, "--set", "worker.minReplicas=1"],
        );
    }
    // The first cluster: a hand edit and a leftover ConfigMap. The second: as installed.
    on(&c, &kubeconfig, one, "kubectl", &["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]);
    on(&c, &kubeconfig, one, "kubectl", &["-n", &ns, "create", "configmap", "lonely", "--from-literal=a=b"]);

    let start = |ctx: &str| {
        let data = c.scratch.join(format!("prom-data-{ctx}"));
        let _ = std::fs::remove_dir_all(&data);
        serve_env(
            &c,
            &[
                "--context",
                ctx,
                "-n",
                &ns,
                "--live",
                "--older-than",
                "0s",
                "--data-dir",
                data.to_str().unwrap(),
                "--external-url",
                &format!("https://drift.{ctx}.example"),
            ],
            &kubeconfig,
            &[],
        )
    };
    let servers = [start(one), start(two)];
    for s in &servers {
        s.wait_ready();
    }
    let rules: Vec<PathBuf> = ["deploy/monitoring/rules.yaml"].iter().map(|p| repo(p)).filter(|p| p.exists()).collect();
    let p = Prometheus::start(&c, "fleet", &[(one, &servers[0].health), (two, &servers[1].health)], &rules);
    p.wait("both servers scraped and ready", Duration::from_secs(60), || {
        p.vector("kubectl_drift_ready == 1").len() == 2
    });

    // Per cluster, PromQL gives what that server's API gives.
    for (cluster, s) in [(one, &servers[0]), (two, &servers[1])] {
        let mut last = Ok(());
        p.wait(&format!("{cluster}'s series to match its API"), Duration::from_secs(30), || {
            last = same(&p, s, cluster, &ns);
            last.is_ok()
        });
        last.unwrap();
    }
    let status = p.by(&format!("kubectl_drift_release_status{{namespace=\"{ns}\"}}"), &["cluster", "status"]);
    assert_eq!(
        status.keys().cloned().collect::<Vec<_>>(),
        vec![vec![one.to_string(), "drifted".to_string()], vec![two.to_string(), "clean".to_string()]],
        "{status:?}"
    );
    let orphans = p.by(
        &format!("sum by (cluster) (kubectl_drift_orphan_objects{{namespace=\"{ns}\",class=\"orphan\"}})"),
        &["cluster"],
    );
    assert!(orphans.get(&vec![one.to_string()]).copied().unwrap_or(0.0) >= 1.0, "the leftover ConfigMap: {orphans:?}");
    let links = p.by("kubectl_drift_dashboard_info", &["cluster", "url"]);
    assert!(links.contains_key(&vec![two.to_string(), format!("https://drift.{two}.example")]), "{links:?}");

    // An edit in the second cluster: its series change within seconds (--live), the first's not.
    let before = p.by(
        &format!("{{cluster=\"{one}\",namespace=\"{ns}\",__name__=~\"kubectl_drift_release_.*\"}}"),
        &["__name__", "release", "status"],
    );
    let updates_before = p.by(&format!("kubectl_drift_live_updates_total{{cluster=\"{one}\"}}"), &[]);
    let edited = Instant::now();
    on(&c, &kubeconfig, two, "kubectl", &["-n", &ns, "scale", "deploy/shop-web", "--replicas=4"]);
    p.wait("the second cluster's release to show drifted", Duration::from_secs(30), || {
        p.vector(&format!("kubectl_drift_release_status{{cluster=\"{two}\",namespace=\"{ns}\",status=\"drifted\"}}"))
            .len()
            == 1
    });
    eprintln!("edit in {two} -> its series in Prometheus: {:?}", edited.elapsed());
    same(&p, &servers[1], two, &ns).unwrap();
    let after = p.by(
        &format!("{{cluster=\"{one}\",namespace=\"{ns}\",__name__=~\"kubectl_drift_release_.*\"}}"),
        &["__name__", "release", "status"],
    );
    assert_eq!(before, after, "the first cluster's release series did not move");
    assert_eq!(
        updates_before,
        p.by(&format!("kubectl_drift_live_updates_total{{cluster=\"{one}\"}}"), &[]),
        "no update in the first cluster"
    );

    // The shipped dashboard: every query runs and returns series for this scenario.
    let file = repo("deploy/monitoring/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() >= 6, "{queries:?}");
    let mut answers = Vec::new();
    for (what, expr) in &queries {
        let mut last = String::new();
        p.wait(&format!("{what} to return series"), Duration::from_secs(20), || match p.query(expr) {
            Ok(data) => {
                let n = data["result"].as_array().map_or(usize::from(data["resultType"] == "scalar"), Vec::len);
                last = format!("{n} series");
                n > 0
            }
            Err(e) => panic!("{what}: {e}"),
        });
        answers.push(format!("{what}: {expr} -> {last}"));
    }
    for a in &answers {
        eprintln!("{a}");
    }
    // The shipped rules load and evaluate without error.
    let r = http(&p.addr, "GET", "/api/v1/rules", &[], None);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let groups = v["data"]["groups"].as_array().unwrap();
    assert!(groups.len() >= 2, "the shipped rule groups are loaded: {}", r.body);
    p.wait("every rule evaluated", Duration::from_secs(20), || {
        let v: Value = serde_json::from_str(&http(&p.addr, "GET", "/api/v1/rules", &[], None).body).unwrap();
        v["data"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().iter())
            .all(|r| r["health"] == "ok")
    });
    for ctx in [one, two] {
        on(&c, &kubeconfig, ctx, "kubectl", &["delete", "namespace", &ns, "--wait=false"]);
    }
}

#[test]
fn dashboard_queries_substitute_grafanas_variables() {
    let d = serde_json::json!({
        "panels": [{"title": "a", "targets": [{"expr": "sum(x{cluster=~\"$cluster\"}[$__rate_interval])"}]},
                   {"title": "row", "panels": [{"title": "b", "targets": [{"expr": "y{namespace=~\"${namespace}\"}"}]}]}],
        "templating": {"list": [{"type": "query", "name": "cluster", "query": {"query": "label_values(kubectl_drift_build_info, cluster)"}},
                                 {"type": "datasource", "name": "datasource", "query": "prometheus"}]}
    });
    let q = dashboard_queries(&d);
    assert_eq!(
        q.iter().map(|(_, e)| e.as_str()).collect::<Vec<_>>(),
        vec!["sum(x{cluster=~\".*\"}[5m])", "y{namespace=~\".*\"}", "kubectl_drift_build_info"]
    );
}
