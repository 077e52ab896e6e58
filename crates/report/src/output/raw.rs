//! `--raw`: the symbolized raw profile, as perl pprof's `--raw` writes it
//! (the format is [`cpuprof_profile::symbolized`]'s): a `--- symbol`
//! section naming every address of the kept stacks, then the profile.
//! Read back, it needs no binary.
//!
//! The stacks are the report's samples at address level: `--focus` and
//! `--ignore` choose the samples and the profiler's own frames are left
//! out, as perl pprof does; granularity and `--hide` do not apply (the
//! format holds addresses). Samples whose count is 0 or less (a `--base`
//! diff) cannot be written and are left out, with a note on stderr.

use std::io::{self, Write};

use cpuprof_profile::{symbolized, Profile, Sample};

use crate::stacks::Stacks;

/// Writes the symbolized raw profile of the kept samples of `stacks`;
/// `program` names the program on the `binary=` line.
pub fn write(out: &mut dyn Write, stacks: &Stacks, program: &str) -> io::Result<()> {
    let source = stacks.profile();
    let mut samples = Vec::with_capacity(stacks.len());
    let mut locations = Vec::with_capacity(256);
    let count_index = source
        .sample_index("samples")
        .unwrap_or_else(|| source.default_sample_index());
    let mut dropped = 0usize;
    for i in 0..stacks.len() {
        let sample = stacks.kept_sample(i, &mut locations);
        if locations.is_empty() {
            continue;
        }
        if let Some(l) = locations.iter().find(|l| source.location(**l).address == 0) {
            let name = source
                .location(*l)
                .lines
                .last()
                .map(|line| source.function(line.function).name.as_str())
                .unwrap_or("?");
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "--raw needs program addresses, but frame `{name}` has none (collapsed stacks hold names only)"
                ),
            ));
        }
        if sample.values.get(count_index).copied().unwrap_or(0) <= 0 {
            dropped += 1;
            continue;
        }
        samples.push(Sample {
            locations: locations.clone(),
            values: sample.values.clone(),
            labels: Vec::new(),
        });
    }
    if dropped > 0 {
        eprintln!(
            "cpuprof: --raw: left out {dropped} stacks whose count is 0 or less (a raw profile holds positive counts)"
        );
    }
    // The profile's tables, with the kept samples: the writer names only
    // the locations they use.
    let kept = Profile {
        samples,
        sample_types: source.sample_types.clone(),
        default_sample_type: source.default_sample_type.clone(),
        locations: source.locations.clone(),
        functions: source.functions.clone(),
        period_type: source.period_type.clone(),
        period: source.period,
        ..Profile::default()
    };
    symbolized::write(&kept, program, out)
}
