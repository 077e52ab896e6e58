//! A node's change between a base profile and a new one, and the one
//! colour scheme every view of a diff draws it with.

/// A node's change of share between a base and a new profile, as a diff
/// colours it: only significant changes are coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeChange {
    /// Its share grew significantly: red.
    Grew,
    /// Its share shrank significantly: green.
    Shrank,
    /// Not a significant change: neutral grey.
    Noise,
}

impl NodeChange {
    /// The word for it, also the node's class in the SVG (`grew`,
    /// `shrank`, `noise`).
    pub fn name(self) -> &'static str {
        match self {
            NodeChange::Grew => "grew",
            NodeChange::Shrank => "shrank",
            NodeChange::Noise => "noise",
        }
    }

    /// Fill and border colours of a node with this change.
    pub fn colors(self) -> (&'static str, &'static str) {
        match self {
            NodeChange::Grew => (GREW_FILL, GREW_STROKE),
            NodeChange::Shrank => (SHRANK_FILL, SHRANK_STROKE),
            NodeChange::Noise => (NOISE_FILL, NOISE_STROKE),
        }
    }
}

/// Colours of a diff's nodes: red grew, green shrank, grey noise.
pub const GREW_FILL: &str = "#ff9c9c";
/// Border of a node that grew.
pub const GREW_STROKE: &str = "#b71c1c";
/// Fill of a node that shrank.
pub const SHRANK_FILL: &str = "#9fdf9f";
/// Border of a node that shrank.
pub const SHRANK_STROKE: &str = "#1b5e20";
/// Fill of a node whose change is not significant.
pub const NOISE_FILL: &str = "#eeeeee";
/// Border of a node whose change is not significant.
pub const NOISE_STROKE: &str = "#9e9e9e";
