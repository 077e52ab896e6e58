//! Thread profiles in text form (`threadz`): every thread of a process
//! and where it stands, as Google's C++ servers serve them at
//! `/pprof/threadz` and google/pprof's `legacy_profile.go` reads them.
//!
//! ```text
//! --- threadz 1 ---
//!
//! --- Thread 7f794ab90940 (name: main/14748) stack: ---
//!   PC:  0x00bc8f1c: helper(arg *)
//!   0x0040be31: main
//! --- Thread 7f794964e700 (name: thread1/14751) stack: ---
//!   PC: 0x7f794a32bf7d 0x7f794a32414e
//!       creator: 0xa45b96 0xa460b4
//! --- Thread 7f7948978700 (name: thread3/14759) stack: ---
//!   [same as previous thread]
//! --- Memory map: ---
//!   00400000-00fcb000: /home/user/server
//! ```
//!
//! The `--- threadz N ---` header is optional (a file may start at its
//! first thread). Each `--- Thread ID (name: NAME/TID) stack: ---` block
//! is one sample of value 1: every `0x` hex number of its lines, in order,
//! leaf first (the `creator:` stack included, after the thread's own, as
//! Go pprof reads it). A block saying `same as previous thread` adds 1 to
//! the previous thread's stack. The leaf is the thread's PC, used as it
//! is; the other addresses are return addresses, and the call before each
//! is what is symbolized. A line `---- no stack trace for …` ends the
//! threads; the memory map may follow its sentinel.
//!
//! As Go pprof reads them: sample type and period type `thread/count`,
//! period 1. Each sample also carries the thread's `thread_name` and
//! `thread_id` labels (Go pprof drops them), so `--tags` and the timeline
//! views name threads as they do for the agent's profiles; a thread the
//! same as the previous one is a sample of its own with its own labels.

use crate::error::ParseError;
use crate::legacy::{self, RawSample, TextLine};
use crate::model::{Label, Profile, ValueType};

/// The format's name in messages.
pub const FORMAT: &str = "thread profile";

/// True for `--- threadz N ---` (N decimal).
fn is_threadz_header(line: &str) -> bool {
    line.trim()
        .strip_prefix("--- threadz ")
        .and_then(|rest| rest.strip_suffix(" ---"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A thread block's header, `--- Thread HEX (name: NAME/TID) stack: ---`:
/// the thread's name and id.
fn thread_header(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("--- Thread ")?;
    let (id, rest) = rest.split_once(" (name: ")?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let inner = rest.strip_suffix(") stack: ---")?;
    let (name, tid) = inner.rsplit_once('/')?;
    if tid.is_empty() || !tid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((name, tid))
}

/// True when the first line that is not blank is a thread profile's
/// header or its first thread's.
pub fn sniff(data: &[u8]) -> bool {
    legacy::first_content_line(data)
        .is_some_and(|l| is_threadz_header(l) || thread_header(l).is_some())
}

/// Every `0x` hex number of `line`, in order (Go pprof's reading of a
/// stack line, symbolized or not). A number wider than 64 bits is an error.
fn hex_numbers(line: &TextLine) -> Result<Vec<u64>, ParseError> {
    let text = line.text;
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 <= bytes.len() {
        let at_number = bytes[i] == b'0'
            && (bytes[i + 1] == b'x')
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if !at_number {
            i += 1;
            continue;
        }
        let start = i + 2;
        let end = start
            + bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
        let digits = text[start..end].trim_start_matches('0');
        if digits.len() > 16 {
            return Err(legacy::line_error(
                FORMAT,
                line,
                "64-bit `0x` hex addresses",
            ));
        }
        out.push(
            u64::from_str_radix(if digits.is_empty() { "0" } else { digits }, 16).unwrap_or(0),
        );
        i = end;
    }
    Ok(out)
}

/// Reads a thread profile.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    const THREAD: &str = "`--- Thread ID (name: NAME/TID) stack: ---`";
    let text = legacy::text_of(FORMAT, data)?;
    let mut lines = legacy::lines(text)
        .skip_while(|l| legacy::is_space_or_comment(l.text))
        .peekable();
    let first = lines.peek().copied().ok_or_else(|| {
        ParseError::new(
            FORMAT,
            0,
            format!("empty file: expected `--- threadz N ---` or {THREAD}"),
        )
    })?;
    if is_threadz_header(first.text) {
        lines.next();
        // Lines between the header and the first thread are comments.
        while lines
            .peek()
            .is_some_and(|l| !l.text.starts_with('-') && !legacy::is_memory_map_sentinel(l.text))
        {
            lines.next();
        }
    } else if thread_header(first.text).is_none() {
        return Err(legacy::line_error(
            FORMAT,
            &first,
            "`--- threadz N ---` or a thread's header",
        ));
    }

    let mut samples: Vec<RawSample> = Vec::new();
    let mut map_lines: Vec<&str> = Vec::new();
    // The thread whose stack lines are being read: its labels, its
    // addresses, and whether it says it is the same as the previous.
    type Thread = (Vec<Label>, Vec<u64>, bool);
    let finish = |current: Option<Thread>, samples: &mut Vec<RawSample>| {
        let Some((labels, mut stack, same)) = current else {
            return;
        };
        // A thread with no address is the same as the previous one, as Go
        // pprof reads it (the first such thread: a sample with no frame,
        // where Go drops the thread).
        if same || stack.is_empty() {
            if let Some(previous) = samples.last() {
                stack = previous.stack.clone();
            }
        }
        samples.push(RawSample {
            stack,
            values: vec![1],
            labels,
        });
    };
    let mut current: Option<Thread> = None;
    // After `---- no stack trace for …`, lines up to the map are not read.
    let mut stopped = false;
    let mut in_map = false;
    for line in lines {
        if in_map {
            map_lines.push(line.text);
            continue;
        }
        if legacy::is_memory_map_sentinel(line.text) {
            finish(current.take(), &mut samples);
            in_map = true;
            continue;
        }
        let trimmed = line.text.trim();
        if stopped || trimmed.is_empty() {
            continue;
        }
        if trimmed.starts_with("---- no stack trace for") {
            finish(current.take(), &mut samples);
            stopped = true;
            continue;
        }
        if trimmed.starts_with("---") {
            let Some((name, tid)) = thread_header(trimmed) else {
                return Err(legacy::line_error(
                    FORMAT,
                    &line,
                    &format!("{THREAD} or `--- Memory map: ---`"),
                ));
            };
            finish(current.take(), &mut samples);
            let labels = vec![
                Label::str("thread_name", name),
                Label::str("thread_id", tid),
            ];
            current = Some((labels, Vec::new(), false));
            continue;
        }
        let Some((_, stack, same)) = current.as_mut() else {
            // Only a header's comments precede the first thread.
            return Err(legacy::line_error(FORMAT, &line, THREAD));
        };
        if trimmed.contains("same as previous thread") {
            *same = true;
            continue;
        }
        let addresses = hex_numbers(&line)?;
        if addresses.is_empty() {
            return Err(legacy::line_error(
                FORMAT,
                &line,
                "a stack line of `0x` hex addresses",
            ));
        }
        stack.extend(addresses);
    }
    finish(current.take(), &mut samples);
    let kind = ValueType::new("thread", "count");
    Ok(legacy::build(
        vec![kind.clone()],
        kind,
        1,
        samples,
        legacy::parse_memory_map(map_lines.into_iter()),
        legacy::Leaf::Pc,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LabelValue;

    const PROFILE: &str = "--- threadz 1 ---\n\n\
--- Thread 7f794ab90940 (name: main/14748) stack: ---\n  PC:  0x00bc8f1c: helper(arg *)\n  0x0040be31: main\n  0x7f7949a9811d: __libc_start_main\n\
--- Thread 7f794964e700 (name: thread1/14751) stack: ---\n  PC: 0x7f794a32bf7d 0x7f794a32414e\n      creator: 0xa45b96 0xa460b4\n\
--- Thread 7f7948978700 (name: thread/two/14759) stack: ---\n  [same as previous thread]\n\
--- Memory map: ---\n  00400000-00fcb000: /srv/server\n  7f7949a60000-7f7949c0e000: /lib/libc-2.15.so\n";

    fn addresses(p: &Profile, i: usize) -> Vec<u64> {
        p.samples[i]
            .locations
            .iter()
            .map(|&l| p.location(l).address)
            .collect()
    }

    #[test]
    fn reads_threads_their_stacks_and_the_map() {
        assert!(sniff(PROFILE.as_bytes()));
        let p = read(PROFILE.as_bytes()).unwrap();
        assert_eq!(p.sample_types, [ValueType::new("thread", "count")]);
        assert_eq!(p.period, 1);
        assert_eq!(p.totals(), [3]);
        // The PC as it is; return addresses minus one.
        assert_eq!(addresses(&p, 0), [0xbc8f1c, 0x40be30, 0x7f7949a9811c]);
        // The creator's stack after the thread's own, as Go pprof reads it.
        assert_eq!(
            addresses(&p, 1),
            [0x7f794a32bf7d, 0x7f794a32414d, 0xa45b95, 0xa460b3]
        );
        // The same as the previous thread: its stack, its own labels (a
        // name may hold `/`: the id is after the last one).
        assert_eq!(addresses(&p, 2), addresses(&p, 1));
        assert_eq!(
            p.samples[2].labels[0].value,
            LabelValue::Str("thread/two".into())
        );
        assert_eq!(
            p.samples[2].labels[1].value,
            LabelValue::Str("14759".into())
        );
        assert_eq!(p.mappings.len(), 2);
        assert_eq!(p.mappings[0].path, "/srv/server");
        // In a mapping where the map has one (libpthread's is not listed).
        let mapped = |i: usize, k: usize| p.location(p.samples[i].locations[k]).mapping.is_some();
        assert!(mapped(0, 0) && mapped(0, 2) && !mapped(1, 0));
    }

    #[test]
    fn a_file_may_start_at_its_first_thread_and_end_at_no_stack_trace() {
        let text = "--- Thread 1a (name: a/7) stack: ---\n  PC: 0x10 0x20\n---- no stack trace for thread 1b\nwhatever\n--- Memory map: ---\n";
        let p = read(text.as_bytes()).unwrap();
        assert_eq!(p.totals(), [1]);
        assert_eq!(addresses(&p, 0), [0x10, 0x1f]);
    }

    #[test]
    fn bad_lines_say_where_and_what_was_expected() {
        let e = read(b"--- threadz 1 ---\n--- Thread zz (name: a/1) stack: ---\n").unwrap_err();
        assert!(
            e.message.starts_with("line 2: expected `--- Thread ID"),
            "{e}"
        );
        let e =
            read(b"--- Thread 1 (name: a/1) stack: ---\n  PC: 0x11112222333344445\n").unwrap_err();
        assert!(e.message.starts_with("line 2: expected 64-bit"), "{e}");
        assert_eq!(e.offset, 36);
        let e = read(b"--- Thread 1 (name: a/1) stack: ---\n  PC: nothing\n").unwrap_err();
        assert!(
            e.message.starts_with("line 2: expected a stack line"),
            "{e}"
        );
        let p = read(b"--- Thread 1 (name: a/1) stack: ---\n [same as previous thread]\n").unwrap();
        assert_eq!((p.totals()[0], p.samples[0].locations.len()), (1, 0));
        assert!(!sniff(b"--- threadz x ---\n"));
        assert!(!sniff(b"threadcreate profile: total 3\n"));
        let e = read(b"").unwrap_err();
        assert!(e.message.starts_with("empty file"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn any_input_reads_or_fails_without_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = read(&data);
        }

        #[test]
        fn every_thread_is_one_sample(stacks in proptest::collection::vec(proptest::collection::vec(1u64..u64::MAX, 0..6), 1..20)) {
            let mut text = String::from("--- threadz 1 ---\n");
            let mut expected = 0;
            for (i, stack) in stacks.iter().enumerate() {
                text.push_str(&format!("--- Thread {i:x} (name: t/{i}) stack: ---\n"));
                if stack.is_empty() {
                    text.push_str("  [same as previous thread]\n");
                } else {
                    text.push_str("  PC:");
                    for a in stack { text.push_str(&format!(" 0x{a:x}")); }
                    text.push('\n');
                }
                expected += 1;
            }
            let p = read(text.as_bytes()).unwrap();
            proptest::prop_assert_eq!(p.totals()[0], expected as i64);
            // Each thread's stack is its own or, where it says so, the
            // previous thread's.
            let mut previous: Vec<u64> = Vec::new();
            for (sample, stack) in p.samples.iter().zip(&stacks) {
                let got: Vec<u64> = sample.locations.iter().map(|&l| p.location(l).address).collect();
                let want: Vec<u64> = if stack.is_empty() {
                    previous.clone()
                } else {
                    stack.iter().enumerate().map(|(k, &a)| if k == 0 { a } else { a - 1 }).collect()
                };
                proptest::prop_assert_eq!(&got, &want);
                previous = want;
            }
        }
    }
}
