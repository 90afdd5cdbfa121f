//! `adopt RELEASE`: hand edits folded back into a values overlay, proven by a real
//! `helm upgrade --reuse-values -f overlay.yaml` with Helm 3 and Helm 4 (docs/adopt.md).

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};

const CANARY: &[&str] = &["adopt-canary-pw-do-not-print", "adopt-changed-pw-do-not-print"];

fn assert_no_secret(text: &str, what: &str) {
    use base64::Engine;
    for s in CANARY {
        let b64 = base64::engine::general_purpose::STANDARD.encode(s);
        assert!(!text.contains(s) && !text.contains(&b64), "{what} holds a Secret value ({s}):\n{text}");
    }
}

/// The Helm binary of `helm`, for `HELM_BIN`.
pub(crate) fn helm_bin(c: &Cluster, helm: Helm) -> String {
    match helm {
        Helm::V3 => c.helm3.display().to_string(),
        Helm::V4 => c.helm4.display().to_string(),
    }
}

/// The release's drifted fields, as `KIND NAME PATH` lines (ignored ones left out).
fn drifted(c: &Cluster, ns: &str) -> Vec<String> {
    let run = c.drift(&["release", "web", "-n", ns, "-o", "json"]);
    let report = run.report();
    let mut out = Vec::new();
    for o in report["releases"][0]["objects"].as_array().unwrap() {
        for f in o["fields"].as_array().unwrap().iter().filter(|f| f["reason"].is_null()) {
            out.push(format!(
                "{} {} {}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            ));
        }
    }
    out.sort();
    out
}

fn adopt_keeps_hand_edits(helm: Helm) {
    let c = crate::needs_cluster!("adopt");
    let ns = unique_ns("adopt");
    c.create_namespace(&ns);
    let chart = fixture("charts/adopt");
    let chart = chart.to_str().unwrap();
    c.helm(helm, &["install", "web", chart, "-n", &ns]).ok();
    let bin = helm_bin(&c, helm);
    let env = [("HELM_BIN", bin.as_str())];

    // No drift: nothing to adopt, exit 0.
    let clean = c.drift_with_env(&["adopt", "web", "-n", &ns], &env);
    assert_eq!(clean.code(), 0, "{}\n{}", clean.stdout(), clean.stderr());
    assert!(clean.stdout().ends_with("{}\n"), "{}", clean.stdout());

    // Three edits values control (replicas, the image tag, an env value), one addition into the
    // extraEnv list, one field no value renders (imagePullPolicy), one Secret value.
    let k = |args: &[&str]| {
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        c.kubectl(&v).ok();
    };
    k(&["scale", "deploy/web-web", "--replicas=3"]);
    k(&["set", "image", "deploy/web-web", "web=registry.example/adopt/web:1.28-hotfix"]);
    k(&["set", "env", "deploy/web-web", "LOG_LEVEL=debug", "FEATURE_X=on"]);
    k(&[
        "patch",
        "deploy",
        "web-web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"Always"}]"#,
    ]);
    k(&[
        "patch",
        "secret",
        "web-web",
        "--type",
        "merge",
        "-p",
        r#"{"stringData":{"password":"adopt-changed-pw-do-not-print"}}"#,
    ]);

    let run = c.drift_with_env(&["adopt", "web", "-n", &ns, "-o", "json"], &env);
    assert_no_secret(&run.stdout(), "adopt -o json");
    assert_no_secret(&run.stderr(), "adopt's stderr");
    assert_eq!(run.code(), 1, "a field is left: exit 1\n{}\n{}", run.stdout(), run.stderr());
    let report: Value = serde_json::from_str(&run.stdout()).unwrap();
    let adopted = |key: &str| -> Value {
        report["adopted"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["valueKey"] == key)
            .unwrap_or_else(|| panic!("{key} not adopted: {report:#}"))
            .clone()
    };
    assert_eq!(adopted("replicaCount")["new"], 3);
    assert_eq!(adopted("replicaCount")["path"], "spec.replicas");
    assert_eq!(adopted("image.tag")["new"], "1.28-hotfix");
    assert_eq!(adopted("image.tag")["old"], "1.27");
    assert_eq!(adopted("logLevel")["new"], "debug");
    assert_eq!(adopted("extraEnv")["new"], serde_json::json!({"name": "FEATURE_X", "value": "on"}));
    assert!(report["adopted"].as_array().unwrap().iter().all(|a| a["proven"] == true), "{report:#}");
    let left = report["notAdoptable"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{report:#}");
    assert_eq!(left[0]["path"], "spec.template.spec.containers[name=web].imagePullPolicy");
    assert!(left[0]["reason"].as_str().unwrap().contains("hard-coded"), "{report:#}");
    assert!(left[0]["patch"].as_str().unwrap().contains("/spec/template/spec/containers/0/imagePullPolicy"));
    assert_eq!(report["leftOut"], serde_json::json!(["db.password"]));
    assert_eq!(report["overlay"].get("db"), None, "{report:#}");

    // -o set: the same overlay as flags.
    let set = c.drift_with_env(&["adopt", "web", "-n", &ns, "-o", "set"], &env);
    assert_no_secret(&set.stdout(), "adopt -o set");
    assert!(
        set.stdout().contains("--set replicaCount=3") && set.stdout().contains("--set-string image.tag=1.28-hotfix"),
        "{}",
        set.stdout()
    );

    // With --show-secrets the overlay holds the Secret's new value too.
    let shown = c.drift_with_env(&["adopt", "web", "-n", &ns, "--show-secrets", "-o", "json"], &env);
    let report: Value = serde_json::from_str(&shown.stdout()).unwrap();
    assert_eq!(report["overlay"]["db"]["password"], "adopt-changed-pw-do-not-print", "{report:#}");
    assert_eq!(report["leftOut"], serde_json::json!([]), "{report:#}");

    // The overlay, given to helm upgrade --reuse-values: the adopted edits stay live as they
    // were and are no longer drift. What was not adopted Helm sets back to the chart's (Helm 3's
    // three-way merge, and Helm 4's server-side apply once told to --force-conflicts; without it
    // Helm 4 refuses, as the overlay's header says): no drift is left, and only those fields moved.
    let values = c.drift_with_env(&["adopt", "web", "-n", &ns], &env);
    assert_eq!(values.code(), 1);
    assert_no_secret(&values.stdout(), "adopt's overlay");
    let overlay = c.scratch.join("overlay.yaml");
    std::fs::write(&overlay, values.stdout()).unwrap();
    let before = c.kubectl(&["-n", &ns, "get", "deploy", "web-web", "-o", "json"]).ok();
    let mut upgrade = vec!["upgrade", "web", chart, "-n", &ns, "--reuse-values", "-f", overlay.to_str().unwrap()];
    if helm == Helm::V4 {
        assert!(values.stdout().contains("--force-conflicts"), "{}", values.stdout());
        upgrade.push("--force-conflicts");
    }
    c.helm(helm, &upgrade).ok();
    assert_eq!(drifted(&c, &ns), Vec::<String>::new());
    let after = c.kubectl(&["-n", &ns, "get", "deploy", "web-web", "-o", "json"]).ok();
    let spec = |t: &str| -> Value {
        let mut v: Value = serde_json::from_str(t).unwrap();
        let container = &mut v["spec"]["template"]["spec"]["containers"][0];
        container["imagePullPolicy"] = Value::Null;
        let mut env = container["env"].as_array().cloned().unwrap_or_default();
        env.sort_by_key(|e| e["name"].as_str().unwrap_or_default().to_string());
        let image = container["image"].clone();
        serde_json::json!([v["spec"]["replicas"], image, env])
    };
    assert_eq!(spec(&after), spec(&before), "the upgrade changed an adopted field live");
    let after: Value = serde_json::from_str(&after).unwrap();
    assert_eq!(after["spec"]["replicas"], 3);
    assert_eq!(after["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");

    // Without a helm binary adopt says so (exit 2).
    let none = c.drift_with_env(&["adopt", "web", "-n", &ns], &[("HELM_BIN", "/nonexistent/helm")]);
    assert_eq!(none.code(), 2);
    assert!(none.stderr().contains("helm") && none.stderr().contains("HELM_BIN"), "{}", none.stderr());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[test]
#[ignore = "needs the local control plane"]
fn adopt_keeps_hand_edits_helm3() {
    adopt_keeps_hand_edits(Helm::V3);
}

#[test]
#[ignore = "needs the local control plane"]
fn adopt_keeps_hand_edits_helm4() {
    adopt_keeps_hand_edits(Helm::V4);
}

/// `adopt -f`: a commented manifest and a multi-document file get the live values of their
/// drifted fields, with every other line byte-identical; `manifests` is clean after `--write`.
#[test]
#[ignore = "needs the local control plane"]
fn adopt_writes_live_values_into_manifest_files() {
    let c = crate::needs_cluster!("adopt-files");
    let ns = unique_ns("adopt-files");
    c.create_namespace(&ns);
    let dir = c.scratch.join("k8s");
    std::fs::create_dir_all(&dir).unwrap();
    let files = ["web.yaml", "stack.yaml"];
    for f in files {
        std::fs::copy(fixture(&format!("manifests/adopt/{f}")), dir.join(f)).unwrap();
    }
    let d = dir.to_str().unwrap();
    c.kubectl(&["apply", "-n", &ns, "-f", d]).ok();
    let k = |args: &[&str]| {
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        c.kubectl(&v).ok();
    };
    k(&["scale", "deploy/adopt-web", "--replicas=3"]);
    k(&["set", "image", "deploy/adopt-web", "web=registry.example/adopt/web:1.28-hotfix"]);
    k(&["set", "env", "deploy/adopt-web", "LOG_LEVEL=debug"]);
    k(&["patch", "configmap", "adopt-config", "--type", "merge", "-p", r#"{"data":{"mode":"safe","workers":"8"}}"#]);
    k(&["set", "image", "deploy/adopt-worker", "worker=registry.example/adopt/worker:2.1"]);
    let drift = c.drift(&["manifests", "-n", &ns, d]);
    assert_eq!(drift.code(), 1, "{}", drift.stdout());

    // The diff, without writing.
    let diff = c.drift(&["adopt", "-n", &ns, "-f", d]);
    assert_eq!(diff.code(), 0, "{}\n{}", diff.stdout(), diff.stderr());
    let text = diff.stdout();
    assert!(
        text.contains(
            "-  replicas: 1 # keep in sync with the HPA floor\n+  replicas: 3 # keep in sync with the HPA floor\n"
        ),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("web.yaml")).unwrap(),
        std::fs::read_to_string(fixture("manifests/adopt/web.yaml")).unwrap()
    );

    let write = c.drift(&["adopt", "-n", &ns, "-f", d, "--write"]);
    assert_eq!(write.code(), 0, "{}\n{}", write.stdout(), write.stderr());
    let clean = c.drift(&["manifests", "-n", &ns, d]);
    assert_eq!(clean.code(), 0, "manifests after --write:\n{}\n{}", clean.stdout(), clean.stderr());

    // Only the drifted lines changed, each keeping its comment and quoting.
    let changed = |f: &str| -> Vec<(String, String)> {
        let before = std::fs::read_to_string(fixture(&format!("manifests/adopt/{f}"))).unwrap();
        let after = std::fs::read_to_string(dir.join(f)).unwrap();
        assert_eq!(before.lines().count(), after.lines().count(), "{f}:\n{after}");
        before.lines().zip(after.lines()).filter(|(a, b)| a != b).map(|(a, b)| (a.to_string(), b.to_string())).collect()
    };
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(
        changed("web.yaml"),
        pairs(&[
            ("  replicas: 1 # keep in sync with the HPA floor", "  replicas: 3 # keep in sync with the HPA floor"),
            (
                "        image: \"registry.example/adopt/web:1.27\"  # pinned",
                "        image: \"registry.example/adopt/web:1.28-hotfix\"  # pinned"
            ),
            ("            value: 'info'", "            value: 'debug'"),
        ])
    );
    assert_eq!(
        changed("stack.yaml"),
        pairs(&[
            ("  mode: fast   # or: safe", "  mode: safe   # or: safe"),
            ("  workers: \"4\"", "  workers: \"8\""),
            (
                "          image: registry.example/adopt/worker:2.0",
                "          image: registry.example/adopt/worker:2.1"
            ),
        ])
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// `adopt -f OVERLAY`: a kustomize overlay's field goes into the overlay's patch that sets it,
/// a field no overlay touches into the base; `manifests -k` is clean after `--write`.
#[test]
#[ignore = "needs the local control plane"]
fn adopt_writes_into_the_kustomize_patch_or_the_base() {
    let c = crate::needs_cluster!("adopt-kustomize");
    let ns = unique_ns("adopt-kust");
    c.create_namespace(&ns);
    let root = c.scratch.join("kust");
    for f in ["base/kustomization.yaml", "base/deployment.yaml", "overlay/kustomization.yaml", "overlay/replicas.yaml"]
    {
        let to = root.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixture(&format!("manifests/adopt-kustomize/{f}")), to).unwrap();
    }
    let overlay = root.join("overlay");
    let o = overlay.to_str().unwrap();
    c.kubectl(&["apply", "-n", &ns, "-k", o]).ok();
    c.kubectl(&["-n", &ns, "scale", "deploy/api", "--replicas=4"]).ok();
    c.kubectl(&["-n", &ns, "set", "image", "deploy/api", "api=registry.example/adopt/api:3.1"]).ok();
    let write = c.drift(&["adopt", "-n", &ns, "-f", o, "--write"]);
    assert_eq!(write.code(), 0, "{}\n{}", write.stdout(), write.stderr());
    let clean = c.drift(&["manifests", "-n", &ns, "-k", o]);
    assert_eq!(clean.code(), 0, "manifests after --write:\n{}\n{}", clean.stdout(), clean.stderr());
    let changed = |f: &str| -> Vec<String> {
        let before = std::fs::read_to_string(fixture(&format!("manifests/adopt-kustomize/{f}"))).unwrap();
        let after = std::fs::read_to_string(root.join(f)).unwrap();
        before.lines().zip(after.lines()).filter(|(a, b)| a != b).map(|(_, b)| b.to_string()).collect()
    };
    assert_eq!(changed("overlay/replicas.yaml"), vec!["  replicas: 4 # prod floor".to_string()]);
    assert_eq!(
        changed("base/deployment.yaml"),
        vec!["          image: registry.example/adopt/api:3.1   # the base's image".to_string()]
    );
    assert!(changed("overlay/kustomization.yaml").is_empty() && changed("base/kustomization.yaml").is_empty());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// A value that renders a field edited live and another one nobody edited (`web.logLevel`: an env
/// var and a ConfigMap key): adopt refuses, and names the ConfigMap's key as the reason.
#[test]
#[ignore = "needs the local control plane"]
fn adopt_names_what_else_a_value_renders() {
    let c = crate::needs_cluster!("adopt-shared");
    let ns = unique_ns("adopt-shared");
    c.create_namespace(&ns);
    let chart = fixture("charts/adopt-shared");
    c.helm(Helm::V4, &["install", "shop", chart.to_str().unwrap(), "-n", &ns]).ok();
    let bin = helm_bin(&c, Helm::V4);
    let env = [("HELM_BIN", bin.as_str())];
    c.kubectl(&["-n", &ns, "set", "env", "deploy/shop", "LOG_LEVEL=debug"]).ok();

    let run = c.drift_with_env(&["adopt", "shop", "-n", &ns, "-o", "json"], &env);
    assert_eq!(run.code(), 1, "nothing adopted, a field left: exit 1\n{}\n{}", run.stdout(), run.stderr());
    let report: Value = serde_json::from_str(&run.stdout()).unwrap();
    assert_eq!(report["adopted"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["overlay"], serde_json::json!({}), "{report:#}");
    let left = report["notAdoptable"].as_array().unwrap();
    assert_eq!(left.len(), 1, "{report:#}");
    assert_eq!(left[0]["path"], "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value");
    assert_eq!(
        left[0]["alsoRenders"],
        serde_json::json!([{"value": "web.logLevel", "kind": "ConfigMap", "namespace": ns,
                            "name": "shop-config", "path": "data.level"}]),
        "{report:#}"
    );

    // The text: the "not proven" wording, then the reason.
    let text = c.drift_with_env(&["adopt", "shop", "-n", &ns], &env);
    assert_eq!(text.code(), 1);
    assert!(
        text.stdout().contains(&format!(
            "did not reproduce live (not proven): web.logLevel also renders ConfigMap {ns}/shop-config data.level, \
             which was not edited"
        )),
        "{}",
        text.stdout()
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
