//! Running a subcommand: parse, resolve settings, compute, render, and map the outcome to an
//! exit code (0 clean, 1 drift or findings, 2 error). The only place that writes to stdout/stderr.

pub mod allocator;
pub mod cli;
pub mod complete;
pub mod config;
pub mod context;
pub mod error;
pub(crate) mod fleet;
pub mod history;
pub mod log;
pub mod mcp;
pub mod metrics;
pub(crate) mod outputs;
pub mod progress;
pub mod recorder;
pub mod serve;
pub mod versions;
pub mod watch;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::app::cli::{
    Cli, Command, GitOpsArgs, ManifestsArgs, OrphansArgs, OrphansFormat, OutputFormat, ReleaseArgs, ScriptKind,
    ShowMode, WatchArgs, completion_words, helm_plugin_args,
};
use crate::app::config::Config;
use crate::app::context::{Environment, Settings, script_target};
use crate::app::error::AppError;
use crate::app::versions::{versions_cache_dir, versions_sources};
use crate::engine::drift::{ReleaseSelection, check_releases};
use crate::render::{self, Theme};
use crate::report::Status;

/// What a run found, as an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean = 0,
    Drift = 1,
    Error = 2,
}

impl From<Status> for Outcome {
    fn from(s: Status) -> Outcome {
        match s {
            Status::Clean => Outcome::Clean,
            // A release whose Helm operation failed or is unfinished is a finding, like drift: it
            // was fully checked (an error means it could not be).
            Status::Drifted | Status::Incomplete => Outcome::Drift,
            Status::Error => Outcome::Error,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> ExitCode {
        ExitCode::from(o as u8)
    }
}

pub fn main_with_args(args: Vec<String>) -> ExitCode {
    let env = Environment::from_process();
    if let Some(words) = completion_words(&args) {
        // Completion answers even when nothing could be looked up, and never fails the prompt.
        let completion = crate::app::complete::complete(&words, &env);
        let _ = render::completion(&mut std::io::stdout().lock(), &completion);
        return ExitCode::SUCCESS;
    }
    let args = helm_plugin_args(args, env.under_helm);
    let cli = match parse(args, env.under_helm) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let long_running = matches!(cli.command, Command::Watch(_) | Command::Serve(_));
    if let Err(e) = log::init(&log::LogSettings::resolve(&cli.global, &env, long_running)) {
        let _ = writeln!(std::io::stderr(), "error: {e:#}");
        return Outcome::Error.into();
    }
    match run(cli, env) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(0);
            }
            if long_running {
                // watch and serve write only log lines: the last one says why they stopped.
                tracing::error!("{e:#}");
            } else {
                let _ = writeln!(std::io::stderr(), "error: {e:#}");
            }
            Outcome::Error.into()
        }
    }
}

/// Parse the arguments; under Helm, usage and help say `helm drift`.
fn parse(args: Vec<String>, under_helm: bool) -> Result<Cli, clap::Error> {
    let mut cmd = Cli::command();
    if under_helm {
        cmd = cmd.bin_name("helm drift");
    }
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
}

fn is_broken_pipe(e: &AppError) -> bool {
    matches!(e, AppError::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// The async runtime every cluster-facing subcommand runs on.
fn runtime() -> Result<tokio::runtime::Runtime, AppError> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(AppError::Runtime)
}

fn run(cli: Cli, env: Environment) -> Result<Outcome, AppError> {
    match cli.command {
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "kubectl-drift", &mut std::io::stdout());
            Ok(Outcome::Clean)
        }
        Command::Watch(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(watch(settings, args))
        }
        Command::History(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(history::run(&settings, &args, &mut std::io::stdout().lock()))
        }
        Command::Release(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(release(settings, args))
        }
        Command::Manifests(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            let fleet = rt.block_on(manifests(&settings, &args))?;
            let formats = std::iter::once(args.output).chain(args.output_files.iter().map(|f| f.format));
            let places = if outputs::needs_places(formats) { outputs::places(&fleet) } else { Default::default() };
            write_manifests(&settings, &fleet, args.output, &args.output_files, args.quiet, &places)
        }
        Command::Kustomization(args) => {
            gitops(&cli.global, &env, args, crate::engine::gitops::GitOpsKind::FluxKustomization, Default::default())
        }
        Command::Application(args) => {
            let argo = crate::engine::gitops::ArgoOptions {
                tracking: args.tracking_method,
                namespace: args.argocd_namespace.clone(),
            };
            gitops(&cli.global, &env, args.gitops, crate::engine::gitops::GitOpsKind::ArgoApplication, argo)
        }
        Command::Policy(args) => policy(&args, &mut std::io::stdout().lock()),
        Command::Compare(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(compare(&settings, &env, &args))
        }
        Command::Serve(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            // Read once: the versions section for the version engine, the rest for the server.
            let config = Config::<serve::ServeSection>::read_as(args.config.as_deref())?;
            let versions = serve::versions::VersionsScope::new(config.versions(&[])?, versions_cache_dir(&env, false))?;
            rt.block_on(serve::run(settings, args, config, Some(std::sync::Arc::new(versions))))?;
            Ok(Outcome::Clean)
        }
        Command::Mcp(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(mcp::run_stdio(settings, &env, args))?;
            Ok(Outcome::Clean)
        }
        Command::Adopt(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(adopt(&settings, &args))
        }
        Command::Orphans(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(orphans(&settings, &args, &mut std::io::stdout().lock()))
        }
        Command::Versions(args) => {
            let settings = Settings::resolve(&cli.global, &env)?;
            let rt = runtime()?;
            rt.block_on(versions(&settings, &env, &args))
        }
    }
}

/// The two sides `compare` reads: (context, namespace, release) each, from `--context a,b`,
/// `-n a,b` and `RELEASE` or `LEFT,RIGHT` (one value is both sides'; under Helm `--kube-context
/// a,b` arrives as one HELM_KUBECONTEXT). `None`: the current context, or the context's namespace.
type SideWords = (Option<String>, Option<String>, String);

fn compare_sides(settings: &Settings, release: Option<&str>) -> Result<[SideWords; 2], AppError> {
    let split = |s: &str| s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(str::to_string).collect::<Vec<_>>();
    if settings.all_contexts || settings.all_namespaces {
        return Err(AppError::Usage(
            "compare reads two sides: --context a,b (two clusters) or -n a,b (two namespaces), not --all-contexts or -A"
                .into(),
        ));
    }
    let contexts: Vec<String> = settings.contexts.iter().flat_map(|c| split(c)).collect();
    let namespaces = settings.explicit_namespace.as_deref().map(split).unwrap_or_default();
    let releases = release.map(split).unwrap_or_default();
    let lists = [&contexts, &namespaces, &releases];
    if lists.iter().any(|l| l.len() > 2) || lists.iter().all(|l| l.len() < 2) {
        return Err(AppError::Usage(format!(
            "compare needs two sides: --context a,b (the release in two clusters) or -n a,b (two namespaces of one \
             cluster); got {} context(s), {} namespace(s), {} release name(s)",
            contexts.len(),
            namespaces.len(),
            releases.len()
        )));
    }
    let pick = |l: &[String], i: usize| l.get(i).or_else(|| l.first()).cloned();
    let side = |i: usize| (pick(&contexts, i), pick(&namespaces, i), pick(&releases, i).unwrap_or_default());
    Ok([side(0), side(1)])
}

/// `compare RELEASE`: read both sides at once (each through its own cluster handle, one handle
/// when both are in one cluster), compare, write the format; 0 same, 1 different, 2 a side
/// could not be read (named on stderr; the other side is still shown).
async fn compare(
    settings: &Settings,
    env: &Environment,
    args: &crate::app::cli::CompareArgs,
) -> Result<Outcome, AppError> {
    use crate::app::cli::{CompareFormat, CompareView};
    use crate::engine::envdiff::{self, CompareOptions, Place, SideRead};
    use crate::report::envdiff::CompareStatus;
    let rules = Config::read(args.config.as_deref())?.compare_rules(&args.ignore)?;
    let sides = compare_sides(settings, args.release.as_deref())?;
    // `-f`: the files, read once for both sides.
    let manifests = match args.filename.is_empty() {
        true => None,
        false => Some(envdiff::read_manifests(&args.filename, &args.kubectl).await),
    };
    // Each side's namespace is its own: the cluster handle's default is the context's.
    let settings = Settings { explicit_namespace: None, ..settings.clone() };
    let first = settings.cluster_for(sides[0].0.as_deref()).await;
    let second = match sides[1].0 == sides[0].0 {
        true => None,
        false => Some(settings.cluster_for(sides[1].0.as_deref()).await),
    };
    let read = |i: usize| {
        let (context, namespace, release) = sides[i].clone();
        let cluster = match (i, &second) {
            (1, Some(c)) => c,
            _ => &first,
        };
        let settings = &settings;
        let manifests = manifests.as_ref().map(|(o, e)| (o.as_slice(), e.as_slice()));
        async move {
            match cluster {
                Ok(c) => {
                    let ns = namespace.unwrap_or_else(|| c.namespace().to_string());
                    match manifests {
                        Some((objects, errors)) => envdiff::read_manifests_side(c, &ns, objects, errors).await,
                        None => envdiff::read_release_side(c, &ns, &release).await,
                    }
                }
                Err(e) => SideRead {
                    place: Place {
                        cluster: settings.cluster_name(context.as_deref()),
                        namespace: namespace.unwrap_or_default(),
                        release,
                    },
                    outcome: Err(e.to_string()),
                },
            }
        }
    };
    let (left, right) = futures::join!(read(0), read(1));
    let target = if manifests.is_some() {
        args.filename.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(",")
    } else if left.place.release == right.place.release {
        left.place.release.clone()
    } else {
        format!("{},{}", left.place.release, right.place.release)
    };
    let report =
        envdiff::compare(&target, &left, &right, CompareOptions { rules: &rules, show_secrets: args.show_secrets });
    let mut out = std::io::stdout().lock();
    match args.output {
        CompareFormat::Text => {
            let split = match args.view {
                CompareView::Split => true,
                CompareView::Unified => false,
                CompareView::Auto => env.stdout_is_tty,
            };
            let layout = if split { render::envdiff::Layout::Split } else { render::envdiff::Layout::Unified };
            render::envdiff::text(&mut out, &report, layout, &Theme::new(settings.color))?
        }
        CompareFormat::Json => render::json(&mut out, &report)?,
        CompareFormat::Yaml => render::yaml(&mut out, &report)?,
        CompareFormat::Csv => render::envdiff::csv(&mut out, &report)?,
    }
    out.flush()?;
    let mut err = std::io::stderr().lock();
    for (word, side) in [("left", &report.left), ("right", &report.right)] {
        if let Some(e) = &side.error {
            writeln!(err, "error: {word} side (cluster {}, namespace {}): {e}", side.cluster, side.namespace)?;
        }
    }
    Ok(match report.status {
        CompareStatus::Same => Outcome::Clean,
        CompareStatus::Different => Outcome::Drift,
        CompareStatus::Error => Outcome::Error,
    })
}

/// `policy`: print the edit-time warning policy (no cluster: the global connection flags are
/// accepted and unused). The header names the flags that reproduce it.
fn policy<W: Write>(args: &crate::app::cli::PolicyArgs, out: &mut W) -> Result<Outcome, AppError> {
    use crate::app::cli::{PolicyAction, PolicyOwner};
    use crate::engine::policy::{self, Action, Owner, PolicyOptions};
    use clap::ValueEnum;
    // Each value once, in a fixed order, so the same policy prints the same text.
    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort();
        v.dedup();
        v
    }
    let (for_owners, for_actions) = (sorted(args.owners.clone()), sorted(args.action.clone()));
    let owners = for_owners
        .iter()
        .map(|o| match o {
            PolicyOwner::Helm => Owner::Helm,
            PolicyOwner::Flux => Owner::Flux,
            PolicyOwner::Argocd => Owner::ArgoCd,
            PolicyOwner::ArgocdLabel => Owner::ArgoCdLabel,
        })
        .collect();
    let actions = for_actions
        .iter()
        .map(|a| match a {
            PolicyAction::Warn => Action::Warn,
            PolicyAction::Audit => Action::Audit,
        })
        .collect();
    let namespace_selector = args
        .namespace_selector
        .as_deref()
        .map(policy::label_selector)
        .transpose()
        .map_err(|e| AppError::Usage(format!("--namespace-selector: {e}")))?;
    let names = |values: Vec<Option<clap::builder::PossibleValue>>| {
        values.into_iter().flatten().map(|v| v.get_name().to_string()).collect::<Vec<_>>().join(",")
    };
    let mut command = format!(
        "kubectl drift policy --for {} --action {}",
        names(for_owners.iter().map(ValueEnum::to_possible_value).collect()),
        names(for_actions.iter().map(ValueEnum::to_possible_value).collect())
    );
    if let Some(s) = &args.namespace_selector {
        command.push_str(&format!(" --namespace-selector '{s}'"));
    }
    if args.name != policy::DEFAULT_NAME {
        command.push_str(&format!(" --name {}", args.name));
    }
    let built = policy::build(&PolicyOptions { name: args.name.clone(), owners, actions, namespace_selector });
    let header = [
        format!("Edit-time drift warnings, printed by: {command}"),
        "Warn and Audit only, failurePolicy Ignore: nothing is ever denied. See docs/policy.md.".to_string(),
    ];
    render::yaml_stream(out, &header, &built.documents())?;
    Ok(Outcome::Clean)
}

/// `versions`: scan, render the table, CSV, JSON or YAML; 0 all current, 1 something behind,
/// 2 a lookup failed. Progress goes to stderr, only when it is a terminal and the output a table.
async fn versions(
    settings: &Settings,
    env: &Environment,
    args: &crate::app::cli::VersionsArgs,
) -> Result<Outcome, AppError> {
    use crate::app::cli::VersionsShow;
    use crate::engine::versions::{self, Show, VersionsOptions};
    use crate::report::versions::Category;
    let config = Config::read(args.config.as_deref())?.versions(&args.ignore)?;
    let cache_dir = versions_cache_dir(env, args.no_cache);
    // One set of upstream sources for every cluster: a repository's tags are read once.
    let sources = versions_sources(&config, cache_dir)?;
    let show = match args.show {
        None => Show::Default,
        Some(VersionsShow::Outdated) => Show::Outdated,
        Some(VersionsShow::All) => Show::All,
    };
    let (config, sources) = (&config, &sources);
    let fleet =
        fleet::across(settings, settings.progress && args.output == OrphansFormat::Table, |cluster, display| {
            let options = VersionsOptions {
                namespace: (!settings.all_namespaces).then(|| cluster.namespace().to_string()),
                categories: args.categories.iter().filter_map(|c| Category::parse(c)).collect(),
                show,
                manifests: args.manifests.clone(),
                target_minor: args.target_version,
                config: config.clone(),
            };
            async move { Ok(versions::scan(&cluster, &options, sources, &display).await?) }
        })
        .await?;
    let mut out = std::io::stdout().lock();
    let theme = Theme::new(settings.color);
    outputs::versions_tabular().write(&mut out, &fleet, args.output, &theme)?;
    out.flush()?;
    outputs::tabular_files(&args.output_files, &fleet, outputs::versions_tabular())?;
    fleet::errors(&mut std::io::stderr().lock(), &fleet)?;
    Ok(fleet.status(|r| r.status).into())
}

/// `manifests`: resolve the PATHs, rules and connection, then check (every problem after that is
/// reported against its file).
async fn manifests(
    settings: &Settings,
    args: &ManifestsArgs,
) -> Result<crate::report::fleet::Fleet<crate::report::ManifestsReport>, AppError> {
    let kustomizations = args.kustomize.clone();
    let paths =
        crate::source::manifest_files::paths_or_default(args.all_paths(), &kustomizations, std::path::Path::new("."))?;
    let timeout = args.timeout.limit();
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
    // `-`: standard input, read once for every cluster of the run.
    let stdin = if paths.iter().any(|p| p.as_os_str() == crate::source::manifest_files::STDIN_PATH) {
        Some(crate::source::manifest_files::Stdin::read(&args.stdin_name)?)
    } else {
        None
    };
    let (paths, kustomizations, rules, stdin) = (&paths, &kustomizations, &rules, &stdin);
    fleet::across(settings, settings.progress && args.output == OutputFormat::Text, |cluster, display| async move {
        let options = crate::engine::manifests::ManifestsOptions {
            paths: paths.clone(),
            kustomizations: kustomizations.clone(),
            default_namespace: cluster.namespace().to_string(),
            field_manager: args.field_manager.clone(),
            timeout,
            kubectl: args.kubectl.clone(),
            selector: args.selector.clone(),
            stdin: stdin.clone(),
        };
        let rules = rules.clone();
        Ok(crate::engine::manifests::check(&cluster, rules, args.show_secrets, &options, deadline, &display).await)
    })
    .await
}

/// `kustomization` and `application`: each selected GitOps object's inventory, reported as a
/// manifests run (one target per object), in every format but SARIF and GitHub annotations
/// (there is no file to point at).
fn gitops(
    global: &crate::app::cli::GlobalArgs,
    env: &Environment,
    args: GitOpsArgs,
    kind: crate::engine::gitops::GitOpsKind,
    argo: crate::engine::gitops::ArgoOptions,
) -> Result<Outcome, AppError> {
    if std::iter::once(args.output)
        .chain(args.output_files.iter().map(|f| f.format))
        .any(|f| matches!(f, OutputFormat::Sarif | OutputFormat::Github))
    {
        return Err(AppError::Usage(
            "-o sarif and -o github point at files; a Kustomization or an Application has none: use -o junit or json"
                .into(),
        ));
    }
    let settings = Settings::resolve(global, env)?;
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
    let rt = runtime()?;
    let (settings_ref, args_ref, rules_ref, argo_ref) = (&settings, &args, &rules, &argo);
    let fleet = rt.block_on(fleet::across(
        settings_ref,
        settings_ref.progress && args_ref.output == OutputFormat::Text,
        |cluster, display| async move {
            let selection = crate::engine::gitops::GitOpsSelection {
                names: args_ref.names.clone(),
                all: args_ref.all,
                all_namespaces: settings_ref.all_namespaces,
                namespace: cluster.namespace().to_string(),
                argo: argo_ref.clone(),
            };
            Ok(crate::engine::gitops::check(
                &cluster,
                kind,
                &selection,
                rules_ref.clone(),
                args_ref.show_secrets,
                &display,
            )
            .await?)
        },
    ))?;
    write_manifests(&settings, &fleet, args.output, &args.output_files, args.quiet, &Default::default())
}

/// A manifests-shaped result (`manifests`, `kustomization`, `application`): the `-o` format on
/// stdout, each `--output-file`, the errors on stderr; the exit status.
fn write_manifests(
    settings: &Settings,
    fleet: &crate::report::fleet::Fleet<crate::report::ManifestsReport>,
    output: OutputFormat,
    output_files: &[crate::app::cli::OutputFile<OutputFormat>],
    quiet: bool,
    places: &crate::render::ci::Places,
) -> Result<Outcome, AppError> {
    let mut out = std::io::stdout().lock();
    outputs::manifests(&mut out, fleet, output, &Theme::new(settings.color), quiet, places)?;
    out.flush()?;
    outputs::to_files(output_files, |file, format| {
        outputs::manifests(file, fleet, format, &Theme::new(false), quiet, places)
    })?;
    let mut err = std::io::stderr().lock();
    for report in fleet.clusters.iter().filter_map(|c| c.report.as_ref()) {
        render::text::manifests_errors(&mut err, report)?;
    }
    fleet::errors(&mut err, fleet)?;
    Ok(fleet.status(|r| r.status()).into())
}

/// `orphans`: scan, then write the table, CSV, JSON, YAML or cleanup script to `out`.
/// 0 when no orphan was found, 1 when some were, 2 when a custom kind could not be read.
async fn orphans<W: Write>(settings: &Settings, args: &OrphansArgs, out: &mut W) -> Result<Outcome, AppError> {
    use crate::render::orphans_script as script;
    use crate::report::duration;
    let options = crate::engine::orphans::ScanOptions {
        kinds: args.kinds.clone(),
        older_than: args.older_than,
        config: Config::read(args.config.as_deref())?.orphans()?,
        ignore: args.ignore.clone(),
        show_all: args.show == ShowMode::All,
        max_custom_objects: args.max_custom_objects,
    };
    let scan = options.prepare(settings.all_namespaces)?;
    if args.script.is_some() && !args.output_files.is_empty() {
        return Err(AppError::Usage("--script writes a cleanup script, not a report: leave out --output-file".into()));
    }
    if args.script.is_some() && settings.many_clusters() {
        return Err(AppError::Usage(
            "--script writes one cluster's cleanup script: give one --context (one script per cluster)".into(),
        ));
    }
    // A person reads the table or the script; CSV, JSON and YAML go to programs.
    let human = args.script.is_some() || args.output == OrphansFormat::Table;
    let scan = &scan;
    let fleet = fleet::across(settings, settings.progress && human, |cluster, display| async move {
        let namespace = (!settings.all_namespaces).then(|| cluster.namespace().to_string());
        let report = crate::engine::orphans::scan(&cluster, namespace, scan, &display).await?;
        Ok((report, script_target(cluster.target())))
    })
    .await?;
    if args.script.is_some() && fleet.clusters.iter().any(|c| c.error.is_some()) {
        // No script for a cluster that could not be read.
        fleet::errors(&mut std::io::stderr().lock(), &fleet)?;
        return Ok(crate::report::Status::Error.into());
    }
    if let (Some(kind), Some((report, target))) = (args.script, fleet.clusters.first().and_then(|c| c.report.as_ref()))
    {
        let mode = match kind {
            ScriptKind::Export => script::ScriptMode::Export,
            ScriptKind::Delete => script::ScriptMode::Delete,
        };
        let generated = duration::rfc3339_utc(duration::now());
        out.write_all(script::script(report, mode, target, &generated).as_bytes())?;
        out.flush()?;
        return Ok(report.status().into());
    }
    let fleet = crate::report::fleet::Fleet::new(
        fleet
            .clusters
            .into_iter()
            .map(|c| crate::report::fleet::ClusterResult {
                cluster: c.cluster,
                report: c.report.map(|r| r.0),
                error: c.error,
            })
            .collect(),
    );
    let theme = Theme::new(settings.color);
    outputs::orphans_tabular().write(out, &fleet, args.output, &theme)?;
    out.flush()?;
    outputs::tabular_files(&args.output_files, &fleet, outputs::orphans_tabular())?;
    fleet::errors(&mut std::io::stderr().lock(), &fleet)?;
    Ok(fleet.status(|r| r.status()).into())
}

/// `release NAME --print-crd CRD`: the CRD as the release chart's `crds/` holds it (the revision
/// `--revision` names, else the one `release` compares), as YAML; exit 2 when the release or the
/// CRD is not there.
async fn print_chart_crd(settings: &Settings, args: &ReleaseArgs, crd: &str) -> Result<Outcome, AppError> {
    let [name] = args.releases.as_slice() else {
        return Err(AppError::Usage("--print-crd takes one release".into()));
    };
    let cluster = settings.cluster().await?;
    let ns = cluster.namespace().to_string();
    let found = cluster.store().releases_to_check(Some(&ns), std::slice::from_ref(name), args.revision).await?;
    let revisions = match found.into_iter().next() {
        Some(Ok(r)) => r,
        Some(Err((_, e))) => return Err(e.into()),
        None => return Err(AppError::Usage(format!("release {ns}/{name} not found"))),
    };
    let release =
        revisions.desired.release.decode().map_err(|e| AppError::Usage(format!("release {ns}/{name}: {e}")))?;
    let (crds, problems) = crate::engine::drift::crds::chart_crds(&release, &[]);
    let Some(c) = crds.iter().find(|c| c.name == crd) else {
        let shipped: Vec<&str> = crds.iter().map(|c| c.name.as_str()).collect();
        let mut message = format!(
            "release {ns}/{name} revision {}: its chart's crds/ has no CRD {crd} (it has: {})",
            release.revision,
            if shipped.is_empty() { "none".to_string() } else { shipped.join(", ") }
        );
        for p in problems {
            message.push_str(&format!("; {p}"));
        }
        return Err(AppError::Usage(message));
    };
    let mut out = std::io::stdout().lock();
    crate::render::yaml(&mut out, &c.body)?;
    out.flush()?;
    Ok(Outcome::Clean)
}

async fn release(settings: Settings, args: ReleaseArgs) -> Result<Outcome, AppError> {
    if let Some(crd) = &args.print_crd {
        return print_chart_crd(&settings, &args, crd).await;
    }
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
    // Opened first, only to read: a missing file or an unreachable database stops the run.
    let mut history = recorder::open_to_read(&args.history).await?;
    let (settings, args, rules) = (&settings, &args, &rules);
    let mut fleet =
        fleet::across(settings, settings.progress && args.output == OutputFormat::Text, |cluster, display| {
            let selection = ReleaseSelection {
                names: args.releases.clone(),
                all: args.all,
                all_namespaces: settings.all_namespaces,
                namespace: cluster.namespace().to_string(),
                revision: args.revision,
                chart_crds: !args.no_crds,
            };
            async move { Ok(check_releases(&cluster, &selection, rules.clone(), args.show_secrets, &display).await?) }
        })
        .await?;
    if let Some(store) = &mut history {
        recorder::annotate_releases(store, &mut fleet).await?;
    }

    let mut out = std::io::stdout().lock();
    let theme = Theme::new(settings.color);
    outputs::release(&mut out, &fleet, args.output, &theme, args.quiet)?;
    out.flush()?;
    outputs::to_files(&args.output_files, |file, format| {
        outputs::release(file, &fleet, format, &Theme::new(false), args.quiet)
    })?;
    // Errors also go to stderr, so a cron job that keeps only stderr still sees them.
    let mut err = std::io::stderr().lock();
    for c in &fleet.clusters {
        let Some(report) = &c.report else { continue };
        let cluster = if fleet.many() { format!("cluster {}: ", c.cluster) } else { String::new() };
        for r in report.releases.iter().filter(|r| r.status == Status::Error) {
            let message = r.error().unwrap_or_else(|| "unknown error".into());
            writeln!(err, "error: {cluster}release {}/{}: {message}", r.origin.namespace, r.origin.name)?;
        }
    }
    fleet::errors(&mut err, &fleet)?;
    Ok(fleet.status(|r| r.status()).into())
}

/// `adopt RELEASE`: the values overlay that keeps the release's live drift (docs/adopt.md); 0 when
/// every drifted field was adopted, 1 when something is left, 2 on an error.
async fn adopt(settings: &Settings, args: &crate::app::cli::AdoptArgs) -> Result<Outcome, AppError> {
    use crate::app::cli::AdoptFormat;
    if settings.many_clusters() {
        return Err(AppError::Usage("adopt reads one release in one cluster: give one --context".into()));
    }
    if settings.all_namespaces {
        return Err(AppError::Usage("adopt reads one release: give its namespace with -n, not -A".into()));
    }
    if !args.filename.is_empty() {
        return adopt_files(settings, args).await;
    }
    let helm = find_program(&args.helm).ok_or_else(|| {
        AppError::Usage(format!(
            "adopt renders the release's chart with helm, and {} was not found: install helm, or set HELM_BIN or --helm",
            args.helm.display()
        ))
    })?;
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
    let cluster = settings.cluster().await?;
    let options = crate::engine::adopt::AdoptOptions {
        release: args.release.clone().unwrap_or_default(),
        namespace: cluster.namespace().to_string(),
        helm,
        show_secrets: args.show_secrets,
        rules,
        render_timeout: args.render_timeout.limit().unwrap_or(std::time::Duration::from_secs(3600)),
    };
    let report = crate::engine::adopt::adopt_release(&cluster, &options).await?;
    let mut out = std::io::stdout().lock();
    match args.output {
        AdoptFormat::Values => render::adopt::values(&mut out, &report)?,
        AdoptFormat::Json => render::adopt::json(&mut out, &report)?,
        AdoptFormat::Set => render::adopt::set(&mut out, &mut std::io::stderr().lock(), &report)?,
    }
    out.flush()?;
    Ok(if report.complete() { Outcome::Clean } else { Outcome::Drift })
}

/// `adopt -f PATH...`: a unified diff of the files holding the live values, or the files written
/// (`--write`); 0 all adopted, 1 something left, 2 a file or object that could not be checked.
async fn adopt_files(settings: &Settings, args: &crate::app::cli::AdoptArgs) -> Result<Outcome, AppError> {
    use crate::app::cli::AdoptFormat;
    if args.output == AdoptFormat::Set {
        return Err(AppError::Usage(
            "-o set is for a Helm release's overlay; with -f use -o values (a diff) or json".into(),
        ));
    }
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
    let cluster = settings.cluster().await?;
    let result = crate::engine::adopt::files::adopt_files(
        &cluster,
        args.filename.clone(),
        cluster.namespace().to_string(),
        args.kubectl.clone(),
        rules,
        args.show_secrets,
    )
    .await;
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    if args.write {
        for (path, _, after) in &result.edits {
            std::fs::write(path, after).map_err(|source| AppError::OutputFile { path: path.clone(), source })?;
            writeln!(err, "wrote {}", path.display())?;
        }
    }
    match args.output {
        AdoptFormat::Json => render::adopt::files_json(&mut out, &result)?,
        _ if !args.write => render::adopt::files_diff(&mut out, &result.edits)?,
        _ => {}
    }
    out.flush()?;
    render::adopt::files_left(&mut err, &result)?;
    Ok(if !result.errors.is_empty() {
        Outcome::Error
    } else if result.not_adoptable.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Drift
    })
}

/// A program as a command names it: a path with a slash as it is, a bare name looked up on PATH.
fn find_program(program: &std::path::Path) -> Option<std::path::PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(program)).find(|p| p.is_file())
}

async fn watch(settings: Settings, args: WatchArgs) -> Result<Outcome, AppError> {
    use crate::app::watch::{WatchOptions, notify::Notifier, state::StateLocation};
    let rules = Config::read(args.config.as_deref())?.ignore_rules(&args.ignore)?;
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
    let clusters: Vec<crate::app::watch::Watched> = if settings.many_clusters() {
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
        }),
        manifests: args.manifests.clone(),
        gitops: [
            (crate::engine::gitops::GitOpsKind::FluxKustomization, &args.kustomizations),
            (crate::engine::gitops::GitOpsKind::ArgoApplication, &args.applications),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| {
            let all = names.iter().any(|n| n == "*");
            (
                kind,
                crate::engine::gitops::GitOpsSelection {
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
        stdin: if args.manifests.iter().any(|p| p.as_os_str() == crate::source::manifest_files::STDIN_PATH) {
            Some(crate::source::manifest_files::Stdin::read(crate::source::manifest_files::STDIN_PATH)?)
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

#[cfg(test)]
mod policy_tests {
    use clap::Parser;

    use crate::app::cli::{Cli, Command};

    fn printed(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(std::iter::once("kubectl-drift").chain(args.iter().copied())).unwrap();
        let Command::Policy(args) = cli.command else { panic!("not the policy command") };
        let mut out = Vec::new();
        assert_eq!(super::policy(&args, &mut out).unwrap(), super::Outcome::Clean);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn deploy_policy_is_what_the_command_prints() {
        let shipped =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/policy/policy.yaml")).unwrap();
        assert_eq!(
            shipped,
            printed(&["policy"]),
            "deploy/policy/policy.yaml differs from `kubectl drift policy`: regenerate it with \
             `cargo run -q -- policy > deploy/policy/policy.yaml`"
        );
    }

    #[test]
    fn the_header_names_the_flags_that_print_it_again() {
        let out =
            printed(&["policy", "--for", "flux,helm,flux", "--action", "warn", "--namespace-selector", "team=shop"]);
        assert!(
            out.starts_with(
                "# Edit-time drift warnings, printed by: kubectl drift policy --for helm,flux --action warn \
                 --namespace-selector 'team=shop'\n"
            ),
            "{out}"
        );
        assert_eq!(out.matches("\n---\n").count(), 5, "{out}");
        assert!(!out.contains("- Audit") && !out.contains("auditAnnotations") && !out.contains("Deny"), "{out}");
    }

    #[test]
    fn a_selector_that_cannot_be_read_is_a_usage_error() {
        let cli = Cli::try_parse_from(["kubectl-drift", "policy", "--namespace-selector", "a b"]).unwrap();
        let Command::Policy(args) = cli.command else { panic!("not the policy command") };
        let err = super::policy(&args, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("--namespace-selector"), "{err}");
    }
}

#[cfg(test)]
mod compare_tests {
    use clap::Parser;

    use crate::app::cli::Cli;
    use crate::app::context::{Environment, Settings};

    fn sides(args: &[&str], env: Environment) -> Result<[super::SideWords; 2], String> {
        let cli = Cli::try_parse_from(args).unwrap();
        let settings = Settings::resolve(&cli.global, &env).unwrap();
        let crate::app::cli::Command::Compare(c) = cli.command else { panic!("not compare") };
        super::compare_sides(&settings, c.release.as_deref()).map_err(|e| e.to_string())
    }

    fn side(ctx: Option<&str>, ns: Option<&str>, rel: &str) -> super::SideWords {
        (ctx.map(str::to_string), ns.map(str::to_string), rel.to_string())
    }

    #[test]
    fn two_sides_from_contexts_namespaces_or_release_names() {
        let env = Environment::default;
        assert_eq!(
            sides(&["k", "compare", "shop", "--context", "a,b", "-n", "x"], env()).unwrap(),
            [side(Some("a"), Some("x"), "shop"), side(Some("b"), Some("x"), "shop")]
        );
        assert_eq!(
            sides(&["k", "compare", "shop", "-n", "x,y"], env()).unwrap(),
            [side(None, Some("x"), "shop"), side(None, Some("y"), "shop")]
        );
        assert_eq!(
            sides(&["k", "compare", "eu,us", "--context", "a,b", "-n", "x,y"], env()).unwrap(),
            [side(Some("a"), Some("x"), "eu"), side(Some("b"), Some("y"), "us")]
        );
        // Under Helm, --kube-context a,b and -n a,b arrive as one variable each.
        let helm = Environment {
            under_helm: true,
            helm_kube_context: Some("a,b".into()),
            helm_namespace: Some("shop".into()),
            ..Default::default()
        };
        assert_eq!(
            sides(&["k", "compare", "shop"], helm).unwrap(),
            [side(Some("a"), Some("shop"), "shop"), side(Some("b"), Some("shop"), "shop")]
        );
        for bad in [
            &["k", "compare", "shop", "-n", "x"][..],
            &["k", "compare", "shop", "--context", "a,b,c"],
            &["k", "compare", "shop", "--context", "a,b", "-A"],
        ] {
            let e = sides(bad, env()).unwrap_err();
            assert!(e.contains("two sides") || e.contains("compare reads two sides"), "{bad:?}: {e}");
        }
        // -f needs no release name.
        assert_eq!(
            sides(&["k", "compare", "-f", "deploy", "--context", "a,b"], env()).unwrap(),
            [side(Some("a"), None, ""), side(Some("b"), None, "")]
        );
    }
}
