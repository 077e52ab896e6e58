//! One ELF file, with its separate debug information: segments, symbols,
//! DWARF inline chains, code bytes and line tables.

use std::borrow::Cow;
use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use cpuprof_profile::Mapping;
use memmap2::Mmap;
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable};
use rustc_hash::FxHashMap;

use crate::debugfile::{find_alt_file, find_debug_file, has_dwarf, hex, open_debug_file};
use crate::{demangle, Error, Options, Warning};

/// The bytes of a file: memory-mapped, or owned (files parsed from memory).
pub(crate) enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Maps the file at `path` read-only.
pub(crate) fn map_file(path: &Path) -> std::io::Result<Bytes> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(Bytes::Owned(Vec::new()));
    }
    // SAFETY: the mapping is read-only and private. As with every tool
    // that maps binaries (gdb, addr2line), a file truncated by another
    // process while mapped would fault; profiles are analysed after the
    // fact, when their binaries are no longer being rebuilt.
    let map = unsafe { Mmap::map(&file)? };
    Ok(Bytes::Mapped(map))
}

/// What kind of ELF file a [`Binary`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fixed-address executable (`ET_EXEC`, linked with `-no-pie`).
    Executable,
    /// A position-independent executable (`ET_DYN` with `DF_1_PIE`, or with
    /// an interpreter and no soname).
    PositionIndependentExecutable,
    /// A shared library (`ET_DYN`).
    SharedLibrary,
    /// A relocatable object file (`ET_REL`).
    Relocatable,
    /// A core dump.
    Core,
    /// Anything else.
    Other,
}

/// A `PT_LOAD` segment: where a range of the file is placed in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// `p_offset`: where the segment starts in the file.
    pub file_offset: u64,
    /// `p_filesz`: its size in the file.
    pub file_size: u64,
    /// `p_vaddr`: its link-time address.
    pub address: u64,
    /// `p_memsz`: its size in memory.
    pub memory_size: u64,
    /// `PF_X` is set.
    pub executable: bool,
}

/// A function symbol from `.symtab` or `.dynsym`.
#[derive(Debug)]
pub struct Symbol {
    /// Its link-time address.
    pub address: u64,
    /// `st_size` (0 for symbols without a size, which then extend to the
    /// next symbol or the end of their section).
    pub size: u64,
    name: String,
    demangled: OnceLock<String>,
}

impl Symbol {
    /// The name as in the symbol table (mangled).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The demangled name, computed on first use.
    pub fn demangled(&self) -> &str {
        self.demangled
            .get_or_init(|| demangle::demangle(&self.name))
    }
}

/// One frame of an address's inline chain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The function's name: demangled (when the options say so), in full,
    /// with arguments; `??` for an inlined frame whose name DWARF lacks.
    pub function: String,
    /// The name as in the symbol table or DWARF linkage name (mangled).
    pub system_name: String,
    /// The source file, as DWARF records it (directory joined); empty if
    /// unknown.
    pub file: String,
    /// The line, 0 if unknown.
    pub line: u32,
    /// The column, 0 if unknown.
    pub column: u32,
    /// The function's first line (`DW_AT_decl_line`), 0 if unknown.
    pub start_line: u32,
}

/// An executable section's place in the file, for [`Binary::code`].
#[derive(Clone, Copy, Debug)]
struct CodeSection {
    address: u64,
    size: u64,
    file_offset: u64,
}

type Reader = gimli::EndianSlice<'static, gimli::RunTimeEndian>;

/// DWARF sections loaded (and decompressed) once per binary, with a pool of
/// addr2line contexts over them so that several threads can look up
/// addresses of one binary at once.
struct DwarfState {
    sections: Arc<gimli::Dwarf<Reader>>,
    contexts: Mutex<Vec<addr2line::Context<Reader>>>,
    /// Decompressed section data the `Reader`s point into. Declared after
    /// the fields that borrow from it so that it is dropped after them.
    _buffers: Vec<Vec<u8>>,
}

/// One ELF file (and its separate debug file), opened via mmap; reusable
/// and shareable between threads.
pub struct Binary {
    path: PathBuf,
    debug_path: Option<PathBuf>,
    alt_path: Option<PathBuf>,
    kind: Kind,
    entry: u64,
    build_id: Option<String>,
    segments: Vec<Segment>,
    symbols: Vec<Symbol>,
    /// One past the last address each symbol covers.
    symbol_ends: Vec<u64>,
    /// `max(symbol_ends[..=i])`, to stop the backward search early.
    symbol_max_ends: Vec<u64>,
    /// The other names of kept symbols (aliases at the same address), each
    /// with the index of the kept (most public) symbol.
    aliases: FxHashMap<String, usize>,
    /// The functions `.eh_frame` describes, read on first use: names for
    /// code no symbol covers.
    unwind_functions: OnceLock<UnwindFunctions>,
    code_sections: Vec<CodeSection>,
    options_demangle: bool,
    options_inlines: bool,
    warnings: Mutex<Vec<Warning>>,
    /// Which of `data`/`debug_data` holds the DWARF, if any.
    dwarf_source: Option<DwarfSource>,
    dwarf: OnceLock<Option<DwarfState>>,
    // The file contents come last: `dwarf` borrows from them and must be
    // dropped first (fields drop in declaration order).
    alt_data: Option<Bytes>,
    debug_data: Option<Bytes>,
    data: Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DwarfSource {
    Main,
    DebugFile,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Binary>();
};

/// Upper bound on a compressed section's declared size relative to its
/// compressed size; zlib cannot exceed about 1032:1. Larger claims are
/// corrupt and would only make us allocate absurd amounts.
const MAX_COMPRESSION_RATIO: u64 = 1100;

impl Binary {
    /// Opens the ELF file at `path` and finds its separate debug file
    /// (through `options.debug_dirs`).
    pub fn open(path: &Path, options: &Options) -> Result<Binary, Error> {
        let data = map_file(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Binary::from_bytes(path, data, options, None)
    }

    /// Opens the ELF file at `path` with `debug_file` as its separate
    /// debug file (one fetched from a debuginfod server), when the file has
    /// no DWARF itself and `debug_file` has DWARF and the same build id;
    /// else as [`Binary::open`] does.
    pub fn open_with_debug_file(
        path: &Path,
        debug_file: &Path,
        options: &Options,
    ) -> Result<Binary, Error> {
        let data = map_file(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Binary::from_bytes(path, data, options, Some(debug_file))
    }

    /// Parses an ELF file held in memory; `path` names it in messages and
    /// locates its separate debug file.
    pub fn parse(path: &Path, data: Vec<u8>, options: &Options) -> Result<Binary, Error> {
        Binary::from_bytes(path, Bytes::Owned(data), options, None)
    }

    fn from_bytes(
        path: &Path,
        data: Bytes,
        options: &Options,
        debug_file: Option<&Path>,
    ) -> Result<Binary, Error> {
        let parse_error = |message: String| Error::Parse {
            path: path.to_path_buf(),
            message,
        };
        if data.len() < 4 || &data[..4] != b"\x7fELF" {
            return Err(parse_error(
                "not an ELF file (no \\x7fELF magic at offset 0)".into(),
            ));
        }
        let file = object::File::parse(&*data)
            .map_err(|e| parse_error(format!("corrupt ELF headers: {e}")))?;
        let mut warnings = Vec::new();

        let segments: Vec<Segment> = file
            .segments()
            .map(|segment| {
                let (file_offset, file_size) = segment.file_range();
                let executable = match segment.flags() {
                    object::SegmentFlags::Elf { p_flags, .. } => {
                        p_flags.0 & object::elf::PF_X.0 != 0
                    }
                    _ => false,
                };
                Segment {
                    file_offset,
                    file_size,
                    address: segment.address(),
                    memory_size: segment.size(),
                    executable,
                }
            })
            .collect();

        let kind = match file.kind() {
            object::ObjectKind::Executable => Kind::Executable,
            object::ObjectKind::Dynamic => {
                if is_pie(&file) {
                    Kind::PositionIndependentExecutable
                } else {
                    Kind::SharedLibrary
                }
            }
            object::ObjectKind::Relocatable => Kind::Relocatable,
            object::ObjectKind::Core => Kind::Core,
            _ => Kind::Other,
        };
        let build_id_bytes = file.build_id().ok().flatten().filter(|b| !b.is_empty());
        let build_id = build_id_bytes.map(hex);

        let code_sections = file
            .sections()
            .filter(|s| {
                is_executable_section(s) && s.kind() != object::SectionKind::UninitializedData
            })
            .filter_map(|s| {
                let (offset, size) = s.file_range()?;
                Some(CodeSection {
                    address: s.address(),
                    size: size.min(s.size()),
                    file_offset: offset,
                })
            })
            .collect();

        // Separate debug information, when this file has no DWARF itself.
        let main_has_dwarf = has_dwarf(&file);
        let mut debug = None;
        if !main_has_dwarf {
            debug = debug_file.and_then(|d| open_debug_file(d, path, build_id_bytes));
            if debug.is_none() {
                let debuglink = file.gnu_debuglink().ok().flatten();
                debug = find_debug_file(path, build_id_bytes, debuglink, &options.debug_dirs);
            }
        }
        let debug = debug.filter(|found| match object::File::parse(&*found.data) {
            Ok(_) => true,
            Err(e) => {
                warnings.push(Warning::new(format!(
                    "{}: corrupt debug file: {e}",
                    found.path.display()
                )));
                false
            }
        });
        let debug_file = debug
            .as_ref()
            .and_then(|found| object::File::parse(&*found.data).ok());
        let dwarf_source = if main_has_dwarf {
            Some(DwarfSource::Main)
        } else if debug_file.is_some() {
            Some(DwarfSource::DebugFile)
        } else {
            None
        };

        // dwz's supplementary file, named by the file holding the DWARF.
        let mut alt = None;
        {
            let (dwarf_file, dwarf_path) = match (&debug_file, &debug) {
                (Some(f), Some(found)) => (Some(f), found.path.as_path()),
                _ if main_has_dwarf => (Some(&file), path),
                _ => (None, path),
            };
            if let Some(f) = dwarf_file {
                if let Ok(Some((alt_path, alt_id))) = f.gnu_debugaltlink() {
                    alt = find_alt_file(dwarf_path, alt_path, alt_id, &options.debug_dirs);
                    if alt.is_none() {
                        warnings.push(Warning::new(format!(
                            "{}: supplementary debug file {} (build id {}) not found; names and lines shared through it are missing",
                            dwarf_path.display(),
                            String::from_utf8_lossy(alt_path),
                            hex(alt_id)
                        )));
                    }
                }
            }
        }

        // Symbols: the main file's .symtab, else the debug file's, else
        // .dynsym (as binutils addr2line uses the richest table there is).
        let mut symbols = collect_symbols(&file, file.symbols());
        if symbols.is_empty() {
            if let Some(f) = &debug_file {
                symbols = collect_symbols(f, f.symbols());
            }
        }
        if symbols.is_empty() {
            symbols = collect_symbols(&file, file.dynamic_symbols());
        }
        symbols.extend(plt_symbols(&file));
        let (symbols, symbol_ends, aliases) = finish_symbols(symbols);
        let mut symbol_max_ends = Vec::with_capacity(symbol_ends.len());
        let mut max = 0;
        for &end in &symbol_ends {
            max = max.max(end);
            symbol_max_ends.push(max);
        }
        let entry = file.entry();
        drop(debug_file);
        drop(file);

        let (debug_path, debug_data) = match debug {
            Some(found) => (Some(found.path), Some(found.data)),
            None => (None, None),
        };
        let (alt_path, alt_data) = match alt {
            Some(found) => (Some(found.path), Some(found.data)),
            None => (None, None),
        };
        Ok(Binary {
            path: path.to_path_buf(),
            debug_path,
            alt_path,
            kind,
            entry,
            build_id,
            segments,
            symbols,
            symbol_ends,
            symbol_max_ends,
            aliases,
            unwind_functions: OnceLock::new(),
            code_sections,
            options_demangle: options.demangle,
            options_inlines: options.inlines,
            warnings: Mutex::new(warnings),
            dwarf_source,
            dwarf: OnceLock::new(),
            alt_data,
            debug_data,
            data,
        })
    }

    /// The path the binary was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The separate debug file in use, if any.
    pub fn debug_path(&self) -> Option<&Path> {
        self.debug_path.as_deref()
    }

    /// The dwz supplementary debug file in use, if any.
    pub fn supplementary_path(&self) -> Option<&Path> {
        self.alt_path.as_deref()
    }

    /// True when DWARF (in the file or its debug file) is available.
    pub fn has_debug_info(&self) -> bool {
        self.dwarf_source.is_some()
    }

    /// The GNU build id, lowercase hex.
    pub fn build_id(&self) -> Option<String> {
        self.build_id.clone()
    }

    /// What kind of ELF file this is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// True for position-independent executables.
    pub fn is_pie(&self) -> bool {
        self.kind == Kind::PositionIndependentExecutable
    }

    /// The entry point's link-time address.
    pub fn entry(&self) -> u64 {
        self.entry
    }

    /// The `PT_LOAD` segments, in file order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Function symbols from `.symtab` (the file's or its debug file's),
    /// else `.dynsym`: sorted by address, one per address.
    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The symbol covering `file_address`: the nearest one at or before it
    /// whose size covers it (a symbol without a size extends to the next
    /// symbol or the end of its section).
    pub fn symbol_at(&self, file_address: u64) -> Option<&Symbol> {
        let i = self.symbols.partition_point(|s| s.address <= file_address);
        let mut j = i.checked_sub(1)?;
        loop {
            if file_address < self.symbol_ends[j] {
                return Some(&self.symbols[j]);
            }
            if j == 0 || self.symbol_max_ends[j - 1] <= file_address {
                return None;
            }
            j -= 1;
        }
    }

    /// The public name of a function that `name` is another symbol of
    /// (an alias at the same address: `__GI___snprintf` and `__snprintf`
    /// give `snprintf`); None when `name` is no such alias.
    /// [`Binary::symbols`] keeps the most public name at each address.
    pub fn public_name(&self, name: &str) -> Option<&str> {
        self.aliases.get(name).map(|&i| self.symbols[i].name())
    }

    /// For code no symbol covers: the name of the function containing
    /// `file_address` according to the unwind tables (`.eh_frame` FDEs),
    /// `<file name>+0x<start>` with the function's link-time start address
    /// (`libstdc++.so.6+0xd4490`), so that all its addresses fall into one
    /// node. None when no FDE covers it.
    pub fn unwind_function_name(&self, file_address: u64) -> Option<&str> {
        let table = self.unwind_functions.get_or_init(|| {
            let name = self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            UnwindFunctions::read(&self.data, &name)
        });
        table.find(file_address)
    }

    /// Problems noticed so far (an unusable debug file, corrupt DWARF).
    pub fn warnings(&self) -> Vec<Warning> {
        self.warnings.lock().map(|w| w.clone()).unwrap_or_default()
    }

    fn warn(&self, message: String) {
        if let Ok(mut w) = self.warnings.lock() {
            w.push(Warning::new(message));
        }
    }

    /// The file address of runtime `address` in `mapping` (which maps this
    /// file): the file offset `address - start + offset`, placed through
    /// the `PT_LOAD` segment containing it. None when no segment contains
    /// it.
    pub fn runtime_to_file(&self, mapping: &Mapping, address: u64) -> Option<u64> {
        let offset = address
            .checked_sub(mapping.start)?
            .checked_add(mapping.offset)?;
        let segment = self
            .segments
            .iter()
            .find(|s| s.file_offset <= offset && offset - s.file_offset < s.file_size)?;
        (offset - segment.file_offset).checked_add(segment.address)
    }

    /// The size of the ELF image in bytes.
    pub(crate) fn image_size(&self) -> u64 {
        self.data.len() as u64
    }

    /// The runtime address of `file_address` in `mapping`, if the mapping
    /// covers it.
    pub fn file_to_runtime(&self, mapping: &Mapping, file_address: u64) -> Option<u64> {
        let segment = self
            .segments
            .iter()
            .find(|s| s.address <= file_address && file_address - s.address < s.file_size)?;
        let offset = file_address - segment.address + segment.file_offset;
        let runtime = offset
            .checked_sub(mapping.offset)?
            .checked_add(mapping.start)?;
        mapping.contains(runtime).then_some(runtime)
    }

    /// True when `mapping` can map this file: its file range overlaps a
    /// `PT_LOAD` segment (an executable one when the mapping is
    /// executable).
    pub fn can_map(&self, mapping: &Mapping) -> bool {
        let size = mapping.limit.saturating_sub(mapping.start);
        let (lo, hi) = (mapping.offset, mapping.offset.saturating_add(size));
        self.segments.iter().any(|s| {
            let overlaps = s.file_offset < hi && lo < s.file_offset.saturating_add(s.file_size);
            overlaps && (s.executable || !mapping.is_executable() || mapping.perms.is_empty())
        })
    }

    /// Why `mapping`, a line of `/proc/self/maps` for an executable part of
    /// this file (a profile without build ids: gperftools'), cannot be
    /// this build of the file: the loader maps each executable `PT_LOAD`
    /// segment alone, from its page-aligned file offset, over the pages
    /// its file part spans, so the line's offset and size are those of one
    /// such segment. A rebuilt program whose code grew or moved by a page
    /// no longer fits. None when it fits (or the line says too little:
    /// no permissions, not executable).
    pub fn segment_misfit(&self, mapping: &Mapping) -> Option<String> {
        const PAGE: u64 = 4096;
        let whole_pages = [mapping.start, mapping.limit, mapping.offset]
            .iter()
            .all(|v| v % PAGE == 0);
        // Only a line of a process's map (whole pages, permissions known)
        // says how the loader mapped the file; mappings made up from the
        // file's own segments (gmon.out, DCPI) say nothing new.
        if mapping.perms.len() != 4
            || !mapping.is_executable()
            || mapping.limit <= mapping.start
            || !whole_pages
        {
            return None;
        }
        let size = mapping.limit - mapping.start;
        let down = |v: u64| v & !(PAGE - 1);
        let up = |v: u64| v.saturating_add(PAGE - 1) & !(PAGE - 1);
        let executable: Vec<&Segment> = self.segments.iter().filter(|s| s.executable).collect();
        if executable.is_empty() {
            return None;
        }
        if executable.iter().any(|s| {
            down(s.file_offset) == mapping.offset
                && up(s.address.saturating_add(s.file_size)) - down(s.address) == size
        }) {
            return None;
        }
        let on_disk: Vec<String> = executable
            .iter()
            .map(|s| {
                format!(
                    "{:#x} bytes at file offset {:#x}",
                    up(s.address.saturating_add(s.file_size)) - down(s.address),
                    down(s.file_offset)
                )
            })
            .collect();
        Some(format!(
            "the profile maps {size:#x} bytes of code at file offset {:#x}, the file's code segment{} {} {}",
            mapping.offset,
            if on_disk.len() == 1 { "" } else { "s" },
            if on_disk.len() == 1 { "is" } else { "are" },
            on_disk.join(", ")
        ))
    }

    /// The inline chain at `file_address`, innermost (the inlined callee)
    /// first, outermost (the real function) last. Function names come
    /// from DWARF; the outermost falls back to the symbol table. Empty
    /// when nothing is known.
    pub fn frames(&self, file_address: u64) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut resolver = self.resolver();
        resolver.resolve(file_address, &mut |raw| {
            let system_name = raw.name.unwrap_or("??").to_string();
            let function = if self.options_demangle {
                demangle::demangle(&system_name)
            } else {
                system_name.clone()
            };
            frames.push(Frame {
                function,
                system_name,
                file: raw.file.unwrap_or("").to_string(),
                line: raw.line,
                column: raw.column,
                start_line: raw.start_line,
            });
        });
        frames
    }

    /// `len` bytes of code at `file_address`, from an executable section
    /// of the file; None when the range is not inside one.
    pub fn code(&self, file_address: u64, len: usize) -> Option<&[u8]> {
        let section = self
            .code_sections
            .iter()
            .find(|s| s.address <= file_address && file_address - s.address < s.size)?;
        let within = file_address - section.address;
        if within.checked_add(len as u64)? > section.size {
            return None;
        }
        let start = usize::try_from(section.file_offset.checked_add(within)?).ok()?;
        self.data.get(start..start.checked_add(len)?)
    }

    /// The line table rows in `range`: (address, file, line), sorted by
    /// address, for source listings. Empty without DWARF.
    pub fn line_table(&self, range: Range<u64>) -> Vec<(u64, String, u32)> {
        let mut rows = Vec::new();
        let resolver = self.resolver();
        if let Some(context) = &resolver.context {
            let end = range.end.min(u64::MAX - 1);
            if let Ok(iter) = context.find_location_range(range.start, end) {
                for (address, _size, location) in iter {
                    rows.push((
                        address,
                        location.file.unwrap_or("").to_string(),
                        location.line.unwrap_or(0),
                    ));
                }
            }
        }
        rows.sort_by_key(|r| r.0);
        rows
    }

    /// Loads (and decompresses) the DWARF now rather than at the first
    /// lookup, so that it can be done in parallel with other work.
    pub fn preload(&self) {
        self.dwarf_state();
    }

    fn dwarf_state(&self) -> Option<&DwarfState> {
        self.dwarf.get_or_init(|| self.load_dwarf()).as_ref()
    }

    fn load_dwarf(&self) -> Option<DwarfState> {
        let (bytes, path) = match self.dwarf_source? {
            DwarfSource::Main => (&*self.data, &self.path),
            DwarfSource::DebugFile => (self.debug_data.as_deref()?, self.debug_path.as_ref()?),
        };
        // SAFETY: `bytes` belong to `self.data`/`self.debug_data`, which are
        // never replaced and are dropped after `self.dwarf` (field order),
        // so the 'static slices handed to gimli never outlive them; and no
        // 'static reference escapes this crate (every public accessor
        // copies or borrows from `&self`).
        let bytes: &'static [u8] = unsafe { &*(bytes as *const [u8]) };
        let mut buffers = Vec::new();
        let dwarf = match load_sections(bytes, &mut buffers) {
            Ok(mut dwarf) => {
                if let Some(alt) = &self.alt_data {
                    // SAFETY: as above, for `self.alt_data`.
                    let alt: &'static [u8] = unsafe { &*(&**alt as *const [u8]) };
                    match load_sections(alt, &mut buffers) {
                        Ok(sup) => dwarf.set_sup(sup),
                        Err(e) => self.warn(format!(
                            "{}: corrupt supplementary debug file: {e}",
                            self.alt_path.as_deref().unwrap_or(Path::new("?")).display()
                        )),
                    }
                }
                dwarf
            }
            Err(e) => {
                self.warn(format!("{}: unreadable DWARF: {e}", path.display()));
                return None;
            }
        };
        let sections = Arc::new(dwarf);
        let context = match addr2line::Context::from_arc_dwarf(sections.clone()) {
            Ok(c) => c,
            Err(e) => {
                self.warn(format!("{}: corrupt DWARF: {e}", path.display()));
                return None;
            }
        };
        Some(DwarfState {
            sections,
            contexts: Mutex::new(vec![context]),
            _buffers: buffers,
        })
    }

    /// A resolver holding one addr2line context (from the pool) for a
    /// batch of lookups.
    pub(crate) fn resolver(&self) -> Resolver<'_> {
        let state = self.dwarf_state();
        let context = state.and_then(|state| {
            let pooled = state.contexts.lock().ok().and_then(|mut pool| pool.pop());
            pooled.or_else(|| addr2line::Context::from_arc_dwarf(state.sections.clone()).ok())
        });
        Resolver {
            binary: self,
            state,
            context,
            die_info: FxHashMap::default(),
            errors: 0,
        }
    }
}

/// True for ET_DYN files that are executables: `DF_1_PIE` in the dynamic
/// section, or (for older linkers) an interpreter and no soname.
fn is_pie(file: &object::File<'_>) -> bool {
    let mut has_interp = false;
    if let object::File::Elf64(elf) = file {
        has_interp = elf_has_interp(elf.elf_program_headers(), elf.endian());
    } else if let object::File::Elf32(elf) = file {
        has_interp = elf_has_interp(elf.elf_program_headers(), elf.endian());
    }
    let mut flags_1 = 0u64;
    let mut has_soname = false;
    if let Some(section) = file.section_by_name(".dynamic") {
        if let Ok(data) = section.data() {
            let word = if file.is_64() { 8 } else { 4 };
            let little = file.is_little_endian();
            let read = |b: &[u8]| -> u64 {
                let mut v = 0u64;
                for (i, &byte) in b.iter().enumerate() {
                    if little {
                        v |= (byte as u64) << (8 * i);
                    } else {
                        v = (v << 8) | byte as u64;
                    }
                }
                v
            };
            for entry in data.chunks_exact(word * 2) {
                let tag = read(&entry[..word]);
                let value = read(&entry[word..]);
                match tag {
                    0 => break,
                    t if t == object::elf::DT_SONAME.0 as u64 => has_soname = true,
                    t if t == object::elf::DT_FLAGS_1.0 as u64 => flags_1 = value,
                    _ => {}
                }
            }
        }
    }
    flags_1 & object::elf::DF_1_PIE.0 != 0 || (has_interp && !has_soname)
}

fn elf_has_interp<P: object::read::elf::ProgramHeader>(headers: &[P], endian: P::Endian) -> bool {
    headers
        .iter()
        .any(|h| h.p_type(endian) == object::elf::PT_INTERP)
}

fn is_executable_section(section: &object::Section<'_, '_>) -> bool {
    match section.flags() {
        object::SectionFlags::Elf { sh_flags, .. } => {
            sh_flags.0 & object::elf::SHF_EXECINSTR.0 != 0
        }
        _ => section.kind() == object::SectionKind::Text,
    }
}

/// A symbol table entry kept as a candidate function.
struct Candidate {
    address: u64,
    size: u64,
    name: String,
    /// Lower is preferred at equal addresses.
    rank: (u8, u8, u8, u8, std::cmp::Reverse<u64>, usize),
    section_end: u64,
}

fn collect_symbols<'data, 'file>(
    file: &'file object::File<'data>,
    symbols: impl Iterator<Item = object::Symbol<'data, 'file>>,
) -> Vec<Candidate> {
    // Executable sections by index: (start, end).
    let mut text: FxHashMap<usize, (u64, u64)> = FxHashMap::default();
    for section in file.sections() {
        if is_executable_section(&section) {
            let start = section.address();
            text.insert(
                section.index().0,
                (start, start.saturating_add(section.size())),
            );
        }
    }
    let mut out = Vec::new();
    for (order, symbol) in symbols.enumerate() {
        let (st_type, st_bind, st_visibility) = match symbol.flags() {
            object::SymbolFlags::Elf { st_info, st_other } => {
                (st_info.0 & 0xf, st_info.0 >> 4, st_other.0 & 0x3)
            }
            _ => continue,
        };
        let is_function =
            st_type == object::elf::STT_FUNC.0 || st_type == object::elf::STT_GNU_IFUNC.0;
        let is_notype = st_type == object::elf::STT_NOTYPE.0;
        if !is_function && !is_notype {
            continue;
        }
        let Some(index) = symbol.section_index() else {
            continue;
        };
        let Some(&(section_start, section_end)) = text.get(&index.0) else {
            continue;
        };
        let address = symbol.address();
        if address < section_start || address >= section_end {
            continue;
        }
        let size = symbol.size();
        let local = st_bind == object::elf::STB_LOCAL.0;
        // binutils ignores hidden local untyped zero-size symbols (annobin
        // markers); ARM/AArch64 mapping symbols ($x, $d) are not functions.
        if is_notype && size == 0 && local && st_visibility == object::elf::STV_HIDDEN.0 {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        // `name@@VERSION` is the default version: plain `name` to callers.
        let name = name.split_once("@@").map_or(name, |(base, _)| base);
        if name.is_empty() || name.starts_with('$') || name.starts_with(".L") {
            continue;
        }
        // The public name wins among aliases: exported (global or weak)
        // over local, then fewer leading underscores (`snprintf` over
        // `__snprintf`, `malloc` over `__libc_malloc`), then the default
        // version over a `name@VERSION` one.
        let bind_rank =
            if st_bind == object::elf::STB_GLOBAL.0 || st_bind == object::elf::STB_WEAK.0 {
                0
            } else {
                1
            };
        // The vDSO's functions keep their `__vdso_` names: their public
        // aliases (`clock_gettime`) would merge them with libc's functions.
        let underscores = if name.starts_with("__vdso_") {
            0
        } else {
            1 + name.bytes().take_while(|&b| b == b'_').count().min(9) as u8
        };
        let versioned = u8::from(name.contains('@'));
        out.push(Candidate {
            address,
            size,
            name: name.to_string(),
            // A plain function over an IFUNC symbol at the same address
            // (glibc's `strcmp` names its resolver `strcmp_ifunc`'s code,
            // not the string function) over an untyped one.
            rank: (
                if st_type == object::elf::STT_FUNC.0 {
                    0
                } else if is_function {
                    1
                } else {
                    2
                },
                bind_rank,
                underscores,
                versioned,
                std::cmp::Reverse(size),
                order,
            ),
            section_end,
        });
    }
    out
}

/// Sorts by address, keeps the preferred symbol at each address (typed
/// over untyped, exported over local, fewer leading underscores, default
/// version, larger, first in the table), and computes how far each
/// extends. Also returns every name at the addresses with several.
fn finish_symbols(
    mut candidates: Vec<Candidate>,
) -> (Vec<Symbol>, Vec<u64>, FxHashMap<String, usize>) {
    candidates.sort_unstable_by(|a, b| a.address.cmp(&b.address).then(a.rank.cmp(&b.rank)));
    let mut aliases: FxHashMap<String, usize> = FxHashMap::default();
    let mut kept = 0;
    for i in 1..candidates.len() {
        if candidates[i].address == candidates[i - 1].address {
            if candidates[i].name != candidates[kept].name {
                // Index among the kept symbols, computed below.
                aliases.entry(candidates[i].name.clone()).or_insert(kept);
            }
        } else {
            kept = i;
        }
    }
    // Candidate indexes to kept-symbol indexes.
    let mut index_of_kept: FxHashMap<usize, usize> = FxHashMap::default();
    let mut n = 0;
    for i in 0..candidates.len() {
        if i == 0 || candidates[i].address != candidates[i - 1].address {
            index_of_kept.insert(i, n);
            n += 1;
        }
    }
    for value in aliases.values_mut() {
        *value = index_of_kept[value];
    }
    // A name that some address keeps (a static function of one file) is
    // no alias of another address's symbol (of another file).
    for (i, c) in candidates.iter().enumerate() {
        if index_of_kept.contains_key(&i) {
            aliases.remove(&c.name);
        }
    }
    candidates.dedup_by(|later, first| later.address == first.address);
    let mut ends = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        let end = if c.size > 0 {
            c.address.saturating_add(c.size)
        } else {
            let next = candidates.get(i + 1).map_or(u64::MAX, |n| n.address);
            next.min(c.section_end).max(c.address + 1)
        };
        ends.push(end);
    }
    let symbols = candidates
        .into_iter()
        .map(|c| Symbol {
            address: c.address,
            size: c.size,
            name: c.name,
            demangled: OnceLock::new(),
        })
        .collect();
    (symbols, ends, aliases)
}

/// PLT stubs named as objdump names them (`memcpy@plt`), x86-64 only:
/// each 16-byte entry of `.plt` and `.plt.sec` (8 or 16 bytes in
/// `.plt.got`) whose `jmp *slot(%rip)` goes through a GOT slot that a
/// dynamic relocation binds to a symbol.
fn plt_symbols(file: &object::File<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    if file.architecture() != object::Architecture::X86_64 {
        return out;
    }
    let (Some(relocations), Some(dynsym)) =
        (file.dynamic_relocations(), file.dynamic_symbol_table())
    else {
        return out;
    };
    let mut slots: FxHashMap<u64, String> = FxHashMap::default();
    for (offset, relocation) in relocations {
        if relocation.target() == object::RelocationTarget::Absolute && relocation.addend() > 0 {
            // An IFUNC resolved at load time (`R_X86_64_IRELATIVE`):
            // objdump names its stub after the resolver's address.
            slots
                .entry(offset)
                .or_insert_with(|| format!("*ABS*+0x{:x}", relocation.addend()));
        }
        if let object::RelocationTarget::Symbol(index) = relocation.target() {
            if let Ok(symbol) = dynsym.symbol_by_index(index) {
                if let Ok(name) = symbol.name() {
                    if !name.is_empty() {
                        slots.entry(offset).or_insert_with(|| name.to_string());
                    }
                }
            }
        }
    }
    if slots.is_empty() {
        return out;
    }
    for section in file.sections() {
        let Ok(section_name) = section.name() else {
            continue;
        };
        if !matches!(section_name, ".plt" | ".plt.sec" | ".plt.got") {
            continue;
        }
        let Ok(data) = section.data() else { continue };
        let base = section.address();
        let endbr = data.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]);
        let entry = if section_name == ".plt.got" && !endbr {
            8
        } else {
            16
        };
        for (i, stub) in data.chunks(entry).enumerate() {
            let address = base + (i * entry) as u64;
            // `jmp *disp(%rip)`, maybe after `endbr64` and/or `bnd`.
            let Some(at) = (0..stub.len().saturating_sub(5))
                .find(|&k| stub[k] == 0xff && stub[k + 1] == 0x25 && k + 6 <= stub.len())
            else {
                continue;
            };
            let disp = i32::from_le_bytes([stub[at + 2], stub[at + 3], stub[at + 4], stub[at + 5]]);
            let slot = (address + at as u64 + 6).wrapping_add(disp as i64 as u64);
            if let Some(name) = slots.get(&slot) {
                out.push(Candidate {
                    address,
                    size: entry as u64,
                    name: format!("{name}@plt"),
                    rank: (3, 2, 0, 0, std::cmp::Reverse(0), usize::MAX),
                    section_end: base + data.len() as u64,
                });
            }
        }
    }
    out
}

/// The functions the unwind tables describe: the sorted, non-overlapping
/// address ranges of `.eh_frame`'s FDEs, each with its name.
#[derive(Default)]
struct UnwindFunctions {
    starts: Vec<u64>,
    ends: Vec<u64>,
    names: Vec<String>,
}

impl UnwindFunctions {
    /// Reads the FDEs of the ELF file in `data`, naming each after
    /// `file_name`. Corrupt tables end the reading where they break.
    fn read(data: &[u8], file_name: &str) -> UnwindFunctions {
        use gimli::UnwindSection;
        let mut table = UnwindFunctions::default();
        let Ok(file) = object::File::parse(data) else {
            return table;
        };
        let Some(section) = file.section_by_name(".eh_frame") else {
            return table;
        };
        let Ok(bytes) = section.data() else {
            return table;
        };
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let mut eh_frame = gimli::EhFrame::new(bytes, endian);
        eh_frame.set_address_size(if file.is_64() { 8 } else { 4 });
        let mut bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
        if let Some(text) = file.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = file.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut entries = eh_frame.entries(&bases);
        // A bound against corrupt tables that never end.
        for _ in 0..10_000_000 {
            let Ok(Some(entry)) = entries.next() else {
                break;
            };
            if let gimli::CieOrFde::Fde(partial) = entry {
                if let Ok(fde) =
                    partial.parse(|section, bases, offset| section.cie_from_offset(bases, offset))
                {
                    let start = fde.initial_address();
                    if fde.len() > 0 && start != 0 {
                        ranges.push((start, start.saturating_add(fde.len())));
                    }
                }
            }
        }
        ranges.sort_unstable();
        ranges.dedup_by_key(|r| r.0);
        for (start, end) in ranges {
            table.starts.push(start);
            table.ends.push(end);
            table.names.push(format!("{file_name}+0x{start:x}"));
        }
        table
    }

    fn find(&self, address: u64) -> Option<&str> {
        let i = self
            .starts
            .partition_point(|&s| s <= address)
            .checked_sub(1)?;
        (address < self.ends[i]).then(|| self.names[i].as_str())
    }
}

/// Loads the DWARF sections of the ELF file in `bytes`, decompressing the
/// compressed ones in parallel (libc6-dbg's are zlib-compressed: 3.7 MB
/// that inflate to 8.6 MB).
fn load_sections(
    bytes: &'static [u8],
    buffers: &mut Vec<Vec<u8>>,
) -> Result<gimli::Dwarf<Reader>, String> {
    use rayon::prelude::*;

    let file = object::File::parse(bytes).map_err(|e| e.to_string())?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let ids = [
        gimli::SectionId::DebugAbbrev,
        gimli::SectionId::DebugAddr,
        gimli::SectionId::DebugAranges,
        gimli::SectionId::DebugInfo,
        gimli::SectionId::DebugLine,
        gimli::SectionId::DebugLineStr,
        gimli::SectionId::DebugStr,
        gimli::SectionId::DebugStrOffsets,
        gimli::SectionId::DebugRanges,
        gimli::SectionId::DebugRngLists,
    ];
    let mut compressed = Vec::new();
    for id in ids {
        let Some(section) = file.section_by_name(id.name()) else {
            continue;
        };
        if section.kind() == object::SectionKind::UninitializedData {
            continue;
        }
        let data = section
            .compressed_data()
            .map_err(|e| format!("section {}: {e}", id.name()))?;
        if data.format != object::CompressionFormat::None {
            let bound = (data.data.len() as u64)
                .saturating_mul(MAX_COMPRESSION_RATIO)
                .saturating_add(4096);
            if data.uncompressed_size > bound {
                return Err(format!(
                    "section {}: claims {} bytes uncompressed from {} compressed",
                    id.name(),
                    data.uncompressed_size,
                    data.data.len()
                ));
            }
        }
        compressed.push((id, data));
    }
    // Biggest first so that .debug_info does not start last.
    compressed.sort_by_key(|(_, data)| std::cmp::Reverse(data.data.len()));
    let inflated: Vec<(gimli::SectionId, Cow<'static, [u8]>)> = compressed
        .into_par_iter()
        .map(|(id, data)| {
            data.decompress()
                .map(|bytes| (id, bytes))
                .map_err(|e| format!("section {}: {e}", id.name()))
        })
        .collect::<Result<_, _>>()?;
    let mut sections: FxHashMap<gimli::SectionId, &'static [u8]> = FxHashMap::default();
    for (id, bytes) in inflated {
        let slice: &'static [u8] = match bytes {
            Cow::Borrowed(b) => b,
            Cow::Owned(owned) => {
                // SAFETY: the Vec's heap buffer does not move when the Vec
                // is moved into `buffers`, which lives as long as the
                // DWARF state that borrows it.
                let slice = unsafe { std::slice::from_raw_parts(owned.as_ptr(), owned.len()) };
                buffers.push(owned);
                slice
            }
        };
        sections.insert(id, slice);
    }
    gimli::Dwarf::load(|id| -> Result<Reader, String> {
        let data = sections.get(&id).copied().unwrap_or(&[]);
        Ok(gimli::EndianSlice::new(data, endian))
    })
}

/// A frame as looked up, borrowing names and files from the binary.
#[derive(Clone, Copy)]
pub(crate) struct RawFrame<'a> {
    /// The mangled name (DWARF linkage name, or symbol table name), or the
    /// plain DWARF name when there is no mangled one.
    pub name: Option<&'a str>,
    pub file: Option<&'a str>,
    pub line: u32,
    pub column: u32,
    pub start_line: u32,
    /// The DIE of the function or inlined call, as a unit offset.
    die: Option<usize>,
    /// The compilation unit's language mangles names (C++, Rust, ...).
    mangling_language: bool,
}

/// What the DIE chain of a function says: its linkage (mangled) name, if
/// any DIE of the chain has one, and its first line.
#[derive(Clone, Copy, Default)]
struct DieInfo {
    linkage_name: Option<&'static str>,
    decl_line: u32,
}

/// Looks up addresses of one binary with one addr2line context.
pub(crate) struct Resolver<'b> {
    binary: &'b Binary,
    state: Option<&'b DwarfState>,
    context: Option<addr2line::Context<Reader>>,
    /// What each function's DIE chain says, by (name pointer, DIE offset):
    /// read once per function.
    die_info: FxHashMap<(usize, usize), DieInfo>,
    /// Lookups that met corrupt DWARF.
    pub errors: usize,
}

impl Drop for Resolver<'_> {
    fn drop(&mut self) {
        if let (Some(state), Some(context)) = (self.state, self.context.take()) {
            if let Ok(mut pool) = state.contexts.lock() {
                pool.push(context);
            }
        }
    }
}

/// True for names in a mangled form (C++ Itanium, Rust legacy and v0).
fn is_mangled(name: &str) -> bool {
    name.starts_with("_Z") || name.starts_with("_R")
}

/// True for languages whose functions have linkage names distinct from
/// their source names: for them a function without one is named after
/// the symbol table (binutils does the same), for C the DWARF name is the
/// symbol name.
fn mangles(language: Option<gimli::DwLang>) -> bool {
    const MANGLING: [gimli::DwLang; 10] = [
        gimli::DW_LANG_C_plus_plus,
        gimli::DW_LANG_C_plus_plus_03,
        gimli::DW_LANG_C_plus_plus_11,
        gimli::DW_LANG_C_plus_plus_14,
        gimli::DW_LANG_C_plus_plus_17,
        gimli::DW_LANG_C_plus_plus_20,
        gimli::DW_LANG_ObjC_plus_plus,
        gimli::DW_LANG_Rust,
        gimli::DW_LANG_D,
        gimli::DW_LANG_Swift,
    ];
    language.is_some_and(|l| MANGLING.contains(&l))
}

impl Resolver<'_> {
    /// Calls `sink` with each frame of the inline chain at `file_address`,
    /// innermost first. Returns false when nothing is known there.
    ///
    /// Names: the linkage name found along each frame's DIE chain
    /// (`DW_AT_abstract_origin`, `DW_AT_specification`), else its DWARF
    /// name; the outermost frame of a C++ (or Rust) function without a
    /// linkage name takes the symbol table's name, as binutils does (gcc
    /// gives template instances and clones only a short `DW_AT_name`).
    /// Frames are passed on one step behind the DWARF iterator, so that the
    /// outermost one is known without buffering the chain.
    pub fn resolve(&mut self, file_address: u64, sink: &mut dyn FnMut(&RawFrame<'_>)) -> bool {
        let binary = self.binary;
        let inlines = binary.options_inlines;
        let mut held: Option<RawFrame<'_>> = None;
        // addr2line computes `probe + 1`; the last address of the space (a
        // zero return address minus one, in a corrupt profile) is no code.
        let context = self.context.as_ref().filter(|_| file_address != u64::MAX);
        if let Some(context) = context {
            let die_info = &mut self.die_info;
            let mut emit =
                |frame: RawFrame<'_>, last: bool, sink: &mut dyn FnMut(&RawFrame<'_>)| {
                    emit_frame(frame, last, binary, context, die_info, file_address, sink);
                };
            match context.find_frames(file_address).skip_all_loads() {
                Ok(mut iter) => loop {
                    match iter.next() {
                        Ok(Some(frame)) => {
                            // A name that is not UTF-8 counts as missing
                            // (the symbol table may still name the frame).
                            let name = frame
                                .function
                                .as_ref()
                                .and_then(|f| f.name.to_string().ok());
                            let (file, line, column) = match &frame.location {
                                Some(l) => (l.file, l.line.unwrap_or(0), l.column.unwrap_or(0)),
                                None => (None, 0, 0),
                            };
                            let raw = RawFrame {
                                name,
                                file,
                                line,
                                column,
                                start_line: 0,
                                die: frame.dw_die_offset.map(|o| o.0),
                                mangling_language: mangles(
                                    frame.function.as_ref().and_then(|f| f.language),
                                ),
                            };
                            if let Some(previous) = held.replace(raw) {
                                if inlines {
                                    emit(previous, false, sink);
                                }
                            }
                        }
                        Ok(None) => break,
                        Err(_) => {
                            self.errors += 1;
                            break;
                        }
                    }
                },
                Err(_) => self.errors += 1,
            }
            if let Some(last) = held {
                emit(last, true, sink);
                return true;
            }
        }
        // No DWARF for this address: the symbol table alone.
        let name = binary
            .symbol_at(file_address)
            .map(|symbol| symbol.name())
            .or_else(|| binary.unwind_function_name(file_address));
        let Some(name) = name else {
            return false;
        };
        sink(&RawFrame {
            name: Some(name),
            file: None,
            line: 0,
            column: 0,
            start_line: 0,
            die: None,
            mangling_language: false,
        });
        true
    }
}

/// Completes `frame` (linkage name and first line from its DIE chain, the
/// symbol table's name for an outermost frame without a linkage name) and
/// passes it to `sink`.
fn emit_frame<'a>(
    mut frame: RawFrame<'a>,
    last: bool,
    binary: &'a Binary,
    context: &addr2line::Context<Reader>,
    die_info: &mut FxHashMap<(usize, usize), DieInfo>,
    file_address: u64,
    sink: &mut dyn FnMut(&RawFrame<'_>),
) {
    let mut has_linkage = frame.name.is_some_and(is_mangled);
    if let Some(die) = frame.die {
        let info = match frame.name {
            Some(name) => *die_info
                .entry((name.as_ptr() as usize, die))
                .or_insert_with(|| describe_die(context, file_address, die)),
            None => describe_die(context, file_address, die),
        };
        frame.start_line = info.decl_line;
        if let Some(linkage) = info.linkage_name {
            frame.name = Some(linkage);
            has_linkage = true;
        }
    }
    if last {
        if let Some(symbol) = binary.symbol_at(file_address) {
            let take_symbol = match frame.name {
                None => true,
                // gcc gives template instances and clones only a short
                // `DW_AT_name` (`__adjust_heap<long int*, ...>`); the
                // symbol's name is the full one, when it is the same
                // function (not, say, `main.cold` for part of `main`).
                Some(name) => {
                    !has_linkage
                        && frame.mangling_language
                        && same_function(name, symbol.demangled())
                }
            };
            if take_symbol {
                frame.name = Some(symbol.name());
            }
        }
    }
    // A C function with several symbols (glibc's `__snprintf`,
    // `__GI___snprintf`, `snprintf`): DWARF names it as defined (glibc's asm
    // labels even give it a linkage name, not a mangled one); the public
    // alias, which callers use, wins. Inlined copies too, so that every
    // address of the function agrees.
    if !frame.mangling_language {
        if let Some(public) = frame
            .name
            .filter(|name| !is_mangled(name))
            .and_then(|name| binary.public_name(name))
        {
            frame.name = Some(public);
        }
    }
    if frame.name.is_none() {
        frame.name = Some("??");
    }
    sink(&frame);
}

/// True when the DWARF name `short` (`operator()<int>`, `vector`) names
/// the function whose full demangled name is `full`: its last component,
/// without template arguments, is the same.
fn same_function(short: &str, full: &str) -> bool {
    let base = |s: &str| -> String {
        let simple = demangle::short_name(s);
        match simple.rfind("::") {
            Some(i) => simple[i + 2..].to_string(),
            None => simple,
        }
    };
    base(short) == base(full)
}

/// What the DIE at `die` (a unit offset in the unit containing `probe`)
/// and the DIEs it refers to (`DW_AT_abstract_origin`,
/// `DW_AT_specification`, within the unit) say: the first linkage name
/// and the first `DW_AT_decl_line`.
fn describe_die(context: &addr2line::Context<Reader>, probe: u64, die: usize) -> DieInfo {
    let mut info = DieInfo::default();
    let Some(unit) = context.find_dwarf_and_unit(probe).skip_all_loads() else {
        return info;
    };
    let mut offset = gimli::UnitOffset(die);
    // A bound on the chain: corrupt DWARF may loop.
    for _ in 0..16 {
        let Ok(entry) = unit.entry(offset) else { break };
        if info.decl_line == 0 {
            if let Some(line) = entry
                .attr_value(gimli::DW_AT_decl_line)
                .and_then(|v| v.udata_value())
            {
                info.decl_line = u32::try_from(line).unwrap_or(0);
            }
        }
        if info.linkage_name.is_none() {
            let linkage = entry
                .attr_value(gimli::DW_AT_linkage_name)
                .or_else(|| entry.attr_value(gimli::DW_AT_MIPS_linkage_name));
            if let Some(value) = linkage {
                if let Ok(name) = unit.attr_string(value) {
                    info.linkage_name = name.to_string().ok();
                }
            }
        }
        if info.linkage_name.is_some() && info.decl_line != 0 {
            break;
        }
        let next = entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification));
        match next {
            Some(gimli::AttributeValue::UnitRef(o)) if o != offset => offset = o,
            _ => break,
        }
    }
    info
}
