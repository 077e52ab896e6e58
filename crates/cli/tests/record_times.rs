//! `cpuprof record --time-resolution`: passed to the agent as
//! `CPUPROFILE_TIME_RESOLUTION` (each sample's `timestamp_ns` rounded,
//! samples merging), checked before the command runs.

use cpuprof_profile::LabelValue;
use cpuprof_testkit::{build_spin, TempDir};

mod common;
use common::cpuprof;

fn timestamps(data: &[u8]) -> (Vec<Option<i64>>, i64) {
    let parsed = cpuprof_profile::proto::read(data).unwrap();
    let times = parsed
        .samples
        .iter()
        .map(|s| {
            s.labels
                .iter()
                .find(|l| l.key == "timestamp_ns")
                .map(|l| match &l.value {
                    LabelValue::Num { value, .. } => *value,
                    other => panic!("{other:?}"),
                })
        })
        .collect();
    (times, parsed.time_nanos)
}

#[test]
fn record_rounds_sample_times_to_the_resolution_asked() {
    let dir = TempDir::new().unwrap();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let mut sizes = Vec::new();
    for resolution in ["full", "200ms", "off"] {
        let profile = dir.path().join(format!("{resolution}.prof"));
        let out = cpuprof()
            .args(["record", "-F", "1000", "--nodecount", "0"])
            .args(["--time-resolution", resolution, "-o"])
            .arg(&profile)
            .arg("--")
            .arg(&spin)
            .args(["-s", "0.3", "-t", "1"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (times, start) = timestamps(&std::fs::read(&profile).unwrap());
        match resolution {
            "off" => assert!(times.iter().all(Option::is_none)),
            "200ms" => assert!(times
                .iter()
                .all(|t| t.is_some_and(|t| t % 200_000_000 == 0 || t == start))),
            _ => assert!(times.iter().all(Option::is_some)),
        }
        sizes.push((resolution, times.len()));
    }
    // Rounding merges: fewer samples at 200 ms than at full resolution
    // (≥ 40 samples per bucket at 1000 Hz with the CPU shared five ways).
    assert!(sizes[1].1 * 2 < sizes[0].1, "{sizes:?}");

    let out = cpuprof()
        .args(["record", "--time-resolution", "soon", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--time-resolution") && stderr.contains("\"soon\" is not a duration"),
        "{stderr}"
    );
}
