//! cpuprof's interactive shell: pprof's `(pprof) ` prompt over a
//! [`cpuprof_driver::Session`].
//!
//! The shell only reads lines and acts on what [`cpuprof_driver::line`]
//! parses them into; every report is the driver's [`Session::run`], as in
//! one-shot mode. What is the shell's own: line editing and a history kept
//! across runs ([`history_path`]), Tab completion of commands, settings,
//! their values, and the profile's function names ([`complete`]), Ctrl-C
//! that stops the running command and never the session
//! ([`interrupt`]), and scripted use (`-i` with standard input not a
//! terminal: one command per line, nothing printed but the results).
//!
//! It is a crate of its own so that the terminal (rustyline) stays out of
//! the driver, which the web UI shares.

mod complete;
pub mod interrupt;

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;
use cpuprof_driver::commands::CommandDef;
use cpuprof_driver::line::{self, Invocation, Line};
use cpuprof_driver::{Config, Destination, Session};

pub use complete::{complete, Vocabulary};

/// Where the shell's lines come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A terminal: prompt, greeting, line editing, history, completion.
    Terminal,
    /// Lines of standard input (a pipe, a file): no prompt, no greeting,
    /// only the results.
    Script,
}

impl Input {
    /// A terminal when standard input and output both are, else a script.
    pub fn detect() -> Input {
        if io::stdin().is_terminal() && io::stdout().is_terminal() {
            Input::Terminal
        } else {
            Input::Script
        }
    }
}

/// Runs the shell on `session` with the settings given on the command
/// line (`session` lives as long as the process: a report stopped by
/// Ctrl-C may still be finishing in the background); returns the exit status (0 at `quit` or end of input; 1 when a
/// script's command failed, after running the rest).
pub fn run(session: &'static Session, settings: Config, input: Input) -> Result<i32> {
    let mut shell = Shell {
        session,
        config: settings,
        sample_types: session.sample_types(),
        failed: false,
    };
    interrupt::install();
    match input {
        Input::Script => {
            let stdin = io::stdin();
            for line in stdin.lock().lines() {
                let line = line?;
                if shell.execute(&line) == Flow::Quit {
                    break;
                }
            }
        }
        Input::Terminal => shell.interactive()?,
    }
    Ok(i32::from(shell.failed))
}

/// The history file: `$XDG_DATA_HOME/cpuprof/history`, else
/// `~/.local/share/cpuprof/history`.
pub fn history_path() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/share"))
        })?;
    Some(data.join("cpuprof").join("history"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

struct Shell {
    session: &'static Session,
    config: Config,
    sample_types: Vec<String>,
    failed: bool,
}

/// The rustyline helper: completion only.
struct Helper {
    vocabulary: Vocabulary,
}

impl rustyline::completion::Completer for Helper {
    type Candidate = rustyline::completion::Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Self::Candidate>)> {
        let (start, candidates) = complete(&line[..pos], &self.vocabulary);
        Ok((
            start,
            candidates
                .into_iter()
                .map(|(display, replacement)| rustyline::completion::Pair {
                    display,
                    replacement,
                })
                .collect(),
        ))
    }
}

impl rustyline::hint::Hinter for Helper {
    type Hint = String;
}
impl rustyline::highlight::Highlighter for Helper {}
impl rustyline::validate::Validator for Helper {}
impl rustyline::Helper for Helper {}

impl Shell {
    fn interactive(&mut self) -> Result<()> {
        print!("{}", self.session.greeting(&self.config)?);
        io::stdout().flush()?;
        let config = rustyline::Config::builder()
            .auto_add_history(false)
            .completion_type(rustyline::CompletionType::List)
            .max_history_size(1000)?
            .build();
        let mut editor: rustyline::Editor<Helper, rustyline::history::DefaultHistory> =
            rustyline::Editor::with_config(config)?;
        editor.set_helper(Some(Helper {
            vocabulary: Vocabulary::new(&self.sample_types, self.session.function_names()),
        }));
        let history = history_path();
        if let Some(path) = &history {
            // No history yet is not an error.
            let _ = editor.load_history(path);
        }
        loop {
            match editor.readline("(pprof) ") {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = editor.add_history_entry(line.as_str());
                        if let Some(path) = &history {
                            save_history(&mut editor, path);
                        }
                    }
                    if self.execute(&line) == Flow::Quit {
                        return Ok(());
                    }
                }
                // Ctrl-C at the prompt: a new prompt, as in a shell.
                Err(rustyline::error::ReadlineError::Interrupted) => continue,
                // Ctrl-D.
                Err(rustyline::error::ReadlineError::Eof) => {
                    println!();
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Acts on one line; errors are one line on stderr.
    fn execute(&mut self, input: &str) -> Flow {
        match self.try_execute(input) {
            Ok(flow) => flow,
            Err(e) => {
                if !interrupt::is_interruption(&e) {
                    eprintln!("{}", one_line(&e));
                    self.failed = true;
                }
                Flow::Continue
            }
        }
    }

    fn try_execute(&mut self, input: &str) -> Result<Flow> {
        match line::parse(input, &self.sample_types)? {
            Line::Empty => {}
            Line::Quit => return Ok(Flow::Quit),
            Line::ClearFilters => self.config.clear_filters(),
            Line::Options => print!("{}", self.config.listing(&self.sample_types)),
            Line::Help(None) => print!("{}", line::help()),
            Line::Help(Some(word)) => print!("{}", line::help_for(&word, &self.sample_types)?),
            Line::Set { name, value } => {
                let mut config = self.config.clone();
                config.set(&name, value.as_deref())?;
                // Check what only the profile can say (sample_index).
                config.report_options(self.session.profile())?;
                self.config = config;
            }
            Line::SampleType(name) => self.config.set("sample_index", Some(&name))?,
            Line::Report(invocation) => self.report(&invocation)?,
        }
        io::stdout().flush()?;
        Ok(Flow::Continue)
    }

    /// Runs a report in a worker thread, so that Ctrl-C returns to the
    /// prompt at once: the abandoned report stops at its next write.
    fn report(&mut self, invocation: &Invocation) -> Result<()> {
        let mut config = invocation.config(&self.config)?;
        let command: &'static CommandDef = invocation.command;
        let stdout_is_terminal = io::stdout().is_terminal();
        let width = cpuprof_driver::session::terminal_width();
        // Binary and HTML outputs go to a file, on a terminal or not: a
        // script's standard output holds the text results only.
        if command.away_from_terminal() && config.text("output").is_none() {
            let path = cpuprof_driver::session::temp_path(command);
            println!("Generating report in {}", path.display());
            config.set("output", Some(&path.display().to_string()))?;
        }
        let regex = invocation.regex.clone();
        let timing = std::env::var_os("CPUPROF_SHELL_TIMING").is_some();
        let started = Instant::now();
        let ticket = interrupt::ticket();
        let session = self.session;
        let (done, finished) = mpsc::channel();
        // A thread of its own, not scoped: after Ctrl-C the prompt comes
        // back at once and the abandoned report stops at its next write.
        let worker = std::thread::spawn(move || {
            let mut out = interrupt::Writer::new(io::stdout(), ticket);
            let result = session.run(
                command,
                regex.as_deref(),
                &config,
                Destination {
                    out: &mut out,
                    is_terminal: stdout_is_terminal,
                    width,
                },
            );
            let _ = done.send(());
            result
        });
        loop {
            match finished.recv_timeout(Duration::from_millis(20)) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if ticket.interrupted() => {
                    eprintln!("\ninterrupted");
                    return Ok(());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        let result = worker
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("{}: internal error (panic)", command.name)));
        if timing {
            eprintln!(
                "cpuprof: {}: {:.1} ms",
                command.name,
                started.elapsed().as_secs_f64() * 1e3
            );
        }
        result
    }
}

/// Appends the newest entry to the history file (creating its directory),
/// so that a killed session keeps what was typed.
fn save_history(
    editor: &mut rustyline::Editor<Helper, rustyline::history::DefaultHistory>,
    path: &std::path::Path,
) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if editor.append_history(path).is_err() {
        let _ = editor.save_history(path);
    }
}

/// An error as one line: its messages joined with `: `.
fn one_line(e: &anyhow::Error) -> String {
    let text = format!("{e:#}");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
