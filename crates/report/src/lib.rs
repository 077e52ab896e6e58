//! Reports: the view of a symbolized profile that every output reads, and
//! the outputs.
//!
//! The pipeline: [`Stacks::build`] turns a [`cpuprof_profile::Profile`]
//! into stacks of [`Frame`]s at the chosen [`Granularity`], with the
//! profiler's own frames removed and `--focus`/`--ignore`/`--hide`/`--show`/
//! `--show_from` applied;
//! [`Graph::build`] makes the call graph (flat and cumulative values per
//! node, caller→callee edges); each output module renders one of them.
//!
//! The call-graph outputs: [`callgraph::CallGraph`] trims the graph as
//! pprof does (`--nodecount`, `--nodefraction`, `--edgefraction`,
//! `--maxdegree`); [`dot`] writes it as Graphviz DOT; [`layout`] places a
//! directed graph in layers (boxes, smooth edges, labels) without
//! Graphviz, and [`svg`] draws the call graph with it as standalone SVG.
//!
//! The annotated listings: [`listing`] (`--list`, source lines) and
//! [`disasm`] (`--disasm`, instructions), with source files found by
//! [`source::SourceFiles`]; [`weblist`] puts both on one HTML page.
//!
//! The stack and machine-readable outputs: [`collapsed`] (folded stacks),
//! [`traces`] (every distinct stack), [`tree`] (callers and callees per
//! node, and `peek`), [`json`] (the text report's rows), [`callgrind`] (KCachegrind),
//! [`raw`] (perl pprof's symbolized raw profile).
//!
//! Sample labels: [`tags`] (`--tags`, `--tagfocus`/`--tagignore`,
//! `--tagshow`/`--taghide`, `--tagroot`/`--tagleaf` pseudo-frames).
#![deny(missing_docs)]

pub mod callgraph;
pub mod callgrind;
pub mod collapsed;
pub mod dcpiprof;
pub mod disasm;
pub mod dot;
pub mod executable;
pub mod filtered;
pub mod flame;
pub mod gprof;
pub mod graph;
pub mod json;
pub mod layout;
pub mod listing;
pub mod names;
pub mod options;
pub mod raw;
pub mod source;
pub mod stacks;
pub mod stats;
pub mod svg;
pub mod tags;
pub mod text;
pub mod traces;
pub mod tree;
pub mod weblist;

pub use graph::{Edge, Graph, Node, NodeId};
pub use options::{Granularity, Options};
pub use stacks::{Frame, FrameId, Stacks};

/// True when no sample that counts at `sample_index` has a call stack
/// (every one is a single address): DCPI profiles and gmon.out histograms.
/// False for a profile without such samples.
pub fn has_no_call_stacks(profile: &cpuprof_profile::Profile, sample_index: usize) -> bool {
    let mut counted = false;
    for sample in &profile.samples {
        if sample.values.get(sample_index).copied().unwrap_or(0) == 0 {
            continue;
        }
        if sample.locations.len() > 1 {
            return false;
        }
        counted = true;
    }
    counted
}

/// What graph and flame outputs say about a profile for which
/// [`has_no_call_stacks`] holds; it points at the call counts when the
/// profile has them (gmon.out's arcs).
pub fn no_call_stacks_note(profile: &cpuprof_profile::Profile, sample_index: usize) -> String {
    let mut note = String::from(
        "this profile has no call stacks (it counts samples per address): no edges, cum = flat",
    );
    let arcs = profile.sample_index("calls").filter(|&calls| {
        calls != sample_index
            && profile
                .samples
                .iter()
                .any(|s| s.locations.len() > 1 && s.values.get(calls).is_some_and(|&v| v != 0))
    });
    if arcs.is_some() {
        note.push_str("; --sample_index=calls shows its call arcs (gprof's call graph)");
    }
    note
}
