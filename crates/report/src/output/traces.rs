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
//! Values with a unit (time, bytes) print as Go pprof's `-traces` prints
//! them: its header, one block per sample in the profile's order (samples
//! of value 0 too, such as a freed allocation's `inuse_space`), each value
//! scaled on its own, inlined frames marked ` (inline)`; as Go, samples
//! whose values are all 0 are left out.
//!
//! Counts (gperftools CPU profiles) keep the summed layout: samples with
//! the same frames are one block (the stacks are those of
//! [`crate::distinct`]), blocks sorted by value, largest first, then as
//! `--collapsed` sorts them, stacks of value 0 left out.
//!
//! Samples with labels have them above their stack, as Go prints them
//! (`%10s:  values`, see [`crate::tags::trace_lines`]); samples with the
//! same frames but different shown labels are separate blocks.

use std::fmt::Write as _;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::distinct::{compare_stacks, distinct_stacks, name_ranks, DistinctStack};
use crate::legend::profile_labels;
use crate::measure::{is_scaled_unit, unit_word, Measure};
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};
use crate::tags::{trace_lines, LabelFormat, TagOptions};

/// The separator line between stacks, as Go pprof prints it.
pub const SEPARATOR: &str = "-----------+-------------------------------------------------------";

/// Writes the traces report of `stacks`; `program` names the profiled
/// program in the header.
pub fn write(out: &mut dyn Write, stacks: &Stacks, program: &str) -> io::Result<()> {
    write_labelled(out, stacks, program, &TagOptions::default(), "minimum")
}

/// The distinct stacks of `stacks` and the label lines above each, in
/// print order (largest value first, then `--collapsed`'s order).
fn labelled_stacks(stacks: &Stacks, tags: &TagOptions) -> Vec<(String, DistinctStack)> {
    let labelled =
        (0..stacks.len()).any(|i| stacks.sample(i).labels.iter().any(|l| tags.shows(&l.key)));
    if !labelled {
        // Already in `--collapsed`'s order: a stable sort by value keeps
        // it among equal values.
        let mut distinct = distinct_stacks(stacks);
        distinct.sort_by_key(|s| std::cmp::Reverse(s.value));
        return distinct.into_iter().map(|s| (String::new(), s)).collect();
    }
    let format = LabelFormat::new(stacks.profile());
    let mut sums: FxHashMap<(String, Vec<FrameId>), i64> = FxHashMap::default();
    let mut frames = Vec::with_capacity(256);
    for i in 0..stacks.len() {
        let value = stacks.expand(i, &mut frames);
        let lines = trace_lines(&stacks.sample(i).labels, &format, tags);
        *sums.entry((lines, frames.clone())).or_insert(0) += value;
    }
    let mut distinct: Vec<(String, DistinctStack)> = sums
        .into_iter()
        .filter(|(_, value)| *value != 0)
        .map(|((lines, frames), value)| (lines, DistinctStack { frames, value }))
        .collect();
    let ranks = name_ranks(stacks);
    distinct.sort_unstable_by(|a, b| {
        b.1.value
            .cmp(&a.1.value)
            .then_with(|| compare_stacks(&ranks, &a.1.frames, &b.1.frames))
            .then_with(|| a.0.cmp(&b.0))
    });
    distinct
}

/// [`write`], with the labels `tags` shows above each stack.
pub fn write_labelled(
    out: &mut dyn Write,
    stacks: &Stacks,
    program: &str,
    tags: &TagOptions,
    unit: &str,
) -> io::Result<()> {
    let profile = stacks.profile();
    // Values with a unit: Go pprof's header and values, each scaled on
    // its own as Go's `-traces` does (its unit setting applied as given).
    let measure = is_scaled_unit(&stacks.sample_type.unit).then(|| Measure {
        sample_unit: stacks.sample_type.unit.to_lowercase(),
        output_unit: unit.to_string(),
    });
    if let Some(m) = &measure {
        for label in profile_labels(stacks, &Options::default(), m, stacks.total) {
            writeln!(out, "{label}")?;
        }
        return write_samples(out, stacks, tags, m);
    }
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
    writeln!(
        out,
        "Total: {} {}",
        stacks.total,
        unit_word(&stacks.sample_type)
    )?;
    write_stacks(out, stacks, tags)
}

/// The blocks of `--traces` in Go pprof's manner, for values with a unit:
/// one block per sample, in the profile's order, samples of value 0
/// included (a heap profile's `inuse` of a freed allocation), inlined
/// frames marked ` (inline)`.
fn write_samples(
    out: &mut dyn Write,
    stacks: &Stacks,
    tags: &TagOptions,
    measure: &Measure,
) -> io::Result<()> {
    let format = LabelFormat::new(stacks.profile());
    let mut frames = Vec::with_capacity(256);
    let mut text = String::with_capacity(1 << 16);
    let mut any = false;
    for i in 0..stacks.len() {
        // Go pprof drops the samples whose values are all 0 when it reads
        // a profile (its merge step); a sample with another value is kept.
        if stacks.sample(i).values.iter().all(|&v| v == 0) {
            continue;
        }
        let value = stacks.expand(i, &mut frames);
        if frames.is_empty() {
            continue;
        }
        any = true;
        text.push_str(SEPARATOR);
        text.push('\n');
        text.push_str(&trace_lines(&stacks.sample(i).labels, &format, tags));
        for (depth, id) in frames.iter().enumerate() {
            let frame = stacks.frame(*id);
            let value = if depth == 0 {
                measure.label(value)
            } else {
                String::new()
            };
            let inline = if frame.inlined { " (inline)" } else { "" };
            let _ = writeln!(text, "{value:>10}   {}{inline}", frame.name);
        }
        if text.len() > 1 << 16 {
            out.write_all(text.as_bytes())?;
            text.clear();
        }
    }
    out.write_all(text.as_bytes())?;
    if any {
        writeln!(out, "{SEPARATOR}")?;
    }
    Ok(())
}

/// The blocks of `--traces` for counts: identical stacks summed.
fn write_stacks(out: &mut dyn Write, stacks: &Stacks, tags: &TagOptions) -> io::Result<()> {
    let distinct = labelled_stacks(stacks, tags);
    // Lines are built in a buffer: a big profile has millions of frames.
    let mut text = String::with_capacity(1 << 16);
    for (lines, stack) in &distinct {
        if stack.frames.is_empty() {
            continue;
        }
        text.push_str(SEPARATOR);
        text.push('\n');
        text.push_str(lines);
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
