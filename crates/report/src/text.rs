//! The text report, as perl pprof prints it ("Analyzing Text Output"):
//! `Total: N samples`, then one row per node:
//! `flat flat% sum% cum cum% name` with `%8s %6s %6s %8s %6s %s`.

use std::io::{self, Write};

use crate::graph::Graph;
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};

/// One row of the text report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The frame of the row.
    pub frame: FrameId,
    /// Its flat value.
    pub flat: i64,
    /// Its cumulative value.
    pub cum: i64,
}

/// The unit word printed after totals: the kind for counts (`samples`),
/// else the unit (`nanoseconds`).
pub fn unit_word(stacks: &Stacks) -> String {
    let t = &stacks.sample_type;
    if t.unit == "count" || t.unit.is_empty() {
        if t.kind.is_empty() {
            "samples".to_string()
        } else {
            t.kind.clone()
        }
    } else {
        t.unit.clone()
    }
}

/// The rows of the report in print order: by flat (or cum) descending,
/// ties by name; rows whose flat and cum are both zero are left out;
/// at most `options.nodecount` rows.
pub fn rows(stacks: &Stacks, graph: &Graph, options: &Options) -> Vec<Row> {
    let mut rows: Vec<Row> = graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.flat != 0 || n.cum != 0)
        .filter(|(_, n)| !(options.drop_negative && n.cum < 0))
        .map(|(i, n)| Row {
            frame: FrameId(i as u32),
            flat: n.flat,
            cum: n.cum,
        })
        .collect();
    let key = |r: &Row| if options.cum { r.cum } else { r.flat };
    rows.sort_by(|a, b| {
        key(b)
            .cmp(&key(a))
            .then_with(|| stacks.frame(a.frame).name.cmp(&stacks.frame(b.frame).name))
    });
    if let Some(n) = options.nodecount {
        rows.truncate(n);
    }
    rows
}

/// A percentage as pprof prints it: `%.1f%%`, `nan` of a zero total.
pub fn percent(value: i64, total: i64) -> String {
    if total != 0 {
        format!("{:.1}%", value as f64 * 100.0 / total as f64)
    } else if value == 0 {
        "nan".to_string()
    } else if value > 0 {
        "+inf".to_string()
    } else {
        "-inf".to_string()
    }
}

/// The total the percentages of a report are relative to: the sum of the
/// flat values of the kept samples.
pub fn percent_base(graph: &Graph) -> i64 {
    graph.nodes.iter().map(|n| n.flat).sum()
}

/// Writes the text report.
pub fn write(out: &mut dyn Write, stacks: &Stacks, graph: &Graph, options: &Options) -> io::Result<()> {
    let total = percent_base(graph);
    if stacks.grand_total != 0 {
        writeln!(out, "Total: {} {}", stacks.grand_total, unit_word(stacks))?;
    }
    let mut running = 0i64;
    for row in rows(stacks, graph, options) {
        running += row.flat;
        writeln!(
            out,
            "{:>8} {:>6} {:>6} {:>8} {:>6} {}",
            row.flat,
            percent(row.flat, total),
            percent(running, total),
            row.cum,
            percent(row.cum, total),
            stacks.frame(row.frame).name
        )?;
    }
    Ok(())
}
