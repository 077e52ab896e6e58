//! The web UI's timeline view (`/ui/timeline`) in real browsers, on the
//! two-phase workload (`tests/workloads/phases.c`: fnA burns the first
//! second, fnB the next) recorded once with `perf record -F 1000`:
//!
//! - Chromium (Playwright over the DevTools protocol, `timeline.py`): the
//!   data the page draws puts fnB's samples in the second half of the
//!   phases thread's track and in the heat map's second column, and the
//!   canvases are painted; a drag with real mouse events over the track
//!   selects a range (`t=` in the URL, the legend), Back undoes it; Top,
//!   Graph, Flame Graph, Peek and Source then show exactly `cpuprof report
//!   --text/--json/--peek/--list --time=` of that range; a drag over the
//!   heat map selects the time between its cells.
//! - firefox-esr (Puppeteer over WebDriver BiDi, `timeline_firefox.mjs`):
//!   the page loads with no error, draws, and a drag selects a range.
//!
//! Screenshots in target/web-screenshots (timeline*.png).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{browser_available, cpuprof_binary, puppeteer_modules, run_browser_script, Server};
use cpuprof_driver::settings::url_decode;
use cpuprof_report::time::TimeRange;
use cpuprof_testkit::{phases, repo_root, run_stdout, Phases, TempDir};
use serde_json::Value;

/// `cpuprof report ARGS` of the recording: its standard output.
fn report(p: &Phases, args: &[&str]) -> String {
    run_stdout(
        Command::new(cpuprof_binary())
            .arg("report")
            .args(args)
            .arg(&p.binary)
            .arg(&p.data),
    )
}

/// The rows of a `--text` report as text: (flat, cum, name).
fn text_rows(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[1].ends_with('%') && f[4].ends_with('%'))
                .then(|| (f[0].to_string(), f[3].to_string(), f[5..].join(" ")))
        })
        .collect()
}

/// The `t=` value of a URL.
fn t_of(url: &str) -> String {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("t="))
        .map(url_decode)
        .unwrap_or_else(|| panic!("no t= in {url}"))
}

#[test]
fn timeline_in_chromium() {
    let Some(p) = phases() else { return };
    if !browser_available() {
        return;
    }
    let server = Server::start(&[], &[&p.binary, &p.data]);
    let shots = repo_root().join("target/web-screenshots");
    let mut cmd = Command::new("python3");
    cmd.arg(repo_root().join("crates/web/tests/timeline.py"))
        .arg(&server.url)
        .arg(&shots);
    let seen = run_browser_script(cmd, Duration::from_secs(120));
    assert_eq!(seen["problems"], Value::Array(vec![]), "{seen:#}");
    assert_eq!(seen["current"], "Timeline");
    assert!(seen["title"].as_str().unwrap().starts_with("Timeline — "));

    // The data the page draws, fnB focused: one track, the phases
    // thread's; its fnB samples in the second half only, in every
    // column nearly; the whole activity equals the profile's total.
    let data = &seen["focused_data"];
    let tracks = data["tracks"].as_array().unwrap();
    assert_eq!(tracks.len(), 1, "{data:#}");
    let track = &tracks[0];
    assert!(
        track["label"].as_str().unwrap().starts_with("phases (tid "),
        "{track}"
    );
    assert_eq!(seen["focused_tracks"][0], track["label"]);
    let json: Value = serde_json::from_str(&report(p, &["--json"])).unwrap();
    assert_eq!(track["total"], json["total"], "{track}");
    let columns = track["columns"].as_array().unwrap();
    let matching = track["matching"].as_array().unwrap();
    let n = columns.len();
    // The switch is 1 s after the start of a 2 s run: fnB's first
    // column is at 1 s (a loaded machine may run it a little late), and
    // its samples are exactly fnB's cum of `--json`. How busy a column is
    // is not asserted: it is the share of a CPU the program got.
    let column_ns = data["column_ns"].as_i64().unwrap();
    let first_b = matching
        .iter()
        .position(|v| v.as_i64().unwrap() > 0)
        .unwrap_or_else(|| panic!("no fnB: {track}")) as i64
        * column_ns;
    assert!(
        (900_000_000..1_200_000_000).contains(&first_b),
        "fnB from {first_b} ns: {track}"
    );
    let fn_b_cum = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "fnB")
        .unwrap()["cum"]
        .as_i64()
        .unwrap();
    let sum = |values: &[Value]| values.iter().map(|v| v.as_i64().unwrap()).sum::<i64>();
    assert_eq!(sum(matching), fn_b_cum, "{track}");
    // fnA runs the first second: the track is busy before the switch.
    assert!(sum(&columns[..n * 2 / 5]) > 0, "{track}");
    assert_eq!(n, 400);
    assert_eq!(data["highlight"], "^fnB$");
    assert_eq!(data["range"], Value::Null);
    // The heat map: a column per second, 50 rows of 20 ms; fnB in second
    // 1 only.
    let heat = &data["heat"];
    assert_eq!(heat["rows"], 50);
    assert_eq!(heat["row_ns"], 20_000_000);
    assert!(heat["seconds"] == 2 || heat["seconds"] == 3, "{heat}");
    let cells = heat["cells"].as_array().unwrap();
    let fn_b = heat["matching"].as_array().unwrap();
    assert!(
        fn_b[..45].iter().all(|v| v == 0),
        "fnB in second 0 (to 900 ms): {heat}"
    );
    assert_eq!(sum(fn_b), fn_b_cum, "{heat}");
    assert_eq!(Value::from(sum(cells)), json["total"]);
    // The canvases are painted: the track and the heat map.
    let canvases = seen["focused_canvases"].as_array().unwrap();
    assert!(canvases.len() >= 3, "{canvases:?}");
    for canvas in canvases {
        let label = canvas["label"].as_str().unwrap_or("axis");
        assert!(
            canvas["painted"].as_u64().unwrap() > 100,
            "{label}: {canvas}"
        );
    }

    // The legend: duration, period, range.
    let legend = seen["legend_before"].as_str().unwrap();
    assert!(
        legend.contains("Duration: ")
            && legend.contains("Period: ")
            && legend.contains("Time range: the whole profile"),
        "{legend}"
    );

    // The drag from 55% to 95% of the track selected that share of the
    // columns' span (to a pixel of it).
    let url = seen["selected_url"].as_str().unwrap();
    let t = t_of(url);
    let range = TimeRange::parse("t", &t).unwrap();
    let whole = &seen["data"];
    let (from, to) = (
        whole["from"].as_i64().unwrap(),
        whole["to"].as_i64().unwrap(),
    );
    let at = |f: f64| from as f64 + f * (to - from) as f64;
    let pixel = (to - from) as f64 / 900.0;
    assert!(
        (range.start as f64 - at(0.55)).abs() < 2.0 * pixel,
        "{t} / {from}..{to}"
    );
    let end = range.end.unwrap() as f64;
    assert!((end - at(0.95)).abs() < 2.0 * pixel, "{t} / {from}..{to}");
    assert_eq!(
        seen["selected_data"]["range"],
        serde_json::json!([range.start, range.end.unwrap()])
    );
    let legend = seen["selected_legend"].as_str().unwrap();
    assert!(
        legend.contains(&format!(
            "Time range: {} to {}",
            cpuprof_report::time::offset_text(range.start),
            cpuprof_report::time::offset_text(range.end.unwrap())
        )),
        "{legend}"
    );
    // Back undoes it; Forward redoes it.
    assert_eq!(seen["back_url"], format!("{}/ui/timeline", server.url));
    assert!(seen["back_legend"]
        .as_str()
        .unwrap()
        .contains("Time range: the whole profile"));
    assert_eq!(seen["forward_url"], url);

    // Every view shows the range: the numbers of `--time=T`.
    let time = format!("--time={t}");
    for view in ["top", "graph", "flame", "peek", "source"] {
        let u = seen[format!("{view}_url")].as_str().unwrap();
        assert_eq!(t_of(u), t, "{view}: {u}");
    }
    let text = report(p, &["--text", &time]);
    let expected = text_rows(&text);
    let top: Vec<(String, String, String)> = seen["top_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cell = |i: usize| r[i].as_str().unwrap().to_string();
            (cell(0), cell(3), cell(5))
        })
        .collect();
    assert!(expected.iter().any(|r| r.2 == "fnB"), "{text}");
    for row in &expected {
        assert!(
            top.contains(row),
            "{row:?} of --text {time} not in Top: {top:?}"
        );
    }
    assert!(!top.iter().any(|r| r.2 == "fnA"), "{top:?}");
    let total = text
        .lines()
        .find_map(|l| l.split(" of ").nth(1)?.strip_suffix(" total"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        seen["top_summary"]
            .as_str()
            .unwrap()
            .contains(&format!(" of {total} total")),
        "{} / {total}",
        seen["top_summary"]
    );
    let fn_b_row = expected.iter().find(|r| r.2 == "fnB").unwrap();
    let graph_titles: Vec<&str> = seen["graph_titles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let fn_b_node = graph_titles
        .iter()
        .find(|t| t.starts_with("fnB | "))
        .unwrap_or_else(|| panic!("{graph_titles:?}"));
    assert!(
        fn_b_node.contains(&format!("| flat {} (", fn_b_row.0))
            && fn_b_node.contains(&format!("| cum {} (", fn_b_row.1)),
        "{fn_b_node} / {fn_b_row:?}"
    );
    let json: Value = serde_json::from_str(&report(p, &["--json", &time])).unwrap();
    assert_eq!(seen["flame_total"], json["total"]);
    let fn_b_json = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "fnB")
        .unwrap();
    assert_eq!(seen["flame_fnB"], fn_b_json["cum"]);
    // The page's f= is the focus too (its legend says so, as --text's
    // "Active filters" does).
    let peek = report(p, &["--peek=^(fnB)$", "--focus=^(fnB)$", &time]);
    assert_eq!(
        seen["peek_text"].as_str().unwrap().trim_end(),
        peek.trim_end()
    );
    let list = report(p, &["--list=^(fnB)$", &time]);
    assert_eq!(
        seen["source_text"].as_str().unwrap().trim_end(),
        list.trim_end()
    );

    // The heat-map drag from row 10 to row 19 of second 0: 200 to 400 ms.
    assert_eq!(t_of(seen["heat_url"].as_str().unwrap()), "200ms:400ms");
    assert!(shots.join("timeline.png").exists());
}

#[test]
fn timeline_in_firefox() {
    let Some(p) = phases() else { return };
    let Some(modules) = puppeteer_modules() else {
        return;
    };
    let server = Server::start(&[], &[&p.binary, &p.data]);
    let shots = repo_root().join("target/web-screenshots/firefox");
    let home = TempDir::new().unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(repo_root().join("crates/web/tests/timeline_firefox.mjs"))
        .arg(&server.url)
        .arg(&shots)
        .env("NODE_PATH", &modules)
        .env("HOME", home.path())
        .env("MOZ_HEADLESS", "1");
    let seen = run_browser_script(cmd, Duration::from_secs(90));
    assert!(
        seen["user_agent"].as_str().unwrap().contains("Firefox/"),
        "{seen:#}"
    );
    assert_eq!(seen["problems"], Value::Array(vec![]), "{seen:#}");
    assert_eq!(seen["current"], "Timeline");
    let labels = seen["tracks"].as_array().unwrap();
    assert!(
        labels[0].as_str().unwrap().starts_with("phases (tid "),
        "{labels:?}"
    );
    for canvas in seen["canvases"].as_array().unwrap() {
        assert!(canvas["painted"].as_u64().unwrap() > 100, "{canvas}");
    }
    let url = seen["selected_url"].as_str().unwrap();
    let range = TimeRange::parse("t", &t_of(url)).unwrap();
    let to = seen["to"].as_i64().unwrap();
    assert!(
        (range.start as f64 / to as f64 - 0.3).abs() < 0.02
            && (range.end.unwrap() as f64 / to as f64 - 0.6).abs() < 0.02,
        "{url} of {to}"
    );
    assert!(
        seen["selected_legend"]
            .as_str()
            .unwrap()
            .contains("Time range: "),
        "{seen:#}"
    );
    assert!(shots.join("timeline.png").exists());
}
