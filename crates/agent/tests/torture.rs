//! The agent's torture suite (issue 14, item 3): real programs, each run
//! without and with the agent (`LD_PRELOAD=libcpuprof.so CPUPROFILE=…`).
//! Every scenario checks that the host does exactly what it does alone —
//! the same stdout, the same exit status, the same stderr apart from the
//! agent's own `PROFILE:`/`cpuprof:` lines — and, where the work is fixed,
//! that its CPU time stays within [`CPU_BAR`]; and that the agent left
//! readable profiles (cpuprof-profile's reader, our report) whose sample
//! counts fit the CPU time the programs used.
//!
//! Two scenarios of the issue live in `tests/host_resources.rs` and are
//! not repeated here: 900 threads under `ulimit -n 1024` open as many files
//! with the agent as without it
//! (`nine_hundred_threads_open_as_many_files_with_the_agent`), and a
//! program's own SIGPROF handler and `ITIMER_PROF` run as often with the
//! agent (`own_sigprof_handler_runs_as_often_and_the_agent_still_samples`);
//! the same file has threads blocking every signal under a small
//! `RLIMIT_SIGPENDING`.
//!
//! `CPUPROF_TORTURE_LONG=1` runs the long variants: xz on 50 MB instead of
//! 8 MB, 10,000 threads instead of 2,000, Chromium with `--no-zygote`,
//! firefox-esr's screenshot, and longer Node, JVM and cgo runs.
//! `cargo test --release -p cpuprof --test torture -- --nocapture` prints
//! each scenario's figures.

mod common;

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Instant;

use common::*;

/// CPU time (user + system, the whole process tree) with the agent at its
/// default 100 Hz over without, for a fixed amount of work: the agent's
/// measured overhead is 1–1.5% at 100 Hz and 5–6% at 1000 Hz
/// (`scripts/bench-agent`); the bar leaves room for a shared 2-core host.
/// It is a guard against pathologies (a storm of signals, a wait per
/// thread or per process), not a benchmark.
const CPU_BAR: f64 = 1.25;

/// The scenarios run one at a time: on 2 cores, parallel runs would
/// measure each other (CPU time, steal, a thread waiting for a core).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn long() -> bool {
    std::env::var_os("CPUPROF_TORTURE_LONG").is_some_and(|v| v != "0")
}

/// One run of a host program.
struct Run {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
    /// User + system CPU seconds of the process and its reaped children.
    cpu: f64,
    wall: f64,
}

impl Run {
    /// stderr without the agent's own lines.
    fn host_stderr(&self) -> String {
        self.stderr
            .lines()
            .filter(|l| !l.starts_with("PROFILE: ") && !l.starts_with("cpuprof: "))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// The agent's `cpuprof:` lines.
    fn agent_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("cpuprof: "))
            .collect()
    }
}

/// Runs `cmd` (stdin from /dev/null, or `input`), collecting its output,
/// exit status, the CPU time of its process tree (`wait4`) and wall time.
// The child is reaped by wait4 (for its rusage), not Child::wait.
#[allow(clippy::zombie_processes)]
fn measure(cmd: &mut Command, input: Option<&[u8]>) -> Run {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let feeder = input.map(|data| {
        let data = data.to_vec();
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        })
    });
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_reader = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        stderr_pipe.read_to_end(&mut buffer).unwrap();
        buffer
    });
    let mut stdout = Vec::new();
    stdout_pipe.read_to_end(&mut stdout).unwrap();
    let stderr = stderr_reader.join().unwrap();
    if let Some(feeder) = feeder {
        feeder.join().unwrap();
    }
    let mut status = 0;
    // SAFETY: rusage is a plain struct; we reap our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4");
    let wall = start.elapsed().as_secs_f64();
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        status: ExitStatus::from_raw(status),
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        cpu: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        wall,
    }
}

/// A command with none of the agent's variables (the test may itself run
/// under them).
fn plain(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for var in [
        "LD_PRELOAD",
        "CPUPROFILE",
        "CPUPROFILE_FREQUENCY",
        "CPUPROFILE_USE_PID",
        "CPUPROFILE_REALTIME",
        "CPUPROFILE_TIMER",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs the command `make()` builds without the agent, then with it
/// (profile `profile` at `hz`), and asserts the host did the same: exit
/// status, stdout, stderr apart from the agent's lines.
fn run_both(
    what: &str,
    make: &dyn Fn() -> Command,
    input: Option<&[u8]>,
    profile: &Path,
    hz: u32,
) -> (Run, Run) {
    let without = measure(&mut make(), input);
    let with = measure(with_agent(&mut make(), profile, hz), input);
    assert_same_host_behaviour(what, &without, &with);
    (without, with)
}

fn assert_same_host_behaviour(what: &str, without: &Run, with: &Run) {
    assert_eq!(
        without.status, with.status,
        "{what}: exit status without the agent {} and with it {}\nstderr with it:\n{}",
        without.status, with.status, with.stderr
    );
    if without.stdout != with.stdout {
        let first = without
            .stdout
            .iter()
            .zip(&with.stdout)
            .position(|(a, b)| a != b)
            .unwrap_or(without.stdout.len().min(with.stdout.len()));
        panic!(
            "{what}: stdout differs at byte {first} ({} bytes without the agent, {} with it)\nstderr with it:\n{}",
            without.stdout.len(),
            with.stdout.len(),
            with.stderr
        );
    }
    assert_eq!(
        without.host_stderr(),
        with.host_stderr(),
        "{what}: the program's own stderr differs"
    );
}

/// Asserts the CPU time with the agent is within [`CPU_BAR`] of the time
/// without it, after taking `allowance` seconds off (the agent's start in
/// each process: a few ms, measured by
/// `short_processes_do_not_wait_for_the_descriptor_table`); on a miss, runs the pair again (up to 3 pairs in all: a shared
/// host is noisy) and keeps the best ratio. Returns the figures line.
fn assert_cpu_within_bar(
    what: &str,
    first: (&Run, &Run),
    again: &dyn Fn() -> (Run, Run),
    allowance: f64,
) -> String {
    let ratio = |without: &Run, with: &Run| (with.cpu - allowance).max(0.0) / without.cpu.max(1e-3);
    let mut figures = vec![format!(
        "CPU {:.3} s without, {:.3} s with the agent; wall {:.3} s / {:.3} s",
        first.0.cpu, first.1.cpu, first.0.wall, first.1.wall
    )];
    let mut best = ratio(first.0, first.1);
    let mut attempt = 1;
    while best > CPU_BAR && attempt < 3 {
        let (without, with) = again();
        figures.push(format!(
            "CPU {:.3} s without, {:.3} s with the agent; wall {:.3} s / {:.3} s",
            without.cpu, with.cpu, without.wall, with.wall
        ));
        best = best.min(ratio(&without, &with));
        attempt += 1;
    }
    let text = format!("{what}: {} (best ratio {best:.3})", figures.join("; "));
    assert!(best <= CPU_BAR, "{text}: over the bar {CPU_BAR}");
    text
}

/// Every file in `dir` starting with `prefix`: none temporary or empty,
/// each read by cpuprof-profile's reader. Returns (files, total samples).
fn read_all_profiles(dir: &Path, prefix: &str) -> (Vec<PathBuf>, i64) {
    let names = files_starting_with(dir, prefix);
    let mut total = 0;
    let mut paths = Vec::new();
    for name in &names {
        assert!(!name.ends_with(".tmp"), "temporary file left: {name}");
        let path = dir.join(name);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size > 0, "{name} is empty");
        total += total_samples(&read_profile(&path));
        paths.push(path);
    }
    (paths, total)
}

/// Samples of `profile` should stand for `cpu` seconds at `hz`: between
/// `low` and 1.1 times CPU × rate.
fn assert_samples_fit(what: &str, samples: i64, cpu: f64, hz: u32, low: f64) {
    let expected = cpu * f64::from(hz);
    assert!(
        samples as f64 >= low * expected && samples as f64 <= 1.1 * expected + 5.0,
        "{what}: {samples} samples for {cpu:.3} CPU-s at {hz} Hz (expected {low}–1.1 × {expected:.0})"
    );
}

/// Deterministic, compressible input: lines of words and numbers from a
/// fixed linear congruential generator (about 3–4× for xz).
fn generated_text(bytes: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "profile", "sample", "stack", "thread", "signal", "agent", "frame", "period", "cpu",
        "timer", "unwind", "module", "table", "flush", "record", "symbol",
    ];
    let mut out = Vec::with_capacity(bytes + 64);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    while out.len() < bytes {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = x >> 33;
        out.extend_from_slice(WORDS[(r & 15) as usize].as_bytes());
        out.push(if r & 0x30 == 0 { b'\n' } else { b' ' });
        if r & 0x1c0 == 0 {
            out.extend_from_slice(format!("{} ", (r >> 9) % 100_000).as_bytes());
        }
    }
    out.truncate(bytes);
    out
}

/// Builds `tests/c/NAME.c` as in the other agent tests.
fn build(dir: &Path, name: &str) -> PathBuf {
    build_c(dir, name, false)
}

/// Proves: a bash script that runs 200 pyenv-style shims — each a
/// command substitution (fork), the shim (a `#!/usr/bin/env bash` script:
/// exec of env, then of bash) that execs the real program (`expr`) — prints
/// the same, exits with the same status (3), and leaves only complete
/// profiles, one per process (none temporary or empty, all readable), with
/// no more samples than the CPU time allows. Every process in the chain
/// starts and stops the agent, so a per-process wait shows up here (a
/// descriptor-table grace period did: see
/// `short_processes_do_not_wait_for_the_descriptor_table`).
#[test]
fn bash_running_200_shims_forks_and_execs_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let shims = dir.path().join("shims");
    std::fs::create_dir(&shims).unwrap();
    let expr = testkit_which("expr");
    let shim = shims.join("tool");
    std::fs::write(
        &shim,
        format!(
            "#!/usr/bin/env bash\n# a pyenv-style shim: find the real program, exec it\nexec {} \"$@\"\n",
            expr.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("loop.sh"),
        "total=0\nfor i in $(seq 1 200); do\n  n=$(tool \"$i\" '*' 3)\n  total=$((total + n))\ndone\necho \"200 shims, total $total\"\nexit 3\n",
    )
    .unwrap();
    make_executable(&shim);
    let path = format!(
        "{}:{}",
        shims.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let script = dir.path().join("loop.sh");
    let make = || {
        let mut cmd = plain("bash");
        cmd.arg(&script).env("PATH", &path);
        cmd
    };
    let hz = 1000;
    let (mut without, mut with) = run_both("shims", &make, None, &profiles.join("shims.prof"), hz);
    assert_eq!(without.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        "200 shims, total 60300\n"
    );
    let (files, samples) = read_all_profiles(&profiles, "shims.prof");
    // bash, seq, and per shim at least its last image (expr).
    assert!(files.len() >= 202, "{} profiles", files.len());
    assert_samples_fit("shims", samples, with.cpu, hz, 0.0);
    // ~800 agent starts (per shim: the fork child, env, bash, expr): the
    // bar is the reference profiler's cost on the same storm — what
    // gperftools' libprofiler adds, plus 25% — with up to 3 tries.
    let Some(libprofiler) = cpuprof_testkit::libprofiler() else {
        return;
    };
    let mut figures = Vec::new();
    let mut best = f64::INFINITY;
    for attempt in 0..3 {
        if attempt > 0 {
            let _ = std::fs::remove_dir_all(&profiles);
            std::fs::create_dir(&profiles).unwrap();
            (without, with) = run_both("shims", &make, None, &profiles.join("shims.prof"), hz);
        }
        let mut reference = make();
        reference
            .env("LD_PRELOAD", &libprofiler)
            .env("CPUPROFILE", dir.path().join("libprofiler.prof"))
            .env("CPUPROFILE_FREQUENCY", hz.to_string());
        let reference = measure(&mut reference, None);
        // libprofiler itself does harm here (its ITIMER_PROF outlives exec,
        // whose new image has no handler: SIGPROF kills some shims), so
        // only its cost is compared.
        if reference.stdout != without.stdout {
            figures.push(format!(
                "libprofiler changed the script's output to {:?}",
                String::from_utf8_lossy(&reference.stdout).trim()
            ));
        }
        let ours = with.cpu - without.cpu;
        let theirs = reference.cpu - without.cpu;
        best = best.min(ours / theirs.max(0.05));
        figures.push(format!(
            "CPU {:.3} s alone, {:.3} s with libcpuprof, {:.3} s with libprofiler; wall {:.3} / {:.3} / {:.3} s",
            without.cpu, with.cpu, reference.cpu, without.wall, with.wall, reference.wall
        ));
        if best <= 1.25 {
            break;
        }
    }
    let text = figures.join("; ");
    assert!(
        best <= 1.25,
        "shims: the agent adds more than 1.25 × libprofiler's CPU: {text}"
    );
    eprintln!(
        "shims: {text} (added CPU ours/libprofiler {best:.2}); {} profiles, {samples} samples",
        files.len()
    );
}

fn testkit_which(tool: &str) -> PathBuf {
    cpuprof_testkit::which(tool)
        .unwrap_or_else(|| panic!("{tool} is not installed (scripts/install-peers)"))
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The system's python3 (not a pyenv shim on PATH).
fn python3() -> PathBuf {
    let system = Path::new("/usr/bin/python3");
    if system.exists() {
        system.to_path_buf()
    } else {
        testkit_which("python3")
    }
}

/// Proves: `python3` running 4 threads of fixed pure-Python work (under
/// the GIL, with hashlib in C) prints the same digests with the agent, its
/// threads are all sampled (samples fit CPU time × rate within 0.8–1.1:
/// threads made through our `pthread_create`), and the CPU time stays
/// within the bar.
#[test]
fn python3_threads_are_sampled_and_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let script = dir.path().join("threads.py");
    std::fs::write(
        &script,
        r#"import hashlib, threading
def work(index, out):
    h = hashlib.sha256(str(index).encode())
    total = 0
    for i in range(3000000):
        total = (total * 31 + i * index) % 1000003
        if i % 1000 == 0:
            h.update(str(total).encode())
    out[index] = h.hexdigest()[:16]
out = {}
threads = [threading.Thread(target=work, args=(i, out)) for i in range(4)]
for t in threads: t.start()
for t in threads: t.join()
for i in sorted(out): print(i, out[i])
"#,
    )
    .unwrap();
    let python = python3();
    let make = || {
        let mut cmd = plain(&python);
        cmd.arg(&script);
        cmd
    };
    let profile = dir.path().join("py.prof");
    let hz = 100;
    let (without, with) = run_both("python3 threads", &make, None, &profile, hz);
    assert_eq!(String::from_utf8_lossy(&with.stdout).lines().count(), 4);
    let samples = total_samples(&read_profile(&profile));
    assert_samples_fit("python3 threads", samples, with.cpu, hz, 0.8);
    let figures = assert_cpu_within_bar(
        "python3 threads",
        (&without, &with),
        &|| run_both("python3 threads", &make, None, &profile, hz),
        0.01,
    );
    let report = our_report(&profile);
    eprintln!(
        "{figures}; {samples} samples; report total {}",
        report.total
    );
}

/// A real C++ file: templates, the standard library, a lambda, iostream.
const CXX_SOURCE: &str = r#"#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

template <typename T> T checksum(const std::vector<T> &values) {
    return std::accumulate(values.begin(), values.end(), T{0},
                           [](T a, T b) { return a * 31 + b; });
}

int main() {
    std::map<std::string, int> counts;
    std::istringstream words("the agent must never change what its host does the agent");
    for (std::string w; words >> w;) counts[w]++;
    std::vector<unsigned long> values;
    for (const auto &[word, n] : counts) values.push_back(word.size() * 100 + n);
    std::sort(values.begin(), values.end());
    std::cout << counts.size() << " words, checksum " << checksum(values) << "\n";
    return 0;
}
"#;

/// Proves: `g++` compiling and linking a real C++ file (g++ → cc1plus, as,
/// collect2 → ld: vfork/posix_spawn + exec) produces a byte-identical
/// object and executable with the agent, the executable runs the same, every
/// process of the build leaves a complete profile, and the build's CPU
/// time stays within the bar.
#[test]
fn gxx_builds_the_same_object_and_program() {
    let _serial = serial();
    let dir = tempdir();
    let gxx = testkit_which("g++");
    let source = dir.path().join("words.cpp");
    std::fs::write(&source, CXX_SOURCE).unwrap();
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let hz = 100;
    // The object, then the program, each built into its own directory
    // (same relative names: nothing of the output path ends up inside).
    let build = |sub: &str, agent: bool| -> (Run, Run) {
        let out = dir.path().join(sub);
        std::fs::create_dir_all(&out).unwrap();
        let mut compile = plain(&gxx);
        compile
            .current_dir(&out)
            .args(["-O2", "-std=c++17", "-c", "-o", "words.o"])
            .arg(&source);
        let mut link = plain(&gxx);
        link.current_dir(&out).args(["-o", "words", "words.o"]);
        if agent {
            with_agent(&mut compile, &profiles.join("compile.prof"), hz);
            with_agent(&mut link, &profiles.join("link.prof"), hz);
        }
        (measure(&mut compile, None), measure(&mut link, None))
    };
    let (compile_without, link_without) = build("without", false);
    let (compile_with, link_with) = build("with", true);
    assert_same_host_behaviour("g++ -c", &compile_without, &compile_with);
    assert_same_host_behaviour("g++ link", &link_without, &link_with);
    assert!(compile_with.status.success() && link_with.status.success());
    for file in ["words.o", "words"] {
        let a = std::fs::read(dir.path().join("without").join(file)).unwrap();
        let b = std::fs::read(dir.path().join("with").join(file)).unwrap();
        assert!(
            a == b,
            "{file} differs with the agent ({} vs {} bytes)",
            a.len(),
            b.len()
        );
    }
    let run_a = measure(&mut plain(dir.path().join("without/words")), None);
    let run_b = measure(&mut plain(dir.path().join("with/words")), None);
    assert_same_host_behaviour("the built program", &run_a, &run_b);
    let printed = String::from_utf8_lossy(&run_b.stdout);
    assert!(printed.starts_with("9 words, checksum "), "{printed}");
    let (files, samples) = read_all_profiles(&profiles, "");
    // g++ and cc1plus and as for the object; g++, collect2 and ld at least
    // for the link.
    assert!(files.len() >= 6, "{files:?}");
    let cpu = compile_with.cpu + link_with.cpu;
    assert_samples_fit("g++", samples, cpu, hz, 0.5);
    let figures = assert_cpu_within_bar(
        "g++",
        (&compile_without, &compile_with),
        &|| {
            let (without, _) = build("again-without", false);
            let (with, _) = build("again-with", true);
            (without, with)
        },
        0.02,
    );
    eprintln!(
        "{figures}; link CPU {:.3} s / {:.3} s; {} profiles, {samples} samples",
        link_without.cpu,
        link_with.cpu,
        files.len()
    );
}

/// Proves: `xz -T2` (two compressing threads, which xz creates with every
/// signal blocked) and `gzip` on generated data (8 MB; 50 MB with
/// `CPUPROF_TORTURE_LONG=1`) write byte-identical output with the agent,
/// the profiles' samples fit the CPU time (0.8–1.1 × CPU × rate: every
/// thread sampled — xz's workers were not, before `src/sigmask.rs`), and
/// the CPU time stays within the bar.
#[test]
fn xz_two_threads_and_gzip_compress_to_the_same_bytes() {
    let _serial = serial();
    let dir = tempdir();
    let megabytes = if long() { 50 } else { 8 };
    let input = dir.path().join("input.txt");
    std::fs::write(&input, generated_text(megabytes << 20)).unwrap();
    let hz = 100;
    let mut lines = Vec::new();
    for (name, args) in [("xz", vec!["-T2", "-6", "-c"]), ("gzip", vec!["-6", "-c"])] {
        let program = testkit_which(name);
        let make = || {
            let mut cmd = plain(&program);
            cmd.args(&args).arg(&input);
            cmd
        };
        let profile = dir.path().join(format!("{name}.prof"));
        let what = format!("{name} on {megabytes} MB");
        let (without, with) = run_both(&what, &make, None, &profile, hz);
        assert!(with.status.success() && with.stdout.len() > 1000);
        let samples = total_samples(&read_profile(&profile));
        assert_samples_fit(&what, samples, with.cpu, hz, 0.8);
        let figures = assert_cpu_within_bar(
            &what,
            (&without, &with),
            &|| run_both(&what, &make, None, &profile, hz),
            0.01,
        );
        lines.push(format!(
            "{figures}; {} → {} bytes; {samples} samples",
            megabytes << 20,
            with.stdout.len()
        ));
    }
    eprintln!("{}", lines.join("\n"));
}

/// Proves: thread churn — 2,000 threads (10,000 with
/// `CPUPROF_TORTURE_LONG=1`) created and joined, 64 alive at a time, some
/// leaving by `pthread_exit`, some detached — prints the same checksum,
/// every thread's timer is made and removed without running out of
/// anything (descriptors, POSIX timers, thread slots), and each thread's
/// ~3 ms is sampled: at 1000 Hz the samples reach CPU × rate minus at
/// most one period per thread (a thread's clock starts at zero, so the
/// part of its time short of a whole period is never sampled).
#[test]
fn thread_churn_with_64_alive_is_sampled_and_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "torture_threads");
    let threads: u32 = if long() { 10_000 } else { 2_000 };
    let profile = dir.path().join("churn.prof");
    let hz = 1000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.args([threads.to_string(), "64".into(), "3000000".into()]);
        cmd
    };
    let (without, with) = run_both("thread churn", &make, None, &profile, hz);
    let stdout = String::from_utf8_lossy(&with.stdout);
    assert!(
        stdout.starts_with(&format!("threads {threads} created")),
        "{stdout}"
    );
    let samples = total_samples(&read_profile(&profile));
    let expected = with.cpu * f64::from(hz);
    let floor = 0.8 * (expected - f64::from(threads));
    assert!(
        samples as f64 >= floor && samples as f64 <= 1.1 * expected,
        "{samples} samples for {:.3} CPU-s in {threads} threads at {hz} Hz (at least {floor:.0})\n{}",
        with.cpu,
        with.stderr
    );
    let stacks = NamedStacks::of(&read_profile(&profile));
    let in_work = stacks.cum("churn_work");
    // The rest is creating and ending threads, the agent's arming and
    // disarming included (perf_event_open, the descriptor check at exit):
    // 4–13% measured, the more the busier the host.
    assert!(
        in_work as f64 >= 0.8 * samples as f64,
        "churn_work: {in_work} of {samples}"
    );
    let figures = assert_cpu_within_bar(
        "thread churn",
        (&without, &with),
        &|| run_both("thread churn", &make, None, &profile, hz),
        0.0,
    );
    eprintln!("{figures}; {threads} threads; {samples} samples (floor {floor:.0}, CPU × rate {expected:.0})");
}

/// Proves: two threads each loading, calling and unloading shared
/// libraries 300 times (three copies in turn, so they land at different
/// addresses) while the profiler samples the libraries' code: the same
/// checksum, no crash (the module snapshot never loses memory under a
/// handler), and the samples in the unloaded libraries' `dl_work` are
/// named from the profile's own maps lines (≥ 80% of all samples).
#[test]
fn dlopen_dlclose_churn_while_sampling_its_code() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "torture_dlopen");
    let mut libraries = Vec::new();
    for i in 0..3 {
        let library = dir.path().join(format!("libtorture_{i}.so"));
        compile_library(&library);
        libraries.push(library);
    }
    let profile = dir.path().join("dl.prof");
    let hz = 1000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.arg("300").args(&libraries);
        cmd
    };
    let (_, with) = run_both("dlopen churn", &make, None, &profile, hz);
    let samples = total_samples(&read_profile(&profile));
    assert_samples_fit("dlopen churn", samples, with.cpu, hz, 0.8);
    let report = our_report(&profile);
    let in_library = report.row("dl_work").map_or(0, |r| r.flat);
    assert!(
        in_library as f64 >= 0.8 * report.total as f64,
        "dl_work: {in_library} of {} samples\n{report:?}",
        report.total
    );
    eprintln!(
        "dlopen churn: {samples} samples for {:.3} CPU-s, {in_library} in dl_work",
        with.cpu
    );
}

fn compile_library(output: &Path) {
    let out = Command::new("gcc")
        .args([
            "-O2",
            "-g",
            "-fomit-frame-pointer",
            "-shared",
            "-fPIC",
            "-o",
        ])
        .arg(output)
        .arg(c_source("torture_dlib.c"))
        .output()
        .expect("cannot run gcc");
    assert!(
        out.status.success(),
        "gcc torture_dlib.c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `torture_stacks MODE ROUNDS BYTES` without and with the agent at
/// 4000 Hz; returns the profile's named stacks and the run with it.
fn stacks_run(mode: &str, rounds: &str, bytes: usize) -> (NamedStacks, Run) {
    let dir = tempdir();
    let program = build(dir.path(), "torture_stacks");
    let profile = dir.path().join("stacks.prof");
    let hz = 4000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.args([mode, rounds, &bytes.to_string()]);
        cmd
    };
    let (_, with) = run_both(mode, &make, None, &profile, hz);
    assert!(with.status.success(), "{}", with.stderr);
    let parsed = read_profile(&profile);
    assert_samples_fit(mode, total_samples(&parsed), with.cpu, hz, 0.8);
    (NamedStacks::of(&parsed), with)
}

/// Proves (regression: the agent crashed here): code running inside the
/// program's own SIGUSR1 handler on a `SIGSTKSZ` (8 KiB) `sigaltstack` is
/// sampled without overflowing it. The agent's handler needed ~13 KiB of
/// the interrupted stack and ran off this one (segmentation fault at 8
/// and 16 KiB); it now samples on stacks of its own
/// (`src/handler_stack.rs`). The handler's work gets its samples.
#[test]
fn sampling_code_on_a_small_sigaltstack_does_not_overflow_it() {
    let _serial = serial();
    let (stacks, run) = stacks_run("altstack", "1500", 8192);
    let in_handler = stacks.cum("on_altstack_work");
    assert!(
        in_handler as f64 >= 0.8 * stacks.total() as f64,
        "on_altstack_work: {in_handler} of {}",
        stacks.total()
    );
    eprintln!(
        "altstack: {} samples, {in_handler} in the handler's work, {:.3} CPU-s",
        stacks.total(),
        run.cpu
    );
}

/// Proves (regression: the agent corrupted the heap here): four
/// `makecontext`/`swapcontext` coroutines on 16 KiB malloc'd stacks are
/// sampled without the agent's handler writing below them (it used to:
/// `free(): invalid next size`, `malloc(): smallbin double linked list
/// corrupted`); their work gets its samples.
#[test]
fn sampling_coroutines_on_small_stacks_does_not_overflow_them() {
    let _serial = serial();
    let (stacks, run) = stacks_run("coroutines", "1500", 16384);
    let in_coroutines = stacks.cum("coroutine_work");
    assert!(
        in_coroutines as f64 >= 0.8 * stacks.total() as f64,
        "coroutine_work: {in_coroutines} of {}",
        stacks.total()
    );
    eprintln!(
        "coroutines: {} samples, {in_coroutines} in the coroutines' work, {:.3} CPU-s",
        stacks.total(),
        run.cpu
    );
}

/// Proves: children started by `vfork` + `execv` and by `posix_spawn`
/// (glibc's clone(CLONE_VM|CLONE_VFORK), which bypasses fork handlers),
/// 40 of them alternating, print the same and succeed; the parent's
/// profile is whole (its work sampled at CPU × rate ≥ 0.8), and each child
/// (`/bin/echo`) wrote its own complete profile.
#[test]
fn vfork_exec_and_posix_spawn_children_are_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "torture_spawn");
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let echo = testkit_which("echo");
    let hz = 1000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.arg("40").arg(&echo);
        cmd
    };
    let (_, with) = run_both("spawn", &make, None, &profiles.join("spawn.prof"), hz);
    let stdout = String::from_utf8_lossy(&with.stdout);
    assert!(
        stdout.contains("vfork 38\nposix_spawn 39\nspawned 40 children, 0 failed"),
        "{stdout}"
    );
    let (files, _) = read_all_profiles(&profiles, "spawn.prof");
    assert_eq!(files.len(), 41, "the parent's and 40 children's: {files:?}");
    let parent = NamedStacks::of(&read_profile(&profiles.join("spawn.prof")));
    let in_parent = parent.cum("spawn_parent_work");
    assert!(
        in_parent >= 50 && in_parent as f64 >= 0.8 * parent.total() as f64,
        "spawn_parent_work: {in_parent} of {}",
        parent.total()
    );
    eprintln!(
        "spawn: 41 profiles; parent {in_parent} samples in its work; {:.3} CPU-s",
        with.cpu
    );
}

/// Proves (regression: threads blocking every signal were never
/// sampled; `xz -T2` left 0 samples for 6 CPU-s): a program whose workers
/// block every signal for their whole life (and exit with them blocked),
/// with a signal thread in `sigwaitinfo` on *every* signal, gets exactly
/// its own three SIGUSR1s and its SIGTERM there — never the agent's
/// sampling signal (which goes to the running thread itself) — and ends
/// the same; and the blocking workers are sampled as well as the others,
/// each at its CPU time × rate: the agent's `pthread_sigmask` leaves its
/// own signal out of what the program blocks (`src/sigmask.rs`).
#[test]
fn threads_blocking_all_signals_and_a_sigwait_thread_are_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "torture_blocked");
    let profile = dir.path().join("blocked.prof");
    let hz = 1000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.arg("150000000");
        cmd
    };
    let (_, with) = run_both("blocked signals", &make, None, &profile, hz);
    let stdout = String::from_utf8_lossy(&with.stdout);
    assert!(
        stdout.starts_with(
            "signal thread: got signal 10\nsignal thread: got signal 10\nsignal thread: got signal 10\nsignal thread: got signal 15\nworkers done"
        ),
        "{stdout}"
    );
    let stacks = NamedStacks::of(&read_profile(&profile));
    let unblocked = stacks.cum("unblocked_work");
    let blocked = stacks.cum("blocked_work");
    // Each half of the work is sampled at its CPU time × rate, the
    // blocked half included.
    let expected = with.cpu / 2.0 * f64::from(hz);
    for (name, samples) in [("unblocked_work", unblocked), ("blocked_work", blocked)] {
        assert!(
            samples as f64 >= 0.7 * expected && samples as f64 <= 1.2 * expected,
            "{name}: {samples} samples, expected about {expected:.0}\n{}",
            with.stderr
        );
    }
    eprintln!(
        "blocked signals: {blocked} samples in blocked_work, {unblocked} in unblocked_work (about {expected:.0} each expected)"
    );
}

/// A tmpfs of 64 KB mounted for a test, unmounted when dropped.
struct SmallTmpfs {
    dir: TempDir,
}

impl SmallTmpfs {
    /// None (after saying why on stderr) when mounting is impossible here
    /// (not root, no CAP_SYS_ADMIN); CI runs as root.
    fn mount(options: &str) -> Option<SmallTmpfs> {
        let dir = tempdir();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Some(SmallTmpfs { dir }),
            Ok(out) => {
                eprintln!(
                    "SKIPPED: cannot mount a tmpfs ({}): {}",
                    options,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: cannot run mount: {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// The host of the directory scenarios: a little CPU work, output on
/// stdout and stderr, exit status 5.
const DIR_HOST: &str = r#"import sys
total = sum(i * i for i in range(3000000))
print("total", total)
print("a line of the program's own stderr", file=sys.stderr)
sys.exit(5)
"#;

/// Runs [`DIR_HOST`] with and without the agent writing `profile`;
/// asserts the host is unharmed and returns the run with the agent.
fn run_dir_host(what: &str, profile: &Path) -> Run {
    let python = python3();
    let make = || {
        let mut cmd = plain(&python);
        cmd.arg("-c").arg(DIR_HOST);
        cmd
    };
    let (without, with) = run_both(what, &make, None, profile, 1000);
    assert_eq!(without.status.code(), Some(5));
    with
}

/// Asserts `run` has exactly one `cpuprof:` line, naming `profile` and
/// containing `reason`, and that `dir` holds nothing of the profile.
fn assert_one_line_and_no_file(what: &str, run: &Run, profile: &Path, reason: &str) {
    let lines = run.agent_lines();
    assert_eq!(lines.len(), 1, "{what}: {}", run.stderr);
    assert!(
        lines[0].contains(&profile.display().to_string()) && lines[0].contains(reason),
        "{what}: {:?}",
        lines[0]
    );
    let dir = profile.parent().unwrap();
    let name = profile.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        files_starting_with(dir, name),
        Vec::<String>::new(),
        "{what}: partial files left"
    );
    eprintln!("{what}: {}", lines[0]);
}

/// Proves: `CPUPROFILE` in a read-only directory (a read-only tmpfs: root
/// ignores permission bits) leaves the host unharmed (same stdout, stderr,
/// exit status 5) and says so in one stderr line naming the file, at the
/// start; nothing is created.
#[test]
fn profile_in_a_read_only_directory_is_one_line_and_no_harm() {
    let _serial = serial();
    let Some(tmpfs) = SmallTmpfs::mount("ro,size=64k") else {
        return;
    };
    let profile = tmpfs.path().join("p.prof");
    let run = run_dir_host("read-only directory", &profile);
    assert_one_line_and_no_file(
        "read-only directory",
        &run,
        &profile,
        "Read-only file system",
    );
}

/// Proves: `CPUPROFILE` in a full directory (a 64 KB tmpfs filled up)
/// leaves the host unharmed, says so in one stderr line naming the file
/// (at the write, when the space is found missing), and leaves no partial
/// or temporary file; likewise when the space runs out in the middle of
/// the profile (4 KB left for a bigger profile).
#[test]
fn profile_in_a_full_directory_is_one_line_and_no_partial_file() {
    let _serial = serial();
    // The profile's size where there is room, to be sure it cannot fit in
    // the space left below.
    let roomy = tempdir();
    let reference = roomy.path().join("p.prof");
    run_dir_host("roomy directory", &reference);
    let size = std::fs::metadata(&reference).unwrap().len();
    for (what, free) in [("full directory", 0u64), ("nearly full directory", 4096)] {
        assert!(
            size > free + 1024,
            "a {size}-byte profile would fit in {free} bytes"
        );
        let Some(tmpfs) = SmallTmpfs::mount("size=64k") else {
            return;
        };
        // Fill it: whole pages up to the size, then leave `free` bytes.
        let filler = tmpfs.path().join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let page = vec![0x5a_u8; 4096];
        while file.write_all(&page).is_ok() {}
        drop(file);
        if free > 0 {
            let length = std::fs::metadata(&filler).unwrap().len();
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&filler)
                .unwrap();
            file.set_len(length.saturating_sub(free)).unwrap();
        }
        let profile = tmpfs.path().join("p.prof");
        let run = run_dir_host(what, &profile);
        assert_one_line_and_no_file(what, &run, &profile, "No space left on device");
    }
}

/// Proves (regression): a short process under the agent does not wait
/// for the kernel to grow its descriptor table. The agent moves its perf
/// events to the top of the descriptor range; growing the table of a
/// process that already has the control thread waits for an RCU grace
/// period (`expand_fdtable` → `synchronize_rcu`): 7–15 ms per process on
/// this VM, 200 shims took 3.2 s instead of 1.0 s. The table is now grown
/// while the process is still single-threaded
/// (`timers::grow_descriptor_table`). Measured as the least time not on a
/// CPU, over 21 interleaved runs each, with the agent minus without: a
/// grace period is in every run, a busy machine's waiting in some only.
#[test]
fn short_processes_do_not_wait_for_the_descriptor_table() {
    let _serial = serial();
    let dir = tempdir();
    let truth = testkit_which("true");
    let profile = dir.path().join("true.prof");
    // Time not on a CPU (waiting) per run, with and without the agent. A
    // grace period is a wait in every run; a loaded machine adds waiting
    // for a CPU to some runs only, so the least of 21 runs is compared.
    let (mut waits_with, mut waits_without) = (Vec::new(), Vec::new());
    for _ in 0..21 {
        let without = measure(&mut plain(&truth), None);
        let with = measure(with_agent(&mut plain(&truth), &profile, 100), None);
        assert!(with.status.success());
        waits_without.push(without.wall - without.cpu);
        waits_with.push(with.wall - with.cpu);
    }
    let least = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min) * 1000.0;
    let (with, without) = (least(&waits_with), least(&waits_without));
    eprintln!(
        "/bin/true: least waiting of 21 runs: {with:.2} ms with the agent, {without:.2} ms without"
    );
    // What is not CPU is waiting: a grace period is ≥ 5 ms here.
    assert!(
        with - without < 5.0,
        "the agent adds {:.2} ms of waiting per process",
        with - without
    );
}

/// Proves (issue 22, regression: Chromium's zygote aborted under the agent,
/// `CHECK(IsSingleThreaded())` on `/proc/self/task`): a fork server of
/// Chromium's shape (`tests/c/fork_server.c`) — a process that counts its
/// threads, forks children that only call async-signal-safe functions and
/// leave by `_exit`, and makes one child by the raw `clone` system call —
/// sees one thread everywhere with the agent as without it (the agent
/// starts no thread of its own until the program creates one), and still
/// leaves a readable profile per process: the server's with its work, each
/// forked child's with its own.
#[test]
fn fork_server_stays_single_threaded_and_is_profiled() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "fork_server");
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let hz = 1000;
    let make = || plain(&program);
    let (without, with) = run_both("fork server", &make, None, &profiles.join("fs.prof"), hz);
    let stdout = String::from_utf8_lossy(&without.stdout);
    assert_eq!(
        stdout,
        "server 1\nserver after work 1\nforked child 1\nforked child 1\nforked child 1\ncloned child 1\nserver at the end 1\n",
        "without the agent"
    );
    let (files, _) = read_all_profiles(&profiles, "fs.prof");
    assert_eq!(
        files.len(),
        4,
        "the server's and 3 forked children's (the raw clone child runs no atfork handler and writes none): {files:?}"
    );
    let server = NamedStacks::of(&read_profile(&profiles.join("fs.prof")));
    assert!(
        server.cum("server_work") >= 100,
        "server_work: {} of {}",
        server.cum("server_work"),
        server.total()
    );
    for file in files.iter().filter(|f| !f.ends_with("fs.prof")) {
        let child = NamedStacks::of(&read_profile(file));
        assert!(
            child.cum("child_work") >= 50 && child.cum("server_work") == 0,
            "{}: child_work {} of {}",
            file.display(),
            child.cum("child_work"),
            child.total()
        );
    }
    eprintln!(
        "fork server: {} profiles, {:.3} CPU-s",
        files.len(),
        with.cpu
    );
}

/// Proves (issue 22, the class behind Chromium's intermittent aborts in
/// zygote mode): a threaded launcher that forks (libc `fork`, so the
/// agent's `pthread_atfork` handler profiles the child), resets every
/// signal disposition in the child with the raw `rt_sigaction` system call
/// (as Chromium's `base::LaunchProcess` does before `execvp`) and works
/// 2 ms before the exec, loses none of its 200 children with the agent.
/// Before the fix the forked child's clock was armed at once, on a random
/// first period in (0, 1 ms]: its first signal often came after the reset,
/// found the real-time signal's default action (terminate), and killed
/// the child (100 of 200 in one run; Chromium lost its zygote or GPU
/// process that way, about one run in five). Now a forked child's first
/// period is 20 ms of its CPU time (plus the random part), and that first
/// sample stands for every whole period the child has run: the last child,
/// a worker that never execs and burns 0.3 CPU-s, is still profiled at its
/// CPU time. (A child that resets the dispositions and then runs on for
/// more than 20 ms of CPU time before its exec is still at risk: nothing
/// outside the kernel sees a raw `rt_sigaction`.)
#[test]
fn forked_children_that_reset_their_signals_before_exec_are_unharmed() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "fork_reset_exec");
    let profiles = dir.path().join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let hz = 1000;
    let make = || {
        let mut cmd = plain(&program);
        cmd.arg("200");
        cmd
    };
    let (without, _) = run_both(
        "fork, reset, exec",
        &make,
        None,
        &profiles.join("fr.prof"),
        hz,
    );
    assert_eq!(
        String::from_utf8_lossy(&without.stdout),
        "children killed by a signal: 0 of 201 (last: 0)\n"
    );
    // The worker: about 300 samples (0.3 CPU-s at 1000 Hz), its first one
    // standing for the first 20 ms.
    let (files, _) = read_all_profiles(&profiles, "fr.prof");
    let worker: Vec<i64> = files
        .iter()
        .map(|f| NamedStacks::of(&read_profile(f)).cum("child_work"))
        .filter(|&n| n > 0)
        .collect();
    assert_eq!(worker.len(), 1, "one profile with child_work: {worker:?}");
    assert!(
        (240..=360).contains(&worker[0]),
        "child_work: {} samples for 0.3 CPU-s at {hz} Hz",
        worker[0]
    );
}

/// Regression (Chromium, `--in-process-gpu`, about one run in ten: the
/// browser waited forever for a utility process): a forked child of a
/// threaded program ran our fork handler, which formatted its file name
/// (`malloc`), and our `execl` wrapper, which wrote its empty profile
/// (`malloc` again), between its fork and its exec. Chromium's allocator
/// was locked by another thread at the fork; the child waited on it for
/// ever. POSIX allows only async-signal-safe calls there, and the program
/// keeps to that: the agent must too. `fork_locked_heap` has its own
/// allocator whose lock another thread holds 50 ms at a time: 10 of 10
/// children stuck before the fix; now its forked children allocate
/// nothing (names rewritten in room kept at the start, the parent's
/// state forgotten, not freed; an unsampled child writes no file), for
/// every clock.
#[test]
fn forked_children_allocate_nothing_before_exec() {
    let _serial = serial();
    let dir = tempdir();
    let program = build(dir.path(), "fork_locked_heap");
    for timer in ["perf", "posix", "itimer"] {
        let profiles = dir.path().join(timer);
        std::fs::create_dir(&profiles).unwrap();
        let make = || {
            let mut cmd = plain(&program);
            cmd.arg("20").env("CPUPROFILE_TIMER", timer);
            cmd
        };
        let (without, _) = run_both(
            &format!("fork with the heap locked, exec ({timer})"),
            &make,
            None,
            &profiles.join("fl.prof"),
            1000,
        );
        assert_eq!(
            String::from_utf8_lossy(&without.stdout),
            "children stuck: 0 of 20, failed: 0\n"
        );
    }
}

// ---- The biggest programs people run (issue 22) ----

/// Runs `make()` without the agent, then with it (gperftools' format at
/// `hz` into `dir/profiles/NAME.prof`, children into `NAME.prof_<pid>`;
/// read them with [`big_profiles`]), and asserts the same exit status and
/// stdout. Stderr is not compared for these programs: their own logs
/// carry pids and times.
fn run_big(what: &str, make: &dyn Fn() -> Command, dir: &Path, hz: u32) -> (Run, Run) {
    let profiles = dir.join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let without = measure(&mut make(), None);
    let with = measure(
        with_agent(&mut make(), &profiles.join(format!("{what}.prof")), hz),
        None,
    );
    assert_eq!(
        without.status, with.status,
        "{what}: exit status without the agent {} and with it {}\nstderr with it:\n{}",
        without.status, with.status, with.stderr
    );
    assert!(
        without.stdout == with.stdout,
        "{what}: stdout differs ({} bytes without the agent, {} with it)\nstderr with it:\n{}",
        without.stdout.len(),
        with.stdout.len(),
        with.stderr
    );
    (without, with)
}

/// The profiles [`run_big`] left for `what` in `dir`: (files, total samples).
fn big_profiles(dir: &Path, what: &str) -> (Vec<PathBuf>, i64) {
    read_all_profiles(&dir.join("profiles"), &format!("{what}.prof"))
}

/// Asserts that the stdout of `run` passes `check`, printing it if not.
fn assert_stdout(run: &Run, check: impl Fn(&str) -> bool) {
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(check(&stdout), "{stdout}");
}

/// A big program whose every thread runs on a CPU (Node's workers, the
/// JVM's): its profiles hold about CPU time × rate samples.
fn assert_big_samples_fit(dir: &Path, what: &str, with: &Run, hz: u32) {
    let (files, total) = big_profiles(dir, what);
    assert_samples_fit(what, total, with.cpu, hz, 0.6);
    eprintln!(
        "{what}: {} profiles, {total} samples for {:.2} CPU-s at {hz} Hz",
        files.len(),
        with.cpu
    );
}

/// The share of `profile`'s samples with a frame in no file-backed
/// mapping (JIT-compiled code: V8's, HotSpot's), the leaf or a caller
/// (JavaScript calling `sin` in libm).
fn share_in_anonymous_code(profile: &cpuprof_profile::Profile) -> f64 {
    let mut anonymous = 0i64;
    let mut total = 0i64;
    for sample in &profile.samples {
        let count = sample.values.first().copied().unwrap_or(0);
        total += count;
        let jit = sample.locations.iter().any(|&id| {
            !profile.locations[id.index()]
                .mapping
                .map(|m| &profile.mappings[m.index()])
                .is_some_and(|m| {
                    (m.path.starts_with('/') && !m.path.starts_with("/memfd:"))
                        || m.path.starts_with('[')
                })
        });
        if jit {
            anonymous += count;
        }
    }
    anonymous as f64 / total.max(1) as f64
}

/// A page whose JavaScript burns about 0.3 CPU-s in `hot`.
const HOT_PAGE: &str = "<html><body><script>function hot(n){let s=0; for(let i=0;i<n;i++) s+=Math.sqrt(i%1000)*Math.sin(i); return s;} document.body.textContent=hot(3e7).toFixed(3);</script></body></html>";

fn chromium_run(mode: &str) {
    let _serial = serial();
    let chromium = testkit_which("chromium");
    let dir = tempdir();
    let page = dir.path().join("page.html");
    std::fs::write(&page, HOT_PAGE).unwrap();
    let runs = std::cell::Cell::new(0);
    let make = || {
        runs.set(runs.get() + 1);
        let user_data = dir.path().join(format!("user-data-{}", runs.get()));
        let mut cmd = plain(&chromium);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", user_data.display()));
        if !mode.is_empty() {
            cmd.arg(mode);
        }
        cmd.arg("--dump-dom")
            .arg(format!("file://{}", page.display()));
        cmd
    };
    let what = format!(
        "chromium {}",
        if mode.is_empty() { "(zygote)" } else { mode }
    );
    let (without, with) = run_big("chromium", &make, dir.path(), 1000);
    let dom = String::from_utf8_lossy(&without.stdout);
    assert!(
        dom.contains("<body>-34.218"),
        "{what}: the page's DOM: {dom}"
    );
    let (files, total) = big_profiles(dir.path(), "chromium");
    assert!(
        files.len() >= 3,
        "{what}: one profile per process: {files:?}"
    );
    // The renderer: the process with the most samples in JIT code (V8);
    // the page's `hot` is about 0.3 CPU-s, 300 samples at 1000 Hz (the
    // other processes have ~1% of theirs in JIT code).
    let mut best = (0.0, 0i64, PathBuf::new());
    for file in &files {
        let profile = read_profile(file);
        let samples = total_samples(&profile);
        let share = share_in_anonymous_code(&profile);
        if share * samples as f64 > best.0 * best.1 as f64 {
            best = (share, samples, file.clone());
        }
    }
    assert!(
        best.0 * best.1 as f64 >= 50.0 && best.0 >= 0.2,
        "{what}: no profile with ≥ 50 samples in V8's JIT code (best {best:?}); {} profiles, {total} samples",
        files.len()
    );
    eprintln!(
        "{what}: {} profiles, {total} samples; renderer {} with {} samples, {:.0}% in JIT code; wall {:.2} s without, {:.2} s with the agent",
        files.len(),
        best.2.display(),
        best.1,
        best.0 * 100.0,
        without.wall,
        with.wall
    );
}

/// Proves (issue 22: Chromium aborted under the agent, its zygote counts
/// `/proc/self/task`): Chromium headless in its default zygote mode prints
/// the same DOM with the same status with the agent, and leaves one
/// readable profile per process, among them the renderer's with the
/// page's JavaScript in V8's JIT code.
///
/// It was in the long variant only, for failing about one run in five
/// ("GPU process isn't usable", "Cannot communicate with zygote"): the
/// launcher's forked children were killed by our sampling signal after
/// resetting their dispositions; see
/// `forked_children_that_reset_their_signals_before_exec_are_unharmed`.
#[test]
fn chromium_zygote_dumps_the_same_dom_and_profiles_the_renderer() {
    chromium_run("");
}

/// As above with `--in-process-gpu` (it hung under the agent).
#[test]
fn chromium_in_process_gpu_dumps_the_same_dom() {
    chromium_run("--in-process-gpu");
}

/// As above with `--no-zygote` (long variant: `CPUPROF_TORTURE_LONG=1`).
#[test]
fn chromium_no_zygote_dumps_the_same_dom() {
    if long() {
        chromium_run("--no-zygote");
    }
}

/// Builds `tests/go/cgo_burn.go` with Debian's Go (cgo on).
fn build_cgo_burn(dir: &Path) -> PathBuf {
    let go = testkit_which("go");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/cgo_burn.go");
    let work = dir.join("go");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::copy(&source, work.join("cgo_burn.go")).unwrap();
    let output = dir.join("cgo_burn");
    let out = Command::new(go)
        .current_dir(&work)
        .args(["build", "-o"])
        .arg(&output)
        .arg("cgo_burn.go")
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "1")
        .env("GOCACHE", dir.join("gocache"))
        .env("GOPATH", dir.join("gopath"))
        .output()
        .expect("cannot run go");
    assert!(
        out.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    output
}

/// Proves (issue 22: the Go runtime puts its handlers on every signal
/// after the agent chose its own, and leaves by `exit_group`): a Go
/// program built with cgo — 4 goroutines calling a C loop and a Go loop,
/// with the Go runtime's own SIGURG preemption — prints the same with the
/// agent, and leaves a profile (written every second: a Go program never
/// calls libc's `exit`) with both `c_burn` and `main.goBurn`, each near
/// half of the samples, and no word of a lost signal.
///
/// Long variant (`CPUPROF_TORTURE_LONG=1`): in one run of the default suite
/// on a loaded host the profile count check failed while runs alone
/// passed; it stays out of the default suite until that is understood.
#[test]
fn cgo_program_is_profiled_in_go_and_c() {
    if !long() {
        eprintln!("long variant only (CPUPROF_TORTURE_LONG=1)");
        return;
    }
    let _serial = serial();
    let dir = tempdir();
    let program = build_cgo_burn(dir.path());
    let rounds = if long() { "400000000" } else { "160000000" };
    let make = || {
        let mut cmd = plain(&program);
        cmd.arg(rounds);
        cmd
    };
    let hz = 200;
    let (_, with) = run_big("cgo", &make, dir.path(), hz);
    assert_stdout(&with, |out| out.ends_with(" true\n"));
    assert!(
        !with.stderr.contains("installed its own handler"),
        "{}",
        with.stderr
    );
    let (files, total) = big_profiles(dir.path(), "cgo");
    assert_eq!(files.len(), 1, "{files:?}");
    let stacks = NamedStacks::of(&read_profile(&files[0]));
    let (c, go) = (stacks.cum("c_burn"), stacks.cum("main.goBurn"));
    // The last second before exit_group is not in the file.
    let expected = (with.cpu - 1.0).max(0.5) * f64::from(hz);
    assert!(
        (c + go) as f64 >= 0.6 * expected,
        "c_burn {c} + main.goBurn {go} of {total} samples, expected ≥ 0.6 × {expected:.0}"
    );
    assert!(
        c as f64 >= 0.25 * (c + go) as f64 && go as f64 >= 0.25 * (c + go) as f64,
        "c_burn {c}, main.goBurn {go}"
    );
    eprintln!(
        "cgo: {total} samples (c_burn {c}, main.goBurn {go}) for {:.2} CPU-s at {hz} Hz",
        with.cpu
    );
}

/// Proves: Node.js with 3 worker threads (V8 isolates on threads of their
/// own, libuv's thread pool) prints the same sums with the agent, and the
/// profile holds about CPU time × rate samples (every thread is sampled).
#[test]
fn node_worker_threads_are_unharmed_and_sampled() {
    let _serial = serial();
    let node = testkit_which("node");
    let dir = tempdir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/workers.js");
    let n = if long() { "4e7" } else { "1e7" };
    let make = || {
        let mut cmd = plain(&node);
        cmd.arg(&script).arg(n);
        cmd
    };
    let hz = 200;
    let (_, with) = run_big("node", &make, dir.path(), hz);
    assert_stdout(&with, |out| out.starts_with("main "));
    assert_big_samples_fit(dir.path(), "node", &with, hz);
}

/// Proves: a JVM (Debian's OpenJDK) running 4 threads that allocate (the
/// GC runs), get JIT-compiled and catch NullPointerExceptions (HotSpot's
/// own SIGSEGV handler for implicit null checks, and its safepoints)
/// prints the same with the agent and exits the same, with a profile of
/// about CPU time × rate samples.
#[test]
fn jvm_threads_gc_jit_and_null_checks_are_unharmed() {
    let _serial = serial();
    let java = testkit_which("java");
    let javac = testkit_which("javac");
    let dir = tempdir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/Torture.java");
    std::fs::copy(&source, dir.path().join("Torture.java")).unwrap();
    run_ok(
        Command::new(javac)
            .current_dir(dir.path())
            .args(["-d", "."])
            .arg("Torture.java"),
    );
    let rounds = if long() { "20000000" } else { "3000000" };
    let make = || {
        let mut cmd = plain(&java);
        cmd.current_dir(dir.path())
            .args(["-Xmx256m", "-cp", "."])
            .arg("Torture")
            .arg(rounds);
        cmd
    };
    let hz = 200;
    let (_, with) = run_big("jvm", &make, dir.path(), hz);
    assert_stdout(&with, |out| out.starts_with("total "));
    assert_big_samples_fit(dir.path(), "jvm", &with, hz);
}

/// Proves (long variant, `CPUPROF_TORTURE_LONG=1`: Firefox takes 10–15 s
/// a run here): firefox-esr headless takes the same screenshot (the same
/// PNG bytes) with the agent and exits the same; its sandboxed content
/// processes cannot arm a clock (one `cpuprof:` line each), the others
/// leave readable profiles.
#[test]
fn firefox_takes_the_same_screenshot() {
    if !long() {
        return;
    }
    let _serial = serial();
    let firefox = testkit_which("firefox-esr");
    let dir = tempdir();
    let page = dir.path().join("page.html");
    std::fs::write(&page, HOT_PAGE).unwrap();
    let runs = std::cell::Cell::new(0);
    let make = || {
        runs.set(runs.get() + 1);
        let home = dir.path().join(format!("home-{}", runs.get()));
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = plain(&firefox);
        cmd.env("HOME", &home)
            .args(["--headless", "--no-remote", "--profile"])
            .arg(&home)
            .args(["--window-size", "400,300", "--screenshot"])
            .arg(dir.path().join(format!("shot-{}.png", runs.get())))
            .arg(format!("file://{}", page.display()));
        cmd
    };
    let (without, with) = run_big("firefox", &make, dir.path(), 200);
    let first = std::fs::read(dir.path().join("shot-1.png")).unwrap();
    let second = std::fs::read(dir.path().join("shot-2.png")).unwrap();
    assert!(first.starts_with(b"\x89PNG"), "a PNG without the agent");
    assert!(first == second, "the screenshots differ");
    let (files, total) = big_profiles(dir.path(), "firefox");
    assert!(total > 0 && !files.is_empty());
    eprintln!(
        "firefox: same {}-byte PNG; {} profiles, {total} samples; wall {:.1} s without, {:.1} s with",
        first.len(),
        files.len(),
        without.wall,
        with.wall
    );
}
