//! What the process asks of glibc's malloc (docs/output.md, Orphans, "Memory"). Other C
//! libraries (musl) are left as they are: these are no-ops there.

/// The process's malloc settings, set once before any thread starts:
///
/// - glibc serves a block of 128 KiB or more by its own mapping, returned to the system when
///   freed, but after the first such free it raises that threshold (up to 32 MiB), so later LIST
///   pages (a few MiB of text each) come from the heap and leave holes the process keeps. Setting
///   the threshold fixes it at its default: `orphans -A` on a big cluster peaked about 10% lower.
/// - One heap (arena) per core, not glibc's default of up to 8 per core. glibc gives threads that
///   allocate at the same time heaps of their own, each keeping its own freed pages: `release
///   --all -A` on 2,000 releases peaked at 108 MiB with the default and 95 MiB with one heap.
///   But one heap is one lock: each release check is a task of its own, checks run on every
///   worker thread (one per core) at once, and with one heap they queued for it (at 400
///   releases, 28% more CPU time than the default, half of the difference in the kernel waking
///   waiters). One heap per core costs about what the default costs in CPU and a little more
///   memory than one heap (docs/output.md, "glibc's malloc").
pub fn set_malloc_options() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets malloc parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, arenas());
    }
}

/// One heap per core the runtime's workers run on (at least 1, at most 8).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn arenas() -> libc::c_int {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    libc::c_int::try_from(cores.clamp(1, 8)).unwrap_or(1)
}

/// Give the system back the heap pages freed since the last call. A long-running `serve` calls it
/// after each scan: glibc keeps freed pages for reuse, and a scan's shape differs from the last
/// one's, so without it resident memory climbed scan after scan (1.3 to 1.4 times the first
/// scan's after 20 at 100 releases) though nothing was kept.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes malloc's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What the heaps hold now, in bytes: (in use, free), all arenas and malloc's own mappings
/// counted; `None` where the C library is not glibc. Free counts every free chunk, also the pages
/// of it that a trim gave back (no longer resident), so it says how spread out the heaps are, not
/// what they keep. For the debug log after a scan's trim: resident memory that grows while the
/// bytes in use do not is the heaps' holes, not data.
pub fn heap_figures() -> Option<(usize, usize)> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads malloc's counters; it takes malloc's own locks.
        let m = unsafe { libc::mallinfo2() };
        Some((m.uordblks + m.hblkhd, m.fordblks))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}
