//! `cpuprof report --list` and `--disasm` on profiles written by Debian's
//! libprofiler.so for C workloads compiled at test time: their numbers
//! agree with `--text`, `--list` agrees line by line with perl pprof
//! (`google-pprof --list`) on a function without inlining, sources are
//! found again after a move (`--source_path`, `--trim_path`), inlined
//! code is listed at the inlined function's lines, and the common report
//! options (several profiles, `--base`, `--focus`, `--ignore`, `-o`) apply.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cpuprof_testkit::{
    build_spin, libprofiler, profile_with_libprofiler, require_tool, run_ok, run_stdout, TempDir,
    TextReport,
};

mod common;
use common::{cpuprof, report};

/// A listed function: header totals and (flat, cum) per line or address.
#[derive(Debug, Default)]
struct Routine {
    header: String,
    flat: i64,
    cum: i64,
    /// Line number (--list) or address (--disasm) → (flat, cum).
    rows: BTreeMap<u64, (i64, i64)>,
    /// --disasm: source line rows, (flat, cum) per `file:line` group.
    line_rows: Vec<(i64, i64)>,
    text: String,
}

fn value(s: &str) -> Option<i64> {
    if s == "." {
        Some(0)
    } else {
        s.parse().ok()
    }
}

/// Parses `--list` output (ours or perl pprof's).
fn parse_list(text: &str) -> Vec<Routine> {
    let mut out: Vec<Routine> = Vec::new();
    for line in text.lines() {
        if line.starts_with("ROUTINE ") {
            out.push(Routine {
                header: line.to_string(),
                ..Routine::default()
            });
            continue;
        }
        let Some(r) = out.last_mut() else { continue };
        r.text.push_str(line);
        r.text.push('\n');
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 3 && fields[2] == "Total" {
            r.flat = value(fields[0]).unwrap();
            r.cum = value(fields[1]).unwrap();
            continue;
        }
        if fields.len() < 3 {
            continue;
        }
        let (Some(flat), Some(cum)) = (value(fields[0]), value(fields[1])) else {
            continue;
        };
        let Some(Ok(number)) = fields[2].strip_suffix(':').map(str::parse::<u64>) else {
            continue;
        };
        let row = r.rows.entry(number).or_default();
        row.0 += flat;
        row.1 += cum;
    }
    out
}

/// Parses our `--disasm` output: instruction rows are `flat cum addr:`
/// with a hex address after 8 spaces; source rows `flat cum line:`.
fn parse_disasm(text: &str) -> Vec<Routine> {
    let mut out: Vec<Routine> = Vec::new();
    for line in text.lines() {
        if line.starts_with("ROUTINE ") {
            out.push(Routine {
                header: line.to_string(),
                ..Routine::default()
            });
            continue;
        }
        let Some(r) = out.last_mut() else { continue };
        r.text.push_str(line);
        r.text.push('\n');
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 3 && fields[2] == "samples" {
            r.flat = value(fields[0]).unwrap();
            r.cum = value(fields[1]).unwrap();
            continue;
        }
        if fields.len() < 3 || line.len() < 14 {
            continue;
        }
        let (Some(flat), Some(cum)) = (value(fields[0]), value(fields[1])) else {
            continue;
        };
        let Some(tag) = fields[2].strip_suffix(':') else {
            continue;
        };
        if line[13..].starts_with("       ") {
            let address = u64::from_str_radix(tag, 16).unwrap();
            r.rows.insert(address, (flat, cum));
        } else {
            r.line_rows.push((flat, cum));
        }
    }
    out
}

/// The rows with samples.
fn nonzero(r: &Routine) -> BTreeMap<u64, (i64, i64)> {
    r.rows
        .iter()
        .filter(|(_, v)| **v != (0, 0))
        .map(|(k, v)| (*k, *v))
        .collect()
}

/// A profiled build of a workload.
struct Case {
    dir: TempDir,
    binary: PathBuf,
    profile: PathBuf,
}

/// spin built with `flags`, profiled for `seconds` at 1000 Hz.
fn spin_case(flags: &[&str], seconds: &str) -> Option<Case> {
    let lib = libprofiler()?;
    let dir = TempDir::new().unwrap();
    let (binary, _) = build_spin(dir.path(), "spin", flags);
    let profile = dir.path().join("spin.prof");
    profile_with_libprofiler(&lib, &binary, &["-s", seconds], &profile, 1000);
    Some(Case {
        dir,
        binary,
        profile,
    })
}

/// The flat and cum of `name` in `--text` with `args`.
fn text_row(case: &Case, args: &[&str], name: &str) -> (i64, i64) {
    let mut all = vec!["--text"];
    all.extend_from_slice(args);
    let text = report(&all, &[&case.binary, &case.profile]);
    let parsed = TextReport::parse(&text);
    parsed
        .row(name)
        .map(|r| (r.flat, r.cum))
        .unwrap_or_else(|| panic!("no row {name} in\n{text}"))
}

/// `--list` of the three burn functions: per-line flat sums to the
/// function's flat, the header is the function's flat and cum, and no
/// line's cum exceeds it.
fn check_list_against_text(case: &Case) {
    let text = report(&["--list=^burn_"], &[&case.binary, &case.profile]);
    let routines = parse_list(&text);
    assert_eq!(routines.len(), 3, "{text}");
    for name in ["burn_a", "burn_b", "burn_c"] {
        let r = routines
            .iter()
            .find(|r| r.header.contains(&format!(" {name} in ")))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        assert!(r.header.ends_with("spin.c"), "{}", r.header);
        let (flat, cum) = text_row(case, &[], name);
        assert!(cum > 0, "{name} has no samples");
        assert_eq!((r.flat, r.cum), (flat, cum), "{name} totals:\n{}", r.text);
        let sum: i64 = r.rows.values().map(|v| v.0).sum();
        assert_eq!(sum, flat, "{name}: per-line flat sum\n{}", r.text);
        let max = r.rows.values().map(|v| v.1).max().unwrap();
        assert!(max <= cum && max > 0, "{name}: line cum {max} vs {cum}");
        // The source text is there, and the hot loop line has most of it.
        assert!(
            r.text.contains("for (int i = 0; i < 100000; i++)"),
            "{}",
            r.text
        );
    }
}

#[test]
fn list_numbers_agree_with_text_pie() {
    let Some(case) = spin_case(&[], "1") else {
        return;
    };
    check_list_against_text(&case);
}

#[test]
fn list_numbers_agree_with_text_non_pie() {
    let Some(case) = spin_case(&["-no-pie"], "1") else {
        return;
    };
    check_list_against_text(&case);
}

/// Perl pprof attributes inlined code to the caller's line, so it is
/// compared on a build without inlining; and it counts a recursive
/// function's cum once per frame, so on a function that does not recurse.
#[test]
fn list_agrees_with_google_pprof_per_line() {
    if !require_tool("google-pprof") {
        return;
    }
    let Some(case) = spin_case(&["-fno-inline"], "1") else {
        return;
    };
    // perl pprof does not match `^burn_b$` (it matches a decorated
    // name); `burn_b` names one function in both.
    let ours = report(&["--list=burn_b"], &[&case.binary, &case.profile]);
    let mut cmd = Command::new("google-pprof");
    cmd.arg("--list=burn_b")
        .arg(&case.binary)
        .arg(&case.profile);
    let theirs = run_stdout(&mut cmd);
    let (ours_parsed, theirs_parsed) = (parse_list(&ours), parse_list(&theirs));
    assert_eq!(ours_parsed.len(), 1, "{ours}");
    assert_eq!(theirs_parsed.len(), 1, "{theirs}");
    let (o, t) = (&ours_parsed[0], &theirs_parsed[0]);
    assert_eq!(o.header, t.header);
    assert_eq!(
        (o.flat, o.cum),
        (t.flat, t.cum),
        "ours\n{ours}\ntheirs\n{theirs}"
    );
    assert_eq!(nonzero(o), nonzero(t), "ours\n{ours}\ntheirs\n{theirs}");
    // The layout too: the same lines, context and markers, byte for byte.
    assert_eq!(ours, theirs);
    assert!(o.flat > 0);
}

/// The workload compiled from a copy of its source at `dir/build/spin.c`.
fn spin_from_copy(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let lib = libprofiler()?;
    let build = dir.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let source = build.join("spin.c");
    std::fs::copy(cpuprof_testkit::workload("spin.c"), &source).unwrap();
    let binary = dir.join("spin");
    run_ok(
        Command::new("gcc")
            .args(["-O2", "-g", "-pthread", "-o"])
            .arg(&binary)
            .arg(&source)
            .args(["-ldl", "-lm"]),
    );
    let profile = dir.join("spin.prof");
    profile_with_libprofiler(&lib, &binary, &["-s", "0.5"], &profile, 1000);
    Some((binary, profile))
}

#[test]
fn source_path_and_trim_path_find_a_moved_source() {
    let dir = TempDir::new().unwrap();
    let Some((binary, profile)) = spin_from_copy(dir.path()) else {
        return;
    };
    let inputs = [binary.as_path(), profile.as_path()];
    let found = report(&["--list=^burn_b$"], &inputs);
    assert!(found.contains("double burn_b(double s) {"), "{found}");
    std::fs::rename(dir.path().join("build"), dir.path().join("moved")).unwrap();
    let moved = dir.path().join("moved");

    // Not found: the numbers and a note, not an error.
    let missing = report(&["--list=^burn_b$"], &inputs);
    assert!(missing.contains("not found"), "{missing}");
    assert!(!missing.contains("double burn_b"), "{missing}");
    assert_eq!(
        nonzero(&parse_list(&missing)[0]),
        nonzero(&parse_list(&found)[0])
    );

    let trim = format!("--trim_path={}", dir.path().join("build").display());
    let search = format!("--source_path={}", moved.display());
    for args in [vec![&search[..]], vec![&search[..], &trim[..]]] {
        let mut all = vec!["--list=^burn_b$"];
        all.extend(args.iter().copied());
        let again = report(&all, &inputs);
        assert_eq!(again, found, "with {args:?}");
    }
    // trim_path alone leaves a relative path, searched from the current
    // directory (and its parents).
    let mut cmd = cpuprof();
    cmd.current_dir(&moved)
        .args(["report", "--list=^burn_b$", &trim])
        .args(inputs);
    assert_eq!(run_stdout(&mut cmd), found);
}

/// A hot function always inlined into its caller: its samples are listed
/// at its own lines, and the caller's call line has them as cum.
#[test]
fn inlined_function_lines_are_its_own() {
    let Some(lib) = libprofiler() else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let source = dir.path().join("inl.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n\
         #include <time.h>\n\
         static double now(void) {\n\
         \x20   struct timespec ts;\n\
         \x20   clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);\n\
         \x20   return ts.tv_sec + ts.tv_nsec / 1e9;\n\
         }\n\
         static inline __attribute__((always_inline)) double step(double x) {\n\
         \x20   for (int i = 0; i < 100000; i++)\n\
         \x20       x = x * 1.0000001 + 1e-9;\n\
         \x20   return x;\n\
         }\n\
         __attribute__((noinline)) double hot(double s) {\n\
         \x20   double end = now() + s, x = 1.0;\n\
         \x20   while (now() < end)\n\
         \x20       x = step(x);\n\
         \x20   return x;\n\
         }\n\
         int main(void) { printf(\"%g\\n\", hot(0.5)); return 0; }\n",
    )
    .unwrap();
    let binary = dir.path().join("inl");
    cpuprof_testkit::compile("gcc", &[&source], &binary, &["-O2", "-g"]);
    let profile = dir.path().join("inl.prof");
    profile_with_libprofiler(&lib, &binary, &[], &profile, 1000);
    let inputs = [binary.as_path(), profile.as_path()];

    let text = report(&["--list=^(step|hot)$"], &inputs);
    let routines = parse_list(&text);
    let step = routines
        .iter()
        .find(|r| r.header.contains(" step in "))
        .unwrap_or_else(|| panic!("{text}"));
    let hot = routines
        .iter()
        .find(|r| r.header.contains(" hot in "))
        .unwrap_or_else(|| panic!("{text}"));
    // step's samples are on step's loop (lines 9-10), not on hot's line 16.
    let step_loop: i64 = [9, 10]
        .iter()
        .map(|l| step.rows.get(l).map_or(0, |v| v.0))
        .sum();
    assert!(step.flat > 0 && step_loop * 10 >= step.flat * 9, "{text}");
    let (flat, cum) = (step.flat, step.cum);
    let text_step = TextReport::parse(&report(&["--text"], &inputs));
    let row = text_step.row("step").expect("step row");
    assert_eq!((row.flat, row.cum), (flat, cum));
    // hot: the inlined call's line has step's samples as cum, not flat.
    let (call_flat, call_cum) = hot.rows.get(&16).copied().unwrap_or_default();
    assert!(call_cum >= step.cum, "{text}");
    assert!(call_flat < step.flat, "{text}");
}

/// `flag` (`--list` or `--disasm`, read back with `parse`) on burn_b: two
/// profiles sum, `--base` subtracts, `--focus` keeps main's cum to
/// burn_b's, `-o FILE` writes what stdout would.
fn check_sum_base_focus_output(case: &Case, flag: &str, parse: fn(&str) -> Vec<Routine>) {
    let inputs = [case.binary.as_path(), case.profile.as_path()];
    let burn_b = format!("{flag}=^burn_b$");
    let one = parse(&report(&[&burn_b], &inputs));
    // Two profiles are summed.
    let two = parse(&report(
        &[&burn_b],
        &[&case.binary, &case.profile, &case.profile],
    ));
    assert_eq!((two[0].flat, two[0].cum), (2 * one[0].flat, 2 * one[0].cum));
    // 3 x profile - 1 x profile (--base) = 2 x profile.
    let base = format!("--base={}", case.profile.display());
    let diff = parse(&report(
        &[&burn_b, &base],
        &[&case.binary, &case.profile, &case.profile, &case.profile],
    ));
    assert_eq!(diff[0].rows, two[0].rows);
    // --focus: main's cum is burn_b's only.
    let main = format!("{flag}=^main$");
    let focused = parse(&report(&[&main, "--focus=burn_b"], &inputs));
    assert_eq!(focused[0].cum, one[0].cum);
    // -o FILE.
    let file = case.dir.path().join("listing.txt");
    let stdout = report(&[&burn_b, "-o", file.to_str().unwrap()], &inputs);
    assert!(stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        report(&[&burn_b], &inputs)
    );
}

#[test]
fn list_options_sum_base_focus_ignore_output() {
    let Some(case) = spin_case(&[], "0.5") else {
        return;
    };
    check_sum_base_focus_output(&case, "--list", parse_list);
    // --ignore: burn_b gone, and it is said in one line.
    let out = cpuprof()
        .args(["report", "--list=^burn_b$", "--ignore=burn_b"])
        .args([&case.binary, &case.profile])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no function"), "{stderr}");
}

#[test]
fn listing_errors_are_one_line() {
    let Some(case) = spin_case(&[], "0.2") else {
        return;
    };
    for flag in ["--list", "--disasm"] {
        for (re, says) in [
            ("(", "invalid regular expression"),
            ("^nothing$", "no function"),
        ] {
            let out = cpuprof()
                .arg("report")
                .arg(format!("{flag}={re}"))
                .args([&case.binary, &case.profile])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(stderr.lines().count(), 1, "{flag}={re}: {stderr}");
            assert!(stderr.contains(says), "{flag}={re}: {stderr}");
        }
    }
}

/// `--disasm` of the three burn functions: per-instruction flat sums to
/// the header's flat, per-line rows sum to the same, and without inlining
/// the header is the function's flat and cum in `--text`. With inlining
/// (cpu_now inlined), the cum is still the function's.
fn check_disasm_against_text(case: &Case, inlined: bool) {
    let text = report(&["--disasm=^burn_"], &[&case.binary, &case.profile]);
    let routines = parse_disasm(&text);
    assert_eq!(routines.len(), 3, "{text}");
    for name in ["burn_a", "burn_b", "burn_c"] {
        let r = routines
            .iter()
            .find(|r| r.header == format!("ROUTINE ====================== {name}"))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"));
        let (flat, cum) = text_row(case, &[], name);
        assert!(cum > 0, "{name} has no samples");
        let flat_sum: i64 = r.rows.values().map(|v| v.0).sum();
        assert_eq!(flat_sum, r.flat, "{name}: per-instruction flat\n{}", r.text);
        let line_sum: i64 = r.line_rows.iter().map(|v| v.0).sum();
        assert_eq!(line_sum, r.flat, "{name}: per-line flat\n{}", r.text);
        assert_eq!(r.cum, cum, "{name}: cum\n{}", r.text);
        if inlined {
            assert!(r.flat >= flat, "{name}: flat\n{}", r.text);
        } else {
            assert_eq!(r.flat, flat, "{name}: flat\n{}", r.text);
        }
        let max = r.rows.values().map(|v| v.1).max().unwrap();
        assert!(
            max <= cum && max > 0,
            "{name}: instruction cum {max} vs {cum}"
        );
        // Instructions in AT&T syntax, source lines interleaved.
        assert!(r.text.contains("ret"), "{}", r.text);
        assert!(
            r.text.contains("for (int i = 0; i < 100000; i++)"),
            "{}",
            r.text
        );
    }
}

#[test]
fn disasm_numbers_agree_with_text() {
    for (flags, inlined) in [
        (&["-fno-inline"][..], false),
        (&["-fno-inline", "-no-pie"][..], false),
        (&[][..], true),
    ] {
        let Some(case) = spin_case(flags, "0.5") else {
            return;
        };
        check_disasm_against_text(&case, inlined);
    }
}

/// The call instruction in recurse has recurse's callees as cum (return
/// addresses minus one land in it), and addresses match objdump's.
#[test]
fn disasm_call_sites_and_addresses_match_objdump() {
    let Some(case) = spin_case(&["-no-pie"], "0.5") else {
        return;
    };
    let text = report(&["--disasm=^recurse$"], &[&case.binary, &case.profile]);
    let r = &parse_disasm(&text)[0];
    let objdump = run_stdout(
        Command::new("objdump")
            .args(["-d", "--no-show-raw-insn"])
            .arg(&case.binary),
    );
    let body: Vec<&str> = objdump
        .split("<recurse>:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.contains(':'))
        .collect();
    let calls: Vec<u64> = body
        .iter()
        .filter(|l| l.contains("call"))
        .map(|l| u64::from_str_radix(l.trim().split(':').next().unwrap(), 16).unwrap())
        .collect();
    let addresses: Vec<u64> = body
        .iter()
        .map(|l| u64::from_str_radix(l.trim().split(':').next().unwrap(), 16).unwrap())
        .collect();
    // objdump goes on through the alignment padding after the symbol.
    let ours: Vec<u64> = r.rows.keys().copied().collect();
    assert!(addresses.starts_with(&ours), "{text}\n{addresses:x?}");
    assert!(ours.len() + 3 >= addresses.len(), "{text}\n{addresses:x?}");
    let call_cum: i64 = calls.iter().map(|a| r.rows[a].1).max().unwrap();
    assert_eq!(call_cum, r.cum, "{text}");
}

#[test]
fn disasm_without_the_binary_is_an_error() {
    let Some(case) = spin_case(&[], "0.2") else {
        return;
    };
    let moved = case.dir.path().join("elsewhere");
    std::fs::rename(&case.binary, &moved).unwrap();
    let out = cpuprof()
        .args(["report", "--disasm=burn"])
        .arg(&case.profile)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(last.contains("no binary is available"), "{stderr}");
    // Named on the command line, it is found again.
    let text = report(&["--disasm=^burn_b$"], &[&moved, &case.profile]);
    assert!(
        text.starts_with("ROUTINE ====================== burn_b\n"),
        "{text}"
    );
}

#[test]
fn disasm_options_sum_base_focus_output() {
    let Some(case) = spin_case(&[], "0.5") else {
        return;
    };
    check_sum_base_focus_output(&case, "--disasm", parse_disasm);
}

/// A dlopened shared library: its code is read through its mapping.
#[test]
fn disasm_and_list_in_a_shared_library() {
    let Some(lib) = libprofiler() else {
        return;
    };
    let dir = TempDir::new().unwrap();
    let (binary, libhot) = build_spin(dir.path(), "spin", &[]);
    let profile = dir.path().join("spin.prof");
    let libhot = libhot.to_str().unwrap();
    profile_with_libprofiler(&lib, &binary, &["-s", "1", "-l", libhot], &profile, 1000);
    let inputs = [binary.as_path(), profile.as_path()];
    let text = TextReport::parse(&report(&["--text"], &inputs));
    let row = text.row("lib_inner").expect("lib_inner row");
    let disasm = parse_disasm(&report(&["--disasm=^lib_inner$"], &inputs));
    assert_eq!(disasm[0].cum, row.cum);
    let sum: i64 = disasm[0].rows.values().map(|v| v.0).sum();
    assert_eq!(sum, disasm[0].flat);
    assert!(disasm[0].flat >= row.flat && row.flat > 0);
    let list = parse_list(&report(&["--list=^lib_inner$"], &inputs));
    assert!(list[0].header.ends_with("libhot.c"), "{}", list[0].header);
    assert_eq!((list[0].flat, list[0].cum), (row.flat, row.cum));
}
