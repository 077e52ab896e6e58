//! Reports: the view of a symbolized profile that every output reads,
//! and the outputs. The crate has two floors, and the folders show them.
//!
//! **The view** (the modules at the crate root) is what a report is
//! computed from:
//! - [`stacks`]: [`Stacks::build`] turns a [`cpuprof_profile::Profile`]
//!   into stacks of [`Frame`]s at the chosen [`Granularity`], with the
//!   profiler's own frames removed and `--focus`/`--ignore`/`--hide`/
//!   `--show`/`--show_from` applied ([`options`] holds those settings);
//! - [`graph`]: [`Graph::build`] makes the call graph (flat and
//!   cumulative values per node, caller→callee edges) and the report's
//!   rows; [`callgraph`] trims it as pprof does for the graph outputs
//!   (`--nodecount`, `--nodefraction`, `--edgefraction`, `--maxdegree`)
//!   and says what its labels and legend read;
//! - [`distinct`]: the distinct stacks; [`lines`] and [`instructions`]:
//!   source lines and instructions annotated with values, with source
//!   files found by [`source::SourceFiles`] and binaries read by
//!   [`executable`];
//! - [`tags`]: sample labels (`--tagfocus`/`--tagignore`,
//!   `--tagshow`/`--taghide`, `--tagroot`/`--tagleaf` pseudo-frames);
//!   [`filtered`]: the kept samples as a profile again;
//! - [`stats`]: confidence intervals and the significance of a diff's
//!   changes; [`change`]: a node's change and the colours of a diff;
//! - [`threads`]: which thread took a sample (the one reading of the
//!   thread labels); [`activity`]: each thread's activity over time in
//!   columns and the subsecond heat map, what the timelines draw;
//! - [`time`]: each sample's time (`timestamp_ns`), the profile's time
//!   origin (defined there once) and `--time` ranges;
//! - [`names`], [`escape`]: names and escaped text; [`legend`]: the
//!   profile's labels above a report;
//! - [`measure`]: the only place where a value becomes text (units
//!   scaled as Go pprof's `measurement` package does, percentages).
//!
//! **The outputs** ([`output`], one module each) render the view: each
//! imports the view and [`measure`], never another output. A new output
//! is a new module there.
#![deny(missing_docs)]

pub mod activity;
pub mod callgraph;
pub mod change;
pub mod distinct;
pub mod escape;
pub mod executable;
pub mod filtered;
pub mod graph;
pub mod instructions;
pub mod legend;
pub mod lines;
pub mod measure;
pub mod names;
pub mod options;
pub mod output;
pub mod source;
pub mod stacks;
pub mod stats;
pub mod tags;
pub mod threads;
pub mod time;

pub use graph::{Edge, Graph, Node, NodeId};

/// Samples per piece when a profile's samples are read in parallel
/// (rayon): large enough that a piece's own sums or tables cost little to
/// merge, small enough that both cores get work on a profile of a few
/// hundred thousand samples.
pub(crate) const PIECE: usize = 1 << 16;
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
