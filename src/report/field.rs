//! One field that differs between the desired and the live object: where, what happened, the two
//! values and who changed it. The compare engine finds them; reports and renderers show them.

use serde_json::Value;

use super::path::FieldPath;

/// What happened to a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Set in both, with different values.
    Changed,
    /// Present live only: added by hand (or by a tool other than the deployer).
    Added,
    /// Set in the desired object, absent live.
    Removed,
}

/// The manager a field is attributed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub manager: String,
    pub time: Option<String>,
}

/// One field that differs, with who changed it and whether it is ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub path: FieldPath,
    pub change: Change,
    pub desired: Option<Value>,
    pub live: Option<Value>,
    pub owner: Option<Owner>,
    /// Why this difference is not counted as drift (an HPA owns replicas, an ignore rule...).
    pub ignored: Option<String>,
}
