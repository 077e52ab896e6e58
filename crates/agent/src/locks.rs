//! The agent's locks. Always taken in this order: `lifecycle::CONTROL`
//! (the session, table drains, module snapshots, file writing), then
//! `threads::THREADS` (the thread registry and the clock to arm new
//! threads with). New threads take only `THREADS`, so they never wait for
//! a file to be written. The signal handler takes none.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, going on past a panic of an earlier holder (the data
/// are counters and tables that stay consistent between statements).
pub(crate) fn lock<T>(mutex: &'static Mutex<T>) -> MutexGuard<'static, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
