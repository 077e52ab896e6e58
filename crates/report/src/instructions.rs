//! Instructions annotated with values: the [`Disassembly`] of each
//! function (symbol) that `--disasm` ([`crate::output::disasm`]) and
//! `--weblist` ([`crate::output::weblist`]) print.
//!
//! The code is read from the ELF file of the sampled mapping (the symbol's
//! address and size), so PIE executables and shared libraries work; it is
//! decoded with `iced-x86` and printed in AT&T syntax, at link-time
//! addresses as `objdump -d` shows them. A sample's flat goes to the
//! instruction holding its leaf PC, its cum to every instruction of its
//! stack (once per instruction): callers' return addresses are taken minus
//! one, as the profile stores them, so they land in the call instruction.
//! Source lines are interleaved as `objdump -l` does (the innermost line
//! of each instruction, inlined code included), each with the sum of its
//! instructions' counts. The totals are those of the whole symbol, inlined
//! code included: its flat is `--text`'s flat of the function plus that of
//! the functions inlined into it.

use std::path::PathBuf;
use std::sync::Arc;

use cpuprof_symbolize::Binary;
use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction as Decoded};
use regex::Regex;
use rustc_hash::FxHashMap;

use crate::names;
use crate::options::Granularity;
use crate::stacks::Stacks;

/// One decoded instruction with its samples.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instruction {
    /// Its link-time address.
    pub address: u64,
    /// Its length in bytes.
    pub len: u64,
    /// AT&T syntax, as `objdump -d` prints it.
    pub text: String,
    /// The source file of its innermost line, empty if unknown.
    pub file: String,
    /// That line, 0 if unknown.
    pub line: u32,
    /// Samples whose leaf PC is in it.
    pub flat: i64,
    /// Samples with a PC in it anywhere in the stack.
    pub cum: i64,
}

/// The annotated disassembly of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disassembly {
    /// The name printed (short unless full names were asked for).
    pub name: String,
    /// The ELF file the code was read from.
    pub binary: PathBuf,
    /// Samples whose leaf PC is in the function.
    pub flat: i64,
    /// Samples with a PC in the function anywhere in the stack.
    pub cum: i64,
    /// Its instructions, in address order.
    pub instructions: Vec<Instruction>,
}

/// Why nothing could be disassembled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisasmError {
    /// No function with samples matches (the binaries are there).
    NoMatch,
    /// No function with samples matches, and these mapped files (with
    /// samples) could not be read: the function may be in one of them.
    NoBinary(Vec<String>),
}

impl std::fmt::Display for DisasmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DisasmError::NoMatch => f.write_str("no function with samples matches"),
            DisasmError::NoBinary(paths) => write!(
                f,
                "no function with samples matches, and no binary is available for {} (give it on the command line)",
                paths.join(", ")
            ),
        }
    }
}

impl std::error::Error for DisasmError {}

/// A function to disassemble: its binary and symbol.
struct Routine {
    mapping: usize,
    start: u64,
    size: u64,
    name: String,
}

/// The disassemblies of the functions matching `re` (their short, full
/// or mangled name) that have samples in `stacks` (built at
/// [`Granularity::Addresses`]), sorted by name; `binaries` as
/// [`cpuprof_symbolize::Symbolizer::binaries_for`] gives them.
pub fn disassemble(
    stacks: &Stacks,
    re: &Regex,
    full_names: bool,
    binaries: &[Option<Arc<Binary>>],
) -> Result<Vec<Disassembly>, DisasmError> {
    debug_assert_eq!(stacks.granularity, Granularity::Addresses);
    let mut routines: Vec<Routine> = Vec::new();
    let mut routine_at: FxHashMap<(usize, u64), Option<u32>> = FxHashMap::default();
    let mut missing: Vec<String> = Vec::new();
    let profile = stacks.profile();
    // Each frame's (routine, link-time address), if it matches.
    let mut frame_place: Vec<Option<(u32, u64)>> = Vec::with_capacity(stacks.frames.len());
    for frame in stacks.frames.iter() {
        let place = frame.mapping.and_then(|m| {
            let mapping = profile.mappings.get(m.index())?;
            let Some(binary) = binaries.get(m.index()).and_then(Option::as_ref) else {
                if !missing.contains(&mapping.path) {
                    missing.push(mapping.path.clone());
                }
                return None;
            };
            let file_address = binary.runtime_to_file(mapping, frame.address)?;
            let symbol = binary.symbol_at(file_address)?;
            let routine = *routine_at
                .entry((m.index(), symbol.address))
                .or_insert_with(|| {
                    // The debug information's name, as the other reports
                    // print it; else the symbol's, without its version.
                    let full = binary
                        .frames(symbol.address)
                        .pop()
                        .map(|f| f.function)
                        .filter(|n| !n.is_empty() && n != "??")
                        .unwrap_or_else(|| {
                            let name = symbol.demangled();
                            name.split('@').next().unwrap_or(name).to_string()
                        });
                    let full = full.as_str();
                    let short = names::short_name(full);
                    if !(re.is_match(&short) || re.is_match(full) || re.is_match(symbol.name())) {
                        return None;
                    }
                    routines.push(Routine {
                        mapping: m.index(),
                        start: symbol.address,
                        size: symbol.size,
                        name: if full_names { full.to_string() } else { short },
                    });
                    Some(routines.len() as u32 - 1)
                });
            routine.map(|r| (r, file_address))
        });
        frame_place.push(place);
    }
    if routines.is_empty() {
        return Err(if missing.is_empty() {
            DisasmError::NoMatch
        } else {
            DisasmError::NoBinary(missing)
        });
    }

    let mut out: Vec<Disassembly> = routines
        .iter()
        .map(|r| {
            let binary = binaries[r.mapping]
                .as_ref()
                .expect("routines have binaries");
            Disassembly {
                name: r.name.clone(),
                binary: binary.path().to_path_buf(),
                flat: 0,
                cum: 0,
                instructions: decode(binary, r.start, r.size),
            }
        })
        .collect();
    // Each frame's instruction.
    let frame_instruction: Vec<Option<(u32, u32)>> = frame_place
        .iter()
        .map(|place| {
            let (r, address) = (*place)?;
            let instructions = &out[r as usize].instructions;
            let i = instructions.partition_point(|ins| ins.address <= address);
            let i = i.checked_sub(1)?;
            (address < instructions[i].address + instructions[i].len).then_some((r, i as u32))
        })
        .collect();
    let mut seen_instructions: Vec<(u32, u32)> = Vec::new();
    let mut seen_routines: Vec<u32> = Vec::new();
    stacks.for_each(|frames, value| {
        seen_instructions.clear();
        seen_routines.clear();
        for (depth, &id) in frames.iter().enumerate() {
            if let Some((r, _)) = frame_place[id.index()] {
                if depth == 0 {
                    out[r as usize].flat += value;
                }
                if !seen_routines.contains(&r) {
                    seen_routines.push(r);
                    out[r as usize].cum += value;
                }
            }
            let Some((r, i)) = frame_instruction[id.index()] else {
                continue;
            };
            let instruction = &mut out[r as usize].instructions[i as usize];
            if depth == 0 {
                instruction.flat += value;
            }
            if !seen_instructions.contains(&(r, i)) {
                seen_instructions.push((r, i));
                instruction.cum += value;
            }
        }
    });
    out.retain(|d| d.flat != 0 || d.cum != 0);
    out.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.binary.cmp(&b.binary)));
    if out.is_empty() {
        return Err(DisasmError::NoMatch);
    }
    Ok(out)
}

/// The instructions of the symbol at `start` (`size` bytes; a symbol
/// without a size gets its first instruction only), with their lines.
fn decode(binary: &Binary, start: u64, size: u64) -> Vec<Instruction> {
    let size = size.max(1);
    let code = binary
        .code(start, size as usize)
        .or_else(|| binary.code(start, 16))
        .unwrap_or(&[]);
    let rows = binary.line_table(start..start + size);
    let mut formatter = GasFormatter::new();
    let options = formatter.options_mut();
    options.set_uppercase_hex(false);
    options.set_first_operand_char_index(7);
    options.set_branch_leading_zeros(false);
    // `0xb25(%rip)` as objdump prints it, not the absolute target.
    options.set_rip_relative_addresses(true);
    let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let mut decoded = Decoded::default();
    let mut out = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut decoded);
        let mut text = String::new();
        if decoded.is_invalid() {
            text.push_str("(bad)");
        } else {
            formatter.format(&decoded, &mut text);
        }
        let address = decoded.ip();
        let row = rows.partition_point(|r| r.0 <= address);
        let (file, line) = match row.checked_sub(1) {
            Some(i) => (rows[i].1.clone(), rows[i].2),
            None => (String::new(), 0),
        };
        out.push(Instruction {
            address,
            len: decoded.len() as u64,
            text,
            file,
            line,
            flat: 0,
            cum: 0,
        });
        if size == 1 {
            break;
        }
    }
    out
}
