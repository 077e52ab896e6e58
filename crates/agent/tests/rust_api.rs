//! The Rust API: ProfilerGuard in this (Rust) process; and linking the
//! rlib never starts profiling from CPUPROFILE.

use std::hint::black_box;
use std::process::Command;

mod common;
use common::thread_cpu_seconds;

#[inline(never)]
fn rust_api_burn(seconds: f64) -> u64 {
    let end = thread_cpu_seconds() + seconds;
    let mut x = 1u64;
    while thread_cpu_seconds() < end {
        for _ in 0..10_000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

/// The guard profiles every thread of the process and writes a readable
/// profile at stop; a second guard cannot start while one runs.
#[test]
fn guard_profiles_threads_and_writes_at_stop() {
    if std::env::var_os("CPUPROF_RLIB_CHILD").is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.prof");
    let settings = cpuprof::Settings {
        frequency: 1000,
        ..Default::default()
    };
    let guard = cpuprof::ProfilerGuard::start_with(&path, settings.clone()).unwrap();
    assert!(matches!(
        cpuprof::ProfilerGuard::start_with(dir.path().join("other.prof"), settings),
        Err(cpuprof::Error::Start(cpuprof::StartError::AlreadyRunning))
    ));
    let state = cpuprof::state();
    assert!(state.enabled);
    assert_eq!(state.path, path.to_str().unwrap());
    let workers: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| rust_api_burn(0.3)))
        .collect();
    for w in workers {
        black_box(w.join().unwrap());
    }
    let summary = guard.stop().unwrap();
    assert!(!cpuprof::state().enabled);
    assert!((500..=700).contains(&summary.samples), "{summary:?}");
    let data = std::fs::read(&path).unwrap();
    assert_eq!(data.len(), summary.bytes);
    let profile = cpuprof_profile::gperftools::read(&data).unwrap();
    let total: i64 = profile.samples.iter().map(|s| s.values[0]).sum();
    assert_eq!(total as u64, summary.samples);
}

/// Run as a child with CPUPROFILE set: the rlib's constructor must not
/// start profiling (only libcpuprof.so does).
#[test]
fn linking_the_rlib_does_not_start_from_cpuprofile() {
    if std::env::var_os("CPUPROF_RLIB_CHILD").is_some() {
        assert!(
            !cpuprof::state().enabled,
            "profiling started from CPUPROFILE in a program linking the rlib"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("must-not-exist.prof");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "linking_the_rlib_does_not_start_from_cpuprofile",
            "--test-threads=1",
        ])
        .env("CPUPROF_RLIB_CHILD", "1")
        .env("CPUPROFILE", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!path.exists(), "a profile was started from CPUPROFILE");
}
