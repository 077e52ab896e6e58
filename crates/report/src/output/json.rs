//! `--json`: the text report's totals and rows as one JSON object, for
//! scripts and CI gates. Schema `cpuprof-report/1`:
//!
//! ```json
//! {"schema":"cpuprof-report/1","total":491,"shown_total":491,
//!  "unit":"samples","sample_type":{"type":"samples","unit":"count"},
//!  "output_unit":"count","total_label":"491","shown_total_label":"491",
//!  "granularity":"functions",
//!  "rows":[{"name":"burn_a","file":"/src/spin.c","flat":280,
//!           "flat_percent":57.0,"cum":284,"cum_percent":57.8,
//!           "flat_label":"280","cum_label":"284"}]}
//! ```
//!
//! Values are raw (in the sample type's unit); `output_unit` is the unit
//! `--text` prints them in (the `unit` setting, as Go pprof chooses it:
//! `ms`, `s`, `kB`; the sample unit for counts) and the `*_label` fields
//! are the values as `--text` prints them (`1.82s`).
//! `total` is the `Total:` of `--text` (every sample, before `--focus` and
//! `--ignore`); `shown_total` is what the percentages are relative to (the
//! kept samples). In a diff (`--base`), `total` and `shown_total` are
//! sums of changes, `base_total` (and `base_total_label`) is the base's
//! total and the percentages are of it, as Go pprof's `-diff_base`
//! prints them. Rows are `--text`'s rows in its order (`--cum`,
//! `--nodecount` apply); percentages are the values `--text` prints
//! (rounded to 0.1), or null when the total is zero.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::escape::push_json_string;
use crate::graph::Graph;
use crate::graph::{percent_base, percent_total, row_measure, rows};
use crate::measure::unit_word;
use crate::options::Options;
use crate::stacks::Stacks;

/// The schema name written in every report.
pub const SCHEMA: &str = "cpuprof-report/1";

/// Writes the JSON report (one line, then a newline), with the 95%
/// intervals.
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
) -> io::Result<()> {
    write_with(out, stacks, graph, options, 0.95, None)
}

/// Writes the JSON report with intervals at `level` (each row's
/// `flat_interval` and `cum_interval`, percentages of `shown_total`) and,
/// with `diff`, each row's `change` of cum share against the base.
pub fn write_with(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    level: f64,
    diff: Option<&crate::stats::DiffTable>,
) -> io::Result<()> {
    let shown_total = percent_base(graph);
    // In a diff, percentages are of the base's total (`base_total`).
    let of = percent_total(stacks, graph);
    let shares = crate::stats::Shares::new(stacks, shown_total, level);
    let rows = rows(stacks, graph, options);
    let measure = row_measure(stacks, options, &rows, of);
    let mut s = String::with_capacity(4096);
    s.push_str("{\"schema\":");
    string(&mut s, SCHEMA);
    let _ = write!(
        s,
        ",\"total\":{},\"shown_total\":{shown_total},\"unit\":",
        stacks.grand_total
    );
    string(&mut s, &unit_word(&stacks.sample_type));
    s.push_str(",\"sample_type\":{\"type\":");
    string(&mut s, &stacks.sample_type.kind);
    s.push_str(",\"unit\":");
    string(&mut s, &stacks.sample_type.unit);
    s.push_str("},\"output_unit\":");
    string(&mut s, &measure.output_unit);
    s.push_str(",\"total_label\":");
    string(&mut s, &measure.label(stacks.grand_total));
    s.push_str(",\"shown_total_label\":");
    string(&mut s, &measure.label(shown_total));
    if let Some(base) = stacks.base_total {
        let _ = write!(s, ",\"base_total\":{base},\"base_total_label\":");
        string(&mut s, &measure.label(base));
    }
    s.push_str(",\"granularity\":");
    string(&mut s, stacks.granularity.name());
    let _ = write!(
        s,
        ",\"confidence\":{},\"samples\":{}",
        crate::stats::level_text(level),
        number(shares.samples)
    );
    s.push_str(",\"rows\":[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let frame = stacks.frame(row.frame);
        s.push_str("{\"name\":");
        string(&mut s, &frame.name);
        s.push_str(",\"file\":");
        string(&mut s, &frame.file);
        let _ = write!(s, ",\"flat\":{},\"flat_percent\":", row.flat);
        percent(&mut s, row.flat, of);
        let _ = write!(s, ",\"cum\":{},\"cum_percent\":", row.cum);
        percent(&mut s, row.cum, of);
        s.push_str(",\"flat_label\":");
        string(&mut s, &measure.label(row.flat));
        s.push_str(",\"cum_label\":");
        string(&mut s, &measure.label(row.cum));
        if shown_total != 0 {
            interval(&mut s, "flat_interval", shares.interval(row.flat));
            interval(&mut s, "cum_interval", shares.interval(row.cum));
        }
        if let Some(c) = diff.and_then(|d| d.changes.get(&frame.name)) {
            let _ = write!(
                s,
                ",\"change\":{{\"old_percent\":{},\"new_percent\":{},\"points\":{},\"interval\":[{},{}],\"p_value\":{},\"significant\":{}}}",
                number(c.change.old * 100.0),
                number(c.change.new * 100.0),
                number(c.change.delta * 100.0),
                number(c.change.interval.0 * 100.0),
                number(c.change.interval.1 * 100.0),
                number(c.change.p_value),
                c.significant
            );
        }
        s.push('}');
    }
    s.push_str("]}\n");
    out.write_all(s.as_bytes())
}

/// `"key":[lo,hi]` of a fraction interval, in percent.
fn interval(s: &mut String, key: &str, (lo, hi): (f64, f64)) {
    let _ = write!(
        s,
        ",\"{key}\":[{},{}]",
        number(lo * 100.0),
        number(hi * 100.0)
    );
}

/// A number rounded to 4 decimals (JSON has no NaN: null).
fn number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_string();
    }
    let rounded = (x * 1e4).round() / 1e4;
    let text = format!("{rounded}");
    if text == "-0" {
        "0".to_string()
    } else {
        text
    }
}

/// `value` as a percentage of `total` rounded as `--text` prints it, or
/// `null` of a zero total.
fn percent(s: &mut String, value: i64, total: i64) {
    if total == 0 {
        s.push_str("null");
        return;
    }
    let text = crate::measure::percent(value, total);
    let number = text.trim_end_matches('%');
    // `-0.0` is valid JSON, and so is every `%.1f` of a finite value.
    s.push_str(number);
}

/// A JSON string literal.
fn string(s: &mut String, text: &str) {
    push_json_string(s, text, false);
}

#[cfg(test)]
mod tests {
    use super::string;

    #[test]
    fn strings_are_escaped() {
        let mut s = String::new();
        string(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
