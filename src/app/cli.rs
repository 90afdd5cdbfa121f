//! Command-line surface: clap derive types only (subcommands, flags, value enums). No I/O.
//!
//! The same binary runs as `kubectl drift ...` (a kubectl plugin) and `helm drift ...` (a Helm
//! plugin); [`helm_plugin_args`] rewrites Helm's shorter form (`helm drift RELEASE`) into the
//! subcommand form before parsing, and [`completion_words`] recognises the shell-completion entry
//! points (`kubectl-drift __complete WORDS...`, or the binary run as `kubectl_complete-drift`),
//! whose words are not parsed by clap but completed (see `complete`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

use crate::engine::compare::AdmissionChanges;
use crate::report::duration::Span;
use crate::source::helm::sql::ConnectionString;

/// `--version` text: the crate version, the git commit it was built from and, for a release build,
/// its build date (`build.rs`: "built <date>" from DRIFT_BUILD_DATE or SOURCE_DATE_EPOCH, else
/// "dev build").
pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("DRIFT_GIT_COMMIT"), ", ", env!("DRIFT_BUILD_INFO"), ")");

const ABOUT: &str = "Find drift between what Helm (or your manifests) deployed and what runs in the cluster";

const LONG_ABOUT: &str = "\
Find drift between what Helm (or your manifests) deployed and what runs in the cluster.

kubectl-drift reads Helm's own release storage (no helm binary, no chart source), reads the live \
objects, and reports every field that differs: values changed, objects deleted, and things added \
by hand (an env var, a container, a ConfigMap key) that dry-run based tools miss. It says who \
changed each field (from managedFields) and prints commands that restore the desired state. \
It only reads (get and list): it never writes to the cluster.

Exit codes: 0 no drift, 1 drift found (or a Helm release whose install, upgrade or rollback failed or \
did not finish), 2 error (including a scan that could not see everything).";

const EXAMPLES: &str = "\
Examples:
  kubectl drift release shop -n shop          Drift of one Helm release
  kubectl drift release --all -A              Every release in every namespace
  kubectl drift release shop -o json          Machine-readable report
  kubectl drift manifests k8s/ -n shop        Drift of a folder of manifests
  kubectl drift manifests -k overlays/prod    Drift of a kustomization
  helm drift shop                             The same, as a Helm plugin
  kubectl drift orphans -A                    Objects nothing uses any more
  kubectl drift release --all -A --all-contexts   Every release of every cluster in the kubeconfig
  kubectl drift compare shop --context staging,prod   Is prod still like staging?
  kubectl drift policy | kubectl apply -f -   Warn people at edit time that their change is drift
  kubectl drift mcp                           Serve the tools to an assistant (MCP on stdio)
  kubectl drift completion bash               Shell completion script";

#[derive(Debug, Parser)]
#[command(name = "kubectl-drift", bin_name = "kubectl-drift", version = VERSION, about = ABOUT,
          long_about = LONG_ABOUT, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every subcommand accepts, named as kubectl names them.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)
    #[arg(long, global = true, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use; several as a,b,c or repeated, each its own cluster (Helm: --kube-context, passed as HELM_KUBECONTEXT)
    #[arg(long, global = true, value_name = "NAME", value_delimiter = ',', action = clap::ArgAction::Append)]
    pub context: Vec<String>,
    /// Every context of the kubeconfig, each its own cluster
    #[arg(long, global = true, conflicts_with = "context")]
    pub all_contexts: bool,
    /// How many clusters are read at once with several contexts
    #[arg(long, global = true, default_value_t = 4, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub parallel: u16,
    /// Namespace to look in (default: the context's namespace; Helm: HELM_NAMESPACE)
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,
    /// Look in every namespace
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,
    /// When to colour output: auto (a terminal, and NO_COLOR unset), always, never
    #[arg(long, global = true, value_enum, default_value_t = ColorMode::Auto, value_name = "WHEN")]
    pub color: ColorMode,
    /// How long to wait for each API request before giving up (30s, 2m; bare seconds; 0: no limit)
    #[arg(long, global = true, default_value = "30", value_name = "DURATION", value_parser = Span::parse)]
    pub request_timeout: Span,
    /// Where Helm keeps releases: secret, configmap or sql (default: $HELM_DRIVER, else secret)
    #[arg(long, global = true, value_name = "DRIVER", value_parser = helm_driver_names())]
    pub helm_driver: Option<String>,
    /// PostgreSQL connection string for --helm-driver sql, as Helm takes it (default:
    /// $HELM_DRIVER_SQL_CONNECTION_STRING, which keeps the password out of process lists)
    #[arg(long, global = true, value_name = "DSN")]
    pub helm_sql_connection: Option<ConnectionString>,
    /// Never show progress on stderr (shown only when stderr is a terminal, TERM is set and not
    /// dumb, and the output is text or a table)
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Log more on stderr: -v each API request (verb, path, status, duration), -vv also
    /// kubectl-drift's own spans and debug lines (docs/logs.md)
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// How log lines are written on stderr: text, or JSON (one object a line, for a log pipeline)
    #[arg(long, global = true, value_enum, env = "DRIFT_LOG_FORMAT", default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// Which log lines are written: a level (error, warn, info, debug, trace) or filter directives
    /// such as `info,kubectl_drift::api=debug` (default: $DRIFT_LOG_LEVEL, then $RUST_LOG, then info for
    /// watch and serve, warn for the others)
    #[arg(long, global = true, env = "DRIFT_LOG_LEVEL", value_name = "FILTER")]
    pub log_level: Option<String>,
}

/// The values of `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// `TIMESTAMP LEVEL TARGET: message key=value ...`
    #[default]
    Text,
    /// One JSON object a line: timestamp, level, target, message, fields, spans
    Json,
}

/// The values of `--helm-driver`, with Helm's plural spellings accepted.
fn helm_driver_names() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("secret").alias("secrets").help("Secrets (Helm's default)"),
        PossibleValue::new("configmap").alias("configmaps").help("ConfigMaps"),
        PossibleValue::new("sql").help("PostgreSQL (needs a connection string)"),
    ])
}

/// The global flags alone, with their defaults: how shell completion reads the connection flags
/// (`--kubeconfig`, `--context`, `-n`, `-A`) typed before the word being completed.
#[derive(Debug, Parser)]
#[command(name = "kubectl-drift", no_binary_name = true, disable_help_flag = true)]
pub struct GlobalOnly {
    #[command(flatten)]
    pub global: GlobalArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorMode {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    Yaml,
    /// JUnit XML: a testsuite per release or file, a testcase per object
    Junit,
    /// SARIF 2.1.0 (GitHub code scanning): a result per drifted object, at its file and line
    Sarif,
    /// GitHub Actions annotations (::error file=...,line=...::)
    Github,
}

/// `--output-file FORMAT=PATH`: one more format, written to a file beside stdout's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile<F> {
    pub format: F,
    pub path: PathBuf,
}

/// Parse `FORMAT=PATH` with the formats of `F` (a command's `-o` values).
pub fn parse_output_file<F: ValueEnum>(s: &str) -> Result<OutputFile<F>, String> {
    let (format, path) =
        s.split_once('=').ok_or_else(|| format!("expected FORMAT=PATH (e.g. junit=drift.xml), got {s:?}"))?;
    let format = F::from_str(format, true).map_err(|_| {
        let known: Vec<String> = F::value_variants()
            .iter()
            .filter_map(|v| v.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        format!("unknown format {format:?}: expected one of {}", known.join(", "))
    })?;
    if path.is_empty() {
        return Err(format!("no PATH after {s:?}"));
    }
    Ok(OutputFile { format, path: PathBuf::from(path) })
}

/// How a drift check is reported (`-o`, `--output-file`, `-q`): one definition for `release`,
/// `manifests`, `kustomization` and `application`, flattened as [`HistoryArg`] is. A command words
/// a flag's help its own way with [`reword`].
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text, value_name = "FORMAT")]
    pub output: OutputFormat,
    /// Also write FORMAT to PATH (repeatable), beside the -o output on stdout: e.g.
    /// --output-file junit=drift.xml --output-file sarif=drift.sarif
    #[arg(long = "output-file", value_name = "FORMAT=PATH", value_parser = parse_output_file::<OutputFormat>)]
    pub output_files: Vec<OutputFile<OutputFormat>>,
    /// One line per release
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl ReportArgs {
    /// Every format this run writes: `-o`'s, then each `--output-file`'s.
    pub fn formats(&self) -> impl Iterator<Item = OutputFormat> + '_ {
        std::iter::once(self.output).chain(self.output_files.iter().map(|f| f.format))
    }
}

/// What a drift check shows and ignores (`--show-secrets`, `--ignore`, `--config`): one
/// definition for the same four commands as [`ReportArgs`], and for `compare` and `adopt` (in
/// their own words).
/// (Two structs, not one: `manifests` lists its `--timeout` between them.)
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Show Secret values instead of <redacted ...> (they are hidden by default)
    #[arg(long)]
    pub show_secrets: bool,
    /// Ignore a field: KIND[:NAMESPACE/NAME]:PATH, PATH may end in * (repeatable)
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    /// YAML file with ignore rules (see docs/drift.md)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,
}

/// Give some flags of a command their own help, by their ids (for `#[command(mut_args(..))]`),
/// keeping every flag in its place: clap's `mut_arg` moves the flag it changes to the end of the
/// command's list, which reorders the completion scripts.
fn reword(help: &'static [(&'static str, &'static str)]) -> impl FnMut(clap::Arg) -> clap::Arg {
    move |arg| match help.iter().find(|(id, _)| arg.get_id() == *id) {
        Some((_, text)) => arg.help(*text),
        None => arg,
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Drift of Helm releases: desired (the release revision) against live objects
    #[command(after_help = "\
Examples:
  kubectl drift release shop -n shop
  kubectl drift release shop --revision 3 -o json
  kubectl drift release --all -A -q
  kubectl drift release shop --ignore 'Deployment:*:spec.replicas'
  kubectl drift release shop -n shop --context prod-eu,prod-us   The same release in two clusters
  kubectl drift release --all -A --all-contexts -o json          Every cluster of the kubeconfig
  helm drift shop --kube-context prod")]
    Release(ReleaseArgs),
    /// Drift of Flux Kustomizations: each object of the inventory against the fields Flux applied
    #[command(after_help = "\
Examples:
  kubectl drift kustomization apps -n flux-system
  kubectl drift kustomization --all -A -o json
  kubectl drift kustomization apps -n flux-system --context prod-eu,prod-us

The desired set is the Kustomization's inventory (status.inventory). Flux applies server-side, so \
the fields kustomize-controller owns in each object's managedFields are what Git says; fields \
owned by a person's tool (kubectl edit, set, patch, scale, ...) are drift by hand, with who and \
when; an inventory object gone live is missing; an object labelled for the Kustomization that is \
not in its inventory is extra. See docs/gitops.md.

Exit codes: 0 no drift, 1 drift, 2 error (Flux not installed, a Kustomization not found or \
without an inventory, a kind not served, a forbidden LIST).")]
    Kustomization(GitOpsArgs),
    /// Drift of Argo CD Applications: each object of status.resources against the fields Argo CD applied
    #[command(after_help = "\
Examples:
  kubectl drift application shop -n argocd
  kubectl drift application --all -n argocd -o json
  kubectl drift application shop -n argocd --tracking-method label     Tracked by its instance label
  kubectl drift application shop -n team-a --argocd-namespace argocd  argocd-cm is in argocd
  argocd app manifests shop | kubectl drift manifests -f -    Field by field against Git's render

The desired set is the Application's status.resources, read with plain Kubernetes RBAC (no Argo CD \
token). The fields Argo CD's field manager owns (argocd-controller, server-side apply) are desired; \
fields owned by a person's tool are drift by hand, with who and when; an object gone live is \
missing. The Application's spec.ignoreDifferences (jsonPointers, jqPathExpressions, \
managedFieldsManagers) are honoured: what they cover is shown as ignored, with the entry. A live \
object Argo CD tracks for the Application that is not among its resources is extra; how it tracks \
(application.resourceTrackingMethod: annotation, label, annotation+label) is read from the argocd-cm \
ConfigMap, else Argo CD's default (annotation). Argo CD's own sync and health status is shown \
beside. See docs/gitops.md.

Exit codes: 0 no drift, 1 drift, 2 error (Argo CD not installed, an Application not found, a \
jqPathExpression that does not parse, a forbidden LIST).")]
    Application(ApplicationArgs),
    /// Scheduled checks that alert (Slack, webhook) only when drift is new
    #[command(after_help = "\
Examples:
  kubectl drift watch --all -A --interval 30m --slack-webhook \"$DRIFT_SLACK_WEBHOOK_URL\"
  kubectl drift watch shop -n shop --once --state ~/.cache/kubectl-drift/state.json   # from cron
  kubectl drift watch --all -A --state configmap:kubectl-drift/state --listen 0.0.0.0:8080
  kubectl drift watch --all -A --all-contexts --interval 1h   Every cluster; alerts name it

Alerts go out once per new or changed drift, once when it is resolved, and once per error; a \
failed post is retried next round. Webhook URLs may come from DRIFT_SLACK_WEBHOOK_URL and \
DRIFT_WEBHOOK_URL so they stay out of process lists; they are never logged.")]
    Watch(WatchArgs),
    /// Drift history kept by `watch --history` and `serve`: since when, by whom, how often
    #[command(long_about = HISTORY_ABOUT, after_help = HISTORY_EXAMPLES)]
    History(HistoryArgs),
    /// Drift of manifest files, folders or kustomizations: each object against its live counterpart
    #[command(after_help = "\
Folders are walked recursively for .yaml, .yml and .json files (names starting with '.' are \
skipped), in a stable order; each file may hold several documents and List objects. A folder \
holding a kustomization.yaml (or .yml, or Kustomization) is one kustomization, rendered with \
`kubectl kustomize` (kubectl from PATH, --kubectl or DRIFT_KUBECTL); a base that another kustomization \
of the run builds on is checked through it; Helm chart folders (Chart.yaml) are skipped, as are \
objects with only metadata.generateName. Without PATH, -f or -k, ./deploy is checked.

Objects without a namespace take -n, else the context's namespace. Who applied each object (its \
field manager) is read from the object itself, so additions by hand are found whether it was \
applied with `kubectl apply` or `kubectl apply --server-side`; --field-manager names it instead. \
Extra objects (live, in no file) are reported when the live objects carry an ApplySet label \
(`kubectl apply --prune --applyset`), or with --selector; never otherwise.

Exit codes: 0 no drift, 1 drift (or extra objects), 2 error (a file that cannot be parsed, a \
kustomization that does not render, a kind the cluster does not serve, a forbidden or failed \
read, a timeout); the other files are still checked.

Examples:
  kubectl drift manifests                               ./deploy, as a cron job would
  kubectl drift manifests deploy/ -n shop
  kubectl drift manifests -f app.yaml -f db.yaml
  helm template shop ./chart | kubectl drift manifests -f -    Manifests from standard input
  kubectl drift manifests -k overlays/prod -n shop      A kustomization, as kubectl diff -k
  kubectl drift manifests k8s/ -l app.kubernetes.io/part-of=shop   Also report extra objects
  kubectl drift manifests k8s/ -q --timeout 60          In cron or CI: summary only, exit code
  kubectl drift manifests k8s/ -o json
  kubectl drift manifests k8s/ --context staging,prod   The same folder against two clusters
  kubectl drift manifests k8s/ --field-manager argocd-controller
  kubectl drift manifests k8s/ --ignore 'Deployment:*:spec.replicas'
  helm drift manifests k8s/")]
    Manifests(ManifestsArgs),
    /// Objects nothing uses any more (ConfigMaps, Secrets, RBAC, PVCs, ...), with the evidence
    #[command(long_about = ORPHANS_ABOUT, after_help = ORPHANS_EXAMPLES)]
    Orphans(OrphansArgs),
    /// What is installed (cluster, nodes, Helm charts, images, APIs) and what upstream has released since
    #[command(long_about = VERSIONS_ABOUT, after_help = VERSIONS_EXAMPLES)]
    Versions(VersionsArgs),
    /// The dashboard: a read-only web page and JSON/CSV API over release drift, version drift and
    /// orphans, rescanning on a timer
    #[command(long_about = SERVE_ABOUT, after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Print a ValidatingAdmissionPolicy that warns a person whose edit of a Helm-, Flux- or Argo
    /// CD-managed object is drift (no cluster needed: it only prints)
    #[command(long_about = POLICY_ABOUT, after_help = POLICY_EXAMPLES)]
    Policy(PolicyArgs),
    /// Serve the Model Context Protocol on stdio: read-only tools (release drift, manifests drift,
    /// orphans, versions) for an assistant
    #[command(long_about = MCP_ABOUT, after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
    /// Compare one release deployed twice (two clusters, or two namespaces): chart, values and
    /// objects side by side, each difference from the values or from a hand edit
    #[command(long_about = COMPARE_ABOUT, after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Keep the hand edits: a values overlay that makes a Helm release render its live state
    #[command(long_about = ADOPT_ABOUT, after_help = ADOPT_EXAMPLES)]
    Adopt(AdoptArgs),
    /// Before `helm upgrade`: what it will change, which hand edits it will overwrite or keep,
    /// what will make it fail
    #[command(long_about = UPGRADE_ABOUT, after_help = UPGRADE_EXAMPLES)]
    Upgrade(UpgradeArgs),
    /// Print a shell completion script
    #[command(after_help = "\
Examples:
  source <(kubectl-drift completion bash)
  kubectl-drift completion zsh > \"${fpath[1]}/_kubectl-drift\"
  kubectl-drift completion fish > ~/.config/fish/completions/kubectl-drift.fish

`kubectl drift <TAB>` (kubectl 1.26+) needs kubectl_complete-drift on PATH (shipped next to the \
binary in release archives and the Helm plugin); `helm drift <TAB>` works once the plugin is \
installed. Both complete release names and namespaces from the cluster (2 s at most).")]
    Completion {
        /// The shell to write completion for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Clone, Args)]
#[command(mut_arg("history", |a| a.help(
    "Say since when, how often and by whom each drifted field has drifted, from the drift history \
     `watch --history` and `serve` keep (an SQLite file or postgres://...; only read)"
)))]
pub struct ReleaseArgs {
    /// Release names (or use --all)
    #[arg(value_name = "RELEASE", required_unless_present = "all", conflicts_with = "all")]
    pub releases: Vec<String>,
    /// Every release in the namespace, whatever its Helm status, except uninstalled ones (with -A:
    /// in every namespace)
    #[arg(long)]
    pub all: bool,
    /// Compare this revision instead of the deployed one
    #[arg(long, value_name = "N")]
    pub revision: Option<u32>,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub check: CheckArgs,
    /// Do not compare the charts' crds/ with the live CRDs (Helm never upgrades them; see
    /// docs/drift.md, CRDs)
    #[arg(long)]
    pub no_crds: bool,
    #[command(flatten)]
    pub in_flight: InFlightArg,
    /// Print the CRD NAME from the release chart's crds/ (as stored with the revision checked),
    /// for `| kubectl apply --server-side -f -`; nothing is compared
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub print_crd: Option<String>,
    /// A value a mutating webhook or policy changed during Helm's own write: ignore (shown with
    /// its cause, not counted; the default, or the config's admission_changes) or drift
    #[arg(long, value_name = "MODE", value_parser = admission_modes())]
    pub admission_changes: Option<AdmissionChanges>,
    #[command(flatten)]
    pub history: HistoryArg,
}

/// `kustomization` and `application`: which GitOps objects, and how to report.
#[derive(Debug, Clone, Args)]
#[command(mut_args(reword(&[
    ("output", "Output format (text, json, yaml, junit)"),
    ("output_files", "Also write FORMAT to PATH (repeatable), beside the -o output on stdout"),
    ("quiet", "One line per target"),
])))]
pub struct GitOpsArgs {
    /// Names (or use --all)
    #[arg(value_name = "NAME", required_unless_present = "all", conflicts_with = "all")]
    pub names: Vec<String>,
    /// Every one in the namespace (with -A: in every namespace)
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub report: ReportArgs,
    #[command(flatten)]
    pub check: CheckArgs,
}

/// `application`: the GitOps arguments, and how Argo CD tracks its objects.
#[derive(Debug, Clone, Args)]
pub struct ApplicationArgs {
    #[command(flatten)]
    pub gitops: GitOpsArgs,
    /// How Argo CD tracks objects: annotation, label or annotation+label (default: what argocd-cm
    /// says, else annotation)
    #[arg(long, value_name = "METHOD", value_parser = tracking_methods())]
    pub tracking_method: Option<crate::source::gitops::TrackingMethod>,
    /// Argo CD's own namespace, where its argocd-cm ConfigMap is (default: the Application's)
    #[arg(long, value_name = "NAMESPACE")]
    pub argocd_namespace: Option<String>,
}

const COMPARE_ABOUT: &str = "\
Compare one Helm release deployed twice: the same release in two clusters (--context a,b) or in \
two namespaces of one cluster (-n a,b; both: --context a,b -n x,y pairs them). Under Helm: helm \
drift compare RELEASE with --kube-context a,b or -n a,b.

Each side is read as `release` reads it (Helm's storage, the deployed revision, its live objects \
and its own drift), then shown side by side: the chart and app version of each deployed revision; \
the user-supplied values, key by key (secret-like keys such as password, token or apiKey \
redacted); each object, matched by kind and name (names that embed the release, namespace or \
cluster are matched with that part taken out), objects on one side only or deleted by hand on one \
side, and each field that differs live, with its cause: values (the two revisions render it \
differently) or a hand edit on the left, right or both (a drift finding of that side, with who \
made it). Server defaults, status and server metadata never count, so two identical installs \
compare equal. Secret data is redacted unless --show-secrets. With -f PATH instead of a release, \
one folder of manifests (the GitOps base of many clusters) is checked against both sides: every \
difference is then a hand edit on a side (the two sides render the same).

Expected differences are declared, not repeated: --ignore rules and the compare.ignore section of \
--config, in the syntax of the drift ignore rules (KIND[:NAMESPACE/NAME]:PATH), with the kinds \
Values (values paths) and Chart (name, version, appVersion); what they hide is counted. A value \
that differs only by the two sides' names (release, namespace, cluster) is ignored too, and \
counted. See docs/compare.md.

Output: text (two columns on a terminal, one column in a pipe; --view), json, yaml or csv.

Exit codes: 0 the same (but ignored differences), 1 different (or the release is deployed on one \
side only), 2 error (a side could not be read: named on stderr; the other side is still shown).";

const COMPARE_EXAMPLES: &str = "\
Examples:
  kubectl drift compare shop --context staging,prod -n shop     One release in two clusters
  kubectl drift compare shop -n shop-staging,shop-prod          Two namespaces of one cluster
  kubectl drift compare shop-eu,shop-us -n shop                 Two release names
  kubectl drift compare shop --context staging,prod --ignore 'Deployment:spec.replicas' \\
      --ignore 'Values:ingress.*'                                Expected differences
  kubectl drift compare shop --context staging,prod -o json     Machine-readable (docs/compare.md)
  kubectl drift compare -f deploy/ --context staging,prod -n shop   One folder against two clusters
  helm drift compare shop --kube-context staging,prod -n shop   The same, as a Helm plugin";

/// How `compare` lays out its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareView {
    /// Two columns on a terminal, one in a pipe or file
    Auto,
    /// Two columns, left and right
    Split,
    /// One column: each difference as a left line and a right line
    Unified,
}

/// Output formats of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum CompareFormat {
    #[default]
    Text,
    Json,
    Yaml,
    /// One row per difference
    Csv,
}

#[derive(Debug, Clone, Args)]
#[command(mut_args(reword(&[
    ("show_secrets", "Show Secret data and secret-like values instead of <redacted ...> (hidden by default)"),
    (
        "ignore",
        "Ignore an expected difference: KIND[:NAMESPACE/NAME]:PATH, PATH may end in *; kinds Values and Chart for \
         the values and the chart (repeatable)",
    ),
    ("config", "YAML file whose compare.ignore section lists the expected differences (docs/compare.md)"),
])))]
pub struct CompareArgs {
    /// The release to compare (LEFT,RIGHT when the two sides name it differently)
    #[arg(value_name = "RELEASE", required_unless_present = "filename", conflicts_with = "filename")]
    pub release: Option<String>,
    /// Instead of a release: manifest files or folders (kustomizations too), the same for both
    /// sides, checked against each (repeatable)
    #[arg(short = 'f', long = "filename", value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub filename: Vec<PathBuf>,
    /// The kubectl that renders kustomizations met in -f folders
    #[arg(long, env = "DRIFT_KUBECTL", default_value = "kubectl", value_name = "PATH", value_hint = ValueHint::CommandName)]
    pub kubectl: PathBuf,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = CompareFormat::Text, value_name = "FORMAT")]
    pub output: CompareFormat,
    /// Text layout: two columns (split) or one (unified); auto: split on a terminal
    #[arg(long, value_enum, default_value_t = CompareView::Auto, value_name = "VIEW")]
    pub view: CompareView,
    #[command(flatten)]
    pub check: CheckArgs,
}

/// Argo CD's tracking methods, as `argocd-cm` writes them (offered by completion).
fn admission_modes() -> impl clap::builder::TypedValueParser<Value = AdmissionChanges> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["ignore", "drift"]).map(|s: String| match s.as_str() {
        "drift" => AdmissionChanges::Drift,
        _ => AdmissionChanges::Ignore,
    })
}

fn tracking_methods() -> impl clap::builder::TypedValueParser<Value = crate::source::gitops::TrackingMethod> {
    use crate::source::gitops::TrackingMethod;
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["annotation", "label", "annotation+label"])
        .map(|s: String| TrackingMethod::parse(&s).unwrap_or_default())
}

#[derive(Debug, Clone, Args)]
#[command(mut_arg("history", |a| a.help(
    "Keep the drift history (since when, by whom, how often) in this SQLite file, or in PostgreSQL \
     (postgres://...) for a fleet; see `kubectl drift history`"
)))]
pub struct WatchArgs {
    /// Release names to watch (or use --all)
    #[arg(value_name = "RELEASE", conflicts_with = "all")]
    pub releases: Vec<String>,
    /// Every release in the namespace, whatever its Helm status, except uninstalled ones (with -A:
    /// in every namespace)
    #[arg(long)]
    pub all: bool,
    /// Also watch a folder or file of manifests (repeatable; each path is one alert target; `-`:
    /// a stream read from standard input once, at the start)
    #[arg(long = "manifests", value_name = "PATH")]
    pub manifests: Vec<PathBuf>,
    /// Also watch a Flux Kustomization in the namespace (repeatable; `*`: every one in the
    /// namespace, or in every namespace with -A); each is one alert target
    #[arg(long = "kustomization", value_name = "NAME")]
    pub kustomizations: Vec<String>,
    /// Also watch an Argo CD Application in the namespace (repeatable; `*` as for --kustomization)
    #[arg(long = "application", value_name = "NAME")]
    pub applications: Vec<String>,
    /// The kubectl that renders kustomizations met in --manifests folders
    #[arg(long, env = "DRIFT_KUBECTL", default_value = "kubectl", value_name = "PATH", value_hint = ValueHint::CommandName)]
    pub kubectl: PathBuf,
    /// Time between rounds (30s, 30m, 1h, ...)
    #[arg(long, default_value = "30m", value_name = "DURATION", conflicts_with = "once", value_parser = Span::parse)]
    pub interval: Span,
    /// Run one round and exit (0 clean, 1 drift, 2 error or undelivered alert): for cron
    #[arg(long)]
    pub once: bool,
    /// Keep live objects and release storage current with WATCH streams and alert within seconds
    /// of a change, instead of rounds
    #[arg(long, conflicts_with = "once")]
    pub live: bool,
    /// With --live: how often to rebuild the watch-fed cache from fresh LISTs and check everything
    #[arg(long, default_value = "6h", value_name = "DURATION", requires = "live", value_parser = Span::parse)]
    pub resync: Span,
    /// Slack incoming-webhook URL
    #[arg(long, env = "DRIFT_SLACK_WEBHOOK_URL", hide_env_values = true, value_name = "URL")]
    pub slack_webhook: Option<String>,
    /// Any URL to receive the JSON event
    #[arg(long, env = "DRIFT_WEBHOOK_URL", hide_env_values = true, value_name = "URL")]
    pub webhook: Option<String>,
    /// Where to remember what was alerted: a file, or configmap:NAMESPACE/NAME
    #[arg(long, value_name = "PATH")]
    pub state: Option<String>,
    #[command(flatten)]
    pub history: HistoryWriteArgs,
    #[command(flatten)]
    pub in_flight: InFlightArg,
    /// Serve /healthz, /readyz and /metrics on this address (e.g. 0.0.0.0:8080)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Add a `cluster` label with this name to every /metrics series, for one Prometheus that
    /// scrapes several clusters (not with several contexts: each series then names its own)
    #[arg(long, env = "DRIFT_CLUSTER_NAME", value_name = "NAME")]
    pub cluster_name: Option<String>,
    /// Where this cluster's kubectl-drift dashboard is, for links from alerts and Grafana
    /// (exposed as kubectl_drift_dashboard_info)
    #[arg(long, env = "DRIFT_EXTERNAL_URL", value_name = "URL")]
    pub external_url: Option<String>,
    /// Ignore a field: KIND[:NAMESPACE/NAME]:PATH (repeatable)
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    /// YAML file with ignore rules
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A value a mutating webhook or policy changed during Helm's own write: ignore (the
    /// default, or the config's admission_changes) or drift (alerted)
    #[arg(long, value_name = "MODE", value_parser = admission_modes())]
    pub admission_changes: Option<AdmissionChanges>,
}

#[derive(Debug, Clone, Args)]
#[command(mut_args(reword(&[("quiet", "Print only the summary")])))]
pub struct ManifestsArgs {
    /// Manifest files or folders (folders are walked recursively; default: ./deploy); `-` reads a
    /// YAML or JSON stream from standard input
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// A manifest file or folder, as kubectl spells it (repeatable; same as PATH; `-f -` is
    /// standard input)
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub filename: Vec<PathBuf>,
    /// The name standard input (`-f -`) is reported under
    #[arg(long, default_value = "-", value_name = "NAME")]
    pub stdin_name: String,
    /// A kustomization directory, rendered with `kubectl kustomize` as `kubectl apply -k` does (repeatable)
    #[arg(short = 'k', long = "kustomize", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub kustomize: Vec<PathBuf>,
    /// Report live objects with these labels that are in no file as extra (as `kubectl apply --prune -l`)
    #[arg(short = 'l', long, value_name = "LABELS")]
    pub selector: Option<String>,
    /// The kubectl that renders kustomizations (never used to talk to the cluster)
    #[arg(long, env = "DRIFT_KUBECTL", default_value = "kubectl", value_name = "PATH", value_hint = ValueHint::CommandName)]
    pub kubectl: PathBuf,
    #[command(flatten)]
    pub report: ReportArgs,
    /// Give up after this long (60, 60s, 2m); files not checked by then are errors (0: no limit)
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = Span::parse)]
    pub timeout: Span,
    #[command(flatten)]
    pub check: CheckArgs,
    /// The field manager that applied the manifests (default: read from each live object)
    #[arg(long, value_name = "NAME")]
    pub field_manager: Option<String>,
}

impl ManifestsArgs {
    /// Every PATH given, positional ones first, then those given with -f.
    pub fn all_paths(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filename).cloned().collect()
    }
}

const ADOPT_ABOUT: &str = "\
Keep the hand edits of a Helm release instead of undoing them: print a values overlay that, given \
to `helm upgrade RELEASE CHART --reuse-values -f overlay.yaml`, renders the live state of the \
fields that drifted (a replica count scaled by hand, a hotfixed image tag, an env value).

Which value renders which field is found from the chart stored in the release: it is rendered with \
helm template (HELM_BIN, else helm on PATH; never against the cluster) with a unique marker in every \
string value and a unique number in every numeric one, and where each lands says which value \
controls a field. Additions by hand (an env var, a container) are adopted into a list or map value \
that renders into the same place (an extraEnv-style value). Each adopted field is then proven: the \
chart is rendered with the release's values and the overlay, and the field must equal live. A field \
no value controls (hard-coded in a template, computed, or not proven) is listed with why and, where \
one helps, a kustomize patch for a post-renderer. Secret values are left out of the overlay \
(their keys are named) unless --show-secrets. Nothing is written to the cluster. See docs/adopt.md.

With -f PATH (files and folders, as `manifests` reads them) the manifest files are changed instead: \
each drifted value is written in place, keeping every other byte (comments, a comment on the \
changed line, key order, quoting, indentation), and each edit is proven by reading the file again. \
A unified diff is printed, or the files are written with --write. Additions and removals by hand, \
lists and maps changed whole, and objects of kustomizations are listed as not adoptable (yet).

Exit codes: 0 every drifted field adopted (or no drift), 1 something left (not adoptable, or a \
Secret value left out), 2 error (no helm binary, release not found, a render that failed, a drift \
check that could not see everything).";

const ADOPT_EXAMPLES: &str = "\
Examples:
  kubectl drift adopt shop -n shop > keep.yaml      The overlay, with what was adopted as comments
  helm upgrade shop ./chart -n shop --reuse-values -f keep.yaml
  kubectl drift adopt shop -n shop -o set           The same as --set flags
  kubectl drift adopt shop -n shop -o json          Field -> value key, old, new, proven
  helm drift adopt shop                             As a Helm plugin (its HELM_BIN renders)
  kubectl drift adopt -f k8s/ -n shop               A unified diff that makes the files hold the live values
  kubectl drift adopt -f k8s/ -n shop --write       The same, written into the files (comments and layout kept)";

/// `adopt`'s output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum AdoptFormat {
    /// A values overlay (YAML), what was adopted and what was not as comments
    #[default]
    Values,
    /// The mapping: each field, its value key, old and new value, proven; the fields left
    Json,
    /// Helm flags (--set, --set-string, --set-json) on one line; what was left on stderr
    Set,
}

#[derive(Debug, Clone, Args)]
#[command(mut_args(reword(&[
    ("show_secrets", "Write Secret values into the overlay (they are left out, and named, by default)"),
    (
        "ignore",
        "Ignore a field: KIND[:NAMESPACE/NAME]:PATH, PATH may end in * (repeatable); ignored fields are not drift \
         and are not adopted",
    ),
])))]
pub struct AdoptArgs {
    /// The Helm release whose live drift to adopt (or use -f for manifest files)
    #[arg(value_name = "RELEASE", required_unless_present = "filename", conflicts_with = "filename")]
    pub release: Option<String>,
    /// Manifest files or folders to change so that they hold the live values (repeatable; as
    /// `manifests` reads them); a unified diff is printed unless --write
    #[arg(short = 'f', long = "filename", value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub filename: Vec<PathBuf>,
    /// With -f: edit the files in place (format-preserving: only the drifted values change)
    #[arg(long, requires = "filename")]
    pub write: bool,
    /// The kubectl that renders kustomizations met in -f folders
    #[arg(long, env = "DRIFT_KUBECTL", default_value = "kubectl", value_name = "PATH", value_hint = ValueHint::CommandName)]
    pub kubectl: PathBuf,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = AdoptFormat::Values, value_name = "FORMAT")]
    pub output: AdoptFormat,
    #[command(flatten)]
    pub check: CheckArgs,
    #[command(flatten)]
    pub render: RenderArgs,
}

const UPGRADE_ABOUT: &str = "\
Predict a `helm upgrade RELEASE CHART` before running it, from three sides: the release's current \
manifest, the new revision rendered with helm template (HELM_BIN, else helm on PATH; with the \
cluster's version and APIs as capabilities, never against the cluster) and the live objects. Every \
difference gets one class: will block the upgrade (an immutable field, a server-side apply conflict, \
an object that exists and is not the release's; with the error Helm would hit), a hand edit the \
upgrade overwrites (with who and when, from managedFields), a chart or values change (with the \
values that cause it), an object created, an object deleted (with what still references it), a \
hand edit kept. Helm's write is modelled from the release's stored apply method: Helm 3's three-way \
merge, or Helm 4's server-side apply (conflicts unless --force-conflicts). Values are chosen as \
helm upgrade chooses them (--reuse-values, --reset-then-reuse-values, --reset-values; the previous \
values when none are given). Secret values are redacted unless --show-secrets. Nothing is written \
to the cluster. See docs/upgrade.md.

Exit codes: 0 nothing changes, 1 changes (with --fail-on: only the classes named), 2 error.";

const UPGRADE_EXAMPLES: &str = "\
Examples:
  kubectl drift upgrade shop ./chart -n shop -f prod.yaml
  kubectl drift upgrade shop repo/shop --version 2.0.0 -n shop --reuse-values
  kubectl drift upgrade shop oci://registry.example/charts/shop -n shop -o json
  kubectl drift upgrade shop ./chart -n shop --fail-on blocking    In CI: fail only when it would fail
  helm drift upgrade shop ./chart -f prod.yaml                     As a Helm plugin";

/// Which changes make `upgrade` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum FailOn {
    /// Only what will make the upgrade fail
    Blocking,
    /// That, and hand edits the upgrade overwrites
    Overwrite,
    /// Any change (the default)
    #[default]
    Any,
}

#[derive(Debug, Clone, Args)]
#[command(disable_version_flag = true)]
pub struct UpgradeArgs {
    /// The Helm release to upgrade
    #[arg(value_name = "RELEASE")]
    pub release: String,
    /// The chart, as helm upgrade takes it: a folder, a packaged chart, repo/name, oci://...
    #[arg(value_name = "CHART", value_hint = ValueHint::AnyPath)]
    pub chart: String,
    /// Values files, as helm upgrade -f (repeatable)
    #[arg(short = 'f', long = "values", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub values: Vec<PathBuf>,
    /// Set values, as helm upgrade --set (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// As helm upgrade --set-string (repeatable)
    #[arg(long = "set-string", value_name = "KEY=VALUE")]
    pub set_string: Vec<String>,
    /// As helm upgrade --set-json (repeatable)
    #[arg(long = "set-json", value_name = "KEY=JSON")]
    pub set_json: Vec<String>,
    /// As helm upgrade --set-file (repeatable)
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    pub set_file: Vec<String>,
    /// The chart version, as helm upgrade --version
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
    /// As helm upgrade --devel
    #[arg(long)]
    pub devel: bool,
    /// As helm upgrade --reuse-values: the previous values under the ones given
    #[arg(long, conflicts_with_all = ["reset_values", "reset_then_reuse_values"])]
    pub reuse_values: bool,
    /// As helm upgrade --reset-then-reuse-values
    #[arg(long, conflicts_with = "reset_values")]
    pub reset_then_reuse_values: bool,
    /// As helm upgrade --reset-values: only the values given
    #[arg(long)]
    pub reset_values: bool,
    /// As helm upgrade --force-conflicts (Helm 4, server-side apply): conflicts overwrite, not block
    #[arg(long)]
    pub force_conflicts: bool,
    /// Exit 1 only for these changes: blocking, overwrite (blocking or an overwritten hand edit), any
    #[arg(long, value_enum, default_value_t = FailOn::Any, value_name = "CLASS")]
    pub fail_on: FailOn,
    /// Output format (junit, sarif and github report the classes --fail-on counts as failures)
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text, value_name = "FORMAT")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub check: CheckArgs,
    #[command(flatten)]
    pub render: RenderArgs,
}

/// How `adopt` and `upgrade` render a chart with Helm.
#[derive(Args, Debug, Clone)]
pub struct RenderArgs {
    /// The helm binary that renders the chart (Helm sets HELM_BIN for its plugins)
    #[arg(long, env = "HELM_BIN", default_value = "helm", value_name = "PATH", value_hint = ValueHint::CommandName)]
    pub helm: PathBuf,
    /// Give up on one render of the chart after this long
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = Span::parse)]
    pub render_timeout: Span,
}

/// Subcommand names, for the Helm plugin rewrite and for completion.
pub const SUBCOMMANDS: &[&str] = &[
    "release",
    "manifests",
    "kustomization",
    "application",
    "orphans",
    "versions",
    "watch",
    "history",
    "serve",
    "policy",
    "mcp",
    "compare",
    "adopt",
    "upgrade",
    "completion",
    "help",
];

/// The hidden argument that asks for completion candidates instead of running a command.
pub const COMPLETE_ARG: &str = "__complete";

/// The executable name kubectl runs to complete `kubectl drift ...` (kubectl 1.26+).
pub const KUBECTL_COMPLETE_NAME: &str = "kubectl_complete-drift";

/// The words to complete when this run is a completion request, else `None`: either
/// `kubectl-drift __complete WORDS...` or the binary invoked under the name
/// `kubectl_complete-drift` (a link or copy of it), as kubectl's plugin completion runs it.
/// The last word is the one being completed (possibly empty).
pub fn completion_words(args: &[String]) -> Option<Vec<String>> {
    let program = args.first()?;
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    if base == KUBECTL_COMPLETE_NAME {
        return Some(args[1..].to_vec());
    }
    if args.get(1).map(String::as_str) == Some(COMPLETE_ARG) {
        return Some(args[2..].to_vec());
    }
    None
}
const ORPHANS_ABOUT: &str = "\
Objects nothing uses any more, each with the evidence that lets you decide.

Every examined object gets one class: orphan (nothing uses or manages it; \"leftover\" when its \
Helm release is gone), in use (what uses it: live pods AND pod templates of Deployments, \
StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs, ServiceAccounts, Ingresses, bindings, \
...), managed (an installed Helm release, an owner, cert-manager, Argo CD or another manager \
would recreate it), protected (system:*, kube-root-ca.crt, default ServiceAccounts, Helm \
storage, token Secrets, your protect rules: never offered for deletion) or ignored (your \
--ignore rules, or younger than --older-than). Precedence: protected > in use > managed > orphan.

Cluster-scoped kinds (PersistentVolume, ClusterRole, ClusterRoleBinding, StorageClass, \
PriorityClass) are examined only with -A. Secret data is never read: Secrets and ConfigMaps are \
listed as metadata only. It only reads; --script writes a bash script that a person runs.

Exit codes: 0 no orphans, 1 orphans found, 2 error (including a kind it was not allowed to list).";

const ORPHANS_EXAMPLES: &str = "\
Examples:
  kubectl drift orphans -n shop                       Orphans in one namespace
  kubectl drift orphans -A --show all                 Every examined object with its class
  kubectl drift orphans -A --kinds configmap,secret   Only some kinds
  kubectl drift orphans -n shop --older-than 7d -o json
  kubectl drift orphans -n shop --ignore 'ConfigMap:shop/legacy-*'
  kubectl drift orphans -n shop --script delete > cleanup.sh   Review, then: bash cleanup.sh
  kubectl drift orphans -A --all-contexts -o csv      Every cluster, a cluster column
  helm drift orphans -n shop                          The same, as a Helm plugin";

/// Output formats of `orphans`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OrphansFormat {
    #[default]
    Table,
    Json,
    Yaml,
    Csv,
    /// JUnit XML: a testsuite per kind or category, a testcase per row
    Junit,
}

/// Which objects `orphans` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ShowMode {
    /// Only the orphans
    #[default]
    Orphans,
    /// Every examined object with its class
    All,
}

/// Which cleanup script `orphans --script` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScriptKind {
    /// Back up each orphan to a directory (restore with kubectl apply -f DIR)
    Export,
    /// Back up each orphan, then delete it right after its own backup succeeded
    Delete,
}

#[derive(Debug, Clone, Args)]
pub struct OrphansArgs {
    /// Kinds to examine, comma-separated (default: all; cluster-scoped ones need -A):
    /// configmap, secret, serviceaccount, service, pvc, pv, role, clusterrole, rolebinding,
    /// clusterrolebinding, hpa, pdb, networkpolicy, ingress, deployment, statefulset, job,
    /// storageclass, priorityclass
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub kinds: Vec<String>,
    /// Only call objects older than this orphans (s, m, h, d: 0s, 30m, 1h30m, 7d)
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = Span::parse)]
    pub older_than: Span,
    /// List only the orphans, or every examined object with its class
    #[arg(long, value_enum, default_value_t = ShowMode::Orphans, value_name = "WHAT")]
    pub show: ShowMode,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OrphansFormat::Table, value_name = "FORMAT")]
    pub output: OrphansFormat,
    /// Also write FORMAT to PATH (repeatable), beside the -o output on stdout: e.g.
    /// --output-file junit=drift.xml --output-file sarif=drift.sarif
    #[arg(long = "output-file", value_name = "FORMAT=PATH", value_parser = parse_output_file::<OrphansFormat>)]
    pub output_files: Vec<OutputFile<OrphansFormat>>,
    /// YAML file with an `orphans:` section of ignore and protect rules (see docs/output.md)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Ignore objects: KIND, KIND:NAME, KIND:NAMESPACE/NAME (globs), or
    /// kind=..,namespace=..,name=..,name_regex=..,source=..,note=.. (repeatable)
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    /// Write a bash cleanup script for the orphans instead of the report
    #[arg(long, value_enum, value_name = "export|delete")]
    pub script: Option<ScriptKind>,
    /// Read at most N objects of each custom resource kind (0: no limit); a kind with more is
    /// skipped, what it could reference is not called an orphan, and the exit code is 2
    #[arg(long, default_value_t = crate::engine::orphans::custom::DEFAULT_CAP, value_name = "N")]
    pub max_custom_objects: usize,
}

const SERVE_ABOUT: &str = "\
The dashboard: one page and a JSON/CSV API (described by /openapi.json, browsable at /docs) that \
show config drift of every Helm release, version drift and orphans side by side. Scans run on a \
timer and on request (never two of one scope at once); the last results, the ignores and the rules \
are kept in --data-dir, so a restarted server shows them at once, marked with their time.

With --live the releases are kept current between scans by WATCH streams (as watch --live; a \
scan rebuilds the watch-fed cache), and the page is told of each change (GET /api/events, Server-\
Sent Events): an edit by hand shows within seconds, without a rescan.

It only reads the cluster (get, list, watch). With --auth kubernetes it also creates TokenReviews and \
SubjectAccessReviews, which check a caller's token and store nothing.

The version scan is `kubectl drift versions` (every category; with -n, cluster and nodes are \
left out as in versions): it asks the upstreams of the \
config's versions: section (Kubernetes release pointers, GitHub, ArtifactHub, registries), caching \
their answers as versions does.

Scope: every namespace, or the one given with -n. Listens on 127.0.0.1:8080 (reach it with \
kubectl port-forward); another address needs --auth kubernetes or an explicit --auth none. \
--health-listen serves only /healthz, /readyz and /metrics (no inventory), for probes and \
Prometheus. /mcp serves the read-only tools of `kubectl drift mcp` to assistants over streamable \
HTTP, behind the same --auth (docs/mcp.md).";

const SERVE_EXAMPLES: &str = "\
Examples:
  kubectl drift serve                                    http://127.0.0.1:8080, every namespace
  kubectl drift serve -n shop --interval 5m --older-than 0s
  kubectl drift serve --live                             config drift updated within seconds of an edit
  kubectl drift serve --listen 0.0.0.0:8080 --auth kubernetes --config drift.yaml
  DRIFT_CLUSTER_NAME=prod DRIFT_DATA_DIR=/data kubectl drift serve   In a Pod (deploy/dashboard)";

/// How `serve` checks callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeAuth {
    /// No check: anyone who reaches the address may use it
    None,
    /// A bearer token, checked with TokenReview and authorised with SubjectAccessReview
    Kubernetes,
}

/// `policy`: whose objects, what to do, where.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// Whose objects to watch over: helm, flux, argocd (its tracking annotation), argocd-label
    /// (its app.kubernetes.io/instance label tracking; many charts set that label too)
    #[arg(long = "for", value_enum, value_delimiter = ',', default_value = "helm,flux,argocd", value_name = "OWNERS")]
    pub owners: Vec<PolicyOwner>,
    /// Only in namespaces matching this label selector (as -l takes it: `team=shop`,
    /// `kubernetes.io/metadata.name in (shop,web)`); cluster-scoped objects are then left out
    #[arg(long, value_name = "SELECTOR")]
    pub namespace_selector: Option<String>,
    /// What the binding does with a hand edit: warn (kubectl prints it), audit (the audit log
    /// records it), or both; never deny
    #[arg(long, value_enum, value_delimiter = ',', default_value = "warn,audit", value_name = "ACTIONS")]
    pub action: Vec<PolicyAction>,
    /// Name of the policy and its binding (the scale policies add -scale-deployments and
    /// -scale-statefulsets)
    #[arg(long, default_value = crate::engine::policy::DEFAULT_NAME, value_name = "NAME")]
    pub name: String,
}

/// The values of `policy --for`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum PolicyOwner {
    /// Helm releases (app.kubernetes.io/managed-by: Helm and meta.helm.sh/release-name)
    Helm,
    /// Flux Kustomizations and HelmReleases (kustomize.toolkit.fluxcd.io/*, helm.toolkit.fluxcd.io/* labels)
    Flux,
    /// Argo CD Applications tracking by annotation (argocd.argoproj.io/tracking-id)
    Argocd,
    /// Argo CD Applications tracking by label (app.kubernetes.io/instance, on objects Helm does not manage)
    ArgocdLabel,
}

/// The values of `policy --action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum PolicyAction {
    /// A warning in the API response (kubectl prints `Warning: ...`)
    Warn,
    /// An annotation on the request's audit event
    Audit,
}

const POLICY_ABOUT: &str = "\
Print YAML for the cluster's own admission: a ValidatingAdmissionPolicy and its binding \
(admissionregistration.k8s.io/v1, CEL; no webhook, no server of ours in the request path), and one \
more pair each for the scale subresource of Deployments and StatefulSets. Applied, it warns a person \
who updates or patches an object a Helm release, Flux or Argo CD manages that the change is drift, \
naming the owner and what reverts it. It stays silent for the owners' own writes (Helm 3 and 4 \
upgrade and rollback, Flux's controllers, Argo CD's sync: their field managers), for the cluster's \
controllers (the HPA, the controller manager: their users) and for status writes. The actions are \
Warn and Audit only, with failurePolicy Ignore: nothing is ever denied or blocked.

Nothing is sent to the cluster: apply the output yourself. What the API server lets CEL see, and \
which writes it cannot tell apart, is in docs/policy.md.";

const POLICY_EXAMPLES: &str = "\
Examples:
  kubectl drift policy | kubectl apply -f -                  Warn and audit, every namespace
  kubectl drift policy --for helm --action warn              Helm releases only, warnings only
  kubectl drift policy --namespace-selector 'team=shop'      Only the namespaces labelled team=shop
  kubectl drift policy --for flux,argocd-label --name gitops-edits
  kubectl apply -k deploy/policy                             The default policy, from the repository
  helm drift policy                                          The same, as a Helm plugin";

#[derive(Debug, Clone, Args)]
#[command(mut_arg("history", |a| a.help(
    "The drift history: an SQLite file, PostgreSQL (postgres://...) for a fleet, or \"off\" \
     (default: history.db in --data-dir)"
)))]
pub struct ServeArgs {
    /// Address of the page and API (another than loopback needs --auth)
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// Address serving only /healthz, /readyz and /metrics ("off": none)
    #[arg(long, default_value = "0.0.0.0:8081", value_name = "ADDR")]
    pub health_listen: String,
    /// Time between scans (s, m, h, d)
    #[arg(long, env = "DRIFT_SCAN_INTERVAL", default_value = "10m", value_name = "DURATION", value_parser = Span::parse)]
    pub interval: Span,
    /// Directory for the last results, ignores and rules (created if missing)
    #[arg(long, env = "DRIFT_DATA_DIR", default_value = "kubectl-drift-data", value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub data_dir: PathBuf,
    /// YAML file with release ignore rules, an `orphans:` section, a `versions:` section (upstream
    /// URLs, registries, as for `versions`) and a `serve:` section
    #[arg(long, env = "DRIFT_CONFIG", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,
    /// Name shown in the page header (default: the kubeconfig context, else "in-cluster"); when
    /// given, also a `cluster` label on every /metrics series
    #[arg(long, env = "DRIFT_CLUSTER_NAME", value_name = "NAME")]
    pub cluster_name: Option<String>,
    /// Where users reach this dashboard (e.g. https://drift.prod.example.com), for links from
    /// alerts and Grafana (exposed as kubectl_drift_dashboard_info)
    #[arg(long, env = "DRIFT_EXTERNAL_URL", value_name = "URL")]
    pub external_url: Option<String>,
    /// How callers are checked: none, or kubernetes (TokenReview + SubjectAccessReview)
    #[arg(long, value_enum, value_name = "MODE")]
    pub auth: Option<ServeAuth>,
    /// Only call objects older than this orphans (as `orphans --older-than`)
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = Span::parse)]
    pub older_than: Span,
    #[command(flatten)]
    pub history: HistoryWriteArgs,
    /// Keep the releases result current with WATCH streams (as `watch --live`); the page updates
    /// within seconds of an edit, and --interval rebuilds the watch-fed cache
    #[arg(long)]
    pub live: bool,
    #[command(flatten)]
    pub in_flight: InFlightArg,
    /// /metrics: the N namespaces with the most orphans keep their own
    /// kubectl_drift_orphan_objects series; the others are summed under namespace="(other)"
    /// (kubectl_drift_orphan_namespaces_folded says how many). Totals are unchanged
    #[arg(
        long,
        env = "DRIFT_METRICS_ORPHAN_NAMESPACES",
        default_value_t = crate::app::metrics::DEFAULT_ORPHAN_NAMESPACES,
        value_name = "N"
    )]
    pub metrics_orphan_namespaces: usize,
}

const HISTORY_ABOUT: &str = "\
The drift history that `watch --history` and `serve` keep: for each finding (cluster, target, \
object, field path) when it was first and last seen, when it was resolved, how many episodes it had \
(each time it came back after being resolved: someone fighting the controller) and the field \
managers that made its changes. Values are never stored, only digests of what the report shows.

Newest first, grouped by target. Without -n every namespace is shown (-A says the same).

Exit codes: 0 no finding open, 1 some finding open, 2 error (no history there, a corrupt file, \
PostgreSQL unreachable).";

const HISTORY_EXAMPLES: &str = "\
Examples:
  kubectl drift history --history ~/.cache/kubectl-drift/history.db
  kubectl drift history shop -n shop --history history.db --since 7d
  kubectl drift history -A --history postgres://drift@db/drift -o json
  kubectl drift history -A --history kubectl-drift-data/history.db -o csv > drift-history.csv";

/// `history`: which findings, from where, in which format.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("history", |a| a.required(true).help(
    "The history: an SQLite file or a PostgreSQL connection string (postgres://...)"
)))]
pub struct HistoryArgs {
    /// Only this release (or manifests target) name
    #[arg(value_name = "RELEASE")]
    pub release: Option<String>,
    #[command(flatten)]
    pub history: HistoryArg,
    /// Only findings open now or seen within this long (7d, 12h, ...)
    #[arg(long, value_name = "DURATION", value_parser = Span::parse)]
    pub since: Option<Span>,
    /// Only this cluster (as watch and serve name it: the context, or --cluster-name)
    #[arg(long = "cluster", value_name = "NAME")]
    pub cluster: Option<String>,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = HistoryFormat::Text, value_name = "FORMAT")]
    pub output: HistoryFormat,
}

/// `--history`, one definition for every command that reads or writes the drift history
/// (docs/history.md): `watch` and `serve` write it ([`HistoryWriteArgs`]), `history` and
/// `release` only read it. Each command says in its help what it does with it (`mut_arg`); what
/// the value means (a file, a DSN, "off") is decided in one place, `app::recorder::location`.
#[derive(Debug, Clone, Default, Args)]
pub struct HistoryArg {
    /// The drift history: an SQLite file, or PostgreSQL (postgres://...) shared by a fleet
    #[arg(id = "history", long = "history", env = "DRIFT_HISTORY", hide_env_values = true, value_name = "PATH|DSN")]
    pub location: Option<String>,
}

/// `--history` and `--history-retention` of the commands that write the history (`watch`,
/// `serve`).
#[derive(Debug, Clone, Args)]
pub struct HistoryWriteArgs {
    #[command(flatten)]
    pub at: HistoryArg,
    /// Forget history resolved longer ago than this
    #[arg(long = "history-retention", default_value = "90d", value_name = "DURATION", value_parser = Span::parse)]
    pub retention: Span,
}

/// `--releases-in-flight`, of the commands that check Helm releases (`release`, `watch`,
/// `serve`): how many releases are checked at once. Each holds its namespace's LISTs while it is
/// checked, so fewer is less memory on a big cluster (a pod with a small limit) and more time.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct InFlightArg {
    /// How many releases are checked at once (default 24); each holds its namespace's lists, so
    /// fewer uses less memory on a big cluster and takes longer (docs/drift.md, Sizing)
    #[arg(long, env = "DRIFT_RELEASES_IN_FLIGHT", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub releases_in_flight: Option<u16>,
}

/// `history -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum HistoryFormat {
    #[default]
    Text,
    Json,
    Csv,
}

/// Under Helm (`HELM_PLUGIN_NAME` set), `helm drift RELEASE` and `helm drift --all` mean
/// `release RELEASE` and `release --all`. Returns the argument list to parse.
pub fn helm_plugin_args(args: Vec<String>, under_helm: bool) -> Vec<String> {
    if !under_helm || args.len() < 2 {
        return args;
    }
    let first = args[1].as_str();
    let keep = SUBCOMMANDS.contains(&first) || matches!(first, "-h" | "--help" | "-V" | "--version");
    if keep {
        return args;
    }
    let mut out = Vec::with_capacity(args.len() + 1);
    out.push(args[0].clone());
    out.push("release".to_string());
    out.extend(args.into_iter().skip(1));
    out
}

const VERSIONS_ABOUT: &str = "\
What is installed and what upstream has released since, with where to read the release notes.

Categories: cluster (/version against the Kubernetes release pointers stable-1.N.txt and stable.txt; \
control-plane static pods, kube-proxy and CoreDNS images), nodes (kubelet and container runtime, \
nodes with the same versions in one row; containerd against its GitHub releases), helm (each \
release's chart version against the repository named in the config, else ArtifactHub, scored), \
workloads (images of Deployments, StatefulSets, DaemonSets and CronJobs not managed by Helm, \
against their registry's tags; floating tags such as latest by digest against the running pods' \
imageID), apis (objects in Helm releases, --manifests files and live objects whose apiVersion is \
deprecated or removed in the next minors).

With -n (or the context's namespace) the scan is scoped to that namespace, as kubectl is: the \
cluster-wide categories (cluster, nodes) are left out unless --category names them, and the \
summary says so; -A scans every category.

Tags are compared only with tags of the same shape (prefix, v, number of parts, suffix); \
prereleases, signature tags and hex tags are ignored; a lower version is never suggested. \
Upstream base URLs, registries, credentials (environment variable names), per-image and per-chart \
track and source, ignore rules, groups and opt-in app probes (an HTTP URL and a JSON pointer or \
regex asking a running app its version, for images on floating tags; see docs/versions.md) come \
from the `versions:` section of --config (see docs/output.md). Answers are cached on disk \
(default 6h), so a rerun makes no tag-list requests.

Exit codes: 0 all current, 1 something behind (or an API problem), 2 a lookup failed (the other \
rows are still reported).";

const VERSIONS_EXAMPLES: &str = "\
Examples:
  kubectl drift versions -A                            Everything, every namespace
  kubectl drift versions -n shop --show outdated       Only what is behind
  kubectl drift versions --category cluster,nodes      The cluster itself
  kubectl drift versions -A --show all -o json         Helm-managed images too, as JSON
  kubectl drift versions --category apis --manifests k8s/   APIs removed in the next minors
  kubectl drift versions --category apis --target-version 1.38   Ready to upgrade to 1.38?
  kubectl drift versions -A --config drift.yaml -o csv
  kubectl drift versions --category cluster,nodes --all-contexts   Every cluster's Kubernetes
  helm drift versions -A                               The same, as a Helm plugin";

/// Which rows `versions` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VersionsShow {
    /// Only rows that are not current
    Outdated,
    /// Every row, images of Helm-managed workloads and ignored rows included
    All,
}

#[derive(Debug, Clone, Args)]
pub struct VersionsArgs {
    /// Categories to report, comma-separated: cluster, nodes, helm, workloads, apis (default: all)
    #[arg(long = "category", value_name = "CATEGORIES", value_delimiter = ',',
          value_parser = ["cluster", "nodes", "helm", "workloads", "apis"])]
    pub categories: Vec<String>,
    /// Which rows to list (default: every row except images of Helm-managed workloads)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub show: Option<VersionsShow>,
    /// Output format
    #[arg(short = 'o', long, value_enum, default_value_t = OrphansFormat::Table, value_name = "FORMAT")]
    pub output: OrphansFormat,
    /// Also write FORMAT to PATH (repeatable), beside the -o output on stdout: e.g.
    /// --output-file junit=drift.xml --output-file sarif=drift.sarif
    #[arg(long = "output-file", value_name = "FORMAT=PATH", value_parser = parse_output_file::<OrphansFormat>)]
    pub output_files: Vec<OutputFile<OrphansFormat>>,
    /// YAML file with a `versions:` section (sources, registries, tracks, ignore rules, groups, probes)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,
    /// Ignore objects: KIND, KIND:NAME, KIND:NAMESPACE/NAME (globs), or
    /// kind=..,namespace=..,name=..,name_regex=..,source=..,note=.. (repeatable)
    #[arg(long = "ignore", value_name = "RULE")]
    pub ignore: Vec<String>,
    /// Manifest files or folders whose apiVersions the apis category checks (repeatable)
    #[arg(long = "manifests", value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub manifests: Vec<PathBuf>,
    /// Judge the apis category against a planned upgrade (1.38, v1.38 or 1.38.2): what is
    /// deprecated or removed by that minor, instead of the installed minor and the next two
    #[arg(long = "target-version", value_name = "VERSION", value_parser = parse_target_minor)]
    pub target_version: Option<u64>,
    /// Do not read or write the on-disk cache of upstream answers
    #[arg(long)]
    pub no_cache: bool,
}

const MCP_ABOUT: &str = "\
Serve the Model Context Protocol (MCP) on standard input and output, for an assistant (Claude \
Desktop, Claude Code, VS Code, ...) that starts it as a local server. Standard output carries only \
the protocol; log lines go to stderr.

Tools, all read-only (get and list, as the commands): release_drift (one release, a namespace's or \
every namespace's), manifests_drift (files, folders or kustomizations the assistant names, read \
from this machine), orphans and versions. Each answers with the same JSON as the command's -o json \
(structured content) and a short text summary. A large answer is bounded: at most --max-rows \
releases, files or rows (findings first), with a note saying how many were left out and how to \
narrow the question (one release, one namespace). Secret values are never shown: there is no way \
to ask for them.

The clusters are the ones the global flags select (--kubeconfig, --context a,b, --all-contexts), \
connected once at start; -n sets the default namespace of every tool. A cluster that cannot be \
read, an unknown release or a forbidden namespace is the tool's error (isError), not the \
server's. serve offers the same tools (but manifests_drift) at /mcp over streamable HTTP, behind \
its --auth. See docs/mcp.md.";

const MCP_EXAMPLES: &str = "\
Examples:
  kubectl drift mcp                                 The kubeconfig's current context
  kubectl drift mcp -n shop --config drift.yaml     Default namespace and ignore rules
  kubectl drift mcp --context prod-eu,prod-us       Two clusters (a tool may name one)
  claude mcp add drift -- kubectl-drift mcp         Register it with Claude Code

In a client's configuration (Claude Desktop, VS Code and others take this shape):
  {\"mcpServers\": {\"drift\": {\"command\": \"kubectl-drift\", \"args\": [\"mcp\"]}}}";

/// `mcp`: what the tools read besides the cluster, and how much they answer.
#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// YAML file with release ignore rules, an `orphans:` and a `versions:` section, as the
    /// commands read it (read once, at start)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,
    /// At most N releases, files or rows in one answer (findings first); a tool's `limit` may ask
    /// for fewer, or more up to 500
    #[arg(long, default_value_t = 50, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=500))]
    pub max_rows: u16,
}

/// The minor of a Kubernetes version as `--target-version` takes it: `1.38`, `v1.38`, `1.38.2`.
pub(crate) fn parse_target_minor(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a Kubernetes version: give it as 1.38 (v1.38 and 1.38.2 work too)");
    let rest = s.trim().trim_start_matches('v').strip_prefix("1.").ok_or_else(bad)?;
    let minor = rest.split('.').next().unwrap_or_default();
    let patch_ok = rest.split('.').skip(1).all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    match minor.parse::<u64>() {
        Ok(m) if patch_ok && rest.split('.').count() <= 2 => Ok(m),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    /// Every command's long help, rendered by clap at `width` columns.
    fn every_help(width: usize) -> Vec<(String, String)> {
        use clap::CommandFactory;
        fn walk(cmd: &mut clap::Command, path: String, width: usize, out: &mut Vec<(String, String)>) {
            let mut c = cmd.clone().term_width(width).max_term_width(width);
            out.push((path.clone(), c.render_long_help().to_string()));
            for sub in cmd.get_subcommands_mut() {
                let name = format!("{path} {}", sub.get_name());
                walk(sub, name, width, out);
            }
        }
        let mut out = Vec::new();
        walk(&mut Cli::command(), "kubectl-drift".into(), width, &mut out);
        out
    }

    /// `--output-file FORMAT=PATH`, repeatable, with each command's own formats: SARIF and
    /// GitHub annotations are not tables, so `orphans` and `versions` refuse them.
    #[test]
    fn output_files_take_the_commands_formats() {
        let cli = Cli::try_parse_from([
            "k",
            "manifests",
            "k8s",
            "-o",
            "text",
            "--output-file",
            "junit=out/drift.xml",
            "--output-file",
            "SARIF=a=b.sarif",
        ])
        .unwrap();
        let Command::Manifests(m) = cli.command else { panic!("not manifests") };
        assert_eq!(
            m.report.output_files,
            vec![
                OutputFile { format: OutputFormat::Junit, path: PathBuf::from("out/drift.xml") },
                OutputFile { format: OutputFormat::Sarif, path: PathBuf::from("a=b.sarif") },
            ]
        );
        for bad in ["junit", "xml=x", "junit="] {
            let e = Cli::try_parse_from(["k", "release", "--output-file", bad]).unwrap_err().to_string();
            assert!(e.contains("--output-file"), "{bad}: {e}");
        }
        let e = Cli::try_parse_from(["k", "orphans", "--output-file", "sarif=x"]).unwrap_err().to_string();
        assert!(e.contains("expected one of table, json, yaml, csv, junit"), "{e}");
        let cli = Cli::try_parse_from(["k", "versions", "-o", "junit", "--output-file", "csv=v.csv"]).unwrap();
        let Command::Versions(v) = cli.command else { panic!("not versions") };
        assert_eq!((v.output, v.output_files[0].format), (OrphansFormat::Junit, OrphansFormat::Csv));
    }

    /// A command that words a shared flag its own way keeps the flag in its place: `manifests`
    /// lists `-q` (its own help) before `--timeout` and `--timeout` before the flags of
    /// [`CheckArgs`], in the help and for the completion scripts alike.
    #[test]
    fn reworded_flags_keep_their_place() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let manifests = cli.find_subcommand("manifests").unwrap();
        let ids: Vec<&str> = manifests.get_arguments().map(|a| a.get_id().as_str()).collect();
        let pos = |id: &str| ids.iter().position(|i| *i == id).unwrap_or_else(|| panic!("no {id} in {ids:?}"));
        let order = ["kubectl", "output", "output_files", "quiet", "timeout", "show_secrets", "ignore", "config"];
        for pair in order.windows(2) {
            assert!(pos(pair[0]) < pos(pair[1]), "{} is not before {}: {ids:?}", pair[0], pair[1]);
        }
        let quiet = |cmd: &clap::Command| {
            let arg = cmd.get_arguments().find(|a| a.get_id() == "quiet").unwrap();
            arg.get_help().unwrap().to_string()
        };
        assert_eq!(quiet(manifests), "Print only the summary");
        assert_eq!(quiet(cli.find_subcommand("application").unwrap()), "One line per target");
        assert_eq!(quiet(cli.find_subcommand("release").unwrap()), "One line per release");
    }

    #[test]
    fn help_paragraphs_are_never_broken_mid_sentence() {
        // Prose is written as one line per paragraph and wrapped by clap to the terminal's width;
        // a line break in the source shows as a sentence cut in two (`... failed or` / `did not
        // finish`). At a width nothing needs wrapping, no line at the margin continues the one
        // before it with a lower-case word.
        let helps = every_help(10_000);
        assert!(helps.len() >= 8, "{}", helps.len());
        for (cmd, text) in &helps {
            let lines: Vec<&str> = text.lines().collect();
            for pair in lines.windows(2) {
                let next = pair[1].chars().next();
                assert!(
                    pair[0].trim().is_empty() || !next.is_some_and(|c| c.is_ascii_lowercase()),
                    "`{cmd} --help`: a sentence is broken across lines:\n{}\n{}",
                    pair[0],
                    pair[1]
                );
            }
        }
    }

    #[test]
    fn helm_short_form_becomes_release() {
        assert_eq!(helm_plugin_args(v(&["d", "shop"]), true), v(&["d", "release", "shop"]));
        assert_eq!(helm_plugin_args(v(&["d", "--all"]), true), v(&["d", "release", "--all"]));
        assert_eq!(helm_plugin_args(v(&["d", "release", "x"]), true), v(&["d", "release", "x"]));
        assert_eq!(helm_plugin_args(v(&["d", "--help"]), true), v(&["d", "--help"]));
        assert_eq!(helm_plugin_args(v(&["d", "shop"]), false), v(&["d", "shop"]));
        assert_eq!(helm_plugin_args(v(&["d", "orphans", "-A"]), true), v(&["d", "orphans", "-A"]));
    }

    #[test]
    fn orphans_flags() {
        let cli = Cli::try_parse_from([
            "k",
            "orphans",
            "-A",
            "--kinds",
            "cm,secret",
            "--older-than",
            "0s",
            "--show",
            "all",
            "-o",
            "csv",
            "--script",
            "delete",
        ])
        .unwrap();
        let Command::Orphans(a) = cli.command else { panic!("not orphans") };
        assert_eq!(a.kinds, vec!["cm", "secret"]);
        assert_eq!(a.older_than, Span::from_secs(0));
        assert_eq!(a.show, ShowMode::All);
        assert_eq!(a.output, OrphansFormat::Csv);
        assert_eq!(a.script, Some(ScriptKind::Delete));
        let cli = Cli::try_parse_from(["k", "orphans"]).unwrap();
        let Command::Orphans(a) = cli.command else { panic!("not orphans") };
        assert_eq!(a.older_than, Span::from_secs(3600));
        assert_eq!(a.show, ShowMode::Orphans);
        assert!(Cli::try_parse_from(["k", "orphans", "--script", "nuke"]).is_err());
    }

    #[test]
    fn every_duration_flag_takes_the_same_durations_and_names_itself_when_bad() {
        for (args, flag) in [
            (&["k", "orphans", "--older-than"][..], "--older-than"),
            (&["k", "watch", "--all", "--interval"][..], "--interval"),
            (&["k", "manifests", "x", "--timeout"][..], "--timeout"),
            (&["k", "release", "x", "--request-timeout"][..], "--request-timeout"),
        ] {
            for good in ["0", "90", "500ms", "1h30m", "2d"] {
                assert!(Cli::try_parse_from([args, &[good]].concat()).is_ok(), "{flag} {good}");
            }
            let e = Cli::try_parse_from([args, &["5x"]].concat()).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{flag}");
            let text = e.to_string();
            assert!(text.contains(&format!("for '{flag} <DURATION>'")) && text.contains("unknown unit"), "{text}");
        }
    }

    #[test]
    fn completion_entry_points() {
        assert_eq!(completion_words(&v(&["kubectl-drift", "__complete", "rel"])), Some(v(&["rel"])));
        assert_eq!(completion_words(&v(&["/p/kubectl_complete-drift", "release", ""])), Some(v(&["release", ""])));
        assert_eq!(completion_words(&v(&["C:\\k\\kubectl_complete-drift.exe"])), Some(v(&[])));
        assert_eq!(completion_words(&v(&["kubectl-drift", "release", "__complete"])), None);
        assert_eq!(completion_words(&v(&["kubectl-drift"])), None);
        assert_eq!(completion_words(&[]), None);
    }

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn release_needs_a_name_or_all() {
        assert!(Cli::try_parse_from(["k", "release"]).is_err());
        assert!(Cli::try_parse_from(["k", "release", "--all", "-A"]).is_ok());
        assert!(Cli::try_parse_from(["k", "release", "a", "--all"]).is_err());
        let cli = Cli::try_parse_from(["k", "release", "shop", "-n", "x", "-o", "json"]).unwrap();
        assert_eq!(cli.global.namespace.as_deref(), Some("x"));
    }

    #[test]
    fn manifests_takes_paths_or_dash_f() {
        // No PATH: ./deploy (decided when run, see manifest_files::paths_or_default).
        let cli = Cli::try_parse_from(["k", "manifests"]).unwrap();
        let Command::Manifests(m) = cli.command else { panic!("not manifests") };
        assert!(m.all_paths().is_empty() && m.kustomize.is_empty() && m.selector.is_none());
        let cli =
            Cli::try_parse_from(["k", "manifests", "-k", "o/prod", "--kustomize", "o/dev", "-l", "app=x"]).unwrap();
        let Command::Manifests(m) = cli.command else { panic!("not manifests") };
        assert_eq!(m.kustomize, vec![PathBuf::from("o/prod"), PathBuf::from("o/dev")]);
        assert_eq!(m.selector.as_deref(), Some("app=x"));
        let cli =
            Cli::try_parse_from(["k", "manifests", "a", "-f", "b.yaml", "-f", "c", "-q", "--timeout", "5"]).unwrap();
        let Command::Manifests(m) = cli.command else { panic!("not manifests") };
        assert_eq!(m.all_paths(), vec![PathBuf::from("a"), PathBuf::from("b.yaml"), PathBuf::from("c")]);
        assert!(m.report.quiet);
        assert_eq!(m.timeout, Span::from_secs(5));
        assert!(Cli::try_parse_from(["k", "manifests", "-f", "x"]).is_ok());
        // Under Helm, `helm drift manifests DIR` stays the manifests subcommand.
        assert_eq!(helm_plugin_args(v(&["d", "manifests", "x"]), true), v(&["d", "manifests", "x"]));
    }

    #[test]
    fn compare_takes_one_release_and_stays_compare_under_helm() {
        let cli =
            Cli::try_parse_from(["k", "compare", "shop", "--context", "a,b", "-o", "csv", "--ignore", "Values:x"])
                .unwrap();
        let Command::Compare(c) = cli.command else { panic!("not compare") };
        assert_eq!((c.release.as_deref(), c.output, c.check.ignore.len()), (Some("shop"), CompareFormat::Csv, 1));
        let cli = Cli::try_parse_from(["k", "compare", "-f", "deploy", "--context", "a,b"]).unwrap();
        let Command::Compare(c) = cli.command else { panic!("not compare") };
        assert_eq!((c.release, c.filename), (None, vec![PathBuf::from("deploy")]));
        assert!(Cli::try_parse_from(["k", "compare", "shop", "-f", "deploy"]).is_err());
        assert_eq!(cli.global.context, vec!["a", "b"]);
        assert!(Cli::try_parse_from(["k", "compare"]).is_err());
        assert_eq!(helm_plugin_args(v(&["d", "compare", "shop"]), true), v(&["d", "compare", "shop"]));
    }

    #[test]
    fn mcp_takes_a_config_and_a_row_bound() {
        let cli = Cli::try_parse_from(["k", "-n", "shop", "mcp", "--config", "drift.yaml"]).unwrap();
        let Command::Mcp(m) = cli.command else { panic!("not mcp") };
        assert_eq!((m.config.as_deref(), m.max_rows), (Some(std::path::Path::new("drift.yaml")), 50));
        assert_eq!(cli.global.namespace.as_deref(), Some("shop"));
        let cli = Cli::try_parse_from(["k", "mcp", "--max-rows", "500"]).unwrap();
        assert!(matches!(cli.command, Command::Mcp(McpArgs { max_rows: 500, .. })));
        for bad in ["0", "501", "many"] {
            assert!(Cli::try_parse_from(["k", "mcp", "--max-rows", bad]).is_err(), "{bad}");
        }
        // `helm drift mcp` is the subcommand, not a release named mcp.
        assert_eq!(helm_plugin_args(v(&["d", "mcp"]), true), v(&["d", "mcp"]));
    }
}
