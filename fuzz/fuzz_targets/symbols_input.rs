//! The `--symbols` address-list reader must return a list or a one-line
//! error, never panic; the addresses it returns, written back, read the
//! same.
#![no_main]
use cpuprof_profile::addresses;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match addresses::parse(text) {
        Ok(list) => {
            let written: Vec<String> = list.addresses.iter().map(|a| format!("{a:#x}")).collect();
            let again = addresses::parse(&written.join(" ")).expect("our own list reads back");
            assert_eq!(again.addresses, list.addresses);
        }
        Err(e) => assert!(!e.contains('\n')),
    }
});
