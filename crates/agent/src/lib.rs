//! The sampling agent: `libcpuprof.so`, a drop-in replacement for
//! gperftools' `libprofiler`, and the same profiler as a Rust API.
//!
//! - As a shared library it exports gperftools' C API ([`capi`]:
//!   `ProfilerStart`, `ProfilerStop`, …) and starts at load when
//!   `CPUPROFILE` is set (`LD_PRELOAD=libcpuprof.so CPUPROFILE=out.prof
//!   ./prog`, or a program linked with `-lcpuprof`).
//! - From Rust: [`ProfilerGuard::start`] … `drop(guard)` or
//!   [`ProfilerGuard::stop`]. Linking the rlib never starts profiling from
//!   `CPUPROFILE`: the load-time start only runs when the code lives in a
//!   shared object named `libcpuprof*`.
//!
//! How it works: every thread gets its own CPU-time clock (a perf
//! task-clock event, else a POSIX thread CPU timer, else `setitimer`; see
//! [`timers`]) that sends it a signal; the handler ([`signal_path`])
//! unwinds the interrupted stack with framehop from DWARF CFI and adds it
//! to a preallocated lock-free table; a control thread drains the table,
//! follows `dlopen` and new threads, and the profile is written in
//! gperftools' format, or profile.proto with each sample's thread
//! (`CPUPROFILE_FORMAT=pprof`), at stop, flush, exit, `_exit`
//! (`src/exit.rs`), before an exec (`src/exec.rs`), at termination
//! signals, and from the crashing thread on a crash (`src/crash.rs`).
//! Realtime mode (`CPUPROFILE_REALTIME`) samples every thread's wall time
//! from a driver thread (`src/wall_driver.rs`).
//!
//! With `CPUPROFILE_HTTP=[HOST:]PORT` the library also serves profiles
//! over HTTP ([`server`], requests parsed by [`http`]): pprof's remote
//! protocol and Go's `/debug/pprof/` paths, for `pprof http://…`, Parca and
//! Pyroscope.
#![deny(missing_docs)]

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
compile_error!("the cpuprof agent supports Linux on x86-64");

pub mod capi;
mod collector;
pub mod config;
mod crash;
mod diag;
mod exec;
mod exit;
mod handler_stack;
pub mod http;
mod interpose;
mod lifecycle;
mod locks;
mod modules;
mod pprof_proto;
pub mod server;
mod sigmask;
pub mod signal_path;
mod symbols;
mod thread_names;
mod threads;
pub mod timers;
mod wall_driver;
mod writer;

use std::path::{Path, PathBuf};

pub use config::{ProfileFormat, Settings};
pub use lifecycle::{SessionSummary, StartError};

/// Why the Rust API failed.
#[derive(Debug)]
pub enum Error {
    /// The session could not start.
    Start(StartError),
    /// The path is not valid UTF-8.
    Path(PathBuf),
    /// The profile could not be written.
    Write(std::io::Error),
    /// The session was already stopped (by `ProfilerStop` or another guard).
    NotRunning,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Start(e) => write!(f, "cannot start profiling: {e}"),
            Error::Path(p) => write!(f, "profile path {} is not valid UTF-8", p.display()),
            Error::Write(e) => write!(f, "cannot write the profile: {e}"),
            Error::NotRunning => write!(f, "profiling was already stopped"),
        }
    }
}

impl std::error::Error for Error {}

/// A running profiling session of the whole process; the profile is
/// written when it is stopped or dropped.
///
/// ```no_run
/// let guard = cpuprof::ProfilerGuard::start("out.prof")?;
/// // ... the work to profile, in any number of threads ...
/// let summary = guard.stop()?;
/// println!("{} samples", summary.samples);
/// # Ok::<(), cpuprof::Error>(())
/// ```
#[must_use = "profiling stops when the guard is dropped"]
pub struct ProfilerGuard {
    stopped: bool,
}

impl ProfilerGuard {
    /// Starts profiling to `path` with the settings of the environment
    /// (`CPUPROFILE_FREQUENCY`, `CPUPROFILE_REALTIME`, …; see [`Settings`]).
    // Never inlined, nor are the guard's other methods: inlined into the
    // program's function, their code after the timer is armed would be
    // sampled as the program's (a frame of `start_with (inline)` that the
    // agent cannot tell from the program's own code). As functions, their
    // frames are the agent's and are left out of every stack.
    #[inline(never)]
    pub fn start(path: impl AsRef<Path>) -> Result<ProfilerGuard, Error> {
        Self::start_with(path, Settings::from_env(&mut |w| diag::diag(&w)))
    }

    /// Starts profiling to `path` with explicit settings.
    #[inline(never)]
    pub fn start_with(path: impl AsRef<Path>, settings: Settings) -> Result<ProfilerGuard, Error> {
        let path = path.as_ref();
        let text = path
            .to_str()
            .ok_or_else(|| Error::Path(path.to_path_buf()))?;
        lifecycle::start(text, settings, None).map_err(Error::Start)?;
        Ok(ProfilerGuard { stopped: false })
    }

    /// Writes the profile with everything sampled so far; profiling goes on.
    #[inline(never)]
    pub fn flush(&self) -> Result<usize, Error> {
        match lifecycle::flush() {
            Some(written) => written.map_err(Error::Write),
            None => Err(Error::NotRunning),
        }
    }

    /// Stops profiling and writes the profile.
    #[inline(never)]
    pub fn stop(mut self) -> Result<SessionSummary, Error> {
        self.stopped = true;
        match lifecycle::stop() {
            Some(result) => result.map_err(Error::Write),
            None => Err(Error::NotRunning),
        }
    }
}

impl Drop for ProfilerGuard {
    #[inline(never)]
    fn drop(&mut self) {
        if !self.stopped {
            let _ = lifecycle::stop();
        }
    }
}

/// The profiler's status, as `ProfilerGetCurrentState` reports it.
#[derive(Clone, Debug)]
pub struct State {
    /// True while profiling.
    pub enabled: bool,
    /// When the session started (seconds since the epoch).
    pub start_time: i64,
    /// The profile being written.
    pub path: String,
    /// Samples gathered so far.
    pub samples: u64,
}

/// The profiler's current status.
pub fn state() -> State {
    let (enabled, start_time, path, samples) = lifecycle::current_state();
    State {
        enabled,
        start_time,
        path,
        samples,
    }
}
