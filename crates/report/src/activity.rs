//! Activity over time: what the timelines draw (`--timeline`, the shell's
//! `timeline`, the web UI's `/ui/timeline`), computed once from the kept
//! samples' times ([`crate::time`]) and threads ([`crate::threads`]).
//!
//! [`Activity::build`] puts each kept sample's value into its thread's
//! track, in one of a fixed number of columns over a time range; with a
//! regex, the samples whose stack has a frame matching it are summed
//! apart in each column too (the timeline's highlight). With heat-map rows
//! asked for, it also sums every sample into a FlameScope-style subsecond
//! heat map: one column per second, one row per slice of the second, so
//! that work that comes back at the same offset each second lines up in a
//! row.
//!
//! The samples' times and threads are read from their labels once, into
//! a [`SampleIndex`] (a session keeps it for every view); the kept
//! samples are then summed in parallel (rayon), in two passes: their
//! times (for the span when the range is open), then their columns.

use cpuprof_profile::Profile;
use rayon::prelude::*;
use regex::Regex;

use crate::stacks::Stacks;
use crate::threads::ThreadIndex;
use crate::time::{SampleTimes, NO_TIME};
use crate::PIECE;

/// What the timelines read of every sample, read from the labels once:
/// its time and its thread; and its values in columns, which reports of a
/// session read instead of each sample's own (a profile of ten million
/// samples holds them in as many small allocations).
#[derive(Clone, Debug)]
pub struct SampleIndex {
    /// Every sample's time.
    pub times: SampleTimes,
    /// Every sample's thread.
    pub threads: ThreadIndex,
    /// Its values and stack facts in columns ([`crate::Options::columns`]).
    pub columns: std::sync::Arc<crate::stacks::SampleColumns>,
}

impl SampleIndex {
    /// The index of `profile`'s samples.
    pub fn of(profile: &Profile) -> SampleIndex {
        let ((times, threads), columns) = rayon::join(
            || rayon::join(|| SampleTimes::of(profile), || ThreadIndex::of(profile)),
            || crate::stacks::SampleColumns::of(profile),
        );
        SampleIndex {
            times,
            threads,
            columns: std::sync::Arc::new(columns),
        }
    }
}

/// The samples an [`Activity`] sums.
#[derive(Clone, Copy)]
pub enum KeptSamples<'a> {
    /// The samples a report kept (every filter applied); a highlight reads
    /// their stacks.
    Stacks(&'a Stacks<'a>),
    /// Every sample of the profile, with these values (one per sample):
    /// when no filter keeps fewer ([`crate::Options::keeps_every_sample`])
    /// and nothing is highlighted, the stacks need not be built at all.
    All(&'a [i64]),
}

impl KeptSamples<'_> {
    fn len(self) -> usize {
        match self {
            KeptSamples::Stacks(stacks) => stacks.len(),
            KeptSamples::All(values) => values.len(),
        }
    }

    fn sample_index(self, i: usize) -> usize {
        match self {
            KeptSamples::Stacks(stacks) => stacks.sample_index(i),
            KeptSamples::All(_) => i,
        }
    }

    fn value(self, i: usize) -> i64 {
        match self {
            KeptSamples::Stacks(stacks) => stacks.value(i),
            KeptSamples::All(values) => values[i],
        }
    }
}

/// One second in nanoseconds.
pub const SECOND_NS: i64 = 1_000_000_000;

/// What to compute.
#[derive(Clone, Debug)]
pub struct ActivityOptions<'a> {
    /// The origin offsets count from (ns on the samples' clock): the whole
    /// profile's, also when a time range keeps part of it.
    pub origin: i64,
    /// The first offset of the columns.
    pub from: i64,
    /// The offset where the columns end; `None`: just after the last kept
    /// sample, each column's span rounded up to two significant digits.
    pub to: Option<i64>,
    /// The number of columns.
    pub columns: usize,
    /// Sum apart the samples whose stack has a frame matching it.
    pub highlight: Option<&'a Regex>,
    /// The rows of the subsecond heat map (0: no heat map).
    pub heat_rows: usize,
    /// The times and threads of the profile's samples.
    pub index: &'a SampleIndex,
}

/// One thread's activity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    /// The thread as people read it ([`crate::threads::SampleThread::label`],
    /// with the name it had last).
    pub label: String,
    /// The offset of its first sample in the columns.
    pub first: i64,
    /// The sum of its samples' values in each column.
    pub columns: Vec<i64>,
    /// The same for the samples matching the highlight (zeros without).
    pub matching: Vec<i64>,
}

impl Track {
    /// The sum of its columns.
    pub fn total(&self) -> i64 {
        self.columns.iter().sum()
    }
}

/// A subsecond heat map: `cells[second * rows + row]` sums the samples
/// taken `row * row_ns` to `(row + 1) * row_ns` into second `second`
/// (counted from the origin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeatMap {
    /// Columns: seconds from 0 to the last sample's.
    pub seconds: usize,
    /// Rows per second.
    pub rows: usize,
    /// A row's span in nanoseconds.
    pub row_ns: i64,
    /// The sums, second-major.
    pub cells: Vec<i64>,
    /// The same for the samples matching the highlight.
    pub matching: Vec<i64>,
}

/// The activity of the kept samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// The first offset of the columns.
    pub from: i64,
    /// The end of the last column.
    pub to: i64,
    /// A column's span in nanoseconds.
    pub column_ns: i64,
    /// The offset of the last kept sample.
    pub last: i64,
    /// The threads, in order of their first sample (then of label).
    pub tracks: Vec<Track>,
    /// The subsecond heat map, when rows were asked for.
    pub heat: Option<HeatMap>,
}

/// A thread's track while the samples are read.
struct Partial<'s> {
    /// The name it had last, and when.
    name: Option<&'s str>,
    named_at: i64,
    tid: Option<i64>,
    first: i64,
    columns: Vec<i64>,
    matching: Vec<i64>,
}

/// What one worker has summed.
#[derive(Default)]
struct Sums<'s> {
    /// Per thread (its key in the [`ThreadIndex`]).
    tracks: Vec<Option<Partial<'s>>>,
    cells: Vec<i64>,
    matching_cells: Vec<i64>,
}

impl Sums<'_> {
    fn merge(mut self, other: Self) -> Self {
        if self.tracks.len() < other.tracks.len() {
            self.tracks.resize_with(other.tracks.len(), || None);
        }
        for (slot, theirs) in self.tracks.iter_mut().zip(other.tracks) {
            let Some(theirs) = theirs else { continue };
            match slot {
                None => *slot = Some(theirs),
                Some(ours) => {
                    if theirs.named_at >= ours.named_at && theirs.name.is_some() {
                        ours.name = theirs.name;
                        ours.named_at = theirs.named_at;
                    }
                    ours.first = ours.first.min(theirs.first);
                    add(&mut ours.columns, &theirs.columns);
                    add(&mut ours.matching, &theirs.matching);
                }
            }
        }
        add(&mut self.cells, &other.cells);
        add(&mut self.matching_cells, &other.matching_cells);
        self
    }
}

/// Division of non-negative `i64`s by one divisor, exact, by a multiply
/// and a correction instead of a hardware division (several times the
/// cost, and the timelines divide ten million offsets three ways).
#[derive(Clone, Copy)]
struct Divisor {
    d: u64,
    /// floor(2^64 / d): the quotient estimate is at most one short.
    m: u64,
}

impl Divisor {
    fn new(d: i64) -> Divisor {
        let d = d.max(1) as u64;
        Divisor {
            d,
            m: ((1u128 << 64) / u128::from(d)).min(u128::from(u64::MAX)) as u64,
        }
    }

    /// `n / d` (n ≥ 0).
    fn div(self, n: i64) -> i64 {
        let n = n as u64;
        let mut q = ((u128::from(n) * u128::from(self.m)) >> 64) as u64;
        if n - q * self.d >= self.d {
            q += 1;
        }
        q as i64
    }

    /// (`n / d`, `n % d`) (n ≥ 0).
    fn div_rem(self, n: i64) -> (i64, i64) {
        let q = self.div(n);
        (q, n - q * self.d as i64)
    }
}

fn add(into: &mut Vec<i64>, from: &[i64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

impl Activity {
    /// The activity of the `kept` samples; `None` when none of them has
    /// a time. A highlight needs [`KeptSamples::Stacks`] (with [`KeptSamples::All`]
    /// nothing matches it).
    pub fn build(kept: KeptSamples, options: &ActivityOptions) -> Option<Activity> {
        let width = options.columns.max(1);
        let n = kept.len();
        let stacks = match kept {
            KeptSamples::Stacks(stacks) => Some(stacks),
            KeptSamples::All(_) => None,
        };
        let times = &options.index.times.times;
        let threads = &options.index.threads;
        // Each kept sample's offset (i64::MIN: no time).
        let offset_of = |i: usize| match times[kept.sample_index(i)] {
            NO_TIME => i64::MIN,
            t => t.saturating_sub(options.origin),
        };
        // Pass 1: the last offset.
        let last = (0..n)
            .into_par_iter()
            .with_min_len(PIECE)
            .map(offset_of)
            .max()
            .filter(|&l| l != i64::MIN)?;
        let from = options.from;
        let (to, column_ns) = match options.to {
            // A range's end: its columns split it (to the nanosecond).
            Some(to) => {
                let to = to.max(from + 1);
                (to, (to - from + width as i64 - 1) / width as i64)
            }
            // Just after the last sample, each column's span rounded up to
            // two significant digits (34ms, not 33.389938ms).
            None => {
                let span = last.saturating_add(1).max(from + 1) - from;
                let column_ns = round_up_2_digits((span + width as i64 - 1) / width as i64);
                (
                    from.saturating_add(column_ns.saturating_mul(width as i64)),
                    column_ns,
                )
            }
        };
        let heat_rows = options.heat_rows;
        let seconds = if heat_rows > 0 {
            (last.max(0) / SECOND_NS + 1) as usize
        } else {
            0
        };
        let row_ns = if heat_rows > 0 {
            (SECOND_NS / heat_rows as i64).max(1)
        } else {
            1
        };
        let frame_count = stacks.map_or(0, |s| s.frames.len());
        let (by_second, by_row, by_column) = (
            Divisor::new(SECOND_NS),
            Divisor::new(row_ns),
            Divisor::new(column_ns),
        );
        // Pass 2: the sums, per piece of samples (each into its own
        // accumulator, mutated in place), merged.
        let pieces: Vec<std::ops::Range<usize>> = (0..n)
            .step_by(PIECE)
            .map(|a| a..(a + PIECE).min(n))
            .collect();
        let sums = pieces
            .into_par_iter()
            .map(|piece| {
                let mut sums = Sums {
                    tracks: Vec::new(),
                    cells: vec![0; seconds * heat_rows],
                    matching_cells: vec![
                        0;
                        if options.highlight.is_some() {
                            seconds * heat_rows
                        } else {
                            0
                        }
                    ],
                };
                // Per frame: 0 unknown, 1 no match, 2 a match.
                let mut frame_matches: Vec<u8> = Vec::new();
                let mut frames = Vec::new();
                for i in piece {
                    let offset = offset_of(i);
                    if offset == i64::MIN {
                        continue;
                    }
                    let value = kept.value(i);
                    let hit = match (options.highlight, stacks) {
                        (Some(re), Some(stacks)) => {
                            if frame_matches.is_empty() {
                                frame_matches.resize(frame_count, 0);
                            }
                            stacks.expand(i, &mut frames);
                            frames.iter().any(|&f| {
                                let known = &mut frame_matches[f.index()];
                                if *known == 0 {
                                    *known = 1 + u8::from(re.is_match(&stacks.frame(f).name));
                                }
                                *known == 2
                            })
                        }
                        _ => false,
                    };
                    if heat_rows > 0 && offset >= 0 {
                        let (second, within) = by_second.div_rem(offset);
                        let cell = second as usize * heat_rows + by_row.div(within) as usize;
                        if let Some(c) = sums.cells.get_mut(cell) {
                            *c += value;
                            if hit {
                                sums.matching_cells[cell] += value;
                            }
                        }
                    }
                    if offset < from || offset >= to {
                        continue;
                    }
                    let column = (by_column.div(offset - from) as usize).min(width - 1);
                    let thread = threads.thread(kept.sample_index(i));
                    if sums.tracks.is_empty() {
                        sums.tracks.resize_with(threads.keys, || None);
                    }
                    let track = sums.tracks[thread.key as usize].get_or_insert_with(|| Partial {
                        name: thread.name.as_deref(),
                        named_at: offset,
                        tid: thread.tid,
                        first: offset,
                        columns: vec![0; width],
                        matching: vec![0; width],
                    });
                    // The name the thread had last (a thread renames
                    // itself early).
                    if thread.name.is_some() && offset >= track.named_at {
                        track.name = thread.name.as_deref();
                        track.named_at = offset;
                    }
                    track.first = track.first.min(offset);
                    track.columns[column] += value;
                    if hit {
                        track.matching[column] += value;
                    }
                }
                sums
            })
            .reduce(Sums::default, Sums::merge);
        let mut tracks: Vec<Track> = sums
            .tracks
            .into_iter()
            .flatten()
            .map(|p| Track {
                label: crate::threads::SampleThread {
                    name: p.name,
                    tid: p.tid,
                    ..Default::default()
                }
                .label(),
                first: p.first,
                columns: p.columns,
                matching: p.matching,
            })
            .collect();
        tracks.sort_by(|a, b| a.first.cmp(&b.first).then_with(|| a.label.cmp(&b.label)));
        let heat = (heat_rows > 0).then(|| {
            let mut cells = sums.cells;
            cells.resize(seconds * heat_rows, 0);
            let mut matching = sums.matching_cells;
            matching.resize(seconds * heat_rows, 0);
            HeatMap {
                seconds,
                rows: heat_rows,
                row_ns,
                cells,
                matching,
            }
        });
        Some(Activity {
            from,
            to,
            column_ns,
            last,
            tracks,
            heat,
        })
    }
}

/// `n` rounded up to its two most significant digits (33_389_938 →
/// 34_000_000).
pub fn round_up_2_digits(n: i64) -> i64 {
    let mut scale = 1i64;
    while n / scale >= 100 {
        scale *= 10;
    }
    ((n + scale - 1) / scale) * scale
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpuprof_profile::{Label, ProfileBuilder, Sample, ValueType};

    fn num(key: &'static str, value: i64) -> Label {
        Label::num(key, value, "")
    }

    #[test]
    fn columns_threads_and_the_heat_map() {
        let mut b = ProfileBuilder::new(vec![ValueType::new("cpu", "nanoseconds")]);
        let a = b.location_at(0x1000);
        let mut profile = b.finish();
        // Thread 7 busy every 10 ms of the first second; thread 8 at
        // 500-520 ms of each of three seconds (periodic work).
        for ms in 0..100i64 {
            profile.samples.push(Sample {
                locations: vec![a],
                values: vec![10_000_000],
                labels: vec![
                    num("timestamp_ns", 5_000_000_000 + ms * 10_000_000),
                    num("tid", 7),
                ],
            });
        }
        for s in 0..3i64 {
            for ms in [500i64, 510] {
                profile.samples.push(Sample {
                    locations: vec![a],
                    values: vec![10_000_000],
                    labels: vec![
                        num(
                            "timestamp_ns",
                            5_000_000_000 + s * SECOND_NS + ms * 1_000_000,
                        ),
                        num("tid", 8),
                    ],
                });
            }
        }
        let stacks = Stacks::build(&profile, &crate::Options::default());
        let index = SampleIndex::of(&profile);
        let options = ActivityOptions {
            origin: 5_000_000_000,
            from: 0,
            to: Some(3 * SECOND_NS),
            columns: 3,
            highlight: None,
            heat_rows: 50,
            index: &index,
        };
        let activity = Activity::build(KeptSamples::Stacks(&stacks), &options).unwrap();
        // Every sample kept: the same from the values alone.
        let values = &index.columns.values[profile.default_sample_index()];
        assert_eq!(
            Activity::build(KeptSamples::All(values), &options).as_ref(),
            Some(&activity)
        );
        assert_eq!(activity.column_ns, SECOND_NS);
        assert_eq!(activity.last, 2 * SECOND_NS + 510_000_000);
        let labels: Vec<&str> = activity.tracks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["tid 7", "tid 8"]);
        assert_eq!(activity.tracks[0].columns, [SECOND_NS, 0, 0]);
        assert_eq!(activity.tracks[1].columns, [20_000_000; 3]);
        let heat = activity.heat.unwrap();
        assert_eq!((heat.seconds, heat.rows, heat.row_ns), (3, 50, 20_000_000));
        // Row 25 (500-520 ms) of each second holds thread 8's two samples
        // (and thread 7's in second 0).
        assert_eq!(heat.cells[25], 40_000_000);
        assert_eq!(heat.cells[50 + 25], 20_000_000);
        assert_eq!(heat.cells[100 + 25], 20_000_000);
        assert_eq!(heat.cells[50 + 24], 0);
        assert_eq!(heat.cells.iter().sum::<i64>(), 106 * 10_000_000);
    }

    #[test]
    fn divisors_divide_exactly() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for d in [
            1i64,
            2,
            3,
            7,
            20_000_000,
            SECOND_NS,
            1_562_500_000,
            i64::MAX,
        ] {
            let by = Divisor::new(d);
            let mut numbers = vec![
                0i64,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                i64::MAX,
                i64::MAX - 1,
            ];
            for _ in 0..10_000 {
                numbers.push((next() >> 1) as i64);
                numbers.push((next() >> 24) as i64);
            }
            for n in numbers {
                assert_eq!(by.div_rem(n), (n / d, n % d), "{n} / {d}");
            }
        }
    }

    #[test]
    fn column_spans_round_up() {
        assert_eq!(round_up_2_digits(33_389_938), 34_000_000);
        assert_eq!(round_up_2_digits(99), 99);
        assert_eq!(round_up_2_digits(101), 110);
        assert_eq!(round_up_2_digits(1), 1);
    }
}
