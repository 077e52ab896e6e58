//! The gperftools (libprofiler) binary CPU profile: read and write.
//!
//! Follows "Google CPU Profiler Binary Data File Format": a header of
//! pointer-sized slots (`0, 3, 0, period_us, 0`), records
//! (`count, n, pc[0..n]`, leaf first), the trailer `0, 1, 0`, then the text
//! list of mapped objects (`build=` lines and `/proc/self/maps` lines).
//! Slot width (4 or 8 bytes) and byte order are detected from the header.
//!
//! Caller PCs (every PC but the leaf) are return addresses; the reader
//! stores them minus one so that they symbolize to the call site, and the
//! writer adds the one back.

use std::io::{self, Write};

use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::model::{
    cpu_sample_types, LocationId, Mapping, Profile, ProfileBuilder, Sample, ValueType,
};

const FORMAT: &str = "gperftools CPU profile";

/// Slot width of a gperftools profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// 4-byte slots (32-bit programs).
    W32,
    /// 8-byte slots (64-bit programs).
    W64,
}

/// Byte order of a gperftools profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Little-endian (x86, x86-64, most ARM).
    Little,
    /// Big-endian.
    Big,
}

/// How a profile file is laid out, as detected from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Slot width.
    pub width: Width,
    /// Byte order.
    pub endian: Endian,
}

impl Layout {
    /// The layout of profiles written by this machine.
    pub fn native() -> Layout {
        Layout {
            width: if cfg!(target_pointer_width = "64") {
                Width::W64
            } else {
                Width::W32
            },
            endian: if cfg!(target_endian = "little") {
                Endian::Little
            } else {
                Endian::Big
            },
        }
    }

    fn slot_size(self) -> usize {
        match self.width {
            Width::W32 => 4,
            Width::W64 => 8,
        }
    }

    #[inline]
    fn slot(self, data: &[u8], at: usize) -> u64 {
        match (self.width, self.endian) {
            (Width::W64, Endian::Little) => {
                u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
            }
            (Width::W64, Endian::Big) => u64::from_be_bytes(data[at..at + 8].try_into().unwrap()),
            (Width::W32, Endian::Little) => {
                u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as u64
            }
            (Width::W32, Endian::Big) => {
                u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as u64
            }
        }
    }

    fn put(self, out: &mut Vec<u8>, value: u64) {
        match (self.width, self.endian) {
            (Width::W64, Endian::Little) => out.extend_from_slice(&value.to_le_bytes()),
            (Width::W64, Endian::Big) => out.extend_from_slice(&value.to_be_bytes()),
            (Width::W32, Endian::Little) => out.extend_from_slice(&(value as u32).to_le_bytes()),
            (Width::W32, Endian::Big) => out.extend_from_slice(&(value as u32).to_be_bytes()),
        }
    }
}

/// Detects the layout from the first bytes: the header count slot is zero
/// and the header-words slot is small, which tells the width (the first
/// eight bytes are all zero only for 64-bit files) and the byte order (which
/// half of the header-words slot is non-zero).
pub fn detect(data: &[u8]) -> Option<Layout> {
    if data.len() >= 16 && data[..8].iter().all(|&b| b == 0) {
        let lo = &data[8..12];
        let hi = &data[12..16];
        let endian = if hi.iter().all(|&b| b == 0) && lo.iter().any(|&b| b != 0) {
            Endian::Little
        } else if lo.iter().all(|&b| b == 0) && hi.iter().any(|&b| b != 0) {
            Endian::Big
        } else {
            return None;
        };
        let layout = Layout {
            width: Width::W64,
            endian,
        };
        return (layout.slot(data, 8) < 1 << 16).then_some(layout);
    }
    if data.len() >= 8 && data[..4].iter().all(|&b| b == 0) {
        for endian in [Endian::Little, Endian::Big] {
            let layout = Layout {
                width: Width::W32,
                endian,
            };
            if (1..1 << 16).contains(&layout.slot(data, 4)) {
                return Some(layout);
            }
        }
    }
    None
}

/// True when `data` starts like a gperftools CPU profile.
pub fn sniff(data: &[u8]) -> bool {
    detect(data).is_some()
}

/// A record found in the file: where its PCs start, how many, its count.
#[derive(Clone, Copy)]
struct RecordRef {
    pcs: usize,
    n: u32,
    count: u64,
}

/// A distinct stack: its PC bytes, their hash and the summed count.
#[derive(Clone, Copy)]
struct DistinctStack<'a> {
    pcs: &'a [u8],
    hash: u64,
    count: u64,
}

/// Adds `d` to the distinct stacks `out`, indexed by `table` (which holds
/// indexes into `out`: 4 bytes a stack, where a map keyed by the stack took
/// 32): summed into an equal one, else appended.
fn add_distinct<'a>(
    table: &mut HashTable<u32>,
    out: &mut Vec<DistinctStack<'a>>,
    d: DistinctStack<'a>,
) {
    let same = |&i: &u32| {
        let x = &out[i as usize];
        x.hash == d.hash && x.pcs == d.pcs
    };
    match table.find(d.hash, same) {
        Some(&i) => {
            let x = &mut out[i as usize];
            x.count = x.count.saturating_add(d.count);
        }
        None => {
            table.insert_unique(d.hash, out.len() as u32, |&i| out[i as usize].hash);
            out.push(d);
        }
    }
}

/// Contiguous chunks of `n` items for the worker threads, in order.
fn chunks(n: usize) -> Vec<std::ops::Range<usize>> {
    let parts = if n < 4096 {
        1
    } else {
        rayon::current_num_threads().max(1) * 4
    };
    let size = n.div_ceil(parts).max(1);
    (0..n).step_by(size).map(|a| a..(a + size).min(n)).collect()
}

/// Sums records with identical stacks, keeping the order of first
/// appearance. Hashing and chunk-local merging run in parallel.
fn distinct_stacks<'a>(
    data: &'a [u8],
    layout: Layout,
    records: &[RecordRef],
    release: fn(&[u8]),
) -> Vec<DistinctStack<'a>> {
    let s = layout.slot_size();
    let per_chunk: Vec<Vec<DistinctStack<'a>>> = chunks(records.len())
        .into_par_iter()
        .map(|range| {
            let mut table: HashTable<u32> = HashTable::new();
            let mut out: Vec<DistinctStack<'a>> = Vec::new();
            let start = records[range.start].pcs;
            let last = &records[range.end - 1];
            let end = last.pcs + last.n as usize * s;
            for r in &records[range] {
                let pcs = &data[r.pcs..r.pcs + r.n as usize * s];
                let mut h = rustc_hash::FxHasher::default();
                std::hash::Hasher::write(&mut h, pcs);
                let hash = std::hash::Hasher::finish(&h);
                let d = DistinctStack {
                    pcs,
                    hash,
                    count: r.count,
                };
                add_distinct(&mut table, &mut out, d);
            }
            release(&data[start..end]);
            out
        })
        .collect();
    if per_chunk.len() == 1 {
        return per_chunk.into_iter().next().unwrap_or_default();
    }
    let total: usize = per_chunk.iter().map(Vec::len).sum();
    let mut table: HashTable<u32> = HashTable::with_capacity(total);
    let mut all: Vec<DistinctStack<'a>> = Vec::with_capacity(total);
    for chunk in per_chunk {
        for d in chunk {
            add_distinct(&mut table, &mut all, d);
        }
    }
    all
}

/// The distinct (caller-adjusted) addresses in order of first appearance,
/// and each stack as a sample of location ids (indexes into that order).
/// Each chunk interns its addresses locally in parallel; the chunks are
/// then joined in order, which gives the sequential first-appearance order.
fn intern_locations(
    data: &[u8],
    layout: Layout,
    stacks: &[DistinctStack<'_>],
    period_ns: i64,
    release: fn(&[u8]),
    caller_adjust: u64,
) -> (Vec<u64>, Vec<Sample>) {
    let s = layout.slot_size();
    struct Local {
        addresses: Vec<u64>,
        stacks: Vec<(Vec<LocationId>, u64)>,
    }
    let ranges = chunks(stacks.len());
    let locals: Vec<Local> = ranges
        .into_par_iter()
        .map(|range| {
            let mut ids: FxHashMap<u64, LocationId> = FxHashMap::default();
            let mut local = Local {
                addresses: Vec::new(),
                stacks: Vec::with_capacity(range.len()),
            };
            for d in &stacks[range.clone()] {
                let n = d.pcs.len() / s;
                let mut locations = Vec::with_capacity(n);
                for i in 0..n {
                    let pc = layout.slot(d.pcs, i * s);
                    let address = if i == 0 {
                        pc
                    } else {
                        pc.wrapping_sub(caller_adjust)
                    };
                    let next = LocationId::from_index(local.addresses.len());
                    let id = *ids.entry(address).or_insert_with(|| {
                        local.addresses.push(address);
                        next
                    });
                    locations.push(id);
                }
                local.stacks.push((locations, d.count));
            }
            // The chunk's stacks are first occurrences, mostly in one region
            // of the input: let that region go.
            let offset = |pcs: &[u8]| pcs.as_ptr() as usize - data.as_ptr() as usize;
            let chunk = &stacks[range];
            let start = chunk.iter().map(|d| offset(d.pcs)).min();
            let end = chunk.iter().map(|d| offset(d.pcs) + d.pcs.len()).max();
            if let (Some(start), Some(end)) = (start, end) {
                release(&data[start..end]);
            }
            local
        })
        .collect();
    let mut global: FxHashMap<u64, LocationId> = FxHashMap::default();
    let mut addresses: Vec<u64> = Vec::new();
    let remaps: Vec<Vec<LocationId>> = locals
        .iter()
        .map(|local| {
            local
                .addresses
                .iter()
                .map(|&a| {
                    *global.entry(a).or_insert_with(|| {
                        addresses.push(a);
                        LocationId::from_index(addresses.len() - 1)
                    })
                })
                .collect()
        })
        .collect();
    let samples = locals
        .into_par_iter()
        .zip(remaps)
        .flat_map_iter(|(local, remap)| {
            local.stacks.into_iter().map(move |(mut locations, count)| {
                for l in &mut locations {
                    *l = remap[l.index()];
                }
                let count = count.min(i64::MAX as u64) as i64;
                Sample {
                    locations,
                    values: vec![count, count.saturating_mul(period_ns)],
                    labels: Vec::new(),
                }
            })
        })
        .collect();
    (addresses, samples)
}

/// Reads a gperftools CPU profile. Records with identical stacks are
/// summed; the mapped-object text becomes the mappings.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    read_with(data, None)
}

/// [`read`], calling `release` with the parts of `data` it is done with
/// for now (see [`crate::ReadOptions::release`]).
pub fn read_with(data: &[u8], release: Option<fn(&[u8])>) -> Result<Profile, ParseError> {
    read_records(data, release, Records::ReturnAddresses)
}

/// Reads the profile part of a symbolized raw profile (see
/// [`write_adjusted`]): callers' addresses are taken as they are (already
/// adjusted by whoever wrote them), and the trailer may be missing (perl
/// pprof `--raw` writes none).
pub fn read_adjusted(data: &[u8]) -> Result<Profile, ParseError> {
    read_records(data, None, Records::Adjusted)
}

/// How the PCs of callers are stored in a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Records {
    /// Return addresses, as the profiler records them.
    ReturnAddresses,
    /// Return addresses minus one, as a symbolized raw profile has them.
    Adjusted,
}

fn read_records(
    data: &[u8],
    release: Option<fn(&[u8])>,
    kind: Records,
) -> Result<Profile, ParseError> {
    let layout = detect(data).ok_or_else(|| {
        let msg = if data.is_empty() {
            "empty file: expected a gperftools CPU profile header".to_string()
        } else if data.len() < 16 && data.iter().all(|&b| b == 0) {
            format!(
                "truncated header: {} bytes, expected at least 20",
                data.len()
            )
        } else {
            "expected a header starting with slots 0 and 3 (header count 0, header words 3)"
                .to_string()
        };
        ParseError::new(FORMAT, 0, msg)
    })?;
    let s = layout.slot_size();
    let err = |slot_offset: usize, msg: String| ParseError::new(FORMAT, slot_offset as u64, msg);
    let need = |at: usize, what: &str| -> Result<(), ParseError> {
        if at + s > data.len() {
            Err(err(
                at,
                format!("file ends at byte {}: expected {what}", data.len()),
            ))
        } else {
            Ok(())
        }
    };

    // Header: count, words, version, period, padding (and any extra words).
    need(s, "the header words slot")?;
    let header_words = layout.slot(data, s);
    if header_words < 3 {
        return Err(err(
            s,
            format!("header words slot is {header_words}, expected at least 3"),
        ));
    }
    need(2 * s, "the format version slot")?;
    let version = layout.slot(data, 2 * s);
    if version != 0 {
        return Err(err(2 * s, format!("format version {version}, expected 0")));
    }
    need(3 * s, "the sampling period slot")?;
    let period_us = layout.slot(data, 3 * s);
    if period_us == 0 || period_us > i64::MAX as u64 / 1000 {
        return Err(err(
            3 * s,
            format!("sampling period {period_us} µs, expected a positive number"),
        ));
    }
    let records_start = (2 + header_words as usize) * s;
    need(records_start - s, "the end of the header")?;

    // Records, until the trailer (0, 1, 0): a sequential pass that only
    // finds and checks the records; the PCs are read in parallel below.
    let mut pos = records_start;
    let mut records: Vec<RecordRef> = Vec::new();
    loop {
        if kind == Records::Adjusted && pos == data.len() {
            break;
        }
        if pos + s > data.len() {
            return Err(err(
                pos,
                "file ends before the trailer: expected a record or the trailer (0, 1, 0)".into(),
            ));
        }
        let count = layout.slot(data, pos);
        need(pos + s, "the PC count of a record")?;
        let n = layout.slot(data, pos + s);
        if count == 0 && n == 1 {
            need(pos + 2 * s, "the trailer's 0 PC")?;
            let pc = layout.slot(data, pos + 2 * s);
            if pc == 0 {
                pos += 3 * s;
                break;
            }
        }
        if n == 0 {
            return Err(err(
                pos + s,
                "record with 0 PCs: expected at least 1 PC".into(),
            ));
        }
        let remaining = (data.len() - pos) / s - 2;
        if n > remaining as u64 {
            return Err(err(
                pos + s,
                format!("record claims {n} PCs but only {remaining} slots remain in the file"),
            ));
        }
        if count == 0 {
            return Err(err(
                pos,
                "record with sample count 0: expected at least 1".into(),
            ));
        }
        if layout.slot(data, pos + 2 * s) == 0 {
            return Err(err(
                pos + 2 * s,
                "record whose leaf PC is 0: expected a code address".into(),
            ));
        }
        records.push(RecordRef {
            pcs: pos + 2 * s,
            n: n as u32,
            count,
        });
        pos += (2 + n as usize) * s;
    }

    // Distinct stacks are counted in u32s.
    if u32::try_from(records.len()).is_err() {
        return Err(err(
            records_start,
            format!("{} records: expected at most {}", records.len(), u32::MAX),
        ));
    }
    let mut builder = ProfileBuilder::new(cpu_sample_types());
    builder.profile.mappings = parse_mapped_objects(data, pos)?;
    builder.profile.sort_mappings();
    let period_ns = period_us as i64 * 1000;
    builder.profile.period_type = ValueType::new("cpu", "nanoseconds");
    builder.profile.period = period_ns;
    builder.profile.default_sample_type = "samples".into();
    let release = release.unwrap_or(|_| ());
    // The scan touched every record page: let them go until each chunk
    // reads its part again.
    release(&data[records_start..pos]);
    let stacks = distinct_stacks(data, layout, &records, release);
    drop(records);
    let caller_adjust = match kind {
        Records::ReturnAddresses => 1,
        Records::Adjusted => 0,
    };
    let (addresses, samples) =
        intern_locations(data, layout, &stacks, period_ns, release, caller_adjust);
    drop(stacks);
    for address in addresses {
        builder.location_at(address);
    }
    builder.profile.samples = samples;
    Ok(builder.profile)
}

/// The files of the executable mappings listed at the end of a gperftools
/// CPU profile, with their build ids (empty: the list has none), found
/// without reading the records: the list is the text after the binary
/// part's last zero byte. For reading their debug information while the
/// records are read. Empty when `data` is not such a profile.
pub fn mapped_files(data: &[u8]) -> Vec<(String, String)> {
    if detect(data).is_none() {
        return Vec::new();
    }
    let Some(end_of_records) = data.iter().rposition(|&b| b == 0) else {
        return Vec::new();
    };
    let mappings = parse_mapped_objects(data, end_of_records + 1).unwrap_or_default();
    let mut files: Vec<(String, String)> = mappings
        .into_iter()
        .filter(|m| m.is_executable() && !m.path.is_empty())
        .map(|m| (m.path, m.build_id))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Parses the text list of mapped objects that follows the trailer.
fn parse_mapped_objects(data: &[u8], start: usize) -> Result<Vec<Mapping>, ParseError> {
    let text = &data[start..];
    if let Some(bad) = text
        .iter()
        .position(|&b| b == 0 || (b < 0x20 && b != b'\n' && b != b'\r' && b != b'\t') || b == 0x7f)
    {
        return Err(ParseError::new(
            FORMAT,
            (start + bad) as u64,
            format!(
                "byte 0x{:02x} in the list of mapped objects: expected text lines",
                text[bad]
            ),
        ));
    }
    let text = String::from_utf8_lossy(text);
    Ok(crate::legacy::parse_memory_map(
        text.lines().map(|l| l.trim_end_matches('\r')),
    ))
}

/// Where the unfinished last line of the list of mapped objects starts,
/// when the file (read successfully by [`read`]) was cut inside that list:
/// every line a profiler writes ends with a newline, and the binary part
/// ends with the trailer's zero slot, so a file ending in anything else
/// lost the rest of its list (mappings missing: their addresses cannot be
/// symbolized from their files). None for a complete file.
pub fn truncated_maps_at(data: &[u8]) -> Option<u64> {
    match data.last() {
        None | Some(b'\n') | Some(0) => None,
        Some(_) => {
            let start = data
                .iter()
                .rposition(|&b| b == b'\n' || b == 0)
                .map_or(0, |i| i + 1);
            Some(start as u64)
        }
    }
}

/// Parses one `/proc/self/maps` line:
/// `start-end perms offset dev inode [path]`. Returns None for anything
/// else (such lines are ignored, as the format asks).
pub fn parse_maps_line(line: &str) -> Option<Mapping> {
    let (range, rest) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let limit = u64::from_str_radix(end, 16).ok()?;
    if limit < start {
        return None;
    }
    let mut fields = rest.trim_start().splitn(4, ' ');
    let perms = fields.next()?;
    if perms.len() != 4 || !perms.bytes().all(|b| b"rwxps-".contains(&b)) {
        return None;
    }
    let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
    let dev = fields.next()?;
    if !dev.contains(':') {
        return None;
    }
    let rest = fields.next().unwrap_or("").trim_start();
    let (inode, path) = match rest.split_once(' ') {
        Some((inode, path)) => (inode, path.trim()),
        None => (rest, ""),
    };
    if !inode.is_empty() && !inode.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Some(Mapping {
        start,
        limit,
        offset,
        path: path.to_string(),
        perms: perms.to_string(),
        ..Mapping::default()
    })
}

/// Parses one line of a profile's list of mapped objects in any layout
/// pprof's legacy parser accepts: `/proc/self/maps` lines
/// ([`parse_maps_line`]), the same without permissions
/// (`start-end offset dev inode [path]`), and the brief form
/// `[0x]start-[0x]end[:] [perms] [path] [(@offset)] [build id]` (the range
/// may also be separated by spaces). Returns None for anything else.
pub fn parse_mapping_line(line: &str) -> Option<Mapping> {
    if let Some(m) = parse_maps_line(line) {
        return Some(m);
    }
    let hex_prefixed = |s: &str| -> Option<u64> {
        let digits = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .unwrap_or(s);
        if digits.is_empty() || digits.len() > 16 {
            return None;
        }
        u64::from_str_radix(digits, 16).ok()
    };
    // The range: `start-end`, `start - end`, `start end`, with an
    // optional `:` after it.
    let line = line.trim();
    let split_hex = |s: &str| -> (usize, usize) {
        let prefix = if s.starts_with("0x") || s.starts_with("0X") {
            2
        } else {
            0
        };
        let digits = s[prefix..]
            .bytes()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        (prefix, prefix + digits)
    };
    let (p, end) = split_hex(line);
    if end == p {
        return None;
    }
    let start = hex_prefixed(&line[..end])?;
    let mut rest = &line[end..];
    let trimmed = rest.trim_start();
    let separated = trimmed.len() != rest.len();
    rest = match trimmed.strip_prefix('-') {
        Some(after) => after.trim_start(),
        None if separated => trimmed,
        None => return None,
    };
    let (p, end) = split_hex(rest);
    if end == p {
        return None;
    }
    let limit = hex_prefixed(&rest[..end])?;
    rest = &rest[end..];
    rest = rest.strip_prefix(':').unwrap_or(rest);
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    if limit < start {
        return None;
    }
    let mut mapping = Mapping {
        start,
        limit,
        ..Mapping::default()
    };
    let mut rest = rest.trim_start();
    // Optional permissions.
    if let Some((word, after)) = rest.split_once(char::is_whitespace).or(Some((rest, ""))) {
        if !word.is_empty()
            && word.len() <= 5
            && word.bytes().all(|b| b"-rwxps".contains(&b))
            && word.bytes().any(|b| b != b'-')
        {
            mapping.perms = word.to_string();
            rest = after.trim_start();
        }
    }
    // `offset dev inode [path]`, as in /proc/self/maps.
    let words: Vec<&str> = rest.splitn(4, char::is_whitespace).collect();
    if words.len() >= 3
        && words[0].bytes().all(|b| b.is_ascii_hexdigit())
        && words[1].split_once(':').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_hexdigit())
                && b.bytes().all(|c| c.is_ascii_hexdigit())
        })
        && !words[2].is_empty()
        && words[2].bytes().all(|b| b.is_ascii_digit())
    {
        mapping.offset = u64::from_str_radix(words[0], 16).ok()?;
        let path = words.get(3).map_or("", |p| p.trim());
        mapping.path = path.strip_suffix(" (deleted)").unwrap_or(path).to_string();
        return Some(mapping);
    }
    // The brief form: `[path] [(@offset)] [build id]`.
    let mut words = rest.split_whitespace().peekable();
    if let Some(word) = words.peek() {
        if !word.starts_with("(@") {
            mapping.path = word.to_string();
            words.next();
        }
    }
    // A deleted file keeps its path (`/foo/bin (deleted)` is `/foo/bin`).
    if words.peek() == Some(&"(deleted)") {
        words.next();
    }
    if let Some(word) = words.peek() {
        if let Some(offset) = word.strip_prefix("(@").and_then(|w| w.strip_suffix(')')) {
            mapping.offset = hex_prefixed(offset)?;
            words.next();
        }
    }
    if let Some(word) = words.next() {
        if !word.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        mapping.build_id = word.to_ascii_lowercase();
    }
    if words.next().is_some() {
        return None;
    }
    Some(mapping)
}

/// Writes `profile` as a gperftools CPU profile in `layout`.
///
/// The count of a sample is its `samples` value if the profile has one,
/// else its first value divided by the period. Samples with a count of 0
/// or less cannot be represented and are skipped; so are empty stacks.
pub fn write_with_layout(profile: &Profile, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    write_records(profile, layout, Records::ReturnAddresses, out)
}

/// Writes `profile`'s samples as gperftools records with the callers'
/// addresses as the model has them (return address minus one) and no
/// list of mapped objects: the profile part of a symbolized raw profile,
/// whose symbols are keyed by those addresses. [`read_adjusted`] reads it.
pub fn write_adjusted(profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
    write_records(profile, Layout::native(), Records::Adjusted, out)
}

fn write_records(
    profile: &Profile,
    layout: Layout,
    kind: Records,
    out: &mut dyn Write,
) -> io::Result<()> {
    let period_us = period_micros(profile);
    let mut buf: Vec<u8> = Vec::with_capacity(64 + profile.samples.len() * 16 * layout.slot_size());
    for slot in [0, 3, 0, period_us, 0] {
        layout.put(&mut buf, slot);
    }
    let count_index = profile.sample_index("samples");
    let value_index = profile.default_sample_index();
    for sample in &profile.samples {
        if sample.locations.is_empty() {
            continue;
        }
        let count = match count_index {
            Some(i) => sample.values.get(i).copied().unwrap_or(0),
            None => {
                let v = sample.values.get(value_index).copied().unwrap_or(0);
                let unit_period = profile.period.max(1);
                v / unit_period
            }
        };
        if count <= 0 {
            continue;
        }
        layout.put(&mut buf, count as u64);
        layout.put(&mut buf, sample.locations.len() as u64);
        for (i, &loc) in sample.locations.iter().enumerate() {
            let address = profile.location(loc).address;
            let pc = if i == 0 || kind == Records::Adjusted {
                address
            } else {
                address.wrapping_add(1)
            };
            if pc == 0 && i == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a sample's leaf location has no address; the gperftools format needs one",
                ));
            }
            layout.put(&mut buf, pc);
        }
        if buf.len() > 1 << 20 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    for slot in [0, 1, 0] {
        layout.put(&mut buf, slot);
    }
    out.write_all(&buf)?;
    if kind == Records::Adjusted {
        return Ok(());
    }
    let mut text = String::new();
    for m in &profile.mappings {
        text.push_str(&format_maps_line(m));
        text.push('\n');
        let line = m.is_executable().then(|| {
            build_id_line(
                m.limit,
                m.offset + (m.limit - m.start),
                &m.path,
                &m.build_id,
            )
        });
        if let Some(line) = line.flatten() {
            text.push_str(&line);
            text.push('\n');
        }
    }
    out.write_all(text.as_bytes())
}

/// Writes `profile` as a native (64-bit little-endian on x86-64) gperftools
/// CPU profile.
pub fn write(profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
    write_with_layout(profile, Layout::native(), out)
}

/// The sampling period in microseconds, from the profile's period and its
/// unit (nanoseconds, microseconds, ...); 10000 (100 Hz) if unknown.
fn period_micros(profile: &Profile) -> u64 {
    let p = profile.period.max(0) as u64;
    let us = match profile.period_type.unit.as_str() {
        "nanoseconds" => p / 1000,
        "microseconds" => p,
        "milliseconds" => p * 1000,
        "seconds" => p * 1_000_000,
        _ => 0,
    };
    if us == 0 {
        10_000
    } else {
        us
    }
}

/// The line that carries the build id of the mapping of `path` ending at
/// `limit` (its file offset there: `offset_at_limit`), written after that
/// mapping's `/proc/self/maps` line; None when there is no id to give or
/// the path would not survive the line's syntax.
///
/// No single line gives both analysers a build id: perl pprof reads a
/// mapping only from a complete maps line that *ends* with its path (any
/// word after the path makes it skip the mapping), and Go pprof's
/// `parseMappingEntry` reads a build id only from its brief form
/// `START-END PERMS PATH (@OFFSET) BUILDID`. So the id goes in a brief
/// line of its own, empty (`LIMIT-LIMIT`) and continuing the mapping:
/// perl pprof ignores it (not a maps line), Go pprof merges it into the
/// mapping before (same file, adjacent, offsets continuing) and keeps its
/// build id, and this crate's reader does the same.
pub fn build_id_line(
    limit: u64,
    offset_at_limit: u64,
    path: &str,
    build_id: &str,
) -> Option<String> {
    let usable = !build_id.is_empty()
        && build_id.bytes().all(|b| b.is_ascii_hexdigit())
        && path.starts_with('/')
        && !path.contains(char::is_whitespace);
    usable.then(|| format!("{limit:08x}-{limit:08x} r-xp {path} (@{offset_at_limit:x}) {build_id}"))
}

/// Formats a mapping as a `/proc/self/maps` line.
pub fn format_maps_line(m: &Mapping) -> String {
    let perms = if m.perms.len() == 4 {
        m.perms.as_str()
    } else {
        "r-xp"
    };
    if m.path.is_empty() {
        format!(
            "{:08x}-{:08x} {perms} {:08x} 00:00 0",
            m.start, m.limit, m.offset
        )
    } else {
        format!(
            "{:08x}-{:08x} {perms} {:08x} 00:00 0          {}",
            m.start, m.limit, m.offset, m.path
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots64(slots: &[u64]) -> Vec<u8> {
        slots.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[test]
    fn reads_the_spec_example_record() {
        let mut data = slots64(&[0, 3, 0, 10000, 0, 5, 3, 0xa0000, 0xc0000, 0xe0000, 0, 1, 0]);
        data.extend_from_slice(b"build=/bin/x\n0000a000-000f0000 r-xp 00000000 03:01 12 $build\n");
        let p = read(&data).unwrap();
        assert_eq!(p.samples.len(), 1);
        assert_eq!(p.samples[0].values, vec![5, 5 * 10_000_000]);
        let addrs: Vec<u64> = p.samples[0]
            .locations
            .iter()
            .map(|&l| p.location(l).address)
            .collect();
        assert_eq!(addrs, vec![0xa0000, 0xbffff, 0xdffff]);
        assert_eq!(p.mappings.len(), 1);
        assert_eq!(p.mappings[0].path, "/bin/x");
        assert_eq!(p.period, 10_000_000);
    }

    #[test]
    fn a_build_id_line_gives_the_mapping_before_its_build_id() {
        let mut data = slots64(&[0, 3, 0, 10000, 0, 1, 1, 0xa0010, 0, 1, 0]);
        let line = build_id_line(0xb0000, 0x11000, "/bin/x", "ABcd12").unwrap();
        assert_eq!(line, "000b0000-000b0000 r-xp /bin/x (@11000) ABcd12");
        data.extend_from_slice(
            format!("000a0000-000b0000 r-xp 00001000 03:01 12 /bin/x\n{line}\n00c00000-00c01000 r-xp 00000000 03:01 13 /lib/y.so\n").as_bytes(),
        );
        let p = read(&data).unwrap();
        assert_eq!(p.mappings.len(), 2, "{:?}", p.mappings);
        assert_eq!(p.mappings[0].build_id, "abcd12");
        assert_eq!(
            (p.mappings[0].start, p.mappings[0].limit),
            (0xa0000, 0xb0000)
        );
        assert_eq!(p.mappings[1].build_id, "");
        // Written back by convert: the same line after the mapping.
        let mut out = Vec::new();
        write(&p, &mut out).unwrap();
        assert!(String::from_utf8_lossy(&out).contains(&line.to_ascii_lowercase()));
        assert_eq!(read(&out).unwrap().mappings[0].build_id, "abcd12");
        // Nothing to write without an id, or for a path with a blank.
        assert_eq!(build_id_line(1, 2, "/bin/x", ""), None);
        assert_eq!(build_id_line(1, 2, "/a b/x", "ab"), None);
    }

    #[test]
    fn mapped_files_are_the_executable_mappings_read_without_the_records() {
        let mut data = slots64(&[0, 3, 0, 10000, 0, 1, 1, 0xa0010, 0, 1, 0]);
        let line = build_id_line(0xb0000, 0x11000, "/bin/x", "ABcd12").unwrap();
        data.extend_from_slice(
            format!("000a0000-000b0000 r-xp 00001000 03:01 12 /bin/x\n{line}\n00c00000-00c01000 rw-p 00000000 03:01 13 /lib/data\n00d00000-00d01000 r-xp 00000000 03:01 13 /lib/y.so\n00e00000-00e01000 r-xp 00000000 00:00 0\n").as_bytes(),
        );
        assert_eq!(
            mapped_files(&data),
            [
                ("/bin/x".to_string(), "abcd12".to_string()),
                ("/lib/y.so".to_string(), String::new())
            ]
        );
        // The same files as the reader's executable mappings.
        let read: Vec<(String, String)> = read(&data)
            .unwrap()
            .mappings
            .into_iter()
            .filter(|m| m.is_executable() && !m.path.is_empty())
            .map(|m| (m.path, m.build_id))
            .collect();
        assert_eq!(mapped_files(&data), read);
        assert!(mapped_files(b"not a profile").is_empty());
        assert!(mapped_files(&slots64(&[0, 3, 0, 10000, 0, 0, 1, 0])).is_empty());
    }

    #[test]
    fn a_list_of_mapped_objects_cut_in_a_line_is_truncated() {
        let mut data = slots64(&[0, 3, 0, 10000, 0, 1, 1, 0xa0010, 0, 1, 0]);
        assert_eq!(truncated_maps_at(&data), None, "no list at all");
        let text = b"000a0000-000b0000 r-xp 00001000 03:01 12 /bin/x\n7f00-7f10 r-xp 0000";
        data.extend_from_slice(text);
        let cut = data.len() - b"7f00-7f10 r-xp 0000".len();
        assert!(read(&data).is_ok());
        assert_eq!(truncated_maps_at(&data), Some(cut as u64));
        data.truncate(cut);
        assert_eq!(truncated_maps_at(&data), None, "ends with a whole line");
    }

    #[test]
    fn sums_identical_records() {
        let data = slots64(&[
            0, 3, 0, 1000, 0, 2, 2, 10, 20, 3, 2, 10, 20, 1, 1, 10, 0, 1, 0,
        ]);
        let p = read(&data).unwrap();
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.samples[0].values[0], 5);
        assert_eq!(p.samples[1].values[0], 1);
    }

    #[test]
    fn detects_all_four_layouts() {
        for width in [Width::W32, Width::W64] {
            for endian in [Endian::Little, Endian::Big] {
                let layout = Layout { width, endian };
                let mut buf = Vec::new();
                for s in [0u64, 3, 0, 10000, 0, 1, 1, 0x1234, 0, 1, 0] {
                    layout.put(&mut buf, s);
                }
                assert_eq!(detect(&buf), Some(layout));
                let p = read(&buf).unwrap();
                assert_eq!(p.location(p.samples[0].locations[0]).address, 0x1234);
            }
        }
    }

    #[test]
    fn maps_lines_with_and_without_path_and_deleted() {
        let m =
            parse_maps_line("40000000-40015000 r-xp 00001000 03:01 12845071   /lib/ld-2.3.2.so")
                .unwrap();
        assert_eq!(
            (m.start, m.limit, m.offset),
            (0x40000000, 0x40015000, 0x1000)
        );
        assert_eq!(m.path, "/lib/ld-2.3.2.so");
        let m = parse_maps_line("7f00-7f10 rw-p 00000000 00:00 0").unwrap();
        assert_eq!(m.path, "");
        let m = parse_maps_line("7f00-7f10 r-xp 00000000 08:01 99 /tmp/a b (deleted)").unwrap();
        assert_eq!(m.path, "/tmp/a b");
        assert!(parse_maps_line("hello world").is_none());
        assert!(parse_maps_line("PROFILE: interrupts/evictions/bytes = 1/2/3").is_none());
    }

    #[test]
    fn mapping_lines_in_pprof_s_other_layouts() {
        let m = parse_mapping_line("0x400000-0x401000: /bin/prog (@1000)").unwrap();
        assert_eq!((m.start, m.limit, m.offset), (0x400000, 0x401000, 0x1000));
        assert_eq!((m.path.as_str(), m.perms.as_str()), ("/bin/prog", ""));
        let m = parse_mapping_line("400000-401000 /bin/prog").unwrap();
        assert_eq!((m.start, m.limit, m.offset), (0x400000, 0x401000, 0));
        assert_eq!(m.path, "/bin/prog");
        let m = parse_mapping_line("0x400000 0x401000 r-xp /bin/prog (@0x2000) abc123").unwrap();
        assert_eq!((m.offset, m.perms.as_str()), (0x2000, "r-xp"));
        assert_eq!(m.build_id, "abc123");
        let m = parse_mapping_line("7f00-7f10 00001000 08:01 99 /lib/x.so").unwrap();
        assert_eq!((m.offset, m.path.as_str()), (0x1000, "/lib/x.so"));
        let m = parse_mapping_line("7f00-7f10 r-xp 00001000 08:01 99 /lib/x.so").unwrap();
        assert_eq!((m.perms.as_str(), m.path.as_str()), ("r-xp", "/lib/x.so"));
        assert!(parse_mapping_line("hello world").is_none());
        assert!(parse_mapping_line("build=/x").is_none());
        assert!(parse_mapping_line("PROFILE: interrupts/evictions/bytes = 1/2/3").is_none());
        assert!(parse_mapping_line("10-20 /a b c").is_none());
        assert!(parse_mapping_line("20-10 /a").is_none());
        let m = parse_mapping_line("  02e00000-02e8a000: /foo/bin (deleted)").unwrap();
        assert_eq!(
            (m.start, m.limit, m.path.as_str()),
            (0x2e00000, 0x2e8a000, "/foo/bin")
        );
    }

    #[test]
    fn errors_name_the_offset() {
        let e = read(&[]).unwrap_err();
        assert_eq!(e.offset, 0);
        let data = slots64(&[0, 3, 0, 100, 0, 1, 0, 0, 1, 0]);
        let e = read(&data).unwrap_err();
        assert_eq!(e.offset, 48);
        assert!(e.message.contains("0 PCs"), "{e}");
        let data = slots64(&[0, 3, 0, 100, 0, 1, 1000, 5]);
        let e = read(&data).unwrap_err();
        assert_eq!(e.offset, 48);
        let data = slots64(&[0, 3, 0, 100, 0, 1, 1, 5]);
        let e = read(&data).unwrap_err();
        assert!(e.message.contains("trailer"), "{e}");
        let data = slots64(&[0, 3, 1, 100, 0]);
        let e = read(&data).unwrap_err();
        assert_eq!(e.offset, 16);
        let data = slots64(&[0, 3, 0, 0, 0]);
        assert_eq!(read(&data).unwrap_err().offset, 24);
    }

    #[test]
    fn garbage_in_the_text_is_an_error() {
        let mut data = slots64(&[0, 3, 0, 100, 0, 0, 1, 0]);
        data.extend_from_slice(b"ok line\n\x00\x01\x02");
        let e = read(&data).unwrap_err();
        assert_eq!(e.offset, 64 + 8);
    }

    #[test]
    fn round_trip_keeps_caller_adjustment() {
        let data = slots64(&[0, 3, 0, 1000, 0, 2, 3, 0x1000, 0x2001, 0x3001, 0, 1, 0]);
        let p = read(&data).unwrap();
        let mut out = Vec::new();
        write(&p, &mut out).unwrap();
        assert_eq!(&out[..], &data[..]);
    }

    #[test]
    fn parallel_chunks_give_the_sequential_result() {
        // Enough records for several chunks, with stacks repeating across
        // chunks; the expected model is computed the simple way.
        let mut slots = vec![0, 3, 0, 100, 0];
        let mut state = 12345u64;
        let mut rand = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut records = Vec::new();
        for _ in 0..20_000 {
            let depth = 1 + rand(5) as usize;
            let stack: Vec<u64> = (0..depth).map(|_| 0x1000 + rand(40) * 16).collect();
            let count = 1 + rand(3);
            slots.push(count);
            slots.push(depth as u64);
            slots.extend_from_slice(&stack);
            records.push((stack, count));
        }
        slots.extend_from_slice(&[0, 1, 0]);
        let p = read(&slots64(&slots)).unwrap();

        let mut order: Vec<Vec<u64>> = Vec::new();
        let mut counts: std::collections::HashMap<Vec<u64>, u64> = Default::default();
        for (stack, count) in &records {
            if !counts.contains_key(stack) {
                order.push(stack.clone());
            }
            *counts.entry(stack.clone()).or_default() += count;
        }
        let mut addresses: Vec<u64> = Vec::new();
        for stack in &order {
            for (i, pc) in stack.iter().enumerate() {
                let a = if i == 0 { *pc } else { pc - 1 };
                if !addresses.contains(&a) {
                    addresses.push(a);
                }
            }
        }
        let got: Vec<u64> = p.locations.iter().map(|l| l.address).collect();
        assert_eq!(got, addresses);
        assert_eq!(p.samples.len(), order.len());
        for (sample, stack) in p.samples.iter().zip(&order) {
            let pcs: Vec<u64> = sample
                .locations
                .iter()
                .enumerate()
                .map(|(i, &l)| p.location(l).address + (i > 0) as u64)
                .collect();
            assert_eq!(&pcs, stack);
            assert_eq!(sample.values[0] as u64, counts[stack]);
        }
    }
}
