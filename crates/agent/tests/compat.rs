//! Profiles written by libcpuprof.so are read by google-pprof (perl) and
//! Go pprof with the same top functions, and the same counts, as our own
//! report (cpuprof-symbolize + cpuprof-report).

mod common;

use std::process::Command;

use common::*;
use cpuprof_testkit::TextReport;

/// (name, flat) of Go pprof's `-top` rows, with flat in samples.
fn go_pprof_top(binary: &std::path::Path, profile: &std::path::Path) -> Vec<(String, i64)> {
    let out = run_ok(
        Command::new("pprof")
            .args(["-top", "-sample_index=samples", "-nodecount=10"])
            .arg(binary)
            .arg(profile),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() >= 6 && fields[1].ends_with('%') && fields[4].ends_with('%'))
                .then(|| Some((fields[5..].join(" "), fields[0].parse().ok()?)))
                .flatten()
        })
        .collect()
}

#[test]
fn google_pprof_and_go_pprof_agree_with_our_report() {
    if !require_tool("google-pprof") || !require_tool("pprof") {
        return;
    }
    let dir = tempdir();
    let (spin, lib) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("compat.prof");
    run_ok(
        preloaded(&spin, &profile, 1000)
            .args(["-s", "1", "-t", "2"])
            .arg("-l")
            .arg(&lib),
    );

    let ours = our_report(&profile);
    let perl = TextReport::parse(&String::from_utf8_lossy(
        &run_ok(
            Command::new("google-pprof")
                .arg("--text")
                .arg(&spin)
                .arg(&profile),
        )
        .stdout,
    ));
    let go = go_pprof_top(&spin, &profile);
    assert_eq!(ours.total, perl.total, "totals: ours vs google-pprof");
    let top = |rows: Vec<(String, i64)>| rows.into_iter().take(3).collect::<Vec<_>>();
    let ours_top = top(ours.rows.iter().map(|r| (r.name.clone(), r.flat)).collect());
    let perl_top = top(perl.rows.iter().map(|r| (r.name.clone(), r.flat)).collect());
    let go_top = top(go);
    let names = |rows: &[(String, i64)]| rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&ours_top),
        ["burn_a", "burn_b", "lib_inner"],
        "our report: {ours_top:?}"
    );
    assert_eq!(
        names(&perl_top),
        names(&ours_top),
        "google-pprof: {perl_top:?}"
    );
    assert_eq!(names(&go_top), names(&ours_top), "Go pprof: {go_top:?}");
    // Same samples, same symbols: the flat counts agree within the few
    // samples attributed differently at function boundaries.
    for ((name, ours), (_, perl)) in ours_top.iter().zip(&perl_top) {
        assert!(
            (ours - perl).abs() <= 3,
            "{name}: ours {ours}, google-pprof {perl}"
        );
    }
    for ((name, ours), (_, go)) in ours_top.iter().zip(&go_top) {
        assert!((ours - go).abs() <= 3, "{name}: ours {ours}, Go pprof {go}");
    }
}
