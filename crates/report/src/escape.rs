//! Text escaped for the formats the outputs write into: JSON string
//! literals (the `--json` report, the data of the flame graph's page).

use std::fmt::Write as _;

/// Appends `text` as a JSON string literal. `in_script`: also escapes
/// `<`, `>`, `&` and the line separators U+2028/U+2029, so that the
/// literal can sit inside an HTML `<script>` element (the flame page)
/// without closing it or breaking the script.
pub fn push_json_string(s: &mut String, text: &str, in_script: bool) {
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if in_script => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}
