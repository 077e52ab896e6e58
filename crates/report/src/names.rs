//! How reports print names and addresses, as pprof prints them.

/// An address as pprof prints an unsymbolized one: `0x` and 16 hex digits.
pub fn address(address: u64) -> String {
    format!("0x{address:016x}")
}

/// pprof's default display of a demangled name: argument lists and
/// template parameters removed.
pub fn short_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth_paren = 0usize;
    let mut depth_angle = 0usize;
    for c in name.chars() {
        match c {
            '(' => depth_paren += 1,
            ')' => depth_paren = depth_paren.saturating_sub(1),
            '<' if depth_paren == 0 => depth_angle += 1,
            '>' if depth_paren == 0 => depth_angle = depth_angle.saturating_sub(1),
            _ if depth_paren == 0 && depth_angle == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim_end_matches(" const").trim().to_string()
}
