//! perf.data read as a profile, checked against `perf` itself on
//! recordings made at test time (each about half a second): per-function
//! flat shares equal `perf report --no-children --sort sym`'s, and every
//! sample's stack equals `perf script`'s, addresses then names, for a
//! frame-pointer C build (`-g`) and a C++ build without frame pointers
//! (`--call-graph dwarf`). Then multi-event files, pipe mode, a forking
//! program, `perf script` text, Node.js's JIT map, and Go pprof reading
//! the converted file.
//!
//! The tests skip (with a message) only where `perf record` cannot open
//! its event (perf_event_open refused: an unprivileged container), or
//! where `perf` is missing and peers are not required.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::{cpuprof, texts};
use cpuprof_profile::{LabelValue, Profile, ReadOptions};
use cpuprof_testkit::{
    compile, require_tool, run_ok, run_stdout, run_with_stdin, workload, TempDir,
};

/// A directory for a test's recordings when `perf record` works here
/// (else None: the test is skipped, [`cpuprof_testkit::perf_works`] says why).
fn perf_dir() -> Option<TempDir> {
    let dir = TempDir::new().unwrap();
    cpuprof_testkit::perf_works(dir.path()).then_some(dir)
}

/// `perf record ARGS -o OUT -- COMMAND`.
fn record(out: &Path, args: &[&str], command: &[&str]) {
    run_ok(
        Command::new("perf")
            .arg("record")
            .arg("-q")
            .args(args)
            .arg("-o")
            .arg(out)
            .arg("--")
            .args(command)
            // Files a recorded program leaves in its working directory
            // (V8's isolate-*.log) go with the recording's directory.
            .current_dir(out.parent().unwrap()),
    );
}

/// The profile as cpuprof reads and symbolizes it (the library the CLI
/// uses, so that the test sees every sample with its labels).
fn ours(path: &Path) -> Profile {
    let data = std::fs::read(path).unwrap();
    let options = ReadOptions {
        unwinder: Some(Arc::new(cpuprof_symbolize::unwind::DwarfUnwinder::new())),
        ..ReadOptions::default()
    };
    let (_, mut profile) = cpuprof_profile::read_profile(&data, &options).unwrap();
    let _ = cpuprof_symbolize::symbolize(&mut profile, &cpuprof_symbolize::Options::default());
    profile
}

/// A function name as perf prints it: no parameter list, no `const`, and
/// no return type (libiberty prints a template function's return type
/// only with its parameters: `void std::vector<…>::_M_realloc_insert<…>(…)`
/// is `std::vector<…>::_M_realloc_insert<…>` in `perf script`).
fn perf_style(name: &str) -> String {
    let mut out = String::new();
    let mut angle = 0i32;
    let mut chars = name.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '<' => angle += 1,
            '>' => angle -= 1,
            '(' if angle == 0 && !name[i..].starts_with("(anonymous namespace)") => {
                // Skip the balanced parameter list and a trailing ` const`.
                let mut depth = 1;
                for (_, d) in chars.by_ref() {
                    match d {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let rest: String = chars.clone().map(|(_, c)| c).collect();
                if let Some(after) = rest.strip_prefix(" const") {
                    for _ in 0..6 {
                        chars.next();
                    }
                    let _ = after;
                }
                continue;
            }
            // A space at the top level after a return type (not the one
            // of `operator new`, `(anonymous namespace)`, ` [clone …]`).
            ' ' if angle == 0
                && !out.ends_with("operator")
                && !out.ends_with("(anonymous")
                && !name[i + 1..].starts_with(['<', '[']) =>
            {
                out.clear();
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    // Symbol versions (`__libc_start_main@@GLIBC_2.34`) are perf's alone.
    if let Some(at) = out.find('@') {
        if !out[at..].starts_with("@plt") {
            out.truncate(at);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join("")
}

fn label_num(profile_sample: &cpuprof_profile::Sample, key: &str) -> Option<i64> {
    profile_sample
        .labels
        .iter()
        .find_map(|l| match (&l.key, &l.value) {
            (k, LabelValue::Num { value, .. }) if k == key => Some(*value),
            _ => None,
        })
}

fn label_str<'a>(sample: &'a cpuprof_profile::Sample, key: &str) -> Option<&'a str> {
    sample.labels.iter().find_map(|l| match (&l.key, &l.value) {
        (k, LabelValue::Str(v)) if k == key => Some(v.as_str()),
        _ => None,
    })
}

/// One frame: the address as perf prints it (DSO-relative for files,
/// absolute for the kernel) and the physical function's name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Frame {
    address: u64,
    name: String,
    /// The file perf names (perf's frames only).
    dso: String,
}

/// True when `a` and `b` name the same function of `dso`: glibc's
/// internal `__GI_` aliases and gcc's clone suffixes (`.constprop.0`,
/// `.isra.0`, `.part.0`, `.cold`) aside, or aliases at one address
/// (`free`/`cfree`, `mmap`/`mmap64`) in the file's symbol tables or its
/// debug file's: perf names a frame from the symbol table, we from DWARF.
///
/// Also true when we found no name (`??`) for a caller whose return
/// address perf prints is the first instruction of perf's symbol: no call
/// returns there, and we look up the byte before it, as pprof does, which
/// lies outside that symbol.
fn aliases(
    dso: &str,
    (a, address): (&str, u64),
    b: &str,
    cache: &mut HashMap<String, HashMap<String, Vec<u64>>>,
) -> bool {
    fn plain(name: &str) -> &str {
        let name = name.strip_prefix("__GI_").unwrap_or(name);
        name.split_once('.').map_or(name, |(base, _)| base)
    }
    if plain(a) == plain(b) {
        return true;
    }
    let table = cache.entry(dso.to_string()).or_insert_with(|| {
        let mut files = vec![dso.to_string()];
        let notes = Command::new("readelf").args(["-n", dso]).output();
        if let Some(id) = notes.ok().and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.lines()
                .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        }) {
            files.push(format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &id[..2],
                &id[2..]
            ));
        }
        let mut table: HashMap<String, Vec<u64>> = HashMap::new();
        for file in &files {
            for flags in [
                &["-S", "--defined-only"][..],
                &["-D", "-S", "--defined-only"][..],
            ] {
                let Ok(out) = Command::new("nm").args(flags).arg(file).output() else {
                    continue;
                };
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    // `ADDRESS SIZE TYPE NAME`, or `ADDRESS TYPE NAME` for a
                    // code label without a size (ld.so's `_dl_start_user`
                    // inside `_start`): perf names such a label, we the
                    // function around it.
                    let (address, name, label) = match fields.as_slice() {
                        [a, _, _, n] => (a, n, false),
                        [a, _, n] => (a, n, true),
                        _ => continue,
                    };
                    if let Ok(address) = u64::from_str_radix(address, 16) {
                        let name = plain(&perf_style(name)).to_string();
                        if label {
                            table
                                .entry(format!("label {name}"))
                                .or_default()
                                .push(address);
                        }
                        table.entry(name).or_default().push(address);
                    }
                }
            }
        }
        table
    });
    if table.contains_key(&format!("label {}", plain(a))) {
        return true;
    }
    if b == "??" && table.get(plain(a)).is_some_and(|x| x.contains(&address)) {
        return true;
    }
    match (table.get(plain(a)), table.get(plain(b))) {
        (Some(x), Some(y)) => x.iter().any(|v| y.contains(v)),
        _ => false,
    }
}

/// Our name for a frame perf could not name: `?` for an address, or for
/// the `file+0xOFFSET` the symbolizer gives an address outside every symbol.
fn unnamed(name: &str) -> bool {
    name == "?"
        || name
            .rsplit_once("+0x")
            .is_some_and(|(_, hex)| !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `perf script`'s samples by (tid, time in ns).
fn perf_script(path: &Path) -> HashMap<(i64, i64), Vec<Frame>> {
    let text = run_stdout(
        Command::new("perf")
            .args([
                "script",
                "--ns",
                "--no-inline",
                "-F",
                "tid,time,ip,sym,dso",
                "-i",
            ])
            .arg(path),
    );
    let mut samples = HashMap::new();
    let mut current: Option<((i64, i64), Vec<Frame>)> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(char::is_whitespace) || !line.starts_with('\t') {
            if let Some((key, frames)) = current.take() {
                samples.insert(key, frames);
            }
            let mut fields = line.split_whitespace();
            let tid: i64 = fields.next().unwrap().parse().unwrap();
            let time = fields.next().unwrap().trim_end_matches(':');
            let (s, ns) = time.split_once('.').unwrap();
            let time = s.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap();
            current = Some(((tid, time), Vec::new()));
            continue;
        }
        let line = line.trim();
        let (address, rest) = line.split_once(' ').unwrap_or((line, ""));
        let (name, dso) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
            Some((name, dso)) => (name, dso),
            None => (rest, ""),
        };
        let name = if name == "[unknown]" {
            "?".to_string()
        } else {
            perf_style(name)
        };
        current.as_mut().unwrap().1.push(Frame {
            address: u64::from_str_radix(address, 16).unwrap(),
            name,
            dso: dso.to_string(),
        });
    }
    if let Some((key, frames)) = current.take() {
        samples.insert(key, frames);
    }
    samples
}

/// How perf prints a caller's address: the return address (frame-pointer
/// callchains), or the return address minus one (DWARF unwinding). The
/// first user frame is the interrupted user instruction in both.
#[derive(Clone, Copy, PartialEq)]
enum Callers {
    ReturnAddress,
    Dwarf,
}

/// Our samples by (tid, time), frames as perf prints them.
fn our_stacks(profile: &Profile, callers: Callers) -> HashMap<(i64, i64), Vec<Frame>> {
    let mut samples = HashMap::new();
    for sample in &profile.samples {
        let key = (
            label_num(sample, "tid").unwrap(),
            label_num(sample, "timestamp_ns").unwrap(),
        );
        let mut frames = Vec::new();
        let mut seen_user = false;
        for (i, &l) in sample.locations.iter().enumerate() {
            let location = profile.location(l);
            let mapping = location.mapping.map(|m| profile.mapping(m));
            let kernel = mapping.is_some_and(|m| m.path == "[kernel.kallsyms]");
            // Ours: every frame but the first of each part stored minus one.
            let adjust = match callers {
                _ if i == 0 => 0,
                _ if kernel => 1,
                _ if !seen_user => 0,
                Callers::ReturnAddress => 1,
                Callers::Dwarf => 0,
            };
            if !kernel {
                seen_user = true;
            }
            let mut address = location.address + adjust;
            if let (Some(m), false) = (mapping, kernel) {
                address = address - m.start + m.offset;
            }
            let name = match location.lines.last() {
                Some(line) => perf_style(&profile.function(line.function).name),
                None => "?".to_string(),
            };
            let name = if unnamed(&name) {
                "?".to_string()
            } else {
                name
            };
            frames.push(Frame {
                address,
                name,
                dso: String::new(),
            });
        }
        samples.insert(key, frames);
    }
    samples
}

/// Whether `dso` has CFI (an FDE of its `.eh_frame` or `.debug_frame`, as
/// `readelf --debug-dump=frames` lists them) for `address` (true for what
/// is not a file: the kernel, the vDSO).
fn has_cfi(dso: &str, address: u64, cache: &mut HashMap<String, Vec<(u64, u64)>>) -> bool {
    if !dso.starts_with('/') {
        return true;
    }
    let ranges = cache.entry(dso.to_string()).or_insert_with(|| {
        // readelf exits 1 where it warns (ld.so's sections): the FDEs are
        // listed all the same.
        let out = Command::new("readelf")
            .args(["-W", "--debug-dump=frames", dso])
            .output()
            .expect("readelf runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let (start, end) = line.split_once(" pc=")?.1.split_once("..")?;
                Some((
                    u64::from_str_radix(start, 16).ok()?,
                    u64::from_str_radix(end.trim(), 16).ok()?,
                ))
            })
            .collect()
    });
    ranges
        .iter()
        .any(|&(start, end)| start <= address && address < end)
}

/// Compares every sample's stack, addresses then names; returns the
/// aliases met (perf's name, ours).
fn assert_same_stacks(data: &Path, callers: Callers) -> HashMap<String, String> {
    let theirs = perf_script(data);
    let profile = ours(data);
    let mine = our_stacks(&profile, callers);
    assert!(theirs.len() > 50, "only {} samples recorded", theirs.len());
    assert_eq!(mine.len(), theirs.len(), "sample count");
    let mut name_mismatches = Vec::new();
    let mut symbol_tables = HashMap::new();
    let mut alias_of = HashMap::new();
    let mut cfi_ranges = HashMap::new();
    // perf marks a stack it lost its way in with a last `[unknown]` frame
    // at address -1; its frames before that may be wrong too (seen once:
    // a page fault in libstdc++ during exit, where perf went from the
    // destructor straight to `__run_exit_handlers`, past `_dl_fini`).
    // Such stacks are no reference: left out, and they must be rare.
    let mut perf_lost = 0;
    for (key, frames) in &theirs {
        let ours = mine
            .get(key)
            .unwrap_or_else(|| panic!("no sample of tid {} at {} ns", key.0, key.1));
        if frames
            .last()
            .is_some_and(|f| f.address == u64::MAX && f.dso == "[unknown]")
        {
            perf_lost += 1;
            continue;
        }
        // perf's DWARF unwinding stops at a frame without CFI; framehop
        // takes such a frame, when it is the leaf, for one that has not
        // pushed anything yet and goes on from the return address on the
        // stack's top. So ours may be longer than perf's, only past a
        // last frame of perf's that no CFI of its file covers:
        // - glibc's clone3 ends its unwind entry before the `syscall` (the
        //   child's frame would be wrong): a sample inside that syscall is
        //   right in the parent (for the child, whose new stack holds no
        //   return address, framehop stops as perf does);
        // - crti.o's `_init` and crtstuff's `__do_global_dtors_aux` have
        //   no CFI at all: a library's, sampled at dlopen and dlclose.
        let ours = match (frames.last(), ours.get(..frames.len())) {
            (Some(last), Some(prefix))
                if callers == Callers::Dwarf
                    && ours.len() > frames.len()
                    && !has_cfi(&last.dso, last.address, &mut cfi_ranges) =>
            {
                prefix
            }
            _ => ours.as_slice(),
        };
        // ld.so's lazy-binding trampoline (`_dl_runtime_resolve_*`, a
        // lazily bound function's first call) defines its CFA on rbx; no
        // allowance: those stacks are unwound with every register and
        // compared like the others.
        let a: Vec<u64> = frames.iter().map(|f| f.address).collect();
        let b: Vec<u64> = ours.iter().map(|f| f.address).collect();
        assert_eq!(
            b.iter().map(|a| format!("{a:x}")).collect::<Vec<_>>(),
            a.iter().map(|a| format!("{a:x}")).collect::<Vec<_>>(),
            "addresses of the sample of tid {} at {} ns: ours, then perf script's\nperf: {frames:?}\nours: {ours:?}",
            key.0,
            key.1
        );
        for (x, y) in frames.iter().zip(ours) {
            if x.name == y.name {
                continue;
            }
            // A function template's mangled name holds its return type,
            // which our demangled name keeps (`void std::vector<…>::
            // _M_realloc_insert<…>`) and perf's drops.
            if y.name
                .strip_suffix(x.name.as_str())
                .is_some_and(|ret| !ret.is_empty() && !ret.ends_with(':') && !ret.contains('('))
            {
                continue;
            }
            if aliases(&x.dso, (&x.name, x.address), &y.name, &mut symbol_tables) {
                alias_of.insert(x.name.clone(), y.name.clone());
                continue;
            }
            name_mismatches.push(format!(
                "{:x} in {}: perf {} / ours {}",
                x.address, x.dso, x.name, y.name
            ));
        }
    }
    assert!(
        perf_lost * 100 <= theirs.len(),
        "{perf_lost} of {} stacks perf could not unwind",
        theirs.len()
    );
    name_mismatches.sort();
    name_mismatches.dedup();
    assert!(
        name_mismatches.is_empty(),
        "names differ: {name_mismatches:#?}"
    );
    alias_of
}

/// `perf report --stdio --no-children --sort sym`'s shares (percent) by
/// function name.
fn perf_flat(data: &Path) -> Vec<(String, f64)> {
    let text = run_stdout(
        Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "sym",
                "-g",
                "none",
                "-q",
                "--no-inline",
                "-i",
            ])
            .arg(data),
    );
    let mut rows = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((share, rest)) = line.split_once('%') else {
            continue;
        };
        let Ok(share) = share.trim().parse::<f64>() else {
            continue;
        };
        let name = rest.trim();
        let name = name
            .strip_prefix("[.] ")
            .or_else(|| name.strip_prefix("[k] "))
            .unwrap_or(name)
            .trim();
        let name = if name.starts_with("0x") || name == "[unknown]" {
            "?".to_string()
        } else {
            perf_style(name)
        };
        rows.push((name, share));
    }
    rows
}

/// Our flat shares (percent of the first sample type) by the leaf's
/// physical function.
fn our_flat(profile: &Profile) -> HashMap<String, f64> {
    let mut by_name: HashMap<String, i64> = HashMap::new();
    let mut total = 0i64;
    for sample in &profile.samples {
        let value = sample.values[0];
        total += value;
        let name = sample
            .locations
            .first()
            .and_then(|&l| profile.location(l).lines.last())
            .map(|line| perf_style(&profile.function(line.function).name))
            .filter(|name| !unnamed(name))
            .unwrap_or_else(|| "?".to_string());
        *by_name.entry(name).or_default() += value;
    }
    by_name
        .into_iter()
        .map(|(k, v)| (k, v as f64 * 100.0 / total as f64))
        .collect()
}

fn assert_same_flat(data: &Path, alias_of: &HashMap<String, String>) {
    let theirs: Vec<(String, f64)> = perf_flat(data)
        .into_iter()
        .map(|(name, share)| (alias_of.get(&name).cloned().unwrap_or(name), share))
        .collect();
    let profile = ours(data);
    let mine = our_flat(&profile);
    assert!(!theirs.is_empty());
    let mut sum = 0.0;
    for (name, share) in &theirs {
        sum += share;
        // `@plt`: perf's name for a PLT stub of a symbol-less relocation
        // (libc's IFUNC calls), ours `*ABS*+0x9c840@plt` as objdump's.
        if name == "?" || name == "@plt" {
            continue;
        }
        let our = mine.get(name).copied().unwrap_or(0.0);
        assert!(
            (our - share).abs() <= 0.006,
            "{name}: perf report says {share:.2}%, we say {our:.3}%\nperf: {theirs:?}\nours: {mine:?}"
        );
    }
    assert!(sum > 99.0, "perf's rows add up to {sum}");
}

/// tests/workloads/callgraph.c built with frame pointers in `dir`.
fn callgraph(dir: &Path) -> PathBuf {
    compile(
        "gcc",
        &[&workload("callgraph.c")],
        &dir.join("callgraph"),
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    )
}

fn fp_recording(dir: &Path) -> PathBuf {
    let program = callgraph(dir);
    let data = dir.join("fp.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "2000", "-g"],
        &[program.to_str().unwrap(), "150"],
    );
    data
}

fn dwarf_recording(dir: &Path) -> PathBuf {
    let program = compile(
        "g++",
        &[&workload("perfwork.cc")],
        &dir.join("perfwork"),
        &["-O2", "-g", "-fomit-frame-pointer", "-pthread"],
    );
    let data = dir.join("dwarf.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "1000", "--call-graph", "dwarf"],
        &[program.to_str().unwrap(), "0.4", "2"],
    );
    data
}

#[test]
fn frame_pointer_recording_matches_perf_report_and_perf_script() {
    let Some(dir) = perf_dir() else { return };
    let data = fp_recording(dir.path());
    let aliases = assert_same_stacks(&data, Callers::ReturnAddress);
    assert_same_flat(&data, &aliases);
    // The labels perf_to_profile gives.
    let profile = ours(&data);
    assert_eq!(profile.sample_types[0].kind, "cpu-clock");
    assert_eq!(profile.sample_types[0].unit, "nanoseconds");
    let s = &profile.samples[0];
    assert_eq!(label_str(s, "comm"), Some("callgraph"));
    assert_eq!(label_str(s, "thread_comm"), Some("callgraph"));
    assert!(label_num(s, "pid").is_some() && label_num(s, "timestamp_ns").is_some());
    // perf records the CPU only when asked (`--sample-cpu`, `-a`): no label
    // without it (the multi-event test asks for it).
    assert_eq!(label_num(s, "cpu"), None);
    // The frames run up to main.
    let text = common::report(&["--text", "--nodecount=200"], &[&data]);
    assert!(text.contains(" main"), "{text}");
    assert!(text.contains(" leaf"), "{text}");
}

#[test]
fn dwarf_recording_without_frame_pointers_matches_perf() {
    let Some(dir) = perf_dir() else { return };
    let data = dwarf_recording(dir.path());
    let aliases = assert_same_stacks(&data, Callers::Dwarf);
    assert_same_flat(&data, &aliases);
    // Complete stacks: work::deep's frames under main.
    let text = common::report(&["--traces"], &[&data]);
    assert!(text.contains("work::deep"), "{text}");
}

/// A program that execs itself (a new image at another address): the
/// samples taken just before the exec, still waiting to be unwound when
/// the exec clears the process's mappings, are named from the image they
/// were taken in, as perf names them (they were named from no mapping, or
/// the new image's, when unwinding lagged behind the mapping events).
#[test]
fn samples_before_an_exec_are_named_from_their_own_image() {
    let Some(dir) = perf_dir() else { return };
    let d = dir.path();
    let program = compile(
        "gcc",
        &[&workload("execself.c")],
        &d.join("execself"),
        &["-O1", "-g", "-fomit-frame-pointer"],
    );
    let data = d.join("exec.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "2000", "--call-graph", "dwarf"],
        &[program.to_str().unwrap(), "0.15"],
    );
    // The samples of each image's burning function (about 300 each), by
    // (tid, time): their stacks as perf names them, ours the same. The
    // one or two samples inside `execve` itself (the old image going, the
    // new one coming) are where perf and we may part: allowed. The new
    // image's are compared for completeness only: perf (6.1 here) now and
    // then stops its unwinding of a process that exec'd at the leaf, for
    // every sample.
    let theirs = perf_script(&data);
    let mine = our_stacks(&ours(&data), Callers::Dwarf);
    let names = |frames: &[Frame]| frames.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    for function in ["burn_before", "burn_after"] {
        let keys: Vec<&(i64, i64)> = theirs
            .iter()
            .filter(|(_, frames)| frames.first().is_some_and(|f| f.name == function))
            .map(|(key, _)| key)
            .collect();
        assert!(keys.len() >= 100, "{function}: {} samples", keys.len());
        let differ: Vec<_> = keys
            .iter()
            .filter(|key| mine.get(key).map(|m| names(m)) != Some(names(&theirs[key])))
            .map(|key| (key, mine.get(key).map(|m| names(m)), names(&theirs[key])))
            .collect();
        if function == "burn_before" {
            assert!(differ.len() <= 2, "{function}: {differ:?}");
        }
        // Complete stacks: main under every one of ours.
        let complete = keys
            .iter()
            .filter(|key| {
                mine.get(key)
                    .is_some_and(|m| m.iter().any(|f| f.name == "main"))
            })
            .count();
        assert!(
            complete + 2 >= keys.len(),
            "{function}: {complete} of {}",
            keys.len()
        );
    }
}

/// Stacks through ld.so's lazy-binding trampoline (`_dl_runtime_resolve_
/// xsavec`, `_xsave` or `_fxsave` by CPU), which realigns the stack and
/// defines its CFA on rbx (framehop follows rsp and rbp only): unwound
/// with every saved register, they run on to `main` and equal perf's. The
/// workload resolves a thousand lazily bound calls per dlopen of its
/// library, again and again: about three samples in four are taken with
/// the trampoline on the stack.
#[test]
fn lazy_binding_trampoline_stacks_match_perf() {
    let Some(dir) = perf_dir() else { return };
    let d = dir.path();
    let library = compile(
        "gcc",
        &[&workload("lazylib.c")],
        &d.join("liblazy.so"),
        &[
            "-O1",
            "-g",
            "-fPIC",
            "-shared",
            "-fomit-frame-pointer",
            "-Wl,-z,lazy",
        ],
    );
    let program = compile(
        "gcc",
        &[&workload("lazymain.c")],
        &d.join("lazymain"),
        &["-O1", "-g", "-fomit-frame-pointer", "-Wl,-z,lazy"],
    );
    let data = d.join("lazy.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "1000", "--call-graph", "dwarf"],
        &[program.to_str().unwrap(), library.to_str().unwrap(), "0.4"],
    );
    let aliases = assert_same_stacks(&data, Callers::Dwarf);
    assert_same_flat(&data, &aliases);
    // Most stacks pass through the trampoline and reach main past it.
    let stacks = our_stacks(&ours(&data), Callers::Dwarf);
    let through = stacks
        .values()
        .filter(|frames| {
            let resolver = frames
                .iter()
                .position(|f| f.name.starts_with("_dl_runtime_resolve"));
            resolver.is_some_and(|i| {
                frames[i + 1..].first().is_some_and(|f| f.name == "entry")
                    && frames[i + 1..].iter().any(|f| f.name == "main")
            })
        })
        .count();
    assert!(
        through * 4 >= stacks.len(),
        "only {through} of {} stacks run through _dl_runtime_resolve to main",
        stacks.len()
    );
}

#[test]
fn pipe_mode_from_standard_input() {
    let Some(dir) = perf_dir() else { return };
    let program = callgraph(dir.path());
    let piped = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "1000",
            "-g",
            "-o",
            "-",
            "--",
        ])
        .arg(&program)
        .arg("100")
        .output()
        .unwrap();
    assert!(piped.status.success());
    let pipe_file = dir.path().join("pipe.data");
    std::fs::write(&pipe_file, &piped.stdout).unwrap();
    let out = run_with_stdin(
        cpuprof().args(["report", "--text", "--nodecount=5", "-"]),
        &piped.stdout,
    );
    let (stdout, stderr, status) = texts(&out);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.contains("leaf"), "{stdout}");
    // Every sample of the stream is read: perf script agrees.
    assert_eq!(
        ours(&pipe_file).samples.len(),
        perf_script(&pipe_file).len()
    );
}

#[test]
fn multi_event_recording_has_one_sample_type_per_event() {
    let Some(dir) = perf_dir() else { return };
    let program = callgraph(dir.path());
    let data = dir.path().join("multi.data");
    record(
        &data,
        &[
            "-e",
            "cpu-clock,task-clock",
            "-F",
            "1000",
            "-g",
            "--sample-cpu",
        ],
        &[program.to_str().unwrap(), "100"],
    );
    let profile = ours(&data);
    let kinds: Vec<&str> = profile
        .sample_types
        .iter()
        .map(|t| t.kind.as_str())
        .collect();
    assert_eq!(kinds, ["cpu-clock", "task-clock"]);
    // Each sample counts for its own event; both got samples.
    let totals = profile.totals();
    assert!(totals[0] > 0 && totals[1] > 0, "{totals:?}");
    for s in &profile.samples {
        assert!(s.values[0] == 0 || s.values[1] == 0);
        assert!(label_num(s, "cpu").is_some());
    }
    // sample_index picks one; perf report's share of `leaf` for that event.
    for event in ["cpu-clock", "task-clock"] {
        let text = common::report(&["--text", &format!("--sample_index={event}")], &[&data]);
        assert!(text.contains("leaf"), "{text}");
    }
}

#[test]
fn forking_program_separates_processes_by_labels() {
    let Some(dir) = perf_dir() else { return };
    let source = dir.path().join("forker.c");
    std::fs::write(
        &source,
        r#"#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
volatile double sink;
__attribute__((noinline)) void child_work(void) { for (long i = 0; i < 150000000; i++) sink += i * 0.5; }
__attribute__((noinline)) void parent_work(void) { for (long i = 0; i < 150000000; i++) sink += i * 0.25; }
int main(void) {
    pid_t pid = fork();
    if (pid == 0) { prctl(PR_SET_NAME, "pw-child"); child_work(); return 0; }
    parent_work();
    waitpid(pid, 0, 0);
    return 0;
}
"#,
    )
    .unwrap();
    let program = compile(
        "gcc",
        &[&source],
        &dir.path().join("forker"),
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    let data = dir.path().join("fork.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "1000", "-g"],
        &[program.to_str().unwrap()],
    );
    let profile = ours(&data);
    // Per process name, per pid: the samples' leaves.
    let mut by_comm: HashMap<String, HashMap<i64, Vec<String>>> = HashMap::new();
    for s in &profile.samples {
        let comm = label_str(s, "comm").unwrap_or("?").to_string();
        let pid = label_num(s, "pid").unwrap();
        let leaf = profile.stack_names(s).first().cloned().unwrap_or_default();
        by_comm
            .entry(comm)
            .or_default()
            .entry(pid)
            .or_default()
            .push(leaf);
    }
    let children = by_comm.get("pw-child").expect("the child's samples");
    assert_eq!(children.len(), 1, "one pid named pw-child: {children:?}");
    let (&child_pid, child) = children.iter().next().unwrap();
    // The parent is the `forker` with most samples. Until its prctl the
    // child is named `forker` too (perf's COMM event comes then): a
    // sample in that moment is the child's pid under the parent's name,
    // and there are at most a few.
    let forkers = by_comm.get("forker").expect("the parent's samples");
    let (&parent_pid, parent) = forkers
        .iter()
        .max_by_key(|(_, leaves)| leaves.len())
        .unwrap();
    assert_ne!(parent_pid, child_pid);
    for (pid, leaves) in forkers {
        assert!(
            *pid == parent_pid || (*pid == child_pid && leaves.len() * 50 <= child.len()),
            "pid {pid} named forker: {forkers:?}"
        );
    }
    assert!(child.iter().filter(|n| *n == "child_work").count() * 10 >= child.len() * 9);
    assert!(parent.iter().filter(|n| *n == "parent_work").count() * 10 >= parent.len() * 9);
    // tagfocus picks one process.
    let text = common::report(&["--text", "--tagfocus=comm=pw-child"], &[&data]);
    assert!(
        text.contains("child_work") && !text.contains("parent_work"),
        "{text}"
    );
}

#[test]
fn converted_to_pprof_go_pprof_agrees_on_top() {
    let Some(dir) = perf_dir() else { return };
    if !require_tool("pprof") {
        return;
    }
    let data = fp_recording(dir.path());
    let converted = dir.path().join("fp.pb.gz");
    run_ok(
        cpuprof()
            .args(["convert", "--to", "pprof", "-o"])
            .arg(&converted)
            .arg(&data),
    );
    let go = run_stdout(
        Command::new("pprof")
            .args(["-top", "-nodecount=5"])
            .arg(&converted)
            .env("PPROF_TMPDIR", dir.path())
            .env("HOME", dir.path()),
    );
    let mine = common::report(&["--top", "--nodecount=5"], &[&data]);
    // (name, flat%) of each row.
    let rows = |t: &str| -> Vec<(String, f64)> {
        t.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let share = f.get(1)?.strip_suffix('%')?.parse().ok()?;
                f.get(4)?.strip_suffix('%')?;
                Some((f[5..].join(" "), share))
            })
            .collect()
    };
    let (go_rows, our_rows) = (rows(&go), rows(&mine));
    assert_eq!(go_rows[0].0, our_rows[0].0, "go:\n{go}\nours:\n{mine}");
    assert!(
        (go_rows[0].1 - our_rows[0].1).abs() <= 0.1,
        "go:\n{go}\nours:\n{mine}"
    );
    // The same total, in the same unit (both print Go's summary line).
    let total = |t: &str| -> String {
        t.lines()
            .find_map(|l| l.split(" of ").nth(1))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no total in:\n{t}"))
    };
    assert_eq!(total(&go), total(&mine), "go:\n{go}\nours:\n{mine}");
    assert!(go.contains("Type: cpu-clock"), "{go}");
}

#[test]
fn truncated_and_corrupt_files_fail_with_offsets() {
    let Some(dir) = perf_dir() else { return };
    let data = fp_recording(dir.path());
    let bytes = std::fs::read(&data).unwrap();
    let cut = dir.path().join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (_, stderr, status) = common::report_texts(&["--text", cut.to_str().unwrap()], |_| {});
    assert_ne!(status, 0);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cut.data") && stderr.contains("offset"),
        "{stderr}"
    );
    assert!(!stderr.contains("panick"), "{stderr}");
}

#[test]
fn perf_script_text_reads_like_the_file() {
    let Some(dir) = perf_dir() else { return };
    let data = fp_recording(dir.path());
    let script = run_stdout(Command::new("perf").arg("script").arg("-i").arg(&data));
    let text_file = dir.path().join("fp.script");
    std::fs::write(&text_file, &script).unwrap();
    let (format, profile) =
        cpuprof_profile::read_profile(script.as_bytes(), &ReadOptions::default()).unwrap();
    assert_eq!(format, cpuprof_profile::Format::PerfScript);
    // The same samples, values and leaf functions as the perf.data file:
    // callgraph.c's functions by name, the rest together (perf script
    // names a libc function by one of its aliases at the same address,
    // `__GI___open_nocancel` for our `__GI___open64_nocancel`, when such
    // a sample is taken).
    let file = ours(&data);
    assert_eq!(profile.totals(), file.totals());
    assert_eq!(profile.sample_types, file.sample_types);
    const PROGRAM: &[&str] = &[
        "leaf",
        "is_odd",
        "is_even",
        "fa",
        "fb",
        "rec",
        "spin_static",
        "tiny",
        "_underscored",
        "main",
    ];
    let leaves = |p: &Profile| {
        let mut by: HashMap<String, i64> = HashMap::new();
        for s in &p.samples {
            let name = s
                .locations
                .first()
                .and_then(|&l| p.location(l).lines.last())
                .map(|l| perf_style(&p.function(l.function).name))
                .unwrap_or_default();
            let name = if PROGRAM.contains(&name.as_str()) {
                name
            } else {
                "(elsewhere)".to_string()
            };
            *by.entry(name).or_default() += s.values[0];
        }
        by
    };
    assert_eq!(leaves(&profile), leaves(&file));
    // Through the command line, from standard input too.
    let out = run_with_stdin(cpuprof().args(["report", "--text", "-"]), script.as_bytes());
    let (stdout, stderr, status) = texts(&out);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.contains("leaf"), "{stdout}");
}

#[test]
fn node_perf_basic_prof_names_javascript_functions() {
    let Some(dir) = perf_dir() else { return };
    if !require_tool("node") {
        return;
    }
    let app = dir.path().join("app.js");
    std::fs::write(
        &app,
        "function hotLoop(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001; return s; }\n\
         function outer() { let t = 0; for (let k = 0; k < 40; k++) t += hotLoop(1e6); return t; }\n\
         const end = Date.now() + 600; let r = 0; while (Date.now() < end) r += outer(); console.log(r > 0);\n",
    )
    .unwrap();
    let data = dir.path().join("node.data");
    record(
        &data,
        &["-e", "cpu-clock", "-F", "1000", "-g"],
        &["node", "--perf-basic-prof", app.to_str().unwrap()],
    );
    let text = common::report(&["--text", "--nodecount=5"], &[&data]);
    let script = run_stdout(
        Command::new("perf")
            .args(["script", "-F", "ip,sym", "-i"])
            .arg(&data),
    );
    // node's map, left in /tmp, goes with the test.
    let profile = ours(&data);
    let pids: std::collections::BTreeSet<i64> = profile
        .samples
        .iter()
        .filter_map(|s| label_num(s, "pid"))
        .collect();
    let named = profile
        .functions
        .iter()
        .any(|f| f.name == "hotLoop" && f.filename.ends_with("app.js"));
    for pid in pids {
        let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    }
    // The hot JavaScript function is among the top five, named from the
    // JIT map as perf names it.
    assert!(script.contains("hotLoop"), "perf names it");
    assert!(text.contains("hotLoop"), "{text}");
    assert!(named, "hotLoop in app.js");
}
