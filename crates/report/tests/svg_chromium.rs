//! The built-in SVG call graph as a browser shows it: headless Chromium
//! (Debian's `chromium`) loads a page with the SVG inline and a script that
//! measures every box and text with `getBoundingClientRect` (the fonts
//! Chromium really uses) and writes a verdict into the DOM, read back with
//! `--dump-dom`: no two node boxes overlap, every text fits in its box, no
//! edge label covers a box, the legend covers nothing. A PNG screenshot is
//! left in the target directory for people to look at.
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cpuprof_report::output::svg::{render_svg, GraphPicture};
use cpuprof_testkit::{require_tool, TempDir};
use support::synthetic::call_graph;

/// The page: the SVG inline, then the script that checks it.
fn page(svg: &str) -> String {
    let body = svg.split_once("?>").map_or(svg, |(_, rest)| rest);
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body style=\"margin:0\">\n{body}\n<pre id=\"verdict\">NOT RUN</pre>\n<script>{CHECK}</script>\n</body></html>\n"
    )
}

const CHECK: &str = r#"
(function () {
  const problems = [];
  const eps = 0.01;
  const rect = (el) => el.getBoundingClientRect();
  const overlap = (a, b) => a.left < b.right - eps && b.left < a.right - eps &&
                            a.top < b.bottom - eps && b.top < a.bottom - eps;
  const inside = (a, b) => a.left >= b.left - eps && a.right <= b.right + eps &&
                           a.top >= b.top - eps && a.bottom <= b.bottom + eps;
  const nodes = Array.from(document.querySelectorAll('g.node'));
  const boxes = nodes.map((g) => rect(g.querySelector('rect')));
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      if (overlap(boxes[i], boxes[j])) problems.push('boxes ' + nodes[i].id + ' and ' + nodes[j].id + ' overlap');
    }
  }
  let texts = 0;
  nodes.forEach((g, i) => {
    g.querySelectorAll('text').forEach((t) => {
      texts++;
      if (!inside(rect(t), boxes[i])) problems.push('text "' + t.textContent + '" sticks out of ' + g.id);
    });
  });
  const edges = Array.from(document.querySelectorAll('g.edge'));
  let labels = 0;
  edges.forEach((g) => {
    g.querySelectorAll('text').forEach((t) => {
      labels++;
      const r = rect(t);
      boxes.forEach((b, i) => { if (overlap(r, b)) problems.push('label of ' + g.id + ' covers ' + nodes[i].id); });
    });
  });
  const legend = document.getElementById('legend');
  if (legend) {
    const frame = rect(legend.querySelector('rect'));
    legend.querySelectorAll('text').forEach((t) => {
      if (!inside(rect(t), frame)) problems.push('legend text "' + t.textContent + '" sticks out');
    });
    boxes.forEach((b, i) => { if (overlap(frame, b)) problems.push('legend covers ' + nodes[i].id); });
  }
  const font = nodes.length ? getComputedStyle(nodes[0].querySelector('text')).fontFamily : '';
  document.getElementById('verdict').textContent =
    (problems.length ? 'FAIL' : 'PASS') + ' nodes=' + nodes.length + ' edges=' + edges.length +
    ' texts=' + texts + ' labels=' + labels + ' font=' + font + '\n' + problems.slice(0, 20).join('\n');
})();
"#;

fn chromium(args: &[String], profile_dir: &Path) -> String {
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start chromium");
    // Read stdout while waiting: a DOM dump fills any pipe buffer.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if child.try_wait().expect("waiting for chromium").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().expect("reading chromium's output")
}

/// Renders `picture` in Chromium; returns the verdict line and the path of
/// the screenshot.
fn check_in_chromium(picture: &GraphPicture, name: &str) -> (String, PathBuf) {
    let dir = TempDir::new().unwrap();
    let svg = render_svg(picture);
    let html = dir.path().join(format!("{name}.html"));
    std::fs::write(&html, page(&svg)).unwrap();
    let url = format!("file://{}", html.display());
    let dom = chromium(
        &["--dump-dom".to_string(), url],
        &dir.path().join("profile-dom"),
    );
    let verdict = dom
        .split("<pre id=\"verdict\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or("no verdict in the DOM")
        .to_string();
    // The screenshot: the SVG file itself at its natural size (capped).
    let svg_path = dir.path().join(format!("{name}.svg"));
    std::fs::write(&svg_path, &svg).unwrap();
    let view_box = roxmltree::Document::parse(&svg)
        .unwrap()
        .root_element()
        .attribute("viewBox")
        .unwrap()
        .split(' ')
        .map(|v| v.parse::<f64>().unwrap())
        .collect::<Vec<_>>();
    // pt → CSS px.
    let (width, height) = (
        (view_box[2] * 4.0 / 3.0).min(4000.0),
        (view_box[3] * 4.0 / 3.0).min(4000.0),
    );
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    chromium(
        &[
            format!("--screenshot={}", png.display()),
            format!(
                "--window-size={},{}",
                width.ceil() as u32,
                height.ceil() as u32
            ),
            format!("file://{}", svg_path.display()),
        ],
        &dir.path().join("profile-png"),
    );
    (verdict, png)
}

fn assert_renders_cleanly(picture: &GraphPicture, name: &str) {
    let (verdict, png) = check_in_chromium(picture, name);
    eprintln!("{name}: {verdict}\nscreenshot: {}", png.display());
    assert!(verdict.starts_with("PASS"), "{name}: {verdict}");
    let expected = format!(
        "nodes={} edges={}",
        picture.nodes.len(),
        picture.edges.len()
    );
    assert!(
        verdict.contains(&expected),
        "{name}: {verdict} (expected {expected})"
    );
    assert!(verdict.contains("DejaVu Sans"), "{name}: {verdict}");
    let bytes = std::fs::read(&png).unwrap_or_default();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{name}: no PNG screenshot at {}",
        png.display()
    );
    // A blank page compresses to almost nothing.
    assert!(
        bytes.len() > 20_000,
        "{name}: screenshot is only {} bytes",
        bytes.len()
    );
}

#[test]
fn call_graph_of_80_nodes_renders_without_overlaps() {
    if !require_tool("chromium") {
        return;
    }
    assert_renders_cleanly(&call_graph(80, 1), "callgraph-80");
}

#[test]
fn call_graph_of_300_nodes_renders_without_overlaps() {
    if !require_tool("chromium") {
        return;
    }
    assert_renders_cleanly(&call_graph(300, 5), "callgraph-300");
}

#[test]
fn a_small_call_graph_with_recursion_renders_without_overlaps() {
    if !require_tool("chromium") {
        return;
    }
    assert_renders_cleanly(&call_graph(12, 4), "callgraph-12");
}

/// The checker itself: a drawing with overlapping boxes, a text wider than
/// its box and a label on a box must fail, or the tests above prove nothing.
#[test]
fn the_checker_catches_overlaps_and_overflowing_text() {
    if !require_tool("chromium") {
        return;
    }
    let svg = r##"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="400pt" height="200pt" viewBox="0 0 400 200">
<g font-family="'DejaVu Sans', Verdana, sans-serif">
<g id="node1" class="node"><rect x="10" y="10" width="100" height="40" fill="none" stroke="black"/>
<text x="15" y="35" font-size="14">this text is far too long for its box</text></g>
<g id="node2" class="node"><rect x="90" y="30" width="100" height="40" fill="none" stroke="black"/>
<text x="95" y="55" font-size="14">ok</text></g>
<g id="edge1" class="edge"><path d="M0,0 L1,1"/><text x="100" y="60" font-size="14">123</text></g>
</g></svg>"##;
    let dir = TempDir::new().unwrap();
    let html = dir.path().join("bad.html");
    std::fs::write(&html, page(svg)).unwrap();
    let dom = chromium(
        &[
            "--dump-dom".to_string(),
            format!("file://{}", html.display()),
        ],
        &dir.path().join("profile"),
    );
    assert!(dom.contains("FAIL nodes=2 edges=1"), "{dom}");
    assert!(dom.contains("boxes node1 and node2 overlap"), "{dom}");
    assert!(dom.contains("sticks out of node1"), "{dom}");
    assert!(dom.contains("label of edge1 covers node2"), "{dom}");
}
