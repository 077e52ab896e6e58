//! The stack and machine-readable outputs of `cpuprof report` end to end
//! (`--collapsed`, `--traces`, `--tree`, `--json`, `--callgrind`, `--raw`,
//! `--symbols`, and `convert --to callgrind`), on profiles written by
//! Debian's libprofiler.so for the spin workload built with gcc, checked
//! against `--text`, google-pprof (perl) and callgrind_annotate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use cpuprof_testkit::{
    build_spin, libprofiler, profile_with_libprofiler, require_tool, run_stdout, run_with_stdin,
    vdso_frame, TempDir, TextReport,
};

mod common;
use common::{cpuprof, report};

/// spin (two threads) built with gcc, profiled twice (1 s and 0.5 s).
struct Case {
    dir: TempDir,
    binary: PathBuf,
    profile: PathBuf,
    second: PathBuf,
}

impl Case {
    fn inputs(&self) -> [&Path; 2] {
        [self.binary.as_path(), self.profile.as_path()]
    }
}

/// The case, built once per test binary (None when libprofiler is missing).
fn case() -> Option<&'static Case> {
    static CASE: OnceLock<Option<Case>> = OnceLock::new();
    CASE.get_or_init(|| {
        let lib = libprofiler()?;
        let dir = TempDir::new().unwrap();
        let (binary, _) = build_spin(dir.path(), "spin", &[]);
        let profile = dir.path().join("spin.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "1", "-t", "2"], &profile, 1000);
        let second = dir.path().join("spin2.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "0.5", "-t", "2"], &second, 1000);
        Some(Case {
            dir,
            binary,
            profile,
            second,
        })
    })
    .as_ref()
}

/// The functions of spin.c (and the vDSO) in a text report, with its total:
/// what comparisons with perl pprof keep when libc's inline chains may
/// differ (binutils' addr2line and gcc 12's DWARF 5, see conformance.rs).
fn workload_rows(text: &TextReport) -> TextReport {
    const SPIN: [&str; 10] = [
        "main",
        "work",
        "thread_main",
        "recurse",
        "burn_a",
        "burn_b",
        "burn_c",
        "cpu_now",
        "lib_burn",
        "[vdso]",
    ];
    TextReport {
        total: text.total,
        rows: text
            .rows
            .iter()
            .filter(|r| SPIN.contains(&r.name.as_str()))
            .cloned()
            .collect(),
    }
}

/// `stack count` lines summed per stack.
fn parse_collapsed(text: &str) -> BTreeMap<String, i64> {
    let mut stacks = BTreeMap::new();
    for line in text.lines() {
        let (stack, count) = line.rsplit_once(' ').expect("`stack count`");
        *stacks.entry(stack.to_string()).or_insert(0) += count.parse::<i64>().unwrap();
    }
    stacks
}

/// Sums of collapsed stacks per leaf (the last frame).
fn per_leaf(stacks: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    let mut leaves = BTreeMap::new();
    for (stack, count) in stacks {
        let leaf = stack.rsplit(';').next().unwrap();
        *leaves.entry(leaf.to_string()).or_insert(0) += count;
    }
    leaves.retain(|_, v| *v != 0);
    leaves
}

/// Flat values of a text report's rows, without the zero ones.
fn text_flat(text: &TextReport) -> BTreeMap<String, i64> {
    text.rows
        .iter()
        .filter(|r| r.flat != 0)
        .map(|r| (r.name.clone(), r.flat))
        .collect()
}

/// perl pprof's names as we print them: without the `<0000000000001850>`
/// tag it appends to local symbols, and without `[inline]`.
fn normalize_perl_name(name: &str) -> String {
    let name = name.strip_suffix("[inline]").unwrap_or(name);
    // Of glibc's aliases at one address we name the public one; perl's
    // addr2line gives DWARF's (`nm` lists both at one address).
    match name {
        "__libc_start_main_impl" => return "__libc_start_main".to_string(),
        "__GI___clock_gettime" => return "clock_gettime".to_string(),
        _ => {}
    }
    match name.len().checked_sub(18) {
        Some(open)
            if name.as_bytes()[open] == b'<'
                && name.ends_with('>')
                && name[open + 1..name.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit()) =>
        {
            name[..open].to_string()
        }
        _ => name.to_string(),
    }
}

#[test]
fn collapsed_equals_google_pprof_and_sums_to_the_text_report() {
    let Some(case) = case() else { return };
    let ours = report(&["--collapsed"], &case.inputs());
    let stacks = parse_collapsed(&ours);
    // Deterministic: sorted by frame names from the root, same bytes twice.
    let lines: Vec<Vec<&str>> = ours
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().0.split(';').collect())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "not sorted");
    assert_eq!(report(&["--collapsed"], &case.inputs()), ours);

    let text = TextReport::parse(&report(&["--text"], &case.inputs()));
    assert!(text.total > 100, "only {} samples", text.total);
    assert_eq!(stacks.values().sum::<i64>(), text.total);
    assert_eq!(per_leaf(&stacks), text_flat(&text));
    // Inline frames are frames of their own (when a sample landed in the
    // inlined cpu_now at all: it takes a few percent of the time), under
    // the burn function it was inlined into.
    if text.row("cpu_now").is_some_and(|r| r.cum > 0) {
        assert!(
            stacks.keys().any(|s| {
                ["burn_a;cpu_now", "burn_b;cpu_now", "burn_c;cpu_now"]
                    .iter()
                    .any(|inlined| s.contains(inlined))
            }),
            "{ours}"
        );
    }

    if !require_tool("google-pprof") {
        return;
    }
    let theirs = run_stdout(
        Command::new("google-pprof")
            .arg("--collapsed")
            .args(case.inputs()),
    );
    // perl prints the vDSO's addresses, we name its functions.
    let fold = |stacks: BTreeMap<String, i64>, perl: bool| {
        let mut folded: BTreeMap<String, i64> = BTreeMap::new();
        for (stack, count) in stacks {
            let names: Vec<String> = stack
                .split(';')
                .map(|n| {
                    let n = if perl {
                        normalize_perl_name(n)
                    } else {
                        n.to_string()
                    };
                    vdso_frame(&n).to_string()
                })
                .collect();
            *folded.entry(names.join(";")).or_insert(0) += count;
        }
        folded
    };
    // The workload's stacks: a sample in libc's inlined stdio code (printf
    // at exit, now and then) has the inline chain DWARF gives in ours and
    // a shorter one from perl's addr2line.
    let workload = |stacks: BTreeMap<String, i64>| -> BTreeMap<String, i64> {
        stacks
            .into_iter()
            .filter(|(stack, _)| stack.split(';').any(|f| f == "work"))
            .collect()
    };
    let ours_kept = workload(fold(stacks, false));
    assert!(
        ours_kept.values().sum::<i64>() * 100 >= text.total * 95,
        "the workload's stacks are most of the profile"
    );
    assert_eq!(ours_kept, workload(fold(parse_collapsed(&theirs), true)));
}

/// `--traces` blocks as collapsed stacks (root first).
fn parse_traces(text: &str) -> (Vec<String>, BTreeMap<String, i64>) {
    let mut header = Vec::new();
    let mut stacks = BTreeMap::new();
    let mut current: Option<(i64, Vec<String>)> = None;
    let mut flush = |current: &mut Option<(i64, Vec<String>)>| {
        if let Some((count, mut frames)) = current.take() {
            frames.reverse();
            *stacks.entry(frames.join(";")).or_insert(0) += count;
        }
    };
    let mut in_header = true;
    for line in text.lines() {
        if line == cpuprof_separator() {
            in_header = false;
            flush(&mut current);
            continue;
        }
        if in_header {
            header.push(line.to_string());
            continue;
        }
        let (value, name) = (line[..10].trim(), &line[13..]);
        if value.is_empty() {
            current.as_mut().unwrap().1.push(name.to_string());
        } else {
            current = Some((value.parse().unwrap(), vec![name.to_string()]));
        }
    }
    flush(&mut current);
    (header, stacks)
}

fn cpuprof_separator() -> &'static str {
    "-----------+-------------------------------------------------------"
}

#[test]
fn traces_per_stack_equal_collapsed() {
    let Some(case) = case() else { return };
    for granularity in ["--functions", "--lines"] {
        let collapsed = parse_collapsed(&report(&["--collapsed", granularity], &case.inputs()));
        let (header, traces) = parse_traces(&report(&["--traces", granularity], &case.inputs()));
        assert_eq!(traces, collapsed, "{granularity}");
        assert!(header.iter().any(|l| l.starts_with("File: ")), "{header:?}");
        assert!(header.iter().any(|l| l == "Type: samples"), "{header:?}");
        let total: i64 = collapsed.values().sum();
        assert!(
            header.contains(&format!("Total: {total} samples")),
            "{header:?}"
        );
    }
}

#[test]
fn json_rows_equal_text_rows() {
    let Some(case) = case() else { return };
    for args in [
        &["--functions"][..],
        &["--lines", "--cum", "--nodecount=7"][..],
        &["--focus=burn_b", "--files"][..],
    ] {
        let text = TextReport::parse(&report(&[&["--text"], args].concat(), &case.inputs()));
        let json: serde_json::Value =
            serde_json::from_str(&report(&[&["--json"], args].concat(), &case.inputs())).unwrap();
        assert_eq!(json["schema"], "cpuprof-report/1");
        assert_eq!(json["total"].as_i64().unwrap(), text.total, "{args:?}");
        assert_eq!(json["unit"], "samples");
        assert_eq!(json["sample_type"]["type"], "samples");
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows.len(), text.rows.len(), "{args:?}");
        let text_lines: Vec<String> = report(&[&["--text"], args].concat(), &case.inputs())
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect();
        for ((row, t), line) in rows.iter().zip(&text.rows).zip(&text_lines) {
            assert_eq!(row["name"].as_str().unwrap(), t.name);
            assert_eq!(row["flat"].as_i64().unwrap(), t.flat);
            assert_eq!(row["cum"].as_i64().unwrap(), t.cum);
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(
                format!("{:.1}%", row["flat_percent"].as_f64().unwrap()),
                fields[1]
            );
            assert_eq!(
                format!("{:.1}%", row["cum_percent"].as_f64().unwrap()),
                fields[4]
            );
        }
    }
}

/// Self cost per `file:function` as callgrind_annotate prints it.
fn callgrind_annotate(file: &Path) -> (i64, BTreeMap<String, i64>) {
    let out = run_stdout(
        Command::new("callgrind_annotate")
            .arg("--threshold=100")
            .arg("--auto=no")
            .arg(file),
    );
    let mut total = 0;
    let mut functions = BTreeMap::new();
    for line in out.lines() {
        let line = line.trim();
        let Some((count, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(count) = count.replace(',', "").parse::<i64>() else {
            continue;
        };
        let rest = rest.trim_start();
        let name = rest
            .split_once(")  ")
            .map(|(_, n)| n)
            .unwrap_or(rest)
            .trim();
        if name == "PROGRAM TOTALS" {
            total = count;
        } else if let Some((_, function)) = name.split_once(':') {
            *functions.entry(function.to_string()).or_insert(0) += count;
        }
    }
    (total, functions)
}

#[test]
fn callgrind_annotate_totals_equal_text_flat_and_convert_writes_the_same_bytes() {
    let Some(case) = case() else { return };
    let text = TextReport::parse(&report(&["--text"], &case.inputs()));
    let dir = case.dir.path();
    let out = dir.join("callgrind.out.spin");
    run_stdout(
        cpuprof()
            .args(["report", "--callgrind", "-o"])
            .arg(&out)
            .args(case.inputs()),
    );
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.starts_with(b"# callgrind format\n"));
    // -o writes what stdout gets.
    assert_eq!(
        report(&["--callgrind"], &case.inputs()).as_bytes(),
        &bytes[..]
    );
    let converted = dir.join("converted.callgrind");
    run_stdout(
        cpuprof()
            .arg("convert")
            .args(case.inputs())
            .arg("-o")
            .arg(&converted)
            .args(["--to", "callgrind"]),
    );
    assert_eq!(std::fs::read(&converted).unwrap(), bytes);

    if !require_tool("callgrind_annotate") {
        return;
    }
    let (total, functions) = callgrind_annotate(&out);
    assert_eq!(total, text.total);
    // Unsymbolized frames are named by their address in both.
    assert_eq!(functions, text_flat(&text));

    // Addresses as positions: the same per-function totals, and the
    // positions are link-time addresses (inside the PIE's first pages).
    let by_address = dir.join("callgrind.addresses");
    run_stdout(
        cpuprof()
            .args(["report", "--callgrind", "--addresses", "-o"])
            .arg(&by_address)
            .args(case.inputs()),
    );
    let text = std::fs::read_to_string(&by_address).unwrap();
    assert!(text.contains("\npositions: instr\n"));
    let burn_a = text
        .split("\n\n")
        .find(|block| block.contains(") burn_a\n"))
        .expect("a burn_a block");
    let first_cost = burn_a
        .lines()
        .find(|l| l.starts_with("0x"))
        .expect("a cost line");
    let address = u64::from_str_radix(
        first_cost
            .split(' ')
            .next()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    assert!(address < 0x10000, "not a link-time address: {first_cost}");
    let (total2, functions2) = callgrind_annotate(&by_address);
    assert_eq!(total2, total);
    assert_eq!(functions2, functions);
}

#[test]
fn tree_nodes_equal_text_and_callers_add_up_to_cum() {
    let Some(case) = case() else { return };
    let text = TextReport::parse(&report(&["--text"], &case.inputs()));
    let tree = report(
        &["--tree", "--nodefraction=0", "--edgefraction=0"],
        &case.inputs(),
    );
    let separator = "----------------------------------------------------------+-------------";
    let blocks: Vec<&str> = tree.split(&format!("{separator}\n")).skip(2).collect();
    let mut seen = 0;
    for block in blocks {
        if block.is_empty() {
            continue;
        }
        let lines: Vec<&str> = block.lines().collect();
        let node = lines
            .iter()
            .position(|l| l.contains("                | "))
            .unwrap_or_else(|| panic!("no node line in {block}"));
        let (numbers, name) = lines[node].split_once("                | ").unwrap();
        let fields: Vec<&str> = numbers.split_whitespace().collect();
        let row = text
            .row(name)
            .unwrap_or_else(|| panic!("{name} not in --text"));
        assert_eq!(fields[0].parse::<i64>().unwrap(), row.flat, "{name}");
        assert_eq!(fields[3].parse::<i64>().unwrap(), row.cum, "{name}");
        let weight = |l: &&str| l.split_whitespace().next().unwrap().parse::<i64>().unwrap();
        let callers: Vec<&str> = lines[..node].to_vec();
        let from_callers: i64 = callers.iter().map(weight).sum();
        let recursive = callers.iter().any(|l| l.ends_with(&format!("|   {name}")));
        if !callers.is_empty() && !recursive {
            assert_eq!(from_callers, row.cum, "{name}: callers vs cum");
        }
        seen += 1;
    }
    assert_eq!(seen, text.rows.len());
    let three = report(&["--tree", "--nodecount=3"], &case.inputs());
    let nodes = three
        .lines()
        .filter(|l| l.contains("                | "))
        .count();
    assert_eq!(nodes, 3, "{three}");
}

#[test]
fn raw_round_trip_without_the_binary_and_with_google_pprof() {
    let Some(case) = case() else { return };
    let dir = case.dir.path();
    let raw = dir.join("spin.raw");
    run_stdout(
        cpuprof()
            .args(["report", "--raw", "-o"])
            .arg(&raw)
            .args(case.inputs()),
    );
    let data = std::fs::read(&raw).unwrap();
    assert!(data.starts_with(b"--- symbol\nbinary="));
    let original = report(&["--text"], &case.inputs());
    // The binary is not needed: move it away.
    let moved = dir.join("raw-only");
    std::fs::create_dir_all(&moved).unwrap();
    let copy = moved.join("spin.raw");
    std::fs::copy(&raw, &copy).unwrap();
    assert_eq!(report(&["--text"], &[&copy]), original);
    assert_eq!(
        report(&["--collapsed"], &[&copy]),
        report(&["--collapsed"], &case.inputs())
    );
    // Written again, the raw profile is the same bytes.
    let again = moved.join("again.raw");
    run_stdout(
        cpuprof()
            .args(["report", "--raw", "-o"])
            .arg(&again)
            .arg(&copy),
    );
    assert!(
        std::fs::read(&again).unwrap() == data,
        "the raw profile of a raw profile differs"
    );

    if !require_tool("google-pprof") {
        return;
    }
    // google-pprof reads ours as its own, and we read its --raw.
    let theirs_of_ours = run_stdout(Command::new("google-pprof").arg("--text").arg(&copy));
    let theirs_of_original = run_stdout(
        Command::new("google-pprof")
            .arg("--text")
            .args(case.inputs()),
    );
    // Ours names the vDSO's functions in the symbol section; perl has
    // only their addresses for the original. And where a sample lands in
    // libc's inlined code (printf at exit, now and then), ours carries the
    // inline chain DWARF gives and perl's own addr2line a shorter one: the
    // workload's functions are compared, and the totals.
    // A vDSO frame that is not a leaf (a sample inside the vDSO's own
    // call, now and then) is a `[vdso]` row of ours only: left out. And
    // a sample through two of the vDSO's functions (`clock_gettime`
    // calling `do_hres`) counts once in each one's cum: folded into one
    // row the sum counts it twice on our named side and once on perl's
    // address side, so the folded row is compared by its flat only.
    let spin_only = |text: &str| {
        let mut report = workload_rows(&TextReport::parse(text).vdso_folded());
        report.rows.retain(|r| !(r.name == "[vdso]" && r.flat == 0));
        for row in report.rows.iter_mut().filter(|r| r.name == "[vdso]") {
            row.cum = row.flat;
        }
        report
    };
    assert_eq!(spin_only(&theirs_of_ours), spin_only(&theirs_of_original));
    let perl_raw = dir.join("perl.raw");
    let out = Command::new("google-pprof")
        .arg("--raw")
        .args(case.inputs())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&perl_raw, &out.stdout).unwrap();
    assert_eq!(
        workload_rows(&TextReport::parse(&report(&["--text"], &[&perl_raw])).vdso_folded()),
        workload_rows(&TextReport::parse(&original).vdso_folded())
    );
}

/// Link-time addresses inside the functions of spin, from nm.
fn spin_function_addresses(binary: &Path) -> Vec<u64> {
    let nm = run_stdout(Command::new("nm").arg(binary));
    let mut addresses = Vec::new();
    for line in nm.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() == 3
            && ["T", "t"].contains(&fields[1])
            && ["burn_a", "burn_b", "burn_c", "work", "recurse", "main"].contains(&fields[2])
        {
            let start = u64::from_str_radix(fields[0], 16).unwrap();
            addresses.extend([start, start + 4]);
        }
    }
    assert_eq!(addresses.len(), 12, "{nm}");
    addresses
}

/// The executable `PT_LOAD` segment of `binary` (by `readelf -lW`) as the
/// loader maps it: (page-aligned file offset, first page, end of the last
/// page), addresses relative to the load base.
fn code_segment_pages(binary: &std::path::Path) -> (u64, u64, u64) {
    let out = Command::new("readelf")
        .arg("-lW")
        .arg(binary)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"LOAD") && line.contains(" R E ") {
            let (offset, vaddr, filesz) = (hex(f[1]), hex(f[2]), hex(f[4]));
            let page = 0x1000u64;
            return (
                offset & !(page - 1),
                vaddr & !(page - 1),
                (vaddr + filesz + page - 1) & !(page - 1),
            );
        }
    }
    panic!("no executable LOAD segment in readelf -lW:\n{text}");
}

#[test]
fn symbols_equal_google_pprof_symbols() {
    let Some(case) = case() else { return };
    let addresses = spin_function_addresses(&case.binary);
    let input: String = addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    let run = |cmd: &mut Command, input: &str| -> String {
        let out = run_with_stdin(cmd, input);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let ours = run(
        cpuprof().args(["report", "--symbols"]).arg(&case.binary),
        &input,
    );
    assert_eq!(ours.lines().count(), addresses.len());
    // Several addresses on one line give one name each, in order.
    let joined: Vec<String> = addresses.iter().map(|a| format!("{a:#x}")).collect();
    let one_line = run(
        cpuprof().args(["report", "--symbols"]).arg(&case.binary),
        &format!("{}\n", joined.join(" ")),
    );
    assert_eq!(one_line, ours);
    // Unknown addresses print ??.
    let unknown = run(
        cpuprof().args(["report", "--symbols"]).arg(&case.binary),
        "0xffffffff0\n",
    );
    assert_eq!(unknown, "??\n");

    if !require_tool("google-pprof") {
        return;
    }
    let theirs = run(
        Command::new("google-pprof")
            .arg("--symbols")
            .arg(&case.binary),
        &input,
    );
    assert_eq!(ours, theirs);

    // With /proc/maps lines the addresses are runtime ones: the PIE loaded
    // at 0x555555554000 (its file mapped from offset 0).
    // The executable line spans the code segment's pages, as the loader
    // maps them (a line of another size is another build: refused).
    let base = 0x5555_5555_4000u64;
    let path = case.binary.display();
    let (offset, start, end) = code_segment_pages(&case.binary);
    let mut maps = format!(
        "{base:x}-{:x} r--p 00000000 08:01 1 {path}\n{:x}-{:x} r-xp {offset:08x} 08:01 1 {path}\n",
        base + start,
        base + start,
        base + end,
    );
    for a in &addresses {
        maps.push_str(&format!("{:#x}\n", a + base));
    }
    let ours_mapped = run(
        cpuprof().args(["report", "--symbols"]).arg(&case.binary),
        &maps,
    );
    assert_eq!(ours_mapped, ours);
    let theirs_mapped = run(
        Command::new("google-pprof")
            .arg("--symbols")
            .arg(&case.binary),
        &maps,
    );
    assert_eq!(ours_mapped, theirs_mapped);
}

/// The outputs summed over two profiles, with --focus, with --base, and
/// at every granularity agree with --text run the same way.
#[test]
fn every_output_respects_granularity_focus_sum_and_base() {
    let Some(case) = case() else { return };
    let both = [
        case.binary.as_path(),
        case.profile.as_path(),
        case.second.as_path(),
    ];
    let base = format!("--base={}", case.second.display());
    let runs: Vec<(Vec<&str>, Vec<&Path>)> = vec![
        (vec!["--lines"], case.inputs().to_vec()),
        (vec!["--addresses"], case.inputs().to_vec()),
        (vec!["--files"], case.inputs().to_vec()),
        (vec!["--focus=burn_b|burn_c"], case.inputs().to_vec()),
        (vec!["--ignore=thread_main"], case.inputs().to_vec()),
        (vec![], both.to_vec()),
        (vec![base.as_str()], case.inputs().to_vec()),
    ];
    for (args, inputs) in runs {
        let text = TextReport::parse(&report(&[&["--text"], &args[..]].concat(), &inputs));
        let collapsed = parse_collapsed(&report(&[&["--collapsed"], &args[..]].concat(), &inputs));
        assert_eq!(per_leaf(&collapsed), text_flat(&text), "{args:?}");
        let (_, traces) = parse_traces(&report(&[&["--traces"], &args[..]].concat(), &inputs));
        assert_eq!(traces, collapsed, "{args:?}");
        let json: serde_json::Value =
            serde_json::from_str(&report(&[&["--json"], &args[..]].concat(), &inputs)).unwrap();
        assert_eq!(
            json["rows"].as_array().unwrap().len(),
            text.rows.len(),
            "{args:?}"
        );
        // Every node: Go's trimming (0.5% of the total, 80 nodes) off.
        let untrimmed = ["--tree", "--nodefraction=0", "--nodecount=1000000"];
        let tree = report(&[&untrimmed[..], &args[..]].concat(), &inputs);
        assert_eq!(
            tree.lines()
                .filter(|l| l.contains("                | "))
                .count(),
            text.rows.len(),
            "{args:?}"
        );
        let callgrind = report(&[&["--callgrind"], &args[..]].concat(), &inputs);
        let summary: i64 = text.rows.iter().map(|r| r.flat).sum();
        assert!(
            callgrind.contains(&format!("\nsummary: {summary}\n")),
            "{args:?}"
        );
    }
    // --cum orders the tree and json like the text report.
    let text = TextReport::parse(&report(&["--text", "--cum"], &case.inputs()));
    let json: serde_json::Value =
        serde_json::from_str(&report(&["--json", "--cum"], &case.inputs())).unwrap();
    let names: Vec<&str> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let text_names: Vec<&str> = text.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, text_names);
}

/// Profiles without call stacks (a DCPI database: leaf addresses only):
/// every output prints what it can — one-frame stacks, no calls.
#[test]
fn flat_profiles_do_not_break_the_outputs() {
    let Some(case) = case() else { return };
    let db = case.dir.path().join("dcpidb");
    run_stdout(
        cpuprof()
            .arg("convert")
            .args(case.inputs())
            .arg("-o")
            .arg(&db)
            .args(["--to", "dcpi"]),
    );
    let inputs = [case.binary.as_path(), db.as_path()];
    let text = TextReport::parse(&report(&["--text"], &inputs));
    assert!(text.total > 0);
    let collapsed = parse_collapsed(&report(&["--collapsed"], &inputs));
    // One location per stack: no callers, only an inline chain where the
    // address is in inlined code (cpu_now in a burn function).
    // (A sample may land in main's own code: main as a leaf is fine, as a
    // caller it is not.)
    assert!(
        collapsed.keys().all(|s| {
            let frames: Vec<&str> = s.split(';').collect();
            frames.len() == 1 || (frames.len() == 2 && frames[1] == "cpu_now")
        }),
        "{collapsed:?}"
    );
    assert_eq!(per_leaf(&collapsed), text_flat(&text));
    let (_, traces) = parse_traces(&report(&["--traces"], &inputs));
    assert_eq!(traces, collapsed);
    let callgrind = report(&["--callgrind"], &inputs);
    // No calls, but for an address in inlined code (the burn function
    // calling the inlined cpu_now), when one was sampled.
    if text.row("cpu_now").is_none_or(|r| r.cum <= 0) {
        assert!(!callgrind.contains("calls="), "{callgrind}");
    }
    for output in ["--tree", "--json", "--raw"] {
        let mut cmd = cpuprof();
        cmd.args(["report", output]).args(inputs);
        run_stdout(&mut cmd);
    }
}

/// `--tree` trims as Go pprof's `-tree` does by default (nodes under 0.5%
/// of the total dropped, then 80 shown, cutoffs in fractions of a sample):
/// on the same profile, the same share shown, the same number of nodes
/// dropped and shown.
#[test]
fn tree_trims_as_go_pprof() {
    let Some(case) = case() else { return };
    if !require_tool("pprof") {
        return;
    }
    let summary = |text: &str| -> (String, String, usize) {
        let showing = text
            .lines()
            .find(|l| l.starts_with("Showing nodes accounting for"))
            .unwrap_or_else(|| panic!("no summary line:\n{text}"));
        let percent = showing.split(", ").nth(1).unwrap_or("").split(' ').next();
        let dropped = text
            .lines()
            .find(|l| l.starts_with("Dropped ") && l.contains(" node"))
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("0");
        let nodes = text
            .lines()
            .filter(|l| l.contains("                | "))
            .count();
        (
            percent.unwrap_or("").to_string(),
            dropped.to_string(),
            nodes,
        )
    };
    // Only spin's own functions (`--show`): libc's internals are sampled
    // now and then and are named differently by the two tools (Go
    // symbolizes them with binutils, we with their debug info), which
    // moved the count of dropped nodes in one run in a few.
    const SPIN: &str = "--show=^(main|work|thread_main|recurse|burn_a|burn_b|burn_c)$";
    for args in [
        &[SPIN][..],
        &[SPIN, "--nodecount=4"][..],
        &[SPIN, "--nodefraction=0.2"][..],
    ] {
        let ours = report(&[&["--tree"], args].concat(), &case.inputs());
        let go_args: Vec<String> = args.iter().map(|a| a.replacen("--", "-", 1)).collect();
        let go = run_stdout(
            Command::new("pprof")
                .arg("-tree")
                .args(&go_args)
                .args(case.inputs()),
        );
        assert_eq!(
            summary(&ours),
            summary(&go),
            "{args:?}\nours:\n{ours}\nGo:\n{go}"
        );
        if args.contains(&"--nodefraction=0.2") {
            assert_ne!(summary(&ours).1, "0", "no node dropped:\n{ours}");
        }
    }
}
