//! Keeping the profile when the program crashes: SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE and SIGABRT.
//!
//! Installed once, at the first session's start, and only over the
//! default action: a signal the program ignores is left alone. The rules
//! that keep the host's behaviour:
//!
//! - **The program's later handlers win.** We never install again: a
//!   handler the program sets after us replaces ours and we are never
//!   called (a program that recovers from SIGSEGV with `siglongjmp`, a
//!   runtime that uses faults, a crash reporter).
//! - **A handler the program set before us is chained to**, with its mask
//!   and `SA_RESETHAND` emulated. We write the profile only if, when it
//!   returns, the disposition has become `SIG_DFL` (the handler gave up and
//!   lets the fault kill the process, as crash reporters do); a handler
//!   that recovers (`siglongjmp`, or fixes the cause and returns with its
//!   handler still installed) makes us write nothing.
//! - **Over the default action** (the usual case): write the profile, put
//!   `SIG_DFL` back, and let the signal kill the process as it would have:
//!   a fault (`si_code > 0`) re-executes the faulting instruction when the
//!   handler returns; a sent signal (`abort()`, `kill`) is raised again
//!   (blocked until we return). The process dies of the same signal, with
//!   a core dump where the limits allow, as without the agent.
//!
//! The write itself runs in the crashing thread, inside the handler, and
//! is async-signal-safe: the samples already drained are read from the
//! session under a `try_lock` of the control lock (a compare-and-swap; we
//! wait at most 2 s, 1 ms at a time, for the control thread to release
//! it, never block), the stack tables are read in place (atomics), and the
//! file is written in gperftools' format through a buffer on the stack
//! with `open`, `write`, `rename` and `close` only, the maps copied from
//! `/proc/self/maps` with `read`. Nothing allocates or takes a lock that
//! may be held. The file is gperftools' format even in a profile.proto
//! session (encoding profile.proto needs symbol tables and memory): the
//! same readers read it, without the thread labels.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals that end a process with a crash.
pub(crate) const CRASH_SIGNALS: [i32; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// The actions in place before ours, indexed like [`CRASH_SIGNALS`].
struct PreviousActions(UnsafeCell<[Option<libc::sigaction>; 5]>);
// SAFETY: each is written once before our handler for it is installed,
// then only read.
unsafe impl Sync for PreviousActions {}
static PREVIOUS: PreviousActions = PreviousActions(UnsafeCell::new([None; 5]));

/// Set while a crash write runs.
static WRITING: AtomicBool = AtomicBool::new(false);

/// What the crashing thread runs before the program's own action: the
/// lifecycle's profile write, handed to [`install`] (0: nothing).
static WRITE_PROFILE: AtomicUsize = AtomicUsize::new(0);

/// Installs our handler on each crash signal whose action is the default
/// or a handler (not one the program ignores), which runs `write_profile`
/// (async-signal-safe) in the crashing thread first. Called once per
/// process.
pub(crate) fn install(write_profile: fn()) {
    WRITE_PROFILE.store(write_profile as usize, Ordering::Release);
    for (index, &signal) in CRASH_SIGNALS.iter().enumerate() {
        // SAFETY: sigaction with valid pointers; PREVIOUS is written before
        // the handler that reads it is installed.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if crate::sigmask::real_sigaction(signal, std::ptr::null(), &mut previous) != 0
                || previous.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            (*PREVIOUS.0.get())[index] = Some(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_crash_signal as *const () as usize;
            // On the alternate stack when the program has one (a stack
            // overflow), as the program's own handler would be.
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            crate::sigmask::real_sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

fn errno() -> i32 {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() }
}

/// The handler (or `SIG_DFL`/`SIG_IGN`) currently on `signal`.
pub(crate) fn current_handler(signal: i32) -> usize {
    // SAFETY: reads the disposition into a local.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        crate::sigmask::real_sigaction(signal, std::ptr::null(), &mut current);
        current.sa_sigaction
    }
}

fn set_default(signal: i32) {
    // SAFETY: installs SIG_DFL with an empty mask.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        crate::sigmask::real_sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// Writes the profile, if a session runs. A thread that crashes while
/// another writes waits for that write (at most 3 s), so that its own
/// death does not cut the file short.
fn write_once() {
    if !WRITING.swap(true, Ordering::AcqRel) {
        let write = WRITE_PROFILE.load(Ordering::Acquire);
        if write != 0 {
            // SAFETY: stored from a `fn()` by install.
            unsafe { std::mem::transmute::<usize, fn()>(write)() };
        }
        WRITING.store(false, Ordering::Release);
        return;
    }
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    for _ in 0..3000 {
        if !WRITING.load(Ordering::Acquire) {
            break;
        }
        // SAFETY: nanosleep is async-signal-safe.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}

extern "C" fn on_crash_signal(signal: i32, info: *mut libc::siginfo_t, ucontext: *mut c_void) {
    // SAFETY: the calling thread's errno.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    let index = CRASH_SIGNALS.iter().position(|&s| s == signal);
    // SAFETY: read-only after installation.
    let previous = index.and_then(|i| unsafe { (*PREVIOUS.0.get())[i] });
    match previous {
        Some(previous) if previous.sa_sigaction != libc::SIG_DFL => {
            chain(signal, &previous, info, ucontext);
            if current_handler(signal) == libc::SIG_DFL {
                // The program's handler gave up: the fault, when it comes
                // again, ends the process.
                write_once();
            }
        }
        _ => {
            write_once();
            set_default(signal);
            // SAFETY: the kernel passes a valid siginfo to SA_SIGINFO handlers.
            let code = if info.is_null() {
                0
            } else {
                unsafe { (*info).si_code }
            };
            if code <= 0 || signal == libc::SIGABRT {
                // Sent, not a fault: send it again; it stays blocked until
                // we return, then the default action ends the process.
                // SAFETY: raise is async-signal-safe.
                unsafe { libc::raise(signal) };
            }
            // A fault: returning re-executes the faulting instruction,
            // which now meets the default action.
        }
    }
    // SAFETY: as above.
    unsafe { *errno = saved };
}

/// Runs the program's earlier handler as the kernel would have: its mask
/// blocked meanwhile, and `SA_RESETHAND` honoured.
fn chain(
    signal: i32,
    previous: &libc::sigaction,
    info: *mut libc::siginfo_t,
    ucontext: *mut c_void,
) {
    // SAFETY: sigprocmask and sigaction with valid pointers; the handler
    // address was installed by the program with these flags.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        let mut mask = previous.sa_mask;
        if previous.sa_flags & libc::SA_NODEFER == 0 {
            libc::sigaddset(&mut mask, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut old);
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            set_default(signal);
        }
        call_handler(signal, previous, info, ucontext);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// Bytes of [`RawFile`]'s buffer: small, because the handler may run on
/// the program's alternate signal stack (`SA_ONSTACK`), which can be as
/// small as `MINSIGSTKSZ` (2 KiB); Rust's own threads have one.
const BUFFER: usize = 512;

/// A file written from a signal handler: bytes gathered in a small buffer
/// on the stack and written with `write(2)`.
pub(crate) struct RawFile {
    fd: i32,
    buffer: [u8; BUFFER],
    used: usize,
    failed: bool,
}

impl RawFile {
    /// Creates (or truncates) `path`, a NUL-terminated name.
    pub(crate) fn create(path: &[u8]) -> Option<RawFile> {
        if path.last() != Some(&0) {
            return None;
        }
        // SAFETY: a NUL-terminated path; open is async-signal-safe.
        let fd = unsafe {
            libc::open(
                path.as_ptr().cast(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
                0o666,
            )
        };
        (fd >= 0).then_some(RawFile {
            fd,
            buffer: [0; BUFFER],
            used: 0,
            failed: false,
        })
    }

    fn flush(&mut self) {
        let mut start = 0;
        while start < self.used && !self.failed {
            let Some(pending) = self.buffer.get(start..self.used) else {
                break;
            };
            // SAFETY: writing a live buffer.
            let n = unsafe { libc::write(self.fd, pending.as_ptr().cast(), pending.len()) };
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                self.failed = true;
                break;
            }
            start += n as usize;
        }
        self.used = 0;
    }

    pub(crate) fn bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.used == self.buffer.len() {
                self.flush();
            }
            let room = self.buffer.len() - self.used;
            let n = room.min(bytes.len());
            if let (Some(to), Some(from)) = (
                self.buffer.get_mut(self.used..self.used + n),
                bytes.get(..n),
            ) {
                to.copy_from_slice(from);
            }
            self.used += n;
            bytes = bytes.get(n..).unwrap_or(&[]);
        }
    }

    /// One word of gperftools' format (native size and byte order).
    pub(crate) fn word(&mut self, value: u64) {
        self.bytes(&(value as usize).to_ne_bytes());
    }

    /// Appends the contents of the file `path` (NUL-terminated).
    pub(crate) fn copy_file(&mut self, path: &[u8]) {
        if path.last() != Some(&0) {
            return;
        }
        // SAFETY: a NUL-terminated path; open and read are async-signal-safe.
        let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return;
        }
        loop {
            if self.used == self.buffer.len() {
                self.flush();
            }
            // Read straight into the free part of the buffer.
            let Some(free) = self.buffer.get_mut(self.used..) else {
                break;
            };
            // SAFETY: reading into the live free part of the buffer.
            let n = unsafe { libc::read(fd, free.as_mut_ptr().cast(), free.len()) };
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            self.used += n as usize;
        }
        // SAFETY: closing the descriptor we opened.
        unsafe { libc::close(fd) };
    }

    /// Flushes and closes; true when everything was written.
    pub(crate) fn finish(mut self) -> bool {
        self.flush();
        // SAFETY: closing the descriptor we opened.
        let closed = unsafe { libc::close(self.fd) } == 0;
        closed && !self.failed
    }
}

/// Calls `action`'s handler (not `SIG_DFL` or `SIG_IGN`) with the
/// arguments its `SA_SIGINFO` flag asks for.
///
/// # Safety
/// `action.sa_sigaction` is a handler the program installed with these
/// flags.
pub(crate) unsafe fn call_handler(
    signal: i32,
    action: &libc::sigaction,
    info: *mut libc::siginfo_t,
    ucontext: *mut c_void,
) {
    // SAFETY: under the caller's contract.
    unsafe {
        if action.sa_flags & libc::SA_SIGINFO != 0 {
            let handler: extern "C" fn(i32, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute(action.sa_sigaction);
            handler(signal, info, ucontext);
        } else {
            let handler: extern "C" fn(i32) = std::mem::transmute(action.sa_sigaction);
            handler(signal);
        }
    }
}
