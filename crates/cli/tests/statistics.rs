//! Sampling error and significant diffs on real runs of a workload under
//! our agent (`cpuprof record`, 1000 Hz, about 1 CPU-s each):
//! - the same build profiled twice shows no significant change, and the
//!   CI gate lets it pass (exit 0);
//! - a build where `burn_b` does twice the work shows `burn_b` as the only
//!   significant growth, and the gate fails it (exit 3, the row on
//!   stderr);
//! - `--confidence` adds the Wilson intervals to `--text`, `--tree` and
//!   `--dcpiprof`; `--json` always carries them.
//!
//! The checks of "no change" run at 99.9% so that the test fails by
//! chance once in a thousand runs, not once in twenty.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use cpuprof_report::stats;
use cpuprof_testkit::{compile, require_tool, TempDir};

mod common;
use common::cpuprof;

/// burn_a 60%, burn_b 30% × FACTOR, burn_c 10% of each round.
const WORKLOAD: &str = r#"
#include <stdlib.h>
#include <time.h>
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static volatile double sink;
/* Each function burns in its own loop (no shared callee a tail call
   could hide them behind). */
#define BURN(name, k)                                                   \
    __attribute__((noinline)) void name(double seconds) {               \
        double end = cpu_now() + seconds, x = k;                        \
        while (cpu_now() < end)                                         \
            for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;   \
        sink = x;                                                       \
    }
BURN(burn_a, 1.0)
BURN(burn_b, 2.0)
BURN(burn_c, 3.0)
int main(int argc, char **argv) {
    double factor = argc > 1 ? atof(argv[1]) : 1.0;
    double seconds = argc > 2 ? atof(argv[2]) : 1.0;
    double round = 0.01, spent = 0;
    while (spent < seconds) {
        burn_a(round * 0.6);
        burn_b(round * 0.3 * factor);
        burn_c(round * 0.1);
        spent += round * (0.7 + 0.3 * factor);
    }
    return 0;
}
"#;

struct Runs {
    _dir: TempDir,
    binary: PathBuf,
    base: PathBuf,
    same: PathBuf,
    doubled: PathBuf,
    short: PathBuf,
}

/// The workload and three profiles: base, the same again, burn_b doubled.
fn runs() -> Option<&'static Runs> {
    static RUNS: OnceLock<Option<Runs>> = OnceLock::new();
    RUNS.get_or_init(|| {
        if !require_tool("gcc") {
            return None;
        }
        let dir = TempDir::new().unwrap();
        let src = dir.path().join("work.c");
        std::fs::write(&src, WORKLOAD).unwrap();
        let binary = dir.path().join("work");
        compile("gcc", &[&src], &binary, &["-O2", "-g"]);
        let record = |name: &str, factor: &str, seconds: &str| -> PathBuf {
            let profile = dir.path().join(name);
            let out = cpuprof()
                // Counts as values (profile.proto's default value is CPU
                // time): the intervals below are computed from the text.
                .args(["record", "--format", "gperftools", "-F", "1000", "-o"])
                .arg(&profile)
                .arg("--")
                .arg(&binary)
                .args([factor, seconds])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            profile
        };
        let base = record("base.prof", "1", "1.0");
        let same = record("same.prof", "1", "1.0");
        let doubled = record("doubled.prof", "2", "1.0");
        let short = record("short.prof", "1", "0.1");
        Some(Runs {
            binary,
            base,
            same,
            doubled,
            short,
            _dir: dir,
        })
    })
    .as_ref()
}

fn report(args: &[&str], inputs: &[&Path]) -> (String, String, i32) {
    common::report_texts(args, |cmd| {
        cmd.args(inputs);
    })
}

/// The rows of a `--text --confidence --base` report: name → marker.
fn markers(text: &str) -> Vec<(String, char, f64)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let marker_at = fields.iter().position(|f| *f == "*" || *f == "~")?;
            let points: f64 = fields.get(marker_at - 2)?.parse().ok()?;
            Some((
                fields[marker_at + 1..].join(" "),
                fields[marker_at].chars().next()?,
                points,
            ))
        })
        .collect()
}

#[test]
fn the_same_build_twice_shows_no_significant_change() {
    let Some(r) = runs() else { return };
    let base = format!("--base={}", r.base.display());
    let (out, err, status) = report(
        &["--text", "--confidence=99.9", &base],
        &[&r.binary, &r.same],
    );
    assert_eq!(status, 0, "{err}");
    // (Rows whose two values are equal are not printed, as in perl's
    // diff; the legend says what was compared.)
    let rows = markers(&out);
    assert!(
        out.contains(" samples, each compared by share of its own total"),
        "{out}"
    );
    let significant: Vec<_> = rows.iter().filter(|(_, m, _)| *m == '*').collect();
    assert!(significant.is_empty(), "{significant:?}\n{out}");
    let (_, err, status) = report(
        &["--text", "--confidence=99.9", "--fail-on-growth=1", &base],
        &[&r.binary, &r.same],
    );
    assert_eq!(status, 0, "the gate passes: {err}");
}

#[test]
fn a_function_doing_twice_the_work_is_the_only_significant_growth() {
    let Some(r) = runs() else { return };
    let base = format!("--base={}", r.base.display());
    let (out, err, status) = report(
        &["--text", "--confidence=99.9", &base],
        &[&r.binary, &r.doubled],
    );
    assert_eq!(status, 0, "{err}");
    let rows = markers(&out);
    let grown: Vec<&str> = rows
        .iter()
        .filter(|(_, m, points)| *m == '*' && *points > 0.0)
        .map(|(name, _, _)| name.as_str())
        .collect();
    assert_eq!(grown, ["burn_b"], "{out}");
    // From 30% to 6/13 = 46% of the time.
    let (_, _, points) = rows.iter().find(|(n, _, _)| n == "burn_b").unwrap();
    assert!((10.0..22.0).contains(points), "{points}\n{out}");
    // The gate: exit 3 with burn_b's row on stderr; 1 for errors.
    let (stdout, err, status) = report(
        &["--text", "--fail-on-growth=5", &base],
        &[&r.binary, &r.doubled],
    );
    assert_eq!(status, 3, "{err}");
    // The report is still written (equal totals: perl's diff prints no
    // Total line).
    assert!(
        stdout.contains(" burn_b\n"),
        "the report is still written:\n{stdout}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with("cpuprof: --fail-on-growth=5: "),
        "{err}"
    );
    assert!(
        lines.iter().any(|l| l.trim_end().ends_with("* burn_b")),
        "{err}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.ends_with(" burn_a") || l.ends_with(" burn_c")),
        "{err}"
    );
    // A growth smaller than asked is let through.
    let (_, _, status) = report(
        &["--text", "--fail-on-growth=40", &base],
        &[&r.binary, &r.doubled],
    );
    assert_eq!(status, 0);
    let (_, err, status) = report(&["--text", "--fail-on-growth=5"], &[&r.binary, &r.doubled]);
    assert_eq!(
        (status, err.trim()),
        (
            1,
            "cpuprof: --fail-on-growth compares with a base profile: give --base=OLD"
        )
    );
}

#[test]
fn intervals_in_text_tree_dcpiprof_and_json() {
    let Some(r) = runs() else { return };
    let (text, _, _) = report(
        &["--text", "--confidence", "--nodecount=3"],
        &[&r.binary, &r.base],
    );
    let lines: Vec<&str> = text.lines().collect();
    let total: f64 = lines[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(
        lines[1].starts_with("95% intervals of flat% and cum% (Wilson, "),
        "{text}"
    );
    // Each row's intervals are Wilson's of its own counts.
    let z = stats::z_for(0.95);
    for line in &lines[2..] {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (flat, cum): (f64, f64) = (f[0].parse().unwrap(), f[3].parse().unwrap());
        assert_eq!(
            f[5],
            stats::format_interval(stats::wilson(flat, total, z)),
            "{line}"
        );
        assert_eq!(
            f[6],
            stats::format_interval(stats::wilson(cum, total, z)),
            "{line}"
        );
    }
    let (tree, _, _) = report(&["--tree", "--confidence=90"], &[&r.binary, &r.base]);
    assert!(
        tree.lines()
            .any(|l| l.contains("| burn_b   flat% [") && l.contains("] cum% [")),
        "{tree}"
    );
    let (dcpi, _, _) = report(&["--dcpiprof", "--confidence"], &[&r.binary, &r.base]);
    assert!(dcpi.contains("95% CI"), "{dcpi}");
    // JSON: always, at 95% unless asked; with a base, each row's change.
    let (json, _, _) = report(&["--json"], &[&r.binary, &r.base]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["confidence"], 95);
    let row = &v["rows"][0];
    let samples = v["samples"].as_f64().unwrap();
    let flat = row["flat"].as_f64().unwrap()
        / (row["flat"].as_f64().unwrap() / samples / row["flat_percent"].as_f64().unwrap() * 100.0);
    let (lo, hi) = stats::wilson(flat, samples, z);
    assert!(
        (row["flat_interval"][0].as_f64().unwrap() - lo * 100.0).abs() < 0.2,
        "{row}"
    );
    assert!(
        (row["flat_interval"][1].as_f64().unwrap() - hi * 100.0).abs() < 0.2,
        "{row}"
    );
    let base = format!("--base={}", r.base.display());
    let (json, _, _) = report(&["--json", &base], &[&r.binary, &r.doubled]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let burn_b = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "burn_b")
        .expect("burn_b row");
    assert_eq!(burn_b["change"]["significant"], true, "{burn_b}");
    assert!(
        burn_b["change"]["points"].as_f64().unwrap() > 10.0,
        "{burn_b}"
    );
}

#[test]
fn too_few_samples_are_said_in_one_line() {
    let Some(r) = runs() else { return };
    // ~100 samples: burn_a's 60% is known within about ±16% of itself.
    let (_, err, status) = report(&["--text", "--confidence"], &[&r.binary, &r.short]);
    assert_eq!(status, 0);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("cpuprof: note: "))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("record longer, at a higher rate, or sum several runs"),
        "{err}"
    );
    let (_, err, _) = report(&["--text", "--confidence"], &[&r.binary, &r.base]);
    assert!(!err.contains("cpuprof: note:"), "{err}");
}

/// A function whose value did not change while the rest grew: its row
/// nets to zero in the diff, but its share fell from 25% to 100/1300, a
/// significant change `--confidence` shows (without it the row is left
/// out, as in perl's diff). Fixed data: 400 and 1300 samples.
#[test]
fn an_unchanged_value_whose_share_fell_is_shown_with_its_change() {
    let dir = TempDir::new().unwrap();
    let base = dir.path().join("base.txt");
    let new = dir.path().join("new.txt");
    std::fs::write(&base, "main;a 300\nmain;b 100\n").unwrap();
    std::fs::write(&new, "main;a 1200\nmain;b 100\n").unwrap();
    let base_flag = format!("--base={}", base.display());
    let (out, err, status) = report(&["--text", "--confidence", &base_flag], &[&new]);
    assert_eq!(status, 0, "{err}");
    let b = out
        .lines()
        .find(|l| l.ends_with(" b"))
        .unwrap_or_else(|| panic!("{out}"));
    // 25.0% -> 7.7%: -17.3 points.
    assert_eq!(
        b.split_whitespace().collect::<Vec<_>>()[..8],
        ["0", "0.0%", "225.0%", "0", "0.0%", "25.0%->", "7.7%", "-17.3"],
        "{out}"
    );
    assert!(b.contains(" * b"), "{out}");
    // `main`, whose share did not change, is shown as before: its value grew.
    assert!(out.contains(" ~ main"), "{out}");
    let (plain, _, _) = report(&["--text", &base_flag], &[&new]);
    assert!(!plain.lines().any(|l| l.ends_with(" b")), "{plain}");
}
