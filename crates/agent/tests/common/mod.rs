//! Helpers of the agent's integration tests: building C programs against
//! our header and library, running them under the agent, reading the
//! profiles, and naming their PCs with `nm` (binutils, the reference
//! symbol table reader).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cpuprof_profile::Profile;
use cpuprof_testkit::TextReport;

#[allow(unused_imports)]
pub use cpuprof_testkit::{build_spin, require_tool, TempDir};

/// `libcpuprof.so` of this build: cargo test leaves it beside the test
/// binary in `deps/` (only `cargo build` copies it up to `target/<profile>/`,
/// where it may be stale).
pub fn agent_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let candidates = [
        deps.join("libcpuprof.so"),
        deps.parent().unwrap().join("libcpuprof.so"),
    ];
    let lib = candidates.iter().find(|p| p.is_file()).unwrap_or_else(|| {
        panic!(
            "libcpuprof.so is missing beside {}: build the cpuprof cdylib",
            exe.display()
        )
    });
    lib.clone()
}

/// The directory of our `gperftools/profiler.h`.
pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// A C test program of `tests/c/`.
pub fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

pub fn tempdir() -> TempDir {
    tempfile::Builder::new()
        .prefix("cpuprof-agent-")
        .tempdir()
        .expect("temporary directory")
}

/// Compiles `tests/c/NAME.c` into `dir/NAME` (no frame pointers, -O2 -g);
/// with `link_agent`, against our header and `-lcpuprof`.
pub fn build_c(dir: &Path, name: &str, link_agent: bool) -> PathBuf {
    build_c_with(dir, name, link_agent, Some(&include_dir()))
}

/// Like [`build_c`], taking `<gperftools/profiler.h>` from `header_dir`
/// (None: the system's, i.e. gperftools' own header).
pub fn build_c_with(
    dir: &Path,
    name: &str,
    link_agent: bool,
    header_dir: Option<&Path>,
) -> PathBuf {
    let output = dir.join(name);
    let mut cmd = Command::new("gcc");
    cmd.args(["-O2", "-g", "-fomit-frame-pointer", "-pthread"])
        .arg("-I")
        .arg(c_source(""))
        .arg("-o")
        .arg(&output)
        .arg(c_source(&format!("{name}.c")));
    if link_agent {
        let lib_dir = agent_lib().parent().unwrap().to_path_buf();
        // -lcpuprof finds libcpuprof.so in lib_dir; the rpath finds it at run time.
        if let Some(header_dir) = header_dir {
            cmd.arg("-I").arg(header_dir);
        }
        cmd.arg(format!("-L{}", lib_dir.display()))
            .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
            .arg("-lcpuprof");
    }
    let out = cmd.output().expect("cannot run gcc");
    assert!(
        out.status.success(),
        "gcc {name}.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    output
}

/// A command running `program` under the agent (LD_PRELOAD) writing
/// `profile` at `hz`.
pub fn preloaded(program: &Path, profile: &Path, hz: u32) -> Command {
    let mut cmd = Command::new(program);
    with_agent(&mut cmd, profile, hz).stdin(Stdio::null());
    cmd
}

/// Puts `cmd` under the agent (LD_PRELOAD) writing `profile` at `hz`.
pub fn with_agent<'a>(cmd: &'a mut Command, profile: &Path, hz: u32) -> &'a mut Command {
    cmd.env("LD_PRELOAD", agent_lib())
        .env("CPUPROFILE", profile)
        .env("CPUPROFILE_FREQUENCY", hz.to_string())
        .env_remove("CPUPROFILE_USE_PID")
        .env_remove("CPUPROFILE_REALTIME")
        .env_remove("CPUPROFILE_TIMER");
    // CPUPROF_TEST_TIMER=posix|itimer runs the suite on a fallback clock.
    if let Ok(timer) = std::env::var("CPUPROF_TEST_TIMER") {
        cmd.env("CPUPROFILE_TIMER", timer);
    }
    cmd
}

/// Runs `cmd`, asserting success; returns its output.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `cmd` and returns its output and the CPU seconds (user + system)
/// it and its reaped children used.
pub fn run_measured(cmd: &mut Command) -> (Output, f64) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    // Read the pipes first, then reap with wait4 to get the rusage.
    let out = {
        use std::io::Read;
        let mut child = child;
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let mut status = 0;
        // SAFETY: rusage is a plain struct; we reap our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(rc, pid, "wait4");
        use std::os::unix::process::ExitStatusExt;
        let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (
            Output {
                status: std::process::ExitStatus::from_raw(status),
                stdout,
                stderr,
            },
            cpu(usage.ru_utime) + cpu(usage.ru_stime),
        )
    };
    assert!(
        out.0.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.0.stderr)
    );
    out
}

/// Reads a profile with cpuprof-profile's gperftools reader.
pub fn read_profile(path: &Path) -> Profile {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cpuprof_profile::gperftools::read(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Total sample count of a profile.
pub fn total_samples(profile: &Profile) -> i64 {
    profile.samples.iter().map(|s| s.values[0]).sum()
}

/// Function symbols of an ELF file, sorted: (address, name).
fn nm_symbols(path: &str) -> Vec<(u64, String)> {
    let mut symbols = Vec::new();
    for dynamic in [false, true] {
        let mut cmd = Command::new("nm");
        cmd.arg("--defined-only");
        if dynamic {
            cmd.arg("-D");
        }
        let Ok(out) = cmd.arg(path).output() else {
            continue;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() == 3 && matches!(fields[1], "T" | "t" | "W" | "i") {
                if let Ok(address) = u64::from_str_radix(fields[0], 16) {
                    symbols.push((address, fields[2].split('@').next().unwrap().to_string()));
                }
            }
        }
    }
    symbols.sort();
    symbols.dedup_by_key(|s| s.0);
    symbols
}

/// Stacks of a profile as function names (leaf first), with counts,
/// named with `nm`.
pub struct NamedStacks {
    pub stacks: Vec<(Vec<String>, i64)>,
}

impl NamedStacks {
    pub fn of(profile: &Profile) -> NamedStacks {
        let mut symbols: HashMap<String, (Vec<(u64, String)>, bool)> = HashMap::new();
        let mut name_of = |address: u64| -> String {
            let Some(mapping) = profile
                .mappings
                .iter()
                .find(|m| address >= m.start && address < m.limit && m.path.starts_with('/'))
            else {
                return format!("{address:#x}");
            };
            let (table, is_exec) = symbols.entry(mapping.path.clone()).or_insert_with(|| {
                let is_exec = std::fs::read(&mapping.path)
                    .map(|d| d.len() > 18 && d[16] == 2)
                    .unwrap_or(false);
                (nm_symbols(&mapping.path), is_exec)
            });
            let vaddr = if *is_exec {
                address
            } else {
                address - mapping.start + mapping.offset
            };
            let i = table.partition_point(|(a, _)| *a <= vaddr);
            match i.checked_sub(1) {
                Some(i) => table[i].1.clone(),
                None => format!("{address:#x}"),
            }
        };
        let stacks = profile
            .samples
            .iter()
            .map(|s| {
                let names = s
                    .locations
                    .iter()
                    .map(|&l| name_of(profile.locations[l.index()].address))
                    .collect();
                (names, s.values[0])
            })
            .collect();
        NamedStacks { stacks }
    }

    pub fn total(&self) -> i64 {
        self.stacks.iter().map(|s| s.1).sum()
    }

    /// Samples whose leaf is `name`.
    pub fn flat(&self, name: &str) -> i64 {
        self.stacks
            .iter()
            .filter(|s| s.0.first().is_some_and(|n| n == name))
            .map(|s| s.1)
            .sum()
    }

    /// Samples with `name` anywhere in the stack.
    pub fn cum(&self, name: &str) -> i64 {
        self.stacks
            .iter()
            .filter(|s| s.0.iter().any(|n| n == name))
            .map(|s| s.1)
            .sum()
    }

    /// Leaf functions by flat count, heaviest first.
    pub fn top_flat(&self) -> Vec<(String, i64)> {
        let mut flat: HashMap<&str, i64> = HashMap::new();
        for (names, count) in &self.stacks {
            if let Some(leaf) = names.first() {
                *flat.entry(leaf).or_default() += count;
            }
        }
        let mut rows: Vec<(String, i64)> =
            flat.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        rows
    }
}

/// Files in `dir` whose names start with `prefix` (sorted).
pub fn files_starting_with(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// Our own text report of a profile: cpuprof-profile's reader,
/// cpuprof-symbolize and cpuprof-report, as `cpuprof report --text` runs them.
pub fn our_report(profile: &Path) -> TextReport {
    our_report_with(profile, &cpuprof_report::Options::default())
}

/// [`our_report`] with report `options`.
pub fn our_report_with(profile: &Path, options: &cpuprof_report::Options) -> TextReport {
    let mut parsed = read_any(profile);
    cpuprof_symbolize::symbolize(&mut parsed, &cpuprof_symbolize::Options::default());
    let stacks = cpuprof_report::Stacks::build(&parsed, options);
    let graph = cpuprof_report::Graph::build(&stacks, false);
    let mut out = Vec::new();
    cpuprof_report::output::text::write(&mut out, &stacks, &graph, options).unwrap();
    TextReport::parse(&String::from_utf8(out).unwrap())
}

/// Reads a profile in any format cpuprof-profile's reader knows.
pub fn read_any(path: &Path) -> Profile {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cpuprof_profile::read_profile(&data, &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .1
}

/// Reads `profile` (of `binary`) with our reader and report, and with
/// `google-pprof --text` when installed: it must read it without a
/// complaint (perl's warnings on a short or empty file included; its
/// notes on the files it uses and the frames it removes are not
/// complaints) and count the same total. Returns our report.
pub fn read_with_google_pprof(binary: &Path, profile: &Path) -> TextReport {
    let size = std::fs::metadata(profile)
        .unwrap_or_else(|e| panic!("{}: {e}", profile.display()))
        .len();
    assert!(size > 0, "{} is empty", profile.display());
    let ours = our_report(profile);
    assert_eq!(
        ours.total,
        total_samples(&read_profile(profile)),
        "{}: report total vs samples",
        profile.display()
    );
    if !require_tool("google-pprof") {
        return ours;
    }
    let out = Command::new("google-pprof")
        .arg("--text")
        .arg(binary)
        .arg(profile)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run google-pprof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            let note = l.starts_with("Using local file")
                || (l.starts_with("Removing ") && l.ends_with(" from all stack traces."));
            !note
        })
        .collect();
    assert!(
        out.status.success() && complaints.is_empty(),
        "google-pprof --text {} {}: {}\n{stderr}",
        binary.display(),
        profile.display(),
        out.status
    );
    let perl = TextReport::parse(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        perl.total,
        ours.total,
        "{}: google-pprof's total vs ours",
        profile.display()
    );
    ours
}

/// The calling thread's CPU time in seconds: workloads burn for a CPU
/// time, which a loaded machine does not shorten.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
