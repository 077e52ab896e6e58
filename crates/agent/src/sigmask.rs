//! Threads that block every signal are still sampled: our
//! `pthread_sigmask` and `sigprocmask` (interposed like `pthread_create`)
//! leave the session's sampling signal out of what a program blocks.
//!
//! Programs block all signals in worker threads so that their signals
//! (SIGINT, SIGTERM, …) go to one thread: `xz -T2` creates its compressing
//! threads with every signal blocked, servers do the same. A signal-based
//! profiler then sees nothing of them — the torture suite's `xz -T2` run
//! used 6 CPU-s and left 0 samples, silently. The sampling signal is a
//! real-time signal the program does not use (chosen free at start), sent
//! to one thread by its own clock, so leaving it deliverable changes
//! nothing the program's signals do. It is protected only while a session
//! samples with per-thread clocks; not `SIGPROF` (the `setitimer`
//! fallback's process-wide signal, which programs may use), and no longer
//! once the program installed its own handler on the signal (the session
//! then stops arming it). A mask a program reads back shows the signal
//! as the program set it: each thread's wish is kept in its slot
//! (`ThreadSlot::program_blocks`, inherited by the threads it creates).
//!
//! A program may also *wait* for that very signal, blocked and with no
//! handler (`sigwait`, `sigwaitinfo`, `sigtimedwait`, a `signalfd`): the
//! agent cannot know at start which free signal a program will wait for,
//! so it keeps the kernel's semantics instead:
//! - sent by others to a thread that blocked it, the signal is kept for
//!   the program ([`forward_foreign`] parks it, with its `siginfo`), and
//!   our `sigwait`, `sigwaitinfo` and `sigtimedwait` return it — or one
//!   that arrives while they wait, never one of the agent's own clock
//!   signals (told apart by `si_code`, as [`forward_foreign`] does);
//! - a `signalfd` reads only what the kernel holds pending, and the
//!   agent's own samples on that signal would be read too: when the
//!   program creates one for the sampling signal, the session stops
//!   sampling on it (saying so on stderr, as when the program takes the
//!   signal with a handler of its own) and the signal is the program's
//!   from then on: blocked for real where the program blocked it, and one
//!   sent to a thread that had not yet blocked it for real is blocked
//!   there and sent again, as it came.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::interpose::{
    PTHREAD_SIGMASK, SIGACTION, SIGNAL, SIGNALFD, SIGPROCMASK, SIGTIMEDWAIT, SIGWAIT, SIGWAITINFO,
};
use crate::signal_path::{gettid, ThreadSlot};

/// The signal kept unblocked (0: none).
static PROTECTED: AtomicI32 = AtomicI32::new(0);

/// Keeps `signal` deliverable from now on (a session samples on it with
/// per-thread clocks), starting with the calling thread.
pub(crate) fn protect(signal: i32) {
    if signal == libc::SIGPROF || !(1..=64).contains(&signal) {
        return;
    }
    PROTECTED.store(signal, Ordering::Release);
    unblock_in_this_thread();
}

/// Stops protecting any signal (the session stopped or lost its signal).
pub(crate) fn unprotect() {
    PROTECTED.store(0, Ordering::Release);
}

/// Unblocks the protected signal in the calling thread (a new thread may
/// have inherited a mask that blocks it).
pub(crate) fn unblock_in_this_thread() {
    let signal = PROTECTED.load(Ordering::Acquire);
    if signal == 0 {
        return;
    }
    let Some(real) = real(&PTHREAD_SIGMASK) else {
        return;
    };
    // SAFETY: a local set; libc's pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        real(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}

type SigmaskFn = unsafe extern "C" fn(i32, *const libc::sigset_t, *mut libc::sigset_t) -> i32;

fn real(next: &crate::interpose::NextDefinition) -> Option<SigmaskFn> {
    match next.address() {
        0 => None,
        // SAFETY: libc's definition of a function with this signature.
        address => Some(unsafe { std::mem::transmute::<usize, SigmaskFn>(address) }),
    }
}

/// libc's `pthread_sigmask`, bypassing ours: the agent's own calls.
///
/// # Safety
/// As libc's.
pub(crate) unsafe fn real_pthread_sigmask(
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    match real(&PTHREAD_SIGMASK) {
        // SAFETY: forwarded under the caller's contract.
        Some(real) => unsafe { real(how, set, old) },
        None => libc::ENOSYS,
    }
}

/// The calling thread's slot, when a sampler exists and the thread is
/// registered. Async-signal-safe (a system call and a lock-free lookup).
fn my_slot() -> Option<&'static ThreadSlot> {
    crate::collector::existing_sampler()?.thread_slot(gettid())
}

/// True when the program blocked the sampling signal in the calling
/// thread (as it sees its mask).
pub(crate) fn program_blocks_in_this_thread() -> bool {
    my_slot().is_some_and(|slot| slot.program_blocks.load(Ordering::Relaxed))
}

/// Calls libc's `next` with `set` minus the protected signal when it would
/// block it, keeps the thread's wish, and shows the signal in `old` as the
/// program set it. Async-signal-safe (sigprocmask is).
unsafe fn filtered(
    next: &crate::interpose::NextDefinition,
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    let Some(real) = real(next) else {
        // SAFETY: errno of the calling thread.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    };
    let signal = PROTECTED.load(Ordering::Acquire);
    if signal == 0 {
        // SAFETY: the caller's arguments, as given.
        return unsafe { real(how, set, old) };
    }
    let slot = my_slot();
    let was_blocked = slot.is_some_and(|slot| slot.program_blocks.load(Ordering::Relaxed));
    // SAFETY: `set` is null or a valid sigset_t (the caller's contract);
    // read before the call, as `old` may be the same set.
    let member = !set.is_null() && unsafe { libc::sigismember(set, signal) } == 1;
    let rc = if set.is_null() || how == libc::SIG_UNBLOCK {
        // SAFETY: the caller's arguments, as given.
        unsafe { real(how, set, old) }
    } else {
        // SAFETY: as above; we pass a copy without the protected signal.
        unsafe {
            let mut copy = *set;
            libc::sigdelset(&mut copy, signal);
            real(how, &copy, old)
        }
    };
    if rc != 0 {
        return rc;
    }
    if let (Some(slot), false) = (slot, set.is_null()) {
        let blocked = match how {
            libc::SIG_BLOCK => was_blocked || member,
            libc::SIG_UNBLOCK => was_blocked && !member,
            libc::SIG_SETMASK => member,
            _ => was_blocked,
        };
        slot.program_blocks.store(blocked, Ordering::Relaxed);
    }
    if was_blocked && !old.is_null() {
        // SAFETY: the caller's valid set, just written by libc.
        unsafe { libc::sigaddset(old, signal) };
    }
    rc
}

/// `pthread_sigmask(3)`, keeping the sampling signal deliverable.
///
/// # Safety
/// As libc's: `set` and `old` are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_sigmask(
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    // SAFETY: forwarded under the caller's contract.
    unsafe { filtered(&PTHREAD_SIGMASK, how, set, old) }
}

/// `sigprocmask(2)`, keeping the sampling signal deliverable.
///
/// # Safety
/// As libc's: `set` and `old` are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigprocmask(
    how: i32,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> i32 {
    // SAFETY: forwarded under the caller's contract.
    unsafe { filtered(&SIGPROCMASK, how, set, old) }
}

/// The real-time signal our sampling handler is installed on, for the
/// process's life (0: none). The program's `sigaction` and `signal` on it
/// are recorded, not installed: see [`sigaction`].
static OWNED: AtomicI32 = AtomicI32::new(0);

/// The program's own action on the [`OWNED`] signal, double-buffered so
/// that the signal handler reads a complete one: [`PROGRAM_CURRENT`] is
/// the index of the valid slot.
struct ProgramActions(UnsafeCell<[libc::sigaction; 2]>);
// SAFETY: a slot is written only while it is not the current one (under
// the writers' own serialization, see `record_program_action`), then
// published by an atomic store; readers read the current slot only.
unsafe impl Sync for ProgramActions {}
static PROGRAM_ACTIONS: ProgramActions =
    // SAFETY: an all-zero sigaction is SIG_DFL with an empty mask.
    ProgramActions(UnsafeCell::new(unsafe { std::mem::zeroed() }));
static PROGRAM_CURRENT: AtomicUsize = AtomicUsize::new(0);
static PROGRAM_WRITERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// libc's `sigaction`, bypassing ours: the agent's own calls.
///
/// # Safety
/// As libc's `sigaction`.
pub(crate) unsafe fn real_sigaction(
    signal: i32,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> i32 {
    type SigactionFn =
        unsafe extern "C" fn(i32, *const libc::sigaction, *mut libc::sigaction) -> i32;
    match SIGACTION.address() {
        // SAFETY: a raw system call with the caller's arguments (the
        // kernel's struct differs from libc's, so this only reports).
        0 => unsafe {
            *libc::__errno_location() = libc::ENOSYS;
            -1
        },
        // SAFETY: libc's sigaction, which has this type.
        address => unsafe { std::mem::transmute::<usize, SigactionFn>(address)(signal, act, old) },
    }
}

/// Marks `signal` as the agent's sampling signal from now on (our handler
/// was just installed on it): the program's later actions on it are
/// recorded for it. `previous` is what was there before ours.
pub(crate) fn own(signal: i32, previous: &libc::sigaction) {
    if signal == libc::SIGPROF
        || !(1..=64).contains(&signal)
        || OWNED.load(Ordering::Acquire) == signal
    {
        return;
    }
    record_program_action(previous);
    OWNED.store(signal, Ordering::Release);
}

fn record_program_action(action: &libc::sigaction) {
    let _writers = PROGRAM_WRITERS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let next = PROGRAM_CURRENT.load(Ordering::Acquire) ^ 1;
    // SAFETY: slot `next` is not the current one; only writers (serialized
    // above) touch it.
    unsafe { (*PROGRAM_ACTIONS.0.get())[next] = *action };
    PROGRAM_CURRENT.store(next, Ordering::Release);
}

fn program_action() -> libc::sigaction {
    let current = PROGRAM_CURRENT.load(Ordering::Acquire);
    // SAFETY: the current slot is complete (published after its write).
    unsafe { (*PROGRAM_ACTIONS.0.get())[current] }
}

/// In our sampling handler: true when this signal is not one of the
/// agent's clocks' (it was sent by `kill`, `sigqueue`, or `tgkill` outside
/// realtime mode) — then it was handed to the program's own handler on the
/// signal, if it set one. `wall_mode` (realtime mode runs) is asked only
/// of a `tgkill`. Async-signal-safe.
pub(crate) fn forward_foreign(
    signal: i32,
    info: *mut libc::siginfo_t,
    ucontext: *mut c_void,
    wall_mode: impl FnOnce() -> bool,
) -> bool {
    if info.is_null() || signal != OWNED.load(Ordering::Acquire) {
        return false;
    }
    // SAFETY: the kernel's siginfo for this signal.
    let code = unsafe { (*info).si_code };
    let foreign =
        code == libc::SI_USER || code == libc::SI_QUEUE || (code == libc::SI_TKILL && !wall_mode());
    if !foreign {
        return false;
    }
    let action = program_action();
    if action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN {
        // SAFETY: the program installed this handler with these flags.
        unsafe { crate::crash::call_handler(signal, &action, info, ucontext) };
    } else {
        keep_for_program(signal, info, ucontext);
    }
    true
}

/// A signal sent by others, with no handler of the program's: when the
/// program blocked it in this thread it would be pending, for its
/// `sigwait` or `signalfd`. While the session samples on it, it is parked
/// for our `sigwait` family (and any waiter woken); once it does not, it
/// is blocked in this thread for real (the mask the handler returns to)
/// and sent again as it came, so that the kernel holds it pending.
/// Async-signal-safe.
fn keep_for_program(signal: i32, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    if !program_blocks_in_this_thread() {
        return;
    }
    if PROTECTED.load(Ordering::Acquire) == signal {
        // SAFETY: the kernel's siginfo for this signal.
        park(unsafe { &*info });
        wake_waiters(signal);
        return;
    }
    if !ucontext.is_null() {
        // SAFETY: the kernel's ucontext of this handler; the mask it holds
        // is the one restored on return.
        unsafe {
            libc::sigaddset(
                &mut (*(ucontext as *mut libc::ucontext_t)).uc_sigmask,
                signal,
            )
        };
    }
    // SAFETY: as above.
    send_again(signal, unsafe { &*info });
}

/// Sends `info` again to this process (to this thread when it was sent to
/// one with `tgkill`), unchanged where the kernel allows it: a thread may
/// queue any `siginfo` to itself, and one with a negative `si_code`
/// (`SI_QUEUE`, …) to its process; a `kill`'s (`SI_USER`) only the main
/// thread may queue to the process as it was (the kernel compares the
/// caller's thread id with the pid), so another thread sends it with
/// `kill`, which gives it this process's pid and uid as the sender: the
/// same when the program sent it to itself.
fn send_again(signal: i32, info: &libc::siginfo_t) {
    // SAFETY: raw system calls reading the given siginfo.
    unsafe {
        let pid = libc::getpid();
        let tid = gettid();
        if info.si_code == libc::SI_TKILL {
            libc::syscall(
                libc::SYS_rt_tgsigqueueinfo,
                pid,
                tid,
                signal,
                info as *const libc::siginfo_t,
            );
        } else if info.si_code < 0 || tid == pid {
            libc::syscall(
                libc::SYS_rt_sigqueueinfo,
                pid,
                signal,
                info as *const libc::siginfo_t,
            );
        } else {
            libc::kill(pid, signal);
        }
    }
}

/// Signals parked for the program's `sigwait` family (see
/// [`keep_for_program`]), oldest first by `seq`. A slot is 0 free, 1 being
/// written or taken, 2 full. Real-time signals queue; 32 are kept, more
/// are lost (the kernel's queue has a limit too).
struct Parked {
    state: AtomicU32,
    seq: AtomicU64,
    info: UnsafeCell<libc::siginfo_t>,
}
// SAFETY: `info` is written and read only by whoever moved `state` to 1.
unsafe impl Sync for Parked {}
const PARKED_SLOTS: usize = 32;
static PARKED: [Parked; PARKED_SLOTS] = [const {
    Parked {
        state: AtomicU32::new(0),
        seq: AtomicU64::new(0),
        // SAFETY: an all-zero siginfo is valid.
        info: UnsafeCell::new(unsafe { std::mem::zeroed() }),
    }
}; PARKED_SLOTS];
static PARKED_SEQ: AtomicU64 = AtomicU64::new(0);
/// Threads in our `sigwait` family for the sampling signal (0: none).
static WAITERS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

fn park(info: &libc::siginfo_t) {
    let seq = PARKED_SEQ.fetch_add(1, Ordering::AcqRel);
    for slot in &PARKED {
        if slot
            .state
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: we own the slot (state 1).
            unsafe { *slot.info.get() = *info };
            slot.seq.store(seq, Ordering::Relaxed);
            slot.state.store(2, Ordering::Release);
            return;
        }
    }
}

/// Takes the oldest parked signal into `out`; false when none.
fn take_parked(out: &mut libc::siginfo_t) -> bool {
    loop {
        let oldest = PARKED
            .iter()
            .filter(|slot| slot.state.load(Ordering::Acquire) == 2)
            .min_by_key(|slot| slot.seq.load(Ordering::Relaxed));
        let Some(slot) = oldest else {
            return false;
        };
        if slot
            .state
            .compare_exchange(2, 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: we own the slot (state 1).
            *out = unsafe { *slot.info.get() };
            slot.state.store(0, Ordering::Release);
            return true;
        }
    }
}

/// The `si_value` of our wake-up signals (an address no program queues).
fn wake_value() -> usize {
    &WAITERS as *const _ as usize
}

/// The fields of a queued signal's siginfo (the kernel's `_rt` layout).
#[repr(C)]
struct QueuedInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    _rest: [u8; 96],
}

fn queued(info: &libc::siginfo_t) -> &QueuedInfo {
    // SAFETY: both are 128 bytes; the prefix matches the kernel layout.
    unsafe { &*(info as *const libc::siginfo_t as *const QueuedInfo) }
}

/// Wakes every thread in our `sigwait` family: a queued signal with our
/// mark, which its wait returns and it skips. Async-signal-safe.
fn wake_waiters(signal: i32) {
    // SAFETY: getpid and getuid cannot fail.
    let (pid, uid) = unsafe { (libc::getpid(), libc::getuid()) };
    let wake = QueuedInfo {
        signo: signal,
        errno: 0,
        code: libc::SI_QUEUE,
        _pad: 0,
        pid,
        uid,
        value: wake_value(),
        _rest: [0; 96],
    };
    for waiter in &WAITERS {
        let tid = waiter.load(Ordering::Acquire);
        if tid != 0 {
            // SAFETY: a raw system call reading a local siginfo.
            unsafe {
                libc::syscall(
                    libc::SYS_rt_tgsigqueueinfo,
                    pid,
                    tid,
                    signal,
                    &wake as *const QueuedInfo,
                )
            };
        }
    }
}

/// True for a signal of the agent's own on the sampling signal (a clock's,
/// or a wake-up): not the program's.
fn is_agents(info: &libc::siginfo_t) -> bool {
    let code = info.si_code;
    let wall_mode = crate::collector::existing_sampler()
        .is_some_and(|s| s.wall_period_ns.load(Ordering::Relaxed) != 0);
    let foreign =
        code == libc::SI_USER || code == libc::SI_QUEUE || (code == libc::SI_TKILL && !wall_mode);
    let q = queued(info);
    // SAFETY: getpid cannot fail.
    let wake =
        code == libc::SI_QUEUE && q.value == wake_value() && q.pid == unsafe { libc::getpid() };
    !foreign || wake
}

/// Whether the program's waits on the sampling signal are the agent's to
/// answer (`CPUPROFILE_SIGWAIT`).
static HAND_WAITS: AtomicBool = AtomicBool::new(false);

/// Turns the answering of the program's waits on the sampling signal on
/// or off (at start, from the settings).
pub(crate) fn hand_waits(on: bool) {
    HAND_WAITS.store(on, Ordering::Release);
}

/// The agent's sampling signal when `set` holds it and the call is ours
/// to answer (`CPUPROFILE_SIGWAIT`), None otherwise.
pub(crate) fn waits_for_ours(set: *const libc::sigset_t) -> Option<i32> {
    if !HAND_WAITS.load(Ordering::Acquire) {
        return None;
    }
    let signal = OWNED.load(Ordering::Acquire);
    // SAFETY: `set` is null or valid (the caller's contract).
    (signal != 0 && !set.is_null() && unsafe { libc::sigismember(set, signal) } == 1)
        .then_some(signal)
}

fn errno() -> i32 {
    // SAFETY: errno of the calling thread.
    unsafe { *libc::__errno_location() }
}

fn set_errno(value: i32) {
    // SAFETY: errno of the calling thread.
    unsafe { *libc::__errno_location() = value };
}

/// `sigtimedwait` for a set holding the sampling signal: a parked one
/// first, else the kernel's wait (with the signal blocked for real in this
/// thread meanwhile, so that one sent to it stays pending for the wait),
/// skipping the agent's own. Returns the signal or -1 with errno, as
/// libc's (which reports `SI_TKILL` as `SI_USER`).
unsafe fn wait_for_ours(
    signal: i32,
    set: *const libc::sigset_t,
    out: *mut libc::siginfo_t,
    timeout: *const libc::timespec,
) -> i32 {
    // SAFETY: `timeout` is null or valid (the caller's contract).
    let timeout = unsafe { timeout.as_ref() };
    if timeout.is_some_and(|t| t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec)) {
        set_errno(libc::EINVAL);
        return -1;
    }
    let tid = gettid();
    let registered = WAITERS.iter().find(|waiter| {
        waiter
            .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    let mask = real(&PTHREAD_SIGMASK);
    // SAFETY: an all-zero sigset is valid.
    let mut before: libc::sigset_t = unsafe { std::mem::zeroed() };
    if let Some(mask) = mask {
        // SAFETY: local sets; libc's pthread_sigmask.
        unsafe {
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, signal);
            mask(libc::SIG_BLOCK, &only, &mut before);
        }
    }
    let ns = |t: &libc::timespec| {
        (t.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec as u64)
    };
    let now = || crate::signal_path::clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
    let deadline = timeout.map(|t| now().saturating_add(ns(t)));
    // Without a waiter slot no wake-up comes: look at the parked ones
    // every 10 ms.
    let step = if registered.is_some() {
        u64::MAX
    } else {
        10_000_000
    };
    // SAFETY: an all-zero siginfo is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let result = loop {
        if take_parked(&mut info) {
            break signal;
        }
        // A zero timeout still asks the kernel once (a poll).
        let left = match deadline {
            Some(deadline) => deadline.saturating_sub(now()).min(step),
            None => step,
        };
        let limit = libc::timespec {
            tv_sec: (left / 1_000_000_000) as libc::time_t,
            tv_nsec: (left % 1_000_000_000) as libc::c_long,
        };
        let limit_ptr = if left == u64::MAX {
            std::ptr::null()
        } else {
            &limit as *const libc::timespec
        };
        // SAFETY: the caller's set, a local siginfo and timespec; the
        // kernel's sigset size.
        let got = unsafe {
            libc::syscall(
                libc::SYS_rt_sigtimedwait,
                set,
                &mut info as *mut libc::siginfo_t,
                limit_ptr,
                8usize,
            )
        } as i32;
        if got < 0 {
            // Timed out: the caller's deadline, or only our 10 ms step.
            if errno() == libc::EAGAIN && deadline.is_none_or(|deadline| now() < deadline) {
                continue;
            }
            break -1;
        }
        if got == signal && is_agents(&info) {
            continue;
        }
        break got;
    };
    let saved = errno();
    if let Some(mask) = mask {
        // SAFETY: restoring the thread's mask saved above.
        unsafe { mask(libc::SIG_SETMASK, &before, std::ptr::null_mut()) };
    }
    if let Some(waiter) = registered {
        waiter.store(0, Ordering::Release);
    }
    if result > 0 {
        if info.si_code == libc::SI_TKILL {
            info.si_code = libc::SI_USER;
        }
        if !out.is_null() {
            // SAFETY: the caller's valid siginfo.
            unsafe { *out = info };
        }
    }
    set_errno(saved);
    result
}

type SigwaitFn = unsafe extern "C" fn(*const libc::sigset_t, *mut i32) -> i32;
type SigwaitinfoFn = unsafe extern "C" fn(*const libc::sigset_t, *mut libc::siginfo_t) -> i32;
type SigtimedwaitFn =
    unsafe extern "C" fn(*const libc::sigset_t, *mut libc::siginfo_t, *const libc::timespec) -> i32;
type SignalfdFn = unsafe extern "C" fn(i32, *const libc::sigset_t, i32) -> i32;

/// libc's definition of `next` as an `F`, None if there is none.
fn next_as<F: Copy>(next: &crate::interpose::NextDefinition) -> Option<F> {
    match next.address() {
        0 => None,
        // SAFETY: libc's definition of the function `F` types (the callers
        // pair each definition with its own type).
        address => Some(unsafe { std::mem::transmute_copy::<usize, F>(&address) }),
    }
}

/// `sigwait(3)`: as libc's, keeping the sampling signal's semantics when
/// the set holds it (see the module doc).
///
/// # Safety
/// As libc's: `set` and `sig` are valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigwait(set: *const libc::sigset_t, sig: *mut i32) -> i32 {
    let Some(signal) = waits_for_ours(set) else {
        return match next_as::<SigwaitFn>(&SIGWAIT) {
            // SAFETY: forwarded under the caller's contract.
            Some(real) => unsafe { real(set, sig) },
            None => libc::ENOSYS,
        };
    };
    loop {
        // SAFETY: the caller's set; no siginfo wanted.
        let got = unsafe { wait_for_ours(signal, set, std::ptr::null_mut(), std::ptr::null()) };
        if got > 0 {
            // SAFETY: the caller's valid pointer.
            unsafe { *sig = got };
            return 0;
        }
        if errno() != libc::EINTR {
            return errno();
        }
    }
}

/// `sigwaitinfo(2)`, as [`sigwait`].
///
/// # Safety
/// As libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigwaitinfo(
    set: *const libc::sigset_t,
    info: *mut libc::siginfo_t,
) -> i32 {
    match waits_for_ours(set) {
        // SAFETY: the caller's arguments.
        Some(signal) => unsafe { wait_for_ours(signal, set, info, std::ptr::null()) },
        None => match next_as::<SigwaitinfoFn>(&SIGWAITINFO) {
            // SAFETY: forwarded under the caller's contract.
            Some(real) => unsafe { real(set, info) },
            None => {
                set_errno(libc::ENOSYS);
                -1
            }
        },
    }
}

/// `sigtimedwait(2)`, as [`sigwait`].
///
/// # Safety
/// As libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigtimedwait(
    set: *const libc::sigset_t,
    info: *mut libc::siginfo_t,
    timeout: *const libc::timespec,
) -> i32 {
    match waits_for_ours(set) {
        // SAFETY: the caller's arguments.
        Some(signal) => unsafe { wait_for_ours(signal, set, info, timeout) },
        None => match next_as::<SigtimedwaitFn>(&SIGTIMEDWAIT) {
            // SAFETY: forwarded under the caller's contract.
            Some(real) => unsafe { real(set, info, timeout) },
            None => {
                set_errno(libc::ENOSYS);
                -1
            }
        },
    }
}

/// `sigaction(2)`: on the agent's sampling signal, records the program's
/// action and reports the program's previous one, leaving ours installed
/// (a runtime such as Go's puts a handler on every signal after the agent
/// chose its own); signals sent to it by others reach that handler
/// ([`forward_foreign`]). Every other signal goes to libc's unchanged.
///
/// # Safety
/// As libc's: `act` and `old` are null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    signal: i32,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> i32 {
    if signal == 0 || signal != OWNED.load(Ordering::Acquire) {
        // SAFETY: the caller's valid pointer, if any.
        let given = unsafe { act.as_ref() };
        if let Some(previous) = program_sets_termination_action(signal, given) {
            if !old.is_null() {
                // SAFETY: the caller's valid pointer.
                unsafe { *old = previous };
            }
            return 0;
        }
        // SAFETY: forwarded under the caller's contract.
        return unsafe { real_sigaction(signal, act, old) };
    }
    let previous = program_action();
    if !old.is_null() {
        // SAFETY: the caller's valid pointer.
        unsafe { *old = previous };
    }
    if !act.is_null() {
        // SAFETY: the caller's valid pointer.
        record_program_action(unsafe { &*act });
    }
    0
}

/// `signal(2)`, recorded like [`sigaction`] on the agent's sampling signal.
///
/// # Safety
/// As libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signal(signum: i32, handler: libc::sighandler_t) -> libc::sighandler_t {
    if signum == 0 || signum != OWNED.load(Ordering::Acquire) {
        if handler == libc::SIG_DFL {
            // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
            let default: libc::sigaction = unsafe { std::mem::zeroed() };
            if let Some(previous) = program_sets_termination_action(signum, Some(&default)) {
                return previous.sa_sigaction;
            }
        }
        type SignalFn = unsafe extern "C" fn(i32, libc::sighandler_t) -> libc::sighandler_t;
        return match SIGNAL.address() {
            0 => libc::SIG_ERR,
            // SAFETY: libc's signal, which has this type.
            address => unsafe { std::mem::transmute::<usize, SignalFn>(address)(signum, handler) },
        };
    }
    let previous = program_action();
    // SAFETY: a zeroed sigaction is valid; BSD semantics as glibc's signal.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_flags = libc::SA_RESTART;
    record_program_action(&action);
    previous.sa_sigaction
}

/// The signal the session samples on and keeps deliverable (0: none).
pub(crate) fn protected() -> i32 {
    PROTECTED.load(Ordering::Acquire)
}

/// The program reads `signal` through a `signalfd` and the session no
/// longer samples on it: it is the program's. The calling thread blocks it
/// for real if the program blocked it, and what is parked is sent again
/// for the kernel to hold (see the module doc).
pub(crate) fn hand_to_program(signal: i32) {
    if protected() == signal {
        unprotect();
    }
    if program_blocks_in_this_thread() {
        // SAFETY: a local set; libc's pthread_sigmask.
        unsafe {
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, signal);
            real_pthread_sigmask(libc::SIG_BLOCK, &only, std::ptr::null_mut());
        }
    }
    // SAFETY: an all-zero siginfo is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    while take_parked(&mut info) {
        send_again(signal, &info);
    }
}

/// libc's `signalfd`.
///
/// # Safety
/// As libc's.
pub(crate) unsafe fn real_signalfd(fd: i32, mask: *const libc::sigset_t, flags: i32) -> i32 {
    match next_as::<SignalfdFn>(&SIGNALFD) {
        // SAFETY: forwarded under the caller's contract.
        Some(real) => unsafe { real(fd, mask, flags) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// The signals that end a process, on which the lifecycle writes the
/// profile first (its termination handler).
pub(crate) const TERMINATION_SIGNALS: [i32; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The lifecycle's termination handler (0: not installed).
static TERMINATION_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Records the address of the lifecycle's termination handler, installed
/// on [`TERMINATION_SIGNALS`].
pub(crate) fn termination_handler_is(handler: usize) {
    TERMINATION_HANDLER.store(handler, Ordering::Release);
}

/// True when the program put the default action back on termination
/// signal `signal` while our handler is on it (see
/// [`program_sets_termination_action`]).
pub(crate) fn program_set_default(signal: i32) -> bool {
    TERMINATION_SIGNALS
        .iter()
        .position(|&s| s == signal)
        .is_some_and(|i| PROGRAM_DEFAULT[i].load(Ordering::Acquire))
}

/// Set when the program put `SIG_DFL` back on a termination signal while
/// our handler was on it, indexed like [`TERMINATION_SIGNALS`]: ours
/// stays, writes the profile, then acts as the default would (see
/// [`program_sets_termination_action`]).
static PROGRAM_DEFAULT: [AtomicBool; 3] = [
    AtomicBool::new(false),
    AtomicBool::new(false),
    AtomicBool::new(false),
];

/// Our `sigaction`/`signal` on SIGTERM, SIGINT, SIGHUP, before libc's.
/// A program that sets the default action on one (Chromium's child
/// processes reset their signals so) would otherwise be ended by it
/// without a profile; since ours writes the profile and then acts as the
/// default, it stays, and the program reads back `SIG_DFL`. Returns the
/// action to report as the previous one when handled here; None: libc's
/// `sigaction` does the call (any handler or `SIG_IGN` the program sets
/// replaces ours, as before).
pub(crate) fn program_sets_termination_action(
    signal: i32,
    act: Option<&libc::sigaction>,
) -> Option<libc::sigaction> {
    let index = TERMINATION_SIGNALS.iter().position(|&s| s == signal)?;
    let ours = TERMINATION_HANDLER.load(Ordering::Acquire);
    if ours == 0 || crate::crash::current_handler(signal) != ours {
        return None;
    }
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
    let default: libc::sigaction = unsafe { std::mem::zeroed() };
    let previous = if PROGRAM_DEFAULT[index].load(Ordering::Acquire) {
        default
    } else {
        // What the program sees today: our handler, as installed.
        let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: reads the disposition into a local.
        unsafe { real_sigaction(signal, std::ptr::null(), &mut current) };
        current
    };
    match act {
        None => Some(previous),
        Some(action) if action.sa_sigaction == libc::SIG_DFL => {
            PROGRAM_DEFAULT[index].store(true, Ordering::Release);
            Some(previous)
        }
        Some(_) => {
            PROGRAM_DEFAULT[index].store(false, Ordering::Release);
            None
        }
    }
}
