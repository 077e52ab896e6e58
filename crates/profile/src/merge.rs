//! Summing several profiles into one.
//!
//! Mappings, functions and locations are deduplicated by content, so two
//! profiles of the same program share them; samples with identical stacks
//! and labels are summed. The profiles must have the same sample types.
//! Merge symbolized profiles: after a merge, mappings of different
//! processes may overlap, and [`Profile::mapping_of`] is no longer
//! meaningful (each location keeps its own mapping).

use rustc_hash::FxHashMap;

use crate::model::{FunctionId, Line, Location, LocationId, Mapping, MappingId, Profile, Sample};

/// Why profiles could not be merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError(pub String);

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MergeError {}

type MappingKey = (u64, u64, u64, String, String);

/// Sums `profiles` into one. The metadata (period, comments, ...) is the
/// first profile's; durations are added.
pub fn merge(profiles: Vec<Profile>) -> Result<Profile, MergeError> {
    let mut iter = profiles.into_iter();
    let Some(first) = iter.next() else {
        return Err(MergeError("no profiles to merge".into()));
    };
    let rest: Vec<Profile> = iter.collect();
    if rest.is_empty() {
        return Ok(first);
    }
    let mut out = Profile {
        sample_types: first.sample_types.clone(),
        default_sample_type: first.default_sample_type.clone(),
        period_type: first.period_type.clone(),
        period: first.period,
        time_nanos: first.time_nanos,
        duration_nanos: 0,
        comments: first.comments.clone(),
        drop_frames: first.drop_frames.clone(),
        keep_frames: first.keep_frames.clone(),
        ..Profile::default()
    };
    let mut merger = Merger::default();
    for p in std::iter::once(first).chain(rest) {
        if p.sample_types != out.sample_types {
            let show = |p: &Profile| {
                p.sample_types
                    .iter()
                    .map(|t| format!("{}/{}", t.kind, t.unit))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(MergeError(format!(
                "cannot sum profiles with different sample types: [{}] and [{}]",
                show(&out),
                show(&p)
            )));
        }
        out.duration_nanos = out.duration_nanos.saturating_add(p.duration_nanos);
        if p.time_nanos != 0 && (out.time_nanos == 0 || p.time_nanos < out.time_nanos) {
            out.time_nanos = p.time_nanos;
        }
        merger.add(&mut out, p);
    }
    out.sort_mappings();
    out.merge_samples();
    Ok(out)
}

#[derive(Default)]
struct Merger {
    mappings: FxHashMap<MappingKey, MappingId>,
    functions: FxHashMap<crate::model::Function, FunctionId>,
    locations: FxHashMap<(Option<MappingId>, u64, Vec<Line>, bool), LocationId>,
}

impl Merger {
    fn add(&mut self, out: &mut Profile, p: Profile) {
        let mapping_ids: Vec<MappingId> = p
            .mappings
            .into_iter()
            .map(|m: Mapping| {
                let key = (
                    m.start,
                    m.limit,
                    m.offset,
                    m.path.clone(),
                    m.build_id.clone(),
                );
                *self.mappings.entry(key).or_insert_with(|| {
                    out.mappings.push(m);
                    MappingId::from_index(out.mappings.len() - 1)
                })
            })
            .collect();
        let function_ids: Vec<FunctionId> = p
            .functions
            .into_iter()
            .map(|f| {
                *self.functions.entry(f.clone()).or_insert_with(|| {
                    out.functions.push(f);
                    FunctionId::from_index(out.functions.len() - 1)
                })
            })
            .collect();
        let location_ids: Vec<LocationId> = p
            .locations
            .into_iter()
            .map(|l: Location| {
                let mapping = l.mapping.map(|m| mapping_ids[m.index()]);
                let lines: Vec<Line> = l
                    .lines
                    .iter()
                    .map(|line| Line {
                        function: function_ids[line.function.index()],
                        ..*line
                    })
                    .collect();
                let key = (mapping, l.address, lines.clone(), l.is_folded);
                *self.locations.entry(key).or_insert_with(|| {
                    out.locations.push(Location {
                        address: l.address,
                        mapping,
                        lines,
                        is_folded: l.is_folded,
                    });
                    LocationId::from_index(out.locations.len() - 1)
                })
            })
            .collect();
        out.samples.extend(p.samples.into_iter().map(|s| {
            Sample {
                locations: s
                    .locations
                    .iter()
                    .map(|l| location_ids[l.index()])
                    .collect(),
                values: s.values,
                labels: s.labels,
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{cpu_sample_types, ProfileBuilder};

    fn one(addresses: &[u64], count: i64) -> Profile {
        let mut b = ProfileBuilder::new(cpu_sample_types());
        let locs = addresses.iter().map(|&a| b.location_at(a)).collect();
        b.add_sample(locs, vec![count, count * 10]);
        b.finish()
    }

    #[test]
    fn sums_identical_stacks_across_profiles() {
        let p = merge(vec![one(&[1, 2], 3), one(&[1, 2], 4), one(&[2], 1)]).unwrap();
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.samples[0].values, vec![7, 70]);
        assert_eq!(p.locations.len(), 2);
        assert_eq!(p.totals(), vec![8, 80]);
    }

    #[test]
    fn refuses_different_sample_types() {
        let mut other = one(&[1], 1);
        other.sample_types[1].unit = "bytes".into();
        let e = merge(vec![one(&[1], 1), other]).unwrap_err();
        assert!(e.0.contains("different sample types"), "{e}");
    }
}
