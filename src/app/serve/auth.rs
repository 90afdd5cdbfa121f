//! `--auth kubernetes`: every request carries `Authorization: Bearer TOKEN`; the token is
//! checked with a TokenReview, and the user it names is authorised with a SubjectAccessReview
//! against a verb and resource from the config (`serve.authorization`), the way
//! kube-rbac-proxy does. Both are `create` calls that store nothing: the only non-read calls the
//! server makes. Decisions are cached for 30 seconds per token and verb.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::source::cluster::Cluster;

/// The SubjectAccessReview's resource attributes (config `serve.authorization`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceCheck {
    /// Default: `get` for GET and HEAD, `create` for POST (as kube-rbac-proxy maps methods).
    #[serde(default)]
    pub verb: Option<String>,
    #[serde(default)]
    pub group: String,
    #[serde(default = "default_resource")]
    pub resource: String,
    #[serde(default = "default_subresource")]
    pub subresource: String,
    /// Default: the namespace given with -n, else `kubectl-drift`.
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default = "default_name")]
    pub name: String,
}

fn default_resource() -> String {
    "services".into()
}
fn default_subresource() -> String {
    "proxy".into()
}
fn default_name() -> String {
    "kubectl-drift".into()
}

impl Default for ResourceCheck {
    fn default() -> Self {
        ResourceCheck {
            verb: None,
            group: String::new(),
            resource: default_resource(),
            subresource: default_subresource(),
            namespace: None,
            name: default_name(),
        }
    }
}

/// What the checks decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed {
        user: String,
    },
    /// No token, or one the cluster does not accept (401).
    Unauthenticated(String),
    /// A known user without the permission (403).
    Forbidden {
        user: String,
        reason: String,
    },
    /// The API server could not be asked (503; not cached).
    Unavailable(String),
}

pub struct Authenticator {
    check: ResourceCheck,
    namespace: String,
    cache: Mutex<HashMap<(String, String), (Decision, Instant)>>,
}

const CACHE_FOR: Duration = Duration::from_secs(30);

impl Authenticator {
    pub fn new(check: Option<ResourceCheck>, namespace: Option<String>) -> Authenticator {
        let check = check.unwrap_or_default();
        let namespace = check.namespace.clone().or(namespace).unwrap_or_else(|| "kubectl-drift".into());
        Authenticator { check, namespace, cache: Mutex::new(HashMap::new()) }
    }

    /// The verb a request needs.
    pub fn verb_for(&self, method: &http::Method) -> String {
        self.check.verb.clone().unwrap_or_else(|| if method == http::Method::POST { "create" } else { "get" }.into())
    }

    /// What the SubjectAccessReview asks, for messages: `get services/proxy kubectl-drift in kubectl-drift`.
    pub fn describe(&self, verb: &str) -> String {
        let res = if self.check.subresource.is_empty() {
            self.check.resource.clone()
        } else {
            format!("{}/{}", self.check.resource, self.check.subresource)
        };
        let group = if self.check.group.is_empty() { String::new() } else { format!(".{}", self.check.group) };
        format!("{verb} {res}{group} {} in namespace {}", self.check.name, self.namespace)
    }

    pub async fn decide(&self, cluster: &Cluster, token: Option<&str>, method: &http::Method) -> Decision {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return Decision::Unauthenticated("no bearer token (send Authorization: Bearer TOKEN)".into());
        };
        let verb = self.verb_for(method);
        let key = (format!("{:x}", Sha256::digest(token.as_bytes())), verb.clone());
        {
            let cache = super::lock(&self.cache);
            if let Some((d, at)) = cache.get(&key)
                && at.elapsed() < CACHE_FOR
            {
                return d.clone();
            }
        }
        let decision = self.ask(cluster, token, &verb).await;
        if !matches!(decision, Decision::Unavailable(_)) {
            let mut cache = super::lock(&self.cache);
            if cache.len() > 1000 {
                cache.clear();
            }
            cache.insert(key, (decision.clone(), Instant::now()));
        }
        decision
    }

    async fn ask(&self, cluster: &Cluster, token: &str, verb: &str) -> Decision {
        let client = cluster.client().clone();
        let review =
            TokenReview { spec: TokenReviewSpec { token: token.to_string(), audiences: None }, ..Default::default() };
        let reviewed = match Api::<TokenReview>::all(client.clone()).create(&PostParams::default(), &review).await {
            Ok(r) => r,
            Err(e) => return Decision::Unavailable(format!("TokenReview failed: {e}")),
        };
        let status = reviewed.status.unwrap_or_default();
        if status.authenticated != Some(true) {
            return Decision::Unauthenticated(
                status
                    .error
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "the cluster does not accept this token".into()),
            );
        }
        let user = status.user.unwrap_or_default();
        let name = user.username.clone().unwrap_or_default();
        let sar = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(self.check.group.clone()),
                    resource: Some(self.check.resource.clone()),
                    subresource: Some(self.check.subresource.clone()),
                    namespace: Some(self.namespace.clone()),
                    name: Some(self.check.name.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        match Api::<SubjectAccessReview>::all(client).create(&PostParams::default(), &sar).await {
            Ok(r) => {
                let st = r.status.unwrap_or_default();
                if st.allowed {
                    Decision::Allowed { user: name }
                } else {
                    let why = st.reason.filter(|r| !r.is_empty()).map(|r| format!(": {r}")).unwrap_or_default();
                    Decision::Forbidden {
                        reason: format!("user {name:?} may not {}{why}", self.describe(verb)),
                        user: name,
                    }
                }
            }
            Err(e) => Decision::Unavailable(format!("SubjectAccessReview failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_description() {
        let a = Authenticator::new(None, None);
        assert_eq!(a.verb_for(&http::Method::GET), "get");
        assert_eq!(a.verb_for(&http::Method::POST), "create");
        assert_eq!(a.describe("get"), "get services/proxy kubectl-drift in namespace kubectl-drift");
        let c: ResourceCheck =
            serde_json::from_value(serde_json::json!({"verb": "list", "group": "drift.example", "resource": "dashboards", "subresource": "", "name": "x"}))
                .unwrap();
        let a = Authenticator::new(Some(c), Some("ops".into()));
        assert_eq!(a.verb_for(&http::Method::POST), "list");
        assert_eq!(a.describe("list"), "list dashboards.drift.example x in namespace ops");
        assert!(serde_json::from_value::<ResourceCheck>(serde_json::json!({"verbs": "x"})).is_err());
    }
}
