//! The `versions:` section of the shared config file (`--config FILE`; read by the app,
//! `app::config`, which names each rule by its place in the file):
//!
//! ```yaml
//! versions:
//!   track: major                 # default for every row: patch | minor | major
//!   upstreams:                   # base URLs, for mirrors and air-gapped clusters
//!     kubernetes: https://dl.k8s.io/release
//!     github: https://api.github.com
//!     artifacthub: https://artifacthub.io
//!   cache_ttl: 6h                # on-disk cache of upstream answers (0s: no cache)
//!   image_pull_secrets: false    # opt-in: read workloads' imagePullSecrets for registry logins
//!   registries:                  # the registry client's settings
//!     - host: registry.example:5000
//!       plain_http: true
//!       username_env: REG_USER      # names of environment variables, never the secrets
//!       password_env: REG_PASSWORD
//!       concurrency: 4
//!   images:                      # per image: a glob over the repository (host/path), or repo:tag
//!     - image: "ghcr.io/acme/*"
//!       track: minor
//!       source: mirror.example/acme/app   # look tags up here instead
//!     - image: "docker.io/library/nginx"
//!       ignore: true
//!       note: pinned for the legacy ingress
//!   charts:                      # per release: where its chart comes from
//!     - release: shop            # glob
//!       namespace: "*"           # optional glob
//!       repo: https://charts.example/stable   # a classic repository (index.yaml) or oci://host/path
//!       chart: shop              # optional: the chart's name there
//!       track: patch
//!   ignore:                      # the shared selector: kind, namespace, name, name_regex, source, note
//!     - kind: Deployment
//!       namespace: legacy
//!       note: frozen until the migration
//!   groups:                      # fold generated copies into one row
//!     - name: runners            # the row's name
//!       name_regex: "^runner-[a-z0-9]+$"
//!   probes:                      # opt-in: ask running apps for their version (see `probes`)
//!     - image: "registry.example/acme/shop"
//!       url: "http://{name}.{namespace}.svc:8080/version"
//!       json_pointer: /version
//! ```
//! Unknown keys are errors that name the key.

use regex::Regex;
use serde::Deserialize;

use crate::engine::select::ObjectRule;
use crate::engine::select::{RuleError, glob, image_glob};
use crate::engine::versions::probes::ProbeRule;
use crate::engine::versions::tags::Track;
use crate::source::registry::RegistryConfig;

/// Upstream base URLs.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Upstreams {
    #[serde(default = "default_kubernetes")]
    pub kubernetes: String,
    #[serde(default = "default_github")]
    pub github: String,
    #[serde(default = "default_artifacthub")]
    pub artifacthub: String,
}

fn default_kubernetes() -> String {
    "https://dl.k8s.io/release".into()
}
fn default_github() -> String {
    "https://api.github.com".into()
}
fn default_artifacthub() -> String {
    "https://artifacthub.io".into()
}

impl Default for Upstreams {
    fn default() -> Upstreams {
        Upstreams { kubernetes: default_kubernetes(), github: default_github(), artifacthub: default_artifacthub() }
    }
}

/// Per-image settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageRule {
    /// A glob over the normalised repository (`docker.io/library/nginx`), or `repo:tag`.
    pub image: String,
    #[serde(default)]
    pub track: Option<Track>,
    /// Look the tags up in this repository instead (a mirror).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub ignore: bool,
    #[serde(default)]
    pub note: Option<String>,
}

/// Where one release's chart comes from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartRule {
    pub release: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub repo: String,
    #[serde(default)]
    pub chart: Option<String>,
    #[serde(default)]
    pub track: Option<Track>,
}

/// Fold rows whose object names match into one row.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupRule {
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub name_regex: String,
    #[serde(skip)]
    pub compiled: Option<Regex>,
    /// Where the group was written (`drift.yaml versions group 1`), for its errors.
    #[serde(skip)]
    pub(crate) origin: String,
}

/// The `versions:` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionsConfig {
    #[serde(default)]
    pub track: Option<Track>,
    #[serde(default)]
    pub upstreams: Upstreams,
    #[serde(default)]
    pub cache_ttl: Option<String>,
    #[serde(default)]
    pub image_pull_secrets: bool,
    /// Registry settings (the registry client's: `host`, `plain_http`, `username_env`,
    /// `password_env`, `concurrency`).
    #[serde(default)]
    pub registries: Vec<RegistryConfig>,
    #[serde(default)]
    pub images: Vec<ImageRule>,
    #[serde(default)]
    pub charts: Vec<ChartRule>,
    #[serde(default)]
    pub ignore: Vec<ObjectRule>,
    #[serde(default)]
    pub groups: Vec<GroupRule>,
    /// Opt-in HTTP app probes.
    #[serde(default)]
    pub probes: Vec<ProbeRule>,
}

impl VersionsConfig {
    /// Check the section as the app read it (its rules named by their place in the file; the
    /// defaults when the file has none, or there is no file), then add the `--ignore` rules.
    pub(crate) fn prepare(mut self, ignore: &[String]) -> Result<VersionsConfig, RuleError> {
        for r in &mut self.ignore {
            r.compile()?;
        }
        for g in &mut self.groups {
            g.compiled = Some(
                Regex::new(&g.name_regex)
                    .map_err(|e| RuleError::Invalid { rule: g.origin.clone(), message: format!("name_regex: {e}") })?,
            );
        }
        for p in &mut self.probes {
            let origin = p.origin.clone();
            p.compile(&origin)?;
        }
        for s in ignore {
            self.ignore.push(ObjectRule::parse_cli("--ignore", s)?);
        }
        Ok(self)
    }

    /// The image rule for a repository (`host/path`) and tag: the first whose glob matches
    /// `repo` or `repo:tag`.
    pub fn image_rule(&self, repository: &str, tag: Option<&str>) -> Option<&ImageRule> {
        self.images.iter().find(|r| image_glob(&r.image, repository, tag))
    }

    /// The chart rule for a release.
    pub fn chart_rule(&self, release: &str, namespace: &str) -> Option<&ChartRule> {
        self.charts
            .iter()
            .find(|r| glob(&r.release, release) && r.namespace.as_deref().is_none_or(|n| glob(n, namespace)))
    }

    /// The probe for a workload's image: the first rule that selects it.
    pub fn probe_for(&self, repository: &str, tag: Option<&str>, namespace: &str, name: &str) -> Option<&ProbeRule> {
        self.probes.iter().find(|p| p.selects(repository, tag, namespace, name))
    }

    /// The first ignore rule that selects an object.
    pub fn ignored_by(&self, kind: &str, namespace: &str, name: &str, sources: &[String]) -> Option<&ObjectRule> {
        self.ignore.iter().find(|r| r.matches(kind, namespace, name, sources))
    }

    /// The group an object name folds into.
    pub fn group_of(&self, namespace: &str, name: &str) -> Option<&GroupRule> {
        self.groups.iter().find(|g| {
            g.namespace.as_deref().is_none_or(|n| glob(n, namespace))
                && g.compiled.as_ref().is_some_and(|re| re.is_match(name))
        })
    }

    /// The TTL of the on-disk cache (default 6 hours).
    pub fn cache_ttl(&self) -> Result<std::time::Duration, String> {
        match &self.cache_ttl {
            None => Ok(std::time::Duration::from_secs(6 * 3600)),
            Some(s) => crate::report::duration::parse_duration(s)
                .map(std::time::Duration::from_secs)
                .map_err(|e| format!("versions.cache_ttl: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The section as the app hands it over (the file's reading and its errors are tested with
    /// the reader, `app::config`).
    fn section(text: &str) -> VersionsConfig {
        let section: VersionsConfig = serde_saphyr::from_str(text).unwrap();
        section.prepare(&[]).unwrap()
    }

    #[test]
    fn sections_and_lookups() {
        let c = section(
            "track: minor\nupstreams:\n  github: http://127.0.0.1:9/gh\nimages:\n- image: 'r:5000/org/*'\n  track: patch\ncharts:\n- release: 'shop*'\n  repo: oci://r:5000/charts\nignore:\n- kind: Deployment\n  name: legacy\n  note: frozen\ngroups:\n- name: runners\n  name_regex: '^runner-'\n",
        );
        assert_eq!(c.track, Some(Track::Minor));
        assert_eq!(c.upstreams.github, "http://127.0.0.1:9/gh");
        assert_eq!(c.upstreams.kubernetes, "https://dl.k8s.io/release");
        assert_eq!(c.image_rule("r:5000/org/app", Some("1")).unwrap().track, Some(Track::Patch));
        assert!(c.image_rule("r:5000/other/app", None).is_none());
        assert_eq!(c.chart_rule("shop-eu", "x").unwrap().repo, "oci://r:5000/charts");
        assert!(c.ignored_by("Deployment", "ns", "legacy", &[]).unwrap().describe().contains("frozen"));
        assert_eq!(c.group_of("ns", "runner-abc12").unwrap().name, "runners");
        assert!(c.group_of("ns", "web").is_none());
    }
}
