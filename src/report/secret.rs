//! Secret values: decoding them as the API server does, the fingerprints the watch-fed cache keeps
//! instead of the bytes, and the redaction text every output shows in their place.

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::path::FieldPath;

/// Base64 as the API server decodes a `[]byte` field (Go's `base64.StdEncoding` in
/// `encoding/json`): the standard alphabet, padding required, non-zero trailing bits accepted
/// (`YR==` is stored as `YQ==`). Line breaks are dropped before decoding ([`api_base64`]); any
/// other character outside the alphabet, a space included, is refused.
const API_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
);

/// Decode base64 text the way the API server does (see [`API_BASE64`]); `None` where it would
/// refuse the text.
pub fn api_base64(s: &str) -> Option<Vec<u8>> {
    match s.contains(['\r', '\n']) {
        true => API_BASE64.decode(s.replace(['\r', '\n'], "")).ok(),
        false => API_BASE64.decode(s).ok(),
    }
}

/// Decode a Secret data value (base64) to bytes; `None` if it is not valid base64.
pub fn secret_bytes(v: &Value) -> Option<Vec<u8>> {
    api_base64(v.as_str()?)
}

/// `sha256:HEX:LEN`: a Secret value's bytes kept without the bytes. Never valid base64 (`:`), so
/// never mistaken for a value the API server returns.
pub fn secret_fingerprint_of(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}:{}", bytes.len())
}

/// (sha256 hex, length) of a fingerprint made by [`secret_fingerprint_of`].
pub fn parse_secret_fingerprint(s: &str) -> Option<(&str, usize)> {
    let rest = s.strip_prefix("sha256:")?;
    let (hex, len) = rest.split_once(':')?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(())?;
    Some((hex, len.parse().ok()?))
}

/// `<redacted, N bytes, sha256:abcd1234>` for a secret value's bytes.
pub fn redaction(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("<redacted, {} bytes, sha256:{hex}>", bytes.len())
}

/// Redact a Secret value found at `path` (values under `data` are base64; under `stringData`
/// they are text). Maps and lists are redacted member by member so key names stay visible.
pub fn redact_value(v: &Value, base64_encoded: bool) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| (k.clone(), redact_value(x, base64_encoded))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| redact_value(x, base64_encoded)).collect()),
        Value::Null => Value::Null,
        Value::String(s) => {
            // A value the watch-fed cache kept only as its fingerprint: the same redaction.
            if let Some((hex, len)) = parse_secret_fingerprint(s) {
                return Value::String(format!("<redacted, {len} bytes, sha256:{}>", &hex[..8]));
            }
            let bytes = if base64_encoded {
                secret_bytes(v).unwrap_or_else(|| s.as_bytes().to_vec())
            } else {
                s.as_bytes().to_vec()
            };
            Value::String(redaction(&bytes))
        }
        other => Value::String(redaction(other.to_string().as_bytes())),
    }
}

/// Whether a field of an object of `kind` holds secret material.
pub fn is_secret_field(kind: &str, path: &FieldPath) -> bool {
    kind == "Secret" && (path.starts_with(&["data"]) || path.starts_with(&["stringData"]) || path.segs().is_empty())
}

/// Whether a key of a chart's values names secret material, so its value is redacted where values
/// are shown (`compare`): its name holds password, passwd, secret, token, credential, apikey,
/// api_key, privatekey, private_key, accesskey, access_key, dsn or connectionstring, in any case;
/// or it is `pass`, `pwd` or `key`, or ends in `Pass`, `Pwd` or `Key`.
pub fn is_secret_key(key: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "token",
        "credential",
        "apikey",
        "api_key",
        "api-key",
        "privatekey",
        "private_key",
        "private-key",
        "accesskey",
        "access_key",
        "access-key",
        "dsn",
        "connectionstring",
        "connection_string",
    ];
    let lower = key.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w))
        || matches!(lower.as_str(), "pass" | "pwd" | "key")
        || ["Pass", "Pwd", "Key", "_pass", "_pwd", "_key", "-key"].iter().any(|s| key.ends_with(s))
}

/// Whether a values path holds secret material: one of its keys does ([`is_secret_key`]).
pub fn is_secret_value_path(path: &FieldPath) -> bool {
    path.segs().iter().any(|s| matches!(s, super::path::Seg::Key(k) if is_secret_key(k)))
}

#[cfg(test)]
mod secret_key_tests {
    use super::*;

    #[test]
    fn secret_like_value_keys() {
        for k in ["password", "dbPassword", "DB_PASSWORD", "apiToken", "clientSecret", "awsAccessKey", "key", "tlsKey"]
        {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["replicaCount", "image", "keyboard", "monkey", "host", "passive"] {
            assert!(!is_secret_key(k), "{k}");
        }
        let path = FieldPath::root().key("db").key("auth").key("password").key("x");
        assert!(is_secret_value_path(&path));
        assert!(!is_secret_value_path(&FieldPath::root().key("db").key("host")));
    }
}
