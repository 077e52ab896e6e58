//! `--timeline` and the shell's `timeline [RE]`: one line per thread, its
//! CPU activity over time drawn with the block characters `▁▂▃▄▅▆▇█` in
//! fixed-width columns, from each kept sample's time ([`crate::time`]).
//!
//! A thread is named by its `thread_name` label (the agent; id in
//! `thread_id`), else `thread_comm` (perf.data; id in `tid`), else `comm`
//! (`perf script` text). With a regex, each
//! thread has a second line below its own: the samples whose stack holds
//! a frame matching it, drawn on the same scale.

use std::io::{self, Write};

use cpuprof_profile::{LabelValue, Sample};
use regex::Regex;
use rustc_hash::FxHashMap;

use crate::measure;
use crate::stacks::Stacks;
use crate::time::{offset_text, sample_time};

/// The eight levels of a column, lowest first; an idle column is a space.
pub const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The default number of columns.
pub const DEFAULT_WIDTH: usize = 60;

/// What the timeline draws.
#[derive(Clone, Debug)]
pub struct TimelineOptions<'a> {
    /// The origin offsets count from (ns on the samples' clock): the whole
    /// profile's, also when a time range keeps part of it.
    pub origin: i64,
    /// The first offset drawn (the time range's start, else 0).
    pub from: i64,
    /// The offset where the drawing ends (the range's end); `None`: just
    /// after the last sample.
    pub to: Option<i64>,
    /// The number of columns.
    pub width: usize,
    /// With a regex: a second line per thread for the samples whose stack
    /// has a frame matching it.
    pub highlight: Option<&'a Regex>,
}

/// One thread's line (and its highlighted line).
struct Track {
    label: String,
    first: i64,
    columns: Vec<i64>,
    matching: Vec<i64>,
}

/// Writes the timeline of `stacks` (the kept samples, every filter
/// applied); `profile_name` names the inputs in the one line written when
/// no sample has a time.
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    options: &TimelineOptions,
    profile_name: &str,
) -> io::Result<()> {
    let width = options.width.max(1);
    let mut last: Option<i64> = None;
    let mut any_time = false;
    for i in 0..stacks.len() {
        if let Some(t) = sample_time(stacks.sample(i)) {
            any_time = true;
            let offset = t.saturating_sub(options.origin);
            last = Some(last.map_or(offset, |l| l.max(offset)));
        }
    }
    if !any_time {
        let has_times = stacks
            .profile()
            .samples
            .iter()
            .any(|s| sample_time(s).is_some());
        if has_times {
            writeln!(
                out,
                "{profile_name}: no sample in the time range and filters"
            )?;
        } else {
            writeln!(
                out,
                "{profile_name}: no sample times (timestamp_ns labels): no timeline (gperftools-format profiles have none)"
            )?;
        }
        return Ok(());
    }
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
            let span = last.unwrap_or(from).saturating_add(1).max(from + 1) - from;
            let column_ns = round_up_2_digits((span + width as i64 - 1) / width as i64);
            (
                from.saturating_add(column_ns.saturating_mul(width as i64)),
                column_ns,
            )
        }
    };
    let span = to - from;
    let mut tracks: Vec<Track> = Vec::new();
    let mut index: FxHashMap<(String, i64), usize> = FxHashMap::default();
    let mut matches: FxHashMap<crate::FrameId, bool> = FxHashMap::default();
    let mut frames = Vec::new();
    for i in 0..stacks.len() {
        let sample = stacks.sample(i);
        let Some(t) = sample_time(sample) else {
            continue;
        };
        let offset = t.saturating_sub(options.origin);
        if offset < from || offset >= to {
            continue;
        }
        let column = (((offset - from) / column_ns) as usize).min(width - 1);
        let value = stacks.value(i);
        let key = thread_of(sample);
        let n = tracks.len();
        let track = *index.entry(key.clone()).or_insert(n);
        if track == n {
            tracks.push(Track {
                label: thread_label(&key),
                first: offset,
                columns: vec![0; width],
                matching: vec![0; width],
            });
        }
        let track = &mut tracks[track];
        track.first = track.first.min(offset);
        track.columns[column] += value;
        if let Some(re) = options.highlight {
            stacks.expand(i, &mut frames);
            let hit = frames.iter().any(|&f| {
                *matches
                    .entry(f)
                    .or_insert_with(|| re.is_match(&stacks.frame(f).name))
            });
            if hit {
                track.matching[column] += value;
            }
        }
    }
    tracks.sort_by(|a, b| a.first.cmp(&b.first).then_with(|| a.label.cmp(&b.label)));

    let unit = &stacks.sample_type.unit;
    // Time values: a column full is one CPU busy for the whole column;
    // other values: the busiest column is full.
    let is_time = measure::is_scaled_unit(unit) && measure::scale(1, unit, "ns").1 == "ns";
    let full = if is_time {
        let (ns_per_unit, _) = measure::scale(1, unit, "ns");
        (column_ns as f64 / ns_per_unit).max(1.0)
    } else {
        tracks
            .iter()
            .flat_map(|t| t.columns.iter())
            .copied()
            .max()
            .unwrap_or(1)
            .max(1) as f64
    };
    let label = |v: i64| measure::scaled_label(v, unit, "auto");
    writeln!(
        out,
        "Timeline: {} to {} after the start ({} in {width} columns of {} each); {}",
        offset_text(from),
        offset_text(to),
        offset_text(span),
        offset_text(column_ns),
        if is_time {
            "█ = one CPU busy for the whole column".to_string()
        } else {
            format!("█ = {}", label(full as i64))
        }
    )?;
    if let Some(re) = options.highlight {
        writeln!(
            out,
            "Below each thread: its samples with a frame matching {re}, on the same scale"
        )?;
    }
    let name_width = tracks
        .iter()
        .map(|t| t.label.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, 32);
    let axis_left = offset_text(from);
    let axis_right = offset_text(to);
    writeln!(
        out,
        "{:name_width$} {:>9}  {axis_left}{:>pad$}",
        "THREAD",
        "TOTAL",
        axis_right,
        pad = (width + 2).saturating_sub(axis_left.chars().count())
    )?;
    for track in &tracks {
        let name: String = track.label.chars().take(name_width).collect();
        let total: i64 = track.columns.iter().sum();
        writeln!(
            out,
            "{name:name_width$} {:>9} |{}|",
            label(total),
            bars(&track.columns, full)
        )?;
        if options.highlight.is_some() {
            let total: i64 = track.matching.iter().sum();
            writeln!(
                out,
                "{:name_width$} {:>9} |{}|",
                "  matching",
                label(total),
                bars(&track.matching, full)
            )?;
        }
    }
    Ok(())
}

/// `n` rounded up to its two most significant digits (33_389_938 →
/// 34_000_000).
fn round_up_2_digits(n: i64) -> i64 {
    let mut scale = 1i64;
    while n / scale >= 100 {
        scale *= 10;
    }
    ((n + scale - 1) / scale) * scale
}

/// The block character of each column, `full` being the top one.
fn bars(columns: &[i64], full: f64) -> String {
    columns
        .iter()
        .map(|&v| {
            if v <= 0 {
                ' '
            } else {
                let level = ((v as f64 / full) * 8.0).ceil() as usize;
                BLOCKS[level.clamp(1, 8) - 1]
            }
        })
        .collect()
}

/// The label keys that name a thread, best first: the agent's, perf.data's
/// thread name, `perf script`'s command name.
const THREAD_NAME_KEYS: [&str; 3] = ["thread_name", "thread_comm", "comm"];

/// The thread of a sample: its name (the first of [`THREAD_NAME_KEYS`] it
/// has) and id (`thread_id`, else `tid`; -1 when none).
fn thread_of(sample: &Sample) -> (String, i64) {
    let mut name = String::new();
    let mut name_rank = THREAD_NAME_KEYS.len();
    let mut id = -1;
    for label in &sample.labels {
        match (&label.value, label.key.as_str()) {
            (LabelValue::Str(s), key) => {
                if let Some(rank) = THREAD_NAME_KEYS.iter().position(|k| *k == key) {
                    if rank < name_rank {
                        name_rank = rank;
                        name = s.clone();
                    }
                }
            }
            (LabelValue::Num { value, .. }, "thread_id") => id = *value,
            (LabelValue::Num { value, .. }, "tid") if id < 0 => id = *value,
            _ => {}
        }
    }
    (name, id)
}

fn thread_label((name, id): &(String, i64)) -> String {
    match (name.is_empty(), *id >= 0) {
        (false, true) => format!("{name} ({id})"),
        (false, false) => name.clone(),
        (true, true) => format!("tid {id}"),
        (true, false) => "(no thread)".to_string(),
    }
}

/// The level (0 for an idle column, 1 to 8) of each column of a line
/// [`write`] drew: what tests read back.
pub fn levels(line: &str) -> Option<Vec<u8>> {
    let start = line.find('|')?;
    let end = line.rfind('|')?;
    if end <= start {
        return None;
    }
    Some(
        line[start + 1..end]
            .chars()
            .map(|c| {
                BLOCKS
                    .iter()
                    .position(|&b| b == c)
                    .map_or(0, |p| p as u8 + 1)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpuprof_profile::{Label, ProfileBuilder, ValueType};

    fn num(key: &str, value: i64) -> Label {
        Label {
            key: key.into(),
            value: LabelValue::Num {
                value,
                unit: String::new(),
            },
        }
    }

    #[test]
    fn two_threads_two_halves() {
        let mut b = ProfileBuilder::new(vec![ValueType::new("cpu", "nanoseconds")]);
        let a = b.location_at(0x1000);
        let mut profile = b.finish();
        for ms in 0..100i64 {
            profile.samples.push(Sample {
                locations: vec![a],
                values: vec![1_000_000],
                labels: vec![
                    num("timestamp_ns", 5_000_000_000 + ms * 1_000_000),
                    num("tid", if ms < 50 { 7 } else { 8 }),
                ],
            });
        }
        let stacks = Stacks::build(&profile, &crate::Options::default());
        let mut out = Vec::new();
        let options = TimelineOptions {
            origin: 5_000_000_000,
            from: 0,
            to: Some(100_000_000),
            width: 10,
            highlight: None,
        };
        write(&mut out, &stacks, &options, "p").unwrap();
        let text = String::from_utf8(out).unwrap();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("tid ")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert_eq!(
            levels(rows[0]).unwrap(),
            [8, 8, 8, 8, 8, 0, 0, 0, 0, 0],
            "{text}"
        );
        assert_eq!(
            levels(rows[1]).unwrap(),
            [0, 0, 0, 0, 0, 8, 8, 8, 8, 8],
            "{text}"
        );
        assert!(
            text.starts_with(
                "Timeline: 0s to 100ms after the start (100ms in 10 columns of 10ms each)"
            ),
            "{text}"
        );
    }

    #[test]
    fn threads_are_named_by_the_best_label() {
        let text = |key: &str, value: &str| Label {
            key: key.into(),
            value: LabelValue::Str(value.into()),
        };
        let sample = |labels| Sample {
            locations: vec![],
            values: vec![1],
            labels,
        };
        let perf = sample(vec![
            text("comm", "app"),
            text("thread_comm", "worker"),
            num("tid", 9),
        ]);
        assert_eq!(thread_of(&perf), ("worker".to_string(), 9));
        let script = sample(vec![num("tid", 9), text("comm", "app")]);
        assert_eq!(thread_label(&thread_of(&script)), "app (9)");
        let agent = sample(vec![
            text("thread_name", "io"),
            num("thread_id", 4),
            num("tid", 5),
        ]);
        assert_eq!(thread_label(&thread_of(&agent)), "io (4)");
        assert_eq!(thread_label(&thread_of(&sample(vec![]))), "(no thread)");
    }

    #[test]
    fn column_spans_round_up() {
        assert_eq!(round_up_2_digits(33_389_938), 34_000_000);
        assert_eq!(round_up_2_digits(99), 99);
        assert_eq!(round_up_2_digits(101), 110);
        assert_eq!(round_up_2_digits(1), 1);
    }

    #[test]
    fn no_times_is_one_line() {
        let profile = ProfileBuilder::new(vec![ValueType::new("cpu", "nanoseconds")]).finish();
        let stacks = Stacks::build(&profile, &crate::Options::default());
        let options = TimelineOptions {
            origin: 0,
            from: 0,
            to: None,
            width: 60,
            highlight: None,
        };
        let mut out = Vec::new();
        write(&mut out, &stacks, &options, "x.prof").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("x.prof: no sample times"));
    }
}
