//! Helm release storage: the record types, Helm's encoding, the read half of a storage driver
//! (`driver`) and its implementations (Secret and ConfigMap `objects`, `sql`, `memory`), the
//! store over them that decides which revisions count (`storage`), their errors (`error`), and
//! the watch on the Secret and ConfigMap drivers' storage (`watch`).

pub mod chart;
pub mod decode;
pub mod driver;
pub mod error;
pub mod memory;
pub mod objects;
pub mod release;
pub mod render;
pub mod sql;
pub mod storage;
pub mod watch;

pub use driver::{ReleaseSummary, StoredRevision};
pub use error::StorageError;
pub use release::Release;
pub use storage::{Driver, ReleaseStore};
