//! Registry authentication: credentials (held in memory, never shown), each host's challenge and
//! tokens (the challenges themselves are parsed in `challenge`), and pull secrets'
//! `.dockerconfigjson`.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use tokio::sync::OnceCell;

use super::challenge::Challenge;
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

/// Per API host: the challenge (read once; a ping that failed is not sent again in the same run)
/// and tokens by scope (in memory only).
#[derive(Default)]
pub(super) struct HostAuth {
    pub challenge: OnceCell<Result<Challenge, RegistryError>>,
    pub tokens: Mutex<HashMap<String, String>>,
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
