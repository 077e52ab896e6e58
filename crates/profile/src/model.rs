//! The profile model every reader fills and every output reads.
//!
//! It follows pprof's `profile.proto` closely (samples of location stacks,
//! leaf first; locations with an inline chain of lines; functions; mappings),
//! with one difference: ids are dense indexes into the profile's vectors
//! (`LocationId(3)` is `profile.locations[3]`), not the proto's arbitrary
//! 64-bit ids. Readers of the proto translate.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

/// A kind of value carried by samples, e.g. `samples/count` or
/// `cpu/nanoseconds`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ValueType {
    /// What is measured: `samples`, `cpu`, `calls`, ...
    pub kind: String,
    /// The unit: `count`, `nanoseconds`, `bytes`, ...
    pub unit: String,
}

impl ValueType {
    /// A value type from its kind and unit.
    pub fn new(kind: &str, unit: &str) -> ValueType {
        ValueType {
            kind: kind.to_string(),
            unit: unit.to_string(),
        }
    }
}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The index of this item in its profile vector.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of the item at `index`.
            #[inline]
            pub fn from_index(index: usize) -> Self {
                $name(u32::try_from(index).expect("more than 2^32 items in a profile"))
            }
        }
    };
}

id_type!(
    /// Index into [`Profile::mappings`].
    MappingId
);
id_type!(
    /// Index into [`Profile::locations`].
    LocationId
);
id_type!(
    /// Index into [`Profile::functions`].
    FunctionId
);

/// A region of the profiled process's address space backed by a file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    /// First address of the region.
    pub start: u64,
    /// One past the last address of the region.
    pub limit: u64,
    /// Offset in the file of the byte mapped at `start`.
    pub offset: u64,
    /// The mapped file (or a pseudo name such as `[vdso]`); empty if anonymous.
    pub path: String,
    /// The file's build id, lowercase hex; empty if unknown.
    pub build_id: String,
    /// `r-xp`-style permissions from `/proc/self/maps`, empty if unknown.
    pub perms: String,
    /// The locations in this mapping have function names.
    pub has_functions: bool,
    /// The locations in this mapping have file names.
    pub has_filenames: bool,
    /// The locations in this mapping have line numbers.
    pub has_line_numbers: bool,
    /// The locations in this mapping have inline frames.
    pub has_inline_frames: bool,
}

impl Mapping {
    /// True when `address` falls in `[start, limit)`.
    #[inline]
    pub fn contains(&self, address: u64) -> bool {
        self.start <= address && address < self.limit
    }

    /// True when the region is executable, or when its permissions are
    /// unknown.
    pub fn is_executable(&self) -> bool {
        self.perms.is_empty() || self.perms.as_bytes().get(2) == Some(&b'x')
    }

    /// The file name without its directory, for display.
    pub fn base_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// A function: one symbol of a binary, or a source-level function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Function {
    /// The name as printed: demangled, with its arguments and templates.
    pub name: String,
    /// The name as in the symbol table (mangled); may equal `name`.
    pub system_name: String,
    /// The source file, as recorded in the debug information.
    pub filename: String,
    /// The first line of the function, 0 if unknown.
    pub start_line: i64,
}

/// One source line of a location: a function and a line in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Line {
    /// The function.
    pub function: FunctionId,
    /// The line number, 0 if unknown.
    pub line: i64,
    /// The column, 0 if unknown.
    pub column: i64,
}

/// An instruction address in the profiled program and what it means.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The runtime address. Readers store what should be symbolized: for
    /// a caller frame, the return address minus one (an address inside the
    /// call instruction, as pprof does), so that symbolizers look up
    /// `address` as it is. Writers of formats that hold return addresses
    /// add the one back.
    pub address: u64,
    /// The mapping the address falls in, if known.
    pub mapping: Option<MappingId>,
    /// The inline chain at this address, innermost (the inlined callee)
    /// first and the outermost (the real function) last. Empty until
    /// symbolized.
    pub lines: Vec<Line>,
    /// Several functions were folded into this location by the linker.
    pub is_folded: bool,
}

/// The value of a sample label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelValue {
    /// A string value.
    Str(String),
    /// A numeric value with an optional unit.
    Num {
        /// The number.
        value: i64,
        /// Its unit, empty if none (borrowed when it is a constant, as
        /// [`Label::key`]).
        unit: Cow<'static, str>,
    },
}

/// A key/value annotation of a sample (thread, request, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    /// The key: borrowed when it is a constant (`pid`, `tid`, ...), so
    /// that a reader labelling every sample does not allocate it each time.
    pub key: Cow<'static, str>,
    /// The value.
    pub value: LabelValue,
}

impl Label {
    /// A numeric label, `unit` empty for none.
    pub fn num(
        key: impl Into<Cow<'static, str>>,
        value: i64,
        unit: impl Into<Cow<'static, str>>,
    ) -> Label {
        Label {
            key: key.into(),
            value: LabelValue::Num {
                value,
                unit: unit.into(),
            },
        }
    }

    /// A string label.
    pub fn str(key: impl Into<Cow<'static, str>>, value: &str) -> Label {
        Label {
            key: key.into(),
            value: LabelValue::Str(value.to_string()),
        }
    }
}

/// A measurement: a stack of locations, leaf first, and one value per
/// sample type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// The call stack, leaf (the interrupted instruction) first.
    pub locations: Vec<LocationId>,
    /// One value per entry of [`Profile::sample_types`].
    pub values: Vec<i64>,
    /// Labels; samples with different labels are not merged.
    pub labels: Vec<Label>,
}

/// A whole profile: what was measured, where, and how often.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// What each sample value means, in order.
    pub sample_types: Vec<ValueType>,
    /// The `kind` of the sample type reports show by default (empty: the
    /// last one, as pprof does).
    pub default_sample_type: String,
    /// The samples; after [`Profile::merge_samples`] no two have the same
    /// stack and labels.
    pub samples: Vec<Sample>,
    /// Mapped files, sorted by start address.
    pub mappings: Vec<Mapping>,
    /// Distinct addresses.
    pub locations: Vec<Location>,
    /// Distinct functions.
    pub functions: Vec<Function>,
    /// What the sampling period counts (e.g. `cpu/nanoseconds`).
    pub period_type: ValueType,
    /// The sampling period, in `period_type` units (0 if unknown).
    pub period: i64,
    /// When the profile was collected (ns since the Unix epoch), 0 if unknown.
    pub time_nanos: i64,
    /// How long the profile covers, in ns, 0 if unknown.
    pub duration_nanos: i64,
    /// Free-form comments (DCPI keeps its header lines here).
    pub comments: Vec<String>,
    /// Frames matching this regex are dropped with their callees (pprof).
    pub drop_frames: String,
    /// Frames matching this regex are kept even if `drop_frames` matches.
    pub keep_frames: String,
}

/// The cpu profile period type and sample types used for gperftools
/// profiles (as Go pprof reads them).
pub fn cpu_sample_types() -> Vec<ValueType> {
    vec![
        ValueType::new("samples", "count"),
        ValueType::new("cpu", "nanoseconds"),
    ]
}

impl Profile {
    /// The sum of each sample value over all samples.
    pub fn totals(&self) -> Vec<i64> {
        let mut totals = vec![0i64; self.sample_types.len()];
        for sample in &self.samples {
            for (total, value) in totals.iter_mut().zip(&sample.values) {
                *total = total.saturating_add(*value);
            }
        }
        totals
    }

    /// The index of the sample type named `kind`, if any.
    pub fn sample_index(&self, kind: &str) -> Option<usize> {
        self.sample_types.iter().position(|t| t.kind == kind)
    }

    /// The index of the sample type shown by default: the
    /// `default_sample_type` if set and present, else the last one.
    pub fn default_sample_index(&self) -> usize {
        if !self.default_sample_type.is_empty() {
            if let Some(i) = self.sample_index(&self.default_sample_type) {
                return i;
            }
        }
        self.sample_types.len().saturating_sub(1)
    }

    /// The mapping containing `address` (mappings must be sorted by start).
    pub fn mapping_of(&self, address: u64) -> Option<MappingId> {
        let i = self.mappings.partition_point(|m| m.start <= address);
        if i == 0 {
            return None;
        }
        let m = &self.mappings[i - 1];
        m.contains(address).then(|| MappingId::from_index(i - 1))
    }

    /// The location of `id`.
    #[inline]
    pub fn location(&self, id: LocationId) -> &Location {
        &self.locations[id.index()]
    }

    /// The function of `id`.
    #[inline]
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.index()]
    }

    /// The mapping of `id`.
    #[inline]
    pub fn mapping(&self, id: MappingId) -> &Mapping {
        &self.mappings[id.index()]
    }

    /// The function names of `sample`'s stack, leaf first, each location's
    /// inline chain innermost first; `0x…` for a location without lines.
    pub fn stack_names(&self, sample: &Sample) -> Vec<String> {
        let mut names = Vec::with_capacity(sample.locations.len());
        for &l in &sample.locations {
            let location = self.location(l);
            if location.lines.is_empty() {
                names.push(format!("{:#x}", location.address));
            }
            for line in &location.lines {
                names.push(self.function(line.function).name.clone());
            }
        }
        names
    }

    /// Sums the values of samples with identical stacks and labels, keeping
    /// the order of first appearance.
    pub fn merge_samples(&mut self) {
        self.merge_samples_where(|_| true);
    }

    /// [`Profile::merge_samples`] among the samples `candidate` picks: the
    /// others are kept as they are, unhashed (for a reader that knows which
    /// samples alone can be identical).
    pub fn merge_samples_where(&mut self, candidate: impl Fn(&Sample) -> bool) {
        // Where each sample goes: None for a first occurrence (kept),
        // else the index of the earlier sample it is summed into.
        let mut index: FxHashMap<(&[LocationId], &[Label]), usize> = FxHashMap::default();
        let mut target: Vec<Option<usize>> = Vec::with_capacity(self.samples.len());
        for (i, sample) in self.samples.iter().enumerate() {
            let first = if candidate(sample) {
                match index.entry((&sample.locations, &sample.labels)) {
                    Entry::Occupied(e) => Some(*e.get()),
                    Entry::Vacant(e) => {
                        e.insert(i);
                        None
                    }
                }
            } else {
                None
            };
            target.push(first);
        }
        drop(index);
        // In place: sum into the first occurrences, then drop the others.
        for (i, first) in target.iter().enumerate() {
            if let Some(first) = *first {
                let (before, from) = self.samples.split_at_mut(i);
                for (a, b) in before[first].values.iter_mut().zip(&from[0].values) {
                    *a = a.saturating_add(*b);
                }
            }
        }
        if target.iter().any(Option::is_some) {
            let mut next = target.iter();
            self.samples
                .retain(|_| next.next().is_some_and(|first| first.is_none()));
        }
    }

    /// Multiplies every sample value by `factor` (−1 turns a base profile
    /// into one to subtract).
    pub fn scale(&mut self, factor: i64) {
        for sample in &mut self.samples {
            for v in &mut sample.values {
                *v = v.saturating_mul(factor);
            }
        }
    }

    /// Sorts the mappings by start address, renumbering the locations'
    /// references.
    pub fn sort_mappings(&mut self) {
        let mut order: Vec<usize> = (0..self.mappings.len()).collect();
        order.sort_by_key(|&i| (self.mappings[i].start, self.mappings[i].limit));
        let mut new_id = vec![MappingId(0); order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old] = MappingId::from_index(new);
        }
        let old = std::mem::take(&mut self.mappings);
        let mut slots: Vec<Option<Mapping>> = old.into_iter().map(Some).collect();
        self.mappings = order.iter().map(|&i| slots[i].take().unwrap()).collect();
        for loc in &mut self.locations {
            if let Some(m) = loc.mapping {
                loc.mapping = Some(new_id[m.index()]);
            }
        }
    }

    /// Checks internal consistency: every id in range, every sample with
    /// one value per sample type. Returns a description of the first
    /// problem.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.sample_types.len();
        for (i, s) in self.samples.iter().enumerate() {
            if s.values.len() != n {
                return Err(format!(
                    "sample {i} has {} values, expected {n}",
                    s.values.len()
                ));
            }
            if let Some(l) = s
                .locations
                .iter()
                .find(|l| l.index() >= self.locations.len())
            {
                return Err(format!("sample {i} refers to missing location {}", l.0));
            }
        }
        for (i, loc) in self.locations.iter().enumerate() {
            if let Some(m) = loc.mapping {
                if m.index() >= self.mappings.len() {
                    return Err(format!("location {i} refers to missing mapping {}", m.0));
                }
            }
            if let Some(l) = loc
                .lines
                .iter()
                .find(|l| l.function.index() >= self.functions.len())
            {
                return Err(format!(
                    "location {i} refers to missing function {}",
                    l.function.0
                ));
            }
        }
        Ok(())
    }
}

/// Builds a profile while interning mappings, locations and functions, so
/// readers need not track ids themselves.
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    /// The profile under construction.
    pub profile: Profile,
    location_by_address: FxHashMap<u64, LocationId>,
    function_index: FxHashMap<Function, FunctionId>,
}

impl ProfileBuilder {
    /// A builder for a profile with these sample types.
    pub fn new(sample_types: Vec<ValueType>) -> ProfileBuilder {
        ProfileBuilder {
            profile: Profile {
                sample_types,
                ..Profile::default()
            },
            ..ProfileBuilder::default()
        }
    }

    /// The (unsymbolized) location of `address`, created on first use and
    /// attached to the mapping containing it. Add mappings first and keep
    /// them sorted.
    pub fn location_at(&mut self, address: u64) -> LocationId {
        if let Some(&id) = self.location_by_address.get(&address) {
            return id;
        }
        let id = LocationId::from_index(self.profile.locations.len());
        let mapping = self.profile.mapping_of(address);
        self.profile.locations.push(Location {
            address,
            mapping,
            ..Location::default()
        });
        self.location_by_address.insert(address, id);
        id
    }

    /// The id of `function`, interned.
    pub fn function(&mut self, function: Function) -> FunctionId {
        if let Some(&id) = self.function_index.get(&function) {
            return id;
        }
        let id = FunctionId::from_index(self.profile.functions.len());
        self.profile.functions.push(function.clone());
        self.function_index.insert(function, id);
        id
    }

    /// Adds a sample (not merged; call [`Profile::merge_samples`] at the end
    /// or use [`ProfileBuilder::finish`]).
    pub fn add_sample(&mut self, locations: Vec<LocationId>, values: Vec<i64>) {
        self.profile.samples.push(Sample {
            locations,
            values,
            labels: Vec::new(),
        });
    }

    /// Merges identical samples and returns the profile.
    pub fn finish(mut self) -> Profile {
        self.profile.merge_samples();
        self.profile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_among_candidates_leaves_the_others_apart() {
        let mut b = ProfileBuilder::new(vec![ValueType::new("samples", "count")]);
        let a = b.location_at(0x10);
        let c = b.location_at(0x20);
        b.add_sample(vec![a], vec![1]);
        b.add_sample(vec![c], vec![2]);
        b.add_sample(vec![a], vec![4]);
        b.add_sample(vec![c], vec![8]);
        let mut all = b.profile.clone();
        all.merge_samples();
        let values = |p: &Profile| p.samples.iter().map(|s| s.values[0]).collect::<Vec<_>>();
        assert_eq!(values(&all), [5, 10]);
        let mut some = b.profile;
        some.merge_samples_where(|s| s.locations == [a]);
        assert_eq!(values(&some), [5, 2, 8]);
    }
}
