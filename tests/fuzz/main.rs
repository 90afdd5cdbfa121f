//! Property-based fuzzing (proptest, stable Rust) of every parser that reads untrusted input:
//! Helm release storage (base64, gzip, JSON), manifest YAML, field paths, quantities, durations
//! and the `--config` files. Each target checks that the parser never panics, stays within its
//! bounds (time per input, decompressed size, nesting) and keeps a property that must hold.
//!
//! Under `cargo test` each target runs a short deterministic batch (fixed seed) plus the
//! committed seeds in `tests/fuzz/corpus/<target>/`. `scripts/fuzz SECONDS` runs the same targets
//! with random seeds for `DRIFT_FUZZ_SECONDS` each, in release mode, under a memory limit.

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::Value;

use kubectl_drift::app::config::Config as DriftConfig;
use kubectl_drift::engine::compare::quantity::{Quantity, same_quantity};
use kubectl_drift::engine::compare::rules::IgnoreRule;
use kubectl_drift::engine::select::ObjectRule;
use kubectl_drift::engine::select::glob;
use kubectl_drift::report::duration::{exact_duration, parse_duration, parse_timestamp};
use kubectl_drift::report::path::{FieldPath, Seg};
use kubectl_drift::source::helm::decode::{decode_payload, decode_release, encode_release};
use kubectl_drift::source::manifest::{parse_manifests, parse_stream};
use kubectl_drift::source::registry::ImageRef;

/// Cases per target under `cargo test` (kept small: all targets together take a few seconds).
const CI_CASES: u32 = 96;
/// The most CPU time any single input may take in a timed run (optimised build): more is a
/// finding. A YAML document that exhausts serde-saphyr's budget (a million events: an alias bomb)
/// costs about 1.5 s. The bound is on the fuzzing thread's CPU time, not wall time: on a loaded
/// shared machine the wall time of the same input was 4-8 s and tripped a wall-clock bound at once.
const SLOW_CASE: Duration = Duration::from_secs(5);

/// CPU time (user + system) the calling thread has used, from /proc/thread-self/stat (Linux, 10 ms
/// resolution); `None` where that is not readable (then the bound falls back to wall time).
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // After the command name in parentheses: state is field 3; utime and stime are fields 14, 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on Linux.
    Some(Duration::from_millis(ticks.saturating_mul(10)))
}
/// A value that must never appear in an error message (parse errors never quote documents).
const CANARY: &str = "c4n4ry-s3cr3t";

/// Run `check` over the target's committed seeds, then over generated inputs.
fn fuzz<S>(
    target: &str,
    seeds: impl Fn(Vec<u8>) -> S::Value,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), String>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let slowest = AtomicU64::new(0);
    let timed_run = budget().is_some();
    let timed = |v: S::Value| -> Result<(), TestCaseError> {
        let (start, cpu_start) = (Instant::now(), if timed_run { thread_cpu() } else { None });
        let r = check(v);
        let wall = start.elapsed();
        let took = match (cpu_start, thread_cpu().filter(|_| cpu_start.is_some())) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall,
        };
        slowest.fetch_max(took.as_micros() as u64, Ordering::Relaxed);
        if timed_run && took > SLOW_CASE {
            return Err(TestCaseError::fail(format!(
                "one input took {took:?} of CPU ({wall:?} wall; bound {SLOW_CASE:?})"
            )));
        }
        r.map_err(TestCaseError::fail)
    };
    for (name, bytes) in corpus(target) {
        if let Err(e) = timed(seeds(bytes)) {
            panic!("{target}: seed {name}: {e}");
        }
    }
    let start = Instant::now();
    let cpu_start = thread_cpu();
    // The share is CPU time of this thread (wall time where /proc is missing): on a loaded machine
    // a wall-clock share was mostly spent waiting (300 s wall gave 6 s of fuzzing at nice 10).
    let spent = || match (cpu_start, thread_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => start.elapsed(),
    };
    let mut cases = 0u64;
    match budget() {
        None => {
            let config = Config { cases: CI_CASES, failure_persistence: None, ..Config::default() };
            let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
            if let Err(e) = runner.run(&strategy, timed) {
                panic!("{target}: {e}");
            }
            cases += u64::from(CI_CASES);
        }
        Some(seconds) => {
            // Small batches, so a target with slow inputs stops close to its share.
            while spent() < seconds {
                let config = Config { cases: 32, failure_persistence: None, ..Config::default() };
                let mut runner = TestRunner::new(config);
                if let Err(e) = runner.run(&strategy, timed) {
                    panic!("{target}: after {cases} cases: {e}");
                }
                cases += 32;
            }
        }
    }
    eprintln!(
        "fuzz {target}: {} seeds + {cases} generated cases in {:.1}s of CPU ({:.1}s wall); slowest input {:?} (CPU in timed runs)",
        corpus(target).len(),
        spent().as_secs_f64(),
        start.elapsed().as_secs_f64(),
        Duration::from_micros(slowest.load(Ordering::Relaxed))
    );
}

/// `DRIFT_FUZZ_SECONDS`: the CPU-time budget of each target (timed mode); unset under `cargo test`.
fn budget() -> Option<Duration> {
    std::env::var("DRIFT_FUZZ_SECONDS").ok().and_then(|s| s.parse::<f64>().ok()).map(Duration::from_secs_f64)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus").join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out
}

/// Bytes: arbitrary ones, or a committed seed with a few bytes replaced and possibly cut short.
fn mutated(target: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let seeds: Vec<Vec<u8>> = corpus(target).into_iter().map(|(_, b)| b).collect();
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        (
            proptest::sample::select(seeds),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            proptest::option::of(any::<usize>())
        )
            .prop_map(|(mut b, edits, cut)| {
                for (i, byte) in edits {
                    if !b.is_empty() {
                        let n = b.len();
                        b[i % n] = byte;
                    }
                }
                if let Some(c) = cut {
                    b.truncate(c % (b.len() + 1));
                }
                b
            })
    ]
}

/// Text assembled from a vocabulary of tokens that matter to the parser (plus arbitrary text).
fn soup(tokens: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![4 => proptest::sample::select(tokens).prop_map(String::from), 1 => ".{0,8}"],
        0..max,
    )
    .prop_map(|v| v.concat())
}

/// Arbitrary JSON values, nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z.~/]{0,6}|.{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

const OBJECT: &str = "Secret fuzz/sh.helm.release.v1.fuzz.v1";

/// Decode one stored value; whatever it holds, the answer is a release or an error naming the object.
fn check_release(stored: &[u8]) -> Result<(), String> {
    match decode_release(OBJECT, stored) {
        Ok(r) => {
            let _ = (r.chart_name(), r.chart_version(), r.app_version(), r.values());
            let (objects, errors) = parse_stream(&r.manifest, "release fuzz/fuzz revision 1");
            // Every error must render (Display runs on what was decoded).
            let shown: usize = errors.iter().map(|e| e.to_string().len()).sum();
            let _ = (objects.len(), shown);
            Ok(())
        }
        Err(e) if e.to_string().contains(OBJECT) => Ok(()),
        Err(e) => Err(format!("the error does not name the object: {e}")),
    }
}

/// A release record with generated values, hooks and name.
fn release_json() -> impl Strategy<Value = Vec<u8>> {
    (json_value(), ".{0,40}", proptest::collection::vec(json_value(), 0..3)).prop_map(|(config, name, hooks)| {
        serde_json::json!({"name": name, "version": 1, "info": {"status": "deployed"}, "config": config,
            "manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "hooks": hooks})
        .to_string()
        .into_bytes()
    })
}

/// Helm release storage: arbitrary bytes at each layer (base64, gzip, JSON), generated release
/// JSON, and documents nested far deeper than serde_json's 128-level limit.
#[test]
fn helm_release() {
    let deep = (0usize..20_000, any::<bool>(), any::<bool>()).prop_map(|(depth, arrays, closed)| {
        let (open, close) = if arrays { ("[", "]") } else { (r#"{"a":"#, "}") };
        let mut s = format!(r#"{{"name":"n","config":{{"x":{}1"#, open.repeat(depth));
        if closed {
            s.push_str(&close.repeat(depth));
            s.push_str("}}");
        }
        s.into_bytes()
    });
    let input = prop_oneof![
        mutated("helm_release"),
        mutated("helm_release").prop_map(|b| b64(&b).into_bytes()),
        mutated("helm_release").prop_map(|b| b64(&gzip(&b)).into_bytes()),
        release_json().prop_map(|j: Vec<u8>| encode_release(&j).into_bytes()),
        release_json().prop_map(|j: Vec<u8>| b64(&j).into_bytes()),
        deep.prop_map(|j: Vec<u8>| encode_release(&j).into_bytes()),
    ];
    // A seed is the stored value itself (base64 text) when it is one; otherwise it is wrapped.
    let seed = |b: Vec<u8>| if decode_payload(OBJECT, &b).is_ok() { b } else { encode_release(&b).into_bytes() };
    fuzz("helm_release", seed, input, |stored: Vec<u8>| check_release(&stored));
}

const YAML_TOKENS: &[&str] = &[
    "---\n",
    "...\n",
    "\n",
    "  ",
    "- ",
    ": ",
    "? ",
    "&a ",
    "&b ",
    "*a",
    "*b",
    "<<: *a\n",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "|\n",
    ">-\n",
    "!!binary ",
    "!!str ",
    "!Custom ",
    "%YAML 1.2\n",
    "%TAG ! tag:x,2000:\n",
    "# c\n",
    "\"",
    "'",
    "\\u0000",
    "\u{feff}",
    "\0",
    "\t",
    "\r\n",
    "apiVersion: v1\n",
    "kind: ConfigMap\n",
    "kind: List\n",
    "items:\n",
    "metadata:\n",
    "  name: x\n",
    "  namespace: ns\n",
    "  generateName: g-\n",
    "data:\n",
    "  password: c4n4ry-s3cr3t\n",
    "c4n4ry-s3cr3t",
    "# Source: chart/templates/x.yaml\n",
    "1e999",
    "0x1F",
    "~",
    ".nan",
    "-.inf",
    "yes",
    "null",
    "2001-12-14t21:59:43.10-05:00",
];

/// A "billion laughs" document: `levels` anchors, each aliasing the previous one `fanout` times.
fn alias_bomb(levels: usize, fanout: usize) -> String {
    let mut s = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nx:\n  a0: &a0 [lol]\n");
    for i in 1..levels {
        let refs = vec![format!("*a{}", i - 1); fanout].join(", ");
        s.push_str(&format!("  a{i}: &a{i} [{refs}]\n"));
    }
    s
}

/// Manifest YAML: token soup (anchors, aliases, tags, directives, BOMs, NULs), alias bombs,
/// huge and deeply nested documents, arbitrary text. No panic; errors never quote a Secret value.
#[test]
fn manifest_yaml() {
    // Under `cargo test` (a debug build) the biggest bombs and streams take seconds each: the
    // committed billion-laughs seed stands for them, and timed runs generate them.
    let (bombs, docs) = if budget().is_some() { (12, 2_000) } else { (6, 200) };
    let input = prop_oneof![
        3 => soup(YAML_TOKENS, 80),
        2 => mutated("manifest_yaml").prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        1 => ".{0,200}",
        1 => (1usize..bombs, 1usize..12).prop_map(|(l, f)| alias_bomb(l, f)),
        1 => (0usize..5_000, any::<bool>()).prop_map(|(d, flow)| if flow {
            format!("kind: ConfigMap\nmetadata: {{name: deep}}\ndata: {}{}\n", "[".repeat(d), "]".repeat(d))
        } else {
            (0..d.min(300)).map(|i| format!("{}k:\n", " ".repeat(i))).collect()
        }),
        1 => (1usize..docs).prop_map(|n| (0..n).map(|i| format!("---\nkind: ConfigMap\napiVersion: v1\nmetadata: {{name: c{i}}}\n")).collect()),
    ];
    let seed = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    fuzz("manifest_yaml", seed, input, |text| {
        let parsed = parse_manifests(&text, "fuzz.yaml");
        for e in &parsed.errors {
            let shown = e.to_string();
            if shown.contains(CANARY) {
                return Err(format!("a parse error quotes the document: {shown}"));
            }
        }
        let (objects, _) = parse_stream(&text, "release fuzz/fuzz revision 1");
        if objects.len() != parsed.objects.len() {
            return Err(format!(
                "parse_stream found {} objects, parse_manifests {}",
                objects.len(),
                parsed.objects.len()
            ));
        }
        Ok(())
    });
}

fn segment() -> impl Strategy<Value = Seg> {
    prop_oneof![
        3 => "[a-zA-Z0-9_-]{1,8}|.{0,8}|[.\\[\\]\"=/~ ]{0,4}".prop_map(Seg::Key),
        1 => (0usize..1000).prop_map(Seg::Index),
        1 => ("name|containerPort|mountPath", ".{0,8}").prop_map(|(field, value)| Seg::Item { field, value }),
    ]
}

/// Field paths: rendering never panics and tells different key paths apart; `get` and
/// `json_pointer` agree on any document.
#[test]
fn field_path() {
    let input = (proptest::collection::vec(segment(), 0..8), proptest::collection::vec(segment(), 0..8), json_value());
    let seed = |b: Vec<u8>| {
        let keys: Vec<Seg> = String::from_utf8_lossy(&b).lines().map(|l| Seg::Key(l.to_string())).collect();
        (keys.clone(), keys.into_iter().rev().collect(), serde_json::from_slice(&b).unwrap_or(Value::Null))
    };
    fuzz("field_path", seed, input, |(a, b, doc)| {
        let (pa, pb) = (FieldPath(a.clone()), FieldPath(b.clone()));
        let (ra, rb) = (pa.to_string(), pb.to_string());
        let keys_only = |s: &[Seg]| s.iter().all(|x| matches!(x, Seg::Key(_)));
        if keys_only(&a) && keys_only(&b) && a != b && ra == rb {
            return Err(format!("two key paths render alike: {a:?} and {b:?} as {ra}"));
        }
        for (p, text) in [(&pa, ra), (&pb, rb)] {
            if text.contains('\n') && !p.segs().iter().any(|s| matches!(s, Seg::Item { .. })) {
                return Err(format!("a rendered path spans lines: {text:?}"));
            }
            match (p.get(&doc), p.json_pointer(&doc)) {
                (Some(v), Some(ptr)) if doc.pointer(&ptr) == Some(v) => {}
                (None, None) => {}
                (got, ptr) => return Err(format!("get {got:?} and json_pointer {ptr:?} disagree for {p:?}")),
            }
        }
        Ok(())
    });
}

/// Quantities: no panic on any text; a quantity equals itself; `n` with a suffix equals `n`
/// times the suffix's value.
#[test]
fn quantity() {
    let structured =
        "[+-]?[0-9]{0,40}(\\.[0-9]{0,40})?(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]{1,12}|[a-zA-Z]{0,3})? ?";
    let input = (prop_oneof![3 => structured, 1 => ".{0,40}"], 0u64..(1 << 40), 0usize..6);
    let seed = |b: Vec<u8>| (String::from_utf8_lossy(&b).trim_end_matches('\n').to_string(), 1, 0);
    fuzz("quantity", seed, input, |(text, n, unit)| {
        if Quantity::parse(&text).is_some() && same_quantity(&text, &text) != Some(true) {
            return Err(format!("{text:?} is not equal to itself"));
        }
        let (suffix, factor): (&str, u128) =
            [("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("k", 1000), ("M", 1_000_000), ("", 1)][unit];
        let scaled = format!("{n}{suffix}");
        let plain = (u128::from(n) * factor).to_string();
        if same_quantity(&scaled, &plain) != Some(true) {
            return Err(format!("{scaled} != {plain}"));
        }
        let milli = format!("{}m", u128::from(n) * 1000);
        if same_quantity(&milli, &n.to_string()) != Some(true) {
            return Err(format!("{milli} != {n}"));
        }
        Ok(())
    });
}

/// Durations (`--older-than`, `--interval`) and API timestamps: no panic or overflow on any
/// text; every duration written back by `exact_duration` reads as the same number of seconds.
#[test]
fn durations() {
    let structured = "([0-9]{0,22}(s|m|h|d|ms|w|))*";
    let input = (
        prop_oneof![3 => structured, 1 => ".{0,30}", 1 => "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9:]{0,10}(\\.[0-9]{0,12})?(Z|[+-][0-9:]{0,6})?"],
        any::<u64>(),
    );
    let seed = |b: Vec<u8>| (String::from_utf8_lossy(&b).trim_end_matches('\n').to_string(), 90);
    fuzz("durations", seed, input, |(text, secs)| {
        let _ = parse_duration(&text);
        let _ = kubectl_drift::app::watch::parse_duration(&text);
        let _ = parse_timestamp(&text);
        let written = exact_duration(secs);
        match parse_duration(&written) {
            Ok(n) if n == secs => {}
            other => return Err(format!("{secs} s written as {written} reads back as {other:?}")),
        }
        match kubectl_drift::app::watch::parse_duration(&written) {
            Ok(d) if d == Duration::from_secs(secs) => Ok(()),
            other => Err(format!("--interval {written} reads as {other:?}, not {secs} s")),
        }
    });
}

const CONFIG_TOKENS: &[&str] = &[
    "ignore:\n",
    "orphans:\n",
    "protect:\n",
    "- ",
    "  ",
    "kind: ",
    "namespace: ",
    "name: ",
    "name_regex: ",
    "path: ",
    "reason: ",
    "source: ",
    "note: ",
    "ConfigMap",
    "*",
    "\"(a*)*b\"",
    "\"[\"",
    "\"a{1000}{1000}{1000}\"",
    "\"\\\\p{Greek}+\"",
    "spec.replicas",
    "data[\"a.b\"]",
    "[",
    "]",
    "{",
    "}",
    "&x ",
    "*x",
    "\n",
    ": ",
    "~",
    "null",
    "42",
    "\"\"",
    "\u{feff}",
];

/// `--config` files and `--ignore`/`--protect` values: no panic on any text, pathological
/// regexes are errors (the regex crate's size limit), and `glob` stays linear enough.
#[test]
fn config_files() {
    let dir = std::env::temp_dir().join(format!("drift-fuzz-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("config.yaml");
    let input = (prop_oneof![3 => soup(CONFIG_TOKENS, 60), 1 => ".{0,80}"], ".{0,40}", "[a*]{0,40}", "a{0,200}");
    let seed = |b: Vec<u8>| (String::from_utf8_lossy(&b).into_owned(), String::new(), "*a*".into(), "aaaa".into());
    fuzz("config_files", seed, input, |(text, cli, pattern, subject)| {
        std::fs::write(&file, &text).map_err(|e| e.to_string())?;
        if let Ok(config) = DriftConfig::read(Some(&file)) {
            let _ = config.ignore_rules(&[]);
            let _ = config.orphan_rules(&[]);
            let _ = config.versions(&[]);
        }
        let _ = IgnoreRule::parse_cli(&cli);
        let _ = ObjectRule::parse_cli("--ignore", &cli);
        let _ = ObjectRule::parse_cli("--protect", &text);
        let _ = glob(&pattern, &subject);
        if !glob(&pattern, &pattern.replace('*', "")) && !pattern.is_empty() {
            return Err(format!("{pattern:?} does not match its own literal text"));
        }
        Ok(())
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// The bounds the docs promise, checked on the committed seeds: a billion-laughs document is an
/// error naming the file and document, and a gzip bomb a decode error naming the object.
#[test]
fn bombs_are_errors_naming_the_input() {
    let seed = |t: &str, n: &str| corpus(t).into_iter().find(|(name, _)| name == n).unwrap().1;
    let bomb = String::from_utf8(seed("manifest_yaml", "billion-laughs.yaml")).unwrap();
    let parsed = parse_manifests(&bomb, "bomb.yaml");
    assert!(parsed.objects.is_empty(), "the bomb is not read as an object");
    let e = parsed.errors.first().expect("an error").to_string();
    assert!(e.contains("bomb.yaml") && e.contains("1"), "{e}");
    let gz = seed("helm_release", "gzip-bomb-8MiB.b64");
    // 8 MiB is under the 256 MiB bound: decoded, then refused as JSON; both name the object.
    let e = decode_release(OBJECT, &gz).unwrap_err().to_string();
    assert!(e.contains(OBJECT), "{e}");
}

const IMAGE_TOKENS: &[&str] = &[
    "/",
    ":",
    "@",
    ".",
    "-",
    "_",
    "__",
    "sha256:",
    "docker.io",
    "index.docker.io",
    "localhost",
    "[::1]",
    "library",
    "nginx",
    "A",
    "1",
    "5000",
    "latest",
    " ",
    "\u{0}",
    "é",
    "0123456789abcdef0123456789abcdef",
];

/// Image references (`source::registry::ImageRef`, as pod specs and charts write them): no panic
/// on any text; a parsed reference, printed fully qualified, parses back to itself; an error
/// names the reference.
#[test]
fn image_ref() {
    let structured = (
        "(([a-z0-9-]{1,10}\\.)?[a-z0-9-]{1,10}\\.[a-z]{2,3}(:[0-9]{1,6})?/|localhost(:[0-9]{1,5})?/|\\[[0-9a-f:]{2,12}\\](:[0-9]{1,5})?/)?",
        "[a-z0-9]{1,8}([._-]{1,2}[a-z0-9]{1,8}){0,2}(/[a-z0-9]{1,8}){0,3}",
        "(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,20})?",
        "(@sha256:[0-9a-f]{64})?",
    )
        .prop_map(|(h, p, t, d)| format!("{h}{p}{t}{d}"));
    let input = prop_oneof![
        3 => structured,
        2 => soup(IMAGE_TOKENS, 16),
        1 => ".{0,80}",
        1 => mutated("image_ref").prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    let seed = |b: Vec<u8>| String::from_utf8_lossy(&b).trim_end_matches('\n').to_string();
    fuzz("image_ref", seed, input, |text| match ImageRef::parse(&text) {
        Ok(r) => {
            let full = r.to_string();
            match ImageRef::parse(&full) {
                Ok(again) if again == r => Ok(()),
                other => Err(format!("{text:?} parsed as {r:?}, printed {full:?}, read back as {other:?}")),
            }
        }
        Err(e) if e.to_string().contains(&format!("{text:?}")) => Ok(()),
        Err(e) => Err(format!("the error does not name the reference {text:?}: {e}")),
    });
}
