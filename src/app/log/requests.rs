//! The API requests a kube client makes, one log event each (what `-v` shows): a tower layer
//! under the client's retries, so every attempt is a line of its own.
//!
//! kube-client has a request span of its own (`TraceLayer`), but its target also carries the
//! client's other events, and those log whole response bodies (a Secret list that does not
//! decode) and response headers; [`super`] drops every library target. This layer writes what
//! `kubectl -v=6` shows and nothing else: the verb kube-rs names the call with (`list`, `get`,
//! `watch`...), the method, path and query, the status and the time to the response's headers
//! (for a WATCH, until the stream opened). Never a header and never a body; a request that
//! failed before any answer says only that (the caller reports its error).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

/// The target of the request lines (`--log-level kubectl_drift::api=debug` is `-v`).
pub const TARGET: &str = "kubectl_drift::api";

/// Wraps a client's service in [`RequestLog`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestLogLayer;

impl<S> tower::Layer<S> for RequestLogLayer {
    type Service = RequestLog<S>;

    fn layer(&self, inner: S) -> RequestLog<S> {
        RequestLog { inner }
    }
}

/// Logs each request passed to `inner` at debug level under [`TARGET`].
#[derive(Debug, Clone)]
pub struct RequestLog<S> {
    inner: S,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, RB> tower::Service<http::Request<B>> for RequestLog<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if !tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
            return Box::pin(self.inner.call(req));
        }
        let line = RequestLine::of(&req);
        let started = Instant::now();
        let response = self.inner.call(req);
        Box::pin(async move {
            let result = response.await;
            line.log(result.as_ref().ok().map(|r| r.status().as_u16()), super::millis(started));
            result
        })
    }
}

/// What is logged of one request: nothing else is read from it.
struct RequestLine {
    verb: &'static str,
    method: http::Method,
    path: String,
    /// The query without kube-rs's leading `&`; `None` when empty (no field then).
    query: Option<String>,
}

impl RequestLine {
    fn of<B>(req: &http::Request<B>) -> RequestLine {
        let query = req.uri().query().unwrap_or_default().trim_start_matches('&').to_string();
        // kube-rs names most calls (`list`, `get`, `watch`, ...) in the request's extensions;
        // discovery and raw requests are named by their method.
        let verb = req.extensions().get::<&'static str>().copied().unwrap_or_else(|| match *req.method() {
            http::Method::GET if query.split('&').any(|p| p == "watch=true" || p == "watch=1") => "watch",
            http::Method::GET => "get",
            http::Method::POST => "create",
            http::Method::PUT => "update",
            http::Method::PATCH => "patch",
            http::Method::DELETE => "delete",
            _ => "other",
        });
        let query = Some(query).filter(|q| !q.is_empty());
        RequestLine { verb, method: req.method().clone(), path: req.uri().path().to_string(), query }
    }

    fn log(&self, status: Option<u16>, duration_ms: u64) {
        let (verb, method, path, query) = (self.verb, self.method.as_str(), self.path.as_str(), self.query.as_deref());
        match status {
            Some(status) => {
                tracing::debug!(target: TARGET, verb, method, path, query, status, duration_ms, "API request")
            }
            None => tracing::debug!(
                target: TARGET,
                verb,
                method,
                path,
                query,
                duration_ms,
                outcome = "no response",
                "API request failed"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::log::tests::capture;
    use tower::{Layer, Service, ServiceExt};

    const TOKEN: &str = "canary-token-0f9e8d";
    const BODY: &str = "canary-body-7c6b5a";

    fn request(uri: &str, verb: Option<&'static str>) -> http::Request<String> {
        let mut req = http::Request::get(uri)
            .header(http::header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(format!("{{\"data\":\"{BODY}\"}}"))
            .unwrap();
        if let Some(v) = verb {
            req.extensions_mut().insert(v);
        }
        req
    }

    /// Send `req` through the layer to a service answering `status` with a body (or failing).
    fn send(req: http::Request<String>, status: Option<u16>) {
        let inner = tower::service_fn(move |_req: http::Request<String>| async move {
            match status {
                Some(s) => {
                    Ok(http::Response::builder().status(s).header("x-token", TOKEN).body(BODY.to_string()).unwrap())
                }
                None => Err(std::io::Error::other(format!("connection refused {TOKEN}"))),
            }
        });
        let mut svc = RequestLogLayer.layer(inner);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let _ = rt.block_on(async { svc.ready().await.unwrap().call(req).await });
    }

    #[test]
    fn each_request_is_one_line_with_verb_path_status_and_duration_and_nothing_else() {
        let out = capture(&["k", "-v", "--log-format", "json", "release", "x"], || {
            send(request("/api/v1/namespaces/shop/secrets?labelSelector=owner%3Dhelm", Some("list")), Some(200));
            send(request("/apis/apps/v1/deployments?&watch=true&resourceVersion=5", None), Some(403));
            send(request("/version", None), None);
        });
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[0]["verb"], "list");
        assert_eq!(lines[0]["method"], "GET");
        assert_eq!(lines[0]["path"], "/api/v1/namespaces/shop/secrets");
        assert_eq!(lines[0]["query"], "labelSelector=owner%3Dhelm");
        assert_eq!(lines[0]["status"], 200);
        assert!(lines[0]["duration_ms"].is_u64());
        assert_eq!(lines[0]["target"], TARGET);
        assert_eq!(lines[0]["level"], "DEBUG");
        assert_eq!((&lines[1]["verb"], &lines[1]["status"]), (&"watch".into(), &403.into()));
        assert_eq!(lines[1]["query"], "watch=true&resourceVersion=5");
        assert_eq!(lines[2]["outcome"], "no response");
        assert!(lines[2].get("query").is_none(), "no empty query field: {}", lines[2]);
        assert!(!out.contains(TOKEN) && !out.contains(BODY) && !out.to_lowercase().contains("authorization"), "{out}");
    }

    #[test]
    fn without_v_requests_are_not_logged() {
        let out = capture(&["k", "watch", "--all"], || send(request("/version", None), Some(200)));
        assert_eq!(out, "");
    }
}
