//! Reports: the graph view of a symbolized profile and its outputs.
//!
//! [`layout`] places a directed graph in layers (boxes, smooth edges,
//! labels) without Graphviz; [`svg`] draws a call graph [`svg::GraphPicture`]
//! with it as standalone SVG.
#![deny(missing_docs)]

pub mod layout;
pub mod svg;
