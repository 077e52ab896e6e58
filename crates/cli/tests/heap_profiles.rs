//! Heap, growth and contention profiles, and Go's `debug=1` text
//! profiles, read as Go pprof and google-pprof read them (issue 20).
//!
//! The heap profiles are written at test time by Debian's tcmalloc heap
//! profiler for a C program of known allocations (3 × 8 MB kept by
//! `keep_big`, 4096 × 1 KB by `keep_small`, 200 × 1 MB allocated and
//! freed by `churn`), dumped every 50 MB allocated; the sampled `heap_v2`
//! one by tcmalloc's `MallocExtension::GetHeapSample`. Each file is fixed
//! once written: every row of ours (values from `--json`, raw) equals Go
//! pprof's `-top -unit=B` row, and our `--text` rows equal google-pprof's
//! `--text` rows (MB to one decimal) for each sample type.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cpuprof, report};
use cpuprof_testkit::{build_go, compile, peers_required, require_tool, run_stdout, TempDir};

const TCMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4";

const WORKLOAD: &str = r#"
#include <stdlib.h>
#include <string.h>
static void *keep[3];
static void *small[4096];
void *volatile sink;
__attribute__((noinline)) void keep_big(void) {
  for (int i = 0; i < 3; i++) { keep[i] = malloc(8 << 20); memset(keep[i], 1, 8 << 20); }
}
__attribute__((noinline)) void keep_small(void) {
  for (int i = 0; i < 4096; i++) { small[i] = malloc(1024); memset(small[i], 2, 1024); }
}
__attribute__((noinline)) void churn(void) {
  for (int i = 0; i < 200; i++) { sink = malloc(1 << 20); memset(sink, 3, 1 << 20); free(sink); }
}
int main(void) { keep_big(); keep_small(); churn(); return 0; }
"#;

const SAMPLED: &str = r#"
#include <gperftools/malloc_extension.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
static void *keep[64];
static void *small[4096];
static int big = 3;
__attribute__((noinline)) void keep_big() { for (int i = 0; i < big; i++) { keep[i] = malloc(8 << 20); memset(keep[i], 1, 8 << 20); } }
__attribute__((noinline)) void keep_small() { for (int i = 0; i < 4096; i++) { small[i] = malloc(1024); memset(small[i], 2, 1024); } }
int main(int argc, char **argv) {
  if (argc > 2) big = atoi(argv[2]);
  keep_big(); keep_small();
  std::string s; MallocExtension::instance()->GetHeapSample(&s);
  FILE *f = fopen(argv[1], "w"); fwrite(s.data(), 1, s.size(), f); fclose(f);
  return 0;
}
"#;

/// `SAMPLED` built against tcmalloc in `dir`.
fn build_sampled(dir: &Path) -> PathBuf {
    let src = dir.join("v2.cc");
    std::fs::write(&src, SAMPLED).unwrap();
    compile(
        "g++",
        &[&src],
        &dir.join("v2"),
        &[
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-Wl,--no-as-needed",
            "-ltcmalloc",
        ],
    )
}

/// gcc, g++, tcmalloc and both peers, or the test is skipped.
fn peers() -> bool {
    for tool in ["gcc", "g++", "google-pprof", "pprof"] {
        if !require_tool(tool) {
            return false;
        }
    }
    if !Path::new(TCMALLOC).exists() {
        assert!(
            !peers_required(),
            "{TCMALLOC} (libgoogle-perftools-dev) is missing"
        );
        eprintln!("SKIPPED: {TCMALLOC} is missing");
        return false;
    }
    true
}

/// The workload and its heap profile dumps (`app.0001.heap` …).
fn tcmalloc_dumps(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let src = dir.join("app.c");
    std::fs::write(&src, WORKLOAD).unwrap();
    let app = compile(
        "gcc",
        &[&src],
        &dir.join("app"),
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    let out = Command::new(&app)
        .env("HEAPPROFILE", dir.join("app"))
        .env("HEAP_PROFILE_ALLOCATION_INTERVAL", "50000000")
        .env("LD_PRELOAD", TCMALLOC)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut dumps: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "heap"))
        .collect();
    dumps.sort();
    assert!(dumps.len() >= 4, "{dumps:?}");
    (app, dumps)
}

/// Our rows (name → flat, cum) and total, raw values from `--json`.
fn ours(args: &[&str], inputs: &[&Path]) -> (i64, BTreeMap<String, (i64, i64)>) {
    let args = [&["--json", "--nodecount=0"][..], args].concat();
    let json: serde_json::Value = serde_json::from_str(&report(&args, inputs)).unwrap();
    let rows = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (r["flat"].as_i64().unwrap(), r["cum"].as_i64().unwrap()),
            )
        })
        .collect();
    (json["total"].as_i64().unwrap(), rows)
}

/// A value of Go pprof's `-top` in base units (`25165824B`, `1500ns`, `42`).
fn go_value(text: &str) -> Option<i64> {
    text.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()
}

/// Go pprof's `-top` rows in base units (`unit`: `B` or `ns`).
fn go_top(unit: &str, args: &[&str], inputs: &[&Path]) -> (i64, BTreeMap<String, (i64, i64)>) {
    let mut cmd = Command::new("pprof");
    cmd.args(["-top", "-nodefraction=0", "-nodecount=1000"])
        .arg(format!("-unit={unit}"))
        .args(args)
        .args(inputs);
    let text = run_stdout(&mut cmd);
    let mut total = 0;
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Showing nodes accounting for ") {
            let of = rest.split(" of ").nth(1).unwrap();
            total = go_value(of.split_whitespace().next().unwrap()).unwrap();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[1].ends_with('%') || !f[4].ends_with('%') {
            continue;
        }
        let (Some(flat), Some(cum)) = (go_value(f[0]), go_value(f[3])) else {
            continue;
        };
        let name = f[5..].join(" ");
        let name = name.trim_end_matches(" (inline)").to_string();
        rows.insert(name, (flat, cum));
    }
    (total, rows)
}

/// `--text ARGS INPUTS` as we print it and as google-pprof does.
fn text_reports(args: &[&str], inputs: &[&Path]) -> (String, String) {
    let ours = report(&[&["--text"][..], args].concat(), inputs);
    let perl = run_stdout(
        Command::new("google-pprof")
            .arg("--text")
            .args(args)
            .args(inputs),
    );
    (ours, perl)
}

/// `--text` rows as printed: name → the flat, flat%, cum and cum% columns.
fn text_rows(text: &str) -> (String, BTreeMap<String, Vec<String>>) {
    let mut total = String::new();
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Total: ") {
            total = rest.to_string();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[1].ends_with('%') || !f[4].ends_with('%') {
            continue;
        }
        let name = f[5..].join(" ");
        rows.insert(
            name,
            vec![f[0].into(), f[1].into(), f[3].into(), f[4].into()],
        );
    }
    (total, rows)
}

/// Every row both print is the same; `names` are printed by both.
fn assert_same_rows(
    what: &str,
    a: &BTreeMap<String, (i64, i64)>,
    b: &BTreeMap<String, (i64, i64)>,
    names: &[&str],
) {
    for name in names {
        assert!(a.contains_key(*name), "{what}: {name} not in ours: {a:?}");
        assert!(b.contains_key(*name), "{what}: {name} not in Go's: {b:?}");
    }
    let mut compared = 0;
    for (name, value) in a {
        if let Some(theirs) = b.get(name) {
            assert_eq!(value, theirs, "{what}: {name}");
            compared += 1;
        }
    }
    assert!(compared >= names.len(), "{what}");
}

#[test]
fn tcmalloc_heap_dumps_read_as_go_pprof_and_google_pprof_read_them() {
    if !peers() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (app, dumps) = tcmalloc_dumps(dir.path());
    let last = dumps.last().unwrap();
    for (index, names) in [
        ("inuse_space", &["keep_big", "keep_small", "main"][..]),
        ("inuse_objects", &["keep_big", "keep_small", "main"][..]),
        (
            "alloc_space",
            &["keep_big", "keep_small", "churn", "main"][..],
        ),
        (
            "alloc_objects",
            &["keep_big", "keep_small", "churn", "main"][..],
        ),
    ] {
        let flag = format!("--{index}");
        let (total, rows) = ours(&[&flag], &[&app, last]);
        let (go_total, go_rows) = go_top("B", &[&format!("-sample_index={index}")], &[&app, last]);
        assert_eq!(total, go_total, "{index}");
        assert_same_rows(index, &rows, &go_rows, names);
        // The known allocations.
        let expected = match index {
            "inuse_space" => [25165824, 4194304, 0],
            "inuse_objects" => [3, 4096, 0],
            "alloc_space" => [25165824, 4194304, 200 << 20],
            _ => [3, 4096, 200],
        };
        for (name, value) in ["keep_big", "keep_small", "churn"].iter().zip(expected) {
            assert_eq!(rows.get(*name).map_or(0, |r| r.0), value, "{index} {name}");
        }
        // google-pprof's text: the same columns, MB to one decimal.
        let (text, perl) = text_reports(&[&flag], &[&app, last]);
        let (our_total, our_rows) = text_rows(&text);
        let (perl_total, perl_rows) = text_rows(&perl);
        assert_eq!(our_total, perl_total, "{index}\n{text}\n{perl}");
        for name in names {
            assert_eq!(
                our_rows.get(*name),
                perl_rows.get(*name),
                "{index} {name}\n{text}\n{perl}"
            );
        }
    }
    // The classic leak hunt: growth between the first and the last dump.
    let first = &dumps[0];
    let base = format!("--base={}", first.display());
    for index in ["inuse_space", "alloc_space", "alloc_objects"] {
        let flag = format!("--{index}");
        let (total, rows) = ours(&[&flag, &base], &[&app, last]);
        let (go_total, go_rows) = go_top(
            "B",
            &[
                &format!("-sample_index={index}"),
                "-base",
                first.to_str().unwrap(),
            ],
            &[&app, last],
        );
        // Go prints the total of a difference without its sign.
        assert_eq!(total.abs(), go_total, "--base {index}");
        assert_same_rows(index, &rows, &go_rows, &["churn", "main"]);
        // perl pprof's values; but, as Go's -diff_base, the base's total
        // and percentages of it (perl's are of the change's total: inf or
        // nan when it is 0).
        let (text, perl) = text_reports(&[&flag, &base], &[&app, last]);
        let (our_total, our_rows) = text_rows(&text);
        let (_, perl_rows) = text_rows(&perl);
        let (_, perl_base) = text_reports(&[&flag], &[&app, first]);
        let (perl_base_total, _) = text_rows(&perl_base);
        assert!(
            our_total.starts_with(&format!("{perl_base_total} in the base; ")),
            "--base {index}\n{text}\n{perl_base}"
        );
        let values = |row: Option<&Vec<String>>| row.map(|r| (r[0].clone(), r[2].clone()));
        assert_eq!(
            values(our_rows.get("churn")),
            values(perl_rows.get("churn")),
            "--base {index}\n{text}\n{perl}"
        );
    }
    // Go pprof reads our conversion with the same numbers.
    let pb = dir.path().join("app.pb.gz");
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&app)
            .arg(last)
            .arg("-o")
            .arg(&pb)
            .args(["--to", "pprof"]),
    );
    for index in ["inuse_space", "alloc_objects"] {
        let (total, rows) = go_top("B", &[&format!("-sample_index={index}")], &[&pb]);
        let (go_total, go_rows) = go_top("B", &[&format!("-sample_index={index}")], &[&app, last]);
        assert_eq!(total, go_total, "convert {index}");
        assert_same_rows(index, &rows, &go_rows, &["keep_big", "keep_small"]);
    }

    // The shell: `top` prints what `--text` prints (perl's MB layout,
    // checked against google-pprof above), and `sample_index=` switches
    // the sample type as the flag does.
    let out = cpuprof_testkit::run_with_stdin(
        cpuprof().args(["report", "-i"]).arg(&app).arg(last),
        "top\nsample_index=alloc_space\ntop\nquit\n",
    );
    let shell = String::from_utf8_lossy(&out.stdout).into_owned();
    let inuse = report(&["--text"], &[&app, last]);
    let alloc = report(&["--text", "--alloc_space"], &[&app, last]);
    let at = shell
        .find(&inuse)
        .unwrap_or_else(|| panic!("{shell}\n---\n{inuse}"));
    assert!(
        shell[at + inuse.len()..].contains(&alloc),
        "{shell}\n---\n{alloc}"
    );

    // The web UI: the sample menu lists the four types, in-use space
    // chosen; Top's rows hold Go's values and print them in MB.
    let web = common::WebUi::start(&[&app, last]);
    let (status, top) = web.get_text("/ui/top");
    assert_eq!(status, 200);
    for index in ["alloc_objects", "alloc_space", "inuse_objects"] {
        assert!(
            top.contains(&format!("<option value=\"{index}\">")),
            "{top}"
        );
    }
    assert!(
        top.contains("<option value=\"inuse_space\" selected>"),
        "{top}"
    );
    for (path, index) in [
        ("/ui/top", "inuse_space"),
        ("/ui/top?si=alloc_space", "alloc_space"),
    ] {
        let (_, page) = web.get_text(path);
        let (go_total, go_rows) = go_top("B", &[&format!("-sample_index={index}")], &[&app, last]);
        let megabytes = go_total as f64 / (1 << 20) as f64;
        assert!(
            page.contains(&format!(": {megabytes:.0}MB of {megabytes:.0}MB total")),
            "{index}: {page}"
        );
        for name in ["keep_big", "keep_small"] {
            let flat = go_rows[name].0;
            assert!(
                page.contains(&format!("data-value=\"{flat}\">{}MB<", flat >> 20)),
                "{index} {name} {flat}: {page}"
            );
        }
    }
}

/// The lines of `text` that mention `name` (for DOT: its node's label,
/// with the node's number cut off), whitespace at the ends trimmed.
fn lines_naming<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.contains(name))
        .map(|l| {
            l.split_once(" [label=")
                .map_or(l, |(_, label)| label)
                .trim()
        })
        .collect()
}

/// The outputs in perl pprof's layout print a heap profile's bytes as
/// perl pprof does (MB, one decimal: the DOT legend and labels, the
/// listing's totals and lines), the flame graph as the text reports do,
/// and the tree as Go pprof's `-tree`, row for row.
#[test]
fn heap_graph_listing_tree_and_flame_print_megabytes_as_the_peers_do() {
    if !peers() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (app, dumps) = tcmalloc_dumps(dir.path());
    let last = dumps.last().unwrap();
    let inputs: &[&Path] = &[&app, last];
    let perl = |args: &[&str]| {
        run_stdout(
            Command::new("google-pprof")
                .args(args)
                .args(inputs)
                .env("PPROF_TMPDIR", dir.path()),
        )
    };
    // DOT: the legend and the hot nodes' labels.
    let (ours, theirs) = (report(&["--dot"], inputs), perl(&["--dot"]));
    let legend = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("Legend "))
            .map(str::to_string)
    };
    assert_eq!(legend(&ours), legend(&theirs), "{ours}\n{theirs}");
    assert!(legend(&ours).unwrap().contains("Total MB: 28.0"), "{ours}");
    for name in ["keep_big", "keep_small"] {
        let label = |text: &str| {
            lines_naming(text, &format!("label=\"{name}\\n"))
                .first()
                .map(|l| l.to_string())
        };
        assert_eq!(label(&ours), label(&theirs), "{name}\n{ours}\n{theirs}");
    }
    // The listing: totals line and the allocating line.
    let (ours, theirs) = (
        report(&["--list=keep_big"], inputs),
        perl(&["--list=keep_big"]),
    );
    let totals = |text: &str| text.lines().nth(1).map(str::trim).map(str::to_string);
    assert_eq!(totals(&ours), totals(&theirs), "{ours}\n{theirs}");
    assert_eq!(
        totals(&ours).as_deref(),
        Some("24.0   24.0 Total MB (flat / cumulative)")
    );
    let hot = |text: &str| {
        text.lines()
            .find(|l| l.contains("keep[i] = malloc"))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
    };
    assert_eq!(hot(&ours), hot(&theirs), "{ours}\n{theirs}");
    // The tree: every line from the header on, as Go pprof's -tree.
    let ours = report(&["--tree"], inputs);
    let go = run_stdout(
        Command::new("pprof")
            .args(["-tree"])
            .args(inputs)
            .env("PPROF_TMPDIR", dir.path()),
    );
    let body = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("Showing nodes"))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    assert!(body(&ours).len() > 10, "{ours}");
    assert_eq!(
        body(&ours),
        body(&go),
        "--tree (left) and Go pprof -tree (right)"
    );
    // The flame graph's totals line and values, as perl's text prints them.
    let page = dir.path().join("heap.html");
    report(&["--flame", "-o", page.to_str().unwrap()], inputs);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Total: 28.0 MB"), "flame graph's totals line");
    assert!(html.contains("\"values\":{\"word\":\"MB\",\"perl\":[1048576,1]}"));
}

#[test]
fn sampled_heap_v2_profiles_are_unsampled_as_both_peers_do() {
    if !peers() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let app = build_sampled(dir.path());
    let profile = dir.path().join("v2.heap");
    let out = Command::new(&app)
        .arg(&profile)
        .env("TCMALLOC_SAMPLE_PARAMETER", "65536")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let head = std::fs::read_to_string(&profile).unwrap();
    assert!(
        head.starts_with("heap profile:")
            && head.lines().next().unwrap().ends_with("@ heap_v2/65536"),
        "{head}"
    );
    let (total, rows) = ours(&[], &[&app, &profile]);
    let (go_total, go_rows) = go_top("B", &[], &[&app, &profile]);
    assert_eq!(total, go_total);
    // tcmalloc's own frames are removed, as Go pprof removes them.
    assert_same_rows(
        "heap_v2",
        &rows,
        &go_rows,
        &["keep_big", "keep_small", "main"],
    );
    // 3 × 8 MB at a 64 KiB rate: each object is sampled and scaled by
    // 1/(1-exp(-128)) = 1.
    assert_eq!(rows["keep_big"].0 % (8 << 20), 0);
    let (text, perl) = text_reports(&[], &[&app, &profile]);
    let (our_total, our_rows) = text_rows(&text);
    let (perl_total, perl_rows) = text_rows(&perl);
    assert_eq!(our_total, perl_total, "{text}\n{perl}");
    for name in ["keep_big", "keep_small", "main"] {
        assert_eq!(
            our_rows.get(name),
            perl_rows.get(name),
            "{name}\n{text}\n{perl}"
        );
    }
}

/// A diff of two sampled heap profiles with `--confidence`: the samples
/// each share is known from are the sampled bytes over the sampling rate
/// (tcmalloc samples an allocation about every RATE bytes), and a growth
/// from 3 to 12 kept 8 MB objects is significant, the small objects'
/// fall in share too, while `main`'s 100% stays noise.
#[test]
fn a_sampled_heap_diff_is_tested_for_significance_by_its_samples() {
    if !peers() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let app = build_sampled(dir.path());
    let dump = |name: &str, big: &str| {
        let profile = dir.path().join(name);
        let out = Command::new(&app)
            .arg(&profile)
            .arg(big)
            .env("TCMALLOC_SAMPLE_PARAMETER", "65536")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        profile
    };
    let (old, new) = (dump("old.heap", "3"), dump("new.heap", "12"));
    let (old_total, _) = ours(&[], &[&app, &old]);
    let (new_total, _) = ours(&[], &[&app, &new]);
    let text = report(
        &[
            "--text",
            "--confidence",
            &format!("--base={}", old.display()),
        ],
        &[&app, &new],
    );
    let samples = |total: i64| (total as f64 / 65536.0).round() as i64;
    assert!(
        text.contains(&format!(
            "; {} -> {} samples, each compared by share of its own total",
            samples(old_total),
            samples(new_total)
        )),
        "{old_total} {new_total}\n{text}"
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name}:\n{text}"))
            .to_string()
    };
    assert!(row("keep_big").contains(" * keep_big"), "{text}");
    assert!(row("keep_big").contains("  +"), "{text}");
    assert!(row("keep_small").contains(" * keep_small"), "{text}");
    assert!(row("main").contains(" ~ main"), "{text}");
}

const GO_PROGRAM: &str = r#"package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var keep [][]byte

//go:noinline
func allocBig() {
	for i := 0; i < 4; i++ {
		keep = append(keep, make([]byte, 4<<20))
	}
}

var sink []byte

//go:noinline
func churn() {
	for i := 0; i < 100; i++ {
		sink = make([]byte, 64<<10)
	}
}

//go:noinline
func contend(mu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < 50; i++ {
		mu.Lock()
		time.Sleep(100 * time.Microsecond)
		mu.Unlock()
	}
}

func main() {
	runtime.MemProfileRate = 4096
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	allocBig()
	churn()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go contend(&mu, &wg)
	}
	wg.Wait()
	runtime.GC()
	for _, name := range []string{"heap", "block", "mutex", "threadcreate", "goroutine"} {
		f, _ := os.Create(os.Args[1] + "/" + name + ".txt")
		pprof.Lookup(name).WriteTo(f, 1)
		f.Close()
	}
}
"#;

#[test]
fn go_debug_1_profiles_read_with_go_pprof_s_numbers() {
    if !require_tool("go") || !require_tool("pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let binary = build_go(dir.path(), "gotext", GO_PROGRAM);
    run_stdout(Command::new(&binary).arg(dir.path()));
    let heap = dir.path().join("heap.txt");
    for index in ["inuse_space", "alloc_space", "alloc_objects"] {
        let (total, rows) = ours(&[&format!("--sample_index={index}")], &[&binary, &heap]);
        let (go_total, go_rows) =
            go_top("B", &[&format!("-sample_index={index}")], &[&binary, &heap]);
        assert_eq!(total, go_total, "heap {index}");
        let names: &[&str] = if index == "inuse_space" {
            &["main.allocBig", "main.main"]
        } else {
            &["main.allocBig", "main.churn", "main.main"]
        };
        assert_same_rows(index, &rows, &go_rows, names);
    }
    for (name, flag, go_flag) in [
        ("block", "--delay", "-sample_index=delay"),
        ("block", "--contentions", "-sample_index=contentions"),
        ("mutex", "--total_delay", "-sample_index=delay"),
        (
            "goroutine",
            "--sample_index=goroutine",
            "-sample_index=goroutine",
        ),
    ] {
        let file = dir.path().join(format!("{name}.txt"));
        let (total, rows) = ours(&[flag], &[&binary, &file]);
        let (go_total, go_rows) = go_top("ns", &[go_flag], &[&binary, &file]);
        assert_eq!(total, go_total, "{name} {flag}");
        let names: &[&str] = if name == "goroutine" {
            &["main.main"]
        } else {
            &["main.contend"]
        };
        assert_same_rows(&format!("{name} {flag}"), &rows, &go_rows, names);
    }
    // threadcreate: Go writes the threads made before profiling with no
    // stack, which Go pprof refuses ("malformed profile"); the total is
    // the header's.
    let file = dir.path().join("threadcreate.txt");
    let header: i64 = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (total, _) = ours(&[], &[&binary, &file]);
    assert_eq!(total, header);
}

#[test]
fn a_contention_profile_of_the_documented_layout_reads_with_go_pprof_s_numbers() {
    if !require_tool("pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("app.contention");
    std::fs::write(
        &file,
        "--- contentionz 1 ---\ncycles/second = 3201000000\nsampling period = 100\nms since reset = 16502830\ndiscarded samples = 0\n  19490304       27 @ 0x401000 0x402000 0x403000\n       768        1 @ 0x401000 0x404000\n    569088        1 @ 0x405000 0x402000 0x403000\n--- Memory map: ---\n  00400000-00500000: /bin/app\n",
    )
    .unwrap();
    for (flag, go_flags) in [
        ("--delay", &["-sample_index=delay"][..]),
        ("--contentions", &["-sample_index=contentions"][..]),
    ] {
        let (total, rows) = ours(&[flag, "--addresses"], &[&file]);
        let mut args = go_flags.to_vec();
        args.push("-addresses");
        let (go_total, go_rows) = go_top("ns", &args, &[&file]);
        assert_eq!(total, go_total, "{flag}");
        assert_eq!(rows.len(), 5, "{rows:?}");
        // The names of unsymbolized addresses differ; the values do not.
        let mut ours_values: Vec<(i64, i64)> = rows.values().copied().collect();
        let mut go_values: Vec<(i64, i64)> = go_rows.values().copied().collect();
        ours_values.sort_unstable();
        go_values.sort_unstable();
        assert_eq!(ours_values, go_values, "{flag}: {rows:?} {go_rows:?}");
    }
    // --mean_delay as perl pprof computes it: each stack's delay divided
    // by its contentions, summed (Go pprof's -mean divides the sums of a
    // row instead).
    let (total, rows) = ours(&["--mean_delay", "--addresses"], &[&file]);
    let mean = |cycles: i64, count: i64| (cycles as f64 * 100.0 / 3.201) as i64 / (count * 100);
    assert_eq!(total, mean(19490304, 27) + mean(768, 1) + mean(569088, 1));
    assert_eq!(rows.len(), 5);
    // 19490304 cycles at 3.201 GHz, times the period 100.
    let (total, _) = ours(&["--delay"], &[&file]);
    let expected: i64 = [19490304i64, 768, 569088]
        .iter()
        .map(|&c| (c as f64 * 100.0 / 3.201) as i64)
        .sum();
    assert_eq!(total, expected);
}

/// Three functions of a program built without PIE, whose addresses a
/// thread profile of the documented layout names.
const THREADS_PROG: &str = r#"
volatile int sink;
__attribute__((noinline)) void thread_wait(void) { sink++; sink++; sink++; }
__attribute__((noinline)) void thread_start(void) { thread_wait(); sink++; }
__attribute__((noinline)) void thread_creator(void) { thread_start(); sink++; }
int main(void) { thread_creator(); return 0; }
"#;

#[test]
fn a_thread_profile_of_the_documented_layout_reads_with_go_pprof_s_numbers() {
    if !require_tool("pprof") || !require_tool("gcc") || !require_tool("nm") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let src = dir.path().join("threads.c");
    std::fs::write(&src, THREADS_PROG).unwrap();
    let app = compile(
        "gcc",
        &[&src],
        &dir.path().join("threads"),
        &["-O1", "-g", "-no-pie", "-fno-pie"],
    );
    let nm = run_stdout(Command::new("nm").arg(&app));
    let at = |name: &str| -> u64 {
        let line = nm
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name} not in nm's output:\n{nm}"));
        u64::from_str_radix(line.split_whitespace().next().unwrap(), 16).unwrap()
    };
    let (wait, start, creator, main) = (
        at("thread_wait"),
        at("thread_start"),
        at("thread_creator"),
        at("main"),
    );
    // The main thread in thread_wait, called from main; two workers in
    // thread_start created by thread_creator (the second the same as the
    // first); one more in thread_wait.
    let file = dir.path().join("app.threadz");
    std::fs::write(
        &file,
        format!(
            "--- threadz 1 ---\n\n\
             --- Thread 7f794ab90940 (name: main/100) stack: ---\n  PC:  0x{:x}: thread_wait\n  0x{:x}: main\n\
             --- Thread 7f794964e700 (name: worker/101) stack: ---\n  PC: 0x{:x}\n      creator: 0x{:x} 0x{:x}\n\
             --- Thread 7f7948978700 (name: worker/102) stack: ---\n  [same as previous thread]\n\
             --- Thread 7f7948978800 (name: io/103) stack: ---\n  PC: 0x{:x} 0x{:x}\n\
             --- Memory map: ---\n  00400000-00500000: {}\n",
            wait + 2,
            main + 5,
            start + 1,
            creator + 5,
            main + 5,
            wait + 1,
            start + 5,
            app.display()
        ),
    )
    .unwrap();
    let (total, rows) = ours(&[], &[&file]);
    let (go_total, go_rows) = go_top("", &[], &[&file]);
    assert_eq!((total, go_total), (4, 4));
    assert_same_rows(
        "threadz",
        &rows,
        &go_rows,
        &["thread_wait", "thread_start", "thread_creator", "main"],
    );
    assert_eq!(rows["thread_wait"], (2, 2));
    assert_eq!(rows["thread_start"], (2, 3));
    assert_eq!(rows["main"], (0, 3));
    // The threads' names, which Go pprof drops, are tags of ours.
    let tags = report(&["--tags"], &[&file]);
    for name in ["main", "worker", "io"] {
        assert!(tags.contains(name), "{tags}");
    }
}
