//! Mutations at admission are not hand edits. A real mutating admission webhook (an HTTPS server
//! on 127.0.0.1 in this process, registered with `clientConfig.url`) and a LimitRange change what
//! Helm 3 and Helm 4 install; the API server records no field manager for what they add, and
//! release drift shows those items as ignored, while a person's edit next to them is drift.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::blanks::{fields, install_into, release_report};
use crate::common::{Cluster, Helm, unique_ns};
use crate::release::wait_until;

/// Run openssl with `args` (split on spaces) in `dir`, failing the test with its stderr.
fn openssl(dir: &Path, args: &str) {
    let out =
        Command::new("openssl").current_dir(dir).args(args.split_whitespace()).output().expect("openssl is needed");
    assert!(out.status.success(), "openssl {args}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and a serving certificate for 127.0.0.1; returns (CA PEM, cert DER, PKCS#8 key DER).
fn make_certs(dir: &Path) -> (String, Vec<u8>, Vec<u8>) {
    std::fs::create_dir_all(dir).unwrap();
    openssl(
        dir,
        "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=drift-e2e-webhook-ca -keyout ca.key -out ca.crt \
         -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign",
    );
    openssl(dir, "req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout tls.key -out tls.csr");
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n").unwrap();
    openssl(
        dir,
        "x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out tls.crt -extfile ext.cnf",
    );
    openssl(dir, "x509 -in tls.crt -outform DER -out tls.der");
    openssl(dir, "pkcs8 -topk8 -nocrypt -in tls.key -outform DER -out tls.key.der");
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    (String::from_utf8(read("ca.crt")).unwrap(), read("tls.der"), read("tls.key.der"))
}

/// The JSON patch the webhook answers for a Deployment: a label, a pod-template annotation and an
/// imagePullSecret, each added once.
fn mutation(obj: &Value) -> Vec<Value> {
    let mut ops = Vec::new();
    if obj.pointer("/metadata/labels/injected-by").is_none() {
        if obj.pointer("/metadata/labels").is_some() {
            ops.push(json!({"op": "add", "path": "/metadata/labels/injected-by", "value": "webhook"}));
        } else {
            ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {"injected-by": "webhook"}}));
        }
    }
    if obj.pointer("/spec/template/metadata/annotations").is_some() {
        ops.push(json!({"op": "add", "path": "/spec/template/metadata/annotations/webhook.example.com~1injected", "value": "true"}));
    }
    let secrets = obj.pointer("/spec/template/spec/imagePullSecrets").and_then(Value::as_array);
    match secrets {
        Some(list) if list.iter().any(|s| s["name"] == "injected-pull") => {}
        Some(_) => ops.push(
            json!({"op": "add", "path": "/spec/template/spec/imagePullSecrets/-", "value": {"name": "injected-pull"}}),
        ),
        None => ops.push(
            json!({"op": "add", "path": "/spec/template/spec/imagePullSecrets", "value": [{"name": "injected-pull"}]}),
        ),
    }
    ops
}

/// A webhook's answer to an object: the JSON patch operations to apply.
type Mutation = fn(&Value) -> Vec<Value>;

/// Serve AdmissionReview requests on one TLS connection (HTTP/1.1, keep-alive) until it closes.
fn serve(stream: TcpStream, config: Arc<rustls::ServerConfig>, mutation: Mutation) {
    let conn = rustls::ServerConnection::new(config).unwrap();
    let mut reader = BufReader::new(rustls::StreamOwned::new(conn, stream));
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let patch = serde_json::to_vec(&mutation(&review["request"]["object"])).unwrap();
        let answer = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
            "uid": review["request"]["uid"], "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch)}})
        .to_string();
        let head =
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", answer.len());
        let out = reader.get_mut();
        if out
            .write_all(head.as_bytes())
            .and_then(|_| out.write_all(answer.as_bytes()))
            .and_then(|_| out.flush())
            .is_err()
        {
            return;
        }
    }
}

/// Start the webhook server answering with `mutation`; returns its port and CA (PEM). It lives
/// until the test process ends.
fn start_webhook(dir: &Path, mutation: Mutation) -> (u16, String) {
    let (ca, cert, key) = make_certs(dir);
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(cert)],
            rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(key)),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || serve(stream, config, mutation));
        }
    });
    (port, ca)
}

/// Deletes the (cluster-scoped) webhook configuration when the test ends, passed or failed.
struct WebhookConfig<'a> {
    c: &'a Cluster,
    name: String,
}

impl Drop for WebhookConfig<'_> {
    fn drop(&mut self) {
        self.c.kubectl(&["delete", "mutatingwebhookconfiguration", &self.name, "--ignore-not-found"]);
    }
}

/// Fields of the live object's managedFields entries that mention `needle`, with their managers.
fn managers_mentioning(live: &Value, needle: &str) -> Vec<String> {
    live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"].to_string().contains(needle))
        .map(|e| e["manager"].as_str().unwrap_or("").to_string())
        .collect()
}

fn get_json(c: &Cluster, ns: &str, what: &str) -> Value {
    serde_json::from_str(&c.kubectl(&["-n", ns, "get", what, "-o", "json", "--show-managed-fields"]).ok()).unwrap()
}

#[ignore = "needs the local control plane"]
#[test]
fn mutating_webhook_additions_are_not_hand_edits() {
    let c = crate::needs_cluster!("mutating_webhook_additions_are_not_hand_edits");
    let (port, ca) = start_webhook(&c.scratch.join("webhook"), mutation);
    let namespaces = [unique_ns("webhook"), unique_ns("webhook")];
    let name = format!("drift-e2e-{}", namespaces[0]);
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": "inject.drift-e2e.example.com",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/mutate"),
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca)},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]},
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail", "timeoutSeconds": 5,
            "reinvocationPolicy": "Never"}]});
    c.kubectl_stdin(&["apply", "-f", "-"], &config.to_string()).ok();
    let _guard = WebhookConfig { c: &c, name };
    for ns in &namespaces {
        c.create_namespace(ns);
    }
    // The API server picks the configuration up asynchronously: wait until a dry run is mutated.
    wait_until("the webhook to mutate deployments", Duration::from_secs(60), || {
        c.kubectl(&[
            "-n",
            &namespaces[0],
            "create",
            "deployment",
            "probe",
            "--image=registry.example/probe:1",
            "--dry-run=server",
            "-o",
            "jsonpath={.metadata.labels.injected-by}",
        ])
        .stdout()
            == "webhook"
    });

    for (helm, ns) in [Helm::V3, Helm::V4].into_iter().zip(&namespaces) {
        install_into(&c, helm, "admission", ns);
        let live = get_json(&c, ns, "deploy/blanks-admitted");
        assert_eq!(live["metadata"]["labels"]["injected-by"], "webhook", "{helm:?}: not mutated: {live:#}");
        let pulls = live["spec"]["template"]["spec"]["imagePullSecrets"].to_string();
        assert!(pulls.contains("chart-pull") && pulls.contains("injected-pull"), "{helm:?}: {pulls}");
        // The fact the classification rests on: no field manager owns what the webhook added.
        for needle in ["injected-by", "injected-pull", "webhook.example.com"] {
            assert_eq!(managers_mentioning(&live, needle), Vec::<String>::new(), "{helm:?}: {needle} is owned");
        }
        assert_eq!(managers_mentioning(&live, "chart-pull"), vec!["helm"], "{helm:?}");

        let (code, rel) = release_report(&c, ns);
        assert_eq!(code, 0, "{helm:?}: webhook additions are not drift: {rel:#}");
        let injected = fields(&rel, "Deployment", "blanks-admitted");
        let f = injected
            .iter()
            .find(|f| f["path"] == "spec.template.spec.imagePullSecrets[name=injected-pull]")
            .unwrap_or_else(|| panic!("{helm:?}: the injected item is not shown: {rel:#}"));
        assert!(f["reason"].as_str().unwrap().contains("admission"), "{f}");
        let text = c.drift(&["release", "blanks", "-n", ns, "--color", "never"]);
        assert!(text.stdout().contains("admission"), "{}", text.stdout());

        // A person's addition next to it is drift, found and attributed.
        c.kubectl(&[
            "-n",
            ns,
            "patch",
            "deploy/blanks-admitted",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/template/spec/imagePullSecrets/-","value":{"name":"by-hand"}}]"#,
        ])
        .ok();
        let (code, rel) = release_report(&c, ns);
        assert_eq!(code, 1, "{helm:?}: {rel:#}");
        let fs = fields(&rel, "Deployment", "blanks-admitted");
        let f = fs.iter().find(|f| f["path"] == "spec.template.spec.imagePullSecrets[name=by-hand]").unwrap();
        assert_eq!((f["change"].as_str(), f["manager"].as_str()), (Some("added"), Some("kubectl-patch")), "{f}");
        assert!(f["reason"].is_null(), "{f}");
        c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn limit_range_defaults_are_not_hand_edits() {
    let c = crate::needs_cluster!("limit_range_defaults_are_not_hand_edits");
    for helm in [Helm::V3, Helm::V4] {
        let ns = unique_ns("limits");
        c.create_namespace(&ns);
        let limits = r#"{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
            "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
                                 "defaultRequest": {"cpu": "100m", "memory": "64Mi"}}]}}"#;
        c.kubectl_stdin(&["-n", &ns, "apply", "-f", "-"], limits).ok();
        // Pods are admitted only once the namespace's default ServiceAccount exists.
        wait_until("the default ServiceAccount", Duration::from_secs(60), || {
            c.kubectl(&["-n", &ns, "get", "serviceaccount", "default"]).code() == 0
        });
        install_into(&c, helm, "limitrange", &ns);
        let pod = get_json(&c, &ns, "pod/blanks-limited");
        let res = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(
            (res["requests"]["cpu"].as_str(), res["limits"]["cpu"].as_str(), res["limits"]["memory"].as_str()),
            (Some("100m"), Some("500m"), Some("256Mi")),
            "{helm:?}: LimitRange defaults not applied: {res}"
        );
        let volumes = pod["spec"]["volumes"].to_string();
        assert!(volumes.contains("kube-api-access-"), "{helm:?}: {volumes}");
        assert_eq!(managers_mentioning(&pod, "kube-api-access-"), Vec::<String>::new(), "{helm:?}");
        // LimitRange acts on Pods, not on a Deployment's pod template.
        let deploy = get_json(&c, &ns, "deploy/blanks-limited");
        assert_eq!(deploy["spec"]["template"]["spec"]["containers"][0]["resources"], json!({}));

        let (code, rel) = release_report(&c, &ns);
        assert_eq!(code, 0, "{helm:?}: admission defaults are not drift: {rel:#}");
        let pod_fields = fields(&rel, "Pod", "blanks-limited");
        assert!(
            pod_fields.iter().any(|f| f["path"].as_str().unwrap().starts_with("spec.volumes[name=kube-api-access-")
                && f["reason"].as_str().unwrap().contains("admission")),
            "{helm:?}: the token volume is shown as set at admission: {rel:#}"
        );

        c.kubectl(&["-n", &ns, "set", "resources", "deploy/blanks-limited", "--limits=cpu=2"]).ok();
        let (code, rel) = release_report(&c, &ns);
        assert_eq!(code, 1, "{helm:?}: {rel:#}");
        let fs = fields(&rel, "Deployment", "blanks-limited");
        assert!(
            fs.iter().any(|f| f["path"]
                .as_str()
                .unwrap()
                .starts_with("spec.template.spec.containers[name=app].resources")
                && f["manager"] == "kubectl-set"
                && f["reason"].is_null()),
            "{helm:?}: {rel:#}"
        );
        c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
    }
}

/// The millicores of a cpu quantity (`100m`, `0.5`, `2`), `None` when it is not one of those.
fn millicores(q: &str) -> Option<f64> {
    match q.strip_suffix('m') {
        Some(m) => m.parse().ok(),
        None => q.parse::<f64>().ok().map(|c| c * 1000.0),
    }
}

/// What a managed platform does to small requests (GKE Autopilot): every container's cpu request
/// below 250m is raised to 250m.
fn raise_cpu(obj: &Value) -> Vec<Value> {
    let containers =
        obj.pointer("/spec/template/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    containers
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            c.pointer("/resources/requests/cpu").and_then(Value::as_str).and_then(millicores).is_some_and(|m| m < 250.0)
        })
        .map(|(i, _)| {
            json!({"op": "replace", "path": format!("/spec/template/spec/containers/{i}/resources/requests/cpu"), "value": "250m"})
        })
        .collect()
}

/// Deletes cluster-scoped objects (`kind/name`) when the test ends, passed or failed.
struct ClusterScoped<'a> {
    c: &'a Cluster,
    objects: Vec<String>,
}

impl Drop for ClusterScoped<'_> {
    fn drop(&mut self) {
        for o in &self.objects {
            self.c.kubectl(&["delete", o, "--ignore-not-found"]);
        }
    }
}

/// The reason of field `path` of Deployment `blanks-changed`, and its `admission` cause.
fn changed_field<'a>(rel: &'a Value, path: &str) -> &'a Value {
    fields(rel, "Deployment", "blanks-changed")
        .into_iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} is not shown: {rel:#}"))
}

/// The live Deployment's container was changed at admission (cpu 250m, imagePullPolicy Always),
/// and `manager`, the writer that sent 100m and IfNotPresent, is the only owner of both values.
fn assert_changed_at_admission(live: &Value, manager: &str) {
    let container = &live["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (container["resources"]["requests"]["cpu"].as_str(), container["imagePullPolicy"].as_str()),
        (Some("250m"), Some("Always")),
        "{manager}: not changed at admission: {live:#}"
    );
    for needle in ["f:cpu", "f:imagePullPolicy"] {
        assert_eq!(managers_mentioning(live, needle), vec![manager], "{needle}: {live:#}");
    }
}

const CPU: &str = "spec.template.spec.containers[name=app].resources.requests.cpu";
const PULL: &str = "spec.template.spec.containers[name=app].imagePullPolicy";

/// A webhook raising cpu requests ([`raise_cpu`], named `adjuster.drift-e2e.example.com`) and a
/// MutatingAdmissionPolicy with its binding setting `imagePullPolicy: Always` on Deployments in
/// `namespaces` (created here), both working once this returns; removed when the guard drops.
/// Returns the guard and the policy's name.
fn platform_mutators<'c>(c: &'c Cluster, namespaces: &[String]) -> (ClusterScoped<'c>, String) {
    let (port, ca) = start_webhook(&c.scratch.join(format!("adjuster-{}", namespaces[0])), raise_cpu);
    let name = format!("drift-e2e-{}", namespaces[0]);
    let in_namespaces =
        json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]});
    let deployments = json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
        "resources": ["deployments"]}]);
    let webhook = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": "adjuster.drift-e2e.example.com",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}/mutate"),
                             "caBundle": base64::engine::general_purpose::STANDARD.encode(&ca)},
            "rules": deployments, "namespaceSelector": in_namespaces,
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail", "timeoutSeconds": 5}]});
    // The MutatingAdmissionPolicy API (GA in 1.36, served and enabled by default).
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": deployments},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: \
                 object.spec.template.spec.containers.map(c, Object.spec.template.spec.containers{name: c.name, \
                 imagePullPolicy: \"Always\"})}}}}"}}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "matchResources": {"namespaceSelector": in_namespaces}}});
    let guard = ClusterScoped {
        c,
        objects: vec![
            format!("mutatingwebhookconfiguration/{name}"),
            format!("mutatingadmissionpolicybinding/{name}"),
            format!("mutatingadmissionpolicy/{name}"),
        ],
    };
    for o in [&webhook, &policy, &binding] {
        c.kubectl_stdin(&["apply", "-f", "-"], &o.to_string()).ok();
    }
    for ns in namespaces {
        c.create_namespace(ns);
    }
    // Both are picked up asynchronously: wait until a dry run is changed by both.
    let probe = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "probe"},
        "spec": {"selector": {"matchLabels": {"app": "probe"}}, "template": {"metadata": {"labels": {"app": "probe"}},
            "spec": {"containers": [{"name": "app", "image": "registry.example/probe:1", "imagePullPolicy": "IfNotPresent",
                "resources": {"requests": {"cpu": "100m"}}}]}}}});
    for ns in namespaces {
        wait_until("the webhook and the policy to change deployments", Duration::from_secs(90), || {
            let run =
                c.kubectl_stdin(&["-n", ns, "apply", "--dry-run=server", "-o", "json", "-f", "-"], &probe.to_string());
            let out: Value = serde_json::from_str(&run.stdout()).unwrap_or(Value::Null);
            let container = &out["spec"]["template"]["spec"]["containers"][0];
            container["resources"]["requests"]["cpu"] == "250m" && container["imagePullPolicy"] == "Always"
        });
    }
    (guard, name)
}

#[ignore = "needs the local control plane"]
#[test]
fn values_changed_at_admission_are_not_hand_edits() {
    let c = crate::needs_cluster!("values_changed_at_admission_are_not_hand_edits");
    let namespaces = [unique_ns("changed"), unique_ns("changed")];
    let (_guard, name) = platform_mutators(&c, &namespaces);
    for (helm, ns) in [Helm::V3, Helm::V4].into_iter().zip(&namespaces) {
        install_into(&c, helm, "changed", ns);
        // The fact the rule rests on: Helm owns the values it never sent, and only Helm.
        assert_changed_at_admission(&get_json(&c, ns, "deploy/blanks-changed"), "helm");

        // Clean right after install, each value shown as changed at admission with its cause.
        let (code, rel) = release_report(&c, ns);
        assert_eq!(code, 0, "{helm:?}: values changed at admission are not drift: {rel:#}");
        assert_eq!(rel["status"], "clean", "{helm:?}: {rel:#}");
        let cpu = changed_field(&rel, CPU);
        assert_eq!((cpu["desired"].as_str(), cpu["live"].as_str()), (Some("100m"), Some("250m")), "{cpu}");
        assert!(cpu["reason"].as_str().unwrap().starts_with("changed at admission ("), "{cpu}");
        assert!(cpu["admission"].as_str().unwrap().contains("webhook adjuster.drift-e2e.example.com"), "{cpu}");
        let pull = changed_field(&rel, PULL);
        assert!(pull["reason"].as_str().unwrap().starts_with("changed at admission ("), "{pull}");
        assert!(pull["admission"].as_str().unwrap().contains(&format!("MutatingAdmissionPolicy {name}")), "{pull}");
        let text = c.drift(&["release", "blanks", "-n", ns, "--color", "never"]);
        assert_eq!(text.code(), 0, "{}", text.stdout());
        assert!(text.stdout().contains("changed at admission"), "{}", text.stdout());

        // Asked to, the same values are drift, with their cause.
        let run = c.drift(&["release", "blanks", "-n", ns, "-o", "json", "--admission-changes", "drift"]);
        let strict = run.report()["releases"][0].clone();
        assert_eq!(run.code(), 1, "{helm:?}: {strict:#}");
        let cpu = changed_field(&strict, CPU);
        assert!(cpu["reason"].is_null() && cpu["admission"].as_str().unwrap().contains("adjuster"), "{cpu}");
        let config = c.scratch.join(format!("admission-{ns}.yaml"));
        std::fs::write(&config, "admission_changes: drift\n").unwrap();
        let run = c.drift(&["release", "blanks", "-n", ns, "--config", config.to_str().unwrap()]);
        assert_eq!(run.code(), 1, "{helm:?}: the config's admission_changes: {}", run.stdout());
        assert!(run.stdout().contains("changed at admission: "), "{}", run.stdout());

        // adopt proposes neither value (the platform sets them again on every write) and names
        // both with their cause, in the default mode and when they count as drift.
        let bin = crate::adopt::helm_bin(&c, helm);
        for extra in [&[][..], &["--config", config.to_str().unwrap()][..]] {
            let args = [&["adopt", "blanks", "-n", ns.as_str(), "-o", "json"][..], extra].concat();
            let run = c.drift_with_env(&args, &[("HELM_BIN", bin.as_str())]);
            assert_eq!(run.code(), 0, "{helm:?} {extra:?}: {}\n{}", run.stdout(), run.stderr());
            let adopt: Value = serde_json::from_str(&run.stdout()).unwrap();
            assert_eq!(adopt["overlay"], json!({}), "{helm:?} {extra:?}: {adopt:#}");
            let named: Vec<(String, String)> = adopt["setAtAdmission"]
                .as_array()
                .unwrap_or_else(|| panic!("{helm:?} {extra:?}: no setAtAdmission: {adopt:#}"))
                .iter()
                .map(|a| (a["path"].as_str().unwrap().to_string(), a["cause"].as_str().unwrap().to_string()))
                .collect();
            assert!(named.iter().any(|(p, c)| p.ends_with(CPU) && c.contains("adjuster")), "{named:?}");
            assert!(named.iter().any(|(p, c)| p.ends_with(PULL) && c.contains(name.as_str())), "{named:?}");
        }

        // `helm upgrade` runs the mutation again: still clean.
        let chart = crate::common::fixture("charts/blanks");
        c.helm(
            helm,
            &[
                "upgrade",
                "blanks",
                chart.to_str().unwrap(),
                "-n",
                ns,
                "--set",
                "pattern=changed",
                "--set",
                "image=registry.example/blanks/app:1.1",
            ],
        )
        .ok();
        let (code, rel) = release_report(&c, ns);
        assert_eq!(code, 0, "{helm:?}: after helm upgrade: {rel:#}");
        assert_eq!(rel["revision"], 2, "{rel:#}");

        // A person's edit of the same field is drift again, by their tool.
        c.kubectl(&["-n", ns, "set", "resources", "deploy/blanks-changed", "-c", "app", "--requests=cpu=300m"]).ok();
        let (code, rel) = release_report(&c, ns);
        assert_eq!(code, 1, "{helm:?}: {rel:#}");
        let cpu = changed_field(&rel, CPU);
        assert_eq!(
            (cpu["live"].as_str(), cpu["manager"].as_str(), cpu["reason"].as_str(), cpu["admission"].as_str()),
            (Some("300m"), Some("kubectl-set"), None, None),
            "{helm:?}: {cpu}"
        );
        let pull = changed_field(&rel, PULL);
        assert!(pull["reason"].as_str().unwrap().starts_with("changed at admission"), "{helm:?}: {pull}");
        c.kubectl(&["delete", "namespace", ns, "--wait=false"]).ok();
    }
}

/// Flux's kustomize-controller owns what it applies (server-side), values changed at admission
/// included, and its desired fields are the live values it owns: a Kustomization is clean with the
/// same mutators, after a reconcile that runs them again too, and a person's edit is theirs.
#[ignore = "needs the local control plane"]
#[test]
fn a_flux_kustomization_changed_at_admission_is_clean() {
    let c = crate::needs_cluster!("a_flux_kustomization_changed_at_admission_is_clean");
    crate::flux::flux_env();
    let ns = unique_ns("flux-changed");
    let (_guard, _) = platform_mutators(&c, std::slice::from_ref(&ns));
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: changed\nspec:\n  selector:\n    \
                      matchLabels: {app: changed}\n  template:\n    metadata:\n      labels: {app: changed}\n    spec:\n      \
                      containers:\n      - name: app\n        image: registry.example/changed:1\n        \
                      imagePullPolicy: IfNotPresent\n        resources:\n          requests: {cpu: 100m}\n";
    let url = crate::flux::git_repo(&ns, &[("app/deployment.yaml", deployment)]);
    crate::flux::apply_git_kustomization(&c, &ns, "app", &url, "./app");
    crate::flux::wait_kustomization_ready(&c, &ns, "app");
    assert_changed_at_admission(&get_json(&c, &ns, "deploy/changed"), "kustomize-controller");
    let check = |what: &str| {
        let run = c.drift(&["kustomization", "app", "-n", &ns, "-o", "json"]);
        (run.code(), run.report(), what.to_string())
    };
    let (code, report, what) = check("after Flux applied it");
    assert_eq!(code, 0, "{what}: {report:#}");
    crate::flux::force_reconcile(&c, &ns, "app");
    let (code, report, what) = check("after a reconcile");
    assert_eq!(code, 0, "{what}: {report:#}");

    c.kubectl(&["-n", &ns, "set", "resources", "deploy/changed", "-c", "app", "--requests=cpu=300m"]).ok();
    let (code, report, _) = check("after kubectl set resources");
    assert_eq!(code, 1, "{report:#}");
    let text = report.to_string();
    assert!(text.contains("resources.requests.cpu") && text.contains("kubectl-set"), "{report:#}");
    c.kubectl(&["-n", &ns, "delete", "kustomizations.kustomize.toolkit.fluxcd.io", "app", "--timeout=60s"]).ok();
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
