//! Helm's lifecycle end to end, with Helm 3 and Helm 4: a failed install, a failed upgrade that
//! changed objects (then a hand edit on top of it, then the printed rollback), and an upgrade
//! interrupted mid-way (the helm process killed, leaving `pending-upgrade`). Each is checked with
//! `release`, `release --all` and `watch --once`.
//!
//! The control plane has no scheduler or kubelet, so pods never become ready: `--wait` always
//! times out, which is how a real install or upgrade fails.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};
use crate::release::{field, json, wait_until};
use crate::watch::Receiver;

/// The `status` label of revision `rev` of release `shop` in Helm's storage.
fn stored_status(c: &Cluster, ns: &str, rev: u32) -> String {
    let name = format!("secret/sh.helm.release.v1.shop.v{rev}");
    let r = c.kubectl(&["-n", ns, "get", &name, "-o", "jsonpath={.metadata.labels.status}", "--ignore-not-found"]);
    r.stdout()
}

fn web_image(c: &Cluster, ns: &str) -> String {
    deploy_image(c, ns, "shop-web")
}

fn deploy_image(c: &Cluster, ns: &str, name: &str) -> String {
    c.kubectl(&["-n", ns, "get", "deploy", name, "-o", "jsonpath={.spec.template.spec.containers[0].image}"]).ok()
}

fn chart() -> String {
    fixture("charts/shop").to_str().unwrap().to_string()
}

/// `release shop -n NS -o json`: the exit code and the release's report.
fn release_json(c: &Cluster, ns: &str) -> (i32, Value) {
    let run = c.drift(&["release", "shop", "-n", ns, "-o", "json"]);
    let report = json(&run);
    (run.code(), report["releases"][0].clone())
}

/// Every difference that is not ignored, as (kind/name, path, fromRevision).
fn differences(rel: &Value) -> Vec<(String, String, Option<u64>)> {
    let mut out = Vec::new();
    for o in rel["objects"].as_array().unwrap() {
        let title = format!("{}/{}", o["kind"].as_str().unwrap(), o["name"].as_str().unwrap());
        match o["state"].as_str().unwrap() {
            "changed" => {
                for f in o["fields"].as_array().unwrap().iter().filter(|f| f["reason"].is_null()) {
                    out.push((title.clone(), f["path"].as_str().unwrap().to_string(), f["fromRevision"].as_u64()));
                }
            }
            "missing" | "extra" => out.push((title, String::new(), o["fromRevision"].as_u64())),
            _ => {}
        }
    }
    out
}

/// `release --all -n NS -q`: the exit code and the line of release `shop`.
fn quiet_all(c: &Cluster, ns: &str) -> (i32, String) {
    let run = c.drift(&["release", "--all", "-n", ns, "-q", "--color", "never"]);
    let line = run.stdout().lines().find(|l| l.starts_with(&format!("{ns}/shop "))).map(str::to_string);
    (run.code(), line.unwrap_or_else(|| panic!("no line for shop:\n{}\n{}", run.stdout(), run.stderr())))
}

/// A webhook receiver and a state file for `watch` rounds.
fn watcher(c: &Cluster) -> (Receiver, String) {
    (Receiver::start(), c.scratch.join("state.json").to_str().unwrap().to_string())
}

/// One `watch --once` round over every release of the namespace; returns its exit code.
fn watch_round(c: &Cluster, ns: &str, rx: &Receiver, state: &str) -> i32 {
    let r = c.drift(&["watch", "--all", "-n", ns, "--once", "--state", state, "--webhook", &rx.url("/hook")]);
    assert_ne!(r.code(), 2, "watch round failed:\n{}", r.stderr());
    r.code()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

/// The printed rollback (the first command), run as printed; then the release is deployed at
/// revision 3 and clean.
fn roll_back_as_printed(c: &Cluster, helm: Helm, ns: &str, rel: &Value) {
    let rollback = rel["reconcile"][0].as_str().unwrap();
    assert!(rollback.starts_with(&format!("helm rollback shop 1 -n {ns}")), "{rel:#}");
    c.shell(helm, rollback, &[]).ok();
    let (code, rel) = release_json(c, ns);
    assert_eq!(code, 0, "after the rollback the release is clean: {rel:#}");
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("clean"), Some("deployed")));
    assert_eq!((rel["revision"].as_u64(), rel["latestRevision"].as_u64()), (Some(3), Some(3)));
}

fn failed_install(c: &Cluster, helm: Helm, ns: &str) {
    c.create_namespace(ns);
    let r = c.helm(
        helm,
        &["install", "shop", &chart(), "-n", ns, "--set", "worker.minReplicas=1", "--wait", "--timeout", "4s"],
    );
    assert_ne!(r.code(), 0, "the install must fail (pods never become ready): {}", r.stdout());
    assert_eq!(stored_status(c, ns, 1), "failed");

    let (code, rel) = release_json(c, ns);
    assert_eq!(code, 1, "a failed release is not clean: {rel:#}");
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("incomplete"), Some("failed")));
    assert_eq!((rel["revision"].as_u64(), rel["latestRevision"].as_u64()), (Some(1), Some(1)));
    assert!(rel["helmDescription"].as_str().unwrap().contains("failed"), "{rel:#}");
    assert_eq!(differences(&rel), vec![], "everything the install applied is live: no difference");
    let advice = rel["reconcile"].as_array().unwrap();
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert!(advice[0].as_str().unwrap().starts_with("# revision 1 is failed and nothing was ever deployed"));

    let text = c.drift(&["release", "shop", "-n", ns, "--color", "never"]);
    assert_eq!(text.code(), 1);
    assert!(text.stdout().contains("revision 1  chart shop-1.2.0  helm failed  INCOMPLETE"), "{}", text.stdout());
    assert!(text.stdout().contains("  helm: "), "the reason is shown: {}", text.stdout());
    // --all no longer skips it.
    let (code, line) = quiet_all(c, ns);
    assert_eq!(code, 1);
    assert_eq!(line, format!("{ns}/shop  revision 1  helm failed  INCOMPLETE"));

    let (rx, state) = watcher(c);
    let state = state.as_str();
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["status"]);
    assert_eq!(events[0]["helmStatus"], "failed");
    assert!(events[0]["notes"].to_string().contains("no revision of this release was ever deployed"), "{}", events[0]);
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    assert_eq!(rx.events().len(), 1, "alerted once");

    // Uninstalled with its history kept: nothing is deployed. --all leaves it out (as `helm
    // list`); named, it is an error like a release that does not exist.
    c.helm(helm, &["uninstall", "shop", "-n", ns, "--keep-history"]).ok();
    assert_eq!(stored_status(c, ns, 1), "uninstalled");
    let run = c.drift(&["release", "shop", "-n", ns]);
    assert_eq!(run.code(), 2, "{}", run.stdout());
    assert!(
        run.stderr().contains("it is uninstalled (revision 1 kept by helm uninstall --keep-history)"),
        "{}",
        run.stderr()
    );
    let run = c.drift(&["release", "--all", "-n", ns]);
    assert_eq!((run.code(), run.stdout().as_str()), (0, "no Helm releases found\n"));
    c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
}

fn failed_upgrade_hand_edit_and_rollback(c: &Cluster, helm: Helm, ns: &str) {
    c.create_namespace(ns);
    c.helm(helm, &["install", "shop", &chart(), "-n", ns, "--set", "worker.minReplicas=1"]).ok();
    let (rx, state) = watcher(c);
    let state = state.as_str();
    assert_eq!(watch_round(c, ns, &rx, state), 0);
    let r = c.helm(
        helm,
        &[
            "upgrade",
            "shop",
            &chart(),
            "-n",
            ns,
            "--set",
            "worker.minReplicas=1",
            "--set",
            "image.tag=2.5.0",
            "--set",
            "logLevel=debug",
            "--wait",
            "--timeout",
            "5s",
        ],
    );
    assert_ne!(r.code(), 0, "the upgrade must fail (pods never become ready)");
    assert_eq!((stored_status(c, ns, 1), stored_status(c, ns, 2)), ("deployed".into(), "failed".into()));
    assert_eq!(web_image(c, ns), "registry.example/shop/web:2.5.0", "the failed upgrade changed the object");

    // What the failed upgrade applied is reported as such: not drift by hand.
    let (code, rel) = release_json(c, ns);
    assert_eq!(code, 1, "{rel:#}");
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("incomplete"), Some("failed")));
    assert_eq!((rel["revision"].as_u64(), rel["latestRevision"].as_u64()), (Some(1), Some(2)));
    let image = field(&rel, "Deployment", "shop-web", "spec.template.spec.containers[name=web].image");
    assert_eq!(
        (image["desired"].as_str(), image["live"].as_str()),
        (Some("registry.example/shop/web:1.27"), Some("registry.example/shop/web:2.5.0"))
    );
    assert_eq!(image["fromRevision"], 2);
    assert_eq!(field(&rel, "ConfigMap", "shop-config", "data.LOG_LEVEL")["fromRevision"], 2);
    let diffs = differences(&rel);
    assert!(diffs.iter().all(|d| d.2 == Some(2)), "everything comes from revision 2: {diffs:?}");
    let reconcile: Vec<&str> = rel["reconcile"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(
        reconcile[0].contains("# back to deployed revision 1: undoes what failed revision 2 applied"),
        "{reconcile:?}"
    );
    assert!(reconcile.iter().any(|c| c.starts_with("# or keep revision 2: fix why it failed")), "{reconcile:?}");
    let text = c.drift(&["release", "shop", "-n", ns, "--color", "never"]).stdout();
    assert!(text.contains("revision 1  chart shop-1.2.0  helm failed (revision 2)  INCOMPLETE"), "{text}");
    assert!(text.contains("web:2.5.0  (from failed revision 2, not by hand)"), "{text}");
    // The upgrade changed the image of both Deployments and the ConfigMap.
    let changed: std::collections::BTreeSet<String> = diffs.iter().map(|d| d.0.clone()).collect();
    let expected = ["ConfigMap/shop-config", "Deployment/shop-web", "Deployment/shop-worker"];
    assert_eq!(changed.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    assert_eq!(
        quiet_all(c, ns).1,
        format!(
            "{ns}/shop  revision 1  helm failed (revision 2)  INCOMPLETE  3 object(s) changed by failed revision 2"
        )
    );
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["status"], "the failure is one status alert, not drift");
    assert_eq!((events[0]["helmStatus"].as_str(), events[0]["revision"].as_u64()), (Some("failed"), Some(2)));

    // A hand edit on top of the failed upgrade is drift by hand.
    c.kubectl(&["-n", ns, "set", "env", "deploy/shop-web", "HAND=1"]).ok();
    c.kubectl(&["-n", ns, "patch", "configmap", "shop-config", "--type", "merge", "-p", r#"{"data":{"hand":"yes"}}"#])
        .ok();
    let (code, rel) = release_json(c, ns);
    assert_eq!(code, 1);
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("drifted"), Some("failed")));
    let env = field(&rel, "Deployment", "shop-web", "spec.template.spec.containers[name=web].env[name=HAND]");
    assert_eq!((env["change"].as_str(), env["manager"].as_str()), (Some("added"), Some("kubectl-set")));
    assert!(env["fromRevision"].is_null(), "{env}");
    assert!(field(&rel, "ConfigMap", "shop-config", "data.hand")["fromRevision"].is_null());
    let image = field(&rel, "Deployment", "shop-web", "spec.template.spec.containers[name=web].image");
    assert_eq!(image["fromRevision"], 2);
    let hand: Vec<_> = differences(&rel).into_iter().filter(|d| d.2.is_none()).collect();
    assert_eq!(hand.len(), 2, "{hand:?}");
    assert!(quiet_all(c, ns).1.contains("helm failed (revision 2)  DRIFTED  2 object(s) drifted"));
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["status", "drift"]);
    let posted = events[1]["objects"].to_string();
    assert!(posted.contains("env[name=HAND]") && posted.contains("data.hand"), "{posted}");
    assert!(!posted.contains("image") && !posted.contains("fromRevision"), "only the hand edits are drift: {posted}");
    // Undone by hand: resolved; the release is still failed.
    c.kubectl(&["-n", ns, "set", "env", "deploy/shop-web", "HAND-"]).ok();
    c.kubectl(&["-n", ns, "patch", "configmap", "shop-config", "--type", "merge", "-p", r#"{"data":{"hand":null}}"#])
        .ok();
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    assert_eq!(kinds(&rx.events()), vec!["status", "drift", "resolved"]);

    // The printed rollback: deployed and clean again; the watcher says so once.
    let (_, rel) = release_json(c, ns);
    roll_back_as_printed(c, helm, ns, &rel);
    assert_eq!(quiet_all(c, ns), (0, format!("{ns}/shop  revision 3  helm deployed  CLEAN")));
    assert_eq!(watch_round(c, ns, &rx, state), 0);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["status", "drift", "resolved", "status"]);
    assert_eq!(events[3]["helmStatus"], "deployed");
    assert!(events[3]["notes"][0].as_str().unwrap().contains("(was failed at revision 2)"), "{}", events[3]);
    assert_eq!(watch_round(c, ns, &rx, state), 0);
    assert_eq!(rx.events().len(), 4);
    c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
}

fn interrupted_upgrade(c: &Cluster, helm: Helm, ns: &str) {
    c.create_namespace(ns);
    c.helm(helm, &["install", "shop", &chart(), "-n", ns, "--set", "worker.minReplicas=1"]).ok();
    // An upgrade that would wait for 5 minutes, killed once it has applied its objects.
    let mut cmd = std::process::Command::new(match helm {
        Helm::V3 => &c.helm3,
        Helm::V4 => &c.helm4,
    });
    c.apply_env(&mut cmd, helm);
    cmd.args(["upgrade", "shop", &chart(), "-n", ns, "--set", "worker.minReplicas=1", "--set", "image.tag=2.6.0"])
        .args(["--wait", "--timeout", "5m"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let applied = Instant::now();
    // Both objects the new tag changes must be applied before the kill (Helm applies them one by
    // one; on a busy machine the second can lag the first).
    while !(stored_status(c, ns, 2) == "pending-upgrade"
        && web_image(c, ns).ends_with(":2.6.0")
        && deploy_image(c, ns, "shop-worker").ends_with(":2.6.0"))
    {
        if applied.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the upgrade never reached pending-upgrade with its objects applied");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap(); // SIGKILL: Helm cannot record anything.
    child.wait().unwrap();
    wait_until("the killed upgrade to stay pending", Duration::from_secs(5), || {
        stored_status(c, ns, 2) == "pending-upgrade"
    });

    let (code, rel) = release_json(c, ns);
    assert_eq!(code, 1, "{rel:#}");
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("incomplete"), Some("pending-upgrade")));
    assert_eq!((rel["revision"].as_u64(), rel["latestRevision"].as_u64()), (Some(1), Some(2)));
    let image = field(&rel, "Deployment", "shop-web", "spec.template.spec.containers[name=web].image");
    assert_eq!(
        (image["live"].as_str(), image["fromRevision"].as_u64()),
        (Some("registry.example/shop/web:2.6.0"), Some(2))
    );
    assert!(differences(&rel).iter().all(|d| d.2 == Some(2)), "{rel:#}");
    let reconcile: Vec<&str> = rel["reconcile"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(
        reconcile[0].contains("only once no helm command is still working on revision 2 (pending-upgrade)"),
        "{reconcile:?}"
    );
    assert!(
        reconcile.iter().any(|c| c.starts_with("# helm refuses to upgrade shop while revision 2 is pending-upgrade"))
    );
    // As the advice says: Helm refuses another upgrade while revision 2 is pending.
    let refused = c.helm(helm, &["upgrade", "shop", &chart(), "-n", ns, "--set", "worker.minReplicas=1"]);
    assert_ne!(refused.code(), 0);
    assert!(
        refused.stderr().contains("another operation (install/upgrade/rollback) is in progress"),
        "{}",
        refused.stderr()
    );
    assert_eq!(
        quiet_all(c, ns),
        (
            1,
            format!(
                "{ns}/shop  revision 1  helm pending-upgrade (revision 2)  INCOMPLETE  2 object(s) changed by pending-upgrade revision 2"
            )
        )
    );
    let (rx, state) = watcher(c);
    let state = state.as_str();
    assert_eq!(watch_round(c, ns, &rx, state), 1);
    let events = rx.events();
    assert_eq!(kinds(&events), vec!["status"]);
    assert_eq!(events[0]["helmStatus"], "pending-upgrade");

    roll_back_as_printed(c, helm, ns, &rel);
    assert_eq!(watch_round(c, ns, &rx, state), 0);
    assert_eq!(kinds(&rx.events()), vec!["status", "status"]);
    c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
}

/// One test per scenario and Helm version, each in its own namespace.
macro_rules! with_helm3_and_helm4 {
    ($($scenario:ident: $helm3:ident, $helm4:ident, $prefix:literal;)*) => {$(
        #[ignore = "needs the local control plane"]
        #[test]
        fn $helm3() {
            let c = crate::needs_cluster!(stringify!($helm3));
            $scenario(&c, Helm::V3, &unique_ns(concat!($prefix, "-h3")));
        }

        #[ignore = "needs the local control plane"]
        #[test]
        fn $helm4() {
            let c = crate::needs_cluster!(stringify!($helm4));
            $scenario(&c, Helm::V4, &unique_ns(concat!($prefix, "-h4")));
        }
    )*};
}

with_helm3_and_helm4! {
    failed_install: lifecycle_failed_install_helm3, lifecycle_failed_install_helm4, "lc-inst";
    failed_upgrade_hand_edit_and_rollback: lifecycle_failed_upgrade_helm3, lifecycle_failed_upgrade_helm4, "lc-upg";
    interrupted_upgrade: lifecycle_interrupted_upgrade_helm3, lifecycle_interrupted_upgrade_helm4, "lc-int";
}

/// Helm 4 refuses an install part-way (server-side apply rejects a Deployment with two env vars of
/// one name; Helm 3's client-side apply lets the API server keep the last one): the objects it never
/// created are "not created (the install failed)", not deleted by hand, the release is incomplete
/// rather than drifted, and the only advice is to fix the cause and upgrade, or uninstall: no
/// rollback to a revision that never deployed anything.
#[ignore = "needs the local control plane"]
#[test]
fn lifecycle_failed_first_install_names_what_it_never_created() {
    let c = crate::needs_cluster!("lifecycle_failed_first_install_names_what_it_never_created");
    let ns = unique_ns("lc-never");
    c.create_namespace(&ns);
    let chart = c.scratch.join("dup");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: dup\nversion: 0.1.0\n").unwrap();
    std::fs::write(
        chart.join("templates/all.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup-settings\ndata:\n  a: \"1\"\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dup-web\nspec:\n  replicas: 1\n  \
         selector: {matchLabels: {app: dup}}\n  template:\n    metadata: {labels: {app: dup}}\n    spec:\n      \
         containers:\n      - name: web\n        image: nginx:1.27\n        env:\n        - {name: A, value: \"1\"}\n        \
         - {name: A, value: \"2\"}\n",
    )
    .unwrap();
    let r = c.helm(Helm::V4, &["install", "dup", chart.to_str().unwrap(), "-n", &ns]);
    assert_ne!(r.code(), 0, "Helm 4 refuses the duplicate env names: {}", r.stdout());
    assert!(r.stderr().contains("duplicate entries"), "{}", r.stderr());

    let run = c.drift(&["release", "dup", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let rel = json(&run)["releases"][0].clone();
    assert_eq!((rel["status"].as_str(), rel["helmStatus"].as_str()), (Some("incomplete"), Some("failed")), "{rel:#}");
    let objects = rel["objects"].as_array().unwrap();
    assert_eq!(objects.len(), 1, "only the Deployment differs: {rel:#}");
    let web = &objects[0];
    assert_eq!((web["kind"].as_str(), web["state"].as_str()), (Some("Deployment"), Some("missing")));
    assert_eq!(web["notCreated"], true, "{web:#}");
    let reconcile: Vec<&str> = rel["reconcile"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(reconcile.len(), 1, "{reconcile:#?}");
    assert!(reconcile[0].starts_with("# revision 1 is failed and nothing was ever deployed"), "{reconcile:#?}");
    assert!(!reconcile.iter().any(|c| c.contains("rollback")), "{reconcile:#?}");

    let text = c.drift(&["release", "dup", "-n", &ns, "--color", "never"]);
    assert_eq!(text.code(), 1);
    let out = text.stdout();
    assert!(out.contains(&format!("Deployment {ns}/dup-web  NOT CREATED (the install failed)")), "{out}");
    assert!(!out.contains("MISSING") && !out.contains("rollback"), "{out}");
    assert!(out.contains("helm failed  INCOMPLETE"), "{out}");
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
