//! `report --symbols`: the function names of addresses, as pprof
//! `--symbols` prints them.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};

/// Writes one name per address of `input` (hex `0x...`, one or several
/// per line; `/proc/maps` lines among them say where the binaries were
/// loaded, else the addresses are the binary's link-time ones): the
/// function (outermost of an inline chain, short form as `--text` prints
/// it unless `full_names`), `??` when unknown. `inputs` must all be ELF
/// binaries.
pub fn write(
    out: &mut dyn Write,
    inputs: &[PathBuf],
    debug_dirs: &[PathBuf],
    input: &str,
    full_names: bool,
) -> Result<()> {
    let (binaries, others): (Vec<PathBuf>, Vec<PathBuf>) =
        inputs.iter().cloned().partition(|p| crate::load::is_elf(p));
    if let Some(other) = others.first() {
        bail!(
            "{}: not an ELF binary: --symbols takes binaries and reads addresses on standard input",
            other.display()
        );
    }
    if binaries.is_empty() {
        bail!("--symbols needs the binary whose addresses are read on standard input");
    }
    let cpuprof_profile::addresses::AddressList {
        mappings,
        addresses,
    } = cpuprof_profile::addresses::parse(input)
        .map_err(|e| anyhow::anyhow!("--symbols: standard input {e}"))?;
    let mut builder = cpuprof_profile::ProfileBuilder::new(vec![cpuprof_profile::ValueType::new(
        "samples", "count",
    )]);
    builder.profile.mappings = mappings;
    builder.profile.sort_mappings();
    let locations: Vec<_> = addresses.iter().map(|&a| builder.location_at(a)).collect();
    let mut profile = builder.profile;
    let mut options = cpuprof_symbolize::Options {
        binaries,
        ..cpuprof_symbolize::Options::default()
    };
    options.debug_dirs.extend(debug_dirs.iter().cloned());
    options.debuginfod = cpuprof_symbolize::debuginfod::Debuginfod::from_env();
    for warning in cpuprof_symbolize::symbolize(&mut profile, &options) {
        eprintln!("cpuprof: warning: {warning}");
    }
    for l in locations {
        let location = profile.location(l);
        let name = match location.lines.last() {
            Some(line) => {
                let name = &profile.function(line.function).name;
                if full_names {
                    name.clone()
                } else {
                    cpuprof_report::names::short_name(name)
                }
            }
            None => "??".to_string(),
        };
        writeln!(out, "{name}")?;
    }
    Ok(())
}
