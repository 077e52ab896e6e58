//! The report's view of a profile: every sample as a stack of frames at the
//! chosen granularity, with the profiler's own frames removed and the
//! focus/ignore/hide filters applied. Every output reads this (or the
//! [`crate::graph::Graph`] built from it); it is rebuilt for each report and
//! never becomes the source of truth.

use cpuprof_profile::{LocationId, MappingId, Profile, ValueType};
use regex::Regex;
use rustc_hash::FxHashMap;

use crate::names;
use crate::options::{Granularity, Options};

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

/// A filtered sample: a range of [`Stacks`]' frame arena and its value.
#[derive(Clone, Copy, Debug)]
struct StackRef {
    start: u32,
    len: u32,
    value: i64,
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

/// The stacks of a profile as a report sees them.
#[derive(Clone, Debug)]
pub struct Stacks {
    /// Distinct frames, in order of first appearance.
    pub frames: Vec<Frame>,
    arena: Vec<FrameId>,
    samples: Vec<StackRef>,
    /// Sum of the reported value over all samples, before focus and ignore.
    pub grand_total: i64,
    /// Sum of the reported value over the samples kept by focus and ignore.
    pub total: i64,
    /// What the reported value measures.
    pub sample_type: ValueType,
    /// The granularity of the frames.
    pub granularity: Granularity,
}

/// What the report needs of each location, computed once per location.
struct LocationView {
    frames: Vec<FrameId>,
    profiler: bool,
    focus: bool,
    ignore: bool,
}

impl Stacks {
    /// Builds the report's stacks for `profile` (symbolized or not).
    pub fn build(profile: &Profile, options: &Options) -> Stacks {
        let value_index = options
            .sample_index
            .unwrap_or_else(|| profile.default_sample_index());
        let sample_type = profile
            .sample_types
            .get(value_index)
            .cloned()
            .unwrap_or_default();
        let mut builder = FrameTable::new(profile, options);
        let views: Vec<LocationView> = (0..profile.locations.len())
            .map(|i| builder.view(LocationId::from_index(i)))
            .collect();

        let mut stacks = Stacks {
            frames: Vec::new(),
            arena: Vec::new(),
            samples: Vec::with_capacity(profile.samples.len()),
            grand_total: 0,
            total: 0,
            sample_type,
            granularity: options.granularity,
        };
        let mut kept: Vec<LocationId> = Vec::with_capacity(256);
        for sample in &profile.samples {
            let value = sample.values.get(value_index).copied().unwrap_or(0);
            stacks.grand_total = stacks.grand_total.saturating_add(value);
            kept.clear();
            kept.extend(
                sample
                    .locations
                    .iter()
                    .filter(|l| options.keep_profiler_frames || !views[l.index()].profiler),
            );
            // A leaf duplicated by the unwinder (once from the signal context,
            // once, adjusted by -1, from the stack) is one frame.
            if kept.len() >= 2
                && profile.location(kept[1]).address.wrapping_add(1) == profile.location(kept[0]).address
            {
                kept.remove(1);
            }
            if options.focus.is_some() && !kept.iter().any(|l| views[l.index()].focus) {
                continue;
            }
            if options.ignore.is_some() && kept.iter().any(|l| views[l.index()].ignore) {
                continue;
            }
            stacks.total = stacks.total.saturating_add(value);
            let start = stacks.arena.len() as u32;
            for l in &kept {
                stacks.arena.extend_from_slice(&views[l.index()].frames);
            }
            let len = stacks.arena.len() as u32 - start;
            stacks.samples.push(StackRef { start, len, value });
        }
        stacks.frames = builder.frames;
        stacks
    }

    /// Every kept sample as (frames leaf first, value).
    pub fn iter(&self) -> impl Iterator<Item = (&[FrameId], i64)> + '_ {
        self.samples.iter().map(|s| {
            (
                &self.arena[s.start as usize..(s.start + s.len) as usize],
                s.value,
            )
        })
    }

    /// The number of kept samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when no sample was kept.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The frame of `id`.
    #[inline]
    pub fn frame(&self, id: FrameId) -> &Frame {
        &self.frames[id.index()]
    }
}

/// Interns frames by their display name.
struct FrameTable<'a> {
    profile: &'a Profile,
    options: &'a Options,
    frames: Vec<Frame>,
    by_name: FxHashMap<String, FrameId>,
    /// Display names of functions, computed once per function.
    function_names: Vec<Option<String>>,
}

impl<'a> FrameTable<'a> {
    fn new(profile: &'a Profile, options: &'a Options) -> Self {
        FrameTable {
            profile,
            options,
            frames: Vec::new(),
            by_name: FxHashMap::default(),
            function_names: vec![None; profile.functions.len()],
        }
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
        };
        let address_text = names::address(address);
        let matches = |re: &Option<Regex>, texts: &[&str]| {
            re.as_ref()
                .is_some_and(|re| texts.iter().any(|t| !t.is_empty() && re.is_match(t)))
        };
        view.focus |= matches(&self.options.focus, &[&address_text]);
        view.ignore |= matches(&self.options.ignore, &[&address_text]);

        if location.lines.is_empty() {
            let name = match self.options.granularity {
                Granularity::Functions => address_text.clone(),
                Granularity::Lines | Granularity::Files => format!("{address_text} ??:0"),
                Granularity::Addresses => format!("{address:016x} {address_text} ??:0"),
            };
            if !matches(&self.options.hide, &[&name]) {
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
        let outermost = location.lines.len() - 1;
        for (depth, line) in location.lines.iter().enumerate() {
            let function = profile.function(line.function);
            if PROFILER_FRAMES.contains(&function.name.as_str())
                || function.name.starts_with(AGENT_SIGNAL_PATH)
            {
                view.profiler = true;
            }
            let short = self.function_name(line.function);
            let file_line = if function.filename.is_empty() {
                "??:0".to_string()
            } else {
                format!("{}:{}", function.filename, line.line)
            };
            let texts = [short.as_str(), function.name.as_str(), file_line.as_str()];
            view.focus |= matches(&self.options.focus, &texts);
            view.ignore |= matches(&self.options.ignore, &texts);
            let name = match self.options.granularity {
                Granularity::Functions => short.clone(),
                Granularity::Lines => format!("{short} {file_line}"),
                Granularity::Files if function.filename.is_empty() => format!("{short} ??:0"),
                Granularity::Files => function.filename.clone(),
                Granularity::Addresses => format!("{address:016x} {short} {file_line}"),
            };
            if matches(&self.options.hide, &[&name, &function.name]) {
                continue;
            }
            let frame = Frame {
                name,
                function: function.name.clone(),
                file: function.filename.clone(),
                line: line.line,
                address,
                mapping: location.mapping,
                inlined: depth != outermost,
            };
            view.frames.push(self.intern(frame));
        }
        view
    }
}
