//! The version scope of the dashboard: `kubectl drift versions` (every category, the default rows)
//! run by the server. The `versions:` section of the config is read once, at start (a bad one
//! stops the start); the sources are built for each scan by the same code as the CLI's, so tag
//! lists are fresh on every scan while the on-disk cache (its TTL) keeps upstream traffic low.

use std::path::PathBuf;

use crate::app::error::AppError;
use crate::app::versions::versions_sources;
use crate::engine::versions::{self, Show, VersionsConfig, VersionsOptions};
use crate::report::versions::VersionsReport;
use crate::source::cluster::Cluster;

use super::{BoxFuture, VersionsResult, VersionsScan};

/// The version scope's scan: `versions` with the config read at start.
pub struct VersionsScope {
    config: VersionsConfig,
    cache_dir: Option<PathBuf>,
}

impl VersionsScope {
    /// Take the config's `versions:` section and check that the sources can be built (a
    /// registry whose credential variable is unset stops the start, naming the variable).
    pub fn new(config: VersionsConfig, cache_dir: Option<PathBuf>) -> Result<VersionsScope, AppError> {
        versions_sources(&config, cache_dir.clone())?;
        Ok(VersionsScope { config, cache_dir })
    }

    async fn run(&self, cluster: &Cluster, namespace: Option<String>) -> Result<VersionsReport, String> {
        let sources = versions_sources(&self.config, self.cache_dir.clone()).map_err(|e| e.to_string())?;
        let options = VersionsOptions {
            namespace,
            categories: Default::default(),
            show: Show::Default,
            manifests: Vec::new(),
            target_minor: None,
            config: self.config.clone(),
        };
        versions::scan(cluster, &options, &sources, &crate::report::progress::NoProgress)
            .await
            .map_err(|e| e.to_string())
    }
}

/// The result the server keeps: the report's JSON and CSV (the CLI's `-o json` and `-o csv`).
pub fn result(report: &VersionsReport) -> VersionsResult {
    let mut csv = Vec::new();
    crate::render::versions::csv(&mut csv, report, None, true).expect("writing to memory");
    VersionsResult {
        report: serde_json::to_value(report).expect("the report serialises"),
        csv: String::from_utf8_lossy(&csv).into_owned(),
        findings: report.rows.iter().filter(|r| r.status.status() == crate::report::Status::Drifted).count(),
        incomplete: report.summary.errors > 0,
    }
}

impl VersionsScan for VersionsScope {
    fn scan<'a>(
        &'a self,
        cluster: &'a Cluster,
        namespace: Option<String>,
    ) -> BoxFuture<'a, Result<VersionsResult, String>> {
        Box::pin(async move { self.run(cluster, namespace).await.map(|r| result(&r)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::versions::{Category, VersionRow, VersionStatus};

    #[test]
    fn result_counts_findings_and_errors_and_carries_the_csv() {
        let mut behind = VersionRow::new(Category::Workloads, "Deployment/web", "1.2.3");
        behind.status = VersionStatus::PatchBehind;
        behind.latest = Some("1.2.4".into());
        let mut current = VersionRow::new(Category::Workloads, "Deployment/api", "2.0.0");
        current.status = VersionStatus::Current;
        let failed = VersionRow::new(Category::Helm, "shop", "1.0.0").error("lookup failed");
        let unknown = VersionRow::new(Category::Nodes, "kubelet", "v1.36.3");
        let r = result(&VersionsReport::new(vec![behind, current, failed, unknown], 0));
        assert_eq!(r.findings, 1);
        assert!(r.incomplete);
        assert_eq!(r.report["rows"].as_array().unwrap().len(), 4);
        assert_eq!(r.report["rows"][0]["status"], "patch-behind");
        assert!(r.csv.starts_with("category,namespace,name,"), "{}", r.csv);
        assert_eq!(r.csv.lines().count(), 5);
        let clean = result(&VersionsReport::new(Vec::new(), 0));
        assert_eq!((clean.findings, clean.incomplete), (0, false));
    }
}
