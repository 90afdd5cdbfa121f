//! GitOps-aware drift on the real control plane (docs/gitops.md).
//!
//! **Simulated here**: helm-controller (its main module is not served by the Go module proxy) and
//! Argo CD (it does not build here). The tests install CRDs of our own for the fields we read
//! (`tests/fixtures/gitops/`), install releases with real Helm labelled as helm-controller's
//! post-renderer labels them, apply objects server-side under Argo CD's field manager, and write
//! the HelmRelease and Application status as those controllers write it. Flux's
//! kustomize-controller is real: see `flux.rs`.

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, reconcile_commands, unique_ns};

fn install_crd(c: &Cluster, file: &str, name: &str) {
    c.kubectl(&["apply", "--server-side", "--force-conflicts", "-f", fixture(file).to_str().unwrap()]).ok();
    c.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", &format!("crd/{name}")]).ok();
}

/// Apply `yaml` server-side as `manager`.
fn apply_as(c: &Cluster, manager: &str, yaml: &str) {
    c.kubectl_stdin(&["apply", "--server-side", "--force-conflicts", "--field-manager", manager, "-f", "-"], yaml).ok();
}

/// Write an object's status as its controller does (the status subresource, or the object for
/// kinds without one).
fn write_status(c: &Cluster, ns: &str, resource: &str, manager: &str, status: &Value, subresource: bool) {
    let patch = serde_json::json!({ "status": status }).to_string();
    let mut args = vec!["patch", resource, "-n", ns, "--type=merge", "-p", &patch, "--field-manager", manager];
    if subresource {
        args.push("--subresource=status");
    }
    c.kubectl(&args).ok();
}

fn field<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    object["fields"].as_array()?.iter().find(|f| f["path"] == path)
}

/// Release `shop` installed with real Helm in `ns`, its objects labelled as helm-controller's
/// post-renderer labels them, and HelmRelease `flux_ns/shop` (CRD of our own) that names it, with
/// drift detection `warn` ignoring the Deployment's replicas, and its status as helm-controller
/// writes it: `Ready` and `Released`, then `extra` conditions.
fn flux_release(c: &Cluster, ns: &str, flux_ns: &str, extra: &[Value]) {
    install_crd(c, "gitops/helmrelease-crd.yaml", "helmreleases.helm.toolkit.fluxcd.io");
    c.create_namespace(ns);
    c.create_namespace(flux_ns);
    let labels = format!("helm.toolkit.fluxcd.io/name: shop\n    helm.toolkit.fluxcd.io/namespace: {flux_ns}");
    let chart = c.one_template_chart(
        "shop",
        &format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    {labels}\nspec:\n  \
             replicas: 1\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: \
             {{app: web}}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n---\n\
             apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\n  labels:\n    {labels}\ndata:\n  level: \
             info\n"
        ),
    );
    // helm-controller installs the release named by the HelmRelease into its target namespace.
    c.helm(Helm::V4, &["install", "shop", chart.to_str().unwrap(), "-n", ns]).ok();
    apply_as(
        c,
        "kustomize-controller",
        &format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: shop\n  namespace: {flux_ns}\n\
             spec:\n  interval: 10m\n  releaseName: shop\n  targetNamespace: {ns}\n  chart:\n    spec:\n      chart: \
             shop\n      sourceRef: {{kind: HelmRepository, name: charts}}\n  driftDetection:\n    mode: warn\n    \
             ignore:\n      - paths: [\"/spec/replicas\"]\n        target: {{kind: Deployment}}\n"
        ),
    );
    write_flux_status(c, ns, flux_ns, extra);
}

/// The HelmRelease's status as helm-controller writes it: `Ready`, `Released`, then `extra`
/// conditions (a merge patch replaces the list whole, as the controller's patch does).
fn write_flux_status(c: &Cluster, ns: &str, flux_ns: &str, extra: &[Value]) {
    let mut conditions = vec![
        serde_json::json!({"type": "Ready", "status": "True", "reason": "UpgradeSucceeded",
                           "message": "Helm install succeeded", "lastTransitionTime": "2026-12-02T00:00:00Z"}),
        serde_json::json!({"type": "Released", "status": "True", "reason": "InstallSucceeded",
                           "message": "installed", "lastTransitionTime": "2026-12-02T00:00:00Z"}),
    ];
    conditions.extend(extra.iter().cloned());
    write_status(
        c,
        flux_ns,
        "helmrelease/shop",
        "helm-controller",
        &serde_json::json!({
            "conditions": conditions,
            "history": [{"name": "shop", "namespace": ns, "version": 1, "status": "deployed", "chartName": "shop",
                         "chartVersion": "0.1.0", "configDigest": "sha256:0", "digest": "sha256:0",
                         "firstDeployed": "2026-12-02T00:00:00Z", "lastDeployed": "2026-12-02T00:00:00Z"}],
            "storageNamespace": ns,
            "lastAttemptedRevision": "0.1.0",
        }),
        true,
    );
}

/// A release installed with real Helm, its objects labelled as helm-controller's post-renderer
/// labels them, and a HelmRelease (CRD of our own, status as helm-controller writes it) that names
/// it. A replica change the HelmRelease ignores is ignored, an env var added by hand is drift,
/// the advice is Flux's, and the report carries the HelmRelease, its mode and its conditions.
#[test]
#[ignore = "needs the local control plane"]
fn flux_helm_release_rules_state_and_advice() {
    let c = crate::needs_cluster!("gitops-hr");
    let ns = unique_ns("hr");
    let flux_ns = unique_ns("fluxsys");
    flux_release(&c, &ns, &flux_ns, &[]);

    // Clean: the HelmRelease is named, with Flux's conditions and what Flux does next.
    let run = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let gitops = &report["releases"][0]["gitops"];
    assert_eq!(gitops["kind"], "HelmRelease", "{report:#}");
    assert_eq!(gitops["namespace"], flux_ns.as_str());
    assert_eq!(gitops["name"], "shop");
    assert_eq!(gitops["driftDetection"], "warn");
    assert_eq!(gitops["conditions"][0]["type"], "Ready");
    assert_eq!(gitops["conditions"][0]["status"], "True");
    assert!(gitops["next"].as_str().unwrap().contains("only reports"), "{gitops:#}");

    // By hand: a scale (ignored by the HelmRelease's rule) and an env var (drift).
    c.kubectl(&["scale", "deployment/web", "-n", &ns, "--replicas=3"]).ok();
    c.kubectl(&["set", "env", "deployment/web", "-n", &ns, "DEBUG=1"]).ok();
    let run = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let web = report["releases"][0]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap_or_else(|| panic!("no Deployment in {report:#}"))
        .clone();
    let replicas = field(&web, "spec.replicas").unwrap_or_else(|| panic!("{web:#}"));
    let reason = replicas["reason"].as_str().unwrap_or_else(|| panic!("replicas not ignored: {web:#}"));
    assert!(reason.contains(&format!("HelmRelease {flux_ns}/shop")) && reason.contains("/spec/replicas"), "{reason}");
    let env = field(&web, "spec.template.spec.containers[name=web].env").unwrap_or_else(|| panic!("{web:#}"));
    assert!(env["reason"].is_null(), "{env:#}");
    assert_eq!(env["manager"], "kubectl-set");
    let commands = reconcile_commands(&report);
    assert!(commands.iter().all(|c| !c.starts_with("helm rollback")), "{commands:#?}");
    assert!(commands[0].contains(&format!("Flux HelmRelease {flux_ns}/shop")), "{commands:#?}");
    assert!(commands.iter().any(|c| c.starts_with("kubectl patch deployment.apps/web")), "{commands:#?}");

    // A deleted ConfigMap is a change Flux's upgrade restores: its forced reconcile is named.
    c.kubectl(&["delete", "configmap/conf", "-n", &ns]).ok();
    let run = c.drift(&["release", "shop", "-n", &ns]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let text = run.stdout();
    assert!(text.contains(&format!("flux: HelmRelease {flux_ns}/shop  drift detection warn")), "{text}");
    assert!(text.contains("Ready=True (UpgradeSucceeded)"), "{text}");
    assert!(text.contains(&format!("flux reconcile helmrelease shop -n {flux_ns} --force")), "{text}");
    assert!(text.contains("reconcile.fluxcd.io/forceAt"), "{text}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("helm rollback")), "{text}");

    // Drift detection enabled: Flux reverts what the chart sets.
    c.kubectl(&[
        "patch",
        "helmrelease/shop",
        "-n",
        &flux_ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"driftDetection":{"mode":"enabled"}}}"#,
    ])
    .ok();
    let report = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]).report();
    let gitops = &report["releases"][0]["gitops"];
    assert_eq!(gitops["driftDetection"], "enabled");
    assert!(gitops["next"].as_str().unwrap().contains("reverts"), "{gitops:#}");
    c.helm(Helm::V4, &["uninstall", "shop", "-n", &ns]).ok();
}

/// Flux's own verdict beside ours. **Simulated**: helm-controller does not run here, so its
/// `Drifted` condition (helm-controller 1.6) is written as it writes it (`NoDriftDetected` with its
/// fixed message, `DriftDetected` with its summary of each drifted object). Both clean: we agree; a
/// label added by hand (a field the chart does not set, which Flux's diff does not compare): we
/// disagree and say why; a value the chart sets changed, and Flux's condition written for it: we
/// agree; the value put back while Flux still says drifted: we disagree, exit 0.
#[test]
#[ignore = "needs the local control plane"]
fn flux_helm_release_drifted_condition_beside_ours() {
    let c = crate::needs_cluster!("gitops-hr-drifted");
    let ns = unique_ns("hrd");
    let flux_ns = unique_ns("fluxsys");
    let no_drift = serde_json::json!({"type": "Drifted", "status": "False", "reason": "NoDriftDetected",
        "message": "No drift detected against the cluster state", "lastTransitionTime": "2026-12-05T01:00:00Z",
        "observedGeneration": 1});
    flux_release(&c, &ns, &flux_ns, std::slice::from_ref(&no_drift));
    let verdict = |code: i32| {
        let run = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
        assert_eq!(run.code(), code, "{}\n{}", run.stdout(), run.stderr());
        run.report()["releases"][0]["gitops"]["verdict"].clone()
    };

    let v = verdict(0);
    assert_eq!(
        (v["drifted"].as_bool(), v["reason"].as_str(), v["time"].as_str(), v["agrees"].as_bool()),
        (Some(false), Some("NoDriftDetected"), Some("2026-12-05T01:00:00Z"), Some(true)),
        "{v:#}"
    );
    assert_eq!(v["message"], "No drift detected against the cluster state");
    let text = c.drift(&["release", "shop", "-n", &ns]).stdout();
    assert!(
        text.contains("flux verdict: no drift (NoDriftDetected, since 2026-12-05T01:00:00Z): No drift detected")
            && text.contains("we agree: no drift"),
        "{text}"
    );

    // A label added by hand: drift to us, invisible to Flux's diff.
    c.kubectl(&["label", "configmap/conf", "-n", &ns, "owner=me"]).ok();
    let v = verdict(1);
    assert_eq!(
        (v["drifted"].as_bool(), v["weFindDrift"].as_bool(), v["agrees"].as_bool()),
        (Some(false), Some(true), Some(false))
    );
    let why = v["disagreement"].as_str().unwrap_or_else(|| panic!("{v:#}"));
    assert!(why.contains("1 field added by hand") && why.contains("does not compare"), "{why}");
    let text = c.drift(&["release", "shop", "-n", &ns]).stdout();
    assert!(text.contains(&format!("we disagree: {why}")), "{text}");

    // A value the chart sets, changed; helm-controller's next reconcile writes its verdict.
    c.kubectl(&["label", "configmap/conf", "-n", &ns, "owner-"]).ok();
    c.kubectl(&["patch", "configmap/conf", "-n", &ns, "--type=merge", "-p", r#"{"data":{"level":"debug"}}"#]).ok();
    let v = verdict(1);
    assert!(v["disagreement"].as_str().is_some_and(|d| d.contains("changed after Flux's last check")), "{v:#}");
    let message = format!(
        "Cluster state of release {ns}/shop.v1 has drifted from the desired state:\nConfigMap/{ns}/conf changed (0 \
         additions, 1 changes, 0 removals)"
    );
    let drifted = serde_json::json!({"type": "Drifted", "status": "True", "reason": "DriftDetected",
        "message": message, "lastTransitionTime": "2026-12-05T02:00:00Z", "observedGeneration": 1});
    write_flux_status(&c, &ns, &flux_ns, std::slice::from_ref(&drifted));
    let v = verdict(1);
    assert_eq!((v["drifted"].as_bool(), v["agrees"].as_bool()), (Some(true), Some(true)), "{v:#}");
    assert_eq!(v["message"], message.as_str());
    assert!(v["disagreement"].is_null(), "{v:#}");
    let text = c.drift(&["release", "shop", "-n", &ns]).stdout();
    assert!(text.contains(&format!("ConfigMap/{ns}/conf changed (0 additions, 1 changes, 0 removals)")), "{text}");
    assert!(text.contains("we agree: drifted"), "{text}");

    // Put back by hand: Flux still says drifted until its next reconcile; we find none.
    c.kubectl(&["patch", "configmap/conf", "-n", &ns, "--type=merge", "-p", r#"{"data":{"level":"info"}}"#]).ok();
    let v = verdict(0);
    assert_eq!(
        (v["drifted"].as_bool(), v["weFindDrift"].as_bool(), v["agrees"].as_bool()),
        (Some(true), Some(false), Some(false))
    );
    assert!(v["disagreement"].as_str().is_some_and(|d| d.contains("we find no drift now")), "{v:#}");
    c.helm(Helm::V4, &["uninstall", "shop", "-n", &ns]).ok();
}

/// Objects an Argo CD Application tracks, applied server-side under Argo CD's field manager with
/// its tracking annotation, and the Application's status as Argo CD writes it (all simulated):
/// clean, then an env var set by hand and a deleted object are found with who did them, beside
/// Argo CD's own view, with Argo CD's advice.
#[test]
#[ignore = "needs the local control plane"]
fn argo_application_inventory_by_field_owner() {
    let c = crate::needs_cluster!("gitops-argo");
    install_crd(&c, "gitops/application-crd.yaml", "applications.argoproj.io");
    let ns = unique_ns("argo");
    let argo_ns = unique_ns("argocd");
    c.create_namespace(&ns);
    c.create_namespace(&argo_ns);
    let tracking = |group: &str, kind: &str, name: &str| format!("shop:{group}/{kind}:{ns}/{name}");
    let objects = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "web", "namespace": ns,
                      "annotations": {"argocd.argoproj.io/tracking-id": tracking("apps", "Deployment", "web")}},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "conf", "namespace": ns,
                      "annotations": {"argocd.argoproj.io/tracking-id": tracking("", "ConfigMap", "conf")}},
         "data": {"level": "info"}}]});
    apply_as(&c, "argocd-controller", &objects.to_string());
    let resources = |cm_sync: &str| {
        serde_json::json!([
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "web",
             "status": "Synced", "health": {"status": "Healthy"}},
            {"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": "conf", "status": cm_sync},
        ])
    };
    let app = |sync: &str, cm_sync: &str| {
        serde_json::json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "shop", "namespace": argo_ns},
            "spec": {"project": "default",
                     "source": {"repoURL": "https://git.example/shop.git", "path": "deploy", "targetRevision": "main"},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
                     "syncPolicy": {"automated": {"prune": true, "selfHeal": false}}},
            "status": {"sync": {"status": sync, "revision": "0123abcd"}, "health": {"status": "Healthy"},
                       "resources": resources(cm_sync)}
        })
        .to_string()
    };
    // Argo CD writes its Application whole (its CRD has no status subresource).
    apply_as(&c, "argocd-application-controller", &app("Synced", "Synced"));

    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    assert_eq!(file["type"], "argocd-application", "{report:#}");
    assert_eq!(file["path"], format!("{argo_ns}/shop"));
    assert_eq!(file["gitops"]["revision"], "0123abcd");
    assert_eq!(file["gitops"]["conditions"][0]["status"], "Synced");
    assert!(file["gitops"]["next"].as_str().unwrap().contains("only when Git changes"), "{file:#}");

    c.kubectl(&["set", "env", "deployment/web", "-n", &ns, "DEBUG=1"]).ok();
    c.kubectl(&["delete", "configmap/conf", "-n", &ns]).ok();
    // Tracked for the Application (its annotation) but not among its resources: extra.
    let leftover = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "leftover", "namespace": ns,
                     "annotations": {"argocd.argoproj.io/tracking-id": tracking("", "ConfigMap", "leftover")}}});
    c.kubectl_stdin(&["apply", "-f", "-"], &leftover.to_string()).ok();
    apply_as(&c, "argocd-application-controller", &app("OutOfSync", "OutOfSync"));
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    let objects = file["objects"].as_array().unwrap();
    let web = objects.iter().find(|o| o["kind"] == "Deployment").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(web["state"], "changed");
    let env = field(web, "spec.template.spec.containers[name=web].env").unwrap_or_else(|| panic!("{web:#}"));
    assert_eq!((env["change"].as_str(), env["manager"].as_str()), (Some("added"), Some("kubectl-set")), "{env:#}");
    assert_eq!(web["fields"].as_array().unwrap().len(), 1, "only the env var: {web:#}");
    let conf = objects.iter().find(|o| o["name"] == "conf").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(conf["state"], "missing");
    let left = objects.iter().find(|o| o["name"] == "leftover").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(left["state"], "extra");
    let out_of_sync = file["gitops"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "OutOfSync");
    assert_eq!(out_of_sync.map(|c| c["status"].clone()), Some(Value::from("1")), "{file:#}");
    let commands = reconcile_commands(&report);
    let sync = commands.iter().find(|c| c.starts_with("argocd app sync")).unwrap_or_else(|| panic!("{commands:#?}"));
    assert!(sync.contains(&format!("{argo_ns}/shop")) && sync.contains("--resource apps:Deployment:"), "{sync}");
    assert!(!sync.contains("leftover"), "{sync}");
    assert!(commands.iter().any(|c| c.starts_with("# kubectl delete configmap/leftover")), "{commands:#?}");

    // Text: Argo CD's own view beside ours; JUnit works too; SARIF has no file to point at.
    let text = c.drift(&["application", "shop", "-n", &argo_ns]).stdout();
    assert!(text.contains(&format!("argocd: Application {argo_ns}/shop")), "{text}");
    assert!(text.contains("Sync=OutOfSync"), "{text}");
    let junit = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "junit"]);
    assert_eq!(junit.code(), 1);
    assert!(junit.stdout().contains("<testsuites"), "{}", junit.stdout());
    let sarif = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "sarif"]);
    assert_eq!(sarif.code(), 2, "{}", sarif.stderr());

    // watch: the Application is one target of its own, remembered under its own key.
    let state = c.scratch.join("watch-state.json");
    let watch =
        c.drift(&["watch", "--application", "shop", "-n", &argo_ns, "--once", "--state", state.to_str().unwrap()]);
    assert_eq!(watch.code(), 1, "{}\n{}", watch.stdout(), watch.stderr());
    let remembered = std::fs::read_to_string(&state).unwrap();
    assert!(remembered.contains(&format!("argocd-application/{argo_ns}/shop")), "{remembered}");

    // serve: the Application is part of the releases scope (config drift), in the API and metrics.
    let data = c.scratch.join("serve-data");
    let served = crate::serve::serve(&c, &["-n", &argo_ns, "--data-dir", data.to_str().unwrap(), "--interval", "1h"]);
    served.wait_ready();
    let body: Value = serde_json::from_str(&served.get("/api/releases").body).unwrap();
    let targets = body["report"]["gitops"].as_array().unwrap_or_else(|| panic!("no gitops targets: {body:#}"));
    assert_eq!(targets.len(), 1, "{body:#}");
    assert_eq!(
        (targets[0]["type"].as_str(), targets[0]["status"].as_str()),
        (Some("argocd-application"), Some("drifted"))
    );
    let metrics = crate::serve::http(&served.health, "GET", "/metrics", &[], None).body;
    let series =
        format!("kubectl_drift_manifests_status{{target=\"argocd-application/{argo_ns}/shop\",status=\"drifted\"}} 1");
    assert!(metrics.contains(&series), "{series} not in:\n{metrics}");
    drop(served);

    // A name that is not there is an error naming it; so is a kind the cluster does not serve.
    let missing = c.drift(&["application", "nope", "-n", &argo_ns]);
    assert_eq!(missing.code(), 2, "{}", missing.stdout());
    assert!(missing.stdout().contains("Application") && missing.stdout().contains("nope"), "{}", missing.stdout());
}

/// An Application `shop` in `argo_ns` (simulated: CRD of our own, status as Argo CD writes it)
/// whose resources are `resources` and whose spec has `ignore_differences`.
fn argo_app(c: &Cluster, argo_ns: &str, ns: &str, resources: Value, ignore_differences: Value) {
    let app = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "shop", "namespace": argo_ns},
        "spec": {"project": "default",
                 "source": {"repoURL": "https://git.example/shop.git", "path": "deploy", "targetRevision": "main"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": ns},
                 "ignoreDifferences": ignore_differences},
        "status": {"sync": {"status": "Synced", "revision": "0123abcd"}, "health": {"status": "Healthy"},
                   "resources": resources}
    });
    apply_as(c, "argocd-application-controller", &app.to_string());
}

/// A Deployment with two containers, applied as Argo CD applies it (server-side, its tracking
/// annotation), under an Application whose `ignoreDifferences` has a JSON pointer with an RFC 6901
/// escape, a jq expression that selects one container, and a field manager: what each covers is
/// ignored with the Application and the entry as the reason, what none covers is drift; with only
/// ignored fields the exit code is 0; a jq expression that does not parse is an error naming the
/// Application and the expression (exit 2).
#[test]
#[ignore = "needs the local control plane"]
fn argo_application_ignore_differences() {
    let c = crate::needs_cluster!("gitops-argo-ignore");
    install_crd(&c, "gitops/application-crd.yaml", "applications.argoproj.io");
    let ns = unique_ns("argoig");
    let argo_ns = unique_ns("argocd");
    c.create_namespace(&ns);
    c.create_namespace(&argo_ns);
    let deployment = |sidecar: &str| {
        serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns,
                         "annotations": {"argocd.argoproj.io/tracking-id": format!("shop:apps/Deployment:{ns}/web")}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27"},
                                                          {"name": "sidecar", "image": sidecar}]}}}})
        .to_string()
    };
    apply_as(&c, "argocd-controller", &deployment("envoy:1"));
    let resources = serde_json::json!([{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns,
                                        "name": "web", "status": "Synced"}]);
    let ignore = |jq: &str| {
        serde_json::json!([
            {"group": "apps", "kind": "Deployment", "jsonPointers": ["/metadata/labels/foo~1bar"]},
            {"group": "apps", "kind": "Deployment", "name": "web", "jqPathExpressions": [jq]},
            // Ops scale it from k9s (a person's tool: drift unless trusted).
            {"group": "apps", "kind": "Deployment", "namespace": ns, "managedFieldsManagers": ["k9s"]},
            // Another group, and the core group: they select nothing here.
            {"group": "", "kind": "Deployment", "jsonPointers": ["/spec/template"]},
            {"group": "extensions", "kind": "Deployment", "jsonPointers": ["/spec/template"]},
        ])
    };
    argo_app(
        &c,
        &argo_ns,
        &ns,
        resources.clone(),
        ignore(r#".spec.template.spec.containers[] | select(.name == "app") | .image"#),
    );
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());

    // By hand: a label the pointer covers (the labels map is added whole: nothing else is in it),
    // the app's image (the jq expression covers it), replicas written by the field manager the
    // Application trusts, and the sidecar's image (nothing covers it).
    c.kubectl(&["label", "deployment/web", "-n", &ns, "foo/bar=x"]).ok();
    c.kubectl(&["set", "image", "deployment/web", "-n", &ns, "app=nginx:1.28", "sidecar=envoy:2"]).ok();
    c.kubectl(&[
        "patch",
        "deployment/web",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
        "--field-manager",
        "k9s",
    ])
    .ok();
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    let web = object(file, "Deployment", "web").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(web["state"], "changed", "{web:#}");
    let by = format!("ignored by Application {argo_ns}/shop");
    let reason = |path: &str| {
        let f = field(web, path).unwrap_or_else(|| panic!("no {path} in {web:#}"));
        f["reason"].as_str().map(str::to_string)
    };
    let label = reason("metadata.labels").unwrap_or_else(|| panic!("label not ignored: {web:#}"));
    assert!(label.starts_with(&by) && label.contains("jsonPointers /metadata/labels/foo~1bar"), "{label}");
    let image = reason("spec.template.spec.containers[name=app].image")
        .unwrap_or_else(|| panic!("app image not ignored: {web:#}"));
    assert!(image.starts_with(&by) && image.contains("jqPathExpressions"), "{image}");
    let replicas = reason("spec.replicas").unwrap_or_else(|| panic!("replicas not ignored: {web:#}"));
    assert!(replicas.contains("managedFieldsManagers k9s"), "{replicas}");
    assert_eq!(reason("spec.template.spec.containers[name=sidecar].image"), None, "{web:#}");
    let sidecar = field(web, "spec.template.spec.containers[name=sidecar].image").unwrap();
    assert_eq!(sidecar["manager"], "kubectl-set", "{sidecar:#}");
    let text = c.drift(&["application", "shop", "-n", &argo_ns]).stdout();
    assert!(text.contains(&by), "{text}");

    // Argo CD takes the sidecar back: only ignored fields are left, and they are not drift.
    apply_as(&c, "argocd-controller", &deployment("envoy:1"));
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let web = object(&report["files"][0], "Deployment", "web").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(web["state"], "ignored", "{web:#}");

    // Without the Application's rules the same fields are drift (the rules, not luck, hide them).
    argo_app(&c, &argo_ns, &ns, resources.clone(), serde_json::json!([]));
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());

    // A jq expression that does not parse: an error naming the Application and the expression.
    let bad = ".spec.template.spec.containers[] | select(.name ==";
    argo_app(&c, &argo_ns, &ns, resources, ignore(bad));
    let run = c.drift(&["application", "shop", "-n", &argo_ns]);
    assert_eq!(run.code(), 2, "{}\n{}", run.stdout(), run.stderr());
    let out = format!("{}{}", run.stdout(), run.stderr());
    assert!(out.contains(&format!("Application {argo_ns}/shop")) && out.contains(bad), "{out}");
    assert!(!out.contains("panicked"), "{out}");
}

/// Label tracking: with `application.resourceTrackingMethod: label` in `argocd-cm` (in the
/// Application's namespace), a live object labelled `app.kubernetes.io/instance=shop` that is not
/// among the resources is extra, and one with only the tracking annotation is not; the report
/// says where the method came from. `--tracking-method annotation` overrides it (the other way
/// round), and `annotation+label` tracks by the annotation, as Argo CD does.
#[test]
#[ignore = "needs the local control plane"]
fn argo_application_label_tracking() {
    let c = crate::needs_cluster!("gitops-argo-label");
    install_crd(&c, "gitops/application-crd.yaml", "applications.argoproj.io");
    let ns = unique_ns("argolb");
    let argo_ns = unique_ns("argocd");
    c.create_namespace(&ns);
    c.create_namespace(&argo_ns);
    let objects = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "conf", "namespace": ns, "labels": {"app.kubernetes.io/instance": "shop"}},
         "data": {"level": "info"}},
        // Left over from an earlier sync (label tracking).
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "by-label", "namespace": ns, "labels": {"app.kubernetes.io/instance": "shop"}}},
        // Tracked by the annotation only.
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "by-annotation", "namespace": ns,
                      "annotations": {"argocd.argoproj.io/tracking-id": format!("shop:/ConfigMap:{ns}/by-annotation")}}},
        // Another Application's.
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "other", "namespace": ns, "labels": {"app.kubernetes.io/instance": "other"}}}]});
    apply_as(&c, "argocd-controller", &objects.to_string());
    let resources = serde_json::json!([{"version": "v1", "kind": "ConfigMap", "namespace": ns, "name": "conf",
                                        "status": "Synced"}]);
    argo_app(&c, &argo_ns, &ns, resources, serde_json::json!([]));
    let settings = |method: &str| {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", "namespace": argo_ns},
            "data": {"application.resourceTrackingMethod": method}});
        apply_as(&c, "argocd-operator", &cm.to_string());
    };
    let extras = |args: &[&str]| {
        let mut all = vec!["application", "shop", "-n", argo_ns.as_str(), "-o", "json"];
        all.extend_from_slice(args);
        let run = c.drift(&all);
        let report = run.report();
        let file = report["files"][0].clone();
        let mut names: Vec<String> = file["objects"]
            .as_array()
            .unwrap_or_else(|| panic!("{report:#}"))
            .iter()
            .filter(|o| o["state"] == "extra")
            .map(|o| o["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        (run.code(), names, file["gitops"].clone())
    };

    // No argocd-cm: Argo CD's default, the annotation.
    let (code, names, gitops) = extras(&[]);
    assert_eq!((code, names), (1, vec!["by-annotation".to_string()]), "{gitops:#}");
    assert_eq!(gitops["tracking"], "annotation");
    assert!(gitops["trackingFrom"].as_str().unwrap().contains("default"), "{gitops:#}");

    settings("label");
    let (code, names, gitops) = extras(&[]);
    assert_eq!((code, names), (1, vec!["by-label".to_string()]), "{gitops:#}");
    assert_eq!(gitops["tracking"], "label");
    assert_eq!(gitops["trackingFrom"], format!("argocd-cm in {argo_ns}"));
    let text = c.drift(&["application", "shop", "-n", &argo_ns]).stdout();
    assert!(text.contains(&format!("tracking: label (argocd-cm in {argo_ns})")), "{text}");

    let (_, names, gitops) = extras(&["--tracking-method", "annotation"]);
    assert_eq!(names, vec!["by-annotation".to_string()]);
    assert_eq!(gitops["trackingFrom"], "--tracking-method");

    settings("annotation+label");
    let (_, names, gitops) = extras(&[]);
    assert_eq!(names, vec!["by-annotation".to_string()], "{gitops:#}");
    assert_eq!(gitops["tracking"], "annotation+label");

    // A method that is not one: refused before anything is read.
    let run = c.drift(&["application", "shop", "-n", &argo_ns, "--tracking-method", "labels"]);
    assert_eq!(run.code(), 2, "{}", run.stderr());
    assert!(run.stderr().contains("labels") && run.stderr().contains("annotation+label"), "{}", run.stderr());
}

fn object<'a>(file: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    file["objects"].as_array()?.iter().find(|o| o["kind"] == kind && o["name"] == name)
}

/// A real Flux Kustomization (source-controller and kustomize-controller from the test
/// environment, a Git repository on its Git server): clean after Flux applies it; an env var set
/// with `kubectl set env` and a value changed with `kubectl edit` are found with their managers,
/// a labelled object outside the inventory is extra; Flux's forced reconcile takes back the value
/// it sets and the report follows; a deleted inventory object is missing.
#[test]
#[ignore = "needs the local control plane"]
fn flux_kustomization_inventory_by_field_owner() {
    let c = crate::needs_cluster!("gitops-kustomization");
    let ns = unique_ns("ksd");
    c.create_namespace(&ns);
    let files = [
        (
            "app/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  level: info\n".to_string(),
        ),
        (
            "app/deployment.yaml",
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "web", "image": "nginx:1.27.3"}]}}}})
            .to_string(),
        ),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, s)| (*p, s.as_str())).collect();
    let url = crate::flux::git_repo(&ns, &files);
    crate::flux::apply_git_kustomization(&c, &ns, "apps", &url, "./app");
    crate::flux::wait_kustomization_ready(&c, &ns, "apps");

    let run = c.drift(&["kustomization", "apps", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    assert_eq!(file["type"], "flux-kustomization", "{report:#}");
    assert_eq!(file["path"], format!("{ns}/apps"));
    assert_eq!(file["fieldManager"], "kustomize-controller");
    assert_eq!(file["gitops"]["revision"], crate::flux::git_revision(&ns).as_str(), "{file:#}");
    assert_eq!(file["gitops"]["conditions"][0]["type"], "Ready");
    assert_eq!(file["gitops"]["conditions"][0]["status"], "True");
    assert_eq!(report["summary"]["objects"], 2, "{report:#}");

    // By hand: an env var (kubectl set env), a value Flux set (kubectl edit), and an object that
    // carries the Kustomization's labels but is not in its inventory.
    c.kubectl(&["set", "env", "deployment/web", "-n", &ns, "DEBUG=1"]).ok();
    let edit = std::process::Command::new(&c.kubectl)
        .arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .args(["edit", "configmap/conf", "-n", &ns])
        .env("KUBE_EDITOR", "sed -i s/level:\\ info/level:\\ debug/")
        .output()
        .unwrap();
    assert!(edit.status.success(), "kubectl edit: {}", String::from_utf8_lossy(&edit.stderr));
    c.kubectl_stdin(
        &["apply", "-f", "-"],
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n  namespace: {ns}\n  labels:\n    \
             kustomize.toolkit.fluxcd.io/name: apps\n    kustomize.toolkit.fluxcd.io/namespace: {ns}\ndata:\n  a: \"1\"\n"
        ),
    )
    .ok();
    let run = c.drift(&["kustomization", "apps", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report = run.report();
    let file = &report["files"][0];
    let web = object(file, "Deployment", "web").unwrap_or_else(|| panic!("{file:#}"));
    let env = field(web, "spec.template.spec.containers[name=web].env").unwrap_or_else(|| panic!("{web:#}"));
    assert_eq!((env["change"].as_str(), env["manager"].as_str()), (Some("added"), Some("kubectl-set")), "{env:#}");
    let conf = object(file, "ConfigMap", "conf").unwrap_or_else(|| panic!("{file:#}"));
    let level = field(conf, "data.level").unwrap_or_else(|| panic!("{conf:#}"));
    assert_eq!((level["live"].as_str(), level["manager"].as_str()), (Some("debug"), Some("kubectl-edit")), "{level:#}");
    let stray = object(file, "ConfigMap", "stray").unwrap_or_else(|| panic!("{file:#}"));
    assert_eq!(stray["state"], "extra");
    let commands = reconcile_commands(&report);
    assert!(
        commands.iter().any(|c| c.starts_with(&format!("flux reconcile kustomization apps -n {ns} --with-source"))),
        "{commands:#?}"
    );
    assert!(commands.iter().any(|c| c.starts_with("# kubectl delete configmap/stray")), "{commands:#?}");
    let text = c.drift(&["kustomization", "apps", "-n", &ns]).stdout();
    assert!(
        text.contains(&format!("Flux Kustomization {ns}/apps")) && text.contains("flux says: Ready=True"),
        "{text}"
    );

    // Flux's forced reconcile applies Git again, with force: the value it sets comes back.
    crate::flux::force_reconcile(&c, &ns, "apps");
    let live = c.kubectl(&["get", "configmap/conf", "-n", &ns, "-o", "jsonpath={.data.level}"]).ok();
    assert_eq!(live, "info", "Flux did not restore the value it sets");
    let report = c.drift(&["kustomization", "apps", "-n", &ns, "-o", "json"]).report();
    let file = &report["files"][0];
    assert!(object(file, "ConfigMap", "conf").is_none(), "restored by Flux, still reported: {file:#}");
    // kustomize-controller also takes over what kubectl set, and drops what Git does not have:
    // the env var is gone, live and in the report.
    assert!(object(file, "Deployment", "web").is_none(), "{file:#}");
    let env =
        c.kubectl(&["get", "deployment/web", "-n", &ns, "-o", "jsonpath={.spec.template.spec.containers[0].env}"]).ok();
    assert_eq!(env, "", "Flux kept the env var set by hand");
    assert_eq!(object(file, "ConfigMap", "stray").map(|o| o["state"].clone()), Some(Value::from("extra")), "{file:#}");

    // A deleted inventory object is missing (until Flux's next apply).
    c.kubectl(&["delete", "configmap/conf", "-n", &ns]).ok();
    let report = c.drift(&["kustomization", "apps", "-n", &ns, "-o", "json"]).report();
    let conf = object(&report["files"][0], "ConfigMap", "conf").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(conf["state"], "missing");
    // --all lists every Kustomization of the namespace; a name not there is an error naming it.
    let all = c.drift(&["kustomization", "--all", "-n", &ns, "-o", "json"]).report();
    assert_eq!(all["files"].as_array().map(Vec::len), Some(1), "{all:#}");
    let missing = c.drift(&["kustomization", "nope", "-n", &ns]);
    assert_eq!(missing.code(), 2);
    assert!(missing.stdout().contains("Kustomization") && missing.stdout().contains("nope"), "{}", missing.stdout());
    c.kubectl(&["delete", "kustomization/apps", "gitrepository/apps", "-n", &ns, "--wait=false"]).ok();
}
