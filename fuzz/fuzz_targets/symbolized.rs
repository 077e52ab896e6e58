//! The symbolized raw profile reader must return a profile or an error,
//! never panic; what it writes must read back to the same stacks.
#![no_main]
use cpuprof_profile::symbolized;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = symbolized::read(data) {
        assert!(p.validate().is_ok());
        let mut out = Vec::new();
        symbolized::write(&p, "fuzz", &mut out).unwrap();
        let q = symbolized::read(&out).expect("our own output reads back");
        assert!(q.validate().is_ok());
        // In i128: counts up to i64::MAX each must not overflow the check.
        let total = |p: &cpuprof_profile::Profile| -> i128 {
            p.samples
                .iter()
                .map(|s| i128::from(s.values[0].max(0)))
                .sum()
        };
        assert_eq!(total(&q), total(&p));
    }
});
