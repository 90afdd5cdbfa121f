//! Helm's SQL storage driver (`HELM_DRIVER=sql`): releases in PostgreSQL, read-only.
//!
//! Helm keeps one row per revision in `releases_v1` (`key, type, body, name, namespace,
//! version, status, owner, createdat, modifiedat`); `body` is the same `base64(gzip(json))` as
//! the Secret driver, and Helm reads only rows with `owner = 'helm'`. This module parses the
//! connection string the way Helm's PostgreSQL client (lib/pq) does (URL or `key=value`
//! pairs, `sslmode` defaulting to `require`), keeps a small bounded pool of connections, and
//! reads with one SELECT per request: all revisions of a scope at once, never one per release.
//! It only ever issues SELECT, so a role that may only SELECT is enough.
//!
//! Nothing here prints the password: errors name the target as `postgres://USER@HOST:PORT/DB`,
//! and the parser never echoes a value from the connection string.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

use futures::future::BoxFuture;

use super::driver::{ReleaseBody, ReleaseDriver, ReleaseLabels, ReleaseSummary, StoredRevision, summarise_labels};
use super::error::{SqlError, StorageError, TABLE};

/// At most this many connections are open at once.
pub const POOL_SIZE: usize = 4;

/// Connecting gives up after this long unless the connection string says `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection string, kept out of `Debug` output (it may hold a password).
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionString(pub String);

impl std::fmt::Debug for ConnectionString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionString(<redacted>)")
    }
}

impl std::str::FromStr for ConnectionString {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(ConnectionString(s.to_string()))
    }
}

/// `sslmode`, as lib/pq understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(v: &str) -> Result<SslMode, SqlError> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return Err(bad("sslmode must be disable, allow, prefer, require, verify-ca or verify-full")),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

fn bad(reason: impl Into<String>) -> SqlError {
    SqlError::BadConnectionString { reason: reason.into() }
}

/// A parsed connection string.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionParams {
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub user: Option<String>,
    password: Option<String>,
    pub dbname: Option<String>,
    /// lib/pq's default is `require`.
    pub sslmode: SslMode,
    pub sslrootcert: Option<PathBuf>,
    pub connect_timeout: Option<Duration>,
    pub application_name: Option<String>,
    /// Other parameters: server settings sent at start-up (`search_path`, ...).
    pub runtime: Vec<(String, String)>,
}

impl std::fmt::Debug for ConnectionParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConnectionParams({} sslmode={})", self.target(), self.sslmode.name())
    }
}

/// Parameters lib/pq reads on the client side that this driver does not implement: refused by
/// name rather than silently ignored.
const UNSUPPORTED: &[&str] = &[
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslinline",
    "sslcrl",
    "sslnegotiation",
    "service",
    "passfile",
    "require_auth",
    "gssencmode",
    "krbsrvname",
    "krbspn",
    "hostaddr",
    "min_protocol_version",
    "max_protocol_version",
];

/// lib/pq parameters that change nothing here.
const IGNORED: &[&str] = &[
    "sslsni",
    "fallback_application_name",
    "binary_parameters",
    "disable_prepared_binary_result",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "target_session_attrs",
];

impl ConnectionParams {
    /// Parse a URL (`postgres://` or `postgresql://`) or `key=value` connection string.
    pub fn parse(s: &str) -> Result<ConnectionParams, SqlError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SqlError::MissingConnectionString);
        }
        let mut p = ConnectionParams {
            hosts: Vec::new(),
            ports: Vec::new(),
            user: None,
            password: None,
            dbname: None,
            sslmode: SslMode::Require,
            sslrootcert: None,
            connect_timeout: None,
            application_name: None,
            runtime: Vec::new(),
        };
        if let Some(rest) = s.strip_prefix("postgres://").or_else(|| s.strip_prefix("postgresql://")) {
            p.parse_url(rest)?;
        } else if let Some((scheme, _)) = s.split_once("://")
            && !scheme.contains(['=', ' '])
        {
            return Err(bad(format!("unsupported scheme {scheme:?}: use postgres://... or key=value pairs")));
        } else {
            for (k, v) in parse_key_values(s)? {
                p.set(&k, v)?;
            }
        }
        if p.hosts.is_empty() {
            p.hosts.push("localhost".to_string());
        }
        if p.ports.is_empty() {
            p.ports.push(5432);
        }
        if p.ports.len() != 1 && p.ports.len() != p.hosts.len() {
            return Err(bad("the number of ports must be 1 or the number of hosts"));
        }
        if p.user.as_deref().is_none_or(str::is_empty) {
            return Err(bad("no user given (user=... or postgres://USER@HOST/DB)"));
        }
        // lib/pq never uses TLS over a Unix socket.
        if p.hosts.iter().all(|h| h.starts_with('/')) {
            p.sslmode = SslMode::Disable;
        }
        Ok(p)
    }

    fn parse_url(&mut self, rest: &str) -> Result<(), SqlError> {
        let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = main.split_once('/').unwrap_or((main, ""));
        let hostports = match authority.rsplit_once('@') {
            Some((userinfo, hostports)) => {
                let (user, password) = match userinfo.split_once(':') {
                    Some((u, pw)) => (u, Some(pw)),
                    None => (userinfo, None),
                };
                self.user = Some(percent_decode(user, "user")?);
                self.password = password.map(|pw| percent_decode(pw, "password")).transpose()?;
                hostports
            }
            None => authority,
        };
        for hp in hostports.split(',').filter(|h| !h.is_empty()) {
            let (host, port) = if let Some(v6) = hp.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or_else(|| bad("an IPv6 host in the URL has no closing ']'"))?;
                (h.to_string(), after.strip_prefix(':'))
            } else {
                match hp.rsplit_once(':') {
                    Some((h, p)) => (percent_decode(h, "host")?, Some(p)),
                    None => (percent_decode(hp, "host")?, None),
                }
            };
            if !host.is_empty() {
                self.hosts.push(host);
            }
            if let Some(port) = port.filter(|p| !p.is_empty()) {
                self.ports.push(parse_port(port)?);
            }
        }
        if !path.is_empty() {
            self.dbname = Some(percent_decode(path, "database name")?);
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad("a URL query parameter has no '='"))?;
            let k = percent_decode(k, "query")?;
            let v = percent_decode(v, "query")?;
            self.set(&k, v)?;
        }
        Ok(())
    }

    fn set(&mut self, key: &str, value: String) -> Result<(), SqlError> {
        match key {
            "host" => self.hosts = value.split(',').filter(|h| !h.is_empty()).map(str::to_string).collect(),
            "port" => {
                self.ports = value.split(',').filter(|p| !p.is_empty()).map(parse_port).collect::<Result<_, _>>()?
            }
            "user" => self.user = Some(value),
            "password" => self.password = Some(value),
            "dbname" => self.dbname = Some(value),
            "sslmode" => self.sslmode = SslMode::parse(&value)?,
            "sslrootcert" => self.sslrootcert = (!value.is_empty()).then(|| PathBuf::from(value)),
            "connect_timeout" => {
                let secs: u64 =
                    value.trim().parse().map_err(|_| bad("connect_timeout must be a whole number of seconds"))?;
                self.connect_timeout = (secs > 0).then(|| Duration::from_secs(secs));
            }
            "application_name" => self.application_name = Some(value),
            k if UNSUPPORTED.contains(&k) => {
                return Err(bad(format!("parameter {k} is not supported by kubectl-drift")));
            }
            k if IGNORED.contains(&k) => {}
            k if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') => {
                return Err(bad("a parameter name is not a word"));
            }
            k => self.runtime.push((k.to_string(), value)),
        }
        Ok(())
    }

    /// `postgres://USER@HOST:PORT/DB`: where it connects, never with the password.
    pub fn target(&self) -> String {
        let hosts: Vec<String> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = self.ports.get(i).or(self.ports.first()).copied().unwrap_or(5432);
                if h.contains(':') { format!("[{h}]:{port}") } else { format!("{h}:{port}") }
            })
            .collect();
        let user = self.user.as_deref().unwrap_or("");
        let db = self.dbname.as_deref().unwrap_or(user);
        format!("postgres://{user}@{}/{db}", hosts.join(","))
    }

    /// The tokio-postgres configuration (TLS mode mapped: verification is done by our verifier).
    fn client_config(&self) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        for h in &self.hosts {
            c.host(h);
        }
        for p in &self.ports {
            c.port(*p);
        }
        if let Some(u) = &self.user {
            c.user(u);
        }
        if let Some(pw) = &self.password {
            c.password(pw);
        }
        if let Some(db) = &self.dbname {
            c.dbname(db);
        }
        c.application_name(self.application_name.as_deref().unwrap_or("kubectl-drift"));
        if !self.runtime.is_empty() {
            let opts: Vec<String> = self
                .runtime
                .iter()
                .map(|(k, v)| format!("-c {k}={}", v.replace('\\', "\\\\").replace(' ', "\\ ")))
                .collect();
            c.options(opts.join(" "));
        }
        c.connect_timeout(self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
        c.ssl_mode(match self.sslmode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            // tokio-postgres has no "allow" (plain first, then TLS): try TLS first instead.
            SslMode::Allow | SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        });
        c
    }
}

fn parse_port(p: &str) -> Result<u16, SqlError> {
    p.trim().parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("a port is not a number from 1 to 65535"))
}

fn percent_decode(s: &str, part: &str) -> Result<String, SqlError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("invalid %-escape in the {part} of the URL")))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(format!("the {part} of the URL is not UTF-8")))
}

/// libpq's `key=value` form: pairs separated by spaces, `=` may have spaces around it, values
/// may be single-quoted, `\` escapes the next character.
fn parse_key_values(s: &str) -> Result<Vec<(String, String)>, SqlError> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && chars[i] != '=' && !chars[i].is_whitespace() {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        skip_ws(&mut i);
        if i >= chars.len() || chars[i] != '=' {
            return Err(bad(format!("expected key=value pairs; the word at character {} has no '='", start + 1)));
        }
        i += 1;
        skip_ws(&mut i);
        let mut value = String::new();
        if i < chars.len() && chars[i] == '\'' {
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(bad("a quoted value has no closing quote")),
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some('\\') if i + 1 < chars.len() => {
                        value.push(chars[i + 1]);
                        i += 2;
                    }
                    Some(c) => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < chars.len() && !chars[i].is_whitespace() {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                value.push(chars[i]);
                i += 1;
            }
        }
        out.push((key, value));
    }
    Ok(out)
}

/// How connections are secured.
#[derive(Clone)]
enum Tls {
    None,
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

fn tls_for(params: &ConnectionParams) -> Result<Tls, SqlError> {
    use rustls::client::WebPkiServerVerifier;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The trusted roots: the sslrootcert file, or the system's for `system` and verify-*.
    let roots = || -> Result<rustls::RootCertStore, SqlError> {
        let mut store = rustls::RootCertStore::empty();
        match &params.sslrootcert {
            Some(path) if path.as_os_str() != "system" => {
                let err = |reason: String| SqlError::RootCert { path: path.clone(), reason };
                let pem = std::fs::read(path).map_err(|e| err(e.to_string()))?;
                use rustls_pki_types::pem::PemObject;
                for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
                    store.add(cert.map_err(|e| err(e.to_string()))?).map_err(|e| err(e.to_string()))?;
                }
                if store.is_empty() {
                    return Err(err("no certificate in the file".into()));
                }
            }
            _ => {
                store.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        Ok(store)
    };
    let without_host_name = |chain| Arc::new(WithoutHostName { chain, provider: provider.clone() });
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> = match params.sslmode {
        SslMode::Disable => return Ok(Tls::None),
        // lib/pq: with a root certificate, require behaves as verify-ca (a named file that does
        // not exist is ignored).
        SslMode::Allow | SslMode::Prefer | SslMode::Require
            if params.sslrootcert.as_ref().is_some_and(|p| p.as_os_str() == "system" || p.exists()) =>
        {
            without_host_name(Some(web_pki(roots()?, &provider)?))
        }
        SslMode::Allow | SslMode::Prefer | SslMode::Require => without_host_name(None),
        SslMode::VerifyCa => without_host_name(Some(web_pki(roots()?, &provider)?)),
        SslMode::VerifyFull => web_pki(roots()?, &provider)?,
    };
    fn web_pki(
        store: rustls::RootCertStore,
        provider: &Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Arc<WebPkiServerVerifier>, SqlError> {
        WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()
            .map_err(|e| bad(format!("no usable root certificate for sslmode verify-ca/verify-full: {e}")))
    }
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(format!("TLS set-up failed: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Tls::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(config)))
}

/// lib/pq's checks short of `verify-full`: with no roots (`require` without `sslrootcert`) the
/// certificate is not checked at all, with roots (`verify-ca`, or `require` with `sslrootcert`)
/// its chain must lead to one but the host name is not checked. The handshake signatures are
/// always verified.
#[derive(Debug)]
struct WithoutHostName {
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for WithoutHostName {
    fn verify_server_cert(
        &self,
        end_entity: &rustls_pki_types::CertificateDer<'_>,
        intermediates: &[rustls_pki_types::CertificateDer<'_>],
        server_name: &rustls_pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error, client::danger::ServerCertVerified};
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Reads Helm's SQL storage through a small bounded pool of connections, opened on first use
/// and reused (a `watch` keeps them between rounds).
pub struct SqlStore {
    params: ConnectionParams,
    config: tokio_postgres::Config,
    tls: Tls,
    /// Limit for each query (None: no limit).
    timeout: Option<Duration>,
    idle: Mutex<Vec<Client>>,
    slots: Semaphore,
    /// The table was found readable by this role ([`SqlStore::check_visibility`]).
    visible: AtomicBool,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqlStore({:?})", self.params)
    }
}

/// A connection taken from the pool; it goes back only through [`Checkout::give_back`], so a
/// connection that failed or timed out is closed rather than reused.
struct Checkout<'a> {
    store: &'a SqlStore,
    client: Client,
    _slot: SemaphorePermit<'a>,
}

impl Checkout<'_> {
    fn give_back(self) {
        if !self.client.is_closed()
            && let Ok(mut idle) = self.store.idle.lock()
        {
            idle.push(self.client);
        }
    }
}

/// The columns every revision query reads, in this order.
const REVISION_COLUMNS: &str = "key, namespace, name, version, status, body";

impl SqlStore {
    /// Parse the connection string and prepare TLS; nothing is connected yet.
    pub fn new(connection: &str, timeout: Option<Duration>) -> Result<SqlStore, SqlError> {
        let params = ConnectionParams::parse(connection)?;
        let tls = tls_for(&params)?;
        Ok(SqlStore {
            config: params.client_config(),
            params,
            tls,
            timeout,
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(POOL_SIZE),
            visible: AtomicBool::new(false),
        })
    }

    /// Where this store reads, without the password.
    pub fn target(&self) -> String {
        self.params.target()
    }

    async fn bounded<T>(
        &self,
        what: &str,
        limit: Option<Duration>,
        fut: impl std::future::Future<Output = Result<T, SqlError>>,
    ) -> Result<T, SqlError> {
        match limit {
            Some(d) => tokio::time::timeout(d, fut).await.unwrap_or_else(|_| {
                Err(SqlError::Timeout { target: self.target(), what: what.to_string(), seconds: d.as_secs() })
            }),
            None => fut.await,
        }
    }

    async fn checkout(&self) -> Result<Checkout<'_>, SqlError> {
        let slot = self
            .bounded("wait for a free connection", self.timeout, async {
                self.slots.acquire().await.map_err(|e| SqlError::Query {
                    target: self.target(),
                    what: "take a connection".into(),
                    cause: e.to_string(),
                })
            })
            .await?;
        let reused = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.retain(|c| !c.is_closed());
            idle.pop()
        };
        let client = match reused {
            Some(c) => c,
            None => {
                let limit = self.params.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT) + Duration::from_secs(1);
                self.bounded("connect", Some(limit), self.connect()).await?
            }
        };
        Ok(Checkout { store: self, client, _slot: slot })
    }

    async fn connect(&self) -> Result<Client, SqlError> {
        let result = match &self.tls {
            Tls::None => self.config.connect(NoTls).await.map(|(client, conn)| {
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                client
            }),
            Tls::Rustls(tls) => self.config.connect(tls.clone()).await.map(|(client, conn)| {
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                client
            }),
        };
        result.map_err(|e| self.connect_error(&e))
    }

    fn connect_error(&self, e: &tokio_postgres::Error) -> SqlError {
        use tokio_postgres::error::SqlState;
        let target = self.target();
        let cause = cause_of(e);
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
                return SqlError::Auth { target, user: self.params.user.clone().unwrap_or_default(), cause };
            }
            return SqlError::Connect { target, cause };
        }
        let text = e.to_string();
        if text.contains("TLS") || text.contains("tls") || find_source::<rustls::Error>(e).is_some() {
            return SqlError::Tls { target, sslmode: self.params.sslmode.name(), cause };
        }
        if text.contains("password missing") {
            return SqlError::Auth { target, user: self.params.user.clone().unwrap_or_default(), cause };
        }
        SqlError::Connect { target, cause }
    }

    fn query_error(&self, e: &tokio_postgres::Error, what: &str) -> SqlError {
        use tokio_postgres::error::SqlState;
        let target = self.target();
        match e.as_db_error().map(|d| d.code()) {
            Some(c) if *c == SqlState::UNDEFINED_TABLE => SqlError::MissingTable { target },
            Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => SqlError::Permission { target, cause: cause_of(e) },
            _ => SqlError::Query { target, what: what.to_string(), cause: cause_of(e) },
        }
    }

    /// Run one SELECT in a read-only transaction (so even a role that could write never does),
    /// after checking once per store that the table exists and its rows are visible to us.
    async fn query(&self, what: &str, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, SqlError> {
        let mut conn = self.checkout().await?;
        let rows = self
            .bounded(what, self.timeout, async {
                let err = |e: tokio_postgres::Error| self.query_error(&e, what);
                let tx = conn.client.build_transaction().read_only(true).start().await.map_err(err)?;
                if !self.visible.load(Ordering::Relaxed) {
                    self.check_visibility(&tx).await?;
                    self.visible.store(true, Ordering::Relaxed);
                }
                let rows = tx.query(sql, params).await.map_err(err)?;
                tx.commit().await.map_err(err)?;
                Ok(rows)
            })
            .await?;
        conn.give_back();
        Ok(rows)
    }

    /// The table exists, and row-level security does not hide all of it from this role. Helm
    /// creates its tables with row-level security on and no policy, so only their owner, a
    /// superuser or a BYPASSRLS role sees rows; anyone else would read an empty table.
    async fn check_visibility(&self, tx: &tokio_postgres::Transaction<'_>) -> Result<(), SqlError> {
        let sql = format!(
            "SELECT c.relrowsecurity AND (c.relforcerowsecurity OR NOT pg_has_role(current_user, c.relowner, 'USAGE')) \
                    AND NOT (r.rolsuper OR r.rolbypassrls) \
                    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy p WHERE p.polrelid = c.oid \
                        AND p.polpermissive AND p.polcmd IN ('r', '*') \
                        AND (0 = ANY(p.polroles) OR EXISTS (SELECT 1 FROM unnest(p.polroles) AS u(oid) \
                                                            WHERE pg_has_role(current_user, u.oid, 'USAGE')))), \
                    current_user::text \
             FROM pg_catalog.pg_class c JOIN pg_catalog.pg_roles r ON r.rolname = current_user \
             WHERE c.oid = to_regclass('{TABLE}')"
        );
        let rows = tx.query(&sql, &[]).await.map_err(|e| self.query_error(&e, "check access to the table"))?;
        let Some(row) = rows.first() else {
            return Err(SqlError::MissingTable { target: self.target() });
        };
        let hidden: bool = row.try_get(0).unwrap_or(false);
        if hidden {
            let user: String = row.try_get(1).unwrap_or_default();
            return Err(SqlError::RowSecurity { target: self.target(), user });
        }
        Ok(())
    }

    /// Every stored revision matching `selector` (`name=X`, `status=deployed`, `version=N`,
    /// comma-separated, as the Kubernetes drivers' label selectors), in `namespace` or in all
    /// namespaces: one query. Undecodable rows are returned with their error.
    async fn list_rows(&self, namespace: Option<&str>, selector: &str) -> Result<Vec<StoredRevision>, StorageError> {
        let parsed = ReleaseLabels::parse(selector, "sql")?;
        let version = match parsed.version {
            Some(v) => Some(
                i32::try_from(v)
                    .map_err(|_| StorageError::UnsupportedSelector { driver: "sql", selector: selector.to_string() })?,
            ),
            None => None,
        };
        let mut conditions = vec!["owner = $1".to_string()];
        let mut texts: Vec<String> = vec![parsed.owner.clone().unwrap_or_else(|| "helm".to_string())];
        for (column, value) in
            [("namespace", namespace.map(str::to_string)), ("name", parsed.name), ("status", parsed.status)]
        {
            if let Some(value) = value {
                texts.push(value);
                conditions.push(format!("{column} = ${}", texts.len()));
            }
        }
        let mut params: Vec<&(dyn ToSql + Sync)> = texts.iter().map(|t| t as &(dyn ToSql + Sync)).collect();
        if let Some(v) = &version {
            params.push(v);
            conditions.push(format!("version = ${}", params.len()));
        }
        let sql = format!(
            "SELECT {REVISION_COLUMNS} FROM {TABLE} WHERE {} ORDER BY namespace, name, version",
            conditions.join(" AND ")
        );
        let rows = self.query(&format!("read {TABLE}"), &sql, &params).await?;
        Ok(rows.iter().map(revision_from_row).collect())
    }

    /// Every release's name, latest revision and status, without the bodies: one query.
    async fn summary_rows(&self, namespace: Option<&str>) -> Result<Vec<ReleaseSummary>, StorageError> {
        let sql = format!(
            "SELECT namespace, name, version, status FROM {TABLE} WHERE owner = $1{}",
            if namespace.is_some() { " AND namespace = $2" } else { "" }
        );
        let owner = "helm";
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&owner];
        if let Some(ns) = &namespace {
            params.push(ns);
        }
        let rows = self.query(&format!("list {TABLE}"), &sql, &params).await?;
        let labels = rows.iter().map(|r| {
            let text = |i: usize| r.try_get::<_, Option<String>>(i).ok().flatten().unwrap_or_default();
            let version = r.try_get::<_, Option<i32>>(2).ok().flatten().and_then(|v| u32::try_from(v).ok());
            (text(0), text(1), version.unwrap_or(0), text(3))
        });
        Ok(summarise_labels(labels))
    }
}

impl ReleaseDriver for SqlStore {
    fn name(&self) -> &'static str {
        "sql"
    }

    fn list<'a>(
        &'a self,
        namespace: Option<&'a str>,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>> {
        Box::pin(self.list_rows(namespace, selector))
    }

    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>> {
        Box::pin(self.summary_rows(namespace))
    }
}

/// One row of `releases_v1` as a stored revision, decoded like a Secret's `release` value.
fn revision_from_row(row: &Row) -> StoredRevision {
    let text = |i: usize| row.try_get::<_, Option<String>>(i).map(Option::unwrap_or_default);
    let key = text(0).unwrap_or_default();
    let namespace = text(1).unwrap_or_default();
    let object = format!("{TABLE} row {namespace}/{key}");
    let column_error = |column: &'static str, e: tokio_postgres::Error| SqlError::Column {
        object: object.clone(),
        column,
        cause: e.to_string(),
    };
    let name = text(2).unwrap_or_default();
    let version = row.try_get::<_, Option<i32>>(3);
    let revision = version.as_ref().ok().copied().flatten().and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    let status = text(4).unwrap_or_default();
    // The body left encoded (decoded when a check asks for it), as the other drivers do.
    let release = (|| -> Result<_, StorageError> {
        version.map_err(|e| column_error("version", e))?;
        let body = row.try_get::<_, Option<String>>(5).map_err(|e| column_error("body", e))?;
        Ok(body.ok_or_else(|| SqlError::NoBody { object: object.clone() })?)
    })()
    .map_or_else(|e| ReleaseBody::decoded(Err(e)), |body| ReleaseBody::encoded(object.clone(), body.into_bytes()));
    StoredRevision { object, namespace, name, revision, status, release }
}

/// The message of an error and its causes, one after another.
/// One connection to the PostgreSQL a connection string names (parsed, TLS and errors as for
/// Helm's storage), for another reader or writer of the same server (the drift history,
/// `source::history`); its target, without the password, comes with it.
pub async fn connect_one(connection: &str) -> Result<(Client, String), SqlError> {
    let store = SqlStore::new(connection, None)?;
    let limit = store.params.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT) + Duration::from_secs(1);
    let client = store.bounded("connect", Some(limit), store.connect()).await?;
    Ok((client, store.target()))
}

/// The cause of a PostgreSQL error as errors here show it (the server's message, or the chain).
pub fn error_cause(e: &tokio_postgres::Error) -> String {
    cause_of(e)
}

fn cause_of(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

fn find_source<'a, T: std::error::Error + 'static>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a T> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(t) = c.downcast_ref::<T>() {
            return Some(t);
        }
        cur = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> ConnectionParams {
        ConnectionParams::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn url_form() {
        let p = parse("postgres://helm:s%40cret@db.example:6543/helmdb?sslmode=disable&search_path=rel");
        assert_eq!(p.user.as_deref(), Some("helm"));
        assert_eq!(p.password.as_deref(), Some("s@cret"));
        assert_eq!(p.hosts, vec!["db.example"]);
        assert_eq!(p.ports, vec![6543]);
        assert_eq!(p.dbname.as_deref(), Some("helmdb"));
        assert_eq!(p.sslmode, SslMode::Disable);
        assert_eq!(p.runtime, vec![("search_path".to_string(), "rel".to_string())]);
        assert_eq!(p.target(), "postgres://helm@db.example:6543/helmdb");
        let p = parse("postgresql://u@[::1]/d");
        assert_eq!(p.hosts, vec!["::1"]);
        assert_eq!(p.target(), "postgres://u@[::1]:5432/d");
    }

    #[test]
    fn key_value_form() {
        let p = parse("host=127.0.0.1 port = 5433 user=helm password=pw dbname=helm sslmode=verify-full");
        assert_eq!(
            (p.ports.as_slice(), p.password.as_deref(), p.sslmode),
            (&[5433][..], Some("pw"), SslMode::VerifyFull)
        );
        let p = parse(r"host=127.0.0.1 user=helm password='a \'b\' c' connect_timeout=3");
        assert_eq!(p.password.as_deref(), Some("a 'b' c"));
        assert_eq!(p.connect_timeout, Some(Duration::from_secs(3)));
        assert_eq!(p.ports, vec![5432]);
        assert_eq!(p.target(), "postgres://helm@127.0.0.1:5432/helm");
    }

    #[test]
    fn sslmode_defaults_to_require_like_lib_pq() {
        assert_eq!(parse("postgres://u@h/d").sslmode, SslMode::Require);
        assert_eq!(parse("user=u host=h").sslmode, SslMode::Require);
        assert_eq!(parse("user=u host=/var/run/postgresql").sslmode, SslMode::Disable);
        assert_eq!(parse("user=u sslmode=verify-ca").sslmode, SslMode::VerifyCa);
    }

    #[test]
    fn errors_never_repeat_the_password() {
        let secret = "Sup3rS3cret";
        for s in [
            format!("postgres://u:{secret}@h:99999/d"),
            format!("postgres://u:{secret}@h:5432/d?sslmode={secret}"),
            format!("user=u password={secret} port={secret}"),
            format!("user=u {secret}"),
            format!("user=u password='{secret}"),
            format!("mysql://u:{secret}@h/d"),
            format!("postgres://u:{secret}%zz@h/d"),
            format!("user=u password={secret} sslcert=/x"),
            format!("host=h password={secret}"),
            format!("user=u password={secret} {secret}-x=1"),
        ] {
            let err = ConnectionParams::parse(&s).expect_err(&s).to_string();
            assert!(!err.contains(secret), "{s}: {err}");
            assert!(err.starts_with("invalid Helm SQL connection string"), "{err}");
        }
        let p = parse(&format!("postgres://u:{secret}@h/d"));
        assert!(!format!("{p:?}").contains(secret));
        assert!(!format!("{:?}", ConnectionString(secret.into())).contains(secret));
        let store = SqlStore::new(&format!("postgres://u:{secret}@h/d?sslmode=disable"), None).unwrap();
        assert!(!format!("{store:?}").contains(secret));
    }

    #[test]
    fn empty_string_is_missing() {
        assert!(matches!(ConnectionParams::parse("  "), Err(SqlError::MissingConnectionString)));
    }

    #[test]
    fn tls_modes_build() {
        for mode in ["disable", "allow", "prefer", "require", "verify-full", "verify-ca"] {
            SqlStore::new(&format!("user=u host=h sslmode={mode}"), None).unwrap_or_else(|e| panic!("{mode}: {e}"));
        }
        let err = SqlStore::new("user=u host=h sslmode=verify-full sslrootcert=/nonexistent/ca.pem", None).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[tokio::test]
    async fn refused_connection_names_the_target() {
        // Port 1 on loopback: nothing listens there.
        let store = SqlStore::new("postgres://u:pw123456@127.0.0.1:1/d?sslmode=disable", None).unwrap();
        let err = store.list(None, "").await.unwrap_err().to_string();
        assert!(err.contains("postgres://u@127.0.0.1:1/d"), "{err}");
        assert!(err.to_lowercase().contains("refused"), "{err}");
        assert!(!err.contains("pw123456"), "{err}");
    }

    #[tokio::test]
    async fn unsupported_selector_is_an_error() {
        let store = SqlStore::new("postgres://u@127.0.0.1:1/d?sslmode=disable", None).unwrap();
        let err = store.list(None, "app=x").await.unwrap_err();
        assert!(err.to_string().contains("app=x"), "{err}");
    }
}
