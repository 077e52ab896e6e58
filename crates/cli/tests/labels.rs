//! Sample labels against Go pprof, on a Go program built at test time
//! (Debian's Go, GOPATH mode) whose three workers run under
//! `pprof.Do(ctx, pprof.Labels("worker", W, "kind", K), ...)` for
//! different times and write their own CPU profile:
//! - `--tags` prints what Go pprof's `-tags` prints, byte for byte (in
//!   nanoseconds and in samples, with `--tagshow`/`--taghide`/`--tagfocus`);
//! - `--tagfocus`/`--tagignore` keep the rows and numbers of Go pprof's
//!   `-top` with the same option (key=regex, regex on key:value);
//! - `--tagroot`/`--tagleaf` give the pseudo-frames Go pprof's do (its
//!   `-top` rows), and `--collapsed` stacks start at the root's;
//! - `--traces` prints Go's label lines above the same stacks;
//! - `--proto` with label options writes what Go reads back the same;
//! - the shell's `tags` and `tagfocus=` print what the one-shot prints;
//!   the web UI's `tf`/`tagroot` URL parameters reach its reports;
//! - a bad filter is an error that names the option.
//!
//! Skipped loudly without Go or Go pprof, unless `CPUPROF_REQUIRE_PEERS=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cpuprof_testkit::{require_tool, run_stdout, run_with_stdin, TempDir, TextReport};

mod common;
use common::{cpuprof, report, report_texts, texts, WebUi};

const GO_PROGRAM: &str = r#"
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

var sink uint64

func burn(d time.Duration) uint64 {
	var x uint64 = 1
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func worker(name, kind string, d time.Duration, wg *sync.WaitGroup) {
	defer wg.Done()
	pprof.Do(context.Background(), pprof.Labels("worker", name, "kind", kind), func(ctx context.Context) {
		sink += burn(d)
	})
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	pprof.StartCPUProfile(f)
	var wg sync.WaitGroup
	wg.Add(3)
	go worker("a", "heavy", 1500*time.Millisecond, &wg)
	go worker("b", "light", 800*time.Millisecond, &wg)
	go worker("c", "light", 400*time.Millisecond, &wg)
	wg.Wait()
	sink += burn(300 * time.Millisecond)
	pprof.StopCPUProfile()
	f.Close()
	fmt.Println(sink)
}
"#;

/// The labelled Go profile, made once for the file.
fn profile() -> Option<&'static Path> {
    static PROFILE: OnceLock<Option<(TempDir, PathBuf)>> = OnceLock::new();
    PROFILE
        .get_or_init(|| {
            if !require_tool("go") || !require_tool("pprof") {
                return None;
            }
            let dir = TempDir::new().unwrap();
            let d = dir.path();
            let binary = cpuprof_testkit::build_go(d, "labelled", GO_PROGRAM);
            let profile = d.join("labelled.pb.gz");
            run_stdout(Command::new(&binary).arg(&profile));
            Some((dir, profile))
        })
        .as_ref()
        .map(|(_, p)| p.as_path())
}

/// Go pprof's output with `args` on `profile`.
fn pprof(args: &[&str], profile: &Path) -> String {
    run_stdout(Command::new("pprof").args(args).arg(profile))
}

/// Rows of Go pprof's `-top` (every node, in samples): name → (flat, cum).
fn go_top(extra: &[&str], profile: &Path) -> BTreeMap<String, (i64, i64)> {
    let mut args = vec![
        "-top",
        "-sample_index=samples",
        "-nodecount=1000000",
        "-nodefraction=0",
        "-edgefraction=0",
    ];
    args.extend_from_slice(extra);
    let text = pprof(&args, profile);
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') || !f[4].ends_with('%') {
                return None;
            }
            let name = f[5..].join(" ");
            let name = name.strip_suffix(" (inline)").unwrap_or(&name).to_string();
            Some((name, (f[0].parse().ok()?, f[3].parse().ok()?)))
        })
        .collect()
}

/// Our `--text` rows (in samples) with `extra`: name → (flat, cum).
fn our_top(extra: &[&str], profile: &Path) -> BTreeMap<String, (i64, i64)> {
    let mut args = vec!["--text", "--sample_index=samples"];
    args.extend_from_slice(extra);
    TextReport::parse(&report(&args, &[profile]))
        .rows
        .into_iter()
        .map(|r| (r.name, (r.flat, r.cum)))
        .collect()
}

/// The blocks of a `-traces` report: (label lines, frames) → value
/// summed (Go prints one block per sample, we one per distinct stack).
fn trace_blocks(text: &str) -> BTreeMap<(Vec<String>, Vec<String>), String> {
    let mut sums: BTreeMap<(Vec<String>, Vec<String>), i64> = BTreeMap::new();
    for block in text
        .split("-----------+-------------------------------------------------------\n")
        .skip(1)
    {
        let mut labels = Vec::new();
        let mut frames = Vec::new();
        let mut value = 0;
        for line in block.lines() {
            let is_frame = line.len() > 13 && line.get(10..13) == Some("   ");
            if !is_frame {
                labels.push(line.to_string());
                continue;
            }
            if frames.is_empty() {
                value = line[..10].trim().parse::<i64>().unwrap();
            }
            let name = line[13..].strip_suffix(" (inline)").unwrap_or(&line[13..]);
            frames.push(name.to_string());
        }
        if !frames.is_empty() {
            *sums.entry((labels, frames)).or_insert(0) += value;
        }
    }
    sums.into_iter().map(|(k, v)| (k, v.to_string())).collect()
}

#[test]
fn tags_are_go_pprofs_byte_for_byte() {
    let Some(profile) = profile() else { return };
    for extra in [
        &[][..],
        &["-sample_index=samples"],
        &["-tagshow=work"],
        &["-taghide=work"],
        &["-tagfocus=kind=light"],
        &["-tagignore=worker=b", "-sample_index=samples"],
    ] {
        let mut go_args = vec!["-tags"];
        go_args.extend_from_slice(extra);
        let theirs = pprof(&go_args, profile);
        let ours_args: Vec<String> = std::iter::once("--tags".to_string())
            .chain(extra.iter().map(|a| format!("-{a}")))
            .collect();
        let ours_args: Vec<&str> = ours_args.iter().map(String::as_str).collect();
        let ours = report(&ours_args, &[profile]);
        assert!(
            theirs.contains("worker:") || extra == ["-taghide=work"],
            "{theirs}"
        );
        assert_eq!(
            ours, theirs,
            "our --tags {extra:?} (left), Go pprof's (right)"
        );
    }
    // The values are what the workers ran: a above b above c.
    let tags = report(&["--tags", "--tagshow=^worker$"], &[profile]);
    let order: Vec<&str> = tags
        .lines()
        .skip(1)
        .filter_map(|l| l.rsplit(' ').next())
        .filter(|w| !w.is_empty())
        .collect();
    assert_eq!(order, ["a", "b", "c"], "{tags}");
}

#[test]
fn tagfocus_and_tagignore_keep_go_pprofs_rows() {
    let Some(profile) = profile() else { return };
    let all = our_top(&[], profile);
    for option in [
        "tagfocus=worker=a",
        "tagfocus=worker=^b$,c",
        "tagfocus=kind:light",
        "tagfocus=worker:,kind:heavy",
        "tagignore=worker=a",
        "tagignore=light",
    ] {
        let theirs = go_top(&[&format!("-{option}")], profile);
        let ours = our_top(&[&format!("--{option}")], profile);
        assert!(ours.len() >= 3, "{option}: {ours:?}");
        assert_ne!(ours, all, "{option} kept everything");
        assert_eq!(
            ours, theirs,
            "--{option}: ours (left), Go pprof -top (right)"
        );
    }
    // Every sample is labelled a, b, c or not at all: the focused totals
    // add up to the whole.
    let cum = |rows: &BTreeMap<String, (i64, i64)>| rows["main.burn"].1;
    let parts: i64 = ["a", "b", "c"]
        .iter()
        .map(|w| cum(&our_top(&[&format!("--tagfocus=worker=^{w}$")], profile)))
        .sum::<i64>()
        + cum(&our_top(&["--tagignore=worker:"], profile));
    assert_eq!(parts, cum(&all));
}

#[test]
fn tagroot_and_tagleaf_are_go_pprofs_pseudo_frames() {
    let Some(profile) = profile() else { return };
    for options in [
        &["tagroot=worker"][..],
        &["tagroot=worker,kind"],
        &["tagleaf=kind,worker"],
        // Made before the filters, as Go makes them: focus, ignore and
        // hide see them, tagshow/taghide do not change them.
        &["tagroot=worker", "focus=^(a|c)$"],
        &["tagleaf=worker", "ignore=^b$", "hide=unknown"],
        &[
            "tagroot=worker,kind",
            "hide=^kind$",
            "show=^(a|c|main.burn)$",
        ],
        &["tagroot=worker", "focus=^worker$"],
        &["tagroot=worker", "taghide=worker"],
    ] {
        let go: Vec<String> = options.iter().map(|o| format!("-{o}")).collect();
        let go: Vec<&str> = go.iter().map(String::as_str).collect();
        let ours: Vec<String> = options.iter().map(|o| format!("--{o}")).collect();
        let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
        let theirs = go_top(&go, profile);
        let ours = our_top(&ours, profile);
        for pseudo in ["a", "c"] {
            assert!(
                ours.contains_key(pseudo),
                "{options:?}: no {pseudo}: {ours:?}"
            );
        }
        assert_eq!(
            ours, theirs,
            "{options:?}: ours (left), Go pprof -top (right)"
        );
    }
    let collapsed = report(&["--tagroot=worker,kind", "--collapsed"], &[profile]);
    let mut roots = BTreeMap::new();
    for line in collapsed.lines() {
        let mut frames = line.split(';');
        let (root, second) = (frames.next().unwrap(), frames.next().unwrap());
        let expected = match root {
            "a" => "heavy",
            "b" | "c" => "light",
            "<unknown>" => "<unknown>",
            other => panic!("stack not rooted at a worker: {other} in {line}"),
        };
        assert_eq!(second, expected, "{line}");
        let value: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *roots.entry(root.to_string()).or_insert(0) += value;
    }
    // The towers' sizes are the workers' values in Go pprof's -tags.
    let tags = pprof(&["-tags", "-tagshow=^worker$", "-unit=ns"], profile);
    for (root, value) in &roots {
        if root != "<unknown>" {
            let line = format!("{value}.0ns");
            assert!(
                tags.lines()
                    .any(|l| l.contains(&line) && l.ends_with(&format!(" {root}"))),
                "{root} {line} not in\n{tags}"
            );
        }
    }
    // A flame graph has them too: one tower per worker.
    let flame = report(&["--tagroot=worker", "--flame=svg"], &[profile]);
    let plain = report(&["--flame=svg"], &[profile]);
    for tower in ["<title>a (", "<title>b (", "<title>c ("] {
        assert!(flame.contains(tower) && !plain.contains(tower), "{tower}");
    }
}

#[test]
fn traces_print_go_pprofs_label_lines() {
    let Some(profile) = profile() else { return };
    for extra in [&[][..], &["tagshow=worker"], &["tagroot=kind"]] {
        let go_args: Vec<String> = ["-traces", "-sample_index=samples"]
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().map(|o| format!("-{o}")))
            .collect();
        let go_args: Vec<&str> = go_args.iter().map(String::as_str).collect();
        let theirs = trace_blocks(&pprof(&go_args, profile));
        let our_args: Vec<String> = ["--traces", "--sample_index=samples"]
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().map(|o| format!("--{o}")))
            .collect();
        let our_args: Vec<&str> = our_args.iter().map(String::as_str).collect();
        let ours = trace_blocks(&report(&our_args, &[profile]));
        assert!(
            ours.keys()
                .any(|(labels, _)| labels.contains(&"    worker:  a".to_string())),
            "{extra:?}: {ours:?}"
        );
        assert_eq!(
            ours, theirs,
            "--traces {extra:?}: ours (left), Go pprof's (right)"
        );
    }
}

#[test]
fn proto_with_label_options_reads_back_in_go_pprof() {
    let Some(profile) = profile() else { return };
    let dir = TempDir::new().unwrap();
    let proto = |options: &[&str], name: &str| {
        let path = dir.path().join(name);
        let mut args = vec!["--proto", "-o", path.to_str().unwrap()];
        args.extend_from_slice(options);
        report(&args, &[profile]);
        path
    };
    // Labels kept as they are.
    let plain = proto(&[], "plain.pb.gz");
    assert_eq!(pprof(&["-tags"], &plain), pprof(&["-tags"], profile));
    // The samples tagfocus keeps.
    let focused = proto(&["--tagfocus=worker=b"], "b.pb.gz");
    assert_eq!(
        pprof(&["-tags"], &focused),
        pprof(&["-tags", "-tagfocus=worker=b"], profile)
    );
    // The labels tagshow shows.
    let shown = proto(&["--tagshow=kind"], "kind.pb.gz");
    let tags = pprof(&["-tags"], &shown);
    assert!(
        tags.starts_with(" kind:") && !tags.contains("worker"),
        "{tags}"
    );
    // The pseudo-frames as functions.
    let rooted = proto(&["--tagroot=worker"], "root.pb.gz");
    assert_eq!(go_top(&[], &rooted), go_top(&["-tagroot=worker"], profile));
}

/// `cpuprof report -i PROFILE` fed `script`: its stdout; must succeed.
fn shell(script: &str, profile: &Path) -> String {
    let mut cmd = cpuprof();
    cmd.arg("report").arg("-i").arg(profile);
    let (out, err, status) = texts(&run_with_stdin(&mut cmd, script));
    assert_eq!(status, 0, "{script}: {err}");
    out
}

#[test]
fn shell_tags_and_tagfocus_print_the_one_shots() {
    let Some(profile) = profile() else { return };
    assert_eq!(shell("tags\n", profile), report(&["--tags"], &[profile]));
    assert_eq!(
        shell("tagfocus=worker=a\ntop\n", profile),
        report(
            &["--text", "--nodecount=10", "--tagfocus=worker=a"],
            &[profile]
        )
    );
    assert_eq!(
        shell(
            "tagignore=kind=heavy\ntaghide=kind\ntags\ntraces\n",
            profile
        ),
        report(
            &["--tags", "--tagignore=kind=heavy", "--taghide=kind"],
            &[profile]
        ) + &report(
            &["--traces", "--tagignore=kind=heavy", "--taghide=kind"],
            &[profile]
        )
    );
    // The regexes of `tags` are tagfocus and tagignore, as in Go's shell.
    assert_eq!(
        shell("tags kind=light -worker=b\n", profile),
        report(
            &["--tags", "--tagfocus=kind=light", "--tagignore=worker=b"],
            &[profile]
        )
    );
    let (out, err, status) = {
        let mut cmd = cpuprof();
        cmd.arg("report").arg("-i").arg(profile);
        texts(&run_with_stdin(&mut cmd, "tags -=x\ntags\n"))
    };
    assert_eq!(status, 1, "a script whose commands failed exits 1");
    assert_eq!(err, "tagignore==x: the key before '=' is empty\n");
    assert_eq!(out, report(&["--tags"], &[profile]));
    // `:` clears the label filters too.
    assert_eq!(
        shell("tagfocus=worker=a\n:\ntags\n", profile),
        report(&["--tags"], &[profile])
    );
}

#[test]
fn web_ui_url_parameters_carry_the_label_settings() {
    let Some(profile) = profile() else { return };
    let web = WebUi::start(&[profile]);
    {
        let dir = TempDir::new().unwrap();
        // The download of the current view with tf=worker=b (Go's URL
        // parameter) is what Go pprof -tagfocus=worker=b keeps.
        let (status, body) = web.get("/ui/download?tf=worker%3Db");
        assert_eq!(status, 200);
        let downloaded = dir.path().join("download.pb.gz");
        std::fs::write(&downloaded, body).unwrap();
        assert_eq!(
            pprof(&["-tags"], &downloaded),
            pprof(&["-tags", "-tagfocus=worker=b"], profile)
        );
        // tagroot reaches the flame graph: its root's children are the
        // workers.
        let (status, body) = web.get("/ui/flamegraph/frame?tagroot=worker");
        assert_eq!(status, 200);
        let html = String::from_utf8_lossy(&body);
        let plain = String::from_utf8_lossy(&web.get("/ui/flamegraph/frame").1).into_owned();
        // The page's frame names (JSON): the pseudo-frame of the samples
        // without a worker, only with tagroot.
        let unknown = "\\u003cunknown\\u003e";
        assert!(
            html.contains(unknown),
            "no <unknown> root in the flame graph"
        );
        assert!(!plain.contains(unknown));
        // A bad filter is refused with the option named.
        let (status, body) = web.get("/ui/top?tf=%3D%28");
        assert_eq!(status, 400);
        assert!(String::from_utf8_lossy(&body).starts_with("tagfocus="));
    }
}

#[test]
fn a_bad_filter_is_one_line_naming_the_option() {
    let Some(profile) = profile() else { return };
    for (option, expected) in [
        ("--tagfocus==(", "tagfocus==(: the key before '=' is empty"),
        (
            "--tagignore=w=(",
            "tagignore=w=(: invalid regular expression \"(\"",
        ),
        ("--tagshow=(", "tagshow=(: invalid regular expression"),
    ] {
        let (out, err, status) =
            report_texts(&[option, "--text", profile.to_str().unwrap()], |_| {});
        assert_eq!(status, 2, "{option}: {err}");
        assert!(out.is_empty());
        let first = err.lines().next().unwrap_or("");
        assert!(first.contains(expected), "{option}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A filter that matches nothing is no error: an empty report.
    let (_, err, status) = report_texts(
        &["--tagfocus=worker=zzz", "--tags", profile.to_str().unwrap()],
        |_| {},
    );
    assert_eq!(status, 0, "{err}");
}

const THREADS_C: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
volatile unsigned long sink;
static void *work(void *arg) {
    long n = (long)arg;
    char name[16];
    snprintf(name, sizeof name, "compute-%ld", n);
    pthread_setname_np(pthread_self(), name);
    for (unsigned long i = 0; i < 100000000UL * n; i++) sink += i;
    return 0;
}
int main(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], 0, work, (void *)(i + 1));
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

#[test]
fn the_agents_thread_labels_read_as_go_pprof_reads_them() {
    if !require_tool("gcc") || !require_tool("pprof") {
        return;
    }
    let dir = TempDir::new().unwrap();
    let source = dir.path().join("threads.c");
    std::fs::write(&source, THREADS_C).unwrap();
    let program = cpuprof_testkit::compile(
        "gcc",
        &[&source],
        &dir.path().join("threads"),
        &["-O1", "-pthread"],
    );
    let profile = dir.path().join("threads.prof");
    run_stdout(
        cpuprof()
            .args(["record", "--nodecount=0", "-o"])
            .arg(&profile)
            .arg("--")
            .arg(&program),
    );
    // Byte for byte Go pprof's -tags, numeric thread ids included.
    let tags = report(&["--tags"], &[&profile]);
    assert_eq!(tags, pprof(&["-tags"], &profile));
    assert!(
        tags.contains(" thread_id: ") && tags.contains(": compute-2\n"),
        "{tags}"
    );
    // One tower per thread; compute-2 worked twice as long as compute-1.
    let collapsed = report(&["--tagroot=thread_name", "--collapsed"], &[&profile]);
    let mut towers: BTreeMap<String, i64> = BTreeMap::new();
    for line in collapsed.lines() {
        let root = line.split(';').next().unwrap().to_string();
        let value: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        *towers.entry(root).or_insert(0) += value;
    }
    let (one, two) = (towers["compute-1"], towers["compute-2"]);
    assert!(two > one && two < 4 * one, "{towers:?}");
    // The thread's id (a numeric label) selects what its name selects.
    let id_line = tags
        .lines()
        .skip_while(|l| !l.starts_with(" thread_id:"))
        .nth(1)
        .unwrap();
    let id = id_line.rsplit(' ').next().unwrap();
    let by_id = report(
        &["--collapsed", &format!("--tagfocus=thread_id=^{id}$")],
        &[&profile],
    );
    let name_of = |id: &str| {
        let traces = report(
            &["--traces", &format!("--tagfocus=thread_id=^{id}$")],
            &[&profile],
        );
        traces
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("thread_name:")
                    .map(|n| n.trim().to_string())
            })
            .unwrap()
    };
    let by_name = report(
        &[
            "--collapsed",
            &format!("--tagfocus=thread_name=^{}$", name_of(id)),
        ],
        &[&profile],
    );
    assert!(!by_id.is_empty());
    assert_eq!(by_id, by_name);
}
