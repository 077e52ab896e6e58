//! Lock contention profiles in text form: gperftools-era `contention`
//! profiles and Go's `debug=1` block and mutex profiles.
//!
//! ```text
//! --- contention:
//! cycles/second=2500000000
//! sampling period = 100
//! 19490304 27 @ 0xbccc97 0xc61202 0x42ed5f
//! 768 1 @ 0xbccc97 0xa42dc7
//! --- Memory map: ---
//!   00400000-00fcb000: /bin/server
//! ```
//!
//! The header line is `--- contention` (`--- contentionz N ---`, Go's
//! `--- contention:` for the block profile), `--- mutex:`, or the old
//! `--- Stacks:`; then `name = value` lines: `cycles/second` (the clock
//! the delays are counted in), `sampling period` (one event in N was
//! recorded), `ms since reset`, `discarded samples` (others are
//! ignored, as perl pprof ignores them). Each stack line is `CYCLES COUNT
//! @ 0xADDRESS…`: the delay in cycles and the number of contentions,
//! leaf first; `#` lines are comments. A line starting with `---` ends
//! the stacks; the memory map follows its sentinel ([`crate::legacy`]).
//!
//! As google/pprof reads them, the sample types are `contentions`
//! (count) and `delay` (nanoseconds, the default); values are un-sampled
//! by multiplying by the sampling period, and delays converted from
//! cycles at the profile's clock rate (`cycles · period / (Hz / 1e9)`).
//! Without a `cycles/second` line the delay stays in cycles, as Go
//! pprof leaves it (perl pprof guesses 2.8 GHz).

use crate::error::ParseError;
use crate::legacy::{self, RawSample, StacksEnd, TextLine};
use crate::model::{Profile, ValueType};

/// The format's name in messages.
pub const FORMAT: &str = "contention profile";

/// Functions of the lock implementations, dropped with their callees
/// from contention stacks (pprof's list).
pub const LOCK_FRAMES: &str = "RecordLockProfileData|(base::)?RecordLockProfileData.*|(base::)?SubmitMutexProfileData.*|(base::)?SubmitSpinLockProfileData.*|(base::Mutex::)?AwaitCommon.*|(base::Mutex::)?Unlock.*|(base::Mutex::)?UnlockSlow.*|(base::Mutex::)?ReaderUnlock.*|(base::MutexLock::)?~MutexLock.*|(Mutex::)?AwaitCommon.*|(Mutex::)?Unlock.*|(Mutex::)?UnlockSlow.*|(Mutex::)?ReaderUnlock.*|(MutexLock::)?~MutexLock.*|(SpinLock::)?Unlock.*|(SpinLock::)?SlowUnlock.*|(SpinLockHolder::)?~SpinLockHolder.*";

/// The header's kind: `contention`, `mutex` or `Stacks:`; `None` when the
/// line opens no contention profile.
fn header_kind(line: &str) -> Option<&'static str> {
    let rest = line.trim().strip_prefix("---")?.trim_start();
    if rest.starts_with("contention") {
        Some("contention")
    } else if rest.starts_with("mutex:") {
        Some("mutex")
    } else if rest.starts_with("Stacks:") {
        Some("contention")
    } else {
        None
    }
}

/// True when the first line opens a contention profile.
pub fn sniff(data: &[u8]) -> bool {
    header_kind(legacy::first_line(data)).is_some()
}

/// A stack line: `CYCLES COUNT @ 0xADDRESS…`.
fn parse_sample_line(line: &str) -> Option<(i64, i64, &str)> {
    let (numbers, stack) = line.trim().split_once('@')?;
    let mut words = numbers.split_ascii_whitespace();
    let cycles = words.next()?;
    let count = words.next()?;
    if words.next().is_some()
        || !cycles.bytes().all(|b| b.is_ascii_digit())
        || !count.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((cycles.parse().ok()?, count.parse().ok()?, stack))
}

/// Reads a contention profile.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    let text = legacy::text_of(FORMAT, data)?;
    let mut lines = legacy::lines(text).peekable();
    let first = lines
        .next()
        .ok_or_else(|| ParseError::new(FORMAT, 0, "empty file: expected `--- contention`"))?;
    let kind = header_kind(first.text).ok_or_else(|| {
        legacy::line_error(
            FORMAT,
            &first,
            "`--- contention`, `--- contentionz`, `--- mutex:` or `--- Stacks:`",
        )
    })?;
    let mut period: i64 = 1;
    let mut hz: i64 = 0;
    let mut duration_ms: i64 = 0;
    // `name = value` lines, up to the first stack.
    while let Some(line) = lines.peek().copied() {
        if legacy::is_space_or_comment(line.text) {
            lines.next();
            continue;
        }
        if line.text.trim().starts_with("---") {
            break;
        }
        let Some((name, value)) = line.text.split_once('=') else {
            break;
        };
        let number = || -> Result<i64, ParseError> {
            value
                .trim()
                .parse::<i64>()
                .map_err(|_| legacy::line_error(FORMAT, &line, "a whole number after `=`"))
        };
        match name.trim() {
            "cycles/second" => hz = number()?,
            "sampling period" => period = number()?,
            "ms since reset" => duration_ms = number()?,
            _ => {}
        }
        lines.next();
    }
    let (samples, mappings) = legacy::read_stacks(lines, StacksEnd::DashesOrMap, |line| {
        parse_sample(line, period, hz)
    })?;
    let mut profile = legacy::build(
        vec![
            ValueType::new("contentions", "count"),
            ValueType::new("delay", "nanoseconds"),
        ],
        ValueType::new("contentions", "count"),
        period,
        samples,
        mappings,
        legacy::Leaf::ReturnAddress,
    );
    profile.duration_nanos = duration_ms.saturating_mul(1_000_000);
    profile.drop_frames = LOCK_FRAMES.to_string();
    profile
        .comments
        .push(format!("contention profile type: {kind}"));
    if hz > 0 {
        profile.comments.push(format!("cycles/second={hz}"));
    }
    Ok(profile)
}

/// Parses one stack line into `[contentions, delay]`.
fn parse_sample(line: &TextLine, period: i64, hz: i64) -> Result<RawSample, ParseError> {
    let (mut cycles, mut count, stack) = parse_sample_line(line.text)
        .ok_or_else(|| legacy::line_error(FORMAT, line, "`CYCLES COUNT @ 0xADDRESS…`"))?;
    let stack = legacy::parse_stack(stack).map_err(|e| legacy::line_error(FORMAT, line, &e))?;
    if period > 0 {
        if hz > 0 {
            let ghz = hz as f64 / 1e9;
            cycles = (cycles as f64 * period as f64 / ghz) as i64;
        }
        count = count.saturating_mul(period);
    }
    Ok(RawSample {
        stack,
        values: vec![count, cycles],
        labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_layout() {
        let text = "--- contentionz 1 ---\ncycles/second = 2000000000\nsampling period = 100\nms since reset = 1500\ndiscarded samples = 0\n  2000       3 @ 0xbccc97 0xc61202\n   500 1 @ 0xbccc97 0xa42dc7\n--- Memory map: ---\n  00400000-00fcb000: server\n";
        let p = read(text.as_bytes()).unwrap();
        let kinds: Vec<&str> = p.sample_types.iter().map(|t| t.kind.as_str()).collect();
        assert_eq!(kinds, ["contentions", "delay"]);
        // 2000 cycles at 2 GHz = 1000 ns, times the period.
        assert_eq!(p.samples[0].values, [300, 100_000]);
        assert_eq!(p.samples[1].values, [100, 25_000]);
        assert_eq!(p.period, 100);
        assert_eq!(p.duration_nanos, 1_500_000_000);
        assert_eq!(p.mappings[0].path, "server");
        assert_eq!(p.location(p.samples[0].locations[0]).address, 0xbccc96);
        assert_eq!(p.default_sample_index(), 1);
    }

    #[test]
    fn go_block_profile_and_perl_s_map_without_sentinel() {
        let go = "--- contention:\ncycles/second=1000000000\n5000 2 @ 0x10 0x20\n#\t0x10\tsync.(*Mutex).Lock+0x1\t/x.go:1\n";
        let p = read(go.as_bytes()).unwrap();
        assert_eq!(p.samples[0].values, [2, 5000]);
        let no_hz = "--- mutex:\nsampling period=5\n7 1 @ 0x10\n400000-401000 r-xp 00000000 08:01 9 /bin/x\n";
        let p = read(no_hz.as_bytes()).unwrap();
        assert_eq!(p.samples[0].values, [5, 7]);
        assert_eq!(p.mappings[0].path, "/bin/x");
    }

    #[test]
    fn errors_name_the_line() {
        let e = read(b"--- contention:\ncycles/second=x\n").unwrap_err();
        assert!(
            e.message.starts_with("line 2: expected a whole number"),
            "{e}"
        );
        let e = read(b"--- contention:\n1 2 @ 0x10\n1 2 3 @ 0x10\n").unwrap_err();
        assert!(
            e.message.starts_with("line 3: expected `CYCLES COUNT"),
            "{e}"
        );
        assert_eq!(e.offset, 27);
        let e = read(b"--- contention:\n1 2 @ 0x1g\n").unwrap_err();
        assert!(
            e.message.starts_with("line 2: expected a hex address"),
            "{e}"
        );
    }
}
