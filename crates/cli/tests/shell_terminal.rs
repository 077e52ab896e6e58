//! The interactive shell on a real terminal: `cpuprof report SPIN PROFILE`
//! run in a detached tmux session (a pseudo-terminal, TERM=xterm, a clean
//! environment whose HOME and XDG_DATA_HOME are the test's own), typed at
//! with `tmux send-keys` and read with `tmux capture-pane`:
//! - with no output option the greeting (with the same `Total:` as the
//!   one-shot `--text`) and the `(pprof) ` prompt; with `--text` the report
//!   and no prompt;
//! - reports equal to the one-shot ones (`top5`, `top` after `focus=` and
//!   after `:`), `list`, `o`, `help top`, `tree`;
//! - errors are one line and the prompt stays;
//! - Ctrl-C stops a long `traces` and the session goes on; Ctrl-C at the
//!   prompt clears the line;
//! - Tab completion of commands, setting values and function names
//!   (rustyline's List mode: the common prefix first, the list at the
//!   second Tab);
//! - history kept across runs, in `$XDG_DATA_HOME/cpuprof/history` or
//!   `~/.local/share/cpuprof/history`;
//! - `quit` and Ctrl-D end with status 0.
//!
//! Every wait is a bounded poll of the screen; each test has its own tmux
//! server, killed when the test ends (also on panic).
//!
//! One line is typed at a time, after the prompt is back: rustyline (built
//! without its `buffer-redux` feature) drops what it read past the end of a
//! line, so lines typed ahead while it is reading are lost.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use cpuprof_testkit::{
    build_spin, libprofiler, peers_required, profile_with_libprofiler, require_tool, TempDir,
    TextReport,
};

mod common;
use common::report;
use common::tmux::{at_prompt, prompts, Tmux, PATIENCE};

/// spin, its profile (libprofiler), and the one-shot `--text` of the two,
/// made once for the file.
struct Spin {
    binary: PathBuf,
    profile: PathBuf,
    text: String,
}

fn spin() -> Option<&'static Spin> {
    static SPIN: OnceLock<Option<(TempDir, Spin)>> = OnceLock::new();
    SPIN.get_or_init(|| {
        if !require_tool("tmux") || !require_tool("gcc") {
            return None;
        }
        let lib = libprofiler()?;
        let dir = TempDir::new().unwrap();
        let (binary, _) = build_spin(dir.path(), "spin", &[]);
        let profile = dir.path().join("spin.prof");
        profile_with_libprofiler(&lib, &binary, &["-s", "0.6"], &profile, 1000);
        let text = report(&["--text"], &[&binary, &profile]);
        Some((
            dir,
            Spin {
                binary,
                profile,
                text,
            },
        ))
    })
    .as_ref()
    .map(|(_, spin)| spin)
}

/// A row of a text report (as [`TextReport::parse`] takes them).
fn is_row(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() >= 6
        && f[1].ends_with('%')
        && f[4].ends_with('%')
        && f[0].parse::<i64>().is_ok()
        && f[3].parse::<i64>().is_ok()
}

/// The rows of a text report, as printed.
fn rows<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| is_row(l.as_ref()))
        .map(|l| l.as_ref().trim_end().to_string())
        .collect()
}

/// The `Total:` line of the one-shot `--text`.
fn total_line(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("Total: "))
        .unwrap_or_else(|| panic!("no Total: line in\n{text}"))
}

#[test]
fn the_prompt_follows_the_greeting_and_reports_equal_the_one_shot_ones() {
    let Some(spin) = spin() else { return };
    let one_shot = TextReport::parse(&spin.text);
    let one_shot_rows = rows(spin.text.lines());
    // burn_a, burn_b, burn_c, recurse, work, main, ...: more than 5.
    assert!(one_shot_rows.len() > 5, "{}", spin.text);
    let burn_b = one_shot.row("burn_b").expect("a burn_b row").clone();
    assert!(burn_b.cum > 0 && burn_b.cum < one_shot.total);

    let home = TempDir::new().unwrap();
    let data = home.path().join("data");
    let tmux = Tmux::start(
        "reports",
        home.path(),
        Some(&data),
        &[Path::new("report"), &spin.binary, &spin.profile],
    );
    let screen = tmux.wait_for_prompt();
    assert_eq!(
        screen,
        [
            format!(
                "Inputs: {} {}",
                spin.binary.display(),
                spin.profile.display()
            ),
            total_line(&spin.text).to_string(),
            "Entering interactive mode (type \"help\" for commands, \"o\" for options)".into(),
            "(pprof)".into(),
        ]
    );
    assert_eq!(
        total_line(&spin.text),
        format!("Total: {} samples", one_shot.total)
    );

    // top5: the Total line and the first five rows of the one-shot report.
    let out = tmux.command("top5");
    assert_eq!(out[0], total_line(&spin.text), "{out:#?}");
    assert_eq!(out[1..], one_shot_rows[..5], "{out:#?}");

    // focus=burn_b persists: `top` keeps burn_b's stacks only, as the
    // one-shot `--focus=burn_b`. On them burn_b's callers have its cum, and
    // what it calls (cpu_now, when sampled) less.
    assert_eq!(tmux.command("focus=burn_b"), Vec::<String>::new());
    let out = tmux.command("top");
    let focused_text = report(
        &["--text", "--focus=burn_b"],
        &[&spin.binary, &spin.profile],
    );
    let focused_rows = rows(focused_text.lines());
    assert_eq!(out[0], total_line(&spin.text), "{out:#?}");
    assert_eq!(
        out[1..],
        focused_rows[..focused_rows.len().min(10)],
        "{out:#?}"
    );
    let focused = TextReport::parse(&out.join("\n"));
    assert_eq!(focused.row("burn_b"), Some(&burn_b), "{out:#?}");
    for caller in ["work", "main"] {
        let row = focused.row(caller);
        assert_eq!(row.map(|r| r.cum), Some(burn_b.cum), "{caller} in {out:#?}");
    }
    for row in &focused.rows {
        assert!(row.cum <= burn_b.cum, "{row:?} in {out:#?}");
        assert!(!["burn_a", "burn_c", "recurse"].contains(&row.name.as_str()));
    }

    // `:` clears it: `top` is the first ten one-shot rows again.
    assert_eq!(tmux.command(":"), Vec::<String>::new());
    let out = tmux.command("top");
    assert_eq!(out[0], total_line(&spin.text), "{out:#?}");
    assert_eq!(
        out[1..],
        one_shot_rows[..one_shot_rows.len().min(10)],
        "{out:#?}"
    );

    let out = tmux.command("list burn_b");
    assert!(
        out[0].starts_with("ROUTINE ====================== burn_b in ")
            && out[0].ends_with("spin.c"),
        "{out:#?}"
    );
    let totals: Vec<&str> = out[1].split_whitespace().collect();
    assert_eq!(
        totals,
        [
            &burn_b.flat.to_string(),
            &burn_b.cum.to_string(),
            "Total",
            "samples",
            "(flat",
            "/",
            "cumulative)"
        ],
        "{out:#?}"
    );
    assert!(
        out.iter().any(|l| l.contains("double burn_b(double s) {")),
        "{out:#?}"
    );

    let out = tmux.command("o");
    let granularity: Vec<&String> = out
        .iter()
        .filter(|l| l.trim_start().starts_with("granularity "))
        .collect();
    assert_eq!(granularity.len(), 1, "{out:#?}");
    let fields: Vec<&str> = granularity[0].split_whitespace().collect();
    assert_eq!(
        fields,
        [
            "granularity",
            "=",
            "functions",
            "//:",
            "[addresses",
            "|",
            "files",
            "|",
            "functions",
            "|",
            "lines]"
        ],
        "{out:#?}"
    );
    assert!(
        out.iter()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["focus", "=", "\"\""]),
        "the focus was cleared: {out:#?}"
    );

    let top = cpuprof_driver::commands::command("top").unwrap();
    let out = tmux.command("help top");
    assert_eq!(out[0], format!("top {}", top.usage), "{out:#?}");
    assert!(out[0].starts_with("top [n] "), "{out:#?}");
    assert_eq!(out[1].trim(), top.help, "{out:#?}");

    tmux.type_text("quit");
    tmux.keys(&["Enter"]);
    assert_eq!(tmux.wait_for_exit(), 0);
}

#[test]
fn an_output_option_prints_the_report_and_no_prompt() {
    let Some(spin) = spin() else { return };
    let home = TempDir::new().unwrap();
    let tmux = Tmux::start(
        "text",
        home.path(),
        Some(&home.path().join("data")),
        &[
            Path::new("report"),
            Path::new("--text"),
            &spin.binary,
            &spin.profile,
        ],
    );
    assert_eq!(tmux.wait_for_exit(), 0);
    let screen = tmux.lines();
    assert_eq!(prompts(&screen), 0, "{screen:#?}");
    assert_eq!(rows(&screen), rows(spin.text.lines()), "{screen:#?}");
}

#[test]
fn errors_are_one_line_and_the_prompt_stays() {
    let Some(spin) = spin() else { return };
    let home = TempDir::new().unwrap();
    let tmux = Tmux::start(
        "errors",
        home.path(),
        Some(&home.path().join("data")),
        &[Path::new("report"), &spin.binary, &spin.profile],
    );
    tmux.wait_for_prompt();
    assert_eq!(
        tmux.command("tpo"),
        ["unrecognized command: \"tpo\" (did you mean top?); type \"help\" for commands"]
    );
    let out = tmux.command("focus=(");
    assert_eq!(out.len(), 1, "{out:#?}");
    assert!(
        out[0].starts_with("focus=(: invalid regular expression"),
        "{out:#?}"
    );
    let out = tmux.command("list");
    assert_eq!(out.len(), 1, "{out:#?}");
    assert!(
        out[0].starts_with("list needs a regular expression"),
        "{out:#?}"
    );
    // The bad focus was not kept: `top 3` is the unfocused report.
    let out = tmux.command("top 3");
    assert_eq!(out[1..], rows(spin.text.lines())[..3], "{out:#?}");
}

/// gen-big-profile, built next to cpuprof by `cargo build --release
/// --workspace --all-targets` (scripts/test); `None` (the test skipped)
/// when it is missing and peers are not required.
fn gen_big_profile() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_BIN_EXE_cpuprof")).with_file_name("gen-big-profile");
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{} is missing: build it with `cargo build --release -p cpuprof-testkit --bins`",
        path.display()
    );
    if peers_required() {
        panic!("{message}");
    }
    eprintln!("SKIPPED: {message}");
    None
}

#[test]
fn ctrl_c_stops_a_long_command_and_the_session_goes_on() {
    let Some(spin) = spin() else { return };
    let Some(generator) = gen_big_profile() else {
        return;
    };
    let dir = TempDir::new().unwrap();
    // 100k records: `traces` writes ~120 MB, several seconds on a terminal.
    let big = dir.path().join("big.prof");
    let status = Command::new(&generator)
        .arg(&big)
        .arg("--binary")
        .arg(&spin.binary)
        .args(["--records", "100000", "--pcs", "5000"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let home = TempDir::new().unwrap();
    let tmux = Tmux::start(
        "ctrl-c",
        home.path(),
        Some(&home.path().join("data")),
        &[Path::new("report"), &spin.binary, &big],
    );
    tmux.wait_for_prompt();

    tmux.type_text("traces");
    tmux.keys(&["Enter"]);
    tmux.wait("traces' first stacks", PATIENCE, |l| {
        l.iter().filter(|l| l.starts_with("-----------+")).count() >= 2
    });
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["C-c"]);
    let screen = tmux.wait(
        "the prompt within 2 s of Ctrl-C",
        Duration::from_secs(2),
        at_prompt,
    );
    // The output was cut: it does not end as the whole one does.
    let last = |lines: &mut dyn Iterator<Item = String>| -> Vec<String> {
        let mut tail: Vec<String> = lines
            .filter(|l| !l.trim().is_empty() && l != "interrupted")
            .collect();
        tail.drain(..tail.len().saturating_sub(3));
        tail
    };
    let cut = last(&mut screen[..screen.len() - 1].iter().cloned());
    let mut whole = Command::new(env!("CARGO_BIN_EXE_cpuprof"))
        .arg("report")
        .arg("--traces")
        .arg(&spin.binary)
        .arg(&big)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = std::io::BufReader::new(whole.stdout.take().unwrap());
    let whole_tail = last(&mut std::io::BufRead::lines(reader).map(Result::unwrap));
    assert!(whole.wait().unwrap().success());
    assert_eq!(whole_tail.len(), 3);
    assert!(whole_tail[2].starts_with("-----------+"), "{whole_tail:?}");
    assert_ne!(cut, whole_tail, "traces was not interrupted");

    // Ctrl-C at the prompt drops the line typed and gives a new prompt.
    let before = prompts(&tmux.lines());
    tmux.type_text("top 99 burn");
    tmux.wait("the typed line", PATIENCE, |l| {
        l.last().is_some_and(|l| l == "(pprof) top 99 burn")
    });
    tmux.keys(&["C-c"]);
    tmux.wait("a new prompt after Ctrl-C", PATIENCE, |l| {
        at_prompt(l) && prompts(l) == before + 1
    });

    // The session still answers, with the big profile's report.
    let text = report(&["--text"], &[&spin.binary, &big]);
    let out = tmux.command("top 3");
    assert_eq!(out[0], total_line(&text), "{out:#?}");
    assert_eq!(out[1..], rows(text.lines())[..3], "{out:#?}");
}

#[test]
fn tab_completes_commands_values_and_function_names() {
    let Some(spin) = spin() else { return };
    let one_shot = TextReport::parse(&spin.text);
    let home = TempDir::new().unwrap();
    let tmux = Tmux::start(
        "tab",
        home.path(),
        Some(&home.path().join("data")),
        &[Path::new("report"), &spin.binary, &spin.profile],
    );
    tmux.wait_for_prompt();
    let last_is = |line: &'static str| move |l: &[String]| l.last().is_some_and(|l| l == line);

    // A command: `tre` is only `tree`.
    tmux.type_text("tre");
    tmux.keys(&["Tab"]);
    tmux.wait("tre<Tab> completed", PATIENCE, last_is("(pprof) tree"));
    let before = prompts(&tmux.lines());
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("tree's report", PATIENCE, |l| {
        at_prompt(l) && prompts(l) > before
    });
    assert!(
        screen
            .iter()
            .any(|l| l.trim() == "flat  flat%   sum%        cum   cum%   calls calls% + context"),
        "{screen:#?}"
    );
    let burn_b = screen
        .iter()
        .rev()
        .find(|l| l.ends_with("| burn_b"))
        .unwrap_or_else(|| panic!("no burn_b node in {screen:#?}"));
    let fields: Vec<&str> = burn_b.split_whitespace().collect();
    let row = one_shot.row("burn_b").unwrap();
    assert_eq!(
        (fields[0], fields[3]),
        (&*row.flat.to_string(), &*row.cum.to_string()),
        "{burn_b}"
    );

    // A setting's value.
    tmux.type_text("granularity=a");
    tmux.keys(&["Tab"]);
    tmux.wait(
        "granularity=a<Tab> completed",
        PATIENCE,
        last_is("(pprof) granularity=addresses"),
    );
    tmux.keys(&["C-u"]);
    tmux.wait("an empty line", PATIENCE, at_prompt);

    // Function names: the first Tab inserts the common prefix `burn_`; at
    // the next the candidates are listed under the line, which is redrawn.
    tmux.type_text("list bu");
    tmux.keys(&["Tab"]);
    tmux.wait(
        "list bu<Tab> completed to the common prefix",
        PATIENCE,
        last_is("(pprof) list burn_"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let screen = tmux.lines();
    assert!(
        !screen.iter().any(|l| l.contains("burn_a  burn_b")),
        "listed at the first Tab: {screen:#?}"
    );
    tmux.keys(&["Tab"]);
    let screen = tmux.wait("the candidates at the second Tab", PATIENCE, |l| {
        l.len() >= 2
            && l[l.len() - 2] == "burn_a  burn_b  burn_c"
            && l[l.len() - 1] == "(pprof) list burn_"
    });
    assert_eq!(
        screen[screen.len() - 3..],
        [
            "(pprof) list burn_",
            "burn_a  burn_b  burn_c",
            "(pprof) list burn_"
        ]
    );
    // One more letter makes it unique.
    tmux.type_text("b");
    tmux.keys(&["Tab"]);
    tmux.wait("list burn_b<Tab>", PATIENCE, last_is("(pprof) list burn_b"));
    let before = prompts(&tmux.lines());
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("list's report", PATIENCE, |l| {
        at_prompt(l) && prompts(l) > before
    });
    assert!(
        screen
            .iter()
            .any(|l| l.starts_with("ROUTINE ====================== burn_b in ")),
        "{screen:#?}"
    );
}

#[test]
fn history_is_recalled_after_a_restart() {
    let Some(spin) = spin() else { return };
    let home = TempDir::new().unwrap();
    let data = home.path().join("data");
    let args = [Path::new("report"), &spin.binary, &spin.profile];
    {
        let tmux = Tmux::start("history-1", home.path(), Some(&data), &args);
        tmux.wait_for_prompt();
        let out = tmux.command("top 3");
        assert_eq!(out[1..], rows(spin.text.lines())[..3], "{out:#?}");
        tmux.type_text("quit");
        tmux.keys(&["Enter"]);
        assert_eq!(tmux.wait_for_exit(), 0);
    }
    let history = std::fs::read_to_string(data.join("cpuprof/history")).unwrap();
    assert!(history.lines().any(|l| l == "top 3"), "{history:?}");
    assert!(history.lines().any(|l| l == "quit"), "{history:?}");

    let tmux = Tmux::start("history-2", home.path(), Some(&data), &args);
    tmux.wait_for_prompt();
    // Up once: `quit`; twice: `top 3`.
    tmux.keys(&["Up"]);
    tmux.wait("Up: quit", PATIENCE, |l| {
        l.last().is_some_and(|l| l == "(pprof) quit")
    });
    tmux.keys(&["Up"]);
    tmux.wait("Up Up: top 3", PATIENCE, |l| {
        l.last().is_some_and(|l| l == "(pprof) top 3")
    });
    let before = prompts(&tmux.lines());
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("top 3 again", PATIENCE, |l| {
        at_prompt(l) && prompts(l) > before
    });
    assert_eq!(
        rows(&screen[screen.len() - 5..]),
        rows(spin.text.lines())[..3],
        "{screen:#?}"
    );
}

#[test]
fn ctrl_d_exits_with_status_0_and_history_falls_back_to_home() {
    let Some(spin) = spin() else { return };
    let home = TempDir::new().unwrap();
    let tmux = Tmux::start(
        "ctrl-d",
        home.path(),
        None,
        &[Path::new("report"), &spin.binary, &spin.profile],
    );
    tmux.wait_for_prompt();
    let out = tmux.command("top 1");
    assert_eq!(out[1..], rows(spin.text.lines())[..1], "{out:#?}");
    tmux.keys(&["C-d"]);
    assert_eq!(tmux.wait_for_exit(), 0);
    let history =
        std::fs::read_to_string(home.path().join(".local/share/cpuprof/history")).unwrap();
    assert!(history.lines().any(|l| l == "top 1"), "{history:?}");
}
