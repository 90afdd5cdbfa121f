//! `kustomization` and `application`: each selected GitOps object's inventory, reported as a
//! manifests run (one target per object), in every format but SARIF and GitHub annotations
//! (there is no file to point at).

use crate::app::cli::{ApplicationArgs, GitOpsArgs, OutputFormat};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::fleet;
use crate::app::outcome::Outcome;
use crate::engine::gitops::{self, ArgoOptions, GitOpsKind, GitOpsSelection};

/// `kustomization NAME...`: Flux Kustomizations; 0 clean, 1 drift, 2 an error.
pub(crate) async fn kustomization(settings: Settings, args: GitOpsArgs) -> Result<Outcome, AppError> {
    run(settings, args, GitOpsKind::FluxKustomization, ArgoOptions::default()).await
}

/// `application NAME...`: Argo CD Applications, tracked as `--tracking-method` says (else as
/// argocd-cm says); 0 clean, 1 drift, 2 an error.
pub(crate) async fn application(settings: Settings, args: ApplicationArgs) -> Result<Outcome, AppError> {
    let argo = ArgoOptions { tracking: args.tracking_method, namespace: args.argocd_namespace };
    run(settings, args.gitops, GitOpsKind::ArgoApplication, argo).await
}

async fn run(settings: Settings, args: GitOpsArgs, kind: GitOpsKind, argo: ArgoOptions) -> Result<Outcome, AppError> {
    if args.report.formats().any(|f| matches!(f, OutputFormat::Sarif | OutputFormat::Github)) {
        return Err(AppError::Usage(
            "-o sarif and -o github point at files; a Kustomization or an Application has none: use -o junit or json"
                .into(),
        ));
    }
    let rules = Config::read(args.check.config.as_deref())?.ignore_rules(&args.check.ignore)?;
    let (settings_ref, args_ref, rules_ref, argo_ref) = (&settings, &args, &rules, &argo);
    let fleet = fleet::across(
        settings_ref,
        settings_ref.progress && args_ref.report.output == OutputFormat::Text,
        |cluster, display| async move {
            let selection = GitOpsSelection {
                names: args_ref.names.clone(),
                all: args_ref.all,
                all_namespaces: settings_ref.all_namespaces,
                namespace: cluster.namespace().to_string(),
                argo: argo_ref.clone(),
            };
            Ok(gitops::check(&cluster, kind, &selection, rules_ref.clone(), args_ref.check.show_secrets, &display)
                .await?)
        },
    )
    .await?;
    super::manifests::write(&settings, &fleet, &args.report, &Default::default())
}
