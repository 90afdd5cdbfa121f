//! Registry authentication: credentials (held in memory, never shown), `WWW-Authenticate`
//! challenges, and pull secrets' `.dockerconfigjson`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use tokio::sync::OnceCell;

use super::{RegistryError, normalise_registry};

/// A user name and password (or token). Its `Debug` shows neither.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    username: String,
    password: String,
}

impl Credential {
    pub fn new(username: String, password: String) -> Credential {
        Credential { username, password }
    }

    /// The `Authorization: Basic ...` value.
    pub fn basic(&self) -> String {
        format!("Basic {}", B64.encode(format!("{}:{}", self.username, self.password)))
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

/// What a registry's `/v2/` answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Challenge {
    /// 200: no authentication.
    Open,
    /// `Basic realm=...`.
    Basic,
    /// `Bearer realm=...,service=...`: get a token from the realm.
    Bearer { realm: String, service: Option<String> },
}

/// Per API host: the challenge (read once; a ping that failed is not sent again in the same run)
/// and tokens by scope (in memory only).
#[derive(Default)]
pub(super) struct HostAuth {
    pub challenge: OnceCell<Result<Challenge, RegistryError>>,
    pub tokens: Mutex<HashMap<String, String>>,
}

/// Parse a `WWW-Authenticate` header: the first Bearer or Basic challenge.
pub(super) fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, params) = header.split_once(char::is_whitespace).unwrap_or((header, ""));
    match scheme.to_ascii_lowercase().as_str() {
        "basic" => Some(Challenge::Basic),
        "bearer" => {
            let params = parse_params(params);
            let realm = params.get("realm")?.clone();
            Some(Challenge::Bearer { realm, service: params.get("service").cloned() })
        }
        _ => None,
    }
}

/// The anonymous token URL of a Bearer challenge (`realm?service=..&scope=..`, with the scope the
/// challenge names), for a host a registry redirected to (registry.k8s.io → Artifact Registry).
pub(super) fn bearer_token_url(header: &str) -> Option<String> {
    let header = header.trim();
    let (scheme, params) = header.split_once(char::is_whitespace)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let params = parse_params(params);
    let realm = params.get("realm")?;
    if !(realm.starts_with("https://") || realm.starts_with("http://")) {
        return None;
    }
    let mut url = realm.clone();
    for key in ["service", "scope"] {
        if let Some(v) = params.get(key) {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&format!("{key}={}", super::ops::encode_query(v)));
        }
    }
    Some(url)
}

/// `key="value", key=value` (values may hold commas inside quotes).
fn parse_params(s: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let value;
        if let Some(r) = rest.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = r.char_indices();
            let mut end = r.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            value = v;
            rest = &r[end.min(r.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_string();
            rest = &rest[end..];
        }
        rest = rest.trim_start().trim_start_matches(',').trim_start();
        out.insert(key, value);
    }
    out
}

/// The credentials in a `.dockerconfigjson` (`{"auths": {...}}`) or legacy `.dockercfg` (the
/// `auths` map itself), by registry. Entries with neither `auth` nor `username`+`password` are
/// skipped. Errors never quote the input.
pub(super) fn parse_docker_config(json: &[u8]) -> Result<Vec<(String, Credential)>, RegistryError> {
    let bad = |why: &str| RegistryError::Config(format!("pull secret: {why}"));
    let value: serde_json::Value = serde_json::from_slice(json).map_err(|_| bad("not valid JSON"))?;
    let auths = match value.get("auths") {
        Some(a) => a,
        None => &value,
    };
    let auths = auths.as_object().ok_or_else(|| bad("no \"auths\" object"))?;
    let mut out = Vec::new();
    for (key, entry) in auths {
        let registry = normalise_registry(key);
        let field = |name: &str| entry.get(name).and_then(|v| v.as_str()).filter(|s| !s.is_empty());
        let cred = if let Some(auth) = field("auth") {
            let decoded = B64.decode(auth.trim()).map_err(|_| bad(&format!("the auth of {registry} is not base64")))?;
            let text = String::from_utf8(decoded).map_err(|_| bad(&format!("the auth of {registry} is not UTF-8")))?;
            let (u, p) =
                text.split_once(':').ok_or_else(|| bad(&format!("the auth of {registry} is not user:password")))?;
            Credential::new(u.to_string(), p.to_string())
        } else if let (Some(u), Some(p)) = (field("username"), field("password")) {
            Credential::new(u.to_string(), p.to_string())
        } else {
            continue;
        };
        out.push((registry, cred));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed() {
        assert_eq!(
            parse_challenge(r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io""#),
            Some(Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into())
            })
        );
        assert_eq!(
            parse_challenge(r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:a/b:pull""#),
            Some(Challenge::Bearer { realm: "https://ghcr.io/token".into(), service: Some("ghcr.io".into()) })
        );
        assert_eq!(parse_challenge(r#"Basic realm="Registry Realm""#), Some(Challenge::Basic));
        assert_eq!(parse_challenge("Negotiate"), None);
        assert_eq!(parse_challenge("Bearer service=x"), None);
    }

    #[test]
    fn docker_config_credentials_are_read_and_never_shown() {
        let json = format!(
            r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{}"}},"ghcr.io":{{"username":"u","password":"s3cret"}},"empty.io":{{}}}}}}"#,
            B64.encode("hub:pw:with:colons")
        );
        let mut got = parse_docker_config(json.as_bytes()).unwrap();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, "docker.io");
        assert_eq!(got[0].1, Credential::new("hub".into(), "pw:with:colons".into()));
        assert_eq!(got[1].0, "ghcr.io");
        assert!(!format!("{got:?}").contains("s3cret"));
        let err = parse_docker_config(br#"{"auths":{"r.io":{"auth":"%%%s3cret"}}}"#).unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{err}");
        assert!(parse_docker_config(b"s3cret").unwrap_err().to_string().contains("not valid JSON"));
    }
}
