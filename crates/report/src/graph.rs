//! The call graph of a report: one node per frame with its flat and
//! cumulative value, and caller→callee edges weighted by the value of the
//! samples in which the caller called the callee.
//!
//! Recursion counts once: a frame appearing several times in one stack
//! adds that sample's value to its cum once, and an edge appearing several
//! times in one stack adds it once.

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
    /// reports do not need them).
    pub fn build(stacks: &Stacks, with_edges: bool) -> Graph {
        let n = stacks.frames.len();
        let mut nodes = vec![Node::default(); n];
        // last_seen[f] == sample number + 1 when f was already counted in cum.
        let mut last_seen = vec![0u32; n];
        let mut edge_weights: FxHashMap<(FrameId, FrameId), i64> = FxHashMap::default();
        let mut pairs: Vec<(FrameId, FrameId)> = Vec::new();
        for (i, (frames, value)) in stacks.iter().enumerate() {
            let stamp = i as u32 + 1;
            if let Some(leaf) = frames.first() {
                nodes[leaf.index()].flat += value;
            }
            let mut repeated = false;
            for f in frames {
                let seen = &mut last_seen[f.index()];
                if *seen == stamp {
                    repeated = true;
                } else {
                    *seen = stamp;
                    nodes[f.index()].cum += value;
                }
            }
            if with_edges && frames.len() > 1 {
                if repeated {
                    pairs.clear();
                    pairs.extend(frames.windows(2).map(|w| (w[1], w[0])));
                    pairs.sort_unstable();
                    pairs.dedup();
                    for &pair in &pairs {
                        *edge_weights.entry(pair).or_insert(0) += value;
                    }
                } else {
                    for w in frames.windows(2) {
                        *edge_weights.entry((w[1], w[0])).or_insert(0) += value;
                    }
                }
            }
        }
        let mut edges: Vec<Edge> = edge_weights
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
        Graph { nodes, edges }
    }

    /// The node of `id`.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
}
