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
//! Realtime (wall-clock) mode samples every thread at the rate of wall
//! time, running or waiting, from one driver thread
//! (`src/wall_driver.rs`); no timer per thread.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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
    /// Wall time, every thread, from the wall-clock driver thread.
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
            Trigger::WallClock => "wall-clock driver thread",
        }
    }

    /// True for clocks armed once per thread.
    pub(crate) fn per_thread(self) -> bool {
        matches!(
            self,
            Trigger::PerfTaskClock { .. } | Trigger::ThreadCpuTimer | Trigger::WallClock
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
/// `_IOR('$', 7, __u64)`: the event's id.
const PERF_EVENT_IOC_ID: libc::c_ulong = 0x8008_2407;

/// Marks a per-thread handle as a perf event: bit 63 set, the event id's
/// low 31 bits in bits 32..62, the descriptor in bits 0..31. Other handles
/// are POSIX timer ids. `u64::MAX` (no handle) never collides: a
/// descriptor is below 2^31.
const PERF_HANDLE: u64 = 1 << 63;
/// The handle of a thread the wall-clock driver samples (no timer).
pub(crate) const WALL_DRIVEN: u64 = 1 << 62;

/// `_IOW('$', 4, __u64)`: a new sampling period.
const PERF_EVENT_IOC_PERIOD: libc::c_ulong = 0x4008_2404;
/// `si_code` of a signal sent for a descriptor with `F_SETSIG` (`POLL_IN`).
const POLL_IN: i32 = 1;

/// The first period of a per-thread clock: random, uniform in
/// (0, `period_ns`], as perf's own sampling starts, so that threads living
/// shorter than a period are sampled in proportion to their CPU time
/// instead of never (a clock that starts at zero fires only after a whole
/// period of the thread's CPU time). Seeded from the thread id and the
/// monotonic clock through a xorshift (splitmix64 finalizer): no
/// allocation, no lock, no state, async-signal-safe.
pub(crate) fn first_period_ns(tid: i32, period_ns: u64) -> u64 {
    let now = clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
    let mut x = now ^ (u64::from(tid as u32) << 32 | u64::from(tid as u32)) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    1 + x % period_ns.max(1)
}

/// perf descriptors whose event still runs its random first period
/// (one bit per descriptor number, below 65,536: [`move_high`] keeps ours
/// under `min(RLIMIT_NOFILE, 65536)`). Their first signal sets the whole
/// period ([`end_first_period`]).
static FIRST_PERIOD: [AtomicU64; 1024] = [const { AtomicU64::new(0) }; 1024];
/// The whole period of the session's perf events, in ns.
static PERF_PERIOD_NS: AtomicU64 = AtomicU64::new(0);

fn first_period_bit(fd: i32) -> Option<(&'static AtomicU64, u64)> {
    let fd = usize::try_from(fd).ok()?;
    Some((FIRST_PERIOD.get(fd / 64)?, 1 << (fd % 64)))
}

fn clear_first_period(fd: i32) {
    if let Some((word, bit)) = first_period_bit(fd) {
        word.fetch_and(!bit, Ordering::AcqRel);
    }
}

/// In the sampling handler: when this signal is the first of a perf event
/// started on a random first period, gives the event its whole period
/// from now on (one ioctl, async-signal-safe). Other signals: nothing.
pub(crate) fn end_first_period(info: *const libc::siginfo_t) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel's siginfo for this signal.
    let info = unsafe { &*info };
    if info.si_code != POLL_IN {
        return;
    }
    // SAFETY: POLL_IN from F_SETSIG: the sigpoll fields (si_band, si_fd)
    // are the valid ones; glibc's layout puts si_fd after si_band.
    let fd = unsafe { si_fd(info) };
    let Some((word, bit)) = first_period_bit(fd) else {
        return;
    };
    if word.fetch_and(!bit, Ordering::AcqRel) & bit == 0 {
        return;
    }
    let period = PERF_PERIOD_NS.load(Ordering::Relaxed);
    if period != 0 {
        // SAFETY: an ioctl reading one u64 from a local, on the descriptor
        // of our own event (its bit was set while we held it).
        unsafe { libc::ioctl(fd, PERF_EVENT_IOC_PERIOD, &period as *const u64) };
    }
}

/// `si_fd` of a `SIGPOLL`-style siginfo.
unsafe fn si_fd(info: &libc::siginfo_t) -> i32 {
    #[repr(C)]
    struct PollSiginfo {
        si_signo: i32,
        si_errno: i32,
        si_code: i32,
        _pad: i32,
        si_band: i64,
        si_fd: i32,
    }
    // SAFETY: siginfo_t is 128 bytes; the prefix matches the kernel layout.
    unsafe { (*(info as *const libc::siginfo_t as *const PollSiginfo)).si_fd }
}

/// perf event descriptors held now.
static PERF_FDS: AtomicUsize = AtomicUsize::new(0);
/// perf event descriptors the program closed (or replaced) under us.
static PERF_FDS_LOST: AtomicU64 = AtomicU64::new(0);
/// Threads that got a POSIX timer because the descriptor budget was spent.
static PERF_BUDGET_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// The soft `RLIMIT_NOFILE`.
fn nofile_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: valid pointer to a local.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_cur
}

/// How many perf event descriptors the agent may hold at once:
/// `RLIMIT_NOFILE / 256`, at most 4096 (4 under the common 1024). Threads
/// beyond it get POSIX CPU timers, which need no descriptor.
pub(crate) fn perf_fd_budget() -> usize {
    (nofile_limit() / 256).min(4096) as usize
}

/// Moves `fd` to the top of the descriptor range (`F_DUPFD_CLOEXEC` at
/// `min(RLIMIT_NOFILE, 65536) - 256` or above), out of the numbers a
/// program uses first, and closes the original. On failure `fd` is closed
/// too.
pub(crate) fn move_high(fd: i32) -> io::Result<i32> {
    let floor = high_floor();
    if fd >= floor {
        return Ok(fd);
    }
    // SAFETY: duplicating and closing a descriptor we own.
    unsafe {
        let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor);
        let error = io::Error::last_os_error();
        libc::close(fd);
        if high < 0 {
            Err(error)
        } else {
            Ok(high)
        }
    }
}

/// The lowest number [`move_high`] moves descriptors to.
fn high_floor() -> i32 {
    let top = nofile_limit().min(1 << 16);
    top.saturating_sub(256).max(3) as i32
}

/// Grows the process's descriptor table up to [`move_high`]'s range
/// before the agent starts a thread of its own. The kernel grows a table
/// that several threads share only after an RCU grace period
/// (`expand_fdtable` calls `synchronize_rcu`): 7–12 ms of waiting on our
/// 2-core VM, which every short process under the agent paid when its
/// first perf event moved high after the control thread existed (200
/// pyenv-style shims: 1.0 s → 3.2 s). Single-threaded, as in the
/// `LD_PRELOAD` constructor and a forked child, it costs microseconds,
/// and the table never shrinks. Best effort: on failure `move_high` just
/// pays later.
pub(crate) fn grow_descriptor_table() {
    let floor = high_floor();
    // SAFETY: opening, duplicating and closing descriptors we own.
    unsafe {
        let fd = libc::open(
            c"/".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, floor);
        if high >= 0 {
            libc::close(high);
        }
        libc::close(fd);
    }
}

/// Counts of descriptor trouble: (perf descriptors closed by the program,
/// threads on POSIX timers because the descriptor budget was spent).
pub(crate) fn descriptor_counts() -> (u64, u64) {
    (
        PERF_FDS_LOST.load(Ordering::Relaxed),
        PERF_BUDGET_FALLBACKS.load(Ordering::Relaxed),
    )
}

/// Clears the counts of [`descriptor_counts`] (a new session).
pub(crate) fn reset_descriptor_counts() {
    PERF_FDS_LOST.store(0, Ordering::Relaxed);
    PERF_BUDGET_FALLBACKS.store(0, Ordering::Relaxed);
}

/// True when descriptor `fd` is open on a perf event
/// (`/proc/self/fd/N` reads `anon_inode:[perf_event]`). No allocation.
fn is_perf_event_fd(fd: i32) -> bool {
    let mut path = *b"/proc/self/fd/\0\0\0\0\0\0\0\0\0\0\0\0";
    let mut digits = [0u8; 10];
    let mut n = fd.max(0) as u32;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        path[14 + i] = digits[len - 1 - i];
    }
    let mut target = [0u8; 64];
    // SAFETY: a NUL-terminated path and a buffer of the given size.
    let n = unsafe {
        libc::readlink(
            path.as_ptr().cast(),
            target.as_mut_ptr().cast(),
            target.len(),
        )
    };
    n > 0 && &target[..n as usize] == b"anon_inode:[perf_event]"
}

/// True when `handle` is a perf event.
pub(crate) fn is_perf_handle(handle: u64) -> bool {
    handle != u64::MAX && handle & PERF_HANDLE != 0
}

/// True when the perf event of `handle` is still open at its descriptor
/// (not closed, nor replaced by another file, under us).
pub(crate) fn perf_handle_intact(handle: u64) -> bool {
    let fd = (handle & 0xffff_ffff) as i32;
    // Never an ioctl on a file the program opened at that number since:
    // first, is it a perf event at all?
    if !is_perf_event_fd(fd) {
        return false;
    }
    let id_bits = (handle >> 32) & 0x7fff_ffff;
    let mut id: u64 = 0;
    // SAFETY: an ioctl writing one u64 into a local; on a descriptor that
    // is not a perf event it fails (ENOTTY, EBADF) and writes nothing.
    let rc = unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ID, &mut id as *mut u64) };
    rc == 0 && id & 0x7fff_ffff == id_bits
}

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
/// to that thread every `period_ns` of its CPU time, the first time
/// `delay_ns` later (plus a random part of a period). Returns the fd.
pub(crate) fn arm_perf(
    tid: i32,
    period_ns: u64,
    signal: i32,
    exclude_kernel: bool,
    delay_ns: u64,
) -> io::Result<u64> {
    if PERF_FDS.fetch_add(1, Ordering::AcqRel) >= perf_fd_budget() {
        PERF_FDS.fetch_sub(1, Ordering::AcqRel);
        return Err(io::Error::from_raw_os_error(libc::EMFILE));
    }
    let armed = open_perf(tid, period_ns, signal, exclude_kernel, delay_ns);
    if armed.is_err() {
        PERF_FDS.fetch_sub(1, Ordering::AcqRel);
    }
    armed
}

fn open_perf(
    tid: i32,
    period_ns: u64,
    signal: i32,
    exclude_kernel: bool,
    delay_ns: u64,
) -> io::Result<u64> {
    PERF_PERIOD_NS.store(period_ns, Ordering::Relaxed);
    let mut attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        // The first period only: the first signal sets the whole one.
        sample_period: delay_ns.saturating_add(first_period_ns(tid, period_ns)),
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
    let fd = move_high(fd)?;
    // Before the event is enabled, so that its first signal finds the bit.
    if let Some((word, bit)) = first_period_bit(fd) {
        word.fetch_or(bit, Ordering::AcqRel);
    }
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
    let mut id: u64 = 0;
    // SAFETY: the ioctl writes one u64 into a local.
    let armed = armed.and_then(|_| {
        check(unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ID, &mut id as *mut u64) } as i64)
    });
    match armed {
        Ok(_) => Ok(PERF_HANDLE | ((id & 0x7fff_ffff) << 32) | fd as u64),
        Err(e) => {
            clear_first_period(fd);
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
    delay_ns: u64,
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
    let first = delay_ns.saturating_add(first_period_ns(target_tid.unwrap_or(0), period_ns));
    let spec = libc::itimerspec {
        it_interval: interval,
        it_value: libc::timespec {
            tv_sec: (first / 1_000_000_000) as libc::time_t,
            tv_nsec: (first % 1_000_000_000) as libc::c_long,
        },
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
    arm_thread_after(clock, tid, period_ns, signal, 0)
}

/// [`arm_thread`] with a first period `delay_ns` longer: the thread's
/// first signal comes only after that much more of its CPU time (a
/// forked child's: see [`FORKED_CHILD_DELAY_NS`]).
pub(crate) fn arm_thread_after(
    clock: Trigger,
    tid: i32,
    period_ns: u64,
    signal: i32,
    delay_ns: u64,
) -> io::Result<u64> {
    match clock {
        Trigger::PerfTaskClock { exclude_kernel } => {
            match arm_perf(tid, period_ns, signal, exclude_kernel, delay_ns) {
                // Out of the descriptor budget: a timer needs none.
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) => {
                    PERF_BUDGET_FALLBACKS.fetch_add(1, Ordering::Relaxed);
                    arm_posix_timer(
                        thread_cpu_clock(tid),
                        Some(tid),
                        period_ns,
                        signal,
                        delay_ns,
                    )
                }
                armed => armed,
            }
        }
        Trigger::ThreadCpuTimer => arm_posix_timer(
            thread_cpu_clock(tid),
            Some(tid),
            period_ns,
            signal,
            delay_ns,
        ),
        // Driven by the wall-clock driver thread (src/wall_driver.rs).
        Trigger::WallClock => Ok(WALL_DRIVEN),
        Trigger::ProcessItimer => Ok(u64::MAX),
    }
}

/// Arms a POSIX CPU timer on thread `tid` (no descriptor).
pub(crate) fn arm_thread_timer(tid: i32, period_ns: u64, signal: i32) -> io::Result<u64> {
    arm_posix_timer(thread_cpu_clock(tid), Some(tid), period_ns, signal, 0)
}

/// How much of a forked child's CPU time passes before its first sample:
/// 20 ms. A child made by `fork` may reset every signal's disposition with
/// the raw `rt_sigaction` system call (no interposer sees that) before it
/// execs, as Chromium's `base::LaunchProcess` does; a sampling signal
/// arriving then finds the default action of a real-time signal,
/// terminate, and kills the child. A launcher's child execs long before
/// 20 ms of its CPU time (its clock is gone with the exec); a forked
/// worker gets its first sample at 20 ms, standing for every whole period
/// it has run (the sampling handler weighs it by the child's CPU clock).
pub(crate) const FORKED_CHILD_DELAY_NS: u64 = 20_000_000;

/// Disarms a per-thread clock (a perf event or a POSIX timer, told apart
/// by the handle). A perf descriptor that is no longer our event (the
/// program closed it, and perhaps reused the number) is left alone and
/// counted as lost. Pending signals may still arrive; the handler ignores
/// them once the session has stopped.
pub(crate) fn disarm_thread(_clock: Trigger, handle: u64) {
    if handle == u64::MAX || handle == WALL_DRIVEN {
        return;
    }
    if is_perf_handle(handle) {
        PERF_FDS.fetch_sub(1, Ordering::AcqRel);
        clear_first_period((handle & 0xffff_ffff) as i32);
        if perf_handle_intact(handle) {
            // SAFETY: our own perf event descriptor.
            unsafe { libc::close((handle & 0xffff_ffff) as i32) };
        } else {
            PERF_FDS_LOST.fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
    // SAFETY: a POSIX timer id from arm_thread.
    unsafe { libc::timer_delete(handle as usize as libc::timer_t) };
}

/// After a fork: the child's copy of a perf descriptor is closed (the
/// parent's event stays) without counting it as lost.
pub(crate) fn forget_in_child(handle: u64) {
    if is_perf_handle(handle) {
        PERF_FDS.fetch_sub(1, Ordering::AcqRel);
        clear_first_period((handle & 0xffff_ffff) as i32);
        if perf_handle_intact(handle) {
            // SAFETY: the child's copy of our perf event descriptor.
            unsafe { libc::close((handle & 0xffff_ffff) as i32) };
        }
    }
}

/// Checks a perf handle: when the program closed or replaced its
/// descriptor, counts the loss and returns a POSIX timer armed on `tid`
/// in its place (None if that fails too, or if the handle is intact or
/// not a perf event).
pub(crate) fn replace_if_lost(
    handle: u64,
    tid: i32,
    period_ns: u64,
    signal: i32,
) -> Option<io::Result<u64>> {
    if !is_perf_handle(handle) || perf_handle_intact(handle) {
        return None;
    }
    PERF_FDS.fetch_sub(1, Ordering::AcqRel);
    PERF_FDS_LOST.fetch_add(1, Ordering::Relaxed);
    clear_first_period((handle & 0xffff_ffff) as i32);
    Some(arm_thread_timer(tid, period_ns, signal))
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
            return arm_process_itimer(period_ns, 0).map(|()| (clock, u64::MAX));
        }
        match arm_thread(clock, tid, period_ns, signal) {
            Ok(handle) => return Ok((clock, handle)),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Arms `setitimer(ITIMER_PROF)` (signal SIGPROF, process CPU time), its
/// first expiry `delay_ns` later than a period.
pub(crate) fn arm_process_itimer(period_ns: u64, delay_ns: u64) -> io::Result<()> {
    let timeval = |ns: u64| {
        let us = (ns / 1000).max(1);
        libc::timeval {
            tv_sec: (us / 1_000_000) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        }
    };
    let value = libc::itimerval {
        it_interval: timeval(period_ns),
        it_value: timeval(period_ns.saturating_add(delay_ns)),
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

/// The CPU time of thread `tid` in ns (0 if it cannot be read).
pub(crate) fn thread_cpu_ns_of(tid: i32) -> u64 {
    clock_ns(thread_cpu_clock(tid)).unwrap_or(0)
}

/// The time of `clock` in ns (async-signal-safe); None if it cannot be read.
pub(crate) fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe; `now` is a live local.
    if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
        return None;
    }
    Some(
        (now.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(now.tv_nsec as u64),
    )
}
