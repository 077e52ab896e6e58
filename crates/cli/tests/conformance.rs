//! Conformance of `cpuprof report --text` with `google-pprof --text` (perl
//! pprof, Debian's google-perftools) on profiles written by Debian's
//! libprofiler.so for C/C++ workloads compiled at test time.
//!
//! For every row google-pprof prints, cpuprof must print a row with the
//! same flat and cum, and the same `Total`. Names are compared as they are,
//! with these documented exceptions:
//! - perl pprof marks inlined frames `name (inline)` and keeps them apart
//!   from real frames of the same function; cpuprof (like Go pprof) names
//!   them plainly. A `X (inline)` row is compared with our `X` row unless
//!   google-pprof also prints a plain `X` row (then the two perl rows are
//!   two nodes we merge, and neither is compared).
//! - perl pprof names a function by whichever `nm` symbol its sort order
//!   yields among the aliases at one address (glibc's `__GI___clock_gettime`,
//!   `__libc_start_main_impl`, `__cxa_finalize@@GLIBC_2.2.5`); cpuprof uses
//!   the debug information's name. Two names are the same function when
//!   `nm` lists both at the same address of the same file (the test builds
//!   that table from the profile's mapped files and their debug files).
//! - perl pprof shortens names with regular expressions that also eat
//!   `(anonymous namespace)` (leaving `::f`) and the `()` of `operator()`.
//!   The comparison therefore runs cpuprof with `--full-names` and shortens
//!   our names with perl's own rules, in this test; a perl name that two of
//!   our functions shorten to (overloads, template instances) is skipped.
//!   Our own short names are checked separately (`cxx_names`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_testkit::{
    build_spin, compile, libprofiler, profile_with_libprofiler, require_tool, run_stdout, workload,
    TempDir, TextReport, TextRow,
};

mod common;
use common::cpuprof;

/// Names that `nm` lists at the same address of the same file.
#[derive(Default)]
struct Aliases {
    /// name → set of (file index, address)
    places: HashMap<String, HashSet<(usize, u64)>>,
}

impl Aliases {
    fn for_profile(profile: &Path) -> Aliases {
        let data = std::fs::read(profile).unwrap();
        let (_, p) = cpuprof_profile::read_profile(&data, &Default::default()).unwrap();
        let mut files: Vec<PathBuf> = Vec::new();
        for m in &p.mappings {
            let path = PathBuf::from(&m.path);
            if m.path.starts_with('/') && path.exists() && !files.contains(&path) {
                files.push(path.clone());
                if let Some(debug) = build_id_debug_file(&path) {
                    files.push(debug);
                }
            }
        }
        let mut aliases = Aliases::default();
        for (i, file) in files.iter().enumerate() {
            for dynamic in [false, true] {
                let mut cmd = Command::new("nm");
                cmd.arg("--defined-only");
                if dynamic {
                    cmd.arg("-D");
                }
                let Ok(out) = cmd.arg(file).output() else {
                    continue;
                };
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    let mut f = line.splitn(3, ' ');
                    let (Some(addr), Some(_kind), Some(name)) = (f.next(), f.next(), f.next())
                    else {
                        continue;
                    };
                    let Ok(addr) = u64::from_str_radix(addr, 16) else {
                        continue;
                    };
                    let name = name.split('@').next().unwrap_or(name).to_string();
                    aliases.places.entry(name).or_default().insert((i, addr));
                }
            }
        }
        aliases
    }

    fn same(&self, a: &str, b: &str) -> bool {
        let strip = |s: &str| s.split('@').next().unwrap_or(s).to_string();
        let (a, b) = (strip(a), strip(b));
        if a == b {
            return true;
        }
        match (self.places.get(&a), self.places.get(&b)) {
            (Some(x), Some(y)) => !x.is_disjoint(y),
            _ => false,
        }
    }
}

/// The separate debug file of `path` under /usr/lib/debug/.build-id, if any.
fn build_id_debug_file(path: &Path) -> Option<PathBuf> {
    let out = Command::new("readelf").arg("-n").arg(path).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))?
        .trim()
        .to_string();
    let debug = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    debug.exists().then_some(debug)
}

/// perl pprof's ShortFunctionName, applied to our full names.
fn perl_short_name(name: &str) -> String {
    cpuprof_symbolize::demangle::perl_short_name(name)
}

/// Our full-name report with names shortened by perl's rules; rows whose
/// perl name is shared by several of our rows are dropped.
fn with_perl_names(full: &str) -> TextReport {
    let mut report = TextReport::parse(full);
    let mut count: HashMap<String, usize> = HashMap::new();
    for row in &mut report.rows {
        row.name = perl_short_name(&row.name);
        *count.entry(row.name.clone()).or_default() += 1;
    }
    report.rows.retain(|r| count[&r.name] == 1);
    report
}

/// Compares the two reports as the module documentation says; returns the
/// number of rows compared. With `inline_rows` false, perl's `(inline)`
/// rows are not compared (see `cxx_names`).
fn assert_conforms(
    ours_full: &str,
    theirs: &str,
    aliases: &Aliases,
    what: &str,
    inline_rows: bool,
) -> usize {
    let ours = with_perl_names(ours_full);
    let all_ours = TextReport::parse(ours_full);
    let theirs = TextReport::parse(theirs);
    assert!(theirs.total > 0, "{what}: google-pprof printed no total");
    assert_eq!(ours.total, theirs.total, "{what}: Total differs");
    let plain: HashSet<&str> = theirs.rows.iter().map(|r| r.name.as_str()).collect();
    let mut failures = Vec::new();
    // perl rows grouped by the row of ours they are: perl may split one
    // function over two names (its nm name and addr2line's unqualified one).
    let mut groups: HashMap<usize, Vec<&TextRow>> = HashMap::new();
    let mut vdso_flat = 0;
    for row in &theirs.rows {
        let name = match row.name.strip_suffix(" (inline)") {
            Some(_) if !inline_rows => continue,
            Some(base) if plain.contains(base) => continue,
            Some(base) => base,
            None if plain.contains(format!("{} (inline)", row.name).as_str()) => continue,
            None => row.name.as_str(),
        };
        // perl prints an address it has no symbol entry for without `0x`.
        let bare_address = name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit());
        let with_prefix = format!("0x{name}");
        let name = if bare_address {
            with_prefix.as_str()
        } else {
            name
        };
        let qualified = format!("::{name}");
        let found = ours
            .rows
            .iter()
            .position(|r| r.name == name)
            .or_else(|| ours.rows.iter().position(|r| aliases.same(&r.name, name)))
            .or_else(|| ours.rows.iter().position(|r| r.name.ends_with(&qualified)));
        match found {
            Some(i) => groups.entry(i).or_default().push(row),
            None if all_ours
                .rows
                .iter()
                .any(|r| perl_short_name(&r.name) == name) =>
            {
                // several of our functions have this perl name
            }
            // perl cannot read the vDSO (no file): its addresses stay
            // bare; we name them from this machine's vDSO. Compared below.
            None if cpuprof_testkit::vdso_frame(name) == "[vdso]" => vdso_flat += row.flat,
            None => failures.push(format!(
                "{name}: google-pprof flat {} cum {}, missing from cpuprof",
                row.flat, row.cum
            )),
        }
    }
    let our_vdso_flat: i64 = all_ours
        .rows
        .iter()
        .filter(|r| cpuprof_testkit::vdso_frame(&r.name) == "[vdso]")
        .map(|r| r.flat)
        .sum();
    if vdso_flat != our_vdso_flat {
        failures.push(format!(
            "google-pprof's bare addresses (the vDSO) flat {vdso_flat}, cpuprof's __vdso_ functions flat {our_vdso_flat}"
        ));
    }
    let mut compared = 0;
    for (i, rows) in &groups {
        let r = &ours.rows[*i];
        let flat: i64 = rows.iter().map(|t| t.flat).sum();
        let cum_max = rows.iter().map(|t| t.cum).max().unwrap_or(0);
        let cum_sum: i64 = rows.iter().map(|t| t.cum).sum();
        let ok = if rows.len() == 1 {
            r.flat == flat && r.cum == cum_max
        } else {
            // Flat values add up; cum values of the parts overlap.
            r.flat == flat && (cum_max..=cum_sum).contains(&r.cum)
        };
        if ok {
            compared += rows.len();
        } else {
            let theirs: Vec<String> = rows
                .iter()
                .map(|t| format!("{} flat {} cum {}", t.name, t.flat, t.cum))
                .collect();
            failures.push(format!(
                "google-pprof {}; cpuprof {} flat {} cum {}",
                theirs.join(" + "),
                r.name,
                r.flat,
                r.cum
            ));
        }
    }
    failures.sort();
    assert!(
        failures.is_empty(),
        "{what}: {} of {} rows differ:\n{}",
        failures.len(),
        theirs.rows.len(),
        failures.join("\n")
    );
    compared
}

/// The rows of Go pprof's `-top` output, values converted to samples of
/// `period_ns` and the `(inline)` marker removed.
fn parse_go_top(text: &str, period_ns: i64) -> Vec<TextRow> {
    let value = |s: &str| -> Option<i64> {
        let (number, unit) =
            s.split_at(s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len()));
        let number: f64 = number.parse().ok()?;
        let ns = match unit {
            "" => number,
            "ns" => number,
            "us" => number * 1e3,
            "ms" => number * 1e6,
            "s" => number * 1e9,
            _ => return None,
        };
        Some((ns / period_ns as f64).round() as i64)
    };
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !fields[1].ends_with('%') {
                return None;
            }
            let flat = value(fields[0])?;
            let cum = value(fields[3])?;
            let name = fields[5..].join(" ");
            let name = name.strip_suffix(" (inline)").unwrap_or(&name).to_string();
            Some(TextRow { flat, cum, name })
        })
        .collect()
}

fn google_pprof(args: &[&str], binary: &Path, profiles: &[&Path]) -> String {
    let mut cmd = Command::new("google-pprof");
    cmd.arg("--text").args(args).arg(binary).args(profiles);
    run_stdout(&mut cmd)
}

fn ours(args: &[&str], binary: &Path, profiles: &[&Path]) -> String {
    let mut cmd = cpuprof();
    cmd.args(["report", "--text"])
        .args(args)
        .arg(binary)
        .args(profiles);
    run_stdout(&mut cmd)
}

fn ours_full(args: &[&str], binary: &Path, profiles: &[&Path]) -> String {
    let mut all = vec!["--full-names"];
    all.extend_from_slice(args);
    ours(&all, binary, profiles)
}

struct Case {
    /// Holds the files until the test ends.
    _dir: TempDir,
    binary: PathBuf,
    profile: PathBuf,
}

/// Builds spin with `flags` and profiles `spin args` with libprofiler.
fn spin_case(flags: &[&str], args: &[&str]) -> Option<Case> {
    if !require_tool("google-pprof") {
        return None;
    }
    let lib = libprofiler()?;
    let dir = TempDir::new().unwrap();
    let (binary, libhot) = build_spin(dir.path(), "spin", flags);
    let profile = dir.path().join("spin.prof");
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("LIBHOT", libhot.to_str().unwrap()))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    profile_with_libprofiler(&lib, &binary, &args, &profile, 1000);
    Some(Case {
        _dir: dir,
        binary,
        profile,
    })
}

fn check(case: &Case, args: &[&str], what: &str) -> usize {
    check_rows(case, args, what, true)
}

fn check_rows(case: &Case, args: &[&str], what: &str, inline_rows: bool) -> usize {
    let aliases = Aliases::for_profile(&case.profile);
    let theirs = google_pprof(args, &case.binary, &[&case.profile]);
    let ours = ours_full(args, &case.binary, &[&case.profile]);
    assert_conforms(&ours, &theirs, &aliases, what, inline_rows)
}

#[test]
fn spin_without_frame_pointers_one_thread() {
    let Some(case) = spin_case(&[], &["-s", "1"]) else {
        return;
    };
    let n = check(&case, &[], "spin -O2 (no frame pointers)");
    assert!(n >= 8, "only {n} rows compared");
}

#[test]
fn spin_with_frame_pointers_three_threads() {
    let Some(case) = spin_case(&["-fno-omit-frame-pointer"], &["-s", "0.4", "-t", "3"]) else {
        return;
    };
    let n = check(&case, &[], "spin -fno-omit-frame-pointer -t 3");
    assert!(n >= 10, "only {n} rows compared");
}

#[test]
fn spin_with_dlopened_library() {
    let Some(case) = spin_case(&[], &["-s", "0.6", "-t", "2", "-l", "LIBHOT"]) else {
        return;
    };
    let n = check(&case, &[], "spin -l libhot.so");
    let ours = TextReport::parse(&ours(&[], &case.binary, &[&case.profile]));
    assert!(
        ours.row("lib_inner").is_some_and(|r| r.flat > 0),
        "lib_inner missing"
    );
    assert!(n >= 8, "only {n} rows compared");
}

#[test]
fn spin_non_pie() {
    let Some(case) = spin_case(&["-no-pie"], &["-s", "0.6"]) else {
        return;
    };
    check(&case, &[], "spin -no-pie");
}

#[test]
fn focus_ignore_and_nodecount_agree() {
    let Some(case) = spin_case(&[], &["-s", "0.8", "-t", "2"]) else {
        return;
    };
    check(&case, &["--focus=burn_b"], "--focus=burn_b");
    check(&case, &["--ignore=recurse"], "--ignore=recurse");
    check(
        &case,
        &["--focus=work", "--ignore=burn_c"],
        "--focus=work --ignore=burn_c",
    );
}

#[test]
fn lines_granularity_agrees_on_the_workload_lines() {
    let Some(case) = spin_case(&[], &["-s", "0.8"]) else {
        return;
    };
    let theirs = TextReport::parse(&google_pprof(&["--lines"], &case.binary, &[&case.profile]));
    let ours = TextReport::parse(&ours(&["--lines"], &case.binary, &[&case.profile]));
    assert_eq!(ours.total, theirs.total);
    let mut compared = 0;
    for row in theirs
        .rows
        .iter()
        .filter(|r| r.name.contains("spin.c:") && !r.name.contains("(inline)"))
    {
        let r = ours
            .row(&row.name)
            .unwrap_or_else(|| panic!("missing line row {}", row.name));
        assert_eq!((r.flat, r.cum), (row.flat, row.cum), "{}", row.name);
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} line rows compared");
}

/// perl pprof symbolizes every profile with the first profile's mappings,
/// so the two runs are made with address-space randomization off
/// (`setarch -R`) to give them the same mappings.
#[test]
fn several_profiles_are_summed() {
    if !require_tool("google-pprof") || !require_tool("setarch") {
        return;
    }
    let Some(lib) = libprofiler() else { return };
    let dir = TempDir::new().unwrap();
    let (binary, _) = build_spin(dir.path(), "spin", &[]);
    let first = dir.path().join("first.prof");
    let second = dir.path().join("second.prof");
    for (profile, threads) in [(&first, "1"), (&second, "2")] {
        // The variables go to the workload only (through env), not to
        // setarch, which would otherwise profile itself into the file.
        let status = Command::new("setarch")
            .args(["-R", "--", "env"])
            .arg(format!("LD_PRELOAD={}", lib.display()))
            .arg(format!("CPUPROFILE={}", profile.display()))
            .arg("CPUPROFILE_FREQUENCY=1000")
            .arg(&binary)
            .args(["-s", "0.5", "-t", threads])
            .output()
            .unwrap()
            .status;
        assert!(status.success());
    }
    let aliases = Aliases::for_profile(&first);
    let theirs = google_pprof(&[], &binary, &[&first, &second]);
    let ours = ours_full(&[], &binary, &[&first, &second]);
    assert_conforms(&ours, &theirs, &aliases, "two profiles summed", true);
    let one = TextReport::parse(&ours_full(&[], &binary, &[&first])).total;
    let two = TextReport::parse(&ours_full(&[], &binary, &[&second])).total;
    assert_eq!(TextReport::parse(&ours).total, one + two);
}

#[test]
fn cxx_names() {
    if !require_tool("google-pprof") {
        return;
    }
    let Some(lib) = libprofiler() else { return };
    let dir = TempDir::new().unwrap();
    let binary = compile(
        "g++",
        &[&workload("cxx.cc")],
        &dir.path().join("cxx"),
        &["-O2", "-g"],
    );
    let profile = dir.path().join("cxx.prof");
    profile_with_libprofiler(&lib, &binary, &["1"], &profile, 1000);
    let case = Case {
        _dir: dir,
        binary,
        profile,
    };
    // perl pprof names inlined frames with binutils' addr2line, which
    // misnames inlined functions without a linkage name in gcc 12's DWARF 5
    // (crates/symbolize/tests/addr2line.rs checks ours against readelf's
    // decoded line table there): its `(inline)` rows are not compared here.
    check_rows(&case, &[], "C++ workload", false);
    let ours = TextReport::parse(&ours(&[], &case.binary, &[&case.profile]));
    for name in [
        "shapes::Accumulator::add_all",
        "(anonymous namespace)::hash_strings",
        "shapes::Accumulator::operator()",
        "std::__introsort_loop",
    ] {
        assert!(
            ours.row(name).is_some_and(|r| r.cum > 0),
            "{name} missing:\n{ours:?}"
        );
    }
    // Go pprof names functions as we do (its `(inline)` marker aside):
    // every row of `pprof -top` must be ours, name and numbers (Go prints
    // time: 1 ms per sample at 1000 Hz).
    if require_tool("pprof") {
        let top = run_stdout(
            Command::new("pprof")
                .args(["-top", "-nodefraction=0", "-nodecount=100000"])
                .arg(&case.binary)
                .arg(&case.profile),
        );
        let go = parse_go_top(&top, 1_000_000);
        let aliases = Aliases::for_profile(&case.profile);
        assert!(go.len() >= 10, "Go pprof printed {} rows", go.len());
        // Go pprof names an unsymbolizable address by its mapping
        // (`[vdso]`); we name its functions from this machine's vDSO. Rows
        // of fewer than 5 samples are libc's, sampled now and then, whose
        // leaf the two tools may give different aliases (`mmap` with a
        // flat of 1 for us, 0 for Go, in one full run): left out.
        for row in go.iter().filter(|r| !r.name.starts_with('[') && r.cum >= 5) {
            let r = ours
                .row(&row.name)
                .or_else(|| ours.rows.iter().find(|r| aliases.same(&r.name, &row.name)))
                .unwrap_or_else(|| panic!("Go pprof row {} missing from cpuprof", row.name));
            assert_eq!((r.flat, r.cum), (row.flat, row.cum), "{}", row.name);
        }
    }
}
