//! Time as a filter and a view: `--time=START:END`, `--base_time`, the
//! growth gate over time windows, `--timeline` and the shell's `timeline`,
//! on a two-phase program (`tests/workloads/phases.c`: fnA burns the first second, fnB the next)
//! recorded once with `perf record -e cpu-clock -F 1000 -g`.
//!
//! What sampling cannot move is asserted: each phase's function is at
//! least 90% of a window 0.1 s away from the switch; the numbers of a
//! window equal Go pprof's `-tagfocus=timestamp_ns=LO:HI` on the same file
//! converted to profile.proto (the same samples, so the same totals); a
//! diff of two windows of one file equals the two windows apart; the
//! timeline's columns for fnA are busy in the first 40% and idle in the
//! last 40%, fnB's the other way round; the shell's `timeline` and
//! `time=` in a pseudo-terminal (tmux); the web UI's `t=`; `perf script`
//! text of the recording; a gperftools profile refused in one line.
//!
//! The tests skip (with a message) where `perf record` cannot open its
//! event, as perf_data.rs does.

mod common;

use std::path::Path;
use std::process::Command;

use common::tmux::Tmux;
use common::{cpuprof, report_texts, WebUi};
use cpuprof_report::output::timeline::levels;
use cpuprof_testkit::{
    compile, libprofiler, phases, profile_with_libprofiler, require_tool, run_ok, run_stdout,
    workload, Phases, TempDir,
};

/// `cpuprof report ARGS` on the recording: stdout (the run must succeed).
fn report(p: &Phases, args: &[&str]) -> String {
    let mut cmd = cpuprof();
    cmd.arg("report").args(args).arg(&p.data);
    run_stdout(&mut cmd)
}

/// The `(flat, cum)` shares in percent of the row named `name` of a
/// `--text` report in Go pprof's layout.
fn shares(text: &str, name: &str) -> Option<(f64, f64)> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 6 || f[5] != name {
            return None;
        }
        let flat = f[1].strip_suffix('%')?.parse().ok()?;
        let cum = f[4].strip_suffix('%')?.parse().ok()?;
        Some((flat, cum))
    })
}

#[test]
fn each_window_is_its_phase() {
    let Some(p) = phases() else { return };
    let first = report(p, &["--text", "--time=0:0.9s"]);
    let (_, a) = shares(&first, "fnA").unwrap_or_else(|| panic!("no fnA:\n{first}"));
    assert!(a >= 90.0, "fnA is {a}% of 0:0.9s:\n{first}");
    let second = report(p, &["--text", "--time=1.1s:"]);
    let (_, b) = shares(&second, "fnB").unwrap_or_else(|| panic!("no fnB:\n{second}"));
    assert!(b >= 90.0, "fnB is {b}% of 1.1s::\n{second}");
    // `perf script` text of the same recording has the same times: the
    // same window, the same numbers.
    let script = p.dir.path().join("phases.script");
    let text = run_stdout(Command::new("perf").arg("script").arg("-i").arg(&p.data));
    std::fs::write(&script, text).unwrap();
    let mut cmd = cpuprof();
    cmd.args(["report", "--text", "--time=0:0.9s"]).arg(&script);
    let from_script = run_stdout(&mut cmd);
    let summary = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Showing nodes"))
            .map(str::to_string)
    };
    assert_eq!(
        summary(&from_script),
        summary(&first),
        "{from_script}\n{first}"
    );
    assert!(summary(&first).is_some(), "{first}");
    // The whole profile has both; the windows are parts of it.
    let whole = report(p, &["--text"]);
    assert!(shares(&whole, "fnA").is_some() && shares(&whole, "fnB").is_some());
    // Every output honours the range: folded stacks of the first window
    // hold no fnB, the tree and traces of the second no fnA.
    let collapsed = report(p, &["--collapsed", "--time=:900ms"]);
    assert!(
        collapsed.contains("fnA") && !collapsed.contains("fnB"),
        "{collapsed}"
    );
    for output in ["--tree", "--traces", "--dot", "--json"] {
        let text = report(p, &[output, "--time=1100ms:"]);
        assert!(
            text.contains("fnB") && !text.contains("fnA"),
            "{output}:\n{text}"
        );
    }
}

#[test]
fn windows_equal_go_pprof_tagfocus_on_the_converted_file() {
    let Some(p) = phases() else { return };
    if !require_tool("pprof") {
        return;
    }
    let converted = p.dir.path().join("phases.pb.gz");
    if !converted.exists() {
        run_ok(
            cpuprof()
                .args(["convert", "--to", "pprof", "-o"])
                .arg(&converted)
                .arg(&p.data),
        );
    }
    // perf's times count from boot: the origin is the first sample's.
    let bytes = std::fs::read(&converted).unwrap();
    let (_, profile) =
        cpuprof_profile::read_profile(&bytes, &cpuprof_profile::ReadOptions::default()).unwrap();
    let span = cpuprof_report::time::Span::of(&profile).expect("perf samples have times");
    for (range, lo, hi) in [
        ("0:0.9s", 0i64, 900_000_000i64),
        ("0.5s:1.5s", 500_000_000, 1_500_000_000),
    ] {
        // Go's ranges include both ends; ours exclude the end.
        let tagfocus = format!(
            "-tagfocus=timestamp_ns={}ns:{}ns",
            span.origin + lo,
            span.origin + hi - 1
        );
        let go = run_stdout(
            Command::new("pprof")
                .args(["-top", "-nodecount=3", "-nodefraction=0", &tagfocus])
                .arg(&converted)
                .env("PPROF_TMPDIR", p.dir.path())
                .env("HOME", p.dir.path()),
        );
        let time = format!("--time={range}");
        let mine = report(p, &["--top", "--nodecount=3", "--nodefraction=0", &time]);
        // Go's percentages stay of the whole profile's total (as for its
        // -focus); ours are of the window's. The values are the same.
        let kept = |t: &str| -> String {
            t.lines()
                .find_map(|l| l.strip_prefix("Showing nodes accounting for "))
                .and_then(|l| l.split(',').next())
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no summary in:\n{t}"))
        };
        assert_eq!(kept(&go), kept(&mine), "{range}\ngo:\n{go}\nours:\n{mine}");
        // (flat, cum, name) of each row.
        let rows = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    (f.len() >= 6 && f[1].ends_with('%') && f[4].ends_with('%'))
                        .then(|| format!("{} {} {}", f[0], f[3], f[5..].join(" ")))
                })
                .collect()
        };
        assert_eq!(rows(&go), rows(&mine), "{range}\ngo:\n{go}\nours:\n{mine}");
        assert!(!rows(&mine).is_empty(), "{mine}");
        // The converted file gives the same numbers as the recording.
        let mut cmd = cpuprof();
        cmd.args([
            "report",
            "--top",
            "--nodecount=3",
            "--nodefraction=0",
            &time,
        ])
        .arg(&converted);
        assert_eq!(run_stdout(&mut cmd), mine);
    }
}

#[test]
fn base_time_diff_and_gate_compare_two_windows() {
    let Some(p) = phases() else { return };
    let data = p.data.to_str().unwrap();
    let base = format!("--base={data}");
    // Nanoseconds, so the rows are exact whole numbers.
    let counts = |args: &[&str]| -> String {
        let mut all = vec!["--text", "--unit=ns"];
        all.extend_from_slice(args);
        report(p, &all)
    };
    let flat = |text: &str, name: &str| -> i64 {
        text.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 6 && f[5] == name)
                    .then(|| f[0].trim_end_matches("ns").parse::<i64>().unwrap() / 1_000_000)
            })
            .unwrap_or(0)
    };
    let first = counts(&["--time=0:0.9s"]);
    let second = counts(&["--time=1.1s:"]);
    let diff = counts(&["--time=1.1s:", &base, "--base_time=0:0.9s"]);
    for name in ["fnA", "fnB"] {
        assert_eq!(
            flat(&diff, name),
            flat(&second, name) - flat(&first, name),
            "{name}\ndiff:\n{diff}\nfirst:\n{first}\nsecond:\n{second}"
        );
    }
    // In milliseconds of CPU: each phase got at least a fifth of a CPU
    // (a loaded machine gives less than all of one).
    assert!(
        flat(&diff, "fnB") > 150 && flat(&diff, "fnA") < -150,
        "{diff}"
    );
    // The gate: the second window against the first fails (fnB grew by
    // ~100 points); a window against itself passes.
    let gate = |time: &str, base_time: &str| {
        let (_, stderr, status) = report_texts(
            &["--text", time, &base, base_time, "--fail-on-growth=5", data],
            |_| {},
        );
        (stderr, status)
    };
    let (stderr, status) = gate("--time=1.1s:", "--base_time=0:0.9s");
    assert_eq!(status, 3, "{stderr}");
    assert!(stderr.contains("fnB"), "{stderr}");
    let (stderr, status) = gate("--time=0:0.9s", "--base_time=0:0.9s");
    assert_eq!(status, 0, "{stderr}");
}

/// The levels of the timeline line after the thread line (the matching
/// line), from `--timeline=RE`'s output.
fn matching_levels(text: &str) -> Vec<u8> {
    let lines: Vec<&str> = text.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with("matching"))
        .unwrap_or_else(|| panic!("no matching line:\n{text}"));
    levels(lines[i]).unwrap()
}

/// The number of busy (non-blank) columns of `levels`.
fn busy(levels: &[u8]) -> usize {
    levels.iter().filter(|&&l| l > 0).count()
}

/// Busy in (nearly) every column of the first 40% and idle in every one
/// of the last 40%. The level of a busy column is not asserted: it is the
/// share of a CPU the program got, which a loaded machine lowers.
fn assert_first_half(levels: &[u8], what: &str, text: &str) {
    let n = levels.len();
    let (head, tail) = (&levels[..n * 2 / 5], &levels[n * 3 / 5..]);
    assert!(
        busy(head) >= head.len() * 4 / 5,
        "{what} not busy early:\n{text}"
    );
    assert_eq!(busy(tail), 0, "{what} busy late:\n{text}");
}

fn assert_second_half(levels: &[u8], what: &str, text: &str) {
    let n = levels.len();
    let (head, tail) = (&levels[..n * 2 / 5], &levels[n * 3 / 5..]);
    assert_eq!(busy(head), 0, "{what} busy early:\n{text}");
    assert!(
        busy(tail) >= tail.len() * 4 / 5,
        "{what} not busy late:\n{text}"
    );
}

#[test]
fn timeline_shows_the_switch() {
    let Some(p) = phases() else { return };
    let whole = report(p, &["--timeline"]);
    assert!(whole.starts_with("Timeline: 0s to "), "{whole}");
    let thread = whole
        .lines()
        .find(|l| l.starts_with("phases ("))
        .unwrap_or_else(|| panic!("no phases thread:\n{whole}"));
    let levels_of_thread = levels(thread).unwrap();
    assert_eq!(levels_of_thread.len(), 60, "{whole}");
    assert!(busy(&levels_of_thread) >= 50, "always busy:\n{whole}");
    let a = report(p, &["--timeline=^fnA$"]);
    assert_first_half(&matching_levels(&a), "fnA", &a);
    let b = report(p, &["--timeline=^fnB$"]);
    assert_second_half(&matching_levels(&b), "fnB", &b);
    // With a range the columns cover it, offsets from the whole start.
    let window = report(p, &["--timeline=fnB", "--time=1s:2s"]);
    assert!(
        window.starts_with(
            "Timeline: 1s to 2s after the start (1s in 60 columns of 16.666667ms each)"
        ),
        "{window}"
    );
}

/// A range past the last sample keeps nothing, and says so naming the
/// range and the samples of the profile; a focus in a range counts the
/// range's samples.
#[test]
fn an_empty_window_says_which_range_kept_nothing() {
    let Some(p) = phases() else { return };
    let data = p.data.to_str().unwrap();
    // The number in `... the N samples: nothing left to show`.
    let count = |err: &str, before: &str| -> usize {
        let at = err
            .find(before)
            .unwrap_or_else(|| panic!("no {before:?} in {err}"));
        let rest = &err[at + before.len()..];
        let end = rest.find(" samples: nothing left to show").unwrap();
        rest[..end].parse().unwrap()
    };
    let (out, err, status) = report_texts(&["--text", "--time=1h:", data], |_| {});
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("Type: cpu"), "{out}");
    // The whole run: about 2 s at 1000 Hz.
    let all = count(&err, "cpuprof: note: time=1h: keeps none of the ");
    assert!(all > 500, "{err}");
    let (_, err, status) = report_texts(
        &["--text", "--time=1.1s:", "--focus=no_such_function", data],
        |_| {},
    );
    assert_eq!(status, 0, "{err}");
    let second = count(&err, "focus=no_such_function matches none of the ");
    assert!(second > 100 && second < all, "{second} of {all}");
}

#[test]
fn profiles_without_times_say_so_in_one_line() {
    let Some(lib) = libprofiler() else { return };
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let binary = dir.path().join("phases");
    compile("gcc", &[&workload("phases.c")], &binary, &["-O1", "-g"]);
    let prof = dir.path().join("phases.prof");
    profile_with_libprofiler(&lib, &binary, &["0.05"], &prof, 1000);
    let prof_s = prof.to_str().unwrap();
    for args in [
        vec!["--text", "--time=0:1s", prof_s],
        vec!["--timeline", prof_s],
        vec!["--text", "--base", prof_s, "--base_time=1s:", prof_s],
    ] {
        let (stdout, stderr, status) = report_texts(&args, |_| {});
        assert_ne!(status, 0, "{args:?}: {stdout}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(prof_s) && stderr.contains("no sample times"),
            "{args:?}: {stderr}"
        );
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    // Bad ranges: one error naming the setting (clap adds its hint
    // line, as for every setting).
    for bad in [
        "--time=2s",
        "--time=2s:1s",
        "--time=1parsec:",
        "--base_time=x:y",
    ] {
        let (_, stderr, status) = report_texts(&["--text", bad, prof_s], |_| {});
        assert_ne!(status, 0, "{bad}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(errors.len(), 1, "{bad}: {stderr}");
        let name = bad.trim_start_matches("--").split('=').next().unwrap();
        assert!(errors[0].contains(&format!("{name}=")), "{bad}: {stderr}");
        assert!(!stderr.contains("panick"), "{bad}: {stderr}");
    }
}

/// A shell command's output as one text.
fn command(tmux: &Tmux, line: &str) -> String {
    tmux.command(line).join("\n")
}

#[test]
fn shell_timeline_in_a_terminal() {
    let Some(p) = phases() else { return };
    if !require_tool("tmux") {
        return;
    }
    let tmux = Tmux::start(
        "timeline",
        p.dir.path(),
        None,
        &[Path::new("report"), &p.data],
    );
    tmux.wait_for_prompt();
    let a = command(&tmux, "timeline ^fnA$");
    assert_first_half(&matching_levels(&a), "fnA", &a);
    // The columns fill the terminal's 200 columns but the last (the
    // one-shot timeline piped above has 60 columns).
    let thread = a
        .lines()
        .find(|l| l.starts_with("phases ("))
        .unwrap_or_else(|| panic!("no phases thread:\n{a}"));
    assert_eq!(thread.chars().count(), 199, "{a}");
    assert!(levels(thread).unwrap().len() > 140, "{a}");
    let b = command(&tmux, "timeline ^fnB$");
    assert_second_half(&matching_levels(&b), "fnB", &b);
    // The time= setting applies to the shell's reports too.
    let set = command(&tmux, "time=1.1s:");
    assert!(set.trim().is_empty(), "{set}");
    let top = command(&tmux, "top");
    assert!(
        shares(&top, "fnB").is_some_and(|(_, cum)| cum >= 90.0),
        "{top}"
    );
    let bad = command(&tmux, "time=3s:1s");
    assert_eq!(bad.trim().lines().count(), 1, "{bad}");
    assert!(bad.contains("time=3s:1s"), "{bad}");
    tmux.type_text("quit");
    tmux.keys(&["Enter"]);
    // The shell's status says a command failed (the bad range).
    assert_eq!(tmux.wait_for_exit(), 1);
    let _ = &p.binary;
}

/// The web UI's `t=` is the `time` setting: the Top view of a window
/// shows its phase only; a bad range is the request's fault.
#[test]
fn web_ui_t_parameter_keeps_a_window() {
    let Some(p) = phases() else { return };
    let web = WebUi::start(&[&p.data]);
    let pages = [
        web.get_text("/ui/top?t=1.1s%3A"),
        web.get_text("/ui/top?t=0%3A0.9s"),
        web.get_text("/ui/top"),
        web.get_text("/ui/top?t=3s%3A1s"),
    ];
    drop(web);
    let [second, first, whole, bad] = pages;
    assert_eq!(second.0, 200, "{}", second.1);
    assert!(
        second.1.contains(">fnB<") && !second.1.contains(">fnA<"),
        "{}",
        second.1
    );
    assert!(
        first.1.contains(">fnA<") && !first.1.contains(">fnB<"),
        "{}",
        first.1
    );
    assert!(
        whole.1.contains(">fnA<") && whole.1.contains(">fnB<"),
        "{}",
        whole.1
    );
    assert_eq!(bad.0, 400, "{}", bad.1);
}
