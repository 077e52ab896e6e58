//! Thread names for labelled samples, kept by the control side (never the
//! signal handler, which only records the tid): at each drain the name of
//! every tid met is read from `/proc/self/task/TID/comm` once; a thread
//! that has ended is named by what it said at its exit (our pthread key
//! destructor records `PR_GET_NAME`), else by the last name read. The
//! name a sample gets is therefore its thread's name at the drain that
//! follows it (the control thread drains at least once a second in a
//! labelled session), or at the thread's exit if that came first.

use std::sync::{Mutex, MutexGuard};

use rustc_hash::FxHashMap;

use crate::locks::lock;
use crate::signal_path::tag_tid;

/// The most exit records kept between two drains (a program creating
/// threads faster than that per second loses the names of the excess).
const MAX_EXITED: usize = 1 << 16;

/// Exit records: (tid, name as `PR_GET_NAME` gives it).
pub(crate) type ExitRecords = Vec<(i32, [u8; 16])>;

/// Names recorded by threads at their exit, not yet taken by a drain.
static EXITED: Mutex<ExitRecords> = Mutex::new(Vec::new());

/// Called by an exiting thread (outside any signal handler) while a
/// labelled session runs: keeps its name for the samples not drained yet.
pub(crate) fn record_exit(tid: i32) {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes into the buffer.
    if unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) } != 0 {
        return;
    }
    let mut exited = lock(&EXITED);
    if exited.len() < MAX_EXITED {
        exited.push((tid, name));
    }
}

/// Forgets the exit records (a new session).
pub(crate) fn clear_exits() {
    lock(&EXITED).clear();
}

/// The exit records' lock, held across `fork` (see
/// `lifecycle::fork_prepare`) so that the child never finds it held by a
/// thread that does not exist there.
pub(crate) fn hold_exits() -> MutexGuard<'static, ExitRecords> {
    lock(&EXITED)
}

/// In a forked child, with the lock held across the fork: forgets the
/// parent's exit records without freeing them (nothing may allocate or
/// free between `fork` and `exec`: the program's allocator may be locked
/// by a thread that does not exist here).
pub(crate) fn forget_exits_in_child(held: &mut MutexGuard<'static, ExitRecords>) {
    std::mem::forget(std::mem::take(&mut **held));
}

/// A session's thread names: interned, numbered from 1.
#[derive(Default)]
pub(crate) struct ThreadNames {
    names: Vec<String>,
    index: FxHashMap<String, u32>,
    /// Names read during the current drain.
    current: FxHashMap<i32, u32>,
    /// The last name known of each thread (survives it).
    known: FxHashMap<i32, u32>,
}

/// Where a name index sits in [`crate::collector::SampleKey::labels`].
const NAME_SHIFT: u32 = 34;

impl ThreadNames {
    /// Starts a drain: names are read afresh, exit records taken.
    pub(crate) fn begin_drain(&mut self) {
        self.current.clear();
        let exited = std::mem::take(&mut *lock(&EXITED));
        for (tid, raw) in exited {
            let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let name = String::from_utf8_lossy(&raw[..len]).into_owned();
            let id = self.intern(&name);
            self.known.insert(tid, id);
        }
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        self.names.push(name.to_string());
        let id = self.names.len() as u32;
        self.index.insert(name.to_string(), id);
        id
    }

    /// The labels of a drained sample: its tag plus its thread's name.
    pub(crate) fn label(&mut self, tag: u64) -> u64 {
        let tid = tag_tid(tag);
        if tid == 0 {
            return tag;
        }
        let id = match self.current.get(&tid) {
            Some(&id) => id,
            None => {
                let read = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .ok()
                    .map(|name| self.intern(name.trim_end_matches('\n')));
                let id = read.or_else(|| self.known.get(&tid).copied()).unwrap_or(0);
                self.current.insert(tid, id);
                if id != 0 {
                    self.known.insert(tid, id);
                }
                id
            }
        };
        tag | u64::from(id) << NAME_SHIFT
    }

    /// The names, index 1 first (index 0 is "no name").
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }
}

/// The thread name index of a sample's labels (0: none).
pub(crate) fn name_index(labels: u64) -> usize {
    (labels >> NAME_SHIFT) as usize
}
