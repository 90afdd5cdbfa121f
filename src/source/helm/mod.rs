//! Helm release storage: the record types, Helm's encoding, the storage drivers (Secret,
//! ConfigMap, SQL), and the watch on the Secret and ConfigMap drivers' storage (`watch`).

pub mod decode;
pub mod release;
pub mod sql;
pub mod storage;
pub mod watch;

pub use release::Release;
pub use storage::{Driver, ReleaseStore, ReleaseSummary, StorageError, StoredRevision};
