//! `upgrade RELEASE CHART`: the prediction checked against what the real `helm upgrade` then
//! does, with Helm 3 (three-way merge) and Helm 4 (server-side apply), on the fixture charts
//! `upgrade-v1` (installed), `upgrade-v2` (a changed value default, an object removed, one added)
//! and `upgrade-v3` (an immutable selector change). docs/upgrade.md writes down what each did.

use serde_json::Value;

use crate::adopt::helm_bin;
use crate::common::{Helm, fixture, unique_ns};

const CANARY: &str = "upgrade-canary-pw-do-not-print";

/// Each change as `CLASS KIND NAME PATH` (the path empty for a whole object).
fn classes(report: &Value) -> Vec<String> {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {} {} {}",
                c["class"].as_str().unwrap(),
                c["object"]["kind"].as_str().unwrap(),
                c["object"]["name"].as_str().unwrap(),
                c["path"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

fn change<'r>(report: &'r Value, path: &str) -> &'r Value {
    report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["path"] == path)
        .unwrap_or_else(|| panic!("no change at {path}: {report:#}"))
}

const IMAGE: &str = "spec.template.spec.containers[name=web].image";
const LOG_LEVEL: &str = "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value";
const FEATURE_X: &str = "spec.template.spec.containers[name=web].env[name=FEATURE_X]";
const TEAM: &str = "metadata.labels.team";

fn upgrade_predictions(helm: Helm) {
    let c = crate::needs_cluster!("upgrade");
    let ns = unique_ns("upgrade");
    c.create_namespace(&ns);
    let chart = |v: u8| fixture(&format!("charts/upgrade-v{v}")).display().to_string();
    c.helm(helm, &["install", "web", &chart(1), "-n", &ns]).ok();
    let bin = helm_bin(&c, helm);
    let env = [("HELM_BIN", bin.as_str())];
    let predict = |v: u8, extra: &[&str]| {
        let chart = chart(v);
        let mut args = vec!["upgrade", "web", chart.as_str(), "-n", ns.as_str()];
        args.extend_from_slice(extra);
        c.drift_with_env(&args, &env)
    };

    // Nothing changes yet: the same chart again, exit 0.
    let same = predict(1, &[]);
    assert_eq!(same.code(), 0, "{}\n{}", same.stdout(), same.stderr());
    assert!(same.stdout().contains("nothing changes"), "{}", same.stdout());

    // Hand edits: the image (a field the new render sets), a label and an env var (additions it
    // does not touch); and a Deployment of a person's that reads the ConfigMap v2 removes.
    let k = |args: &[&str]| {
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        c.kubectl(&v).ok();
    };
    k(&["set", "image", "deploy/web-web", "web=registry.example/upgrade/web:hotfix"]);
    k(&["label", "deploy", "web-web", "team=payments"]);
    k(&["set", "env", "deploy/web-web", "FEATURE_X=on"]);
    k(&["create", "deployment", "reports", "--image=registry.example/reports:1"]);
    k(&[
        "patch",
        "deploy",
        "reports",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/spec/template/spec/containers/0/envFrom","value":[{"configMapRef":{"name":"web-legacy"}}]}]"#,
    ]);

    let run = predict(2, &["-o", "json"]);
    assert_eq!(run.code(), 1, "changes: exit 1\n{}\n{}", run.stdout(), run.stderr());
    assert!(!run.stdout().contains(CANARY) && !run.stderr().contains(CANARY), "{}", run.stdout());
    let report: Value = serde_json::from_str(&run.stdout()).unwrap();
    let ssa = helm == Helm::V4;
    assert_eq!(report["applyMethod"], if ssa { "server-side-apply" } else { "three-way-merge" }, "{report:#}");
    let image_class = if ssa { "blocking" } else { "overwritten" };
    let mut want = vec![
        format!("{image_class} Deployment web-web {IMAGE}"),
        format!("chartChange Deployment web-web {LOG_LEVEL}"),
        "create ConfigMap web-settings ".to_string(),
        "delete ConfigMap web-legacy ".to_string(),
        format!("kept Deployment web-web {TEAM}"),
        format!("kept Deployment web-web {FEATURE_X}"),
    ];
    let mut got = classes(&report);
    want.sort();
    got.sort();
    assert_eq!(got, want, "{report:#}");
    let image = change(&report, IMAGE);
    assert_eq!(image["manager"], "kubectl-set", "{report:#}");
    assert_eq!(image["live"], "registry.example/upgrade/web:hotfix");
    assert_eq!(image["new"], "registry.example/upgrade/web:1.0");
    assert_eq!(change(&report, LOG_LEVEL)["values"], serde_json::json!(["logLevel"]), "{report:#}");
    assert_eq!(change(&report, TEAM)["manager"], "kubectl-label");
    let legacy = report["changes"].as_array().unwrap().iter().find(|c| c["class"] == "delete").unwrap();
    let refs = legacy["referencedBy"].as_array().map(|a| format!("{a:?}")).unwrap_or_default();
    assert!(refs.contains("reports"), "the Deployment reading web-legacy is named: {legacy:#}");

    // The text: blocking first (Helm 4), the sections named.
    let text = predict(2, &[]).stdout();
    assert!(text.contains("hand edits the upgrade keeps (2)"), "{text}");
    if ssa {
        assert!(text.find("will block the upgrade").unwrap() < text.find("chart or values changes").unwrap(), "{text}");
    }
    // --fail-on: Helm 3 overwrites (nothing blocks), Helm 4 would fail.
    assert_eq!(predict(2, &["--fail-on", "blocking"]).code(), if ssa { 1 } else { 0 });
    assert_eq!(predict(2, &["--fail-on", "overwrite"]).code(), 1);

    if ssa {
        let error = image["error"].as_str().unwrap().to_string();
        assert!(error.contains(r#"conflict with "kubectl-set""#), "{error}");
        // With --force-conflicts the edit is overwritten instead.
        let forced: Value = serde_json::from_str(&predict(2, &["-o", "json", "--force-conflicts"]).stdout()).unwrap();
        assert_eq!(change(&forced, IMAGE)["class"], "overwritten", "{forced:#}");
        assert!(!classes(&forced).iter().any(|c| c.starts_with("blocking")), "{forced:#}");
        // The real upgrade fails as predicted.
        let failed = c.helm(helm, &["upgrade", "web", &chart(2), "-n", &ns]);
        assert_ne!(failed.code(), 0, "helm upgrade was predicted to fail on the conflict");
        eprintln!("helm 4 upgrade without --force-conflicts: {}", failed.stderr().trim());
        let apply_error = error.split(": conflict").next().unwrap();
        assert!(failed.stderr().contains(apply_error), "{}\nwanted: {error}", failed.stderr());
        assert!(failed.stderr().contains(r#"conflict with "kubectl-set""#), "{}", failed.stderr());
        assert!(failed.stderr().contains(r#".spec.template.spec.containers[name="web"].image"#), "{}", failed.stderr());
        c.helm(helm, &["upgrade", "web", &chart(2), "-n", &ns, "--force-conflicts"]).ok();
    } else {
        c.helm(helm, &["upgrade", "web", &chart(2), "-n", &ns]).ok();
    }

    // What helm upgrade did: the overwritten edit is gone, the kept ones stay, the value
    // changed, one ConfigMap deleted, one created.
    let live: Value =
        serde_json::from_str(&c.kubectl(&["-n", &ns, "get", "deploy", "web-web", "-o", "json"]).ok()).unwrap();
    let container = &live["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.example/upgrade/web:1.0", "the overwritten edit is gone");
    assert_eq!(live["metadata"]["labels"]["team"], "payments", "the kept label stays");
    let env: Vec<(String, String)> = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["value"].as_str()?.to_string())))
        .collect();
    assert!(env.contains(&("FEATURE_X".into(), "on".into())), "the kept env var stays: {env:?}");
    assert!(env.contains(&("LOG_LEVEL".into(), "warn".into())), "{env:?}");
    assert_ne!(c.kubectl(&["-n", &ns, "get", "configmap", "web-legacy"]).code(), 0, "web-legacy deleted");
    c.kubectl(&["-n", &ns, "get", "configmap", "web-settings"]).ok();

    // Version 3 changes the Deployment's selector: predicted to block, and helm upgrade fails.
    let run = predict(3, &["-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report: Value = serde_json::from_str(&run.stdout()).unwrap();
    let selector = change(&report, "spec.selector");
    assert_eq!(selector["class"], "blocking", "{report:#}");
    let error = selector["error"].as_str().unwrap();
    assert_eq!(error, r#"Deployment.apps "web-web" is invalid: spec.selector: Invalid value: ...: field is immutable"#);
    assert_eq!(predict(3, &["--fail-on", "blocking"]).code(), 1);
    let failed = c.helm(helm, &["upgrade", "web", &chart(3), "-n", &ns]);
    assert_ne!(failed.code(), 0, "helm upgrade was predicted to fail on the selector");
    eprintln!("helm {helm:?} upgrade to v3: {}", failed.stderr().trim());
    let (head, tail) = error.split_once(" Invalid value: ...").unwrap();
    assert!(failed.stderr().contains(head) && failed.stderr().contains(tail), "{}\nwanted: {error}", failed.stderr());

    // Nothing was written by the predictions: the release has the revisions helm made.
    let history = c.helm(helm, &["history", "web", "-n", &ns, "-o", "json"]).ok();
    let revisions = serde_json::from_str::<Value>(&history).unwrap().as_array().unwrap().len();
    assert_eq!(revisions, if ssa { 4 } else { 3 }, "{history}");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[test]
#[ignore = "needs the local control plane"]
fn upgrade_predictions_match_helm3() {
    upgrade_predictions(Helm::V3);
}

#[test]
#[ignore = "needs the local control plane"]
fn upgrade_predictions_match_helm4() {
    upgrade_predictions(Helm::V4);
}
