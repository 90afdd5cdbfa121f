//! What the dashboard scans ([`Scope`]): named by the API, the config's `serve.scopes`, the data
//! directory's files and serve's `/mcp` resources. A leaf, so that the MCP adapter reads the
//! dashboard's scopes without importing the server.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What the dashboard scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Releases,
    Versions,
    Orphans,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Releases, Scope::Versions, Scope::Orphans];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Releases => "releases",
            Scope::Versions => "versions",
            Scope::Orphans => "orphans",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The file of the data directory that keeps the scope's last result.
    pub(super) fn file(self) -> String {
        format!("{}.json", self.name())
    }
}
