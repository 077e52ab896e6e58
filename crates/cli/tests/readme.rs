//! The README's examples, run as written (issue 24): every command of
//! README.md's `sh` blocks and every `$ command` of its transcripts is
//! run with `sh` in a directory holding a small program
//! (`tests/readme/prog.c`, 60/30/10% in `burn_a`/`burn_b`/`burn_c`, also
//! named `spin` and `work`) and the profiles the README names, with the
//! built `cpuprof` first on PATH. A command must exit 0 (transcripts show
//! their own status with `echo $?`), and a transcript's output must match
//! the README's: line by line in order, numbers compared as numbers of
//! any value (sampling moves them), `...` standing for any lines.
//!
//! Extending it: a README command this file does not know fails the test
//! with the line to add to [`RULES`]: `Run` (with the fixture files it
//! needs created in [`Fixture::new`]) or `Skip` with the reason. The
//! skipped examples and why are in [`RULES`] (servers and remote
//! endpoints are tested by their own tests, named there).

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cpuprof_testkit::{repo_root, require_tool, TempDir};

/// What to do with a README command: the first rule whose needle the
/// command contains wins.
enum Action {
    /// Run it; it must succeed (and match its transcript).
    Run,
    /// Run it in a directory of its own (it rebuilds `./prog`, which the
    /// other examples' profiles belong to), with `cpuprof` installed by
    /// `scripts/install` in a temporary prefix that `pkg-config` and the
    /// loader search (as they search `/usr/local`).
    RunApart,
    /// Run it while the tool it pipes into is installed, else skip.
    RunWith(&'static str),
    /// A server: run it, check its first line of output, then stop it.
    Serve,
    /// Not run, for the reason given.
    Skip(&'static str),
}

use Action::*;

/// The README's commands, by a part of their text. Order matters: the
/// first match wins.
const RULES: &[(&str, Action)] = &[
    // Building and testing the tree itself.
    ("cargo run --release -- demo", Skip("the demo is run by crates/cli/tests/record_demo.rs")),
    ("cargo build --release", Skip("the test runs against the tree's own build")),
    ("bash scripts/test", Skip("the whole suite: this test is part of it")),
    ("scripts/install", Skip("installs into a prefix: run by readme.rs's linking test with a temporary prefix")),
    ("pkg-config", RunApart),
    ("cc prog.c", RunApart),
    ("CPUPROFILE=prog.prof ./prog", RunApart),
    // Programs that serve profiles over HTTP, and their clients.
    ("CPUPROFILE_HTTP=", Skip("starts a server in the background: crates/agent/tests/http_endpoint.rs")),
    ("pprof -top http", Skip("needs a running server: crates/agent/tests/http_endpoint.rs")),
    ("google-pprof --text --seconds", Skip("needs a running server: crates/agent/tests/http_endpoint.rs")),
    ("cpuprof report 127.0.0.1:", Skip("needs a running server: crates/cli/tests/remote.rs")),
    ("localhost:6060", Skip("needs a running server: crates/cli/tests/remote.rs")),
    ("http://127.0.0.1:6060", Skip("needs a running server: crates/cli/tests/remote.rs")),
    ("./server", Skip("a server program: crates/agent/tests/http_endpoint.rs, crates/cli/tests/remote.rs")),
    ("--http=:8080 perf.data", Skip("perf.data needs `perf record` (root): the perf.data reader's own tests")),
    ("--http=", Serve),
    // The CI gate script (a whole script, with ./bench and main.prof).
    ("./bench", Skip("the CI gate script's own program: the gate is tested by crates/cli/tests/statistics.rs")),
    ("status=$?", Skip("part of the CI gate script")),
    // Debuginfod, other machines' paths.
    ("DEBUGINFOD_URLS=", Skip("needs a symbol server: crates/cli/tests/debuginfod.rs")),
    ("--trim_path=/build/ci", Skip("names a build directory of another machine: crates/cli/tests/listings.rs")),
    // Tools outside the project.
    ("flamegraph.pl", RunWith("flamegraph.pl")),
    ("| jq", RunWith("jq")),
    ("| dot", RunWith("dot")),
    ("heap.pb.gz", Skip("a heap profile: its section's own tests")),
    // Sections other sessions add (replace a Skip by Run once the fixture
    // makes the files they read).
    ("perf record", Skip("perf.data needs `perf record` (root): the perf.data reader's own tests")),
    ("perf script", Skip("perf.data needs `perf record` (root): the perf.data reader's own tests")),
    ("perf.data", Skip("perf.data needs `perf record` (root): the perf.data reader's own tests")),
    ("before.data", Skip("perf.data needs `perf record` (root): the perf.data reader's own tests")),
    ("gcc -g -O1 app.c", Skip("the heap section's workload: tcmalloc's heap profiles are the heap profile reader's own tests")),
    ("HEAPPROFILE=", Skip("tcmalloc's heap profiler: the heap profile reader's own tests")),
    (".heap", Skip("tcmalloc's heap profiles: the heap profile reader's own tests")),
    ("./gobin", Skip("a Go program's block profile: the heap/legacy profile reader's own tests")),
    ("--dcpiprof ./prog.dcpi", Skip("a DCPI file of another machine: crates/cli/tests/formats.rs")),
    ("--comments prog.pb.gz", Run),
    // Everything else is ours and runs here.
    ("cpuprof ", Run),
    ("LD_PRELOAD=target/release/libcpuprof.so", Run),
    ("CPUPROFILE=", Run),
];

/// One command of the README, with what its transcript says it prints.
#[derive(Debug)]
struct Example {
    /// README line number (1-based) of the command.
    line: usize,
    command: String,
    /// For a transcript (`$ command` then its output): the lines shown.
    expected: Option<Vec<String>>,
    /// For the interactive shell's transcript: the commands typed.
    shell_input: Option<String>,
}

/// The commands of `readme`'s `sh` blocks and transcripts.
fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            // A table's example column: `cpuprof ...` in the last cell.
            if let Some(command) = table_example(lines[i]) {
                out.push(Example {
                    line: i + 1,
                    command,
                    expected: None,
                    shell_input: None,
                });
            }
            i += 1;
            continue;
        };
        let lang = lang.trim().to_string();
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        let block = &lines[start..end];
        match lang.as_str() {
            "sh" if block.first().is_some_and(|l| l.starts_with("#!")) => {
                // A script: each command in it is classified (and skipped
                // by its rule) like any other.
                for (k, l) in block.iter().enumerate().skip(1) {
                    let command = strip_comment(l);
                    if !command.is_empty() && command != "set -e" {
                        out.push(Example {
                            line: start + k + 1,
                            command,
                            expected: None,
                            shell_input: None,
                        });
                    }
                }
            }
            "sh" => {
                let mut k = 0;
                while k < block.len() {
                    let first = k;
                    let mut command = strip_comment(block[k]);
                    while command.ends_with('\\') && k + 1 < block.len() {
                        command.pop();
                        k += 1;
                        command.push_str(&strip_comment(block[k]));
                    }
                    if !command.is_empty() {
                        out.push(Example {
                            line: start + first + 1,
                            command,
                            expected: None,
                            shell_input: None,
                        });
                    }
                    k += 1;
                }
            }
            "" | "console" => {
                let mut k = 0;
                while k < block.len() {
                    let Some(command) = block[k].strip_prefix("$ ") else {
                        k += 1;
                        continue;
                    };
                    let first = k;
                    k += 1;
                    let mut expected = Vec::new();
                    while k < block.len() && !block[k].starts_with("$ ") {
                        expected.push(block[k].to_string());
                        k += 1;
                    }
                    let shell_input =
                        expected.iter().any(|l| l.starts_with("(pprof) ")).then(|| {
                            expected
                                .iter()
                                .filter_map(|l| l.strip_prefix("(pprof) "))
                                .filter(|c| !c.contains("<Tab>"))
                                .map(|c| format!("{c}\n"))
                                .collect()
                        });
                    out.push(Example {
                        line: start + first + 1,
                        command: strip_comment(command),
                        expected: Some(expected),
                        shell_input,
                    });
                }
            }
            _ => {}
        }
        i = end + 1;
    }
    out
}

/// The command in the last cell of a table row, when that cell is one
/// `cpuprof ...` in backticks (`\|` is a pipe there).
fn table_example(line: &str) -> Option<String> {
    let row = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    let cell = row.rsplit(" | ").next()?.trim();
    let command = cell.strip_prefix('`')?.strip_suffix('`')?;
    if command.contains('`') || !command.contains("cpuprof ") {
        return None;
    }
    let command = command.replace("\\|", "|");
    (command.starts_with("cpuprof ") || command.starts_with("echo ")).then_some(command)
}

/// `line` without its trailing `# comment` (a `#` after whitespace,
/// outside quotes) and surrounding blanks.
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..i].trim().to_string(),
            _ => {}
        }
        previous = c;
    }
    if line.trim_start().starts_with('#') {
        return String::new();
    }
    line.trim().to_string()
}

fn rule(command: &str) -> Option<&'static Action> {
    RULES
        .iter()
        .find(|(needle, _)| command.contains(needle))
        .map(|(_, action)| action)
}

/// A line with every number (integers, decimals, percentages' digits,
/// hex addresses) replaced by `#` and blanks collapsed.
fn shape(line: &str) -> String {
    // A value: a number (a percentage too), an address, or inf/nan.
    let number =
        regex::Regex::new(r"0x[0-9a-f]+|[-+]?[0-9]+(\.[0-9]+)?%?|[-+]?inf%?|nan%?").unwrap();
    let replaced = number.replace_all(line, "#");
    // A change's mark (`*` significant, `~` noise) is up to sampling too.
    replaced
        .split_whitespace()
        .map(|w| if w == "*" || w == "~" { "*~" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Functions whose rows a transcript may show or not, as sampling has it
/// (a few samples in the C library, the vDSO, gprof's `mcount`): the
/// README's rows naming them are not looked for.
const INCIDENTAL: &[&str] = &["clock_gettime", "__vdso", "cpu_now", "mcount"];

/// A table row: a line whose first word is a number.
fn is_row(shape: &str) -> bool {
    shape.starts_with('#')
}

/// Checks that `actual` shows the README's `expected` lines: other lines
/// and rows than the README's are allowed before them (a report's
/// `Total:` line) and between blocks; lines that are not table rows in
/// order; a block of table rows by the rows' shapes in any order (their
/// order follows the sampled counts) within the output's block of rows
/// at that place; `...` stands for any lines.
fn matches(expected: &[String], actual: &str) -> Result<(), String> {
    let actual: Vec<String> = actual
        .lines()
        .map(shape)
        .filter(|l| !l.is_empty())
        .collect();
    let expected: Vec<String> = expected
        .iter()
        .filter(|l| !INCIDENTAL.iter().any(|name| l.contains(name)))
        .map(|l| {
            if l.trim() == "..." {
                "...".to_string()
            } else {
                shape(l)
            }
        })
        .filter(|l| !l.is_empty())
        .collect();
    let fail = |what: &str, at: usize| {
        Err(format!(
            "{what} at output line {}; the output (numbers as #):\n{}",
            at + 1,
            actual.join("\n")
        ))
    };
    let mut at = 0;
    let mut gap = true;
    let mut k = 0;
    while k < expected.len() {
        if expected[k] == "..." {
            gap = true;
            k += 1;
            continue;
        }
        if is_row(&expected[k]) {
            // A block of rows.
            let mut end = k;
            while end < expected.len() && is_row(&expected[end]) {
                end += 1;
            }
            let rows = &expected[k..end];
            let starts = if gap {
                at..actual.len()
            } else {
                at..(at + 1).min(actual.len())
            };
            let found = starts.clone().find_map(|s| {
                let mut e = s;
                while e < actual.len() && is_row(&actual[e]) {
                    e += 1;
                }
                let block = &actual[s..e];
                rows.iter().all(|r| block.contains(r)).then_some(e)
            });
            match found {
                Some(e) => at = e,
                None => {
                    let missing: Vec<&String> = rows
                        .iter()
                        .filter(|r| !actual[at.min(actual.len())..].contains(r))
                        .collect();
                    return fail(&format!("rows like {missing:?} not found"), at);
                }
            }
            k = end;
        } else {
            let found = if gap {
                actual[at..]
                    .iter()
                    .position(|a| *a == expected[k])
                    .map(|p| at + p)
            } else {
                (at < actual.len() && actual[at] == expected[k]).then_some(at)
            };
            match found {
                Some(j) => at = j + 1,
                None => return fail(&format!("expected a line like {:?}", expected[k]), at),
            }
            k += 1;
        }
        gap = false;
    }
    Ok(())
}

/// The directory the README's commands run in.
struct Fixture {
    _dir: TempDir,
    work: PathBuf,
    apart: PathBuf,
    prefix: PathBuf,
    path: String,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = TempDir::new().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        // `cpuprof` on PATH, and the tree's paths the README names.
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let cpuprof = PathBuf::from(env!("CARGO_BIN_EXE_cpuprof"));
        let release = cpuprof.parent().unwrap();
        std::os::unix::fs::symlink(&cpuprof, bin.join("cpuprof")).unwrap();
        let apart = dir.path().join("apart");
        let source = common::readme_prog();
        for place in [&work, &apart] {
            std::fs::create_dir_all(place.join("target")).unwrap();
            std::os::unix::fs::symlink(release, place.join("target/release")).unwrap();
            std::fs::create_dir_all(place.join("crates/agent")).unwrap();
            std::os::unix::fs::symlink(
                repo_root().join("crates/agent/include"),
                place.join("crates/agent/include"),
            )
            .unwrap();
            std::fs::copy(&source, place.join("prog.c")).unwrap();
        }
        let prefix = dir.path().join("prefix");
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let fixture = Fixture {
            _dir: dir,
            work,
            apart,
            prefix,
            path,
        };
        let install = repo_root().join("scripts/install");
        let release_dir = release.parent().unwrap().to_path_buf();
        let (status, output) = fixture.run_in(
            &fixture.work,
            &format!(
                "CARGO_TARGET_DIR={} sh {} {}",
                release_dir.display(),
                install.display(),
                fixture.prefix.display()
            ),
            None,
            Duration::from_secs(60),
        );
        assert_eq!(status, Some(0), "scripts/install: {output}");
        // One build under three names (the README's ./prog, ./spin,
        // ./work); -pg so that it writes the gmon.out the README reads.
        fixture.setup("cc -O2 -g -pg prog.c -o prog && cp prog spin && cp prog work");
        for (command, env) in [
            (
                "cpuprof record --format gperftools -o prog.prof -- ./prog",
                "",
            ),
            (
                "cpuprof record --format gperftools -o spin.prof -- ./spin",
                "README_PROG_SECONDS=1",
            ),
            (
                "cpuprof record --format gperftools -o before.prof -- ./work",
                "README_PROG_SECONDS=1",
            ),
            (
                "cpuprof record --format gperftools -o after.prof -- ./work",
                "README_PROG_SECONDS=1 README_PROG_B_TWICE=1",
            ),
            // 0.8 s, not 1: a base total near one second prints as 998ms
            // in one run and 1.01s in the next.
            (
                "cpuprof record -o old.pb.gz -- ./work",
                "README_PROG_SECONDS=0.8",
            ),
            (
                "cpuprof record -o new.pb.gz -- ./work",
                "README_PROG_SECONDS=0.8 README_PROG_B_TWICE=1",
            ),
            ("cpuprof record -o app.pb.gz -- ./prog", ""),
            ("cpuprof record --realtime -o wall.pb.gz -- ./prog", ""),
            ("cpuprof convert prog.prof -o prog.pb.gz --to pprof", ""),
            ("cp prog.prof a.prof && cp spin.prof b.prof", ""),
            ("./prog", ""),
        ] {
            fixture.setup(&format!("env {env} {command} > /dev/null"));
        }
        assert!(fixture.work.join("gmon.out").is_file(), "gmon.out written");
        fixture
    }

    fn setup(&self, command: &str) {
        let (status, output) = self.run(command, None, Duration::from_secs(120));
        assert_eq!(status, Some(0), "setup `{command}`: {output}");
    }

    /// Runs `command` with `sh` in the work directory, standard error
    /// merged into standard output: (exit status, output). None when it
    /// ran past `timeout` (then it was killed).
    fn run(&self, command: &str, input: Option<&str>, timeout: Duration) -> (Option<i32>, String) {
        self.run_in(&self.work, command, input, timeout)
    }

    /// [`Fixture::run`] in `dir`.
    fn run_in(
        &self,
        dir: &Path,
        command: &str,
        input: Option<&str>,
        timeout: Duration,
    ) -> (Option<i32>, String) {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec 2>&1; {command}"))
            .current_dir(dir)
            .env("PKG_CONFIG_PATH", self.prefix.join("lib/pkgconfig"))
            .env("LD_LIBRARY_PATH", self.prefix.join("lib"))
            .env("PATH", &self.path)
            .env("README_PROG_SECONDS", "0.5")
            .env("BROWSER", "true")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("DEBUGINFOD_URLS")
            .env("PPROF_TMPDIR", self.work.join("pprof"))
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        if let Some(input) = input {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stdout.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        });
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.code();
            }
            if Instant::now() > deadline {
                // The whole group: sh and what it started.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGTERM) };
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (status, reader.join().unwrap())
    }
}

use std::os::unix::process::CommandExt;

#[test]
fn every_readme_command_is_run_or_skipped_for_a_stated_reason() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(examples.len() > 40, "the README's examples were found");
    let unknown: Vec<String> = examples
        .iter()
        .filter(|e| rule(&e.command).is_none())
        .map(|e| format!("README.md:{}: {}", e.line, e.command))
        .collect();
    assert!(
        unknown.is_empty(),
        "README commands with no rule in crates/cli/tests/readme.rs's RULES (add Run, or Skip with the reason):\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_readme_examples_work_as_written() {
    if !require_tool("gcc") {
        return;
    }
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let fixture = Fixture::new();
    let mut failures = Vec::new();
    let mut ran = 0;
    for example in examples(&readme) {
        let action = rule(&example.command).unwrap_or(&Skip("no rule"));
        let command = example.command.as_str();
        let result = match action {
            Skip(why) => {
                println!("skipped README.md:{}: {command}: {why}", example.line);
                continue;
            }
            RunWith(tool) if cpuprof_testkit::which(tool).is_none() => {
                println!(
                    "skipped README.md:{}: {command}: {tool} is not installed",
                    example.line
                );
                continue;
            }
            RunApart => {
                let (status, output) =
                    fixture.run_in(&fixture.apart, command, None, Duration::from_secs(60));
                match status {
                    Some(0) => Ok(()),
                    status => Err(format!("exit status {status:?}:\n{output}")),
                }
            }
            Run | RunWith(_) => match &example.shell_input {
                Some(input) => {
                    // The shell's transcript: the same commands, scripted.
                    let scripted = command.replacen("cpuprof report ", "cpuprof report -i ", 1);
                    let (status, output) =
                        fixture.run(&scripted, Some(input), Duration::from_secs(60));
                    check_shell(status, &output, example.expected.as_deref().unwrap_or(&[]))
                }
                None => {
                    let (status, output) = fixture.run(command, None, Duration::from_secs(60));
                    match (status, &example.expected) {
                        (Some(0), None) => Ok(()),
                        (Some(0), Some(expected)) => matches(expected, &output),
                        (status, _) => Err(format!("exit status {status:?}:\n{output}")),
                    }
                }
            },
            Serve => {
                let (_, output) = fixture.run(command, None, Duration::from_secs(5));
                match &example.expected {
                    Some(expected) => matches(expected, &output),
                    None if output.contains("Serving web UI on http://") => Ok(()),
                    None => Err(format!("no `Serving web UI on`:\n{output}")),
                }
            }
        };
        ran += 1;
        if let Err(why) = result {
            failures.push(format!("README.md:{}: `{command}`: {why}", example.line));
        }
    }
    assert!(
        failures.is_empty(),
        "{} README examples do not work as written:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(ran > 40, "{ran} examples ran");
}

/// The shell's transcript: the results of the `(pprof)` commands (the
/// greeting and prompts are not printed when scripted; an error's line
/// goes to stderr, merged here).
fn check_shell(status: Option<i32>, output: &str, expected: &[String]) -> Result<(), String> {
    let mut results = Vec::new();
    let mut in_greeting = true;
    for line in expected {
        if line.starts_with("(pprof) ") {
            in_greeting = false;
            continue;
        }
        if in_greeting || line.contains("<Tab>") {
            continue;
        }
        results.push(line.clone());
    }
    // The completion listing after `<Tab>` is not a result.
    if let Some(p) = results.iter().position(|l| l.starts_with("burn_a  burn_b")) {
        results.remove(p);
    }
    match status {
        // An unrecognized command makes the scripted shell's status 1.
        Some(0 | 1) => matches(&results, output),
        other => Err(format!("exit status {other:?}:\n{output}")),
    }
}

#[test]
fn examples_are_read_from_blocks_and_transcripts() {
    let readme = "text\n```sh\ncpuprof report --text ./p p.prof   # a comment\nLD_PRELOAD=x \\\n  ./p\n```\n\
                  ```\n$ cpuprof report --focus='#x' p\nTotal: 12 samples\n...\n```\n\
                  | `--dot` | the graph | `cpuprof report --dot ./p p.prof \\| dot -Tpng > g.png` |\n";
    let found = examples(readme);
    assert_eq!(found.len(), 4, "{found:?}");
    assert_eq!(
        found[3].command,
        "cpuprof report --dot ./p p.prof | dot -Tpng > g.png"
    );
    assert_eq!(found[0].command, "cpuprof report --text ./p p.prof");
    assert_eq!(found[0].line, 3);
    assert_eq!(found[1].command, "LD_PRELOAD=x ./p");
    assert_eq!(found[2].command, "cpuprof report --focus='#x' p");
    assert_eq!(found[2].expected.as_ref().unwrap().len(), 2);
    assert_eq!(shape("     605  59.5%  -inf burn_a"), "# # # burn_a");
    assert!(matches(
        &["Total: 9 samples".into(), "...".into(), "x 1".into()],
        "Total: 3 samples\ny\nx 2\n"
    )
    .is_ok());
    assert!(matches(
        &["Total: 9 samples".into(), "x 1".into()],
        "Total: 3 samples\ny\nx 2\n"
    )
    .is_err());
}

/// README's Install section: `scripts/install PREFIX` and a C program
/// linked with `-lcpuprof` by both recipes (pkg-config, the build tree):
/// our header is the one included, the program starts (the library is
/// found: an rpath, as the README says for another prefix) and writes its
/// profile, through the C API and through `CPUPROFILE` alone.
#[test]
fn a_c_program_links_with_lcpuprof_as_the_readme_says() {
    if !require_tool("gcc") {
        return;
    }
    let fixture_dir = TempDir::new().unwrap();
    let dir = fixture_dir.path();
    let cpuprof = PathBuf::from(env!("CARGO_BIN_EXE_cpuprof"));
    let release = cpuprof.parent().unwrap();
    let prefix = dir.join("prefix");
    let sh = |command: &str| -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(dir)
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .env("README_PROG_SECONDS", "0.3")
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{command}`: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sh(&format!(
        "CARGO_TARGET_DIR={} sh {} {}",
        release.parent().unwrap().display(),
        repo_root().join("scripts/install").display(),
        prefix.display()
    ));
    for file in [
        "bin/cpuprof",
        "lib/libcpuprof.so",
        "include/cpuprof/gperftools/profiler.h",
    ] {
        assert!(prefix.join(file).is_file(), "{file}");
    }
    // A program of gperftools' C API.
    let source = std::fs::read_to_string(common::readme_prog()).unwrap();
    let api = source
        .replace(
            "#include <stdio.h>",
            "#include <stdio.h>\n#include <gperftools/profiler.h>",
        )
        .replace(
            "    double r = work(",
            "    ProfilerStart(\"api.prof\");\n    double r = work(",
        )
        .replace(
            "    printf(\"done",
            "    ProfilerStop();\n    printf(\"done",
        );
    std::fs::write(dir.join("api.c"), api).unwrap();
    std::fs::copy(common::readme_prog(), dir.join("prog.c")).unwrap();
    let ours = |deps: &str, header: &Path| {
        let line = deps
            .split_whitespace()
            .find(|w| w.ends_with("gperftools/profiler.h"))
            .unwrap_or_else(|| panic!("no profiler.h in {deps}"));
        assert_eq!(
            std::fs::canonicalize(line).unwrap(),
            std::fs::canonicalize(header).unwrap(),
            "the header included"
        );
    };
    let pkg =
        "$(pkg-config --cflags --libs cpuprof) -Wl,-rpath,$(pkg-config --variable=libdir cpuprof)";
    ours(
        &sh("cc -M api.c $(pkg-config --cflags cpuprof)"),
        &prefix.join("include/cpuprof/gperftools/profiler.h"),
    );
    let tree = format!(
        "-I {include} -L {release} -Wl,-rpath,{release} -Wl,--no-as-needed -lcpuprof",
        include = repo_root().join("crates/agent/include").display(),
        release = release.display()
    );
    ours(
        &sh(&format!(
            "cc -M api.c -I {}",
            repo_root().join("crates/agent/include").display()
        )),
        &repo_root().join("crates/agent/include/gperftools/profiler.h"),
    );
    for (recipe, flags) in [("pkg-config", pkg.to_string()), ("build tree", tree)] {
        for f in ["api.prof", "env.prof"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        sh(&format!("cc -O2 -g api.c {flags} -o api && ./api"));
        sh(&format!(
            "cc -O2 -g prog.c {flags} -o prog && CPUPROFILE=env.prof ./prog"
        ));
        for (binary, profile) in [("api", "api.prof"), ("prog", "env.prof")] {
            let report = sh(&format!(
                "{} report --text ./{binary} {profile}",
                cpuprof.display()
            ));
            // Names from the program (at 100 Hz, 30 samples: which of
            // burn_a and burn_b is on top is up to sampling).
            for name in ["burn_a", "burn_b", "work"] {
                assert!(report.contains(name), "{recipe}: {binary}: {report}");
            }
        }
    }
}
