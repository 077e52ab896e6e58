//! `cpuprof record`.

/// Arguments of `cpuprof record`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `cpuprof record`; returns the exit status.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("record: this subcommand is being built")
}
