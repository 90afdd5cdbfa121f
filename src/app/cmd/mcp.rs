//! `mcp`: the wiring of the MCP server on stdio (`app::mcp`).

use crate::app::cli::McpArgs;
use crate::app::context::Settings;
use crate::app::environment::Environment;
use crate::app::error::AppError;
use crate::app::mcp;
use crate::app::outcome::Outcome;

/// `mcp`: serve the read-only tools on standard input and output until the client closes them;
/// 0 then, an error when the clusters or the config could not be read at start.
pub(crate) async fn run(settings: Settings, env: &Environment, args: McpArgs) -> Result<Outcome, AppError> {
    mcp::run_stdio(settings, env, args).await?;
    Ok(Outcome::Clean)
}
