//! A fixture server on loopback for what cannot exist offline: the Kubernetes release pointers,
//! GitHub releases and ArtifactHub, served from recorded files in tests/fixtures/versions/.
//!
//! It speaks like the real services where kubectl-drift depends on it: `ETag` on every answer and
//! `304 Not Modified` for a matching `If-None-Match`; GitHub paging through `Link: <...>;
//! rel="next"`; and, under path prefixes, rate limiting: `/ratelimited/...` answers 429 with
//! `Retry-After: 1` to the first request of each path, `/blocked/...` always 429 with
//! `Retry-After: 3600`. Every request is logged (path, query, status, If-None-Match).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::oci::Answer;

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub query: String,
    pub status: u16,
    pub if_none_match: Option<String>,
}

/// The running server (it lives as long as the test process).
pub struct Fixtures {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<Seen>>>,
}

impl Fixtures {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.log.lock().unwrap().clear();
    }
}

fn fixture(rel: &str) -> Option<String> {
    std::fs::read_to_string(crate::common::fixture(&format!("versions/{rel}"))).ok()
}

fn etag(body: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    format!("\"{:x}\"", h.finish())
}

/// The body for a path and query, or `None` (404).
fn answer(path: &str, query: &str) -> Option<(String, Option<String>)> {
    if let Some(file) = path.strip_prefix("/release/") {
        return fixture(&format!("k8s/{file}")).map(|b| (b, None));
    }
    if path == "/repos/containerd/containerd/releases" {
        let page = query.split('&').find_map(|kv| kv.strip_prefix("page=")).unwrap_or("1");
        let body = fixture(&format!("github/containerd-releases-{page}.json"))?;
        let link = (page == "1").then(|| {
            "</repos/containerd/containerd/releases?per_page=100&page=2>; rel=\"next\", </repos/containerd/containerd/releases?per_page=100&page=2>; rel=\"last\"".to_string()
        });
        return Some((body, link));
    }
    if path == "/api/v1/packages/search" {
        let name = query.split('&').find_map(|kv| kv.strip_prefix("ts_query_web="))?;
        return Some((
            fixture(&format!("artifacthub/search-{name}.json")).unwrap_or_else(|| "{\"packages\":[]}".into()),
            None,
        ));
    }
    if let Some(rest) = path.strip_prefix("/api/v1/packages/helm/") {
        let (repo, pkg) = rest.split_once('/')?;
        return fixture(&format!("artifacthub/package-{repo}-{pkg}.json")).map(|b| (b, None));
    }
    None
}

/// The answer to one request (and its log entry).
fn handle(
    path_and_query: &str,
    headers: &hyper::HeaderMap,
    log: &Mutex<Vec<Seen>>,
    limited: &Mutex<BTreeMap<String, u32>>,
) -> Answer {
    let (full_path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let inm = headers.get("if-none-match").and_then(|v| v.to_str().ok()).map(str::to_string);
    let record = |status: u16| {
        log.lock().unwrap().push(Seen {
            path: full_path.to_string(),
            query: query.to_string(),
            status,
            if_none_match: inm.clone(),
        })
    };
    if full_path.starts_with("/blocked/") {
        record(429);
        return (429, vec![("Retry-After".into(), "3600".into())], Vec::new());
    }
    let path = match full_path.strip_prefix("/ratelimited") {
        Some(rest) => {
            let first = {
                let mut seen = limited.lock().unwrap();
                let n = seen.entry(full_path.to_string()).or_default();
                *n += 1;
                *n == 1
            };
            if first {
                record(429);
                return (429, vec![("Retry-After".into(), "1".into())], Vec::new());
            }
            rest
        }
        None => full_path,
    };
    match answer(path, query) {
        None => {
            record(404);
            (404, Vec::new(), b"not found".to_vec())
        }
        Some((body, link)) => {
            let tag = etag(&body);
            if inm.as_deref() == Some(tag.as_str()) {
                record(304);
                return (304, vec![("ETag".into(), tag)], Vec::new());
            }
            record(200);
            let mut headers = vec![("ETag".to_string(), tag)];
            if let Some(l) = link {
                headers.push(("Link".into(), l));
            }
            (200, headers, body.into_bytes())
        }
    }
}

/// Start the server on 127.0.0.1 (through the scripted server of `oci`), on a runtime of its own.
pub fn start() -> Fixtures {
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server_log = log.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let limited: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
            let addr = crate::oci::serve(0, move |_, path, headers| handle(path, headers, &server_log, &limited)).await;
            addr_tx.send(addr).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let addr = addr_rx.recv().unwrap();
    Fixtures { addr, log }
}
