//! `symbolize()` on whole profiles: mappings taken from the
//! `/proc/self/maps` of a running program (PIE and not, with a library
//! loaded by dlopen and libc), binaries named by the user, missing and
//! mismatched files, and addresses without a mapping.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::*;
use cpuprof_profile::{gperftools::parse_maps_line, Function, Line, Location, Mapping, Profile};
use cpuprof_symbolize::{symbolize, Binary, Options};

/// What the `maps` workload printed: for each reported function, the
/// runtime address, the file dladdr(3) found it in, and that file's load
/// base.
struct Run {
    mappings: Vec<Mapping>,
    addresses: HashMap<String, (u64, PathBuf, u64)>,
}

fn build_and_run(dir: &Path, pie: bool) -> Option<Run> {
    if !(require_tool("gcc") && require_tool("addr2line") && require_tool("readelf")) {
        return None;
    }
    let plugin = dir.join("plugin.so");
    compile(
        "gcc",
        &["-O2", "-g", "-shared", "-fPIC"],
        &[&workload("plugin.c")],
        &plugin,
    );
    let program = dir.join(if pie { "maps-pie" } else { "maps-nopie" });
    let mode: &[&str] = if pie {
        &["-pie", "-fPIE"]
    } else {
        &["-no-pie", "-fno-pie"]
    };
    let mut flags = vec!["-O2", "-g"];
    flags.extend_from_slice(mode);
    compile("gcc", &flags, &[&workload("maps.c")], &program);
    let maps_file = dir.join("out.maps");
    let stdout = run(
        &program.display().to_string(),
        &[
            &plugin.display().to_string(),
            &maps_file.display().to_string(),
        ],
    );
    let mut addresses = HashMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        assert_eq!(fields.len(), 4, "{line}");
        addresses.insert(
            fields[3].to_string(),
            (
                u64::from_str_radix(fields[0], 16).unwrap(),
                PathBuf::from(fields[1]),
                u64::from_str_radix(fields[2], 16).unwrap(),
            ),
        );
    }
    let maps = std::fs::read_to_string(&maps_file).unwrap();
    let mut mappings: Vec<Mapping> = maps.lines().filter_map(parse_maps_line).collect();
    mappings.sort_by_key(|m| m.start);
    Some(Run {
        mappings,
        addresses,
    })
}

fn profile_with(mappings: &[Mapping], addresses: &[u64]) -> Profile {
    let mut profile = Profile {
        mappings: mappings.to_vec(),
        ..Profile::default()
    };
    for &address in addresses {
        let mapping = profile.mapping_of(address);
        profile.locations.push(Location {
            address,
            mapping,
            ..Location::default()
        });
    }
    profile
}

/// The address in the file: runtime address minus the load base for
/// position-independent files, the runtime address for `ET_EXEC` ones.
fn file_address(file: &Path, runtime: u64, base: u64) -> u64 {
    let header = run("readelf", &["-h", &file.display().to_string()]);
    if header.contains("EXEC (Executable file)") {
        runtime
    } else {
        runtime - base
    }
}

/// (function, file, line) of each line of a location, innermost first.
fn chain(profile: &Profile, location: &Location) -> Vec<(String, String, u32)> {
    location
        .lines
        .iter()
        .map(|l: &Line| {
            let f: &Function = profile.function(l.function);
            (f.name.clone(), f.filename.clone(), l.line as u32)
        })
        .collect()
}

fn check_running_program(pie: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some(run) = build_and_run(dir.path(), pie) else {
        return;
    };
    let names = ["main_work", "plugin_work", "main", "qsort"];
    let runtime: Vec<u64> = names.iter().map(|n| run.addresses[*n].0).collect();
    let mut profile = profile_with(&run.mappings, &runtime);
    assert!(
        profile.locations.iter().all(|l| l.mapping.is_some()),
        "every address is in a mapping"
    );
    let warnings = symbolize(&mut profile, &Options::default());
    let unexpected: Vec<_> = warnings
        .iter()
        .filter(|w| !w.message.contains("[vdso]") && !w.message.contains("[vsyscall]"))
        .collect();
    assert!(unexpected.is_empty(), "warnings: {unexpected:?}");
    profile.validate().unwrap();
    for (name, location) in names.iter().zip(&profile.locations) {
        let (address, file, base) = &run.addresses[*name];
        let expected = addr2line(file, &[file_address(file, *address, *base)]).remove(0);
        let ours = chain(&profile, location);
        assert!(
            !ours.is_empty(),
            "{name} at {address:#x} was not symbolized"
        );
        // Names: addr2line's, innermost to outermost; except that glibc's
        // DWARF names `qsort` by its internal alias `__GI_qsort`, where we
        // name the public one (`nm` lists both at one address).
        let expected_names: Vec<&str> = expected
            .iter()
            .map(|f| match f.function.as_str() {
                "__GI_qsort" if *name == "qsort" => "qsort",
                other => other,
            })
            .collect();
        let our_names: Vec<&str> = ours.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(our_names, expected_names, "{name} in {}", file.display());
        // Lines, and files (our own C programs: no binutils DWARF 5 quirk).
        if *name != "qsort" {
            let expected_lines: Vec<(String, u32)> =
                expected.iter().map(|f| (f.file.clone(), f.line)).collect();
            let our_lines: Vec<(String, u32)> = ours.iter().map(|f| (f.1.clone(), f.2)).collect();
            assert_eq!(our_lines, expected_lines, "{name}");
        } else {
            assert!(ours[0].2 > 0, "qsort has a line through libc's debug file");
        }
        let mapping = profile.mapping(location.mapping.unwrap());
        assert!(mapping.has_functions, "{}", mapping.path);
        let build_id = Binary::open(Path::new(&mapping.path), &Options::default())
            .unwrap()
            .build_id()
            .unwrap_or_default();
        assert_eq!(
            mapping.build_id, build_id,
            "the mapping gets its file's build id"
        );
    }
    // The dlopen'd library's mapping gets lines and inline frames.
    let plugin = profile.mapping(profile.locations[1].mapping.unwrap());
    assert!(plugin.path.ends_with("plugin.so"));
    assert!(plugin.has_filenames && plugin.has_line_numbers);
}

#[test]
fn running_pie_program_with_dlopen_library() {
    check_running_program(true);
}

#[test]
fn running_non_pie_program_with_dlopen_library() {
    check_running_program(false);
}

#[test]
fn missing_file_gives_one_warning_and_pseudo_mappings_none() {
    let mappings = vec![
        Mapping {
            start: 0x1000,
            limit: 0x2000,
            offset: 0,
            path: "/nonexistent/dir/libgone.so".into(),
            perms: "r--p".into(),
            ..Mapping::default()
        },
        Mapping {
            start: 0x2000,
            limit: 0x5000,
            offset: 0x1000,
            path: "/nonexistent/dir/libgone.so".into(),
            perms: "r-xp".into(),
            ..Mapping::default()
        },
        Mapping {
            start: 0x7000,
            limit: 0x8000,
            path: "[vdso]".into(),
            perms: "r-xp".into(),
            ..Mapping::default()
        },
        Mapping {
            start: 0x9000,
            limit: 0xa000,
            path: String::new(),
            perms: "rwxp".into(),
            ..Mapping::default()
        },
    ];
    let addresses = [
        0x2010,
        0x2020,
        0x3000,
        0x4ff0,
        0x1800,
        0x7010,
        0x7020,
        0x9100,
        0xffff_0000,
    ];
    let mut profile = profile_with(&mappings, &addresses);
    let warnings = symbolize(&mut profile, &Options::default());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let message = &warnings[0].message;
    assert!(message.contains("/nonexistent/dir/libgone.so"), "{message}");
    assert!(message.contains("not found"), "{message}");
    assert!(message.contains("5 addresses"), "{message}");
    assert!(profile.locations.iter().all(|l| l.lines.is_empty()));
    assert!(profile.functions.is_empty());
    assert!(profile
        .mappings
        .iter()
        .all(|m| !m.has_functions && m.build_id.is_empty()));
}

/// A non-PIE build of maps.c and the link-time address of `main_work`'s
/// second byte.
fn non_pie_program(dir: &Path) -> Option<(PathBuf, u64)> {
    if !(require_tool("gcc") && require_tool("nm")) {
        return None;
    }
    let program = dir.join("prog");
    compile(
        "gcc",
        &["-O2", "-g", "-no-pie", "-fno-pie"],
        &[&workload("maps.c")],
        &program,
    );
    let (address, _, _) = function_symbols(&program, false)
        .into_iter()
        .find(|(_, _, n)| n == "main_work")
        .unwrap();
    Some((program, address + 1))
}

/// The mappings the kernel would make for `binary` at its link-time
/// addresses (non-PIE), under another path.
fn mappings_as(binary: &Path, path: &str) -> Vec<Mapping> {
    let opened = Binary::open(binary, &Options::default()).unwrap();
    opened
        .segments()
        .iter()
        .map(|s| Mapping {
            start: s.address & !0xfff,
            limit: (s.address + s.memory_size + 0xfff) & !0xfff,
            offset: s.file_offset & !0xfff,
            path: path.to_string(),
            perms: if s.executable { "r-xp" } else { "r--p" }.into(),
            ..Mapping::default()
        })
        .collect()
}

#[test]
fn named_binary_serves_mapping_by_name_or_as_main_executable() {
    let dir = tempfile::tempdir().unwrap();
    let Some((program, address)) = non_pie_program(dir.path()) else {
        return;
    };
    // Same file name elsewhere, then a different name (the main
    // executable's mapping: the first executable mapping of a file).
    for recorded in ["/build/elsewhere/prog", "/build/elsewhere/a.out"] {
        let mut mappings = mappings_as(&program, recorded);
        mappings.push(Mapping {
            start: 0x7f00_0000_0000,
            limit: 0x7f00_0001_0000,
            path: "/nonexistent/libother.so".into(),
            perms: "r-xp".into(),
            ..Mapping::default()
        });
        let mut profile = profile_with(&mappings, &[address]);
        let options = Options {
            binaries: vec![program.clone()],
            ..Options::default()
        };
        let warnings = symbolize(&mut profile, &options);
        assert!(warnings.is_empty(), "{recorded}: {warnings:?}");
        let location = &profile.locations[0];
        let outermost = profile.function(location.lines.last().unwrap().function);
        assert_eq!(outermost.name, "main_work", "{recorded}");
        assert!(outermost.filename.ends_with("maps.c"));
    }
}

/// The GNU build id of `path` as `readelf -n` prints it.
fn binary_build_id(path: &std::path::Path) -> String {
    let out = std::process::Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in readelf -n {}:\n{text}", path.display()))
        .trim()
        .to_string()
}

#[test]
fn binary_with_other_build_id_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let Some((program, address)) = non_pie_program(dir.path()) else {
        return;
    };
    let path = program.display().to_string();
    let mut mappings = mappings_as(&program, &path);
    for m in &mut mappings {
        m.build_id = "00112233445566778899aabbccddeeff00112233".into();
    }
    let mut profile = profile_with(&mappings, &[address]);
    let options = Options {
        binaries: vec![program.clone()],
        ..Options::default()
    };
    let warnings = symbolize(&mut profile, &options);
    assert!(
        profile.locations[0].lines.is_empty(),
        "a mismatched binary is not used"
    );
    assert!(!warnings.is_empty());
    assert!(
        warnings.iter().all(|w| w.message.contains("does not match")
            && w.message.contains("build id")
            || w.message.contains(" in the profile, ")),
        "{warnings:?}"
    );
    // The mapped file (the same program, on disk): one line naming both
    // build ids.
    let on_disk = binary_build_id(&program);
    assert!(
        warnings.iter().any(|w| w.message
            == format!(
                "{path}: build id 00112233445566778899aabbccddeeff00112233 in the profile, {on_disk} on disk; not using it"
            )),
        "{warnings:?}"
    );
    // Reported once per binary and mapped file, not per mapping.
    assert!(warnings.len() <= 2, "{warnings:?}");
}

#[test]
fn binary_whose_segments_cannot_hold_the_mapping_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let Some((program, _)) = non_pie_program(dir.path()) else {
        return;
    };
    let mappings = vec![Mapping {
        start: 0x10_0000_0000,
        limit: 0x10_0000_1000,
        offset: 0x4000_0000,
        path: "/somewhere/prog".into(),
        perms: "r-xp".into(),
        ..Mapping::default()
    }];
    let mut profile = profile_with(&mappings, &[0x10_0000_0010]);
    let options = Options {
        binaries: vec![program],
        ..Options::default()
    };
    let warnings = symbolize(&mut profile, &options);
    assert!(profile.locations[0].lines.is_empty());
    let messages: Vec<&str> = warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("does not match") && m.contains("0x40000000")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("/somewhere/prog: not found")),
        "{messages:?}"
    );
}

#[test]
fn addresses_without_mapping_are_link_time_addresses_of_the_only_binary() {
    let dir = tempfile::tempdir().unwrap();
    if !(require_tool("gcc") && require_tool("nm")) {
        return;
    }
    for pie in [false, true] {
        let program = dir.path().join(format!("prog-{pie}"));
        let mode: &[&str] = if pie {
            &["-pie", "-fPIE"]
        } else {
            &["-no-pie", "-fno-pie"]
        };
        let mut flags = vec!["-O2", "-g"];
        flags.extend_from_slice(mode);
        compile("gcc", &flags, &[&workload("maps.c")], &program);
        let symbols = function_symbols(&program, false);
        let wanted = ["main_work", "main", "report"];
        let addresses: Vec<u64> = wanted
            .iter()
            .map(|w| {
                symbols
                    .iter()
                    .find(|(_, _, n)| n == w)
                    .map(|s| s.0 + 2)
                    .unwrap()
            })
            .collect();
        let mut profile = profile_with(&[], &addresses);
        let options = Options {
            binaries: vec![program.clone()],
            ..Options::default()
        };
        let warnings = symbolize(&mut profile, &options);
        assert!(warnings.is_empty(), "{warnings:?}");
        for (name, location) in wanted.iter().zip(&profile.locations) {
            let outermost = profile.function(location.lines.last().unwrap().function);
            assert_eq!(&outermost.name, name, "pie={pie}");
        }
    }
}

#[test]
fn functions_are_interned_and_options_respected() {
    let dir = tempfile::tempdir().unwrap();
    if !(require_tool("g++") && require_tool("nm")) {
        return;
    }
    let program = dir.path().join("inline");
    compile(
        "g++",
        &["-O2", "-g", "-no-pie", "-fno-pie"],
        &[&workload("inline.cc")],
        &program,
    );
    let mappings = mappings_as(&program, &program.display().to_string());
    let (compute, size, _) = function_symbols(&program, false)
        .into_iter()
        .find(|(_, _, n)| n == "_Z7computei")
        .unwrap();
    let addresses: Vec<u64> = (0..size).map(|k| compute + k).collect();

    let mut full = profile_with(&mappings, &addresses);
    assert!(symbolize(&mut full, &Options::default()).is_empty());
    full.validate().unwrap();
    // One function entry per distinct function: no duplicates.
    let mut seen = std::collections::HashSet::new();
    assert!(
        full.functions.iter().all(|f| seen.insert(f.clone())),
        "functions are interned"
    );
    let outermost: std::collections::HashSet<_> = full
        .locations
        .iter()
        .map(|l| l.lines.last().unwrap().function)
        .collect();
    assert_eq!(
        outermost.len(),
        1,
        "every address of compute() has the same real function"
    );
    let compute_fn = full.function(*outermost.iter().next().unwrap());
    assert_eq!(compute_fn.name, "compute(int)");
    assert_eq!(compute_fn.system_name, "_Z7computei");
    assert!(compute_fn.filename.ends_with("inline.cc"));
    let source = std::fs::read_to_string(workload("inline.cc")).unwrap();
    let decl = source
        .lines()
        .position(|l| l.contains("long compute(int n)"))
        .unwrap()
        + 1;
    assert_eq!(
        compute_fn.start_line, decl as i64,
        "start line is the function's declaration"
    );
    assert!(
        full.locations.iter().any(|l| l.lines.len() >= 3),
        "mix inlined into deeper into compute"
    );
    let mapping = full.mapping(full.locations[0].mapping.unwrap());
    assert!(
        mapping.has_functions
            && mapping.has_filenames
            && mapping.has_line_numbers
            && mapping.has_inline_frames
    );

    // Without inlines: the outermost frame only, at the line of the call.
    let mut outer_only = profile_with(&mappings, &addresses);
    let options = Options {
        inlines: false,
        ..Options::default()
    };
    assert!(symbolize(&mut outer_only, &options).is_empty());
    for (a, b) in full.locations.iter().zip(&outer_only.locations) {
        assert_eq!(b.lines.len(), 1);
        let last = a.lines.last().unwrap();
        assert_eq!(
            full.function(last.function),
            outer_only.function(b.lines[0].function)
        );
        assert_eq!(last.line, b.lines[0].line);
    }

    // Without demangling: names stay mangled.
    let mut mangled = profile_with(&mappings, &addresses[..1]);
    let options = Options {
        demangle: false,
        ..Options::default()
    };
    symbolize(&mut mangled, &options);
    let f = mangled.function(mangled.locations[0].lines.last().unwrap().function);
    assert_eq!(f.name, "_Z7computei");

    // Locations that already have lines are left alone.
    let mut again = full.clone();
    assert!(symbolize(&mut again, &Options::default()).is_empty());
    assert_eq!(again, full);
}

#[test]
fn addresses_outside_mapped_files_are_not_taken_as_link_time_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let Some((program, address)) = non_pie_program(dir.path()) else {
        return;
    };
    // A profile that maps some other file: an address outside it is not a
    // link-time address of the named binary.
    let mappings = vec![Mapping {
        start: 0x7f00_0000_0000,
        limit: 0x7f00_0001_0000,
        path: "/nonexistent/libother.so".into(),
        perms: "r-xp".into(),
        ..Mapping::default()
    }];
    let mut profile = profile_with(&mappings, &[address]);
    assert!(profile.locations[0].mapping.is_none());
    let options = Options {
        binaries: vec![program],
        ..Options::default()
    };
    symbolize(&mut profile, &options);
    assert!(profile.locations[0].lines.is_empty());
}

/// The vDSO has no file: its addresses are named from this process's own
/// vDSO (same kernel), checked against the symbol read from its image here
/// with `object`; a `[vdso]` mapping of another size stays unsymbolized.
#[test]
fn vdso_addresses_are_named_from_this_process() {
    use object::{Object, ObjectSymbol};
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let Some(line) = maps.lines().find(|l| l.ends_with("[vdso]")) else {
        eprintln!("SKIPPED: this process has no vDSO");
        return;
    };
    let range = line.split_whitespace().next().unwrap();
    let (start, end) = range.split_once('-').unwrap();
    let (start, end) = (
        u64::from_str_radix(start, 16).unwrap(),
        u64::from_str_radix(end, 16).unwrap(),
    );
    let mut image = vec![0u8; (end - start) as usize];
    let mut memory = std::fs::File::open("/proc/self/mem").unwrap();
    memory.seek(SeekFrom::Start(start)).unwrap();
    memory.read_exact(&mut image).unwrap();
    let elf = object::File::parse(&image[..]).unwrap();
    let symbol = elf
        .dynamic_symbols()
        .find(|s| s.name() == Ok("__vdso_clock_gettime"))
        .expect("the vDSO exports __vdso_clock_gettime");
    let vdso = |limit: u64| Mapping {
        start,
        limit,
        path: "[vdso]".into(),
        perms: "r-xp".into(),
        ..Mapping::default()
    };
    let address = start + symbol.address() + 1;
    let mut profile = profile_with(&[vdso(end)], &[address]);
    let warnings = symbolize(&mut profile, &Options::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    let lines = &profile.locations[0].lines;
    assert_eq!(lines.len(), 1);
    let name = &profile.function(lines[0].function).name;
    assert!(
        name == "__vdso_clock_gettime" || name == "clock_gettime",
        "{name}"
    );
    // Another kernel's vDSO (another size) is not this one.
    let mut other = profile_with(&[vdso(end + 0x1000)], &[address]);
    symbolize(&mut other, &Options::default());
    assert!(other.locations[0].lines.is_empty());
}

/// A profile.proto written from symbol tables (names, no files or lines)
/// whose mapped file is not here keeps its names, demangled (Go pprof
/// demangles such names too), and costs no "not found" warning: nothing
/// was left unnamed.
#[test]
fn recorded_mangled_names_are_demangled_when_the_file_is_missing() {
    let mut profile = Profile::default();
    profile.mappings.push(Mapping {
        start: 0x1000,
        limit: 0x2000,
        path: "/nonexistent/cpuprof-test/prog".to_string(),
        has_functions: true,
        ..Mapping::default()
    });
    profile.functions.push(Function {
        name: "_ZN4work6Burner4burnEi".to_string(),
        ..Function::default()
    });
    profile.functions.push(Function {
        name: "plain_c_function".to_string(),
        ..Function::default()
    });
    for (i, address) in [0x1100u64, 0x1200].into_iter().enumerate() {
        profile.locations.push(Location {
            address,
            mapping: Some(cpuprof_profile::MappingId::from_index(0)),
            lines: vec![Line {
                function: cpuprof_profile::FunctionId::from_index(i),
                line: 0,
                column: 0,
            }],
            ..Location::default()
        });
    }
    let warnings = symbolize(&mut profile, &Options::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(profile.functions[0].name, "work::Burner::burn(int)");
    assert_eq!(profile.functions[0].system_name, "_ZN4work6Burner4burnEi");
    assert_eq!(profile.functions[1].name, "plain_c_function");
    assert_eq!(profile.locations[0].lines[0].function.index(), 0);
}
