//! What a run found, as the exit status every command returns and `main` exits with (0 clean,
//! 1 drift or findings, 2 error): a leaf, so that the commands (`app::cmd`) and the dispatcher
//! that calls them both import it.

use std::process::ExitCode;

use crate::report::Status;

/// What a run found, as an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean = 0,
    Drift = 1,
    Error = 2,
}

impl From<Status> for Outcome {
    fn from(s: Status) -> Outcome {
        match s {
            Status::Clean => Outcome::Clean,
            // A release whose Helm operation failed or is unfinished is a finding, like drift: it
            // was fully checked (an error means it could not be).
            Status::Drifted | Status::Incomplete => Outcome::Drift,
            Status::Error => Outcome::Error,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> ExitCode {
        ExitCode::from(o as u8)
    }
}
