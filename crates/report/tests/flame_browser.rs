//! The HTML flame graph in a real browser (Debian's headless `chromium`):
//! it loads without console errors, a click on a frame zooms, search shows
//! the matched percentage. The page's own test hook (`?selftest=...`) runs
//! the steps through its event handlers and writes what is drawn into the
//! DOM, which `--dump-dom` gives back.
//!
//! Skipped loudly when chromium is missing, unless CPUPROF_REQUIRE_PEERS=1.
//! CPUPROF_KEEP_SCREENSHOTS=DIR keeps the PNGs rendered here for a look.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cpuprof_report::output::flame::{write_flame, FlameInput, FlameOptions, FlameOrientation};
use serde_json::Value;

const CHROMIUM: &str = "chromium";

/// True when `name` runs; otherwise skips loudly, or fails when the peers
/// are required.
fn require_tool(name: &str) -> bool {
    let found = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var("CPUPROF_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("{name} is required (CPUPROF_REQUIRE_PEERS=1) but was not found");
        }
        eprintln!("SKIPPED: {name} not found (apt-get install {name}); the flame graph was not checked in a browser");
    }
    found
}

/// Ten samples: at `usable` px, `main;work` is 7/10 of the width.
fn ten_samples() -> FlameInput {
    let mut input = FlameInput::new("ten samples", "samples", 10);
    input.add_stack_names(&["main", "work", "burn_a"], 5, None);
    input.add_stack_names(&["main", "work", "burn_b"], 2, None);
    input.add_stack_names(&["main", "burn_c"], 1, None);
    input.add_stack_names(&["main"], 1, None);
    input.add_stack_names(&["thread", "burn_b"], 1, None);
    input
}

struct Browser {
    dir: tempfile::TempDir,
}

struct Run {
    dom: String,
    stderr: String,
}

impl Browser {
    fn new() -> Browser {
        Browser {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn write_page(&self, name: &str, input: &FlameInput, options: &FlameOptions) -> PathBuf {
        let path = self.dir.path().join(name);
        let mut out = Vec::new();
        write_flame(input, options, &mut out).unwrap();
        std::fs::write(&path, out).unwrap();
        path
    }

    /// Runs headless chromium on `page?query` with `mode` (`--dump-dom` or
    /// `--screenshot=...`), in a fresh profile directory.
    fn run(&self, page: &Path, query: &str, mode: &str) -> Run {
        let profile = tempfile::tempdir().unwrap();
        let stdout = self.dir.path().join("stdout");
        let stderr = self.dir.path().join("stderr");
        let mut child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1280,800",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(mode)
            .arg(format!("file://{}{}", page.display(), query))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start chromium");
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(status.success(), "chromium failed: {status}");
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 120 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let run = Run {
            dom: std::fs::read_to_string(&stdout).unwrap(),
            stderr: std::fs::read_to_string(&stderr).unwrap(),
        };
        // Whatever the page logs to its console (uncaught errors included)
        // is a failure: the page logs nothing when it works.
        let console: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("CONSOLE"))
            .collect();
        assert!(console.is_empty(), "console output: {console:#?}");
        run
    }

    /// Runs the page's self-test steps and returns its JSON report.
    fn selftest(&self, page: &Path, steps: &[&str]) -> Value {
        let query: Vec<String> = steps
            .iter()
            .map(|s| {
                format!(
                    "selftest={}",
                    s.replace('%', "%25")
                        .replace('&', "%26")
                        .replace('+', "%2B")
                )
            })
            .collect();
        let run = self.run(page, &format!("?{}", query.join("&")), "--dump-dom");
        assert!(
            !run.dom.contains("data-errors="),
            "the page raised errors: {}",
            &run.dom[..run.dom.find("<head>").unwrap_or(run.dom.len())]
        );
        let open = "<pre id=\"selftest-result\">";
        let start =
            run.dom.find(open).unwrap_or_else(|| {
                panic!("no self-test result in the DOM; stderr:\n{}", run.stderr)
            }) + open.len();
        let end = start + run.dom[start..].find("</pre>").unwrap();
        let text = run.dom[start..end]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&nbsp;", "\u{a0}")
            .replace("&amp;", "&");
        let report: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            report["log"],
            serde_json::json!([]),
            "self-test steps failed"
        );
        report
    }
}

/// (name, x, width, ancestor) of each frame drawn, in drawing order.
fn drawn(report: &Value) -> Vec<(String, f64, f64, bool)> {
    report["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                f["x"].as_f64().unwrap(),
                f["width"].as_f64().unwrap(),
                f["ancestor"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// Widths are written with two decimals.
fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 0.006,
        "{what}: got {got}, want {want}"
    );
}

fn assert_frames(report: &Value, expected: &[(&str, f64, f64, bool)]) {
    let got = drawn(report);
    let names: Vec<&str> = got.iter().map(|f| f.0.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|f| f.0).collect();
    assert_eq!(names, want, "frames drawn");
    for (g, w) in got.iter().zip(expected) {
        assert_close(g.1, w.1, &format!("x of {}", w.0));
        assert_close(g.2, w.2, &format!("width of {}", w.0));
        assert_eq!(g.3, w.3, "{} drawn as an ancestor", w.0);
    }
}

#[test]
fn html_loads_and_a_click_zooms_into_the_frame() {
    if !require_tool(CHROMIUM) {
        return;
    }
    let browser = Browser::new();
    let page = browser.write_page("ten.html", &ten_samples(), &FlameOptions::default());

    // Before any click: one sample is a tenth of the usable width.
    let full = browser.selftest(&page, &["reset"]);
    let u = full["usable"].as_f64().unwrap();
    assert!(u > 1000.0, "the chart spans the 1280 px window: {u}");
    let s = u / 10.0;
    assert_eq!(full["zoomed"], "all");
    assert_frames(
        &full,
        &[
            ("all", 10.0, u, false),
            ("main", 10.0, 9.0 * s, false),
            ("burn_c", 10.0, s, false),
            ("work", 10.0 + s, 7.0 * s, false),
            ("burn_a", 10.0 + s, 5.0 * s, false),
            ("burn_b", 10.0 + 6.0 * s, 2.0 * s, false),
            ("thread", 10.0 + 9.0 * s, s, false),
            ("burn_b", 10.0 + 9.0 * s, s, false),
        ],
    );

    // A click on `work` (7 samples): it and its ancestors span the width,
    // its children share it 5:2, and nothing outside it is drawn.
    let zoomed = browser.selftest(&page, &["click:work"]);
    assert_eq!(zoomed["zoomed"], "work");
    assert_frames(
        &zoomed,
        &[
            ("main", 10.0, u, true),
            ("all", 10.0, u, true),
            ("work", 10.0, u, false),
            ("burn_a", 10.0, u * 5.0 / 7.0, false),
            ("burn_b", 10.0 + u * 5.0 / 7.0, u * 2.0 / 7.0, false),
        ],
    );
    assert!(zoomed["status"]
        .as_str()
        .unwrap()
        .starts_with("Zoomed into work (7 samples, 70.00%)"));
    assert_eq!(zoomed["tooltip"], Value::Null);

    // Hovering shows the frame's name, samples and share of the total.
    let hover = browser.selftest(&page, &["hover:burn_b"]);
    assert_eq!(hover["tooltip"], "burn_b (2 samples, 20.00%)");

    // Clicking an ancestor zooms out to it; reset goes back to the root.
    let out = browser.selftest(&page, &["click:work", "click:all"]);
    assert_eq!(out["zoomed"], "all");
    assert_eq!(drawn(&out).len(), 8);
    let reset = browser.selftest(&page, &["click:burn_a", "reset"]);
    assert_eq!(reset["zoomed"], "all");
    assert_eq!(drawn(&reset).len(), 8);
}

#[test]
fn search_highlights_matches_and_shows_their_share() {
    if !require_tool(CHROMIUM) {
        return;
    }
    let browser = Browser::new();
    let page = browser.write_page("ten.html", &ten_samples(), &FlameOptions::default());

    let report = browser.selftest(&page, &["search:^burn_b$"]);
    assert_eq!(report["matched"], "Matched: 30.00% (3 samples)");
    for (name, fill) in report["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["fill"].as_str().unwrap()))
    {
        assert_eq!(fill == "#e040fb", name == "burn_b", "{name} filled {fill}");
    }
    // `work` matches and contains matches: its samples count once.
    let nested = browser.selftest(&page, &["search:work|burn_a"]);
    assert_eq!(nested["matched"], "Matched: 70.00% (7 samples)");
    // A broken expression is reported, not thrown.
    let broken = browser.selftest(&page, &["search:(burn"]);
    assert!(
        broken["matched"]
            .as_str()
            .unwrap()
            .starts_with("Invalid regular expression"),
        "{}",
        broken["matched"]
    );
    // Search and zoom together: the zoomed view keeps the highlight.
    let both = browser.selftest(&page, &["search:burn_a", "click:work"]);
    assert_eq!(both["matched"], "Matched: 50.00% (5 samples)");
    assert_eq!(both["zoomed"], "work");
}

#[test]
fn icicle_draws_the_root_on_top() {
    if !require_tool(CHROMIUM) {
        return;
    }
    let browser = Browser::new();
    let icicle = FlameOptions {
        orientation: FlameOrientation::Icicle,
        ..FlameOptions::default()
    };
    let ys = |report: &Value| -> Vec<(String, f64)> {
        report["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["y"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let top = ys(&browser.selftest(
        &browser.write_page("icicle.html", &ten_samples(), &icicle),
        &["reset"],
    ));
    let bottom = ys(&browser.selftest(
        &browser.write_page("flame.html", &ten_samples(), &FlameOptions::default()),
        &["reset"],
    ));
    // Rows of 16 px from 4 px under the page's header; the tree is 4
    // frames deep.
    assert_eq!(top[0], ("all".to_string(), 4.0));
    assert_eq!(top[4], ("burn_a".to_string(), 52.0));
    assert_eq!(bottom[0], ("all".to_string(), 52.0));
    assert_eq!(bottom[4], ("burn_a".to_string(), 4.0));
}

#[test]
fn a_big_profile_loads_and_says_what_it_left_out() {
    if !require_tool(CHROMIUM) {
        return;
    }
    // 20,000 distinct stacks, 1 to 30 frames deep: many frames narrower
    // than 0.5 px at full view.
    let mut input = FlameInput::new("big", "samples", 0);
    let mut state: u64 = 7;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    for _ in 0..20_000 {
        let depth = 1 + next(30);
        let frames: Vec<String> = (0..depth)
            .map(|d| format!("f{}_{}", d, next(4 + d * 3)))
            .collect();
        let value = 1 + next(50) as i64;
        input.add_stack_names(&frames, value, None);
        input.total += value;
    }
    let browser = Browser::new();
    let page = browser.write_page("big.html", &input, &FlameOptions::default());
    let report = browser.selftest(&page, &["reset"]);
    let status = report["status"].as_str().unwrap();
    assert!(
        status.contains("narrower than 0.5 px not drawn"),
        "{status}"
    );
    let first = drawn(&report);
    assert!(first.len() > 100, "{} frames drawn", first.len());
    // Zooming into a frame of the second row draws more of its subtree
    // than the full view could.
    let (child, x, width, _) = first
        .iter()
        .find(|f| f.0.starts_with("f0_"))
        .unwrap()
        .clone();
    let depths: Vec<u64> = report["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["depth"].as_u64().unwrap())
        .collect();
    let before = first
        .iter()
        .zip(&depths)
        .filter(|(f, d)| **d > 1 && f.1 >= x - 0.01 && f.1 + f.2 <= x + width + 0.01)
        .count();
    let zoomed = browser.selftest(&page, &[&format!("click:{child}")]);
    assert_eq!(zoomed["zoomed"], child.as_str());
    let after = drawn(&zoomed).iter().filter(|f| !f.3).count() - 1;
    assert!(
        after > before,
        "zoomed: {after} descendants drawn, full view: {before}"
    );
}

#[test]
fn html_renders_to_a_picture() {
    if !require_tool(CHROMIUM) {
        return;
    }
    let browser = Browser::new();
    let mut input = ten_samples();
    input.title = "cpuprof flame graph: ten samples".into();
    let page = browser.write_page("ten.html", &input, &FlameOptions::default());
    let png = browser.dir.path().join("ten.png");
    browser.run(
        &page,
        "?s=burn_b",
        &format!("--screenshot={}", png.display()),
    );
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height of the window.
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1280);
    assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 800);
    if let Some(dir) = std::env::var_os("CPUPROF_KEEP_SCREENSHOTS") {
        std::fs::copy(&png, Path::new(&dir).join("flame-ten.png")).unwrap();
    }
}

#[test]
fn diff_pages_colour_by_change_and_show_the_base() {
    if !require_tool(CHROMIUM) {
        return;
    }
    let mut input = FlameInput::new("diff", "samples", 10);
    input.add_stack_names(&["main", "grew"], 8, Some(2));
    input.add_stack_names(&["main", "shrank"], 2, Some(8));
    let browser = Browser::new();
    let page = browser.write_page("diff.html", &input, &FlameOptions::default());
    let report = browser.selftest(&page, &["hover:grew"]);
    assert_eq!(
        report["tooltip"],
        "grew (8 samples, 80.00%; base 2, +6, +300.00%)"
    );
    let fill = |name: &str| {
        report["frames"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .unwrap()["fill"]
            .clone()
    };
    // The same colours as the SVG: 15 of 20 steps towards red or green.
    assert_eq!(fill("grew"), "#ff6464");
    assert_eq!(fill("shrank"), "#64cd64");
    assert_eq!(fill("main"), "#ebebeb");
    if let Some(dir) = std::env::var_os("CPUPROF_KEEP_SCREENSHOTS") {
        let png = Path::new(&dir).join("flame-diff.png");
        browser.run(&page, "", &format!("--screenshot={}", png.display()));
        let zoomed = Path::new(&dir).join("flame-zoomed.png");
        let ten = browser.write_page("ten.html", &ten_samples(), &FlameOptions::default());
        browser.run(
            &ten,
            "?selftest=click:work",
            &format!("--screenshot={}", zoomed.display()),
        );
    }
}
