//! DIGITAL Continuous Profiling Infrastructure profiles (pdb 0.06/0.07):
//! read, write, and DCPI databases of epochs.
//!
//! Follows `dcpiformat(4)` (`dcpi-profile-format.txt`): an ASCII header of
//! `key value` lines ended by a line `samples` (optionally followed by
//! spaces or tabs), then, from the very next byte, binary chunks
//! `offset u32, number u32, count u32 × number` (little-endian) with
//! strictly increasing, non-overlapping address ranges relative to
//! `tstart`, and a footer `total_offsets u32, total_samples u32`.
//!
//! Header keys: `version pdb-M.m`, `image` (hex), `epoch` (YYMMDDHHMM, or
//! the 14-digit YYYYMMDDHHMMSS form), `platform`, `event`, `period`,
//! `tstart` (hex), `tsize` and `cpuspeed` are required once each;
//! `cpuamask` (hex), `cpuimplv`, `cpucount` and `path` are optional (once
//! each); any other `word value` line is unknown and kept, in order. Every
//! header line is kept byte for byte, so a profile read and written again
//! has the same header.
//!
//! An address's count is for the byte address `tstart + offset + i` (the
//! spec's "ith address in the address range").
//!
//! In the model, each image is a mapping `[tstart, tstart + tsize)` named
//! by `path`, each address with samples a one-frame sample, and every
//! header line a comment `dcpi <image>: <line>` so that the image's header
//! survives conversions.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::ParseError;
use crate::model::{Mapping, MappingId, Profile, ValueType};

const FORMAT: &str = "DCPI profile";
/// The header line cpuprof adds (an unknown line to DCPI tools, which keep
/// it): the file offset of `tstart` in the image, in hex. Without it the
/// mapping's offset is unknown (0) until the image's ELF file says
/// (see the report crate's `executable::resolve_dcpi_offsets`).
pub const OFFSET_KEY: &str = "cpuprof-offset";

/// Prefix of the comments that keep DCPI header lines in the model.
pub const HEADER_COMMENT: &str = "dcpi ";

/// One chunk: counts for the addresses `tstart + offset ..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// First address, relative to `tstart`.
    pub offset: u32,
    /// One count per address.
    pub counts: Vec<u32>,
}

/// A DCPI profile of one image in one epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcpiProfile {
    /// Every header line, without its newline, byte for byte, in order.
    pub header: Vec<String>,
    /// The terminating line without its newline: `samples` and any padding.
    pub terminator: String,
    /// `version`: (major, minor).
    pub version: (u32, u32),
    /// `image`: the image id.
    pub image: u64,
    /// `epoch`: YYMMDDHHMM (or YYYYMMDDHHMMSS) UTC.
    pub epoch: String,
    /// `platform`.
    pub platform: String,
    /// `event`: what was sampled (e.g. `cycles`).
    pub event: String,
    /// `period`: events per sample.
    pub period: u64,
    /// `tstart`: the text start address.
    pub tstart: u64,
    /// `tsize`: the text size in bytes.
    pub tsize: u64,
    /// `cpuspeed` in MHz.
    pub cpuspeed: u64,
    /// `cpuamask`, if present.
    pub cpuamask: Option<u64>,
    /// `cpuimplv`, if present.
    pub cpuimplv: Option<u64>,
    /// `cpucount`, if present.
    pub cpucount: Option<u64>,
    /// `path`: the image's file, if present.
    pub path: Option<String>,
    /// The file offset of `tstart` from cpuprof's own header line, if any.
    pub file_offset: Option<u64>,
    /// The chunks, in file order.
    pub chunks: Vec<Chunk>,
}

/// True when `data` starts like a DCPI header: text whose header lines
/// include `version pdb-` before the `samples` line.
pub fn sniff(data: &[u8]) -> bool {
    let head = &data[..data.len().min(8192)];
    let Some(end) = find_terminator(head) else {
        return false;
    };
    head[..end.0]
        .split(|&b| b == b'\n')
        .any(|l| l.starts_with(b"version") && l.windows(4).any(|w| w == b"pdb-"))
}

/// Finds the terminator line: (start of the line, offset of the binary
/// part).
fn find_terminator(data: &[u8]) -> Option<(usize, usize)> {
    let mut start = 0;
    while start < data.len() {
        let end = data[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| start + i)?;
        let line = &data[start..end];
        if let Some(rest) = line.strip_prefix(b"samples") {
            if rest.iter().all(|&b| b == b' ' || b == b'\t') {
                return Some((start, end + 1));
            }
        }
        start = end + 1;
    }
    None
}

fn hex(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn decimal(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Reads one DCPI profile.
pub fn read(data: &[u8]) -> Result<DcpiProfile, ParseError> {
    if data.is_empty() {
        return Err(ParseError::new(
            FORMAT,
            0,
            "empty file: expected a DCPI header",
        ));
    }
    let Some((term_start, binary)) = find_terminator(data) else {
        return Err(ParseError::new(
            FORMAT,
            data.len() as u64,
            "no `samples` line: expected the header to end with a line `samples`",
        ));
    };
    let header_text = std::str::from_utf8(&data[..term_start]).map_err(|e| {
        ParseError::new(
            FORMAT,
            e.valid_up_to() as u64,
            "invalid UTF-8 in the header: expected text lines",
        )
    })?;
    let terminator = String::from_utf8_lossy(&data[term_start..binary - 1]).into_owned();
    let mut p = DcpiProfile {
        header: Vec::new(),
        terminator,
        version: (0, 0),
        image: 0,
        epoch: String::new(),
        platform: String::new(),
        event: String::new(),
        period: 0,
        tstart: 0,
        tsize: 0,
        cpuspeed: 0,
        cpuamask: None,
        cpuimplv: None,
        cpucount: None,
        path: None,
        file_offset: None,
        chunks: Vec::new(),
    };
    let mut seen: Vec<&'static str> = Vec::new();
    let mut offset = 0usize;
    for raw in header_text.split_inclusive('\n') {
        let at = offset;
        offset += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        p.header.push(line.to_string());
        let err = |msg: String| ParseError::new(FORMAT, at as u64, msg);
        // <word> <space>+ <rest_of_line>, rest starting with a non-space.
        let split = line.find([' ', '\t']);
        let (key, value) = match split {
            Some(i) => (&line[..i], line[i..].trim_start_matches([' ', '\t'])),
            None => (line, ""),
        };
        if key.is_empty() || value.is_empty() {
            return Err(err(format!(
                "header line `{}`: expected `key value`",
                line.chars().take(60).collect::<String>()
            )));
        }
        let known: Option<&'static str> = match key {
            "version" => Some("version"),
            "image" => Some("image"),
            "epoch" => Some("epoch"),
            "platform" => Some("platform"),
            "event" => Some("event"),
            "period" => Some("period"),
            "tstart" => Some("tstart"),
            "tsize" => Some("tsize"),
            "cpuspeed" => Some("cpuspeed"),
            "cpuamask" => Some("cpuamask"),
            "cpuimplv" => Some("cpuimplv"),
            "cpucount" => Some("cpucount"),
            "path" => Some("path"),
            _ => None,
        };
        let Some(key) = known else {
            if key == OFFSET_KEY {
                p.file_offset = hex(value);
            }
            continue; // unknown: kept in `header`, in order
        };
        if seen.contains(&key) {
            return Err(err(format!("second `{key}` line: expected it once")));
        }
        seen.push(key);
        let bad = |what: &str| err(format!("`{key} {value}`: expected {what}"));
        match key {
            "version" => {
                let v = value
                    .strip_prefix("pdb-")
                    .ok_or_else(|| bad("pdb-MAJOR.MINOR"))?;
                let (major, minor) = v.split_once('.').ok_or_else(|| bad("pdb-MAJOR.MINOR"))?;
                let major = decimal(major).ok_or_else(|| bad("pdb-MAJOR.MINOR"))?;
                let minor = decimal(minor).ok_or_else(|| bad("pdb-MAJOR.MINOR"))?;
                if major != 0 {
                    return Err(bad("major version 0 (pdb-0.06 or pdb-0.07): only its binary layout is specified"));
                }
                p.version = (major as u32, minor.min(u64::from(u32::MAX)) as u32);
            }
            "image" => p.image = hex(value).ok_or_else(|| bad("a hexadecimal image id"))?,
            "epoch" => {
                if !((value.len() == 10 || value.len() == 14)
                    && value.bytes().all(|b| b.is_ascii_digit()))
                {
                    return Err(bad("YYMMDDHHMM (or YYYYMMDDHHMMSS) digits"));
                }
                p.epoch = value.to_string();
            }
            "platform" => p.platform = value.to_string(),
            "event" => p.event = value.to_string(),
            "period" => p.period = decimal(value).ok_or_else(|| bad("a decimal number"))?,
            "tstart" => p.tstart = hex(value).ok_or_else(|| bad("a hexadecimal address"))?,
            "tsize" => p.tsize = decimal(value).ok_or_else(|| bad("a decimal size"))?,
            "cpuspeed" => p.cpuspeed = decimal(value).ok_or_else(|| bad("a decimal speed"))?,
            "cpuamask" => p.cpuamask = Some(hex(value).ok_or_else(|| bad("a hexadecimal mask"))?),
            "cpuimplv" => p.cpuimplv = Some(decimal(value).ok_or_else(|| bad("a decimal number"))?),
            "cpucount" => p.cpucount = Some(decimal(value).ok_or_else(|| bad("a decimal number"))?),
            "path" => p.path = Some(value.to_string()),
            _ => unreachable!("every known key is matched"),
        }
    }
    for required in [
        "version", "image", "epoch", "platform", "event", "period", "tstart", "tsize", "cpuspeed",
    ] {
        if !seen.contains(&required) {
            return Err(ParseError::new(
                FORMAT,
                term_start as u64,
                format!("the header has no `{required}` line: expected one before `samples`"),
            ));
        }
    }

    // Binary part: chunks, then the 8-byte footer.
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
    if data.len() - binary < 8 {
        return Err(ParseError::new(
            FORMAT,
            binary as u64,
            format!(
                "file ends at byte {}: expected the 8-byte footer (total_offsets, total_samples)",
                data.len()
            ),
        ));
    }
    let footer = data.len() - 8;
    let mut pos = binary;
    let mut next_free: u64 = 0;
    let mut addresses: u64 = 0;
    let mut samples: u64 = 0;
    while pos < footer {
        if footer - pos < 8 {
            return Err(ParseError::new(
                FORMAT,
                pos as u64,
                format!(
                    "{} bytes before the footer: expected a chunk header (offset, number)",
                    footer - pos
                ),
            ));
        }
        let offset = u32_at(pos);
        let number = u32_at(pos + 4);
        if number == 0 {
            return Err(ParseError::new(
                FORMAT,
                pos as u64 + 4,
                "chunk with 0 counts: expected at least 1",
            ));
        }
        if u64::from(offset) < next_free {
            return Err(ParseError::new(
                FORMAT,
                pos as u64,
                format!(
                    "chunk at offset {offset:#x} overlaps or precedes the previous chunk (which ends at {next_free:#x}): expected increasing, non-overlapping chunks"
                ),
            ));
        }
        let counts_at = pos + 8;
        if ((footer - counts_at) / 4) < number as usize {
            return Err(ParseError::new(
                FORMAT,
                pos as u64 + 4,
                format!(
                    "chunk of {number} counts, but only {} bytes remain before the footer",
                    footer - counts_at
                ),
            ));
        }
        let counts: Vec<u32> = (0..number as usize)
            .map(|i| u32_at(counts_at + 4 * i))
            .collect();
        addresses += counts.iter().filter(|&&c| c > 0).count() as u64;
        samples += counts.iter().map(|&c| u64::from(c)).sum::<u64>();
        next_free = u64::from(offset) + u64::from(number);
        pos = counts_at + 4 * number as usize;
        p.chunks.push(Chunk { offset, counts });
    }
    let total_offsets = u32_at(footer);
    let total_samples = u32_at(footer + 4);
    if u64::from(total_offsets) != addresses || u64::from(total_samples) != samples & 0xffff_ffff {
        return Err(ParseError::new(
            FORMAT,
            footer as u64,
            format!(
                "footer says {total_offsets} addresses with {total_samples} samples, but the chunks hold {addresses} addresses with {samples} samples"
            ),
        ));
    }
    Ok(p)
}

impl DcpiProfile {
    /// Number of addresses with samples and the sum of all counts, as the
    /// footer records them.
    pub fn totals(&self) -> (u32, u32) {
        let mut addresses = 0u32;
        let mut samples = 0u32;
        for c in &self.chunks {
            for &n in &c.counts {
                if n > 0 {
                    addresses = addresses.wrapping_add(1);
                }
                samples = samples.wrapping_add(n);
            }
        }
        (addresses, samples)
    }

    /// The image's name for messages and file names: `path`'s base name or
    /// the image id.
    pub fn image_name(&self) -> String {
        match &self.path {
            Some(p) => p.rsplit('/').next().unwrap_or(p).to_string(),
            None => format!("{:x}", self.image),
        }
    }
}

/// Writes `p`: its header lines as they are, the terminator, the chunks and
/// a footer computed from them.
pub fn write(p: &DcpiProfile, out: &mut dyn Write) -> io::Result<()> {
    let mut buf = Vec::new();
    for line in &p.header {
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(p.terminator.as_bytes());
    buf.push(b'\n');
    for c in &p.chunks {
        buf.extend_from_slice(&c.offset.to_le_bytes());
        buf.extend_from_slice(&(c.counts.len() as u32).to_le_bytes());
        for n in &c.counts {
            buf.extend_from_slice(&n.to_le_bytes());
        }
    }
    let (addresses, samples) = p.totals();
    buf.extend_from_slice(&addresses.to_le_bytes());
    buf.extend_from_slice(&samples.to_le_bytes());
    out.write_all(&buf)
}

/// `samples` plus the spaces that make a header of `header_len` bytes
/// (before the terminator) end on a 4-byte boundary, as the spec advises.
pub fn padded_terminator(header_len: usize) -> String {
    let mut t = String::from("samples");
    while (header_len + t.len() + 1) % 4 != 0 {
        t.push(' ');
    }
    t
}

/// The sample types of a DCPI profile in the model: the sample counts,
/// and the events they stand for (`cpu/nanoseconds` for `cycles` with a
/// known `cpuspeed`, and for `cpu` profiles written by cpuprof, whose
/// period is in nanoseconds).
pub fn sample_types(event: &str, cpuspeed: u64) -> Vec<ValueType> {
    if (event == "cycles" && cpuspeed > 0) || event == "cpu" {
        vec![
            ValueType::new("samples", "count"),
            ValueType::new("cpu", "nanoseconds"),
        ]
    } else {
        vec![
            ValueType::new("samples", "count"),
            ValueType::new(event, "events"),
        ]
    }
}

/// Converts DCPI profiles (one per image, possibly of several epochs) into
/// one model. They must sample the same event.
pub fn to_profile(profiles: &[DcpiProfile]) -> Result<Profile, String> {
    let Some(first) = profiles.first() else {
        return Err("no DCPI profiles".into());
    };
    let types = sample_types(&first.event, first.cpuspeed);
    let mut b = crate::model::ProfileBuilder::new(types.clone());
    let per_sample = |p: &DcpiProfile| -> f64 {
        match p.event.as_str() {
            "cycles" if p.cpuspeed > 0 => p.period as f64 * 1000.0 / p.cpuspeed as f64,
            _ => p.period as f64,
        }
    };
    b.profile.period_type = types[1].clone();
    b.profile.period = per_sample(first).round() as i64;
    b.profile.default_sample_type = "samples".into();
    // Mappings first (sorted), so locations find them.
    let mut mappings: Vec<Mapping> = Vec::new();
    for p in profiles {
        if sample_types(&p.event, p.cpuspeed) != types {
            return Err(format!(
                "cannot combine DCPI profiles of event `{}` and `{}`",
                first.event, p.event
            ));
        }
        let m = Mapping {
            start: p.tstart,
            limit: p.tstart.saturating_add(p.tsize),
            offset: p.file_offset.unwrap_or(0),
            path: p.path.clone().unwrap_or_default(),
            perms: "r-xp".into(),
            ..Mapping::default()
        };
        if !mappings.contains(&m) {
            mappings.push(m);
        }
        // One header per image (the first epoch's), so it can be written
        // back as it was.
        let prefix = format!("{HEADER_COMMENT}{:x}: ", p.image);
        if !b.profile.comments.iter().any(|c| c.starts_with(&prefix)) {
            for line in &p.header {
                b.profile.comments.push(format!("{prefix}{line}"));
            }
        }
    }
    mappings.sort_by_key(|m| (m.start, m.limit));
    b.profile.mappings = mappings;
    for p in profiles {
        let scale = per_sample(p);
        for c in &p.chunks {
            for (i, &n) in c.counts.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let address = p
                    .tstart
                    .wrapping_add(u64::from(c.offset))
                    .wrapping_add(i as u64);
                let loc = b.location_at(address);
                let events = (f64::from(n) * scale).round() as i64;
                b.add_sample(vec![loc], vec![i64::from(n), events]);
            }
        }
    }
    Ok(b.finish())
}

/// The leaf counts `(address, count)` of one image (mapping; None for
/// addresses outside every mapping).
type ImageCounts = (Option<MappingId>, Vec<(u64, u64)>);

/// Builds one DCPI profile per image (mapping) from any profile: counts
/// are the samples' leaf counts; the header is the one kept in the
/// comments when the profile came from DCPI, else one made from the
/// profile (event and period from its period type). Returns the profiles
/// and what could not be kept.
pub fn from_profile(profile: &Profile) -> (Vec<DcpiProfile>, Vec<String>) {
    let mut notes = Vec::new();
    let samples_i = profile.sample_index("samples");
    let value_i = profile.default_sample_index();
    // Leaf counts per mapping (None: outside every mapping).
    let mut per_image: Vec<ImageCounts> = Vec::new();
    let mut deep = 0usize;
    let mut negative = 0usize;
    for s in &profile.samples {
        let Some(&leaf) = s.locations.first() else {
            continue;
        };
        let count = match samples_i {
            Some(i) => s.values.get(i).copied().unwrap_or(0),
            None => {
                let v = s.values.get(value_i).copied().unwrap_or(0);
                if profile.period > 0 {
                    v / profile.period
                } else {
                    v
                }
            }
        };
        if count < 0 {
            negative += 1;
            continue;
        }
        if count == 0 {
            continue;
        }
        if s.locations.len() > 1 {
            deep += 1;
        }
        let loc = profile.location(leaf);
        let key = loc.mapping;
        let entry = match per_image.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e,
            None => {
                per_image.push((key, Vec::new()));
                per_image.last_mut().unwrap()
            }
        };
        entry.1.push((loc.address, count as u64));
    }
    if deep > 0 {
        notes.push(format!(
            "call stacks of {deep} samples dropped: DCPI profiles count samples per address only"
        ));
    }
    if negative > 0 {
        notes.push(format!("{negative} samples with negative counts dropped"));
    }
    if profile.samples.iter().any(|s| !s.labels.is_empty()) {
        notes.push("sample labels dropped: DCPI profiles have none".into());
    }
    let epoch = epoch_of(profile.time_nanos);
    let (event, period) = if profile.period_type.kind.is_empty() {
        ("samples".to_string(), profile.period.max(1) as u64)
    } else {
        (
            profile.period_type.kind.clone(),
            profile.period.max(1) as u64,
        )
    };
    let mut out = Vec::new();
    for (n, (mapping, mut counts)) in per_image.into_iter().enumerate() {
        counts.sort_unstable();
        let (tstart, tsize, file_offset, path, build_id) = match mapping {
            Some(m) => {
                let m = profile.mapping(m);
                (
                    m.start,
                    m.limit - m.start,
                    m.offset,
                    m.path.clone(),
                    m.build_id.clone(),
                )
            }
            None => {
                let lo = counts.first().map_or(0, |c| c.0);
                let hi = counts.last().map_or(0, |c| c.0);
                (lo, hi - lo + 1, 0, String::new(), String::new())
            }
        };
        let image = build_id
            .get(..build_id.len().min(16))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .unwrap_or(n as u64 + 1);
        // Reuse the header kept from a DCPI source for this image.
        let kept: Vec<String> = kept_headers(profile)
            .into_iter()
            .find(|lines| {
                lines.iter().any(|l| {
                    l.strip_prefix("tstart")
                        .map(|v| v.trim_start_matches([' ', '\t']))
                        .and_then(hex)
                        == Some(tstart)
                })
            })
            .unwrap_or_default();
        let header = if kept.is_empty() {
            let mut h = vec![
                "version pdb-0.07".to_string(),
                format!("image {image:x}"),
                format!("epoch {epoch}"),
                format!("platform {}", std::env::consts::ARCH),
                format!("event {event}"),
                format!("period {period}"),
                format!("tstart {tstart:x}"),
                format!("tsize {tsize}"),
                "cpuspeed 0".to_string(),
            ];
            if !path.is_empty() {
                h.push(format!("path {path}"));
            }
            // Not a DCPI key: an unknown line (kept by DCPI tools) with the
            // file offset of tstart, so the mapping converts back exactly.
            h.push(format!("{OFFSET_KEY} {file_offset:x}"));
            h
        } else {
            kept
        };
        let header_len: usize = header.iter().map(|l| l.len() + 1).sum();
        let text = header.join("\n") + "\nsamples\n";
        let mut parsed = match read(&[text.as_bytes(), &[0u8; 8]].concat()) {
            Ok(p) => p,
            Err(e) => {
                notes.push(format!(
                    "image {image:x}: its kept header is invalid ({e}); skipped"
                ));
                continue;
            }
        };
        parsed.terminator = padded_terminator(header_len);
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut outside = 0u64;
        for (address, count) in counts {
            let Some(off) = address
                .checked_sub(parsed.tstart)
                .filter(|&o| o <= u64::from(u32::MAX))
            else {
                outside += count;
                continue;
            };
            let off = off as u32;
            let count = count.min(u64::from(u32::MAX)) as u32;
            // Addresses come sorted. A gap of up to two zero counts costs
            // no more than a new chunk header (8 bytes), so it is filled.
            match chunks.last_mut() {
                Some(c) if u64::from(c.offset) + c.counts.len() as u64 - 1 == u64::from(off) => {
                    let last = c.counts.last_mut().unwrap();
                    *last = last.saturating_add(count);
                }
                Some(c) if u64::from(off) - (u64::from(c.offset) + c.counts.len() as u64) <= 2 => {
                    let end = u64::from(c.offset) + c.counts.len() as u64;
                    c.counts
                        .extend(std::iter::repeat_n(0, (u64::from(off) - end) as usize));
                    c.counts.push(count);
                }
                _ => chunks.push(Chunk {
                    offset: off,
                    counts: vec![count],
                }),
            }
        }
        if outside > 0 {
            notes.push(format!(
                "{outside} samples below the image's tstart dropped"
            ));
        }
        parsed.chunks = chunks;
        out.push(parsed);
    }
    (out, notes)
}

/// The DCPI header lines kept in the comments, grouped by image, in order.
fn kept_headers(profile: &Profile) -> Vec<Vec<String>> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for c in &profile.comments {
        let Some((id, line)) = c
            .strip_prefix(HEADER_COMMENT)
            .and_then(|c| c.split_once(": "))
        else {
            continue;
        };
        match groups.iter_mut().find(|(g, _)| g == id) {
            Some((_, lines)) => lines.push(line.to_string()),
            None => groups.push((id.to_string(), vec![line.to_string()])),
        }
    }
    groups.into_iter().map(|(_, lines)| lines).collect()
}

/// YYMMDDHHMM (UTC) of a time in ns since the epoch (0: the epoch itself).
fn epoch_of(time_nanos: i64) -> String {
    let secs = time_nanos.max(0) / 1_000_000_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{:02}{:02}{:02}{:02}{:02}",
        y % 100,
        m,
        d,
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Reads a DCPI database: a directory of epoch subdirectories, each with
/// one profile file per image. `epoch` picks one subdirectory by name.
/// Returns every profile with its file, in a stable (sorted) order.
pub fn read_database(
    dir: &Path,
    epoch: Option<&str>,
) -> Result<Vec<(PathBuf, DcpiProfile)>, String> {
    let mut epochs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    epochs.sort();
    if let Some(want) = epoch {
        epochs.retain(|p| p.file_name().is_some_and(|n| n == want));
        if epochs.is_empty() {
            return Err(format!("{}: no epoch directory `{want}`", dir.display()));
        }
    }
    let mut out = Vec::new();
    for e in epochs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&e)
            .map_err(|err| format!("{}: {err}", e.display()))?
            .filter_map(|f| f.ok())
            .map(|f| f.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).map_err(|err| format!("{}: {err}", f.display()))?;
            if !sniff(&data) {
                continue; // not a profile (DCPI keeps other files there too)
            }
            let p = read(&data).map_err(|err| format!("{}: {err}", f.display()))?;
            out.push((f, p));
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no DCPI profiles in its epoch directories",
            dir.display()
        ));
    }
    Ok(out)
}

/// Reads a DCPI database directory into one model: every image of every
/// epoch (or of `epoch` only), summed.
pub fn load_database(dir: &Path, epoch: Option<&str>) -> Result<Profile, String> {
    let profiles: Vec<DcpiProfile> = read_database(dir, epoch)?
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    to_profile(&profiles).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Writes `profiles` as a DCPI database under `dir`: `dir/EPOCH/IMAGE`
/// (the image's base name and id). Returns the files written.
pub fn write_database(dir: &Path, profiles: &[DcpiProfile]) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for p in profiles {
        let epoch_dir = dir.join(&p.epoch);
        std::fs::create_dir_all(&epoch_dir)?;
        let file = epoch_dir.join(format!("{}_{:x}", p.image_name(), p.image));
        let mut f = std::fs::File::create(&file)?;
        write(p, &mut f)?;
        written.push(file);
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
