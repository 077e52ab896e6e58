//! `cpuprof convert --to speedscope`: the exact content of the file for
//! profiles built by hand (frames, one profile per thread named by its
//! labels, samples in time order, weights in the chosen sample type, the
//! note when samples have no times); a perf.data recording of a program
//! with two named threads, each thread's weights equal to `perf script`'s
//! periods in time order and its two phases in order; and the files
//! checked by speedscope's own package (`speedscope` on npm): valid
//! against the JSON schema it ships, and loaded by the app it ships in
//! headless Chromium with no error and every thread in the profile
//! selector (`speedscope/app.py`; screenshots in target/web-screenshots).
//!
//! The perf.data test skips (with a message) where `perf record` cannot
//! open its event, as tests/perf_data.rs does; the browser test where
//! speedscope, Chromium or Playwright is missing, unless peers are
//! required (CPUPROF_REQUIRE_PEERS).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cpuprof, texts};
use cpuprof_profile::{
    Function, FunctionId, Label, LabelValue, Line, Location, LocationId, Profile, Sample, ValueType,
};
use cpuprof_testkit::{compile, peers_required, repo_root, require_tool, run_ok, TempDir};
use serde_json::{json, Value};

fn num(key: &'static str, value: i64) -> Label {
    Label::num(key, value, "")
}

fn text(key: &'static str, value: &str) -> Label {
    Label::str(key, value)
}

/// main (main.c:12) calls work (work.c:25) or idle (no source); samples
/// of threads 1 "main" and 2 "worker" of process 7 "prog", out of time
/// order, with values (samples/count, cpu/nanoseconds).
fn hand_built(timed: bool) -> Profile {
    let function = |name: &str, file: &str| Function {
        name: name.to_string(),
        system_name: name.to_string(),
        filename: file.to_string(),
        start_line: 0,
    };
    let location = |address: u64, f: u32, line: i64| Location {
        address,
        mapping: None,
        lines: vec![Line {
            function: FunctionId(f),
            line,
            column: 0,
        }],
        is_folded: false,
    };
    let (main, work, idle) = (LocationId(0), LocationId(1), LocationId(2));
    let sample = |stack: Vec<LocationId>, tid: i64, name: &str, time: i64, count: i64| {
        let mut labels = vec![num("pid", 7), text("comm", "prog"), num("tid", tid)];
        labels.push(text("thread_comm", name));
        if timed {
            labels.push(Label {
                key: "timestamp_ns".into(),
                value: LabelValue::Num {
                    value: time,
                    unit: "nanoseconds".into(),
                },
            });
        }
        Sample {
            locations: stack,
            values: vec![count, count * 10],
            labels,
        }
    };
    Profile {
        sample_types: vec![
            ValueType::new("samples", "count"),
            ValueType::new("cpu", "nanoseconds"),
        ],
        functions: vec![
            function("main", "main.c"),
            function("work", "work.c"),
            function("idle", ""),
        ],
        locations: vec![
            location(0x1000, 0, 12),
            location(0x2000, 1, 25),
            location(0x3000, 2, 0),
        ],
        samples: vec![
            sample(vec![work, main], 2, "worker", 300, 1),
            sample(vec![main], 1, "main", 200, 2),
            sample(vec![idle, main], 2, "worker", 100, 3),
            sample(vec![work, main], 1, "main", 50, 4),
            sample(vec![work, main], 2, "worker", 200, 5),
        ],
        period_type: ValueType::new("cpu", "nanoseconds"),
        period: 10,
        ..Profile::default()
    }
}

fn write_proto(profile: &Profile, path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    cpuprof_profile::proto::write(profile, &mut f).unwrap();
}

/// `cpuprof convert ARGS -o OUT --to speedscope INPUTS`: (the file, stderr).
fn convert(inputs: &[&Path], out: &Path, args: &[&str]) -> (Value, String) {
    let output = cpuprof()
        .arg("convert")
        .args(["--to", "speedscope", "-o"])
        .arg(out)
        .args(args)
        .args(inputs)
        .output()
        .unwrap();
    let (_, stderr, status) = texts(&output);
    assert_eq!(status, 0, "convert failed: {stderr}");
    let file = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    (file, stderr)
}

/// Each profile as (name, unit, samples as frame names root first, weights).
type Thread = (String, String, Vec<Vec<String>>, Vec<i64>);

fn threads(file: &Value) -> Vec<Thread> {
    let frames = file["shared"]["frames"].as_array().unwrap();
    file["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p["type"], "sampled");
            let samples = p["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    s.as_array()
                        .unwrap()
                        .iter()
                        .map(|f| {
                            frames[f.as_u64().unwrap() as usize]["name"]
                                .as_str()
                                .unwrap()
                                .to_string()
                        })
                        .collect()
                })
                .collect();
            let weights: Vec<i64> = p["weights"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_i64().unwrap())
                .collect();
            assert_eq!(p["startValue"], 0);
            assert_eq!(p["endValue"], weights.iter().sum::<i64>());
            (
                p["name"].as_str().unwrap().to_string(),
                p["unit"].as_str().unwrap().to_string(),
                samples,
                weights,
            )
        })
        .collect()
}

fn names(stack: &[&str]) -> Vec<String> {
    stack.iter().map(|s| s.to_string()).collect()
}

#[test]
fn hand_built_profile_one_profile_per_thread_in_time_order() {
    let dir = TempDir::new().unwrap();
    let input = dir.path().join("timed.pb");
    write_proto(&hand_built(true), &input);
    let out = dir.path().join("timed.speedscope.json");
    let (file, stderr) = convert(&[&input], &out, &[]);
    assert_eq!(
        file["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    assert!(file["exporter"].as_str().unwrap().starts_with("cpuprof "));
    // Frames in order of first use (the first sample: main -> work).
    assert_eq!(
        file["shared"]["frames"],
        json!([
            {"name": "main", "file": "main.c", "line": 12},
            {"name": "work", "file": "work.c", "line": 25},
            {"name": "idle"},
        ])
    );
    let ns = "nanoseconds".to_string();
    assert_eq!(
        threads(&file),
        vec![
            (
                "main (tid 1)".to_string(),
                ns.clone(),
                vec![names(&["main", "work"]), names(&["main"])],
                vec![40, 20],
            ),
            (
                "worker (tid 2)".to_string(),
                ns.clone(),
                vec![
                    names(&["main", "idle"]),
                    names(&["main", "work"]),
                    names(&["main", "work"]),
                ],
                vec![30, 50, 10],
            ),
        ]
    );
    // The busiest thread opens first.
    assert_eq!(file["activeProfileIndex"], 1);
    assert!(
        stderr.contains("dropped: sample types samples/count"),
        "{stderr}"
    );
    assert!(!stderr.contains("no sample times"), "{stderr}");

    // The counts instead: unit none.
    let (counts, _) = convert(&[&input], &out, &["--sample_index=samples"]);
    let t = threads(&counts);
    assert_eq!(t[0].1, "none");
    assert_eq!(t[0].3, vec![4, 2]);
    assert_eq!(t[1].3, vec![3, 5, 1]);
}

#[test]
fn samples_without_times_keep_the_profiles_order_and_say_so() {
    let dir = TempDir::new().unwrap();
    let input = dir.path().join("untimed.pb");
    write_proto(&hand_built(false), &input);
    let out = dir.path().join("untimed.json");
    let (file, stderr) = convert(&[&input], &out, &[]);
    let t = threads(&file);
    assert_eq!(t[0].0, "main (tid 1)");
    assert_eq!(t[0].3, vec![20, 40]);
    assert_eq!(t[1].0, "worker (tid 2)");
    assert_eq!(t[1].3, vec![10, 30, 50]);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.contains("note:")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("no sample times (timestamp_ns labels)"),
        "{stderr}"
    );

    // No thread labels at all (a gperftools profile): one profile.
    let mut bare = hand_built(false);
    for s in &mut bare.samples {
        s.labels.clear();
    }
    bare.merge_samples();
    write_proto(&bare, &input);
    let (file, stderr) = convert(&[&input], &out, &[]);
    let t = threads(&file);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, file["name"].as_str().unwrap());
    assert_eq!(t[0].3.iter().sum::<i64>(), 150);
    assert!(stderr.contains("no sample times"), "{stderr}");
}

#[test]
fn agent_labels_and_several_processes_name_the_process_too() {
    // The agent's labels: ids as strings, thread_id and thread_name.
    let mut profile = hand_built(true);
    for s in &mut profile.samples {
        for l in &mut s.labels {
            let agent = match (&*l.key, &l.value) {
                ("tid", LabelValue::Num { value, .. }) => text("thread_id", &value.to_string()),
                ("pid", LabelValue::Num { value, .. }) => text("pid", &value.to_string()),
                ("thread_comm", LabelValue::Str(name)) => text("thread_name", name),
                _ => continue,
            };
            *l = agent;
        }
    }
    let mut other = profile.samples[1].clone();
    other.labels = vec![
        text("pid", "8"),
        text("comm", "other"),
        text("thread_id", "8"),
        text("thread_name", "other-main"),
        num("timestamp_ns", 5),
    ];
    profile.samples.push(other);
    let dir = TempDir::new().unwrap();
    let input = dir.path().join("agent.pb");
    write_proto(&profile, &input);
    let (file, _) = convert(&[&input], &dir.path().join("agent.json"), &[]);
    let t = threads(&file);
    let titles: Vec<&str> = t.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        titles,
        [
            "prog (pid 7): main (tid 1)",
            "prog (pid 7): worker (tid 2)",
            "other (pid 8): other-main (tid 8)"
        ]
    );
    assert_eq!(t[1].3, vec![30, 50, 10]);
    assert_eq!(t[2].3, vec![20]);
}

/// Two threads named `alpha` and `beta` (pthread_setname_np), each
/// burning 0.1 s of its own CPU time in `first_phase`, then 0.1 s in
/// `second_phase`.
const TWO_THREADS: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

static volatile unsigned long sink;

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_for(double seconds) {
    double end = cpu_now() + seconds;
    while (cpu_now() < end)
        for (int i = 0; i < 1000; i++) sink += i;
}

__attribute__((noinline)) void first_phase(void) { spin_for(0.1); }
__attribute__((noinline)) void second_phase(void) { spin_for(0.1); }

static void *worker(void *name) {
    pthread_setname_np(pthread_self(), (const char *)name);
    first_phase();
    second_phase();
    return 0;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, 0, worker, "alpha");
    pthread_create(&b, 0, worker, "beta");
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#;

/// Records TWO_THREADS with perf into `dir`; returns (binary, perf.data).
fn record_two_threads(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    if !require_tool("gcc") || !cpuprof_testkit::perf_works(dir) {
        return None;
    }
    let source = dir.join("two_threads.c");
    std::fs::write(&source, TWO_THREADS).unwrap();
    let binary = compile(
        "gcc",
        &[&source],
        &dir.join("two_threads"),
        &["-O1", "-g", "-fno-omit-frame-pointer", "-pthread"],
    );
    let data = dir.join("two_threads.data");
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "997", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&binary)
            .current_dir(dir),
    );
    Some((binary, data))
}

#[test]
fn perf_data_of_two_named_threads_matches_perf_script() {
    let dir = TempDir::new().unwrap();
    let Some((binary, data)) = record_two_threads(dir.path()) else {
        return;
    };
    let out = dir.path().join("two_threads.speedscope.json");
    let (file, stderr) = convert(&[&binary, &data], &out, &[]);
    assert!(!stderr.contains("no sample times"), "{stderr}");
    let ours = threads(&file);

    // perf's own view: per thread, its last name and its samples'
    // periods in time order.
    let script = run_ok(
        Command::new("perf")
            .args(["script", "-F", "comm,tid,time,period", "-i"])
            .arg(&data),
    );
    let mut perf: HashMap<i64, (String, Vec<i64>)> = HashMap::new();
    let mut last_time: HashMap<i64, f64> = HashMap::new();
    for line in String::from_utf8_lossy(&script.stdout).lines() {
        // `COMM TID TIME: PERIOD` (comm has no spaces here).
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        let tid: i64 = fields[1].parse().unwrap();
        let time: f64 = fields[2].trim_end_matches(':').parse().unwrap();
        let period: i64 = fields[3].parse().unwrap();
        assert!(
            time >= last_time.get(&tid).copied().unwrap_or(0.0),
            "perf script is in time order"
        );
        last_time.insert(tid, time);
        let entry = perf.entry(tid).or_default();
        entry.0 = fields[0].to_string();
        entry.1.push(period);
    }
    assert_eq!(ours.len(), perf.len(), "one profile per thread: {ours:?}");
    for (tid, (comm, periods)) in &perf {
        let name = format!("{comm} (tid {tid})");
        let thread = ours
            .iter()
            .find(|t| t.0 == name)
            .unwrap_or_else(|| panic!("no profile {name}"));
        assert_eq!(thread.1, "nanoseconds");
        assert_eq!(&thread.3, periods, "{name}: weights in time order");
    }
    // Each named thread: both phases, every first_phase sample before
    // every second_phase sample.
    for thread_name in ["alpha", "beta"] {
        let thread = ours
            .iter()
            .find(|t| t.0.starts_with(&format!("{thread_name} (tid ")))
            .unwrap_or_else(|| panic!("no thread {thread_name}: {ours:?}"));
        let phases: Vec<u8> = thread
            .2
            .iter()
            .filter_map(|stack| {
                if stack.iter().any(|f| f == "first_phase") {
                    Some(1)
                } else if stack.iter().any(|f| f == "second_phase") {
                    Some(2)
                } else {
                    None
                }
            })
            .collect();
        let firsts = phases.iter().filter(|&&p| p == 1).count();
        assert!(firsts >= 20, "{thread_name}: {phases:?}");
        assert!(phases.len() - firsts >= 20, "{thread_name}: {phases:?}");
        assert!(
            phases[..firsts].iter().all(|&p| p == 1),
            "{thread_name}: phases out of order: {phases:?}"
        );
        let stack = &thread.2[0];
        assert!(
            stack.iter().any(|f| f == "worker"),
            "{thread_name}: {stack:?}"
        );
    }
}

/// speedscope's built app (the npm package's dist/release), with
/// Chromium and Playwright; None (skip) when missing, unless peers are
/// required.
fn speedscope_app() -> Option<PathBuf> {
    let app = std::env::var_os("CPUPROF_SPEEDSCOPE_APP")
        .map(PathBuf::from)
        .or_else(|| {
            let root = Command::new("npm").args(["root", "-g"]).output().ok()?;
            let root = String::from_utf8_lossy(&root.stdout).trim().to_string();
            Some(Path::new(&root).join("speedscope/dist/release"))
        })
        .filter(|app| app.join("index.html").exists());
    let python = Command::new("python3")
        .args(["-c", "import playwright.sync_api, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    let chromium = Path::new("/usr/bin/chromium").exists();
    let missing = match (&app, python, chromium) {
        (None, _, _) => "speedscope (npm -g)",
        (_, false, _) => "python3 playwright or jsonschema",
        (_, _, false) => "/usr/bin/chromium",
        _ => return app,
    };
    if peers_required() {
        panic!("{missing} is missing: run scripts/install-peers");
    }
    eprintln!("skipped: {missing} is missing (scripts/install-peers installs it)");
    None
}

#[test]
fn speedscope_validates_and_loads_our_files_in_chromium() {
    let Some(app) = speedscope_app() else { return };
    let dir = TempDir::new().unwrap();
    let input = dir.path().join("timed.pb");
    write_proto(&hand_built(true), &input);
    let hand = dir.path().join("hand.json");
    let (hand_file, _) = convert(&[&input], &hand, &[]);
    let mut files: Vec<(PathBuf, Value)> = vec![(hand.clone(), hand_file)];
    if let Some((binary, data)) = record_two_threads(dir.path()) {
        let out = dir.path().join("two_threads.json");
        let (file, _) = convert(&[&binary, &data], &out, &[]);
        files.push((out, file));
    }
    // Controls, so that the checks can fail: a frame index out of range
    // (valid for the schema; speedscope shows an error) and a unit the
    // schema does not know.
    let mut broken = files[0].1.clone();
    broken["profiles"][0]["samples"][0] = json!([99]);
    let broken_path = dir.path().join("broken.json");
    std::fs::write(&broken_path, broken.to_string()).unwrap();
    let mut invalid = files[0].1.clone();
    invalid["profiles"][0]["unit"] = json!("ticks");
    let invalid_path = dir.path().join("invalid.json");
    std::fs::write(&invalid_path, invalid.to_string()).unwrap();

    let shots = repo_root().join("target/web-screenshots");
    let script = repo_root().join("crates/cli/tests/speedscope/app.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(&app)
        .arg(&shots)
        .args(files.iter().map(|(p, _)| p))
        .arg(&broken_path)
        .arg(&invalid_path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    // Bounded: every wait of the script has a timeout; the whole run too.
    let started = std::time::Instant::now();
    let output = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("app.py took more than 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let (stdout, stderr, status) = texts(&output);
    assert_eq!(status, 0, "app.py failed:\n{stderr}");
    let seen: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(seen.len(), files.len() + 2);
    for ((path, file), seen) in files.iter().zip(&seen) {
        let what = path.display();
        assert_eq!(seen["schema_errors"], json!([]), "{what}");
        assert_eq!(seen["problems"], json!([]), "{what}");
        assert_eq!(seen["error"], json!([]), "{what}: {}", seen["body"]);
        let profiles: Vec<&Value> = file["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["name"])
            .collect();
        let listed: Vec<&Value> = seen["profiles"].as_array().unwrap().iter().collect();
        assert_eq!(listed, profiles, "{what}: the profile selector");
        let active = file["activeProfileIndex"].as_u64().unwrap() as usize;
        assert_eq!(
            seen["title"],
            format!(
                "{} ({}/{})",
                profiles[active].as_str().unwrap(),
                active + 1,
                profiles.len()
            ),
            "{what}: the toolbar's title"
        );
    }
    if files.len() == 2 {
        let listed = seen[1]["profiles"].to_string();
        assert!(
            listed.contains("\"alpha (tid ") && listed.contains("\"beta (tid "),
            "{listed}"
        );
    }
    let broken = &seen[files.len()];
    assert_eq!(broken["schema_errors"], json!([]));
    assert_ne!(broken["error"], json!([]), "speedscope shows the error");
    let invalid = &seen[files.len() + 1];
    assert_ne!(invalid["schema_errors"], json!([]), "the schema refuses");
}
