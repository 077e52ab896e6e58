//! The perf.data reader (file and pipe mode) must return a profile or a
//! one-line error, never panic, for any bytes (nor may the header's
//! build-id table reader); a profile it returns is
//! consistent. Inputs that do not start with the magic get it prepended
//! (with a pipe header half the time), so that the fuzzer spends its time
//! in the records. `--call-graph dwarf` samples are unwound by the
//! symbolizer's unwinder (framehop, and gimli over every register for the
//! frames beyond it) against whatever mapped files exist here (the seeds'
//! libc and ld.so): fuzzed registers and stack bytes must not panic it.
#![no_main]
use std::sync::OnceLock;

use cpuprof_profile::perf;
use cpuprof_symbolize::unwind::DwarfUnwinder;
use libfuzzer_sys::fuzz_target;

/// One unwinder for the run, so that each file's unwind tables are read
/// once.
fn unwinder() -> &'static DwarfUnwinder {
    static UNWINDER: OnceLock<DwarfUnwinder> = OnceLock::new();
    UNWINDER.get_or_init(DwarfUnwinder::new)
}

fuzz_target!(|data: &[u8]| {
    let input;
    let bytes = if perf::sniff(data) {
        data
    } else {
        let mut v = b"PERFILE2".to_vec();
        if data.first().is_some_and(|b| b & 1 == 0) {
            v.extend_from_slice(&16u64.to_le_bytes());
        }
        v.extend_from_slice(data);
        input = v;
        &input
    };
    // The header's build-id table, read before the records (the driver
    // starts on the files' debug information with it).
    for (path, id) in perf::build_id_table(bytes) {
        assert!(id.len() <= 40 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{path} {id}");
    }
    match perf::read(bytes, Some(unwinder())) {
        Ok(p) => assert!(p.validate().is_ok()),
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
});
