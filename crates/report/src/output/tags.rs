//! `--tags`: per shown label key, its total over the kept samples and
//! each value's share, largest first, as Go pprof's `-tags` lays it out.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::measure::{percentage, scale};
use crate::stacks::Stacks;
use crate::tags::{LabelFormat, TagOptions};

/// Writes `--tags`: per shown key (sorted), its total over the kept
/// samples and each value's share, largest first, as Go pprof's `-tags`
/// lays it out (its tabwriter's right-aligned columns).
pub fn write(out: &mut dyn Write, stacks: &Stacks, options: &TagOptions) -> io::Result<()> {
    let format = LabelFormat::new(stacks.profile());
    let mut keys: FxHashMap<&str, FxHashMap<String, i64>> = FxHashMap::default();
    for i in 0..stacks.len() {
        let value = stacks.value(i);
        for label in &stacks.sample(i).labels {
            if !options.shows(&label.key) {
                continue;
            }
            let values = keys.entry(&label.key).or_default();
            *values.entry(format.value(label)).or_insert(0) += value;
        }
    }
    let mut keys: Vec<(&str, FxHashMap<String, i64>)> = keys.into_iter().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    let unit = stacks.sample_type.unit.as_str();
    let amount = |v: i64| {
        let (v, u) = scale(v, unit, "minimum");
        format!("{v:.1}{u}")
    };
    let mut text = String::new();
    for (key, values) in keys {
        let total: i64 = values.values().sum();
        let mut values: Vec<(String, i64)> = values.into_iter().collect();
        values.sort_by(|a, b| {
            b.1.unsigned_abs()
                .cmp(&a.1.unsigned_abs())
                .then_with(|| a.0.cmp(&b.0))
        });
        let cells: Vec<String> = values
            .iter()
            .map(|(_, v)| {
                if total > 0 {
                    format!("{} ({}):", amount(*v), percentage(*v, total))
                } else {
                    format!("{}:", amount(*v))
                }
            })
            .collect();
        let head = format!("{key}:");
        let first = head.chars().count().max(1) + 1;
        let second = cells.iter().map(|c| c.chars().count()).max().unwrap_or(0) + 1;
        text.push_str(&format!("{head:>first$} Total {}\n", amount(total)));
        for ((name, _), cell) in values.iter().zip(&cells) {
            text.push_str(&format!("{:>first$}{cell:>second$} {name}\n", " "));
        }
        text.push('\n');
    }
    out.write_all(text.as_bytes())
}
