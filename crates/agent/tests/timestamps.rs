//! Issue 21, item 1 on the agent's side: every sample of a profile.proto
//! keeps its time, as the numeric label `timestamp_ns` (ns since the Unix
//! epoch, on the clock of the profile's `time_nanos`), read the same by
//! Go pprof (`-tagfocus=timestamp_ns=FROMns:TOns`) and by our report;
//! `CPUPROFILE_TIME_RESOLUTION` rounds the times so that samples merge,
//! and turns them off.
//!
//! What sampling cannot move is asserted: every time lies within the
//! profile, a program's first phase comes before its second (≥ 90% of
//! the pairs), and every reader counts the same samples.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use cpuprof_profile::{LabelValue, Profile, Sample};

/// The time of a sample (ns) and its unit, if it has one.
fn timestamp(sample: &Sample) -> Option<(i64, &str)> {
    sample
        .labels
        .iter()
        .find(|l| l.key == "timestamp_ns")
        .map(|l| match &l.value {
            LabelValue::Num { value, unit } => (*value, &**unit),
            other => panic!("timestamp_ns is not a number: {other:?}"),
        })
}

/// Which phase function a sample is in (the agent names its locations
/// from the program's symbol table).
fn phase(profile: &Profile, sample: &Sample) -> Option<u8> {
    sample.locations.iter().find_map(|l| {
        profile.locations[l.index()].lines.iter().find_map(|line| {
            match profile.functions[line.function.index()].name.as_str() {
                "phase_one" => Some(1),
                "phase_two" => Some(2),
                _ => None,
            }
        })
    })
}

/// Runs `two_phases SECONDS` under the agent writing profile.proto at
/// 1000 Hz with `resolution` (None: the default); returns the parsed
/// profile, its path and the program's "switch" time (ns since the epoch).
fn record(
    dir: &Path,
    resolution: Option<&str>,
    seconds: &str,
) -> (Profile, std::path::PathBuf, i64) {
    let program = build_c(dir, "two_phases", false);
    let profile = dir.join(format!("phases-{}.pb.gz", resolution.unwrap_or("default")));
    let mut cmd = preloaded(&program, &profile, 1000);
    cmd.arg(seconds).env("CPUPROFILE_FORMAT", "pprof");
    match resolution {
        Some(r) => cmd.env("CPUPROFILE_TIME_RESOLUTION", r),
        None => cmd.env_remove("CPUPROFILE_TIME_RESOLUTION"),
    };
    let out = run_ok(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let switch = stdout
        .lines()
        .find_map(|l| l.strip_prefix("switch ")?.parse().ok())
        .unwrap_or_else(|| panic!("no switch time in {stdout:?}"));
    (read_any(&profile), profile, switch)
}

fn total(profile: &Profile) -> i64 {
    profile.samples.iter().map(|s| s.values[0]).sum()
}

/// Go pprof's count of the samples kept by `filters` (all of them
/// without), from its `-top` header.
fn go_pprof_samples(profile: &Path, filters: &[&str]) -> i64 {
    let out = Command::new("pprof")
        .args(["-top", "-sample_index=samples", "-nodefraction=0"])
        .args(filters)
        .arg(profile)
        .output()
        .expect("cannot run pprof");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pprof -top {filters:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // "Showing nodes accounting for 500, 50.05% of 999 total"
    let line = text
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for "))
        .unwrap_or_else(|| panic!("no total in pprof -top:\n{text}"));
    let shown = line["Showing nodes accounting for ".len()..]
        .split(',')
        .next()
        .unwrap();
    shown
        .parse()
        .unwrap_or_else(|_| panic!("not a count: {line}"))
}

#[test]
fn two_phases_keep_their_times_in_order() {
    let dir = tempdir();
    let (parsed, path, switch) = record(dir.path(), None, "0.5");
    let (start, end) = (parsed.time_nanos, parsed.time_nanos + parsed.duration_nanos);
    assert!(start > 0 && parsed.duration_nanos > 0);
    let samples = total(&parsed);
    assert!(
        samples >= 500,
        "{samples} samples for 1 CPU-second at 1000 Hz"
    );
    // Every sample has its time, in ns, within the profile.
    let mut phases: Vec<(u8, i64, i64)> = Vec::new();
    for sample in &parsed.samples {
        let (time, unit) = timestamp(sample).expect("every sample has timestamp_ns");
        assert_eq!(unit, "nanoseconds");
        assert!(
            (start..=end).contains(&time),
            "timestamp_ns {time} outside [{start}, {end}]"
        );
        if let Some(p) = phase(&parsed, sample) {
            phases.push((p, time, sample.values[0]));
        }
    }
    assert!(
        parsed
            .comments
            .iter()
            .any(|c| c.starts_with("timestamp_ns:") && c.contains("full resolution")),
        "{:?}",
        parsed.comments
    );
    // Full resolution: a stack sampled at different times is different
    // samples, each signal of the one thread at its own nanosecond.
    let mut distinct: Vec<i64> = parsed
        .samples
        .iter()
        .filter_map(|s| timestamp(s).map(|t| t.0))
        .collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        parsed.samples.len(),
        "two samples at one time"
    );
    // Phase one before phase two: ≥ 90% of the (one, two) pairs, and of
    // each phase's samples on its side of the program's switch time.
    let ones: Vec<i64> = phases.iter().filter(|p| p.0 == 1).map(|p| p.1).collect();
    let twos: Vec<i64> = phases.iter().filter(|p| p.0 == 2).map(|p| p.1).collect();
    assert!(
        ones.len() >= 100 && twos.len() >= 100,
        "{} {}",
        ones.len(),
        twos.len()
    );
    let ordered: usize = ones
        .iter()
        .map(|a| twos.iter().filter(|b| a < *b).count())
        .sum();
    let pairs = ones.len() * twos.len();
    assert!(
        ordered * 10 >= pairs * 9,
        "{ordered} of {pairs} pairs ordered"
    );
    let before = ones.iter().filter(|&&t| t <= switch).count();
    let after = twos.iter().filter(|&&t| t >= switch).count();
    assert!(
        before * 10 >= ones.len() * 9,
        "{before} of {} phase-one samples before the switch",
        ones.len()
    );
    assert!(
        after * 10 >= twos.len() * 9,
        "{after} of {} phase-two samples after it",
        twos.len()
    );

    // Our report counts every sample.
    let options = cpuprof_report::Options {
        sample_index: Some(0),
        ..Default::default()
    };
    assert_eq!(our_report_with(&path, &options).total, samples);

    if !require_tool("pprof") {
        return;
    }
    // Go pprof: the same total, and the same count on each side of a cut
    // between two samples near the switch (half-way between them, far
    // from both: pprof compares in floating point).
    assert_eq!(go_pprof_samples(&path, &[]), samples);
    let mut times: Vec<i64> = parsed
        .samples
        .iter()
        .filter_map(|s| timestamp(s).map(|t| t.0))
        .collect();
    times.sort();
    let next = times
        .partition_point(|&t| t < switch)
        .clamp(1, times.len() - 1);
    let cut = (times[next - 1] + times[next]) / 2;
    let ours_before: i64 = parsed
        .samples
        .iter()
        .filter(|s| timestamp(s).is_some_and(|t| t.0 <= cut))
        .map(|s| s.values[0])
        .sum();
    assert!(ours_before > 0 && ours_before < samples);
    let first = format!("-tagfocus=timestamp_ns={start}ns:{cut}ns");
    let second = format!("-tagfocus=timestamp_ns={cut}ns:{end}ns");
    assert_eq!(go_pprof_samples(&path, &[&first]), ours_before, "{first}");
    assert_eq!(
        go_pprof_samples(&path, &[&second]),
        samples - ours_before,
        "{second}"
    );
}

#[test]
fn a_coarser_resolution_merges_samples_and_off_writes_none() {
    let dir = tempdir();
    let (coarse, coarse_path, _) = record(dir.path(), Some("100ms"), "0.3");
    let samples = total(&coarse);
    assert!(samples >= 300, "{samples} samples for 0.6 CPU-s at 1000 Hz");
    // 100 ms buckets: each holds the few stacks of the burn loop, many
    // samples each (≥ 20 per bucket at 1000 Hz even with the CPU shared
    // five ways), and no two samples share a stack, thread and time.
    assert!(
        coarse.samples.len() as i64 * 2 <= samples,
        "{} samples kept for {samples}",
        coarse.samples.len()
    );
    let mut keys: Vec<_> = coarse
        .samples
        .iter()
        .map(|s| (s.locations.clone(), format!("{:?}", s.labels)))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(
        keys.len(),
        n,
        "samples of one stack, thread and time left apart"
    );
    for sample in &coarse.samples {
        let (time, _) = timestamp(sample).expect("every sample has timestamp_ns");
        // Rounded down to 100 ms, or raised to the start of the profile.
        assert!(
            time % 100_000_000 == 0 || time == coarse.time_nanos,
            "{time} is not on a 100 ms boundary"
        );
        assert!(time >= coarse.time_nanos && time <= coarse.time_nanos + coarse.duration_nanos);
    }
    assert!(
        coarse
            .comments
            .iter()
            .any(|c| c.contains("rounded down to 100ms")),
        "{:?}",
        coarse.comments
    );

    let (off, off_path, _) = record(dir.path(), Some("off"), "0.3");
    assert!(off.samples.iter().all(|s| timestamp(s).is_none()));
    assert!(off.comments.iter().all(|c| !c.contains("timestamp_ns")));
    let off_samples = total(&off);
    assert!(off_samples >= 300);
    // Without times, samples merge per stack and thread only.
    assert!(off.samples.len() < 100, "{} samples", off.samples.len());

    if !require_tool("pprof") {
        return;
    }
    assert_eq!(go_pprof_samples(&coarse_path, &[]), samples);
    assert_eq!(go_pprof_samples(&off_path, &[]), off_samples);
}

/// gperftools' format has no room for times: a session in it writes the
/// same file as before (and times cost its handler nothing).
#[test]
fn gperftools_format_is_unchanged_by_times() {
    let dir = tempdir();
    let program = build_c(dir.path(), "two_phases", false);
    let profile = dir.path().join("phases.prof");
    let mut cmd = preloaded(&program, &profile, 1000);
    cmd.arg("0.2")
        .env_remove("CPUPROFILE_FORMAT")
        .env("CPUPROFILE_TIME_RESOLUTION", "full");
    run_ok(&mut cmd);
    let parsed = read_profile(&profile);
    // One record per distinct stack: no two with the same stack.
    let mut stacks: Vec<_> = parsed.samples.iter().map(|s| s.locations.clone()).collect();
    let n = stacks.len();
    stacks.sort();
    stacks.dedup();
    assert_eq!(stacks.len(), n, "a stack written twice");
    assert!(total_samples(&parsed) >= 200);
}
