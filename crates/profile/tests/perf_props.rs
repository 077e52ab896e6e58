//! Properties of the perf.data and `perf script` readers: any cut of a
//! real perf.data file, or any bytes after its magic, read to a profile
//! or a one-line error inside the input, never a panic; a cut inside the
//! data section is always an error (never a silent partial profile); and
//! `perf script` text written from arbitrary samples reads back to the
//! same samples.

use cpuprof_profile::{perf, perf_script, LabelValue};
use proptest::prelude::*;

/// A real `perf record -g` file and pipe stream (the fuzz seeds).
const FILE: &[u8] = include_bytes!("../../../fuzz/seeds/perf_data/callgraph-g.data");
const PIPE: &[u8] = include_bytes!("../../../fuzz/seeds/perf_data/callgraph-g.pipe.data");

fn data_section_end(file: &[u8]) -> usize {
    let field = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap()) as usize;
    field(40) + field(48)
}

#[test]
fn the_seeds_read() {
    let p = perf::read(FILE, None).unwrap();
    assert!(!p.samples.is_empty());
    assert_eq!(p.sample_types[0].kind, "cpu-clock");
    let q = perf::read(PIPE, None).unwrap();
    assert!(!q.samples.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn cut_files_are_refused_with_an_offset(cut in 0usize..FILE.len()) {
        let data = &FILE[..cut];
        if !perf::sniff(data) {
            return Ok(());
        }
        match perf::read(data, None) {
            Ok(p) => {
                prop_assert!(cut >= data_section_end(FILE), "a cut at {} read as {} samples", cut, p.samples.len());
                prop_assert!(p.validate().is_ok());
            }
            Err(e) => {
                prop_assert!(e.offset as usize <= FILE.len());
                prop_assert!(!e.to_string().contains('\n'));
            }
        }
    }

    #[test]
    fn cut_pipe_streams_read_whole_records_or_fail(cut in 16usize..PIPE.len()) {
        match perf::read(&PIPE[..cut], None) {
            Ok(p) => prop_assert!(p.validate().is_ok()),
            Err(e) => prop_assert!(e.offset as usize <= cut),
        }
    }

    #[test]
    fn corrupted_bytes_never_panic(at in 0usize..FILE.len(), byte in any::<u8>()) {
        let mut data = FILE.to_vec();
        data[at] = byte;
        if let Ok(p) = perf::read(&data, None) {
            prop_assert!(p.validate().is_ok());
        }
    }

    #[test]
    fn perf_script_text_reads_back(
        samples in proptest::collection::vec(
            (
                "[a-z][a-z -]{0,10}[a-z]",
                1i64..100_000,
                0i64..4,
                0i64..10_000_000,
                1i64..1_000_000,
                0usize..2,
                proptest::collection::vec(("[a-z_][a-z0-9_:]{0,12}", 0u64..0xffff_ffff), 1..6),
            ),
            1..20,
        )
    ) {
        let events = ["cpu-clock", "cycles"];
        let mut text = String::from("# a comment\n");
        for (comm, pid, cpu, time_us, period, event, frames) in &samples {
            text.push_str(&format!(
                "{comm} {pid}/{pid} [{cpu:03}] {}.{:06}: {period} {}: \n",
                time_us / 1_000_000,
                time_us % 1_000_000,
                events[*event]
            ));
            for (name, address) in frames {
                text.push_str(&format!("\t{address:16x} {name}+0x10 (/usr/lib/x.so)\n"));
            }
            text.push('\n');
        }
        prop_assert!(perf_script::sniff(text.as_bytes()));
        let p = perf_script::read(text.as_bytes()).unwrap();
        prop_assert!(p.validate().is_ok());
        let mut expected = std::collections::HashMap::<&str, i64>::new();
        for (_, _, _, _, period, event, _) in &samples {
            *expected.entry(events[*event]).or_default() += period;
        }
        for (i, t) in p.sample_types.iter().enumerate() {
            prop_assert_eq!(p.totals()[i], expected[t.kind.as_str()]);
        }
        // Every sample's stack and comm, in some sample of the profile.
        for (comm, _, _, _, _, _, frames) in &samples {
            let names: Vec<String> = frames.iter().map(|(n, _)| n.clone()).collect();
            prop_assert!(p.samples.iter().any(|s| p.stack_names(s) == names
                && s.labels.iter().any(|l| l.key == "comm" && l.value == LabelValue::Str(comm.clone()))));
        }
    }

    #[test]
    fn perf_script_reader_takes_any_text(text in "[ -~\t\n]{0,400}") {
        match perf_script::read(text.as_bytes()) {
            Ok(p) => prop_assert!(p.validate().is_ok()),
            Err(e) => prop_assert!(e.offset as usize <= text.len()),
        }
    }
}

/// Regression (fuzz target perf_data, first minute): a feature section
/// whose size is beyond the file made the parser allocate it and abort.
#[test]
fn a_feature_section_bigger_than_the_file_is_refused() {
    let mut data = FILE.to_vec();
    let end = data_section_end(FILE);
    data[end + 8..end + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = perf::read(&data, None).unwrap_err();
    assert!(e.message.contains("feature section"), "{e}");
}

/// perf now and then writes one sample twice (same thread, same time):
/// the two are one sample of twice the value, and no other sample changes.
#[test]
fn a_sample_written_twice_is_one_sample_of_twice_its_value() {
    let u64_at = |d: &[u8], o: usize| u64::from_le_bytes(d[o..o + 8].try_into().unwrap());
    let (start, size) = (u64_at(FILE, 40) as usize, u64_at(FILE, 48) as usize);
    // The first PERF_RECORD_SAMPLE (type 9) of the data section.
    let mut at = start;
    let len = loop {
        assert!(at < start + size, "the seed has no sample");
        let kind = u32::from_le_bytes(FILE[at..at + 4].try_into().unwrap());
        let len = u16::from_le_bytes(FILE[at + 6..at + 8].try_into().unwrap()) as usize;
        if kind == 9 {
            break len;
        }
        at += len;
    };
    let mut data = FILE.to_vec();
    let record = data[at..at + len].to_vec();
    data.splice(at + len..at + len, record);
    data[48..56].copy_from_slice(&((size + len) as u64).to_le_bytes());
    // The feature sections' headers follow the data: their contents moved.
    let features: u32 = data[72..104].iter().map(|b| b.count_ones()).sum();
    for i in 0..features as usize {
        let o = start + size + len + 16 * i;
        let moved = u64_at(&data, o) + len as u64;
        data[o..o + 8].copy_from_slice(&moved.to_le_bytes());
    }
    let once = perf::read(FILE, None).unwrap();
    let twice = perf::read(&data, None).unwrap();
    assert_eq!(twice.samples.len(), once.samples.len());
    let doubled: Vec<usize> = (0..once.samples.len())
        .filter(|&i| twice.samples[i].values != once.samples[i].values)
        .collect();
    // The reader orders samples by time: the copied one need not be first.
    let [i] = doubled[..] else {
        panic!("samples {doubled:?} changed, expected one");
    };
    let expected: Vec<i64> = once.samples[i].values.iter().map(|v| 2 * v).collect();
    assert_eq!(twice.samples[i].values, expected);
    assert_eq!(twice.samples[i].locations, once.samples[i].locations);
    assert_eq!(twice.samples[i].labels, once.samples[i].labels);
}
