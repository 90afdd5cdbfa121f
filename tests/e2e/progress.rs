//! The progress display (docs/output.md, "Progress"): under a pseudo-terminal each one-shot
//! command draws moving counts on stderr and writes the same report on stdout as without one;
//! without a terminal (a pipe), with `--no-progress`, `TERM=dumb` or a machine format, stderr
//! carries no progress.
//!
//! The terminal is util-linux `script`: `script -qec 'kubectl-drift ARGS > stdout.txt' typescript`
//! gives the binary a pty as stderr (recorded in the typescript) and a file as stdout. Nothing
//! here waits or depends on timing: each phase draws on a bar of its own, and indicatif draws the
//! first updates of a bar at once (a burst, before its rate limit applies), so the few steps of
//! these small runs are always drawn, however busy the machine.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::common::{Cluster, Helm, fixture, unique_ns};
use crate::needs_cluster;

/// A run with stderr on a pseudo-terminal.
struct PtyRun {
    code: i32,
    /// What went to stdout (a file).
    stdout: String,
    /// What the terminal received (stderr), without `script`'s own first and last lines.
    terminal: String,
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `kubectl-drift ARGS` with stderr on a pty (TERM=xterm unless `env` says otherwise) and stdout
/// in a file.
fn under_pty(c: &Cluster, args: &[&str], env: &[(&str, &str)]) -> PtyRun {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = c.scratch.join(format!("pty-{}", N.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    let (stdout, typescript) = (dir.join("stdout.txt"), dir.join("typescript"));
    let mut line = sh_quote(env!("CARGO_BIN_EXE_kubectl-drift"));
    for a in args {
        line.push(' ');
        line.push_str(&sh_quote(a));
    }
    line.push_str(" > ");
    line.push_str(&sh_quote(stdout.to_str().unwrap()));
    let mut cmd = Command::new("script");
    cmd.arg("-qec").arg(&line).arg(&typescript).current_dir(&dir);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    c.apply_env(&mut cmd, Helm::V4);
    cmd.env("TERM", "xterm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("util-linux script is needed for the progress tests");
    let recorded = std::fs::read(&typescript)
        .unwrap_or_else(|e| panic!("no typescript from script ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let recorded = String::from_utf8_lossy(&recorded);
    // script frames the session with a line "Script started ... [COMMAND=...]" and, after a
    // newline of its own, "Script done ...".
    let mut terminal = recorded
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("Script started on ") && !l.starts_with("Script done on "))
        .collect::<String>();
    if recorded.contains("\nScript done on ") {
        terminal.pop();
    }
    PtyRun {
        code: out.status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&stdout).unwrap_or_default(),
        terminal,
    }
}

/// The same command in a pipe (as `common::drift`): stderr must carry no progress.
fn piped(c: &Cluster, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let run = c.drift_with_env(args, env);
    (run.code(), run.stdout(), run.stderr())
}

/// Assert the terminal shows `phase` moving through `counts` (each `] n/total` frame drawn), and
/// is cleared at the end (the report then starts on a clean line).
fn assert_moving(terminal: &str, phase: &str, counts: &[&str]) {
    let shown = terminal.replace('\r', "\n");
    assert!(shown.contains(&format!("{phase} [")), "no {phase:?} bar on the terminal:\n{shown}");
    for n in counts {
        assert!(shown.contains(&format!("] {n}")), "no frame {n} of {phase:?} on the terminal:\n{shown}");
    }
    assert!(
        terminal.trim_end_matches(['\n', '\r']).ends_with("\x1b[2K"),
        "the progress line is not cleared at the end:\n{}",
        terminal.escape_debug()
    );
}

/// Assert stderr of a pipe holds no progress: no phase, no redraw, no escape.
fn assert_no_progress(stderr: &str, what: &str) {
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b') && !stderr.contains("connecting"),
        "{what}: progress where there must be none:\n{}",
        stderr.escape_debug()
    );
}

#[ignore = "needs the local control plane"]
#[test]
fn release_progress_on_a_terminal_only() {
    let c = needs_cluster!("release_progress_on_a_terminal_only");
    let ns = unique_ns("progress-rel");
    c.create_namespace(&ns);
    let chart = fixture("charts/note");
    for name in ["alpha", "beta", "gamma"] {
        c.helm(Helm::V4, &["install", name, chart.to_str().unwrap(), "-n", &ns]).ok();
    }
    c.kubectl(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "beta-note",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"text":"by hand"}}"#,
    ])
    .ok();
    let args = ["release", "--all", "-n", &ns];

    let (code, stdout, stderr) = piped(&c, &args, &[]);
    assert_eq!(code, 1, "beta drifted:\n{stdout}\n{stderr}");
    assert_eq!(stderr, "", "a pipe gets no progress");

    let pty = under_pty(&c, &args, &[]);
    assert_eq!(pty.code, code);
    assert_eq!(pty.stdout, stdout, "the report is the same with a terminal on stderr");
    assert_moving(&pty.terminal, "releases", &["1/3", "2/3", "3/3"]);
    assert!(pty.terminal.contains(&ns), "the namespace being checked is shown:\n{}", pty.terminal);
    assert!(pty.terminal.contains(" objects"), "the objects checked are counted:\n{}", pty.terminal);

    // Opted out, a terminal that cannot redraw, or a format for programs: nothing on stderr.
    for (extra, env, what) in [
        (&["--no-progress"][..], &[][..], "--no-progress"),
        (&[][..], &[("TERM", "dumb")][..], "TERM=dumb"),
        (&["-o", "json"][..], &[][..], "-o json"),
        (&["-o", "yaml"][..], &[][..], "-o yaml"),
    ] {
        let pty = under_pty(&c, &[&args[..], extra].concat(), env);
        assert_eq!(pty.code, 1, "{what}");
        assert_eq!(pty.terminal, "", "{what}: no progress on the terminal");
        if extra.is_empty() || extra == ["--no-progress"] {
            assert_eq!(pty.stdout, stdout, "{what}: the same report");
        }
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn manifests_progress_counts_files() {
    let c = needs_cluster!("manifests_progress_counts_files");
    let ns = unique_ns("progress-man");
    c.create_namespace(&ns);
    let dir: PathBuf = c.scratch.join("k8s");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["one", "two", "three"] {
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: \"1\"\n"),
        )
        .unwrap();
        c.kubectl(&["apply", "-n", &ns, "-f", path.to_str().unwrap()]).ok();
    }
    let args = ["manifests", dir.to_str().unwrap(), "-n", &ns];

    let (code, stdout, stderr) = piped(&c, &args, &[]);
    assert_eq!(code, 0, "clean:\n{stdout}\n{stderr}");
    assert_eq!(stderr, "");

    let pty = under_pty(&c, &args, &[]);
    assert_eq!((pty.code, pty.stdout.as_str()), (code, stdout.as_str()));
    assert_moving(&pty.terminal, "files", &["1/3", "2/3", "3/3"]);
    assert!(pty.terminal.contains("3 objects"), "the objects checked are counted:\n{}", pty.terminal);

    let pty = under_pty(&c, &[&args[..], &["-o", "json"]].concat(), &[]);
    assert_eq!(pty.terminal, "", "-o json: no progress");
}

#[ignore = "needs the local control plane"]
#[test]
fn orphans_progress_counts_lists_and_objects() {
    let c = needs_cluster!("orphans_progress_counts_lists_and_objects");
    let ns = unique_ns("progress-orph");
    c.create_namespace(&ns);
    for name in ["old-a", "old-b"] {
        c.kubectl(&["-n", &ns, "create", "configmap", name, "--from-literal=a=1"]).ok();
    }
    let args = ["orphans", "-n", &ns, "--older-than", "0"];
    // The AGE column moves on between two runs; everything else must be equal.
    let ages = regex::Regex::new(r"\b\d+[smhd]\b").unwrap();
    let without_ages = |s: &str| ages.replace_all(s, "AGE").into_owned();

    let (code, stdout, stderr) = piped(&c, &args, &[]);
    assert_eq!(code, 1, "two orphans:\n{stdout}\n{stderr}");
    assert_no_progress(&stderr, "orphans in a pipe");

    let pty = under_pty(&c, &args, &[]);
    assert_eq!(pty.code, code);
    assert_eq!(without_ages(&pty.stdout), without_ages(&stdout), "the same table");
    assert_moving(&pty.terminal, "listing", &["1/", "2/", "3/"]);
    assert!(pty.terminal.contains(" objects"), "the objects listed are counted:\n{}", pty.terminal);

    for format in ["csv", "json"] {
        let pty = under_pty(&c, &[&args[..], &["-o", format]].concat(), &[]);
        assert_eq!(pty.terminal, "", "-o {format}: no progress");
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn versions_progress_counts_lookups_and_cache_hits() {
    let c = needs_cluster!("versions_progress_counts_lookups_and_cache_hits");
    let f = crate::upstream_fixtures::start();
    let ns = unique_ns("progress-ver");
    c.create_namespace(&ns);
    let chart = crate::versions::chart(&c, "1.2.0");
    for name in ["shop", "shop2"] {
        c.helm(Helm::V4, &["install", name, chart.to_str().unwrap(), "-n", &ns]).ok();
    }
    let cfg = crate::versions::config(&c, &f, "", "");
    let cache = c.scratch.join("cache");
    let env = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    let args = ["versions", "-n", &ns, "--category", "helm", "--config", &cfg];

    // The first run fills the cache; the run under a terminal then counts its hits.
    let (code, stdout, stderr) = piped(&c, &args, &env);
    assert!(code == 0 || code == 1, "{stdout}\n{stderr}");
    assert_no_progress(&stderr, "versions in a pipe");
    assert!(!stderr.contains("reading the cluster"), "the old static line is gone:\n{stderr}");

    let pty = under_pty(&c, &args, &env);
    assert_eq!((pty.code, pty.stdout.as_str()), (code, stdout.as_str()), "the same table");
    assert_moving(&pty.terminal, "charts", &["1/2", "2/2"]);
    assert!(pty.terminal.contains("cache hit"), "cache hits are counted:\n{}", pty.terminal);

    let pty = under_pty(&c, &[&args[..], &["-o", "csv"]].concat(), &env);
    assert_eq!(pty.terminal, "", "-o csv: no progress");
}

/// Several clusters: a progress line per cluster, named, drawn together and cleared before the
/// report (which is the same as in a pipe).
#[ignore = "needs the local control plane"]
#[test]
fn progress_per_cluster_with_several_contexts() {
    let c = needs_cluster!("progress_per_cluster_with_several_contexts");
    let kubeconfig = std::env::var("DRIFT_FLEET_KUBECONFIG").expect("scripts/test exports DRIFT_FLEET_KUBECONFIG");
    let contexts = std::env::var("DRIFT_FLEET_CONTEXTS").expect("scripts/test exports DRIFT_FLEET_CONTEXTS");
    let env = [("KUBECONFIG", kubeconfig.as_str())];
    let args = ["orphans", "-n", "default", "--context", &contexts];
    let (code, stdout, stderr) = piped(&c, &args, &env);
    assert!(code <= 1, "{stdout}\n{stderr}");
    assert_no_progress(&stderr, "several clusters in a pipe");
    let pty = under_pty(&c, &args, &env);
    assert_eq!(pty.code, code);
    assert_eq!(pty.stdout, stdout, "the report is the same with a terminal on stderr");
    let shown = pty.terminal.replace('\r', "\n");
    for ctx in contexts.split(',') {
        assert!(shown.contains(&format!("{ctx}: ")), "no progress line of {ctx}:\n{shown}");
        assert!(stdout.contains(&format!("cluster {ctx}")), "{stdout}");
    }
    assert!(
        pty.terminal.trim_end_matches(['\n', '\r']).ends_with("\x1b[2K"),
        "the progress lines are not cleared at the end:\n{}",
        pty.terminal.escape_debug()
    );
}
