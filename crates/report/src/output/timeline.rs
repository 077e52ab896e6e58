//! `--timeline` and the shell's `timeline [RE]`: one line per thread, its
//! CPU activity over time drawn with the block characters `▁▂▃▄▅▆▇█` in
//! fixed-width columns, from each kept sample's time ([`crate::time`]).
//!
//! Threads are named as [`crate::threads`] reads their labels, and the
//! columns summed by [`Activity::build`]. With a regex, each
//! thread has a second line below its own: the samples whose stack holds
//! a frame matching it, drawn on the same scale.

use std::io::{self, Write};

use regex::Regex;

use crate::activity::{Activity, ActivityOptions, KeptSamples, SampleIndex};
use crate::measure;
use crate::stacks::Stacks;
use crate::time::offset_text;

/// What every timeline says, in one line, of a profile without sample
/// times.
pub const NO_TIMES: &str =
    "no sample times (timestamp_ns labels): no timeline (gperftools-format profiles have none)";

/// The eight levels of a column, lowest first; an idle column is a space.
pub const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The default number of columns (output that is not a terminal's).
pub const DEFAULT_WIDTH: usize = 60;

/// The fewest columns drawn in a narrow terminal.
const MIN_WIDTH: usize = 10;

/// What a track's line holds besides its name and columns: a space, the
/// total (9), a space and the two bars around the columns, and one
/// column left free so that the terminal does not wrap.
const LINE_EXTRA: usize = 1 + 9 + 1 + 2 + 1;

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
    /// The terminal's width: when given, the columns fill the lines to it
    /// instead of being `width`.
    pub line_width: Option<usize>,
    /// With a regex: a second line per thread for the samples whose stack
    /// has a frame matching it.
    pub highlight: Option<&'a Regex>,
    /// The times and threads of the profile's samples.
    pub index: &'a SampleIndex,
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
    let build = |columns: usize| {
        Activity::build(
            KeptSamples::Stacks(stacks),
            &ActivityOptions {
                origin: options.origin,
                from: options.from,
                to: options.to,
                columns,
                highlight: options.highlight,
                heat_rows: 0,
                index: options.index,
            },
        )
    };
    // In a terminal the columns fill what the names leave of its width;
    // the names are known once the tracks are, so a second pass fits them
    // when they are longer than the shortest.
    let fit = |line: usize, names: usize| line.saturating_sub(names + LINE_EXTRA).max(MIN_WIDTH);
    let mut width = match options.line_width {
        Some(line) => fit(line, NAME_WIDTH.0),
        None => options.width.max(1),
    };
    let mut activity = build(width);
    if let (Some(line), Some(first)) = (options.line_width, &activity) {
        let fitted = fit(line, name_width(&first.tracks));
        if fitted != width {
            width = fitted;
            activity = build(width);
        }
    }
    let Some(activity) = activity else {
        if options.index.times.span.is_some() {
            writeln!(
                out,
                "{profile_name}: no sample in the time range and filters"
            )?;
        } else {
            writeln!(out, "{profile_name}: {NO_TIMES}")?;
        }
        return Ok(());
    };
    let (from, to, column_ns) = (activity.from, activity.to, activity.column_ns);
    let span = to - from;
    let tracks = &activity.tracks;
    let unit = &stacks.sample_type.unit;
    let (full, is_time) = full_column(&activity, unit);
    let label = |v: i64| measure::scaled_label(v, unit, "auto");
    let range = format!(
        "Timeline: {} to {} after the start ({} in {width} columns of {} each)",
        offset_text(from),
        offset_text(to),
        offset_text(span),
        offset_text(column_ns),
    );
    let legend = if is_time {
        "█ = one CPU busy for the whole column".to_string()
    } else {
        format!("█ = {}", label(full as i64))
    };
    // In a terminal too narrow for both, the legend gets its own line.
    let one_line = range.chars().count() + 2 + legend.chars().count();
    if options.line_width.is_some_and(|line| one_line >= line) {
        writeln!(out, "{range}\n{legend}")?;
    } else {
        writeln!(out, "{range}; {legend}")?;
    }
    if let Some(re) = options.highlight {
        writeln!(
            out,
            "Below each thread: its samples with a frame matching {re}, on the same scale"
        )?;
    }
    let name_width = name_width(tracks);
    let axis_left = offset_text(from);
    let axis_right = offset_text(to);
    writeln!(
        out,
        "{:name_width$} {:>9}  {axis_left}{:>pad$}",
        "THREAD",
        "TOTAL",
        axis_right,
        pad = (width + 1).saturating_sub(axis_left.chars().count())
    )?;
    for track in tracks {
        let name: String = track.label.chars().take(name_width).collect();
        let total = track.total();
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

/// The narrowest and widest the thread names' column is.
const NAME_WIDTH: (usize, usize) = (8, 32);

/// The width of the thread names' column for `tracks`.
fn name_width(tracks: &[crate::activity::Track]) -> usize {
    tracks
        .iter()
        .map(|t| t.label.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(NAME_WIDTH.0, NAME_WIDTH.1)
}

/// The value of a full column, and whether it is one CPU busy for the
/// whole column (values of time), else the busiest column's.
fn full_column(activity: &Activity, unit: &str) -> (f64, bool) {
    let is_time = measure::is_scaled_unit(unit) && measure::scale(1, unit, "ns").1 == "ns";
    if is_time {
        let (ns_per_unit, _) = measure::scale(1, unit, "ns");
        return ((activity.column_ns as f64 / ns_per_unit).max(1.0), true);
    }
    let busiest = activity
        .tracks
        .iter()
        .flat_map(|t| t.columns.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1);
    (busiest as f64, false)
}

/// What the web UI's timeline page draws, as JSON: the columns of
/// `activity` (its tracks and heat map), the value of a full column, the
/// unit, the selected `range` (offsets in ns; the end `null` when open),
/// the `highlight` regex, and `period` (the profile's sampling period, as
/// text).
pub struct TimelineJson<'a> {
    /// The activity drawn.
    pub activity: &'a Activity,
    /// The sample type's unit.
    pub unit: &'a str,
    /// The selected time range.
    pub range: Option<(i64, Option<i64>)>,
    /// The highlighted functions' regex.
    pub highlight: Option<&'a str>,
}

/// Writes [`TimelineJson`] (its strings escaped to sit in an HTML
/// `<script>` element).
pub fn write_json(out: &mut String, timeline: &TimelineJson) {
    use crate::escape::push_json_string;
    use std::fmt::Write as _;
    let activity = timeline.activity;
    let (full, is_time) = full_column(activity, timeline.unit);
    let numbers = |out: &mut String, values: &[i64]| {
        out.push('[');
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{v}");
        }
        out.push(']');
    };
    let _ = write!(
        out,
        "{{\"from\":{},\"to\":{},\"column_ns\":{},\"last\":{},\"full\":{},\"full_is_one_cpu\":{is_time},\"unit\":",
        activity.from, activity.to, activity.column_ns, activity.last, full
    );
    push_json_string(out, timeline.unit, true);
    out.push_str(",\"range\":");
    match timeline.range {
        Some((start, end)) => {
            let _ = write!(out, "[{start},");
            match end {
                Some(end) => {
                    let _ = write!(out, "{end}]");
                }
                None => out.push_str("null]"),
            }
        }
        None => out.push_str("null"),
    }
    out.push_str(",\"highlight\":");
    match timeline.highlight {
        Some(re) => push_json_string(out, re, true),
        None => out.push_str("null"),
    }
    out.push_str(",\"tracks\":[");
    for (i, track) in activity.tracks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"label\":");
        push_json_string(out, &track.label, true);
        let _ = write!(out, ",\"total\":{},\"columns\":", track.total());
        numbers(out, &track.columns);
        out.push_str(",\"matching\":");
        numbers(out, &track.matching);
        out.push('}');
    }
    out.push_str("],\"heat\":");
    match &activity.heat {
        Some(heat) => {
            let _ = write!(
                out,
                "{{\"seconds\":{},\"rows\":{},\"row_ns\":{},\"cells\":",
                heat.seconds, heat.rows, heat.row_ns
            );
            numbers(out, &heat.cells);
            out.push_str(",\"matching\":");
            numbers(out, &heat.matching);
            out.push('}');
        }
        None => out.push_str("null"),
    }
    out.push('}');
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
    use cpuprof_profile::{Label, ProfileBuilder, Sample, ValueType};

    fn num(key: &'static str, value: i64) -> Label {
        Label::num(key, value, "")
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
        let index = SampleIndex::of(&profile);
        let mut out = Vec::new();
        let options = TimelineOptions {
            origin: 5_000_000_000,
            from: 0,
            to: Some(100_000_000),
            width: 10,
            line_width: None,
            highlight: None,
            index: &index,
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

    /// In a terminal of 80 columns, the columns fill each track's line
    /// to 79 characters beside names of 8 (the narrowest), then of 32
    /// (the widest: longer names are cut).
    #[test]
    fn a_terminal_s_width_is_filled() {
        for (name, name_width) in [("", 8), ("a-thread-name-longer-than-thirty-two", 32)] {
            let mut b = ProfileBuilder::new(vec![ValueType::new("cpu", "nanoseconds")]);
            let a = b.location_at(0x1000);
            let mut profile = b.finish();
            for ms in 0..100i64 {
                let mut labels = vec![num("timestamp_ns", ms * 1_000_000), num("tid", 7)];
                if !name.is_empty() {
                    labels.push(Label::str("thread_name", name));
                }
                profile.samples.push(Sample {
                    locations: vec![a],
                    values: vec![1_000_000],
                    labels,
                });
            }
            let stacks = Stacks::build(&profile, &crate::Options::default());
            let index = SampleIndex::of(&profile);
            let options = TimelineOptions {
                origin: 0,
                from: 0,
                to: None,
                width: DEFAULT_WIDTH,
                line_width: Some(80),
                highlight: None,
                index: &index,
            };
            let mut out = Vec::new();
            write(&mut out, &stacks, &options, "p").unwrap();
            let text = String::from_utf8(out).unwrap();
            let columns = 80 - name_width - LINE_EXTRA;
            assert!(
                text.contains(&format!(" in {columns} columns of ")),
                "{name_width}: {text}"
            );
            // The range, the legend on its own line, the axis, the track.
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines[1], "█ = one CPU busy for the whole column", "{text}");
            let track = lines[3];
            assert_eq!(levels(track).unwrap().len(), columns, "{text}");
            assert_eq!(track.chars().count(), 79, "{text}");
            for line in lines {
                assert!(line.chars().count() < 80, "{line:?} in\n{text}");
            }
        }
    }

    #[test]
    fn no_times_is_one_line() {
        let profile = ProfileBuilder::new(vec![ValueType::new("cpu", "nanoseconds")]).finish();
        let stacks = Stacks::build(&profile, &crate::Options::default());
        let index = SampleIndex::of(&profile);
        let options = TimelineOptions {
            origin: 0,
            from: 0,
            to: None,
            width: 60,
            line_width: None,
            highlight: None,
            index: &index,
        };
        let mut out = Vec::new();
        write(&mut out, &stacks, &options, "x.prof").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("x.prof: no sample times"));
    }
}
