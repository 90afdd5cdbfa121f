//! `kubectl drift mcp`, and serve's `/mcp`: the Model Context Protocol, through the official Rust
//! SDK (rmcp), as an adapter over the commands. The tools ([`tools`]) parse their arguments and
//! call the engines `release`, `manifests`, `orphans` and `versions` call, on the clusters
//! connected once at start (or serve's one cluster), and answer with the commands' `-o json`,
//! bounded ([`bound`]). Under serve, the last dashboard scans are also resources. Standard output
//! carries only the protocol; logs go to stderr.

pub(crate) mod bound;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool_handler};

use crate::app::cli::McpArgs;
use crate::app::config::{Config, ConfigError};
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::app::serve::scope::Scope;
use crate::engine::compare::rules::IgnoreRule;
use crate::source::cluster::Cluster;

/// What every tool call shares: the clusters and what was read from the config file at start.
pub(crate) struct Shared {
    /// The clusters, connected once (a call takes a fresh discovery and LIST cache of each);
    /// under serve, its one cluster, asked of the server at each call (it may have reconnected).
    clusters: Clusters,
    /// How many clusters are read at once.
    parallel: usize,
    /// The release and manifests ignore rules of the config file.
    rules: Vec<IgnoreRule>,
    /// The `orphans:` section of the config file.
    orphans: Option<crate::engine::orphans::rules::Section>,
    /// The `versions:` section of the config file (its defaults when absent).
    versions: crate::engine::versions::VersionsConfig,
    /// Where upstream answers are cached (as `versions`).
    cache_dir: Option<PathBuf>,
    /// The kubectl that renders kustomizations (never used to talk to the cluster).
    kubectl: PathBuf,
    /// The rows of an answer when a call does not say (`--max-rows`).
    max_rows: usize,
    /// Under `serve -n NS`: the only namespace a call may look in (the dashboard's scope).
    only_namespace: Option<String>,
}

/// Clusters by name, each built or why it could not be.
pub(crate) type Named = Vec<(String, Result<Cluster, String>)>;

enum Clusters {
    Connected(Named),
    Dashboard(Arc<dyn Dashboard>),
}

/// What serve's `/mcp` reads of the dashboard. serve's server implements it and hands itself in
/// ([`http_service`]), so this adapter never imports the server.
pub trait Dashboard: Send + Sync {
    /// The one cluster the dashboard shows, as connected now (it may have reconnected since).
    fn cluster(&self) -> Cluster;
    /// The name the dashboard's results carry (`--cluster-name`, else the context).
    fn cluster_name(&self) -> String;
    /// The scopes the dashboard scans.
    fn scopes(&self) -> Vec<Scope>;
    /// The last scan of `scope`: when it ran, as `/api/status` says it, and its result.
    fn last_scan(&self, scope: Scope) -> LastScan;
}

/// A dashboard scope's last scan.
pub struct LastScan {
    /// The scan's information as `/api/status` shows it (`ScanInfo`).
    pub scan: serde_json::Value,
    /// Its result; `None` before the first scan.
    pub report: Option<ScopeReport>,
}

/// A dashboard scope's result, as the command of that scope reports it.
pub enum ScopeReport {
    Releases(crate::report::DriftReport),
    Orphans(crate::report::orphans::OrphanReport),
    /// The version report as the command's `-o json` wrote it.
    Versions(serde_json::Value),
}

/// The MCP server: its tools and, under serve, the dashboard's last scans as resources.
#[derive(Clone)]
pub struct DriftMcp {
    shared: Arc<Shared>,
    dashboard: Option<Arc<dyn Dashboard>>,
    tool_router: ToolRouter<DriftMcp>,
}

const INSTRUCTIONS: &str = "kubectl-drift finds drift between what Helm releases or manifests deployed and the live Kubernetes objects, objects nothing uses (orphans), and versions behind upstream. Every tool only reads. Answers are bounded: a large one keeps findings first and says how to narrow it (one release, one namespace). Secret values are never shown.";

impl DriftMcp {
    fn new(shared: Shared, dashboard: Option<Arc<dyn Dashboard>>) -> DriftMcp {
        let mut tool_router = DriftMcp::tool_router();
        for (name, title, open_world) in tools::ANNOTATIONS {
            if let Some(route) = tool_router.map.get_mut(name) {
                route.attr.annotations = Some(
                    rmcp::model::ToolAnnotations::with_title(title)
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        .open_world(open_world),
                );
            }
        }
        if dashboard.is_some() {
            // The paths would be read from the server's disk, not the assistant's.
            tool_router.remove_route("manifests_drift");
        }
        DriftMcp { shared: Arc::new(shared), dashboard, tool_router }
    }

    /// The clusters a call asks: every one, or the one named `context`.
    fn clusters(&self, context: Option<&str>) -> Result<Named, String> {
        let all: Named = match &self.shared.clusters {
            Clusters::Connected(c) => {
                c.iter().map(|(name, c)| (name.clone(), c.as_ref().map(Cluster::fresh).map_err(Clone::clone))).collect()
            }
            Clusters::Dashboard(dashboard) => vec![(dashboard.cluster_name(), Ok(dashboard.cluster().fresh()))],
        };
        let Some(context) = context else { return Ok(all) };
        let names: Vec<String> = all.iter().map(|(n, _)| n.clone()).collect();
        let one: Vec<_> = all.into_iter().filter(|(n, _)| n == context).collect();
        if one.is_empty() {
            return Err(format!("context {context} is not one this server was started with ({})", names.join(", ")));
        }
        Ok(one)
    }
}

/// Read the config file once, as the commands read it (a bad file stops the start, naming it).
fn shared(
    config: Option<&std::path::Path>,
    env: &Environment,
    clusters: Clusters,
    parallel: usize,
    max_rows: usize,
    only_namespace: Option<String>,
) -> Result<Shared, ConfigError> {
    let config = Config::read(config)?;
    Ok(Shared {
        clusters,
        parallel,
        rules: config.ignore_rules(&[])?,
        orphans: if config.has_orphans() { config.orphans()? } else { None },
        versions: config.versions(&[])?,
        cache_dir: crate::app::versions::versions_cache_dir(env, false),
        kubectl: Environment::lookup("DRIFT_KUBECTL").map(PathBuf::from).unwrap_or_else(|| "kubectl".into()),
        max_rows,
        only_namespace,
    })
}

/// What a tool says of a cluster that could not be built. Without any kubeconfig the likely cause
/// is the host: many start a stdio server with a few safe environment variables only (the official
/// Python SDK's client passes HOME, LOGNAME, PATH, SHELL, TERM and USER), so the user's
/// `KUBECONFIG` never arrives; say how to pass it (docs/mcp.md, "Which kubeconfig").
fn unbuilt(e: &crate::app::context::ContextError) -> String {
    match e {
        crate::app::context::ContextError::Infer(_) => format!(
            "{e}; an MCP host may start this server without your environment: put \"--kubeconfig\", \"/path/to/kubeconfig\" \
             (and \"--context\", \"NAME\") before \"mcp\" in the server's args, or KUBECONFIG in its env"
        ),
        _ => e.to_string(),
    }
}

/// `kubectl drift mcp`: connect to the selected clusters once, then serve MCP on stdin and stdout
/// until the client closes them.
pub async fn run_stdio(settings: Settings, env: &Environment, args: McpArgs) -> Result<(), AppError> {
    let clusters = settings.clusters().await?.into_iter().map(|(name, c)| (name, c.map_err(|e| unbuilt(&e)))).collect();
    let shared = shared(
        args.config.as_deref(),
        env,
        Clusters::Connected(clusters),
        settings.parallel,
        args.max_rows as usize,
        None,
    )?;
    let server = DriftMcp::new(shared, None);
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    let running =
        server.serve((stdin, stdout)).await.map_err(|e| AppError::Usage(format!("MCP session did not start: {e}")))?;
    tracing::debug!("MCP session started on stdio");
    running.waiting().await.map_err(|e| AppError::Usage(format!("MCP session failed: {e}")))?;
    Ok(())
}

/// serve's `/mcp`: the tools (all but manifests_drift) on the dashboard's cluster and scope, and
/// its last scans as resources, over streamable HTTP. The caller guards it with serve's
/// authentication. `config`: serve's `--config`; `namespace`: its `-n` (the only namespace a call
/// may look in).
pub fn http_service(
    dashboard: Arc<dyn Dashboard>,
    config: Option<&std::path::Path>,
    namespace: Option<String>,
) -> Result<
    rmcp::transport::streamable_http_server::StreamableHttpService<
        DriftMcp,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    >,
    ConfigError,
> {
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let env = Environment::from_process();
    let shared = shared(config, &env, Clusters::Dashboard(dashboard.clone()), 1, 50, namespace)?;
    let mcp = DriftMcp::new(shared, Some(dashboard));
    // serve's own checks guard the route: its authentication, and its same-origin rule for
    // requests from a browser. The Host check is rmcp's DNS-rebinding guard for a local server;
    // serve may listen on any address (with --auth), so it is left to the authentication.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts().with_json_response(true);
    Ok(StreamableHttpService::new(move || Ok(mcp.clone()), Default::default(), config))
}

/// The dashboard's last scan of `scope`: when it ran (as `/api/status` says it) and its report as
/// the command's `-o json` (null before the first scan), bounded as the tools' answers are.
fn last_scan(dashboard: &dyn Dashboard, scope: Scope, limit: usize) -> Result<serde_json::Value, serde_json::Error> {
    use crate::report::fleet::{ClusterResult, Fleet};
    fn one<T>(dashboard: &dyn Dashboard, report: T) -> Fleet<T> {
        Fleet::new(vec![ClusterResult::report(dashboard.cluster_name(), report)])
    }
    let narrow = "Call the tool of this scope for one release or namespace.";
    let LastScan { scan, report } = dashboard.last_scan(scope);
    let report = match report {
        None => None,
        Some(ScopeReport::Releases(r)) => {
            Some(bound::bound(&one(dashboard, r), limit, bound::MAX_JSON_BYTES, narrow)?.json)
        }
        Some(ScopeReport::Orphans(r)) => {
            Some(bound::bound(&one(dashboard, r), limit, bound::MAX_JSON_BYTES, narrow)?.json)
        }
        Some(ScopeReport::Versions(json)) => {
            let report: crate::report::versions::VersionsReport = serde_json::from_value(json)?;
            Some(bound::bound(&one(dashboard, report), limit, bound::MAX_JSON_BYTES, narrow)?.json)
        }
    };
    Ok(serde_json::json!({"scan": scan, "report": report}))
}

/// A resource's URI for a dashboard scope.
fn resource_uri(scope: Scope) -> String {
    format!("drift://dashboard/{}", scope.name())
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for DriftMcp {
    fn get_info(&self) -> ServerConfig {
        let capabilities = if self.dashboard.is_some() {
            ServerCapabilities::builder().enable_tools().enable_resources().build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("kubectl-drift", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let Some(dashboard) = &self.dashboard else { return Ok(ListResourcesResult::default()) };
        let resources = dashboard
            .scopes()
            .into_iter()
            .map(|scope| {
                Resource::new(resource_uri(scope), format!("dashboard {}", scope.name()))
                    .with_description(format!(
                        "The dashboard's last {} scan: when it ran and its report (bounded, findings first)",
                        scope.name()
                    ))
                    .with_mime_type("application/json")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let not_found = || ErrorData::resource_not_found(format!("no resource {}", request.uri), None);
        let Some(dashboard) = &self.dashboard else { return Err(not_found()) };
        let Some(scope) = Scope::ALL.into_iter().find(|s| resource_uri(*s) == request.uri) else {
            return Err(not_found());
        };
        let json = last_scan(dashboard.as_ref(), scope, self.shared.max_rows).map_err(|e| {
            ErrorData::internal_error(format!("could not write the last {} scan: {e}", scope.name()), None)
        })?;
        let contents = ResourceContents::text(json.to_string(), request.uri.clone()).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
