//! `_exit` and `_Exit` go through here: the profile is written before the
//! process leaves, as `exit` writes it from its `atexit` handler. They
//! skip destructors on purpose (fast tools, daemons, the child of a fork
//! whose exec failed) and may be called from a signal handler, so the
//! work is handed to the control thread, exactly as for a termination
//! signal ([`lifecycle::stop_before_exit`]); then libc's own runs, found at
//! load. A process leaving by a raw `exit_group` system call, or killed by
//! SIGKILL, runs none of this: it keeps what `CPUPROFILE_FLUSH_SECONDS`
//! last wrote.
#![allow(non_snake_case)]

use std::ffi::c_int;

use crate::interpose::{NextDefinition, EXIT, EXIT_UPPER};
use crate::lifecycle;

/// Writes the profile, then leaves through libc's `next` definition (or
/// the system call, should there be none).
fn leave(next: &NextDefinition, status: c_int) -> ! {
    lifecycle::stop_before_exit();
    let real = next.address();
    if real != 0 {
        // SAFETY: libc's _exit/_Exit, which have this type.
        unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(c_int) -> !>(real)(status) }
    }
    loop {
        // SAFETY: ends the process; never returns.
        unsafe { libc::syscall(libc::SYS_exit_group, status) };
    }
}

/// Interposes libc's `_exit`.
///
/// # Safety
/// Same contract as libc's `_exit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _exit(status: c_int) -> ! {
    leave(&EXIT, status)
}

/// Interposes libc's `_Exit`.
///
/// # Safety
/// Same contract as libc's `_Exit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _Exit(status: c_int) -> ! {
    leave(&EXIT_UPPER, status)
}
