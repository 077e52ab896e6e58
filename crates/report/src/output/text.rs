//! The text report, as perl pprof prints it ("Analyzing Text Output"):
//! `Total: N samples`, then one row per node:
//! `flat flat% sum% cum cum% name` with `%8s %6s %6s %8s %6s %s`.

use std::io::{self, Write};

use crate::graph::{percent_base, rows, Graph, Row};
use crate::measure::{unit_word, Percent};
use crate::options::Options;
use crate::stacks::Stacks;

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
}

/// Writes the text report, with `annotation`'s column before each name.
pub fn write_annotated(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    annotation: Option<Annotation>,
) -> io::Result<()> {
    let total = percent_base(graph);
    if stacks.grand_total != 0 {
        writeln!(
            out,
            "Total: {} {}",
            stacks.grand_total,
            unit_word(&stacks.sample_type)
        )?;
    }
    if let Some(a) = &annotation {
        writeln!(out, "{}", a.legend)?;
    }
    let mut running = 0i64;
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cell = String::with_capacity(32);
    for row in rows(stacks, graph, options) {
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
        column(&row.flat, 8, &mut line);
        column(&Percent(row.flat, total), 6, &mut line);
        column(&Percent(running, total), 6, &mut line);
        column(&row.cum, 8, &mut line);
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
