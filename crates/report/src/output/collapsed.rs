//! `--collapsed`: one line per distinct stack, `root;...;leaf count`
//! (Brendan Gregg's folded format), of the distinct stacks of
//! [`crate::distinct`].
//!
//! Frames are the report's: at its granularity, inline calls expanded into
//! frames of their own, names as `--text` prints them. Samples that fold to
//! the same stack are summed; stacks whose sum is zero (a diff that
//! cancelled out) are left out. Lines are sorted by their frames' names
//! from the root, frame by frame (a stack before its extensions), so the
//! output is deterministic; this is the order of the text itself except
//! where a name is a prefix of another followed by a character sorting
//! before `;` (`f` and `f1`).

use std::io::{self, Write};

use crate::distinct::distinct_stacks;
use crate::stacks::Stacks;

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
