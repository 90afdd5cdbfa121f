//! Flux in the test environment: the real source-controller and kustomize-controller (v1.9.6)
//! that `scripts/test-env up` runs against the first cluster, and its Git server
//! (`DRIFT_FLUX_GIT_URL`, repositories under `DRIFT_FLUX_GIT_ROOT`).
//!
//! The public helpers are for every test module that needs objects applied by Flux
//! (`crate::flux::git_repo`, `apply_git_kustomization`, `wait_kustomization_ready`,
//! `force_reconcile`). When the environment runs no Flux (`scripts/test-env build` has not built
//! it, so `DRIFT_FLUX_*` are empty) they fail the test and say so: a Flux test never passes by
//! skipping.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, unique_ns};
use crate::needs_cluster;

/// How long [`wait_kustomization_ready`] and [`force_reconcile`] wait.
pub const FLUX_TIMEOUT: Duration = Duration::from_secs(90);

const KUSTOMIZATIONS: &str = "kustomizations.kustomize.toolkit.fluxcd.io";
const GIT_REPOSITORIES: &str = "gitrepositories.source.toolkit.fluxcd.io";

/// The Flux part of the test environment (`scripts/test-env env`).
pub struct FluxEnv {
    /// The directory of the Git server's bare repositories (`NAME.git`).
    pub git_root: PathBuf,
    /// The Git server's base URL (`http://127.0.0.1:PORT`); repository NAME is `{git_url}/NAME.git`.
    pub git_url: String,
    /// The namespace the controllers run for (`flux-system`).
    pub namespace: String,
}

/// The Flux part of the test environment; fails the test when Flux does not run there.
pub fn flux_env() -> FluxEnv {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (root, url, ns) = (var("DRIFT_FLUX_GIT_ROOT"), var("DRIFT_FLUX_GIT_URL"), var("DRIFT_FLUX_NAMESPACE"));
    assert!(
        !root.is_empty() && !url.is_empty() && !ns.is_empty(),
        "Flux does not run in the test environment (DRIFT_FLUX_GIT_ROOT='{root}', DRIFT_FLUX_GIT_URL='{url}', \
         DRIFT_FLUX_NAMESPACE='{ns}'): run scripts/test-env build (it builds source-controller, \
         kustomize-controller and their Git server), then scripts/test-env down and up, and eval its export lines"
    );
    assert!(Path::new(&root).is_dir(), "DRIFT_FLUX_GIT_ROOT={root} is not a directory: is the environment up?");
    FluxEnv { git_root: PathBuf::from(root), git_url: url, namespace: ns }
}

/// Run git (no system or global config, a fixed author); panics with its output on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=drift-e2e", "-c", "user.email=drift-e2e@example.com", "-c", "commit.gpgsign=false"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("failed to start git {}: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "git {} (in {}) failed ({:?}):\n{}{}",
        args.join(" "),
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Repository `name` on the environment's Git server holding exactly `files` (path, content) on
/// branch main, in a new commit pushed over HTTP; returns its URL (`{DRIFT_FLUX_GIT_URL}/NAME.git`).
/// The first call creates the repository; a later call with the same name pushes a new commit
/// (on top of the last one) whose tree is `files`. Names: lowercase letters, digits and `-`.
pub fn git_repo(name: &str, files: &[(&str, &str)]) -> String {
    assert!(
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "git_repo: '{name}' is not a repository name (lowercase letters, digits and -)"
    );
    let env = flux_env();
    let bare = env.git_root.join(format!("{name}.git"));
    if !bare.join("HEAD").exists() {
        git(&env.git_root, &["init", "-q", "--bare", "-b", "main", &format!("{name}.git")]);
    }
    let url = format!("{}/{name}.git", env.git_url);
    let work = std::env::temp_dir().join(format!("drift-e2e-git-{name}-{}-{}", std::process::id(), unique_ns("w")));
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    // The new commit's parent is the branch's last commit (if any); its tree is `files` alone.
    let has_main = !git(&bare, &["for-each-ref", "refs/heads/main"]).trim().is_empty();
    if has_main {
        git(&work, &["fetch", "-q", &url, "main"]);
        git(&work, &["reset", "-q", "--soft", "FETCH_HEAD"]);
    }
    for (path, content) in files {
        let p = work.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content).unwrap();
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "--allow-empty", "-m", &format!("{name}: {} file(s)", files.len())]);
    git(&work, &["push", "-q", &url, "HEAD:refs/heads/main"]);
    let _ = std::fs::remove_dir_all(&work);
    url
}

/// The commit at the tip of branch main of repository `name` (as Flux shows it: `main@sha1:SHA`).
pub fn git_revision(name: &str) -> String {
    let env = flux_env();
    let sha = git(&env.git_root.join(format!("{name}.git")), &["rev-parse", "refs/heads/main"]);
    format!("main@sha1:{}", sha.trim())
}

/// A GitRepository `name` (branch main of `url`, interval 1m) and a Kustomization `name` of its
/// `path` (interval 1m, prune, targetNamespace `ns`), both in namespace `ns`.
pub fn apply_git_kustomization(c: &Cluster, ns: &str, name: &str, url: &str, path: &str) {
    flux_env();
    let manifest = format!(
        r#"apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: {name}, namespace: {ns}}}
spec:
  url: "{url}"
  interval: 1m
  timeout: 30s
  ref: {{branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: {name}, namespace: {ns}}}
spec:
  interval: 1m
  retryInterval: 10s
  timeout: 1m
  path: "{path}"
  prune: true
  targetNamespace: {ns}
  sourceRef: {{kind: GitRepository, name: {name}}}
"#
    );
    c.kubectl_stdin(&["apply", "-f", "-"], &manifest).ok();
}

fn get_json(c: &Cluster, resource: &str, ns: &str, name: &str) -> Option<Value> {
    let run = c.kubectl(&["-n", ns, "get", resource, name, "-o", "json", "--show-managed-fields"]);
    if run.code() != 0 {
        return None;
    }
    serde_json::from_str(&run.stdout()).ok()
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

/// Whether `obj` is Ready (condition True) for its current generation.
fn ready(obj: &Value) -> bool {
    condition(obj, "Ready").is_some_and(|c| c["status"] == "True")
        && obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
}

/// The last `n` lines of an environment log (`$DRIFT_ENV_DIR/logs/NAME.log`).
fn log_tail(name: &str, n: usize) -> String {
    let dir = std::env::var("DRIFT_ENV_DIR").unwrap_or_default();
    let path = Path::new(&dir).join("logs").join(format!("{name}.log"));
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("({}: {e})", path.display()),
    }
}

/// What a Flux wait shows when it times out: both objects' status and the controllers' logs.
fn flux_failure(c: &Cluster, ns: &str, name: &str, what: &str) -> String {
    let ks = get_json(c, KUSTOMIZATIONS, ns, name);
    let source = ks.as_ref().and_then(|k| k["spec"]["sourceRef"]["name"].as_str().map(str::to_string));
    let repo = source.as_deref().and_then(|s| get_json(c, GIT_REPOSITORIES, ns, s));
    let status = |o: &Option<Value>| {
        o.as_ref().map_or("(not found)".to_string(), |o| serde_json::to_string_pretty(&o["status"]).unwrap())
    };
    format!(
        "{what} (Kustomization {ns}/{name}) within {FLUX_TIMEOUT:?}\n\
         Kustomization status: {}\nGitRepository {ns}/{} status: {}\n\
         --- kustomize-controller log (tail) ---\n{}\n--- source-controller log (tail) ---\n{}",
        status(&ks),
        source.as_deref().unwrap_or("?"),
        status(&repo),
        log_tail("kustomize-controller", 40),
        log_tail("source-controller", 40)
    )
}

/// Wait (up to [`FLUX_TIMEOUT`]) until Kustomization `ns/name` is Ready for its generation and
/// return it; on timeout, fail with its and its GitRepository's status and the controllers' logs.
pub fn wait_kustomization_ready(c: &Cluster, ns: &str, name: &str) -> Value {
    flux_env();
    let deadline = Instant::now() + FLUX_TIMEOUT;
    loop {
        if let Some(ks) = get_json(c, KUSTOMIZATIONS, ns, name)
            && ready(&ks)
        {
            return ks;
        }
        assert!(Instant::now() < deadline, "{}", flux_failure(c, ns, name, "not Ready"));
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A fresh value for `reconcile.fluxcd.io/requestedAt` (RFC 3339 with nanoseconds, as `flux
/// reconcile` writes it).
fn requested_at() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    jiff::Timestamp::new(now.as_secs() as i64, now.subsec_nanos() as i32).unwrap().to_string()
}

/// Annotate `resource` `ns/name` with reconcile.fluxcd.io/requestedAt=`at` and wait until its
/// status.lastHandledReconcileAt is `at` and it is Ready.
fn reconcile_one(c: &Cluster, resource: &str, ns: &str, name: &str, ks: &str, at: &str) -> Value {
    c.kubectl(&["-n", ns, "annotate", "--overwrite", resource, name, &format!("reconcile.fluxcd.io/requestedAt={at}")])
        .ok();
    let deadline = Instant::now() + FLUX_TIMEOUT;
    loop {
        if let Some(obj) = get_json(c, resource, ns, name)
            && obj["status"]["lastHandledReconcileAt"] == at
            && ready(&obj)
        {
            return obj;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            flux_failure(
                c,
                ns,
                ks,
                &format!("{resource} {ns}/{name}: the reconcile requested at {at} was not handled (Ready)")
            )
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Reconcile Kustomization `ns/name` now, as `flux reconcile kustomization --with-source` does:
/// annotate its GitRepository with reconcile.fluxcd.io/requestedAt=NOW and wait until it handled
/// that (status.lastHandledReconcileAt) and is Ready, then the same for the Kustomization. Returns
/// the Kustomization. The source goes first, so a commit pushed before is what gets applied.
pub fn force_reconcile(c: &Cluster, ns: &str, name: &str) -> Value {
    flux_env();
    let ks = get_json(c, KUSTOMIZATIONS, ns, name)
        .unwrap_or_else(|| panic!("force_reconcile: no Kustomization {ns}/{name}"));
    let source = ks["spec"]["sourceRef"]["name"].as_str().unwrap_or(name).to_string();
    let source_ns = ks["spec"]["sourceRef"]["namespace"].as_str().unwrap_or(ns).to_string();
    let at = requested_at();
    reconcile_one(c, GIT_REPOSITORIES, &source_ns, &source, name, &at);
    reconcile_one(c, KUSTOMIZATIONS, ns, name, name, &at)
}

/// The managers of an object's managedFields: (manager, operation, subresource).
fn managers(obj: &Value) -> Vec<(String, String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|m| {
                    let s = |k: &str| m[k].as_str().unwrap_or("").to_string();
                    (s("manager"), s("operation"), s("subresource"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn repo_files(value: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "app/config.yaml",
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flux-config\ndata:\n  greeting: {value}\n"),
        ),
        (
            "app/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: flux-web\nspec:\n  replicas: 1\n  \
             selector:\n    matchLabels: {app: flux-web}\n  template:\n    metadata:\n      labels: {app: flux-web}\n    \
             spec:\n      containers:\n      - name: web\n        image: nginx:1.27.3\n"
                .to_string(),
        ),
        ("README.md", "Not under ./app: not applied.\n".to_string()),
    ]
}

#[ignore = "needs the local control plane"]
#[test]
fn flux_applies_a_kustomization_from_git() {
    let c = needs_cluster!("flux_applies_a_kustomization_from_git");
    let flux = flux_env();
    // The controllers' own namespace (RUNTIME_NAMESPACE) exists.
    c.kubectl(&["get", "namespace", &flux.namespace]).ok();
    let ns = unique_ns("flux-apply");
    c.create_namespace(&ns);
    let repo = ns.clone();
    let files = repo_files("hello");
    let files: Vec<(&str, &str)> = files.iter().map(|(p, s)| (*p, s.as_str())).collect();
    let url = git_repo(&repo, &files);
    let first = git_revision(&repo);
    apply_git_kustomization(&c, &ns, "app", &url, "./app");
    let ks = wait_kustomization_ready(&c, &ns, "app");
    assert_eq!(ks["status"]["lastAppliedRevision"], first.as_str(), "{ks:#}");

    // Both objects of ./app were applied by kustomize-controller (server-side apply), with Flux's labels.
    let cm = get_json(&c, "configmap", &ns, "flux-config").expect("the ConfigMap from Git was not applied");
    let deploy = get_json(&c, "deployment", &ns, "flux-web").expect("the Deployment from Git was not applied");
    assert_eq!(cm["data"]["greeting"], "hello");
    assert_eq!(
        managers(&cm),
        vec![("kustomize-controller".to_string(), "Apply".to_string(), String::new())],
        "the ConfigMap's only manager: {cm:#}"
    );
    let dm = managers(&deploy);
    assert!(
        dm.contains(&("kustomize-controller".to_string(), "Apply".to_string(), String::new())),
        "the Deployment is applied by kustomize-controller: {dm:?}"
    );
    // Besides Flux, only the controller manager writes (the status).
    assert!(
        dm.iter().all(|(m, _, sub)| m == "kustomize-controller" || sub == "status"),
        "no other manager of the Deployment's spec: {dm:?}"
    );
    for obj in [&cm, &deploy] {
        let labels = &obj["metadata"]["labels"];
        assert_eq!(labels["kustomize.toolkit.fluxcd.io/name"], "app", "{obj:#}");
        assert_eq!(labels["kustomize.toolkit.fluxcd.io/namespace"], ns.as_str(), "{obj:#}");
    }
    let mut inventory: Vec<String> = ks["status"]["inventory"]["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no status.inventory.entries: {ks:#}"))
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default().to_string())
        .collect();
    inventory.sort();
    assert_eq!(inventory, vec![format!("{ns}_flux-config__ConfigMap"), format!("{ns}_flux-web_apps_Deployment")]);

    // A hand edit of a field Flux applies is reverted by the next reconcile.
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "flux-config",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"greeting":"edited"}}"#,
    ])
    .ok();
    assert_eq!(get_json(&c, "configmap", &ns, "flux-config").unwrap()["data"]["greeting"], "edited");
    c.kubectl(&["-n", &ns, "scale", "deployment", "flux-web", "--replicas", "3"]).ok();
    force_reconcile(&c, &ns, "app");
    let cm = get_json(&c, "configmap", &ns, "flux-config").unwrap();
    assert_eq!(cm["data"]["greeting"], "hello", "the hand edit was not reverted: {cm:#}");
    let deploy = get_json(&c, "deployment", &ns, "flux-web").unwrap();
    assert_eq!(deploy["spec"]["replicas"], 1, "the hand scale was not reverted: {deploy:#}");

    // A second commit is applied.
    let files = repo_files("bonjour");
    let files: Vec<(&str, &str)> = files.iter().map(|(p, s)| (*p, s.as_str())).collect();
    assert_eq!(git_repo(&repo, &files), url);
    let second = git_revision(&repo);
    assert_ne!(first, second);
    let ks = force_reconcile(&c, &ns, "app");
    assert_eq!(ks["status"]["lastAppliedRevision"], second.as_str(), "{ks:#}");
    let cm = get_json(&c, "configmap", &ns, "flux-config").unwrap();
    assert_eq!(cm["data"]["greeting"], "bonjour", "the second commit was not applied: {cm:#}");

    // Deleting the Kustomization prunes what it applied (the controller is running: the finalizer
    // does not hold the namespace).
    c.kubectl(&["-n", &ns, "delete", KUSTOMIZATIONS, "app", "--timeout=60s"]).ok();
    assert!(get_json(&c, "configmap", &ns, "flux-config").is_none(), "the ConfigMap was not pruned");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// The fields of `object` (a report's object) by path: (reason, manager).
fn report_field<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    object["fields"].as_array()?.iter().find(|f| f["path"] == path)
}

fn report_object<'a>(file: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    file["objects"].as_array()?.iter().find(|o| o["kind"] == kind && o["name"] == name)
}

/// A Kustomization's `spec.ignore` (kustomize-controller 1.9) on the real controller: its CRD
/// keeps the rules as written; a hand scale under a pointer whose target (a kind regex and a
/// label selector) picks the Deployment is left alone by Flux's forced reconcile and shown as
/// ignored by us, naming the Kustomization and the rule, never counted; a hand edit under a rule
/// whose target picks another object is drift to both: we report it, Flux takes it back.
#[ignore = "needs the local control plane"]
#[test]
fn flux_kustomization_ignore_rules_are_honoured_by_flux_and_by_us() {
    let c = needs_cluster!("flux_kustomization_ignore_rules_are_honoured_by_flux_and_by_us");
    let ns = unique_ns("flux-ignore");
    c.create_namespace(&ns);
    let files = repo_files("hello");
    let mut files: Vec<(&str, String)> = files.into_iter().filter(|(p, _)| *p != "app/deployment.yaml").collect();
    // The Deployment carries the label the rule's labelSelector picks.
    files.push((
        "app/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: flux-web\n  labels: {tier: web}\nspec:\n  \
         replicas: 1\n  selector:\n    matchLabels: {app: flux-web}\n  template:\n    metadata:\n      labels: \
         {app: flux-web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27.3\n"
            .to_string(),
    ));
    let files: Vec<(&str, &str)> = files.iter().map(|(p, s)| (*p, s.as_str())).collect();
    let url = git_repo(&ns, &files);
    apply_git_kustomization(&c, &ns, "app", &url, "./app");
    let rules = serde_json::json!({"spec": {"ignore": [
        {"paths": ["/spec/replicas"], "target": {"group": "apps", "kind": "Deploy.*", "labelSelector": "tier=web"}},
        {"paths": ["/data/greeting"], "target": {"kind": "ConfigMap", "name": "other"}}
    ]}});
    c.kubectl(&["-n", &ns, "patch", KUSTOMIZATIONS, "app", "--type", "merge", "-p", &rules.to_string()]).ok();
    let ks = wait_kustomization_ready(&c, &ns, "app");
    // The real CRD (v1.9.6) keeps the rules: a field it did not know would have been pruned.
    assert_eq!(ks["spec"]["ignore"], rules["spec"]["ignore"], "{ks:#}");
    let clean = c.drift(&["kustomization", "app", "-n", &ns, "-o", "json"]);
    assert_eq!(clean.code(), 0, "{}\n{}", clean.stdout(), clean.stderr());

    // By hand: a scale (under the Deployment's rule) and an edit (under a rule for another object).
    c.kubectl(&["-n", &ns, "scale", "deployment", "flux-web", "--replicas", "3"]).ok();
    let edit = r#"{"data":{"greeting":"edited"}}"#;
    c.kubectl(&["-n", &ns, "patch", "configmap", "flux-config", "--type", "merge", "-p", edit]).ok();
    let by = format!("ignored by Kustomization {ns}/app (spec.ignore /spec/replicas)");
    let run = c.drift(&["kustomization", "app", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "the greeting is drift: {}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    let web = report_object(file, "Deployment", "flux-web").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(web["state"], "ignored", "{web:#}");
    let replicas = report_field(web, "spec.replicas").unwrap_or_else(|| panic!("{web:#}"));
    assert_eq!((replicas["reason"].as_str(), replicas["live"].as_i64()), (Some(by.as_str()), Some(3)), "{web:#}");
    let conf = report_object(file, "ConfigMap", "flux-config").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(conf["state"], "changed", "{conf:#}");
    let greeting = report_field(conf, "data.greeting").unwrap_or_else(|| panic!("{conf:#}"));
    assert!(greeting["reason"].is_null(), "another object's rule does not cover it: {greeting:#}");
    let text = c.drift(&["kustomization", "app", "-n", &ns]).stdout();
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("= spec.replicas") && l.contains(&by)),
        "the ignored field is shown with its rule: {text}"
    );

    // Flux agrees: its forced reconcile takes the greeting back and leaves the scale.
    force_reconcile(&c, &ns, "app");
    let cm = get_json(&c, "configmap", &ns, "flux-config").unwrap();
    assert_eq!(cm["data"]["greeting"], "hello", "Flux did not take the edit back: {cm:#}");
    let deploy = get_json(&c, "deployment", &ns, "flux-web").unwrap();
    assert_eq!(deploy["spec"]["replicas"], 3, "Flux reverted an ignored field: {deploy:#}");
    let run = c.drift(&["kustomization", "app", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "only an ignored field is left: {}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    assert!(report_object(file, "ConfigMap", "flux-config").is_none(), "{file:#}");
    if let Some(web) = report_object(file, "Deployment", "flux-web") {
        assert_eq!(web["state"], "ignored", "{web:#}");
    }

    // Without the rules, the same scale is drift (the rules, not luck, hide it); suspended in the
    // same patch, so that Flux does not take it back before we look.
    let off = r#"{"spec":{"suspend":true,"ignore":null}}"#;
    c.kubectl(&["-n", &ns, "patch", KUSTOMIZATIONS, "app", "--type", "merge", "-p", off]).ok();
    c.kubectl(&["-n", &ns, "scale", "deployment", "flux-web", "--replicas", "4"]).ok();
    let run = c.drift(&["kustomization", "app", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    c.kubectl(&["-n", &ns, "delete", KUSTOMIZATIONS, "app", "--timeout=60s"]).ok();
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
