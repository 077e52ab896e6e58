//! `cpuprof report --flame` / `--icicle` end to end, on profiles written by
//! Debian's libprofiler.so for the spin workload built with gcc: the flame
//! graph's root is `--text`'s Total, and the frames of each non-recursive
//! function add up to its cum in `--text` (at function and line
//! granularity); with `--base`, the root's base is the base's Total.

use std::collections::HashMap;
use std::path::PathBuf;

use cpuprof_testkit::{build_spin, libprofiler, profile_with_libprofiler, TempDir, TextReport};

mod common;
use common::{cpuprof, report};

struct Case {
    _dir: TempDir,
    binary: PathBuf,
    profiles: Vec<PathBuf>,
}

/// spin (two threads) built with gcc and profiled `runs` times.
fn spin_case(runs: usize) -> Option<Case> {
    let lib = libprofiler()?;
    let dir = TempDir::new().unwrap();
    let (binary, _) = build_spin(dir.path(), "spin", &[]);
    let profiles = (0..runs)
        .map(|i| {
            let profile = dir.path().join(format!("spin{i}.prof"));
            let seconds = if i == 0 { "1" } else { "0.5" };
            profile_with_libprofiler(&lib, &binary, &["-s", seconds, "-t", "2"], &profile, 1000);
            profile
        })
        .collect();
    Some(Case {
        _dir: dir,
        binary,
        profiles,
    })
}

/// A frame of the tree embedded in the HTML page.
#[derive(Debug)]
struct Node {
    name: String,
    value: i64,
    base: Option<i64>,
    /// True when an ancestor has the same name (recursion).
    nested_in_itself: bool,
}

/// The frame tree of an HTML flame graph, from its embedded JSON.
fn html_tree(html: &str) -> Vec<Node> {
    let open = "id=\"flame-data\">";
    let start = html.find(open).expect("the page embeds its data") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let flat: Vec<i64> = data["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let base: Option<Vec<i64>> = data.get("base").map(|b| {
        b.as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    });
    let mut path: Vec<&str> = Vec::new();
    flat.chunks(4)
        .enumerate()
        .map(|(i, c)| {
            let (name, depth) = (names[c[0] as usize], c[2] as usize);
            path.truncate(depth);
            let nested_in_itself = path.iter().skip(1).any(|a| *a == name);
            path.push(name);
            Node {
                name: name.to_string(),
                value: c[1],
                base: base.as_ref().map(|b| b[i]),
                nested_in_itself,
            }
        })
        .collect()
}

/// Checks the root against Total and every non-recursive function's frames
/// against its cum; returns the names checked.
fn assert_matches_text(tree: &[Node], text: &TextReport) -> Vec<String> {
    assert_eq!(tree[0].name, "all");
    assert_eq!(tree[0].value, text.total, "the root is --text's Total");
    let mut sums: HashMap<&str, i64> = HashMap::new();
    let mut recursive: Vec<&str> = Vec::new();
    for node in &tree[1..] {
        *sums.entry(&node.name).or_default() += node.value;
        if node.nested_in_itself {
            recursive.push(&node.name);
        }
    }
    let mut checked = Vec::new();
    for row in &text.rows {
        if recursive.contains(&row.name.as_str()) {
            continue;
        }
        assert_eq!(
            sums.get(row.name.as_str()).copied().unwrap_or(0),
            row.cum,
            "{}: frames vs cum",
            row.name
        );
        checked.push(row.name.clone());
    }
    // And nothing in the graph that the text report does not have.
    for name in sums.keys() {
        assert!(
            text.row(name).is_some(),
            "{name} is in the flame graph only"
        );
    }
    checked
}

#[test]
fn flame_root_is_the_total_and_frames_add_up_to_cum() {
    let Some(case) = spin_case(1) else { return };
    let inputs = [case.binary.as_path(), case.profiles[0].as_path()];
    let text = TextReport::parse(&report(&["--text"], &inputs));
    assert!(text.total > 50, "spin gave only {} samples", text.total);
    let html = report(&["--flame"], &inputs);
    let tree = html_tree(&html);
    let checked = assert_matches_text(&tree, &text);
    for name in ["burn_a", "burn_b", "burn_c", "work", "main", "thread_main"] {
        assert!(
            checked.iter().any(|c| c == name),
            "{name} not checked: {checked:?}"
        );
    }
    assert!(tree
        .iter()
        .any(|n| n.name == "recurse" && n.nested_in_itself));

    // --flame=html is the default form, and the same input gives the same bytes.
    assert_eq!(report(&["--flame=html"], &inputs), html);

    // The static SVG: the root spans the 1180 px between the margins, and
    // each drawn frame is value * 1180 / Total wide.
    let svg = report(&["--flame=svg"], &inputs);
    let doc = roxmltree::Document::parse(&svg).expect("valid XML");
    let scale = 1180.0 / text.total as f64;
    let mut drawn = 0;
    for g in doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("frame"))
    {
        let title = g
            .children()
            .find(|c| c.has_tag_name("title"))
            .unwrap()
            .text()
            .unwrap();
        let width: f64 = g
            .children()
            .find(|c| c.has_tag_name("rect"))
            .unwrap()
            .attribute("width")
            .unwrap()
            .parse()
            .unwrap();
        // "name (N samples, P%)"
        let value: i64 = title
            .rsplit_once(" (")
            .unwrap()
            .1
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (width - value as f64 * scale).abs() < 0.006,
            "{title}: {width} px"
        );
        drawn += 1;
    }
    assert_eq!(drawn, tree.len(), "every frame is wider than 0.1 px here");
    assert!(svg.contains(&format!(
        "<title>all ({} samples, 100.00%)</title>",
        text.total
    )));
}

#[test]
fn line_granularity_frames_add_up_to_cum() {
    let Some(case) = spin_case(1) else { return };
    let inputs = [case.binary.as_path(), case.profiles[0].as_path()];
    let text = TextReport::parse(&report(&["--text", "--lines"], &inputs));
    let tree = html_tree(&report(&["--flame", "--lines"], &inputs));
    let checked = assert_matches_text(&tree, &text);
    assert!(
        checked
            .iter()
            .any(|c| c.starts_with("burn_b ") && c.contains("spin.c:")),
        "{checked:?}"
    );
    // Focus applies too: only the samples through burn_b, with the whole
    // profile's Total.
    let focused = html_tree(&report(&["--flame", "--focus=^burn_b$"], &inputs));
    let burn_b = TextReport::parse(&report(&["--text"], &inputs))
        .row("burn_b")
        .unwrap()
        .cum;
    assert_eq!(focused[0].value, burn_b);
}

#[test]
fn icicle_svg_has_the_root_on_top() {
    let Some(case) = spin_case(1) else { return };
    let inputs = [case.binary.as_path(), case.profiles[0].as_path()];
    let svg = report(&["--icicle=svg"], &inputs);
    let doc = roxmltree::Document::parse(&svg).expect("valid XML");
    let ys: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("frame"))
        .map(|g| {
            let title = g
                .children()
                .find(|c| c.has_tag_name("title"))
                .unwrap()
                .text()
                .unwrap();
            let y = g
                .children()
                .find(|c| c.has_tag_name("rect"))
                .unwrap()
                .attribute("y")
                .unwrap();
            (
                title.split(' ').next().unwrap().to_string(),
                y.parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(ys[0], ("all".to_string(), 52.0));
    assert!(ys[1..].iter().all(|(_, y)| *y > 52.0));
    let html = report(&["--icicle"], &inputs);
    assert!(html.contains("\"icicle\":true"));
}

#[test]
fn diff_flame_graph_has_the_base_total_at_the_root() {
    let Some(case) = spin_case(2) else { return };
    let (new, old) = (case.profiles[0].as_path(), case.profiles[1].as_path());
    let new_text = TextReport::parse(&report(&["--text"], &[&case.binary, new]));
    let old_text = TextReport::parse(&report(&["--text"], &[&case.binary, old]));
    let base = format!("--base={}", old.display());
    let tree = html_tree(&report(&["--flame", &base], &[&case.binary, new]));
    assert_eq!(tree[0].value, new_text.total);
    assert_eq!(tree[0].base, Some(old_text.total));
    // Per function, the base values are the base profile's cum.
    let mut base_sums: HashMap<&str, i64> = HashMap::new();
    for node in tree[1..].iter().filter(|n| !n.nested_in_itself) {
        *base_sums.entry(&node.name).or_default() += node.base.unwrap();
    }
    for name in ["burn_a", "burn_b", "burn_c", "work"] {
        let want = old_text.row(name).map_or(0, |r| r.cum);
        assert_eq!(
            base_sums.get(name).copied().unwrap_or(0),
            want,
            "{name}: base vs its cum"
        );
    }
}

#[test]
fn unknown_flame_format_is_refused() {
    let out = cpuprof()
        .args(["report", "--flame=png", "nothing.prof"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expected html or svg"), "{stderr}");
}
