//! A release that Flux's helm-controller manages (docs/gitops.md): its storage is ordinary Helm
//! storage, so it is checked as any release, and this step of the release check finds its
//! HelmRelease, marks what the HelmRelease's `spec.driftDetection.ignore` rules leave alone as
//! ignored (Flux's own rule: JSON pointers, a pointer ignores the field and all below it), and
//! says what Flux will do next (the reconcile step then gives Flux's advice, not `helm rollback`).
//! The HelmReleases are read through the source layer, once per engine.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::compare::rules::under_pointer;
use crate::report::ObjectReport;
use crate::report::ObjectState;
use crate::report::gitops::GitOps;
use crate::source::gitops::{
    FLUX_DRIFT_DETECTION_KEY, FLUX_HELM_GROUP, FLUX_HELM_NAME_LABEL, FLUX_HELM_NAMESPACE_LABEL, FluxSelector,
    HelmRelease,
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
    /// The report's view of it: the HelmRelease, its conditions, and what Flux does next.
    pub fn gitops(&self) -> GitOps {
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
        }
    }
}

/// A Flux selector (`target`) made ready to match: its regular expressions for group, version,
/// kind, namespace and name (in that order) compiled once per HelmRelease, not once per object. A
/// pattern that does not compile matches nothing.
struct Target<'a> {
    patterns: [Option<Result<regex::Regex, regex::Error>>; 5],
    label_selector: Option<&'a str>,
    annotation_selector: Option<&'a str>,
}

impl<'a> Target<'a> {
    fn new(sel: &'a FluxSelector) -> Target<'a> {
        // Regular expressions matched whole, as Flux anchors them.
        let whole = |p: &Option<String>| p.as_ref().map(|p| regex::Regex::new(&format!("^(?:{p})$")));
        Target {
            patterns: [&sel.group, &sel.version, &sel.kind, &sel.namespace, &sel.name].map(whole),
            label_selector: sel.label_selector.as_deref(),
            annotation_selector: sel.annotation_selector.as_deref(),
        }
    }

    /// Whether it picks this object (`body`: the manifest's object, for labels and annotations).
    fn selects(&self, api_version: &str, kind: &str, namespace: &str, name: &str, body: &Value) -> bool {
        let (group, version) = crate::report::group_version(api_version);
        let patterns = self
            .patterns
            .iter()
            .zip([group, version, kind, namespace, name])
            .all(|(pattern, value)| pattern.as_ref().is_none_or(|r| r.as_ref().is_ok_and(|r| r.is_match(value))));
        let empty = serde_json::Map::new();
        let by = |selector: Option<&str>, at: &str| {
            selector.is_none_or(|s| {
                let map = body.pointer(at).and_then(Value::as_object).unwrap_or(&empty);
                crate::source::live::selector_matches(s, map).unwrap_or(false)
            })
        };
        patterns && by(self.label_selector, "/metadata/labels") && by(self.annotation_selector, "/metadata/annotations")
    }
}

/// Mark what the HelmRelease's drift detection leaves alone as ignored: fields under a pointer of
/// its `driftDetection.ignore` rules (whose `target` picks the object, as helm-controller matches
/// the release manifest's object), and whole objects labelled or annotated
/// `helm.toolkit.fluxcd.io/driftDetection: disabled`.
pub fn apply_flux_ignore(
    hr: &HelmRelease,
    objects: &mut [ObjectReport],
    live: &HashMap<Key, Value>,
    desired: &[DesiredObject],
) {
    let who = format!("HelmRelease {}/{}", hr.namespace, hr.name);
    let rules: Vec<(Option<Target>, &[String])> =
        hr.ignore.iter().map(|r| (r.target.as_ref().map(Target::new), r.paths.as_slice())).collect();
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
        let pointers: Vec<&str> = rules
            .iter()
            .filter(|(t, _)| t.as_ref().is_none_or(|t| t.selects(&o.api_version, &o.kind, &ns, &o.name, body_ref)))
            .flat_map(|(_, paths)| paths.iter().map(String::as_str))
            .collect();
        let whole = if disabled {
            Some(format!("ignored by {who}: the object is marked {FLUX_DRIFT_DETECTION_KEY}: disabled"))
        } else if pointers.contains(&"") {
            Some(format!("ignored by {who} (driftDetection.ignore: the whole object)"))
        } else {
            None
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
            let pointer =
                live_obj.and_then(|l| f.path.json_pointer(l)).or_else(|| body.and_then(|b| f.path.json_pointer(b)));
            if let Some(rule) = pointer.as_deref().and_then(|p| pointers.iter().find(|r| under_pointer(p, r))) {
                f.reason = Some(format!("ignored by {who} (driftDetection.ignore {rule})"));
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
    use crate::report::{Change, FieldReport};
    use crate::source::gitops::FluxIgnore;

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
}
