//! Helm's lifecycle in a drift report: a release whose last operation did not complete.
//!
//! After a failed or interrupted upgrade or rollback, the newest revision is newer than the
//! deployed one and live objects hold some of what it applied. The report compares live with the
//! deployed revision (the desired state) as always, then [`attribute_newer`] compares each
//! difference with the newer revision too: what matches it is marked `from_revision` (Helm did
//! it, not a person), and only what matches neither stays drift by hand. [`release_status`] turns
//! that and Helm's status into the report status. Pure functions: no I/O, no printing.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::compare::{CHANGED_AT_ADMISSION, CompareContext, compare_object, prepare_desired};
use crate::report::path::FieldPath;
use crate::report::{FieldReport, ObjectReport, ObjectState, Status, group_version};
use crate::source::manifest::DesiredObject;

/// Live objects keyed by (kind, namespace or "", name), as the engine returns them.
pub type LiveObjects = HashMap<(String, String, String), Value>;

/// The newer revision's object that a reported object stands for: same group, kind and name,
/// and the same namespace (the release namespace when the manifest leaves it out) unless the
/// object is cluster-scoped.
fn counterpart<'a>(o: &ObjectReport, newer: &'a [DesiredObject], release_namespace: &str) -> Option<&'a DesiredObject> {
    newer.iter().find(|d| {
        d.kind == o.kind
            && d.name == o.name
            && group_version(&d.api_version).0 == group_version(&o.api_version).0
            && match &o.namespace {
                Some(ns) if !ns.is_empty() => d.namespace.as_deref().unwrap_or(release_namespace) == ns,
                _ => true,
            }
    })
}

/// Whether two rendered paths overlap: equal, or one lies under the other.
fn overlaps(a: &FieldPath, b: &FieldPath) -> bool {
    a.is_under(b) || b.is_under(a)
}

/// Mark the differences that the newer, incomplete revision `revision` (its objects `newer`)
/// explains: a changed or removed field whose live value is the newer revision's, an added
/// field the newer revision sets, an object missing because the newer revision dropped it, an
/// extra object the newer revision created. Everything else stays drift by hand.
pub fn attribute_newer(
    objects: &mut [ObjectReport],
    newer: &[DesiredObject],
    revision: u32,
    release_namespace: &str,
    live: &LiveObjects,
    ctx: &CompareContext,
) {
    for o in objects.iter_mut() {
        let other = counterpart(o, newer, release_namespace);
        match o.state {
            ObjectState::Missing if other.is_none() => o.from_revision = Some(revision),
            ObjectState::Extra if other.is_some() => o.from_revision = Some(revision),
            ObjectState::Changed | ObjectState::Ignored => {
                let Some(other) = other else { continue };
                let ns = o.namespace.clone().unwrap_or_default();
                let Some(live_obj) = live.get(&(o.kind.clone(), ns.clone(), o.name.clone())) else { continue };
                let mut body = other.body.clone();
                if let (false, Some(meta)) = (ns.is_empty(), body.get_mut("metadata").and_then(Value::as_object_mut)) {
                    meta.insert("namespace".into(), Value::String(ns));
                }
                let against_newer: Vec<FieldPath> =
                    compare_object(&body, live_obj, ctx).into_iter().map(|d| d.path).collect();
                let prepared = prepare_desired(&other.kind, &body);
                // What looked changed at admission (Helm owns it) may be what the newer revision
                // applied: Helm's own write, which that explains better.
                let admitted = |f: &FieldReport| f.reason.as_deref() == Some(CHANGED_AT_ADMISSION);
                for f in o.fields.iter_mut().filter(|f| f.reason.is_none() || admitted(f)) {
                    if against_newer.iter().any(|p| overlaps(p, &f.path)) {
                        continue;
                    }
                    // A changed value must be the newer revision's own, not merely unset there.
                    let newer_sets = f.path.get(&prepared).is_some();
                    let explained = match f.change {
                        crate::report::field::Change::Changed | crate::report::field::Change::Added => newer_sets,
                        crate::report::field::Change::Removed => true,
                    };
                    if explained {
                        f.from_revision = Some(revision);
                        if admitted(f) {
                            f.reason = None;
                        }
                    }
                }
                if o.fields.iter().any(|f| f.reason.is_none()) {
                    o.state = ObjectState::Changed;
                }
            }
            _ => {}
        }
    }
}

/// Mark the missing objects of a release that never deployed (its first install failed or was
/// interrupted, and the revision compared is that install's): the install did not create them.
/// An object it created that a person deleted afterwards reads the same; nothing tells the two
/// apart (docs/drift.md, "Helm's lifecycle").
pub fn not_created(objects: &mut [ObjectReport]) {
    for o in objects.iter_mut().filter(|o| o.state == ObjectState::Missing) {
        o.not_created = true;
    }
}

/// The status of a checked release: an error if it could not be fully checked, drifted if
/// anything was done by hand, incomplete if Helm's last operation did not complete (the
/// newest revision is not `deployed`), else clean.
pub fn release_status<'a>(
    objects: impl IntoIterator<Item = &'a ObjectReport>,
    has_errors: bool,
    helm_status: &str,
) -> Status {
    let hand_drift = objects.into_iter().any(ObjectReport::is_hand_drift);
    Status::judge(has_errors, hand_drift, !crate::source::helm::storage::is_settled(helm_status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FieldReport;
    use crate::report::field::Change;
    use crate::source::manifest::parse_stream;
    use serde_json::json;

    fn ctx() -> CompareContext {
        CompareContext { deployers: vec!["helm".into(), "Helm".into()], ..Default::default() }
    }

    fn field(path: &str, change: Change, desired: Option<Value>, live: Option<Value>) -> FieldReport {
        FieldReport {
            history: None,
            path: path.parse().unwrap(),
            change,
            desired,
            live,
            manager: Some("helm".into()),
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    fn object(kind: &str, name: &str, state: ObjectState, fields: Vec<FieldReport>) -> ObjectReport {
        ObjectReport {
            fields,
            ..ObjectReport::new(
                if kind == "Deployment" { "apps/v1" } else { "v1" },
                kind,
                Some("shop".into()),
                name,
                state,
            )
        }
    }

    const NEWER: &str = "---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: web
          image: web:2.5.0
          env:
            - name: LOG_LEVEL
              value: info
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: added-by-upgrade
data:
  a: b
";

    #[test]
    fn what_the_newer_revision_applied_is_not_hand_drift() {
        let (newer, errors) = parse_stream(NEWER, "test");
        assert!(errors.is_empty());
        let live_web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "web:2.5.0",
                "env": [{"name": "LOG_LEVEL", "value": "debug"}]}]}}}});
        let live: LiveObjects = [(("Deployment".into(), "shop".into(), "web".into()), live_web)].into();
        let mut objects = vec![
            object(
                "Deployment",
                "web",
                ObjectState::Changed,
                vec![
                    field(
                        "spec.template.spec.containers[name=web].image",
                        Change::Changed,
                        Some(json!("web:1.27")),
                        Some(json!("web:2.5.0")),
                    ),
                    field(
                        "spec.template.spec.containers[name=web].env[name=LOG_LEVEL].value",
                        Change::Changed,
                        Some(json!("info")),
                        Some(json!("debug")),
                    ),
                ],
            ),
            object("ConfigMap", "added-by-upgrade", ObjectState::Extra, vec![]),
            object("ConfigMap", "hand-made", ObjectState::Extra, vec![]),
            object("NetworkPolicy", "dropped-by-upgrade", ObjectState::Missing, vec![]),
            object("ConfigMap", "config", ObjectState::Missing, vec![]),
        ];
        // The release's ConfigMap `config` is in the newer revision too: missing by hand.
        let (mut newer2, _) = parse_stream("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n", "t");
        let mut all = newer;
        all.append(&mut newer2);
        attribute_newer(&mut objects, &all, 2, "shop", &live, &ctx());
        let web = &objects[0];
        assert_eq!(web.fields[0].from_revision, Some(2), "the image is what revision 2 set");
        assert_eq!(web.fields[1].from_revision, None, "LOG_LEVEL=debug matches neither revision: by hand");
        assert!(web.is_hand_drift());
        assert_eq!(objects[1].from_revision, Some(2));
        assert_eq!(objects[2].from_revision, None);
        assert_eq!(objects[3].from_revision, Some(2));
        assert_eq!(objects[4].from_revision, None);
        assert_eq!(release_status(&objects, false, "failed"), Status::Drifted);
        let web_hand = web.hand_drift().unwrap();
        assert_eq!(web_hand.fields.len(), 1);
        // Without the hand edits only Helm's work remains: incomplete, not drifted.
        objects[0].fields.remove(1);
        objects.retain(|o| o.name != "hand-made" && o.name != "config");
        assert!(!objects.iter().any(ObjectReport::is_hand_drift));
        assert_eq!(release_status(&objects, false, "failed"), Status::Incomplete);
        assert_eq!(release_status(&objects, true, "failed"), Status::Error);
        assert_eq!(release_status(&[], false, "deployed"), Status::Clean);
        assert_eq!(release_status(&[], false, "pending-install"), Status::Incomplete);
    }

    #[test]
    fn what_the_newer_revision_applied_is_its_own_not_changed_at_admission() {
        // A failed upgrade's image is Helm's own write: the comparison took it for a value changed
        // at admission (only Helm owns it); the newer revision explains it better.
        let (newer, _) = parse_stream(NEWER, "test");
        let live_web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "web:2.5.0",
                "env": [{"name": "LOG_LEVEL", "value": "info"}]}]}}}});
        let live: LiveObjects = [(("Deployment".into(), "shop".into(), "web".into()), live_web)].into();
        let mut image = field(
            "spec.template.spec.containers[name=web].image",
            Change::Changed,
            Some(json!("web:1.27")),
            Some(json!("web:2.5.0")),
        );
        image.reason = Some(CHANGED_AT_ADMISSION.into());
        let mut objects = vec![object("Deployment", "web", ObjectState::Ignored, vec![image])];
        attribute_newer(&mut objects, &newer, 2, "shop", &live, &ctx());
        let f = &objects[0].fields[0];
        assert_eq!((f.from_revision, f.reason.as_deref()), (Some(2), None));
        assert_eq!(objects[0].state, ObjectState::Changed);
        assert!(!objects[0].is_hand_drift());
    }

    #[test]
    fn a_value_the_newer_revision_does_not_set_stays_hand_drift() {
        let (newer, _) = parse_stream(NEWER, "test");
        let live_web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"replicas": 2, "paused": true, "template": {"spec": {"containers": [{"name": "web", "image": "web:2.5.0",
                "env": [{"name": "LOG_LEVEL", "value": "info"}]}]}}}});
        let live: LiveObjects = [(("Deployment".into(), "shop".into(), "web".into()), live_web)].into();
        // `paused` is set by the deployed revision to false and live true; revision 2 does not set it.
        let mut objects = vec![object(
            "Deployment",
            "web",
            ObjectState::Changed,
            vec![field("spec.paused", Change::Changed, Some(json!(false)), Some(json!(true)))],
        )];
        attribute_newer(&mut objects, &newer, 2, "shop", &live, &ctx());
        assert_eq!(objects[0].fields[0].from_revision, None);
    }

    #[test]
    fn paths_overlap_only_on_boundaries() {
        let overlaps = |a: &str, b: &str| overlaps(&a.parse().unwrap(), &b.parse().unwrap());
        assert!(overlaps("spec.a", "spec.a"));
        assert!(overlaps("spec.a.b", "spec.a"));
        assert!(overlaps("spec.a", "spec.a[name=x]"));
        assert!(!overlaps("spec.ab", "spec.a"));
        assert!(!overlaps(r#"data["a.b"]"#, "data.a"));
    }
}
