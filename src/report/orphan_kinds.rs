//! The kinds `orphans` examines: their API group, scope, the names `--kinds` accepts, and the
//! word used in reasons.

use std::fmt;

/// A kind whose objects can be classed orphan, in use, managed, protected or ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ExaminedKind {
    /// (The default only stands in while a saved report is read back; see `of_kind`.)
    #[default]
    ConfigMap,
    Secret,
    ServiceAccount,
    Service,
    PersistentVolumeClaim,
    PersistentVolume,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    HorizontalPodAutoscaler,
    PodDisruptionBudget,
    NetworkPolicy,
    Ingress,
    /// Only Deployments scaled to zero are examined.
    Deployment,
    /// Only StatefulSets scaled to zero are examined.
    StatefulSet,
    /// Only finished Jobs that no CronJob keeps are examined.
    Job,
    StorageClass,
    PriorityClass,
}

use ExaminedKind::*;

impl ExaminedKind {
    pub const ALL: [ExaminedKind; 19] = [
        ConfigMap,
        Secret,
        ServiceAccount,
        Service,
        PersistentVolumeClaim,
        PersistentVolume,
        Role,
        ClusterRole,
        RoleBinding,
        ClusterRoleBinding,
        HorizontalPodAutoscaler,
        PodDisruptionBudget,
        NetworkPolicy,
        Ingress,
        Deployment,
        StatefulSet,
        Job,
        StorageClass,
        PriorityClass,
    ];

    /// The examined kind of this API kind name (`ConfigMap`), if it is one.
    pub fn of_kind(kind: &str) -> Option<ExaminedKind> {
        ExaminedKind::ALL.into_iter().find(|k| k.kind() == kind)
    }

    /// The kind as the API spells it.
    pub fn kind(self) -> &'static str {
        match self {
            ConfigMap => "ConfigMap",
            Secret => "Secret",
            ServiceAccount => "ServiceAccount",
            Service => "Service",
            PersistentVolumeClaim => "PersistentVolumeClaim",
            PersistentVolume => "PersistentVolume",
            Role => "Role",
            ClusterRole => "ClusterRole",
            RoleBinding => "RoleBinding",
            ClusterRoleBinding => "ClusterRoleBinding",
            HorizontalPodAutoscaler => "HorizontalPodAutoscaler",
            PodDisruptionBudget => "PodDisruptionBudget",
            NetworkPolicy => "NetworkPolicy",
            Ingress => "Ingress",
            Deployment => "Deployment",
            StatefulSet => "StatefulSet",
            Job => "Job",
            StorageClass => "StorageClass",
            PriorityClass => "PriorityClass",
        }
    }

    /// The API group ("" for core).
    pub fn group(self) -> &'static str {
        match self {
            ConfigMap | Secret | ServiceAccount | Service | PersistentVolumeClaim | PersistentVolume => "",
            Role | ClusterRole | RoleBinding | ClusterRoleBinding => "rbac.authorization.k8s.io",
            HorizontalPodAutoscaler => "autoscaling",
            PodDisruptionBudget => "policy",
            NetworkPolicy | Ingress => "networking.k8s.io",
            Deployment | StatefulSet => "apps",
            Job => "batch",
            StorageClass => "storage.k8s.io",
            PriorityClass => "scheduling.k8s.io",
        }
    }

    pub fn namespaced(self) -> bool {
        !matches!(self, PersistentVolume | ClusterRole | ClusterRoleBinding | StorageClass | PriorityClass)
    }

    /// The resource as kubectl names it unambiguously: `configmaps`, `deployments.apps`.
    pub fn resource(self) -> String {
        let plural = match self {
            NetworkPolicy => "networkpolicies".to_string(),
            PriorityClass => "priorityclasses".to_string(),
            StorageClass => "storageclasses".to_string(),
            Ingress => "ingresses".to_string(),
            other => format!("{}s", other.kind().to_ascii_lowercase()),
        };
        if self.group().is_empty() { plural } else { format!("{plural}.{}", self.group()) }
    }

    /// Names accepted by `--kinds` (case-insensitive): singular, plural and kubectl's short name.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            ConfigMap => &["configmap", "configmaps", "cm"],
            Secret => &["secret", "secrets"],
            ServiceAccount => &["serviceaccount", "serviceaccounts", "sa"],
            Service => &["service", "services", "svc"],
            PersistentVolumeClaim => &["persistentvolumeclaim", "persistentvolumeclaims", "pvc"],
            PersistentVolume => &["persistentvolume", "persistentvolumes", "pv"],
            Role => &["role", "roles"],
            ClusterRole => &["clusterrole", "clusterroles"],
            RoleBinding => &["rolebinding", "rolebindings"],
            ClusterRoleBinding => &["clusterrolebinding", "clusterrolebindings"],
            HorizontalPodAutoscaler => &["horizontalpodautoscaler", "horizontalpodautoscalers", "hpa"],
            PodDisruptionBudget => &["poddisruptionbudget", "poddisruptionbudgets", "pdb"],
            NetworkPolicy => &["networkpolicy", "networkpolicies", "netpol"],
            Ingress => &["ingress", "ingresses", "ing"],
            Deployment => &["deployment", "deployments", "deploy"],
            StatefulSet => &["statefulset", "statefulsets", "sts"],
            Job => &["job", "jobs"],
            StorageClass => &["storageclass", "storageclasses", "sc"],
            PriorityClass => &["priorityclass", "priorityclasses", "pc"],
        }
    }

    /// Parse one `--kinds` entry.
    pub fn parse(s: &str) -> Option<ExaminedKind> {
        let s = s.trim().to_ascii_lowercase();
        ExaminedKind::ALL.into_iter().find(|k| k.aliases().contains(&s.as_str()))
    }
}

impl fmt::Display for ExaminedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// Which kinds to examine: the `--kinds` list, or every kind the scope allows (cluster-scoped
/// kinds only across all namespaces, where every possible user of them is seen).
pub fn select_kinds(requested: &[String], all_namespaces: bool) -> Result<Vec<ExaminedKind>, KindsError> {
    if requested.is_empty() {
        return Ok(ExaminedKind::ALL.into_iter().filter(|k| all_namespaces || k.namespaced()).collect());
    }
    let mut out = Vec::new();
    for r in requested.iter().flat_map(|r| r.split(',')).filter(|r| !r.trim().is_empty()) {
        let kind = ExaminedKind::parse(r).ok_or_else(|| KindsError::Unknown { name: r.trim().to_string() })?;
        if !kind.namespaced() && !all_namespaces {
            return Err(KindsError::NeedsAllNamespaces { kind });
        }
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    out.sort();
    Ok(out)
}

/// A `--kinds` value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KindsError {
    /// Not a kind orphans examines.
    #[error("--kinds: {name:?} is not a kind orphans examines (one of: {})", known_kinds())]
    Unknown { name: String },
    /// A cluster-scoped kind asked for in a one-namespace scan.
    #[error("--kinds: {kind} is cluster-scoped; its users can be in any namespace, so it is only examined with -A")]
    NeedsAllNamespaces { kind: ExaminedKind },
}

fn known_kinds() -> String {
    ExaminedKind::ALL.iter().map(|k| k.aliases()[0]).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_parse() {
        assert_eq!(ExaminedKind::parse("CM"), Some(ConfigMap));
        assert_eq!(ExaminedKind::parse("networkpolicies"), Some(NetworkPolicy));
        assert_eq!(ExaminedKind::parse("Deployment"), Some(Deployment));
        assert_eq!(ExaminedKind::parse("pods"), None);
    }

    #[test]
    fn resources() {
        assert_eq!(ConfigMap.resource(), "configmaps");
        assert_eq!(NetworkPolicy.resource(), "networkpolicies.networking.k8s.io");
        assert_eq!(HorizontalPodAutoscaler.resource(), "horizontalpodautoscalers.autoscaling");
        assert_eq!(Ingress.resource(), "ingresses.networking.k8s.io");
        assert_eq!(PriorityClass.resource(), "priorityclasses.scheduling.k8s.io");
        // Every plural is also an alias.
        for k in ExaminedKind::ALL {
            let plural = k.resource().split('.').next().unwrap().to_string();
            assert!(k.aliases().contains(&plural.as_str()), "{k}");
        }
    }

    #[test]
    fn selection() {
        let ns_only = select_kinds(&[], false).unwrap();
        assert!(ns_only.iter().all(|k| k.namespaced()));
        assert_eq!(select_kinds(&[], true).unwrap().len(), 19);
        let picked = select_kinds(&["secret,cm".into(), "cm".into()], false).unwrap();
        assert_eq!(picked, vec![ConfigMap, Secret]);
        assert!(matches!(select_kinds(&["pv".into()], false), Err(KindsError::NeedsAllNamespaces { .. })));
        assert!(select_kinds(&["pv".into()], true).is_ok());
        assert!(matches!(select_kinds(&["pods".into()], true), Err(KindsError::Unknown { .. })));
    }
}
