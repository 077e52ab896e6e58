//! Names: C++ demangling against `c++filt -i` (what `addr2line -C`
//! prints), Rust legacy and v0 symbols from a program compiled with rustc
//! and from this test binary itself, and the short names the pprof tools
//! print by default (Go pprof's simplified names, google-pprof's
//! `ShortFunctionName`) on a profile of a C++ program.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::*;
use cpuprof_profile::{
    cpu_sample_types, gperftools, Location, LocationId, Mapping, Profile, Sample, ValueType,
};
use cpuprof_symbolize::demangle::{demangle, perl_short_name, short_name};
use cpuprof_symbolize::{symbolize, Binary, Options};

fn cxxfilt(names: &[String]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("names");
    std::fs::write(&input, names.join("\n") + "\n").unwrap();
    let output = std::process::Command::new("c++filt")
        .arg("-i")
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn cpp_names_demangle_exactly_as_cxxfilt() {
    if !(require_tool("g++") && require_tool("nm") && require_tool("c++filt")) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("names");
    compile(
        "g++",
        &["-O1", "-g", "-fno-inline", "-no-pie"],
        &[&workload("names.cc")],
        &program,
    );
    let mut names: Vec<String> = function_symbols(&program, false)
        .into_iter()
        .map(|s| s.2)
        .collect();
    // And every C++ function libstdc++ exports.
    let libstdcxx = Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
    if libstdcxx.exists() {
        names.extend(function_symbols(libstdcxx, true).into_iter().map(|s| s.2));
    }
    names.retain(|n| n.starts_with("_Z"));
    names.sort();
    names.dedup();
    assert!(names.len() > 1000, "{} names", names.len());
    let expected = cxxfilt(&names);
    assert_eq!(expected.len(), names.len());
    let differing: Vec<String> = names
        .iter()
        .zip(&expected)
        .filter(|(n, e)| demangle(n) != **e)
        .map(|(n, e)| format!("{n}\n  ours:     {}\n  c++filt:  {e}", demangle(n)))
        .collect();
    assert!(
        differing.is_empty(),
        "{} differ:\n{}",
        differing.len(),
        differing[..differing.len().min(10)].join("\n")
    );
}

/// A tiny Rust program compiled with `mangling` (`legacy`, the default,
/// or `v0`).
fn rust_program(dir: &Path, mangling: Option<&str>) -> Option<std::path::PathBuf> {
    if !require_tool("rustc") {
        return None;
    }
    let source = dir.join("tiny.rs");
    std::fs::write(
        &source,
        "#[inline(never)]\npub fn work_function_xyz(n: u64) -> u64 {\n    (0..n).map(|i| i * i).sum()\n}\n\
         fn main() {\n    println!(\"{}\", work_function_xyz(std::env::args().count() as u64));\n}\n",
    )
    .unwrap();
    let out = dir.join(format!("tiny-{}", mangling.unwrap_or("default")));
    let mut args = vec!["-g".to_string(), "-o".into(), out.display().to_string()];
    if let Some(m) = mangling {
        args.push("-C".into());
        args.push(format!("symbol-mangling-version={m}"));
    }
    args.push(source.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("rustc", &args);
    Some(out)
}

#[test]
fn rust_legacy_and_v0_symbols_demangle_without_hashes() {
    let dir = tempfile::tempdir().unwrap();
    for (mangling, prefix) in [(None, "_ZN"), (Some("v0"), "_R")] {
        let Some(program) = rust_program(dir.path(), mangling) else {
            return;
        };
        let binary = Binary::open(&program, &Options::default()).unwrap();
        let symbol = binary
            .symbols()
            .iter()
            .find(|s| s.demangled() == "tiny::work_function_xyz")
            .unwrap_or_else(|| {
                panic!("{mangling:?}: no tiny::work_function_xyz among the symbols")
            });
        assert!(symbol.name().starts_with(prefix), "{}", symbol.name());
        if prefix == "_ZN" {
            assert!(
                symbol.name().contains("17h"),
                "legacy symbols carry a hash: {}",
                symbol.name()
            );
        }
        // The closure: `{{closure}}` (legacy) or `{closure#0}` (v0).
        let closure = binary
            .symbols()
            .iter()
            .find(|s| s.demangled().starts_with("tiny::work_function_xyz::{"))
            .expect("the closure's symbol");
        let expected = if prefix == "_ZN" {
            "tiny::work_function_xyz::{{closure}}"
        } else {
            "tiny::work_function_xyz::{closure#0}"
        };
        assert_eq!(closure.demangled(), expected);
        // DWARF agrees: the function's frame carries the same name.
        let frames = binary.frames(symbol.address + 1);
        assert_eq!(
            frames.last().unwrap().function,
            "tiny::work_function_xyz",
            "{mangling:?}"
        );
        assert!(frames.last().unwrap().file.ends_with("tiny.rs"));
        assert_eq!(
            short_name("tiny::work_function_xyz"),
            "tiny::work_function_xyz"
        );
    }
}

#[inline(never)]
fn self_symbolized_function(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31).rotate_left(7))
}

#[test]
fn this_test_binary_symbolizes_itself() {
    let target = self_symbolized_function as *const () as u64;
    assert_ne!(self_symbolized_function(3), 0);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mappings: Vec<Mapping> = maps
        .lines()
        .filter_map(gperftools::parse_maps_line)
        .collect();
    let mut profile = Profile {
        mappings,
        ..Profile::default()
    };
    profile.sort_mappings();
    let mapping = profile.mapping_of(target + 1);
    assert!(mapping.is_some());
    profile.locations.push(Location {
        address: target + 1,
        mapping,
        ..Location::default()
    });
    let exe = std::env::current_exe().unwrap();
    let warnings = symbolize(&mut profile, &Options::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    let lines = &profile.locations[0].lines;
    assert!(
        !lines.is_empty(),
        "{:#x} in {:?}",
        target + 1,
        profile.mapping(mapping.unwrap())
    );
    let outermost = profile.function(lines.last().unwrap().function);
    assert_eq!(
        outermost.name,
        "demangle::self_symbolized_function",
        "{}",
        exe.display()
    );
    assert!(outermost.system_name.starts_with("_ZN") || outermost.system_name.starts_with("_R"));
    assert!(
        outermost.filename.ends_with("tests/demangle.rs"),
        "{}",
        outermost.filename
    );
    let source = include_str!("demangle.rs");
    let decl = source
        .lines()
        .position(|l| l.starts_with("fn self_symbolized_function"))
        .unwrap()
        + 1;
    assert_eq!(outermost.start_line, decl as i64);
}

/// A gperftools profile of `program` (non-PIE) with one sample per
/// function symbol, at its start + 1, the count telling the samples apart.
fn profile_of_every_function(program: &Path, out: &Path) -> Vec<u64> {
    let binary = Binary::open(program, &Options::default()).unwrap();
    let mut profile = Profile {
        sample_types: cpu_sample_types(),
        period_type: ValueType::new("cpu", "nanoseconds"),
        period: 10_000_000,
        ..Profile::default()
    };
    for s in binary.segments() {
        profile.mappings.push(Mapping {
            start: s.address & !0xfff,
            limit: (s.address + s.memory_size + 0xfff) & !0xfff,
            offset: s.file_offset & !0xfff,
            path: program.display().to_string(),
            perms: if s.executable { "r-xp" } else { "r--p" }.into(),
            ..Mapping::default()
        });
    }
    let mut addresses: Vec<u64> = function_symbols(program, false)
        .into_iter()
        .map(|s| s.0 + 1)
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    for (i, &address) in addresses.iter().enumerate() {
        profile.locations.push(Location {
            address,
            ..Location::default()
        });
        profile.samples.push(Sample {
            locations: vec![LocationId::from_index(i)],
            values: vec![i as i64 + 1, (i as i64 + 1) * 10_000_000],
            labels: Vec::new(),
        });
    }
    let mut file = std::fs::File::create(out).unwrap();
    gperftools::write(&profile, &mut file).unwrap();
    addresses
}

/// Go pprof's `-raw` output: the names of each location's lines,
/// innermost first, by address.
fn go_pprof_names(raw: &str) -> HashMap<u64, Vec<String>> {
    let mut names: HashMap<u64, Vec<String>> = HashMap::new();
    let mut current: Option<u64> = None;
    let mut in_locations = false;
    for line in raw.lines() {
        if line.starts_with("Locations") {
            in_locations = true;
            continue;
        }
        if line.starts_with("Mappings") {
            break;
        }
        if !in_locations {
            continue;
        }
        let trimmed = line.trim_start();
        let rest = match trimmed.split_once(": 0x") {
            Some((id, rest)) if id.bytes().all(|b| b.is_ascii_digit()) => {
                let (address, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                current = u64::from_str_radix(address, 16).ok();
                rest.split_once(' ').map(|(_, r)| r).unwrap_or("") // drop `M=1`
            }
            _ => trimmed,
        };
        let Some(i) = rest.rfind(" s=") else { continue };
        let Some((name, _file_line)) = rest[..i].rsplit_once(' ') else {
            continue;
        };
        if let Some(address) = current {
            names.entry(address).or_default().push(name.to_string());
        }
    }
    names
}

/// google-pprof's `--text --addresses` rows with a flat count: the
/// innermost name of each address.
fn google_pprof_names(text: &str) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 8 || fields[0] == "0" || fields[5].len() != 16 {
            continue;
        }
        let Ok(address) = u64::from_str_radix(fields[5], 16) else {
            continue;
        };
        // The name as printed, spaces included (`std::operator< `): between
        // the address and the last field.
        let after = &line[line.find(fields[5]).unwrap() + 17..];
        let name = &after[..after.rfind(' ').unwrap_or(after.len())];
        let name = name.strip_suffix(" (inline)").unwrap_or(name);
        // Its disambiguation of equal short names: `name@4022e8`.
        let name = match name.rsplit_once('@') {
            Some((base, hex)) if hex.bytes().all(|b| b.is_ascii_hexdigit()) => base,
            _ => name,
        };
        names.insert(address, name.to_string());
    }
    names
}

#[test]
fn short_names_match_go_pprof_and_google_pprof() {
    if !(require_tool("g++") && require_tool("nm") && require_tool("addr2line")) {
        return;
    }
    let go = require_tool("pprof");
    let perl = require_tool("google-pprof");
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("names");
    compile(
        "g++",
        &["-O1", "-g", "-fno-inline", "-no-pie"],
        &[&workload("names.cc")],
        &program,
    );
    let profile_path = dir.path().join("names.prof");
    let addresses = profile_of_every_function(&program, &profile_path);
    let binary = Binary::open(&program, &Options::default()).unwrap();
    let (prog, prof) = (
        program.display().to_string(),
        profile_path.display().to_string(),
    );
    let mut compared = 0;
    let mut differences = Vec::new();
    if go {
        let raw = run("pprof", &["-raw", &prog, &prof]);
        let names = go_pprof_names(&raw);
        for &address in &addresses {
            let Some(expected) = names.get(&address) else {
                continue;
            };
            let ours: Vec<String> = binary
                .frames(address)
                .iter()
                .map(|f| short_name(&f.function))
                .collect();
            compared += 1;
            if &ours != expected {
                differences.push(format!(
                    "Go pprof {address:#x}: ours {ours:?}, pprof {expected:?}"
                ));
            }
        }
    }
    if perl {
        let text = run("google-pprof", &["--text", "--addresses", &prog, &prof]);
        let names = google_pprof_names(&text);
        for &address in &addresses {
            let Some(expected) = names.get(&address) else {
                continue;
            };
            let frames = binary.frames(address);
            let Some(innermost) = frames.first() else {
                continue;
            };
            compared += 1;
            let ours = perl_short_name(&innermost.function);
            if &ours != expected {
                differences.push(format!(
                    "google-pprof {address:#x}: ours {ours:?}, pprof {expected:?}"
                ));
            }
        }
    }
    if !go && !perl {
        return;
    }
    assert!(compared > 100, "{compared} names compared");
    assert!(
        differences.is_empty(),
        "{} of {compared} differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
    // The cases the brief names, as the tools print them.
    for (full, short) in [
        (
            "(anonymous namespace)::anon_f(int)",
            "(anonymous namespace)::anon_f",
        ),
        (
            "main::{lambda(int)#1}::operator()(int) const",
            "main::{lambda(int)#1}::operator()",
        ),
        (
            "outer::inner::Box<int>::operator<(outer::inner::Box<int> const&) const",
            "outer::inner::Box::operator<",
        ),
        (
            "outer::inner::Box<int>::operator<<(int)",
            "outer::inner::Box::operator<<",
        ),
    ] {
        assert_eq!(short_name(full), short);
    }
}
