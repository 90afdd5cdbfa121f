//! The local control plane itself: RBAC contexts and a working controller manager.

use crate::common::unique_ns;

#[ignore = "needs the local control plane"]
#[test]
fn readonly_context_reads_but_cannot_write() {
    let c = crate::needs_cluster!("readonly_context_reads_but_cannot_write");
    let create = c.kubectl(&["--context", "readonly", "auth", "can-i", "create", "configmaps"]);
    assert_eq!(create.stdout().trim(), "no", "{}", create.stderr());
    let list = c.kubectl(&["--context", "readonly", "auth", "can-i", "list", "secrets", "-A"]);
    assert_eq!(list.stdout().trim(), "yes", "{}", list.stderr());
    let admin = c.kubectl(&["--context", "admin", "auth", "can-i", "create", "configmaps"]);
    assert_eq!(admin.stdout().trim(), "yes");
}

#[ignore = "needs the local control plane"]
#[test]
fn controller_manager_runs_controllers() {
    let c = crate::needs_cluster!("controller_manager_runs_controllers");
    let ns = unique_ns("env");
    c.create_namespace(&ns);
    c.kubectl(&["-n", &ns, "create", "deployment", "web", "--image=registry.example/web:1"]).ok();
    let start = std::time::Instant::now();
    loop {
        let sa = c.kubectl(&["-n", &ns, "get", "serviceaccount", "default"]).code() == 0;
        let rs = c.kubectl(&["-n", &ns, "get", "replicasets", "-o", "name"]).stdout().contains("replicaset");
        if sa && rs {
            break;
        }
        assert!(start.elapsed().as_secs() < 60, "no default ServiceAccount or ReplicaSet after 60s");
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn api_server_reports_the_pinned_version() {
    let c = crate::needs_cluster!("api_server_reports_the_pinned_version");
    let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/test-env")).unwrap();
    let pinned =
        script.lines().find_map(|l| l.strip_prefix("K8S_VERSION=")).expect("K8S_VERSION in scripts/test-env").trim();
    let version: serde_json::Value = serde_json::from_str(&c.kubectl(&["get", "--raw", "/version"]).ok()).unwrap();
    assert_eq!(version["gitVersion"], pinned, "{version:#}");
    let (major, minor) = pinned.trim_start_matches('v').split_once('.').unwrap();
    assert_eq!(version["major"], major);
    assert_eq!(version["minor"], minor.split('.').next().unwrap());
    let client = c.kubectl(&["version", "--client", "-o", "json"]).ok();
    let client: serde_json::Value = serde_json::from_str(&client).unwrap();
    assert_eq!(client["clientVersion"]["gitVersion"], pinned, "{client:#}");
}

/// A `--context` the kubeconfig lacks is named, with the contexts it has (exit 2), both from
/// KUBECONFIG and from `--kubeconfig`.
#[ignore = "needs the local control plane"]
#[test]
fn an_unknown_context_is_named_with_the_contexts_there_are() {
    let c = crate::needs_cluster!("an_unknown_context_is_named_with_the_contexts_there_are");
    let r = c.drift(&["release", "x", "--context", "no-such-context"]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    let err = r.stderr();
    assert!(err.contains(r#"no context "no-such-context" in KUBECONFIG (contexts: "#), "{err}");
    assert!(err.contains("admin") && err.contains("readonly"), "{err}");
    let kubeconfig = std::env::var("KUBECONFIG").expect("the environment's KUBECONFIG");
    let first = std::env::split_paths(&kubeconfig).next().unwrap();
    let r = c.drift(&["release", "x", "--kubeconfig", first.to_str().unwrap(), "--context", "nope"]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains(&format!(r#"no context "nope" in {} (contexts: "#, first.display())), "{}", r.stderr());
}

/// Variables other programs set for themselves (a shell's or CI runner's `LOG_FORMAT`, a Pod's
/// `CONFIG`, ...) change nothing: the tool reads only its own `DRIFT_` names.
#[ignore = "needs the local control plane"]
#[test]
fn other_programs_variables_are_not_read() {
    let c = crate::needs_cluster!("other_programs_variables_are_not_read");
    let ns = unique_ns("env-vars");
    c.create_namespace(&ns);
    let chart = crate::common::fixture("charts/note");
    c.helm(crate::common::Helm::V4, &["install", "note", chart.to_str().unwrap(), "-n", &ns]).ok();
    let foreign = c.scratch.join("other-program.toml");
    std::fs::write(&foreign, "[server]\nport = 8080\n").unwrap();
    let env = [
        ("LOG_FORMAT", "logfmt"),
        ("LOG_LEVEL", "warning"),
        ("CONFIG", foreign.to_str().unwrap()),
        ("DATA_DIR", "/nonexistent/data"),
        ("KUBECTL", "/nonexistent/kubectl"),
        ("CLUSTER_NAME", "someone-elses"),
        ("SCAN_INTERVAL", "soon"),
        ("EXTERNAL_URL", "not a url"),
        ("SLACK_WEBHOOK_URL", "http://127.0.0.1:9/never"),
    ];
    let r = c.drift_with_env(&["release", "note", "-n", &ns, "-o", "json"], &env);
    assert_eq!(r.code(), 0, "{}\n{}", r.stdout(), r.stderr());
    assert_eq!(r.report()["releases"][0]["status"], "clean", "{}", r.stdout());
    // The tool's own name still works (and is checked).
    let r = c.drift_with_env(&["release", "note", "-n", &ns], &[("DRIFT_LOG_FORMAT", "logfmt")]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains("logfmt"), "{}", r.stderr());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
