//! Values with a unit (issue 23): `--text`, `--tree`, `--peek`, `--traces`,
//! `--tags` and `--json` of profile.proto files print time as Go pprof
//! does (`330ms`, `2.10s`), compared row by row with Go pprof
//! (`/usr/local/bin/pprof`) on two fixed profiles (so that sampling
//! cannot move what is compared):
//!
//! - `data/record-spin.pb.gz`: `cpuprof record -- ./spin -s 1 -t 2` (the
//!   spin workload of tests/workloads, gcc -O2 -g);
//! - `data/go-cpu.pb.gz`: a Go program's `runtime/pprof` CPU profile;
//! - `data/go-heap.pb.gz`: a Go program's heap profile
//!   (`runtime.MemProfileRate = 1`; `main.freed` allocates 1 MB three
//!   times and drops it, `main.kept` keeps 2 MB; two `runtime.GC()`, then
//!   `pprof.WriteHeapProfile`): `main.freed`'s `inuse_space` is 0.
//!
//! Rows naming libc, the vDSO or the agent's thread trampoline are left
//! out: we name those frames from the files on this machine, Go from the
//! profile alone. gperftools profiles keep perl pprof's layout in samples
//! (the existing goldens).
//!
//! Skipped loudly without Go pprof, unless `CPUPROF_REQUIRE_PEERS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_testkit::{require_tool, run_stdout};

mod common;
use common::report;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Lines both tools print alike: no libc, vDSO or agent frame names, no
/// `Time:` (local time), trailing blanks dropped (Go's tree legend ends
/// in tabs).
fn comparable(text: &str) -> Vec<String> {
    const OURS_OR_THEIRS: &[&str] = &[
        "libc",
        "vdso",
        "clock_gettime",
        "cpu_now",
        "trampoline",
        "clone3",
        "start_thread",
        "Showing top",
        "Showing nodes accounting",
        "Dropped",
    ];
    text.lines()
        .filter(|l| !l.starts_with("Time:"))
        .filter(|l| !OURS_OR_THEIRS.iter().any(|w| l.contains(w)))
        .map(|l| l.trim_end().to_string())
        .collect()
}

fn go(args: &[&str], input: &Path) -> String {
    run_stdout(Command::new("pprof").args(args).arg(input))
}

fn compare(ours_args: &[&str], go_args: &[&str], input: &Path, exact: bool) {
    let ours = report(ours_args, &[input]);
    let theirs = go(go_args, input);
    if exact {
        let ours: Vec<&str> = ours.lines().map(str::trim_end).collect();
        let theirs: Vec<&str> = theirs
            .lines()
            .filter(|l| !l.starts_with("Time:"))
            .map(str::trim_end)
            .collect();
        assert_eq!(ours, theirs, "{ours_args:?} on {}", input.display());
    } else {
        let (o, t) = (comparable(&ours), comparable(&theirs));
        // Every row Go prints that names a frame both tools name alike is
        // ours too, with the same values.
        for line in &t {
            assert!(
                o.contains(line),
                "{ours_args:?} on {}: Go's line {line:?} not in ours:\n{ours}\nGo:\n{theirs}",
                input.display()
            );
        }
        assert!(t.len() >= 5, "too little compared:\n{theirs}");
    }
}

#[test]
fn a_go_profile_prints_as_go_pprof_prints_it() {
    if !require_tool("pprof") {
        return;
    }
    let input = data("go-cpu.pb.gz");
    for (ours, theirs) in [
        (&["--text"][..], &["-top"][..]),
        (&["--text", "--unit=ms"], &["-top", "-unit=ms"]),
        (&["--text", "--unit=minimum"], &["-top", "-unit=minimum"]),
        (&["--text", "--unit=s"], &["-top", "-unit=s"]),
        (&["--text", "--unit=auto"], &["-top", "-unit=auto"]),
        (&["--text", "--nodecount=3"], &["-top", "-nodecount=3"]),
        (&["--text", "--focus=burnB"], &["-top", "-focus=burnB"]),
        (&["--tags"], &["-tags"]),
    ] {
        compare(ours, theirs, &input, true);
    }
    for (ours, theirs) in [
        (&["--tree"][..], &["-tree"][..]),
        (&["--tree", "--unit=us"], &["-tree", "-unit=us"]),
        (&["--peek=burn"], &["-peek=burn"]),
    ] {
        compare(ours, theirs, &input, false);
    }
}

#[test]
fn a_cpuprof_record_profile_prints_as_go_pprof_prints_it() {
    if !require_tool("pprof") {
        return;
    }
    let input = data("record-spin.pb.gz");
    for (ours, theirs) in [
        (&["--text"][..], &["-top"][..]),
        (&["--text", "--unit=ms"], &["-top", "-unit=ms"]),
        (&["--text", "--unit=minimum"], &["-top", "-unit=minimum"]),
        (&["--text", "--unit=s"], &["-top", "-unit=s"]),
        (&["--tree"], &["-tree"]),
        (&["--tree", "--unit=s"], &["-tree", "-unit=s"]),
        (&["--peek=burn_b"], &["-peek=burn_b"]),
    ] {
        compare(ours, theirs, &input, false);
    }
    // The totals: `Showing nodes accounting for` names the same total.
    let ours = report(&["--text"], &[&input]);
    let theirs = go(&["-top"], &input);
    let total = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("Showing nodes accounting for"))
            .and_then(|l| l.rsplit(" of ").next())
            .map(str::to_string)
    };
    assert_eq!(total(&ours), total(&theirs));
    assert_eq!(total(&ours).as_deref(), Some("2095ms total"));
    assert!(
        ours.contains("Duration: 5.53s, Total samples = 2095ms (37.91%)"),
        "{ours}"
    );
}

#[test]
fn traces_and_json_scale_values_and_keep_raw_ones() {
    let input = data("go-cpu.pb.gz");
    let traces = report(&["--traces"], &[&input]);
    assert!(traces.contains("\n     120ms   main.burnA\n"), "{traces}");
    assert!(!traces.contains("160000000"), "{traces}");
    let json: serde_json::Value =
        serde_json::from_str(&report(&["--json", "--unit=s"], &[&input])).unwrap();
    assert_eq!(json["total"], 330_000_000);
    assert_eq!(json["sample_type"]["unit"], "nanoseconds");
    assert_eq!(json["output_unit"], "s");
    assert_eq!(json["total_label"], "0.33s");
    assert_eq!(json["rows"][0]["flat"], 200_000_000);
    assert_eq!(json["rows"][0]["flat_label"], "0.20s");
}

#[test]
fn a_bad_unit_is_one_line() {
    let out = common::cpuprof()
        .args(["report", "--text", "--unit=parsecs"])
        .arg(data("go-cpu.pb.gz"))
        .output()
        .unwrap();
    let (_, err, status) = common::texts(&out);
    assert_ne!(status, 0);
    assert!(
        err.contains("unit=parsecs: expected minimum, auto, or a unit"),
        "{err}"
    );
}

/// The call graph in DOT labels its nodes with the values Go pprof's
/// `-dot` gives the same nodes (each value in its own unit: `310ms`), and
/// its legend with the total in the unit of the text report.
#[test]
fn the_call_graph_labels_values_as_go_pprof_does() {
    if !require_tool("pprof") {
        return;
    }
    let input = data("go-cpu.pb.gz");
    // Go: `tooltip="main.burnA (310ms)"`, the node's cum.
    let theirs: std::collections::BTreeMap<String, String> = go(&["-dot"], &input)
        .lines()
        .filter_map(|l| {
            let tip = l.split_once(" tooltip=\"")?.1;
            let (name, cum) = tip.split_once(" (")?;
            Some((name.to_string(), cum.split_once(')')?.0.to_string()))
        })
        .collect();
    // Ours: `label="main.burnA\n200ms (60.6%)\rof 310ms (93.9%)\r"`.
    let dot = report(&["--dot", "--nodecount=100"], &[&input]);
    let mut ours = std::collections::BTreeMap::new();
    for line in dot
        .lines()
        .filter(|l| l.starts_with('N') && l.contains("[label=\""))
    {
        let label = line.split_once("[label=\"").unwrap().1;
        let label = label.split_once("\",").unwrap().0;
        let parts: Vec<&str> = label.split("\\n").collect();
        let values = parts.last().unwrap();
        let cum = match values.split_once("\\rof ") {
            Some((_, cum)) => cum,
            None => values,
        };
        ours.insert(
            parts[0].to_string(),
            cum.split(' ').next().unwrap().to_string(),
        );
    }
    let mut compared = 0;
    for (name, cum) in &theirs {
        if let Some(ours) = ours.get(name) {
            assert_eq!(ours, cum, "{name}\n{dot}");
            compared += 1;
        }
    }
    assert!(compared >= 4, "{theirs:?}\n{dot}");
    assert!(dot.contains("Total cpu: 330ms\\l"), "{dot}");
}

/// `--traces` on values with a unit prints what Go pprof's `-traces`
/// prints, byte for byte: one block per sample in the profile's order,
/// a sample whose `inuse_space` is 0 (a freed allocation) included,
/// samples whose values are all 0 left out (as Go's reader drops them),
/// inlined frames marked ` (inline)`.
#[test]
fn traces_print_every_sample_as_go_pprof_does() {
    if !require_tool("pprof") {
        return;
    }
    let heap = data("go-heap.pb.gz");
    for index in ["inuse_space", "alloc_space"] {
        let ours = format!("--sample_index={index}");
        let theirs = format!("-sample_index={index}");
        compare(&["--traces", &ours], &["-traces", &theirs], &heap, true);
    }
    compare(&["--traces"], &["-traces"], &data("go-cpu.pb.gz"), true);
    let traces = report(&["--traces", "--sample_index=inuse_space"], &[&heap]);
    assert!(
        traces.contains("     bytes:  1MB\n         0   main.freed\n"),
        "{traces}"
    );
    assert!(
        traces.contains("             time.resetTimer (inline)\n"),
        "{traces}"
    );
}

/// Rows `(value, name)` of Go pprof's `-top` (flat) or of our
/// `--dcpiprof` (the first column and the procedure).
fn value_rows(text: &str, value_column: usize, name_column: usize) -> Vec<(String, String)> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() > name_column && w[1].len() > 1 && w[1].ends_with('%'))
        .map(|w| (w[value_column].to_string(), w[name_column].to_string()))
        .collect()
}

/// `--dcpiprof` prints time in the text report's units: each procedure's
/// value equals Go pprof's flat for it under `-noinlines` (a procedure is
/// the physical function of the leaf), for each unit setting, and the
/// total and period are scaled too.
#[test]
fn dcpiprof_prints_values_as_go_pprof_top_does() {
    if !require_tool("pprof") {
        return;
    }
    let input = data("go-cpu.pb.gz");
    for unit in ["minimum", "ms", "s", "us", "auto"] {
        let ours = report(&["--dcpiprof", &format!("--unit={unit}")], &[&input]);
        let theirs = go(&["-top", "-noinlines", &format!("-unit={unit}")], &input);
        let ours_rows = value_rows(&ours, 0, 3);
        let theirs_rows = value_rows(&theirs, 0, 5);
        assert!(ours_rows.len() >= 4, "{ours}");
        for row in &ours_rows {
            assert!(
                theirs_rows.contains(row),
                "unit={unit}: {row:?} not Go's\n{ours}\nGo:\n{theirs}"
            );
        }
    }
    let ours = report(&["--dcpiprof"], &[&input]);
    assert!(
        ours.contains("\ncpu              330ms  10ms cpu\n"),
        "{ours}"
    );
    assert!(!ours.contains("000000"), "{ours}");
}

/// The visible text of a page: no scripts (the flame graph's data keeps
/// raw values, as `--json` does), no tags or attributes (`data-value`).
fn visible_text(html: &str) -> String {
    let mut text = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<script") {
        text.push_str(&rest[..start]);
        rest = rest[start..].split_once("</script>").map_or("", |(_, r)| r);
    }
    text.push_str(rest);
    let mut visible = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                visible.push(' ');
            }
            c if !in_tag => visible.push(c),
            _ => {}
        }
    }
    visible
}

/// Every view of the web UI, its sample menu and its legend print time
/// scaled (`cpu (2.10s)`, `Period: 1ms`), never raw nanoseconds (no
/// number of 7 digits or more is shown), a diff with `--confidence` too;
/// `?unit=ms` rescales the menu and the legend.
#[test]
fn the_web_ui_prints_units_in_every_view() {
    let input = data("record-spin.pb.gz");
    let base = format!("--base={}", data("go-cpu.pb.gz").display());
    let confidence = std::path::PathBuf::from("--confidence");
    for inputs in [
        vec![input.clone()],
        vec![PathBuf::from(&base), confidence, input.clone()],
    ] {
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let web = common::WebUi::start(&inputs);
        for view in [
            "top",
            "graph",
            "flamegraph",
            "peek?f=burn_a",
            "source?f=burn_a",
        ] {
            let (status, page) = web.get_text(&format!("/ui/{view}"));
            assert_eq!(status, 200, "{view}");
            let text = visible_text(&page);
            let raw = text
                .split(|c: char| !c.is_ascii_alphanumeric())
                .find(|w| w.len() >= 7 && w.bytes().all(|b| b.is_ascii_digit()));
            assert_eq!(raw, None, "{inputs:?} {view}: a raw value in\n{text}");
            assert!(text.contains("Period: 1ms"), "{view}:\n{text}");
        }
        let (_, page) = web.get_text("/ui/top");
        let text = visible_text(&page);
        let (_, in_ms) = web.get_text("/ui/top?unit=ms");
        let in_ms = visible_text(&in_ms);
        if inputs.len() == 1 {
            assert!(text.contains("samples (2095)"), "{text}");
            assert!(text.contains("cpu (2.10s)"), "{text}");
            assert!(text.contains("Total: 2.10s (cpu)"), "{text}");
            assert!(in_ms.contains("cpu (2095ms)"), "{in_ms}");
            assert!(in_ms.contains("Total: 2095ms (cpu)"), "{in_ms}");
        } else {
            // A diff's legend and menu give the base's totals.
            assert!(text.contains("cpu (330ms)"), "{text}");
            assert!(text.contains("Total: 330ms (cpu) in the base"), "{text}");
        }
    }
}

/// `--proto` writes what the filters keep, as Go pprof's `-proto`: the
/// samples `--focus`/`--ignore` keep, the lines `--hide`/`--show` leave
/// (by function name or file name, as Go matches them: `--hide=runtime`
/// hides `time.now`, whose file is `runtime/time_linux_amd64.s`), the
/// callers `--show_from` cuts; a sample left without frames is dropped.
/// Go pprof's `-traces` of both files are equal, and so are our `--text`
/// and Go's `-top` with the same filter.
#[test]
fn proto_applies_the_filters_as_go_pprof_does() {
    if !require_tool("pprof") {
        return;
    }
    let dir = cpuprof_testkit::TempDir::new().unwrap();
    let (ours, theirs) = (dir.path().join("ours.pb.gz"), dir.path().join("go.pb.gz"));
    let go_cpu: &[&str] = &[
        "focus=burnB",
        "ignore=burnB",
        "hide=runtime",
        "show=main\\.",
        "show_from=burnB",
        "hide=burnA",
    ];
    let spin: &[&str] = &["focus=burn_b", "hide=recurse", "show=^(burn|recurse)"];
    for (input, filters) in [
        (data("go-cpu.pb.gz"), go_cpu),
        (data("record-spin.pb.gz"), spin),
    ] {
        for filter in filters {
            let status = common::cpuprof()
                .args(["report", "--proto", &format!("--{filter}"), "-o"])
                .arg(&ours)
                .arg(&input)
                .status()
                .unwrap();
            assert!(status.success(), "{filter}");
            let go_status = Command::new("pprof")
                .args(["-proto", &format!("-{filter}"), "-output"])
                .arg(&theirs)
                .arg(&input)
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(go_status.success(), "Go pprof -proto -{filter}");
            let traces = |file: &Path| comparable(&go(&["-traces"], file));
            assert_eq!(
                traces(&ours),
                traces(&theirs),
                "--proto --{filter} of {}: ours (left), Go's (right)",
                input.display()
            );
            // Each filter changes the profile written.
            let whole = go(&["-traces"], &input);
            assert_ne!(traces(&ours), comparable(&whole), "{filter}");
        }
    }
    let text = report(&["--text", "--hide=runtime"], &[&data("go-cpu.pb.gz")]);
    let top = go(&["-top", "-hide=runtime"], &data("go-cpu.pb.gz"));
    assert_eq!(comparable(&text), comparable(&top));
}
