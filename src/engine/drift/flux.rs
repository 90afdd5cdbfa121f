//! A release that Flux's helm-controller manages (docs/gitops.md): its storage is ordinary Helm
//! storage, so it is checked as any release, and this step of the release check finds its
//! HelmRelease, marks what the HelmRelease's `spec.driftDetection.ignore` rules leave alone as
//! ignored (Flux's own rule: JSON pointers, a pointer ignores the field and all below it), and
//! says what Flux will do next (the reconcile step then gives Flux's advice, not `helm rollback`)
//! and sets Flux's own drift verdict (the HelmRelease's `Drifted` condition) beside ours. The
//! rules are matched by `compare::rules` (Flux's rules' one place, the Kustomization's too). The
//! HelmReleases are read through the source layer, once per engine.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::compare::rules::{IgnoreRule, ObjectRules, Subject, flux_rules};
use crate::report::Change;
use crate::report::ObjectReport;
use crate::report::ObjectState;
use crate::report::gitops::{GitOps, Verdict};
use crate::source::gitops::{
    FLUX_DRIFT_DETECTION_KEY, FLUX_HELM_GROUP, FLUX_HELM_NAME_LABEL, FLUX_HELM_NAMESPACE_LABEL, HelmRelease,
};
use crate::source::live::{Kinds, LiveReader};
use crate::source::manifest::DesiredObject;

/// Live objects by (kind, namespace, name).
type Key = (String, String, String);

/// The HelmReleases of a cluster, read once per engine (one LIST across namespaces).
#[derive(Debug, Default)]
pub struct FluxIndex {
    pub releases: Vec<HelmRelease>,
    /// Why they could not be read (the kind is served but the LIST failed).
    pub error: Option<String>,
}

impl FluxIndex {
    /// Every HelmRelease the cluster serves (none when the kind is not served).
    pub async fn read(kinds: &Kinds, reader: &LiveReader) -> FluxIndex {
        match crate::source::gitops::list(kinds, reader, FLUX_HELM_GROUP, "HelmRelease", None).await {
            Ok(None) => FluxIndex::default(),
            Ok(Some((_, items))) => {
                FluxIndex { releases: items.iter().map(HelmRelease::from_value).collect(), error: None }
            }
            Err(e) => FluxIndex { releases: Vec::new(), error: Some(e.to_string()) },
        }
    }
}

/// The HelmRelease behind a release: found by the labels helm-controller put on its objects,
/// else by the release name and namespace the HelmRelease gives.
#[derive(Debug, Clone, PartialEq)]
pub struct FluxMatch {
    pub namespace: String,
    pub name: String,
    pub helm_release: Option<HelmRelease>,
    pub error: Option<String>,
}

pub fn flux_release(
    index: &FluxIndex,
    release: &str,
    namespace: &str,
    live: &HashMap<Key, Value>,
) -> Option<FluxMatch> {
    let labelled = live.values().find_map(|o| {
        let labels = o.pointer("/metadata/labels")?;
        let name = labels.get(FLUX_HELM_NAME_LABEL)?.as_str()?;
        let ns = labels.get(FLUX_HELM_NAMESPACE_LABEL)?.as_str()?;
        Some((ns.to_string(), name.to_string()))
    });
    let found = match &labelled {
        Some((ns, name)) => index.releases.iter().find(|h| &h.namespace == ns && &h.name == name),
        None => index.releases.iter().find(|h| h.release_name == release && h.release_namespace == namespace),
    };
    match (found, labelled) {
        (Some(h), _) => Some(FluxMatch {
            namespace: h.namespace.clone(),
            name: h.name.clone(),
            helm_release: Some(h.clone()),
            error: None,
        }),
        (None, Some((namespace, name))) => Some(FluxMatch {
            error: Some(match &index.error {
                Some(e) => format!("could not read HelmRelease {namespace}/{name}: {e}"),
                None => format!("HelmRelease {namespace}/{name} (named by the objects' labels) was not found"),
            }),
            namespace,
            name,
            helm_release: None,
        }),
        (None, None) => None,
    }
}

impl FluxMatch {
    /// The report's view of it: the HelmRelease, its conditions, what Flux does next, and Flux's
    /// drift verdict beside ours on the release's `objects`.
    pub fn gitops(&self, objects: &[ObjectReport]) -> GitOps {
        let hr = self.helm_release.as_ref();
        let mode = hr.map(|h| h.mode.clone().unwrap_or_else(|| "disabled".into()));
        let interval = hr.and_then(|h| h.interval.clone()).map(|i| format!(" (every {i})")).unwrap_or_default();
        let next = match (hr.map(|h| h.suspended), mode.as_deref()) {
            (None, _) => "unknown: the HelmRelease could not be read".to_string(),
            (Some(true), _) => {
                "nothing: the HelmRelease is suspended, so Flux changes nothing until it is resumed".into()
            }
            (_, Some("enabled")) => format!(
                "Flux reverts the changed and deleted fields the chart sets at its next reconcile{interval}; fields \
                 added by hand stay (Flux does not see them)"
            ),
            (_, Some("warn")) => "Flux only reports the drift (driftDetection.mode: warn): it stays until someone \
                                  fixes it or the release is upgraded"
                .into(),
            _ => "Flux does not look for drift (driftDetection.mode unset or disabled): it stays until the next \
                  upgrade of the release"
                .into(),
        };
        GitOps {
            controller: "flux".into(),
            kind: "HelmRelease".into(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            drift_detection: mode,
            next,
            revision: hr.and_then(|h| h.revision.clone()),
            source: hr.and_then(|h| h.source.clone()),
            conditions: hr.map(|h| h.conditions.clone()).unwrap_or_default(),
            tracking: None,
            tracking_from: None,
            error: self.error.clone(),
            verdict: hr.and_then(|h| verdict(h, objects)),
        }
    }
}

/// helm-controller's verdict (its `Drifted` condition, `True`/`False`; none when it wrote none or
/// `Unknown`) beside ours on the release's objects, and in plain words why they differ when they
/// do. Flux's diff is a dry-run apply of the chart's objects: it sees fields the chart sets that
/// were changed or removed, and deleted objects, never fields added by hand (helm-controller#803).
pub fn verdict(hr: &HelmRelease, objects: &[ObjectReport]) -> Option<Verdict> {
    let c = hr.conditions.iter().find(|c| c.kind == "Drifted")?;
    let drifted = match c.status.as_str() {
        "True" => true,
        "False" => false,
        _ => return None,
    };
    let hand = |o: &&ObjectReport| o.is_hand_drift();
    // What Flux's diff compares: changed and removed fields, deleted objects.
    let (mut seen, mut added, mut deleted) = (0, 0, 0);
    for o in objects.iter().filter(hand) {
        match o.state {
            ObjectState::Missing => deleted += 1,
            ObjectState::Changed => {
                for f in o.fields.iter().filter(|f| f.is_hand_drift()) {
                    if f.change == Change::Added { added += 1 } else { seen += 1 }
                }
            }
            _ => {}
        }
    }
    let we_find_drift = objects.iter().any(ObjectReport::is_drift);
    let since = c.time.as_deref().map(|t| format!(" (since {t})")).unwrap_or_default();
    let plural = |n: usize, one: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") };
    let mut found = Vec::new();
    if seen > 0 {
        found.push(format!("{} the chart sets changed or removed", plural(seen, "field")));
    }
    if deleted > 0 {
        found.push(format!("{} deleted", plural(deleted, "object")));
    }
    let disagreement = match (drifted, we_find_drift) {
        (true, true) | (false, false) => None,
        (false, true) if seen + deleted == 0 && added > 0 => Some(format!(
            "Flux says no drift{since}, we find {} added by hand: Flux's diff does not compare fields the chart              does not set",
            plural(added, "field")
        )),
        (false, true) if seen + deleted == 0 => Some(format!(
            "Flux says no drift{since}, we find drift Flux does not look at (objects the release does not render,              or changes a newer revision made)"
        )),
        (false, true) => Some(format!(
            "Flux says no drift{since}, we find {}: changed after Flux's last check (it checks at each reconcile{}),              or not seen by its dry-run apply",
            found.join(" and "),
            hr.interval.as_deref().map(|i| format!(", every {i}")).unwrap_or_default()
        )),
        (true, false) => Some(format!(
            "Flux says the release drifted{since}, we find no drift now: it was undone since (Flux's next reconcile              clears its condition), or it lies in what we ignore or read as equal (ignore rules, defaults, quantities)"
        )),
    };
    let mode_off = !matches!(hr.mode.as_deref(), Some("enabled" | "warn"));
    let disagreement = match disagreement {
        Some(d) if mode_off => Some(format!("{d}; drift detection is off now, so Flux no longer updates its verdict")),
        d => d,
    };
    Some(Verdict {
        drifted,
        reason: c.reason.clone(),
        message: c.message.clone(),
        time: c.time.clone(),
        we_find_drift,
        agrees: drifted == we_find_drift,
        disagreement,
    })
}

/// Mark what the HelmRelease's drift detection leaves alone as ignored: fields under a pointer of
/// its `driftDetection.ignore` rules (whose `target` picks the object, as helm-controller matches
/// the release manifest's object; both matched by `compare::rules`, Flux's rules' one place), and
/// whole objects labelled or annotated `helm.toolkit.fluxcd.io/driftDetection: disabled`.
pub fn apply_flux_ignore(
    hr: &HelmRelease,
    objects: &mut [ObjectReport],
    live: &HashMap<Key, Value>,
    desired: &[DesiredObject],
) {
    let who = format!("HelmRelease {}/{}", hr.namespace, hr.name);
    let rules = flux_rules(&who, "driftDetection.ignore", &hr.ignore);
    for o in objects.iter_mut().filter(|o| matches!(o.state, ObjectState::Changed | ObjectState::Missing)) {
        let ns = o.namespace.clone().unwrap_or_default();
        let body = desired
            .iter()
            .find(|d| d.kind == o.kind && d.name == o.name && d.namespace.as_deref().is_none_or(|n| n == ns))
            .map(|d| &d.body);
        let empty = Value::Null;
        let body_ref = body.unwrap_or(&empty);
        let live_obj = live.get(&(o.kind.clone(), ns.clone(), o.name.clone()));
        let disabled = [body_ref, live_obj.unwrap_or(&empty)].iter().any(|b| {
            ["labels", "annotations"].iter().any(|m| {
                b.pointer(&format!("/metadata/{m}"))
                    .and_then(|l| l.get(FLUX_DRIFT_DETECTION_KEY))
                    .and_then(Value::as_str)
                    == Some("disabled")
            })
        });
        let (group, _) = crate::report::group_version(&o.api_version);
        let subject = Subject {
            group,
            kind: &o.kind,
            namespace: &ns,
            name: &o.name,
            desired: body_ref,
            live: live_obj.unwrap_or(&empty),
        };
        let judged = ObjectRules::new(&rules, subject);
        let whole = if disabled {
            Some(format!("ignored by {who}: the object is marked {FLUX_DRIFT_DETECTION_KEY}: disabled"))
        } else {
            judged.whole_object().map(IgnoreRule::describe)
        };
        if o.state == ObjectState::Missing {
            if whole.is_some() {
                o.state = ObjectState::Ignored;
            }
            continue;
        }
        for f in o.fields.iter_mut().filter(|f| f.reason.is_none() && f.from_revision.is_none()) {
            if let Some(w) = &whole {
                f.reason = Some(w.clone());
                continue;
            }
            // The two sides' values there, as the objects have them (the report's may be redacted).
            let at = |obj: &Value| f.path.json_pointer(obj).and_then(|p| obj.pointer(&p).cloned());
            let (d, l) = (at(body_ref), live_obj.and_then(at));
            if let Some(rule) = judged.covering(&f.path, d.as_ref(), l.as_ref()) {
                f.reason = Some(rule.describe());
            }
        }
        if o.fields.iter().all(|f| f.reason.is_some() || f.from_revision.is_some())
            && o.fields.iter().any(|f| f.reason.is_some())
            && o.fields.iter().all(|f| f.from_revision.is_none())
        {
            o.state = ObjectState::Ignored;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::compare::rules::under_pointer;
    use crate::report::FieldReport;
    use crate::source::gitops::{FluxIgnore, FluxSelector};

    fn changed(path: &[&str]) -> FieldReport {
        FieldReport {
            history: None,
            path: crate::report::FieldPath(path.iter().map(|s| crate::report::path::Seg::Key(s.to_string())).collect()),
            change: Change::Changed,
            desired: Some(json!(1)),
            live: Some(json!(2)),
            manager: Some("kubectl-edit".into()),
            time: None,
            reason: None,
            from_revision: None,
            admission: None,
        }
    }

    #[test]
    fn flux_ignore_rules_cover_their_pointer_and_below_for_their_target() {
        let hr = HelmRelease {
            namespace: "flux-system".into(),
            name: "shop".into(),
            ignore: vec![
                FluxIgnore {
                    paths: vec!["/spec/replicas".into()],
                    target: Some(FluxSelector { kind: Some("Deploy.*".into()), ..FluxSelector::default() }),
                },
                FluxIgnore { paths: vec!["/data".into()], target: None },
            ],
            ..HelmRelease::default()
        };
        let live_dep = json!({"spec": {"replicas": 2, "paused": true}});
        let live_cm = json!({"data": {"a": "2"}, "spec": {"replicas": 2}});
        let mut live = HashMap::new();
        live.insert(("Deployment".into(), "shop".into(), "web".into()), live_dep);
        live.insert(("ConfigMap".into(), "shop".into(), "conf".into()), live_cm);
        let mut objects = vec![
            ObjectReport {
                fields: vec![changed(&["spec", "replicas"]), changed(&["spec", "paused"])],
                ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
            },
            ObjectReport {
                fields: vec![changed(&["data", "a"]), changed(&["spec", "replicas"])],
                ..ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "conf", ObjectState::Changed)
            },
        ];
        apply_flux_ignore(&hr, &mut objects, &live, &[]);
        let reasons: Vec<Vec<bool>> =
            objects.iter().map(|o| o.fields.iter().map(|f| f.reason.is_some()).collect()).collect();
        // replicas ignored on the Deployment only (the target), data everywhere; paused is drift.
        assert_eq!(reasons, vec![vec![true, false], vec![true, false]]);
        assert!(objects[0].fields[0].reason.as_deref().unwrap().contains("HelmRelease flux-system/shop"));
        assert_eq!(objects[0].state, ObjectState::Changed);
        assert!(under_pointer("/spec/template/spec/containers/0/env", "/spec/template"));
        assert!(!under_pointer("/spec/replicasX", "/spec/replicas"));
    }

    #[test]
    fn an_object_marked_disabled_is_ignored_whole() {
        let hr = HelmRelease { namespace: "f".into(), name: "h".into(), ..HelmRelease::default() };
        let mut live = HashMap::new();
        live.insert(
            ("ConfigMap".into(), "shop".into(), "conf".into()),
            json!({"metadata": {"annotations": {FLUX_DRIFT_DETECTION_KEY: "disabled"}}, "data": {"a": "2"}}),
        );
        let mut objects = vec![ObjectReport {
            fields: vec![changed(&["data", "a"])],
            ..ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "conf", ObjectState::Changed)
        }];
        apply_flux_ignore(&hr, &mut objects, &live, &[]);
        assert_eq!(objects[0].state, ObjectState::Ignored);
    }

    fn drifted_condition(status: &str, reason: &str) -> crate::report::gitops::Condition {
        crate::report::gitops::Condition {
            kind: "Drifted".into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some("No drift detected against the cluster state".into()),
            time: Some("2026-12-05T01:00:00Z".into()),
        }
    }

    #[test]
    fn flux_s_verdict_is_set_beside_ours_and_a_disagreement_says_why() {
        let hr = |status: &str, reason: &str, mode: &str| HelmRelease {
            mode: Some(mode.into()),
            interval: Some("10m".into()),
            conditions: vec![drifted_condition(status, reason)],
            ..HelmRelease::default()
        };
        let changed_obj = |change: Change| ObjectReport {
            fields: vec![FieldReport { change, ..changed(&["spec", "replicas"]) }],
            ..ObjectReport::new("apps/v1", "Deployment", Some("shop".into()), "web", ObjectState::Changed)
        };
        let missing = ObjectReport::new("v1", "ConfigMap", Some("shop".into()), "conf", ObjectState::Missing);
        let clean: Vec<ObjectReport> = Vec::new();

        // Both say drift; both say none.
        let v = verdict(&hr("True", "DriftDetected", "warn"), &[changed_obj(Change::Changed)]).unwrap();
        assert!(v.drifted && v.we_find_drift && v.agrees && v.disagreement.is_none(), "{v:?}");
        assert_eq!((v.reason.as_deref(), v.time.as_deref()), (Some("DriftDetected"), Some("2026-12-05T01:00:00Z")));
        let v = verdict(&hr("False", "NoDriftDetected", "enabled"), &clean).unwrap();
        assert!(!v.drifted && !v.we_find_drift && v.agrees, "{v:?}");

        // Flux says none; we find a field added by hand, which Flux's diff does not compare.
        let v = verdict(&hr("False", "NoDriftDetected", "warn"), &[changed_obj(Change::Added)]).unwrap();
        assert!(!v.agrees, "{v:?}");
        let d = v.disagreement.unwrap();
        assert!(d.contains("1 field added by hand") && d.contains("since 2026-12-05T01:00:00Z"), "{d}");
        // Flux says none; we find changed fields and a deleted object: newer than its last check.
        let v = verdict(&hr("False", "NoDriftDetected", "warn"), &[changed_obj(Change::Changed), missing]).unwrap();
        let d = v.disagreement.unwrap();
        assert!(d.contains("1 field the chart sets changed or removed and 1 object deleted"), "{d}");
        assert!(d.contains("every 10m"), "{d}");
        // Flux says drift; we find none (or only what is ignored).
        let mut ignored = changed_obj(Change::Changed);
        ignored.state = ObjectState::Ignored;
        ignored.fields[0].reason = Some("ignored by rule".into());
        let v = verdict(&hr("True", "DriftDetected", "enabled"), &[ignored]).unwrap();
        assert!(v.drifted && !v.we_find_drift && !v.agrees, "{v:?}");
        assert!(v.disagreement.unwrap().starts_with("Flux says the release drifted"));
        // A verdict left from when drift detection was on says Flux no longer updates it.
        let v = verdict(&hr("True", "DriftDetected", "disabled"), &clean).unwrap();
        assert!(v.disagreement.unwrap().contains("no longer updates"), "drift detection off");

        // No Drifted condition (drift detection never on), or Unknown: no verdict.
        assert!(verdict(&HelmRelease::default(), &clean).is_none());
        assert!(verdict(&hr("Unknown", "Progressing", "warn"), &clean).is_none());
    }
}
