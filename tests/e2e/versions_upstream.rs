//! `kubectl drift versions` against upstreams that fail, counted from the upstream's side: each
//! unique URL is asked once per run (a failure too), and every release row that needed it reports
//! the failure. A classic chart repository's index is read once per repository per run with
//! `--no-cache` and with `cache_ttl: 0s`.

use crate::common::{Helm, unique_ns};
use crate::needs_cluster;
use crate::upstream_fixtures;

#[ignore = "needs the local control plane"]
#[test]
fn versions_asks_each_upstream_url_once_per_run_failures_included() {
    let c = needs_cluster!("versions_asks_each_upstream_url_once_per_run_failures_included");
    let f = upstream_fixtures::start();
    let rt = crate::common::runtime();
    let ns = unique_ns("versions-once");
    c.create_namespace(&ns);
    let chart = crate::versions::chart(&c, "1.2.0");
    // Three releases looked up on ArtifactHub, two in a chart repository that is down, two in one
    // that answers: all of chart drift-shop.
    let releases = ["hub-1", "hub-2", "hub-3", "down-1", "down-2", "up-1", "up-2"];
    for name in releases {
        c.helm(Helm::V4, &["install", name, chart.to_str().unwrap(), "-n", &ns]).ok();
    }
    let repo = crate::oci::tempdir("versions-once-repo");
    std::fs::write(
        repo.join("index.yaml"),
        "apiVersion: v1\nentries:\n  drift-shop:\n  - {name: drift-shop, version: 1.3.0}\n  - {name: drift-shop, version: 1.2.0}\n",
    )
    .unwrap();
    let good = rt.block_on(crate::oci::serve_dir(repo));
    // Every upstream of the fixture server under /blocked/: 429 with `Retry-After: 3600`, an error
    // at once (never waited out).
    let rules = format!(
        "  charts:\n  - {{release: \"down-*\", namespace: \"{ns}\", repo: \"{}\"}}\n  - {{release: \"up-*\", namespace: \"{ns}\", repo: \"http://{good}\"}}\n",
        f.url("/blocked/charts")
    );
    let cache = c.scratch.join("versions-once-cache");
    let env = [("XDG_CACHE_HOME", cache.to_str().unwrap())];
    for (how, cfg, flags) in [
        ("--no-cache", crate::versions::config(&c, &f, "/blocked", &rules), &["--no-cache"][..]),
        ("cache_ttl: 0s", crate::versions::config(&c, &f, "/blocked", &format!("  cache_ttl: 0s\n{rules}")), &[][..]),
    ] {
        f.clear();
        let run = c.drift_with_env(
            &[&["versions", "-n", &ns, "--category", "helm", "-o", "json", "--config", &cfg], flags].concat(),
            &env,
        );
        let report = run.report();
        assert_eq!(run.code(), 2, "{how}: a scan that could not see everything is an error: {report:#}");
        let row = |name: &str| {
            report["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["category"] == "helm" && r["name"] == name)
                .unwrap_or_else(|| panic!("{how}: no row {name}: {report:#}"))
                .clone()
        };
        // Every release that needed a failing upstream says so, with the host and when to retry.
        for name in ["hub-1", "hub-2", "hub-3", "down-1", "down-2"] {
            let r = row(name);
            let why = r["why"].as_str().unwrap_or_default();
            assert_eq!(r["status"], "error", "{how}: {name}: {r:#}");
            assert!(why.contains(&f.addr.to_string()) && why.contains("3600 s"), "{how}: {name}: {why}");
        }
        for name in ["up-1", "up-2"] {
            let r = row(name);
            assert_eq!((r["status"].as_str(), r["latest"].as_str()), (Some("minor-behind"), Some("1.3.0")), "{r:#}");
        }
        // One search for the chart and one read of the failing index, not one per release.
        let seen: Vec<String> = f.seen().iter().map(|s| s.path.clone()).collect();
        let count = |path: &str| seen.iter().filter(|p| *p == path).count();
        assert_eq!(count("/blocked/api/v1/packages/search"), 1, "{how}: {seen:?}");
        assert_eq!(count("/blocked/charts/index.yaml"), 1, "{how}: {seen:?}");
        assert_eq!(seen.len(), 2, "{how}: {seen:?}");
        // The repository that answers: its index once for both of its releases.
        let requests = &report["summary"]["requests"];
        assert_eq!(requests[good.to_string()].as_u64(), Some(1), "{how}: {requests:#}");
        assert_eq!(requests[f.addr.to_string()].as_u64(), Some(2), "{how}: {requests:#}");
    }
}
