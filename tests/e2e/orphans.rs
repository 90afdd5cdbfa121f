//! `kubectl drift orphans` against the real control plane: a scenario namespace whose ground
//! truth is written here (every kind of use, including the ones kor misses), the readonly
//! context, and the delete script run for real (backup, delete, restore, failure midway).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Helm, unique_ns};
use crate::needs_cluster;

/// Poll `kubectl args` until it succeeds (controllers create some objects a moment later).
fn wait_for(c: &Cluster, what: &str, args: &[&str]) {
    wait_until(what, 60, || {
        let r = c.kubectl(args);
        if r.out.status.success() { Ok(()) } else { Err(r.stderr()) }
    });
}

/// Poll `check` every 300 ms until it returns `Ok`, for at most `secs` seconds; then fail with
/// `what` and the last `Err` (what was seen instead).
fn wait_until(what: &str, secs: u64, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let last = match check() {
            Ok(()) => return,
            Err(e) => e,
        };
        assert!(Instant::now() < deadline, "timed out after {secs}s waiting for {what}; last seen: {last}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The object as JSON, or `Err` with kubectl's error (not found, say).
fn get_json(c: &Cluster, ns: &str, resource: &str, name: &str) -> Result<Value, String> {
    let r = c.kubectl(&["-n", ns, "get", resource, name, "-o", "json"]);
    if !r.out.status.success() {
        return Err(r.stderr());
    }
    serde_json::from_str(&r.stdout()).map_err(|e| e.to_string())
}

/// Whether condition `type` of the object's status is "True".
fn condition_true(o: &Value, type_: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == type_ && c["status"] == "True"))
}

/// Wait until the Job controller marks Job `name` Complete: the scheduler places its pod, KWOK
/// runs it and makes it Succeed, the Job controller writes the condition. Nothing here writes
/// a status. A Job that fails, or never completes (no scheduler or KWOK), fails the test.
fn wait_job_complete(c: &Cluster, ns: &str, name: &str) {
    wait_until(
        &format!("Job {ns}/{name} to be Complete (needs kube-scheduler and KWOK, docs/test-env.md)"),
        90,
        || {
            let job = get_json(c, ns, "job", name)?;
            assert!(!condition_true(&job, "Failed"), "Job {ns}/{name} failed: {}", job["status"]);
            if condition_true(&job, "Complete") { Ok(()) } else { Err(job["status"].to_string()) }
        },
    );
}

/// A Job that ran and finished: created to run (a busybox container, which KWOK completes),
/// then waited for until the Job controller marks it Complete. `owner` makes a CronJob own it.
fn finished_job(c: &Cluster, ns: &str, name: &str, owner: Option<(&str, &str)>) {
    let owner_refs = owner
        .map(|(cron, uid)| format!("  ownerReferences: [{{apiVersion: batch/v1, kind: CronJob, name: {cron}, uid: {uid}, controller: true}}]\n"))
        .unwrap_or_default();
    apply(
        c,
        ns,
        &format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n{owner_refs}spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{{name: c, image: busybox}}]\n"
        ),
    );
    wait_job_complete(c, ns, name);
}

fn apply(c: &Cluster, ns: &str, yaml: &str) {
    c.kubectl_stdin(&["apply", "-n", ns, "-f", "-"], yaml).ok();
}

/// A tiny chart: one ConfigMap named after the release, kept on uninstall when `keep` is set.
fn write_tiny_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("Chart.yaml"), "apiVersion: v2\nname: tiny\nversion: 0.1.0\n").unwrap();
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n  labels:\n    app.kubernetes.io/managed-by: {{ .Release.Service }}\n\
         {{- if .Values.keep }}\n  annotations:\n    helm.sh/resource-policy: keep\n{{- end }}\ndata:\n  greeting: hello\n",
    )
    .unwrap();
}

/// (kind, name) -> class, from a `--show all -o json` report, keeping only namespace `ns`.
fn classes(report: &Value, ns: &str) -> BTreeMap<(String, String), String> {
    report["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["namespace"].as_str() == Some(ns))
        .map(|i| {
            (
                (i["kind"].as_str().unwrap().to_string(), i["name"].as_str().unwrap().to_string()),
                i["class"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn item<'a>(report: &'a Value, kind: &str, name: &str) -> &'a Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == kind && i["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name} not in the report"))
}

fn used_by(report: &Value, kind: &str, name: &str) -> Vec<String> {
    item(report, kind, name)["usedBy"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

const SECRET_VALUE: &str = "s3cr3t-orphan-value-7f3a";

fn scenario_manifest(ns: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-dormant}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-cron}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-projected}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-init}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-pod}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-unused}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-operator
  labels: {{app.kubernetes.io/managed-by: my-operator}}
data: {{a: "1"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-keep-me}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: cm-ignored}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-projected}}
stringData: {{v: {SECRET_VALUE}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-pull}}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{{"auths":{{}}}}'
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-tls}}
stringData: {{tls.crt: "crt", tls.key: "key"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-env}}
stringData: {{v: {SECRET_VALUE}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-cron}}
stringData: {{v: "1"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: sec-unused}}
stringData: {{v: {SECRET_VALUE}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: builder}}
imagePullSecrets: [{{name: sec-pull}}]
---
apiVersion: v1
kind: Secret
metadata:
  name: builder-token
  annotations: {{kubernetes.io/service-account.name: builder}}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: robot}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: lonely}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: reader}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [get]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: unused-role}}
rules: [{{apiGroups: [""], resources: [secrets], verbs: [get]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: robot-reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}}
subjects: [{{kind: ServiceAccount, name: robot, namespace: {ns}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: dangling}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: missing-role}}
subjects: [{{kind: ServiceAccount, name: robot, namespace: {ns}}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: gone-subjects}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}}
subjects: [{{kind: ServiceAccount, name: deleted-sa, namespace: {ns}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data}}
spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data-db-0}}
spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: unused-claim}}
spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      serviceAccountName: builder
      initContainers:
      - name: init
        image: busybox
        envFrom: [{{configMapRef: {{name: cm-init}}}}]
      containers:
      - name: web
        image: nginx
        env:
        - name: PASSWORD
          valueFrom: {{secretKeyRef: {{name: sec-env, key: v}}}}
        volumeMounts: [{{name: all, mountPath: /etc/all}}, {{name: data, mountPath: /data}}]
      volumes:
      - name: all
        projected:
          sources:
          - configMap: {{name: cm-projected}}
          - secret: {{name: sec-projected}}
      - name: data
        persistentVolumeClaim: {{claimName: data}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: dormant}}
spec:
  replicas: 0
  selector: {{matchLabels: {{app: dormant}}}}
  template:
    metadata: {{labels: {{app: dormant}}}}
    spec:
      containers: [{{name: c, image: busybox, volumeMounts: [{{name: config, mountPath: /cfg}}]}}]
      volumes: [{{name: config, configMap: {{name: cm-dormant}}}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  replicas: 0
  serviceName: db-headless
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers: [{{name: db, image: postgres}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: nightly}}
spec:
  schedule: "0 3 1 1 *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: job
            image: busybox
            envFrom: [{{configMapRef: {{name: cm-cron}}}}]
            env:
            - name: TOKEN
              valueFrom: {{secretKeyRef: {{name: sec-cron, key: v}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: eph}}
spec:
  containers:
  - name: c
    image: busybox
    env:
    - name: A
      valueFrom: {{configMapKeyRef: {{name: cm-pod, key: a}}}}
    volumeMounts: [{{name: scratch, mountPath: /scratch}}]
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec: {{selector: {{app: web}}, ports: [{{port: 80}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: db-headless}}
spec: {{clusterIP: None, selector: {{app: db}}, ports: [{{port: 5432}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: ghost}}
spec: {{selector: {{app: ghost}}, ports: [{{port: 80}}]}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: 3
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: hpa-ghost}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: nope}}
  minReplicas: 1
  maxReplicas: 3
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web}}
spec: {{minAvailable: 1, selector: {{matchLabels: {{app: web}}}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: pdb-ghost}}
spec: {{minAvailable: 1, selector: {{matchLabels: {{app: nothing}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: web}}
spec: {{podSelector: {{matchLabels: {{app: web}}}}, policyTypes: [Ingress]}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: np-ghost}}
spec: {{podSelector: {{matchExpressions: [{{key: app, operator: In, values: [nothing]}}]}}, policyTypes: [Ingress]}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: shop}}
spec:
  tls: [{{hosts: [shop.example], secretName: sec-tls}}]
  rules:
  - host: shop.example
    http:
      paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: web, port: {{number: 80}}}}}}}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: ing-ghost}}
spec:
  rules:
  - http:
      paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: nope, port: {{number: 80}}}}}}}}]
"#
    )
}

/// The ground truth of the scenario namespace: every object the scan examines, and its class.
///
/// Not examined: the Deployment web (1 replica), Job cron-run (completed, but a CronJob keeps
/// it) and Job waiting (suspended, never ran). The pods of web and eph stay Pending (nothing
/// provisions their claims) and still count: they exist.
fn ground_truth() -> BTreeMap<(String, String), String> {
    let t: &[(&str, &str, &str)] = &[
        ("ConfigMap", "kube-root-ca.crt", "protected"),
        ("ConfigMap", "cm-dormant", "in-use"), // only via a Deployment scaled to zero
        ("ConfigMap", "cm-cron", "in-use"),    // only via a CronJob template
        ("ConfigMap", "cm-projected", "in-use"), // only via a projected volume
        ("ConfigMap", "cm-init", "in-use"),    // only via initContainer envFrom
        ("ConfigMap", "cm-pod", "in-use"),     // only via a live pod's env
        ("ConfigMap", "cm-unused", "orphan"),
        ("ConfigMap", "cm-operator", "managed"), // app.kubernetes.io/managed-by: my-operator
        ("ConfigMap", "cm-owned", "managed"),    // ownerReferences
        ("ConfigMap", "cm-keep-me", "protected"), // the user's protect rule
        ("ConfigMap", "cm-ignored", "ignored"),  // the user's --ignore
        ("ConfigMap", "leftover-cm", "orphan"),  // Helm leftover (release uninstalled, kept)
        ("ConfigMap", "installed-cm", "managed"), // installed Helm release
        ("Secret", "sec-projected", "in-use"),
        ("Secret", "sec-pull", "in-use"), // only via ServiceAccount imagePullSecrets
        ("Secret", "sec-tls", "in-use"),  // only via an Ingress TLS block
        ("Secret", "sec-env", "in-use"),
        ("Secret", "sec-cron", "in-use"),
        ("Secret", "sec-unused", "orphan"),
        ("Secret", "builder-token", "protected"), // service-account token
        ("Secret", "sh.helm.release.v1.installed.v1", "protected"), // Helm release storage
        ("ServiceAccount", "default", "protected"),
        ("ServiceAccount", "builder", "in-use"),
        ("ServiceAccount", "robot", "in-use"), // only via a RoleBinding subject
        ("ServiceAccount", "lonely", "orphan"),
        ("Service", "web", "in-use"),
        ("Service", "db-headless", "in-use"),
        ("Service", "ghost", "orphan"),
        ("PersistentVolumeClaim", "data", "in-use"),
        ("PersistentVolumeClaim", "data-db-0", "in-use"), // StatefulSet volumeClaimTemplate
        ("PersistentVolumeClaim", "eph-scratch", "in-use"), // ephemeral volume of pod eph
        ("PersistentVolumeClaim", "unused-claim", "orphan"),
        ("Role", "reader", "in-use"),
        ("Role", "unused-role", "orphan"),
        ("RoleBinding", "robot-reader", "in-use"),
        ("RoleBinding", "dangling", "orphan"),      // its Role does not exist
        ("RoleBinding", "gone-subjects", "orphan"), // its ServiceAccount does not exist
        ("HorizontalPodAutoscaler", "web", "in-use"),
        ("HorizontalPodAutoscaler", "hpa-ghost", "orphan"),
        ("PodDisruptionBudget", "web", "in-use"),
        ("PodDisruptionBudget", "pdb-ghost", "orphan"),
        ("NetworkPolicy", "web", "in-use"),
        ("NetworkPolicy", "np-ghost", "orphan"),
        ("Ingress", "shop", "in-use"),
        ("Ingress", "ing-ghost", "orphan"),
        ("Deployment", "dormant", "orphan"), // scaled to zero, nothing scales it
        ("StatefulSet", "db", "orphan"),
        ("Job", "finished-job", "orphan"), // ran and completed, no CronJob keeps it
    ];
    t.iter().map(|(k, n, c)| ((k.to_string(), n.to_string()), c.to_string())).collect()
}

fn build_scenario(c: &Cluster, ns: &str) {
    c.create_namespace(ns);
    wait_for(c, "the default ServiceAccount", &["-n", ns, "get", "serviceaccount", "default"]);
    apply(c, ns, &scenario_manifest(ns));
    let uid = c.kubectl(&["-n", ns, "get", "deployment", "web", "-o", "jsonpath={.metadata.uid}"]).ok();
    apply(
        c,
        ns,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-owned\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: {uid}}}\n"
        ),
    );
    finished_job(c, ns, "finished-job", None);
    let cron_uid = c.kubectl(&["-n", ns, "get", "cronjob", "nightly", "-o", "jsonpath={.metadata.uid}"]).ok();
    finished_job(c, ns, "cron-run", Some(("nightly", &cron_uid)));
    apply(
        c,
        ns,
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: waiting}\nspec:\n  suspend: true\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n",
    );
    // Helm: one release uninstalled with a kept object (a leftover), one still installed.
    let chart = c.scratch.join("tiny");
    write_tiny_chart(&chart);
    let chart = chart.to_str().unwrap();
    c.helm(Helm::V3, &["install", "leftover", chart, "-n", ns, "--set", "keep=true"]).ok();
    c.helm(Helm::V3, &["uninstall", "leftover", "-n", ns]).ok();
    c.helm(Helm::V3, &["install", "installed", chart, "-n", ns]).ok();
    // Objects controllers make: the ephemeral claim, and the ReplicaSets and pod of the Deployments.
    wait_for(c, "the ephemeral volume claim", &["-n", ns, "get", "pvc", "eph-scratch"]);
    wait_for(
        c,
        "the pod of Deployment web",
        &["-n", ns, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"],
    );
    let pods = c.kubectl(&["-n", ns, "get", "pods", "-l", "app=web", "-o", "name"]).ok();
    assert!(!pods.trim().is_empty(), "Deployment web has a pod");
}

fn scan(c: &Cluster, ns: &str, config: &Path, extra: &[&str]) -> (i32, Value, String) {
    let ignore = format!("ConfigMap:{ns}/cm-ignored");
    let mut args = vec![
        "orphans",
        "-n",
        ns,
        "--older-than",
        "0s",
        "-o",
        "json",
        "--config",
        config.to_str().unwrap(),
        "--ignore",
        &ignore,
    ];
    if !extra.contains(&"--show") {
        args.extend_from_slice(&["--show", "all"]);
    }
    args.extend_from_slice(extra);
    let run = c.drift(&args);
    let out = run.stdout();
    (run.code(), run.report(), out)
}

fn protect_config(c: &Cluster, ns: &str) -> std::path::PathBuf {
    let path = c.scratch.join("orphans.yaml");
    std::fs::write(&path, format!("orphans:\n  protect:\n    - kind: ConfigMap\n      namespace: {ns}\n      name: cm-keep-me\n      note: read by the quarterly report\n")).unwrap();
    path
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_scenario_matches_ground_truth() {
    let c = needs_cluster!("orphans_scenario_matches_ground_truth");
    let ns = unique_ns("orphans");
    build_scenario(&c, &ns);
    let config = protect_config(&c, &ns);

    let (code, report, raw) = scan(&c, &ns, &config, &[]);
    assert_eq!(code, 1, "orphans found means exit 1");
    assert_eq!(report["schemaVersion"], 2);
    assert_eq!(report["cluster"], "admin");
    let truth = ground_truth();
    assert!(truth.len() >= 25);
    let got = classes(&report, &ns);
    if got != truth {
        let mut diff = String::new();
        for (k, v) in &truth {
            match got.get(k) {
                Some(g) if g == v => {}
                Some(g) => diff.push_str(&format!("  {k:?}: expected {v}, got {g}\n")),
                None => diff.push_str(&format!("  {k:?}: expected {v}, not reported\n")),
            }
        }
        for (k, g) in &got {
            if !truth.contains_key(k) {
                diff.push_str(&format!("  {k:?}: not expected, got {g}\n"));
            }
        }
        panic!("classes differ from the ground truth:\n{diff}");
    }

    // The evidence for the cases kor gets wrong names the right user.
    assert!(
        used_by(&report, "ConfigMap", "cm-dormant")
            .iter()
            .any(|u| u == &format!("Deployment {ns}/dormant (0 replicas) volume config")),
        "{:?}",
        used_by(&report, "ConfigMap", "cm-dormant")
    );
    assert!(used_by(&report, "ConfigMap", "cm-cron").contains(&format!("CronJob {ns}/nightly container job envFrom")));
    assert!(
        used_by(&report, "ConfigMap", "cm-projected").contains(&format!("Deployment {ns}/web projected volume all"))
    );
    assert!(used_by(&report, "Secret", "sec-pull").contains(&format!("ServiceAccount {ns}/builder imagePullSecrets")));
    // No template names it; the ServiceAccount admission plugin copies the ServiceAccount's
    // imagePullSecrets into the live pods it admits, so those pods are the only other users.
    for u in used_by(&report, "Secret", "sec-pull") {
        assert!(
            u == format!("ServiceAccount {ns}/builder imagePullSecrets")
                || u.starts_with(&format!("pods of ReplicaSet {ns}/web-")),
            "{u}"
        );
    }
    assert!(
        used_by(&report, "ConfigMap", "cm-init").contains(&format!("Deployment {ns}/web initContainer init envFrom"))
    );
    assert_eq!(used_by(&report, "Secret", "sec-tls"), vec![format!("Ingress {ns}/shop tls")]);
    assert_eq!(
        used_by(&report, "PersistentVolumeClaim", "eph-scratch"),
        vec![format!("Pod {ns}/eph ephemeral volume scratch")]
    );
    assert_eq!(
        used_by(&report, "ServiceAccount", "robot"),
        vec![format!("RoleBinding {ns}/robot-reader subject"), format!("RoleBinding {ns}/dangling subject")]
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
    );
    assert!(
        used_by(&report, "PersistentVolumeClaim", "data-db-0")
            .contains(&format!("StatefulSet {ns}/db (0 replicas) volumeClaimTemplate data"))
    );

    // Reasons and Helm evidence.
    let leftover = item(&report, "ConfigMap", "leftover-cm");
    assert!(leftover["reasons"].to_string().contains("leftover of Helm release"), "{leftover}");
    assert_eq!(leftover["helmRelease"], serde_json::json!({"name": "leftover", "namespace": ns, "installed": false}));
    let installed = item(&report, "ConfigMap", "installed-cm");
    assert_eq!(installed["helmRelease"]["installed"], true);
    assert!(installed["reasons"].to_string().contains(&format!("installed Helm release {ns}/installed")));
    assert!(
        item(&report, "RoleBinding", "dangling")["reasons"].to_string().contains("Role missing-role does not exist")
    );
    assert_eq!(item(&report, "Job", "finished-job")["reasons"][0], "finished (Complete) and no CronJob keeps it");
    assert!(item(&report, "ConfigMap", "cm-keep-me")["reasons"].to_string().contains("read by the quarterly report"));
    assert!(item(&report, "ConfigMap", "cm-ignored")["reasons"].to_string().contains("--ignore ConfigMap:"));
    let s = &report["summary"];
    assert_eq!(s["leftover"], 1);
    assert_eq!(s["orphan"].as_u64().unwrap() as usize, truth.values().filter(|c| *c == "orphan").count());

    // Secret data is never read into the output, only names.
    let b64 = "czNjcjN0LW9ycGhhbi12YWx1ZS03ZjNh"; // base64 of SECRET_VALUE
    assert!(!raw.contains(SECRET_VALUE) && !raw.contains(b64), "secret data leaked into JSON");
    let table = c.drift(&["orphans", "-n", &ns, "--show", "all", "--older-than", "0s"]).stdout();
    assert!(!table.contains(SECRET_VALUE) && !table.contains(b64));
    assert!(table.contains("sec-unused") && table.contains("orphan"), "{table}");

    // Without --show all only the orphans are listed; CSV has the table's columns.
    let (_, only, _) = scan(&c, &ns, &config, &["--show", "orphans"]);
    assert!(only["items"].as_array().unwrap().iter().all(|i| i["class"] == "orphan"));
    assert_eq!(only["items"].as_array().unwrap().len(), truth.values().filter(|c| *c == "orphan").count());
    let csv = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "-o", "csv"]);
    assert_eq!(csv.code(), 1);
    let csv = csv.stdout();
    assert!(csv.starts_with("namespace,kind,name,class,age,reason\n"), "{csv}");
    assert!(csv.contains(&format!("{ns},Secret,sec-unused,orphan,")));

    // The default --older-than 1h: everything here is minutes old, so nothing is an orphan.
    let young = c.drift(&["orphans", "-n", &ns, "-o", "json"]);
    assert_eq!(young.code(), 0, "{}", young.stderr());
    let young = young.report();
    assert_eq!(young["summary"]["orphan"], 0);
    assert!(young["summary"]["ignored"].as_u64().unwrap() > 0);

    // --kinds narrows the scan; a cluster-scoped kind needs -A; an unknown kind is an error.
    let (_, cms, _) = scan(&c, &ns, &config, &["--kinds", "configmap"]);
    assert!(cms["items"].as_array().unwrap().iter().all(|i| i["kind"] == "ConfigMap"));
    let bad = c.drift(&["orphans", "-n", &ns, "--kinds", "clusterrole"]);
    assert_eq!(bad.code(), 2);
    assert!(bad.stderr().contains("only examined with -A"), "{}", bad.stderr());
    assert_eq!(c.drift(&["orphans", "-n", &ns, "--kinds", "pods"]).code(), 2);
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_readonly_context_gives_the_same_answer() {
    let c = needs_cluster!("orphans_readonly_context_gives_the_same_answer");
    let ns = unique_ns("orphans-ro");
    build_scenario(&c, &ns);
    let config = protect_config(&c, &ns);
    let strip = |r: &Value| -> Vec<Value> {
        r["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let mut i = i.clone();
                i.as_object_mut().unwrap().remove("ageSeconds");
                i
            })
            .collect()
    };
    let (admin_code, admin, _) = scan(&c, &ns, &config, &["--context", "admin"]);
    let (ro_code, ro, _) = scan(&c, &ns, &config, &["--context", "readonly"]);
    assert_eq!(admin_code, 1);
    assert_eq!(ro_code, admin_code);
    assert_eq!(strip(&ro), strip(&admin));
    assert_eq!(classes(&ro, &ns), ground_truth());
    // Under Helm the same subcommand works, and the namespace comes from HELM_NAMESPACE.
    let helm_run = c.drift_with_env(
        &["orphans", "--older-than", "0s", "-o", "json", "--kinds", "secret"],
        &[("HELM_PLUGIN_NAME", "drift"), ("HELM_NAMESPACE", &ns), ("HELM_KUBECONTEXT", "readonly")],
    );
    assert_eq!(helm_run.code(), 1, "{}", helm_run.stderr());
    let helm_report = helm_run.report();
    assert_eq!(helm_report["summary"]["namespace"], ns.as_str());
    // HELM_KUBECONTEXT names the cluster under Helm.
    assert_eq!(helm_report["cluster"], "readonly");
}

/// Run a script with bash, as a person would, against the test cluster.
fn run_script(c: &Cluster, script: &Path, backup: &Path) -> crate::common::Run {
    let mut cmd = Command::new("bash");
    c.apply_env(&mut cmd, Helm::V4);
    cmd.arg(script).env("KUBECTL", &c.kubectl).env("BACKUP_DIR", backup).current_dir(&c.scratch);
    let out = cmd.output().expect("run bash");
    crate::common::Run { out, what: format!("bash {}", script.display()) }
}

fn exists(c: &Cluster, ns: &str, resource: &str, name: &str) -> bool {
    let r = c.kubectl(&["-n", ns, "get", resource, name, "-o", "name"]);
    if r.out.status.success() {
        return true;
    }
    assert!(r.stderr().contains("NotFound"), "unexpected error: {}", r.stderr());
    false
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_delete_script_backs_up_deletes_restores_and_stops_on_failure() {
    let c = needs_cluster!("orphans_delete_script_backs_up_deletes_restores_and_stops_on_failure");
    let ns = unique_ns("orphans-del");
    c.create_namespace(&ns);
    wait_for(&c, "the default ServiceAccount", &["-n", &ns, "get", "serviceaccount", "default"]);
    apply(
        &c,
        &ns,
        r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: a-cm
  labels: {team: shop}
  annotations: {note: "it's \"quoted\""}
data:
  config.ini: "[main]\nname = it's \"quoted\"\ttabbed\n"
  unicode: "héllo ✓"
---
apiVersion: v1
kind: Secret
metadata: {name: b-secret}
stringData: {password: "hunter2-orphan"}
---
apiVersion: v1
kind: Service
metadata: {name: c-svc}
spec: {selector: {app: none}, ports: [{port: 8080, targetPort: 80}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: d-pvc}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: e-role}
rules: [{apiGroups: [""], resources: [pods], verbs: [list]}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: f-sa}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: used-cm}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: user}
spec:
  replicas: 1
  selector: {matchLabels: {app: user}}
  template:
    metadata: {labels: {app: user}}
    spec:
      containers: [{name: c, image: busybox, envFrom: [{configMapRef: {name: used-cm}}]}]
"#,
    );
    finished_job(&c, &ns, "g-job", None);
    // `kubectl apply` leaves a last-applied annotation: the backup must not carry it.
    // In the script's order (kind, then name).
    let orphans: [(&str, &str, &str); 7] = [
        ("ConfigMap", "configmaps", "a-cm"),
        ("Job", "jobs.batch", "g-job"),
        ("PersistentVolumeClaim", "persistentvolumeclaims", "d-pvc"),
        ("Role", "roles.rbac.authorization.k8s.io", "e-role"),
        ("Secret", "secrets", "b-secret"),
        ("Service", "services", "c-svc"),
        ("ServiceAccount", "serviceaccounts", "f-sa"),
    ];
    let before_cm = c.kubectl(&["-n", &ns, "get", "configmap", "a-cm", "-o", "json"]).ok();
    let before_cm: Value = serde_json::from_str(&before_cm).unwrap();
    let before_secret = c.kubectl(&["-n", &ns, "get", "secret", "b-secret", "-o", "jsonpath={.data}"]).ok();

    let generated = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--script", "delete"]);
    assert_eq!(generated.code(), 1, "{}", generated.stderr());
    let script_text = generated.stdout();
    assert!(
        script_text.contains("set -euo pipefail")
            && script_text.contains("umask 077")
            && script_text.contains("CONTEXT='admin'")
    );
    assert!(
        !script_text.contains("used-cm")
            && !script_text.contains("kube-root-ca.crt")
            && !script_text.contains("'default'"),
        "only orphans get lines:\n{script_text}"
    );
    assert_eq!(script_text.matches("\nremove '").count(), orphans.len(), "{script_text}");
    let script = c.scratch.join("cleanup.sh");
    std::fs::write(&script, &script_text).unwrap();

    // 1. Run it for real: every orphan backed up and deleted, nothing else touched.
    let backup = c.scratch.join("backup-1");
    let run = run_script(&c, &script, &backup);
    assert!(run.out.status.success(), "script failed: {}\n{}", run.stderr(), run.stdout());
    for (_, res, name) in orphans {
        assert!(!exists(&c, &ns, res, name), "{name} should be deleted");
    }
    assert!(
        exists(&c, &ns, "configmaps", "used-cm")
            && exists(&c, &ns, "configmaps", "kube-root-ca.crt")
            && exists(&c, &ns, "serviceaccounts", "default")
    );
    let mut files: Vec<String> = std::fs::read_dir(&backup)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| !f.starts_with('.'))
        .collect();
    files.sort();
    let mut expected: Vec<String> = orphans.iter().map(|(k, _, n)| format!("{k}_{ns}_{n}.json")).collect();
    expected.sort();
    assert_eq!(files, expected);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(backup.join(format!("Secret_{ns}_b-secret.json"))).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "Secret backups are private");
    }
    let svc: Value =
        serde_json::from_str(&std::fs::read_to_string(backup.join(format!("Service_{ns}_c-svc.json"))).unwrap())
            .expect("backups are JSON");
    assert!(
        svc.get("status").is_none()
            && svc["metadata"].get("uid").is_none()
            && svc["metadata"].get("resourceVersion").is_none()
    );
    assert!(svc["metadata"].get("creationTimestamp").is_none() && svc["metadata"].get("managedFields").is_none());
    assert!(svc["spec"].get("clusterIP").is_none() && svc["spec"].get("clusterIPs").is_none());
    let job: Value =
        serde_json::from_str(&std::fs::read_to_string(backup.join(format!("Job_{ns}_g-job.json"))).unwrap()).unwrap();
    assert!(job["spec"].get("selector").is_none() && job.get("status").is_none());
    assert!(!job.to_string().contains("controller-uid"), "{job}");
    let cm: Value =
        serde_json::from_str(&std::fs::read_to_string(backup.join(format!("ConfigMap_{ns}_a-cm.json"))).unwrap())
            .unwrap();
    assert!(cm["metadata"]["annotations"].get("kubectl.kubernetes.io/last-applied-configuration").is_none());
    assert_eq!(cm["data"], before_cm["data"]);

    // 2. kubectl apply -f of the backup directory restores them.
    c.kubectl(&["apply", "-f", backup.to_str().unwrap()]).ok();
    for (_, res, name) in orphans {
        assert!(exists(&c, &ns, res, name), "{name} should be restored");
    }
    let after_cm: Value =
        serde_json::from_str(&c.kubectl(&["-n", &ns, "get", "configmap", "a-cm", "-o", "json"]).ok()).unwrap();
    assert_eq!(after_cm["data"], before_cm["data"]);
    assert_eq!(after_cm["metadata"]["labels"], before_cm["metadata"]["labels"]);
    assert_eq!(after_cm["metadata"]["annotations"]["note"], before_cm["metadata"]["annotations"]["note"]);
    assert_eq!(c.kubectl(&["-n", &ns, "get", "secret", "b-secret", "-o", "jsonpath={.data}"]).ok(), before_secret);
    let port = c
        .kubectl(&[
            "-n",
            &ns,
            "get",
            "service",
            "c-svc",
            "-o",
            "jsonpath={.spec.ports[0].port}/{.spec.ports[0].targetPort}",
        ])
        .ok();
    assert_eq!(port, "8080/80");

    // 3. A failure midway: an object is deleted by hand before the script reaches it. (The
    // restored Job runs again; once the Job controller marks it Complete it is an orphan again.)
    wait_job_complete(&c, &ns, "g-job");
    let generated = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--script", "delete"]);
    assert_eq!(generated.code(), 1);
    std::fs::write(&script, generated.stdout()).unwrap();
    c.kubectl(&["-n", &ns, "delete", "role", "e-role"]).ok();
    let backup2 = c.scratch.join("backup-2");
    let run = run_script(&c, &script, &backup2);
    assert!(!run.out.status.success(), "the script must stop at the missing object");
    assert!(run.stderr().contains("e-role"), "{}", run.stderr());
    let failed_at = orphans.iter().position(|(_, _, n)| *n == "e-role").unwrap();
    for (_, res, name) in &orphans[..failed_at] {
        assert!(!exists(&c, &ns, res, name), "{name} comes before the failure and was deleted");
    }
    for (_, res, name) in &orphans[failed_at + 1..] {
        assert!(exists(&c, &ns, res, name), "{name} comes after the failure and must not be deleted");
    }
    let mut files: Vec<String> = std::fs::read_dir(&backup2)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| !f.starts_with('.'))
        .collect();
    files.sort();
    let before: Vec<String> = orphans[..failed_at].iter().map(|(k, _, n)| format!("{k}_{ns}_{n}.json")).collect();
    assert_eq!(files, before, "backups exactly of the objects before the failure");
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_cluster_scoped_kinds_with_all_namespaces() {
    let c = needs_cluster!("orphans_cluster_scoped_kinds_with_all_namespaces");
    let ns = unique_ns("orphans-cl");
    c.create_namespace(&ns);
    let p = ns.clone(); // a unique prefix for cluster-scoped names
    let manifest = format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {p}-unused}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {p}-aggregate, labels: {{{p}/aggregate: "true"}}}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {p}-bound}}
aggregationRule: {{clusterRoleSelectors: [{{matchLabels: {{{p}/aggregate: "true"}}}}]}}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: binds-cluster-role, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {p}-bound}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {p}-dangling}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {p}-missing}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {p}-unused}}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {p}-used}}
value: 200
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {p}-unused}}
provisioner: example.com/none
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {p}-used}}
provisioner: example.com/none
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {p}-available}}
spec: {{capacity: {{storage: 1Gi}}, accessModes: [ReadWriteOnce], hostPath: {{path: /tmp/x}}, storageClassName: {p}-used}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: uses-priority, namespace: {ns}}}
spec:
  schedule: "0 3 1 1 *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          priorityClassName: {p}-used
          restartPolicy: Never
          containers: [{{name: c, image: busybox}}]
"#
    );
    c.kubectl_stdin(&["apply", "-f", "-"], &manifest).ok();
    let run = c.drift(&[
        "orphans",
        "-A",
        "--show",
        "all",
        "--older-than",
        "0s",
        "-o",
        "json",
        "--kinds",
        "clusterrole,clusterrolebinding,priorityclass,storageclass,pv",
    ]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let report = run.report();
    let class = |kind: &str, name: &str| item(&report, kind, name)["class"].as_str().unwrap().to_string();
    assert_eq!(class("ClusterRole", &format!("{p}-unused")), "orphan");
    assert_eq!(class("ClusterRole", &format!("{p}-aggregate")), "in-use", "aggregated into another ClusterRole");
    assert_eq!(class("ClusterRole", &format!("{p}-bound")), "in-use", "bound by a RoleBinding");
    assert_eq!(class("ClusterRoleBinding", &format!("{p}-dangling")), "orphan");
    assert_eq!(class("PriorityClass", &format!("{p}-unused")), "orphan");
    assert_eq!(class("PriorityClass", &format!("{p}-used")), "in-use", "used only by a CronJob template");
    assert_eq!(class("StorageClass", &format!("{p}-unused")), "orphan");
    assert_eq!(class("StorageClass", &format!("{p}-used")), "in-use");
    assert_eq!(class("PersistentVolume", &format!("{p}-available")), "orphan");
    assert_eq!(class("ClusterRole", "view"), "protected");
    assert_eq!(class("PriorityClass", "system-node-critical"), "protected");
    assert!(item(&report, "ClusterRole", &format!("{p}-unused"))["namespace"].is_null());
    // Clean up what a cluster-wide test leaves outside its namespace.
    c.kubectl_stdin(&["delete", "--ignore-not-found", "-f", "-"], &manifest).ok();
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_a_kind_it_may_not_list_is_an_error_never_clean() {
    let c = needs_cluster!("orphans_a_kind_it_may_not_list_is_an_error_never_clean");
    install_reference_crds(&c);
    let ns = unique_ns("orphans-rbac");
    c.create_namespace(&ns);
    // A user who may list ConfigMaps, pods and pod templates, Ingresses, ReferenceGrants and
    // Helm storage in the namespace, but not ServiceAccounts, other custom resources or
    // anything cluster-wide.
    apply(
        &c,
        &ns,
        &format!(
            r#"
apiVersion: v1
kind: ServiceAccount
metadata: {{name: limited}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: limited}}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets, pods]
  verbs: [list]
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets, replicasets]
  verbs: [list]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: [list]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [list]
- apiGroups: [gateway.networking.k8s.io]
  resources: [referencegrants]
  verbs: [list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: limited}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: limited}}
subjects: [{{kind: ServiceAccount, name: limited, namespace: {ns}}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: stale}}
"#
        ),
    );
    let kc = c.token_kubeconfig(&ns, "limited");
    let kc = kc.to_str().unwrap();
    // ConfigMaps: the built-in kinds needed are allowed, but custom resources (which could
    // name a ConfigMap) are not: the report says which kinds were not read, the unused
    // ConfigMap is not called an orphan, and the scan is incomplete (exit 2).
    let partial = c.drift(&[
        "--kubeconfig",
        kc,
        "orphans",
        "--kinds",
        "configmap",
        "--older-than",
        "0s",
        "--show",
        "all",
        "-o",
        "json",
    ]);
    assert_eq!(partial.code(), 2, "{}", partial.stderr());
    let report = partial.report();
    let skipped = report["summary"]["skippedKinds"].as_array().unwrap();
    for resource in ["gizmos.orphans.drift.example.com", "clustersecretstores.external-secrets.io"] {
        let k = skipped.iter().find(|k| k["resource"] == resource).unwrap_or_else(|| panic!("{resource}: {skipped:?}"));
        assert!(k["reason"].as_str().unwrap().contains("forbidden"), "{k}");
    }
    let stale = item(&report, "ConfigMap", "stale");
    assert_eq!(stale["class"], "ignored", "{stale}");
    assert!(stale["reasons"][0].as_str().unwrap().starts_with("not certain: custom resources "), "{stale}");
    assert_eq!(report["summary"]["orphan"], 0);
    // Secrets also need ServiceAccounts and Ingresses, which this user may not list: an error
    // that names what could not be examined, and no report.
    let denied = c.drift(&["--kubeconfig", kc, "orphans", "--kinds", "secret", "--older-than", "0s", "-o", "json"]);
    assert_eq!(denied.code(), 2, "a partial scan is an error");
    let err = denied.stderr();
    assert!(err.contains("forbidden") && err.contains("cannot examine Secret"), "{err}");
    // JSON: the cluster's entry holds the error, no report.
    let out: serde_json::Value = serde_json::from_str(&denied.stdout()).unwrap();
    let entry = &out["clusters"][0];
    assert!(entry.get("report").is_none(), "no report for a partial scan: {out:#}");
    assert!(entry["error"].as_str().is_some_and(|e| e.contains("cannot examine Secret")), "{out:#}");
    // The default (every namespaced kind) fails the same way.
    assert_eq!(c.drift(&["--kubeconfig", kc, "orphans"]).code(), 2);
}

/// Install the test stand-ins of the CRDs the reference rules read, and wait until served.
/// Flux's GitRepository is the real CRD, which `scripts/test-env up` installs (with
/// source-controller running): without it, the test fails here.
fn install_reference_crds(c: &Cluster) {
    crate::flux::flux_env();
    for f in ["gateway-api.yaml", "volumesnapshotclass.yaml", "gizmo.yaml", "operators.yaml"] {
        let path = crate::common::fixture(&format!("crds/{f}"));
        let path = path.to_str().unwrap();
        c.kubectl(&["apply", "-f", path]).ok();
        c.kubectl(&["wait", "--for", "condition=established", "--timeout=60s", "-f", path]).ok();
    }
}

/// Objects that are used only through storage, ingress-controller annotations, Gateway API
/// routes and custom resources, next to truly unused ones. `{p}` prefixes cluster-scoped names.
fn references_manifest(ns: &str, web: &str, p: &str) -> String {
    let secrets = [
        "pv-np",
        "pv-iscsi",
        "pv-deletion",
        "sc-prov",
        "vsc-snap",
        "nginx-auth",
        "nginx-ca",
        "haproxy-ca",
        "gizmo-creds",
        "es-target",
        "store-creds",
        "mon-auth",
        "prom-extra",
        "am-config",
        "git-auth",
        "traefik-users",
        "sec-truly-unused",
    ];
    let mut out: String = secrets
        .iter()
        .map(|n| format!("apiVersion: v1\nkind: Secret\nmetadata: {{name: {n}, namespace: {ns}}}\nstringData: {{v: \"1\"}}\n---\n"))
        .collect();
    out.push_str(&format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: data-stage-{p}, namespace: {ns}}}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata:\n  name: argo-repo\n  namespace: {ns}\n  labels: {{argocd.argoproj.io/secret-type: repository}}\n---\n"
    ));
    for n in ["headers", "flux-values", "prom-cm", "cm-truly-unused"] {
        out.push_str(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: {ns}}}\n---\n"));
    }
    for n in [
        "route-local",
        "grpc-local",
        "tls-local",
        "tcp-local",
        "xns-granted",
        "xns-denied",
        "default-be",
        "traefik-svc",
        "svc-truly-unused",
    ] {
        out.push_str(&format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {n}, namespace: {ns}}}\nspec: {{ports: [{{port: 80}}]}}\n---\n"
        ));
    }
    for n in ["gizmo-sa", "sa-truly-unused"] {
        out.push_str(&format!("apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {n}, namespace: {ns}}}\n---\n"));
    }
    out.push_str(&format!(
        r#"apiVersion: v1
kind: PersistentVolume
metadata: {{name: {p}-csi}}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  csi: {{driver: csi.example.com, volumeHandle: v1, nodePublishSecretRef: {{name: pv-np, namespace: {ns}}}}}
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: {p}-iscsi
  annotations:
    volume.kubernetes.io/provisioner-deletion-secret-name: pv-deletion
    volume.kubernetes.io/provisioner-deletion-secret-namespace: {ns}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteOnce]
  claimRef: {{namespace: {ns}, name: not-yet}}
  iscsi: {{targetPortal: "10.0.0.1:3260", iqn: "iqn.2001-04.com.example:storage", lun: 0, chapAuthSession: true, secretRef: {{name: pv-iscsi}}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {p}-csi}}
provisioner: csi.example.com
parameters:
  csi.storage.k8s.io/provisioner-secret-name: sc-prov
  csi.storage.k8s.io/provisioner-secret-namespace: {ns}
  csi.storage.k8s.io/node-stage-secret-name: "${{pvc.name}}-stage-{p}"
  csi.storage.k8s.io/node-stage-secret-namespace: "${{pvc.namespace}}"
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {{name: {p}-snap}}
driver: csi.example.com
deletionPolicy: Delete
parameters:
  csi.storage.k8s.io/snapshotter-secret-name: vsc-snap
  csi.storage.k8s.io/snapshotter-secret-namespace: {ns}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: annotated
  namespace: {ns}
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: nginx-auth
    nginx.ingress.kubernetes.io/auth-tls-secret: {ns}/nginx-ca
    nginx.ingress.kubernetes.io/custom-headers: {ns}/headers
    nginx.ingress.kubernetes.io/default-backend: default-be
    haproxy.org/server-ca: haproxy-ca
spec:
  rules:
  - http:
      paths: [{{path: /, pathType: Prefix, backend: {{service: {{name: route-local, port: {{number: 80}}}}}}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: local, namespace: {ns}}}
spec:
  rules: [{{backendRefs: [{{name: route-local, port: 80}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {{name: grpc, namespace: {ns}}}
spec:
  rules: [{{backendRefs: [{{name: grpc-local, port: 80}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TLSRoute
metadata: {{name: tls, namespace: {ns}}}
spec:
  rules: [{{backendRefs: [{{name: tls-local, port: 80}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {{name: tcp, namespace: {ns}}}
spec:
  rules: [{{backendRefs: [{{group: "", kind: Service, name: tcp-local, port: 80}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: remote, namespace: {web}}}
spec:
  rules: [{{backendRefs: [{{name: xns-granted, namespace: {ns}, port: 80}}, {{name: xns-denied, namespace: {ns}, port: 80}}]}}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {{name: from-web, namespace: {ns}}}
spec:
  from: [{{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: {web}}}]
  to: [{{group: "", kind: Service, name: xns-granted}}]
---
apiVersion: orphans.drift.example.com/v1
kind: Gizmo
metadata: {{name: g1, namespace: {ns}}}
spec:
  credentialsSecretRef: {{name: gizmo-creds, key: token}}
  serviceAccountName: gizmo-sa
---
apiVersion: orphans.drift.example.com/v1
kind: Gizmo
metadata: {{name: g2, namespace: {ns}}}
spec: {{size: 1}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {{name: es, namespace: {ns}}}
spec:
  secretStoreRef: {{kind: SecretStore, name: store}}
  target: {{name: es-target}}
---
apiVersion: external-secrets.io/v1
kind: SecretStore
metadata: {{name: store, namespace: {ns}}}
spec:
  provider:
    aws:
      service: SecretsManager
      auth: {{secretRef: {{accessKeyIDSecretRef: {{name: store-creds, key: id}}, secretAccessKeySecretRef: {{name: store-creds, key: secret}}}}}}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {{name: mon, namespace: {ns}}}
spec:
  selector: {{matchLabels: {{app: x}}}}
  endpoints: [{{port: web, basicAuth: {{username: {{name: mon-auth, key: user}}, password: {{name: mon-auth, key: pass}}}}}}]
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {{name: prom, namespace: {ns}}}
spec: {{secrets: [prom-extra], configMaps: [prom-cm]}}
---
apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata: {{name: am, namespace: {ns}}}
spec: {{configSecret: am-config}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: repo, namespace: {ns}}}
spec: {{url: "https://example.com/repo.git", interval: 5m, secretRef: {{name: git-auth}}, suspend: true}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {{name: hr, namespace: {ns}}}
spec:
  interval: 5m
  valuesFrom: [{{kind: ConfigMap, name: flux-values}}]
---
apiVersion: traefik.io/v1alpha1
kind: Middleware
metadata: {{name: auth, namespace: {ns}}}
spec: {{basicAuth: {{secret: traefik-users}}}}
---
apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {{name: web, namespace: {ns}}}
spec:
  routes: [{{match: "Host(`a.example`)", kind: Rule, services: [{{name: traefik-svc, port: 80}}]}}]
"#
    ));
    out
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_references_beyond_pods_make_their_targets_in_use() {
    let c = needs_cluster!("orphans_references_beyond_pods_make_their_targets_in_use");
    install_reference_crds(&c);
    let ns = unique_ns("orphans-refs");
    let web = format!("{ns}-web");
    c.create_namespace(&ns);
    c.create_namespace(&web);
    let p = ns.clone();
    let manifest = references_manifest(&ns, &web, &p);
    c.kubectl_stdin(&["apply", "-f", "-"], &manifest).ok();

    let args = ["orphans", "-n", &ns, "--older-than", "0s", "--show", "all", "-o", "json"];
    let run = c.drift(&args);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    let report = run.report();
    assert_eq!(report["summary"]["skippedKinds"], serde_json::json!([]));
    let got = classes(&report, &ns);
    let expected: &[(&str, &str, &str, &str)] = &[
        // kind, name, class, a use it must show ("" for none)
        ("Secret", "pv-np", "in-use", &format!("PersistentVolume {p}-csi spec.csi.nodePublishSecretRef")),
        ("Secret", "pv-iscsi", "in-use", &format!("PersistentVolume {p}-iscsi spec.iscsi.secretRef")),
        (
            "Secret",
            "pv-deletion",
            "in-use",
            &format!("PersistentVolume {p}-iscsi annotation volume.kubernetes.io/provisioner-deletion-secret-name"),
        ),
        (
            "Secret",
            "sc-prov",
            "in-use",
            &format!("StorageClass {p}-csi parameter csi.storage.k8s.io/provisioner-secret-name"),
        ),
        (
            "Secret",
            &format!("data-stage-{p}"),
            "in-use",
            &format!(
                "StorageClass {p}-csi parameter csi.storage.k8s.io/node-stage-secret-name (may use: template ${{pvc.name}}-stage-{p} in ${{pvc.namespace}})"
            ),
        ),
        (
            "Secret",
            "vsc-snap",
            "in-use",
            &format!("VolumeSnapshotClass {p}-snap parameter csi.storage.k8s.io/snapshotter-secret-name"),
        ),
        (
            "Secret",
            "nginx-auth",
            "in-use",
            &format!("Ingress {ns}/annotated annotation nginx.ingress.kubernetes.io/auth-secret"),
        ),
        (
            "Secret",
            "nginx-ca",
            "in-use",
            &format!("Ingress {ns}/annotated annotation nginx.ingress.kubernetes.io/auth-tls-secret"),
        ),
        ("Secret", "haproxy-ca", "in-use", &format!("Ingress {ns}/annotated annotation haproxy.org/server-ca")),
        ("Secret", "gizmo-creds", "in-use", &format!("Gizmo {ns}/g1 spec.credentialsSecretRef")),
        ("Secret", "es-target", "managed", ""),
        (
            "Secret",
            "store-creds",
            "in-use",
            &format!("SecretStore {ns}/store spec.provider.aws.auth.secretRef.accessKeyIDSecretRef"),
        ),
        ("Secret", "mon-auth", "in-use", &format!("ServiceMonitor {ns}/mon spec.endpoints[0].basicAuth.password")),
        ("Secret", "prom-extra", "in-use", &format!("Prometheus {ns}/prom spec.secrets[0]")),
        ("Secret", "am-config", "in-use", &format!("Alertmanager {ns}/am spec.configSecret")),
        ("Secret", "git-auth", "in-use", &format!("GitRepository {ns}/repo spec.secretRef")),
        ("Secret", "traefik-users", "in-use", &format!("Middleware {ns}/auth spec.basicAuth.secret")),
        ("Secret", "argo-repo", "in-use", "Argo CD (label argocd.argoproj.io/secret-type: repository)"),
        ("Secret", "sec-truly-unused", "orphan", ""),
        (
            "ConfigMap",
            "headers",
            "in-use",
            &format!("Ingress {ns}/annotated annotation nginx.ingress.kubernetes.io/custom-headers"),
        ),
        ("ConfigMap", "flux-values", "in-use", &format!("HelmRelease {ns}/hr spec.valuesFrom[0]")),
        ("ConfigMap", "prom-cm", "in-use", &format!("Prometheus {ns}/prom spec.configMaps[0]")),
        ("ConfigMap", "cm-truly-unused", "orphan", ""),
        ("Service", "route-local", "in-use", &format!("HTTPRoute {ns}/local spec.rules[0].backendRefs[0]")),
        ("Service", "grpc-local", "in-use", &format!("GRPCRoute {ns}/grpc spec.rules[0].backendRefs[0]")),
        ("Service", "tls-local", "in-use", &format!("TLSRoute {ns}/tls spec.rules[0].backendRefs[0]")),
        ("Service", "tcp-local", "in-use", &format!("TCPRoute {ns}/tcp spec.rules[0].backendRefs[0]")),
        (
            "Service",
            "xns-granted",
            "in-use",
            &format!("HTTPRoute {web}/remote spec.rules[0].backendRefs[0] (allowed by ReferenceGrant {ns}/from-web)"),
        ),
        ("Service", "xns-denied", "orphan", ""), // cross-namespace without a ReferenceGrant
        (
            "Service",
            "default-be",
            "in-use",
            &format!("Ingress {ns}/annotated annotation nginx.ingress.kubernetes.io/default-backend"),
        ),
        ("Service", "traefik-svc", "in-use", &format!("IngressRoute {ns}/web spec.routes[0].services[0]")),
        ("Service", "svc-truly-unused", "orphan", ""),
        ("ServiceAccount", "gizmo-sa", "in-use", &format!("Gizmo {ns}/g1 spec.serviceAccountName")),
        ("ServiceAccount", "sa-truly-unused", "orphan", ""),
    ];
    let mut wrong = String::new();
    for (kind, name, class, evidence) in expected {
        let key = (kind.to_string(), name.to_string());
        match got.get(&key) {
            Some(g) if g == class => {}
            other => wrong.push_str(&format!("  {kind} {name}: expected {class}, got {other:?}\n")),
        }
        if !evidence.is_empty()
            && got.contains_key(&key)
            && !used_by(&report, kind, name).contains(&evidence.to_string())
        {
            wrong.push_str(&format!("  {kind} {name}: no use {evidence:?} in {:?}\n", used_by(&report, kind, name)));
        }
    }
    assert!(wrong.is_empty(), "classes or evidence differ:\n{wrong}");
    assert_eq!(
        item(&report, "Secret", "es-target")["reasons"][0],
        format!("external-secrets ExternalSecret {ns}/es writes it")
    );

    // The readonly context gives the same answer.
    let ro = c.drift(&[&args[..], &["--context", "readonly"]].concat());
    assert_eq!(ro.code(), 1, "{}", ro.stderr());
    let ro = ro.report();
    let strip = |r: &Value| -> Vec<Value> {
        let mut items = r["items"].as_array().unwrap().clone();
        for i in &mut items {
            i.as_object_mut().unwrap().remove("ageSeconds");
        }
        items
    };
    assert_eq!(strip(&ro), strip(&report));

    // A kind over --max-custom-objects is not read: what it could reference is not called an
    // orphan, the report says so, and the scan is incomplete (exit 2).
    let capped = c.drift(&[&args[..], &["--max-custom-objects", "1"]].concat());
    assert_eq!(capped.code(), 2, "{}", capped.stderr());
    let capped = capped.report();
    let skipped = capped["summary"]["skippedKinds"].as_array().unwrap();
    let gizmos = skipped
        .iter()
        .find(|k| k["resource"] == "gizmos.orphans.drift.example.com")
        .unwrap_or_else(|| panic!("Gizmos skipped: {skipped:?}"));
    assert_eq!(gizmos["namespace"], ns.as_str());
    assert!(gizmos["reason"].as_str().unwrap().contains("over --max-custom-objects 1"), "{gizmos}");
    let cm = item(&capped, "ConfigMap", "cm-truly-unused");
    assert_eq!(cm["class"], "ignored");
    assert!(cm["reasons"][0].as_str().unwrap().contains("gizmos.orphans.drift.example.com were not read"), "{cm}");
    let table = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--max-custom-objects", "1"]);
    assert_eq!(table.code(), 2);
    assert!(
        table.stdout().contains("incomplete: custom resources gizmos.orphans.drift.example.com"),
        "{}",
        table.stdout()
    );
    // Kinds no custom resource can name are still judged.
    let roles = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--kinds", "role", "--max-custom-objects", "1"]);
    assert_eq!(roles.code(), 0, "{}", roles.stderr());

    let cluster_scoped = format!(
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {p}-csi}}\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {p}-iscsi}}\n---\n\
         apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {p}-csi}}\n---\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotClass\nmetadata: {{name: {p}-snap}}\n"
    );
    c.kubectl_stdin(&["delete", "--ignore-not-found", "--wait=false", "-f", "-"], &cluster_scoped).ok();
}

/// A `--show all -o json` scan of namespace `ns` (`--older-than 0s`), with its exit code.
fn scan_all(c: &Cluster, ns: &str, extra: &[&str]) -> (i32, Value) {
    let args = [&["orphans", "-n", ns, "--older-than", "0s", "--show", "all", "-o", "json"][..], extra].concat();
    let run = c.drift(&args);
    assert!(matches!(run.code(), 0 | 1), "orphans failed ({}): {}", run.code(), run.stderr());
    (run.code(), run.report())
}

/// Wait until pod `name` is Running and Ready on a node: scheduled by kube-scheduler, run by
/// KWOK. Nothing here writes its status.
fn wait_pod_running_ready(c: &Cluster, ns: &str, name: &str) -> Value {
    let mut seen = Value::Null;
    wait_until(&format!("pod {ns}/{name} to be Running and Ready (needs kube-scheduler and KWOK)"), 60, || {
        let pod = get_json(c, ns, "pod", name)?;
        let ok = pod["status"]["phase"] == "Running"
            && condition_true(&pod, "Ready")
            && pod["spec"]["nodeName"].as_str().is_some_and(|n| !n.is_empty());
        let status = pod["status"].to_string();
        seen = pod;
        if ok { Ok(()) } else { Err(status) }
    });
    seen
}

/// kor's rule is "a live pod references it"; here the pod really runs (scheduled, Running and
/// Ready), has no owner, and is the only thing that names the ConfigMap. Once the pod is
/// deleted, nothing does: the same ConfigMap is an orphan.
#[ignore = "needs the local control plane"]
#[test]
fn orphans_a_configmap_mounted_only_by_a_running_bare_pod_is_in_use_until_the_pod_goes() {
    let c = needs_cluster!("orphans_a_configmap_mounted_only_by_a_running_bare_pod_is_in_use_until_the_pod_goes");
    let ns = unique_ns("orphans-pod");
    c.create_namespace(&ns);
    apply(
        &c,
        &ns,
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: mounted}
data: {app.conf: "greeting = hello"}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: app
    image: busybox
    volumeMounts: [{name: conf, mountPath: /etc/app}]
  volumes:
  - name: conf
    configMap: {name: mounted}
"#,
    );
    let pod = wait_pod_running_ready(&c, &ns, "solo");
    assert!(pod["metadata"].get("ownerReferences").is_none(), "a bare pod: {}", pod["metadata"]);
    let node = pod["spec"]["nodeName"].as_str().unwrap();
    assert!(node.starts_with("kwok-node-"), "scheduled onto a KWOK node, not {node}");
    assert_eq!(pod["status"]["containerStatuses"][0]["ready"], true, "{}", pod["status"]);

    let (code, report) = scan_all(&c, &ns, &[]);
    let cm = item(&report, "ConfigMap", "mounted");
    assert_eq!(cm["class"], "in-use", "{cm}");
    assert_eq!(used_by(&report, "ConfigMap", "mounted"), vec![format!("Pod {ns}/solo volume conf")]);
    assert_eq!(cm["reasons"], serde_json::json!([format!("used by Pod {ns}/solo volume conf")]));
    assert_eq!(report["summary"]["orphan"], 0, "{report}");
    assert_eq!(code, 0, "no orphan: exit 0");

    // The pod goes (KWOK removes a deleted pod at once): nothing names the ConfigMap any more.
    c.kubectl(&["-n", &ns, "delete", "pod", "solo", "--wait=true", "--timeout=60s"]).ok();
    assert!(!exists(&c, &ns, "pods", "solo"));
    let (code, report) = scan_all(&c, &ns, &[]);
    let cm = item(&report, "ConfigMap", "mounted");
    assert_eq!(cm["class"], "orphan", "{cm}");
    assert_eq!(cm["usedBy"], serde_json::json!([]), "{cm}");
    assert_eq!(
        cm["reasons"],
        serde_json::json!(["no pod, pod template, Ingress or custom resource references it"]),
        "{cm}"
    );
    assert_eq!(report["summary"]["orphan"], 1, "{report}");
    assert_eq!(code, 1, "an orphan: exit 1");
}

/// A Job that really ran: its pod was scheduled, KWOK made it Succeed, the Job controller
/// marked the Job Complete (nothing here writes a status). The finished Job is an orphan (no
/// CronJob keeps it); what only it reads is in use, by its template and by its finished pod
/// that is still there, until the Job is deleted with its pods: then those are orphans.
#[ignore = "needs the local control plane"]
#[test]
fn orphans_a_job_that_really_completed_is_an_orphan_and_what_only_it_reads_follows_it() {
    let c = needs_cluster!("orphans_a_job_that_really_completed_is_an_orphan_and_what_only_it_reads_follows_it");
    let ns = unique_ns("orphans-job");
    c.create_namespace(&ns);
    apply(
        &c,
        &ns,
        r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: job-input}
data: {MODE: nightly}
---
apiVersion: v1
kind: Secret
metadata: {name: job-token}
stringData: {token: abc}
---
apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: run
        image: busybox
        envFrom: [{configMapRef: {name: job-input}}]
        env:
        - name: TOKEN
          valueFrom: {secretKeyRef: {name: job-token, key: token}}
"#,
    );
    wait_job_complete(&c, &ns, "report");
    let job = get_json(&c, &ns, "job", "report").unwrap();
    assert_eq!(job["spec"].get("suspend").and_then(Value::as_bool), Some(false), "{}", job["spec"]);
    assert_eq!(job["status"]["succeeded"], 1, "{}", job["status"]);
    assert!(job["status"]["completionTime"].is_string(), "{}", job["status"]);
    // Its pod ran on a KWOK node and Succeeded, and is kept (as a kubelet's would be).
    let pods = c.kubectl(&["-n", &ns, "get", "pods", "-l", "job-name=report", "-o", "json"]).ok();
    let pods: Value = serde_json::from_str(&pods).unwrap();
    let pods = pods["items"].as_array().unwrap();
    assert_eq!(pods.len(), 1, "one pod, backoffLimit 0");
    assert_eq!(pods[0]["status"]["phase"], "Succeeded", "{}", pods[0]["status"]);
    assert!(pods[0]["spec"]["nodeName"].as_str().unwrap_or("").starts_with("kwok-node-"), "{}", pods[0]["spec"]);
    assert_eq!(pods[0]["metadata"]["ownerReferences"][0]["name"], "report");

    let (code, report) = scan_all(&c, &ns, &[]);
    let j = item(&report, "Job", "report");
    assert_eq!(j["class"], "orphan", "{j}");
    assert_eq!(j["reasons"], serde_json::json!(["finished (Complete) and no CronJob keeps it"]));
    for (kind, name, via) in
        [("ConfigMap", "job-input", "container run envFrom"), ("Secret", "job-token", "container run env TOKEN")]
    {
        assert_eq!(item(&report, kind, name)["class"], "in-use", "{kind} {name}");
        assert_eq!(
            used_by(&report, kind, name),
            vec![format!("Job {ns}/report {via}"), format!("pods of Job {ns}/report {via}")],
            "{kind} {name}: the Job's template and its finished pod"
        );
    }
    assert_eq!(report["summary"]["orphan"], 1, "only the Job: {report}");
    assert_eq!(code, 1);

    // The delete script offers the Job alone.
    let script = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--script", "delete"]);
    assert_eq!(script.code(), 1, "{}", script.stderr());
    assert_eq!(script.stdout().matches("\nremove '").count(), 1, "{}", script.stdout());
    assert!(!script.stdout().contains("job-input") && !script.stdout().contains("job-token"), "{}", script.stdout());

    // The Job goes, and its pod with it (foreground: kubectl returns once the pod is gone).
    c.kubectl(&["-n", &ns, "delete", "job", "report", "--cascade=foreground", "--wait=true", "--timeout=60s"]).ok();
    let left = c.kubectl(&["-n", &ns, "get", "pods", "-o", "name"]).ok();
    assert!(left.trim().is_empty(), "the Job's pod is gone: {left}");
    let (code, report) = scan_all(&c, &ns, &[]);
    for (kind, name) in [("ConfigMap", "job-input"), ("Secret", "job-token")] {
        let i = item(&report, kind, name);
        assert_eq!(i["class"], "orphan", "{i}");
        assert_eq!(i["usedBy"], serde_json::json!([]), "{i}");
    }
    assert_eq!(report["summary"]["orphan"], 2, "{report}");
    assert_eq!(code, 1);
}

/// issue 31: cert-manager (its controller running against the cluster) issues a Certificate
/// from a selfSigned Issuer and writes its Secret. `orphans` calls that Secret managed by the
/// Certificate (removing it would only make cert-manager write it again), never an orphan or a
/// Helm leftover, with the admin and the read-only context. With the Certificate deleted,
/// cert-manager leaves the Secret behind (it does not own it): then it is an orphan.
#[ignore = "needs the local control plane"]
#[test]
fn orphans_a_certificates_secret_is_managed_by_cert_manager() {
    let c = needs_cluster!("orphans_a_certificates_secret_is_managed_by_cert_manager");
    let ns = unique_ns("orphans-cert");
    c.create_namespace(&ns);
    let applied = c.kubectl_stdin(
        &["apply", "-n", &ns, "-f", "-"],
        r#"
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web-cert}
spec:
  secretName: web-tls
  commonName: web.example
  dnsNames: [web.example]
  privateKey: {algorithm: ECDSA, size: 256}
  issuerRef: {name: selfsigned, kind: Issuer}
"#,
    );
    assert!(
        applied.out.status.success(),
        "creating the Issuer and Certificate needs cert-manager's CRDs (scripts/test-env up installs them): {}",
        applied.stderr()
    );
    wait_until(&format!("Certificate {ns}/web-cert to be Ready (needs cert-manager's controller)"), 90, || {
        let cert = get_json(&c, &ns, "certificate", "web-cert")?;
        if condition_true(&cert, "Ready") { Ok(()) } else { Err(cert["status"].to_string()) }
    });
    let secret = get_json(&c, &ns, "secret", "web-tls").expect("cert-manager wrote the Secret");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(secret["metadata"]["annotations"]["cert-manager.io/certificate-name"], "web-cert");
    assert!(secret["data"]["tls.crt"].as_str().is_some_and(|s| !s.is_empty()), "a certificate was issued");
    let writers = c
        .kubectl(&[
            "-n",
            &ns,
            "get",
            "secret",
            "web-tls",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ])
        .ok();
    assert!(
        !writers.trim().is_empty() && writers.split_whitespace().all(|m| m.starts_with("cert-manager")),
        "written by cert-manager only: {writers}"
    );

    let expect_managed = |report: &Value, context: &str| {
        let s = item(report, "Secret", "web-tls");
        assert_eq!(s["class"], "managed", "{context}: {s}");
        assert_eq!(
            s["reasons"],
            serde_json::json!([format!("cert-manager Certificate {ns}/web-cert writes it")]),
            "{context}: {s}"
        );
        assert!(s["helmRelease"].is_null(), "{context}: no Helm release made it: {s}");
        assert_eq!(s["usedBy"], serde_json::json!([]), "{context}: no pod mounts it: {s}");
        let orphans: Vec<&Value> =
            report["items"].as_array().unwrap().iter().filter(|i| i["class"] == "orphan").collect();
        assert!(orphans.is_empty(), "{context}: nothing cert-manager made is an orphan: {orphans:?}");
        assert_eq!(report["summary"]["leftover"], 0, "{context}");
    };
    let (code, admin) = scan_all(&c, &ns, &[]);
    assert_eq!(code, 0, "no orphan: exit 0");
    expect_managed(&admin, "admin");
    let (code, ro) = scan_all(&c, &ns, &["--context", "readonly", "--kinds", "secret"]);
    assert_eq!(code, 0);
    expect_managed(&ro, "readonly, --kinds secret");
    let script = c.drift(&["orphans", "-n", &ns, "--older-than", "0s", "--script", "delete"]);
    assert_eq!(script.code(), 0, "{}", script.stderr());
    assert!(!script.stdout().contains("web-tls"), "{}", script.stdout());

    // Without its Certificate, nothing would write the Secret again: it is left behind.
    c.kubectl(&["-n", &ns, "delete", "certificate", "web-cert", "--wait=true", "--timeout=60s"]).ok();
    assert!(exists(&c, &ns, "secrets", "web-tls"), "cert-manager does not delete the Secret of a deleted Certificate");
    let (code, report) = scan_all(&c, &ns, &[]);
    let s = item(&report, "Secret", "web-tls");
    assert_eq!(s["class"], "orphan", "{s}");
    assert_eq!(code, 1);
}
