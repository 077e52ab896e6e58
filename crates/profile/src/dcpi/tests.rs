use super::*;

/// A profile written by hand from dcpiformat(4)'s grammar: required keys
/// in a shuffled order, optional keys, unknown lines, tabs as separators,
/// a padded terminator, two chunks and the footer.
fn hand_written() -> Vec<u8> {
    let header = "version pdb-0.07\n\
                  image\t7a3f\n\
                  x-collector   dcpid 3.9 (unknown line, kept)\n\
                  epoch 9706121430\n\
                  platform alpha-osf1 V4.0\n\
                  event cycles\n\
                  period 62000\n\
                  zz_note another\tunknown line\n\
                  tstart 120000000\n\
                  tsize 4096\n\
                  cpuspeed 333\n\
                  cpucount 2\n\
                  path /usr/bin/ls\n";
    let mut data = header.as_bytes().to_vec();
    data.extend_from_slice(b"samples  \t\n");
    let mut bin = Vec::new();
    let mut put = |v: u32| bin.extend_from_slice(&v.to_le_bytes());
    // chunk 1: offset 0x10, counts 5, 0, 7
    put(0x10);
    put(3);
    put(5);
    put(0);
    put(7);
    // chunk 2: offset 0x100, count 11
    put(0x100);
    put(1);
    put(11);
    // footer: 3 addresses, 23 samples
    put(3);
    put(23);
    data.extend_from_slice(&bin);
    data
}

#[test]
fn reads_the_hand_written_profile() {
    let data = hand_written();
    assert!(sniff(&data));
    let p = read(&data).unwrap();
    assert_eq!(p.version, (0, 7));
    assert_eq!(p.image, 0x7a3f);
    assert_eq!(p.epoch, "9706121430");
    assert_eq!(p.platform, "alpha-osf1 V4.0");
    assert_eq!(p.event, "cycles");
    assert_eq!(p.period, 62000);
    assert_eq!(p.tstart, 0x120000000);
    assert_eq!(p.tsize, 4096);
    assert_eq!(p.cpuspeed, 333);
    assert_eq!(p.cpucount, Some(2));
    assert_eq!(p.path.as_deref(), Some("/usr/bin/ls"));
    assert_eq!(p.header.len(), 13);
    assert_eq!(p.header[2], "x-collector   dcpid 3.9 (unknown line, kept)");
    assert_eq!(p.header[7], "zz_note another\tunknown line");
    assert_eq!(p.chunks.len(), 2);
    assert_eq!(p.totals(), (3, 23));
}

#[test]
fn rewriting_preserves_every_byte() {
    let data = hand_written();
    let p = read(&data).unwrap();
    let mut out = Vec::new();
    write(&p, &mut out).unwrap();
    assert_eq!(out, data);
    // Through the model too: header lines kept in comments come back.
    let model = to_profile(&[p]).unwrap();
    let (again, notes) = from_profile(&model);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(again.len(), 1);
    let header_end = data.windows(8).position(|w| w == b"samples ").unwrap();
    let mut out = Vec::new();
    write(&again[0], &mut out).unwrap();
    assert_eq!(
        &out[..header_end],
        &data[..header_end],
        "{}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(again[0].chunks, read(&data).unwrap().chunks);
}

#[test]
fn per_address_totals_in_the_model() {
    let p = to_profile(&[read(&hand_written()).unwrap()]).unwrap();
    assert_eq!(p.sample_types[1], ValueType::new("cpu", "nanoseconds"));
    let mut by_addr: Vec<(u64, i64)> = p
        .samples
        .iter()
        .map(|s| (p.location(s.locations[0]).address, s.values[0]))
        .collect();
    by_addr.sort();
    assert_eq!(
        by_addr,
        vec![(0x120000010, 5), (0x120000012, 7), (0x120000100, 11)]
    );
    assert_eq!(p.totals()[0], 23);
    // 62000 cycles at 333 MHz per sample.
    assert_eq!(p.period, (62000.0f64 * 1000.0 / 333.0).round() as i64);
    assert_eq!(p.mappings[0].path, "/usr/bin/ls");
    assert_eq!(
        (p.mappings[0].start, p.mappings[0].limit),
        (0x120000000, 0x120001000)
    );
}

#[test]
fn corrupt_footer_is_reported() {
    let mut data = hand_written();
    let n = data.len();
    data[n - 4..].copy_from_slice(&24u32.to_le_bytes());
    let e = read(&data).unwrap_err();
    assert_eq!(e.offset, (n - 8) as u64);
    assert!(
        e.message
            .contains("footer says 3 addresses with 24 samples"),
        "{e}"
    );
    assert!(e.message.contains("23 samples"), "{e}");
}

#[test]
fn overlapping_and_decreasing_chunks_are_reported() {
    let data = hand_written();
    let binary = data
        .windows(11)
        .position(|w| w == b"samples  \t\n")
        .unwrap()
        + 11;
    // Second chunk starting inside the first (0x10..0x13).
    let mut bad = data.clone();
    bad[binary + 20..binary + 24].copy_from_slice(&0x12u32.to_le_bytes());
    let e = read(&bad).unwrap_err();
    assert_eq!(e.offset, (binary + 20) as u64);
    assert!(e.message.contains("overlaps"), "{e}");
    // Second chunk before the first.
    bad[binary + 20..binary + 24].copy_from_slice(&0x4u32.to_le_bytes());
    assert!(read(&bad).unwrap_err().message.contains("non-overlapping"));
}

#[test]
fn header_errors_name_the_line() {
    let data = hand_written();
    let text = String::from_utf8_lossy(&data[..40]).to_string();
    let dup = [b"period 1\n".as_slice(), &data].concat();
    let e = read(&dup).unwrap_err();
    assert!(e.message.contains("second `period`"), "{e}");
    let missing = String::from_utf8_lossy(&data).replace("cpuspeed 333\n", "");
    let e = read(missing.as_bytes()).unwrap_err();
    assert!(e.message.contains("no `cpuspeed` line"), "{e}");
    let badhex = String::from_utf8_lossy(&data).replace("tstart 120000000", "tstart 12g");
    let e = read(badhex.as_bytes()).unwrap_err();
    assert!(e.message.contains("hexadecimal"), "{e}");
    assert!(e.offset > 0);
    let v1 = String::from_utf8_lossy(&data).replace("pdb-0.07", "pdb-1.01");
    assert!(read(v1.as_bytes())
        .unwrap_err()
        .message
        .contains("major version 0"));
    assert!(text.starts_with("version"));
    let e = read(b"version pdb-0.07\n").unwrap_err();
    assert!(e.message.contains("no `samples` line"), "{e}");
}

#[test]
fn every_truncation_of_the_binary_part_is_an_error() {
    let data = hand_written();
    let binary = data
        .windows(11)
        .position(|w| w == b"samples  \t\n")
        .unwrap()
        + 11;
    for len in binary..data.len() {
        let e = read(&data[..len]).unwrap_err();
        assert!(e.offset <= len as u64, "cut at {len}: {e}");
    }
}

#[test]
fn writes_one_padded_profile_per_image_from_any_profile() {
    let mut b = crate::model::ProfileBuilder::new(crate::model::cpu_sample_types());
    b.profile.mappings = vec![
        Mapping {
            start: 0x400000,
            limit: 0x401000,
            path: "/bin/app".into(),
            ..Mapping::default()
        },
        Mapping {
            start: 0x7f0000000000,
            limit: 0x7f0000010000,
            path: "/lib/libc.so.6".into(),
            ..Mapping::default()
        },
    ];
    b.profile.period = 10_000_000;
    b.profile.period_type = ValueType::new("cpu", "nanoseconds");
    let a = b.location_at(0x400010);
    let c = b.location_at(0x400011);
    let l = b.location_at(0x7f0000000100);
    b.add_sample(vec![a, l], vec![3, 30_000_000]);
    b.add_sample(vec![c], vec![2, 20_000_000]);
    b.add_sample(vec![l], vec![4, 40_000_000]);
    let p = b.finish();
    let (files, notes) = from_profile(&p);
    assert_eq!(files.len(), 2);
    assert!(
        notes.iter().any(|n| n.contains("call stacks of 1 samples")),
        "{notes:?}"
    );
    for f in &files {
        let mut out = Vec::new();
        write(f, &mut out).unwrap();
        let header_len = out
            .windows(8)
            .position(|w| w.starts_with(b"samples"))
            .unwrap();
        let binary = header_len + f.terminator.len() + 1;
        assert_eq!(binary % 4, 0, "binary part aligned");
        let back = read(&out).unwrap();
        assert_eq!(&back, f);
    }
    let app = files
        .iter()
        .find(|f| f.path.as_deref() == Some("/bin/app"))
        .unwrap();
    assert_eq!(
        app.chunks,
        vec![Chunk {
            offset: 0x10,
            counts: vec![3, 2]
        }]
    );
    // And back into the model: same leaf counts, as cpu/nanoseconds too.
    let model = to_profile(&files).unwrap();
    assert_eq!(model.totals(), vec![9, 90_000_000]);
}

#[test]
fn databases_combine_epochs_and_pick_one() {
    let dir = std::env::temp_dir().join(format!("dcpi-db-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let p = read(&hand_written()).unwrap();
    let mut later = p.clone();
    later.epoch = "9706131430".into();
    for line in &mut later.header {
        if line.starts_with("epoch") {
            *line = "epoch 9706131430".into();
        }
    }
    let files = write_database(&dir, &[p.clone(), later]).unwrap();
    assert_eq!(files.len(), 2);
    std::fs::write(dir.join("9706121430").join("README"), "not a profile").unwrap();
    let all = read_database(&dir, None).unwrap();
    assert_eq!(all.len(), 2);
    let model = to_profile(&all.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>()).unwrap();
    assert_eq!(model.totals()[0], 46);
    let one = read_database(&dir, Some("9706131430")).unwrap();
    assert_eq!(one.len(), 1);
    assert!(read_database(&dir, Some("0000000000"))
        .unwrap_err()
        .contains("no epoch"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn epoch_of_formats_utc() {
    // 2024-02-29 13:05 UTC
    assert_eq!(epoch_of(1_709_211_900 * 1_000_000_000), "2402291305");
    assert_eq!(epoch_of(0), "7001010000");
}

mod properties {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn any_dcpi() -> impl Strategy<Value = DcpiProfile> {
        (
            vec("[a-z][a-z0-9_-]{0,8}[ \t]{1,3}[!-~][ -~]{0,20}", 0..4),
            any::<u32>(),
            0u64..1 << 40,
            vec((0u32..100, vec(0u32..5000, 1..10)), 0..5),
            prop_oneof![Just("cycles"), Just("cpu"), Just("dmiss")],
        )
            .prop_map(|(unknown, image, tstart, chunks, event)| {
                let mut header = vec![
                    "version pdb-0.06".to_string(),
                    format!("image {image:x}"),
                    "epoch 9911302359".into(),
                    "platform x86_64".into(),
                    format!("event {event}"),
                    "period 1000".into(),
                    format!("tstart {tstart:x}"),
                    "tsize 100000".into(),
                    "cpuspeed 500".into(),
                ];
                // Unknown lines anywhere in the header.
                for (i, u) in unknown.into_iter().enumerate() {
                    if !u.starts_with("samples")
                        && !KNOWN
                            .iter()
                            .any(|k| u.split([' ', '\t']).next() == Some(*k))
                    {
                        header.insert((i * 3) % header.len(), u);
                    }
                }
                let mut text = header.join("\n") + "\nsamples\n";
                let mut next = 0u64;
                let mut bin = Vec::new();
                for (gap, counts) in chunks {
                    let offset = next + u64::from(gap);
                    next = offset + counts.len() as u64;
                    bin.push(Chunk {
                        offset: offset as u32,
                        counts,
                    });
                }
                let mut p =
                    read(&[std::mem::take(&mut text).into_bytes(), vec![0; 8]].concat()).unwrap();
                p.chunks = bin;
                p
            })
    }

    const KNOWN: [&str; 13] = [
        "version", "image", "epoch", "platform", "event", "period", "tstart", "tsize", "cpuspeed",
        "cpuamask", "cpuimplv", "cpucount", "path",
    ];

    proptest! {
        #[test]
        fn write_then_read_gives_the_same_profile(p in any_dcpi()) {
            let mut out = Vec::new();
            write(&p, &mut out).unwrap();
            prop_assert_eq!(&read(&out).unwrap(), &p);
        }

        #[test]
        fn model_round_trip_keeps_counts_and_header(p in any_dcpi()) {
            let model = to_profile(std::slice::from_ref(&p)).unwrap();
            prop_assert!(model.validate().is_ok());
            let (back, notes) = from_profile(&model);
            prop_assert!(notes.is_empty(), "{:?}", notes);
            let nonzero = |p: &DcpiProfile| -> Vec<(u64, u32)> {
                p.chunks.iter().flat_map(|c| c.counts.iter().enumerate().filter(|(_, n)| **n > 0).map(move |(i, n)| (u64::from(c.offset) + i as u64, *n))).collect()
            };
            if nonzero(&p).is_empty() {
                prop_assert!(back.is_empty());
            } else {
                prop_assert_eq!(back.len(), 1);
                prop_assert_eq!(&back[0].header, &p.header);
                prop_assert_eq!(nonzero(&back[0]), nonzero(&p));
            }
        }
    }
}
