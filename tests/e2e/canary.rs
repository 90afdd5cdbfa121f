//! The Secret canary sweep: every output path that exists (release, manifests, orphans and watch,
//! in each output format, the MCP server's tools, cleanup scripts, alert payloads, watch's state
//! and /metrics, error messages) is run over a namespace whose Secrets hold canary values: in Secret data, in a
//! manifest's stringData, in Helm values rendered into a Secret, live values set by hand, a
//! missing Secret, an extra one, an orphan one, and in credentials (a webhook URL, a SQL password,
//! a kubeconfig token). No canary may appear, in any encoding, without `--show-secrets`; where that
//! flag exists, the row runs again with it and the canaries it names must appear (so the check can
//! fail). Each row also names evidence that the Secret's finding is in the output, so a canary's
//! absence means redaction, not a missing report.
//!
//! The table is `rows()`: a new command or output is one more row. `versions` (registry
//! credentials, pull secrets) and Helm's SQL driver have their own sweep,
//! [`versions_and_sql_credentials_never_in_any_output`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::common::{Cluster, Helm, fixture, unique_ns};

const HELM_DATA: &str = "cnry-helm-data-4f1a9c2e7b";
const HELM_STRING: &str = "cnry-helm-stringdata-8d3e6a";
const HELM_GONE: &str = "cnry-helm-gone-2b7c91";
const LIVE: &str = "cnry-live-by-hand-6e0f3d";
const LIVE_ADDED: &str = "cnry-live-added-a91c44";
const MAN_DATA: &str = "cnry-manifest-data-55c1e0";
const MAN_STRING: &str = "cnry-manifest-stringdata-0b9d72";
const MAN_MISSING: &str = "cnry-manifest-missing-7a2f18";
const EXTRA: &str = "cnry-extra-live-3c8e5b";
const ORPHAN: &str = "cnry-orphan-d4e6f1";
const BAD_B64: &str = "cnry-not-base64-91ab!!";
const BROKEN_YAML: &str = "cnry-broken-yaml-6c2d0e";
const URL_TOKEN: &str = "cnry-url-token-0f8a3b";
const DSN_PASSWORD: &str = "cnry-dsn-password-e4b2c7";
const KUBE_TOKEN: &str = "cnryKubeToken7d1e9a0c";

const CANARIES: &[&str] = &[
    HELM_DATA,
    HELM_STRING,
    HELM_GONE,
    LIVE,
    LIVE_ADDED,
    MAN_DATA,
    MAN_STRING,
    MAN_MISSING,
    EXTRA,
    ORPHAN,
    BAD_B64,
    BROKEN_YAML,
    URL_TOKEN,
    DSN_PASSWORD,
    KUBE_TOKEN,
];

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// The forms a canary can take in output: itself, and its base64 at each of the three alignments
/// (inside a longer encoded text, such as a Secret's data or a release's manifest), without the
/// characters its neighbours change.
fn forms(canary: &str) -> Vec<String> {
    let mut v = vec![canary.to_string()];
    for pad in 0..3 {
        let mut bytes = vec![b'x'; pad];
        bytes.extend_from_slice(canary.as_bytes());
        let enc = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let start = if pad == 0 { 0 } else { 4 };
        v.push(enc[start..enc.len() - 4].to_string());
    }
    v
}

fn leaked(text: &str) -> Vec<&'static str> {
    CANARIES.iter().copied().filter(|c| forms(c).iter().any(|f| text.contains(f.as_str()))).collect()
}

/// One output path.
struct Row {
    name: String,
    args: Vec<String>,
    code: i32,
    /// Text the output must hold (the Secret's finding is reported).
    evidence: Vec<String>,
    /// `None`: the command has no --show-secrets. `Some(list)`: with it, these canaries appear.
    shown: Option<Vec<&'static str>>,
    /// More output to read after the run (alert payloads, state, scripts, ...).
    collect: Option<Box<dyn Fn() -> String>>,
    /// Environment of the run (credentials named by variables).
    env: Vec<(String, String)>,
}

fn row(name: &str, args: &[&str], code: i32, evidence: &[&str], shown: Option<&[&'static str]>) -> Row {
    Row {
        name: name.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        evidence: evidence.iter().map(|s| s.to_string()).collect(),
        shown: shown.map(|s| s.to_vec()),
        collect: None,
        env: Vec::new(),
    }
}

/// The namespace of the sweep and its files.
struct Scene {
    ns: String,
    manifests: PathBuf,
    broken: PathBuf,
    rx: crate::watch::Receiver,
}

fn secret(name: &str, ns: &str, labels: &str, data: &[(&str, &str)], string_data: &[(&str, &str)]) -> String {
    let mut s =
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {ns}\n{labels}type: Opaque\n");
    if !data.is_empty() {
        s.push_str("data:\n");
        for (k, v) in data {
            s.push_str(&format!("  {k}: {}\n", b64(v)));
        }
    }
    if !string_data.is_empty() {
        s.push_str("stringData:\n");
        for (k, v) in string_data {
            s.push_str(&format!("  {k}: {v}\n"));
        }
    }
    s
}

fn setup(c: &Cluster) -> Scene {
    let ns = unique_ns("canary");
    c.create_namespace(&ns);
    let set = format!("dataValue={HELM_DATA},stringDataValue={HELM_STRING},goneValue={HELM_GONE}");
    c.helm(Helm::V4, &["install", "cn", fixture("charts/canary").to_str().unwrap(), "-n", &ns, "--set", &set]).ok();
    // Drift by hand on the release's Secret: a value changed, a key added; its other Secret deleted.
    let patch = format!(r#"{{"data":{{"password":"{}","added":"{}"}}}}"#, b64(LIVE), b64(LIVE_ADDED));
    c.kubectl(&["-n", &ns, "patch", "secret", "cn-creds", "-p", &patch]).ok();
    c.kubectl(&["-n", &ns, "delete", "secret", "cn-gone"]).ok();

    let label = "  labels: {sweep: canary}\n";
    let dir = c.scratch.join("manifests");
    std::fs::create_dir_all(&dir).unwrap();
    // Live: the manifest's Secret with other values, an extra Secret in no file, an orphan Secret.
    let live = [
        secret("m-creds", &ns, label, &[("key", LIVE)], &[("token", LIVE)]),
        secret("m-extra", &ns, label, &[("x", EXTRA)], &[]),
        secret("orphan-secret", &ns, "", &[("o", ORPHAN)], &[]),
        // Live, for the file whose data is not base64 (an error: that value is never compared).
        secret("bad", &ns, "", &[("k", "live-value")], &[]),
    ]
    .join("---\n");
    c.kubectl_stdin(&["apply", "-f", "-"], &live).ok();
    let desired = [
        secret("m-creds", &ns, label, &[("key", MAN_DATA)], &[("token", MAN_STRING)]),
        secret("m-missing", &ns, label, &[], &[("v", MAN_MISSING)]),
    ]
    .join("---\n");
    std::fs::write(dir.join("secrets.yaml"), desired).unwrap();

    // Files that cannot be read as they stand, holding canaries.
    let broken = c.scratch.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("bad-base64.yaml"),
        format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: bad, namespace: {ns}}}\ndata:\n  k: \"{BAD_B64}\"\n"),
    )
    .unwrap();
    std::fs::write(
        broken.join("broken.yaml"),
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: broken, namespace: {ns}}}\nstringData:\n  k: \"{BROKEN_YAML}\n  j: [x\n"
        ),
    )
    .unwrap();
    Scene { ns, manifests: dir, broken, rx: crate::watch::Receiver::start() }
}

fn rows(c: &Cluster, s: &Scene) -> Vec<Row> {
    let ns = s.ns.as_str();
    let man = s.manifests.to_str().unwrap();
    let broken = s.broken.to_str().unwrap();
    let release_shown: &[&'static str] = &[LIVE, LIVE_ADDED, HELM_DATA];
    let manifests_shown: &[&'static str] = &[LIVE, MAN_DATA, MAN_STRING];
    let mut v = Vec::new();
    for (fmt, extra) in [("text", &["--color", "always"][..]), ("json", &["-o", "json"]), ("yaml", &["-o", "yaml"])] {
        let mut args = vec!["release", "cn", "-n", ns];
        args.extend_from_slice(extra);
        v.push(row(&format!("release {fmt}"), &args, 1, &["cn-creds", "cn-gone", "<redacted"], Some(release_shown)));
        let mut args = vec!["manifests", man, "-n", ns, "-l", "sweep=canary"];
        args.extend_from_slice(extra);
        v.push(row(
            &format!("manifests {fmt}"),
            &args,
            1,
            &["m-creds", "m-missing", "m-extra", "<redacted"],
            Some(manifests_shown),
        ));
    }
    v.push(row("release -q", &["release", "cn", "-n", ns, "-q"], 1, &["cn"], Some(&[])));
    v.push(row("release --all", &["release", "--all", "-n", ns, "-o", "json"], 1, &["cn-creds"], Some(release_shown)));
    v.push(row("manifests -q", &["manifests", man, "-n", ns, "-q"], 1, &[], Some(&[])));
    v.push(row(
        "manifests: unreadable files (errors)",
        &["manifests", broken, "-n", ns],
        2,
        &["bad-base64.yaml", "broken.yaml", "Secret", "not valid base64"],
        // Data the API server would refuse is an error, its value never printed, not even shown.
        Some(&[]),
    ));
    for fmt in ["table", "json", "yaml", "csv"] {
        for show in ["orphans", "all"] {
            v.push(row(
                &format!("orphans {fmt} --show {show}"),
                &["orphans", "-n", ns, "--older-than", "0s", "-o", fmt, "--show", show],
                1,
                &["orphan-secret"],
                None,
            ));
        }
    }
    for script in ["export", "delete"] {
        v.push(row(
            &format!("orphans --script {script}"),
            &["orphans", "-n", ns, "--older-than", "0s", "--script", script],
            1,
            &["orphan-secret"],
            None,
        ));
    }

    // versions (upstream answers from the fixtures): the release's row, in each format.
    let offline = c.scratch.join("canary-versions.yaml");
    std::fs::write(&offline, crate::serve::offline_versions_config()).unwrap();
    for fmt in ["table", "json", "yaml", "csv"] {
        let args = [
            "versions",
            "-n",
            ns,
            "--category",
            "helm",
            "-o",
            fmt,
            "--no-cache",
            "--config",
            offline.to_str().unwrap(),
        ];
        v.push(Row { code: -1, ..row(&format!("versions {fmt}"), &args, 0, &["cn"], None) });
    }

    // watch: alerts (webhook and Slack payloads), file state, ConfigMap state.
    let state = c.scratch.join("watch-state.json");
    let hook = s.rx.url("/hook");
    let slack = s.rx.url("/slack");
    let watch = |st: &str| -> Vec<String> {
        [
            "watch",
            "cn",
            "--manifests",
            man,
            "-n",
            ns,
            "--once",
            "--state",
            st,
            "--webhook",
            &hook,
            "--slack-webhook",
            &slack,
        ]
        .iter()
        .map(|x| x.to_string())
        .collect()
    };
    let bodies = s.rx.bodies_reader();
    let state_file = state.clone();
    v.push(Row {
        name: "watch --once, webhook + Slack payloads, file state".into(),
        args: watch(state.to_str().unwrap()),
        code: 1,
        evidence: vec!["cn-creds".into(), "m-creds".into(), "<redacted".into(), "data.password".into()],
        shown: None,
        collect: Some(Box::new(move || {
            format!("{}\n{}", bodies(), std::fs::read_to_string(&state_file).unwrap_or_default())
        })),
        env: Vec::new(),
    });
    let (kubectl, kubeconfig, cm_ns) = (c.kubectl.clone(), c.kubeconfig.clone(), ns.to_string());
    v.push(Row {
        name: "watch --once, ConfigMap state".into(),
        args: watch(&format!("configmap:{ns}/drift-state")),
        code: 1,
        evidence: vec![format!("release/{ns}/cn"), "drift-state".into()],
        shown: None,
        collect: Some(Box::new(move || {
            let out = std::process::Command::new(&kubectl)
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["-n", &cm_ns, "get", "configmap", "drift-state", "-o", "yaml"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        })),
        env: Vec::new(),
    });
    // Credentials in error messages: a webhook URL that cannot be reached, a SQL password, a token.
    let dead_hook = format!("http://127.0.0.1:{}/hooks/{URL_TOKEN}", closed_port());
    v.push(row(
        "watch: undeliverable webhook (error message)",
        &[
            "watch",
            "cn",
            "-n",
            ns,
            "--once",
            "--state",
            c.scratch.join("s2.json").to_str().unwrap(),
            "--webhook",
            &dead_hook,
        ],
        2,
        &["webhook"],
        None,
    ));
    let dsn = format!("postgres://drift:{DSN_PASSWORD}@127.0.0.1:{}/helm", closed_port());
    v.push(row(
        "release: SQL driver that cannot connect (error message)",
        &["release", "cn", "-n", ns, "--helm-driver", "sql", "--helm-sql-connection", &dsn],
        2,
        &["127.0.0.1"],
        Some(&[]),
    ));
    let bad_token = c.scratch.join("bad-token.kubeconfig");
    let text = std::fs::read_to_string(&c.kubeconfig).unwrap();
    let env_dir = PathBuf::from(std::env::var("DRIFT_ENV_DIR").unwrap());
    let admin = std::fs::read_to_string(env_dir.join("admin.token")).unwrap();
    std::fs::write(&bad_token, text.replace(admin.trim(), KUBE_TOKEN)).unwrap();
    for cmd in [&["release", "cn"][..], &["manifests", man], &["orphans"]] {
        let mut args = cmd.to_vec();
        args.extend(["-n", ns, "--kubeconfig", bad_token.to_str().unwrap()]);
        v.push(row(&format!("{}: rejected token (error message)", cmd[0]), &args, 2, &["401"], None));
    }
    v
}

fn closed_port() -> u16 {
    crate::common::free_port()
}

fn run_row(c: &Cluster, r: &Row, show: bool) -> String {
    let mut args: Vec<&str> = r.args.iter().map(String::as_str).collect();
    if show {
        args.push("--show-secrets");
    }
    // The most verbose logs, as JSON (docs/logs.md): every API request and every span.
    args.push("-vv");
    let mut env = vec![("DRIFT_LOG_LEVEL", "trace"), ("DRIFT_LOG_FORMAT", "json"), ("RUST_BACKTRACE", "1")];
    env.extend(r.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let run = c.drift_with_env(&args, &env);
    let mut all = format!("{}\n{}", run.stdout(), run.stderr());
    if let Some(f) = &r.collect {
        all.push('\n');
        all.push_str(&f());
    }
    // -1: any exit code the command documents (versions: 0, or 1 when the fixtures say behind).
    if r.code >= 0 {
        assert_eq!(run.code(), r.code, "{}{}: exit code\n{all}", r.name, if show { " --show-secrets" } else { "" });
    } else {
        assert!(matches!(run.code(), 0 | 1), "{}: exit code {}\n{all}", r.name, run.code());
    }
    all
}

#[ignore = "needs the local control plane"]
#[test]
fn no_secret_value_in_any_output_without_show_secrets() {
    let c = crate::needs_cluster!("no_secret_value_in_any_output_without_show_secrets");
    let scene = setup(&c);
    // The detector finds a Secret's data as the API serves it (base64, inside YAML).
    let raw = c.kubectl(&["-n", &scene.ns, "get", "secret", "m-creds", "cn-creds", "-o", "yaml"]).ok();
    assert_eq!(leaked(&raw), vec![HELM_STRING, LIVE, LIVE_ADDED], "{raw}");
    let mut checked = 0;
    let mut logged = 0;
    for r in rows(&c, &scene) {
        let all = run_row(&c, &r, false);
        logged += usize::from(all.contains(r#""target":"kubectl_drift::api""#));
        assert!(leaked(&all).is_empty(), "{}: canaries {:?} in the output:\n{all}", r.name, leaked(&all));
        for e in &r.evidence {
            assert!(all.contains(e.as_str()), "{}: the output lacks '{e}' (is the Secret reported?):\n{all}", r.name);
        }
        if let Some(shown) = &r.shown {
            let all = run_row(&c, &r, true);
            for canary in shown {
                assert!(leaked(&all).contains(canary), "{} --show-secrets: {canary} is not shown:\n{all}", r.name);
            }
        }
        checked += 1;
    }
    // The rows that reach the API server did log their requests (the sweep read real logs).
    assert!(logged * 2 > checked, "API requests logged by only {logged} of {checked} rows");
    // watch's /metrics, served while it runs.
    let metrics = watch_metrics(&c, &scene);
    assert!(metrics.contains("kubectl_drift_release_drifted_objects"), "{metrics}");
    assert!(leaked(&metrics).is_empty(), "/metrics: {:?}\n{metrics}", leaked(&metrics));
    // serve: every answer of the dashboard's API and page, its /metrics, log and data directory.
    let served = serve_outputs(&c, &scene);
    assert!(leaked(&served).is_empty(), "serve: {:?}\n{served}", leaked(&served));
    // kubectl drift mcp: every tool's answer (structured and text) to the official MCP client.
    let mcp = mcp_outputs(&c, &scene);
    assert!(leaked(&mcp).is_empty(), "mcp: {:?}\n{mcp}", leaked(&mcp));
    eprintln!("canary sweep: {} rows, watch's /metrics, serve and mcp clean", checked);
    c.kubectl(&["delete", "namespace", &scene.ns, "--wait=false"]).ok();
}

/// Run `watch --listen` until its first round is done, read /metrics, stop it.
fn watch_metrics(c: &Cluster, s: &Scene) -> String {
    let port = closed_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kubectl-drift"));
    c.apply_env(&mut cmd, Helm::V4);
    let man = s.manifests.to_str().unwrap();
    cmd.args(["watch", "cn", "--manifests", man, "-n", &s.ns, "--interval", "1h", "-vv", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .env("DRIFT_LOG_LEVEL", "trace")
        .env("DRIFT_LOG_FORMAT", "json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let get = |path: &str| crate::watch::http_get(port, path);
    let start = Instant::now();
    while !matches!(get("/readyz"), Some((200, _))) {
        assert!(start.elapsed() < Duration::from_secs(90), "watch --listen never became ready");
        std::thread::sleep(Duration::from_millis(300));
    }
    let metrics = get("/metrics").map(|m| m.1).unwrap_or_default();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    // Its log (stdout and stderr of the running watch) is an output too: JSON lines at trace,
    // the requests (-v) and the spans' ends (-vv) included.
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    for line in [r#""message":"round finished""#, r#""target":"kubectl_drift::api""#, r#""message":"close""#] {
        assert!(log.contains(line), "no {line} in watch's log:\n{log}");
    }
    format!("{metrics}\n{}\n{log}", String::from_utf8_lossy(&out.stdout))
}

/// Run `serve` until its first scans are done, and read everything it serves and writes: the
/// API's JSON and CSV, the orphans' scripts, the page, /metrics, its log and data directory.
fn serve_outputs(c: &Cluster, s: &Scene) -> String {
    use serde_json::json;
    let data = c.scratch.join("serve-data");
    let args =
        ["-n", s.ns.as_str(), "--data-dir", data.to_str().unwrap(), "--older-than", "0s", "--interval", "1h", "-vv"];
    let served =
        crate::serve::serve_env(c, &args, &c.kubeconfig, &[("DRIFT_LOG_LEVEL", "trace"), ("DRIFT_LOG_FORMAT", "json")]);
    served.wait_ready();
    let mut all = String::new();
    for p in [
        "/api/status",
        "/api/releases",
        "/api/releases.csv",
        "/api/drift",
        "/api/drift.csv",
        "/api/orphans",
        "/api/orphans.csv?show=all",
        "/api/orphans/rules",
        "/",
        "/app.js",
        "/metrics",
    ] {
        let r = served.get(p);
        assert_eq!(r.status, 200, "serve {p}: {}", r.body);
        all.push_str(&r.body);
    }
    let orphans = served.get("/api/orphans").json();
    let ids: Vec<serde_json::Value> =
        orphans["report"]["items"].as_array().unwrap().iter().map(|i| i["id"].clone()).collect();
    for action in ["export", "delete"] {
        let r = served.post("/api/orphans/commands", &json!({"ids": ids, "action": action}));
        assert_eq!(r.status, 200, "serve commands {action}: {}", r.body);
        all.push_str(&r.body);
    }
    for evidence in ["cn-creds", "orphan-secret", "<redacted"] {
        assert!(all.contains(evidence), "serve: the answers lack '{evidence}' (is the Secret reported?):\n{all}");
    }
    let log = served.wait_log(r#""message":"releases scan finished""#);
    for line in [r#""target":"kubectl_drift::api""#, r#""message":"close""#] {
        assert!(log.contains(line), "no {line} in serve's log:\n{log}");
    }
    all.push_str(&log);
    drop(served);
    // history.db (the drift history, binary) too, as bytes.
    for f in std::fs::read_dir(&data).unwrap() {
        all.push_str(&String::from_utf8_lossy(&std::fs::read(f.unwrap().path()).unwrap()));
    }
    all
}

/// Every tool of `kubectl drift mcp` over the scene, through the official Python MCP client: the
/// release, the manifests (with their extra Secret), the unreadable files, every examined object.
fn mcp_outputs(c: &Cluster, s: &Scene) -> String {
    use crate::mcp::{call, client, stdio_plan};
    use serde_json::json;
    let (man, broken) = (s.manifests.to_str().unwrap(), s.broken.to_str().unwrap());
    let steps = json!([
        call("release_drift", json!({"release": "cn"})),
        call("release_drift", json!({})),
        call("manifests_drift", json!({"paths": [man], "selector": "sweep=canary"})),
        call("manifests_drift", json!({"paths": [broken]})),
        call("orphans", json!({"older_than": "0s", "show_all": true})),
        call("versions", json!({"categories": ["apis"]})),
    ]);
    let out = client(&stdio_plan(&c.kubeconfig, &["-n", &s.ns], steps)).to_string();
    for evidence in ["cn-creds", "m-creds", "m-extra", "orphan-secret", "<redacted", "not valid base64"] {
        assert!(out.contains(evidence), "mcp: the answers lack '{evidence}' (is the Secret reported?):\n{out}");
    }
    out
}

const REG_PASSWORD: &str = "cnry-registry-password-5e81d0";
const PULL_USER: &str = "cnry-pull-user-7c3a";
const PULL_PASSWORD: &str = "cnry-pull-password-b2f94e";
const PULL_BAD_AUTH: &str = "cnry-pull-bad-auth-1d6e";

/// Rows for `versions` (a registry password through a named variable, answered 401; an
/// imagePullSecret's login, answered 500; a pull secret that does not parse) and for Helm's SQL
/// storage driver (release, orphans and watch over a real SQL release; an authentication failure
/// and a refused connection), in every output format. The real credentials of the test registry and
/// of PostgreSQL are canaries too: they must work (the rows get answers) and never be printed.
#[ignore = "needs the local control plane"]
#[test]
fn versions_and_sql_credentials_never_in_any_output() {
    let c = crate::needs_cluster!("versions_and_sql_credentials_never_in_any_output");
    let pg = crate::common::pg();
    let oci = crate::oci::oci();
    let ns = unique_ns("canary-vs");
    c.create_namespace(&ns);
    let real: Vec<String> = vec![crate::common::Pg::password(&pg.readonly_dsn), oci.password.clone()];
    let extra_canaries = [REG_PASSWORD, PULL_USER, PULL_PASSWORD, PULL_BAD_AUTH];
    let leaks = |text: &str| -> Vec<String> {
        let mut found: Vec<String> = leaked(text).iter().map(|s| s.to_string()).collect();
        for c in real.iter().map(String::as_str).chain(extra_canaries) {
            if forms(c).iter().any(|f| text.contains(f.as_str())) {
                found.push(c.to_string());
            }
        }
        found
    };

    // versions: one image on the test registry (1.2.3 behind 1.2.4), one on a registry that asks
    // for a login and then fails (500), one whose pull secret does not parse.
    let rt = crate::common::runtime();
    let seen_auth = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = seen_auth.clone();
    let failing = rt.block_on(crate::oci::serve(0, move |_, _, headers| {
        match headers.get("authorization").and_then(|v| v.to_str().ok()) {
            None => (401, vec![("www-authenticate".into(), "Basic realm=\"canary\"".into())], vec![]),
            Some(a) => {
                seen.lock().unwrap().push(a.to_string());
                (500, vec![], b"internal error".to_vec())
            }
        }
    }));
    let failing = format!("127.0.0.1:{}", failing.port());
    let repo = crate::oci::unique_repo("cnry");
    oci.push_image(&repo, "1.2.3", "a");
    oci.push_image(&repo, "1.2.4", "b");
    let docker_config = |host: &str, auth: &str| serde_json::json!({"auths": {host: {"auth": auth}}}).to_string();
    let pull_secret = |name: &str, json: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: {ns}}}\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {}\n",
            b64(json)
        )
    };
    let workload = |name: &str, image: &str, pull: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\nspec:\n  replicas: 0\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      imagePullSecrets: [{{name: {pull}}}]\n      containers: [{{name: app, image: \"{image}\"}}]\n"
        )
    };
    let objects = [
        pull_secret("regcred", &docker_config(&failing, &b64(&format!("{PULL_USER}:{PULL_PASSWORD}")))),
        pull_secret("badcred", &docker_config(&failing, &format!("{PULL_BAD_AUTH}!!"))),
        workload("onreg", &format!("{}/{repo}:1.2.3", oci.registry), "regcred"),
        workload("failing", &format!("{failing}/app/x:1.0.0"), "regcred"),
        workload("badpull", &format!("{failing}/app/y:1.0.0"), "badcred"),
    ]
    .join("---\n");
    c.kubectl_stdin(&["apply", "-f", "-"], &objects).ok();
    let cache = c.scratch.join("versions-cache");
    let config = |name: &str, password_env: &str| {
        let path = c.scratch.join(name);
        std::fs::write(
            &path,
            format!(
                "versions:\n  image_pull_secrets: true\n  registries:\n  - {{host: \"{}\", plain_http: true, username_env: CNRY_REG_USER, password_env: {password_env}}}\n  - {{host: \"{failing}\", plain_http: true}}\n",
                oci.registry
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let good_cfg = config("versions-good.yaml", "CNRY_REG_PASSWORD");
    let wrong_cfg = config("versions-wrong.yaml", "CNRY_REG_WRONG");
    let env: Vec<(String, String)> = [
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ("CNRY_REG_USER", oci.user.as_str()),
        ("CNRY_REG_PASSWORD", oci.password.as_str()),
        ("CNRY_REG_WRONG", REG_PASSWORD),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let mut rows = Vec::new();
    for (fmt, cfg, evidence) in [
        ("table", &good_cfg, vec!["onreg", "1.2.4", &failing, "500", "badcred"]),
        ("json", &good_cfg, vec!["onreg", "1.2.4", &failing, "500", "badcred"]),
        ("yaml", &good_cfg, vec!["onreg", "1.2.4", &failing, "500", "badcred"]),
        ("csv", &good_cfg, vec!["onreg", "1.2.4", &failing, "500", "badcred"]),
        ("json", &wrong_cfg, vec!["onreg", oci.registry.as_str(), "401"]),
        ("table", &wrong_cfg, vec!["onreg", oci.registry.as_str(), "401"]),
    ] {
        let mut r = row(
            &format!(
                "versions -o {fmt} ({})",
                if cfg == &good_cfg { "pull secrets, 500" } else { "wrong password, 401" }
            ),
            &["versions", "-n", &ns, "--category", "workloads", "--no-cache", "-o", fmt, "--config", cfg],
            2,
            &evidence,
            None,
        );
        r.env = env.clone();
        rows.push(r);
    }

    // SQL: the canary chart installed through Helm's SQL driver, drifted by hand, and an orphan.
    let helm_sql = [("HELM_DRIVER", "sql"), ("HELM_DRIVER_SQL_CONNECTION_STRING", pg.helm_dsn.as_str())];
    let set = format!("dataValue={HELM_DATA},stringDataValue={HELM_STRING},goneValue={HELM_GONE}");
    let chart = fixture("charts/canary");
    c.helm_with_env(Helm::V4, &["install", "cs", chart.to_str().unwrap(), "-n", &ns, "--set", &set], &helm_sql).ok();
    let patch = format!(r#"{{"data":{{"password":"{}"}}}}"#, b64(LIVE));
    c.kubectl(&["-n", &ns, "patch", "secret", "cs-creds", "-p", &patch]).ok();
    c.kubectl_stdin(&["apply", "-f", "-"], &secret("orphan-secret", &ns, "", &[("o", ORPHAN)], &[])).ok();
    let dsn = pg.readonly_dsn.as_str();
    let sql = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        v.extend(["-n".into(), ns.clone(), "--helm-driver".into(), "sql".into()]);
        v
    };
    for (fmt, extra) in [("text", &[][..]), ("json", &["-o", "json"]), ("yaml", &["-o", "yaml"]), ("-q", &["-q"])] {
        let mut args = sql(&["release", "cs"]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["--helm-sql-connection".into(), dsn.to_string()]);
        let shown: &[&'static str] = if fmt == "-q" { &[] } else { &[LIVE, HELM_DATA] };
        let evidence: &[&str] = if fmt == "-q" { &["cs"] } else { &["cs-creds", "cs-gone", "<redacted"] };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rows.push(row(&format!("release --helm-driver sql {fmt}"), &args, 1, evidence, Some(shown)));
    }
    c.kubectl(&["-n", &ns, "delete", "secret", "cs-gone"]).ok();
    for fmt in ["table", "json", "csv"] {
        let mut args = sql(&["orphans", "--older-than", "0s", "-o", fmt]);
        args.extend(["--helm-sql-connection".into(), dsn.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rows.push(row(&format!("orphans --helm-driver sql -o {fmt}"), &args, 1, &["orphan-secret"], None));
    }
    let rx = crate::watch::Receiver::start();
    let state = c.scratch.join("sql-watch.json");
    let mut args = sql(&["watch", "cs", "--once", "--state", state.to_str().unwrap(), "--webhook", &rx.url("/hook")]);
    args.extend(["--helm-sql-connection".into(), dsn.to_string()]);
    let bodies = rx.bodies_reader();
    let state_file = state.clone();
    rows.push(Row {
        name: "watch --helm-driver sql --once, webhook payload, file state".into(),
        args,
        code: 1,
        evidence: vec!["cs-creds".into(), "<redacted".into(), "data.password".into()],
        shown: None,
        collect: Some(Box::new(move || {
            format!("{}\n{}", bodies(), std::fs::read_to_string(&state_file).unwrap_or_default())
        })),
        env: Vec::new(),
    });
    let wrong_password = pg.readonly_dsn.replacen('@', "x@", 1);
    let refused = format!("postgres://drift_ro:{}@127.0.0.1:{}/helm", crate::common::Pg::password(dsn), closed_port());
    for (what, conn, evidence) in [
        ("authentication failure", &wrong_password, "authentication failed"),
        ("refused connection", &refused, "127.0.0.1"),
    ] {
        for cmd in [&["release", "cs"][..], &["orphans"], &["watch", "cs", "--once"]] {
            let mut args = sql(cmd);
            args.extend(["--helm-sql-connection".into(), conn.clone()]);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            rows.push(row(
                &format!("{} --helm-driver sql: {what} (error message)", cmd[0]),
                &args,
                2,
                &[evidence],
                None,
            ));
        }
    }

    for r in &rows {
        let all = run_row(&c, r, false);
        assert!(leaks(&all).is_empty(), "{}: canaries {:?} in the output:\n{all}", r.name, leaks(&all));
        for e in &r.evidence {
            assert!(all.contains(e.as_str()), "{}: the output lacks '{e}':\n{all}", r.name);
        }
        if let Some(shown) = &r.shown {
            let all = run_row(&c, r, true);
            for canary in shown {
                assert!(leaked(&all).contains(canary), "{} --show-secrets: {canary} is not shown:\n{all}", r.name);
            }
            let creds: Vec<String> = leaks(&all).into_iter().filter(|l| real.contains(l)).collect();
            assert!(creds.is_empty(), "{} --show-secrets prints a credential: {creds:?}", r.name);
        }
    }
    // The pull secret's login was really read and sent (so its absence from the output is redaction).
    let expected = format!("Basic {}", b64(&format!("{PULL_USER}:{PULL_PASSWORD}")));
    assert!(seen_auth.lock().unwrap().contains(&expected), "{:?}", seen_auth.lock().unwrap());
    eprintln!("versions and SQL canary sweep: {} rows clean", rows.len());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
