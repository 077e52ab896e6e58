//! `--traces`: every distinct stack with its value, in the manner of Go
//! pprof's `-traces`: a header with what the profile says about itself,
//! then per stack a separator line and the frames, leaf first, the value
//! on the first frame's line (`%10s   %s`).
//!
//! ```text
//! File: ./spin
//! Type: samples
//! Total: 491 samples
//! -----------+-------------------------------------------------------
//!        117   burn_a
//!              recurse
//!              main
//! -----------+-------------------------------------------------------
//! ```
//!
//! Unlike Go pprof, which prints one block per sample of the profile,
//! samples with the same frames are summed into one block (the stacks are
//! those of [`crate::collapsed`]); blocks are sorted by value, largest
//! first, then as `--collapsed` sorts them. Values are the report's (sample
//! counts for gperftools profiles), not converted to time.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::collapsed::distinct_stacks;
use crate::stacks::Stacks;
use crate::text::unit_word;

/// The separator line between stacks, as Go pprof prints it.
pub const SEPARATOR: &str = "-----------+-------------------------------------------------------";

/// Writes the traces report of `stacks`; `program` names the profiled
/// program in the header.
pub fn write(out: &mut dyn Write, stacks: &Stacks, program: &str) -> io::Result<()> {
    let profile = stacks.profile();
    writeln!(out, "File: {program}")?;
    let sample_type = &stacks.sample_type;
    if sample_type.unit.is_empty() || sample_type.unit == "count" {
        writeln!(out, "Type: {}", sample_type.kind)?;
    } else {
        writeln!(out, "Type: {} ({})", sample_type.kind, sample_type.unit)?;
    }
    if profile.duration_nanos > 0 {
        writeln!(out, "Duration: {:.2}s", profile.duration_nanos as f64 / 1e9)?;
    }
    if profile.period > 0 && !profile.period_type.kind.is_empty() {
        writeln!(
            out,
            "Period: {} {}/{}",
            profile.period, profile.period_type.kind, profile.period_type.unit
        )?;
    }
    writeln!(out, "Total: {} {}", stacks.total, unit_word(stacks))?;
    // Already in `--collapsed`'s order: a stable sort by value keeps it
    // among equal values.
    let mut distinct = distinct_stacks(stacks);
    distinct.sort_by_key(|s| std::cmp::Reverse(s.value));
    // Lines are built in a buffer: a big profile has millions of frames.
    let mut text = String::with_capacity(1 << 16);
    for stack in &distinct {
        if stack.frames.is_empty() {
            continue;
        }
        text.push_str(SEPARATOR);
        text.push('\n');
        for (i, frame) in stack.frames.iter().enumerate() {
            let name = &stacks.frame(*frame).name;
            if i == 0 {
                let _ = writeln!(text, "{:>10}   {name}", stack.value);
            } else {
                text.push_str("             ");
                text.push_str(name);
                text.push('\n');
            }
        }
        if text.len() > 1 << 16 {
            out.write_all(text.as_bytes())?;
            text.clear();
        }
    }
    out.write_all(text.as_bytes())?;
    if !distinct.is_empty() {
        writeln!(out, "{SEPARATOR}")?;
    }
    Ok(())
}
