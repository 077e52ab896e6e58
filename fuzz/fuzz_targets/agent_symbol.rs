//! The agent's `/pprof/symbol` request (`CPUPROFILE_HTTP`: a POST body or
//! a GET query from any local process) → the addresses to name: any bytes
//! give a list, never a panic; never more addresses than words; the list,
//! sent back as pprof sends it (`0xA+0xB`), reads back the same.
//!
//! The parser's module is compiled in by path, as in `agent_http`.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/agent/src/http.rs"]
#[allow(dead_code)]
mod http;

fuzz_target!(|data: &[u8]| {
    let addresses = http::symbol_addresses(data);
    let words = String::from_utf8_lossy(data)
        .split(|c: char| c == '+' || c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .count();
    assert!(addresses.len() <= words);
    let sent: Vec<String> = addresses.iter().map(|a| format!("{a:#x}")).collect();
    assert_eq!(http::symbol_addresses(sent.join("+").as_bytes()), addresses);
    // The GET form (`/pprof/symbol?A+B`, which the endpoint also answers),
    // with bare hex words.
    let query: Vec<String> = addresses.iter().map(|a| format!("{a:x}")).collect();
    assert_eq!(
        http::symbol_addresses(query.join("+").as_bytes()),
        addresses
    );
});
