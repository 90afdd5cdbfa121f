//! A stable signature of a set of findings: what is drifted, not when or by whom.
//!
//! Sorted (kind, namespace, name, state, path, change, desired, live) tuples of drift by hand
//! (what a failed or pending Helm revision applied is alerted as a status change instead), hashed. Secret
//! values are already redacted in reports (their redaction carries a short hash, so a second
//! change of the same key is new drift); times and managers are left out because they change
//! without the drift changing; ignored fields are left out because they are not drift.

use sha2::{Digest, Sha256};

use crate::report::ObjectReport;

/// The signature of drifted objects (empty input: the signature of "no drift").
pub fn drift_signature(objects: &[ObjectReport]) -> String {
    let mut lines: Vec<String> = Vec::new();
    for o in objects.iter().filter_map(ObjectReport::hand_drift) {
        let head = format!("{}|{}|{}|{:?}", o.kind, o.namespace.as_deref().unwrap_or(""), o.name, o.state);
        if o.fields.iter().all(|f| f.reason.is_some()) {
            lines.push(head.clone());
        }
        for f in o.fields.iter().filter(|f| f.reason.is_none()) {
            let v = |x: &Option<serde_json::Value>| x.as_ref().map(|v| v.to_string()).unwrap_or_default();
            lines.push(format!("{head}|{}|{:?}|{}|{}", f.path, f.change, v(&f.desired), v(&f.live)));
        }
    }
    lines.sort();
    let digest = Sha256::digest(lines.join("\n").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The signature of an error message (numbers that change between attempts are kept: a
/// different error is a different alert).
pub fn error_signature(message: &str) -> String {
    let digest = Sha256::digest(message.as_bytes());
    format!("error:{}", digest.iter().take(16).map(|b| format!("{b:02x}")).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::field::Change;
    use crate::report::{FieldReport, ObjectState};
    use serde_json::json;

    fn obj(name: &str, path: &str, live: i64, manager: &str, time: &str) -> ObjectReport {
        ObjectReport {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: name.into(),
            state: ObjectState::Changed,
            fields: vec![FieldReport {
                history: None,
                path: path.parse().unwrap(),
                change: Change::Changed,
                desired: Some(json!(2)),
                live: Some(json!(live)),
                manager: Some(manager.into()),
                time: Some(time.into()),
                reason: None,
                from_revision: None,
                admission: None,
            }],
            error: None,
            source: None,
            from_revision: None,
            note: None,
            not_created: false,
        }
    }

    #[test]
    fn stable_under_order_time_and_manager() {
        let a = vec![obj("a", "spec.replicas", 5, "kubectl", "t1"), obj("b", "spec.replicas", 3, "kubectl", "t1")];
        let b = vec![obj("b", "spec.replicas", 3, "kubectl-edit", "t9"), obj("a", "spec.replicas", 5, "k9s", "t2")];
        assert_eq!(drift_signature(&a), drift_signature(&b));
    }

    #[test]
    fn changes_with_the_drift() {
        let a = vec![obj("a", "spec.replicas", 5, "kubectl", "t1")];
        let b = vec![obj("a", "spec.replicas", 6, "kubectl", "t1")];
        assert_ne!(drift_signature(&a), drift_signature(&b));
        assert_ne!(drift_signature(&a), drift_signature(&[]));
    }

    #[test]
    fn ignored_fields_do_not_count() {
        let mut ignored = obj("a", "spec.replicas", 5, "kcm", "t");
        ignored.state = ObjectState::Ignored;
        ignored.fields[0].reason = Some("hpa".into());
        assert_eq!(drift_signature(&[ignored]), drift_signature(&[]));
    }
}
