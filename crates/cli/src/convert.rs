//! `cpuprof convert IN... -o OUT --to FORMAT`: read profiles of any
//! formats (summed when several; `--base` subtracts one), and write them
//! in another format, saying on standard error what the target format
//! cannot hold.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use cpuprof_driver::load::{Inputs, Loader};
use cpuprof_profile::{collapsed, dcpi, gmon, gperftools, proto, Profile};

/// Arguments of `cpuprof convert`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs are recognized by content (gperftools, pprof profile.proto, gmon.out, \
DCPI files or database directories, collapsed stacks); ELF files among them \
are the profiled executables (gmon.out needs one for its pointer width and \
symbols). Several profiles are summed.

Examples:
  cpuprof convert prog.prof -o prog.pb.gz --to pprof
  cpuprof convert ./prog gmon.out -o prog.folded --to collapsed
  cpuprof convert a.prof b.prof -o sum.prof --to gperftools
  cpuprof convert prog.pb.gz -o dcpidb --to dcpi
  cpuprof convert ./prog prog.prof -o callgrind.out.prog --to callgrind
  cpuprof convert prog.data -o prog.speedscope.json --to speedscope")]
pub struct Args {
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: Target,
    /// Where to write (a directory for --to dcpi: one file per image under
    /// OUT/EPOCH/).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
    /// Subtract this profile from the sum of the inputs.
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// For --to collapsed, callgrind and speedscope: which sample value (index or type
    /// name).
    #[arg(long = "sample_index", alias = "sample-index", value_name = "N|NAME")]
    pub sample_index: Option<String>,
    /// DCPI database inputs: read only this epoch.
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
    /// Do not symbolize before writing formats that hold names (pprof,
    /// collapsed, callgrind, speedscope).
    #[arg(long = "no-symbolize")]
    pub no_symbolize: bool,
    /// Profiles, and ELF executables they belong to.
    #[arg(required = true, value_name = "IN")]
    pub inputs: Vec<PathBuf>,
}

/// The formats `convert` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// gperftools' binary CPU profile.
    Gperftools,
    /// pprof's profile.proto, gzip-compressed.
    Pprof,
    /// Collapsed stacks, one `root;...;leaf count` line per stack.
    Collapsed,
    /// DCPI pdb 0.07: a database directory, one file per image.
    Dcpi,
    /// gprof's gmon.out (GNU format).
    Gmon,
    /// Callgrind format (KCachegrind, callgrind_annotate): the same bytes
    /// as `cpuprof report --callgrind` of the same inputs.
    Callgrind,
    /// speedscope's JSON: one sampled profile per thread, in time order
    /// (the samples' `timestamp_ns` labels).
    Speedscope,
}

/// Runs `cpuprof convert`.
pub fn run(args: Args) -> Result<i32> {
    let Inputs { binaries, profiles } = Inputs::classify(&args.inputs, false)?;
    let symbolize = !args.no_symbolize
        && matches!(
            args.to,
            Target::Pprof | Target::Collapsed | Target::Callgrind | Target::Speedscope
        );
    let options = cpuprof_symbolize::Options {
        binaries: binaries.clone(),
        ..cpuprof_symbolize::Options::default()
    };
    let loader = Loader::new(args.epoch.clone(), options, symbolize);
    let profile = loader.load_sum(&profiles, args.base.as_deref())?;
    let notes = write(&profile, &binaries, loader.symbolizer(), &args)?;
    for n in notes {
        eprintln!("cpuprof: convert: dropped: {n}");
    }
    Ok(0)
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    Ok(BufWriter::new(File::create(path).with_context(|| {
        format!("{}: cannot create", path.display())
    })?))
}

/// Writes the profile in the target format; returns what was dropped.
fn write(
    profile: &Profile,
    binaries: &[PathBuf],
    symbolizer: &cpuprof_symbolize::Symbolizer,
    args: &Args,
) -> Result<Vec<String>> {
    let out = &args.output;
    let mut notes = Vec::new();
    match args.to {
        Target::Pprof => {
            let mut f = create(out)?;
            proto::write(profile, &mut f)?;
            f.flush()?;
        }
        Target::Gperftools => {
            if profile.samples.iter().any(|s| {
                s.locations
                    .first()
                    .is_some_and(|&l| profile.location(l).address == 0)
            }) {
                bail!(
                    "the profile has stacks without addresses (collapsed stacks hold names only): a gperftools profile needs program addresses"
                );
            }
            notes.extend(gperftools_losses(profile));
            let mut f = create(out)?;
            gperftools::write(profile, &mut f)?;
            f.flush()?;
        }
        Target::Collapsed => {
            let index = sample_index(profile, args.sample_index.as_deref())?;
            notes.extend(collapsed_losses(profile, index));
            let mut f = create(out)?;
            collapsed::write(profile, index, &mut f)?;
            f.flush()?;
        }
        Target::Callgrind => {
            let mut options = cpuprof_report::Options::default();
            if args.sample_index.is_some() {
                options.sample_index = Some(sample_index(profile, args.sample_index.as_deref())?);
            }
            let stacks = cpuprof_report::Stacks::build(profile, &options);
            let mut f = create(out)?;
            cpuprof_driver::session::write_callgrind(
                &mut f, binaries, symbolizer, &stacks, &options,
            )?;
            f.flush()?;
        }
        Target::Speedscope => {
            let index = sample_index(profile, args.sample_index.as_deref())?;
            notes.extend(other_sample_types(
                profile,
                index,
                "speedscope holds one value per sample",
            ));
            let options = cpuprof_report::Options {
                sample_index: Some(index),
                ..cpuprof_report::Options::default()
            };
            let stacks = cpuprof_report::Stacks::build(profile, &options);
            let program = cpuprof_driver::session::program_name(binaries, profile);
            let mut f = create(out)?;
            let said = cpuprof_report::output::speedscope::write(&mut f, &stacks, &program)?;
            f.flush()?;
            for note in said {
                eprintln!("cpuprof: convert: note: {note}");
            }
        }
        Target::Gmon => {
            let (linked, other_objects) = executable_at_link_time(profile, symbolizer)?;
            notes.extend(other_objects);
            let (file, dropped) = gmon::from_profile(&linked);
            notes.extend(dropped);
            let mut f = create(out)?;
            gmon::write(&file, &mut f)?;
            f.flush()?;
        }
        Target::Dcpi => {
            let (files, dropped) = dcpi::from_profile(profile);
            notes.extend(dropped);
            if files.is_empty() {
                bail!("the profile has no samples with addresses: nothing to write as DCPI");
            }
            let written = dcpi::write_database(out, &files)
                .with_context(|| format!("{}: cannot write the DCPI database", out.display()))?;
            for w in written {
                eprintln!("cpuprof: convert: wrote {}", w.display());
            }
        }
    }
    Ok(notes)
}

/// For gmon.out, which describes one executable at its link-time
/// addresses (glibc writes a PIE's link-relative addresses): the
/// executable's samples with their addresses moved to link time, the
/// samples of other objects (shared libraries, the vDSO) dropped and
/// counted. A profile without mappings (gmon.out, DCPI) already has
/// link-time addresses and is kept as it is.
fn executable_at_link_time(
    profile: &Profile,
    symbolizer: &cpuprof_symbolize::Symbolizer,
) -> Result<(Profile, Option<String>)> {
    use cpuprof_symbolize::Kind;
    if profile.mappings.is_empty() {
        return Ok((profile.clone(), None));
    }
    let binaries = symbolizer.binaries_for(profile);
    let is_executable = |i: usize| {
        profile.mappings[i].is_executable()
            && binaries[i].as_ref().is_some_and(|b| {
                matches!(
                    b.kind(),
                    Kind::Executable | Kind::PositionIndependentExecutable
                )
            })
    };
    let Some(main) = (0..profile.mappings.len()).find(|&i| is_executable(i)) else {
        let path = profile
            .mappings
            .iter()
            .find(|m| m.is_executable() && m.path.starts_with('/'))
            .map_or("the profiled program", |m| m.path.as_str());
        bail!(
            "gmon.out holds the executable's link-time addresses: {path} cannot be read; give the executable among the inputs"
        );
    };
    let executable = binaries[main].clone().expect("checked above");
    let main_path = profile.mappings[main].path.clone();
    // Each location of the executable at its link-time address.
    let mut linked = profile.clone();
    let mut link_address: Vec<Option<u64>> = vec![None; profile.locations.len()];
    for (l, location) in profile.locations.iter().enumerate() {
        if let Some(m) = mapping_of(profile, location).filter(|m| m.path == main_path) {
            link_address[l] = executable.runtime_to_file(m, location.address);
        }
    }
    let samples_index = profile.sample_index("samples");
    let value_index = profile.default_sample_index();
    let count_of = |s: &cpuprof_profile::model::Sample| -> i64 {
        match samples_index {
            Some(i) => s.values.get(i).copied().unwrap_or(0),
            None => {
                let v = s.values.get(value_index).copied().unwrap_or(0);
                if profile.period > 0
                    && profile.sample_types.get(value_index) == Some(&profile.period_type)
                {
                    v / profile.period
                } else {
                    v
                }
            }
        }
    };
    let mut dropped = 0i64;
    let mut objects: Vec<String> = Vec::new();
    linked.samples.retain(|s| {
        let keep = s
            .locations
            .first()
            .is_some_and(|l| link_address[l.index()].is_some());
        if !keep {
            dropped += count_of(s).max(0);
            if let Some(m) = s
                .locations
                .first()
                .and_then(|&l| mapping_of(profile, profile.location(l)))
            {
                let name = if m.path.is_empty() {
                    "anonymous memory".to_string()
                } else {
                    m.base_name().to_string()
                };
                if !objects.contains(&name) {
                    objects.push(name);
                }
            }
        }
        keep
    });
    for (l, location) in linked.locations.iter_mut().enumerate() {
        if let Some(address) = link_address[l] {
            location.address = address;
        }
        location.mapping = None;
    }
    linked.mappings.clear();
    let note = (dropped > 0).then(|| {
        objects.sort();
        let shown: Vec<&str> = objects.iter().take(4).map(String::as_str).collect();
        format!(
            "{dropped} samples in other objects than the executable {} ({}{}): gmon.out describes one executable",
            executable.path().display(),
            shown.join(", "),
            if objects.len() > shown.len() { ", ..." } else { "" }
        )
    });
    Ok((linked, note))
}

/// The mapping of `location`: its own, else the one holding its address.
fn mapping_of<'a>(
    profile: &'a Profile,
    location: &cpuprof_profile::Location,
) -> Option<&'a cpuprof_profile::Mapping> {
    location.mapping.map(|m| profile.mapping(m)).or_else(|| {
        profile
            .mappings
            .iter()
            .find(|m| m.contains(location.address))
    })
}

/// The sample value `flag` names (the profile's default without one), as
/// `report --sample_index` reads it.
fn sample_index(profile: &Profile, flag: Option<&str>) -> Result<usize> {
    match cpuprof_driver::settings::sample_index(profile, flag) {
        Ok(index) => Ok(index.unwrap_or_else(|| profile.default_sample_index())),
        Err(e) => bail!("--{e}"),
    }
}

/// What a gperftools profile cannot hold of `profile`.
fn gperftools_losses(p: &Profile) -> Vec<String> {
    let mut notes = Vec::new();
    let kept = ["samples", "cpu"];
    let others: Vec<String> = p
        .sample_types
        .iter()
        .filter(|t| !kept.contains(&t.kind.as_str()))
        .map(|t| format!("{}/{}", t.kind, t.unit))
        .collect();
    if !others.is_empty() {
        notes.push(format!(
            "sample types {} (a gperftools profile holds one sample count per stack)",
            others.join(", ")
        ));
    }
    let nonpositive = p
        .samples
        .iter()
        .filter(|s| {
            let i = p
                .sample_index("samples")
                .unwrap_or(p.default_sample_index());
            s.values.get(i).copied().unwrap_or(0) <= 0
        })
        .count();
    if nonpositive > 0 {
        notes.push(format!("{nonpositive} samples with a count of 0 or less"));
    }
    if p.samples.iter().any(|s| !s.labels.is_empty()) {
        notes.push("sample labels".into());
    }
    if !p.functions.is_empty() {
        notes.push("symbol information (function names, files, lines, inline frames): gperftools profiles hold addresses".into());
    }
    if !p.comments.is_empty() || p.time_nanos != 0 || p.duration_nanos != 0 {
        notes.push("comments and collection time".into());
    }
    notes
}

/// The sample types of `p` other than `index`, dropped by a format that
/// holds one value (`why` says so).
fn other_sample_types(p: &Profile, index: usize, why: &str) -> Option<String> {
    let others: Vec<String> = p
        .sample_types
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, t)| format!("{}/{}", t.kind, t.unit))
        .collect();
    (!others.is_empty()).then(|| format!("sample types {} ({why})", others.join(", ")))
}

/// What collapsed stacks cannot hold of `profile` at `index`.
fn collapsed_losses(p: &Profile, index: usize) -> Vec<String> {
    let mut notes = Vec::new();
    notes.extend(other_sample_types(
        p,
        index,
        "collapsed stacks hold one value",
    ));
    if p.locations.iter().any(|l| !l.lines.is_empty()) {
        notes.push(
            "addresses, files and line numbers of symbolized frames (collapsed stacks hold names)"
                .into(),
        );
    }
    if !p.mappings.is_empty() {
        notes.push("mappings".into());
    }
    if p.samples.iter().any(|s| !s.labels.is_empty()) {
        notes.push("sample labels".into());
    }
    notes
}
