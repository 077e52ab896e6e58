//! Issue 24's wrong answers and unclear messages, each pinned: a rebuilt
//! binary never names a profile's samples silently, gmon.out of a PIE
//! holds what gprof reads, and the messages name what the user did.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cpuprof, report_texts, texts};
use cpuprof_testkit::{compile, require_tool, run_ok, TempDir};

/// The README's small program (60/30/10% in burn_a/b/c), built in `dir`
/// as `name` from its source with `extra` C code before `burn_a`.
fn build(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let source = std::fs::read_to_string(common::readme_prog()).unwrap();
    let at = source
        .find("__attribute__((noinline)) double burn_a")
        .unwrap();
    let text = format!("{}{extra}\n{}", &source[..at], &source[at..]);
    build_source(dir, name, &text, &["-O2", "-g"])
}

/// The C program `text` built in `dir` as `name` with gcc and `flags`.
fn build_source(dir: &Path, name: &str, text: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, text).unwrap();
    compile("gcc", &[&c], &dir.join(name), flags)
}

/// Code added before `burn_a` by a rebuild: a small function (same pages)
/// or 8 KB of code (the code segment grows by two pages).
const SMALL_PAD: &str =
    "__attribute__((noinline)) double pad3(double s) { return s * 3.5 + cpu_now(); }";
const PAGES_PAD: &str = "__asm__(\".text\\n.globl pad3\\n.type pad3,@function\\npad3: .fill 8192,1,0x90\\nret\\n.size pad3,.-pad3\\n.previous\");";

/// Runs `binary` under `cpuprof record` with `args`, writing `profile`.
fn record(binary: &Path, profile: &Path, args: &[&str]) {
    run_ok(
        cpuprof()
            .arg("record")
            .args(args)
            .arg("-o")
            .arg(profile)
            .args(["--nodecount", "0", "--"])
            .arg(binary)
            .env("README_PROG_SECONDS", "0.3"),
    );
}

/// The program built in `dir` as `prog` and its gperftools profile
/// recorded by the agent, `prog.prof`.
fn recorded(dir: &Path) -> (PathBuf, PathBuf) {
    let prog = build(dir, "prog", "");
    let profile = dir.join("prog.prof");
    record(&prog, &profile, &["--format", "gperftools"]);
    (prog, profile)
}

/// `cpuprof report ARGS` with no standard input: (stdout, stderr, status).
fn run(args: &[&str], inputs: &[&Path]) -> (String, String, i32) {
    report_texts(args, |cmd| {
        cmd.args(inputs);
    })
}

/// `cpuprof report --text ARGS`: (stdout, stderr).
fn text(args: &[&Path]) -> (String, String) {
    let (stdout, stderr, status) = run(&["--text"], args);
    assert_eq!(status, 0, "{stderr}");
    (stdout, stderr)
}

/// Makes `path` look written `seconds` ago.
fn age(path: &Path, seconds: u32) {
    let out = Command::new("touch")
        .arg("-d")
        .arg(format!("-{seconds} seconds"))
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
}

#[test]
fn a_rebuilt_binary_never_names_an_agent_profile_s_samples() {
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let prog = build(dir.path(), "prog", "");
    let old = dir.path().join("old.prof");
    let old_pb = dir.path().join("old.pb.gz");
    record(&prog, &old, &["--format", "gperftools"]);
    record(&prog, &old_pb, &[]);
    let (before, _) = text(&[&prog, &old]);
    assert!(before.contains("burn_a"), "{before}");
    // The agent's gperftools profile carries the build ids: the rebuilt
    // file (a function added before the hot one, same pages) is refused
    // by id, in one line naming both.
    build(dir.path(), "prog", SMALL_PAD);
    let (out, err) = text(&[&prog, &old]);
    assert!(!out.contains("pad3") && !out.contains("burn_a"), "{out}");
    let refusals: Vec<&str> = err.lines().filter(|l| l.contains("build id")).collect();
    assert_eq!(refusals.len(), 1, "{err}");
    assert!(
        refusals[0].contains("in the profile,") && refusals[0].contains("on disk; not using it"),
        "{err}"
    );
    // Go pprof reads the build id of the same line (its brief form).
    if require_tool("pprof") {
        let raw = cpuprof_testkit::run_stdout(Command::new("pprof").arg("-raw").arg(&old));
        let mapping = raw
            .lines()
            .find(|l| l.contains(&*prog.to_string_lossy()))
            .unwrap();
        let id = refusals[0]
            .split("build id ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert!(mapping.contains(id), "{mapping} lacks {id}");
    }
    // profile.proto: the same warning, once (it was printed twice).
    let (_, err) = text(&[&prog, &old_pb]);
    assert_eq!(
        err.lines().filter(|l| l.contains("build id")).count(),
        1,
        "{err}"
    );
}

#[test]
fn a_rebuilt_binary_never_names_a_libprofiler_profile_s_samples() {
    let Some(libprofiler) = cpuprof_testkit::gcc_and_libprofiler() else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let prog = build(dir.path(), "prog", "");
    let old = dir.path().join("old.prof");
    let out = Command::new(&prog)
        .env("LD_PRELOAD", &libprofiler)
        .env("CPUPROFILE", &old)
        .env("CPUPROFILE_FREQUENCY", "1000")
        .env("README_PROG_SECONDS", "0.3")
        .output()
        .unwrap();
    assert!(out.status.success());
    age(&old, 600);
    // The code grew by two pages: the profile's map does not fit the
    // file's code segment; refused in one line naming both.
    build(dir.path(), "prog", PAGES_PAD);
    let (out, err) = text(&[&prog, &old]);
    assert!(!out.contains("pad3") && !out.contains("burn_a"), "{out}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("another build"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("the profile maps") && lines[0].contains("the file's code segment"),
        "{err}"
    );
    // Rebuilt within the same pages: nothing in the file can tell, but it
    // is newer than the profile: one warning, whatever the names.
    build(dir.path(), "prog", SMALL_PAD);
    let (out, err) = text(&[&prog, &old]);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("after the profile"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("modified 10 min after the profile"),
        "{err}"
    );
    assert!(out.contains("Total:"), "{out}");
    // The build that ran, older than its profile: no warning.
    let same = build(dir.path(), "same", "");
    age(&same, 900);
    let (_, err) = text(&[&same, &old]);
    assert!(!err.contains("after the profile"), "{err}");
}

#[test]
fn gmon_out_of_a_pie_holds_link_time_addresses_gprof_reads() {
    if !require_tool("gcc") || !require_tool("gprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (prog, profile) = recorded(dir.path());
    let gmon = dir.path().join("g.out");
    let out = cpuprof()
        .args(["convert", "--to", "gmon", "-o"])
        .arg(&gmon)
        .arg(&prog)
        .arg(&profile)
        .output()
        .unwrap();
    let (_, err, status) = texts(&out);
    assert_eq!(status, 0, "{err}");
    let flat = cpuprof_testkit::run_stdout(
        Command::new("gprof")
            .args(["-b", "-p"])
            .arg(&prog)
            .arg(&gmon),
    );
    for name in ["burn_a", "burn_b", "burn_c"] {
        assert!(flat.contains(name), "gprof -b -p: {flat}");
    }
    // Samples counted, not records: the call stacks dropped are those of
    // every sample kept; the others' objects are named.
    let (report, _) = text(&[&prog, &profile]);
    let total: i64 = report.split_whitespace().nth(1).unwrap().parse().unwrap();
    let number = |marker: &str| -> Option<i64> {
        err.lines().find(|l| l.contains(marker)).map(|l| {
            l.split(marker)
                .next()
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .parse()
                .unwrap()
        })
    };
    let other = number(" samples in other objects").unwrap_or(0);
    let stacks = number(" samples dropped: gmon.out keeps only").unwrap_or(0);
    assert!(total > 100, "{report}");
    assert_eq!(stacks + other, total, "{err}");
    // And cpuprof reads it back with the executable's names.
    let (back, _) = text(&[&prog, &gmon]);
    assert!(
        back.lines().nth(1).is_some_and(|l| l.ends_with("burn_a")),
        "{back}"
    );
}

#[test]
fn record_without_dashes_and_conflicting_flags_name_what_was_typed() {
    let out = cpuprof()
        .args(["record", "-F", "100", "./prog", "a"])
        .output()
        .unwrap();
    let (_, err, status) = texts(&out);
    assert_eq!(status, 2);
    assert_eq!(
        err.trim(),
        "cpuprof: record: unexpected argument './prog': the command to profile comes after '--': cpuprof record -F 100 -- ./prog a"
    );
    let out = cpuprof()
        .args(["report", "--http=:", "--text", "x.prof"])
        .output()
        .unwrap();
    let (_, err, status) = texts(&out);
    assert_eq!(status, 2);
    assert_eq!(
        err.trim(),
        "cpuprof: report: --http cannot be used with --text"
    );
}

#[test]
fn proto_to_a_terminal_is_refused_like_other_binary_outputs() {
    if !require_tool("gcc") || cpuprof_testkit::which("script").is_none() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (prog, profile) = recorded(dir.path());
    let command = format!(
        "{} report --proto {} {}",
        env!("CARGO_BIN_EXE_cpuprof"),
        prog.display(),
        profile.display()
    );
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("refusing to write gzipped profile.proto to a terminal"),
        "{text}"
    );
    assert!(!out.status.success());
}

#[test]
fn a_profile_cut_in_its_list_of_mapped_objects_says_so() {
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (_, profile) = recorded(dir.path());
    let mut data = std::fs::read(&profile).unwrap();
    data.truncate(data.len() - 20);
    let cut = dir.path().join("cut.prof");
    std::fs::write(&cut, &data).unwrap();
    let (_, err) = text(&[&cut]);
    assert!(
        err.contains("the list of mapped objects is truncated (the file ends inside a line)"),
        "{err}"
    );
    let (_, err) = text(&[&profile]);
    assert!(!err.contains("truncated"), "{err}");
}

#[test]
fn a_profile_window_ended_by_the_program_s_exit_says_so() {
    // A server that takes the request and goes away, as a profiled
    // program that exits during the window does.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = std::io::Read::read(&mut stream, &mut buf);
        drop(stream);
    });
    let url = format!("127.0.0.1:{port}/pprof/profile?seconds=1");
    let (_, err, status) = report_texts(&["--text", "--timeout=10", &url], |cmd| {
        cmd.env("PPROF_TMPDIR", std::env::temp_dir());
    });
    server.join().unwrap();
    assert_eq!(status, 1);
    assert!(
        err.contains(
            "the program exited (or the server went away) during the 1-second profile window"
        ),
        "{err}"
    );
    assert!(!err.contains("Peer disconnected"), "{err}");
}

#[test]
fn a_report_with_nothing_left_says_which_filter_removed_everything() {
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (prog, profile) = recorded(dir.path());
    let (out, err, status) = run(&["--text", "--focus=no_such_function"], &[&prog, &profile]);
    assert_eq!(status, 0, "{err}");
    assert!(out.starts_with("Total:"), "{out}");
    assert!(
        err.contains("cpuprof: note: focus=no_such_function matches none of the ")
            && err.contains(" samples: nothing left to show"),
        "{err}"
    );
    // `.` matches every function (`main` would not: the agent's random
    // first period may sample the loader before main).
    let (_, err, status) = run(&["--dot", "--ignore=."], &[&prog, &profile]);
    assert_eq!(status, 1);
    assert!(
        err.contains("no nodes to print: ignore=. removes all of the "),
        "{err}"
    );
    // A focus that matches, then an ignore that removes what it kept.
    let (_, err, _) = run(
        &["--text", "--focus=burn_a", "--ignore=recurse"],
        &[&prog, &profile],
    );
    assert!(err.contains("ignore=recurse removes all of the "), "{err}");
    // A profile without samples (a header, the trailer, no records).
    let mut empty: Vec<u8> = [0u64, 3, 0, 1000, 0, 0, 1, 0]
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    empty.extend_from_slice(b"00400000-00401000 r-xp 00000000 00:00 0 /bin/x\n");
    let path = dir.path().join("empty.prof");
    std::fs::write(&path, empty).unwrap();
    let (_, err, status) = run(&["--text"], &[&path]);
    assert_eq!(status, 0, "{err}");
    assert!(
        err.contains("cpuprof: note: the profile has no samples"),
        "{err}"
    );
    let (_, err, status) = run(&["--dot"], &[&path]);
    assert_eq!(status, 1);
    assert!(
        err.contains("no nodes to print: the profile has no samples"),
        "{err}"
    );
}

/// Two branches of one loop whose shares change between two runs.
const DIFF_PROG: &str = r#"#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) void work(long n) { for (long i = 0; i < n; i++) sink += i * i; }
__attribute__((noinline)) void alpha(long n) { work(n); }
__attribute__((noinline)) void beta(long n) { work(n); }
int main(int argc, char **argv) {
    long a = atol(argv[1]), b = atol(argv[2]);
    for (int k = 0; k < 10; k++) { alpha(a); beta(b); }
    return 0;
}
"#;

/// The lines of a report without Go's `Time:` (we print no time) and
/// without trailing blanks (Go pads the tree's header with tabs).
fn report_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.starts_with("Time: "))
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// `text` has a number that is not one: a word `inf`, `nan`, `NaN`,
/// `Infinity` (as `+inf%`, `nan%`, JSON's or JavaScript's would print).
fn undefined(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| matches!(w, "inf" | "nan" | "NaN" | "Infinity"))
}

/// A `--text` row or tree line without its running `sum%` (the third
/// column), which depends on every row above it.
fn without_sum(line: &str) -> Vec<&str> {
    let mut fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() > 2 {
        fields.remove(2);
    }
    fields
}

/// The line of `lines` ending in `  NAME` (a `--text` row) or `| NAME` (a
/// tree node).
fn line_of<'a>(lines: &'a [String], suffix: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.ends_with(suffix))
        .unwrap_or_else(|| panic!("no line ending in {suffix:?}:\n{}", lines.join("\n")))
}

#[test]
fn a_diff_without_confidence_prints_what_go_pprof_diff_base_prints() {
    if !require_tool("gcc") || !require_tool("pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let prog = build_source(
        dir.path(),
        "diff",
        DIFF_PROG,
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    // Recorded once each; both tools then read the same two files.
    let profile = |name: &str, format: &str, a: &str, b: &str| {
        let path = dir.path().join(name);
        run_ok(
            cpuprof()
                .args(["record", "--format", format, "--nodecount", "0", "-o"])
                .arg(&path)
                .arg("--")
                .arg(&prog)
                .args([a, b]),
        );
        path
    };
    let old = profile("old.pb.gz", "pprof", "30000000", "10000000");
    let new = profile("new.pb.gz", "pprof", "20000000", "30000000");
    let go = |args: &[&str]| -> Vec<String> {
        let text = cpuprof_testkit::run_stdout(
            Command::new("pprof")
                .args(args)
                .arg(format!("-diff_base={}", old.display()))
                .arg(&prog)
                .arg(&new),
        );
        report_lines(&text)
    };
    let base = format!("--base={}", old.display());
    let ours = |args: &[&str]| -> Vec<String> {
        let mut all = args.to_vec();
        all.push(&base);
        report_lines(&common::report(&all, &[&prog, &new]))
    };

    // --text: Go's header (both profiles' comments, the base's total in
    // `Total samples =` and `of ... total`), and each row's values and
    // percentages of the base's total, |change| as Go prints them.
    // Which libc frames were sampled, and how each tool groups them (Go:
    // one `[libc.so.6]` node; we: by function), moves the count of
    // dropped nodes, what the shown ones account for and the running
    // sum%: those are left out; the base's total (`of … total`) and each
    // row's own columns are compared.
    let (go_top, our_top) = (go(&["-top"]), ours(&["--text"]));
    let header = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .take_while(|l| !l.trim_start().starts_with("flat"))
            .filter(|l| !l.starts_with("Dropped "))
            .map(|l| match l.strip_prefix("Showing nodes accounting for ") {
                Some(rest) => rest.rsplit(" of ").next().unwrap_or("").to_string(),
                None => l.clone(),
            })
            .collect()
    };
    assert_eq!(header(&our_top), header(&go_top), "{our_top:#?}");
    assert!(
        our_top
            .iter()
            .any(|l| l.starts_with("Showing nodes accounting for ") && l.contains(" of ")),
        "{our_top:#?}"
    );
    for name in ["  work", "  alpha", "  beta", "  main"] {
        assert_eq!(
            without_sum(line_of(&our_top, name)),
            without_sum(line_of(&go_top, name)),
            "{name}"
        );
    }
    // One function shrank: its value is negative, its percentage is of
    // its size (Go's |value| / total).
    assert!(line_of(&our_top, "  alpha").contains("ms"), "{our_top:#?}");
    assert!(
        without_sum(line_of(&our_top, "  alpha"))[2].starts_with('-'),
        "alpha shrank: {our_top:#?}"
    );

    // --tree and --peek: the same header, and each node's line.
    let (go_tree, our_tree) = (go(&["-tree"]), ours(&["--tree"]));
    assert_eq!(header(&our_tree)[..], header(&go_tree)[..], "{our_tree:#?}");
    for name in ["| work", "| alpha", "| beta", "| main"] {
        assert_eq!(
            without_sum(line_of(&our_tree, name)),
            without_sum(line_of(&go_tree, name)),
            "{name}"
        );
    }
    let (go_peek, our_peek) = (go(&["-peek=^beta$"]), ours(&["--peek=^beta$"]));
    assert_eq!(our_peek, go_peek);

    // The base's total, from Go's `of 1171ms total`.
    let showing = line_of(&go_top, " total").to_string();
    let base_ms: f64 = showing
        .rsplit(" of ")
        .next()
        .and_then(|t| t.strip_suffix("ms total"))
        .unwrap_or_else(|| panic!("{showing}"))
        .parse()
        .unwrap();
    // --json: the base's total, and percentages of it.
    let json: serde_json::Value =
        serde_json::from_str(&common::report(&["--json", &base], &[&prog, &new])).unwrap();
    assert_eq!(
        json["base_total"].as_f64().unwrap(),
        base_ms * 1e6,
        "{json}"
    );
    let row = |name: &str| {
        json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()
            .clone()
    };
    let beta_cum = row("beta")["cum"].as_f64().unwrap();
    let beta_percent = (beta_cum / (base_ms * 1e6) * 1000.0).round() / 10.0;
    assert_eq!(row("beta")["cum_percent"].as_f64().unwrap(), beta_percent);
    // --dot: labels in percent of the base's total, which the legend
    // names.
    // (In nanoseconds, to compare exactly: the graph labels each value
    // in its own unit by default.)
    let dot = common::report(&["--dot", "--unit=ns", &base], &[&prog, &new]);
    assert!(
        dot.contains(&format!(
            "Total cpu in the base: {}ns (values are changes from it)",
            (base_ms * 1e6) as i64
        )),
        "{dot}"
    );
    assert!(
        dot.contains(&format!("of {}ns ({beta_percent:.1}%)", beta_cum as i64)),
        "{dot}"
    );
    // No output shows an infinite or undefined percentage.
    for args in [
        &["--text"][..],
        &["--tree"],
        &["--dot"],
        &["--json"],
        &["--traces"],
        &["--flame=svg"],
        &["--text", "--focus=beta"],
    ] {
        let mut all = args.to_vec();
        all.push(&base);
        let out = common::report(&all, &[&prog, &new]);
        assert!(!undefined(&out), "{args:?}:\n{out}");
    }
    // The same profiles diffed with themselves: changes of 0, no nan.
    let same = common::report(
        &["--text", &format!("--base={}", new.display())],
        &[&prog, &new],
    );
    assert!(!undefined(&same), "{same}");

    // An empty base (the new profile with every sample filtered out: a
    // recorded run of `true` may hold a sample, its first period being
    // random): Go takes the percentages of the changes' own total; so do
    // we, in every output, with no inf or nan.
    let empty = dir.path().join("empty.pb.gz");
    let out = run_ok(
        cpuprof()
            .args(["report", "--proto", "--focus=^nothing_matches$"])
            .arg(&prog)
            .arg(&new),
    );
    std::fs::write(&empty, &out.stdout).unwrap();
    let empty_base = format!("--base={}", empty.display());
    let go_empty = report_lines(&cpuprof_testkit::run_stdout(
        Command::new("pprof")
            .arg("-top")
            .arg(format!("-diff_base={}", empty.display()))
            .arg(&prog)
            .arg(&new),
    ));
    let our_empty = report_lines(&common::report(&["--text", &empty_base], &[&prog, &new]));
    assert_eq!(header(&our_empty), header(&go_empty), "{our_empty:#?}");
    for name in ["  work", "  alpha", "  beta", "  main"] {
        assert_eq!(
            without_sum(line_of(&our_empty, name)),
            without_sum(line_of(&go_empty, name)),
            "{name}"
        );
    }
    for args in [
        &["--tree"][..],
        &["--peek=beta"],
        &["--dot"],
        &["--json"],
        &["--flame=svg"],
        &["--text", "--confidence"],
    ] {
        let mut all = args.to_vec();
        all.push(&empty_base);
        let out = common::report(&all, &[&prog, &new]);
        assert!(!undefined(&out), "{args:?}:\n{out}");
    }

    // gperftools profiles (counts): the base's total in samples; Go
    // prints it in milliseconds (1 ms a sample at 1000 Hz).
    let old_g = profile("old.prof", "gperftools", "30000000", "10000000");
    let new_g = profile("new.prof", "gperftools", "20000000", "30000000");
    let go_g = cpuprof_testkit::run_stdout(
        Command::new("pprof")
            .arg("-top")
            .arg(format!("-diff_base={}", old_g.display()))
            .arg(&prog)
            .arg(&new_g),
    );
    let go_showing = go_g.lines().find(|l| l.starts_with("Showing")).unwrap();
    let go_total: i64 = go_showing
        .rsplit(" of ")
        .next()
        .and_then(|t| t.strip_suffix("ms total"))
        .unwrap()
        .parse()
        .unwrap();
    let base_g = format!("--base={}", old_g.display());
    let text = common::report(&["--text", &base_g], &[&prog, &new_g]);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "Total: {go_total} samples in the base; rows are changes from it, percentages of it (shown: "
        )),
        "{text}"
    );
    assert!(!undefined(&text), "{text}");
    // Over an empty gperftools base, percentages of the changes' total.
    let empty_g = dir.path().join("empty.prof");
    run_ok(
        cpuprof()
            .arg("convert")
            .arg(&empty)
            .arg("-o")
            .arg(&empty_g)
            .args(["--to", "gperftools"]),
    );
    let text_empty = common::report(
        &["--text", &format!("--base={}", empty_g.display())],
        &[&prog, &new_g],
    );
    assert!(
        text_empty.lines().next().unwrap().starts_with(
            "Total: 0 samples in the base; rows are changes from it, percentages of their total (shown: +"
        ) && text_empty.lines().next().unwrap().ends_with(", 100.0%)"),
        "{text_empty}"
    );
    assert!(!undefined(&text_empty), "{text_empty}");
    // Each row's cum% is Go's, to perl's one decimal.
    let go_beta = go_g.lines().find(|l| l.ends_with("  beta")).unwrap();
    let go_cum: f64 = go_beta
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    let our_beta = text.lines().find(|l| l.ends_with(" beta")).unwrap();
    let our_cum: f64 = our_beta
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!((our_cum - go_cum).abs() <= 0.051, "{our_beta} / {go_beta}");

    // The shell's `top`: what `--text` prints (its summary line compared
    // with Go's above).
    let out = cpuprof_testkit::run_with_stdin(
        cpuprof().args(["report", "-i", &base]).arg(&prog).arg(&new),
        "top\nquit\n",
    );
    let (stdout, stderr, _) = texts(&out);
    let all = format!("{stdout}{stderr}");
    let our_showing = line_of(&our_top, " total");
    assert!(all.contains(our_showing), "{all}");
    assert!(!undefined(&all), "{all}");
}

/// Two threads burning for the seconds of the first argument.
const THREADED_PROG: &str = r#"#include <pthread.h>
#include <stdlib.h>
#include <time.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile double sink;
static double seconds;
__attribute__((noinline)) void threaded_burn(void) {
    double end = now(CLOCK_MONOTONIC) + seconds, x = 1;
    while (now(CLOCK_MONOTONIC) < end) for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}
static void *worker(void *arg) { (void)arg; threaded_burn(); return NULL; }
int main(int argc, char **argv) {
    seconds = atof(argv[1]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
"#;

/// The lines of a tool's output naming a frame of the agent.
fn agent_frames(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            [
                "cpuprof::",
                "_ZN7cpuprof",
                "libcpuprof",
                "threads::trampoline",
            ]
            .iter()
            .any(|n| l.contains(n))
        })
        .collect()
}

#[test]
fn profiles_of_record_and_of_the_endpoint_hold_no_agent_frame() {
    if !require_tool("gcc") || !require_tool("pprof") || !require_tool("google-pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let prog = build_source(
        dir.path(),
        "threaded",
        THREADED_PROG,
        &["-O2", "-g", "-pthread"],
    );
    let check = |profile: &Path, gperftools: bool| {
        // Our own conversion keeps every frame of the file.
        let folded = profile.with_extension("folded");
        run_ok(
            cpuprof()
                .args(["convert", "--to", "collapsed", "-o"])
                .arg(&folded)
                .arg(&prog)
                .arg(profile),
        );
        let collapsed = std::fs::read_to_string(&folded).unwrap();
        assert!(collapsed.contains("threaded_burn"), "{collapsed}");
        assert_eq!(
            agent_frames(&collapsed),
            Vec::<&str>::new(),
            "convert --to collapsed"
        );
        let traces = cpuprof_testkit::run_stdout(
            Command::new("pprof").arg("-traces").arg(&prog).arg(profile),
        );
        assert!(traces.contains("threaded_burn"), "{traces}");
        assert_eq!(
            agent_frames(&traces),
            Vec::<&str>::new(),
            "Go pprof -traces"
        );
        if gperftools {
            let text = cpuprof_testkit::run_stdout(
                Command::new("google-pprof")
                    .args(["--text", "--nodecount=1000"])
                    .arg(&prog)
                    .arg(profile),
            );
            assert!(text.contains("threaded_burn"), "{text}");
            assert_eq!(
                agent_frames(&text),
                Vec::<&str>::new(),
                "google-pprof --text"
            );
        }
    };
    // `cpuprof record`, both formats.
    for (format, gperftools) in [("gperftools", true), ("pprof", false)] {
        let profile = dir.path().join(format!("threaded.{format}"));
        run_ok(
            cpuprof()
                .args(["record", "--nodecount", "0", "--format", format, "-o"])
                .arg(&profile)
                .arg("--")
                .arg(&prog)
                .arg("0.3"),
        );
        check(&profile, gperftools);
    }
    // A window of the HTTP endpoint, as Go pprof fetches (and saves) it.
    let Some((mut child, port)) = common::start_under_agent_endpoint(&prog, &["30"]) else {
        panic!("the agent did not say where it serves");
    };
    let saved = dir.path().join("fetched");
    std::fs::create_dir(&saved).unwrap();
    let out = Command::new("pprof")
        .args(["-raw", "-seconds=1"])
        .arg(format!("http://127.0.0.1:{port}/pprof/profile"))
        .env("PPROF_TMPDIR", &saved)
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let (raw, err, status) = texts(&out);
    assert_eq!(status, 0, "{err}");
    let locations = raw.split("\nMappings").next().unwrap();
    assert!(locations.contains("threaded_burn"), "{raw}");
    assert_eq!(
        agent_frames(locations),
        Vec::<&str>::new(),
        "Go pprof -raw of a window"
    );
    let file = std::fs::read_dir(&saved)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("Go pprof saved the window");
    check(&file, false);
}

#[test]
fn files_cpuprof_writes_on_its_own_are_in_the_temporary_directory() {
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let named = |name: &str| name.starts_with("cpuprof-");
    // `cpuprof demo`'s profile, with no -o.
    let out = run_ok(
        cpuprof()
            .args(["demo", "-t", "1", "-s", "0.2"])
            .env("TMPDIR", &tmp),
    );
    let (stdout, stderr, _) = texts(&out);
    let files: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() == 1 && named(&files[0]) && files[0].ends_with(".prof"),
        "{files:?}"
    );
    assert!(
        format!("{stdout}{stderr}").contains(&tmp.join(&files[0]).display().to_string()),
        "the demo names its profile: {stdout}{stderr}"
    );
    // The scripted shell's SVG and HTML reports.
    let (prog, profile) = recorded(dir.path());
    let out = cpuprof_testkit::run_with_stdin(
        cpuprof()
            .args(["report", "-i"])
            .arg(&prog)
            .arg(&profile)
            .env("TMPDIR", &tmp),
        "svg\nflame\nquit\n",
    );
    let (stdout, stderr, _) = texts(&out);
    let reports: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Generating report in "))
        .collect();
    assert_eq!(reports.len(), 2, "{stdout}{stderr}");
    for report in reports {
        let path = Path::new(report);
        assert_eq!(path.parent(), Some(tmp.as_path()), "{report}");
        assert!(
            named(&path.file_name().unwrap().to_string_lossy()),
            "{report}"
        );
        assert!(path.is_file(), "{report}");
    }
    assert!(
        !stdout.contains("<svg") && !stdout.contains("<html"),
        "{stdout}"
    );
}
