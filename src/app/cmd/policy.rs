//! `policy`: print the ValidatingAdmissionPolicy that warns a person whose edit is drift
//! (docs/policy.md). No cluster: it only prints.

use std::io::Write;

use clap::ValueEnum;

use crate::app::cli::{PolicyAction, PolicyArgs, PolicyOwner};
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::engine::policy::{self, Action, Owner, PolicyOptions};
use crate::render;

/// `policy`: print the edit-time warning policy (no cluster: the global connection flags are
/// accepted and unused). The header names the flags that reproduce it.
pub(crate) fn run<W: Write>(args: &PolicyArgs, out: &mut W) -> Result<Outcome, AppError> {
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::app::cli::{Cli, Command};
    use crate::app::outcome::Outcome;

    fn printed(args: &[&str]) -> String {
        let cli = Cli::try_parse_from(std::iter::once("kubectl-drift").chain(args.iter().copied())).unwrap();
        let Command::Policy(args) = cli.command else { panic!("not the policy command") };
        let mut out = Vec::new();
        assert_eq!(super::run(&args, &mut out).unwrap(), Outcome::Clean);
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
        let err = super::run(&args, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("--namespace-selector"), "{err}");
    }
}
