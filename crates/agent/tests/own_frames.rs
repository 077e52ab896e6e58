//! Issue 24, item 3: the agent writes none of its own frames (the
//! thread-start trampoline `cpuprof::threads::trampoline`, its interposed
//! functions, anything of libcpuprof.so or of the agent crate) into a
//! profile, in either format, whether it is preloaded (CPUPROFILE) or
//! linked into a Rust program (ProfilerGuard): Go pprof and google-pprof,
//! which remove nothing of ours, see the program alone. (`cpuprof
//! record`, its `convert --to collapsed` and the HTTP endpoint's windows:
//! crates/cli/tests/misleading.rs.)

mod common;

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use common::{build_c, preloaded, require_tool, run_ok, tempdir, thread_cpu_seconds};

/// The lines of a tool's output naming a frame of the agent.
fn agent_frames(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            [
                "cpuprof::",
                "_ZN7cpuprof",
                "7cpuprof",
                "libcpuprof",
                // the agent's thread wrapper (not glibc's dl-trampoline.h)
                "threads::trampoline",
            ]
            .iter()
            .any(|n| l.contains(n))
        })
        .collect()
}

/// The part of `text` from the line starting with `start` to the next
/// line starting with `end`.
fn section<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let Some(at) = text
        .find(&format!("\n{start}"))
        .map(|i| i + 1)
        .or_else(|| text.starts_with(start).then_some(0))
    else {
        panic!("no {start:?} in:\n{text}");
    };
    let rest = &text[at + start.len()..];
    match rest.find(&format!("\n{end}")) {
        Some(stop) => &rest[..stop],
        None => rest,
    }
}

/// `pprof ARGS BINARY PROFILE`'s standard output (Go pprof).
fn go_pprof(args: &[&str], binary: &Path, profile: &Path) -> String {
    let out = run_ok(
        Command::new("pprof")
            .args(args)
            .arg(binary)
            .arg(profile)
            .env("PPROF_TMPDIR", profile.parent().unwrap()),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `google-pprof ARGS BINARY PROFILE`'s standard output.
fn google_pprof(args: &[&str], binary: &Path, profile: &Path) -> String {
    let out = run_ok(
        Command::new("google-pprof")
            .args(args)
            .arg(binary)
            .arg(profile),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Reads `profile` of `binary` with every tool that reads its format and
/// asserts that none names a frame of the agent, and that each sees
/// `expected` (a function of the program's threads).
fn assert_program_alone(binary: &Path, profile: &Path, gperftools: bool, expected: &str) {
    let traces = go_pprof(&["-traces"], binary, profile);
    assert!(traces.contains(expected), "Go pprof -traces:\n{traces}");
    assert_eq!(
        agent_frames(&traces),
        Vec::<&str>::new(),
        "Go pprof -traces of {}",
        profile.display()
    );
    // -raw: every location with its functions (the mappings after them
    // list the process's objects, libcpuprof.so among them).
    let raw = go_pprof(&["-raw"], binary, profile);
    let locations = section(&raw, "Locations", "Mappings");
    assert!(locations.contains(expected), "Go pprof -raw:\n{raw}");
    assert_eq!(agent_frames(locations), Vec::<&str>::new(), "Go pprof -raw");
    if gperftools {
        let text = google_pprof(&["--text", "--nodecount=1000"], binary, profile);
        assert!(text.contains(expected), "google-pprof --text:\n{text}");
        assert_eq!(
            agent_frames(&text),
            Vec::<&str>::new(),
            "google-pprof --text"
        );
        // --raw: every address of the profile with its symbol.
        let raw = google_pprof(&["--raw"], binary, profile);
        let symbols = section(&raw, "--- symbol", "---");
        assert!(symbols.contains(expected), "google-pprof --raw:\n{raw}");
        assert_eq!(
            agent_frames(symbols),
            Vec::<&str>::new(),
            "google-pprof --raw"
        );
    }
}

#[test]
fn no_profile_the_agent_writes_holds_its_own_frames() {
    if std::env::var_os("CPUPROF_RLIB_CHILD").is_some()
        || !require_tool("gcc")
        || !require_tool("pprof")
        || !require_tool("google-pprof")
    {
        return;
    }
    let dir = tempdir();
    // A threaded C program under the preloaded library (CPUPROFILE), in
    // both formats: each thread starts in the agent's trampoline.
    let threads = build_c(dir.path(), "threads", false);
    for (format, gperftools) in [("gperftools", true), ("pprof", false)] {
        let profile = dir.path().join(format!("threads.{format}"));
        run_ok(
            preloaded(&threads, &profile, 500)
                .arg("3")
                .env("CPUPROFILE_FORMAT", format),
        );
        assert_program_alone(&threads, &profile, gperftools, "worker_2");
    }

    // A Rust program using the guard (this test): its threads are made
    // through the agent's pthread_create too, and the agent's code is the
    // program's.
    let exe = std::env::current_exe().unwrap();
    for (format, gperftools) in [
        (cpuprof::ProfileFormat::Gperftools, true),
        (cpuprof::ProfileFormat::Pprof, false),
    ] {
        let profile = dir.path().join(format!("guard-{format:?}.prof"));
        let settings = cpuprof::Settings {
            frequency: 500,
            format,
            ..Default::default()
        };
        let guard = cpuprof::ProfilerGuard::start_with(&profile, settings).unwrap();
        let workers: Vec<_> = (0..2)
            .map(|_| std::thread::spawn(|| own_frames_burn(0.3)))
            .collect();
        for w in workers {
            black_box(w.join().unwrap());
        }
        guard.stop().unwrap();
        assert_program_alone(&exe, &profile, gperftools, "own_frames_burn");
    }
}

#[inline(never)]
fn own_frames_burn(seconds: f64) -> u64 {
    let end = thread_cpu_seconds() + seconds;
    let mut x = 1u64;
    while thread_cpu_seconds() < end {
        for _ in 0..10_000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}
