//! `cpuprof record` and `cpuprof demo`, end to end: the agent library found
//! beside the binary, the profile written, the report printed.

use cpuprof_testkit::{build_spin, compile, run_ok, TempDir};

mod common;
use common::{cpuprof, report};

/// Flat share of `name` in a printed text report, in percent.
fn flat_percent(report: &str, name: &str) -> f64 {
    let row = cpuprof_testkit::TextReport::parse(report);
    let flat = row.row(name).map_or(0, |r| r.flat);
    100.0 * flat as f64 / row.total.max(1) as f64
}

#[test]
fn record_runs_the_command_under_the_agent_and_prints_the_report() {
    let dir = TempDir::new().unwrap();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("rec.prof");
    let out = cpuprof()
        .args(["record", "-F", "1000", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&spin)
        .args(["-s", "0.5", "-t", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("done "),
        "the command's own output: {stdout}"
    );
    let share = flat_percent(&stdout, "burn_a");
    assert!(
        (50.0..=70.0).contains(&share),
        "burn_a {share:.1}%:\n{stdout}"
    );
    let data = std::fs::read(&profile).unwrap();
    // profile.proto by default, with each sample's thread.
    let parsed = cpuprof_profile::proto::read(&data).unwrap();
    assert!(parsed
        .samples
        .iter()
        .all(|s| s.labels.iter().any(|l| l.key == "thread_name")));
    let total: i64 = parsed.samples.iter().map(|s| s.values[0]).sum();
    assert!((850..=1150).contains(&total), "1 CPU-s at 1000 Hz: {total}");
}

#[test]
fn record_passes_the_exit_status_through() {
    let dir = TempDir::new().unwrap();
    let out = cpuprof()
        .args(["record", "-o"])
        .arg(dir.path().join("false.prof"))
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn demo_shows_the_known_split() {
    let dir = TempDir::new().unwrap();
    let out = cpuprof()
        .args(["demo", "-t", "2", "-s", "0.5", "-o"])
        .arg(dir.path().join("demo.prof"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, expected) in [
        ("cpuprof::demo::demo_hot", 60.0),
        ("cpuprof::demo::demo_warm", 30.0),
        ("cpuprof::demo::demo_cool", 10.0),
    ] {
        let report = cpuprof_testkit::TextReport::parse(&stdout);
        let cum = report.row(name).map_or(0, |r| r.cum);
        let share = 100.0 * cum as f64 / report.total.max(1) as f64;
        assert!(
            (share - expected).abs() <= 6.0,
            "{name}: {share:.1}%\n{stdout}"
        );
    }
}

/// Regression: `cpuprof record`'s profile.proto carries the agent's
/// symbol-table names (mangled, no lines); the report used them as they
/// were (`_ZN4work6Burner4burnEi ??:0`) and showed the agent's thread
/// wrapper (`cpuprof::threads::trampoline`) in every thread's stack. The
/// local program is read again for lines, inline chains and demangled
/// names, and the wrapper is removed as the profiler's own frame.
#[test]
fn recorded_proto_gets_demangled_names_and_lines_from_the_local_program() {
    let dir = TempDir::new().unwrap();
    let source = dir.path().join("burner.cc");
    std::fs::write(
        &source,
        "#include <cstdio>\n#include <thread>\n\
         namespace work { struct Burner { static double burn(int n); };\n\
         double Burner::burn(int n) { volatile double x = 0; for (long i = 0; i < (long)n * 1000000; i++) x += i * 0.5; return x; } }\n\
         int main() { std::thread t([] { work::Burner::burn(200); }); t.join(); std::puts(\"done\"); }\n",
    )
    .unwrap();
    let program = compile(
        "g++",
        &[&source],
        &dir.path().join("burner"),
        &["-O1", "-g", "-pthread"],
    );
    let profile = dir.path().join("burner.pb.gz");
    run_ok(
        cpuprof()
            .args(["record", "-F", "1000", "-o"])
            .arg(&profile)
            .arg("--")
            .arg(&program),
    );
    // The file holds the mangled symbol (what the agent's tables give).
    let parsed = cpuprof_profile::proto::read(&std::fs::read(&profile).unwrap()).unwrap();
    assert!(parsed
        .functions
        .iter()
        .any(|f| f.name.contains("_ZN4work6Burner4burnEi")));
    let text = report(
        &["--text", "--lines", "--sample_index=samples"],
        &[&profile],
    );
    let burn = text
        .lines()
        .find(|l| l.contains("work::Burner::burn"))
        .unwrap_or_else(|| panic!("no demangled row:\n{text}"));
    assert!(burn.ends_with("burner.cc:4"), "{burn}");
    assert!(!text.contains("_ZN"), "{text}");
    // The agent's thread wrapper is gone; glibc's lazy-binding stub
    // (`_dl_runtime_resolve_xsavec ... dl-trampoline.h`) may be sampled
    // legitimately, so only the agent's name is checked.
    assert!(!text.contains("threads::trampoline"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("main::{lambda()#1}::operator()") || l.contains("operator()")),
        "{text}"
    );
}

/// Proves (issue 22: profiles of multi-process programs): a command that
/// runs two programs leaves one profile per process, `record` lists them
/// with each one's pid and kind (the program's name, or its command
/// line's `--type=`), and every sample carries `pid` and `process` labels,
/// so `report FILE* --tagfocus=process=spin` sums the two spins alone.
#[test]
fn record_lists_one_profile_per_process_and_labels_them() {
    let dir = TempDir::new().unwrap();
    let (spin, _) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("multi.prof");
    let script = format!(
        "{0} -s 0.3 -t 1 >/dev/null; {0} -s 0.3 -t 1 >/dev/null",
        spin.display()
    );
    let out = cpuprof()
        .args(["record", "-F", "1000", "--nodecount", "0", "-o"])
        .arg(&profile)
        .args(["--", "sh", "-c"])
        .arg(&script)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cpuprof: 3 profiles, one per process"),
        "{stderr}"
    );
    let spins: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("multi.prof_") && l.contains(" spin "))
        .collect();
    assert_eq!(spins.len(), 2, "{stderr}");
    for line in &spins {
        let file_pid = line
            .split("multi.prof_")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap();
        assert!(line.contains(&format!("pid {file_pid} ")), "{line}");
    }
    assert!(stderr.contains("--tagfocus=process=KIND"), "{stderr}");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("multi.prof")
        })
        .collect();
    files.sort();
    let summed = cpuprof()
        .args([
            "report",
            "--text",
            "--sample_index=samples",
            "--tagfocus=process=spin",
        ])
        .args(&files)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&summed.stdout);
    let report = cpuprof_testkit::TextReport::parse(&text);
    assert!(
        (450..=750).contains(&report.total),
        "2 × 0.3 CPU-s at 1000 Hz: {}\n{text}{}",
        report.total,
        String::from_utf8_lossy(&summed.stderr)
    );
}

/// `cpuprof record -- node --perf-basic-prof app.js`: the JavaScript
/// frames are named from node's JIT map, `/tmp/perf-PID.map`, in both of
/// the agent's formats, as perf names them (issue 19; before: raw
/// `0x00007f…` addresses). The agent names the anonymous executable
/// mappings after the map; the report reads it.
#[test]
fn record_names_node_s_javascript_frames_from_its_jit_map() {
    if !cpuprof_testkit::require_tool("node") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let app = dir.path().join("app.js");
    std::fs::write(
        &app,
        "function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001; return s; }\n\
         function outer() { let t = 0; for (let k = 0; k < 40; k++) t += hotLoop(1e6); return t; }\n\
         const end = Date.now() + 800; let r = 0; while (Date.now() < end) r += outer();\n\
         console.log(r > 0, process.pid);\n",
    )
    .unwrap();
    for format in ["pprof", "gperftools"] {
        let profile = dir.path().join(format!("node-{format}.prof"));
        // In the temporary directory: node writes its V8 log
        // (isolate-*.log) in the current one.
        let out = cpuprof()
            .current_dir(dir.path())
            .args([
                "record",
                "-F",
                "1000",
                "--nodecount=5",
                "--format",
                format,
                "-o",
            ])
            .arg(&profile)
            .args(["--", "node", "--perf-basic-prof"])
            .arg(&app)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format}: {stderr}");
        let pid = stdout
            .lines()
            .find_map(|l| l.strip_prefix("true "))
            .unwrap_or_else(|| panic!("{format}: node's own line: {stdout}"))
            .trim()
            .to_string();
        let map = format!("/tmp/perf-{pid}.map");
        let text = report(&["--text", "--nodecount=5"], &[&profile]);
        let maps = std::fs::read(&profile).unwrap();
        // node's map, left in /tmp, goes with the test.
        let _ = std::fs::remove_file(&map);
        // The report `record` prints and a later `report` both name the
        // hot JavaScript function among the top five rows: it takes most
        // of the run's CPU time (the rest: V8's start, its compiler and
        // GC threads).
        let share = flat_percent(&stdout, "hotLoop");
        assert!(share >= 30.0, "{format}: hotLoop {share:.1}%:\n{stdout}");
        assert!(
            text.lines().any(|l| l.ends_with(" hotLoop")),
            "{format}: {text}"
        );
        // The mapping carries the map's path.
        assert!(
            maps.windows(map.len()).any(|w| w == map.as_bytes()),
            "{format}: no mapping named {map}"
        );
    }
}
