//! The text `perf script` prints (the input of stackcollapse-perf and
//! inferno): for each sample a header line, then its frames, leaf first,
//! one per line indented with a tab, then an empty line.
//!
//! ```text
//! prog  8795/8795 [001]   480.795391:    1000000 cpu-clock:
//!                 11fd leaf_a+0x2d (/tmp/prog)
//!                 29ad std::fill_n<double*> (inlined)
//!                 29ad run (/tmp/prog)
//! ```
//!
//! Header: the command name (may hold spaces), `PID/TID` or `TID`, an
//! optional `[CPU]`, the time in seconds and a colon, an optional period,
//! the event name and a colon. Frame: a hexadecimal address (relative to
//! its file, as perf prints it), a symbol with an optional `+0xOFFSET`,
//! and the file in parentheses, `(inlined)` for inline frames, which come
//! before their real function at the same address.
//!
//! Each event is a sample type named after it, valued by the period
//! (nanoseconds for the clock events) or 1 where perf printed none; the
//! labels are perf.data's (`pid`, `tid`, `comm`, `cpu`, `timestamp_ns`).
//! The frames are already named: locations carry their names and no
//! mapping (the addresses are file-relative), and are not symbolized again.

use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::model::{Function, Label, Line, Location, LocationId, Profile, Sample, ValueType};

const FORMAT: &str = "perf script text";

/// True when `data` starts (after `#` comments and blank lines) with a
/// perf script sample header followed by an indented frame line or a
/// blank line.
pub fn sniff(data: &[u8]) -> bool {
    let head = &data[..data.len().min(8192)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => match std::str::from_utf8(&head[..e.valid_up_to()]) {
            Ok(t) => t,
            Err(_) => return false,
        },
    };
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip_while(|l| l.trim().is_empty());
    let Some(first) = lines.next() else {
        return false;
    };
    if first.starts_with(char::is_whitespace) || parse_header(first).is_none() {
        return false;
    }
    match lines.next() {
        None => true,
        Some(l) if l.trim().is_empty() => true,
        Some(l) => l.starts_with(char::is_whitespace) && parse_frame(l).is_some(),
    }
}

/// A sample header's fields.
#[derive(Debug, PartialEq)]
struct Header<'a> {
    comm: &'a str,
    pid: Option<i64>,
    tid: i64,
    cpu: Option<i64>,
    time_ns: i64,
    period: Option<i64>,
    event: &'a str,
}

fn parse_header(line: &str) -> Option<Header<'_>> {
    let tokens: Vec<(usize, &str)> = line
        .split_whitespace()
        .map(|t| (t.as_ptr() as usize - line.as_ptr() as usize, t))
        .collect();
    // The time: the first `SECONDS.FRACTION:` token after the pid.
    let time_at = tokens.iter().position(|(_, t)| {
        t.strip_suffix(':').is_some_and(|t| {
            t.split_once('.').is_some_and(|(s, f)| {
                !s.is_empty()
                    && !f.is_empty()
                    && s.bytes().all(|b| b.is_ascii_digit())
                    && f.bytes().all(|b| b.is_ascii_digit())
            })
        })
    })?;
    let (seconds, fraction) = tokens[time_at].1.trim_end_matches(':').split_once('.')?;
    let mut fraction = fraction.to_string();
    fraction.truncate(9);
    while fraction.len() < 9 {
        fraction.push('0');
    }
    let time_ns = seconds
        .parse::<i64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(fraction.parse::<i64>().ok()?)?;
    // Before the time: comm, PID/TID, [CPU].
    let mut before = &tokens[..time_at];
    let mut cpu = None;
    if let Some((_, t)) = before.last() {
        if let Some(n) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            cpu = Some(n.parse().ok()?);
            before = &before[..before.len() - 1];
        }
    }
    let (ids_at, ids) = *before.last()?;
    let (pid, tid) = match ids.split_once('/') {
        Some((p, t)) => (Some(p.parse().ok()?), t.parse().ok()?),
        None => (None, ids.parse().ok()?),
    };
    if before.len() < 2 {
        return None;
    }
    let comm = line[..ids_at].trim();
    // After the time: an optional period, then `event:`.
    let mut after = &tokens[time_at + 1..];
    let mut period = None;
    if let Some((_, t)) = after.first() {
        if let Ok(n) = t.parse::<i64>() {
            period = Some(n);
            after = &after[1..];
        }
    }
    let event = after
        .first()
        .map(|(_, t)| t.strip_suffix(':').unwrap_or(t))
        .unwrap_or("");
    Some(Header {
        comm,
        pid,
        tid,
        cpu,
        time_ns,
        period,
        event,
    })
}

/// A frame line: (address, symbol or None for `[unknown]`, file or
/// `(inlined)`).
fn parse_frame(line: &str) -> Option<(u64, Option<&str>, &str)> {
    let line = line.trim();
    let (address, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let address = u64::from_str_radix(address, 16).ok()?;
    let rest = rest.trim();
    let (symbol, file) = match rest
        .strip_suffix(')')
        .and_then(|r| r.rfind(" (").map(|i| (r, i)))
    {
        Some((r, i)) => (r[..i].trim(), &r[i + 2..]),
        None if rest.starts_with('(') && rest.ends_with(')') => ("", &rest[1..rest.len() - 1]),
        None => (rest, ""),
    };
    let symbol = match symbol.rfind("+0x") {
        Some(i) if symbol[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) && i > 0 => &symbol[..i],
        _ => symbol,
    };
    let symbol = (!symbol.is_empty() && symbol != "[unknown]").then_some(symbol);
    Some((address, symbol, file))
}

/// Reads `perf script` output.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    let text = std::str::from_utf8(data).map_err(|e| {
        ParseError::new(
            FORMAT,
            e.valid_up_to() as u64,
            "invalid UTF-8: expected perf script's text",
        )
    })?;
    let mut profile = Profile::default();
    let mut events: FxHashMap<String, usize> = FxHashMap::default();
    let mut functions: FxHashMap<(&str, &str), crate::FunctionId> = FxHashMap::default();
    let mut locations: FxHashMap<(u64, Vec<crate::FunctionId>), LocationId> = FxHashMap::default();
    let mut unknown: FxHashMap<(u64, &str), LocationId> = FxHashMap::default();
    let mut any_period = false;

    let mut offset = 0usize;
    let mut current: Option<(Sample, usize)> = None;
    // Inline frames waiting for their real function's line.
    let mut inlined: Vec<crate::FunctionId> = Vec::new();
    for raw in text.split_inclusive('\n') {
        let line_at = offset;
        offset += raw.len();
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() || line.starts_with('#') {
            if let Some((sample, _)) = current.take() {
                profile.samples.push(sample);
            }
            inlined.clear();
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            if let Some((sample, _)) = current.take() {
                profile.samples.push(sample);
            }
            inlined.clear();
            let header = parse_header(line).ok_or_else(|| {
                ParseError::new(
                    FORMAT,
                    line_at as u64,
                    format!(
                        "expected a sample header (`comm pid/tid [cpu] seconds: [period] event:`), found {:?}",
                        truncate(line)
                    ),
                )
            })?;
            let event = if header.event.is_empty() {
                "samples"
            } else {
                header.event
            };
            let next = events.len();
            let index = *events.entry(event.to_string()).or_insert(next);
            if index == profile.sample_types.len() {
                let unit = if crate::perf::is_clock_event(event) && header.period.is_some() {
                    "nanoseconds"
                } else {
                    "count"
                };
                profile.sample_types.push(ValueType::new(event, unit));
            }
            any_period |= header.period.is_some();
            let mut values = vec![0; events.len()];
            values[index] = header.period.unwrap_or(1);
            let mut labels = Vec::with_capacity(5);
            if let Some(pid) = header.pid {
                labels.push(Label::num("pid", pid, ""));
            }
            labels.push(Label::num("tid", header.tid, ""));
            labels.push(Label::str("comm", header.comm));
            if let Some(cpu) = header.cpu {
                labels.push(Label::num("cpu", cpu, ""));
            }
            labels.push(Label::num("timestamp_ns", header.time_ns, "nanoseconds"));
            current = Some((
                Sample {
                    locations: Vec::new(),
                    values,
                    labels,
                },
                line_at,
            ));
            continue;
        }
        let Some((sample, _)) = current.as_mut() else {
            return Err(ParseError::new(
                FORMAT,
                line_at as u64,
                "a frame line before any sample header",
            ));
        };
        let (address, symbol, file) = parse_frame(line).ok_or_else(|| {
            ParseError::new(
                FORMAT,
                line_at as u64,
                format!(
                    "expected a frame (`ADDRESS symbol+0xOFFSET (file)`), found {:?}",
                    truncate(line)
                ),
            )
        })?;
        let Some(symbol) = symbol else {
            inlined.clear();
            let next = LocationId::from_index(profile.locations.len());
            let id = *unknown.entry((address, file)).or_insert(next);
            if id == next {
                profile.locations.push(Location {
                    address,
                    ..Location::default()
                });
            }
            sample.locations.push(id);
            continue;
        };
        let owner = if file == "inlined" { "" } else { file };
        let next = crate::FunctionId::from_index(profile.functions.len());
        let function = *functions.entry((symbol, owner)).or_insert(next);
        if function == next {
            profile.functions.push(Function {
                name: symbol.to_string(),
                system_name: symbol.to_string(),
                ..Function::default()
            });
        }
        if file == "inlined" {
            inlined.push(function);
            continue;
        }
        let mut chain = std::mem::take(&mut inlined);
        chain.push(function);
        let next = LocationId::from_index(profile.locations.len());
        let id = *locations.entry((address, chain.clone())).or_insert(next);
        if id == next {
            profile.locations.push(Location {
                address,
                lines: chain
                    .iter()
                    .map(|&f| Line {
                        function: f,
                        ..Line::default()
                    })
                    .collect(),
                ..Location::default()
            });
        }
        sample.locations.push(id);
    }
    if let Some((sample, _)) = current.take() {
        profile.samples.push(sample);
    }
    if profile.samples.is_empty() {
        return Err(ParseError::new(
            FORMAT,
            0,
            "no samples: expected perf script's sample headers and frames",
        ));
    }
    let n = profile.sample_types.len();
    for s in &mut profile.samples {
        s.values.resize(n, 0);
    }
    if !any_period {
        for t in &mut profile.sample_types {
            t.unit = "count".to_string();
        }
    }
    if let Some(first) = profile.sample_types.first() {
        profile.default_sample_type = first.kind.clone();
    }
    profile.merge_samples();
    Ok(profile)
}

fn truncate(line: &str) -> String {
    line.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabelValue;

    const TEXT: &str = "\
prog  8795/8796 [001]   480.795391:    1000000 cpu-clock: 
\t            11fd leaf_a+0x2d (/tmp/prog)
\t            29ad std::fill_n<double*> (inlined)
\t            29ad run (/tmp/prog)
\t           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

my prog 12 480.796: 2000000 task-clock:
\t            11fd leaf_a+0x2d (/tmp/prog)
\t               0 [unknown] ([unknown])
";

    #[test]
    fn headers() {
        let h = parse_header("prog  8795/8796 [001]   480.795391:    1000000 cpu-clock: ").unwrap();
        assert_eq!(
            h,
            Header {
                comm: "prog",
                pid: Some(8795),
                tid: 8796,
                cpu: Some(1),
                time_ns: 480_795_391_000,
                period: Some(1_000_000),
                event: "cpu-clock",
            }
        );
        let h = parse_header("my prog 12 480.796: task-clock:u:").unwrap();
        assert_eq!(
            (h.comm, h.tid, h.period, h.event),
            ("my prog", 12, None, "task-clock:u")
        );
        assert!(parse_header("main;f 3").is_none());
    }

    #[test]
    fn reads_samples_inlines_and_events() {
        assert!(sniff(TEXT.as_bytes()));
        assert!(!sniff(b"main;f 3\n"));
        let p = read(TEXT.as_bytes()).unwrap();
        assert_eq!(
            p.sample_types[0],
            ValueType::new("cpu-clock", "nanoseconds")
        );
        assert_eq!(
            p.sample_types[1],
            ValueType::new("task-clock", "nanoseconds")
        );
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.samples[0].values, vec![1_000_000, 0]);
        assert_eq!(
            p.stack_names(&p.samples[0]),
            [
                "leaf_a",
                "std::fill_n<double*>",
                "run",
                "__libc_start_call_main"
            ]
        );
        assert_eq!(p.stack_names(&p.samples[1]), ["leaf_a", "0x0"]);
        assert!(p.samples[1]
            .labels
            .iter()
            .any(|l| l.key == "comm" && l.value == LabelValue::Str("my prog".into())));
    }

    #[test]
    fn bad_lines_name_their_offset() {
        let e = read(b"prog 1 1.5: 10 cycles:\n\tzz nothing\n").unwrap_err();
        assert_eq!(e.offset, 23, "{e}");
        let e = read(b"\tabc f (x)\n").unwrap_err();
        assert_eq!(e.offset, 0, "{e}");
    }
}
