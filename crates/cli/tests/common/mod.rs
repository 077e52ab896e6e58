//! Helpers shared by the command-line tests (each test file is its own
//! crate, and not each uses every helper).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use cpuprof_testkit::run_stdout;

/// The `cpuprof` binary under test (never asking the debuginfod servers
/// of the environment: Debian's profile.d names one on the internet).
pub fn cpuprof() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cpuprof"));
    cmd.env_remove("DEBUGINFOD_URLS");
    cmd
}

/// `cpuprof report ARGS INPUTS`'s standard output; the run must succeed.
pub fn report(args: &[&str], inputs: &[&Path]) -> String {
    let mut cmd = cpuprof();
    cmd.arg("report").args(args).args(inputs);
    run_stdout(&mut cmd)
}

/// A finished command's (stdout, stderr, exit status; -1 when killed).
pub fn texts(out: &std::process::Output) -> (String, String, i32) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `cpuprof report ARGS` with no standard input: (stdout, stderr, status).
pub fn report_texts(args: &[&str], configure: impl FnOnce(&mut Command)) -> (String, String, i32) {
    let mut cmd = cpuprof();
    cmd.arg("report")
        .args(args)
        .stdin(std::process::Stdio::null());
    configure(&mut cmd);
    texts(&cmd.output().unwrap())
}
