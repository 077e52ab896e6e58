//! The DCPI reader must return a profile or an error, never panic; what it
//! reads must write back byte for byte.
#![no_main]
use cpuprof_profile::dcpi;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = dcpi::read(data) {
        let mut out = Vec::new();
        dcpi::write(&p, &mut out).unwrap();
        assert_eq!(out, data);
        if let Ok(model) = dcpi::to_profile(std::slice::from_ref(&p)) {
            assert!(model.validate().is_ok());
            let _ = dcpi::from_profile(&model);
        }
    }
});
