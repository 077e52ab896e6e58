//! The report's view of a profile: every sample as a stack of frames at the
//! chosen granularity, with the profiler's own frames removed and the
//! focus/ignore/hide/show/show_from filters applied. Every output reads this (or the
//! [`crate::graph::Graph`] built from it); it is rebuilt for each report and
//! never becomes the source of truth.

use cpuprof_profile::{LocationId, MappingId, Profile, Sample, ValueType};
use rayon::prelude::*;
use regex::Regex;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

use crate::names;
use crate::options::{Granularity, Options};
use crate::tags::TagOptions;
use crate::PIECE;

/// Index into [`Stacks::frames`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

impl FrameId {
    /// The index into [`Stacks::frames`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One node of a report: a function, a line, an address or a file,
/// depending on the granularity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What reports print, and what identifies the frame (as pprof does).
    pub name: String,
    /// The full (demangled) function name, empty if unknown.
    pub function: String,
    /// The source file, empty if unknown.
    pub file: String,
    /// The source line (for functions: the first line seen), 0 if unknown.
    pub line: i64,
    /// The first address attributed to this frame.
    pub address: u64,
    /// The mapping of that address.
    pub mapping: Option<MappingId>,
    /// True when the frame is an inlined call, not a real function frame.
    pub inlined: bool,
}

impl Frame {
    /// The frame named `name` of one line of `location` (an inlined call
    /// unless it is the location's outermost line).
    fn of_line(
        name: String,
        function: &cpuprof_profile::Function,
        line: &cpuprof_profile::Line,
        location: &cpuprof_profile::Location,
        inlined: bool,
    ) -> Frame {
        Frame {
            name,
            function: function.name.clone(),
            file: function.filename.clone(),
            line: line.line,
            address: location.address,
            mapping: location.mapping,
            inlined,
        }
    }
}

/// True for a function of a profiler's signal-handling path, or the
/// cpuprof agent's wrapper around every thread's start routine (its
/// `pthread_create` runs the program's routine from it).
fn is_profiler_function(name: &str) -> bool {
    PROFILER_FRAMES.contains(&name)
        || name.starts_with(AGENT_SIGNAL_PATH)
        || name == AGENT_THREAD_START
}

/// A sample kept by the filters.
#[derive(Clone, Copy, Debug)]
struct Kept {
    /// Index into the profile's samples.
    sample: u32,
    /// The reported value.
    value: i64,
    /// Its locations need filtering (profiler frames, a duplicated leaf).
    filtered: bool,
    /// How many of its (filtered) locations are kept, from the leaf:
    /// `--show_from` cuts the callers above its outermost match.
    /// `u32::MAX` keeps them all.
    depth: u32,
    /// Index into [`Stacks::label_frames`] (`--tagroot`/`--tagleaf`),
    /// `u32::MAX` for none.
    labels: u32,
}

/// What makes a kept sample's frames ([`Stacks::stack_key`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackKey<'a> {
    stack: Stack<'a>,
    filtered: bool,
    depth: u32,
    labels: u32,
}

/// A sample's location list, by its number in the session's columns when
/// the report reads them, else itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Stack<'a> {
    Number(u32),
    List(&'a [LocationId]),
}

/// The distinct pseudo-frame sets of a report's samples, by their names.
#[derive(Default)]
struct LabelSets {
    index: FxHashMap<(Vec<String>, Vec<String>), u32>,
    sets: Vec<LabelSet>,
}

/// One set of pseudo-frames: (key, name) pairs, leaf first, those
/// `--hide`/`--show` remove left out; whether `--focus`/`--ignore` match
/// one of them.
struct LabelSet {
    leaf: Vec<(String, String)>,
    root: Vec<(String, String)>,
    focus: bool,
    ignore: bool,
}

impl LabelSets {
    /// The index of the pseudo-frame set of a sample with `labels`: per
    /// `--tagroot`/`--tagleaf` key, a frame named after the sample's
    /// values of it (Go pprof's `-tagroot`/`-tagleaf`; `<unknown>`
    /// without one), the first root key outermost, the last leaf key
    /// innermost.
    fn index(&mut self, options: &Options, labels: &[cpuprof_profile::Label]) -> u32 {
        let tags = &options.tags;
        // The values as Go names the pseudo-function: empty without one.
        let names = |keys: &[String]| -> Vec<String> {
            keys.iter()
                .rev()
                .map(|k| tags.frame_name(labels, k).unwrap_or_default())
                .collect()
        };
        let key = (names(&tags.leaf), names(&tags.root));
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        // As Go pprof's filters match a function: by its name or its file
        // name, which is the label's key.
        let matches = |re: &Option<Regex>, key: &str, name: &str| {
            re.as_ref()
                .is_some_and(|re| re.is_match(name) || re.is_match(key))
        };
        let pairs = |keys: &[String], names: &[String]| -> Vec<(String, String)> {
            keys.iter()
                .rev()
                .zip(names)
                .map(|(k, n)| (k.clone(), n.clone()))
                .collect()
        };
        let (leaf, root) = (pairs(&tags.leaf, &key.0), pairs(&tags.root, &key.1));
        let any = |re: &Option<Regex>| leaf.iter().chain(&root).any(|(k, n)| matches(re, k, n));
        let (focus, ignore) = (any(&options.focus), any(&options.ignore));
        let shown = |pairs: Vec<(String, String)>| -> Vec<(String, String)> {
            pairs
                .into_iter()
                .filter(|(k, n)| !matches(&options.hide, k, n))
                .filter(|(k, n)| options.show.is_none() || matches(&options.show, k, n))
                .map(|(k, n)| {
                    let name = if n.is_empty() {
                        crate::tags::NO_VALUE.to_string()
                    } else {
                        n
                    };
                    (k, name)
                })
                .collect()
        };
        let set = LabelSet {
            leaf: shown(leaf),
            root: shown(root),
            focus,
            ignore,
        };
        let i = self.sets.len() as u32;
        self.sets.push(set);
        self.index.insert(key, i);
        i
    }
}

/// The pseudo-frames `--tagleaf` and `--tagroot` add to a stack, each
/// leaf first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct LabelFrames {
    leaf: Vec<FrameId>,
    root: Vec<FrameId>,
}

/// Function names of the profilers' signal-handling frames. Frames of these
/// functions, and the signal trampoline, are not program code.
const PROFILER_FRAMES: &[&str] = &[
    "ProfileData::Add",
    "ProfileData::prof_handler",
    "CpuProfiler::prof_handler",
    "__FRAME_END__",
    "__pthread_sighandler",
    "__restore",
    "__restore_rt",
];

/// Prefix of the cpuprof agent's signal-path functions.
const AGENT_SIGNAL_PATH: &str = "cpuprof::signal_path::";

/// The cpuprof agent's thread start wrapper.
const AGENT_THREAD_START: &str = "cpuprof::threads::trampoline";

/// The stacks of a profile as a report sees them. Stacks are expanded
/// from the profile's samples on demand ([`Stacks::expand`],
/// [`Stacks::for_each`]); each location's frames are computed once.
#[derive(Clone, Debug)]
pub struct Stacks<'p> {
    /// Distinct frames, in order of first appearance.
    pub frames: Arc<Vec<Frame>>,
    profile: &'p Profile,
    /// Per location: its frames' range in `location_arena`.
    location_frames: Arc<Vec<(u32, u32)>>,
    location_arena: Arc<Vec<FrameId>>,
    /// Per location: it is a profiler frame.
    profiler: Vec<bool>,
    samples: Vec<Kept>,
    /// The distinct pseudo-frame sets of `--tagroot`/`--tagleaf`.
    label_frames: Vec<LabelFrames>,
    /// Sum of the reported value over all samples, before focus and ignore.
    pub grand_total: i64,
    /// Sum of the reported value over the samples kept by focus and ignore.
    pub total: i64,
    /// In a diff (`--base`), the base's total (every sample, as Go
    /// pprof's `-diff_base` counts it): what percentages are of, the
    /// values being changes from it. See [`Stacks::with_base`].
    pub base_total: Option<i64>,
    /// What the reported value measures.
    pub sample_type: ValueType,
    /// The granularity of the frames.
    pub granularity: Granularity,
    /// The session's columns of the profile's samples, when the report
    /// reads them ([`Options::columns`]).
    columns: Option<Arc<SampleColumns>>,
}

/// The second of `locations` is the leaf again, as a caller (address - 1):
/// an unwinder's duplicate that reports show once.
fn duplicated_leaf(profile: &Profile, locations: &[LocationId]) -> bool {
    locations.len() >= 2
        && profile.location(locations[1]).address.wrapping_add(1)
            == profile.location(locations[0]).address
}

/// What reports read of every sample of a profile, in columns, so that a
/// session's reports do not reach into each sample's own allocations
/// (scattered in memory: a profile of ten million samples holds tens of
/// millions of them). See [`Options::columns`].
#[derive(Debug)]
pub struct SampleColumns {
    /// Per sample type, every sample's value.
    pub values: Vec<Vec<i64>>,
    /// Per sample: its stack's second location is its leaf again.
    pub duplicated_leaf: Vec<bool>,
    /// Per sample: its location list's number (equal lists, equal
    /// numbers), so that samples of one stack are summed without reading
    /// their lists ([`Stacks::stack_key`]).
    pub stack: Vec<u32>,
}

impl SampleColumns {
    /// The columns of `profile` (read in parallel).
    pub fn of(profile: &Profile) -> SampleColumns {
        let ((values, duplicated), stack) = rayon::join(
            || {
                rayon::join(
                    || {
                        (0..profile.sample_types.len())
                            .map(|t| {
                                profile
                                    .samples
                                    .par_iter()
                                    .with_min_len(PIECE)
                                    .map(|s| sample_value(s, t, false))
                                    .collect()
                            })
                            .collect()
                    },
                    || {
                        profile
                            .samples
                            .par_iter()
                            .with_min_len(PIECE)
                            .map(|s| duplicated_leaf(profile, &s.locations))
                            .collect()
                    },
                )
            },
            || stack_numbers(profile),
        );
        SampleColumns {
            values,
            duplicated_leaf: duplicated,
            stack,
        }
    }
}

/// Each sample's location list numbered, equal lists alike (in order of
/// first appearance): each piece numbers its lists in parallel, then the
/// pieces' numbers are joined in order.
fn stack_numbers(profile: &Profile) -> Vec<u32> {
    let pieces: Vec<(Vec<&[LocationId]>, Vec<u32>)> = profile
        .samples
        .par_chunks(PIECE)
        .map(|piece| {
            let mut index: FxHashMap<&[LocationId], u32> = FxHashMap::default();
            let mut lists: Vec<&[LocationId]> = Vec::new();
            let numbers = piece
                .iter()
                .map(|s| {
                    *index.entry(&s.locations).or_insert_with(|| {
                        lists.push(&s.locations);
                        (lists.len() - 1) as u32
                    })
                })
                .collect();
            (lists, numbers)
        })
        .collect();
    let mut index: FxHashMap<&[LocationId], u32> = FxHashMap::default();
    let remaps: Vec<Vec<u32>> = pieces
        .iter()
        .map(|(lists, _)| {
            lists
                .iter()
                .map(|&list| {
                    let next = index.len() as u32;
                    *index.entry(list).or_insert(next)
                })
                .collect()
        })
        .collect();
    let mut out = Vec::with_capacity(profile.samples.len());
    for ((_, numbers), remap) in pieces.iter().zip(&remaps) {
        out.extend(numbers.iter().map(|&n| remap[n as usize]));
    }
    out
}

/// What [`Stacks::keep`] reads besides the options: per location, whether
/// it matches focus, ignore and show_from.
struct SampleFilters<'f> {
    value_index: usize,
    /// The column of the reported value ([`Options::columns`]).
    values: Option<&'f [i64]>,
    /// The duplicated-leaf column ([`Options::columns`]).
    duplicated_leaf: Option<&'f [bool]>,
    any_profiler: bool,
    focus: &'f [bool],
    ignore: &'f [bool],
    show_from: &'f [bool],
}

/// What the report needs of each location, computed once per location.
struct LocationView {
    frames: Vec<FrameId>,
    profiler: bool,
    focus: bool,
    ignore: bool,
    /// It has a frame matching `--show_from` (its frames are already cut
    /// after the outermost one).
    show_from: bool,
}

impl<'p> Stacks<'p> {
    /// Builds the report's stacks for `profile` (symbolized or not).
    pub fn build(profile: &'p Profile, options: &Options) -> Stacks<'p> {
        Self::build_cached(profile, options, None)
    }

    /// [`Stacks::build`], reusing the frames of every location that
    /// `cache` holds for the options' granularity and naming (computed
    /// and kept there the first time) when no option filters frames: a
    /// session that reports on one profile many times names each location
    /// once. `cache` must only ever serve `profile`.
    pub fn build_cached(
        profile: &'p Profile,
        options: &Options,
        cache: Option<&FrameCache>,
    ) -> Stacks<'p> {
        let value_index = options.value_index(profile);
        let sample_type = profile
            .sample_types
            .get(value_index)
            .cloned()
            .unwrap_or_default();
        let filters = options.focus.is_some()
            || options.ignore.is_some()
            || options.hide.is_some()
            || options.show.is_some()
            || options.show_from.is_some();
        let key = (options.granularity, options.full_names, options.noinlines);
        let cached = match cache {
            Some(cache) if !filters => {
                let mut entries = cache.0.lock().unwrap_or_else(|e| e.into_inner());
                match entries.iter().find(|e| e.key == key) {
                    Some(entry) => Some(entry.clone()),
                    None => {
                        let entry = LocationFrames::compute(profile, options, key).0;
                        entries.push(entry.clone());
                        Some(entry)
                    }
                }
            }
            _ => None,
        };
        let (located, focus, ignore, show_from) = match cached {
            Some(located) => (located, Vec::new(), Vec::new(), Vec::new()),
            None => LocationFrames::compute(profile, options, key),
        };
        let profiler: Vec<bool> = if options.keep_profiler_frames {
            vec![false; located.profiler.len()]
        } else {
            located.profiler.to_vec()
        };
        let show_from: Vec<bool> = show_from
            .iter()
            .zip(&profiler)
            .map(|(&s, &removed)| s && !removed)
            .collect();
        let LocationFrames {
            frames,
            location_frames,
            location_arena,
            ..
        } = located;

        let mut stacks = Stacks {
            frames,
            profile,
            location_frames,
            location_arena,
            profiler,
            samples: Vec::new(),
            label_frames: Vec::new(),
            grand_total: 0,
            total: 0,
            base_total: None,
            sample_type,
            granularity: options.granularity,
            // Columns of another profile (of as many samples) would be
            // wrong silently: only a profile's own are read.
            columns: options
                .columns
                .clone()
                .filter(|c| c.duplicated_leaf.len() == profile.samples.len()),
        };
        let columns = stacks.columns.clone();
        let columns = columns.as_deref();
        let filters = SampleFilters {
            value_index,
            values: columns
                .and_then(|c| c.values.get(value_index))
                .map(Vec::as_slice),
            duplicated_leaf: columns.map(|c| c.duplicated_leaf.as_slice()),
            any_profiler: stacks.profiler.iter().any(|&p| p),
            focus: &focus,
            ignore: &ignore,
            show_from: &show_from,
        };
        let mut kept: Vec<LocationId> = Vec::with_capacity(256);
        let mut label_sets = options.tags.adds_frames().then(LabelSets::default);
        if label_sets.is_none() && profile.samples.len() > PIECE {
            // In parallel, piece by piece: each piece's kept samples at
            // the start of its own part of one array, then moved together
            // in order (nothing moves when every sample is kept).
            // Uninitialized: a window that keeps a quarter of the samples
            // touches a quarter of it.
            let mut all: Vec<Kept> = Vec::with_capacity(profile.samples.len());
            let pieces: Vec<(i64, i64, usize)> = all.spare_capacity_mut()[..profile.samples.len()]
                .par_chunks_mut(PIECE)
                .zip(profile.samples.par_chunks(PIECE))
                .enumerate()
                .map(|(piece, (out, samples))| {
                    let (mut grand_total, mut total, mut count) = (0i64, 0i64, 0usize);
                    // A time window keeps none of this piece's samples:
                    // none is read.
                    if options
                        .window
                        .as_ref()
                        .is_some_and(|w| !w.may_keep_piece(piece))
                    {
                        return (grand_total, total, count);
                    }
                    let mut kept = Vec::with_capacity(256);
                    for (j, sample) in samples.iter().enumerate() {
                        let index = piece * PIECE + j;
                        if let Some((value, keep)) =
                            stacks.keep(index, sample, options, &filters, None, &mut kept)
                        {
                            grand_total = grand_total.saturating_add(value);
                            if let Some(keep) = keep {
                                total = total.saturating_add(keep.value);
                                out[count].write(keep);
                                count += 1;
                            }
                        }
                    }
                    (grand_total, total, count)
                })
                .collect();
            let mut end = 0;
            let spare = all.spare_capacity_mut();
            for (piece, (grand_total, total, count)) in pieces.into_iter().enumerate() {
                stacks.grand_total = stacks.grand_total.saturating_add(grand_total);
                stacks.total = stacks.total.saturating_add(total);
                let start = piece * PIECE;
                if start != end {
                    spare.copy_within(start..start + count, end);
                }
                end += count;
            }
            // SAFETY: the first `end` elements are the pieces' written
            // ones (each piece wrote `count` from its start), moved
            // together in order.
            unsafe { all.set_len(end) };
            if all.capacity() / 2 > end {
                all.shrink_to_fit();
            }
            stacks.samples = all;
            return stacks;
        }
        stacks.samples.reserve(profile.samples.len());
        for (index, sample) in profile.samples.iter().enumerate() {
            if let Some((value, keep)) = stacks.keep(
                index,
                sample,
                options,
                &filters,
                label_sets.as_mut(),
                &mut kept,
            ) {
                stacks.grand_total = stacks.grand_total.saturating_add(value);
                if let Some(keep) = keep {
                    stacks.total = stacks.total.saturating_add(keep.value);
                    stacks.samples.push(keep);
                }
            }
        }
        if let Some(sets) = label_sets {
            stacks.add_label_frames(sets);
        }
        stacks
    }

    /// What [`Stacks::build_cached`] does with the profile's sample
    /// `index`: `None` when the time window leaves it out; else its value
    /// (for the grand total) and, unless a filter drops it, what is kept
    /// of it. `kept` is scratch space.
    fn keep(
        &self,
        index: usize,
        sample: &Sample,
        options: &Options,
        filters: &SampleFilters,
        label_sets: Option<&mut LabelSets>,
        kept: &mut Vec<LocationId>,
    ) -> Option<(i64, Option<Kept>)> {
        if options.window.as_ref().is_some_and(|w| !w.keeps(index)) {
            return None;
        }
        let value = match filters.values {
            Some(column) if !options.mean => column.get(index).copied().unwrap_or(0),
            _ => sample_value(sample, filters.value_index, options.mean),
        };
        let locations: &[LocationId] = &sample.locations;
        let duplicated = match filters.duplicated_leaf {
            Some(column) => column.get(index).copied().unwrap_or(false),
            None => self.duplicated_leaf(locations),
        };
        let filtered = if filters.any_profiler || duplicated {
            self.filter(locations, kept)
        } else {
            false
        };
        let locations = if filtered { &kept[..] } else { locations };
        if options.tags.filters_samples() && !options.tags.keeps(&sample.labels) {
            return Some((value, None));
        }
        // The pseudo-frames come before the filters (as Go pprof makes
        // them): focus, ignore, hide and show see them too.
        let (labels, set) = match label_sets {
            Some(sets) => {
                let i = sets.index(options, &sample.labels);
                (Some(i), Some(&sets.sets[i as usize]))
            }
            None => (None, None),
        };
        if options.focus.is_some()
            && !locations.iter().any(|l| filters.focus[l.index()])
            && !set.is_some_and(|s| s.focus)
        {
            return Some((value, None));
        }
        if options.ignore.is_some()
            && (locations.iter().any(|l| filters.ignore[l.index()])
                || set.is_some_and(|s| s.ignore))
        {
            return Some((value, None));
        }
        let mut depth = u32::MAX;
        if options.show_from.is_some() {
            // Go pprof's ShowFrom: cut above the outermost match, drop
            // the stacks without one.
            match locations.iter().rposition(|l| filters.show_from[l.index()]) {
                Some(outermost) if outermost + 1 < locations.len() => {
                    depth = outermost as u32 + 1;
                }
                Some(_) => {}
                None => return Some((value, None)),
            }
        }
        Some((
            value,
            Some(Kept {
                sample: index as u32,
                value,
                filtered,
                depth,
                labels: labels.unwrap_or(u32::MAX),
            }),
        ))
    }

    /// Makes the frames of the pseudo-frame sets: a pseudo-frame is the
    /// frame of that name if there is one.
    fn add_label_frames(&mut self, sets: LabelSets) {
        let frames = Arc::make_mut(&mut self.frames);
        let mut by_name: FxHashMap<String, FrameId> = frames
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.clone(), FrameId(i as u32)))
            .collect();
        let mut frame_of = |(key, name): &(String, String)| {
            *by_name.entry(name.clone()).or_insert_with(|| {
                frames.push(Frame {
                    function: name.clone(),
                    name: name.clone(),
                    file: key.clone(),
                    line: 0,
                    address: 0,
                    mapping: None,
                    inlined: false,
                });
                FrameId(frames.len() as u32 - 1)
            })
        };
        self.label_frames = sets
            .sets
            .iter()
            .map(|set| LabelFrames {
                leaf: set.leaf.iter().map(&mut frame_of).collect(),
                root: set.root.iter().map(&mut frame_of).collect(),
            })
            .collect();
    }

    /// The locations of a stack that reports show: without the profiler's
    /// frames, and with a leaf duplicated by the unwinder (once from the
    /// signal context, once adjusted by -1 from the stack) only once.
    /// Returns true when that removed anything.
    fn filter(&self, locations: &[LocationId], kept: &mut Vec<LocationId>) -> bool {
        kept.clear();
        kept.extend(locations.iter().filter(|l| !self.profiler[l.index()]));
        if self.duplicated_leaf(kept) {
            kept.remove(1);
        }
        kept.len() != locations.len()
    }

    /// The second location is the leaf again, as a caller (address - 1).
    fn duplicated_leaf(&self, locations: &[LocationId]) -> bool {
        duplicated_leaf(self.profile, locations)
    }

    /// What [`Stacks::expand`] reads of kept sample `i` besides its
    /// value: two kept samples with equal keys expand to the same frames.
    pub fn stack_key(&self, i: usize) -> StackKey<'_> {
        let kept = self.samples[i];
        let stack = match self.columns.as_deref() {
            Some(columns) => Stack::Number(columns.stack[kept.sample as usize]),
            None => Stack::List(&self.profile.samples[kept.sample as usize].locations),
        };
        StackKey {
            stack,
            filtered: kept.filtered,
            depth: kept.depth,
            labels: kept.labels,
        }
    }

    /// Writes the frames of kept sample `i` (leaf first) into `frames`, and
    /// returns its value.
    pub fn expand(&self, i: usize, frames: &mut Vec<FrameId>) -> i64 {
        let kept = self.samples[i];
        let locations = &self.profile.samples[kept.sample as usize].locations;
        frames.clear();
        let label_frames = self.label_frames.get(kept.labels as usize);
        if let Some(set) = label_frames {
            frames.extend_from_slice(&set.leaf);
        }
        let push = |l: &LocationId| {
            let (start, len) = self.location_frames[l.index()];
            if len == 1 {
                frames.push(self.location_arena[start as usize]);
            } else {
                frames.extend_from_slice(
                    &self.location_arena[start as usize..(start + len) as usize],
                );
            }
        };
        let depth = kept.depth as usize;
        if kept.filtered {
            let mut filtered = Vec::with_capacity(locations.len());
            self.filter(locations, &mut filtered);
            filtered.iter().take(depth).for_each(push);
        } else {
            locations.iter().take(depth).for_each(push);
        }
        if let Some(set) = label_frames {
            frames.extend_from_slice(&set.root);
        }
        kept.value
    }

    /// Writes the locations of kept sample `i` (leaf first, without the
    /// profiler's frames, and without the callers `--show_from` cuts) into
    /// `locations`, and returns the profile's sample (for all its values).
    pub fn kept_sample(
        &self,
        i: usize,
        locations: &mut Vec<LocationId>,
    ) -> &'p cpuprof_profile::Sample {
        let kept = self.samples[i];
        let sample = &self.profile.samples[kept.sample as usize];
        if kept.filtered {
            self.filter(&sample.locations, locations);
        } else {
            locations.clear();
            locations.extend_from_slice(&sample.locations);
        }
        locations.truncate(kept.depth as usize);
        sample
    }

    /// Calls `f` with every kept sample's frames (leaf first) and value.
    pub fn for_each(&self, mut f: impl FnMut(&[FrameId], i64)) {
        let mut frames = Vec::with_capacity(256);
        for i in 0..self.samples.len() {
            let value = self.expand(i, &mut frames);
            f(&frames, value);
        }
    }

    /// The profile's sample of kept sample `i` (its labels, its values).
    pub fn sample(&self, i: usize) -> &'p cpuprof_profile::Sample {
        &self.profile.samples[self.samples[i].sample as usize]
    }

    /// The index in the profile of kept sample `i`.
    pub fn sample_index(&self, i: usize) -> usize {
        self.samples[i].sample as usize
    }

    /// The value of kept sample `i`.
    pub fn value(&self, i: usize) -> i64 {
        self.samples[i].value
    }

    /// The number of kept samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when no sample was kept.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Why nothing is left to show, when no sample was kept (these stacks
    /// were built with `options`): the profile has no samples, or the
    /// first filter (in the order they apply: label filters, `focus`,
    /// `ignore`, `show_from`, `show`, `hide`) after which none is left,
    /// named by its setting and value. None when samples were kept.
    pub fn why_empty(&self, options: &Options) -> Option<String> {
        if !self.is_empty() {
            return None;
        }
        let profile = self.profile;
        let unfiltered = Options {
            focus: None,
            ignore: None,
            show_from: None,
            show: None,
            hide: None,
            tags: TagOptions {
                focus: None,
                ignore: None,
                ..options.tags.clone()
            },
            ..options.clone()
        };
        let none = Stacks::build(profile, &unfiltered);
        if none.is_empty() {
            if let Some(window) = &options.window {
                let all = Stacks::build(
                    profile,
                    &Options {
                        window: None,
                        ..unfiltered.clone()
                    },
                );
                if !all.is_empty() {
                    return Some(format!(
                        "{} keeps none of the {} samples: nothing left to show",
                        window.setting,
                        all.len()
                    ));
                }
            }
            return Some(if profile.samples.is_empty() {
                "the profile has no samples".to_string()
            } else {
                format!(
                    "the profile's {} samples all have a {} of 0",
                    profile.samples.len(),
                    none.sample_type.kind
                )
            });
        }
        let before = none.len();
        let mut trial = unfiltered;
        let regex = |r: &Option<Regex>| r.as_ref().map(|r| r.as_str().to_string());
        // Each filter: its setting, its value when set, and how it is
        // put back into the trial options.
        type Restore = fn(&mut Options, &Options);
        let steps: [(&str, Option<String>, Restore); 7] = [
            (
                "tagfocus",
                options.tags.focus.as_ref().map(|_| String::new()),
                |t, o| t.tags.focus = o.tags.focus.clone(),
            ),
            (
                "tagignore",
                options.tags.ignore.as_ref().map(|_| String::new()),
                |t, o| t.tags.ignore = o.tags.ignore.clone(),
            ),
            ("focus", regex(&options.focus), |t, o| {
                t.focus = o.focus.clone()
            }),
            ("ignore", regex(&options.ignore), |t, o| {
                t.ignore = o.ignore.clone()
            }),
            ("show_from", regex(&options.show_from), |t, o| {
                t.show_from = o.show_from.clone()
            }),
            ("show", regex(&options.show), |t, o| t.show = o.show.clone()),
            ("hide", regex(&options.hide), |t, o| t.hide = o.hide.clone()),
        ];
        for (name, value, restore) in steps {
            let Some(value) = value else { continue };
            restore(&mut trial, options);
            if Stacks::build(profile, &trial).is_empty() {
                let what = match name {
                    "tagfocus" | "tagignore" => name.to_string(),
                    _ => format!("{name}={value}"),
                };
                let verb = match name {
                    "focus" | "tagfocus" | "show_from" | "show" => "matches none of",
                    _ => "removes all of",
                };
                return Some(format!(
                    "{what} {verb} the {before} samples: nothing left to show"
                ));
            }
        }
        Some(format!(
            "the filters together leave none of the {before} samples: nothing left to show"
        ))
    }

    /// The frame of `id`.
    #[inline]
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.index()]
    }

    /// The frames location `id` shows (its lines, inlined ones first,
    /// without those `--hide`/`--show` remove).
    pub fn location_frames(&self, id: LocationId) -> &[FrameId] {
        let (start, len) = self.location_frames[id.index()];
        &self.location_arena[start as usize..(start + len) as usize]
    }

    /// The profile the stacks are a view of.
    pub fn profile(&self) -> &'p Profile {
        self.profile
    }

    /// Marks the stacks as a diff's (the profiles minus `base`, under the
    /// same `options`): percentages become those of the base's total, the
    /// sum of the absolute values of its samples before any filter, as Go
    /// pprof's `-diff_base` computes it.
    pub fn with_base(mut self, base: &Profile, options: &Options) -> Self {
        let value_index = options.value_index(base);
        let total = base
            .samples
            .iter()
            .map(|s| sample_value(s, value_index, options.mean).saturating_abs())
            .fold(0i64, i64::saturating_add);
        self.base_total = Some(total);
        self
    }

    /// What percentages are of: the base's total in a diff, else every
    /// sample's total (Go pprof's report total). A diff over an empty base
    /// (a total of 0) takes its percentages of the changes' total, as Go
    /// pprof's `-diff_base` does, rather than dividing by zero.
    pub fn percent_total(&self) -> i64 {
        self.nonzero_base().unwrap_or(self.grand_total)
    }

    /// The base's total in a diff whose base is not empty.
    pub fn nonzero_base(&self) -> Option<i64> {
        self.base_total.filter(|&b| b != 0)
    }
}

/// The reported value of `sample`: its value at `value_index`, per event
/// with `mean` (Go pprof's `-mean`).
fn sample_value(sample: &cpuprof_profile::Sample, value_index: usize, mean: bool) -> i64 {
    let value = sample.values.get(value_index).copied().unwrap_or(0);
    if !mean {
        return value;
    }
    match sample.values.first() {
        Some(&count) if count != 0 => value / count,
        _ => 0,
    }
}

/// The frames of every location at one granularity and naming, as
/// [`Stacks`] share them.
#[derive(Clone, Debug)]
struct LocationFrames {
    key: FrameKey,
    frames: Arc<Vec<Frame>>,
    location_frames: Arc<Vec<(u32, u32)>>,
    location_arena: Arc<Vec<FrameId>>,
    /// Per location: it is a profiler frame.
    profiler: Arc<Vec<bool>>,
}

/// What a location's frames depend on: granularity, full names,
/// `--noinlines`.
type FrameKey = (Granularity, bool, bool);

/// Per location: it matches focus, ignore, show_from.
type LocationMatches = (Vec<bool>, Vec<bool>, Vec<bool>);

impl LocationFrames {
    /// Names every location's frames under `options`, and says which
    /// locations the filters match.
    fn compute(
        profile: &Profile,
        options: &Options,
        key: FrameKey,
    ) -> (LocationFrames, Vec<bool>, Vec<bool>, Vec<bool>) {
        let n = profile.locations.len();
        let mut table = FrameTable::new(profile, options);
        let mut location_frames = Vec::with_capacity(n);
        let mut location_arena = Vec::with_capacity(n * 2);
        let mut profiler = Vec::with_capacity(n);
        let (mut focus, mut ignore, mut show_from): LocationMatches = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for i in 0..n {
            let view = table.view(LocationId::from_index(i));
            location_frames.push((location_arena.len() as u32, view.frames.len() as u32));
            location_arena.extend_from_slice(&view.frames);
            profiler.push(view.profiler);
            focus.push(view.focus);
            ignore.push(view.ignore);
            show_from.push(view.show_from);
        }
        let located = LocationFrames {
            key,
            frames: Arc::new(table.frames),
            location_frames: Arc::new(location_frames),
            location_arena: Arc::new(location_arena),
            profiler: Arc::new(profiler),
        };
        (located, focus, ignore, show_from)
    }
}

/// Frames of a profile's locations kept between [`Stacks::build_cached`]
/// calls on that profile (one entry per granularity and naming).
#[derive(Debug, Default)]
pub struct FrameCache(Mutex<Vec<LocationFrames>>);

/// Interns frames by their display name.
struct FrameTable<'a> {
    profile: &'a Profile,
    options: &'a Options,
    frames: Vec<Frame>,
    by_name: FxHashMap<String, FrameId>,
    /// Display names of functions, computed once per function.
    function_names: Vec<Option<String>>,
    /// At function granularity with no frame filter: each function's
    /// frame, interned once (the frame depends on the function only).
    function_frames: Vec<Option<FrameId>>,
    /// Per mapping: its file's path matches `--show`, `--show_from` (Go
    /// pprof keeps every frame of such a location).
    mapping_show: Vec<(bool, bool)>,
}

impl<'a> FrameTable<'a> {
    fn new(profile: &'a Profile, options: &'a Options) -> Self {
        FrameTable {
            profile,
            options,
            frames: Vec::new(),
            by_name: FxHashMap::default(),
            function_names: vec![None; profile.functions.len()],
            function_frames: vec![None; profile.functions.len()],
            mapping_show: profile
                .mappings
                .iter()
                .map(|m| {
                    let path = |re: &Option<Regex>| {
                        re.as_ref()
                            .is_some_and(|re| !m.path.is_empty() && re.is_match(&m.path))
                    };
                    (path(&options.show), path(&options.show_from))
                })
                .collect(),
        }
    }

    /// True when a regex of the options looks at frames.
    fn filters(&self) -> bool {
        let o = self.options;
        o.focus.is_some()
            || o.ignore.is_some()
            || o.hide.is_some()
            || o.show.is_some()
            || o.show_from.is_some()
    }

    fn function_name(&mut self, id: cpuprof_profile::FunctionId) -> String {
        if let Some(name) = &self.function_names[id.index()] {
            return name.clone();
        }
        let function = self.profile.function(id);
        let name = if self.options.full_names {
            function.name.clone()
        } else {
            names::short_name(&function.name)
        };
        self.function_names[id.index()] = Some(name.clone());
        name
    }

    fn intern(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.by_name.get(&frame.name) {
            return id;
        }
        self.insert(frame)
    }

    fn insert(&mut self, frame: Frame) -> FrameId {
        let id = FrameId(self.frames.len() as u32);
        self.by_name.insert(frame.name.clone(), id);
        self.frames.push(frame);
        id
    }

    fn view(&mut self, id: LocationId) -> LocationView {
        let profile = self.profile;
        let location = profile.location(id);
        let address = location.address;
        let mut view = LocationView {
            frames: Vec::with_capacity(location.lines.len().max(1)),
            profiler: false,
            focus: false,
            ignore: false,
            show_from: false,
        };
        let matches = |re: &Option<Regex>, texts: &[&str]| {
            re.as_ref()
                .is_some_and(|re| texts.iter().any(|t| !t.is_empty() && re.is_match(t)))
        };
        if self.options.focus.is_some() || self.options.ignore.is_some() {
            let address_text = names::address(address);
            view.focus |= matches(&self.options.focus, &[&address_text]);
            view.ignore |= matches(&self.options.ignore, &[&address_text]);
        }

        let (mapping_show, mapping_show_from) = location
            .mapping
            .and_then(|m| self.mapping_show.get(m.index()).copied())
            .unwrap_or_default();
        let options: &'a Options = self.options;
        let show = |texts: &[&str]| {
            options.show.is_none() || mapping_show || matches(&options.show, texts)
        };
        let show_from = |texts: &[&str]| mapping_show_from || matches(&options.show_from, texts);

        if location.lines.is_empty() {
            let address_text = names::address(address);
            let name = match self.options.granularity {
                Granularity::Functions => address_text.clone(),
                Granularity::Lines | Granularity::Files => format!("{address_text} ??:0"),
                Granularity::Addresses => format!("{address:016x} {address_text} ??:0"),
            };
            if !matches(&self.options.hide, &[&name]) && show(&[&name]) {
                view.show_from = show_from(&[&name]);
                view.frames.push(self.intern(Frame {
                    name,
                    function: String::new(),
                    file: String::new(),
                    line: 0,
                    address,
                    mapping: location.mapping,
                    inlined: false,
                }));
            }
            return view;
        }
        // `--noinlines`: the physical function's line only (the outermost,
        // at the line of the inlined call), as Go pprof's -noinlines.
        let lines = if self.options.noinlines {
            &location.lines[location.lines.len() - 1..]
        } else {
            &location.lines[..]
        };
        let outermost = lines.len() - 1;
        if self.options.granularity == Granularity::Functions && !self.filters() {
            for (depth, line) in lines.iter().enumerate() {
                let function = profile.function(line.function);
                view.profiler |= is_profiler_function(&function.name);
                let id = match self.function_frames[line.function.index()] {
                    Some(id) => id,
                    None => {
                        let short = self.function_name(line.function);
                        let id = match self.by_name.get(&short) {
                            Some(&id) => id,
                            None => self.insert(Frame::of_line(
                                short,
                                function,
                                line,
                                location,
                                depth != outermost,
                            )),
                        };
                        self.function_frames[line.function.index()] = Some(id);
                        id
                    }
                };
                view.frames.push(id);
            }
            return view;
        }
        let mut outermost_match: Option<usize> = None;
        for (depth, line) in lines.iter().enumerate() {
            let function = profile.function(line.function);
            view.profiler |= is_profiler_function(&function.name);
            let short = self.function_name(line.function);
            let needs_file_line = self.options.focus.is_some()
                || self.options.ignore.is_some()
                || self.options.show.is_some()
                || matches!(
                    self.options.granularity,
                    Granularity::Lines | Granularity::Addresses
                );
            let file_line = if !needs_file_line {
                String::new()
            } else if function.filename.is_empty() {
                "??:0".to_string()
            } else {
                format!("{}:{}", function.filename, line.line)
            };
            if self.options.focus.is_some() || self.options.ignore.is_some() {
                let texts = [short.as_str(), function.name.as_str(), file_line.as_str()];
                view.focus |= matches(&self.options.focus, &texts);
                view.ignore |= matches(&self.options.ignore, &texts);
            }
            let name = match self.options.granularity {
                Granularity::Functions => short.clone(),
                Granularity::Lines => format!("{short} {file_line}"),
                Granularity::Files if function.filename.is_empty() => format!("{short} ??:0"),
                Granularity::Files => function.filename.clone(),
                Granularity::Addresses => format!("{address:016x} {short} {file_line}"),
            };
            // As Go pprof's -hide: by name or file name.
            if matches(
                &self.options.hide,
                &[&name, &function.name, &function.filename],
            ) || !show(&[&name, &function.name, &file_line])
            {
                continue;
            }
            if show_from(&[&name, &function.name]) {
                // Go pprof keeps a location's lines up to its outermost
                // match: the frames pushed so far and this one.
                outermost_match = Some(view.frames.len() + 1);
            }
            let frame = Frame::of_line(name, function, line, location, depth != outermost);
            view.frames.push(self.intern(frame));
        }
        if let Some(kept) = outermost_match {
            view.show_from = true;
            if !mapping_show_from {
                view.frames.truncate(kept);
            }
        }
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{SampleTimes, TimeRange};
    use cpuprof_profile::{Label, ProfileBuilder};
    use proptest::prelude::*;

    /// Every kept sample: its profile index, frames and value.
    fn kept(stacks: &Stacks) -> Vec<(usize, Vec<FrameId>, i64)> {
        let mut frames = Vec::new();
        (0..stacks.len())
            .map(|i| {
                let value = stacks.expand(i, &mut frames);
                (stacks.sample_index(i), frames.clone(), value)
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]
        /// Reports read from a session's columns (values, duplicated
        /// leaves) and a time window keep what they keep reading every
        /// sample, sequentially (under a piece) and in parallel pieces
        /// (over one), with focus and ignore or without.
        #[test]
        fn columns_and_pieces_keep_what_samples_say(
            stacks_seed in proptest::collection::vec((0usize..6, 1usize..4, 0i64..50), 1..40),
            many in any::<bool>(),
            start in 0i64..100,
            len in 1i64..100,
            filter in 0usize..3,
        ) {
            // Locations at 0x1000.. and each one's "caller" at address - 1
            // (the duplicated leaf of a gperftools stack).
            let mut b = ProfileBuilder::new(vec![
                ValueType::new("samples", "count"),
                ValueType::new("cpu", "nanoseconds"),
            ]);
            let pool: Vec<(LocationId, LocationId)> = (0..6u64)
                .map(|i| (b.location_at(0x1000 + 0x10 * i), b.location_at(0x1000 + 0x10 * i - 1)))
                .collect();
            let mut profile = b.finish();
            let n = if many { PIECE + 3 * stacks_seed.len() } else { stacks_seed.len() };
            for k in 0..n {
                let (first, depth, value) = stacks_seed[k % stacks_seed.len()];
                let mut locations = vec![pool[first].0];
                if k % 3 == 0 {
                    locations.push(pool[first].1);
                }
                for d in 1..depth {
                    locations.push(pool[(first + d) % pool.len()].0);
                }
                profile.samples.push(Sample {
                    locations,
                    values: vec![1, value + k as i64 % 7],
                    labels: vec![Label::num("timestamp_ns", (k % 200) as i64, "ns")],
                });
            }
            let times = SampleTimes::of(&profile);
            let window = times.window(
                TimeRange { start, end: Some(start + len) },
                "time=x".to_string(),
            );
            let mut plain = Options { window, ..Options::default() };
            match filter {
                1 => plain.focus = Some(Regex::new("1010|1020").unwrap()),
                2 => plain.ignore = Some(Regex::new("1030").unwrap()),
                _ => {}
            }
            let columned = Options {
                columns: Some(Arc::new(SampleColumns::of(&profile))),
                ..plain.clone()
            };
            let a = Stacks::build(&profile, &plain);
            let b = Stacks::build(&profile, &columned);
            prop_assert_eq!(a.grand_total, b.grand_total);
            prop_assert_eq!(a.total, b.total);
            prop_assert_eq!(kept(&a), kept(&b));
            // The graph sums samples of one stack by the columns' stack
            // numbers (b) or by their location lists (a): the same.
            let (ga, gb) = (crate::graph::Graph::build(&a, true), crate::graph::Graph::build(&b, true));
            prop_assert_eq!(&ga.nodes, &gb.nodes);
            prop_assert_eq!(&ga.edges, &gb.edges);
            // Equal location lists have equal numbers, and only they.
            let numbers = &columned.columns.as_ref().unwrap().stack;
            let mut by_list: std::collections::HashMap<&[LocationId], u32> = Default::default();
            let mut by_number: std::collections::HashMap<u32, &[LocationId]> = Default::default();
            for (sample, &number) in profile.samples.iter().zip(numbers) {
                prop_assert_eq!(*by_list.entry(&sample.locations).or_insert(number), number);
                prop_assert_eq!(*by_number.entry(number).or_insert(&sample.locations), &sample.locations[..]);
            }
            // Against the definition: the window's samples, read one by one.
            let in_window = (0..profile.samples.len()).filter(|&i| {
                let t = (i % 200) as i64;
                t >= start && t < start + len
            });
            let grand: i64 = in_window.map(|i| profile.samples[i].values[1]).sum();
            prop_assert_eq!(a.grand_total, grand);
            // The focus keeps the samples with a frame of those locations
            // (their names end in the address), no more.
            if filter == 1 {
                for (index, frames, _) in kept(&a) {
                    prop_assert!(frames.iter().any(|&f| {
                        let name = &a.frame(f).name;
                        name.ends_with("1010") || name.ends_with("1020")
                    }), "{index}");
                }
            }
        }
    }
}
