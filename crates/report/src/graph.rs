//! The call graph of a report: one node per frame with its flat and
//! cumulative value, and caller→callee edges weighted by the value of the
//! samples in which the caller called the callee.
//!
//! Recursion counts once: a frame appearing several times in one stack
//! adds that sample's value to its cum once, and an edge appearing several
//! times in one stack adds it once.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

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
        let parts = if stacks.len() < 20_000 {
            1
        } else {
            rayon::current_num_threads() * 2
        };
        let size = stacks.len().div_ceil(parts).max(1);
        let ranges: Vec<std::ops::Range<usize>> = (0..stacks.len())
            .step_by(size)
            .map(|a| a..(a + size).min(stacks.len()))
            .collect();
        let partials: Vec<Partial> = ranges
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
            .map(|((caller, callee), weight)| Edge {
                caller,
                callee,
                weight,
                inlined: stacks.frame(callee).inlined,
            })
            .collect();
        edges.sort_by(|a, b| {
            b.weight
                .abs()
                .cmp(&a.weight.abs())
                .then(a.caller.cmp(&b.caller))
                .then(a.callee.cmp(&b.callee))
        });
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
        for i in range {
            let value = stacks.expand(i, &mut frames);
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
