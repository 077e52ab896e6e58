//! The symbolized raw profile, as perl pprof's `--raw` writes it and reads
//! it back without the binary:
//!
//! ```text
//! --- symbol
//! binary=./spin
//! 0x0000559549739553 burn_a
//! 0x00005595497394e8 burn_a--cpu_now
//! ---
//! --- profile
//! <a gperftools CPU profile>
//! ```
//!
//! The symbol section maps addresses to names; an address whose code was
//! inlined has its chain, outermost function first, joined with `--`. An
//! address pprof could not symbolize has itself as its name. Lines
//! `name=value` set variables (`binary=` names the program; others are
//! ignored, as perl pprof ignores them), lines starting with `%` before a
//! section are commands perl pprof ignores too. The profile part is the
//! binary CPU profile with the callers' addresses already adjusted
//! (return address minus one: the symbols are keyed by those), and perl
//! pprof writes no trailer and no list of mapped objects after it.
//!
//! Reading gives locations with the section's names as functions (no
//! files or lines: the format has none), and no mappings; perl pprof's
//! `<0000000000001850>` tags (which it appends to local symbols to tell
//! apart functions of the same name) are removed from names.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::gperftools;
use crate::model::{Function, Line, Profile};

const FORMAT: &str = "symbolized raw profile";

/// The line opening the symbol section.
pub const SYMBOL_MARKER: &str = "--- symbol";
/// The line opening the profile section.
pub const PROFILE_MARKER: &str = "--- profile";

/// The comment that keeps the `binary=` value of a read profile.
pub const BINARY_COMMENT: &str = "binary=";

/// True when `data` starts (after perl pprof's `%` command lines) with the
/// symbol section's marker.
pub fn sniff(data: &[u8]) -> bool {
    let mut pos = 0;
    while let Some(line) = next_line(data, &mut pos) {
        if line.starts_with(b"%") {
            continue;
        }
        return is_marker(line, b"symbol");
    }
    false
}

/// `--- *NAME` (perl's `m/^--- *symbol/`).
fn is_marker(line: &[u8], name: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"---") else {
        return false;
    };
    let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
    rest[start..].starts_with(name)
}

/// The line at `*pos` (without its `\n` and `\r`), advancing past it.
fn next_line<'a>(data: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    if *pos >= data.len() {
        return None;
    }
    let rest = &data[*pos..];
    let end = rest.iter().position(|&b| b == b'\n');
    let line = match end {
        Some(e) => {
            *pos += e + 1;
            &rest[..e]
        }
        None => {
            *pos = data.len();
            rest
        }
    };
    Some(line.strip_suffix(b"\r").unwrap_or(line))
}

/// Reads a symbolized raw profile.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    let err = |offset: usize, message: String| ParseError::new(FORMAT, offset as u64, message);
    let mut pos = 0;
    // Commands, then the symbol marker.
    loop {
        let start = pos;
        match next_line(data, &mut pos) {
            Some(line) if line.starts_with(b"%") => continue,
            Some(line) if is_marker(line, b"symbol") => break,
            _ => return Err(err(start, format!("expected the `{SYMBOL_MARKER}` line"))),
        }
    }
    // The symbol section, up to a line starting with `---`.
    let mut symbols: FxHashMap<u64, Vec<String>> = FxHashMap::default();
    let mut binary = None;
    loop {
        let start = pos;
        let Some(line) = next_line(data, &mut pos) else {
            return Err(err(
                start,
                "the symbol section has no end: expected a `---` line".into(),
            ));
        };
        if line.starts_with(b"---") {
            break;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            return Err(err(start, "invalid UTF-8 in the symbol section".into()));
        };
        if let Some(rest) = text.strip_prefix("0x") {
            let digits_end = rest
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(rest.len());
            let (digits, name) = rest.split_at(digits_end);
            let address = u64::from_str_radix(digits, 16).map_err(|_| {
                err(
                    start,
                    format!(
                        "`{}`: expected `0xADDRESS name` with at most 16 hex digits",
                        truncate(text)
                    ),
                )
            })?;
            // perl's `^0x0*([0-9a-f]+)\s+(.+)`: the name keeps what
            // follows the blanks, trailing blanks too.
            let name = name.trim_start();
            if name.is_empty() || !text[2 + digits_end..].starts_with([' ', '\t']) {
                return Err(err(
                    start,
                    format!("`{}`: expected `0xADDRESS name`", truncate(text)),
                ));
            }
            symbols.insert(address, split_chain(name));
        } else if let Some((variable, value)) = text.split_once('=') {
            if variable.trim() == "binary" {
                binary = Some(value.trim().to_string());
            }
        }
        // Anything else is ignored, as perl pprof ignores it.
    }
    // The profile section's header.
    loop {
        let start = pos;
        match next_line(data, &mut pos) {
            Some(line) if line.starts_with(b"%") => continue,
            Some(line) if is_marker(line, b"profile") => break,
            _ => {
                return Err(err(
                    start,
                    format!("expected the `{PROFILE_MARKER}` line after the symbol section"),
                ))
            }
        }
    }
    let mut profile = gperftools::read_adjusted(&data[pos..]).map_err(|e| {
        ParseError::new(
            FORMAT,
            e.offset + pos as u64,
            format!("in the profile section: {}", e.message),
        )
    })?;
    if let Some(binary) = binary {
        profile.comments.push(format!("{BINARY_COMMENT}{binary}"));
    }
    attach_symbols(&mut profile, &symbols);
    Ok(profile)
}

fn truncate(text: &str) -> String {
    text.chars().take(60).collect()
}

/// The names of a chain, outermost first as written; `[]` when the name
/// is the address itself (pprof could not symbolize it).
fn split_chain(name: &str) -> Vec<String> {
    if let Some(hex) = name.strip_prefix("0x") {
        if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Vec::new();
        }
    }
    name.split("--")
        .filter(|n| !n.is_empty())
        .map(|n| strip_address_tag(n).to_string())
        .collect()
}

/// `name<0000000000001850>` → `name`: the tag perl pprof appends to local
/// symbols.
fn strip_address_tag(name: &str) -> &str {
    if let Some(open) = name.len().checked_sub(18) {
        let tail = &name.as_bytes()[open..];
        if tail[0] == b'<' && tail[17] == b'>' && tail[1..17].iter().all(u8::is_ascii_hexdigit) {
            return &name[..open];
        }
    }
    name
}

/// Gives each location without lines the functions of its address's
/// chain in `symbols` (outermost first, as symbol sections and symbol
/// servers write them); returns how many locations were named. Functions
/// already in the profile are reused by name.
pub fn attach_symbols(profile: &mut Profile, symbols: &FxHashMap<u64, Vec<String>>) -> usize {
    let mut function_ids: FxHashMap<String, usize> = profile
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.clone(), i))
        .collect();
    let mut named = 0;
    for i in 0..profile.locations.len() {
        if !profile.locations[i].lines.is_empty() {
            continue;
        }
        let Some(chain) = symbols.get(&profile.locations[i].address) else {
            continue;
        };
        // Written outermost first; the model's lines are innermost first.
        let mut lines = Vec::with_capacity(chain.len());
        for name in chain.iter().rev() {
            let id = *function_ids.entry(name.clone()).or_insert_with(|| {
                profile.functions.push(Function {
                    name: name.clone(),
                    system_name: name.clone(),
                    ..Function::default()
                });
                profile.functions.len() - 1
            });
            lines.push(Line {
                function: crate::model::FunctionId::from_index(id),
                ..Line::default()
            });
        }
        profile.locations[i].lines = lines;
        named += 1;
    }
    named
}

/// Writes `profile` as a symbolized raw profile: the symbols of every
/// location its samples use (sorted by address; unsymbolized ones named
/// by their address, as perl pprof does), then the samples (see
/// [`gperftools::write_adjusted`]: counts as the gperftools writer takes
/// them; samples with a count of 0 or less are left out). `binary` names
/// the program on the `binary=` line (none when empty).
pub fn write(profile: &Profile, binary: &str, out: &mut dyn Write) -> io::Result<()> {
    let mut used = vec![false; profile.locations.len()];
    for sample in &profile.samples {
        for l in &sample.locations {
            used[l.index()] = true;
        }
    }
    let mut lines: Vec<(u64, String)> = Vec::new();
    for (i, location) in profile.locations.iter().enumerate() {
        if !used[i] {
            continue;
        }
        let name = if location.lines.is_empty() {
            format!("0x{:016x}", location.address)
        } else {
            let names: Vec<String> = location
                .lines
                .iter()
                .rev()
                .map(|l| {
                    let name = &profile.function(l.function).name;
                    if name.is_empty() {
                        "??".to_string()
                    } else {
                        name.replace(['\n', '\r'], " ")
                    }
                })
                .collect();
            names.join("--")
        };
        lines.push((location.address, name));
    }
    lines.sort();
    lines.dedup_by(|a, b| a.0 == b.0);
    let mut text = String::with_capacity(lines.len() * 40 + 64);
    text.push_str(SYMBOL_MARKER);
    text.push('\n');
    if !binary.is_empty() {
        text.push_str(BINARY_COMMENT);
        text.push_str(&binary.replace(['\n', '\r'], " "));
        text.push('\n');
    }
    for (address, name) in &lines {
        text.push_str(&format!("0x{address:016x} {name}\n"));
    }
    text.push_str("---\n");
    text.push_str(PROFILE_MARKER);
    text.push('\n');
    out.write_all(text.as_bytes())?;
    gperftools::write_adjusted(profile, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{cpu_sample_types, ProfileBuilder};

    fn sample_profile() -> Profile {
        let mut b = ProfileBuilder::new(cpu_sample_types());
        b.profile.period = 1_000_000;
        b.profile.period_type = crate::ValueType::new("cpu", "nanoseconds");
        let f_main = b.function(Function {
            name: "main".into(),
            ..Function::default()
        });
        let f_a = b.function(Function {
            name: "burn_a(double)".into(),
            ..Function::default()
        });
        let f_in = b.function(Function {
            name: "cpu_now".into(),
            ..Function::default()
        });
        let leaf = b.location_at(0x1000);
        let inl = b.location_at(0x1010);
        let caller = b.location_at(0x2003);
        let unknown = b.location_at(0x7f00_0000_0001);
        b.profile.locations[leaf.index()].lines = vec![Line {
            function: f_a,
            ..Line::default()
        }];
        b.profile.locations[inl.index()].lines = vec![
            Line {
                function: f_in,
                ..Line::default()
            },
            Line {
                function: f_a,
                ..Line::default()
            },
        ];
        b.profile.locations[caller.index()].lines = vec![Line {
            function: f_main,
            ..Line::default()
        }];
        b.add_sample(vec![leaf, caller], vec![3, 3_000_000]);
        b.add_sample(vec![inl, caller], vec![2, 2_000_000]);
        b.add_sample(vec![unknown, caller], vec![1, 1_000_000]);
        b.finish()
    }

    /// The stacks of a profile as names (innermost first per location).
    fn named_stacks(p: &Profile) -> Vec<(Vec<String>, i64)> {
        let mut out: Vec<(Vec<String>, i64)> = p
            .samples
            .iter()
            .map(|s| (p.stack_names(s), s.values[0]))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn round_trip_keeps_stacks_names_and_addresses() {
        let p = sample_profile();
        let mut out = Vec::new();
        write(&p, "./spin", &mut out).unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("--- symbol\nbinary=./spin\n0x0000000000001000 burn_a(double)\n0x0000000000001010 burn_a(double)--cpu_now\n0x0000000000002003 main\n0x00007f0000000001 0x00007f0000000001\n---\n--- profile\n"), "{text}");
        assert!(sniff(&out));
        let q = read(&out).unwrap();
        q.validate().unwrap();
        assert_eq!(named_stacks(&q), named_stacks(&p));
        let mut addresses: Vec<u64> = q.locations.iter().map(|l| l.address).collect();
        addresses.sort();
        assert_eq!(addresses, vec![0x1000, 0x1010, 0x2003, 0x7f00_0000_0001]);
        assert_eq!(q.period, 1_000_000);
        assert_eq!(q.comments, vec!["binary=./spin".to_string()]);
    }

    #[test]
    fn reads_perl_pprof_output_without_a_trailer_and_with_tags() {
        let mut data = b"--- symbol\nbinary=./spin\n0x0000000000001000 burn_a<0000000000000ff0>\n0x0000000000002003 main<0000000000002000>--inl\nfoo=bar\n---\n--- profile\n".to_vec();
        for slot in [0u64, 3, 0, 1, 0, 5, 2, 0x1000, 0x2003] {
            data.extend_from_slice(&slot.to_le_bytes());
        }
        let p = read(&data).unwrap();
        assert_eq!(
            named_stacks(&p),
            vec![(vec!["burn_a".into(), "inl".into(), "main".into()], 5)]
        );
    }

    #[test]
    fn malformed_sections_are_errors_with_offsets() {
        let cases: [(&[u8], u64, &str); 5] = [
            (b"--- symbol\n0x12\n---\n", 11, "expected `0xADDRESS name`"),
            (
                b"--- symbol\n0x11111111111111111 f\n---\n",
                11,
                "at most 16 hex digits",
            ),
            (b"--- symbol\n0x1 f\n", 17, "has no end"),
            (b"--- symbol\n0x1 f\n---\nnope\n", 21, "--- profile"),
            (
                b"--- symbol\n---\n--- profile\n\x00\x00",
                27,
                "profile section",
            ),
        ];
        for (data, offset, expected) in cases {
            let e = read(data).unwrap_err();
            assert_eq!(e.offset, offset, "{e}");
            assert!(e.message.contains(expected), "{e}");
        }
    }
}
