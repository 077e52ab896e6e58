//! Symbols from the right files: a profile of a stripped program (from
//! our agent's `/debug/pprof/profile`, which records each mapping's build
//! id) symbolized through Debian's real `debuginfod` server, run here on
//! loopback over a directory holding the unstripped program and an archive
//! with its source; the elfutils cache reused with the server stopped; a
//! local file with another build id refused with one warning line; an
//! unreachable or silent server costing one warning; `--list` fetching a
//! source that is not on this machine.
//!
//! Every `cpuprof` run sets `DEBUGINFOD_URLS` itself (or removes it) and
//! has its own `DEBUGINFOD_CACHE_PATH`; the server runs without
//! `DEBUGINFOD_URLS` so that it never federates to the internet.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{cpuprof, texts};
use cpuprof_testkit::{require_tool, TempDir};

const PROGRAM: &str = r#"
#include <stdlib.h>
#include <time.h>
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile double sink;
#ifdef OTHER_BUILD
/* Moves every function: a build whose names at the profile's addresses
   would be wrong. */
__attribute__((noinline)) void other_build_first(double s) { sink = s * 3; }
#endif
__attribute__((noinline)) void burn_a(double s) {
    double end = now(CLOCK_THREAD_CPUTIME_ID) + s, x = 1;
    while (now(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9; /* burn_a's hot loop */
    sink = x;
}
__attribute__((noinline)) void burn_b(double s) {
    double end = now(CLOCK_THREAD_CPUTIME_ID) + s, x = 1;
    while (now(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 20000; i++) x = x * 1.0000003 + 1e-9; /* burn_b's hot loop */
    sink = x;
}
int main(int argc, char **argv) {
    double end = now(CLOCK_MONOTONIC) + atof(argv[1]);
    while (now(CLOCK_MONOTONIC) < end) { burn_a(0.02); burn_b(0.01); }
    return 0;
}
"#;

/// What every test reads: the programs, the server's directory and the
/// profiles, made once.
struct Fixture {
    _dir: TempDir,
    root: PathBuf,
    /// The unstripped program (what the server holds).
    unstripped: PathBuf,
    /// Its GNU build id.
    build_id: String,
    /// The source's path in DWARF: a directory that does not exist here.
    source: String,
    /// The server's directory.
    served: PathBuf,
    /// The agent's profile of `root/run/burn`, the stripped copy.
    stripped_profile: PathBuf,
    /// The same profile, its program mapped from `root/wrong/burn`: a
    /// build of the same source with another build id.
    wrong_profile: PathBuf,
    /// The same profile, its program mapped from `root/gone/burn`, which
    /// does not exist.
    gone_profile: PathBuf,
}

fn fixture() -> Option<&'static Fixture> {
    static FIXTURE: OnceLock<Option<Fixture>> = OnceLock::new();
    FIXTURE.get_or_init(make_fixture).as_ref()
}

fn make_fixture() -> Option<Fixture> {
    for tool in ["gcc", "objcopy", "readelf", "debuginfod", "tar"] {
        if !require_tool(tool) {
            return None;
        }
    }
    let dir = TempDir::new().unwrap();
    let root = dir.path().to_path_buf();
    let src_dir = root.join("src");
    std::fs::create_dir_all(&src_dir).unwrap();
    let src = src_dir.join("burn.c");
    std::fs::write(&src, PROGRAM).unwrap();
    // DWARF names the source under /usr/src/debug/<unique>/, which is not
    // on this machine; the archive the server reads holds it there.
    let prefix = format!(
        "/usr/src/debug/cpuprof-debuginfod-test-{}",
        std::process::id()
    );
    assert!(!Path::new(&prefix).exists());
    let map = format!("-fdebug-prefix-map={}={prefix}", src_dir.display());
    let tree = root.join("tree");
    std::fs::create_dir_all(tree.join("usr/bin")).unwrap();
    let unstripped = tree.join("usr/bin/burn");
    cpuprof_testkit::compile("gcc", &[&src], &unstripped, &["-O2", "-g", &map]);
    let tree_source = tree.join(prefix.trim_start_matches('/')).join("burn.c");
    std::fs::create_dir_all(tree_source.parent().unwrap()).unwrap();
    std::fs::copy(&src, &tree_source).unwrap();
    let served = root.join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::copy(&unstripped, served.join("burn")).unwrap();
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&tree)
        .arg("-cf")
        .arg(served.join("burn-1.0.tar"))
        .arg("usr")
        .status()
        .unwrap();
    assert!(tar.success());
    let build_id = build_id_of(&unstripped);

    let run = root.join("run/burn");
    std::fs::create_dir_all(run.parent().unwrap()).unwrap();
    let strip = Command::new("objcopy")
        .arg("--strip-all")
        .arg(&unstripped)
        .arg(&run)
        .status()
        .unwrap();
    assert!(strip.success());
    assert_eq!(build_id_of(&run), build_id, "strip keeps the build id");

    let wrong = root.join("wrong/burn");
    std::fs::create_dir_all(wrong.parent().unwrap()).unwrap();
    cpuprof_testkit::compile("gcc", &[&src], &wrong, &["-O2", "-g", "-DOTHER_BUILD"]);
    assert_ne!(build_id_of(&wrong), build_id);

    // The agent's profile of the stripped program.
    let data = agent_profile(&run);
    let stripped_profile = root.join("stripped.pb.gz");
    std::fs::write(&stripped_profile, &data).unwrap();
    let profile = cpuprof_profile::proto::read(&data).expect("the agent's profile reads");
    let run_path = run.display().to_string();
    let main = profile
        .mappings
        .iter()
        .find(|m| m.path == run_path)
        .unwrap_or_else(|| panic!("no mapping of {run_path}: {:?}", profile.mappings));
    assert_eq!(
        main.build_id, build_id,
        "the agent records the program's build id"
    );
    let moved = |to: &Path, name: &str| -> PathBuf {
        let mut p = profile.clone();
        for m in &mut p.mappings {
            if m.path == run_path {
                m.path = to.display().to_string();
            }
        }
        let file = root.join(name);
        let mut out = Vec::new();
        cpuprof_profile::proto::write(&p, &mut out).unwrap();
        std::fs::write(&file, out).unwrap();
        file
    };
    let wrong_profile = moved(&wrong, "wrong.pb.gz");
    let gone_profile = moved(&root.join("gone/burn"), "gone.pb.gz");
    Some(Fixture {
        _dir: dir,
        root,
        unstripped,
        build_id,
        source: format!("{prefix}/burn.c"),
        served,
        stripped_profile,
        wrong_profile,
        gone_profile,
    })
}

/// The GNU build id of `path`, as `readelf -n` prints it.
fn build_id_of(path: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build id in {}:\n{text}", path.display()))
        .trim()
        .to_string()
}

/// A 2-second profile of `program` from our agent's HTTP endpoint (the
/// program runs under `LD_PRELOAD` with `CPUPROFILE_HTTP`).
fn agent_profile(program: &Path) -> Vec<u8> {
    let started = common::start_under_agent_endpoint(program, &["30"]);
    let (mut child, port) = started.map_or((None, None), |(c, p)| (Some(c), Some(p)));
    let response = port.map(|port| {
        http_get(
            port,
            "/debug/pprof/profile?seconds=2",
            Duration::from_secs(30),
        )
    });
    if let Some(child) = child.as_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (status, body) = response
        .expect("the agent said where it serves")
        .expect("the agent answered");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    body
}

/// `GET path` on loopback `port` (HTTP/1.0, so the body ends with the
/// connection): (status, body), or None when nothing answered within
/// `timeout`.
fn http_get(port: u16, path: &str, timeout: Duration) -> Option<(u16, Vec<u8>)> {
    let mut stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let split = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    Some((status, response[split + 4..].to_vec()))
}

/// Debian's debuginfod on a loopback port over the fixture's directory
/// (`-F` for the ELF files, `-Z .tar` for the archive holding the
/// source), ready once it serves the source; stopped on drop.
struct Server {
    child: Option<Child>,
    port: u16,
    log: PathBuf,
}

impl Server {
    fn start(fixture: &Fixture) -> Server {
        let mut last_error = String::new();
        // A free port can be taken between our probe and the server's
        // bind: a few tries.
        for attempt in 0..3 {
            let port = free_port();
            let log = fixture.root.join(format!("debuginfod-{port}.log"));
            let child = Command::new("debuginfod")
                .args(["-F", "-Z", ".tar", "-d", ":memory:", "-p"])
                .arg(port.to_string())
                .arg(&fixture.served)
                .env_remove("DEBUGINFOD_URLS")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("debuginfod runs");
            let mut server = Server {
                child: Some(child),
                port,
                log,
            };
            // Indexed when the archive's source is served (both scans
            // done): at most 30 s.
            let path = format!("/buildid/{}/source{}", fixture.build_id, fixture.source);
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Some((200, _)) = http_get(port, &path, Duration::from_secs(5)) {
                    return server;
                }
                if let Some(Ok(Some(status))) = server.child.as_mut().map(Child::try_wait) {
                    last_error = format!("attempt {attempt}: debuginfod exited: {status}");
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if last_error.is_empty() {
                last_error = format!("attempt {attempt}: {path} not served within 30 s");
            }
            last_error.push_str(&format!("\n{}", server.log_text()));
            server.stop();
        }
        panic!("debuginfod did not start: {last_error}");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The requests the server answered, from its log.
    fn requests(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .filter_map(|l| l.split(" GET ").nth(1))
            .map(str::to_string)
            .collect()
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port with nothing listening (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// True for a `--text` report: perl's layout (`Total: N samples`) or, for
/// a profile whose values have a unit, Go's (`Showing nodes accounting
/// for …`).
fn is_text_report(out: &str) -> bool {
    out.starts_with("Total:")
        || out
            .lines()
            .any(|l| l.starts_with("Showing nodes accounting for "))
}

/// `cpuprof report ARGS` with `DEBUGINFOD_URLS` set to `urls` (removed
/// when None) and the cache in `cache`: (stdout, stderr, status).
fn report(args: &[&str], urls: Option<&str>, cache: &Path) -> (String, String, i32) {
    let mut cmd = cpuprof();
    cmd.arg("report")
        .args(args)
        .env("DEBUGINFOD_CACHE_PATH", cache)
        .env("DEBUGINFOD_TIMEOUT", "10")
        .stdin(Stdio::null());
    if let Some(urls) = urls {
        cmd.env("DEBUGINFOD_URLS", urls);
    }
    let out = cmd.output().unwrap();
    texts(&out)
}

/// The report of the profile symbolized with the unstripped program
/// itself (named on the command line): what the server must give.
fn reference(fixture: &Fixture, args: &[&str]) -> String {
    let cache = fixture.root.join("no-cache");
    let mut all: Vec<&str> = args.to_vec();
    let unstripped = fixture.unstripped.display().to_string();
    let profile = fixture.stripped_profile.display().to_string();
    all.push(&unstripped);
    all.push(&profile);
    let (out, err, status) = report(&all, None, &cache);
    assert_eq!(status, 0, "{err}");
    out
}

/// The lines of `stderr` about debuginfod.
fn debuginfod_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("debuginfod"))
        .collect()
}

/// `name`'s row in a `--lines` text report names its file and a line.
fn has_line_row(text: &str, name: &str, source: &str) -> bool {
    text.lines().any(|l| {
        let mut fields = l.split_whitespace().skip(5);
        fields.next() == Some(name)
            && fields
                .next()
                .is_some_and(|f| f.starts_with(&format!("{source}:")))
    })
}

#[test]
fn a_stripped_program_gets_names_and_lines_from_the_server_then_from_the_cache() {
    let Some(fixture) = fixture() else { return };
    let args = ["--text", "--lines", "--nodecount=1000"];
    let expected = reference(fixture, &args);
    assert!(
        has_line_row(&expected, "burn_a", &fixture.source)
            && has_line_row(&expected, "burn_b", &fixture.source),
        "{expected}"
    );
    let profile = fixture.stripped_profile.display().to_string();
    let with_profile = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain([profile.clone()])
            .collect()
    };
    let all = with_profile(&args);
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let cache = fixture.root.join("cache-stripped");

    // Without a server: the stripped program has no names for them.
    let (alone, err, status) = report(&all, None, &cache);
    assert_eq!(status, 0, "{err}");
    assert!(!alone.contains("burn_a"), "{alone}");

    let mut server = Server::start(fixture);
    let (out, err, status) = report(&all, Some(&server.url()), &cache);
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, expected, "stderr: {err}");
    assert!(!err.contains('\r'), "no progress on a pipe: {err:?}");
    // The local file is used, with the debug file fetched for it.
    let entry = cache.join(&fixture.build_id);
    assert!(
        std::fs::metadata(entry.join("debuginfo")).is_ok_and(|m| m.len() > 0),
        "{:?}",
        std::fs::read_dir(&entry).map(|d| d.count())
    );
    assert!(!entry.join("executable").exists());
    let asked = server.requests();
    assert!(
        asked
            .iter()
            .any(|r| r.starts_with(&format!("/buildid/{}/debuginfo 200", fixture.build_id))),
        "{asked:?}"
    );

    // The server stopped: the cache answers, with the same report and
    // nothing asked (misses are cached too).
    server.stop();
    let (again, err, status) = report(&all, Some(&server.url()), &cache);
    assert_eq!(status, 0, "{err}");
    assert_eq!(again, expected, "stderr: {err}");
    assert!(debuginfod_lines(&err).is_empty(), "{err}");
}

#[test]
fn a_local_file_with_another_build_id_gets_a_warning_and_addresses() {
    let Some(fixture) = fixture() else { return };
    let profile = fixture.wrong_profile.display().to_string();
    let wrong = fixture.root.join("wrong/burn").display().to_string();
    let cache = fixture.root.join("cache-wrong");
    let (out, err, status) = report(&["--text", &profile], None, &cache);
    assert_eq!(status, 0, "{err}");
    let on_disk = build_id_of(Path::new(&wrong));
    let warning = format!(
        "cpuprof: warning: {wrong}: build id {} in the profile, {on_disk} on disk; not using it",
        fixture.build_id
    );
    assert_eq!(
        err.lines()
            .filter(|l| l.contains(&wrong))
            .collect::<Vec<_>>(),
        [warning.as_str()],
        "{err}"
    );
    // Addresses, not the other build's names.
    for name in ["burn_a", "burn_b", "other_build_first", "main"] {
        assert!(
            !out.lines()
                .any(|l| l.split_whitespace().nth(5) == Some(name)),
            "{name}:\n{out}"
        );
    }
    assert!(
        out.lines().any(|l| l
            .split_whitespace()
            .nth(5)
            .is_some_and(|f| f.starts_with("0x"))),
        "{out}"
    );

    // With the server, its copy of the profile's build serves the
    // mapping: the right names.
    let server = Server::start(fixture);
    let args = ["--text", "--lines", "--nodecount=1000"];
    let (out, err, status) = report(
        &[args[0], args[1], args[2], &profile],
        Some(&server.url()),
        &cache,
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, reference(fixture, &args), "stderr: {err}");
    assert!(
        err.contains(&format!(
            "cpuprof: warning: {wrong}: build id {} in the profile, {on_disk} on disk; using the debuginfod server's copy",
            fixture.build_id
        )),
        "{err}"
    );
}

#[test]
fn a_missing_program_is_fetched_by_build_id() {
    let Some(fixture) = fixture() else { return };
    let server = Server::start(fixture);
    let cache = fixture.root.join("cache-gone");
    let args = ["--text", "--lines", "--nodecount=1000"];
    let profile = fixture.gone_profile.display().to_string();
    let (out, err, status) = report(
        &[args[0], args[1], args[2], &profile],
        Some(&server.url()),
        &cache,
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, reference(fixture, &args), "stderr: {err}");
    assert!(!err.contains("gone/burn: not found"), "{err}");
    let executable = cache.join(&fixture.build_id).join("executable");
    assert_eq!(
        std::fs::read(&executable).unwrap(),
        std::fs::read(&fixture.unstripped).unwrap()
    );
}

#[test]
fn an_unreachable_server_costs_one_warning_and_the_report_is_still_made() {
    let Some(fixture) = fixture() else { return };
    let url = format!("http://127.0.0.1:{}", free_port());
    let cache = fixture.root.join("cache-unreachable");
    // Two profiles, three files wanted (the stripped program's debug file,
    // the missing program and its debug file): one line in all.
    let stripped = fixture.stripped_profile.display().to_string();
    let gone = fixture.gone_profile.display().to_string();
    let (out, err, status) = report(&["--text", &stripped, &gone], Some(&url), &cache);
    assert_eq!(status, 0, "{err}");
    assert!(is_text_report(&out), "{out}");
    assert_eq!(
        debuginfod_lines(&err),
        [format!(
            "cpuprof: warning: debuginfod: {url}: connection refused; not asked again in this run"
        )],
        "{err}"
    );
    // A server that is down leaves no cached miss behind.
    assert!(!cache.join(&fixture.build_id).join("debuginfo").exists());
}

#[test]
fn a_server_that_does_not_answer_is_left_after_debuginfod_timeout() {
    let Some(fixture) = fixture() else { return };
    // Accepts connections and never answers, until the run is over (at
    // most 60 s); counts the connections.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let silent = std::thread::spawn(move || {
        let mut held = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => held.push(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        held.len()
    });
    let cache = fixture.root.join("cache-silent");
    // Three files wanted (the stripped program's debug file, the missing
    // program and its debug file): one request, then the server is left.
    let stripped = fixture.stripped_profile.display().to_string();
    let gone = fixture.gone_profile.display().to_string();
    let mut cmd = cpuprof();
    cmd.args(["report", "--text", &stripped, &gone])
        .env("DEBUGINFOD_URLS", format!("http://127.0.0.1:{port}"))
        .env("DEBUGINFOD_CACHE_PATH", &cache)
        .env("DEBUGINFOD_TIMEOUT", "1")
        .stdin(Stdio::null());
    let (out, err, status) = texts(&cmd.output().unwrap());
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let connections = silent.join().unwrap();
    assert_eq!(status, 0, "{err}");
    assert!(is_text_report(&out), "{out}");
    let lines = debuginfod_lines(&err);
    assert_eq!(
        lines,
        [format!(
            "cpuprof: warning: debuginfod: http://127.0.0.1:{port}: timed out (DEBUGINFOD_TIMEOUT); not asked again in this run"
        )],
        "{err}"
    );
    assert_eq!(connections, 1);
}

#[test]
fn list_fetches_a_source_that_is_not_here() {
    let Some(fixture) = fixture() else { return };
    assert!(!Path::new(&fixture.source).exists());
    let server = Server::start(fixture);
    let cache = fixture.root.join("cache-list");
    let stripped = fixture.stripped_profile.display().to_string();
    let (out, err, status) = report(&["--list=burn_a", &stripped], Some(&server.url()), &cache);
    assert_eq!(status, 0, "{err}");
    assert!(
        out.contains(&format!(
            "ROUTINE ====================== burn_a in {}",
            fixture.source
        )),
        "{out}"
    );
    assert!(out.contains("/* burn_a's hot loop */"), "{out}");
    let cached = cache
        .join(&fixture.build_id)
        .join(format!("source{}", fixture.source.replace('/', "##")));
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), PROGRAM);
    assert!(
        server.requests().iter().any(|r| r.starts_with(&format!(
            "/buildid/{}/source{} 200",
            fixture.build_id, fixture.source
        ))),
        "{:?}",
        server.requests()
    );

    // Without the server, the listing says the source is not found.
    let unstripped = fixture.unstripped.display().to_string();
    let (out, err, status) = report(
        &["--list=burn_a", &unstripped, &stripped],
        None,
        &fixture.root.join("cache-list-none"),
    );
    assert_eq!(status, 0, "{err}");
    assert!(!out.contains("/* burn_a's hot loop */"), "{out}");
    assert!(out.contains("not found"), "{out}");
}

/// A loopback server that answers `/buildid/ID/debuginfo` with `body`
/// slowly (20 pieces, 100 ms apart: a download of 2 s) and everything else
/// with 404, until `stop` is set (at most 60 s).
fn slow_server(
    build_id: &str,
    body: Vec<u8>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let wanted = format!("GET /buildid/{build_id}/debuginfo ");
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 65536 {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            if !String::from_utf8_lossy(&request).starts_with(&wanted) {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            for piece in body.chunks(body.len().div_ceil(20)) {
                if stream.write_all(piece).is_err() {
                    break;
                }
                let _ = stream.flush();
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });
    port
}

/// A download that lasts shows its progress on a terminal (tmux gives the
/// command one), erased when done; on a pipe, nothing.
#[test]
fn download_progress_on_a_terminal_only() {
    let Some(fixture) = fixture() else { return };
    if !require_tool("tmux") {
        return;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let body = std::fs::read(&fixture.unstripped).unwrap();
    let port = slow_server(&fixture.build_id, body, stop.clone());
    let url = format!("http://127.0.0.1:{port}");
    let dir = TempDir::new().unwrap();
    let socket = dir.path().join("tmux.sock");
    let tmux = |args: &[&str]| common::tmux(&socket, args);
    let command = format!(
        "DEBUGINFOD_URLS={url} DEBUGINFOD_CACHE_PATH='{}' '{}' report --text --lines '{}'; sleep 20",
        dir.path().join("cache-tty").display(),
        env!("CARGO_BIN_EXE_cpuprof"),
        fixture.stripped_profile.display()
    );
    tmux(&["new-session", "-d", "-x", "200", "-y", "30", &command]);
    let progress = format!("cpuprof: debuginfod: {}/debuginfo ", fixture.build_id);
    let mut screen = String::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && !screen.contains(&progress) {
        std::thread::sleep(Duration::from_millis(50));
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
    }
    let seen = screen
        .lines()
        .find(|l| l.contains(&progress))
        .map(str::to_string);
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && !screen.contains("Total") {
        std::thread::sleep(Duration::from_millis(100));
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p"]).stdout).into_owned();
    }
    tmux(&["kill-server"]);
    let seen = seen.unwrap_or_else(|| panic!("no progress line:\n{screen}"));
    assert!(seen.contains(" MB"), "{seen}");
    assert!(screen.contains("Total"), "{screen}");
    assert!(screen.contains("burn_a "), "{screen}");
    assert!(!screen.contains(&progress), "erased when done:\n{screen}");

    // On a pipe: the same download, nothing on stderr.
    let (out, err, status) = report(
        &["--text", &fixture.stripped_profile.display().to_string()],
        Some(&url),
        &dir.path().join("cache-pipe"),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(status, 0, "{err}");
    assert!(out.contains("burn_a"), "{out}");
    assert_eq!(err, "", "nothing on a pipe");
}

/// A gperftools profile records no build ids: the stripped file's own
/// build id asks the server for its debug file.
#[test]
fn a_gperftools_profile_of_a_stripped_program_gets_its_debug_file_by_the_files_build_id() {
    let Some(fixture) = fixture() else { return };
    let agent = Path::new(env!("CARGO_BIN_EXE_cpuprof")).with_file_name("libcpuprof.so");
    let profile = fixture.root.join("gperftools.prof");
    let status = Command::new(fixture.root.join("run/burn"))
        .arg("1")
        .env("LD_PRELOAD", &agent)
        .env("CPUPROFILE", &profile)
        .env("CPUPROFILE_FREQUENCY", "250")
        .env_remove("CPUPROFILE_HTTP")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let profile = profile.display().to_string();
    let unstripped = fixture.unstripped.display().to_string();
    let args = ["--text", "--lines", "--nodecount=1000"];
    let (expected, err, status) = report(
        &[args[0], args[1], args[2], &unstripped, &profile],
        None,
        &fixture.root.join("no-cache"),
    );
    assert_eq!(status, 0, "{err}");
    assert!(
        has_line_row(&expected, "burn_a", &fixture.source),
        "{expected}"
    );
    let server = Server::start(fixture);
    let cache = fixture.root.join("cache-gperftools");
    let (out, err, status) = report(
        &[args[0], args[1], args[2], &profile],
        Some(&server.url()),
        &cache,
    );
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, expected, "stderr: {err}");
    assert!(cache.join(&fixture.build_id).join("debuginfo").is_file());
}

/// `--symbols` with a stripped program: its debug file by its build id.
#[test]
fn symbols_of_a_stripped_program_come_from_the_server() {
    let Some(fixture) = fixture() else { return };
    if !require_tool("nm") {
        return;
    }
    let nm = Command::new("nm")
        .arg(&fixture.unstripped)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&nm.stdout).into_owned();
    let address = |name: &str| -> String {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(name))
            .and_then(|l| l.split_whitespace().next())
            .map(|a| format!("0x{a}"))
            .unwrap_or_else(|| panic!("no {name} in nm:\n{table}"))
    };
    let input = format!("{}\n{}\n", address("burn_a"), address("burn_b"));
    let run = fixture.root.join("run/burn");
    let symbols = |urls: Option<&str>, cache: &str| -> (String, String, i32) {
        let mut cmd = cpuprof();
        cmd.args(["report", "--symbols"])
            .arg(&run)
            .env("DEBUGINFOD_CACHE_PATH", fixture.root.join(cache));
        if let Some(urls) = urls {
            cmd.env("DEBUGINFOD_URLS", urls);
        }
        texts(&cpuprof_testkit::run_with_stdin(&mut cmd, &input))
    };
    let (out, err, status) = symbols(None, "cache-symbols-none");
    assert_eq!(status, 0, "{err}");
    assert!(!out.contains("burn_"), "{out}");
    let server = Server::start(fixture);
    let (out, err, status) = symbols(Some(&server.url()), "cache-symbols");
    assert_eq!(status, 0, "{err}");
    assert_eq!(out, "burn_a\nburn_b\n", "{err}");
}

/// A build id no server has: one warning naming what was missing, an
/// empty file in the cache marks the miss (as elfutils does), and the next
/// run does not ask again.
#[test]
fn a_build_id_no_server_has_is_one_warning_and_is_not_asked_again() {
    let Some(fixture) = fixture() else { return };
    let fake = "00112233445566778899aabbccddeeff00112233";
    let data = std::fs::read(&fixture.gone_profile).unwrap();
    let mut profile = cpuprof_profile::proto::read(&data).unwrap();
    let gone = fixture.root.join("gone/burn").display().to_string();
    for m in &mut profile.mappings {
        if m.path == gone {
            m.build_id = fake.into();
        }
    }
    let path = fixture.root.join("unknown-build.pb.gz");
    let mut out = Vec::new();
    cpuprof_profile::proto::write(&profile, &mut out).unwrap();
    std::fs::write(&path, out).unwrap();
    let path = path.display().to_string();

    let server = Server::start(fixture);
    let cache = fixture.root.join("cache-unknown");
    let (out, err, status) = report(&["--text", &path], Some(&server.url()), &cache);
    assert_eq!(status, 0, "{err}");
    assert!(is_text_report(&out), "{out}");
    assert_eq!(
        debuginfod_lines(&err),
        [format!(
            "cpuprof: warning: debuginfod: 2 files on no server ({fake}/executable, {fake}/debuginfo)"
        )],
        "{err}"
    );
    assert!(err.contains(&format!("{gone}: not found")), "{err}");
    for name in ["executable", "debuginfo"] {
        let miss = cache.join(fake).join(name);
        assert_eq!(std::fs::metadata(&miss).map(|m| m.len()).ok(), Some(0));
    }
    let asked = |log: &[String]| log.iter().filter(|r| r.contains(fake)).count();
    assert_eq!(asked(&server.requests()), 2, "{:?}", server.requests());

    // Again: the cached misses answer; nothing asked, nothing said.
    let (again, err, status) = report(&["--text", &path], Some(&server.url()), &cache);
    assert_eq!(status, 0, "{err}");
    assert_eq!(again, out);
    assert!(debuginfod_lines(&err).is_empty(), "{err}");
    assert_eq!(asked(&server.requests()), 2, "{:?}", server.requests());
}
