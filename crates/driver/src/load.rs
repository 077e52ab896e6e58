//! Reading the inputs of a session and of `convert`: ELF binaries and profiles
//! told apart by content, profiles read (any format, a DCPI database
//! directory too), symbolized, summed, and a base subtracted.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cpuprof_profile::{Format, Profile, ReadOptions};
use cpuprof_report::executable;

/// The command line's inputs, by content.
pub struct Inputs {
    /// ELF files: the profiled programs and libraries.
    pub binaries: Vec<PathBuf>,
    /// Everything else: profiles.
    pub profiles: Vec<PathBuf>,
}

impl Inputs {
    /// Splits `inputs` into binaries (ELF) and profiles; at least one
    /// profile is required unless `fetched` (profiles come from URLs).
    pub fn classify(inputs: &[PathBuf], fetched: bool) -> Result<Inputs> {
        let (binaries, profiles): (Vec<PathBuf>, Vec<PathBuf>) =
            inputs.iter().cloned().partition(|p| is_elf(p));
        if profiles.is_empty() && !fetched {
            anyhow::bail!("no profile given: every input is an ELF binary");
        }
        Ok(Inputs { binaries, profiles })
    }
}

/// True when `path` is an ELF file.
pub fn is_elf(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|_| &magic == b"\x7fELF")
}

/// Reads and symbolizes profiles for one run, with one symbolizer: each
/// binary is opened and its debug information read once, for every
/// profile and for the outputs that read binaries themselves.
pub struct Loader {
    binaries: Vec<PathBuf>,
    read_options: ReadOptions,
    symbolizer: cpuprof_symbolize::Symbolizer,
    symbolize: bool,
}

impl Loader {
    /// A loader for profiles of `binaries` (those of `options`), which
    /// symbolizes them with `options` when `symbolize`; files missing here
    /// come from the debuginfod servers of `DEBUGINFOD_URLS` unless
    /// `options` names a client.
    pub fn new(
        epoch: Option<String>,
        mut options: cpuprof_symbolize::Options,
        symbolize: bool,
    ) -> Loader {
        if options.debuginfod.is_none() && symbolize {
            options.debuginfod = cpuprof_symbolize::debuginfod::Debuginfod::from_env();
        }
        let binaries = &options.binaries;
        let target = binaries.first().and_then(|b| {
            let mut ident = [0u8; 6];
            File::open(b).ok()?.read_exact(&mut ident).ok()?;
            executable::elf_target(&ident)
        });
        Loader {
            binaries: binaries.to_vec(),
            read_options: ReadOptions {
                target,
                dcpi_epoch: epoch,
                unwinder: Some(std::sync::Arc::new(
                    cpuprof_symbolize::unwind::DwarfUnwinder::new(),
                )),
                ..ReadOptions::default()
            },
            symbolizer: cpuprof_symbolize::Symbolizer::new(options),
            symbolize,
        }
    }

    /// The run's symbolizer (its binaries stay open).
    pub fn symbolizer(&self) -> &cpuprof_symbolize::Symbolizer {
        &self.symbolizer
    }

    /// Reads (and symbolizes) one profile: a file of any format, a DCPI
    /// database directory, or `-` for standard input.
    pub fn load(&self, path: &Path) -> Result<Profile> {
        let (format, profile) = if path == Path::new("-") {
            // `perf record -o - | cpuprof report -`: the profile on stdin.
            let mut data = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut data)
                .context("standard input: cannot read")?;
            self.read_data("standard input", &data, None)?
        } else if path.is_dir() {
            let profile =
                cpuprof_profile::dcpi::load_database(path, self.read_options.dcpi_epoch.as_deref())
                    .map_err(|e| anyhow::anyhow!(e))?;
            (Format::Dcpi, profile)
        } else {
            self.read_file(path)?
        };
        self.finish(format, profile)
    }

    /// Resolves DCPI offsets and symbolizes a profile just read.
    fn finish(&self, format: Format, mut profile: Profile) -> Result<Profile> {
        if format == Format::Dcpi {
            executable::resolve_dcpi_offsets(&mut profile, &self.binaries);
        }
        if self.symbolize {
            for warning in self.symbolizer.symbolize(&mut profile) {
                eprintln!("cpuprof: warning: {warning}");
            }
        }
        Ok(profile)
    }

    /// Reads `profiles` and sums them; subtracts `base` if given.
    pub fn load_sum(&self, profiles: &[PathBuf], base: Option<&Path>) -> Result<Profile> {
        let mut loaded = Vec::with_capacity(profiles.len());
        for path in profiles {
            loaded.push(self.load(path)?);
        }
        let mut profile = cpuprof_profile::merge::merge(loaded).context("summing the profiles")?;
        if let Some(base) = base {
            let mut base = self.load(base)?;
            base.scale(-1);
            profile = cpuprof_profile::merge::merge(vec![profile, base]).context("--base")?;
        }
        Ok(profile)
    }

    /// Reads one profile file. The file is mapped only while it is parsed,
    /// and the reader lets go of the pages it is done with, so that a big
    /// profile does not stay resident beside the model built from it.
    fn read_file(&self, path: &Path) -> Result<(Format, Profile)> {
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        // SAFETY: the map is read-only and private; a profile truncated by
        // another process while we read it gives a parse error or SIGBUS,
        // as any reader of a file being rewritten would.
        let data = unsafe { memmap2::Mmap::map(&file) }
            .with_context(|| format!("{}: cannot read", path.display()))?;
        self.read_data(
            &path.display().to_string(),
            &data,
            Some(release_mapped_pages),
        )
    }

    /// Reads a profile from `data` (named `name` in errors).
    fn read_data(
        &self,
        name: &str,
        data: &[u8],
        release: Option<fn(&[u8])>,
    ) -> Result<(Format, Profile)> {
        let mut options = ReadOptions {
            release,
            ..self.read_options.clone()
        };
        if cpuprof_profile::detect_format_with(data, &options) == Some(Format::Gmon) {
            // gmon.out needs the executable's segments and gprof's symbols.
            let full = executable::read_options_for(self.binaries.first().map(PathBuf::as_path));
            options.gmon_symbol_starts = full.gmon_symbol_starts;
            options.executable_mappings = full.executable_mappings;
        }
        cpuprof_profile::read_profile(data, &options).map_err(|e| anyhow::anyhow!("{name}: {e}"))
    }

    /// Reads (and symbolizes) a profile fetched from `name` (a URL).
    pub fn load_data(&self, name: &str, data: &[u8]) -> Result<Profile> {
        let (format, profile) = self.read_data(name, data, None)?;
        self.finish(format, profile)
    }
}

/// The fetcher of sources not found here, for listings of `profile`:
/// debuginfod's `/buildid/ID/source/PATH`, with the build ids of the
/// mappings whose locations name PATH. None without a debuginfod client.
pub fn source_fetcher(
    symbolizer: &cpuprof_symbolize::Symbolizer,
    profile: &Profile,
) -> Option<cpuprof_report::source::SourceFetcher> {
    let client = symbolizer.options().debuginfod.clone()?;
    let mut ids: rustc_hash::FxHashMap<String, Vec<String>> = Default::default();
    for location in &profile.locations {
        let Some(mapping) = location
            .mapping
            .and_then(|m| profile.mappings.get(m.index()))
        else {
            continue;
        };
        if mapping.build_id.is_empty() {
            continue;
        }
        for line in &location.lines {
            let file = &profile.function(line.function).filename;
            if !file.starts_with('/') {
                continue;
            }
            let list = ids.entry(file.clone()).or_default();
            if !list.contains(&mapping.build_id) {
                list.push(mapping.build_id.clone());
            }
        }
    }
    Some(Box::new(move |path: &str| {
        let found = ids
            .get(path)?
            .iter()
            .find_map(|id| client.fetch(id, cpuprof_symbolize::debuginfod::Artifact::Source(path)));
        if found.is_none() {
            if let Some(warning) = client.take_warning() {
                eprintln!("cpuprof: warning: {warning}");
            }
        }
        found
    }))
}

/// Drops the whole pages of `bytes`, a part of a read-only private file
/// mapping, from memory: touched again, they are read again from the file
/// (the page cache), with the same bytes.
fn release_mapped_pages(bytes: &[u8]) {
    const PAGE: usize = 4096;
    let start = (bytes.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (bytes.as_ptr() as usize + bytes.len()) & !(PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside a private, read-only file mapping
        // (only `read_file` passes this function, with its own map);
        // dropping its pages does not change what reading them gives.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}
