//! What the watcher remembers between rounds and restarts: per cluster (its kube context) and per
//! watched target of it (a release or a manifests path), the last drift it alerted, the last error, and the release's revision (never
//! anything derived from its values: see [`super::note_values_changes`]). Stored as JSON in a
//! file (written atomically: temp file + rename) or in one
//! ConfigMap (the only write kubectl-drift ever makes, opt-in with `--state configmap:NS/NAME`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use serde::{Deserialize, Serialize};

use super::error::StateError;

/// Memory for one watched target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetState {
    /// Signature of the drift last alerted (None: no drift alerted, or resolved).
    #[serde(default)]
    pub drift: Option<String>,
    /// Signature of the error last alerted (None: no error outstanding).
    #[serde(default)]
    pub error: Option<String>,
    /// Release revision seen in the last round. (State written by earlier versions also holds
    /// `values`, a 64-bit digest of the values: it is ignored when read and not written again.)
    #[serde(default)]
    pub revision: Option<u32>,
    /// `STATUS@REVISION` of a release whose last Helm operation had not completed (failed or
    /// pending) when last seen, as alerted; None when it was deployed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// The version of the state this build writes: 2, targets kept per cluster. Version 1 (one
/// cluster, unnamed) is still read: see [`WatchState::adopt_unnamed`].
pub const STATE_VERSION: u32 = 2;

/// The whole memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatchState {
    #[serde(default)]
    pub version: u32,
    /// Cluster name -> target key (`release/NS/NAME`, `manifests/PATH`, `cluster`) -> memory.
    #[serde(default)]
    pub clusters: BTreeMap<String, BTreeMap<String, TargetState>>,
    /// The targets of state written by version 1, which watched one cluster and did not name it;
    /// read, handed to a cluster by [`WatchState::adopt_unnamed`], never written again.
    #[serde(default, skip_serializing)]
    pub(crate) targets: BTreeMap<String, TargetState>,
}

impl WatchState {
    pub fn get(&self, cluster: &str, key: &str) -> Option<&TargetState> {
        self.clusters.get(cluster)?.get(key)
    }

    pub fn insert(&mut self, cluster: &str, key: String, state: TargetState) {
        self.clusters.entry(cluster.to_string()).or_default().insert(key, state);
    }

    pub fn remove(&mut self, cluster: &str, key: &str) -> Option<TargetState> {
        self.clusters.get_mut(cluster)?.remove(key)
    }

    /// Keep only the targets of `cluster` that `keep` accepts.
    pub fn retain(&mut self, cluster: &str, mut keep: impl FnMut(&str) -> bool) {
        if let Some(targets) = self.clusters.get_mut(cluster) {
            targets.retain(|k, _| keep(k));
        }
    }

    /// State written by version 1 named no cluster: its targets are `cluster`'s (the first one
    /// watched, which was the only one then), so what was alerted before is not alerted again.
    /// The state is version 2 from then on.
    pub fn adopt_unnamed(&mut self, cluster: &str) {
        let unnamed = std::mem::take(&mut self.targets);
        if !unnamed.is_empty() {
            let targets = self.clusters.entry(cluster.to_string()).or_default();
            for (k, v) in unnamed {
                targets.entry(k).or_insert(v);
            }
        }
        self.version = STATE_VERSION;
    }
}

/// Where state lives.
#[derive(Debug, Clone, PartialEq)]
pub enum StateLocation {
    /// Not persisted (forgotten on restart).
    Memory,
    File(PathBuf),
    ConfigMap {
        namespace: String,
        name: String,
    },
}

impl StateLocation {
    pub fn parse(spec: Option<&str>) -> Result<StateLocation, StateError> {
        match spec {
            None | Some("") => Ok(StateLocation::Memory),
            Some(s) => match s.strip_prefix("configmap:") {
                Some(rest) => {
                    let (ns, name) = rest.split_once('/').ok_or_else(|| StateError::Spec(s.to_string()))?;
                    if ns.is_empty() || name.is_empty() {
                        return Err(StateError::Spec(s.to_string()));
                    }
                    Ok(StateLocation::ConfigMap { namespace: ns.to_string(), name: name.to_string() })
                }
                None => Ok(StateLocation::File(PathBuf::from(s))),
            },
        }
    }
}

const CM_KEY: &str = "state.json";

/// Load state (missing file or ConfigMap: empty state).
pub async fn load(loc: &StateLocation, client: Option<&kube::Client>) -> Result<WatchState, StateError> {
    match loc {
        StateLocation::Memory => Ok(WatchState::default()),
        StateLocation::File(path) => match std::fs::read_to_string(path) {
            Ok(text) => parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(WatchState::default()),
            Err(source) => Err(StateError::File { action: "read", path: path.display().to_string(), source }),
        },
        StateLocation::ConfigMap { namespace, name } => {
            let client = client.expect("a client is always given with ConfigMap state");
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let cm = api.get_opt(name).await.map_err(|e| StateError::ConfigMap {
                action: "read",
                namespace: namespace.clone(),
                name: name.clone(),
                message: crate::source::live::error_text(&e),
            })?;
            match cm.and_then(|c| c.data).and_then(|d| d.get(CM_KEY).cloned()) {
                Some(text) => parse(&text, &format!("ConfigMap {namespace}/{name}")),
                None => Ok(WatchState::default()),
            }
        }
    }
}

fn parse(text: &str, location: &str) -> Result<WatchState, StateError> {
    serde_json::from_str(text)
        .map_err(|e| StateError::Corrupt { location: location.to_string(), message: e.to_string() })
}

/// Save state.
pub async fn save(loc: &StateLocation, client: Option<&kube::Client>, state: &WatchState) -> Result<(), StateError> {
    let text = serde_json::to_string_pretty(state).expect("state always serialises");
    match loc {
        StateLocation::Memory => Ok(()),
        StateLocation::File(path) => write_atomically(path, &text),
        StateLocation::ConfigMap { namespace, name } => {
            let client = client.expect("a client is always given with ConfigMap state");
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
            let err = |action: &'static str, e: kube::Error| StateError::ConfigMap {
                action,
                namespace: namespace.clone(),
                name: name.clone(),
                message: crate::source::live::error_text(&e),
            };
            let existing = api.get_opt(name).await.map_err(|e| err("read", e))?;
            let mut cm = existing.unwrap_or_else(|| ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some([("app.kubernetes.io/managed-by".to_string(), "kubectl-drift".to_string())].into()),
                    ..Default::default()
                },
                ..Default::default()
            });
            cm.data.get_or_insert_with(Default::default).insert(CM_KEY.to_string(), text);
            let pp = PostParams { field_manager: Some("kubectl-drift".into()), ..Default::default() };
            if cm.metadata.resource_version.is_some() {
                api.replace(name, &pp, &cm).await.map_err(|e| err("update", e))?;
            } else {
                api.create(&pp, &cm).await.map_err(|e| err("create", e))?;
            }
            Ok(())
        }
    }
}

fn write_atomically(path: &Path, text: &str) -> Result<(), StateError> {
    let shown = path.display().to_string();
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| StateError::File {
        action: "create the folder of",
        path: shown.clone(),
        source,
    })?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("state"),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|source| StateError::File {
        action: "write",
        path: tmp.display().to_string(),
        source,
    })?;
    std::fs::rename(&tmp, path).map_err(|source| StateError::File { action: "replace", path: shown, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_locations() {
        assert_eq!(StateLocation::parse(None).unwrap(), StateLocation::Memory);
        assert_eq!(StateLocation::parse(Some("/tmp/s.json")).unwrap(), StateLocation::File("/tmp/s.json".into()));
        assert_eq!(
            StateLocation::parse(Some("configmap:drift/state")).unwrap(),
            StateLocation::ConfigMap { namespace: "drift".into(), name: "state".into() }
        );
        assert!(StateLocation::parse(Some("configmap:nope")).is_err());
        assert!(StateLocation::parse(Some("configmap:/x")).is_err());
    }

    #[tokio::test]
    async fn file_round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("drift-state-{}", std::process::id()));
        let path = dir.join("sub/state.json");
        let loc = StateLocation::File(path.clone());
        assert_eq!(load(&loc, None).await.unwrap(), WatchState::default());
        let mut st = WatchState::default();
        st.insert(
            "prod",
            "release/shop/shop".into(),
            TargetState { drift: Some("abc".into()), revision: Some(3), ..Default::default() },
        );
        save(&loc, None, &st).await.unwrap();
        assert_eq!(load(&loc, None).await.unwrap(), st);
        std::fs::write(&path, "{not json").unwrap();
        let err = load(&loc, None).await.unwrap_err().to_string();
        assert!(err.contains("state.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn version_1_state_is_the_first_clusters() {
        let v1 = r#"{"version":1,"targets":{"release/shop/shop":{"drift":"abc","error":null,"revision":3}}}"#;
        let mut st = parse(v1, "test").unwrap();
        assert_eq!(st.get("prod", "release/shop/shop"), None);
        st.adopt_unnamed("prod");
        assert_eq!(st.get("prod", "release/shop/shop").and_then(|t| t.drift.as_deref()), Some("abc"));
        assert_eq!(st.get("staging", "release/shop/shop"), None);
        let saved = serde_json::to_value(&st).unwrap();
        assert_eq!(saved["version"], 2);
        assert!(saved.get("targets").is_none(), "{saved}");
        assert_eq!(saved["clusters"]["prod"]["release/shop/shop"]["revision"], 3);
        // Version 2 reads back as it was written.
        assert_eq!(parse(&saved.to_string(), "test").unwrap(), st);
    }
}
