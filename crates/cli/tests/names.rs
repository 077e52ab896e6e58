//! Names that are complete and stable, on programs built at test time and
//! compared with the tools that define them:
//! - PLT stubs, in an executable and in a shared library, are named as
//!   `objdump -d` labels them (`strlen@plt`, `memcpy@plt`);
//! - of glibc's aliases the public one names the function (`snprintf`,
//!   never `__GI___snprintf`);
//! - a stripped library's functions are named `lib.so+0x<start>` after
//!   their `.eh_frame` FDE (as `readelf --debug-dump=frames` lists them):
//!   one row per function hit;
//! - a Go program's own CPU profile (Debian's Go, GOPATH mode) keeps its
//!   receivers (`main.(*counter).add`), and `--noinlines` agrees with Go
//!   pprof's `-noinlines` on every function;
//! - Go pprof's `-top` on our `--proto` prints the names and numbers of
//!   our `--text`, every row. The only normalisation: Go marks a node
//!   whose every frame is inlined `name (inline)`; the mark is removed
//!   (a name Go prints both with and without it is two nodes we merge, and
//!   must then be in our report, unchecked).
//!
//! Skipped loudly without libprofiler, gcc, Go or Go pprof, unless
//! `CPUPROF_REQUIRE_PEERS=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_testkit::{
    compile, libprofiler, profile_with_libprofiler, require_tool, run_stdout, TempDir, TextReport,
};

mod common;
use common::cpuprof;

const PLT_MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern unsigned long lib_copy(long n);
volatile size_t sink;
const char *volatile empty = "";
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    for (long i = 0; i < n; i++) {
        sink += strlen(empty);
        if ((i & 63) == 0) {
            char t[32];
            snprintf(t, sizeof t, "%ld", i);
            sink += t[0];
        }
    }
    sink += lib_copy(n);
    printf("%zu\n", sink);
    return 0;
}
"#;

const PLT_LIB: &str = r#"
#include <string.h>
static char a[8], b[8];
unsigned long lib_copy(long n) {
    unsigned long s = 0;
    for (long i = 0; i < n; i++) {
        memcpy(a, b, 1 + (i & 1));
        s += a[0];
    }
    return s;
}
"#;

const STRIPPED_LIB: &str = r#"
#define STEP(name, m, k) \
    static unsigned long __attribute__((noinline)) name(unsigned long x) { \
        for (int i = 0; i < 300; i++) x = x * m + k + (x >> 7); \
        return x; \
    }
STEP(step_a, 6364136223846793005UL, 1442695040888963407UL)
STEP(step_b, 2862933555777941757UL, 3037000493UL)
STEP(step_c, 3202034522624059733UL, 4354685564936845319UL)
__attribute__((visibility("default"))) unsigned long stripped_run(long n) {
    unsigned long x = 1;
    for (long i = 0; i < n; i++) {
        x = step_a(x);
        x = step_b(x ^ 3);
        x = step_c(x ^ 5);
    }
    return x;
}
"#;

const STRIPPED_MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
extern unsigned long stripped_run(long n);
int main(int argc, char **argv) {
    printf("%lu\n", stripped_run(argc > 1 ? atol(argv[1]) : 1000));
    return 0;
}
"#;

const GO_PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

// cpu is the process's CPU time: the work below lasts a CPU time, not a
// wall time, so that a loaded machine does not thin the profile.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type counter struct {
	n   uint64
	buf []uint64
}

//go:noinline
func (c *counter) add(x uint64) {
	for i := range c.buf {
		c.buf[i] += x ^ uint64(i)
		c.n += c.buf[i] >> 3
	}
}

// mix is inlined into work.
func mix(x uint64) uint64 {
	for i := 0; i < 8; i++ {
		x = x*2654435761 + 12345 + (x >> 11)
	}
	return x
}

//go:noinline
func work(c *counter, d time.Duration) uint64 {
	end := cpu() + d
	x := uint64(1)
	for cpu() < end {
		for k := 0; k < 2000; k++ {
			x = mix(x)
			c.add(x)
		}
	}
	return x
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	c := &counter{buf: make([]uint64, 48)}
	x := work(c, 2*time.Second)
	pprof.StopCPUProfile()
	f.Close()
	fmt.Println(c.n, x)
}
"#;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The names `objdump -d` gives PLT stubs in `binary`: `<x@plt>:` labels.
fn objdump_plt_names(binary: &Path) -> BTreeSet<String> {
    let out = run_stdout(Command::new("objdump").arg("-d").arg(binary));
    out.lines()
        .filter_map(|l| {
            let label = l.trim_end().strip_suffix(">:")?;
            let name = label.split_once('<')?.1;
            name.ends_with("@plt").then(|| name.to_string())
        })
        .collect()
}

/// Rows of Go pprof's `-top`: name → (flat, cum).
fn go_top(text: &str) -> Vec<(String, i64, i64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') || !f[4].ends_with('%') {
                return None;
            }
            Some((f[5..].join(" "), f[0].parse().ok()?, f[3].parse().ok()?))
        })
        .collect()
}

/// Go pprof's rows with the `(inline)` mark removed: name → (flat, cum),
/// and the names it printed both with and without the mark.
fn go_rows(text: &str) -> (BTreeMap<String, (i64, i64)>, BTreeSet<String>) {
    let mut rows = BTreeMap::new();
    let mut doubled = BTreeSet::new();
    for (name, flat, cum) in go_top(text) {
        let name = name
            .strip_suffix(" (inline)")
            .map(str::to_string)
            .unwrap_or(name);
        if rows.insert(name.clone(), (flat, cum)).is_some() {
            doubled.insert(name);
        }
    }
    for name in &doubled {
        rows.remove(name);
    }
    (rows, doubled)
}

/// Our `--text` rows: name → (flat, cum).
fn our_rows(text: &str) -> BTreeMap<String, (i64, i64)> {
    TextReport::parse(text)
        .rows
        .into_iter()
        .map(|r| (r.name, (r.flat, r.cum)))
        .collect()
}

/// Go pprof's `-top` (every node, in samples) of `profile`, with `extra`
/// options.
fn pprof_top(profile: &Path, extra: &[&str]) -> String {
    let out = run_stdout(
        Command::new("pprof")
            .args([
                "-top",
                "-sample_index=samples",
                "-nodecount=1000000",
                "-nodefraction=0",
                "-edgefraction=0",
            ])
            .args(extra)
            .arg(profile),
    );
    assert!(!out.contains("Dropped"), "pprof dropped nodes:\n{out}");
    out
}

/// Go pprof `-top` on our `--proto` of `inputs` against our `--text`:
/// every row, same names, same flat and cum.
fn assert_proto_top_matches_text(dir: &Path, inputs: &[&Path], what: &str) {
    let proto = dir.join(format!("{what}.pb.gz"));
    run_stdout(
        cpuprof()
            .args(["report", "--proto", "-o"])
            .arg(&proto)
            .args(inputs),
    );
    let ours = run_stdout(
        cpuprof()
            .args(["report", "--text", "--sample_index=samples"])
            .args(inputs),
    );
    let theirs = pprof_top(&proto, &[]);
    assert!(
        !theirs.contains("cpuprof"),
        "{what}: something of ours in Go pprof's output:\n{theirs}"
    );
    let mut ours = our_rows(&ours);
    let (theirs_rows, doubled) = go_rows(&theirs);
    for name in &doubled {
        assert!(
            ours.remove(name).is_some(),
            "{what}: {name} not in our report"
        );
    }
    assert!(ours.len() >= 3, "{what}: too few rows: {ours:?}");
    assert_eq!(
        ours, theirs_rows,
        "{what}: our --text (left) and Go pprof -top on our --proto (right)"
    );
}

struct PltCase {
    _dir: TempDir,
    main: PathBuf,
    lib: PathBuf,
    profile: PathBuf,
}

fn plt_case() -> Option<PltCase> {
    let libprofiler = libprofiler()?;
    if !require_tool("gcc") || !require_tool("objdump") {
        return None;
    }
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let lib = compile(
        "gcc",
        &[&write(d, "plt_lib.c", PLT_LIB)],
        &d.join("libpltcopy.so"),
        &["-O1", "-g", "-fno-builtin", "-shared", "-fPIC"],
    );
    let rpath = format!("-Wl,-rpath,{}", d.display());
    let libdir = format!("-L{}", d.display());
    let main = compile(
        "gcc",
        &[&write(d, "plt_main.c", PLT_MAIN)],
        &d.join("plt_main"),
        &[
            "-O1",
            "-g",
            "-fno-builtin",
            &libdir,
            &rpath,
            "-Wl,--no-as-needed",
            "-lpltcopy",
        ],
    );
    let profile = d.join("plt.prof");
    profile_with_libprofiler(&libprofiler, &main, &["600000000"], &profile, 1000);
    Some(PltCase {
        _dir: dir,
        main,
        lib,
        profile,
    })
}

#[test]
fn plt_stubs_and_public_aliases_are_named_as_objdump_and_callers_name_them() {
    let Some(case) = plt_case() else { return };
    let report_text = || {
        run_stdout(
            cpuprof()
                .args(["report", "--text"])
                .arg(&case.main)
                .arg(&case.profile),
        )
    };
    let mut text = report_text();
    // A stub is one jump: on a loaded host libprofiler's ~600 samples may
    // miss it. Profile again (at most twice) rather than assert on chance.
    for _ in 0..2 {
        if TextReport::parse(&text).row("memcpy@plt").is_some() {
            break;
        }
        let libprofiler = libprofiler().unwrap();
        profile_with_libprofiler(
            &libprofiler,
            &case.main,
            &["600000000"],
            &case.profile,
            1000,
        );
        text = report_text();
    }
    let report = TextReport::parse(&text);
    let plt_rows: Vec<&str> = report
        .rows
        .iter()
        .map(|r| r.name.as_str())
        .filter(|n| n.ends_with("@plt"))
        .collect();
    let exe = objdump_plt_names(&case.main);
    let lib = objdump_plt_names(&case.lib);
    let libc = objdump_plt_names(Path::new("/lib/x86_64-linux-gnu/libc.so.6"));
    for name in &plt_rows {
        assert!(
            exe.contains(*name) || lib.contains(*name) || libc.contains(*name),
            "{name}: no such objdump label"
        );
    }
    // The library's memcpy stub is hot. (The executable's strlen stub
    // is called as often, but the timer almost never interrupts on its one
    // jump: its naming is checked against objdump stub by stub in
    // crates/symbolize/tests/plt.rs.)
    assert!(exe.contains("strlen@plt") && lib.contains("memcpy@plt"));
    let row = report
        .row("memcpy@plt")
        .unwrap_or_else(|| panic!("no memcpy@plt row in\n{text}"));
    assert!(row.flat > 0, "{row:?}");
    // No raw addresses left for the stubs.
    assert!(
        !report.rows.iter().any(|r| r.name.starts_with("0x")),
        "unnamed addresses:\n{text}"
    );
    // snprintf is named as its callers name it.
    let snprintf = report
        .row("snprintf")
        .unwrap_or_else(|| panic!("no snprintf row in\n{text}"));
    assert!(snprintf.cum > 0);
    assert!(
        !report.rows.iter().any(|r| r.name.starts_with("__GI_")),
        "an internal glibc alias names a row:\n{text}"
    );
}

#[test]
fn go_pprof_top_on_our_proto_prints_our_text_c_program() {
    let Some(case) = plt_case() else { return };
    if !require_tool("pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    assert_proto_top_matches_text(dir.path(), &[&case.main, &case.profile], "plt");
}

/// (start, end) of every FDE `readelf --debug-dump=frames` lists.
fn readelf_fdes(path: &Path) -> Vec<(u64, u64)> {
    let out = run_stdout(
        Command::new("readelf")
            .arg("-W")
            .arg("--debug-dump=frames")
            .arg(path),
    );
    out.lines()
        .filter(|l| l.contains(" FDE "))
        .filter_map(|l| {
            let range = l.split("pc=").nth(1)?;
            let (a, b) = range.trim().split_once("..")?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect()
}

/// `PT_LOAD` segments as `readelf -lW` lists them: (offset, vaddr, filesz).
fn load_segments(path: &Path) -> Vec<(u64, u64, u64)> {
    let out = run_stdout(Command::new("readelf").arg("-lW").arg(path));
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.first() != Some(&"LOAD") || f.len() < 5 {
                return None;
            }
            Some((hex(f[1])?, hex(f[2])?, hex(f[4])?))
        })
        .collect()
}

/// Defined dynamic symbols with their sizes (`nm -D -S`): (start, end).
fn dynamic_symbols(path: &Path) -> Vec<(u64, u64)> {
    let out = run_stdout(
        Command::new("nm")
            .args(["-D", "-S", "--defined-only"])
            .arg(path),
    );
    out.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() != 4 {
                return None;
            }
            let a = u64::from_str_radix(f[0], 16).ok()?;
            let n = u64::from_str_radix(f[1], 16).ok()?;
            Some((a, a + n))
        })
        .collect()
}

#[test]
fn stripped_library_functions_are_named_after_their_fdes() {
    let Some(libprofiler) = libprofiler() else {
        return;
    };
    if !require_tool("gcc") || !require_tool("strip") || !require_tool("readelf") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let lib = compile(
        "gcc",
        &[&write(d, "stripped.c", STRIPPED_LIB)],
        &d.join("libstripped.so"),
        &["-O2", "-g0", "-shared", "-fPIC", "-fvisibility=hidden"],
    );
    run_stdout(Command::new("strip").arg("--strip-all").arg(&lib));
    let rpath = format!("-Wl,-rpath,{}", d.display());
    let libdir = format!("-L{}", d.display());
    let main = compile(
        "gcc",
        &[&write(d, "stripped_main.c", STRIPPED_MAIN)],
        &d.join("stripped_main"),
        &[
            "-O2",
            "-g",
            &libdir,
            &rpath,
            "-Wl,--no-as-needed",
            "-lstripped",
        ],
    );
    let profile = d.join("stripped.prof");
    profile_with_libprofiler(&libprofiler, &main, &["400000"], &profile, 1000);

    // The FDEs the samples' leaf addresses in the library fall in, outside
    // its exported (dynamic) symbols: from readelf, nm and the profile's
    // own addresses.
    let fdes = readelf_fdes(&lib);
    let exported = dynamic_symbols(&lib);
    let segments = load_segments(&lib);
    assert!(fdes.len() >= 4, "FDEs: {fdes:?}");
    let data = std::fs::read(&profile).unwrap();
    let (_, p) = cpuprof_profile::read_profile(&data, &Default::default()).unwrap();
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    for sample in &p.samples {
        let leaf = p.location(sample.locations[0]);
        let Some(m) = p.mapping_of(leaf.address).map(|m| p.mapping(m)) else {
            continue;
        };
        if !m.path.ends_with("/libstripped.so") {
            continue;
        }
        let offset = leaf.address - m.start + m.offset;
        let Some(&(seg_offset, vaddr, _)) = segments
            .iter()
            .find(|(o, _, size)| *o <= offset && offset < o + size)
        else {
            continue;
        };
        let file_address = offset - seg_offset + vaddr;
        if exported
            .iter()
            .any(|(a, b)| *a <= file_address && file_address < *b)
        {
            continue;
        }
        if let Some((start, _)) = fdes
            .iter()
            .find(|(a, b)| *a <= file_address && file_address < *b)
        {
            *expected
                .entry(format!("libstripped.so+0x{start:x}"))
                .or_default() += sample.values[0];
        }
    }
    assert!(
        expected.len() >= 3,
        "the three static functions are hit: {expected:?}"
    );

    let text = run_stdout(
        cpuprof()
            .args(["report", "--text"])
            .arg(&main)
            .arg(&profile),
    );
    let ours: BTreeMap<String, i64> = TextReport::parse(&text)
        .rows
        .into_iter()
        .filter(|r| r.name.starts_with("libstripped.so+0x") && r.flat > 0)
        .map(|r| (r.name, r.flat))
        .collect();
    assert_eq!(
        ours, expected,
        "one row per FDE hit, with its samples:\n{text}"
    );
    assert!(
        !text.contains(" 0x0000"),
        "raw addresses in the library:\n{text}"
    );
}

/// A Go program built at test time (Go 1.19, GOPATH mode) that writes
/// its own CPU profile.
struct GoCase {
    _dir: TempDir,
    profile: PathBuf,
}

fn go_case() -> Option<GoCase> {
    if !require_tool("go") || !require_tool("pprof") {
        return None;
    }
    let dir = TempDir::new().unwrap();
    let d = dir.path();
    let binary = cpuprof_testkit::build_go(d, "hot", GO_PROGRAM);
    let profile = d.join("hot.pb.gz");
    run_stdout(Command::new(&binary).arg(&profile));
    Some(GoCase { _dir: dir, profile })
}

#[test]
fn go_profile_keeps_receivers_and_noinlines_agrees_with_go_pprof() {
    let Some(case) = go_case() else { return };
    let text = run_stdout(
        cpuprof()
            .args(["report", "--text", "--sample_index=samples"])
            .arg(&case.profile),
    );
    let ours = our_rows(&text);
    let add = ours
        .get("main.(*counter).add")
        .unwrap_or_else(|| panic!("no main.(*counter).add row in\n{text}"));
    assert!(add.0 > 0);
    assert!(
        !ours.keys().any(|n| n.contains("..")),
        "a receiver was cut:\n{text}"
    );
    // Without --noinlines: every row of Go pprof's -top on the same
    // profile.
    let (theirs, doubled) = go_rows(&pprof_top(&case.profile, &[]));
    let mut ours_all = ours.clone();
    for name in &doubled {
        ours_all.remove(name);
    }
    assert_eq!(ours_all, theirs, "--text (left) and Go pprof -top (right)");
    // mix is inlined in work: a row of its own, gone with --noinlines.
    assert!(ours.contains_key("main.mix"), "{text}");

    let noinlines = run_stdout(
        cpuprof()
            .args(["report", "--text", "--sample_index=samples", "--noinlines"])
            .arg(&case.profile),
    );
    let ours = our_rows(&noinlines);
    let (theirs, doubled) = go_rows(&pprof_top(&case.profile, &["-noinlines"]));
    assert!(doubled.is_empty());
    assert!(!ours.contains_key("main.mix"), "{noinlines}");
    assert_eq!(
        ours, theirs,
        "--text --noinlines (left) and Go pprof -top -noinlines (right)"
    );
}

#[test]
fn go_pprof_top_on_our_proto_prints_our_text_go_program() {
    let Some(case) = go_case() else { return };
    let dir = TempDir::new().unwrap();
    assert_proto_top_matches_text(dir.path(), &[&case.profile], "go");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// Inputs in no format we read: one line naming the file and what it is
/// (not "bad collapsed stacks at line 2", not "damaged"), exit status 1.
#[test]
fn inputs_in_no_known_format_say_so_in_one_line() {
    let dir = TempDir::new().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "goroutine.txt",
            b"goroutine 1 [running]:\nmain.main()\n".to_vec(),
            "Go goroutine dump (debug=2)",
        ),
        ("empty.gz", gzip(b""), "the gzip stream holds no data"),
    ];
    for (name, data, expected) in cases {
        let path = write(dir.path(), name, "");
        std::fs::write(&path, &data).unwrap();
        let out = cpuprof()
            .args(["report", "--text"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(name), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(!stderr.contains("collapsed stacks:"), "{name}: {stderr}");
        assert!(!stderr.contains("damaged"), "{name}: {stderr}");
    }
}
