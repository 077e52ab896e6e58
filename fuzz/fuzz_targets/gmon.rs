//! The gmon.out reader (every layout, inferred or given) must return a
//! file or an error, never panic; what it reads must round-trip.
#![no_main]
use cpuprof_profile::{gmon, Target};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let given = data.first().map(|b| Target {
        pointer_size: if b & 1 == 0 { 8 } else { 4 },
        big_endian: b & 2 != 0,
    });
    for target in [None, given] {
        if let Ok(f) = gmon::read(data, target) {
            let p = gmon::to_profile(&f, Some(&[0, 0x40, 0x41, 0x1000]));
            assert!(p.validate().is_ok());
            let _ = gmon::from_profile(&p);
            if matches!(f.kind, gmon::GmonKind::Gnu { .. }) {
                let mut out = Vec::new();
                gmon::write(&f, &mut out).unwrap();
                let back = gmon::read(&out, Some(f.target)).expect("our own output reads back");
                assert_eq!(back.histograms, f.histograms);
                assert_eq!(back.arcs, f.arcs);
            }
        }
    }
});
