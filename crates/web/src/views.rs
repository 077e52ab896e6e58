//! The routes and their pages.
//!
//! Each view is a page under `/ui/` whose query string is the whole state:
//! the settings by their URL names ([`Config::with_query`] over the
//! command line's settings), and for Peek, Source and Disassembly the
//! functions asked for in `f` (the selection, as Go pprof passes it). The
//! report itself is always [`Session::run`]'s output for one command of
//! the driver's table; the page wraps it in the common header (views,
//! Refine, search, sample type, granularity, configurations, download)
//! and the legend. The page's script ([`SCRIPT`]) only edits the URL and
//! highlights what is already on the page.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use cpuprof_driver::commands::command;
use cpuprof_driver::settings::{query_pairs, GRANULARITIES};
use cpuprof_driver::{Config, Destination, Session};

use crate::{configs, Request, Response};

/// The page's script.
pub const SCRIPT: &str = include_str!("assets/ui.js");
/// The page's style sheet.
pub const STYLE: &str = include_str!("assets/ui.css");

/// The assets' version in their URLs (`?v=`, a hash of both): pages name
/// them so, and the browser keeps them (a range selection loads a page
/// whose script and style it already has); another build's assets have
/// another URL.
fn asset_version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        // FNV-1a, 64 bits.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in SCRIPT.bytes().chain(STYLE.bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    })
}

/// An asset's response: kept by the browser (its URL changes with it).
fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = Response::new(200, content_type, body);
    r.headers.push((
        "Cache-Control",
        "public, max-age=31536000, immutable".to_string(),
    ));
    r
}

/// The views: route, menu label, the report command behind it.
pub const VIEWS: &[(&str, &str)] = &[
    ("top", "Top"),
    ("graph", "Graph"),
    ("flamegraph", "Flame Graph"),
    ("peek", "Peek"),
    ("source", "Source"),
    ("disasm", "Disassemble"),
    ("timeline", "Timeline"),
];

/// The timeline view's columns over the whole profile (the page scales
/// them to its width).
pub const TIMELINE_COLUMNS: usize = 400;
/// The rows of the timeline view's subsecond heat map: 20 ms each.
pub const HEAT_ROWS: usize = 50;

/// The web UI over one session: what every request reads.
pub struct App {
    session: &'static Session,
    config: Config,
    allowed_hosts: Option<Vec<String>>,
    url: String,
    configs: Option<PathBuf>,
    /// Each sample type's total over every sample (the legend's total).
    totals: Vec<i64>,
    /// The download of the URL with no setting, once made.
    unfiltered_download: std::sync::OnceLock<Vec<u8>>,
}

impl App {
    /// The app for `session` with the command line's `config`;
    /// `allowed_hosts` are the `Host` headers accepted (`None`: any), `url`
    /// the server's own address.
    pub fn new(
        session: &'static Session,
        config: Config,
        allowed_hosts: Option<Vec<String>>,
        url: String,
    ) -> App {
        let profile = session.profile();
        // The samples' times, threads and values are read once, at the
        // start: every view then reads them from the session's columns.
        session.sample_index();
        let mut totals = vec![0i64; profile.sample_types.len()];
        // In a diff, the base's total (absolute values), as Go pprof's
        // `-diff_base` gives it: the values are changes from it.
        match session.base_profile() {
            Some(base) => {
                for sample in &base.samples {
                    for (t, v) in base.sample_types.iter().zip(&sample.values) {
                        if let Some(i) = profile.sample_types.iter().position(|p| p == t) {
                            totals[i] = totals[i].saturating_add(v.saturating_abs());
                        }
                    }
                }
            }
            None => {
                for sample in &profile.samples {
                    for (t, v) in totals.iter_mut().zip(&sample.values) {
                        *t += v;
                    }
                }
            }
        }
        App {
            session,
            config,
            allowed_hosts,
            url,
            configs: configs::default_path(),
            totals,
            unfiltered_download: std::sync::OnceLock::new(),
        }
    }

    /// Saved configurations go to `path` instead of the user's config
    /// directory.
    pub fn with_configs_path(mut self, path: Option<PathBuf>) -> App {
        self.configs = path;
        self
    }

    /// Answers one request.
    pub fn handle(&self, request: &Request) -> Response {
        if let Some(allowed) = &self.allowed_hosts {
            let host = request.host.as_deref().unwrap_or("");
            if !allowed.iter().any(|a| a.eq_ignore_ascii_case(host)) {
                return Response::text(
                    403,
                    "forbidden: the Host header is not this server's loopback name\n",
                );
            }
        }
        let (path, query) = match request.url.split_once('?') {
            Some((p, q)) => (p, q),
            None => (request.url.as_str(), ""),
        };
        if path == "/ui/configs" {
            return match request.method.as_str() {
                "GET" => configs::list(self.configs.as_deref()),
                "POST" => {
                    if !self.same_origin(request) {
                        return Response::text(403, "forbidden: not from this page's origin\n");
                    }
                    configs::post(self.configs.as_deref(), &request.body)
                }
                _ => method_not_allowed("GET, POST"),
            };
        }
        let known = matches!(
            path,
            "/" | "/ui"
                | "/ui/"
                | "/ui/assets/ui.js"
                | "/ui/assets/ui.css"
                | "/ui/flamegraph/frame"
                | "/ui/download"
                | "/ui/download/speedscope"
        ) || VIEWS
            .iter()
            .any(|(v, _)| path.strip_prefix("/ui/") == Some(v));
        if !known {
            return Response::text(404, "not found\n");
        }
        if request.method != "GET" && request.method != "HEAD" {
            return method_not_allowed("GET");
        }
        match path {
            "/" | "/ui" | "/ui/" => {
                let mut r = Response::text(302, "");
                let location = if query.is_empty() {
                    "/ui/flamegraph".to_string()
                } else {
                    format!("/ui/flamegraph?{query}")
                };
                r.headers.push(("Location", location));
                r
            }
            "/ui/assets/ui.js" => asset("text/javascript; charset=utf-8", SCRIPT),
            "/ui/assets/ui.css" => asset("text/css; charset=utf-8", STYLE),
            _ => {
                let config = match Config::with_query(&self.config, query) {
                    Ok(c) => c,
                    Err(e) => return Response::text(400, format!("{e}\n")),
                };
                let view = path.strip_prefix("/ui/").unwrap_or(path);
                match view {
                    "download" => self.download(&config),
                    "download/speedscope" => self.download_speedscope(&config),
                    "flamegraph/frame" => match self.report(
                        if icicle(query) { "icicle" } else { "flame" },
                        None,
                        &config,
                    ) {
                        Ok(bytes) => Response::new(200, "text/html; charset=utf-8", bytes),
                        Err(e) => Response::new(
                            200,
                            "text/html; charset=utf-8",
                            format!(
                                "<!DOCTYPE html><meta charset=\"utf-8\"><p>{}</p>",
                                escape(&e.to_string())
                            ),
                        ),
                    },
                    _ => self.view(view, query, &config),
                }
            }
        }
    }

    /// POSTs must come from a page of this server (its own origin).
    fn same_origin(&self, request: &Request) -> bool {
        let Some(origin) = request.origin.as_deref() else {
            return false;
        };
        let Some(host) = request.host.as_deref() else {
            return false;
        };
        origin == format!("http://{host}") || origin == self.url
    }

    /// Runs the report `name` (with its regex `arg`) into memory.
    fn report(&self, name: &str, arg: Option<&str>, config: &Config) -> Result<Vec<u8>> {
        let command = command(name).expect("a command of the table");
        let mut out = Vec::new();
        self.session.run(
            command,
            arg,
            config,
            Destination {
                out: &mut out,
                is_terminal: false,
                width: None,
            },
        )?;
        Ok(out)
    }

    /// The current profile: the samples the URL's filters keep, as
    /// gzipped profile.proto. The URL with no setting (the command line's
    /// profile) is encoded once and its bytes kept.
    fn download(&self, config: &Config) -> Response {
        let encode = || -> Result<Vec<u8>> {
            let profile = self.session.filtered_profile(config)?;
            let mut raw = Vec::new();
            cpuprof_profile::proto::write_raw(&profile, &mut raw)?;
            drop(profile);
            Ok(gzip_parallel(&raw))
        };
        let bytes = if *config == self.config {
            match self.unfiltered_download.get() {
                Some(bytes) => Ok(bytes.clone()),
                None => encode().inspect(|bytes| {
                    let _ = self.unfiltered_download.set(bytes.clone());
                }),
            }
        } else {
            encode()
        };
        match bytes {
            Ok(bytes) => {
                let mut r = Response::new(200, "application/octet-stream", bytes);
                r.headers.push((
                    "Content-Disposition",
                    "attachment; filename=\"profile.pb.gz\"".to_string(),
                ));
                r
            }
            Err(e) => Response::text(500, format!("{e}\n")),
        }
    }

    /// The current profile (the samples the URL's filters keep, at its
    /// sample type and granularity) as speedscope's JSON, one profile per
    /// thread.
    fn download_speedscope(&self, config: &Config) -> Response {
        let mut out = Vec::new();
        match self.session.write_speedscope(config, &mut out) {
            Ok(_) => {
                let mut r = Response::new(200, "application/json", out);
                r.headers.push((
                    "Content-Disposition",
                    "attachment; filename=\"profile.speedscope.json\"".to_string(),
                ));
                r
            }
            Err(e) => Response::text(500, format!("{e}\n")),
        }
    }

    /// A view's page.
    fn view(&self, view: &str, query: &str, config: &Config) -> Response {
        let selection = config.get("focus").to_string();
        let needs_selection = matches!(view, "peek" | "source" | "disasm");
        // A file outside the profile's sources is refused before anything
        // else (no page, selection or not), as the README promises.
        if view == "source" {
            if let Some(file) = source_file(query) {
                if !self.session.source_file_names().contains(&file.as_str()) {
                    return Response::text(
                        404,
                        format!("{file}: not a source file of this profile\n"),
                    );
                }
            }
        }
        let body = if needs_selection && selection.is_empty() {
            format!(
                "<p class=\"hint\">Select one or more functions (click them in Top, Graph or \
                 Flame Graph, or type a regular expression in Search and press Enter), then \
                 choose {} again.</p>",
                VIEWS
                    .iter()
                    .find(|(v, _)| *v == view)
                    .map_or("", |(_, l)| l)
            )
        } else {
            let result = match view {
                "top" => self.report("json", None, config).and_then(|j| self.top(&j)),
                "graph" => {
                    // Our own layout unless the URL asks for dot: its
                    // nodes carry their names and values for the page.
                    let mut config = config.clone();
                    if !query_pairs(query).iter().any(|(k, _)| k == "layout") {
                        let _ = config.set("layout", Some("builtin"));
                    }
                    self.report("svg", None, &config).map(|svg| graph(&svg))
                }
                "flamegraph" => Ok(format!(
                    "<iframe id=\"flame-frame\" title=\"Flame graph\" src=\"/ui/flamegraph/frame{}\"></iframe>",
                    escape(&if query.is_empty() {
                        String::new()
                    } else {
                        format!("?{query}")
                    })
                )),
                "peek" => self
                    .report("peek", Some(&selection), config)
                    .map(|t| preformatted(&t, false)),
                "source" => {
                    let file = source_file(query);
                    self.report("list", Some(&selection), config)
                        .map(|t| preformatted(&only_file(&t, file.as_deref()), true))
                }
                "disasm" => self
                    .report("disasm", Some(&selection), config)
                    .map(|t| preformatted(&t, true)),
                "timeline" => self
                    .session
                    .timeline_json(config, TIMELINE_COLUMNS, HEAT_ROWS)
                    .map(|json| timeline(&json)),
                _ => unreachable!("routes are checked"),
            };
            match result {
                Ok(body) => body,
                Err(e) => {
                    format!("<p class=\"error\">{}</p>", escape(&e.to_string()))
                }
            }
        };
        let html = self.page(view, query, config, &body);
        Response::new(200, "text/html; charset=utf-8", html)
    }

    /// The top table from the JSON report.
    fn top(&self, json: &[u8]) -> Result<String> {
        let report: serde_json::Value = serde_json::from_slice(json)?;
        let total = report["total"].as_i64().unwrap_or(0);
        let shown = report["shown_total"].as_i64().unwrap_or(0);
        // In a diff, the rows are changes and their percentages are of the
        // base's total (Go pprof's `-diff_base`).
        let base = report["base_total"].as_i64();
        let unit = report["unit"].as_str().unwrap_or("");
        // Values with a unit print scaled (`1.21s`), as --text does;
        // counts as they are, with their word.
        let scaled = cpuprof_report::measure::is_scaled_unit(
            report["sample_type"]["unit"].as_str().unwrap_or(""),
        );
        let label = |key: &str, raw: i64, of: &serde_json::Value| -> String {
            match of[key].as_str() {
                Some(l) if scaled => l.to_string(),
                _ => raw.to_string(),
            }
        };
        let (shown_text, total_text, unit) = if scaled {
            (
                label("shown_total_label", shown, &report),
                match base {
                    Some(b) => label("base_total_label", b, &report),
                    None => label("total_label", total, &report),
                },
                "",
            )
        } else {
            (shown.to_string(), base.unwrap_or(total).to_string(), unit)
        };
        // Over an empty base, percentages are of the changes' total, as
        // Go pprof's `-diff_base` takes them.
        let nonzero_base = base.filter(|&b| b != 0);
        let of = nonzero_base.unwrap_or(shown);
        let empty = Vec::new();
        let rows = report["rows"].as_array().unwrap_or(&empty);
        let mut html = String::with_capacity(256 + rows.len() * 200);
        let _ = write!(
            html,
            "<p class=\"summary\">Showing {} rows: {}{} of {}{}{unit} total{} ({})</p>\
             <input id=\"filter\" type=\"search\" placeholder=\"Filter rows: regular expression\" \
             aria-label=\"Filter rows\" spellcheck=\"false\">\
             <table id=\"toptable\"><thead><tr>\
             <th class=\"num\" data-key=\"flat\" aria-sort=\"none\">Flat</th><th class=\"num\">Flat%</th>\
             <th class=\"num\">Sum%</th>\
             <th class=\"num\" data-key=\"cum\" aria-sort=\"none\">Cum</th><th class=\"num\">Cum%</th>\
             <th data-key=\"name\" aria-sort=\"none\">Name</th></tr></thead><tbody>",
            rows.len(),
            if base.is_some() && shown > 0 { "+" } else { "" },
            shown_text,
            total_text,
            if unit.is_empty() { "" } else { " " },
            if base.is_some() {
                " in the base (rows are changes from it)"
            } else {
                ""
            },
            percent(shown, nonzero_base.unwrap_or(total))
        );
        let mut sum = 0i64;
        for row in rows {
            let name = row["name"].as_str().unwrap_or("");
            let flat = row["flat"].as_i64().unwrap_or(0);
            let cum = row["cum"].as_i64().unwrap_or(0);
            sum += flat;
            // In a diff, the cum cell is coloured by a significant change
            // of its share (what the test compares), whatever the sign of
            // the subtracted value; its tooltip gives the change.
            let change = &row["change"];
            let (class, title) = if change.is_object() {
                let points = change["points"].as_f64().unwrap_or(0.0);
                let significant = change["significant"].as_bool() == Some(true);
                let class = match () {
                    _ if !significant => "",
                    _ if points > 0.0 => " grew",
                    _ => " shrank",
                };
                let interval = |i: usize| change["interval"][i].as_f64().unwrap_or(0.0);
                let title = format!(
                    " title=\"share {:.2}% → {:.2}%: {points:+.2} points [{:+.2}, {:+.2}], {}\"",
                    change["old_percent"].as_f64().unwrap_or(0.0),
                    change["new_percent"].as_f64().unwrap_or(0.0),
                    interval(0),
                    interval(1),
                    if significant { "significant" } else { "noise" }
                );
                (class, title)
            } else {
                ("", String::new())
            };
            let _ = write!(
                html,
                "<tr><td class=\"num\" data-value=\"{flat}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num{class}\" data-value=\"{cum}\"{title}>{}</td><td class=\"num\">{}</td><td class=\"name\" title=\"{}\">{}</td></tr>",
                label("flat_label", flat, row),
                percent(flat, of),
                percent(sum, of),
                label("cum_label", cum, row),
                percent(cum, of),
                escape(row["file"].as_str().unwrap_or("")),
                escape(name)
            );
        }
        html.push_str("</tbody></table>");
        Ok(html)
    }

    /// The page around a view's `body`.
    fn page(&self, view: &str, query: &str, config: &Config, body: &str) -> String {
        let session = self.session;
        let profile = session.profile();
        let label = VIEWS
            .iter()
            .find(|(v, _)| *v == view)
            .map_or(view, |(_, l)| l);
        let inputs: Vec<String> = session
            .inputs()
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let mut html = String::with_capacity(body.len() + 8192);
        let diff = session.base().is_some();
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"color-scheme\" content=\"light dark\">\n\
             <title>{} — {} — cpuprof</title>\n<link rel=\"icon\" href=\"data:,\">\n\
             <link rel=\"stylesheet\" href=\"/ui/assets/ui.css?v={}\">\n</head>\n\
             <body data-view=\"{view}\"{}>\n<header>\n<nav aria-label=\"Views\">\
             <span class=\"brand\">cpuprof</span>",
            escape(label),
            escape(&inputs.join(" ")),
            asset_version(),
            if diff { " class=\"diff\"" } else { "" }
        );
        html.push_str("<span class=\"views\">");
        for (v, l) in VIEWS {
            let _ = write!(
                html,
                "<a href=\"/ui/{v}\" data-view=\"{v}\"{}>{l}</a>",
                if *v == view {
                    " aria-current=\"page\""
                } else {
                    ""
                }
            );
        }
        html.push_str("</span>");
        html.push_str(
            "<details class=\"menu\" id=\"refine\"><summary>Refine</summary><div role=\"menu\">\
             <button type=\"button\" role=\"menuitem\" data-param=\"f\">Focus</button>\
             <button type=\"button\" role=\"menuitem\" data-param=\"i\">Ignore</button>\
             <button type=\"button\" role=\"menuitem\" data-param=\"h\">Hide</button>\
             <button type=\"button\" role=\"menuitem\" data-param=\"s\">Show</button>\
             <button type=\"button\" role=\"menuitem\" data-param=\"sf\">Show from</button>\
             <button type=\"button\" role=\"menuitem\" data-param=\"reset\">Reset</button>\
             </div></details>",
        );
        html.push_str(
            "<details class=\"menu\" id=\"config\"><summary>Config</summary><div role=\"menu\">\
             <button type=\"button\" role=\"menuitem\" data-action=\"save\">Save as…</button>\
             <div id=\"saved\"></div></div></details>",
        );
        html.push_str(
            "<details class=\"menu\" id=\"downloads\"><summary>Download</summary><div role=\"menu\">\
             <a role=\"menuitem\" id=\"download\" data-download=\"/ui/download\" href=\"/ui/download\" \
             download=\"profile.pb.gz\">profile.proto (pprof)</a>\
             <a role=\"menuitem\" data-download=\"/ui/download/speedscope\" \
             href=\"/ui/download/speedscope\" download=\"profile.speedscope.json\">speedscope \
             (one profile per thread, in time order)</a></div></details>",
        );
        html.push_str("</nav>\n<div class=\"controls\">");
        let types = &profile.sample_types;
        if types.len() > 1 {
            html.push_str("<label>Sample <select id=\"sample\" aria-label=\"Sample type\">");
            let current =
                cpuprof_driver::settings::sample_index(profile, config.text("sample_index"))
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| profile.default_sample_index());
            // Each type with its total, in its unit (`cpu (2.10s)`,
            // `samples (2095)`), as the legend prints the total.
            for (i, t) in types.iter().enumerate() {
                let total = self.totals.get(i).copied().unwrap_or(0);
                let _ = write!(
                    html,
                    "<option value=\"{}\"{}>{} ({})</option>",
                    escape(&t.kind),
                    if i == current { " selected" } else { "" },
                    escape(&t.kind),
                    escape(&total_label(t, total, config.get("unit")))
                );
            }
            html.push_str("</select></label>");
        }
        html.push_str("<label>Granularity <select id=\"granularity\" aria-label=\"Granularity\">");
        for g in GRANULARITIES {
            let _ = write!(
                html,
                "<option value=\"{g}\"{}>{g}</option>",
                if config.get("granularity") == *g {
                    " selected"
                } else {
                    ""
                }
            );
        }
        html.push_str("</select></label>");
        if view == "flamegraph" {
            let _ = write!(
                html,
                "<label><input id=\"icicle\" type=\"checkbox\"{}> Icicle (root on top)</label>",
                if icicle(query) { " checked" } else { "" }
            );
        }
        html.push_str(
            "<input id=\"search\" type=\"search\" placeholder=\"Search: regular expression (/)\" \
             aria-label=\"Search\" spellcheck=\"false\" autocomplete=\"off\">\
             <span id=\"selection\" aria-live=\"polite\"></span></div>\n",
        );
        // The legend: inputs, total, period, filters.
        html.push_str("<div id=\"legend\">");
        let _ = write!(html, "<span>Inputs: {}</span>", escape(&inputs.join(" ")));
        if let Some(base) = session.base() {
            let _ = write!(
                html,
                "<span>Base: {} (subtracted: values are changes; coloured: significant changes of \
                 each profile's share of its own total, red grew, green shrank)</span>",
                escape(&base.display().to_string())
            );
        }
        let index = cpuprof_driver::settings::sample_index(profile, config.text("sample_index"))
            .ok()
            .flatten()
            .unwrap_or_else(|| profile.default_sample_index());
        if let Some(t) = types.get(index) {
            let total = self.totals.get(index).copied().unwrap_or(0);
            let of_base = if diff {
                " in the base: values are changes from it, percentages of it"
            } else {
                ""
            };
            if cpuprof_report::measure::is_scaled_unit(&t.unit) {
                let _ = write!(
                    html,
                    "<span>Total: {} ({}){of_base}</span>",
                    escape(&total_label(t, total, config.get("unit"))),
                    escape(&t.kind)
                );
            } else {
                let _ = write!(
                    html,
                    "<span>Total: {} {} ({}){of_base}</span>",
                    total,
                    escape(&t.unit),
                    escape(&t.kind)
                );
            }
        }
        let span = self.session.sample_index().times.span;
        if profile.period > 0 {
            let unit = &profile.period_type.unit;
            let period = if cpuprof_report::measure::is_scaled_unit(unit) {
                cpuprof_report::measure::scaled_label(profile.period, unit, "auto")
            } else {
                format!("{} {unit}", profile.period)
            };
            let _ = write!(html, "<span>Period: {}</span>", escape(&period));
        } else if span.is_some() {
            // perf's frequency mode (-F) records no fixed period.
            html.push_str("<span>Period: not fixed (each sample has its own)</span>");
        }
        // The duration the sample times cover, and the time range shown.
        if let Some(span) = span {
            use cpuprof_report::time::offset_text;
            let _ = write!(
                html,
                "<span id=\"duration\">Duration: {}</span>",
                offset_text(span.duration() / 1000 * 1000)
            );
            let range = match config.time_range("time") {
                Ok(Some(r)) => format!(
                    "{} to {}",
                    offset_text(r.start),
                    r.end.map_or_else(|| "the end".to_string(), offset_text)
                ),
                _ => "the whole profile".to_string(),
            };
            let _ = write!(
                html,
                "<span id=\"time-range\">Time range: {}</span>",
                escape(&range)
            );
        }
        let filters: Vec<String> = config
            .changed()
            .filter(|(name, _)| !matches!(*name, "output" | "source_path" | "trim_path"))
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if !filters.is_empty() {
            let _ = write!(
                html,
                "<span>Settings: {}</span>",
                escape(&filters.join(" "))
            );
        }
        html.push_str("</div>\n</header>\n<main id=\"view\">");
        html.push_str(body);
        let _ = write!(
            html,
            "</main>\n<script src=\"/ui/assets/ui.js?v={}\"></script>\n</body>\n</html>\n",
            asset_version()
        );
        html
    }
}

/// `raw` gzipped as Go pprof and our reader read it, compressed in
/// parallel: one gzip member per 4 MiB part (RFC 1952 allows a file of
/// several members; readers decompress them as one stream), each at the
/// fast level, as `proto::write` does.
pub fn gzip_parallel(raw: &[u8]) -> Vec<u8> {
    use rayon::prelude::*;
    use std::io::Write as _;
    const PART: usize = 4 << 20;
    let member = |part: &[u8]| {
        let mut gz = flate2::write::GzEncoder::new(
            Vec::with_capacity(part.len() + part.len() / 8 + 64),
            flate2::Compression::fast(),
        );
        // Writing to memory cannot fail.
        let _ = gz.write_all(part);
        gz.finish().unwrap_or_default()
    };
    if raw.is_empty() {
        return member(raw);
    }
    let members: Vec<Vec<u8>> = raw.par_chunks(PART).map(member).collect();
    members.concat()
}

fn method_not_allowed(allow: &str) -> Response {
    let mut r = Response::text(405, "method not allowed\n");
    r.headers.push(("Allow", allow.to_string()));
    r
}

/// The flame graph's `icicle` parameter (the page's own, not a setting).
fn icicle(query: &str) -> bool {
    query_pairs(query)
        .iter()
        .any(|(k, v)| k == "icicle" && cpuprof_driver::settings::parse_bool(v) == Some(true))
}

/// The `file` parameter of a source request.
fn source_file(query: &str) -> Option<String> {
    query_pairs(query)
        .into_iter()
        .find(|(k, _)| k == "file")
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// The routines of a `--list` output that are in `file` (all without one).
fn only_file(listing: &[u8], file: Option<&str>) -> Vec<u8> {
    let Some(file) = file else {
        return listing.to_vec();
    };
    let text = String::from_utf8_lossy(listing);
    let mut out = String::new();
    let mut keep = false;
    for line in text.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("ROUTINE ====================== ") {
            keep = header.trim_end().ends_with(&format!(" in {file}"));
        }
        if keep {
            out.push_str(line);
        }
    }
    out.into_bytes()
}

/// The timeline view: the data its script draws (the tracks and the
/// heat map, [`Session::timeline_json`]) and the places it draws them.
fn timeline(json: &str) -> String {
    format!(
        "<script type=\"application/json\" id=\"timeline-data\">{json}</script>\
         <p class=\"summary\" id=\"timeline-help\">Each thread's CPU activity over time; \
         the samples of the focused function (Refine → Focus, or Search and Enter) in a darker \
         colour. Drag over a track or the heat map to select a time range: every view then \
         shows it (Back undoes).</p>\
         <section aria-label=\"Threads\"><h2>Threads</h2><div id=\"tracks\"></div></section>\
         <section aria-label=\"Subsecond heat map\"><h2>Subsecond heat map</h2>\
         <p class=\"summary\" id=\"heat-help\"></p><div id=\"heat-pane\"><canvas id=\"heat\" \
         aria-label=\"Subsecond heat map: columns are seconds, rows offsets within the second\">\
         </canvas></div></section>"
    )
}

/// The SVG document without its XML declaration, in its pane.
fn graph(svg: &[u8]) -> String {
    let svg = String::from_utf8_lossy(svg);
    let start = svg.find("<svg").unwrap_or(0);
    format!(
        "<div id=\"graph-pane\" tabindex=\"0\" aria-label=\"Call graph: drag to pan, wheel to zoom\">{}</div>",
        &svg[start..]
    )
}

/// A text report, one span per line; `counts` marks the lines whose
/// leading flat/cum columns are not all `.`/zero (listings).
fn preformatted(text: &[u8], counts: bool) -> String {
    let text = String::from_utf8_lossy(text);
    let mut html = String::with_capacity(text.len() * 5 / 4 + 64);
    html.push_str("<pre class=\"report\">");
    for line in text.lines() {
        let hot = counts && line_has_samples(line);
        let _ = writeln!(
            html,
            "<span class=\"ln{}\">{}</span>",
            if hot { " hot" } else { "" },
            escape(line)
        );
    }
    html.push_str("</pre>");
    html
}

/// A listing line with a non-zero flat or cum column.
fn line_has_samples(line: &str) -> bool {
    let mut fields = line.split_whitespace();
    let (Some(flat), Some(cum)) = (fields.next(), fields.next()) else {
        return false;
    };
    let sampled = |f: &str| {
        f != "."
            && f.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%')
                .parse::<f64>()
                .is_ok_and(|v| v != 0.0)
    };
    !line.starts_with("ROUTINE") && !line.contains(" Total ") && (sampled(flat) || sampled(cum))
}

fn percent(value: i64, total: i64) -> String {
    if total == 0 {
        return "-".to_string();
    }
    format!("{:.2}%", value as f64 * 100.0 / total as f64)
}

/// Escapes text for HTML: the listing page's escaper.
pub use cpuprof_report::output::weblist::escape;

/// A total of values of type `t` as the legend prints it: time and bytes
/// scaled under the `unit` setting (`2.10s`), counts as they are.
fn total_label(t: &cpuprof_profile::ValueType, total: i64, unit: &str) -> String {
    if cpuprof_report::measure::is_scaled_unit(&t.unit) {
        cpuprof_report::measure::Measure::select(&t.unit, unit, [total], total, false).label(total)
    } else {
        total.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_lines_with_samples() {
        assert!(line_has_samples("   280    284     42:   x += i;"));
        assert!(line_has_samples("     .     12     43: f();"));
        assert!(!line_has_samples("     .      .     44: }"));
        assert!(!line_has_samples(
            "ROUTINE ====================== burn_a in /x.c"
        ));
    }

    #[test]
    fn parallel_gzip_reads_back_as_one_stream() {
        use std::io::Read as _;
        // Parts of 4 MiB: none, one, and three members.
        for len in [0usize, 1000, (4 << 20) * 2 + 12345] {
            let raw: Vec<u8> = (0..len).map(|i| (i * 7 + i / 1000) as u8).collect();
            let gz = gzip_parallel(&raw);
            assert_eq!(&gz[..2], &[0x1f, 0x8b]);
            let mut back = Vec::new();
            flate2::read::MultiGzDecoder::new(&gz[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, raw, "{len}");
        }
    }

    #[test]
    fn only_the_routines_of_a_file() {
        let listing = b"ROUTINE ====================== a in /x.c\n1\nROUTINE ====================== b in /y.c\n2\n";
        assert_eq!(
            only_file(listing, Some("/y.c")),
            b"ROUTINE ====================== b in /y.c\n2\n"
        );
    }
}
