//! Helm's release encoding: `base64(gzip(json(release)))`, gzip optional for old releases.
//!
//! The input is the value of the `release` key as Helm wrote it (for a Secret, after the
//! Kubernetes API's own base64 layer has been removed). Every error names the storage object so
//! a corrupt revision can be found and fixed; nothing here panics on bad input.

use std::io::Read;

use base64::Engine;
use flate2::read::GzDecoder;

use super::release::Release;

/// Magic bytes Helm checks before gunzipping (gzip header with the deflate method).
const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// Largest decompressed release we accept: a stored release is capped near 1 MiB compressed,
/// so anything far beyond that is corrupt or hostile (a gzip bomb).
const MAX_DECOMPRESSED: u64 = 256 * 1024 * 1024;

/// Why a release storage object could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The `release` value is not valid base64.
    #[error("{object}: release data is not valid base64: {source}")]
    Base64 {
        object: String,
        #[source]
        source: base64::DecodeError,
    },
    /// The data starts like gzip but does not decompress.
    #[error("{object}: release data is not valid gzip: {source}")]
    Gzip {
        object: String,
        #[source]
        source: std::io::Error,
    },
    /// The decompressed release is larger than any real release could be.
    #[error("{object}: release data decompresses to more than {MAX_DECOMPRESSED} bytes")]
    TooLarge { object: String },
    /// The payload is not a JSON release record.
    #[error("{object}: release data is not a valid Helm release record: {source}")]
    Json {
        object: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Decode one stored release value. `object` names the storage object for error messages,
/// for example `Secret shop/sh.helm.release.v1.shop.v3`.
pub fn decode_release(object: &str, encoded: &[u8]) -> Result<Release, DecodeError> {
    let json = decode_payload(object, encoded)?;
    serde_json::from_slice(&json).map_err(|source| DecodeError::Json { object: object.to_string(), source })
}

/// base64-decode and, when the gzip magic is present, gunzip. Returns the JSON bytes.
pub fn decode_payload(object: &str, encoded: &[u8]) -> Result<Vec<u8>, DecodeError> {
    decode_payload_within(object, encoded, MAX_DECOMPRESSED)
}

/// [`decode_payload`] with the decompressed-size bound given (tests use a small one).
fn decode_payload_within(object: &str, encoded: &[u8], max: u64) -> Result<Vec<u8>, DecodeError> {
    let trimmed = trim_ascii_whitespace(encoded);
    let raw = base64::engine::general_purpose::STANDARD
        .decode(trimmed)
        .map_err(|source| DecodeError::Base64 { object: object.to_string(), source })?;
    if !raw.starts_with(&GZIP_MAGIC) {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(max as usize));
    let mut reader = GzDecoder::new(raw.as_slice()).take(max + 1);
    reader.read_to_end(&mut out).map_err(|source| DecodeError::Gzip { object: object.to_string(), source })?;
    if out.len() as u64 > max {
        return Err(DecodeError::TooLarge { object: object.to_string() });
    }
    Ok(out)
}

fn trim_ascii_whitespace(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |i| i + 1);
    &b[start..end]
}

/// Encode a release the way Helm does; used by tests to build storage objects.
pub fn encode_release(release_json: &[u8]) -> String {
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(release_json).expect("writing to a Vec cannot fail");
    let bytes = gz.finish().expect("finishing a gzip stream into a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    const OBJ: &str = "Secret shop/sh.helm.release.v1.shop.v1";

    fn sample_json() -> String {
        serde_json::json!({
            "name": "shop", "namespace": "shop", "version": 1,
            "info": {"first_deployed": "2026-01-01T00:00:00Z", "last_deployed": "0001-01-01T00:00:00Z",
                     "deleted": "", "description": "Install complete", "status": "deployed"},
            "chart": {"metadata": {"name": "shop", "version": "1.2.3", "appVersion": "4.5"}},
            "config": {"replicas": 2},
            "manifest": "---\n# Source: shop/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\n",
            "hooks": [{"name": "t", "kind": "Pod", "path": "shop/templates/test.yaml", "events": ["test"]}],
            "apply_method": "ssa",
            "some_future_field": {"x": 1}
        })
        .to_string()
    }

    #[test]
    fn decodes_gzipped_release() {
        let enc = encode_release(sample_json().as_bytes());
        let r = decode_release(OBJ, enc.as_bytes()).unwrap();
        assert_eq!(r.name, "shop");
        assert_eq!(r.revision, 1);
        assert_eq!(r.info.status, "deployed");
        assert_eq!(r.chart_name(), "shop");
        assert_eq!(r.chart_version(), "1.2.3");
        assert_eq!(r.app_version(), "4.5");
        assert_eq!(r.values(), serde_json::json!({"replicas": 2}));
        assert_eq!(r.apply_method.as_deref(), Some("ssa"));
        assert_eq!(r.hooks.len(), 1);
    }

    #[test]
    fn decodes_uncompressed_release_like_old_helm() {
        let enc = base64::engine::general_purpose::STANDARD.encode(sample_json());
        let r = decode_release(OBJ, enc.as_bytes()).unwrap();
        assert_eq!(r.name, "shop");
    }

    #[test]
    fn tolerates_helm4_null_and_missing_times() {
        let json = r#"{"name":"a","version":2,"info":{"first_deployed":null,"status":"deployed"},"manifest":""}"#;
        let r = decode_release(OBJ, encode_release(json.as_bytes()).as_bytes()).unwrap();
        assert_eq!(r.info.first_deployed, "");
        assert_eq!(r.info.last_deployed, "");
        assert!(r.chart.is_none());
        assert_eq!(r.values(), serde_json::json!({}));
    }

    #[test]
    fn bad_base64_names_the_object() {
        let err = decode_release(OBJ, b"!!!not base64!!!").unwrap_err();
        assert!(matches!(err, DecodeError::Base64 { .. }));
        assert!(err.to_string().contains(OBJ), "{err}");
    }

    #[test]
    fn bad_gzip_names_the_object() {
        let mut bytes = vec![0x1f, 0x8b, 0x08];
        bytes.extend_from_slice(b"definitely not deflate data");
        let enc = base64::engine::general_purpose::STANDARD.encode(bytes);
        let err = decode_release(OBJ, enc.as_bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Gzip { .. }), "{err:?}");
        assert!(err.to_string().contains(OBJ));
    }

    #[test]
    fn truncated_gzip_is_an_error() {
        let enc = encode_release(sample_json().as_bytes());
        let raw = base64::engine::general_purpose::STANDARD.decode(enc).unwrap();
        let cut = base64::engine::general_purpose::STANDARD.encode(&raw[..raw.len() / 2]);
        let err = decode_release(OBJ, cut.as_bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Gzip { .. }), "{err:?}");
    }

    #[test]
    fn truncated_json_names_the_object() {
        let json = sample_json();
        let enc = encode_release(&json.as_bytes()[..json.len() - 10]);
        let err = decode_release(OBJ, enc.as_bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Json { .. }));
        assert!(err.to_string().contains(OBJ));
    }

    #[test]
    fn gzip_bomb_stops_at_the_bound() {
        // 64 MiB of zeros gzip to about 64 KiB; with a 1 MiB bound the decoder stops after 1 MiB.
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        let enc = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
        let err = decode_payload_within(OBJ, enc.as_bytes(), 1 << 20).unwrap_err();
        assert!(matches!(err, DecodeError::TooLarge { .. }), "{err:?}");
        assert!(err.to_string().contains(OBJ), "{err}");
        assert!(decode_payload_within(OBJ, enc.as_bytes(), 64 << 20).is_ok(), "exactly at the bound is accepted");
    }

    #[test]
    fn deep_json_is_an_error_not_a_stack_overflow() {
        // serde_json stops at 128 levels of nesting; a release nested deeper is rejected.
        let deep = format!(r#"{{"name":"a","config":{}1{}}}"#, r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
        let err = decode_release(OBJ, encode_release(deep.as_bytes()).as_bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Json { .. }), "{err:?}");
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    #[test]
    fn json_of_wrong_shape_is_an_error() {
        let enc = encode_release(br#"{"name": 5}"#);
        assert!(matches!(decode_release(OBJ, enc.as_bytes()), Err(DecodeError::Json { .. })));
    }
}
