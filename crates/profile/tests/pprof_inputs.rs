//! Reading what pprof reads, and writing what Go pprof shows:
//! - the mapping-list layouts of pprof's legacy parser attach addresses;
//! - summing profiles keeps the sample types they share (Go pprof's fetch);
//! - inputs that are no known format say which, in one line;
//! - profile.proto carries the short name in `Function.name`, nothing of
//!   ours in its comments, and still round-trips the model.

use std::io::Write;

use cpuprof_profile::gperftools::{parse_mapping_line, parse_maps_line};
use cpuprof_profile::model::{cpu_sample_types, ProfileBuilder};
use cpuprof_profile::{merge::merge, proto, read_profile, Function, Mapping, Profile, ValueType};
use proptest::prelude::*;
use prost::Message;

/// A 64-bit little-endian gperftools profile with one sample of `pcs` and
/// `maps` as its mapping list.
fn gperftools_file(pcs: &[u64], maps: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut put = |v: u64| out.extend_from_slice(&v.to_le_bytes());
    for v in [0, 3, 0, 10_000, 0] {
        put(v);
    }
    put(1);
    put(pcs.len() as u64);
    for &pc in pcs {
        put(pc);
    }
    for v in [0, 1, 0] {
        put(v);
    }
    out.extend_from_slice(maps.as_bytes());
    out
}

#[test]
fn every_mapping_layout_of_pprof_attaches_addresses() {
    for maps in [
        "00400000-00500000 r-xp 00000000 08:01 42 /bin/prog\n",
        "0x400000-0x500000: /bin/prog (@0)\n",
        "400000-500000 /bin/prog\n",
        "0x400000 0x500000 /bin/prog\n",
        "400000-500000 00000000 08:01 42 /bin/prog\n",
        "0x400000-0x500000 r-xp /bin/prog (@0) 0123abcd\n",
        // Issue 23: a deleted file, and map lines behind glog prefixes.
        "  00400000-00500000: /bin/prog (deleted)\n",
        "W1220 15:07:15.201776    8272 logger.cc:12033] --- Memory map: ---\nW1220 15:07:15.202776    8272 logger.cc:12036]   0x400000-0x500000 /bin/prog      (@0)            abc123456\n",
    ] {
        let data = gperftools_file(&[0x400123, 0x400456], maps);
        let (_, p) = read_profile(&data, &Default::default()).unwrap();
        assert_eq!(p.mappings.len(), 1, "{maps}");
        assert_eq!(p.mappings[0].path, "/bin/prog", "{maps}");
        assert!(
            p.locations.iter().all(|l| l.mapping.is_some()),
            "{maps}: addresses attached"
        );
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

#[test]
fn unknown_inputs_say_what_they_are_in_one_line() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            gzip(b"goroutine 1 [running]:\nmain.main()\n"),
            "Go goroutine dump (debug=2), gzip-compressed",
        ),
        (
            b"goroutine 1 [running]:\nmain.main()\n".to_vec(),
            "Go goroutine dump (debug=2)",
        ),
        (
            b"Total: 205 samples\n  97  47.3%  47.3%  97  47.3% f\n".to_vec(),
            "text report",
        ),
        (gzip(b""), "gzip stream holds no data"),
        (b"\x1f\x8b\x08".to_vec(), "gzip stream is damaged"),
    ];
    for (data, expected) in cases {
        let e = read_profile(&data, &Default::default()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(expected), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.starts_with("collapsed"), "{text}");
    }
    // Collapsed stacks with a bad second line stay collapsed stacks.
    let e = read_profile(b"main;a 1\nmain;b x\n", &Default::default()).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

#[test]
fn gzip_streams_are_read_in_the_format_they_hold() {
    let data = gperftools_file(
        &[0x400123],
        "400000-500000 r-xp 00000000 08:01 42 /bin/prog\n",
    );
    let (_, plain) = read_profile(&data, &Default::default()).unwrap();
    let (_, zipped) = read_profile(&gzip(&data), &Default::default()).unwrap();
    assert_eq!(plain, zipped);
    let (_, folded) = read_profile(&gzip(b"main;f 3\n"), &Default::default()).unwrap();
    assert_eq!(folded.totals(), vec![3]);
}

fn named_profile() -> Profile {
    let mut b = ProfileBuilder::new(cpu_sample_types());
    let f = b.function(Function {
        name: "std::vector<int, std::allocator<int> >::push_back(int const&)".into(),
        system_name: "_ZNSt6vectorIiSaIiEE9push_backERKi".into(),
        filename: "v.cc".into(),
        start_line: 3,
    });
    let g = b.function(Function {
        name: "runtime.(*bmap).overflow".into(),
        system_name: "runtime.(*bmap).overflow".into(),
        ..Function::default()
    });
    let l = b.location_at(0x1000);
    let m = b.location_at(0x2000);
    let mut p = b.finish();
    p.locations[l.index()].lines.push(cpuprof_profile::Line {
        function: f,
        line: 4,
        column: 0,
    });
    p.locations[m.index()].lines.push(cpuprof_profile::Line {
        function: g,
        line: 9,
        column: 0,
    });
    p.mappings.push(Mapping {
        start: 0,
        limit: 0x10000,
        path: "/bin/prog".into(),
        perms: "r-xp".into(),
        ..Mapping::default()
    });
    for loc in &mut p.locations {
        loc.mapping = Some(cpuprof_profile::MappingId(0));
    }
    p.samples.push(cpuprof_profile::Sample {
        locations: vec![l, m],
        values: vec![1, 10],
        labels: vec![],
    });
    p
}

#[test]
fn proto_names_are_pprof_s_and_nothing_of_ours_is_a_comment() {
    let p = named_profile();
    let mut raw = Vec::new();
    proto::write_raw(&p, &mut raw).unwrap();
    let wire = proto::wire::Profile::decode(&raw[..]).unwrap();
    let s = |i: i64| wire.string_table[i as usize].clone();
    let names: Vec<(String, String)> = wire
        .function
        .iter()
        .map(|f| (s(f.name), s(f.system_name)))
        .collect();
    assert_eq!(
        names,
        vec![
            (
                "std::vector::push_back".to_string(),
                "_ZNSt6vectorIiSaIiEE9push_backERKi".to_string()
            ),
            (
                "runtime.(*bmap).overflow".to_string(),
                "runtime.(*bmap).overflow".to_string()
            ),
        ]
    );
    assert!(wire.comment.is_empty());
    assert!(!wire.string_table.iter().any(|t| t.contains("cpuprof")));
    // Our reader gets the whole model back, full names and permissions.
    assert_eq!(proto::read(&raw).unwrap(), p);
}

#[test]
fn permissions_in_the_old_comment_are_still_read() {
    let p = named_profile();
    let mut wire = proto::to_wire(&p);
    wire.mapping[0].perms.clear();
    wire.string_table.push("cpuprof:mapping-perms r-xp".into());
    wire.comment.push(wire.string_table.len() as i64 - 1);
    let read = proto::read(&wire.encode_to_vec()).unwrap();
    assert_eq!(read.mappings[0].perms, "r-xp");
    assert!(read.comments.is_empty());
}

fn types() -> Vec<ValueType> {
    vec![
        ValueType::new("samples", "count"),
        ValueType::new("cpu", "nanoseconds"),
        ValueType::new("alloc", "bytes"),
        ValueType::new("wall", "nanoseconds"),
    ]
}

proptest! {
    /// Any subsets of sample types: the sum keeps those all share (in the
    /// first profile's order) with each one's total summed, or refuses
    /// when they share none.
    #[test]
    fn sums_keep_the_shared_sample_types(
        masks in prop::collection::vec(1u8..16, 2..5),
        counts in prop::collection::vec(1i64..1000, 4),
    ) {
        let all = types();
        let profiles: Vec<Profile> = masks.iter().map(|&mask| {
            let kinds: Vec<ValueType> = all.iter().enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0).map(|(_, t)| t.clone()).collect();
            let values: Vec<i64> = all.iter().enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0).map(|(i, _)| counts[i]).collect();
            let mut b = ProfileBuilder::new(kinds);
            let l = b.location_at(0x10);
            b.add_sample(vec![l], values);
            b.finish()
        }).collect();
        let shared = masks.iter().fold(15u8, |a, &m| a & m);
        match merge(profiles) {
            Ok(p) => {
                prop_assert!(shared != 0);
                let expected: Vec<ValueType> = all.iter().enumerate()
                    .filter(|(i, _)| shared & (1 << i) != 0).map(|(_, t)| t.clone()).collect();
                prop_assert_eq!(&p.sample_types, &expected);
                let totals: Vec<i64> = all.iter().enumerate()
                    .filter(|(i, _)| shared & (1 << i) != 0)
                    .map(|(i, _)| counts[i] * masks.len() as i64).collect();
                prop_assert_eq!(p.totals(), totals);
                prop_assert!(p.validate().is_ok());
            }
            Err(e) => {
                prop_assert_eq!(shared, 0);
                prop_assert!(e.0.contains("no sample type in common"));
            }
        }
    }

    /// Brief mapping lines read back what they were written from; no
    /// line makes the parser panic, and a /proc/maps line reads the same
    /// through either parser.
    #[test]
    fn brief_mapping_lines_read_back(
        start in 0u64..u64::MAX / 2, size in 1u64..1 << 40, offset in 0u64..1 << 40,
        path in "/[a-z]{1,8}(/[a-z0-9._-]{1,8}){0,3}", prefix in any::<bool>(),
        colon in any::<bool>(),
    ) {
        let p = if prefix { "0x" } else { "" };
        let line = format!(
            "{p}{start:x}-{p}{:x}{} {path} (@{offset:x})",
            start + size,
            if colon { ":" } else { "" }
        );
        let m = parse_mapping_line(&line).unwrap();
        prop_assert_eq!((m.start, m.limit, m.offset), (start, start + size, offset));
        prop_assert_eq!(m.path, path);
    }

    #[test]
    fn mapping_lines_never_panic(line in "\\PC{0,80}") {
        let a = parse_mapping_line(&line);
        if let Some(b) = parse_maps_line(&line) {
            prop_assert_eq!(a, Some(b));
        }
    }
}
