//! `cpuprof report URL`: profiles fetched from running programs, all on
//! loopback, every server here bounded in requests and time.
//!
//! - A real Go program serving `net/http/pprof` (built at test time with
//!   Debian's Go): fetched by `host:port` (perl's `/pprof/profile` is 404
//!   there, so Go's `/debug/pprof/profile` is used), with names.
//! - A small server of ours speaking gperftools' remote protocol, whose
//!   profile's binary does not exist here: the names come from its
//!   `/pprof/symbol` (both peers' line formats, an inline chain).
//! - The fetched profile is saved under `$PPROF_TMPDIR` and reads back
//!   offline with the same report.
//! - Errors, one line each with the URL: connection refused, a server
//!   that never answers (the timeout fires), 404, an HTML body, a
//!   truncated profile.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cpuprof_testkit::{require_tool, TempDir};

mod common;

/// A request our test servers saw.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    target: String,
    body: String,
}

/// What a test server answers: (status line, body) for a request.
type Handler = dyn Fn(&Request) -> (u16, Vec<u8>) + Send + Sync;

/// A loopback HTTP server answering at most `max` requests, for at most
/// 30 s; returns its port.
fn serve(max: usize, handler: Box<Handler>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut served = 0;
        while served < max && Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    served += 1;
                    let _ = answer(stream, &*handler);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    port
}

fn answer(stream: TcpStream, handler: &Handler) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length.min(1 << 20)];
    reader.read_exact(&mut body)?;
    let request = Request {
        method,
        target,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (status, body) = handler(&request);
    if status == 0 {
        // Never answer (the client's timeout must fire).
        std::thread::sleep(Duration::from_secs(20));
        return Ok(());
    }
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)
}

/// `cpuprof report ARGS` with `$PPROF_TMPDIR` set: (stdout, stderr, status).
fn report(args: &[&str], tmpdir: &Path) -> (String, String, i32) {
    common::report_texts(args, |cmd| {
        cmd.env("PPROF_TMPDIR", tmpdir);
    })
}

/// A gperftools CPU profile (64-bit little-endian) of `stacks` (leaf
/// first) at 100 Hz, with `maps` as its mapped-objects text.
fn gperftools_profile(stacks: &[(u64, &[u64])], maps: &str) -> Vec<u8> {
    let mut words: Vec<u64> = vec![0, 3, 0, 10_000, 0];
    for (count, pcs) in stacks {
        words.push(*count);
        words.push(pcs.len() as u64);
        words.extend_from_slice(pcs);
    }
    words.extend_from_slice(&[0, 1, 0]);
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.extend_from_slice(maps.as_bytes());
    bytes
}

/// The profile of a program that no longer exists here: names only from
/// the symbol server.
fn remote_only_profile() -> Vec<u8> {
    gperftools_profile(
        &[
            (60, &[0x401010, 0x401105, 0x401205]),
            (30, &[0x401020, 0x401105, 0x401205]),
            (10, &[0x401030, 0x401205]),
        ],
        "00400000-00402000 r-xp 00000000 00:00 0 /nonexistent/remote-prog\n",
    )
}

#[test]
fn names_come_from_the_servers_symbol_endpoint_and_the_profile_is_saved() {
    let dir = TempDir::new().unwrap();
    let symbol_posts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let posts = symbol_posts.clone();
    let port = serve(
        10,
        Box::new(
            move |r: &Request| match (r.method.as_str(), r.target.as_str()) {
                ("GET", t) if t.starts_with("/pprof/profile?seconds=2") => {
                    (200, remote_only_profile())
                }
                ("GET", "/pprof/symbol") => (200, b"num_symbols: 5\n".to_vec()),
                ("POST", "/pprof/symbol") => {
                    posts.lock().unwrap().push(r.body.clone());
                    // perl's tab, Go's spaces, an inline chain (outer--inner).
                    (
                    200,
                    b"0x401010\tburn_a\n0x401020  burn_b\n0x401030\twork--burn_c\n0x401104\tmain\n0x401204\t_start\n".to_vec(),
                )
                }
                ("GET", "/pprof/cmdline") => (200, b"/opt/remote-prog\n--flag\n".to_vec()),
                _ => (404, b"no such page\n".to_vec()),
            },
        ),
    );
    let source = format!("127.0.0.1:{port}");
    let (out, err, status) = report(&["--text", "--seconds=2", &source], dir.path());
    assert_eq!(status, 0, "{err}");
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows[0], "Total: 100 samples", "{out}");
    assert!(
        rows.contains(&"      60  60.0%  60.0%       60  60.0% burn_a"),
        "{out}"
    );
    assert!(
        rows.contains(&"      30  30.0%  90.0%       30  30.0% burn_b"),
        "{out}"
    );
    assert!(
        rows.contains(&"      10  10.0% 100.0%       10  10.0% burn_c"),
        "{out}"
    );
    assert!(
        rows.contains(&"       0   0.0% 100.0%       10  10.0% work"),
        "{out}"
    );
    assert!(
        rows.contains(&"       0   0.0% 100.0%       90  90.0% main"),
        "{out}"
    );
    // The callers' return addresses were asked for as call sites (-1).
    let posted = symbol_posts.lock().unwrap().join("+");
    for address in ["0x401010", "0x401020", "0x401030", "0x401104", "0x401204"] {
        assert!(
            posted.split('+').any(|a| a == address),
            "{address} not in {posted}"
        );
    }
    // Saved as <program>.<YYYYMMDD.HHMMSS>.<host>, and the path printed.
    let saved: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = saved[0].file_name().unwrap().to_str().unwrap().to_string();
    let stamp = name
        .strip_prefix("remote-prog.")
        .and_then(|n| n.strip_suffix(".127.0.0.1"))
        .unwrap_or_else(|| panic!("saved as {name}"));
    assert!(
        stamp.len() == 15 && stamp.chars().filter(|c| c.is_ascii_digit()).count() == 14,
        "{name}"
    );
    assert!(
        err.contains(&format!("Saved profile in {}", saved[0].display())),
        "{err}"
    );
    assert_eq!(std::fs::read(&saved[0]).unwrap(), remote_only_profile());
}

#[test]
fn errors_name_the_url_in_one_line() {
    let dir = TempDir::new().unwrap();
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let not_found = serve(
        4,
        Box::new(|_: &Request| (404, b"404 page not found\nmore\n".to_vec())),
    );
    let html = serve(
        2,
        Box::new(|_: &Request| {
            (
                200,
                b"<!DOCTYPE html>\n<html><body>hi</body></html>\n".to_vec(),
            )
        }),
    );
    let truncated = serve(
        2,
        Box::new(|_: &Request| {
            let mut p = remote_only_profile();
            p.truncate(60);
            (200, p)
        }),
    );
    let hangs = serve(2, Box::new(|_: &Request| (0, Vec::new())));
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![format!("127.0.0.1:{closed}/pprof/profile")],
            format!("cpuprof: http://127.0.0.1:{closed}/pprof/profile?seconds=30: connection refused"),
        ),
        (
            vec![format!("http://127.0.0.1:{not_found}/debug/pprof/heap")],
            format!("cpuprof: http://127.0.0.1:{not_found}/debug/pprof/heap: HTTP 404 Not Found: 404 page not found"),
        ),
        (
            // Both default paths are tried; the second's 404 is reported.
            vec![format!("127.0.0.1:{not_found}")],
            format!("cpuprof: http://127.0.0.1:{not_found}/debug/pprof/profile?seconds=30: HTTP 404 Not Found: 404 page not found"),
        ),
        (
            vec![format!("127.0.0.1:{html}/pprof/profile"), "--seconds=1".into()],
            format!("cpuprof: http://127.0.0.1:{html}/pprof/profile?seconds=1: the body is not a profile (it starts: \"<!DOCTYPE html>\")"),
        ),
        (
            vec![format!("127.0.0.1:{truncated}/pprof/profile?seconds=1")],
            format!("cpuprof: http://127.0.0.1:{truncated}/pprof/profile?seconds=1: gperftools CPU profile: offset "),
        ),
        (
            vec![format!("127.0.0.1:{hangs}/pprof/profile"), "--timeout=1".into()],
            format!("cpuprof: http://127.0.0.1:{hangs}/pprof/profile?seconds=30: timed out (see --timeout)"),
        ),
    ];
    for (args, expected) in cases {
        let started = Instant::now();
        let mut all = vec!["--text".to_string()];
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let (out, err, status) = report(&all, dir.path());
        assert_eq!(status, 1, "{args:?}: {err}");
        assert_eq!(out, "", "{args:?}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(
            lines[0].starts_with(&expected),
            "{args:?}:\n got {}\nwant {expected}",
            lines[0]
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} took {:?}",
            started.elapsed()
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing saved on errors"
    );
}

/// A Go program serving net/http/pprof on a free loopback port, burning
/// CPU in `main.burnCPU`; killed on drop.
struct GoServer {
    child: Child,
    port: u16,
    _dir: TempDir,
}

impl Drop for GoServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const GO_SERVER: &str = r#"package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"time"
)

//go:noinline
func burnCPU(n int) float64 {
	x := 1.0
	for i := 0; i < n; i++ {
		x = x*1.0000001 + 1e-9
	}
	return x
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	os.Stdout.Sync()
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			burnCPU(10000000)
		}
		os.Exit(0)
	}()
	http.Serve(l, nil)
}
"#;

fn go_server() -> Option<GoServer> {
    if !require_tool("go") {
        return None;
    }
    let dir = TempDir::new().unwrap();
    let bin = cpuprof_testkit::build_go(dir.path(), "goserver", GO_SERVER);
    let mut child = Command::new(&bin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the Go server's port");
    Some(GoServer {
        child,
        port,
        _dir: dir,
    })
}

#[test]
fn fetches_from_a_real_go_program_serving_net_http_pprof() {
    let Some(server) = go_server() else { return };
    let dir = TempDir::new().unwrap();
    let source = format!("127.0.0.1:{}", server.port);
    let (out, err, status) = report(&["--text", "--seconds=2", &source], dir.path());
    assert_eq!(status, 0, "{err}");
    // Go's CPU profile counts samples and nanoseconds; --text reports cpu,
    // in Go pprof's layout with time scaled (`Type: cpu`, `... of 1.98s
    // total`).
    assert!(out.lines().any(|l| l == "Type: cpu"), "{out}");
    let showing = out
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for "))
        .unwrap_or_else(|| panic!("no summary:\n{out}"));
    assert!(
        showing.ends_with("s total") && !showing.contains("nanoseconds"),
        "{out}"
    );
    let burn = out
        .lines()
        .find(|l| l.ends_with(" main.burnCPU"))
        .unwrap_or_else(|| panic!("no main.burnCPU row:\n{out}\n{err}"));
    let cum_percent: f64 = burn
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(cum_percent > 80.0, "{burn}");
    // The samples of a 2 s window of one busy goroutine: at most 2 CPU-s
    // at Go's 100 Hz (less when the machine is busy).
    let (samples, _, _) = report(
        &["--text", "--sample_index=samples", &first_saved(dir.path())],
        dir.path(),
    );
    let total: i64 = samples
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (20..=230).contains(&total),
        "{total} samples in 2 s:\n{samples}"
    );
    // An explicit Go path works the same.
    let (out, err, status) = report(
        &[
            "--top",
            &format!(
                "http://127.0.0.1:{}/debug/pprof/profile?seconds=1",
                server.port
            ),
        ],
        dir.path(),
    );
    assert_eq!(status, 0, "{err}");
    assert!(out.contains(" main.burnCPU\n"), "{out}");
}

/// The one profile saved in `dir`.
fn first_saved(dir: &Path) -> String {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("a saved profile")
        .display()
        .to_string()
}

#[test]
fn the_saved_profile_reads_back_offline_with_the_same_report() {
    let dir = TempDir::new().unwrap();
    let port = serve(
        6,
        Box::new(|r: &Request| match r.target.as_str() {
            t if t.starts_with("/pprof/profile") => (200, remote_only_profile()),
            "/pprof/symbol" if r.method == "GET" => (200, b"num_symbols: 1\n".to_vec()),
            "/pprof/symbol" => (200, b"0x401010 burn_a\n0x401020 burn_b\n".to_vec()),
            _ => (404, Vec::new()),
        }),
    );
    let (online, err, status) = report(
        &[
            "--text",
            "--no-symbolize",
            &format!("127.0.0.1:{port}/pprof/profile"),
        ],
        dir.path(),
    );
    assert_eq!(status, 0, "{err}");
    let (offline, err, status) = report(
        &["--text", "--no-symbolize", &first_saved(dir.path())],
        dir.path(),
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(online, offline);
    assert!(online.starts_with("Total: 100 samples\n"), "{online}");
    // Without a program name the file is profile.<time>.<host>.
    assert!(
        first_saved(dir.path()).contains("/profile."),
        "{}",
        first_saved(dir.path())
    );
}

/// A C program under our agent's `CPUPROFILE_HTTP` endpoint, burning in
/// `remote_hot_a` (2/3) and `remote_hot_b` (1/3) for `seconds` of wall
/// time; killed on drop.
struct AgentServer {
    child: Child,
    port: u16,
}

impl Drop for AgentServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const AGENT_HOST: &str = r#"
#include <stdlib.h>
#include <time.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile double sink;
#define BURN(name) __attribute__((noinline)) void name(double s) { \
    double end = now(CLOCK_THREAD_CPUTIME_ID) + s, x = 1; \
    while (now(CLOCK_THREAD_CPUTIME_ID) < end) for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9; \
    sink = x; }
BURN(remote_hot_a)
BURN(remote_hot_b)
int main(int argc, char **argv) {
    double end = now(CLOCK_MONOTONIC) + atof(argv[1]);
    while (now(CLOCK_MONOTONIC) < end) { remote_hot_a(0.02); remote_hot_b(0.01); }
    return 0;
}
"#;

/// Builds the host in `dir` and starts it under the agent's endpoint;
/// with `delete`, the binary is removed once running (no local symbols).
fn agent_server(dir: &Path, delete: bool) -> Option<AgentServer> {
    if !require_tool("gcc") {
        return None;
    }
    let src = dir.join("host.c");
    std::fs::write(&src, AGENT_HOST).unwrap();
    let bin = dir.join("agent-host");
    cpuprof_testkit::compile("gcc", &[&src], &bin, &["-O2", "-g"]);
    let (child, port) =
        common::start_under_agent_endpoint(&bin, &["30"]).expect("the agent said where it serves");
    if delete {
        std::fs::remove_file(&bin).unwrap();
    }
    Some(AgentServer { child, port })
}

/// User plus system CPU time of process `pid` so far, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 12th and 13th of them, in clock ticks.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap()) / ticks
}

/// (flat of remote_hot_a, flat of remote_hot_b) in a `--text` report.
fn hot_rows(text: &str) -> (f64, f64) {
    let flat = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (flat("remote_hot_a"), flat("remote_hot_b"))
}

#[test]
fn fetches_from_our_agents_endpoint_with_names() {
    let dir = TempDir::new().unwrap();
    let Some(server) = agent_server(dir.path(), false) else {
        return;
    };
    let tmp = TempDir::new().unwrap();
    for source in [
        format!("127.0.0.1:{}", server.port),
        format!("http://127.0.0.1:{}/debug/pprof/profile", server.port),
    ] {
        let cpu_before = cpu_seconds(server.child.id());
        // Counts, not the proto endpoint's nanoseconds: one sample = one count.
        let (out, err, status) = report(
            &["--text", "--sample_index=0", "--seconds=2", &source],
            tmp.path(),
        );
        let cpu = cpu_seconds(server.child.id()) - cpu_before;
        assert_eq!(status, 0, "{source}: {err}");
        let (a, b) = hot_rows(&out);
        // 2 s of one busy thread at 250 Hz: ~500 samples on a quiet
        // machine, 2:1. On a loaded one the thread gets less CPU: the
        // count is checked against the CPU it had in the window (the
        // window is within the two reads), the split against a binomial
        // bound (4 standard deviations) for that many samples.
        let n = a + b;
        assert!(
            n >= 30.0 && n >= 0.5 * 250.0 * (cpu - 0.3),
            "{source}: {n} samples for {cpu:.2} CPU-s\n{out}"
        );
        let share = a / n;
        let bound = 4.0 * ((2.0 / 9.0) / n).sqrt();
        assert!(
            (share - 2.0 / 3.0).abs() <= bound,
            "{source}: {a} / {b} (share {share:.3}, bound {bound:.3})\n{out}"
        );
    }
}

#[test]
fn names_of_a_deleted_binary_come_from_our_agents_symbol_endpoint() {
    let dir = TempDir::new().unwrap();
    let Some(server) = agent_server(dir.path(), true) else {
        return;
    };
    let tmp = TempDir::new().unwrap();
    let (out, err, status) = report(
        &[
            "--text",
            "--seconds=1",
            &format!("127.0.0.1:{}/pprof/profile", server.port),
        ],
        tmp.path(),
    );
    assert_eq!(status, 0, "{err}");
    let (a, b) = hot_rows(&out);
    assert!(a > b && b > 0.0, "{out}");
}

/// While an N-second profile is taken, a terminal's stderr shows a
/// countdown (tmux gives the command a real terminal); on a pipe, nothing
/// but the saved path.
#[test]
fn a_countdown_on_a_terminal_only() {
    if !require_tool("tmux") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let port = serve(
        1,
        Box::new(|_: &Request| {
            std::thread::sleep(Duration::from_millis(2500));
            (200, remote_only_profile())
        }),
    );
    let socket = dir.path().join("tmux.sock");
    let tmux = |args: &[&str]| common::tmux(&socket, args);
    let command = format!(
        "PPROF_TMPDIR={} '{}' report --text --no-symbolize --seconds=3 127.0.0.1:{port}/pprof/profile; sleep 20",
        dir.path().display(),
        env!("CARGO_BIN_EXE_cpuprof")
    );
    tmux(&["new-session", "-d", "-x", "160", "-y", "20", &command]);
    let mut screen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
        if screen.contains(" s left") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let seen_countdown = screen.contains(&format!(
        "Fetching a 3 s profile from http://127.0.0.1:{port}/pprof/profile?seconds=3: "
    )) && screen.contains(" s left");
    // Then the line is cleared and the report follows.
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !screen.contains("Total: 100 samples") {
        std::thread::sleep(Duration::from_millis(100));
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
    }
    tmux(&["kill-server"]);
    assert!(seen_countdown, "{screen}");
    assert!(screen.contains("Total: 100 samples"), "{screen}");
    assert!(
        !screen.contains(" s left"),
        "the countdown is cleared:\n{screen}"
    );
    // On a pipe: no countdown.
    let (_, err, status) = report(
        &[
            "--text",
            "--no-symbolize",
            "--seconds=1",
            &format!(
                "127.0.0.1:{}/pprof/profile",
                serve(1, Box::new(|_: &Request| (200, remote_only_profile())))
            ),
        ],
        dir.path(),
    );
    assert_eq!(status, 0, "{err}");
    assert!(!err.contains("Fetching"), "{err}");
}
