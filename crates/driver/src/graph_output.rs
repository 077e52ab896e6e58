//! The call-graph outputs of `cpuprof report`: `--dot`, `--svg`, `--ps`,
//! `--pdf`, `--gif`, `--png`, and the viewers `--gv`, `--evince`, `--web`.
//!
//! DOT and the built-in SVG need nothing installed; `--svg` goes through
//! Graphviz's `dot` when it is installed (or with `--layout=dot`), and
//! PostScript, PDF, GIF and PNG always do. Binary formats are not written
//! to a terminal. The viewers get a file (`-o FILE`, or one in the
//! temporary directory) and are started in the background; without a
//! display the path is printed instead.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use cpuprof_report::callgraph::CallGraph;
use cpuprof_report::output::dot::{self, DotTarget};
use cpuprof_report::output::svg;

use crate::commands::{GraphFormat, Viewer};

/// The path of `tool` on PATH.
fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(tool))
            .find(|candidate| candidate.is_file())
    })
}

/// The call graph in `format`; SVG drawn by `layout` (the `layout`
/// setting: `auto` means dot when installed, else our own layout).
pub fn render(graph: &CallGraph, format: GraphFormat, layout: &str) -> Result<Vec<u8>> {
    let dot_installed = which("dot").is_some();
    let use_dot = match format {
        GraphFormat::Dot => false,
        GraphFormat::Svg => match layout {
            "builtin" => false,
            "dot" => true,
            _ => dot_installed,
        },
        _ => true,
    };
    if !use_dot {
        return Ok(match format {
            GraphFormat::Svg => svg::render_svg(&svg::picture(graph)).into_bytes(),
            _ => {
                let mut out = Vec::new();
                dot::write(&mut out, graph, DotTarget::Plain)?;
                out
            }
        });
    }
    if !dot_installed {
        bail!(
            "{} output needs Graphviz's `dot`, which is not installed (Debian: apt-get install graphviz); \
             dot and svg (built-in layout) work without it",
            format.name()
        );
    }
    let target = if format == GraphFormat::Svg {
        DotTarget::Svg
    } else {
        DotTarget::Plain
    };
    let mut source = Vec::new();
    dot::write(&mut source, graph, target)?;
    run_dot(&source, format.dot_format())
}

/// Runs `dot -T<format>` on `source`.
fn run_dot(source: &[u8], format: &str) -> Result<Vec<u8>> {
    let mut child = Command::new("dot")
        .arg(format!("-T{format}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run dot")?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let source = source.to_vec();
    // Feed dot from another thread: it may fill its output pipe before it
    // has read all its input.
    let feeder = std::thread::spawn(move || stdin.write_all(&source));
    let mut stderr = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut output = Vec::new();
    child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut output)
        .context("reading dot's output")?;
    let status = child.wait().context("waiting for dot")?;
    let fed = feeder.join().expect("dot input thread");
    let errors = errors.join().expect("dot error thread");
    if !status.success() {
        bail!("dot -T{format} failed ({status}): {}", errors.trim());
    }
    fed.context("writing to dot")?;
    Ok(output)
}

/// True when a graphical session is there to show a window.
fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

/// Starts the viewer on `path` (which holds `what`) in the background;
/// writes the path to `out` when no viewer can be started.
pub fn open_viewer(viewer: Viewer, path: &Path, what: &str, out: &mut dyn Write) -> Result<()> {
    // A browser the user named works without a display too (a text
    // browser, a script that copies the file elsewhere): only the
    // graphical defaults need one.
    let named_browser =
        viewer == Viewer::Web && std::env::var("BROWSER").is_ok_and(|b| !b.trim().is_empty());
    let command: Option<(String, Vec<String>)> = match viewer {
        Viewer::Gv => which("gv").map(|_| ("gv".to_string(), Vec::new())),
        Viewer::Evince => which("evince").map(|_| ("evince".to_string(), Vec::new())),
        Viewer::Web => match std::env::var("BROWSER") {
            // $BROWSER may carry arguments ("firefox --new-window").
            Ok(browser) if !browser.trim().is_empty() => {
                let mut words = browser.split_whitespace().map(str::to_string);
                words.next().map(|program| (program, words.collect()))
            }
            _ => which("xdg-open").map(|_| ("xdg-open".to_string(), Vec::new())),
        },
    };
    let name = match viewer {
        Viewer::Gv => "gv",
        Viewer::Evince => "evince",
        Viewer::Web => "a browser ($BROWSER or xdg-open)",
    };
    let started = match &command {
        Some((program, args)) if has_display() || named_browser => Command::new(program)
            .args(args)
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok(),
        _ => false,
    };
    if started {
        eprintln!("cpuprof: opened {} in {name}", path.display());
    } else {
        let why = if has_display() {
            format!("cannot start {name}")
        } else {
            "no display".to_string()
        };
        eprintln!("cpuprof: wrote {what}; {why} to show it");
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}
