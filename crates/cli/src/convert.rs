//! `cpuprof convert`.

/// Arguments of `cpuprof convert`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs `cpuprof convert`; returns the exit status.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("convert: this subcommand is being built")
}
