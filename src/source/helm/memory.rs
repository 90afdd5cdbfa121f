//! An in-memory release storage driver, as Helm's `driver.Memory` is for its own action tests:
//! releases held as records with their storage labels, answering the same questions as the
//! drivers that read a cluster or a database. The drift engine's unit tests build their cluster
//! on it (`Cluster::new` over a recorded API server and this store).

use std::sync::Mutex;

use futures::future::BoxFuture;

use super::decode::encode_release;
use super::driver::{ReleaseBody, ReleaseDriver, ReleaseLabels, ReleaseSummary, StoredRevision, summarise_labels};
use super::error::StorageError;
use super::release::Release;

/// One stored revision: Helm's labels and the record, encoded as Helm encodes it (so reading it
/// back decodes it as the other drivers do, errors included).
struct Record {
    namespace: String,
    name: String,
    revision: u32,
    status: String,
    /// The record as Helm stores it (base64 of gzip of JSON).
    data: Vec<u8>,
}

/// Releases kept in memory.
#[derive(Default)]
pub struct MemoryDriver {
    records: Mutex<Vec<Record>>,
}

impl MemoryDriver {
    pub fn new() -> MemoryDriver {
        MemoryDriver::default()
    }

    /// Store `release` under its own namespace, name and revision, with `status` as its status
    /// label (Helm writes the label from `info.status`; a test may make them disagree).
    pub fn create(&self, release: Release, status: &str) {
        let record = Record {
            namespace: release.namespace.clone(),
            name: release.name.clone(),
            revision: release.revision,
            status: status.to_string(),
            data: encode_release(&serde_json::to_vec(&release).expect("a release serialises")).into_bytes(),
        };
        self.records.lock().expect("memory store lock").push(record);
    }

    /// Store a revision whose record is `data` as stored (a corrupt record, say).
    pub fn create_raw(&self, namespace: &str, name: &str, revision: u32, status: &str, data: &[u8]) {
        self.records.lock().expect("memory store lock").push(Record {
            namespace: namespace.to_string(),
            name: name.to_string(),
            revision,
            status: status.to_string(),
            data: data.to_vec(),
        });
    }

    fn object(r: &Record) -> String {
        format!("memory {}/sh.helm.release.v1.{}.v{}", r.namespace, r.name, r.revision)
    }
}

impl ReleaseDriver for MemoryDriver {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn list<'a>(
        &'a self,
        namespace: Option<&'a str>,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<Vec<StoredRevision>, StorageError>> {
        Box::pin(async move {
            let selector = ReleaseLabels::parse(selector, "memory")?;
            let records = self.records.lock().expect("memory store lock");
            let mut out = Vec::new();
            for r in records.iter() {
                // Every record here is Helm's own (`owner=helm`), as Helm writes them.
                if namespace.is_some_and(|ns| ns != r.namespace)
                    || !selector.matches(&r.name, &r.status, r.revision, "helm")
                {
                    continue;
                }
                let object = MemoryDriver::object(r);
                let release = ReleaseBody::encoded(object.clone(), r.data.clone());
                out.push(StoredRevision {
                    object,
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                    revision: r.revision,
                    status: r.status.clone(),
                    release,
                });
            }
            Ok(out)
        })
    }

    fn summaries<'a>(&'a self, namespace: Option<&'a str>) -> BoxFuture<'a, Result<Vec<ReleaseSummary>, StorageError>> {
        Box::pin(async move {
            let records = self.records.lock().expect("memory store lock");
            let labels = records
                .iter()
                .filter(|r| namespace.is_none_or(|ns| ns == r.namespace))
                .map(|r| (r.namespace.clone(), r.name.clone(), r.revision, r.status.clone()))
                .collect::<Vec<_>>();
            Ok(summarise_labels(labels))
        })
    }
}
