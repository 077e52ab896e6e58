//! `--dcpiprof`: a per-procedure report in the manner of DCPI's
//! `dcpiprof`: one row per procedure and image, sorted by samples, with
//! the percentage and the cumulative percentage.
//!
//! ```text
//! Column          Total  Period (for events)
//! ------          -----  ------
//! samples           118  4000000 cpu/nanoseconds
//!
//! ===========================================================================
//!  samples       %    cum% procedure                      image
//!       70  59.32%  59.32% burn_a                         spin
//! ```
//!
//! Each sample counts at its leaf address; the procedure is the function
//! the address belongs to (the outermost frame of its inline chain), or
//! the address when unsymbolized; the image is the mapping's file name.
//!
//! Time and byte values are scaled as the text report scales them (the
//! `unit` setting; `minimum`: one unit for the whole report, that of its
//! smallest row), the column as wide as its widest value:
//!
//! ```text
//! Column          Total  Period (for events)
//! ------          -----  ------
//! cpu             330ms  10ms cpu
//!
//! ===========================================================================
//!      cpu       %    cum% procedure                      image
//!    200ms  60.61%  60.61% main.burnA                     goprof
//! ```

use std::fmt::Write as _;
use std::io::{self, Write};

use cpuprof_profile::Profile;
use rustc_hash::FxHashMap;

use crate::measure::{is_scaled_unit, Measure};

/// Writes the per-procedure report of `profile`'s `sample_index` values.
pub fn write(profile: &Profile, sample_index: usize, out: &mut dyn Write) -> io::Result<()> {
    write_with(profile, sample_index, out, None, "minimum")
}

/// [`write`], with the interval of each row's % at confidence `level`
/// (`--confidence`) before the procedure, time and bytes printed under
/// the `unit` setting `unit`.
pub fn write_with(
    profile: &Profile,
    sample_index: usize,
    out: &mut dyn Write,
    level: Option<f64>,
    unit: &str,
) -> io::Result<()> {
    let mut rows: FxHashMap<(String, String), i64> = FxHashMap::default();
    let mut total = 0i64;
    for s in &profile.samples {
        let Some(&leaf) = s.locations.first() else {
            continue;
        };
        let v = s.values.get(sample_index).copied().unwrap_or(0);
        if v == 0 {
            continue;
        }
        let loc = profile.location(leaf);
        let procedure = match loc.lines.last() {
            Some(line) => profile.function(line.function).name.clone(),
            None => format!("0x{:x}", loc.address),
        };
        let image = match loc.mapping {
            Some(m) if !profile.mapping(m).path.is_empty() => {
                profile.mapping(m).base_name().to_string()
            }
            _ => "unknown".to_string(),
        };
        *rows.entry((procedure, image)).or_insert(0) += v;
        total += v;
    }
    let mut rows: Vec<((String, String), i64)> = rows.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let sample_type = profile.sample_types.get(sample_index);
    let column = sample_type.map_or("samples".to_string(), |t| t.kind.clone());
    // Time and bytes: one unit for the report, as the text report's.
    let measure = sample_type
        .filter(|t| is_scaled_unit(&t.unit))
        .map(|t| Measure::select(&t.unit, unit, rows.iter().map(|r| r.1), total, false));
    let label = |v: i64| match &measure {
        Some(m) => m.label(v),
        None => v.to_string(),
    };
    let width = rows
        .iter()
        .map(|r| label(r.1).len())
        .max()
        .unwrap_or(0)
        .max(column.len())
        .max(8);
    let mut text = String::new();
    let _ = writeln!(text, "{:<15} {:>6}  Period (for events)", "Column", "Total");
    let _ = writeln!(text, "{:<15} {:>6}  ------", "------", "-----");
    let period = if profile.period <= 0 {
        "-".to_string()
    } else if is_scaled_unit(&profile.period_type.unit) {
        format!(
            "{} {}",
            Measure::select(&profile.period_type.unit, "auto", [], 0, false).label(profile.period),
            profile.period_type.kind
        )
    } else {
        format!(
            "{} {}/{}",
            profile.period, profile.period_type.kind, profile.period_type.unit
        )
    };
    let _ = writeln!(text, "{column:<15} {:>6}  {period}", label(total));
    text.push('\n');
    text.push_str(&"=".repeat(75));
    text.push('\n');
    // The samples the shares are of: values per period when they are in
    // the period's unit (CPU time).
    let scale = profile
        .sample_types
        .get(sample_index)
        .map_or(1.0, |t| crate::stats::value_per_sample_of(profile, t));
    let z = level.map(crate::stats::z_for);
    let interval_header = match level {
        Some(l) => format!(" {:<13}", format!("{}% CI", crate::stats::level_text(l))),
        None => String::new(),
    };
    let _ = writeln!(
        text,
        "{column:>width$} {:>7}{interval_header} {:>7} {:<30} image",
        "%", "cum%", "procedure"
    );
    let mut cum = 0i64;
    for ((procedure, image), v) in rows {
        cum += v;
        let pct = |x: i64| {
            if total != 0 {
                100.0 * x as f64 / total as f64
            } else {
                0.0
            }
        };
        let interval = match z {
            Some(z) => format!(
                " {:<13}",
                crate::stats::format_interval(crate::stats::wilson(
                    v.unsigned_abs() as f64 / scale,
                    total.unsigned_abs() as f64 / scale,
                    z
                ))
            ),
            None => String::new(),
        };
        let _ = writeln!(
            text,
            "{:>width$} {:>6.2}%{interval} {:>6.2}% {procedure:<30} {image}",
            label(v),
            pct(v),
            pct(cum)
        );
    }
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpuprof_profile::{Function, Line, Mapping, ProfileBuilder, ValueType};

    #[test]
    fn rows_per_procedure_and_image_with_cumulative_percentages() {
        let mut b = ProfileBuilder::new(vec![ValueType::new("samples", "count")]);
        b.profile.mappings = vec![Mapping {
            start: 0x1000,
            limit: 0x2000,
            path: "/bin/app".into(),
            ..Mapping::default()
        }];
        let f = b.function(Function {
            name: "main".into(),
            ..Function::default()
        });
        let g = b.function(Function {
            name: "work".into(),
            ..Function::default()
        });
        let a = b.location_at(0x1010);
        let c = b.location_at(0x1020);
        let d = b.location_at(0x1030);
        let x = b.location_at(0x9000);
        b.profile.locations[a.index()].lines = vec![Line {
            function: f,
            line: 0,
            column: 0,
        }];
        b.profile.locations[c.index()].lines = vec![Line {
            function: g,
            line: 0,
            column: 0,
        }];
        b.profile.locations[d.index()].lines = vec![Line {
            function: g,
            line: 0,
            column: 0,
        }];
        b.add_sample(vec![a], vec![1]);
        b.add_sample(vec![c], vec![2]);
        b.add_sample(vec![d, a], vec![3]);
        b.add_sample(vec![x], vec![2]);
        let p = b.finish();
        let mut out = Vec::new();
        write(&p, 0, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().skip(6).collect();
        assert_eq!(
            rows[0],
            "       5  62.50%  62.50% work                           app"
        );
        assert_eq!(
            rows[1],
            "       2  25.00%  87.50% 0x9000                         unknown"
        );
        assert_eq!(
            rows[2],
            "       1  12.50% 100.00% main                           app"
        );
        assert!(text.contains("samples              8"), "{text}");
    }
}
