//! The `cpuprof` command: argument parsing and wiring only. Each
//! subcommand lives in its own module with its `Args` and `run`.

mod convert;
mod demo;
mod record;
mod report;

use clap::{Parser, Subcommand};

/// cpuprof: a CPU profiler (agent) and a pprof-class analyser.
#[derive(Parser)]
#[command(name = "cpuprof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse profiles: text, graphs, flame graphs, listings, ...
    Report(Box<report::Args>),
    /// Run a command under the profiler and print the top of its report.
    Record(record::Args),
    /// Profile a built-in workload and print its report.
    Demo(demo::Args),
    /// Convert profiles between formats.
    Convert(convert::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Report(args) => report::run(*args),
        Command::Record(args) => record::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Convert(args) => convert::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            if is_broken_pipe(&err) {
                std::process::exit(0);
            }
            eprintln!("cpuprof: {err:#}");
            std::process::exit(1);
        }
    }
}

/// True when the error is a closed stdout (`cpuprof report | head`), which
/// is not worth a message.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
