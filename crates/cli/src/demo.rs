//! `cpuprof demo`.

/// Arguments of `cpuprof demo`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `cpuprof demo`; returns the exit status.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("demo: this subcommand is being built")
}
