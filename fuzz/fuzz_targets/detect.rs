//! Format detection plus every reader behind it: any input gives a
//! profile or an error, never a panic.
#![no_main]
use cpuprof_profile::{read_profile, ReadOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((_, p)) = read_profile(data, &ReadOptions::default()) {
        assert!(p.validate().is_ok());
    }
});
