//! The call graph in Graphviz DOT, as perl pprof's `--dot` writes it (the
//! guide's "Node Information", "Edge Information" and "Meta Information"):
//!
//! ```text
//! digraph "prog; 1234 samples" {
//! node [width=0.375,height=0.25];
//! Legend [shape=box,fontsize=24,shape=plaintext,label="prog\lTotal samples: 1234\l…\l"];
//! N1 [label="main\n0 (0.0%)\rof 1234 (100.0%)\r",shape=box,fontsize=8.0];
//! N1 -> N2 [label=1234, weight=146, style="setlinewidth(2.000000)"];
//! }
//! ```
//!
//! Names break into lines at whitespace and `::`; the font size grows with
//! the local count (`8 + 50·√(flat/total)`), which is what makes boxes
//! proportional to it; edges are labelled with their samples, their width
//! is `2·min(1, 3·weight/total)` (at least 1 for SVG, which draws thinner
//! lines poorly), their dot weight `min(weight^0.7, 100000)`; edges into
//! inlined calls are dashed. Unlike pprof, quotes and backslashes in names
//! are escaped, so any name gives valid DOT.

use std::io::{self, Write};

use crate::callgraph::CallGraph;

/// How the DOT will be used: pprof widens thin edges for SVG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DotTarget {
    /// `--dot`, `--ps`, `--pdf`, `--gif`, `--png`.
    Plain,
    /// `--svg` and `--web` through dot.
    Svg,
}

/// Escapes text for a DOT double-quoted string in which pprof's `\n`,
/// `\r` and `\l` line breaks are added separately.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The pen width pprof gives an edge.
pub fn pen_width(weight: i64, total: i64, target: DotTarget) -> f64 {
    let fraction = if total != 0 {
        (3.0 * weight as f64 / total as f64).abs().min(1.0)
    } else {
        0.0
    };
    let width = fraction * 2.0;
    if width < 1.0 && target == DotTarget::Svg {
        1.0
    } else {
        width
    }
}

/// Writes `graph` as DOT.
pub fn write(out: &mut dyn Write, graph: &CallGraph, target: DotTarget) -> io::Result<()> {
    writeln!(out, "digraph \"{}\" {{", escape(&graph.title()))?;
    writeln!(out, "node [width=0.375,height=0.25];")?;
    let mut legend = String::new();
    for line in graph.legend() {
        legend.push_str(&escape(&line));
        legend.push_str("\\l");
    }
    writeln!(
        out,
        "Legend [shape=box,fontsize=24,shape=plaintext,label=\"{legend}\"];"
    )?;
    for (index, node) in graph.nodes.iter().enumerate() {
        let name = CallGraph::name_lines(&node.name)
            .iter()
            .map(|part| escape(part))
            .collect::<Vec<_>>()
            .join("\\n");
        let values = graph.value_lines(node).join("\\r");
        // A diff's colours: significant growth, shrinkage, noise.
        let colors = graph.node_changes.get(index).map_or(String::new(), |c| {
            let (fill, stroke) = c.colors();
            format!(
                ",style=filled,fillcolor=\"{fill}\",color=\"{stroke}\",class=\"{}\"",
                c.name()
            )
        });
        writeln!(
            out,
            "N{} [label=\"{}\\n{}\\r\",shape=box,fontsize={:.1}{colors}];",
            index + 1,
            name,
            values,
            graph.font_size(node)
        )?;
    }
    for edge in &graph.edges {
        let weight = (edge.weight.abs() as f64).powf(0.7).min(100_000.0) as i64;
        let mut style = format!(
            "setlinewidth({:.6})",
            pen_width(edge.weight, graph.local_total, target)
        );
        if edge.inlined {
            style.push_str(",dashed");
        }
        // A number stays bare, as perl pprof writes it; a scaled label
        // (`1.82s`) is no DOT numeral and is quoted.
        let label = graph.value(edge.weight);
        let label = if label.parse::<f64>().is_ok() {
            label
        } else {
            format!("\"{}\"", escape(&label))
        };
        writeln!(
            out,
            "N{} -> N{} [label={}, weight={}, style=\"{}\"];",
            edge.caller + 1,
            edge.callee + 1,
            label,
            weight,
            style
        )?;
    }
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_quotes_and_backslashes() {
        assert_eq!(escape(r#"operator"" \x"#), r#"operator\"\" \\x"#);
    }

    #[test]
    fn pen_widths_follow_pprof() {
        assert_eq!(pen_width(50, 100, DotTarget::Plain), 2.0);
        assert!((pen_width(10, 100, DotTarget::Plain) - 0.6).abs() < 1e-12);
        assert_eq!(pen_width(10, 100, DotTarget::Svg), 1.0);
        assert_eq!(pen_width(1, 0, DotTarget::Plain), 0.0);
    }
}
