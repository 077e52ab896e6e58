//! gprof's `gmon.out`: read, write, sum, and convert to the profile model.
//!
//! Three layouts are read (spec: "Profiling Data File Format",
//! `gprof-gmon-format.txt`, and the measured notes in the specs README):
//!
//! - the GNU format: the cookie `gmon`, a u32 version (0 or 1) and 12 spare
//!   bytes, then records, each a one-byte tag without length or padding:
//!   0 histogram (`low_pc, high_pc, hist_size u32, prof_rate u32,
//!   dimen[15], dimen_abbrev`, then `hist_size` u16 bins), 1 call arc
//!   (`from_pc, self_pc, count u32`), 2 basic-block counts
//!   (`n u32`, then `n` × `(address, count)` of pointer size);
//! - 4.4BSD: `lpc, hpc, ncnt i32, version 0x00051879, profrate, spare[3]`,
//!   the bins, then arcs `(from, self, count)` of pointer size to EOF;
//! - the old BSD format: `lpc, hpc, ncnt` (12 or 20 bytes: gprof reads no
//!   padding after `ncnt` on 64-bit targets), the bins, then arcs as above.
//!
//! None of them records the pointer width or byte order: they come from
//! the executable ([`crate::Target`]) when one is given, and are inferred
//! otherwise: every layout is tried and the parse must end exactly at the
//! end of the file.
//!
//! Several histogram records are combined as gprof does: the same range is
//! summed, disjoint ranges need the same scale, a partial overlap is an
//! error. Counts are summed in 64 bits, so sums past a u16 bin or a u32 arc
//! count are kept; the writer splits such counts over several records,
//! which every reader sums back.
//!
//! [`GmonFile`] is the native form (the gprof report reads it);
//! [`to_profile`] and [`from_profile`] convert to and from the generic
//! [`Profile`].

use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::model::{Profile, ProfileBuilder, ValueType};
use crate::Target;

const FORMAT: &str = "gmon.out";
/// The GNU format's cookie.
pub const MAGIC: &[u8; 4] = b"gmon";
/// The 4.4BSD header's version word.
pub const BSD44_VERSION: u32 = 0x0005_1879;
const GNU_HEADER: usize = 20;
const TAG_HISTOGRAM: u8 = 0;
const TAG_ARC: u8 = 1;
const TAG_BASIC_BLOCKS: u8 = 2;

/// Which of the three layouts a file was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmonKind {
    /// The GNU format with its `gmon` cookie.
    Gnu {
        /// The header's version word (0 or 1).
        version: u32,
    },
    /// The 4.4BSD format (version word 0x00051879).
    Bsd44,
    /// The old BSD format (no version word).
    OldBsd,
}

/// A histogram of sampled program counters over `[low_pc, high_pc)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    /// First address covered.
    pub low_pc: u64,
    /// One past the last address covered.
    pub high_pc: u64,
    /// Samples per second (`prof_rate`), e.g. 100.
    pub prof_rate: u32,
    /// What a bin counts after division by the rate, e.g. `seconds`
    /// (at most 15 bytes, one character per byte).
    pub dimension: String,
    /// One-character abbreviation of the dimension, e.g. `s`.
    pub dimension_abbrev: u8,
    /// The bin counts, summed over records of the same range.
    pub bins: Vec<u64>,
}

impl Histogram {
    /// gprof's `hist_scale`: 2-byte units per bin, fractional:
    /// `((high_pc - low_pc) / 2) / bins`.
    pub fn scale(&self) -> f64 {
        (self.high_pc.saturating_sub(self.low_pc) / 2) as f64 / self.bins.len().max(1) as f64
    }

    /// The 2-byte units bin `i` covers, `[low, high)`, as gprof computes
    /// them: `low_pc/2 + trunc(scale * i)` to `low_pc/2 + trunc(scale * (i+1))`.
    pub fn bin_units(&self, i: usize) -> (u64, u64) {
        let scale = self.scale();
        let base = self.low_pc / 2;
        (
            base + (scale * i as f64) as u64,
            base + (scale * (i + 1) as f64) as u64,
        )
    }

    /// The bin whose units contain the byte address `address`, if any.
    pub fn bin_of(&self, address: u64) -> Option<usize> {
        if address < self.low_pc || address >= self.high_pc || self.bins.is_empty() {
            return None;
        }
        let unit = address / 2;
        let scale = self.scale();
        let guess = if scale > 0.0 {
            (((unit - self.low_pc / 2) as f64) / scale) as usize
        } else {
            0
        };
        // The guess is off by at most one either way from float rounding.
        let lo = guess.saturating_sub(2);
        let hi = (guess + 3).min(self.bins.len());
        (lo..hi).find(|&i| {
            let (a, b) = self.bin_units(i);
            a <= unit && unit < b
        })
    }
}

/// A call-graph arc: `count` calls from the caller at `from_pc` to the
/// callee containing `self_pc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallArc {
    /// An address inside the caller (glibc stores the return address
    /// rounded down, so it is already inside the call site's function).
    pub from_pc: u64,
    /// An address inside the callee (its mcount call site).
    pub self_pc: u64,
    /// Number of calls, summed over records.
    pub count: u64,
}

/// An execution count of the basic block at `address`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BasicBlockCount {
    /// Any address in the block.
    pub address: u64,
    /// Times the block was executed, summed over records.
    pub count: u64,
}

/// A whole gmon.out file, records of the same kind combined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GmonFile {
    /// The layout it was read from.
    pub kind: GmonKind,
    /// Pointer width and byte order it was read with.
    pub target: Target,
    /// Histograms, in file order, same ranges summed.
    pub histograms: Vec<Histogram>,
    /// Arcs in order of first appearance, identical (from, self) pairs
    /// summed.
    pub arcs: Vec<CallArc>,
    /// Basic-block counts in order of first appearance, same addresses
    /// summed.
    pub basic_blocks: Vec<BasicBlockCount>,
}

impl GmonFile {
    /// An empty GNU-format file for `target`.
    pub fn new(target: Target) -> GmonFile {
        GmonFile {
            kind: GmonKind::Gnu { version: 1 },
            target,
            histograms: Vec::new(),
            arcs: Vec::new(),
            basic_blocks: Vec::new(),
        }
    }

    /// The profiling rate of the first histogram (gprof's `hz`), if any.
    pub fn prof_rate(&self) -> Option<u32> {
        self.histograms.first().map(|h| h.prof_rate)
    }

    /// Adds a histogram as gprof combines records: summed into one of the
    /// same range, or appended when disjoint from all with the same scale
    /// and dimension. Returns what is wrong otherwise.
    pub fn add_histogram(&mut self, h: Histogram) -> Result<(), String> {
        if let Some(first) = self.histograms.first() {
            if first.dimension != h.dimension || first.dimension_abbrev != h.dimension_abbrev {
                return Err(format!(
                    "histogram dimension '{}' ('{}') differs from the first histogram's '{}' ('{}')",
                    h.dimension,
                    h.dimension_abbrev as char,
                    first.dimension,
                    first.dimension_abbrev as char
                ));
            }
            if (first.scale() - h.scale()).abs() > 0.000001 {
                return Err(format!(
                    "histogram scale {:.6} differs from the first histogram's {:.6}",
                    h.scale(),
                    first.scale()
                ));
            }
        }
        if let Some(same) = self
            .histograms
            .iter_mut()
            .find(|e| e.low_pc == h.low_pc && e.high_pc == h.high_pc)
        {
            if same.bins.len() != h.bins.len() {
                return Err(format!(
                    "histogram of [{:#x}, {:#x}) has {} bins, the earlier one of the same range {}",
                    h.low_pc,
                    h.high_pc,
                    h.bins.len(),
                    same.bins.len()
                ));
            }
            for (a, b) in same.bins.iter_mut().zip(&h.bins) {
                *a = a.saturating_add(*b);
            }
            return Ok(());
        }
        if let Some(o) = self
            .histograms
            .iter()
            .find(|e| h.low_pc < e.high_pc && h.high_pc > e.low_pc)
        {
            return Err(format!(
                "histogram of [{:#x}, {:#x}) partially overlaps the one of [{:#x}, {:#x}): expected the same range or a disjoint one",
                h.low_pc, h.high_pc, o.low_pc, o.high_pc
            ));
        }
        self.histograms.push(h);
        Ok(())
    }

    /// Sums `other` into `self`, like `gprof -s`.
    pub fn merge(&mut self, other: GmonFile) -> Result<(), String> {
        for h in other.histograms {
            self.add_histogram(h)?;
        }
        let mut arcs = ArcTable::from(std::mem::take(&mut self.arcs));
        for a in other.arcs {
            arcs.add(a.from_pc, a.self_pc, a.count);
        }
        self.arcs = arcs.arcs;
        let mut bbs = BlockTable::from(std::mem::take(&mut self.basic_blocks));
        for b in other.basic_blocks {
            bbs.add(b.address, b.count);
        }
        self.basic_blocks = bbs.blocks;
        Ok(())
    }
}

/// Arcs in order of first appearance with duplicates summed.
#[derive(Default)]
struct ArcTable {
    arcs: Vec<CallArc>,
    index: FxHashMap<(u64, u64), usize>,
}

impl ArcTable {
    fn from(arcs: Vec<CallArc>) -> ArcTable {
        let mut t = ArcTable::default();
        for a in arcs {
            t.add(a.from_pc, a.self_pc, a.count);
        }
        t
    }

    fn add(&mut self, from_pc: u64, self_pc: u64, count: u64) {
        match self.index.get(&(from_pc, self_pc)) {
            Some(&i) => self.arcs[i].count = self.arcs[i].count.saturating_add(count),
            None => {
                self.index.insert((from_pc, self_pc), self.arcs.len());
                self.arcs.push(CallArc {
                    from_pc,
                    self_pc,
                    count,
                });
            }
        }
    }
}

/// Basic-block counts in order of first appearance with duplicates summed.
#[derive(Default)]
struct BlockTable {
    blocks: Vec<BasicBlockCount>,
    index: FxHashMap<u64, usize>,
}

impl BlockTable {
    fn from(blocks: Vec<BasicBlockCount>) -> BlockTable {
        let mut t = BlockTable::default();
        for b in blocks {
            t.add(b.address, b.count);
        }
        t
    }

    fn add(&mut self, address: u64, count: u64) {
        match self.index.get(&address) {
            Some(&i) => self.blocks[i].count = self.blocks[i].count.saturating_add(count),
            None => {
                self.index.insert(address, self.blocks.len());
                self.blocks.push(BasicBlockCount { address, count });
            }
        }
    }
}

/// Reads fields of one target layout, naming what was expected when the
/// data ends.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    target: Target,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ParseError> {
        if self.data.len() - self.pos < n {
            return Err(ParseError::new(
                FORMAT,
                self.pos as u64,
                format!(
                    "file ends at byte {}: expected {what} ({n} bytes)",
                    self.data.len()
                ),
            ));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u16(&mut self, what: &str) -> Result<u16, ParseError> {
        let b: [u8; 2] = self.take(2, what)?.try_into().unwrap();
        Ok(if self.target.big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    }

    fn u32(&mut self, what: &str) -> Result<u32, ParseError> {
        let b: [u8; 4] = self.take(4, what)?.try_into().unwrap();
        Ok(if self.target.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn pointer(&mut self, what: &str) -> Result<u64, ParseError> {
        if self.target.pointer_size == 8 {
            let b: [u8; 8] = self.take(8, what)?.try_into().unwrap();
            Ok(if self.target.big_endian {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            })
        } else {
            self.u32(what).map(u64::from)
        }
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn error(&self, at: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(FORMAT, at as u64, message)
    }
}

/// True when `data` starts with the GNU format's cookie.
pub fn sniff_gnu(data: &[u8]) -> bool {
    data.len() >= 4 && &data[..4] == MAGIC
}

/// True when `data` parses completely as a 4.4BSD or old BSD gmon.out
/// in some layout (these files have no cookie, so only a full parse can
/// tell).
pub fn sniff_bsd(data: &[u8], target: Option<Target>) -> bool {
    !sniff_gnu(data) && data.len() >= 12 && read_bsd(data, target).is_ok()
}

/// The layouts tried when no executable says which: the native one first.
fn candidate_targets(target: Option<Target>) -> Vec<Target> {
    match target {
        Some(t) => vec![t],
        None => vec![
            Target {
                pointer_size: 8,
                big_endian: false,
            },
            Target {
                pointer_size: 4,
                big_endian: false,
            },
            Target {
                pointer_size: 8,
                big_endian: true,
            },
            Target {
                pointer_size: 4,
                big_endian: true,
            },
        ],
    }
}

/// Reads a gmon.out in any of the three layouts. `target` is the
/// executable's pointer width and byte order when known; without it every
/// layout is tried and the one that parses to the exact end of the file is
/// taken.
pub fn read(data: &[u8], target: Option<Target>) -> Result<GmonFile, ParseError> {
    if data.is_empty() {
        return Err(ParseError::new(
            FORMAT,
            0,
            "empty file: expected a gmon.out header",
        ));
    }
    if sniff_gnu(data) {
        read_gnu(data, target)
    } else {
        read_bsd(data, target)
    }
}

/// Tries each candidate layout; the first full parse wins, else the error
/// of the attempt that got furthest.
fn first_layout(
    data: &[u8],
    targets: Vec<Target>,
    parse: impl Fn(&[u8], Target) -> Result<GmonFile, ParseError>,
) -> Result<GmonFile, ParseError> {
    let mut best: Option<ParseError> = None;
    for t in targets {
        match parse(data, t) {
            Ok(f) => return Ok(f),
            Err(e) => {
                if best.as_ref().is_none_or(|b| e.offset > b.offset) {
                    best = Some(e);
                }
            }
        }
    }
    Err(best.expect("at least one layout is tried"))
}

fn read_gnu(data: &[u8], target: Option<Target>) -> Result<GmonFile, ParseError> {
    if data.len() < GNU_HEADER {
        return Err(ParseError::new(
            FORMAT,
            data.len() as u64,
            format!(
                "file ends at byte {}: expected the 20-byte header (cookie, version, spare)",
                data.len()
            ),
        ));
    }
    let mut targets = candidate_targets(target);
    if target.is_none() {
        // The version word (0 or 1) tells the byte order unless it is 0.
        let le = u32::from_le_bytes(data[4..8].try_into().unwrap());
        let be = u32::from_be_bytes(data[4..8].try_into().unwrap());
        if le == 1 {
            targets.retain(|t| !t.big_endian);
        } else if be == 1 {
            targets.retain(|t| t.big_endian);
        }
    }
    first_layout(data, targets, parse_gnu)
}

fn parse_gnu(data: &[u8], target: Target) -> Result<GmonFile, ParseError> {
    let mut c = Cursor {
        data,
        pos: 4,
        target,
    };
    let version = c.u32("the version")?;
    if version > 1 {
        return Err(c.error(4, format!("version {version}: expected 0 or 1")));
    }
    c.take(12, "the spare bytes")?;
    let mut file = GmonFile::new(target);
    file.kind = GmonKind::Gnu { version };
    let mut arcs = ArcTable::default();
    let mut blocks = BlockTable::default();
    while c.remaining() > 0 {
        let record = c.pos;
        let tag = c.take(1, "a record tag")?[0];
        match tag {
            TAG_HISTOGRAM => {
                let low_pc = c.pointer("the histogram's low_pc")?;
                let high_pc = c.pointer("the histogram's high_pc")?;
                let size_at = c.pos;
                let n = c.u32("the histogram's bin count")? as usize;
                let prof_rate = c.u32("the histogram's prof_rate")?;
                let dimen = c.take(15, "the histogram's dimension")?;
                let abbrev = c.take(1, "the histogram's dimension abbreviation")?[0];
                if high_pc < low_pc {
                    return Err(c.error(
                        record + 1,
                        format!("histogram high_pc {high_pc:#x} below low_pc {low_pc:#x}"),
                    ));
                }
                if n == 0 {
                    return Err(c.error(size_at, "histogram with 0 bins: expected at least 1"));
                }
                if n > c.remaining() / 2 {
                    return Err(c.error(
                        c.pos,
                        format!(
                            "file ends at byte {}: expected {n} histogram bins ({} bytes), {} bytes remain",
                            data.len(),
                            2 * n,
                            c.remaining()
                        ),
                    ));
                }
                let mut bins = Vec::with_capacity(n);
                for _ in 0..n {
                    bins.push(u64::from(c.u16("a histogram bin")?));
                }
                let dimension = dimension_string(dimen);
                file.add_histogram(Histogram {
                    low_pc,
                    high_pc,
                    prof_rate,
                    dimension,
                    dimension_abbrev: abbrev,
                    bins,
                })
                .map_err(|m| c.error(record, m))?;
            }
            TAG_ARC => {
                let from_pc = c.pointer("the arc's from_pc")?;
                let self_pc = c.pointer("the arc's self_pc")?;
                let count = c.u32("the arc's count")?;
                arcs.add(from_pc, self_pc, u64::from(count));
            }
            TAG_BASIC_BLOCKS => {
                let n = c.u32("the basic-block record's count")? as usize;
                let entry = 2 * target.pointer_size as usize;
                if n > c.remaining() / entry {
                    return Err(c.error(
                        c.pos,
                        format!(
                            "file ends at byte {}: expected {n} basic-block counts ({} bytes), {} bytes remain",
                            data.len(),
                            n * entry,
                            c.remaining()
                        ),
                    ));
                }
                for _ in 0..n {
                    let address = c.pointer("a basic block's address")?;
                    let count = c.pointer("a basic block's count")?;
                    blocks.add(address, count);
                }
            }
            other => {
                return Err(c.error(
                    record,
                    format!(
                        "record tag {other}: expected 0 (histogram), 1 (call arc) or 2 (basic-block counts)"
                    ),
                ))
            }
        }
    }
    file.arcs = arcs.arcs;
    file.basic_blocks = blocks.blocks;
    Ok(file)
}

/// The dimension field: text up to the first NUL, each byte one character
/// (Latin-1), so any bytes survive a read and a write.
fn dimension_string(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    field[..end].iter().map(|&b| char::from(b)).collect()
}

/// The dimension's bytes: one per character (characters past U+00FF,
/// which no file holds, become `?`), at most 15.
fn dimension_bytes(dimension: &str) -> [u8; 15] {
    let mut out = [0u8; 15];
    for (o, c) in out.iter_mut().zip(dimension.chars()) {
        *o = u8::try_from(u32::from(c)).unwrap_or(b'?');
    }
    out
}

fn hex_bytes(s: &str) -> String {
    s.chars()
        .map(|c| format!("{:02x}", u32::from(c).min(0xff)))
        .collect()
}

fn unhex_bytes(s: &str) -> Option<String> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(s.get(i..i + 2)?, 16)
                .ok()
                .map(char::from)
        })
        .collect()
}

fn read_bsd(data: &[u8], target: Option<Target>) -> Result<GmonFile, ParseError> {
    first_layout(data, candidate_targets(target), parse_bsd)
}

fn parse_bsd(data: &[u8], target: Target) -> Result<GmonFile, ParseError> {
    let p = target.pointer_size as usize;
    let mut c = Cursor {
        data,
        pos: 0,
        target,
    };
    let low_pc = c.pointer("the header's low pc")?;
    let high_pc = c.pointer("the header's high pc")?;
    let ncnt_at = c.pos;
    let ncnt = c.u32("the header's byte count")? as usize;
    // 4.4BSD: a version word, the rate and 3 spare words follow; the old
    // format has none.
    let after_ncnt = c.pos;
    let is_bsd44 = c.remaining() >= 4 && {
        let v = c.u32("the version")?;
        c.pos = after_ncnt;
        v == BSD44_VERSION
    };
    let (kind, header, prof_rate) = if is_bsd44 {
        c.u32("the version")?;
        let rate = c.u32("the profiling rate")?;
        c.take(12, "the spare words")?;
        let header = if p == 8 { 40 } else { 32 };
        if c.pos < header {
            c.take(header - c.pos, "the header padding")?;
        }
        (GmonKind::Bsd44, header, rate)
    } else {
        // No padding after `ncnt`, even on 64-bit targets: gprof 2.40 reads
        // the bins from byte 20 (measured with crafted files).
        let header = 2 * p + 4;
        // The old format does not record the rate: gprof assumes the
        // system clock's, 100 Hz on Linux.
        (GmonKind::OldBsd, header, 100)
    };
    if high_pc < low_pc {
        return Err(c.error(p, format!("high pc {high_pc:#x} below low pc {low_pc:#x}")));
    }
    if ncnt < header || (ncnt - header) % 2 != 0 {
        return Err(c.error(
            ncnt_at,
            format!(
                "byte count {ncnt}: expected the header size {header} plus an even number of bin bytes"
            ),
        ));
    }
    let n = (ncnt - header) / 2;
    if n > c.remaining() / 2 {
        return Err(c.error(
            c.pos,
            format!(
                "file ends at byte {}: expected {n} histogram bins ({} bytes), {} bytes remain",
                data.len(),
                2 * n,
                c.remaining()
            ),
        ));
    }
    let mut bins = Vec::with_capacity(n);
    for _ in 0..n {
        bins.push(u64::from(c.u16("a histogram bin")?));
    }
    let mut file = GmonFile::new(target);
    file.kind = kind;
    if n > 0 {
        file.add_histogram(Histogram {
            low_pc,
            high_pc,
            prof_rate,
            dimension: "seconds".into(),
            dimension_abbrev: b's',
            bins,
        })
        .map_err(|m| c.error(0, m))?;
    }
    let arc_size = 3 * p;
    if c.remaining() % arc_size != 0 {
        let whole = c.pos + c.remaining() / arc_size * arc_size;
        return Err(c.error(
            whole,
            format!(
                "file ends at byte {} inside an arc: expected whole arcs of {arc_size} bytes (from, self, count)",
                data.len()
            ),
        ));
    }
    let mut arcs = ArcTable::default();
    while c.remaining() > 0 {
        let from_pc = c.pointer("the arc's from pc")?;
        let self_pc = c.pointer("the arc's self pc")?;
        let count = c.pointer("the arc's count")?;
        arcs.add(from_pc, self_pc, count);
    }
    file.arcs = arcs.arcs;
    Ok(file)
}

/// Writes `file` in the GNU format of its target. Bins above 65535 and
/// arc counts above 2^32-1 are split over several records of the same
/// range or pair, which readers (gprof too) sum.
pub fn write(file: &GmonFile, out: &mut dyn Write) -> io::Result<()> {
    let t = file.target;
    let mut buf: Vec<u8> = Vec::new();
    buf.extend_from_slice(MAGIC);
    put_u32(&mut buf, t, 1);
    buf.extend_from_slice(&[0; 12]);
    for h in &file.histograms {
        let max = h.bins.iter().copied().max().unwrap_or(0);
        let records = max.div_ceil(u64::from(u16::MAX)).max(1);
        let mut rest = h.bins.clone();
        for _ in 0..records {
            buf.push(TAG_HISTOGRAM);
            put_pointer(&mut buf, t, h.low_pc);
            put_pointer(&mut buf, t, h.high_pc);
            put_u32(&mut buf, t, h.bins.len() as u32);
            put_u32(&mut buf, t, h.prof_rate);
            buf.extend_from_slice(&dimension_bytes(&h.dimension));
            buf.push(h.dimension_abbrev);
            for bin in &mut rest {
                let part = (*bin).min(u64::from(u16::MAX));
                *bin -= part;
                put_u16(&mut buf, t, part as u16);
            }
        }
    }
    for a in &file.arcs {
        let mut count = a.count;
        loop {
            let part = count.min(u64::from(u32::MAX));
            buf.push(TAG_ARC);
            put_pointer(&mut buf, t, a.from_pc);
            put_pointer(&mut buf, t, a.self_pc);
            put_u32(&mut buf, t, part as u32);
            count -= part;
            if count == 0 {
                break;
            }
        }
    }
    if !file.basic_blocks.is_empty() {
        let max_count = if t.pointer_size == 8 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        let mut entries: Vec<(u64, u64)> = Vec::new();
        for b in &file.basic_blocks {
            let mut count = b.count;
            loop {
                let part = count.min(max_count);
                entries.push((b.address, part));
                count -= part;
                if count == 0 {
                    break;
                }
            }
        }
        for chunk in entries.chunks(u32::MAX as usize) {
            buf.push(TAG_BASIC_BLOCKS);
            put_u32(&mut buf, t, chunk.len() as u32);
            for &(address, count) in chunk {
                put_pointer(&mut buf, t, address);
                put_pointer(&mut buf, t, count);
            }
        }
    }
    out.write_all(&buf)
}

fn put_u16(buf: &mut Vec<u8>, t: Target, v: u16) {
    buf.extend_from_slice(&if t.big_endian {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    });
}

fn put_u32(buf: &mut Vec<u8>, t: Target, v: u32) {
    buf.extend_from_slice(&if t.big_endian {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    });
}

fn put_pointer(buf: &mut Vec<u8>, t: Target, v: u64) {
    if t.pointer_size == 8 {
        buf.extend_from_slice(&if t.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    } else {
        put_u32(buf, t, v as u32);
    }
}

/// The sample types of a profile converted from gmon.out: bin counts,
/// their time (gprof's fractional credit, in ns), and arc call counts.
pub fn sample_types() -> Vec<ValueType> {
    vec![
        ValueType::new("samples", "count"),
        ValueType::new("cpu", "nanoseconds"),
        ValueType::new("calls", "count"),
    ]
}

/// The sample type added for basic-block execution counts.
pub fn basic_block_sample_type() -> ValueType {
    ValueType::new("executions", "count")
}

/// Prefix of the comment lines that keep each histogram's layout, so that
/// a profile converted from gmon.out converts back to the same bins.
pub const HISTOGRAM_COMMENT: &str = "gmon histogram";

/// Converts `file` into the generic model.
///
/// - Each non-zero histogram bin becomes a one-frame sample with values
///   `[count, time in ns, 0]`. With `symbol_starts` (the sorted start
///   addresses of gprof's symbol table for the executable, see the report
///   crate's `gprof` module), a bin spanning several symbols is split the
///   way gprof credits it: each symbol gets `overlap_units × count / scale`
///   of time (kept exactly, to the nanosecond) and the integer count is
///   split in the same proportions (largest remainder, so the counts still
///   sum to the bin's). Without it each bin is one sample at its first
///   address.
/// - Each arc becomes a two-frame sample `[callee, caller]` with values
///   `[0, 0, count]`: the call graph is at the `calls` sample index.
/// - Basic-block counts, if any, add an `executions/count` sample type
///   with one-frame samples.
///
/// Addresses are kept as in the file (link-time addresses of the
/// executable; `from_pc` is not adjusted, see [`CallArc::from_pc`]).
pub fn to_profile(file: &GmonFile, symbol_starts: Option<&[u64]>) -> Profile {
    let mut types = sample_types();
    let with_blocks = !file.basic_blocks.is_empty();
    if with_blocks {
        types.push(basic_block_sample_type());
    }
    let width = types.len();
    let mut b = ProfileBuilder::new(types);
    let rate = file.prof_rate().filter(|&r| r > 0).unwrap_or(100);
    let period_ns = 1e9 / f64::from(rate);
    b.profile.period_type = ValueType::new("cpu", "nanoseconds");
    b.profile.period = period_ns.round() as i64;
    b.profile.default_sample_type = "samples".into();
    for h in &file.histograms {
        b.profile.comments.push(format!(
            "{HISTOGRAM_COMMENT} low_pc={:#x} high_pc={:#x} bins={} rate={} dimension_hex={} abbrev={} pointer_size={} big_endian={}",
            h.low_pc,
            h.high_pc,
            h.bins.len(),
            h.prof_rate,
            hex_bytes(&h.dimension),
            h.dimension_abbrev,
            file.target.pointer_size,
            file.target.big_endian
        ));
    }
    let values = |samples: i64, ns: i64, calls: i64, blocks: i64| {
        let mut v = vec![samples, ns, calls];
        if width == 4 {
            v.push(blocks);
        }
        v
    };
    for h in &file.histograms {
        let scale = h.scale();
        for (i, &count) in h.bins.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let (lo, hi) = h.bin_units(i);
            let parts = match symbol_starts {
                Some(starts) if !starts.is_empty() && scale > 0.0 => credit_parts(starts, lo, hi),
                _ => vec![(lo * 2, hi.saturating_sub(lo).max(1))],
            };
            let total_overlap: u64 = parts.iter().map(|p| p.1).sum();
            let shares = split_count(count, &parts.iter().map(|p| p.1).collect::<Vec<_>>());
            for ((address, overlap), share) in parts.iter().zip(shares) {
                let credit = if symbol_starts.is_some() && scale > 0.0 {
                    *overlap as f64 * count as f64 / scale
                } else {
                    count as f64 * *overlap as f64 / total_overlap as f64
                };
                let loc = b.location_at(*address);
                let ns = (credit * period_ns).round() as i64;
                b.add_sample(vec![loc], values(clamp(share), ns, 0, 0));
            }
        }
    }
    for a in &file.arcs {
        let callee = b.location_at(a.self_pc);
        let caller = b.location_at(a.from_pc);
        b.add_sample(vec![callee, caller], values(0, 0, clamp(a.count), 0));
    }
    for bb in &file.basic_blocks {
        let loc = b.location_at(bb.address);
        b.add_sample(vec![loc], values(0, 0, 0, clamp(bb.count)));
    }
    b.finish()
}

fn clamp(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// The symbols a bin of units `[lo, hi)` overlaps, as (byte address of the
/// overlap's start, overlap in units), the way gprof's
/// `hist_assign_samples` walks them: symbol j covers the units from its
/// start/2 to the next symbol's start/2.
fn credit_parts(starts: &[u64], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    let mut parts = Vec::new();
    // The first symbol whose range can reach `lo`.
    let mut j = starts.partition_point(|&s| s / 2 <= lo).saturating_sub(1);
    while j < starts.len() {
        let sym_lo = starts[j] / 2;
        let sym_hi = starts.get(j + 1).map_or(u64::MAX, |s| s / 2);
        if hi <= sym_lo {
            break;
        }
        if lo < sym_hi {
            let overlap = hi.min(sym_hi) - lo.max(sym_lo);
            if overlap > 0 {
                parts.push(((lo * 2).max(starts[j]), overlap));
            }
        }
        j += 1;
    }
    if parts.is_empty() {
        // Below the first symbol: keep the count at the bin's address.
        parts.push((lo * 2, hi.saturating_sub(lo).max(1)));
    }
    parts
}

/// Splits `count` in proportion to `weights` with the largest-remainder
/// method, so the shares sum to `count`.
fn split_count(count: u64, weights: &[u64]) -> Vec<u64> {
    if weights.len() == 1 {
        return vec![count];
    }
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if total == 0 {
        let mut v = vec![0; weights.len()];
        v[0] = count;
        return v;
    }
    let mut shares: Vec<u64> = Vec::with_capacity(weights.len());
    let mut remainders: Vec<(u128, usize)> = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let exact = u128::from(count) * u128::from(w);
        shares.push((exact / total) as u64);
        remainders.push((exact % total, i));
    }
    let mut left = count - shares.iter().sum::<u64>();
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, i) in remainders {
        if left == 0 {
            break;
        }
        shares[i] += 1;
        left -= 1;
    }
    shares
}

/// A histogram layout recovered from a [`HISTOGRAM_COMMENT`] line.
fn parse_histogram_comment(line: &str) -> Option<(Histogram, Target)> {
    let rest = line.strip_prefix(HISTOGRAM_COMMENT)?;
    let mut h = Histogram {
        low_pc: 0,
        high_pc: 0,
        prof_rate: 100,
        dimension: "seconds".into(),
        dimension_abbrev: b's',
        bins: Vec::new(),
    };
    let mut t = Target {
        pointer_size: 8,
        big_endian: false,
    };
    let mut nbins = 0usize;
    for field in rest.split_whitespace() {
        let (k, v) = field.split_once('=')?;
        let hex = |v: &str| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok();
        match k {
            "low_pc" => h.low_pc = hex(v)?,
            "high_pc" => h.high_pc = hex(v)?,
            "bins" => nbins = v.parse().ok()?,
            "rate" => h.prof_rate = v.parse().ok()?,
            "dimension_hex" => h.dimension = unhex_bytes(v)?,
            "abbrev" => h.dimension_abbrev = v.parse().ok()?,
            "pointer_size" => t.pointer_size = v.parse().ok().filter(|&p| p == 4 || p == 8)?,
            "big_endian" => t.big_endian = v.parse().ok()?,
            _ => {}
        }
    }
    if nbins == 0 || nbins > 1 << 28 || h.high_pc < h.low_pc {
        return None;
    }
    h.bins = vec![0; nbins];
    Some((h, t))
}

/// Builds a gmon.out from any profile. Returns the file and what could not
/// be kept, one sentence each.
///
/// - The histogram: each sample's leaf address gets its count (the
///   `samples` value, else the default value over the period). A profile
///   converted from gmon.out keeps its histogram layout in comments and
///   gets the same bins back; otherwise one histogram per mapping (or one
///   over all addresses), 2-byte bins where it fits in 16M bins,
///   coarser otherwise.
/// - Arcs come from the two-frame samples of a `calls` sample type, basic
///   blocks from an `executions` type. Call stacks of a sampled profile
///   are not call counts and are dropped (said in the returned notes).
pub fn from_profile(profile: &Profile) -> (GmonFile, Vec<String>) {
    let mut notes = Vec::new();
    let mut target = Target {
        pointer_size: 8,
        big_endian: cfg!(target_endian = "big"),
    };
    let mut histograms: Vec<Histogram> = Vec::new();
    for c in &profile.comments {
        if let Some((h, t)) = parse_histogram_comment(c) {
            target = t;
            if !histograms
                .iter()
                .any(|e| e.low_pc < h.high_pc && h.low_pc < e.high_pc)
            {
                histograms.push(h);
            }
        }
    }
    let samples_i = profile.sample_index("samples");
    let calls_i = profile.sample_index("calls");
    let blocks_i = profile.sample_index("executions");
    let value_i = profile.default_sample_index();
    let count_of = |s: &crate::model::Sample| -> i64 {
        match samples_i {
            Some(i) => s.values.get(i).copied().unwrap_or(0),
            None if Some(value_i) == calls_i || Some(value_i) == blocks_i => 0,
            None => {
                let v = s.values.get(value_i).copied().unwrap_or(0);
                if profile.period > 0
                    && profile.sample_types.get(value_i) == Some(&profile.period_type)
                {
                    v / profile.period
                } else {
                    v
                }
            }
        }
    };
    let mut leaf_counts: Vec<(u64, u64)> = Vec::new();
    let mut deep = 0usize;
    let mut negative = 0usize;
    let mut arcs = ArcTable::default();
    let mut blocks = BlockTable::default();
    for s in &profile.samples {
        let Some(&leaf) = s.locations.first() else {
            continue;
        };
        let address = profile.location(leaf).address;
        let count = count_of(s);
        if count < 0 {
            negative += 1;
        } else if count > 0 {
            leaf_counts.push((address, count as u64));
            if s.locations.len() > 1 {
                // Samples, not records: one record may hold many.
                deep = deep.saturating_add(count as usize);
            }
        }
        if let Some(i) = calls_i {
            let calls = s.values.get(i).copied().unwrap_or(0);
            if calls > 0 && s.locations.len() == 2 {
                let caller = profile.location(s.locations[1]).address;
                arcs.add(caller, address, calls as u64);
            }
        }
        if let Some(i) = blocks_i {
            let n = s.values.get(i).copied().unwrap_or(0);
            if n > 0 {
                blocks.add(address, n as u64);
            }
        }
    }
    if histograms.is_empty() && !leaf_counts.is_empty() {
        histograms = derive_histograms(profile, &leaf_counts);
    }
    let mut outside = 0u64;
    for &(address, count) in &leaf_counts {
        match histograms
            .iter_mut()
            .find_map(|h| h.bin_of(address).map(|i| (h, i)))
        {
            Some((h, i)) => h.bins[i] = h.bins[i].saturating_add(count),
            None => outside += count,
        }
    }
    if deep > 0 {
        notes.push(format!(
            "call stacks of {deep} samples dropped: gmon.out keeps only the sampled address (arcs hold call counts, which a sampled profile does not have)"
        ));
    }
    if negative > 0 {
        notes.push(format!(
            "{negative} samples with negative counts dropped: gmon.out bins are unsigned"
        ));
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} samples outside the histogram ranges dropped"
        ));
    }
    if profile.samples.iter().any(|s| !s.labels.is_empty()) {
        notes.push("sample labels dropped: gmon.out has none".into());
    }
    if !profile.mappings.is_empty() || profile.locations.iter().any(|l| !l.lines.is_empty()) {
        notes.push(
            "mappings and symbol information dropped: gmon.out holds addresses only (give the executable to gprof)".into(),
        );
    }
    let known: usize = [samples_i, calls_i, blocks_i].iter().flatten().count()
        + usize::from(profile.sample_index("cpu").is_some());
    if profile.sample_types.len() > known {
        notes.push(format!(
            "sample types other than samples/cpu/calls/executions dropped ({} of {})",
            profile.sample_types.len() - known,
            profile.sample_types.len()
        ));
    }
    let mut file = GmonFile::new(target);
    file.histograms = histograms;
    file.arcs = arcs.arcs;
    file.basic_blocks = blocks.blocks;
    (file, notes)
}

/// Histogram layouts covering `leaf_counts`: one per mapping holding
/// samples (or one over everything without mappings), with one common
/// integer scale, disjoint.
fn derive_histograms(profile: &Profile, leaf_counts: &[(u64, u64)]) -> Vec<Histogram> {
    const MAX_BINS: u64 = 1 << 24;
    let rate = if profile.period_type.unit == "nanoseconds" && profile.period > 0 {
        (1_000_000_000 / profile.period).clamp(1, i64::from(u32::MAX)) as u32
    } else {
        100
    };
    // The lowest and highest sampled address of each mapping.
    let mut groups: FxHashMap<Option<usize>, (u64, u64)> = FxHashMap::default();
    for &(address, _) in leaf_counts {
        let key = profile.mappings.iter().position(|m| m.contains(address));
        let r = groups.entry(key).or_insert((address, address));
        r.0 = r.0.min(address);
        r.1 = r.1.max(address);
    }
    let mut ranges: Vec<(u64, u64)> = groups
        .into_values()
        .map(|(lo, hi)| (lo & !1, (hi & !1).saturating_add(2)))
        .collect();
    ranges.sort_unstable();
    let widest = ranges.iter().map(|r| (r.1 - r.0) / 2).max().unwrap_or(1);
    let scale = widest.div_ceil(MAX_BINS).max(1);
    // Round each range up to whole bins, merging ranges that then touch.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (lo, hi) in ranges {
        let units = (hi - lo) / 2;
        let hi = lo.saturating_add(units.div_ceil(scale).max(1) * scale * 2);
        match merged.last_mut() {
            Some(last) if lo < last.1 => {
                let units = (hi.max(last.1) - last.0) / 2;
                last.1 = last.0 + units.div_ceil(scale) * scale * 2;
            }
            _ => merged.push((lo, hi)),
        }
    }
    merged
        .into_iter()
        .map(|(lo, hi)| Histogram {
            low_pc: lo,
            high_pc: hi,
            prof_rate: rate,
            dimension: "seconds".into(),
            dimension_abbrev: b's',
            bins: vec![0; ((hi - lo) / 2 / scale) as usize],
        })
        .collect()
}

#[cfg(test)]
mod tests;
