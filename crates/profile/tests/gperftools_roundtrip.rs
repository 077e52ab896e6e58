//! Property tests: any gperftools CPU profile, read → written → read again,
//! gives the same model, in all four layouts (32/64-bit, little/big endian).

use cpuprof_profile::gperftools::{self, Endian, Layout, Width};
use cpuprof_profile::Profile;
use proptest::prelude::*;

fn put(layout: Layout, out: &mut Vec<u8>, v: u64) {
    match (layout.width, layout.endian) {
        (Width::W64, Endian::Little) => out.extend_from_slice(&v.to_le_bytes()),
        (Width::W64, Endian::Big) => out.extend_from_slice(&v.to_be_bytes()),
        (Width::W32, Endian::Little) => out.extend_from_slice(&(v as u32).to_le_bytes()),
        (Width::W32, Endian::Big) => out.extend_from_slice(&(v as u32).to_be_bytes()),
    }
}

/// A raw file: header, the records, trailer, maps lines.
fn file(layout: Layout, period: u64, records: &[(u64, Vec<u64>)], maps: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in [0, 3, 0, period, 0] {
        put(layout, &mut out, v);
    }
    for (count, pcs) in records {
        put(layout, &mut out, *count);
        put(layout, &mut out, pcs.len() as u64);
        for &pc in pcs {
            put(layout, &mut out, pc);
        }
    }
    for v in [0, 1, 0] {
        put(layout, &mut out, v);
    }
    for m in maps {
        out.extend_from_slice(m.as_bytes());
        out.push(b'\n');
    }
    out
}

fn layouts() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout {
            width: Width::W64,
            endian: Endian::Little
        }),
        Just(Layout {
            width: Width::W64,
            endian: Endian::Big
        }),
        Just(Layout {
            width: Width::W32,
            endian: Endian::Little
        }),
        Just(Layout {
            width: Width::W32,
            endian: Endian::Big
        }),
    ]
}

fn records(max_pc: u64) -> impl Strategy<Value = Vec<(u64, Vec<u64>)>> {
    // A small PC alphabet so that stacks repeat and merge.
    let pc = prop_oneof![2..64u64, 0x1000..max_pc];
    prop::collection::vec((1..1000u64, prop::collection::vec(pc, 1..12)), 0..40)
}

fn maps() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            0u64..0xffff,
            1u64..0xff,
            0u64..0xffff,
            "[rwx-]{3}[ps]",
            "(/[a-z0-9_.]{1,8}){1,3}",
        ),
        0..5,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (start, len, offset, perms, path))| {
                let start = (i as u64) << 32 | start << 12;
                format!(
                    "{start:x}-{:x} {perms} {:08x} 08:01 1234 {path}",
                    start + (len << 12),
                    offset << 12
                )
            })
            .collect()
    })
}

fn written(p: &Profile, layout: Layout) -> Vec<u8> {
    let mut out = Vec::new();
    gperftools::write_with_layout(p, layout, &mut out).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn read_write_read_is_identity(
        layout in layouts(),
        period in 1u64..1_000_000,
        recs in records(0xffff_fff0),
        maps in maps(),
    ) {
        let data = file(layout, period, &recs, &maps);
        let first = gperftools::read(&data).unwrap();
        // Counts of identical stacks are summed.
        let total: u64 = recs.iter().map(|r| r.0).sum();
        prop_assert_eq!(first.totals()[0] as u64, total);
        let again = gperftools::read(&written(&first, layout)).unwrap();
        prop_assert_eq!(&first, &again);
        // And a native write of a foreign layout reads back the same too.
        let native = gperftools::read(&written(&first, Layout::native())).unwrap();
        prop_assert_eq!(&first, &native);
    }

    #[test]
    fn any_bytes_are_an_error_or_a_profile(data in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = gperftools::read(&data);
    }

    #[test]
    fn every_truncation_is_an_error(recs in records(0xffff_fff0), cut in 0usize..10_000) {
        let layout = Layout::native();
        let data = file(layout, 10_000, &recs, &[]);
        let cut = cut % data.len();
        let e = gperftools::read(&data[..cut]);
        prop_assert!(e.is_err(), "truncated at {} of {} bytes read fine", cut, data.len());
        prop_assert!(e.unwrap_err().offset <= cut as u64);
    }
}
