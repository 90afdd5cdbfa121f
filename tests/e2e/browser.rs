//! The dashboard page in a real headless browser: Debian's chromium driven over WebDriver
//! (chromedriver, plain W3C WebDriver JSON over HTTP on 127.0.0.1), against `serve` scanning a
//! scenario namespace on the real control plane. Screenshots of each tab go to
//! target/serve-screenshots/.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Cluster;
use crate::serve::{Served, http, scenario, serve};

/// A chromedriver process and one browser session.
pub struct Browser {
    driver: Driver,
    addr: String,
    session: String,
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http(&self.addr, "DELETE", &format!("/session/{}", self.session), &[], Some(""));
        self.driver.stop();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// The chromedriver process, killed when dropped: also when [`Browser::start`] fails after
/// starting it (no session), so a failed start leaves no process behind.
struct Driver(Child);

impl Driver {
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Browser {
    /// Start chromedriver and a headless chromium session (DRIFT_CHROMIUM, DRIFT_CHROMEDRIVER
    /// from scripts/test-env, which installs them when missing).
    pub fn start(c: &Cluster) -> Browser {
        let var = |k: &str, default: &str| {
            std::env::var(k).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
        };
        let chromium = var("DRIFT_CHROMIUM", "/usr/bin/chromium");
        let chromedriver = var("DRIFT_CHROMEDRIVER", "/usr/bin/chromedriver");
        assert!(
            std::path::Path::new(&chromium).exists() && std::path::Path::new(&chromedriver).exists(),
            "chromium and chromedriver are needed (scripts/test-env up installs Debian's chromium and chromium-driver): {chromium}, {chromedriver}"
        );
        let port = crate::common::free_port();
        let driver = Driver(
            Command::new(&chromedriver)
                .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start chromedriver"),
        );
        let addr = format!("127.0.0.1:{port}");
        let start = Instant::now();
        while http_ok(&addr).is_none() {
            assert!(start.elapsed() < Duration::from_secs(30), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        let profile = c.scratch.join(format!("chromium-profile-{port}"));
        std::fs::create_dir_all(&profile).unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--no-first-run",
                    "--disable-sync", "--disable-default-apps", "--window-size=1400,1000",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        }}});
        let r = http(&addr, "POST", "/session", &[("Content-Type", "application/json")], Some(&caps.to_string()));
        assert_eq!(r.status, 200, "new session: {}", r.body);
        let session = r.json()["value"]["sessionId"].as_str().expect("a session id").to_string();
        Browser { driver, addr, session, profile }
    }

    fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        let p = format!("/session/{}{path}", self.session);
        let body = body.to_string();
        let body = (method != "GET").then_some(body.as_str());
        let r = http(&self.addr, method, &p, &[("Content-Type", "application/json")], body);
        assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
        r.json()["value"].clone()
    }

    pub fn go(&self, url: &str) {
        self.cmd("POST", "/url", json!({ "url": url }));
    }

    /// Run `script` (a function body; `arguments` available) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.cmd("POST", "/execute/sync", json!({ "script": script, "args": args }))
    }

    /// Wait until `script` returns true.
    pub fn wait(&self, what: &str, script: &str) {
        let start = Instant::now();
        loop {
            if self.js(script, json!([])) == Value::Bool(true) {
                return;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let body = self.js("return document.body.innerText", json!([]));
                panic!("timed out waiting for {what}; page text:\n{}", body.as_str().unwrap_or(""));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn element(&self, css: &str) -> String {
        let v = self.cmd("POST", "/element", json!({"using": "css selector", "value": css}));
        v.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).expect("element id").to_string()
    }

    /// A real click (WebDriver's, not a script's).
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.cmd("POST", &format!("/element/{id}/click"), json!({}));
    }

    /// Real key presses into an element.
    pub fn keys(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.cmd("POST", &format!("/element/{id}/value"), json!({ "text": text }));
    }

    pub fn screenshot(&self, name: &str) -> PathBuf {
        use base64::Engine;
        let png = self.cmd("GET", "/screenshot", Value::Null);
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/serve-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }

    /// Every URL the page loaded (document and resources).
    pub fn requests(&self) -> Vec<String> {
        let v = self
            .js("return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name))", json!([]));
        v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
    }
}

fn http_ok(addr: &str) -> Option<()> {
    std::net::TcpStream::connect(addr).ok()?;
    (http(addr, "GET", "/status", &[], None).status == 200).then_some(())
}

fn rows_script(id: &str) -> String {
    format!("return !!document.querySelector('#orph-table tr[data-id=\"{id}\"]')")
}

fn assert_local(b: &Browser, served: &Served) {
    for u in b.requests() {
        assert!(
            u.starts_with(&format!("http://{}/", served.addr)),
            "the page requested something outside 127.0.0.1: {u}"
        );
    }
}

#[test]
fn serve_page_in_a_real_browser() {
    let c = crate::cluster_or_skip!("serve_page_in_a_real_browser");
    let ns = scenario(&c, "page");
    let data = c.scratch.join("data");
    let args = [
        "-n",
        ns.as_str(),
        "--data-dir",
        data.to_str().unwrap(),
        "--older-than",
        "0s",
        "--interval",
        "1h",
        "--cluster-name",
        "browser-test",
    ];
    let s = serve(&c, &args);
    s.wait_ready();
    let b = Browser::start(&c);
    let base = format!("http://{}/", s.addr);

    // Config drift: releases by status, the release's objects and fields, reconcile commands.
    b.go(&format!("{base}?tab=releases"));
    b.wait("the release list", "return document.querySelectorAll('details.release').length > 0");
    assert_eq!(
        b.js("return document.getElementById('cluster').textContent", json!([])),
        json!(format!("browser-test · namespace {ns}"))
    );
    // Releases are paged like the other tabs' rows (200 a page; one here).
    assert_eq!(b.js("return document.getElementById('rel-pager').textContent", json!([])), json!("1 row(s)"));
    b.click("details.release summary");
    b.wait(
        "the drifted fields",
        "return [...document.querySelectorAll('.fields td.path')].some(td => td.textContent === 'spec.replicas')",
    );
    b.wait("reconcile commands", "return !!document.querySelector('pre.commands') && document.querySelector('pre.commands').textContent.includes('kubectl')");
    let text = b.js("return document.body.innerText", json!([]));
    crate::serve::assert_no_canary(text.as_str().unwrap(), "the config drift tab");
    b.screenshot("releases.png");

    // Keyboard: arrow keys move between tabs.
    b.keys("#tab-releases", "\u{E014}");
    b.wait(
        "the Versions tab by keyboard",
        "return document.getElementById('tab-versions').getAttribute('aria-selected') === 'true'",
    );
    // Versions: the scan's rows (the release; with -n the cluster-wide categories are left out),
    // a search that narrows them and lands in the URL.
    b.wait(
        "the version rows",
        "const r = [...document.querySelectorAll('#ver-table tbody tr')]; return r.some(x => x.textContent.includes('shop')) && !r.some(x => x.textContent.includes('kubernetes'))",
    );
    let before = b.js("return document.querySelectorAll('#ver-table tbody tr').length", json!([])).as_u64().unwrap();
    b.screenshot("versions.png");
    b.keys("#ver-q", "shop");
    b.wait(
        "the version search to narrow the rows",
        &format!("const r = [...document.querySelectorAll('#ver-table tbody tr')]; return r.length > 0 && r.length < {before} && r.every(x => x.textContent.includes('shop'))"),
    );
    assert!(b.js("return location.search", json!([])).as_str().unwrap().contains("vq=shop"));
    b.js("const q = document.getElementById('ver-q'); q.value = ''; q.dispatchEvent(new Event('input'));", json!([]));
    b.wait(
        "every version row again",
        &format!("return document.querySelectorAll('#ver-table tbody tr').length === {before}"),
    );

    // Orphans: rows, a filter that narrows them and lands in the URL.
    b.click("#tab-orphans");
    let lonely = format!("ConfigMap:{ns}/lonely");
    b.wait("the orphan rows", &rows_script(&lonely));
    let before = b.js("return document.querySelectorAll('#orph-table tbody tr').length", json!([])).as_u64().unwrap();
    assert!(before >= 4, "lonely, canary, tls-a, tls-b are orphans: {before}");
    b.screenshot("orphans.png");
    b.keys("#orph-q", "lonely");
    b.wait("the filter to narrow the rows", "return document.querySelectorAll('#orph-table tbody tr').length === 1");
    assert!(b.js("return location.search", json!([])).as_str().unwrap().contains("oq=lonely"));
    b.js("const q = document.getElementById('orph-q'); q.value = ''; q.dispatchEvent(new Event('input'));", json!([]));
    b.wait("every row again", &format!("return document.querySelectorAll('#orph-table tbody tr').length === {before}"));

    // The ignore dialog: a rule built from the selection, with its live match count.
    let tls_a = format!("Secret:{ns}/tls-a");
    b.click(&format!("#orph-table tr[data-id=\"{tls_a}\"] input[type=checkbox]"));
    b.click("#orph-ignore");
    b.wait(
        "the certificate manager rule with its count",
        "return [...document.querySelectorAll('#ignore-options label')].some(l => l.textContent.includes('Secrets written by cert-manager-issuing') && l.textContent.includes('(2)'))",
    );
    b.screenshot("ignore-dialog.png");
    b.js(
        "const l = [...document.querySelectorAll('#ignore-options label')].find(l => l.textContent.includes('Secrets written by cert-manager-issuing')); l.querySelector('input').checked = true;",
        json!([]),
    );
    b.keys("#ignore-note", "issued certificates");
    b.click("#ignore-ok");
    b.wait(
        "the ignored rows to go",
        &format!("return !{} && !{}", rows_js(&tls_a), rows_js(&format!("Secret:{ns}/tls-b"))),
    );
    let rules = s.get("/api/orphans/rules").json();
    assert_eq!(rules["rules"][0]["rule"], "kind=Secret,source=manager:cert-manager-issuing", "{rules:#}");
    assert_eq!(rules["rules"][0]["note"], "issued certificates");

    // A delete script for a selected orphan, in a copyable box.
    let canary = format!("Secret:{ns}/canary");
    b.click(&format!("#orph-table tr[data-id=\"{canary}\"] input[type=checkbox]"));
    b.click("#orph-delete");
    b.wait("the delete script", "return document.getElementById('script-dialog').open && document.getElementById('script-text').value.includes(\"remove 'secrets'\")");
    let script = b.js("return document.getElementById('script-text').value", json!([]));
    assert!(script.as_str().unwrap().contains("'canary'"));
    b.screenshot("delete-script.png");
    b.click("#script-close");

    // Rescan: the header shows the new scan.
    let before_scans = scans(&s);
    b.click("#rescan");
    let start = Instant::now();
    while scans(&s) < before_scans + 2 {
        assert!(start.elapsed() < Duration::from_secs(90), "rescan did not finish");
        std::thread::sleep(Duration::from_millis(300));
    }
    b.wait("the rescan button back", "return !document.getElementById('rescan').disabled");
    assert_local(&b, &s);

    // The interactive API reference works offline too.
    b.go(&format!("{base}docs/"));
    b.wait("the API reference", "return !!document.querySelector('.swagger-ui .info') && document.body.innerText.includes('/api/orphans/commands')");
    b.screenshot("docs.png");
    assert_local(&b, &s);
    drop(s);

    // After a restart the rule still hides them; a link with filters shows the same view.
    let s = serve(&c, &args);
    let base = format!("http://{}/", s.addr);
    b.go(&format!("{base}?tab=orphans&oclass=ignored"));
    b.wait("the ignored rows after a restart", &rows_script(&tls_a));
    assert_eq!(b.js("return document.getElementById('orph-class').value", json!([])), json!("ignored"));
    assert_local(&b, &s);
    drop(b);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

fn rows_js(id: &str) -> String {
    format!("!!document.querySelector('#orph-table tr[data-id=\"{id}\"]')")
}

fn scans(s: &Served) -> u64 {
    let st = s.get("/api/status").json();
    st["scopes"].as_array().unwrap().iter().filter_map(|x| x["scans"].as_u64()).sum()
}
