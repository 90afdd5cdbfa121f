//! Commands that restore the desired state, safest first.
//!
//! 1. `helm rollback RELEASE REVISION`: re-applies the stored manifest (no chart needed). Helm's
//!    merge restores changed fields and re-creates deleted objects, but leaves things added by
//!    hand. Releases that Helm 4 applied server-side get `--force-conflicts`, since the fields a
//!    person changed are now owned by their tool and would otherwise conflict.
//! 2. One `kubectl patch` per object for the additions Helm leaves: a strategic merge patch that
//!    deletes list items by merge key (`$patch: delete`) and map keys or fields by `null`, so it
//!    does not depend on list positions that the rollback may have moved. Kinds without strategic
//!    merge (custom resources) get a JSON patch with `test` guards instead.
//! 3. Extra objects get a `kubectl delete`, printed commented out: deleting is the user's call.
//!
//! Each patch is chosen by what the API server accepts for the field: `$patch: delete` only in
//! lists that declare a merge key. Additions in lists without one (RBAC subjects and rules,
//! tolerations, Ingress rules; a `$patch: delete` there is rejected) and in custom resources are
//! removed by an exact JSON patch, every operation guarded by a `test` of the live value, highest
//! index first, printed before the Helm command (`merge_key_fixes`), whose merge would otherwise
//! replace such a list whole and break the `test`.
//!
//! Secret values never appear in a command: keys are removed by name.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::report::field::Change;
use crate::report::path::{FieldPath, Seg};
use crate::report::shell::shell_quote;
use crate::report::{ObjectReport, ObjectState};
use crate::source::helm::Release;

/// Builds reconcile commands, pinned to the context and kubeconfig the scan used.
#[derive(Debug, Clone, Default)]
pub struct Reconciler {
    pub context: Option<String>,
    pub kubeconfig: Option<PathBuf>,
}

impl From<&crate::source::cluster::Target> for Reconciler {
    fn from(t: &crate::source::cluster::Target) -> Reconciler {
        Reconciler { context: t.context.clone(), kubeconfig: t.kubeconfig.clone() }
    }
}

/// API groups whose kinds support strategic merge patch (built-in kinds).
fn supports_strategic_merge(api_version: &str) -> bool {
    let group = crate::report::group_version(api_version).0;
    matches!(
        group,
        "" | "apps"
            | "batch"
            | "autoscaling"
            | "policy"
            | "networking.k8s.io"
            | "rbac.authorization.k8s.io"
            | "storage.k8s.io"
            | "scheduling.k8s.io"
            | "coordination.k8s.io"
            | "discovery.k8s.io"
            | "node.k8s.io"
            | "admissionregistration.k8s.io"
            | "certificates.k8s.io"
    )
}

/// The upgrade blocker of a chart CRD's report (`drift::crds` reports it as a change of
/// `status.storedVersions`): the versions still stored live that the chart's CRD no longer has,
/// and those it keeps (what `storedVersions` becomes once the objects are migrated). Empty when
/// there is none.
pub(crate) fn blocking_versions(o: &ObjectReport) -> (Vec<String>, Vec<String>) {
    let Some(f) = o.fields.iter().find(|f| f.reason.is_none() && f.path.to_string() == "status.storedVersions") else {
        return (Vec::new(), Vec::new());
    };
    let list = |v: &Option<Value>| -> Vec<String> {
        v.as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let listed = list(&f.desired);
    list(&f.live).into_iter().partition(|s| !listed.contains(s))
}

impl Reconciler {
    fn kubectl_flags(&self, namespace: Option<&str>) -> String {
        let mut s = String::new();
        if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
            s.push_str(&format!(" -n {}", shell_quote(ns)));
        }
        if let Some(ctx) = &self.context {
            s.push_str(&format!(" --context {}", shell_quote(ctx)));
        }
        if let Some(kc) = &self.kubeconfig {
            s.push_str(&format!(" --kubeconfig {}", shell_quote(&kc.display().to_string())));
        }
        s
    }

    fn helm_flags(&self, namespace: &str) -> String {
        let mut s = format!(" -n {}", shell_quote(namespace));
        if let Some(ctx) = &self.context {
            s.push_str(&format!(" --kube-context {}", shell_quote(ctx)));
        }
        if let Some(kc) = &self.kubeconfig {
            s.push_str(&format!(" --kubeconfig {}", shell_quote(&kc.display().to_string())));
        }
        s
    }

    /// Commands for one drifted release. `live` holds the live objects that were compared,
    /// keyed by (kind, namespace, name).
    pub fn for_release(
        &self,
        release: &Release,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let mut out = self.merge_key_fixes(objects, live);
        let helm_fixes = objects.iter().any(|o| {
            o.state == ObjectState::Missing
                || (o.state == ObjectState::Changed
                    && o.fields.iter().any(|f| f.reason.is_none() && f.change != Change::Added))
        });
        if helm_fixes {
            out.push(self.rollback_command(release));
        }
        out.extend(self.object_commands(objects, live));
        out
    }

    /// Commands for the chart's `crds/` CRDs that differ live (see `drift::crds`): Helm never
    /// upgrades them, so no Helm command does; the CRD as the stored chart holds it is applied
    /// server-side (`kubectl drift release --print-crd` prints it from the release's storage; the
    /// fields Helm's create or another tool wrote are taken over with `--force-conflicts`). A live
    /// CRD whose `status.storedVersions` names a version the chart's CRD no longer has would be
    /// refused: the migration steps come first, as comments to follow by hand.
    pub fn for_chart_crds(&self, release: &Release, objects: &[ObjectReport]) -> Vec<String> {
        let mut out = Vec::new();
        let flags = self.kubectl_flags(None);
        for o in objects.iter().filter(|o| o.is_drift()) {
            let crd = shell_quote(&o.name);
            let (blocked, kept) = blocking_versions(o);
            if !blocked.is_empty() {
                let patch = json!({"status": {"storedVersions": kept}}).to_string();
                out.push(format!(
                    "# CRD {} stores objects in {} (status.storedVersions), which the chart's CRD no longer has: \
                     applying it is refused until they are migrated. First make sure the live CRD's storage version \
                     is one the chart serves, then:",
                    o.name,
                    blocked.join(", ")
                ));
                out.push(format!(
                    "#   kubectl get {crd} -A -o json{flags} | kubectl replace -f -{flags}   # rewrites every object in the storage version"
                ));
                out.push(format!(
                    "#   kubectl patch customresourcedefinition {crd} --subresource=status --type=merge -p {}{flags}",
                    shell_quote(&patch)
                ));
            }
            let behind = o.state == ObjectState::Missing
                || o.fields.iter().any(|f| f.reason.is_none() && f.change != Change::Added);
            if !behind {
                out.push(format!(
                    "# CRD {} is ahead of the chart's crds/ live (versions, fields or columns only it has: another \
                     release, the operator or a person applied a newer one): applying the chart's would take them away; \
                     review before doing so",
                    o.name
                ));
                continue;
            }
            out.push(format!(
                "kubectl drift release {} -n {} --revision {} --print-crd {crd}{flags} | kubectl apply --server-side --force-conflicts -f -{flags}",
                shell_quote(&release.name),
                shell_quote(&release.namespace),
                release.revision,
            ));
        }
        out
    }

    /// Commands for a drifted release that a Flux HelmRelease manages: the source first (a
    /// `helm rollback` would be undone, or fought, by helm-controller), then Flux's own forced
    /// reconcile (a Helm upgrade from the HelmRelease's chart and values), with the flux CLI or
    /// kubectl; then, as for any release, the patches for additions by hand, which no Helm
    /// upgrade removes.
    pub fn for_flux_release(
        &self,
        namespace: &str,
        name: &str,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let mut out = vec![format!(
            "# managed by Flux HelmRelease {namespace}/{name}: if the change should stay, make it in Git (the \
             HelmRelease's chart or values); a Helm rollback would be undone by helm-controller"
        )];
        let helm_fixes = objects.iter().any(|o| {
            o.state == ObjectState::Missing
                || (o.state == ObjectState::Changed
                    && o.fields.iter().any(|f| f.reason.is_none() && f.change != Change::Added))
        });
        if helm_fixes {
            out.extend(self.flux_reconcile("helmrelease", namespace, name, true));
        }
        out.extend(self.merge_key_fixes(objects, live));
        out.extend(self.object_commands(objects, live));
        out
    }

    /// `flux reconcile KIND NAME` (`--force` for a HelmRelease, `--with-source` for a
    /// Kustomization), and the same request made with kubectl's annotations for those without
    /// the flux CLI.
    pub fn flux_reconcile(&self, kind: &str, namespace: &str, name: &str, force: bool) -> Vec<String> {
        let flux_flags = {
            let mut s = format!(" -n {}", shell_quote(namespace));
            if let Some(ctx) = &self.context {
                s.push_str(&format!(" --context {}", shell_quote(ctx)));
            }
            if let Some(kc) = &self.kubeconfig {
                s.push_str(&format!(" --kubeconfig {}", shell_quote(&kc.display().to_string())));
            }
            s
        };
        let extra = if force { " --force" } else { " --with-source" };
        let force_annotation = if force { r#" reconcile.fluxcd.io/forceAt="$t""# } else { "" };
        vec![
            format!("flux reconcile {kind} {}{flux_flags}{extra}", shell_quote(name)),
            format!(
                r#"# without the flux CLI: t="$(date +%s)"; kubectl annotate {kind} {}{} reconcile.fluxcd.io/requestedAt="$t"{force_annotation} --overwrite"#,
                shell_quote(name),
                self.kubectl_flags(Some(namespace)),
            ),
        ]
    }

    /// Commands for a drifted Flux Kustomization: the source first, then Flux's reconcile (it
    /// applies server-side with force and takes over the fields kubectl wrote, so what kubectl
    /// changed or added is undone). Fields other tools own stay: re-run the check to see them.
    pub fn for_flux_kustomization(&self, namespace: &str, name: &str, extra: &[&ObjectReport]) -> Vec<String> {
        let mut out = vec![format!(
            "# managed by Flux Kustomization {namespace}/{name}: if the change should stay, make it in Git; \
             otherwise Flux's next apply restores the fields it sets"
        )];
        out.extend(self.flux_reconcile("kustomization", namespace, name, false));
        out.push(
            "# fields still reported after the reconcile belong to a tool Flux does not take over: remove \
             them with kubectl edit"
                .to_string(),
        );
        for o in extra {
            out.push(self.delete_commented(
                o,
                "labelled for this Kustomization but not in its inventory: review before deleting",
            ));
        }
        out
    }

    /// Commands for a drifted Argo CD Application: the source first, then a sync of the
    /// application (of the drifted objects alone with `--resource`).
    pub fn for_argo_application(&self, namespace: &str, name: &str, objects: &[ObjectReport]) -> Vec<String> {
        let mut out = vec![format!(
            "# managed by Argo CD Application {namespace}/{name}: if the change should stay, make it in Git"
        )];
        let mut sync = format!("argocd app sync {}", shell_quote(&format!("{namespace}/{name}")));
        for o in objects.iter().filter(|o| o.is_drift() && o.state != ObjectState::Extra) {
            let group = crate::report::group_version(&o.api_version).0;
            let ns = o.namespace.as_deref().unwrap_or("");
            let resource = if ns.is_empty() {
                format!("{group}:{}:{}", o.kind, o.name)
            } else {
                format!("{group}:{}:{ns}/{}", o.kind, o.name)
            };
            sync.push_str(&format!(" --resource {}", shell_quote(&resource)));
        }
        out.push(sync);
        out.push(
            "# a sync applies what Git says; fields added by hand that the manifests do not set stay: remove them \
             with kubectl edit"
                .to_string(),
        );
        for o in objects.iter().filter(|o| o.state == ObjectState::Extra) {
            out.push(self.delete_commented(
                o,
                "tracked for this Application but not among its resources: review before deleting",
            ));
        }
        out
    }

    /// `helm rollback NAME REVISION` back to `release`, with `--force-conflicts` for releases
    /// Helm 4 applied server-side.
    fn rollback_command(&self, release: &Release) -> String {
        let force = if release.apply_method.as_deref() == Some("ssa") { " --force-conflicts" } else { "" };
        format!(
            "helm rollback {} {}{}{}",
            shell_quote(&release.name),
            release.revision,
            self.helm_flags(&release.namespace),
            force
        )
    }

    /// Commands for a release whose newest revision `newer` (status `status`: a failed or
    /// interrupted upgrade or rollback) is newer than the deployed `release`. Rolling back to
    /// the deployed revision undoes what `newer` applied (Helm computes the rollback from the
    /// newest revision's manifest, so it also deletes the objects `newer` created); the kubectl
    /// commands then undo only what was done by hand. The alternative, keeping `newer`, is a
    /// retry of the upgrade, given as a comment: it needs the chart, which is not stored.
    pub fn for_incomplete_release(
        &self,
        release: &Release,
        newer: &Release,
        status: &str,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let hand: Vec<ObjectReport> = objects.iter().filter_map(ObjectReport::hand_drift).collect();
        let mut out = self.merge_key_fixes(&hand, live);
        let pending = status.starts_with("pending-");
        let why = if pending {
            format!(
                "only once no helm command is still working on revision {} ({status}); it undoes what revision {} applied",
                newer.revision, newer.revision
            )
        } else {
            format!("undoes what {status} revision {} applied", newer.revision)
        };
        out.push(format!(
            "{}   # back to deployed revision {}: {why}",
            self.rollback_command(release),
            release.revision
        ));
        out.extend(self.object_commands(&hand, live));
        let flags = self.helm_flags(&newer.namespace);
        let name = shell_quote(&newer.name);
        if pending {
            out.push(format!(
                "# helm refuses to upgrade {name} while revision {} is {status}: roll back first, then upgrade again",
                newer.revision
            ));
        } else {
            out.push(format!(
                "# or keep revision {r}: fix why it failed, then retry it: helm get values {name} --revision {r}{flags} -o yaml > values-{r}.yaml && helm upgrade {name} CHART --version {v} -f values-{r}.yaml{flags}",
                r = newer.revision,
                v = shell_quote(newer.chart_version()),
            ));
        }
        out
    }

    /// Advice for a release that never deployed (a failed or interrupted install): there is no
    /// revision to roll back to. Empty for a deployed release.
    pub fn failed_install_advice(&self, release: &Release, status: &str) -> Vec<String> {
        if crate::source::helm::storage::is_settled(status) {
            return Vec::new();
        }
        let flags = self.helm_flags(&release.namespace);
        let name = shell_quote(&release.name);
        vec![format!(
            "# revision {} is {status} and nothing was ever deployed: fix the cause, then helm upgrade {name} CHART --version {}{flags} (or remove it: helm uninstall {name}{flags})",
            release.revision,
            shell_quote(release.chart_version()),
        )]
    }

    /// Exact JSON patches, run before the Helm command, each operation guarded by a `test` of the
    /// live value: changed values that are the merge key of their list item (a Service port
    /// number, a containerPort, a mountPath: Helm's merge would add a second item instead, and the
    /// API server rejects the duplicate), and additions by hand that no strategic merge patch can
    /// delete (items of lists without a merge key, anything in a custom resource).
    pub fn merge_key_fixes(
        &self,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for o in objects.iter().filter(|o| o.state == ObjectState::Changed) {
            let ns = o.namespace.clone().unwrap_or_default();
            let Some(live_obj) = live.get(&(o.kind.clone(), ns, o.name.clone())) else { continue };
            let mut ops = Vec::new();
            for f in o.fields.iter().filter(|f| f.reason.is_none() && f.change == Change::Changed) {
                let path = &f.path;
                let segs = path.segs();
                let is_merge_key = match segs {
                    [.., Seg::Key(list), Seg::Item { .. }, Seg::Key(field)] => matches!(
                        (list.as_str(), field.as_str()),
                        ("ports", "port")
                            | ("ports", "containerPort")
                            | ("volumeMounts", "mountPath")
                            | ("hostAliases", "ip")
                    ),
                    _ => false,
                };
                if !is_merge_key {
                    continue;
                }
                let (Some(pointer), Some(desired), Some(current)) = (path.json_pointer(live_obj), &f.desired, &f.live)
                else {
                    continue;
                };
                ops.push(json!({"op": "test", "path": pointer, "value": current}));
                ops.push(json!({"op": "replace", "path": pointer, "value": desired}));
            }
            // Additions that a strategic merge patch cannot remove (items of lists without a merge
            // key: RBAC subjects and rules, tolerations, Ingress rules; every addition to a custom
            // resource): removed here, exactly, before Helm's merge can move list positions.
            let (_, by_position) = split_added(o, live_obj);
            if let Some(Value::Array(removals)) = json_remove_patch(&by_position, live_obj, &o.kind) {
                ops.extend(removals);
            }
            if !ops.is_empty() {
                out.push(format!(
                    "kubectl patch {}{} --type=json -p {}",
                    resource_arg(&o.api_version, &o.kind, &o.name),
                    self.kubectl_flags(o.namespace.as_deref()),
                    shell_quote(&Value::Array(ops).to_string())
                ));
            }
        }
        out
    }

    /// The kubectl commands for additions by hand and extra objects.
    pub fn object_commands(
        &self,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for o in objects {
            let ns = o.namespace.clone().unwrap_or_default();
            let target = resource_arg(&o.api_version, &o.kind, &o.name);
            match o.state {
                ObjectState::Changed => {
                    let Some(live_obj) = live.get(&(o.kind.clone(), ns.clone(), o.name.clone())) else { continue };
                    // Additions in lists without a merge key were removed by `merge_key_fixes`.
                    let (by_key, _) = split_added(o, live_obj);
                    if by_key.is_empty() {
                        continue;
                    }
                    if let Some(patch) = strategic_delete_patch(&by_key, live_obj) {
                        out.push(format!(
                            "kubectl patch {}{} --type=strategic -p {}",
                            target,
                            self.kubectl_flags(o.namespace.as_deref()),
                            shell_quote(&patch.to_string())
                        ));
                    }
                }
                ObjectState::Extra => {
                    let why = "extra object carrying the release's labels: review before deleting";
                    out.push(self.delete_commented(o, why));
                }
                _ => {}
            }
        }
        out
    }
}

impl Reconciler {
    /// `# kubectl delete KIND/NAME -n NS   # WHY`: commented out, deleting is the user's call.
    pub fn delete_commented(&self, o: &ObjectReport, why: &str) -> String {
        format!(
            "# kubectl delete {}{}   # {why}",
            resource_arg(&o.api_version, &o.kind, &o.name),
            self.kubectl_flags(o.namespace.as_deref())
        )
    }

    /// Commands for one drifted manifests file (or kustomization): merge-key fixes first (as for
    /// releases), then `kubectl apply -f FILE` (`-k DIR`) when applying restores something (a
    /// changed field, a deleted object), then one patch per object for the additions by hand that
    /// apply leaves. A file applied server-side is re-applied with `--server-side
    /// --force-conflicts` (the fields a person changed are now owned by their tool);
    /// `--field-manager` is passed when the deployer is not kubectl's own name for that method, so
    /// ownership goes back to it.
    pub fn for_manifest_file(
        &self,
        source: Applied<'_>,
        namespace: &str,
        field_manager: Option<&str>,
        server_side: bool,
        objects: &[ObjectReport],
        live: &HashMap<(String, String, String), Value>,
    ) -> Vec<String> {
        let (flag, file) = match source {
            Applied::File(f) => ("-f", f),
            Applied::Kustomization(d) => ("-k", d),
        };
        let mut out = self.merge_key_fixes(objects, live);
        let apply_fixes = objects.iter().any(|o| {
            o.state == ObjectState::Missing
                || (o.state == ObjectState::Changed
                    && o.fields.iter().any(|f| f.reason.is_none() && f.change != Change::Added))
        });
        if apply_fixes {
            let mut cmd = format!("kubectl apply {flag} {}{}", shell_quote(file), self.kubectl_flags(Some(namespace)));
            if server_side {
                cmd.push_str(" --server-side --force-conflicts");
            }
            let default_manager = if server_side { "kubectl" } else { "kubectl-client-side-apply" };
            if let Some(m) = field_manager.filter(|m| *m != default_manager) {
                cmd.push_str(&format!(" --field-manager {}", shell_quote(m)));
            }
            out.push(cmd);
        }
        out.extend(self.object_commands(objects, live));
        out
    }
}

/// What `kubectl apply` re-applies for a manifests target.
#[derive(Debug, Clone, Copy)]
pub enum Applied<'a> {
    /// A file (`kubectl apply -f FILE`).
    File(&'a str),
    /// A kustomization directory (`kubectl apply -k DIR`).
    Kustomization(&'a str),
}

/// `deployment.apps/web`, `configmap/app`.
pub fn resource_arg(api_version: &str, kind: &str, name: &str) -> String {
    let group = crate::report::group_version(api_version).0;
    let k = kind.to_ascii_lowercase();
    if group.is_empty() { format!("{k}/{}", shell_quote(name)) } else { format!("{k}.{group}/{}", shell_quote(name)) }
}

/// The additions by hand of a changed object, split by how they can be undone: paths a strategic
/// merge patch can delete (map keys, fields, items of lists with a merge key, in built-in kinds),
/// and the rest, which only a JSON patch can address.
fn split_added(o: &ObjectReport, live: &Value) -> (Vec<FieldPath>, Vec<FieldPath>) {
    let smp = supports_strategic_merge(&o.api_version);
    o.fields
        .iter()
        .filter(|f| f.reason.is_none() && f.change == Change::Added)
        .map(|f| f.path.clone())
        .partition(|p| smp && strategic_delete_patch(std::slice::from_ref(p), live).is_some())
}

/// The strategic-merge-patch merge key of the list at `list` (the path of the list itself), as
/// the Kubernetes API declares it (`patchStrategy:"merge"`, `patchMergeKey`). `None` for lists
/// that a strategic merge replaces whole: RBAC `rules` and `subjects`, `tolerations`, `envFrom`,
/// Ingress `rules` and `tls`, NetworkPolicy rules, HPA `metrics`, and every list of scalars.
fn smp_merge_key(list: &[Seg]) -> Option<&'static str> {
    let Some((Seg::Key(name), parent)) = list.split_last() else { return None };
    // The enclosing list item, for lists that only have a merge key inside a container.
    let in_container = matches!(parent, [.., Seg::Key(l), Seg::Item { .. } | Seg::Index(_)]
        if matches!(l.as_str(), "containers" | "initContainers" | "ephemeralContainers"));
    let in_pod_spec = matches!(parent, [.., Seg::Key(s)] if s == "spec");
    match name.as_str() {
        // PodSpec.
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "imagePullSecrets"
        | "schedulingGates"
        | "resourceClaims"
            if in_pod_spec =>
        {
            Some("name")
        }
        "hostAliases" if in_pod_spec => Some("ip"),
        "topologySpreadConstraints" if in_pod_spec => Some("topologyKey"),
        // ServiceAccount.secrets.
        "secrets" if parent.is_empty() => Some("name"),
        // Container.
        "env" if in_container => Some("name"),
        "ports" if in_container => Some("containerPort"),
        "volumeMounts" if in_container => Some("mountPath"),
        "volumeDevices" if in_container => Some("devicePath"),
        // ServiceSpec.ports (the only other list named `ports` with a merge key).
        "ports" if matches!(parent, [Seg::Key(s)] if s == "spec") => Some("port"),
        _ => None,
    }
}

/// A strategic merge patch deleting each path. `None` if a path goes through a list without a
/// merge key (only a JSON patch can address it).
pub fn strategic_delete_patch(paths: &[FieldPath], live: &Value) -> Option<Value> {
    let mut patch = Value::Object(Map::new());
    for path in paths {
        insert_delete(&mut patch, path.segs(), 0, live)?;
    }
    Some(patch)
}

/// Add the deletion of `segs[at..]` (relative to `live`) to `patch`.
fn insert_delete(patch: &mut Value, segs: &[Seg], at: usize, live: &Value) -> Option<()> {
    let seg = segs.get(at)?;
    let last = at + 1 == segs.len();
    match seg {
        Seg::Key(k) => {
            let obj = patch.as_object_mut()?;
            if last {
                obj.insert(k.clone(), Value::Null);
                if k == "serviceAccountName" {
                    // The API server copies the deprecated alias back when the name is empty.
                    obj.insert("serviceAccount".into(), Value::Null);
                }
                return Some(());
            }
            let next_is_item = matches!(segs.get(at + 1), Some(Seg::Item { .. } | Seg::Index(_)));
            let entry = obj.entry(k.clone()).or_insert_with(|| if next_is_item { json!([]) } else { json!({}) });
            insert_delete(entry, segs, at + 1, live.get(k).unwrap_or(&Value::Null))
        }
        Seg::Item { .. } | Seg::Index(_) => {
            let merge_key = smp_merge_key(&segs[..at])?;
            let live_item = FieldPath(vec![seg.clone()]).get(live)?;
            // Identify the item by its merge key as the API server knows it.
            let ident = live_item.get(merge_key).filter(|v| !v.is_object() && !v.is_array())?.clone();
            let list = patch.as_array_mut()?;
            let pos = match list.iter().position(|e| e.get(merge_key) == Some(&ident)) {
                Some(p) => p,
                None => {
                    list.push(json!({ merge_key: ident }));
                    list.len() - 1
                }
            };
            if last {
                list[pos].as_object_mut()?.insert("$patch".into(), json!("delete"));
                return Some(());
            }
            insert_delete(&mut list[pos], segs, at + 1, live_item)
        }
    }
}

/// A JSON patch removing each path from the live object, each guarded by a `test` of its current
/// value (Secret values are not tested, so they never appear in the command). The operations stay
/// valid applied in sequence: a path inside another removed one, or named twice, is removed once,
/// and list items go from the highest index down, so no removal shifts a later one. `None` when
/// a path is not in the live object.
pub fn json_remove_patch(paths: &[FieldPath], live: &Value, kind: &str) -> Option<Value> {
    let mut ops: Vec<(Vec<String>, Value)> = Vec::new();
    for p in paths {
        let pointer = p.json_pointer(live)?;
        ops.push((pointer.split('/').skip(1).map(str::to_string).collect(), p.get(live)?.clone()));
    }
    // Highest first: list indexes compared as numbers, so /rules/10 goes before /rules/9.
    ops.sort_by(|(a, _), (b, _)| compare_pointers(b, a));
    ops.dedup_by(|(a, _), (b, _)| a == b);
    let removed: Vec<Vec<String>> = ops.iter().map(|(p, _)| p.clone()).collect();
    let mut out = Vec::new();
    for (tokens, value) in ops {
        if removed.iter().any(|r| r.len() < tokens.len() && tokens.starts_with(r)) {
            continue;
        }
        let pointer: String = tokens.iter().map(|t| format!("/{t}")).collect();
        if kind != "Secret" {
            out.push(json!({"op": "test", "path": pointer, "value": value}));
        }
        out.push(json!({"op": "remove", "path": pointer}));
    }
    Some(Value::Array(out))
}

/// Order JSON pointer tokens, numbers (list indexes) by value.
fn compare_pointers(a: &[String], b: &[String]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            _ => x.cmp(y),
        };
        if ord.is_ne() {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rendered_paths_back() {
        for s in [
            "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value",
            r#"data["app.yaml"]"#,
            r#"metadata.annotations["example.com/x"]"#,
            "spec.rules[0].host",
            "spec.ports[containerPort=9090]",
            r#"x[name="a=b"]"#,
        ] {
            assert_eq!(s.parse::<FieldPath>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn strategic_patch_deletes_items_and_keys() {
        let live = json!({"metadata": {"labels": {"a": "1", "hand": "x"}},
            "spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "A"}, {"name": "DEBUG", "value": "1"}],
                "ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 9090}]}]}}}});
        let paths: Vec<FieldPath> = [
            "metadata.labels.hand",
            "spec.template.spec.containers[name=web].env[name=DEBUG]",
            "spec.template.spec.containers[name=web].ports[containerPort=9090]",
        ]
        .iter()
        .map(|s| s.parse::<FieldPath>().unwrap())
        .collect();
        let patch = strategic_delete_patch(&paths, &live).unwrap();
        assert_eq!(
            patch,
            json!({"metadata": {"labels": {"hand": null}},
                   "spec": {"template": {"spec": {"containers": [{"name": "web",
                       "env": [{"name": "DEBUG", "$patch": "delete"}],
                       "ports": [{"containerPort": 9090, "$patch": "delete"}]}]}}}})
        );
    }

    #[test]
    fn json_patch_guards_and_orders_removals() {
        let live = json!({"spec": {"args": ["a"], "envFrom": [{"configMapRef": {"name": "x"}}, {"secretRef": {"name": "y"}}]}});
        let paths =
            vec!["spec.envFrom[0]".parse::<FieldPath>().unwrap(), "spec.envFrom[1]".parse::<FieldPath>().unwrap()];
        let patch = json_remove_patch(&paths, &live, "Widget").unwrap();
        assert_eq!(patch[0]["path"], "/spec/envFrom/1");
        assert_eq!(patch[0]["op"], "test");
        assert_eq!(patch[1]["op"], "remove");
        assert_eq!(patch[2]["path"], "/spec/envFrom/0");
        let secret =
            json_remove_patch(&["data.k".parse::<FieldPath>().unwrap()], &json!({"data": {"k": "c2VjcmV0"}}), "Secret")
                .unwrap();
        assert!(!secret.to_string().contains("c2VjcmV0"));
    }

    fn report(kind: &str, api_version: &str, added: &[&str]) -> ObjectReport {
        use crate::report::FieldReport;
        ObjectReport {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: Some("shop".into()),
            name: "x".into(),
            state: ObjectState::Changed,
            fields: added
                .iter()
                .map(|p| FieldReport {
                    history: None,
                    path: p.parse().unwrap(),
                    change: Change::Added,
                    desired: None,
                    live: None,
                    manager: None,
                    time: None,
                    reason: None,
                    from_revision: None,
                    admission: None,
                })
                .collect(),
            error: None,
            source: None,
            from_revision: None,
            note: None,
            not_created: false,
        }
    }

    #[test]
    fn lists_without_a_merge_key_get_a_guarded_json_patch_before_helm() {
        // A subject and a rule added by hand; a label too. `subjects` has no merge key: a strategic
        // `$patch: delete` on it is rejected by the API server.
        let live = json!({"metadata": {"labels": {"hand": "1"}},
            "subjects": [{"kind": "ServiceAccount", "name": "web"}, {"kind": "User", "name": "mallory"}],
            "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        let o = report(
            "ClusterRoleBinding",
            "rbac.authorization.k8s.io/v1",
            &["metadata.labels.hand", "subjects[name=mallory]", "rules[1]"],
        );
        let live_map: HashMap<_, _> =
            [(("ClusterRoleBinding".to_string(), "shop".to_string(), "x".to_string()), live.clone())].into();
        let r = Reconciler::default();
        let before = r.merge_key_fixes(std::slice::from_ref(&o), &live_map);
        assert_eq!(before.len(), 1, "{before:?}");
        let ops = json!([
            {"op": "test", "path": "/subjects/1", "value": {"kind": "User", "name": "mallory"}},
            {"op": "remove", "path": "/subjects/1"},
            {"op": "test", "path": "/rules/1", "value": {"verbs": ["list"]}},
            {"op": "remove", "path": "/rules/1"},
        ]);
        assert_eq!(
            before[0],
            format!("kubectl patch clusterrolebinding.rbac.authorization.k8s.io/x -n shop --type=json -p '{ops}'")
        );
        let after = r.object_commands(std::slice::from_ref(&o), &live_map);
        assert_eq!(
            after,
            vec![
                r#"kubectl patch clusterrolebinding.rbac.authorization.k8s.io/x -n shop --type=strategic -p '{"metadata":{"labels":{"hand":null}}}'"#
            ]
        );
        // Custom resources: everything by JSON patch, before Helm; nothing after.
        let o = report("Widget", "example.com/v1", &["metadata.labels.hand", "rules[1]"]);
        let live_map: HashMap<_, _> = [(("Widget".to_string(), "shop".to_string(), "x".to_string()), live)].into();
        assert_eq!(r.merge_key_fixes(std::slice::from_ref(&o), &live_map).len(), 1);
        assert!(r.object_commands(std::slice::from_ref(&o), &live_map).is_empty());
    }

    #[test]
    fn merge_keys_are_the_apis_own() {
        let live = json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "m", "port": 9090}],
            "template": {"spec": {"tolerations": [{"key": "a"}, {"key": "b"}],
                "containers": [{"name": "web", "envFrom": [{"configMapRef": {"name": "c"}}],
                    "ports": [{"name": "http", "containerPort": 8080}, {"name": "dbg", "containerPort": 9090}]}]}}},
            "imagePullSecrets": [{"name": "x"}]});
        let smp = |p: &str| strategic_delete_patch(&[p.parse::<FieldPath>().unwrap()], &live);
        assert_eq!(smp("spec.ports[name=m]"), Some(json!({"spec": {"ports": [{"port": 9090, "$patch": "delete"}]}})));
        assert_eq!(
            smp("spec.template.spec.containers[name=web].ports[name=dbg]"),
            Some(json!({"spec": {"template": {"spec": {"containers": [{"name": "web",
                "ports": [{"containerPort": 9090, "$patch": "delete"}]}]}}}}))
        );
        assert_eq!(smp("spec.template.spec.tolerations[1]"), None);
        assert_eq!(smp("spec.template.spec.containers[name=web].envFrom[0]"), None);
        // ServiceAccount.imagePullSecrets has no merge key (PodSpec's has).
        assert_eq!(smp("imagePullSecrets[name=x]"), None);
        assert_eq!(
            smp("spec.template.spec.containers[name=web].envFrom"),
            Some(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "envFrom": null}]}}}}))
        );
    }

    #[test]
    fn json_removals_stay_valid_in_sequence() {
        let items: Vec<Value> = (0..12).map(|i| json!({"n": i})).collect();
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "sidecar", "env": [{"name": "FOO"}]}],
            "rules": items}});
        let paths: Vec<FieldPath> = [
            "spec.containers[name=sidecar].env[0]",
            "spec.containers[name=sidecar].env[name=FOO]",
            "spec.rules[9]",
            "spec.rules[10]",
            "spec.rules[10].n",
        ]
        .iter()
        .map(|s| s.parse::<FieldPath>().unwrap())
        .collect();
        let patch = json_remove_patch(&paths, &live, "Thing").unwrap();
        let removed: Vec<&str> = patch
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["op"] == "remove")
            .map(|o| o["path"].as_str().unwrap())
            .collect();
        assert_eq!(removed, vec!["/spec/rules/10", "/spec/rules/9", "/spec/containers/1/env/0"]);
        assert_eq!(patch.as_array().unwrap().len(), 6);
    }

    #[test]
    fn manifest_file_commands() {
        use crate::report::FieldReport;
        let r = Reconciler { context: Some("prod".into()), kubeconfig: None };
        let field = |path: &str, change: Change| FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change,
            desired: None,
            live: Some(json!("1")),
            manager: None,
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        };
        let obj = |fields: Vec<FieldReport>| ObjectReport {
            fields,
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
        };
        let live: HashMap<_, _> = [(
            ("Deployment".to_string(), "shop".to_string(), "web".to_string()),
            json!({"metadata": {"labels": {"hand": "1"}}}),
        )]
        .into();
        let changed = [obj(vec![field("spec.replicas", Change::Changed)])];
        assert_eq!(
            r.for_manifest_file(Applied::File("dir/my app.yaml"), "shop", Some("kubectl"), true, &changed, &live),
            vec!["kubectl apply -f 'dir/my app.yaml' -n shop --context prod --server-side --force-conflicts"]
        );
        assert_eq!(
            r.for_manifest_file(Applied::File("a.yaml"), "shop", Some("argocd-controller"), false, &changed, &live),
            vec!["kubectl apply -f a.yaml -n shop --context prod --field-manager argocd-controller"]
        );
        // Additions only: no apply, a patch.
        let added = [obj(vec![field("metadata.labels.hand", Change::Added)])];
        let cmds = r.for_manifest_file(
            Applied::File("a.yaml"),
            "shop",
            Some("kubectl-client-side-apply"),
            false,
            &added,
            &live,
        );
        assert_eq!(cmds.len(), 1, "{cmds:?}");
        assert!(
            cmds[0].starts_with("kubectl patch deployment.apps/web -n shop --context prod --type=strategic"),
            "{cmds:?}"
        );
    }
}
