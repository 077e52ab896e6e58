//! The symbolizer's inline chains, files and lines against binutils'
//! `addr2line -f -i -C` (the reference) for the same file addresses: PIE
//! and non-PIE executables, a shared library, separate debug files found
//! through `.gnu_debuglink` and through a build-id directory, libc with
//! libc6-dbg's build-id debug file, and libstdc++'s symbol table.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use cpuprof_symbolize::{Binary, Kind, Options};

/// File addresses spread through every sized function symbol of `path`:
/// its start, then every `stride` bytes.
fn addresses_in_functions(path: &Path, dynamic: bool, stride: u64) -> Vec<u64> {
    let mut addresses: Vec<u64> = function_symbols(path, dynamic)
        .into_iter()
        .flat_map(|(address, size, _)| (0..size).step_by(stride as usize).map(move |k| address + k))
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

fn assert_no_mismatch(what: &str, compared: usize, mismatches: &[String]) {
    assert!(compared > 0, "{what}: nothing compared");
    assert!(
        mismatches.is_empty(),
        "{what}: {} of {compared} frames differ from addr2line; first ones:\n{}",
        mismatches.len(),
        mismatches
            .iter()
            .take(
                if std::env::var_os("CPUPROF_TEST_ALL_MISMATCHES").is_some() {
                    usize::MAX
                } else {
                    10
                }
            )
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn build(dir: &Path, source: &str, flags: &[&str], name: &str) -> PathBuf {
    let out = dir.join(name);
    let compiler = if source.ends_with(".cc") {
        "g++"
    } else {
        "gcc"
    };
    compile(compiler, flags, &[&workload(source)], &out);
    out
}

fn tools() -> bool {
    require_tool("g++")
        && require_tool("addr2line")
        && require_tool("nm")
        && require_tool("objcopy")
}

#[test]
fn pie_inline_chains_match_addr2line() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "inline.cc",
        &["-O2", "-g", "-pie", "-fPIE"],
        "inline-pie",
    );
    let binary = Binary::open(&path, &Options::default()).unwrap();
    assert_eq!(binary.kind(), Kind::PositionIndependentExecutable);
    assert!(binary.is_pie());
    let addresses = addresses_in_functions(&path, false, 3);
    let (compared, mismatches) = compare_frames(&binary, &path, &addresses);
    assert_no_mismatch("PIE -O2 -g", compared, &mismatches);
    // Inlining happened: some addresses have chains of three or more.
    let deepest = addresses
        .iter()
        .map(|&a| binary.frames(a).len())
        .max()
        .unwrap();
    assert!(deepest >= 3, "deepest inline chain has {deepest} frames");
}

#[test]
fn non_pie_inline_chains_match_addr2line() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "inline.cc",
        &["-O2", "-g", "-no-pie", "-fno-pie"],
        "inline-nopie",
    );
    let binary = Binary::open(&path, &Options::default()).unwrap();
    assert_eq!(binary.kind(), Kind::Executable);
    let addresses = addresses_in_functions(&path, false, 3);
    let (compared, mismatches) = compare_frames(&binary, &path, &addresses);
    assert_no_mismatch("non-PIE -O2 -g", compared, &mismatches);
}

#[test]
fn shared_library_matches_addr2line() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "plugin.c",
        &["-O2", "-g", "-shared", "-fPIC"],
        "plugin.so",
    );
    let binary = Binary::open(&path, &Options::default()).unwrap();
    assert_eq!(binary.kind(), Kind::SharedLibrary);
    let addresses = addresses_in_functions(&path, false, 1);
    let (compared, mismatches) = compare_frames(&binary, &path, &addresses);
    assert_no_mismatch("shared library", compared, &mismatches);
    // plugin_step is inlined into plugin_work.
    let inlined = addresses.iter().any(|&a| {
        let frames = binary.frames(a);
        frames.len() == 2
            && frames[0].function == "plugin_step"
            && frames[1].function == "plugin_work"
    });
    assert!(inlined, "plugin_step inlined into plugin_work somewhere");
}

/// Copies `original`'s debug info to `debug` and writes a copy without it
/// (keeping `.symtab` unless `strip_all`) to `stripped`, linked to the
/// debug file by `.gnu_debuglink` when `link`.
fn split_debug(original: &Path, debug: &Path, stripped: &Path, strip_all: bool, link: bool) {
    let (o, d, s) = (
        original.display().to_string(),
        debug.display().to_string(),
        stripped.display().to_string(),
    );
    run("objcopy", &["--only-keep-debug", &o, &d]);
    let mut args = vec![if strip_all {
        "--strip-all"
    } else {
        "--strip-debug"
    }];
    let link_arg = format!("--add-gnu-debuglink={d}");
    if link {
        args.push(&link_arg);
    }
    args.push(&o);
    args.push(&s);
    // objcopy names the link after the debug file's base name and computes
    // its CRC from it, so run it where the debug file is.
    let status = std::process::Command::new("objcopy")
        .args(&args)
        .current_dir(debug.parent().unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "objcopy {args:?}");
}

#[test]
fn stripped_binary_finds_debuglink_file_in_each_place() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = build(dir.path(), "inline.cc", &["-O2", "-g"], "original");
    let addresses = addresses_in_functions(&original, false, 7);
    for (place, strip_all) in [("beside", false), (".debug", true), ("debug-dir", false)] {
        let root = dir.path().join(place);
        let bin_dir = root.join("bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        let stripped = bin_dir.join("prog");
        let staging = dir.path().join(format!("staging-{place}"));
        std::fs::create_dir_all(&staging).unwrap();
        let debug = staging.join("prog.debug");
        split_debug(&original, &debug, &stripped, strip_all, true);
        let debug_dirs = vec![root.join("usr-lib-debug")];
        let expected_debug = match place {
            "beside" => bin_dir.join("prog.debug"),
            ".debug" => bin_dir.join(".debug").join("prog.debug"),
            _ => {
                let canonical_bin = std::fs::canonicalize(&bin_dir).unwrap();
                let relative: PathBuf = canonical_bin.components().skip(1).collect();
                debug_dirs[0].join(relative).join("prog.debug")
            }
        };
        std::fs::create_dir_all(expected_debug.parent().unwrap()).unwrap();
        std::fs::rename(&debug, &expected_debug).unwrap();
        let options = Options {
            debug_dirs,
            ..Options::default()
        };
        let binary = Binary::open(&stripped, &options).unwrap();
        assert_eq!(
            binary
                .debug_path()
                .map(|p| std::fs::canonicalize(p).unwrap()),
            Some(std::fs::canonicalize(&expected_debug).unwrap()),
            "{place}"
        );
        // Same answers as addr2line on the unstripped original.
        let (compared, mismatches) = compare_frames(&binary, &original, &addresses);
        assert_no_mismatch(place, compared, &mismatches);
        if strip_all {
            assert!(
                !binary.symbols().is_empty(),
                "symbols come from the debug file's .symtab"
            );
        }
    }
}

#[test]
fn debuglink_with_wrong_crc_is_refused() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // No build ids, so that only the CRC can tie the files together.
    let original = build(
        dir.path(),
        "inline.cc",
        &["-O2", "-g", "-Wl,--build-id=none"],
        "original",
    );
    let other = build(
        dir.path(),
        "inline.cc",
        &["-O1", "-g", "-Wl,--build-id=none"],
        "other",
    );
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let debug = bin_dir.join("prog.debug");
    let stripped = bin_dir.join("prog");
    split_debug(&original, &debug, &stripped, false, true);
    let options = Options {
        debug_dirs: Vec::new(),
        ..Options::default()
    };
    assert!(Binary::open(&stripped, &options)
        .unwrap()
        .debug_path()
        .is_some());
    // Replace the debug file by the other build's: same name, wrong CRC.
    run(
        "objcopy",
        &[
            "--only-keep-debug",
            &other.display().to_string(),
            &debug.display().to_string(),
        ],
    );
    let binary = Binary::open(&stripped, &options).unwrap();
    assert_eq!(binary.debug_path(), None);
    assert!(!binary.has_debug_info());
    // Names still come from the symbol table, without lines.
    let (address, _, _) = function_symbols(&stripped, false)
        .into_iter()
        .find(|(_, _, name)| name == "main")
        .unwrap();
    let frames = binary.frames(address + 1);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].function, "main");
    assert_eq!(frames[0].line, 0);
}

#[test]
fn build_id_debug_dir_layout() {
    if !tools() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = build(
        dir.path(),
        "inline.cc",
        &["-O2", "-g", "-Wl,--build-id"],
        "original",
    );
    let stripped = dir.path().join("stripped");
    let debug = dir.path().join("tmp.debug");
    split_debug(&original, &debug, &stripped, true, false);
    let probe = Binary::open(&stripped, &Options::default()).unwrap();
    let build_id = probe.build_id().expect("linked with --build-id");
    assert_eq!(
        build_id.len(),
        40,
        "a SHA-1 build id in lowercase hex: {build_id}"
    );
    assert!(build_id
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert!(
        probe.debug_path().is_none(),
        "not found before it is put in place"
    );
    let debug_dir = dir.path().join("debug");
    let target = debug_dir
        .join(".build-id")
        .join(&build_id[..2])
        .join(format!("{}.debug", &build_id[2..]));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(&debug, &target).unwrap();
    let options = Options {
        debug_dirs: vec![debug_dir],
        ..Options::default()
    };
    let binary = Binary::open(&stripped, &options).unwrap();
    assert_eq!(binary.debug_path(), Some(target.as_path()));
    let addresses = addresses_in_functions(&original, false, 7);
    let (compared, mismatches) = compare_frames(&binary, &original, &addresses);
    assert_no_mismatch("build-id debug dir", compared, &mismatches);
}

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";

#[test]
fn libc_gets_lines_through_its_build_id_debug_file() {
    if !require_tool("addr2line") || !require_tool("nm") {
        return;
    }
    let binary = Binary::open(Path::new(LIBC), &Options::default()).unwrap();
    let build_id = binary.build_id().expect("libc has a build id");
    let expected = format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &build_id[..2],
        &build_id[2..]
    );
    if !Path::new(&expected).exists() {
        if std::env::var("CPUPROF_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("{expected} is missing: install libc6-dbg");
        }
        eprintln!("SKIPPED: {expected} is missing (install libc6-dbg)");
        return;
    }
    assert_eq!(binary.debug_path(), Some(Path::new(&expected)));
    // Three addresses in every 20th function of libc's full symbol table.
    let symbols = function_symbols(Path::new(&expected), false);
    let mut addresses: Vec<u64> = symbols
        .iter()
        .step_by(20)
        .flat_map(|&(address, size, _)| [address, address + size / 2, address + size - 1])
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let (compared, mismatches) = compare_frames(&binary, Path::new(LIBC), &addresses);
    assert_no_mismatch("libc", compared, &mismatches);
    let with_lines = addresses
        .iter()
        .filter(|&&a| binary.frames(a).iter().any(|f| f.line > 0))
        .count();
    assert!(
        with_lines * 10 > addresses.len() * 9,
        "{with_lines} of {} have lines",
        addresses.len()
    );
}

#[test]
fn libstdcxx_symbol_table_names_match_addr2line() {
    if !require_tool("addr2line") || !require_tool("nm") {
        return;
    }
    let path = Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    if !path.exists() {
        eprintln!("SKIPPED: no {}", path.display());
        return;
    }
    let binary = Binary::open(path, &Options::default()).unwrap();
    // The middle of every 10th exported function.
    let mut addresses: Vec<u64> = function_symbols(path, true)
        .iter()
        .step_by(10)
        .map(|&(address, size, _)| address + size / 2)
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let (compared, mismatches) = compare_frames(&binary, path, &addresses);
    assert_no_mismatch("libstdc++", compared, &mismatches);
}

/// `objdump -s` of `len` bytes at `address` of `.text`.
fn objdump_bytes(path: &Path, address: u64, len: u64) -> Vec<u8> {
    let out = run(
        "objdump",
        &[
            "-s",
            "-j",
            ".text",
            &format!("--start-address={address:#x}"),
            &format!("--stop-address={:#x}", address + len),
            &path.display().to_string(),
        ],
    );
    let mut bytes = Vec::new();
    for line in out.lines().filter(|l| l.starts_with(' ')) {
        // ` 1130 f30f1efa 31c0c3 ...  ascii`: an address, then up to four
        // groups of hex, then the ASCII column after two spaces.
        let hex = line.trim_start().split_once(' ').map_or("", |x| x.1);
        let hex = hex.split("  ").next().unwrap_or("");
        for group in hex.split_whitespace() {
            for i in (0..group.len()).step_by(2) {
                bytes.push(u8::from_str_radix(&group[i..i + 2], 16).unwrap());
            }
        }
    }
    bytes
}

#[test]
fn code_bytes_and_line_table_match_objdump_and_readelf() {
    if !(tools() && require_tool("objdump") && require_tool("readelf")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = build(dir.path(), "inline.cc", &["-O2", "-g"], "inline");
    let binary = Binary::open(&path, &Options::default()).unwrap();
    let (start, size, _) = function_symbols(&path, false)
        .into_iter()
        .find(|(_, _, n)| n == "_Z7computei")
        .unwrap();
    let code = binary
        .code(start, size as usize)
        .expect("compute() is in .text");
    assert_eq!(code, objdump_bytes(&path, start, size).as_slice());
    assert!(
        binary.code(start, usize::MAX / 2).is_none(),
        "past the section"
    );
    assert!(binary.code(0, 4).is_none(), "not code");

    let rows = binary.line_table(start..start + size);
    assert!(rows.len() > 5, "{rows:?}");
    assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0), "sorted");
    assert_eq!(rows[0].0, start);
    let table = LineTable::read(&path);
    for (address, file, line) in &rows {
        let (row_file, row_line, _) = table.at(*address).unwrap();
        assert_eq!(
            (row_file, row_line),
            (file.rsplit('/').next().unwrap(), *line),
            "{address:#x}"
        );
    }
}
