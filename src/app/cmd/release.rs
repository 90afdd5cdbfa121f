//! `release`: the drift of Helm releases, in every selected cluster (`release NAME --print-crd
//! CRD` prints a CRD of the release's chart instead).

use std::io::Write;

use crate::app::cli::{OutputFormat, ReleaseArgs};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::{fleet, outputs, recorder};
use crate::engine::drift::{ReleaseSelection, check_releases};
use crate::render::Theme;
use crate::report::Status;

/// `release NAME...` or `release --all`: check the releases in every selected cluster (with
/// `--history`, each drifted field says since when it drifts), write the `-o` format and each
/// `--output-file`, the errors on stderr; 0 clean, 1 drift, 2 a release could not be checked.
pub(crate) async fn run(mut settings: Settings, args: ReleaseArgs) -> Result<Outcome, AppError> {
    settings.releases_in_flight = args.in_flight.releases_in_flight.map(usize::from);
    if let Some(crd) = &args.print_crd {
        return print_chart_crd(&settings, &args, crd).await;
    }
    let config = Config::read(args.check.config.as_deref())?;
    let rules = config.ignore_rules(&args.check.ignore)?;
    let admission_changes = config.admission_changes(args.admission_changes);
    // Opened first, only to read: a missing file or an unreachable database stops the run.
    let mut history = recorder::open_to_read(&args.history).await?;
    let (settings, args, rules) = (&settings, &args, &rules);
    let mut fleet =
        fleet::across(settings, settings.progress && args.report.output == OutputFormat::Text, |cluster, display| {
            let selection = ReleaseSelection {
                names: args.releases.clone(),
                all: args.all,
                all_namespaces: settings.all_namespaces,
                namespace: cluster.namespace().to_string(),
                revision: args.revision,
                chart_crds: !args.no_crds,
                admission_changes,
            };
            async move { Ok(check_releases(&cluster, &selection, rules.clone(), args.check.show_secrets, &display).await?) }
        })
        .await?;
    if let Some(store) = &mut history {
        recorder::annotate_releases(store, &mut fleet).await?;
    }

    let mut out = std::io::stdout().lock();
    let theme = Theme::new(settings.color);
    outputs::release(&mut out, &fleet, args.report.output, &theme, args.report.quiet)?;
    out.flush()?;
    outputs::to_files(&args.report.output_files, |file, format| {
        outputs::release(file, &fleet, format, &Theme::new(false), args.report.quiet)
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
