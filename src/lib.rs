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
    //! parses arguments and writes output) or a renderer, and never print; renderers import only
    //! reports; the versions engine never imports orphans. A grep, so that it also catches a path
    //! written in a doc example or a test. And no two files import each other (read from the
    //! paths the code names, comments left out).
    use std::collections::{BTreeMap, BTreeSet};
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
    /// Every layer but the reports: what a renderer may not import.
    const NOT_REPORT: &str = r"crate::(engine|source|app)\b|crate::\{[^}]*\b(engine|source|app)\b";
    /// The orphans engine, by any path.
    const ORPHANS: &str = r"\borphans::|crate::engine::\{[^}]*\borphans\b";

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
    fn renderers_import_only_reports() {
        let found = offending("render", &[NOT_REPORT]);
        assert!(
            found.is_empty(),
            "src/render reaches past report (into an engine, a source or the app):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn versions_does_not_import_orphans() {
        // What both engines read (rules, selectors, durations) lives below both: engine::select,
        // engine::tree, report.
        let found = offending("engine/versions", &[ORPHANS]);
        assert!(found.is_empty(), "src/engine/versions reaches into orphans:\n{}", found.join("\n"));
    }

    /// Pairs of files (under `src/`) that import each other and are allowed to (none: a circle
    /// is a missing shared piece that both files should import instead; docs/layout.md).
    const CIRCLES_ALLOWED: &[(&str, &str)] = &[];

    #[test]
    fn no_two_files_import_each_other() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        rust_files(&root, &mut paths);
        let files: BTreeMap<String, String> = paths
            .iter()
            .map(|p| (p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"), read(p)))
            .collect();
        let found: Vec<String> = circles(&files)
            .into_iter()
            .filter(|(a, b)| !CIRCLES_ALLOWED.contains(&(a.as_str(), b.as_str())))
            .map(|(a, b)| format!("src/{a} <-> src/{b}"))
            .collect();
        assert!(
            found.is_empty(),
            "these files import each other (move what both need into a module both import):\n{}",
            found.join("\n")
        );
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Every pair of files that import each other, `(a, b)` with `a < b`, by their paths under
    /// `src/` (`engine/orphans/mod.rs`). A file imports another when it names a path into it:
    /// `crate::a::b::c` (from the root), `super::x` or `self::x` (from the file's module, and from
    /// the inline module the line is in, such as `mod tests`), `{}` groups expanded; the path
    /// goes to the longest prefix that is a file (`a/b.rs` or `a/b/mod.rs`). Comments do not count.
    fn circles(files: &BTreeMap<String, String>) -> Vec<(String, String)> {
        let mut edges = BTreeSet::new();
        for (file, text) in files {
            for (module, path) in paths_in(file, text) {
                if let Some(to) = resolve(files, &module, &path)
                    && &to != file
                {
                    edges.insert((file.clone(), to));
                }
            }
        }
        edges.iter().filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone()))).cloned().collect()
    }

    /// The module of a file (`engine/orphans/mod.rs` is `engine::orphans`, `lib.rs` the root).
    fn module_of(file: &str) -> Vec<String> {
        let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_string).collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            parts.pop();
        }
        parts
    }

    /// The `crate::`, `super::` and `self::` paths of a file, each with the module it is written
    /// in (the file's, plus the inline modules around it, such as `mod tests`: rustfmt indents
    /// their bodies and closes them with a `}` at their own indent).
    fn paths_in(file: &str, text: &str) -> Vec<(Vec<String>, Vec<String>)> {
        let inline = regex::Regex::new(r"^(\s*)(?:pub(?:\([^)]*\))? )?mod (\w+) *\{").unwrap();
        let start = regex::Regex::new(r"(?:^|[^\w$:])((?:crate|super|self)::)").unwrap();
        let mut out = Vec::new();
        let mut open: Vec<(usize, String)> = Vec::new();
        let mut offset = 0;
        for raw in text.split_inclusive('\n') {
            let code = raw.split("//").next().unwrap_or("");
            if let Some(c) = inline.captures(code) {
                open.push((c[1].len(), c[2].to_string()));
            }
            let mut module = module_of(file);
            module.extend(open.iter().map(|(_, name)| name.clone()));
            for m in start.captures_iter(code) {
                // A `use` group may run on over the next lines: parse from here in the whole text.
                let mut paths = Vec::new();
                tree(text.as_bytes(), offset + m.get(1).unwrap().start(), &mut Vec::new(), &mut paths);
                out.extend(paths.into_iter().map(|p| (module.clone(), p)));
            }
            let line = raw.trim_end();
            if open.last().is_some_and(|(indent, _)| line.len() == indent + 1 && line.trim() == "}") {
                open.pop();
            }
            offset += raw.len();
        }
        out
    }

    /// Parse a path (`a::b::{c, d::e as f}`) at `at`, pushing each full path onto `out`; returns
    /// where it ends.
    fn tree(b: &[u8], at: usize, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let skip = |mut i: usize| {
            while b.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            i
        };
        let word =
            |i: usize| (i..).find(|&j| !b.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')).unwrap();
        let depth = prefix.len();
        let mut i = skip(at);
        loop {
            if b.get(i) == Some(&b'{') {
                i += 1;
                loop {
                    i = skip(i);
                    match b.get(i) {
                        None => break,
                        Some(b'}') => {
                            i += 1;
                            break;
                        }
                        Some(b',') => i += 1,
                        _ => {
                            let next = tree(b, i, prefix, out);
                            if next == i {
                                break;
                            }
                            i = next;
                        }
                    }
                }
                break;
            }
            let end = word(i);
            if end == i {
                // `*`, or no path at all: the module named so far.
                if prefix.len() > depth {
                    out.push(prefix.clone());
                }
                break;
            }
            prefix.push(String::from_utf8_lossy(&b[i..end]).into_owned());
            i = skip(end);
            if b[i..].starts_with(b"::") {
                i = skip(i + 2);
                continue;
            }
            out.push(prefix.clone());
            if b[i..].starts_with(b"as") && b.get(i + 2).is_some_and(u8::is_ascii_whitespace) {
                i = word(skip(i + 2));
            }
            break;
        }
        prefix.truncate(depth);
        i
    }

    /// The file a path written in `module` names: the longest prefix of it that is a file.
    fn resolve(files: &BTreeMap<String, String>, module: &[String], path: &[String]) -> Option<String> {
        let (mut at, mut rest) = match path.split_first() {
            Some((first, rest)) if first == "crate" => (Vec::new(), rest),
            _ => (module.to_vec(), path),
        };
        while let Some((first, tail)) = rest.split_first() {
            match first.as_str() {
                "super" => {
                    at.pop();
                }
                "self" => {}
                _ => break,
            }
            rest = tail;
        }
        at.extend(rest.iter().cloned());
        // Not the root: `lib.rs` only declares the layers.
        (1..=at.len())
            .rev()
            .map(|n| at[..n].join("/"))
            .find_map(|p| [format!("{p}.rs"), format!("{p}/mod.rs")].into_iter().find(|f| files.contains_key(f)))
    }

    #[test]
    fn the_check_finds_what_it_looks_for() {
        // The same grep over the app finds its own imports (so a broken pattern cannot pass).
        assert!(!offending("app", &[UP]).is_empty());
        assert!(!offending("app", &[PRINTS]).is_empty());
        assert!(!offending("engine", &[ENGINES_SOURCES]).is_empty());

        // The renderer check matches an engine, a source or the app, however imported, and not a
        // report.
        let not_report = regex::Regex::new(NOT_REPORT).unwrap();
        assert!(not_report.is_match("use crate::engine::compare::Change;"));
        assert!(not_report.is_match("    let x = crate::source::live::Kinds::default();"));
        assert!(not_report.is_match("use crate::{app::cli, report};"));
        assert!(!not_report.is_match("use crate::report::field::Change;"));
        // The versions check matches orphans, however imported.
        let orphans = regex::Regex::new(ORPHANS).unwrap();
        assert!(orphans.is_match("use crate::engine::orphans::rules::ObjectRule;"));
        assert!(orphans.is_match("use crate::engine::{orphans, select};"));
        assert!(!orphans.is_match("use crate::engine::select::ObjectRule;"));

        // The circle finder finds a circle through `crate::`, `super::super::` and a `{}` group,
        // whatever the inline `mod tests` and comments say.
        let tiny = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
            files.iter().map(|(f, t)| (f.to_string(), t.to_string())).collect()
        };
        let files = tiny(&[
            ("lib.rs", "pub mod a;\npub mod b;\n"),
            ("a/mod.rs", "pub mod inner;\nuse crate::b::{\n    self,\n    Thing as Other,\n};\n"),
            ("a/inner.rs", "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use super::super::super::b::f;\n}\n"),
            ("b.rs", "// use crate::a::inner;\npub fn f() {\n    crate::a::inner::g();\n}\n"),
        ]);
        assert_eq!(circles(&files), [("a/inner.rs".to_string(), "b.rs".to_string())]);
        assert_eq!(
            paths_in("a/mod.rs", &files["a/mod.rs"]),
            [
                (vec!["a".to_string()], vec!["crate".to_string(), "b".to_string(), "self".to_string()]),
                (vec!["a".to_string()], vec!["crate".to_string(), "b".to_string(), "Thing".to_string()]),
            ]
        );
        // One-way imports, a path only in a comment and `super::*` in a test are no circle.
        let one_way = tiny(&[
            ("a.rs", "use crate::b::f;\n"),
            ("b.rs", "// see crate::a\npub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ]);
        assert!(circles(&one_way).is_empty());
    }
}
