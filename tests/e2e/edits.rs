//! Hand edits as people type them: a sweep of kubectl commands (`set`, `scale`, `label`,
//! `annotate`, client-side and server-side `apply`, strategic/merge/JSON patches, `edit`,
//! `replace`, `delete`) against Helm 3 and Helm 4 releases of the shop chart. Each edit must be
//! found once, on the right object and path, with its manager; then the printed reconcile
//! commands, run exactly as printed, must leave the release clean (extra objects aside).
//!
//! Edits that touch different fields share one install (a group); edits of the same field go to
//! another group, each group a fresh install in its own namespace. The counts found / once /
//! reconciled are printed per Helm version (`--nocapture` shows them).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{Cluster, Helm, fixture, unique_ns};

/// One finding as the sweep compares them: kind, name, path ("" for an object's state), change
/// (or the object state `missing`/`extra`), manager.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Finding {
    kind: String,
    name: String,
    path: String,
    change: String,
    manager: Option<String>,
}

/// What an edit must produce. `manager: None` means the report names none (removals and deleted
/// objects: the API server keeps no record of who removed something).
struct Expect {
    kind: &'static str,
    name: &'static str,
    path: &'static str,
    change: &'static str,
    manager: Option<&'static str>,
}

/// One edit: the shell command as a person types it (`$NS` is the namespace) and its findings,
/// or, for an edit that changes nothing the manifest describes, the object that must stay clean.
struct Edit {
    command: &'static str,
    expect: Vec<Expect>,
    quiet_on: Option<(&'static str, &'static str)>,
}

fn e(
    kind: &'static str,
    name: &'static str,
    path: &'static str,
    change: &'static str,
    manager: &'static str,
) -> Expect {
    Expect { kind, name, path, change, manager: (!manager.is_empty()).then_some(manager) }
}

fn edit(command: &'static str, expect: Vec<Expect>) -> Edit {
    Edit { command, expect, quiet_on: None }
}

/// An edit that is not drift: nothing may be reported on `kind name`.
fn quiet(command: &'static str, kind: &'static str, name: &'static str) -> Edit {
    Edit { command, expect: Vec::new(), quiet_on: Some((kind, name)) }
}

const C: &str = "spec.template.spec.containers";

/// `{ns}` in names and paths is the namespace; `{c}` the pod template's containers; `{h3:X}` is
/// `.X` under Helm 3 and nothing under Helm 4. Helm 3 creates (and owns) the API's empty
/// `resources: {}` of a container, so `kubectl set resources` adds a key inside Helm's map, which is
/// the finding; Helm 4 applies server-side and owns no defaults, so the whole map is the addition.
fn expand(s: &str, ns: &str, helm: Helm) -> String {
    let mut out = s.replace("{ns}", ns).replace("{c}", C);
    while let Some(start) = out.find("{h3:") {
        let end = start + out[start..].find('}').expect("a closed {h3:...}");
        let key = out[start + 4..end].to_string();
        let with = if helm == Helm::V3 { format!(".{key}") } else { String::new() };
        out.replace_range(start..=end, &with);
    }
    out
}

/// The groups of edits: within a group every edit changes different fields.
fn groups() -> Vec<Vec<Edit>> {
    let set_and_scale = vec![
        // The issue's case: no -c, `api` has env in the chart, `sidecar` has `env: []`.
        edit(
            "kubectl -n $NS set env deploy/shop-api FOO=bar",
            vec![
                e("Deployment", "shop-api", "{c}[name=api].env[name=FOO]", "added", "kubectl-set"),
                e("Deployment", "shop-api", "{c}[name=sidecar].env", "added", "kubectl-set"),
            ],
        ),
        edit(
            "kubectl -n $NS set env deploy/shop-worker QUEUE_DEBUG=1",
            vec![e("Deployment", "shop-worker", "{c}[name=worker].env", "added", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set env deploy/shop-web -c web LOG_LEVEL=debug",
            vec![e("Deployment", "shop-web", "{c}[name=web].env[name=LOG_LEVEL].value", "changed", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set env sts/shop-db --from=configmap/shop-config --keys=LOG_LEVEL",
            vec![e("StatefulSet", "shop-db", "{c}[name=db].env", "added", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set image deploy/shop-web web=registry.example/shop/web:1.28",
            vec![e("Deployment", "shop-web", "{c}[name=web].image", "changed", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set image ds/shop-agent '*=registry.example/agent:2.1'",
            vec![e("DaemonSet", "shop-agent", "{c}[name=agent].image", "changed", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set image cronjob/shop-report report=registry.example/report:1.1",
            vec![e(
                "CronJob",
                "shop-report",
                "spec.jobTemplate.spec.template.spec.containers[name=report].image",
                "changed",
                "kubectl-set",
            )],
        ),
        edit(
            "kubectl -n $NS set resources deploy/shop-worker --limits=cpu=200m,memory=128Mi",
            vec![e("Deployment", "shop-worker", "{c}[name=worker].resources{h3:limits}", "added", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set resources ds/shop-agent -c agent --limits=memory=128Mi",
            vec![e("DaemonSet", "shop-agent", "{c}[name=agent].resources.limits.memory", "changed", "kubectl-set")],
        ),
        edit(
            "kubectl -n $NS set serviceaccount deploy/shop-api shop-web",
            vec![e("Deployment", "shop-api", "spec.template.spec.serviceAccountName", "added", "kubectl-set")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-api --type=json -p '[{"op":"remove","path":"/spec/template/spec/tolerations/0"}]'"#,
            vec![e("Deployment", "shop-api", "spec.template.spec.tolerations", "removed", "")],
        ),
        edit(
            r#"kubectl -n $NS patch svc shop-web --type=json -p '[{"op":"replace","path":"/spec/ports/0/port","value":8081}]'"#,
            vec![e("Service", "shop-web", "spec.ports[name=http].port", "changed", "kubectl-patch")],
        ),
        edit(
            "kubectl -n $NS scale deploy/shop-web --replicas=5",
            vec![e("Deployment", "shop-web", "spec.replicas", "changed", "kubectl")],
        ),
        edit(
            "kubectl -n $NS scale sts/shop-db --replicas=3",
            vec![e("StatefulSet", "shop-db", "spec.replicas", "changed", "kubectl")],
        ),
    ];
    let labels_apply_patches = vec![
        edit(
            "kubectl -n $NS label deploy/shop-web team=payments",
            vec![e("Deployment", "shop-web", "metadata.labels.team", "added", "kubectl-label")],
        ),
        edit(
            "kubectl -n $NS label svc/shop-db helm.sh/chart-",
            vec![e("Service", "shop-db", r#"metadata.labels["helm.sh/chart"]"#, "removed", "")],
        ),
        edit(
            "kubectl -n $NS label --overwrite sa/shop-web app.kubernetes.io/name=other",
            vec![e(
                "ServiceAccount",
                "shop-web",
                r#"metadata.labels["app.kubernetes.io/name"]"#,
                "changed",
                "kubectl-label",
            )],
        ),
        edit(
            "kubectl -n $NS label pvc/shop-uploads backup=daily",
            vec![e("PersistentVolumeClaim", "shop-uploads", "metadata.labels.backup", "added", "kubectl-label")],
        ),
        edit(
            "kubectl -n $NS annotate ingress/shop-web nginx.ingress.kubernetes.io/rewrite-target=/",
            vec![e(
                "Ingress",
                "shop-web",
                r#"metadata.annotations["nginx.ingress.kubernetes.io/rewrite-target"]"#,
                "added",
                "kubectl-annotate",
            )],
        ),
        edit(
            "kubectl -n $NS annotate deploy/shop-api shop.example.com/owner-",
            vec![e("Deployment", "shop-api", r#"metadata.annotations["shop.example.com/owner"]"#, "removed", "")],
        ),
        edit(
            "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: shop-config\\ndata:\\n  NEW_KEY: x\\n' | kubectl -n $NS apply -f -",
            vec![e("ConfigMap", "shop-config", "data.NEW_KEY", "added", "kubectl-client-side-apply")],
        ),
        edit(
            "printf 'apiVersion: policy/v1\\nkind: PodDisruptionBudget\\nmetadata:\\n  name: shop-web\\nspec:\\n  minAvailable: 2\\n' | kubectl -n $NS apply --server-side --force-conflicts -f -",
            vec![e("PodDisruptionBudget", "shop-web", "spec.minAvailable", "changed", "kubectl")],
        ),
        edit(
            "printf 'apiVersion: v1\\nkind: Service\\nmetadata:\\n  name: shop-web\\nspec:\\n  ports:\\n  - name: metrics\\n    port: 9090\\n' | kubectl -n $NS apply --server-side --force-conflicts -f -",
            vec![e("Service", "shop-web", "spec.ports[name=metrics]", "added", "kubectl")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-web -p '{"spec":{"template":{"spec":{"containers":[{"name":"debug","image":"busybox:1.36"}]}}}}'"#,
            vec![e("Deployment", "shop-web", "{c}[name=debug]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-api -p '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}'"#,
            vec![e("Deployment", "shop-api", "{c}[name=sidecar]", "removed", "")],
        ),
        edit(
            r#"kubectl -n $NS patch sts shop-db --type=json -p '[{"op":"add","path":"/spec/template/spec/containers/0/ports/-","value":{"name":"metrics","containerPort":9187}}]'"#,
            vec![e("StatefulSet", "shop-db", "{c}[name=db].ports[name=metrics]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-worker -p '{"spec":{"template":{"spec":{"volumes":[{"name":"tmp","emptyDir":{}}]}}}}'"#,
            vec![e("Deployment", "shop-worker", "spec.template.spec.volumes", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-worker --type=json -p '[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--verbose"}]'"#,
            vec![e("Deployment", "shop-worker", "{c}[name=worker].args", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-api --type=json -p '[{"op":"add","path":"/spec/template/spec/tolerations/-","value":{"key":"gpu","operator":"Exists"}}]'"#,
            vec![e("Deployment", "shop-api", "spec.template.spec.tolerations[1]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch ds shop-agent -p '{"spec":{"template":{"spec":{"tolerations":[{"operator":"Exists"}]}}}}'"#,
            vec![e("DaemonSet", "shop-agent", "spec.template.spec.tolerations", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch role shop-reader --type=json -p '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]'"#,
            vec![e("Role", "shop-reader", "rules[1]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch rolebinding shop-reader --type=json -p '[{"op":"add","path":"/subjects/-","value":{"kind":"User","name":"mallory","apiGroup":"rbac.authorization.k8s.io"}}]'"#,
            vec![e("RoleBinding", "shop-reader", "subjects[name=mallory]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl patch clusterrolebinding $NS-shop-nodes --type=json -p '[{"op":"add","path":"/subjects/-","value":{"kind":"User","name":"mallory","apiGroup":"rbac.authorization.k8s.io"}}]'"#,
            vec![e("ClusterRoleBinding", "{ns}-shop-nodes", "subjects[name=mallory]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl patch clusterrole $NS-shop-nodes --type=merge -p '{"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list","watch"]}]}'"#,
            vec![e("ClusterRole", "{ns}-shop-nodes", "rules[0].verbs", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch ingress shop-web --type=json -p '[{"op":"add","path":"/spec/rules/-","value":{"host":"admin.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"shop-web","port":{"name":"http"}}}}]}}}]'"#,
            vec![e("Ingress", "shop-web", "spec.rules[1]", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch ingress shop-web --type=json -p '[{"op":"add","path":"/spec/tls/0/hosts/-","value":"admin.example.com"}]'"#,
            vec![e("Ingress", "shop-web", "spec.tls[0].hosts", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch hpa shop-worker --type=merge -p '{"spec":{"maxReplicas":10}}'"#,
            vec![e("HorizontalPodAutoscaler", "shop-worker", "spec.maxReplicas", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch cronjob shop-report --type=merge -p '{"spec":{"schedule":"*/5 * * * *"}}'"#,
            vec![e("CronJob", "shop-report", "spec.schedule", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch secret shop-secret --type=merge -p '{"stringData":{"extra":"hand-made"}}'"#,
            vec![e("Secret", "shop-secret", "data.extra", "added", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch configmap shop-config --type=json -p '[{"op":"remove","path":"/data/LOG_LEVEL"}]'"#,
            vec![e("ConfigMap", "shop-config", "data.LOG_LEVEL", "removed", "")],
        ),
    ];
    let removals_replacements_deletions = vec![
        edit(
            "kubectl -n $NS set env deploy/shop-web LOG_LEVEL-",
            vec![e("Deployment", "shop-web", "{c}[name=web].env[name=LOG_LEVEL]", "removed", "")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-web -p '{"spec":{"template":{"spec":{"containers":[{"name":"web","ports":[{"containerPort":8080,"$patch":"delete"}]}]}}}}'"#,
            vec![e("Deployment", "shop-web", "{c}[name=web].ports", "removed", "")],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-web --type=json -p '[{"op":"remove","path":"/spec/template/spec/containers/0/volumeMounts"},{"op":"remove","path":"/spec/template/spec/volumes"}]'"#,
            vec![
                e("Deployment", "shop-web", "{c}[name=web].volumeMounts", "removed", ""),
                e("Deployment", "shop-web", "spec.template.spec.volumes", "removed", ""),
            ],
        ),
        edit(
            "kubectl -n $NS set resources deploy/shop-api -c '*' --requests=cpu=100m",
            vec![
                e("Deployment", "shop-api", "{c}[name=api].resources{h3:requests}", "added", "kubectl-set"),
                e("Deployment", "shop-api", "{c}[name=sidecar].resources{h3:requests}", "added", "kubectl-set"),
            ],
        ),
        edit(
            r#"kubectl -n $NS patch deploy shop-api --type=json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/args","value":["--port","9090"]}]'"#,
            vec![e("Deployment", "shop-api", "{c}[name=api].args", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl -n $NS patch secret shop-secret --type=json -p '[{"op":"remove","path":"/data/password"}]'"#,
            vec![e("Secret", "shop-secret", "data.password", "removed", "")],
        ),
        edit(
            r#"kubectl -n $NS patch cronjob shop-report --type=json -p '[{"op":"replace","path":"/spec/jobTemplate/spec/template/spec/containers/0/command","value":["/bin/report","--weekly"]}]'"#,
            vec![e(
                "CronJob",
                "shop-report",
                "spec.jobTemplate.spec.template.spec.containers[name=report].command",
                "changed",
                "kubectl-patch",
            )],
        ),
        edit(
            r#"kubectl -n $NS patch role shop-reader --type=json -p '[{"op":"replace","path":"/rules/0/resources","value":["configmaps","secrets"]}]'"#,
            vec![e("Role", "shop-reader", "rules[0].resources", "changed", "kubectl-patch")],
        ),
        edit(
            r#"kubectl patch clusterrolebinding $NS-shop-nodes --type=json -p '[{"op":"replace","path":"/subjects/0/name","value":"default"}]'"#,
            // Subjects are matched by name: a renamed subject is one removed and one added. The
            // list is atomic in managedFields, so its new owner is known for the removal too.
            vec![
                e("ClusterRoleBinding", "{ns}-shop-nodes", "subjects[name=shop-web]", "removed", "kubectl-patch"),
                e("ClusterRoleBinding", "{ns}-shop-nodes", "subjects[name=default]", "added", "kubectl-patch"),
            ],
        ),
        edit(
            "kubectl -n $NS get deploy shop-worker -o json | sed 's/\"--queue\"/\"--queues\"/' | kubectl replace -f -",
            vec![e("Deployment", "shop-worker", "{c}[name=worker].args", "changed", "kubectl-replace")],
        ),
        edit(
            "kubectl -n $NS get configmap shop-config -o json | sed 's/timeout: 30s/timeout: 60s/' | kubectl replace -f -",
            vec![e("ConfigMap", "shop-config", r#"data["app.yaml"]"#, "changed", "kubectl-replace")],
        ),
        edit(
            "KUBE_EDITOR=\"sed -i -e 's/shop.example.com/shop.example.org/g'\" kubectl -n $NS edit ingress/shop-web",
            vec![
                e("Ingress", "shop-web", "spec.rules[0].host", "changed", "kubectl-edit"),
                e("Ingress", "shop-web", "spec.tls[0].hosts", "changed", "kubectl-edit"),
            ],
        ),
        edit(
            "printf 'apiVersion: apps/v1\\nkind: Deployment\\nmetadata:\\n  name: shop-api\\nspec:\\n  template:\\n    spec:\\n      containers:\\n      - name: sidecar\\n        image: registry.example/proxy:1.1\\n' | kubectl -n $NS apply --server-side --force-conflicts -f -",
            vec![e("Deployment", "shop-api", "{c}[name=sidecar].image", "changed", "kubectl")],
        ),
        edit(
            "printf 'apiVersion: autoscaling/v2\\nkind: HorizontalPodAutoscaler\\nmetadata:\\n  name: shop-worker\\nspec:\\n  minReplicas: 1\\n  maxReplicas: 6\\n  scaleTargetRef:\\n    apiVersion: apps/v1\\n    kind: Deployment\\n    name: shop-worker\\n' | kubectl -n $NS apply -f -",
            vec![e(
                "HorizontalPodAutoscaler",
                "shop-worker",
                "spec.maxReplicas",
                "changed",
                "kubectl-client-side-apply",
            )],
        ),
        // A restart changes no field the manifest describes (only the restartedAt annotation).
        quiet("kubectl -n $NS rollout restart ds/shop-agent", "DaemonSet", "shop-agent"),
        quiet("kubectl -n $NS rollout restart sts/shop-db", "StatefulSet", "shop-db"),
        edit("kubectl -n $NS delete networkpolicy shop-web", vec![e("NetworkPolicy", "shop-web", "", "missing", "")]),
        edit("kubectl -n $NS delete svc shop-db", vec![e("Service", "shop-db", "", "missing", "")]),
        edit(
            "kubectl -n $NS create configmap hand-made --from-literal=a=b && kubectl -n $NS label configmap hand-made app.kubernetes.io/instance=shop",
            vec![e("ConfigMap", "hand-made", "", "extra", "")],
        ),
    ];
    vec![set_and_scale, labels_apply_patches, removals_replacements_deletions]
}

/// The report of a `-o json` run on one cluster (its shape checked: [`crate::common::report_of`]).
fn json(run: &crate::common::Run) -> Value {
    run.report()
}

/// Every finding of the release that counts as drift (ignored fields left out).
fn findings(report: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    for o in report["releases"][0]["objects"].as_array().unwrap() {
        let (kind, name) = (o["kind"].as_str().unwrap().to_string(), o["name"].as_str().unwrap().to_string());
        match o["state"].as_str().unwrap() {
            "missing" | "extra" => out.push(Finding {
                kind,
                name,
                path: String::new(),
                change: o["state"].as_str().unwrap().to_string(),
                manager: None,
            }),
            _ => {
                for f in o["fields"].as_array().unwrap().iter().filter(|f| f["reason"].is_null()) {
                    out.push(Finding {
                        kind: kind.clone(),
                        name: name.clone(),
                        path: f["path"].as_str().unwrap().to_string(),
                        change: f["change"].as_str().unwrap().to_string(),
                        manager: f["manager"].as_str().map(str::to_string),
                    });
                }
            }
        }
    }
    out
}

/// Per edit: found (every expected finding, on its object and path, with its manager), once (each
/// exactly once and nothing unexpected on the objects it touched), reconciled.
#[derive(Default)]
struct Tally {
    edits: usize,
    found: usize,
    once: usize,
    reconciled: usize,
    problems: Vec<String>,
}

/// `bash -c CMD` as a person types it, with `$NS` set.
fn shell(c: &Cluster, helm: Helm, ns: &str, cmd: &str) -> std::process::Output {
    c.shell(helm, cmd, &[("NS", ns)]).out
}

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The object a printed `kubectl patch KIND[.GROUP]/NAME ...` command targets, as (lowercase kind,
/// name) to compare with a finding's.
fn command_target(cmd: &str) -> Option<(String, String)> {
    let target = cmd.strip_prefix("kubectl patch ")?.split(' ').next()?;
    let (resource, name) = target.split_once('/')?;
    let kind = resource.split('.').next()?;
    Some((kind.to_string(), name.to_string()))
}

/// One group on a fresh install: edit, find, reconcile, check.
fn run_group(c: &Cluster, helm: Helm, edits: &[Edit], tally: &mut Tally) {
    let ns = unique_ns(match helm {
        Helm::V3 => "edits-h3",
        Helm::V4 => "edits-h4",
    });
    c.create_namespace(&ns);
    let chart = fixture("charts/shop");
    c.helm(
        helm,
        &["install", "shop", chart.to_str().unwrap(), "-n", &ns, "--set", "handEdits=true,worker.minReplicas=1"],
    )
    .ok();
    let run = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 0, "a fresh install must be clean:\n{}\n{}", run.stdout(), run.stderr());

    for ed in edits {
        // A get | edit | replace races the controllers writing the same object (409 Conflict):
        // done again on the newer object, as a person would.
        let mut out = shell(c, helm, &ns, ed.command);
        for _ in 0..3 {
            if out.status.success() || !text(&out).contains("(Conflict)") {
                break;
            }
            out = shell(c, helm, &ns, ed.command);
        }
        assert!(out.status.success(), "edit failed: {}\n{}", ed.command, text(&out));
    }
    let run = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    let report = json(&run);
    let found = findings(&report);
    let expected: Vec<Vec<Finding>> = edits
        .iter()
        .map(|ed| {
            ed.expect
                .iter()
                .map(|x| Finding {
                    kind: x.kind.to_string(),
                    name: expand(x.name, &ns, helm),
                    path: expand(x.path, &ns, helm),
                    change: x.change.to_string(),
                    manager: x.manager.map(str::to_string),
                })
                .collect()
        })
        .collect();
    let unclaimed: Vec<&Finding> = found.iter().filter(|f| !expected.iter().flatten().any(|x| x == *f)).collect();
    let objects = |xs: &[Finding]| -> BTreeSet<(String, String)> {
        xs.iter().map(|x| (x.kind.clone(), x.name.clone())).collect()
    };

    // Reconcile exactly as printed; `#` lines are the user's decision (extra objects).
    let commands = crate::common::reconcile_commands(&report);
    let mut failed = Vec::new();
    for cmd in commands.iter().filter(|c| !c.starts_with('#')) {
        let out = shell(c, helm, &ns, cmd);
        if !out.status.success() {
            failed.push(format!("{cmd}\n    {}", text(&out).trim()));
        }
    }
    let after = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    let left: Vec<Finding> = findings(&json(&after)).into_iter().filter(|f| f.change != "extra").collect();

    for (ed, want) in edits.iter().zip(&expected) {
        tally.edits += 1;
        let counts: Vec<usize> = want.iter().map(|x| found.iter().filter(|f| *f == x).count()).collect();
        let mut touched = objects(want);
        touched.extend(ed.quiet_on.map(|(k, n)| (k.to_string(), n.to_string())));
        let touched_lower: BTreeSet<(String, String)> =
            touched.iter().map(|(k, n)| (k.to_lowercase(), n.clone())).collect();
        let stray: Vec<&&Finding> =
            unclaimed.iter().filter(|f| touched.contains(&(f.kind.clone(), f.name.clone()))).collect();
        let is_found = counts.iter().all(|n| *n >= 1) && (ed.quiet_on.is_none() || stray.is_empty());
        if is_found {
            tally.found += 1;
        } else {
            let seen: Vec<&Finding> =
                found.iter().filter(|f| touched.contains(&(f.kind.clone(), f.name.clone()))).collect();
            tally.problems.push(format!("{helm:?} NOT FOUND: {}\n    want {want:?}\n    seen {seen:?}", ed.command));
        }
        if is_found && counts.iter().all(|n| *n == 1) && stray.is_empty() {
            tally.once += 1;
        } else if is_found {
            tally.problems.push(format!("{helm:?} NOT ONCE: {}\n    also {stray:?}", ed.command));
        }
        let cmd_failed = failed
            .iter()
            .any(|f| f.starts_with("helm ") || command_target(f).is_some_and(|t| touched_lower.contains(&t)));
        let remaining: Vec<&Finding> =
            left.iter().filter(|f| touched.contains(&(f.kind.clone(), f.name.clone()))).collect();
        if remaining.is_empty() && !cmd_failed {
            tally.reconciled += 1;
        } else {
            tally.problems.push(format!("{helm:?} NOT RECONCILED: {}\n    left {remaining:?}", ed.command));
        }
    }
    for f in &failed {
        tally.problems.push(format!("{helm:?} reconcile command failed: {f}"));
    }
    let all_touched: BTreeSet<(String, String)> = expected
        .iter()
        .flat_map(|w| objects(w))
        .chain(edits.iter().filter_map(|ed| ed.quiet_on).map(|(k, n)| (k.to_string(), n.to_string())))
        .collect();
    for f in unclaimed.iter().filter(|f| !all_touched.contains(&(f.kind.clone(), f.name.clone()))) {
        tally.problems.push(format!("{helm:?} unexpected finding on an object no edit touched: {f:?}"));
    }
    // The extra objects are left to the user: deleting them as the commented command says
    // leaves the release clean.
    for cmd in commands.iter().filter_map(|c| c.strip_prefix("# ")) {
        let cmd = cmd.split("   #").next().unwrap();
        let out = shell(c, helm, &ns, cmd);
        assert!(out.status.success(), "{cmd}\n{}", text(&out));
    }
    let run = c.drift(&["release", "shop", "-n", &ns]);
    if run.code() != 0 {
        tally.problems.push(format!("{helm:?} release not clean after reconcile:\n{}", run.stdout()));
    }
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
    c.kubectl(&["delete", "clusterrole,clusterrolebinding", &format!("{ns}-shop-nodes"), "--ignore-not-found"]).ok();
}

fn sweep(helm: Helm, name: &str) {
    let c = crate::needs_cluster!(name);
    let start = std::time::Instant::now();
    let mut tally = Tally::default();
    for group in groups() {
        run_group(&c, helm, &group, &mut tally);
    }
    eprintln!(
        "hand-edit sweep, Helm {helm:?}: {} edits, found {}, once {}, reconciled {} ({:.0}s)",
        tally.edits,
        tally.found,
        tally.once,
        tally.reconciled,
        start.elapsed().as_secs_f64()
    );
    assert!(tally.edits >= 30);
    assert!(tally.problems.is_empty(), "hand-edit sweep, Helm {helm:?}:\n{}", tally.problems.join("\n"));
    assert_eq!((tally.found, tally.once, tally.reconciled), (tally.edits, tally.edits, tally.edits));
}

#[ignore = "needs the local control plane"]
#[test]
fn hand_edits_helm3() {
    sweep(Helm::V3, "hand_edits_helm3");
}

#[ignore = "needs the local control plane"]
#[test]
fn hand_edits_helm4() {
    sweep(Helm::V4, "hand_edits_helm4");
}
