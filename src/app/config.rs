//! The `--config` file, one for every subcommand, read once per run by the app and handed out by
//! section: the `ignore:` rules to `release`, `manifests` and `watch` (see
//! `engine::compare::rules`), the `orphans:` section to `orphans` (`engine::orphans::rules`), the
//! `versions:` section to `versions` (`engine::versions::config`), the `serve:` section to the
//! dashboard (`app::serve`), the `compare:` section's ignore rules to `compare` (`engine::envdiff`),
//! `admission_changes:` to every release check. Engines never see the file, only their section.
//!
//! The file is read whole and typed, so a key nobody knows, in any section, is an error naming it,
//! its line and the keys expected there. Each rule is named by its place in the file
//! (`drift.yaml rule 2`, `drift.yaml protect rule 1`): the name the user sees with what it matched
//! and in its errors. Reading checks the shape only; a section's rules are checked (regexes
//! compiled, a rule that selects nothing refused) when its subcommand takes it, so a mistake in
//! one section's rule does not stop another subcommand.

use std::path::Path;

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::engine::compare::AdmissionChanges;
use crate::engine::compare::rules::{IgnoreRule, ignore_rules};
use crate::engine::orphans::rules::{OrphanRules, Section as OrphansSection};
use crate::engine::select::RuleError;
use crate::engine::versions::VersionsConfig;

/// The file's sections. `S` is the type of the `serve:` section: `kubectl drift serve` reads
/// the file with its own section type ([`Config::read_as`]); every other subcommand checks that
/// the section is YAML and skips it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sections<S> {
    #[serde(default)]
    ignore: Vec<IgnoreRule>,
    #[serde(default)]
    orphans: Option<OrphansSection>,
    #[serde(default)]
    versions: Option<VersionsConfig>,
    #[serde(default = "Option::default")]
    serve: Option<S>,
    #[serde(default)]
    compare: Option<CompareSection>,
    /// What a value changed at admission is, for every release check (`--admission-changes`
    /// overrides it): `ignore` (the default) or `drift`.
    #[serde(default)]
    admission_changes: Option<AdmissionChanges>,
}

/// The `compare:` section: the differences two environments are expected to have (`compare`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareSection {
    /// Ignore rules, as the `ignore:` section's (kinds, plus `Values` and `Chart`).
    #[serde(default)]
    pub ignore: Vec<IgnoreRule>,
}

/// The `--config` file as read (or no file: every section absent).
#[derive(Debug, Default)]
pub struct Config<S = IgnoredAny> {
    /// The file as the user named it (`None`: no `--config`).
    file: Option<String>,
    sections: Sections<S>,
}

/// Why the config file, or a rule in it, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("failed to read config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid YAML of the expected shape (or lacks the section a
    /// subcommand needs).
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    /// A rule of the file, or an `--ignore` value, is malformed.
    #[error(transparent)]
    Rule(#[from] RuleError),
}

impl Config {
    /// Read and check the file `path` names (`None`: no config file), skipping the `serve:`
    /// section.
    pub fn read(path: Option<&Path>) -> Result<Config, ConfigError> {
        Config::read_as(path)
    }
}

impl<S: DeserializeOwned + Default> Config<S> {
    /// [`Config::read`] with the `serve:` section read as `S`.
    pub(crate) fn read_as(path: Option<&Path>) -> Result<Config<S>, ConfigError> {
        let Some(path) = path else {
            return Ok(Config { file: None, sections: Sections::default() });
        };
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        let mut sections: Sections<S> = if text.trim().is_empty() {
            Sections::default()
        } else {
            serde_saphyr::from_str(&text)
                .map_err(|e| ConfigError::Parse { path: shown.clone(), message: e.to_string() })?
        };
        sections.name_rules(&shown);
        Ok(Config { file: Some(shown), sections })
    }
}

impl<S> Sections<S> {
    /// Name every rule by its place in the file `shown`.
    fn name_rules(&mut self, shown: &str) {
        for (i, r) in self.ignore.iter_mut().enumerate() {
            r.source = format!("{shown} rule {}", i + 1);
        }
        if let Some(o) = &mut self.orphans {
            for (list, word) in [(&mut o.ignore, "ignore"), (&mut o.protect, "protect")] {
                for (i, r) in list.iter_mut().enumerate() {
                    r.origin = format!("{shown} {word} rule {}", i + 1);
                }
            }
        }
        if let Some(c) = &mut self.compare {
            for (i, r) in c.ignore.iter_mut().enumerate() {
                r.source = format!("{shown} compare ignore rule {}", i + 1);
            }
        }
        if let Some(v) = &mut self.versions {
            for (i, r) in v.ignore.iter_mut().enumerate() {
                r.origin = format!("{shown} versions ignore rule {}", i + 1);
            }
            for (i, g) in v.groups.iter_mut().enumerate() {
                g.origin = format!("{shown} versions group {}", i + 1);
            }
            for (i, p) in v.probes.iter_mut().enumerate() {
                p.origin = format!("{shown} versions probe {}", i + 1);
            }
        }
    }
}

impl<S: Clone> Config<S> {
    /// The release and manifests ignore rules: the `ignore:` section's, checked, then the
    /// `--ignore` values.
    pub fn ignore_rules(&self, cli: &[String]) -> Result<Vec<IgnoreRule>, ConfigError> {
        Ok(ignore_rules(self.sections.ignore.clone(), cli)?)
    }

    /// The `compare` ignore rules: the `compare.ignore` section's, checked, then the `--ignore`
    /// values (the file's top-level `ignore:` rules are drift's, not compare's).
    pub fn compare_rules(&self, cli: &[String]) -> Result<Vec<IgnoreRule>, ConfigError> {
        let file = self.sections.compare.as_ref().map(|c| c.ignore.clone()).unwrap_or_default();
        Ok(ignore_rules(file, cli)?)
    }

    /// The `orphans:` section (`None` without a config file). A config file without one is an
    /// error: `orphans --config` was given rules to use.
    pub(crate) fn orphans(&self) -> Result<Option<OrphansSection>, ConfigError> {
        match (&self.file, &self.sections.orphans) {
            (None, _) => Ok(None),
            (Some(_), Some(section)) => Ok(Some(section.clone())),
            (Some(path), None) => Err(ConfigError::Parse {
                path: path.clone(),
                message: "it has no `orphans:` section (with `ignore:` and/or `protect:` lists)".into(),
            }),
        }
    }

    /// The orphans rules: the `orphans:` section's (a config file without one is an error),
    /// checked, then the `--ignore` values.
    pub fn orphan_rules(&self, ignore: &[String]) -> Result<OrphanRules, ConfigError> {
        Ok(OrphanRules::new(self.orphans()?, ignore)?)
    }

    /// Whether the file has an `orphans:` section.
    pub(crate) fn has_orphans(&self) -> bool {
        self.sections.orphans.is_some()
    }

    /// The `versions:` section (the defaults when absent), checked, with the `--ignore` rules.
    pub fn versions(&self, ignore: &[String]) -> Result<VersionsConfig, ConfigError> {
        Ok(self.sections.versions.clone().unwrap_or_default().prepare(ignore)?)
    }

    /// What a value changed at admission is: the flag's word, else the file's
    /// `admission_changes:`, else ignored.
    pub fn admission_changes(&self, flag: Option<AdmissionChanges>) -> AdmissionChanges {
        flag.or(self.sections.admission_changes).unwrap_or_default()
    }

    /// The `serve:` section (`None` when absent).
    pub(crate) fn serve(&self) -> Option<S> {
        self.sections.serve.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch file `name` under a folder of its own, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("drift-config-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir.join("rules.yaml"))
        }
        fn with(&self, text: &str) -> &Path {
            std::fs::write(&self.0, text).unwrap();
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
        }
    }

    fn load_rules(path: &Path) -> Result<Vec<IgnoreRule>, ConfigError> {
        Config::read(Some(path))?.ignore_rules(&[])
    }

    fn load_orphan_rules(path: &Path, ignore: &[String]) -> Result<OrphanRules, ConfigError> {
        Config::read(Some(path))?.orphan_rules(ignore)
    }

    fn load_versions(text: &str) -> Result<VersionsConfig, ConfigError> {
        let f = Scratch::new(&format!("versions-{}", text.len()));
        Config::read(Some(f.with(text)))?.versions(&[])
    }

    #[test]
    fn config_file_rules() {
        let f = Scratch::new("ignore");
        let rules = load_rules(f.with(
            "ignore:\n  - kind: Deployment\n    name_regex: '^web-'\n    path: spec.replicas\n    reason: KEDA scales it\n",
        ))
        .unwrap();
        assert_eq!(rules.len(), 1);
        assert!(rules[0].matches_field("Deployment", "x", "web-1", "spec.replicas"));
        assert!(!rules[0].matches_field("Deployment", "x", "api", "spec.replicas"));
        assert!(rules[0].describe().contains("KEDA scales it"));
        assert!(rules[0].describe().contains("rules.yaml rule 1"), "{}", rules[0].describe());
        // The orphans section is another subcommand's: accepted, not used here.
        assert!(load_rules(f.with("ignore: []\norphans:\n  ignore:\n    - kind: ConfigMap\n")).unwrap().is_empty());
        let err = load_rules(f.with("ignore:\n  - kind: Deployment\n    colour: red\n")).unwrap_err().to_string();
        assert!(err.contains("rules.yaml") && err.contains("colour") && err.contains("line 3"), "{err}");
        assert!(err.contains("name_regex"), "the keys expected: {err}");
        // One loader for the whole file: a mistake in the orphans section is named here too.
        let err = load_rules(f.with("ignore: []\norphans:\n  ignroe: []\n")).unwrap_err().to_string();
        assert!(err.contains("ignroe") && err.contains("line 3"), "{err}");
        // One case rule for kinds, as in orphans rules.
        let r = IgnoreRule::parse_cli("deploy*:spec.replicas").unwrap();
        assert!(r.matches_field("Deployment", "x", "web", "spec.replicas"));
        assert!(load_rules(f.with("ignore:\n  - name_regex: '(['\n")).is_err());
        // The --ignore values follow the file's rules.
        let config = Config::read(Some(f.with("ignore:\n  - path: spec.replicas\n"))).unwrap();
        let rules = config.ignore_rules(&["metadata.labels*".into()]).unwrap();
        assert_eq!(rules.iter().map(|r| r.source.as_str()).collect::<Vec<_>>()[1], "--ignore metadata.labels*");
        // No file: only the flags; an empty file: no rules.
        assert_eq!(Config::read(None).unwrap().ignore_rules(&["spec.replicas".into()]).unwrap().len(), 1);
        assert!(load_rules(f.with("\n")).unwrap().is_empty());
        let missing = f.0.with_file_name("missing.yaml");
        let err = Config::read(Some(&missing)).unwrap_err().to_string();
        assert!(err.starts_with("failed to read config file") && err.contains("missing.yaml"), "{err}");
    }

    #[test]
    fn compare_section() {
        let f = Scratch::new("compare");
        let path = f.with(
            "ignore:\n  - path: spec.replicas\ncompare:\n  ignore:\n    - kind: Values\n      path: ingress.host\n      reason: one host per environment\n",
        );
        let config = Config::read(Some(path)).unwrap();
        let rules = config.compare_rules(&["Deployment:spec.template.*".into()]).unwrap();
        assert_eq!(rules.len(), 2, "the compare section's and the flag's, not drift's");
        assert!(rules[0].matches_field("Values", "shop", "shop", "ingress.host"));
        assert!(rules[0].describe().contains("rules.yaml compare ignore rule 1"), "{}", rules[0].describe());
        assert_eq!(config.ignore_rules(&[]).unwrap().len(), 1, "drift does not take compare's rules");
        let err = Config::read(Some(f.with("compare:\n  ignroe: []\n"))).unwrap_err().to_string();
        assert!(err.contains("ignroe") && err.contains("line 2"), "{err}");
        assert!(Config::read(None).unwrap().compare_rules(&[]).unwrap().is_empty());
    }

    #[test]
    fn orphans_section() {
        let f = Scratch::new("orphans");
        let path = f.with("ignore: []\norphans:\n  ignore:\n    - kind: ConfigMap\n      name_regex: '^tmp-'\n      note: scratch\n  protect:\n    - name: '*-tls'\n");
        let rules = load_orphan_rules(path, &["Secret:x/y".into()]).unwrap();
        assert_eq!(rules.ignore.len(), 2);
        assert_eq!(rules.protect.len(), 1);
        assert!(rules.ignore[0].matches("ConfigMap", "n", "tmp-1", &[]));
        assert!(rules.ignore[0].describe().ends_with("ignore rule 1: scratch"), "{}", rules.ignore[0].describe());
        assert!(rules.protect[0].matches("Secret", "n", "web-tls", &[]));
        assert!(load_orphan_rules(f.with("ignore: []\n"), &[]).unwrap_err().to_string().contains("orphans:"));
        let err = load_orphan_rules(f.with("orphans:\n  ignore:\n    - colour: red\n"), &[]).unwrap_err().to_string();
        assert!(err.contains("colour") && err.contains("line 3") && err.contains("name_regex"), "{err}");
        // Without a config file, only the flags.
        assert_eq!(Config::read(None).unwrap().orphan_rules(&["Secret".into()]).unwrap().ignore.len(), 1);
    }

    #[test]
    fn versions_section_unknown_keys_and_bad_values_are_named() {
        let e = load_versions("versions:\n  imagez: []\n").unwrap_err().to_string();
        assert!(e.contains("imagez"), "{e}");
        let e = load_versions("versions:\n  track: sideways\n").unwrap_err().to_string();
        assert!(e.contains("sideways"), "{e}");
        let e = load_versions("versions:\n  groups:\n  - name: x\n    name_regex: '('\n").unwrap_err().to_string();
        assert!(e.contains("group 1"), "{e}");
        // One key style in the whole file (snake_case): the old camelCase spelling of the
        // registries' keys is refused, naming the key expected.
        let e = load_versions("versions:\n  registries:\n  - {host: r, plainHttp: true}\n").unwrap_err().to_string();
        assert!(e.contains("plainHttp") && e.contains("plain_http"), "{e}");
        let c = load_versions(
            "versions:\n  registries:\n  - {host: r, plain_http: true, username_env: U, password_env: P}\n",
        )
        .unwrap();
        assert!(c.registries[0].plain_http);
        assert_eq!(c.registries[0].password_env.as_deref(), Some("P"));
        // No versions section: the defaults.
        assert!(load_versions("ignore: []\n").unwrap().images.is_empty());
        // Its rules are named by their place in the file.
        let e = load_versions("versions:\n  probes:\n  - {image: x, url: 'ftp://h/v', json_pointer: /v}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rules.yaml versions probe 1"), "{e}");
        let c = load_versions("versions:\n  ignore:\n  - {kind: Deployment, note: frozen}\n").unwrap();
        assert!(c.ignore[0].origin.ends_with("rules.yaml versions ignore rule 1"), "{}", c.ignore[0].origin);
    }
}
