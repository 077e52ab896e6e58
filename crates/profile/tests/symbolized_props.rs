//! Property tests of the symbolized raw profile: any profile of named
//! (possibly inlined) and unnamed addresses, written and read back, has
//! the same stacks of names and the same counts; and arbitrary bytes after
//! a symbol marker give a profile or an error, never a panic.

use std::collections::BTreeMap;

use cpuprof_profile::{
    cpu_sample_types, symbolized, Function, Line, Profile, ProfileBuilder, ValueType,
};
use proptest::prelude::*;

/// A function name as pprof writes them: no `--`, no line breaks, not
/// empty, not an address.
fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_:<> ,()*&]{0,24}".prop_filter("no --", |n| !n.contains("--"))
}

/// Per address: its inline chain (outermost last), empty = unsymbolized.
fn symbols() -> impl Strategy<Value = Vec<(u64, Vec<String>)>> {
    prop::collection::btree_map(
        1u64..0x7fff_ffff_ffff,
        prop::collection::vec(name(), 0..3),
        1..12,
    )
    .prop_map(|m| m.into_iter().collect())
}

fn profile_of(
    symbols: &[(u64, Vec<String>)],
    stacks: &[(Vec<usize>, i64)],
    period_us: i64,
) -> Profile {
    let mut b = ProfileBuilder::new(cpu_sample_types());
    b.profile.period = period_us * 1000;
    b.profile.period_type = ValueType::new("cpu", "nanoseconds");
    let locations: Vec<_> = symbols.iter().map(|(a, _)| b.location_at(*a)).collect();
    for ((_, chain), &l) in symbols.iter().zip(&locations) {
        let lines: Vec<Line> = chain
            .iter()
            .map(|n| Line {
                function: b.function(Function {
                    name: n.clone(),
                    ..Function::default()
                }),
                ..Line::default()
            })
            .collect();
        b.profile.locations[l.index()].lines = lines;
    }
    for (stack, count) in stacks {
        let locs = stack
            .iter()
            .map(|&i| locations[i % locations.len()])
            .collect();
        b.add_sample(locs, vec![*count, count * period_us * 1000]);
    }
    b.finish()
}

/// Stacks as names (the address for unsymbolized locations), summed.
fn named(p: &Profile) -> BTreeMap<Vec<String>, i64> {
    let mut out = BTreeMap::new();
    for s in &p.samples {
        *out.entry(p.stack_names(s)).or_insert(0) += s.values[0];
    }
    out
}

proptest! {
    #[test]
    fn write_then_read_keeps_named_stacks(
        symbols in symbols(),
        stacks in prop::collection::vec(
            (prop::collection::vec(0usize..64, 1..6), 1i64..1000),
            1..20,
        ),
        period_us in 1i64..100_000,
    ) {
        let p = profile_of(&symbols, &stacks, period_us);
        let mut out = Vec::new();
        symbolized::write(&p, "./prog", &mut out).unwrap();
        prop_assert!(symbolized::sniff(&out));
        let (format, q) = cpuprof_profile::read_profile(&out, &Default::default()).unwrap();
        prop_assert_eq!(format, cpuprof_profile::Format::Symbolized);
        q.validate().unwrap();
        prop_assert_eq!(named(&q), named(&p));
        prop_assert_eq!(q.period, p.period);
        // And again: the same bytes.
        let mut again = Vec::new();
        symbolized::write(&q, "./prog", &mut again).unwrap();
        prop_assert_eq!(again, out);
    }

    #[test]
    fn arbitrary_sections_never_panic(
        symbol_text in "[-0-9a-fx \\n=%a-z]{0,200}",
        tail in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut data = b"--- symbol\n".to_vec();
        data.extend_from_slice(symbol_text.as_bytes());
        data.extend_from_slice(b"\n---\n--- profile\n");
        data.extend_from_slice(&tail);
        if let Ok(p) = symbolized::read(&data) {
            p.validate().unwrap();
        }
    }
}
