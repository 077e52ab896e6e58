//! The static SVG and the HTML page of the flame graph: valid XML, every
//! frame at the width derived by hand, byte-identical output.

use cpuprof_report::output::flame::{
    render, write_flame, FlameFormat, FlameInput, FlameOptions, FlameOrientation, FrameTree,
};

/// Ten samples, so that at the default 1200 px (1180 px between the
/// margins) a sample is exactly 118 px wide.
fn ten_samples() -> FlameInput {
    let mut input = FlameInput::new("spin <test> & co", "samples", 10);
    input.add_stack_names(&["main", "work", "burn_a"], 5, None);
    input.add_stack_names(&["main", "work", "burn_b"], 2, None);
    input.add_stack_names(&["main", "burn_c"], 1, None);
    input.add_stack_names(&["main"], 1, None);
    input.add_stack_names(&["thread", "burn_b"], 1, None);
    input
}

fn options(format: FlameFormat, orientation: FlameOrientation) -> FlameOptions {
    FlameOptions {
        format,
        orientation,
        ..FlameOptions::default()
    }
}

fn svg_of(input: &FlameInput, orientation: FlameOrientation) -> String {
    let mut out = Vec::new();
    write_flame(input, &options(FlameFormat::Svg, orientation), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A drawn frame as read back from the SVG.
#[derive(Debug, PartialEq)]
struct Drawn {
    tooltip: String,
    x: f64,
    y: f64,
    width: f64,
    fill: String,
    label: Option<String>,
}

fn frames(svg: &str) -> Vec<Drawn> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    root.descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("frame"))
        .map(|g| {
            let child = |tag: &str| g.children().find(|c| c.has_tag_name(tag));
            let rect = child("rect").expect("a frame has a rect");
            let number = |a: &str| rect.attribute(a).unwrap().parse::<f64>().unwrap();
            Drawn {
                tooltip: child("title").unwrap().text().unwrap().to_string(),
                x: number("x"),
                y: number("y"),
                width: number("width"),
                fill: rect.attribute("fill").unwrap().to_string(),
                label: child("text").and_then(|t| t.text()).map(str::to_string),
            }
        })
        .collect()
}

#[test]
fn svg_has_every_frame_at_its_hand_derived_width() {
    let svg = svg_of(&ten_samples(), FlameOrientation::Flame);
    let drawn = frames(&svg);
    // (tooltip, x, width): x = 10 + start * 118, width = value * 118; the
    // children of a frame start at its left edge, in name order.
    let expected = [
        ("all (10 samples, 100.00%)", 10.0, 1180.0),
        ("main (9 samples, 90.00%)", 10.0, 1062.0),
        ("burn_c (1 samples, 10.00%)", 10.0, 118.0),
        ("work (7 samples, 70.00%)", 128.0, 826.0),
        ("burn_a (5 samples, 50.00%)", 128.0, 590.0),
        ("burn_b (2 samples, 20.00%)", 718.0, 236.0),
        ("thread (1 samples, 10.00%)", 1072.0, 118.0),
        ("burn_b (1 samples, 10.00%)", 1072.0, 118.0),
    ];
    let got: Vec<(&str, f64, f64)> = drawn
        .iter()
        .map(|d| (d.tooltip.as_str(), d.x, d.width))
        .collect();
    assert_eq!(got, expected);
    // Root at the bottom: depth 3 in the first row under the 52 px header,
    // the root three 16 px rows lower.
    let ys: Vec<f64> = drawn.iter().map(|d| d.y).collect();
    assert_eq!(ys, [100.0, 84.0, 68.0, 68.0, 52.0, 52.0, 84.0, 68.0]);
    assert!(svg.contains("height=\"128\""), "52 + 4 rows of 16 + 12");
    // Labels: whole names where they fit, none in no frame here needs cutting.
    assert_eq!(drawn[4].label.as_deref(), Some("burn_a"));
    assert_eq!(drawn[0].label.as_deref(), Some("all"));
    // The same function has the same colour wherever it appears.
    assert_eq!(drawn[5].fill, drawn[7].fill);
    assert_ne!(drawn[4].fill, drawn[5].fill);
    // The title is escaped, and shown with the total.
    assert!(svg.contains("<title>spin &lt;test&gt; &amp; co</title>"));
    assert!(svg.contains(">Total: 10 samples</text>"));
}

#[test]
fn icicle_puts_the_root_on_top() {
    let drawn = frames(&svg_of(&ten_samples(), FlameOrientation::Icicle));
    let ys: Vec<f64> = drawn.iter().map(|d| d.y).collect();
    assert_eq!(ys, [52.0, 68.0, 84.0, 84.0, 100.0, 100.0, 68.0, 84.0]);
    let widths: Vec<f64> = drawn.iter().map(|d| d.width).collect();
    assert_eq!(
        widths,
        [1180.0, 1062.0, 118.0, 826.0, 590.0, 236.0, 118.0, 118.0]
    );
}

#[test]
fn frames_below_the_pixel_threshold_are_left_out_and_counted() {
    // 1180 px for 100000 samples: 1 sample is 0.0118 px, 9 samples
    // 0.1062 px (drawn), 8 samples 0.0944 px (left out with its child).
    let mut input = FlameInput::new("t", "samples", 100_000);
    input.add_stack_names(&["main", "big"], 99_982, None);
    input.add_stack_names(&["main", "nine"], 9, None);
    input.add_stack_names(&["main", "eight", "leaf"], 8, None);
    input.add_stack_names(&["main", "one"], 1, None);
    let svg = svg_of(&input, FlameOrientation::Flame);
    let names: Vec<String> = frames(&svg)
        .iter()
        .map(|d| d.tooltip.split(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(names, ["all", "main", "big", "nine"]);
    assert!(
        svg.contains("; 3 frames narrower than 0.1 px not drawn"),
        "{svg}"
    );
    let nine = &frames(&svg)[3];
    assert!((nine.width - 0.11).abs() < 1e-9, "{}", nine.width);
    assert_eq!(nine.label, None);
}

#[test]
fn long_names_are_shortened_to_fit() {
    let mut input = FlameInput::new("t", "samples", 10);
    input.add_stack_names(&["a_rather_long_function_name_indeed"], 1, None);
    input.add_stack_names(&["zz"], 9, None);
    let drawn = frames(&svg_of(&input, FlameOrientation::Flame));
    // 118 px: (118 - 6) / 6.71 = 16.7, so 16 characters: 14 and "..".
    assert_eq!(drawn[1].label.as_deref(), Some("a_rather_long_.."));
    assert_eq!(drawn[2].label.as_deref(), Some("zz"));
}

#[test]
fn odd_names_stay_valid_xml() {
    let mut input = FlameInput::new("t\u{1}<", "samples", 3);
    input.add_stack_names(
        &["operator<<(std::ostream&, \"x\")", "ctrl\u{7}char"],
        2,
        None,
    );
    input.add_stack_names(&["é ü ✓ 'quoted'"], 1, None);
    let drawn = frames(&svg_of(&input, FlameOrientation::Flame));
    let tooltips: Vec<&str> = drawn.iter().map(|d| d.tooltip.as_str()).collect();
    assert_eq!(
        tooltips,
        [
            "all (3 samples, 100.00%)",
            "operator<<(std::ostream&, \"x\") (2 samples, 66.67%)",
            "ctrl\u{fffd}char (2 samples, 66.67%)",
            "é ü ✓ 'quoted' (1 samples, 33.33%)",
        ]
    );
}

#[test]
fn diff_frames_are_red_when_grown_and_green_when_shrunk() {
    let mut input = FlameInput::new("diff", "samples", 10);
    input.add_stack_names(&["main", "grew"], 8, Some(2));
    input.add_stack_names(&["main", "shrank"], 2, Some(8));
    input.add_stack_names(&["main", "same"], 0, None);
    let svg = svg_of(&input, FlameOrientation::Flame);
    let drawn = frames(&svg);
    let by_name = |name: &str| drawn.iter().find(|d| d.tooltip.starts_with(name)).unwrap();
    // grew: (8 - 2) / 8 = 0.75 -> 15 of 20 steps -> 235 - 135 = 100 = 0x64.
    assert_eq!(by_name("grew").fill, "#ff6464");
    assert_eq!(
        by_name("grew").tooltip,
        "grew (8 samples, 80.00%; base 2, +6, +300.00%)"
    );
    assert_eq!(by_name("shrank").fill, "#64cd64");
    assert_eq!(by_name("main").fill, "#ebebeb");
    assert!(svg.contains("base: 10 samples (+0, +0.00%); red grew, green shrank"));
}

#[test]
fn output_is_byte_identical_whatever_the_stack_order() {
    let stacks: Vec<(Vec<String>, i64)> = (0..500)
        .map(|i| {
            let frames = (0..(i % 9 + 1))
                .map(|d| format!("f{}_{}", d, (i * 7 + d) % 13))
                .collect();
            (frames, (i % 5 + 1) as i64)
        })
        .collect();
    let build = |order: &mut dyn Iterator<Item = &(Vec<String>, i64)>| {
        let mut input = FlameInput::new("det", "samples", 0);
        for (frames, value) in order {
            input.add_stack_names(frames, *value, Some(value / 2));
            input.total += value;
        }
        input
    };
    let forward = build(&mut stacks.iter());
    let backward = build(&mut stacks.iter().rev());
    for format in [FlameFormat::Html, FlameFormat::Svg] {
        for orientation in [FlameOrientation::Flame, FlameOrientation::Icicle] {
            let opts = options(format, orientation);
            let once = render(&FrameTree::build(&forward).unwrap(), &forward, &opts);
            let twice = render(&FrameTree::build(&forward).unwrap(), &forward, &opts);
            let reordered = render(&FrameTree::build(&backward).unwrap(), &backward, &opts);
            assert_eq!(
                once, twice,
                "{format:?} {orientation:?}: two renders differ"
            );
            assert_eq!(
                once, reordered,
                "{format:?} {orientation:?}: stack order leaks"
            );
        }
    }
}

#[test]
fn html_is_self_contained_and_carries_the_tree() {
    let mut input = ten_samples();
    input.add_stack_names(&["</script><script>alert(1)</script>"], 1, None);
    input.total += 1;
    let mut out = Vec::new();
    write_flame(&input, &FlameOptions::default(), &mut out).unwrap();
    let html = String::from_utf8(out).unwrap();
    // No network, no external files.
    for external in ["src=", "href=", "http://", "https://", "@import", "url("] {
        let allowed = "http://www.w3.org/2000/svg";
        assert!(
            !html.replace(allowed, "").contains(external),
            "the page refers to something outside itself: {external}"
        );
    }
    // Exactly the two script elements the page has: the data one holds the
    // hostile name escaped.
    assert_eq!(
        html.matches("</script>").count(),
        3,
        "error hook, data, code"
    );
    let start = html.find("id=\"flame-data\">").unwrap() + "id=\"flame-data\">".len();
    let data: serde_json::Value =
        serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()])
            .unwrap();
    let names: Vec<&str> = data["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "</script><script>alert(1)</script>",
            "all",
            "burn_a",
            "burn_b",
            "burn_c",
            "main",
            "thread",
            "work"
        ]
    );
    // name, value, depth, colour per node in preorder.
    let nodes: Vec<i64> = data["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let triples: Vec<(&str, i64, i64)> = nodes
        .chunks(4)
        .map(|c| (names[c[0] as usize], c[1], c[2]))
        .collect();
    assert_eq!(
        triples,
        [
            ("all", 11, 0),
            ("</script><script>alert(1)</script>", 1, 1),
            ("main", 9, 1),
            ("burn_c", 1, 2),
            ("work", 7, 2),
            ("burn_a", 5, 3),
            ("burn_b", 2, 3),
            ("thread", 1, 1),
            ("burn_b", 1, 2),
        ]
    );
    assert_eq!(data["total"], 11);
    assert_eq!(data["values"]["word"], "samples");
    assert!(data["values"].get("units").is_none());
    assert!(data.get("base").is_none());
}
