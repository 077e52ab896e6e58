//! Flame graphs: the stacks of a profile merged into a tree of frames and
//! drawn as rectangles whose widths are proportional to their values.
//!
//! The input is a neutral [`FlameInput`] (a title, a unit, the profile's
//! total and a list of stacks, root first, each with a value and, for a
//! diff, the value in the base profile), so the flame graph does not depend
//! on how the stacks were symbolized or filtered. [`FrameTree::build`] merges
//! the stacks into a tree whose children are sorted by name, like classic
//! flame graphs, so the output never depends on the order of the samples.
//! Two renderings read the tree:
//!
//! - [`FlameFormat::Html`]: one self-contained page (inline SVG drawn by an
//!   embedded script, no network, no external files) with click to zoom,
//!   reset, regex search with the matched percentage, and tooltips;
//! - [`FlameFormat::Svg`]: a static standalone SVG with a `<title>` tooltip
//!   per frame.
//!
//! [`FlameOrientation::Icicle`] puts the root at the top instead of the
//! bottom. Frames narrower than [`FlameOptions::min_frame_px`] at the current
//! zoom are not drawn (nor are their descendants, which are narrower still),
//! as flame graphs do: this keeps big profiles fast, and the page and the
//! SVG say how many frames were left out.
//!
//! Colours are stable per function: a hash of the frame's name picks a warm
//! colour, so a function has the same colour in every graph and every run.
//! In a diff (some stack has a base value) a frame is coloured by the
//! relative change of its share (of each profile's own total) instead: red
//! where it grew, green where it shrank (the call graph's and the web UI's
//! scheme, Go pprof's call-graph convention: one scheme in every view of
//! a diff). Output
//! is byte-identical for the same input: no timestamps, no random ids, and
//! every iteration is in sorted order.

mod html;
mod svg;
mod tree;

use std::fmt;
use std::io;
use std::str::FromStr;

use rustc_hash::FxHashMap;

use crate::measure::ValueFormat;
use crate::stacks::Stacks;

pub use tree::{FrameNode, FrameTree};

/// The name of the root frame, which spans all the stacks.
pub const ROOT_NAME: &str = "all";

/// A frame name interned in a [`FlameInput`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameName(u32);

/// One stack of a [`FlameInput`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct FlameStack {
    /// Where its frames (root first, indexes into [`FlameInput::names`])
    /// start in [`FlameInput::frames`], and how many.
    at: u32,
    len: u32,
    value: i64,
    base: Option<i64>,
}

/// What a flame graph shows: stacks (root first) with values.
///
/// Frame names are interned: build a stack from names with
/// [`FlameInput::add_stack_names`], or intern each name once with
/// [`FlameInput::frame_name`] and add stacks of [`FrameName`]s with
/// [`FlameInput::add_stack`] (faster when the caller already has its own
/// function ids).
#[derive(Clone, Debug, Default)]
pub struct FlameInput {
    /// Shown at the top of the graph and as the page title.
    pub title: String,
    /// How values are printed, with their unit (`1234 samples`, `1.82s`).
    pub values: ValueFormat,
    /// The profile's total, the denominator of every percentage. It may be
    /// larger than the sum of the stacks when samples were filtered out.
    pub total: i64,
    names: Vec<String>,
    name_ids: FxHashMap<String, u32>,
    stacks: Vec<FlameStack>,
    /// The frames of every stack, one after the other.
    frames: Vec<u32>,
}

impl FlameInput {
    /// An input with no stacks yet, of values counted in `unit`.
    pub fn new(title: &str, unit: &str, total: i64) -> FlameInput {
        FlameInput {
            title: title.to_string(),
            values: ValueFormat::count(unit),
            total,
            ..FlameInput::default()
        }
    }

    /// Interns a frame name.
    pub fn frame_name(&mut self, name: &str) -> FrameName {
        if let Some(&id) = self.name_ids.get(name) {
            return FrameName(id);
        }
        let id = u32::try_from(self.names.len()).expect("more than 2^32 frame names");
        self.names.push(name.to_string());
        self.name_ids.insert(name.to_string(), id);
        FrameName(id)
    }

    /// Adds a stack of interned frames, root first, with its value and, for
    /// a diff, its value in the base profile. Values must not be negative
    /// ([`FrameTree::build`] says so otherwise). Stacks need not be
    /// distinct: equal stacks are summed.
    pub fn add_stack(&mut self, frames_root_first: &[FrameName], value: i64, base: Option<i64>) {
        let at = self.frames.len();
        self.frames.extend(frames_root_first.iter().map(|f| f.0));
        self.push_stack(at, value, base);
    }

    /// Adds a stack of frame names, root first; see [`FlameInput::add_stack`].
    pub fn add_stack_names<S: AsRef<str>>(
        &mut self,
        frames_root_first: &[S],
        value: i64,
        base: Option<i64>,
    ) {
        let at = self.frames.len();
        for name in frames_root_first {
            let id = self.frame_name(name.as_ref()).0;
            self.frames.push(id);
        }
        self.push_stack(at, value, base);
    }

    /// Records the stack whose frames were appended from `at` on.
    fn push_stack(&mut self, at: usize, value: i64, base: Option<i64>) {
        // More than 2^32 frames would not fit in memory as a tree anyway.
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        let len = (self.frames.len() as u32).saturating_sub(at);
        self.stacks.push(FlameStack {
            at,
            len,
            value,
            base,
        });
    }

    /// The frames of `stack`, root first.
    fn frames_of(&self, stack: &FlameStack) -> &[u32] {
        self.frames
            .get(stack.at as usize..(stack.at + stack.len) as usize)
            .unwrap_or_default()
    }

    /// The number of stacks added.
    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    /// True when some stack has a base value: the graph shows a difference.
    pub fn is_diff(&self) -> bool {
        self.stacks.iter().any(|s| s.base.is_some())
    }
}

/// The flame graph of a report: every sample kept by the report's filters,
/// its frames (inline frames expanded, at the report's granularity) root
/// first. With `base` (a diff), the base profile's samples are added with
/// their values as base values and no width of their own, so the widths are
/// the profile's and the colours its change from the base. The total is
/// the profile's, as `--text` prints it.
///
/// The names are interned in sorted order (so [`FrameTree::build`] can
/// compare the interned ids as it would the names), and the samples are
/// expanded in parallel chunks, added in their order.
pub fn input_from_stacks(title: &str, stacks: &Stacks, base: Option<&Stacks>) -> FlameInput {
    use rayon::prelude::*;
    let mut input = FlameInput::new(title, "", stacks.grand_total);
    input.values = ValueFormat::of(stacks.profile(), &stacks.sample_type, "auto");
    let mut names: Vec<&str> = stacks
        .frames
        .iter()
        .chain(base.iter().flat_map(|b| b.frames.iter()))
        .map(|f| f.name.as_str())
        .collect();
    names.par_sort_unstable();
    names.dedup();
    for name in &names {
        input.frame_name(name);
    }
    let add = |input: &mut FlameInput, of: &Stacks, is_base: bool| {
        // Each frame of `of` as its interned name (its rank in `names`).
        let ids: Vec<u32> = of
            .frames
            .par_iter()
            .map(|f| names.binary_search(&f.name.as_str()).unwrap_or(0) as u32)
            .collect();
        // Chunks of samples expanded in parallel: each its frames (root
        // first) and its stacks' lengths and values.
        const CHUNK: usize = 16 * 1024;
        type Chunk = (Vec<u32>, Vec<(u32, i64)>);
        let chunks: Vec<Chunk> = (0..of.len().div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let range = c * CHUNK..((c + 1) * CHUNK).min(of.len());
                let mut frames = Vec::with_capacity(range.len() * 24);
                let mut lens = Vec::with_capacity(range.len());
                let mut leaf_first = Vec::with_capacity(256);
                for i in range {
                    let value = of.expand(i, &mut leaf_first);
                    frames.extend(leaf_first.iter().rev().map(|f| ids[f.index()]));
                    lens.push((leaf_first.len() as u32, value));
                }
                (frames, lens)
            })
            .collect();
        let frame_count: usize = chunks.iter().map(|(f, _)| f.len()).sum();
        input.frames.reserve(frame_count);
        input.stacks.reserve(of.len());
        for (frames, lens) in chunks {
            let mut at = input.frames.len();
            input.frames.extend_from_slice(&frames);
            for (len, value) in lens {
                let (value, base_value) = if is_base {
                    (0, Some(value))
                } else {
                    (value, base.map(|_| 0))
                };
                input.stacks.push(FlameStack {
                    at: u32::try_from(at).unwrap_or(u32::MAX),
                    len,
                    value,
                    base: base_value,
                });
                at += len as usize;
            }
        }
    };
    add(&mut input, stacks, false);
    if let Some(base) = base {
        add(&mut input, base, true);
    }
    input
}

/// Which file a flame graph is written as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlameFormat {
    /// A self-contained interactive HTML page.
    #[default]
    Html,
    /// A static standalone SVG image.
    Svg,
}

impl FromStr for FlameFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<FlameFormat, String> {
        match s {
            "html" => Ok(FlameFormat::Html),
            "svg" => Ok(FlameFormat::Svg),
            _ => Err(format!(
                "unknown flame graph format {s:?}: expected html or svg"
            )),
        }
    }
}

/// Where the root frame is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlameOrientation {
    /// Root at the bottom, callees stacked above their callers.
    #[default]
    Flame,
    /// Root at the top, callees hanging below their callers.
    Icicle,
}

/// How a flame graph is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct FlameOptions {
    /// HTML page or static SVG.
    pub format: FlameFormat,
    /// Root at the bottom (flame) or at the top (icicle).
    pub orientation: FlameOrientation,
    /// Width of the SVG image in pixels (the HTML page uses the window's
    /// width instead).
    pub width_px: u32,
    /// Frames narrower than this many pixels are not drawn, nor are their
    /// descendants. `None`: 0.1 px in the SVG, as classic flame graphs;
    /// 0.5 px in the page, which redraws on every zoom (on a 575,000-frame
    /// tree, 0.1 px draws 34,000 elements in 700 ms, 0.5 px 4,700 in 100 ms,
    /// and the slivers between are all but invisible).
    pub min_frame_px: Option<f64>,
    /// In a diff: when given, only the frames of these functions (the
    /// significant changes) are coloured by their change; the others are
    /// neutral.
    pub significant: Option<rustc_hash::FxHashSet<String>>,
    /// Tooltips show each frame's share with its interval (`--confidence`):
    /// the samples and value per sample of the total, and the level.
    pub intervals: Option<FlameIntervals>,
}

/// What the tooltips' intervals are computed from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlameIntervals {
    /// Samples in the total.
    pub samples: f64,
    /// Value per sample.
    pub scale: f64,
    /// The confidence level (0.95).
    pub level: f64,
}

/// Fill of a frame whose change is not significant.
pub const NEUTRAL_COLOR: &str = "#c8c8c8";

/// The page leaves out frames under this fraction of the total (0.001%):
/// at full view they are 0.02 px wide, and it takes a zoom of more than
/// 25x to draw one. Profiles of fewer than 100,000 samples lose nothing;
/// a big profile of distinct stacks shrinks from millions of frames (a
/// page of a hundred megabytes no browser opens quickly) to what can be
/// seen.
pub const HTML_MIN_FRACTION: f64 = 1e-5;

impl FlameOptions {
    /// Frames under this fraction of the total are left out of the output:
    /// for the SVG those narrower than [`FlameOptions::min_frame_px`]
    /// (they would not be drawn), for the page [`HTML_MIN_FRACTION`].
    pub fn prune_fraction(&self) -> f64 {
        match self.format {
            FlameFormat::Svg => {
                let usable = self.width_px.max(100) as f64 - 2.0 * layout::X_PAD;
                self.min_frame_px() / usable
            }
            FlameFormat::Html => HTML_MIN_FRACTION.min(self.min_frame_px() / 1e4),
        }
    }

    /// The width under which frames are not drawn.
    pub fn min_frame_px(&self) -> f64 {
        self.min_frame_px.unwrap_or(match self.format {
            FlameFormat::Svg => 0.1,
            FlameFormat::Html => 0.5,
        })
    }
}

impl Default for FlameOptions {
    fn default() -> FlameOptions {
        FlameOptions {
            format: FlameFormat::Html,
            orientation: FlameOrientation::Flame,
            width_px: 1200,
            min_frame_px: None,
            significant: None,
            intervals: None,
        }
    }
}

/// Why a flame graph could not be drawn.
#[derive(Debug)]
pub enum FlameError {
    /// A stack's value (or base value) is negative: widths cannot be.
    NegativeValue {
        /// Index of the stack, in the order the stacks were added.
        stack: usize,
        /// The value, or the base value, found.
        value: i64,
    },
    /// The values of the stacks sum past `i64::MAX`.
    Overflow,
    /// Writing the output failed.
    Io(io::Error),
}

impl fmt::Display for FlameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlameError::NegativeValue { stack, value } => write!(
                f,
                "flame graph: stack {stack} has the negative value {value}: widths need \
                 non-negative values (give a diff's base profile as the base, not subtracted)"
            ),
            FlameError::Overflow => write!(f, "flame graph: the stack values sum past 2^63"),
            FlameError::Io(e) => write!(f, "flame graph: {e}"),
        }
    }
}

impl std::error::Error for FlameError {}

impl From<io::Error> for FlameError {
    fn from(e: io::Error) -> FlameError {
        FlameError::Io(e)
    }
}

/// Builds the frame tree of `input` and writes it as `options` say.
pub fn write_flame(
    input: &FlameInput,
    options: &FlameOptions,
    out: &mut dyn io::Write,
) -> Result<(), FlameError> {
    let tree = FrameTree::build_pruned(input, options.prune_fraction())?;
    let text = render(&tree, input, options);
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Renders an already built tree of `input` to a string.
pub fn render(tree: &FrameTree, input: &FlameInput, options: &FlameOptions) -> String {
    let page = Page::new(tree, input, options);
    match options.format {
        FlameFormat::Html => html::render(&page),
        FlameFormat::Svg => svg::render(&page),
    }
}

/// Geometry shared by the SVG writer and the page's script, so both draw
/// the same picture.
mod layout {
    /// Left and right margin, in pixels.
    pub const X_PAD: f64 = 10.0;
    /// Height of a frame row, in pixels (the rectangle is one less).
    pub const FRAME_HEIGHT: f64 = 16.0;
    /// Label font size, in pixels.
    pub const FONT_SIZE: f64 = 11.0;
    /// Advance of one label character in the monospace font, in pixels:
    /// 0.61 em, a little more than DejaVu Sans Mono's 0.602 em.
    pub const CHAR_WIDTH: f64 = 6.71;
    /// Space above the frames for the title and the totals line.
    pub const TOP: f64 = 52.0;
    /// Space below the frames.
    pub const BOTTOM: f64 = 12.0;
    /// The font of the labels.
    pub const FONT_FAMILY: &str = "'DejaVu Sans Mono', Menlo, Consolas, monospace";
    /// Fill of the frames matching a search.
    pub const MATCH_COLOR: &str = "#e040fb";
    /// Fill of the root frame.
    pub const ROOT_COLOR: &str = "#d0d0d0";
}

/// What both renderings draw: the tree, its colours and its texts.
struct Page<'a> {
    tree: &'a FrameTree,
    input: &'a FlameInput,
    options: &'a FlameOptions,
    /// Distinct fill colours, `#rrggbb`.
    palette: Vec<String>,
    /// Index into `palette` of each node's fill.
    node_color: Vec<u32>,
}

impl<'a> Page<'a> {
    fn new(tree: &'a FrameTree, input: &'a FlameInput, options: &'a FlameOptions) -> Page<'a> {
        let mut palette = vec![layout::ROOT_COLOR.to_string()];
        let mut node_color = Vec::with_capacity(tree.len());
        if tree.is_diff() {
            // Relative change quantized to DIFF_STEPS steps each way, so the
            // palette stays small and equal changes look equal.
            let mut index_of_step: FxHashMap<i32, u32> = FxHashMap::default();
            let mut neutral = None;
            for (i, node) in tree.nodes().iter().enumerate() {
                if i == 0 {
                    node_color.push(0);
                    continue;
                }
                if let Some(significant) = &options.significant {
                    if !significant.contains(tree.name_of(i)) {
                        let index = *neutral.get_or_insert_with(|| {
                            palette.push(NEUTRAL_COLOR.to_string());
                            (palette.len() - 1) as u32
                        });
                        node_color.push(index);
                        continue;
                    }
                }
                // Each profile's share of its own total: runs of
                // different lengths compare (as the significance test does).
                let root = &tree.nodes()[0];
                let step = share_step(node.value, node.base, root.value, root.base);
                let index = *index_of_step.entry(step).or_insert_with(|| {
                    palette.push(diff_color(step));
                    (palette.len() - 1) as u32
                });
                node_color.push(index);
            }
        } else {
            // One entry per name, in the tree's (sorted) name order.
            let first = palette.len() as u32;
            palette.extend(tree.names().iter().map(|name| name_color(name)));
            for (i, node) in tree.nodes().iter().enumerate() {
                node_color.push(if i == 0 { 0 } else { first + node.name });
            }
        }
        Page {
            tree,
            input,
            options,
            palette,
            node_color,
        }
    }

    fn fill(&self, node: usize) -> &str {
        &self.palette[self.node_color[node] as usize]
    }

    /// The tooltip of a node: name, value, share of the total and, in a
    /// diff, the base value and the change.
    fn tooltip(&self, node: usize) -> String {
        let n = &self.tree.nodes()[node];
        let mut text = format!(
            "{} ({}, {})",
            self.tree.name_of(node),
            self.input.values.with_unit(n.value),
            percent(n.value, self.input.total)
        );
        if let Some(iv) = &self.options.intervals {
            let (lo, hi) = crate::stats::wilson(
                n.value as f64 / iv.scale,
                iv.samples,
                crate::stats::z_for(iv.level),
            );
            text.pop();
            text.push_str(&format!(
                " {}% CI {}%)",
                crate::stats::level_text(iv.level),
                crate::stats::format_interval((lo, hi))
            ));
        }
        if self.tree.is_diff() {
            text.pop();
            text.push_str(&format!(
                "; base {}, {})",
                self.input.values.value(n.base),
                signed_change(&self.input.values, n.value, n.base)
            ));
        }
        text
    }

    /// The line under the title.
    fn totals_line(&self) -> String {
        let root = self.tree.root_value();
        let values = &self.input.values;
        let mut line = format!("Total: {}", values.with_unit(self.input.total));
        if root != self.input.total {
            line.push_str(&format!(
                ", shown: {} ({})",
                values.with_unit(root),
                percent(root, self.input.total)
            ));
        }
        if self.tree.is_diff() {
            line.push_str(&format!(
                ", base: {} ({}); red grew, green shrank",
                values.with_unit(self.tree.nodes()[0].base),
                signed_change(values, root, self.tree.nodes()[0].base)
            ));
            if self.options.significant.is_some() {
                line.push_str(" (significant changes of share only, Holm; grey: noise)");
            }
        }
        line
    }
}

/// `part` as a percentage of `total`, with two decimals.
fn percent(part: i64, total: i64) -> String {
    if total == 0 {
        return "0.00%".to_string();
    }
    format!("{:.2}%", part as f64 * 100.0 / total as f64)
}

/// The change from `base` to `value`, absolute and relative to the base.
fn signed_change(values: &ValueFormat, value: i64, base: i64) -> String {
    let delta = value.saturating_sub(base);
    let sign = if delta >= 0 { "+" } else { "" };
    let delta_text = format!("{sign}{}", values.value(delta));
    if base == 0 {
        return format!("{delta_text}, new");
    }
    format!("{delta_text}, {:+.2}%", delta as f64 * 100.0 / base as f64)
}

/// Steps of relative change between white and full red (or green).
const DIFF_STEPS: i32 = 20;

/// The relative change of a frame, `(value - base) / max(value, base)` in
/// `[-1, 1]`, quantized to `-DIFF_STEPS..=DIFF_STEPS`.
fn diff_step(value: i64, base: i64) -> i32 {
    let largest = value.max(base);
    if largest <= 0 {
        return 0;
    }
    let relative = (value as f64 - base as f64) / largest as f64;
    (relative * DIFF_STEPS as f64).round() as i32
}

/// The relative change of a frame's share, `value` of `total` against
/// `base` of `base_total`, as [`diff_step`] (the same when the totals are
/// equal).
fn share_step(value: i64, base: i64, total: i64, base_total: i64) -> i32 {
    if total == base_total {
        return diff_step(value, base);
    }
    let share = |v: i64, t: i64| if t > 0 { v as f64 / t as f64 } else { 0.0 };
    let (new, old) = (share(value, total), share(base, base_total));
    let largest = new.max(old);
    if largest <= 0.0 {
        return 0;
    }
    ((new - old) / largest * DIFF_STEPS as f64).round() as i32
}

/// Red for growth, green for shrinkage, near-white for no change.
fn diff_color(step: i32) -> String {
    let strength = step.unsigned_abs();
    // From 235 (pale) down to 55 (saturated) on the two fading channels.
    let fade = 235 - strength * 180 / DIFF_STEPS as u32;
    let (r, g, b) = match step {
        0 => (235, 235, 235),
        s if s > 0 => (255, fade, fade),
        // Green fades less than the other two, from 235 to 195.
        _ => (fade, 235 - strength * 40 / DIFF_STEPS as u32, fade),
    };
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// A warm colour (reds, oranges, yellows) picked by a hash of the name:
/// the same name always gets the same colour.
fn name_color(name: &str) -> String {
    let h = name_hash(name);
    // Green stays below red, so the hues run from red to orange-yellow,
    // never to yellow-green.
    let r = 215 + (h % 41) as u32;
    let g = 50 + ((h >> 16) % (r as u64 - 60)) as u32;
    let b = 20 + ((h >> 40) % 50) as u32;
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// FNV-1a over the name's bytes, then a final mix so that similar names
/// (`f1`, `f2`) spread over the palette.
fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // splitmix64's finalizer.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The label of a frame `width` pixels wide: the name, shortened with `..`
/// to fit, or nothing when fewer than three characters fit.
fn label(name: &str, width: f64) -> Option<String> {
    let fits = ((width - 6.0) / layout::CHAR_WIDTH).floor();
    if fits < 3.0 {
        return None;
    }
    let fits = fits as usize;
    let mut chars = name.char_indices();
    match chars.nth(fits) {
        None => Some(name.to_string()),
        Some(_) => {
            let cut = name
                .char_indices()
                .nth(fits - 2)
                .map_or(name.len(), |(i, _)| i);
            Some(format!("{}..", &name[..cut]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_fit_their_frames() {
        // 6.71 px per character, 6 px of padding.
        assert_eq!(
            label("main", 6.0 + 4.0 * layout::CHAR_WIDTH),
            Some("main".into())
        );
        assert_eq!(
            label("main", 6.0 + 3.0 * layout::CHAR_WIDTH),
            Some("m..".into())
        );
        assert_eq!(label("main", 6.0 + 2.9 * layout::CHAR_WIDTH), None);
        assert_eq!(
            label("größe", 6.0 + 4.0 * layout::CHAR_WIDTH),
            Some("gr..".into())
        );
    }

    #[test]
    fn name_colors_are_warm_and_stable() {
        for name in ["main", "burn_a", "burn_b", "std::vec::Vec<T>::push", ""] {
            let c = name_color(name);
            assert_eq!(c, name_color(name));
            let r = u8::from_str_radix(&c[1..3], 16).unwrap();
            let g = u8::from_str_radix(&c[3..5], 16).unwrap();
            let b = u8::from_str_radix(&c[5..7], 16).unwrap();
            // Red dominant, blue low: from red through orange to yellow.
            assert!(
                r >= 205 && (60..=230).contains(&g) && b <= 75,
                "{name}: {c} is not warm"
            );
        }
        // Pinned so that a change of the hash (which would recolour every
        // graph users have seen) is deliberate.
        assert_eq!(name_color("main"), "#f7a840");
        assert_ne!(name_color("burn_a"), name_color("burn_b"));
    }

    #[test]
    fn diff_colors_follow_the_relative_change() {
        assert_eq!(diff_step(10, 10), 0);
        assert_eq!(diff_step(20, 10), 10); // +100%: half of the way to red
        assert_eq!(diff_step(10, 0), 20); // new: full red
        assert_eq!(diff_step(0, 10), -20); // gone: full green
        assert_eq!(diff_step(5, 10), -10);
        assert_eq!(diff_color(0), "#ebebeb");
        assert_eq!(diff_color(20), "#ff3737");
        assert_eq!(diff_color(-20), "#37c337");
        assert_eq!(diff_color(10), "#ff9191");
    }

    #[test]
    fn diff_colours_compare_shares_of_each_total() {
        // Equal totals: the plain relative change.
        assert_eq!(share_step(20, 10, 100, 100), diff_step(20, 10));
        // 78 of 195 samples against 55 of 71: more samples, a smaller
        // share (40% against 77%): shrank.
        assert_eq!(share_step(78, 55, 195, 71), -10);
        // Twice the samples in a run twice as long: no change.
        assert_eq!(share_step(40, 20, 200, 100), 0);
        assert_eq!(share_step(10, 0, 200, 100), 20);
        assert_eq!(share_step(0, 0, 200, 100), 0);
    }

    #[test]
    fn percentages_and_changes() {
        assert_eq!(percent(1, 3), "33.33%");
        assert_eq!(percent(5, 0), "0.00%");
        let samples = ValueFormat::count("samples");
        assert_eq!(signed_change(&samples, 15, 10), "+5, +50.00%");
        assert_eq!(signed_change(&samples, 5, 10), "-5, -50.00%");
        assert_eq!(signed_change(&samples, 5, 0), "+5, new");
    }
}
