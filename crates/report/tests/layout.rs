//! The built-in layout and SVG writer: geometry invariants (no two boxes
//! overlap, text inside boxes, labels clear of boxes, edges end on their
//! boxes), determinism, and the SVG read back as XML with every node and
//! edge present.
mod support;

use cpuprof_report::output::svg::layout::{
    layout, text_width, Align, EdgeSpec, Layout, LayoutGraph, LayoutOptions, NodeSpec, PathSegment,
    TextLine, LINE_HEIGHT,
};
use cpuprof_report::output::svg::{
    layout_graph, render_svg, GraphPicture, PictureEdge, PictureNode,
};
use support::synthetic::call_graph;

/// DejaVu Sans' descent below the baseline, in em.
const DESCENT: f64 = 0.236;
const ASCENT: f64 = 0.928;

fn overlaps(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    let eps = 1e-6;
    a.0 < b.0 + b.2 - eps && b.0 < a.0 + a.2 - eps && a.1 < b.1 + b.3 - eps && b.1 < a.1 + a.3 - eps
}

fn text_box(
    x: f64,
    baseline: f64,
    width: f64,
    align: Align,
    font_size: f64,
) -> (f64, f64, f64, f64) {
    let left = match align {
        Align::Left => x,
        Align::Center => x - width / 2.0,
        Align::Right => x - width,
    };
    (
        left,
        baseline - ASCENT * font_size,
        width,
        (ASCENT + DESCENT) * font_size,
    )
}

fn inside(inner: (f64, f64, f64, f64), outer: (f64, f64, f64, f64)) -> bool {
    let eps = 1e-6;
    inner.0 >= outer.0 - eps
        && inner.1 >= outer.1 - eps
        && inner.0 + inner.2 <= outer.0 + outer.2 + eps
        && inner.1 + inner.3 <= outer.1 + outer.3 + eps
}

/// Checks every geometric promise of the layout; returns the number of
/// pairs of boxes compared.
fn check_geometry(graph: &LayoutGraph, placed: &Layout) -> usize {
    assert_eq!(placed.nodes.len(), graph.nodes.len());
    assert_eq!(placed.edges.len(), graph.edges.len());
    let boxes: Vec<(f64, f64, f64, f64)> = placed
        .nodes
        .iter()
        .map(|n| (n.x, n.y, n.width, n.height))
        .collect();
    let mut pairs = 0;
    for i in 0..boxes.len() {
        for j in i + 1..boxes.len() {
            pairs += 1;
            assert!(
                !overlaps(boxes[i], boxes[j]),
                "boxes {i} {:?} and {j} {:?} overlap",
                boxes[i],
                boxes[j]
            );
        }
        assert!(
            boxes[i].0 >= 0.0 && boxes[i].1 >= 0.0,
            "box {i} outside the drawing"
        );
        assert!(
            boxes[i].0 + boxes[i].2 <= placed.width + 1e-6,
            "box {i} beyond the width"
        );
        assert!(
            boxes[i].1 + boxes[i].3 <= placed.height + 1e-6,
            "box {i} beyond the height"
        );
        for line in &placed.nodes[i].lines {
            let text = text_box(
                line.x,
                line.baseline,
                line.width,
                line.align,
                line.font_size,
            );
            assert!(
                inside(text, boxes[i]),
                "text {:?} of box {i} sticks out of {:?}",
                line.text,
                boxes[i]
            );
        }
    }
    for (index, (spec, route)) in graph.edges.iter().zip(&placed.edges).enumerate() {
        if let Some(label) = &route.label {
            assert_eq!(label.text, spec.label);
            let text = text_box(
                label.x,
                label.baseline,
                label.width,
                label.align,
                label.font_size,
            );
            for (b, bx) in boxes.iter().enumerate() {
                assert!(
                    !overlaps(text, *bx),
                    "label of edge {index} overlaps box {b}"
                );
            }
        } else {
            assert!(spec.label.is_empty(), "edge {index} lost its label");
        }
        // The arrow tip is on the target's border, the path starts on the
        // source's border and ends at the arrow's base.
        let target = boxes[spec.to];
        let source = boxes[spec.from];
        let on_border = |p: (f64, f64), b: (f64, f64, f64, f64)| {
            let eps = 0.01;
            let in_x = p.0 >= b.0 - eps && p.0 <= b.0 + b.2 + eps;
            let in_y = p.1 >= b.1 - eps && p.1 <= b.1 + b.3 + eps;
            let on_edge = (p.0 - b.0).abs() < eps
                || (p.0 - b.0 - b.2).abs() < eps
                || (p.1 - b.1).abs() < eps
                || (p.1 - b.1 - b.3).abs() < eps;
            in_x && in_y && on_edge
        };
        assert!(
            on_border((route.arrow_tip.x, route.arrow_tip.y), target),
            "edge {index}: arrow tip {:?} not on target box {:?}",
            route.arrow_tip,
            target
        );
        // Upward (reversed) edges leave through the top of their source,
        // the others through the bottom: either way on its border.
        assert!(
            on_border((route.start.x, route.start.y), source),
            "edge {index}: start {:?} not on source box {:?}",
            route.start,
            source
        );
        let end = match route.segments.last().expect("a path has pieces") {
            PathSegment::Line(p) | PathSegment::Cubic(_, _, p) => *p,
        };
        assert!(
            (end.x - route.arrow_base.x).abs() < 1e-9 && (end.y - route.arrow_base.y).abs() < 1e-9
        );
        let arrow =
            ((route.arrow_tip.x - end.x).powi(2) + (route.arrow_tip.y - end.y).powi(2)).sqrt();
        assert!(
            (arrow - spec.arrow_length).abs() < 1e-6,
            "edge {index}: arrow {arrow}"
        );
    }
    pairs
}

fn node(text: &str) -> NodeSpec {
    NodeSpec {
        lines: vec![TextLine {
            text: text.to_string(),
            align: Align::Center,
        }],
        font_size: 14.0,
        min_width: 27.0,
        min_height: 18.0,
    }
}

fn edge(from: usize, to: usize, weight: f64) -> EdgeSpec {
    EdgeSpec {
        from,
        to,
        weight,
        label: format!("{weight}"),
        label_font_size: 14.0,
        pen_width: 2.0,
        arrow_length: 7.0,
    }
}

#[test]
fn synthetic_call_graphs_keep_every_geometric_promise() {
    for (count, seed) in [(1, 1), (2, 3), (10, 2), (80, 1), (80, 7), (300, 5)] {
        let graph = layout_graph(&call_graph(count, seed));
        let placed = layout(&graph, &LayoutOptions::default());
        let pairs = check_geometry(&graph, &placed);
        assert_eq!(pairs, count * (count - 1) / 2);
    }
}

#[test]
fn cycles_self_loops_parallel_edges_and_islands() {
    let graph = LayoutGraph {
        nodes: (0..7).map(|i| node(&format!("node {i}"))).collect(),
        edges: vec![
            edge(0, 1, 10.0),
            edge(1, 2, 8.0),
            edge(2, 0, 3.0), // a cycle through the root
            edge(2, 2, 5.0), // recursion
            edge(2, 2, 1.0), // a second self-loop nests outside the first
            edge(1, 3, 4.0),
            edge(1, 3, 2.0), // a parallel edge
            edge(3, 1, 1.0), // mutual recursion
            edge(5, 6, 9.0), // a separate component
        ],
    };
    let placed = layout(&graph, &LayoutOptions::default());
    check_geometry(&graph, &placed);
    let reversed = placed.edges.iter().filter(|e| e.reversed).count();
    assert_eq!(reversed, 2, "2 -> 0 and 3 -> 1 close cycles and go up");
    // Callers sit above callees along the kept orientation.
    assert!(placed.nodes[0].y < placed.nodes[1].y);
    assert!(placed.nodes[1].y < placed.nodes[2].y);
    assert!(placed.nodes[5].y < placed.nodes[6].y);
    // Self-loops leave and enter the right side of their box.
    for e in [3, 4] {
        let b = &placed.nodes[2];
        assert!((placed.edges[e].start.x - (b.x + b.width)).abs() < 1e-9);
    }
}

#[test]
fn empty_and_edgeless_graphs() {
    let placed = layout(&LayoutGraph::default(), &LayoutOptions::default());
    assert!(placed.nodes.is_empty() && placed.edges.is_empty());
    let graph = LayoutGraph {
        nodes: (0..5).map(|i| node(&format!("lonely {i}"))).collect(),
        edges: vec![],
    };
    let placed = layout(&graph, &LayoutOptions::default());
    check_geometry(&graph, &placed);
}

#[test]
fn boxes_grow_with_their_text_and_font() {
    let small = node("f");
    let mut big = node("a much longer function name");
    big.font_size = 40.0;
    let graph = LayoutGraph {
        nodes: vec![small, big],
        edges: vec![edge(0, 1, 1.0)],
    };
    let placed = layout(&graph, &LayoutOptions::default());
    let options = LayoutOptions::default();
    assert_eq!(
        placed.nodes[0].width, 27.0,
        "the minimum width, as pprof asks dot for"
    );
    let expected = text_width("a much longer function name", 40.0) + 2.0 * options.padding_x;
    assert!((placed.nodes[1].width - expected).abs() < 1e-9);
    let expected_height = LINE_HEIGHT * 40.0 + 2.0 * options.padding_y;
    assert!((placed.nodes[1].height - expected_height).abs() < 1e-9);
}

#[test]
fn text_width_follows_dejavu_sans_advances() {
    // "Mi" = 863 + 278 thousandths of an em, plus 3% slack.
    assert!((text_width("Mi", 100.0) - 114.1 * 1.03).abs() < 1e-9);
    assert_eq!(text_width("", 12.0), 0.0);
    // A CJK character is a full em.
    assert!((text_width("中", 10.0) - 10.0 * 1.03).abs() < 1e-9);
}

#[test]
fn same_input_gives_byte_identical_svg() {
    for count in [80, 300] {
        let picture = call_graph(count, 11);
        let first = render_svg(&picture);
        let second = render_svg(&picture.clone());
        assert!(first == second, "{count} nodes: two renderings differ");
    }
}

fn picture_with_awkward_text() -> GraphPicture {
    let names = [
        "a<b>&\"c\"",
        "std::map<int, 'x'>::find",
        "ünïcödé::名前",
        "bell\u{7}char",
    ];
    GraphPicture {
        title: "prog <&> \"quoted\"".to_string(),
        legend: vec!["prog <&>".to_string(), "Total samples: 10".to_string()],
        nodes: names
            .iter()
            .map(|n| PictureNode {
                name: n.to_string(),
                lines: vec![TextLine {
                    text: n.to_string(),
                    align: Align::Center,
                }],
                font_size: 12.0,
                cum_fraction: 0.5,
                change: None,
            })
            .collect(),
        edges: vec![PictureEdge {
            from: 0,
            to: 1,
            weight: 5.0,
            label: "5".to_string(),
            fraction: 0.5,
            dashed: true,
            tooltip: "a<b> -> map".to_string(),
        }],
    }
}

#[test]
fn svg_is_xml_with_every_node_edge_and_legend_line() {
    for picture in [
        call_graph(80, 1),
        call_graph(300, 5),
        picture_with_awkward_text(),
    ] {
        let svg = render_svg(&picture);
        let document = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
        let root = document.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(
            root.tag_name().namespace(),
            Some("http://www.w3.org/2000/svg")
        );
        let view_box = root.attribute("viewBox").expect("a viewBox");
        assert_eq!(view_box.split(' ').count(), 4);
        let group = |class: &str| -> Vec<roxmltree::Node> {
            document
                .descendants()
                .filter(|n| n.tag_name().name() == "g" && n.attribute("class") == Some(class))
                .collect()
        };
        let nodes = group("node");
        let edges = group("edge");
        assert_eq!(nodes.len(), picture.nodes.len());
        assert_eq!(edges.len(), picture.edges.len());
        let title_of = |g: &roxmltree::Node| -> String {
            g.children()
                .find(|c| c.tag_name().name() == "title")
                .and_then(|t| t.text())
                .unwrap_or("")
                .to_string()
        };
        for (index, (g, node)) in nodes.iter().zip(&picture.nodes).enumerate() {
            assert_eq!(
                g.attribute("id"),
                Some(format!("node{}", index + 1).as_str())
            );
            let expected = node.name.replace('\u{7}', "\u{fffd}");
            assert_eq!(title_of(g), expected);
            let texts: Vec<String> = g
                .children()
                .filter(|c| c.tag_name().name() == "text")
                .map(|t| t.text().unwrap_or("").to_string())
                .collect();
            let lines: Vec<String> = node
                .lines
                .iter()
                .map(|l| l.text.replace('\u{7}', "\u{fffd}"))
                .collect();
            assert_eq!(texts, lines);
            assert_eq!(
                g.children()
                    .filter(|c| c.tag_name().name() == "rect")
                    .count(),
                1
            );
        }
        for (index, (g, edge)) in edges.iter().zip(&picture.edges).enumerate() {
            assert_eq!(
                g.attribute("id"),
                Some(format!("edge{}", index + 1).as_str())
            );
            assert_eq!(title_of(g), edge.tooltip);
            let path = g
                .children()
                .find(|c| c.tag_name().name() == "path")
                .expect("a path");
            assert!(path.attribute("d").unwrap().starts_with('M'));
            assert_eq!(
                path.attribute("stroke-dasharray").is_some(),
                edge.dashed,
                "edge {index}: dashed iff inlined"
            );
            assert_eq!(
                g.children()
                    .filter(|c| c.tag_name().name() == "polygon")
                    .count(),
                1
            );
            let label = g
                .children()
                .find(|c| c.tag_name().name() == "text")
                .map(|t| t.text().unwrap_or(""));
            assert_eq!(label, Some(edge.label.as_str()));
        }
        let legend: Vec<String> = document
            .descendants()
            .find(|n| n.attribute("id") == Some("legend"))
            .expect("a legend")
            .children()
            .filter(|c| c.tag_name().name() == "text")
            .map(|t| t.text().unwrap_or("").to_string())
            .collect();
        assert_eq!(legend, picture.legend);
    }
}

#[test]
fn heavier_edges_are_drawn_wider() {
    let picture = call_graph(80, 1);
    let svg = render_svg(&picture);
    let document = roxmltree::Document::parse(&svg).unwrap();
    let widths: Vec<f64> = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge"))
        .map(|g| {
            g.children()
                .find(|c| c.tag_name().name() == "path")
                .and_then(|p| p.attribute("stroke-width"))
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    for (i, a) in picture.edges.iter().enumerate() {
        for (j, b) in picture.edges.iter().enumerate() {
            if a.fraction < b.fraction {
                assert!(
                    widths[i] <= widths[j],
                    "edge {i} lighter but wider than {j}"
                );
            }
        }
    }
    let thinnest = widths.iter().copied().fold(f64::INFINITY, f64::min);
    let widest = widths.iter().copied().fold(0.0, f64::max);
    assert!(
        thinnest < 2.0 && widest == 5.0,
        "widths from {thinnest} to {widest}"
    );
}

mod random_graphs {
    use super::*;
    use proptest::prelude::*;

    fn graph_strategy() -> impl Strategy<Value = LayoutGraph> {
        (1usize..24).prop_flat_map(|count| {
            let nodes = proptest::collection::vec(
                (
                    proptest::collection::vec("[a-zA-Z_:<> ]{0,24}", 1..4),
                    6.0f64..40.0,
                ),
                count,
            );
            let edges = proptest::collection::vec(
                (0..count, 0..count, 0.0f64..1000.0, "[0-9]{0,6}"),
                0..count * 3,
            );
            (nodes, edges).prop_map(|(nodes, edges)| LayoutGraph {
                nodes: nodes
                    .into_iter()
                    .map(|(lines, font_size)| NodeSpec {
                        lines: lines
                            .into_iter()
                            .enumerate()
                            .map(|(i, text)| TextLine {
                                text,
                                align: [Align::Left, Align::Center, Align::Right][i % 3],
                            })
                            .collect(),
                        font_size,
                        min_width: 27.0,
                        min_height: 18.0,
                    })
                    .collect(),
                edges: edges
                    .into_iter()
                    .map(|(from, to, weight, label)| EdgeSpec {
                        from,
                        to,
                        weight,
                        label,
                        label_font_size: 14.0,
                        pen_width: 1.0 + weight / 250.0,
                        arrow_length: 6.0 + weight / 250.0,
                    })
                    .collect(),
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Any graph (cycles, self-loops, parallel edges, empty labels,
        /// islands, odd text): every geometric promise holds and the
        /// layout is deterministic.
        #[test]
        fn any_graph_keeps_every_geometric_promise(graph in graph_strategy()) {
            let placed = layout(&graph, &LayoutOptions::default());
            check_geometry(&graph, &placed);
            prop_assert_eq!(placed, layout(&graph, &LayoutOptions::default()));
        }
    }
}
