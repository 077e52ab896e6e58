//! The HTTP/1.1 request parser of the endpoint (`CPUPROFILE_HTTP`): just
//! enough of RFC 9112 ("HTTP/1.1", sections 2-6) for one request per
//! connection, with every size bounded so that no client can make the
//! agent hold more than [`MAX_HEAD`] + [`MAX_BODY`] bytes. Pure: no I/O,
//! fuzzed (`fuzz/fuzz_targets/agent_http.rs`) and property-tested.

/// Longest request line accepted (method, target, version).
pub const MAX_REQUEST_LINE: usize = 8 * 1024;
/// Longest request head accepted (request line and header fields).
pub const MAX_HEAD: usize = 32 * 1024;
/// Most header fields accepted.
pub const MAX_HEADER_FIELDS: usize = 100;
/// Largest body accepted (a symbol lookup of some 50,000 addresses).
pub const MAX_BODY: usize = 1 << 20;

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The method, as sent (methods are case-sensitive).
    pub method: String,
    /// The path of the target, without the query.
    pub path: String,
    /// The query (after `?`), empty when there is none.
    pub query: String,
    /// The `Host` field, if sent.
    pub host: Option<String>,
    /// The body's length (`Content-Length`, 0 when absent).
    pub content_length: usize,
    /// Bytes of the head, up to and including the empty line.
    pub head_len: usize,
}

/// Why a request was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// The request line is longer than [`MAX_REQUEST_LINE`].
    LineTooLong,
    /// The head is longer than [`MAX_HEAD`] or has more than
    /// [`MAX_HEADER_FIELDS`] fields.
    HeadTooLarge,
    /// The body is longer than [`MAX_BODY`].
    BodyTooLarge(u64),
    /// A chunked (or otherwise transfer-coded) body.
    TransferCoding,
    /// Not a well-formed HTTP/1.x request.
    Malformed(&'static str),
}

impl RequestError {
    /// The status to answer with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::LineTooLong => 414,
            RequestError::HeadTooLarge => 431,
            RequestError::BodyTooLarge(_) => 413,
            RequestError::TransferCoding => 411,
            RequestError::Malformed(_) => 400,
        }
    }
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::LineTooLong => {
                write!(f, "request line longer than {MAX_REQUEST_LINE} bytes")
            }
            RequestError::HeadTooLarge => write!(
                f,
                "request head longer than {MAX_HEAD} bytes or with more than {MAX_HEADER_FIELDS} fields"
            ),
            RequestError::BodyTooLarge(n) => {
                write!(f, "body of {n} bytes is larger than {MAX_BODY} bytes")
            }
            RequestError::TransferCoding => {
                write!(f, "transfer-coded bodies are not accepted; send Content-Length")
            }
            RequestError::Malformed(why) => write!(f, "malformed request: {why}"),
        }
    }
}

/// Parses the head of the request at the start of `buf`: `Ok(None)` while
/// more bytes are needed (never once `buf` holds more than the bounds
/// allow: then an error).
pub fn parse_head(buf: &[u8]) -> Result<Option<Request>, RequestError> {
    let Some(line_end) = find_line_end(buf, 0) else {
        return if buf.len() > MAX_REQUEST_LINE {
            Err(RequestError::LineTooLong)
        } else {
            Ok(None)
        };
    };
    if line_end.0 > MAX_REQUEST_LINE {
        return Err(RequestError::LineTooLong);
    }
    let mut fields = Vec::new();
    let mut at = line_end.1;
    let head_len = loop {
        let Some((end, next)) = find_line_end(buf, at) else {
            return if buf.len() > MAX_HEAD {
                Err(RequestError::HeadTooLarge)
            } else {
                Ok(None)
            };
        };
        if next > MAX_HEAD {
            return Err(RequestError::HeadTooLarge);
        }
        if end == at {
            break next;
        }
        if fields.len() == MAX_HEADER_FIELDS {
            return Err(RequestError::HeadTooLarge);
        }
        fields.push(&buf[at..end]);
        at = next;
    };
    let mut request = parse_request_line(&buf[..line_end.0])?;
    request.head_len = head_len;
    let mut content_length: Option<u64> = None;
    for field in fields {
        let (name, value) = parse_field(field)?;
        if name.eq_ignore_ascii_case("content-length") {
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(RequestError::Malformed("Content-Length is not a number"));
            }
            let n = value.parse::<u64>().unwrap_or(u64::MAX);
            if content_length.is_some_and(|m| m != n) {
                return Err(RequestError::Malformed("conflicting Content-Length fields"));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(RequestError::TransferCoding);
        } else if name.eq_ignore_ascii_case("host") {
            if request.host.is_some() {
                return Err(RequestError::Malformed("more than one Host field"));
            }
            request.host = Some(value.to_string());
        }
    }
    let length = content_length.unwrap_or(0);
    if length > MAX_BODY as u64 {
        return Err(RequestError::BodyTooLarge(length));
    }
    request.content_length = length as usize;
    Ok(Some(request))
}

/// The end of the line starting at `from` (CRLF, or a bare LF as RFC 9112
/// section 2.2 allows a recipient to accept): (end of its text, start of
/// the next line).
fn find_line_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let rest = buf.get(from..)?;
    let lf = rest.iter().position(|&b| b == b'\n')? + from;
    let end = if lf > from && buf[lf - 1] == b'\r' {
        lf - 1
    } else {
        lf
    };
    Some((end, lf + 1))
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `method SP request-target SP HTTP-version` (RFC 9112 section 3).
fn parse_request_line(line: &[u8]) -> Result<Request, RequestError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(RequestError::Malformed(
            "the request line is not METHOD TARGET VERSION",
        ));
    };
    if method.is_empty() || !method.iter().all(|&b| is_token_byte(b)) {
        return Err(RequestError::Malformed("bad method"));
    }
    if version != b"HTTP/1.1" && version != b"HTTP/1.0" {
        return Err(RequestError::Malformed("not HTTP/1.0 or HTTP/1.1"));
    }
    // origin-form only: this is not a proxy.
    if target.first() != Some(&b'/') || !target.iter().all(|&b| b > b' ' && b < 0x7f) {
        return Err(RequestError::Malformed(
            "the target is not an absolute path",
        ));
    }
    let target = std::str::from_utf8(target).map_err(|_| RequestError::Malformed("bad target"))?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: String::from_utf8_lossy(method).into_owned(),
        path: path.to_string(),
        query: query.to_string(),
        host: None,
        content_length: 0,
        head_len: 0,
    })
}

/// `field-name ":" OWS field-value OWS` (RFC 9112 section 5).
fn parse_field(field: &[u8]) -> Result<(&str, &str), RequestError> {
    if matches!(field.first(), Some(b' ' | b'\t')) {
        return Err(RequestError::Malformed("obsolete line folding"));
    }
    let colon = field
        .iter()
        .position(|&b| b == b':')
        .ok_or(RequestError::Malformed("a header field without ':'"))?;
    let name = &field[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_token_byte(b)) {
        return Err(RequestError::Malformed("bad header field name"));
    }
    let value = &field[colon + 1..];
    if value.iter().any(|&b| b == b'\r' || b == 0) {
        return Err(RequestError::Malformed("bad header field value"));
    }
    let value = std::str::from_utf8(value)
        .map_err(|_| RequestError::Malformed("header field value is not UTF-8"))?;
    // Both are ASCII tokens or valid UTF-8 checked above.
    let name = std::str::from_utf8(name).unwrap_or_default();
    Ok((name, value.trim_matches(|c| c == ' ' || c == '\t')))
}

/// The value of `name` in a query string (`a=1&b=2`), without decoding
/// (the endpoint's parameters are plain numbers).
pub fn query_param<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// True when a `Host` field names this machine's loopback: `localhost`,
/// `127.x.x.x` or `::1`, with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, after)) if after.is_empty() || after.starts_with(':') => inside,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The addresses of a `/pprof/symbol` request (a POST body or a GET
/// query): hex words, `0x` optional, separated by `+` or blanks
/// (`0xA+0xB+…`, as both pprofs send them); a word that is not a hex
/// number is skipped.
pub fn symbol_addresses(list: &[u8]) -> Vec<u64> {
    String::from_utf8_lossy(list)
        .split(|c: char| c == '+' || c.is_ascii_whitespace())
        .filter_map(|word| {
            let hex = word
                .strip_prefix("0x")
                .or_else(|| word.strip_prefix("0X"))
                .unwrap_or(word);
            u64::from_str_radix(hex, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Option<Request>, RequestError> {
        parse_head(text.as_bytes())
    }

    /// Go pprof posts `0xA+0xB`, google-pprof the same after a GET; words
    /// that are not hex numbers (empty, signed, junk) are skipped.
    #[test]
    fn symbol_request_words() {
        assert_eq!(
            symbol_addresses(b"0x10+0X2f++40 +-5+zz\n0xffffffffffffffff+0x1ffffffffffffffff"),
            vec![0x10, 0x2f, 0x40, u64::MAX]
        );
        assert!(symbol_addresses(b"").is_empty());
    }

    #[test]
    fn parses_a_get_with_query_and_host() {
        let r = parse("GET /debug/pprof/profile?seconds=5&hz=200 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: x\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/debug/pprof/profile");
        assert_eq!(query_param(&r.query, "seconds"), Some("5"));
        assert_eq!(query_param(&r.query, "hz"), Some("200"));
        assert_eq!(query_param(&r.query, "x"), None);
        assert_eq!(r.host.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(r.content_length, 0);
    }

    #[test]
    fn parses_a_post_with_a_body_length() {
        let text = "POST /pprof/symbol HTTP/1.0\nContent-Length:  12 \n\n0x1234+0x10";
        let r = parse(text).unwrap().unwrap();
        assert_eq!(r.content_length, 12);
        assert_eq!(&text[r.head_len..], "0x1234+0x10");
    }

    #[test]
    fn waits_for_the_whole_head() {
        assert_eq!(parse("GET / HTTP/1.1\r\nHost: a\r\n"), Ok(None));
        assert_eq!(parse("GE"), Ok(None));
    }

    #[test]
    fn refuses_what_is_too_large_or_malformed() {
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_REQUEST_LINE));
        assert_eq!(parse(&long), Err(RequestError::LineTooLong));
        assert_eq!(
            parse_head(&vec![b'a'; MAX_REQUEST_LINE + 1]),
            Err(RequestError::LineTooLong)
        );
        let many = format!("GET / HTTP/1.1\r\n{}\r\n", "X: y\r\n".repeat(101));
        assert_eq!(parse(&many), Err(RequestError::HeadTooLarge));
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n", "y".repeat(MAX_HEAD));
        assert_eq!(parse(&big), Err(RequestError::HeadTooLarge));
        assert_eq!(
            parse("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"),
            Err(RequestError::BodyTooLarge(2_000_000))
        );
        assert_eq!(
            parse("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n")
                .unwrap_err()
                .status(),
            413
        );
        assert_eq!(
            parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(RequestError::TransferCoding)
        );
        for bad in [
            "GET\r\n\r\n",
            "GET / HTTP/2\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET / HTTP/1.1\r\n folded: x\r\n\r\n",
            "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(parse(bad).unwrap_err().status(), 400, "{bad:?}");
        }
    }

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST:80",
            "127.0.0.1",
            "127.0.0.1:6060",
            "127.1.2.3",
            "[::1]",
            "[::1]:6060",
            "localhost.",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:6060",
            "10.0.0.1:80",
            "[::2]:1",
            "localhost.evil.example",
            "127.0.0.1:x",
            "[::1]x",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    proptest! {
        /// Any bytes: no panic; a parsed head lies within the input and
        /// the bounds.
        #[test]
        fn never_panics_and_respects_bounds(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            if let Ok(Some(r)) = parse_head(&bytes) {
                prop_assert!(r.head_len <= bytes.len());
                prop_assert!(r.head_len <= MAX_HEAD);
                prop_assert!(r.content_length <= MAX_BODY);
            }
        }

        /// A request arriving in pieces parses the same once complete,
        /// and never as complete before.
        #[test]
        fn split_delivery_is_the_same(
            path in "/[a-z/]{0,40}",
            query in "[a-z0-9=&]{0,20}",
            fields in proptest::collection::vec(("[A-Za-z-]{1,12}", "[ -~]{0,30}"), 0..8),
            cut in 0usize..400,
        ) {
            let mut text = format!("GET {path}?{query} HTTP/1.1\r\n");
            for (name, value) in &fields {
                if name.eq_ignore_ascii_case("content-length")
                    || name.eq_ignore_ascii_case("transfer-encoding")
                    || name.eq_ignore_ascii_case("host") {
                    continue;
                }
                text.push_str(&format!("{name}: {value}\r\n"));
            }
            text.push_str("\r\n");
            let whole = parse_head(text.as_bytes()).unwrap().unwrap();
            prop_assert_eq!(&whole.path, &path);
            prop_assert_eq!(&whole.query, &query);
            prop_assert_eq!(whole.head_len, text.len());
            let cut = cut.min(text.len() - 1);
            prop_assert_eq!(parse_head(&text.as_bytes()[..cut]), Ok(None));
        }

        /// Oversized input is refused, never left waiting for more.
        #[test]
        fn oversized_input_is_an_error(filler in any::<u8>(), extra in 1usize..64) {
            let bytes = vec![filler; MAX_HEAD + extra];
            prop_assert!(parse_head(&bytes).is_err());
        }
    }
}
