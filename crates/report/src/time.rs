//! When samples were taken: each sample's time (its numeric label
//! `timestamp_ns`, the name `perf_to_profile` gives it), the profile's
//! time origin, and time ranges (`--time=1.5s:2s`) given as offsets from
//! that origin.
//!
//! The origin is defined here once, for every interface: the profile's
//! `time_nanos` when every sample time is at or after it and the first
//! one follows it closely (the agent writes epoch times on the clock of
//! `time_nanos`), else the earliest sample time (perf.data's times count
//! from boot, not from the epoch).

use std::sync::Arc;

use cpuprof_profile::{LabelValue, Profile, Sample};
use rayon::prelude::*;

/// The label key of a sample's time, in nanoseconds.
pub const TIMESTAMP_KEY: &str = "timestamp_ns";

/// How long after the profile's `time_nanos` the first sample may come
/// for `time_nanos` to be the origin (longer: the clocks differ).
const ORIGIN_SLACK_NANOS: i64 = 3_600_000_000_000;

/// The time of `sample` (its `timestamp_ns` label), if it has one.
pub fn sample_time(sample: &Sample) -> Option<i64> {
    sample.labels.iter().find_map(|l| match &l.value {
        LabelValue::Num { value, .. } if l.key == TIMESTAMP_KEY => Some(*value),
        _ => None,
    })
}

/// [`SampleTimes::times`] of a sample without a time.
pub const NO_TIME: i64 = i64::MIN;

/// Every sample's time, read from its labels once (a profile of ten
/// million samples is not scanned again for each view or range).
#[derive(Clone, Debug)]
pub struct SampleTimes {
    /// Per sample of the profile, in order: its time, or [`NO_TIME`].
    pub times: Arc<[i64]>,
    /// Their span; `None` when no sample has a time.
    pub span: Option<Span>,
    /// The earliest and latest time of each piece of [`crate::PIECE`]
    /// samples, in order (`(i64::MAX, i64::MIN)` for a piece without a
    /// time): a window skips the pieces it cannot keep a sample of, which
    /// in a profile kept in time order (perf.data's, a generator's) is
    /// most of them.
    pub pieces: Arc<[(i64, i64)]>,
}

impl SampleTimes {
    /// The times of `profile`'s samples (read in parallel).
    pub fn of(profile: &Profile) -> SampleTimes {
        let times: Vec<i64> = profile
            .samples
            .par_iter()
            .with_min_len(1 << 14)
            .map(|s| sample_time(s).unwrap_or(NO_TIME))
            .collect();
        let pieces: Vec<(i64, i64)> = times
            .par_chunks(crate::PIECE)
            .map(|piece| {
                piece
                    .iter()
                    .filter(|&&t| t != NO_TIME)
                    .fold((i64::MAX, i64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)))
            })
            .collect();
        let (first, last) = pieces
            .iter()
            .fold((i64::MAX, i64::MIN), |a, b| (a.0.min(b.0), a.1.max(b.1)));
        let span = (first <= last).then(|| Span {
            origin: origin(profile.time_nanos, profile.duration_nanos, first),
            first,
            last,
        });
        SampleTimes {
            times: times.into(),
            span,
            pieces: pieces.into(),
        }
    }

    /// The samples `range` keeps, as a window reports apply while they
    /// build their stacks (no copy of the profile); `setting` is the
    /// setting and value that asked for it (`time=1s:2s`), for messages.
    /// `None` when no sample has a time.
    pub fn window(&self, range: TimeRange, setting: String) -> Option<TimeWindow> {
        let origin = i128::from(self.span?.origin);
        Some(TimeWindow {
            times: Arc::clone(&self.times),
            pieces: Arc::clone(&self.pieces),
            start: origin + i128::from(range.start),
            end: range.end.map_or(i128::MAX, |end| origin + i128::from(end)),
            setting,
        })
    }
}

/// The samples of a time range, by their index in the profile
/// ([`SampleTimes::window`]); reports keep only these
/// ([`crate::Options::window`]).
#[derive(Clone, Debug)]
pub struct TimeWindow {
    times: Arc<[i64]>,
    pieces: Arc<[(i64, i64)]>,
    /// The first time kept (ns, on the samples' clock).
    start: i128,
    /// The first time no longer kept.
    end: i128,
    /// The setting that asked for it, as the user wrote it.
    pub setting: String,
}

impl TimeWindow {
    /// True when the profile's sample `index` is in the window.
    pub fn keeps(&self, index: usize) -> bool {
        let t = self.times.get(index).copied().unwrap_or(NO_TIME);
        t != NO_TIME && i128::from(t) >= self.start && i128::from(t) < self.end
    }

    /// False when the window keeps none of the samples of piece `piece`
    /// (samples `piece * PIECE ..`, [`crate::PIECE`]): their times all
    /// lie outside it.
    pub fn may_keep_piece(&self, piece: usize) -> bool {
        self.pieces.get(piece).is_none_or(|&(first, last)| {
            first <= last && i128::from(last) >= self.start && i128::from(first) < self.end
        })
    }
}

/// The span of a profile's sample times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The time offsets count from (ns, on the samples' clock).
    pub origin: i64,
    /// The earliest sample time.
    pub first: i64,
    /// The latest sample time.
    pub last: i64,
}

impl Span {
    /// The span of `profile`'s sample times; `None` when no sample has a
    /// time.
    pub fn of(profile: &Profile) -> Option<Span> {
        let mut times = profile.samples.iter().filter_map(sample_time);
        let first_time = times.next()?;
        let (first, last) = times.fold((first_time, first_time), |(lo, hi), t| {
            (lo.min(t), hi.max(t))
        });
        Some(Span {
            origin: origin(profile.time_nanos, profile.duration_nanos, first),
            first,
            last,
        })
    }

    /// The offset of the last sample from the origin: the duration the
    /// samples cover.
    pub fn duration(&self) -> i64 {
        self.last.saturating_sub(self.origin)
    }
}

/// The origin of a profile collected at `time_nanos` for `duration_nanos`
/// whose earliest sample time is `first`.
pub fn origin(time_nanos: i64, duration_nanos: i64, first: i64) -> i64 {
    let slack = ORIGIN_SLACK_NANOS.max(duration_nanos);
    if time_nanos > 0 && first >= time_nanos && first - time_nanos <= slack {
        time_nanos
    } else {
        first
    }
}

/// A range of offsets from the profile's origin, in nanoseconds: the
/// samples at or after `start` and before `end` (half-open, so that
/// adjacent ranges share no sample).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeRange {
    /// The first offset kept.
    pub start: i64,
    /// The first offset no longer kept; `None`: to the end.
    pub end: Option<i64>,
}

/// The units offsets are written in, with their value in nanoseconds.
const UNITS: &[(&str, i64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

impl TimeRange {
    /// Parses `START:END` (either may be empty: `:500ms`, `2s:`), each a
    /// decimal number with a unit (`ns`, `us`, `ms`, `s`, `min`, `h`; a
    /// bare number is seconds). `setting` names the setting in the
    /// one-line error.
    pub fn parse(setting: &str, text: &str) -> Result<TimeRange, String> {
        let expected = || {
            format!(
                "{setting}={text}: expected START:END, offsets from the profile's start with a unit (e.g. 1.5s:2s, :500ms, 2s:)"
            )
        };
        let Some((start, end)) = text.trim().split_once(':') else {
            return Err(expected());
        };
        let (start, end) = (start.trim(), end.trim());
        if start.is_empty() && end.is_empty() {
            return Err(expected());
        }
        let offset = |part: &str| -> Result<i64, String> {
            parse_offset(part).map_err(|why| format!("{setting}={text}: {part}: {why}"))
        };
        let start_ns = if start.is_empty() { 0 } else { offset(start)? };
        let end_ns = if end.is_empty() {
            None
        } else {
            Some(offset(end)?)
        };
        if let Some(end_ns) = end_ns {
            if end_ns <= start_ns {
                return Err(format!(
                    "{setting}={text}: the end must come after the start"
                ));
            }
        }
        Ok(TimeRange {
            start: start_ns,
            end: end_ns,
        })
    }

    /// True when a sample at `time` falls in the range counted from
    /// `origin`.
    pub fn contains(&self, origin: i64, time: i64) -> bool {
        let offset = i128::from(time) - i128::from(origin);
        offset >= i128::from(self.start) && self.end.is_none_or(|end| offset < i128::from(end))
    }

    /// A copy of `profile` with only the samples whose time falls in the
    /// range (samples without a time are dropped); the tables stay as
    /// they are, so that every location keeps its id. `times` are the
    /// profile's ([`SampleTimes::of`]). `None` when no sample has a time.
    /// (Reports do not copy: they keep a [`TimeWindow`]'s samples; this is
    /// for what writes or subtracts whole profiles.)
    pub fn filter(&self, profile: &Profile, times: &SampleTimes) -> Option<Profile> {
        let window = times.window(*self, String::new())?;
        let samples = profile
            .samples
            .iter()
            .enumerate()
            .filter(|(i, _)| window.keeps(*i))
            .map(|(_, s)| s.clone())
            .collect();
        Some(Profile {
            samples,
            sample_types: profile.sample_types.clone(),
            default_sample_type: profile.default_sample_type.clone(),
            mappings: profile.mappings.clone(),
            locations: profile.locations.clone(),
            functions: profile.functions.clone(),
            period_type: profile.period_type.clone(),
            period: profile.period,
            time_nanos: profile.time_nanos,
            duration_nanos: profile.duration_nanos,
            comments: profile.comments.clone(),
            drop_frames: profile.drop_frames.clone(),
            keep_frames: profile.keep_frames.clone(),
        })
    }
}

/// Parses one offset: a decimal number and a unit (a bare number is
/// seconds), exactly (no floating point), in nanoseconds.
pub fn parse_offset(text: &str) -> Result<i64, String> {
    let digits_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    let factor = match unit.trim() {
        "" => 1_000_000_000,
        unit => match UNITS.iter().find(|(name, _)| *name == unit) {
            Some((_, factor)) => *factor,
            None => return Err("expected a unit of ns, us, ms, s, min or h".to_string()),
        },
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err("expected a number (e.g. 1.5s)".to_string());
    }
    let too_large = || "too large".to_string();
    let mut ns: i128 = 0;
    for d in whole.bytes() {
        ns = ns * 10 + i128::from(d - b'0');
        if ns > i128::from(i64::MAX) {
            return Err(too_large());
        }
    }
    ns *= i128::from(factor);
    // The fraction's digits beyond a nanosecond are dropped.
    let mut scale = i128::from(factor);
    for d in fraction.bytes() {
        scale /= 10;
        ns += i128::from(d - b'0') * scale;
    }
    i64::try_from(ns).map_err(|_| too_large())
}

/// An offset in nanoseconds as text with its unit (`1.5s`, `250ms`),
/// exact: what [`parse_offset`] reads back.
pub fn offset_text(ns: i64) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    for &(name, factor) in UNITS.iter().rev() {
        if name == "µs" || name == "h" || name == "min" {
            continue;
        }
        if ns >= factor || factor == 1 {
            let whole = ns / factor;
            let rest = ns % factor;
            if rest == 0 {
                return format!("{whole}{name}");
            }
            let width = factor.ilog10() as usize;
            let fraction = format!("{rest:0width$}");
            return format!("{whole}.{}{name}", fraction.trim_end_matches('0'));
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_window_skips_the_pieces_it_keeps_nothing_of() {
        // Three pieces of samples in time order (1 ns apart from 1000),
        // and a fourth, shorter, without times.
        let piece = crate::PIECE as i64;
        let mut profile = Profile::default();
        for k in 0..3 * piece + 5 {
            let labels = if k < 3 * piece {
                vec![cpuprof_profile::Label::num(TIMESTAMP_KEY, 1000 + k, "ns")]
            } else {
                vec![]
            };
            profile.samples.push(Sample {
                locations: vec![],
                values: vec![1],
                labels,
            });
        }
        let times = SampleTimes::of(&profile);
        assert_eq!(
            times.pieces[..],
            [
                (1000, 999 + piece),
                (1000 + piece, 999 + 2 * piece),
                (1000 + 2 * piece, 999 + 3 * piece),
                (i64::MAX, i64::MIN),
            ]
        );
        // Offsets count from the first time (1000): the second piece only,
        // then its last sample and the third's first.
        let window = |start, end| {
            times
                .window(
                    TimeRange {
                        start,
                        end: Some(end),
                    },
                    "time=x".into(),
                )
                .unwrap()
        };
        let w = window(piece, 2 * piece);
        let may: Vec<bool> = (0..5).map(|p| w.may_keep_piece(p)).collect();
        assert_eq!(may, [false, true, false, false, true]);
        let w = window(2 * piece - 1, 2 * piece + 1);
        let may: Vec<bool> = (0..4).map(|p| w.may_keep_piece(p)).collect();
        assert_eq!(may, [false, true, true, false]);
        // Whatever a skipped piece holds, the window keeps none of it.
        for p in 0..4usize {
            if !w.may_keep_piece(p) {
                let samples = p * crate::PIECE..((p + 1) * crate::PIECE).min(profile.samples.len());
                assert!(samples.clone().all(|i| !w.keeps(i)), "piece {p}");
            }
        }
    }

    #[test]
    fn ranges_and_their_errors() {
        let r = |s| TimeRange::parse("time", s);
        assert_eq!(
            r("1.5s:2s"),
            Ok(TimeRange {
                start: 1_500_000_000,
                end: Some(2_000_000_000)
            })
        );
        assert_eq!(
            r(":500ms"),
            Ok(TimeRange {
                start: 0,
                end: Some(500_000_000)
            })
        );
        assert_eq!(
            r("2s:"),
            Ok(TimeRange {
                start: 2_000_000_000,
                end: None
            })
        );
        assert_eq!(r("0:0.9s").unwrap().end, Some(900_000_000));
        assert_eq!(r("1min:90s").unwrap().start, 60_000_000_000);
        assert_eq!(r("10us:20000ns").unwrap().end, Some(20_000));
        for bad in [
            "", ":", "2s", "1x:2s", "2s:1s", "1s:1s", "-1s:2s", "1..2s:", "s:",
        ] {
            let e = r(bad).unwrap_err();
            assert!(e.starts_with(&format!("time={bad}")), "{e}");
            assert!(!e.contains('\n'));
        }
        assert!(r("99999999999999h:").unwrap_err().contains("too large"));
    }

    #[test]
    fn origin_is_time_nanos_only_when_the_clocks_agree() {
        // The agent: epoch times after the profile's start.
        assert_eq!(
            origin(1_000_000_000_000, 0, 1_000_500_000_000),
            1_000_000_000_000
        );
        // perf.data: boot-relative times, epoch start.
        assert_eq!(origin(1_700_000_000_000_000_000, 0, 5_000_000), 5_000_000);
        // No start recorded.
        assert_eq!(origin(0, 0, 42), 42);
        // A start far before the first sample: not the same clock.
        assert_eq!(
            origin(1, 0, 1 + 2 * ORIGIN_SLACK_NANOS),
            1 + 2 * ORIGIN_SLACK_NANOS
        );
    }

    proptest! {
        #[test]
        fn offsets_round_trip(ns in 0i64..i64::MAX / 2) {
            prop_assert_eq!(parse_offset(&offset_text(ns)), Ok(ns));
        }

        #[test]
        fn ranges_parse_what_they_print(a in 0i64..1i64 << 50, len in 1i64..1i64 << 50, open in any::<bool>()) {
            let text = if open {
                format!("{}:", offset_text(a))
            } else {
                format!("{}:{}", offset_text(a), offset_text(a + len))
            };
            let range = TimeRange::parse("time", &text).unwrap();
            prop_assert_eq!(range.start, a);
            prop_assert_eq!(range.end, (!open).then_some(a + len));
            prop_assert!(range.contains(0, a));
            prop_assert!(!range.contains(0, a - 1));
        }

        /// The index's times, span and window keep what the labels say,
        /// sample by sample (times anywhere on the clock, some missing).
        #[test]
        fn windows_keep_what_the_labels_say(
            times in proptest::collection::vec(proptest::option::of(any::<i64>()), 0..40),
            time_nanos in any::<i64>(),
            start in 0i64..i64::MAX,
            len in proptest::option::of(1i64..i64::MAX),
        ) {
            let mut profile = Profile { time_nanos, ..Profile::default() };
            for t in &times {
                profile.samples.push(Sample {
                    locations: vec![],
                    values: vec![1],
                    labels: t.iter().map(|&t| cpuprof_profile::Label::num(TIMESTAMP_KEY, t, "ns")).collect(),
                });
            }
            let index = SampleTimes::of(&profile);
            prop_assert_eq!(index.span, Span::of(&profile));
            let range = TimeRange { start, end: len.map(|l| start.saturating_add(l)) };
            match (index.window(range, "time=x".into()), Span::of(&profile)) {
                (Some(window), Some(span)) => {
                    for (i, t) in times.iter().enumerate() {
                        prop_assert_eq!(window.keeps(i), t.is_some_and(|t| range.contains(span.origin, t)));
                    }
                    let copy = range.filter(&profile, &index).unwrap();
                    let kept = (0..times.len()).filter(|&i| window.keeps(i)).count();
                    prop_assert_eq!(copy.samples.len(), kept);
                }
                (None, None) => prop_assert!(times.iter().all(Option::is_none)),
                _ => prop_assert!(false, "the index's span differs"),
            }
        }

        #[test]
        fn any_text_parses_or_fails_in_one_line(text in "\\PC{0,24}") {
            match TimeRange::parse("time", &text) {
                Ok(r) => prop_assert!(r.end.is_none_or(|e| e > r.start) && r.start >= 0),
                Err(e) => prop_assert!(!e.contains('\n') && e.starts_with("time=")),
            }
        }
    }
}
