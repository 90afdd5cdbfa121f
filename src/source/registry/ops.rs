//! The registry operations behind [`Registries`]: authentication per request, tag lists with
//! paging, and digests.

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::auth::HostAuth;
use super::challenge::{Challenge, Token, encode_query, parse_challenge};
use super::http::{CachedBody, Req, RequestKind, resolve};
use super::{Digests, PlatformManifest, Registries, RegistryError, api_host, media, reference};

#[derive(Deserialize)]
struct TagList {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Vec<IndexEntry>,
}

#[derive(Deserialize)]
struct IndexEntry {
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    os: String,
    architecture: String,
    #[serde(default)]
    variant: Option<String>,
}

impl Registries {
    pub(super) async fn fetch_tags(&self, registry: &str, repository: &str) -> Result<Vec<String>, RegistryError> {
        let base = self.base_url(registry);
        let mut url = format!("{base}/v2/{repository}/tags/list?n={}", self.options.page_size.max(1));
        let what = format!("tags of {repository}");
        let mut tags = Vec::new();
        let mut pages = 0;
        loop {
            pages += 1;
            if pages > self.options.max_tag_pages {
                return Err(RegistryError::TooManyPages {
                    registry: registry.to_string(),
                    repository: repository.to_string(),
                    pages: self.options.max_tag_pages,
                });
            }
            let got = self
                .registry_fetch(
                    Method::GET,
                    registry,
                    repository,
                    &url,
                    "application/json",
                    RequestKind::TagList,
                    Some(self.options.cache_ttl),
                    &what,
                )
                .await?;
            let list: TagList = serde_json::from_slice(&got.body).map_err(|e| RegistryError::BadResponse {
                registry: registry.to_string(),
                what: what.clone(),
                reason: format!("not a tag list: {e}"),
            })?;
            tags.extend(list.tags.unwrap_or_default());
            match got.header("link").and_then(next_link) {
                Some(next) => {
                    let next = resolve(&url, &next);
                    if next == url {
                        break;
                    }
                    url = next;
                }
                None => break,
            }
        }
        Ok(tags)
    }

    pub(super) async fn resolve_digests(
        &self,
        registry: &str,
        repository: &str,
        reference: &str,
    ) -> Result<Digests, RegistryError> {
        let base = self.base_url(registry);
        let by_digest = reference::valid_digest(reference);
        let ttl = if by_digest { None } else { Some(self.options.cache_ttl) };
        let what = format!("manifest {repository}{}{reference}", if by_digest { "@" } else { ":" });
        let url = format!("{base}/v2/{repository}/manifests/{reference}");
        let head = self
            .registry_fetch(
                Method::HEAD,
                registry,
                repository,
                &url,
                media::ACCEPT_MANIFESTS,
                RequestKind::ManifestHead,
                ttl,
                &what,
            )
            .await?;
        let mut digest =
            head.header("docker-content-digest").filter(|d| reference::valid_digest(d)).map(str::to_string);
        if digest.is_none() && by_digest {
            digest = Some(reference.to_string());
        }
        let mut media_type = head.header("content-type").map(|m| m.split(';').next().unwrap_or(m).trim().to_string());
        let needs_body = digest.is_none() || media_type.as_deref().is_none_or(media::is_index);
        if !needs_body {
            let d = digest.expect("checked above");
            return Ok(Digests {
                digest: d.clone(),
                media_type: media_type.unwrap_or_default(),
                index: None,
                manifests: vec![PlatformManifest { digest: d, platform: None }],
            });
        }
        // The index (by its digest: content that never changes) or a HEAD that gave no digest.
        let (get_url, get_ttl) = match &digest {
            Some(d) => (format!("{base}/v2/{repository}/manifests/{d}"), None),
            None => (url.clone(), ttl),
        };
        let body = self
            .registry_fetch(
                Method::GET,
                registry,
                repository,
                &get_url,
                media::ACCEPT_MANIFESTS,
                RequestKind::ManifestGet,
                get_ttl,
                &what,
            )
            .await?;
        let digest = match digest.or_else(|| body.header("docker-content-digest").map(str::to_string)) {
            Some(d) => d,
            None => format!("sha256:{}", hex(&Sha256::digest(&body.body))),
        };
        let parsed: Index = serde_json::from_slice(&body.body).map_err(|e| RegistryError::BadResponse {
            registry: registry.to_string(),
            what: what.clone(),
            reason: format!("not a manifest: {e}"),
        })?;
        if media_type.as_deref().is_none_or(str::is_empty) {
            media_type = parsed.media_type.clone().or_else(|| body.header("content-type").map(str::to_string));
        }
        let media_type = media_type.unwrap_or_default();
        if media::is_index(&media_type) {
            let manifests = parsed
                .manifests
                .into_iter()
                .map(|m| PlatformManifest {
                    digest: m.digest,
                    platform: m.platform.map(|p| match p.variant {
                        Some(v) => format!("{}/{}/{v}", p.os, p.architecture),
                        None => format!("{}/{}", p.os, p.architecture),
                    }),
                })
                .collect();
            Ok(Digests { digest: digest.clone(), media_type, index: Some(digest), manifests })
        } else {
            Ok(Digests {
                digest: digest.clone(),
                media_type,
                index: None,
                manifests: vec![PlatformManifest { digest, platform: None }],
            })
        }
    }

    /// A request to a registry: from the cache when fresh (no ping, no token), else with the
    /// Authorization the host's challenge asks for; a 401 gets a new token once. 2xx only.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn registry_fetch(
        &self,
        method: Method,
        registry: &str,
        repository: &str,
        url: &str,
        accept: &str,
        kind: RequestKind,
        ttl: Option<Duration>,
        what: &str,
    ) -> Result<CachedBody, RegistryError> {
        if let Some(hit) = self.http.fresh(&method, url, accept, ttl) {
            return Ok(hit);
        }
        let mut authorization = self.authorization(registry, repository, false).await?;
        let mut retried = false;
        loop {
            let req =
                Req { method: method.clone(), url, accept, kind, authorization: authorization.as_deref(), extra: &[] };
            let got = self.http.cached(req, ttl).await?;
            if got.status == 401 && !retried && authorization.as_deref().is_some_and(|a| a.starts_with("Bearer ")) {
                retried = true;
                authorization = self.authorization(registry, repository, true).await?;
                continue;
            }
            return match got.status {
                200..=299 => Ok(got),
                401 | 403 => Err(self.refused(registry, what, got.status)),
                404 => Err(RegistryError::NotFound { registry: registry.to_string(), what: what.to_string() }),
                status => Err(RegistryError::Status { registry: registry.to_string(), what: what.to_string(), status }),
            };
        }
    }

    fn refused(&self, registry: &str, what: &str, status: u16) -> RegistryError {
        let reason = match (self.credential(registry).is_some(), status) {
            (true, 401) => "the credentials were refused",
            (true, _) => "the credentials give no pull access",
            (false, _) => "no credentials are configured for this registry",
        };
        RegistryError::Unauthorized {
            registry: registry.to_string(),
            what: what.to_string(),
            status,
            reason: reason.into(),
        }
    }

    /// The Authorization header for a request to `registry/repository` (`None`: the registry is
    /// open). The host is pinged once; Bearer tokens are kept per repository scope, in memory.
    async fn authorization(
        &self,
        registry: &str,
        repository: &str,
        refresh: bool,
    ) -> Result<Option<String>, RegistryError> {
        let state: Arc<HostAuth> = {
            let mut map = self.auth.lock().expect("auth lock");
            map.entry(api_host(registry).to_string()).or_default().clone()
        };
        let challenge = state.challenge.get_or_init(|| self.ping(registry)).await.clone()?;
        match challenge {
            Challenge::Open => Ok(None),
            Challenge::Basic => match self.credential(registry) {
                Some(c) => Ok(Some(c.basic())),
                None => Err(RegistryError::Unauthorized {
                    registry: registry.to_string(),
                    what: format!("repository {repository}"),
                    status: 401,
                    reason: "the registry asks for Basic credentials and none are configured".into(),
                }),
            },
            Challenge::Bearer { realm, service } => {
                let scope = format!("repository:{repository}:pull");
                if !refresh && let Some(t) = state.tokens.lock().expect("token lock").get(&scope) {
                    return Ok(Some(format!("Bearer {t}")));
                }
                let token = self.fetch_token(registry, repository, &realm, service.as_deref(), &scope).await?;
                state.tokens.lock().expect("token lock").insert(scope, token.clone());
                Ok(Some(format!("Bearer {token}")))
            }
        }
    }

    async fn ping(&self, registry: &str) -> Result<Challenge, RegistryError> {
        let url = format!("{}/v2/", self.base_url(registry));
        let req = Req {
            method: Method::GET,
            url: &url,
            accept: "application/json",
            kind: RequestKind::Ping,
            authorization: None,
            extra: &[],
        };
        let got = self.http.send(&req, None).await?;
        match got.status {
            200..=299 => Ok(Challenge::Open),
            401 => got.header("www-authenticate").and_then(parse_challenge).ok_or_else(|| RegistryError::BadResponse {
                registry: registry.to_string(),
                what: "the /v2/ API".into(),
                reason: "HTTP 401 without a Basic or Bearer challenge".into(),
            }),
            status => {
                Err(RegistryError::Status { registry: registry.to_string(), what: "the /v2/ API".into(), status })
            }
        }
    }

    async fn fetch_token(
        &self,
        registry: &str,
        repository: &str,
        realm: &str,
        service: Option<&str>,
        scope: &str,
    ) -> Result<String, RegistryError> {
        let mut url = realm.to_string();
        let mut sep = if url.contains('?') { '&' } else { '?' };
        if let Some(s) = service {
            url.push_str(&format!("{sep}service={}", encode_query(s)));
            sep = '&';
        }
        url.push_str(&format!("{sep}scope={}", encode_query(scope)));
        let credential = self.credential(registry);
        let basic = credential.as_ref().map(|c| c.basic());
        let req = Req {
            method: Method::GET,
            url: &url,
            accept: "application/json",
            kind: RequestKind::Token,
            authorization: basic.as_deref(),
            extra: &[],
        };
        let what = format!("a pull token for {repository}");
        let got = self.http.send(&req, None).await?;
        match got.status {
            200..=299 => {
                let t: Token = serde_json::from_slice(&got.body).map_err(|_| RegistryError::BadResponse {
                    registry: registry.to_string(),
                    what: what.clone(),
                    reason: "the token endpoint answered no JSON".into(),
                })?;
                t.token.or(t.access_token).filter(|t| !t.is_empty()).ok_or_else(|| RegistryError::BadResponse {
                    registry: registry.to_string(),
                    what,
                    reason: "the token endpoint answered no token".into(),
                })
            }
            401 | 403 => Err(self.refused(registry, &what, got.status)),
            status => Err(RegistryError::Status { registry: registry.to_string(), what, status }),
        }
    }
}

/// The `rel="next"` target of a Link header.
pub(super) fn next_link(header: &str) -> Option<String> {
    for part in header.split(',') {
        let part = part.trim();
        let (target, params) = part.split_once(';').unwrap_or((part, ""));
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let is_next = params.split(';').any(|p| {
            let p = p.trim().to_ascii_lowercase();
            p == "rel=\"next\"" || p == "rel=next"
        });
        if is_next {
            return Some(target.to_string());
        }
    }
    None
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_headers_give_the_next_page() {
        assert_eq!(
            next_link(r#"</v2/org/app/tags/list?last=9.1-alpine&n=3>; rel="next""#).as_deref(),
            Some("/v2/org/app/tags/list?last=9.1-alpine&n=3")
        );
        assert_eq!(next_link(r#"<https://x/a>; rel="prev", <https://x/b>; rel=next"#).as_deref(), Some("https://x/b"));
        assert_eq!(next_link(r#"<https://x/a>; rel="prev""#), None);
    }
}
