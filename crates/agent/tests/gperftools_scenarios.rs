//! gperftools' own profiler scenarios (its profiler_unittest.sh), run
//! against libcpuprof.so: ProfilerStart vs CPUPROFILE, 1/2/4 threads,
//! CPUPROFILE_REALTIME, fork+exec, ProfilerGetCurrentState, plus the rest
//! of the C API and the environment variables.

mod common;

use common::*;

/// Linked with -lcpuprof and our header, `ProfilerStart` writes the profile
/// named in the call; the same program run with only `CPUPROFILE` (no API
/// call) writes the same kind of profile: both name the burning function.
#[test]
fn profiler_start_and_cpuprofile_both_profile() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let started = dir.path().join("started.prof");
    let out = run_ok(
        std::process::Command::new(&api)
            .args(["start"])
            .arg(&started),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("second start=0"),
        "a second ProfilerStart must fail: {stdout}"
    );
    let by_call = NamedStacks::of(&read_profile(&started));

    let by_env_path = dir.path().join("env.prof");
    run_ok(
        std::process::Command::new(&api)
            .arg("env")
            .env("CPUPROFILE", &by_env_path)
            .env_remove("CPUPROFILE_USE_PID"),
    );
    let by_env = NamedStacks::of(&read_profile(&by_env_path));
    for (how, stacks) in [("ProfilerStart", &by_call), ("CPUPROFILE", &by_env)] {
        // 0.5 CPU-s at the default 100 Hz: about 50 samples.
        assert!(
            (35..=70).contains(&stacks.total()),
            "{how}: {} samples",
            stacks.total()
        );
        assert!(
            stacks.cum("api_burn") * 100 >= stacks.total() * 95,
            "{how}: api_burn in {} of {} samples",
            stacks.cum("api_burn"),
            stacks.total()
        );
    }
}

/// gperftools' 1, 2 and 4 thread runs: every thread shows its own function
/// with its share of the samples.
#[test]
fn threads_1_2_4_each_show_their_own_functions() {
    let dir = tempdir();
    let program = build_c(dir.path(), "threads", false);
    for n in [1usize, 2, 4] {
        let profile = dir.path().join(format!("threads{n}.prof"));
        run_ok(preloaded(&program, &profile, 250).arg(n.to_string()));
        let stacks = NamedStacks::of(&read_profile(&profile));
        // Each thread burns 0.4 CPU-s: 100 samples at 250 Hz.
        for i in 0..4 {
            let name = format!("worker_{i}");
            let count = stacks.cum(&name);
            if i < n {
                assert!(
                    (80..=125).contains(&count),
                    "{n} threads: {name} has {count} samples"
                );
                assert!(
                    stacks
                        .stacks
                        .iter()
                        .filter(|s| s.0.contains(&name))
                        .all(|s| s.0.iter().any(|f| f == "thread_main" || f == "main")),
                    "{n} threads: {name} stacks must reach thread_main (or main, where it is inlined)"
                );
            } else {
                assert_eq!(count, 0, "{n} threads: {name} never ran");
            }
        }
    }
}

/// CPUPROFILE_REALTIME samples wall-clock time: a program that waits for
/// 1 s gets about 100 samples at 100 Hz in its wait, and almost none when
/// sampling CPU time.
#[test]
fn realtime_samples_wall_clock_time() {
    let dir = tempdir();
    let program = build_c(dir.path(), "sleeper", false);
    let wall = dir.path().join("wall.prof");
    run_ok(preloaded(&program, &wall, 100).env("CPUPROFILE_REALTIME", "1"));
    let wall = NamedStacks::of(&read_profile(&wall));
    // The 1 s wait is 100 samples whatever the load; the short burn takes
    // more wall time on a busy machine.
    assert!(
        (85..=115).contains(&wall.cum("sleep_wait")),
        "realtime: sleep_wait {}",
        wall.cum("sleep_wait")
    );
    assert!(wall.total() >= 100, "realtime: {} samples", wall.total());

    let cpu = dir.path().join("cpu.prof");
    run_ok(&mut preloaded(&program, &cpu, 100));
    let cpu = NamedStacks::of(&read_profile(&cpu));
    assert!(
        cpu.total() <= 12,
        "CPU time: {} samples for ~0.05 CPU-s",
        cpu.total()
    );
}

/// gperftools' fork+exec scenario: a program forking twice, each child
/// exec'ing a profiled program, leaves exactly three profiles: `path` and
/// `path_<pid>` for each child, all readable.
#[test]
fn fork_exec_twice_leaves_exactly_three_profiles() {
    let dir = tempdir();
    let program = build_c(dir.path(), "forkexec", false);
    let threads = build_c(dir.path(), "threads", false);
    let profile = dir.path().join("fe.prof");
    let out = run_ok(preloaded(&program, &profile, 100).arg(&threads).arg("1"));
    let pids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(pids.len(), 2);
    let files = files_starting_with(dir.path(), "fe.prof");
    let mut expected = vec![
        "fe.prof".to_string(),
        format!("fe.prof_{}", pids[0]),
        format!("fe.prof_{}", pids[1]),
    ];
    expected.sort();
    assert_eq!(files, expected);
    let parent = NamedStacks::of(&read_profile(&profile));
    assert!(
        parent.cum("parent_work") >= 20,
        "parent: {}",
        parent.cum("parent_work")
    );
    assert_eq!(
        parent.cum("worker_0"),
        0,
        "the children's work is not in the parent's file"
    );
    for pid in &pids {
        let child = NamedStacks::of(&read_profile(&dir.path().join(format!("fe.prof_{pid}"))));
        assert!(
            (30..=50).contains(&child.cum("worker_0")),
            "child {pid}: {}",
            child.cum("worker_0")
        );
        assert_eq!(
            child.cum("parent_work"),
            0,
            "child {pid} has the parent's samples"
        );
    }
}

/// ProfilerGetCurrentState: disabled before, enabled with the file name and
/// a growing sample count while running, disabled after.
#[test]
fn get_current_state_counts_samples() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let profile = dir.path().join("state.prof");
    let out = run_ok(
        std::process::Command::new(&api)
            .arg("start")
            .arg(&profile)
            .env_remove("CPUPROFILE"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{stdout}"))
            .to_string()
    };
    assert_eq!(
        line("before"),
        "before enabled=0 samples=0 name= all_threads=0"
    );
    let running = line("running");
    assert!(
        running.starts_with("running enabled=1 samples="),
        "{running}"
    );
    assert!(
        running.ends_with(&format!("name={} all_threads=1", profile.display())),
        "{running}"
    );
    let samples: i64 = running
        .split("samples=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (35..=70).contains(&samples),
        "0.5 CPU-s at 100 Hz gave {samples}"
    );
    assert_eq!(
        line("stopped"),
        "stopped enabled=0 samples=0 name= all_threads=0"
    );
    assert_eq!(
        total_samples(&read_profile(&profile)),
        samples.max(total_samples(&read_profile(&profile)))
    );
}

/// ProfilerFlush writes a complete, readable profile while profiling goes
/// on; the final profile has more samples.
#[test]
fn flush_writes_a_readable_profile_mid_run() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let profile = dir.path().join("flush.prof");
    let out = run_ok(
        std::process::Command::new(&api)
            .arg("flush")
            .arg(&profile)
            .env("CPUPROFILE_FREQUENCY", "1000"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bytes: i64 = stdout
        .trim()
        .strip_prefix("flushed bytes=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(bytes > 100, "{stdout}");
    let total = total_samples(&read_profile(&profile));
    assert!(
        (500..=700).contains(&total),
        "0.6 CPU-s at 1000 Hz: {total}"
    );
}

/// ProfilerStartWithOptions' filter_in_thread keeps only the samples it
/// accepts (it runs in the handler of the interrupted thread).
#[test]
fn filter_in_thread_keeps_only_accepted_threads() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let profile = dir.path().join("filter.prof");
    run_ok(
        std::process::Command::new(&api)
            .arg("filter")
            .arg(&profile)
            .env("CPUPROFILE_FREQUENCY", "500"),
    );
    let stacks = NamedStacks::of(&read_profile(&profile));
    assert!(
        (160..=240).contains(&stacks.cum("accepted_work")),
        "accepted: {}",
        stacks.cum("accepted_work")
    );
    assert_eq!(stacks.cum("rejected_work"), 0);
}

/// ProfilerGetStackTrace returns 0 before the first start (no module list
/// yet) and the caller's stack afterwards.
#[test]
fn get_stack_trace_unwinds_the_caller() {
    let dir = tempdir();
    let api = build_c(dir.path(), "api", true);
    let profile = dir.path().join("stack.prof");
    let out = run_ok(std::process::Command::new(&api).arg("stack").arg(&profile));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stack before start=0"), "{stdout}");
    let depth: i32 = stdout
        .split("stack depth=")
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // take_stack, main, __libc_start_call_main, __libc_start_main, _start.
    assert!((4..=8).contains(&depth), "{stdout}");
}

/// CPUPROFILESIGNAL: each press of the switch starts or stops profiling;
/// sessions are written to PATH.0, PATH.1.
#[test]
fn cpuprofilesignal_switch_writes_numbered_profiles() {
    let dir = tempdir();
    let program = build_c(dir.path(), "toggle", false);
    let profile = dir.path().join("sw.prof");
    run_ok(preloaded(&program, &profile, 200).env("CPUPROFILESIGNAL", "12"));
    assert_eq!(
        files_starting_with(dir.path(), "sw.prof"),
        ["sw.prof.0", "sw.prof.1"]
    );
    let first = NamedStacks::of(&read_profile(&dir.path().join("sw.prof.0")));
    let second = NamedStacks::of(&read_profile(&dir.path().join("sw.prof.1")));
    assert!(
        (45..=75).contains(&first.cum("first_burst")),
        "first: {}",
        first.cum("first_burst")
    );
    assert_eq!(first.cum("second_burst"), 0);
    assert!(
        (45..=75).contains(&second.cum("second_burst")),
        "second: {}",
        second.cum("second_burst")
    );
    assert_eq!(second.cum("first_burst"), 0);
}

/// Invalid settings get a clear message on stderr; profiling goes on with
/// the default.
#[test]
fn invalid_environment_values_are_reported() {
    let dir = tempdir();
    let program = build_c(dir.path(), "threads", false);
    let profile = dir.path().join("bad.prof");
    let out = run_ok(
        preloaded(&program, &profile, 100)
            .env("CPUPROFILE_FREQUENCY", "lots")
            .env("CPUPROFILE_TIMER_SIGNAL", "9")
            .arg("1"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CPUPROFILE_FREQUENCY=\"lots\" is not a rate"),
        "{stderr}"
    );
    assert!(
        stderr.contains("CPUPROFILE_TIMER_SIGNAL=\"9\" is not a usable signal"),
        "{stderr}"
    );
    let total = total_samples(&read_profile(&profile));
    assert!(
        (30..=50).contains(&total),
        "0.4 CPU-s at the default 100 Hz: {total}"
    );
}

/// The stop line libprofiler prints, then ours with drops and truncations.
#[test]
fn stop_prints_gperftools_line_then_drop_counts() {
    let dir = tempdir();
    let program = build_c(dir.path(), "threads", false);
    let profile = dir.path().join("line.prof");
    let out = run_ok(preloaded(&program, &profile, 100).arg("2"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("PROFILE: "))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let bytes = std::fs::metadata(&profile).unwrap().len();
    assert!(
        lines[0].starts_with("PROFILE: interrupts/evictions/bytes = "),
        "{stderr}"
    );
    assert!(lines[0].ends_with(&format!("/{bytes}")), "{stderr}");
    assert!(
        lines[1].starts_with("PROFILE: samples/dropped/truncated = "),
        "{stderr}"
    );
    assert!(
        lines[1].contains("/0/0 "),
        "no drops or truncations expected: {stderr}"
    );
}

/// setuid programs are not profiled (the guide's security note).
#[test]
fn setuid_programs_are_not_profiled() {
    // SAFETY: getuid is always safe.
    if unsafe { libc::getuid() } != 0 || !require_tool("setpriv") {
        eprintln!("SKIPPED: needs root and setpriv to run a setuid program as another user");
        return;
    }
    let dir = tempdir();
    let program = build_c(dir.path(), "api", true);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let profile = dir.path().join("suid.prof");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&program)
        .arg("env")
        .env("CPUPROFILE", &profile)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "SKIPPED: cannot run a setuid program here: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("not profiling a setuid/setgid program") {
        assert!(!profile.exists(), "no profile for a setuid program");
    } else {
        // A nosuid mount runs it without privileges: then it is a normal program.
        eprintln!("SKIPPED: the temporary directory ignores setuid bits: {stderr}");
    }
}

/// A program written against gperftools' own header (libgoogle-perftools-dev)
/// compiles unchanged and links with -lcpuprof instead of -lprofiler.
#[test]
fn gperftools_own_header_links_against_libcpuprof() {
    if !std::path::Path::new("/usr/include/gperftools/profiler.h").exists() {
        if cpuprof_testkit::peers_required() {
            panic!("gperftools' profiler.h (libgoogle-perftools-dev) is missing");
        }
        eprintln!("SKIPPED: gperftools' profiler.h is not installed (libgoogle-perftools-dev)");
        return;
    }
    let dir = tempdir();
    let api = build_c_with(dir.path(), "api", true, None);
    let profile = dir.path().join("theirs.prof");
    let out = run_ok(std::process::Command::new(&api).arg("start").arg(&profile));
    assert!(String::from_utf8_lossy(&out.stdout).contains("running enabled=1"));
    let stacks = NamedStacks::of(&read_profile(&profile));
    assert!(
        stacks.cum("api_burn") >= 35,
        "{} samples of api_burn",
        stacks.cum("api_burn")
    );
}
