//! What readers of address-only formats need from the profiled executable:
//! its pointer width and byte order (gmon.out has neither), its loadable
//! segments as link-time mappings (gmon.out and DCPI hold link-time
//! addresses), and gprof's symbol table (to split histogram bins as gprof
//! does).

use std::path::{Path, PathBuf};

use cpuprof_profile::{dcpi, Mapping, Profile, ReadOptions, Target};
use object::{
    Object, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolFlags, SymbolSection,
};

/// Pointer width and byte order from an ELF header.
pub fn elf_target(data: &[u8]) -> Option<Target> {
    if data.len() < 6 || &data[..4] != b"\x7fELF" {
        return None;
    }
    Some(Target {
        pointer_size: if data[4] == 1 { 4 } else { 8 },
        big_endian: data[5] == 2,
    })
}

/// The executable segments of the ELF file `data` as mappings at their
/// link-time addresses (what the program's `/proc/self/maps` would show if
/// it were loaded where it was linked), named `path`.
pub fn executable_mappings(data: &[u8], path: &Path) -> Vec<Mapping> {
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let mut out: Vec<Mapping> = file
        .segments()
        .filter(|s| match s.flags() {
            object::SegmentFlags::Elf { p_flags, .. } => p_flags.0 & object::elf::PF_X.0 != 0,
            _ => true,
        })
        .filter(|s| s.size() > 0)
        .map(|s| Mapping {
            start: s.address(),
            limit: s.address() + s.size(),
            offset: s.file_range().0,
            path: path.display().to_string(),
            perms: "r-xp".into(),
            ..Mapping::default()
        })
        .collect();
    out.sort_by_key(|m| m.start);
    out
}

/// Read options for profiles of the executable at `binary` (if any):
/// target, link-time mappings and gprof's symbol starts.
pub fn read_options_for(binary: Option<&Path>) -> ReadOptions {
    let Some(path) = binary else {
        return ReadOptions::default();
    };
    let Ok(file) = std::fs::File::open(path) else {
        return ReadOptions::default();
    };
    // SAFETY: read-only private map of the executable, only read here.
    let Ok(data) = (unsafe { memmap2::Mmap::map(&file) }) else {
        return ReadOptions::default();
    };
    ReadOptions {
        target: elf_target(&data),
        gmon_symbol_starts: GprofSymbols::from_elf(&data).ok().map(|s| s.starts()),
        executable_mappings: executable_mappings(&data, path),
        ..ReadOptions::default()
    }
}

/// DCPI profiles hold link-time addresses and say where the image is
/// (`path`) but not where `tstart` is in the file. For each mapping of a
/// DCPI image whose header had no `cpuprof-offset` line, finds the image
/// (a binary of `binaries` with the same base name, else `path`) and sets
/// the mapping's file offset from the segment that contains `tstart`.
pub fn resolve_dcpi_offsets(profile: &mut Profile, binaries: &[PathBuf]) {
    // Images whose header lacks the offset line: their tstart values.
    let mut images: Vec<(String, Vec<String>)> = Vec::new();
    for c in &profile.comments {
        let Some((id, line)) = c
            .strip_prefix(dcpi::HEADER_COMMENT)
            .and_then(|c| c.split_once(": "))
        else {
            continue;
        };
        match images.iter_mut().find(|(i, _)| i == id) {
            Some((_, lines)) => lines.push(line.to_string()),
            None => images.push((id.to_string(), vec![line.to_string()])),
        }
    }
    for (_, lines) in images {
        if lines.iter().any(|l| l.starts_with(dcpi::OFFSET_KEY)) {
            continue;
        }
        let Some(tstart) = lines
            .iter()
            .find_map(|l| l.strip_prefix("tstart"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        else {
            continue;
        };
        let Some(m) = profile.mappings.iter_mut().find(|m| m.start == tstart) else {
            continue;
        };
        let base = m.base_name().to_string();
        let file = binaries
            .iter()
            .find(|b| b.file_name().is_some_and(|n| n.to_string_lossy() == base))
            .cloned()
            .or_else(|| (!m.path.is_empty()).then(|| PathBuf::from(&m.path)))
            .or_else(|| binaries.first().cloned());
        let Some(data) = file.and_then(|f| std::fs::read(f).ok()) else {
            continue;
        };
        if let Some(seg) = executable_mappings(&data, Path::new(""))
            .iter()
            .find(|s| s.contains(tstart))
        {
            m.offset = seg.offset + (tstart - seg.start);
            if m.path.is_empty() {
                m.path = binaries
                    .first()
                    .map(|b| b.display().to_string())
                    .unwrap_or_default();
            }
        }
    }
}

/// One entry of gprof's symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GprofSymbol {
    /// The name as printed (demangled, with parameters, like gprof).
    pub name: String,
    /// The name in the symbol table (mangled): gprof sorts by it.
    pub system_name: String,
    /// Start address (link-time).
    pub address: u64,
    /// Last address covered (the next symbol's address minus one).
    pub end: u64,
    /// A local (`t`) symbol.
    pub is_static: bool,
    /// An ELF function symbol (arcs into other symbols go back to the
    /// function containing them).
    pub is_func: bool,
    /// The source file of the symbol's first instruction, when debug
    /// information says (gprof prints it after static functions in the
    /// index).
    pub file: Option<String>,
}

/// gprof's view of an executable's symbols, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct GprofSymbols {
    /// The symbols, sorted by address.
    pub symbols: Vec<GprofSymbol>,
}

impl GprofSymbols {
    /// Reads the symbol table of the ELF file `data`.
    pub fn from_elf(data: &[u8]) -> Result<GprofSymbols, String> {
        let file = object::File::parse(data).map_err(|e| format!("not an object file: {e}"))?;
        let mut raw: Vec<GprofSymbol> = Vec::new();
        let mut text_end = 0u64;
        let has_func_syms = file.symbols().any(|s| elf_type(&s) == Some(STT_FUNC));
        for sym in file.symbols() {
            let Some(class) = symbol_class(&file, &sym) else {
                continue;
            };
            let Ok(name) = sym.name() else { continue };
            if class == 't' && !acceptable_static_name(name) {
                continue;
            }
            let address = sym.address();
            let section = match sym.section() {
                SymbolSection::Section(i) => file.section_by_index(i).ok(),
                _ => None,
            };
            if let Some(s) = &section {
                if s.name() == Ok(".text") {
                    text_end = s.address() + s.size();
                }
            }
            raw.push(GprofSymbol {
                name: demangle(name),
                system_name: name.to_string(),
                address,
                end: 0,
                is_static: class == 't',
                is_func: !has_func_syms || elf_type(&sym) == Some(STT_FUNC),
                file: None,
            });
        }
        if raw.is_empty() {
            return Err("the executable has no text symbols (stripped?)".into());
        }
        Ok(GprofSymbols {
            symbols: finalize(raw, text_end),
        })
    }

    /// Sets each symbol's source file from `source_file(address)` (the
    /// symbolizer's file for the symbol's first instruction).
    pub fn set_source_files(&mut self, source_file: impl Fn(u64) -> Option<String>) {
        for s in &mut self.symbols {
            s.file = source_file(s.address);
        }
    }

    /// Sets the source file of each static symbol from the debug
    /// information of the executable at `path` (through the symbolizer),
    /// as gprof names it after static functions in the index.
    pub fn resolve_source_files(&mut self, path: &std::path::Path) {
        let Ok(data) = std::fs::read(path) else {
            return;
        };
        let mut b = cpuprof_profile::ProfileBuilder::new(vec![cpuprof_profile::ValueType::new(
            "samples", "count",
        )]);
        b.profile.mappings = executable_mappings(&data, path);
        let statics: Vec<(usize, cpuprof_profile::LocationId)> = self
            .symbols
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_static)
            .map(|(i, s)| (i, b.location_at(s.address)))
            .collect();
        let mut profile = b.profile;
        let options = cpuprof_symbolize::Options {
            binaries: vec![path.to_path_buf()],
            ..cpuprof_symbolize::Options::default()
        };
        let _ = cpuprof_symbolize::symbolize(&mut profile, &options);
        for (i, loc) in statics {
            let location = profile.location(loc);
            // gprof takes the file only with a line number for the address.
            self.symbols[i].file = location
                .lines
                .last()
                .filter(|l| l.line > 0)
                .map(|l| profile.function(l.function).filename.clone())
                .filter(|f| !f.is_empty());
        }
    }

    /// The start addresses, for [`cpuprof_profile::gmon::to_profile`].
    pub fn starts(&self) -> Vec<u64> {
        self.symbols.iter().map(|s| s.address).collect()
    }

    /// The symbol covering `address` (gprof's `sym_lookup`).
    pub fn lookup(&self, address: u64) -> Option<usize> {
        let i = self.symbols.partition_point(|s| s.address <= address);
        if i == 0 {
            return None;
        }
        let s = &self.symbols[i - 1];
        (address <= s.end).then_some(i - 1)
    }
}

const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;

fn elf_type<'a>(sym: &impl ObjectSymbol<'a>) -> Option<u8> {
    match sym.flags() {
        SymbolFlags::Elf { st_info, .. } => Some(st_info.0 & 0xf),
        _ => None,
    }
}

/// `nm`'s class of a symbol as far as gprof cares: `T` (global text, or
/// weak anywhere), `t` (local text), or None.
fn symbol_class<'data>(
    file: &object::File<'data>,
    sym: &object::Symbol<'data, '_>,
) -> Option<char> {
    let SymbolSection::Section(index) = sym.section() else {
        return None;
    };
    let kind = sym.kind();
    if matches!(kind, object::SymbolKind::File | object::SymbolKind::Section) {
        // Section symbols are named like their section (with a '.') and
        // file symbols are debugging symbols: gprof never keeps them.
        return None;
    }
    if elf_type(sym) == Some(STT_GNU_IFUNC) {
        return None; // nm class 'i'
    }
    if sym.is_weak() {
        // Weak defined symbols that are not objects: 'W', taken as text.
        return (kind != object::SymbolKind::Data).then_some('T');
    }
    let section = file.section_by_index(index).ok()?;
    if section.kind() != SectionKind::Text {
        return None;
    }
    if sym.is_global() {
        Some('T')
    } else if sym.is_local() {
        Some('t')
    } else {
        None
    }
}

/// gprof drops local symbols with `.` or `$` in their names (labels,
/// `.cold` parts, file names) and GCC's `__gnu_compiled` markers.
fn acceptable_static_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains(['.', '$'])
        && !name.starts_with("__gnu_compiled")
        && !name.starts_with("___gnu_compiled")
}

/// Demangles C++ names with their parameters, as gprof prints them.
fn demangle(name: &str) -> String {
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle() {
                return s;
            }
        }
    }
    name.to_string()
}

/// gprof's `symtab_finalize`: sort by address, keep one symbol per
/// address (global over static, function over label, a name without a
/// leading underscore over one with), and make each reach up to the next.
fn finalize(mut raw: Vec<GprofSymbol>, text_end: u64) -> Vec<GprofSymbol> {
    raw.sort_by_key(|s| s.address);
    let mut out: Vec<GprofSymbol> = Vec::with_capacity(raw.len());
    let mut prev_addr: Option<u64> = None;
    for src in raw {
        if prev_addr == Some(src.address) {
            let dst = out.last_mut().unwrap();
            let s = src.system_name.as_bytes();
            let d = dst.system_name.as_bytes();
            let s1 = s.get(1).copied().unwrap_or(0);
            let d1 = d.get(1).copied().unwrap_or(0);
            let s0 = s.first().copied().unwrap_or(0);
            let d0 = d.first().copied().unwrap_or(0);
            // Prefer a global, then a function, then a name without a
            // leading underscore (or with one underscore over two).
            let fewer_underscores = d0 == b'_' && (s0 != b'_' || (s1 != b'_' && d1 == b'_'));
            let prefer = (!src.is_static && dst.is_static)
                || (src.is_static == dst.is_static
                    && ((src.is_func && !dst.is_func)
                        || (src.is_func == dst.is_func && fewer_underscores)));
            if prefer {
                let end = dst.end;
                *dst = src;
                if dst.end == 0 {
                    dst.end = end;
                }
            }
            continue;
        }
        if let Some(last) = out.last_mut() {
            if last.end == 0 {
                last.end = src.address.wrapping_sub(1);
            }
        }
        if src.end == 0 || src.address <= src.end {
            prev_addr = Some(src.address);
            out.push(src);
        }
    }
    // The last symbol reaches the end of .text (or, past it, everything).
    if let Some(last) = out.last_mut() {
        if last.end == 0 {
            last.end = if text_end > last.address {
                text_end - 1
            } else {
                u64::MAX
            };
        }
    }
    out
}
