//! Realtime mode's driver: one internal thread (every signal blocked,
//! never sampled) that wakes every period of wall time
//! (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`) and, for each
//! registered thread:
//!
//! - if the thread has not run since its last sample (its CPU clock,
//!   read with `clock_gettime` on the thread's clock, advanced by less
//!   than [`IDLE_NS`] and less than a tenth of the wall time the sample
//!   stands for), and that last sample said "waiting" and is still in the
//!   active table, counts the period on it: its stack cannot have changed,
//!   and the thread is not woken at all;
//! - otherwise sends it the sampling signal (`tgkill`); its handler takes
//!   a fresh sample weighted by the periods counted for it since
//!   (`ThreadSlot::pending`), with its state (running or waiting).
//!
//! At most one signal per thread is in flight (a thread that blocks the
//! signal accumulates weight, not queued signals). So idle threads cost
//! one `clock_gettime` per period each, not a signal, a wake-up and an
//! unwind: see `scripts/bench-agent-realtime`.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::collector::existing_sampler;
use crate::signal_path::{clock_ns, gettid, repeat_waiting_sample};
use crate::timers::thread_cpu_ns_of;

/// CPU time below which a thread counts as not having run since its last
/// sample (the few microseconds of going back into its system call).
const IDLE_NS: u64 = 50_000;

/// Bumped to stop the running driver (it checks at every wake).
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The running driver's tid (0: none; -1 while starting).
static DRIVER_TID: AtomicI32 = AtomicI32::new(0);
static PERIOD_NS: AtomicU64 = AtomicU64::new(10_000_000);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Starts a driver sampling every registered thread each `period_ns` of
/// wall time with `signal` (stopping any earlier one).
pub(crate) fn start(period_ns: u64, signal: i32) -> io::Result<()> {
    stop();
    PERIOD_NS.store(period_ns.max(1), Ordering::Release);
    SIGNAL.store(signal, Ordering::Release);
    DRIVER_TID.store(-1, Ordering::Release);
    extern "C" fn driver_main(_: *mut std::ffi::c_void) -> *mut std::ffi::c_void {
        drive();
        std::ptr::null_mut()
    }
    if crate::threads::spawn_internal(driver_main).is_err() {
        DRIVER_TID.store(0, Ordering::Release);
        return Err(io::Error::other(
            "cannot start the wall-clock driver thread",
        ));
    }
    // Wait for its tid, so that no sweep takes it for a program thread.
    let deadline = Instant::now() + Duration::from_secs(2);
    while DRIVER_TID.load(Ordering::Acquire) < 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    Ok(())
}

/// Stops the driver (it ends at its next wake, within one period).
pub(crate) fn stop() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// In a forked child: the parent's driver does not exist here.
pub(crate) fn forget_after_fork() {
    DRIVER_TID.store(0, Ordering::Release);
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

fn drive() {
    let generation = GENERATION.load(Ordering::Acquire);
    let me = gettid();
    DRIVER_TID.store(me, Ordering::Release);
    let period = PERIOD_NS.load(Ordering::Acquire);
    let signal = SIGNAL.load(Ordering::Acquire);
    // SAFETY: getpid is always safe.
    let pid = unsafe { libc::getpid() };
    let mut next = monotonic_ns() + period;
    loop {
        let deadline = libc::timespec {
            tv_sec: (next / 1_000_000_000) as libc::time_t,
            tv_nsec: (next % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: an absolute sleep on a local timespec (every signal is
        // blocked in this thread: no EINTR to speak of, but loop anyway).
        while unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &deadline,
                std::ptr::null_mut(),
            )
        } == libc::EINTR
        {}
        if GENERATION.load(Ordering::Acquire) != generation {
            break;
        }
        // Periods that passed while this thread was not scheduled count too.
        let now = monotonic_ns();
        let mut weight = 1;
        next += period;
        if now >= next {
            let missed = (now - next) / period + 1;
            weight += missed;
            next += missed * period;
        }
        let Some(sampler) = existing_sampler() else {
            continue;
        };
        if !sampler.running.load(Ordering::Acquire) {
            continue;
        }
        let idle_below = IDLE_NS.min(period.saturating_mul(weight) / 10);
        for (tid, slot) in sampler.registered_threads() {
            if tid == me {
                continue;
            }
            let cpu = thread_cpu_ns_of(tid);
            if cpu == 0 {
                // Ended; the sweep forgets it.
                continue;
            }
            let mark = slot.cpu_mark.load(Ordering::Relaxed);
            if mark != 0
                && cpu.saturating_sub(mark) < idle_below
                && repeat_waiting_sample(sampler, slot, weight)
            {
                continue;
            }
            if slot.pending.fetch_add(weight, Ordering::AcqRel) == 0 {
                // SAFETY: a signal to a thread of this process.
                unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) };
            }
        }
    }
    let _ = DRIVER_TID.compare_exchange(me, 0, Ordering::AcqRel, Ordering::Relaxed);
}
