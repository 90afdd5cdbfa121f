//! Shell completion answers for `kubectl drift <TAB>` (kubectl runs `kubectl_complete-drift`,
//! kubectl 1.26+), `helm drift <TAB>` (Helm runs the plugin's `plugin.complete`) and
//! `kubectl-drift __complete WORDS...`, which both of those call.
//!
//! The protocol is Cobra's, which kubectl and Helm relay: one candidate per line (optionally
//! `value<TAB>description`), then a last line `:<directive>`. [`plan`] decides from the words
//! typed so far what the last word needs; it is pure, and takes subcommands, flags and their
//! values from the clap definition, so completion never disagrees with `--help`. [`complete`]
//! then fills in release names (Helm storage labels), namespaces (the cluster) and contexts
//! (the kubeconfig). Cluster look-ups get [`CLUSTER_TIMEOUT`] in all and fail silently: an
//! unreachable cluster only means fewer candidates, never an error on the user's prompt.

use std::time::Duration;

use clap::{Arg, Command, CommandFactory, Parser, ValueHint};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::config::Kubeconfig;

use crate::app::cli::{Cli, GlobalArgs, GlobalOnly};
use crate::app::context::{ContextError, Settings};
use crate::app::environment::Environment;
pub use crate::report::completion::{Candidate, Completion, Directive};
use crate::source::helm::StorageError;

/// How long completion may spend on the cluster before answering without it.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(2);

/// What the word being completed needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// Candidates known without looking anywhere (subcommands, flags, enum values).
    Fixed(Vec<Candidate>),
    /// A file name: left to the shell.
    Files,
    /// Release names from Helm storage (not those already typed), plus `with`.
    Releases { typed: Vec<String>, with: Vec<Candidate> },
    /// Namespaces in the cluster.
    Namespaces,
    /// Contexts in the kubeconfig.
    Contexts,
    /// Nothing sensible to offer (a number, a free-form rule).
    Nothing,
}

/// What to complete, decided from the words alone.
#[derive(Debug)]
pub struct Plan {
    pub want: Want,
    /// The part of the last word typed so far (after `=` for `--flag=value`).
    pub prefix: String,
    /// Written before each candidate: `--namespace=` when completing `--namespace=pa`.
    pub insert: String,
    /// The connection flags typed so far, for cluster look-ups.
    pub global: GlobalArgs,
}

/// Why a cluster look-up for completion failed (never shown: completion stays silent).
#[derive(Debug, thiserror::Error)]
pub enum CompleteError {
    /// The kubeconfig or client could not be set up.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// Helm release storage could not be listed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Namespaces could not be listed.
    #[error("failed to list namespaces: {0}")]
    Namespaces(#[source] kube::Error),
    /// The kubeconfig could not be read for its contexts.
    #[error("failed to read the kubeconfig for its contexts: {0}")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    /// The cluster did not answer within [`CLUSTER_TIMEOUT`].
    #[error("the cluster did not answer within {CLUSTER_TIMEOUT:?}")]
    Timeout,
    /// The async runtime could not start.
    #[error("failed to start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// Complete `words` (the last one is being typed; it may be empty). Never fails: look-ups that
/// cannot be done give no candidates.
pub fn complete(words: &[String], env: &Environment) -> Completion {
    let plan = plan(words, env.under_helm);
    let directive = if plan.want == Want::Files { Directive::Default } else { Directive::NoFileComp };
    let found = match &plan.want {
        Want::Fixed(c) => c.clone(),
        Want::Files | Want::Nothing => Vec::new(),
        Want::Contexts => listed_contexts(&plan.prefix, contexts(&plan.global)),
        Want::Namespaces | Want::Releases { .. } => {
            let mut found = match &plan.want {
                Want::Releases { with, .. } => with.clone(),
                _ => Vec::new(),
            };
            found.extend(from_cluster(&plan, env).unwrap_or_default());
            found
        }
    };
    let typed: &[String] = match &plan.want {
        Want::Releases { typed, .. } => typed,
        _ => &[],
    };
    Completion { candidates: finish(found, &plan.prefix, &plan.insert, typed), directive }
}

/// Keep the candidates that start with `prefix` and were not typed already, without
/// duplicates, each with `insert` before it.
fn finish(found: Vec<Candidate>, prefix: &str, insert: &str, typed: &[String]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for c in found {
        if !c.value.starts_with(prefix) || typed.contains(&c.value) || out.iter().any(|o| o.value == c.value) {
            continue;
        }
        out.push(Candidate { value: format!("{insert}{}", c.value), description: c.description });
    }
    out
}

/// Decide what the last of `words` needs. `under_helm`: `helm drift RELEASE` is short for
/// `release RELEASE`, so release names are offered where a subcommand could go.
pub fn plan(words: &[String], under_helm: bool) -> Plan {
    let mut root = Cli::command();
    root.build();
    let (partial, typed) = match words.split_last() {
        Some((last, rest)) => (last.clone(), rest),
        None => (String::new(), &[][..]),
    };

    let mut sub: Option<String> = None;
    let mut positionals: Vec<String> = Vec::new();
    let mut global_words: Vec<String> = Vec::new();
    let mut pending: Option<Arg> = None;
    let mut flags_done = false;

    for word in typed {
        let scope = flag_scope(&root, sub.as_deref(), under_helm);
        if let Some(arg) = pending.take() {
            note_value(&arg, word, &mut global_words);
            continue;
        }
        if !flags_done && word == "--" {
            flags_done = true;
        } else if !flags_done && word.starts_with("--") {
            let (name, value) = match word[2..].split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (&word[2..], None),
            };
            if let Some(arg) = scope.get_arguments().find(|a| a.get_long() == Some(name)) {
                match (takes_value(arg), value) {
                    (true, Some(v)) => note_value(arg, v, &mut global_words),
                    (true, None) => pending = Some(arg.clone()),
                    (false, _) => note_flag(arg, &mut global_words),
                }
            }
        } else if !flags_done && word.starts_with('-') && word.len() > 1 {
            // A cluster of short flags (-qA), the last of which may take a value (-n ns, -nns).
            for (i, c) in word.char_indices().skip(1) {
                let Some(arg) = scope.get_arguments().find(|a| a.get_short() == Some(c)) else { break };
                if takes_value(arg) {
                    let rest = &word[i + c.len_utf8()..];
                    if rest.is_empty() {
                        pending = Some(arg.clone());
                    } else {
                        note_value(arg, rest.trim_start_matches('='), &mut global_words);
                    }
                    break;
                }
                note_flag(arg, &mut global_words);
            }
        } else if sub.is_none() && root.find_subcommand(word).is_some() {
            sub = Some(word.clone());
        } else {
            if sub.is_none() && under_helm {
                sub = Some("release".to_string());
            }
            positionals.push(word.clone());
        }
    }

    let global = GlobalOnly::try_parse_from(&global_words)
        .or_else(|_| GlobalOnly::try_parse_from(Vec::<String>::new()))
        .map(|g| g.global)
        .expect("the global flags parse with no words");
    let scope = flag_scope(&root, sub.as_deref(), under_helm);
    let mut plan = Plan { want: Want::Nothing, prefix: partial.clone(), insert: String::new(), global };

    if let Some(arg) = pending {
        plan.want = value_want(&arg);
    } else if !flags_done && partial.starts_with("--") && partial.contains('=') {
        let (name, value) = partial[2..].split_once('=').unwrap_or_default();
        if let Some(arg) = scope.get_arguments().find(|a| a.get_long() == Some(name) && takes_value(a)) {
            plan.want = value_want(arg);
            plan.insert = format!("--{name}=");
            plan.prefix = value.to_string();
        }
    } else if !flags_done && partial.starts_with('-') {
        plan.want = Want::Fixed(flags(scope));
    } else {
        plan.want = positional_want(&root, sub.as_deref(), &positionals, scope, under_helm);
    }
    plan
}

/// The command whose flags apply: the subcommand typed, or under Helm `release` (which
/// `helm drift` means when no subcommand is given), else the top level.
fn flag_scope<'a>(root: &'a Command, sub: Option<&str>, under_helm: bool) -> &'a Command {
    let name = sub.or(if under_helm { Some("release") } else { None });
    name.and_then(|n| root.find_subcommand(n)).unwrap_or(root)
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

/// Remember a global flag's value (for the cluster look-up); other flags are not needed.
fn note_value(arg: &Arg, value: &str, global_words: &mut Vec<String>) {
    if let (true, Some(long)) = (arg.is_global_set(), arg.get_long()) {
        global_words.push(format!("--{long}={value}"));
    }
}

fn note_flag(arg: &Arg, global_words: &mut Vec<String>) {
    if let (true, Some(long)) = (arg.is_global_set(), arg.get_long()) {
        global_words.push(format!("--{long}"));
    }
}

fn help_of(arg: &Arg) -> String {
    arg.get_help().map(|h| h.to_string()).unwrap_or_default()
}

/// Every visible flag of `cmd`, long forms then short forms.
fn flags(cmd: &Command) -> Vec<Candidate> {
    let visible: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_positional() && !a.is_hide_set()).collect();
    let mut out: Vec<Candidate> =
        visible.iter().filter_map(|a| a.get_long().map(|l| Candidate::new(format!("--{l}"), help_of(a)))).collect();
    out.extend(visible.iter().filter_map(|a| a.get_short().map(|s| Candidate::new(format!("-{s}"), help_of(a)))));
    out
}

/// What a flag's value needs.
fn value_want(arg: &Arg) -> Want {
    match arg.get_id().as_str() {
        "namespace" => return Want::Namespaces,
        "context" => return Want::Contexts,
        _ => {}
    }
    if matches!(arg.get_value_hint(), ValueHint::FilePath | ValueHint::AnyPath | ValueHint::DirPath) {
        return Want::Files;
    }
    let values = possible_values(arg);
    if values.is_empty() { Want::Nothing } else { Want::Fixed(values) }
}

fn possible_values(arg: &Arg) -> Vec<Candidate> {
    arg.get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| Candidate::new(v.get_name(), v.get_help().map(|h| h.to_string()).unwrap_or_default()))
        .collect()
}

fn subcommands(root: &Command) -> Vec<Candidate> {
    root.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| Candidate::new(s.get_name(), s.get_about().map(|a| a.to_string()).unwrap_or_default()))
        .collect()
}

/// What a positional word needs, given the subcommand and the positionals typed before it.
fn positional_want(
    root: &Command,
    sub: Option<&str>,
    positionals: &[String],
    scope: &Command,
    under_helm: bool,
) -> Want {
    let Some(sub) = sub else {
        return if under_helm {
            Want::Releases { typed: Vec::new(), with: subcommands(root) }
        } else {
            Want::Fixed(subcommands(root))
        };
    };
    if sub == "help" {
        return if positionals.is_empty() { Want::Fixed(subcommands(root)) } else { Want::Nothing };
    }
    let mut slots: Vec<&Arg> = scope.get_arguments().filter(|a| a.is_positional()).collect();
    slots.sort_by_key(|a| a.get_index());
    let slot = match slots.get(positionals.len()) {
        Some(a) => *a,
        None => match slots.last() {
            Some(last) if last.get_num_args().is_some_and(|n| n.max_values() > 1) => *last,
            _ => return Want::Nothing,
        },
    };
    // `release`'s names and `compare`'s one release.
    if slot.get_id() == "releases" || slot.get_id() == "release" {
        return Want::Releases { typed: positionals.to_vec(), with: Vec::new() };
    }
    let values = possible_values(slot);
    if values.is_empty() { Want::Nothing } else { Want::Fixed(values) }
}

/// `--context a,b,c`: the word being typed may already name contexts before its last comma; each
/// candidate is then the whole word (`a,b,NAME`), without the contexts already named.
fn listed_contexts(word: &str, found: Result<Vec<Candidate>, CompleteError>) -> Vec<Candidate> {
    let Some((before, _)) = word.rsplit_once(',') else { return found.unwrap_or_default() };
    let named: Vec<&str> = before.split(',').collect();
    found
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !named.contains(&c.value.as_str()))
        .map(|c| Candidate { value: format!("{before},{}", c.value), ..c })
        .collect()
}

/// Context names from the kubeconfig (`--kubeconfig`, else `KUBECONFIG`, else ~/.kube/config).
fn contexts(global: &GlobalArgs) -> Result<Vec<Candidate>, CompleteError> {
    let kc = match &global.kubeconfig {
        Some(path) => Kubeconfig::read_from(path),
        None => Kubeconfig::read(),
    }
    .map_err(CompleteError::Kubeconfig)?;
    Ok(kc
        .contexts
        .iter()
        .map(|c| {
            let cluster = c.context.as_ref().map(|x| x.cluster.clone()).unwrap_or_default();
            Candidate::new(
                c.name.clone(),
                if cluster.is_empty() { String::new() } else { format!("cluster {cluster}") },
            )
        })
        .collect())
}

/// Release names or namespaces from the cluster, within [`CLUSTER_TIMEOUT`].
fn from_cluster(plan: &Plan, env: &Environment) -> Result<Vec<Candidate>, CompleteError> {
    let mut global = plan.global.clone();
    global.request_timeout = crate::report::duration::Span::from_secs(CLUSTER_TIMEOUT.as_secs().max(1));
    let settings = Settings::resolve(&global, env)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(CompleteError::Runtime)?;
    let found = rt.block_on(async {
        tokio::time::timeout(CLUSTER_TIMEOUT, look_up(&plan.want, &settings))
            .await
            .unwrap_or(Err(CompleteError::Timeout))
    });
    // Do not wait for a connection attempt that is still hanging.
    rt.shutdown_background();
    found
}

async fn look_up(want: &Want, settings: &Settings) -> Result<Vec<Candidate>, CompleteError> {
    let mut config = settings.kube_config().await?;
    config.connect_timeout = Some(CLUSTER_TIMEOUT);
    let namespace = settings.explicit_namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let client = crate::app::context::client_from(config).map_err(CompleteError::Context)?;
    match want {
        Want::Namespaces => {
            let list = Api::<Namespace>::all(client)
                .list_metadata(&ListParams::default())
                .await
                .map_err(CompleteError::Namespaces)?;
            Ok(list.items.into_iter().filter_map(|n| n.metadata.name).map(|n| Candidate::new(n, "")).collect())
        }
        Want::Releases { .. } => {
            let store = settings.driver.open(client);
            let scope = if settings.all_namespaces { None } else { Some(namespace.as_str()) };
            let releases = store.summaries(scope).await?;
            Ok(releases
                .into_iter()
                .map(|r| {
                    let place = if settings.all_namespaces { format!("{}, ", r.namespace) } else { String::new() };
                    Candidate::new(r.name, format!("{place}revision {} {}", r.revision, r.status))
                })
                .collect())
        }
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    fn values(want: &Want) -> Vec<String> {
        match want {
            Want::Fixed(c) => c.iter().map(|c| c.value.clone()).collect(),
            Want::Releases { with, .. } => with.iter().map(|c| c.value.clone()).collect(),
            _ => Vec::new(),
        }
    }

    fn fixed(w: &[&str]) -> Vec<String> {
        let p = plan(&words(w), false);
        let Want::Fixed(c) = &p.want else { panic!("{w:?}: expected fixed candidates, got {:?}", p.want) };
        finish(c.clone(), &p.prefix, &p.insert, &[]).into_iter().map(|c| c.value).collect()
    }

    #[test]
    fn subcommands_at_the_top() {
        assert_eq!(fixed(&["rel"]), vec!["release"]);
        let all = fixed(&[""]);
        assert!(all.contains(&"release".to_string()) && all.contains(&"completion".to_string()), "{all:?}");
        assert!(!all.iter().any(|s| s.starts_with("__")), "hidden entry points are not offered: {all:?}");
        // Global flags before the subcommand do not change that.
        assert_eq!(fixed(&["-n", "shop", "--context", "prod", "rel"]), vec!["release"]);
    }

    #[test]
    fn flags_of_the_subcommand() {
        let f = fixed(&["release", "--"]);
        for want in ["--all", "--revision", "--output", "--namespace", "--context", "--show-secrets"] {
            assert!(f.contains(&want.to_string()), "{want} missing from {f:?}");
        }
        assert_eq!(fixed(&["release", "--rev"]), vec!["--revision"]);
        // Top level: global flags only.
        assert!(!fixed(&["--"]).contains(&"--revision".to_string()));
        assert!(fixed(&["-"]).contains(&"-n".to_string()));
    }

    #[test]
    fn enum_values_of_flags_and_positionals() {
        assert_eq!(fixed(&["release", "shop", "-o", ""]), vec!["text", "json", "yaml", "junit", "sarif", "github"]);
        assert_eq!(fixed(&["release", "shop", "--output", "j"]), vec!["json", "junit"]);
        assert_eq!(fixed(&["release", "--output=y"]), vec!["--output=yaml"]);
        assert_eq!(fixed(&["--color", "n"]), vec!["never"]);
        let shells = fixed(&["completion", ""]);
        assert!(shells.contains(&"bash".to_string()) && shells.contains(&"fish".to_string()), "{shells:?}");
        assert_eq!(plan(&words(&["completion", "bash", ""]), false).want, Want::Nothing);
        assert_eq!(fixed(&["help", "re"]), vec!["release"]);
    }

    #[test]
    fn release_names_namespaces_contexts_files() {
        let p = plan(&words(&["release", "-n", "shop", "cart", "s"]), false);
        assert_eq!(p.want, Want::Releases { typed: words(&["cart"]), with: vec![] });
        assert_eq!(p.prefix, "s");
        assert_eq!(p.global.namespace.as_deref(), Some("shop"));

        let p = plan(&words(&["release", "--namespace=shop", "--context", "prod", "-A", ""]), false);
        assert_eq!(p.global.namespace.as_deref(), Some("shop"));
        assert_eq!(p.global.context, vec!["prod".to_string()]);
        assert!(p.global.all_namespaces);

        let p = plan(&words(&["release", "-nshop", "x"]), false);
        assert_eq!(p.global.namespace.as_deref(), Some("shop"));

        assert_eq!(plan(&words(&["release", "-n", "sh"]), false).want, Want::Namespaces);
        let p = plan(&words(&["compare", "-n", "shop", "ca"]), false);
        assert!(matches!(p.want, Want::Releases { .. }), "compare completes its release: {:?}", p.want);
        let p = plan(&words(&["release", "--namespace=sh"]), false);
        assert_eq!((p.want, p.prefix.as_str(), p.insert.as_str()), (Want::Namespaces, "sh", "--namespace="));
        assert_eq!(plan(&words(&["--context", ""]), false).want, Want::Contexts);
        assert_eq!(plan(&words(&["--context", "prod-eu,"]), false).want, Want::Contexts);
        let found = || Ok(vec![Candidate::new("prod-eu", ""), Candidate::new("prod-us", "")]);
        let values = |w: &str| listed_contexts(w, found()).into_iter().map(|c| c.value).collect::<Vec<_>>();
        assert_eq!(values("pr"), vec!["prod-eu", "prod-us"]);
        assert_eq!(values("prod-eu,"), vec!["prod-eu,prod-us"]);
        assert_eq!(values("prod-us,p"), vec!["prod-us,prod-eu"]);
        let p = plan(&words(&["release", "--context=prod-eu,p"]), false);
        assert_eq!((p.want, p.prefix.as_str(), p.insert.as_str()), (Want::Contexts, "prod-eu,p", "--context="));
        assert_eq!(plan(&words(&["release", "--kubeconfig", "/tm"]), false).want, Want::Files);
        assert_eq!(plan(&words(&["release", "x", "--config", ""]), false).want, Want::Files);
        assert_eq!(plan(&words(&["release", "--revision", ""]), false).want, Want::Nothing);
        // After `--` everything is a release name.
        assert!(matches!(plan(&words(&["release", "--", "-x"]), false).want, Want::Releases { .. }));
    }

    #[test]
    fn under_helm_release_names_come_first() {
        let p = plan(&words(&[""]), true);
        assert!(matches!(p.want, Want::Releases { .. }));
        assert!(values(&p.want).contains(&"release".to_string()));
        // `helm drift shop <TAB>`: more releases; `helm drift -o <TAB>`: release's flags.
        assert_eq!(plan(&words(&["shop", ""]), true).want, Want::Releases { typed: words(&["shop"]), with: vec![] });
        assert_eq!(
            values(&plan(&words(&["-o", ""]), true).want),
            vec!["text", "json", "yaml", "junit", "sarif", "github"]
        );
        assert!(values(&plan(&words(&["--a"]), true).want).contains(&"--all".to_string()));
    }

    #[test]
    fn finish_filters_and_deduplicates() {
        let c = |v: &str| Candidate::new(v, "d");
        let got = finish(vec![c("shop"), c("shop"), c("cart"), c("shipping")], "sh", "", &words(&["shipping"]));
        assert_eq!(got, vec![c("shop")]);
        let got = finish(vec![c("a")], "", "--n=", &[]);
        assert_eq!(got[0].value, "--n=a");
    }

    #[test]
    fn descriptions_are_one_line() {
        assert_eq!(Candidate::new("x", "first line\nsecond").description, "first line");
    }

    #[test]
    fn unreachable_cluster_gives_no_candidates_quickly() {
        // A port nothing listens on: the look-up fails at once and completion still answers.
        let dir = std::env::temp_dir().join(format!("drift-complete-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kc = dir.join("kubeconfig");
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:9'}\n\
             users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: gone\n  context: {cluster: c, user: u}\n\
             current-context: gone\n",
        )
        .unwrap();
        let kc = kc.to_str().unwrap();
        let start = std::time::Instant::now();
        let got = complete(&words(&["release", "--kubeconfig", kc, ""]), &Environment::default());
        assert!(start.elapsed() < CLUSTER_TIMEOUT + Duration::from_secs(1), "took {:?}", start.elapsed());
        assert!(got.candidates.is_empty(), "{got:?}");
        assert_eq!(got.directive, Directive::NoFileComp);
        // Contexts come from the file itself.
        let got = complete(&words(&["--kubeconfig", kc, "--context", "g"]), &Environment::default());
        assert_eq!(got.candidates.iter().map(|c| c.value.as_str()).collect::<Vec<_>>(), vec!["gone"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
