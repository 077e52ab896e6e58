//! gperftools' C API (`<gperftools/profiler.h>`), same signatures and
//! semantics. Declared for C in `include/gperftools/profiler.h`.
#![allow(non_snake_case)]

use std::ffi::{c_char, c_int, c_void, CStr};

use crate::config::Settings;
use crate::diag::diag;
use crate::lifecycle;
use crate::signal_path::{self, MAX_DEPTH};

/// `struct ProfilerOptions`: an optional per-sample filter, called in the
/// signal handler (so it must be async-signal-safe); a sample is kept when
/// it returns non-zero.
#[repr(C)]
pub struct ProfilerOptions {
    /// The filter, or NULL.
    pub filter_in_thread: Option<extern "C" fn(*mut c_void) -> c_int>,
    /// Its argument.
    pub filter_in_thread_arg: *mut c_void,
}

/// `struct ProfilerState`, filled by [`ProfilerGetCurrentState`].
#[repr(C)]
pub struct ProfilerState {
    /// Non-zero while profiling.
    pub enabled: c_int,
    /// When the session started.
    pub start_time: libc::time_t,
    /// The profile being written, NUL-terminated, or empty.
    pub profile_name: [c_char; 1024],
    /// Samples gathered so far in this session.
    pub samples_gathered: c_int,
}

fn start_from_c(fname: *const c_char, options: *const ProfilerOptions) -> c_int {
    if fname.is_null() {
        return 0;
    }
    // SAFETY: the caller passes a NUL-terminated file name.
    let path = unsafe { CStr::from_ptr(fname) }
        .to_string_lossy()
        .into_owned();
    if path.is_empty() {
        return 0;
    }
    let filter = if options.is_null() {
        None
    } else {
        // SAFETY: the caller passes a valid ProfilerOptions.
        let options = unsafe { &*options };
        options
            .filter_in_thread
            .map(|f| (f as usize, options.filter_in_thread_arg as usize))
    };
    let settings = Settings::from_env(&mut |w| diag(&w));
    match lifecycle::start(&path, settings, filter) {
        Ok(()) => 1,
        Err(lifecycle::StartError::AlreadyRunning) => 0,
        Err(e) => {
            diag(&e.to_string());
            0
        }
    }
}

/// Starts profiling all threads, writing to `fname` at stop or flush.
/// Returns 1 on success, 0 if already running or on error.
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerStart(fname: *const c_char) -> c_int {
    start_from_c(fname, std::ptr::null())
}

/// Like [`ProfilerStart`], with options (a sample filter).
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerStartWithOptions(
    fname: *const c_char,
    options: *const ProfilerOptions,
) -> c_int {
    start_from_c(fname, options)
}

/// Stops profiling and writes the profile.
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerStop() {
    let _ = lifecycle::stop();
}

/// Writes the profile with everything sampled so far; profiling goes on.
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerFlush() {
    let _ = lifecycle::flush();
}

/// Deprecated in gperftools, where it does nothing; the same here.
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerEnable() {}

/// Deprecated in gperftools, where it does nothing; the same here.
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerDisable() {}

/// Non-zero while profiling (every thread is always covered).
#[unsafe(no_mangle)]
pub extern "C" fn ProfilingIsEnabledForAllThreads() -> c_int {
    c_int::from(lifecycle::is_running())
}

/// Registers the calling thread. Every thread is covered without it; this
/// only makes sure the calling thread is armed now rather than at the next
/// sweep (for threads not made by `pthread_create`).
#[unsafe(no_mangle)]
pub extern "C" fn ProfilerRegisterThread() {
    crate::threads::register_current_thread();
}

/// Fills `*state` with the profiler's status.
///
/// # Safety
/// `state` must be NULL or point to a writable `struct ProfilerState`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ProfilerGetCurrentState(state: *mut ProfilerState) {
    if state.is_null() {
        return;
    }
    let (enabled, start_time, path, samples) = lifecycle::current_state();
    // SAFETY: the caller passes a writable ProfilerState.
    let state = unsafe { &mut *state };
    state.enabled = c_int::from(enabled);
    state.start_time = start_time;
    state.samples_gathered = samples.min(c_int::MAX as u64) as c_int;
    state.profile_name = [0; 1024];
    for (dst, &src) in state
        .profile_name
        .iter_mut()
        .zip(path.as_bytes().iter().take(1023))
    {
        *dst = src as c_char;
    }
}

/// Writes up to `max_depth` PCs of a stack to `result`, leaf first,
/// skipping `skip_count` frames; returns how many. With a `ucontext_t`
/// (`uc`, as a signal handler receives) the stack is the interrupted one;
/// with NULL it is the caller's. Async-signal-safe. Needs the module list,
/// which exists once profiling has been started in this process; before
/// that it returns 0.
///
/// # Safety
/// `result` must have room for `max_depth` pointers; `uc` must be NULL or a
/// valid `ucontext_t`.
#[unsafe(no_mangle)]
#[inline(never)]
pub unsafe extern "C" fn ProfilerGetStackTrace(
    result: *mut *mut c_void,
    max_depth: c_int,
    skip_count: c_int,
    uc: *const c_void,
) -> c_int {
    if result.is_null() || max_depth <= 0 {
        return 0;
    }
    let Some(sampler) = crate::collector::existing_sampler() else {
        return 0;
    };
    let (pc, sp, bp, own_frames) = if uc.is_null() {
        let (pc, sp, bp) = current_registers();
        (pc, sp, bp, 1)
    } else {
        match signal_path::registers(uc) {
            Some((pc, sp, bp)) => (pc, sp, bp, 0),
            None => return 0,
        }
    };
    let Some(side) = sampler.gate.enter() else {
        return 0;
    };
    let mut stack = [0u64; MAX_DEPTH];
    let me = signal_path::Me::now(sampler);
    let depth = signal_path::unwind(sampler, &me, pc, sp, bp, &mut stack);
    sampler.gate.leave(side);
    let skip = own_frames + skip_count.max(0) as usize;
    let frames = stack.get(skip.min(depth)..depth).unwrap_or(&[]);
    let n = frames.len().min(max_depth as usize);
    for (i, &pc) in frames.iter().take(n).enumerate() {
        // SAFETY: the caller gave room for max_depth entries; i < max_depth.
        unsafe { *result.add(i) = pc as usize as *mut c_void };
    }
    n as c_int
}

/// The caller-visible registers at this point of this function.
#[inline(always)]
fn current_registers() -> (u64, u64, u64) {
    let (pc, sp, bp): (u64, u64, u64);
    // SAFETY: reads rip (via lea), rsp and rbp; no memory is touched.
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags),
        );
    }
    (pc, sp, bp)
}
