//! Edit-time warnings (`kubectl drift policy`) on the real API server: the printed
//! ValidatingAdmissionPolicies applied, a person's `kubectl scale`, `set env`, `edit` and `patch` of a
//! Helm-managed Deployment each get the warning naming the release (and an audit annotation), while
//! Helm 3's and Helm 4's upgrade and rollback by the same user, the HPA's scale, Flux's
//! kustomize-controller and an object no release manages get none, and nothing is ever denied.
//!
//! The policies are cluster-scoped: each test names them after its namespace and binds them to
//! that namespace only (`--namespace-selector`), so tests running beside it see no warnings. A
//! control policy (warn on every update, same namespace) proves each silent client would have
//! shown a warning if there had been one.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, Run, unique_ns};

/// Deletes what a test applied (cluster-scoped policies and bindings) when it ends, passed or not.
struct Applied<'a> {
    c: &'a Cluster,
    yaml: String,
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        let _ = self.c.kubectl_stdin(&["delete", "--ignore-not-found", "--wait=false", "-f", "-"], &self.yaml);
    }
}

/// `kubectl drift policy ARGS` for namespace `ns` only, named `name`; checked by the API server
/// (`--dry-run=server`), then applied.
fn apply_policy<'a>(c: &'a Cluster, ns: &str, name: &str, args: &[&str]) -> Applied<'a> {
    let selector = format!("kubernetes.io/metadata.name={ns}");
    let mut full = vec!["policy", "--name", name, "--namespace-selector", &selector];
    full.extend(args);
    let yaml = c.drift(&full).ok();
    c.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &yaml).ok();
    c.kubectl_stdin(&["apply", "-f", "-"], &yaml).ok();
    Applied { c, yaml }
}

/// A policy that warns on every update of a Deployment or StatefulSet (and their scale) in `ns`
/// whose request `condition` (CEL) holds: a client that shows it shows warnings.
fn apply_control<'a>(c: &'a Cluster, ns: &str, name: &str, condition: &str) -> Applied<'a> {
    let yaml = format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: {name}}}
spec:
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: ["*"]
      resources: [deployments, deployments/scale, statefulsets, statefulsets/scale]
      operations: [UPDATE]
  matchConditions: [{{name: only, expression: "{condition}"}}]
  validations: [{{expression: "false", messageExpression: "'control-{ns} ' + request.userInfo.username"}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: {name}}}
spec:
  policyName: {name}
  validationActions: [Warn]
  matchResources: {{namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {ns}}}}}}}
"#
    );
    c.kubectl_stdin(&["apply", "-f", "-"], &yaml).ok();
    Applied { c, yaml }
}

/// The warning lines of our policies (named `name`, `name-scale-...`) in `text`.
fn ours(text: &str, name: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.contains(&format!("ValidatingAdmissionPolicy '{name}'"))
                || l.contains(&format!("ValidatingAdmissionPolicy '{name}-scale-"))
        })
        .map(str::to_string)
        .collect()
}

fn output(run: &Run) -> String {
    format!("{}\n{}", run.stdout(), run.stderr())
}

/// `run` succeeded (nothing denied) and printed our warning, naming `owner` and `see`.
fn warned(run: &Run, name: &str, owner: &str, see: &str) {
    run.ok();
    let all = output(run);
    let lines = ours(&all, name);
    assert!(
        lines.len() == 1 && lines[0].contains(owner) && lines[0].contains(see),
        "{}: expected one warning naming {owner:?} and {see:?}:\n{all}",
        run.what
    );
}

/// `run` succeeded, showed the control policy's warning (so it shows warnings) and none of ours.
fn silent(run: &Run, name: &str, ns: &str) {
    run.ok();
    let all = output(run);
    assert!(ours(&all, name).is_empty(), "{}: warned of drift:\n{all}", run.what);
    assert!(all.contains(&format!("control-{ns}")), "{}: the control warning is not shown:\n{all}", run.what);
}

/// Wait until the policies are in force (the API server loads them within seconds; a scale
/// policy also waits for its parameters, the namespace's Deployments or StatefulSets): patch each
/// of `objects` by hand, and scale it to its current replicas, until ours and the control's
/// (`control`: true when one is applied) warnings show for each, as kubeconfig context `context`.
/// Returns the first patch that showed ours.
fn wait_in_force(c: &Cluster, context: &str, ns: &str, objects: &[&str], name: &str, control: bool) -> Run {
    let deadline = Instant::now() + Duration::from_secs(60);
    let shown = |run: &Run| {
        let all = output(run);
        !ours(&all, name).is_empty() && (!control || all.contains(&format!("control-{ns}")))
    };
    let mut first = None;
    for (i, what) in objects.iter().enumerate() {
        loop {
            let patch = format!(r#"{{"metadata":{{"annotations":{{"drift-e2e/hand":"{i}"}}}}}}"#);
            let run = c.kubectl(&["--context", context, "-n", ns, "patch", what, "-p", &patch]);
            let replicas = c.kubectl(&["-n", ns, "get", what, "-o", "jsonpath={.spec.replicas}"]).ok();
            let scale = c.kubectl(&["--context", context, "-n", ns, "scale", what, &format!("--replicas={replicas}")]);
            if shown(&run) && shown(&scale) {
                first.get_or_insert(run);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the policies are not in force after 60 s:\n{}\n{}",
                output(&run),
                output(&scale)
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    first.expect("at least one object")
}

/// A Deployment `web` and a StatefulSet `db` (Helm adds its label and annotations itself).
const CHART: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: {{ .Values.replicas | default 1 }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "registry.example/web:{{ .Values.tag | default "1" }}"}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
"#;

#[ignore = "needs the local control plane"]
#[test]
fn hand_edits_of_a_helm_release_warn_and_helm_and_the_hpa_do_not() {
    let c = crate::needs_cluster!("hand_edits_of_a_helm_release_warn_and_helm_and_the_hpa_do_not");
    // Every request here is the audited user's (the audit log records only drift-audit): the
    // zero-writes tests read that user's requests in a window, so they and this run one at a time.
    let _alone = crate::audit::one_at_a_time();
    let ns = unique_ns("policy");
    let name = format!("drift-e2e-{ns}");
    c.create_namespace(&ns);
    let chart = c.one_template_chart("web", CHART);
    let chart = chart.to_str().unwrap();
    let helm = |h: Helm, args: &[&str]| {
        let mut full = vec!["--kube-context", "audit", "-n", &ns];
        full.extend(args);
        c.helm(h, &full)
    };
    helm(Helm::V4, &["install", "shop", chart]).ok();
    let kubectl = |args: &[&str]| {
        let mut full = vec!["--context", "audit", "-n", &ns];
        full.extend(args);
        c.kubectl(&full)
    };
    kubectl(&["create", "deployment", "plain", "--image=registry.example/plain:1"]).ok();

    let _policy = apply_policy(&c, &ns, &name, &[]);
    let _control = apply_control(&c, &ns, &format!("{name}-control"), "true");
    let owner = format!(
        "belongs to Helm release shop (namespace {ns}): this change is drift; the next helm upgrade or rollback reverts it"
    );
    let see = format!("See: kubectl drift release shop -n {ns}");
    let web = format!("Deployment {ns}/web {owner}");

    // A person's edits, each warned of (after waiting for the policy to load: its patches go
    // before the audit log's window).
    warned(&wait_in_force(&c, "audit", &ns, &["deploy/web", "statefulset/db"], &name, true), &name, &web, &see);
    let offset = crate::audit::log_len();
    warned(&kubectl(&["patch", "deploy/web", "--type=merge", "-p", r#"{"spec":{"replicas":2}}"#]), &name, &web, &see);
    warned(&kubectl(&["scale", "deploy/web", "--replicas=3"]), &name, &web, &see);
    warned(
        &kubectl(&["scale", "statefulset/db", "--replicas=2"]),
        &name,
        &format!("StatefulSet {ns}/db {owner}"),
        &see,
    );
    warned(&kubectl(&["set", "env", "deploy/web", "DEBUG=1"]), &name, &web, &see);
    let editor = c.scratch.join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/^  replicas: [0-9]*/  replicas: 4/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let edit = c.shell(
        Helm::V4,
        &format!("kubectl --context audit -n {ns} edit deploy/web"),
        &[("EDITOR", editor.to_str().unwrap()), ("KUBE_EDITOR", editor.to_str().unwrap())],
    );
    warned(&edit, &name, &web, &see);
    assert_eq!(kubectl(&["get", "deploy/web", "-o", "jsonpath={.spec.replicas}"]).ok(), "4", "the edit landed");

    // The owner's own writes, by the same user: Helm 3 and Helm 4, upgrade and rollback.
    for (i, h) in [Helm::V3, Helm::V4].into_iter().enumerate() {
        let tag = format!("tag={}", i + 2);
        silent(&helm(h, &["upgrade", "shop", chart, "--set", &tag]), &name, &ns);
        silent(&helm(h, &["rollback", "shop"]), &name, &ns);
    }

    // The HPA's scale: no metrics here, and the test environment's controller manager runs as
    // admin, so its write is simulated as the HPA's own user does it (GET and PUT of the scale
    // subresource, no field manager), through impersonation.
    let hpa = "system:serviceaccount:kube-system:horizontal-pod-autoscaler";
    let scale_path = format!("/apis/apps/v1/namespaces/{ns}/deployments/web/scale");
    // (the deployment controller writes status meanwhile: a conflict is retried, as the HPA does)
    let file = c.scratch.join("scale.json");
    let put = (0..10)
        .map(|_| {
            let got = kubectl(&["--as", hpa, "get", "--raw", &scale_path]).ok();
            let mut scale: Value = serde_json::from_str(&got).unwrap();
            scale["spec"]["replicas"] = 5.into();
            std::fs::write(&file, scale.to_string()).unwrap();
            kubectl(&["--as", hpa, "replace", "--raw", &scale_path, "-f", file.to_str().unwrap()])
        })
        .find(|run| !run.stderr().contains("(Conflict)"))
        .expect("the HPA's scale conflicted 10 times in a row");
    silent(&put, &name, &ns);
    assert_eq!(kubectl(&["get", "deploy/web", "-o", "jsonpath={.spec.replicas}"]).ok(), "5", "the HPA's scale landed");

    // An object no release manages.
    silent(&kubectl(&["scale", "deploy/plain", "--replicas=2"]), &name, &ns);
    silent(&kubectl(&["set", "env", "deploy/plain", "DEBUG=1"]), &name, &ns);

    // The audit log: each hand edit of web or db carries the annotation, nothing else does.
    let (events, _) = crate::audit::events_since(offset);
    let ours_key = |e: &Value| {
        e["annotations"].as_object().and_then(|a| {
            a.iter().find(|(k, _)| k.starts_with(name.as_str()) && k.ends_with("/hand-edit")).map(|(_, v)| v.clone())
        })
    };
    let writes: Vec<&Value> = events
        .iter()
        .filter(|e| e["objectRef"]["namespace"] == ns.as_str())
        .filter(|e| matches!(e["verb"].as_str(), Some("update" | "patch")))
        .filter(|e| matches!(e["objectRef"]["resource"].as_str(), Some("deployments" | "statefulsets")))
        .collect();
    let (mut annotated, mut by_hand) = (0, 0);
    for e in &writes {
        let agent = e["userAgent"].as_str().unwrap_or_default();
        let hand =
            agent.starts_with("kubectl/") && e.get("impersonatedUser").is_none() && e["objectRef"]["name"] != "plain";
        let note = ours_key(e);
        let what = format!("{} {} {:?} {agent}", e["verb"], e["objectRef"], e.get("impersonatedUser"));
        if hand {
            by_hand += 1;
            let note = note.unwrap_or_else(|| panic!("a hand edit without the audit annotation: {what}"));
            assert!(note.as_str().is_some_and(|n| n.contains("Helm release shop")), "{what}: {note}");
        } else {
            assert!(note.is_none(), "not a hand edit, yet annotated: {what}: {note:?}");
        }
        annotated += usize::from(ours_key(e).is_some());
    }
    assert!(by_hand >= 5, "the audit log shows the five hand edits: {by_hand} of {} writes", writes.len());
    assert_eq!(annotated, by_hand);
    assert!(
        writes.iter().any(|e| e["userAgent"].as_str().unwrap_or_default().starts_with("Helm/3")),
        "Helm 3's writes"
    );
    assert!(
        writes.iter().any(|e| e["userAgent"].as_str().unwrap_or_default().starts_with("Helm/4")),
        "Helm 4's writes"
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn flux_and_argo_cd_writes_do_not_warn_and_hand_edits_of_their_objects_do() {
    use crate::flux::{apply_git_kustomization, force_reconcile, git_repo, wait_kustomization_ready};
    let c = crate::needs_cluster!("flux_and_argo_cd_writes_do_not_warn_and_hand_edits_of_their_objects_do");
    let ns = unique_ns("policy-flux");
    let name = format!("drift-e2e-{ns}");
    c.create_namespace(&ns);
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: fluxweb}\nspec:\n  replicas: 1\n  \
                      selector: {matchLabels: {app: fluxweb}}\n  template:\n    metadata: {labels: {app: fluxweb}}\n    \
                      spec: {containers: [{name: web, image: 'registry.example/web:1'}]}\n";
    let url = git_repo(&ns, &[("app/deployment.yaml", deployment)]);
    apply_git_kustomization(&c, &ns, "apps", &url, "./app");
    wait_kustomization_ready(&c, &ns, "apps");

    let _policy = apply_policy(&c, &ns, &name, &["--for", "helm,flux,argocd"]);
    // The control warns only on kustomize-controller's writes: its log shows them.
    let _control =
        apply_control(&c, &ns, &format!("{name}-control"), "request.options.fieldManager == 'kustomize-controller'");
    // The control is in force before Flux writes: a dry run under Flux's field manager shows it.
    // (Our policy's wait below does not tell: admin's writes are not the control's.)
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let probe = c.kubectl(&[
            "-n",
            &ns,
            "patch",
            "deploy/fluxweb",
            "--dry-run=server",
            "--field-manager=kustomize-controller",
            "-p",
            r#"{"metadata":{"annotations":{"drift-e2e/probe":"1"}}}"#,
        ]);
        if output(&probe).contains(&format!("control-{ns}")) {
            break;
        }
        assert!(Instant::now() < deadline, "the control is not in force after 60 s:\n{}", output(&probe));
        std::thread::sleep(Duration::from_millis(300));
    }
    let owner = format!(
        "Deployment {ns}/fluxweb belongs to Flux Kustomization {ns}/apps: this change is drift; Flux reverts what it applies at its next reconcile"
    );
    let see = format!("See: kubectl drift kustomization apps -n {ns}");
    warned(&wait_in_force(&c, "admin", &ns, &["deploy/fluxweb"], &name, false), &name, &owner, &see);
    warned(
        &c.kubectl(&["-n", &ns, "set", "image", "deploy/fluxweb", "web=registry.example/web:hand"]),
        &name,
        &owner,
        &see,
    );

    // Flux's kustomize-controller (the real one) reverts the edit: no warning of ours in its log,
    // the control's is there.
    let log = std::path::Path::new(&std::env::var("DRIFT_ENV_DIR").unwrap()).join("logs/kustomize-controller.log");
    let before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) as usize;
    force_reconcile(&c, &ns, "apps");
    let image =
        c.kubectl(&["-n", &ns, "get", "deploy/fluxweb", "-o", "jsonpath={.spec.template.spec.containers[0].image}"]);
    assert_eq!(image.ok(), "registry.example/web:1", "Flux reverted the hand edit");
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap()[before..]).into_owned();
        if text.contains(&format!("control-{ns}")) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(text.contains(&format!("control-{ns}")), "kustomize-controller shows API warnings in its log:\n{text}");
    assert!(ours(&text, &name).is_empty(), "kustomize-controller was warned of drift:\n{text}");

    // Argo CD (not in the test environment): its sync's field manager, then a person's patch.
    let tracked = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argo\n  namespace: {ns}\n  annotations:\n    \
         argocd.argoproj.io/tracking-id: 'shop:/ConfigMap:{ns}/argo'\ndata: {{a: '1'}}\n"
    );
    c.kubectl_stdin(&["apply", "--server-side", "--field-manager=argocd-controller", "-f", "-"], &tracked).ok();
    let sync = c.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=argocd-controller", "-f", "-"],
        &tracked.replace("a: '1'", "a: '2'"),
    );
    sync.ok();
    assert!(ours(&output(&sync), &name).is_empty(), "Argo CD's sync was warned of drift:\n{}", output(&sync));
    warned(
        &c.kubectl(&["-n", &ns, "patch", "configmap/argo", "-p", r#"{"data":{"a":"hand"}}"#]),
        &name,
        &format!("ConfigMap {ns}/argo belongs to Argo CD Application shop: this change is drift"),
        "See: kubectl drift application shop",
    );
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn every_variant_of_the_policy_and_deploy_policy_pass_the_api_servers_validation() {
    let c = crate::needs_cluster!("every_variant_of_the_policy_and_deploy_policy_pass_the_api_servers_validation");
    let variants: &[&[&str]] = &[
        &[],
        &["--for", "helm", "--action", "warn"],
        &["--for", "flux,argocd-label", "--action", "audit"],
        &["--for", "helm,flux,argocd,argocd-label", "--namespace-selector", "team=shop,env notin (dev),!legacy"],
    ];
    for args in variants {
        let mut full = vec!["policy", "--name", "drift-e2e-variant"];
        full.extend(*args);
        let yaml = c.drift(&full).ok();
        let run = c.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &yaml);
        run.ok();
        assert!(!run.stderr().contains("Warning"), "{args:?}: {}", run.stderr());
    }
    let deploy = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/policy");
    let run = c.kubectl(&["apply", "--dry-run=server", "-k", deploy]);
    assert_eq!(run.ok().matches("(server dry run)").count(), 6, "{}", run.stdout());
}
