//! End-to-end tests: the built binary and library against the real local control plane.
//! Each is `#[ignore = "needs the local control plane"]`: run them with `scripts/test` (which starts
//! the control plane, sets DRIFT_E2E=1 and passes `--include-ignored`).

mod admission;
mod audit;
mod blanks;
mod browser;
mod canary;
mod chart;
mod ci_formats;
mod common;
mod crds;
mod decode;
mod demo;
mod deprecations;
mod edits;
mod env;
mod faults;
mod fleet;
mod flux;
mod gitops;
mod history;
mod install;
mod lifecycle;
mod live;
mod logs;
mod manifests;
mod mcp;
mod monitoring;
mod oci;
mod orphans;
mod policy;
mod progress;
mod prometheus;
mod registry;
mod release;
mod release_artifacts;
mod replica;
mod runtime;
mod serve;
mod serve_live;
mod sql;
mod upstream_fixtures;
mod versions;
mod versions_upstream;
mod watch;
