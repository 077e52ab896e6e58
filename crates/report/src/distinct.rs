//! The distinct stacks of a report and their summed values, which
//! `--collapsed` ([`crate::output::collapsed`]) and `--traces`
//! ([`crate::output::traces`]) print.
//!
//! Samples that fold to the same stack are summed; stacks whose sum is
//! zero (a diff that cancelled out) are left out. Stacks are sorted by
//! their frames' names from the root, frame by frame (a stack before its
//! extensions), so every output is deterministic.

use std::cmp::Ordering;

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
pub fn name_ranks(stacks: &Stacks) -> Vec<u32> {
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
pub fn compare_stacks(ranks: &[u32], a: &[FrameId], b: &[FrameId]) -> Ordering {
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
