//! `--collapsed`: one line per distinct stack, `root;...;leaf count`
//! (Brendan Gregg's folded format), and the distinct stacks that
//! `--collapsed` and `--traces` share.
//!
//! Frames are the report's: at its granularity, inline calls expanded into
//! frames of their own, names as `--text` prints them. Samples that fold to
//! the same stack are summed; stacks whose sum is zero (a diff that
//! cancelled out) are left out; lines are sorted by their text, so the
//! output is deterministic.

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
    /// The folded text: frame names root first, joined with `;`.
    pub folded: String,
}

/// The distinct stacks of `stacks` with a non-zero sum, sorted by their
/// folded text.
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
        .map(|(frames, value)| {
            let mut folded = String::with_capacity(frames.len() * 16);
            for (i, f) in frames.iter().rev().enumerate() {
                if i > 0 {
                    folded.push(';');
                }
                folded.push_str(&stacks.frame(*f).name);
            }
            DistinctStack {
                frames,
                value,
                folded,
            }
        })
        .collect();
    distinct.sort_unstable_by(|a, b| a.folded.cmp(&b.folded).then(a.frames.cmp(&b.frames)));
    distinct
}

/// Writes the collapsed stacks of `stacks`: `root;...;leaf value` lines.
/// A sample without frames (possible only when `--hide` removed them all)
/// has no line.
pub fn write(out: &mut dyn Write, stacks: &Stacks) -> io::Result<()> {
    for stack in distinct_stacks(stacks) {
        if stack.frames.is_empty() {
            continue;
        }
        writeln!(out, "{} {}", stack.folded, stack.value)?;
    }
    Ok(())
}
