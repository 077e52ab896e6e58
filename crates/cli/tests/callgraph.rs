//! The call-graph outputs of `cpuprof report` on profiles written by
//! Debian's libprofiler.so for `tests/workloads/spin.c` (built with gcc at
//! test time):
//! - `--dot` is accepted by Graphviz (`dot -Tsvg`);
//! - the kept nodes (names and numbers) equal google-pprof's `--dot` for
//!   the same trimming options;
//! - node local/cum equal the text report's flat/cum;
//! - a node's local count plus its kept out-edges equal its cum, except
//!   for exactly the out-edges trimming dropped; the edges into a node
//!   (not recursive, not the outermost frame) sum to its cum;
//! - `--svg` (built-in and dot layouts), `-o`, `--web` without a display
//!   and with `$BROWSER`, refusing binary output on a terminal, and a clear
//!   message when `dot` is missing.
//!
//! Names: perl pprof names inlined frames `f (inline)` (cpuprof: `f`), and
//! names some libc functions by other `nm` aliases than the debug
//! information's; a node whose name differs only that way is matched by its
//! numbers among the nodes left unmatched by name (and the functions of
//! the workload must match by name).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cpuprof_testkit::{build_spin, libprofiler, profile_with_libprofiler, require_tool, TempDir};

mod common;
use common::cpuprof;

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A node of a pprof-style DOT file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DotNode {
    /// The name lines of the label, joined with `\n`.
    name: String,
    flat: i64,
    cum: i64,
    fontsize: String,
}

/// The nodes (by id) and edges (by ids) of a pprof-style DOT file.
#[derive(Debug, Default)]
struct Dot {
    nodes: BTreeMap<u32, DotNode>,
    edges: Vec<(u32, u32, i64)>,
    legend: Vec<String>,
}

fn parse_dot(text: &str) -> Dot {
    let node =
        regex::Regex::new(r#"^N(\d+) \[label="(.*)",shape=box,fontsize=([0-9.]+)\];$"#).unwrap();
    let edge = regex::Regex::new(r"^N(\d+) -> N(\d+) \[label=(-?\d+), weight=\d+, style=").unwrap();
    let value = regex::Regex::new(r"^(?:of )?(-?\d+) \(.*%\)$").unwrap();
    let mut dot = Dot::default();
    for line in text.lines() {
        if let Some(legend) =
            line.strip_prefix("Legend [shape=box,fontsize=24,shape=plaintext,label=\"")
        {
            dot.legend = legend
                .trim_end_matches("\"];")
                .split("\\l")
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
        } else if let Some(c) = node.captures(line) {
            let label = c[2].trim_end_matches("\\r");
            let (names, values) = label.rsplit_once("\\n").expect("name and values");
            let values: Vec<i64> = values
                .split("\\r")
                .map(|v| {
                    value
                        .captures(v)
                        .unwrap_or_else(|| panic!("value {v:?} in {line}"))[1]
                        .parse()
                        .unwrap()
                })
                .collect();
            let flat = values[0];
            let cum = *values.get(1).unwrap_or(&flat);
            dot.nodes.insert(
                c[1].parse().unwrap(),
                DotNode {
                    name: names.to_string(),
                    flat,
                    cum,
                    fontsize: c[3].to_string(),
                },
            );
        } else if let Some(c) = edge.captures(line) {
            dot.edges.push((
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
            ));
        }
    }
    dot
}

struct Case {
    _dir: TempDir,
    binary: PathBuf,
    profile: PathBuf,
}

fn spin_case(threads: &str) -> Option<Case> {
    let lib = libprofiler()?;
    let dir = TempDir::new().unwrap();
    let (binary, _) = build_spin(dir.path(), "spin", &["-fno-omit-frame-pointer"]);
    let profile = dir.path().join("spin.prof");
    profile_with_libprofiler(
        &lib,
        &binary,
        &["-s", "1", "-t", threads, "-d", "12"],
        &profile,
        1000,
    );
    Some(Case {
        _dir: dir,
        binary,
        profile,
    })
}

fn ours(case: &Case, args: &[&str]) -> String {
    stdout_of(
        cpuprof()
            .arg("report")
            .args(args)
            .arg(&case.binary)
            .arg(&case.profile),
    )
}

fn theirs(case: &Case, args: &[&str]) -> String {
    stdout_of(
        Command::new("google-pprof")
            .args(args)
            .arg(&case.binary)
            .arg(&case.profile)
            .stderr(Stdio::null()),
    )
}

const WORKLOAD_FUNCTIONS: &[&str] = &[
    "burn_a",
    "burn_b",
    "burn_c",
    "recurse",
    "work",
    "main",
    "thread_main",
];

/// Asserts that the two DOT files keep the same nodes; returns how many
/// matched by name.
fn assert_same_nodes(ours: &Dot, theirs: &Dot, what: &str) -> usize {
    // google-pprof has no file for the vDSO, so it cannot name a sample
    // that landed in it (the spin workload reads the clock in a loop: a
    // few samples do, or none, from run to run); we name it
    // `__vdso_clock_gettime`. Such a node of ours is left out.
    // It drops the frame, or shows its address as a node of its own: that
    // node of theirs is left out too.
    let compared: Vec<&DotNode> = ours
        .nodes
        .values()
        .filter(|n| {
            !n.name.starts_with("__vdso_") || theirs.nodes.values().any(|t| t.name == n.name)
        })
        .collect();
    let theirs_compared: Vec<&DotNode> = theirs
        .nodes
        .values()
        .filter(|t| !t.name.starts_with("0x") || ours.nodes.values().any(|n| n.name == t.name))
        .collect();
    assert_eq!(
        compared.len(),
        theirs_compared.len(),
        "{what}: node counts differ\nours: {:?}\ntheirs: {:?}",
        ours.nodes,
        theirs.nodes
    );
    let mut unmatched_ours = compared;
    let mut unmatched_theirs = Vec::new();
    let mut by_name = 0;
    for node in theirs_compared {
        let name = node.name.trim_end_matches("\\n(inline)");
        match unmatched_ours.iter().position(|o| o.name == name) {
            Some(i) => {
                let o = unmatched_ours.remove(i);
                assert_eq!(
                    (o.flat, o.cum),
                    (node.flat, node.cum),
                    "{what}: numbers of {name}"
                );
                assert_eq!(o.fontsize, node.fontsize, "{what}: font size of {name}");
                by_name += 1;
            }
            None => unmatched_theirs.push(node),
        }
    }
    for node in &unmatched_theirs {
        assert!(
            !WORKLOAD_FUNCTIONS.contains(&node.name.as_str()),
            "{what}: workload function {} not among our nodes {:?}",
            node.name,
            ours.nodes
        );
    }
    let mut ours_numbers: Vec<(i64, i64)> =
        unmatched_ours.iter().map(|n| (n.flat, n.cum)).collect();
    let mut theirs_numbers: Vec<(i64, i64)> =
        unmatched_theirs.iter().map(|n| (n.flat, n.cum)).collect();
    ours_numbers.sort();
    theirs_numbers.sort();
    assert_eq!(
        ours_numbers, theirs_numbers,
        "{what}: nodes unmatched by name differ in numbers: ours {unmatched_ours:?}, theirs {unmatched_theirs:?}"
    );
    by_name
}

#[test]
fn kept_nodes_match_google_pprof_for_the_same_trimming() {
    if !require_tool("google-pprof") {
        return;
    }
    let Some(case) = spin_case("2") else { return };
    let settings: &[&[&str]] = &[
        &[],
        &["--nodecount=6"],
        &["--nodefraction=0.1"],
        &["--nodefraction=0", "--edgefraction=0"],
        &["--nodecount=3", "--maxdegree=1"],
        &["--focus=burn_b"],
        &["--ignore=burn_a", "--nodefraction=0.02"],
    ];
    for args in settings {
        let mut with_dot = vec!["--dot"];
        with_dot.extend_from_slice(args);
        let ours = parse_dot(&ours(&case, &with_dot));
        let theirs = parse_dot(&theirs(&case, &with_dot));
        let what = format!("--dot {}", args.join(" "));
        let by_name = assert_same_nodes(&ours, &theirs, &what);
        eprintln!(
            "{what}: {} nodes, {by_name} matched by name",
            ours.nodes.len()
        );
        assert!(
            by_name * 2 >= ours.nodes.len(),
            "{what}: most nodes match by name"
        );
        // The legend's numbers: totals and limits.
        assert_eq!(ours.legend[1..], theirs.legend[1..], "{what}: legend");
    }
}

#[test]
fn dot_is_accepted_by_graphviz_and_agrees_with_the_text_report() {
    if !require_tool("dot") {
        return;
    }
    let Some(case) = spin_case("3") else { return };
    let dot_text = ours(&case, &["--dot"]);
    let dir = TempDir::new().unwrap();
    let dot_file = dir.path().join("graph.dot");
    std::fs::write(&dot_file, &dot_text).unwrap();
    let svg = stdout_of(Command::new("dot").arg("-Tsvg").arg(&dot_file));
    assert!(svg.contains("<svg"), "dot -Tsvg gave no SVG");
    let graph = parse_dot(&dot_text);
    assert!(graph.nodes.len() >= 7, "{graph:?}");
    // Every node's numbers are the text report's flat and cum.
    let text = cpuprof_testkit::TextReport::parse(&ours(&case, &["--text"]));
    for node in graph.nodes.values() {
        let name = node.name.replace("\\n", "::");
        let row = text
            .row(&name)
            .unwrap_or_else(|| panic!("{name} not in the text report"));
        assert_eq!((row.flat, row.cum), (node.flat, node.cum), "{name}");
    }
    assert_eq!(graph.legend[1], format!("Total samples: {}", text.total));
}

fn out_weights(dot: &Dot) -> HashMap<String, Vec<(String, i64)>> {
    let mut out: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    for &(from, to, weight) in &dot.edges {
        out.entry(dot.nodes[&from].name.clone())
            .or_default()
            .push((dot.nodes[&to].name.clone(), weight));
    }
    out
}

#[test]
fn out_edges_account_for_cum_minus_local_up_to_dropped_edges() {
    let Some(case) = spin_case("2") else { return };
    let full = parse_dot(&ours(
        &case,
        &[
            "--dot",
            "--nodecount=100000",
            "--nodefraction=0",
            "--edgefraction=0",
            "--maxdegree=100000",
        ],
    ));
    let trimmed = parse_dot(&ours(&case, &["--dot", "--nodecount=6", "--maxdegree=2"]));
    let full_out = out_weights(&full);
    let trimmed_out = out_weights(&trimmed);
    // Untrimmed: local + out-edges = cum for every node not calling itself
    // (recursion counts once in cum but on every edge of the cycle).
    let mut checked = 0;
    for node in full.nodes.values() {
        let edges = full_out.get(&node.name).cloned().unwrap_or_default();
        if edges.iter().any(|(to, _)| *to == node.name) {
            continue;
        }
        let sum: i64 = edges.iter().map(|(_, w)| w).sum();
        assert_eq!(node.flat + sum, node.cum, "{}: {edges:?}", node.name);
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} nodes checked");
    // And the edges into a node carry its cum, for every node that is
    // never the outermost frame (those have no caller) and not recursive.
    let mut into: HashMap<String, i64> = HashMap::new();
    for &(from, to, weight) in &full.edges {
        if from != to {
            *into.entry(full.nodes[&to].name.clone()).or_default() += weight;
        }
    }
    let mut callees_checked = 0;
    for node in full.nodes.values() {
        let recursive = full_out
            .get(&node.name)
            .is_some_and(|e| e.iter().any(|(to, _)| *to == node.name));
        if let (Some(&sum), false) = (into.get(&node.name), recursive) {
            assert_eq!(sum, node.cum, "edges into {}", node.name);
            callees_checked += 1;
        }
    }
    assert!(
        callees_checked >= 6,
        "only {callees_checked} callees checked"
    );
    // Trimmed: what is missing is exactly the weight of the dropped edges.
    let mut with_drops = 0;
    for node in trimmed.nodes.values() {
        let all = full_out.get(&node.name).cloned().unwrap_or_default();
        if all.iter().any(|(to, _)| *to == node.name) {
            continue;
        }
        let kept = trimmed_out.get(&node.name).cloned().unwrap_or_default();
        let kept_sum: i64 = kept.iter().map(|(_, w)| w).sum();
        let dropped: i64 = all
            .iter()
            .filter(|e| !kept.contains(e))
            .map(|(_, w)| w)
            .sum();
        assert_eq!(node.flat + kept_sum + dropped, node.cum, "{}", node.name);
        with_drops += usize::from(dropped > 0);
    }
    assert!(
        with_drops > 0,
        "the trimmed graph dropped no edge: the test proves nothing"
    );
}

#[test]
fn svg_builtin_and_dot_layouts() {
    let Some(case) = spin_case("2") else { return };
    let dir = TempDir::new().unwrap();
    let builtin = dir.path().join("builtin.svg");
    let out = run(cpuprof()
        .args(["report", "--svg", "--layout=builtin", "-o"])
        .arg(&builtin)
        .arg(&case.binary)
        .arg(&case.profile));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "-o leaves stdout empty");
    let svg = std::fs::read_to_string(&builtin).unwrap();
    let document = roxmltree::Document::parse(&svg).expect("built-in SVG is XML");
    let dot = parse_dot(&ours(&case, &["--dot"]));
    let node_titles: Vec<String> = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .map(|g| {
            g.children()
                .find(|c| c.tag_name().name() == "title")
                .unwrap()
                .text()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(node_titles.len(), dot.nodes.len());
    for (title, node) in node_titles.iter().zip(dot.nodes.values()) {
        let name = node.name.replace("\\n", "::");
        assert!(
            title.starts_with(&format!("{name} | flat {} ", node.flat)),
            "{title} vs {name}"
        );
    }
    let edges = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge"))
        .count();
    assert_eq!(edges, dot.edges.len());
    if require_tool("dot") {
        let by_dot = ours(&case, &["--svg", "--layout=dot"]);
        assert!(by_dot.contains("<svg") && by_dot.contains("Generated by graphviz"));
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        roxmltree::Document::parse_with_options(&by_dot, options).expect("dot's SVG is XML");
        // dot installed: the default is dot.
        assert!(ours(&case, &["--svg"]).contains("Generated by graphviz"));
    }
}

/// A directory holding only links to the programs cpuprof may need, so
/// that `dot` is missing.
fn path_without_dot(dir: &Path) -> std::ffi::OsString {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    bin.into_os_string()
}

#[test]
fn missing_dot_is_a_clear_error_and_builtin_svg_still_works() {
    let Some(case) = spin_case("1") else { return };
    let dir = TempDir::new().unwrap();
    let path = path_without_dot(dir.path());
    for flag in ["--pdf", "--ps", "--png", "--gif"] {
        let out = run(cpuprof()
            .env("PATH", &path)
            .args(["report", flag, "-o"])
            .arg(dir.path().join("x"))
            .arg(&case.binary)
            .arg(&case.profile));
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("needs Graphviz's `dot`, which is not installed"),
            "{flag}: {err}"
        );
        assert!(!dir.path().join("x").exists(), "{flag}: no partial output");
    }
    let out = run(cpuprof()
        .env("PATH", &path)
        .args(["report", "--svg", "--layout=dot"])
        .arg(&case.binary)
        .arg(&case.profile));
    assert_eq!(out.status.code(), Some(1));
    let out = run(cpuprof()
        .env("PATH", &path)
        .args(["report", "--svg"])
        .arg(&case.binary)
        .arg(&case.profile));
    assert!(out.status.success());
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(
        svg.contains("class=\"node\"") && !svg.contains("graphviz"),
        "built-in layout without dot"
    );
}

#[test]
fn binary_formats_go_through_dot_and_refuse_a_terminal() {
    if !require_tool("dot") || !require_tool("script") {
        return;
    }
    let Some(case) = spin_case("1") else { return };
    let dir = TempDir::new().unwrap();
    for (flag, magic) in [
        ("--png", &b"\x89PNG"[..]),
        ("--gif", &b"GIF8"[..]),
        ("--pdf", &b"%PDF"[..]),
        ("--ps", &b"%!PS"[..]),
    ] {
        let file = dir.path().join(format!("graph{flag}"));
        let out = run(cpuprof()
            .args(["report", flag, "-o"])
            .arg(&file)
            .arg(&case.binary)
            .arg(&case.profile));
        assert!(
            out.status.success(),
            "{flag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            bytes.starts_with(magic),
            "{flag}: starts with {:?}",
            &bytes[..8.min(bytes.len())]
        );
    }
    // On a terminal (script gives the command a pseudo-terminal).
    let command = format!(
        "{} report --png {} {}",
        env!("CARGO_BIN_EXE_cpuprof"),
        case.binary.display(),
        case.profile.display()
    );
    let out = run(Command::new("script").args(["-qec", &command, "/dev/null"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("refusing to write PNG to a terminal"),
        "{text}"
    );
    assert!(!out.status.success());
}

#[test]
fn web_prints_the_path_without_a_display_and_opens_browser_with_one() {
    let Some(case) = spin_case("1") else { return };
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("graph.svg");
    let out = run(cpuprof()
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("BROWSER")
        .args(["report", "--web", "--layout=builtin", "-o"])
        .arg(&file)
        .arg(&case.binary)
        .arg(&case.profile));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        file.display().to_string()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no display"));
    assert!(std::fs::read_to_string(&file).unwrap().contains("<svg"));

    // --gv and --evince: PostScript and PDF through dot, into a temporary
    // file whose path is printed.
    if require_tool("dot") {
        for (flag, magic) in [("--gv", "%!PS"), ("--evince", "%PDF")] {
            let out = run(cpuprof()
                .env_remove("DISPLAY")
                .env_remove("WAYLAND_DISPLAY")
                .args(["report", flag])
                .arg(&case.binary)
                .arg(&case.profile));
            assert!(
                out.status.success(),
                "{flag}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            let bytes =
                std::fs::read(&path).unwrap_or_else(|e| panic!("{flag}: {}: {e}", path.display()));
            assert!(bytes.starts_with(magic.as_bytes()), "{flag}");
            let _ = std::fs::remove_file(path);
        }
    }

    // With a display, $BROWSER gets the file; without one too, when the
    // user named it (a text browser, a script).
    for display in [Some(":99"), None] {
        let browser = dir.path().join("browser.sh");
        let opened = dir.path().join("opened.txt");
        let _ = std::fs::remove_file(&opened);
        std::fs::write(
            &browser,
            format!("#!/bin/sh\necho \"$1\" > {}\n", opened.display()),
        )
        .unwrap();
        let executable =
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
        std::fs::set_permissions(&browser, executable).unwrap();
        let mut command = cpuprof();
        match display {
            Some(display) => command.env("DISPLAY", display),
            None => command.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY"),
        };
        let out = run(command
            .env("BROWSER", &browser)
            .args(["report", "--web", "--layout=builtin"])
            .arg(&case.binary)
            .arg(&case.profile));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !opened.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let shown = std::fs::read_to_string(&opened).expect("the browser was started");
        let shown = PathBuf::from(shown.trim());
        assert!(
            std::fs::read_to_string(&shown).unwrap().contains("<svg"),
            "{}",
            shown.display()
        );
        let _ = std::fs::remove_file(shown);
    }
}

#[test]
fn no_nodes_to_print_is_an_error() {
    let Some(case) = spin_case("1") else { return };
    let out = run(cpuprof()
        .args(["report", "--dot", "--nodefraction=2"])
        .arg(&case.binary)
        .arg(&case.profile));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no nodes to print"));
    assert!(out.stdout.is_empty());
}
