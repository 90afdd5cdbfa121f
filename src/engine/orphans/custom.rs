//! Reading every served custom resource a scan needs for the generic reference pass: each
//! listable kind of every API group that is not Kubernetes' own (found by discovery, so no
//! permission on CustomResourceDefinitions is needed), in the scanned namespace (or all) for
//! namespaced kinds and cluster-wide for cluster-scoped ones. Paged, and capped per kind: a
//! kind with more objects than the cap, or one that may not be listed, is not read and is
//! reported as skipped ([`SkippedKind`]); the scan then marks what it could have referenced
//! instead of calling it an orphan (see `classify`).

use crate::report::orphans::SkippedKind;
use crate::report::progress::{Counter, Progress};
use crate::source::live::{Capped, Kinds, LiveReader, ResolvedKind};
use futures::future::join_all;

/// API groups served by Kubernetes itself (and the metrics APIs, which are aggregated, not
/// custom resources). Every other group is read by the generic pass.
const BUILT_IN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
    "metrics.k8s.io",
    "custom.metrics.k8s.io",
    "external.metrics.k8s.io",
];

/// Default of `--max-custom-objects`: objects read per custom resource kind (and namespace).
pub const DEFAULT_CAP: usize = 10_000;

fn resource_name(k: &ResolvedKind) -> String {
    format!("{}.{}", k.resource.plural, k.resource.group)
}

/// The custom resource kinds to read: every listable kind outside the built-in groups, except
/// those `exclude` names by (group, kind) (read on their own by the inventory).
pub fn custom_kinds(kinds: &Kinds, exclude: &[(&str, &str)]) -> Vec<ResolvedKind> {
    kinds
        .listable_resources(|g| !BUILT_IN_GROUPS.contains(&g))
        .into_iter()
        .filter(|k| !exclude.iter().any(|(g, kind)| *g == k.resource.group && *kind == k.resource.kind))
        .collect()
}

/// Read each kind (namespaced ones in `namespace`, or all), at most `cap` objects each
/// (`0`: no cap). Objects are trimmed as every listed object of a scan is
/// ([`super::trim::KEEP_NO_STATUS`]).
pub async fn read_custom_resources(
    reader: &LiveReader,
    kinds: &[ResolvedKind],
    namespace: Option<&str>,
    cap: usize,
    progress: &dyn Progress,
) -> (Vec<crate::engine::tree::IValue>, Vec<SkippedKind>) {
    let cap = if cap == 0 { usize::MAX } else { cap };
    let results = join_all(kinds.iter().map(|k| async move {
        let ns = if k.namespaced { namespace } else { None };
        let listed = reader.list_capped(k, ns, cap, super::trim::KEEP_NO_STATUS).await;
        if let Ok(Capped::All(items)) = &listed {
            progress.add(Counter::Objects, items.len() as u64);
        }
        progress.step(&k.resource.kind);
        (k, ns, listed)
    }))
    .await;
    let mut objects = Vec::new();
    let mut skipped = Vec::new();
    for (k, ns, result) in results {
        let reason = match result {
            Ok(Capped::All(items)) => {
                objects.extend(items);
                continue;
            }
            Ok(Capped::TooMany { at_least }) => {
                format!("{at_least} or more objects, over --max-custom-objects {cap}")
            }
            // Removed between discovery and the LIST: nothing to read.
            Err(e) if e.status_code() == Some(404) => continue,
            // Forbidden, unreachable, timed out: not read.
            Err(e) => e.to_string(),
        };
        skipped.push(SkippedKind {
            resource: resource_name(k),
            kind: k.resource.kind.clone(),
            namespace: ns.map(str::to_string),
            namespaced: k.namespaced,
            reason,
        });
    }
    skipped.sort_by(|a, b| a.resource.cmp(&b.resource));
    (objects, skipped)
}
