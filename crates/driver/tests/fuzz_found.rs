//! Regression tests for what `scripts/fuzz` found in the driver's
//! parsers, each named after what it caught; the input is the fuzzer's.

use cpuprof_driver::Config;

/// `web_query`: a URL's `g=%022%0A...` put a line break into the 400
/// page's message, which echoes the value.
#[test]
fn query_value_with_a_line_break_gives_a_one_line_error() {
    let query = "g=\u{2}2\n\0\0\0]\n\r\n";
    let e = Config::from_query(query).unwrap_err().to_string();
    assert_eq!(
        e,
        "granularity=\\u{2}2\\n\\u{0}\\u{0}\\u{0}]: expected one of functions, lines, addresses, files"
    );
    // The same through a regex and a number.
    for query in ["f=a%0A(", "n=1%0A2"] {
        let e = Config::from_query(query).unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains("\\n"), "{e}");
    }
}
