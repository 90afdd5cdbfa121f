//! Listing what a scan needs: one LIST per kind per namespace (or cluster-wide with `-A`),
//! through the shared, cached, paged [`LiveReader`]. Which lists are needed follows from the
//! kinds examined ([`needs`]), so `--kinds configmap` reads no RBAC and a namespace-scoped user
//! can run it. ConfigMaps and Secrets are listed as metadata only: their data never leaves the
//! API server.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value;

use super::custom::{custom_kinds, read_custom_resources};
use super::trim::{CRON_JOB, ENDPOINT_SLICE, JOB, KEEP_NO_STATUS, KEEP_PV_PHASE, POD, TEMPLATE, USER_TEMPLATE};
use crate::engine::tree::{IValue, as_array, as_str, pointer};
use crate::report::orphan_kinds::ExaminedKind;
use crate::report::orphans::SkippedKind;
use crate::report::progress::{Counter, Progress};
use crate::source::live::{Kinds, LiveError, LiveReader, ResolvedKind};

/// One list a scan can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    Pods,
    Deployments,
    StatefulSets,
    DaemonSets,
    ReplicaSets,
    Jobs,
    CronJobs,
    /// Argo Rollouts (`argoproj.io`), which carry a pod template, when served.
    Rollouts,
    ConfigMaps,
    Secrets,
    ServiceAccounts,
    /// ServiceAccounts in namespaces outside the scan that bindings in it name as subjects.
    SubjectServiceAccounts,
    Services,
    EndpointSlices,
    PersistentVolumeClaims,
    PersistentVolumes,
    Roles,
    ClusterRoles,
    /// RoleBindings in the scanned namespace(s).
    RoleBindings,
    /// RoleBindings in every namespace (they can name ServiceAccounts and ClusterRoles of any).
    AllRoleBindings,
    ClusterRoleBindings,
    HorizontalPodAutoscalers,
    PodDisruptionBudgets,
    NetworkPolicies,
    Ingresses,
    StorageClasses,
    PriorityClasses,
    /// Gateway API Gateways in every namespace (listeners may name Secrets across namespaces).
    Gateways,
    Issuers,
    ClusterIssuers,
    Certificates,
    ValidatingWebhooks,
    MutatingWebhooks,
    ApiServices,
    /// Helm release storage Secrets (label `owner=helm`), metadata only.
    HelmStorageSecrets,
    /// Helm release storage ConfigMaps (`HELM_DRIVER=configmap`), metadata only.
    HelmStorageConfigMaps,
    /// CSI VolumeSnapshotClasses (`snapshot.storage.k8s.io`), when served.
    VolumeSnapshotClasses,
    /// Gateway API routes, when served: in the scanned namespace(s), plus (one-namespace scan)
    /// the namespaces a ReferenceGrant there lets route to it.
    HttpRoutes,
    GrpcRoutes,
    TlsRoutes,
    TcpRoutes,
    UdpRoutes,
    /// Gateway API ReferenceGrants, which allow cross-namespace references into their namespace.
    ReferenceGrants,
    /// Every other served custom resource (see [`super::custom`]), whole, capped per kind.
    CustomResources,
}

/// Gateway API route kinds, and how they are listed.
pub const ROUTES: &[(Source, &str)] = &[
    (Source::HttpRoutes, "HTTPRoute"),
    (Source::GrpcRoutes, "GRPCRoute"),
    (Source::TlsRoutes, "TLSRoute"),
    (Source::TcpRoutes, "TCPRoute"),
    (Source::UdpRoutes, "UDPRoute"),
];

/// The Gateway API group.
pub const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// Where a source is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The scanned namespace, or every namespace with `-A`.
    Scan,
    /// Always cluster-wide.
    Cluster,
}

struct SourceSpec {
    group: &'static str,
    kind: &'static str,
    reach: Reach,
    metadata_only: bool,
    labels: &'static str,
    /// A kind from an add-on (Gateway API, cert-manager, Argo): skipped when not served.
    optional: bool,
}

impl Source {
    fn spec(self) -> SourceSpec {
        use Reach::*;
        let s =
            |group, kind, reach| SourceSpec { group, kind, reach, metadata_only: false, labels: "", optional: false };
        match self {
            Source::Pods => s("", "Pod", Scan),
            Source::Deployments => s("apps", "Deployment", Scan),
            Source::StatefulSets => s("apps", "StatefulSet", Scan),
            Source::DaemonSets => s("apps", "DaemonSet", Scan),
            Source::ReplicaSets => s("apps", "ReplicaSet", Scan),
            Source::Jobs => s("batch", "Job", Scan),
            Source::CronJobs => s("batch", "CronJob", Scan),
            Source::Rollouts => SourceSpec { optional: true, ..s("argoproj.io", "Rollout", Scan) },
            Source::ConfigMaps => SourceSpec { metadata_only: true, ..s("", "ConfigMap", Scan) },
            Source::Secrets => SourceSpec { metadata_only: true, ..s("", "Secret", Scan) },
            Source::ServiceAccounts | Source::SubjectServiceAccounts => s("", "ServiceAccount", Scan),
            Source::Services => s("", "Service", Scan),
            Source::EndpointSlices => s("discovery.k8s.io", "EndpointSlice", Scan),
            Source::PersistentVolumeClaims => s("", "PersistentVolumeClaim", Scan),
            Source::PersistentVolumes => s("", "PersistentVolume", Cluster),
            Source::Roles => s("rbac.authorization.k8s.io", "Role", Scan),
            Source::ClusterRoles => s("rbac.authorization.k8s.io", "ClusterRole", Cluster),
            Source::RoleBindings => s("rbac.authorization.k8s.io", "RoleBinding", Scan),
            Source::AllRoleBindings => s("rbac.authorization.k8s.io", "RoleBinding", Cluster),
            Source::ClusterRoleBindings => s("rbac.authorization.k8s.io", "ClusterRoleBinding", Cluster),
            Source::HorizontalPodAutoscalers => s("autoscaling", "HorizontalPodAutoscaler", Scan),
            Source::PodDisruptionBudgets => s("policy", "PodDisruptionBudget", Scan),
            Source::NetworkPolicies => s("networking.k8s.io", "NetworkPolicy", Scan),
            Source::Ingresses => s("networking.k8s.io", "Ingress", Scan),
            Source::StorageClasses => s("storage.k8s.io", "StorageClass", Cluster),
            Source::PriorityClasses => s("scheduling.k8s.io", "PriorityClass", Cluster),
            Source::Gateways => SourceSpec { optional: true, ..s("gateway.networking.k8s.io", "Gateway", Cluster) },
            Source::Issuers => SourceSpec { optional: true, ..s("cert-manager.io", "Issuer", Scan) },
            Source::ClusterIssuers => SourceSpec { optional: true, ..s("cert-manager.io", "ClusterIssuer", Cluster) },
            Source::Certificates => SourceSpec { optional: true, ..s("cert-manager.io", "Certificate", Scan) },
            Source::ValidatingWebhooks => s("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", Cluster),
            Source::MutatingWebhooks => s("admissionregistration.k8s.io", "MutatingWebhookConfiguration", Cluster),
            Source::ApiServices => s("apiregistration.k8s.io", "APIService", Cluster),
            Source::HelmStorageSecrets => {
                SourceSpec { metadata_only: true, labels: "owner=helm", ..s("", "Secret", Scan) }
            }
            Source::HelmStorageConfigMaps => {
                SourceSpec { metadata_only: true, labels: "owner=helm", ..s("", "ConfigMap", Scan) }
            }
            Source::VolumeSnapshotClasses => {
                SourceSpec { optional: true, ..s("snapshot.storage.k8s.io", "VolumeSnapshotClass", Cluster) }
            }
            Source::HttpRoutes => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "HTTPRoute", Scan) },
            Source::GrpcRoutes => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "GRPCRoute", Scan) },
            Source::TlsRoutes => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "TLSRoute", Scan) },
            Source::TcpRoutes => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "TCPRoute", Scan) },
            Source::UdpRoutes => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "UDPRoute", Scan) },
            Source::ReferenceGrants => SourceSpec { optional: true, ..s(GATEWAY_GROUP, "ReferenceGrant", Scan) },
            // Not one kind: listed by `custom::read_custom_resources`.
            Source::CustomResources => SourceSpec { optional: true, ..s("", "", Scan) },
        }
    }

    /// The source whose objects are the candidates of an examined kind.
    pub fn of_kind(kind: ExaminedKind) -> Source {
        use ExaminedKind as K;
        match kind {
            K::ConfigMap => Source::ConfigMaps,
            K::Secret => Source::Secrets,
            K::ServiceAccount => Source::ServiceAccounts,
            K::Service => Source::Services,
            K::PersistentVolumeClaim => Source::PersistentVolumeClaims,
            K::PersistentVolume => Source::PersistentVolumes,
            K::Role => Source::Roles,
            K::ClusterRole => Source::ClusterRoles,
            K::RoleBinding => Source::RoleBindings,
            K::ClusterRoleBinding => Source::ClusterRoleBindings,
            K::HorizontalPodAutoscaler => Source::HorizontalPodAutoscalers,
            K::PodDisruptionBudget => Source::PodDisruptionBudgets,
            K::NetworkPolicy => Source::NetworkPolicies,
            K::Ingress => Source::Ingresses,
            K::Deployment => Source::Deployments,
            K::StatefulSet => Source::StatefulSets,
            K::Job => Source::Jobs,
            K::StorageClass => Source::StorageClasses,
            K::PriorityClass => Source::PriorityClasses,
        }
    }
}

/// Everything that can hold a pod spec or template.
pub const POD_USERS: &[Source] = &[
    Source::Pods,
    Source::Deployments,
    Source::StatefulSets,
    Source::DaemonSets,
    Source::ReplicaSets,
    Source::Jobs,
    Source::CronJobs,
    Source::Rollouts,
];

/// The lists needed to class the objects of `kind`: its own, and every possible user.
pub fn needs(kind: ExaminedKind) -> Vec<Source> {
    use ExaminedKind as K;
    use Source as S;
    let mut v = vec![Source::of_kind(kind), S::HelmStorageSecrets, S::HelmStorageConfigMaps];
    let extra: &[Source] = match kind {
        K::ConfigMap => &[S::Ingresses, S::Gateways, S::ReferenceGrants, S::CustomResources],
        K::Secret => &[
            S::ServiceAccounts,
            S::Ingresses,
            S::Gateways,
            S::Issuers,
            S::ClusterIssuers,
            S::Certificates,
            S::PersistentVolumes,
            S::StorageClasses,
            S::VolumeSnapshotClasses,
            S::ReferenceGrants,
            S::CustomResources,
        ],
        K::ServiceAccount => &[S::AllRoleBindings, S::ClusterRoleBindings, S::Secrets, S::CustomResources],
        K::Service => &[
            S::EndpointSlices,
            S::Ingresses,
            S::ValidatingWebhooks,
            S::MutatingWebhooks,
            S::ApiServices,
            S::HttpRoutes,
            S::GrpcRoutes,
            S::TlsRoutes,
            S::TcpRoutes,
            S::UdpRoutes,
            S::ReferenceGrants,
            S::CustomResources,
        ],
        K::PersistentVolumeClaim => &[S::CustomResources],
        K::PersistentVolume => &[S::PersistentVolumeClaims],
        K::Role => &[S::RoleBindings],
        K::ClusterRole => &[S::AllRoleBindings, S::ClusterRoleBindings],
        K::RoleBinding => &[S::Roles, S::ClusterRoles, S::ServiceAccounts, S::SubjectServiceAccounts],
        K::ClusterRoleBinding => &[S::ClusterRoles, S::ServiceAccounts, S::SubjectServiceAccounts],
        K::HorizontalPodAutoscaler => &[S::Deployments, S::StatefulSets, S::ReplicaSets, S::Rollouts],
        K::PodDisruptionBudget | K::NetworkPolicy | K::PriorityClass => POD_USERS,
        K::Ingress => &[S::Services],
        K::Deployment | K::StatefulSet => &[S::HorizontalPodAutoscalers],
        K::Job => &[],
        K::StorageClass => &[S::PersistentVolumes, S::PersistentVolumeClaims],
    };
    v.extend_from_slice(extra);
    if matches!(kind, K::ConfigMap | K::Secret | K::ServiceAccount | K::Service | K::PersistentVolumeClaim) {
        v.extend_from_slice(POD_USERS);
    }
    v
}

/// Why the objects needed for a scan could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// A needed kind is not served (a core kind missing from discovery).
    #[error("cannot examine {examined}: {source}")]
    NotServed {
        examined: String,
        #[source]
        source: LiveError,
    },
    /// A LIST failed (forbidden, unreachable, timeout): the scan would be incomplete.
    #[error("cannot examine {examined}, the scan would be incomplete: {source}")]
    List {
        examined: String,
        #[source]
        source: LiveError,
    },
}

/// The listed objects of one scan, by source, each trimmed to what the evidence reads and held
/// compact ([`IValue`]: see `source::live::CompactListing`) from the page it came in on.
#[derive(Debug, Default, Clone)]
pub struct Inventory {
    lists: HashMap<Source, Vec<Arc<Vec<IValue>>>>,
    /// The scanned namespace, or `None` for every namespace.
    pub namespace: Option<String>,
    /// Custom resource kinds that were not read (over the cap, forbidden, failed).
    pub skipped: Vec<SkippedKind>,
    /// Releases read from Helm's SQL storage (`HELM_DRIVER=sql`), which is not in the cluster.
    pub sql_releases: Vec<crate::source::helm::ReleaseSummary>,
}

impl Inventory {
    /// An inventory built from objects in memory (tests, fixtures).
    pub fn from_objects(namespace: Option<&str>, lists: Vec<(Source, Vec<Value>)>) -> Inventory {
        let mut inv = Inventory { namespace: namespace.map(str::to_string), ..Default::default() };
        for (s, objs) in lists {
            inv.lists.entry(s).or_default().push(Arc::new(objs.into_iter().map(IValue::from).collect()));
        }
        inv
    }

    /// Every object of a source (empty when it was not listed or is not served).
    pub fn get(&self, source: Source) -> impl Iterator<Item = &IValue> {
        self.lists.get(&source).into_iter().flatten().flat_map(|l| l.iter())
    }

    /// Keep only the given sources (what a scan of fewer kinds would have listed).
    pub fn restricted(&self, sources: &BTreeSet<Source>) -> Inventory {
        Inventory {
            lists: self.lists.iter().filter(|(s, _)| sources.contains(s)).map(|(s, l)| (*s, l.clone())).collect(),
            namespace: self.namespace.clone(),
            skipped: if sources.contains(&Source::CustomResources) { self.skipped.clone() } else { Vec::new() },
            sql_releases: self.sql_releases.clone(),
        }
    }
}

fn resolve(kinds: &Kinds, source: Source) -> Option<ResolvedKind> {
    let spec = source.spec();
    kinds.resolve_preferred(spec.group, spec.kind)
}

/// Which examined kinds a source is listed for (for error messages).
fn examined_for(source: Source, examined: &[ExaminedKind]) -> String {
    let names: Vec<&str> = examined.iter().filter(|k| needs(**k).contains(&source)).map(|k| k.kind()).collect();
    names.join(", ")
}

/// The sources that are custom resources read on their own (not by the generic pass).
const OWN_CUSTOM_SOURCES: &[Source] = &[
    Source::Rollouts,
    Source::Gateways,
    Source::Issuers,
    Source::ClusterIssuers,
    Source::Certificates,
    Source::VolumeSnapshotClasses,
    Source::HttpRoutes,
    Source::GrpcRoutes,
    Source::TlsRoutes,
    Source::TcpRoutes,
    Source::UdpRoutes,
    Source::ReferenceGrants,
];

/// List everything the examined kinds need, in `namespace` (or everywhere when `None`),
/// reading at most `custom_cap` objects per custom resource kind (`0`: no cap). `progress`
/// hears of each LIST done and the objects it brought.
pub async fn collect(
    kinds: &Kinds,
    reader: &LiveReader,
    examined: &[ExaminedKind],
    namespace: Option<&str>,
    custom_cap: usize,
    progress: &dyn Progress,
) -> Result<Inventory, InventoryError> {
    let sources: BTreeSet<Source> =
        examined.iter().flat_map(|k| needs(*k)).filter(|s| *s != Source::SubjectServiceAccounts).collect();
    let mut inv = Inventory { namespace: namespace.map(str::to_string), ..Default::default() };
    let custom_kinds = if sources.contains(&Source::CustomResources) {
        let specs: Vec<SourceSpec> = OWN_CUSTOM_SOURCES.iter().map(|s| s.spec()).collect();
        let exclude: Vec<(&str, &str)> = specs.iter().map(|s| (s.group, s.kind)).collect();
        custom_kinds(kinds, &exclude)
    } else {
        Vec::new()
    };
    let custom = async {
        if !sources.contains(&Source::CustomResources) {
            return (Vec::new(), Vec::new());
        }
        read_custom_resources(reader, &custom_kinds, namespace, custom_cap, progress).await
    };
    let mut jobs = Vec::new();
    for source in sources.iter().filter(|s| **s != Source::CustomResources) {
        let spec = source.spec();
        let Some(resolved) = resolve(kinds, *source) else {
            if spec.optional {
                continue;
            }
            return Err(InventoryError::NotServed {
                examined: examined_for(*source, examined),
                source: LiveError::NotServed { api_version: spec.group.to_string(), kind: spec.kind.to_string() },
            });
        };
        let ns = match spec.reach {
            Reach::Scan => namespace.map(str::to_string),
            Reach::Cluster => None,
        };
        jobs.push((*source, resolved, vec![ns]));
    }
    let lists = jobs.iter().map(|(_, _, namespaces)| namespaces.len()).sum::<usize>() + custom_kinds.len();
    progress.start("listing", Some(lists as u64));
    let fixed = join_all(jobs.iter().flat_map(|(source, resolved, namespaces)| {
        namespaces
            .iter()
            .map(move |ns| async move { (*source, list_one(reader, *source, resolved, ns.as_deref(), progress).await) })
    }));
    let (results, (custom_objects, skipped)) = futures::join!(fixed, custom);
    if sources.contains(&Source::CustomResources) {
        inv.lists.entry(Source::CustomResources).or_default().push(Arc::new(custom_objects));
    }
    inv.skipped = skipped;
    for (source, listing) in results {
        let listing =
            listing.map_err(|e| InventoryError::List { examined: examined_for(source, examined), source: e })?;
        inv.lists.entry(source).or_default().push(listing);
    }

    // Second round, only for a one-namespace scan: ServiceAccounts of other namespaces that
    // bindings name, and Helm release storage of releases that live in another namespace.
    if let Some(scan_ns) = namespace {
        let mut second: Vec<(Source, String)> = Vec::new();
        if examined.contains(&ExaminedKind::RoleBinding) || examined.contains(&ExaminedKind::ClusterRoleBinding) {
            let mut nss = BTreeSet::new();
            for b in inv.get(Source::RoleBindings).chain(inv.get(Source::ClusterRoleBindings)) {
                for subj in b.get("subjects").and_then(as_array).into_iter().flatten() {
                    let n = subj.get("namespace").and_then(as_str).unwrap_or("");
                    if subj.get("kind").and_then(as_str) == Some("ServiceAccount") && !n.is_empty() && n != scan_ns {
                        nss.insert(n.to_string());
                    }
                }
            }
            second.extend(nss.into_iter().map(|n| (Source::SubjectServiceAccounts, n)));
        }
        let mut release_nss = BTreeSet::new();
        for k in examined {
            for o in inv.get(Source::of_kind(*k)) {
                if let Some(rn) = pointer(o, "/metadata/annotations/meta.helm.sh~1release-namespace").and_then(as_str)
                    && rn != scan_ns
                    && !rn.is_empty()
                {
                    release_nss.insert(rn.to_string());
                }
            }
        }
        for n in release_nss {
            second.push((Source::HelmStorageSecrets, n.clone()));
            second.push((Source::HelmStorageConfigMaps, n));
        }
        // Gateway API routes of other namespaces that a ReferenceGrant here lets name a Service.
        for (source, route_kind) in ROUTES {
            if !sources.contains(source) {
                continue;
            }
            let mut nss = BTreeSet::new();
            for g in inv.get(Source::ReferenceGrants) {
                let to_services = pointer(g, "/spec/to").and_then(as_array).into_iter().flatten().any(|t| {
                    t.get("kind").and_then(as_str) == Some("Service")
                        && t.get("group").and_then(as_str).unwrap_or("").is_empty()
                });
                for f in pointer(g, "/spec/from").and_then(as_array).into_iter().flatten() {
                    let from_ns = f.get("namespace").and_then(as_str).unwrap_or("");
                    if to_services
                        && f.get("group").and_then(as_str) == Some(GATEWAY_GROUP)
                        && f.get("kind").and_then(as_str) == Some(*route_kind)
                        && !from_ns.is_empty()
                        && from_ns != scan_ns
                    {
                        nss.insert(from_ns.to_string());
                    }
                }
            }
            second.extend(nss.into_iter().map(|n| (*source, n)));
        }
        let resolved: Vec<(Source, ResolvedKind, String)> =
            second.into_iter().filter_map(|(s, n)| resolve(kinds, s).map(|r| (s, r, n))).collect();
        if !resolved.is_empty() {
            progress.start("listing other namespaces", Some(resolved.len() as u64));
        }
        let results = join_all(
            resolved.iter().map(|(s, r, n)| async move { (*s, list_one(reader, *s, r, Some(n), progress).await) }),
        )
        .await;
        for (source, listing) in results {
            let listing =
                listing.map_err(|e| InventoryError::List { examined: examined_for(source, examined), source: e })?;
            inv.lists.entry(source).or_default().push(listing);
        }
    }
    Ok(inv)
}

async fn list_one(
    reader: &LiveReader,
    source: Source,
    kind: &ResolvedKind,
    namespace: Option<&str>,
    progress: &dyn Progress,
) -> Result<Arc<Vec<IValue>>, LiveError> {
    let spec = source.spec();
    let trim = match source {
        Source::Pods => POD,
        Source::Deployments | Source::StatefulSets | Source::Rollouts => TEMPLATE,
        Source::DaemonSets | Source::ReplicaSets => USER_TEMPLATE,
        Source::Jobs => JOB,
        Source::CronJobs => CRON_JOB,
        Source::EndpointSlices => ENDPOINT_SLICE,
        Source::PersistentVolumes => KEEP_PV_PHASE,
        _ => KEEP_NO_STATUS,
    };
    let listed = reader.list_trimmed(kind, namespace, spec.metadata_only, spec.labels, trim).await;
    if let Ok(objects) = &listed {
        progress.add(Counter::Objects, objects.len() as u64);
    }
    progress.step(&kind.resource.kind);
    listed
}
