//! How reports print names and addresses, as pprof prints them.

/// An address as pprof prints an unsymbolized one: `0x` and 16 hex digits.
pub fn address(address: u64) -> String {
    format!("0x{address:016x}")
}

/// pprof's default display of a demangled name: argument lists and
/// template parameters removed, Go names kept whole with their receivers
/// (`runtime.(*bmap).overflow`); the rules of
/// `cpuprof_profile::names::short_name`, shared by every output and by the
/// profile.proto writer.
pub fn short_name(name: &str) -> String {
    cpuprof_symbolize::demangle::short_name(name)
}
