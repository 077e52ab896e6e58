//! The readers of pprof's legacy text profiles (heap, growth, contention,
//! Go count, threadz) must return a valid profile or a one-line error naming a
//! line, never panic; detection must send the input to the same reader.
#![no_main]
use cpuprof_profile::{contention, gocount, heap, read_profile, threadz, ParseError, Profile};
use libfuzzer_sys::fuzz_target;

fn check(result: Result<Profile, ParseError>) {
    match result {
        Ok(p) => assert!(p.validate().is_ok()),
        Err(e) => {
            assert!(!e.message.contains('\n'), "{e}");
            assert!(
                e.message.contains("line ") || e.message.starts_with("empty"),
                "{e}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(heap::read(data));
    check(contention::read(data));
    check(gocount::read(data));
    check(threadz::read(data));
    let _ = read_profile(data, &Default::default());
});
