//! The perf.data reader (file and pipe mode) must return a profile or a
//! one-line error, never panic, for any bytes; a profile it returns is
//! consistent. Inputs that do not start with the magic get it prepended
//! (with a pipe header half the time), so that the fuzzer spends its time
//! in the records.
#![no_main]
use cpuprof_profile::perf;
use libfuzzer_sys::fuzz_target;

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
    match perf::read(bytes, None) {
        Ok(p) => assert!(p.validate().is_ok()),
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
});
