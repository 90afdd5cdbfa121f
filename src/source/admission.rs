//! The cluster's mutating admission configuration, read to name what changed a value at admission
//! (`engine::drift::admission` matches it): MutatingAdmissionPolicies, their bindings and
//! MutatingWebhookConfigurations, one cluster-scoped LIST each, and the Namespaces (their labels,
//! for namespace selectors). Reading only; a kind the cluster does not serve has no objects, and a
//! LIST that fails (forbidden) is kept as its error, for the report to say so.

use std::sync::Arc;

use serde_json::Value;

use crate::source::live::{Kinds, LiveReader};

/// The API group of admission configuration.
pub const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

/// One LIST: its objects, or why it could not be read.
pub type Listed = Result<Arc<Vec<Value>>, String>;

/// What the API server's mutating admission is configured with, as read.
#[derive(Debug, Clone)]
pub struct AdmissionConfig {
    /// MutatingAdmissionPolicies.
    pub policies: Listed,
    /// MutatingAdmissionPolicyBindings.
    pub bindings: Listed,
    /// MutatingWebhookConfigurations.
    pub webhooks: Listed,
    /// Namespaces (their labels).
    pub namespaces: Listed,
}

impl AdmissionConfig {
    /// Read the four LISTs (cached in `reader`, so a run reads each once).
    pub async fn read(kinds: &Kinds, reader: &LiveReader) -> AdmissionConfig {
        let list = |group: &'static str, kind: &'static str| async move {
            match kinds.resolve_preferred_listable(group, kind) {
                None => Ok(Arc::new(Vec::new())),
                Some(rk) => reader.list(&rk, None).await.map_err(|e| e.to_string()),
            }
        };
        let (policies, bindings, webhooks, namespaces) = tokio::join!(
            list(ADMISSION_GROUP, "MutatingAdmissionPolicy"),
            list(ADMISSION_GROUP, "MutatingAdmissionPolicyBinding"),
            list(ADMISSION_GROUP, "MutatingWebhookConfiguration"),
            list("", "Namespace"),
        );
        AdmissionConfig { policies, bindings, webhooks, namespaces }
    }
}
