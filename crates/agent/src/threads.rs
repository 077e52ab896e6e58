//! Covering every thread: our `pthread_create` (which interposes libc's,
//! from `libcpuprof.so` or from a program linking the rlib) arms each new
//! thread's clock from inside the thread before its start routine runs and
//! records its stack bounds; a pthread key destructor disarms it at exit.
//! Threads that exist at start, and threads created without
//! `pthread_create`, are found in `/proc/self/task` (at start, then once a
//! second by the control thread).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::collector::existing_sampler;
use crate::interpose::PTHREAD_CREATE;
use crate::locks::lock;
use crate::signal_path::{control_tid, gettid, Sampler, ThreadSlot};
use crate::timers::{self, Trigger};

pub(crate) type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
pub(crate) type PthreadCreate = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartRoutine,
    *mut c_void,
) -> c_int;

/// libc's `pthread_create` (the next definition after ours, which
/// `dlsym(RTLD_NEXT)` never returns).
pub(crate) fn real_pthread_create() -> Option<PthreadCreate> {
    let address = PTHREAD_CREATE.address();
    if address == 0 {
        return None;
    }
    // SAFETY: dlsym found libc's pthread_create, which has this type.
    Some(unsafe { std::mem::transmute::<usize, PthreadCreate>(address) })
}

/// How to arm a new thread while a session runs.
#[derive(Clone, Copy)]
pub(crate) struct Arming {
    pub(crate) clock: Trigger,
    pub(crate) period_ns: u64,
    pub(crate) signal: i32,
}

/// The thread registry lock, with the arming of the running session.
pub(crate) static THREADS: Mutex<Option<Arming>> = Mutex::new(None);

/// Registers the calling thread with its stack bounds and arms it if a
/// session runs; arranges for [`on_thread_exit`] at its end.
pub(crate) fn on_thread_start(program_blocks: bool) {
    // A mask inherited from a creator that blocked everything.
    crate::sigmask::unblock_in_this_thread();
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let tid = gettid();
    let stack_end = current_stack_end();
    let threads = lock(&THREADS);
    if let Some(slot) = sampler.register_thread(tid) {
        slot.stack_end.store(stack_end, Ordering::Relaxed);
        slot.via_pthread_create.store(true, Ordering::Relaxed);
        slot.program_blocks.store(program_blocks, Ordering::Relaxed);
        if let Some(arming) = *threads {
            arm_slot(sampler, arming, tid);
        }
    }
    drop(threads);
    if let Some(key) = exit_key() {
        // SAFETY: a key we created; the value is the (non-zero) tid.
        unsafe { libc::pthread_setspecific(key, tid as usize as *const c_void) };
    }
}

/// The pthread key whose destructor runs [`on_thread_exit`].
fn exit_key() -> Option<libc::pthread_key_t> {
    static KEY: OnceLock<Option<libc::pthread_key_t>> = OnceLock::new();
    *KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: creating a key with a plain extern "C" destructor.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
        (rc == 0).then_some(key)
    })
}

/// Disarms and forgets an exiting thread.
extern "C" fn on_thread_exit(value: *mut c_void) {
    let tid = value as usize as i32;
    let Some(sampler) = existing_sampler() else {
        return;
    };
    if sampler.label_threads.load(Ordering::Relaxed) && sampler.running.load(Ordering::Relaxed) {
        crate::thread_names::record_exit(tid);
    }
    let threads = lock(&THREADS);
    if let Some(slot) = sampler.thread_slot(tid) {
        let handle = slot.timer.swap(u64::MAX, Ordering::AcqRel);
        if let Some(arming) = *threads {
            timers::disarm_thread(arming.clock, handle);
        }
        sampler.unregister_thread(tid);
    }
}

/// The end (highest address) of the calling thread's stack, 0 if unknown.
fn current_stack_end() -> u64 {
    // SAFETY: pthread_getattr_np fills a local attr we then destroy.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return 0;
        }
        let mut addr: *mut c_void = std::ptr::null_mut();
        let mut size: usize = 0;
        let rc = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            return 0;
        }
        addr as u64 + size as u64
    }
}

/// Arms thread `tid`'s clock if it has none. Caller holds [`THREADS`].
fn arm_slot(sampler: &Sampler, arming: Arming, tid: i32) {
    if !arming.clock.per_thread() || is_internal(tid) {
        return;
    }
    let Some(slot) = sampler.thread_slot(tid) else {
        return;
    };
    if slot.timer.load(Ordering::Acquire) != u64::MAX {
        return;
    }
    // A thread may exit between listing and arming: then arming fails
    // (ESRCH) and there is nothing to sample anyway.
    if let Ok(handle) = timers::arm_thread(arming.clock, tid, arming.period_ns, arming.signal) {
        slot.armed(handle);
        mark_wall_start(slot, arming.clock, tid);
    }
}

/// Wall-clock mode: the thread's CPU time at arming, from which its first
/// sample tells running from waiting (see `signal_path::wall_state`).
pub(crate) fn mark_wall_start(slot: &ThreadSlot, clock: Trigger, tid: i32) {
    if clock == Trigger::WallClock {
        slot.cpu_mark
            .store(timers::thread_cpu_ns_of(tid).max(1), Ordering::Relaxed);
    }
}

/// Registers and arms thread `tid`. Caller holds [`THREADS`].
pub(crate) fn arm_locked(sampler: &Sampler, arming: Arming, tid: i32) {
    if is_internal(tid) {
        return;
    }
    if sampler.register_thread(tid).is_some() {
        arm_slot(sampler, arming, tid);
    }
}

/// The agent's own threads (the control thread, the HTTP endpoint's, the
/// wall-clock driver), which are never sampled: their tids, 0 in a free
/// slot. Each records itself before its routine runs
/// ([`internal_trampoline`]) and is forgotten when it returns.
static INTERNAL_TIDS: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

/// True for the agent's own threads.
fn is_internal(tid: i32) -> bool {
    tid == control_tid()
        || (tid > 0
            && INTERNAL_TIDS
                .iter()
                .any(|t| t.load(Ordering::Acquire) == tid))
}

/// In a forked child: the parent's threads of ours do not exist here.
pub(crate) fn forget_internal_after_fork() {
    for tid in &INTERNAL_TIDS {
        tid.store(0, Ordering::Release);
    }
}

/// Runs an agent thread's routine (passed as the argument), recorded in
/// [`INTERNAL_TIDS`] meanwhile.
extern "C" fn internal_trampoline(main: *mut c_void) -> *mut c_void {
    let me = gettid();
    let slot = INTERNAL_TIDS.iter().find(|t| {
        t.compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    // SAFETY: spawn_internal passes a StartRoutine as the argument.
    let main: StartRoutine = unsafe { std::mem::transmute::<*mut c_void, StartRoutine>(main) };
    let result = main(std::ptr::null_mut());
    if let Some(slot) = slot {
        slot.store(0, Ordering::Release);
    }
    result
}

/// The thread ids of this process, from `/proc/self/task`.
pub(crate) fn list_threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Arms threads that appeared without our `pthread_create`; forgets
/// threads that ended without its exit hook. Caller holds the control
/// lock (not [`THREADS`]).
pub(crate) fn sweep(sampler: &Sampler) {
    let live = list_threads();
    if live.is_empty() {
        return;
    }
    let threads = lock(&THREADS);
    let Some(arming) = *threads else {
        return;
    };
    for &tid in &live {
        arm_locked(sampler, arming, tid);
    }
    // perf descriptors the program closed under us (close_range,
    // closefrom): those threads go on with a POSIX timer.
    for (tid, slot) in sampler.registered_threads() {
        let handle = slot.timer.load(Ordering::Acquire);
        if let Some(replaced) =
            timers::replace_if_lost(handle, tid, arming.period_ns, arming.signal)
        {
            slot.armed(replaced.unwrap_or(u64::MAX));
        }
    }
    let gone: Vec<i32> = sampler
        .registered_threads()
        .map(|(tid, _)| tid)
        .filter(|tid| !live.contains(tid))
        .collect();
    for tid in gone {
        if let Some(slot) = sampler.thread_slot(tid) {
            let handle = slot.timer.swap(u64::MAX, Ordering::AcqRel);
            timers::disarm_thread(arming.clock, handle);
        }
        sampler.unregister_thread(tid);
    }
}

/// Threads moved from perf to a POSIX timer because they block the
/// sampling signal.
static BLOCKING_FALLBACKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many threads [`guard_signal_queue`] moved (for the stop line).
pub(crate) fn blocking_fallbacks() -> u64 {
    BLOCKING_FALLBACKS.load(Ordering::Relaxed)
}

/// Clears [`blocking_fallbacks`] (a new session).
pub(crate) fn reset_blocking_fallbacks() {
    BLOCKING_FALLBACKS.store(0, Ordering::Relaxed);
}

/// A perf event queues one real-time signal per period to a thread that
/// blocks it, and when the queue (`RLIMIT_SIGPENDING`) is full the kernel
/// sends `SIGIO` instead, which would end the program. So: when the
/// process's queued signals (`SigQ` in `/proc/self/status`) pass 1/8 of
/// the limit (at most 1024), every perf-armed thread that blocks the
/// sampling signal goes on with a POSIX timer, whose signal never queues
/// more than once. Caller holds the control lock (not [`THREADS`]).
pub(crate) fn guard_signal_queue(sampler: &Sampler) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return;
    };
    let Some((queued, limit)) = status
        .lines()
        .find_map(|l| l.strip_prefix("SigQ:"))
        .and_then(|v| v.trim().split_once('/'))
        .and_then(|(q, l)| Some((q.parse::<u64>().ok()?, l.parse::<u64>().ok()?)))
    else {
        return;
    };
    if queued < (limit / 8).min(1024) {
        return;
    }
    let threads = lock(&THREADS);
    let Some(arming) = *threads else {
        return;
    };
    let bit = 1u64 << (arming.signal - 1);
    for (tid, slot) in sampler.registered_threads() {
        let handle = slot.timer.load(Ordering::Acquire);
        if !timers::is_perf_handle(handle) {
            continue;
        }
        let blocked = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
            .ok()
            .and_then(|s| {
                let hex = s.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
                u64::from_str_radix(hex.trim(), 16).ok()
            })
            .is_some_and(|mask| mask & bit != 0);
        if blocked {
            timers::disarm_thread(arming.clock, handle);
            let replaced = timers::arm_thread_timer(tid, arming.period_ns, arming.signal);
            slot.armed(replaced.unwrap_or(u64::MAX));
            BLOCKING_FALLBACKS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts an internal thread (the control thread) with every signal
/// blocked, through libc's `pthread_create` directly.
pub(crate) fn spawn_internal(main: StartRoutine) -> Result<(), ()> {
    let real = real_pthread_create().ok_or(())?;
    // While the process may still be single-threaded: see the function.
    timers::grow_descriptor_table();
    // SAFETY: signal masks of the calling thread, restored below; a
    // detached thread whose routine takes no argument. libc's own
    // pthread_sigmask, not ours: our threads block the sampling signal
    // too (they are never sampled), so that a signal sent to the process
    // goes to one of the program's threads, as without the agent.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        crate::sigmask::real_pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut thread: libc::pthread_t = 0;
        let rc = real(
            &mut thread,
            std::ptr::null(),
            internal_trampoline,
            main as *const () as *mut c_void,
        );
        crate::sigmask::real_pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if rc != 0 {
            return Err(());
        }
        libc::pthread_detach(thread);
    }
    Ok(())
}

/// Registers the calling thread (with its stack bounds) and arms it if a
/// session runs. Idempotent.
pub(crate) fn register_current_thread() {
    let Some(sampler) = existing_sampler() else {
        return;
    };
    let tid = gettid();
    let stack_end = current_stack_end();
    let threads = lock(&THREADS);
    if let Some(slot) = sampler.register_thread(tid) {
        if slot.stack_end.load(Ordering::Relaxed) == 0 {
            slot.stack_end.store(stack_end, Ordering::Relaxed);
        }
        if let Some(arming) = *threads {
            arm_slot(sampler, arming, tid);
        }
    }
}

/// The executable range of `libcpuprof.so` itself, [start, end) (0, 0
/// when the agent is linked into the program as the rlib, or before the
/// first session): its frames — the thread-start trampoline at the bottom
/// of every thread made through our `pthread_create`, our interposed
/// functions — are taken out of every stack the agent writes
/// ([`drop_own_frames`]), so other tools see the program alone.
static OWN_CODE: [std::sync::atomic::AtomicU64; 2] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// When the agent is linked into the program as the rlib (the Rust
/// [`crate::ProfilerGuard`]): the address ranges, sorted and disjoint, of
/// its functions in the executable — the crate's (`cpuprof::…`, the
/// thread-start trampoline among them) and the C functions it defines
/// there (`pthread_create`, `sigaction`, `ProfilerStart`, …) — from the
/// executable's symbol table, so those frames are left out too.
static OWN_FUNCTIONS: std::sync::OnceLock<Vec<(u64, u64)>> = std::sync::OnceLock::new();

/// The C functions the agent defines (interposed, or its C API): in the
/// executable, a definition of one of them is the agent's.
const OWN_C_FUNCTIONS: &[&str] = &[
    "ProfilerDisable",
    "ProfilerEnable",
    "ProfilerFlush",
    "ProfilerGetCurrentState",
    "ProfilerGetStackTrace",
    "ProfilerRegisterThread",
    "ProfilerStart",
    "ProfilerStartWithOptions",
    "ProfilerStop",
    "ProfilingIsEnabledForAllThreads",
    "_Exit",
    "_exit",
    "execl",
    "execle",
    "execlp",
    "execv",
    "execve",
    "execveat",
    "execvp",
    "execvpe",
    "fexecve",
    "pthread_create",
    "pthread_sigmask",
    "sigaction",
    "signal",
    "sigprocmask",
];

/// The agent crate's modules and root items: its functions' paths start
/// with one of them (`cpuprof::threads::trampoline`). A program's own
/// crate may be named `cpuprof` too (our command-line tool, whose
/// `cpuprof demo` profiles itself with the guard), so the crate name
/// alone does not tell the agent's functions from the program's.
const OWN_PATHS: &[&str] = &[
    "capi",
    "collector",
    "config",
    "crash",
    "diag",
    "exec",
    "exit",
    "handler_stack",
    "http",
    "interpose",
    "modules",
    "pprof_proto",
    "lifecycle",
    "locks",
    "server",
    "sigmask",
    "signal_path",
    "symbols",
    "thread_names",
    "threads",
    "timers",
    "wall_driver",
    "writer",
    "Error",
    "ProfilerGuard",
    "State",
    "state",
];

/// True when the mangled `name` is a function of the agent: a path of
/// [`OWN_PATHS`] under the crate (legacy `_ZN7cpuprof7threads…`, v0
/// `_R…_7cpuprof7threads…`), a trait method or generic instance over one
/// of its types (`<cpuprof::ProfilerGuard as Drop>::drop`), or one of the
/// C functions it defines.
fn is_own_symbol(name: &str) -> bool {
    if OWN_C_FUNCTIONS.contains(&name) {
        return true;
    }
    if !name.contains("cpuprof") {
        return false;
    }
    OWN_PATHS.iter().any(|path| {
        let component = format!("{}{path}", path.len());
        let under_crate = |at: &str| {
            name.match_indices(at)
                .any(|(i, _)| name[i + at.len()..].starts_with(&component))
        };
        let typed = || {
            name.match_indices("cpuprof..").any(|(i, _)| {
                let rest = &name[i + "cpuprof..".len()..];
                rest.strip_prefix(path).is_some_and(|r| {
                    r.starts_with(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                })
            })
        };
        name.starts_with(&format!("_ZN7cpuprof{component}"))
            || (name.starts_with("_R") && under_crate("_7cpuprof"))
            || (name.starts_with("_ZN") && typed())
    })
}

/// Finds [`OWN_FUNCTIONS`] in the executable that holds the agent.
fn find_own_functions() {
    if OWN_FUNCTIONS.get().is_some() {
        return;
    }
    let mut here: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on one of our own functions, outside any handler.
    if unsafe { libc::dladdr(find_own_code as *const c_void, &mut here) } == 0
        || here.dli_fname.is_null()
    {
        return;
    }
    let Ok(exe) = std::fs::read_link("/proc/self/exe") else {
        return;
    };
    let Some(object) = crate::symbols::ObjectFile::read(&exe.to_string_lossy()) else {
        return;
    };
    let Some(first) = object.first_vaddr() else {
        return;
    };
    let bias = (here.dli_fbase as u64).wrapping_sub(first & !0xfff);
    let mut ranges: Vec<(u64, u64)> = object
        .functions()
        .iter()
        .filter(|(_, size, name)| *size > 0 && is_own_symbol(name))
        .map(|&(start, size, _)| (start.wrapping_add(bias), start.wrapping_add(bias + size)))
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let _ = OWN_FUNCTIONS.set(merged);
}

/// Finds [`OWN_CODE`], or [`OWN_FUNCTIONS`] when the agent is linked into
/// the program (at a session's start; not in a signal handler).
pub(crate) fn find_own_code(as_library: bool) {
    if !as_library {
        find_own_functions();
        return;
    }
    if OWN_CODE[1].load(Ordering::Acquire) != 0 {
        return;
    }
    let mut here: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr on one of our own functions.
    if unsafe { libc::dladdr(find_own_code as *const c_void, &mut here) } == 0 {
        return;
    }
    let base = here.dli_fbase as u64;
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: the loader's record; `data` is our (base, start, end).
        unsafe {
            let found = &mut *(data as *mut (u64, u64, u64));
            let info = &*info;
            if info.dlpi_addr != found.0 || info.dlpi_phdr.is_null() {
                return 0;
            }
            for i in 0..info.dlpi_phnum as usize {
                let ph = &*info.dlpi_phdr.add(i);
                if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                    found.1 = info.dlpi_addr + ph.p_vaddr;
                    found.2 = found.1 + ph.p_memsz;
                }
            }
            1
        }
    }
    let mut found = (base, 0u64, 0u64);
    // SAFETY: a callback that only reads the loader's records.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut found as *mut (u64, u64, u64)).cast()) };
    if found.2 > found.1 {
        OWN_CODE[0].store(found.1, Ordering::Relaxed);
        OWN_CODE[1].store(found.2, Ordering::Release);
    }
}

/// True when `pc` is in the agent's own code (see [`OWN_CODE`]).
/// Async-signal-safe (atomics).
pub(crate) fn is_own_frame(pc: u64) -> bool {
    let end = OWN_CODE[1].load(Ordering::Acquire);
    if end != 0 {
        return pc < end && pc >= OWN_CODE[0].load(Ordering::Relaxed);
    }
    match OWN_FUNCTIONS.get() {
        Some(ranges) => {
            let at = ranges.partition_point(|r| r.0 <= pc);
            at > 0 && pc < ranges[at - 1].1
        }
        None => false,
    }
}

/// Takes the agent's own frames out of `stack` (see [`OWN_CODE`],
/// [`OWN_FUNCTIONS`]).
pub(crate) fn drop_own_frames(stack: &mut Vec<u64>) {
    if OWN_CODE[1].load(Ordering::Acquire) != 0 || OWN_FUNCTIONS.get().is_some() {
        stack.retain(|&pc| !is_own_frame(pc));
    }
}

#[cfg(test)]
mod own_symbol_tests {
    use super::is_own_symbol;

    #[test]
    fn the_agent_s_functions_and_not_a_program_crate_named_cpuprof() {
        for own in [
            "_ZN7cpuprof7threads10trampoline17h6374ac2e4cdc03d6E",
            "_ZN7cpuprof13ProfilerGuard4stop17h0123456789abcdefE",
            "_ZN68_$LT$cpuprof..ProfilerGuard$u20$as$u20$core..ops..drop..Drop$GT$4drop17h0123456789abcdefE",
            "_ZN4core3ptr52drop_in_place$LT$cpuprof..lifecycle..Session$GT$17h0123456789abcdefE",
            "_RNvNtCs1234abcd_7cpuprof7threads10trampoline",
            "pthread_create",
            "ProfilerStart",
        ] {
            assert!(is_own_symbol(own), "{own}");
        }
        for program in [
            "_ZN7cpuprof4demo8demo_hot17h0123456789abcdefE",
            "_ZN7cpuprof4main17h0123456789abcdefE",
            "_ZN7cpuprof7convert3run17h0123456789abcdefE",
            "_RNvNtCs1234abcd_7cpuprof4demo8demo_hot",
            "_ZN4core3ptr52drop_in_place$LT$cpuprof..demo..Worker$GT$17h0123456789abcdefE",
            "_ZN7threads10trampoline17h0123456789abcdefE",
            "main",
        ] {
            assert!(!is_own_symbol(program), "{program}");
        }
    }
}
