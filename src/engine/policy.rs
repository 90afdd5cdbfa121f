//! Edit-time warnings (`kubectl drift policy`): the cluster's own admission, a
//! ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1, CEL), that tells a
//! person their edit of an object a Helm release, Flux or Argo CD manages is drift, before it lands.
//!
//! Pure: options in, typed objects out; nothing is sent to a cluster (the user applies them).
//! What the API server exposes to CEL, and so what these expressions can tell apart, was observed
//! on a real API server (1.36) and is written down in docs/policy.md:
//! - an UPDATE or PATCH names its field manager in `request.options.fieldManager` (a patch reaches
//!   admission as an UPDATE with UpdateOptions): `kubectl-edit`, `kubectl-patch`, `kubectl-set`,
//!   `kubectl-client-side-apply`, ... for a person; `helm` for Helm 3 and Helm 4 (upgrade and
//!   rollback alike, whatever the binary is called); controllers using a plain update name none;
//! - `kubectl scale` writes the `scale` subresource with no field manager, and its object (an
//!   autoscaling/v1 Scale) carries no labels or annotations: the owner is read from the scaled
//!   object itself, brought in as the policy's parameter (`paramKind` Deployment or StatefulSet,
//!   every one in the request's namespace; the one named like the request is the scaled object);
//! - the HPA and the controller manager are told apart by their user only.
//!
//! Every expression prefers silence: an object without an owner's marks, a request without a field
//! manager, a controller's user, or an expression that fails (`failurePolicy: Ignore`) warns of
//! nothing. The actions are Warn and Audit only: nothing is ever denied.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    AuditAnnotation, MatchCondition, MatchResources, NamedRuleWithOperations, ParamKind, ParamRef,
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingSpec,
    ValidatingAdmissionPolicySpec, Validation, Variable,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement, ObjectMeta};

use crate::source::live::{LabelRequirement, parse_label_selector};

/// The policy's name when `--name` is not given.
pub const DEFAULT_NAME: &str = "kubectl-drift-edit-warnings";

/// Field managers that are an owner's own writes, never a person's: Helm 3 and Helm 4 (`helm`,
/// whatever the binary is called), Flux's helm-controller and kustomize-controller, Argo CD.
pub const OWNER_MANAGERS: &[&str] = &["helm", "helm-controller", "kustomize-controller", "argocd-controller"];

/// Users whose writes are the cluster's own: the controller manager (its own user, or each
/// controller's ServiceAccount in kube-system with --use-service-account-credentials, as the
/// HPA's `horizontal-pod-autoscaler`), the scheduler and the kubelets.
const CONTROLLER_USERS: &[&str] = &["system:kube-controller-manager", "system:kube-scheduler"];
const CONTROLLER_USER_PREFIXES: &[&str] = &["system:serviceaccount:kube-system:", "system:node:"];

/// Who manages an object, as its labels and annotations say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    /// `app.kubernetes.io/managed-by: Helm` and `meta.helm.sh/release-name`.
    Helm,
    /// `kustomize.toolkit.fluxcd.io/name|namespace` (Kustomization) and
    /// `helm.toolkit.fluxcd.io/name|namespace` (HelmRelease) labels.
    Flux,
    /// Argo CD's tracking annotation `argocd.argoproj.io/tracking-id`.
    ArgoCd,
    /// Argo CD's label tracking, `app.kubernetes.io/instance` on an object Helm does not manage
    /// (many tools set that label, so it is opt-in).
    ArgoCdLabel,
}

/// What the binding does with a hand edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// A warning in the response: kubectl and client-go print it.
    Warn,
    /// The audit event of the request carries the message (and an audit annotation).
    Audit,
}

impl Action {
    fn api_name(self) -> &'static str {
        match self {
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// What to build.
#[derive(Debug, Clone)]
pub struct PolicyOptions {
    /// Name of the main policy and binding; the scale policies add `-scale-<resource>`.
    pub name: String,
    /// Whose objects are watched over (at least one).
    pub owners: Vec<Owner>,
    /// Warn, Audit or both (at least one; never Deny).
    pub actions: Vec<Action>,
    /// Only namespaces matching this selector (then cluster-scoped objects are left out).
    pub namespace_selector: Option<LabelSelector>,
}

/// The objects to apply, in order: each policy, then its binding.
#[derive(Debug, Clone)]
pub struct EditWarningPolicy {
    pub policies: Vec<(ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding)>,
}

/// The resources with a `scale` subresource whose writes are checked against the scaled object
/// (its group, plural resource and kind).
const SCALED: &[(&str, &str, &str)] = &[("apps", "deployments", "Deployment"), ("apps", "statefulsets", "StatefulSet")];

/// Build the policies and bindings for `options`.
pub fn build(options: &PolicyOptions) -> EditWarningPolicy {
    let mut policies = vec![main_policy(options)];
    for (group, resource, kind) in SCALED {
        policies.push(scale_policy(options, group, resource, kind));
    }
    EditWarningPolicy { policies }
}

impl EditWarningPolicy {
    /// Every object in apply order, as JSON values (policy, binding, policy, binding, ...).
    pub fn documents(&self) -> Vec<serde_json::Value> {
        self.policies
            .iter()
            .flat_map(|(p, b)| [serde_json::to_value(p), serde_json::to_value(b)])
            .map(|v| v.expect("admission objects serialise"))
            .collect()
    }
}

/// UPDATE (and PATCH, which reaches admission as UPDATE) of any object, not its subresources.
fn main_policy(options: &PolicyOptions) -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let subject = "object";
    let spec = ValidatingAdmissionPolicySpec {
        failure_policy: Some("Ignore".into()),
        match_constraints: Some(MatchResources {
            resource_rules: Some(vec![rule(&["*"], &["*"], scope(options))]),
            ..Default::default()
        }),
        match_conditions: Some(vec![
            by_a_person(),
            MatchCondition {
                name: "named-tool-not-an-owner".into(),
                expression: format!(
                    "has(request.options.fieldManager) && !(request.options.fieldManager in {})",
                    cel_list(OWNER_MANAGERS)
                ),
            },
            MatchCondition {
                name: "not-controlled".into(),
                expression: "!has(object.metadata.ownerReferences) || \
                             !object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"
                    .into(),
            },
        ]),
        variables: Some(owner_variables(subject, &options.owners)),
        validations: Some(vec![Validation {
            expression: "variables.owner == ''".into(),
            message_expression: Some(format!("{MAIN_WHAT} + {BELONGS}")),
            reason: Some("Invalid".into()),
            ..Default::default()
        }]),
        audit_annotations: audit(options, MAIN_WHAT),
        ..Default::default()
    };
    policy_pair(options, &options.name, spec, None)
}

/// The `scale` subresource of `resource`: its object has no labels, so the owner is read from the
/// scaled object, a parameter (every `kind` in the request's namespace, the one named alike).
fn scale_policy(
    options: &PolicyOptions,
    group: &str,
    resource: &str,
    kind: &str,
) -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let what = format!("'{kind} ' + request.namespace + '/' + request.name");
    let spec = ValidatingAdmissionPolicySpec {
        failure_policy: Some("Ignore".into()),
        param_kind: Some(ParamKind { api_version: Some(format!("{group}/v1")), kind: Some(kind.into()) }),
        match_constraints: Some(MatchResources {
            resource_rules: Some(vec![rule(&[group], &[&format!("{resource}/scale")], "Namespaced")]),
            ..Default::default()
        }),
        match_conditions: Some(vec![by_a_person()]),
        variables: Some(owner_variables("params", &options.owners)),
        validations: Some(vec![Validation {
            expression: "params.metadata.name != request.name || variables.owner == ''".into(),
            message_expression: Some(format!("{what} + {BELONGS}")),
            reason: Some("Invalid".into()),
            ..Default::default()
        }]),
        audit_annotations: audit(options, &what).map(|mut a| {
            for annotation in &mut a {
                annotation.value_expression =
                    format!("params.metadata.name != request.name ? '' : ({})", annotation.value_expression);
            }
            a
        }),
    };
    let param_ref = ParamRef {
        selector: Some(LabelSelector::default()),
        parameter_not_found_action: Some("Allow".into()),
        ..Default::default()
    };
    policy_pair(options, &format!("{}-scale-{resource}", options.name), spec, Some(param_ref))
}

/// The object a main-resource request writes: `Kind namespace/name` (`Kind name` when
/// cluster-scoped).
const MAIN_WHAT: &str = "request.kind.kind + ' ' + (has(object.metadata.namespace) ? \
                         object.metadata.namespace + '/' : '') + object.metadata.name";

/// The message's tail after the object: whose it is and what happens next.
const BELONGS: &str = "' belongs to ' + variables.owner";

/// The policy and its binding, both named `name`.
fn policy_pair(
    options: &PolicyOptions,
    name: &str,
    spec: ValidatingAdmissionPolicySpec,
    param_ref: Option<ParamRef>,
) -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    let meta = || ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([("app.kubernetes.io/managed-by".to_string(), "kubectl-drift".to_string())])),
        ..Default::default()
    };
    let policy = ValidatingAdmissionPolicy { metadata: meta(), spec: Some(spec), ..Default::default() };
    let binding = ValidatingAdmissionPolicyBinding {
        metadata: meta(),
        spec: ValidatingAdmissionPolicyBindingSpec {
            policy_name: name.into(),
            validation_actions: options.actions.iter().map(|a| a.api_name().to_string()).collect(),
            param_ref,
            match_resources: options
                .namespace_selector
                .clone()
                .map(|selector| MatchResources { namespace_selector: Some(selector), ..Default::default() }),
        },
    };
    (policy, binding)
}

/// With a namespace selector only namespaced objects can match it: cluster-scoped ones are left out.
fn scope(options: &PolicyOptions) -> &'static str {
    if options.namespace_selector.is_some() { "Namespaced" } else { "*" }
}

fn rule(groups: &[&str], resources: &[&str], scope: &str) -> NamedRuleWithOperations {
    NamedRuleWithOperations {
        api_groups: Some(groups.iter().map(|g| g.to_string()).collect()),
        api_versions: Some(vec!["*".into()]),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        operations: Some(vec!["UPDATE".into()]),
        scope: Some(scope.into()),
        ..Default::default()
    }
}

/// Not the cluster's own controllers (the HPA, the controller manager, the scheduler, kubelets).
fn by_a_person() -> MatchCondition {
    let prefixes: Vec<String> = CONTROLLER_USER_PREFIXES
        .iter()
        .map(|p| format!("request.userInfo.username.startsWith({})", cel_string(p)))
        .collect();
    MatchCondition {
        name: "not-a-controller".into(),
        expression: format!(
            "!(request.userInfo.username in {} || {})",
            cel_list(CONTROLLER_USERS),
            prefixes.join(" || ")
        ),
    }
}

/// The audit annotation `<policy>/hand-edit` (Audit only): `what` (the object) and its owner.
fn audit(options: &PolicyOptions, what: &str) -> Option<Vec<AuditAnnotation>> {
    options.actions.contains(&Action::Audit).then(|| {
        vec![AuditAnnotation {
            key: "hand-edit".into(),
            // (an empty value leaves the annotation out; CEL's `?:` takes no null beside a string)
            value_expression: format!("variables.owner == '' ? '' : {what} + {BELONGS}"),
        }]
    })
}

/// `labels`, `annotations` and `owner` of `subject` (`object`, or `params` for a scale): `owner`
/// says whose the object is and what happens next, or is empty when none of `owners` manages it.
fn owner_variables(subject: &str, owners: &[Owner]) -> Vec<Variable> {
    let var = |name: &str, expression: String| Variable { name: name.into(), expression };
    let mut branches: Vec<(String, String)> = Vec::new();
    let label = |k: &str| format!("variables.labels[{}]", cel_string(k));
    let has_label = |k: &str| format!("{} in variables.labels", cel_string(k));
    let annotation = |k: &str| format!("variables.annotations[{}]", cel_string(k));
    let has_annotation = |k: &str| format!("{} in variables.annotations", cel_string(k));
    let is_helm = format!(
        "{} && {} == 'Helm' && {}",
        has_label("app.kubernetes.io/managed-by"),
        label("app.kubernetes.io/managed-by"),
        has_annotation("meta.helm.sh/release-name")
    );
    let (release, release_ns) = ("variables.release", "variables.releaseNamespace");
    // A Flux object's labels `<group>/name` and `<group>/namespace`: (both present, name, namespace).
    let flux_labels = |group: &str| {
        let (name, ns) = (format!("{group}/name"), format!("{group}/namespace"));
        (format!("{} && {}", has_label(&name), has_label(&ns)), label(&name), label(&ns))
    };
    if owners.contains(&Owner::Flux) {
        let (present, name, ns) = flux_labels("helm.toolkit.fluxcd.io");
        branches.push((
            present,
            format!(
                "'Flux HelmRelease ' + {ns} + '/' + {name} + ': this change is drift; Flux reverts it at its next \
                 reconcile (with drift detection on) or upgrade. See: kubectl drift release ' + {release} + ' -n ' + \
                 {release_ns}"
            ),
        ));
    }
    if owners.contains(&Owner::Helm) {
        branches.push((
            is_helm.clone(),
            format!(
                "'Helm release ' + {release} + ' (namespace ' + {release_ns} + '): this change is drift; the next \
                 helm upgrade or rollback reverts it. See: kubectl drift release ' + {release} + ' -n ' + {release_ns}"
            ),
        ));
    }
    if owners.contains(&Owner::Flux) {
        let (present, name, ns) = flux_labels("kustomize.toolkit.fluxcd.io");
        branches.push((
            present,
            format!(
                "'Flux Kustomization ' + {ns} + '/' + {name} + ': this change is drift; Flux reverts what it \
                 applies at its next reconcile. See: kubectl drift kustomization ' + {name} + ' -n ' + {ns}"
            ),
        ));
    }
    let argo = |app: String| {
        format!(
            "'Argo CD Application ' + {app} + ': this change is drift; Argo CD shows the application OutOfSync and \
             reverts it at its next sync (at once with self-heal). See: kubectl drift application ' + {app} + \
             ' -n ARGOCD_NAMESPACE'"
        )
    };
    if owners.contains(&Owner::ArgoCd) {
        let id = "argocd.argoproj.io/tracking-id";
        branches.push((has_annotation(id), argo(format!("{}.split(':')[0]", annotation(id)))));
    }
    if owners.contains(&Owner::ArgoCdLabel) {
        let instance = "app.kubernetes.io/instance";
        branches.push((format!("{} && !({is_helm})", has_label(instance)), argo(label(instance))));
    }
    let owner = branches
        .iter()
        .rev()
        .fold("''".to_string(), |otherwise, (when, then)| format!("{when} ?\n  {then} :\n{otherwise}"));
    vec![
        var("labels", format!("has({subject}.metadata.labels) ? {subject}.metadata.labels : {{}}")),
        var("annotations", format!("has({subject}.metadata.annotations) ? {subject}.metadata.annotations : {{}}")),
        // The Helm release's name and namespace: its annotations, else (a Flux HelmRelease without
        // them) the HelmRelease's own.
        var(
            "release",
            format!(
                "{} ? {} : {} ? {} : ''",
                has_annotation("meta.helm.sh/release-name"),
                annotation("meta.helm.sh/release-name"),
                has_label("helm.toolkit.fluxcd.io/name"),
                label("helm.toolkit.fluxcd.io/name")
            ),
        ),
        var(
            "releaseNamespace",
            format!(
                "{} ? {} : request.namespace",
                has_annotation("meta.helm.sh/release-namespace"),
                annotation("meta.helm.sh/release-namespace")
            ),
        ),
        var("owner", owner),
    ]
}

/// A CEL string literal (single-quoted; our constants hold no quotes or backslashes).
fn cel_string(s: &str) -> String {
    debug_assert!(!s.contains(['\'', '\\']), "{s}");
    format!("'{s}'")
}

fn cel_list(items: &[&str]) -> String {
    format!("[{}]", items.iter().map(|s| cel_string(s)).collect::<Vec<_>>().join(", "))
}

/// A label selector as `kubectl -l` writes it, as the API's LabelSelector (`k=v` in matchLabels,
/// the others as matchExpressions; `k!=v` is `k NotIn (v)`, as the API server reads it).
pub fn label_selector(text: &str) -> Result<LabelSelector, String> {
    let requirements = parse_label_selector(text)?;
    if requirements.is_empty() {
        return Err(format!("label selector {text:?}: no requirement (leave the flag out to select every namespace)"));
    }
    let mut selector = LabelSelector::default();
    let expression = |key: &str, operator: &str, values: Option<Vec<&str>>| LabelSelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values: values.map(|v| v.into_iter().map(String::from).collect()),
    };
    for r in requirements {
        let e = match r {
            LabelRequirement::Equals(k, v) => {
                selector.match_labels.get_or_insert_with(BTreeMap::new).insert(k.to_string(), v.to_string());
                continue;
            }
            LabelRequirement::NotEquals(k, v) => expression(k, "NotIn", Some(vec![v])),
            LabelRequirement::In(k, v) => expression(k, "In", Some(v)),
            LabelRequirement::NotIn(k, v) => expression(k, "NotIn", Some(v)),
            LabelRequirement::Exists(k) => expression(k, "Exists", None),
            LabelRequirement::DoesNotExist(k) => expression(k, "DoesNotExist", None),
        };
        selector.match_expressions.get_or_insert_with(Vec::new).push(e);
    }
    Ok(selector)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn options(owners: &[Owner], actions: &[Action], selector: Option<&str>) -> PolicyOptions {
        PolicyOptions {
            name: DEFAULT_NAME.into(),
            owners: owners.to_vec(),
            actions: actions.to_vec(),
            namespace_selector: selector.map(|s| label_selector(s).unwrap()),
        }
    }

    fn all() -> Vec<Value> {
        build(&options(&[Owner::Helm, Owner::Flux, Owner::ArgoCd], &[Action::Warn, Action::Audit], None)).documents()
    }

    #[test]
    fn a_policy_and_its_binding_for_edits_and_for_each_scale() {
        let docs = all();
        let names: Vec<(&str, &str)> =
            docs.iter().map(|d| (d["kind"].as_str().unwrap(), d["metadata"]["name"].as_str().unwrap())).collect();
        assert_eq!(
            names,
            [
                ("ValidatingAdmissionPolicy", "kubectl-drift-edit-warnings"),
                ("ValidatingAdmissionPolicyBinding", "kubectl-drift-edit-warnings"),
                ("ValidatingAdmissionPolicy", "kubectl-drift-edit-warnings-scale-deployments"),
                ("ValidatingAdmissionPolicyBinding", "kubectl-drift-edit-warnings-scale-deployments"),
                ("ValidatingAdmissionPolicy", "kubectl-drift-edit-warnings-scale-statefulsets"),
                ("ValidatingAdmissionPolicyBinding", "kubectl-drift-edit-warnings-scale-statefulsets"),
            ]
        );
        for d in &docs {
            assert_eq!(d["apiVersion"], "admissionregistration.k8s.io/v1");
        }
        assert_eq!(docs[2]["spec"]["paramKind"], json!({"apiVersion": "apps/v1", "kind": "Deployment"}));
        assert_eq!(docs[3]["spec"]["paramRef"], json!({"selector": {}, "parameterNotFoundAction": "Allow"}));
        assert_eq!(docs[4]["spec"]["matchConstraints"]["resourceRules"][0]["resources"], json!(["statefulsets/scale"]));
    }

    #[test]
    fn never_deny_never_block() {
        for actions in [vec![Action::Warn], vec![Action::Audit], vec![Action::Warn, Action::Audit]] {
            let docs = build(&options(&[Owner::Helm], &actions, None)).documents();
            for d in &docs {
                match d["kind"].as_str().unwrap() {
                    "ValidatingAdmissionPolicy" => assert_eq!(d["spec"]["failurePolicy"], "Ignore"),
                    _ => {
                        let got: Vec<&str> = d["spec"]["validationActions"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|a| a.as_str().unwrap())
                            .collect();
                        let want: Vec<&str> = actions.iter().map(|a| a.api_name()).collect();
                        assert_eq!(got, want);
                        assert!(!got.contains(&"Deny"));
                    }
                }
            }
            // The audit annotation only with Audit.
            assert_eq!(docs[0]["spec"]["auditAnnotations"].is_array(), actions.contains(&Action::Audit));
        }
    }

    #[test]
    fn owners_writes_are_left_out_by_field_manager_and_user() {
        let docs = all();
        let conditions = docs[0]["spec"]["matchConditions"].to_string();
        for manager in OWNER_MANAGERS {
            assert!(conditions.contains(&format!("'{manager}'")), "{manager}: {conditions}");
        }
        assert!(conditions.contains("system:serviceaccount:kube-system:"), "{conditions}");
        assert!(conditions.contains("system:kube-controller-manager"), "{conditions}");
        // The scale policies have no field manager to go by (kubectl scale names none): users only.
        let scale = docs[2]["spec"]["matchConditions"].to_string();
        assert!(!scale.contains("fieldManager") && scale.contains("system:kube-controller-manager"), "{scale}");
    }

    #[test]
    fn only_the_owners_asked_for() {
        let owner = |owners: &[Owner]| {
            let docs = build(&options(owners, &[Action::Warn], None)).documents();
            docs[0]["spec"]["variables"][4]["expression"].as_str().unwrap().to_string()
        };
        let helm = owner(&[Owner::Helm]);
        assert!(helm.contains("'Helm release '") && !helm.contains("Flux") && !helm.contains("Argo"), "{helm}");
        let flux = owner(&[Owner::Flux]);
        assert!(flux.contains("Flux Kustomization") && flux.contains("Flux HelmRelease"), "{flux}");
        assert!(!flux.contains("'Helm release '"), "{flux}");
        let argo = owner(&[Owner::ArgoCd]);
        assert!(
            argo.contains("argocd.argoproj.io/tracking-id") && !argo.contains("app.kubernetes.io/instance"),
            "{argo}"
        );
        let label = owner(&[Owner::ArgoCdLabel]);
        assert!(label.contains("app.kubernetes.io/instance") && label.contains("meta.helm.sh/release-name"), "{label}");
        // A Flux HelmRelease's objects also carry Helm's marks: Flux is asked first.
        let both = owner(&[Owner::Helm, Owner::Flux]);
        assert!(both.find("Flux HelmRelease").unwrap() < both.find("'Helm release '").unwrap(), "{both}");
    }

    #[test]
    fn a_namespace_selector_binds_namespaced_objects_only() {
        let docs = build(&options(&[Owner::Helm], &[Action::Warn], Some("team=shop,env in (a,b),!legacy"))).documents();
        assert_eq!(
            docs[1]["spec"]["matchResources"]["namespaceSelector"],
            json!({"matchLabels": {"team": "shop"}, "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"}]})
        );
        assert_eq!(docs[0]["spec"]["matchConstraints"]["resourceRules"][0]["scope"], "Namespaced");
        assert_eq!(all()[0]["spec"]["matchConstraints"]["resourceRules"][0]["scope"], "*");
        assert!(all()[1]["spec"].get("matchResources").is_none());
    }

    #[test]
    fn label_selectors_as_kubectl_writes_them() {
        let s = label_selector("a!=b, c, kubernetes.io/metadata.name notin (x, y)").unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"matchExpressions": [
                {"key": "a", "operator": "NotIn", "values": ["b"]},
                {"key": "c", "operator": "Exists"},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["x", "y"]}]})
        );
        assert!(label_selector("").is_err());
        assert!(label_selector("a b").is_err());
    }
}
