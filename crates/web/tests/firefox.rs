//! The web UI in Firefox: Debian's headless firefox-esr driven over
//! WebDriver BiDi by Puppeteer (`firefox.mjs`, Node), on a `cpuprof report
//! --http` server over a profile of spin. Every view loads with no console
//! error, no page error and no failed request; clicking a graph node then
//! Refine → Focus changes the URL, and Top then shows `cpuprof report
//! --text --focus=` of that function; the flame graph draws and its
//! search highlights. Screenshots in target/web-screenshots/firefox.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{puppeteer_modules, report_rows, spin, text_rows, Server};
use cpuprof_testkit::repo_root;
use serde_json::Value;

#[test]
fn every_view_in_firefox() {
    let Some(spin) = spin() else { return };
    let Some(modules) = puppeteer_modules() else {
        return;
    };
    let server = Server::start(&[], &[&spin.binary, &spin.profile]);
    let shots = repo_root().join("target/web-screenshots/firefox");
    let script = repo_root().join("crates/web/tests/firefox.mjs");
    // Firefox wants a writable home for its profile; a temporary one keeps
    // the user's own out of it.
    let home = cpuprof_testkit::TempDir::new().unwrap();
    let mut child = Command::new("node")
        .arg(&script)
        .arg(&server.url)
        .arg(&shots)
        .env("NODE_PATH", &modules)
        .env("HOME", home.path())
        .env("MOZ_HEADLESS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    // Bounded: the script's every wait has a timeout; the whole run too.
    let started = Instant::now();
    let output = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("firefox.mjs took more than 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        output.status.success(),
        "firefox.mjs failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).expect("firefox.mjs's JSON");
    assert!(
        seen["user_agent"].as_str().unwrap().contains("Firefox/"),
        "{seen:#}"
    );

    // No console error, no page error, no failed request anywhere.
    assert_eq!(seen["problems"], Value::Array(vec![]), "{seen:#}");
    let labels = [
        ("top", "Top"),
        ("graph", "Graph"),
        ("flamegraph", "Flame Graph"),
        ("peek", "Peek"),
        ("source", "Source"),
        ("disasm", "Disassemble"),
    ];
    for (view, label) in labels {
        let loaded = &seen["loaded"][view];
        assert!(
            loaded["title"].as_str().unwrap().starts_with(label)
                && loaded["title"].as_str().unwrap().ends_with("cpuprof"),
            "{view}: {loaded}"
        );
        assert_eq!(loaded["current"], label, "{view}: {loaded}");
        assert!(shots.join(format!("{view}.png")).exists(), "{view}.png");
    }
    // / redirects to the flame graph, which draws its frames.
    assert!(seen["loaded"]["flamegraph"]["url"]
        .as_str()
        .unwrap()
        .ends_with("/ui/flamegraph"));
    assert!(seen["loaded"]["flamegraph"]["frames"].as_u64().unwrap() >= 5);

    // Graph: click burn_b, Refine > Focus: the URL changes, and Top shows
    // `--text --focus=` of it.
    assert_eq!(seen["graph_clicked"], true, "{seen:#}");
    assert!(seen["selection_text"].as_str().unwrap().contains("burn_b"));
    assert_eq!(seen["url_changed"], true);
    let focus_url = seen["graph_focus_url"].as_str().unwrap();
    assert!(
        focus_url.ends_with("/ui/graph?f=%5E%28burn_b%29%24"),
        "{focus_url}"
    );
    assert!(seen["focus_top_url"]
        .as_str()
        .unwrap()
        .ends_with("/ui/top?f=%5E%28burn_b%29%24"));
    let focused = text_rows(&seen["focus_rows"]);
    assert_eq!(focused, report_rows(&["--focus=^(burn_b)$"]), "{seen:#}");
    assert_ne!(focused, report_rows(&[]));

    // The flame graph's search, driven from the page's own search box.
    let matched = seen["flame_matched"].as_str().unwrap();
    // burn_a's frames hold its cum: what --text says.
    let all = report_rows(&[]);
    let burn_a = all.iter().find(|r| r.0 == "burn_a").unwrap();
    assert!(
        matched.starts_with("Matched: ") && matched.ends_with(&format!("({} samples)", burn_a.2)),
        "{matched} / {burn_a:?}"
    );
    assert_eq!(seen["flame_frame_box"], true);
}
