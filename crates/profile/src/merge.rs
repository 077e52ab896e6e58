//! Summing several profiles into one.
//!
//! Mappings, functions and locations are deduplicated by content, so two
//! profiles of the same program share them; samples with identical stacks
//! and labels are summed. Profiles whose sample types differ are summed
//! over the types they all have (in the first profile's order), the others
//! dropped, as Go pprof's fetch does; with none in common they cannot be
//! summed.
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

/// Sums `profiles` into one. The metadata (period, ...) is the first
/// profile's; durations are added; the comments are every profile's, each
/// once, in order (as Go pprof's merge keeps them).
pub fn merge(profiles: Vec<Profile>) -> Result<Profile, MergeError> {
    let mut iter = profiles.into_iter();
    let Some(first) = iter.next() else {
        return Err(MergeError("no profiles to merge".into()));
    };
    let rest: Vec<Profile> = iter.collect();
    if rest.is_empty() {
        return Ok(first);
    }
    let shared: Vec<crate::model::ValueType> = first
        .sample_types
        .iter()
        .filter(|t| rest.iter().all(|p| p.sample_types.contains(t)))
        .cloned()
        .collect();
    if shared.is_empty() {
        let show = |p: &Profile| {
            p.sample_types
                .iter()
                .map(|t| format!("{}/{}", t.kind, t.unit))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let other = rest
            .iter()
            .find(|p| p.sample_types != first.sample_types)
            .unwrap_or(&rest[0]);
        return Err(MergeError(format!(
            "cannot sum profiles with no sample type in common: [{}] and [{}]",
            show(&first),
            show(other)
        )));
    }
    check_sum(&first, &rest, &shared)?;
    let default_sample_type = if shared.iter().any(|t| t.kind == first.default_sample_type) {
        first.default_sample_type.clone()
    } else {
        String::new()
    };
    let mut out = Profile {
        sample_types: shared,
        default_sample_type,
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
    for mut p in std::iter::once(first).chain(rest) {
        if p.sample_types != out.sample_types {
            keep_types(&mut p, &out.sample_types);
        }
        out.duration_nanos = out.duration_nanos.saturating_add(p.duration_nanos);
        if p.time_nanos != 0 && (out.time_nanos == 0 || p.time_nanos < out.time_nanos) {
            out.time_nanos = p.time_nanos;
        }
        for comment in &p.comments {
            if !out.comments.contains(comment) {
                out.comments.push(comment.clone());
            }
        }
        merger.add(&mut out, p);
    }
    out.sort_mappings();
    out.merge_samples();
    Ok(out)
}

/// Refuses to sum profiles whose values of one shared sample type add up
/// (in absolute value, over all of them) beyond `i64::MAX`, as reading one
/// such profile is refused: every total of the sum would be wrong. (A
/// base is summed negated, so a diff is checked the same way.)
fn check_sum(
    first: &Profile,
    rest: &[Profile],
    shared: &[crate::model::ValueType],
) -> Result<(), MergeError> {
    for t in shared {
        let mut total: i128 = 0;
        for p in std::iter::once(first).chain(rest) {
            let Some(column) = p.sample_types.iter().position(|u| u == t) else {
                continue;
            };
            total += p
                .samples
                .iter()
                .filter_map(|s| s.values.get(column))
                .map(|&v| i128::from(v).abs())
                .sum::<i128>();
        }
        if total > i128::from(i64::MAX) {
            return Err(MergeError(format!(
                "the {} values of the {} profiles add up to {total}, beyond 2^63: \
                 not real profiles",
                t.kind,
                1 + rest.len()
            )));
        }
    }
    Ok(())
}

/// Keeps only the values of `types` (all of which `p` has) in `p`'s
/// samples, in that order.
fn keep_types(p: &mut Profile, types: &[crate::model::ValueType]) {
    let columns: Vec<usize> = types
        .iter()
        .filter_map(|t| p.sample_types.iter().position(|u| u == t))
        .collect();
    for sample in &mut p.samples {
        sample.values = columns
            .iter()
            .map(|&c| sample.values.get(c).copied().unwrap_or(0))
            .collect();
    }
    p.sample_types = types.to_vec();
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
    fn refuses_sums_beyond_i64() {
        // Sample counts n, cpu 10n: each profile alone is fine.
        let n = (1i64 << 62) / 10 + 1;
        assert!(merge(vec![one(&[1], n / 2), one(&[2], n / 2)]).is_ok());
        let err = merge(vec![one(&[1], n), one(&[2], n)]).unwrap_err();
        assert_eq!(
            err.0,
            format!(
                "the cpu values of the 2 profiles add up to {}, beyond 2^63: not real profiles",
                20 * i128::from(n)
            )
        );
        // A base is summed negated: a diff is checked in absolute value.
        let err = merge(vec![one(&[1], n), one(&[1], -n)]).unwrap_err();
        assert!(err.0.contains("beyond 2^63"), "{err}");
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
    fn keeps_the_shared_sample_types() {
        // [samples/count, cpu/nanoseconds] + [cpu/bytes, samples/count]:
        // only samples/count is common.
        let mut other = one(&[1], 2);
        other.sample_types[1].unit = "bytes".into();
        other.sample_types.swap(0, 1);
        for s in &mut other.samples {
            s.values.swap(0, 1);
        }
        let p = merge(vec![one(&[1], 1), other]).unwrap();
        assert_eq!(p.sample_types.len(), 1);
        assert_eq!(p.sample_types[0].kind, "samples");
        assert_eq!(p.totals(), vec![3]);
    }

    #[test]
    fn refuses_profiles_with_no_sample_type_in_common() {
        let mut other = one(&[1], 1);
        for t in &mut other.sample_types {
            t.unit = "bytes".into();
        }
        let e = merge(vec![one(&[1], 1), other]).unwrap_err();
        assert!(e.0.contains("no sample type in common"), "{e}");
    }
}
