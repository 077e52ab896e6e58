//! A layered (Sugiyama-style) layout of directed graphs, so that call
//! graphs can be drawn without Graphviz.
//!
//! The input is a neutral [`LayoutGraph`]: boxes of text lines
//! ([`NodeSpec`]) and weighted, labelled edges ([`EdgeSpec`]). [`layout`]
//! returns a [`Layout`]: every box placed, every edge routed as a smooth
//! path of cubic Bézier pieces ending in an arrowhead, every edge label
//! placed. The stages are the classic ones:
//!
//! 1. cycle breaking: a depth-first search from the sources, heaviest edge
//!    first, reverses the back edges (recursion in a call graph);
//! 2. layer assignment: longest path, then node promotion, a coordinate
//!    descent on the objective of network simplex (the weighted sum of edge
//!    lengths);
//! 3. ranks are doubled, as dot does, so that every edge crosses at least
//!    one odd "label" layer, and long edges get a chain of dummy slots; the
//!    dummy that carries the edge's label reserves the label's width, so
//!    labels never overlap boxes;
//! 4. crossing reduction: weighted barycenter sweeps alternately down and
//!    up, each followed by adjacent transpositions, a bounded number of
//!    passes, keeping the order with the fewest crossings (counted exactly
//!    with a Fenwick tree);
//! 5. coordinates: block coordinate descent on the quadratic energy
//!    `Σ w(e)·(x(u) − x(v))²`, each layer solved exactly under its
//!    separation constraints by weighted isotonic regression (pool
//!    adjacent violators). The constraints are what guarantees that no two
//!    boxes overlap; the weights (32× between dummies, 4× between a box and
//!    a dummy, as dot's Ω but steeper) pull long edges towards straight
//!    lines, though they still bend where the layers they cross are crowded;
//! 6. routing: edges run straight down through the layers they cross (in
//!    space reserved for them) and bend only between layers, as cubic
//!    pieces with vertical tangents, so the path is smooth.
//!
//! Everything is deterministic: the same input gives the same numbers
//! (no hashing, every sort has a total tie-break).
//!
//! Text is measured with [`text_width`], the advance widths of DejaVu Sans
//! (measured in Chromium); [`FONT_FAMILY`] names that font first, then
//! fonts of the same or smaller widths, so text drawn with it fits the
//! boxes computed here.

/// The font the layout measures text for, as a CSS/SVG font-family list:
/// DejaVu Sans, then Verdana and Bitstream Vera Sans (near-identical
/// advance widths), then the generic family.
pub const FONT_FAMILY: &str = "'DejaVu Sans', Verdana, 'Bitstream Vera Sans', sans-serif";

/// Advance widths of DejaVu Sans (Book) for ASCII 32..=126, in thousandths
/// of an em, measured with Chromium's canvas `measureText` at 1000px.
const DEJAVU_SANS_ADVANCE: [u16; 95] = [
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632,
    575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685,
    611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579,
    278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
];

/// Extra room on measured widths, for fonts a little wider than DejaVu
/// Sans substituted by the viewer (kerning only ever makes text narrower).
const WIDTH_SLACK: f64 = 1.03;

/// Line height as a multiple of the font size.
pub const LINE_HEIGHT: f64 = 1.2;

/// Distance from the top of a line to its baseline, as a multiple of the
/// font size: DejaVu Sans has ascent 0.928 and descent 0.236 em, so the
/// glyph box sits inside the [`LINE_HEIGHT`] line.
pub const BASELINE: f64 = 0.95;

/// Estimated width of `text` drawn at `font_size` in [`FONT_FAMILY`].
pub fn text_width(text: &str, font_size: f64) -> f64 {
    let mut thousandths: u64 = 0;
    for ch in text.chars() {
        let code = ch as u32;
        thousandths += match code {
            32..=126 => u64::from(DEJAVU_SANS_ADVANCE[(code - 32) as usize]),
            0..=31 | 127..=159 => 0,
            // CJK, Hangul, fullwidth forms and emoji are a full em wide.
            0x1100..=0x115f
            | 0x2e80..=0xa4cf
            | 0xac00..=0xd7a3
            | 0xf900..=0xfaff
            | 0xfe30..=0xfe4f
            | 0xff00..=0xff60
            | 0xffe0..=0xffe6
            | 0x1f300..=0x1faff => 1000,
            // Other scripts: as wide as the widest Latin capitals.
            _ => 800,
        };
    }
    thousandths as f64 / 1000.0 * font_size * WIDTH_SLACK
}

/// Horizontal alignment of a line of text in its box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Flush with the left padding.
    Left,
    /// Centred.
    Center,
    /// Flush with the right padding.
    Right,
}

/// One line of a box's label.
#[derive(Clone, Debug, PartialEq)]
pub struct TextLine {
    /// The text, unescaped.
    pub text: String,
    /// How the line is aligned in the box.
    pub align: Align,
}

/// A box to place: its label and its minimum size.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Label lines, top to bottom.
    pub lines: Vec<TextLine>,
    /// Font size of the label, in user units.
    pub font_size: f64,
    /// The box is at least this wide.
    pub min_width: f64,
    /// The box is at least this high.
    pub min_height: f64,
}

/// A directed edge to route.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeSpec {
    /// Index of the source node.
    pub from: usize,
    /// Index of the target node.
    pub to: usize,
    /// Importance: heavier edges are kept shorter and straighter.
    pub weight: f64,
    /// Label drawn beside the edge (may be empty).
    pub label: String,
    /// Font size of the label.
    pub label_font_size: f64,
    /// Stroke width the edge will be drawn with (space is reserved for it).
    pub pen_width: f64,
    /// Length of the arrowhead: the path stops this far from the target.
    pub arrow_length: f64,
}

/// The graph to lay out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayoutGraph {
    /// Boxes.
    pub nodes: Vec<NodeSpec>,
    /// Edges between boxes, by index into `nodes`.
    pub edges: Vec<EdgeSpec>,
}

/// Spacing and effort of the layout.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutOptions {
    /// Horizontal gap between two boxes of a layer.
    pub node_sep: f64,
    /// Horizontal gap between two edges passing through a layer.
    pub edge_sep: f64,
    /// Vertical gap between consecutive layers (a box layer and a label
    /// layer); two box layers are at least twice this apart.
    pub layer_gap: f64,
    /// Blank border around the drawing.
    pub margin: f64,
    /// Horizontal padding between a box and its text.
    pub padding_x: f64,
    /// Vertical padding between a box and its text.
    pub padding_y: f64,
    /// Passes of barycenter sweeps in crossing reduction.
    pub crossing_passes: usize,
    /// Sweeps of coordinate refinement.
    pub coordinate_passes: usize,
}

impl Default for LayoutOptions {
    fn default() -> Self {
        LayoutOptions {
            node_sep: 18.0,
            edge_sep: 8.0,
            layer_gap: 18.0,
            margin: 8.0,
            padding_x: 8.0,
            padding_y: 4.0,
            crossing_passes: 12,
            coordinate_passes: 24,
        }
    }
}

/// A point in user units; y grows downwards, as in SVG.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Horizontal coordinate.
    pub x: f64,
    /// Vertical coordinate.
    pub y: f64,
}

impl Point {
    fn new(x: f64, y: f64) -> Point {
        Point { x, y }
    }
}

/// A line of text placed on the drawing.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedText {
    /// The text, unescaped.
    pub text: String,
    /// The anchor: left end, centre or right end, per `align`.
    pub x: f64,
    /// The baseline.
    pub baseline: f64,
    /// Which end of the text `x` is.
    pub align: Align,
    /// Font size.
    pub font_size: f64,
    /// Estimated width ([`text_width`]).
    pub width: f64,
}

/// A placed box.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeBox {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
    /// The label lines, placed.
    pub lines: Vec<PlacedText>,
}

/// A piece of an edge's path, continuing from where the previous ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathSegment {
    /// A straight line to the point.
    Line(Point),
    /// A cubic Bézier curve: two control points, then the end point.
    Cubic(Point, Point, Point),
}

/// A routed edge, from its source to its target.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeRoute {
    /// Where the path starts (at the source box).
    pub start: Point,
    /// The path, after `start`; it ends at `arrow_base`.
    pub segments: Vec<PathSegment>,
    /// The arrowhead's tip, on the target box's border.
    pub arrow_tip: Point,
    /// The middle of the arrowhead's base, where the path ends.
    pub arrow_base: Point,
    /// The label, placed beside the edge (`None` if it was empty).
    pub label: Option<PlacedText>,
    /// The edge points upwards (it closes a cycle).
    pub reversed: bool,
}

/// The result of [`layout`]: everything placed inside `width × height`.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Width of the drawing, margins included.
    pub width: f64,
    /// Height of the drawing, margins included.
    pub height: f64,
    /// One box per input node, same order.
    pub nodes: Vec<NodeBox>,
    /// One route per input edge, same order.
    pub edges: Vec<EdgeRoute>,
}

/// A slot of the layered graph: a box, or a point an edge passes through.
#[derive(Clone, Debug)]
struct Slot {
    layer: usize,
    /// Extent left of the slot's x (the edge line or the box's centre).
    left: f64,
    /// Extent right of it (label, self-loops included).
    right: f64,
    /// Height of what the slot holds (box height, label height or 0).
    height: f64,
    /// The input node, for boxes.
    node: Option<usize>,
}

/// A link between slots of adjacent layers, `upper` above `lower`.
#[derive(Clone, Copy, Debug)]
struct Link {
    upper: usize,
    lower: usize,
    /// Pull of the link in coordinate assignment.
    pull: f64,
    /// Weight of the link in crossing reduction.
    weight: f64,
}

/// Lays out `graph`. Edges whose endpoints are out of range are a bug of
/// the caller and panic.
pub fn layout(graph: &LayoutGraph, options: &LayoutOptions) -> Layout {
    let node_count = graph.nodes.len();
    for (index, edge) in graph.edges.iter().enumerate() {
        assert!(
            edge.from < node_count && edge.to < node_count,
            "edge {index} ({} -> {}) refers to a missing node of {node_count}",
            edge.from,
            edge.to
        );
    }
    let sizes: Vec<(f64, f64)> = graph.nodes.iter().map(|n| box_size(n, options)).collect();
    let reversed = break_cycles(graph);
    let ranks = assign_ranks(graph, &reversed);
    let mut layered = Layered::build(graph, options, &sizes, &reversed, &ranks);
    layered.reduce_crossings(options.crossing_passes);
    layered.assign_x(options);
    let arrow_length = graph
        .edges
        .iter()
        .map(|e| e.arrow_length)
        .fold(0.0, f64::max);
    layered.assign_y(options, arrow_length);
    layered.route(graph, options, &sizes, &reversed)
}

/// Width and height of a node's box: its text plus padding.
fn box_size(node: &NodeSpec, options: &LayoutOptions) -> (f64, f64) {
    let text = node
        .lines
        .iter()
        .map(|line| text_width(&line.text, node.font_size))
        .fold(0.0, f64::max);
    let width = (text + 2.0 * options.padding_x).max(node.min_width);
    let height = (node.lines.len() as f64 * LINE_HEIGHT * node.font_size + 2.0 * options.padding_y)
        .max(node.min_height);
    (width, height)
}

/// Orders the out-edges of every node, heaviest first (ties by index),
/// leaving out self-loops.
fn out_edges(graph: &LayoutGraph) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); graph.nodes.len()];
    for (index, edge) in graph.edges.iter().enumerate() {
        if edge.from != edge.to {
            out[edge.from].push(index);
        }
    }
    for list in &mut out {
        list.sort_by(|&a, &b| {
            graph.edges[b]
                .weight
                .total_cmp(&graph.edges[a].weight)
                .then(a.cmp(&b))
        });
    }
    out
}

/// Marks the edges to reverse so that the graph becomes acyclic: the back
/// edges of a depth-first search started at the sources (nodes nobody
/// calls), in input order, following heavier edges first.
fn break_cycles(graph: &LayoutGraph) -> Vec<bool> {
    let node_count = graph.nodes.len();
    let out = out_edges(graph);
    let mut has_caller = vec![false; node_count];
    for edge in &graph.edges {
        if edge.from != edge.to {
            has_caller[edge.to] = true;
        }
    }
    let roots = (0..node_count)
        .filter(|&n| !has_caller[n])
        .chain((0..node_count).filter(|&n| has_caller[n]));
    // 0 = unvisited, 1 = on the DFS stack, 2 = done.
    let mut state = vec![0u8; node_count];
    let mut reversed = vec![false; graph.edges.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in roots {
        if state[root] != 0 {
            continue;
        }
        state[root] = 1;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (node, next) = *top;
            if next < out[node].len() {
                top.1 += 1;
                let edge = out[node][next];
                let target = graph.edges[edge].to;
                match state[target] {
                    0 => {
                        state[target] = 1;
                        stack.push((target, 0));
                    }
                    1 => reversed[edge] = true,
                    _ => {}
                }
            } else {
                state[node] = 2;
                stack.pop();
            }
        }
    }
    reversed
}

/// The (upper, lower) ends of an edge once cycles are broken.
fn oriented(edge: &EdgeSpec, reversed: bool) -> (usize, usize) {
    if reversed {
        (edge.to, edge.from)
    } else {
        (edge.from, edge.to)
    }
}

/// Ranks (layers, before doubling) of the nodes: every edge goes at least
/// one rank down. Longest path from the sources first, then each node is
/// moved within its feasible range towards the side with the heavier edges
/// (a local optimum of network simplex's objective), until nothing moves.
fn assign_ranks(graph: &LayoutGraph, reversed: &[bool]) -> Vec<i64> {
    let node_count = graph.nodes.len();
    let mut ups: Vec<Vec<(usize, f64)>> = vec![Vec::new(); node_count];
    let mut downs: Vec<Vec<(usize, f64)>> = vec![Vec::new(); node_count];
    for (index, edge) in graph.edges.iter().enumerate() {
        if edge.from == edge.to {
            continue;
        }
        let (upper, lower) = oriented(edge, reversed[index]);
        // dot's weight for pprof edges is samples^0.7; +1 keeps zero-weight
        // edges from being ignored.
        let weight = 1.0 + edge.weight.max(0.0).powf(0.7);
        downs[upper].push((lower, weight));
        ups[lower].push((upper, weight));
    }
    // Topological order (Kahn), smallest index first among the ready.
    let mut pending: Vec<usize> = ups.iter().map(Vec::len).collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..node_count)
        .filter(|&n| pending[n] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut topo = Vec::with_capacity(node_count);
    while let Some(std::cmp::Reverse(node)) = ready.pop() {
        topo.push(node);
        for &(lower, _) in &downs[node] {
            pending[lower] -= 1;
            if pending[lower] == 0 {
                ready.push(std::cmp::Reverse(lower));
            }
        }
    }
    debug_assert_eq!(topo.len(), node_count, "cycle left after cycle breaking");
    let mut rank = vec![0i64; node_count];
    for &node in &topo {
        for &(lower, _) in &downs[node] {
            rank[lower] = rank[lower].max(rank[node] + 1);
        }
    }
    // Promotion: the weighted length is linear in one node's rank, so each
    // node goes to the end of its feasible range its heavier side favours.
    for round in 0..64 {
        let mut moved = false;
        let order: Box<dyn Iterator<Item = &usize>> = if round % 2 == 0 {
            Box::new(topo.iter().rev())
        } else {
            Box::new(topo.iter())
        };
        for &node in order {
            let weight_in: f64 = ups[node].iter().map(|&(_, w)| w).sum();
            let weight_out: f64 = downs[node].iter().map(|&(_, w)| w).sum();
            let target = if weight_out > weight_in {
                downs[node].iter().map(|&(lower, _)| rank[lower] - 1).min()
            } else if weight_in > weight_out {
                ups[node].iter().map(|&(upper, _)| rank[upper] + 1).max()
            } else {
                None
            };
            if let Some(target) = target {
                if target != rank[node] {
                    rank[node] = target;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    let lowest = rank.iter().copied().min().unwrap_or(0);
    for r in &mut rank {
        *r -= lowest;
    }
    rank
}

/// The layered graph: slots in layers, links between adjacent layers.
struct Layered {
    slots: Vec<Slot>,
    links: Vec<Link>,
    /// Links per upper layer.
    links_by_layer: Vec<Vec<usize>>,
    /// Neighbours above / below each slot: (slot, link).
    ups: Adjacency,
    downs: Adjacency,
    /// Slots of each layer, left to right.
    order: Vec<Vec<usize>>,
    /// Index of each slot in its layer.
    pos: Vec<usize>,
    /// Horizontal position of each slot.
    x: Vec<f64>,
    /// Top and height of each layer.
    layer_top: Vec<f64>,
    layer_height: Vec<f64>,
    /// For each input edge: its slots from upper to lower (empty for
    /// self-loops), and the slot carrying its label.
    chains: Vec<Vec<usize>>,
    label_slot: Vec<Option<usize>>,
    /// Self-loop geometry per input edge: (loop reach, label x offset)
    /// measured from the box's right border.
    loops: Vec<Option<(f64, f64)>>,
    node_slot: Vec<usize>,
    edge_sep: f64,
    node_sep: f64,
}

/// Neighbour lists of all slots in one array (compressed sparse rows):
/// entries are (neighbour slot, link index).
#[derive(Clone, Debug)]
struct Adjacency {
    start: Vec<u32>,
    entries: Vec<(u32, u32)>,
}

impl Adjacency {
    /// From (slot, neighbour) pairs; the link index is the pair's index.
    fn new(slot_count: usize, pairs: impl Iterator<Item = (usize, usize)> + Clone) -> Adjacency {
        let mut start = vec![0u32; slot_count + 1];
        for (slot, _) in pairs.clone() {
            start[slot + 1] += 1;
        }
        for i in 0..slot_count {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut entries = vec![(0u32, 0u32); start[slot_count] as usize];
        for (link, (slot, other)) in pairs.enumerate() {
            entries[fill[slot] as usize] = (other as u32, link as u32);
            fill[slot] += 1;
        }
        Adjacency { start, entries }
    }

    fn of(&self, slot: usize) -> &[(u32, u32)] {
        &self.entries[self.start[slot] as usize..self.start[slot + 1] as usize]
    }

    fn of_mut(&mut self, slot: usize) -> &mut [(u32, u32)] {
        &mut self.entries[self.start[slot] as usize..self.start[slot + 1] as usize]
    }
}

/// Gap between an edge and its label.
const LABEL_GAP: f64 = 4.0;

impl Layered {
    fn build(
        graph: &LayoutGraph,
        options: &LayoutOptions,
        sizes: &[(f64, f64)],
        reversed: &[bool],
        ranks: &[i64],
    ) -> Layered {
        let mut slots: Vec<Slot> = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(index, _)| Slot {
                layer: 2 * ranks[index] as usize,
                left: sizes[index].0 / 2.0,
                right: sizes[index].0 / 2.0,
                height: sizes[index].1,
                node: Some(index),
            })
            .collect();
        let node_slot: Vec<usize> = (0..graph.nodes.len()).collect();
        let max_weight = graph
            .edges
            .iter()
            .map(|e| e.weight.abs())
            .fold(0.0, f64::max);
        let mut links = Vec::new();
        let mut chains = vec![Vec::new(); graph.edges.len()];
        let mut label_slot = vec![None; graph.edges.len()];
        let mut loops = vec![None; graph.edges.len()];
        for (index, edge) in graph.edges.iter().enumerate() {
            let label_width = if edge.label.is_empty() {
                0.0
            } else {
                text_width(&edge.label, edge.label_font_size)
            };
            if edge.from == edge.to {
                // Self-loops hang off the right side of the box, nested
                // outside earlier loops and their labels.
                let slot = &mut slots[edge.from];
                let border = slot.right - sizes[edge.from].0 / 2.0;
                let reach = (border / 0.75 + 28.0).max(28.0);
                let label_x = 0.75 * reach + edge.pen_width / 2.0 + LABEL_GAP;
                slot.right = sizes[edge.from].0 / 2.0 + label_x + label_width + LABEL_GAP;
                loops[index] = Some((reach, label_x));
                continue;
            }
            let (upper, lower) = oriented(edge, reversed[index]);
            let top = slots[upper].layer;
            let bottom = slots[lower].layer;
            // The label sits in the odd layer nearest the middle.
            let middle = (top + bottom) / 2;
            let label_layer = if middle % 2 == 1 { middle } else { middle - 1 };
            let fraction = if max_weight > 0.0 {
                edge.weight.abs() / max_weight
            } else {
                0.0
            };
            let mut chain = vec![upper];
            for layer in top + 1..bottom {
                let carries_label = layer == label_layer && !edge.label.is_empty();
                let half = edge.pen_width / 2.0 + 1.0;
                slots.push(Slot {
                    layer,
                    left: half,
                    right: if carries_label {
                        half + LABEL_GAP + label_width
                    } else {
                        half
                    },
                    height: if carries_label {
                        LINE_HEIGHT * edge.label_font_size
                    } else {
                        0.0
                    },
                    node: None,
                });
                if carries_label {
                    label_slot[index] = Some(slots.len() - 1);
                }
                chain.push(slots.len() - 1);
            }
            chain.push(lower);
            for pair in chain.windows(2) {
                let dummies = usize::from(slots[pair[0]].node.is_none())
                    + usize::from(slots[pair[1]].node.is_none());
                // dot's Ω (1, 2, 8), steeper: straight long edges matter most.
                let omega = [1.0, 4.0, 32.0][dummies];
                links.push(Link {
                    upper: pair[0],
                    lower: pair[1],
                    pull: omega * (1.0 + 3.0 * fraction),
                    weight: 1.0 + fraction,
                });
            }
            chains[index] = chain;
        }
        let layer_count = slots.iter().map(|s| s.layer + 1).max().unwrap_or(0);
        let mut links_by_layer = vec![Vec::new(); layer_count];
        for (index, link) in links.iter().enumerate() {
            links_by_layer[slots[link.upper].layer].push(index);
        }
        let downs = Adjacency::new(slots.len(), links.iter().map(|l| (l.upper, l.lower)));
        let ups = Adjacency::new(slots.len(), links.iter().map(|l| (l.lower, l.upper)));
        let slot_count = slots.len();
        let mut layered = Layered {
            slots,
            links,
            links_by_layer,
            ups,
            downs,
            order: vec![Vec::new(); layer_count],
            pos: vec![0; slot_count],
            x: vec![0.0; slot_count],
            layer_top: vec![0.0; layer_count],
            layer_height: vec![0.0; layer_count],
            chains,
            label_slot,
            loops,
            node_slot,
            edge_sep: options.edge_sep,
            node_sep: options.node_sep,
        };
        layered.initial_order();
        layered
    }

    /// First order: depth-first discovery from the top, heavier links
    /// first, so that subtrees start out contiguous.
    fn initial_order(&mut self) {
        let mut roots: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.ups.of(s).is_empty())
            .collect();
        roots.sort_by_key(|&s| (self.slots[s].layer, s));
        let mut downs_sorted = self.downs.clone();
        for slot in 0..self.slots.len() {
            downs_sorted.of_mut(slot).sort_by(|a, b| {
                self.links[b.1 as usize]
                    .weight
                    .total_cmp(&self.links[a.1 as usize].weight)
                    .then(a.0.cmp(&b.0))
            });
        }
        let mut seen = vec![false; self.slots.len()];
        let mut stack = Vec::new();
        for root in roots {
            if seen[root] {
                continue;
            }
            seen[root] = true;
            stack.push((root, 0usize));
            self.order[self.slots[root].layer].push(root);
            while let Some(top) = stack.last_mut() {
                let (slot, next) = *top;
                if next < downs_sorted.of(slot).len() {
                    top.1 += 1;
                    let lower = downs_sorted.of(slot)[next].0 as usize;
                    if !seen[lower] {
                        seen[lower] = true;
                        self.order[self.slots[lower].layer].push(lower);
                        stack.push((lower, 0));
                    }
                } else {
                    stack.pop();
                }
            }
        }
        self.update_positions();
    }

    fn update_positions(&mut self) {
        for layer in &self.order {
            for (index, &slot) in layer.iter().enumerate() {
                self.pos[slot] = index;
            }
        }
    }

    /// Crossings between `layer` and the layer below, by counting
    /// inversions with a Fenwick tree.
    fn crossings_below(&self, layer: usize, fenwick: &mut Vec<u32>) -> u64 {
        let mut pairs: Vec<(usize, usize)> = self.links_by_layer[layer]
            .iter()
            .map(|&l| (self.pos[self.links[l].upper], self.pos[self.links[l].lower]))
            .collect();
        if pairs.len() < 2 {
            return 0;
        }
        pairs.sort_unstable();
        let size = self.order.get(layer + 1).map_or(0, Vec::len);
        fenwick.clear();
        fenwick.resize(size + 1, 0);
        let mut crossings = 0u64;
        for (inserted, &(_, lower)) in pairs.iter().enumerate() {
            let inserted = inserted as u64;
            // Count inserted entries with position <= lower.
            let mut not_greater = 0u64;
            let mut i = lower + 1;
            while i > 0 {
                not_greater += u64::from(fenwick[i]);
                i &= i - 1;
            }
            crossings += inserted - not_greater;
            let mut i = lower + 1;
            while i <= size {
                fenwick[i] += 1;
                i += i & i.wrapping_neg();
            }
        }
        crossings
    }

    fn crossings(&self) -> u64 {
        let mut fenwick = Vec::new();
        (0..self.order.len().saturating_sub(1))
            .map(|layer| self.crossings_below(layer, &mut fenwick))
            .sum()
    }

    /// Barycenter sweeps, alternately downwards and upwards, each followed
    /// by transpositions. A sweep that does not beat the best order so far
    /// is undone; once both directions fail from the best order, further
    /// sweeps would repeat themselves, so the search stops.
    fn reduce_crossings(&mut self, passes: usize) {
        let mut best = self.crossings();
        let mut best_order = self.order.clone();
        let mut failures = 0;
        let layer_count = self.order.len();
        for pass in 0..passes {
            if best == 0 || failures >= 2 {
                break;
            }
            if pass % 2 == 0 {
                for layer in 1..layer_count {
                    self.sort_by_barycenter(layer, true);
                }
            } else {
                for layer in (0..layer_count.saturating_sub(1)).rev() {
                    self.sort_by_barycenter(layer, false);
                }
            }
            self.transpose();
            let crossings = self.crossings();
            if crossings < best {
                best = crossings;
                best_order.clone_from(&self.order);
                failures = 0;
            } else {
                self.order.clone_from(&best_order);
                self.update_positions();
                failures += 1;
            }
        }
        self.order = best_order;
        self.update_positions();
    }

    fn sort_by_barycenter(&mut self, layer: usize, from_above: bool) {
        let mut keyed: Vec<(f64, usize, usize)> = self.order[layer]
            .iter()
            .map(|&slot| {
                let neighbours = if from_above {
                    self.ups.of(slot)
                } else {
                    self.downs.of(slot)
                };
                let mut sum = 0.0;
                let mut total = 0.0;
                for &(other, link) in neighbours {
                    let w = self.links[link as usize].weight;
                    sum += w * self.pos[other as usize] as f64;
                    total += w;
                }
                // A slot with no neighbours on that side keeps its place.
                let key = if total > 0.0 {
                    sum / total
                } else {
                    self.pos[slot] as f64
                };
                (key, self.pos[slot], slot)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (index, &(_, _, slot)) in keyed.iter().enumerate() {
            self.order[layer][index] = slot;
            self.pos[slot] = index;
        }
    }

    /// Crossings among the links of `a` and `b` (a left of b) to one side.
    fn pair_crossings(&self, a: usize, b: usize, neighbours: &Adjacency) -> (u64, u64) {
        let mut kept = 0u64;
        let mut swapped = 0u64;
        for &(p, _) in neighbours.of(a) {
            for &(q, _) in neighbours.of(b) {
                let (p, q) = (self.pos[p as usize], self.pos[q as usize]);
                kept += u64::from(p > q);
                swapped += u64::from(p < q);
            }
        }
        (kept, swapped)
    }

    /// Swaps neighbours in a layer while that removes crossings (a few
    /// rounds at most).
    fn transpose(&mut self) {
        for _round in 0..4 {
            let mut improved = false;
            for layer in 0..self.order.len() {
                for index in 0..self.order[layer].len().saturating_sub(1) {
                    let a = self.order[layer][index];
                    let b = self.order[layer][index + 1];
                    let (up_kept, up_swapped) = self.pair_crossings(a, b, &self.ups);
                    let (down_kept, down_swapped) = self.pair_crossings(a, b, &self.downs);
                    if up_swapped + down_swapped < up_kept + down_kept {
                        self.order[layer].swap(index, index + 1);
                        self.pos[a] = index + 1;
                        self.pos[b] = index;
                        improved = true;
                    }
                }
            }
            if !improved {
                break;
            }
        }
    }

    /// Minimum distance between the anchors of two neighbouring slots.
    fn separation(&self, left: usize, right: usize) -> f64 {
        let gap = match (self.slots[left].node, self.slots[right].node) {
            (Some(_), Some(_)) => self.node_sep,
            (None, None) => self.edge_sep,
            _ => (self.node_sep + self.edge_sep) / 2.0,
        };
        self.slots[left].right + gap + self.slots[right].left
    }

    /// Horizontal coordinates: block coordinate descent on the quadratic
    /// energy of the links, each layer solved exactly by isotonic
    /// regression under its separation constraints.
    fn assign_x(&mut self, options: &LayoutOptions) {
        // Slots renumbered in layer order, so that each layer is a
        // contiguous range of the arrays below.
        let slot_count = self.slots.len();
        let layer_count = self.order.len();
        let mut flat_of = vec![0u32; slot_count];
        let mut slot_at = Vec::with_capacity(slot_count);
        let mut layer_start = Vec::with_capacity(layer_count + 1);
        for layer in &self.order {
            layer_start.push(slot_at.len());
            for &slot in layer {
                flat_of[slot] = slot_at.len() as u32;
                slot_at.push(slot);
            }
        }
        layer_start.push(slot_count);
        // Minimum offsets from the first slot of the layer.
        let mut offsets = vec![0.0; slot_count];
        for layer in 0..layer_count {
            for i in layer_start[layer] + 1..layer_start[layer + 1] {
                offsets[i] = offsets[i - 1] + self.separation(slot_at[i - 1], slot_at[i]);
            }
        }
        // Neighbours on both sides, with their pulls.
        let mut neighbour_start = Vec::with_capacity(slot_count + 1);
        let mut neighbours: Vec<(u32, f64)> = Vec::with_capacity(2 * self.links.len());
        let mut total_pull = Vec::with_capacity(slot_count);
        for &slot in &slot_at {
            neighbour_start.push(neighbours.len());
            let mut total = 0.0;
            for &(other, link) in self.ups.of(slot).iter().chain(self.downs.of(slot)) {
                let pull = self.links[link as usize].pull;
                neighbours.push((flat_of[other as usize], pull));
                total += pull;
            }
            total_pull.push(total);
        }
        neighbour_start.push(neighbours.len());
        // Start packed and centred.
        let mut x = vec![0.0; slot_count];
        for layer in 0..layer_count {
            let (first, end) = (layer_start[layer], layer_start[layer + 1]);
            if end > first {
                let half = offsets[end - 1] / 2.0;
                for i in first..end {
                    x[i] = offsets[i] - half;
                }
            }
        }
        let mut blocks: Vec<(usize, f64, f64)> = Vec::new();
        for pass in 0..options.coordinate_passes {
            let mut largest_move: f64 = 0.0;
            for step in 0..layer_count {
                let layer = if pass % 2 == 0 {
                    step
                } else {
                    layer_count - 1 - step
                };
                let (first, end) = (layer_start[layer], layer_start[layer + 1]);
                // Weighted isotonic regression of (target − offset) by
                // pooling adjacent violators; blocks are (first index,
                // total weight, weighted sum).
                blocks.clear();
                for i in first..end {
                    let (target, weight) = if total_pull[i] > 0.0 {
                        let sum: f64 = neighbours[neighbour_start[i]..neighbour_start[i + 1]]
                            .iter()
                            .map(|&(other, pull)| pull * x[other as usize])
                            .sum();
                        (sum / total_pull[i], total_pull[i])
                    } else {
                        // Nothing pulls: stay, and give way to the others.
                        (x[i], 1e-3)
                    };
                    let mut block = (i, weight, weight * (target - offsets[i]));
                    while let Some(&previous) = blocks.last() {
                        if previous.2 / previous.1 >= block.2 / block.1 {
                            blocks.pop();
                            block = (previous.0, previous.1 + block.1, previous.2 + block.2);
                        } else {
                            break;
                        }
                    }
                    blocks.push(block);
                }
                for (b, &(start, weight, sum)) in blocks.iter().enumerate() {
                    let stop = blocks.get(b + 1).map_or(end, |next| next.0);
                    let level = sum / weight;
                    for i in start..stop {
                        let placed = level + offsets[i];
                        largest_move = largest_move.max((placed - x[i]).abs());
                        x[i] = placed;
                    }
                }
            }
            if largest_move < 0.01 {
                break;
            }
        }
        for (i, &slot) in slot_at.iter().enumerate() {
            self.x[slot] = x[i];
        }
    }

    /// Vertical positions of the layers. Arrowheads sit in the gaps, so
    /// each gap grows by the longest arrowhead to leave room for curves.
    fn assign_y(&mut self, options: &LayoutOptions, arrow_length: f64) {
        let gap = options.layer_gap + arrow_length;
        let mut top = 0.0;
        for layer in 0..self.order.len() {
            let height = self.order[layer]
                .iter()
                .map(|&s| self.slots[s].height)
                .fold(0.0, f64::max);
            self.layer_top[layer] = top;
            self.layer_height[layer] = height;
            if !self.order[layer].is_empty() {
                top += height + gap;
            }
        }
    }

    /// Horizontal offsets of the ports of a box's links on one side,
    /// spread in the order of the slots they lead to.
    fn ports(&self, slot: usize, width: f64, below: bool) -> Vec<(usize, f64)> {
        let neighbours = if below {
            self.downs.of(slot)
        } else {
            self.ups.of(slot)
        };
        let mut ends: Vec<(f64, usize, usize)> = neighbours
            .iter()
            .map(|&(other, link)| (self.x[other as usize], other as usize, link as usize))
            .collect();
        ends.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let count = ends.len() as f64;
        let spacing = (0.7 * width / count.max(1.0)).min(16.0);
        ends.iter()
            .enumerate()
            .map(|(i, &(_, _, link))| (link, (i as f64 - (count - 1.0) / 2.0) * spacing))
            .collect()
    }

    fn route(
        &self,
        graph: &LayoutGraph,
        options: &LayoutOptions,
        sizes: &[(f64, f64)],
        reversed: &[bool],
    ) -> Layout {
        let layer_center = |layer: usize| self.layer_top[layer] + self.layer_height[layer] / 2.0;
        let mut nodes: Vec<NodeBox> = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(index, spec)| {
                let slot = self.node_slot[index];
                let (width, height) = sizes[index];
                let left = self.x[slot] - width / 2.0;
                let top = layer_center(self.slots[slot].layer) - height / 2.0;
                let line_height = LINE_HEIGHT * spec.font_size;
                let text_top = top + (height - line_height * spec.lines.len() as f64) / 2.0;
                let lines = spec
                    .lines
                    .iter()
                    .enumerate()
                    .map(|(i, line)| PlacedText {
                        text: line.text.clone(),
                        x: match line.align {
                            Align::Left => left + options.padding_x,
                            Align::Center => left + width / 2.0,
                            Align::Right => left + width - options.padding_x,
                        },
                        baseline: text_top + i as f64 * line_height + BASELINE * spec.font_size,
                        align: line.align,
                        font_size: spec.font_size,
                        width: text_width(&line.text, spec.font_size),
                    })
                    .collect();
                NodeBox {
                    x: left,
                    y: top,
                    width,
                    height,
                    lines,
                }
            })
            .collect();
        // Port offsets per link end at a box.
        let mut port_below = vec![0.0; self.links.len()];
        let mut port_above = vec![0.0; self.links.len()];
        for (index, &slot) in self.node_slot.iter().enumerate() {
            for (link, offset) in self.ports(slot, sizes[index].0, true) {
                port_below[link] = offset;
            }
            for (link, offset) in self.ports(slot, sizes[index].0, false) {
                port_above[link] = offset;
            }
        }
        let mut link_of = std::collections::BTreeMap::new();
        for (index, link) in self.links.iter().enumerate() {
            link_of.insert((link.upper, link.lower), index);
        }
        let mut edges = Vec::with_capacity(graph.edges.len());
        for (index, edge) in graph.edges.iter().enumerate() {
            let label = |x: f64, center_y: f64| {
                (!edge.label.is_empty()).then(|| {
                    let fs = edge.label_font_size;
                    PlacedText {
                        text: edge.label.clone(),
                        x,
                        baseline: center_y - LINE_HEIGHT * fs / 2.0 + BASELINE * fs,
                        align: Align::Left,
                        font_size: fs,
                        width: text_width(&edge.label, fs),
                    }
                })
            };
            if let Some((reach, label_x)) = self.loops[index] {
                let b = &nodes[edge.from];
                let right = b.x + b.width;
                let center_y = b.y + b.height / 2.0;
                let spread = (b.height / 4.0).max(5.0);
                let bulge = reach * 0.3;
                let start = Point::new(right, center_y - spread);
                let tip = Point::new(right, center_y + spread);
                let base = Point::new(right + edge.arrow_length, center_y + spread);
                edges.push(EdgeRoute {
                    start,
                    segments: vec![PathSegment::Cubic(
                        Point::new(right + reach, center_y - spread - bulge),
                        Point::new(right + reach, center_y + spread + bulge),
                        base,
                    )],
                    arrow_tip: tip,
                    arrow_base: base,
                    label: label(right + label_x, center_y),
                    reversed: false,
                });
                continue;
            }
            let chain = &self.chains[index];
            let upper = chain[0];
            let lower = chain[chain.len() - 1];
            let first_link = link_of[&(chain[0], chain[1])];
            let last_link = link_of[&(chain[chain.len() - 2], lower)];
            let upper_box = &nodes[self.slots[upper].node.expect("chain starts at a box")];
            let lower_box = &nodes[self.slots[lower].node.expect("chain ends at a box")];
            let is_reversed = reversed[index];
            let arrow = edge.arrow_length;
            // Waypoints (x, y where the edge enters, y where it leaves).
            let mut waypoints = Vec::with_capacity(chain.len());
            let upper_layer = self.slots[upper].layer;
            let upper_bottom = upper_box.y + upper_box.height;
            let enter = upper_bottom + if is_reversed { arrow } else { 0.0 };
            let layer_bottom = self.layer_top[upper_layer] + self.layer_height[upper_layer];
            waypoints.push((
                self.x[upper] + port_below[first_link],
                enter,
                layer_bottom.max(enter),
            ));
            for &slot in &chain[1..chain.len() - 1] {
                let layer = self.slots[slot].layer;
                let top = self.layer_top[layer];
                waypoints.push((self.x[slot], top, top + self.layer_height[layer]));
            }
            let lower_layer = self.slots[lower].layer;
            let leave = lower_box.y - if is_reversed { 0.0 } else { arrow };
            waypoints.push((
                self.x[lower] + port_above[last_link],
                self.layer_top[lower_layer].min(leave),
                leave,
            ));
            let start = Point::new(waypoints[0].0, waypoints[0].1);
            let mut segments = Vec::new();
            for (i, &(x, enter_y, leave_y)) in waypoints.iter().enumerate() {
                if i > 0 {
                    let (px, _, py) = waypoints[i - 1];
                    if (px - x).abs() < 0.005 {
                        push_vertical(&mut segments, Point::new(x, enter_y));
                    } else {
                        let half = (enter_y - py) / 2.0;
                        segments.push(PathSegment::Cubic(
                            Point::new(px, py + half),
                            Point::new(x, enter_y - half),
                            Point::new(x, enter_y),
                        ));
                    }
                }
                if leave_y > enter_y {
                    push_vertical(&mut segments, Point::new(x, leave_y));
                }
            }
            let label = self.label_slot[index].and_then(|slot| {
                let layer = self.slots[slot].layer;
                label(
                    self.x[slot] + self.slots[slot].left + LABEL_GAP,
                    layer_center(layer),
                )
            });
            let end = Point::new(
                waypoints[waypoints.len() - 1].0,
                waypoints[waypoints.len() - 1].2,
            );
            let route = if is_reversed {
                // Drawn from the original source (below) up to its target.
                let (start, segments) = reverse_path(start, &segments);
                EdgeRoute {
                    start,
                    segments,
                    arrow_tip: Point::new(waypoints[0].0, upper_bottom),
                    arrow_base: Point::new(waypoints[0].0, enter),
                    label,
                    reversed: true,
                }
            } else {
                EdgeRoute {
                    start,
                    segments,
                    arrow_tip: Point::new(end.x, lower_box.y),
                    arrow_base: end,
                    label,
                    reversed: false,
                }
            };
            edges.push(route);
        }
        normalize(&mut nodes, &mut edges, options.margin)
    }
}

/// Appends a vertical line to `end`, extending the previous piece when it
/// is a vertical line too (long straight edges stay one piece).
fn push_vertical(segments: &mut Vec<PathSegment>, end: Point) {
    if let Some(PathSegment::Line(previous)) = segments.last_mut() {
        if (previous.x - end.x).abs() < 0.005 {
            *previous = end;
            return;
        }
    }
    segments.push(PathSegment::Line(end));
}

fn reverse_path(start: Point, segments: &[PathSegment]) -> (Point, Vec<PathSegment>) {
    // The end points, so each reversed piece knows where it now ends.
    let mut points = vec![start];
    for segment in segments {
        points.push(match *segment {
            PathSegment::Line(p) | PathSegment::Cubic(_, _, p) => p,
        });
    }
    let reversed = segments
        .iter()
        .enumerate()
        .rev()
        .map(|(i, segment)| match *segment {
            PathSegment::Line(_) => PathSegment::Line(points[i]),
            PathSegment::Cubic(c1, c2, _) => PathSegment::Cubic(c2, c1, points[i]),
        })
        .collect();
    (points[points.len() - 1], reversed)
}

/// Moves everything so the drawing's bounding box starts at `margin`.
fn normalize(nodes: &mut [NodeBox], edges: &mut [EdgeRoute], margin: f64) -> Layout {
    let mut min = Point::new(f64::INFINITY, f64::INFINITY);
    let mut max = Point::new(f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut include = |x: f64, y: f64| {
        min.x = min.x.min(x);
        min.y = min.y.min(y);
        max.x = max.x.max(x);
        max.y = max.y.max(y);
    };
    for node in nodes.iter() {
        include(node.x, node.y);
        include(node.x + node.width, node.y + node.height);
    }
    for edge in edges.iter() {
        include(edge.start.x, edge.start.y);
        include(edge.arrow_tip.x, edge.arrow_tip.y);
        for segment in &edge.segments {
            match *segment {
                PathSegment::Line(p) => include(p.x, p.y),
                PathSegment::Cubic(c1, c2, p) => {
                    include(c1.x, c1.y);
                    include(c2.x, c2.y);
                    include(p.x, p.y);
                }
            }
        }
        if let Some(label) = &edge.label {
            include(label.x, label.baseline - BASELINE * label.font_size);
            include(
                label.x + label.width,
                label.baseline + (LINE_HEIGHT - BASELINE) * label.font_size,
            );
        }
    }
    if nodes.is_empty() && edges.is_empty() {
        min = Point::new(0.0, 0.0);
        max = Point::new(0.0, 0.0);
    }
    let dx = margin - min.x;
    let dy = margin - min.y;
    let shift = |p: &mut Point| {
        p.x += dx;
        p.y += dy;
    };
    for node in nodes.iter_mut() {
        node.x += dx;
        node.y += dy;
        for line in &mut node.lines {
            line.x += dx;
            line.baseline += dy;
        }
    }
    for edge in edges.iter_mut() {
        shift(&mut edge.start);
        shift(&mut edge.arrow_tip);
        shift(&mut edge.arrow_base);
        for segment in &mut edge.segments {
            match segment {
                PathSegment::Line(p) => shift(p),
                PathSegment::Cubic(c1, c2, p) => {
                    shift(c1);
                    shift(c2);
                    shift(p);
                }
            }
        }
        if let Some(label) = &mut edge.label {
            label.x += dx;
            label.baseline += dy;
        }
    }
    Layout {
        width: max.x - min.x + 2.0 * margin,
        height: max.y - min.y + 2.0 * margin,
        nodes: nodes.to_vec(),
        edges: edges.to_vec(),
    }
}
