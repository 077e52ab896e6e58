//! The web UI in a real browser: Debian's headless Chromium driven through
//! the DevTools protocol by Playwright for Python (`browser.py`, which
//! prints what it saw), on two `cpuprof report --http` servers over a
//! profile of spin, and one with `--base` over two runs of a workload
//! whose shares change. What the page shows is compared
//! here with `cpuprof report`'s own outputs. Screenshots of each view are
//! kept in target/web-screenshots.

mod common;

use std::process::Command;

use common::{browser_available, cpuprof_binary, report_rows, shares, spin, text_rows, Server};
use cpuprof_testkit::{repo_root, run_stdout};
use serde_json::Value;

#[test]
fn every_view_in_chromium() {
    let Some(spin) = spin() else { return };
    let Some(shares) = shares() else { return };
    if !browser_available() {
        return;
    }
    let server = Server::start(&[], &[&spin.binary, &spin.profile]);
    // At 99.9%, so that a share that did not change is called significant
    // once in a thousand runs, not once in twenty.
    let base = format!("--base={}", shares.base.display());
    let diff = Server::start(
        &[&base, "--confidence=99.9"],
        &[&shares.binary, &shares.profile],
    );
    let shots = repo_root().join("target/web-screenshots");
    let script = repo_root().join("crates/web/tests/browser.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(&server.url)
        .arg(&diff.url)
        .arg(&shots)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    // Bounded: the script's every wait has a timeout; the whole run too.
    let started = std::time::Instant::now();
    let output = loop {
        if let Some(_status) = child.try_wait().unwrap() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("browser.py took more than 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(
        output.status.success(),
        "browser.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).expect("browser.py's JSON");

    // No console error, no page error, no failed request anywhere.
    assert_eq!(seen["problems"], Value::Array(vec![]), "{seen:#}");
    for view in ["top", "graph", "flamegraph", "peek", "source", "disasm"] {
        let loaded = &seen["loaded"][view];
        assert!(
            loaded["title"].as_str().unwrap().contains("cpuprof"),
            "{view}: {loaded}"
        );
    }
    assert_eq!(
        seen["loaded"]["flamegraph"]["current"], "Flame Graph",
        "/ redirects"
    );

    // Graph: click burn_b, Refine > Focus: the URL and the numbers change,
    // and they are `--text --focus=` of it.
    let focus_url = seen["graph_focus_url"].as_str().unwrap();
    assert!(focus_url.contains("/ui/graph?f="), "{focus_url}");
    assert!(seen["selection_text"].as_str().unwrap().contains("burn_b"));
    let focused = text_rows(&seen["focus_rows"]);
    assert_eq!(focused, report_rows(&["--focus=^(burn_b)$"]), "{seen:#}");
    let all = text_rows(&seen["top_rows"]);
    assert_eq!(all, report_rows(&[]));
    assert_ne!(focused, all);

    // Top: click burn_c, Focus; Back restores the table.
    assert!(seen["row_focus_url"].as_str().unwrap().contains("f="));
    assert_eq!(
        text_rows(&seen["row_focus_rows"]),
        report_rows(&["--focus=^(burn_c)$"])
    );
    assert!(seen["back_url"].as_str().unwrap().ends_with("/ui/top"));
    assert_eq!(text_rows(&seen["back_rows"]), all);
    assert_eq!(seen["sorted_by_name"], true);
    let filtered: Vec<String> = serde_json::from_value(seen["filtered_names"].clone()).unwrap();
    assert!(!filtered.is_empty() && filtered.iter().all(|n| n.starts_with("burn_")));

    // Sample type and granularity.
    assert!(seen["sample_options"].as_array().unwrap().len() >= 2);
    assert_ne!(seen["sample_before"], seen["sample_after"]);
    assert!(seen["sample_url"].as_str().unwrap().contains("si="));
    let lines: Vec<String> = serde_json::from_value(seen["lines_names"].clone()).unwrap();
    assert!(
        lines.iter().any(|n| n.contains("spin.c:")),
        "lines granularity: {lines:?}"
    );

    // Search highlights.
    let mut matches: Vec<String> = serde_json::from_value(seen["graph_matches"].clone()).unwrap();
    matches.sort();
    assert_eq!(matches, ["burn_a", "burn_b"]);
    assert!(seen["flame_matched"]
        .as_str()
        .unwrap()
        .starts_with("Matched:"));
    assert!(seen["flame_fills_changed"].as_u64().unwrap() >= 1);
    assert!(seen["search_enter_url"]
        .as_str()
        .unwrap()
        .contains("f=burn_a"));

    // Source: per-line counts as --list prints them.
    let list = run_stdout(
        Command::new(cpuprof_binary())
            .args(["report", "--list=burn_a"])
            .arg(&spin.binary)
            .arg(&spin.profile),
    );
    let page_text = seen["source_text"].as_str().unwrap();
    assert_eq!(page_text.trim_end(), list.trim_end());
    assert!(seen["source_hot_lines"].as_u64().unwrap() >= 1);

    // Diff: only significant changes of share are coloured. burn_b's share
    // grew from 20% to 50% (red), burn_a's shrank from 70% to 40% (green,
    // though its samples grew), burn_c's and main's stayed (grey, though
    // their samples doubled: the old colouring by absolute change made
    // main the reddest node).
    let top = &seen["diff_top"];
    let cum = |name: &str| -> i64 { top[name]["cum"].as_str().unwrap().parse().unwrap() };
    assert!(cum("main") > 100, "main's samples doubled: {top:#}");
    assert!(cum("burn_b") > 0 && cum("burn_c") > 0, "{top:#}");
    let rgb = |colour: &str| -> Vec<u32> {
        colour
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(", ")
            .map(|c| c.parse().unwrap())
            .collect()
    };
    let red = |c: &[u32]| c[0] > c[1] + 60 && c[0] > c[2] + 60;
    let green = |c: &[u32]| c[1] > c[0] + 40 && c[1] > c[2] + 40;
    let colour = |name: &str| rgb(top[name]["cum_colour"].as_str().unwrap());
    assert!(red(&colour("burn_b")), "{top:#}");
    assert!(green(&colour("burn_a")), "{top:#}");
    let plain = rgb(seen["diff_text_colour"].as_str().unwrap());
    assert_eq!(colour("burn_c"), plain, "{top:#}");
    assert_eq!(colour("main"), plain, "{top:#}");
    assert!(
        seen["diff_legend"]
            .as_str()
            .unwrap()
            .contains("coloured: significant changes"),
        "{seen:#}"
    );
    // Without --confidence as with it, the values are changes from the
    // base and the percentages are of the base's total, which the legend
    // and the summary give (Go pprof's -diff_base); nothing is infinite
    // or undefined.
    let base_text = run_stdout(
        Command::new(cpuprof_binary())
            .args(["report", "--text"])
            .arg(&shares.binary)
            .arg(&shares.base),
    );
    let base_total: i64 = base_text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Total: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{base_text}"));
    let legend = seen["diff_legend"].as_str().unwrap();
    assert!(
        legend.contains(&format!("Total: {base_total} "))
            && legend.contains("in the base: values are changes from it, percentages of it"),
        "{legend}"
    );
    let summary = seen["diff_summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!(" of {base_total} "))
            && summary.contains("total in the base (rows are changes from it)"),
        "{summary}"
    );
    for name in ["burn_a", "burn_b", "burn_c", "main"] {
        assert_eq!(
            top[name]["cum_percent"].as_str().unwrap(),
            format!("{:.2}%", cum(name) as f64 * 100.0 / base_total as f64),
            "{top:#}"
        );
    }
    for view in [
        "diff_top_text",
        "diff_graph_text",
        "diff_flame_text",
        "diff_peek_text",
        "diff_legend",
    ] {
        let text = seen[view].as_str().unwrap();
        let undefined = text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| matches!(w, "inf" | "nan" | "NaN" | "Infinity"));
        assert!(!undefined && !text.contains("(-)"), "{view}: {text}");
    }
    // The graph: the server's colours (cpuprof_report::change's constants).
    let graph = &seen["diff_graph"];
    let node = |name: &str| {
        (
            graph[name]["fill"].as_str().unwrap(),
            graph[name]["class"].as_str().unwrap(),
        )
    };
    assert_eq!(node("burn_b"), ("#ff9c9c", "node grew"), "{graph:#}");
    assert_eq!(node("burn_a"), ("#9fdf9f", "node shrank"), "{graph:#}");
    assert_eq!(node("burn_c"), ("#eeeeee", "node noise"), "{graph:#}");
    assert_eq!(node("main"), ("#eeeeee", "node noise"), "{graph:#}");
    assert!(
        seen["diff_graph_legend"]
            .as_str()
            .unwrap()
            .contains("significant changes of share only (each profile's share of its own total, 99.9% two-proportion test, Holm): red grew, green shrank; grey: noise"),
        "{seen:#}"
    );

    // prefers-color-scheme: dark.
    assert_ne!(seen["dark_background"], "rgb(255, 255, 255)");
    for name in [
        "top",
        "graph",
        "flamegraph",
        "peek",
        "source",
        "disasm",
        "diff-graph",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
}
