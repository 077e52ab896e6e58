//! The control side of the shared structures in [`crate::signal_path`]:
//! creating the [`Sampler`], registering threads, swapping module
//! snapshots and draining stack tables. Never called from a signal
//! handler.

use std::alloc::{alloc_zeroed, Layout};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

use rustc_hash::FxHashMap;

use crate::signal_path::{
    coarser_resolution, thread_hash, CacheSlot, Entry, Gate, ModuleSnapshot, Sampler, StackTable,
    Stats, ThreadSlot, TimeRecord, UnwindCache, COARSEST_RESOLUTION, SAMPLER, TID_REMOVED,
};

/// One sample's key once drained: its stack (leaf first, return addresses
/// as sampled), its labels: the tag of
/// [`crate::signal_path::sample_tag`] (tid, state) with the thread's name
/// index (see [`crate::thread_names`]) from bit 34 up; 0 when unlabelled;
/// and its time: ns since the Unix epoch rounded down to the session's
/// time resolution ([`round_time`]), 0 when the sample has none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SampleKey {
    /// Shared by the samples of one stack taken at different times.
    pub(crate) stack: std::sync::Arc<[u64]>,
    pub(crate) labels: u64,
    pub(crate) time: u64,
}

/// Samples per key.
pub(crate) type Stacks = FxHashMap<SampleKey, u64>;

/// What [`Sampler::drain`] hands each stack to: (stack, tag, count,
/// (monotonic ns, weight) of its timed samples).
pub(crate) type DrainSink<'a> = dyn FnMut(Vec<u64>, u64, u64, &[(u64, u64)]) + 'a;

/// Entries per stack table (a power of two).
const TABLE_ENTRIES: usize = 1 << 15;
/// PC slots per table: 8 MiB of address space, touched only as used.
const TABLE_PCS: usize = 1 << 20;
/// Thread slots (a power of two): at most half may be in use.
const THREAD_SLOTS: usize = 1 << 13;
/// Time records per table (16 bytes each: 1 MiB of address space, touched
/// only as used). The control thread is woken at half, drains at least
/// every second in sessions that keep times, and wakes within 100 ms:
/// 32,768 samples between drains is 100 threads at 1,000 Hz for 300 ms.
pub(crate) const TABLE_TIMES: usize = 1 << 16;

/// The most distinct samples (stack, labels, time) a session or window
/// keeps in memory before its times are coarsened ([`coarsen_times`]):
/// this bounds the agent's memory and the profile's size in long runs.
pub(crate) const TIMED_SAMPLES_MAX: usize = 1 << 18;

/// `time` (ns since the epoch, 0: none) rounded down to a multiple of
/// `resolution` (1: unchanged).
pub(crate) fn round_time(time: u64, resolution: u64) -> u64 {
    if time == 0 || resolution <= 1 {
        time
    } else {
        time - time % resolution
    }
}

/// Rounds every time of `stacks` down to `resolution`, merging the
/// samples that become equal (totals unchanged).
pub(crate) fn round_times(stacks: &mut Stacks, resolution: u64) {
    let before = std::mem::take(stacks);
    for (mut key, count) in before {
        key.time = round_time(key.time, resolution);
        *stacks.entry(key).or_insert(0) += count;
    }
}

/// While `stacks` holds more than `max` distinct samples and times can be
/// coarsened further, rounds every time to the next coarser resolution,
/// merging the samples that become equal, down to at most half of `max`
/// (so that a long run coarsens a few times, not at every drain).
/// Returns true when `resolution` changed. Totals are unchanged.
pub(crate) fn coarsen_times(stacks: &mut Stacks, resolution: &mut u64, max: usize) -> bool {
    if stacks.len() <= max || *resolution == 0 {
        return false;
    }
    let mut changed = false;
    while stacks.len() > max / 2 && *resolution < COARSEST_RESOLUTION {
        *resolution = coarser_resolution(*resolution);
        changed = true;
        round_times(stacks, *resolution);
    }
    changed
}
/// Allocates `n` zeroed atomics in one block (calloc: untouched pages cost
/// no memory).
fn zeroed_slice<T>(n: usize) -> Box<[T]> {
    let layout = Layout::array::<T>(n).expect("table size fits in memory");
    // SAFETY: T is an atomic (or a struct of atomics) for which all-zero
    // bits are a valid value; the layout is non-zero-sized.
    unsafe {
        let ptr = alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n))
    }
}

pub(crate) fn new_table() -> StackTable {
    StackTable {
        entries: zeroed_slice::<Entry>(TABLE_ENTRIES),
        pcs: zeroed_slice::<AtomicU64>(TABLE_PCS),
        pcs_used: AtomicUsize::new(0),
        occupied: AtomicUsize::new(0),
        times: zeroed_slice::<TimeRecord>(TABLE_TIMES),
        times_used: AtomicUsize::new(0),
    }
}

/// The global sampler, created on first use and never freed.
pub(crate) fn sampler() -> &'static Sampler {
    let existing = SAMPLER.load(Ordering::Acquire);
    if !existing.is_null() {
        // SAFETY: published samplers are leaked, never freed.
        return unsafe { &*existing };
    }
    let caches = (std::thread::available_parallelism().map_or(4, |n| n.get()) * 2).clamp(8, 256);
    crate::handler_stack::prepare(caches);
    let sampler = Box::new(Sampler {
        gate: Gate::new(),
        tables: [new_table(), new_table()],
        active_table: AtomicUsize::new(0),
        modules: AtomicPtr::new(std::ptr::null_mut()),
        caches: (0..caches)
            .map(|_| CacheSlot {
                busy: AtomicBool::new(false),
                cache: std::cell::UnsafeCell::new(UnwindCache::new_in()),
            })
            .collect(),
        threads: (0..THREAD_SLOTS)
            .map(|_| ThreadSlot {
                tid: AtomicI32::new(0),
                stack_end: AtomicU64::new(0),
                timer: AtomicU64::new(u64::MAX),
                via_pthread_create: AtomicBool::new(false),
                program_blocks: AtomicBool::new(false),
                cpu_mark: AtomicU64::new(0),
                pending: AtomicU64::new(0),
                last_entry: AtomicU64::new(0),
                last_hash: AtomicU64::new(0),
            })
            .collect(),
        running: AtomicBool::new(false),
        filter: AtomicUsize::new(0),
        filter_arg: AtomicUsize::new(0),
        weight_overruns: AtomicBool::new(false),
        label_threads: AtomicBool::new(false),
        record_times: AtomicBool::new(false),
        time_bucket_ns: AtomicU64::new(1),
        time_epoch_offset: AtomicU64::new(0),
        wall_period_ns: AtomicU64::new(0),
        cpu_clock_period_ns: AtomicU64::new(0),
        modules_stale: AtomicBool::new(false),
        wake_word: AtomicU32::new(0),
        stats: Stats::default(),
    });
    let ptr = Box::into_raw(sampler);
    match SAMPLER.compare_exchange(
        std::ptr::null_mut(),
        ptr,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just published; never freed.
        Ok(_) => unsafe { &*ptr },
        Err(winner) => {
            // SAFETY: ours was never published; the winner is never freed.
            unsafe {
                drop(Box::from_raw(ptr));
                &*winner
            }
        }
    }
}

/// The sampler if it exists, without creating it.
pub(crate) fn existing_sampler() -> Option<&'static Sampler> {
    let ptr = SAMPLER.load(Ordering::Acquire);
    // SAFETY: published samplers are never freed.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

impl Sampler {
    /// Publishes a new module snapshot and frees the old one once no
    /// handler can see it. Caller holds the control lock (gate writers must be serialized).
    pub(crate) fn install_modules(&self, snapshot: ModuleSnapshot) {
        let new = Box::into_raw(Box::new(snapshot));
        let old = self.modules.swap(new, Ordering::AcqRel);
        self.modules_stale.store(false, Ordering::Relaxed);
        if !old.is_null() {
            self.gate.synchronize();
            // SAFETY: unpublished, and every handler that could see it has left.
            drop(unsafe { Box::from_raw(old) });
        }
    }

    /// The current snapshot (valid while the caller holds the control lock).
    pub(crate) fn current_modules(&self) -> Option<&ModuleSnapshot> {
        let ptr = self.modules.load(Ordering::Acquire);
        // SAFETY: only replaced under the control lock, which the caller holds.
        (!ptr.is_null()).then(|| unsafe { &*ptr })
    }

    /// Swaps the active table, waits for handlers using the old one, and
    /// hands each of its samples to `sink(stack, tag, count, times)` (the
    /// tag is [`crate::signal_path::sample_tag`]'s, 0 when unlabelled;
    /// `times` the (monotonic ns, weight) of the samples of that count
    /// whose time was recorded, in the order taken: empty when the session
    /// keeps no times). Returns the number of distinct samples moved.
    /// Caller holds the control lock (gate writers must be serialized).
    pub(crate) fn drain(&self, sink: &mut DrainSink) -> u64 {
        let old = self.active_table.fetch_xor(1, Ordering::AcqRel) & 1;
        self.gate.synchronize();
        let table = &self.tables[old];
        // The time records by entry (a stable sort keeps each entry's in
        // the order taken).
        let used = table
            .times_used
            .load(Ordering::Relaxed)
            .min(table.times.len());
        let mut times: Vec<(usize, u64, u64)> = table.times[..used]
            .iter()
            .map(|r| {
                let entry = r.entry.load(Ordering::Relaxed);
                let time = r.time.load(Ordering::Relaxed);
                ((entry >> 32) as usize, time, entry & 0xffff_ffff)
            })
            .filter(|&(_, time, weight)| time != 0 && weight != 0)
            .collect();
        times.sort_by_key(|&(index, _, _)| index);
        let mut next_time = 0;
        let mut entry_times: Vec<(u64, u64)> = Vec::new();
        let mut moved = 0;
        for (index, entry) in table.entries.iter().enumerate() {
            let hash = entry.hash.load(Ordering::Acquire);
            if hash == 0 {
                continue;
            }
            entry_times.clear();
            while let Some(&(i, time, weight)) = times.get(next_time) {
                if i > index {
                    break;
                }
                if i == index {
                    entry_times.push((time, weight));
                }
                next_time += 1;
            }
            let count = entry.count.load(Ordering::Relaxed);
            let len = entry.len.load(Ordering::Relaxed) as usize;
            let offset = entry.offset.load(Ordering::Relaxed) as usize;
            if count > 0 && len > 0 {
                if let Some(slots) = table.pcs.get(offset..offset + len) {
                    let stack: Vec<u64> = slots.iter().map(|s| s.load(Ordering::Relaxed)).collect();
                    sink(
                        stack,
                        entry.tag.load(Ordering::Relaxed),
                        count,
                        &entry_times,
                    );
                    moved += 1;
                }
            }
            entry.count.store(0, Ordering::Relaxed);
            entry.len.store(0, Ordering::Relaxed);
            entry.tag.store(0, Ordering::Relaxed);
            entry.hash.store(0, Ordering::Release);
        }
        table.reset_pools();
        moved
    }

    /// True when the active table is filling up and should be drained.
    pub(crate) fn table_needs_drain(&self) -> bool {
        let table = &self.tables[self.active_table.load(Ordering::Acquire) & 1];
        table.half_full()
    }

    /// Empties both tables without reading them (a forked child drops its
    /// parent's samples). No handler runs when this is called.
    pub(crate) fn clear_tables(&self) {
        for table in &self.tables {
            for entry in table.entries.iter() {
                entry.hash.store(0, Ordering::Relaxed);
                entry.count.store(0, Ordering::Relaxed);
                entry.len.store(0, Ordering::Relaxed);
            }
            table.reset_pools();
        }
    }

    /// Registers thread `tid` (idempotent); returns its slot. Caller
    /// holds the thread registry lock.
    pub(crate) fn register_thread(&self, tid: i32) -> Option<&ThreadSlot> {
        if let Some(slot) = self.thread_slot(tid) {
            return Some(slot);
        }
        let mask = self.threads.len() - 1;
        let mut index = thread_hash(tid) & mask;
        for _ in 0..self.threads.len() / 2 {
            let slot = &self.threads[index];
            let current = slot.tid.load(Ordering::Acquire);
            if current == 0 || current == TID_REMOVED {
                slot.stack_end.store(0, Ordering::Relaxed);
                slot.armed(u64::MAX);
                slot.via_pthread_create.store(false, Ordering::Relaxed);
                slot.program_blocks.store(false, Ordering::Relaxed);
                slot.tid.store(tid, Ordering::Release);
                return Some(slot);
            }
            index = (index + 1) & mask;
        }
        None
    }

    /// Forgets thread `tid`. Caller holds the thread registry lock.
    pub(crate) fn unregister_thread(&self, tid: i32) {
        if let Some(slot) = self.thread_slot(tid) {
            slot.stack_end.store(0, Ordering::Relaxed);
            slot.tid.store(TID_REMOVED, Ordering::Release);
        }
    }

    /// Every registered thread: (tid, slot).
    pub(crate) fn registered_threads(&self) -> impl Iterator<Item = (i32, &ThreadSlot)> {
        self.threads.iter().filter_map(|slot| {
            let tid = slot.tid.load(Ordering::Acquire);
            (tid > 0).then_some((tid, slot))
        })
    }

    /// Resets the counters for a new profiling session.
    pub(crate) fn reset_stats(&self) {
        let s = &self.stats;
        for counter in [
            &s.interrupts,
            &s.samples,
            &s.skipped,
            &s.filtered,
            &s.dropped_full,
            &s.dropped_busy,
            &s.truncated_depth,
            &s.truncated_unwind,
            &s.leaf_only,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(stack: u64, time: u64) -> SampleKey {
        SampleKey {
            stack: vec![stack].into(),
            labels: 0,
            time,
        }
    }

    #[test]
    fn times_round_down_to_the_resolution() {
        assert_eq!(round_time(1_234_567_891, 1), 1_234_567_891);
        assert_eq!(round_time(1_234_567_891, 10_000_000), 1_230_000_000);
        assert_eq!(round_time(0, 10_000_000), 0, "no time stays none");
    }

    /// 10 s of samples 1 ms apart on two stacks, kept to 1,000 distinct
    /// samples: 1 ms and 10 ms rounding leave too many (10,000 and 2,000),
    /// 100 ms leaves 200; every sample still counts.
    #[test]
    fn coarsening_bounds_the_samples_and_keeps_the_total() {
        let start = 1_700_000_000_000_000_000u64;
        let mut stacks = Stacks::default();
        for i in 0..10_000u64 {
            *stacks.entry(key(i % 2, start + i * 1_000_000)).or_insert(0) += 1;
        }
        *stacks.entry(key(5, 0)).or_insert(0) += 7;
        let mut resolution = 1;
        assert!(coarsen_times(&mut stacks, &mut resolution, 1_000));
        assert_eq!(resolution, 100_000_000);
        assert_eq!(stacks.len(), 201);
        assert_eq!(stacks.values().sum::<u64>(), 10_007);
        assert_eq!(stacks[&key(5, 0)], 7, "untimed samples stay apart");
        assert!(stacks.keys().all(|k| k.time % 100_000_000 == 0));
        // Within the bound: nothing changes.
        assert!(!coarsen_times(&mut stacks, &mut resolution, 1_000));
        assert_eq!(resolution, 100_000_000);
    }

    /// Distinct stacks alone over the bound: coarsening stops at the
    /// coarsest resolution instead of looping.
    #[test]
    fn coarsening_ends_when_times_cannot_merge_more() {
        let mut stacks = Stacks::default();
        for i in 0..100u64 {
            stacks.insert(key(i, 1_700_000_000_000_000_000), 1);
        }
        let mut resolution = 1;
        coarsen_times(&mut stacks, &mut resolution, 10);
        assert_eq!(resolution, COARSEST_RESOLUTION);
        assert_eq!(stacks.len(), 100);
        let mut off = 0;
        assert!(!coarsen_times(&mut stacks, &mut off, 10), "off stays off");
    }
}

/// How the samples of a session or window keep their times.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TimeKeeping {
    /// The resolution asked for (ns; 1: full, 0: no times).
    pub(crate) asked_ns: u64,
    /// The resolution in use: the one asked for, or coarser once the
    /// samples outgrew [`TIMED_SAMPLES_MAX`].
    pub(crate) resolution_ns: u64,
    /// Samples whose time was lost (the handler found the table's time
    /// records full): they count, with no time.
    pub(crate) untimed: u64,
}

impl TimeKeeping {
    pub(crate) fn new(asked_ns: u64) -> TimeKeeping {
        TimeKeeping {
            asked_ns,
            resolution_ns: asked_ns,
            untimed: 0,
        }
    }

    /// Adds `count` samples of (`stack`, `labels`) to `stacks`, `times`
    /// of them with their (epoch) time, the rest without.
    pub(crate) fn add(
        &mut self,
        stacks: &mut Stacks,
        stack: &std::sync::Arc<[u64]>,
        labels: u64,
        count: u64,
        times: &[(u64, u64)],
    ) {
        let mut timed = 0u64;
        if self.resolution_ns != 0 {
            for &(time, weight) in times {
                let weight = weight.min(count - timed);
                if weight == 0 {
                    break;
                }
                timed += weight;
                let key = SampleKey {
                    stack: stack.clone(),
                    labels,
                    time: round_time(time, self.resolution_ns),
                };
                *stacks.entry(key).or_insert(0) += weight;
            }
            self.untimed += count - timed;
        }
        if count > timed {
            let key = SampleKey {
                stack: stack.clone(),
                labels,
                time: 0,
            };
            *stacks.entry(key).or_insert(0) += count - timed;
        }
    }

    /// Coarsens the times of `stacks` when there are too many samples.
    pub(crate) fn bound(&mut self, stacks: &mut Stacks) {
        coarsen_times(stacks, &mut self.resolution_ns, TIMED_SAMPLES_MAX);
    }

    /// Takes the resolution the handler merged samples at
    /// ([`Sampler::time_bucket_ns`]) when coarser than ours, rounding
    /// the samples kept so far to it.
    pub(crate) fn follow(&mut self, stacks: &mut Stacks, bucket_ns: u64) {
        if self.resolution_ns != 0 && bucket_ns > self.resolution_ns {
            self.resolution_ns = bucket_ns;
            round_times(stacks, bucket_ns);
        }
    }
}
