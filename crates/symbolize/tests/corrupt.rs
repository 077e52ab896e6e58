//! Corrupt input: ELF files truncated, mutated at random, with corrupt
//! DWARF or an absurd compressed-section size. Every case gives an `Err`
//! or answers with warnings; never a panic.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::*;
use cpuprof_profile::{Location, Mapping, Profile};
use cpuprof_symbolize::{symbolize, Binary, Options};
use object::{Object, ObjectSection};
use proptest::prelude::*;

fn no_debug_dirs() -> Options {
    Options {
        debug_dirs: Vec::new(),
        ..Options::default()
    }
}

/// plugin.c built once per test process: (directory kept alive, path).
fn plugin(flags: &'static [&'static str]) -> Option<PathBuf> {
    static BUILT: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    static BUILT_GZ: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    let cell = if flags.contains(&"-gz=zlib") {
        &BUILT_GZ
    } else {
        &BUILT
    };
    cell.get_or_init(|| {
        if !require_tool("gcc") {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("plugin.so");
        let mut all = vec!["-O2", "-g", "-shared", "-fPIC"];
        all.extend_from_slice(flags);
        compile("gcc", &all, &[&workload("plugin.c")], &out);
        Some((dir, out))
    })
    .as_ref()
    .map(|(_, p)| p.clone())
}

/// Everything a report could ask of a binary.
fn exercise(binary: &Binary) {
    let _ = binary.build_id();
    let mut probes = vec![binary.entry(), 0, u64::MAX, u64::MAX - 1];
    for s in binary.symbols() {
        probes.push(s.address);
        probes.push(s.address + s.size / 2);
        let _ = s.demangled();
    }
    for s in binary.segments() {
        probes.push(s.address);
    }
    for &a in probes.iter().take(200) {
        let _ = binary.frames(a);
        let _ = binary.code(a, 32);
    }
    if let Some(&a) = probes.first() {
        let _ = binary.line_table(a..a.saturating_add(0x1000));
    }
    let _ = binary.line_table(0..u64::MAX);
    let _ = binary.line_table(u64::MAX - 1..u64::MAX);
}

#[test]
fn not_elf_and_truncated_headers_are_errors() {
    let path = Path::new("/nonexistent/input");
    let err = Binary::parse(path, b"#!/bin/sh\necho hi\n".to_vec(), &no_debug_dirs())
        .err()
        .unwrap();
    let message = err.to_string();
    assert!(
        message.starts_with("/nonexistent/input: not an ELF file"),
        "{message}"
    );
    assert!(Binary::parse(path, Vec::new(), &no_debug_dirs()).is_err());
    let Some(plugin) = plugin(&[]) else { return };
    let data = std::fs::read(&plugin).unwrap();
    // Cut inside the ELF header: the program and section headers are gone.
    for len in [4, 16, 40, 63] {
        let err = Binary::parse(path, data[..len].to_vec(), &no_debug_dirs()).err();
        assert!(err.is_some(), "a {len}-byte ELF header is refused");
        assert!(err.unwrap().to_string().contains("/nonexistent/input"));
    }
    // Binary::open on a missing file says so.
    let err = Binary::open(Path::new("/nonexistent/missing.so"), &Options::default())
        .err()
        .unwrap();
    assert!(err.is_not_found(), "{err}");
}

#[test]
fn every_truncation_of_a_real_library_is_handled() {
    let Some(plugin) = plugin(&[]) else { return };
    let data = std::fs::read(&plugin).unwrap();
    let path = Path::new("/nonexistent/input");
    let step = (data.len() / 400).max(1);
    for len in (0..data.len()).step_by(step) {
        if let Ok(binary) = Binary::parse(path, data[..len].to_vec(), &no_debug_dirs()) {
            exercise(&binary);
        }
    }
}

#[test]
fn corrupt_dwarf_gives_a_warning_and_symbol_names() {
    let Some(plugin) = plugin(&[]) else { return };
    let mut data = std::fs::read(&plugin).unwrap();
    let (offset, size) = {
        let file = object::File::parse(&*data).unwrap();
        let section = file.section_by_name(".debug_info").unwrap();
        section.file_range().unwrap()
    };
    for byte in &mut data[offset as usize..(offset + size) as usize] {
        *byte = 0xff;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plugin.so");
    std::fs::write(&path, &data).unwrap();
    let binary = Binary::open(&path, &no_debug_dirs()).unwrap();
    let symbol = binary
        .symbols()
        .iter()
        .find(|s| s.name() == "plugin_work")
        .unwrap();
    let frames = binary.frames(symbol.address + 4);
    assert_eq!(frames.len(), 1);
    assert_eq!(
        frames[0].function, "plugin_work",
        "the symbol table still names it"
    );
    assert_eq!(frames[0].line, 0);
    let warnings = binary.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.message.contains("DWARF") && w.message.contains("plugin.so")),
        "{warnings:?}"
    );
    // symbolize() passes the warning on, once.
    let segment = binary.segments().iter().find(|s| s.executable).unwrap();
    let mapping = Mapping {
        start: 0x7f00_0000_0000 + (segment.address & !0xfff),
        limit: 0x7f00_0000_0000 + ((segment.address + segment.memory_size + 0xfff) & !0xfff),
        offset: segment.file_offset & !0xfff,
        path: path.display().to_string(),
        perms: "r-xp".into(),
        ..Mapping::default()
    };
    let runtime = binary
        .file_to_runtime(&mapping, symbol.address + 4)
        .unwrap();
    let mut profile = Profile {
        mappings: vec![mapping],
        ..Profile::default()
    };
    let mapping = profile.mapping_of(runtime);
    profile.locations.push(Location {
        address: runtime,
        mapping,
        ..Location::default()
    });
    let warnings = symbolize(&mut profile, &no_debug_dirs());
    assert_eq!(
        warnings
            .iter()
            .filter(|w| w.message.contains("DWARF"))
            .count(),
        1,
        "{warnings:?}"
    );
    assert_eq!(
        profile
            .function(profile.locations[0].lines[0].function)
            .name,
        "plugin_work"
    );
}

#[test]
fn absurd_compressed_section_size_is_refused_without_allocating() {
    let Some(plugin) = plugin(&["-gz=zlib"]) else {
        return;
    };
    let mut data = std::fs::read(&plugin).unwrap();
    let offset = {
        let file = object::File::parse(&*data).unwrap();
        let section = file.section_by_name(".debug_info").unwrap();
        let compressed = section.compressed_data().unwrap();
        assert_ne!(
            compressed.format,
            object::CompressionFormat::None,
            "built with -gz=zlib"
        );
        section.file_range().unwrap().0
    };
    // Elf64_Chdr: ch_type (4), ch_reserved (4), ch_size (8).
    let at = offset as usize + 8;
    data[at..at + 8].copy_from_slice(&(1u64 << 44).to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plugin.so");
    std::fs::write(&path, &data).unwrap();
    let binary = Binary::open(&path, &no_debug_dirs()).unwrap();
    let symbol = binary
        .symbols()
        .iter()
        .find(|s| s.name() == "plugin_work")
        .unwrap();
    assert_eq!(binary.frames(symbol.address + 4)[0].function, "plugin_work");
    let warnings = binary.warnings();
    assert!(
        warnings.iter().any(|w| w.message.contains("claims")),
        "{warnings:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random byte changes anywhere in a real library (compressed DWARF or
    /// not): open it and ask everything.
    #[test]
    fn mutated_library_never_panics(
        compressed in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..24),
    ) {
        let flags: &'static [&'static str] = if compressed { &["-gz=zlib"] } else { &[] };
        let Some(plugin) = plugin(flags) else { return Ok(()) };
        let mut data = std::fs::read(&plugin).unwrap();
        for (index, byte) in edits {
            let i = index.index(data.len());
            data[i] = byte;
        }
        if let Ok(binary) = Binary::parse(Path::new("/nonexistent/input"), data, &no_debug_dirs()) {
            exercise(&binary);
        }
    }
}
