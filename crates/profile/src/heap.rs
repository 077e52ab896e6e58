//! Heap profiles in text form: tcmalloc's heap profiler
//! (`HEAPPROFILE=/tmp/app` writes `/tmp/app.0001.heap`), its sampled
//! `heap_v2` dumps, heap growth stacks, and Go's `debug=1` heap profile.
//!
//! ```text
//! heap profile:   4100: 30408704 [  4263: 201326592] @ heapprofile
//!      3: 25165824 [     3: 25165824] @ 0x56208dc3a171 0x56208dc3a219 …
//!   4096:  4194304 [  4096:  4194304] @ 0x56208dc3a1ae 0x56208dc3a21e …
//!
//! MAPPED_LIBRARIES:
//! 56208dc39000-56208dc3a000 r--p 00000000 00:00 10011922    /tmp/app
//! …
//! ```
//!
//! The header holds the totals `inuse_count: inuse_bytes [alloc_count:
//! alloc_bytes]` and, after `@`, the profile type: `heapprofile`
//! (tcmalloc's heap profiler: every allocation counted), `heap_v2/RATE`
//! (sampled by a Poisson process of mean RATE bytes), `heap/RATE2` (Go's
//! `debug=1` profile and old remote heap profiles: sampled at RATE2/2),
//! `growth` (`growthz`: stacks that grew the heap) or `fragmentation`.
//! Each following line is one stack, the same four numbers then `@` and
//! its return addresses, leaf first; `#` lines (Go's symbolized stacks,
//! `# runtime.MemStats`) are comments; `MAPPED_LIBRARIES:` or `--- Memory
//! map: ---` opens the memory map ([`crate::legacy`]).
//!
//! As google/pprof reads these: when the header's alloc totals differ from
//! the in-use ones (and are not 0), the sample types are `alloc_objects`,
//! `alloc_space`, `inuse_objects`, `inuse_space` (the last, the default);
//! otherwise `objects` and `space`. Sampled values are un-sampled: an
//! allocation of S bytes is in a profile of rate R with probability
//! `1 - exp(-S/R)`, so each stack's count and bytes are divided by that
//! probability for the stack's mean object size (perl pprof uses the same
//! formula for `heap_v2`; for `heap/RATE2` it divides by the ratio of
//! size to RATE2/2, where cpuprof follows Go pprof). Every sample carries
//! its object size as the numeric label `bytes`.

use crate::error::ParseError;
use crate::legacy::{self, RawSample, StacksEnd, TextLine};
use crate::model::{Label, Profile, ValueType};

/// The format's name in messages.
pub const FORMAT: &str = "heap profile";

/// Functions of allocators, dropped with their callees from heap stacks
/// (pprof's list: POSIX, tcmalloc, Go runtime and C++ allocation entry
/// points).
pub const ALLOCATION_FRAMES: &str = "calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|pvalloc|valloc|realloc|tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|tc_free|tc_memalign|tc_posix_memalign|tc_pvalloc|tc_valloc|tc_realloc|tc_new|tc_delete|tc_newarray|tc_deletearray|tc_new_nothrow|tc_newarray_nothrow|malloc_zone_malloc|malloc_zone_calloc|malloc_zone_valloc|malloc_zone_realloc|malloc_zone_memalign|malloc_zone_free|runtime\\..*|BaseArena::.*|(::)?do_malloc_no_errno|(::)?do_malloc_pages|(::)?do_malloc|DoSampledAllocation|MallocedMemBlock::MallocedMemBlock|_M_allocate|__builtin_(vec_)?delete|__builtin_(vec_)?new|__gnu_cxx::new_allocator::allocate|__libc_malloc|__malloc_alloc_template::allocate|allocate|cpp_alloc|operator new(\\[\\])?|simple_alloc::allocate";

/// Go runtime frames kept even though [`ALLOCATION_FRAMES`] matches them.
pub const KEPT_ALLOCATION_FRAMES: &str =
    "runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";

/// How a profile's values were sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Every allocation is counted (`heapprofile`, `growth`).
    Complete,
    /// A Poisson process of this mean interval in bytes (`heap_v2/RATE`,
    /// `heap/2·RATE`); 0 or 1: unknown or complete, nothing to scale.
    Poisson(i64),
}

/// What a heap profile's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// In-use objects and bytes.
    pub inuse: (i64, i64),
    /// Allocated objects and bytes.
    pub alloc: (i64, i64),
    /// The profile type after `@` (`heapprofile`, `heap_v2`, `growth`, …).
    pub kind: &'static str,
    /// How the values were sampled.
    pub sampling: Sampling,
    /// The sampling period of the profile (bytes), as pprof records it.
    pub period: i64,
    /// The profile has the two pairs of columns (alloc and in-use).
    pub has_alloc: bool,
}

/// True when the first line is a heap profile's header.
pub fn sniff(data: &[u8]) -> bool {
    legacy::first_line(data)
        .trim_start()
        .starts_with("heap profile:")
}

/// Parses blanks, then an unsigned or signed decimal number.
fn number(s: &mut &str, signed: bool) -> Option<i64> {
    let t = s.trim_start();
    let digits_start = usize::from(signed && t.starts_with('-'));
    let end = digits_start
        + t[digits_start..]
            .bytes()
            .take_while(|b| b.is_ascii_digit())
            .count();
    if end == digits_start {
        return None;
    }
    let n = t[..end].parse().ok()?;
    *s = &t[end..];
    Some(n)
}

/// Parses blanks, then `token`.
fn token(s: &mut &str, token: &str) -> Option<()> {
    *s = s.trim_start().strip_prefix(token)?;
    Some(())
}

/// A pair of columns: objects and bytes.
type Pair = (i64, i64);

/// `N: N [N: N]` (the first pair signed when `signed`), then `@` and
/// what follows it.
fn counts(mut s: &str, signed: bool) -> Option<(Pair, Pair, &str)> {
    let a = number(&mut s, signed)?;
    token(&mut s, ":")?;
    let b = number(&mut s, signed)?;
    token(&mut s, "[")?;
    let c = number(&mut s, false)?;
    token(&mut s, ":")?;
    let d = number(&mut s, false)?;
    token(&mut s, "]")?;
    token(&mut s, "@")?;
    Some(((a, b), (c, d), s))
}

/// Parses the header line.
pub fn parse_header(line: &str) -> Result<Header, String> {
    const EXPECTED: &str = "`heap profile: N: N [N: N] @ TYPE[/RATE]` (TYPE heapprofile, heap_v2, heap, growth or fragmentation)";
    let rest = line
        .trim_start()
        .strip_prefix("heap profile:")
        .ok_or(EXPECTED)?;
    let (inuse, alloc, rest) = counts(rest, false).ok_or(EXPECTED)?;
    let rest = rest.trim();
    let (name, rate) = match rest.split_once('/') {
        Some((name, rate)) => (name.trim_end(), Some(rate.trim_start())),
        None => (rest, None),
    };
    let rate = match rate {
        None | Some("") => 0,
        Some(r) => r
            .parse::<i64>()
            .ok()
            .filter(|&r| r >= 0)
            .ok_or("a sampling rate in bytes after `/`")?,
    };
    // Go pprof's test: an alloc total that differs from the in-use one
    // and is not 0.
    let has_alloc = (alloc.0 != inuse.0 && alloc.0 != 0) || (alloc.1 != inuse.1 && alloc.1 != 0);
    let (kind, sampling, period, has_alloc) = match name {
        "heapprofile" => ("heapprofile", Sampling::Complete, 1, has_alloc),
        "heap_v2" | "heapz_v2" => ("heap_v2", Sampling::Poisson(rate), rate, has_alloc),
        "heap" | "heapz" => ("heap", Sampling::Poisson(rate / 2), rate / 2, has_alloc),
        "growth" | "growthz" => ("growth", Sampling::Complete, 1, false),
        "fragmentation" | "fragmentationz" => ("fragmentation", Sampling::Complete, 1, false),
        _ => return Err(EXPECTED.to_string()),
    };
    Ok(Header {
        inuse,
        alloc,
        kind,
        sampling,
        period,
        has_alloc,
    })
}

/// Un-samples a stack's count and bytes for a Poisson sampling of mean
/// interval `rate` bytes: each divided by `1 - exp(-mean_size/rate)`, the
/// probability that an object of the stack's mean size is sampled
/// (truncated to integers, as Go pprof does).
pub fn unsample(count: i64, size: i64, rate: i64) -> (i64, i64) {
    if count == 0 || size == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count, size);
    }
    let mean = size as f64 / count as f64;
    let scale = 1.0 / (1.0 - (-mean / rate as f64).exp());
    ((count as f64 * scale) as i64, (size as f64 * scale) as i64)
}

/// The sample types of a profile with (or without) the alloc columns.
pub fn sample_types(has_alloc: bool) -> Vec<ValueType> {
    if has_alloc {
        vec![
            ValueType::new("alloc_objects", "count"),
            ValueType::new("alloc_space", "bytes"),
            ValueType::new("inuse_objects", "count"),
            ValueType::new("inuse_space", "bytes"),
        ]
    } else {
        vec![
            ValueType::new("objects", "count"),
            ValueType::new("space", "bytes"),
        ]
    }
}

/// Reads a heap (or growth) profile.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    let text = legacy::text_of(FORMAT, data)?;
    let mut lines = legacy::lines(text);
    let Some(first) = lines.next() else {
        return Err(ParseError::new(
            FORMAT,
            0,
            "empty file: expected `heap profile:`",
        ));
    };
    let header = parse_header(first.text).map_err(|e| legacy::line_error(FORMAT, &first, &e))?;
    let (samples, mappings) = legacy::read_stacks(lines, StacksEnd::Sentinel, |line| {
        parse_sample(line, &header)
    })?;
    let mut profile = legacy::build(
        sample_types(header.has_alloc),
        ValueType::new("space", "bytes"),
        header.period,
        samples,
        mappings,
        legacy::Leaf::ReturnAddress,
    );
    profile.drop_frames = ALLOCATION_FRAMES.to_string();
    profile.keep_frames = KEPT_ALLOCATION_FRAMES.to_string();
    profile
        .comments
        .push(format!("heap profile type: {}", header.kind));
    Ok(profile)
}

/// Parses one stack line.
fn parse_sample(line: &TextLine, header: &Header) -> Result<RawSample, ParseError> {
    const EXPECTED: &str = "`inuse_count: inuse_bytes [alloc_count: alloc_bytes] @ 0xADDRESS…`";
    let (inuse, alloc, stack) =
        counts(line.text, true).ok_or_else(|| legacy::line_error(FORMAT, line, EXPECTED))?;
    let stack = legacy::parse_stack(stack).map_err(|e| legacy::line_error(FORMAT, line, &e))?;
    let mut values = Vec::with_capacity(4);
    let mut block_size = 0;
    let mut add = |(count, size): (i64, i64), what: &str| -> Result<(), ParseError> {
        if count == 0 && size != 0 {
            return Err(legacy::line_error(
                FORMAT,
                line,
                &format!("a {what} count above 0 for {size} {what} bytes"),
            ));
        }
        let (mut count, mut size) = (count, size);
        if count != 0 {
            block_size = size / count;
            if let Sampling::Poisson(rate) = header.sampling {
                (count, size) = unsample(count, size, rate);
            }
        }
        values.push(count);
        values.push(size);
        Ok(())
    };
    if header.has_alloc {
        add(alloc, "alloc")?;
    }
    add(inuse, "inuse")?;
    Ok(RawSample {
        stack,
        values,
        labels: vec![Label::num("bytes", block_size, "bytes")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LabelValue;

    const TCMALLOC: &str = "heap profile:   4100: 30408704 [  4263: 201326592] @ heapprofile
     3: 25165824 [     3: 25165824] @ 0x56208dc3a171 0x56208dc3a219 0x7f6c7564524a
  4096:  4194304 [  4096:  4194304] @ 0x56208dc3a1ae 0x56208dc3a21e 0x7f6c7564524a
     1:  1048576 [   164: 171966464] @ 0x56208dc3a1dd 0x56208dc3a223 0x7f6c7564524a

MAPPED_LIBRARIES:
56208dc39000-56208dc3a000 r--p 00000000 00:00 10011922    /tmp/app
56208dc3a000-56208dc3b000 r-xp 00001000 00:00 10011922    /tmp/app
7f6c7561e000-7f6c75644000 r--p 00000000 00:00 326279      /usr/lib/x86_64-linux-gnu/libc.so.6
7f6c75644000-7f6c7579a000 r-xp 00026000 00:00 326279      /usr/lib/x86_64-linux-gnu/libc.so.6
";

    #[test]
    fn reads_a_tcmalloc_heap_profile() {
        let p = read(TCMALLOC.as_bytes()).unwrap();
        let kinds: Vec<&str> = p.sample_types.iter().map(|t| t.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "alloc_objects",
                "alloc_space",
                "inuse_objects",
                "inuse_space"
            ]
        );
        assert_eq!(p.default_sample_index(), 3);
        assert_eq!(p.samples.len(), 3);
        assert_eq!(p.samples[0].values, [3, 25165824, 3, 25165824]);
        assert_eq!(p.samples[2].values, [164, 171966464, 1, 1048576]);
        assert_eq!(p.totals(), [4263, 201326592, 4100, 30408704]);
        // Return addresses minus one, leaf first.
        assert_eq!(
            p.location(p.samples[0].locations[0]).address,
            0x56208dc3a170
        );
        assert_eq!(p.mappings.len(), 4);
        let leaf = p.location(p.samples[0].locations[0]);
        assert_eq!(p.mapping(leaf.mapping.unwrap()).path, "/tmp/app");
        assert_eq!(
            p.samples[1].labels[0].value,
            LabelValue::Num {
                value: 1024,
                unit: "bytes".into()
            }
        );
        assert_eq!(p.period, 1);
    }

    #[test]
    fn equal_totals_give_objects_and_space() {
        let p =
            read(b"heap profile: 3: 300 [3: 300] @ heapprofile\n3: 300 [3: 300] @ 0x10\n").unwrap();
        let kinds: Vec<&str> = p.sample_types.iter().map(|t| t.kind.as_str()).collect();
        assert_eq!(kinds, ["objects", "space"]);
        assert_eq!(p.samples[0].values, [3, 300]);
    }

    #[test]
    fn heap_v2_values_are_unsampled() {
        // Mean size 1024 at rate 524288: scale 1/(1-exp(-1/512)).
        let p = read(b"heap profile: 1: 1024 [2: 2048] @ heap_v2/524288\n 1: 1024 [ 2: 2048] @ 0x1000 0x2000\n").unwrap();
        let scale = 1.0 / (1.0 - (-1024.0f64 / 524288.0).exp());
        assert_eq!(
            p.samples[0].values,
            [
                (2.0 * scale) as i64,
                (2048.0 * scale) as i64,
                scale as i64,
                (1024.0 * scale) as i64
            ]
        );
        assert_eq!(p.period, 524288);
        // Go's `heap/RATE2`: sampled at half the printed rate.
        let p = read(b"heap profile: 1: 8192 [1: 8192] @ heap/1048576\n1: 8192 [1: 8192] @ 0x10\n")
            .unwrap();
        assert_eq!(p.period, 524288);
        assert_eq!(
            p.samples[0].values,
            [unsample(1, 8192, 524288).0, unsample(1, 8192, 524288).1]
        );
        assert_eq!(unsample(0, 0, 100), (0, 0));
        assert_eq!(unsample(5, 500, 1), (5, 500));
    }

    #[test]
    fn growth_and_go_heap_profiles() {
        let p = read(b"heap profile:     2: 4194304 [     2: 4194304] @ growthz\n     1:  2097152 [     1:  2097152] @ 0xb83003 0xb87d50\n--- Memory map: ---\n  00400000-00fcb000: cppbench_server_main\n").unwrap();
        assert_eq!(p.samples[0].values, [1, 2097152]);
        assert_eq!(p.mappings[0].path, "cppbench_server_main");
        let go = "heap profile: 1: 8 [5: 40] @ heap/1048576\n1: 8 [5: 40] @ 0x4b7c5b 0x43b8b7\n#\t0x4b7c5a\tmain.f+0x3a\t/x/main.go:12\n\n# runtime.MemStats\n# Alloc = 1\n";
        let p = read(go.as_bytes()).unwrap();
        assert_eq!(p.sample_types.len(), 4);
        assert_eq!(p.samples.len(), 1);
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let e = read(
            b"heap profile: 1: 2 [1: 2] @ heapprofile\n1: 2 [1: 2] @ 0x10\n1: 2 [1 2] @ 0x10\n",
        )
        .unwrap_err();
        assert_eq!(e.offset, 59);
        assert!(
            e.message.starts_with("line 3: expected `inuse_count"),
            "{e}"
        );
        let e = read(b"heap profile: 1: 2 [1: 2] @ heapprofile\n1: 2 [1: 2] @ 10\n").unwrap_err();
        assert!(
            e.message.contains("line 2: expected a `0x` hex address"),
            "{e}"
        );
        let e = read(b"heap profile: 1: 2 [1: 2] @ cpu\n").unwrap_err();
        assert!(
            e.message.starts_with("line 1: expected `heap profile:"),
            "{e}"
        );
        let e = read(b"heap profile: 1: 2 [1: 2] @ heapprofile\n0: 2 [1: 2] @ 0x10\n").unwrap_err();
        assert!(e.message.contains("inuse count above 0"), "{e}");
        assert!(read(b"heap profile: 1: 2 [1: 2] @ heapprofile\n\xff\n").is_err());
    }
}
