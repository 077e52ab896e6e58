//! `cpuprof record [-F HZ] [-o FILE] [--realtime] [--format F]
//! [--time-resolution RES] -- CMD [ARGS...]`: runs a command under the
//! agent (`libcpuprof.so`, found beside the `cpuprof` binary, through
//! `LD_PRELOAD` and `CPUPROFILE`) and prints the top of the report when it
//! ends. The profile is pprof's profile.proto by default
//! (`CPUPROFILE_FORMAT=pprof`: samples labelled with their thread and
//! their time, `timestamp_ns`, at the resolution `--time-resolution` sets
//! through `CPUPROFILE_TIME_RESOLUTION`), gperftools' format with
//! `--format gperftools`.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Arguments of `cpuprof record`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Examples:
  cpuprof record -- ./prog --its-args
  cpuprof record -F 1000 -o prog.prof -- ./prog
  cpuprof record --realtime -- ./server   (wall-clock time of every thread, running or waiting)
  cpuprof record --format gperftools -- ./prog   (gperftools' format, for older tools)
  cpuprof record --time-resolution 10ms -- ./server   (sample times rounded to 10 ms: a smaller file)

Processes the command forks or execs are profiled too, each into FILE_<pid>;
when there are several, record lists them with each one's pid and kind
(its --type=, e.g. Chromium's renderer), and `cpuprof report FILE*
--tagfocus=process=renderer` sums the renderers' samples.")]
pub struct Args {
    /// Samples per second of CPU time (or wall time with --realtime).
    #[arg(short = 'F', long = "frequency", value_name = "HZ", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frequency: u32,
    /// Where to write the profile [default: <command name>.prof].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sample wall-clock time instead of CPU time: every thread, running
    /// or waiting, each sample labelled state=running|waiting.
    #[arg(long)]
    pub realtime: bool,
    /// The profile's format: pprof (profile.proto with thread labels) or
    /// gperftools (libprofiler's format).
    #[arg(long, value_name = "FORMAT", default_value = "pprof",
          value_parser = ["pprof", "gperftools"])]
    pub format: String,
    /// Each sample's time (label timestamp_ns) rounded down to RES (10ms,
    /// 1s, ...), so samples of one stack and thread within RES merge into
    /// one: a smaller file; `full` keeps times as taken, `off` writes none.
    /// Long runs coarsen further as they go. profile.proto only.
    #[arg(long, value_name = "RES", default_value = "full",
          value_parser = parse_time_resolution)]
    pub time_resolution: String,
    /// Rows of the report to print (0: none).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub nodecount: usize,
    /// The command to profile and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Checks a `--time-resolution` value as the agent will read it.
fn parse_time_resolution(value: &str) -> Result<String, String> {
    match cpuprof::config::parse_time_resolution(value) {
        Some(_) => Ok(value.trim().to_string()),
        None => Err(format!(
            "{value:?} is not a duration with its unit (10ms, 1s, 500us), full or off"
        )),
    }
}

/// Runs `cpuprof record`; returns the command's exit status (128 + signal
/// when a signal ended it).
pub fn run(args: Args) -> Result<i32> {
    let agent = agent_library()?;
    let program = PathBuf::from(&args.command[0]);
    let output = match &args.output {
        Some(path) => path.clone(),
        None => PathBuf::from(format!(
            "{}.prof",
            program
                .file_name()
                .map_or("cpuprof".into(), |n| n.to_string_lossy())
        )),
    };
    let output = std::path::absolute(&output).context("cannot resolve the output path")?;
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(existing) if !existing.is_empty() => {
            let mut joined = agent.clone().into_os_string();
            joined.push(":");
            joined.push(existing);
            joined
        }
        _ => agent.clone().into_os_string(),
    };
    let mut command = Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .env("LD_PRELOAD", preload)
        .env("CPUPROFILE", &output)
        .env("CPUPROFILE_FREQUENCY", args.frequency.to_string())
        .env("CPUPROFILE_FORMAT", &args.format)
        .env("CPUPROFILE_TIME_RESOLUTION", &args.time_resolution)
        // The command's own process writes FILE; only its children add _<pid>.
        .env_remove("CPUPROFILE_USE_PID");
    if args.realtime {
        command.env("CPUPROFILE_REALTIME", "1");
    } else {
        command.env_remove("CPUPROFILE_REALTIME");
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot run {}", program.display()))?;
    // Ctrl-C reaches the whole process group: let the command write its
    // profile and end, and report afterwards.
    // SAFETY: ignoring signals in this process only (after the spawn, so
    // the command keeps the default dispositions).
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child.wait().context("waiting for the command")?;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    eprintln!(
        "cpuprof: {} exited with status {code}; profile: {}",
        program.display(),
        output.display()
    );
    if std::fs::metadata(&output)
        .map(|m| m.len() == 0)
        .unwrap_or(true)
    {
        // The command ended without exit() (_exit, SIGKILL), is setuid, or
        // is statically linked: nothing to report, but its status stands.
        eprintln!(
            "cpuprof: {}: no profile was written (the command ended without exit(), or is setuid or statically linked)",
            output.display()
        );
        return Ok(code);
    }
    list_process_profiles(&output);
    if args.nodecount > 0 {
        print_report(&output, &[], args.nodecount)?;
    }
    Ok(code)
}

/// One profile the command's processes left: FILE, or FILE_<pid> (a
/// forked or exec'd child, `_<pid>` again for its own children).
struct ProcessProfile {
    path: PathBuf,
    pid: Option<u32>,
    /// Its command line's `--type=` (Chromium's processes), else the
    /// program's name; None for gperftools' format, which has no room.
    kind: Option<String>,
    samples: i64,
}

/// The profiles `output` and `output_*` beside it, with which process
/// wrote each (the agent's `pid N` and `command line: …` comments in
/// profile.proto; else the pid in the name).
fn process_profiles(output: &Path) -> Vec<ProcessProfile> {
    let Some(dir) = output.parent() else {
        return Vec::new();
    };
    let Some(name) = output.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let child_prefix = format!("{name}_");
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let suffix = match file.strip_prefix(&child_prefix) {
            Some(suffix) if suffix.split('_').all(|p| p.parse::<u32>().is_ok()) => suffix,
            _ if file == name => "",
            _ => continue,
        };
        let path = entry.path();
        let Ok(data) = std::fs::read(&path) else {
            continue;
        };
        let Ok((_, profile)) =
            cpuprof_profile::read_profile(&data, &cpuprof_profile::ReadOptions::default())
        else {
            continue;
        };
        let index = profile
            .sample_types
            .iter()
            .position(|t| t.kind == "samples")
            .unwrap_or(0);
        let samples = profile
            .samples
            .iter()
            .map(|s| s.values.get(index).copied().unwrap_or(0))
            .sum();
        let pid = profile
            .comments
            .iter()
            .find_map(|c| c.strip_prefix("pid ")?.parse().ok())
            .or_else(|| suffix.rsplit('_').next()?.parse().ok());
        let kind = profile
            .comments
            .iter()
            .find_map(|c| c.strip_prefix("command line: "))
            .map(|line| {
                line.split(' ')
                    .find_map(|a| a.strip_prefix("--type="))
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        let program = line.split(' ').next().unwrap_or("");
                        program.rsplit('/').next().unwrap_or(program).to_string()
                    })
            });
        found.push(ProcessProfile {
            path,
            pid,
            kind,
            samples,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// When the command's processes left more than one profile: where each
/// is, which process wrote it, its samples, and how to sum or pick them.
fn list_process_profiles(output: &Path) {
    let profiles = process_profiles(output);
    if profiles.len() < 2 {
        return;
    }
    let total: i64 = profiles.iter().map(|p| p.samples).sum();
    eprintln!(
        "cpuprof: {} profiles, one per process ({total} samples in all):",
        profiles.len()
    );
    let width = profiles
        .iter()
        .map(|p| p.path.display().to_string().len())
        .max()
        .unwrap_or(0);
    for profile in &profiles {
        eprintln!(
            "  {:<width$}  pid {:<8} {:<20} {} samples",
            profile.path.display().to_string(),
            profile.pid.map_or("?".to_string(), |p| p.to_string()),
            profile.kind.as_deref().unwrap_or("-"),
            profile.samples,
        );
    }
    let busiest = profiles.iter().max_by_key(|p| p.samples);
    eprintln!(
        "cpuprof: all processes: cpuprof report {}*; one kind: --tagfocus=process=KIND; one process: --tagfocus=pid=PID{}",
        output.display(),
        busiest
            .and_then(|p| p.pid.map(|pid| format!(" (the busiest: --tagfocus=pid={pid})")))
            .unwrap_or_default()
    );
}

/// `libcpuprof.so` beside the running `cpuprof` binary.
pub fn agent_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the cpuprof binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Beside the binary (the build tree), else in the library directory
    // of its prefix (`scripts/install`: PREFIX/bin and PREFIX/lib).
    let beside = dir.join("libcpuprof.so");
    let installed = dir.join("../lib/libcpuprof.so");
    let found = [beside, installed].into_iter().find(|p| p.is_file());
    match found {
        Some(agent) => Ok(agent),
        None => bail!(
            "libcpuprof.so not found beside {} nor in {} (build it with `cargo build --release -p cpuprof`, install both with scripts/install)",
            exe.display(),
            dir.join("../lib").display()
        ),
    }
}

/// Prints the top `nodecount` rows of the text report of `profile`
/// (symbolized with `binaries` and the paths in its mappings).
pub fn print_report(profile: &Path, binaries: &[PathBuf], nodecount: usize) -> Result<()> {
    let data =
        std::fs::read(profile).with_context(|| format!("{}: cannot read", profile.display()))?;
    let (_, mut parsed) =
        cpuprof_profile::read_profile(&data, &cpuprof_profile::ReadOptions::default())
            .map_err(|e| anyhow::anyhow!("{}: {e}", profile.display()))?;
    let symbolize_options = cpuprof_symbolize::Options {
        binaries: binaries.to_vec(),
        ..cpuprof_symbolize::Options::default()
    };
    for warning in cpuprof_symbolize::symbolize(&mut parsed, &symbolize_options) {
        eprintln!("cpuprof: warning: {warning}");
    }
    // Sample counts, whichever format the agent wrote (profile.proto's
    // default value is CPU time).
    let sample_index = parsed.sample_types.iter().position(|t| t.kind == "samples");
    let options = cpuprof_report::Options {
        nodecount: Some(nodecount),
        sample_index,
        ..cpuprof_report::Options::default()
    };
    let stacks = cpuprof_report::Stacks::build(&parsed, &options);
    let graph = cpuprof_report::Graph::build(&stacks, false);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    cpuprof_report::output::text::write(&mut out, &stacks, &graph, &options)?;
    out.flush()?;
    Ok(())
}
