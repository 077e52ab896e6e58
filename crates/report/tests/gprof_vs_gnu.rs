//! `--gprof` against GNU gprof: gmon.out files written by real `gcc -pg`
//! programs, built and run at test time (PIE and non-PIE), must give the
//! same `gprof -b` report line for line.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_profile::gmon;
use cpuprof_report::executable::GprofSymbols;
use cpuprof_report::output::gprof::write_report;

fn require_tool(name: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        if std::env::var("CPUPROF_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("{name} is required (CPUPROF_REQUIRE_PEERS=1) but not installed");
        }
        eprintln!("SKIPPED: {name} is not installed; this test compares against it");
    }
    found
}

/// Builds `workloads/<source>` with `flags`, runs it with `args` in a
/// fresh directory and returns (binary, gmon.out).
fn build_and_run(
    source: &str,
    flags: &[&str],
    args: &[&str],
    tag: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let compiler = if source.ends_with(".cc") {
        "g++"
    } else {
        "gcc"
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("gprof-{tag}-"))
        .tempdir()
        .unwrap();
    let dir = tmp.path().to_path_buf();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/workloads")
        .join(source);
    let bin = dir.join("prog");
    let status = Command::new(compiler)
        .args(flags)
        .arg("-pg")
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .status()
        .unwrap();
    assert!(status.success(), "gcc failed");
    let status = Command::new(&bin)
        .args(args)
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let gmon = dir.join("gmon.out");
    assert!(gmon.exists(), "the program wrote no gmon.out");
    (tmp, bin, gmon)
}

fn gnu_gprof(bin: &Path, gmons: &[&Path]) -> String {
    let out = Command::new("gprof")
        .arg("-b")
        .arg(bin)
        .args(gmons)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gprof: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn ours(bin: &Path, gmons: &[&Path]) -> String {
    let exe = std::fs::read(bin).unwrap();
    let mut symbols = GprofSymbols::from_elf(&exe).unwrap();
    symbols.resolve_source_files(bin);
    let mut sum: Option<gmon::GmonFile> = None;
    for g in gmons {
        let f = gmon::read(&std::fs::read(g).unwrap(), None).unwrap();
        match &mut sum {
            None => sum = Some(f),
            Some(s) => s.merge(f).unwrap(),
        }
    }
    let mut out = Vec::new();
    write_report(&sum.unwrap(), &symbols, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn assert_same(ours: &str, theirs: &str, what: &str) {
    if ours != theirs {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let _ = std::fs::write(dir.join(format!("{what}.ours.txt")), ours);
        let _ = std::fs::write(dir.join(format!("{what}.gprof.txt")), theirs);
    }
    let a: Vec<&str> = ours.lines().collect();
    let b: Vec<&str> = theirs.lines().collect();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x,
            y,
            "{what}: line {} differs\n--- ours ---\n{ours}\n--- gprof -b ---\n{theirs}",
            i + 1
        );
    }
    assert_eq!(
        a.len(),
        b.len(),
        "{what}: line counts differ\n--- ours ---\n{ours}\n--- gprof -b ---\n{theirs}"
    );
}

fn check(flags: &[&str], tag: &str, expect_cycle: bool) {
    if !require_tool("gprof") || !require_tool("gcc") {
        return;
    }
    let (_tmp, bin, gmon1) = build_and_run("callgraph.c", flags, &["300"], tag);
    let theirs = gnu_gprof(&bin, &[&gmon1]);
    if flags.contains(&"-g") {
        // Static functions are followed by their source file in the index.
        assert!(theirs.contains("spin_static (callgraph.c)"), "{theirs}");
    }
    let theirs = gnu_gprof(&bin, &[&gmon1]);
    assert_eq!(
        theirs.contains("<cycle 1 as a whole>"),
        expect_cycle,
        "{theirs}"
    );
    assert_same(&ours(&bin, &[&gmon1]), &theirs, tag);
    // A second run: two gmon files sum like `gprof -s`.
    let dir = bin.parent().unwrap();
    let gmon2 = dir.join("second.gmon");
    std::fs::rename(&gmon1, &gmon2).unwrap();
    let status = Command::new(&bin)
        .arg("200")
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let theirs = gnu_gprof(&bin, &[&gmon2, &gmon1]);
    assert_same(
        &ours(&bin, &[&gmon2, &gmon1]),
        &theirs,
        &format!("{tag} summed"),
    );
}

#[test]
fn gprof_report_matches_gnu_gprof_pie() {
    check(&["-O1", "-pie", "-fPIE"], "pie", true);
}

#[test]
fn gprof_report_matches_gnu_gprof_non_pie() {
    check(&["-O1", "-no-pie", "-fno-PIE"], "nopie", true);
}

#[test]
fn gprof_report_matches_gnu_gprof_o2() {
    // gcc -O2 turns the mutual recursion into loops and fa into a tail call.
    check(&["-O2", "-no-pie"], "o2", false);
}

#[test]
fn gprof_report_matches_gnu_gprof_with_debug_info() {
    check(&["-O1", "-g", "-no-pie"], "debuginfo", true);
}

#[test]
fn gprof_report_matches_gnu_gprof_cxx() {
    if !require_tool("gprof") || !require_tool("g++") {
        return;
    }
    let (_tmp, bin, gmon) = build_and_run("templates.cc", &["-O1"], &[], "cxx");
    let theirs = gnu_gprof(&bin, &[&gmon]);
    assert!(
        theirs.contains("ns::work(ns::Box<float> const&, int)"),
        "{theirs}"
    );
    assert_same(&ours(&bin, &[&gmon]), &theirs, "cxx");
}

/// The same profile in the 4.4BSD and old BSD layouts (crafted from a real
/// GNU-format file): gprof and we read them alike.
#[test]
fn gprof_report_matches_gnu_gprof_on_bsd_layouts() {
    if !require_tool("gprof") || !require_tool("gcc") {
        return;
    }
    let (tmp, bin, gmon_path) = build_and_run("callgraph.c", &["-O1", "-no-pie"], &["100"], "bsd");
    let file = gmon::read(&std::fs::read(&gmon_path).unwrap(), None).unwrap();
    let h = &file.histograms[0];
    let bins: Vec<u8> = h
        .bins
        .iter()
        .flat_map(|&b| (b as u16).to_le_bytes())
        .collect();
    let arcs: Vec<u8> = file
        .arcs
        .iter()
        .flat_map(|a| {
            [a.from_pc, a.self_pc, a.count]
                .into_iter()
                .flat_map(u64::to_le_bytes)
        })
        .collect();
    let mut bsd44 = Vec::new();
    bsd44.extend_from_slice(&h.low_pc.to_le_bytes());
    bsd44.extend_from_slice(&h.high_pc.to_le_bytes());
    bsd44.extend_from_slice(&((40 + bins.len()) as u32).to_le_bytes());
    bsd44.extend_from_slice(&gmon::BSD44_VERSION.to_le_bytes());
    bsd44.extend_from_slice(&h.prof_rate.to_le_bytes());
    bsd44.extend_from_slice(&[0; 12]);
    bsd44.extend_from_slice(&bins);
    bsd44.extend_from_slice(&arcs);
    let mut old = Vec::new();
    old.extend_from_slice(&h.low_pc.to_le_bytes());
    old.extend_from_slice(&h.high_pc.to_le_bytes());
    old.extend_from_slice(&((20 + bins.len()) as u32).to_le_bytes());
    old.extend_from_slice(&bins);
    old.extend_from_slice(&arcs);
    for (name, data, kind) in [
        ("bsd44.gmon", bsd44, gmon::GmonKind::Bsd44),
        ("oldbsd.gmon", old, gmon::GmonKind::OldBsd),
    ] {
        let path = tmp.path().join(name);
        std::fs::write(&path, &data).unwrap();
        assert_eq!(gmon::read(&data, None).unwrap().kind, kind);
        let theirs = gnu_gprof(&bin, &[&path]);
        assert!(theirs.contains("leaf"), "{theirs}");
        assert_same(&ours(&bin, &[&path]), &theirs, name);
    }
}
