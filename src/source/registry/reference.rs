//! Image references as pod specs write them, parsed the way the container runtimes do.
//!
//! `nginx` is `docker.io/library/nginx`; the first path component is a registry host only when it
//! has a `.` or a `:` or is `localhost` (so `localhost:5000/app:1` and `[::1]:5000/app` name a port,
//! and `org/app` is a Docker Hub repository); the tag is what follows the last `:` after the last
//! `/`; `@sha256:...` is a digest, and a reference may carry both a tag and a digest (the runtime
//! then pulls by digest). Parsing is strict: a reference that does not follow the grammar is an
//! error naming it, never a guess.

use std::fmt;

use super::RegistryError;

/// The Docker Hub registry name as it is written in references.
pub const DOCKER_HUB: &str = "docker.io";
/// The host Docker Hub's registry API is served from.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";

/// A parsed image reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef {
    /// The registry as written (host, host:port, `[v6]:port`), `docker.io` for Docker Hub
    /// (`index.docker.io` and `registry-1.docker.io` are folded into it).
    pub registry: String,
    /// The repository path inside the registry (`library/nginx`, `org/team/app`).
    pub repository: String,
    /// The tag, if one is written (a reference with neither tag nor digest means `latest` to a
    /// runtime; see [`ImageRef::tag_or_latest`]).
    pub tag: Option<String>,
    /// The digest (`sha256:<64 hex>`), if one is written.
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parse a reference such as `nginx`, `nginx:1.27`, `ghcr.io/org/app:v1@sha256:...`,
    /// `127.0.0.1:5000/team/app:9.0-alpine`.
    pub fn parse(reference: &str) -> Result<ImageRef, RegistryError> {
        let bad =
            |reason: &str| RegistryError::BadReference { reference: reference.to_string(), reason: reason.into() };
        if reference.is_empty() {
            return Err(bad("it is empty"));
        }
        if reference.len() > 4096 || reference.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("it contains whitespace or control characters, or is too long"));
        }
        let (name_tag, digest) = match reference.split_once('@') {
            Some((n, d)) => {
                if !valid_digest(d) {
                    return Err(bad("the digest after '@' is not <algorithm>:<hex>"));
                }
                (n, Some(d.to_string()))
            }
            None => (reference, None),
        };
        // The tag is after the last ':' that follows the last '/' (a ':' before it is a port).
        let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_tag[last_slash..].rfind(':') {
            Some(i) => {
                let at = last_slash + i;
                (&name_tag[..at], Some(name_tag[at + 1..].to_string()))
            }
            None => (name_tag, None),
        };
        if let Some(t) = &tag
            && !valid_tag(t)
        {
            return Err(bad("the tag must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'"));
        }
        let (registry, path) = match name.split_once('/') {
            Some((first, rest)) if is_registry_host(first) => (first.to_string(), rest),
            _ => (DOCKER_HUB.to_string(), name),
        };
        if !valid_host(&registry) {
            return Err(bad("the registry host is not a valid host[:port]"));
        }
        let registry = match registry.as_str() {
            "index.docker.io" | "registry-1.docker.io" => DOCKER_HUB.to_string(),
            _ => registry,
        };
        if path.is_empty() || !path.split('/').all(valid_path_component) {
            return Err(bad(
                "the repository must be lowercase path components of [a-z0-9] joined by '.', '_', '__' or '-'",
            ));
        }
        let repository =
            if registry == DOCKER_HUB && !path.contains('/') { format!("library/{path}") } else { path.to_string() };
        if registry.len() + 1 + repository.len() > 255 {
            return Err(bad("the name is longer than 255 characters"));
        }
        Ok(ImageRef { registry, repository, tag, digest })
    }

    /// The tag a runtime pulls: the written one, else `latest` when no digest is written either.
    pub fn tag_or_latest(&self) -> Option<&str> {
        match (&self.tag, &self.digest) {
            (Some(t), _) => Some(t),
            (None, None) => Some("latest"),
            (None, Some(_)) => None,
        }
    }

    /// The host the registry API is served from (`registry-1.docker.io` for `docker.io`).
    pub fn api_host(&self) -> &str {
        api_host(&self.registry)
    }

    /// `registry/repository`, the key one tag list belongs to.
    pub fn repository_key(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

/// The host a registry's API is served from: Docker Hub's is not `docker.io`.
pub fn api_host(registry: &str) -> &str {
    if registry == DOCKER_HUB { DOCKER_HUB_API } else { registry }
}

impl fmt::Display for ImageRef {
    /// The fully qualified form (`docker.io/library/nginx:1.27`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Whether the first path component names a registry rather than a Docker Hub namespace.
fn is_registry_host(first: &str) -> bool {
    first.contains('.') || first.contains(':') || first == "localhost" || first.starts_with('[')
}

fn valid_host(host: &str) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        // [ipv6]:port or [ipv6]
        let Some((v6, after)) = rest.split_once(']') else { return false };
        if v6.is_empty() || !v6.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
            return false;
        }
        match after {
            "" => return true,
            a => match a.strip_prefix(':') {
                Some(p) => ("x", Some(p)),
                None => return false,
            },
        }
    } else {
        match host.rsplit_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty()
            || p.len() > 5
            || !p.chars().all(|c| c.is_ascii_digit())
            || p.parse::<u32>().unwrap_or(0) > 65535)
    {
        return false;
    }
    !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`
fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !is_alnum(b[0]) || !is_alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !is_alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`
pub(crate) fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// `<algorithm>:<hex>`, with sha256 needing exactly 64 and sha512 128 hex digits.
pub(crate) fn valid_digest(d: &str) -> bool {
    let Some((alg, hex)) = d.split_once(':') else { return false };
    let alg_ok = !alg.is_empty()
        && alg.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '.' | '_' | '-'));
    let hex_ok = hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
    let len_ok = match alg {
        "sha256" => hex.len() == 64,
        "sha512" => hex.len() == 128,
        _ => true,
    };
    alg_ok && hex_ok && len_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn p(s: &str) -> ImageRef {
        ImageRef::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn parts(r: &ImageRef) -> (&str, &str, Option<&str>, Option<&str>) {
        (&r.registry, &r.repository, r.tag.as_deref(), r.digest.as_deref())
    }

    #[test]
    fn docker_hub_names_are_normalised() {
        assert_eq!(parts(&p("nginx")), ("docker.io", "library/nginx", None, None));
        assert_eq!(parts(&p("nginx:1.27")), ("docker.io", "library/nginx", Some("1.27"), None));
        assert_eq!(parts(&p("bitnami/redis:7.2")), ("docker.io", "bitnami/redis", Some("7.2"), None));
        assert_eq!(parts(&p("docker.io/nginx")), ("docker.io", "library/nginx", None, None));
        assert_eq!(parts(&p("index.docker.io/library/nginx:1")), ("docker.io", "library/nginx", Some("1"), None));
        assert_eq!(parts(&p("registry-1.docker.io/org/app")), ("docker.io", "org/app", None, None));
        assert_eq!(p("nginx").api_host(), "registry-1.docker.io");
        assert_eq!(p("nginx").to_string(), "docker.io/library/nginx");
    }

    #[test]
    fn hosts_with_ports_are_not_tags() {
        let r = p("127.0.0.1:5000/team/app:9.0-alpine");
        assert_eq!(parts(&r), ("127.0.0.1:5000", "team/app", Some("9.0-alpine"), None));
        assert_eq!(r.api_host(), "127.0.0.1:5000");
        assert_eq!(parts(&p("localhost:5000/app")), ("localhost:5000", "app", None, None));
        assert_eq!(parts(&p("localhost/app:1")), ("localhost", "app", Some("1"), None));
        assert_eq!(parts(&p("[::1]:5000/app:v1")), ("[::1]:5000", "app", Some("v1"), None));
        assert_eq!(parts(&p("ghcr.io/org/team/app:v1.35.9")), ("ghcr.io", "org/team/app", Some("v1.35.9"), None));
        // A single component with a ':' is a Docker Hub image with a tag, not a host.
        assert_eq!(parts(&p("app:5000")), ("docker.io", "library/app", Some("5000"), None));
    }

    #[test]
    fn digests_alone_and_with_tags() {
        let r = p(&format!("quay.io/org/app@{D}"));
        assert_eq!(parts(&r), ("quay.io", "org/app", None, Some(D)));
        assert_eq!(r.tag_or_latest(), None);
        let r = p(&format!("registry.k8s.io:443/pause:3.10@{D}"));
        assert_eq!(parts(&r), ("registry.k8s.io:443", "pause", Some("3.10"), Some(D)));
        assert_eq!(r.tag_or_latest(), Some("3.10"));
        assert_eq!(r.to_string(), format!("registry.k8s.io:443/pause:3.10@{D}"));
        assert_eq!(p("nginx").tag_or_latest(), Some("latest"));
        assert_eq!(p(&format!("busybox@{D}")).repository_key(), "docker.io/library/busybox");
    }

    #[test]
    fn tags_of_many_shapes_parse() {
        for t in
            ["v1.35.9", "1.2.3", "9.0-alpine", "distroless-v1.39.1", "1.0.0-rc.1", "sha256-abc.sig", "latest", "_x"]
        {
            assert_eq!(p(&format!("h.io/a:{t}")).tag.as_deref(), Some(t));
        }
    }

    #[test]
    fn bad_references_are_errors_naming_them() {
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx:-x",
            "nginx:.x",
            "nginx@sha256:abc",
            "nginx@sha256",
            "h.io:99999/a",
            "h.io:/a",
            "h.io/A/b",
            "a//b",
            "a/b/",
            "a b",
            "h.io/a:1:2",
            "-h.io/a",
            "h.io/a..b",
            "h.io/a-",
            &format!("nginx:{}", "x".repeat(129)),
        ] {
            let err = ImageRef::parse(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn repository_separators_follow_the_grammar() {
        for ok in ["a.b", "a_b", "a__b", "a---b", "a1/b2"] {
            p(&format!("h.io/{ok}"));
        }
        for bad in ["a___b", "a._b", "_a", "a."] {
            assert!(ImageRef::parse(&format!("h.io/{bad}")).is_err(), "{bad}");
        }
    }
}
