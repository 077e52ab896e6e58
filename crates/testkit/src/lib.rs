//! Test support shared by cpuprof's test suites: building the C/C++
//! workloads of `tests/workloads/` at test time, running them under the
//! reference profiler (Debian's `libprofiler.so`), running the reference
//! analysers (`google-pprof`, Go `pprof`, `gprof`, ...) and parsing the text
//! reports they print.
//!
//! Peers are required when `CPUPROF_REQUIRE_PEERS=1` (the project's test
//! script installs them and sets it); otherwise a missing peer skips the
//! test with a message on stderr.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use tempfile::TempDir;

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/testkit is two levels below the root")
        .to_path_buf()
}

/// A workload source file of `tests/workloads/`.
pub fn workload(name: &str) -> PathBuf {
    repo_root().join("tests/workloads").join(name)
}

/// True when peers must be present (missing ones fail the test).
pub fn peers_required() -> bool {
    std::env::var("CPUPROF_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// The path of `tool` on PATH (or the path itself if it is one).
pub fn which(tool: &str) -> Option<PathBuf> {
    let p = Path::new(tool);
    if p.is_absolute() {
        return p.exists().then(|| p.to_path_buf());
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(tool))
            .find(|c| c.is_file())
    })
}

/// True when `tool` is available. When it is not: panics if peers are
/// required, else prints why the calling test is skipped and returns false.
pub fn require_tool(tool: &str) -> bool {
    if which(tool).is_some() {
        return true;
    }
    if peers_required() {
        panic!("required peer tool `{tool}` is missing (CPUPROF_REQUIRE_PEERS=1)");
    }
    eprintln!(
        "SKIPPED: peer tool `{tool}` is not installed (run scripts/test to install the peers)"
    );
    false
}

/// Debian's gperftools profiler library, if installed.
pub fn libprofiler() -> Option<PathBuf> {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/libprofiler.so",
        "/usr/lib/x86_64-linux-gnu/libprofiler.so.0",
        "/usr/lib/libprofiler.so",
    ];
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        if peers_required() {
            panic!("libprofiler.so (libgoogle-perftools-dev) is missing (CPUPROF_REQUIRE_PEERS=1)");
        }
        eprintln!("SKIPPED: libprofiler.so is not installed (package libgoogle-perftools-dev)");
    }
    found
}

/// Debian's libprofiler, when gcc is there too (what building a workload
/// and profiling it under gperftools takes); None, the calling test
/// skipped, when either is missing.
pub fn gcc_and_libprofiler() -> Option<PathBuf> {
    if !require_tool("gcc") {
        return None;
    }
    let lib = libprofiler();
    if lib.is_none() {
        require_tool("libprofiler.so");
    }
    lib
}

/// Compiles `sources` with `compiler` (gcc or g++) into `output`, with
/// `flags`. Panics with the compiler's message on failure.
pub fn compile(compiler: &str, sources: &[&Path], output: &Path, flags: &[&str]) -> PathBuf {
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg("-o").arg(output);
    for s in sources {
        cmd.arg(s);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{compiler} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    output.to_path_buf()
}

/// Builds the Go program `main_go` (one `main.go`, standard library only)
/// into `dir/name` with Debian's `go` in GOPATH mode, its GOPATH and
/// build cache under `dir` (nothing of the user's is read or written).
/// Panics with go's message on failure.
pub fn build_go(dir: &Path, name: &str, main_go: &str) -> PathBuf {
    let src = dir.join("gopath/src").join(name);
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("main.go"), main_go).unwrap();
    let binary = dir.join(name);
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", dir.join("gopath"))
        .env("GOCACHE", dir.join("gocache"))
        .env("GOFLAGS", "")
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run go: {e}"));
    assert!(
        out.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

/// Builds `spin` (and `libhot.so`) from tests/workloads into `dir` with
/// extra `flags` (e.g. `-fno-omit-frame-pointer`, `-no-pie`); returns the
/// paths of spin and libhot.so.
pub fn build_spin(dir: &Path, name: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let spin = dir.join(name);
    // Libraries must follow the source on gcc's command line.
    let out = Command::new("gcc")
        .args(["-O2", "-g", "-pthread"])
        .args(flags)
        .arg("-o")
        .arg(&spin)
        .arg(workload("spin.c"))
        .args(["-ldl", "-lm"])
        .output()
        .expect("cannot run gcc");
    assert!(
        out.status.success(),
        "gcc spin.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lib = dir.join(format!("lib{name}hot.so"));
    let mut lib_flags = vec!["-O2", "-g", "-shared", "-fPIC"];
    lib_flags.extend(flags.iter().filter(|f| **f != "-no-pie"));
    compile("gcc", &[&workload("libhot.c")], &lib, &lib_flags);
    (spin, lib)
}

/// Runs `binary args` under Debian's libprofiler.so (LD_PRELOAD) writing
/// `profile`, at `frequency` Hz. Panics if the program fails.
pub fn profile_with_libprofiler(
    libprofiler: &Path,
    binary: &Path,
    args: &[&str],
    profile: &Path,
    frequency: u32,
) -> Output {
    let out = Command::new(binary)
        .args(args)
        .env("LD_PRELOAD", libprofiler)
        .env("CPUPROFILE", profile)
        .env("CPUPROFILE_FREQUENCY", frequency.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        binary.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::metadata(profile)
            .map(|m| m.len() > 0)
            .unwrap_or(false),
        "libprofiler wrote no profile at {}",
        profile.display()
    );
    out
}

/// Runs a command and returns its stdout; panics with its stderr if it
/// fails.
pub fn run_stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run_ok(cmd).stdout).into_owned()
}

/// Runs `cmd` (standard input empty) and returns its output; panics with
/// its standard error if it fails.
pub fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd` with `input` on its standard input and returns its output,
/// whatever its exit status. The input is written by a thread of its own,
/// so a command that prints before it has read all of it cannot block.
pub fn run_with_stdin(cmd: &mut Command, input: impl AsRef<[u8]>) -> std::process::Output {
    use std::io::Write as _;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("a piped standard input");
    let input = input.as_ref().to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("the command ends");
    feeder
        .join()
        .unwrap()
        .expect("the command reads its standard input");
    out
}

/// One row of a pprof-style text report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextRow {
    /// Flat value.
    pub flat: i64,
    /// Cumulative value.
    pub cum: i64,
    /// The name column.
    pub name: String,
}

/// A parsed pprof-style text report (`Total: N samples` and rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextReport {
    /// The `Total:` value.
    pub total: i64,
    /// The rows, in order.
    pub rows: Vec<TextRow>,
}

impl TextReport {
    /// Parses the output of `google-pprof --text` or `cpuprof report
    /// --text`; lines that are not rows (messages) are ignored.
    pub fn parse(text: &str) -> TextReport {
        let mut report = TextReport::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("Total: ") {
                report.total = rest
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !fields[1].ends_with('%') || !fields[4].ends_with('%') {
                continue;
            }
            let (Ok(flat), Ok(cum)) = (fields[0].parse(), fields[3].parse()) else {
                continue;
            };
            // The name is everything after the fifth column.
            let name = line.get(39..).unwrap_or("").to_string();
            report.rows.push(TextRow { flat, cum, name });
        }
        report
    }

    /// The row named `name`.
    pub fn row(&self, name: &str) -> Option<&TextRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// For comparing perl pprof's reports with ours: the vDSO's rows (perl
    /// prints its addresses, we name its `__vdso_` functions) folded into
    /// one `[vdso]` row, and the rows sorted by name.
    pub fn vdso_folded(&self) -> TextReport {
        let mut rows: Vec<TextRow> = Vec::new();
        let mut vdso = TextRow {
            flat: 0,
            cum: 0,
            name: "[vdso]".to_string(),
        };
        for row in &self.rows {
            if vdso_frame(&row.name) == "[vdso]" {
                vdso.flat += row.flat;
                vdso.cum += row.cum;
            } else {
                rows.push(row.clone());
            }
        }
        if vdso.flat != 0 || vdso.cum != 0 {
            rows.push(vdso);
        }
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        TextReport {
            total: self.total,
            rows,
        }
    }
}

/// The generators' pseudo-random numbers (xorshift64): the same seed, the
/// same file. The state must not be 0.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// `[vdso]` for a frame of the vDSO as perl pprof or we print it (an
/// address of 16 hex digits, with or without `0x`; a `__vdso_` function),
/// else the name itself.
pub fn vdso_frame(name: &str) -> &str {
    let hex = name.strip_prefix("0x").unwrap_or(name);
    let address = hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    if address || name.starts_with("__vdso_") {
        "[vdso]"
    } else {
        name
    }
}

/// Whether `perf record` works here (perf installed, its event allowed);
/// prints why a test is skipped when not, and fails on any other error.
pub fn perf_works(dir: &Path) -> bool {
    if !require_tool("perf") {
        return false;
    }
    let out = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(dir.join("probe.data"))
        .args(["--", "true"])
        .output()
        .expect("perf runs");
    if out.status.success() {
        return true;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("perf_event_open")
        || stderr.contains("Permission denied")
        || stderr.contains("No permission")
        || stderr.contains("not supported")
    {
        eprintln!(
            "SKIPPED: perf record cannot open its event here (perf_event_open refused): {stderr}"
        );
        return false;
    }
    panic!("perf record failed: {stderr}");
}

/// The two-phase workload (`tests/workloads/phases.c`: fnA burns the
/// first second of wall-clock time, fnB the next), built and recorded with
/// `perf record -e cpu-clock -F 1000 -g` (a timestamp on every sample)
/// once per test binary, in a directory tests may also write to.
pub struct Phases {
    /// The directory holding both files.
    pub dir: TempDir,
    /// The built workload.
    pub binary: PathBuf,
    /// Its perf.data.
    pub data: PathBuf,
}

/// The [`Phases`] recording of this test binary; `None` (the test skips)
/// where gcc is missing or perf cannot open its event.
pub fn phases() -> Option<&'static Phases> {
    static PHASES: std::sync::OnceLock<Option<Phases>> = std::sync::OnceLock::new();
    PHASES.get_or_init(record_phases).as_ref()
}

fn record_phases() -> Option<Phases> {
    let dir = TempDir::new().unwrap();
    if !require_tool("gcc") || !perf_works(dir.path()) {
        return None;
    }
    let binary = dir.path().join("phases");
    compile(
        "gcc",
        &[&workload("phases.c")],
        &binary,
        &["-O1", "-g", "-fno-omit-frame-pointer"],
    );
    let data = dir.path().join("phases.data");
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock", "-F", "1000", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&binary)
            .arg("1.0")
            .current_dir(dir.path()),
    );
    Some(Phases { dir, binary, data })
}
