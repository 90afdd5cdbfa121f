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
    //! written in a doc example or a test. And no import cycle of any length among the files
    //! (read from the paths the code names, comments left out).
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

    /// Import cycles among files under `src/` that are allowed to stay, each as its files sorted
    /// (none: a cycle is a missing shared piece that its files should import instead;
    /// docs/layout.md).
    const CYCLES_ALLOWED: &[&[&str]] = &[];

    #[test]
    fn no_import_cycle_of_any_length() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut paths = Vec::new();
        rust_files(&root, &mut paths);
        let files: BTreeMap<String, String> = paths
            .iter()
            .map(|p| (p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"), read(p)))
            .collect();
        let graph = imports(&files);
        let found: Vec<String> = cycles(&graph)
            .into_iter()
            .filter(|c| !CYCLES_ALLOWED.iter().any(|allowed| allowed.iter().copied().eq(c.iter().map(String::as_str))))
            .map(|c| describe(&c, &graph))
            .collect();
        assert!(
            found.is_empty(),
            "these files import each other in a cycle (move what they share into a module they all import):\n{}",
            found.join("\n")
        );
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Who imports whom: for each file (by its path under `src/`, `engine/orphans/mod.rs`), the
    /// files it imports, each with the first path that names it (`crate::app::error::AppError`).
    /// A file imports another when it names a path into it: `crate::a::b::c` (from the root),
    /// `super::x` or `self::x` (from the file's module, and from the inline module the line is in,
    /// such as `mod tests`), `{}` groups expanded; the path goes to the longest prefix that is a
    /// file (`a/b.rs` or `a/b/mod.rs`). Comments do not count, nor a file naming itself.
    type Imports = BTreeMap<String, BTreeMap<String, String>>;

    fn imports(files: &BTreeMap<String, String>) -> Imports {
        let mut graph = Imports::new();
        for (file, text) in files {
            let edges = graph.entry(file.clone()).or_default();
            for (module, path) in paths_in(file, text) {
                if let Some(to) = resolve(files, &module, &path)
                    && &to != file
                {
                    edges.entry(to).or_insert_with(|| path.join("::"));
                }
            }
        }
        graph
    }

    /// The import cycles of `graph`: its strongly connected components of more than one file
    /// (Tarjan's algorithm), each sorted, in order. Every file of a component reaches every other
    /// through imports, so each one is a cycle of any length, or several sharing files.
    fn cycles(graph: &Imports) -> Vec<Vec<String>> {
        struct Walk<'a> {
            graph: &'a Imports,
            index: BTreeMap<&'a str, usize>,
            low: BTreeMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            found: Vec<Vec<String>>,
        }
        impl<'a> Walk<'a> {
            fn visit(&mut self, file: &'a str) {
                let n = self.index.len();
                self.index.insert(file, n);
                self.low.insert(file, n);
                self.stack.push(file);
                self.on_stack.insert(file);
                for to in self.graph.get(file).into_iter().flat_map(BTreeMap::keys) {
                    if !self.index.contains_key(to.as_str()) {
                        self.visit(to);
                        let low = self.low[file].min(self.low[to.as_str()]);
                        self.low.insert(file, low);
                    } else if self.on_stack.contains(to.as_str()) {
                        let low = self.low[file].min(self.index[to.as_str()]);
                        self.low.insert(file, low);
                    }
                }
                if self.low[file] == self.index[file] {
                    let mut component = Vec::new();
                    while let Some(top) = self.stack.pop() {
                        self.on_stack.remove(top);
                        component.push(top.to_string());
                        if top == file {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        self.found.push(component);
                    }
                }
            }
        }
        let mut walk = Walk {
            graph,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for file in graph.keys() {
            if !walk.index.contains_key(file.as_str()) {
                walk.visit(file);
            }
        }
        walk.found.sort();
        walk.found
    }

    /// A cycle as the test names it: its files, then each import between two of them with the
    /// path that makes it.
    fn describe(cycle: &[String], graph: &Imports) -> String {
        let mut out = format!(
            "a cycle of {} files: {}\n",
            cycle.len(),
            cycle.iter().map(|f| format!("src/{f}")).collect::<Vec<_>>().join(", ")
        );
        for from in cycle {
            for (to, path) in graph.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    out.push_str(&format!("    src/{from} -> src/{to} ({path})\n"));
                }
            }
        }
        out
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

        // The import reader finds a cycle through `crate::`, `super::super::` and a `{}` group,
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
        let graph = imports(&files);
        assert_eq!(cycles(&graph), [vec!["a/inner.rs".to_string(), "b.rs".to_string()]]);
        assert_eq!(graph["b.rs"]["a/inner.rs"], "crate::a::inner::g");
        assert_eq!(graph["a/inner.rs"]["b.rs"], "super::super::super::b::f");
        assert_eq!(
            paths_in("a/mod.rs", &files["a/mod.rs"]),
            [
                (vec!["a".to_string()], vec!["crate".to_string(), "b".to_string(), "self".to_string()]),
                (vec!["a".to_string()], vec!["crate".to_string(), "b".to_string(), "Thing".to_string()]),
            ]
        );
        // One-way imports, a path only in a comment and `super::*` in a test are no cycle.
        let one_way = tiny(&[
            ("a.rs", "use crate::b::f;\n"),
            ("b.rs", "// see crate::a\npub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ]);
        assert!(cycles(&imports(&one_way)).is_empty());
    }

    /// A graph from `(file, [files it imports])`.
    fn graph_of(edges: &[(&str, &[&str])]) -> Imports {
        edges
            .iter()
            .map(|(from, to)| {
                (
                    from.to_string(),
                    to.iter().map(|t| (t.to_string(), format!("crate::{}", t.trim_end_matches(".rs")))).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn the_cycle_finder_finds_cycles_of_any_length() {
        // a -> b -> c -> a, no pair importing each other; d imports into it and e is imported
        // from it, neither part of it.
        let three = graph_of(&[
            ("a.rs", &["b.rs"]),
            ("b.rs", &["c.rs", "e.rs"]),
            ("c.rs", &["a.rs"]),
            ("d.rs", &["a.rs"]),
            ("e.rs", &[]),
        ]);
        let found = cycles(&three);
        assert_eq!(found, [vec!["a.rs".to_string(), "b.rs".to_string(), "c.rs".to_string()]]);
        let message = describe(&found[0], &three);
        assert!(message.starts_with("a cycle of 3 files: src/a.rs, src/b.rs, src/c.rs\n"), "{message}");
        for edge in
            ["src/a.rs -> src/b.rs (crate::b)", "src/b.rs -> src/c.rs (crate::c)", "src/c.rs -> src/a.rs (crate::a)"]
        {
            assert!(message.contains(edge), "{edge} not in {message}");
        }
        assert!(!message.contains("e.rs") && !message.contains("d.rs"), "{message}");

        // The same files without c's import: a DAG (a diamond, and a file importing nothing).
        let dag = graph_of(&[
            ("a.rs", &["b.rs", "c.rs"]),
            ("b.rs", &["d.rs"]),
            ("c.rs", &["d.rs"]),
            ("d.rs", &[]),
            ("e.rs", &[]),
        ]);
        assert!(cycles(&dag).is_empty());

        // Two cycles apart, each found whole: a pair, and a 4-cycle with a chord.
        let two = graph_of(&[
            ("p.rs", &["q.rs"]),
            ("q.rs", &["p.rs", "w.rs"]),
            ("w.rs", &["x.rs"]),
            ("x.rs", &["y.rs"]),
            ("y.rs", &["z.rs", "w.rs"]),
            ("z.rs", &["w.rs"]),
        ]);
        let names = |files: &[&str]| files.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        assert_eq!(cycles(&two), [names(&["p.rs", "q.rs"]), names(&["w.rs", "x.rs", "y.rs", "z.rs"])]);
    }
}
