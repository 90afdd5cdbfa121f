//! The MCP tools: each one's input (a JSON Schema from its type), and a call of the same engine
//! the command runs (release, manifests, orphans, versions) on the clusters connected at start,
//! answered with the command's `-o json` (bounded, [`super::bound`]) and its quiet text. Nothing
//! here writes to the cluster, and no input can ask for Secret values.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::schemars::JsonSchema;
use rmcp::{ErrorData, tool, tool_router};
use serde::{Deserialize, Serialize};

use super::DriftMcp;
use super::bound::{self, Rows};
use crate::app::cli::{OrphansFormat, OutputFormat};
use crate::app::fleet;
use crate::app::outputs;
use crate::engine::drift::{ReleaseSelection, check_releases};
use crate::render::Theme;
use crate::report::fleet::Fleet;
use crate::report::{DriftReport, ManifestsReport, Status};

/// Where a tool looks: a cluster of those connected, and a namespace or every one.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(crate) struct Scope {
    /// The kube context to ask, of those the server was started with (default: every one).
    #[serde(default)]
    pub context: Option<String>,
    /// The namespace (default: the server's -n, else the context's namespace).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Every namespace instead of one.
    #[serde(default)]
    pub all_namespaces: bool,
    /// At most this many releases, files or rows per cluster in the answer, findings first
    /// (default: the server's --max-rows; at most 500).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// `release_drift`'s input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseDriftInput {
    /// One Helm release's name; without it, every release of the namespace (or of every
    /// namespace with all_namespaces).
    #[serde(default)]
    pub release: Option<String>,
    /// Compare this revision of the release instead of the deployed one (with release).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub revision: Option<u32>,
    #[serde(flatten)]
    pub scope: Scope,
}

/// `manifests_drift`'s input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestsDriftInput {
    /// Manifest files or folders on the machine the server runs on (folders are walked for .yaml,
    /// .yml and .json; a folder with a kustomization.yaml is rendered as one).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Kustomization directories, rendered as `kubectl apply -k` does.
    #[serde(default)]
    pub kustomize: Vec<String>,
    /// A label selector: live objects with these labels that are in no file are reported as extra.
    #[serde(default)]
    pub selector: Option<String>,
    /// The context to ask (default: every one the server was started with).
    #[serde(default)]
    pub context: Option<String>,
    /// The namespace of objects that name none (default: the server's -n, else the context's).
    #[serde(default)]
    pub namespace: Option<String>,
    /// At most this many files per cluster in the answer, findings first (default: --max-rows).
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// `orphans`' input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(crate) struct OrphansInput {
    /// Kinds to examine (default: every kind the scope allows; cluster-scoped ones need
    /// all_namespaces): configmap, secret, serviceaccount, service, pvc, pv, role, clusterrole,
    /// rolebinding, clusterrolebinding, hpa, pdb, networkpolicy, ingress, deployment, statefulset,
    /// job, storageclass, priorityclass.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only objects older than this are called orphans (30m, 1h, 7d; default 1h).
    #[serde(default)]
    pub older_than: Option<String>,
    /// Every examined object with its class (in use, managed, protected), not only the orphans.
    #[serde(default)]
    pub show_all: bool,
    #[serde(flatten)]
    pub scope: Scope,
}

/// A version category, as `versions --category` names it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "lowercase")]
pub(crate) enum CategoryInput {
    Cluster,
    Nodes,
    Helm,
    Workloads,
    Apis,
}

/// Which version rows to list.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "lowercase")]
pub(crate) enum ShowInput {
    /// Only rows that are not current.
    Outdated,
    /// Every row, images of Helm-managed workloads and ignored rows included.
    All,
}

/// `versions`' input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub(crate) struct VersionsInput {
    /// Categories to report (default: all in scope; with a namespace, cluster and nodes only when named).
    #[serde(default)]
    pub categories: Vec<CategoryInput>,
    /// Which rows (default: every row except images of Helm-managed workloads).
    #[serde(default)]
    pub show: Option<ShowInput>,
    /// Judge the apis category against a planned upgrade: a Kubernetes version such as 1.38.
    #[serde(default)]
    pub target_version: Option<String>,
    #[serde(flatten)]
    pub scope: Scope,
}

/// A tool's answer when it could not run at all (a bad argument, a context not connected): a tool
/// error naming what was wrong, so the assistant reads it.
pub(crate) fn refused(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("error: {}", message.into()))])
}

/// How a tool's report is written as text and which of its targets failed.
pub(crate) struct Text<T> {
    /// The quiet text of the (bounded) fleet: one line per target and the summary.
    pub summary: fn(&mut Vec<u8>, &Fleet<T>) -> std::io::Result<()>,
    /// One report's errors, one line each.
    pub errors: fn(&mut Vec<u8>, &T) -> std::io::Result<()>,
    /// A report's status.
    pub status: fn(&T) -> Status,
}

/// A tool's answer: the bounded `-o json` as structured content, and a short text (the quiet
/// text, what was left out, the errors); an error (isError) when the command would exit 2.
pub(crate) fn answer<T: Rows + Clone + Serialize>(
    fleet: &Fleet<T>,
    limit: usize,
    narrow: &str,
    text: Text<T>,
) -> Result<CallToolResult, ErrorData> {
    let internal =
        |e: &dyn std::fmt::Display| ErrorData::internal_error(format!("could not write the answer: {e}"), None);
    let b = bound::bound(fleet, limit, bound::MAX_JSON_BYTES, narrow).map_err(|e| internal(&e))?;
    let mut out = Vec::new();
    let written = (|| -> std::io::Result<()> {
        (text.summary)(&mut out, &b.fleet)?;
        if let Some(t) = &b.truncated {
            for c in &t.clusters {
                let cluster = if fleet.many() { format!("cluster {}: ", c.cluster) } else { String::new() };
                writeln!(out, "{cluster}{} of {} {} shown (findings first). {}", c.shown, c.total, t.list, t.narrow)?;
            }
        }
        for c in &b.fleet.clusters {
            match (&c.report, &c.error) {
                (Some(report), _) => {
                    let mut errors = Vec::new();
                    (text.errors)(&mut errors, report)?;
                    if !errors.is_empty() && fleet.many() {
                        write!(out, "cluster {}: ", c.cluster)?;
                    }
                    out.extend(errors);
                }
                (None, error) => {
                    writeln!(out, "error: cluster {}: {}", c.cluster, error.as_deref().unwrap_or("no report"))?
                }
            }
        }
        Ok(())
    })();
    written.map_err(|e| internal(&e))?;
    let status = fleet.status(text.status);
    let summary = String::from_utf8_lossy(&out).trim_end().to_string();
    let mut result = if status == Status::Error {
        CallToolResult::structured_error(b.json)
    } else {
        CallToolResult::structured(b.json)
    };
    result.content = vec![ContentBlock::text(summary)];
    Ok(result)
}

/// The quiet text of a `release` fleet, as `release -q` prints it.
fn release_summary(out: &mut Vec<u8>, fleet: &Fleet<DriftReport>) -> std::io::Result<()> {
    outputs::release(out, fleet, OutputFormat::Text, &Theme::new(false), true)
}

/// Each release that could not be checked, as `release` writes it on stderr.
fn release_errors(out: &mut Vec<u8>, report: &DriftReport) -> std::io::Result<()> {
    for r in report.releases.iter().filter(|r| r.status == Status::Error) {
        let message = r.error().unwrap_or_else(|| "unknown error".into());
        writeln!(out, "error: release {}/{}: {message}", r.origin.namespace, r.origin.name)?;
    }
    Ok(())
}

fn manifests_summary(out: &mut Vec<u8>, fleet: &Fleet<ManifestsReport>) -> std::io::Result<()> {
    outputs::manifests(out, fleet, OutputFormat::Text, &Theme::new(false), true, &Default::default())
}

fn manifests_errors(out: &mut Vec<u8>, report: &ManifestsReport) -> std::io::Result<()> {
    crate::render::text::manifests_errors(out, report)
}

fn orphans_table(out: &mut Vec<u8>, fleet: &Fleet<crate::report::orphans::OrphanReport>) -> std::io::Result<()> {
    outputs::orphans_tabular().write(out, fleet, OrphansFormat::Table, &Theme::new(false))
}

fn versions_table(out: &mut Vec<u8>, fleet: &Fleet<crate::report::versions::VersionsReport>) -> std::io::Result<()> {
    outputs::versions_tabular().write(out, fleet, OrphansFormat::Table, &Theme::new(false))
}

/// Errors a tabular report carries in its rows (orphans, versions): none apart from its rows.
fn no_errors<T>(_: &mut Vec<u8>, _: &T) -> std::io::Result<()> {
    Ok(())
}

/// The namespace and scope a tool asks for, checked against what the server allows.
struct Where {
    namespace: Option<String>,
    all_namespaces: bool,
}

#[tool_router(vis = "pub(crate)")]
impl DriftMcp {
    /// Drift of Helm releases: each object the release deployed against the live one, field by
    /// field (changed, added by hand, deleted, extra), with who changed it and the commands that
    /// undo it. One release (release), every release of a namespace, or of every namespace
    /// (all_namespaces). Structured output: `kubectl drift release -o json`. Secret values are
    /// always redacted.
    #[tool(
        name = "release_drift",
        annotations(
            title = "Helm release drift",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn release_drift(
        &self,
        Parameters(input): Parameters<ReleaseDriftInput>,
    ) -> Result<CallToolResult, ErrorData> {
        if input.revision.is_some() && input.release.is_none() {
            return Ok(refused("revision needs a release: name the release whose revision to compare"));
        }
        let (clusters, place, limit) = match self.prepare(&input.scope) {
            Ok(p) => p,
            Err(e) => return Ok(refused(e)),
        };
        let rules = self.shared.rules.clone();
        let (rules, input, place) = (&rules, &input, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| {
            let selection = ReleaseSelection {
                names: input.release.clone().into_iter().collect(),
                all: input.release.is_none(),
                all_namespaces: place.all_namespaces,
                namespace: place.namespace.clone().unwrap_or_else(|| cluster.namespace().to_string()),
                revision: input.revision,
            };
            async move { Ok(check_releases(&cluster, &selection, rules.clone(), false, &display).await?) }
        })
        .await;
        let narrow =
            "Ask for one release (release and namespace), or one namespace, or pass a larger limit (at most 500).";
        answer(
            &fleet,
            limit,
            narrow,
            Text { summary: release_summary, errors: release_errors, status: DriftReport::status },
        )
    }

    /// Drift of manifest files, folders or kustomizations (paths on the machine the server runs
    /// on): each object against its live counterpart, field by field. Structured output:
    /// `kubectl drift manifests -o json`. Secret values are always redacted.
    #[tool(
        name = "manifests_drift",
        annotations(
            title = "Manifests drift",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn manifests_drift(
        &self,
        Parameters(input): Parameters<ManifestsDriftInput>,
    ) -> Result<CallToolResult, ErrorData> {
        if input.paths.is_empty() && input.kustomize.is_empty() {
            return Ok(refused("name the manifests to check: paths (files or folders) or kustomize (directories)"));
        }
        if input
            .paths
            .iter()
            .chain(&input.kustomize)
            .any(|p| p == crate::source::manifest_files::STDIN_PATH || p.is_empty())
        {
            return Ok(refused("a path must name a file or folder (standard input carries the protocol)"));
        }
        let scope = Scope {
            context: input.context.clone(),
            namespace: input.namespace.clone(),
            limit: input.limit,
            all_namespaces: false,
        };
        let (clusters, place, limit) = match self.prepare(&scope) {
            Ok(p) => p,
            Err(e) => return Ok(refused(e)),
        };
        let kustomizations: Vec<PathBuf> = input.kustomize.iter().map(PathBuf::from).collect();
        let given: Vec<PathBuf> = input.paths.iter().map(PathBuf::from).collect();
        let paths =
            match crate::source::manifest_files::paths_or_default(given, &kustomizations, std::path::Path::new(".")) {
                Ok(p) => p,
                Err(e) => return Ok(refused(e.to_string())),
            };
        let rules = self.shared.rules.clone();
        let (paths, kustomizations, rules, input, place) = (&paths, &kustomizations, &rules, &input, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| async move {
            let options = crate::engine::manifests::ManifestsOptions {
                paths: paths.clone(),
                kustomizations: kustomizations.clone(),
                default_namespace: place.namespace.clone().unwrap_or_else(|| cluster.namespace().to_string()),
                field_manager: None,
                timeout: None,
                kubectl: self.shared.kubectl.clone(),
                selector: input.selector.clone(),
                stdin: None,
            };
            Ok(crate::engine::manifests::check(&cluster, rules.clone(), false, &options, None, &display).await)
        })
        .await;
        let narrow = "Name fewer paths (one file or folder), or pass a larger limit (at most 500).";
        answer(
            &fleet,
            limit,
            narrow,
            Text { summary: manifests_summary, errors: manifests_errors, status: ManifestsReport::status },
        )
    }

    /// Objects nothing uses any more (ConfigMaps, Secrets, RBAC, PVCs, ...), each with the
    /// evidence (what would use it, what manages it). Secret data is never read. Structured
    /// output: `kubectl drift orphans -o json`.
    #[tool(
        name = "orphans",
        annotations(
            title = "Orphaned objects",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn orphans(&self, Parameters(input): Parameters<OrphansInput>) -> Result<CallToolResult, ErrorData> {
        let (clusters, place, limit) = match self.prepare(&input.scope) {
            Ok(p) => p,
            Err(e) => return Ok(refused(e)),
        };
        let older_than = match crate::report::duration::Span::parse(input.older_than.as_deref().unwrap_or("1h")) {
            Ok(s) => s,
            Err(e) => return Ok(refused(format!("older_than: {e}"))),
        };
        let options = crate::engine::orphans::ScanOptions {
            kinds: input.kinds.clone(),
            older_than,
            config: self.shared.orphans.clone(),
            ignore: Vec::new(),
            show_all: input.show_all,
            max_custom_objects: crate::engine::orphans::custom::DEFAULT_CAP,
        };
        let scan = match options.prepare(place.all_namespaces) {
            Ok(s) => s,
            Err(e) => return Ok(refused(e.to_string())),
        };
        let (scan, place) = (&scan, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| async move {
            let namespace = (!place.all_namespaces)
                .then(|| place.namespace.clone().unwrap_or_else(|| cluster.namespace().to_string()));
            Ok(crate::engine::orphans::scan(&cluster, namespace, scan, &display).await?)
        })
        .await;
        let narrow = "Ask for one namespace, or some kinds, or pass a larger limit (at most 500).";
        answer(
            &fleet,
            limit,
            narrow,
            Text { summary: orphans_table, errors: no_errors, status: crate::report::orphans::OrphanReport::status },
        )
    }

    /// What is installed (cluster, nodes, Helm charts, workload images, API versions) and what
    /// upstream has released since, or which API versions a coming Kubernetes minor removes.
    /// Structured output: `kubectl drift versions -o json`.
    #[tool(
        name = "versions",
        annotations(
            title = "Versions behind upstream",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn versions(&self, Parameters(input): Parameters<VersionsInput>) -> Result<CallToolResult, ErrorData> {
        use crate::engine::versions::{self, Show, VersionsOptions};
        use crate::report::versions::Category;
        let (clusters, place, limit) = match self.prepare(&input.scope) {
            Ok(p) => p,
            Err(e) => return Ok(refused(e)),
        };
        let target_minor = match input.target_version.as_deref().map(crate::app::cli::parse_target_minor).transpose() {
            Ok(m) => m,
            Err(e) => return Ok(refused(format!("target_version: {e}"))),
        };
        let categories: BTreeSet<Category> = input
            .categories
            .iter()
            .map(|c| match c {
                CategoryInput::Cluster => Category::Cluster,
                CategoryInput::Nodes => Category::Nodes,
                CategoryInput::Helm => Category::Helm,
                CategoryInput::Workloads => Category::Workloads,
                CategoryInput::Apis => Category::Apis,
            })
            .collect();
        let show = match input.show {
            None => Show::Default,
            Some(ShowInput::Outdated) => Show::Outdated,
            Some(ShowInput::All) => Show::All,
        };
        // One set of upstream sources per call, for every cluster (a repository's tags read once).
        let sources = match crate::app::versions::versions_sources(&self.shared.versions, self.shared.cache_dir.clone())
        {
            Ok(s) => s,
            Err(e) => return Ok(refused(e.to_string())),
        };
        let (sources, categories, place) = (&sources, &categories, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| {
            let options = VersionsOptions {
                namespace: (!place.all_namespaces)
                    .then(|| place.namespace.clone().unwrap_or_else(|| cluster.namespace().to_string())),
                categories: categories.clone(),
                show,
                manifests: Vec::new(),
                target_minor,
                config: self.shared.versions.clone(),
            };
            async move { Ok(versions::scan(&cluster, &options, sources, &display).await?) }
        })
        .await;
        let narrow = "Ask for one namespace, some categories, show outdated, or pass a larger limit (at most 500).";
        answer(
            &fleet,
            limit,
            narrow,
            Text {
                summary: versions_table,
                errors: no_errors,
                status: |r: &crate::report::versions::VersionsReport| r.status,
            },
        )
    }
}

impl DriftMcp {
    /// The clusters a call asks (`context`: one of them), where it looks and how many rows it
    /// answers with; an error says what is not allowed.
    fn prepare(&self, scope: &Scope) -> Result<(super::Named, Where, usize), String> {
        let clusters = self.clusters(scope.context.as_deref())?;
        if let Some(fixed) = &self.shared.only_namespace {
            if scope.all_namespaces {
                return Err(format!("this server shows namespace {fixed} only: leave out all_namespaces"));
            }
            if let Some(ns) = scope.namespace.as_deref().filter(|ns| *ns != fixed.as_str()) {
                return Err(format!("this server shows namespace {fixed} only, not {ns}"));
            }
        }
        if let Some(ns) = scope.namespace.as_deref()
            && (ns.is_empty() || scope.all_namespaces)
        {
            return Err(if ns.is_empty() {
                "namespace is empty: name one, or leave it out for the default".into()
            } else {
                format!("namespace {ns} and all_namespaces: give one or the other")
            });
        }
        let limit = match scope.limit {
            None => self.shared.max_rows,
            Some(n @ 1..=500) => n as usize,
            Some(n) => return Err(format!("limit {n}: give 1 to 500")),
        };
        let namespace = scope.namespace.clone().or_else(|| self.shared.only_namespace.clone());
        Ok((clusters, Where { namespace, all_namespaces: scope.all_namespaces }, limit))
    }
}
