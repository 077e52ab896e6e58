//! `--disasm=RE`: annotated x86-64 disassembly of every function (symbol)
//! whose name matches RE and that has samples, close to perl pprof's
//! layout:
//!
//! ```text
//! ROUTINE ====================== burn_b
//!    166    167 samples (flat, cumulative) 31.3% of total
//! -------------------- /src/spin.c
//!      .      .    40: __attribute__((noinline)) double burn_b(double s) {
//!      .      .        1560: push   %r14
//!    166    166    43:         for (int i = 0; i < 100000; i++) x = ...;
//!    121    121        162c: addsd  %xmm1,%xmm0
//! ```
//!
//! The instructions and their values are [`crate::instructions`]'s.

use std::io::{self, Write};

use crate::instructions::Disassembly;
use crate::measure::{Percent, ValueFormat};
use crate::source::SourceFiles;

/// Writes `disassemblies`; `values` prints the values and the word of
/// the totals line (`samples`), `total` the report's total (for the percentage), and
/// `sources` finds the source text of the interleaved lines.
pub fn write(
    out: &mut dyn Write,
    disassemblies: &[Disassembly],
    values: &ValueFormat,
    total: i64,
    sources: &mut SourceFiles,
) -> io::Result<()> {
    let unit = values.word();
    let count = |v: i64| values.cell(v);
    for d in disassemblies {
        writeln!(out, "ROUTINE ====================== {}", d.name)?;
        writeln!(
            out,
            "{:>6} {:>6} {unit} (flat, cumulative) {} of total",
            count(d.flat),
            count(d.cum),
            Percent(d.cum, total)
        )?;
        let mut file: Option<&str> = None;
        let mut i = 0;
        while i < d.instructions.len() {
            let first = &d.instructions[i];
            // The run of instructions of one source line.
            let mut end = i + 1;
            while end < d.instructions.len()
                && d.instructions[end].line == first.line
                && d.instructions[end].file == first.file
            {
                end += 1;
            }
            let group = &d.instructions[i..end];
            if first.line > 0 || !first.file.is_empty() {
                if file != Some(first.file.as_str()) {
                    writeln!(out, "-------------------- {}", first.file)?;
                    file = Some(first.file.as_str());
                }
                let text = sources
                    .lines(&first.file)
                    .and_then(|lines| lines.get((first.line as usize).checked_sub(1)?))
                    .map(|t| format!(" {}", t.trim()))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{:>6} {:>6} {:>5}:{text}",
                    count(group.iter().map(|x| x.flat).sum()),
                    count(group.iter().map(|x| x.cum).sum()),
                    first.line
                )?;
            }
            for instruction in group {
                writeln!(
                    out,
                    "{:>6} {:>6}        {:x}: {}",
                    count(instruction.flat),
                    count(instruction.cum),
                    instruction.address,
                    instruction.text
                )?;
            }
            i = end;
        }
    }
    Ok(())
}
