//! `versions`: what is installed and what upstream has released since, in every selected
//! cluster (docs/versions.md).

use std::io::Write;

use crate::app::cli::{OrphansFormat, VersionsArgs, VersionsShow};
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::versions::{versions_cache_dir, versions_sources};
use crate::app::{fleet, outputs};
use crate::engine::versions::{self, Show, VersionsOptions};
use crate::render::Theme;
use crate::report::versions::Category;

/// `versions`: scan, render the table, CSV, JSON or YAML; 0 all current, 1 something behind,
/// 2 a lookup failed. Progress goes to stderr, only when it is a terminal and the output a table.
pub(crate) async fn run(settings: Settings, env: &Environment, args: VersionsArgs) -> Result<Outcome, AppError> {
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
        fleet::across(&settings, settings.progress && args.output == OrphansFormat::Table, |cluster, display| {
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
