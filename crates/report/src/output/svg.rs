//! The call graph as a standalone SVG drawing, laid out by [`layout`]
//! (no Graphviz needed).
//!
//! The input is a [`GraphPicture`]: boxes with their label lines and font
//! size (pprof sizes a node by its local count through the font size: the
//! guide's "Node Information", "The size of the node is proportional to the
//! local count"), edges with their labels and weights, and the legend lines
//! (the guide's "Meta Information"). [`write_svg`] lays it out and writes
//! SVG 1.1: a legend box at the top left, then the graph. Boxes and edges
//! are tinted from grey to red by their share of the total, edges get
//! wider with their weight, as in pprof; every node and edge is a `<g>`
//! with a `<title>` (a tooltip in browsers) and a stable id (`node1`…,
//! `edge1`…, in input order).

use std::fmt::{self, Write as _};
use std::io::{self, Write};

use crate::callgraph::CallGraph;
use crate::change::NodeChange;
use crate::measure::percent;

pub mod layout;

use layout::{
    layout, text_width, Align, EdgeSpec, LayoutGraph, LayoutOptions, NodeSpec, PathSegment,
    PlacedText, Point, TextLine, BASELINE, FONT_FAMILY, LINE_HEIGHT,
};

/// A node of the picture.
#[derive(Clone, Debug, PartialEq)]
pub struct PictureNode {
    /// Full name, shown as the tooltip.
    pub name: String,
    /// Label lines, top to bottom.
    pub lines: Vec<TextLine>,
    /// Font size of the label (pprof: `8 + 50·√(local/total)`).
    pub font_size: f64,
    /// Share of the total in this node and its callees (0..=1): the tint.
    pub cum_fraction: f64,
    /// In a diff: the node's change of share, which colours it instead of
    /// its share (`None` outside a diff).
    pub change: Option<NodeChange>,
}

/// An edge of the picture.
#[derive(Clone, Debug, PartialEq)]
pub struct PictureEdge {
    /// Index of the caller in `nodes`.
    pub from: usize,
    /// Index of the callee in `nodes`.
    pub to: usize,
    /// Samples along the edge (layout weight).
    pub weight: f64,
    /// The label (the samples, as text).
    pub label: String,
    /// Share of the total along the edge (0..=1): width and tint.
    pub fraction: f64,
    /// Drawn dashed (pprof dashes edges into inlined functions).
    pub dashed: bool,
    /// Tooltip.
    pub tooltip: String,
}

/// Everything [`write_svg`] draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphPicture {
    /// Document title (pprof: `program; N samples`).
    pub title: String,
    /// Legend lines, top to bottom.
    pub legend: Vec<String>,
    /// Boxes.
    pub nodes: Vec<PictureNode>,
    /// Edges.
    pub edges: Vec<PictureEdge>,
}

/// The picture of a trimmed call graph.
pub fn picture(graph: &CallGraph) -> GraphPicture {
    let total = graph.local_total as f64;
    let share = |value: i64| {
        if total != 0.0 {
            value as f64 / total
        } else {
            0.0
        }
    };
    GraphPicture {
        title: graph.title(),
        legend: graph.legend(),
        nodes: graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                let mut lines: Vec<TextLine> = CallGraph::name_lines(&node.name)
                    .into_iter()
                    .map(|text| TextLine {
                        text,
                        align: Align::Center,
                    })
                    .collect();
                lines.extend(graph.value_lines(node).into_iter().map(|text| TextLine {
                    text,
                    align: Align::Right,
                }));
                let mut tooltip = format!(
                    "{} | flat {} ({}) | cum {} ({})",
                    node.name,
                    graph.value(node.flat),
                    percent(node.flat, graph.local_total),
                    graph.value(node.cum),
                    percent(node.cum, graph.local_total)
                );
                if let Some(intervals) = graph.node_intervals.get(i) {
                    tooltip.push_str(" | ");
                    tooltip.push_str(intervals);
                }
                PictureNode {
                    name: tooltip,
                    lines,
                    font_size: graph.font_size(node),
                    cum_fraction: share(node.cum),
                    change: graph.node_changes.get(i).copied(),
                }
            })
            .collect(),
        edges: graph
            .edges
            .iter()
            .map(|edge| PictureEdge {
                from: edge.caller,
                to: edge.callee,
                weight: edge.weight.abs() as f64,
                label: graph.value(edge.weight),
                fraction: share(edge.weight),
                dashed: edge.inlined,
                tooltip: format!(
                    "{} -> {} ({} {})",
                    graph.nodes[edge.caller].name,
                    graph.nodes[edge.callee].name,
                    graph.value(edge.weight),
                    graph.values.word()
                ),
            })
            .collect(),
    }
}

/// Font size of edge labels (Graphviz's default, which pprof keeps).
pub const EDGE_FONT_SIZE: f64 = 14.0;
/// Font size of the legend.
pub const LEGEND_FONT_SIZE: f64 = 20.0;
/// Smallest box, as pprof asks dot for (`width=0.375,height=0.25` inches).
const MIN_WIDTH: f64 = 27.0;
const MIN_HEIGHT: f64 = 18.0;

/// Stroke width of an edge carrying `fraction` of the total: thin for
/// small edges, full width from a third of the total (pprof's scale).
pub fn pen_width(fraction: f64) -> f64 {
    1.0 + 4.0 * (3.0 * fraction.abs()).min(1.0)
}

fn arrow_length(pen: f64) -> f64 {
    5.0 + pen
}

/// The layout input for a picture.
pub fn layout_graph(picture: &GraphPicture) -> LayoutGraph {
    LayoutGraph {
        nodes: picture
            .nodes
            .iter()
            .map(|node| NodeSpec {
                lines: node.lines.clone(),
                font_size: node.font_size,
                min_width: MIN_WIDTH,
                min_height: MIN_HEIGHT,
            })
            .collect(),
        edges: picture
            .edges
            .iter()
            .map(|edge| {
                let pen = pen_width(edge.fraction);
                EdgeSpec {
                    from: edge.from,
                    to: edge.to,
                    weight: edge.weight,
                    label: edge.label.clone(),
                    label_font_size: EDGE_FONT_SIZE,
                    pen_width: pen,
                    arrow_length: arrow_length(pen),
                }
            })
            .collect(),
    }
}

/// Lays out `picture` and writes it as SVG to `out`.
pub fn write_svg(picture: &GraphPicture, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(render_svg(picture).as_bytes())
}

/// Lays out `picture` and returns the SVG document.
pub fn render_svg(picture: &GraphPicture) -> String {
    let placed = layout(&layout_graph(picture), &LayoutOptions::default());
    let margin = 8.0;
    let padding = 8.0;
    // The legend box, above the graph.
    let legend_width = picture
        .legend
        .iter()
        .map(|line| text_width(line, LEGEND_FONT_SIZE))
        .fold(0.0, f64::max)
        + 2.0 * padding;
    let legend_height =
        picture.legend.len() as f64 * LINE_HEIGHT * LEGEND_FONT_SIZE + 2.0 * padding;
    let graph_top = if picture.legend.is_empty() {
        0.0
    } else {
        margin + legend_height + margin
    };
    let width = placed.width.max(legend_width + 2.0 * margin);
    let height = graph_top + placed.height;

    let mut svg = String::with_capacity(1024 + 600 * (picture.nodes.len() + picture.edges.len()));
    svg.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
    let _ = writeln!(svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{w}pt\" height=\"{h}pt\" viewBox=\"0 0 {w} {h}\">",
        w = num(width),
        h = num(height)
    );
    let _ = writeln!(svg, "<title>{}</title>", escape(&picture.title));
    let _ = writeln!(
        svg,
        "<g id=\"graph\" font-family=\"{}\" fill=\"#000000\">",
        escape(FONT_FAMILY)
    );
    let _ = writeln!(
        svg,
        "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
        num(width),
        num(height)
    );
    if !picture.legend.is_empty() {
        let _ = write!(svg,
            "<g id=\"legend\" class=\"legend\">\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#bdbdbd\" rx=\"3\"/>\n",
            num(margin),
            num(margin),
            num(legend_width),
            num(legend_height)
        );
        for (i, line) in picture.legend.iter().enumerate() {
            let baseline = margin
                + padding
                + i as f64 * LINE_HEIGHT * LEGEND_FONT_SIZE
                + BASELINE * LEGEND_FONT_SIZE;
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"{}\">{}</text>",
                num(margin + padding),
                num(baseline),
                num(LEGEND_FONT_SIZE),
                escape(line)
            );
        }
        svg.push_str("</g>\n");
    }
    let _ = writeln!(
        svg,
        "<g id=\"callgraph\" transform=\"translate(0,{})\">",
        num(graph_top)
    );
    // Edges first, so boxes are drawn over their ends.
    for (index, (edge, route)) in picture.edges.iter().zip(&placed.edges).enumerate() {
        let pen = pen_width(edge.fraction);
        let color = mix(EDGE_COLD, EDGE_HOT, heat(edge.fraction));
        let _ = write!(
            svg,
            "<g id=\"edge{}\" class=\"edge\">\n<title>{}</title>\n",
            index + 1,
            escape(&edge.tooltip)
        );
        let mut path = String::with_capacity(32 + 48 * route.segments.len());
        let _ = write!(path, "M{},{}", num(route.start.x), num(route.start.y));
        for segment in &route.segments {
            let _ = match *segment {
                PathSegment::Line(p) => write!(path, " L{},{}", num(p.x), num(p.y)),
                PathSegment::Cubic(c1, c2, p) => write!(
                    path,
                    " C{},{} {},{} {},{}",
                    num(c1.x),
                    num(c1.y),
                    num(c2.x),
                    num(c2.y),
                    num(p.x),
                    num(p.y)
                ),
            };
        }
        let _ = writeln!(
            svg,
            "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
            path,
            color,
            num(pen),
            if edge.dashed {
                " stroke-dasharray=\"6,3\""
            } else {
                ""
            }
        );
        let _ = writeln!(
            svg,
            "<polygon points=\"{}\" fill=\"{color}\" stroke=\"{color}\" stroke-width=\"1\"/>",
            arrowhead(route.arrow_tip, route.arrow_base, pen)
        );
        if let Some(label) = &route.label {
            text_element(&mut svg, label, "#333333");
        }
        svg.push_str("</g>\n");
    }
    for (index, (node, placed_box)) in picture.nodes.iter().zip(&placed.nodes).enumerate() {
        let score = heat(node.cum_fraction);
        let (class, fill, stroke) = match node.change {
            Some(change) => {
                let (fill, stroke) = change.colors();
                (change.name(), fill.to_string(), stroke.to_string())
            }
            None => (
                "",
                mix(FILL_COLD, FILL_HOT, score),
                mix(EDGE_COLD, EDGE_HOT, score),
            ),
        };
        let _ = write!(svg,
            "<g id=\"node{}\" class=\"node{}{class}\">\n<title>{}</title>\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{}\"/>\n",
            index + 1,
            if class.is_empty() { "" } else { " " },
            escape(&node.name),
            num(placed_box.x),
            num(placed_box.y),
            num(placed_box.width),
            num(placed_box.height),
            num(1.0 + score)
        );
        for line in &placed_box.lines {
            text_element(&mut svg, line, "#000000");
        }
        svg.push_str("</g>\n");
    }
    svg.push_str("</g>\n</g>\n</svg>\n");
    svg
}

fn text_element(svg: &mut String, text: &PlacedText, color: &str) {
    let anchor = match text.align {
        Align::Left => "start",
        Align::Center => "middle",
        Align::Right => "end",
    };
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\">{}</text>",
        num(text.x),
        num(text.baseline),
        num(text.font_size),
        anchor,
        color,
        escape(&text.text)
    );
}

/// The arrowhead triangle's points: the tip and the two corners of its
/// base, which is wider for wider edges.
fn arrowhead(tip: Point, base: Point, pen: f64) -> String {
    let (dx, dy) = (tip.x - base.x, tip.y - base.y);
    let length = (dx * dx + dy * dy).sqrt().max(1e-9);
    let half = 2.5 + pen;
    let (px, py) = (-dy / length * half, dx / length * half);
    format!(
        "{},{} {},{} {},{}",
        num(tip.x),
        num(tip.y),
        num(base.x + px),
        num(base.y + py),
        num(base.x - px),
        num(base.y - py)
    )
}

/// Box fill and edge/border colours, cold (small share) to hot.
const FILL_COLD: [u8; 3] = [0xf8, 0xf8, 0xf8];
const FILL_HOT: [u8; 3] = [0xff, 0xcf, 0xc2];
const EDGE_COLD: [u8; 3] = [0x90, 0x90, 0x90];
const EDGE_HOT: [u8; 3] = [0xb3, 0x1b, 0x00];

/// Perceived heat of a share: square root, so that small shares are
/// already visibly tinted.
fn heat(fraction: f64) -> f64 {
    fraction.abs().min(1.0).sqrt()
}

fn mix(cold: [u8; 3], hot: [u8; 3], t: f64) -> String {
    let channel = |i: usize| {
        let value = f64::from(cold[i]) + (f64::from(hot[i]) - f64::from(cold[i])) * t;
        value.round().clamp(0.0, 255.0) as u8
    };
    format!("#{:02x}{:02x}{:02x}", channel(0), channel(1), channel(2))
}

/// A coordinate with at most two decimals, trailing zeros dropped and
/// never `-0` (formatted with integers: fast and the same everywhere).
struct Num(f64);

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hundredths = (self.0 * 100.0).round() as i64;
        let sign = if hundredths < 0 { "-" } else { "" };
        let magnitude = hundredths.unsigned_abs();
        let (whole, fraction) = (magnitude / 100, magnitude % 100);
        if fraction == 0 {
            write!(f, "{sign}{whole}")
        } else if fraction % 10 == 0 {
            write!(f, "{sign}{whole}.{}", fraction / 10)
        } else {
            write!(f, "{sign}{whole}.{fraction:02}")
        }
    }
}

fn num(value: f64) -> Num {
    Num(value)
}

/// Escapes text for XML content and attribute values; characters XML 1.0
/// forbids become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            '\t' | '\n' | '\r' => escaped.push(ch),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                escaped.push('\u{fffd}')
            }
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::{GREW_FILL, NOISE_FILL, SHRANK_FILL};

    #[test]
    fn numbers_are_compact_and_never_negative_zero() {
        assert_eq!(num(12.5).to_string(), "12.5");
        assert_eq!(num(3.0).to_string(), "3");
        assert_eq!(num(-0.001).to_string(), "0");
        assert_eq!(num(100.0).to_string(), "100");
        assert_eq!(num(0.127).to_string(), "0.13");
        assert_eq!(num(-2.05).to_string(), "-2.05");
    }

    #[test]
    fn escape_covers_markup_and_control_characters() {
        assert_eq!(
            escape("a<b>&\"c'\u{1}"),
            "a&lt;b&gt;&amp;&quot;c&apos;\u{fffd}"
        );
    }

    #[test]
    fn a_diff_colours_nodes_by_their_change_not_their_share() {
        let node = |name: &str, cum_fraction: f64, change: Option<NodeChange>| PictureNode {
            name: name.to_string(),
            lines: vec![TextLine {
                text: name.to_string(),
                align: Align::Center,
            }],
            font_size: 10.0,
            cum_fraction,
            change,
        };
        let picture = GraphPicture {
            nodes: vec![
                node("main", 1.0, Some(NodeChange::Noise)),
                node("grown", 0.1, Some(NodeChange::Grew)),
                node("shrunk", 0.5, Some(NodeChange::Shrank)),
                node("plain", 1.0, None),
            ],
            ..GraphPicture::default()
        };
        let svg = render_svg(&picture);
        let rect_of = |name: &str| {
            let at = svg.find(&format!("<title>{name}</title>")).unwrap();
            let head = &svg[..at];
            let class = &head[head.rfind("class=\"").unwrap() + 7..];
            let class = &class[..class.find('"').unwrap()];
            let fill = &svg[at..];
            let fill = &fill[fill.find("fill=\"").unwrap() + 6..];
            (class.to_string(), fill[..7].to_string())
        };
        assert_eq!(rect_of("main"), ("node noise".into(), NOISE_FILL.into()));
        assert_eq!(rect_of("grown"), ("node grew".into(), GREW_FILL.into()));
        assert_eq!(
            rect_of("shrunk"),
            ("node shrank".into(), SHRANK_FILL.into())
        );
        // Outside a diff: tinted by share, as before.
        assert_eq!(
            rect_of("plain"),
            ("node".into(), mix(FILL_COLD, FILL_HOT, 1.0))
        );
    }

    #[test]
    fn colours_run_from_cold_to_hot() {
        assert_eq!(mix(EDGE_COLD, EDGE_HOT, 0.0), "#909090");
        assert_eq!(mix(EDGE_COLD, EDGE_HOT, 1.0), "#b31b00");
    }
}
