//! The agent's lifecycle: every event of a process's life that the agent
//! acts on, in one module. The other modules are called from here and do
//! not call back (the HTTP endpoint and the crash handler are handed the
//! two functions they need when they are started); only the entry points
//! above it — the C and Rust APIs (`capi`, the crate root) and the
//! interposed `exec*` and `_exit` (`exec`, `exit`) — call into it.
//!
//! A process's life, in order:
//! 1. **Load** ([`on_load`], a constructor): `CPUPROFILE` starts a session,
//!    `CPUPROFILESIGNAL` installs the switch ([`install_switch`]),
//!    `CPUPROFILE_HTTP` starts the endpoint (`server::start_from_env`).
//! 2. **Start** ([`start`], also from `ProfilerStart` and the Rust guard):
//!    the sampling signal is chosen ([`choose_signal`]) and its handler
//!    installed once with the crash, termination and fork hooks
//!    ([`install_once_hooks`]); the clock is armed on every thread. A
//!    single-threaded process gets no thread of ours.
//! 3. **The program creates a thread** (our [`pthread_create`]): the new
//!    thread arms its own clock; the first one also brings the control
//!    thread ([`program_creates_a_thread`]), which drains the tables,
//!    follows `dlopen` and new threads, flushes ([`control_loop`]).
//! 4. **Fork** ([`fork_prepare`], [`fork_parent`], [`fork_child`]): the
//!    child goes on with the session into its own file, without threads
//!    of ours until it creates one ([`continue_in_child`]); a child made
//!    with the raw `clone` system call is adopted at its first call to us
//!    ([`adopt_if_cloned_child`]).
//! 5. **Exec** ([`suspend_for_exec`], [`resume_after_exec`] if it fails).
//! 6. **The program takes the sampling signal** (a handler of its own,
//!    seen by [`check_signal_owner`]; a `signalfd`, our [`signalfd`]):
//!    sampling stops, the signal is the program's.
//! 7. **Flush and stop** ([`flush`], [`stop`]); HTTP profile windows
//!    ([`window_begin`], [`window_end`]) run alongside.
//! 8. **Exit** (`exit`: the hook of [`install_once_hooks`]; `_exit`:
//!    [`stop_before_exit`]), **termination signals**
//!    ([`on_termination_signal`]) and **crashes** ([`write_after_crash`],
//!    from the crashing thread): the profile is written before the
//!    process goes.
//!
//! Nothing here runs in the profiling signal handler. Locks: see
//! `src/locks.rs` ([`CONTROL`], then `threads::THREADS`).

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::collector::{existing_sampler, sampler, Stacks, TimeKeeping};
use crate::config::{ProfileFormat, Settings};
use crate::diag::{diag, write_stderr};
use crate::locks::lock;
use crate::modules::{self, LoadedObject};
use crate::server::{WindowError, WindowProfile, Windows};
use crate::signal_path::{self, control_tid, gettid, set_control_tid, Sampler};
use crate::thread_names::ThreadNames;
use crate::threads::{self, Arming, THREADS};
use crate::timers::{self, Trigger};
use crate::writer;

/// One profiling session (between a start and a stop).
struct Session {
    /// Tells sessions apart (an exec that fails resumes only its own).
    id: u64,
    /// Execs under way (see [`suspend_for_exec`]): while non-zero the
    /// clocks are disarmed and nothing writes the file.
    execs_in_progress: u32,
    path: String,
    /// Started only to feed an HTTP profile window ([`window_begin`]): it
    /// writes no file, prints nothing, and is invisible to the C and Rust
    /// APIs, which may start a session of their own over it.
    internal: bool,
    settings: Settings,
    clock: Trigger,
    start_time: libc::time_t,
    /// When the session started (ns since the epoch), for profile.proto.
    start_time_ns: u64,
    /// The monotonic clock (ns) at `start_time_ns`: sample times are
    /// taken on it and converted to the epoch at the drain.
    start_monotonic_ns: u64,
    /// Sample times kept (see [`TimeKeeping`]).
    times: TimeKeeping,
    started: Instant,
    start_process_cpu_ns: u64,
    /// Samples drained from the stack tables so far.
    stacks: Stacks,
    /// The names of the threads in labelled samples.
    names: ThreadNames,
    /// Distinct stacks moved out of the tables (gperftools' "evictions").
    evictions: u64,
    /// Maps lines of objects seen during the session, so that samples in an
    /// object unloaded before the write still have their mapping.
    maps_seen: Vec<String>,
    last_flush: Instant,
    /// The signal samples arrive on, and what to check it against.
    owner: SignalOwner,
    /// The file and its temporary name, NUL-terminated, for the crash
    /// path (which may not allocate).
    crash_names: Option<CrashNames>,
    /// Made by [`fork_child`] in a forked child: until its first sample,
    /// it writes nothing anywhere (see [`is_unsampled_child`]).
    forked: bool,
}

/// Room kept at the end of a session's path and crash names, so that a
/// forked child can append `_<pid>` in place: between `fork` and `exec`
/// nothing may allocate or free (the program's allocator may be locked
/// by a thread that does not exist in the child; Chromium's is).
const NAME_ROOM: usize = 64;

/// A session's path with [`NAME_ROOM`] to spare.
fn roomy_path(path: &str) -> String {
    let mut roomy = String::with_capacity(path.len() + NAME_ROOM);
    roomy.push_str(path);
    roomy
}

/// Appends `_<pid>` to `path` in place when its capacity allows (no
/// allocation); else (a child of a child of ... beyond [`NAME_ROOM`])
/// only when `may_allocate`. Returns whether it did.
fn append_pid(path: &mut String, pid: u32, may_allocate: bool) -> bool {
    use std::fmt::Write;
    if !may_allocate && path.capacity() - path.len() < 11 {
        return false;
    }
    write!(path, "_{pid}").is_ok()
}

/// The profile's path and its temporary name, NUL-terminated, for the
/// crash path's raw `open` and `rename`; each with [`NAME_ROOM`] to spare.
struct CrashNames {
    path: Vec<u8>,
    temporary: Vec<u8>,
}

impl CrashNames {
    fn new(path: &str) -> Option<CrashNames> {
        let mut names = CrashNames {
            path: Vec::with_capacity(path.len() + NAME_ROOM),
            temporary: Vec::with_capacity(path.len() + 2 * NAME_ROOM),
        };
        names.set(path).then_some(names)
    }

    /// Rewrites both names for `path` in place; false (and the names are
    /// not to be used) when `path` holds a NUL or the room is short.
    /// Allocates nothing.
    fn set(&mut self, path: &str) -> bool {
        if path.as_bytes().contains(&0) {
            return false;
        }
        // `writer::temporary_name`: `<path>.<pid>.tmp`, a pid of at most
        // 10 digits; then the NUL.
        let temporary_len = path.len() + 1 + 10 + 4 + 1;
        if self.path.capacity() <= path.len() || self.temporary.capacity() < temporary_len {
            return false;
        }
        self.path.clear();
        self.path.extend_from_slice(path.as_bytes());
        self.path.push(0);
        self.temporary.clear();
        let written = writer::write_temporary_name(&mut self.temporary, path).is_ok();
        self.temporary.push(0);
        written
    }
}

/// Watches the sampling signal for a handler the program installs over
/// ours (checked at every sweep, flush and stop).
struct SignalOwner {
    signal: i32,
    /// Process CPU time and samples at the last check that found ours.
    checked_cpu_ns: u64,
    checked_samples: u64,
    /// Once taken: samples lost by then, and the CPU time at that moment
    /// (the session samples no more after it).
    taken: Option<(u64, u64)>,
    /// Taken through a `signalfd` (see [`signalfd`]), not a handler.
    taken_by_signalfd: bool,
}

/// The control side's state.
pub(crate) struct Control {
    session: Option<Session>,
    objects: Vec<LoadedObject>,
    loader_generation: (u64, u64),
    last_sweep: Option<Instant>,
    /// Base name and next index for the `CPUPROFILESIGNAL` switch.
    switch: Option<(String, u32)>,
    /// The HTTP endpoint's profile window, fed by every drain while open.
    window: Option<Window>,
}

/// Samples gathered for one HTTP profile request, alongside whatever
/// session runs (see [`window_begin`]).
struct Window {
    stacks: Stacks,
    settings: Settings,
    started: Instant,
    start_time_ns: u64,
    times: TimeKeeping,
}

/// The control lock. See the module doc for the lock order.
pub(crate) static CONTROL: Mutex<Control> = Mutex::new(Control {
    session: None,
    objects: Vec::new(),
    loader_generation: (0, 0),
    last_sweep: None,
    switch: None,
    window: None,
});

/// The pid of the process that runs the session (a vfork child differs).
static SESSION_PID: AtomicI32 = AtomicI32::new(0);

/// The pid of the process that started (or, after fork, continued) the
/// session.
pub(crate) fn session_pid() -> i32 {
    SESSION_PID.load(Ordering::Acquire)
}

/// Termination flush requests from signal handlers and their completions.
static TERMINATION_REQUESTS: AtomicU32 = AtomicU32::new(0);
static TERMINATION_DONE: AtomicU32 = AtomicU32::new(0);
/// Stop requests from `_exit` and their completions.
static EXIT_REQUESTS: AtomicU32 = AtomicU32::new(0);
static EXIT_DONE: AtomicU32 = AtomicU32::new(0);
/// The id of the last session started.
static SESSION_IDS: AtomicU64 = AtomicU64::new(0);
/// `CPUPROFILESIGNAL` switch presses not yet handled.
static SWITCH_PRESSES: AtomicU64 = AtomicU64::new(0);
static SWITCH_HANDLED: AtomicU64 = AtomicU64::new(0);
/// True while the running session is an internal one (see
/// [`Session::internal`]).
static INTERNAL_SESSION: AtomicBool = AtomicBool::new(false);
/// Samples of the current session, for `ProfilerGetCurrentState`.
static HANDLER_INSTALLED: AtomicBool = AtomicBool::new(false);
static ONCE_HOOKS: std::sync::Once = std::sync::Once::new();

fn process_cpu_ns() -> u64 {
    signal_path::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0)
}

/// Why a start failed.
#[derive(Debug)]
pub enum StartError {
    /// A session is already running.
    AlreadyRunning,
    /// The profile file cannot be created.
    File(String, io::Error),
    /// No clock could be armed.
    Trigger(io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(f, "a profiling session is already running"),
            StartError::File(path, e) => write!(f, "cannot create profile {path}: {e}"),
            StartError::Trigger(e) => write!(f, "cannot arm a profiling timer: {e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// Starts a session writing to `path`.
pub(crate) fn start(
    path: &str,
    settings: Settings,
    filter: Option<(usize, usize)>,
) -> Result<(), StartError> {
    let mut control = lock(&CONTROL);
    if control.session.as_ref().is_some_and(|s| !s.internal) {
        return Err(StartError::AlreadyRunning);
    }
    // Like libprofiler, a path that cannot be written fails the start, not
    // the end, and an earlier profile there is gone; unlike it, nothing is
    // created at the path itself until a complete profile is written there.
    if let Err(e) = writer::prepare(path) {
        return Err(StartError::File(path.to_string(), e));
    }
    // An HTTP window's internal session gives way: the window goes on,
    // fed by the program's own session from now on.
    end_internal_session(&mut control);
    start_locked(&mut control, Some(path), settings, filter)
}

/// Starts a session (internal when `path` is None). Caller holds
/// [`CONTROL`] and checked that no session runs.
fn start_locked(
    control: &mut Control,
    path: Option<&str>,
    settings: Settings,
    filter: Option<(usize, usize)>,
) -> Result<(), StartError> {
    let sampler = sampler();
    threads::find_own_code(loaded_as_libcpuprof());
    install_once_hooks();
    refresh_modules(control, sampler, true);
    let mut settings = settings;
    if settings.flush_seconds == 0 && path.is_some() && is_go_program() {
        // The Go runtime leaves by the exit_group system call, never by
        // libc's exit: the profile is what the last periodic write holds.
        settings.flush_seconds = 1;
    }
    settings.signal = choose_signal(settings.signal);
    crate::sigmask::hand_waits(settings.hand_waits);
    install_profiling_handler(settings.signal);
    timers::reset_descriptor_counts();
    threads::reset_blocking_fallbacks();
    if needs_control_thread_now(&settings, control) {
        ensure_control_thread(sampler);
    }
    sampler.reset_stats();
    sampler
        .filter_arg
        .store(filter.map_or(0, |f| f.1), Ordering::Relaxed);
    sampler
        .filter
        .store(filter.map_or(0, |f| f.0), Ordering::Release);

    let period_ns = settings.period_ns();
    let me = gettid();
    // SAFETY: getpid is always safe.
    SESSION_PID.store(unsafe { libc::getpid() }, Ordering::Release);
    // Running before arming: the first signals must not be ignored.
    sampler.running.store(true, Ordering::Release);
    // Samples carry their thread where the file has room for it.
    let labelled = settings.format == ProfileFormat::Pprof;
    sampler.label_threads.store(labelled, Ordering::Relaxed);
    // And their time (gperftools' format has no room for it).
    let time_resolution = if labelled {
        settings.time_resolution_ns
    } else {
        0
    };
    // The start, read before any timer is armed: every sample's time is
    // after it, and the duration counts from the same moment.
    let (start_time_ns, start_monotonic_ns) = epoch_and_monotonic_ns();
    let started = Instant::now();
    sampler
        .time_bucket_ns
        .store(time_resolution.max(1), Ordering::Relaxed);
    sampler.time_epoch_offset.store(
        start_time_ns.wrapping_sub(start_monotonic_ns),
        Ordering::Relaxed,
    );
    sampler
        .record_times
        .store(time_resolution != 0, Ordering::Release);
    sampler.wall_period_ns.store(
        if settings.realtime { period_ns } else { 0 },
        Ordering::Relaxed,
    );
    crate::thread_names::clear_exits();
    let armed = if settings.realtime {
        timers::arm_thread(Trigger::WallClock, me, period_ns, settings.signal)
            .map(|h| (Trigger::WallClock, h))
    } else {
        timers::choose_clock(settings.clock, me, period_ns, settings.signal)
    };
    let (clock, handle) = match armed {
        Ok(armed) => armed,
        Err(e) => {
            sampler.running.store(false, Ordering::Release);
            return Err(StartError::Trigger(e));
        }
    };
    if clock == Trigger::ProcessItimer && settings.signal != libc::SIGPROF {
        install_profiling_handler(libc::SIGPROF);
    }
    if clock.per_thread() {
        crate::sigmask::protect(settings.signal);
    }
    sampler.weight_overruns.store(
        matches!(clock, Trigger::ThreadCpuTimer | Trigger::WallClock),
        Ordering::Relaxed,
    );
    // User-time-only task-clock does not count what the CPU clock counts
    // in the kernel: there each signal stays one sample.
    let cpu_clock_period = match clock {
        Trigger::PerfTaskClock {
            exclude_kernel: false,
        } => period_ns,
        _ => 0,
    };
    sampler
        .cpu_clock_period_ns
        .store(cpu_clock_period, Ordering::Relaxed);
    {
        let mut threads = lock(&THREADS);
        *threads = Some(Arming {
            clock,
            period_ns,
            signal: settings.signal,
        });
        if clock.per_thread() {
            if let Some(slot) = sampler.register_thread(me) {
                slot.armed(handle);
                threads::mark_wall_start(slot, clock, me);
            }
            let arming = Arming {
                clock,
                period_ns,
                signal: settings.signal,
            };
            for tid in threads::list_threads() {
                threads::arm_locked(sampler, arming, tid);
            }
        }
    }
    if clock == Trigger::WallClock {
        if let Err(e) = crate::wall_driver::start(period_ns, settings.signal) {
            diag(&format!("realtime mode: {e}"));
        }
    }
    let maps = modules::read_maps();
    let owner = SignalOwner {
        signal: if clock == Trigger::ProcessItimer {
            libc::SIGPROF
        } else {
            settings.signal
        },
        checked_cpu_ns: process_cpu_ns(),
        checked_samples: 0,
        taken: None,
        taken_by_signalfd: false,
    };
    control.session = Some(Session {
        owner,
        crash_names: path.and_then(CrashNames::new),
        forked: false,
        id: SESSION_IDS.fetch_add(1, Ordering::Relaxed) + 1,
        execs_in_progress: 0,
        path: roomy_path(path.unwrap_or_default()),
        internal: path.is_none(),
        settings,
        clock,
        // SAFETY: time(NULL) is always safe.
        start_time: unsafe { libc::time(std::ptr::null_mut()) },
        start_time_ns,
        start_monotonic_ns,
        times: TimeKeeping::new(time_resolution),
        started,
        start_process_cpu_ns: process_cpu_ns(),
        stacks: Stacks::default(),
        names: ThreadNames::default(),
        evictions: 0,
        maps_seen: maps.lines().map(str::to_string).collect(),
        last_flush: Instant::now(),
    });
    control.last_sweep = Some(Instant::now());
    INTERNAL_SESSION.store(path.is_none(), Ordering::Release);
    // The control thread sleeps without a timeout while no session runs.
    sampler.wake_control();
    Ok(())
}

/// Stops an internal session, if that is what runs, moving its last
/// samples into the window. Caller holds [`CONTROL`].
fn end_internal_session(control: &mut Control) {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    if !control.session.as_ref().is_some_and(|s| s.internal) {
        return;
    }
    if let Some(mut session) = control.session.take() {
        disarm_all(sampler, &session);
        drain_twice(sampler, &mut session, &mut control.window);
        INTERNAL_SESSION.store(false, Ordering::Release);
    }
}

/// The realtime clock (ns since the epoch) and the monotonic clock, read
/// together.
fn epoch_and_monotonic_ns() -> (u64, u64) {
    let monotonic = signal_path::clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    (epoch, monotonic)
}

/// Moves the samples of the active table into the session, and into the
/// window when one is open.
fn drain_into(sampler: &Sampler, session: &mut Session, window: &mut Option<Window>) {
    // The records drained were merged at the handler's resolution: ours
    // becomes at least as coarse.
    let bucket = sampler.time_bucket_ns.load(Ordering::Relaxed);
    session.times.follow(&mut session.stacks, bucket);
    if let Some(window) = window.as_mut() {
        window.times.follow(&mut window.stacks, bucket);
    }
    let names = &mut session.names;
    let stacks = &mut session.stacks;
    let session_times = &mut session.times;
    let (epoch, monotonic) = (session.start_time_ns, session.start_monotonic_ns);
    let mut epoch_times: Vec<(u64, u64)> = Vec::new();
    names.begin_drain();
    session.evictions +=
        sampler.drain(&mut |mut stack, tag, count, times| {
            threads::drop_own_frames(&mut stack);
            if stack.is_empty() {
                return;
            }
            // Monotonic times to the epoch, on the clock of `time_nanos`.
            epoch_times.clear();
            epoch_times.extend(times.iter().map(|&(time, weight)| {
                (epoch.saturating_add(time.saturating_sub(monotonic)), weight)
            }));
            let labels = names.label(tag);
            let stack: std::sync::Arc<[u64]> = stack.into();
            if let Some(window) = window.as_mut() {
                window
                    .times
                    .add(&mut window.stacks, &stack, labels, count, &epoch_times);
            }
            session_times.add(stacks, &stack, labels, count, &epoch_times);
        });
    session.times.bound(&mut session.stacks);
    if let Some(window) = window.as_mut() {
        window.times.bound(&mut window.stacks);
    }
    // And the handler merges at ours once coarsened.
    if session.times.resolution_ns > bucket {
        sampler
            .time_bucket_ns
            .fetch_max(session.times.resolution_ns, Ordering::Relaxed);
    }
}

/// Both tables: the active one and the one a handler may have filled
/// after the last drain.
fn drain_twice(sampler: &Sampler, session: &mut Session, window: &mut Option<Window>) {
    drain_into(sampler, session, window);
    drain_into(sampler, session, window);
}

/// Opens an HTTP profile window. When the program runs a session of its
/// own (`CPUPROFILE`, `ProfilerStart`, …) the window takes its samples
/// alongside, at its rate, without disturbing it; otherwise an internal
/// session samples at `settings` until [`window_end`]. Returns the rate in
/// use.
fn window_begin(settings: Settings) -> Result<u32, WindowError> {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    if control.window.is_some() {
        return Err(WindowError::Busy);
    }
    let settings = match control.session.as_mut() {
        Some(session) => {
            // Samples taken before the window are the session's only.
            if let Some(sampler) = existing_sampler() {
                drain_into(sampler, session, &mut None);
            }
            session.settings.clone()
        }
        None => {
            start_locked(control, None, settings.clone(), None)
                .map_err(|e| WindowError::Start(e.to_string()))?;
            settings
        }
    };
    let frequency = settings.frequency;
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    // The window's samples keep times as the session's do.
    let times = control
        .session
        .as_ref()
        .map_or(0, |s| s.times.resolution_ns);
    control.window = Some(Window {
        stacks: Stacks::default(),
        settings,
        started: Instant::now(),
        start_time_ns: since_epoch.as_nanos() as u64,
        times: TimeKeeping::new(times),
    });
    Ok(frequency)
}

/// Closes the window: its samples, and the end of the internal session
/// that fed it, if any.
fn window_end() -> Option<WindowProfile> {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    control.window.as_ref()?;
    if let (Some(sampler), Some(session)) = (existing_sampler(), control.session.as_mut()) {
        if session.execs_in_progress == 0 {
            drain_twice(sampler, session, &mut control.window);
        }
    }
    let (names, wall) = control.session.as_ref().map_or((Vec::new(), false), |s| {
        (s.names.names().to_vec(), s.settings.realtime)
    });
    end_internal_session(control);
    let window = control.window.take()?;
    Some(WindowProfile {
        names,
        wall,
        period_ns: window.settings.period_ns(),
        duration_ns: window.started.elapsed().as_nanos() as u64,
        start_time_ns: window.start_time_ns,
        stacks: window.stacks,
        times: window.times,
    })
}

/// Disarms every clock of the session; the handler stays installed.
fn disarm_all(sampler: &Sampler, session: &Session) {
    sampler.running.store(false, Ordering::Release);
    crate::sigmask::unprotect();
    let mut threads = lock(&THREADS);
    *threads = None;
    for (_, slot) in sampler.registered_threads() {
        let handle = slot.timer.swap(u64::MAX, Ordering::AcqRel);
        timers::disarm_thread(session.clock, handle);
    }
    match session.clock {
        Trigger::ProcessItimer => timers::disarm_process_itimer(),
        Trigger::WallClock => crate::wall_driver::stop(),
        _ => {}
    }
}

/// What a stopped session did.
#[derive(Clone, Debug)]
pub struct SessionSummary {
    /// The profile written.
    pub path: String,
    /// Profiling signals handled.
    pub interrupts: u64,
    /// Samples recorded (with POSIX timers, including merged expirations).
    pub samples: u64,
    /// Samples lost (table full or every unwinder busy).
    pub dropped: u64,
    /// Stacks cut short (depth limit, unwinding stopped, no stack bound).
    pub truncated: u64,
    /// Distinct stacks moved out of the signal-side tables.
    pub evictions: u64,
    /// Size of the profile file.
    pub bytes: usize,
    /// The clock that triggered samples.
    pub clock: &'static str,
    /// Samples per second asked for.
    pub frequency: u32,
}

/// Stops the running session and writes its profile. Returns None when
/// nothing was running.
pub(crate) fn stop() -> Option<io::Result<SessionSummary>> {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    let sampler = existing_sampler()?;
    if control.session.as_ref()?.internal {
        return None;
    }
    let mut session = control.session.take()?;
    check_signal_owner(sampler, &mut session);
    disarm_all(sampler, &session);
    drain_twice(sampler, &mut session, &mut control.window);
    let written = write_profile(sampler, &mut session);
    if let Some(window) = control.window.as_ref() {
        // An HTTP window outlives the program's session: sample on for it.
        let settings = window.settings.clone();
        if let Err(e) = start_locked(control, None, settings, None) {
            diag(&format!("cannot go on sampling for the HTTP profile: {e}"));
        }
    }
    let s = &sampler.stats;
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let summary = SessionSummary {
        path: session.path.clone(),
        interrupts: load(&s.interrupts),
        samples: load(&s.samples),
        dropped: load(&s.dropped_full) + load(&s.dropped_busy),
        truncated: load(&s.truncated_depth) + load(&s.truncated_unwind) + load(&s.leaf_only),
        evictions: session.evictions,
        bytes: *written.as_ref().unwrap_or(&0),
        clock: session.clock.name(),
        frequency: session.settings.frequency,
    };
    write_stderr(&format!(
        "PROFILE: interrupts/evictions/bytes = {}/{}/{}\n",
        summary.interrupts, summary.evictions, summary.bytes
    ));
    write_stderr(&format!(
        "PROFILE: samples/dropped/truncated = {}/{}/{} (table full {}, unwinder busy {}; depth limit {}, unwinding stopped {}, leaf only {}) at {} Hz{} with {}{}{}{}\n",
        summary.samples,
        summary.dropped,
        summary.truncated,
        load(&s.dropped_full),
        load(&s.dropped_busy),
        load(&s.truncated_depth),
        load(&s.truncated_unwind),
        load(&s.leaf_only),
        summary.frequency,
        achieved_rate(&session, summary.samples + summary.dropped),
        summary.clock,
        match load(&s.skipped) {
            0 => String::new(),
            n => format!(", {n} signals ahead of the thread's CPU clock skipped"),
        },
        host_losses(&session),
        time_note(&session.times),
    ));
    sampler.filter.store(0, Ordering::Release);
    Some(written.map(|_| summary))
}

/// The stop line's note on sample times: only when some were lost or the
/// resolution was coarsened (see [`crate::pprof_proto::time_comments`]).
fn time_note(times: &TimeKeeping) -> String {
    let mut note = String::new();
    if times.resolution_ns != times.asked_ns {
        note.push_str(&format!(
            "; times coarsened to {} to bound the profile",
            crate::pprof_proto::duration_text(times.resolution_ns)
        ));
    }
    if times.untimed > 0 {
        note.push_str(&format!(
            "; {} samples without a time (time records full)",
            times.untimed
        ));
    }
    note
}

/// Writes the profile of the running session with everything sampled so
/// far. Returns None when nothing is running.
pub(crate) fn flush() -> Option<io::Result<usize>> {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    let sampler = existing_sampler()?;
    let session = control.session.as_mut().filter(|s| !s.internal)?;
    if session.execs_in_progress > 0 {
        // Written just before the exec, which may end this process (and a
        // write under way) at any moment.
        return Some(Ok(0));
    }
    check_signal_owner(sampler, session);
    drain_into(sampler, session, &mut control.window);
    let written = write_profile(sampler, session);
    session.last_flush = Instant::now();
    Some(written)
}

/// Before an exec replaces the process image: disarms every clock and
/// writes the profile, keeping the session so that a failed exec can
/// resume it ([`resume_after_exec`]; the file written at the end then
/// replaces this one). Returns the id of the suspended session, None when
/// nothing runs. Not for a `vfork` child: it would disarm the parent's
/// clocks (the caller checks [`session_pid`]).
pub(crate) fn suspend_for_exec() -> Option<u64> {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    let sampler = existing_sampler()?;
    let session = control.session.as_mut()?;
    if is_unsampled_child(sampler, session) {
        // A forked child about to exec (a launcher's, most often): no
        // sample to keep, and nothing may allocate here (see
        // [`NAME_ROOM`]). Disarmed for good: should the exec fail, the
        // child goes on unprofiled (it usually `_exit`s).
        disarm_all(sampler, session);
        return None;
    }
    session.execs_in_progress += 1;
    if session.execs_in_progress == 1 {
        // Also needed beyond the samples: setitimer timers survive exec,
        // and a profiling signal pending across it would kill the new
        // image, where our handler is gone.
        disarm_all(sampler, session);
        drain_twice(sampler, session, &mut control.window);
        let _ = write_profile(sampler, session);
    }
    Some(session.id)
}

/// After an exec failed: profiling goes on where [`suspend_for_exec`] left
/// it, unless the session was stopped meanwhile or another exec is still
/// under way.
pub(crate) fn resume_after_exec(id: u64) {
    let mut control = lock(&CONTROL);
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let Some(session) = control.session.as_mut().filter(|s| s.id == id) else {
        return;
    };
    session.execs_in_progress = session.execs_in_progress.saturating_sub(1);
    if session.execs_in_progress > 0 || session.owner.taken.is_some() {
        return;
    }
    if let Err(e) = rearm_all(sampler, session) {
        sampler.running.store(false, Ordering::Release);
        diag(&format!("cannot resume profiling after a failed exec: {e}"));
    }
}

/// Arms the clocks of a disarmed session again: every thread's, or the
/// process-wide one.
fn rearm_all(sampler: &Sampler, session: &mut Session) -> io::Result<()> {
    let period_ns = session.settings.period_ns();
    let signal = session.settings.signal;
    sampler.running.store(true, Ordering::Release);
    match session.clock {
        Trigger::ProcessItimer => timers::arm_process_itimer(period_ns, 0)?,
        Trigger::WallClock => crate::wall_driver::start(period_ns, signal)?,
        _ => {}
    }
    let arming = Arming {
        clock: session.clock,
        period_ns,
        signal,
    };
    let mut threads = lock(&THREADS);
    *threads = Some(arming);
    if session.clock.per_thread() {
        if session.owner.taken.is_none() {
            crate::sigmask::protect(signal);
        }
        for tid in threads::list_threads() {
            threads::arm_locked(sampler, arming, tid);
        }
    }
    Ok(())
}

/// Before `_exit` (or `_Exit`): has the control thread stop the session
/// and write the profile, as `exit` would, waiting for it at most 5 s.
/// Async-signal-safe, like `_exit` itself: atomics, `getpid`, `gettid`, a
/// write to the control thread's eventfd and futex waits. Does nothing
/// where the session is not this process's own (a `vfork` child shares
/// its parent's memory and must leave it alone) or where no control
/// thread can do the work.
pub(crate) fn stop_before_exit() {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    if !sampler.running.load(Ordering::Acquire) {
        return;
    }
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } != session_pid() {
        return;
    }
    let control = control_tid();
    if control == 0 {
        // No thread of ours in this process (see `ensure_control_thread`):
        // `_exit` may be called from a signal handler that interrupted
        // `malloc` or our own code, so the profile is written as on a
        // crash, without allocation or a blocking lock.
        write_without_control_thread();
        return;
    }
    if control < 0 || control == gettid() {
        return;
    }
    ask_control_thread(sampler, &EXIT_REQUESTS, &EXIT_DONE);
}

/// In a process with no control thread, at `_exit` or a termination
/// signal: writes the profile from the calling thread with the crash
/// path's async-signal-safe writer (gperftools' format, whatever the
/// session's format), and stops sampling. The only other holder of
/// [`CONTROL`] can be the calling thread itself (interrupted), so one
/// `try_lock` decides.
fn write_without_control_thread() {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } != session_pid() {
        return;
    }
    let guard = match CONTROL.try_lock() {
        Ok(held) => held,
        Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    if let Some(session) = guard
        .session
        .as_ref()
        .filter(|s| !s.internal && s.execs_in_progress == 0)
    {
        sampler.running.store(false, Ordering::Release);
        write_crash_file(sampler, session);
    }
}

/// Files a request with the control thread (`requests`) and waits until
/// it has served it (`done`), at most 5 s. Async-signal-safe.
fn ask_control_thread(sampler: &Sampler, requests: &AtomicU32, done: &AtomicU32) {
    let ticket = requests.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
    sampler.wake_control();
    for _ in 0..5000 {
        if done.load(Ordering::Acquire).wrapping_sub(ticket) as i32 >= 0 {
            break;
        }
        futex_wait(done, 1);
    }
}

/// Serves the requests filed with [`ask_control_thread`] since the last
/// call by running `work` once.
fn serve_requests(requests: &AtomicU32, done: &AtomicU32, work: fn()) {
    let requested = requests.load(Ordering::Acquire);
    if requested != done.load(Ordering::Acquire) {
        work();
        done.store(requested, Ordering::Release);
        futex_wake_all(done);
    }
}

/// True in a forked child that has not been sampled yet: it writes no
/// file (at exec, exit, `_exit` or a crash), and allocates nothing to
/// find that out. A child that execs or exits within its first sampling
/// delay (`timers::FORKED_CHILD_DELAY_NS`: a launcher's child, a short
/// helper) leaves no empty `path_<pid>` behind.
fn is_unsampled_child(sampler: &Sampler, session: &Session) -> bool {
    // The counters start at 0 in the child; no signal handled, no sample.
    session.forked && sampler.stats.interrupts.load(Ordering::Relaxed) == 0
}

/// Writes the session's profile (to a temporary name, then renamed);
/// returns its size in bytes. Failures are also reported on stderr.
fn write_profile(sampler: &Sampler, session: &mut Session) -> io::Result<usize> {
    if session.internal || is_unsampled_child(sampler, session) {
        return Ok(0);
    }
    let maps = modules::read_profile_maps();
    let bytes = match session.settings.format {
        ProfileFormat::Gperftools => {
            let period_us = header_period_us(sampler, session);
            writer::encode(period_us, &session.stacks, &maps, &session.maps_seen)
        }
        ProfileFormat::Pprof => {
            let maps = writer::maps_with_unloaded(&maps, &session.maps_seen);
            let mut symbolizer = crate::symbols::Symbolizer::new(&maps);
            let main = std::fs::read_link("/proc/self/exe")
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let samples = crate::pprof_proto::WindowSamples {
                stacks: &session.stacks,
                names: session.names.names(),
                wall: session.settings.realtime,
                period_ns: if session.clock == Trigger::ProcessItimer {
                    header_period_us(sampler, session) * 1000
                } else {
                    session.settings.period_ns()
                },
                start_time_ns: session.start_time_ns,
                duration_ns: session.started.elapsed().as_nanos() as u64,
                times: session.times,
                process: crate::pprof_proto::process_identity(),
            };
            crate::pprof_proto::gzip_stored(&crate::pprof_proto::encode(
                &samples,
                &mut symbolizer,
                &main,
            ))
        }
    };
    match writer::write_atomically(&session.path, &bytes) {
        Ok(()) => Ok(bytes.len()),
        Err(e) => {
            diag(&format!("cannot write profile {}: {e}", session.path));
            Err(e)
        }
    }
}

/// In a crash signal handler ([`crate::crash`]): writes the running
/// session's profile in gperftools' format, from the samples drained so
/// far and those still in the stack tables, read in place.
/// Async-signal-safe: a bounded `try_lock` of [`CONTROL`] (never a
/// blocking lock), no allocation, `open`/`read`/`write`/`rename`/`close`.
fn write_after_crash() {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } != session_pid() {
        // A vfork child shares its parent's memory: leave it alone.
        return;
    }
    let was_running = sampler.running.swap(false, Ordering::AcqRel);
    let me = gettid();
    let mut guard = None;
    for _ in 0..2000 {
        match CONTROL.try_lock() {
            Ok(held) => guard = Some(held),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => guard = Some(poisoned.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                if me == control_tid() {
                    // The control thread crashed holding it.
                    break;
                }
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                // SAFETY: nanosleep is async-signal-safe.
                unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
                continue;
            }
        }
        break;
    }
    if let Some(control) = guard.as_ref() {
        if let Some(session) = control
            .session
            .as_ref()
            .filter(|s| !s.internal && s.execs_in_progress == 0)
        {
            write_crash_file(sampler, session);
        }
    }
    drop(guard);
    // The program's handler may yet recover (see crash::on_crash_signal).
    sampler.running.store(was_running, Ordering::Release);
}

fn write_crash_file(sampler: &Sampler, session: &Session) {
    if is_unsampled_child(sampler, session) {
        return;
    }
    let Some(CrashNames { path, temporary }) = session.crash_names.as_ref() else {
        return;
    };
    let Some(mut file) = crate::crash::RawFile::create(temporary) else {
        return;
    };
    for word in [0, 3, 0, header_period_us(sampler, session), 0] {
        file.word(word);
    }
    for (key, &count) in &session.stacks {
        if count > 0 && !key.stack.is_empty() {
            file.word(count);
            file.word(key.stack.len() as u64);
            for &pc in key.stack.iter() {
                file.word(pc);
            }
        }
    }
    // Not drained yet: read in place (no drain runs, we hold CONTROL).
    for table in &sampler.tables {
        for entry in table.entries.iter() {
            if entry.hash.load(Ordering::Acquire) < 2 {
                continue;
            }
            let count = entry.count.load(Ordering::Relaxed);
            let len = entry.len.load(Ordering::Relaxed) as usize;
            let offset = entry.offset.load(Ordering::Relaxed) as usize;
            let Some(pcs) = offset
                .checked_add(len)
                .and_then(|end| table.pcs.get(offset..end))
            else {
                continue;
            };
            let kept = pcs
                .iter()
                .filter(|pc| !threads::is_own_frame(pc.load(Ordering::Relaxed)))
                .count();
            if count > 0 && kept > 0 {
                file.word(count);
                file.word(kept as u64);
                for pc in pcs {
                    let pc = pc.load(Ordering::Relaxed);
                    if !threads::is_own_frame(pc) {
                        file.word(pc);
                    }
                }
            }
        }
    }
    for word in [0, 1, 0] {
        file.word(word);
    }
    file.copy_file(b"/proc/self/maps\0");
    // SAFETY: NUL-terminated names; rename and unlink are async-signal-safe.
    unsafe {
        if file.finish() {
            libc::rename(temporary.as_ptr().cast(), path.as_ptr().cast());
        } else {
            libc::unlink(temporary.as_ptr().cast());
        }
    }
}

/// The period to write in the header: the one asked for, except with the
/// process-wide itimer, which fires on kernel ticks: there it is measured
/// (CPU time per interrupt) when that is clearly longer.
fn header_period_us(sampler: &Sampler, session: &Session) -> u64 {
    let asked = (session.settings.period_ns() + 500) / 1000;
    if session.clock != Trigger::ProcessItimer {
        return asked.max(1);
    }
    let interrupts = sampler.stats.interrupts.load(Ordering::Relaxed);
    let cpu_us = process_cpu_ns().saturating_sub(session.start_process_cpu_ns) / 1000;
    if interrupts >= 20 {
        let measured = cpu_us / interrupts;
        if measured * 10 > asked * 11 {
            return measured.max(1);
        }
    }
    asked.max(1)
}

/// State for `ProfilerGetCurrentState`: (enabled, start time, path, samples).
pub(crate) fn current_state() -> (bool, libc::time_t, String, u64) {
    let control = lock(&CONTROL);
    match (
        control.session.as_ref().filter(|s| !s.internal),
        existing_sampler(),
    ) {
        (Some(session), Some(sampler)) => (
            true,
            session.start_time,
            session.path.clone(),
            sampler.stats.samples.load(Ordering::Relaxed),
        ),
        _ => (false, 0, String::new(), 0),
    }
}

/// True while a session runs.
pub(crate) fn is_running() -> bool {
    existing_sampler().is_some_and(|s| s.running.load(Ordering::Acquire))
        && !INTERNAL_SESSION.load(Ordering::Acquire)
}

/// Rebuilds the module snapshot if the loader's objects changed (or
/// always, with `force`). Caller holds [`CONTROL`].
fn refresh_modules(control: &mut Control, sampler: &Sampler, force: bool) {
    let generation = modules::loader_generation();
    if !force && generation == control.loader_generation && sampler.current_modules().is_some() {
        sampler.modules_stale.store(false, Ordering::Relaxed);
        return;
    }
    control.loader_generation = generation;
    let objects = modules::loaded_objects(&control.objects);
    let maps = modules::read_maps();
    sampler.install_modules(modules::build_snapshot(&objects, &maps));
    control.objects = objects;
    if let Some(session) = control.session.as_mut() {
        for line in maps.lines() {
            if !session.maps_seen.iter().any(|seen| seen == line) {
                session.maps_seen.push(line.to_string());
            }
        }
    }
}

/// The sampling signal: `requested` when the user chose one; else the
/// real-time signal our handler is already on (an earlier session), else
/// the highest real-time signal with no handler, not ignored; `SIGPROF` if
/// every one is taken.
fn choose_signal(requested: i32) -> i32 {
    if requested != 0 {
        return requested;
    }
    let ours = signal_path::on_profiling_signal as *const () as usize;
    let handler_of = crate::crash::current_handler;
    let range = libc::SIGRTMIN()..=libc::SIGRTMAX();
    if let Some(signal) = range.clone().rev().find(|&s| handler_of(s) == ours) {
        return signal;
    }
    range
        .rev()
        .find(|&s| handler_of(s) == libc::SIG_DFL)
        .unwrap_or(libc::SIGPROF)
}

/// At a sweep, flush or stop: when the program has put a handler of its
/// own on the sampling signal, stop arming it (we never call the
/// program's handler), say so once, and count the samples lost.
fn check_signal_owner(sampler: &Sampler, session: &mut Session) {
    if session.owner.taken.is_some() || session.execs_in_progress > 0 {
        return;
    }
    let signal = session.owner.signal;
    let current = crate::crash::current_handler(signal);
    let cpu_ns = process_cpu_ns();
    let samples = sampler.stats.samples.load(Ordering::Relaxed);
    if current == signal_path::on_profiling_signal as *const () as usize {
        session.owner.checked_cpu_ns = cpu_ns;
        session.owner.checked_samples = samples;
        return;
    }
    let frequency = u64::from(session.settings.frequency);
    let expected = cpu_ns.saturating_sub(session.owner.checked_cpu_ns) * frequency / 1_000_000_000;
    let lost = expected.saturating_sub(samples.saturating_sub(session.owner.checked_samples));
    session.owner.taken = Some((lost, cpu_ns));
    disarm_all(sampler, session);
    // disarm_all stopped the handler; the samples taken so far stay.
    diag(&format!(
        "the program installed its own handler for signal {signal}, the profiler's sampling signal: sampling stopped, {lost} samples lost since the last check (choose another with CPUPROFILE_TIMER_SIGNAL)"
    ));
}

/// The program creates a `signalfd` for the session's sampling signal
/// (`src/sigmask.rs`): the session stops sampling on it, as when the
/// program takes it with a handler, and says so once.
fn program_reads_signal(signal: i32) {
    let mut control = lock(&CONTROL);
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let Some(session) = control.session.as_mut() else {
        return;
    };
    if session.owner.signal != signal || session.owner.taken.is_some() {
        return;
    }
    session.owner.taken = Some((0, process_cpu_ns()));
    session.owner.taken_by_signalfd = true;
    disarm_all(sampler, session);
    diag(&format!(
        "the program reads signal {signal}, the profiler's sampling signal, through a signalfd: sampling stopped, the signal is the program's (choose another with CPUPROFILE_TIMER_SIGNAL)"
    ));
}

/// `signalfd(2)`: the program reads signals through a descriptor. On a
/// set holding the session's sampling signal, whose samples it would read
/// too, the session stops sampling on it and hands it to the program
/// ([`program_reads_signal`], `sigmask::hand_to_program`) before libc's
/// `signalfd` runs.
///
/// # Safety
/// As libc's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signalfd(fd: i32, mask: *const libc::sigset_t, flags: i32) -> i32 {
    if let Some(signal) = crate::sigmask::waits_for_ours(mask) {
        if crate::sigmask::protected() == signal {
            program_reads_signal(signal);
        }
        crate::sigmask::hand_to_program(signal);
    }
    // SAFETY: forwarded under the caller's contract.
    unsafe { crate::sigmask::real_signalfd(fd, mask, flags) }
}

/// The stop line's `(achieved N Hz)` clause: samples per CPU-second of
/// the process (per wall second in realtime mode) when that is more than
/// 20% off the rate asked, after at least 0.2 s — the `setitimer`
/// fallback fires on kernel ticks (191 samples for 1 CPU-s at 1000 Hz
/// here); empty otherwise.
fn achieved_rate(session: &Session, samples: u64) -> String {
    let seconds = if session.settings.realtime {
        session.started.elapsed().as_secs_f64()
    } else {
        process_cpu_ns().saturating_sub(session.start_process_cpu_ns) as f64 / 1e9
    };
    if seconds < 0.2 || session.settings.realtime && session.clock != Trigger::WallClock {
        return String::new();
    }
    let achieved = samples as f64 / seconds;
    let asked = f64::from(session.settings.frequency);
    if (achieved - asked).abs() <= 0.2 * asked {
        return String::new();
    }
    format!(" (achieved {achieved:.0} Hz)")
}

/// The stop line's account of what the host took: the sampling signal,
/// perf descriptors it closed, threads beyond the descriptor budget.
fn host_losses(session: &Session) -> String {
    let mut text = String::new();
    if let Some((lost, cpu_ns)) = session.owner.taken {
        let after = process_cpu_ns().saturating_sub(cpu_ns) * u64::from(session.settings.frequency)
            / 1_000_000_000;
        text += &if session.owner.taken_by_signalfd {
            format!(
                ", {} samples lost to the program's signalfd on signal {}",
                lost + after,
                session.owner.signal
            )
        } else {
            format!(
                ", {} samples lost to the program's handler on signal {}",
                lost + after,
                session.owner.signal
            )
        };
    }
    let blocking = threads::blocking_fallbacks();
    if blocking > 0 {
        text += &format!(
            ", {blocking} threads blocking signal {} moved to POSIX timers",
            session.owner.signal
        );
    }
    let (closed, budget) = timers::descriptor_counts();
    if closed > 0 {
        text += &format!(
            ", {closed} perf event descriptors closed by the program (those threads went on with POSIX timers; samples between the close and the next check lost)"
        );
    }
    if budget > 0 {
        text += &format!(
            ", {budget} threads on POSIX timers (descriptor budget of {} perf events spent)",
            timers::perf_fd_budget()
        );
    }
    text
}

fn install_profiling_handler(signal: i32) {
    // SAFETY: installs a handler that follows the signal_path invariants.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = signal_path::on_profiling_signal as *const () as usize;
        // SA_ONSTACK: on a thread with an alternate signal stack (every
        // Go thread; the goroutine stacks are small) the kernel's signal
        // frame goes there; the handler then moves to a stack of its own.
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        // Every signal waits for the few microseconds of a sample, so a
        // program's handler never runs on the agent's handler stack.
        libc::sigfillset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        crate::sigmask::real_sigaction(signal, &action, &mut previous);
        if previous.sa_sigaction != signal_path::on_profiling_signal as *const () as usize {
            crate::sigmask::own(signal, &previous);
        }
    }
    HANDLER_INSTALLED.store(true, Ordering::Relaxed);
}

/// Hooks installed once per process: exit, fork, termination signals.
fn install_once_hooks() {
    ONCE_HOOKS.call_once(|| {
        extern "C" fn at_exit() {
            let _ = stop();
        }
        // SAFETY: registering plain extern "C" functions.
        unsafe {
            libc::atexit(at_exit);
            libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(fork_child));
        }
        for signal in crate::sigmask::TERMINATION_SIGNALS {
            install_termination_handler(signal);
        }
        crate::crash::install(write_after_crash);
    });
}

/// The actions in place before ours, indexed like [`crate::sigmask::TERMINATION_SIGNALS`].
struct PreviousActions(UnsafeCell<[Option<libc::sigaction>; 3]>);
// SAFETY: written once before our handler is installed, then only read.
unsafe impl Sync for PreviousActions {}
static PREVIOUS_ACTIONS: PreviousActions = PreviousActions(UnsafeCell::new([None, None, None]));

fn install_termination_handler(signal: i32) {
    let Some(index) = crate::sigmask::TERMINATION_SIGNALS
        .iter()
        .position(|&s| s == signal)
    else {
        return;
    };
    // SAFETY: sigaction with valid pointers; PREVIOUS_ACTIONS is written
    // before the handler that reads it is installed.
    unsafe {
        let mut previous: libc::sigaction = std::mem::zeroed();
        crate::sigmask::real_sigaction(signal, std::ptr::null(), &mut previous);
        if previous.sa_sigaction == libc::SIG_IGN {
            // Ignored (e.g. SIGHUP under nohup): it ends nothing.
            return;
        }
        (*PREVIOUS_ACTIONS.0.get())[index] = Some(previous);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_termination_signal as *const () as usize;
        crate::sigmask::termination_handler_is(action.sa_sigaction);
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        crate::sigmask::real_sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// SIGTERM/SIGINT/SIGHUP: have the control thread write the profile
/// (waiting at most 5 s), then run the program's own handler, or the
/// default action.
extern "C" fn on_termination_signal(
    signal: i32,
    info: *mut libc::siginfo_t,
    ucontext: *mut c_void,
) {
    // SAFETY: the calling thread's errno.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    if let Some(sampler) = existing_sampler() {
        if sampler.running.load(Ordering::Acquire) {
            match control_tid() {
                0 => {
                    // No thread of ours: written here, async-signal-safe.
                    write_without_control_thread();
                    sampler.running.store(true, Ordering::Release);
                }
                _ => ask_control_thread(sampler, &TERMINATION_REQUESTS, &TERMINATION_DONE),
            }
        }
    }
    let index = crate::sigmask::TERMINATION_SIGNALS
        .iter()
        .position(|&s| s == signal);
    // SAFETY: read-only after installation.
    let mut previous = index.and_then(|i| unsafe { (*PREVIOUS_ACTIONS.0.get())[i] });
    if crate::sigmask::program_set_default(signal) {
        // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
        previous = Some(unsafe { std::mem::zeroed() });
    }
    // SAFETY: restores the previous action or runs it, as the kernel would.
    unsafe {
        match previous {
            Some(previous) if previous.sa_sigaction == libc::SIG_DFL => {
                // Default action: reinstall it and re-raise; the signal is
                // blocked until we return, then it ends the process.
                // libc's own: ours would keep our handler (see
                // program_sets_termination_action).
                crate::sigmask::real_sigaction(signal, &previous, std::ptr::null_mut());
                libc::raise(signal);
            }
            Some(previous) if previous.sa_sigaction != libc::SIG_IGN => {
                crate::crash::call_handler(signal, &previous, info, ucontext);
            }
            _ => {}
        }
        *errno = saved;
    }
}

/// Waits on `word` for about `ms` milliseconds or a wake-up.
fn futex_wait(word: &AtomicU32, ms: u64) {
    let expected = word.load(Ordering::Acquire);
    let timeout = libc::timespec {
        tv_sec: 0,
        tv_nsec: (ms * 1_000_000) as libc::c_long,
    };
    // SAFETY: a futex wait on a live atomic with a timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &timeout as *const libc::timespec,
        )
    };
}

fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: a futex wake on a live atomic.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        )
    };
}

/// The `CPUPROFILESIGNAL` handler: counts the press for the control
/// thread (file I/O cannot happen in a handler).
extern "C" fn on_switch_signal(_signal: i32) {
    // SAFETY: the calling thread's errno.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    SWITCH_PRESSES.fetch_add(1, Ordering::AcqRel);
    if let Some(sampler) = existing_sampler() {
        sampler.wake_control();
    }
    // SAFETY: as above.
    unsafe { *errno = saved };
}

/// Installs the `CPUPROFILESIGNAL` switch: each `signal` starts a session
/// writing `base.N` (N = 0, 1, …) or stops the running one.
pub(crate) fn install_switch(signal: i32, base: String) -> Result<(), String> {
    // SAFETY: sigaction with valid pointers.
    unsafe {
        let mut previous: libc::sigaction = std::mem::zeroed();
        crate::sigmask::real_sigaction(signal, std::ptr::null(), &mut previous);
        if previous.sa_sigaction != libc::SIG_DFL {
            return Err(format!(
                "signal {signal} already in use; CPUPROFILESIGNAL switch not installed"
            ));
        }
    }
    let sampler = sampler();
    lock(&CONTROL).switch = Some((base, 0));
    ensure_control_thread(sampler);
    // SAFETY: installs a handler that only touches atomics and write(2).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_switch_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        crate::sigmask::real_sigaction(signal, &action, std::ptr::null_mut());
    }
    Ok(())
}

fn handle_switch_presses() {
    let presses = SWITCH_PRESSES.load(Ordering::Acquire);
    while SWITCH_HANDLED.load(Ordering::Relaxed) < presses {
        SWITCH_HANDLED.fetch_add(1, Ordering::Relaxed);
        if is_running() {
            let _ = stop();
            continue;
        }
        let next = {
            let mut control = lock(&CONTROL);
            control.switch.as_mut().map(|(base, n)| {
                let path = format!("{base}.{n}");
                *n += 1;
                path
            })
        };
        if let Some(path) = next {
            let settings = Settings::from_env(&mut |w| diag(&w));
            if let Err(e) = start(&path, settings, None) {
                diag(&format!("cannot start profiling to {path}: {e}"));
            }
        }
    }
}

/// True when a session with `settings` needs the control thread from its
/// start: realtime mode (the driver is a thread anyway), periodic writes,
/// or a process that already runs other threads (one more changes
/// nothing it can rely on). Otherwise the thread waits until the program
/// creates its first thread ([`program_creates_a_thread`]): a process
/// that must stay single-threaded (a fork server such as Chromium's
/// zygote, a sandbox that counts `/proc/self/task` before it engages)
/// stays so under the agent. Until then the signal handler fills the
/// two stack tables in turn and the profile is written at the end.
fn needs_control_thread_now(settings: &Settings, control: &Control) -> bool {
    settings.realtime
        || settings.flush_seconds > 0
        || control.switch.is_some()
        || threads::list_threads().len() > 1
}

/// Our `pthread_create`, before the program's thread is created: a
/// process that becomes multi-threaded gets the control thread now (while
/// still single-threaded, so growing the descriptor table costs no RCU
/// grace period), if a session runs or the switch is installed.
pub(crate) fn program_creates_a_thread() {
    adopt_if_cloned_child();
    if control_tid() != 0 {
        return;
    }
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let wanted = {
        let control = lock(&CONTROL);
        control.session.is_some() || control.switch.is_some()
    };
    if wanted {
        ensure_control_thread(sampler);
    }
}

struct StartArgs {
    start: threads::StartRoutine,
    arg: *mut c_void,
    /// The creator blocked the sampling signal (the new thread inherits
    /// its mask, as the program sees it).
    program_blocks: bool,
}

/// Interposes libc's `pthread_create`: once a sampler exists, the new
/// thread registers (and, during a session, arms) itself before running
/// `start`.
///
/// # Safety
/// Same contract as libc's `pthread_create`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: threads::StartRoutine,
    arg: *mut c_void,
) -> c_int {
    let Some(real) = threads::real_pthread_create() else {
        return libc::EAGAIN;
    };
    if existing_sampler().is_none() {
        // SAFETY: forwarding the caller's arguments unchanged.
        return unsafe { real(thread, attr, start, arg) };
    }
    program_creates_a_thread();
    let program_blocks = crate::sigmask::program_blocks_in_this_thread();
    let args = Box::into_raw(Box::new(StartArgs {
        start,
        arg,
        program_blocks,
    }));
    // SAFETY: the trampoline takes ownership of `args` when it runs.
    let rc = unsafe { real(thread, attr, trampoline, args.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created; `args` is still ours.
        drop(unsafe { Box::from_raw(args) });
    }
    rc
}

extern "C" fn trampoline(args: *mut c_void) -> *mut c_void {
    // SAFETY: created by pthread_create above, consumed exactly once.
    let StartArgs {
        start,
        arg,
        program_blocks,
    } = *unsafe { Box::from_raw(args as *mut StartArgs) };
    threads::on_thread_start(program_blocks);
    start(arg)
}

/// Starts the control thread if there is none (it drains tables, follows
/// dlopen and new threads, flushes periodically and serves the switch and
/// termination signals).
fn ensure_control_thread(sampler: &Sampler) {
    if control_tid() != 0 {
        return;
    }
    let _ = sampler;
    set_control_tid(-1);
    extern "C" fn control_main(_: *mut c_void) -> *mut c_void {
        set_control_tid(gettid());
        control_loop();
        std::ptr::null_mut()
    }
    if threads::spawn_internal(control_main).is_err() {
        set_control_tid(0);
        diag("cannot start the control thread; periodic work disabled");
        return;
    }
    // Wait for its tid so that arming never picks it up as a program thread.
    let deadline = Instant::now() + Duration::from_secs(2);
    while control_tid() < 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
}

fn control_loop() {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let mut seen = sampler.wake_word.load(Ordering::Acquire);
    loop {
        // Idle (no session): sleep until woken, costing no CPU. A futex,
        // not a descriptor: the program may close every descriptor.
        let idle = lock(&CONTROL).session.is_none();
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        // SAFETY: a futex wait on a live atomic; returns at once when a
        // wake-up came since `seen` was read.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                sampler.wake_word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                seen,
                if idle {
                    std::ptr::null()
                } else {
                    &timeout as *const libc::timespec
                },
            )
        };
        seen = sampler.wake_word.load(Ordering::Acquire);
        serve_requests(&TERMINATION_REQUESTS, &TERMINATION_DONE, || {
            let _ = flush();
        });
        serve_requests(&EXIT_REQUESTS, &EXIT_DONE, || {
            let _ = stop();
        });
        handle_switch_presses();
        periodic_work(sampler);
    }
}

fn periodic_work(sampler: &Sampler) {
    let mut control = lock(&CONTROL);
    let control = &mut *control;
    if control.session.is_none() {
        return;
    }
    let sweep_due = control
        .last_sweep
        .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
    // Labelled sessions drain at least once a second, so that samples get
    // the name their thread had then (see thread_names).
    let labelled = sweep_due && sampler.label_threads.load(Ordering::Relaxed);
    if sampler.table_needs_drain() || labelled {
        if let Some(session) = control
            .session
            .as_mut()
            .filter(|s| s.execs_in_progress == 0)
        {
            drain_into(sampler, session, &mut control.window);
        }
    }
    if sampler.modules_stale.load(Ordering::Relaxed) || sweep_due {
        refresh_modules(control, sampler, false);
    }
    if control
        .session
        .as_ref()
        .is_some_and(|s| matches!(s.clock, Trigger::PerfTaskClock { .. }))
    {
        threads::guard_signal_queue(sampler);
    }
    // One sigaction call: at every wake (≤ 100 ms), so that few of our
    // signals reach a handler the program put on the sampling signal.
    if let Some(session) = control.session.as_mut() {
        check_signal_owner(sampler, session);
    }
    if sweep_due {
        control.last_sweep = Some(Instant::now());
        threads::sweep(sampler);
    }
    let flush_due = control.session.as_ref().is_some_and(|s| {
        s.settings.flush_seconds > 0
            && s.execs_in_progress == 0
            && s.last_flush.elapsed() >= Duration::from_secs(s.settings.flush_seconds.into())
    });
    if flush_due {
        if let Some(session) = control.session.as_mut() {
            drain_into(sampler, session, &mut control.window);
            let _ = write_profile(sampler, session);
            session.last_flush = Instant::now();
        }
    }
}

/// Lock guards held across `fork` so the child never inherits a lock held
/// by a thread that does not exist in it.
type HeldLocks = (
    MutexGuard<'static, Control>,
    MutexGuard<'static, Option<Arming>>,
    MutexGuard<'static, crate::thread_names::ExitRecords>,
);
struct ForkGuards(UnsafeCell<Option<HeldLocks>>);
// SAFETY: only touched by the forking thread between prepare and
// parent/child, while it holds the very locks stored inside.
unsafe impl Sync for ForkGuards {}
static FORK_GUARDS: ForkGuards = ForkGuards(UnsafeCell::new(None));

/// Whether the forking thread blocked the sampling signal, for the child's
/// one thread (see `sigmask`).
static FORKING_THREAD_BLOCKS: AtomicBool = AtomicBool::new(false);

extern "C" fn fork_prepare() {
    FORKING_THREAD_BLOCKS.store(
        crate::sigmask::program_blocks_in_this_thread(),
        Ordering::Relaxed,
    );
    let control = lock(&CONTROL);
    let threads = lock(&THREADS);
    let exits = crate::thread_names::hold_exits();
    // SAFETY: see ForkGuards.
    unsafe { *FORK_GUARDS.0.get() = Some((control, threads, exits)) };
}

extern "C" fn fork_parent() {
    // SAFETY: see ForkGuards.
    drop(unsafe { (*FORK_GUARDS.0.get()).take() });
}

/// A child made by the raw `clone` system call runs no `pthread_atfork`
/// handler (Chromium's zygote makes its renderers so, with
/// `ForkWithFlags`): it inherits the parent's session, unarmed. When it
/// creates its first thread (a `vfork` child, which shares the parent's
/// memory, never does), it becomes a forked child as [`fork_child`] makes
/// one: its own session into `path_<pid>`.
fn adopt_if_cloned_child() {
    let session = session_pid();
    // SAFETY: getpid is always safe.
    if session == 0 || unsafe { libc::getpid() } == session {
        return;
    }
    let control = lock(&CONTROL);
    let threads = lock(&THREADS);
    // SAFETY: getpid is always safe.
    if unsafe { libc::getpid() } == session_pid() {
        return;
    }
    let exits = crate::thread_names::hold_exits();
    // Creating a thread, the program allocates: so may we.
    continue_in_child((control, threads, exits), false);
}

/// In the child: forget the parent's threads, timers and samples; keep
/// profiling the child (if a session runs) into `path_<pid>`.
extern "C" fn fork_child() {
    // SAFETY: see ForkGuards.
    let Some(held) = (unsafe { (*FORK_GUARDS.0.get()).take() }) else {
        return;
    };
    continue_in_child(held, true);
}

/// See [`fork_child`]; `held` are the locks. `just_forked`: called between
/// `fork` and whatever the child does next, perhaps `exec`, where nothing
/// may allocate or free (see [`NAME_ROOM`]): what belongs to the parent is
/// forgotten, not freed, and the names are rewritten in place.
fn continue_in_child((mut control, mut threads, mut exits): HeldLocks, just_forked: bool) {
    // SAFETY: getpid is always safe.
    SESSION_PID.store(unsafe { libc::getpid() }, Ordering::Release);
    set_control_tid(0);
    crate::wall_driver::forget_after_fork();
    threads::forget_internal_after_fork();
    // The HTTP endpoint's threads do not exist here: no window in the child.
    std::mem::forget(control.window.take());
    crate::thread_names::forget_exits_in_child(&mut exits);
    drop(exits);
    let Some(sampler) = existing_sampler() else {
        return;
    };
    sampler.gate.reset_after_fork();
    for cache in sampler.caches.iter() {
        cache.busy.store(false, Ordering::Relaxed);
    }
    let arming = threads.take();
    for (tid, slot) in sampler.registered_threads() {
        let handle = slot.timer.swap(u64::MAX, Ordering::AcqRel);
        // perf fds are copies of the parent's (closing ours leaves the
        // parent's events alone); POSIX timers are not inherited at all.
        if let Some(arming) = arming {
            if arming.clock.per_thread() {
                timers::forget_in_child(handle);
            }
        }
        sampler.unregister_thread(tid);
    }
    let Some(mut session) = control.session.take() else {
        return;
    };
    sampler.running.store(false, Ordering::Release);
    sampler.clear_tables();
    if session.internal {
        INTERNAL_SESSION.store(false, Ordering::Release);
        std::mem::forget(session);
        return;
    }
    sampler.reset_stats();
    std::mem::forget(std::mem::take(&mut session.stacks));
    std::mem::forget(std::mem::take(&mut session.names));
    session.started = Instant::now();
    // The child's profile starts now: its samples' times count from here.
    (session.start_time_ns, session.start_monotonic_ns) = epoch_and_monotonic_ns();
    session.times = TimeKeeping::new(session.times.asked_ns);
    sampler
        .time_bucket_ns
        .store(session.times.asked_ns.max(1), Ordering::Relaxed);
    sampler.time_epoch_offset.store(
        session
            .start_time_ns
            .wrapping_sub(session.start_monotonic_ns),
        Ordering::Relaxed,
    );
    session.evictions = 0;
    session.execs_in_progress = 0;
    session.forked = true;
    if !append_pid(&mut session.path, std::process::id(), !just_forked) {
        // Too deep a line of children for the room kept: this one would
        // write over its parent's file. It is not profiled.
        sampler.running.store(false, Ordering::Release);
        std::mem::forget(session);
        return;
    }
    if !session
        .crash_names
        .as_mut()
        .is_some_and(|names| names.set(&session.path))
    {
        std::mem::forget(session.crash_names.take());
        if !just_forked {
            session.crash_names = CrashNames::new(&session.path);
        }
    }
    session.start_process_cpu_ns = process_cpu_ns();
    session.last_flush = Instant::now();
    let period_ns = session.settings.period_ns();
    // SAFETY: getpid is always safe.
    SESSION_PID.store(unsafe { libc::getpid() }, Ordering::Release);
    sampler.running.store(true, Ordering::Release);
    // The child's first sample waits for 20 ms of its CPU time: a child
    // about to exec may have reset the sampling signal's disposition to
    // the default (terminate) behind our back (timers::FORKED_CHILD_DELAY_NS).
    let rearmed = match session.clock {
        Trigger::ProcessItimer => {
            timers::arm_process_itimer(period_ns, timers::FORKED_CHILD_DELAY_NS).map(|()| u64::MAX)
        }
        clock => timers::arm_thread_after(
            clock,
            gettid(),
            period_ns,
            session.settings.signal,
            timers::FORKED_CHILD_DELAY_NS,
        ),
    };
    match rearmed {
        Ok(handle) => {
            if session.clock.per_thread() {
                if let Some(slot) = sampler.register_thread(gettid()) {
                    slot.program_blocks.store(
                        FORKING_THREAD_BLOCKS.load(Ordering::Relaxed),
                        Ordering::Relaxed,
                    );
                    slot.armed(handle);
                    // The first sample stands for every whole period of
                    // the child's CPU time since the fork (its thread's
                    // CPU clock starts there), not for one.
                    slot.cpu_mark.store(1, Ordering::Relaxed);
                    threads::mark_wall_start(slot, session.clock, gettid());
                }
            }
            *threads = arming;
            let (session_clock, signal) = (session.clock, session.settings.signal);
            // A forked child has one thread; it gets ours only when it
            // creates one, or when the session needs it at once.
            let thread_now = session.settings.realtime || session.settings.flush_seconds > 0;
            control.session = Some(session);
            let wall = session_clock == Trigger::WallClock;
            drop(threads);
            drop(control);
            if thread_now {
                ensure_control_thread(sampler);
            }
            if wall {
                if let Err(e) = crate::wall_driver::start(period_ns, signal) {
                    diag(&format!("forked child: realtime mode: {e}"));
                }
            }
        }
        Err(e) => {
            sampler.running.store(false, Ordering::Release);
            diag(&format!(
                "forked child {}: cannot arm a profiling timer: {e}",
                std::process::id()
            ));
        }
    }
}

/// True when this code runs from a shared object named `libcpuprof*`
/// (LD_PRELOAD or `-lcpuprof`), as opposed to the rlib linked into a
/// program: only then does `CPUPROFILE` start profiling at load.
fn loaded_as_libcpuprof() -> bool {
    let mut here: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on one of our own functions, outside any handler.
    let found = unsafe { libc::dladdr(loaded_as_libcpuprof as *const c_void, &mut here) };
    if found == 0 || here.dli_fname.is_null() {
        return false;
    }
    // SAFETY: AT_PHDR is the main program's program headers.
    let main_phdr = unsafe { libc::getauxval(libc::AT_PHDR) } as *const c_void;
    let mut main: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on an address of the main program.
    let main_found = unsafe { libc::dladdr(main_phdr, &mut main) };
    if main_found != 0 && main.dli_fbase == here.dli_fbase {
        return false;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { std::ffi::CStr::from_ptr(here.dli_fname) }.to_string_lossy();
    let file = path.rsplit('/').next().unwrap_or("");
    file.starts_with("libcpuprof")
}

/// True when the main program is written in Go (with cgo, since the agent
/// is loaded): it has a `.go.buildinfo` section.
fn is_go_program() -> bool {
    static GO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *GO.get_or_init(|| crate::symbols::has_section("/proc/self/exe", b".go.buildinfo"))
}

/// True for setuid/setgid programs (AT_SECURE), which are never profiled.
fn is_secure_execution() -> bool {
    // SAFETY: getauxval is always safe.
    unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
}

/// The library constructor: `CPUPROFILE` / `CPUPROFILESIGNAL`.
extern "C" fn on_load() {
    if !loaded_as_libcpuprof() {
        return;
    }
    let profile = std::env::var_os("CPUPROFILE").filter(|p| !p.is_empty());
    let switch = std::env::var("CPUPROFILESIGNAL").ok();
    let http = std::env::var("CPUPROFILE_HTTP")
        .ok()
        .filter(|v| !v.is_empty());
    if profile.is_none() && switch.is_none() && http.is_none() {
        return;
    }
    if is_secure_execution() {
        diag("not profiling a setuid/setgid program");
        return;
    }
    if let Some(spec) = http {
        crate::server::start_from_env(
            &spec,
            profile.is_some() || switch.is_some(),
            Windows {
                begin: window_begin,
                end: window_end,
            },
        );
        if profile.is_none() && switch.is_none() {
            return;
        }
    }
    let settings = Settings::from_env(&mut |w| diag(&w));
    if let Some(value) = switch {
        let Some(signal) = crate::config::parse_signal(&value) else {
            diag(&format!(
                "CPUPROFILESIGNAL={value:?} is not a usable signal number; not profiling"
            ));
            return;
        };
        let Some(base) = crate::config::unique_path_from_env() else {
            diag("CPUPROFILESIGNAL is set but CPUPROFILE is not; not profiling");
            return;
        };
        if let Err(e) = install_switch(signal, base) {
            diag(&e);
        }
        return;
    }
    let Some(path) = crate::config::unique_path_from_env() else {
        return;
    };
    if let Err(e) = start(&path, settings, None) {
        diag(&format!("cannot start profiling to {path}: {e}"));
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = on_load;
