//! The chart a release revision was rendered from, as Helm stores it with the revision
//! (`chart.metadata`, `chart.values`, `chart.templates`, `chart.files`, `chart.schema`), written
//! back to a folder so that `helm template` can render it again (`adopt`, docs/adopt.md).
//!
//! Helm does not store a chart's dependencies (its `Chart` keeps them in an unexported field,
//! which JSON leaves out), so a subchart's templates are not here: the folder is written without
//! them and `Chart.yaml` without its `dependencies`, and what only a subchart renders is not
//! rendered again.

use std::path::{Component, Path};

use serde::Deserialize;
use serde_json::Value;

use super::driver::ReleaseBody;
use super::{Release, StorageError};

/// One stored chart: metadata (`Chart.yaml`), default values, templates and other files.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StoredChart {
    #[serde(default)]
    pub metadata: Value,
    #[serde(default)]
    pub values: Option<serde_json::Map<String, Value>>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub templates: Vec<super::release::ChartFile>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub files: Vec<super::release::ChartFile>,
    /// `values.schema.json`, base64 (a Go `[]byte`).
    #[serde(default)]
    pub schema: Option<String>,
}

/// Helm writes `null` for a chart without files.
fn null_as_empty<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
struct WithChart {
    #[serde(default)]
    chart: Option<StoredChart>,
}

/// Why a stored chart could not be written to a folder.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    /// The release record holds no chart (or no templates).
    #[error("release {release}: its stored record holds no chart templates")]
    NoChart { release: String },
    /// A file name that would land outside the folder, or that is not base64.
    #[error("release {release}: chart file {file:?} {problem}")]
    BadFile { release: String, file: String, problem: &'static str },
    /// Writing the folder failed.
    #[error("writing the chart of release {release} to {dir}: {source}")]
    Io {
        release: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

impl ReleaseBody {
    /// The release record and the chart stored with it (`None` for a record kept decoded, as
    /// the memory driver keeps them, which has dropped the templates).
    pub fn decode_with_chart(self) -> Result<(Release, Option<StoredChart>), StorageError> {
        match self.into_encoded() {
            Ok((object, data)) => {
                let json = super::decode::decode_payload(&object, &data)?;
                let release: Release = serde_json::from_slice(&json).map_err(|source| {
                    StorageError::from(super::decode::DecodeError::Json { object: object.clone(), source })
                })?;
                let chart = serde_json::from_slice::<WithChart>(&json).ok().and_then(|w| w.chart);
                Ok((release, chart))
            }
            Err(body) => Ok((body.decode()?, None)),
        }
    }
}

impl StoredChart {
    /// The chart's default values (`values.yaml`) as a JSON object.
    pub fn default_values(&self) -> Value {
        Value::Object(self.values.clone().unwrap_or_default())
    }

    /// Write the chart into `dir` (which exists and is empty): `Chart.yaml` without
    /// `dependencies`, `values.yaml`, the templates and files, and `values.schema.json` when
    /// `with_schema` (a schema checks values, which sentinel values would not pass).
    pub fn write_to(&self, dir: &Path, release: &str, with_schema: bool) -> Result<(), ChartError> {
        if self.templates.is_empty() {
            return Err(ChartError::NoChart { release: release.to_string() });
        }
        let io = |source| ChartError::Io { release: release.to_string(), dir: dir.display().to_string(), source };
        let mut metadata = self.metadata.clone();
        if let Some(m) = metadata.as_object_mut() {
            m.remove("dependencies");
        }
        // JSON is YAML: no quoting rule of ours stands between the stored values and Helm.
        std::fs::write(dir.join("Chart.yaml"), metadata.to_string()).map_err(io)?;
        std::fs::write(dir.join("values.yaml"), self.default_values().to_string()).map_err(io)?;
        let schema = self.schema.as_deref().filter(|s| with_schema && !s.is_empty());
        if let Some(s) = schema {
            let bytes = decode(s).ok_or_else(|| ChartError::BadFile {
                release: release.to_string(),
                file: "values.schema.json".into(),
                problem: "is not base64",
            })?;
            std::fs::write(dir.join("values.schema.json"), bytes).map_err(io)?;
        }
        for f in self.templates.iter().chain(&self.files) {
            let bad = |problem| ChartError::BadFile { release: release.to_string(), file: f.name.clone(), problem };
            let rel = Path::new(&f.name);
            if f.name.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
                return Err(bad("is not a path inside the chart"));
            }
            if f.name.starts_with("charts/") {
                continue;
            }
            let bytes = decode(&f.data).ok_or_else(|| bad("is not base64"))?;
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(path, bytes).map_err(io)?;
        }
        Ok(())
    }
}

fn decode(data: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn decodes_the_chart_and_writes_it_back() {
        let json = serde_json::json!({
            "name": "shop", "namespace": "shop", "version": 1, "info": {"status": "deployed"},
            "chart": {"metadata": {"apiVersion": "v2", "name": "shop", "version": "1.0.0",
                                   "dependencies": [{"name": "redis", "version": "1"}]},
                      "values": {"replicas": 1},
                      "templates": [{"name": "templates/cm.yaml", "data": b64("kind: ConfigMap\n")}],
                      "files": [{"name": "files/a.txt", "data": b64("a")}, {"name": "charts/x/Chart.yaml", "data": b64("x")}],
                      "schema": b64("{}")},
            "config": {"replicas": 3}, "manifest": ""
        });
        let encoded = super::super::decode::encode_release(json.to_string().as_bytes());
        let body = ReleaseBody::encoded("Secret shop/x".into(), encoded.into_bytes());
        let (release, chart) = body.decode_with_chart().unwrap();
        assert_eq!(release.values(), serde_json::json!({"replicas": 3}));
        let chart = chart.unwrap();
        let dir = std::env::temp_dir().join(format!("drift-chart-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        chart.write_to(&dir, "shop/shop", false).unwrap();
        let meta: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("Chart.yaml")).unwrap()).unwrap();
        assert_eq!(meta["name"], "shop");
        assert!(meta.get("dependencies").is_none());
        assert_eq!(std::fs::read_to_string(dir.join("templates/cm.yaml")).unwrap(), "kind: ConfigMap\n");
        assert_eq!(std::fs::read_to_string(dir.join("files/a.txt")).unwrap(), "a");
        assert!(!dir.join("charts").exists() && !dir.join("values.schema.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_outside_the_chart_is_refused() {
        let chart = StoredChart {
            templates: vec![super::super::release::ChartFile { name: "../x".into(), data: b64("x") }],
            ..Default::default()
        };
        let dir = std::env::temp_dir().join(format!("drift-chart-test2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = chart.write_to(&dir, "a/b", false).unwrap_err();
        assert!(e.to_string().contains("not a path inside the chart"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
