//! `--tree`: each node with its callers and callees, as Go pprof's `-tree`
//! prints it. Per node, after a separator line: its callers (the edge
//! weight and its share of the node's cum, `%50s %s |   caller`), the node
//! itself (`flat flat% sum% cum cum%` and `| name`), then its callees (the
//! edge weight and its share of the node's cum).
//!
//! ```text
//! ----------------------------------------------------------+-------------
//!       flat  flat%   sum%        cum   cum%   calls calls% + context
//! ----------------------------------------------------------+-------------
//!                                                284   100% |   recurse
//!        280 57.03% 57.03%        284 57.84%                | burn_a
//!                                                  4  1.41% |   cpu_now
//! ```
//!
//! Nodes are trimmed as Go pprof trims them (`--nodefraction`, 0.005;
//! `--nodecount`, 80; `--edgefraction`, 0.001; see [`write`]) and come in
//! `--text`'s order (`--cum` applies); only edges between shown nodes are
//! listed, each node's callers and callees by decreasing weight, then by
//! name, as Go sorts them.
//!
//! [`write_peek`] is Go pprof's `-peek=RE`: the same blocks for the nodes
//! whose name matches RE only, untrimmed, each with all its callers and
//! callees.
//!
//! Percentages follow Go pprof's
//! `measurement.Percentage`: `100%` within 0.05 of a hundred, `%5.2f%%`
//! from 1%, `%5.2g%%` below.

use std::fmt::Write as _;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use regex::Regex;

use crate::callgraph::DEFAULT_NODECOUNT;
use crate::graph::{percent_total, row_measure, rows, trim_rows, Edge, Graph, Row, CUTOFF_SLACK};
use crate::legend::profile_labels;
use crate::measure::{is_scaled_unit, percentage, unit_word, Measure, Percentage};
use crate::options::Options;
use crate::stacks::{FrameId, Stacks};

/// The separator line between nodes.
pub const SEPARATOR: &str =
    "----------------------------------------------------------+-------------";

/// The column legend under the first separator.
pub const LEGEND: &str = "      flat  flat%   sum%        cum   cum%   calls calls% + context";

/// Writes the tree report of the nodes Go pprof's `-tree` keeps: nodes
/// whose |cum| is below `nodefraction` of the total are dropped, then the
/// first `--nodecount` (default 80) in `--text`'s order are shown, with the
/// edges between them whose |weight| reaches `edgefraction` of the total.
/// `graph` needs no edges: those between the shown nodes are counted here.
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
) -> io::Result<()> {
    write_with(out, stacks, graph, options, None)
}

/// [`write`], each node's line followed by the intervals of its flat%
/// and cum% when `shares` is given (`--confidence`).
pub fn write_with(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    shares: Option<&crate::stats::Shares>,
) -> io::Result<()> {
    // In a diff, the base's total (Go's `-diff_base`).
    let kept_total = percent_total(stacks, graph);
    // Values with a unit: Go's percentages of every sample's total.
    let scaled = is_scaled_unit(&stacks.sample_type.unit);
    let total = if scaled {
        stacks.percent_total()
    } else {
        kept_total
    };
    // Go compares in the profile's finest unit (nanoseconds of CPU for a
    // gperftools profile), so its cutoffs are fractions of a sample; it
    // truncates them to whole nanoseconds, which the slack stands for (so
    // that a value exactly at the cutoff is kept whatever the rounding of
    // `total * fraction`).
    let node_cutoff = (kept_total as f64 * options.nodefraction).abs();
    let edge_cutoff = (kept_total as f64 * options.edgefraction).abs();
    let (rows, dropped_nodes, candidates) = trim_rows(
        stacks,
        graph,
        options,
        node_cutoff,
        Some(options.nodecount.unwrap_or(DEFAULT_NODECOUNT)),
        &|_| false,
    );
    let kept: Vec<FrameId> = rows.iter().map(|r| r.frame).collect();
    let mut edges = Graph::edges_among(stacks, &kept);
    // Go says nothing of these: its last trimming step finds none left.
    edges.retain(|e| e.weight.abs() as f64 + CUTOFF_SLACK >= edge_cutoff);
    let shown_flat: i64 = rows.iter().map(|r| r.flat).sum();
    let measure = scaled.then(|| row_measure(stacks, options, &rows, total));
    if let Some(m) = &measure {
        for label in profile_labels(stacks, options, m, total) {
            writeln!(out, "{label}")?;
        }
    }
    summary(out, stacks, shown_flat, total, measure.as_ref())?;
    if dropped_nodes > 0 {
        let cutoff = match &measure {
            Some(m) => m.label((total as f64 * options.nodefraction).abs() as i64),
            None => go_g4(node_cutoff),
        };
        writeln!(
            out,
            "Dropped {dropped_nodes} node{} (cum <= {cutoff})",
            if dropped_nodes > 1 || measure.is_none() {
                "s"
            } else {
                ""
            }
        )?;
    }
    if rows.len() < candidates {
        writeln!(out, "Showing top {} nodes out of {candidates}", rows.len())?;
    }
    write_blocks(out, stacks, &rows, &edges, total, shares, measure.as_ref())
}

/// Writes Go pprof's `-peek=RE` report: the `-tree` blocks of the nodes
/// whose name matches `re`, in `--text`'s order (`--cum` applies), each
/// with all its callers and callees. Like Go, whose driver turns trimming
/// off for `peek`, nothing is trimmed: `nodecount`, `nodefraction` and
/// `edgefraction` of `options` are not applied, and the summary line
/// counts every node. `sum%` adds up the matching nodes only, as Go's
/// does. `graph` needs no edges: those of the matching nodes are counted
/// here. When no node matches, nothing is written and an `InvalidInput`
/// error says so (Go's "no matches found for regexp: RE").
pub fn write_peek(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    re: &Regex,
) -> io::Result<()> {
    let total = percent_total(stacks, graph);
    let all = Options {
        nodecount: None,
        ..options.clone()
    };
    let mut rows = rows(stacks, graph, &all);
    let shown_flat: i64 = rows.iter().map(|r| r.flat).sum();
    rows.retain(|r| re.is_match(&stacks.frame(r.frame).name));
    if rows.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no matches found for regexp: {re}"),
        ));
    }
    let edges = edges_touching(stacks, &rows);
    let scaled = is_scaled_unit(&stacks.sample_type.unit);
    let total = if scaled {
        stacks.percent_total()
    } else {
        total
    };
    let measure = scaled.then(|| row_measure(stacks, options, &rows, total));
    if let Some(m) = &measure {
        for label in profile_labels(stacks, options, m, total) {
            writeln!(out, "{label}")?;
        }
    }
    summary(out, stacks, shown_flat, total, measure.as_ref())?;
    write_blocks(out, stacks, &rows, &edges, total, None, measure.as_ref())
}

/// `Showing nodes accounting for ...`, the first line of both reports.
fn summary(
    out: &mut dyn Write,
    stacks: &Stacks,
    shown_flat: i64,
    total: i64,
    measure: Option<&Measure>,
) -> io::Result<()> {
    if let Some(m) = measure {
        return writeln!(
            out,
            "Showing nodes accounting for {}, {} of {} total",
            m.label(shown_flat),
            percentage(shown_flat, total).trim_start(),
            m.label(total)
        );
    }
    writeln!(
        out,
        "Showing nodes accounting for {shown_flat}, {} of {total} {} total",
        percentage(shown_flat, total).trim_start(),
        unit_word(&stacks.sample_type),
    )
}

/// The edges with an end in `rows`, as [`Graph::edges_among`] would count
/// them among those nodes and their neighbours (adjacent frames of a
/// stack, recursion counted once per sample).
fn edges_touching(stacks: &Stacks, rows: &[Row]) -> Vec<Edge> {
    let mut matched = vec![false; stacks.frames.len()];
    for row in rows {
        matched[row.frame.index()] = true;
    }
    Graph::edges_touching(stacks, &matched)
}

/// The separator, the legend, then one block per row (its callers, itself,
/// its callees, each list by decreasing |weight|, then caller name, then
/// callee name, as Go's `EdgeMap.Sort`; no self-edges, as Go's graph has
/// none), then a closing separator. `sum%` adds up the flat of `rows`
/// only.
fn write_blocks(
    out: &mut dyn Write,
    stacks: &Stacks,
    rows: &[Row],
    edges: &[Edge],
    total: i64,
    shares: Option<&crate::stats::Shares>,
    measure: Option<&Measure>,
) -> io::Result<()> {
    let value = |v: i64| match measure {
        Some(m) => m.label(v),
        None => v.to_string(),
    };
    let name = |id: FrameId| stacks.frame(id).name.as_str();
    let mut callers: FxHashMap<FrameId, Vec<&Edge>> = FxHashMap::default();
    let mut callees: FxHashMap<FrameId, Vec<&Edge>> = FxHashMap::default();
    // Go's graph has no self-edges: a recursive call is in the node's cum.
    for edge in edges.iter().filter(|e| e.caller != e.callee) {
        callers.entry(edge.callee).or_default().push(edge);
        callees.entry(edge.caller).or_default().push(edge);
    }
    let by_weight_then_names = |a: &&Edge, b: &&Edge| {
        b.weight
            .abs()
            .cmp(&a.weight.abs())
            .then_with(|| name(a.caller).cmp(name(b.caller)))
            .then_with(|| name(a.callee).cmp(name(b.callee)))
    };
    for list in callers.values_mut().chain(callees.values_mut()) {
        list.sort_by(by_weight_then_names);
    }
    writeln!(out, "{SEPARATOR}")?;
    writeln!(out, "{LEGEND}")?;
    // Lines are built in a buffer: a big profile has millions of edges.
    let mut s = String::with_capacity(1 << 16);
    let mut sum = 0i64;
    for row in rows {
        s.push_str(SEPARATOR);
        s.push('\n');
        for edge in callers.get(&row.frame).into_iter().flatten() {
            edge_line(
                &mut s,
                &value(edge.weight),
                edge.weight,
                row.cum,
                name(edge.caller),
            );
        }
        sum += row.flat;
        let _ = writeln!(
            s,
            "{:>10} {} {} {:>10} {}                | {}",
            value(row.flat),
            Percentage(row.flat, total),
            Percentage(sum, total),
            value(row.cum),
            Percentage(row.cum, total),
            name(row.frame)
        );
        if let Some(shares) = shares {
            s.pop();
            let _ = writeln!(
                s,
                "   flat% {} cum% {}",
                crate::stats::format_interval(shares.interval(row.flat)),
                crate::stats::format_interval(shares.interval(row.cum))
            );
        }
        for edge in callees.get(&row.frame).into_iter().flatten() {
            edge_line(
                &mut s,
                &value(edge.weight),
                edge.weight,
                row.cum,
                name(edge.callee),
            );
        }
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    if !rows.is_empty() {
        s.push_str(SEPARATOR);
        s.push('\n');
    }
    out.write_all(s.as_bytes())
}

/// `%50s %s |   %s` of an edge: its weight, its share of the node's cum,
/// the other end. Padded by hand: `{:>50}` pads one character at a time,
/// and a big profile has millions of edges.
fn edge_line(s: &mut String, digits: &str, weight: i64, cum: i64, name: &str) {
    const BLANKS: &str = "                                                  ";
    s.push_str(&BLANKS[..BLANKS.len().saturating_sub(digits.len())]);
    s.push_str(digits);
    s.push(' ');
    let _ = write!(s, "{}", Percentage(weight, cum));
    s.push_str(" |   ");
    s.push_str(name);
    s.push('\n');
}

/// A cutoff as Go prints a value: up to two decimals, trailing zeros
/// dropped (`6.36`, `6`).
fn go_g4(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
