//! `watch`: the wiring of the long-running watch (`app::watch`): its flags checked and read into
//! `WatchOptions`, the clusters connected, then rounds (or `--live`) until stopped.

use crate::app::cli::WatchArgs;
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::recorder;
use crate::app::watch::{WatchOptions, Watched, notify::Notifier, state::StateLocation};
use crate::engine::drift::ReleaseSelection;
use crate::engine::gitops::{GitOpsKind, GitOpsSelection};
use crate::source::manifest_files::{STDIN_PATH, Stdin};

/// `watch`: check the named releases, manifests and GitOps objects in rounds (`--once`: one) or
/// live, alerting on new drift; returns only with `--once` (0 clean, 1 drift, 2 an error or an
/// alert not delivered), or on an error that stops the watch.
pub(crate) async fn run(mut settings: Settings, args: WatchArgs) -> Result<Outcome, AppError> {
    settings.releases_in_flight = args.in_flight.releases_in_flight.map(usize::from);
    let config = Config::read(args.config.as_deref())?;
    let rules = config.ignore_rules(&args.ignore)?;
    let admission_changes = config.admission_changes(args.admission_changes);
    let interval = if args.once { None } else { Some(args.interval.as_duration()) };
    if args.releases.is_empty()
        && !args.all
        && args.manifests.is_empty()
        && args.kustomizations.is_empty()
        && args.applications.is_empty()
    {
        return Err(AppError::Usage(
            "name releases to watch, or use --all, --manifests PATH, --kustomization NAME or --application NAME".into(),
        ));
    }
    if args.live && !(args.kustomizations.is_empty() && args.applications.is_empty()) {
        return Err(AppError::Usage(
            "--kustomization and --application are checked in rounds: leave out --live (or watch them in another watch)"
                .into(),
        ));
    }
    let state = StateLocation::parse(args.state.as_deref())?;
    let notifier = Notifier::new(args.slack_webhook.clone(), args.webhook.clone())?;
    if args.live && settings.many_clusters() {
        return Err(AppError::Usage(
            "--live watches one cluster's streams: give one --context (or watch several clusters in rounds, without --live)".into(),
        ));
    }
    if args.cluster_name.as_deref().is_some_and(|n| !n.is_empty()) && settings.many_clusters() {
        return Err(AppError::Usage(
            "--cluster-name names one cluster: with several contexts each /metrics series carries its own context's name".into(),
        ));
    }
    let clusters: Vec<Watched> = if settings.many_clusters() {
        settings.clusters().await?.into_iter().map(|(name, c)| (name, c.map_err(|e| e.to_string()))).collect()
    } else {
        let cluster = settings.cluster().await?;
        vec![(cluster.name().to_string(), Ok(cluster))]
    };
    let opts = WatchOptions {
        // The namespace of the selection is each cluster's (-n, else its context's): set per
        // cluster by the rounds.
        selection: (args.all || !args.releases.is_empty()).then(|| ReleaseSelection {
            names: args.releases.clone(),
            all: args.all,
            all_namespaces: settings.all_namespaces,
            namespace: String::new(),
            revision: None,
            chart_crds: true,
            admission_changes,
        }),
        manifests: args.manifests.clone(),
        gitops: [
            (GitOpsKind::FluxKustomization, &args.kustomizations),
            (GitOpsKind::ArgoApplication, &args.applications),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| {
            let all = names.iter().any(|n| n == "*");
            (
                kind,
                GitOpsSelection {
                    names: if all { Vec::new() } else { names.clone() },
                    all,
                    all_namespaces: settings.all_namespaces,
                    namespace: String::new(),
                    ..Default::default()
                },
            )
        })
        .collect(),
        rules,
        interval,
        state,
        listen: args.listen,
        // `--manifests -`: standard input, read once; every round checks the same text.
        stdin: if args.manifests.iter().any(|p| p.as_os_str() == STDIN_PATH) {
            Some(Stdin::read(STDIN_PATH)?)
        } else {
            None
        },
        identity: crate::app::metrics::Identity {
            cluster_name: args.cluster_name.clone(),
            external_url: args.external_url.clone(),
        },
        kubectl: args.kubectl.clone(),
        history: recorder::location(&args.history.at, None).map(|at| (at, args.history.retention.as_duration())),
    };
    let status = if args.live {
        let resync = args.resync.as_duration();
        if resync.is_zero() {
            return Err(AppError::Usage("--resync must be longer than 0s".into()));
        }
        if opts.selection.is_some() && matches!(settings.driver, crate::source::helm::Driver::Sql(_)) {
            return Err(AppError::Usage(
                "--live watches release storage through the API server: it needs HELM_DRIVER secret or configmap, not sql".into(),
            ));
        }
        let Some((_, Ok(cluster))) = clusters.into_iter().next() else {
            return Err(AppError::Usage("--live: no cluster to watch".into()));
        };
        crate::app::watch::live::run(cluster, notifier, opts, resync).await?
    } else {
        crate::app::watch::run(clusters, settings.parallel, notifier, opts).await?
    };
    Ok(status.into())
}
