//! Symbolizing whole profiles: choosing a binary for each mapping,
//! resolving each distinct address once, mappings in parallel, and filling
//! the profile's functions and inline chains.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cpuprof_profile::{Function, FunctionId, Line, Mapping, Profile};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::binary::Binary;
use crate::debuginfod::{normalize_build_id, Artifact};
use crate::{demangle, Options, Warning};

/// What [`Symbolizer::choose_binaries`] found: the binary of each mapping,
/// the named binaries as opened, and the warnings.
type Chosen = (
    Vec<Option<Arc<Binary>>>,
    Vec<(PathBuf, Opened)>,
    Vec<Warning>,
);

/// The result of opening a file, cached.
#[derive(Clone)]
enum Opened {
    Binary(Arc<Binary>),
    Failed { not_found: bool, message: String },
}

/// Symbolizes profiles, keeping the binaries it opened for the next call
/// (an interactive shell or web UI symbolizes many profiles of the same
/// program).
pub struct Symbolizer {
    options: Options,
    cache: Mutex<FxHashMap<PathBuf, Opened>>,
    /// Binaries made of files fetched from debuginfod, by what was asked
    /// (`executable ID`, `debuginfo ID PATH`); None when nothing came.
    fetched: Mutex<FxHashMap<String, Option<Arc<Binary>>>>,
}

/// Symbolizes `profile` with a fresh [`Symbolizer`]: see
/// [`Symbolizer::symbolize`].
pub fn symbolize(profile: &mut Profile, options: &Options) -> Vec<Warning> {
    Symbolizer::new(options.clone()).symbolize(profile)
}

/// Addresses of one binary to resolve, and where they come from.
struct Batch {
    binary: Arc<Binary>,
    /// (location index, file address).
    items: Vec<(usize, u64)>,
}

/// What a batch found: its own function table, and the lines of each
/// location with function ids indexing that table.
struct BatchResult {
    functions: Vec<Function>,
    lines: Vec<(usize, Vec<Line>)>,
    errors: usize,
    binary: Arc<Binary>,
}

/// Smallest chunk worth a thread of its own: below this, splitting a
/// binary's addresses costs more (another addr2line context parsing the
/// same units) than it saves.
const MIN_CHUNK: usize = 4096;

impl Symbolizer {
    /// A symbolizer with these options.
    pub fn new(options: Options) -> Symbolizer {
        Symbolizer {
            options,
            cache: Mutex::new(FxHashMap::default()),
            fetched: Mutex::new(FxHashMap::default()),
        }
    }

    /// The options in use.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The binary at `path`, opened once and cached.
    pub fn binary(&self, path: &Path) -> Result<Arc<Binary>, Warning> {
        match self.open(path) {
            Opened::Binary(b) => Ok(b),
            Opened::Failed { message, .. } => Err(Warning::new(message)),
        }
    }

    fn open(&self, path: &Path) -> Opened {
        if let Some(opened) = self.cache.lock().ok().and_then(|c| c.get(path).cloned()) {
            return opened;
        }
        let opened = match Binary::open(path, &self.options) {
            Ok(b) => Opened::Binary(Arc::new(b)),
            Err(e) => Opened::Failed {
                not_found: e.is_not_found(),
                message: e.to_string(),
            },
        };
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(path.to_path_buf(), opened.clone());
        }
        opened
    }

    /// Opens the local files of `files` (path, build id: a perf.data
    /// file's build-id table, a gperftools profile's executable mappings)
    /// that are this build, and reads their DWARF
    /// into the cache: what symbolizing does first, done ahead (on
    /// another thread while the profile is read).
    pub fn preload(&self, files: &[(String, String)]) {
        for (path, id) in files {
            if !is_file_path(path) || crate::special::is_special(path) {
                continue;
            }
            if let Ok(binary) = self.binary(Path::new(path)) {
                if other_build(&binary, id).is_none() {
                    binary.preload();
                }
            }
        }
    }

    /// Fills the functions and inline chains of every location of
    /// `profile` that has none yet, and the mappings' build ids and
    /// `has_*` flags. Locations of a mapping that has function names but
    /// neither file names nor line numbers (profile.proto written from
    /// symbol tables only, as our agent's and `perf`'s converters do) are
    /// resolved again when the mapping's file is here and matches: they
    /// gain lines, inline chains and demangled names, and keep their names
    /// where the file says nothing. Remaining mangled names are demangled
    /// (as Go pprof does). Returns the problems met: one warning per
    /// missing or unusable file, per mismatched binary, per binary with
    /// corrupt DWARF. Addresses that cannot be resolved keep empty lines.
    pub fn symbolize(&self, profile: &mut Profile) -> Vec<Warning> {
        let mut warnings = Vec::new();
        let mapping_count = profile.mappings.len();
        let names_only: Vec<bool> = profile
            .mappings
            .iter()
            .map(|m| m.has_functions && !m.has_filenames && !m.has_line_numbers)
            .collect();
        let mut pending: Vec<Vec<usize>> = vec![Vec::new(); mapping_count];
        // Per mapping: how many of its locations have no name at all.
        let mut unnamed = vec![0usize; mapping_count];
        let mut unmapped = Vec::new();
        for (i, location) in profile.locations.iter().enumerate() {
            let named = !location.lines.is_empty();
            match location.mapping {
                Some(m) if m.index() < mapping_count => {
                    if !named {
                        unnamed[m.index()] += 1;
                        pending[m.index()].push(i);
                    } else if names_only[m.index()] {
                        pending[m.index()].push(i);
                    }
                }
                Some(_) => {}
                None if !named => unmapped.push(i),
                None => {}
            }
        }

        // The kernel and JIT maps have no ELF file: named here.
        crate::special::name_special(profile, &mut pending, &mut warnings);
        for (t, mapping) in profile.mappings.iter().enumerate() {
            if crate::special::is_special(&mapping.path) {
                unnamed[t] = 0;
            }
        }

        let work: Vec<usize> = pending.iter().map(Vec::len).collect();
        let (sources, named, chosen_warnings) =
            self.choose_binaries_for(profile, &work, &unnamed, !unmapped.is_empty(), true);
        warnings.extend(chosen_warnings);

        // Batches: the addresses of each binary, as file addresses.
        let mut batches: Vec<Batch> = Vec::new();
        let mut batch_of: FxHashMap<*const Binary, usize> = FxHashMap::default();
        let mut add = |binary: &Arc<Binary>, item: (usize, u64)| {
            let i = *batch_of.entry(Arc::as_ptr(binary)).or_insert_with(|| {
                batches.push(Batch {
                    binary: binary.clone(),
                    items: Vec::new(),
                });
                batches.len() - 1
            });
            batches[i].items.push(item);
        };
        for (t, source) in sources.iter().enumerate() {
            let Some(binary) = source else { continue };
            let mapping = &profile.mappings[t];
            for &loc in &pending[t] {
                let address = profile.locations[loc].address;
                if let Some(file_address) = binary.runtime_to_file(mapping, address) {
                    add(binary, (loc, file_address));
                }
            }
        }
        let no_file_mappings = profile.mappings.iter().all(|m| !is_file_path(&m.path));
        if let ([(_, Opened::Binary(binary))], true) = (named.as_slice(), no_file_mappings) {
            // gmon.out and DCPI record link-time addresses and no mappings.
            // (With mapped files, an address outside them is JIT code or
            // garbage, not a link-time address.)
            let fetched = (!unmapped.is_empty() && !binary.has_debug_info())
                .then(|| self.with_fetched_debuginfo(binary, &Mapping::default(), true))
                .flatten();
            let binary = fetched.as_ref().unwrap_or(binary);
            for &loc in &unmapped {
                add(binary, (loc, profile.locations[loc].address));
            }
        }

        let results = resolve_batches(batches, self.options.demangle);

        // Merge each batch's functions into the profile, interned: by hash,
        // comparing with the profile's own copy on a hit, so that no
        // function is cloned.
        let mut index: FxHashMap<u64, FunctionId> = FxHashMap::default();
        let mut collisions: Vec<(u64, FunctionId)> = Vec::new();
        for (i, f) in profile.functions.iter().enumerate() {
            let id = FunctionId::from_index(i);
            if index.insert(hash_function(f), id).is_some() {
                collisions.push((hash_function(f), id));
            }
        }
        // Per binary: its warnings once, and the corrupt-DWARF count of
        // all its chunks.
        let mut used: Vec<(Arc<Binary>, usize)> = Vec::new();
        for result in results {
            let ids: Vec<FunctionId> = result
                .functions
                .into_iter()
                .map(|f| {
                    let hash = hash_function(&f);
                    let same = |id: &FunctionId| profile.functions[id.index()] == f;
                    if let Some(id) = index.get(&hash).filter(|id| same(id)) {
                        return *id;
                    }
                    if let Some((_, id)) = collisions.iter().find(|(h, id)| *h == hash && same(id))
                    {
                        return *id;
                    }
                    let id = FunctionId::from_index(profile.functions.len());
                    profile.functions.push(f);
                    if index.insert(hash, id).is_some() {
                        collisions.push((hash, id));
                    }
                    id
                })
                .collect();
            for (loc, mut lines) in result.lines {
                for line in &mut lines {
                    line.function = ids[line.function.index()];
                }
                profile.locations[loc].lines = lines;
            }
            match used
                .iter_mut()
                .find(|(b, _)| Arc::ptr_eq(b, &result.binary))
            {
                Some((_, errors)) => *errors += result.errors,
                None => used.push((result.binary, result.errors)),
            }
        }
        for (binary, errors) in used {
            warnings.extend(binary.warnings());
            if errors > 0 {
                warnings.push(Warning::new(format!(
                    "{}: corrupt DWARF met at {errors} address{}; they keep only symbol names",
                    binary.path().display(),
                    if errors == 1 { "" } else { "es" }
                )));
            }
        }

        // What each symbolized mapping now has.
        for (t, source) in sources.iter().enumerate() {
            let Some(binary) = source else { continue };
            let mapping = &mut profile.mappings[t];
            if mapping.build_id.is_empty() {
                if let Some(id) = binary.build_id() {
                    mapping.build_id = id;
                }
            }
            for &loc in &pending[t] {
                let lines = &profile.locations[loc].lines;
                if lines.is_empty() {
                    continue;
                }
                mapping.has_functions = true;
                mapping.has_inline_frames |= lines.len() > 1;
                for line in lines {
                    mapping.has_line_numbers |= line.line > 0;
                    mapping.has_filenames |=
                        !profile.functions[line.function.index()].filename.is_empty();
                }
            }
        }
        if self.options.demangle {
            demangle_recorded_names(profile);
        }
        if let Some(client) = &self.options.debuginfod {
            warnings.extend(client.take_warning());
        }
        warnings
    }

    /// The binary to read for each mapping of `profile` (None where there
    /// is none): a binary named in the options with the mapping's path,
    /// build id or file name, else (the main executable) the first named
    /// one, else the mapped file itself, else this process's vDSO for a
    /// `[vdso]` mapping of its size; never one whose build id or segments
    /// do not match the mapping. What [`Symbolizer::symbolize`] reads, for
    /// outputs that read the binaries themselves (listings, disassembly,
    /// link-time addresses).
    pub fn binaries_for(&self, profile: &Profile) -> Vec<Option<Arc<Binary>>> {
        let work = vec![1; profile.mappings.len()];
        self.choose_binaries(profile, &work, false, false).0
    }

    /// [`Symbolizer::binaries_for`] for the mappings with `work` (how many
    /// addresses each has to resolve),
    /// with the named binaries as opened and the warnings: named binaries
    /// that cannot be used or match no mapping (unless `has_unmapped`
    /// addresses may be theirs), mismatched or missing mapped files. Files
    /// are asked of debuginfod when `fetch`; else only those fetched
    /// before are used.
    fn choose_binaries(
        &self,
        profile: &Profile,
        work: &[usize],
        has_unmapped: bool,
        fetch: bool,
    ) -> Chosen {
        self.choose_binaries_for(profile, work, work, has_unmapped, fetch)
    }

    /// [`Symbolizer::choose_binaries`], where a missing file is worth a
    /// warning only for the mappings with `unnamed` addresses (the others'
    /// locations already have names from the profile).
    fn choose_binaries_for(
        &self,
        profile: &Profile,
        work: &[usize],
        unnamed: &[usize],
        has_unmapped: bool,
        fetch: bool,
    ) -> Chosen {
        // The binaries named by the user.
        let named: Vec<(PathBuf, Opened)> = self
            .options
            .binaries
            .par_iter()
            .map(|path| (path.clone(), self.open(path)))
            .collect();
        let mut sources: Vec<Option<Arc<Binary>>> = vec![None; profile.mappings.len()];
        let main_path = profile
            .mappings
            .iter()
            .find(|m| is_file_path(&m.path) && m.is_executable())
            .map(|m| m.path.clone());
        let mut warnings = Vec::new();
        let mut mismatch_reported: Vec<(PathBuf, String)> = Vec::new();
        for (path, opened) in &named {
            let binary = match opened {
                Opened::Binary(b) => b,
                Opened::Failed { message, .. } => {
                    warnings.push(Warning::new(format!("cannot use binary {message}")));
                    continue;
                }
            };
            let targets = self.targets(profile, path, binary, main_path.as_deref(), &sources);
            if targets.is_empty() {
                let serves_unmapped = named.len() == 1
                    && has_unmapped
                    && profile.mappings.iter().all(|m| !is_file_path(&m.path));
                if !serves_unmapped && !profile.mappings.is_empty() {
                    warnings.push(Warning::new(format!(
                        "{}: matches no mapping of the profile; not used",
                        path.display()
                    )));
                }
                continue;
            }
            for t in targets {
                let mapping = &profile.mappings[t];
                match mismatch(binary, mapping) {
                    None => sources[t] = Some(binary.clone()),
                    Some(why) => {
                        let key = (path.clone(), mapping.path.clone());
                        let same_file = std::fs::canonicalize(path).ok().is_some_and(|named| {
                            std::fs::canonicalize(&mapping.path).ok() == Some(named)
                        });
                        if same_file {
                            // The mapped file itself, checked below: one
                            // line about it, not one for each way it came.
                            continue;
                        }
                        if !mismatch_reported.contains(&key) {
                            warnings.push(Warning::new(format!(
                                "{}: does not match the profile's mapping of {} ({why}); not used for it",
                                path.display(),
                                display_path(&mapping.path)
                            )));
                            mismatch_reported.push(key);
                        }
                    }
                }
            }
        }

        // The mapped files themselves, for the other mappings with work.
        let mut wanted: Vec<&str> = Vec::new();
        for (t, mapping) in profile.mappings.iter().enumerate() {
            if sources[t].is_none() && work[t] > 0 && is_file_path(&mapping.path) {
                wanted.push(&mapping.path);
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        let opened: FxHashMap<String, Opened> = wanted
            .par_iter()
            .map(|&p| (p.to_string(), self.open(Path::new(p))))
            .collect();
        let mut failure_reported: Vec<&str> = Vec::new();
        for (t, mapping) in profile.mappings.iter().enumerate() {
            if sources[t].is_some() || work[t] == 0 {
                continue;
            }
            let Some(opened) = opened.get(&mapping.path) else {
                continue;
            };
            match opened {
                Opened::Binary(binary) => match mismatch(binary, mapping) {
                    None => sources[t] = Some(binary.clone()),
                    Some(why) => {
                        // Never the names of another build: the server's
                        // file, else addresses.
                        sources[t] = self.fetch_binary(mapping, fetch);
                        if !failure_reported.contains(&mapping.path.as_str()) {
                            let consequence = if sources[t].is_some() {
                                "using the debuginfod server's copy"
                            } else {
                                "not using it"
                            };
                            let message = match binary.build_id() {
                                Some(id)
                                    if !mapping.build_id.is_empty()
                                        && !mapping.build_id.eq_ignore_ascii_case(&id) =>
                                {
                                    format!(
                                        "{}: build id {} in the profile, {id} on disk; {consequence}",
                                        mapping.path,
                                        mapping.build_id.to_ascii_lowercase()
                                    )
                                }
                                _ => format!(
                                    "{}: the file on disk does not match the profile's mapping ({why}); {}",
                                    mapping.path,
                                    if sources[t].is_some() {
                                        consequence
                                    } else {
                                        "its addresses stay unsymbolized"
                                    }
                                ),
                            };
                            warnings.push(Warning::new(message));
                            failure_reported.push(&mapping.path);
                        }
                    }
                },
                Opened::Failed { not_found, message } => {
                    if let Some(binary) = self.fetch_binary(mapping, fetch) {
                        sources[t] = Some(binary);
                        continue;
                    }
                    let count: usize = profile
                        .mappings
                        .iter()
                        .enumerate()
                        .filter(|(_, m)| m.path == mapping.path)
                        .map(|(i, _)| unnamed[i])
                        .sum();
                    if count > 0 && !failure_reported.contains(&mapping.path.as_str()) {
                        let what = if *not_found {
                            format!("{}: not found", mapping.path)
                        } else {
                            message.clone()
                        };
                        warnings.push(Warning::new(format!(
                            "{what}; its {count} address{} stay unsymbolized",
                            if count == 1 { "" } else { "es" }
                        )));
                        failure_reported.push(&mapping.path);
                    }
                }
            }
        }

        // Files without debug information: their debug file from
        // debuginfod, by the mapping's build id (or the file's).
        if self.options.debuginfod.is_some() {
            for (t, mapping) in profile.mappings.iter().enumerate() {
                let Some(binary) = &sources[t] else { continue };
                if work[t] == 0 || binary.has_debug_info() || !is_file_path(&mapping.path) {
                    continue;
                }
                if let Some(better) = self.with_fetched_debuginfo(binary, mapping, fetch) {
                    sources[t] = Some(better);
                }
            }
        }

        // The vDSO has no file: this process's names a profile recorded
        // on this machine (same kernel, same image size).
        for (t, mapping) in profile.mappings.iter().enumerate() {
            if sources[t].is_none() && work[t] > 0 {
                sources[t] = crate::vdso::for_mapping(mapping, &self.options);
            }
        }

        (sources, named, warnings)
    }

    /// A binary from debuginfod for `mapping`, by its build id: the
    /// executable (with its debug file when it has no DWARF), else the
    /// debug file alone; only one that can serve the mapping. Fetched at
    /// most once per build id; without `fetch`, only what was fetched.
    fn fetch_binary(&self, mapping: &Mapping, fetch: bool) -> Option<Arc<Binary>> {
        let client = self.options.debuginfod.as_ref()?;
        let id = normalize_build_id(&mapping.build_id)?;
        let binary = self.fetched_once(format!("executable {id}"), fetch, || {
            match client.fetch(&id, Artifact::Executable) {
                Some(executable) => match Binary::open(&executable, &self.options) {
                    Ok(b) if b.has_debug_info() => Some(Arc::new(b)),
                    Ok(b) => {
                        let with_debug = client.fetch(&id, Artifact::Debuginfo).and_then(|debug| {
                            Binary::open_with_debug_file(&executable, &debug, &self.options).ok()
                        });
                        Some(Arc::new(with_debug.unwrap_or(b)))
                    }
                    Err(_) => None,
                },
                None => client
                    .fetch(&id, Artifact::Debuginfo)
                    .and_then(|debug| Binary::open(&debug, &self.options).ok())
                    .map(Arc::new),
            }
        });
        binary.filter(|b| mismatch(b, mapping).is_none())
    }

    /// What was fetched for `key` before; else, when `fetch`, what `make`
    /// fetches, kept for `key` (None included: asked once).
    fn fetched_once(
        &self,
        key: String,
        fetch: bool,
        make: impl FnOnce() -> Option<Arc<Binary>>,
    ) -> Option<Arc<Binary>> {
        let cached = self.fetched.lock().ok()?.get(&key).cloned();
        match cached {
            Some(binary) => binary,
            None if !fetch => None,
            None => {
                let binary = make();
                if let Ok(mut fetched) = self.fetched.lock() {
                    fetched.insert(key, binary.clone());
                }
                binary
            }
        }
    }

    /// `binary` (without DWARF) with its debug file from debuginfod, by
    /// the mapping's build id or else the file's.
    fn with_fetched_debuginfo(
        &self,
        binary: &Arc<Binary>,
        mapping: &Mapping,
        fetch: bool,
    ) -> Option<Arc<Binary>> {
        let client = self.options.debuginfod.as_ref()?;
        let id = if mapping.build_id.is_empty() {
            binary.build_id()?
        } else {
            mapping.build_id.clone()
        };
        let id = normalize_build_id(&id)?;
        let key = format!("debuginfo {id} {}", binary.path().display());
        self.fetched_once(key, fetch, || {
            client
                .fetch(&id, Artifact::Debuginfo)
                .and_then(|debug| {
                    Binary::open_with_debug_file(binary.path(), &debug, &self.options).ok()
                })
                .filter(Binary::has_debug_info)
                .map(Arc::new)
        })
    }

    /// The mappings `binary` (named by the user as `path`) serves: those
    /// with the same path, else the same build id, else the same file
    /// name, else the main executable's.
    fn targets(
        &self,
        profile: &Profile,
        path: &Path,
        binary: &Binary,
        main_path: Option<&str>,
        sources: &[Option<Arc<Binary>>],
    ) -> Vec<usize> {
        let free = |i: &usize| sources[*i].is_none();
        let canonical = std::fs::canonicalize(path).ok();
        let by_path: Vec<usize> = (0..profile.mappings.len())
            .filter(free)
            .filter(|&i| {
                let m = &profile.mappings[i];
                is_file_path(&m.path)
                    && (Path::new(&m.path) == path
                        || canonical.is_some() && std::fs::canonicalize(&m.path).ok() == canonical)
            })
            .collect();
        if !by_path.is_empty() {
            return by_path;
        }
        if let Some(id) = binary.build_id() {
            let by_id: Vec<usize> = (0..profile.mappings.len())
                .filter(free)
                .filter(|&i| profile.mappings[i].build_id.eq_ignore_ascii_case(&id))
                .collect();
            if !by_id.is_empty() {
                return by_id;
            }
        }
        if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            let by_name: Vec<usize> = (0..profile.mappings.len())
                .filter(free)
                .filter(|&i| is_file_path(&profile.mappings[i].path))
                .filter(|&i| profile.mappings[i].base_name() == name)
                .collect();
            if !by_name.is_empty() {
                return by_name;
            }
        }
        match main_path {
            Some(main) => (0..profile.mappings.len())
                .filter(free)
                .filter(|&i| profile.mappings[i].path == main)
                .collect(),
            None => Vec::new(),
        }
    }
}

fn hash_function(f: &Function) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(f)
}

/// Why `binary` is not the build `build_id` names (none when either has
/// no build id).
fn other_build(binary: &Binary, build_id: &str) -> Option<String> {
    let id = binary.build_id()?;
    (!build_id.is_empty() && !build_id.eq_ignore_ascii_case(&id))
        .then(|| format!("build id {id}, the mapping's is {build_id}"))
}

/// Why `binary` cannot serve `mapping`, if it cannot.
fn mismatch(binary: &Binary, mapping: &Mapping) -> Option<String> {
    if let Some(why) = other_build(binary, &mapping.build_id) {
        return Some(why);
    }
    if mapping.build_id.is_empty() && is_file_path(&mapping.path) {
        if let Some(why) = binary.segment_misfit(mapping) {
            return Some(format!("another build: {why}"));
        }
    }
    if !binary.can_map(mapping) {
        return Some(format!(
            "no {}segment at file offset {:#x}",
            if mapping.is_executable() && !mapping.perms.is_empty() {
                "executable "
            } else {
                ""
            },
            mapping.offset
        ));
    }
    None
}

/// Demangles the names a profile recorded mangled (profile.proto written
/// from symbol tables): `name` becomes the demangled name, `system_name`
/// keeps the symbol.
fn demangle_recorded_names(profile: &mut Profile) {
    for function in &mut profile.functions {
        if !(function.name.starts_with("_Z") || function.name.starts_with("_R")) {
            continue;
        }
        let demangled = crate::demangle::demangle(&function.name);
        if demangled != function.name {
            if function.system_name.is_empty() {
                function.system_name = std::mem::take(&mut function.name);
            }
            function.name = demangled;
        }
    }
}

/// True for mappings of real files, as opposed to `[vdso]`, `[heap]`,
/// anonymous memory and other pseudo paths.
fn is_file_path(path: &str) -> bool {
    !(path.is_empty()
        || path.starts_with('[')
        || path.starts_with("//anon")
        || path.starts_with("anon_inode:")
        || path.starts_with("/dev/")
        || path.starts_with("/memfd:")
        || path.starts_with("/SYSV"))
}

fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "anonymous memory"
    } else {
        path
    }
}

/// Resolves every batch, in parallel: each binary's addresses sorted and
/// split into chunks, each chunk with its own addr2line context.
fn resolve_batches(batches: Vec<Batch>, demangle: bool) -> Vec<BatchResult> {
    // Load every binary's DWARF first, all in parallel: a chunk's lookups
    // would otherwise wait for its binary's decompression on one thread.
    batches.par_iter().for_each(|batch| batch.binary.preload());
    let threads = rayon::current_num_threads().max(1);
    // Splitting a binary's addresses over several addr2line contexts costs
    // CPU and memory: units whose code lies in both halves (gcc's
    // `.text.unlikely` parts) are parsed twice. Measured on 48,649
    // addresses over libc, libstdc++ and a test program: +15-30% CPU and
    // +33 MB. So split only when there are fewer binaries than threads, to
    // keep every thread busy.
    let split = batches.len() < threads;
    let mut chunks: Vec<Batch> = Vec::new();
    for mut batch in batches {
        batch
            .items
            .sort_unstable_by_key(|&(loc, address)| (address, loc));
        let pieces = if split {
            (batch.items.len() / MIN_CHUNK).clamp(1, threads)
        } else {
            1
        };
        let per_piece = batch.items.len().div_ceil(pieces);
        let mut items = batch.items;
        while items.len() > per_piece {
            // Keep equal addresses in one chunk.
            let mut cut = per_piece;
            while cut < items.len() && items[cut].1 == items[cut - 1].1 {
                cut += 1;
            }
            let rest = items.split_off(cut);
            chunks.push(Batch {
                binary: batch.binary.clone(),
                items,
            });
            items = rest;
        }
        if !items.is_empty() {
            chunks.push(Batch {
                binary: batch.binary,
                items,
            });
        }
    }
    // Biggest first, so that the longest chunk does not start last.
    chunks.sort_by_key(|chunk| std::cmp::Reverse(chunk.items.len()));
    chunks
        .into_par_iter()
        .map(|chunk| resolve_chunk(chunk.binary, &chunk.items, demangle))
        .collect()
}

/// Interning tables of one chunk.
#[derive(Default)]
struct Tables {
    /// Raw name → (index into `functions` keyed further by file and start).
    names: FxHashMap<String, u32>,
    /// Demangled display name of each interned raw name.
    display: Vec<String>,
    raw: Vec<String>,
    files: FxHashMap<String, u32>,
    file_names: Vec<String>,
    function_index: FxHashMap<(u32, u32, u32), u32>,
    functions: Vec<Function>,
    /// Function ids by the addresses and lengths of the name and file
    /// strings (stable while the resolver lives), so that most frames are
    /// interned without hashing long strings.
    by_pointer: FxHashMap<(usize, usize, usize, usize, u32), u32>,
}

impl Tables {
    fn function(&mut self, name: &str, file: &str, start_line: u32, demangle: bool) -> u32 {
        let key = (
            name.as_ptr() as usize,
            name.len(),
            file.as_ptr() as usize,
            file.len(),
            start_line,
        );
        if let Some(&id) = self.by_pointer.get(&key) {
            return id;
        }
        let id = self.intern(name, file, start_line, demangle);
        self.by_pointer.insert(key, id);
        id
    }

    fn intern(&mut self, name: &str, file: &str, start_line: u32, demangle: bool) -> u32 {
        let name_id = match self.names.get(name) {
            Some(&id) => id,
            None => {
                let id = self.raw.len() as u32;
                self.raw.push(name.to_string());
                self.display.push(if demangle {
                    demangle::demangle(name)
                } else {
                    name.to_string()
                });
                self.names.insert(name.to_string(), id);
                id
            }
        };
        let file_id = match self.files.get(file) {
            Some(&id) => id,
            None => {
                let id = self.file_names.len() as u32;
                self.file_names.push(file.to_string());
                self.files.insert(file.to_string(), id);
                id
            }
        };
        let key = (name_id, file_id, start_line);
        if let Some(&id) = self.function_index.get(&key) {
            return id;
        }
        let id = self.functions.len() as u32;
        self.functions.push(Function {
            name: self.display[name_id as usize].clone(),
            system_name: self.raw[name_id as usize].clone(),
            filename: self.file_names[file_id as usize].clone(),
            start_line: i64::from(start_line),
        });
        self.function_index.insert(key, id);
        id
    }
}

fn resolve_chunk(binary: Arc<Binary>, items: &[(usize, u64)], demangle: bool) -> BatchResult {
    let mut tables = Tables::default();
    let mut out: Vec<(usize, Vec<Line>)> = Vec::with_capacity(items.len());
    let errors;
    {
        let mut resolver = binary.resolver();
        // Equal file addresses are adjacent (sorted): resolve once.
        let mut previous: Option<(u64, Option<usize>)> = None;
        for &(loc, file_address) in items {
            if let Some((address, resolved)) = previous {
                if address == file_address {
                    if let Some(i) = resolved {
                        let lines = out[i].1.clone();
                        out.push((loc, lines));
                    }
                    continue;
                }
            }
            let mut lines = Vec::new();
            resolver.resolve(file_address, &mut |frame| {
                let name = frame.name.unwrap_or("??");
                let id =
                    tables.function(name, frame.file.unwrap_or(""), frame.start_line, demangle);
                lines.push(Line {
                    function: FunctionId(id),
                    line: i64::from(frame.line),
                    column: i64::from(frame.column),
                });
            });
            let resolved = if lines.is_empty() {
                None
            } else {
                out.push((loc, lines));
                Some(out.len() - 1)
            };
            previous = Some((file_address, resolved));
        }
        errors = resolver.errors;
    }
    BatchResult {
        functions: tables.functions,
        lines: out,
        errors,
        binary,
    }
}
