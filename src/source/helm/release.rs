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

/// The chart a revision was rendered from: its metadata, and the files of its `crds/` folder
/// (Helm keeps every file of the chart in `files`; only those under `crds/` are read, and the
/// others are dropped as they are decoded). A subchart's files are not in storage (Helm does not
/// store dependencies), so its CRDs are not either.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Chart {
    #[serde(default)]
    pub metadata: ChartMetadata,
    #[serde(default, deserialize_with = "crd_files", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ChartFile>,
}

/// One file of the chart as Helm stores it: its path in the chart and its bytes (base64 in JSON).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ChartFile {
    #[serde(default)]
    pub name: String,
    /// base64, as Helm writes a Go `[]byte`.
    #[serde(default)]
    pub data: String,
}

/// Whether a chart file is one Helm installs from `crds/` (as `chart.CRDObjects` picks them: under
/// `crds/`, a `.yaml`, `.yml` or `.json` file).
pub fn is_crd_file(name: &str) -> bool {
    name.starts_with("crds/") && [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e))
}

/// `chart.files`, keeping only the `crds/` files: each file is decoded and dropped at once unless
/// it is one.
fn crd_files<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ChartFile>, D::Error> {
    struct Files;
    impl<'de> serde::de::Visitor<'de> for Files {
        type Value = Vec<ChartFile>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of chart files")
        }
        fn visit_unit<E>(self) -> Result<Vec<ChartFile>, E> {
            Ok(Vec::new())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ChartFile>, A::Error> {
            let mut kept = Vec::new();
            while let Some(file) = seq.next_element::<ChartFile>()? {
                if is_crd_file(&file.name) {
                    kept.push(file);
                }
            }
            Ok(kept)
        }
    }
    d.deserialize_any(Files)
}

impl ChartFile {
    /// The file's text (`None`: not base64, or not UTF-8).
    pub fn text(&self) -> Option<String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(self.data.trim()).ok()?;
        String::from_utf8(bytes).ok()
    }
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
    /// The chart's `home` link (used to find its upstream repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    /// The chart's `sources` links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
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
    /// The chart's `crds/` files (path, text), in the order Helm stored them.
    pub fn crd_files(&self) -> Vec<(&str, Option<String>)> {
        self.chart.iter().flat_map(|c| c.files.iter()).map(|f| (f.name.as_str(), f.text())).collect()
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
