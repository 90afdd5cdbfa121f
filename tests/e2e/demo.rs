//! `scripts/demo` itself, run against the test environment: every step works, its versions call
//! shows real findings and no error, and the page it leaves running shows no error row on any tab
//! (the demo's serve gets the demo's versions config: the local registry over plain HTTP).

use std::process::Command;

use serde_json::json;

use crate::browser::Browser;
use crate::cluster_or_skip;

/// Stops the demo's dashboard when the test ends, however it ends.
struct Kill(Option<u32>);

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

#[test]
fn the_demo_runs_and_its_page_shows_no_error_row() {
    let c = cluster_or_skip!("the_demo_runs_and_its_page_shows_no_error_row");
    let port = crate::common::free_port();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/demo"))
        .current_dir(root)
        .env("DRIFT_DEMO_BIN", env!("CARGO_BIN_EXE_kubectl-drift"))
        .env("DEMO_PORT", port.to_string())
        .env("KUBECONFIG", &c.kubeconfig)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run scripts/demo");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let pid =
        stdout.lines().find_map(|l| l.strip_prefix("The dashboard (pid ")?.split(',').next()?.parse::<u32>().ok());
    let _kill = Kill(pid);
    assert!(out.status.success(), "scripts/demo failed:\n{stdout}\n{stderr}");
    assert!(pid.is_some(), "the demo did not say where its dashboard runs:\n{stdout}");

    // The versions call: the image a patch behind, the chart a minor behind, and no error.
    assert!(stdout.contains("Deployment/catalog"), "{stdout}");
    assert!(stdout.contains("patch behind") && stdout.contains("minor behind"), "{stdout}");
    assert!(
        stdout.contains(
            "2 row(s): 0 current, 2 behind, 0 newer image behind tag, 0 API problem(s), 0 unknown, 0 error(s)"
        ),
        "{stdout}"
    );
    for tab in ["releases", "versions", "orphans"] {
        assert!(stdout.contains(&format!("http://127.0.0.1:{port}/?tab={tab}")), "the page's {tab} address:\n{stdout}");
    }

    // The API behind the page: every scope scanned, no error anywhere.
    let base = format!("http://127.0.0.1:{port}");
    let get = |path: &str| -> serde_json::Value {
        let out = Command::new("curl").args(["-fsS", &format!("{base}{path}")]).output().unwrap();
        assert!(out.status.success(), "GET {path}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("GET {path}: {e}"))
    };
    let status = get("/api/status");
    for s in status["scopes"].as_array().unwrap() {
        assert!(s["available"] == true && s["lastError"].is_null(), "{status:#}");
    }
    let versions = get("/api/drift");
    assert_eq!(versions["report"]["summary"]["errors"], 0, "{versions:#}");
    assert_eq!(versions["report"]["summary"]["behind"], 2, "{versions:#}");

    // The page: every tab has its rows and not one error badge or error text.
    let b = Browser::start(&c);
    for (tab, rows) in
        [("releases", "#rel-list details"), ("versions", "#ver-table tbody tr"), ("orphans", "#orph-table tbody tr")]
    {
        b.go(&format!("{base}/?tab={tab}"));
        b.wait(&format!("the {tab} tab's rows"), &format!("return document.querySelectorAll('{rows}').length > 0"));
        let errors = b.js(
            "return [...document.querySelectorAll('.badge.s-error, .badge.v-error, .badge.o-error, p.error')].filter(e => e.offsetParent !== null && e.textContent.trim()).map(e => e.textContent)",
            json!([]),
        );
        assert_eq!(errors, json!([]), "error rows on the demo's {tab} tab");
        b.screenshot(&format!("demo-{tab}.png"));
    }
}
