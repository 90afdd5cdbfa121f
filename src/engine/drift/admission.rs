//! Changed at admission: the step of the release check that names the likely cause of each value
//! a mutating webhook or MutatingAdmissionPolicy changed during the deployer's own write
//! (`compare::changed_at_admission` finds them; docs/drift.md "Changed at admission").
//!
//! The cluster's mutating admission configuration is read once per engine, and only when a check
//! has such a value ([`Mutators::read`], through `source::admission`). A candidate is a policy or
//! webhook whose rules (group, version, resource, operation CREATE or UPDATE, scope) and selectors
//! (namespace and object; a policy's `matchConstraints` and a binding's `matchResources`) match
//! the object as it is now. A policy whose mutations name the field is a cause; a webhook's
//! changes cannot be read, so a matching webhook is only a candidate ("or none that matches now").
//! What could not be read is said, never taken as "no mutator".

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::engine::compare::{AdmissionChanges, CHANGED_AT_ADMISSION, ManagedFields, changed_at_admission};
use crate::engine::lifecycle::LiveObjects;
use crate::engine::select::label_selector_matches;
use crate::report::path::FieldPath;
use crate::report::{ObjectReport, ObjectState, group_version};
use crate::source::admission::{AdmissionConfig, Listed};
use crate::source::live::Kinds;

use super::Engine;

/// A MutatingAdmissionPolicy with the bindings that put it to work.
#[derive(Debug, Clone)]
struct Policy {
    name: String,
    constraints: Value,
    /// Its mutations' expressions, as written (what fields they name).
    expressions: String,
    /// Each binding's `matchResources` (`Null`: the binding adds no constraint).
    bindings: Vec<Value>,
}

/// One webhook of a MutatingWebhookConfiguration.
#[derive(Debug, Clone)]
struct Webhook {
    name: String,
    rules: Vec<Value>,
    namespace_selector: Value,
    object_selector: Value,
    equivalent: bool,
}

/// The cluster's mutators, as read once per engine.
#[derive(Debug, Default)]
pub struct Mutators {
    policies: Vec<Policy>,
    webhooks: Vec<Webhook>,
    /// Namespace labels by name (`None`: the Namespaces could not be read).
    namespaces: Option<HashMap<String, Map<String, Value>>>,
    /// What could not be read (a forbidden LIST), said with every cause.
    problems: Vec<String>,
}

/// The object a cause is looked for, as admission rules see it.
pub struct Admitted<'a> {
    pub group: &'a str,
    pub version: &'a str,
    /// The resource (plural) name.
    pub resource: &'a str,
    pub namespaced: bool,
    pub namespace: &'a str,
    pub name: &'a str,
    /// Its labels, as live.
    pub labels: &'a Map<String, Value>,
}

impl Mutators {
    /// Read them through the source layer (one cluster-scoped LIST each).
    pub async fn read(kinds: &Kinds, reader: &crate::source::live::LiveReader) -> Mutators {
        Mutators::from_config(&AdmissionConfig::read(kinds, reader).await)
    }

    /// Build them from what was read.
    pub fn from_config(config: &AdmissionConfig) -> Mutators {
        let mut problems = Vec::new();
        let mut items = |listed: &Listed, what: &str| -> Vec<Value> {
            match listed {
                Ok(items) => items.as_ref().clone(),
                Err(e) => {
                    problems.push(format!("{what} could not be listed: {e}"));
                    Vec::new()
                }
            }
        };
        let policies = items(&config.policies, "MutatingAdmissionPolicies");
        let bindings = items(&config.bindings, "MutatingAdmissionPolicyBindings");
        let webhooks = items(&config.webhooks, "MutatingWebhookConfigurations");
        let namespaces = config.namespaces.as_ref().ok().map(|items| {
            items
                .iter()
                .filter_map(|n| {
                    let name = n.pointer("/metadata/name")?.as_str()?.to_string();
                    let labels = n.pointer("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default();
                    Some((name, labels))
                })
                .collect()
        });
        let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        let policies = policies
            .iter()
            .map(|p| {
                let name = text(p, "/metadata/name");
                let expressions = p
                    .pointer("/spec/mutations")
                    .and_then(Value::as_array)
                    .map(|ms| {
                        ms.iter()
                            .flat_map(|m| [text(m, "/applyConfiguration/expression"), text(m, "/jsonPatch/expression")])
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                let bindings = bindings
                    .iter()
                    .filter(|b| text(b, "/spec/policyName") == name)
                    .map(|b| b.pointer("/spec/matchResources").cloned().unwrap_or(Value::Null))
                    .collect();
                let constraints = p.pointer("/spec/matchConstraints").cloned().unwrap_or(Value::Null);
                Policy { name, constraints, expressions, bindings }
            })
            .collect();
        let webhooks = webhooks
            .iter()
            .flat_map(|c| c.get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default())
            .map(|w| Webhook {
                name: text(&w, "/name"),
                rules: w.get("rules").and_then(Value::as_array).cloned().unwrap_or_default(),
                namespace_selector: w.get("namespaceSelector").cloned().unwrap_or(Value::Null),
                object_selector: w.get("objectSelector").cloned().unwrap_or(Value::Null),
                equivalent: w.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
            })
            .collect();
        Mutators { policies, webhooks, namespaces, problems }
    }

    /// The likely cause of `field` of `object` changed at admission, as a phrase:
    /// `MutatingAdmissionPolicy always-pull`, `webhook adjuster.example.com, or none that matches
    /// now`, or that none matches (with what could not be read).
    pub fn cause(&self, object: &Admitted, field: &FieldPath) -> String {
        let namespace_labels = self.namespace_labels(object);
        let selects = |selector: &Value, labels: &Map<String, Value>| {
            selector.is_null() || label_selector_matches(selector, labels)
        };
        // A namespace selector applies to namespaced objects only (and the Namespace itself).
        let in_namespace = |selector: &Value| !object.namespaced || selects(selector, &namespace_labels);
        // A policy's `matchConstraints` or a binding's `matchResources`; a binding without
        // `resourceRules` takes every resource its policy matches (a policy must have some).
        let matches = |m: &Value| {
            let equivalent = m.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
            let rules = |key: &str| m.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
            let resource_rules = rules("resourceRules");
            (resource_rules.is_empty() || resource_rules.iter().any(|r| rule_matches(r, object, equivalent)))
                && !rules("excludeResourceRules").iter().any(|r| rule_matches(r, object, equivalent))
                && in_namespace(m.get("namespaceSelector").unwrap_or(&Value::Null))
                && selects(m.get("objectSelector").unwrap_or(&Value::Null), object.labels)
        };
        let key = field.last_key().unwrap_or("");
        let policies: Vec<String> = self
            .policies
            .iter()
            .filter(|p| !key.is_empty() && p.expressions.contains(key))
            .filter(|p| matches(&p.constraints) && p.bindings.iter().any(|b| b.is_null() || matches(b)))
            .map(|p| format!("MutatingAdmissionPolicy {}", p.name))
            .collect();
        let webhooks: Vec<String> = self
            .webhooks
            .iter()
            .filter(|w| {
                w.rules.iter().any(|r| rule_matches(r, object, w.equivalent))
                    && in_namespace(&w.namespace_selector)
                    && selects(&w.object_selector, object.labels)
            })
            .map(|w| format!("webhook {}", w.name))
            .collect();
        let mut cause = match (policies.is_empty(), webhooks.is_empty()) {
            (true, true) => "no mutating webhook or policy matches it now".to_string(),
            (false, true) => policies.join(" or "),
            (true, false) => format!("{}, or none that matches now", webhooks.join(" or ")),
            (false, false) => format!("{} or {}", policies.join(" or "), webhooks.join(" or ")),
        };
        for p in &self.problems {
            cause.push_str("; ");
            cause.push_str(p);
        }
        cause
    }

    /// The labels of the object's namespace; every namespace has `kubernetes.io/metadata.name`,
    /// which is all that is known when the Namespaces could not be read.
    fn namespace_labels(&self, object: &Admitted) -> Map<String, Value> {
        let ns = if object.namespaced { object.namespace } else { object.name };
        self.namespaces.as_ref().and_then(|n| n.get(ns).cloned()).unwrap_or_else(|| {
            let mut m = Map::new();
            m.insert("kubernetes.io/metadata.name".into(), Value::String(ns.to_string()));
            m
        })
    }
}

/// Whether an admission rule (`RuleWithOperations`, `NamedRuleWithOperations`) matches a write
/// that creates or updates `object`. Under `matchPolicy: Equivalent` (the default) the API server
/// also sends a write in another version of the same resource, so the version is not compared.
fn rule_matches(rule: &Value, object: &Admitted, equivalent: bool) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |key: &str, value: &str| list(key).iter().any(|v| *v == "*" || *v == value);
    let operations = list("operations");
    let resource = list("resources").iter().any(|r| matches!(*r, "*" | "*/*") || *r == object.resource);
    let scope = match rule.get("scope").and_then(Value::as_str) {
        Some("Cluster") => !object.namespaced,
        Some("Namespaced") => object.namespaced,
        _ => true,
    };
    let names = list("resourceNames");
    operations.iter().any(|o| matches!(*o, "*" | "CREATE" | "UPDATE"))
        && has("apiGroups", object.group)
        && (equivalent || has("apiVersions", object.version))
        && resource
        && scope
        && (names.is_empty() || names.contains(&object.name))
}

/// Name the cause of every value of `objects` changed at admission. With
/// [`AdmissionChanges::Ignore`] those are the fields the comparison marked ignored
/// ([`CHANGED_AT_ADMISSION`]); their reason is written out with the cause. With
/// [`AdmissionChanges::Drift`] they are drift (no reason; not explained by a newer revision) whose
/// owners are all the deployer's managers; they keep counting, with the cause in `admission`.
/// The mutators are read on the first such value only.
pub async fn name_causes(
    engine: &Engine,
    objects: &mut [ObjectReport],
    live: &LiveObjects,
    deployers: &[String],
    mode: AdmissionChanges,
) {
    for o in objects.iter_mut().filter(|o| matches!(o.state, ObjectState::Changed | ObjectState::Ignored)) {
        let ns = o.namespace.clone().unwrap_or_default();
        let Some(live_obj) = live.get(&(o.kind.clone(), ns.clone(), o.name.clone())) else { continue };
        let managed = ManagedFields::from_object(live_obj);
        let admitted: Vec<usize> = o
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| match mode {
                AdmissionChanges::Ignore => f.reason.as_deref() == Some(CHANGED_AT_ADMISSION),
                AdmissionChanges::Drift => {
                    f.is_hand_drift() && changed_at_admission(&managed, f.change, &f.path, live_obj, deployers)
                }
            })
            .map(|(i, _)| i)
            .collect();
        if admitted.is_empty() {
            continue;
        }
        let mutators = engine.admission.get_or_init(|| Mutators::read(&engine.kinds, &engine.reader)).await;
        let (group, version) = group_version(&o.api_version);
        let resolved = engine.kinds.resolve(&o.api_version, &o.kind).ok();
        let fallback = format!("{}s", o.kind.to_lowercase());
        let empty = Map::new();
        let object = Admitted {
            group,
            version,
            resource: resolved.as_ref().map_or(fallback.as_str(), |r| r.resource.plural.as_str()),
            namespaced: resolved.as_ref().map_or(!ns.is_empty(), |r| r.namespaced),
            namespace: &ns,
            name: &o.name,
            labels: live_obj.pointer("/metadata/labels").and_then(Value::as_object).unwrap_or(&empty),
        };
        for i in admitted {
            let f = &mut o.fields[i];
            let cause = mutators.cause(&object, &f.path);
            if mode == AdmissionChanges::Ignore {
                f.reason = Some(format!("{CHANGED_AT_ADMISSION} ({cause})"));
            }
            f.admission = Some(cause);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn config(policies: Value, bindings: Value, webhooks: Value) -> AdmissionConfig {
        let listed = |v: Value| -> Listed { Ok(Arc::new(v.as_array().cloned().unwrap_or_default())) };
        AdmissionConfig {
            policies: listed(policies),
            bindings: listed(bindings),
            webhooks: listed(webhooks),
            namespaces: listed(json!([
                {"metadata": {"name": "shop", "labels": {"kubernetes.io/metadata.name": "shop", "team": "a"}}},
                {"metadata": {"name": "other", "labels": {"kubernetes.io/metadata.name": "other"}}}
            ])),
        }
    }

    fn always_pull(namespace_selector: Value) -> (Value, Value) {
        (
            json!([{"metadata": {"name": "always-pull"}, "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: object.spec.template.spec.containers.map(c, Object.spec.template.spec.containers{name: c.name, imagePullPolicy: \"Always\"})}}}}"}}]}}]),
            json!([{"metadata": {"name": "always-pull"}, "spec": {"policyName": "always-pull",
                "matchResources": {"namespaceSelector": namespace_selector}}}]),
        )
    }

    fn adjuster(rules: Value, object_selector: Value) -> Value {
        json!([{"metadata": {"name": "adjuster"}, "webhooks": [{"name": "adjuster.example.com", "rules": rules,
            "namespaceSelector": {"matchLabels": {"team": "a"}}, "objectSelector": object_selector}]}])
    }

    fn deployments() -> Value {
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}])
    }

    fn deployment<'a>(namespace: &'a str, labels: &'a Map<String, Value>) -> Admitted<'a> {
        Admitted {
            group: "apps",
            version: "v1",
            resource: "deployments",
            namespaced: true,
            namespace,
            name: "web",
            labels,
        }
    }

    fn path(s: &str) -> FieldPath {
        s.parse().unwrap()
    }

    const PULL: &str = "spec.template.spec.containers[name=app].imagePullPolicy";
    const CPU: &str = "spec.template.spec.containers[name=app].resources.requests.cpu";

    #[test]
    fn a_policy_that_names_the_field_is_the_cause_and_a_webhook_only_a_candidate() {
        let (p, b) = always_pull(json!({"matchLabels": {"team": "a"}}));
        let m = Mutators::from_config(&config(p, b, adjuster(deployments(), json!({}))));
        let labels = Map::new();
        let web = deployment("shop", &labels);
        assert_eq!(m.cause(&web, &path(PULL)), "MutatingAdmissionPolicy always-pull or webhook adjuster.example.com");
        // The policy does not name cpu: the webhook, which could have, is all that is left.
        assert_eq!(m.cause(&web, &path(CPU)), "webhook adjuster.example.com, or none that matches now");
        // Another namespace: neither the binding nor the webhook selects it.
        let elsewhere = deployment("other", &labels);
        assert_eq!(m.cause(&elsewhere, &path(PULL)), "no mutating webhook or policy matches it now");
    }

    #[test]
    fn rules_and_selectors_are_matched_as_the_api_server_matches_them() {
        let labels: Map<String, Value> = json!({"app": "web"}).as_object().cloned().unwrap();
        let web = deployment("shop", &labels);
        let cause = |rules: Value, object_selector: Value| {
            Mutators::from_config(&config(json!([]), json!([]), adjuster(rules, object_selector)))
                .cause(&web, &path(CPU))
        };
        let found = "webhook adjuster.example.com, or none that matches now";
        let none = "no mutating webhook or policy matches it now";
        assert_eq!(cause(deployments(), json!({"matchLabels": {"app": "web"}})), found);
        assert_eq!(cause(deployments(), json!({"matchLabels": {"app": "api"}})), none);
        let rule = |ops: &[&str], groups: &[&str], resources: &[&str], scope: &str| json!([{"operations": ops, "apiGroups": groups, "apiVersions": ["*"], "resources": resources, "scope": scope}]);
        assert_eq!(cause(rule(&["*"], &["*"], &["*"], "*"), Value::Null), found);
        assert_eq!(cause(rule(&["DELETE"], &["apps"], &["deployments"], "*"), Value::Null), none);
        assert_eq!(cause(rule(&["CREATE"], &[""], &["deployments"], "*"), Value::Null), none);
        assert_eq!(cause(rule(&["CREATE"], &["apps"], &["pods"], "*"), Value::Null), none);
        assert_eq!(cause(rule(&["CREATE"], &["apps"], &["deployments/scale"], "*"), Value::Null), none);
        assert_eq!(cause(rule(&["CREATE"], &["apps"], &["deployments"], "Cluster"), Value::Null), none);
        assert_eq!(cause(rule(&["UPDATE"], &["apps"], &["*/*"], "Namespaced"), Value::Null), found);
    }

    #[test]
    fn a_policy_works_only_through_a_binding_that_selects_the_object() {
        let labels = Map::new();
        let web = deployment("shop", &labels);
        let (p, _) = always_pull(json!({}));
        let unbound = Mutators::from_config(&config(p.clone(), json!([]), json!([])));
        assert_eq!(unbound.cause(&web, &path(PULL)), "no mutating webhook or policy matches it now");
        let (_, b) = always_pull(json!({"matchLabels": {"team": "b"}}));
        let elsewhere = Mutators::from_config(&config(p.clone(), b, json!([])));
        assert_eq!(elsewhere.cause(&web, &path(PULL)), "no mutating webhook or policy matches it now");
        let b = json!([{"metadata": {"name": "b"}, "spec": {"policyName": "always-pull"}}]);
        assert_eq!(
            Mutators::from_config(&config(p, b, json!([]))).cause(&web, &path(PULL)),
            "MutatingAdmissionPolicy always-pull"
        );
    }

    #[test]
    fn what_could_not_be_read_is_said() {
        let mut c = config(json!([]), json!([]), json!([]));
        c.webhooks = Err("forbidden to list mutatingwebhookconfigurations".into());
        c.namespaces = Err("forbidden".into());
        let labels = Map::new();
        assert_eq!(
            Mutators::from_config(&c).cause(&deployment("shop", &labels), &path(CPU)),
            "no mutating webhook or policy matches it now; MutatingWebhookConfigurations could not be listed: \
             forbidden to list mutatingwebhookconfigurations"
        );
        // Without the Namespaces, a selector on the namespace's name still matches.
        let mut c = config(
            json!([]),
            json!([]),
            json!([{"metadata": {"name": "x"}, "webhooks": [{"name": "w", "rules": deployments(),
                "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["shop"]}]}}]}]),
        );
        c.namespaces = Err("forbidden".into());
        assert_eq!(
            Mutators::from_config(&c).cause(&deployment("shop", &labels), &path(CPU)),
            "webhook w, or none that matches now"
        );
    }
}
