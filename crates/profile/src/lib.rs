//! cpuprof's profile model and file formats.
//!
//! [`Profile`] (in [`model`]) is the one data model: samples with stacks of
//! [`Location`]s (leaf first) and values, [`Mapping`]s, [`Function`]s and
//! inline chains of [`Line`]s. Every reader fills it and every output of the
//! report crate reads it. One module per format reads and writes it;
//! [`read_profile`] detects the format by content, never by file name.
//!
//! Formats: [`gperftools`] (binary CPU profile), [`proto`] (pprof's
//! profile.proto), [`gmon`] (gprof's gmon.out), [`dcpi`] (DCPI pdb
//! 0.06/0.07 and its databases), [`collapsed`] (folded stacks),
//! [`symbolized`] (perl pprof's symbolized raw profile), [`perf`] (Linux
//! perf.data, file and pipe mode), [`perf_script`] (`perf script`'s text),
//! and pprof's legacy text profiles: [`heap`] (tcmalloc and Go heap and
//! growth profiles), [`contention`] (lock contention, Go block and mutex),
//! [`gocount`] (Go goroutine and threadcreate), [`threadz`] (thread
//! profiles), sharing [`legacy`].
//!
//! [`merge`] sums several profiles into one; [`prune`] removes the frames
//! a profile's `drop_frames` names (allocators, lock internals).
#![deny(missing_docs)]

pub mod addresses;
pub mod collapsed;
pub mod contention;
pub mod dcpi;
pub mod error;
pub mod gmon;
pub mod gocount;
pub mod gperftools;
pub mod heap;
pub mod legacy;
pub mod merge;
pub mod model;
pub mod names;
pub mod perf;
pub mod perf_script;
pub mod proto;
pub mod prune;
pub mod symbolized;
#[cfg(test)]
mod testgen;
pub mod threadz;

pub use error::ParseError;
pub use model::*;

/// The formats cpuprof reads, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// gperftools' binary CPU profile.
    Gperftools,
    /// pprof's profile.proto, gzip-compressed or raw.
    Pprof,
    /// gprof's gmon.out (GNU, 4.4BSD or old BSD layout).
    Gmon,
    /// A DCPI (pdb 0.06/0.07) per-image profile.
    Dcpi,
    /// Collapsed stacks (`root;...;leaf count` lines).
    Collapsed,
    /// A symbolized raw profile (perl pprof `--raw`): symbols, then a
    /// gperftools CPU profile.
    Symbolized,
    /// A heap or growth profile in text form (tcmalloc, Go `debug=1`).
    Heap,
    /// A lock contention profile in text form (Go block and mutex too).
    Contention,
    /// A Go goroutine or threadcreate profile in text form (`debug=1`).
    GoCount,
    /// A thread profile in text form (`--- threadz N ---`).
    Threadz,
    /// Linux `perf record`'s perf.data (file or pipe mode).
    PerfData,
    /// The text `perf script` prints.
    PerfScript,
}

impl Format {
    /// The human name of the format, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Gperftools => "gperftools CPU profile",
            Format::Pprof => "pprof profile.proto",
            Format::Gmon => "gmon.out",
            Format::Dcpi => "DCPI profile",
            Format::Collapsed => "collapsed stacks",
            Format::Symbolized => "symbolized raw profile",
            Format::Heap => heap::FORMAT,
            Format::Contention => contention::FORMAT,
            Format::GoCount => gocount::FORMAT,
            Format::Threadz => threadz::FORMAT,
            Format::PerfData => "perf.data",
            Format::PerfScript => "perf script text",
        }
    }
}

/// Options for reading, for formats whose files do not say everything
/// about themselves.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Pointer width (4 or 8) and byte order of the profiled program, when
    /// a binary was given (gmon.out has neither in the file).
    pub target: Option<Target>,
    /// The start addresses of the executable's symbols as gprof sees them
    /// (the report crate's `gprof::GprofSymbols::starts`), so gmon.out
    /// histogram bins spanning two functions are split the way gprof
    /// credits them. Without it each bin goes to its first address.
    pub gmon_symbol_starts: Option<Vec<u64>>,
    /// The executable's loadable segments as mappings at their link-time
    /// addresses, given to profiles that hold link-time addresses of the
    /// executable (gmon.out) so that the symbolizer finds the file.
    pub executable_mappings: Vec<Mapping>,
    /// For a DCPI database directory: read only this epoch (a
    /// subdirectory name) instead of all of them.
    pub dcpi_epoch: Option<String>,
    /// Called by readers of big inputs with a part of the input they are
    /// done with for now. When the input is a read-only file mapping, the
    /// caller may drop those pages from memory (they are read again from
    /// the file if touched), so that a 70 MB profile does not stay resident
    /// beside the model built from it. Must not change the bytes.
    pub release: Option<fn(&[u8])>,
    /// Unwinds the user stacks of perf.data `--call-graph dwarf` samples
    /// (the symbolizer crate's, which reads the mapped files).
    pub unwinder: Option<std::sync::Arc<dyn perf::StackUnwinder>>,
}

/// The pointer width and byte order of a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Pointer size in bytes: 4 or 8.
    pub pointer_size: u8,
    /// True for big-endian programs.
    pub big_endian: bool,
}

/// gperftools' header (slots 0, 3, 0, period): the version slot must be
/// zero, which keeps BSD gmon.out files of programs linked at address 0
/// (whose first word is zero too) from being taken for one.
fn is_gperftools(data: &[u8]) -> bool {
    match gperftools::detect(data) {
        Some(layout) => {
            let version = match layout.width {
                gperftools::Width::W64 => data.get(16..24),
                gperftools::Width::W32 => data.get(8..12),
            };
            // A file cut before the version slot is still claimed, so that
            // the gperftools reader reports where it ends.
            version.is_none_or(|v| v.iter().all(|&b| b == 0))
        }
        None => false,
    }
}

/// Which format `data` is in, judged by its content alone.
pub fn detect_format(data: &[u8]) -> Option<Format> {
    detect_format_with(data, &ReadOptions::default())
}

/// Which format `data` is in, judged by its content (and the program's
/// layout when known, for BSD gmon.out files, which have no magic number
/// and are recognized by parsing to their exact end).
pub fn detect_format_with(data: &[u8], options: &ReadOptions) -> Option<Format> {
    if gmon::sniff_gnu(data) {
        return Some(Format::Gmon);
    }
    if perf::sniff(data) {
        return Some(Format::PerfData);
    }
    if proto::is_gzip(data) {
        return Some(Format::Pprof);
    }
    if dcpi::sniff(data) {
        return Some(Format::Dcpi);
    }
    if is_gperftools(data) {
        return Some(Format::Gperftools);
    }
    if gmon::sniff_bsd(data, options.target) {
        return Some(Format::Gmon);
    }
    if proto::sniff(data) {
        return Some(Format::Pprof);
    }
    if symbolized::sniff(data) {
        return Some(Format::Symbolized);
    }
    if heap::sniff(data) {
        return Some(Format::Heap);
    }
    if contention::sniff(data) {
        return Some(Format::Contention);
    }
    if gocount::sniff(data) {
        return Some(Format::GoCount);
    }
    if threadz::sniff(data) {
        return Some(Format::Threadz);
    }
    if perf_script::sniff(data) {
        return Some(Format::PerfScript);
    }
    if legacy_text_kind(data).is_none() && collapsed::sniff(data) {
        return Some(Format::Collapsed);
    }
    None
}

/// Reads a profile in any supported format, detected by content.
pub fn read_profile(data: &[u8], options: &ReadOptions) -> Result<(Format, Profile), ParseError> {
    let format = match detect_format_with(data, options) {
        Some(f) => f,
        None if data.is_empty() => {
            return Err(ParseError::new(
                "profile",
                0,
                "empty file: expected a profile",
            ))
        }
        None => {
            let what = match legacy_text_kind(data) {
                Some(kind) => format!("{kind}, which cpuprof does not read"),
                None => "unrecognized content".to_string(),
            };
            return Err(ParseError::new(
                "profile",
                0,
                format!("{what}: expected {KNOWN_FORMATS}"),
            ));
        }
    };
    let profile = match format {
        Format::Gperftools => gperftools::read_with(data, options.release)?,
        // What a gzip stream holds is read in whichever format it is in,
        // as pprof does.
        Format::Pprof if proto::is_gzip(data) => {
            let raw = proto::inflate(data)?;
            match detect_format_with(&raw, options) {
                Some(Format::Pprof) => proto::read_decompressed(&raw)?,
                None => match legacy_text_kind(&raw) {
                    Some(kind) => {
                        return Err(ParseError::new(
                            "profile",
                            0,
                            format!("{kind}, gzip-compressed, which cpuprof does not read: expected {KNOWN_FORMATS}"),
                        ))
                    }
                    None => proto::read_decompressed(&raw)?,
                },
                Some(_) => return read_profile(&raw, options),
            }
        }
        Format::Pprof => proto::read(data)?,
        Format::Gmon => {
            let file = gmon::read(data, options.target)?;
            let mut p = gmon::to_profile(&file, options.gmon_symbol_starts.as_deref());
            attach_mappings(&mut p, &options.executable_mappings);
            p
        }
        Format::Dcpi => {
            let file = dcpi::read(data)?;
            dcpi::to_profile(std::slice::from_ref(&file))
                .map_err(|m| ParseError::new(Format::Dcpi.name(), 0, m))?
        }
        Format::Collapsed => collapsed::read(data)?,
        Format::Symbolized => symbolized::read(data)?,
        Format::Heap => heap::read(data)?,
        Format::Contention => contention::read(data)?,
        Format::GoCount => gocount::read(data)?,
        Format::Threadz => threadz::read(data)?,
        Format::PerfData => perf::read_with(data, options.unwinder.as_deref(), options.release)?,
        Format::PerfScript => perf_script::read(data)?,
    };
    check_totals(format, &profile)?;
    Ok((format, profile))
}

/// Refuses a profile whose values of one sample type add up (in absolute
/// value) beyond `i64::MAX`: every total and share a report computes is a
/// sum of some of them, and would wrap into nonsense.
fn check_totals(format: Format, profile: &Profile) -> Result<(), ParseError> {
    for (t, sample_type) in profile.sample_types.iter().enumerate() {
        let total: i128 = profile
            .samples
            .iter()
            .filter_map(|s| s.values.get(t))
            .map(|&v| i128::from(v).abs())
            .sum();
        if total > i128::from(i64::MAX) {
            return Err(ParseError::new(
                format.name(),
                0,
                format!(
                    "the {} values add up to {total}, beyond 2^63: not a real profile",
                    sample_type.kind
                ),
            ));
        }
    }
    Ok(())
}

/// The formats cpuprof reads, for messages.
const KNOWN_FORMATS: &str = "a gperftools CPU profile, pprof profile.proto, perf.data, perf script text, gmon.out, DCPI profile, symbolized raw profile, heap, contention Go count or thread profile in text form, or collapsed stacks";

/// What a text profile in one of pprof's legacy formats that cpuprof does
/// not read is (Go's `debug=2` goroutine dump, a text report), judged by its first line; these would otherwise be taken for
/// collapsed stacks and fail on line 2.
pub fn legacy_text_kind(data: &[u8]) -> Option<&'static str> {
    let head = &data[..data.len().min(256)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    let first = text.trim_start().lines().next()?.trim();
    if let Some(rest) = first.strip_prefix("goroutine ") {
        if rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains('[') {
            return Some("a Go goroutine dump (debug=2)");
        }
    }
    if let Some(rest) = first.strip_prefix("Total: ") {
        if rest
            .split_whitespace()
            .next()
            .is_some_and(|n| n.parse::<f64>().is_ok())
        {
            return Some("a text report (pprof --text output)");
        }
    }
    None
}

/// Gives `profile` the executable's mappings and attaches every location
/// inside one of them.
pub fn attach_mappings(profile: &mut Profile, mappings: &[Mapping]) {
    if mappings.is_empty() {
        return;
    }
    profile.mappings = mappings.to_vec();
    profile.mappings.sort_by_key(|m| (m.start, m.limit));
    for i in 0..profile.locations.len() {
        let address = profile.locations[i].address;
        profile.locations[i].mapping = profile.mapping_of(address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_detected_by_content() {
        let mut b = ProfileBuilder::new(cpu_sample_types());
        b.profile.period = 10_000_000;
        b.profile.period_type = ValueType::new("cpu", "nanoseconds");
        let l = b.location_at(0x401000);
        b.add_sample(vec![l], vec![1, 10_000_000]);
        let p = b.finish();
        let mut g = Vec::new();
        gperftools::write(&p, &mut g).unwrap();
        assert_eq!(detect_format(&g), Some(Format::Gperftools));
        let mut pb = Vec::new();
        proto::write(&p, &mut pb).unwrap();
        assert_eq!(detect_format(&pb), Some(Format::Pprof));
        let mut raw = Vec::new();
        proto::write_raw(&p, &mut raw).unwrap();
        assert_eq!(detect_format(&raw), Some(Format::Pprof));
        let (gm, _) = gmon::from_profile(&p);
        let mut gb = Vec::new();
        gmon::write(&gm, &mut gb).unwrap();
        assert_eq!(detect_format(&gb), Some(Format::Gmon));
        let (d, _) = dcpi::from_profile(&p);
        let mut db = Vec::new();
        dcpi::write(&d[0], &mut db).unwrap();
        assert_eq!(detect_format(&db), Some(Format::Dcpi));
        assert_eq!(detect_format(b"main;f 3\n"), Some(Format::Collapsed));
        assert_eq!(detect_format(b"hello world\n"), None);
        let e = read_profile(b"hello world\n", &ReadOptions::default()).unwrap_err();
        assert!(e.message.contains("unrecognized"), "{e}");
        for data in [&g, &pb, &raw, &gb, &db] {
            let (_, q) = read_profile(data, &ReadOptions::default()).unwrap();
            assert_eq!(q.totals()[0], 1);
        }
    }

    #[test]
    fn old_bsd_gmon_of_a_pie_is_not_taken_for_gperftools() {
        // lpc 0, hpc 0x1000, ncnt 20+8: starts with 8 zero bytes like a
        // 64-bit gperftools header.
        let mut d = Vec::new();
        d.extend_from_slice(&0u64.to_le_bytes());
        d.extend_from_slice(&0x1000u64.to_le_bytes());
        d.extend_from_slice(&28u32.to_le_bytes());
        d.extend_from_slice(&[1, 0, 2, 0, 3, 0, 4, 0]);
        assert_eq!(detect_format(&d), Some(Format::Gmon));
        let (_, p) = read_profile(&d, &ReadOptions::default()).unwrap();
        assert_eq!(p.totals()[0], 10);
    }
}
