//! Label selectors, as the API server evaluates them: `matchLabels` and `matchExpressions`
//! (PodDisruptionBudget, NetworkPolicy, ClusterRole aggregation) and plain maps (Service).

use super::tree::{IObject, IValue, Tree, TreeMap, as_array, as_str};

/// Does a `LabelSelector` select these labels? `{}` selects everything; a missing (null)
/// selector selects nothing.
pub fn label_selector_matches(selector: &(impl Tree + ?Sized), labels: &(impl TreeMap + ?Sized)) -> bool {
    let (selector, labels) = (&*selector.tree(), &*labels.tree_map());
    let Some(sel) = selector.as_object() else { return false };
    if let Some(ml) = sel.get("matchLabels").and_then(IValue::as_object)
        && !ml.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let Some(exprs) = sel.get("matchExpressions").and_then(as_array) else { return true };
    exprs.iter().all(|e| {
        let key = e.get("key").and_then(as_str).unwrap_or("");
        let values: Vec<&str> =
            e.get("values").and_then(as_array).map(|a| a.iter().filter_map(as_str).collect()).unwrap_or_default();
        let have = labels.get(key).and_then(as_str);
        match e.get("operator").and_then(as_str).unwrap_or("") {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => have.is_none_or(|h| !values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            // An operator we do not know: do not claim a match we cannot prove.
            _ => false,
        }
    })
}

/// Does a selector select every object (`{}`)?
pub fn selects_everything(selector: &(impl Tree + ?Sized)) -> bool {
    let selector = &*selector.tree();
    selector.as_object().is_some_and(|m| {
        m.get("matchLabels").and_then(IValue::as_object).is_none_or(IObject::is_empty)
            && m.get("matchExpressions").and_then(as_array).is_none_or(<[IValue]>::is_empty)
    })
}

/// Does a Service-style selector (a plain map) select these labels? An empty map selects nothing.
pub fn map_selector_matches(selector: &(impl TreeMap + ?Sized), labels: &(impl TreeMap + ?Sized)) -> bool {
    let (selector, labels) = (&*selector.tree_map(), &*labels.tree_map());
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn match_labels_and_expressions() {
        let l = labels(json!({"app": "web", "tier": "front"}));
        assert!(label_selector_matches(&json!({}), &l));
        assert!(!label_selector_matches(&Value::Null, &l));
        assert!(label_selector_matches(&json!({"matchLabels": {"app": "web"}}), &l));
        assert!(!label_selector_matches(&json!({"matchLabels": {"app": "db"}}), &l));
        assert!(label_selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "x"]}]}),
            &l
        ));
        assert!(!label_selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
            &l
        ));
        assert!(label_selector_matches(
            &json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
            &l
        ));
        assert!(!label_selector_matches(&json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}), &l));
        assert!(!label_selector_matches(
            &json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
            &l
        ));
        assert!(selects_everything(&json!({})));
        assert!(!selects_everything(&json!({"matchLabels": {"a": "b"}})));
        assert!(!selects_everything(&Value::Null));
    }

    #[test]
    fn map_selectors() {
        let l = labels(json!({"app": "web"}));
        assert!(map_selector_matches(&labels(json!({"app": "web"})), &l));
        assert!(!map_selector_matches(&labels(json!({})), &l));
        assert!(!map_selector_matches(&labels(json!({"app": "web", "x": "y"})), &l));
    }
}
