//! The HTTP endpoint (`CPUPROFILE_HTTP=[HOST:]PORT`): pprof's remote
//! protocol (gperftools' `/pprof/*`, documented in its
//! `pprof_remote_servers.html`) and Go's `net/http/pprof` paths
//! (`/debug/pprof/*`), served by two threads of the agent's own, started
//! with every signal blocked and never sampled:
//!
//! - the *accept* thread takes one connection at a time, reads one
//!   request (bounded in size by [`crate::http`] and in time by
//!   [`READ_DEADLINE`]) and answers it at once: symbols, command line,
//!   index, errors; a profile request is handed to
//! - the *window* thread, which opens a profile window
//!   ([`Windows::begin`]), sleeps in `poll` on the connection
//!   until the window ends or the client hangs up, closes it and answers
//!   with the samples. A profile request arriving meanwhile gets `409`.
//!
//! Both sleep in the kernel (`accept`, a condition variable, `poll`) while
//! idle: no CPU. Neither takes a lock that a program thread or the signal
//! handler waits for, beyond the control lock the agent's own control
//! thread takes for the same short drains.

use std::ffi::c_void;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::collector::{Stacks, TimeKeeping};
use crate::config::{Settings, MAX_FREQUENCY};
use crate::diag::diag;
use crate::http::{self, Request};
use crate::locks::lock;
use crate::symbols::Symbolizer;
use crate::{modules, pprof_proto, threads, writer};

/// How long a client has to send its whole request.
const READ_DEADLINE: Duration = Duration::from_secs(5);
/// How long a client has to take a response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest profile window (an hour).
pub const MAX_SECONDS: u64 = 3600;
/// The window when `seconds` is not given (as gperftools and Go).
const DEFAULT_SECONDS: u64 = 30;
/// Set in the environment by the serving process: its descendants (which
/// inherit `CPUPROFILE_HTTP` and would find the port taken) do not serve.
const SERVING_MARKER: &str = "CPUPROFILE_HTTP_SERVING_PID";

struct Server {
    listener: TcpListener,
    /// The lifecycle's window functions.
    windows: Windows,
    /// Bound to a loopback address: `Host` fields must name loopback too.
    loopback: bool,
    /// The settings of a window (`CPUPROFILE_FREQUENCY`, …).
    settings: Settings,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// What a closed window gathered.
pub(crate) struct WindowProfile {
    /// Samples per stack (leaf first, return addresses as sampled) and
    /// labels.
    pub(crate) stacks: Stacks,
    /// The thread names the labels refer to.
    pub(crate) names: Vec<String>,
    /// Wall-clock samples (the session runs in realtime mode).
    pub(crate) wall: bool,
    /// Nanoseconds between samples.
    pub(crate) period_ns: u64,
    /// When the window opened (ns since the epoch) and how long it lasted.
    pub(crate) start_time_ns: u64,
    pub(crate) duration_ns: u64,
    /// How its samples kept their times.
    pub(crate) times: TimeKeeping,
}

/// Why a profile window could not open.
#[derive(Debug)]
pub(crate) enum WindowError {
    /// Another window is open.
    Busy,
    /// No session ran and none could be started for the window (why).
    Start(String),
}

/// What the endpoint asks of the agent's lifecycle, which starts it: to
/// open a profile window (alongside the program's session, or with an
/// internal one) and to close it with what it gathered.
#[derive(Clone, Copy)]
pub(crate) struct Windows {
    /// Opens a window at these settings; returns the rate in use.
    pub(crate) begin: fn(Settings) -> Result<u32, WindowError>,
    /// Closes the window.
    pub(crate) end: fn() -> Option<WindowProfile>,
}

/// Whether a gperftools profile or gzipped profile.proto is asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Gperftools,
    Proto,
}

struct ProfileJob {
    stream: TcpStream,
    seconds: u64,
    hz: Option<u32>,
    format: Format,
}

/// The profile request handed to the window thread, and whether one is
/// under way (set by the accept thread, cleared by the window thread).
static JOB: Mutex<Option<ProfileJob>> = Mutex::new(None);
static JOB_READY: Condvar = Condvar::new();
static PROFILING: AtomicBool = AtomicBool::new(false);

/// Parses `[HOST:]PORT`: HOST an IP address (IPv6 in brackets) or
/// `localhost`; 127.0.0.1 when absent.
pub fn parse_address(spec: &str) -> Result<SocketAddr, String> {
    let spec = spec.trim();
    let (host, port) = match spec.rsplit_once(':') {
        Some((host, port)) => (Some(host), port),
        None => (None, spec),
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{port:?} is not a port number (0-65535)"))?;
    let ip = match host {
        None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(h) if h.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(h) => {
            let bare = h.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
            bare.unwrap_or(h).parse().map_err(|_| {
                format!("{h:?} is not an IP address or localhost (names are not looked up)")
            })?
        }
    };
    Ok(SocketAddr::new(ip, port))
}

/// Starts the endpoint from the library constructor. Every failure is one
/// line on stderr, and the program runs on without the endpoint.
/// `quiet_settings`: the sampling settings were already checked (and any
/// problem reported) for `CPUPROFILE`.
pub(crate) fn start_from_env(spec: &str, quiet_settings: bool, windows: Windows) {
    // SAFETY: getpid is always safe.
    let pid = unsafe { libc::getpid() };
    if let Ok(serving) = std::env::var(SERVING_MARKER) {
        if serving != pid.to_string() {
            return;
        }
    }
    let address = match parse_address(spec) {
        Ok(address) => address,
        Err(e) => {
            diag(&format!("CPUPROFILE_HTTP={spec:?}: {e}; no HTTP endpoint"));
            return;
        }
    };
    let listener = match TcpListener::bind(address) {
        Ok(listener) => listener,
        Err(e) => {
            diag(&format!(
                "CPUPROFILE_HTTP: cannot listen on {address}: {e}; the program runs without the HTTP endpoint"
            ));
            return;
        }
    };
    // Out of the numbers the program uses first, and closed on exec.
    let listener = match crate::timers::move_high(listener.into_raw_fd()) {
        // SAFETY: the descriptor of the listening socket just moved.
        Ok(fd) => unsafe { TcpListener::from_raw_fd(fd) },
        Err(e) => {
            diag(&format!(
                "CPUPROFILE_HTTP: cannot move the listening socket's descriptor: {e}; no HTTP endpoint"
            ));
            return;
        }
    };
    let loopback = address.ip().is_loopback();
    if !loopback {
        diag(&format!(
            "warning: CPUPROFILE_HTTP serves profiles, symbols and the command line on {address}, reachable from other machines"
        ));
    }
    if address.port() == 0 {
        if let Ok(bound) = listener.local_addr() {
            diag(&format!("CPUPROFILE_HTTP: serving on http://{bound}/"));
        }
    }
    // SAFETY: called from the library constructor, before the program
    // starts threads (as config::unique_path_from_env does).
    unsafe { std::env::set_var(SERVING_MARKER, pid.to_string()) };
    let settings = Settings::from_env(&mut |w| {
        if !quiet_settings {
            diag(&w)
        }
    });
    let fd = listener.as_raw_fd();
    if SERVER
        .set(Server {
            listener,
            windows,
            loopback,
            settings,
        })
        .is_err()
    {
        return;
    }
    LISTENER_FD.store(fd, Ordering::Release);
    // SAFETY: registering a plain extern "C" function.
    unsafe { libc::pthread_atfork(None, None, Some(close_in_child)) };
    // Created now: threads appearing later go through pthread_create's
    // registration, and the sampler's tables are only address space.
    crate::collector::sampler();
    if threads::spawn_internal(accept_main).is_err()
        || threads::spawn_internal(window_main).is_err()
    {
        diag("CPUPROFILE_HTTP: cannot start the endpoint's threads; no HTTP endpoint");
    }
}

static LISTENER_FD: AtomicI32 = AtomicI32::new(-1);

/// A forked child has no endpoint threads: it must not hold the port.
extern "C" fn close_in_child() {
    let fd = LISTENER_FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: the child's copy of our listening socket.
        unsafe { libc::close(fd) };
    }
}

extern "C" fn accept_main(_: *mut c_void) -> *mut c_void {
    let Some(server) = SERVER.get() else {
        return std::ptr::null_mut();
    };
    loop {
        match server.listener.accept() {
            Ok((stream, _)) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    serve_connection(server, stream)
                }));
            }
            // Out of descriptors or the like: try again a little later
            // rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

extern "C" fn window_main(_: *mut c_void) -> *mut c_void {
    let Some(server) = SERVER.get() else {
        return std::ptr::null_mut();
    };
    loop {
        let job = {
            let mut slot = lock(&JOB);
            loop {
                if let Some(job) = slot.take() {
                    break job;
                }
                slot = JOB_READY
                    .wait(slot)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_window(server, job)));
    }
}

/// A response.
struct Response {
    status: u16,
    content_type: &'static str,
    extra_headers: String,
    body: Vec<u8>,
}

impl Response {
    fn text(status: u16, text: impl Into<String>) -> Response {
        let mut body: String = text.into();
        if !body.ends_with('\n') {
            body.push('\n');
        }
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            extra_headers: String::new(),
            body: body.into_bytes(),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

fn send(stream: &mut TcpStream, response: &Response, head_only: bool) {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n{}\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len(),
        response.extra_headers,
    );
    let _ = stream.write_all(head.as_bytes());
    if !head_only {
        let _ = stream.write_all(&response.body);
    }
    let _ = stream.flush();
}

/// Answers an error and closes gracefully: what the client still sends
/// (an oversized body) is read and dropped for a moment, so that closing
/// with unread data does not reset the connection before the client
/// reads the answer.
fn refuse(mut stream: TcpStream, response: Response) {
    send(&mut stream, &response, false);
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut sink = [0u8; 16 * 1024];
    let mut discarded = 0usize;
    while Instant::now() < deadline && discarded < 4 * http::MAX_BODY {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => discarded += n,
        }
    }
}

/// Reads one request: its head and body.
fn read_request(stream: &mut TcpStream) -> Result<(Request, Vec<u8>), Option<Response>> {
    let deadline = Instant::now() + READ_DEADLINE;
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 8192];
    let request = loop {
        match http::parse_head(&buf) {
            Ok(Some(request)) => break request,
            Ok(None) => {}
            Err(e) => return Err(Some(Response::text(e.status(), e.to_string()))),
        }
        match read_some(stream, &mut chunk, deadline) {
            Ok(0) => return Err(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(timeout) => return Err(timeout),
        }
    };
    let mut body = buf.split_off(request.head_len.min(buf.len()));
    while body.len() < request.content_length {
        match read_some(stream, &mut chunk, deadline) {
            Ok(0) => return Err(None),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(timeout) => return Err(timeout),
        }
    }
    body.truncate(request.content_length);
    Ok((request, body))
}

/// One read before `deadline`: Err(Some(408)) when it passes, Err(None)
/// when the connection fails.
fn read_some(
    stream: &mut TcpStream,
    chunk: &mut [u8],
    deadline: Instant,
) -> Result<usize, Option<Response>> {
    let timeout = || Some(Response::text(408, "the request took too long to arrive"));
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(timeout());
    }
    let _ = stream.set_read_timeout(Some(left));
    loop {
        return match stream.read(chunk) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(timeout())
            }
            Err(_) => Err(None),
        };
    }
}

fn serve_connection(server: &Server, mut stream: TcpStream) {
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let (request, body) = match read_request(&mut stream) {
        Ok(read) => read,
        Err(Some(response)) => return refuse(stream, response),
        Err(None) => return,
    };
    if server.loopback {
        if let Some(host) = request.host.as_deref() {
            if !http::is_loopback_host(host) {
                return refuse(
                    stream,
                    Response::text(
                        403,
                        format!("Host {host:?} is not a loopback name: this endpoint serves only this machine (DNS rebinding protection)"),
                    ),
                );
            }
        }
    }
    let head_only = request.method == "HEAD";
    let get = request.method == "GET" || head_only;
    let not_allowed = |allow: &str| {
        let mut response = Response::text(
            405,
            format!(
                "{} is not allowed on {}; use {allow}",
                request.method, request.path
            ),
        );
        response.extra_headers = format!("Allow: {allow}\r\n");
        response
    };
    let response = match request.path.as_str() {
        "/pprof/profile" | "/debug/pprof/profile" => {
            if request.method != "GET" {
                return refuse(stream, not_allowed("GET"));
            }
            let format = if request.path.starts_with("/debug/") {
                Format::Proto
            } else {
                Format::Gperftools
            };
            return start_profile(stream, &request, format);
        }
        "/pprof/symbol" | "/debug/pprof/symbol" => match request.method.as_str() {
            "GET" | "HEAD" if request.query.is_empty() => Response::text(200, "num_symbols: 1"),
            "GET" | "HEAD" => symbolize(request.query.as_bytes()),
            "POST" => symbolize(&body),
            _ => not_allowed("GET, HEAD, POST"),
        },
        "/pprof/cmdline" | "/debug/pprof/cmdline" if get => {
            let args = std::fs::read("/proc/self/cmdline").unwrap_or_default();
            let args: Vec<&[u8]> = args.split(|&b| b == 0).filter(|a| !a.is_empty()).collect();
            let body = if request.path.starts_with("/debug/") {
                // Go's net/http/pprof: the arguments joined by NUL.
                args.join(&0u8)
            } else {
                // gperftools: one argument per line, the program first.
                let mut lines = args.join(&b'\n');
                lines.push(b'\n');
                lines
            };
            Response {
                status: 200,
                content_type: "text/plain; charset=utf-8",
                extra_headers: String::new(),
                body,
            }
        }
        "/debug/pprof/" | "/debug/pprof" | "/pprof/" | "/pprof" | "/" if get => index_page(),
        "/pprof/cmdline"
        | "/debug/pprof/cmdline"
        | "/debug/pprof/"
        | "/debug/pprof"
        | "/pprof/"
        | "/pprof"
        | "/" => not_allowed("GET, HEAD"),
        _ => Response::text(
            404,
            format!("{} is not served here; see /debug/pprof/", request.path),
        ),
    };
    if response.status >= 400 {
        return refuse(stream, response);
    }
    send(&mut stream, &response, head_only);
}

const INDEX: &str = "<!DOCTYPE html>
<html><head><title>cpuprof: /debug/pprof/</title></head><body>
<h1>cpuprof agent</h1>
<p>CPU profiles of this process, sampled by libcpuprof.so.</p>
<table>
<tr><td><a href=\"/debug/pprof/profile?seconds=30\">/debug/pprof/profile?seconds=N</a></td><td>CPU profile of the next N seconds (default 30, at most 3600; <code>hz=</code> sets the rate), gzipped profile.proto (Go pprof, Parca, Pyroscope)</td></tr>
<tr><td>/pprof/profile?seconds=N</td><td>the same as a gperftools CPU profile (perl pprof)</td></tr>
<tr><td><a href=\"/debug/pprof/symbol\">/debug/pprof/symbol</a>, /pprof/symbol</td><td>GET: <code>num_symbols: 1</code>; POST <code>0xADDR+0xADDR+&hellip;</code>: <code>0xADDR&lt;TAB&gt;name</code> lines</td></tr>
<tr><td><a href=\"/debug/pprof/cmdline\">/debug/pprof/cmdline</a>, /pprof/cmdline</td><td>the command line (NUL-separated; one argument per line)</td></tr>
</table>
<p>One profile at a time; <code>go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=10</code>.</p>
</body></html>
";

fn index_page() -> Response {
    Response {
        status: 200,
        content_type: "text/html; charset=utf-8",
        extra_headers: String::new(),
        body: INDEX.as_bytes().to_vec(),
    }
}

/// `0xA+0xB+…` (POST body or GET query) → `0xA<TAB>name` lines; addresses
/// with no symbol are left out (as Go does).
fn symbolize(list: &[u8]) -> Response {
    let mut symbolizer = Symbolizer::new(&modules::read_maps());
    let mut out = String::new();
    for address in http::symbol_addresses(list) {
        if let Some(name) = symbolizer.function_name(address) {
            out.push_str(&format!("{address:#x}\t{name}\n"));
        }
    }
    Response {
        status: 200,
        content_type: "text/plain; charset=utf-8",
        extra_headers: String::new(),
        body: out.into_bytes(),
    }
}

/// Checks a profile request and hands it to the window thread.
fn start_profile(stream: TcpStream, request: &Request, format: Format) {
    let seconds = match http::query_param(&request.query, "seconds") {
        None => DEFAULT_SECONDS,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_SECONDS).contains(&n) => n,
            _ => {
                return refuse(
                    stream,
                    Response::text(
                        400,
                        format!("seconds={text:?}: a profile lasts a whole number of seconds from 1 to {MAX_SECONDS}"),
                    ),
                )
            }
        },
    };
    let hz = match http::query_param(&request.query, "hz") {
        None => None,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if (1..=MAX_FREQUENCY).contains(&n) => Some(n),
            _ => {
                return refuse(
                    stream,
                    Response::text(
                        400,
                        format!("hz={text:?}: the rate is a whole number of samples per second from 1 to {MAX_FREQUENCY}"),
                    ),
                )
            }
        },
    };
    if PROFILING
        .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return refuse(
            stream,
            Response::text(
                409,
                "a profile is already being collected for another request; one at a time: try again when it is done",
            ),
        );
    }
    *lock(&JOB) = Some(ProfileJob {
        stream,
        seconds,
        hz,
        format,
    });
    JOB_READY.notify_one();
}

/// Clears [`PROFILING`] when dropped: once the window's samples are taken,
/// before the answer is encoded and sent, so a client that asks again as
/// soon as it has read one answer is served, not refused with `409`.
struct WindowTaken;

impl Drop for WindowTaken {
    fn drop(&mut self) {
        PROFILING.store(false, Ordering::Release);
    }
}

/// Collects one window and answers with it.
fn run_window(server: &Server, job: ProfileJob) {
    let taken = WindowTaken;
    let ProfileJob {
        mut stream,
        seconds,
        hz,
        format,
    } = job;
    let mut settings = server.settings.clone();
    if let Some(hz) = hz {
        settings.frequency = hz;
    }
    if matches!(format, Format::Proto) {
        // Sampled for profile.proto: each sample with its thread and
        // time, as a pprof session's (when the window runs alongside the
        // program's own session, that session's settings rule).
        settings.format = crate::config::ProfileFormat::Pprof;
    }
    match (server.windows.begin)(settings) {
        Ok(_) => {}
        Err(WindowError::Busy) => {
            drop(taken);
            return refuse(
                stream,
                Response::text(409, "a profile is already being collected"),
            );
        }
        Err(WindowError::Start(e)) => {
            drop(taken);
            return refuse(stream, Response::text(503, format!("cannot sample: {e}")));
        }
    }
    let client_left = wait_or_hangup(&stream, Instant::now() + Duration::from_secs(seconds));
    let window = (server.windows.end)();
    drop(taken);
    if client_left {
        return;
    }
    let Some(window) = window else {
        return refuse(stream, Response::text(500, "the profile window was lost"));
    };
    let maps = modules::read_profile_maps();
    let body = match format {
        Format::Gperftools => {
            let period_us = (window.period_ns + 500) / 1000;
            writer::encode(period_us.max(1), &window.stacks, &maps, &[])
        }
        Format::Proto => {
            let mut symbolizer = Symbolizer::new(&maps);
            let main = std::fs::read_link("/proc/self/exe")
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let samples = pprof_proto::WindowSamples {
                stacks: &window.stacks,
                names: &window.names,
                wall: window.wall,
                period_ns: window.period_ns,
                start_time_ns: window.start_time_ns,
                duration_ns: window.duration_ns,
                times: window.times,
                process: pprof_proto::process_identity(),
            };
            pprof_proto::gzip_stored(&pprof_proto::encode(&samples, &mut symbolizer, &main))
        }
    };
    let response = Response {
        status: 200,
        content_type: "application/octet-stream",
        extra_headers: "Content-Disposition: attachment; filename=\"profile\"\r\n".to_string(),
        body,
    };
    send(&mut stream, &response, false);
}

/// Sleeps until `deadline`, or until the client hangs up (true).
fn wait_or_hangup(stream: &TcpStream, deadline: Instant) -> bool {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut poll = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: poll on one live pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, ms) };
        if ready > 0 && poll.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_address("6060").unwrap(),
            "127.0.0.1:6060".parse().unwrap()
        );
        assert_eq!(
            parse_address("localhost:1").unwrap(),
            "127.0.0.1:1".parse().unwrap()
        );
        assert_eq!(
            parse_address("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert_eq!(
            parse_address("[::1]:80").unwrap(),
            "[::1]:80".parse().unwrap()
        );
        assert!(parse_address("example.com:80").is_err());
        assert!(parse_address("70000").is_err());
        assert!(parse_address("").is_err());
        assert!(parse_address("1.2.3.4:").is_err());
    }
}
