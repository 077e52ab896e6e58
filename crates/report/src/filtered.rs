//! The profile a report sees, as a profile: the samples its filters kept
//! (`--focus`, `--ignore`, `--show_from`, the profiler's own frames
//! removed), for the web UI's download of "the current profile".

use cpuprof_profile::{Profile, Sample};

use crate::stacks::Stacks;

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
