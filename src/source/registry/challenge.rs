//! `WWW-Authenticate` challenges and the token exchange they start: parsing a challenge, the
//! anonymous token URL of a Bearer challenge, the token endpoint's JSON answer, and query
//! encoding. What the host state (`auth`), the requests (`http`, which follows a redirect to
//! another host's token) and the operations (`ops`, which ask for a pull token) share, importing
//! none of them.

use std::collections::HashMap;

use serde::Deserialize;

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
            url.push_str(&format!("{key}={}", encode_query(v)));
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

/// A token endpoint's JSON answer.
#[derive(Deserialize)]
pub(super) struct Token {
    #[serde(default)]
    pub(super) token: Option<String>,
    #[serde(default)]
    pub(super) access_token: Option<String>,
}

impl Token {
    /// The token from a realm's JSON answer (`token`, else `access_token`).
    pub(super) fn from_json(body: &[u8]) -> Option<String> {
        let t: Token = serde_json::from_slice(body).ok()?;
        t.token.or(t.access_token).filter(|t| !t.is_empty())
    }
}

/// A query value, percent-encoded (letters, digits and `-_.~:/` as they are).
pub(super) fn encode_query(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
    fn token_queries_are_encoded() {
        assert_eq!(encode_query("repository:org/app:pull"), "repository:org/app:pull");
        assert_eq!(encode_query("a b&c"), "a%20b%26c");
    }
}
