//! The agent's HTTP request parser (`CPUPROFILE_HTTP`) takes bytes from
//! any local process: any input must give a request, a wait for more, or
//! a refusal with a 4xx status, never a panic; a request lies within the
//! input and the bounds; a refusal never turns into a request when more
//! bytes arrive; the Host check and query lookup accept any text.
//!
//! The parser's module is compiled in by path rather than through the
//! `cpuprof` crate: that crate interposes `pthread_create`, which would
//! replace the sanitizer's own interceptor in this binary.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/agent/src/http.rs"]
#[allow(dead_code)]
mod http;

use http::{RequestError, MAX_BODY, MAX_HEAD};

fuzz_target!(|data: &[u8]| {
    match http::parse_head(data) {
        Ok(Some(request)) => {
            assert!(request.head_len <= data.len() && request.head_len <= MAX_HEAD);
            assert!(request.content_length <= MAX_BODY);
            assert!(request.path.starts_with('/'));
            let _ = http::query_param(&request.query, "seconds");
            if let Some(host) = &request.host {
                let _ = http::is_loopback_host(host);
            }
            // More bytes after a complete head change nothing.
            let mut longer = data.to_vec();
            longer.extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
            assert_eq!(http::parse_head(&longer), Ok(Some(request)));
        }
        Ok(None) => assert!(data.len() <= MAX_HEAD),
        Err(e) => {
            assert!((400..500).contains(&e.status()));
            let _ = e.to_string();
            if !matches!(e, RequestError::LineTooLong | RequestError::HeadTooLarge) {
                let mut longer = data.to_vec();
                longer.extend_from_slice(b"\r\n\r\n");
                assert!(http::parse_head(&longer).is_err());
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = http::is_loopback_host(text);
        let _ = http::query_param(text, "hz");
    }
});
