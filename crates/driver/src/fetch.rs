//! Profiles fetched from running programs: a source that is not a file is
//! a URL (`host:port[/path]`, `http(s)://host:port[/path]`), fetched as Go
//! pprof and perl pprof fetch it, and saved so the run can be analysed
//! again offline.
//!
//! - No path (or `/`): `/pprof/profile` (perl pprof's, gperftools' remote
//!   servers), then `/debug/pprof/profile` (Go's) when the first is 404.
//! - A CPU profile path (`.../profile`) gets `?seconds=N` (`--seconds`,
//!   default 30; a `seconds=` already in the URL is kept when `--seconds`
//!   is not given); the timeout is `--timeout`, else 1.5 × the duration,
//!   else 60 s, as Go pprof's.
//! - Symbols the local binaries cannot give come from the server's
//!   `/pprof/symbol` (`.../symbol` beside a `/debug/pprof/` path): `GET`
//!   for `num_symbols: N`, then `POST 0xA+0xB+...`, read `0x<hex> name`
//!   lines (inline chains `outer--inner`).
//! - `/pprof/cmdline` names the program; the profile is saved as
//!   `$PPROF_TMPDIR/<program>.<YYYYMMDD.HHMMSS>.<host>` (default
//!   `~/pprof`), written to a temporary name and renamed.
//!
//! Every error is one line naming the URL.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cpuprof_profile::Profile;

/// The largest body read from a server (a profile or a symbol list).
const MAX_BODY: u64 = 2 << 30;

/// How to fetch.
#[derive(Clone, Debug, Default)]
pub struct FetchOptions {
    /// `--seconds`: the profile's duration.
    pub seconds: Option<u64>,
    /// `--timeout`: seconds to wait for the whole response.
    pub timeout: Option<f64>,
}

/// A URL as cpuprof reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: String,
    /// The host (brackets kept for IPv6: `[::1]`).
    pub host: String,
    /// The port, if given.
    pub port: Option<u16>,
    /// The path, `/` when none.
    pub path: String,
    /// The query string without `?`, empty when none.
    pub query: String,
}

impl Url {
    /// Parses `source` as a URL: `http(s)://host[:port][/path][?query]`,
    /// or `host:port[/path][?query]` (then `http`). `None` when it is not
    /// one (a word without a scheme or a port is a file name).
    pub fn parse(source: &str) -> Option<Url> {
        let (scheme, rest, explicit) = if let Some(rest) = source.strip_prefix("http://") {
            ("http", rest, true)
        } else if let Some(rest) = source.strip_prefix("https://") {
            ("https", rest, true)
        } else {
            ("http", source, false)
        };
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let close = bracketed.find(']')?;
            let host = &authority[..close + 2];
            match &bracketed[close + 1..] {
                "" => (host, None),
                p => (host, Some(p.strip_prefix(':')?)),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let valid_host = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._[]:".contains(c));
        if !valid_host {
            return None;
        }
        let port = match port {
            Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0)?),
            None if explicit => None,
            None => return None,
        };
        let (path, query) = match tail.split_once('?') {
            Some((p, q)) => (p, q),
            None => (tail, ""),
        };
        if path.contains(char::is_whitespace) || query.contains(char::is_whitespace) {
            return None;
        }
        Some(Url {
            scheme: scheme.to_string(),
            host: host.to_string(),
            port,
            path: if path.is_empty() { "/" } else { path }.to_string(),
            query: query.to_string(),
        })
    }

    /// The URL with another path and query.
    pub fn with(&self, path: &str, query: &str) -> Url {
        Url {
            path: path.to_string(),
            query: query.to_string(),
            ..self.clone()
        }
    }

    /// A query parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k == name).then_some(v)
        })
    }

    /// The URL with `name=value` set in its query (replacing one there).
    pub fn with_param(&self, name: &str, value: &str) -> Url {
        let mut pairs: Vec<String> = self
            .query
            .split('&')
            .filter(|kv| !kv.is_empty() && kv.split('=').next() != Some(name))
            .map(str::to_string)
            .collect();
        pairs.push(format!("{name}={value}"));
        self.with(&self.path, &pairs.join("&"))
    }

    /// True for a host on this machine's loopback.
    pub fn is_loopback(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "[::1]") || self.host.starts_with("127.")
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        f.write_str(&self.path)?;
        if !self.query.is_empty() {
            write!(f, "?{}", self.query)?;
        }
        Ok(())
    }
}

/// A fetched profile.
pub struct Fetched {
    /// The URL it came from.
    pub url: Url,
    /// The body.
    pub data: Vec<u8>,
    /// Where the server's symbols are asked for.
    pub symbol_url: Url,
    /// The program, from the server's cmdline (its base name).
    pub program: Option<String>,
}

/// An HTTP client for one source.
struct Client {
    agent: ureq::Agent,
}

/// What came back.
struct Response {
    status: u16,
    reason: String,
    body: Vec<u8>,
}

impl Client {
    fn new(timeout: Duration, loopback: bool) -> Client {
        let mut config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout.min(Duration::from_secs(10))))
            .http_status_as_error(false)
            .max_redirects(5);
        if loopback {
            // Never send a request for this machine to a proxy.
            config = config.proxy(None);
        }
        Client {
            agent: config.build().into(),
        }
    }

    fn request(&self, url: &Url, post: Option<&str>) -> Result<Response> {
        let address = url.to_string();
        let result = match post {
            None => self.agent.get(&address).call(),
            Some(body) => self
                .agent
                .post(&address)
                .header("Content-Type", "text/plain")
                .send(body),
        };
        let mut response = result.map_err(|e| match url.param("seconds") {
            // A program that exits during a profile window closes the
            // connection before it answers.
            Some(seconds) if is_disconnect(&e) => anyhow::anyhow!(
                "{address}: the connection closed without an answer: the program exited (or the server went away) during the {seconds}-second profile window"
            ),
            _ if is_disconnect(&e) => {
                anyhow::anyhow!("{address}: the server closed the connection without an answer")
            }
            _ => anyhow::anyhow!("{address}: {}", describe(&e)),
        })?;
        let status = response.status();
        let reason = status.canonical_reason().unwrap_or("").to_string();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec()
            .map_err(|e| anyhow::anyhow!("{address}: reading the response: {}", describe(&e)))?;
        Ok(Response {
            status: status.as_u16(),
            reason,
            body,
        })
    }
}

/// True when the server closed the connection before its answer.
fn is_disconnect(e: &ureq::Error) -> bool {
    matches!(e, ureq::Error::Io(io) if matches!(
        io.kind(),
        std::io::ErrorKind::UnexpectedEof
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::BrokenPipe
    ))
}

/// A transport error in a few words.
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "timed out (see --timeout)".to_string(),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_string()
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            "timed out (see --timeout)".to_string()
        }
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::BodyExceedsLimit(limit) => format!("the body is larger than {limit} bytes"),
        other => {
            let text = other.to_string();
            text.lines().next().unwrap_or("").to_string()
        }
    }
}

/// The first line of a body, for error messages (at most 200 characters).
fn first_line(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(4096)]);
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(200).collect()
}

/// Fetches the profile at `url`.
pub fn fetch(url: &Url, options: &FetchOptions) -> Result<Fetched> {
    let is_cpu_profile = |path: &str| path.ends_with("/profile");
    let candidates: Vec<Url> = if url.path == "/" {
        vec![
            url.with("/pprof/profile", &url.query),
            url.with("/debug/pprof/profile", &url.query),
        ]
    } else {
        vec![url.clone()]
    };
    let mut seconds = None;
    let candidates: Vec<Url> = candidates
        .into_iter()
        .map(|u| {
            if !is_cpu_profile(&u.path) {
                return u;
            }
            match (
                options.seconds,
                u.param("seconds").and_then(|s| s.parse::<u64>().ok()),
            ) {
                (Some(s), _) => {
                    seconds = Some(s);
                    u.with_param("seconds", &s.to_string())
                }
                (None, Some(s)) => {
                    seconds = Some(s);
                    u
                }
                (None, None) => {
                    seconds = Some(30);
                    u.with_param("seconds", "30")
                }
            }
        })
        .collect();
    let timeout = match (options.timeout, seconds) {
        (Some(t), _) if t > 0.0 => Duration::from_secs_f64(t),
        (_, Some(s)) if s > 0 => Duration::from_secs_f64(s as f64 * 1.5),
        _ => Duration::from_secs(60),
    };
    let client = Client::new(timeout, url.is_loopback());
    let progress = seconds.map(|s| Progress::start(&candidates[0], s));
    let mut fetched = None;
    for (i, candidate) in candidates.iter().enumerate() {
        let response = client.request(candidate, None);
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                drop(progress);
                return Err(e);
            }
        };
        if response.status == 404 && i + 1 < candidates.len() {
            continue;
        }
        if response.status != 200 {
            drop(progress);
            bail!(
                "{candidate}: HTTP {} {}: {}",
                response.status,
                response.reason,
                first_line(&response.body)
            );
        }
        fetched = Some((candidate.clone(), response.body));
        break;
    }
    drop(progress);
    let (url, data) = fetched.expect("a candidate answered");
    if data.is_empty() {
        bail!("{url}: the body is empty, not a profile");
    }
    if cpuprof_profile::detect_format(&data).is_none() {
        bail!(
            "{url}: the body is not a profile (it starts: {:?})",
            first_line(&data)
        );
    }
    let symbol_url = symbol_url(&url);
    let cmdline = if url.path.contains("/debug/pprof/") {
        url.with("/debug/pprof/cmdline", "")
    } else {
        url.with("/pprof/cmdline", "")
    };
    // The program's name is a nicety: a server without cmdline is fine.
    let program = client
        .request(&cmdline, None)
        .ok()
        .filter(|r| r.status == 200)
        .and_then(|r| program_name(&r.body));
    Ok(Fetched {
        url,
        data,
        symbol_url,
        program,
    })
}

/// The program's base name from a `/pprof/cmdline` body (its first
/// line's first word, NUL- or space-separated); `None` when there is none.
pub fn program_name(body: &[u8]) -> Option<String> {
    let line = first_line(body);
    let first = line.split(['\0', ' ']).next().unwrap_or("");
    let base = Path::new(first).file_name()?.to_str()?.to_string();
    (!base.is_empty()).then_some(base)
}

/// `N` from a `/pprof/symbol` GET answer's `num_symbols: N` line.
pub fn num_symbols(body: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(body)
        .lines()
        .find_map(|l| l.trim().strip_prefix("num_symbols:"))
        .and_then(|n| n.trim().parse::<u64>().ok())
}

/// The symbol endpoint beside a profile URL: `../symbol` for
/// `/debug/pprof/...` and gperftools' `.../pprof/profile`, else
/// `/pprof/symbol`.
pub fn symbol_url(url: &Url) -> Url {
    match url.path.rsplit_once('/') {
        Some((dir, _)) if url.path.contains("/debug/pprof/") || url.path.contains("/pprof/") => {
            url.with(&format!("{dir}/symbol"), "")
        }
        _ => url.with("/pprof/symbol", ""),
    }
}

/// Names the locations of `profile` that have none (and an address) by
/// asking `symbol_url`; returns how many were named.
pub fn symbolize_remote(
    profile: &mut Profile,
    symbol_url: &Url,
    timeout: Duration,
) -> Result<usize> {
    let mut wanted: Vec<u64> = profile
        .locations
        .iter()
        .filter(|l| l.lines.is_empty() && l.address != 0)
        .map(|l| l.address)
        .collect();
    if wanted.is_empty() {
        return Ok(0);
    }
    wanted.sort_unstable();
    wanted.dedup();
    let client = Client::new(timeout, symbol_url.is_loopback());
    let probe = client.request(symbol_url, None)?;
    if probe.status != 200 {
        bail!(
            "{symbol_url}: HTTP {} {}: {}",
            probe.status,
            probe.reason,
            first_line(&probe.body)
        );
    }
    match num_symbols(&probe.body) {
        Some(0) => bail!("{symbol_url}: the server has no symbols (num_symbols: 0)"),
        Some(_) => {}
        None => bail!(
            "{symbol_url}: expected `num_symbols: N`, got {:?}",
            first_line(&probe.body)
        ),
    }
    let mut names: SymbolNames = Default::default();
    // Bounded requests: servers cap their bodies.
    for chunk in wanted.chunks(20_000) {
        let body: Vec<String> = chunk.iter().map(|a| format!("{a:#x}")).collect();
        let response = client.request(symbol_url, Some(&body.join("+")))?;
        if response.status != 200 {
            bail!(
                "{symbol_url}: HTTP {} {}: {}",
                response.status,
                response.reason,
                first_line(&response.body)
            );
        }
        parse_symbols(&String::from_utf8_lossy(&response.body), &mut names);
    }
    Ok(cpuprof_profile::symbolized::attach_symbols(profile, &names))
}

/// A symbol server's answers: address → inline chain, outermost first.
pub type SymbolNames = rustc_hash::FxHashMap<u64, Vec<String>>;

/// Reads `0x<hex><TAB or spaces><name>` lines (both peers' formats; a
/// name `a--b` is the inline chain, outermost first); other lines are
/// skipped.
pub fn parse_symbols(text: &str, names: &mut SymbolNames) {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let Some(rest) = line.strip_prefix("0x").or_else(|| line.strip_prefix("0X")) else {
            continue;
        };
        let end = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        let Ok(address) = u64::from_str_radix(&rest[..end], 16) else {
            continue;
        };
        let name = rest[end..].trim();
        if end == 0 || name.is_empty() || !rest[end..].starts_with([' ', '\t']) {
            continue;
        }
        let chain: Vec<String> = name
            .split("--")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        if !chain.is_empty() {
            names.insert(address, chain);
        }
    }
}

/// The countdown on stderr while an N-second profile is taken (a terminal
/// only).
struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(url: &Url, seconds: u64) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        if !std::io::stderr().is_terminal() || seconds == 0 {
            return Progress { done, thread: None };
        }
        let flag = done.clone();
        let url = url.to_string();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let elapsed = start.elapsed().as_secs();
                let line = if elapsed < seconds {
                    format!(
                        "Fetching a {seconds} s profile from {url}: {} s left",
                        seconds - elapsed
                    )
                } else {
                    format!("Fetching a {seconds} s profile from {url}: waiting for the server")
                };
                eprint!("\r{line}\x1b[K");
                let _ = std::io::stderr().flush();
                for _ in 0..10 {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            eprint!("\r\x1b[K");
        });
        Progress {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Saves a fetched profile as perl pprof does: under `$PPROF_TMPDIR`
/// (default `~/pprof`) as `<program>.<YYYYMMDD.HHMMSS>.<host>`, written
/// to a temporary name and renamed; returns the path.
pub fn save(fetched: &Fetched) -> Result<PathBuf> {
    let dir = match std::env::var_os("PPROF_TMPDIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").context("$HOME is not set (set PPROF_TMPDIR)")?)
                .join("pprof")
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let program = fetched
        .program
        .clone()
        .unwrap_or_else(|| "profile".to_string())
        .replace(['/', '\0'], "_");
    let host = fetched
        .url
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .replace(':', "_");
    let stem = format!("{program}.{}.{host}", local_time_stamp());
    let mut path = dir.join(&stem);
    let mut n = 1;
    while path.exists() {
        path = dir.join(format!("{stem}.{n}"));
        n += 1;
    }
    let temporary = dir.join(format!(".{stem}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, &fetched.data)
        .with_context(|| format!("{}: cannot write", temporary.display()))?;
    std::fs::rename(&temporary, &path).with_context(|| {
        format!(
            "{}: cannot rename to {}",
            temporary.display(),
            path.display()
        )
    })?;
    Ok(path)
}

/// `YYYYMMDD.HHMMSS` in local time.
fn local_time_stamp() -> String {
    // SAFETY: time and localtime_r with valid pointers; tm is plain data.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return now.to_string();
        }
        format!(
            "{:04}{:02}{:02}.{:02}{:02}{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("127.0.0.1:8080").unwrap();
        assert_eq!(u.to_string(), "http://127.0.0.1:8080/");
        let u = Url::parse("http://localhost:6060/debug/pprof/profile?seconds=5").unwrap();
        assert_eq!(
            (u.path.as_str(), u.param("seconds")),
            ("/debug/pprof/profile", Some("5"))
        );
        assert_eq!(u.with_param("seconds", "2").query, "seconds=2");
        let u = Url::parse("https://[::1]:443/pprof/profile").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str(), u.port),
            ("https", "[::1]", Some(443))
        );
        assert!(u.is_loopback());
        assert_eq!(Url::parse("http://example.com").unwrap().port, None);
        for not_url in [
            "prog.prof",
            "./x:1",
            "/tmp/a:80",
            "host:",
            "host:99999",
            "host:0",
            "a b:80",
            "",
        ] {
            assert_eq!(Url::parse(not_url), None, "{not_url}");
        }
    }

    #[test]
    fn symbol_urls() {
        let s = |u: &str| symbol_url(&Url::parse(u).unwrap()).to_string();
        assert_eq!(
            s("h:1/debug/pprof/profile?seconds=3"),
            "http://h:1/debug/pprof/symbol"
        );
        assert_eq!(s("h:1/pprof/profile"), "http://h:1/pprof/symbol");
        assert_eq!(s("h:1/custom"), "http://h:1/pprof/symbol");
    }

    #[test]
    fn symbol_lines_of_both_peers() {
        let mut names = Default::default();
        parse_symbols(
            "0x401000\tmain\n0x401010 burn_a\n0X401020\touter--inner\nnum_symbols: 3\n0x40\n0xzz x\n",
            &mut names,
        );
        assert_eq!(names[&0x401000], ["main"]);
        assert_eq!(names[&0x401010], ["burn_a"]);
        assert_eq!(names[&0x401020], ["outer", "inner"]);
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn cmdline_and_symbol_count_answers() {
        assert_eq!(
            program_name(b"/usr/bin/server\0--port\0\x30\n").as_deref(),
            Some("server")
        );
        assert_eq!(program_name(b"\n\n ./prog -v\n").as_deref(), Some("prog"));
        assert_eq!(program_name(b"/\n"), None);
        assert_eq!(program_name(b""), None);
        assert_eq!(num_symbols(b"num_symbols: 1\n"), Some(1));
        assert_eq!(num_symbols(b"x\r\n  num_symbols:0 \r\n"), Some(0));
        assert_eq!(num_symbols(b"num_symbols: -1\n"), None);
        assert_eq!(num_symbols(b"<html>"), None);
    }

    #[test]
    fn apply_names_innermost_first() {
        let mut builder =
            cpuprof_profile::ProfileBuilder::new(vec![cpuprof_profile::ValueType::new(
                "samples", "count",
            )]);
        let a = builder.location_at(0x10);
        let mut profile = builder.profile;
        let mut names = SymbolNames::default();
        names.insert(0x10, vec!["outer".to_string(), "inner".to_string()]);
        assert_eq!(
            cpuprof_profile::symbolized::attach_symbols(&mut profile, &names),
            1
        );
        let lines = &profile.location(a).lines;
        assert_eq!(profile.function(lines[0].function).name, "inner");
        assert_eq!(profile.function(lines[1].function).name, "outer");
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text parses or is refused; a URL prints and parses back.
        #[test]
        fn urls_print_and_parse_back(text in "\\PC{0,40}") {
            if let Some(url) = Url::parse(&text) {
                prop_assert_eq!(Url::parse(&url.to_string()), Some(url));
            }
        }

        /// URLs built from parts parse to those parts.
        #[test]
        fn built_urls_parse_to_their_parts(
            https in any::<bool>(),
            host in "[a-z][a-z0-9.-]{0,15}|127\\.0\\.0\\.[0-9]{1,3}|\\[::1\\]",
            port in 1u16..,
            path in "(/[a-z0-9_.]{1,8}){0,3}",
            query in "([a-z]{1,6}=[a-z0-9]{0,6}(&[a-z]{1,6}=[a-z0-9]{0,6}){0,2})?",
        ) {
            let scheme = if https { "https" } else { "http" };
            let mut text = format!("{scheme}://{host}:{port}{path}");
            if !query.is_empty() { text = format!("{text}?{query}"); }
            let url = Url::parse(&text).unwrap();
            prop_assert_eq!(&url.scheme, scheme);
            prop_assert_eq!(&url.host, &host);
            prop_assert_eq!(url.port, Some(port));
            prop_assert_eq!(&url.path, if path.is_empty() { "/" } else { &path });
            prop_assert_eq!(&url.query, &query);
            if !https {
                // Without a scheme: the same URL.
                prop_assert_eq!(Url::parse(&text["http://".len()..]), Some(url));
            }
        }

        /// Symbol answers: every well-formed line is read, whatever else
        /// is around it.
        #[test]
        fn symbol_answers(entries in proptest::collection::vec((any::<u64>(), "[A-Za-z_][A-Za-z0-9_:]{0,12}", any::<bool>()), 0..20), noise in "[^\n]{0,20}") {
            let mut text = format!("{noise}\n");
            let mut expected = SymbolNames::default();
            for (address, name, tab) in &entries {
                text.push_str(&format!("{address:#x}{}{name}\n", if *tab { "\t" } else { "  " }));
                expected.insert(*address, vec![name.clone()]);
            }
            let mut names = SymbolNames::default();
            parse_symbols(&text, &mut names);
            for (address, name) in &expected {
                prop_assert_eq!(names.get(address), Some(name));
            }
        }
    }
}
