//! `show`, `show_from` and `peek` against Go pprof (`/usr/local/bin/pprof`)
//! on profiles written by Debian's libprofiler.so for workloads compiled
//! at test time: the spin workload (threads, recursion, an inlined
//! function, glibc and the vDSO) and the callgraph workload (many small
//! functions, a two-function cycle, recursion).
//!
//! Go names a few frames differently, and those names are normalised on
//! both sides before comparing: Go marks inlined frames `name (inline)`
//! (in `-top` rows, and on `-peek` edges that are inlined calls); it calls
//! the vDSO `[[vdso]]` where we name its `__vdso_` function; and of two
//! glibc aliases at one address it may pick another (`__clock_gettime`
//! where we name the public `clock_gettime`, `__libc_start_main_impl`
//! where we name `__libc_start_main`): the `__GI_` prefix, leading
//! underscores and an `_impl` suffix are removed on both sides.
//!
//! Skipped loudly without libprofiler or Go pprof, unless
//! `CPUPROF_REQUIRE_PEERS=1`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use cpuprof_profile::Profile;
use cpuprof_report::output::{text, tree};
use cpuprof_report::{Graph, Options, Stacks};
use cpuprof_testkit::{
    build_spin, compile, libprofiler, profile_with_libprofiler, require_tool, run_stdout,
    vdso_frame, workload, TempDir,
};
use regex::Regex;

/// A workload, its profile as files (for Go) and symbolized (for us).
struct Case {
    _dir: TempDir,
    binary: PathBuf,
    path: PathBuf,
    profile: Profile,
}

impl Case {
    fn new(dir: TempDir, binary: PathBuf, path: PathBuf) -> Case {
        let data = std::fs::read(&path).unwrap();
        let (_, mut profile) =
            cpuprof_profile::read_profile(&data, &Default::default()).expect("a profile");
        let symbolizer = cpuprof_symbolize::Symbolizer::new(cpuprof_symbolize::Options {
            binaries: vec![binary.clone()],
            ..Default::default()
        });
        symbolizer.symbolize(&mut profile);
        Case {
            _dir: dir,
            binary,
            path,
            profile,
        }
    }

    /// Go pprof's output for `args`, in samples (not CPU time).
    fn go(&self, args: &[&str]) -> String {
        run_stdout(
            Command::new("pprof")
                .arg("-sample_index=samples")
                .args(args)
                .arg(&self.binary)
                .arg(&self.path),
        )
    }
}

/// spin (two threads, 1 s) built with gcc -O2 -g.
fn spin() -> Option<&'static Case> {
    static CASE: OnceLock<Option<Case>> = OnceLock::new();
    CASE.get_or_init(|| {
        let lib = libprofiler()?;
        let dir = TempDir::new().unwrap();
        let (binary, _) = build_spin(dir.path(), "spin", &[]);
        let path = dir.path().join("spin.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "1", "-t", "2"], &path, 1000);
        Some(Case::new(dir, binary, path))
    })
    .as_ref()
}

/// callgraph (many small functions) built with gcc -O1 -g.
fn callgraph() -> Option<&'static Case> {
    static CASE: OnceLock<Option<Case>> = OnceLock::new();
    CASE.get_or_init(|| {
        let lib = libprofiler()?;
        let dir = TempDir::new().unwrap();
        let binary = compile(
            "gcc",
            &[&workload("callgraph.c")],
            &dir.path().join("callgraph"),
            &["-O1", "-g"],
        );
        let path = dir.path().join("callgraph.prof");
        profile_with_libprofiler(&lib, &binary, &["1500"], &path, 1000);
        Some(Case::new(dir, binary, path))
    })
    .as_ref()
}

/// A frame name as both sides can agree on it (see the module's doc).
fn normalise(name: &str) -> String {
    let name = name.trim_end();
    let name = name.strip_suffix(" (inline)").unwrap_or(name);
    let name = if name == "[[vdso]]" {
        "[vdso]"
    } else {
        vdso_frame(name)
    };
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    // We name glibc's public alias (`clock_gettime`), Go one with leading
    // underscores (`__clock_gettime`).
    let name = name.trim_start_matches('_');
    name.strip_suffix("_impl").unwrap_or(name).to_string()
}

/// (name, flat, cum) of each row of a text report, ours or Go's `-top`,
/// sorted by name.
fn rows(report: &str) -> Vec<(String, i64, i64)> {
    let mut rows: Vec<(String, i64, i64)> = report
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !fields[1].ends_with('%') || !fields[4].ends_with('%') {
                return None;
            }
            let flat = fields[0].parse().ok()?;
            let cum = fields[3].parse().ok()?;
            Some((normalise(&fields[5..].join(" ")), flat, cum))
        })
        .collect();
    rows.sort();
    rows
}

fn our_text(case: &Case, options: &Options) -> String {
    let stacks = Stacks::build(&case.profile, options);
    let graph = Graph::build(&stacks, false);
    let mut out = Vec::new();
    text::write(&mut out, &stacks, &graph, options).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn show_and_show_from_rows_equal_go_pprof_top() {
    let Some(case) = spin() else { return };
    if !require_tool("pprof") {
        return;
    }
    let untrimmed = ["-nodefraction=0", "-edgefraction=0", "-top"];
    // Which frames each case keeps, and why it is worth checking.
    let cases: &[(&str, &str)] = &[
        // show: by function name; callers and callees in between go.
        ("show", "burn|work"),
        // show: by file name (Go matches the function's file).
        ("show", "spin\\.c"),
        // show: by the mapped file's path (all of libc's frames).
        ("show", "libc\\.so"),
        // show: nothing matches (every stack empties, no rows).
        ("show", "no_such_function"),
        // show_from: a recursive function (cut above its outermost frame).
        ("show_from", "^recurse$"),
        ("show_from", "burn_b"),
        // show_from: an inlined function (its location is cut inside its
        // inline chain: burn_a/burn_b above cpu_now go).
        ("show_from", "cpu_now"),
        // show_from: a libc mapping matches every thread's root.
        ("show_from", "libc\\.so"),
        // show_from: nothing matches (every sample dropped).
        ("show_from", "no_such_function"),
    ];
    for &(filter, re) in cases {
        let regex = Some(Regex::new(re).unwrap());
        let options = if filter == "show" {
            Options {
                show: regex,
                ..Options::default()
            }
        } else {
            Options {
                show_from: regex,
                ..Options::default()
            }
        };
        let ours = our_text(case, &options);
        let go = case.go(&[&untrimmed[..], &[&format!("-{filter}={re}")]].concat());
        assert_eq!(
            rows(&ours),
            rows(&go),
            "-{filter}={re}\nours:\n{ours}\nGo:\n{go}"
        );
        // cpu_now has samples in some runs only (a short run at 250 Hz).
        if re != "no_such_function" && re != "cpu_now" {
            assert!(!rows(&ours).is_empty(), "-{filter}={re}: no rows");
        }
    }
}

/// show_from drops the stacks without a match: they leave the report's
/// total (Go's percentages stay relative to the whole profile, ours to
/// the kept samples, as with --focus).
#[test]
fn show_from_drops_unmatched_samples_and_keeps_the_grand_total() {
    let Some(case) = spin() else { return };
    let all = Stacks::build(&case.profile, &Options::default());
    let options = Options {
        show_from: Some(Regex::new("^burn_b$").unwrap()),
        ..Options::default()
    };
    let cut = Stacks::build(&case.profile, &options);
    let graph = Graph::build(&cut, false);
    let burn_b = cut
        .frames
        .iter()
        .position(|f| f.name == "burn_b")
        .expect("burn_b was sampled");
    assert_eq!(cut.grand_total, all.grand_total);
    assert_eq!(cut.total, graph.nodes[burn_b].cum);
    assert!(cut.total < all.total);
    // Every kept stack ends in burn_b.
    let mut frames = Vec::new();
    let mut locations = Vec::new();
    for i in 0..cut.len() {
        cut.expand(i, &mut frames);
        assert_eq!(cut.frame(*frames.last().unwrap()).name, "burn_b");
        cut.kept_sample(i, &mut locations);
        assert!(!locations.is_empty());
    }
}

/// The lines of a `-tree`/`-peek` report from its first separator on, with
/// trailing blanks trimmed (Go's legend ends in tabs) and names normalised.
fn tree_lines(report: &str) -> Vec<String> {
    report
        .lines()
        .skip_while(|l| *l != tree::SEPARATOR)
        .map(|line| match line.rfind("| ") {
            Some(at) => {
                let (head, name) = line.split_at(at + 2);
                let indent = name.len() - name.trim_start().len();
                format!("{head}{}{}", &name[..indent], normalise(name.trim_start()))
            }
            None => line.trim_end().to_string(),
        })
        .collect()
}

fn our_peek(case: &Case, options: &Options, re: &str) -> String {
    let stacks = Stacks::build(&case.profile, options);
    let graph = Graph::build(&stacks, false);
    let mut out = Vec::new();
    tree::write_peek(&mut out, &stacks, &graph, options, &Regex::new(re).unwrap()).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn peek_equals_go_pprof_line_by_line() {
    if !require_tool("pprof") {
        return;
    }
    let cases: &[(Option<&'static Case>, &str)] = &[
        // Many small functions: Go's peek is untrimmed (its driver sets
        // nodecount, nodefraction and edgefraction to 0 for peek), so the
        // smallest callers of leaf, under 0.1% of the total, are listed.
        (callgraph(), "leaf"),
        // A cycle, and callers of equal weight (ordered by name).
        (callgraph(), "is_|rec"),
        // Recursion, an inlined function with its callers, and threads.
        (spin(), "burn_b|cpu_now|recurse"),
        (spin(), "^work$"),
    ];
    for &(case, re) in cases {
        let Some(case) = case else { return };
        // Trimming settings are ignored, as Go ignores them for peek.
        let options = Options {
            nodecount: Some(1),
            nodefraction: 0.5,
            edgefraction: 0.5,
            ..Options::default()
        };
        let ours = our_peek(case, &options, re);
        let go = case.go(&[
            &format!("-peek={re}"),
            "-lines=false",
            "-nodecount=1",
            "-nodefraction=0.5",
        ]);
        let (ours_lines, go_lines) = (tree_lines(&ours), tree_lines(&go));
        assert!(ours_lines.len() > 4, "{re}: {ours}");
        for (i, (a, b)) in ours_lines.iter().zip(&go_lines).enumerate() {
            assert_eq!(a, b, "-peek={re}, line {i}\nours:\n{ours}\nGo:\n{go}");
        }
        assert_eq!(
            ours_lines.len(),
            go_lines.len(),
            "-peek={re}\nours:\n{ours}\nGo:\n{go}"
        );
        // The summary counts every node, as Go's does (Go names no unit
        // for counts).
        let summary = |s: &str| {
            s.lines()
                .find(|l| l.starts_with("Showing"))
                .map(|l| l.replace(" samples total", " total"))
        };
        assert_eq!(summary(&ours), summary(&go), "-peek={re}");
    }
}

#[test]
fn peek_without_a_match_says_so() {
    let Some(case) = spin() else { return };
    let options = Options::default();
    let stacks = Stacks::build(&case.profile, &options);
    let graph = Graph::build(&stacks, false);
    let mut out = Vec::new();
    let re = Regex::new("no_such_function").unwrap();
    let error = tree::write_peek(&mut out, &stacks, &graph, &options, &re).unwrap_err();
    assert_eq!(
        error.to_string(),
        "no matches found for regexp: no_such_function"
    );
    // Go prints nothing either.
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}
