//! The clocks that interrupt threads for samples, best first:
//!
//! 1. **perf task-clock** (`perf_event_open`, one event per thread): an
//!    hrtimer-driven count of the thread's CPU time that signals its own
//!    thread (`F_SETOWN_EX` + `F_OWNER_TID`, `F_SETSIG`) each period, at any
//!    rate, not only on kernel ticks. Tried with kernel time included, then
//!    with `exclude_kernel` (needed when `perf_event_paranoid` ≥ 2 for
//!    unprivileged users).
//! 2. **POSIX thread CPU timers** (`timer_create` on the thread's CPU clock,
//!    `SIGEV_THREAD_ID`): they fire on kernel ticks, but each signal
//!    carries the number of merged expirations (`si_overrun`), which the
//!    handler adds as the sample's weight, so counts stay right above the
//!    tick rate even though stacks are taken less often.
//! 3. **`setitimer(ITIMER_PROF)`**: one process-wide timer, as libprofiler
//!    does; tick-bound.
//!
//! Realtime (wall-clock) mode uses one process-wide
//! `timer_create(CLOCK_MONOTONIC)` timer.

use std::io;

/// How samples are triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// perf task-clock events, one per thread.
    PerfTaskClock {
        /// Kernel time excluded (unprivileged with paranoid ≥ 2).
        exclude_kernel: bool,
    },
    /// POSIX per-thread CPU-time timers.
    ThreadCpuTimer,
    /// `setitimer(ITIMER_PROF)`.
    ProcessItimer,
    /// A process-wide wall-clock POSIX timer.
    WallClock,
}

impl Trigger {
    /// A short name for messages and the docs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Trigger::PerfTaskClock {
                exclude_kernel: false,
            } => "perf task-clock",
            Trigger::PerfTaskClock {
                exclude_kernel: true,
            } => "perf task-clock (user time only)",
            Trigger::ThreadCpuTimer => "per-thread POSIX CPU timers",
            Trigger::ProcessItimer => "setitimer(ITIMER_PROF)",
            Trigger::WallClock => "wall-clock POSIX timer",
        }
    }

    /// True for clocks armed once per thread.
    pub(crate) fn per_thread(self) -> bool {
        matches!(
            self,
            Trigger::PerfTaskClock { .. } | Trigger::ThreadCpuTimer
        )
    }
}

/// Which clocks to try, from `CPUPROFILE_TIMER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockChoice {
    /// Best available (perf, then POSIX timers, then setitimer).
    Auto,
    /// perf task-clock only.
    Perf,
    /// POSIX per-thread CPU timers only.
    Posix,
    /// setitimer(ITIMER_PROF) only.
    Itimer,
}

const F_SETSIG: i32 = 10;
const F_SETOWN_EX: i32 = 15;
const F_OWNER_TID: i32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;

/// `struct perf_event_attr`, first published size (PERF_ATTR_SIZE_VER0):
/// all the fields we set.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;

#[repr(C)]
struct FOwnerEx {
    kind: i32,
    pid: i32,
}

fn check(ret: i64) -> io::Result<i64> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Opens and arms a task-clock event on thread `tid` that sends `signal`
/// to that thread every `period_ns` of its CPU time. Returns the fd.
pub(crate) fn arm_perf(
    tid: i32,
    period_ns: u64,
    signal: i32,
    exclude_kernel: bool,
) -> io::Result<u64> {
    let mut attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns,
        flags: ATTR_DISABLED
            | ATTR_EXCLUDE_HV
            | if exclude_kernel {
                ATTR_EXCLUDE_KERNEL
            } else {
                0
            },
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: a valid attr; pid = tid of a thread of ours, any CPU.
    let fd = check(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &mut attr as *mut PerfEventAttr,
            tid,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    })? as i32;
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: plain fcntl/ioctl calls on the fd we own.
    let armed = unsafe {
        check(libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) as i64)
            .and_then(|_| check(libc::fcntl(fd, F_SETSIG, signal) as i64))
            .and_then(|_| check(libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) as i64))
            .and_then(|_| check(libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) as i64))
    };
    match armed {
        Ok(_) => Ok(fd as u64),
        Err(e) => {
            // SAFETY: closing our own fd.
            unsafe { libc::close(fd) };
            Err(e)
        }
    }
}

/// The CPU-time clock of thread `tid` (the kernel's
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`).
fn thread_cpu_clock(tid: i32) -> libc::clockid_t {
    ((!(tid as libc::clockid_t)) << 3) | 6
}

/// Creates and arms a timer that sends `signal` to thread `tid` every
/// `period_ns` of `clock`; returns the timer id.
fn arm_posix_timer(
    clock: libc::clockid_t,
    target_tid: Option<i32>,
    period_ns: u64,
    signal: i32,
) -> io::Result<u64> {
    // SAFETY: zeroed sigevent is a valid starting point.
    let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
    event.sigev_signo = signal;
    match target_tid {
        Some(tid) => {
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_notify_thread_id = tid;
        }
        None => event.sigev_notify = libc::SIGEV_SIGNAL,
    }
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: valid pointers to locals.
    check(unsafe { libc::timer_create(clock, &mut event, &mut timer) } as i64)?;
    let interval = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: interval,
        it_value: interval,
    };
    // SAFETY: arming the timer we just created.
    if let Err(e) =
        check(unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } as i64)
    {
        // SAFETY: deleting our own timer.
        unsafe { libc::timer_delete(timer) };
        return Err(e);
    }
    Ok(timer as usize as u64)
}

/// Arms a per-thread clock on `tid`; returns its handle.
pub(crate) fn arm_thread(clock: Trigger, tid: i32, period_ns: u64, signal: i32) -> io::Result<u64> {
    match clock {
        Trigger::PerfTaskClock { exclude_kernel } => {
            arm_perf(tid, period_ns, signal, exclude_kernel)
        }
        Trigger::ThreadCpuTimer => {
            arm_posix_timer(thread_cpu_clock(tid), Some(tid), period_ns, signal)
        }
        Trigger::ProcessItimer | Trigger::WallClock => Ok(u64::MAX),
    }
}

/// Disarms a per-thread clock. Pending signals may still arrive; the
/// handler ignores them once the session has stopped.
pub(crate) fn disarm_thread(clock: Trigger, handle: u64) {
    if handle == u64::MAX {
        return;
    }
    // SAFETY: the handle came from arm_thread with the same clock.
    unsafe {
        match clock {
            Trigger::PerfTaskClock { .. } => {
                libc::close(handle as i32);
            }
            Trigger::ThreadCpuTimer => {
                libc::timer_delete(handle as usize as libc::timer_t);
            }
            Trigger::ProcessItimer | Trigger::WallClock => {}
        }
    }
}

/// Picks the best clock that works, by arming it on the calling thread.
/// Returns the clock and the calling thread's handle.
pub(crate) fn choose_clock(
    choice: ClockChoice,
    tid: i32,
    period_ns: u64,
    signal: i32,
) -> io::Result<(Trigger, u64)> {
    let candidates: &[Trigger] = match choice {
        ClockChoice::Auto => &[
            Trigger::PerfTaskClock {
                exclude_kernel: false,
            },
            Trigger::PerfTaskClock {
                exclude_kernel: true,
            },
            Trigger::ThreadCpuTimer,
            Trigger::ProcessItimer,
        ],
        ClockChoice::Perf => &[
            Trigger::PerfTaskClock {
                exclude_kernel: false,
            },
            Trigger::PerfTaskClock {
                exclude_kernel: true,
            },
        ],
        ClockChoice::Posix => &[Trigger::ThreadCpuTimer],
        ClockChoice::Itimer => &[Trigger::ProcessItimer],
    };
    let mut last = io::Error::other("no clock");
    for &clock in candidates {
        if clock == Trigger::ProcessItimer {
            return arm_process_itimer(period_ns).map(|()| (clock, u64::MAX));
        }
        match arm_thread(clock, tid, period_ns, signal) {
            Ok(handle) => return Ok((clock, handle)),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Arms `setitimer(ITIMER_PROF)` (signal SIGPROF, process CPU time).
pub(crate) fn arm_process_itimer(period_ns: u64) -> io::Result<()> {
    let us = (period_ns / 1000).max(1);
    let interval = libc::timeval {
        tv_sec: (us / 1_000_000) as libc::time_t,
        tv_usec: (us % 1_000_000) as libc::suseconds_t,
    };
    let value = libc::itimerval {
        it_interval: interval,
        it_value: interval,
    };
    // SAFETY: valid pointer to a local.
    check(unsafe { libc::setitimer(libc::ITIMER_PROF, &value, std::ptr::null_mut()) } as i64)
        .map(|_| ())
}

/// Disarms `setitimer(ITIMER_PROF)`.
pub(crate) fn disarm_process_itimer() {
    let zero = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
    };
    // SAFETY: valid pointer to a local.
    unsafe { libc::setitimer(libc::ITIMER_PROF, &zero, std::ptr::null_mut()) };
}

/// Arms the process-wide wall-clock timer; returns its handle.
pub(crate) fn arm_wall_clock(period_ns: u64, signal: i32) -> io::Result<u64> {
    arm_posix_timer(libc::CLOCK_MONOTONIC, None, period_ns, signal)
}

/// Deletes the wall-clock timer.
pub(crate) fn disarm_wall_clock(handle: u64) {
    if handle != u64::MAX {
        // SAFETY: the handle came from arm_wall_clock.
        unsafe { libc::timer_delete(handle as usize as libc::timer_t) };
    }
}
