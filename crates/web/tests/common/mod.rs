//! What the web UI's tests share: a real profile of spin (Debian's
//! libprofiler), a base profile of a shorter run for diffs, the `cpuprof`
//! binary, and a server process started on a free loopback port.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use cpuprof_testkit::{
    build_spin, libprofiler, profile_with_libprofiler, repo_root, require_tool, TempDir,
};

/// spin, its profile (1 s of CPU) and a base profile (0.4 s).
pub struct Spin {
    _dir: TempDir,
    /// The binary.
    pub binary: PathBuf,
    /// Its profile.
    pub profile: PathBuf,
    /// A shorter run's profile (everything grew from it to `profile`).
    pub base: PathBuf,
}

/// The spin fixture, made once per test binary; `None` when a peer is
/// missing (and CPUPROF_REQUIRE_PEERS is not set: then it panics).
pub fn spin() -> Option<&'static Spin> {
    static SPIN: OnceLock<Option<Spin>> = OnceLock::new();
    SPIN.get_or_init(|| {
        if !require_tool("gcc") {
            return None;
        }
        let Some(lib) = libprofiler() else {
            require_tool("libprofiler.so");
            return None;
        };
        let dir = TempDir::new().unwrap();
        let (binary, _) = build_spin(dir.path(), "spin", &[]);
        let profile = dir.path().join("spin.prof");
        let base = dir.path().join("base.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "1.0", "-d", "5"], &profile, 250);
        profile_with_libprofiler(&lib, &binary, &["-s", "0.4", "-d", "5"], &base, 250);
        Some(Spin {
            _dir: dir,
            binary,
            profile,
            base,
        })
    })
    .as_ref()
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
