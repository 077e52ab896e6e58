//! The collapsed-stacks reader must return a profile or an error, never
//! panic; what it writes must read back.
#![no_main]
use cpuprof_profile::collapsed;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = collapsed::read(data) {
        assert!(p.validate().is_ok());
        let mut out = Vec::new();
        collapsed::write(&p, 0, &mut out).unwrap();
        if !out.is_empty() {
            collapsed::read(&out).expect("our own output reads back");
        }
    }
});
