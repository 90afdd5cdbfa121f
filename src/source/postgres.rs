//! One connection to PostgreSQL, as Helm's PostgreSQL client (lib/pq) makes it: the connection
//! string parsed (a URL or `key=value` pairs, `sslmode` defaulting to `require`), TLS set up as
//! lib/pq checks certificates, and the connection opened within its timeout, its failures named
//! ([`ConnectError`]). Both readers and writers of PostgreSQL here share it: Helm's SQL storage
//! (`source::helm::sql`, which keeps a small pool of these) and the drift history
//! (`source::history::postgres`).
//!
//! Nothing here prints the password: errors name the target as `postgres://USER@HOST:PORT/DB`,
//! and the parser never echoes a value from the connection string.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::{Client, NoTls};

/// Connecting gives up after this long unless the connection string says `connect_timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a connection to PostgreSQL could not be made. No variant carries the password.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The connection string could not be parsed (the reason never repeats its values).
    #[error("invalid PostgreSQL connection string: {reason}")]
    BadConnectionString { reason: String },
    /// The CA file named by `sslrootcert` could not be used.
    #[error("invalid PostgreSQL connection string: sslrootcert {path}: {reason}")]
    RootCert { path: PathBuf, reason: String },
    /// Nothing listens at the address (connection refused, unknown host, unreachable).
    #[error("failed to connect to PostgreSQL {target}: {cause}")]
    Connect { target: String, cause: String },
    /// The server refused the user's credentials (or pg_hba.conf refused the connection).
    #[error("PostgreSQL {target}: authentication failed for user {user:?}: {cause}")]
    Auth { target: String, user: String, cause: String },
    /// TLS was required but could not be set up.
    #[error("PostgreSQL {target}: TLS failed (sslmode={sslmode}): {cause}")]
    Tls { target: String, sslmode: &'static str, cause: String },
    /// The server did not answer within the connect timeout.
    #[error("PostgreSQL {target}: no answer within {seconds}s while trying to connect")]
    Timeout { target: String, seconds: u64 },
}

/// `sslmode`, as lib/pq understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(v: &str) -> Result<SslMode, ConnectError> {
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

    pub(crate) fn name(self) -> &'static str {
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

fn bad(reason: impl Into<String>) -> ConnectError {
    ConnectError::BadConnectionString { reason: reason.into() }
}

/// A parsed connection string.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ConnectionParams {
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
    pub(crate) fn parse(s: &str) -> Result<ConnectionParams, ConnectError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(bad("the connection string is empty"));
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

    fn parse_url(&mut self, rest: &str) -> Result<(), ConnectError> {
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

    fn set(&mut self, key: &str, value: String) -> Result<(), ConnectError> {
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
    pub(crate) fn target(&self) -> String {
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

fn parse_port(p: &str) -> Result<u16, ConnectError> {
    p.trim().parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| bad("a port is not a number from 1 to 65535"))
}

fn percent_decode(s: &str, part: &str) -> Result<String, ConnectError> {
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
fn parse_key_values(s: &str) -> Result<Vec<(String, String)>, ConnectError> {
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

fn tls_for(params: &ConnectionParams) -> Result<Tls, ConnectError> {
    use rustls::client::WebPkiServerVerifier;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The trusted roots: the sslrootcert file, or the system's for `system` and verify-*.
    let roots = || -> Result<rustls::RootCertStore, ConnectError> {
        let mut store = rustls::RootCertStore::empty();
        match &params.sslrootcert {
            Some(path) if path.as_os_str() != "system" => {
                let err = |reason: String| ConnectError::RootCert { path: path.clone(), reason };
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
    ) -> Result<Arc<WebPkiServerVerifier>, ConnectError> {
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

/// What connects to one PostgreSQL: its parsed connection string, client configuration and TLS
/// set-up, made once; each [`Connector::connect`] opens one more connection.
#[derive(Clone)]
pub(crate) struct Connector {
    params: ConnectionParams,
    config: tokio_postgres::Config,
    tls: Tls,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connector({:?})", self.params)
    }
}

impl Connector {
    /// Parse the connection string and prepare TLS; nothing is connected yet.
    pub(crate) fn new(connection: &str) -> Result<Connector, ConnectError> {
        let params = ConnectionParams::parse(connection)?;
        let tls = tls_for(&params)?;
        Ok(Connector { config: params.client_config(), params, tls })
    }

    /// Where this connects, without the password.
    pub(crate) fn target(&self) -> String {
        self.params.target()
    }

    /// Open one connection (its driving task spawned), within the connect timeout (and a second).
    pub(crate) async fn connect(&self) -> Result<Client, ConnectError> {
        let limit = self.params.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT) + Duration::from_secs(1);
        tokio::time::timeout(limit, self.connect_now())
            .await
            .unwrap_or_else(|_| Err(ConnectError::Timeout { target: self.target(), seconds: limit.as_secs() }))
    }

    async fn connect_now(&self) -> Result<Client, ConnectError> {
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

    fn connect_error(&self, e: &tokio_postgres::Error) -> ConnectError {
        use tokio_postgres::error::SqlState;
        let target = self.target();
        let cause = error_cause(e);
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION {
                return ConnectError::Auth { target, user: self.params.user.clone().unwrap_or_default(), cause };
            }
            return ConnectError::Connect { target, cause };
        }
        let text = e.to_string();
        if text.contains("TLS") || text.contains("tls") || find_source::<rustls::Error>(e).is_some() {
            return ConnectError::Tls { target, sslmode: self.params.sslmode.name(), cause };
        }
        if text.contains("password missing") {
            return ConnectError::Auth { target, user: self.params.user.clone().unwrap_or_default(), cause };
        }
        ConnectError::Connect { target, cause }
    }
}

/// The cause of a PostgreSQL error as errors here show it (the server's message, or the chain).
pub(crate) fn error_cause(e: &tokio_postgres::Error) -> String {
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
            assert!(err.starts_with("invalid PostgreSQL connection string"), "{err}");
        }
        let p = parse(&format!("postgres://u:{secret}@h/d"));
        assert!(!format!("{p:?}").contains(secret));
        let connector = Connector::new(&format!("postgres://u:{secret}@h/d?sslmode=disable")).unwrap();
        assert!(!format!("{connector:?}").contains(secret));
    }

    #[test]
    fn tls_modes_build() {
        for mode in ["disable", "allow", "prefer", "require", "verify-full", "verify-ca"] {
            Connector::new(&format!("user=u host=h sslmode={mode}")).unwrap_or_else(|e| panic!("{mode}: {e}"));
        }
        let err = Connector::new("user=u host=h sslmode=verify-full sslrootcert=/nonexistent/ca.pem").unwrap_err();
        assert!(matches!(err, ConnectError::RootCert { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[tokio::test]
    async fn a_refused_connection_names_the_target_without_the_password() {
        // Port 1 on loopback: nothing listens there.
        let connector = Connector::new("postgres://u:pw123456@127.0.0.1:1/d?sslmode=disable").unwrap();
        let err = connector.connect().await.unwrap_err();
        assert!(matches!(err, ConnectError::Connect { .. }), "{err}");
        let text = err.to_string();
        assert!(text.to_lowercase().contains("refused"), "{text}");
        assert!(text.contains("postgres://u@127.0.0.1:1/d") && !text.contains("pw123456"), "{text}");
    }
}
