//! Reports: the view of a symbolized profile that every output reads, and
//! the outputs.
//!
//! The pipeline: [`Stacks::build`] turns a [`cpuprof_profile::Profile`]
//! into stacks of [`Frame`]s at the chosen [`Granularity`], with the
//! profiler's own frames removed and `--focus`/`--ignore`/`--hide` applied;
//! [`Graph::build`] makes the call graph (flat and cumulative values per
//! node, caller→callee edges); each output module renders one of them.
//!
//! The call-graph outputs: [`callgraph::CallGraph`] trims the graph as
//! pprof does (`--nodecount`, `--nodefraction`, `--edgefraction`,
//! `--maxdegree`); [`dot`] writes it as Graphviz DOT; [`layout`] places a
//! directed graph in layers (boxes, smooth edges, labels) without
//! Graphviz, and [`svg`] draws the call graph with it as standalone SVG.
//!
//! The stack and machine-readable outputs: [`collapsed`] (folded stacks),
//! [`traces`] (every distinct stack), [`tree`] (callers and callees per
//! node), [`json`] (the text report's rows), [`callgrind`] (KCachegrind),
//! [`raw`] (perl pprof's symbolized raw profile).
#![deny(missing_docs)]

pub mod callgraph;
pub mod callgrind;
pub mod collapsed;
pub mod dcpiprof;
pub mod dot;
pub mod executable;
pub mod flame;
pub mod gprof;
pub mod graph;
pub mod json;
pub mod layout;
pub mod names;
pub mod options;
pub mod raw;
pub mod stacks;
pub mod svg;
pub mod text;
pub mod traces;
pub mod tree;

pub use graph::{Edge, Graph, Node, NodeId};
pub use options::{Granularity, Options};
pub use stacks::{Frame, FrameId, Stacks};
