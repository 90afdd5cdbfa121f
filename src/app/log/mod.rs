//! Logs: the one `tracing` subscriber of every command, set up once from the flags.
//!
//! Log lines go to stderr (stdout stays the report), each with a UTC RFC 3339 timestamp, a
//! level and a target, as text or as one JSON object a line (`--log-format`, `DRIFT_LOG_FORMAT`).
//! Which lines are written is an `EnvFilter` (`--log-level`, `DRIFT_LOG_LEVEL`, then `RUST_LOG`;
//! default `info` for `watch` and `serve`, `warn` for the one-shot commands); `-v` adds the API
//! requests (target `kubectl_drift::api`, see [`requests`]), `-vv` everything of kubectl-drift's
//! own down to trace and a line when each of its spans closes (with its busy and idle time).
//!
//! Only kubectl-drift's own targets are ever written, whatever the filter says: libraries log
//! things we must never show (kube-client logs a whole response body at WARN when it cannot
//! decode it, which may be a Secret list), so their events and spans are dropped here.
//! docs/logs.md says what each level shows.

pub mod requests;

use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::prelude::*;

use crate::app::cli::{ColorMode, GlobalArgs, LogFormat};
use crate::app::environment::Environment;

/// The prefix of every target kubectl-drift logs under (the library crate's name).
pub const OURS: &str = "kubectl_drift";

/// How a run logs: resolved once from the flags and the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    pub format: LogFormat,
    /// The filter directives, -v's included.
    pub directives: String,
    /// Log a line when each of our spans closes (-vv).
    pub span_events: bool,
    /// Colour the text format's levels (stderr is a terminal, colour not turned off).
    pub ansi: bool,
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// `--log-level` (or `DRIFT_LOG_LEVEL`, `RUST_LOG`) is neither a level nor filter directives.
    #[error("invalid --log-level {given:?}: {source}")]
    Filter {
        given: String,
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
}

impl LogSettings {
    /// `long_running`: `watch` and `serve`, which log at info by default; the one-shot commands
    /// log only warnings and errors unless asked (their report and errors are not log lines).
    pub fn resolve(global: &GlobalArgs, env: &Environment, long_running: bool) -> LogSettings {
        let default = if long_running { "info" } else { "warn" };
        let mut directives = match global.log_level.clone().or_else(|| env.rust_log.clone()) {
            // Directives for some targets only keep the default level for the others.
            Some(given) if !has_level(&given) => format!("{default},{given}"),
            Some(given) => given,
            None => default.to_string(),
        };
        if global.verbose >= 1 {
            directives.push_str(&format!(",{}=debug", requests::TARGET));
        }
        if global.verbose >= 2 {
            directives.push_str(&format!(",{OURS}=trace"));
        }
        let ansi = match global.color {
            ColorMode::Always => true,
            ColorMode::Never => false,
            ColorMode::Auto => env.stderr_is_tty && !env.no_color && !env.term_dumb,
        };
        LogSettings { format: global.log_format, directives, span_events: global.verbose >= 2, ansi }
    }

    /// The filter: the directives, and only our own targets.
    fn filter(&self) -> Result<impl tracing_subscriber::layer::Filter<tracing_subscriber::Registry> + use<>, LogError> {
        let env = EnvFilter::builder()
            .parse(&self.directives)
            .map_err(|source| LogError::Filter { given: self.directives.clone(), source })?;
        Ok(env.and(filter_fn(|m| is_ours(m.target()))))
    }

    /// The layer writing to `writer` (stderr, or a buffer in tests).
    fn layer<W>(
        &self,
        writer: W,
    ) -> Result<Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>, LogError>
    where
        W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
    {
        let spans = if self.span_events { FmtSpan::CLOSE } else { FmtSpan::NONE };
        let filter = self.filter()?;
        // The default timer writes UTC RFC 3339 with microseconds (2026-12-02T00:40:00.123456Z).
        let fmt = tracing_subscriber::fmt::layer().with_writer(writer).with_span_events(spans);
        Ok(match self.format {
            LogFormat::Text => fmt.with_ansi(self.ansi).with_filter(filter).boxed(),
            LogFormat::Json => {
                fmt.json().flatten_event(true).with_current_span(false).with_span_list(true).with_filter(filter).boxed()
            }
        })
    }
}

/// Whether filter directives set a level for every target (a bare `info`, `debug`, ...).
fn has_level(directives: &str) -> bool {
    directives
        .split(',')
        .any(|d| !d.contains('=') && d.trim().parse::<tracing_subscriber::filter::LevelFilter>().is_ok())
}

/// Whether a target is kubectl-drift's (the library's modules, and `kubectl_drift::api`).
fn is_ours(target: &str) -> bool {
    target == OURS || target.strip_prefix(OURS).is_some_and(|rest| rest.starts_with("::"))
}

/// Install the subscriber for the rest of the process, writing to stderr. A second call (tests
/// that run several commands in one process) keeps the first.
pub fn init(settings: &LogSettings) -> Result<(), LogError> {
    let layer = settings.layer(std::io::stderr)?;
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}

/// Milliseconds since `started`, the one duration field of our log lines (`duration_ms`).
pub fn millis(started: std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::app::cli::Cli;
    use clap::Parser;
    use std::sync::{Arc, Mutex};

    /// A writer the tests read back: what a subscriber wrote.
    #[derive(Clone, Default)]
    pub(crate) struct Captured(pub Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        pub(crate) fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Run `f` with the subscriber `args` would set up, writing into a buffer; returns it.
    pub(crate) fn capture(args: &[&str], f: impl FnOnce()) -> String {
        let cli = Cli::try_parse_from(args).unwrap();
        let settings = LogSettings::resolve(&cli.global, &Environment::default(), true);
        let out = Captured::default();
        let sink = out.clone();
        let layer = settings.layer(move || sink.clone()).unwrap();
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f);
        out.text()
    }

    fn resolve(args: &[&str], env: Environment, long_running: bool) -> LogSettings {
        let cli = Cli::try_parse_from(args).unwrap();
        LogSettings::resolve(&cli.global, &env, long_running)
    }

    #[test]
    fn levels_from_flags_and_environment() {
        let env = Environment::default();
        assert_eq!(resolve(&["k", "watch", "--all"], env.clone(), true).directives, "info");
        assert_eq!(resolve(&["k", "release", "x"], env.clone(), false).directives, "warn");
        let v = resolve(&["k", "release", "x", "-v"], env.clone(), false);
        assert_eq!(v.directives, "warn,kubectl_drift::api=debug");
        assert!(!v.span_events);
        let vv = resolve(&["k", "-vv", "release", "x"], env.clone(), false);
        assert_eq!(vv.directives, "warn,kubectl_drift::api=debug,kubectl_drift=trace");
        assert!(vv.span_events);
        let rust_log = Environment { rust_log: Some("debug".into()), ..env };
        assert_eq!(resolve(&["k", "release", "x"], rust_log.clone(), false).directives, "debug");
        assert_eq!(resolve(&["k", "release", "x", "--log-level", "error"], rust_log, false).directives, "error");
        // Only some targets named: the others keep the command's default level.
        let targets = ["k", "serve", "--log-level", "kubectl_drift::api=debug"];
        assert_eq!(resolve(&targets, Environment::default(), true).directives, "info,kubectl_drift::api=debug");
        let both = ["k", "serve", "--log-level", "kubectl_drift::api=debug,ERROR"];
        assert_eq!(resolve(&both, Environment::default(), true).directives, "kubectl_drift::api=debug,ERROR");
        assert!(Cli::try_parse_from(["k", "release", "x", "--log-format", "xml"]).is_err());
        assert_eq!(
            resolve(&["k", "serve", "--log-format", "json"], Environment::default(), true).format,
            LogFormat::Json
        );
    }

    #[test]
    fn the_deploy_manifests_log_json() {
        for file in ["deploy/deployment.yaml", "deploy/dashboard/base/deployment.yaml"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            let env = &doc["spec"]["template"]["spec"]["containers"][0]["env"];
            let format = env.as_array().unwrap().iter().find(|e| e["name"] == "DRIFT_LOG_FORMAT");
            let value = format.and_then(|e| e["value"].as_str()).unwrap_or_default();
            assert_eq!(<LogFormat as clap::ValueEnum>::from_str(value, false), Ok(LogFormat::Json), "{file}");
        }
    }

    #[test]
    fn a_bad_filter_is_an_error_naming_the_flag() {
        let s =
            resolve(&["k", "release", "x", "--log-level", "info,kubectl_drift=loud"], Environment::default(), false);
        let err = s.layer(std::io::sink).err().expect("refused").to_string();
        assert!(err.starts_with("invalid --log-level"), "{err}");
    }

    #[test]
    fn only_our_targets_are_written() {
        assert!(is_ours("kubectl_drift") && is_ours("kubectl_drift::api") && is_ours("kubectl_drift::app::watch"));
        assert!(!is_ours("kubectl_drifter") && !is_ours("kube_client::client") && !is_ours("hyper_util"));
        let out = capture(&["k", "-vv", "--log-level", "trace", "watch", "--all"], || {
            tracing::warn!(target: "kube_client::client", "{{\"data\":{{\"password\":\"c2VjcmV0\"}}}}");
            tracing::info!(target: "kubectl_drift::app::watch", "round finished");
        });
        assert!(out.contains("round finished"), "{out}");
        assert!(!out.contains("c2VjcmV0") && !out.contains("kube_client"), "{out}");
    }

    #[test]
    fn json_lines_carry_timestamp_level_target_fields_and_spans() {
        let out = capture(&["k", "--log-format", "json", "serve"], || {
            let span = tracing::info_span!(target: "kubectl_drift::app::serve", "scan", scope = "releases");
            let _g = span.enter();
            tracing::info!(target: "kubectl_drift::app::serve", duration_ms = 12u64, outcome = "ok", "scan finished");
        });
        let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["target"], "kubectl_drift::app::serve");
        assert_eq!(line["message"], "scan finished");
        assert_eq!(line["duration_ms"], 12);
        assert_eq!(line["spans"][0]["name"], "scan");
        assert_eq!(line["spans"][0]["scope"], "releases");
        let ts = line["timestamp"].as_str().unwrap();
        assert!(ts.ends_with('Z') && ts.parse::<jiff::Timestamp>().is_ok(), "UTC RFC 3339: {ts}");
    }

    #[test]
    fn text_lines_start_with_a_utc_timestamp_and_the_level() {
        let out = capture(&["k", "watch", "--all"], || {
            tracing::info!(target: "kubectl_drift::app::watch", targets = 3u64, "round finished");
            tracing::debug!(target: "kubectl_drift::app::watch", "not at info");
        });
        let (ts, rest) = out.trim().split_once(' ').unwrap();
        assert!(ts.parse::<jiff::Timestamp>().is_ok() && ts.ends_with('Z'), "{out}");
        assert!(rest.trim_start().starts_with("INFO kubectl_drift::app::watch: round finished targets=3"), "{out}");
        assert!(!out.contains("not at info"));
    }
}
