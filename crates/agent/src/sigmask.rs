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
//! unblocked.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use crate::interpose::{PTHREAD_SIGMASK, SIGACTION, SIGNAL, SIGPROCMASK};

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

/// Calls libc's `next` with `set` minus the protected signal when it would
/// block it. Async-signal-safe (sigprocmask is).
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
    if set.is_null() || signal == 0 || how == libc::SIG_UNBLOCK {
        // SAFETY: the caller's arguments, as given.
        return unsafe { real(how, set, old) };
    }
    // SAFETY: `set` is a valid sigset_t (the caller's contract); we pass a
    // copy without the protected signal.
    unsafe {
        let mut copy = *set;
        libc::sigdelset(&mut copy, signal);
        real(how, &copy, old)
    }
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
    }
    true
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
        if let Some(previous) = crate::profiler::program_sets_termination_action(signal, given) {
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
            if let Some(previous) =
                crate::profiler::program_sets_termination_action(signum, Some(&default))
            {
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
