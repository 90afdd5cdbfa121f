//! The dashboard's Helm chart (`charts/kubectl-drift`) against `deploy/`, which stays the one
//! source of the objects: the chart rendered with each `charts/kubectl-drift/ci/*-values.yaml`
//! equals `kubectl kustomize` of the deploy/dashboard variant it names, object by object (parsed,
//! normalised), and its monitoring and policy objects equal deploy/monitoring's and deploy/policy's.
//! The differences allowed are the documented ones (README, "Install the dashboard with Helm"):
//! Helm's labels (`helm.sh/chart`, `app.kubernetes.io/{instance,version,managed-by}`, also in
//! selectors), no Namespace object and no `metadata.namespace` (Helm installs into the release
//! namespace), cluster-scoped names with the release namespace in them, the PrometheusRule's
//! name and labels, and the policy's labels.
//!
//! Then the chart lints (and its values.schema.json refuses bad values) with Helm 3 and Helm 4,
//! installs with each, kubectl-drift finds each fresh install clean and a hand edit of it as
//! drift, and `serve` started with the installed Deployment's arguments, environment and config,
//! as the chart's ServiceAccount, answers the chart's Role's user and nobody else. The test
//! cluster's Pods are KWOK's (no container runs), so the page is not reached through the
//! Service; see [`chart_install_serves_as_its_service_account`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Cluster, Helm, unique_ns};
use crate::release::wait_until;
use crate::serve::{http, offline_versions_config, serve_env};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn chart() -> String {
    repo("charts/kubectl-drift").to_str().unwrap().to_string()
}

/// The labels Helm's chart adds to every object (and, `instance`, to its selectors).
const HELM_LABELS: [&str; 4] =
    ["helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by"];

/// The namespace and release name that give the chart deploy/dashboard's names.
const NS: &str = "kubectl-drift";
const RELEASE: &str = "kubectl-drift";
/// What the chart puts before a cluster-scoped object's name: fullname and namespace.
const CLUSTER_PREFIX: &str = "kubectl-drift-dashboard-kubectl-drift";

/// The objects of a YAML stream, keyed `Kind/name`.
fn objects(yaml: &str, what: &str) -> BTreeMap<String, Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("parse {what}: {e}\n{yaml}"));
    let mut out = BTreeMap::new();
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        let key = format!("{}/{}", doc["kind"].as_str().unwrap(), doc["metadata"]["name"].as_str().unwrap());
        assert!(out.insert(key.clone(), doc).is_none(), "{what}: {key} twice");
    }
    out
}

/// Remove Helm's label keys from every map, at any depth (labels, selectors, matchLabels).
fn strip_helm_labels(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for k in HELM_LABELS {
                map.remove(k);
            }
            map.values_mut().for_each(strip_helm_labels);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_helm_labels),
        _ => {}
    }
}

/// A chart object as deploy/ writes it: Helm's labels out, the cluster prefix back to
/// deploy/'s names (`kubectl-drift-dashboard-read`, `kubectl-drift-edit-warnings`).
fn normalise_chart(mut obj: Value) -> Value {
    strip_helm_labels(&mut obj);
    let admission = obj["kind"].as_str().unwrap().starts_with("ValidatingAdmissionPolicy");
    let back = |name: &str| match name.strip_prefix(CLUSTER_PREFIX) {
        Some(rest) if admission => format!("kubectl-drift{rest}"),
        Some(rest) => format!("kubectl-drift-dashboard{rest}"),
        None => name.to_string(),
    };
    for path in ["/metadata/name", "/roleRef/name", "/spec/policyName"] {
        if let Some(Value::String(s)) = obj.pointer_mut(path) {
            *s = back(s);
        }
    }
    obj
}

/// A deploy/ object as the chart renders it: no namespace (the release's), no Namespace object.
fn normalise_deploy(mut objs: BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    objs.retain(|_, o| o["kind"] != "Namespace");
    for o in objs.values_mut() {
        o["metadata"].as_object_mut().unwrap().remove("namespace");
        strip_helm_labels(o);
    }
    objs
}

fn render(c: &Cluster, helm: Helm, values: &str) -> BTreeMap<String, Value> {
    let values = repo(&format!("charts/kubectl-drift/ci/{values}-values.yaml"));
    let yaml = c.helm(helm, &["template", RELEASE, &chart(), "-n", NS, "-f", values.to_str().unwrap()]).ok();
    let objs = objects(&yaml, &format!("the chart with {}", values.display()));
    rekey(objs.into_values().map(normalise_chart))
}

/// Objects keyed `Kind/name` again after their names changed.
fn rekey(objs: impl Iterator<Item = Value>) -> BTreeMap<String, Value> {
    objs.map(|o| (format!("{}/{}", o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()), o)).collect()
}

fn kustomize(c: &Cluster, dir: &Path) -> BTreeMap<String, Value> {
    let yaml = c.kubectl(&["kustomize", dir.to_str().unwrap()]).ok();
    normalise_deploy(objects(&yaml, &format!("kubectl kustomize {}", dir.display())))
}

/// Both sides hold the same objects, each equal; on a difference, both as YAML.
fn assert_same(chart: &BTreeMap<String, Value>, deploy: &BTreeMap<String, Value>, what: &str) {
    let keys = |m: &BTreeMap<String, Value>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(chart), keys(deploy), "{what}: the chart's objects (left) are not deploy/'s (right)");
    for (key, want) in deploy {
        let got = &chart[key];
        assert!(
            got == want,
            "{what}: {key} differs\n--- chart (normalised):\n{}\n--- deploy/ (normalised):\n{}",
            serde_saphyr::to_string(got).unwrap(),
            serde_saphyr::to_string(want).unwrap()
        );
    }
}

/// A kustomization in the test's scratch directory of deploy/dashboard's `resource` with the
/// `component` (kustomize wants paths relative to it).
fn composed(c: &Cluster, resource: &str, component: &str) -> PathBuf {
    let dir = c.scratch.join(format!("kustomize-{resource}-{component}"));
    std::fs::create_dir_all(&dir).unwrap();
    let up = "../".repeat(dir.components().count() - 1);
    let rel = |d: &str| format!("{up}{}", repo("deploy/dashboard").join(d).strip_prefix("/").unwrap().display());
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {}\ncomponents:\n  - {}\n",
            rel(resource),
            rel(component)
        ),
    )
    .unwrap();
    dir
}

#[ignore = "needs the local control plane"]
#[test]
fn chart_lints_and_renders_what_deploy_holds() {
    let c = crate::needs_cluster!("chart_lints_and_renders_what_deploy_holds");
    // The files the chart reads as they are (Prometheus templates, the printed policy) are
    // deploy/'s, byte for byte.
    for (copy, source) in [
        ("charts/kubectl-drift/files/policy.yaml", "deploy/policy/policy.yaml"),
        ("charts/kubectl-drift/files/prometheusrule.yaml", "deploy/monitoring/prometheusrule.yaml"),
    ] {
        assert!(
            std::fs::read(repo(copy)).unwrap() == std::fs::read(repo(source)).unwrap(),
            "{copy} is not {source}: cp {source} {copy}"
        );
    }
    for helm in [Helm::V3, Helm::V4] {
        c.helm(helm, &["lint", "--strict", &chart()]).ok();
        for values in ["dashboard", "emptydir", "auth", "auth-live", "extras"] {
            let f = repo(&format!("charts/kubectl-drift/ci/{values}-values.yaml"));
            c.helm(helm, &["lint", "--strict", &chart(), "-f", f.to_str().unwrap()]).ok();
        }
        // values.schema.json: a wrong type, a bad duration, an unknown key are refused, by lint
        // and by install.
        let bad = c.helm(
            helm,
            &[
                "lint",
                &chart(),
                "--set",
                "persistence.enabled=maybe",
                "--set",
                "serve.interval=often",
                "--set",
                "auth.enable=true",
            ],
        );
        assert_ne!(bad.code(), 0, "{helm:?}: lint took bad values\n{}", bad.stdout());
        let said = format!("{}{}", bad.stdout(), bad.stderr());
        for want in ["/persistence/enabled", "/serve/interval", "enable"] {
            assert!(said.contains(want), "{helm:?}: lint does not name {want}:\n{said}");
        }
        let bad = c.helm(helm, &["install", "bad", &chart(), "-n", "default", "--dry-run", "--set", "auth.port=0"]);
        assert_ne!(bad.code(), 0, "{helm:?}: install took auth.port=0\n{}", bad.stdout());
        assert!(bad.stderr().contains("/auth/port"), "{helm:?}: {}", bad.stderr());
    }

    // Each deploy/dashboard variant and the values that give it.
    let dashboard = repo("deploy/dashboard");
    let dashboard_chart = chart();
    let auth_live = composed(&c, "auth", "live");
    for helm in [Helm::V3, Helm::V4] {
        for (values, dir) in [
            ("dashboard", dashboard.clone()),
            ("emptydir", dashboard.join("emptydir")),
            ("auth", dashboard.join("auth")),
            ("auth-live", auth_live.clone()),
        ] {
            assert_same(&render(&c, helm, values), &kustomize(&c, &dir), &format!("{helm:?} ci/{values}-values.yaml"));
        }
    }

    // --auth kubernetes in another namespace than serve's default (kubectl-drift): the config
    // names the release namespace, where the chart's Role is; with -n it, no config is needed.
    for (sets, want) in [
        (vec!["auth.enabled=true"], Some("serve:\n  authorization:\n    namespace: elsewhere\n")),
        (vec!["auth.enabled=true", "serve.namespace=elsewhere"], None),
        (vec!["auth.enabled=false"], None),
    ] {
        let mut args = vec!["template", "r", &*dashboard_chart, "-n", "elsewhere"];
        sets.iter().for_each(|s| args.extend(["--set", s]));
        let objs = objects(&c.helm(Helm::V4, &args).ok(), "the chart in namespace elsewhere");
        let config =
            objs.get("ConfigMap/r-kubectl-drift-dashboard").map(|m| m["data"]["config.yaml"].as_str().unwrap());
        assert_eq!(config, want, "{sets:?}");
        let env = objs["Deployment/r-kubectl-drift-dashboard"]["spec"]["template"]["spec"]["containers"][0]["env"]
            .to_string();
        assert_eq!(env.contains("DRIFT_CONFIG"), want.is_some(), "{sets:?}: {env}");
    }

    // deploy/monitoring (the dashboard's ServiceMonitor, the PrometheusRule) and deploy/policy.
    let extras = render(&c, Helm::V4, "extras");
    let monitors = objects(
        &std::fs::read_to_string(repo("deploy/monitoring/servicemonitor.yaml")).unwrap(),
        "deploy/monitoring/servicemonitor.yaml",
    );
    let monitor = &monitors["ServiceMonitor/kubectl-drift-dashboard"];
    assert_eq!(&extras["ServiceMonitor/kubectl-drift-dashboard"], monitor, "the chart's ServiceMonitor");
    let rule = objects(
        &std::fs::read_to_string(repo("deploy/monitoring/prometheusrule.yaml")).unwrap(),
        "deploy/monitoring/prometheusrule.yaml",
    );
    let rule = &rule["PrometheusRule/kubectl-drift"];
    let chart_rule = &extras["PrometheusRule/kubectl-drift-dashboard"];
    assert_eq!(chart_rule["spec"], rule["spec"], "the chart's PrometheusRule has other rules than deploy/monitoring's");
    assert!(chart_rule["spec"].to_string().contains("{{ $labels.release"), "Prometheus templates rendered by Helm");
    let policy = kustomize(&c, &repo("deploy/policy"));
    assert_eq!(policy.len(), 6);
    let mut chart_policy: BTreeMap<String, Value> =
        extras.into_iter().filter(|(k, _)| k.starts_with("ValidatingAdmissionPolicy")).collect();
    let mut policy = policy;
    for o in chart_policy.values_mut().chain(policy.values_mut()) {
        o["metadata"].as_object_mut().unwrap().remove("labels");
    }
    assert_same(&chart_policy, &policy, "the chart's policy");
}

/// The live objects of `kind/name` in `ns`, as JSON.
fn live(c: &Cluster, ns: &str, what: &str) -> Value {
    serde_json::from_str(&c.kubectl(&["-n", ns, "get", what, "-o", "json"]).ok()).unwrap()
}

/// `kubectl auth can-i VERB RESOURCE` as the ServiceAccount.
fn can_i(c: &Cluster, sa: &str, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i", "--as", sa];
    all.extend_from_slice(args);
    let run = c.kubectl(&all);
    match run.stdout().trim() {
        "yes" => true,
        "no" => false,
        other => panic!("kubectl auth can-i {args:?}: {other} {}", run.stderr()),
    }
}

/// Install and check that kubectl-drift finds the fresh install clean; returns the fullname. The
/// caller uninstalls.
fn install_clean(c: &Cluster, helm: Helm, ns: &str, release: &str, sets: &[&str]) -> String {
    let chart = chart();
    let mut args = vec!["install", release, &chart, "-n", ns];
    for s in sets {
        args.extend(["--set", s]);
    }
    c.helm(helm, &args).ok();
    let full = format!("{release}-kubectl-drift-dashboard");
    let prefix = format!("{full}-{ns}");
    live(c, ns, &format!("deployment/{full}"));
    c.kubectl(&["get", "clusterrole", &format!("{prefix}-read")]).ok();

    let run = c.drift(&["release", release, "-n", ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{helm:?}: a fresh install is not clean:\n{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    assert_eq!(report["releases"][0]["status"], "clean", "{report:#}");
    let objects = report["summary"]["objects"].as_u64().unwrap();
    assert!(objects >= 7, "{helm:?}: {objects} objects compared:\n{report:#}");
    full
}

/// Edit the install by hand (the scan interval, a write verb on the cluster-wide read role) and
/// check that kubectl-drift reports both.
fn edit_finds_drift(c: &Cluster, helm: Helm, ns: &str, release: &str, full: &str) {
    let prefix = format!("{full}-{ns}");
    // By hand: the scan interval, and a write verb on the cluster-wide read role.
    c.kubectl(&["-n", ns, "set", "env", &format!("deployment/{full}"), "DRIFT_SCAN_INTERVAL=1m"]).ok();
    c.kubectl(&[
        "patch",
        "clusterrole",
        &format!("{prefix}-read"),
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
    ])
    .ok();
    let run = c.drift(&["release", release, "-n", ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{helm:?}: the hand edits are not drift:\n{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let rel = &report["releases"][0];
    assert_eq!(rel["status"], "drifted", "{rel:#}");
    let drifted =
        |kind: &str, name: &str| {
            rel["objects"].as_array().unwrap().iter().any(|o| {
                o["kind"] == kind && o["name"] == name && o["fields"].as_array().is_some_and(|f| !f.is_empty())
            })
        };
    assert!(drifted("Deployment", full), "{helm:?}: the Deployment's edit not found:\n{rel:#}");
    assert!(drifted("ClusterRole", &format!("{prefix}-read")), "{helm:?}: the ClusterRole's edit not found:\n{rel:#}");
}

/// Uninstalls the release and deletes its namespace when dropped, also when the test fails
/// half-way (its cluster-scoped objects, one of them edited to write, must not stay).
struct Installed<'a> {
    c: &'a Cluster,
    helm: Helm,
    ns: String,
    release: &'static str,
}

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        let _ = self.c.helm(self.helm, &["uninstall", self.release, "-n", &self.ns, "--ignore-not-found"]);
        let _ = self.c.kubectl(&["delete", "namespace", &self.ns, "--wait=false", "--ignore-not-found"]);
    }
}

/// Uninstall; nothing cluster-wide of the release is left.
fn uninstall(c: &Cluster, helm: Helm, ns: &str, release: &str, full: &str) {
    c.helm(helm, &["uninstall", release, "-n", ns, "--wait"]).ok();
    let prefix = format!("{full}-{ns}");
    for name in [format!("{prefix}-read"), format!("{prefix}-auth")] {
        let left =
            c.kubectl(&["get", "clusterrole,clusterrolebinding", &name, "--ignore-not-found", "-o", "name"]).ok();
        assert!(left.trim().is_empty(), "{helm:?}: left after uninstall: {left}");
    }
    c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
}

/// Helm 3 with the defaults (a PVC, every namespace): clean when fresh, drift after a hand edit.
#[ignore = "needs the local control plane"]
#[test]
fn chart_installs_with_helm_3_and_is_clean() {
    let c = crate::needs_cluster!("chart_installs_with_helm_3_and_is_clean");
    let ns = unique_ns("chart-h3");
    c.create_namespace(&ns);
    let _cleanup = Installed { c: &c, helm: Helm::V3, ns: ns.clone(), release: "drift" };
    let full = install_clean(&c, Helm::V3, &ns, "drift", &[]);
    let deploy = live(&c, &ns, &format!("deployment/{full}"));
    let pod = &deploy["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][0]["persistentVolumeClaim"]["claimName"], format!("{full}-data"), "{pod:#}");
    assert_eq!(pod["containers"][0]["args"], serde_json::json!(["serve"]));
    live(&c, &ns, &format!("pvc/{full}-data"));
    edit_finds_drift(&c, Helm::V3, &ns, "drift", &full);
    uninstall(&c, Helm::V3, &ns, "drift", &full);
}

/// Helm 4 with auth, live, one namespace and an emptyDir: clean when fresh, drift after a hand
/// edit; its RBAC is what the dashboard needs and no more; and `serve`, started here with the
/// installed Deployment's arguments, environment and config (the --listen address aside: a
/// loopback port of this machine) and the chart's ServiceAccount's token, reads the release
/// and answers the user bound to the chart's Role, refuses others.
///
/// Then the page through the Service, as a user reaches it with `kubectl proxy` (the API server's
/// service proxy, `/api/v1/namespaces/NS/services/http:NAME:http/proxy/`), in Chromium. The test
/// cluster's nodes are KWOK's: the Pod is marked running at a made-up address (10.244.0.0/16)
/// where nothing listens. So that address is made this machine's own (added to `lo`, removed
/// after) and `serve` listens there on the Deployment's port: the API server dials it through the
/// Service's EndpointSlice exactly as it would dial the container. Through that proxy the
/// Deployment's `--auth=kubernetes` answers 401 (the API server authenticates the user itself and
/// does not pass the user's token on; docs/serve.md), so the page is seen in Chromium twice: at the
/// Pod's address with the user's token added to every request (what a gateway in front of the
/// Service does), with the Deployment's own arguments; and through `kubectl proxy` with
/// `--auth=none` at the same address (the page under the proxy's path prefix, its POSTs).
#[ignore = "needs the local control plane"]
#[test]
fn chart_install_serves_as_its_service_account() {
    let c = crate::needs_cluster!("chart_install_serves_as_its_service_account");
    let ns = unique_ns("chart-h4");
    c.create_namespace(&ns);
    // A config value (the name serve authorises against) that the chart's Role must follow.
    let sets = [
        "auth.enabled=true",
        "serve.live=true",
        &format!("serve.namespace={ns}"),
        "persistence.enabled=false",
        "config.serve.authorization.name=drift-page",
    ];
    let _cleanup = Installed { c: &c, helm: Helm::V4, ns: ns.clone(), release: "drift" };
    let full = install_clean(&c, Helm::V4, &ns, "drift", &sets);
    let sa = format!("system:serviceaccount:{ns}:{full}");

    // RBAC: reads everywhere, the two reviews, no writes.
    assert!(can_i(&c, &sa, &["list", "secrets", "--all-namespaces"]));
    assert!(can_i(&c, &sa, &["watch", "deployments.apps", "-n", "kube-system"]));
    assert!(can_i(&c, &sa, &["create", "tokenreviews.authentication.k8s.io"]));
    assert!(can_i(&c, &sa, &["create", "subjectaccessreviews.authorization.k8s.io"]));
    for write in [["create", "configmaps"], ["delete", "pods"], ["update", "deployments.apps"], ["patch", "secrets"]] {
        assert!(!can_i(&c, &sa, &[write[0], write[1], "-n", &ns]), "{sa} may {write:?}");
    }
    edit_finds_drift(&c, Helm::V4, &ns, "drift", &full);

    // The installed Deployment's container, run here.
    let deploy = live(&c, &ns, &format!("deployment/{full}"));
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> =
        container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    assert_eq!(args[..3], ["serve", "--listen=0.0.0.0:8080", "--auth=kubernetes"], "{args:?}");
    assert!(args.contains(&"--live".to_string()) && args.contains(&format!("--namespace={ns}")), "{args:?}");
    let env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap_or_default().to_string()))
        .collect();
    let data = c.scratch.join("data");
    let mut local_env: Vec<(String, String)> = Vec::new();
    for (name, value) in &env {
        match name.as_str() {
            "DRIFT_DATA_DIR" => local_env.push((name.clone(), data.to_str().unwrap().to_string())),
            "XDG_CACHE_HOME" => {} // serve_with gives it a private cache
            "DRIFT_CONFIG" => assert_eq!(value, "/etc/kubectl-drift/config.yaml"),
            _ => local_env.push((name.clone(), value.clone())),
        }
    }
    // Its config (the ConfigMap mounted at DRIFT_CONFIG), with the offline version upstreams.
    let config_map = live(&c, &ns, &format!("configmap/{full}"));
    let config = config_map["data"]["config.yaml"].as_str().unwrap();
    assert!(config.contains("name: drift-page"), "{config}");
    let role = live(&c, &ns, &format!("role/{full}-user"));
    assert_eq!(role["rules"][0]["resourceNames"], serde_json::json!(["drift-page"]), "{role:#}");
    let config_file = c.scratch.join("chart-config.yaml");
    std::fs::write(&config_file, format!("{config}\n{}", offline_versions_config())).unwrap();
    // The Pod's address, made this machine's own, on the Deployment's port.
    let port = args
        .iter()
        .find_map(|a| a.strip_prefix("--listen=0.0.0.0:"))
        .unwrap_or_else(|| panic!("no --listen=0.0.0.0:PORT in {args:?}"))
        .to_string();
    let pod_ip = pod_address(&c, &ns, &full);
    let _local = LocalAddress::add(&pod_ip);
    let listen = format!("--listen={pod_ip}:{port}");
    let mut local_args: Vec<&str> =
        args[1..].iter().map(String::as_str).filter(|a| !a.starts_with("--listen=")).collect();
    local_args.extend(["--config", config_file.to_str().unwrap(), listen.as_str()]);
    let kubeconfig = c.token_kubeconfig(&ns, &full);
    let env_refs: Vec<(&str, &str)> = local_env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let s = serve_env(&c, &local_args, &kubeconfig, &env_refs);
    s.wait_ready();

    // A user bound to the chart's Role reads; no token 401; a token without the Role 403.
    c.kubectl(&["-n", &ns, "create", "serviceaccount", "reader"]).ok();
    c.kubectl(&["-n", &ns, "create", "serviceaccount", "outsider"]).ok();
    c.kubectl(&[
        "-n",
        &ns,
        "create",
        "rolebinding",
        "drift-readers",
        &format!("--role={full}-user"),
        &format!("--serviceaccount={ns}:reader"),
    ])
    .ok();
    let token = |sa: &str| c.kubectl(&["-n", &ns, "create", "token", sa, "--duration", "10m"]).ok().trim().to_string();
    let (reader, outsider) = (format!("Bearer {}", token("reader")), format!("Bearer {}", token("outsider")));
    assert_eq!(s.get("/").status, 401);
    let r = http(&s.addr, "GET", "/", &[("Authorization", &outsider)], None);
    assert_eq!(r.status, 403, "{}", r.body);
    let r = http(&s.addr, "GET", "/", &[("Authorization", &reader)], None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<html") || r.body.contains("<!doctype"), "not the page:\n{}", r.body);
    // The scan, as the chart's ServiceAccount, found the release and its hand edits.
    wait_until("the chart's release in /api/releases", std::time::Duration::from_secs(60), || {
        let r = http(&s.addr, "GET", "/api/releases", &[("Authorization", &reader)], None);
        r.status == 200
            && r.json()["report"]["releases"]
                .as_array()
                .is_some_and(|rs| rs.iter().any(|x| x["name"] == "drift" && x["status"] == "drifted"))
    });
    assert_eq!(http(&s.health, "GET", "/readyz", &[], None).status, 200);

    // The page in Chromium at the Pod's address, as a gateway in front of the Service reaches it
    // (the gateway adds the user's token), with the installed Deployment's own arguments.
    let b = crate::browser::Browser::start(&c);
    b.extra_headers(serde_json::json!({ "Authorization": reader }));
    let gateway = format!("http://{}/", s.addr);
    b.go(&format!("{gateway}?tab=releases"));
    b.wait(
        "the chart's release, drifted, in the page behind a gateway",
        &format!(
            "const d = document.querySelector('details.release[data-release=\"{ns}/drift\"]'); \
             return !!d && d.textContent.includes('drifted')"
        ),
    );
    b.screenshot("chart-behind-gateway.png");
    for u in b.requests() {
        assert!(u.starts_with(&gateway), "the page requested something else: {u}");
    }
    drop(b);

    // Through the Service: the API server's service proxy (kubectl proxy in front) reaches the
    // Pod's port, and serve answers there itself (its own 401 text, not the API server's).
    let proxy = KubectlProxy::start(&c);
    let page = format!("/api/v1/namespaces/{ns}/services/http:{full}:http/proxy/");
    let r = http(&proxy.addr, "GET", &page, &[], None);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("no bearer token"), "not serve's own answer:\n{}", r.body);
    drop(s);

    // The page in Chromium through the same proxy path, served with --auth=none.
    let unauthenticated: Vec<&str> =
        local_args.iter().map(|a| if *a == "--auth=kubernetes" { "--auth=none" } else { *a }).collect();
    assert!(unauthenticated.contains(&"--auth=none"), "{local_args:?}");
    let s = serve_env(&c, &unauthenticated, &kubeconfig, &env_refs);
    s.wait_ready();
    let b = crate::browser::Browser::start(&c);
    let base = format!("http://{}{page}", proxy.addr);
    b.go(&format!("{base}?tab=releases"));
    b.wait(
        "the chart's release, drifted, with its drift strip, in the page through the Service",
        &format!(
            "const d = document.querySelector('details.release[data-release=\"{ns}/drift\"]'); \
             return !!d && d.textContent.includes('drifted') && !!d.querySelector('.strip .seg')"
        ),
    );
    b.screenshot("chart-through-service.png");
    // Everything the page loaded went through the proxy path (a link from the server's root would
    // leave it and reach the API server instead).
    for u in b.requests() {
        assert!(u.starts_with(&base), "the page left the proxy path: {u}");
    }
    // A POST from the page (a rescan) passes the same-origin check behind the proxy.
    let status = b.js(
        "const x = new XMLHttpRequest(); x.open('POST', 'api/rescan', false); \
         x.setRequestHeader('Content-Type', 'application/json'); x.send('{}'); return [x.status, x.responseText];",
        serde_json::json!([]),
    );
    assert_eq!(status[0], 202, "rescan through the proxy: {status}");
    drop(b);
    drop(s);
    uninstall(&c, Helm::V4, &ns, "drift", &full);
}

/// The address KWOK gave the release's dashboard Pod (waited for: KWOK marks it running).
fn pod_address(c: &Cluster, ns: &str, full: &str) -> String {
    let selector = format!("app.kubernetes.io/instance=drift,app.kubernetes.io/name={}", "kubectl-drift-dashboard");
    let mut ip = String::new();
    wait_until(&format!("an address for the Pod of {full}"), std::time::Duration::from_secs(60), || {
        let r = c.kubectl(&["-n", ns, "get", "pods", "-l", &selector, "-o", "jsonpath={.items[*].status.podIP}"]);
        ip = r.stdout().trim().to_string();
        !ip.is_empty() && !ip.contains(' ')
    });
    ip
}

/// An address added to this machine's loopback interface (`ip addr add ADDR/32 dev lo`: root, or
/// `sudo -n` as scripts/test-env installs packages), removed when dropped.
struct LocalAddress(String);

/// `ip ARGS`, through `sudo -n` when not root.
fn ip(args: &[&str]) -> std::io::Result<std::process::Output> {
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let mut cmd = if root { std::process::Command::new("ip") } else { std::process::Command::new("sudo") };
    if !root {
        cmd.args(["-n", "ip"]);
    }
    cmd.args(args).output()
}

impl LocalAddress {
    fn add(address: &str) -> LocalAddress {
        let out = ip(&["addr", "add", &format!("{address}/32"), "dev", "lo"]).expect("run `ip` (Debian's iproute2)");
        let err = String::from_utf8_lossy(&out.stderr);
        // "File exists": left by an earlier run that was killed; it is ours to use and remove.
        assert!(out.status.success() || err.contains("File exists"), "ip addr add {address}/32 dev lo: {err}");
        LocalAddress(address.to_string())
    }
}

impl Drop for LocalAddress {
    fn drop(&mut self) {
        let _ = ip(&["addr", "del", &format!("{}/32", self.0), "dev", "lo"]);
    }
}

/// `kubectl proxy` on a free loopback port, killed when dropped.
struct KubectlProxy {
    child: std::process::Child,
    addr: String,
}

impl KubectlProxy {
    fn start(c: &Cluster) -> KubectlProxy {
        use std::io::BufRead;
        let mut child = std::process::Command::new(&c.kubectl)
            .arg("--kubeconfig")
            .arg(&c.kubeconfig)
            .args(["proxy", "--address=127.0.0.1", "--port=0"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start kubectl proxy");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(addr) = line.trim().strip_prefix("Starting to serve on ") else {
            let _ = child.kill();
            panic!("kubectl proxy: {line:?}");
        };
        KubectlProxy { addr: addr.to_string(), child }
    }
}

impl Drop for KubectlProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The chart with the edit-time policy and auth passes the API server's validation (a server
/// dry run: the policies' CEL is compiled), with names unique to the release and namespace.
#[ignore = "needs the local control plane"]
#[test]
fn chart_policy_passes_server_dry_run() {
    let c = crate::needs_cluster!("chart_policy_passes_server_dry_run");
    let ns = unique_ns("chart-policy");
    c.create_namespace(&ns);
    let yaml = c
        .helm(
            Helm::V4,
            &["template", "p", &chart(), "-n", &ns, "--set", "policy.enabled=true", "--set", "auth.enabled=true"],
        )
        .ok();
    let out = c.kubectl_stdin(&["apply", "-n", &ns, "--dry-run=server", "-f", "-"], &yaml).ok();
    for want in [
        format!(
            "validatingadmissionpolicy.admissionregistration.k8s.io/p-kubectl-drift-dashboard-{ns}-edit-warnings created"
        ),
        format!(
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/p-kubectl-drift-dashboard-{ns}-edit-warnings-scale-statefulsets created"
        ),
        format!("clusterrole.rbac.authorization.k8s.io/p-kubectl-drift-dashboard-{ns}-auth created"),
        "deployment.apps/p-kubectl-drift-dashboard created".to_string(),
    ] {
        assert!(out.contains(&want), "{want} missing:\n{out}");
    }
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// scripts/package-chart (what the release workflow runs) writes the chart package and its
/// sha256, and refuses a Chart.yaml of another version than Cargo.toml's; the package, pushed as
/// an OCI chart (`helm push`, as the workflow does to ghcr.io) to the local registry, is pulled
/// and rendered by Helm 3 and Helm 4, with the image of this version.
#[ignore = "needs the local control plane"]
#[test]
fn chart_package_is_pushed_and_pulled_as_an_oci_chart() {
    let c = crate::needs_cluster!("chart_package_is_pushed_and_pulled_as_an_oci_chart");
    let version = env!("CARGO_PKG_VERSION");
    let out = c.scratch.join("dist");
    let package = |root: &Path| {
        let mut cmd = std::process::Command::new(root.join("scripts/package-chart"));
        cmd.args(["--out", out.to_str().unwrap(), "--helm", c.helm4.to_str().unwrap()]);
        c.apply_env(&mut cmd, Helm::V4);
        cmd.output().unwrap()
    };
    let done = package(&repo(""));
    assert!(done.status.success(), "scripts/package-chart: {}", String::from_utf8_lossy(&done.stderr));
    let tgz = format!("kubectl-drift-{version}.tgz");
    assert_eq!(String::from_utf8_lossy(&done.stdout).trim(), out.join(&tgz).to_str().unwrap());
    let sum = std::fs::read_to_string(out.join(format!("{tgz}.sha256"))).unwrap();
    assert!(sum.ends_with(&format!("  {tgz}\n")), "{sum}");
    let files = std::process::Command::new("tar").arg("tzf").arg(out.join(&tgz)).output().unwrap();
    let files = String::from_utf8_lossy(&files.stdout).into_owned();
    for want in [
        "kubectl-drift/values.schema.json",
        "kubectl-drift/files/policy.yaml",
        "kubectl-drift/templates/deployment.yaml",
    ] {
        assert!(files.lines().any(|l| l == want), "{want} not packaged:\n{files}");
    }
    assert!(!files.contains("/ci/"), "the test values are packaged:\n{files}");

    // A copy of the repository's chart and scripts with another chart version: refused.
    let copy = c.scratch.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for d in ["scripts", "charts", "deploy"] {
        assert!(std::process::Command::new("cp").arg("-R").arg(repo(d)).arg(&copy).status().unwrap().success());
    }
    std::fs::copy(repo("Cargo.toml"), copy.join("Cargo.toml")).unwrap();
    let chart_yaml = copy.join("charts/kubectl-drift/Chart.yaml");
    let text = std::fs::read_to_string(&chart_yaml).unwrap();
    std::fs::write(&chart_yaml, text.replace(&format!("version: {version}\n"), "version: 9.9.9\n")).unwrap();
    let refused = package(&copy);
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("version 9.9.9") && said.contains(&format!("Cargo.toml says {version}")), "{said}");

    // A release from another owner: the packaged chart defaults to the image that release pushes
    // (the workflow passes ghcr.io/<owner>/kubectl-drift), the checkout's chart stays as it is.
    let fork_out = c.scratch.join("dist-fork");
    let values_before = std::fs::read_to_string(repo("charts/kubectl-drift/values.yaml")).unwrap();
    let mut cmd = std::process::Command::new(repo("scripts/package-chart"));
    cmd.args(["--out", fork_out.to_str().unwrap(), "--helm", c.helm4.to_str().unwrap()]);
    cmd.args(["--image-repository", "ghcr.io/someone-else/kubectl-drift"]);
    c.apply_env(&mut cmd, Helm::V4);
    let done = cmd.output().unwrap();
    assert!(done.status.success(), "package-chart --image-repository: {}", String::from_utf8_lossy(&done.stderr));
    assert_eq!(std::fs::read_to_string(repo("charts/kubectl-drift/values.yaml")).unwrap(), values_before);
    let yaml = c.helm(Helm::V4, &["template", "kubectl-drift", fork_out.join(&tgz).to_str().unwrap(), "-n", NS]).ok();
    let objs = objects(&yaml, "the fork's chart");
    let image = &objs["Deployment/kubectl-drift-dashboard"]["spec"]["template"]["spec"]["containers"][0]["image"];
    assert_eq!(image, &format!("ghcr.io/someone-else/kubectl-drift:{version}"));
    // An owner in upper case (GitHub allows it, registries do not) or a tag: refused, named.
    for bad in ["ghcr.io/SomeOne/kubectl-drift", "ghcr.io/someone/kubectl-drift:1.0"] {
        let mut cmd = std::process::Command::new(repo("scripts/package-chart"));
        cmd.args(["--out", fork_out.to_str().unwrap(), "--helm", c.helm4.to_str().unwrap(), "--image-repository", bad]);
        let refused = cmd.output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{bad} accepted");
        assert!(String::from_utf8_lossy(&refused.stderr).contains(bad), "{}", String::from_utf8_lossy(&refused.stderr));
    }

    // helm push to the local registry, then pull and render with each Helm.
    let oci = crate::oci::oci();
    let repo_path = unique_ns("charts");
    let target = format!("oci://{}/{repo_path}", oci.registry);
    for helm in [Helm::V3, Helm::V4] {
        oci.helm_login(&c, helm);
    }
    c.helm(Helm::V4, &["push", out.join(&tgz).to_str().unwrap(), &target, "--plain-http"]).ok();
    for helm in [Helm::V3, Helm::V4] {
        let yaml = c
            .helm(
                helm,
                &[
                    "template",
                    "kubectl-drift",
                    &format!("{target}/kubectl-drift"),
                    "--version",
                    version,
                    "--plain-http",
                    "-n",
                    NS,
                ],
            )
            .ok();
        let objs = objects(&yaml, "the OCI chart");
        let image = &objs["Deployment/kubectl-drift-dashboard"]["spec"]["template"]["spec"]["containers"][0]["image"];
        assert_eq!(image, &format!("ghcr.io/kubectl-drift/kubectl-drift:{version}"), "{helm:?}");
    }
}
