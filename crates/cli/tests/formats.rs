//! The formats through the command line, against the reference tools:
//! Go pprof reads our profile.proto and we read its; gperftools → proto →
//! gperftools is lossless; gmon.out's `--text` agrees with gprof's flat
//! profile; DCPI databases; convert sums; bad input in every format is one
//! line with the file, the offset and what was expected.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_profile::{gperftools, proto};
use cpuprof_testkit::{
    build_spin, gcc_and_libprofiler, profile_with_libprofiler, require_tool, run_ok, run_stdout,
    TempDir, TextReport,
};

mod common;
use common::cpuprof;

/// A real gperftools profile of spin (burn_a/burn_b/burn_c), with spin.
fn spin_profile(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let lib = gcc_and_libprofiler()?;
    let (spin, _) = build_spin(dir, "spin", &["-fno-omit-frame-pointer"]);
    let prof = dir.join("spin.prof");
    profile_with_libprofiler(&lib, &spin, &["-s", "1.5"], &prof, 250);
    Some((spin, prof))
}

/// callgraph.c built with `gcc -pg` (non-PIE) in `dir` and run there:
/// the executable and its gmon.out.
fn callgraph_gmon(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("callgraph");
    let st = Command::new("gcc")
        .args(["-O1", "-pg", "-no-pie"])
        .arg(cpuprof_testkit::workload("callgraph.c"))
        .arg("-o")
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success());
    let st = Command::new(&bin)
        .arg("300")
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    (bin, dir.join("gmon.out"))
}

/// Rows of Go pprof's `-top`: (flat, cum, name).
fn go_top(text: &str) -> Vec<(i64, i64, String)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') || !f[4].ends_with('%') {
                return None;
            }
            Some((f[0].parse().ok()?, f[3].parse().ok()?, f[5..].join(" ")))
        })
        .collect()
}

#[test]
fn go_pprof_reads_our_proto_with_the_same_top_functions() {
    let dir = TempDir::new().unwrap();
    let Some((spin, prof)) = spin_profile(dir.path()) else {
        return;
    };
    if !require_tool("pprof") {
        return;
    }
    let pb = dir.path().join("spin.pb.gz");
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&spin)
            .arg(&prof)
            .arg("-o")
            .arg(&pb)
            .args(["--to", "pprof"]),
    );
    let ours = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&prof),
    ));
    let theirs = go_top(&run_stdout(
        Command::new("pprof")
            .args(["-top", "-nodecount=100"])
            .arg(&pb),
    ));
    assert!(ours.total > 0);
    for name in ["burn_a", "burn_b", "burn_c"] {
        let a = ours
            .row(name)
            .unwrap_or_else(|| panic!("{name} not in our report"));
        let b = theirs
            .iter()
            .find(|r| r.2 == name)
            .unwrap_or_else(|| panic!("{name} not in pprof -top: {theirs:?}"));
        assert_eq!((a.flat, a.cum), (b.0, b.1), "{name}");
    }
    // The same top three by flat value, and the same values for every
    // function both name alike (libc and vdso frames are named differently
    // by the two symbolizers: `[[vdso]]`, `__GI___clock_gettime`, ...).
    let top = |mut rows: Vec<(i64, String)>| {
        rows.sort_by(|a, b| b.cmp(a));
        rows.truncate(3);
        rows
    };
    let top_ours = top(ours.rows.iter().map(|r| (r.flat, r.name.clone())).collect());
    let top_theirs = top(theirs.iter().map(|r| (r.0, r.2.clone())).collect());
    assert_eq!(top_ours, top_theirs);
    for r in &ours.rows {
        if let Some(t) = theirs.iter().find(|t| t.2 == r.name) {
            assert_eq!((r.flat, r.cum), (t.0, t.1), "{}", r.name);
        }
    }
}

#[test]
fn we_read_go_pprof_proto_output() {
    let dir = TempDir::new().unwrap();
    let Some((spin, prof)) = spin_profile(dir.path()) else {
        return;
    };
    if !require_tool("pprof") {
        return;
    }
    let go_pb = dir.path().join("go.pb.gz");
    run_ok(
        Command::new("pprof")
            .arg("-proto")
            .arg("-output")
            .arg(&go_pb)
            .arg(&spin)
            .arg(&prof),
    );
    let ours = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&prof),
    ));
    let via_go = TextReport::parse(&run_stdout(
        cpuprof()
            .args(["report", "--text", "--sample_index=samples"])
            .arg(&spin)
            .arg(&go_pb),
    ));
    assert_eq!(via_go.total, ours.total);
    for name in ["burn_a", "burn_b", "burn_c"] {
        assert_eq!(
            via_go.row(name).map(|r| r.flat),
            ours.row(name).map(|r| r.flat),
            "{name}"
        );
    }
}

#[test]
fn gperftools_to_proto_to_gperftools_is_lossless() {
    let dir = TempDir::new().unwrap();
    let Some((spin, prof)) = spin_profile(dir.path()) else {
        return;
    };
    let pb = dir.path().join("p.pb.gz");
    let back = dir.path().join("back.prof");
    run_stdout(
        cpuprof()
            .args(["convert", "--no-symbolize"])
            .arg(&prof)
            .arg("-o")
            .arg(&pb)
            .args(["--to", "pprof"]),
    );
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&pb)
            .arg("-o")
            .arg(&back)
            .args(["--to", "gperftools"]),
    );
    let original = gperftools::read(&std::fs::read(&prof).unwrap()).unwrap();
    let via_proto = proto::read(&std::fs::read(&pb).unwrap()).unwrap();
    assert_eq!(via_proto, original);
    let again = gperftools::read(&std::fs::read(&back).unwrap()).unwrap();
    assert_eq!(again, original);
    let mut a = Vec::new();
    gperftools::write(&original, &mut a).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), a);
    let _ = spin;
}

#[test]
fn convert_sums_inputs_of_different_formats() {
    let dir = TempDir::new().unwrap();
    let Some((spin, prof)) = spin_profile(dir.path()) else {
        return;
    };
    let pb = dir.path().join("p.pb.gz");
    run_stdout(
        cpuprof()
            .args(["convert", "--no-symbolize"])
            .arg(&prof)
            .arg("-o")
            .arg(&pb)
            .args(["--to", "pprof"]),
    );
    let sum = dir.path().join("sum.prof");
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&prof)
            .arg(&pb)
            .arg("-o")
            .arg(&sum)
            .args(["--to", "gperftools"]),
    );
    let one = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&prof),
    ));
    let two = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&sum),
    ));
    assert_eq!(two.total, 2 * one.total);
    assert_eq!(
        two.row("burn_a").unwrap().flat,
        2 * one.row("burn_a").unwrap().flat
    );
    // Collapsed output of the sum: same total.
    let folded = dir.path().join("sum.folded");
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&spin)
            .arg(&sum)
            .arg("-o")
            .arg(&folded)
            .args(["--to", "collapsed"]),
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: i64 = text
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(total, two.total);
    assert!(
        text.lines()
            .any(|l| l.contains("main;") && l.contains("burn_a")),
        "{text}"
    );
}

/// gmon.out of a real gcc -pg program: `--text --sample_index=cpu` gives
/// each function gprof's self seconds; `--gprof` is gprof -b.
#[test]
fn gmon_text_report_agrees_with_gprof_flat_profile() {
    if !require_tool("gcc") || !require_tool("gprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (bin, gmon) = callgraph_gmon(dir.path());
    let gprof = run_stdout(
        Command::new("gprof")
            .args(["-b", "-p"])
            .arg(&bin)
            .arg(&gmon),
    );
    // --text prints time scaled (Go's layout); --json has the raw values.
    let text = run_stdout(
        cpuprof()
            .args(["report", "--text", "--sample_index=cpu"])
            .arg(&bin)
            .arg(&gmon),
    );
    assert!(text.contains("Showing nodes accounting for "), "{text}");
    let json: serde_json::Value = serde_json::from_str(&run_stdout(
        cpuprof()
            .args(["report", "--json", "--sample_index=cpu"])
            .arg(&bin)
            .arg(&gmon),
    ))
    .unwrap();
    let ours: Vec<(i64, i64, String)> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["flat"].as_i64().unwrap(),
                r["cum"].as_i64().unwrap(),
                r["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut checked = 0;
    for line in gprof.lines().skip(5) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let self_seconds: f64 = f[2].parse().unwrap();
        let name = f.last().unwrap();
        let flat_ns = ours.iter().find(|r| r.2 == *name).map_or(0, |r| r.0);
        assert_eq!(
            format!("{:.2}", flat_ns as f64 / 1e9),
            format!("{self_seconds:.2}"),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{gprof}");
    let theirs = run_stdout(Command::new("gprof").arg("-b").arg(&bin).arg(&gmon));
    let ours = run_stdout(cpuprof().args(["report", "--gprof"]).arg(&bin).arg(&gmon));
    assert_eq!(ours, theirs);
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// Bad input: exit 1, one line naming the file, the offset and what was
/// expected, in every format.
#[test]
fn bad_input_in_every_format_is_one_line_with_file_and_offset() {
    let dir = TempDir::new().unwrap();
    let cases: Vec<(&str, Vec<u8>, u64, &str)> = vec![
        ("truncated.gmon", b"gmon\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x10\x00".to_vec(), 21, "expected the arc's from_pc"),
        ("badtag.gmon", b"gmon\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x09".to_vec(), 20, "expected 0 (histogram)"),
        ("damaged.pb.gz", gzip(&[0x0a, 0x00, 0x12, 0x0a, 0x00]), 3, "only 1 bytes remain"),
        ("bad.folded", b"main;a 1\nmain;b x\n".to_vec(), 9, "line 2: expected"),
        (
            "footer.dcpi",
            [
                b"version pdb-0.07\nimage 1\nepoch 9706121430\nplatform x\nevent cycles\nperiod 1\ntstart 1000\ntsize 16\ncpuspeed 1\nsamples\n".as_slice(),
                &[0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 6, 0, 0, 0],
            ]
            .concat(),
            127,
            "footer says 1 addresses with 6 samples",
        ),
    ];
    for (name, data, offset, expected) in cases {
        let path = dir.path().join(name);
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
        assert!(
            stderr.contains(&path.display().to_string()),
            "{name}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("offset {offset}:")),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}

#[test]
fn dcpi_database_directories_are_read_whole_or_by_epoch() {
    let dir = TempDir::new().unwrap();
    let Some((spin, prof)) = spin_profile(dir.path()) else {
        return;
    };
    let db = dir.path().join("db");
    let out = run_ok(
        cpuprof()
            .args(["convert"])
            .arg(&prof)
            .arg("-o")
            .arg(&db)
            .args(["--to", "dcpi"]),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dropped: call stacks"), "{stderr}");
    let flat = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&prof),
    ));
    let from_db = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&spin).arg(&db),
    ));
    assert_eq!(from_db.total, flat.total);
    for name in ["burn_a", "burn_b", "burn_c"] {
        assert_eq!(
            from_db.row(name).map(|r| r.flat),
            flat.row(name).map(|r| r.flat),
            "{name}"
        );
    }
    let epoch = std::fs::read_dir(&db)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let one = TextReport::parse(&run_stdout(
        cpuprof()
            .args(["report", "--text"])
            .arg(format!("--epoch={}", epoch.to_string_lossy()))
            .arg(&spin)
            .arg(&db),
    ));
    assert_eq!(one.total, flat.total);
    let out = cpuprof()
        .args(["report", "--text", "--epoch=0000000000"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// A DCPI profile written by hand for a real binary (function addresses
/// from `nm`, unknown header lines, no cpuprof line): `--dcpiprof` and
/// `--text` give each procedure the counts written at its addresses.
#[test]
fn hand_written_dcpi_profile_per_procedure_totals() {
    if !require_tool("gcc") || !require_tool("nm") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let bin = dir.path().join("callgraph");
    let st = Command::new("gcc")
        .args(["-O1", "-no-pie"])
        .arg(cpuprof_testkit::workload("callgraph.c"))
        .arg("-o")
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success());
    let nm = run_stdout(Command::new("nm").arg(&bin));
    let addr = |name: &str| -> u64 {
        nm.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).unwrap())
            })
            .unwrap_or_else(|| panic!("{name} not in nm output"))
    };
    let (leaf, fa, rec) = (addr("leaf"), addr("fa"), addr("rec"));
    let tstart = leaf.min(fa).min(rec);
    let header = format!(
        "version pdb-0.07\nimage 4d2\nx-unknown-key kept as is\nepoch 2411211200\nplatform x86_64-linux\nevent cycles\nperiod 62000\ntstart {tstart:x}\ntsize 65536\ncpuspeed 2000\npath {}\nsamples\n",
        bin.display()
    );
    // Chunks must be in increasing order of offset.
    let mut counts: Vec<(u64, u32)> = vec![
        (leaf - tstart, 5),
        (leaf - tstart + 4, 6),
        (fa - tstart, 7),
        (rec - tstart + 2, 3),
    ];
    counts.sort();
    let mut data = header.into_bytes();
    let mut total = 0u32;
    for (off, n) in &counts {
        data.extend_from_slice(&(*off as u32).to_le_bytes());
        data.extend_from_slice(&1u32.to_le_bytes());
        data.extend_from_slice(&n.to_le_bytes());
        total += n;
    }
    data.extend_from_slice(&(counts.len() as u32).to_le_bytes());
    data.extend_from_slice(&total.to_le_bytes());
    let file = dir.path().join("callgraph.dcpi");
    std::fs::write(&file, &data).unwrap();
    let text = run_stdout(cpuprof().args(["report", "--dcpiprof"]).arg(&file));
    let row = |name: &str| -> (i64, String) {
        text.lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 5 && f[3] == name).then(|| (f[0].parse().unwrap(), f[4].to_string()))
            })
            .unwrap_or_else(|| panic!("{name} not in\n{text}"))
    };
    assert_eq!(row("leaf"), (11, "callgraph".to_string()), "{text}");
    assert_eq!(row("fa"), (7, "callgraph".to_string()));
    assert_eq!(row("rec"), (3, "callgraph".to_string()));
    assert!(text.contains("samples             21"), "{text}");
    let flat = TextReport::parse(&run_stdout(
        cpuprof().args(["report", "--text"]).arg(&bin).arg(&file),
    ));
    assert_eq!(flat.total, 21);
    assert_eq!(flat.row("leaf").map(|r| r.flat), Some(11));
    // Rewritten through convert, the header comes back byte for byte.
    let db = dir.path().join("db");
    run_stdout(
        cpuprof()
            .args(["convert"])
            .arg(&file)
            .arg("-o")
            .arg(&db)
            .args(["--to", "dcpi"]),
    );
    let written = std::fs::read_dir(db.join("2411211200"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let again = std::fs::read(written).unwrap();
    let header_len = data.windows(8).position(|w| w == b"samples\n").unwrap();
    assert_eq!(&again[..header_len], &data[..header_len]);
}

/// A gmon.out histogram has no call stacks: `--dot` and `--flame` say so
/// (stderr, legend, title) and point at the arcs; `--sample_index=calls`
/// draws gprof's call arcs as edges without the note.
#[test]
fn flat_profiles_say_they_have_no_call_stacks() {
    if !require_tool("gcc") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let (bin, gmon) = callgraph_gmon(dir.path());
    let run = |args: &[&str]| {
        let out = run_ok(cpuprof().arg("report").args(args).arg(&bin).arg(&gmon));
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let note = "this profile has no call stacks (it counts samples per address)";
    let (dot, stderr) = run(&["--dot"]);
    assert!(
        stderr.contains(&format!("cpuprof: note: {note}")),
        "{stderr}"
    );
    assert!(stderr.contains("--sample_index=calls"), "{stderr}");
    let legend = dot
        .lines()
        .find(|l| l.starts_with("Legend "))
        .expect("a legend");
    assert_eq!(legend.matches("\\l").count(), 6, "{legend}");
    assert!(legend.contains(note), "{legend}");
    assert!(!dot.contains(" -> "), "no edges in a flat profile:\n{dot}");
    let (flame, _) = run(&["--flame"]);
    assert!(flame.contains(note), "the flame graph's title says it");
    for output in ["--tree", "--callgrind"] {
        let (_, stderr) = run(&[output]);
        assert!(stderr.contains(note), "{output}: {stderr}");
    }
    let (arcs, stderr) = run(&["--dot", "--sample_index=calls"]);
    assert!(!stderr.contains("note:"), "{stderr}");
    assert!(arcs.contains(" -> "), "gprof's arcs are edges:\n{arcs}");
    let legend = arcs.lines().find(|l| l.starts_with("Legend ")).unwrap();
    assert_eq!(legend.matches("\\l").count(), 5, "{legend}");
}
