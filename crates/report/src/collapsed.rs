//! `--collapsed`: one line per distinct stack, `root;...;leaf count`
//! (Brendan Gregg's folded format), and the distinct stacks that
//! `--collapsed` and `--traces` share.
//!
//! Frames are the report's: at its granularity, inline calls expanded into
//! frames of their own, names as `--text` prints them. Samples that fold to
//! the same stack are summed; stacks whose sum is zero (a diff that
//! cancelled out) are left out. Lines are sorted by their frames' names
//! from the root, frame by frame (a stack before its extensions), so the
//! output is deterministic; this is the order of the text itself except
//! where a name is a prefix of another followed by a character sorting
//! before `;` (`f` and `f1`).

use std::cmp::Ordering;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::stacks::{FrameId, Stacks};

/// One distinct stack of a report and its summed value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistinctStack {
    /// The frames, leaf first.
    pub frames: Vec<FrameId>,
    /// The sum of the values of the samples with these frames.
    pub value: i64,
}

/// The rank of each frame's name among all frame names (frames are
/// interned by name, so ranks are distinct).
pub(crate) fn name_ranks(stacks: &Stacks) -> Vec<u32> {
    let mut order: Vec<usize> = (0..stacks.frames.len()).collect();
    order.sort_unstable_by(|&a, &b| stacks.frames[a].name.cmp(&stacks.frames[b].name));
    let mut rank = vec![0u32; order.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r as u32;
    }
    rank
}

/// Orders stacks by their frames' names from the root (see the module
/// documentation), given [`name_ranks`].
pub(crate) fn compare_stacks(ranks: &[u32], a: &[FrameId], b: &[FrameId]) -> Ordering {
    a.iter()
        .rev()
        .map(|f| ranks[f.index()])
        .cmp(b.iter().rev().map(|f| ranks[f.index()]))
}

/// The distinct stacks of `stacks` with a non-zero sum, sorted by their
/// frames' names from the root.
pub fn distinct_stacks(stacks: &Stacks) -> Vec<DistinctStack> {
    let mut sums: FxHashMap<Vec<FrameId>, i64> = FxHashMap::default();
    stacks.for_each(|frames, value| {
        if let Some(sum) = sums.get_mut(frames) {
            *sum += value;
        } else {
            sums.insert(frames.to_vec(), value);
        }
    });
    let mut distinct: Vec<DistinctStack> = sums
        .into_iter()
        .filter(|(_, value)| *value != 0)
        .map(|(frames, value)| DistinctStack { frames, value })
        .collect();
    let ranks = name_ranks(stacks);
    distinct.sort_unstable_by(|a, b| compare_stacks(&ranks, &a.frames, &b.frames));
    distinct
}

/// Writes the collapsed stacks of `stacks`: `root;...;leaf value` lines.
/// A sample without frames (possible only when `--hide` removed them all)
/// has no line.
pub fn write(out: &mut dyn Write, stacks: &Stacks) -> io::Result<()> {
    let mut line: Vec<u8> = Vec::with_capacity(1 << 16);
    for stack in distinct_stacks(stacks) {
        if stack.frames.is_empty() {
            continue;
        }
        for (i, f) in stack.frames.iter().rev().enumerate() {
            if i > 0 {
                line.push(b';');
            }
            line.extend_from_slice(stacks.frame(*f).name.as_bytes());
        }
        line.push(b' ');
        line.extend_from_slice(stack.value.to_string().as_bytes());
        line.push(b'\n');
        if line.len() > 1 << 16 {
            out.write_all(&line)?;
            line.clear();
        }
    }
    out.write_all(&line)
}
