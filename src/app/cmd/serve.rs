//! `serve`: the wiring of the dashboard (`app::serve`): its config read once, the version scope
//! built from the config's `versions:` section, then the server until it is stopped.

use std::sync::Arc;

use crate::app::cli::ServeArgs;
use crate::app::config::Config;
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::app::outcome::Outcome;
use crate::app::serve::{self, ServeSection, versions::VersionsScope};
use crate::app::versions::versions_cache_dir;

/// `serve`: run the dashboard until SIGINT or SIGTERM; 0 when it stopped so, an error when it
/// could not start or had to stop.
pub(crate) async fn run(settings: Settings, env: &Environment, args: ServeArgs) -> Result<Outcome, AppError> {
    // Read once: the versions section for the version engine, the rest for the server.
    let config = Config::<ServeSection>::read_as(args.config.as_deref())?;
    let versions = VersionsScope::new(config.versions(&[])?, versions_cache_dir(env, false))?;
    serve::run(settings, args, config, Some(Arc::new(versions))).await?;
    Ok(Outcome::Clean)
}
