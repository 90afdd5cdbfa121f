//! What a real cluster does to objects after Helm applied them, on the environment's first cluster
//! (docs/test-env.md, "Nodes, pods and controllers"): kube-scheduler and KWOK run the pods,
//! cert-manager issues certificates and its cainjector writes `caBundle`, the controller manager's
//! aggregation controller fills aggregated ClusterRoles. None of it is drift; a person's change
//! next to it still is.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::blanks::fields;
use crate::common::{Cluster, Helm, unique_ns};
use crate::release::wait_until;

/// `release NAME -n NS -o json`: exit code and the release report.
fn release(c: &Cluster, name: &str, ns: &str) -> (i32, Value) {
    let run = c.drift(&["release", name, "-n", ns, "-o", "json"]);
    assert!(run.code() == 0 || run.code() == 1, "release {name}: {}", run.stderr());
    (run.code(), run.report()["releases"][0].clone())
}

/// The release is clean (exit 0, status clean) after `what`.
fn assert_clean(c: &Cluster, name: &str, ns: &str, what: &str) {
    let (code, rel) = release(c, name, ns);
    assert_eq!((code, rel["status"].as_str()), (0, Some("clean")), "clean after {what}: {rel:#}");
}

fn get_json(c: &Cluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&c.kubectl(&all).ok()).unwrap()
}

/// A chart with a self-signed Issuer, a CA Certificate and two ValidatingWebhookConfigurations:
/// `NS-injected` asks cainjector for the CA (`cert-manager.io/inject-ca-from`) and sets no
/// `caBundle`, as cert-manager's docs say; `NS-pinned` carries its own `caBundle` from a value.
/// The webhooks match a resource nothing creates, so the API server never calls them.
fn cert_chart(c: &Cluster, ns: &str) -> std::path::PathBuf {
    let hook = |name: &str, extra_meta: &str, ca: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: {{{{ .Release.Namespace }}}}-{name}\n{extra_meta}webhooks:\n- name: {name}.drift-e2e.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n  clientConfig:\n{ca}    service: {{namespace: {{{{ .Release.Namespace }}}}, name: webhook, path: /validate}}\n  rules:\n  - {{apiGroups: [drift-e2e.example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}}\n"
        )
    };
    let template = [
        "apiVersion: cert-manager.io/v1\nkind: Issuer\nmetadata:\n  name: selfsigned\nspec:\n  selfSigned: {}\n".to_string(),
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: webhook-ca\nspec:\n  isCA: true\n  commonName: drift-e2e-webhook-ca\n  secretName: webhook-ca-tls\n  privateKey: {algorithm: ECDSA, size: 256}\n  issuerRef: {name: selfsigned, kind: Issuer, group: cert-manager.io}\n".to_string(),
        hook("injected", "  annotations:\n    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/webhook-ca\n", ""),
        hook("pinned", "", "    caBundle: {{ .Values.pinnedCA | quote }}\n"),
    ]
    .join("---\n");
    let chart = c.one_template_chart(&format!("certs-{ns}"), &template);
    std::fs::write(chart.join("values.yaml"), format!("pinnedCA: {}\n", pem_b64("pinned-ca-1"))).unwrap();
    chart
}

/// A base64 caBundle made of a throwaway PEM-shaped text (the API server does not parse it).
fn pem_b64(tag: &str) -> String {
    let pem = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", hex_of(tag));
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn cert_manager_case(helm: Helm, prefix: &str) {
    let c = crate::needs_cluster!(prefix);
    let ns = unique_ns(prefix);
    c.create_namespace(&ns);
    let chart = cert_chart(&c, &ns);
    c.helm(helm, &["install", "certs", chart.to_str().unwrap(), "-n", &ns]).ok();
    let injected = format!("{ns}-injected");
    let pinned = format!("{ns}-pinned");

    // cert-manager issues the CA into its Secret, and cainjector copies it into the webhook.
    let mut ca = String::new();
    wait_until("the Certificate's Secret with ca.crt", Duration::from_secs(60), || {
        let s = c.kubectl(&["-n", &ns, "get", "secret", "webhook-ca-tls", "-o", "jsonpath={.data.ca\\.crt}"]);
        ca = s.stdout();
        s.code() == 0 && !ca.is_empty()
    });
    wait_until("cainjector's caBundle", Duration::from_secs(60), || {
        let h = get_json(&c, &["get", "validatingwebhookconfiguration", &injected]);
        h.pointer("/webhooks/0/clientConfig/caBundle").and_then(Value::as_str) == Some(ca.as_str())
    });
    let hook = get_json(&c, &["get", "validatingwebhookconfiguration", &injected, "--show-managed-fields"]);
    let managers: Vec<&str> =
        hook["metadata"]["managedFields"].as_array().unwrap().iter().filter_map(|m| m["manager"].as_str()).collect();
    assert!(managers.contains(&"cert-manager-cainjector"), "caBundle written by cainjector: {managers:?}");
    let secret = get_json(&c, &["-n", &ns, "get", "secret", "webhook-ca-tls"]);
    assert_eq!(secret["metadata"]["annotations"]["cert-manager.io/certificate-name"], "webhook-ca", "{secret:#}");

    // The injected caBundle, the Certificate's and Issuer's status: nothing a person did.
    assert_clean(&c, "certs", &ns, "cert-manager and cainjector did their work");

    // A person replacing the caBundle the chart sets is drift, next to the injected one that
    // is not.
    let other = pem_b64("hand-made-ca");
    let patch = format!(r#"[{{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"{other}"}}]"#);
    c.kubectl(&["patch", "validatingwebhookconfiguration", &pinned, "--type=json", "-p", &patch]).ok();
    let (code, rel) = release(&c, "certs", &ns);
    assert_eq!(code, 1, "a hand-made caBundle is drift: {rel:#}");
    let hits: Vec<&Value> = fields(&rel, "ValidatingWebhookConfiguration", &pinned)
        .into_iter()
        .filter(|f| f["path"].as_str().is_some_and(|p| p.contains("caBundle")) && f["reason"].is_null())
        .collect();
    assert_eq!(hits.len(), 1, "one caBundle field drifted: {rel:#}");
    assert_eq!(hits[0]["manager"], "kubectl-patch", "{:#}", hits[0]);
    assert!(
        fields(&rel, "ValidatingWebhookConfiguration", &injected).iter().all(|f| !f["reason"].is_null()),
        "the injected webhook stays clean: {rel:#}"
    );
    // The secret-free promise holds for certificates too: no key material in the report.
    let text = c.drift(&["release", "certs", "-n", &ns]).stdout();
    let key = c.kubectl(&["-n", &ns, "get", "secret", "webhook-ca-tls", "-o", "jsonpath={.data.tls\\.key}"]).ok();
    assert!(!key.is_empty() && !text.contains(&key), "the private key never shows");

    c.helm(helm, &["uninstall", "certs", "-n", &ns]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn cert_manager_injection_is_not_drift_helm3() {
    cert_manager_case(Helm::V3, "runtime-cm3");
}

#[ignore = "needs the local control plane"]
#[test]
fn cert_manager_injection_is_not_drift_helm4() {
    cert_manager_case(Helm::V4, "runtime-cm4");
}

/// An aggregated ClusterRole in a chart (`aggregationRule`, with `rules: []` as charts write it,
/// or no rules at all) and a ClusterRole it aggregates: after the controller manager's
/// clusterrole-aggregation controller fills the rules, the release is clean.
fn aggregated_case(helm: Helm, prefix: &str) {
    let c = crate::needs_cluster!(prefix);
    let ns = unique_ns(prefix);
    c.create_namespace(&ns);
    let label = format!("drift-e2e.example.com/aggregate-to-{ns}");
    let template = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-view-empty\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {{\"{label}\": \"true\"}}\nrules: []\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-view-unset\naggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {{\"{label}\": \"true\"}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-widgets\n  labels: {{\"{label}\": \"true\"}}\nrules:\n- apiGroups: [drift-e2e.example.com]\n  resources: [widgets]\n  verbs: [get, list, watch]\n"
    );
    let chart = c.one_template_chart(&format!("agg-{ns}"), &template);
    c.helm(helm, &["install", "agg", chart.to_str().unwrap(), "-n", &ns]).ok();
    for role in ["empty", "unset"] {
        let name = format!("{ns}-view-{role}");
        wait_until(&format!("the aggregation controller filling {name}"), Duration::from_secs(60), || {
            let r = get_json(&c, &["get", "clusterrole", &name]);
            r["rules"].as_array().is_some_and(|a| a.iter().any(|rule| rule["resources"][0] == "widgets"))
        });
    }
    assert_clean(&c, "agg", &ns, "the aggregation controller filled the rules");

    // A person widening the aggregated role's source is drift.
    c.kubectl(&[
        "patch",
        "clusterrole",
        &format!("{ns}-widgets"),
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
    ])
    .ok();
    let (code, rel) = release(&c, "agg", &ns);
    assert_eq!(code, 1, "{rel:#}");
    let hits = fields(&rel, "ClusterRole", &format!("{ns}-widgets"));
    assert!(hits.iter().any(|f| f["manager"] == "kubectl-patch" && f["reason"].is_null()), "{rel:#}");

    c.helm(helm, &["uninstall", "agg", "-n", &ns]).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn aggregated_cluster_role_is_not_drift_helm3() {
    aggregated_case(Helm::V3, "runtime-agg3");
}

#[ignore = "needs the local control plane"]
#[test]
fn aggregated_cluster_role_is_not_drift_helm4() {
    aggregated_case(Helm::V4, "runtime-agg4");
}

/// The chart's Deployment runs on the KWOK nodes: scheduled, Running, Available, its pods'
/// container ids filled; the release is clean with the status, the pod-template hash and the
/// ReplicaSet the controllers wrote.
#[ignore = "needs the local control plane"]
#[test]
fn running_workloads_are_not_drift() {
    let c = crate::needs_cluster!("running_workloads_are_not_drift");
    let ns = unique_ns("runtime-run");
    c.create_namespace(&ns);
    let template = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.example/web:1.0\n        ports: [{containerPort: 8080}]\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports: [{port: 80, targetPort: 8080}]\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: migrate, image: registry.example/migrate:1.0}]\n";
    let chart = c.one_template_chart(&format!("run-{ns}"), template);
    c.helm(Helm::V4, &["install", "run", chart.to_str().unwrap(), "-n", &ns, "--wait", "--timeout", "120s"]).ok();
    wait_until("the Deployment Available and the Job complete", Duration::from_secs(90), || {
        let d = get_json(&c, &["-n", &ns, "get", "deployment", "web"]);
        let j = get_json(&c, &["-n", &ns, "get", "job", "migrate"]);
        d["status"]["availableReplicas"] == 3 && j["status"]["succeeded"] == 1
    });
    let pods = get_json(&c, &["-n", &ns, "get", "pods", "-l", "app=web"]);
    for p in pods["items"].as_array().unwrap() {
        assert!(p["spec"]["nodeName"].as_str().is_some_and(|n| n.starts_with("kwok-node-")), "{p:#}");
        assert_eq!(p["status"]["phase"], "Running", "{p:#}");
        let id = p["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or("");
        assert!(id.starts_with("containerd://"), "{p:#}");
    }
    assert_clean(&c, "run", &ns, "the workloads ran");
    // kubectl scale on a running Deployment is still found.
    c.kubectl(&["-n", &ns, "scale", "deployment", "web", "--replicas=5"]).ok();
    let (code, rel) = release(&c, "run", &ns);
    assert_eq!(code, 1, "{rel:#}");
    assert!(
        fields(&rel, "Deployment", "web")
            .iter()
            .any(|f| f["path"] == "spec.replicas" && f["live"] == 5 && f["reason"].is_null()),
        "{rel:#}"
    );
}
