//! Reports: the graph view of a symbolized profile and its outputs.
#![deny(missing_docs)]

pub mod gprof;
