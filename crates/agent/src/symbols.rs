//! Naming addresses of this process for the HTTP endpoint: the function
//! symbols (`.symtab`, else `.dynsym`) and the GNU build id of each loaded
//! object, read from its file with positioned reads (only the headers,
//! the symbol table and its strings; never a whole file), per the ELF-64
//! object file format ("System V ABI", chapter 4: ELF header, section
//! header, symbol table; chapter 5: program header, note section). Runs
//! on the endpoint's threads only, never in a signal handler.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// One executable mapping of `/proc/self/maps`.
#[derive(Clone, Debug)]
pub(crate) struct CodeMapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) offset: u64,
    pub(crate) path: String,
}

/// The executable mappings of a `/proc/self/maps` text, in address order.
pub(crate) fn code_mappings(maps: &str) -> Vec<CodeMapping> {
    let mut out = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms), Some(offset)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = fields.nth(2).unwrap_or("");
        if !perms.contains('x') || path.is_empty() {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(start, 16),
            u64::from_str_radix(end, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        out.push(CodeMapping {
            start,
            end,
            offset,
            path: path.to_string(),
        });
    }
    out.sort_by_key(|m| m.start);
    out
}

/// What one object file tells about its code.
#[derive(Default)]
pub(crate) struct ObjectFile {
    /// (address, size, name) of its functions, by address.
    functions: Vec<(u64, u64, String)>,
    /// (file offset, virtual address, size in the file) of its loadable
    /// segments.
    segments: Vec<(u64, u64, u64)>,
    /// The GNU build id, in hex.
    pub(crate) build_id: Option<String>,
}

/// Bounds on what is read from one file (a corrupt or hostile file cannot
/// make the endpoint allocate without limit).
const MAX_TABLE_BYTES: u64 = 256 << 20;
const MAX_HEADERS: usize = 1 << 16;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn read_at(file: &File, offset: u64, len: u64) -> Option<Vec<u8>> {
    if len > MAX_TABLE_BYTES {
        return None;
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, offset).ok()?;
    Some(buf)
}

/// Opens the ELF-64 little-endian object at `path`: the file and its
/// 64-byte header (None for anything else).
fn open_elf(path: &str) -> Option<(File, Vec<u8>)> {
    let file = File::open(path).ok()?;
    let header = read_at(&file, 0, 64)?;
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    Some((file, header))
}

/// (type, file offset, virtual address, size in the file) of each
/// program header; none when its entries are too small for ELF-64's.
fn program_headers(file: &File, header: &[u8]) -> Option<Vec<(u32, u64, u64, u64)>> {
    let phoff = u64_at(header, 0x20)?;
    let phentsize = u16_at(header, 0x36)? as u64;
    let phnum = (u16_at(header, 0x38)? as usize).min(MAX_HEADERS);
    if phentsize < 56 {
        return Some(Vec::new());
    }
    let table = read_at(file, phoff, phentsize * phnum as u64)?;
    (0..phnum)
        .map(|i| {
            let ph = &table[i * phentsize as usize..];
            Some((
                u32_at(ph, 0)?,
                u64_at(ph, 8)?,
                u64_at(ph, 16)?,
                u64_at(ph, 32)?,
            ))
        })
        .collect()
}

/// The GNU build id in the first `PT_NOTE` segment of `headers` that has
/// one.
fn build_id_in_segments(file: &File, headers: &[(u32, u64, u64, u64)]) -> Option<String> {
    headers
        .iter()
        .filter(|&&(kind, ..)| kind == PT_NOTE)
        .find_map(|&(_, offset, _, filesz)| {
            build_id_in_notes(&read_at(file, offset, filesz.min(1 << 16))?)
        })
}

/// The section header table of an ELF-64 object (no entries when its
/// entries are too small for ELF-64's).
struct Sections {
    table: Vec<u8>,
    entry_size: usize,
    count: usize,
}

impl Sections {
    fn read(file: &File, header: &[u8]) -> Option<Sections> {
        let shoff = u64_at(header, 0x28)?;
        let shentsize = u16_at(header, 0x3a)? as u64;
        let shnum = (u16_at(header, 0x3c)? as usize).min(MAX_HEADERS);
        if shentsize < 64 || shnum == 0 {
            return Some(Sections {
                table: Vec::new(),
                entry_size: 64,
                count: 0,
            });
        }
        Some(Sections {
            table: read_at(file, shoff, shentsize * shnum as u64)?,
            entry_size: shentsize as usize,
            count: shnum,
        })
    }

    /// Section header `i`.
    fn get(&self, i: usize) -> Option<&[u8]> {
        self.table
            .get(i * self.entry_size..(i + 1) * self.entry_size)
    }

    /// The bytes of section `i`.
    fn contents(&self, file: &File, i: usize) -> Option<Vec<u8>> {
        let sh = self.get(i)?;
        read_at(file, u64_at(sh, 24)?, u64_at(sh, 32)?)
    }
}

/// True when the ELF object at `path` has a section named `name` (e.g.
/// `.go.buildinfo`, which every Go program has).
pub(crate) fn has_section(path: &str, name: &[u8]) -> bool {
    let find = || -> Option<bool> {
        let (file, header) = open_elf(path)?;
        let sections = Sections::read(&file, &header)?;
        let shstrndx = u16_at(&header, 0x3e)? as usize;
        if shstrndx >= sections.count {
            return None;
        }
        let names = sections.contents(&file, shstrndx)?;
        Some((0..sections.count).any(|i| {
            sections
                .get(i)
                .and_then(|sh| u32_at(sh, 0))
                .and_then(|at| names.get(at as usize..))
                .is_some_and(|rest| rest.starts_with(name) && rest.get(name.len()) == Some(&0))
        }))
    };
    find().unwrap_or(false)
}

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const NT_GNU_BUILD_ID: u32 = 3;

/// The GNU build id of the ELF-64 file at `path`, in hex: its `PT_NOTE`
/// segments only (no symbol table read).
pub(crate) fn build_id_of(path: &str) -> Option<String> {
    let (file, header) = open_elf(path)?;
    build_id_in_segments(&file, &program_headers(&file, &header)?)
}

impl ObjectFile {
    /// Reads an ELF-64 little-endian object (None for anything else).
    pub(crate) fn read(path: &str) -> Option<ObjectFile> {
        let (file, header) = open_elf(path)?;
        let mut object = ObjectFile::default();
        let headers = program_headers(&file, &header)?;
        object.segments = headers
            .iter()
            .filter(|&&(kind, ..)| kind == PT_LOAD)
            .map(|&(_, offset, vaddr, filesz)| (offset, vaddr, filesz))
            .collect();
        object.build_id = build_id_in_segments(&file, &headers);
        let sections = Sections::read(&file, &header)?;
        if sections.count > 0 {
            // .symtab when present (all functions), else .dynsym (exported).
            let mut chosen = None;
            for i in 0..sections.count {
                let sh = sections.get(i)?;
                match u32_at(sh, 4)? {
                    SHT_SYMTAB => chosen = Some(i),
                    SHT_DYNSYM if chosen.is_none() => chosen = Some(i),
                    _ => {}
                }
            }
            if let Some(i) = chosen {
                let link = u32_at(sections.get(i)?, 40)?;
                let strings = sections.contents(&file, link as usize)?;
                let symbols = sections.contents(&file, i)?;
                for symbol in symbols.chunks_exact(24) {
                    let kind = symbol[4] & 0xf;
                    let shndx = u16_at(symbol, 6)?;
                    let (value, size) = (u64_at(symbol, 8)?, u64_at(symbol, 16)?);
                    if (kind != STT_FUNC && kind != STT_GNU_IFUNC) || shndx == 0 || value == 0 {
                        continue;
                    }
                    let name_at = u32_at(symbol, 0)? as usize;
                    let Some(name) = strings.get(name_at..) else {
                        continue;
                    };
                    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                    if name.is_empty() {
                        continue;
                    }
                    object.functions.push((
                        value,
                        size,
                        String::from_utf8_lossy(name).into_owned(),
                    ));
                }
                object
                    .functions
                    .sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
                object.functions.dedup_by_key(|f| f.0);
            }
        }
        Some(object)
    }

    /// The virtual address (as linked) of the byte at `file_offset`.
    fn vaddr_of(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(offset, _, size)| file_offset >= offset && file_offset < offset + size)
            .map(|&(offset, vaddr, _)| file_offset - offset + vaddr)
    }

    /// The function containing linked address `vaddr`.
    fn function_at(&self, vaddr: u64) -> Option<&str> {
        let index = self
            .functions
            .partition_point(|f| f.0 <= vaddr)
            .checked_sub(1)?;
        let (start, size, name) = &self.functions[index];
        (*size == 0 || vaddr < start + size).then_some(name.as_str())
    }

    /// The (address, size, name) of its function symbols, by address.
    pub(crate) fn functions(&self) -> &[(u64, u64, String)] {
        &self.functions
    }

    /// The lowest virtual address of its loadable segments (what a load
    /// base is relative to).
    pub(crate) fn first_vaddr(&self) -> Option<u64> {
        self.segments
            .iter()
            .map(|&(offset, vaddr, _)| vaddr.wrapping_sub(offset))
            .min()
    }

    /// True when it has function symbols.
    pub(crate) fn has_functions(&self) -> bool {
        !self.functions.is_empty()
    }
}

/// The NT_GNU_BUILD_ID descriptor among notes, in hex.
fn build_id_in_notes(notes: &[u8]) -> Option<String> {
    let align = |n: usize| (n + 3) & !3;
    let mut at = 0;
    while at + 12 <= notes.len() {
        let namesz = u32_at(notes, at)? as usize;
        let descsz = u32_at(notes, at + 4)? as usize;
        let kind = u32_at(notes, at + 8)?;
        let name_at = at + 12;
        let desc_at = name_at.checked_add(align(namesz))?;
        let desc = notes.get(desc_at..desc_at.checked_add(descsz)?)?;
        if kind == NT_GNU_BUILD_ID && notes.get(name_at..name_at + namesz) == Some(b"GNU\0") {
            return Some(desc.iter().map(|b| format!("{b:02x}")).collect());
        }
        at = desc_at + align(descsz);
    }
    None
}

/// Names addresses of this process; each object file is read once, when
/// an address first falls in it.
pub(crate) struct Symbolizer {
    mappings: Vec<CodeMapping>,
    objects: HashMap<String, Option<ObjectFile>>,
}

impl Symbolizer {
    /// A symbolizer for the mappings of a `/proc/self/maps` text.
    pub(crate) fn new(maps: &str) -> Symbolizer {
        Symbolizer {
            mappings: code_mappings(maps),
            objects: HashMap::new(),
        }
    }

    /// The executable mappings, by address.
    pub(crate) fn mappings(&self) -> &[CodeMapping] {
        &self.mappings
    }

    /// The index of the mapping holding `address`.
    pub(crate) fn mapping_index(&self, address: u64) -> Option<usize> {
        let index = self
            .mappings
            .partition_point(|m| m.start <= address)
            .checked_sub(1)?;
        (address < self.mappings[index].end).then_some(index)
    }

    /// The object file behind mapping `index` (read on first use), read
    /// through the mapping itself, `/proc/self/map_files/START-END`, which
    /// holds the file that was mapped even when it was deleted or replaced
    /// since (a binary rebuilt or removed under a running server); by its
    /// path where that cannot be opened.
    pub(crate) fn object(&mut self, index: usize) -> Option<&ObjectFile> {
        let mapping = self.mappings.get(index)?;
        if !mapping.path.starts_with('/') {
            return None;
        }
        let through_mapping = format!("/proc/self/map_files/{:x}-{:x}", mapping.start, mapping.end);
        let path = &mapping.path;
        self.objects
            .entry(path.clone())
            .or_insert_with(|| {
                ObjectFile::read(&through_mapping).or_else(|| ObjectFile::read(path))
            })
            .as_ref()
    }

    /// The function containing `address`.
    pub(crate) fn function_name(&mut self, address: u64) -> Option<String> {
        let index = self.mapping_index(address)?;
        let mapping = &self.mappings[index];
        let file_offset = address - mapping.start + mapping.offset;
        let object = self.object(index)?;
        let vaddr = object.vaddr_of(file_offset)?;
        object.function_at(vaddr).map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    #[unsafe(no_mangle)]
    extern "C" fn cpuprof_symbols_test_marker() -> u64 {
        std::hint::black_box(42)
    }

    #[test]
    fn names_a_function_of_this_test_binary() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut symbolizer = Symbolizer::new(&maps);
        let address = cpuprof_symbols_test_marker as *const () as u64 + 1;
        assert_eq!(
            symbolizer.function_name(address).as_deref(),
            Some("cpuprof_symbols_test_marker")
        );
        let libc_getpid = libc::getpid as *const () as u64;
        let name = symbolizer.function_name(libc_getpid).unwrap();
        assert!(name.contains("getpid"), "{name}");
        assert_eq!(symbolizer.function_name(8), None);
    }

    #[test]
    fn reads_the_build_id_as_readelf_does() {
        let exe = std::env::current_exe().unwrap();
        let object = ObjectFile::read(exe.to_str().unwrap()).unwrap();
        assert!(object.has_functions());
        let Ok(out) = std::process::Command::new("readelf")
            .arg("-n")
            .arg(&exe)
            .output()
        else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = text.lines().find(|l| l.contains("Build ID:")) {
            let expected = line.split_whitespace().last().unwrap();
            assert_eq!(object.build_id.as_deref(), Some(expected));
        }
    }

    #[test]
    fn notes_parse_and_bounds() {
        let mut notes = Vec::new();
        notes.extend_from_slice(&4u32.to_le_bytes());
        notes.extend_from_slice(&3u32.to_le_bytes());
        notes.extend_from_slice(&NT_GNU_BUILD_ID.to_le_bytes());
        notes.extend_from_slice(b"GNU\0\xab\xcd\xef\0");
        assert_eq!(build_id_in_notes(&notes).as_deref(), Some("abcdef"));
        assert_eq!(build_id_in_notes(&notes[..14]), None);
        let mut huge = notes.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(build_id_in_notes(&huge), None);
    }
}
