//! Random profiles for the round-trip property tests of every format.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::model::*;

fn name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_:<>]{0,12}"
}

/// Any valid profile: mappings, functions, locations with inline chains,
/// samples with labels, and the metadata.
pub fn any_profile() -> impl Strategy<Value = Profile> {
    let types = vec(("[a-z]{1,8}", "[a-z]{1,8}"), 1..4);
    (types, 0usize..4, 0usize..6, 1usize..12).prop_flat_map(|(types, nmap, nfun, nloc)| {
        let ntypes = types.len();
        let mappings = vec(
            (
                0u64..1 << 40,
                1u64..1 << 20,
                0u64..1 << 20,
                name(),
                "[0-9a-f]{0,8}",
                prop_oneof![
                    Just(String::new()),
                    Just("r-xp".to_string()),
                    Just("r--p".to_string())
                ],
                any::<[bool; 4]>(),
            ),
            nmap,
        );
        let functions = vec((name(), name(), name(), 0i64..1000), nfun);
        let locations = vec(
            (
                1u64..1 << 44,
                0usize..nmap.max(1) + 1,
                vec((0usize..nfun.max(1), 0i64..500, 0i64..80), 0..3),
                any::<bool>(),
            ),
            nloc,
        );
        let samples = vec(
            (
                vec(0usize..nloc, 1..6),
                vec(-5i64..1_000_000, ntypes),
                vec(
                    (
                        name(),
                        prop_oneof![
                            name().prop_map(LabelValue::Str),
                            (any::<i64>(), name()).prop_map(|(value, unit)| LabelValue::Num {
                                value,
                                unit: unit.into()
                            })
                        ],
                    ),
                    0..2,
                ),
            ),
            0..10,
        );
        let meta = (
            0i64..1 << 40,
            0i64..1 << 40,
            0i64..1 << 30,
            vec("[ -~]{0,20}", 0..3),
            name(),
            name(),
        );
        (Just(types), mappings, functions, locations, samples, meta).prop_map(
            move |(types, mappings, functions, locations, samples, meta)| {
                let mut p = Profile {
                    sample_types: types.iter().map(|(k, u)| ValueType::new(k, u)).collect(),
                    ..Profile::default()
                };
                p.default_sample_type = p.sample_types[0].kind.clone();
                for (start, len, offset, path, build_id, perms, flags) in mappings {
                    p.mappings.push(Mapping {
                        start,
                        limit: start + len,
                        offset,
                        path,
                        build_id,
                        perms,
                        has_functions: flags[0],
                        has_filenames: flags[1],
                        has_line_numbers: flags[2],
                        has_inline_frames: flags[3],
                    });
                }
                p.sort_mappings();
                for (name, system_name, filename, start_line) in functions {
                    p.functions.push(Function {
                        name,
                        system_name,
                        filename,
                        start_line,
                    });
                }
                for (address, m, lines, is_folded) in locations {
                    p.locations.push(Location {
                        address,
                        mapping: (m < p.mappings.len()).then(|| MappingId::from_index(m)),
                        lines: if p.functions.is_empty() {
                            Vec::new()
                        } else {
                            lines
                                .into_iter()
                                .map(|(f, line, column)| Line {
                                    function: FunctionId::from_index(f),
                                    line,
                                    column,
                                })
                                .collect()
                        },
                        is_folded,
                    });
                }
                for (locs, values, labels) in samples {
                    p.samples.push(Sample {
                        locations: locs.into_iter().map(LocationId::from_index).collect(),
                        values,
                        labels: labels
                            .into_iter()
                            .map(|(key, value)| Label {
                                key: key.into(),
                                value,
                            })
                            .collect(),
                    });
                }
                p.time_nanos = meta.0;
                p.duration_nanos = meta.1;
                p.period = meta.2;
                p.period_type = ValueType::new(&meta.4, &meta.5);
                p.comments = meta.3;
                p
            },
        )
    })
}
