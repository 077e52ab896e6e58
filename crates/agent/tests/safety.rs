//! The signal path cannot hurt the host: a malloc storm under 4000 Hz
//! sampling, termination by SIGTERM (with and without the program's own
//! handler), fork with exit() in the child.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Waits for `child` at most `limit`; kills it and fails on a hang.
fn wait_with_limit(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (deadlock?)");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until process `pid` has used `seconds` of CPU time (user time
/// from /proc, in clock ticks of 10 ms), at most 20 s.
fn wait_for_cpu_time(pid: u32, seconds: f64) {
    let stat = format!("/proc/{pid}/stat");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&stat).unwrap_or_default();
        let ticks: u64 = text
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .nth(11)
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        if ticks as f64 >= seconds * 100.0 || start.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 8 threads calling malloc/free as fast as they can for 10 s, sampled at
/// 4000 Hz: no deadlock (the handler never allocates), a readable profile.
#[test]
fn malloc_storm_8_threads_4000_hz_no_deadlock() {
    let dir = tempdir();
    let program = build_c(dir.path(), "malloc_storm", false);
    let profile = dir.path().join("storm.prof");
    let mut child = preloaded(&program, &profile, 4000)
        .arg("10")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_limit(&mut child, Duration::from_secs(90), "malloc storm");
    assert!(status.success(), "malloc storm: {status}");
    let samples = total_samples(&read_profile(&profile));
    // At least a CPU-second's worth, even on a loaded machine.
    assert!(samples > 4000, "{samples} samples");
    let stacks = NamedStacks::of(&read_profile(&profile));
    assert!(
        stacks.cum("storm") * 100 >= stacks.total() * 90,
        "storm in {} of {}",
        stacks.cum("storm"),
        stacks.total()
    );
}

/// A program killed by SIGTERM (default action) leaves a complete,
/// readable profile, and still dies of SIGTERM.
#[test]
fn sigterm_leaves_a_complete_profile() {
    let dir = tempdir();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("term.prof");
    let mut child = preloaded(&spin, &profile, 1000)
        .args(["-s", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_cpu_time(child.id(), 0.5);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_with_limit(&mut child, Duration::from_secs(20), "SIGTERM");
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "the default action still happens: {status}"
    );
    let stacks = NamedStacks::of(&read_profile(&profile));
    assert!(
        stacks.total() >= 400,
        "{} samples after ≥0.5 CPU-s at 1000 Hz",
        stacks.total()
    );
    assert!(
        stacks.cum("burn_a") > stacks.cum("burn_b"),
        "a real profile of spin"
    );
}

/// The program's own SIGTERM handler (installed before ProfilerStart) still
/// runs, after the profile was written.
#[test]
fn sigterm_runs_the_programs_own_handler_after_writing() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let profile = dir.path().join("own.prof");
    let mut child = Command::new(&api)
        .arg("term")
        .arg(&profile)
        .env("CPUPROFILE_FREQUENCY", "1000")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    wait_for_cpu_time(child.id(), 0.5);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_with_limit(
        &mut child,
        Duration::from_secs(20),
        "SIGTERM with a handler",
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "own handler ran");
    assert_eq!(status.code(), Some(3), "the handler's _exit(3)");
    let stacks = NamedStacks::of(&read_profile(&profile));
    assert!(
        stacks.cum("api_burn") >= 400,
        "{} samples of api_burn after ≥0.5 CPU-s at 1000 Hz",
        stacks.cum("api_burn")
    );
}

/// fork with exit() in the child: the parent's file stays intact (libprofiler
/// lets the child write into it); the child's samples go to path_<pid>.
#[test]
fn fork_with_exit_in_child_keeps_the_parents_file() {
    let dir = tempdir();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("fork.prof");
    let (_, cpu) = run_measured(preloaded(&spin, &profile, 500).args(["-s", "0.6", "-f"]));
    let files = files_starting_with(dir.path(), "fork.prof");
    assert_eq!(files.len(), 2, "{files:?}");
    let child_file = files
        .iter()
        .find(|f| f.starts_with("fork.prof_"))
        .expect("the child's profile");
    let parent = total_samples(&read_profile(&profile));
    let child = total_samples(&read_profile(&dir.path().join(child_file)));
    // Each process burns 0.6 CPU-s: ~300 samples each, not the sum.
    for (who, n) in [("parent", parent), ("child", child)] {
        assert!(
            (255..=345).contains(&n),
            "{who}: {n} samples (both used {cpu:.2} CPU-s)"
        );
    }
}

/// CPUPROFILE_FLUSH_SECONDS=1: the profile on disk is complete and readable
/// while the program runs, so SIGKILL (which nothing can catch) loses at
/// most the last second.
#[test]
fn periodic_flush_survives_sigkill() {
    let dir = tempdir();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("flush.prof");
    let mut child = preloaded(&spin, &profile, 1000)
        .args(["-s", "60"])
        .env("CPUPROFILE_FLUSH_SECONDS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_cpu_time(child.id(), 2.5);
    // Give the last periodic write time to land, then kill without warning.
    std::thread::sleep(Duration::from_millis(1200));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let stacks = NamedStacks::of(&read_profile(&profile));
    // ≥ 2.5 CPU-s were used; at most about one second may be missing.
    assert!(
        stacks.total() >= 1000,
        "{} samples survived",
        stacks.total()
    );
    assert!(stacks.cum("burn_a") > stacks.cum("burn_b"));
    assert!(
        files_starting_with(dir.path(), "flush.prof").len() == 1,
        "no temporary file is left behind"
    );
}

/// A program that blocks the real-time signal the agent samples on
/// (SIGRTMAX, the highest free one), with no handler of its own, and waits
/// for it — `sigwait`, `sigwaitinfo`, `sigtimedwait`, or reading a
/// `signalfd` — while another thread sends it three ways (to the waiting
/// thread before it waits, to the process, queued with a value) prints
/// the same with the agent as without, and reads back the mask it set.
/// Before: the agent's handler took the first signal and dropped it (the
/// `sigwait` runs hung until their SIGALRM), and the `signalfd` read the
/// agent's own sampling signals. The waits keep the session sampling; a
/// `signalfd` on the signal ends its sampling, said on stderr. This is
/// `CPUPROFILE_SIGWAIT=1`'s behaviour (off by default: Chromium's zygote
/// aborts or hangs about half the time with it, issue 23's note).
#[test]
fn a_program_waiting_for_the_sampling_signal_gets_every_one_sent_to_it() {
    let dir = tempdir();
    let program = build_c(dir.path(), "sigwait_rt", false);
    for mode in ["sigwait", "sigwaitinfo", "sigtimedwait", "signalfd"] {
        let without = Command::new(&program).arg(mode).output().unwrap();
        assert!(
            without.status.success(),
            "{mode} without the agent: {without:?}"
        );
        let profile = dir.path().join(format!("{mode}.prof"));
        let with = preloaded(&program, &profile, 1000)
            .env("CPUPROFILE_SIGWAIT", "1")
            .arg(mode)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&with.stderr);
        assert_eq!(
            String::from_utf8_lossy(&with.stdout),
            String::from_utf8_lossy(&without.stdout),
            "{mode}: {}\n{stderr}",
            with.status
        );
        assert_eq!(with.status.code(), Some(0), "{mode}: {stderr}");
        let stacks = NamedStacks::of(&read_profile(&profile));
        assert!(
            stacks.cum("worker_burn") > 0 && stacks.cum("waiter_burn") > 0,
            "{mode}: the burning threads were not sampled\n{stderr}"
        );
        // Every clock but setitimer's SIGPROF samples on that signal.
        let on_it = std::env::var("CPUPROF_TEST_TIMER").map_or(true, |t| t != "itimer");
        let gave_up = stderr.contains("through a signalfd: sampling stopped")
            && stderr.contains("samples lost to the program's signalfd on signal");
        assert_eq!(gave_up, mode == "signalfd" && on_it, "{mode}: {stderr}");
    }
}
