//! What pprof's legacy text profiles share: numbered lines, stacks of
//! `0x` addresses, and the memory map section that ends them
//! (`MAPPED_LIBRARIES:` or `--- Memory map: ---`, then `/proc/self/maps`
//! lines or pprof's brief `start-end: path` lines, possibly behind glog
//! prefixes).
//!
//! The readers of these formats ([`crate::heap`], [`crate::contention`],
//! [`crate::gocount`]) follow the layouts as google/pprof's
//! `legacy_profile.go` and perl pprof read them.

use std::borrow::Cow;

use crate::error::ParseError;
use crate::gperftools::parse_mapping_line;
use crate::model::{Label, Mapping, Profile, ProfileBuilder, Sample, ValueType};

/// One line of a text profile: its number (from 1), the offset of its
/// first byte, and its text without the line break.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextLine<'a> {
    pub number: usize,
    pub offset: usize,
    pub text: &'a str,
}

/// The lines of `text`, numbered.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = TextLine<'_>> {
    let mut offset = 0;
    text.split_inclusive('\n').enumerate().map(move |(i, raw)| {
        let line = TextLine {
            number: i + 1,
            offset,
            text: raw.trim_end_matches(['\n', '\r']),
        };
        offset += raw.len();
        line
    })
}

/// The input as text, or an error at the first byte that is not UTF-8.
pub(crate) fn text_of<'a>(format: &'static str, data: &'a [u8]) -> Result<&'a str, ParseError> {
    std::str::from_utf8(data).map_err(|e| {
        let at = e.valid_up_to();
        let line = data[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        ParseError::new(
            format,
            at as u64,
            format!("line {line}: invalid UTF-8: expected text lines"),
        )
    })
}

/// The first line of `data` (at most its first 4 KiB), for detection.
pub(crate) fn first_line(data: &[u8]) -> &str {
    let head = &data[..data.len().min(4096)];
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = &head[..end];
    match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&line[..e.valid_up_to()]).unwrap_or(""),
    }
    .trim_end_matches('\r')
}

/// An error on `line`: `line N: MESSAGE: `TEXT``.
pub(crate) fn line_error(format: &'static str, line: &TextLine, expected: &str) -> ParseError {
    let mut shown: String = line.text.trim().chars().take(80).collect();
    if shown.len() < line.text.trim().len() {
        shown.push('…');
    }
    ParseError::new(
        format,
        line.offset as u64,
        format!("line {}: expected {expected}, found `{shown}`", line.number),
    )
}

/// Blank or a `#` comment (Go's text profiles annotate stacks with them).
pub(crate) fn is_space_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The line that opens the memory map section.
pub(crate) fn is_memory_map_sentinel(line: &str) -> bool {
    line.contains("--- Memory map: ---") || line.contains("MAPPED_LIBRARIES:")
}

/// Parses a stack: `0x`-prefixed hex addresses separated by blanks.
/// Returns the message of what is wrong on failure.
pub(crate) fn parse_stack(text: &str) -> Result<Vec<u64>, String> {
    let mut stack = Vec::new();
    for word in text.split_ascii_whitespace() {
        let digits = word
            .strip_prefix("0x")
            .ok_or_else(|| format!("a `0x` hex address, found `{word}`"))?;
        if digits.is_empty() || digits.len() > 16 {
            return Err(format!("a 64-bit hex address, found `{word}`"));
        }
        stack.push(
            u64::from_str_radix(digits, 16)
                .map_err(|_| format!("a hex address, found `{word}`"))?,
        );
    }
    Ok(stack)
}

/// Removes a glog prefix (`W1220 15:07:15.201776    8272 logger.cc:12033] `):
/// text without `[` or `]`, a `:` and digits, then `]` and a blank.
pub fn remove_logging_prefix(line: &str) -> &str {
    let Some(close) = line.find(']') else {
        return line;
    };
    let (head, rest) = line.split_at(close);
    let rest = &rest[1..];
    if head.contains('[') || !rest.starts_with(char::is_whitespace) {
        return line;
    }
    let Some((before, digits)) = head.rsplit_once(':') else {
        return line;
    };
    if before.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return line;
    }
    &rest[rest.chars().next().map_or(0, char::len_utf8)..]
}

/// Parses the memory map section's lines (after the sentinel): each line
/// behind an optional glog prefix, `build=DIR` (and other `name=value`)
/// assignments substituted as `$name` into later lines, lines of no
/// mapping layout ignored, as pprof ignores them.
pub fn parse_memory_map<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<Mapping> {
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut mappings = Vec::new();
    for raw in lines {
        let mut line = Cow::Borrowed(remove_logging_prefix(raw));
        for (name, value) in &variables {
            if let Cow::Owned(changed) = substitute(&line, name, value) {
                line = Cow::Owned(changed);
            }
        }
        match parse_mapping_line(&line) {
            Some(mapping) => {
                // A build id line (`gperftools::build_id_line`: an empty
                // mapping continuing the previous one) gives the build id
                // of the mapping it follows.
                if let Some(previous) = mappings.last_mut().filter(|p: &&mut Mapping| {
                    mapping.start == mapping.limit
                        && !mapping.build_id.is_empty()
                        && p.limit == mapping.start
                        && p.path == mapping.path
                }) {
                    previous.build_id = mapping.build_id;
                    continue;
                }
                mappings.push(mapping)
            }
            None => {
                if let Some((name, value)) = line.split_once('=') {
                    let name = name.trim();
                    if !name.is_empty() && !name.contains(char::is_whitespace) {
                        variables.retain(|(n, _)| n != name);
                        variables.push((name.to_string(), value.trim().to_string()));
                    }
                }
            }
        }
    }
    mappings
}

/// Replaces `$name` when followed by a non-word character or the end
/// (borrowed when there is no `$name`: most lines).
fn substitute<'a>(line: &'a str, name: &str, value: &str) -> Cow<'a, str> {
    if !line.contains('$') {
        return Cow::Borrowed(line);
    }
    let pattern = format!("${name}");
    if !line.contains(&pattern) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + value.len());
    let mut rest = line;
    while let Some(i) = rest.find(&pattern) {
        out.push_str(&rest[..i]);
        let after = &rest[i + pattern.len()..];
        let word = after
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(if word { &pattern } else { value });
        rest = after;
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A sample as read: its addresses (return addresses, leaf first), its
/// values and labels.
pub(crate) struct RawSample {
    pub stack: Vec<u64>,
    pub values: Vec<i64>,
    pub labels: Vec<Label>,
}

/// Where a format's stack lines end, besides at the memory map's
/// sentinel (each as google/pprof's reader of that format has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StacksEnd {
    /// Only at the sentinel, and a comment naming the sentinel stays a
    /// comment (heap profiles).
    Sentinel,
    /// Also at a line starting with `---`, after which lines up to the
    /// sentinel are ignored (Go count profiles).
    Dashes,
    /// Also at a line starting with `---` after blanks, and at a mapping
    /// line where a stack was expected: perl pprof takes what follows the
    /// stacks for the memory map, with or without a sentinel (contention
    /// profiles).
    DashesOrMap,
}

/// Reads the lines after a header: blank and `#` lines skipped, each
/// other line a sample (`parse`), up to where `end` says; then the memory
/// map, read by [`parse_memory_map`].
pub(crate) fn read_stacks<'a>(
    lines: impl Iterator<Item = TextLine<'a>>,
    end: StacksEnd,
    mut parse: impl FnMut(&TextLine<'a>) -> Result<RawSample, ParseError>,
) -> Result<(Vec<RawSample>, Vec<Mapping>), ParseError> {
    let mut samples = Vec::new();
    let mut map_lines: Vec<&str> = Vec::new();
    let mut in_map = false;
    let mut ended = false;
    for line in lines {
        if in_map {
            map_lines.push(line.text);
            continue;
        }
        if end == StacksEnd::Sentinel && is_space_or_comment(line.text) {
            continue;
        }
        if is_memory_map_sentinel(line.text) {
            in_map = true;
            continue;
        }
        if ended || is_space_or_comment(line.text) {
            continue;
        }
        let dashes = match end {
            StacksEnd::Sentinel => false,
            StacksEnd::Dashes => line.text.starts_with("---"),
            StacksEnd::DashesOrMap => line.text.trim().starts_with("---"),
        };
        if dashes {
            ended = true;
            continue;
        }
        match parse(&line) {
            Ok(sample) => samples.push(sample),
            Err(_) if end == StacksEnd::DashesOrMap && parse_mapping_line(line.text).is_some() => {
                in_map = true;
                map_lines.push(line.text);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((samples, parse_memory_map(map_lines.into_iter())))
}

/// What a stack's leaf address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leaf {
    /// A return address, like the others (allocation and contention
    /// stacks are taken inside a call).
    ReturnAddress,
    /// The thread's own instruction pointer (thread profiles' `PC:`).
    Pc,
}

/// The first line of `data` (within its first 4 KiB) that is not blank
/// or a comment, for detection.
pub(crate) fn first_content_line(data: &[u8]) -> Option<&str> {
    let head = &data[..data.len().min(4096)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    text.lines().find(|l| !is_space_or_comment(l))
}

/// Builds the profile: mappings sorted (overlaps dropped, as a location
/// must fall in one), every return address minus one (the caller's call
/// instruction is what is symbolized, as pprof does), the leaf as `leaf`
/// says, samples in file order.
pub(crate) fn build(
    sample_types: Vec<ValueType>,
    period_type: ValueType,
    period: i64,
    samples: Vec<RawSample>,
    mut mappings: Vec<Mapping>,
    leaf: Leaf,
) -> Profile {
    mappings.sort_by_key(|m| (m.start, m.limit));
    let mut kept: Vec<Mapping> = Vec::with_capacity(mappings.len());
    for m in mappings {
        if m.limit <= m.start {
            continue;
        }
        if kept.last().is_some_and(|last| m.start < last.limit) {
            continue;
        }
        kept.push(m);
    }
    let mut builder = ProfileBuilder::new(sample_types);
    builder.profile.period_type = period_type;
    builder.profile.period = period;
    builder.profile.mappings = kept;
    for sample in samples {
        let locations = sample
            .stack
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let pc = i == 0 && leaf == Leaf::Pc;
                builder.location_at(if pc { a } else { a.wrapping_sub(1) })
            })
            .collect();
        builder.profile.samples.push(Sample {
            locations,
            values: sample.values,
            labels: sample.labels,
        });
    }
    builder.profile
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glog_prefixes_are_removed() {
        assert_eq!(
            remove_logging_prefix(
                "W1220 15:07:15.202776    8272 logger.cc:12036]   0x40000-0x80000 /bin/x"
            ),
            "  0x40000-0x80000 /bin/x"
        );
        assert_eq!(
            remove_logging_prefix("0x40000-0x80000 /bin/x"),
            "0x40000-0x80000 /bin/x"
        );
        assert_eq!(remove_logging_prefix("a[b:1] x"), "a[b:1] x");
    }

    #[test]
    fn memory_map_layouts_of_pprof_s_tests() {
        // google/pprof's TestParseMappingEntry cases.
        let one = |text: &str| parse_memory_map(text.lines());
        let m = one("  02e00000-02e8a000: /foo/bin (deleted)");
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0].start, m[0].limit, m[0].path.as_str()),
            (0x2e00000, 0x2e8a000, "/foo/bin")
        );
        let m = one("  02e00000-02e8a000: /foo/bin (@2a00000)");
        assert_eq!((m[0].offset, m[0].path.as_str()), (0x2a00000, "/foo/bin"));
        let m = one(
            "W1220 15:07:15.201776    8272 logger.cc:12033] --- Memory map: ---\n\
             W1220 15:07:15.202776    8272 logger.cc:12036]   0x40000-0x80000 /path/to/binary      (@FF00)            abc123456",
        );
        assert_eq!(m.len(), 1);
        assert_eq!(
            (
                m[0].start,
                m[0].limit,
                m[0].offset,
                m[0].path.as_str(),
                m[0].build_id.as_str()
            ),
            (0x40000, 0x80000, 0xff00, "/path/to/binary", "abc123456")
        );
        let m = one("build=/b\n400000-401000 r-xp 0 08:01 9 $build/x\n");
        assert_eq!(m[0].path, "/b/x");
    }

    #[test]
    fn build_substitution_needs_a_non_word_character() {
        assert_eq!(substitute("$build/x", "build", "/b"), "/b/x");
        assert_eq!(substitute("$build", "build", "/b"), "/b");
        assert_eq!(substitute("$builder", "build", "/b"), "$builder");
        assert_eq!(substitute("/a/$build.so", "build", "/b"), "/a//b.so");
    }

    #[test]
    fn stacks_need_hex_addresses() {
        assert_eq!(parse_stack(" 0x10 0xff ").unwrap(), vec![0x10, 0xff]);
        assert!(parse_stack("0x10 16").is_err());
        assert!(parse_stack("0x10000000000000000").is_err());
        assert!(parse_stack("0xzz").is_err());
    }
}
