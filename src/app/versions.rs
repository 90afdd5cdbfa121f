//! What a version scan needs from the app, for `versions` and for `serve`'s version scope alike:
//! where upstream answers are cached and the upstream sources, with the credentials the config
//! names read from the process environment.

use crate::app::environment::Environment;
use crate::app::error::AppError;

/// Where `versions` (and `serve`'s version scope) cache upstream answers: under the user's cache
/// home, unless `--no-cache`.
pub fn versions_cache_dir(env: &Environment, no_cache: bool) -> Option<std::path::PathBuf> {
    if no_cache { None } else { env.cache_home.as_deref().map(crate::source::upstream::cache_dir_under) }
}

/// The upstream sources of a version scan (registry client, chart repositories, Kubernetes
/// release pointers, GitHub, ArtifactHub at the config's base URLs), with the credentials the
/// config names read from the process environment. One per scan: the registry client keeps its
/// tag lists for its lifetime.
pub fn versions_sources(
    config: &crate::engine::versions::VersionsConfig,
    cache_dir: Option<std::path::PathBuf>,
) -> Result<crate::engine::versions::Sources, AppError> {
    let ttl = config.cache_ttl().map_err(AppError::Usage)?;
    crate::engine::versions::Sources::new(config, cache_dir, ttl, Environment::lookup).map_err(AppError::Usage)
}
