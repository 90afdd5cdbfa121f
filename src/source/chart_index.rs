//! One chart version's metadata and a classic chart repository's index of them: what
//! `chart_repo` reads and returns, and what the registry client (`registry::Registries`) keeps
//! per run, one index per repository URL. Both import it from here.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One version of a chart and what the engine needs to know about it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartVersion {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub app_version: Option<String>,
    #[serde(default)]
    pub deprecated: bool,
    #[serde(default)]
    pub home: Option<String>,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// When the version was packaged (the index's `created`, or the OCI manifest's
    /// `org.opencontainers.image.created`), as written (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// The chart's annotations (`artifacthub.io/changes`, ...).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// A classic repository's index: chart name to its versions.
pub(crate) type Index = Arc<HashMap<String, Vec<ChartVersion>>>;
