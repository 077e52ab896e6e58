//! The weblist page on a real profile: the C++ workload (templates,
//! `<` and `&` in its source) built with g++ -O2 -g and profiled by
//! Debian's libprofiler.so. The page's numbers are `--list`'s, its
//! instructions `--disasm`'s, its text escaped; headless chromium renders
//! it to a non-blank picture (kept in `target/tmp/weblist-cxx.png`).
//!
//! Skipped loudly without libprofiler, g++ or chromium, unless
//! `CPUPROF_REQUIRE_PEERS=1`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cpuprof_report::measure::ValueFormat;
use cpuprof_report::output::{listing, weblist};
use cpuprof_report::{instructions, lines, Granularity, Options, Stacks};
use cpuprof_testkit::{compile, libprofiler, profile_with_libprofiler, require_tool, workload};
use regex::Regex;

/// The page, `--list`'s text of the same listings, and the disassemblies.
struct Built {
    page: String,
    text: String,
    disassemblies: Vec<instructions::Disassembly>,
}

fn build(re: &str) -> Option<Built> {
    let lib = libprofiler()?;
    if !require_tool("g++") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile(
        "g++",
        &[&workload("cxx.cc")],
        &dir.path().join("cxx"),
        &["-O2", "-g"],
    );
    let path = dir.path().join("cxx.prof");
    profile_with_libprofiler(&lib, &binary, &["1"], &path, 1000);
    let data = std::fs::read(&path).unwrap();
    let (_, mut profile) = cpuprof_profile::read_profile(&data, &Default::default()).unwrap();
    let symbolizer = cpuprof_symbolize::Symbolizer::new(cpuprof_symbolize::Options {
        binaries: vec![binary.clone()],
        ..Default::default()
    });
    symbolizer.symbolize(&mut profile);
    let binaries = symbolizer.binaries_for(&profile);
    let re = Regex::new(re).unwrap();

    let at_lines = Stacks::build(
        &profile,
        &Options {
            granularity: Granularity::Lines,
            ..Options::default()
        },
    );
    let mut listings = lines::listings(&at_lines, &re, false);
    lines::extend_from_binaries(&mut listings, &at_lines, &binaries);
    let at_addresses = Stacks::build(
        &profile,
        &Options {
            granularity: Granularity::Addresses,
            ..Options::default()
        },
    );
    let disassemblies = instructions::disassemble(&at_addresses, &re, false, &binaries).unwrap();

    let mut sources = cpuprof_report::source::SourceFiles::new(None, None);
    let mut text = Vec::new();
    listing::write(
        &mut text,
        &listings,
        &ValueFormat::count("samples"),
        &mut sources,
    )
    .unwrap();
    let mut page = Vec::new();
    weblist::write_html(
        &mut page,
        "weblist add_all|hash_strings",
        &listings,
        &disassemblies,
        &ValueFormat::count("samples"),
        &mut sources,
    )
    .unwrap();
    Some(Built {
        page: String::from_utf8(page).unwrap(),
        text: String::from_utf8(text).unwrap(),
        disassemblies,
    })
}

/// Per function (ROUTINE header) of `--list`'s text: (line, flat, cum) of
/// every numbered row.
fn text_rows(text: &str) -> BTreeMap<String, Vec<(i64, i64, i64)>> {
    let mut out: BTreeMap<String, Vec<(i64, i64, i64)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("ROUTINE ====================== ") {
            current = rest.split(" in ").next().unwrap().to_string();
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 || !fields[2].ends_with(':') {
            continue;
        }
        let number = |s: &str| if s == "." { 0 } else { s.parse().unwrap() };
        let Ok(n) = fields[2].trim_end_matches(':').parse::<i64>() else {
            continue;
        };
        out.entry(current.clone())
            .or_default()
            .push((n, number(fields[0]), number(fields[1])));
    }
    out
}

/// The same from the page: each section's `<h2>` and its rows' data.
fn page_rows(page: &str) -> BTreeMap<String, Vec<(i64, i64, i64)>> {
    let row =
        Regex::new(r#"<tr data-line="(\d+)" data-flat="(-?\d+)" data-cum="(-?\d+)""#).unwrap();
    let mut out = BTreeMap::new();
    for section in page.split("<section class=\"routine\">").skip(1) {
        let name = section
            .split("<h2>")
            .nth(1)
            .and_then(|s| s.split("</h2>").next())
            .unwrap()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let rows: Vec<(i64, i64, i64)> = row
            .captures_iter(section)
            .map(|c| {
                (
                    c[1].parse().unwrap(),
                    c[2].parse().unwrap(),
                    c[3].parse().unwrap(),
                )
            })
            .filter(|r| r.0 > 0)
            .collect();
        out.insert(name, rows);
    }
    out
}

#[test]
fn weblist_page_has_the_listing_numbers_instructions_and_escaped_source() {
    let Some(built) = build("add_all|hash_strings") else {
        return;
    };
    let page = &built.page;
    // Function headers, with their totals as --list prints them.
    let text = text_rows(&built.text);
    assert!(text.len() >= 2, "{}", built.text);
    let from_page = page_rows(page);
    assert_eq!(from_page, text, "page rows vs --list\n{}", built.text);
    for line in built.text.lines().filter(|l| l.contains(" Total samples ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let totals = format!("{} / {} samples (flat / cumulative)", f[0], f[1]);
        assert!(page.contains(&totals), "{totals} missing");
    }
    // The hottest line of each function is open onto its instructions,
    // with the addresses and counts of --disasm.
    let open = page.matches("<details open>").count();
    assert_eq!(open, text.len(), "one open line per function");
    for hot in page.split("<details open>").skip(1) {
        let block = hot.split("</details>").next().unwrap();
        let hottest = built
            .disassemblies
            .iter()
            .flat_map(|d| &d.instructions)
            .filter(|i| i.flat > 0)
            .find(|i| block.contains(&format!("<td class=\"addr\">{:x}</td>", i.address)));
        let hottest = hottest.unwrap_or_else(|| panic!("no sampled instruction in {block}"));
        assert!(block.contains(&format!(
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"addr\">{:x}</td>",
            hottest.flat, hottest.cum, hottest.address
        )));
    }
    // C++ source escaped: `const std::vector<T>& values`, `a < b`.
    assert!(page.contains("std::vector&lt;T&gt;&amp; values"), "{page}");
    assert!(page.contains("return a &lt; b;"), "{page}");
    assert!(!page.contains("vector<T>&"));
    // Self-contained: no fetch of anything.
    for external in ["http://", "https://", "<script", "<link", "src="] {
        assert!(!page.contains(external), "{external} in the page");
    }
}

#[test]
fn weblist_page_renders_in_chromium() {
    let Some(built) = build("add_all|hash_strings") else {
        return;
    };
    if !require_tool("chromium") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("weblist.html");
    std::fs::write(&html, &built.page).unwrap();
    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("weblist-cxx.png");
    let _ = std::fs::remove_file(&png);
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1200,900",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let bytes = std::fs::read(&png).unwrap_or_default();
    eprintln!("screenshot: {}", png.display());
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "no PNG at {png:?}");
    assert_eq!(u32::from_be_bytes(bytes[16..20].try_into().unwrap()), 1200);
    assert_eq!(u32::from_be_bytes(bytes[20..24].try_into().unwrap()), 900);
    // A blank page compresses to almost nothing.
    assert!(
        bytes.len() > 20_000,
        "screenshot is only {} bytes",
        bytes.len()
    );
}
