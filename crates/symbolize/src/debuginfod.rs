//! A debuginfod client (the elfutils protocol): executables, debug files
//! and sources fetched by build id from the servers of `DEBUGINFOD_URLS`,
//! kept in the cache that elfutils' own client uses, so that gdb,
//! `debuginfod-find` and cpuprof share their downloads.
//!
//! - Requests: `GET URL/buildid/ID/executable`, `.../debuginfo`,
//!   `.../source/ABSOLUTE-PATH` (the path percent-encoded but for its
//!   `/`), each server of the list in turn until one answers 200.
//! - Cache (as elfutils 0.188 lays it out, checked with
//!   `debuginfod-find`): `$DEBUGINFOD_CACHE_PATH`, else
//!   `$XDG_CACHE_HOME/debuginfod_client`, else
//!   `~/.cache/debuginfod_client`; files `<cache>/<id>/executable`,
//!   `<cache>/<id>/debuginfo`, `<cache>/<id>/source##dir##file.c` (each `/`
//!   of the path as `##`). A download is written to a temporary name in
//!   the same directory and renamed, so a cache file is always complete.
//! - Misses: as elfutils, a request that no server could answer (404) leaves
//!   an empty file in its place, and an empty file younger than
//!   `<cache>/cache_miss_s` seconds (default 600) is a miss without asking
//!   again.
//! - Time: `DEBUGINFOD_TIMEOUT` seconds (default 90, 0 for none) to
//!   connect, to receive the response's head and between two reads of its
//!   body; `DEBUGINFOD_MAXTIME` seconds for a whole request, if set. A
//!   server that fails at the transport level (refused, timed out, 5xx) is
//!   not asked again during the run.
//! - Problems become one [`Warning`] for the whole run
//!   ([`Debuginfod::take_warning`]), never an error.
//! - Progress: on a terminal (stderr), a download that lasts over half a
//!   second shows its bytes received on one line, erased when it is done;
//!   nothing on a pipe.

use std::fmt;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::Warning;

/// How long an empty cache file stands for "no server has it", when the
/// cache does not say (elfutils' `cache_miss_s` default).
const DEFAULT_CACHE_MISS: Duration = Duration::from_secs(600);

/// elfutils' default `DEBUGINFOD_TIMEOUT`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// What to fetch for a build id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Artifact<'a> {
    /// The executable or shared library itself.
    Executable,
    /// Its debug information (a separate debug file, or the unstripped
    /// file).
    Debuginfo,
    /// A source file, by the absolute path DWARF gives it.
    Source(&'a str),
}

impl fmt::Display for Artifact<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Artifact::Executable => f.write_str("executable"),
            Artifact::Debuginfo => f.write_str("debuginfo"),
            Artifact::Source(path) => write!(f, "source {path}"),
        }
    }
}

/// A debuginfod client: the servers, the cache and what went wrong so
/// far. Clones share their state (the servers found down, the one
/// warning).
#[derive(Clone)]
pub struct Debuginfod {
    inner: Arc<Inner>,
}

struct Inner {
    urls: Vec<String>,
    cache: PathBuf,
    timeout: Option<Duration>,
    max_time: Option<Duration>,
    progress: bool,
    agents: OnceLock<(ureq::Agent, ureq::Agent)>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Servers that failed at the transport level, with why: not asked
    /// again.
    down: Vec<(String, String)>,
    /// What no server had (build id and artifact), in order.
    missing: Vec<String>,
    /// The run's warning was taken.
    warned: bool,
}

impl fmt::Debug for Debuginfod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Debuginfod")
            .field("urls", &self.inner.urls)
            .field("cache", &self.inner.cache)
            .field("timeout", &self.inner.timeout)
            .finish()
    }
}

/// The servers of a `DEBUGINFOD_URLS` value: separated by spaces (or
/// tabs, newlines), without trailing `/`.
pub fn urls_from(value: &str) -> Vec<String> {
    value
        .split_ascii_whitespace()
        .map(|u| u.trim_end_matches('/').to_string())
        .filter(|u| !u.is_empty())
        .collect()
}

/// The cache directory from the environment (`get` reads a variable):
/// `$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`,
/// else `$HOME/.cache/debuginfod_client`; empty values count as unset.
pub fn cache_dir_from(get: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |name: &str| get(name).filter(|v| !v.is_empty());
    if let Some(path) = set("DEBUGINFOD_CACHE_PATH") {
        return Some(PathBuf::from(path));
    }
    if let Some(xdg) = set("XDG_CACHE_HOME") {
        return Some(Path::new(&xdg).join("debuginfod_client"));
    }
    set("HOME").map(|home| Path::new(&home).join(".cache").join("debuginfod_client"))
}

/// `DEBUGINFOD_TIMEOUT`: seconds, default 90; 0 (or a value that is not
/// a number) means no timeout, as elfutils reads it with `atoi`.
pub fn timeout_from(value: Option<&str>) -> Option<Duration> {
    match value {
        None => Some(DEFAULT_TIMEOUT),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(0) | Err(_) => None,
            Ok(s) => Some(Duration::from_secs(s)),
        },
    }
}

/// The build id as a request and cache name: lowercase hex of an even
/// number of digits (at least 2 bytes), else None.
pub fn normalize_build_id(build_id: &str) -> Option<String> {
    let id = build_id.trim().to_ascii_lowercase();
    (id.len() >= 4 && id.len() % 2 == 0 && id.bytes().all(|b| b.is_ascii_hexdigit())).then_some(id)
}

/// The request path for `artifact` of `build_id` (normalized):
/// `/buildid/ID/executable`, `/buildid/ID/debuginfo`,
/// `/buildid/ID/source/PATH` (PATH absolute, percent-encoded but for `/`).
pub fn request_path(build_id: &str, artifact: Artifact<'_>) -> String {
    match artifact {
        Artifact::Executable => format!("/buildid/{build_id}/executable"),
        Artifact::Debuginfo => format!("/buildid/{build_id}/debuginfo"),
        Artifact::Source(path) => {
            let mut out = format!("/buildid/{build_id}/source");
            if !path.starts_with('/') {
                out.push('/');
            }
            for &b in path.as_bytes() {
                if b.is_ascii_alphanumeric() || b"/-._~+".contains(&b) {
                    out.push(b as char);
                } else {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            out
        }
    }
}

/// The cache file's name for `artifact` in its build id's directory:
/// `executable`, `debuginfo`, or `source` followed by the absolute path
/// with each `/` as `##` (elfutils' layout).
pub fn cache_file_name(artifact: Artifact<'_>) -> String {
    match artifact {
        Artifact::Executable => "executable".into(),
        Artifact::Debuginfo => "debuginfo".into(),
        Artifact::Source(path) => {
            let mut name = String::from("source");
            if !path.starts_with('/') {
                name.push_str("##");
            }
            name.push_str(&path.replace('/', "##"));
            name
        }
    }
}

/// True when a source path can be asked for: absolute, without `..` or
/// NUL (a cache name must stay in its directory and be a file name).
fn valid_source_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains('\0')
        && !path.split('/').any(|c| c == "..")
        && cache_file_name(Artifact::Source(path)).len() <= 255
}

/// What one request to one server gave.
enum Answer {
    /// Saved at this path.
    Saved(PathBuf),
    /// The server has no such file (an HTTP 4xx).
    NotThere,
    /// The server is down, refused, timed out or failed (5xx): why.
    Down(String),
}

impl Debuginfod {
    /// The client `DEBUGINFOD_URLS` asks for, if it names a server (and a
    /// cache directory can be found).
    pub fn from_env() -> Option<Debuginfod> {
        let get = |name: &str| std::env::var(name).ok();
        let urls = urls_from(&get("DEBUGINFOD_URLS").unwrap_or_default());
        if urls.is_empty() {
            return None;
        }
        let cache = cache_dir_from(&get)?;
        let mut client = Debuginfod::new(
            urls,
            cache,
            timeout_from(get("DEBUGINFOD_TIMEOUT").as_deref()),
        );
        let max_time = get("DEBUGINFOD_MAXTIME")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        if let Some(inner) = Arc::get_mut(&mut client.inner) {
            inner.max_time = max_time;
        }
        Some(client)
    }

    /// A client of `urls` (without trailing `/`) caching in `cache`, with
    /// `timeout` to connect, to get an answer and between reads (None: no
    /// limit). Progress shows when stderr is a terminal.
    pub fn new(urls: Vec<String>, cache: PathBuf, timeout: Option<Duration>) -> Debuginfod {
        Debuginfod {
            inner: Arc::new(Inner {
                urls,
                cache,
                timeout,
                max_time: None,
                progress: std::io::stderr().is_terminal(),
                agents: OnceLock::new(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// The servers asked, in order.
    pub fn urls(&self) -> &[String] {
        &self.inner.urls
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.inner.cache
    }

    /// Where `artifact` of `build_id` is (or would be) cached; None for an
    /// invalid build id or source path.
    pub fn cache_path(&self, build_id: &str, artifact: Artifact<'_>) -> Option<PathBuf> {
        let id = normalize_build_id(build_id)?;
        if let Artifact::Source(path) = artifact {
            if !valid_source_path(path) {
                return None;
            }
        }
        Some(self.inner.cache.join(id).join(cache_file_name(artifact)))
    }

    /// The file for `artifact` of `build_id`: from the cache, else from
    /// the first server that has it (then cached). None when no server
    /// has it, every server is down, or the build id or path is invalid;
    /// what went wrong is kept for [`Debuginfod::take_warning`].
    pub fn fetch(&self, build_id: &str, artifact: Artifact<'_>) -> Option<PathBuf> {
        let id = normalize_build_id(build_id)?;
        let target = self.cache_path(&id, artifact)?;
        match std::fs::metadata(&target) {
            Ok(m) if m.is_file() && m.len() > 0 => return Some(target),
            Ok(m) if m.is_file() && self.recent_miss(&m) => return None,
            _ => {}
        }
        let path = request_path(&id, artifact);
        let mut answered_missing = false;
        for url in &self.inner.urls {
            if self.is_down(url) {
                continue;
            }
            match self.request(url, &path, &target, &id, artifact) {
                Answer::Saved(p) => return Some(p),
                Answer::NotThere => answered_missing = true,
                Answer::Down(why) => {
                    if let Ok(mut state) = self.inner.state.lock() {
                        if !state.down.iter().any(|(u, _)| u == url) {
                            state.down.push((url.clone(), why));
                        }
                    }
                }
            }
        }
        if let Ok(mut state) = self.inner.state.lock() {
            if answered_missing {
                state.missing.push(format!("{id}/{artifact}"));
            }
        }
        if answered_missing && !self.any_down() {
            // Every server said no: remember it, as elfutils does.
            if let Some(dir) = target.parent() {
                if std::fs::create_dir_all(dir).is_ok() && !target.exists() {
                    let _ = std::fs::File::create(&target);
                }
            }
        }
        None
    }

    /// The run's one warning about the servers, if anything went wrong
    /// since the client was made and it was not taken yet: the servers
    /// found down, else what no server had.
    pub fn take_warning(&self) -> Option<Warning> {
        let mut state = self.inner.state.lock().ok()?;
        if state.warned {
            return None;
        }
        let message = if let Some((url, why)) = state.down.first() {
            let others = state.down.len() - 1;
            format!(
                "debuginfod: {url}: {why}{}; not asked again in this run",
                if others > 0 {
                    format!(" (and {others} other server{} down)", plural(others))
                } else {
                    String::new()
                }
            )
        } else if !state.missing.is_empty() {
            let n = state.missing.len();
            let shown: Vec<&str> = state.missing.iter().take(3).map(String::as_str).collect();
            format!(
                "debuginfod: {n} file{} on no server ({}{})",
                plural(n),
                shown.join(", "),
                if n > 3 { ", …" } else { "" }
            )
        } else {
            return None;
        };
        state.warned = true;
        Some(Warning::new(message))
    }

    fn is_down(&self, url: &str) -> bool {
        self.inner
            .state
            .lock()
            .is_ok_and(|s| s.down.iter().any(|(u, _)| u == url))
    }

    fn any_down(&self) -> bool {
        self.inner.state.lock().is_ok_and(|s| !s.down.is_empty())
    }

    /// True when `meta` (an empty cache file) is a miss recorded less than
    /// `cache_miss_s` ago.
    fn recent_miss(&self, meta: &std::fs::Metadata) -> bool {
        let limit = std::fs::read_to_string(self.inner.cache.join("cache_miss_s"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_CACHE_MISS);
        meta.modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age < limit)
    }

    /// The HTTP agents: (direct, through the environment's proxy).
    fn agent(&self, url: &str) -> &ureq::Agent {
        let (direct, proxied) = self.inner.agents.get_or_init(|| {
            let t = self.inner.timeout;
            let base = || {
                ureq::Agent::config_builder()
                    .timeout_connect(t)
                    .timeout_recv_response(t)
                    .timeout_per_read(t)
                    .timeout_global(self.inner.max_time)
                    .http_status_as_error(false)
                    .max_redirects(5)
            };
            (base().proxy(None).build().into(), base().build().into())
        });
        if is_loopback(url) {
            direct
        } else {
            proxied
        }
    }

    /// Asks `url` for `path`, saving a 200 answer's body at `target`.
    fn request(
        &self,
        url: &str,
        path: &str,
        target: &Path,
        id: &str,
        artifact: Artifact<'_>,
    ) -> Answer {
        let address = format!("{url}{path}");
        let mut response = match self.agent(url).get(&address).call() {
            Ok(r) => r,
            Err(e) => return Answer::Down(describe(&e)),
        };
        let status = response.status().as_u16();
        if (400..500).contains(&status) {
            return Answer::NotThere;
        }
        if status != 200 {
            return Answer::Down(format!(
                "HTTP {status} {}",
                response.status().canonical_reason().unwrap_or("")
            ));
        }
        // The body's length, when it is what we read (ureq inflates a
        // compressed body: then the header counts compressed bytes).
        let encoded = response
            .headers()
            .get("content-encoding")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| !v.trim().eq_ignore_ascii_case("identity"));
        let length = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|_| !encoded);
        let Some(dir) = target.parent() else {
            return Answer::Down("no cache directory".into());
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Answer::Down(format!("cache {}: {e}", dir.display()));
        }
        let temp = dir.join(format!(
            ".{}.{}.tmp",
            target
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("part"),
            std::process::id()
        ));
        let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();
        let result = (|| -> Result<u64, String> {
            let mut file = std::fs::File::create(&temp)
                .map_err(|e| format!("cache {}: {e}", temp.display()))?;
            let mut progress = Progress::new(self.inner.progress, id, artifact, length);
            let mut buffer = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            loop {
                let n = match reader.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("reading {address}: {e}")),
                };
                file.write_all(&buffer[..n])
                    .map_err(|e| format!("cache {}: {e}", temp.display()))?;
                total += n as u64;
                progress.update(total);
            }
            if let Some(expected) = length {
                if total != expected {
                    return Err(format!(
                        "{address}: {total} bytes received of the {expected} announced"
                    ));
                }
            }
            file.sync_all()
                .map_err(|e| format!("cache {}: {e}", temp.display()))?;
            Ok(total)
        })();
        match result {
            Ok(0) => {
                let _ = std::fs::remove_file(&temp);
                Answer::NotThere
            }
            Ok(_) => match std::fs::rename(&temp, target) {
                Ok(()) => Answer::Saved(target.to_path_buf()),
                Err(e) => {
                    let _ = std::fs::remove_file(&temp);
                    Answer::Down(format!("cache {}: {e}", target.display()))
                }
            },
            Err(why) => {
                let _ = std::fs::remove_file(&temp);
                Answer::Down(why)
            }
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// True for `http://127.x`, `localhost` and `[::1]` servers: never through
/// a proxy.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A transport error in a few words.
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "timed out (DEBUGINFOD_TIMEOUT)".to_string(),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_string()
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            "timed out (DEBUGINFOD_TIMEOUT)".to_string()
        }
        ureq::Error::HostNotFound => "host not found".to_string(),
        other => {
            let text = other.to_string();
            text.lines().next().unwrap_or("").to_string()
        }
    }
}

/// The progress line of one download, on a terminal only: shown once the
/// download has lasted half a second, redrawn at most 10 times a second,
/// erased at the end.
struct Progress {
    enabled: bool,
    what: String,
    length: Option<u64>,
    start: Instant,
    last: Option<Instant>,
}

impl Progress {
    fn new(enabled: bool, id: &str, artifact: Artifact<'_>, length: Option<u64>) -> Progress {
        Progress {
            enabled,
            what: format!("{id}/{artifact}"),
            length,
            start: Instant::now(),
            last: None,
        }
    }

    fn update(&mut self, received: u64) {
        if !self.enabled || self.start.elapsed() < Duration::from_millis(500) {
            return;
        }
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        let mb = |b: u64| b as f64 / 1e6;
        let line = match self.length {
            Some(total) => format!(
                "cpuprof: debuginfod: {} {:.1} of {:.1} MB",
                self.what,
                mb(received),
                mb(total)
            ),
            None => format!("cpuprof: debuginfod: {} {:.1} MB", self.what, mb(received)),
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}\x1b[K");
        let _ = err.flush();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.last.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_cache_directory_follows_elfutils_order() {
        let all = [
            ("DEBUGINFOD_CACHE_PATH", "/c"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(cache_dir_from(&env(&all)), Some(PathBuf::from("/c")));
        assert_eq!(
            cache_dir_from(&env(&all[1..])),
            Some(PathBuf::from("/x/debuginfod_client"))
        );
        assert_eq!(
            cache_dir_from(&env(&all[2..])),
            Some(PathBuf::from("/h/.cache/debuginfod_client"))
        );
        // Empty values are unset.
        let empty = [
            ("DEBUGINFOD_CACHE_PATH", ""),
            ("XDG_CACHE_HOME", ""),
            ("HOME", "/h"),
        ];
        assert_eq!(
            cache_dir_from(&env(&empty)),
            Some(PathBuf::from("/h/.cache/debuginfod_client"))
        );
        assert_eq!(cache_dir_from(&env(&[])), None);
    }

    #[test]
    fn urls_are_split_on_white_space_without_trailing_slashes() {
        assert_eq!(
            urls_from(" http://a:1/  https://b.example/x/\thttp://[::1]:8002\n"),
            vec!["http://a:1", "https://b.example/x", "http://[::1]:8002"]
        );
        assert!(urls_from("   ").is_empty());
    }

    #[test]
    fn the_timeout_defaults_to_90_seconds_and_0_means_none() {
        assert_eq!(timeout_from(None), Some(Duration::from_secs(90)));
        assert_eq!(timeout_from(Some("5")), Some(Duration::from_secs(5)));
        assert_eq!(timeout_from(Some(" 7 ")), Some(Duration::from_secs(7)));
        assert_eq!(timeout_from(Some("0")), None);
        assert_eq!(timeout_from(Some("x")), None);
    }

    #[test]
    fn requests_and_cache_names_as_elfutils_composes_them() {
        let id = "fddcac85522996ee3436fefc694ab0d6b4e4cad3";
        assert_eq!(
            request_path(id, Artifact::Executable),
            format!("/buildid/{id}/executable")
        );
        assert_eq!(
            request_path(id, Artifact::Debuginfo),
            format!("/buildid/{id}/debuginfo")
        );
        assert_eq!(
            request_path(id, Artifact::Source("/tmp/dbgi/src/prog.c")),
            format!("/buildid/{id}/source/tmp/dbgi/src/prog.c")
        );
        assert_eq!(
            request_path(id, Artifact::Source("/a b/c#d%/é.c")),
            format!("/buildid/{id}/source/a%20b/c%23d%25/%C3%A9.c")
        );
        // What debuginfod-find 0.188 wrote for that source.
        assert_eq!(
            cache_file_name(Artifact::Source("/tmp/dbgi/src/prog.c")),
            "source##tmp##dbgi##src##prog.c"
        );
        assert_eq!(cache_file_name(Artifact::Executable), "executable");
        assert_eq!(cache_file_name(Artifact::Debuginfo), "debuginfo");
        let client = Debuginfod::new(vec![], PathBuf::from("/c"), None);
        assert_eq!(
            client.cache_path(&id.to_uppercase(), Artifact::Debuginfo),
            Some(PathBuf::from(format!("/c/{id}/debuginfo")))
        );
        assert_eq!(
            client.cache_path(id, Artifact::Source("/x/y.c")),
            Some(PathBuf::from(format!("/c/{id}/source##x##y.c")))
        );
    }

    #[test]
    fn invalid_build_ids_and_source_paths_are_never_asked_for() {
        assert_eq!(normalize_build_id("ABcd"), Some("abcd".into()));
        for bad in ["", "ab", "abc", "../../etc", "zz11", "ab/cd"] {
            assert_eq!(normalize_build_id(bad), None, "{bad}");
        }
        let client = Debuginfod::new(vec![], PathBuf::from("/c"), None);
        for bad in ["relative.c", "/a/../b.c", "/a\0b"] {
            assert_eq!(client.cache_path("abcd", Artifact::Source(bad)), None);
        }
        let long = format!("/{}", "x".repeat(300));
        assert_eq!(client.cache_path("abcd", Artifact::Source(&long)), None);
    }

    #[test]
    fn loopback_servers_bypass_proxies() {
        assert!(is_loopback("http://127.0.0.1:8002"));
        assert!(is_loopback("http://localhost:8002/x"));
        assert!(is_loopback("http://[::1]:8002"));
        assert!(!is_loopback("https://debuginfod.debian.net"));
        assert!(!is_loopback("http://127.0.0.1.example.com/"));
        assert!(!is_loopback("http://127.0.0.1@10.0.0.1/"));
    }

    #[test]
    fn a_cached_miss_answers_without_a_server_and_a_cached_file_is_served() {
        let dir = tempfile::tempdir().unwrap();
        // A server that cannot be reached: port 9 of loopback is closed
        // (discard) on test machines; nothing must be asked anyway.
        let client = Debuginfod::new(
            vec!["http://127.0.0.1:9".into()],
            dir.path().to_path_buf(),
            Some(Duration::from_secs(2)),
        );
        let id = "00112233445566778899aabbccddeeff00112233";
        let have = client.cache_path(id, Artifact::Executable).unwrap();
        std::fs::create_dir_all(have.parent().unwrap()).unwrap();
        std::fs::write(&have, b"\x7fELF").unwrap();
        assert_eq!(client.fetch(id, Artifact::Executable), Some(have));
        let miss = client.cache_path(id, Artifact::Debuginfo).unwrap();
        std::fs::write(&miss, b"").unwrap();
        assert_eq!(client.fetch(id, Artifact::Debuginfo), None);
        assert!(client.take_warning().is_none(), "nothing was asked");
    }
}
