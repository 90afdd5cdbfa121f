//! `scripts/demo` itself, run against the test environment: every step works, its versions call
//! shows real findings and no error, and the page it leaves running shows no error row on any tab
//! (the demo's serve gets the demo's versions config: the local registry over plain HTTP).

use std::process::Command;

use serde_json::json;

use crate::browser::Browser;
use crate::needs_cluster;

/// Stops the demo's dashboard when the test ends, however it ends.
struct Kill(Option<u32>);

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

#[ignore = "needs the local control plane"]
#[test]
fn the_demo_runs_and_its_page_shows_no_error_row() {
    let c = needs_cluster!("the_demo_runs_and_its_page_shows_no_error_row");
    let port = crate::common::free_port();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/demo"))
        .current_dir(root)
        .env("DRIFT_DEMO_BIN", env!("CARGO_BIN_EXE_kubectl-drift"))
        .env("DEMO_PORT", port.to_string())
        .env("KUBECONFIG", &c.kubeconfig)
        .env("NO_COLOR", "1")
        // Its files under the test's scratch dir, so a demo someone runs meanwhile is left alone.
        .env("TMPDIR", &c.scratch)
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

    // Only the demo's own story: no package or module download noise on the screen.
    for noise in ["go: downloading", "Unpacking ", "Selecting previously unselected", "Compiling "] {
        assert!(
            !stdout.contains(noise) && !stderr.contains(noise),
            "{noise:?} on the demo's screen:\n{stdout}\n{stderr}"
        );
    }

    // manifests: clean, then the hand edits found (with -q for cron).
    assert!(stdout.contains("checked 2 files (2 objects): 2 clean, 0 drifted, 0 errors"), "{stdout}");
    assert!(stdout.contains("checked 2 files (2 objects): 0 clean, 2 drifted, 0 errors"), "{stdout}");
    // Flux (built by scripts/test, so the demo shows it): the hand edits on the Kustomization's
    // objects, with who made them.
    crate::flux::flux_env();
    let flux = strip_ansi(&stdout);
    let flux = flux
        .split("+ kubectl drift kustomization storefront -n demo-flux")
        .nth(1)
        .unwrap_or_else(|| panic!("the demo has no Flux section:\n{stdout}"));
    assert!(flux.contains("Flux Kustomization demo-flux/storefront") && flux.contains("DRIFTED"), "{flux}");
    assert!(flux.contains("(kubectl-set") && flux.contains("flux reconcile kustomization storefront"), "{flux}");

    // watch: the Slack message shows the changed lines of app.yaml, the next round is quiet, and
    // the fix is announced.
    let watch = stdout.split("== watch:").nth(1).expect("the watch section").split("\n== ").next().unwrap();
    for line in ["  | -  timeout: 30s", "  | +  timeout: 120s", "  | -  search: true", "  | +  search: false"] {
        assert!(watch.lines().any(|l| l == line), "{line:?} in the Slack message:\n{watch}");
    }
    assert!(!watch.contains("compress…"), "the alert shows cut-off copies of the value:\n{watch}");
    assert_eq!(watch.matches("Slack message:").count(), 2, "{watch}");
    assert!(watch.contains("no message posted") && watch.contains("*Drift resolved*"), "{watch}");

    // The versions call: the image a patch behind, the chart a minor behind, and no error.
    assert!(stdout.contains("Deployment/catalog"), "{stdout}");
    assert!(stdout.contains("patch behind") && stdout.contains("minor behind"), "{stdout}");
    assert!(
        stdout.contains(
            "2 row(s): 0 current, 2 behind, 0 newer image behind tag, 0 API problem(s), 0 unknown, 0 error(s)"
        ),
        "{stdout}"
    );
    // The JSON summary, read through the output's one cluster (`.clusters[0].report.summary`).
    let summary = stdout.split("JSON summary (").nth(1).expect("the JSON summary section").split("== ").next().unwrap();
    assert!(summary.contains("\"releases\": 1") && summary.contains("\"driftedObjects\": "), "{summary}");

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

    // The line diff the release section printed for the edited app.yaml (it asks for colour).
    let plain = strip_ansi(&stdout);
    let release = plain
        .split("kubectl drift release shop -n demo-shop   (exit code 1 means drift)")
        .nth(1)
        .expect("the release section");
    let cli_diff: Vec<String> = release
        .lines()
        .skip_while(|l| !l.contains("~ data[\"app.yaml\"]"))
        .skip(1)
        .take_while(|l| l.starts_with("        "))
        .map(|l| l[8..].to_string())
        .collect();
    assert!(cli_diff.iter().any(|l| l == "+  timeout: 120s"), "{release}");

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
        if tab == "releases" {
            // The release opened: app.yaml's line diff is the one the CLI printed.
            b.click("#rel-list details summary");
            let app =
                "[...document.querySelectorAll('.fields tr')].find(tr => tr.dataset.path === 'data[\"app.yaml\"]')";
            b.wait("the line diff of app.yaml", &format!("return !!{app} && !!{app}.querySelector('td.diff .line')"));
            let page = b
                .js(&format!("return [...{app}.querySelectorAll('td.diff .line')].map(l => l.textContent)"), json!([]));
            assert_eq!(page, json!(cli_diff), "the page's line diff is the CLI's");
            b.js(&format!("{app}.scrollIntoView()"), json!([]));
        }
        b.screenshot(&format!("demo-{tab}.png"));
    }
}

/// The text without its ANSI colour sequences (`ESC [ ... m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
