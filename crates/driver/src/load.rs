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
    /// The warnings printed so far: each is printed once per run, however
    /// many profiles (a base, several inputs) meet the same file.
    warned: std::sync::Mutex<Vec<String>>,
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
            warned: std::sync::Mutex::new(Vec::new()),
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
        self.finish(format, profile, Some(path))
    }

    /// Prints `warning` on stderr unless it was printed before in this run.
    pub fn warn(&self, warning: &str) {
        if let Ok(mut warned) = self.warned.lock() {
            if warned.iter().any(|w| w == warning) {
                return;
            }
            warned.push(warning.to_string());
        }
        eprintln!("cpuprof: warning: {warning}");
    }

    /// Resolves DCPI offsets and symbolizes a profile just read (from the
    /// file `written`, when it is one).
    fn finish(
        &self,
        format: Format,
        mut profile: Profile,
        written: Option<&Path>,
    ) -> Result<Profile> {
        if format == Format::Dcpi {
            executable::resolve_dcpi_offsets(&mut profile, &self.binaries);
        }
        if self.symbolize {
            if let Some(written) = written {
                self.warn_newer_files(&profile, written);
            }
            for warning in self.symbolizer.symbolize(&mut profile) {
                self.warn(&warning.to_string());
            }
        }
        // The allocator's frames of a heap profile, the lock's of a
        // contention profile, as pprof removes them once symbolized.
        cpuprof_profile::prune::remove_uninteresting(&mut profile)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(profile)
    }

    /// Warns once per file when a file that names this profile's samples
    /// is newer than the profile and nothing can say it is the same build:
    /// the mapping has no build id (gperftools profiles) and the file's
    /// code segments fit the profile's map (else the symbolizer refuses
    /// it). A program rebuilt since the profile was written would name its
    /// samples after other functions.
    fn warn_newer_files(&self, profile: &Profile, written: &Path) {
        let Some(profile_time) = std::fs::metadata(written).and_then(|m| m.modified()).ok() else {
            return;
        };
        let mut sampled = vec![false; profile.mappings.len()];
        for location in &profile.locations {
            if let Some(m) = location.mapping {
                sampled[m.index()] = true;
            }
        }
        let binaries = self.symbolizer.binaries_for(profile);
        for (i, binary) in binaries.iter().enumerate() {
            let Some(binary) = binary else { continue };
            if !sampled[i] || !profile.mappings[i].build_id.is_empty() {
                continue;
            }
            let Some(file_time) = std::fs::metadata(binary.path())
                .and_then(|m| m.modified())
                .ok()
            else {
                continue;
            };
            if let Ok(after) = file_time.duration_since(profile_time) {
                if after.as_secs_f64() < 1.0 {
                    continue;
                }
                self.warn(&format!(
                    "{}: modified {} after the profile {} was written, which records no build id: if it was rebuilt since, the names of its samples are wrong (profile again, or give the build that ran)",
                    binary.path().display(),
                    age(after.as_secs()),
                    written.display()
                ));
            }
        }
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
        let format = cpuprof_profile::detect_format_with(data, &options);
        if format == Some(Format::PerfData) {
            // Its kernel frames are named from /proc/kallsyms once it is
            // read: read that meanwhile.
            cpuprof_symbolize::prefetch_kernel_symbols();
        }
        if format == Some(Format::Gmon) {
            // gmon.out needs the executable's segments and gprof's symbols.
            let full = executable::read_options_for(self.binaries.first().map(PathBuf::as_path));
            options.gmon_symbol_starts = full.gmon_symbol_starts;
            options.executable_mappings = full.executable_mappings;
        }
        // The files a perf.data file's samples hit are listed in its
        // header, a gperftools profile's mappings at its end: their debug
        // information (often compressed) is read on another thread while
        // the samples are, ready for the symbolizer.
        let files = match format {
            _ if !self.symbolize => Vec::new(),
            Some(Format::PerfData) => cpuprof_profile::perf::build_id_table(data),
            Some(Format::Gperftools) => cpuprof_profile::gperftools::mapped_files(data),
            _ => Vec::new(),
        };
        let profile = if !files.is_empty() {
            std::thread::scope(|scope| {
                scope.spawn(|| self.symbolizer.preload(&files));
                cpuprof_profile::read_profile(data, &options)
            })
        } else {
            cpuprof_profile::read_profile(data, &options)
        }
        .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        if profile.0 == Format::Gperftools {
            if let Some(at) = cpuprof_profile::gperftools::truncated_maps_at(data) {
                self.warn(&format!(
                    "{name}: gperftools CPU profile: offset {at}: the list of mapped objects is truncated (the file ends inside a line): the objects missing from it stay unsymbolized"
                ));
            }
        }
        Ok(profile)
    }

    /// Reads (and symbolizes) a profile fetched from `name` (a URL).
    pub fn load_data(&self, name: &str, data: &[u8]) -> Result<Profile> {
        let (format, profile) = self.read_data(name, data, None)?;
        self.finish(format, profile, None)
    }
}

/// `seconds` as a person says it: `12 s`, `5 min`, `3 h`, `2 days`.
fn age(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7199 => format!("{} min", seconds / 60),
        7200..=172_799 => format!("{} h", seconds / 3600),
        _ => format!("{} days", seconds / 86400),
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
