//! Helm release storage: the record types, Helm's encoding, and the storage drivers.

pub mod decode;
pub mod release;
pub mod storage;

pub use release::Release;
pub use storage::{Driver, ReleaseStore, ReleaseSummary, StorageError, StoredRevision};
