//! `execve`, `execv`, `execvp` and `execvpe` of the program go through
//! here: a running session is stopped (its profile written) before the
//! process image is replaced. Stopping first matters beyond saving the
//! samples: a profiling signal raised during `execve` stays pending into
//! the new image, where its handler is gone and SIGPROF's default action
//! would kill the new program; and `setitimer` timers survive `execve`.
//! The exec'd program, if it loads libcpuprof.so again, writes its own
//! `path_<pid>`.
//!
//! In a `vfork` child (which shares the parent's memory and runs no fork
//! handlers) nothing is done: it has no timers of its own.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::profiler;

/// Stops the session before an exec, unless this is a vfork child.
fn before_exec() {
    if !profiler::is_running() {
        return;
    }
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } != profiler::session_pid() {
        return;
    }
    let _ = profiler::stop();
}

/// The next definition of `name` (libc's), cached in `slot`.
fn next_symbol(slot: &AtomicUsize, name: &std::ffi::CStr) -> usize {
    let mut ptr = slot.load(Ordering::Acquire);
    if ptr == 0 {
        // SAFETY: dlsym with a valid NUL-terminated name.
        ptr = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        slot.store(ptr, Ordering::Release);
    }
    ptr
}

type ExecVE =
    unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;
type ExecV = unsafe extern "C" fn(*const c_char, *const *const c_char) -> c_int;

macro_rules! no_such_function {
    () => {{
        // SAFETY: setting errno of the calling thread.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }};
}

/// Interposes libc's `execve`.
///
/// # Safety
/// Same contract as libc's `execve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execve(
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = next_symbol(&REAL, c"execve");
    if real == 0 {
        no_such_function!();
    }
    before_exec();
    // SAFETY: libc's execve, with the caller's arguments.
    unsafe { std::mem::transmute::<usize, ExecVE>(real)(path, argv, envp) }
}

/// Interposes libc's `execvpe`.
///
/// # Safety
/// Same contract as libc's `execvpe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(
    file: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = next_symbol(&REAL, c"execvpe");
    if real == 0 {
        no_such_function!();
    }
    before_exec();
    // SAFETY: libc's execvpe, with the caller's arguments.
    unsafe { std::mem::transmute::<usize, ExecVE>(real)(file, argv, envp) }
}

/// Interposes libc's `execv`.
///
/// # Safety
/// Same contract as libc's `execv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = next_symbol(&REAL, c"execv");
    if real == 0 {
        no_such_function!();
    }
    before_exec();
    // SAFETY: libc's execv, with the caller's arguments.
    unsafe { std::mem::transmute::<usize, ExecV>(real)(path, argv) }
}

/// Interposes libc's `execvp`.
///
/// # Safety
/// Same contract as libc's `execvp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let real = next_symbol(&REAL, c"execvp");
    if real == 0 {
        no_such_function!();
    }
    before_exec();
    // SAFETY: libc's execvp, with the caller's arguments.
    unsafe { std::mem::transmute::<usize, ExecV>(real)(file, argv) }
}
