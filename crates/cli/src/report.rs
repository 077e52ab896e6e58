//! `cpuprof report [OUTPUT] [OPTIONS] [BINARY] PROFILE...`: the whole
//! analysis run in one function ([`run`]): parse flags → read (and sum, and
//! subtract a base) → symbolize → build the stacks (drop profiler frames,
//! focus, ignore, granularity) → build the graph → render.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cpuprof_profile::{Profile, ReadOptions, Target};
use cpuprof_report::{text, Granularity, Graph, Options, Stacks};
use regex::Regex;

/// Arguments of `cpuprof report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs are recognized by content: ELF files are binaries (each serves the \
mapping of the profile with the same path, else the main executable's), \
everything else is read as a profile. Several profiles are summed.

Examples:
  cpuprof report --text ./prog prog.prof
  cpuprof report --lines --focus='^burn' --nodecount=20 ./prog prog.prof
  cpuprof report --text --base=before.prof ./prog after.prof")]
pub struct Args {
    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub granularity: GranularityArgs,

    /// Keep only samples with a frame matching RE (function name, file:line or address).
    #[arg(long, value_name = "RE")]
    pub focus: Option<String>,
    /// Drop samples with a frame matching RE.
    #[arg(long, value_name = "RE")]
    pub ignore: Option<String>,
    /// Remove frames matching RE from stacks (their samples stay).
    #[arg(long, value_name = "RE")]
    pub hide: Option<String>,
    /// Sort by cumulative value instead of flat.
    #[arg(long)]
    pub cum: bool,
    /// Show at most N rows or nodes.
    #[arg(long, value_name = "N")]
    pub nodecount: Option<usize>,
    /// Graphs: drop nodes whose cum is below this fraction of the total.
    #[arg(long, value_name = "F", default_value_t = 0.005)]
    pub nodefraction: f64,
    /// Graphs: drop edges whose weight is below this fraction of the total.
    #[arg(long, value_name = "F", default_value_t = 0.001)]
    pub edgefraction: f64,
    /// Graphs: keep at most N edges in and out of a node.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub maxdegree: usize,
    /// Keep C++ argument lists and template parameters in names.
    #[arg(long = "full-names", alias = "full_names")]
    pub full_names: bool,
    /// Which sample value to report: an index or a sample type name (e.g. `cpu`).
    #[arg(long = "sample_index", alias = "sample-index", value_name = "N|NAME")]
    pub sample_index: Option<String>,
    /// Subtract this profile (a diff: negative values are shown).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// With --base, hide rows whose value went down.
    #[arg(long = "drop_negative", alias = "drop-negative")]
    pub drop_negative: bool,
    /// Keep the profiler's own signal-handling frames.
    #[arg(long = "keep-profiler-frames")]
    pub keep_profiler_frames: bool,
    /// Do not symbolize (print addresses).
    #[arg(long = "no-symbolize")]
    pub no_symbolize: bool,
    /// Also look for separate debug files under DIR (default /usr/lib/debug).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// Write the report to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    /// [BINARY...] PROFILE...: binaries (ELF) and profiles, in any order.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
}

/// The output kind (one at a time; `--text` by default).
#[derive(clap::Args, Debug, Default)]
#[group(multiple = false)]
pub struct OutputArgs {
    /// One line per node: flat, flat%, sum%, cum, cum%, name (the default).
    #[arg(long)]
    pub text: bool,
}

/// Node granularity (one at a time; `--functions` by default).
#[derive(clap::Args, Debug, Default)]
#[group(multiple = false)]
pub struct GranularityArgs {
    /// One node per function (the default).
    #[arg(long)]
    pub functions: bool,
    /// One node per source line.
    #[arg(long)]
    pub lines: bool,
    /// One node per program address.
    #[arg(long)]
    pub addresses: bool,
    /// One node per source file.
    #[arg(long)]
    pub files: bool,
}

impl GranularityArgs {
    fn granularity(&self) -> Granularity {
        if self.lines {
            Granularity::Lines
        } else if self.addresses {
            Granularity::Addresses
        } else if self.files {
            Granularity::Files
        } else {
            Granularity::Functions
        }
    }
}

/// Runs `cpuprof report`.
pub fn run(args: Args) -> Result<i32> {
    let (binaries, profiles) = classify_inputs(&args.inputs)?;
    if profiles.is_empty() {
        bail!("no profile given: every input is an ELF binary");
    }
    let symbolize_options = symbolize_options(&args, &binaries);
    let read_options = read_options(&binaries);

    let mut loaded = Vec::with_capacity(profiles.len());
    for path in &profiles {
        loaded.push(load(path, &read_options, &symbolize_options, args.no_symbolize)?);
    }
    let mut profile = sum(loaded)?;
    if let Some(base) = &args.base {
        let mut base = load(base, &read_options, &symbolize_options, args.no_symbolize)?;
        base.scale(-1);
        profile = sum(vec![profile, base]).context("--base")?;
    }

    let options = report_options(&args, &profile)?;
    let stacks = Stacks::build(&profile, &options);
    let graph = Graph::build(&stacks, false);

    let mut out = output(args.output_file.as_deref())?;
    text::write(&mut out, &stacks, &graph, &options)?;
    out.flush()?;
    Ok(0)
}

/// Splits the inputs into ELF binaries and profiles, by content.
fn classify_inputs(inputs: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut binaries = Vec::new();
    let mut profiles = Vec::new();
    for path in inputs {
        let mut magic = [0u8; 4];
        let is_elf = File::open(path)
            .and_then(|mut f| io::Read::read_exact(&mut f, &mut magic))
            .map(|_| &magic == b"\x7fELF")
            .unwrap_or(false);
        if is_elf {
            binaries.push(path.clone());
        } else {
            profiles.push(path.clone());
        }
    }
    Ok((binaries, profiles))
}

/// Pointer width and byte order from the first binary's ELF header (for
/// formats whose files do not record them).
fn read_options(binaries: &[PathBuf]) -> ReadOptions {
    let target = binaries.first().and_then(|path| {
        let mut ident = [0u8; 6];
        let mut f = File::open(path).ok()?;
        io::Read::read_exact(&mut f, &mut ident).ok()?;
        Some(Target {
            pointer_size: if ident[4] == 1 { 4 } else { 8 },
            big_endian: ident[5] == 2,
        })
    });
    ReadOptions { target }
}

fn symbolize_options(args: &Args, binaries: &[PathBuf]) -> cpuprof_symbolize::Options {
    let mut options = cpuprof_symbolize::Options {
        binaries: binaries.to_vec(),
        ..cpuprof_symbolize::Options::default()
    };
    if !args.debug_dirs.is_empty() {
        options.debug_dirs.extend(args.debug_dirs.iter().cloned());
    }
    options
}

/// Reads and symbolizes one profile.
fn load(
    path: &Path,
    read_options: &ReadOptions,
    symbolize_options: &cpuprof_symbolize::Options,
    no_symbolize: bool,
) -> Result<Profile> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    // SAFETY: the map is read-only and lives only while parsing; a profile
    // truncated by another process while we read it gives a parse error or
    // SIGBUS, as any reader of a file being rewritten would.
    let data = unsafe { memmap2::Mmap::map(&file) }
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let (_, mut profile) = cpuprof_profile::read_profile(&data, read_options)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if !no_symbolize {
        for warning in cpuprof_symbolize::symbolize(&mut profile, symbolize_options) {
            eprintln!("cpuprof: warning: {warning}");
        }
    }
    Ok(profile)
}

fn sum(profiles: Vec<Profile>) -> Result<Profile> {
    Ok(cpuprof_profile::merge::merge(profiles)?)
}

fn report_options(args: &Args, profile: &Profile) -> Result<Options> {
    let regex = |flag: &str, re: &Option<String>| -> Result<Option<Regex>> {
        re.as_deref()
            .map(|r| Regex::new(r).with_context(|| format!("--{flag}: invalid regular expression")))
            .transpose()
    };
    let sample_index = match &args.sample_index {
        None => None,
        Some(s) => Some(match s.parse::<usize>() {
            Ok(i) if i < profile.sample_types.len() => i,
            _ => profile.sample_index(s).with_context(|| {
                let types: Vec<String> = profile
                    .sample_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("{i}={}", t.kind))
                    .collect();
                format!("--sample_index={s}: the profile's sample types are {}", types.join(", "))
            })?,
        }),
    };
    Ok(Options {
        granularity: args.granularity.granularity(),
        focus: regex("focus", &args.focus)?,
        ignore: regex("ignore", &args.ignore)?,
        hide: regex("hide", &args.hide)?,
        cum: args.cum,
        full_names: args.full_names,
        sample_index,
        drop_negative: args.drop_negative,
        nodecount: args.nodecount,
        nodefraction: args.nodefraction,
        edgefraction: args.edgefraction,
        maxdegree: args.maxdegree,
        keep_profiler_frames: args.keep_profiler_frames,
    })
}

/// Standard output (buffered) or the file named by `-o`.
fn output(path: Option<&Path>) -> Result<Box<dyn Write>> {
    Ok(match path {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("{}: cannot create", path.display()))?,
        )),
        None => Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock())),
    })
}
