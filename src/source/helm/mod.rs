//! Helm release storage: the record types, Helm's encoding, and the storage drivers (Secret,
//! ConfigMap, SQL).

pub mod decode;
pub mod release;
pub mod sql;
pub mod storage;

pub use release::Release;
pub use storage::{Driver, ReleaseStore, ReleaseSummary, StorageError, StoredRevision};
