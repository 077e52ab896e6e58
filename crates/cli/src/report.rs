//! `cpuprof report [OUTPUT] [OPTIONS] [BINARY...] PROFILE...`: parses the
//! flags (generated from the driver's tables), loads a session, and either
//! writes one report or enters the shell.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use cpuprof_driver::cli::{OutputFlag, SettingFlags, OUTPUT_GROUP};
use cpuprof_driver::{commands, Config, Destination, Session, Sources};

/// Arguments of `cpuprof report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs are recognized by content: ELF files are binaries (each serves the \
mapping of the profile with the same path, else the main executable's), \
everything else is read as a profile. Several profiles are summed.

With no output option, on a terminal, the interactive shell starts (as \
pprof's); without a terminal, --text is written. -i forces the shell, \
reading commands from standard input.

Examples:
  cpuprof report ./prog prog.prof                     (the shell, on a terminal)
  cpuprof report --text ./prog prog.prof
  cpuprof report --lines --focus='^burn' --nodecount=20 ./prog prog.prof
  cpuprof report --text --base=before.prof ./prog after.prof
  cpuprof report --svg -o graph.svg ./prog prog.prof
  cpuprof report --dot --nodecount=20 --focus=Mutex ./prog prog.prof | dot -Tpng > graph.png
  cpuprof report --web ./prog prog.prof
  cpuprof report --http=: ./prog prog.prof                (the web UI)
  cpuprof report --collapsed ./prog prog.prof | flamegraph.pl > prog.svg
  cpuprof report --callgrind ./prog prog.prof -o callgrind.out.prog
  cpuprof report --raw ./prog prog.prof -o prog.raw && cpuprof report --text prog.raw
  echo 0x1480 0x1750 | cpuprof report --symbols ./prog")]
pub struct Args {
    #[command(flatten)]
    pub output: OutputFlag,

    /// Read hex addresses (link-time addresses of BINARY) from standard
    /// input and print their function names, one per address, as pprof
    /// --symbols does.
    #[arg(long, conflicts_with = OUTPUT_GROUP)]
    pub symbols: bool,

    /// The interactive shell, even without a terminal (then commands are
    /// read from standard input, one per line).
    #[arg(short = 'i', long, conflicts_with_all = [OUTPUT_GROUP, "symbols"])]
    pub interactive: bool,

    /// Serve the web UI on HOST:PORT (empty host: 127.0.0.1; empty port:
    /// a free one), e.g. --http=: or --http=localhost:8080; the browser
    /// opens when standard output is a terminal.
    #[arg(long, value_name = "[HOST]:[PORT]", conflicts_with_all = [OUTPUT_GROUP, "symbols", "interactive"])]
    pub http: Option<String>,
    /// With --http: do not open a browser.
    #[arg(long = "no-browser", requires = "http")]
    pub no_browser: bool,

    #[command(flatten)]
    pub settings: SettingFlags,

    /// Subtract this profile (a diff: negative values are shown).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// DCPI database directories: read only this epoch (subdirectory).
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
    /// Do not symbolize (print addresses).
    #[arg(long = "no-symbolize")]
    pub no_symbolize: bool,
    /// Also look for separate debug files under DIR (default /usr/lib/debug).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// With --base: exit with status 3 when a function's cum share grew
    /// significantly (Holm at --confidence, default 95%) by more than PCT
    /// percentage points of the total; the rows go to stderr.
    #[arg(long = "fail-on-growth", alias = "fail_on_growth", value_name = "PCT")]
    pub fail_on_growth: Option<f64>,
    /// URL sources: the duration of the profile fetched (adds ?seconds=N
    /// to CPU profile paths; default 30).
    #[arg(long, value_name = "N")]
    pub seconds: Option<u64>,
    /// URL sources: seconds to wait for the response (default 1.5 x the
    /// duration, or 60).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,

    /// [BINARY...] PROFILE...: binaries (ELF) and profiles (files, or URLs
    /// of running programs: host:port[/path], http(s)://...), in any order.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
}

/// Runs `cpuprof report`.
pub fn run(args: Args) -> Result<i32> {
    if args.symbols {
        // --symbols reads addresses, not profiles.
        return symbols_report(&args);
    }
    if args.http.is_some() && args.settings.0.text("output").is_some() {
        anyhow::bail!("--http is incompatible with an output option (-o/--output)");
    }
    if args.fail_on_growth.is_some() && args.base.is_none() {
        anyhow::bail!("--fail-on-growth compares with a base profile: give --base=OLD");
    }
    if args
        .fail_on_growth
        .is_some_and(|p| !(0.0..100.0).contains(&p))
    {
        anyhow::bail!("--fail-on-growth: expected percentage points between 0 and 100");
    }
    let shell = match (&args.output.0, args.interactive) {
        (Some(_), _) => None,
        (None, true) => Some(cpuprof_shell::Input::detect()),
        (None, false) => match cpuprof_shell::Input::detect() {
            cpuprof_shell::Input::Terminal => Some(cpuprof_shell::Input::Terminal),
            cpuprof_shell::Input::Script => None,
        },
    };
    let session = Session::load(Sources {
        inputs: args.inputs.clone(),
        base: args.base.clone(),
        epoch: args.epoch.clone(),
        symbolize: !args.no_symbolize,
        debug_dirs: args.debug_dirs.clone(),
        fetch: cpuprof_driver::fetch::FetchOptions {
            seconds: args.seconds,
            timeout: args.timeout,
        },
    })?;
    if let Some(spec) = &args.http {
        // The session lives until the process ends: the server's threads
        // share it.
        let session: &'static Session = Box::leak(Box::new(session));
        return web(session, spec, args.settings.0.clone(), args.no_browser);
    }
    if let Some(input) = shell {
        // The session lives until the process ends (see cpuprof_shell::run).
        let session: &'static Session = Box::leak(Box::new(session));
        return cpuprof_shell::run(session, args.settings.0, input);
    }
    let (command, arg) = match &args.output.0 {
        Some((command, arg)) => (*command, arg.as_deref()),
        None => (commands::command("top").expect("top is a command"), None),
    };
    let stdout = io::stdout();
    let is_terminal = stdout.is_terminal();
    let mut lock = stdout.lock();
    session.run(
        command,
        arg,
        &args.settings.0,
        Destination {
            out: &mut lock,
            is_terminal,
            width: cpuprof_driver::session::terminal_width(),
        },
    )?;
    lock.flush()?;
    drop(lock);
    if let Some(points) = args.fail_on_growth {
        let status = growth_gate(&session, &args.settings.0, points)?;
        if status != 0 {
            std::mem::forget(session);
            return Ok(status);
        }
    }
    // The process ends here: freeing hundreds of thousands of samples one
    // by one would only add time.
    std::mem::forget(session);
    Ok(0)
}

/// `--http`: serves the web UI until the process is stopped.
fn web(session: &'static Session, spec: &str, config: Config, no_browser: bool) -> Result<i32> {
    let server = cpuprof_web::Server::bind(session, spec, config)?;
    let url = server.url().to_string();
    let stdout = io::stdout();
    let is_terminal = stdout.is_terminal();
    {
        let mut out = stdout.lock();
        writeln!(out, "Serving web UI on {url}")?;
        out.flush()?;
    }
    if is_terminal && !no_browser {
        open_browser(&url);
    }
    server.run()?;
    Ok(0)
}

/// `$BROWSER URL`, else `xdg-open URL`, in the background; a failure is
/// only reported (the URL was printed).
fn open_browser(url: &str) {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "xdg-open".to_string());
    let spawned = std::process::Command::new(&browser)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = spawned {
        eprintln!("cpuprof: cannot start {browser}: {e}; open {url} yourself");
    }
}

/// `--fail-on-growth`: 3 when a function's cum share grew significantly by
/// more than `points`, with those rows on stderr; else 0.
fn growth_gate(session: &Session, config: &cpuprof_driver::Config, points: f64) -> Result<i32> {
    let level = config.confidence().unwrap_or(0.95);
    let Some(diff) = session.diff_table(config, level)? else {
        return Ok(0);
    };
    let grown = diff.grown_by_more_than(points);
    if grown.is_empty() {
        return Ok(0);
    }
    eprintln!(
        "cpuprof: --fail-on-growth={points}: {} function(s) grew by more than {points} points of the total, significantly at {}% (Holm):",
        grown.len(),
        cpuprof_report::stats::level_text(level)
    );
    for change in grown {
        eprintln!("  {} {}", diff.column(&change.name), change.name);
    }
    Ok(3)
}

/// `--symbols`: the names of the addresses on standard input.
fn symbols_report(args: &Args) -> Result<i32> {
    let mut input = String::new();
    io::Read::read_to_string(&mut io::stdin().lock(), &mut input)
        .context("--symbols: standard input is not text")?;
    let mut out = output_file(args.settings.0.text("output"))?;
    cpuprof_driver::symbols::write(
        &mut out,
        &args.inputs,
        &args.debug_dirs,
        &input,
        args.settings.0.bool("full_names"),
    )?;
    out.flush()?;
    Ok(0)
}

/// Standard output (buffered) or the file named by `-o`.
fn output_file(path: Option<&str>) -> Result<Box<dyn Write>> {
    Ok(match path {
        Some(path) => Box::new(io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("{path}: cannot create"))?,
        )),
        None => Box::new(io::BufWriter::with_capacity(1 << 16, io::stdout().lock())),
    })
}
