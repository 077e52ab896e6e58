//! The call graph as the graphical outputs show it: the [`Graph`] trimmed
//! by the rules of the guide's "Controlling the Call Graph Display", as
//! perl pprof's `PrintDot` applies them, with the numbers of its "Node
//! Information", "Edge Information" and "Meta Information".
//!
//! [`CallGraph::build`] keeps the nodes and edges and says what their
//! labels and the legend read; [`crate::output::dot`] writes them as
//! Graphviz DOT and [`crate::output::svg`] draws them.
//!
//! Trimming, exactly as pprof does it, with `total` the sum of the flat
//! values shown (the "Focusing on" number):
//! - nodes sorted by |cum| descending (ties by name); the first
//!   `--nodecount` are candidates, and of those the ones with
//!   |cum| ≤ `int(nodefraction × total)` are dropped;
//! - edges: only between kept nodes that are adjacent in some stack; taken
//!   in order of decreasing weight, an edge is kept if it is the first one
//!   into its callee (so every kept node stays reachable), else dropped if
//!   its weight is ≤ `int(edgefraction × total)` or if its caller already
//!   has `--maxdegree` kept out-edges or its callee `--maxdegree` kept
//!   in-edges.

use crate::change::NodeChange;
use crate::graph::{percent_base, percent_total, Graph};
use crate::measure::{percent, ValueFormat};
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};

/// pprof's default `--nodecount` for graphs.
pub const DEFAULT_NODECOUNT: usize = 80;

/// A kept node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGraphNode {
    /// Its frame in the [`Stacks`].
    pub frame: FrameId,
    /// The frame's name.
    pub name: String,
    /// Local (flat) value.
    pub flat: i64,
    /// Cumulative value.
    pub cum: i64,
}

/// A kept edge, caller → callee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGraphEdge {
    /// Index of the caller in [`CallGraph::nodes`].
    pub caller: usize,
    /// Index of the callee in [`CallGraph::nodes`].
    pub callee: usize,
    /// Value of the samples in which the caller called the callee.
    pub weight: i64,
    /// The callee is an inlined call (drawn dashed).
    pub inlined: bool,
}

/// The trimmed call graph and its legend numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGraph {
    /// The program, first line of the legend.
    pub program: String,
    /// How values are printed, and the word after totals (`samples`,
    /// `MB`, `cpu`).
    pub values: ValueFormat,
    /// Total of all samples, before focus and ignore ("Total samples");
    /// in a diff, the base's.
    pub grand_total: i64,
    /// Total of the flat values shown, percentages are relative to it
    /// ("Focusing on"); in a diff, the base's total.
    pub local_total: i64,
    /// In a diff (`--base`), the sum of the changes shown ("Focusing on").
    pub changes_total: Option<i64>,
    /// Nodes with |cum| at most this were dropped.
    pub node_limit: i64,
    /// Extra legend lines after the standard five (e.g. that the profile
    /// has no call stacks).
    pub notes: Vec<String>,
    /// Edges with weight at most this were dropped (unless needed to reach
    /// their callee).
    pub edge_limit: i64,
    /// Kept nodes, by |cum| descending then name: `N1`, `N2`, … in DOT.
    pub nodes: Vec<CallGraphNode>,
    /// Kept edges, by weight descending.
    pub edges: Vec<CallGraphEdge>,
    /// Per node, its shares' intervals for its tooltip (`--confidence`);
    /// empty when not asked.
    pub node_intervals: Vec<String>,
    /// In a diff: per node, whether its share grew or shrank significantly
    /// (the colours of the graph; see [`CallGraph::mark_changes`]); empty
    /// outside a diff.
    pub node_changes: Vec<NodeChange>,
}

/// Nothing is left to draw (pprof: "No nodes to print").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoNodes;

impl std::fmt::Display for NoNodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "no nodes to print (every node is below --nodefraction, or the profile is empty)",
        )
    }
}

impl std::error::Error for NoNodes {}

impl CallGraph {
    /// Trims `graph` (its nodes; edges between the kept nodes are counted
    /// here, see [`Graph::edges_among`]) by `options`: `nodecount` (default
    /// [`DEFAULT_NODECOUNT`]), `nodefraction`, `edgefraction`, `maxdegree`.
    pub fn build(
        program: &str,
        stacks: &Stacks,
        graph: &Graph,
        options: &Options,
    ) -> Result<CallGraph, NoNodes> {
        // In a diff, the base's total (Go's `-diff_base`): percentages
        // and cutoffs are of it.
        let local_total = percent_total(stacks, graph);
        // pprof truncates the limits to integers.
        let node_limit = (options.nodefraction * local_total as f64) as i64;
        let edge_limit = (options.edgefraction * local_total as f64) as i64;
        let nodecount = options.nodecount.unwrap_or(DEFAULT_NODECOUNT);

        let mut order: Vec<usize> = (0..graph.nodes.len())
            .filter(|&i| graph.nodes[i].flat != 0 || graph.nodes[i].cum != 0)
            .collect();
        let name = |i: usize| stacks.frame(FrameId(i as u32)).name.as_str();
        order.sort_by(|&a, &b| {
            graph.nodes[b]
                .cum
                .abs()
                .cmp(&graph.nodes[a].cum.abs())
                .then_with(|| name(a).cmp(name(b)))
        });
        order.truncate(nodecount);
        // pprof drops from the end while |cum| <= limit; the list is sorted
        // by |cum|, so that is every candidate at or below the limit.
        while order
            .last()
            .is_some_and(|&i| graph.nodes[i].cum.abs() <= node_limit)
        {
            order.pop();
        }
        if order.is_empty() {
            return Err(NoNodes);
        }
        let mut index_of = vec![usize::MAX; graph.nodes.len()];
        let nodes: Vec<CallGraphNode> = order
            .iter()
            .enumerate()
            .map(|(index, &i)| {
                index_of[i] = index;
                CallGraphNode {
                    frame: FrameId(i as u32),
                    name: name(i).to_string(),
                    flat: graph.nodes[i].flat,
                    cum: graph.nodes[i].cum,
                }
            })
            .collect();

        // Edges between kept nodes, by |weight| descending (ties by caller,
        // callee): the order pprof considers them in.
        let kept: Vec<FrameId> = order.iter().map(|&i| FrameId(i as u32)).collect();
        let mut indegree = vec![0usize; nodes.len()];
        let mut outdegree = vec![0usize; nodes.len()];
        let mut edges = Vec::new();
        for edge in &Graph::edges_among(stacks, &kept) {
            let (caller, callee) = (index_of[edge.caller.index()], index_of[edge.callee.index()]);
            let keep = if indegree[callee] == 0 {
                true
            } else if edge.weight.abs() <= edge_limit {
                false
            } else {
                outdegree[caller] < options.maxdegree && indegree[callee] < options.maxdegree
            };
            if keep {
                outdegree[caller] += 1;
                indegree[callee] += 1;
                edges.push(CallGraphEdge {
                    caller,
                    callee,
                    weight: edge.weight,
                    inlined: edge.inlined,
                });
            }
        }
        Ok(CallGraph {
            node_intervals: Vec::new(),
            node_changes: Vec::new(),
            program: program.to_string(),
            values: ValueFormat::of(stacks.profile(), &stacks.sample_type, &options.unit),
            grand_total: stacks.percent_total(),
            local_total,
            changes_total: stacks.base_total.map(|_| percent_base(graph)),
            node_limit,
            edge_limit,
            notes: Vec::new(),
            nodes,
            edges,
        })
    }

    /// The legend lines ("Meta Information").
    pub fn legend(&self) -> Vec<String> {
        let word = self.values.word();
        let total = match self.changes_total {
            Some(_) => format!(
                "Total {word} in the base: {} (values are changes from it)",
                self.value(self.grand_total)
            ),
            None => format!("Total {word}: {}", self.value(self.grand_total)),
        };
        let mut lines = vec![
            self.program.clone(),
            total,
            format!(
                "Focusing on: {}",
                self.value(self.changes_total.unwrap_or(self.local_total))
            ),
            format!(
                "Dropped nodes with <= {} abs({word})",
                self.value(self.node_limit)
            ),
            format!(
                "Dropped edges with <= {} {word}",
                self.value(self.edge_limit)
            ),
        ];
        lines.extend(self.notes.iter().cloned());
        lines
    }

    /// The graph's title: `program; N samples`.
    pub fn title(&self) -> String {
        format!(
            "{}; {} {}",
            self.program,
            self.value(self.grand_total),
            self.values.word()
        )
    }

    /// A node's or an edge's value as the graph prints it.
    pub fn value(&self, value: i64) -> String {
        self.values.value(value)
    }

    /// pprof's font size of a node: `8 + 50·√(|flat| / total)`.
    pub fn font_size(&self, node: &CallGraphNode) -> f64 {
        if self.local_total != 0 {
            8.0 + 50.0 * (node.flat as f64 / self.local_total as f64).abs().sqrt()
        } else {
            8.0
        }
    }

    /// The name lines of a node: pprof breaks names at whitespace and at
    /// `::` ("Class Name", "Method Name").
    pub fn name_lines(name: &str) -> Vec<String> {
        name.split_whitespace()
            .flat_map(|word| word.split("::"))
            .map(str::to_string)
            .collect()
    }

    /// The value lines of a node: `flat (pct)`, and `of cum (pct)` when
    /// cum differs from flat.
    pub fn value_lines(&self, node: &CallGraphNode) -> Vec<String> {
        let mut lines = vec![format!(
            "{} ({})",
            self.value(node.flat),
            percent(node.flat, self.local_total)
        )];
        if node.flat != node.cum {
            lines.push(format!(
                "of {} ({})",
                self.value(node.cum),
                percent(node.cum, self.local_total)
            ));
        }
        lines
    }

    /// Marks a diff's nodes by `change_of` their name (`None`: not
    /// compared, drawn as noise), and says in the legend what the colours
    /// mean, `how` the changes were tested.
    pub fn mark_changes(&mut self, change_of: impl Fn(&str) -> Option<NodeChange>, how: &str) {
        self.node_changes = self
            .nodes
            .iter()
            .map(|n| change_of(&n.name).unwrap_or(NodeChange::Noise))
            .collect();
        self.notes.push(format!(
            "Colours: significant changes of share only ({how}): red grew, green shrank; grey: noise"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_break_at_spaces_and_scopes() {
        assert_eq!(
            CallGraph::name_lines("std::vector::push_back"),
            ["std", "vector", "push_back"]
        );
        assert_eq!(
            CallGraph::name_lines("burn_a spin.c:42"),
            ["burn_a", "spin.c:42"]
        );
        assert_eq!(CallGraph::name_lines("main"), ["main"]);
    }
}
