//! The shell scripted through standard input (`cpuprof report -i`), on a
//! real profile of spin written by Debian's libprofiler:
//! - each command's output equals its one-shot twin with the same
//!   settings (`top` after `focus=X` is `report --text --focus=X`, ...);
//! - every setting of the driver's table is accepted by the command line
//!   (`--name=value`) and by the shell (`name=value`) with the same
//!   meaning: the same report either way;
//! - without a terminal and without `-i`, `report` writes `--text` as it
//!   always did (`cpuprof report prog.prof | head`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use cpuprof_driver::settings::{Kind, SETTINGS};
use cpuprof_testkit::{
    build_spin, gcc_and_libprofiler, profile_with_libprofiler, run_with_stdin, TempDir,
};

mod common;
use common::cpuprof;

/// spin and its profile (libprofiler, 250 Hz), made once for the file.
fn spin() -> Option<&'static (PathBuf, PathBuf)> {
    static SPIN: OnceLock<Option<(TempDir, PathBuf, PathBuf)>> = OnceLock::new();
    SPIN.get_or_init(|| {
        let lib = gcc_and_libprofiler()?;
        let dir = TempDir::new().unwrap();
        let (spin, _) = build_spin(dir.path(), "spin", &[]);
        let prof = dir.path().join("spin.prof");
        profile_with_libprofiler(&lib, &spin, &["-s", "1.0"], &prof, 250);
        Some((dir, spin, prof))
    })
    .as_ref()
    .map(|(_, spin, prof)| {
        // A 'static pair of the two paths.
        static PATHS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
        PATHS.get_or_init(|| (spin.clone(), prof.clone()))
    })
}

/// `cpuprof report -i SPIN PROFILE` fed `script`: (stdout, stderr, status).
fn shell(script: &str, extra: &[&str]) -> (String, String, i32) {
    let (spin, prof) = spin().expect("spin profile");
    let mut cmd = cpuprof();
    cmd.arg("report").arg("-i").args(extra).arg(spin).arg(prof);
    common::texts(&run_with_stdin(&mut cmd, script))
}

/// The file the shell names when `out` is only its `Generating report in
/// PATH` line (an output without `> file`).
fn generated(out: &str) -> Option<&str> {
    out.strip_prefix("Generating report in ")
        .and_then(|p| p.strip_suffix('\n'))
}

/// `cpuprof report ARGS SPIN PROFILE`'s stdout; must succeed.
fn one_shot(args: &[&str]) -> String {
    let (spin, prof) = spin().expect("spin profile");
    let out = cpuprof()
        .arg("report")
        .args(args)
        .arg(spin)
        .arg(prof)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "report {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_command_prints_what_its_one_shot_twin_prints() {
    if spin().is_none() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let file = |name: &str| dir.path().join(name).display().to_string();
    // (shell lines, one-shot flags, file both write to or None for stdout)
    let cases: Vec<(String, Vec<String>)> = vec![
        ("top".into(), vec!["--text".into(), "--nodecount=10".into()]),
        ("top5".into(), vec!["--text".into(), "--nodecount=5".into()]),
        (
            "top 7 -cum".into(),
            vec!["--text".into(), "--cum".into(), "--nodecount=7".into()],
        ),
        (
            "top10 --cum burn".into(),
            vec![
                "--top".into(),
                "--cum".into(),
                "--nodecount=10".into(),
                "--focus=burn".into(),
            ],
        ),
        (
            "focus=burn_b\ntop".into(),
            vec![
                "--text".into(),
                "--focus=burn_b".into(),
                "--nodecount=10".into(),
            ],
        ),
        (
            "top burn_a burn_c -recurse".into(),
            vec![
                "--text".into(),
                "--focus=burn_a|burn_c".into(),
                "--ignore=recurse".into(),
                "--nodecount=10".into(),
            ],
        ),
        (
            "ignore=burn_a\nlines\ntop 0".into(),
            vec![
                "--text".into(),
                "--ignore=burn_a".into(),
                "--lines".into(),
                "--nodecount=0".into(),
            ],
        ),
        (
            "hide=recurse\ntree".into(),
            vec!["--tree".into(), "--hide=recurse".into()],
        ),
        ("peek burn_b".into(), vec!["--peek=burn_b".into()]),
        ("traces".into(), vec!["--traces".into()]),
        ("list burn_b".into(), vec!["--list=burn_b".into()]),
        ("disasm burn_c".into(), vec!["--disasm=burn_c".into()]),
        ("raw".into(), vec!["--raw".into()]),
        ("collapsed".into(), vec!["--collapsed".into()]),
        ("json".into(), vec!["--json".into()]),
        (
            "json 3 main".into(),
            vec![
                "--json".into(),
                "--nodecount=3".into(),
                "--focus=main".into(),
            ],
        ),
        ("dot".into(), vec!["--dot".into()]),
        (
            "addresses\ndot 12".into(),
            vec![
                "--dot".into(),
                "--addresses".into(),
                "--nodecount=12".into(),
            ],
        ),
        ("dcpiprof".into(), vec!["--dcpiprof".into()]),
        ("comments".into(), vec!["--comments".into()]),
        (
            "cpu\ntop".into(),
            vec![
                "--text".into(),
                "--sample_index=cpu".into(),
                "--nodecount=10".into(),
            ],
        ),
        (
            "sample_index=0\ntop".into(),
            vec![
                "--text".into(),
                "--sample_index=samples".into(),
                "--nodecount=10".into(),
            ],
        ),
    ];
    for (script, flags) in &cases {
        let (out, err, status) = shell(&format!("{script}\n"), &[]);
        assert_eq!(status, 0, "{script}: {err}");
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let expected = one_shot(&flags);
        // (A gperftools profile has no comments.)
        assert!(
            !expected.is_empty() || script == "comments",
            "{flags:?} printed nothing"
        );
        assert_eq!(out, expected, "shell `{script}` vs report {flags:?}");
    }
    // Binary and HTML outputs without `> file` go to a temporary file
    // whose path is printed, scripted as on a terminal: standard output
    // holds text results only.
    for (script, flags) in [
        ("layout=builtin\nsvg", vec!["--svg", "--layout=builtin"]),
        ("flame", vec!["--flame"]),
        ("proto", vec!["--proto"]),
    ] {
        let (out, err, status) = shell(&format!("{script}\n"), &[]);
        assert_eq!(status, 0, "{script}: {err}");
        let path = generated(&out).unwrap_or_else(|| panic!("{script}: {out}"));
        let written = std::fs::read(path).unwrap();
        std::fs::remove_file(path).unwrap();
        if script != "proto" {
            assert_eq!(
                String::from_utf8_lossy(&written),
                one_shot(&flags),
                "{script}"
            );
        } else {
            assert!(written.starts_with(&[0x1f, 0x8b]), "gzip");
        }
    }
    // Outputs to files: `> file`, perl's `callgrind file`, and `output=`.
    let files: Vec<(String, Vec<String>, &str)> = vec![
        (
            format!("callgrind > {}", file("a.callgrind")),
            vec!["--callgrind".into(), format!("-o{}", file("b.callgrind"))],
            "callgrind",
        ),
        (
            format!("callgrind {}", file("a.callgrind2")),
            vec!["--callgrind".into(), format!("-o{}", file("b.callgrind2"))],
            "callgrind2",
        ),
        (
            format!("proto >{}", file("a.proto")),
            vec!["--proto".into(), format!("--output={}", file("b.proto"))],
            "proto",
        ),
        (
            format!("flame > {}", file("a.flame")),
            vec!["--flame".into(), "-o".into(), file("b.flame")],
            "flame",
        ),
        (
            format!("icicle > {}", file("a.icicle.svg")),
            vec!["--icicle=svg".into(), "-o".into(), file("b.icicle.svg")],
            "icicle.svg",
        ),
        (
            format!("output={}\ntree", file("a.tree")),
            vec!["--tree".into(), "-o".into(), file("b.tree")],
            "tree",
        ),
    ];
    for (script, flags, name) in &files {
        let (out, err, status) = shell(&format!("{script}\n"), &[]);
        assert_eq!((status, out.as_str()), (0, ""), "{script}: {err}");
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        one_shot(&flags);
        let ours = std::fs::read(file(&format!("a.{name}"))).unwrap();
        let theirs = std::fs::read(file(&format!("b.{name}"))).unwrap();
        assert!(!ours.is_empty(), "{script}");
        assert!(
            ours == theirs,
            "shell `{script}` vs report {flags:?}: files differ"
        );
    }
}

#[test]
fn settings_persist_arguments_do_not_and_colon_clears_filters() {
    if spin().is_none() {
        return;
    }
    let top10 = one_shot(&["--text", "--nodecount=10"]);
    let focused = one_shot(&["--text", "--nodecount=10", "--focus=burn_c"]);
    let cum = one_shot(&["--text", "--nodecount=10", "--cum"]);
    // A command's own focus and -cum are for that command only.
    let (out, err, _) = shell("top burn_c\ntop\ntop -cum\ntop\n", &[]);
    assert_eq!(
        out,
        [focused.as_str(), &top10, &cum, &top10].concat(),
        "{err}"
    );
    // focus= persists until `:`; flags given to `report -i` are the
    // session's starting settings.
    let (out, err, _) = shell("focus=burn_c\ntop\ntop\n:\ntop\n", &[]);
    assert_eq!(out, [focused.as_str(), &focused, &top10].concat(), "{err}");
    let (out, err, _) = shell("top\n:\ntop\n", &["--focus=burn_c"]);
    assert_eq!(out, [focused.as_str(), &top10].concat(), "{err}");
    let (out, _, _) = shell("cum\ntop\nflat\ntop\n", &[]);
    assert_eq!(out, [cum.as_str(), &top10].concat());
}

#[test]
fn errors_are_one_line_and_the_session_goes_on() {
    if spin().is_none() {
        return;
    }
    let top10 = one_shot(&["--text", "--nodecount=10"]);
    let (out, err, status) = shell(
        "tpo\nfocus=(\nlist\nnodecount=many\nlist nothing_matches_this\nfocus burn\nsample_index=bytes\ntop\n",
        &[],
    );
    assert_eq!(out, top10, "the last command still runs: {err}");
    assert_eq!(status, 1, "a script whose commands failed exits 1");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "unrecognized command: \"tpo\" (did you mean top?); type \"help\" for commands",
            "focus=(: invalid regular expression: unclosed group",
            "list needs a regular expression: list func_regex [focus_regex]* [-ignore_regex]* [> file]",
            "nodecount=many: expected a whole number",
            "list nothing_matches_this: no function with samples matches",
            "focus is a setting: did you mean focus=burn?",
            "sample_index=bytes: the profile's sample types are 0=samples, 1=cpu",
        ]
    );
    let (_, _, status) = shell("top\nquit\ntpo\n", &[]);
    assert_eq!(status, 0, "quit stops reading");
}

#[test]
fn help_and_options_come_from_the_tables() {
    if spin().is_none() {
        return;
    }
    let (out, _, _) = shell("o\n", &[]);
    assert_eq!(out.lines().count(), SETTINGS.len());
    assert!(
        out.contains("  sample_index              = cpu                  //: [samples | cpu]"),
        "{out}"
    );
    assert!(
        out.contains("  sort                      = flat                 //: [cum | flat]"),
        "{out}"
    );
    let (out, _, _) = shell("lines\nnodecount=5\no\n", &[]);
    assert!(out.contains("  granularity               = lines"), "{out}");
    assert!(out.contains("  nodecount                 = 5\n"), "{out}");
    let (out, _, _) = shell("help\n", &[]);
    for c in cpuprof_driver::commands::COMMANDS {
        assert!(
            out.contains(&format!("    {}", c.name)),
            "help lacks {}",
            c.name
        );
    }
    let (out, _, _) = shell("help focus\n", &[]);
    let focus = SETTINGS.iter().find(|s| s.name == "focus").unwrap();
    assert!(out.contains(focus.help), "{out}");
    let (out, _, _) = shell("help peek\n", &[]);
    assert!(out.starts_with("peek func_regex"), "{out}");
}

/// The command that shows a setting's effect, and a value to give it.
fn probe(name: &str, kind: Kind, dir: &Path) -> (&'static str, String) {
    match name {
        "source_path" | "trim_path" => ("list burn_b", "/nonexistent/src".into()),
        "layout" => ("svg", "builtin".into()),
        "maxdegree" | "nodefraction" | "edgefraction" => {
            ("dot", if kind == Kind::Int { "1" } else { "0.05" }.into())
        }
        "output" => ("json", dir.join("walk.json").display().to_string()),
        "sample_index" => ("json", "samples".into()),
        "nodecount" => ("tree", "3".into()),
        _ => (
            "json",
            match kind {
                Kind::Bool => "true".into(),
                Kind::Int => "3".into(),
                Kind::Float => "0.05".into(),
                Kind::Regex => "burn_b|recurse".into(),
                Kind::Level => "99".into(),
                Kind::Text => "x".into(),
                Kind::TagFilter => "worker=a".into(),
                Kind::Unit => "ms".into(),
                Kind::TimeRange => "0:1s".into(),
                Kind::Choice(choices) => choices[choices.len() - 1].into(),
            },
        ),
    }
}

#[test]
fn every_setting_means_the_same_on_the_command_line_and_in_the_shell() {
    if spin().is_none() {
        return;
    }
    let dir = TempDir::new().unwrap();
    for setting in SETTINGS {
        // spin's gperftools profile has no sample times (time= fails there
        // in one line): crates/cli/tests/time_filter.rs tests time and
        // base_time on a perf recording, also in the shell.
        if setting.kind == Kind::TimeRange {
            continue;
        }
        let (command, value) = probe(setting.name, setting.kind, dir.path());
        let (name, arg) = command.split_once(' ').unwrap_or((command, ""));
        let flag = if arg.is_empty() {
            format!("--{name}")
        } else {
            format!("--{name}={arg}")
        };
        let given = format!("--{}={value}", setting.name);
        let cli = one_shot(&[&flag, &given]);
        let cli_file = std::fs::read_to_string(dir.path().join("walk.json")).ok();
        let _ = std::fs::remove_file(dir.path().join("walk.json"));
        let (shell_out, err, status) =
            shell(&format!("{}={value}\n{command}\n", setting.name), &[]);
        assert_eq!(status, 0, "{}: {err}", setting.name);
        // An SVG goes to a file whose path is printed.
        let shell_out = match generated(&shell_out) {
            Some(path) => {
                let text = std::fs::read_to_string(path).unwrap();
                std::fs::remove_file(path).unwrap();
                text
            }
            None => shell_out,
        };
        let shell_file = std::fs::read_to_string(dir.path().join("walk.json")).ok();
        let _ = std::fs::remove_file(dir.path().join("walk.json"));
        assert_eq!(shell_out, cli, "{}={value}: shell vs {given}", setting.name);
        assert_eq!(shell_file, cli_file, "{}={value}: files", setting.name);
        // And it changes something (a setting that changes nothing is not
        // tested by this): compare with the default.
        let default = one_shot(&[&flag]);
        if setting.name != "output"
            && !matches!(
                setting.name,
                "source_path"
                    | "trim_path"
                    | "sample_index"
                    | "keep_profiler_frames"
                    | "drop_negative"
                    | "full_names"
                    | "noinlines"
                    | "layout"
                    | "nodefraction"
                    // spin's samples have no labels to ignore or hide.
                    | "tagignore"
                    | "tagshow"
                    | "taghide"
            )
        {
            assert_ne!(cli, default, "{given} changed nothing in {command}");
        }
        if setting.name == "output" {
            assert_eq!(cli, "", "-o writes no stdout");
            assert!(cli_file.is_some_and(|f| f == default));
        }
    }
}

#[test]
fn without_a_terminal_report_still_writes_text() {
    let Some((spin, prof)) = spin() else { return };
    let text = one_shot(&["--text"]);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' report '{}' '{}' | head -4",
            env!("CARGO_BIN_EXE_cpuprof"),
            spin.display(),
            prof.display()
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let head: Vec<&str> = text.lines().take(4).collect();
    assert_eq!(String::from_utf8_lossy(&out.stdout), head.join("\n") + "\n");
    assert!(out.status.success());
    assert!(head[0].starts_with("Total: "), "{text}");
}
