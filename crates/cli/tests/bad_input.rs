//! Bad input gets one line on stderr naming the file, the byte offset and
//! what was expected, and exit status 1; never a panic, a hang or partial
//! output. A missing or mismatched binary is only a warning.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use cpuprof_testkit::TempDir;

fn slots(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn header() -> Vec<u64> {
    vec![0, 3, 0, 10000, 0]
}

fn report(args: &[&Path]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cpuprof"))
        .arg("report")
        .arg("--text")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A hang is a failure: give it ten seconds.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "cpuprof hangs on {args:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs the report on `data` and checks the one-line error: file name,
/// `offset N` and `expected` text.
fn assert_rejected(name: &str, data: &[u8], offset: u64, expected: &str) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, data).unwrap();
    let out = report(&[&path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{name}: status {:?}, stderr {stderr}",
        out.status
    );
    assert!(
        out.stdout.is_empty(),
        "{name}: partial output {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(stderr.lines().count(), 1, "{name}: not one line: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()),
        "{name}: no file name: {stderr}"
    );
    assert!(
        stderr.contains(&format!("offset {offset}:")),
        "{name}: wrong offset: {stderr}"
    );
    assert!(
        stderr.contains(expected),
        "{name}: expected {expected:?} in {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{name}: {stderr}");
}

#[test]
fn empty_file() {
    assert_rejected("empty.prof", b"", 0, "empty file");
}

#[test]
fn truncated_in_the_header() {
    let data = slots(&header());
    assert_rejected("hdr.prof", &data[..28], 24, "sampling period");
    assert_rejected("hdr2.prof", &data[..20], 16, "format version");
}

#[test]
fn truncated_mid_record() {
    let mut s = header();
    s.extend_from_slice(&[1, 3, 0x1000, 0x2000]);
    assert_rejected("mid.prof", &slots(&s), 48, "only 2 slots remain");
}

#[test]
fn truncated_before_the_trailer() {
    let mut s = header();
    s.extend_from_slice(&[1, 2, 0x1000, 0x2000]);
    assert_rejected("notrailer.prof", &slots(&s), 72, "trailer");
}

#[test]
fn wrong_magic() {
    assert_rejected("text.prof", b"this is not a profile\n", 0, "expected");
    let mut s = header();
    s[1] = 0;
    assert_rejected("zeros.prof", &slots(&s), 0, "expected");
}

#[test]
fn record_with_zero_pcs() {
    let mut s = header();
    s.extend_from_slice(&[5, 0, 0, 1, 0]);
    assert_rejected("zero.prof", &slots(&s), 48, "0 PCs");
}

#[test]
fn absurd_lengths() {
    let mut s = header();
    s.extend_from_slice(&[1, u64::MAX, 0x1000, 0, 1, 0]);
    assert_rejected("huge.prof", &slots(&s), 48, "claims");
    let mut s = header();
    s[1] = u64::MAX;
    assert_rejected("hugeheader.prof", &slots(&s), 0, "expected");
}

#[test]
fn binary_garbage_in_the_maps_text() {
    let mut s = header();
    s.extend_from_slice(&[1, 1, 0x1000, 0, 1, 0]);
    let mut data = slots(&s);
    data.extend_from_slice(
        b"00400000-00401000 r-xp 00000000 00:00 0 /bin/true\n\x01\x02\xff\x00garbage",
    );
    // 40 header + 24 record + 24 trailer bytes, then a 50-byte line.
    assert_rejected("garbage.prof", &data, 88 + 50, "mapped objects");
}

#[test]
fn missing_binary_is_a_warning_and_addresses_print() {
    let dir = TempDir::new().unwrap();
    let mut s = header();
    s.extend_from_slice(&[3, 1, 0x400123, 0, 1, 0]);
    let mut data = slots(&s);
    data.extend_from_slice(b"00400000-00401000 r-xp 00000000 00:00 0 /nonexistent/prog\n");
    let path = dir.path().join("p.prof");
    std::fs::write(&path, data).unwrap();
    let out = report(&[&path]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("/nonexistent/prog"),
        "{stderr}"
    );
    assert_eq!(
        stdout,
        "Total: 3 samples\n       3 100.0% 100.0%        3 100.0% 0x0000000000400123\n"
    );
}

#[test]
fn missing_profile_file() {
    let out = report(&[Path::new("/nonexistent/x.prof")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/x.prof"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn malformed_symbolized_raw_profiles() {
    let profile_part: Vec<u8> = slots(&[0, 3, 0, 1, 0, 2, 1, 0x1000]);
    let with = |symbols: &[u8]| {
        let mut d = symbols.to_vec();
        d.extend_from_slice(&profile_part);
        d
    };
    assert_rejected(
        "noaddr.raw",
        &with(b"--- symbol\n0x1000\n---\n--- profile\n"),
        11,
        "expected `0xADDRESS name`",
    );
    assert_rejected(
        "long.raw",
        &with(b"--- symbol\n0x11112222333344445 main\n---\n--- profile\n"),
        11,
        "at most 16 hex digits",
    );
    assert_rejected(
        "noend.raw",
        b"--- symbol\n0x1000 main\n",
        23,
        "symbol section has no end",
    );
    assert_rejected(
        "noprofile.raw",
        &with(b"--- symbol\n0x1000 main\n---\n--- heap\n"),
        27,
        "--- profile",
    );
    // The profile part's errors are placed in the whole file.
    assert_rejected(
        "badprofile.raw",
        b"--- symbol\n0x1000 main\n---\n--- profile\n\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00",
        39 + 16,
        "in the profile section",
    );
}

/// `report --symbols BINARY` with `input` on standard input.
fn symbols(binary: &Path, input: &str) -> Output {
    cpuprof_testkit::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_cpuprof"))
            .args(["report", "--symbols"])
            .arg(binary),
        input,
    )
}

#[test]
fn bad_symbols_input_lines() {
    let binary = Path::new(env!("CARGO_BIN_EXE_cpuprof"));
    for (input, expected) in [
        ("0x1000\nhello\n", "line 2: expected hex addresses"),
        ("0xZZ\n", "line 1: `0xZZ`: expected a hex address"),
        ("0x11112222333344445\n", "at most 16 digits"),
    ] {
        let out = symbols(binary, input);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{input:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{input:?}: partial output");
        assert_eq!(stderr.lines().count(), 1, "{input:?}: {stderr}");
        assert!(stderr.contains(expected), "{input:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A profile where a binary is expected.
    let dir = TempDir::new().unwrap();
    let text = dir.path().join("not-elf");
    std::fs::write(&text, "x").unwrap();
    let out = symbols(&text, "0x1000\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not an ELF binary"), "{stderr}");
}

#[test]
fn raw_of_collapsed_stacks_is_refused_without_output() {
    let dir = TempDir::new().unwrap();
    let folded = dir.path().join("f.folded");
    std::fs::write(&folded, "main;work 3\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cpuprof"))
        .args(["report", "--raw"])
        .arg(&folded)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--raw needs program addresses"), "{stderr}");
}

/// Two profiles each within `i64` whose sum is not (2^62 samples each),
/// summed or one subtracted as a base: one line naming the step, exit 1,
/// as for a single profile beyond 2^63.
#[test]
fn sums_and_diffs_beyond_i64_are_one_line() {
    let dir = TempDir::new().unwrap();
    let a = dir.path().join("a.txt");
    let b = dir.path().join("b.txt");
    std::fs::write(&a, "main;work 4611686018427387904\n").unwrap();
    std::fs::write(&b, "main;other 4611686018427387904\n").unwrap();
    let alone = report(&[&a]);
    assert!(alone.status.success());
    let base = std::ffi::OsString::from(format!("--base={}", b.display()));
    for (args, step) in [
        (vec![a.as_path(), b.as_path()], "summing the profiles"),
        (vec![Path::new(&base), a.as_path()], "--base"),
    ] {
        let out = report(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(
            err.trim_end(),
            format!(
                "cpuprof: {step}: the samples values of the 2 profiles add up to \
                 9223372036854775808, beyond 2^63: not real profiles"
            ),
            "{args:?}"
        );
    }
}
