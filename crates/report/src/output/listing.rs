//! `--list=RE`: annotated source of every function whose name matches
//! RE, in perl pprof's layout:
//!
//! ```text
//! ROUTINE ====================== burn_b in /src/spin.c
//!    166    167 Total samples (flat / cumulative)
//!      .      .   39: }
//! ---
//!      .      .   40: __attribute__((noinline)) double burn_b(double s) {
//!      .      1   42:     while (cpu_now() < end)
//!    166    166   43:         for (int i = 0; i < 100000; i++) x = ...;
//! ---
//! ```
//!
//! Lines are the function's own, inline chains included: a sample's flat
//! goes to the line of its innermost frame (an inlined callee's lines go
//! to the callee's listing), its cum to every line of the stack (once per
//! line, however deep the recursion). The totals are the function's flat
//! and cum as `--text` shows them. The listing spans the function's first
//! line (its declaration) to its last line with samples (or the last line
//! the binary's line table gives it, see [`Listing::extend_to`]), with
//! five lines of context on either side, as perl pprof prints it.

use std::io::{self, Write};

use crate::lines::{Listing, CONTEXT};
use crate::measure::ValueFormat;
use crate::source::SourceFiles;

/// Writes `listings` with their source text (found through `sources`);
/// `values` prints the values and the word after `Total` (`samples`). A
/// source file that cannot be found gives a note and the numbered lines
/// that have samples.
pub fn write(
    out: &mut dyn Write,
    listings: &[Listing],
    values: &ValueFormat,
    sources: &mut SourceFiles,
) -> io::Result<()> {
    let unit = values.word();
    let count = |v: i64| values.cell(v);
    for listing in listings {
        writeln!(
            out,
            "ROUTINE ====================== {} in {}",
            listing.name,
            if listing.file.is_empty() {
                "??"
            } else {
                &listing.file
            }
        )?;
        writeln!(
            out,
            "{:>6} {:>6} Total {unit} (flat / cumulative)",
            count(listing.flat),
            count(listing.cum)
        )?;
        let (first, last) = listing.range();
        let text = sources.lines(&listing.file);
        let row = |out: &mut dyn Write, line: i64, text: &str| -> io::Result<()> {
            let (flat, cum) = listing.lines.get(&line).copied().unwrap_or_default();
            // perl's "%6s %6s %4d: %s", trailing space included.
            writeln!(
                out,
                "{:>6} {:>6} {line:>4}: {text}",
                count(flat),
                count(cum)
            )
        };
        match text {
            Some(text) if first > 0 => {
                let shown_first = (first - CONTEXT).max(1);
                let shown_last = (last + CONTEXT).min(text.len() as i64);
                for line in shown_first..=shown_last {
                    if line == first {
                        writeln!(out, "---")?;
                    }
                    row(out, line, &text[(line - 1) as usize])?;
                    if line == last {
                        writeln!(out, "---")?;
                    }
                }
                // Lines past the end of the file (a stale source).
                for (&line, _) in listing.lines.range(shown_last + 1..) {
                    row(out, line, "(past the end of the source file)")?;
                }
            }
            _ => {
                if !listing.file.is_empty() {
                    writeln!(
                        out,
                        "(source file {} not found: see --source_path and --trim_path)",
                        listing.file
                    )?;
                }
                // Only the lines with samples: without the text, the
                // others say nothing.
                for (&line, _) in listing.lines.range(1..) {
                    row(out, line, "")?;
                }
            }
        }
        if listing.lines.contains_key(&0) {
            let (flat, cum) = listing.lines[&0];
            writeln!(
                out,
                "{:>6} {:>6}   ??: (no line information)",
                count(flat),
                count(cum)
            )?;
        }
    }
    Ok(())
}
