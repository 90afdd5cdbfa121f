//! The `kubectl-drift` binary: parse arguments, run, exit 0 (clean), 1 (drift), 2 (error).

use std::process::ExitCode;

fn main() -> ExitCode {
    kubectl_drift::app::allocator::set_malloc_options();
    kubectl_drift::app::main_with_args(std::env::args().collect())
}
