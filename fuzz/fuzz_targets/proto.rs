//! The profile.proto reader (gzip or raw) must return a profile or an
//! error, never panic; what it reads must round-trip.
#![no_main]
use cpuprof_profile::proto;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = proto::read(data) {
        assert!(p.validate().is_ok());
        let mut out = Vec::new();
        proto::write_raw(&p, &mut out).unwrap();
        assert_eq!(proto::read(&out).expect("our own output reads back"), p);
    }
});
