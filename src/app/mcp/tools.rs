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
use crate::report::orphans::OrphanReport;
use crate::report::versions::VersionsReport;
use crate::report::{DriftReport, ManifestsReport, Status};

/// Where a tool looks: a cluster of those connected, a namespace, and how much it answers with.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Scope {
    /// The kube context to ask, of those the server was started with (default: every one).
    pub context: Option<String>,
    /// The namespace (default: the server's -n, else the context's namespace); for manifests, the
    /// namespace of objects that name none.
    pub namespace: Option<String>,
    /// At most this many releases, files or rows per cluster in the answer, findings first
    /// (default: the server's --max-rows; at most 500).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

/// `release_drift`'s input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ReleaseDriftInput {
    /// One Helm release's name; without it, every release of the namespace (or of every
    /// namespace with all_namespaces).
    pub release: Option<String>,
    /// Compare this revision of the release instead of the deployed one (with release).
    #[schemars(range(min = 1))]
    pub revision: Option<u32>,
    /// Every namespace instead of one.
    pub all_namespaces: bool,
    #[serde(flatten)]
    pub scope: Scope,
}

/// `manifests_drift`'s input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ManifestsDriftInput {
    /// Manifest files or folders on the machine the server runs on (folders are walked for .yaml,
    /// .yml and .json; a folder with a kustomization.yaml is rendered as one).
    pub paths: Vec<String>,
    /// Kustomization directories, rendered as `kubectl apply -k` does.
    pub kustomize: Vec<String>,
    /// A label selector: live objects with these labels that are in no file are reported as extra.
    pub selector: Option<String>,
    #[serde(flatten)]
    pub scope: Scope,
}

/// `orphans`' input.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(default, deny_unknown_fields)]
pub(crate) struct OrphansInput {
    /// Kinds to examine (default: every kind the scope allows; cluster-scoped ones need
    /// all_namespaces): configmap, secret, serviceaccount, service, pvc, pv, role, clusterrole,
    /// rolebinding, clusterrolebinding, hpa, pdb, networkpolicy, ingress, deployment, statefulset,
    /// job, storageclass, priorityclass.
    pub kinds: Vec<String>,
    /// Only objects older than this are called orphans (30m, 1h, 7d; default 1h).
    pub older_than: Option<String>,
    /// Every examined object with its class (in use, managed, protected), not only the orphans.
    pub show_all: bool,
    /// Every namespace instead of one (and the cluster-scoped kinds).
    pub all_namespaces: bool,
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
#[serde(default, deny_unknown_fields)]
pub(crate) struct VersionsInput {
    /// Categories to report (default: all in scope; with a namespace, cluster and nodes only when named).
    pub categories: Vec<CategoryInput>,
    /// Which rows (default: every row except images of Helm-managed workloads).
    pub show: Option<ShowInput>,
    /// Judge the apis category against a planned upgrade: a Kubernetes version such as 1.38.
    pub target_version: Option<String>,
    /// Every namespace instead of one.
    pub all_namespaces: bool,
    #[serde(flatten)]
    pub scope: Scope,
}

/// Why a tool could not run at all (a bad argument, a context not connected): a tool error
/// (isError) whose text names what was wrong, so the assistant reads it.
#[derive(Debug)]
pub(crate) struct Refused(String);

impl From<String> for Refused {
    fn from(message: String) -> Refused {
        Refused(message)
    }
}

impl From<&str> for Refused {
    fn from(message: &str) -> Refused {
        Refused(message.to_string())
    }
}

impl rmcp::handler::server::tool::IntoCallToolResult for Refused {
    fn into_call_tool_result(self) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(format!("error: {}", self.0))]).into())
    }
}

/// How a tool's report is written as text, which of its targets failed, and how to ask for less.
pub(crate) struct Text<T> {
    /// The quiet text of the (bounded) fleet: one line per target and the summary.
    pub summary: fn(&mut Vec<u8>, &Fleet<T>) -> std::io::Result<()>,
    /// One report's errors, one line each.
    pub errors: fn(&mut Vec<u8>, &T) -> std::io::Result<()>,
    /// A report's status.
    pub status: fn(&T) -> Status,
    /// How to narrow a question whose answer was cut.
    pub narrow: &'static str,
}

const RELEASE: Text<DriftReport> = Text {
    summary: |out, fleet| outputs::release(out, fleet, OutputFormat::Text, &Theme::new(false), true),
    // The quiet line of a release that could not be checked says why.
    errors: |_, _| Ok(()),
    status: DriftReport::status,
    narrow: "Ask for one release (release and namespace), or one namespace, or pass a larger limit (at most 500).",
};

const MANIFESTS: Text<ManifestsReport> = Text {
    summary: |out, fleet| {
        outputs::manifests(out, fleet, OutputFormat::Text, &Theme::new(false), true, &Default::default())
    },
    errors: |out, report| crate::render::text::manifests_errors(out, report),
    status: ManifestsReport::status,
    narrow: "Name fewer paths (one file or folder), or pass a larger limit (at most 500).",
};

const ORPHANS: Text<OrphanReport> = Text {
    summary: |out, fleet| outputs::orphans_tabular().write(out, fleet, OrphansFormat::Table, &Theme::new(false)),
    // A tabular report's errors are its rows (and its summary's skipped kinds).
    errors: |_, _| Ok(()),
    status: OrphanReport::status,
    narrow: "Ask for one namespace, or some kinds, or pass a larger limit (at most 500).",
};

const VERSIONS: Text<VersionsReport> = Text {
    summary: |out, fleet| outputs::versions_tabular().write(out, fleet, OrphansFormat::Table, &Theme::new(false)),
    errors: |_, _| Ok(()),
    status: |r| r.status,
    narrow: "Ask for one namespace, some categories, show outdated, or pass a larger limit (at most 500).",
};

/// A tool's answer: the bounded `-o json` as structured content, and a short text (the quiet
/// text, what was left out, the errors); an error (isError) when the command would exit 2.
pub(crate) fn answer<T: Rows + Clone + Serialize>(
    fleet: &Fleet<T>,
    limit: usize,
    text: &Text<T>,
) -> Result<CallToolResult, String> {
    let b = bound::bound(fleet, limit, bound::MAX_JSON_BYTES, text.narrow)
        .map_err(|e| format!("could not write the answer: {e}"))?;
    let mut out = Vec::new();
    summarise(&mut out, fleet.many(), &b, text).map_err(|e| format!("could not write the answer: {e}"))?;
    let summary = String::from_utf8_lossy(&out).trim_end().to_string();
    let mut result = if fleet.status(text.status) == Status::Error {
        CallToolResult::structured_error(b.json)
    } else {
        CallToolResult::structured(b.json)
    };
    result.content = vec![ContentBlock::text(summary)];
    Ok(result)
}

/// The text of a bounded answer: the quiet text, a line per cut cluster, every error.
fn summarise<T>(out: &mut Vec<u8>, many: bool, b: &bound::Bounded<T>, text: &Text<T>) -> std::io::Result<()> {
    let named = |cluster: &str| if many { format!("cluster {cluster}: ") } else { String::new() };
    (text.summary)(out, &b.fleet)?;
    if let Some(t) = &b.truncated {
        for c in &t.clusters {
            writeln!(
                out,
                "{}{} of {} {} shown (findings first). {}",
                named(&c.cluster),
                c.shown,
                c.total,
                t.list,
                t.narrow
            )?;
        }
    }
    for c in &b.fleet.clusters {
        match (&c.report, &c.error) {
            (Some(report), _) => {
                let mut errors = Vec::new();
                (text.errors)(&mut errors, report)?;
                if !errors.is_empty() {
                    out.extend(named(&c.cluster).into_bytes());
                }
                out.extend(errors);
            }
            // With several clusters the text has each one's error already, under its name.
            (None, error) if !many => {
                writeln!(out, "error: cluster {}: {}", c.cluster, error.as_deref().unwrap_or("no report"))?
            }
            (None, _) => {}
        }
    }
    Ok(())
}

/// The namespace and scope a tool asks for, checked against what the server allows.
struct Where {
    namespace: Option<String>,
    all_namespaces: bool,
}

impl Where {
    /// The namespace on `cluster`: the one asked for, else the cluster's.
    fn on(&self, cluster: &crate::source::cluster::Cluster) -> String {
        self.namespace.clone().unwrap_or_else(|| cluster.namespace().to_string())
    }

    /// As the orphans and versions scans take it: `None` for every namespace.
    fn scope(&self, cluster: &crate::source::cluster::Cluster) -> Option<String> {
        (!self.all_namespaces).then(|| self.on(cluster))
    }
}

/// The tools' titles and whether each reaches beyond the cluster; every tool only reads
/// (annotations set once, in [`DriftMcp::new`](super::DriftMcp)).
pub(crate) const ANNOTATIONS: [(&str, &str, bool); 4] = [
    ("release_drift", "Helm release drift", false),
    ("manifests_drift", "Manifests drift", false),
    ("orphans", "Orphaned objects", false),
    // Upstream release pointers, GitHub, ArtifactHub and registries.
    ("versions", "Versions behind upstream", true),
];

#[tool_router(vis = "pub(crate)")]
impl DriftMcp {
    /// Drift of Helm releases: each object the release deployed against the live one, field by
    /// field (changed, added by hand, deleted, extra), with who changed it and the commands that
    /// undo it. One release (release), every release of a namespace, or of every namespace
    /// (all_namespaces). Structured output: `kubectl drift release -o json`. Secret values are
    /// always redacted.
    #[tool(name = "release_drift")]
    async fn release_drift(&self, Parameters(input): Parameters<ReleaseDriftInput>) -> Result<CallToolResult, Refused> {
        if input.revision.is_some() && input.release.is_none() {
            return Err("revision needs a release: name the release whose revision to compare".into());
        }
        let (clusters, place, limit) = self.prepare(&input.scope, input.all_namespaces)?;
        let (rules, input, place) = (&self.shared.rules, &input, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| {
            let selection = ReleaseSelection {
                names: input.release.clone().into_iter().collect(),
                all: input.release.is_none(),
                all_namespaces: place.all_namespaces,
                namespace: place.on(&cluster),
                revision: input.revision,
                chart_crds: true,
                admission_changes: crate::engine::compare::AdmissionChanges::default(),
            };
            async move { Ok(check_releases(&cluster, &selection, rules.clone(), false, &display).await?) }
        })
        .await;
        Ok(answer(&fleet, limit, &RELEASE)?)
    }

    /// Drift of manifest files, folders or kustomizations (paths on the machine the server runs
    /// on): each object against its live counterpart, field by field. Structured output:
    /// `kubectl drift manifests -o json`. Secret values are always redacted.
    #[tool(name = "manifests_drift")]
    async fn manifests_drift(
        &self,
        Parameters(input): Parameters<ManifestsDriftInput>,
    ) -> Result<CallToolResult, Refused> {
        use crate::source::manifest_files::{STDIN_PATH, paths_or_default};
        if input.paths.is_empty() && input.kustomize.is_empty() {
            return Err("name the manifests to check: paths (files or folders) or kustomize (directories)".into());
        }
        if input.paths.iter().chain(&input.kustomize).any(|p| p == STDIN_PATH || p.is_empty()) {
            return Err("a path must name a file or folder (standard input carries the protocol)".into());
        }
        let (clusters, place, limit) = self.prepare(&input.scope, false)?;
        let kustomizations: Vec<PathBuf> = input.kustomize.iter().map(PathBuf::from).collect();
        let given: Vec<PathBuf> = input.paths.iter().map(PathBuf::from).collect();
        let paths = paths_or_default(given, &kustomizations, std::path::Path::new(".")).map_err(|e| e.to_string())?;
        let (paths, kustomizations, input, place) = (&paths, &kustomizations, &input, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| async move {
            let options = crate::engine::manifests::ManifestsOptions {
                paths: paths.clone(),
                kustomizations: kustomizations.clone(),
                default_namespace: place.on(&cluster),
                field_manager: None,
                timeout: None,
                kubectl: self.shared.kubectl.clone(),
                selector: input.selector.clone(),
                stdin: None,
            };
            let rules = self.shared.rules.clone();
            Ok(crate::engine::manifests::check(&cluster, rules, false, &options, None, &display).await)
        })
        .await;
        Ok(answer(&fleet, limit, &MANIFESTS)?)
    }

    /// Objects nothing uses any more (ConfigMaps, Secrets, RBAC, PVCs, ...), each with the
    /// evidence (what would use it, what manages it). Secret data is never read. Structured
    /// output: `kubectl drift orphans -o json`.
    #[tool(name = "orphans")]
    async fn orphans(&self, Parameters(input): Parameters<OrphansInput>) -> Result<CallToolResult, Refused> {
        let (clusters, place, limit) = self.prepare(&input.scope, input.all_namespaces)?;
        let older_than = crate::report::duration::Span::parse(input.older_than.as_deref().unwrap_or("1h"))
            .map_err(|e| format!("older_than: {e}"))?;
        let options = crate::engine::orphans::ScanOptions {
            kinds: input.kinds.clone(),
            older_than,
            config: self.shared.orphans.clone(),
            ignore: Vec::new(),
            show_all: input.show_all,
            max_custom_objects: crate::engine::orphans::custom::DEFAULT_CAP,
        };
        let scan = options.prepare(place.all_namespaces).map_err(|e| e.to_string())?;
        let (scan, place) = (&scan, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| async move {
            Ok(crate::engine::orphans::scan(&cluster, place.scope(&cluster), scan, &display).await?)
        })
        .await;
        Ok(answer(&fleet, limit, &ORPHANS)?)
    }

    /// What is installed (cluster, nodes, Helm charts, workload images, API versions) and what
    /// upstream has released since, or which API versions a coming Kubernetes minor removes.
    /// Structured output: `kubectl drift versions -o json`.
    #[tool(name = "versions")]
    async fn versions(&self, Parameters(input): Parameters<VersionsInput>) -> Result<CallToolResult, Refused> {
        use crate::engine::versions::{self, Show, VersionsOptions};
        use crate::report::versions::Category;
        let (clusters, place, limit) = self.prepare(&input.scope, input.all_namespaces)?;
        let target_minor = input
            .target_version
            .as_deref()
            .map(crate::app::cli::parse_target_minor)
            .transpose()
            .map_err(|e| format!("target_version: {e}"))?;
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
        let sources = crate::app::versions::versions_sources(&self.shared.versions, self.shared.cache_dir.clone())
            .map_err(|e| e.to_string())?;
        let (sources, categories, place) = (&sources, &categories, &place);
        let fleet = fleet::across_built(clusters, self.shared.parallel, false, |cluster, display| {
            let options = VersionsOptions {
                namespace: place.scope(&cluster),
                categories: categories.clone(),
                show,
                manifests: Vec::new(),
                target_minor,
                config: self.shared.versions.clone(),
            };
            async move { Ok(versions::scan(&cluster, &options, sources, &display).await?) }
        })
        .await;
        Ok(answer(&fleet, limit, &VERSIONS)?)
    }
}

impl DriftMcp {
    /// The clusters a call asks (`context`: one of them), where it looks and how many rows it
    /// answers with; an error says what is not allowed.
    fn prepare(&self, scope: &Scope, all_namespaces: bool) -> Result<(super::Named, Where, usize), String> {
        let clusters = self.clusters(scope.context.as_deref())?;
        if let Some(fixed) = &self.shared.only_namespace {
            if all_namespaces {
                return Err(format!("this server shows namespace {fixed} only: leave out all_namespaces"));
            }
            if let Some(ns) = scope.namespace.as_deref().filter(|ns| *ns != fixed.as_str()) {
                return Err(format!("this server shows namespace {fixed} only, not {ns}"));
            }
        }
        match scope.namespace.as_deref() {
            Some("") => return Err("namespace is empty: name one, or leave it out for the default".into()),
            Some(ns) if all_namespaces => {
                return Err(format!("namespace {ns} and all_namespaces: give one or the other"));
            }
            _ => {}
        }
        let limit = match scope.limit {
            None => self.shared.max_rows,
            Some(n @ 1..=500) => n as usize,
            Some(n) => return Err(format!("limit {n}: give 1 to 500")),
        };
        let namespace = scope.namespace.clone().or_else(|| self.shared.only_namespace.clone());
        Ok((clusters, Where { namespace, all_namespaces }, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::mcp::{Clusters, Shared};

    fn server(only_namespace: Option<&str>) -> DriftMcp {
        let shared = Shared {
            clusters: Clusters::Connected(vec![("prod".into(), Err("unreachable".into()))]),
            parallel: 1,
            rules: Vec::new(),
            orphans: None,
            versions: Default::default(),
            cache_dir: None,
            kubectl: "kubectl".into(),
            max_rows: 50,
            only_namespace: only_namespace.map(str::to_string),
        };
        DriftMcp::new(shared, None)
    }

    /// A call's scope and all_namespaces, as release_drift reads them.
    fn scope(v: serde_json::Value) -> (Scope, bool) {
        let input: ReleaseDriftInput = serde_json::from_value(v).unwrap();
        (input.scope, input.all_namespaces)
    }

    #[test]
    fn inputs_take_their_fields_and_refuse_any_other() {
        let r: ReleaseDriftInput =
            serde_json::from_value(serde_json::json!({"release": "shop", "namespace": "shop", "limit": 3})).unwrap();
        assert_eq!(
            (r.release.as_deref(), r.scope.namespace.as_deref(), r.scope.limit),
            (Some("shop"), Some("shop"), Some(3))
        );
        // No way to ask for Secret values, nor for anything the tool does not know.
        for bad in
            [serde_json::json!({"show_secrets": true}), serde_json::json!({"release": "shop", "showSecrets": true})]
        {
            let e = serde_json::from_value::<ReleaseDriftInput>(bad).unwrap_err().to_string();
            assert!(e.contains("unknown field"), "{e}");
        }
        let v: VersionsInput =
            serde_json::from_value(serde_json::json!({"categories": ["apis"], "show": "outdated"})).unwrap();
        assert!(matches!(v.categories[..], [CategoryInput::Apis]) && matches!(v.show, Some(ShowInput::Outdated)));
        assert!(serde_json::from_value::<VersionsInput>(serde_json::json!({"categories": ["disks"]})).is_err());
        let o: OrphansInput = serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(o.kinds.is_empty() && !o.show_all && !o.all_namespaces);
        // manifests_drift has no all_namespaces: the files name their namespaces.
        assert!(serde_json::from_value::<ManifestsDriftInput>(serde_json::json!({"all_namespaces": true})).is_err());
    }

    #[test]
    fn the_schemas_name_every_input_and_no_secret_switch() {
        let schema = serde_json::to_value(rmcp::schemars::schema_for!(ReleaseDriftInput)).unwrap();
        let props = schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["all_namespaces", "context", "limit", "namespace", "release", "revision"]);
        assert_eq!(props["limit"]["maximum"], 500);
        let tools = server(None).tool_router.list_all();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(names, ["manifests_drift", "orphans", "release_drift", "versions"]);
        for t in &tools {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(
                (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
                (Some(true), Some(false), Some(true))
            );
            assert!(!serde_json::to_string(&t.input_schema).unwrap().contains("secrets\""), "{}", t.name);
        }
    }

    impl DriftMcp {
        fn prepare_(&self, (scope, all): &(Scope, bool)) -> Result<(crate::app::mcp::Named, Where, usize), String> {
            self.prepare(scope, *all)
        }
    }

    fn versions_report(n: usize) -> VersionsReport {
        use crate::report::versions::{Category, VersionRow};
        VersionsReport::new((0..n).map(|i| VersionRow::new(Category::Helm, format!("app-{i}"), "1.0.0")).collect(), 0)
    }

    fn text_of(r: &CallToolResult) -> String {
        r.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect()
    }

    #[test]
    fn an_answer_is_the_json_a_short_text_and_an_error_when_the_command_would_exit_2() {
        use crate::report::fleet::ClusterResult;
        let one = Fleet::new(vec![ClusterResult::report("prod".into(), versions_report(3))]);
        let r = answer(&one, 2, &VERSIONS).unwrap();
        assert_eq!(r.is_error, Some(false));
        let json = r.structured_content.as_ref().unwrap();
        assert_eq!(json["clusters"][0]["report"]["rows"].as_array().unwrap().len(), 2);
        let text = text_of(&r);
        assert!(text.contains("app-0") && !text.contains("app-2"), "{text}");
        assert!(text.contains("2 of 3 rows shown (findings first). Ask for one namespace"), "{text}");
        assert!(!text.contains('{'), "the JSON is not repeated as text: {text}");
        // A cluster that could not be read: an error, said once, with or without other clusters.
        for fleet in [
            Fleet::new(vec![ClusterResult::<VersionsReport>::error("gone".into(), "connection refused".into())]),
            Fleet::new(vec![
                ClusterResult::report("prod".into(), versions_report(1)),
                ClusterResult::error("gone".into(), "connection refused".into()),
            ]),
        ] {
            let r = answer(&fleet, 50, &VERSIONS).unwrap();
            assert_eq!(r.is_error, Some(true));
            let text = text_of(&r);
            assert_eq!(text.matches("connection refused").count(), 1, "{text}");
            assert_eq!(
                r.structured_content.as_ref().unwrap()["clusters"][fleet.clusters.len() - 1]["error"],
                "connection refused"
            );
        }
    }

    #[test]
    fn a_call_looks_where_the_server_allows() {
        let s = server(None);
        let (clusters, place, limit) = s.prepare_(&scope(serde_json::json!({}))).unwrap();
        assert_eq!((clusters.len(), place.namespace, place.all_namespaces, limit), (1, None, false, 50));
        let (_, place, limit) = s.prepare_(&scope(serde_json::json!({"all_namespaces": true, "limit": 500}))).unwrap();
        assert!(place.all_namespaces && limit == 500);
        for (bad, says) in [
            (serde_json::json!({"limit": 0}), "limit 0"),
            (serde_json::json!({"limit": 501}), "limit 501"),
            (serde_json::json!({"namespace": ""}), "namespace is empty"),
            (serde_json::json!({"namespace": "a", "all_namespaces": true}), "one or the other"),
            (
                serde_json::json!({"context": "staging"}),
                "context staging is not one this server was started with (prod)",
            ),
        ] {
            let e = s.prepare_(&scope(bad.clone())).err().unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(e.contains(says), "{bad}: {e}");
        }
        // Under serve -n shop: that namespace only, and it is the default.
        let s = server(Some("shop"));
        let (_, place, _) = s.prepare_(&scope(serde_json::json!({}))).unwrap();
        assert_eq!(place.namespace.as_deref(), Some("shop"));
        assert!(s.prepare_(&scope(serde_json::json!({"namespace": "shop"}))).is_ok());
        let e = s.prepare_(&scope(serde_json::json!({"namespace": "kube-system"}))).err().unwrap();
        assert!(e.contains("namespace shop only, not kube-system"), "{e}");
        assert!(s.prepare_(&scope(serde_json::json!({"all_namespaces": true}))).is_err());
    }
}
