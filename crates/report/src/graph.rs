//! The call graph of a report: one node per frame with its flat and
//! cumulative value, and caller→callee edges weighted by the value of the
//! samples in which the caller called the callee.
//!
//! Recursion counts once: a frame appearing several times in one stack
//! adds that sample's value to its cum once, and an edge appearing several
//! times in one stack adds it once.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::measure::Measure;
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};

/// Index into [`Graph::nodes`]; the same index as the node's frame in
/// [`Stacks::frames`].
pub type NodeId = FrameId;

/// A node: a frame and its values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Value of the samples whose leaf is this frame.
    pub flat: i64,
    /// Value of the samples with this frame anywhere in their stack.
    pub cum: i64,
}

/// A caller→callee edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The calling frame.
    pub caller: NodeId,
    /// The called frame.
    pub callee: NodeId,
    /// Value of the samples in which `caller` called `callee`.
    pub weight: i64,
    /// The call was inlined (the callee frame is an inlined call).
    pub inlined: bool,
}

impl Edge {
    /// The edge `caller` → `callee` of `stacks`, inlined when the callee
    /// frame is an inlined call.
    fn new(stacks: &Stacks, caller: NodeId, callee: NodeId, weight: i64) -> Edge {
        Edge {
            caller,
            callee,
            weight,
            inlined: stacks.frame(callee).inlined,
        }
    }
}

/// The call graph of a [`Stacks`].
#[derive(Clone, Debug)]
pub struct Graph {
    /// One node per frame of the stacks, at the frame's index.
    pub nodes: Vec<Node>,
    /// Edges, sorted by decreasing weight, then caller, then callee.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Builds the graph. Edges are computed only when `with_edges` (text
    /// reports do not need them). Samples are processed in parallel chunks.
    pub fn build(stacks: &Stacks, with_edges: bool) -> Graph {
        let n = stacks.frames.len();
        let partials: Vec<Partial> = sample_ranges(stacks)
            .into_par_iter()
            .map(|range| Partial::of(stacks, range, n, with_edges))
            .collect();
        let mut partials = partials.into_iter();
        let mut total = partials.next().unwrap_or_else(|| Partial::empty(n));
        for p in partials {
            for (a, b) in total.nodes.iter_mut().zip(&p.nodes) {
                a.flat += b.flat;
                a.cum += b.cum;
            }
            for (k, v) in p.edges {
                *total.edges.entry(k).or_insert(0) += v;
            }
        }
        let mut edges: Vec<Edge> = total
            .edges
            .into_iter()
            .map(|((caller, callee), weight)| Edge::new(stacks, caller, callee, weight))
            .collect();
        sort_edges(&mut edges);
        Graph {
            nodes: total.nodes,
            edges,
        }
    }

    /// The node of `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The edges between the frames in `kept` only, as [`Graph::build`]
    /// would give them (recursion counted once, sorted the same way), but
    /// without building the whole edge set: a call graph keeps at most a
    /// few hundred nodes, while a big profile has millions of distinct
    /// caller→callee pairs. Pairs are counted in a dense matrix of the kept
    /// nodes when it is small, samples in parallel chunks.
    pub fn edges_among(stacks: &Stacks, kept: &[FrameId]) -> Vec<Edge> {
        let k = kept.len();
        let mut slot = vec![u32::MAX; stacks.frames.len()];
        for (i, f) in kept.iter().enumerate() {
            slot[f.index()] = i as u32;
        }
        let partials: Vec<EdgeCounts> = sample_ranges(stacks)
            .into_par_iter()
            .map(|range| EdgeCounts::of(stacks, range, &slot, k))
            .collect();
        let mut partials = partials.into_iter();
        let mut total = partials.next().unwrap_or_else(|| EdgeCounts::new(k));
        for p in partials {
            total.add(p);
        }
        let mut edges: Vec<Edge> = total
            .pairs(k)
            .map(|(caller, callee, weight)| {
                Edge::new(stacks, kept[caller as usize], kept[callee as usize], weight)
            })
            .collect();
        sort_edges(&mut edges);
        edges
    }
}

impl Graph {
    /// The edges between adjacent frames of the stacks of which at least
    /// one end is `matched` (indexed by frame): what [`Graph::edges_among`]
    /// gives for the matched frames and their neighbours, less the edges
    /// between two neighbours, counted in one pass that looks up a pair
    /// only when an end matches (peek on a big profile).
    pub fn edges_touching(stacks: &Stacks, matched: &[bool]) -> Vec<Edge> {
        let partials: Vec<FxHashMap<(FrameId, FrameId), i64>> = sample_ranges(stacks)
            .into_par_iter()
            .map(|range| {
                let mut counts: FxHashMap<(FrameId, FrameId), i64> = FxHashMap::default();
                let mut frames = Vec::with_capacity(256);
                let mut pairs: Vec<(FrameId, FrameId)> = Vec::new();
                for i in range {
                    let value = stacks.expand(i, &mut frames);
                    pairs.clear();
                    pairs.extend(
                        frames
                            .windows(2)
                            .filter(|w| matched[w[0].index()] || matched[w[1].index()])
                            .map(|w| (w[1], w[0])),
                    );
                    if pairs.len() > 1 {
                        pairs.sort_unstable();
                        pairs.dedup();
                    }
                    for &pair in &pairs {
                        *counts.entry(pair).or_insert(0) += value;
                    }
                }
                counts
            })
            .collect();
        let mut partials = partials.into_iter();
        let mut total = partials.next().unwrap_or_default();
        for p in partials {
            for (k, v) in p {
                *total.entry(k).or_insert(0) += v;
            }
        }
        let mut edges: Vec<Edge> = total
            .into_iter()
            .map(|((caller, callee), weight)| Edge::new(stacks, caller, callee, weight))
            .collect();
        sort_edges(&mut edges);
        edges
    }
}

/// Sample index ranges for the parallel passes: one when the profile is
/// small, else two per thread.
fn sample_ranges(stacks: &Stacks) -> Vec<std::ops::Range<usize>> {
    let parts = if stacks.len() < 20_000 {
        1
    } else {
        rayon::current_num_threads() * 2
    };
    let size = stacks.len().div_ceil(parts).max(1);
    (0..stacks.len())
        .step_by(size)
        .map(|a| a..(a + size).min(stacks.len()))
        .collect()
}

/// By decreasing |weight|, then caller, then callee.
fn sort_edges(edges: &mut [Edge]) {
    edges.sort_unstable_by(|a, b| {
        b.weight
            .abs()
            .cmp(&a.weight.abs())
            .then(a.caller.cmp(&b.caller))
            .then(a.callee.cmp(&b.callee))
    });
}

/// Largest number of kept nodes counted in a dense matrix (512 KiB).
const DENSE_LIMIT: usize = 256;

/// Edge weights between kept nodes (by their index in the kept list).
enum EdgeCounts {
    Dense(Vec<i64>),
    Sparse(FxHashMap<(u32, u32), i64>),
}

impl EdgeCounts {
    fn new(k: usize) -> EdgeCounts {
        if k <= DENSE_LIMIT {
            EdgeCounts::Dense(vec![0; k * k])
        } else {
            EdgeCounts::Sparse(FxHashMap::default())
        }
    }

    #[inline]
    fn bump(&mut self, k: usize, (caller, callee): (u32, u32), value: i64) {
        match self {
            EdgeCounts::Dense(m) => m[caller as usize * k + callee as usize] += value,
            EdgeCounts::Sparse(m) => *m.entry((caller, callee)).or_insert(0) += value,
        }
    }

    fn of(stacks: &Stacks, range: std::ops::Range<usize>, slot: &[u32], k: usize) -> EdgeCounts {
        let mut counts = EdgeCounts::new(k);
        let mut frames = Vec::with_capacity(256);
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        // seen[i] == sample number + 1 when kept node i already occurred.
        let mut seen = vec![0u32; k];
        for i in range {
            let value = stacks.expand(i, &mut frames);
            let stamp = i as u32 + 1;
            pairs.clear();
            let mut repeated = false;
            let mut callee = frames.first().map_or(u32::MAX, |f| slot[f.index()]);
            if callee != u32::MAX {
                seen[callee as usize] = stamp;
            }
            for f in frames.iter().skip(1) {
                let caller = slot[f.index()];
                if caller != u32::MAX {
                    if seen[caller as usize] == stamp {
                        repeated = true;
                    }
                    seen[caller as usize] = stamp;
                    if callee != u32::MAX {
                        pairs.push((caller, callee));
                    }
                }
                callee = caller;
            }
            if repeated {
                pairs.sort_unstable();
                pairs.dedup();
            }
            for &pair in &pairs {
                counts.bump(k, pair, value);
            }
        }
        counts
    }

    fn add(&mut self, other: EdgeCounts) {
        match (self, other) {
            (EdgeCounts::Dense(a), EdgeCounts::Dense(b)) => {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
            }
            (EdgeCounts::Sparse(a), EdgeCounts::Sparse(b)) => {
                for (key, v) in b {
                    *a.entry(key).or_insert(0) += v;
                }
            }
            _ => unreachable!("partials of one pass have the same shape"),
        }
    }

    /// The counted pairs: (caller, callee, weight), weight ≠ 0.
    fn pairs(self, k: usize) -> Box<dyn Iterator<Item = (u32, u32, i64)>> {
        match self {
            EdgeCounts::Dense(m) => Box::new(
                m.into_iter()
                    .enumerate()
                    .filter(|&(_, w)| w != 0)
                    .map(move |(i, w)| ((i / k) as u32, (i % k) as u32, w)),
            ),
            EdgeCounts::Sparse(m) => Box::new(
                m.into_iter()
                    .filter(|&(_, w)| w != 0)
                    .map(|((a, b), w)| (a, b, w)),
            ),
        }
    }
}

/// The graph of a range of samples.
struct Partial {
    nodes: Vec<Node>,
    edges: FxHashMap<(FrameId, FrameId), i64>,
}

impl Partial {
    fn empty(n: usize) -> Partial {
        Partial {
            nodes: vec![Node::default(); n],
            edges: FxHashMap::default(),
        }
    }

    fn of(stacks: &Stacks, range: std::ops::Range<usize>, n: usize, with_edges: bool) -> Partial {
        let mut part = Partial::empty(n);
        // last_seen[f] == sample number + 1 when f was already counted in cum.
        let mut last_seen = vec![0u32; n];
        let mut pairs: Vec<(FrameId, FrameId)> = Vec::new();
        let mut frames = Vec::with_capacity(256);
        // Samples of one stack are summed before their frames are counted:
        // a profile with every sample's time keeps each one apart, and its
        // stacks repeat (the first kept sample of a stack stands for it).
        let distinct = distinct_stacks(stacks, range);
        for (i, value) in distinct {
            stacks.expand(i, &mut frames);
            let stamp = i as u32 + 1;
            if let Some(leaf) = frames.first() {
                part.nodes[leaf.index()].flat += value;
            }
            let mut repeated = false;
            for f in &frames {
                let seen = &mut last_seen[f.index()];
                if *seen == stamp {
                    repeated = true;
                } else {
                    *seen = stamp;
                    part.nodes[f.index()].cum += value;
                }
            }
            if with_edges && frames.len() > 1 {
                pairs.clear();
                pairs.extend(frames.windows(2).map(|w| (w[1], w[0])));
                if repeated {
                    pairs.sort_unstable();
                    pairs.dedup();
                }
                for &pair in &pairs {
                    *part.edges.entry(pair).or_insert(0) += value;
                }
            }
        }
        part
    }
}

/// The kept samples of `range` as (a sample of each distinct stack, the
/// sum of their values), in order of first appearance. When the first
/// samples show stacks that hardly repeat (a profile whose samples were
/// summed by stack already), every sample stands for itself: the hashing
/// would only add to the cost.
fn distinct_stacks(stacks: &Stacks, range: std::ops::Range<usize>) -> Vec<(usize, i64)> {
    const PROBE: usize = 1024;
    let probe = range.start..range.end.min(range.start + PROBE);
    let mut index: FxHashMap<crate::stacks::StackKey, usize> = FxHashMap::default();
    let mut out: Vec<(usize, i64)> = Vec::new();
    let add = |i: usize, index: &mut FxHashMap<_, usize>, out: &mut Vec<(usize, i64)>| {
        let value = stacks.value(i);
        match index.entry(stacks.stack_key(i)) {
            std::collections::hash_map::Entry::Occupied(e) => out[*e.get()].1 += value,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push((i, value));
            }
        }
    };
    for i in probe.clone() {
        add(i, &mut index, &mut out);
    }
    if probe.len() == PROBE && out.len() * 2 > PROBE {
        out.extend((probe.end..range.end).map(|i| (i, stacks.value(i))));
        return out;
    }
    for i in probe.end..range.end {
        add(i, &mut index, &mut out);
    }
    out
}

/// One row of the text report (and of `--tree`, `--json`): a node's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The frame of the row.
    pub frame: FrameId,
    /// Its flat value.
    pub flat: i64,
    /// Its cumulative value.
    pub cum: i64,
}

/// The rows of the report in print order: by flat (or cum) descending,
/// ties by name; rows whose flat and cum are both zero are left out;
/// at most `options.nodecount` rows.
pub fn rows(stacks: &Stacks, graph: &Graph, options: &Options) -> Vec<Row> {
    rows_keeping(stacks, graph, options, &|_| false)
}

/// [`rows`], keeping also the frames `keep` names whose flat and cum are
/// both zero: in a diff, a function whose value did not change but whose
/// share of the total did (`--confidence` shows it).
pub fn rows_keeping(
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    keep: &dyn Fn(FrameId) -> bool,
) -> Vec<Row> {
    let mut rows: Vec<Row> = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.flat != 0 || n.cum != 0 || keep(FrameId(*i as u32)))
        .filter(|(_, n)| !(options.drop_negative && n.cum < 0))
        .map(|(i, n)| Row {
            frame: FrameId(i as u32),
            flat: n.flat,
            cum: n.cum,
        })
        .collect();
    let key = |r: &Row| if options.cum { r.cum } else { r.flat };
    rows.sort_unstable_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then_with(|| stacks.frame(a.frame).name.cmp(&stacks.frame(b.frame).name))
    });
    if let Some(n) = options.nodecount {
        rows.truncate(n);
    }
    rows
}

/// The total the percentages of a report are relative to: the sum of the
/// flat values of the kept samples.
pub fn percent_base(graph: &Graph) -> i64 {
    graph.nodes.iter().map(|n| n.flat).sum()
}

/// What the percentages of a report over `stacks` are of: the kept
/// samples' total ([`percent_base`]), or in a diff the base's total
/// ([`Stacks::with_base`]), as Go pprof's `-diff_base` prints changes
/// (over an empty base, the kept samples' total, as Go's).
pub fn percent_total(stacks: &Stacks, graph: &Graph) -> i64 {
    stacks.nonzero_base().unwrap_or_else(|| percent_base(graph))
}

/// What a value may fall short of a cutoff by and still reach it (see
/// [`trim_rows`]).
pub const CUTOFF_SLACK: f64 = 1e-6;

/// The rows Go pprof's `-top` and `-tree` keep, in [`rows`]'s order
/// (`options.nodecount` aside): those whose |cum| reaches `node_cutoff`,
/// then at most `nodecount`; with the number dropped below the cutoff and
/// the number before `nodecount`. Go compares whole numbers of the sample
/// unit; the slack keeps a value exactly at the cutoff whatever the
/// rounding of `total * fraction`.
/// The frames `keep` names are kept whatever their values (see
/// [`rows_keeping`]).
pub fn trim_rows(
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    node_cutoff: f64,
    nodecount: Option<usize>,
    keep: &dyn Fn(FrameId) -> bool,
) -> (Vec<Row>, usize, usize) {
    let all = Options {
        nodecount: None,
        ..options.clone()
    };
    let mut rows = rows_keeping(stacks, graph, &all, keep);
    let before = rows.len();
    rows.retain(|r| r.cum.abs() as f64 + CUTOFF_SLACK >= node_cutoff || keep(r.frame));
    let dropped = before - rows.len();
    let candidates = rows.len();
    if let Some(n) = nodecount {
        rows.truncate(n);
    }
    (rows, dropped, candidates)
}

/// The measure of a report's rows (time, bytes) under the `unit` setting,
/// as Go pprof's `selectOutputUnit` chooses it: over each row's flat, or
/// its cum when its flat is zero, with the report's `total`.
pub fn row_measure(stacks: &Stacks, options: &Options, rows: &[Row], total: i64) -> Measure {
    Measure::select(
        &stacks.sample_type.unit,
        &options.unit,
        rows.iter()
            .map(|r| if r.flat != 0 { r.flat } else { r.cum }),
        total,
        false,
    )
}
