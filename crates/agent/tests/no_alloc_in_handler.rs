//! Zero allocations inside the signal handler while sampling: a counting
//! global allocator records which thread allocates; a thread that never
//! allocates by itself is sampled thousands of times, and no allocation
//! may be seen on it meanwhile (the handler runs on the interrupted thread).
//! The same for the realtime path (per-thread wall-clock timers, labelled
//! samples with the thread's state) and for the crash path (the profile
//! written from the SIGABRT handler of a crashing process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

mod common;
use common::thread_cpu_seconds;

struct CountingAllocator;

/// The thread being watched (0: none) and the allocations seen on it.
static WATCHED_TID: AtomicI32 = AtomicI32::new(0);
static ALLOCATIONS_ON_WATCHED: AtomicU64 = AtomicU64::new(0);
/// In a forked child that is about to crash: a pipe to report each
/// allocation on the watched thread with one byte (-1: none).
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);
/// One profiling session at a time in this process.
static SESSIONS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gettid() -> i32 {
    // SAFETY: gettid cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn count() {
    let watched = WATCHED_TID.load(Ordering::Relaxed);
    if watched != 0 && gettid() == watched {
        ALLOCATIONS_ON_WATCHED.fetch_add(1, Ordering::Relaxed);
        let fd = REPORT_FD.load(Ordering::Relaxed);
        if fd >= 0 {
            // SAFETY: writing one byte from a static to a pipe.
            unsafe { libc::write(fd, b"a".as_ptr().cast(), 1) };
        }
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
    sampled_thread_sees_no_allocation(cpuprof::Settings {
        frequency: 4000,
        ..Default::default()
    });
}

/// Realtime mode: per-thread wall-clock timers, each sample labelled with
/// its thread and state (the handler reads the thread's CPU clock).
#[test]
fn realtime_handler_never_allocates() {
    sampled_thread_sees_no_allocation(cpuprof::Settings {
        frequency: 4000,
        realtime: true,
        format: cpuprof::ProfileFormat::Pprof,
        ..Default::default()
    });
}

fn sampled_thread_sees_no_allocation(settings: cpuprof::Settings) {
    let _one_session = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noalloc.prof");
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

/// The crash path: a forked child (profiled into `PATH_<pid>`, as the
/// agent does for children) burns CPU, then calls `abort()`; the agent's
/// SIGABRT handler writes the profile from the crashing thread. Every
/// allocation on that thread after a marker is reported through a pipe:
/// none may come, the child must still die of SIGABRT, and the profile
/// must hold its samples.
#[test]
fn crash_write_never_allocates() {
    let _one_session = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.prof");
    let settings = cpuprof::Settings {
        frequency: 1000,
        ..Default::default()
    };
    let guard = cpuprof::ProfilerGuard::start_with(&path, settings).unwrap();
    let mut fds = [0i32; 2];
    // SAFETY: a pipe into a local array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only burns CPU, writes to the pipe and aborts.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: closing the read end in the child.
        unsafe { libc::close(fds[0]) };
        black_box(allocation_free_work(0.3));
        REPORT_FD.store(fds[1], Ordering::SeqCst);
        WATCHED_TID.store(gettid(), Ordering::SeqCst);
        // The positive control: reported as "a".
        drop(black_box(Box::new(1u8)));
        // SAFETY: a marker byte, then the crash.
        unsafe {
            libc::write(fds[1], b"M".as_ptr().cast(), 1);
            libc::abort();
        }
    }
    // SAFETY: closing our copy of the write end, so the read sees EOF.
    unsafe { libc::close(fds[1]) };
    let mut reported = Vec::new();
    let mut chunk = [0u8; 64];
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(fds[0], chunk.as_mut_ptr().cast(), chunk.len()) };
        if n <= 0 {
            break;
        }
        reported.extend_from_slice(&chunk[..n as usize]);
    }
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    drop(guard);
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGABRT,
        "the child must die of SIGABRT (status {status:#x})"
    );
    assert!(
        reported.starts_with(b"a"),
        "the allocator must report the child's own allocation: {reported:?}"
    );
    let after_marker = reported.iter().skip_while(|&&b| b != b'M').skip(1).count();
    assert_eq!(
        after_marker, 0,
        "{after_marker} allocations on the crashing thread after the marker: the crash path allocated"
    );
    let child_profile = dir.path().join(format!("crash.prof_{pid}"));
    let data = std::fs::read(&child_profile)
        .unwrap_or_else(|e| panic!("{}: {e}", child_profile.display()));
    let profile = cpuprof_profile::gperftools::read(&data).unwrap();
    let samples: i64 = profile.samples.iter().map(|s| s.values[0]).sum();
    assert!(
        (240..=360).contains(&samples),
        "0.3 CPU-s at 1000 Hz before the crash: {samples} samples"
    );
}
