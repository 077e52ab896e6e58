//! Arbitrary bytes as an ELF file: open it as a `Binary` and look up
//! addresses (symbols, segments, the entry point, code, line tables, a
//! mapping). Corrupt headers must give an `Err`, corrupt symbols or DWARF
//! a missing answer or a warning; never a panic, a hang or an abort.
#![no_main]

use std::path::Path;

use cpuprof_profile::Mapping;
use cpuprof_symbolize::{demangle, Binary, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = Options {
        // No separate debug files: the input alone is under test.
        debug_dirs: Vec::new(),
        ..Options::default()
    };
    let Ok(binary) = Binary::parse(
        Path::new("/nonexistent/fuzz-input"),
        data.to_vec(),
        &options,
    ) else {
        return;
    };
    let _ = binary.build_id();
    let _ = binary.kind();
    let mut probes: Vec<u64> = vec![binary.entry(), 0, u64::MAX];
    for symbol in binary.symbols().iter().take(32) {
        probes.push(symbol.address);
        probes.push(symbol.address.wrapping_add(symbol.size / 2));
        let _ = symbol.demangled();
        let _ = demangle::short_name(symbol.demangled());
        let _ = demangle::perl_short_name(symbol.demangled());
    }
    for segment in binary.segments().iter().take(8) {
        probes.push(segment.address);
        probes.push(segment.address.wrapping_add(segment.file_size / 2));
        let mapping = Mapping {
            start: 0x5555_0000_0000,
            limit: 0x5555_0000_0000u64.wrapping_add(segment.memory_size.min(1 << 30) + 0x1000),
            offset: segment.file_offset & !0xfff,
            perms: "r-xp".into(),
            ..Mapping::default()
        };
        let _ = binary.can_map(&mapping);
        if let Some(file_address) = binary.runtime_to_file(&mapping, mapping.start + 0x10) {
            probes.push(file_address);
            let _ = binary.file_to_runtime(&mapping, file_address);
        }
    }
    for &address in probes.iter().take(64) {
        for frame in binary.frames(address) {
            let _ = demangle::short_name(&frame.function);
        }
        let _ = binary.code(address, 16);
        let _ = binary.symbol_at(address);
    }
    if let Some(&first) = probes.get(3) {
        let _ = binary.line_table(first..first.saturating_add(4096));
    }
    let _ = binary.warnings();
});
