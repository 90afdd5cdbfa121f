//! Engines: compute and return data, never print. They read through [`crate::source`] and return
//! [`crate::report`] values; none imports `app`, `cli` or `render`.

pub mod adopt;
pub mod compare;
pub mod drift;
pub mod envdiff;
pub mod gitops;
pub mod history;
pub mod lifecycle;
pub mod live;
pub mod manifests;
pub mod orphans;
pub mod policy;
pub mod reconcile;
pub mod select;
pub mod tree;
pub mod upgrade;
pub mod versions;
