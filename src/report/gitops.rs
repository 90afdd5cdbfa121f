//! The GitOps object behind a target: the Flux HelmRelease behind a Helm release, the Flux
//! Kustomization or the Argo CD Application whose inventory a target is. Reports carry it so that
//! every format can say who will act on the drift next (docs/gitops.md).

use serde::{Deserialize, Serialize};

/// The controller that owns the desired state of a target, and what it says of it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitOps {
    /// `flux` or `argocd`.
    pub controller: String,
    /// `HelmRelease`, `Kustomization` or `Application`.
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Flux: `spec.driftDetection.mode` of a HelmRelease (`enabled`, `warn`, `disabled`; unset
    /// is `disabled`); none for the other kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_detection: Option<String>,
    /// What the controller does about drift by hand, in one sentence.
    pub next: String,
    /// The revision the controller last applied (Flux `status.lastAppliedRevision`, Argo CD
    /// `status.sync.revision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Where the desired state comes from (`GitRepository flux-system/apps`, a repository URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The controller's own view: Flux's `Ready` and drift conditions, Argo CD's sync and health
    /// status, as they are.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Argo CD: how it tracks the Application's objects (`annotation`, `label`,
    /// `annotation+label`), which says which live objects are extra.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracking: Option<String>,
    /// Where that comes from (`argocd-cm in argocd`, `--tracking-method`, Argo CD's default and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracking_from: Option<String>,
    /// Set when the object could not be read in full (its kind is served but the read failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The controller's own drift verdict beside ours: a HelmRelease's `Drifted` condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// The controller's own drift verdict and ours, side by side: Flux helm-controller's `Drifted`
/// condition (helm-controller 1.6; written at each reconcile while `driftDetection.mode` is
/// `enabled` or `warn`): `True` with reason `DriftDetected` and a message naming each drifted
/// object, or `False` with `NoDriftDetected`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The controller says the target drifted (`Drifted=True`).
    pub drifted: bool,
    /// The condition's reason as written (`DriftDetected`, `NoDriftDetected`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition last changed (`lastTransitionTime`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Our check finds drift (anything not ignored).
    pub we_find_drift: bool,
    /// The two say the same.
    pub agrees: bool,
    /// When they do not: what each says, and the likely reason, in plain words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
}

/// One condition or status of the GitOps object, as the controller wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Drifted`, `Sync`, `Health`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// `True`, `False`, `Unknown`, or Argo CD's `Synced`, `OutOfSync`, `Healthy`, ...
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it last changed (`lastTransitionTime`), when the controller writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

impl GitOps {
    /// `HelmRelease flux-system/shop`.
    pub fn title(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    /// The conditions in one line: `Ready=True (ReconciliationSucceeded), Drifted=False`.
    pub fn conditions_line(&self) -> String {
        self.conditions
            .iter()
            .map(|c| match &c.reason {
                Some(r) if !r.is_empty() => format!("{}={} ({r})", c.kind, c.status),
                _ => format!("{}={}", c.kind, c.status),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
