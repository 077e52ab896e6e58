//! What a remote server answers the fetcher (`crates/driver/src/fetch.rs`):
//! the `/pprof/symbol` POST answer (`0x<hex> name` lines, inline chains
//! `outer--inner`), the GET probe's `num_symbols: N`, the `/pprof/cmdline`
//! body. Any bytes: never a panic; every chain is non-empty with no empty
//! or untrimmed name; the names, written back in the peers' format, read
//! back the same; the program name is one file name (no `/`, NUL, blank,
//! `.` or `..`), since it names the saved file. (The profile body itself
//! goes through `detect`, as the fetcher's check does.)
#![no_main]
use cpuprof_driver::fetch::{num_symbols, parse_symbols, program_name, SymbolNames};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut names = SymbolNames::default();
    parse_symbols(&text, &mut names);
    let mut written = String::new();
    // A name that starts or ends with `-` next to the `--` separator
    // cannot be told from it: the format's own limit, not checked.
    let mut separable = true;
    for (address, chain) in &names {
        assert!(!chain.is_empty());
        for name in chain {
            assert!(!name.is_empty() && name.trim() == name && !name.contains("--"));
            assert!(!name.contains('\n'));
            separable &= !name.starts_with('-') && !name.ends_with('-');
        }
        written.push_str(&format!("{address:#x}\t{}\n", chain.join("--")));
    }
    if separable {
        let mut again = SymbolNames::default();
        parse_symbols(&written, &mut again);
        assert_eq!(again, names);
    }
    if let Some(n) = num_symbols(data) {
        assert!(text.contains("num_symbols:"), "{n}");
    }
    if let Some(program) = program_name(data) {
        assert!(!program.is_empty() && program != "." && program != "..");
        assert!(!program.contains(['/', '\0', ' ']), "{program:?}");
    }
});
