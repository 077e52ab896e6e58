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
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(err) => {
            if let Some(message) = usage_hint(&err, &argv) {
                eprintln!("cpuprof: {message}");
                std::process::exit(2);
            }
            err.exit()
        }
    };
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

/// A one-line message for the argument errors whose clap message leaves
/// the user guessing: a command given to `record` without `--` before it,
/// and two flags that conflict through a group (clap lists every member
/// of the group; this names the two the user gave).
fn usage_hint(err: &clap::Error, argv: &[std::ffi::OsString]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let args: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let subcommand = args.get(1).map(String::as_str);
    match err.kind() {
        ErrorKind::UnknownArgument if subcommand == Some("record") => {
            let Some(ContextValue::String(bad)) = err.get(ContextKind::InvalidArg) else {
                return None;
            };
            if bad.starts_with('-') || args.iter().any(|a| a == "--") {
                return None;
            }
            let at = args.iter().skip(2).position(|a| a == bad)? + 2;
            let quoted: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
            Some(format!(
                "record: unexpected argument '{bad}': the command to profile comes after '--': {} -- {}",
                ["cpuprof".to_string()]
                    .iter()
                    .chain(&quoted[1..at])
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" "),
                quoted[at..].join(" ")
            ))
        }
        ErrorKind::ArgumentConflict => {
            let Some(ContextValue::String(first)) = err.get(ContextKind::InvalidArg) else {
                return None;
            };
            let many = match err.get(ContextKind::PriorArg) {
                Some(ContextValue::Strings(v)) => v.len() >= 2,
                _ => false,
            };
            if !many {
                return None;
            }
            // Clap lists every member of the group the first flag
            // conflicts with (and may leave out the one given, or name it
            // by another alias): name the flags the user typed instead.
            use clap::CommandFactory;
            let subcommand = subcommand?;
            let command = Cli::command();
            let sub = command.find_subcommand(subcommand)?;
            let first_name = first.split([' ', '=', '[', '<']).next().unwrap_or(first);
            let first_arg = sub
                .get_arguments()
                .find(|a| a.get_long().is_some_and(|l| format!("--{l}") == first_name))?;
            let conflicts = sub.get_arg_conflicts_with(first_arg);
            let typed = |flag: &str| -> Option<String> {
                let name = flag.split('=').next().unwrap_or(flag);
                let long = name.strip_prefix("--")?;
                let arg = sub.get_arguments().find(|a| {
                    a.get_long() == Some(long)
                        || a.get_all_aliases().is_some_and(|v| v.contains(&long))
                })?;
                let conflicting = conflicts.iter().any(|c| c.get_id() == arg.get_id())
                    || sub
                        .get_arg_conflicts_with(arg)
                        .iter()
                        .any(|c| c.get_id() == first_arg.get_id());
                (arg.get_id() != first_arg.get_id() && conflicting).then(|| name.to_string())
            };
            let other = args[2..]
                .iter()
                .take_while(|a| a.as_str() != "--")
                .find_map(|a| typed(a))?;
            Some(format!(
                "{subcommand}: {first_name} cannot be used with {other}"
            ))
        }
        _ => None,
    }
}

/// `word` as a shell would need it typed.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
