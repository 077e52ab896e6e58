//! Every way a profiled process leaves keeps its profile, and no profile
//! file is ever empty (issue 15): `_exit` and `_Exit`; `exec` (the image
//! before it writes its own file, the exec'd program its `path_<pid>`); a
//! failed exec (profiling goes on, one file); `vfork` + exec (the parent's
//! profile intact); a process without samples (a valid zero-sample
//! profile); a real `gcc` build. Each profile is read by our reader and
//! report and by google-pprof.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const HZ: u32 = 1000;

/// Runs `leave WAY SECONDS [ARGS]` under the agent at [`HZ`], writing
/// `dir/p.prof`; returns its stdout and the CPU seconds it used.
fn run_leave(dir: &Path, program: &Path, args: &[&str]) -> (String, f64) {
    let (out, cpu) = run_measured(preloaded(program, &dir.join("p.prof"), HZ).args(args));
    (String::from_utf8_lossy(&out.stdout).into_owned(), cpu)
}

/// The profile accounts for the CPU time: samples × period ≈ CPU-seconds,
/// within 10% (what fidelity.rs asks). The period is the header's: the
/// 1 ms asked for with perf and POSIX timers, so samples ≈ CPU-s × 1000;
/// with the tick-bound itimer fallback, the measured one.
fn assert_rate(what: &str, report: &cpuprof_testkit::TextReport, profile: &Path, cpu: f64) {
    let period = read_profile(profile).period as f64 / 1e9;
    let expected = cpu / period;
    let samples = report.total;
    println!("{what}: {samples} samples for {cpu:.3} CPU-s (expected {expected:.0})");
    assert!(
        (samples as f64 - expected).abs() <= expected * 0.10,
        "{what}: {samples} samples of {period} s for {cpu:.3} CPU-s (expected {expected:.0})"
    );
}

/// The cum share (%) of function `name` in `report`.
fn share(report: &cpuprof_testkit::TextReport, name: &str) -> f64 {
    let cum = report.row(name).map_or(0, |r| r.cum);
    100.0 * cum as f64 / report.total.max(1) as f64
}

fn leave_program(dir: &Path) -> PathBuf {
    build_c(dir, "leave", false)
}

fn leaves_a_complete_profile(way: &str) {
    let dir = tempdir();
    let program = leave_program(dir.path());
    let (_, cpu) = run_leave(dir.path(), &program, &[way, "0.5"]);
    assert_eq!(files_starting_with(dir.path(), "p.prof"), ["p.prof"]);
    let profile = dir.path().join("p.prof");
    let report = read_with_google_pprof(&program, &profile);
    assert_rate(way, &report, &profile, cpu);
    assert!(
        share(&report, "before_leaving") >= 90.0,
        "{way}: {report:?}"
    );
}

#[test]
fn underscore_exit_writes_the_profile() {
    leaves_a_complete_profile("_exit");
}

#[test]
fn underscore_capital_exit_writes_the_profile() {
    leaves_a_complete_profile("_Exit");
}

/// exec of /bin/true after 0.5 CPU-s: the image before the exec wrote its
/// samples to `p.prof`; /bin/true (same pid) wrote its own `p.prof_<pid>`.
#[test]
fn exec_writes_the_replaced_images_profile() {
    let dir = tempdir();
    let program = leave_program(dir.path());
    let (_, cpu) = run_leave(dir.path(), &program, &["exec", "0.5", "/bin/true"]);
    let files = files_starting_with(dir.path(), "p.prof");
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[1].starts_with("p.prof_"), "{files:?}");
    let profile = dir.path().join("p.prof");
    let before = read_with_google_pprof(&program, &profile);
    // The CPU time includes /bin/true's few milliseconds.
    assert_rate("before exec", &before, &profile, cpu);
    assert!(share(&before, "before_leaving") >= 90.0, "{before:?}");
    let exec_d = read_with_google_pprof(Path::new("/bin/true"), &dir.path().join(&files[1]));
    // /bin/true runs for a few milliseconds: its own, nearly empty profile.
    assert!(exec_d.total <= 20, "/bin/true: {exec_d:?}");
}

/// An execv that fails (no such file) resumes profiling: one complete file
/// at exit, with the samples from before and after the attempt.
#[test]
fn failed_exec_resumes_profiling() {
    let dir = tempdir();
    let program = leave_program(dir.path());
    let (_, cpu) = run_leave(dir.path(), &program, &["exec-missing", "0.25"]);
    assert_eq!(files_starting_with(dir.path(), "p.prof"), ["p.prof"]);
    let profile = dir.path().join("p.prof");
    let report = read_with_google_pprof(&program, &profile);
    assert_rate("failed exec", &report, &profile, cpu);
    for name in ["before_leaving", "after_failed_exec"] {
        let share = share(&report, name);
        assert!((35.0..=65.0).contains(&share), "{name}: {report:?}");
    }
}

/// vfork + exec: the child shares the parent's memory, so the agent does
/// nothing there; the parent's profile is whole, the exec'd program has its
/// own, and a vfork child whose exec fails and which `_exit`s writes none.
#[test]
fn vfork_exec_keeps_the_parents_profile() {
    let dir = tempdir();
    let program = leave_program(dir.path());
    let (stdout, cpu) = run_leave(dir.path(), &program, &["vfork-exec", "0.25", "/bin/true"]);
    let child = format!("p.prof_{}", stdout.trim());
    assert_eq!(
        files_starting_with(dir.path(), "p.prof"),
        ["p.prof".to_string(), child.clone()]
    );
    let profile = dir.path().join("p.prof");
    let parent = read_with_google_pprof(&program, &profile);
    assert_rate("vfork parent", &parent, &profile, cpu);
    for name in ["before_leaving", "after_vfork"] {
        let share = share(&parent, name);
        assert!((35.0..=65.0).contains(&share), "{name}: {parent:?}");
    }
    read_with_google_pprof(Path::new("/bin/true"), &dir.path().join(child));
}

/// A process that collects no sample still writes a valid profile (read
/// by google-pprof and Go pprof), never an empty file; one that leaves by
/// the raw exit_group system call writes nothing, not even an empty file,
/// and an earlier run's profile at its path is gone.
#[test]
fn no_samples_still_make_a_valid_profile() {
    let dir = tempdir();
    let program = leave_program(dir.path());
    for way in ["return", "_exit"] {
        let profile = dir.path().join(format!("{way}.prof"));
        run_ok(preloaded(&program, &profile, 100).args([way, "0"]));
        let report = read_with_google_pprof(&program, &profile);
        assert_eq!(report.total, 0, "{way}: {report:?}");
        if require_tool("pprof") {
            let out = run_ok(
                Command::new("pprof")
                    .arg("-top")
                    .arg(&program)
                    .arg(&profile),
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("of 0 total"), "Go pprof, {way}: {text}");
        }
    }
    let profile = dir.path().join("exit_group.prof");
    std::fs::write(&profile, "an earlier run's profile").unwrap();
    run_ok(preloaded(&program, &profile, 100).args(["exit_group", "0"]));
    assert_eq!(
        files_starting_with(dir.path(), "exit_group.prof"),
        Vec::<String>::new()
    );
}

/// execl, execle and execlp are C-variadic: our naked wrappers pass every
/// argument, the stack-passed ones and execle's environment included.
#[test]
fn variadic_execs_pass_their_arguments() {
    let dir = tempdir();
    let program = leave_program(dir.path());
    let (stdout, _) = run_leave(dir.path(), &program, &["execl-args", "0"]);
    assert_eq!(
        stdout,
        "a0,a1,a2,a3,a4,a5,a6,a7,\nfrom-execle second\nexeclp found\n"
    );
    for file in files_starting_with(dir.path(), "p.prof") {
        assert!(!file.ends_with(".tmp"), "{file}");
        read_profile(&dir.path().join(file));
    }
}

/// A real build under the agent: gcc runs cc1, as, collect2 and ld
/// (through vfork or posix_spawn, exec, exit): no file is empty or left
/// temporary, and every one reads in google-pprof.
#[test]
fn gcc_build_leaves_only_complete_profiles() {
    let dir = tempdir();
    let source = dir.path().join("hello.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
    )
    .unwrap();
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let gcc = Path::new("/usr/bin/gcc");
    run_ok(
        preloaded(gcc, &profiles.join("build.prof"), 1000)
            .arg("-O2")
            .arg("-o")
            .arg(dir.path().join("hello"))
            .arg(&source),
    );
    let out = run_ok(&mut Command::new(dir.path().join("hello")));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    let files = files_starting_with(&profiles, "");
    // gcc itself, and at least cc1, as and ld (collect2 execs it).
    assert!(files.len() >= 4, "{files:?}");
    assert!(
        files.iter().all(|f| f.starts_with("build.prof")),
        "{files:?}"
    );
    let mut total = 0;
    for file in &files {
        let path = profiles.join(file);
        let program = main_program(&path);
        total += read_with_google_pprof(&program, &path).total;
    }
    assert!(total > 0, "no sample in the whole build: {files:?}");
}

/// The program a profile was taken of: its first mapping (the main
/// program's maps lines come first).
fn main_program(profile: &Path) -> PathBuf {
    let parsed = read_profile(profile);
    let first = parsed
        .mappings
        .iter()
        .find(|m| m.path.starts_with('/'))
        .unwrap_or_else(|| panic!("{}: no mapped file", profile.display()));
    PathBuf::from(&first.path)
}
