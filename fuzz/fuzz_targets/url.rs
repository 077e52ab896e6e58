//! URL sources and symbol-server answers: `Url::parse` never panics, and
//! a URL it accepts prints to a string that parses back to the same URL;
//! `parse_symbols` never panics on any answer.
#![no_main]
use cpuprof_driver::fetch::{parse_symbols, Url};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(url) = Url::parse(text) {
        let printed = url.to_string();
        assert_eq!(Url::parse(&printed).as_ref(), Some(&url), "{printed}");
        let _ = url.with_param("seconds", "5");
    }
    let mut names = Default::default();
    parse_symbols(text, &mut names);
});
