//! The web UI's requests (`cpuprof report --http`): a request target's
//! query string becomes the view's settings (`Config::with_query` over
//! the command line's, as `App::handle` does), and `--http`'s
//! `[HOST]:[PORT]` an address. Any text: never a panic; a refusal is one
//! line (it is the 400 page); accepted settings written back as a query
//! (`Config::to_query`, the page's links) read back to the same settings;
//! a decoded query component, encoded again, decodes to itself.
#![no_main]
use cpuprof_driver::settings::{query_pairs, url_decode, url_encode};
use cpuprof_driver::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The target as App::handle splits it.
    let query = text.split_once('?').map_or(text, |(_, q)| q);
    let base = Config::default();
    match Config::with_query(&base, query) {
        Ok(config) => {
            let link = config.to_query(&base);
            let again = Config::with_query(&base, &link).expect("our own link reads back");
            assert_eq!(again, config, "{link}");
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
    for (key, value) in query_pairs(query) {
        for component in [key, value] {
            assert_eq!(url_decode(&url_encode(&component)), component);
        }
    }
    if let Ok((host, _port)) = cpuprof_web::parse_http_address(text) {
        assert!(!host.is_empty());
    }
});
