//! The report of `compare`: one Helm release (or folder of manifests) deployed twice, in two
//! clusters or two namespaces, side by side: each side's chart and app version, the user-supplied
//! values key by key, and each object field by field, with where each difference comes from (the
//! values, or a hand edit on one side). JSON and YAML serialise it as is (`docs/compare.md`),
//! versioned by `schemaVersion`. Secret values are redacted when it is built, as in every report.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Status;
use super::path::FieldPath;

/// The version of the compare report's JSON shape.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// The answer of a compare: the same, different, or a side could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompareStatus {
    /// Nothing differs but ignored differences.
    Same,
    /// Something differs (a value, an object, a field, the chart; or the release is on one side only).
    Different,
    /// A side could not be read: nothing is said of the differences.
    Error,
}

impl CompareStatus {
    /// As JSON names it.
    pub fn name(self) -> &'static str {
        match self {
            CompareStatus::Same => "same",
            CompareStatus::Different => "different",
            CompareStatus::Error => "error",
        }
    }
}

/// Two deployments compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompareReport {
    pub schema_version: u32,
    /// The release compared (`left,right` when the two sides name it differently), or the folder.
    pub target: String,
    pub status: CompareStatus,
    pub left: CompareSide,
    pub right: CompareSide,
    /// Chart name, chart version and app version, where they differ.
    pub chart: Vec<ValueDifference>,
    /// The user-supplied values (`helm get values`) that differ, key by key.
    pub values: Vec<ValueDifference>,
    /// The objects that differ: on one side only, or field by field.
    pub objects: Vec<ObjectDifference>,
    /// How many differences ignore rules (or the names of the two sides) hide.
    pub ignored: usize,
}

/// One side of a compare: where it was read and what is deployed there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompareSide {
    /// The cluster (kube context) read.
    pub cluster: String,
    pub namespace: String,
    /// The release name (empty for a folder of manifests).
    pub release: String,
    /// The release (or folder) was found on this side.
    pub found: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helm_status: Option<String>,
    /// This side's own drift (live against what it deployed), as `release` reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Status>,
    /// Why this side could not be read (or what it could not check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A value (of the chart, or of the user-supplied values) that differs; `None`: not set there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueDifference {
    pub path: FieldPath,
    pub left: Option<Value>,
    pub right: Option<Value>,
    /// Set when the difference is ignored, with why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
}

/// Where an object is on one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    /// Deployed and live.
    Live,
    /// Deployed (in the release), not live: deleted by hand.
    Missing,
    /// Not deployed on this side (not in its release or folder).
    Absent,
    /// It could not be read.
    Error,
    /// Live and labelled for the side's release, but in no manifest of it (an extra object, as
    /// `release` reports it).
    Extra,
}

/// One object (matched by kind and name) that differs between the sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDifference {
    pub api_version: String,
    pub kind: String,
    /// Its name on the left (`None`: not there).
    pub left_name: Option<String>,
    /// Its name on the right (`None`: not there).
    pub right_name: Option<String>,
    pub left: Presence,
    pub right: Presence,
    /// The fields that differ (for an object live on both sides).
    pub fields: Vec<FieldDifference>,
    /// Set when a rule ignores the whole object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
}

/// Where a difference comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The two sides rendered different values (different values or chart): a rendered difference.
    Values,
    /// The two rendered the same; the left side was edited by hand (a drift finding of the left).
    LeftEdit,
    /// The same, on the right.
    RightEdit,
    /// The same, edited by hand on both sides.
    BothEdits,
    /// The object is an extra object on a side (live, labelled for the release, rendered by no
    /// manifest there): what was written to it differs (`leftManager` / `rightManager`: who
    /// wrote the field on the side where it is extra).
    Extra,
    /// A CRD of the charts' `crds/`: the two charts ship the field the same, the live CRDs of
    /// the two clusters differ (Helm installs `crds/` once and never upgrades them).
    LiveCrd,
}

impl Cause {
    /// As JSON names it.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Values => "values",
            Cause::LeftEdit => "left-edit",
            Cause::RightEdit => "right-edit",
            Cause::BothEdits => "both-edits",
            Cause::Extra => "extra",
            Cause::LiveCrd => "live-crd",
        }
    }
}

/// One field of an object that differs: the live value on each side (`None`: not set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldDifference {
    pub path: FieldPath,
    pub left: Option<Value>,
    pub right: Option<Value>,
    pub cause: Cause,
    /// Who edited it by hand on the left (the field manager of the left's drift finding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_manager: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right_manager: Option<String>,
    /// Set when the difference is ignored, with why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
}

impl ObjectDifference {
    /// The object's name for a person: the left's, with the right's after it when it differs.
    pub fn display_name(&self) -> String {
        match (&self.left_name, &self.right_name) {
            (Some(l), Some(r)) if l != r => format!("{l} / {r}"),
            (Some(l), _) => l.clone(),
            (None, Some(r)) => r.clone(),
            (None, None) => String::new(),
        }
    }

    /// Whether the object counts as a difference: not ignored whole, and on one side only (or
    /// missing on one) or with a field that is not ignored.
    pub fn counts(&self) -> bool {
        self.ignored.is_none() && (self.left != self.right || self.fields.iter().any(|f| f.ignored.is_none()))
    }
}

impl CompareReport {
    /// The differences that count (not ignored): chart, values, objects.
    pub fn counted(&self) -> (usize, usize, usize) {
        let n = |v: &[ValueDifference]| v.iter().filter(|d| d.ignored.is_none()).count();
        (n(&self.chart), n(&self.values), self.objects.iter().filter(|o| o.counts()).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::path::Seg;
    use serde_json::json;

    /// The JSON shape of `compare -o json`, pinned (docs/compare.md documents it).
    #[test]
    fn compare_report_schema() {
        let side = |cluster: &str, revision: u32| CompareSide {
            cluster: cluster.into(),
            namespace: "shop".into(),
            release: "shop".into(),
            found: true,
            revision: Some(revision),
            chart: Some("shop".into()),
            chart_version: Some("1.2.0".into()),
            app_version: Some("2.0".into()),
            helm_status: Some("deployed".into()),
            drift: Some(Status::Drifted),
            error: None,
        };
        let path = |keys: &[&str]| FieldPath(keys.iter().map(|k| Seg::Key(k.to_string())).collect());
        let report = CompareReport {
            schema_version: COMPARE_SCHEMA_VERSION,
            target: "shop".into(),
            status: CompareStatus::Different,
            left: side("staging", 3),
            right: CompareSide { drift: Some(Status::Clean), ..side("prod", 7) },
            chart: Vec::new(),
            values: vec![
                ValueDifference {
                    path: path(&["replicaCount"]),
                    left: Some(json!(1)),
                    right: Some(json!(3)),
                    ignored: None,
                },
                ValueDifference {
                    path: path(&["ingress", "host"]),
                    left: Some(json!("staging.example.com")),
                    right: Some(json!("shop.example.com")),
                    ignored: Some("ignored by rule (drift.yaml compare ignore rule 1)".into()),
                },
            ],
            objects: vec![
                ObjectDifference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    left_name: Some("shop-web".into()),
                    right_name: Some("shop-web".into()),
                    left: Presence::Live,
                    right: Presence::Live,
                    fields: vec![
                        FieldDifference {
                            path: path(&["spec", "replicas"]),
                            left: Some(json!(1)),
                            right: Some(json!(3)),
                            cause: Cause::Values,
                            left_manager: None,
                            right_manager: None,
                            ignored: None,
                        },
                        FieldDifference {
                            path: path(&["spec", "template", "spec", "priorityClassName"]),
                            left: Some(json!("urgent")),
                            right: None,
                            cause: Cause::LeftEdit,
                            left_manager: Some("kubectl-edit".into()),
                            right_manager: None,
                            ignored: None,
                        },
                    ],
                    ignored: None,
                },
                ObjectDifference {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    left_name: None,
                    right_name: Some("shop-feature-flags".into()),
                    left: Presence::Absent,
                    right: Presence::Live,
                    fields: Vec::new(),
                    ignored: None,
                },
            ],
            ignored: 1,
        };
        assert_eq!(report.counted(), (0, 1, 2));
        insta::assert_snapshot!("compare_report_schema", serde_json::to_string_pretty(&report).unwrap());
    }
}
