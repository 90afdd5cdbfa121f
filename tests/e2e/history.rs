//! The drift history end to end (issue 52): `watch --history` on the real control plane, then
//! `kubectl drift history`, with the file in SQLite and the same rounds in the test environment's
//! PostgreSQL; a Secret canary that must be nowhere in the file; a watch killed with SIGKILL
//! while it writes; a second writer; an unwritable path.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Cluster, Run, pg, unique_ns};
use crate::watch::{Receiver, install};

/// One `watch --once` round of release `shop` in `ns`, recorded in `history`.
fn round(c: &Cluster, ns: &str, history: &str) -> Run {
    c.drift(&["watch", "shop", "-n", ns, "--once", "--history", history])
}

fn history_json(c: &Cluster, ns: &str, history: &str) -> (i32, Value) {
    let r = c.drift(&["history", "shop", "-n", ns, "--history", history, "-o", "json"]);
    let v: Value = serde_json::from_str(&r.stdout()).unwrap_or_else(|e| panic!("{e}: {}\n{}", r.stdout(), r.stderr()));
    (r.code(), v)
}

/// The entry of `path` in a history report.
fn entry<'a>(report: &'a Value, path: &str) -> &'a Value {
    report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path)
        .unwrap_or_else(|| panic!("no entry for {path}: {report:#}"))
}

/// A report without its times (two stores fed by two runs of the same rounds differ only there),
/// with whether each entry is resolved kept.
fn without_times(report: &Value) -> Value {
    let mut r = report.clone();
    for e in r["entries"].as_array_mut().unwrap() {
        let resolved = !e["resolvedAt"].is_null();
        let o = e.as_object_mut().unwrap();
        for k in ["firstSeen", "lastSeen", "resolvedAt"] {
            o.remove(k);
        }
        o.insert("resolved".into(), resolved.into());
    }
    r
}

#[ignore = "needs the local control plane"]
#[test]
fn history_counts_episodes_names_managers_and_keeps_no_secret() {
    let c = crate::needs_cluster!("history_counts_episodes_names_managers_and_keeps_no_secret");
    let ns = unique_ns("history");
    install(&c, &ns);
    let file = c.scratch.join("data/history.db");
    let file = file.to_str().unwrap();
    let dsn = pg().helm_dsn;
    // The SQLite rounds also alert (their notes say what the history knows).
    let rx = Receiver::start();
    let hook = rx.url("/hook");
    let both = |expected: i32| {
        let r = c.drift(&["watch", "shop", "-n", &ns, "--once", "--history", file, "--webhook", &hook]);
        assert_eq!(r.code(), expected, "{}", r.stderr());
        let r = round(&c, &ns, &dsn);
        assert_eq!(r.code(), expected, "{}", r.stderr());
    };
    both(0);
    // An edit (and a Secret's value changed to a canary), a revert, the same edit again.
    let canary = "history-canary-value-7c1f";
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    let patch = format!(r#"{{"stringData":{{"password":"{canary}"}}}}"#);
    c.kubectl(&["-n", &ns, "patch", "secret", "shop-secret", "--type", "merge", "-p", &patch]).ok();
    both(1);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=2"]).ok();
    both(1);
    let (_, between) = history_json(&c, &ns, file);
    assert!(!entry(&between, "spec.replicas")["resolvedAt"].is_null(), "reverted: resolved {between:#}");
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    both(1);
    // The alerts: the first drift says since when; the edit made again is flapping.
    let events = rx.events();
    let notes = |e: &Value| -> Vec<String> {
        e["notes"]
            .as_array()
            .map(|n| n.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let drifts: Vec<&Value> = events.iter().filter(|e| e["kind"] == "drift").collect();
    assert!(drifts.len() >= 2, "{events:#?}");
    assert!(notes(drifts[0]).iter().any(|n| n.starts_with("drifted since ")), "{:?}", notes(drifts[0]));
    let last = notes(drifts[drifts.len() - 1]);
    assert!(
        last.iter().any(|n| n.contains("flapping: Deployment") && n.contains("spec.replicas is back (episode 2)")),
        "{last:?}"
    );

    let (code, sqlite) = history_json(&c, &ns, file);
    assert_eq!(code, 1, "open findings: exit 1");
    assert_eq!(sqlite["schemaVersion"], 1);
    let replicas: Vec<&Value> =
        sqlite["entries"].as_array().unwrap().iter().filter(|e| e["path"] == "spec.replicas").collect();
    assert_eq!(replicas.len(), 1, "one entry for the field: {sqlite:#}");
    let e = replicas[0];
    assert_eq!(e["episodes"], 2, "{e:#}");
    assert!(e["resolvedAt"].is_null(), "{e:#}");
    assert_eq!((e["object"]["kind"].as_str(), e["object"]["name"].as_str()), (Some("Deployment"), Some("shop-web")));
    assert_eq!((e["target"]["kind"].as_str(), e["target"]["name"].as_str()), (Some("release"), Some("shop")));
    assert_eq!(e["target"]["namespace"].as_str(), Some(ns.as_str()));
    let managers: Vec<&str> = e["managers"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(managers.iter().any(|m| m.starts_with("kubectl")), "the manager is named: {managers:?}");
    assert!(e["firstSeen"].as_str().unwrap() <= e["lastSeen"].as_str().unwrap(), "{e:#}");
    let secret = entry(&sqlite, "data.password");
    assert_eq!(secret["object"]["kind"], "Secret");

    // The canary's value is nowhere in the file or its WAL, in any encoding the API uses.
    let b64 = |s: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let mut files = 0;
    for suffix in ["", "-wal", "-shm"] {
        let Ok(bytes) = std::fs::read(format!("{file}{suffix}")) else { continue };
        files += 1;
        let text = String::from_utf8_lossy(&bytes);
        for form in [canary.to_string(), b64(canary.as_bytes())] {
            assert!(!text.contains(&form), "the Secret's value is in {file}{suffix}");
        }
    }
    assert!(files >= 1);

    // Text and CSV say the same.
    let text = c.drift(&["history", "shop", "-n", &ns, "--history", file]);
    assert_eq!(text.code(), 1);
    assert!(text.stdout().contains("spec.replicas: drifted since"), "{}", text.stdout());
    assert!(text.stdout().contains("2 episodes"), "{}", text.stdout());
    let csv = c.drift(&["history", "shop", "-n", &ns, "--history", file, "-o", "csv"]).stdout();
    assert_eq!(csv.lines().count(), 1 + sqlite["entries"].as_array().unwrap().len(), "{csv}");

    // PostgreSQL, fed the same rounds, tells the same history.
    let (code, postgres) = history_json(&c, &ns, &dsn);
    assert_eq!(code, 1);
    assert_eq!(without_times(&postgres), without_times(&sqlite), "PostgreSQL:\n{postgres:#}\nSQLite:\n{sqlite:#}");

    // Another namespace, another release, or a short window without open findings: nothing.
    let other = c.drift(&["history", "-n", "nowhere", "--history", file, "-o", "json"]);
    assert_eq!(other.code(), 0, "{}", other.stderr());
    let other: Value = serde_json::from_str(&other.stdout()).unwrap();
    assert_eq!(other["entries"], serde_json::json!([]));
}

/// `PRAGMA integrity_check` of a history file.
fn integrity(path: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap()
}

#[ignore = "needs the local control plane"]
#[test]
fn history_survives_kill_9_refuses_a_second_writer_and_names_an_unwritable_path() {
    let c = crate::needs_cluster!("history_survives_kill_9_refuses_a_second_writer_and_names_an_unwritable_path");
    let ns = unique_ns("histkill");
    install(&c, &ns);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=4"]).ok();
    let file = c.scratch.join("history.db");
    let path = file.to_str().unwrap();
    for (attempt, after) in
        [Duration::from_millis(1500), Duration::from_millis(2700), Duration::from_millis(4100)].into_iter().enumerate()
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-drift"))
            .args(["watch", "shop", "-n", &ns, "--interval", "1s", "--history", path])
            .env("KUBECONFIG", &c.kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if attempt == 0 {
            // While it writes, a second writer is refused at once, naming the file.
            let deadline = Instant::now() + Duration::from_secs(30);
            while !file.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let second = round(&c, &ns, path);
            assert_eq!(second.code(), 2, "{}", second.stderr());
            assert!(
                second.stderr().contains(path) && second.stderr().contains("another kubectl-drift"),
                "{}",
                second.stderr()
            );
        }
        std::thread::sleep(after);
        // SIGKILL: no handler runs.
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert_eq!(integrity(&file), "ok", "after kill {attempt}");
    }
    // The killed writer's lock is gone with it: another writer goes on from the same file.
    let r = round(&c, &ns, path);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let (code, report) = history_json(&c, &ns, path);
    assert_eq!(code, 1);
    assert_eq!(entry(&report, "spec.replicas")["episodes"], 1);
    assert_eq!(integrity(&file), "ok");

    // A corrupt file is named and left alone.
    let corrupt = c.scratch.join("corrupt.db");
    let junk = b"not a database at all ".repeat(200);
    std::fs::write(&corrupt, &junk).unwrap();
    let r = round(&c, &ns, corrupt.to_str().unwrap());
    assert_eq!(r.code(), 2);
    assert!(r.stderr().contains(corrupt.to_str().unwrap()) && r.stderr().contains("corrupt"), "{}", r.stderr());
    assert_eq!(std::fs::read(&corrupt).unwrap(), junk);

    // An unwritable path: exit 2 naming it, and the alert still goes out.
    std::fs::write(c.scratch.join("a-file"), "x").unwrap();
    let unwritable = c.scratch.join("a-file/history.db");
    let rx = Receiver::start();
    let r = c.drift(&[
        "watch",
        "shop",
        "-n",
        &ns,
        "--once",
        "--history",
        unwritable.to_str().unwrap(),
        "--webhook",
        &rx.url("/hook"),
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains(unwritable.to_str().unwrap()), "{}", r.stderr());
    assert_eq!(rx.events().len(), 1, "the drift alert went out");
}

#[ignore = "needs the local control plane"]
#[test]
fn serve_keeps_history_in_its_data_dir_and_serves_it() {
    let c = crate::needs_cluster!("serve_keeps_history_in_its_data_dir_and_serves_it");
    let ns = unique_ns("histserve");
    install(&c, &ns);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=3"]).ok();
    let data = c.scratch.join("data");
    let s = crate::serve::serve(&c, &["-n", &ns, "--data-dir", data.to_str().unwrap(), "--interval", "1h"]);
    s.wait_scans("releases", 1);
    assert!(data.join("history.db").exists(), "history.db in the data directory");
    let r = s.get(&format!("/api/history?namespace={ns}&since=1d"));
    assert_eq!(r.status, 200, "{}", r.body);
    let report = r.json();
    assert_eq!(report["schemaVersion"], 1);
    let e = entry(&report, "spec.replicas");
    assert_eq!((e["episodes"].as_u64(), e["resolvedAt"].is_null()), (Some(1), true), "{e:#}");
    let csv = s.get("/api/history.csv?release=shop");
    assert_eq!(csv.status, 200);
    assert!(csv.body.lines().any(|l| l.contains("spec.replicas")), "{}", csv.body);
    assert_eq!(s.get("/api/history?since=nonsense").status, 400);
    let openapi = s.get("/openapi.json").json();
    assert!(openapi["paths"]["/api/history"].is_object() && openapi["paths"]["/api/history.csv"].is_object());
    let metrics = crate::serve::http(&s.health, "GET", "/metrics", &[], None).body;
    let series = format!("kubectl_drift_release_drift_since_timestamp_seconds{{namespace=\"{ns}\",release=\"shop\"}}");
    assert!(metrics.contains(&series), "{series} not in /metrics");
    // A second writer of the same file is refused while serve holds it.
    let path = data.join("history.db");
    let second = round(&c, &ns, path.to_str().unwrap());
    assert_eq!(second.code(), 2, "{}", second.stderr());
    drop(s);
}

/// Every object of a JSON value (depth first) that has `key` equal to `value`.
fn find_all<'a>(v: &'a Value, key: &str, value: &str, found: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            if m.get(key).and_then(Value::as_str) == Some(value) {
                found.push(v);
            }
            m.values().for_each(|x| find_all(x, key, value, found));
        }
        Value::Array(a) => a.iter().for_each(|x| find_all(x, key, value, found)),
        _ => {}
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn release_with_history_says_since_when_and_only_reads_it() {
    let c = crate::needs_cluster!("release_with_history_says_since_when_and_only_reads_it");
    let ns = unique_ns("hsince");
    install(&c, &ns);
    let file = c.scratch.join(format!("data/{ns}-history.db"));
    let file = file.to_str().unwrap();
    let watch = |expected: i32| {
        let r = round(&c, &ns, file);
        assert_eq!(r.code(), expected, "{}", r.stderr());
    };
    // Drifted, undone, drifted again: two episodes.
    watch(0);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    watch(1);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=2"]).ok();
    watch(0);
    c.kubectl(&["-n", &ns, "scale", "deploy/shop-web", "--replicas=5"]).ok();
    watch(1);
    let (_, recorded) = history_json(&c, &ns, file);
    let recorded = entry(&recorded, "spec.replicas").clone();
    let stat = || {
        let m = std::fs::metadata(file).unwrap();
        (std::fs::read(file).unwrap(), m.modified().unwrap(), m.len())
    };
    let before = stat();

    let r = c.drift(&["release", "shop", "-n", &ns, "--history", file, "-o", "json"]);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let v: Value = serde_json::from_str(&r.stdout()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout()));
    let mut fields = Vec::new();
    find_all(&v, "path", "spec.replicas", &mut fields);
    assert_eq!(fields.len(), 1, "{v:#}");
    let h = &fields[0]["history"];
    assert_eq!(h["episodes"], 2, "{v:#}");
    assert_eq!(h["firstSeen"], recorded["firstSeen"], "{h:#} vs {recorded:#}");
    let since = h["since"].as_str().expect("since");
    assert!(
        since > recorded["firstSeen"].as_str().unwrap() && since <= recorded["lastSeen"].as_str().unwrap(),
        "{h:#}"
    );
    let managers: Vec<&str> = h["managers"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(managers.iter().any(|m| m.starts_with("kubectl")), "{h:#}");

    let r = c.drift(&["release", "shop", "-n", &ns, "--history", file]);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let text = r.stdout();
    assert!(text.contains("drifted since ") && text.contains("2 episodes, by kubectl"), "{text}");
    assert!(text.contains(since), "{text}");
    // Without --history, no history.
    let r = c.drift(&["release", "shop", "-n", &ns, "-o", "json"]);
    assert!(!r.stdout().contains("\"history\""), "{}", r.stdout());

    // Only read: the file is as the watch left it.
    let after = stat();
    assert!(before == after, "release --history changed {file}");

    // A missing history is an error naming it, and is not created.
    let missing = c.scratch.join(format!("data/{ns}-none.db"));
    let missing = missing.to_str().unwrap();
    let r = c.drift(&["release", "shop", "-n", &ns, "--history", missing]);
    assert_eq!(r.code(), 2, "{}", r.stderr());
    assert!(r.stderr().contains(missing), "{}", r.stderr());
    assert!(!std::path::Path::new(missing).exists(), "{missing} was created");
}
