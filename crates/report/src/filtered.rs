//! The profile a report sees, as a profile: the samples its filters kept
//! (`--focus`, `--ignore`, `--show_from`, the profiler's own frames
//! removed), for the web UI's download of "the current profile"; with the
//! lines `--hide`/`--show` remove taken out too, for `--proto` (Go pprof's
//! `-proto`).

use cpuprof_profile::{Function, FunctionId, Label, Line, Location, LocationId, Profile, Sample};
use rustc_hash::FxHashMap;

use crate::stacks::Stacks;
use crate::tags::TagOptions;

/// A copy of the stacks' profile with only the kept samples, each with
/// its locations as the report reads them (leaf first, the profiler's
/// frames and the callers `--show_from` cuts removed) and all its values
/// and labels. Frames that `--hide`/`--show` remove inside a location
/// (inline frames) stay: a location is kept whole.
pub fn kept_profile(stacks: &Stacks) -> Profile {
    let profile = stacks.profile();
    let mut samples = Vec::with_capacity(stacks.len());
    let mut locations = Vec::new();
    for i in 0..stacks.len() {
        let sample = stacks.kept_sample(i, &mut locations);
        samples.push(Sample {
            locations: locations.clone(),
            values: sample.values.clone(),
            labels: sample.labels.clone(),
        });
    }
    Profile {
        sample_types: profile.sample_types.clone(),
        default_sample_type: profile.default_sample_type.clone(),
        samples,
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
    }
}

/// [`kept_profile`] without the lines `--hide`/`--show` remove, as Go
/// pprof's `-proto` writes a profile: a location keeps the lines whose
/// frames the report shows; a location left without lines (or, without
/// lines to begin with, whose address the filters removed) leaves its
/// samples' stacks, and a sample left without locations is dropped.
pub fn shown_profile(stacks: &Stacks) -> Profile {
    let mut profile = kept_profile(stacks);
    let mut removed = vec![false; profile.locations.len()];
    for (i, location) in profile.locations.iter_mut().enumerate() {
        let frames = stacks.location_frames(LocationId::from_index(i));
        if frames.len() == location.lines.len().max(1) {
            continue;
        }
        if location.lines.is_empty() {
            removed[i] = frames.is_empty();
            continue;
        }
        // The frames are the shown lines in order: match them greedily by
        // function name.
        let mut next = frames.iter().peekable();
        let functions = &stacks.profile().functions;
        location.lines.retain(|line| {
            let name = &functions[line.function.index()].name;
            match next.peek() {
                Some(&&f) if stacks.frame(f).function == *name => {
                    next.next();
                    true
                }
                _ => false,
            }
        });
        removed[i] = location.lines.is_empty();
    }
    if removed.iter().any(|&r| r) {
        // A sample left without locations is dropped, as Go drops it.
        profile.samples.retain_mut(|sample| {
            let had = !sample.locations.is_empty();
            sample.locations.retain(|l| !removed[l.index()]);
            !had || !sample.locations.is_empty()
        });
    }
    profile
}

/// [`shown_profile`] with the label options applied as Go pprof's `-proto`
/// writes them: only the labels `--tagshow`/`--taghide` show, and the
/// pseudo-frames of `--tagroot`/`--tagleaf` as locations of functions
/// named after the values (file name: the key).
pub fn labelled_profile(stacks: &Stacks, tags: &TagOptions) -> Profile {
    let mut profile = shown_profile(stacks);
    let mut pseudo: FxHashMap<(String, String), LocationId> = FxHashMap::default();
    let mut location_of = |profile: &mut Profile, labels: &[Label], key: &String| {
        let name = tags.frame_name(labels, key).unwrap_or_default();
        *pseudo
            .entry((key.clone(), name.clone()))
            .or_insert_with(|| {
                let function = FunctionId::from_index(profile.functions.len());
                profile.functions.push(Function {
                    system_name: name.clone(),
                    name,
                    filename: key.clone(),
                    start_line: 0,
                });
                let location = LocationId::from_index(profile.locations.len());
                profile.locations.push(Location {
                    address: 0,
                    mapping: None,
                    lines: vec![Line {
                        function,
                        line: 0,
                        column: 0,
                    }],
                    is_folded: false,
                });
                location
            })
    };
    let mut samples = std::mem::take(&mut profile.samples);
    let adds_frames = tags.adds_frames();
    for sample in &mut samples {
        if adds_frames {
            // Leaf pseudo-frames first, then the stack, then the root ones
            // (each made in that order).
            let mut frames = |keys: &[String]| -> Vec<LocationId> {
                keys.iter()
                    .rev()
                    .map(|k| location_of(&mut profile, &sample.labels, k))
                    .collect()
            };
            let mut locations = frames(&tags.leaf);
            locations.append(&mut sample.locations);
            locations.extend(frames(&tags.root));
            sample.locations = locations;
        }
        sample.labels.retain(|l| tags.shows(&l.key));
    }
    profile.samples = samples;
    profile
}
