//! Zero allocations inside the signal handler while sampling: a counting
//! global allocator records which thread allocates; a thread that never
//! allocates by itself is sampled thousands of times, and no allocation
//! may be seen on it meanwhile (the handler runs on the interrupted thread).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

struct CountingAllocator;

/// The thread being watched (0: none) and the allocations seen on it.
static WATCHED_TID: AtomicI32 = AtomicI32::new(0);
static ALLOCATIONS_ON_WATCHED: AtomicU64 = AtomicU64::new(0);

fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn count() {
    let watched = WATCHED_TID.load(Ordering::Relaxed);
    if watched != 0 && gettid() == watched {
        ALLOCATIONS_ON_WATCHED.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count();
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[inline(never)]
fn allocation_free_work(seconds: f64) -> u64 {
    let end = thread_cpu_seconds() + seconds;
    let mut x = 7u64;
    while thread_cpu_seconds() < end {
        for _ in 0..10_000 {
            x = black_box(x ^ (x << 7) ^ (x >> 9));
        }
    }
    x
}

#[test]
fn handler_never_allocates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noalloc.prof");
    let settings = cpuprof::Settings {
        frequency: 4000,
        ..Default::default()
    };
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        ready_tx.send(gettid()).unwrap();
        go_rx.recv().unwrap();
        // The positive control: an allocation on this thread is counted.
        drop(black_box(Box::new(1u8)));
        let counted_control = ALLOCATIONS_ON_WATCHED.swap(0, Ordering::SeqCst);
        let result = allocation_free_work(0.5);
        let during = ALLOCATIONS_ON_WATCHED.load(Ordering::SeqCst);
        (counted_control, during, result)
    });
    let tid = ready_rx.recv().unwrap();
    let guard = cpuprof::ProfilerGuard::start_with(&path, settings).unwrap();
    WATCHED_TID.store(tid, Ordering::SeqCst);
    go_tx.send(()).unwrap();
    let (control, during, _) = worker.join().unwrap();
    WATCHED_TID.store(0, Ordering::SeqCst);
    let samples = cpuprof::state().samples;
    drop(guard);
    assert!(
        control >= 2,
        "the allocator must see this thread's own allocations ({control})"
    );
    assert!(
        samples >= 1500,
        "0.5 CPU-s at 4000 Hz gave only {samples} samples"
    );
    assert_eq!(
        during, 0,
        "{during} allocations on a sampled, allocation-free thread: the handler allocated"
    );
}
