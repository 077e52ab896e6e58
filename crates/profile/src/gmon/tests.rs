use super::*;

const LE64: Target = Target {
    pointer_size: 8,
    big_endian: false,
};
const LE32: Target = Target {
    pointer_size: 4,
    big_endian: false,
};
const BE32: Target = Target {
    pointer_size: 4,
    big_endian: true,
};
const BE64: Target = Target {
    pointer_size: 8,
    big_endian: true,
};

/// Builds files field by field in one layout.
struct Bytes {
    t: Target,
    buf: Vec<u8>,
}

impl Bytes {
    fn gnu(t: Target) -> Bytes {
        let mut b = Bytes { t, buf: Vec::new() };
        b.buf.extend_from_slice(b"gmon");
        b.u32(1);
        b.buf.extend_from_slice(&[0; 12]);
        b
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        put_u16(&mut self.buf, self.t, v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        put_u32(&mut self.buf, self.t, v);
        self
    }
    fn ptr(&mut self, v: u64) -> &mut Self {
        put_pointer(&mut self.buf, self.t, v);
        self
    }
    fn hist(&mut self, low: u64, high: u64, bins: &[u16]) -> &mut Self {
        self.buf.push(0);
        self.ptr(low).ptr(high).u32(bins.len() as u32).u32(100);
        let mut d = [0u8; 15];
        d[..7].copy_from_slice(b"seconds");
        self.buf.extend_from_slice(&d);
        self.buf.push(b's');
        for &b in bins {
            self.u16(b);
        }
        self
    }
    fn arc(&mut self, from: u64, to: u64, count: u32) -> &mut Self {
        self.buf.push(1);
        self.ptr(from).ptr(to).u32(count)
    }
    fn bbs(&mut self, entries: &[(u64, u64)]) -> &mut Self {
        self.buf.push(2);
        self.u32(entries.len() as u32);
        for &(a, c) in entries {
            self.ptr(a).ptr(c);
        }
        self
    }
}

#[test]
fn reads_all_three_record_types_in_every_layout() {
    for t in [LE64, LE32, BE64, BE32] {
        let mut b = Bytes::gnu(t);
        b.hist(0x1000, 0x1010, &[1, 0, 2, 0, 0, 0, 0, 7])
            .arc(0x1004, 0x100a, 5)
            .bbs(&[(0x1002, 9), (0x1006, 1)])
            .arc(0x1004, 0x100a, 2);
        // Inferred layout.
        let f = read(&b.buf, None).unwrap();
        assert_eq!(f.target, t, "inferred {t:?}");
        assert_eq!(f.kind, GmonKind::Gnu { version: 1 });
        assert_eq!(f.histograms.len(), 1);
        assert_eq!(f.histograms[0].bins, vec![1, 0, 2, 0, 0, 0, 0, 7]);
        assert_eq!(f.histograms[0].prof_rate, 100);
        assert_eq!(f.histograms[0].dimension, "seconds");
        assert_eq!(
            f.arcs,
            vec![CallArc {
                from_pc: 0x1004,
                self_pc: 0x100a,
                count: 7
            }]
        );
        assert_eq!(f.basic_blocks.len(), 2);
        assert_eq!(f.basic_blocks[0].count, 9);
        // Given layout.
        assert_eq!(read(&b.buf, Some(t)).unwrap(), f);
    }
}

#[test]
fn arcs_sit_at_odd_offsets_without_padding() {
    let mut b = Bytes::gnu(LE64);
    b.arc(1, 2, 3).arc(4, 5, 6);
    assert_eq!(b.buf.len(), 20 + 2 * 21);
    let f = read(&b.buf, Some(LE64)).unwrap();
    assert_eq!(f.arcs[1].from_pc, 4);
}

#[test]
fn wrong_layout_for_the_binary_is_an_error_at_the_end() {
    let mut b = Bytes::gnu(LE64);
    b.arc(1, 2, 3);
    // 21 bytes of arc read as 32-bit arcs (13 bytes): 8 left over, not a tag.
    let e = read(&b.buf, Some(LE32)).unwrap_err();
    assert!(e.offset >= 20, "{e}");
}

#[test]
fn same_range_histograms_are_summed_past_u16() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[65535, 1, 0, 0])
        .hist(0x1000, 0x1008, &[65535, 2, 0, 0]);
    let f = read(&b.buf, None).unwrap();
    assert_eq!(f.histograms.len(), 1);
    assert_eq!(f.histograms[0].bins, vec![131070, 3, 0, 0]);
    // Written back as two records of the same range; reading sums them.
    let mut out = Vec::new();
    write(&f, &mut out).unwrap();
    let again = read(&out, None).unwrap();
    assert_eq!(again.histograms, f.histograms);
    let records = out.len() - 20;
    assert_eq!(records, 2 * (1 + 8 + 8 + 4 + 4 + 16 + 8));
}

#[test]
fn arc_counts_past_u32_are_summed_and_split_on_write() {
    let mut b = Bytes::gnu(LE32);
    b.arc(0x10, 0x20, u32::MAX)
        .arc(0x10, 0x20, u32::MAX)
        .arc(0x10, 0x20, 3);
    let f = read(&b.buf, Some(LE32)).unwrap();
    assert_eq!(f.arcs[0].count, 2 * u64::from(u32::MAX) + 3);
    let mut out = Vec::new();
    write(&f, &mut out).unwrap();
    assert_eq!(out.len(), 20 + 3 * 13);
    assert_eq!(read(&out, Some(LE32)).unwrap().arcs, f.arcs);
}

#[test]
fn disjoint_histograms_need_equal_scales_and_partial_overlap_is_refused() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[1, 2, 3, 4])
        .hist(0x2000, 0x2008, &[5, 6, 7, 8]);
    let f = read(&b.buf, None).unwrap();
    assert_eq!(f.histograms.len(), 2);

    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[1, 2, 3, 4])
        .hist(0x2000, 0x2010, &[5, 6, 7, 8]);
    let e = read(&b.buf, Some(LE64)).unwrap_err();
    assert!(e.message.contains("scale"), "{e}");
    assert_eq!(e.offset, 20 + 1 + 8 + 8 + 4 + 4 + 16 + 8);

    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[1, 2, 3, 4])
        .hist(0x1004, 0x100c, &[5, 6, 7, 8]);
    let e = read(&b.buf, Some(LE64)).unwrap_err();
    assert!(e.message.contains("partially overlaps"), "{e}");
    assert_eq!(e.offset, 20 + 1 + 8 + 8 + 4 + 4 + 16 + 8);
}

#[test]
fn every_truncation_point_is_an_error_naming_its_offset() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[1, 2, 3, 4])
        .arc(1, 2, 3)
        .bbs(&[(5, 6)]);
    let full = b.buf.clone();
    assert!(read(&full, Some(LE64)).is_ok());
    for len in 0..full.len() {
        let cut = &full[..len];
        // A cut right after a whole record is a valid shorter file.
        let boundaries = [20, 20 + 49, 20 + 49 + 21];
        match read(cut, Some(LE64)) {
            Ok(_) => assert!(boundaries.contains(&len), "cut at {len} parsed"),
            Err(e) => {
                assert!(!boundaries.contains(&len), "cut at {len}: {e}");
                assert!(e.offset <= len as u64, "cut at {len}: {e}");
                assert!(
                    e.message.contains("expected") || e.message.contains("empty"),
                    "cut at {len}: {e}"
                );
            }
        }
        // Inferred layouts must fail or parse too, never panic.
        let _ = read(cut, None);
    }
}

#[test]
fn bad_tag_and_version_are_reported() {
    let mut b = Bytes::gnu(LE64);
    b.buf.push(7);
    let e = read(&b.buf, Some(LE64)).unwrap_err();
    assert_eq!(e.offset, 20);
    assert!(e.message.contains("record tag 7"), "{e}");
    let mut b = Bytes::gnu(LE64);
    b.buf[4] = 9;
    let e = read(&b.buf, Some(LE64)).unwrap_err();
    assert_eq!(e.offset, 4);
}

#[test]
fn zero_bin_histogram_is_refused() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[]);
    let e = read(&b.buf, Some(LE64)).unwrap_err();
    assert!(e.message.contains("0 bins"), "{e}");
}

fn bsd44(t: Target, low: u64, high: u64, bins: &[u16], arcs: &[(u64, u64, u64)]) -> Vec<u8> {
    let mut b = Bytes { t, buf: Vec::new() };
    let header = if t.pointer_size == 8 { 40 } else { 32 };
    b.ptr(low).ptr(high).u32((header + 2 * bins.len()) as u32);
    b.u32(BSD44_VERSION).u32(1000).u32(0).u32(0).u32(0);
    while b.buf.len() < header {
        b.buf.push(0);
    }
    for &x in bins {
        b.u16(x);
    }
    for &(f, s, c) in arcs {
        b.ptr(f).ptr(s).ptr(c);
    }
    b.buf
}

fn old_bsd(t: Target, low: u64, high: u64, bins: &[u16], arcs: &[(u64, u64, u64)]) -> Vec<u8> {
    let mut b = Bytes { t, buf: Vec::new() };
    let header = if t.pointer_size == 8 { 20 } else { 12 };
    b.ptr(low).ptr(high).u32((header + 2 * bins.len()) as u32);
    for &x in bins {
        b.u16(x);
    }
    for &(f, s, c) in arcs {
        b.ptr(f).ptr(s).ptr(c);
    }
    b.buf
}

#[test]
fn reads_bsd44_and_old_bsd_in_every_layout() {
    for t in [LE64, LE32, BE64, BE32] {
        let data = bsd44(t, 0x400, 0x408, &[3, 0, 1, 9], &[(0x402, 0x406, 1 << 33)]);
        let f = read(&data, None).unwrap();
        assert_eq!(f.kind, GmonKind::Bsd44, "{t:?}");
        assert_eq!(f.target, t);
        assert_eq!(f.histograms[0].bins, vec![3, 0, 1, 9]);
        assert_eq!(f.histograms[0].prof_rate, 1000);
        let want = if t.pointer_size == 8 { 1 << 33 } else { 0 };
        assert_eq!(f.arcs[0].count, want);
        assert!(sniff_bsd(&data, None));

        let data = old_bsd(t, 0x400, 0x408, &[3, 0, 1, 9], &[(0x402, 0x406, 4)]);
        let f = read(&data, Some(t)).unwrap();
        assert_eq!(f.kind, GmonKind::OldBsd, "{t:?}");
        assert_eq!(f.histograms[0].bins, vec![3, 0, 1, 9]);
        assert_eq!(f.histograms[0].prof_rate, 100);
        assert_eq!(f.arcs[0].count, 4);
    }
}

#[test]
fn bsd_truncations_are_errors() {
    let data = bsd44(LE64, 0x400, 0x408, &[3, 0, 1, 9], &[(0x402, 0x406, 2)]);
    for len in 0..data.len() {
        if len == 48 {
            continue; // header + bins, no arcs: a valid file
        }
        let e = read(&data[..len], Some(LE64)).unwrap_err();
        assert!(e.offset <= len as u64, "cut at {len}: {e}");
    }
}

#[test]
fn bins_are_attributed_like_gprof_with_a_fractional_scale() {
    // 3 units over 2 bins: scale 1.5; bin 0 covers units [0,1), bin 1
    // covers [1,3) (2 units).
    let h = Histogram {
        low_pc: 0,
        high_pc: 6,
        prof_rate: 100,
        dimension: "seconds".into(),
        dimension_abbrev: b's',
        bins: vec![10, 30],
    };
    assert_eq!(h.bin_units(0), (0, 1));
    assert_eq!(h.bin_units(1), (1, 3));
    let mut f = GmonFile::new(LE64);
    f.histograms.push(h);
    // Symbols at 0 and 4 (unit 2): bin 1 is split 1 unit / 1 unit.
    let p = to_profile(&f, Some(&[0, 4]));
    let by_addr: Vec<(u64, i64, i64)> = p
        .samples
        .iter()
        .filter(|s| s.values[0] > 0)
        .map(|s| (p.location(s.locations[0]).address, s.values[0], s.values[1]))
        .collect();
    // Credits: bin0 -> sym0: 1*10/1.5 = 6.667; bin1 -> sym0 1*30/1.5=20,
    // sym1 20. Time at 100 Hz: credit * 10 ms.
    assert_eq!(
        by_addr,
        vec![
            (0, 10, 66_666_667),
            (2, 15, 200_000_000),
            (4, 15, 200_000_000)
        ]
    );
    // The counts still sum to the bins'.
    assert_eq!(p.totals()[0], 40);
}

#[test]
fn profile_round_trip_keeps_bins_arcs_and_blocks() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1010, &[1, 0, 2, 0, 0, 0, 0, 7])
        .arc(0x1004, 0x100a, 5)
        .bbs(&[(0x1002, 9)]);
    let f = read(&b.buf, None).unwrap();
    let p = to_profile(&f, Some(&[0x1000, 0x1003, 0x100c]));
    let (back, notes) = from_profile(&p);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(back.histograms, f.histograms);
    assert_eq!(back.arcs, f.arcs);
    assert_eq!(back.basic_blocks, f.basic_blocks);
}

#[test]
fn stacks_into_gmon_say_what_is_dropped() {
    let mut pb = ProfileBuilder::new(crate::model::cpu_sample_types());
    pb.profile.period = 10_000_000;
    pb.profile.period_type = ValueType::new("cpu", "nanoseconds");
    let a = pb.location_at(0x1000);
    let c = pb.location_at(0x2000);
    pb.add_sample(vec![a, c], vec![3, 30_000_000]);
    pb.add_sample(vec![c], vec![1, 10_000_000]);
    let p = pb.finish();
    let (f, notes) = from_profile(&p);
    assert_eq!(f.histograms.len(), 1);
    assert_eq!(f.histograms[0].prof_rate, 100);
    let h = &f.histograms[0];
    assert_eq!(h.bins[h.bin_of(0x1000).unwrap()], 3);
    assert_eq!(h.bins[h.bin_of(0x2000).unwrap()], 1);
    // Samples, not records: the one record with a stack holds 3.
    assert!(
        notes.iter().any(|n| n.contains("call stacks of 3 samples")),
        "{notes:?}"
    );
}

#[test]
fn merge_sums_like_gprof_s() {
    let mut b = Bytes::gnu(LE64);
    b.hist(0x1000, 0x1008, &[1, 2, 3, 4]).arc(1, 2, 3);
    let mut f = read(&b.buf, None).unwrap();
    let g = f.clone();
    f.merge(g).unwrap();
    assert_eq!(f.histograms[0].bins, vec![2, 4, 6, 8]);
    assert_eq!(f.arcs[0].count, 6);
}

mod properties {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn any_target() -> impl Strategy<Value = Target> {
        (any::<bool>(), any::<bool>()).prop_map(|(w, e)| Target {
            pointer_size: if w { 8 } else { 4 },
            big_endian: e,
        })
    }

    /// Any GNU-format file: disjoint histograms of one scale with bins
    /// past u16, arcs past u32, basic blocks.
    fn any_gmon() -> impl Strategy<Value = GmonFile> {
        (
            any_target(),
            1u64..4,
            vec((0u64..1000, vec(0u64..200_000, 1..20)), 0..3),
            vec((0u64..1 << 20, 0u64..1 << 20, 1u64..1 << 34), 0..6),
            vec((0u64..1 << 20, 1u64..1 << 20), 0..4),
        )
            .prop_map(|(target, scale, hists, arcs, blocks)| {
                let mut f = GmonFile::new(target);
                let mut next = 0x1000u64;
                for (gap, bins) in hists {
                    let low = next + gap * 2;
                    let high = low + bins.len() as u64 * scale * 2;
                    next = high;
                    f.histograms.push(Histogram {
                        low_pc: low,
                        high_pc: high,
                        prof_rate: 100,
                        dimension: "seconds".into(),
                        dimension_abbrev: b's',
                        bins,
                    });
                }
                let mask = if target.pointer_size == 4 {
                    0xffff_ffff
                } else {
                    u64::MAX
                };
                let mut t = ArcTable::default();
                for (a, b, c) in arcs {
                    t.add(a & mask, b & mask, c);
                }
                f.arcs = t.arcs;
                let mut bt = BlockTable::default();
                for (a, c) in blocks {
                    bt.add(a, c);
                }
                f.basic_blocks = bt.blocks;
                f
            })
    }

    proptest! {
        #[test]
        fn write_then_read_gives_the_same_file(f in any_gmon()) {
            let mut out = Vec::new();
            write(&f, &mut out).unwrap();
            prop_assert_eq!(&read(&out, Some(f.target)).unwrap(), &f);
        }

        #[test]
        fn model_round_trip_keeps_the_file(f in any_gmon()) {
            let p = to_profile(&f, None);
            prop_assert!(p.validate().is_ok());
            let (back, notes) = from_profile(&p);
            prop_assert!(notes.is_empty(), "{:?}", notes);
            prop_assert_eq!(&back.histograms, &f.histograms);
            prop_assert_eq!(&back.arcs, &f.arcs);
            // The blocks' order carries nothing (gprof sums per address),
            // and the model does not keep it: a block at the address of a
            // histogram sample merges into that earlier sample.
            let by_address = |blocks: &[BasicBlockCount]| {
                let mut v = blocks.to_vec();
                v.sort_by_key(|b| b.address);
                v
            };
            prop_assert_eq!(by_address(&back.basic_blocks), by_address(&f.basic_blocks));
            let mut out = Vec::new();
            write(&back, &mut out).unwrap();
            let again = to_profile(&read(&out, Some(back.target)).unwrap(), None);
            prop_assert_eq!(again, p);
        }
    }
}

/// Found by fuzzing: a dimension that is not UTF-8 must survive a write.
#[test]
fn any_dimension_bytes_round_trip() {
    let mut b = Bytes::gnu(LE64);
    b.buf.push(0);
    b.ptr(0).ptr(8).u32(4).u32(100);
    b.buf
        .extend_from_slice(b"W\xff\xfe\x80seconds\0\x01\x02\x03");
    b.buf.push(0xad);
    for x in [1u16, 2, 3, 4] {
        b.u16(x);
    }
    let f = read(&b.buf, None).unwrap();
    assert_eq!(f.histograms[0].dimension.chars().count(), 11);
    let mut out = Vec::new();
    write(&f, &mut out).unwrap();
    assert_eq!(read(&out, None).unwrap(), f);
    let p = to_profile(&f, None);
    let (back, _) = from_profile(&p);
    assert_eq!(back.histograms, f.histograms);
}
