//! The gperftools CPU profile reader must return a profile or an error,
//! never panic; what it reads must write and read back. Every line of the
//! input also goes through the mapping-list parser (all of pprof's
//! layouts), which must never panic nor give an inverted range.
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
    for line in String::from_utf8_lossy(data).lines() {
        if let Some(m) = gperftools::parse_mapping_line(line) {
            assert!(m.start <= m.limit);
        }
    }
});
