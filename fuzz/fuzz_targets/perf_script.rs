//! The `perf script` text reader must return a profile or a one-line
//! error with an offset inside the input, never panic.
#![no_main]
use cpuprof_profile::perf_script;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = perf_script::sniff(data);
    match perf_script::read(data) {
        Ok(p) => assert!(p.validate().is_ok()),
        Err(e) => {
            assert!(e.offset as usize <= data.len());
            assert!(!e.message.contains('\n'));
        }
    }
});
