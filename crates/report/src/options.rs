//! What a report shows: granularity, filters, which value, trimming.

use regex::Regex;

use crate::tags::TagOptions;

/// The unit of a report's rows and graph nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Granularity {
    /// One node per function (the default).
    #[default]
    Functions,
    /// One node per source line.
    Lines,
    /// One node per program address.
    Addresses,
    /// One node per source file.
    Files,
}

impl Granularity {
    /// The granularity as its flag names it (`--functions`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Granularity::Functions => "functions",
            Granularity::Lines => "lines",
            Granularity::Addresses => "addresses",
            Granularity::Files => "files",
        }
    }
}

/// Options shared by every output.
#[derive(Clone, Debug)]
pub struct Options {
    /// Node granularity.
    pub granularity: Granularity,
    /// Keep only samples with a frame matching this.
    pub focus: Option<Regex>,
    /// Drop samples with a frame matching this.
    pub ignore: Option<Regex>,
    /// Remove matching frames from stacks (the samples stay).
    pub hide: Option<Regex>,
    /// Keep only matching frames in stacks (the samples stay): Go pprof's
    /// `-show`. A frame matches by its display name, full function name or
    /// `file:line`, or when its location's mapped file's path matches.
    pub show: Option<Regex>,
    /// In each stack, drop the frames above (callers of) the outermost
    /// matching frame; drop the samples with no matching frame: Go pprof's
    /// `-show_from`. A frame matches by its display name or full function
    /// name, or when its location's mapped file's path matches.
    pub show_from: Option<Regex>,
    /// Sort rows by cumulative instead of flat value.
    pub cum: bool,
    /// Keep C++ argument lists and template parameters in names.
    pub full_names: bool,
    /// Go pprof's `-noinlines`: inlined code counts in its physical
    /// (outermost) function, at the line of the inlined call; addresses
    /// and lines follow.
    pub noinlines: bool,
    /// Which sample value to report; `None` means the profile's default.
    pub sample_index: Option<usize>,
    /// Report each sample's value divided by its first value (its count),
    /// summed as other values are: the mean delay of a contention
    /// profile as perl pprof's `--mean_delay` computes it (Go pprof's
    /// `-mean` divides a row's sums instead).
    pub mean: bool,
    /// Hide nodes whose flat and cum are both negative (diff profiles).
    pub drop_negative: bool,
    /// Maximum number of rows or nodes shown.
    pub nodecount: Option<usize>,
    /// Drop graph nodes whose cum is below this fraction of the total.
    pub nodefraction: f64,
    /// Drop graph edges whose weight is below this fraction of the total.
    pub edgefraction: f64,
    /// Keep at most this many edges in and out of each graph node.
    pub maxdegree: usize,
    /// Keep the profiler's own signal-handling frames in stacks.
    pub keep_profiler_frames: bool,
    /// Sample labels: filters, shown keys, pseudo-frames.
    pub tags: TagOptions,
    /// The unit values with a unit are printed in: `minimum` (one unit
    /// for the report, Go pprof's default), `auto` (each value its own)
    /// or a unit (`ms`); see [`crate::measure::Measure::select`].
    pub unit: String,
    /// Keep only the samples of this time range (`--time`), before every
    /// other filter: reports of the range are those of a profile holding
    /// its samples only.
    pub window: Option<crate::time::TimeWindow>,
    /// The profile's samples in columns (a session's
    /// [`crate::activity::SampleIndex::columns`]), read instead of each
    /// sample's own values. Only for the profile they were read from.
    pub columns: Option<std::sync::Arc<crate::stacks::SampleColumns>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            granularity: Granularity::Functions,
            focus: None,
            ignore: None,
            hide: None,
            show: None,
            show_from: None,
            cum: false,
            full_names: false,
            noinlines: false,
            sample_index: None,
            mean: false,
            drop_negative: false,
            nodecount: None,
            nodefraction: 0.005,
            edgefraction: 0.001,
            maxdegree: 8,
            keep_profiler_frames: false,
            tags: TagOptions::default(),
            unit: "minimum".to_string(),
            window: None,
            columns: None,
        }
    }
}

impl Options {
    /// The index of the sample value a report of `profile` reads.
    pub fn value_index(&self, profile: &cpuprof_profile::Profile) -> usize {
        self.sample_index
            .unwrap_or_else(|| profile.default_sample_index())
    }

    /// True when a report keeps every sample at its column value: no time
    /// window, no focus, ignore, show_from or tag filter, no mean. (Hide
    /// and show take frames away, not samples.)
    pub fn keeps_every_sample(&self) -> bool {
        self.window.is_none()
            && self.focus.is_none()
            && self.ignore.is_none()
            && self.show_from.is_none()
            && !self.tags.filters_samples()
            && !self.mean
    }
}
