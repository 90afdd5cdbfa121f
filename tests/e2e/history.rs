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
/// with whether each entry is resolved kept, and of its intervals whether each is still open.
fn without_times(report: &Value) -> Value {
    let mut r = report.clone();
    for e in r["entries"].as_array_mut().unwrap() {
        let resolved = !e["resolvedAt"].is_null();
        let open: Vec<bool> =
            e["intervals"].as_array().expect("intervals").iter().map(|i| i["end"].is_null()).collect();
        let o = e.as_object_mut().unwrap();
        for k in ["firstSeen", "lastSeen", "resolvedAt", "intervals"] {
            o.remove(k);
        }
        o.insert("resolved".into(), resolved.into());
        o.insert("intervalsOpen".into(), open.into());
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
    // Its two episodes' intervals: the first ended when the edit was undone, the second open.
    let intervals = e["intervals"].as_array().expect("intervals");
    assert_eq!(intervals.len(), 2, "{e:#}");
    assert_eq!(intervals[0]["start"], e["firstSeen"], "{e:#}");
    let ended = intervals[0]["end"].as_str().expect("the first episode ended");
    assert!(ended <= intervals[1]["start"].as_str().unwrap() && intervals[1]["end"].is_null(), "{e:#}");
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
    let params: Vec<&str> = openapi["paths"]["/api/history"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(params, ["since", "release", "namespace", "cluster"], "{openapi:#}");
    let description = openapi["paths"]["/api/history"]["get"]["responses"]["200"]["description"].as_str().unwrap();
    assert!(description.contains("\"intervals\""), "{description}");
    let status = &openapi["components"]["schemas"]["StatusResponse"]["properties"]["history"];
    assert!(status.to_string().contains("HistoryInfo"), "{status:#}");
    assert!(
        openapi["components"]["schemas"]["HistoryInfo"]["properties"]["retentionSeconds"].is_object(),
        "{openapi:#}"
    );
    // The cluster parameter: this server's name, or nothing.
    let cluster = s.get("/api/status").json()["clusterName"].as_str().unwrap().to_string();
    let mine = s.get(&format!("/api/history?namespace={ns}&cluster={cluster}")).json();
    assert_eq!(mine["entries"], report["entries"]);
    let other = s.get(&format!("/api/history?namespace={ns}&cluster=another-{cluster}")).json();
    assert_eq!(other["entries"], serde_json::json!([]));
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
    two_episodes(&c, &ns, |expected| {
        let r = round(&c, &ns, file);
        assert_eq!(r.code(), expected, "{}", r.stderr());
    });
    let (_, recorded) = history_json(&c, &ns, file);
    let recorded = entry(&recorded, "spec.replicas").clone();
    let stat = || {
        let m = std::fs::metadata(file).unwrap();
        (std::fs::read(file).unwrap(), m.modified().unwrap(), m.len())
    };
    let before = stat();

    let h = &field_history(&c, &ns, file, "spec.replicas");
    assert_eq!(h["episodes"], 2, "{h:#}");
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

/// Drifted, undone, drifted again (two episodes of `spec.replicas`): `round(expected exit code)`
/// before the first step and after each. Each step is made in a wall-clock second of its own:
/// the history keeps times in whole seconds, and on a fast machine the three steps once fell in
/// one second, so the second episode's start was not after the first's.
fn two_episodes(c: &Cluster, ns: &str, mut round: impl FnMut(i32)) {
    round(0);
    for (replicas, expected) in [(5, 1), (2, 0), (5, 1)] {
        next_second();
        c.kubectl(&["-n", ns, "scale", "deploy/shop-web", &format!("--replicas={replicas}")]).ok();
        round(expected);
    }
}

/// Sleep into the next second of the system clock (the one the history's times are read from).
fn next_second() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    std::thread::sleep(Duration::from_nanos(1_000_000_000 - u64::from(now.subsec_nanos())) + Duration::from_millis(10));
}

/// The `history` object `release --history HISTORY -o json` gives the drifted field `path`.
fn field_history(c: &Cluster, ns: &str, history: &str, path: &str) -> Value {
    let r = c.drift(&["release", "shop", "-n", ns, "--history", history, "-o", "json"]);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    let v: Value = serde_json::from_str(&r.stdout()).unwrap_or_else(|e| panic!("{e}: {}", r.stdout()));
    let mut fields = Vec::new();
    find_all(&v, "path", path, &mut fields);
    assert_eq!(fields.len(), 1, "{v:#}");
    fields[0]["history"].clone()
}

#[ignore = "needs the local control plane"]
#[test]
fn release_with_history_reads_postgresql_as_it_reads_sqlite() {
    let c = crate::needs_cluster!("release_with_history_reads_postgresql_as_it_reads_sqlite");
    let ns = unique_ns("hpg");
    install(&c, &ns);
    let file = c.scratch.join(format!("data/{ns}-history.db"));
    let file = file.to_str().unwrap();
    let dsn = pg().helm_dsn;
    let password = crate::common::Pg::password(&dsn);
    // The same rounds into both stores.
    two_episodes(&c, &ns, |expected| {
        for history in [file, dsn.as_str()] {
            let r = round(&c, &ns, history);
            assert_eq!(r.code(), expected, "{}", r.stderr());
        }
    });

    let sqlite = field_history(&c, &ns, file, "spec.replicas");
    let postgres = field_history(&c, &ns, &dsn, "spec.replicas");
    let keys = |h: &Value| -> Vec<String> {
        let mut k: Vec<String> = h.as_object().unwrap_or_else(|| panic!("no history: {h:#}")).keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&postgres), keys(&sqlite), "PostgreSQL {postgres:#}\nSQLite {sqlite:#}");
    assert_eq!(keys(&sqlite), ["episodes", "firstSeen", "lastSeen", "managers", "since"]);
    assert_eq!(sqlite["episodes"], 2, "{sqlite:#}");
    assert_eq!(postgres["episodes"], sqlite["episodes"]);
    assert_eq!(postgres["managers"], sqlite["managers"]);
    assert!(
        sqlite["managers"].as_array().unwrap().iter().any(|m| m.as_str().is_some_and(|m| m.starts_with("kubectl")))
    );
    // Each store's times are those of its own rounds (seconds apart): what its `history` says,
    // `since` being the start of the open (second) interval.
    for (h, store) in [(&sqlite, file), (&postgres, dsn.as_str())] {
        let (_, report) = history_json(&c, &ns, store);
        let e = entry(&report, "spec.replicas");
        assert_eq!((&h["firstSeen"], &h["lastSeen"]), (&e["firstSeen"], &e["lastSeen"]), "{h:#} vs {e:#}");
        let intervals = e["intervals"].as_array().unwrap();
        assert_eq!(intervals.len(), 2, "{e:#}");
        assert_eq!(h["since"], intervals[1]["start"], "{h:#} vs {e:#}");
        assert!(h["since"].as_str().unwrap() > h["firstSeen"].as_str().unwrap(), "{h:#}");
    }
    // The text says the same, and the DSN's password is nowhere.
    let r = c.drift(&["release", "shop", "-n", &ns, "--history", &dsn]);
    assert_eq!(r.code(), 1, "{}", r.stderr());
    assert!(r.stdout().contains("drifted since ") && r.stdout().contains("2 episodes, by kubectl"), "{}", r.stdout());
    assert!(r.stdout().contains(postgres["since"].as_str().unwrap()), "{}", r.stdout());
    assert!(!r.stdout().contains(&password) && !r.stderr().contains(&password));
}

/// `kubectl edit` by hand (the manager is `kubectl-edit`): the editor is sed, setting the
/// Deployment's `spec.replicas` (its first `replicas:` at two spaces; status comes after spec).
fn edit_replicas(c: &Cluster, ns: &str, replicas: u32) {
    let sed = format!("sed -i -e '0,/^  replicas: [0-9]*$/s//  replicas: {replicas}/'");
    let out = c.bash(&format!("KUBE_EDITOR=\"{sed}\" kubectl -n {ns} edit deploy/shop-web"));
    assert!(out.status.success(), "kubectl edit: {}", String::from_utf8_lossy(&out.stderr));
    let now = c.kubectl(&["-n", ns, "get", "deploy/shop-web", "-o", "jsonpath={.spec.replicas}"]).ok();
    assert_eq!(now.trim(), replicas.to_string());
}

#[ignore = "needs the local control plane"]
#[test]
fn serve_page_shows_each_release_drift_strip_and_since_when() {
    use crate::browser::Browser;
    use serde_json::json;
    let c = crate::needs_cluster!("serve_page_shows_each_release_drift_strip_and_since_when");
    let ns = unique_ns("hstrip");
    install(&c, &ns);
    let data = c.scratch.join(format!("{ns}-data"));
    let s = crate::serve::serve(
        &c,
        &["-n", &ns, "--data-dir", data.to_str().unwrap(), "--interval", "1h", "--cluster-name", "strip-test"],
    );
    s.wait_scans("releases", 1);
    let mut scans = 1;
    let mut rescan = || {
        let r = s.post("/api/rescan?scope=releases", &json!({}));
        assert_eq!(r.status, 202, "{}", r.body);
        scans += 1;
        s.wait_scans("releases", scans);
        // Each releases result is recorded before the scan counts as finished.
        let h = s.get(&format!("/api/history?release=shop&namespace={ns}"));
        assert_eq!(h.status, 200, "{}", h.body);
        h.json()["entries"].as_array().unwrap().iter().find(|e| e["path"] == "spec.replicas").cloned()
    };
    // Edited by hand, undone, edited again: rounds in between.
    edit_replicas(&c, &ns, 5);
    let e = rescan().expect("the edit is recorded");
    assert_eq!((e["episodes"].as_u64(), e["resolvedAt"].is_null()), (Some(1), true), "{e:#}");
    edit_replicas(&c, &ns, 2);
    let e = rescan().expect("the finding is kept");
    assert!(!e["resolvedAt"].is_null(), "undone: resolved {e:#}");
    edit_replicas(&c, &ns, 5);
    let e = rescan().expect("the finding is kept");
    assert_eq!((e["episodes"].as_u64(), e["resolvedAt"].is_null()), (Some(2), true), "{e:#}");
    assert_eq!(e["managers"], json!(["kubectl-edit"]), "{e:#}");
    assert_eq!(e["cluster"], "strip-test");
    let st = s.get("/api/status").json();
    assert_eq!(st["history"]["retentionSeconds"], 90 * 86400, "{st:#}");

    // The page: the release's strip holds two intervals (the second still open), and beside the
    // field since when, how many episodes and by whom.
    let b = Browser::start(&c);
    let base = format!("http://{}/", s.addr);
    b.go(&format!("{base}?tab=releases&hwin=1h"));
    let release = format!("details.release[data-release=\"{ns}/shop\"]");
    b.wait(
        "the release's strip with two intervals",
        &format!("const d = document.querySelector('{release}'); return !!d && d.querySelectorAll('.strip .seg').length === 2"),
    );
    assert_eq!(b.js("return document.getElementById('rel-window').value", json!([])), json!("1h"));
    // Displayed: the window selector and the history's CSV.
    let shown = "return [document.getElementById('rel-window'), document.getElementById('rel-history-csv')].map(e => e.getClientRects().length > 0)";
    assert_eq!(b.js(shown, json!([])), json!([true, true]));
    let strip = b.js(
        &format!(
            "const s = document.querySelector('{release} .strip'); return [s.dataset.intervals, s.getAttribute('aria-label'), [...s.querySelectorAll('.seg')].map(x => [x.dataset.start, x.dataset.end, x.classList.contains('open'), x.getBoundingClientRect().width, x.getBoundingClientRect().left >= s.getBoundingClientRect().left && x.getBoundingClientRect().right <= s.getBoundingClientRect().right])]"
        ),
        json!([]),
    );
    assert_eq!(strip[0], "2", "{strip:#}");
    assert_eq!(strip[1], "drifted 2 time(s) in the last 1 hour", "{strip:#}");
    let segs = strip[2].as_array().unwrap();
    let (first, second) = (&segs[0], &segs[1]);
    assert!(
        first[1].as_str().is_some_and(|end| !end.is_empty()) && first[2] == false,
        "the first interval ended: {strip:#}"
    );
    assert!(second[1] == "" && second[2] == true, "the second is open: {strip:#}");
    assert!(first[0].as_str().unwrap() <= second[0].as_str().unwrap(), "oldest first: {strip:#}");
    assert!(
        segs.iter().all(|s| s[3].as_f64().unwrap() >= 3.0 && s[4] == true),
        "every interval is visible, inside the strip: {strip:#}"
    );
    b.click(&format!("{release} summary"));
    let since = format!("{release} tr[data-path=\"spec.replicas\"] td.since");
    b.wait(
        "the since text",
        &format!("const t = document.querySelector('{since}'); return !!t && t.textContent !== ''"),
    );
    let text = b.js(&format!("return document.querySelector('{since}').textContent"), json!([]));
    let text = text.as_str().unwrap();
    assert!(text.starts_with("since ") && text.ends_with(", 2 episodes, by kubectl-edit"), "{text}");
    let note = b.js(&format!("return document.querySelector('{release} p.history').textContent"), json!([]));
    assert_eq!(note, "Drifted 2 time(s) in the last 1 hour, newest first:", "{note}");
    // Each episode on a line of its own, newest (still open) first, its times in the page's one
    // format (ISO 8601 UTC) and its length.
    let episodes = b.js(
        &format!("return [...document.querySelectorAll('{release} ol.episodes li')].map(l => [l.textContent, l.dataset.start, l.dataset.end])"),
        json!([]),
    );
    let episodes = episodes.as_array().unwrap();
    assert_eq!(episodes.len(), 2, "{episodes:#?}");
    let iso = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$").unwrap();
    let (newest, oldest) = (&episodes[0], &episodes[1]);
    assert_eq!(newest[2], "", "the newest is open: {episodes:#?}");
    let text = newest[0].as_str().unwrap();
    assert!(text.starts_with(&format!("{} to now (", newest[1].as_str().unwrap())), "{text}");
    let (start, end) = (oldest[1].as_str().unwrap(), oldest[2].as_str().unwrap());
    assert!(iso.is_match(start) && iso.is_match(end) && start <= end, "{episodes:#?}");
    assert!(oldest[0].as_str().unwrap().starts_with(&format!("{start} to {end} (")), "{episodes:#?}");
    // The strip has the room of the line (240 pixels before: an hour of a 30-day window was a
    // third of a pixel).
    let widths = b.js(
        &format!("const d = document.querySelector('{release}'); return [d.querySelector('.strip').getBoundingClientRect().width, d.querySelector('summary').getBoundingClientRect().width]"),
        json!([]),
    );
    let (strip_w, line_w) = (widths[0].as_f64().unwrap(), widths[1].as_f64().unwrap());
    assert!(strip_w >= 0.9 * line_w && strip_w > 400.0, "strip {strip_w}px on a {line_w}px line");
    // The header's scan time is in the same format (it was the browser's locale: 12/5/2026, 1:36:27 AM).
    let scanned = b.js("return document.querySelector('#scans li[data-scope=releases] time').textContent", json!([]));
    assert!(iso.is_match(scanned.as_str().unwrap()), "{scanned}");
    let body = b.js("return document.body.innerText", json!([]));
    let locale = regex::Regex::new(r"\b\d{1,2}/\d{1,2}/\d{4}\b|\b\d{1,2}:\d\d:\d\d [AP]M\b").unwrap();
    assert!(!locale.is_match(body.as_str().unwrap()), "a locale time on the page:\n{body}");
    b.screenshot("history-strip.png");
    // Every request of the page went to the server, by relative URLs.
    for u in b.requests() {
        assert!(u.starts_with(&base), "the page requested {u}");
    }
    drop(s);

    // Without a history the page says so, and the releases are shown all the same.
    let s = crate::serve::serve(
        &c,
        &[
            "-n",
            &ns,
            "--data-dir",
            c.scratch.join(format!("{ns}-off")).to_str().unwrap(),
            "--interval",
            "1h",
            "--history",
            "off",
        ],
    );
    s.wait_scans("releases", 1);
    assert!(s.get("/api/status").json()["history"].is_null());
    assert_eq!(s.get("/api/history").status, 503);
    b.go(&format!("http://{}/?tab=releases", s.addr));
    b.wait(
        "the release without a history",
        &format!("return !!document.querySelector('{release}') && document.getElementById('rel-history').textContent.startsWith('No drift history is kept')"),
    );
    assert_eq!(b.js("return document.querySelectorAll('.strip, td.since').length", json!([])), json!(0));
    // The history's window and CSV are not offered (not displayed, not only flagged hidden).
    assert_eq!(b.js(shown, json!([])), json!([false, false]));
    b.screenshot("history-off.png");
    drop(b);
    drop(s);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
