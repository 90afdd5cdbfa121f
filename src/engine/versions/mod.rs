//! `kubectl drift versions`: what is installed, what upstream has released since, and where to
//! read the release notes. Read-only. Returns a [`VersionsReport`]; prints nothing.
//!
//! Steps: [`inventory`] finds what is installed (cluster `/version`, control-plane static pods,
//! kube-proxy/CoreDNS, nodes' kubelet and runtime, Helm releases, workload images and the digests
//! their pods run); upstream answers come from the sources (`source::upstream` for the Kubernetes
//! release pointers, GitHub releases and ArtifactHub; the registry client for tags and digests;
//! chart repositories); [`tags`] compares versions by tag shape; [`judge`] gives each row its
//! status; [`apis`] finds objects whose apiVersion is deprecated or removed in the next minors.
//!
//! Entry point: [`scan`].

pub mod apis;
pub mod charts;
pub mod config;
pub mod images;
pub mod inventory;
pub mod judge;
pub mod probes;
pub mod tags;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use ijson::IValue;
use kube::Client;
use serde_json::Value;

use crate::report::progress::Progress;
use crate::report::versions::{Category, VersionRow, VersionStatus, VersionsReport};
use crate::source::cluster::Cluster;
use crate::source::registry::{ClientOptions, Registries};
use crate::source::upstream::Upstream;

pub use config::VersionsConfig;
pub use tags::Track;

/// Which rows the report keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Show {
    /// Every row except the images of Helm-managed workloads and ignored rows.
    #[default]
    Default,
    /// Only rows that are not current.
    Outdated,
    /// Every row, Helm-managed images and ignored rows included.
    All,
}

/// What to scan (the `versions` flags and config, as plain data).
#[derive(Debug, Clone)]
pub struct VersionsOptions {
    /// The namespace of releases and workloads (`None`: every namespace). With a namespace the
    /// cluster-wide categories (cluster, nodes) are left out unless `categories` names them, as
    /// kubectl scopes to the namespace.
    pub namespace: Option<String>,
    /// The categories named (empty: every category in scope).
    pub categories: BTreeSet<Category>,
    pub show: Show,
    /// Folders or files of manifests whose apiVersions the `apis` category checks.
    pub manifests: Vec<PathBuf>,
    /// `--target-version 1.38`: the apis category judges against that minor (a planned upgrade)
    /// instead of the installed minor + [`apis::LOOKAHEAD`].
    pub target_minor: Option<u64>,
    pub config: VersionsConfig,
}

impl VersionsOptions {
    fn wants(&self, c: Category) -> bool {
        if self.categories.is_empty() {
            !(self.namespace.is_some() && c.cluster_wide())
        } else {
            self.categories.contains(&c)
        }
    }

    /// The categories left out because the scan is scoped to a namespace.
    pub fn left_out(&self) -> Vec<Category> {
        if !self.categories.is_empty() || self.namespace.is_none() {
            return Vec::new();
        }
        Category::ALL.into_iter().filter(|c| c.cluster_wide()).collect()
    }

    fn track_for(&self, rule: Option<Track>) -> Track {
        rule.or(self.config.track).unwrap_or_default()
    }
}

/// Where upstream answers come from.
#[derive(Clone)]
pub struct Sources {
    /// Kubernetes release pointers, GitHub releases, ArtifactHub.
    pub upstream: Upstream,
    /// Container registries and OCI/classic chart repositories.
    pub registry: images::Registry,
}

impl Sources {
    /// The sources for a config: upstream lookups cached under `cache_dir` (none: no cache) for
    /// `ttl`; `github_token` is sent to the GitHub API only.
    /// `env` looks up the credential variables the config names, and `GITHUB_TOKEN` (the app
    /// passes the process environment; nothing here reads it).
    pub fn new(
        config: &VersionsConfig,
        cache_dir: Option<PathBuf>,
        ttl: std::time::Duration,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Sources, String> {
        let options = ClientOptions {
            registries: config.registries.clone(),
            cache_dir,
            cache_ttl: ttl,
            ..ClientOptions::default()
        };
        let github_token = env("GITHUB_TOKEN");
        let client = Arc::new(Registries::new(options, env).map_err(|e| e.to_string())?);
        Ok(Sources {
            upstream: Upstream::new(client.clone(), ttl, github_token),
            registry: images::Registry::new(client),
        })
    }
}

/// Why a scan could not run at all (a failed lookup is a row with status error instead).
#[derive(Debug, thiserror::Error)]
pub enum VersionsError {
    #[error(transparent)]
    Live(#[from] crate::source::live::LiveError),
}

/// Scan the cluster and upstream; one row per installed component. `progress` hears of each
/// chart and repository looked up, and of the cache hits so far.
pub async fn scan(
    cluster: &Cluster,
    options: &VersionsOptions,
    sources: &Sources,
    progress: &dyn Progress,
) -> Result<VersionsReport, VersionsError> {
    progress.start("reading the cluster", None);
    let ns = options.namespace.as_deref();
    let mut rows: Vec<VersionRow> = Vec::new();
    let client = cluster.client();
    let kinds = cluster.kinds().await?;
    let reader = cluster.reader();
    // Pods and workloads are read trimmed to what the inventory reads (decoded page by page and
    // kept compact); the inventory decodes one object at a time from those as it goes. Nodes are few
    // and read whole.
    let list = |api_version: &'static str, kind: &'static str, namespace: Option<String>| {
        let kinds = &kinds;
        let reader = &reader;
        async move {
            let resolved = kinds.resolve(api_version, kind).map_err(|e| e.to_string())?;
            let trim = if kind == "Pod" { inventory::POD_TRIM } else { inventory::WORKLOAD_TRIM };
            reader.list_trimmed(&resolved, namespace.as_deref(), false, "", trim).await.map_err(|e| e.to_string())
        }
    };

    // Images: workloads in scope, plus kube-system for the cluster category.
    let mut uses = Vec::new();
    if options.wants(Category::Cluster) {
        match list("v1", "Pod", Some("kube-system".into())).await {
            Ok(pods) => {
                for u in inventory::static_pod_images(decoded(&pods)) {
                    uses.push((Category::Cluster, u));
                }
                match workloads(&list, Some("kube-system")).await {
                    Ok(w) => uses.extend(
                        inventory::workload_images(each(&w), decoded(&pods))
                            .into_iter()
                            .filter(inventory::is_cluster_addon)
                            .map(|u| (Category::Cluster, u)),
                    ),
                    Err(e) => rows.push(VersionRow::new(Category::Cluster, "kube-proxy/coredns", "?").error(e)),
                }
            }
            Err(e) => rows.push(VersionRow::new(Category::Cluster, "control plane", "?").error(e)),
        }
    }
    if options.wants(Category::Workloads) {
        match (workloads(&list, ns).await, list("v1", "Pod", ns.map(str::to_string)).await) {
            (Ok(w), Ok(pods)) => uses.extend(
                inventory::workload_images(each(&w), decoded(&pods))
                    .into_iter()
                    .filter(|u| !inventory::is_cluster_addon(u))
                    .map(|u| (Category::Workloads, u)),
            ),
            (Err(e), _) | (_, Err(e)) => rows.push(VersionRow::new(Category::Workloads, "workloads", "?").error(e)),
        }
    }

    if options.wants(Category::Cluster) {
        rows.push(cluster_version(client, options, sources).await);
    }
    if options.wants(Category::Nodes) {
        let nodes = match kinds.resolve("v1", "Node") {
            Ok(kind) => reader.list(&kind, None).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match nodes {
            Ok(nodes) => rows.extend(node_rows(&nodes, options, sources).await),
            Err(e) => rows.push(VersionRow::new(Category::Nodes, "nodes", "?").error(e)),
        }
    }
    // Of each deployed release, only its chart row's inputs and the objects of its manifest whose
    // apiVersion is in the table are kept: one decoded release is held at a time.
    let mut release_apis: Vec<apis::ApiUse> = Vec::new();
    let mut release_crds: Vec<apis::ReleaseCrd> = Vec::new();
    // The deprecated APIs looked for: the table, and what the API server warns of (asked before
    // the releases are read, so their objects of an API only the server knows are kept too).
    let known = if options.wants(Category::Apis) {
        progress.start("asking the API server which APIs it deprecates", None);
        apis::Deprecations::table().with_server(apis::server_deprecations(&kinds, &reader, ns).await)
    } else {
        apis::Deprecations::table()
    };
    if options.wants(Category::Helm) || options.wants(Category::Apis) {
        let read = cluster
            .store()
            .deployed_map(ns, |r| match r.release.decode() {
                Ok(rel) => {
                    if options.wants(Category::Apis) {
                        let origin = format!("release {}/{} revision {}", rel.namespace, rel.name, rel.revision);
                        release_apis.extend(apis::release_objects(&origin, &rel.manifest, &known));
                        let (crds, _) = crate::engine::drift::crds::chart_crds(&rel, &[]);
                        release_crds.extend(
                            crds.into_iter().map(|crd| apis::ReleaseCrd { namespace: rel.namespace.clone(), crd }),
                        );
                    }
                    Ok(charts::InstalledChart::of(&rel))
                }
                Err(e) => Err((r.namespace, r.name, e.to_string())),
            })
            .await;
        match read {
            Ok(revisions) => {
                let mut releases = Vec::new();
                for r in revisions {
                    match r {
                        Ok(chart) => releases.push(chart),
                        Err((namespace, name, e)) => {
                            if options.wants(Category::Helm) {
                                let mut row = VersionRow::new(Category::Helm, name, "?").error(e);
                                row.namespace = Some(namespace);
                                rows.push(row);
                            }
                        }
                    }
                }
                if options.wants(Category::Helm) {
                    rows.extend(
                        charts::release_rows(&releases, options, &sources.upstream, &sources.registry, progress).await,
                    );
                }
            }
            Err(e) => rows.push(VersionRow::new(Category::Helm, "releases", "?").error(e.to_string())),
        }
    }
    if options.config.image_pull_secrets {
        rows.extend(read_pull_secrets(client, &uses, &sources.registry).await);
    }
    rows.extend(images::image_rows(uses, options, &sources.registry, progress).await);
    if options.wants(Category::Apis) {
        progress.start("reading API versions", None);
        let live = apis::live_objects(&kinds, &reader, ns, &known).await;
        // Without the cluster row (scoped to a namespace, or not asked for), GET /version alone:
        // any authenticated user may read it, and it needs no upstream lookup.
        let server = match rows_server_version(&rows) {
            Some(v) => Some(v),
            None => client.apiserver_version().await.ok().and_then(|i| tags::kubernetes_version(&i.git_version)),
        };
        let horizon = apis::Horizon { minor: server.map(|s| s.1), target: options.target_minor };
        rows.extend(apis::api_rows(horizon, &known, &release_apis, &options.manifests, &live));
        if !release_crds.is_empty() {
            let crds = kinds
                .resolve(crate::engine::drift::crds::CRD_API_VERSION, crate::engine::drift::crds::CRD_KIND)
                .map_err(|e| e.to_string());
            match crds {
                Ok(kind) => match reader.list(&kind, None).await {
                    Ok(live) => rows.extend(apis::crd_rows(&release_crds, &live)),
                    Err(e) => rows.push(crds_unlisted(&e, ns.is_some(), release_crds.len())),
                },
                Err(e) => rows.push(VersionRow::new(Category::Apis, "CustomResourceDefinitions", "?").error(e)),
            }
        }
    }

    let mut report = finish(rows, options, sources);
    report.cluster = cluster.name().to_string();
    Ok(report)
}

/// The row for the releases' CRDs when they could not be listed. CustomResourceDefinitions are
/// cluster-wide: a user with a namespace's rights only, scanning with `-n`, may not list them.
/// Like the other cluster-wide categories a namespaced scan leaves out, that is a named note (an
/// unknown row that says what was not checked, and the permission it needs), not an error; a
/// forbidden LIST in a cluster-wide scan, or any other failure, stays an error.
fn crds_unlisted(e: &crate::source::live::LiveError, namespaced: bool, crds: usize) -> VersionRow {
    let row = VersionRow::new(Category::Apis, "CustomResourceDefinitions", "?");
    match e {
        crate::source::live::LiveError::Forbidden { .. } if namespaced => row.unknown(format!(
            "not checked: the releases ship {crds} CRD(s) (crds/), and CustomResourceDefinitions are \
             cluster-wide: this scan may not list them (it needs list on \
             customresourcedefinitions.apiextensions.k8s.io; README, Versions)"
        )),
        _ => row.error(e.to_string()),
    }
}

/// Opt-in (`versions.image_pull_secrets: true`): the imagePullSecrets the workloads name, read
/// (GET, once each) into the registry client's memory as credentials. Never printed: a failed read
/// is a row naming the Secret, not its content.
async fn read_pull_secrets(
    client: &Client,
    uses: &[(Category, inventory::ImageUse)],
    registry: &images::Registry,
) -> Vec<VersionRow> {
    use k8s_openapi::api::core::v1::Secret;
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for (category, u) in uses {
        for name in &u.pull_secrets {
            if !seen.insert((u.namespace.clone(), name.clone())) {
                continue;
            }
            let what = format!("imagePullSecret {}/{name}", u.namespace);
            let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), &u.namespace);
            let failed = match api.get(name).await {
                Err(e) => Some(crate::source::live::error_text(&e)),
                Ok(secret) => {
                    let data = secret.data.unwrap_or_default();
                    match data.get(".dockerconfigjson").or_else(|| data.get(".dockercfg")) {
                        None => Some("it has no .dockerconfigjson key".to_string()),
                        Some(bytes) => registry.0.add_pull_secret(&bytes.0).err(),
                    }
                }
            };
            if let Some(why) = failed {
                let mut row = VersionRow::new(*category, what.clone(), "?").error(format!("{what}: {why}"));
                row.namespace = Some(u.namespace.clone());
                rows.push(row);
            }
        }
    }
    rows
}

/// The installed Kubernetes minor, from the cluster row, for the apis category.
fn rows_server_version(rows: &[VersionRow]) -> Option<(u64, u64, u64)> {
    rows.iter()
        .find(|r| r.category == Category::Cluster && r.name == "kubernetes")
        .and_then(|r| tags::kubernetes_version(&r.installed))
}

/// Sort, fold groups, keep the rows `--show` asks for, and count.
fn finish(rows: Vec<VersionRow>, options: &VersionsOptions, sources: &Sources) -> VersionsReport {
    let mut rows = fold_groups(rows, &options.config);
    rows.sort_by(|a, b| {
        (a.category, &a.namespace, &a.name, &a.component).cmp(&(b.category, &b.namespace, &b.name, &b.component))
    });
    let total = rows.len();
    let keep = |r: &VersionRow| match options.show {
        Show::All => true,
        Show::Default => !r.helm_managed && r.ignored.is_none(),
        Show::Outdated => !r.helm_managed && r.ignored.is_none() && r.status.is_outdated(),
    };
    // Hidden rows never count towards the status: Helm-managed images are not looked up then.
    let rows: Vec<VersionRow> = rows.into_iter().filter(keep).collect();
    let hidden = total - rows.len();
    let mut report = VersionsReport::new(rows, hidden);
    report.summary.requests = sources.registry.request_counts();
    report.summary.left_out = options.left_out();
    report
}

/// Rows of the same image, installed (and probed) version and category whose object names match
/// one group fold into one row. Copies whose probes answered different versions stay apart: one
/// row per version, so a folded row never hides a copy that is behind.
fn fold_groups(rows: Vec<VersionRow>, config: &VersionsConfig) -> Vec<VersionRow> {
    if config.groups.is_empty() {
        return rows;
    }
    let mut out: Vec<VersionRow> = Vec::new();
    type GroupKey = (Category, Option<String>, String, Option<String>, Option<String>, String, Option<String>);
    let mut index: BTreeMap<GroupKey, usize> = BTreeMap::new();
    for mut r in rows {
        let short = r.name.rsplit('/').next().unwrap_or(&r.name).to_string();
        let group = config.group_of(r.namespace.as_deref().unwrap_or(""), &short).map(|g| g.name.clone());
        let Some(group) = group else {
            out.push(r);
            continue;
        };
        let key = (
            r.category,
            r.namespace.clone(),
            group.clone(),
            r.component.clone(),
            r.image.clone(),
            r.installed.clone(),
            r.probed.clone(),
        );
        match index.get(&key) {
            Some(&i) => {
                let g = &mut out[i];
                g.count += r.count;
                g.objects.append(&mut r.objects);
                for d in r.running_digests {
                    if !g.running_digests.contains(&d) {
                        g.running_digests.push(d);
                    }
                }
                // The group shows its worst row's answer.
                if r.status > g.status {
                    g.status = r.status;
                    g.why = r.why;
                }
            }
            None => {
                index.insert(key, out.len());
                r.name = group;
                out.push(r);
            }
        }
    }
    out
}

/// Deployments, StatefulSets, DaemonSets and CronJobs in `namespace` (`None`: all).
async fn workloads<F, Fut>(list: &F, namespace: Option<&str>) -> Result<Vec<(&'static str, Arc<Vec<IValue>>)>, String>
where
    F: Fn(&'static str, &'static str, Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<Arc<Vec<IValue>>, String>>,
{
    let mut out = Vec::new();
    for (api_version, kind) in
        [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"), ("batch/v1", "CronJob")]
    {
        out.push((kind, list(api_version, kind, namespace.map(str::to_string)).await?));
    }
    Ok(out)
}

/// The objects of a compact list, each decoded as it is taken.
fn decoded(list: &[IValue]) -> impl Iterator<Item = Value> + '_ {
    list.iter().map(|o| Value::from(o.clone()))
}

/// The workloads of [`workloads`] as `(kind, object)`, each decoded as it is taken.
fn each(workloads: &[(&'static str, Arc<Vec<IValue>>)]) -> impl Iterator<Item = (String, Value)> {
    workloads.iter().flat_map(|(kind, list)| list.iter().map(move |o| (kind.to_string(), Value::from(o.clone()))))
}

/// The `kubernetes` row: `/version` against the release pointers.
async fn cluster_version(client: &Client, options: &VersionsOptions, sources: &Sources) -> VersionRow {
    let row = VersionRow::new(Category::Cluster, "kubernetes", "?");
    match client.apiserver_version().await {
        Ok(info) => {
            let mut row = row;
            row.installed = info.git_version;
            kubernetes_lookup(row, options, sources).await
        }
        Err(e) => row.error(format!("GET /version: {}", crate::source::live::error_text(&e))),
    }
}

/// A Kubernetes version row (cluster or kubelet) against `stable-1.N.txt` and `stable.txt`.
async fn kubernetes_lookup(mut row: VersionRow, options: &VersionsOptions, sources: &Sources) -> VersionRow {
    let base = &options.config.upstreams.kubernetes;
    let Some((_, minor, _)) = tags::kubernetes_version(&row.installed) else {
        let why = format!("{:?} is not a Kubernetes version", row.installed);
        return row.unknown(why);
    };
    let patch = sources.upstream.kubernetes_pointer(base, &format!("stable-1.{minor}.txt")).await;
    let stable = sources.upstream.kubernetes_pointer(base, "stable.txt").await;
    row.source = Some(format!("{}/stable-1.{minor}.txt", base.trim_end_matches('/')));
    match (&patch, &stable) {
        (Err(e), _) | (_, Err(e)) => row.error(e.to_string()),
        (Ok(p), Ok(s)) => judge::kubernetes_row(row, Some(p), Some(s), options.track_for(None)),
    }
}

/// kubelet and container runtime rows, nodes with the same version grouped with a count.
async fn node_rows(nodes: &[Value], options: &VersionsOptions, sources: &Sources) -> Vec<VersionRow> {
    let mut out = Vec::new();
    let mut containerd: Option<Result<Vec<crate::source::upstream::GithubRelease>, String>> = None;
    for g in inventory::node_groups(nodes) {
        let mut row = VersionRow::new(Category::Nodes, g.component.clone(), g.version.clone());
        row.count = g.nodes.len();
        row.objects = g.nodes.clone();
        let row = if g.component == "kubelet" {
            kubernetes_lookup(row, options, sources).await
        } else if g.component == "containerd" {
            if containerd.is_none() {
                containerd = Some(
                    sources
                        .upstream
                        .github_releases(&options.config.upstreams.github, "containerd/containerd")
                        .await
                        .map_err(|e| e.to_string()),
                );
            }
            let mut row = row;
            row.source = Some(format!(
                "{}/repos/containerd/containerd/releases",
                options.config.upstreams.github.trim_end_matches('/')
            ));
            match containerd.as_ref().expect("set above") {
                Err(e) => row.error(e.clone()),
                Ok(releases) => {
                    let tags: Vec<&str> =
                        releases.iter().filter(|r| !r.prerelease).map(|r| r.tag_name.as_str()).collect();
                    let mut row = judge::tagged_row(row, &tags, options.track_for(None));
                    if let Some(latest) = &row.latest {
                        // A current row's latest is written as the node reports it ("2.1.4"); the
                        // release's tag is "v2.1.4".
                        let bare = |t: &str| t.trim_start_matches('v').to_string();
                        row.notes =
                            releases.iter().find(|r| bare(&r.tag_name) == bare(latest)).map(|r| r.html_url.clone());
                    }
                    row
                }
            }
        } else {
            let why =
                format!("no upstream source for container runtime {:?} (only containerd is looked up)", g.component);
            row.unknown(why)
        };
        out.push(row);
    }
    if out.is_empty() {
        // Not an error: a cluster may have no nodes registered yet.
        return out;
    }
    out
}

/// Rows for objects the user ignored: kept (hidden unless `--show all`) with the rule's note.
pub fn mark_ignored(mut row: VersionRow, rule: &crate::engine::select::ObjectRule) -> VersionRow {
    row.ignored = Some(rule.describe());
    row.status = VersionStatus::Unknown;
    row.why = Some(format!("ignored by {}", rule.describe()));
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner(name: &str, installed: &str, status: VersionStatus) -> VersionRow {
        let mut r = VersionRow::new(Category::Workloads, format!("Deployment/{name}"), installed);
        r.namespace = Some("ci".into());
        r.image = Some("registry.example/acme/runner:latest".into());
        r.status = status;
        r.objects = vec![format!("Deployment ci/{name}")];
        r
    }

    #[test]
    fn groups_fold_copies_of_one_version_and_keep_versions_apart() {
        let mut config = VersionsConfig::default();
        config.groups.push(config::GroupRule {
            name: "runners".into(),
            namespace: None,
            name_regex: "^runner-".into(),
            compiled: Some(regex::Regex::new("^runner-").unwrap()),
            origin: String::new(),
        });
        let rows = vec![
            runner("runner-a", "2.4.0", VersionStatus::Current),
            runner("runner-b", "2.3.1", VersionStatus::MinorBehind),
            runner("runner-c", "2.4.0", VersionStatus::Current),
            runner("web", "2.4.0", VersionStatus::Current),
            // A version tag whose app reported another build: its own row.
            VersionRow { probed: Some("2.4.1".into()), ..runner("runner-d", "2.4.0", VersionStatus::Current) },
        ];
        let out = fold_groups(rows, &config);
        let got: Vec<(&str, &str, usize, VersionStatus)> =
            out.iter().map(|r| (r.name.as_str(), r.installed.as_str(), r.count, r.status)).collect();
        assert_eq!(
            got,
            vec![
                ("runners", "2.4.0", 2, VersionStatus::Current),
                ("runners", "2.3.1", 1, VersionStatus::MinorBehind),
                ("Deployment/web", "2.4.0", 1, VersionStatus::Current),
                ("runners", "2.4.0", 1, VersionStatus::Current),
            ]
        );
        assert_eq!(out[3].probed.as_deref(), Some("2.4.1"));
        assert_eq!(out[0].objects, vec!["Deployment ci/runner-a", "Deployment ci/runner-c"]);
    }

    #[test]
    fn a_namespace_leaves_the_cluster_wide_categories_out_unless_named() {
        let options = |namespace: Option<&str>, named: &[Category]| VersionsOptions {
            namespace: namespace.map(str::to_string),
            categories: named.iter().copied().collect(),
            show: Show::Default,
            manifests: Vec::new(),
            target_minor: None,
            config: VersionsConfig::default(),
        };
        let wanted = |o: &VersionsOptions| Category::ALL.into_iter().filter(|c| o.wants(*c)).collect::<Vec<_>>();

        let scoped = options(Some("shop"), &[]);
        assert_eq!(wanted(&scoped), vec![Category::Helm, Category::Workloads, Category::Apis]);
        assert_eq!(scoped.left_out(), vec![Category::Cluster, Category::Nodes]);

        let all = options(None, &[]);
        assert_eq!(wanted(&all), Category::ALL.to_vec());
        assert!(all.left_out().is_empty());

        // Named categories are scanned whatever the scope, and nothing is said to be left out.
        let named = options(Some("shop"), &[Category::Cluster, Category::Workloads]);
        assert_eq!(wanted(&named), vec![Category::Cluster, Category::Workloads]);
        assert!(named.left_out().is_empty());
    }

    #[test]
    fn a_namespaced_scan_forbidden_to_list_crds_gets_a_note_and_a_cluster_wide_one_an_error() {
        use crate::source::live::LiveError;
        let forbidden = LiveError::Forbidden {
            resource: "customresourcedefinitions".into(),
            scope: "cluster-wide".into(),
            source: std::sync::Arc::new(kube::Error::Api(
                kube::core::Status::failure("User \"dev\" cannot list resource", "Forbidden").with_code(403).boxed(),
            )),
        };
        let note = crds_unlisted(&forbidden, true, 2);
        assert_eq!(note.status, VersionStatus::Unknown);
        let why = note.why.as_deref().unwrap();
        assert!(
            why.contains("ship 2 CRD(s)") && why.contains("list on customresourcedefinitions.apiextensions.k8s.io"),
            "{why}"
        );
        assert_eq!(crds_unlisted(&forbidden, false, 2).status, VersionStatus::Error);
        let other = LiveError::List {
            resource: "customresourcedefinitions".into(),
            scope: "cluster-wide".into(),
            message: "timeout".into(),
        };
        assert_eq!(crds_unlisted(&other, true, 2).status, VersionStatus::Error);
    }
}
