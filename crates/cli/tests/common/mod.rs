//! Helpers shared by the command-line tests (each test file is its own
//! crate, and not each uses every helper).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use cpuprof_testkit::run_stdout;

pub mod tmux;

/// The `cpuprof` binary under test (never asking the debuginfod servers
/// of the environment: Debian's profile.d names one on the internet).
pub fn cpuprof() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cpuprof"));
    cmd.env_remove("DEBUGINFOD_URLS");
    cmd
}

/// The README's small program, `tests/readme/prog.c` (60/30/10% in
/// burn_a/b/c).
pub fn readme_prog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/readme/prog.c")
}

/// `cpuprof report ARGS INPUTS`'s standard output; the run must succeed.
pub fn report(args: &[&str], inputs: &[&Path]) -> String {
    let mut cmd = cpuprof();
    cmd.arg("report").args(args).args(inputs);
    run_stdout(&mut cmd)
}

/// A finished command's (stdout, stderr, exit status; -1 when killed).
pub fn texts(out: &std::process::Output) -> (String, String, i32) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `cpuprof report ARGS` with no standard input: (stdout, stderr, status).
pub fn report_texts(args: &[&str], configure: impl FnOnce(&mut Command)) -> (String, String, i32) {
    let mut cmd = cpuprof();
    cmd.arg("report")
        .args(args)
        .stdin(std::process::Stdio::null());
    configure(&mut cmd);
    texts(&cmd.output().unwrap())
}

/// `tmux -S SOCKET ARGS`'s output: a command to the test's own tmux
/// server.
pub fn tmux(socket: &Path, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(args)
        .output()
        .unwrap()
}

/// Starts `program ARGS` under our agent with its HTTP endpoint on a free
/// loopback port (250 Hz, no profile file) and returns it with the port
/// the agent says it serves on; None (the child killed) when it does not
/// say so within its first 20 lines of stderr.
pub fn start_under_agent_endpoint(program: &Path, args: &[&str]) -> Option<(Child, u16)> {
    let agent = Path::new(env!("CARGO_BIN_EXE_cpuprof")).with_file_name("libcpuprof.so");
    assert!(
        agent.exists(),
        "{} (cargo build --release first)",
        agent.display()
    );
    let mut child = Command::new(program)
        .args(args)
        .env("LD_PRELOAD", &agent)
        .env("CPUPROFILE_HTTP", "127.0.0.1:0")
        .env("CPUPROFILE_FREQUENCY", "250")
        .env_remove("CPUPROFILE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    for _ in 0..20 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(rest) = line.split("serving on http://127.0.0.1:").nth(1) {
            if let Ok(port) = rest.trim().trim_end_matches('/').parse::<u16>() {
                return Some((child, port));
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// `cpuprof report --http=127.0.0.1: INPUTS` serving its web UI on a free
/// loopback port; killed on drop (also when a test panics).
pub struct WebUi {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl WebUi {
    /// Starts the server and reads the URL it prints (at most 30 s).
    pub fn start(inputs: &[&Path]) -> WebUi {
        let mut child = cpuprof()
            .args(["report", "--http=127.0.0.1:", "--no-browser"])
            .args(inputs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_default();
        let addr = line
            .trim()
            .strip_prefix("Serving web UI on http://")
            .map(str::to_string);
        let mut server = WebUi {
            child,
            addr: String::new(),
        };
        match addr {
            Some(addr) => server.addr = addr,
            None => panic!("cpuprof report --http printed no URL: {line:?}"),
        }
        server
    }

    /// `GET path`, bounded in time: (status, body). A chunked answer
    /// fails the test (the server sends lengths).
    pub fn get(&self, path: &str) -> (u16, Vec<u8>) {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).unwrap();
        let end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&response[..end]).into_owned();
        assert!(!head.to_ascii_lowercase().contains("chunked"), "{head}");
        let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        (status, response[end + 4..].to_vec())
    }

    /// [`WebUi::get`] with the body as text.
    pub fn get_text(&self, path: &str) -> (u16, String) {
        let (status, body) = self.get(path);
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

impl Drop for WebUi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
