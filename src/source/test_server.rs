//! A scripted HTTP/1.1 server on loopback for the source layer's unit tests: each connection
//! carries one request (`connection: close`), answered by a function of the request's target,
//! and logged, so a test counts what went on the wire.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An answer: status, extra headers, body.
pub(crate) type Answer = (u16, Vec<(&'static str, String)>, String);

/// The running server: its base URL (`http://127.0.0.1:PORT`) and the request targets it has
/// answered, in order.
pub(crate) struct TestServer {
    pub url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl TestServer {
    /// Requests answered so far (path and query each).
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("log lock").clone()
    }

    /// How many requests asked for `target` (path and query).
    pub fn count(&self, target: &str) -> usize {
        self.seen().iter().filter(|t| *t == target).count()
    }
}

/// Start a server on the current runtime; `answer` is called with each request's target.
pub(crate) async fn serve(answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("local address"));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (log, answer) = (seen.clone(), Arc::new(answer));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (log, answer) = (log.clone(), answer.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&got);
                let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                log.lock().expect("log lock").push(target.clone());
                let (status, headers, body) = answer(&target);
                let mut out = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
                for (name, value) in headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let _ = stream.write_all(out.as_bytes()).await;
            });
        }
    });
    TestServer { url, seen }
}
