//! Faults between the tool and the API server: a small fault-injecting proxy of our own on
//! 127.0.0.1 (plain HTTP in, HTTPS to the real API server out) answers chosen requests itself.
//! Each command must retry to the right answer or exit 2 naming what failed, never hang and never
//! call a partial view clean.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::common::{Cluster, Helm, fixture, runtime, unique_ns};

/// What the proxy does with one request.
pub enum Fault {
    /// Answer with this status (and `Retry-After` seconds, if any) instead of forwarding.
    Status(u16, Option<u64>),
}

/// Decides, per request (method, path and query), whether to inject a fault.
type Rule = Arc<dyn Fn(&str, &str) -> Option<Fault> + Send + Sync>;

/// A running proxy and a kubeconfig (admin token) that goes through it.
pub struct FaultProxy {
    pub kubeconfig: PathBuf,
    /// The path and query of every request answered by a fault, in order.
    pub injected: Arc<Mutex<Vec<String>>>,
}

impl FaultProxy {
    fn injected_count(&self) -> usize {
        self.injected.lock().unwrap().len()
    }

    /// The most faults served to one request (the same path and query) since entry `from`.
    fn most_tries_of_one_request(&self, from: usize) -> usize {
        let log = self.injected.lock().unwrap();
        let mut per: HashMap<&str, usize> = HashMap::new();
        for p in &log[from..] {
            *per.entry(p).or_default() += 1;
        }
        per.values().copied().max().unwrap_or(0)
    }
}

/// Start the proxy on the runtime; it lives as long as the runtime.
pub fn start_proxy(c: &Cluster, rt: &tokio::runtime::Runtime, rule: Rule) -> FaultProxy {
    let env_dir = PathBuf::from(std::env::var("DRIFT_ENV_DIR").expect("DRIFT_ENV_DIR from scripts/test-env"));
    let upstream = std::env::var("DRIFT_API_SERVER").expect("DRIFT_API_SERVER from scripts/test-env");
    let token = std::fs::read_to_string(env_dir.join("admin.token")).unwrap().trim().to_string();
    let ca_pem = std::fs::read_to_string(env_dir.join("pki/ca.crt")).unwrap();
    let client = upstream_client(&ca_pem);
    let injected = Arc::new(Mutex::new(Vec::new()));
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let counter = injected.clone();
    rt.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let (client, rule, upstream, counter) = (client.clone(), rule.clone(), upstream.clone(), counter.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let (client, rule, upstream, counter) =
                        (client.clone(), rule.clone(), upstream.clone(), counter.clone());
                    async move { Ok::<_, Infallible>(handle(req, &client, &rule, &upstream, &counter).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    let kubeconfig = c.scratch.join("fault-proxy.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: p, cluster: {{server: 'http://{addr}'}}}}]\n\
             users: [{{name: u, user: {{token: {token}}}}}]\n\
             contexts: [{{name: p, context: {{cluster: p, user: u, namespace: default}}}}]\ncurrent-context: p\n"
        ),
    )
    .unwrap();
    FaultProxy { kubeconfig, injected }
}

type Upstream =
    HttpClient<hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>, Full<Bytes>>;

fn upstream_client(ca_pem: &str) -> Upstream {
    let mut roots = rustls::RootCertStore::empty();
    let b64: String = ca_pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    roots.add(rustls::pki_types::CertificateDer::from(der)).unwrap();
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_only().enable_http1().build();
    HttpClient::builder(TokioExecutor::new()).build(https)
}

async fn handle(
    req: Request<Incoming>,
    client: &Upstream,
    rule: &Rule,
    upstream: &str,
    log: &Mutex<Vec<String>>,
) -> Response<Full<Bytes>> {
    let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    if let Some(Fault::Status(code, retry_after)) = rule(req.method().as_str(), &path) {
        log.lock().unwrap().push(path.clone());
        let mut b = Response::builder().status(code).header("content-type", "application/json");
        if let Some(s) = retry_after {
            b = b.header("retry-after", s.to_string());
        }
        let status = format!(
            r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the test proxy","code":{code}}}"#
        );
        return b.body(Full::new(Bytes::from(status))).unwrap();
    }
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let mut out = Request::builder().method(parts.method).uri(format!("{upstream}{path}"));
    for (k, v) in parts.headers.iter() {
        if k != hyper::header::HOST {
            out = out.header(k, v);
        }
    }
    match client.request(out.body(Full::new(body)).unwrap()).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            Response::from_parts(parts, Full::new(body))
        }
        Err(e) => Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Full::new(Bytes::from(format!("proxy: {e}"))))
            .unwrap(),
    }
}

/// A rule that answers `code` to every LIST of ConfigMaps in `ns`.
fn configmap_lists(ns: &str, code: u16, retry_after: Option<u64>, times: Option<u32>) -> Rule {
    let prefix = format!("/api/v1/namespaces/{ns}/configmaps?");
    let left = AtomicU32::new(times.unwrap_or(u32::MAX));
    Arc::new(move |method, path| {
        (method == "GET"
            && path.starts_with(&prefix)
            && left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok())
        .then_some(Fault::Status(code, retry_after))
    })
}

/// A persistent 503 on one kind (an overloaded API server, an unavailable aggregated API): a few
/// bounded retries, then exit 2 naming the kind and the status, within seconds, for every command
/// that lists it. kube-rs's default policy (15 retries, waits up to 1000 s) hung for minutes.
#[test]
fn persistent_503_is_an_error_naming_the_kind() {
    let c = crate::cluster_or_skip!("persistent_503_is_an_error_naming_the_kind");
    let ns = unique_ns("fault-503");
    c.create_namespace(&ns);
    c.helm(Helm::V4, &["install", "shop", fixture("charts/shop").to_str().unwrap(), "-n", &ns]).ok();
    let rt = runtime();
    let proxy = start_proxy(&c, &rt, configmap_lists(&ns, 503, None, None));
    let kc = proxy.kubeconfig.to_str().unwrap();
    let manifest = c.scratch.join("cm.yaml");
    std::fs::write(
        &manifest,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain, namespace: {ns}}}\ndata: {{a: b}}\n"),
    )
    .unwrap();
    for args in [
        vec!["release", "shop", "-n", &ns, "--kubeconfig", kc],
        vec!["orphans", "-n", &ns, "--kubeconfig", kc],
        vec!["manifests", manifest.to_str().unwrap(), "--kubeconfig", kc],
    ] {
        let before = proxy.injected_count();
        let start = Instant::now();
        let run = c.drift(&args);
        let took = start.elapsed();
        let all = format!("{}\n{}", run.stdout(), run.stderr());
        assert_eq!(run.code(), 2, "{args:?}: {all}");
        assert!(all.contains("configmaps") && all.contains("503"), "{args:?} names the kind and the status: {all}");
        assert!(!run.stdout().contains("CLEAN") && !run.stdout().contains("OK no drift"), "{args:?}: {all}");
        // Every ConfigMap LIST the command made was retried, and each at most MAX_RETRIES times.
        let tries = proxy.most_tries_of_one_request(before);
        assert!(tries > 1 && tries <= 1 + kubectl_drift::retry::MAX_RETRIES as usize, "{args:?}: {tries} attempts");
        // Bounded: the retries' waits add up to a few seconds (this bound only catches a hang).
        assert!(took < Duration::from_secs(60), "{args:?} took {took:?}");
    }
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}

/// One 429 with Retry-After is waited out, and the answer is the right one.
#[test]
fn one_429_is_retried_to_the_right_answer() {
    let c = crate::cluster_or_skip!("one_429_is_retried_to_the_right_answer");
    let ns = unique_ns("fault-429");
    c.create_namespace(&ns);
    let manifest = c.scratch.join("cm.yaml");
    std::fs::write(
        &manifest,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain, namespace: {ns}}}\ndata: {{a: b}}\n"),
    )
    .unwrap();
    c.kubectl(&["apply", "-f", manifest.to_str().unwrap()]).ok();
    let rt = runtime();
    let proxy = start_proxy(&c, &rt, configmap_lists(&ns, 429, Some(1), Some(1)));
    let run = c.drift(&["manifests", manifest.to_str().unwrap(), "--kubeconfig", proxy.kubeconfig.to_str().unwrap()]);
    assert_eq!(run.code(), 0, "{}\n{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("OK no drift"), "{}", run.stdout());
    assert_eq!(proxy.injected_count(), 1, "the 429 was served once, then the LIST went through");
    // The drift is still found through the same proxy after the retry.
    c.kubectl(&["-n", &ns, "patch", "configmap", "plain", "-p", r#"{"data":{"a":"changed"}}"#]).ok();
    let proxy = start_proxy(&c, &rt, configmap_lists(&ns, 429, Some(1), Some(1)));
    let run = c.drift(&["manifests", manifest.to_str().unwrap(), "--kubeconfig", proxy.kubeconfig.to_str().unwrap()]);
    assert_eq!(run.code(), 1, "{}\n{}", run.stdout(), run.stderr());
    c.kubectl(&["delete", "namespace", &ns, "--wait=false"]).ok();
}
