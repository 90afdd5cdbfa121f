//! Typed Helm release records, as Helm 3 and Helm 4 store them (JSON inside release storage).
//!
//! Only the fields kubectl-drift reads are typed; everything else is ignored, so records written
//! by newer Helm versions still parse. Times are kept as the strings Helm wrote: Helm 3 writes
//! `0001-01-01T00:00:00Z` for "never", Helm 4 may omit the field or write an empty string.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One revision of a Helm release, decoded from storage.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Release {
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    /// The revision number (`version` in Helm's JSON).
    #[serde(rename = "version")]
    pub revision: u32,
    #[serde(default)]
    pub info: ReleaseInfo,
    #[serde(default)]
    pub chart: Option<Chart>,
    /// User-supplied values (`helm get values`), not the chart defaults.
    #[serde(default)]
    pub config: Option<serde_json::Map<String, Value>>,
    /// The rendered manifest stream, hooks excluded.
    #[serde(default)]
    pub manifest: String,
    #[serde(default)]
    pub hooks: Vec<Hook>,
    /// Helm 4: `csa` or `ssa`; absent for releases written by Helm 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_method: Option<String>,
}

/// `info` of a release revision.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ReleaseInfo {
    #[serde(default, deserialize_with = "lenient_string")]
    pub first_deployed: String,
    #[serde(default, deserialize_with = "lenient_string")]
    pub last_deployed: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub notes: String,
}

/// The chart a revision was rendered from (only its metadata is read).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Chart {
    #[serde(default)]
    pub metadata: ChartMetadata,
}

/// `chart.metadata` (Chart.yaml).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ChartMetadata {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, rename = "appVersion")]
    pub app_version: String,
}

/// A hook of the release; kept so callers can tell hooks from the manifest.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Hook {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub events: Vec<String>,
}

impl Release {
    pub fn chart_name(&self) -> &str {
        self.chart.as_ref().map(|c| c.metadata.name.as_str()).unwrap_or("")
    }
    pub fn chart_version(&self) -> &str {
        self.chart.as_ref().map(|c| c.metadata.version.as_str()).unwrap_or("")
    }
    pub fn app_version(&self) -> &str {
        self.chart.as_ref().map(|c| c.metadata.app_version.as_str()).unwrap_or("")
    }
    /// User-supplied values as a JSON object (empty when none were given).
    pub fn values(&self) -> Value {
        Value::Object(self.config.clone().unwrap_or_default())
    }
}

/// Accept a string, null or a missing field as a string (Helm 4 may write null or omit times).
fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}
