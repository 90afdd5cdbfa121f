//! `compare`: one release deployed twice (two clusters, or two namespaces), side by side
//! (docs/compare.md).

use std::io::Write;

use crate::app::cli::{CompareArgs, CompareFormat, CompareView};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::engine::envdiff::{self, CompareOptions, Place, SideRead};
use crate::render::{self, Theme};
use crate::report::envdiff::CompareStatus;

/// `compare RELEASE`: read both sides at once (each through its own cluster handle, one handle
/// when both are in one cluster), compare, write the format; 0 same, 1 different, 2 a side
/// could not be read (named on stderr; the other side is still shown).
pub(crate) async fn run(settings: Settings, env: &Environment, args: CompareArgs) -> Result<Outcome, AppError> {
    let rules = Config::read(args.check.config.as_deref())?.compare_rules(&args.check.ignore)?;
    let sides = compare_sides(&settings, args.release.as_deref())?;
    // `-f`: the files, read once for both sides.
    let manifests = match args.filename.is_empty() {
        true => None,
        false => Some(envdiff::read_manifests(&args.filename, &args.kubectl).await),
    };
    // Each side's namespace is its own: the cluster handle's default is the context's.
    let settings = Settings { explicit_namespace: None, ..settings };
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
    let report = envdiff::compare(
        &target,
        &left,
        &right,
        CompareOptions { rules: &rules, show_secrets: args.check.show_secrets },
    );
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::app::cli::Cli;
    use crate::app::context::Settings;
    use crate::app::environment::Environment;

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
