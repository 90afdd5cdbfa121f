//! How API requests are retried: a few times, with a bounded wait, then the error is the answer.
//!
//! kube-rs retries 429/503/504 by default with up to 15 attempts and exponential backoff capped
//! at 1000 s, and sleeps for any `Retry-After` the server sends, however long. An API server (or
//! an aggregated API) that keeps answering 503 then holds a scan for minutes with no output, which
//! is worse than an error. This policy replaces it: at most [`MAX_RETRIES`] retries of 429, 503,
//! 504 and of any 5xx that carries `Retry-After` (as client-go does), each wait the server's
//! `Retry-After` or an exponential backoff, never more than [`MAX_WAIT`]. After that the
//! response is returned as it is and the caller reports it (exit 2, naming the kind and status).

use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use tower::retry::Policy;

/// Retries after the first attempt.
pub const MAX_RETRIES: u32 = 4;
/// The longest single wait, whatever `Retry-After` says.
pub const MAX_WAIT: Duration = Duration::from_secs(5);
/// The first backoff when the server gives no `Retry-After`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The bounded retry policy (a tower [`Policy`], layered onto the kube client).
#[derive(Clone, Debug, Default)]
pub struct BoundedRetry {
    attempt: u32,
}

/// Whether to retry a response, and after how long: `None` means return it as it is.
pub fn wait_before_retry(status: StatusCode, retry_after: Option<&str>, attempt: u32) -> Option<Duration> {
    if attempt >= MAX_RETRIES {
        return None;
    }
    let server_wait = retry_after.and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
    let retryable =
        matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT)
            || (status.is_server_error() && server_wait.is_some());
    if !retryable {
        return None;
    }
    let backoff = FIRST_BACKOFF.saturating_mul(1 << attempt.min(8));
    Some(server_wait.unwrap_or(backoff).min(MAX_WAIT))
}

impl<B> Policy<Request<Body>, Response<B>, tower::BoxError> for BoundedRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Body>,
        result: &mut Result<Response<B>, tower::BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        let retry_after = response.headers().get(http::header::RETRY_AFTER).and_then(|v| v.to_str().ok());
        let wait = wait_before_retry(response.status(), retry_after, self.attempt)?;
        self.attempt += 1;
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        // Only requests with a body held in memory can be sent again (all of ours are GETs).
        let body = req.body().try_clone()?;
        let mut new = Request::builder().method(req.method().clone()).uri(req.uri().clone()).version(req.version());
        if let Some(headers) = new.headers_mut() {
            headers.extend(req.headers().clone());
        }
        new.body(body).ok().map(|mut r| {
            *r.extensions_mut() = req.extensions().clone();
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_statuses_are_retried_with_growing_waits() {
        let w = |attempt| wait_before_retry(StatusCode::SERVICE_UNAVAILABLE, None, attempt);
        assert_eq!(w(0), Some(Duration::from_millis(250)));
        assert_eq!(w(1), Some(Duration::from_millis(500)));
        assert_eq!(w(3), Some(Duration::from_secs(2)));
        assert_eq!(w(MAX_RETRIES), None, "bounded: the response is the answer after the last retry");
        assert!(wait_before_retry(StatusCode::TOO_MANY_REQUESTS, None, 0).is_some());
        assert!(wait_before_retry(StatusCode::GATEWAY_TIMEOUT, None, 0).is_some());
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let w = |ra| wait_before_retry(StatusCode::TOO_MANY_REQUESTS, Some(ra), 0);
        assert_eq!(w("2"), Some(Duration::from_secs(2)));
        assert_eq!(w("3600"), Some(MAX_WAIT));
        // An HTTP date or garbage falls back to the backoff.
        assert_eq!(w("Wed, 21 Oct 2015 07:28:00 GMT"), Some(FIRST_BACKOFF));
    }

    #[test]
    fn other_errors_are_not_retried() {
        for s in [StatusCode::INTERNAL_SERVER_ERROR, StatusCode::FORBIDDEN, StatusCode::NOT_FOUND, StatusCode::GONE] {
            assert_eq!(wait_before_retry(s, None, 0), None, "{s}");
        }
        // A 5xx the server says to retry later is retried, like client-go does.
        assert_eq!(wait_before_retry(StatusCode::INTERNAL_SERVER_ERROR, Some("1"), 0), Some(Duration::from_secs(1)));
        assert_eq!(wait_before_retry(StatusCode::OK, None, 0), None);
    }
}
