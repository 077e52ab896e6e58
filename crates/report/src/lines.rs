//! Source lines annotated with values: the [`Listing`] of each function
//! that `--list` ([`crate::output::listing`]) and `--weblist`
//! ([`crate::output::weblist`]) print.
//!
//! Lines are the function's own, inline chains included: a sample's flat
//! goes to the line of its innermost frame (an inlined callee's lines go
//! to the callee's listing), its cum to every line of the stack (once per
//! line, however deep the recursion). The totals are the function's flat
//! and cum as `--text` shows them. The listing spans the function's first
//! line (its declaration) to its last line with samples (or the last line
//! the binary's line table gives it, see [`Listing::extend_to`]), with
//! five lines of context on either side, as perl pprof prints it.

use std::collections::BTreeMap;

use regex::Regex;
use rustc_hash::FxHashMap;

use crate::names;
use crate::options::Granularity;
use crate::stacks::Stacks;

/// Lines of context printed before and after a function.
pub const CONTEXT: i64 = 5;

/// The annotated lines of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The name printed (short unless full names were asked for).
    pub name: String,
    /// The full (demangled) function name.
    pub function: String,
    /// Its source file, as DWARF gives it.
    pub file: String,
    /// Its declaration line, 0 if unknown.
    pub start_line: i64,
    /// The last line of the function known from the binary (0 if none).
    pub end_line: i64,
    /// Samples whose innermost frame is in this function.
    pub flat: i64,
    /// Samples with this function anywhere in the stack.
    pub cum: i64,
    /// (flat, cum) per line; line 0 holds samples without line numbers.
    pub lines: BTreeMap<i64, (i64, i64)>,
}

impl Listing {
    /// The first and last lines of the function proper (without context).
    pub fn range(&self) -> (i64, i64) {
        let sampled = self.lines.keys().copied().filter(|&l| l > 0);
        let first = sampled
            .clone()
            .chain((self.start_line > 0).then_some(self.start_line))
            .min()
            .unwrap_or(0);
        let last = sampled
            .chain((self.end_line > 0).then_some(self.end_line))
            .max()
            .unwrap_or(0);
        (first, last.max(first))
    }

    /// Extends the function's known range to `line` (the last line the
    /// binary's line table attributes to it).
    pub fn extend_to(&mut self, line: i64) {
        self.end_line = self.end_line.max(line);
    }
}

/// The listings of the functions matching `re` (by their short or full
/// name), from stacks built at [`Granularity::Lines`], sorted by name then
/// file. Functions without samples in `stacks` are not listed.
pub fn listings(stacks: &Stacks, re: &Regex, full_names: bool) -> Vec<Listing> {
    debug_assert_eq!(stacks.granularity, Granularity::Lines);
    // Each frame's function, if it matches: an index into `out`.
    let mut out: Vec<Listing> = Vec::new();
    let mut by_function: FxHashMap<(&str, &str), usize> = FxHashMap::default();
    let mut routine_of: Vec<Option<u32>> = Vec::with_capacity(stacks.frames.len());
    for frame in stacks.frames.iter() {
        if frame.function.is_empty() {
            routine_of.push(None);
            continue;
        }
        let short = names::short_name(&frame.function);
        if !re.is_match(&short) && !re.is_match(&frame.function) {
            routine_of.push(None);
            continue;
        }
        let index = *by_function
            .entry((frame.function.as_str(), frame.file.as_str()))
            .or_insert_with(|| {
                out.push(Listing {
                    name: if full_names {
                        frame.function.clone()
                    } else {
                        short
                    },
                    function: frame.function.clone(),
                    file: frame.file.clone(),
                    ..Listing::default()
                });
                out.len() - 1
            });
        routine_of.push(Some(index as u32));
    }
    if out.is_empty() {
        return out;
    }
    // Declaration lines, from the profile's functions.
    for function in &stacks.profile().functions {
        if let Some(&i) = by_function.get(&(function.name.as_str(), function.filename.as_str())) {
            let listing = &mut out[i];
            if function.start_line > 0
                && (listing.start_line == 0 || function.start_line < listing.start_line)
            {
                listing.start_line = function.start_line;
            }
        }
    }

    let mut seen_lines: Vec<(u32, i64)> = Vec::new();
    let mut seen_functions: Vec<u32> = Vec::new();
    stacks.for_each(|frames, value| {
        seen_lines.clear();
        seen_functions.clear();
        for (depth, &id) in frames.iter().enumerate() {
            let Some(r) = routine_of[id.index()] else {
                continue;
            };
            let line = stacks.frame(id).line.max(0);
            let listing = &mut out[r as usize];
            if depth == 0 {
                listing.flat += value;
                listing.lines.entry(line).or_default().0 += value;
            }
            if !seen_lines.contains(&(r, line)) {
                seen_lines.push((r, line));
                listing.lines.entry(line).or_default().1 += value;
            }
            if !seen_functions.contains(&r) {
                seen_functions.push(r);
                listing.cum += value;
            }
        }
    });
    out.retain(|l| !l.lines.is_empty());
    out.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.file.cmp(&b.file)));
    out
}

/// Extends each listing to the last line its function has in the line
/// table of its binary (`binaries` per mapping, as
/// [`cpuprof_symbolize::Symbolizer::binaries_for`] gives them), so that a function's
/// closing lines are shown even without samples. Only functions with a
/// sampled real (not inlined) frame are extended: the symbol holding
/// that frame's address is read, and a line counts when the inline chain
/// at its address has the function at that line.
pub fn extend_from_binaries(
    listings: &mut [Listing],
    stacks: &Stacks,
    binaries: &[Option<std::sync::Arc<cpuprof_symbolize::Binary>>],
) {
    let profile = stacks.profile();
    let mut done = vec![false; listings.len()];
    for frame in stacks.frames.iter() {
        if frame.inlined || frame.function.is_empty() {
            continue;
        }
        let Some(i) = listings
            .iter()
            .position(|l| l.function == frame.function && l.file == frame.file)
        else {
            continue;
        };
        if done[i] {
            continue;
        }
        let Some(mapping) = frame.mapping else {
            continue;
        };
        let Some(binary) = binaries.get(mapping.index()).and_then(Option::as_ref) else {
            continue;
        };
        let Some(file_address) = binary.runtime_to_file(profile.mapping(mapping), frame.address)
        else {
            continue;
        };
        let Some(symbol) = binary.symbol_at(file_address) else {
            continue;
        };
        done[i] = true;
        let listing = &mut listings[i];
        let mut rows = binary.line_table(symbol.address..symbol.address + symbol.size.max(1));
        rows.retain(|r| r.1 == listing.file && i64::from(r.2) > listing.range().1);
        rows.sort_by_key(|r| std::cmp::Reverse(r.2));
        for (address, _, line) in rows {
            let own = binary.frames(address).iter().any(|f| {
                f.line == line && f.file == listing.file && f.function == listing.function
            });
            if own {
                listing.extend_to(i64::from(line));
                break;
            }
        }
    }
}
