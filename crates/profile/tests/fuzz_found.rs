//! Regression tests for what `scripts/fuzz` found in the readers, each
//! named after what it caught.

use cpuprof_profile::{read_profile, Format, ReadOptions};

/// The one-line error `data` is refused with.
fn refusal(data: &[u8]) -> String {
    read_profile(data, &ReadOptions::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("{} bytes read as a profile", data.len()))
}

/// A 64-bit gperftools CPU profile: header (0, 3, 0, period 10000 µs, 0),
/// one record per `(count, pc)`, the trailer (0, 1, 0), no mappings.
fn gperftools_profile(records: &[(u64, u64)]) -> Vec<u8> {
    let mut words: Vec<u64> = vec![0, 3, 0, 10_000, 0];
    for &(count, pc) in records {
        words.extend([count, 1, pc]);
    }
    words.extend([0, 1, 0]);
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `symbolized`: counts near 2^63 read as they are, and every report's
/// totals wrapped into negative shares (`Total: 9223372036854775807`,
/// cum -9223372036854775754 at 100%); in a build with overflow checks,
/// a panic. Such a profile is refused in one line.
#[test]
fn sample_counts_summing_beyond_i64_are_refused() {
    let big = 0x6000_0000_0000_0000;
    let data = gperftools_profile(&[(big, 0x401000), (big, 0x401010)]);
    assert_eq!(
        refusal(&data),
        "gperftools CPU profile: offset 0: the samples values add up to 13835058055282163712, beyond 2^63: not a real profile"
    );
    // Less is a (strange) profile: 8e11 samples, 8e18 ns of CPU time.
    let count = 400_000_000_000;
    let data = gperftools_profile(&[(count, 0x401000), (count, 0x401010)]);
    let (format, profile) = read_profile(&data, &ReadOptions::default()).unwrap();
    assert_eq!(format, Format::Gperftools);
    let total: i64 = profile.samples.iter().map(|s| s.values[1]).sum();
    assert_eq!(total, 8_000_000_000_000_000_000);
}

/// `perf_data` (records read in place, stop 31): a sample whose callchain
/// count is 2^61 or more made `linux-perf-event-reader` multiply it by 8
/// unchecked (a panic with overflow checks; a wrapped, wrong length
/// without). The count is checked against the record first. The file is
/// the fuzzer's input: a `--call-graph dwarf` recording of `ls` with the
/// first sample's callchain count overwritten.
#[test]
fn callchain_counts_beyond_their_record_are_refused() {
    let data = include_bytes!("data/perf-callchain-count-overflow.data");
    assert_eq!(
        refusal(data),
        "perf.data: offset 632: SAMPLE record: its callchain is longer than the record: corrupt file"
    );
}

/// The build-id table read from the header alone (what the driver starts
/// reading debug information from while the records are read) lists what
/// `perf buildid-list` lists for the file, the kernel's entry left out:
/// here ld.so and the vDSO of a recording of `ls`.
#[test]
fn build_id_table_lists_what_perf_buildid_list_lists() {
    let data = include_bytes!("../../../fuzz/seeds/perf_data/callgraph-dwarf.data");
    let table = cpuprof_profile::perf::build_id_table(data);
    assert_eq!(
        table,
        vec![
            (
                "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2".to_string(),
                "7ebc65e52f2bbea498b4040fa92f7238377aaba9".to_string()
            ),
            (
                "[vdso]".to_string(),
                "e025128345ce65b719dab776555f2b64ee0204a1".to_string()
            ),
        ]
    );
    // Pipe mode has no table; neither has what is not perf.data.
    assert!(cpuprof_profile::perf::build_id_table(b"PERFILE2\x10\0\0\0\0\0\0\0").is_empty());
    assert!(cpuprof_profile::perf::build_id_table(b"not a profile").is_empty());
}

/// `perf_data`, pipe mode: a HEADER_FEATURE record whose 64-bit feature
/// id is 12 (event descriptions) in its low half only: the parser keeps
/// `id as u32` and read the descriptions, whose count asked for 251 GB;
/// the check that bounds that count compared the whole id and never ran.
#[test]
fn event_descriptions_under_an_id_with_high_bits_are_checked() {
    let data = include_bytes!("data/perf-event-desc-id-high-bits.data");
    assert_eq!(
        refusal(data),
        "perf.data: offset 1556: event descriptions: counts larger than the section: corrupt file"
    );
}

/// `perf_data`: a file-mode header whose data section's offset and size
/// put the feature table near the end of the address space: reading the
/// build-id table's entry there added past `usize::MAX` (a panic with
/// overflow checks). Such a header gives an empty table (and the reader
/// refuses the file).
#[test]
fn a_feature_table_beyond_the_address_space_gives_no_build_ids() {
    let mut data = include_bytes!("../../../fuzz/seeds/perf_data/callgraph-g.data").to_vec();
    // Data section: offset 2^64 - 24, size 0: the feature table there.
    data[40..48].copy_from_slice(&(u64::MAX - 23).to_le_bytes());
    data[48..56].copy_from_slice(&0u64.to_le_bytes());
    assert!(cpuprof_profile::perf::build_id_table(&data).is_empty());
    assert!(read_profile(&data, &ReadOptions::default()).is_err());
}

/// `perf_data`: a file-mode header without event descriptions whose event
/// types section gives an event an ids section far beyond the file: the
/// parser reserved room for its ids before reading them (an allocation
/// of 1.7e18 bytes; a "capacity overflow" panic in the second file, in
/// release builds too). Each event's ids section is now checked against
/// the file, where the parser reads it: both attributes here say they are
/// 119 bytes, the parser reads 112 of them (the version below) and then
/// skips to the entry size, so the ids' {offset, size} is read at 281,
/// not at 288 where the entry size puts it.
#[test]
fn event_ids_sections_beyond_the_file_are_refused() {
    let data = include_bytes!("data/perf-event-ids-beyond-file.data");
    assert_eq!(
        refusal(data),
        "perf.data: offset 281: the event ids section (1729382256910270464 bytes at offset 0) ends past the end of the file (14967 bytes)"
    );
    let data = include_bytes!("data/perf-event-ids-after-short-attr.data");
    assert_eq!(
        refusal(data),
        "perf.data: offset 281: the event ids section (10376293541461622784 bytes at offset 72057594037927936) ends past the end of the file (635 bytes)"
    );
}

/// `perf_data`: a PERF_RECORD_AUXTRACE whose trace data (which follows the
/// record, uncounted by its size) is said to be 7.9e13 bytes: the parser
/// reserved room for it before reading (out of memory). The framing walk
/// now checks the trace data against the data section, and steps over it.
#[test]
fn auxtrace_data_beyond_the_data_section_is_refused() {
    let data = include_bytes!("data/perf-auxtrace-beyond-data.data");
    assert_eq!(
        refusal(data),
        "perf.data: offset 2304: AUXTRACE record: its 78640851208070 bytes of trace data run past the end of the data (1136 bytes left): truncated file"
    );
}

/// An unwinder that leaves every stack as it is: enough for the reader to
/// build each process's address space, which it hands to the unwinder.
#[derive(Debug)]
struct Untouched;

impl cpuprof_profile::perf::StackUnwinder for Untouched {
    fn unwind(&self, _: &mut [cpuprof_profile::perf::UnwindJob], _: &[u8]) {}
}

/// `perf_data`: a mapping at a file offset near 2^64, split by a later
/// one: the part left over got `offset + (its start - the mapping's
/// start)`, which overflowed (a panic where overflow is checked: the
/// fuzzer's build, `cargo test` without `--release`). Offsets wrap now, as
/// the file's numbers do in perf. (The panic also hung the reader: its
/// unwinding thread waited for batches for ever; a panic now ends it.)
#[test]
fn a_split_mapping_s_offset_wraps() {
    let data = include_bytes!("data/perf-split-mapping-offset-wraps.data");
    let profile = cpuprof_profile::perf::read(data, Some(&Untouched)).unwrap();
    assert_eq!(profile.samples.len(), 9);
}
