//! Zero writes, measured by the API server: every read-only command runs as `drift-audit`, a user
//! that is allowed to write everything (system:masters) and whose every request the API server's
//! audit log records (scripts/test-env's audit policy). The log must show only get, list and
//! watch, except watch's opt-in ConfigMap state, which may touch that one object and nothing else.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};

/// Both tests read every `drift-audit` request in a window of the one audit log, so they run one
/// at a time (a TokenReview of the serve test must not land in the other's window).
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static AUDIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    AUDIT.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The audit events the API server wrote from `offset` on, once the log has stopped growing
/// (the log backend writes each event as its request completes).
pub(crate) fn events_since(offset: u64) -> (Vec<Value>, u64) {
    let path = std::env::var("DRIFT_AUDIT_LOG").expect("DRIFT_AUDIT_LOG from scripts/test-env");
    let mut last = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len == last || Instant::now() > deadline {
            break;
        }
        last = len;
    }
    let text = std::fs::read(&path).expect("the audit log exists");
    let new = &text[(offset as usize).min(text.len())..];
    let events = String::from_utf8_lossy(new)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("an audit event is JSON"))
        .filter(|e| e["user"]["username"] == "drift-audit")
        .collect();
    (events, text.len() as u64)
}

pub(crate) fn log_len() -> u64 {
    let path = std::env::var("DRIFT_AUDIT_LOG").expect("DRIFT_AUDIT_LOG from scripts/test-env");
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Requests per verb.
fn verbs(events: &[Value]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in events {
        *out.entry(e["verb"].as_str().unwrap_or("?").to_string()).or_default() += 1;
    }
    out
}

fn is_write(e: &Value) -> bool {
    matches!(e["verb"].as_str(), Some("create" | "update" | "patch" | "delete" | "deletecollection"))
}

fn describe(e: &Value) -> String {
    let o = &e["objectRef"];
    format!("{} {} {}/{} ({})", e["verb"], o["resource"], o["namespace"], o["name"], e["requestURI"])
}

/// Set up a namespace with a drifted Helm release and a manifests folder, so every code path runs.
fn scenario(c: &Cluster) -> (String, std::path::PathBuf) {
    let ns = unique_ns("audit");
    c.create_namespace(&ns);
    c.helm(Helm::V4, &["install", "shop", fixture("charts/shop").to_str().unwrap(), "-n", &ns]).ok();
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=4"]).ok();
    c.kubectl(&["-n", &ns, "create", "configmap", "unused", "--from-literal=a=b"]).ok();
    let dir = c.scratch.join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("cm.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain, namespace: {ns}}}\ndata: {{a: b}}\n"),
    )
    .unwrap();
    c.kubectl(&["apply", "-f", dir.to_str().unwrap()]).ok();
    c.kubectl(&["-n", &ns, "patch", "configmap", "plain", "-p", r#"{"data":{"a":"edited"}}"#]).ok();
    (ns, dir)
}

#[ignore = "needs the local control plane"]
#[test]
fn read_only_commands_make_zero_writes_as_a_user_allowed_to_write() {
    let c = crate::needs_cluster!("read_only_commands_make_zero_writes_as_a_user_allowed_to_write");
    let _alone = one_at_a_time();
    let (ns, dir) = scenario(&c);
    let state = c.scratch.join("watch-state.json");
    let cm_state = format!("configmap:{ns}/drift-watch-state");
    let dir_s = dir.to_str().unwrap();
    let state_s = state.to_str().unwrap();
    // Cluster-wide commands also meet other tests' objects (a release mid-install, a CRD being
    // deleted), so for them an error (2) is accepted too: what is checked here is what they send.
    let commands: Vec<(&str, Vec<&str>, &[i32])> = vec![
        ("release --all -A", vec!["release", "--all", "-A"], &[1, 2]),
        ("release shop -o json", vec!["release", "shop", "-n", &ns, "-o", "json"], &[1]),
        ("manifests", vec!["manifests", dir_s], &[1]),
        ("orphans -A", vec!["orphans", "-A", "--older-than", "0s"], &[1, 2]),
        ("orphans --script delete", vec!["orphans", "-n", &ns, "--older-than", "0s", "--script", "delete"], &[1]),
        ("watch --once (file state)", vec!["watch", "--all", "-n", &ns, "--once", "--state", state_s], &[1]),
        ("watch --once --manifests", vec!["watch", "--manifests", dir_s, "--once", "--state", state_s], &[1]),
        // (completion reads connection flags from the words typed; it gets --context there)
        ("__complete release", vec!["release", "-n", &ns, ""], &[0]),
        ("watch --once (ConfigMap state)", vec!["watch", "shop", "-n", &ns, "--once", "--state", &cm_state], &[1]),
    ];
    let mut offset = log_len();
    let mut table = Vec::new();
    for (name, args, want) in &commands {
        let mut full = if name.starts_with("__complete") { vec!["__complete"] } else { vec![] };
        full.extend(["--context", "audit"]);
        full.extend(args.iter().copied());
        let run = c.drift(&full);
        assert!(want.contains(&run.code()), "{name}: exit {}\n{}\n{}", run.code(), run.stdout(), run.stderr());
        let (events, next) = events_since(offset);
        offset = next;
        assert!(!events.is_empty(), "{name}: the audit log recorded its requests");
        let writes: Vec<&Value> = events.iter().filter(|e| is_write(e)).collect();
        if name.contains("ConfigMap state") {
            // The one documented write: the state ConfigMap, and nothing else.
            for w in &writes {
                let o = &w["objectRef"];
                assert!(
                    o["resource"] == "configmaps" && o["namespace"] == ns.as_str() && o["name"] == "drift-watch-state",
                    "{name} wrote something other than its state: {}",
                    describe(w)
                );
            }
            assert!(!writes.is_empty(), "{name}: the state was written");
        } else {
            assert!(writes.is_empty(), "{name} wrote: {:?}", writes.iter().map(|w| describe(w)).collect::<Vec<_>>());
        }
        assert!(
            events.iter().all(|e| e["userAgent"].as_str().is_some_and(|ua| ua.starts_with("kubectl-drift/"))),
            "{name}: every request names kubectl-drift in its User-Agent"
        );
        table.push(format!("{name:34} {:4} requests {:?}", events.len(), verbs(&events)));
    }
    // The figures for the closing note: reads per command.
    eprintln!("requests made by each command (audit log):\n{}", table.join("\n"));
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// `serve` reads only; with `--auth kubernetes` its only other calls are the TokenReviews and
/// SubjectAccessReviews that check callers (they store nothing), and only then.
#[ignore = "needs the local control plane"]
#[test]
fn serve_makes_zero_writes_and_reviews_tokens_only_with_auth() {
    use crate::serve::{http, serve, token};
    let c = crate::needs_cluster!("serve_makes_zero_writes_and_reviews_tokens_only_with_auth");
    let _alone = one_at_a_time();
    let ns = unique_ns("audit-serve");
    c.create_namespace(&ns);
    c.kubectl(&["-n", &ns, "create", "configmap", "unused", "--from-literal=a=b"]).ok();
    let caller = token(&c, &ns, "caller");
    let data = c.scratch.join("data");
    let data_s = data.to_str().unwrap();

    let offset = log_len();
    let s = serve(&c, &["--context", "audit", "-n", &ns, "--data-dir", data_s, "--older-than", "0s"]);
    s.wait_ready();
    assert_eq!(s.get("/api/orphans").status, 200);
    let ig = s.post("/api/orphans/ignore", &serde_json::json!({"ids": [format!("ConfigMap:{ns}/unused")]}));
    assert_eq!(ig.status, 200, "{}", ig.body);
    assert_eq!(http(&s.addr, "POST", "/api/rescan", &[], None).status, 202);
    s.wait_scans("orphans", 2);
    drop(s);
    let (events, offset) = events_since(offset);
    assert!(!events.is_empty(), "serve's requests are in the audit log");
    let writes: Vec<String> = events.iter().filter(|e| is_write(e)).map(describe).collect();
    assert!(writes.is_empty(), "serve (no auth) wrote: {writes:?}");

    let s = serve(&c, &["--context", "audit", "-n", &ns, "--data-dir", data_s, "--auth", "kubernetes"]);
    s.wait_ready();
    let r = http(&s.addr, "GET", "/api/orphans", &[("Authorization", &format!("Bearer {caller}"))], None);
    assert_eq!(r.status, 403, "the caller has no permission: {}", r.body);
    drop(s);
    let (events, _) = events_since(offset);
    let writes: Vec<&Value> = events.iter().filter(|e| is_write(e)).collect();
    for w in &writes {
        let o = &w["objectRef"];
        assert!(
            w["verb"] == "create" && (o["resource"] == "tokenreviews" || o["resource"] == "subjectaccessreviews"),
            "serve --auth kubernetes wrote something other than a review: {}",
            describe(w)
        );
    }
    let count = |r: &str| writes.iter().filter(|w| w["objectRef"]["resource"] == r).count();
    assert_eq!((count("tokenreviews"), count("subjectaccessreviews")), (1, 1), "one review of each per caller");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
