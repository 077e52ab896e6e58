//! The text report. Two layouts:
//!
//! - for counts (gperftools CPU profiles count samples), perl pprof's
//!   ("Analyzing Text Output"): `Total: N samples`, then one row per node:
//!   `flat flat% sum% cum cum% name` with `%8s %6s %6s %8s %6s %s`;
//! - for values with a unit (time, bytes: profile.proto from `cpuprof
//!   record` or Go), Go pprof's `-top`: the profile's labels (`File:`,
//!   `Type:`, `Duration:`), the active filters, `Showing nodes accounting
//!   for 1.82s, 100% of 1.82s total`, nodes below `--nodefraction` of the
//!   total dropped, then `%10s %s %s %10s %s  name` rows with values scaled
//!   by [`crate::measure`] (the `unit` setting) and Go's percentages.
//!
//! A column wider than its format (a big count) widens the whole column,
//! so that columns line up whatever the values.

use std::io::{self, Write};

use crate::graph::{percent_base, percent_total, row_measure, rows_keeping, trim_rows, Graph, Row};
use crate::legend::profile_labels;
use crate::measure::{is_scaled_unit, percentage, unit_word, Percent, PerlLegacyUnit};
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};

/// Writes the text report.
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
) -> io::Result<()> {
    write_annotated(out, stacks, graph, options, None)
}

/// A column added before the names of the text report: a line saying
/// what it holds (after `Total:`), and its text for each row.
pub struct Annotation<'a> {
    /// The line after `Total:`.
    pub legend: String,
    /// The column of a row.
    pub column: &'a dyn Fn(&Row) -> String,
    /// The rows shown although their flat and cum are zero (a diff's
    /// function whose value did not change and whose share did).
    pub keep: &'a dyn Fn(FrameId) -> bool,
}

impl<'a> Annotation<'a> {
    /// The rows `annotation` keeps whatever their values: none without one.
    fn keep_of(annotation: &Option<Annotation<'a>>) -> &'a dyn Fn(FrameId) -> bool {
        match annotation {
            Some(a) => a.keep,
            None => &|_| false,
        }
    }
}

/// Writes the text report, with `annotation`'s column before each name.
pub fn write_annotated(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    annotation: Option<Annotation>,
) -> io::Result<()> {
    // A gperftools heap or contention profile prints as perl pprof prints
    // it: MB, seconds; other profiles with a unit as Go pprof prints them.
    let legacy = PerlLegacyUnit::of(stacks.profile(), &stacks.sample_type);
    if legacy.is_none() && is_scaled_unit(&stacks.sample_type.unit) {
        return write_go(out, stacks, graph, options, annotation);
    }
    let total = percent_total(stacks, graph);
    let value = |v: i64| -> String {
        match legacy {
            Some(unit) => unit.format(v),
            None => v.to_string(),
        }
    };
    let word = match legacy {
        Some(unit) => unit.word().to_string(),
        None => unit_word(&stacks.sample_type),
    };
    match stacks.base_total {
        // A diff (`--base`): the base's total, the rows being changes
        // from it and their percentages of it (as Go's `-diff_base`).
        Some(base) => {
            let change = percent_base(graph);
            writeln!(
                out,
                "Total: {} {word} in the base; rows are changes from it, percentages of {} (shown: {}{} {word}, {})",
                value(base),
                if base == 0 { "their total" } else { "it" },
                if change > 0 { "+" } else { "" },
                value(change),
                // Two empty profiles: no change, and no nan (Go's `0%`).
                if total == 0 && change == 0 {
                    "0.0%".to_string()
                } else {
                    Percent(change, total).to_string()
                }
            )?;
        }
        None if stacks.grand_total != 0 => {
            writeln!(out, "Total: {} {word}", value(stacks.grand_total))?;
        }
        None => {}
    }
    if let Some(a) = &annotation {
        writeln!(out, "{}", a.legend)?;
    }
    let mut running = 0i64;
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cell = String::with_capacity(32);
    let rows = rows_keeping(stacks, graph, options, Annotation::keep_of(&annotation));
    // `%8s`, wider when a value is.
    let width = rows
        .iter()
        .map(|r| match legacy {
            Some(unit) => unit.format(r.flat).len().max(unit.format(r.cum).len()),
            None => digits(r.flat).max(digits(r.cum)),
        })
        .max()
        .unwrap_or(0)
        .max(8);
    for row in rows {
        running += row.flat;
        line.clear();
        // `%8s %6s %6s %8s %6s %s`, built by hand: this runs once per
        // function of the profile.
        let mut column = |value: &dyn std::fmt::Display, width: usize, line: &mut Vec<u8>| {
            use std::fmt::Write as _;
            cell.clear();
            let _ = write!(cell, "{value}");
            line.extend(std::iter::repeat_n(b' ', width.saturating_sub(cell.len())));
            line.extend_from_slice(cell.as_bytes());
            line.push(b' ');
        };
        match legacy {
            Some(unit) => column(&unit.format(row.flat), width, &mut line),
            None => column(&row.flat, width, &mut line),
        }
        column(&Percent(row.flat, total), 6, &mut line);
        column(&Percent(running, total), 6, &mut line);
        match legacy {
            Some(unit) => column(&unit.format(row.cum), width, &mut line),
            None => column(&row.cum, width, &mut line),
        }
        column(&Percent(row.cum, total), 6, &mut line);
        if let Some(a) = &annotation {
            line.extend_from_slice((a.column)(&row).as_bytes());
            line.push(b' ');
        }
        line.extend_from_slice(stacks.frame(row.frame).name.as_bytes());
        line.push(b'\n');
        out.write_all(&line)?;
    }
    Ok(())
}

/// The characters of `value` printed in decimal.
fn digits(value: i64) -> usize {
    let sign = usize::from(value < 0);
    let mut n = value.unsigned_abs();
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d + sign
}

/// The rows Go pprof's `-top` keeps: nodes whose |cum| is below
/// `nodefraction` of the kept samples' total dropped (but those `keep`
/// names), then at most `--nodecount`; with the number dropped and the
/// number before `--nodecount`.
fn go_rows(
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    keep: &dyn Fn(FrameId) -> bool,
) -> (Vec<Row>, usize, usize) {
    // As in `--tree`: Go truncates the cutoff to a whole number of the
    // sample unit.
    let node_cutoff = (percent_total(stacks, graph) as f64 * options.nodefraction)
        .abs()
        .trunc();
    trim_rows(stacks, graph, options, node_cutoff, options.nodecount, keep)
}

/// Go pprof's `-top` layout, for values with a unit.
fn write_go(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    annotation: Option<Annotation>,
) -> io::Result<()> {
    // In a diff, the base's total (Go's `-diff_base`).
    let total = stacks.percent_total();
    let (rows, dropped, candidates) =
        go_rows(stacks, graph, options, Annotation::keep_of(&annotation));
    let measure = row_measure(stacks, options, &rows, total);
    let mut text = String::with_capacity(256 + rows.len() * 80);
    for label in profile_labels(stacks, options, &measure, total) {
        text.push_str(&label);
        text.push('\n');
    }
    let shown: i64 = rows.iter().map(|r| r.flat).sum();
    text.push_str(&format!(
        "Showing nodes accounting for {}, {} of {} total\n",
        measure.label(shown),
        percentage(shown, total).trim(),
        measure.label(total)
    ));
    if total != 0 {
        if dropped > 0 {
            let cutoff = (total as f64 * options.nodefraction).abs() as i64;
            text.push_str(&format!(
                "Dropped {dropped} node{} (cum <= {})\n",
                if dropped > 1 { "s" } else { "" },
                measure.label(cutoff)
            ));
        }
        if !rows.is_empty() && rows.len() < candidates {
            text.push_str(&format!(
                "Showing top {} nodes out of {candidates}\n",
                rows.len()
            ));
        }
    }
    if let Some(a) = &annotation {
        text.push_str(&a.legend);
        text.push('\n');
    }
    let labels: Vec<(String, String)> = rows
        .iter()
        .map(|r| (measure.label(r.flat), measure.label(r.cum)))
        .collect();
    // `%10s`, wider when a value is.
    let width = labels
        .iter()
        .map(|(f, c)| f.len().max(c.len()))
        .max()
        .unwrap_or(0)
        .max(10);
    text.push_str(&format!(
        "{:>width$} {:>5}% {:>5}% {:>width$} {:>5}%\n",
        "flat", "flat", "sum", "cum", "cum"
    ));
    let mut sum = 0i64;
    for (row, (flat, cum)) in rows.iter().zip(&labels) {
        sum += row.flat;
        text.push_str(&format!(
            "{flat:>width$} {} {} {cum:>width$} {}  ",
            percentage(row.flat, total),
            percentage(sum, total),
            percentage(row.cum, total),
        ));
        if let Some(a) = &annotation {
            text.push_str(&(a.column)(row));
            text.push(' ');
        }
        text.push_str(&stacks.frame(row.frame).name);
        text.push('\n');
    }
    out.write_all(text.as_bytes())
}
