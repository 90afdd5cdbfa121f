//! A recorded API server for unit tests: a `kube::Client` whose GET requests are answered with
//! responses recorded from the real API server (`tests/fixtures/live/`, `record.sh` there):
//! aggregated discovery and LIST responses, by path. A WATCH of a recorded list is answered as the
//! API server answers one: with `sendInitialEvents=true`, each item as an ADDED event and the
//! bookmark that ends the initial events, then nothing (the stream stays open); without, nothing.
//! Anything else (a path not recorded, any write) is answered with an error naming the request,
//! so a test that reads something its recording lacks fails on it instead of passing on an empty
//! answer. Nothing listens anywhere.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};

/// The recorded answers, by request path (without query).
#[derive(Default, Clone)]
pub(crate) struct Recorded {
    answers: HashMap<String, (u16, Value)>,
    seen: Arc<Mutex<Vec<String>>>,
}

/// A recorded file of `tests/fixtures/live/`, parsed.
pub(crate) fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Recorded {
    /// The recorded aggregated discovery (`/api` and `/apis`) and nothing else.
    pub fn with_discovery() -> Recorded {
        let mut r = Recorded::default();
        r.answers.insert("/api".into(), (200, fixture("discovery-api.json")));
        r.answers.insert("/apis".into(), (200, fixture("discovery-apis.json")));
        r
    }

    /// Answer a LIST at `path` (`/api/v1/namespaces/fx/configmaps`) with `items`.
    pub fn list(mut self, path: &str, items: Vec<Value>) -> Recorded {
        let body = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": items});
        self.answers.insert(path.to_string(), (200, body));
        self
    }

    /// Answer `path` with the API server's 403 (the user may not list it).
    pub fn forbidden(mut self, path: &str) -> Recorded {
        let body = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("forbidden: cannot list {path}"), "reason": "Forbidden", "code": 403
        });
        self.answers.insert(path.to_string(), (403, body));
        self
    }

    /// The requests answered so far (method and path, then ` (metadata)` for a metadata-only
    /// LIST), in order.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("seen lock").clone()
    }

    /// A client whose requests this recording answers.
    pub fn client(&self) -> kube::Client {
        let answers = Arc::new(self.answers.clone());
        let seen = self.seen.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let path = req.uri().path().to_string();
            let method = req.method().clone();
            // A metadata-only LIST asks for PartialObjectMetadataList; the answer is the same.
            let accept = req.headers().get(http::header::ACCEPT).and_then(|a| a.to_str().ok()).unwrap_or("");
            let shape = if accept.contains("as=PartialObjectMetadataList") { " (metadata)" } else { "" };
            seen.lock().expect("seen lock").push(format!("{method} {path}{shape}"));
            let query = req.uri().query().unwrap_or("");
            let watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
            let (status, body) = match answers.get(&path) {
                Some((200, list)) if method == http::Method::GET && watch => {
                    let initial = query.split('&').any(|p| p == "sendInitialEvents=true");
                    return std::future::ready(Ok::<_, Infallible>(watch_response(list, initial)));
                }
                Some(answer) if method == http::Method::GET => answer.clone(),
                _ => (
                    500,
                    json!({
                        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": format!("not recorded: {method} {path}"), "reason": "InternalError", "code": 500
                    }),
                ),
            };
            let body = http_body_util::Full::new(Bytes::from(body.to_string())).map_err(|never| match never {});
            let response = http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(BoxBody::new(body))
                .expect("a response");
            std::future::ready(Ok::<_, Infallible>(response))
        });
        kube::Client::new(service, "default")
    }
}

/// A WATCH of a recorded `list`: its items and the end-of-initial-events bookmark when `initial`,
/// then an open stream with nothing more.
fn watch_response(list: &Value, initial: bool) -> http::Response<BoxBody<Bytes, Infallible>> {
    let mut lines = Vec::new();
    if initial {
        let items = list["items"].as_array().cloned().unwrap_or_default();
        for item in items {
            lines.push(json!({"type": "ADDED", "object": item}));
        }
        let version = list["metadata"]["resourceVersion"].clone();
        lines.push(json!({"type": "BOOKMARK", "object": {"kind": list["kind"], "apiVersion": list["apiVersion"],
            "metadata": {"resourceVersion": version, "annotations": {"k8s.io/initial-events-end": "true"}}}}));
    }
    let frames = futures::stream::iter(lines)
        .map(|l| Ok::<_, Infallible>(Frame::data(Bytes::from(format!("{l}\n")))))
        .chain(futures::stream::pending());
    http::Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(BoxBody::new(http_body_util::StreamBody::new(frames)))
        .expect("a response")
}
