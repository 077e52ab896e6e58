//! cpuprof's web UI: `cpuprof report --http=[HOST]:[PORT]`.
//!
//! A [`Server`] serves one loaded [`Session`] to a browser. Every page is a
//! view of the session under `/ui/` (Go pprof's routes: `top`, `graph`,
//! `flamegraph`, `peek`, `source`, `disasm`, `download`, and
//! `download/speedscope` for speedscope's format), and its query
//! string carries every setting by the URL names of the driver's settings
//! table ([`cpuprof_driver::settings::SETTINGS`]), so the state lives in
//! the URL: views are shareable, the back button works, and the server
//! keeps no per-client state. Every report comes from the driver's one
//! dispatch, [`Session::run`]; this crate only turns a request into a
//! [`Config`] and a command, and the output into a page ([`views`]).
//!
//! - [`Server`]: binds (loopback unless a host is named), answers on a
//!   bounded pool of worker threads, refuses a `Host` header that is not
//!   the bound loopback name (DNS rebinding) and bounds request sizes.
//! - [`views`]: the routes and their pages; the assets (script, style) are
//!   embedded in the binary, so the page needs no network.
//! - [`configs`]: saved named configurations (the user's config
//!   directory, as Go pprof's `settings.json`).
#![deny(missing_docs)]

pub mod configs;
pub mod views;

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use cpuprof_driver::{Config, Session};

/// The longest request target accepted (longer: 414).
pub const MAX_URL: usize = 16 * 1024;
/// The largest request body accepted (larger: 413).
pub const MAX_BODY: usize = 64 * 1024;
/// The worker threads answering requests.
pub const WORKERS: usize = 4;

/// A request as the views see it: method, target, the headers that matter.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path and query (`/ui/top?f=burn`).
    pub url: String,
    /// The `Host` header.
    pub host: Option<String>,
    /// The `Origin` header (checked on POST).
    pub origin: Option<String>,
    /// The body (POST), at most [`MAX_BODY`] bytes.
    pub body: Vec<u8>,
}

/// A response before it is written.
#[derive(Clone, Debug)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Content-Type.
    pub content_type: &'static str,
    /// More headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with `status`, `content_type` and `body`.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A plain text response.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body.into())
    }
}

/// Where to listen: `--http`'s `[HOST]:[PORT]` (an empty host is
/// 127.0.0.1, an empty port a free one).
pub fn parse_http_address(spec: &str) -> Result<(String, u16)> {
    let Some((host, port)) = spec.rsplit_once(':') else {
        bail!("--http={spec}: expected [HOST]:[PORT], e.g. localhost:8080 or :0");
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    let port = if port.is_empty() {
        0
    } else {
        port.parse::<u16>()
            .with_context(|| format!("--http={spec}: {port} is not a port number"))?
    };
    Ok((host.to_string(), port))
}

/// The web UI's server over one session.
pub struct Server {
    http: Arc<tiny_http::Server>,
    app: Arc<views::App>,
    url: String,
}

impl Server {
    /// Binds `spec` (`[HOST]:[PORT]`) for `session`; `config` holds the
    /// command line's settings, which URLs change.
    pub fn bind(session: &'static Session, spec: &str, config: Config) -> Result<Server> {
        let (host, port) = parse_http_address(spec)?;
        let listener = TcpListener::bind((host.as_str(), port))
            .with_context(|| format!("--http: cannot listen on {host}:{port}"))?;
        let addr = listener.local_addr()?;
        let loopback = addr.ip().is_loopback();
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| anyhow::anyhow!("--http: {e}"))?;
        let shown_host = match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) if ip == Ipv4Addr::UNSPECIFIED => host.clone(),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let shown_host = if host == "localhost" {
            "localhost".to_string()
        } else {
            shown_host
        };
        let url = format!("http://{shown_host}:{}", addr.port());
        let app = views::App::new(session, config, allowed_hosts(loopback, addr), url.clone());
        Ok(Server {
            http: Arc::new(http),
            app: Arc::new(app),
            url,
        })
    }

    /// The address to open (`http://127.0.0.1:PORT`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers requests until the process ends, on [`WORKERS`] threads.
    pub fn run(self) -> Result<()> {
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let http = Arc::clone(&self.http);
                let app = Arc::clone(&self.app);
                std::thread::spawn(move || {
                    while let Ok(request) = http.recv() {
                        serve_one(&app, request);
                    }
                })
            })
            .collect();
        for worker in workers {
            let _ = worker.join();
        }
        Ok(())
    }
}

/// The `Host` headers accepted: with a loopback address, only its loopback
/// names with the bound port (`None`: any, a host was named).
fn allowed_hosts(loopback: bool, addr: SocketAddr) -> Option<Vec<String>> {
    loopback.then(|| {
        let port = addr.port();
        let mut names = vec![
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        if let IpAddr::V4(ip) = addr.ip() {
            names.push(format!("{ip}:{port}"));
        }
        names
    })
}

fn header(request: &tiny_http::Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

fn serve_one(app: &views::App, mut request: tiny_http::Request) {
    let url = request.url().to_string();
    let response = if url.len() > MAX_URL {
        Response::text(414, "request target too long\n")
    } else if request.body_length().unwrap_or(0) > MAX_BODY {
        Response::text(413, "request body too large\n")
    } else {
        let mut body = Vec::new();
        let read = request
            .as_reader()
            .take(MAX_BODY as u64 + 1)
            .read_to_end(&mut body);
        if read.is_err() || body.len() > MAX_BODY {
            Response::text(413, "request body too large\n")
        } else {
            let req = Request {
                method: request.method().as_str().to_string(),
                url,
                host: header(&request, "Host"),
                origin: header(&request, "Origin"),
                body,
            };
            let started = std::time::Instant::now();
            let mut response = app.handle(&req);
            // The server's own time, for the benchmark and the browser's
            // network panel.
            response.headers.push((
                "Server-Timing",
                format!("app;dur={:.1}", started.elapsed().as_secs_f64() * 1e3),
            ));
            response
        }
    };
    let mut out = tiny_http::Response::from_data(response.body)
        .with_status_code(response.status)
        .with_header(
            tiny_http::Header::from_bytes("Content-Type", response.content_type)
                .expect("valid header"),
        );
    // Nothing is kept by the browser (every page is computed from the
    // session's settings) but what says otherwise (the versioned assets).
    let cached = response.headers.iter().any(|(n, _)| *n == "Cache-Control");
    let fixed = [
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
        ("Referrer-Policy", "no-referrer"),
    ];
    for (name, value) in fixed {
        if cached && name == "Cache-Control" {
            continue;
        }
        out.add_header(tiny_http::Header::from_bytes(name, value).expect("valid header"));
    }
    for (name, value) in &response.headers {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            out.add_header(h);
        }
    }
    let _ = request.respond(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_addresses() {
        assert_eq!(parse_http_address(":").unwrap(), ("127.0.0.1".into(), 0));
        assert_eq!(
            parse_http_address("localhost:8080").unwrap(),
            ("localhost".into(), 8080)
        );
        assert_eq!(parse_http_address("[::1]:9").unwrap(), ("::1".into(), 9));
        assert!(parse_http_address("8080").is_err());
        assert!(parse_http_address(":http").is_err());
    }
}
