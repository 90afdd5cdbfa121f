//! The `kubectl-drift` binary: parse arguments, run, exit 0 (clean), 1 (drift), 2 (error).

use std::process::ExitCode;

fn main() -> ExitCode {
    fixed_mmap_threshold();
    kubectl_drift::app::main_with_args(std::env::args().collect())
}

/// glibc's malloc serves a block of 128 KiB or more by its own mapping, returned to the system
/// when freed, but after the first such free it raises that threshold (up to 32 MiB), so later
/// LIST pages (a few MiB of text each) come from the heap and leave holes the process keeps.
/// Setting the threshold fixes it at its default: `orphans -A` on a big cluster peaked about 12%
/// lower (docs/output.md, Orphans, "Memory"). Other C libraries are left as they are.
fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
