//! Issue 13, items 1-3 on the agent's side: profile.proto with each
//! sample's thread (`CPUPROFILE_FORMAT=pprof`), read by Go pprof
//! (`-tags`, `-tagfocus`) and our report; wall-clock profiles of every
//! thread with its state (`CPUPROFILE_REALTIME=1`), against libprofiler's
//! realtime mode; profiles kept on crashes, with the same death (signal,
//! core dump) as without the agent, and programs that handle their own
//! faults left alone.

mod common;

use std::collections::HashMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::*;
use cpuprof_profile::{LabelValue, Profile};

fn label<'a>(sample: &'a cpuprof_profile::Sample, key: &str) -> Option<&'a str> {
    sample
        .labels
        .iter()
        .find(|l| l.key == key)
        .and_then(|l| match &l.value {
            LabelValue::Str(s) => Some(s.as_str()),
            _ => None,
        })
}

/// Sample counts (the first value) per value of label `key`.
fn counts_by_label(profile: &Profile, key: &str) -> HashMap<String, i64> {
    let mut counts = HashMap::new();
    for sample in &profile.samples {
        let value = label(sample, key).unwrap_or("").to_string();
        *counts.entry(value).or_insert(0) += sample.values[0];
    }
    counts
}

/// Go pprof's `-tags` table for `key`: value → seconds (its default
/// sample value is CPU or wall time).
fn go_pprof_tags(profile: &Path, key: &str, extra: &[&str]) -> HashMap<String, f64> {
    let out = Command::new("pprof")
        .args(["-tags"])
        .args(extra)
        .arg(profile)
        .output()
        .expect("pprof -tags");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pprof -tags: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut table = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with(&format!("{key}:")) {
            inside = true;
            continue;
        }
        if trimmed.is_empty() {
            inside = false;
            continue;
        }
        // "598.0ms (54.56%): compute-1"
        if inside {
            let (amount, rest) = trimmed.split_once(' ').unwrap_or(("", ""));
            let value = rest.split_once("): ").map_or("", |(_, v)| v).to_string();
            table.insert(value, seconds_of(amount));
        }
    }
    assert!(!table.is_empty(), "no {key} in pprof -tags:\n{text}");
    table
}

/// "598.0ms" → 0.598.
fn seconds_of(amount: &str) -> f64 {
    for (unit, scale) in [
        ("ms", 1e-3),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ns", 1e-9),
        ("s", 1.0),
    ] {
        if let Some(number) = amount.strip_suffix(unit) {
            return number.parse::<f64>().unwrap_or_else(|_| panic!("{amount}")) * scale;
        }
    }
    panic!("not a duration: {amount}")
}

/// The Build ID `readelf -n` prints for `path`.
fn readelf_build_id(path: &str) -> Option<String> {
    let out = Command::new("readelf").arg("-n").arg(path).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
}

/// Our text report of `profile` in samples (its first value).
fn report_in_samples(profile: &Path) -> cpuprof_testkit::TextReport {
    let options = cpuprof_report::Options {
        sample_index: Some(0),
        ..Default::default()
    };
    our_report_with(profile, &options)
}

#[test]
fn named_threads_are_labelled_in_profile_proto() {
    let dir = tempdir();
    let program = build_c(dir.path(), "named_threads", false);
    let profile = dir.path().join("threads.pb.gz");
    let hz = 500;
    let out = run_ok(preloaded(&program, &profile, hz).env("CPUPROFILE_FORMAT", "pprof"));
    // "NAME CPU_SECONDS" per thread, from its own clock.
    let measured: HashMap<String, f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, seconds) = l.split_once(' ')?;
            Some((name.to_string(), seconds.parse().ok()?))
        })
        .collect();
    assert_eq!(measured.len(), 3, "{measured:?}");

    let parsed = read_any(&profile);
    assert_eq!(parsed.period, 1_000_000_000 / i64::from(hz));
    assert!(parsed.duration_nanos > 0 && parsed.time_nanos > 0);
    let kinds: Vec<String> = parsed
        .sample_types
        .iter()
        .map(|t| format!("{}/{}", t.kind, t.unit))
        .collect();
    assert_eq!(kinds, ["samples/count", "cpu/nanoseconds"]);
    // Our reader: samples per name, and one thread id per name.
    let counts = counts_by_label(&parsed, "thread_name");
    for (name, seconds) in &measured {
        let expected = seconds * f64::from(hz);
        let got = *counts.get(name).unwrap_or(&0) as f64;
        assert!(
            (got - expected).abs() <= 0.1 * expected,
            "{name}: {got} samples for {seconds} CPU-s at {hz} Hz"
        );
        let tids: std::collections::HashSet<&str> = parsed
            .samples
            .iter()
            .filter(|s| label(s, "thread_name") == Some(name))
            .filter_map(|s| label(s, "thread_id"))
            .collect();
        assert_eq!(tids.len(), 1, "{name}: thread ids {tids:?}");
        assert!(tids.iter().all(|t| t.parse::<i32>().is_ok()));
    }
    assert!(
        parsed
            .samples
            .iter()
            .all(|s| label(s, "thread_id").is_some()),
        "every sample has its thread"
    );
    // Build ids: the program's and libc's, as readelf reads them.
    for mapping in &parsed.mappings {
        let file = mapping.path.as_str();
        if file.ends_with("/named_threads") || file.contains("libc.so") {
            assert_eq!(
                Some(mapping.build_id.clone()),
                readelf_build_id(file),
                "build id of {file}"
            );
        }
    }
    assert!(parsed
        .mappings
        .iter()
        .any(|m| m.path.ends_with("/named_threads")));
    // Our report reads it (as `cpuprof report --text` runs it), in
    // samples: the three functions with their threads' counts.
    let report = report_in_samples(&profile);
    for (function, name) in [
        ("compute_one", "compute-1"),
        ("compute_two", "compute-2"),
        ("io_work", "io"),
    ] {
        let cum = report.row(function).map_or(0, |r| r.cum);
        assert!(
            (cum - counts[name]).abs() <= counts[name] / 20 + 2,
            "{function}: {cum} samples in our report, {} labelled {name}",
            counts[name]
        );
    }

    if !require_tool("pprof") {
        return;
    }
    // Go pprof -tags: the three names, with their CPU time within ±10%.
    let tags = go_pprof_tags(&profile, "thread_name", &[]);
    for (name, seconds) in &measured {
        let got = tags.get(name).copied().unwrap_or(0.0);
        assert!(
            (got - seconds).abs() <= 0.1 * seconds,
            "pprof -tags: {name} {got} s, its clock {seconds} s ({tags:?})"
        );
    }
    assert_eq!(go_pprof_tags(&profile, "thread_id", &[]).len(), tags.len());
    // -tagfocus keeps one thread's stacks.
    let out = Command::new("pprof")
        .args(["-top", "-tagfocus=thread_name=compute-1"])
        .arg(&profile)
        .output()
        .unwrap();
    let top = String::from_utf8_lossy(&out.stdout);
    assert!(top.contains("compute_one"), "{top}");
    assert!(
        !top.contains("compute_two") && !top.contains("io_work"),
        "{top}"
    );
}

/// The first frame (leaf) named by Go pprof `-traces` for each trace of
/// the samples `-tagfocus` keeps, with its state label: (leaf, state) → seconds.
fn go_pprof_leaves(profile: &Path, focus: &str) -> HashMap<(String, String), f64> {
    let out = Command::new("pprof")
        .args(["-traces", &format!("-tagfocus={focus}")])
        .arg(profile)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut leaves = HashMap::new();
    let mut state = String::new();
    for block in text.split("-----------+") {
        for line in block.lines() {
            let trimmed = line.trim();
            if let Some(value) = trimmed.strip_prefix("state:") {
                state = value.trim().to_string();
            }
        }
        // The first line that starts with an amount is the leaf.
        if let Some(line) = block.lines().find(|l| {
            l.trim_start()
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        }) {
            let mut fields = line.split_whitespace();
            let amount = seconds_of(fields.next().unwrap());
            let leaf = fields.next().unwrap_or("").to_string();
            *leaves.entry((leaf, state.clone())).or_insert(0.0) += amount;
        }
    }
    leaves
}

#[test]
fn realtime_samples_every_thread_running_or_waiting() {
    let dir = tempdir();
    let program = build_c(dir.path(), "wall_threads", false);
    let profile = dir.path().join("wall.pb.gz");
    let hz = 200;
    let seconds = 2.0;
    let expected = seconds * f64::from(hz);
    let out = run_ok(
        preloaded(&program, &profile, hz)
            .env("CPUPROFILE_FORMAT", "pprof")
            .env("CPUPROFILE_REALTIME", "1"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("read 1\n"),
        "the read still works: {stdout}"
    );

    let parsed = read_any(&profile);
    assert_eq!(parsed.sample_types[1].kind, "wall");
    let counts = counts_by_label(&parsed, "thread_name");
    for name in ["spinner", "reader"] {
        let got = *counts.get(name).unwrap_or(&0) as f64;
        assert!(
            (got - expected).abs() <= 0.1 * expected,
            "{name}: {got} samples in {seconds} s at {hz} Hz ({counts:?})"
        );
    }
    let states = |name: &str| -> HashMap<String, i64> {
        let mut states = HashMap::new();
        for sample in parsed
            .samples
            .iter()
            .filter(|s| label(s, "thread_name") == Some(name))
        {
            *states
                .entry(label(sample, "state").unwrap_or("").to_string())
                .or_insert(0) += sample.values[0];
        }
        states
    };
    let share = |states: &HashMap<String, i64>, state: &str| {
        *states.get(state).unwrap_or(&0) as f64 / states.values().sum::<i64>().max(1) as f64
    };
    let reader = states("reader");
    let spinner = states("spinner");
    assert!(share(&reader, "waiting") >= 0.95, "reader: {reader:?}");
    // The spinner is on CPU as much as the machine lets it: running in
    // about as many periods as its CPU time covers (more: a period counts
    // as running from a tenth of it on).
    let spinner_cpu: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("spinner cpu "))
        .and_then(|v| v.parse().ok())
        .expect("spinner cpu");
    let on_cpu = (spinner_cpu / seconds).min(1.0);
    assert!(
        share(&spinner, "running") >= on_cpu.min(0.9) - 0.05,
        "spinner: {spinner:?}, on CPU {:.0}% of the time",
        on_cpu * 100.0
    );
    eprintln!("cpuprof realtime at {hz} Hz for {seconds} s: {counts:?}; reader {reader:?}; spinner {spinner:?}");

    if require_tool("pprof") {
        // The blocked thread's stacks end in read, labelled waiting.
        let leaves = go_pprof_leaves(&profile, "thread_name=reader");
        let total: f64 = leaves.values().sum();
        let in_read: f64 = leaves
            .iter()
            .filter(|((leaf, state), _)| leaf.contains("read") && state == "waiting")
            .map(|(_, s)| s)
            .sum();
        assert!(
            in_read >= 0.95 * total && total > 0.0,
            "reader's leaves: {leaves:?}"
        );
    }

    // gperftools' format in realtime mode: the same samples, no labels.
    let legacy = dir.path().join("wall.prof");
    run_ok(preloaded(&program, &legacy, hz).env("CPUPROFILE_REALTIME", "1"));
    let legacy = NamedStacks::of(&read_profile(&legacy));
    let waiting = legacy.cum("wait_for_pipe") as f64;
    assert!(
        (waiting - expected).abs() <= 0.1 * expected,
        "gperftools format: wait_for_pipe {waiting}"
    );

    // libprofiler's realtime mode: one process-wide SIGALRM timer; the
    // kernel delivers it to a thread of its choice, and the blocked
    // reader gets (almost) nothing.
    if let Some(libprofiler) = cpuprof_testkit::libprofiler() {
        let theirs = dir.path().join("libprofiler.prof");
        run_ok(
            Command::new(&program)
                .env("LD_PRELOAD", libprofiler)
                .env("CPUPROFILE", &theirs)
                .env("CPUPROFILE_FREQUENCY", hz.to_string())
                .env("CPUPROFILE_REALTIME", "1")
                .stdin(Stdio::null()),
        );
        let theirs = NamedStacks::of(&read_profile(&theirs));
        let (reader, spinner) = (theirs.cum("wait_for_pipe"), theirs.cum("spin_wall"));
        eprintln!(
            "libprofiler realtime at {hz} Hz for {seconds} s: {} samples, reader (wait_for_pipe) {reader}, spinner (spin_wall) {spinner}",
            theirs.total()
        );
        assert!(
            (reader as f64) < 0.1 * expected,
            "libprofiler's realtime mode samples the blocked reader {reader} times"
        );
    }
}

/// Runs `crash MODE`, with or without the agent, in `dir` (where the core
/// goes, `core_pattern` permitting), with core dumps allowed up to the
/// hard limit.
fn run_crash(program: &Path, dir: &Path, mode: &str, agent: Option<&[(&str, &Path)]>) -> Output {
    let mut cmd = Command::new(program);
    cmd.arg(mode)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("CPUPROFILE")
        .env_remove("CPUPROFILE_USE_PID")
        .env_remove("CPUPROFILE_REALTIME")
        .env_remove("CPUPROFILE_FORMAT");
    if let Some(vars) = agent {
        cmd.env("LD_PRELOAD", agent_lib())
            .env("CPUPROFILE_FREQUENCY", "500");
        for (key, value) in vars {
            cmd.env(key, value);
        }
    }
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_CORE, &mut limit);
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_CORE, &limit);
            Ok(())
        });
    }
    let out = cmd.output().expect("run crash");
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("core") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    out
}

/// (signal, core dumped) of a process's end.
fn death(out: &Output) -> (Option<i32>, bool) {
    (out.status.signal(), out.status.core_dumped())
}

#[test]
fn a_crash_keeps_the_profile_and_the_same_death() {
    let dir = tempdir();
    let program = build_c(dir.path(), "crash", false);
    for (mode, signal) in [("segv", libc::SIGSEGV), ("abort", libc::SIGABRT)] {
        let without = run_crash(&program, dir.path(), mode, None);
        assert_eq!(
            without.status.signal(),
            Some(signal),
            "{mode} without the agent"
        );
        for format in ["gperftools", "pprof"] {
            let profile = dir.path().join(format!("{mode}-{format}.prof"));
            let with = run_crash(
                &program,
                dir.path(),
                mode,
                Some(&[
                    ("CPUPROFILE", &profile),
                    ("CPUPROFILE_FORMAT", Path::new(format)),
                ]),
            );
            assert_eq!(
                death(&with),
                death(&without),
                "{mode} ({format}): (signal, core dumped) with the agent vs without"
            );
            // A crash writes gperftools' format, whatever the session's.
            let report = read_with_google_pprof(&program, &profile);
            let burn = report.row("burn_before_crash").map_or(0, |r| r.cum);
            assert!(
                (450..=550).contains(&burn),
                "{mode} ({format}): 1 CPU-s at 500 Hz before the crash, {burn} samples in burn_before_crash"
            );
        }
    }
}

#[test]
fn a_program_that_recovers_from_its_faults_is_left_alone() {
    let dir = tempdir();
    let program = build_c(dir.path(), "crash", false);
    // Its handler installed after the agent's (CPUPROFILE starts at load),
    // and before it (ProfilerStart called after the handler is in place).
    for (mode, variable) in [
        ("recover", "CPUPROFILE"),
        ("early-recover", "CRASH_PROFILE"),
    ] {
        let profile = dir.path().join(format!("{mode}.prof"));
        let without = run_crash(&program, dir.path(), mode, None);
        let with = run_crash(&program, dir.path(), mode, Some(&[(variable, &profile)]));
        assert!(with.status.success(), "{mode}: {:?}", with.status);
        assert_eq!(
            String::from_utf8_lossy(&with.stdout),
            String::from_utf8_lossy(&without.stdout),
            "{mode}: the program's output with the agent vs without"
        );
        assert!(
            String::from_utf8_lossy(&with.stdout)
                .contains("recovered 3\nprofile before exit: absent\n"),
            "{mode}: nothing may be written before the exit"
        );
        let report = read_with_google_pprof(&program, &profile);
        assert!(
            report.row("burn_after_recovery").is_some(),
            "{mode}: the profile written at exit"
        );
    }
}

/// A handler installed before profiling starts that gives up (prints,
/// puts SIG_DFL back and returns, as crash reporters do): it runs, the
/// process dies of the same signal, and the agent wrote the profile.
#[test]
fn an_earlier_handler_is_chained_to() {
    let dir = tempdir();
    let program = build_c(dir.path(), "crash", false);
    let profile = dir.path().join("reporter.prof");
    let without = run_crash(&program, dir.path(), "early-reporter", None);
    let with = run_crash(
        &program,
        dir.path(),
        "early-reporter",
        Some(&[("CRASH_PROFILE", &profile)]),
    );
    assert_eq!(String::from_utf8_lossy(&with.stdout), "reporter\n");
    assert_eq!(with.stdout, without.stdout);
    assert_eq!(death(&with), death(&without));
    assert_eq!(with.status.signal(), Some(libc::SIGSEGV));
    let report = read_with_google_pprof(&program, &profile);
    let burn = report.row("burn_before_crash").map_or(0, |r| r.cum);
    assert!(
        (450..=550).contains(&burn),
        "{burn} samples in burn_before_crash"
    );
}
