//! Resolving flags and environment into settings: kubectl vs Helm plugin mode, kubeconfig and
//! context, namespace, colour, and the Kubernetes client.
//!
//! The process environment is read once into [`Environment`] (`app/environment.rs`).

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::app::cli::{ColorMode, GlobalArgs};
use crate::app::environment::Environment;
use crate::source::cluster::{Cluster, ClusterParts, Target};
use crate::source::helm::Driver;

/// Why the connection settings could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The kubeconfig file named by --kubeconfig could not be read.
    #[error("failed to read kubeconfig {path}: {source}")]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No usable configuration (kubeconfig, context, or in-cluster) was found.
    #[error("failed to load Kubernetes configuration{detail}: {source}")]
    Config {
        detail: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Neither a kubeconfig nor an in-cluster environment was found.
    #[error("failed to find Kubernetes configuration (no kubeconfig, not in a cluster): {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error("failed to create the Kubernetes client: {0}")]
    Client(#[source] kube::Error),
    /// HELM_DRIVER is not one we can read, or its SQL connection string is invalid.
    #[error(transparent)]
    Driver(#[from] crate::source::helm::StorageError),
    /// `--context` names a context the kubeconfig does not have.
    #[error("no context {name:?} in {source_name} (contexts: {contexts})")]
    NoContext { name: String, source_name: String, contexts: String },
    /// `--all-contexts`, and the kubeconfig names no context.
    #[error("--all-contexts: the kubeconfig{path} has no contexts")]
    NoContexts { path: String },
}

/// Flags and environment resolved into what the commands need.
#[derive(Debug, Clone)]
pub struct Settings {
    pub kubeconfig: Option<PathBuf>,
    /// The contexts named (`--context a,b`, or HELM_KUBECONTEXT under Helm); empty: the current one.
    pub contexts: Vec<String>,
    /// `--all-contexts`: every context of the kubeconfig.
    pub all_contexts: bool,
    /// How many clusters are read at once.
    pub parallel: usize,
    /// The namespace asked for with -n (or HELM_NAMESPACE), if any.
    pub explicit_namespace: Option<String>,
    pub all_namespaces: bool,
    pub color: bool,
    /// Progress may be drawn on stderr: it is a terminal that can redraw a line, and
    /// `--no-progress` was not given. Each command also needs a human output format.
    pub progress: bool,
    pub request_timeout: Option<Duration>,
    pub driver: Driver,
    pub under_helm: bool,
    /// `--releases-in-flight` of a command that checks releases (`None`: the check's default),
    /// given to every cluster built ([`Settings::cluster_for`]).
    pub releases_in_flight: Option<usize>,
}

impl Settings {
    pub fn resolve(global: &GlobalArgs, env: &Environment) -> Result<Settings, ContextError> {
        let color = match global.color {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => env.stdout_is_tty && !env.no_color && !env.term_dumb,
        };
        // Log lines asked for (-v, --log-level) share stderr: no progress line redrawn among them.
        let logging = global.verbose > 0 || global.log_level.is_some();
        let progress = !global.no_progress && !logging && env.stderr_is_tty && !env.term_dumb && !env.term_unset;
        // Helm strips -n/--kube-context before running a plugin and passes them as env. An
        // explicit flag given to the plugin itself still wins.
        let explicit_namespace =
            global.namespace.clone().or_else(|| if env.under_helm { env.helm_namespace.clone() } else { None });
        let contexts = match (&global.context[..], env.under_helm, &env.helm_kube_context) {
            ([], true, Some(ctx)) => vec![ctx.clone()],
            (given, _, _) => given.iter().filter(|c| !c.is_empty()).cloned().collect(),
        };
        let request_timeout = global.request_timeout.limit();
        // --helm-driver / --helm-sql-connection win over HELM_DRIVER /
        // HELM_DRIVER_SQL_CONNECTION_STRING, which are read in both modes, as Helm reads them.
        let driver = Driver::select(
            global.helm_driver.as_deref().or(env.helm_driver.as_deref()),
            global.helm_sql_connection.as_ref().or(env.helm_sql_connection.as_ref()).map(|c| c.0.as_str()),
            request_timeout,
        )?;
        Ok(Settings {
            kubeconfig: global.kubeconfig.clone(),
            contexts,
            all_contexts: global.all_contexts,
            parallel: usize::from(global.parallel),
            explicit_namespace,
            all_namespaces: global.all_namespaces,
            color,
            progress,
            request_timeout,
            driver,
            under_helm: env.under_helm,
            releases_in_flight: None,
        })
    }

    /// The one context named, if exactly one was (what a single-cluster command such as `serve`
    /// connects to; several are refused before).
    pub fn context(&self) -> Option<&str> {
        match &self.contexts[..] {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Several clusters are selected (`--context a,b` or `--all-contexts`).
    pub fn many_clusters(&self) -> bool {
        self.all_contexts || self.contexts.len() > 1
    }

    /// The contexts to connect to, in order: those named, every one of the kubeconfig
    /// (`--all-contexts`), or `None` for the current context (or in-cluster).
    pub fn selected_contexts(&self) -> Result<Vec<Option<String>>, ContextError> {
        if self.all_contexts {
            let kc = self.read_kubeconfig()?;
            let shown = self.kubeconfig.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default();
            let names: Vec<Option<String>> = kc.contexts.into_iter().map(|c| Some(c.name)).collect();
            return if names.is_empty() { Err(ContextError::NoContexts { path: shown }) } else { Ok(names) };
        }
        if self.contexts.is_empty() {
            return Ok(vec![None]);
        }
        let mut seen = std::collections::BTreeSet::new();
        Ok(self.contexts.iter().filter(|c| seen.insert(c.as_str())).map(|c| Some(c.clone())).collect())
    }

    fn read_kubeconfig(&self) -> Result<Kubeconfig, ContextError> {
        match &self.kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .map_err(|source| ContextError::ReadKubeconfig { path: path.clone(), source }),
            None => Kubeconfig::read()
                .map_err(|source| ContextError::Config { detail: " (for its contexts)".into(), source }),
        }
    }

    /// The name a cluster's results carry: its context, else the kubeconfig's current context,
    /// else `in-cluster`.
    pub fn cluster_name(&self, context: Option<&str>) -> String {
        match context {
            Some(c) => c.to_string(),
            None => current_context(self.kubeconfig.as_deref()).unwrap_or_else(|| "in-cluster".into()),
        }
    }

    /// Every selected cluster, each built by [`Settings::cluster_for`], in the order selected; a
    /// context that cannot be resolved is that cluster's error (named), never the others'.
    pub async fn clusters(&self) -> Result<Vec<(String, Result<Cluster, ContextError>)>, ContextError> {
        let mut out = Vec::new();
        for context in self.selected_contexts()? {
            let cluster = self.cluster_for(context.as_deref()).await;
            // A built cluster has its name; only one that could not be built is named again.
            let name = match &cluster {
                Ok(c) => c.name().to_string(),
                Err(_) => self.cluster_name(context.as_deref()),
            };
            out.push((name, cluster));
        }
        Ok(out)
    }

    /// The one place a [`Cluster`] is built: the kube config of `context` (`None`: the current
    /// context, or in-cluster), its two clients, the namespace, Helm's release store and the target
    /// printed commands name.
    pub async fn cluster_for(&self, context: Option<&str>) -> Result<Cluster, ContextError> {
        let config = self.kube_config_for(context).await?;
        let namespace = self.explicit_namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
        // The watch-stream client: kube-runtime's watcher asks the API server to end each watch
        // after 290 s and gives up on a silent stream itself after 295 s; a read timeout under
        // that (`--request-timeout`, 30 s by default) would cut every idle stream and re-open it
        // with backoff, leaving gaps in which edits are seen late (docs/live.md).
        let mut stream_config = config.clone();
        stream_config.read_timeout = stream_read_timeout(self.request_timeout);
        let client = client_from(config)?;
        let store = self.driver.open(client.clone());
        Ok(Cluster::new(ClusterParts {
            name: self.cluster_name(context),
            client,
            streams: client_from(stream_config)?,
            namespace,
            store,
            target: Target { context: context.map(str::to_string), kubeconfig: self.kubeconfig.clone() },
        })
        .with_releases_in_flight(self.releases_in_flight))
    }

    /// The cluster of a single-cluster run: the one context named, or the current one.
    pub async fn cluster(&self) -> Result<Cluster, ContextError> {
        self.cluster_for(self.context()).await
    }

    /// Load the kube config (file, context, or in-cluster) as kubectl would.
    pub async fn kube_config(&self) -> Result<Config, ContextError> {
        self.kube_config_for(self.context()).await
    }

    async fn kube_config_for(&self, context: Option<&str>) -> Result<Config, ContextError> {
        let context = context.map(str::to_string);
        let options = KubeConfigOptions { context: context.clone(), cluster: None, user: None };
        let mut config = match (&self.kubeconfig, &context) {
            (Some(path), _) => {
                let kc = Kubeconfig::read_from(path)
                    .map_err(|source| ContextError::ReadKubeconfig { path: path.clone(), source })?;
                if let Some(ctx) = &context {
                    has_context(&kc, ctx, &path.display().to_string())?;
                }
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|source| ContextError::Config { detail: format!(" from {}", path.display()), source })?
            }
            (None, Some(ctx)) => {
                // The kubeconfig kubectl reads (KUBECONFIG's files merged, else ~/.kube/config).
                let kc = Kubeconfig::read()
                    .map_err(|source| ContextError::Config { detail: format!(" for context {ctx:?}"), source })?;
                has_context(&kc, ctx, "KUBECONFIG")?;
                Config::from_custom_kubeconfig(kc, &options)
                    .await
                    .map_err(|source| ContextError::Config { detail: format!(" for context {ctx:?}"), source })?
            }
            (None, None) => Config::infer().await.map_err(ContextError::Infer)?,
        };
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = self.request_timeout;
        config.write_timeout = self.request_timeout;
        Ok(config)
    }
}

/// `context` is one of the kubeconfig's, else an error listing those it has (`source`: where the
/// kubeconfig came from, as the message names it).
fn has_context(kc: &Kubeconfig, context: &str, source: &str) -> Result<(), ContextError> {
    if kc.contexts.iter().any(|c| c.name == context) {
        return Ok(());
    }
    let names: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
    Err(ContextError::NoContext {
        name: context.to_string(),
        source_name: source.to_string(),
        contexts: if names.is_empty() { "none".to_string() } else { names.join(", ") },
    })
}

/// The current context of the kubeconfig (`--kubeconfig`, else `KUBECONFIG` or ~/.kube/config),
/// if it can be read and names one.
pub(crate) fn current_context(kubeconfig: Option<&std::path::Path>) -> Option<String> {
    let kc = match kubeconfig {
        Some(p) => Kubeconfig::read_from(p).ok(),
        None => Kubeconfig::read().ok(),
    };
    kc.and_then(|k| k.current_context).filter(|c| !c.is_empty())
}

/// The context a cleanup script pins: the cluster's, else the kubeconfig's current context.
pub fn script_target(target: &crate::source::cluster::Target) -> crate::render::orphans_script::Target {
    let kubeconfig = target.kubeconfig.as_deref();
    let context = target.context.clone().or_else(|| current_context(kubeconfig));
    crate::render::orphans_script::Target { context, kubeconfig: kubeconfig.map(|p| p.display().to_string()) }
}

/// The least read timeout of the watch-stream client: above the watcher's 290 s server-side
/// timeout and its own 295 s idle check, so only those end an idle stream.
pub const STREAM_READ_TIMEOUT: Duration = Duration::from_secs(300);

/// The read timeout of watch streams for a `--request-timeout` (`None` = no limit stays no limit).
fn stream_read_timeout(request_timeout: Option<Duration>) -> Option<Duration> {
    request_timeout.map(|t| t.max(STREAM_READ_TIMEOUT))
}

/// The kube client for a config, named `kubectl-drift/VERSION` in the User-Agent, with kube-rs's own retries (up to 15, waits up to 1000 s) swapped
/// for [`crate::source::retry::BoundedRetry`], so a persistent 429/503 ends in an error within seconds.
pub fn client_from(mut config: Config) -> Result<Client, ContextError> {
    config.default_retry = false;
    // Name ourselves in the API server's audit log (kube-rs sends no User-Agent of its own).
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(concat!("kubectl-drift/", env!("CARGO_PKG_VERSION"))),
    ));
    let builder = kube::client::ClientBuilder::try_from(config).map_err(ContextError::Client)?;
    // tower's Retry needs a cloneable inner service; a Buffer makes the boxed stack one.
    // Under the retries, so each attempt is logged (-v).
    let layers = tower::ServiceBuilder::new()
        .layer(tower::retry::RetryLayer::new(crate::source::retry::BoundedRetry::default()))
        .layer(tower::buffer::BufferLayer::new(1024))
        .layer(crate::app::log::requests::RequestLogLayer);
    Ok(builder.with_layer(&layers).build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::cli::Cli;
    use clap::Parser;

    #[test]
    fn a_context_the_kubeconfig_lacks_is_named_with_those_it_has() {
        let kc = Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\ncontexts:\n- name: staging\n  context: {cluster: c, user: u}\n\
             - name: prod\n  context: {cluster: c, user: u}\n",
        )
        .unwrap();
        assert!(has_context(&kc, "prod", "KUBECONFIG").is_ok());
        let err = has_context(&kc, "prd", "KUBECONFIG").unwrap_err().to_string();
        assert_eq!(err, r#"no context "prd" in KUBECONFIG (contexts: staging, prod)"#);
        let empty = Kubeconfig::default();
        let err = has_context(&empty, "a", "/tmp/kc").unwrap_err().to_string();
        assert_eq!(err, r#"no context "a" in /tmp/kc (contexts: none)"#);
    }

    #[test]
    fn watch_streams_read_longer_than_the_server_keeps_them_open() {
        let secs = |s| Some(Duration::from_secs(s));
        // The default --request-timeout (30 s) would cut an idle stream at 30 s.
        assert_eq!(stream_read_timeout(secs(30)), secs(300));
        assert_eq!(stream_read_timeout(secs(600)), secs(600));
        assert_eq!(stream_read_timeout(None), None);
        assert!(STREAM_READ_TIMEOUT.as_secs() > 295, "above kube-runtime's own idle check");
    }

    fn settings(args: &[&str], env: Environment) -> Settings {
        let cli = Cli::try_parse_from(args).unwrap();
        Settings::resolve(&cli.global, &env).unwrap()
    }

    #[test]
    fn colour_decision() {
        let tty = Environment { stdout_is_tty: true, ..Default::default() };
        assert!(settings(&["k", "release", "x"], tty.clone()).color);
        assert!(!settings(&["k", "release", "x"], Environment { no_color: true, ..tty.clone() }).color);
        assert!(!settings(&["k", "release", "x"], Environment { term_dumb: true, ..tty.clone() }).color);
        assert!(!settings(&["k", "release", "x"], Environment::default()).color);
        assert!(settings(&["k", "--color", "always", "release", "x"], Environment::default()).color);
        assert!(!settings(&["k", "release", "x", "--color=never"], tty).color);
    }

    #[test]
    fn progress_decision() {
        // stderr alone decides (stdout may be a file); TERM must be set and not dumb.
        let tty = Environment { stderr_is_tty: true, ..Default::default() };
        assert!(settings(&["k", "orphans"], tty.clone()).progress);
        assert!(!settings(&["k", "orphans", "--no-progress"], tty.clone()).progress);
        assert!(!settings(&["k", "--no-progress", "release", "x"], tty.clone()).progress);
        assert!(!settings(&["k", "-v", "release", "x"], tty.clone()).progress, "-v logs on stderr");
        assert!(!settings(&["k", "orphans", "--log-level", "debug"], tty.clone()).progress);
        assert!(!settings(&["k", "orphans"], Environment { term_dumb: true, ..tty.clone() }).progress);
        assert!(!settings(&["k", "orphans"], Environment { term_unset: true, ..tty.clone() }).progress);
        assert!(!settings(&["k", "orphans"], Environment { stdout_is_tty: true, ..Default::default() }).progress);
        // Colour is about stdout: NO_COLOR leaves progress alone.
        assert!(settings(&["k", "orphans"], Environment { no_color: true, ..tty }).progress);
    }

    #[test]
    fn helm_env_fills_namespace_and_context() {
        let env = Environment {
            under_helm: true,
            helm_namespace: Some("shop".into()),
            helm_kube_context: Some("prod".into()),
            ..Default::default()
        };
        let s = settings(&["k", "release", "x"], env.clone());
        assert_eq!(s.explicit_namespace.as_deref(), Some("shop"));
        assert_eq!(s.context(), Some("prod"));
        let s = settings(&["k", "release", "x", "-n", "other"], env.clone());
        assert_eq!(s.explicit_namespace.as_deref(), Some("other"));
        // Outside Helm the HELM_* variables are not used.
        let s = settings(&["k", "release", "x"], Environment { under_helm: false, ..env });
        assert_eq!(s.explicit_namespace, None);
        assert_eq!(s.context(), None);
    }

    #[test]
    fn helm_driver_from_flags_or_env() {
        let env = Environment { helm_driver: Some("configmap".into()), ..Default::default() };
        assert_eq!(settings(&["k", "release", "x"], env.clone()).driver, Driver::ConfigMap);
        assert_eq!(settings(&["k", "--helm-driver", "secrets", "release", "x"], env).driver, Driver::Secret);
        let sql = Environment {
            helm_driver: Some("sql".into()),
            helm_sql_connection: Some(crate::source::helm::sql::ConnectionString("postgres://u:hunter2pw@h/d".into())),
            ..Default::default()
        };
        let target = |s: &Settings| match &s.driver {
            Driver::Sql(store) => store.target(),
            other => panic!("not sql: {other:?}"),
        };
        let s = settings(&["k", "release", "x"], sql.clone());
        assert_eq!(target(&s), "postgres://u@h:5432/d");
        assert!(!format!("{s:?} {sql:?}").contains("hunter2pw"));
        // The flag wins over the environment.
        let s = settings(&["k", "release", "x", "--helm-sql-connection", "user=v host=g password=hunter2pw"], sql);
        assert_eq!(target(&s), "postgres://v@g:5432/v");
        let cli = Cli::try_parse_from(["k", "release", "x", "--helm-sql-connection", "password=hunter2pw"]).unwrap();
        assert!(!format!("{cli:?}").contains("hunter2pw"));
        // sql without a connection string, or a driver Helm does not have, is an error.
        for (args, wanted) in [
            (vec!["k", "--helm-driver", "sql", "release", "x"], "HELM_DRIVER_SQL_CONNECTION_STRING"),
            (vec!["k", "--helm-driver", "sql", "--helm-sql-connection", "user=u port=x", "release", "x"], "port"),
        ] {
            let cli = Cli::try_parse_from(&args).unwrap();
            let err = Settings::resolve(&cli.global, &Environment::default()).unwrap_err().to_string();
            assert!(err.contains(wanted), "{err}");
        }
        assert!(Cli::try_parse_from(["k", "--helm-driver", "memory", "release", "x"]).is_err());
    }
}
