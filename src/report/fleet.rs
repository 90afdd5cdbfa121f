//! Results across clusters: what every command returns, whatever the number of clusters (one
//! kube context, several, or every one of the kubeconfig), so a script written for one cluster
//! works for ten. Each entry names its cluster and holds its report, or why the cluster could not
//! be read; one cluster's error never hides another's report. docs/output.md "Clusters".

use serde::{Deserialize, Serialize};

use super::Status;

/// The schema of a run's output (`schemaVersion` 2: results by cluster).
pub const SCHEMA_VERSION: u32 = 2;

/// A run's results, one entry per cluster, in the order the clusters were named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fleet<T> {
    pub schema_version: u32,
    pub clusters: Vec<ClusterResult<T>>,
}

/// One cluster's report, or its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterResult<T> {
    /// The kube context.
    pub cluster: String,
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub report: Option<T>,
    /// Why the cluster could not be read (unreachable, refused credentials, forbidden, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl<T> ClusterResult<T> {
    pub fn report(cluster: String, report: T) -> ClusterResult<T> {
        ClusterResult { cluster, report: Some(report), error: None }
    }

    pub fn error(cluster: String, error: String) -> ClusterResult<T> {
        ClusterResult { cluster, report: None, error: Some(error) }
    }
}

impl<T> Fleet<T> {
    pub fn new(clusters: Vec<ClusterResult<T>>) -> Fleet<T> {
        Fleet { schema_version: SCHEMA_VERSION, clusters }
    }

    /// The worst of every cluster's status (`status` of a report); a cluster that could not be
    /// read is an error.
    pub fn status(&self, status: impl Fn(&T) -> Status) -> Status {
        Status::worst(self.clusters.iter().map(|c| c.report.as_ref().map(&status).unwrap_or(Status::Error)))
    }

    /// More than one cluster: outputs name each (a header, a column).
    pub fn many(&self) -> bool {
        self.clusters.len() > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_cluster_decides_and_an_unread_cluster_is_an_error() {
        let fleet = Fleet::new(vec![
            ClusterResult::report("a".into(), Status::Clean),
            ClusterResult::report("b".into(), Status::Drifted),
        ]);
        assert_eq!(fleet.status(|s| *s), Status::Drifted);
        assert!(fleet.many());
        let fleet = Fleet::new(vec![
            ClusterResult::report("a".into(), Status::Drifted),
            ClusterResult::<Status>::error("b".into(), "unreachable".into()),
        ]);
        assert_eq!(fleet.status(|s| *s), Status::Error);
        let json = serde_json::to_value(&fleet).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"schemaVersion": 2, "clusters": [
                {"cluster": "a", "report": "drifted"},
                {"cluster": "b", "error": "unreachable"}
            ]})
        );
    }

    /// The schemaVersion 2 output of every command (docs/output.md "Clusters"): the wrapper, each
    /// report naming its cluster, and a cluster that could not be read. The reports' own shapes
    /// are pinned by their schema snapshots (release, manifests, orphans; versions here).
    #[test]
    fn fleet_output_schema() {
        use crate::report::versions::{Category, VersionRow, VersionsReport};
        use crate::report::{DriftReport, ManifestsReport, orphans::OrphanReport};
        fn named<T>(mut report: T, name: &str, set: impl Fn(&mut T, String)) -> ClusterResult<T> {
            set(&mut report, name.to_string());
            ClusterResult::report(name.to_string(), report)
        }
        let refused = || "failed to list Helm releases: Unauthorized (401)".to_string();
        let release = Fleet::new(vec![
            named(DriftReport::new(Vec::new(), 0), "prod-eu", |r, n| r.cluster = n),
            ClusterResult::error("prod-us".into(), refused()),
        ]);
        let manifests = Fleet::new(vec![named(ManifestsReport::new(Vec::new(), 0), "staging", |r, n| r.cluster = n)]);
        let orphans = Fleet::new(vec![named(
            OrphanReport::new(Vec::new(), false, Some("shop".into()), &[], 0),
            "prod-eu",
            |r, n| r.cluster = n,
        )]);
        let mut row = VersionRow::new(Category::Nodes, "kubelet", "v1.35.2");
        row.latest = Some("v1.36.3".into());
        // An apis row: the deprecation's own fields.
        let mut api = VersionRow::new(Category::Apis, "Endpoints/db", "v1");
        api.namespace = Some("shop".into());
        api.component = Some("Endpoints".into());
        api.latest = Some("discovery.k8s.io/v1".into());
        api.status = crate::report::versions::VersionStatus::Deprecated;
        api.why = Some("v1 Endpoints is deprecated since 1.33, no removal planned".into());
        api.source = Some("release shop/db revision 1 (db/templates/endpoints.yaml)".into());
        api.deprecated_in = Some("1.33".into());
        api.removed_in = Some("not planned".into());
        api.replacement = Some("discovery.k8s.io/v1 EndpointSlice".into());
        let versions = Fleet::new(vec![
            named(VersionsReport::new(vec![row, api], 0), "prod-eu", |r, n| r.cluster = n),
            ClusterResult::error("prod-us".into(), refused()),
        ]);
        // Each as the command prints it (field order as serialised).
        let pretty = |v: String, command: &str| format!("# {command} -o json\n{v}\n");
        let text = [
            pretty(serde_json::to_string_pretty(&release).unwrap(), "release"),
            pretty(serde_json::to_string_pretty(&manifests).unwrap(), "manifests"),
            pretty(serde_json::to_string_pretty(&orphans).unwrap(), "orphans"),
            pretty(serde_json::to_string_pretty(&versions).unwrap(), "versions"),
        ]
        .concat();
        insta::assert_snapshot!("fleet_output_schema", text);
    }
}
