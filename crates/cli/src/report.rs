//! `cpuprof report`.

/// Arguments of `cpuprof report`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `cpuprof report`; returns the exit status.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("report: this subcommand is being built")
}
