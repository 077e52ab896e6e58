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
    rows.sort_unstable_by(|a, b| {
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
    Percent(value, total).to_string()
}

/// [`percent`] without an allocation, for `{:>6}` in row formatting.
#[derive(Clone, Copy, Debug)]
pub struct Percent(pub i64, pub i64);

impl std::fmt::Display for Percent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::io::Write as _;
        let Percent(value, total) = *self;
        let mut buf = [0u8; 40];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        let _ = if total != 0 {
            let x = value as f64 * 100.0 / total as f64;
            let tenths = x * 10.0;
            let fraction = tenths - tenths.floor();
            if tenths.abs() < 1e15 && (fraction - 0.5).abs() > 1e-6 {
                // Far from a rounding midpoint, rounding the scaled value
                // gives what `%.1f` prints, without float formatting.
                let t = tenths.round() as i64;
                let negative = t < 0 || (t == 0 && x < 0.0);
                let mut digits = [0u8; 24];
                let mut i = digits.len();
                let mut rest = t.unsigned_abs();
                // The tenths digit, the point, then at least one more digit.
                let mut written = 0;
                while written < 2 || rest != 0 {
                    i -= 1;
                    digits[i] = b'0' + (rest % 10) as u8;
                    rest /= 10;
                    written += 1;
                    if written == 1 {
                        i -= 1;
                        digits[i] = b'.';
                    }
                }
                if negative {
                    i -= 1;
                    digits[i] = b'-';
                }
                let _ = cursor.write_all(&digits[i..]);
                cursor.write_all(b"%")
            } else {
                write!(cursor, "{x:.1}%")
            }
        } else if value == 0 {
            write!(cursor, "nan")
        } else if value > 0 {
            write!(cursor, "+inf")
        } else {
            write!(cursor, "-inf")
        };
        let len = cursor.position() as usize;
        f.pad(std::str::from_utf8(&buf[..len]).unwrap_or("?"))
    }
}

/// The total the percentages of a report are relative to: the sum of the
/// flat values of the kept samples.
pub fn percent_base(graph: &Graph) -> i64 {
    graph.nodes.iter().map(|n| n.flat).sum()
}

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
        writeln!(out, "Total: {} {}", stacks.grand_total, unit_word(stacks))?;
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

#[cfg(test)]
mod tests {
    use super::Percent;

    #[test]
    fn percent_matches_printf_rounding() {
        // Values checked against C's printf("%.1f%%").
        let cases = [
            ((1, 3), "33.3%"),
            ((2, 3), "66.7%"),
            ((1, 2000), "0.1%"),
            ((3, 2000), "0.1%"),
            ((1, 8), "12.5%"),
            ((1, 1600), "0.1%"),
            ((-1, 3), "-33.3%"),
            ((-1, 2001), "-0.0%"),
            ((0, 5), "0.0%"),
            ((5, 5), "100.0%"),
            ((0, 0), "nan"),
            ((2, 0), "+inf"),
        ];
        for ((v, t), expected) in cases {
            assert_eq!(Percent(v, t).to_string(), expected, "{v}/{t}");
        }
        for total in 1..400 {
            for v in -total..=total {
                let slow = format!("{:.1}%", v as f64 * 100.0 / total as f64);
                assert_eq!(Percent(v, total).to_string(), slow, "{v}/{total}");
            }
        }
    }
}
