//! What the web UI's tests share: a real profile of spin (Debian's
//! libprofiler), two builds of a workload whose shares change (for diffs),
//! the `cpuprof` binary, and a server process started on a free loopback
//! port.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use cpuprof_testkit::{
    build_spin, compile, gcc_and_libprofiler, peers_required, profile_with_libprofiler, repo_root,
    TempDir,
};

/// spin and its profile (1 s of CPU).
pub struct Spin {
    _dir: TempDir,
    /// The binary.
    pub binary: PathBuf,
    /// Its profile.
    pub profile: PathBuf,
}

/// The spin fixture, made once per test binary; `None` when a peer is
/// missing (and CPUPROF_REQUIRE_PEERS is not set: then it panics).
pub fn spin() -> Option<&'static Spin> {
    static SPIN: OnceLock<Option<Spin>> = OnceLock::new();
    SPIN.get_or_init(|| {
        let lib = gcc_and_libprofiler()?;
        let dir = TempDir::new().unwrap();
        let (binary, _) = build_spin(dir.path(), "spin", &[]);
        let profile = dir.path().join("spin.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "1.0", "-d", "5"], &profile, 250);
        Some(Spin {
            _dir: dir,
            binary,
            profile,
        })
    })
    .as_ref()
}

/// A workload that spends shares A, B, C of each round in `burn_a`,
/// `burn_b`, `burn_c` (its arguments, then the CPU seconds).
const SHARES: &str = r#"
#include <stdlib.h>
#include <time.h>
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static volatile double sink;
#define BURN(name, k)                                                   \
    __attribute__((noinline)) void name(double seconds) {               \
        double end = cpu_now() + seconds, x = k;                        \
        while (cpu_now() < end)                                         \
            for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;   \
        sink = x;                                                       \
    }
BURN(burn_a, 1.0)
BURN(burn_b, 2.0)
BURN(burn_c, 3.0)
int main(int argc, char **argv) {
    if (argc < 5) return 2;
    double a = atof(argv[1]), b = atof(argv[2]), c = atof(argv[3]);
    double seconds = atof(argv[4]), round = 0.01, spent = 0;
    while (spent < seconds) {
        burn_a(round * a);
        burn_b(round * b);
        burn_c(round * c);
        spent += round * (a + b + c);
    }
    return 0;
}
"#;

/// Two runs of one workload whose shares change, for diffs: the base
/// runs 0.8 CPU-s with burn_a 70%, burn_b 20%, burn_c 10% of the time;
/// the new run 1.6 CPU-s with 40%, 50%, 10%. So burn_b's share grows by
/// 30 points, burn_a's shrinks by 30 (though its samples grow, from about
/// 140 to 160), and burn_c and main keep theirs (though their samples
/// double).
pub struct Shares {
    _dir: TempDir,
    /// The binary.
    pub binary: PathBuf,
    /// The new run's profile.
    pub profile: PathBuf,
    /// The base run's profile.
    pub base: PathBuf,
}

/// The shares fixture, made once per test binary (Debian's libprofiler
/// at 250 Hz: about 200 and 400 samples); `None` when a peer is missing.
pub fn shares() -> Option<&'static Shares> {
    static SHARES_RUNS: OnceLock<Option<Shares>> = OnceLock::new();
    SHARES_RUNS
        .get_or_init(|| {
            let lib = gcc_and_libprofiler()?;
            let dir = TempDir::new().unwrap();
            let source = dir.path().join("shares.c");
            std::fs::write(&source, SHARES).unwrap();
            let binary = dir.path().join("shares");
            compile("gcc", &[&source], &binary, &["-O2", "-g"]);
            let base = dir.path().join("base.prof");
            let profile = dir.path().join("new.prof");
            // The diff tests rest on the new run having about twice the
            // base's samples. On a loaded virtual machine the process
            // timer can fire less often than asked (ticks taken as steal
            // time), so the pair is recorded again, up to four times,
            // until libprofiler's own count shows the ratio.
            let interrupts = |out: std::process::Output| -> f64 {
                let text = String::from_utf8_lossy(&out.stderr).into_owned();
                text.split("interrupts/evictions/bytes = ")
                    .nth(1)
                    .and_then(|rest| rest.split('/').next())
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(0.0)
            };
            for attempt in 1..=4 {
                let old = interrupts(profile_with_libprofiler(
                    &lib,
                    &binary,
                    &["0.7", "0.2", "0.1", "0.8"],
                    &base,
                    250,
                ));
                let new = interrupts(profile_with_libprofiler(
                    &lib,
                    &binary,
                    &["0.4", "0.5", "0.1", "1.6"],
                    &profile,
                    250,
                ));
                if old >= 150.0 && new >= 1.7 * old {
                    break;
                }
                eprintln!(
                    "shares fixture: {old} and {new} samples (attempt {attempt}), recording again"
                );
            }
            Some(Shares {
                _dir: dir,
                binary,
                profile,
                base,
            })
        })
        .as_ref()
}

/// A browser script's table rows (cells as text) as (name, flat, cum).
pub fn text_rows(rows: &serde_json::Value) -> Vec<(String, i64, i64)> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cell = |i: usize| r[i].as_str().unwrap().to_string();
            (cell(5), cell(0).parse().unwrap(), cell(3).parse().unwrap())
        })
        .collect()
}

/// `cpuprof report --text ARGS` of spin as (name, flat, cum) rows.
pub fn report_rows(args: &[&str]) -> Vec<(String, i64, i64)> {
    let spin = spin().unwrap();
    let text = cpuprof_testkit::run_stdout(
        Command::new(cpuprof_binary())
            .arg("report")
            .arg("--text")
            .args(args)
            .arg(&spin.binary)
            .arg(&spin.profile),
    );
    cpuprof_testkit::TextReport::parse(&text)
        .rows
        .into_iter()
        .map(|r| (r.name, r.flat, r.cum))
        .collect()
}

/// The `cpuprof` binary of this build (built first: this crate's tests
/// drive the command).
pub fn cpuprof_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            // target/<profile>/deps/<test> → target/<profile>
            let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
            let release = profile_dir.file_name().is_some_and(|n| n == "release");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.current_dir(repo_root())
                .args(["build", "-q", "-p", "cpuprof-cli"]);
            if release {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("cannot run cargo");
            assert!(status.success(), "cargo build -p cpuprof-cli failed");
            profile_dir.join("cpuprof")
        })
        .clone()
}

/// A `cpuprof report --http` process, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl Server {
    /// Starts `cpuprof report --http=127.0.0.1: --no-browser ARGS` and
    /// waits (bounded) for its `Serving web UI on URL` line.
    pub fn start(args: &[&str], inputs: &[&Path]) -> Server {
        Server::start_with_env(args, inputs, &[])
    }

    /// [`Server::start`] with more environment variables.
    pub fn start_with_env(args: &[&str], inputs: &[&Path], env: &[(&str, &Path)]) -> Server {
        let mut child = Command::new(cpuprof_binary())
            .arg("report")
            .arg("--http=127.0.0.1:")
            .arg("--no-browser")
            .args(args)
            .args(inputs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .spawn()
            .expect("cannot start cpuprof");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("cpuprof report --http printed no URL in 30 s");
            }
        };
        let url = line
            .trim()
            .strip_prefix("Serving web UI on ")
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("unexpected first line: {line:?}")
            })
            .to_string();
        let addr = url.trim_start_matches("http://").to_string();
        Server { child, url, addr }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` with the right Host header: (status, body).
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        request(&self.addr, "GET", path, &self.addr, &[], b"")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a new connection (closed after): status and
/// body. `headers` are extra `Name: value` lines.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    host: &str,
    headers: &[&str],
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read response");
    let text_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..text_end]).into_owned();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut body = response[text_end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&data[..eol])
                .trim()
                .split(';')
                .next()
                .unwrap(),
            16,
        )
        .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
}

/// Resident memory of process `pid` in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Python with Playwright, and Chromium; None (skip) when missing, unless
/// CPUPROF_REQUIRE_PEERS is set (then a panic).
pub fn browser_available() -> bool {
    let chromium = std::path::Path::new("/usr/bin/chromium").exists();
    let playwright = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .output()
        .is_ok_and(|o| o.status.success());
    if chromium && playwright {
        return true;
    }
    let missing = if chromium {
        "playwright (python3)"
    } else {
        "/usr/bin/chromium"
    };
    if peers_required() {
        panic!("{missing} is missing: run scripts/install-peers");
    }
    eprintln!("skipped: {missing} is missing (scripts/install-peers installs it)");
    false
}

pub const FIREFOX: &str = "/usr/bin/firefox-esr";

/// Node's global modules (where scripts/install-peers puts puppeteer-core),
/// when firefox-esr, node and puppeteer-core are all there; None (skip)
/// otherwise, unless CPUPROF_REQUIRE_PEERS is set (then a panic).
pub fn puppeteer_modules() -> Option<String> {
    let root = Command::new("npm")
        .args(["root", "-g"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let puppeteer = root.as_ref().is_some_and(|root| {
        Command::new("node")
            .args(["-e", "require('puppeteer-core')"])
            .env("NODE_PATH", root)
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let firefox = std::path::Path::new(FIREFOX).exists();
    if firefox && puppeteer {
        return root;
    }
    let missing = if firefox {
        "puppeteer-core (node, npm -g)"
    } else {
        FIREFOX
    };
    if peers_required() {
        panic!("{missing} is missing: run scripts/install-peers");
    }
    eprintln!("skipped: {missing} is missing (scripts/install-peers installs it)");
    None
}

/// Runs a browser script (`cmd`, its stdout piped) for at most `limit`:
/// the JSON it printed. Panics with its standard error when it fails or
/// overruns (it is killed then).
pub fn run_browser_script(mut cmd: Command, limit: Duration) -> serde_json::Value {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start the browser script");
    let started = std::time::Instant::now();
    let output = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the browser script took more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        output.status.success(),
        "the browser script failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the browser script's JSON")
}
