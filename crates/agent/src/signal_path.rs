//! Everything that runs inside the profiling signal handler, and nothing
//! else. Review this module on its own: the rest of the agent prepares the
//! memory it reads and drains what it writes, always outside the handler.
//!
//! Invariants of the signal path (the handler and everything it calls):
//!
//! 1. **No allocation or deallocation.** All memory it touches (the
//!    [`Sampler`], both [`StackTable`]s, the unwinder caches, the module
//!    snapshot) is allocated before any timer is armed. The stack of PCs
//!    is a fixed array on the handler's own stack: one of the agent's
//!    (`handler_stack`), not the interrupted code's, which may be small.
//! 2. **No lock, no wait.** Only atomics. Where something is busy (every
//!    unwinder cache in use, the table full) the sample is counted as
//!    dropped, never waited for.
//! 3. **Nothing that may take the loader lock**: no `dl_iterate_phdr`,
//!    `dladdr`, glibc `backtrace`, no thread-local storage (which may
//!    allocate on first touch in a dlopen'd object). Modules come from an
//!    immutable [`ModuleSnapshot`] built outside the handler.
//! 4. **errno saved and restored**; the only system calls are `gettid`,
//!    `getpid`, `clock_gettime` (the thread's CPU clock, and the monotonic
//!    clock for the sample's time: both through the vDSO) and a futex
//!    wake of the control thread.
//! 5. **No panic**: no indexing (only `get`), no `unwrap`, checked
//!    arithmetic; framehop runs with `MustNotAllocateDuringUnwind`.
//! 6. **Memory reads stay within the interrupted thread's stack**
//!    (`[sp, stack end)`, 8-byte aligned), so a bogus frame pointer or
//!    corrupt unwind data ends the stack instead of faulting.
//! 7. **Nothing it reads is freed while it may run**: it holds the
//!    [`Gate`] while it uses the snapshot and the active table, and the
//!    writers swap pointers then [`Gate::synchronize`] before freeing or
//!    draining. The [`Sampler`] itself is never freed.
//! 8. **Never `SIG_DFL` while a signal may arrive**: stopping disarms the
//!    timers and leaves this handler installed; it returns at once when
//!    nothing is running.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

pub(crate) use crate::timers::clock_ns;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{MustNotAllocateDuringUnwind, Unwinder};

/// Deepest stack recorded; deeper stacks are cut and counted as truncated.
pub(crate) const MAX_DEPTH: usize = 256;

/// The unwinder type: section data shared between snapshots, no allocation
/// while unwinding.
pub(crate) type ModuleUnwinder = UnwinderX86_64<std::sync::Arc<[u8]>, MustNotAllocateDuringUnwind>;
/// The unwinder cache type (one per concurrently running handler).
pub(crate) type UnwindCache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// The one global sampler, created on the first start and never freed.
pub(crate) static SAMPLER: AtomicPtr<Sampler> = AtomicPtr::new(std::ptr::null_mut());

/// An immutable view of the loaded objects, built outside the handler and
/// swapped in whole.
pub(crate) struct ModuleSnapshot {
    /// framehop's unwinder with every loaded object's unwind sections.
    pub(crate) unwinder: ModuleUnwinder,
    /// Executable ranges of the loaded objects, sorted by start: a PC
    /// outside all of them means the snapshot may be stale.
    pub(crate) code: Vec<(u64, u64)>,
    /// Readable and writable mappings, sorted by start: the stack bound of
    /// a thread is the end of the one containing its stack pointer.
    pub(crate) writable: Vec<(u64, u64)>,
    /// End of the main thread's stack (`[stack]`), which grows below the
    /// start the maps showed.
    pub(crate) main_stack_end: u64,
}

impl ModuleSnapshot {
    fn contains_code(&self, pc: u64) -> bool {
        find_range(&self.code, pc).is_some()
    }

    /// End of the writable mapping containing `sp`.
    fn stack_end_for(&self, sp: u64) -> Option<u64> {
        find_range(&self.writable, sp).map(|(_, end)| end)
    }
}

/// Binary search of sorted, non-overlapping ranges; no indexing.
fn find_range(ranges: &[(u64, u64)], addr: u64) -> Option<(u64, u64)> {
    let i = ranges.partition_point(|&(start, _)| start <= addr);
    let (start, end) = *ranges.get(i.checked_sub(1)?)?;
    (addr >= start && addr < end).then_some((start, end))
}

/// A two-epoch reader gate (a tiny RCU): handlers enter and leave it
/// without waiting; a writer that swapped a pointer calls
/// [`Gate::synchronize`] to wait until no handler can still see the old
/// value.
pub(crate) struct Gate {
    epoch: AtomicUsize,
    readers: [AtomicUsize; 2],
}

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate {
            epoch: AtomicUsize::new(0),
            readers: [AtomicUsize::new(0), AtomicUsize::new(0)],
        }
    }

    /// Registers a reader; returns the side to leave by, or None when a
    /// writer keeps changing the epoch (the caller drops its sample).
    pub(crate) fn enter(&self) -> Option<usize> {
        for _ in 0..4 {
            let epoch = self.epoch.load(Ordering::SeqCst);
            let side = epoch & 1;
            let readers = self.readers.get(side)?;
            readers.fetch_add(1, Ordering::SeqCst);
            if self.epoch.load(Ordering::SeqCst) == epoch {
                return Some(side);
            }
            readers.fetch_sub(1, Ordering::SeqCst);
        }
        None
    }

    pub(crate) fn leave(&self, side: usize) {
        if let Some(readers) = self.readers.get(side) {
            readers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Outside the handler only. Waits until every reader that entered
    /// before this call has left. Writers must be serialized by the caller.
    pub(crate) fn synchronize(&self) {
        let old = self.epoch.fetch_add(1, Ordering::SeqCst);
        let readers = &self.readers[old & 1];
        let mut spins = 0u32;
        while readers.load(Ordering::SeqCst) != 0 {
            spins += 1;
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// In a forked child, where no handler of the parent's other threads
    /// can be running any more.
    pub(crate) fn reset_after_fork(&self) {
        self.readers[0].store(0, Ordering::SeqCst);
        self.readers[1].store(0, Ordering::SeqCst);
    }
}

/// How many of the last time records a sample's time may merge into.
pub(crate) const MERGE_WINDOW: usize = 8;
/// The most a time record's weight may reach before it takes no more.
const MERGED_MAX: u64 = u32::MAX as u64 - 10_000;

/// The next coarser time resolution: 1 ms from finer ones, then ten times
/// the current one, up to [`COARSEST_RESOLUTION`].
pub(crate) fn coarser_resolution(ns: u64) -> u64 {
    if ns < 1_000_000 {
        1_000_000
    } else {
        ns.saturating_mul(10).min(COARSEST_RESOLUTION)
    }
}

/// The coarsest time resolution (about 28 hours): beyond it times say
/// nothing.
pub(crate) const COARSEST_RESOLUTION: u64 = 100_000_000_000_000;

/// A hash table entry: a stack (in the table's PC pool) and its count.
/// `hash` is 0 when empty, [`CLAIMED`] while its claimer writes it, and the
/// stack's hash (always ≥ 2) once published.
pub(crate) struct Entry {
    pub(crate) hash: AtomicU64,
    /// The sample's thread and state ([`sample_tag`]; 0 when the session
    /// does not label samples), part of the key.
    pub(crate) tag: AtomicU64,
    pub(crate) count: AtomicU64,
    pub(crate) offset: AtomicU32,
    pub(crate) len: AtomicU32,
}

const CLAIMED: u64 = 1;
const PROBES: usize = 32;

/// A preallocated, lock-free table of stacks with counts. Handlers add to
/// the active one; the control side swaps tables, synchronizes the
/// [`Gate`] and drains the inactive one.
pub(crate) struct StackTable {
    pub(crate) entries: Box<[Entry]>,
    pub(crate) pcs: Box<[AtomicU64]>,
    pub(crate) pcs_used: AtomicUsize,
    pub(crate) occupied: AtomicUsize,
    /// When each sample counted in `entries` was taken (sessions that keep
    /// times, see [`Sampler::record_times`]): appended in order, emptied by
    /// the drain. A sample that finds it full still counts, without a time
    /// (the drain finds fewer timed weights than the entry's count).
    pub(crate) times: Box<[TimeRecord]>,
    pub(crate) times_used: AtomicUsize,
}

/// One sample's time: the monotonic clock in ns (0: none), and the entry
/// it was counted on with its weight (`index << 32 | weight`).
pub(crate) struct TimeRecord {
    pub(crate) time: AtomicU64,
    pub(crate) entry: AtomicU64,
}

/// Why a sample could not be recorded.
pub(crate) enum Dropped {
    TableFull,
}

impl StackTable {
    /// Adds `weight` to the count of (`stack`, `tag`); returns the entry's
    /// index and hash.
    fn record(&self, stack: &[u64], tag: u64, weight: u64) -> Result<(usize, u64), Dropped> {
        let hash = hash_sample(stack, tag);
        let mask = self.entries.len() - 1;
        let mut index = (hash as usize) & mask;
        for _ in 0..PROBES {
            let Some(entry) = self.entries.get(index) else {
                return Err(Dropped::TableFull);
            };
            let current = entry.hash.load(Ordering::Acquire);
            if current == hash
                && entry.tag.load(Ordering::Relaxed) == tag
                && self.stored_equals(entry, stack)
            {
                entry.count.fetch_add(weight, Ordering::Relaxed);
                return Ok((index, hash));
            }
            if current == 0
                && entry
                    .hash
                    .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return self
                    .fill(entry, hash, stack, tag, weight)
                    .map(|()| (index, hash));
            }
            index = (index + 1) & mask;
        }
        Err(Dropped::TableFull)
    }

    /// Writes a claimed entry and publishes it.
    fn fill(
        &self,
        entry: &Entry,
        hash: u64,
        stack: &[u64],
        tag: u64,
        weight: u64,
    ) -> Result<(), Dropped> {
        let len = stack.len();
        entry.tag.store(tag, Ordering::Relaxed);
        let offset = self.pcs_used.fetch_add(len, Ordering::Relaxed);
        let Some(slots) = offset
            .checked_add(len)
            .and_then(|end| self.pcs.get(offset..end))
        else {
            // Leave the entry claimed but empty (len 0): drains skip it.
            entry.len.store(0, Ordering::Relaxed);
            entry.count.store(0, Ordering::Relaxed);
            entry.hash.store(hash, Ordering::Release);
            return Err(Dropped::TableFull);
        };
        for (slot, &pc) in slots.iter().zip(stack) {
            slot.store(pc, Ordering::Relaxed);
        }
        entry.offset.store(offset as u32, Ordering::Relaxed);
        entry.len.store(len as u32, Ordering::Relaxed);
        entry.count.store(weight, Ordering::Relaxed);
        self.occupied.fetch_add(1, Ordering::Relaxed);
        entry.hash.store(hash, Ordering::Release);
        Ok(())
    }

    /// Records the time (monotonic ns) of a sample counted on entry
    /// `index`: added to one of the last [`MERGE_WINDOW`] records when it
    /// is of the same entry and the same `bucket` (ns of epoch time, the
    /// monotonic time plus `epoch_offset`: the drain rounds to the same
    /// boundaries; 1: no merging), else appended. With `escalate` (no
    /// control thread will drain the records before the end) every
    /// sixteenth of the records used past half makes `bucket` coarser, so
    /// that a long single-threaded run keeps its times, coarser. False
    /// when the records are full (the sample counts, without a time).
    pub(crate) fn note_time(
        &self,
        index: usize,
        weight: u64,
        time: u64,
        bucket: &AtomicU64,
        epoch_offset: u64,
        escalate: bool,
    ) -> bool {
        let size = bucket.load(Ordering::Relaxed).max(1);
        let weight = weight.min(MAX_WEIGHT);
        let index = index as u64;
        if size > 1 {
            let epoch_bucket = time.wrapping_add(epoch_offset) / size;
            let used = self
                .times_used
                .load(Ordering::Relaxed)
                .min(self.times.len());
            for slot in (used.saturating_sub(MERGE_WINDOW)..used).rev() {
                let Some(record) = self.times.get(slot) else {
                    break;
                };
                let entry = record.entry.load(Ordering::Relaxed);
                let same_bucket = record
                    .time
                    .load(Ordering::Relaxed)
                    .wrapping_add(epoch_offset)
                    / size
                    == epoch_bucket;
                if entry >> 32 == index && entry & 0xffff_ffff <= MERGED_MAX && same_bucket {
                    record.entry.fetch_add(weight, Ordering::Relaxed);
                    return true;
                }
            }
        }
        let slot = self.times_used.fetch_add(1, Ordering::Relaxed);
        let Some(record) = self.times.get(slot) else {
            return false;
        };
        record.time.store(time, Ordering::Relaxed);
        record.entry.store(index << 32 | weight, Ordering::Relaxed);
        let half = self.times.len() / 2;
        let step = (self.times.len() / 16).max(1);
        if escalate && slot >= half && (slot - half) % step == 0 {
            let _ = bucket.compare_exchange(
                size,
                coarser_resolution(size),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        true
    }

    /// Empties the PC pool, the entry count and the time records (the
    /// entries themselves are cleared by the caller, which reads them
    /// first or not). No handler uses the table meanwhile.
    pub(crate) fn reset_pools(&self) {
        self.pcs_used.store(0, Ordering::Relaxed);
        self.occupied.store(0, Ordering::Relaxed);
        self.times_used.store(0, Ordering::Relaxed);
    }

    /// True when the entries, the PC pool or the time records are at
    /// least half used: time to drain (or, without a control thread, to
    /// turn to the other table).
    pub(crate) fn half_full(&self) -> bool {
        self.occupied.load(Ordering::Relaxed) >= self.entries.len() / 2
            || self.pcs_used.load(Ordering::Relaxed) >= self.pcs.len() / 2
            || self.times_used.load(Ordering::Relaxed) >= self.times.len() / 2
    }

    fn stored_equals(&self, entry: &Entry, stack: &[u64]) -> bool {
        let len = entry.len.load(Ordering::Relaxed) as usize;
        let offset = entry.offset.load(Ordering::Relaxed) as usize;
        if len != stack.len() {
            return false;
        }
        match offset
            .checked_add(len)
            .and_then(|end| self.pcs.get(offset..end))
        {
            Some(slots) => slots
                .iter()
                .zip(stack)
                .all(|(s, &pc)| s.load(Ordering::Relaxed) == pc),
            None => false,
        }
    }
}

/// FNV-1a over the tag and the PCs, forced to be ≥ 2 (0 and 1 mark empty
/// and claimed).
pub(crate) fn hash_sample(stack: &[u64], tag: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &pc in std::iter::once(&tag).chain(stack) {
        h ^= pc;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h | 2
}

/// An unwinder cache that one handler at a time may use.
pub(crate) struct CacheSlot {
    pub(crate) busy: AtomicBool,
    pub(crate) cache: UnsafeCell<UnwindCache>,
}

// SAFETY: `cache` is only touched by whoever won `busy`.
unsafe impl Sync for CacheSlot {}

/// Per-thread facts the handler needs, keyed by kernel thread id.
pub(crate) struct ThreadSlot {
    /// 0 empty, -1 removed, else the thread id.
    pub(crate) tid: AtomicI32,
    /// End (highest address) of the thread's stack, 0 if unknown.
    pub(crate) stack_end: AtomicU64,
    /// The perf event fd or POSIX timer id armed for the thread, -1 if none.
    pub(crate) timer: AtomicU64,
    /// True when the thread was created through our `pthread_create`.
    pub(crate) via_pthread_create: AtomicBool,
    /// True when the program blocked the session's sampling signal in this
    /// thread (our `pthread_sigmask` keeps it deliverable, see
    /// `src/sigmask.rs`): a signal sent to it by others is then kept for the
    /// program's `sigwait` instead of being handled.
    pub(crate) program_blocks: AtomicBool,
    /// The thread's CPU time (ns) that samples have accounted for so far;
    /// 0 until its first signal. Written only by the thread's own handler
    /// and by whoever arms its timer.
    pub(crate) cpu_mark: AtomicU64,
    /// Wall-clock mode: periods the driver has signalled the thread for
    /// and its handler has not yet taken (the weight of its next sample).
    pub(crate) pending: AtomicU64,
    /// The table entry of the thread's last sample ([`last_entry`]) and
    /// that entry's hash (0: none), so that the wall-clock driver can count
    /// another period of a thread that has not run since on it.
    pub(crate) last_entry: AtomicU64,
    pub(crate) last_hash: AtomicU64,
}

/// A table side and an entry index as one word.
fn last_entry(side: usize, index: usize) -> u64 {
    (side as u64) << 32 | index as u64
}

impl ThreadSlot {
    /// Records the timer armed for the thread; its CPU-time account starts
    /// afresh.
    pub(crate) fn armed(&self, handle: u64) {
        self.cpu_mark.store(0, Ordering::Relaxed);
        self.pending.store(0, Ordering::Relaxed);
        self.last_hash.store(0, Ordering::Relaxed);
        self.timer.store(handle, Ordering::Release);
    }
}

pub(crate) const TID_REMOVED: i32 = -1;

/// Counters reported at stop.
#[derive(Default)]
pub(crate) struct Stats {
    /// Profiling signals handled while running.
    pub(crate) interrupts: AtomicU64,
    /// Samples recorded (sum of weights).
    pub(crate) samples: AtomicU64,
    /// Signals that came before a whole period of the thread's CPU time
    /// had passed (task-clock counting stolen time), so stood for none.
    pub(crate) skipped: AtomicU64,
    /// Samples the filter callback rejected.
    pub(crate) filtered: AtomicU64,
    /// Samples lost because the stack table was full.
    pub(crate) dropped_full: AtomicU64,
    /// Samples lost because every unwinder cache was busy or a writer kept
    /// the gate moving.
    pub(crate) dropped_busy: AtomicU64,
    /// Stacks cut at [`MAX_DEPTH`].
    pub(crate) truncated_depth: AtomicU64,
    /// Stacks whose unwinding stopped at an unreadable or invalid frame
    /// before reaching a frame that ends the stack.
    pub(crate) truncated_unwind: AtomicU64,
    /// Stacks with no known stack bound for the thread: leaf PC only.
    pub(crate) leaf_only: AtomicU64,
}

/// Everything shared between the handler and the control side.
pub(crate) struct Sampler {
    pub(crate) gate: Gate,
    pub(crate) tables: [StackTable; 2],
    pub(crate) active_table: AtomicUsize,
    pub(crate) modules: AtomicPtr<ModuleSnapshot>,
    pub(crate) caches: Box<[CacheSlot]>,
    pub(crate) threads: Box<[ThreadSlot]>,
    pub(crate) running: AtomicBool,
    /// `filter_in_thread` and its argument (0 when none).
    pub(crate) filter: AtomicUsize,
    pub(crate) filter_arg: AtomicUsize,
    /// True when the per-sample weight comes from the timer's overrun
    /// count (POSIX timers).
    pub(crate) weight_overruns: AtomicBool,
    /// With perf task-clock: the period in ns of the thread's own CPU clock
    /// that one sample stands for (0 otherwise). See [`cpu_time_weight`].
    pub(crate) cpu_clock_period_ns: AtomicU64,
    /// True when samples carry their thread ([`sample_tag`]): the table
    /// key then includes the tid (profile.proto sessions).
    pub(crate) label_threads: AtomicBool,
    /// True when the session keeps every sample's time (profile.proto
    /// sessions with timestamps on): each table's time records are filled.
    pub(crate) record_times: AtomicBool,
    /// The time resolution (ns) samples merge at in the time records
    /// ([`StackTable::note_time`]): the session's, made coarser by the
    /// handler when no control thread drains and the records fill up.
    pub(crate) time_bucket_ns: AtomicU64,
    /// Epoch minus monotonic time at the session's start (wrapping), so
    /// that buckets fall on the epoch boundaries the drain rounds to.
    pub(crate) time_epoch_offset: AtomicU64,
    /// Wall-clock mode: the sampling period in ns, so the handler can tell
    /// a running thread from a waiting one by its CPU clock (0 otherwise).
    pub(crate) wall_period_ns: AtomicU64,
    /// Set by the handler when it sees a PC outside every known module.
    pub(crate) modules_stale: AtomicBool,
    /// Bumped (and futex-woken) to wake the control thread.
    pub(crate) wake_word: AtomicU32,
    pub(crate) stats: Stats,
}

impl Sampler {
    /// The slot of thread `tid`, if registered. Lock-free lookup in an
    /// open-addressed table (linear probing; removed slots keep chains).
    pub(crate) fn thread_slot(&self, tid: i32) -> Option<&ThreadSlot> {
        let mask = self.threads.len() - 1;
        let mut index = thread_hash(tid) & mask;
        for _ in 0..self.threads.len() {
            let slot = self.threads.get(index)?;
            match slot.tid.load(Ordering::Acquire) {
                0 => return None,
                t if t == tid => return Some(slot),
                _ => index = (index + 1) & mask,
            }
        }
        None
    }

    /// Without a control thread: makes the other table the active one when
    /// table `active` is half full and the other holds nothing, so a
    /// process that never gets a thread of ours has both tables' room.
    /// Async-signal-safe (atomics); the writer at the end drains both.
    pub(crate) fn turn_tables_if_other_empty(&self, active: usize) {
        let (Some(table), Some(other)) = (self.tables.get(active), self.tables.get(active ^ 1))
        else {
            return;
        };
        if table.half_full() && other.occupied.load(Ordering::Acquire) == 0 {
            let _ = self.active_table.compare_exchange(
                active,
                active ^ 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }

    /// Wakes the control thread (async-signal-safe: an atomic add and a
    /// futex wake; no descriptor).
    pub(crate) fn wake_control(&self) {
        self.wake_word.fetch_add(1, Ordering::AcqRel);
        // SAFETY: a futex wake on a live atomic.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.wake_word.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1,
            )
        };
    }
}

pub(crate) fn thread_hash(tid: i32) -> usize {
    (tid as u32).wrapping_mul(0x9E37_79B9) as usize
}

/// The control thread's tid (0 when there is none); it is never sampled.
static CONTROL_TID: AtomicI32 = AtomicI32::new(0);

/// True while there is a control thread (or one is starting) to drain the
/// tables. Async-signal-safe (one atomic load).
pub(crate) fn has_control_thread() -> bool {
    CONTROL_TID.load(Ordering::Acquire) != 0
}

/// The control thread's tid (0: none).
pub(crate) fn control_tid() -> i32 {
    CONTROL_TID.load(Ordering::Acquire)
}

/// Records the control thread's tid (0: it is gone; -1: starting).
pub(crate) fn set_control_tid(tid: i32) {
    CONTROL_TID.store(tid, Ordering::Release);
}

/// The kernel thread id of the caller (a raw system call: async-signal-safe
/// and free of thread-local storage).
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// The profiling signal handler (installed with `SA_SIGINFO | SA_RESTART`).
pub(crate) extern "C" fn on_profiling_signal(
    _sig: i32,
    info: *mut libc::siginfo_t,
    ucontext: *mut c_void,
) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above, valid for the thread's lifetime.
    let saved = unsafe { *errno };
    let sampler = SAMPLER.load(Ordering::Acquire);
    if !sampler.is_null() {
        // SAFETY: the sampler is never freed once published.
        let sampler = unsafe { &*sampler };
        let wall_mode = || sampler.wall_period_ns.load(Ordering::Relaxed) != 0;
        if crate::sigmask::forward_foreign(_sig, info, ucontext, wall_mode) {
            // Sent by someone else: the program's (see sigmask::sigaction).
        } else if sampler.running.load(Ordering::Acquire) {
            // A perf clock's random first period is over: the next ones
            // are whole.
            crate::timers::end_first_period(info);
            sampler.stats.interrupts.fetch_add(1, Ordering::Relaxed);
            // Who we are, once per signal: the weight and the unwinder
            // both need it.
            let me = Me::now(sampler);
            // The rest needs ~13 KiB of stack: it runs on one of the
            // agent's own, as the interrupted code's may be small (a
            // sigaltstack, a coroutine's).
            let on_own_stack = crate::handler_stack::run_on_own_stack(thread_hash(me.tid), || {
                sample_signal(sampler, &me, info, ucontext)
            });
            if !on_own_stack {
                // Every one of ours is held (by handlers of threads
                // preempted in them): the thread's own stack will do when
                // the signal interrupted it near its top; anywhere else
                // (a small stack) the sample is dropped.
                if on_thread_stack(&me, ucontext) {
                    sample_signal(sampler, &me, info, ucontext);
                } else {
                    sampler.stats.dropped_busy.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    // SAFETY: as above.
    unsafe { *errno = saved };
}

/// True when the interrupted stack pointer lies in the top MiB of the
/// thread's registered stack, where the handler's ~13 KiB surely fit.
fn on_thread_stack(me: &Me, ucontext: *mut c_void) -> bool {
    let (Some(slot), Some((_, sp, _))) = (me.slot, registers(ucontext)) else {
        return false;
    };
    let end = slot.stack_end.load(Ordering::Relaxed);
    end > sp && end - sp < 1 << 20
}

/// Weighs and records the sample of one signal (on the agent's stack).
fn sample_signal(sampler: &Sampler, me: &Me, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    let wall_period = sampler.wall_period_ns.load(Ordering::Relaxed);
    let Some(weight) = sample_weight(sampler, me, info, wall_period) else {
        return;
    };
    let state = if wall_period != 0 {
        wall_state(me, wall_period, weight)
    } else {
        0
    };
    // Unlabelled wall-clock samples keep their state (with tid 0): the
    // wall-clock driver repeats only waiting ones.
    let tag = if sampler.label_threads.load(Ordering::Relaxed) {
        sample_tag(me.tid, state)
    } else {
        sample_tag(0, state)
    };
    take_sample(sampler, me, ucontext, weight, tag);
    if wall_period != 0 {
        // After the sample: the handler's own CPU time is not the
        // thread's work.
        if let (Some(slot), Some(now)) = (me.slot, thread_cpu_ns()) {
            slot.cpu_mark.store(now.max(1), Ordering::Relaxed);
        }
    }
}

/// The interrupted thread: its id and its slot, if registered.
pub(crate) struct Me<'a> {
    tid: i32,
    slot: Option<&'a ThreadSlot>,
}

impl<'a> Me<'a> {
    /// The calling thread (one `gettid` and one slot lookup).
    pub(crate) fn now(sampler: &'a Sampler) -> Me<'a> {
        let tid = gettid();
        Me {
            tid,
            slot: sampler.thread_slot(tid),
        }
    }
}

/// A sample's thread state (wall-clock mode): unknown, running, waiting.
pub(crate) const STATE_UNKNOWN: u64 = 0;
/// The thread was on CPU for at least a tenth of the wall time the sample
/// stands for.
pub(crate) const STATE_RUNNING: u64 = 1;
/// The thread was on CPU for less than a tenth of it (blocked, sleeping,
/// or never scheduled).
pub(crate) const STATE_WAITING: u64 = 2;

/// A sample's tag in the stack table: the tid in the low 32 bits, the
/// state in the next 2 (the control side adds the thread's name index
/// above, at the drain).
pub(crate) fn sample_tag(tid: i32, state: u64) -> u64 {
    u64::from(tid as u32) | (state & 3) << 32
}

/// The tid of a tag.
pub(crate) fn tag_tid(tag: u64) -> i32 {
    tag as u32 as i32
}

/// The state of a tag ([`STATE_UNKNOWN`], [`STATE_RUNNING`], [`STATE_WAITING`]).
pub(crate) fn tag_state(tag: u64) -> u64 {
    (tag >> 32) & 3
}

/// The time of a sample (the monotonic clock, ns) when the session keeps
/// times, None otherwise (or if the clock cannot be read).
/// Async-signal-safe: `clock_gettime` through the vDSO.
fn sample_time(sampler: &Sampler) -> Option<u64> {
    if !sampler.record_times.load(Ordering::Relaxed) {
        return None;
    }
    clock_ns(libc::CLOCK_MONOTONIC).filter(|&t| t != 0)
}

/// The calling thread's CPU time in ns (async-signal-safe).
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Wall-clock mode: was the thread on CPU during the `weight` periods this
/// sample stands for? Running when its CPU clock advanced by at least a
/// tenth of that wall time since the end of its last sample (or its
/// arming), waiting otherwise; unknown without a mark. Not "advanced at
/// all": a blocked thread's clock moves by the few microseconds of going
/// back into its system call after each sample; and a tenth, not a half,
/// so that a busy thread sharing an overloaded CPU still counts as running.
fn wall_state(me: &Me, period_ns: u64, weight: u64) -> u64 {
    let Some(slot) = me.slot else {
        return STATE_UNKNOWN;
    };
    let mark = slot.cpu_mark.load(Ordering::Relaxed);
    let Some(now) = thread_cpu_ns() else {
        return STATE_UNKNOWN;
    };
    if mark == 0 || mark > now {
        return STATE_UNKNOWN;
    }
    let wall = period_ns.saturating_mul(weight);
    if (now - mark).saturating_mul(10) >= wall {
        STATE_RUNNING
    } else {
        STATE_WAITING
    }
}

/// The most samples one signal may stand for (merged timer expirations, or
/// CPU periods since the last sample).
const MAX_WEIGHT: u64 = 10_000;

/// How many samples this signal stands for; `None` when it stands for none.
/// POSIX timers: 1 + the timer's overrun (how many expirations were merged
/// into this signal). perf task-clock: see [`cpu_time_weight`].
fn sample_weight(
    sampler: &Sampler,
    me: &Me,
    info: *mut libc::siginfo_t,
    wall_period: u64,
) -> Option<u64> {
    if wall_period != 0 {
        // The wall-clock driver counted the periods it signalled for.
        let pending = me
            .slot
            .map_or(0, |slot| slot.pending.swap(0, Ordering::AcqRel));
        return Some(pending.clamp(1, MAX_WEIGHT));
    }
    let cpu_period = sampler.cpu_clock_period_ns.load(Ordering::Relaxed);
    if cpu_period != 0 {
        return cpu_time_weight(sampler, me, cpu_period);
    }
    if info.is_null() || !sampler.weight_overruns.load(Ordering::Relaxed) {
        return Some(1);
    }
    // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
    let info = unsafe { &*info };
    if info.si_code != libc::SI_TIMER {
        return Some(1);
    }
    // SAFETY: si_code SI_TIMER says the timer fields are the valid ones.
    let overrun = unsafe { si_overrun(info) };
    Some(1 + (overrun.max(0) as u64).min(MAX_WEIGHT))
}

/// perf's task-clock counts the time a thread is on a (virtual) CPU,
/// including time the hypervisor stole from that CPU; the thread's CPU
/// clock (`CLOCK_THREAD_CPUTIME_ID`, what `getrusage` and `time` report)
/// does not. On a busy host task-clock fires up to twice as often per
/// CPU-second. So the signal only triggers the sample; its weight is the
/// number of whole periods of the thread's own CPU time since the last
/// one (0: the signal is skipped), and the remainder carries over. Over a
/// run the samples add up to the thread's CPU time / period exactly, and a
/// lost signal is made up by the next one.
fn cpu_time_weight(sampler: &Sampler, me: &Me, period: u64) -> Option<u64> {
    let Some(slot) = me.slot else {
        return Some(1);
    };
    let Some(now) = thread_cpu_ns() else {
        return Some(1);
    };
    let (mark, periods) = cpu_periods(slot.cpu_mark.load(Ordering::Relaxed), now, period);
    slot.cpu_mark.store(mark, Ordering::Relaxed);
    if periods == 0 {
        sampler.stats.skipped.fetch_add(1, Ordering::Relaxed);
        None
    } else {
        Some(periods.min(MAX_WEIGHT))
    }
}

/// Whole periods of CPU time between `mark` (0: none yet) and `now`, and
/// the new mark (the remainder carries over). The first signal since
/// arming stands for one period, however little CPU time the thread has
/// had: its clock's first period is random, uniform in (0, period]
/// ([`crate::timers::first_period_ns`]), so a thread that lives c < period
/// gets that one sample with probability c / period.
pub(crate) fn cpu_periods(mark: u64, now: u64, period: u64) -> (u64, u64) {
    if mark == 0 || mark > now {
        return (now.max(1), 1);
    }
    let periods = (now - mark) / period.max(1);
    (mark + periods * period, periods)
}

/// `si_overrun` of a timer siginfo (glibc layout: after si_tid).
unsafe fn si_overrun(info: &libc::siginfo_t) -> i32 {
    #[repr(C)]
    struct TimerSiginfo {
        si_signo: i32,
        si_errno: i32,
        si_code: i32,
        _pad: i32,
        si_tid: i32,
        si_overrun: i32,
    }
    // SAFETY: siginfo_t is 128 bytes; the prefix matches the kernel layout.
    unsafe { (*(info as *const libc::siginfo_t as *const TimerSiginfo)).si_overrun }
}

fn take_sample(sampler: &Sampler, me: &Me, ucontext: *mut c_void, weight: u64, tag: u64) {
    let stats = &sampler.stats;
    let filter = sampler.filter.load(Ordering::Acquire);
    if filter != 0 {
        // SAFETY: set from a `int (*)(void *)` by ProfilerStartWithOptions;
        // gperftools documents that it runs in the signal handler.
        let filter: extern "C" fn(*mut c_void) -> i32 = unsafe { std::mem::transmute(filter) };
        if filter(sampler.filter_arg.load(Ordering::Relaxed) as *mut c_void) == 0 {
            stats.filtered.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    let Some(side) = sampler.gate.enter() else {
        stats.dropped_busy.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // The moment of the interrupt, before the unwinding's few µs.
    let time = sample_time(sampler);
    let mut stack = [0u64; MAX_DEPTH];
    let depth = capture_stack(sampler, me, ucontext, &mut stack);
    if let Some(captured) = stack.get(..depth).filter(|s| !s.is_empty()) {
        let active = sampler.active_table.load(Ordering::Acquire) & 1;
        let table = sampler.tables.get(active);
        let drained = has_control_thread();
        let mut times_full = false;
        let full = match table.map(|t| (t, t.record(captured, tag, weight))) {
            Some((table, Ok((index, hash)))) => {
                stats.samples.fetch_add(weight, Ordering::Relaxed);
                if let Some(time) = time {
                    // When full, the sample counts without a time (the
                    // drain tells them apart: count minus timed weights).
                    times_full = !table.note_time(
                        index,
                        weight,
                        time,
                        &sampler.time_bucket_ns,
                        sampler.time_epoch_offset.load(Ordering::Relaxed),
                        !drained,
                    );
                }
                if let Some(slot) = me.slot {
                    slot.last_entry
                        .store(last_entry(active, index), Ordering::Relaxed);
                    slot.last_hash.store(hash, Ordering::Release);
                }
                false
            }
            Some((_, Err(Dropped::TableFull))) | None => {
                stats.dropped_full.fetch_add(weight, Ordering::Relaxed);
                true
            }
        };
        if drained {
            // Woken when a table (or its time records) is full or half
            // full; without a control thread the handler moves to the
            // other table itself when the active one is half full and the
            // other empty, and a wake (a system call) would wake no one.
            let occupied = table.map_or(0, |t| t.occupied.load(Ordering::Relaxed));
            let times_used = table.map_or(0, |t| t.times_used.load(Ordering::Relaxed));
            let half = |n: usize| n / 2;
            if full
                || times_full
                || occupied == half(sampler.tables[0].entries.len())
                || (time.is_some() && times_used == half(sampler.tables[0].times.len()) + 1)
            {
                sampler.wake_control();
            }
        } else {
            sampler.turn_tables_if_other_empty(active);
        }
    }
    sampler.gate.leave(side);
}

/// For the wall-clock driver (a thread, not a handler, but lock-free all
/// the same): counts `weight` more periods on the last sample of a thread
/// that has not run since, if that sample is still in the active table
/// and says the thread was waiting. False when the thread must be
/// signalled for a fresh sample instead.
pub(crate) fn repeat_waiting_sample(sampler: &Sampler, slot: &ThreadSlot, weight: u64) -> bool {
    let hash = slot.last_hash.load(Ordering::Acquire);
    if hash == 0 {
        return false;
    }
    let Some(side) = sampler.gate.enter() else {
        return false;
    };
    let last = slot.last_entry.load(Ordering::Relaxed);
    let active = sampler.active_table.load(Ordering::Acquire) & 1;
    let mut repeated = false;
    if (last >> 32) as usize == active {
        let entry = sampler
            .tables
            .get(active)
            .and_then(|t| t.entries.get((last & 0xffff_ffff) as usize));
        if let Some(entry) = entry {
            let waiting = tag_state(entry.tag.load(Ordering::Relaxed)) == STATE_WAITING;
            if entry.hash.load(Ordering::Acquire) == hash && waiting {
                entry.count.fetch_add(weight, Ordering::Relaxed);
                sampler.stats.samples.fetch_add(weight, Ordering::Relaxed);
                if let (Some(time), Some(table)) =
                    (sample_time(sampler), sampler.tables.get(active))
                {
                    // When full, counted without a time (see take_sample).
                    let _ = table.note_time(
                        (last & 0xffff_ffff) as usize,
                        weight,
                        time,
                        &sampler.time_bucket_ns,
                        sampler.time_epoch_offset.load(Ordering::Relaxed),
                        false,
                    );
                }
                repeated = true;
            }
        }
    }
    sampler.gate.leave(side);
    repeated
}

/// Registers of the interrupted context (x86-64 glibc `ucontext_t`).
pub(crate) fn registers(ucontext: *const c_void) -> Option<(u64, u64, u64)> {
    if ucontext.is_null() {
        return None;
    }
    // SAFETY: the kernel passes a valid ucontext to SA_SIGINFO handlers;
    // callers of ProfilerGetStackTrace pass one as documented.
    let gregs = unsafe { &(*(ucontext as *const libc::ucontext_t)).uc_mcontext.gregs };
    let pc = *gregs.get(libc::REG_RIP as usize)? as u64;
    let sp = *gregs.get(libc::REG_RSP as usize)? as u64;
    let bp = *gregs.get(libc::REG_RBP as usize)? as u64;
    Some((pc, sp, bp))
}

/// Unwinds the interrupted thread into `out` (leaf first); returns the
/// depth. Needs the gate held.
fn capture_stack(
    sampler: &Sampler,
    me: &Me,
    ucontext: *mut c_void,
    out: &mut [u64; MAX_DEPTH],
) -> usize {
    let Some((pc, sp, bp)) = registers(ucontext) else {
        return 0;
    };
    unwind(sampler, me, pc, sp, bp, out)
}

/// Unwinds thread `me` from (pc, sp, bp) into `out`. Async-signal-safe;
/// needs the gate held by the caller.
pub(crate) fn unwind(
    sampler: &Sampler,
    me: &Me,
    pc: u64,
    sp: u64,
    bp: u64,
    out: &mut [u64],
) -> usize {
    let stats = &sampler.stats;
    let Some(first) = out.first_mut() else {
        return 0;
    };
    *first = pc;
    let snapshot = sampler.modules.load(Ordering::Acquire);
    if snapshot.is_null() {
        return 1;
    }
    // SAFETY: published snapshots stay alive while the gate is held.
    let snapshot = unsafe { &*snapshot };
    if !snapshot.contains_code(pc) && !sampler.modules_stale.swap(true, Ordering::Relaxed) {
        sampler.wake_control();
    }
    let tid = me.tid;
    let stack_end = me
        .slot
        .map(|slot| slot.stack_end.load(Ordering::Relaxed))
        .filter(|&end| end > sp)
        .or_else(|| snapshot.stack_end_for(sp))
        .or_else(|| {
            // SAFETY: getpid is async-signal-safe.
            let main = tid == unsafe { libc::getpid() };
            (main && snapshot.main_stack_end > sp).then_some(snapshot.main_stack_end)
        });
    let Some(stack_end) = stack_end else {
        stats.leaf_only.fetch_add(1, Ordering::Relaxed);
        return 1;
    };
    let Some(slot) = acquire_cache(sampler, tid) else {
        stats.dropped_busy.fetch_add(1, Ordering::Relaxed);
        return 1;
    };
    // SAFETY: we won `busy`, so the cache is ours until released.
    let cache = unsafe { &mut *slot.cache.get() };
    let mut read_stack = |addr: u64| -> Result<u64, ()> {
        if addr >= sp && addr % 8 == 0 && addr.checked_add(8).is_some_and(|end| end <= stack_end) {
            // SAFETY: [sp, stack_end) is the mapped stack of this thread.
            Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
        } else {
            Err(())
        }
    };
    let regs = UnwindRegsX86_64::new(pc, sp, bp);
    let mut frames = snapshot
        .unwinder
        .iter_frames(pc, regs, cache, &mut read_stack);
    let mut depth = 0usize;
    loop {
        match frames.next() {
            Ok(Some(frame)) => match out.get_mut(depth) {
                Some(slot) => {
                    *slot = frame.address();
                    depth += 1;
                }
                None => {
                    stats.truncated_depth.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            },
            Ok(None) => break,
            Err(_) => {
                stats.truncated_unwind.fetch_add(1, Ordering::Relaxed);
                break;
            }
        }
    }
    slot.busy.store(false, Ordering::Release);
    depth.max(1)
}

fn acquire_cache(sampler: &Sampler, tid: i32) -> Option<&CacheSlot> {
    let n = sampler.caches.len();
    let start = thread_hash(tid) % n.max(1);
    for i in 0..n {
        let slot = sampler.caches.get((start + i) % n)?;
        if slot
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Some(slot);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::cpu_periods;
    use super::*;

    /// A single-threaded run with no control thread: 1,000 Hz for an hour
    /// on five stacks taking turns fills one table's time records. At full
    /// resolution nothing merges until the records are half used; then
    /// each sixteenth more makes the bucket coarser, samples merge into
    /// the last records of their entry, and the hour fits: every sample
    /// keeps a time (the weights add up to the count).
    #[test]
    fn time_records_coarsen_instead_of_filling_up() {
        let table = crate::collector::new_table();
        let bucket = AtomicU64::new(1);
        let offset = 1_700_000_000_000_000_000u64;
        let samples = 3_600_000u64;
        let mut kept = 0;
        for i in 0..samples {
            let time = 5_000_000_000 + i * 1_000_000;
            if table.note_time((i % 5) as usize, 1, time, &bucket, offset, true) {
                kept += 1;
            }
        }
        assert_eq!(kept, samples, "a sample lost its time");
        let used = table.times_used.load(Ordering::Relaxed);
        assert!(used < table.times.len(), "{used} records used");
        let weights: u64 = table.times[..used]
            .iter()
            .map(|r| r.entry.load(Ordering::Relaxed) & 0xffff_ffff)
            .sum();
        assert_eq!(weights, samples);
        let size = bucket.load(Ordering::Relaxed);
        assert!(size >= 1_000_000_000, "bucket {size} ns");
        // A merged record's samples share its (epoch) bucket.
        let last = &table.times[used - 1];
        assert_eq!(
            last.time.load(Ordering::Relaxed) / 1_000_000 % 5,
            (last.entry.load(Ordering::Relaxed) >> 32) % 5
        );
    }

    /// With a control thread (no escalation) and full resolution, each
    /// sample has its own record, and a full array refuses the rest.
    #[test]
    fn full_time_records_refuse_without_escalation() {
        let table = crate::collector::new_table();
        let bucket = AtomicU64::new(1);
        let n = table.times.len() as u64;
        let kept = (0..n + 10)
            .filter(|&i| table.note_time(0, 1, 1 + i, &bucket, 0, false))
            .count() as u64;
        assert_eq!(kept, n);
        assert_eq!(bucket.load(Ordering::Relaxed), 1);
    }

    /// Signals at every period of task-clock time while the thread's CPU
    /// clock advances `cpu_per_tick(i)` ns between signals (less under steal, with
    /// jitter): the samples add up to CPU time / period.
    fn samples(cpu_per_tick: impl Fn(u64) -> u64, signals: u64, period: u64) -> u64 {
        let (mut mark, mut now, mut total) = (0, 5_000_000, 0);
        for i in 0..signals {
            now += cpu_per_tick(i);
            let (next, periods) = cpu_periods(mark, now, period);
            mark = next;
            total += periods;
        }
        total
    }

    #[test]
    fn without_steal_every_signal_is_one_sample() {
        assert_eq!(samples(|_| 1_000_000, 1000, 1_000_000), 1000);
    }

    #[test]
    fn jitter_around_the_period_loses_nothing() {
        // 0.9, 1.1, 0.9, 1.1 ... periods: 1000 signals, 1000 periods.
        let n = samples(
            |i| if i % 2 == 0 { 900_000 } else { 1_100_000 },
            1000,
            1_000_000,
        );
        assert!((999..=1000).contains(&n), "{n}");
    }

    #[test]
    fn half_the_time_stolen_gives_half_the_samples() {
        // task-clock fires every 1 ms of wall time on the vCPU, the thread
        // ran 0.5 ms of it.
        assert_eq!(samples(|_| 500_000, 1000, 1_000_000), 500);
    }

    #[test]
    fn the_first_signal_of_a_short_thread_is_one_period() {
        // Its clock's random first period ended after 0.3 ms of CPU time.
        assert_eq!(cpu_periods(0, 300_000, 1_000_000), (300_000, 1));
    }

    #[test]
    fn a_lost_signal_is_made_up_by_the_next() {
        let (mark, periods) = cpu_periods(10_000_000, 13_200_000, 1_000_000);
        assert_eq!((mark, periods), (13_000_000, 3));
        // A clock that went backwards (new thread on a reused slot) starts
        // afresh with one period.
        assert_eq!(
            cpu_periods(50_000_000, 3_000_000, 1_000_000),
            (3_000_000, 1)
        );
    }
}
