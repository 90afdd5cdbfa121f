//! kubectl-drift: find drift between Helm releases (or manifests) and the live cluster.
//!
//! Layers, one direction (docs/layout.md says which file goes where):
//! [`report`] is the data (what JSON and YAML serialise; it imports no other layer) <- [`source`]
//! reads (Helm storage, live objects, manifest files) <- [`engine`] computes and returns that data
//! (compare, drift, manifests, orphans, reconcile, versions) <- [`render`] formats a report <-
//! [`app`] parses arguments, wires each cluster once, picks the format, writes output and maps a
//! status to an exit code. Only `app` writes output (checked by the `layers` tests below).

pub mod app;
pub mod engine;
pub mod render;
pub mod report;
pub mod source;

#[cfg(test)]
mod layers {
    //! The layers point one way: sources, engines and reports never reach up into the app (which
    //! parses arguments and writes output) or a renderer, and never print. A grep, so that it
    //! also catches a path written in a doc example or a test.
    use std::path::{Path, PathBuf};

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// Lines of the files under `src/<folder>` that match any of `forbidden`.
    fn offending(folder: &str, forbidden: &[&str]) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&root.join(folder), &mut files);
        assert!(!files.is_empty(), "no Rust files under src/{folder}");
        let patterns: Vec<regex::Regex> = forbidden.iter().map(|p| regex::Regex::new(p).unwrap()).collect();
        let mut out = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if patterns.iter().any(|p| p.is_match(line)) {
                    out.push(format!("{}:{}: {line}", file.strip_prefix(&root).unwrap().display(), n + 1));
                }
            }
        }
        out
    }

    /// The app layer and the renderers.
    const UP: &str = r"crate::(app|render)\b|crate::\{[^}]*\b(app|render)\b";
    /// The engines and the sources.
    const ENGINES_SOURCES: &str = r"crate::(engine|source)\b|crate::\{[^}]*\b(engine|source)\b";
    const PRINTS: &str = r"\b(e?print(ln)?!|std::io::stdout|std::io::stderr)";

    #[test]
    fn engines_sources_and_reports_do_not_import_the_app_or_renderers() {
        for folder in ["engine", "source", "report"] {
            let found = offending(folder, &[UP]);
            assert!(found.is_empty(), "src/{folder} reaches up into app, cli or render:\n{}", found.join("\n"));
        }
    }

    #[test]
    fn engines_sources_and_reports_never_print() {
        for folder in ["engine", "source", "report"] {
            let found = offending(folder, &[PRINTS]);
            assert!(
                found.is_empty(),
                "src/{folder} prints (return data; diagnostics go to tracing):\n{}",
                found.join("\n")
            );
        }
    }

    #[test]
    fn reports_are_plain_data_below_the_engines_and_sources() {
        let found = offending("report", &[ENGINES_SOURCES]);
        assert!(found.is_empty(), "src/report reaches into an engine or a source:\n{}", found.join("\n"));
    }

    #[test]
    fn sources_do_not_import_engines() {
        let engines = r"crate::engine\b|crate::\{[^}]*\bengine\b";
        let found = offending("source", &[engines]);
        assert!(found.is_empty(), "src/source reaches into an engine:\n{}", found.join("\n"));
    }

    #[test]
    fn renderers_do_not_import_the_app() {
        let found = offending("render", &[r"crate::app\b|crate::\{[^}]*\bapp\b"]);
        assert!(found.is_empty(), "src/render reaches into the app:\n{}", found.join("\n"));
    }

    #[test]
    fn the_check_finds_what_it_looks_for() {
        // The same grep over the app finds its own imports (so a broken pattern cannot pass).
        assert!(!offending("app", &[UP]).is_empty());
        assert!(!offending("app", &[PRINTS]).is_empty());
        assert!(!offending("engine", &[ENGINES_SOURCES]).is_empty());
    }
}
