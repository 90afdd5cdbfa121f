//! A fixture server on loopback for what cannot exist offline: the Kubernetes release pointers,
//! GitHub releases and ArtifactHub, served from recorded files in tests/fixtures/versions/.
//!
//! It speaks like the real services where kubectl-drift depends on it: `ETag` on every answer and
//! `304 Not Modified` for a matching `If-None-Match`; GitHub paging through `Link: <...>;
//! rel="next"`; and, under path prefixes, rate limiting: `/ratelimited/...` answers 429 with
//! `Retry-After: 1` to the first request of each path, `/blocked/...` always 429 with
//! `Retry-After: 3600`. Every request is logged (path, query, status, If-None-Match).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub query: String,
    pub status: u16,
    pub if_none_match: Option<String>,
}

/// The running server; stops when dropped.
pub struct Fixtures {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<Seen>>>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
    _thread: std::thread::JoinHandle<()>,
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

async fn handle(
    req: Request<hyper::body::Incoming>,
    log: Arc<Mutex<Vec<Seen>>>,
    limited: Arc<Mutex<BTreeMap<String, u32>>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let full_path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let inm = req.headers().get("if-none-match").and_then(|v| v.to_str().ok()).map(str::to_string);
    let record = |status: u16| {
        log.lock().unwrap().push(Seen {
            path: full_path.clone(),
            query: query.clone(),
            status,
            if_none_match: inm.clone(),
        })
    };
    if full_path.starts_with("/blocked/") {
        record(429);
        return Ok(Response::builder().status(429).header("Retry-After", "3600").body(Full::default()).unwrap());
    }
    let path = match full_path.strip_prefix("/ratelimited") {
        Some(rest) => {
            let first = {
                let mut seen = limited.lock().unwrap();
                let n = seen.entry(full_path.clone()).or_default();
                *n += 1;
                *n == 1
            };
            if first {
                record(429);
                return Ok(Response::builder().status(429).header("Retry-After", "1").body(Full::default()).unwrap());
            }
            rest
        }
        None => full_path.as_str(),
    };
    match answer(path, &query) {
        None => {
            record(404);
            Ok(Response::builder().status(404).body(Full::from("not found")).unwrap())
        }
        Some((body, link)) => {
            let tag = etag(&body);
            if inm.as_deref() == Some(tag.as_str()) {
                record(304);
                return Ok(Response::builder().status(304).header("ETag", tag).body(Full::default()).unwrap());
            }
            record(200);
            let mut resp = Response::builder().status(200).header("ETag", tag);
            if let Some(l) = link {
                resp = resp.header("Link", l);
            }
            Ok(resp.body(Full::from(body)).unwrap())
        }
    }
}

/// Start the server on 127.0.0.1, on a port of its own.
pub fn start() -> Fixtures {
    let log: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server_log = log.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            let limited: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
            loop {
                tokio::select! {
                    _ = &mut rx => break,
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let log = server_log.clone();
                        let limited = limited.clone();
                        tokio::spawn(async move {
                            let svc = service_fn(move |req| handle(req, log.clone(), limited.clone()));
                            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
                        });
                    }
                }
            }
        });
    });
    let addr = addr_rx.recv().unwrap();
    Fixtures { addr, log, _shutdown: tx, _thread: thread }
}
