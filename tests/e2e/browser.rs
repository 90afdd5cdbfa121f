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

    /// Send these headers with every request of the page (Chrome DevTools' Network domain, through
    /// chromedriver): what a gateway in front of the dashboard adds (an `Authorization` header).
    pub fn extra_headers(&self, headers: Value) {
        self.cmd("POST", "/goog/cdp/execute", json!({ "cmd": "Network.enable", "params": {} }));
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            json!({ "cmd": "Network.setExtraHTTPHeaders", "params": { "headers": headers } }),
        );
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

#[ignore = "needs the local control plane"]
#[test]
fn serve_page_in_a_real_browser() {
    let c = crate::needs_cluster!("serve_page_in_a_real_browser");
    let ns = scenario(&c, "page");
    let cli_diff = multi_line_edits(&c, &ns);
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
    line_diffs_on_the_page(&b, &s, &cli_diff);

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
    // The cluster-wide categories left out by -n, said on the tab as in the CLI's summary.
    b.wait(
        "the note of what -n left out",
        "return document.getElementById('ver-left-out').textContent.includes('cluster and nodes left out')",
    );
    // With -n the scan has only this namespace's rows (here one): a search for what no row has
    // narrows them to none.
    b.keys("#ver-q", "no-such-component");
    b.wait(
        "the version search to narrow the rows",
        &format!("return {before} > 0 && document.querySelectorAll('#ver-table tbody tr').length === 0"),
    );
    assert!(b.js("return location.search", json!([])).as_str().unwrap().contains("vq=no-such-component"));
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

/// A line of a Secret value made multi-line by hand: never on the page or in the API (Secret
/// values are redacted when the report is built, before any line diff is made).
const SECRET_LINE: &str = "second-line-of-a-SECRET-h33-do-not-print";

/// Edits by hand that the page shows line by line: the chart's ConfigMap `app.yaml` with its
/// timeout changed (a line diff), a 60-line value added next to it (collapsed to 20 lines), and
/// the chart's Secret `api-token` made multi-line (redacted: no diff). Returns the lines
/// `kubectl drift release` prints under `data["app.yaml"]`.
fn multi_line_edits(c: &Cluster, ns: &str) -> Vec<String> {
    let app = c.kubectl(&["-n", ns, "get", "configmap", "shop-config", "-o", "jsonpath={.data.app\\.yaml}"]).ok();
    assert!(app.contains("timeout: 30s"), "{app}");
    let big: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    let patch = json!({"data": {"app.yaml": app.replace("timeout: 30s", "timeout: 120s"), "big.txt": big}});
    c.kubectl(&["-n", ns, "patch", "configmap", "shop-config", "--type", "merge", "-p", &patch.to_string()]).ok();
    let patch = json!({"stringData": {"api-token": format!("first-line\n{SECRET_LINE}\n")}});
    c.kubectl(&["-n", ns, "patch", "secret", "shop-secret", "--type", "merge", "-p", &patch.to_string()]).ok();

    let run = c.drift(&["release", "shop", "-n", ns]);
    let out = run.stdout();
    assert_eq!(run.code(), 1, "{out}\n{}", run.stderr());
    assert!(!out.contains(SECRET_LINE), "{out}");
    // `    ~ data["app.yaml"]:  (manager, time)`, then the diff's lines indented by 8.
    let diff: Vec<String> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("~ data[\"app.yaml\"]:"))
        .skip(1)
        .take_while(|l| l.starts_with("        "))
        .map(|l| l[8..].to_string())
        .collect();
    assert!(diff.iter().any(|l| l == "-  timeout: 30s") && diff.iter().any(|l| l == "+  timeout: 120s"), "{out}");
    diff
}

/// The line diff of `app.yaml` on the page: the CLI's lines in the CLI's colours (removed as
/// desired values, added as live values, headers dim); the long value collapsed with a toggle;
/// the Secret's multi-line value nowhere.
fn line_diffs_on_the_page(b: &Browser, s: &Served, cli_diff: &[String]) {
    let row = |path: &str| {
        format!("[...document.querySelectorAll('.fields tr')].find(tr => tr.dataset.path === {})", json!(path))
    };
    let app = row("data[\"app.yaml\"]");
    b.wait("the line diff of app.yaml", &format!("return !!{app} && !!{app}.querySelector('td.diff .line')"));
    let lines = b.js(
        &format!(
            "return [...{app}.querySelectorAll('td.diff .line')].map(l => [l.dataset.kind, l.textContent, getComputedStyle(l).color])"
        ),
        json!([]),
    );
    let lines = lines.as_array().unwrap();
    let texts: Vec<&str> = lines.iter().map(|l| l[1].as_str().unwrap()).collect();
    assert_eq!(texts, cli_diff, "the page shows the lines the CLI prints");
    let colour =
        |css: &str| b.js(&format!("return getComputedStyle(document.querySelector('{css}')).color"), json!([]));
    let desired = colour(".fields td.desired");
    let live = colour(".fields td.live");
    let dim = colour(".dim");
    assert_ne!(desired, live);
    for l in lines {
        let want = match l[0].as_str().unwrap() {
            "removed" => &desired,
            "added" => &live,
            "header" | "hunk" => &dim,
            "context" => continue,
            other => panic!("unexpected line kind {other}: {l}"),
        };
        assert_eq!(&l[2], want, "{l}");
    }
    // The Desired and Live columns hold the diff; the other fields keep theirs.
    assert_eq!(b.js(&format!("return {app}.querySelector('td.diff').colSpan"), json!([])), json!(2));

    // A 60-line value: its first 20 lines, then all of them on request.
    let big = row("data[\"big.txt\"]");
    let shown = |n: usize| format!("const r = {big}; return !!r && r.querySelectorAll('td.live .line').length === {n}");
    b.wait("the long value collapsed", &shown(20));
    let toggle = "tr[data-path='data[\"big.txt\"]'] button.more";
    assert_eq!(
        b.js(&format!("return document.querySelector(`{toggle}`).textContent"), json!([])),
        json!("show all 60 lines")
    );
    b.click(toggle);
    b.wait("the whole long value", &shown(60));
    b.click(toggle);
    b.wait("the long value collapsed again", &shown(20));

    // The Secret's value: redacted in the API and on the page, no diff.
    let body = s.get("/api/releases").body;
    crate::serve::assert_no_canary(&body, "/api/releases");
    assert!(!body.contains(SECRET_LINE), "{body}");
    let rel: Value = serde_json::from_str(&body).unwrap();
    let objects = rel["report"]["releases"][0]["objects"].as_array().unwrap();
    let fields = |kind: &str| -> Vec<Value> {
        objects.iter().filter(|o| o["kind"] == kind).flat_map(|o| o["fields"].as_array().unwrap().clone()).collect()
    };
    let token = fields("Secret").into_iter().find(|f| f["path"].as_str().unwrap().contains("api-token"));
    let token = token.unwrap_or_else(|| panic!("the api-token edit is drift: {rel:#}"));
    assert!(token["live"].as_str().unwrap().starts_with("<redacted, "), "{token:#}");
    assert!(fields("Secret").iter().all(|f| f.get("diff").is_none()), "{rel:#}");
    let api_diff = fields("ConfigMap").into_iter().find(|f| f["path"] == "data[\"app.yaml\"]").unwrap()["diff"].clone();
    let api_texts: Vec<&str> = api_diff.as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert_eq!(api_texts, cli_diff);
    let text = b.js("return document.body.innerText", json!([]));
    assert!(!text.as_str().unwrap().contains(SECRET_LINE));

    b.js(&format!("{app}.scrollIntoView({{block: 'center'}})"), json!([]));
    b.screenshot("releases-line-diff.png");
}

/// The Versions and Releases tabs keep their page number in the URL (`vpage`, `rpage`, as the
/// Orphans tab keeps `opage`): a reload, or the link, opens the same page, and a new filter goes
/// back to the first.
#[ignore = "needs the local control plane"]
#[test]
fn serve_page_numbers_survive_a_reload() {
    let c = crate::needs_cluster!("serve_page_numbers_survive_a_reload");
    let ns = crate::common::unique_ns("pages");
    c.create_namespace(&ns);
    // 201 releases whose storage cannot be decoded (an error row each on both tabs) and 201
    // Deployments with an image tag each (a version row each): more than one page of 200 on both.
    let mut docs = String::new();
    for i in 0..201 {
        docs.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: sh.helm.release.v1.r{i:03}.v1\n  labels: {{owner: helm, name: r{i:03}, status: deployed, version: \"1\"}}\ntype: helm.sh/release.v1\nstringData:\n  release: 'H4sI%%%not-base64'\n"
        ));
        docs.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web-{i:03}\nspec:\n  replicas: 0\n  selector:\n    matchLabels: {{app: web-{i:03}}}\n  template:\n    metadata:\n      labels: {{app: web-{i:03}}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example/pages/web:1.0.{i}\n"
        ));
    }
    c.kubectl_stdin(&["-n", &ns, "create", "-f", "-"], &docs).ok();
    let data = c.scratch.join("data");
    let s = serve(&c, &["-n", &ns, "--data-dir", data.to_str().unwrap(), "--interval", "1h"]);
    s.wait_ready();
    let b = Browser::start(&c);
    let base = format!("http://{}/", s.addr);

    for (tab, param, pager, search, query, first_row) in [
        (
            "releases",
            "rpage",
            "rel-pager",
            "rel-q",
            "pages",
            "document.querySelector('details.release').dataset.release",
        ),
        (
            "versions",
            "vpage",
            "ver-pager",
            "ver-q",
            "pages",
            "document.querySelector('#ver-table tbody tr').textContent",
        ),
    ] {
        let on_page = |n: u32| {
            format!(
                "const p = document.getElementById('{pager}'); return !!p && p.textContent.includes('page {n} of ')"
            )
        };
        b.go(&format!("{base}?tab={tab}"));
        b.wait(&format!("page 1 of the {tab} tab"), &on_page(1));
        let first = b.js(&format!("return {first_row}"), json!([]));
        b.click(&format!("#{pager} button:last-of-type"));
        b.wait(&format!("page 2 of the {tab} tab"), &on_page(2));
        let second = b.js(&format!("return {first_row}"), json!([]));
        assert_ne!(first, second, "page 2 shows other rows");
        let url = b.js("return location.href", json!([])).as_str().unwrap().to_string();
        assert!(url.contains(&format!("{param}=2")), "{url}");

        // A reload opens page 2 again, with the same rows.
        b.go(&url);
        b.wait(&format!("page 2 of the {tab} tab after a reload"), &on_page(2));
        assert_eq!(b.js(&format!("return {first_row}"), json!([])), second);
        assert_eq!(b.js("return location.href", json!([])), json!(url));

        // A filter starts again at page 1 (a search for the namespace keeps every row) and drops
        // the number.
        b.keys(&format!("#{search}"), query);
        b.wait(&format!("page 1 of the {tab} tab after a search"), &on_page(1));
        let search_now = b.js("return location.search", json!([])).as_str().unwrap().to_string();
        assert!(!search_now.contains(param) && search_now.contains(&format!("={query}")), "{search_now}");
        assert_eq!(b.js(&format!("return {first_row}"), json!([])), first);
    }
    assert_local(&b, &s);
    drop(b);
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
