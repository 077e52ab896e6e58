//! The exec family (`execve`, `execv`, `execvp`, `execvpe`, `execl`,
//! `execle`, `execlp`, `fexecve`, `execveat`) goes through here: before
//! the process image is replaced, the session is suspended (clocks
//! disarmed, profile written to its file); if the exec fails, it resumes,
//! and the file written at the end replaces the one written here. The
//! exec'd program, if it loads libcpuprof.so again, writes its own
//! `path_<pid>`.
//!
//! A `vfork` child (which shares the parent's memory and runs no fork
//! handlers) is told apart by its pid, which is not the session's: there
//! nothing is done, so the parent's session and profile stay intact and
//! the exec'd program profiles itself.
//!
//! `execl`, `execle` and `execlp` are C-variadic, which Rust cannot define
//! on stable. They are defined as naked functions instead, relying on the
//! System V x86-64 calling convention: a variadic call passes its integer
//! and pointer arguments exactly like a non-variadic one (the first six in
//! `rdi`, `rsi`, `rdx`, `rcx`, `r8`, `r9`, the rest on the stack in order,
//! one 8-byte slot each; `al` only counts vector registers, unused here).
//! Pushing `r9` down to `rsi` just below the stack arguments makes the
//! argument list, terminating NULL included, one contiguous array of
//! pointers on the stack: `argv` itself, with no copy and no bound other
//! than the caller's NULL (what libc's own `execl` reads with `va_arg`).

use std::ffi::{c_char, c_int};

use crate::interpose::{NextDefinition, EXECV, EXECVE, EXECVEAT, EXECVP, EXECVPE, FEXECVE};
use crate::lifecycle;

/// Suspends the session before an exec, unless this process does not own
/// it (a vfork child, or no session). Returns the session to resume if the
/// exec fails.
fn before_exec() -> Option<u64> {
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } != lifecycle::session_pid() {
        return None;
    }
    lifecycle::suspend_for_exec()
}

/// Calls libc's exec through `call`, with the session suspended around it;
/// returns what a failed exec returns, errno included.
fn exec_with(next: &NextDefinition, call: impl FnOnce(usize) -> c_int) -> c_int {
    // SAFETY: the calling thread's errno.
    let errno = unsafe { libc::__errno_location() };
    let real = next.address();
    if real == 0 {
        // SAFETY: as above.
        unsafe { *errno = libc::ENOSYS };
        return -1;
    }
    let suspended = before_exec();
    let result = call(real);
    if let Some(id) = suspended {
        // SAFETY: as above.
        let failure = unsafe { *errno };
        lifecycle::resume_after_exec(id);
        // SAFETY: as above.
        unsafe { *errno = failure };
    }
    result
}

type Argv = *const *const c_char;
type ExecVE = unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int;
type ExecV = unsafe extern "C" fn(*const c_char, Argv) -> c_int;
type FExecVE = unsafe extern "C" fn(c_int, Argv, Argv) -> c_int;
type ExecVEAt = unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int;

/// Interposes libc's `execve`.
///
/// # Safety
/// Same contract as libc's `execve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    exec_with(&EXECVE, |real| {
        // SAFETY: libc's execve, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, ExecVE>(real)(path, argv, envp) }
    })
}

/// Interposes libc's `execvpe`.
///
/// # Safety
/// Same contract as libc's `execvpe`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    exec_with(&EXECVPE, |real| {
        // SAFETY: libc's execvpe, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, ExecVE>(real)(file, argv, envp) }
    })
}

/// Interposes libc's `execv`.
///
/// # Safety
/// Same contract as libc's `execv`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    exec_with(&EXECV, |real| {
        // SAFETY: libc's execv, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, ExecV>(real)(path, argv) }
    })
}

/// Interposes libc's `execvp`.
///
/// # Safety
/// Same contract as libc's `execvp`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    exec_with(&EXECVP, |real| {
        // SAFETY: libc's execvp, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, ExecV>(real)(file, argv) }
    })
}

/// Interposes libc's `fexecve`.
///
/// # Safety
/// Same contract as libc's `fexecve`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    exec_with(&FEXECVE, |real| {
        // SAFETY: libc's fexecve, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, FExecVE>(real)(fd, argv, envp) }
    })
}

/// Interposes libc's `execveat` (glibc 2.34 and later; ENOSYS before).
///
/// # Safety
/// Same contract as libc's `execveat`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    exec_with(&EXECVEAT, |real| {
        // SAFETY: libc's execveat, with the caller's arguments.
        unsafe { std::mem::transmute::<usize, ExecVEAt>(real)(dirfd, path, argv, envp, flags) }
    })
}

/// The body of the variadic wrappers: with `rdi` (the path or file) left
/// alone, pushes the five other argument registers below the caller's
/// stack arguments and calls `$list(rdi, argv)` with `argv` pointing at
/// them. The return address is moved out of the way and put back after;
/// the stack stays 16-byte aligned at the call (entry: 8 mod 16; pop: 0;
/// five pushes: 8; one push: 0).
macro_rules! variadic_to_array {
    ($list:path) => {
        core::arch::naked_asm!(
            "pop r11",
            "push r9",
            "push r8",
            "push rcx",
            "push rdx",
            "push rsi",
            "mov rsi, rsp",
            "push r11",
            "call {list}",
            "pop r11",
            "add rsp, 40",
            "push r11",
            "ret",
            list = sym $list,
        )
    };
}

/// Interposes libc's `execl(path, arg0, ..., NULL)` (C-variadic; see the
/// module doc for how the arguments are read).
///
/// # Safety
/// Same contract as libc's `execl`.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execl(path: *const c_char, arg0: *const c_char) -> c_int {
    variadic_to_array!(execl_argv)
}

/// Interposes libc's `execlp(file, arg0, ..., NULL)` (C-variadic).
///
/// # Safety
/// Same contract as libc's `execlp`.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execlp(file: *const c_char, arg0: *const c_char) -> c_int {
    variadic_to_array!(execlp_argv)
}

/// Interposes libc's `execle(path, arg0, ..., NULL, envp)` (C-variadic).
///
/// # Safety
/// Same contract as libc's `execle`.
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn execle(path: *const c_char, arg0: *const c_char) -> c_int {
    variadic_to_array!(execle_argv)
}

/// `execl` with its arguments as the array `argv` (NULL-terminated).
unsafe extern "C" fn execl_argv(path: *const c_char, argv: Argv) -> c_int {
    // SAFETY: execl's contract: argv is NULL-terminated.
    unsafe { execv(path, argv) }
}

/// `execlp` with its arguments as the array `argv`.
unsafe extern "C" fn execlp_argv(file: *const c_char, argv: Argv) -> c_int {
    // SAFETY: execlp's contract: argv is NULL-terminated.
    unsafe { execvp(file, argv) }
}

/// `execle` with its arguments as the array `argv`: the environment is the
/// argument after the terminating NULL.
unsafe extern "C" fn execle_argv(path: *const c_char, argv: Argv) -> c_int {
    // SAFETY: execle's contract: argv is NULL-terminated and followed by
    // envp, all in the caller's argument slots.
    unsafe {
        let mut end = argv;
        while !(*end).is_null() {
            end = end.add(1);
        }
        let envp = *end.add(1) as Argv;
        execve(path, argv, envp)
    }
}
