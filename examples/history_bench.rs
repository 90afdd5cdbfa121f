//! `scripts/bench history`: the drift history's cost, without a cluster (the history only sees
//! reports). RELEASES releases with FIELDS drifting fields each, over DAYS simulated days of rounds
//! every INTERVAL minutes; each field drifts and is undone in its own rhythm, so rounds open,
//! keep, resolve and reopen findings. Prints the file's size, the time each round spent in the
//! history (median, p99, max), and `history -A --since DAYSd`'s time and the process's peak RSS.
//!
//! Usage: history_bench PATH [RELEASES] [FIELDS] [DAYS] [INTERVAL_MINUTES]

use std::time::{Duration, Instant};

use kubectl_drift::engine::history::History;
use kubectl_drift::report::history::{
    FindingKey, HistoryFilter, HistoryReport, ObjectRef, Observation, RoundFindings, TargetRef,
};
use kubectl_drift::source::history::{Access, HistoryLocation, open};

fn arg(n: usize, default: u64) -> u64 {
    std::env::args().nth(n).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let path = std::path::PathBuf::from(
        std::env::args().nth(1).expect("usage: history_bench PATH [RELEASES] [FIELDS] [DAYS] [INTERVAL_MINUTES]"),
    );
    let (releases, fields, days, interval) = (arg(2, 2000), arg(3, 5), arg(4, 30), arg(5, 30) * 60);
    let _ = std::fs::remove_file(&path);
    let location = HistoryLocation::File(path.clone());
    let backend = open(&location, Access::Write).await.expect("open");
    let mut history = History::writer(backend, Duration::from_secs(90 * 86400));
    let start = 1_764_000_000_i64;
    let rounds = days * 86400 / interval;
    let target = |r: u64| TargetRef {
        kind: "release".into(),
        name: format!("rel{r}"),
        namespace: Some(format!("ns{}", r / 10)),
    };
    let mut times = Vec::with_capacity(rounds as usize);
    for round in 0..rounds {
        let now = start + (round * interval) as i64;
        let mut findings = RoundFindings::default();
        for r in 0..releases {
            findings.checked.push(("bench".into(), target(r)));
            for f in 0..fields {
                // Field f of release r is drifted for 3 rounds in every (5 + f + r % 7).
                let period = 5 + f + r % 7;
                if (round + r) % period >= 3 {
                    continue;
                }
                findings.observations.push(Observation {
                    key: FindingKey {
                        cluster: "bench".into(),
                        target: target(r),
                        object: ObjectRef {
                            kind: "Deployment".into(),
                            namespace: Some(format!("ns{}", r / 10)),
                            name: format!("rel{r}-web"),
                        },
                        path: format!("spec.template.spec.containers[name=web].env[name=VAR{f}].value"),
                    },
                    digest: format!("{:032x}", (round / period) * 31 + f),
                    manager: Some("kubectl-edit".into()),
                    changed_at: None,
                });
            }
        }
        let t = Instant::now();
        history.record(&findings, now).await.expect("record");
        times.push(t.elapsed());
    }
    drop(history);
    times.sort();
    let pick = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    let size = |suffix: &str| std::fs::metadata(format!("{}{suffix}", path.display())).map(|m| m.len()).unwrap_or(0);
    println!(
        "history bench: {releases} releases x {fields} fields, {rounds} rounds over {days} days (every {} min)",
        interval / 60
    );
    println!("file: {:.1} MiB (+ WAL {:.1} MiB)", size("") as f64 / 1048576.0, size("-wal") as f64 / 1048576.0);
    println!(
        "time in the history per round: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        pick(0.5),
        pick(0.99),
        pick(1.0)
    );
    let rss_before = peak_rss_kib();
    let t = Instant::now();
    let mut reader = History::reader(open(&location, Access::Read).await.expect("open to read"));
    let now = start + (rounds * interval) as i64;
    let filter = HistoryFilter { since: Some(now - (days * 86400) as i64), ..Default::default() };
    let report = HistoryReport::new(reader.entries(&filter).await.expect("read"));
    let mut out = Vec::new();
    serde_json::to_writer(&mut out, &report).unwrap();
    println!(
        "history -A --since {days}d: {} entries, {:.2} s, {} bytes of JSON, peak RSS {} MiB (before the read: {} MiB)",
        report.entries.len(),
        t.elapsed().as_secs_f64(),
        out.len(),
        peak_rss_kib() / 1024,
        rss_before / 1024
    );
}
