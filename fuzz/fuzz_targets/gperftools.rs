//! The gperftools CPU profile reader must return a profile or an error,
//! never panic; what it reads must write and read back.
#![no_main]
use cpuprof_profile::gperftools;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = gperftools::read(data) {
        assert!(p.validate().is_ok());
        let mut out = Vec::new();
        gperftools::write(&p, &mut out).unwrap();
        gperftools::read(&out).expect("our own output reads back");
    }
});
