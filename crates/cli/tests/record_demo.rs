//! `cpuprof record` and `cpuprof demo`, end to end: the agent library found
//! beside the binary, the profile written, the report printed.

use cpuprof_testkit::{build_spin, TempDir};

mod common;
use common::cpuprof;

/// Flat share of `name` in a printed text report, in percent.
fn flat_percent(report: &str, name: &str) -> f64 {
    let row = cpuprof_testkit::TextReport::parse(report);
    let flat = row.row(name).map_or(0, |r| r.flat);
    100.0 * flat as f64 / row.total.max(1) as f64
}

#[test]
fn record_runs_the_command_under_the_agent_and_prints_the_report() {
    let dir = TempDir::new().unwrap();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("rec.prof");
    let out = cpuprof()
        .args(["record", "-F", "1000", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&spin)
        .args(["-s", "0.5", "-t", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("done "),
        "the command's own output: {stdout}"
    );
    let share = flat_percent(&stdout, "burn_a");
    assert!(
        (50.0..=70.0).contains(&share),
        "burn_a {share:.1}%:\n{stdout}"
    );
    let data = std::fs::read(&profile).unwrap();
    // profile.proto by default, with each sample's thread.
    let parsed = cpuprof_profile::proto::read(&data).unwrap();
    assert!(parsed
        .samples
        .iter()
        .all(|s| s.labels.iter().any(|l| l.key == "thread_name")));
    let total: i64 = parsed.samples.iter().map(|s| s.values[0]).sum();
    assert!((850..=1150).contains(&total), "1 CPU-s at 1000 Hz: {total}");
}

#[test]
fn record_passes_the_exit_status_through() {
    let dir = TempDir::new().unwrap();
    let out = cpuprof()
        .args(["record", "-o"])
        .arg(dir.path().join("false.prof"))
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn demo_shows_the_known_split() {
    let dir = TempDir::new().unwrap();
    let out = cpuprof()
        .args(["demo", "-t", "2", "-s", "0.5", "-o"])
        .arg(dir.path().join("demo.prof"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, expected) in [
        ("cpuprof::demo::demo_hot", 60.0),
        ("cpuprof::demo::demo_warm", 30.0),
        ("cpuprof::demo::demo_cool", 10.0),
    ] {
        let report = cpuprof_testkit::TextReport::parse(&stdout);
        let cum = report.row(name).map_or(0, |r| r.cum);
        let share = 100.0 * cum as f64 / report.total.max(1) as f64;
        assert!(
            (share - expected).abs() <= 6.0,
            "{name}: {share:.1}%\n{stdout}"
        );
    }
}
