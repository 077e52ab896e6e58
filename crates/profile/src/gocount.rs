//! Go's count profiles in text form (`debug=1`): goroutine and
//! threadcreate (any `NAME profile: total N`).
//!
//! ```text
//! goroutine profile: total 6
//! 5 @ 0x43b8b6 0x44c9f2 0x4b7c45 0x46b701
//! #   0x4b7c44    main.worker+0x24    /tmp/x/main.go:21
//!
//! 1 @ 0x43b8b6 0x46b701
//! ```
//!
//! Blank and `#` lines before the header and between stacks are skipped
//! (Go writes each stack symbolized as `#` lines, and `# labels:`). Each
//! stack line is `COUNT @ 0xADDRESS…`, leaf first (Go writes threads
//! made before profiling began with no address: a sample with an empty
//! stack, counted in the total); a line starting with
//! `---` ends them, and a memory map may follow its sentinel. As Go pprof
//! reads them: one sample type and period type `NAME/count`, period 1.

use crate::error::ParseError;
use crate::legacy::{self, RawSample, StacksEnd, TextLine};
use crate::model::{Profile, ValueType};

/// The format's name in messages.
pub const FORMAT: &str = "Go count profile";

/// The header's profile name: `NAME profile: total N` (NAME one word).
fn header_name(line: &str) -> Option<&str> {
    let (name, rest) = line.trim().split_once(" profile: total ")?;
    if name.is_empty()
        || name.contains(char::is_whitespace)
        || rest.is_empty()
        || !rest.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some(name)
}

/// True when the first line that is not a comment is `NAME profile: total N`.
pub fn sniff(data: &[u8]) -> bool {
    legacy::first_content_line(data).is_some_and(|l| header_name(l).is_some())
}

/// Reads a Go count profile.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    let text = legacy::text_of(FORMAT, data)?;
    let mut lines = legacy::lines(text).skip_while(|l| legacy::is_space_or_comment(l.text));
    let first = lines.next().ok_or_else(|| {
        ParseError::new(FORMAT, 0, "empty file: expected `NAME profile: total N`")
    })?;
    let name = header_name(first.text)
        .ok_or_else(|| legacy::line_error(FORMAT, &first, "`NAME profile: total N`"))?
        .to_string();
    let (samples, mappings) = legacy::read_stacks(lines, StacksEnd::Dashes, parse_sample)?;
    let kind = ValueType::new(&name, "count");
    Ok(legacy::build(
        vec![kind.clone()],
        kind,
        1,
        samples,
        mappings,
        legacy::Leaf::ReturnAddress,
    ))
}

/// Parses `COUNT @ 0xADDRESS…`.
fn parse_sample(line: &TextLine) -> Result<RawSample, ParseError> {
    const EXPECTED: &str = "`COUNT @ 0xADDRESS…`";
    let (count, stack) = line
        .text
        .trim()
        .split_once(" @")
        .ok_or_else(|| legacy::line_error(FORMAT, line, EXPECTED))?;
    let count: i64 = count
        .parse()
        .ok()
        .filter(|_| count.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| legacy::line_error(FORMAT, line, EXPECTED))?;
    let stack = legacy::parse_stack(stack).map_err(|e| legacy::line_error(FORMAT, line, &e))?;
    Ok(RawSample {
        stack,
        values: vec![count],
        labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_goroutine_and_threadcreate_profiles() {
        let text = "goroutine profile: total 6\n5 @ 0x43b8b6 0x44c9f2 0x46b701\n#\t0x44c9f1\tmain.worker+0x24\t/x/main.go:21\n# labels: {\"a\":\"b\"}\n\n1 @ 0x43b8b6 0x46b701\n";
        let p = read(text.as_bytes()).unwrap();
        assert_eq!(p.sample_types, [ValueType::new("goroutine", "count")]);
        assert_eq!(p.totals(), [6]);
        assert_eq!(p.samples[0].locations.len(), 3);
        assert_eq!(p.location(p.samples[0].locations[0]).address, 0x43b8b5);
        // Go writes the threads it made before profiling with no stack.
        let p = read(b"# comment\n\nthreadcreate profile: total 3\n3 @\n#\t0x0\n").unwrap();
        assert_eq!((p.totals()[0], p.samples[0].locations.len()), (3, 0));
        let e = read(b"threadcreate profile: total 3\n3 0x10\n").unwrap_err();
        assert!(e.message.starts_with("line 2: expected `COUNT @"), "{e}");
        assert!(sniff(b"\n# x\nthreadcreate profile: total 3\n"));
        assert!(!sniff(b"heap profile: 1: 2 [1: 2] @ heap/2\n"));
        let e = read(b"goroutine profile: total 1\n1 @ 0x10 zz\n").unwrap_err();
        assert!(
            e.message.starts_with("line 2: expected a `0x` hex address"),
            "{e}"
        );
    }
}
