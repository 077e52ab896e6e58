//! Helpers shared by the command-line tests (each test file is its own
//! crate, and not each uses every helper).
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use cpuprof_testkit::run_stdout;

/// The `cpuprof` binary under test.
pub fn cpuprof() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cpuprof"))
}

/// `cpuprof report ARGS INPUTS`'s standard output; the run must succeed.
pub fn report(args: &[&str], inputs: &[&Path]) -> String {
    let mut cmd = cpuprof();
    cmd.arg("report").args(args).args(inputs);
    run_stdout(&mut cmd)
}
