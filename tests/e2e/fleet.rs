//! Many clusters: every command across kube contexts, against two real control planes
//! (`scripts/test-env up` with `DRIFT_CLUSTERS=2`, contexts `drift-1` and `drift-2` in
//! `$DRIFT_FLEET_KUBECONFIG`). The same release name and namespace live in both, with different
//! drift; contexts that cannot be used (nothing listening, a token refused, an exec credential
//! plugin that fails) are added to a kubeconfig of the test's own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Cluster, Helm, Run, free_port, unique_ns};
use crate::watch::Receiver;

/// The fleet kubeconfig and its contexts, from the environment.
pub fn fleet() -> (PathBuf, Vec<String>) {
    let var = |k: &str| {
        std::env::var(k)
            .unwrap_or_else(|_| panic!("{k} is not set: scripts/test runs scripts/test-env up with DRIFT_CLUSTERS=2"))
    };
    let contexts: Vec<String> = var("DRIFT_FLEET_CONTEXTS").split(',').map(str::to_string).collect();
    assert!(contexts.len() >= 2, "the fleet tests need two control planes: {contexts:?}");
    (PathBuf::from(var("DRIFT_FLEET_KUBECONFIG")), contexts)
}

/// kubectl or helm on one context of `kubeconfig`.
pub fn on(c: &Cluster, kubeconfig: &Path, context: &str, tool: &str, args: &[&str]) -> Run {
    let mut cmd = match tool {
        "kubectl" => {
            let mut cmd = Command::new(&c.kubectl);
            cmd.arg("--kubeconfig").arg(kubeconfig).arg("--context").arg(context);
            cmd
        }
        _ => {
            let mut cmd = Command::new(&c.helm4);
            c.apply_env(&mut cmd, Helm::V4);
            cmd.env("KUBECONFIG", kubeconfig).arg("--kube-context").arg(context);
            cmd
        }
    };
    cmd.args(args).stdin(std::process::Stdio::null());
    let out = cmd.output().unwrap_or_else(|e| panic!("failed to start {tool}: {e}"));
    let run = Run { out, what: format!("{tool} --context {context} {}", args.join(" ")) };
    assert_eq!(run.code(), 0, "{}: {}", run.what, run.stderr());
    run
}

/// kubectl-drift with `kubeconfig`.
fn drift(c: &Cluster, kubeconfig: &Path, args: &[&str]) -> Run {
    c.drift_with_env(args, &[("KUBECONFIG", kubeconfig.to_str().unwrap())])
}

/// The release `app` (one ConfigMap) installed in namespace `ns` of every context.
fn install_everywhere(c: &Cluster, kubeconfig: &Path, contexts: &[String], ns: &str) {
    let chart = c.one_template_chart(
        "app",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\ndata:\n  mode: steady\n  size: small\n",
    );
    for ctx in contexts {
        on(c, kubeconfig, ctx, "kubectl", &["create", "namespace", ns]);
        on(c, kubeconfig, ctx, "helm", &["install", "app", chart.to_str().unwrap(), "-n", ns]);
    }
}

/// `app` installed in a new namespace of the first two clusters, its ConfigMap then patched by hand
/// with `patch` in the second: (the fleet kubeconfig, its contexts, the namespace).
pub(crate) fn drifted_in_the_second(c: &Cluster, prefix: &str, patch: &str) -> (PathBuf, Vec<String>, String) {
    let (kubeconfig, contexts) = fleet();
    let ns = unique_ns(prefix);
    install_everywhere(c, &kubeconfig, &contexts[..2], &ns);
    on(c, &kubeconfig, &contexts[1], "kubectl", &["-n", &ns, "patch", "configmap", "app-settings", "-p", patch]);
    (kubeconfig, contexts, ns)
}

fn parse(run: &Run) -> Value {
    serde_json::from_str(&run.stdout())
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}):\n{}\n{}", run.what, run.stdout(), run.stderr()))
}

/// The entry of `cluster` in a schemaVersion 2 output.
fn entry<'a>(out: &'a Value, cluster: &str) -> &'a Value {
    assert_eq!(out["schemaVersion"], 2, "{out:#}");
    out["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cluster"] == cluster)
        .unwrap_or_else(|| panic!("no cluster {cluster} in {out:#}"))
}

pub(crate) fn cleanup(c: &Cluster, kubeconfig: &Path, contexts: &[String], ns: &str) {
    for ctx in contexts {
        let mut cmd = Command::new(&c.kubectl);
        cmd.arg("--kubeconfig").arg(kubeconfig).args(["--context", ctx, "delete", "namespace", ns, "--wait=false"]);
        let _ = cmd.output();
    }
}

/// The same release in two clusters, drifted in one: each cluster reports its own, in the order
/// named, in JSON, text and CSV; reconcile commands name their context; the exit code is the
/// worst cluster's.
#[ignore = "needs the local control plane"]
#[test]
fn the_same_release_in_two_clusters_is_reported_per_cluster() {
    let c = crate::needs_cluster!("the_same_release_in_two_clusters_is_reported_per_cluster");
    let (kubeconfig, contexts, ns) = drifted_in_the_second(&c, "fleet", r#"{"data":{"mode":"hotfix"}}"#);
    let (one, two) = (contexts[0].as_str(), contexts[1].as_str());

    let both = format!("{one},{two}");
    let run = drift(&c, &kubeconfig, &["release", "app", "-n", &ns, "--context", &both, "-o", "json"]);
    assert_eq!(run.code(), 1, "drift in one cluster: {}\n{}", run.stdout(), run.stderr());
    let out = parse(&run);
    let names: Vec<&str> = out["clusters"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
    assert_eq!(names, vec![one, two], "in the order named");
    let clean = &entry(&out, one)["report"];
    assert_eq!(clean["cluster"], one);
    assert_eq!(clean["releases"][0]["status"], "clean", "{clean:#}");
    let drifted = &entry(&out, two)["report"];
    assert_eq!(drifted["cluster"], two);
    let rel = &drifted["releases"][0];
    assert_eq!((rel["name"].as_str(), rel["status"].as_str()), (Some("app"), Some("drifted")), "{rel:#}");
    let fields = &rel["objects"][0]["fields"];
    assert_eq!(fields[0]["path"], "data.mode", "{rel:#}");
    assert_eq!((fields[0]["desired"].as_str(), fields[0]["live"].as_str()), (Some("steady"), Some("hotfix")));
    // The commands that undo it act on that cluster, and only that cluster's report has them.
    let commands = crate::common::reconcile_commands(drifted);
    assert!(!commands.is_empty() && commands.iter().all(|c| c.contains(two)), "{commands:?}");
    assert!(crate::common::reconcile_commands(clean).is_empty());

    // The same, repeated --context, as text: a header per cluster.
    let text = drift(&c, &kubeconfig, &["release", "app", "-n", &ns, "--context", one, "--context", two]);
    assert_eq!(text.code(), 1);
    let stdout = text.stdout();
    let (h1, h2) = (stdout.find(&format!("cluster {one}")), stdout.find(&format!("cluster {two}")));
    assert!(h1.is_some() && h2.is_some() && h1 < h2, "{stdout}");
    assert!(stdout[h2.unwrap()..].contains("data.mode") && !stdout[..h2.unwrap()].contains("data.mode"), "{stdout}");

    // Orphans and versions across both: one entry each, named; CSV with a cluster column.
    let orphans = drift(&c, &kubeconfig, &["orphans", "-n", &ns, "--context", &both, "-o", "csv"]);
    assert!(orphans.code() <= 1, "{}", orphans.stderr());
    assert!(orphans.stdout().starts_with("cluster,namespace,kind,name"), "{}", orphans.stdout());
    // The table: one for both clusters (a CLUSTER column when it has rows), each summary named.
    let table = drift(&c, &kubeconfig, &["orphans", "-n", &ns, "--context", &both]);
    assert!(table.code() <= 1, "{}", table.stderr());
    for ctx in [one, two] {
        assert!(table.stdout().contains(&format!("cluster {ctx}: ")), "{}", table.stdout());
    }
    let versions = drift(
        &c,
        &kubeconfig,
        &["versions", "-n", &ns, "--category", "workloads", "--context", &both, "-o", "json", "--no-cache"],
    );
    assert!(versions.code() <= 1, "{}", versions.stderr());
    let out = parse(&versions);
    assert_eq!(entry(&out, one)["report"]["cluster"], one);
    assert_eq!(entry(&out, two)["report"]["cluster"], two);

    // Manifests: the ConfigMap as desired, checked in both clusters.
    let file = c.scratch.join("app.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-settings\n  namespace: {ns}\ndata:\n  mode: steady\n  size: small\n"),
    )
    .unwrap();
    let run = drift(&c, &kubeconfig, &["manifests", file.to_str().unwrap(), "--context", &both, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let out = parse(&run);
    assert_eq!(entry(&out, one)["report"]["files"][0]["status"], "clean", "{out:#}");
    assert_eq!(entry(&out, two)["report"]["files"][0]["status"], "drifted", "{out:#}");
    cleanup(&c, &kubeconfig, &contexts[..2], &ns);
}

/// A kubeconfig of the test's own: the fleet's contexts, plus `down` (a server nothing listens
/// on: an API server that is stopped), `refused` (the second cluster with a token it refuses)
/// and `exec-fails` (the first cluster with an exec credential plugin that exits 1).
pub(crate) fn troubled_kubeconfig(c: &Cluster, fleet: &Path, contexts: &[String]) -> PathBuf {
    let text = std::fs::read_to_string(fleet).unwrap();
    let mut kc: Value = serde_saphyr::from_str(&text).expect("the fleet kubeconfig is YAML");
    let cluster_of = |kc: &Value, ctx: &str| -> Value {
        let name =
            kc["contexts"].as_array().unwrap().iter().find(|x| x["name"] == ctx).unwrap()["context"]["cluster"].clone();
        kc["clusters"].as_array().unwrap().iter().find(|x| x["name"] == name).unwrap()["cluster"].clone()
    };
    let mut down = cluster_of(&kc, &contexts[0]);
    down["server"] = json!(format!("https://127.0.0.1:{}", free_port()));
    let user_of_first = kc["contexts"].as_array().unwrap().iter().find(|x| x["name"] == contexts[0].as_str()).unwrap()
        ["context"]["user"]
        .clone();
    let second_cluster = kc["contexts"].as_array().unwrap().iter().find(|x| x["name"] == contexts[1].as_str()).unwrap()
        ["context"]["cluster"]
        .clone();
    let first_cluster = kc["contexts"].as_array().unwrap().iter().find(|x| x["name"] == contexts[0].as_str()).unwrap()
        ["context"]["cluster"]
        .clone();
    kc["clusters"].as_array_mut().unwrap().push(json!({"name": "down", "cluster": down}));
    kc["users"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "bad-token", "user": {"token": "not-a-token-anyone-issued"}}));
    kc["users"].as_array_mut().unwrap().push(json!({"name": "exec-fails", "user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "false", "interactiveMode": "Never"}}}));
    for (name, cluster, user) in [
        ("down", json!("down"), user_of_first.clone()),
        ("refused", second_cluster, json!("bad-token")),
        ("exec-fails", first_cluster, json!("exec-fails")),
    ] {
        kc["contexts"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": name, "context": {"cluster": cluster, "user": user}}));
    }
    let path = c.scratch.join("troubled.kubeconfig");
    std::fs::write(&path, serde_json::to_string_pretty(&kc).unwrap()).unwrap();
    path
}

/// A stopped API server, refused credentials and a failing exec plugin are each their cluster's
/// error (exit 2, named with the cause on stderr); the other clusters are still reported in full.
#[ignore = "needs the local control plane"]
#[test]
fn a_cluster_that_cannot_be_read_never_hides_the_others() {
    let c = crate::needs_cluster!("a_cluster_that_cannot_be_read_never_hides_the_others");
    let (fleet_kc, contexts) = fleet();
    let ns = unique_ns("fleet-err");
    install_everywhere(&c, &fleet_kc, &contexts[..2], &ns);
    let kubeconfig = troubled_kubeconfig(&c, &fleet_kc, &contexts);
    let (one, two) = (contexts[0].as_str(), contexts[1].as_str());

    for (bad, good, cause) in [("down", one, "connect"), ("refused", two, "401"), ("exec-fails", one, "exec")] {
        let started = Instant::now();
        let list = format!("{bad},{good}");
        let run = drift(&c, &kubeconfig, &["release", "app", "-n", &ns, "--context", &list, "-o", "json"]);
        assert!(started.elapsed() < Duration::from_secs(60), "{bad}: took {:?}", started.elapsed());
        assert_eq!(run.code(), 2, "{bad}: {}\n{}", run.stdout(), run.stderr());
        let out = parse(&run);
        let failed = entry(&out, bad);
        assert!(failed.get("report").is_none(), "{failed:#}");
        let error = failed["error"].as_str().unwrap_or_default();
        assert!(error.to_lowercase().contains(cause), "{bad}: the error names its cause ({cause}): {error}");
        assert_eq!(entry(&out, good)["report"]["releases"][0]["status"], "clean", "{bad}: {out:#}");
        assert!(run.stderr().contains(&format!("error: cluster {bad}: ")), "{bad}: {}", run.stderr());
        assert!(
            !run.stderr().contains("not-a-token-anyone-issued") && !run.stdout().contains("not-a-token-anyone-issued")
        );
    }

    // --all-contexts: every context of the kubeconfig, in its order, the usable ones reported.
    let run = drift(&c, &kubeconfig, &["release", "--all", "-n", &ns, "--all-contexts", "-o", "json"]);
    assert_eq!(run.code(), 2, "{}\n{}", run.stdout(), run.stderr());
    let out = parse(&run);
    let names: Vec<&str> = out["clusters"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
    for ctx in contexts.iter().map(String::as_str).chain(["down", "refused", "exec-fails"]) {
        assert!(names.contains(&ctx), "{ctx} in {names:?}");
    }
    for ctx in &contexts[..2] {
        assert_eq!(entry(&out, ctx)["report"]["releases"][0]["name"], "app", "{ctx}: {out:#}");
    }
    for bad in ["down", "refused", "exec-fails"] {
        assert!(entry(&out, bad)["error"].is_string(), "{bad}: {out:#}");
    }
    // Text: every cluster under its header, the failed ones with their error.
    let text = drift(&c, &kubeconfig, &["release", "--all", "-n", &ns, "--all-contexts"]);
    assert_eq!(text.code(), 2);
    for ctx in names {
        assert!(text.stdout().contains(&format!("cluster {ctx}")), "{ctx}:\n{}", text.stdout());
    }
    cleanup(&c, &fleet_kc, &contexts[..2], &ns);
}

/// `watch` across two clusters: one state, kept per cluster; the alert names the cluster it is
/// about; a version 1 state (one unnamed cluster) still loads, as the first cluster's.
#[ignore = "needs the local control plane"]
#[test]
fn watch_across_clusters_names_the_cluster_and_keeps_state_per_cluster() {
    let c = crate::needs_cluster!("watch_across_clusters_names_the_cluster_and_keeps_state_per_cluster");
    let (kubeconfig, contexts, ns) = drifted_in_the_second(&c, "fleet-watch", r#"{"data":{"size":"large"}}"#);
    let (one, two) = (contexts[0].as_str(), contexts[1].as_str());
    let rx = Receiver::start();
    let state = c.scratch.join("state.json");
    let round = |list: &str| {
        drift(
            &c,
            &kubeconfig,
            &[
                "watch",
                "app",
                "-n",
                &ns,
                "--context",
                list,
                "--once",
                "--state",
                state.to_str().unwrap(),
                "--webhook",
                &rx.url("/hook"),
            ],
        )
    };
    let both = format!("{one},{two}");
    let run = round(&both);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let events = rx.events();
    assert_eq!(events.len(), 1, "one alert, for the drifted cluster: {events:#?}");
    assert_eq!((events[0]["kind"].as_str(), events[0]["cluster"].as_str()), (Some("drift"), Some(two)));
    assert!(events[0]["text"].as_str().unwrap().contains(&format!("in cluster `{two}`")), "{:#}", events[0]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(saved["version"], 2, "{saved:#}");
    let key = format!("release/{ns}/app");
    assert!(saved["clusters"][one][&key]["drift"].is_null(), "{saved:#}");
    assert!(saved["clusters"][two][&key]["drift"].is_string(), "{saved:#}");

    // Nothing new: no alert.
    assert_eq!(round(&both).code(), 1);
    assert_eq!(rx.events().len(), 1, "{:#?}", rx.events());

    // The state as version 1 wrote it (one cluster, unnamed): the drift it remembers is the first
    // cluster's, so watching that cluster alone alerts nothing again, and the state is rewritten
    // as version 2.
    let v1 = json!({"version": 1, "targets": saved["clusters"][two].clone()});
    std::fs::write(&state, v1.to_string()).unwrap();
    let run = round(two);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert_eq!(rx.events().len(), 1, "a version 1 state's drift is not alerted again: {:#?}", rx.events());
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(saved["version"], 2);
    assert!(saved["clusters"][two][&key]["drift"].is_string(), "{saved:#}");
    assert!(saved.get("targets").is_none(), "{saved:#}");
    cleanup(&c, &kubeconfig, &contexts[..2], &ns);
}
