//! Collapsed (folded) stacks: one line per stack, `root;caller;leaf count`,
//! as Brendan Gregg's `stackcollapse` scripts and flame-graph tools use.
//!
//! Reading: the last space-separated token of a line is its count (an
//! integer, possibly negative for differential profiles); the rest, split
//! at `;`, is the stack from the root to the leaf. A frame that is a bare
//! hexadecimal address (`0x4005d0`) becomes an unsymbolized location at
//! that address; any other frame becomes a function of that name. The
//! profile has one sample type, `samples/count`.
//!
//! Writing: every sample's stack is written root first, each location
//! expanded into its inline chain (outermost function first), unsymbolized
//! locations as `0x` addresses; samples that fold to the same line are
//! summed and lines are sorted, so output is deterministic.

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::model::{Function, Line, Location, LocationId, Profile, Sample, ValueType};

const FORMAT: &str = "collapsed stacks";

/// The sample type of a profile read from collapsed stacks.
pub fn sample_type() -> ValueType {
    ValueType::new("samples", "count")
}

/// True when `data` looks like collapsed stacks: UTF-8 text whose first
/// non-empty line ends in a space and an integer.
pub fn sniff(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(&data[..data.len().min(4096)])
        .or_else(|e| std::str::from_utf8(&data[..e.valid_up_to()]))
    else {
        return false;
    };
    if text.bytes().any(|b| b == 0) {
        return false;
    }
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| split_count(l).is_some())
}

/// Splits `stack count` at the last space; None if the count is not an
/// integer or the stack is empty.
fn split_count(line: &str) -> Option<(&str, i64)> {
    let line = line.trim_end();
    let (stack, count) = line.rsplit_once([' ', '\t'])?;
    let count: i64 = count.parse().ok()?;
    let stack = stack.trim_end();
    (!stack.is_empty()).then_some((stack, count))
}

/// Reads collapsed stacks.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    if data.is_empty() {
        return Err(ParseError::new(
            FORMAT,
            0,
            "empty file: expected lines of `root;...;leaf count`",
        ));
    }
    let text = std::str::from_utf8(data).map_err(|e| {
        ParseError::new(
            FORMAT,
            e.valid_up_to() as u64,
            "invalid UTF-8: expected text lines",
        )
    })?;
    let mut p = Profile {
        sample_types: vec![sample_type()],
        default_sample_type: "samples".into(),
        ..Profile::default()
    };
    let mut function_of: FxHashMap<&str, LocationId> = FxHashMap::default();
    // Stacks are keyed by their text: the same frames always read the same.
    let mut sample_of: FxHashMap<&str, usize> = FxHashMap::default();
    let mut offset = 0usize;
    for (n, raw_line) in text.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += raw_line.len();
        let line = raw_line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        let Some((stack, count)) = split_count(line) else {
            return Err(ParseError::new(
                FORMAT,
                line_start as u64,
                format!(
                    "line {}: expected `frame;frame;... count` with an integer count",
                    n + 1
                ),
            ));
        };
        if let Some(&i) = sample_of.get(stack) {
            p.samples[i].values[0] = p.samples[i].values[0].saturating_add(count);
            continue;
        }
        let mut locations: Vec<LocationId> = Vec::new();
        for frame in stack.split(';') {
            if frame.is_empty() {
                return Err(ParseError::new(
                    FORMAT,
                    line_start as u64,
                    format!("line {}: empty frame name between `;`", n + 1),
                ));
            }
            let id = *function_of.entry(frame).or_insert_with(|| {
                let id = LocationId::from_index(p.locations.len());
                match parse_address(frame) {
                    Some(address) => p.locations.push(Location {
                        address,
                        ..Location::default()
                    }),
                    None => {
                        let f = crate::model::FunctionId::from_index(p.functions.len());
                        p.functions.push(Function {
                            name: frame.to_string(),
                            system_name: frame.to_string(),
                            ..Function::default()
                        });
                        p.locations.push(Location {
                            lines: vec![Line {
                                function: f,
                                line: 0,
                                column: 0,
                            }],
                            ..Location::default()
                        });
                    }
                }
                id
            });
            locations.push(id);
        }
        locations.reverse(); // leaf first
        sample_of.insert(stack, p.samples.len());
        p.samples.push(Sample {
            locations,
            values: vec![count],
            labels: Vec::new(),
        });
    }
    Ok(p)
}

fn parse_address(frame: &str) -> Option<u64> {
    let hex = frame.strip_prefix("0x")?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The frames of a location joined by `;`, outermost first: its inline
/// chain reversed, or its address when unsymbolized.
fn location_frames(p: &Profile, id: LocationId) -> String {
    let loc = p.location(id);
    if loc.lines.is_empty() {
        return format!("0x{:x}", loc.address);
    }
    let mut out = String::new();
    for (i, line) in loc.lines.iter().rev().enumerate() {
        if i > 0 {
            out.push(';');
        }
        let name = &p.function(line.function).name;
        if name.is_empty() {
            out.push_str("??");
        } else if name.contains(['\n', '\r']) {
            out.push_str(&name.replace(['\n', '\r'], " "));
        } else {
            out.push_str(name);
        }
    }
    out
}

/// Writes the samples' `sample_index` values as collapsed stacks; samples
/// with a zero value are left out.
pub fn write(profile: &Profile, sample_index: usize, out: &mut dyn Write) -> io::Result<()> {
    // Each location's text once, then stacks folded by location ids.
    let mut text_of: Vec<Option<String>> = vec![None; profile.locations.len()];
    let mut folded: FxHashMap<&[LocationId], i64> = FxHashMap::default();
    for s in &profile.samples {
        let v = s.values.get(sample_index).copied().unwrap_or(0);
        if v == 0 || s.locations.is_empty() {
            continue;
        }
        let e = folded.entry(&s.locations).or_insert(0);
        *e = e.saturating_add(v);
    }
    let mut lines: FxHashMap<String, i64> = FxHashMap::default();
    for (stack, v) in folded {
        let mut line = String::new();
        for (i, &l) in stack.iter().rev().enumerate() {
            if i > 0 {
                line.push(';');
            }
            line.push_str(text_of[l.index()].get_or_insert_with(|| location_frames(profile, l)));
        }
        // Different locations may print the same (inline chains, names).
        let e = lines.entry(line).or_insert(0);
        *e = e.saturating_add(v);
    }
    let mut lines: Vec<(String, i64)> = lines.into_iter().filter(|(_, v)| *v != 0).collect();
    lines.sort_unstable();
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.0.len() + 12).sum());
    for (stack, v) in lines {
        buf.extend_from_slice(stack.as_bytes());
        buf.push(b' ');
        buf.extend_from_slice(v.to_string().as_bytes());
        buf.push(b'\n');
    }
    out.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_stacks_root_first_and_sums_repeats() {
        let p = read(
            b"main;work;burn_a 5\nmain;work;burn_b 3\nmain;work;burn_a 2\n\n0x4005d0;main 1\n",
        )
        .unwrap();
        assert_eq!(p.samples.len(), 3);
        let leaf = p.location(p.samples[0].locations[0]);
        assert_eq!(p.function(leaf.lines[0].function).name, "burn_a");
        assert_eq!(p.samples[0].values, vec![7]);
        assert_eq!(p.samples[0].locations.len(), 3);
        let addr = p.location(p.samples[2].locations[1]);
        assert_eq!(addr.address, 0x4005d0);
        assert!(addr.lines.is_empty());
    }

    #[test]
    fn names_with_spaces_keep_them() {
        let p = read(b"main;operator new(unsigned long) 4\n").unwrap();
        let leaf = p.location(p.samples[0].locations[0]);
        assert_eq!(
            p.function(leaf.lines[0].function).name,
            "operator new(unsigned long)"
        );
    }

    #[test]
    fn bad_lines_are_errors_with_offsets() {
        let e = read(b"main;a 1\nmain;b x\n").unwrap_err();
        assert_eq!(e.offset, 9);
        assert!(e.message.contains("line 2"), "{e}");
        let e = read(b"main;;a 1\n").unwrap_err();
        assert!(e.message.contains("empty frame"), "{e}");
        let e = read(b"main;a 1\n\xff\n").unwrap_err();
        assert_eq!(e.offset, 9);
    }

    fn frame() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z_][a-zA-Z0-9_:<> ()]{0,10}[a-zA-Z0-9_)>]",
            "0x[0-9a-f]{1,8}"
        ]
    }

    proptest! {
        #[test]
        fn text_model_text_model_is_stable(lines in proptest::collection::vec((proptest::collection::vec(frame(), 1..6), -3i64..1000), 1..20)) {
            let text: String = lines.iter().map(|(f, c)| format!("{} {}\n", f.join(";"), c)).collect();
            let p = read(text.as_bytes()).unwrap();
            let mut out = Vec::new();
            write(&p, 0, &mut out).unwrap();
            let q = read(&out).unwrap_or_default();
            // Same folded stacks and counts (zero sums drop out).
            let mut a = Vec::new();
            write(&q, 0, &mut a).unwrap();
            prop_assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(out).unwrap());
        }
    }
}
