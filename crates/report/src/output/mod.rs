//! The outputs, one module each. Each renders the view (the crate root's
//! modules) and formats values through [`crate::measure`]; no output
//! imports another.
//!
//! - Text: [`text`] (`--text`/`--top`), [`tree`] (`--tree`, `--peek`),
//!   [`traces`], [`tags`] (`--tags`), [`listing`] (`--list`),
//!   [`disasm`], [`dcpiprof`], [`gprof`] (gprof's `-b` report),
//!   [`timeline`] (each thread's activity over time in block characters);
//! - graphs: [`dot`] (Graphviz DOT), [`svg`] (drawn without Graphviz,
//!   laid out by [`svg::layout`]), [`flame`] (flame graphs, SVG and
//!   HTML), [`weblist`] (source and disassembly on one HTML page);
//! - machine-readable: [`collapsed`] (folded stacks), [`json`],
//!   [`callgrind`] (KCachegrind), [`raw`] (perl pprof's symbolized raw
//!   profile), [`speedscope`] (speedscope's JSON, one profile per
//!   thread in time order).

pub mod callgrind;
pub mod collapsed;
pub mod dcpiprof;
pub mod disasm;
pub mod dot;
pub mod flame;
pub mod gprof;
pub mod json;
pub mod listing;
pub mod raw;
pub mod speedscope;
pub mod svg;
pub mod tags;
pub mod text;
pub mod timeline;
pub mod traces;
pub mod tree;
pub mod weblist;
