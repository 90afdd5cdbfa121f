//! OCI fixtures for the e2e tests: the two local registries of `scripts/test-env up` (Basic auth,
//! and its Bearer-token twin over the same storage), images pushed with crane, charts pushed with
//! `helm push` or served as a classic repository, the token endpoint the token registry's realm
//! points at, and a small HTTP server for scripted answers (429, ETag).
//!
//! Every test pushes into its own repositories (`unique_repo`), so tests never see each other's
//! tags.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD as B64URL};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use kubectl_drift::source::registry::{ClientOptions, Registries, RegistryConfig};

use crate::common::{Cluster, Helm, Run, unique_ns};

/// The local registries and crane.
pub struct Oci {
    /// host:port of the Basic-auth registry (read-write).
    pub registry: String,
    /// host:port of the token-auth registry (same content, read-only).
    pub token_registry: String,
    pub user: String,
    pub password: String,
    pub crane: PathBuf,
    /// A DOCKER_CONFIG directory holding the Basic registry's credentials (for crane).
    pub docker_config: PathBuf,
}

/// The registries exported by `scripts/test-env up` (panics when missing: call after
/// `needs_cluster!`).
pub fn oci() -> Oci {
    let var = |k: &str| {
        std::env::var(k)
            .unwrap_or_else(|_| panic!("DRIFT_E2E=1 but {k} is not set: scripts/test-env up starts the registries"))
    };
    let registry = var("DRIFT_REGISTRY");
    let user = var("DRIFT_REGISTRY_USER");
    let password = var("DRIFT_REGISTRY_PASSWORD");
    static CONFIG: OnceLock<PathBuf> = OnceLock::new();
    let docker_config = CONFIG
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("drift-e2e-docker-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let auth = B64.encode(format!("{user}:{password}"));
            std::fs::write(dir.join("config.json"), format!(r#"{{"auths":{{"{registry}":{{"auth":"{auth}"}}}}}}"#))
                .unwrap();
            dir
        })
        .clone();
    Oci {
        token_registry: var("DRIFT_REGISTRY_TOKEN"),
        crane: PathBuf::from(var("CRANE")),
        registry,
        user,
        password,
        docker_config,
    }
}

/// A repository name no other test uses: `<prefix>-<unique>/app`.
pub fn unique_repo(prefix: &str) -> String {
    format!("{}/app", unique_ns(prefix))
}

impl Oci {
    /// Run crane against the local registries (plain HTTP, the Basic registry's credentials).
    pub fn crane(&self, args: &[&str]) -> Run {
        let mut cmd = Command::new(&self.crane);
        cmd.args(args).arg("--insecure").env("DOCKER_CONFIG", &self.docker_config);
        let what = format!("crane {}", args.join(" "));
        let out = cmd.output().unwrap_or_else(|e| panic!("failed to start {what}: {e}"));
        Run { out, what }
    }

    /// Push a one-layer image (a file holding `content`) as `repo:tag` to the Basic registry;
    /// returns its manifest digest. Different content, different digest.
    pub fn push_image(&self, repo: &str, tag: &str, content: &str) -> String {
        let dir = tempdir("layer");
        std::fs::write(dir.join("content.txt"), content).unwrap();
        let tar = dir.join("layer.tar");
        let st = Command::new("tar").arg("-C").arg(&dir).arg("-cf").arg(&tar).arg("content.txt").status().unwrap();
        assert!(st.success(), "tar failed");
        let target = format!("{}/{repo}:{tag}", self.registry);
        self.crane(&["append", "-f", tar.to_str().unwrap(), "-t", &target]).ok();
        let _ = std::fs::remove_dir_all(&dir);
        self.digest(repo, tag)
    }

    /// Push an image for one platform (`linux/arm64/v8`) as `repo:tag`; returns its digest.
    pub fn push_platform_image(&self, repo: &str, tag: &str, platform: &str) -> String {
        self.push_image(repo, tag, &format!("built for {platform}"));
        let target = format!("{}/{repo}:{tag}", self.registry);
        self.crane(&["mutate", &target, "--set-platform", platform, "-t", &target]).ok();
        self.digest(repo, tag)
    }

    /// Push an index of the given platform images as `repo:tag`; returns (index digest, the
    /// platform manifests' digests in order).
    pub fn push_index(&self, repo: &str, tag: &str, platforms: &[&str]) -> (String, Vec<String>) {
        let mut digests = Vec::new();
        let mut args = vec!["index".to_string(), "append".to_string()];
        for p in platforms {
            let t = format!("{tag}-{}", p.replace('/', "-"));
            let d = self.push_platform_image(repo, &t, p);
            args.push("-m".into());
            args.push(format!("{}/{repo}@{d}", self.registry));
            digests.push(d);
        }
        args.push("-t".into());
        args.push(format!("{}/{repo}:{tag}", self.registry));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.crane(&args).ok();
        (self.digest(repo, tag), digests)
    }

    /// Add tags to the image `repo:from`.
    pub fn tag(&self, repo: &str, from: &str, tags: &[&str]) {
        let src = format!("{}/{repo}:{from}", self.registry);
        for t in tags {
            self.crane(&["tag", &src, t]).ok();
        }
    }

    /// The digest `repo:tag` resolves to, as crane sees it.
    pub fn digest(&self, repo: &str, tag: &str) -> String {
        self.crane(&["digest", &format!("{}/{repo}:{tag}", self.registry)]).ok().trim().to_string()
    }

    /// A client for both local registries: plain HTTP; credentials from the named environment
    /// variables through `env` (Basic registry's as given, token registry's the same user).
    pub fn client(&self, options: ClientOptions, user: Option<&str>, password: Option<&str>) -> Registries {
        let mut options = options;
        let with_creds = user.is_some();
        for host in [&self.registry, &self.token_registry] {
            options.registries.push(RegistryConfig {
                host: host.clone(),
                plain_http: true,
                username_env: with_creds.then(|| "E2E_REG_USER".to_string()),
                password_env: with_creds.then(|| "E2E_REG_PASSWORD".to_string()),
                concurrency: Some(2),
            });
        }
        let env: HashMap<&str, String> = [("E2E_REG_USER", user), ("E2E_REG_PASSWORD", password)]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v.to_string())))
            .collect();
        Registries::new(options, |k| env.get(k).cloned()).expect("client")
    }

    /// Log Helm into the Basic registry (the test's own Helm home).
    pub fn helm_login(&self, cluster: &Cluster, helm: Helm) {
        cluster
            .shell(
                helm,
                &format!(
                    "printf '%s' \"$REG_PW\" | helm registry login {} -u {} --password-stdin --plain-http",
                    self.registry, self.user
                ),
                &[("REG_PW", &self.password)],
            )
            .ok();
    }
}

/// A fresh scratch directory.
pub fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique_ns(&format!("drift-e2e-{what}")));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write a minimal chart `name` at `version` (and appVersion, deprecated) into `dir/name`.
pub fn write_chart(dir: &Path, name: &str, version: &str, app_version: &str, deprecated: bool) -> PathBuf {
    let chart = dir.join(format!("{name}-{version}"));
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        format!(
            "apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: \"{app_version}\"\ndeprecated: {deprecated}\n\
             home: https://example.com/{name}\nsources:\n  - https://github.com/example/{name}\n\
             annotations:\n  artifacthub.io/changes: \"- fixed {version}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  v: {{ .Chart.Version | quote }}\n",
    )
    .unwrap();
    chart
}

// --- a small HTTP server for scripted answers ----------------------------------------------------

/// What a scripted server answers: (status, headers, body).
pub type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// Serve `handler` on 127.0.0.1:`port` (0: any) inside the current tokio runtime; returns the
/// address. Each request is (method, path with query, headers); the handler runs on the blocking
/// pool, so it may sleep to play a slow server.
pub async fn serve<F>(port: u16, handler: F) -> SocketAddr
where
    F: Fn(&str, &str, &hyper::HeaderMap) -> Answer + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind test server");
    let addr = listener.local_addr().unwrap();
    let handler = Arc::new(handler);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { break };
            let handler = handler.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let handler = handler.clone();
                    async move {
                        let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
                        let (method, headers) = (req.method().as_str().to_string(), req.headers().clone());
                        // On the blocking pool: a handler may take its time without holding a worker.
                        let (status, headers, body) =
                            tokio::task::spawn_blocking(move || handler(&method, &path, &headers)).await.unwrap();
                        let mut resp = Response::builder().status(status);
                        for (k, v) in headers {
                            resp = resp.header(k, v);
                        }
                        Ok::<_, std::convert::Infallible>(resp.body(Full::new(Bytes::from(body))).unwrap())
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
    addr
}

/// Serve the files of `dir` (a classic chart repository) on 127.0.0.1, any port.
pub async fn serve_dir(dir: PathBuf) -> SocketAddr {
    serve(0, move |_, path, _| {
        let name = path.split('?').next().unwrap_or("").trim_start_matches('/');
        if name.contains("..") {
            return (400, vec![], vec![]);
        }
        match std::fs::read(dir.join(name)) {
            Ok(body) => (200, vec![], body),
            Err(_) => (404, vec![], b"not found".to_vec()),
        }
    })
    .await
}

// --- the token endpoint of the token-auth registry -----------------------------------------------

/// Requests the token endpoint answered, by kind.
#[derive(Default)]
pub struct TokenCounts {
    pub anonymous: AtomicU64,
    pub with_credentials: AtomicU64,
    pub refused: AtomicU64,
}

/// Start (once per test process) the token endpoint the token registry's realm points at
/// (`DRIFT_REGISTRY_TOKEN_REALM_PORT`). Tokens are ES256 JWTs with the issuer, service and
/// certificate `scripts/test-env` configured. Anonymous requests get `pull` on any repository
/// not under `private-`; Basic credentials (the Basic registry's user and password) get `pull` on
/// all; wrong credentials get 401.
pub fn token_endpoint() -> &'static TokenCounts {
    static COUNTS: OnceLock<&'static TokenCounts> = OnceLock::new();
    COUNTS.get_or_init(|| {
        let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set (scripts/test-env up)"));
        let port: u16 = var("DRIFT_REGISTRY_TOKEN_REALM_PORT").parse().unwrap();
        let key = std::fs::read(var("DRIFT_REGISTRY_TOKEN_KEY")).unwrap();
        let cert = std::fs::read(var("DRIFT_REGISTRY_TOKEN_CERT")).unwrap();
        let issuer = var("DRIFT_REGISTRY_TOKEN_ISSUER");
        let service = var("DRIFT_REGISTRY_TOKEN_SERVICE");
        let user = var("DRIFT_REGISTRY_USER");
        let password = var("DRIFT_REGISTRY_PASSWORD");
        let counts: &'static TokenCounts = Box::leak(Box::default());
        let rng = ring::rand::SystemRandom::new();
        let pair = ring::signature::EcdsaKeyPair::from_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &key, &rng)
            .expect("token.key is a PKCS#8 P-256 key");
        let header = B64URL.encode(format!(r#"{{"alg":"ES256","typ":"JWT","x5c":["{}"]}}"#, B64.encode(&cert)));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                serve(port, move |_, path, headers| {
                    let query = path.split_once('?').map(|(_, q)| q).unwrap_or("");
                    let param = |name: &str| {
                        query.split('&').find_map(|kv| kv.strip_prefix(&format!("{name}="))).map(|v| v.replace("%3A", ":"))
                    };
                    let presented = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
                    let sub = match presented {
                        Some(a) => {
                            if a != format!("Basic {}", B64.encode(format!("{user}:{password}"))) {
                                counts.refused.fetch_add(1, Ordering::SeqCst);
                                return (401, vec![], br#"{"errors":[{"code":"UNAUTHORIZED"}]}"#.to_vec());
                            }
                            counts.with_credentials.fetch_add(1, Ordering::SeqCst);
                            user.clone()
                        }
                        None => {
                            counts.anonymous.fetch_add(1, Ordering::SeqCst);
                            String::new()
                        }
                    };
                    let mut access = Vec::new();
                    if param("service").as_deref() == Some(service.as_str())
                        && let Some(scope) = param("scope")
                        && let Some(name) = scope.strip_prefix("repository:").and_then(|s| s.strip_suffix(":pull"))
                        && (!sub.is_empty() || !name.starts_with("private-"))
                    {
                        access.push(format!(r#"{{"type":"repository","name":"{name}","actions":["pull"]}}"#));
                    }
                    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
                    let claims = format!(
                        r#"{{"iss":"{issuer}","sub":"{sub}","aud":"{service}","exp":{},"nbf":{},"iat":{now},"jti":"{now}-{}","access":[{}]}}"#,
                        now + 300,
                        now - 10,
                        counts.anonymous.load(Ordering::SeqCst) + counts.with_credentials.load(Ordering::SeqCst),
                        access.join(",")
                    );
                    let signing_input = format!("{header}.{}", B64URL.encode(claims));
                    let sig = pair.sign(&rng, signing_input.as_bytes()).expect("sign");
                    let token = format!("{signing_input}.{}", B64URL.encode(sig.as_ref()));
                    let body = format!(r#"{{"token":"{token}","expires_in":300}}"#);
                    (200, vec![("content-type".into(), "application/json".into())], body.into_bytes())
                })
                .await;
                ready_tx.send(()).unwrap();
                std::future::pending::<()>().await;
            });
        });
        ready_rx.recv().expect("the token endpoint started");
        counts
    })
}

/// Tags of many shapes, as real repositories have them: semver with and without `v`, suffixed
/// (`-alpine`), prefixed (`distroless-`), prereleases, signature/attestation tags, bare hex
/// commits and floating names.
pub const TAG_SHAPES: &[&str] = &[
    "v1.35.9",
    "v1.35.10",
    "v1.36.0",
    "1.2.3",
    "1.2.4",
    "9.0-alpine",
    "9.1-alpine",
    "distroless-v1.39.1",
    "distroless-v1.40.0",
    "1.3.0-rc.1",
    "2.0.0-alpha",
    "2.0.0-beta.2",
    "1.4.0rc1",
    "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig",
    "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.att",
    "sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sbom",
    "a1b2c3d",
    "0123456789abcdef0123456789abcdef01234567",
    "latest",
    "main",
    "stable",
];

impl Oci {
    /// Push one image to `repo` and give it every tag of [`TAG_SHAPES`]; returns its digest.
    pub fn push_tag_shapes(&self, repo: &str) -> String {
        let digest = self.push_image(repo, TAG_SHAPES[0], &format!("image of {repo}"));
        self.tag(repo, TAG_SHAPES[0], &TAG_SHAPES[1..]);
        digest
    }
}
