//! Opt-in HTTP app probes: ask a running app for its version (`versions.probes` in the config).
//!
//! ```yaml
//! versions:
//!   probes:
//!     - image: "registry.example/acme/shop"   # glob over the repository, or repo:tag (like images)
//!       namespace: "shop*"                     # optional glob
//!       name: web                              # optional glob over the workload's name
//!       url: "http://{name}.{namespace}.svc:8080/version"   # {namespace} and {name}: the workload's
//!       json_pointer: /version                 # or: regex: 'version ([0-9.]+)' (group 1, else the match)
//!       token_env: SHOP_VERSION_TOKEN          # optional: Authorization: Bearer $SHOP_VERSION_TOKEN
//!       # username_env / password_env: Basic instead
//!       timeout: 5s                            # default 5s, at most 60s
//! ```
//! A probe is a plain GET of a URL the tool can reach (an Ingress or Service URL, or in-cluster
//! DNS when the dashboard runs in the cluster): never a port-forward, which is a create on
//! pods/portforward. Design decisions: docs/versions.md.
//!
//! This module holds the pure parts: checking a rule, filling its URL, reading the version out of
//! an answer, and judging a row by the probed version. The request goes through
//! [`super::images::RegistryApi::probe`].

use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use crate::engine::select::{RuleError, glob, image_glob};
use crate::engine::versions::judge;
use crate::engine::versions::tags::{Track, VersionTag};
use crate::report::versions::{VersionRow, VersionStatus};

/// The largest answer read from a probe.
pub const MAX_ANSWER: usize = 64 * 1024;
/// The longest version string accepted (anything longer is not a version).
const MAX_VERSION: usize = 64;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// One probe rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeRule {
    /// A glob over the normalised repository (`registry.example/acme/shop`), or `repo:tag`.
    #[serde(default)]
    pub image: Option<String>,
    /// A glob over the workload's namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// A glob over the workload's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The URL to GET; `{namespace}` and `{name}` are the workload's.
    pub url: String,
    /// An RFC 6901 JSON pointer to the version in a JSON answer.
    #[serde(default)]
    pub json_pointer: Option<String>,
    /// A regex over the answer: its first group, else the whole match.
    #[serde(default)]
    pub regex: Option<String>,
    /// The environment variable holding a Bearer token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The environment variables holding a Basic user name and password.
    #[serde(default)]
    pub username_env: Option<String>,
    #[serde(default)]
    pub password_env: Option<String>,
    /// How long to wait for the answer (`5s`).
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(skip)]
    compiled: Option<Regex>,
    #[serde(skip)]
    pub wait: Duration,
    /// Where the probe was written (`drift.yaml versions probe 1`), for its errors.
    #[serde(skip)]
    pub(crate) origin: String,
}

/// How the version is read out of the answer.
#[derive(Debug, Clone)]
pub enum Extract {
    Pointer(String),
    Regex(Regex),
}

/// One probe to send: the filled URL and the names of the credential variables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProbeRequest {
    pub url: String,
    pub token_env: Option<String>,
    pub username_env: Option<String>,
    pub password_env: Option<String>,
    pub timeout: Duration,
}

impl ProbeRule {
    /// Check the rule (`origin` names it in errors) and compile its regex.
    pub fn compile(&mut self, origin: &str) -> Result<(), RuleError> {
        let invalid = |message: String| RuleError::Invalid { rule: origin.to_string(), message };
        if self.image.is_none() && self.name.is_none() {
            return Err(invalid("a probe needs `image` or `name` to select workloads".into()));
        }
        check_url(&self.url).map_err(invalid)?;
        match (&self.json_pointer, &self.regex) {
            (Some(p), None) => {
                if !(p.is_empty() || p.starts_with('/')) {
                    return Err(invalid(format!("json_pointer {p:?} must start with `/` (RFC 6901)")));
                }
            }
            (None, Some(re)) => {
                let re = Regex::new(re).map_err(|e| invalid(format!("regex: {e}")))?;
                self.compiled = Some(re);
            }
            _ => return Err(invalid("give exactly one of `json_pointer` and `regex`".into())),
        }
        if self.token_env.is_some() && (self.username_env.is_some() || self.password_env.is_some()) {
            return Err(invalid("give `token_env` or `username_env` + `password_env`, not both".into()));
        }
        if self.username_env.is_some() != self.password_env.is_some() {
            return Err(invalid("`username_env` and `password_env` go together".into()));
        }
        self.wait = match &self.timeout {
            None => DEFAULT_TIMEOUT,
            Some(t) => {
                let secs = crate::report::duration::parse_duration(t).map_err(|e| invalid(format!("timeout: {e}")))?;
                let d = Duration::from_secs(secs);
                if d.is_zero() || d > MAX_TIMEOUT {
                    return Err(invalid(format!("timeout {t:?} must be between 1s and 60s")));
                }
                d
            }
        };
        Ok(())
    }

    /// Whether the rule selects a workload's image.
    pub fn selects(&self, repository: &str, tag: Option<&str>, namespace: &str, name: &str) -> bool {
        self.image.as_deref().is_none_or(|g| image_glob(g, repository, tag))
            && self.namespace.as_deref().is_none_or(|g| glob(g, namespace))
            && self.name.as_deref().is_none_or(|g| glob(g, name))
    }

    /// The request for one workload.
    pub fn request(&self, namespace: &str, name: &str) -> ProbeRequest {
        ProbeRequest {
            url: self.url.replace("{namespace}", namespace).replace("{name}", name),
            token_env: self.token_env.clone(),
            username_env: self.username_env.clone(),
            password_env: self.password_env.clone(),
            timeout: if self.wait.is_zero() { DEFAULT_TIMEOUT } else { self.wait },
        }
    }

    pub fn extract(&self) -> Extract {
        match (&self.compiled, &self.json_pointer) {
            (Some(re), _) => Extract::Regex(re.clone()),
            (None, p) => Extract::Pointer(p.clone().unwrap_or_default()),
        }
    }
}

/// A probe URL must be http(s) with a host and no credentials in it (credentials come from named
/// environment variables only, so they never reach an output through the URL).
fn check_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("url {url:?} is not an http:// or https:// URL"));
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!("url {url:?} is not an http:// or https:// URL"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(
            "url must not carry credentials (user:password@); use token_env or username_env/password_env".into()
        );
    }
    if authority.is_empty() {
        return Err(format!("url {url:?} has no host"));
    }
    Ok(())
}

/// The version in a probe's answer. Errors say what was wrong without repeating the answer (it
/// may hold anything); the version itself must look like one (at most 64 characters of letters,
/// digits and `.+-_`), so a pointer at the wrong field cannot print a secret.
pub fn extract_version(body: &[u8], how: &Extract) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not UTF-8 text".to_string())?;
    let found = match how {
        Extract::Pointer(p) => {
            let json: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("the answer is not JSON (line {}, column {})", e.line(), e.column()))?;
            match json.pointer(p) {
                None => return Err(format!("the answer has nothing at JSON pointer {p:?}")),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(serde_json::Value::Number(n)) => n.to_string(),
                Some(_) => return Err(format!("the answer's value at {p:?} is not a string or a number")),
            }
        }
        Extract::Regex(re) => {
            let Some(caps) = re.captures(text) else {
                return Err(format!("the regex {:?} matched nothing in the answer", re.as_str()));
            };
            caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_string()).unwrap_or_default()
        }
    };
    let found = found.trim().to_string();
    let version_like = !found.is_empty()
        && found.len() <= MAX_VERSION
        && found.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'));
    if !version_like {
        return Err(format!(
            "the answer's value is not a version ({} characters; expected at most {MAX_VERSION} of letters, digits and .+-_)",
            found.chars().count()
        ));
    }
    Ok(found)
}

/// Judge an image row by a probe's answer. On a floating tag the probed version is compared with
/// the repository's tags of the same shape (the tag rules); on a version tag the row was judged by
/// its tag and the probed version is shown beside it. A failed probe makes the row an error that
/// says why (never a guess); the tag's answer, if any, stays in `latest`.
pub fn probed_row(
    mut row: VersionRow,
    floating: bool,
    probe: &Result<String, String>,
    url: &str,
    tags: Option<&[String]>,
    track: Track,
) -> VersionRow {
    let version = match probe {
        Ok(v) => v.clone(),
        Err(e) => return row.error(format!("probe {url}: {e}")),
    };
    row.probed = Some(version.clone());
    if !floating {
        return row;
    }
    let Some(tags) = tags else {
        return row.unknown("no tag list to compare the probed version with");
    };
    if VersionTag::parse(&version).is_none() {
        return row.unknown(format!("probe {url}: the app reported {version:?}, which is not a version"));
    }
    let tag = row.installed.clone();
    // Apps often report `1.2.3` for an image tagged `v1.2.3` (or the reverse): when the version as
    // reported has no tags of its shape, the other spelling is tried.
    let other = match version.strip_prefix('v') {
        Some(bare) => bare.to_string(),
        None => format!("v{version}"),
    };
    let judged = |v: &str| {
        let mut r = row.clone();
        r.installed = v.to_string();
        judge::tagged_row(r, tags, track)
    };
    let mut row = judged(&version);
    if row.status == VersionStatus::Unknown && VersionTag::parse(&other).is_some() {
        let again = judged(&other);
        if again.status != VersionStatus::Unknown {
            row = again;
        }
    }
    if let Some(why) = row.why.take() {
        row.why = Some(format!("probed version: {why}"));
    }
    row.installed = tag;
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::versions::Category;

    fn rule(yaml: &str) -> Result<ProbeRule, RuleError> {
        let mut r: ProbeRule = serde_saphyr::from_str(yaml)
            .map_err(|e| RuleError::Invalid { rule: "test".into(), message: e.to_string() })?;
        r.compile("probe 1")?;
        Ok(r)
    }

    #[test]
    fn rules_are_checked() {
        let r =
            rule("{image: 'r/acme/*', url: 'http://{name}.{namespace}.svc:8080/v', json_pointer: /version}").unwrap();
        assert_eq!(r.request("shop", "web").url, "http://web.shop.svc:8080/v");
        assert_eq!(r.request("shop", "web").timeout, Duration::from_secs(5));
        assert!(r.selects("r/acme/app", Some("latest"), "shop", "web"));
        assert!(!r.selects("r/other/app", Some("latest"), "shop", "web"));
        let r = rule("{image: 'r/acme/app:latest', name: 'web*', url: 'https://h/v', regex: 'v(\\S+)', timeout: 2s}")
            .unwrap();
        assert!(r.selects("r/acme/app", Some("latest"), "x", "web-1"));
        assert!(!r.selects("r/acme/app", Some("1.0"), "x", "web-1"));
        assert!(!r.selects("r/acme/app", Some("latest"), "x", "api"));
        assert_eq!(r.request("x", "web").timeout, Duration::from_secs(2));
        for (bad, says) in [
            ("{url: 'http://h/v', json_pointer: /v}", "image"),
            ("{image: x, url: 'ftp://h/v', json_pointer: /v}", "http"),
            ("{image: x, url: 'http://u:p@h/v', json_pointer: /v}", "credentials"),
            ("{image: x, url: 'http://h/v'}", "exactly one"),
            ("{image: x, url: 'http://h/v', json_pointer: /v, regex: x}", "exactly one"),
            ("{image: x, url: 'http://h/v', json_pointer: v}", "RFC 6901"),
            ("{image: x, url: 'http://h/v', regex: '('}", "regex"),
            ("{image: x, url: 'http://h/v', regex: x, token_env: T, username_env: U, password_env: P}", "not both"),
            ("{image: x, url: 'http://h/v', regex: x, username_env: U}", "together"),
            ("{image: x, url: 'http://h/v', regex: x, timeout: 2h}", "60s"),
            ("{image: x, url: 'http://h/v', regex: x, tokenEnv: T}", "token_env"),
        ] {
            let e = rule(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn versions_are_read_from_json_or_text() {
        let p = |s: &str| Extract::Pointer(s.into());
        let body = br#"{"build":{"version":"1.4.2","commit":"abc"},"n":3,"token":"s3cr3t-canary value!"}"#;
        assert_eq!(extract_version(body, &p("/build/version")).unwrap(), "1.4.2");
        assert_eq!(extract_version(body, &p("/n")).unwrap(), "3");
        assert!(extract_version(body, &p("/missing")).unwrap_err().contains("nothing at"));
        assert!(extract_version(body, &p("/build")).unwrap_err().contains("not a string"));
        // A pointer at the wrong field never prints what it found.
        let e = extract_version(body, &p("/token")).unwrap_err();
        assert!(e.contains("not a version") && !e.contains("s3cr3t"), "{e}");
        let e = extract_version(b"<html>s3cr3t</html>", &p("/v")).unwrap_err();
        assert!(e.contains("not JSON") && !e.contains("s3cr3t"), "{e}");
        let re = |s: &str| Extract::Regex(Regex::new(s).unwrap());
        assert_eq!(extract_version(b"app version v2.0.1 (linux)", &re(r"version (v\S+)")).unwrap(), "v2.0.1");
        assert_eq!(extract_version(b"2.0.1\n", &re(r"[0-9.]+")).unwrap(), "2.0.1");
        assert!(extract_version(b"nothing", &re(r"version (\S+)")).unwrap_err().contains("matched nothing"));
        assert!(extract_version(&[0xff, 0xfe], &re("x")).unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn rows_are_judged_by_the_probed_version() {
        let tags: Vec<String> = ["1.0.0", "1.1.0", "1.1.1", "v9.9.9", "latest"].map(String::from).to_vec();
        let row = || VersionRow::new(Category::Workloads, "Deployment/web", "latest");
        let r = probed_row(row(), true, &Ok("1.1.0".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!(
            (r.status, r.installed.as_str(), r.probed.as_deref()),
            (VersionStatus::PatchBehind, "latest", Some("1.1.0"))
        );
        assert_eq!(r.latest.as_deref(), Some("1.1.1"));
        let r = probed_row(row(), true, &Ok("1.1.1".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!(r.status, VersionStatus::Current);
        // Only tags of the same shape: `2.0` has none.
        let r = probed_row(row(), true, &Ok("2.0".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!(r.status, VersionStatus::Unknown, "{r:?}");
        // A failed probe is an error naming it, never a guess.
        let r = probed_row(row(), true, &Err("HTTP 500".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!(r.status, VersionStatus::Error);
        assert_eq!(r.why.as_deref(), Some("probe http://h/v: HTTP 500"));
        assert!(r.probed.is_none());
        // On a version tag the probe is shown beside the tag's answer.
        let mut tagged = VersionRow::new(Category::Workloads, "Deployment/api", "1.0.0");
        tagged.status = VersionStatus::MinorBehind;
        let r = probed_row(tagged, false, &Ok("1.0.0-3-gabc".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!((r.status, r.probed.as_deref()), (VersionStatus::MinorBehind, Some("1.0.0-3-gabc")));
        // `1.0.0` reported, tags written `v1.0.0` (and the reverse): the other spelling is used.
        let v_tags: Vec<String> = ["v1.0.0", "v1.1.0", "latest"].map(String::from).to_vec();
        let r = probed_row(row(), true, &Ok("1.0.0".into()), "http://h/v", Some(&v_tags), Track::Major);
        assert_eq!(
            (r.status, r.installed.as_str(), r.probed.as_deref(), r.latest.as_deref()),
            (VersionStatus::MinorBehind, "latest", Some("1.0.0"), Some("v1.1.0"))
        );
        let bare_tags: Vec<String> = ["1.0.0", "1.1.0", "latest"].map(String::from).to_vec();
        let r = probed_row(row(), true, &Ok("v1.1.0".into()), "http://h/v", Some(&bare_tags), Track::Major);
        assert_eq!((r.status, r.probed.as_deref()), (VersionStatus::Current, Some("v1.1.0")));
        // Tags of the reported shape exist: they are the ones compared with.
        let r = probed_row(row(), true, &Ok("v1.1.1".into()), "http://h/v", Some(&tags), Track::Major);
        assert_eq!(r.latest.as_deref(), Some("v9.9.9"));
    }
}
