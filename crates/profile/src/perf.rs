//! Linux `perf record`'s perf.data, in file mode (`PERFILE2`, sections and
//! a feature table after the data) and pipe mode (`perf record -o -`: the
//! attributes and features as records in the stream).
//!
//! The records are read with the `linux-perf-data` crate (the parser
//! samply uses, kept by its author: it knows both modes, the feature
//! sections, zstd-compressed records, and sorts the records of each round
//! by time the way `perf report` does, so that a sample is resolved
//! against the mappings of its own moment). Before handing the bytes over,
//! [`check_framing`] walks the record headers itself so that a truncated
//! file or an unknown record type is refused with its exact offset, in
//! both modes (the crate takes a pipe stream cut mid-record for its end).
//!
//! One pass over the records: processes and threads from COMM, FORK and
//! EXIT; mappings from MMAP and MMAP2, with the build ids of MMAP2 records
//! or of the file's build-id table; each sample resolved against its
//! process at its time. Each event of the file (`cpu-clock`, `task-clock`,
//! `cycles`, ...) is a sample type named after it whose value is the
//! sample's period (nanoseconds for the clock events); samples carry the
//! labels `perf_to_profile` gives (`pid`, `tid`, `comm`, `thread_comm`,
//! `cpu`, `timestamp_ns`).
//!
//! Stacks: the kernel's callchain (`-g`), leaf first, every frame after the
//! first stored as its return address minus one; kernel addresses in one
//! `[kernel.kallsyms]` mapping. For `--call-graph dwarf` samples, the
//! kernel part of the callchain, then the user stack unwound from the saved
//! registers and stack bytes by a [`StackUnwinder`] given in the read
//! options (it reads the mapped files' unwind tables, so it lives with the
//! symbolizer, which reads files; this module stays free of I/O). Samples
//! are handed over in batches, so that it can unwind on every core.
//! Anonymous executable mappings (JIT code) are named `/tmp/perf-PID.map`,
//! as perf names them, so that the symbolizer reads the JIT's map.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;
use std::sync::Arc;

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, PerfEventType, RawData, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{DsoKey, Endianness, PerfFileReader, PerfFileRecord, UserRecordType};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::{
    Label, LabelValue, LocationId, Mapping, MappingId, ParseError, Profile, Sample, ValueType,
};

const FORMAT: &str = "perf.data";

/// The path perf gives the kernel's mapping, and cpuprof its locations.
pub const KERNEL_MAPPING: &str = "[kernel.kallsyms]";

/// Callchain entries at or above this are context markers
/// (`PERF_CONTEXT_KERNEL`, `PERF_CONTEXT_USER`, ...), not addresses.
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;
const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;

/// perf's x86_64 register number (`enum perf_event_x86_regs`: AX 0, BX 1,
/// CX 2, DX 3, SI 4, DI 5, BP 6, SP 7, IP 8, ..., R8 16 ... R15 23) of each
/// DWARF register 0-15 (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15).
const PERF_OF_DWARF: [u64; 16] = [0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];

/// How many `--call-graph dwarf` samples are unwound together (each holds
/// up to the recorded stack size, 8 KB by default): enough for every core
/// to have its share, few enough that the batch's stack bytes (4 MB) are
/// still in the processor's cache when they are unwound.
const UNWIND_BATCH: usize = 512;

/// True when `data` starts like a perf.data file or stream.
pub fn sniff(data: &[u8]) -> bool {
    data.starts_with(b"PERFILE2") || data.starts_with(b"2ELIFREP")
}

/// The next [`AddressSpace::id`]: unique in the process, so that an
/// unwinder kept across files (a `--base` diff of two recordings, a
/// fuzzing run) never takes one file's mappings for another's.
static NEXT_SPACE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A process's executable file mappings at one moment, for unwinding.
#[derive(Debug)]
pub struct AddressSpace {
    /// Unique in the process for each distinct set of mappings (a new one
    /// after every change), so that an unwinder may keep what it built
    /// for it.
    pub id: u64,
    /// The executable mappings of real files, sorted by start.
    pub mappings: Vec<Mapping>,
}

/// One `--call-graph dwarf` sample's user stack to unwind.
#[derive(Debug)]
pub struct UnwindJob {
    /// The process's mappings at the sample's time.
    pub space: Arc<AddressSpace>,
    /// The saved user instruction pointer.
    pub pc: u64,
    /// The saved user general registers in DWARF's x86_64 numbering (rax,
    /// rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8 ... r15); None where the
    /// file's `sample_regs_user` leaves one out. Stack and frame pointer
    /// are always there (a sample without them is not unwound); the
    /// others let CFI that defines a frame on them (ld.so's lazy-binding
    /// trampoline on rbx) be followed.
    pub regs: [Option<u64>; 16],
    /// Where in the batch's stack bytes (the second argument of
    /// [`StackUnwinder::unwind`]) this sample's are: the bytes saved from
    /// `sp` upwards.
    pub stack: std::ops::Range<usize>,
    /// Filled by the unwinder: `pc`, then each caller's return address,
    /// as found (not adjusted).
    pub frames: Vec<u64>,
}

/// Unwinds user stacks saved by `perf record --call-graph dwarf` against
/// the mapped files' unwind tables (implemented by the symbolizer crate).
pub trait StackUnwinder: Send + Sync + fmt::Debug {
    /// Fills the `frames` of each job (in parallel as it sees fit);
    /// `stacks` holds the jobs' stack bytes, one after the other (one
    /// buffer for the batch, reused: no allocation per sample).
    fn unwind(&self, jobs: &mut [UnwindJob], stacks: &[u8]);
}

/// Reads a perf.data file or pipe stream. `unwinder` unwinds the user
/// stacks of `--call-graph dwarf` samples; without it those samples keep
/// their kernel frames and the interrupted instruction.
pub fn read(data: &[u8], unwinder: Option<&dyn StackUnwinder>) -> Result<Profile, ParseError> {
    read_with(data, unwinder, None)
}

/// [`read`], calling `release` with the parts of `data` read past, so that
/// the caller may drop a file mapping's pages (see
/// [`crate::ReadOptions::release`]): a `--call-graph dwarf` file is
/// hundreds of MB read once.
pub fn read_with(
    data: &[u8],
    unwinder: Option<&dyn StackUnwinder>,
    release: Option<fn(&[u8])>,
) -> Result<Profile, ParseError> {
    let big = data.starts_with(b"2ELIFREP");
    let header_size = field(data, 8, big).ok_or_else(|| {
        ParseError::new(
            FORMAT,
            data.len() as u64,
            "truncated header: expected its size",
        )
    })?;
    let pipe = header_size == 16;
    // The data section, in file mode, and whether its records can be read
    // where they lie (see [`read_in_place`]).
    let mut in_place: Option<(u64, u64)> = None;
    if pipe {
        check_framing(data, 16, data.len() as u64, big, release)?;
    } else {
        if header_size < 104 {
            return Err(ParseError::new(
                FORMAT,
                8,
                format!("header size {header_size}: expected 104 (file mode) or 16 (pipe mode)"),
            ));
        }
        // The size of one attribute entry, which the parser divides the
        // attribute section's size by.
        if field(data, 16, big).is_none_or(|size| !(8..=MAX_ATTR_ENTRY).contains(&size)) {
            return Err(ParseError::new(
                FORMAT,
                16,
                format!(
                    "attribute entry size {}: expected 8 to 65536 (perf writes the size of perf_event_attr plus 16)",
                    field(data, 16, big).unwrap_or(0)
                ),
            ));
        }
        let (offset, size) = match (field(data, 40, big), field(data, 48, big)) {
            (Some(o), Some(s)) => (o, s),
            _ => {
                return Err(ParseError::new(
                    FORMAT,
                    data.len() as u64,
                    "truncated header: expected the data section",
                ))
            }
        };
        let end = offset.checked_add(size).filter(|&e| e <= data.len() as u64);
        let Some(end) = end else {
            return Err(ParseError::new(
                FORMAT,
                40,
                format!(
                    "the data section ({size} bytes at offset {offset}) ends past the end of the file ({} bytes): truncated?",
                    data.len()
                ),
            ));
        };
        let framing = check_framing(data, offset, end, big, release)?;
        check_sections(data, end, big)?;
        if !framing.packed {
            in_place = Some((offset, end));
        }
    }
    let position = Rc::new(Cell::new(0u64));
    let source = Tracked {
        data,
        position: position.clone(),
        release,
        released: 0,
    };
    let at = |e: &dyn fmt::Display| ParseError::new(FORMAT, position.get(), format!("{e}"));
    let reader = if pipe {
        PerfFileReader::parse_pipe(source)
    } else {
        PerfFileReader::parse_file(source)
    }
    .map_err(|e| at(&e))?;
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = reader;

    let mut state = State::new(unwinder);
    state.set_events(&perf_file);
    if let Ok(ids) = perf_file.build_ids() {
        for (key, info) in ids {
            state.build_ids.insert(key, hex(&info.build_id));
        }
    }
    state.x86_64 = matches!(perf_file.arch(), Ok(Some("x86_64")) | Ok(None));
    let simpleperf = perf_file
        .features()
        .has_feature(linux_perf_data::Feature::SIMPLEPERF_META_INFO);
    let in_place = match (in_place, simpleperf) {
        (Some(range), false) => {
            state.file = Some(data);
            Some(range)
        }
        _ => None,
    };
    // `--call-graph dwarf` stacks are unwound on another thread (and the
    // cores it spreads them over) while the next samples are read.
    let dwarf = state.x86_64
        && perf_file.event_attributes().iter().any(|a| {
            a.attr
                .sample_format
                .contains(linux_perf_data::linux_perf_event_reader::SampleFormat::STACK_USER)
        });
    let file = state.file;
    std::thread::scope(|scope| -> Result<(), ParseError> {
        if let (Some(unwinder), true) = (unwinder, dwarf) {
            state.pipe = Some(Pipe::start(scope, unwinder, file));
        }
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let read = match in_place {
                Some((start, end)) => {
                    read_in_place(data, start, end, &perf_file, &mut state, release)
                }
                None => read_stream(&mut record_iter, &mut perf_file, &mut state, &at),
            };
            read.map(|()| state.drain_unwinds())
        }));
        // Ends the unwinding thread (also on an error, with a batch in
        // flight: its answer has nowhere to go; and on a panic, which the
        // scope would otherwise wait on the thread for, for ever).
        state.pipe = None;
        read.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    Ok(state.finish())
}

/// Reads the records of a file the crate's record iterator reads (pipe
/// mode, and files whose records are not read in place).
fn read_stream<R: Read>(
    record_iter: &mut linux_perf_data::PerfRecordIter<R>,
    perf_file: &mut linux_perf_data::PerfFile,
    state: &mut State<'_>,
    at: &dyn Fn(&dyn fmt::Display) -> ParseError,
) -> Result<(), ParseError> {
    loop {
        let record = record_iter.next_record(perf_file).map_err(|e| at(&e))?;
        let Some(record) = record else { break };
        match record {
            PerfFileRecord::EventRecord { attr_index, record } => {
                let body = record.data.as_slice();
                let parsed = parse_event(&record, &body).map_err(|e| at(&e))?;
                state.event(attr_index, parsed, record.misc)?;
            }
            PerfFileRecord::UserRecord(user) => {
                if user.record_type == UserRecordType::PERF_HEADER_BUILD_ID {
                    state.build_id_record(&user.data.as_slice(), user.misc);
                } else if user.record_type == UserRecordType::PERF_HEADER_ATTR
                    || user.record_type == UserRecordType::PERF_HEADER_FEATURE
                {
                    state.set_events(perf_file);
                }
            }
        }
    }
    Ok(())
}

/// A batch of stacks to unwind: the jobs, and in pipe mode their bytes.
struct Batch {
    jobs: Vec<UnwindJob>,
    stacks: Vec<u8>,
}

/// The thread that unwinds batches while the reader goes on: one batch
/// in flight at a time, answered in order. Dropping it ends the thread.
struct Pipe {
    to: std::sync::mpsc::SyncSender<Batch>,
    from: std::sync::mpsc::Receiver<Batch>,
}

impl Pipe {
    fn start<'scope, 'env: 'scope>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        unwinder: &'env dyn StackUnwinder,
        file: Option<&'env [u8]>,
    ) -> Pipe {
        let (to, batches) = std::sync::mpsc::sync_channel::<Batch>(1);
        let (done, from) = std::sync::mpsc::sync_channel::<Batch>(1);
        scope.spawn(move || {
            for mut batch in batches {
                match file {
                    Some(file) => unwinder.unwind(&mut batch.jobs, file),
                    None => unwinder.unwind(&mut batch.jobs, &batch.stacks),
                }
                if done.send(batch).is_err() {
                    break;
                }
            }
        });
        Pipe { to, from }
    }
}

/// The objects a perf.data file's build-id table names (`perf record`
/// writes one entry for each file its samples hit): (path, build id in
/// hex). Read from the header alone, so that a caller may start on those
/// files (their debug information) while the records are read. Empty in
/// pipe mode, or when the table is missing or malformed.
pub fn build_id_table(data: &[u8]) -> Vec<(String, String)> {
    /// The feature bit of `HEADER_BUILD_ID`.
    const BUILD_ID: u64 = 2;
    let big = data.starts_with(b"2ELIFREP");
    if !sniff(data) || field(data, 8, big).is_none_or(|size| size < 104) {
        return Vec::new();
    }
    let entry = field(data, 40, big)
        .zip(field(data, 48, big))
        .and_then(|(offset, size)| offset.checked_add(size))
        .and_then(|data_end| feature_entry(data, data_end, BUILD_ID, big));
    let Some((start, len)) = entry else {
        return Vec::new();
    };
    let mut table = Vec::new();
    let mut rest = section(data, start, len);
    while let Some((_, misc, size)) = record_header(rest, 0, big) {
        let size = usize::from(size);
        let Some((name, id, kernel)) = rest.get(8..size).and_then(|b| build_id_event(b, misc))
        else {
            break;
        };
        if !kernel {
            table.push((String::from_utf8_lossy(name).into_owned(), id));
        }
        rest = &rest[size..];
    }
    table
}

/// The `N` bytes at `offset`, in little-endian order (reversed when the
/// file is big-endian).
fn bytes_at<const N: usize>(data: &[u8], offset: usize, big: bool) -> Option<[u8; N]> {
    let mut bytes: [u8; N] = data.get(offset..offset.checked_add(N)?)?.try_into().ok()?;
    if big {
        bytes.reverse();
    }
    Some(bytes)
}

/// A `u16` at `offset`.
fn half(data: &[u8], offset: usize, big: bool) -> Option<u16> {
    bytes_at(data, offset, big).map(u16::from_le_bytes)
}

/// A `u32` at `offset`.
fn word(data: &[u8], offset: usize, big: bool) -> Option<u32> {
    bytes_at(data, offset, big).map(u32::from_le_bytes)
}

/// The record header (`struct perf_event_header`) at `offset`: type,
/// misc, size.
fn record_header(data: &[u8], offset: usize, big: bool) -> Option<(u32, u16, u16)> {
    Some((
        word(data, offset, big)?,
        half(data, offset + 4, big)?,
        half(data, offset + 6, big)?,
    ))
}

/// The {offset, size} entry of feature `bit` in the feature table that
/// follows the data section (ending at `data_end`): one entry per bit set,
/// in order. None when the bit is not set or the entry is not there.
fn feature_entry(data: &[u8], data_end: u64, bit: u64, big: bool) -> Option<(u64, u64)> {
    let features = field(data, 72, big)?;
    if features & (1 << bit) == 0 {
        return None;
    }
    let below = u64::from((features & ((1 << bit) - 1)).count_ones());
    let at = usize::try_from(data_end.checked_add(16 * below)?).ok()?;
    Some((field(data, at, big)?, field(data, at.checked_add(8)?, big)?))
}

/// The `size` bytes at `offset` (empty when they are not all there).
fn section(data: &[u8], offset: u64, size: u64) -> &[u8] {
    usize::try_from(offset)
        .ok()
        .zip(usize::try_from(offset.saturating_add(size)).ok())
        .and_then(|(start, end)| data.get(start..end))
        .unwrap_or_default()
}

/// A `struct build_id_event`'s body (after the header): the file name,
/// its build id in hex, and whether it is the kernel's. pid, build_id[20]
/// then (in newer files, `misc` bit 15) its length, reserved[3]; the name.
fn build_id_event(body: &[u8], misc: u16) -> Option<(&[u8], String, bool)> {
    if body.len() < 28 {
        return None;
    }
    let len = if misc & (1 << 15) != 0 {
        usize::from(body[24]).min(20)
    } else {
        20
    };
    let name = &body[28..];
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    Some((name, hex(&body[4..4 + len]), misc & 7 == 1))
}

/// A `u64` header field at `offset`.
fn field(data: &[u8], offset: usize, big: bool) -> Option<u64> {
    bytes_at(data, offset, big).map(u64::from_le_bytes)
}

/// Checks that the attribute and event-type sections and every feature
/// section the header announces lie inside the file (the parser would
/// otherwise allocate what a corrupt size says before reading).
fn check_sections(data: &[u8], data_end: u64, big: bool) -> Result<(), ParseError> {
    let len = data.len() as u64;
    let inside = |at: usize, what: &str| -> Result<(), ParseError> {
        let (offset, size) = match (field(data, at, big), field(data, at.saturating_add(8), big)) {
            (Some(o), Some(s)) => (o, s),
            _ => {
                return Err(ParseError::new(
                    FORMAT,
                    at as u64,
                    format!("truncated header: expected the {what} section"),
                ))
            }
        };
        match offset.checked_add(size) {
            Some(end) if end <= len => Ok(()),
            _ => Err(ParseError::new(
                FORMAT,
                at as u64,
                format!(
                    "the {what} section ({size} bytes at offset {offset}) ends past the end of the file ({len} bytes)"
                ),
            )),
        }
    };
    inside(24, "attributes")?;
    inside(56, "event types")?;
    // Without event descriptions, the parser reads the event types
    // section: entries of an attribute (the entry size) and the
    // {offset, size} of its ids, which it reserves room for before
    // reading: each must lie inside the file.
    let has_event_desc = field(data, 72, big).unwrap_or(0) & (1 << EVENT_DESC) != 0;
    if let (false, Some(attr_size), Some(types_at), Some(types_size)) = (
        has_event_desc,
        field(data, 16, big),
        field(data, 56, big),
        field(data, 64, big),
    ) {
        // The parser reads the entries one after the other: an attribute
        // (as many bytes as the version its own size names: the largest
        // of 64, 72, 80, 96, 104, 112, 120, 128 not above it, or all of
        // it beyond 128), a skip to the entry size, then the ids'
        // {offset, size}.
        const VERSIONS: [u64; 8] = [64, 72, 80, 96, 104, 112, 120, 128];
        let mut at = types_at;
        for _ in 0..types_size / (attr_size + 16) {
            let Some(own) = usize::try_from(at + 4)
                .ok()
                .and_then(|i| word(data, i, big))
                .map(u64::from)
            else {
                break;
            };
            if own < 64 || own > attr_size {
                // The parser refuses it.
                break;
            }
            let read = if own > 128 {
                own
            } else {
                VERSIONS
                    .iter()
                    .copied()
                    .filter(|&v| v <= own)
                    .max()
                    .unwrap_or(64)
            };
            at += read + (attr_size - own);
            let ids = usize::try_from(at).unwrap_or(usize::MAX);
            if field(data, ids, big).is_none() || field(data, ids.saturating_add(8), big).is_none()
            {
                break;
            }
            inside(ids, "event ids")?;
            at += 16;
        }
    }
    // The feature bitmap: one {offset, size} entry after the data for
    // each bit set.
    let mut features = 0u64;
    for word in 0..4 {
        features += u64::from(field(data, 72 + word * 8, big).unwrap_or(0).count_ones());
    }
    for i in 0..features {
        let at = data_end.saturating_add(16 * i);
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        inside(at, "feature")?;
    }
    // The event descriptions (feature bit 12): its entry is the one after
    // those of the lower bits set.
    if let Some((offset, size)) = feature_entry(data, data_end, EVENT_DESC, big) {
        check_event_desc(section(data, offset, size), big)
            .map_err(|e| ParseError::new(FORMAT, offset, e))?;
    }
    Ok(())
}

/// The largest attribute entry size taken (`perf_event_attr` is 136 bytes
/// today, plus 16): the parser adds to it unchecked.
const MAX_ATTR_ENTRY: u64 = 1 << 16;

/// The feature bit of `HEADER_EVENT_DESC`.
const EVENT_DESC: u64 = 12;

/// Walks an event description feature (`u32 nr, u32 attr_size`, then per
/// event its attributes, `u32 nr_ids`, a length-prefixed name and
/// `nr_ids` ids): every count must fit in the bytes there are (the
/// parser reserves room for what the counts say before reading).
fn check_event_desc(section: &[u8], big: bool) -> Result<(), String> {
    let u32_at = |at: usize| -> Option<u64> {
        let bytes: [u8; 4] = section.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(u64::from(if big {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        }))
    };
    let short = || "event descriptions: counts larger than the section: corrupt file".to_string();
    let (Some(nr), Some(attr_size)) = (u32_at(0), u32_at(4)) else {
        return Err(short());
    };
    let len = section.len() as u64;
    let mut pos: u64 = 8;
    for _ in 0..nr {
        // Each event takes at least 8 bytes: the loop ends within len / 8.
        pos = pos.saturating_add(attr_size);
        let nr_ids = u32_at(usize::try_from(pos).map_err(|_| short())?).ok_or_else(short)?;
        let name_len = u32_at(usize::try_from(pos + 4).map_err(|_| short())?).ok_or_else(short)?;
        pos = pos
            .saturating_add(8)
            .saturating_add(name_len)
            .saturating_add(nr_ids.saturating_mul(8));
        if pos > len {
            return Err(short());
        }
    }
    Ok(())
}

/// Walks the record headers of `data[start..end]`: every record at least
/// its header long, inside the data, of a type perf writes. `release` is
/// given the parts walked past (as [`read_with`]'s), so that the walk
/// does not leave the whole file resident.
pub fn check_framing(
    data: &[u8],
    start: u64,
    end: u64,
    big: bool,
    release: Option<fn(&[u8])>,
) -> Result<Framing, ParseError> {
    let mut framing = Framing { packed: false };
    let mut offset = start;
    let mut released = 0usize;
    while offset < end {
        if let Some(release) = release {
            let at = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(data.len());
            if at >= released + RELEASE_EVERY {
                release(&data[released..at]);
                released = at;
            }
        }
        let o = offset as usize;
        let Some(header) = data.get(o..o + 8).filter(|_| offset + 8 <= end) else {
            return Err(ParseError::new(
                FORMAT,
                offset,
                format!(
                    "truncated record: {} bytes left, expected an 8-byte record header",
                    end - offset
                ),
            ));
        };
        let (kind, _, size) = record_header(header, 0, big).unwrap_or_default();
        if size < 8 {
            return Err(ParseError::new(
                FORMAT,
                offset,
                format!("record of type {kind} has size {size}: expected at least 8"),
            ));
        }
        // Kernel records 1-21 (MMAP ... AUX_OUTPUT_HW_ID), perf's own
        // 64-83 (HEADER_ATTR ... FINISHED_INIT and the like).
        if !(1..=21).contains(&kind) && !(64..=83).contains(&kind) {
            return Err(ParseError::new(
                FORMAT,
                offset,
                format!("unknown record type {kind} ({size} bytes)"),
            ));
        }
        if offset + u64::from(size) > end {
            return Err(ParseError::new(
                FORMAT,
                offset,
                format!(
                    "record of type {kind} is {size} bytes but only {} are left: truncated file",
                    end - offset
                ),
            ));
        }
        // PERF_RECORD_AUXTRACE (its data follows the record), COMPRESSED
        // and COMPRESSED2 (zstd frames of records).
        if matches!(kind, 71 | 81 | 83) {
            framing.packed = true;
        }
        if kind == 80 {
            // PERF_RECORD_HEADER_FEATURE: u64 feature id, then the
            // feature's bytes.
            let body = data.get(o + 8..o + usize::from(size)).unwrap_or_default();
            // The parser keeps the id's low 32 bits (`as u32`): so here.
            let id = field(body, 0, big).map(|id| u64::from(id as u32));
            if id == Some(EVENT_DESC) {
                check_event_desc(body.get(8..).unwrap_or_default(), big)
                    .map_err(|e| ParseError::new(FORMAT, offset, e))?;
            }
        }
        if kind == 66 {
            // PERF_RECORD_HEADER_TRACING_DATA is followed by the tracing
            // data itself, which the record's size does not count.
            return Err(ParseError::new(
                FORMAT,
                offset,
                "tracepoint data (PERF_RECORD_HEADER_TRACING_DATA) in a pipe stream: record to a file instead (perf record -o FILE)",
            ));
        }
        offset += u64::from(size);
        if kind == 71 {
            // PERF_RECORD_AUXTRACE: its data (as many bytes as the u64
            // after the header says) follows the record, uncounted by its
            // size; the parser reserves room for it before reading.
            let aux = field(data, o + 8, big).unwrap_or(0);
            if aux > end - offset {
                return Err(ParseError::new(
                    FORMAT,
                    offset - u64::from(size),
                    format!(
                        "AUXTRACE record: its {aux} bytes of trace data run past the end of the data ({} bytes left): truncated file",
                        end - offset
                    ),
                ));
            }
            offset += aux;
        }
    }
    Ok(framing)
}

/// What [`check_framing`] found out about the records on its way.
#[derive(Debug, Clone, Copy)]
pub struct Framing {
    /// Some records hold others (compressed) or data beyond their size
    /// (AUX trace data): they are not all where the headers say.
    pub packed: bool,
}

/// A sample record (`PERF_RECORD_SAMPLE`).
const PERF_RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_MMAP2`.
const PERF_RECORD_MMAP2: u32 = 10;

/// Parses a kernel record (`body` its bytes), after the checks of what
/// the parser would take on trust: an MMAP2 build id's length (which it
/// asserts: at most 20 bytes, in the byte after the offsets) and a
/// sample's callchain count ([`callchain_fits`]). The error is the
/// message, without the offset.
fn parse_event<'a>(
    record: &linux_perf_data::linux_perf_event_reader::RawEventRecord<'a>,
    body: &[u8],
) -> Result<EventRecord<'a>, String> {
    let kind = record.record_type.0;
    if kind == PERF_RECORD_MMAP2
        && record.misc & (1 << 14) != 0
        && body.get(32).is_none_or(|&n| n > 20)
    {
        return Err("MMAP2 record: build id longer than 20 bytes".to_string());
    }
    if kind == PERF_RECORD_SAMPLE && !callchain_fits(body, &record.parse_info) {
        return Err(
            "SAMPLE record: its callchain is longer than the record: corrupt file".to_string(),
        );
    }
    record
        .parse()
        .map_err(|e| format!("{:?} record: {e}", record.record_type))
}

/// Whether a sample record's callchain count (when its format has one)
/// fits in the record. The parser multiplies it by 8 unchecked: a count
/// of 2^61 or more overflows. The fields before it are skipped the way
/// the parser reads them (`linux-perf-event-reader` 0.10: with
/// `PERF_FORMAT_GROUP` one value, else a count of values).
fn callchain_fits(
    body: &[u8],
    info: &linux_perf_data::linux_perf_event_reader::RecordParseInfo,
) -> bool {
    use linux_perf_data::linux_perf_event_reader::{ReadFormat, SampleFormat};
    let format = info.sample_format;
    if !format.contains(SampleFormat::CALLCHAIN) {
        return true;
    }
    let big = matches!(info.endian, Endianness::BigEndian);
    let u64_at = |at: usize| field(body, at, big);
    let mut at = 8 * [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ]
    .iter()
    .filter(|&&f| format.contains(f))
    .count();
    if format.contains(SampleFormat::READ) {
        let read = info.read_format;
        let times = 8
            * (usize::from(read.contains(ReadFormat::TOTAL_TIME_ENABLED))
                + usize::from(read.contains(ReadFormat::TOTAL_TIME_RUNNING)));
        if read.contains(ReadFormat::GROUP) {
            at += 8 + times + 8 * usize::from(read.contains(ReadFormat::ID));
        } else {
            let Some(nr) = u64_at(at) else { return true };
            let each = 8 + 8 * u64::from(read.contains(ReadFormat::ID));
            let Some(values) = nr.checked_mul(each).and_then(|v| usize::try_from(v).ok()) else {
                // The parser stops at the end of the record.
                return true;
            };
            at = at.saturating_add(8 + times).saturating_add(values);
        }
    }
    match u64_at(at) {
        Some(nr) => nr <= (body.len().saturating_sub(at + 8) / 8) as u64,
        // Shorter than that: the parser says so.
        None => true,
    }
}

/// perf's own record types read in place.
const PERF_RECORD_HEADER_BUILD_ID: u32 = 67;
const PERF_RECORD_FINISHED_ROUND: u32 = 68;

/// A record waiting for its round to end: where it is and its event.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// Time (None for records without one: they come first), then the
    /// offset (the order of the file among equal times).
    key: (Option<u64>, u64),
    /// The event (attribute index); None for perf's own records.
    attr: Option<usize>,
    /// The record's header, read once: type, misc, size.
    kind: u32,
    misc: u16,
    size: u16,
}

/// Reads the records of a file-mode data section (`data[start..end]`,
/// framing checked) where they lie, in the order `perf report` and the
/// `linux-perf-data` crate give them: each round (up to a
/// `FINISHED_ROUND` record) sorted by time, the records of a round
/// released only once no later round can hold an earlier time. The
/// crate's reader copies every record into a buffer first (8 KB of stack
/// for each `--call-graph dwarf` sample, hundreds of MB in all); here the
/// records are parsed, and their stacks unwound, in the mapped file.
fn read_in_place(
    data: &[u8],
    start: u64,
    end: u64,
    perf_file: &linux_perf_data::PerfFile,
    state: &mut State<'_>,
    release: Option<fn(&[u8])>,
) -> Result<(), ParseError> {
    use linux_perf_data::linux_perf_event_reader::{
        get_record_id, get_record_identifier, get_record_timestamp, AttrFlags, RawEventRecord,
        RecordParseInfo, RecordType, SampleFormat,
    };
    let endian = perf_file.endian();
    let attributes = perf_file.event_attributes();
    let infos: Vec<RecordParseInfo> = attributes
        .iter()
        .map(|a| RecordParseInfo::new(&a.attr, endian))
        .collect();
    let mut attr_of_id: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, a) in attributes.iter().enumerate() {
        for &id in &a.event_ids {
            attr_of_id.insert(id, i);
        }
    }
    // How a record's event is found, as the crate finds it: one event;
    // several read alike (the id where they all have it); or each with
    // PERF_SAMPLE_IDENTIFIER (the id first, or last).
    let same = infos
        .windows(2)
        .all(|w| w[0].id_parse_info == w[1].id_parse_info);
    let identified = attributes
        .iter()
        .all(|a| a.attr.sample_format.contains(SampleFormat::IDENTIFIER));
    let sample_id_all = attributes
        .first()
        .is_some_and(|a| a.attr.flags.contains(AttrFlags::SAMPLE_ID_ALL));
    if infos.len() > 1 && !same && !identified {
        return Err(ParseError::new(
            FORMAT,
            start,
            "several events, read differently, without PERF_SAMPLE_IDENTIFIER: cannot tell their records apart",
        ));
    }
    let big = matches!(endian, Endianness::BigEndian);
    let attr_of = |kind: RecordType, body: RawData| -> usize {
        if infos.len() == 1 {
            return 0;
        }
        let id = match (endian, same) {
            (Endianness::LittleEndian, true) => {
                get_record_id::<byteorder::LittleEndian>(kind, body, &infos[0].id_parse_info)
            }
            (Endianness::BigEndian, true) => {
                get_record_id::<byteorder::BigEndian>(kind, body, &infos[0].id_parse_info)
            }
            (Endianness::LittleEndian, false) => {
                get_record_identifier::<byteorder::LittleEndian>(kind, body, sample_id_all)
            }
            (Endianness::BigEndian, false) => {
                get_record_identifier::<byteorder::BigEndian>(kind, body, sample_id_all)
            }
        };
        id.and_then(|id| attr_of_id.get(&id).copied()).unwrap_or(0)
    };
    let time_of = |kind: RecordType, body: RawData, info: &RecordParseInfo| match endian {
        Endianness::LittleEndian => {
            get_record_timestamp::<byteorder::LittleEndian>(kind, body, info)
        }
        Endianness::BigEndian => get_record_timestamp::<byteorder::BigEndian>(kind, body, info),
    };

    // The sorter: records of the rounds not yet released, and of them how
    // many are at or before the previous round's latest time.
    let mut incoming: Vec<Waiting> = Vec::new();
    let mut previous_max: (Option<u64>, u64) = (None, 0);
    let mut current_max: (Option<u64>, u64) = (None, 0);
    let mut ready = 0usize;
    let mut released = 0usize;
    let process = |w: Waiting, state: &mut State<'_>| -> Result<(), ParseError> {
        let (kind, misc, at) = (w.kind, w.misc, w.key.1 as usize);
        let body = &data[at + 8..at + usize::from(w.size)];
        let at_offset = |e: &dyn fmt::Display| ParseError::new(FORMAT, at as u64, format!("{e}"));
        match w.attr {
            Some(attr) => {
                let record =
                    RawEventRecord::new(RecordType(kind), misc, RawData::Single(body), infos[attr]);
                let parsed = parse_event(&record, body).map_err(|e| at_offset(&e))?;
                state.event(attr, parsed, misc)
            }
            None => {
                if kind == PERF_RECORD_HEADER_BUILD_ID {
                    state.build_id_record(body, misc);
                }
                Ok(())
            }
        }
    };
    let mut offset = start;
    while offset < end {
        let at = offset as usize;
        // Framing checked: every header and body is there.
        let (kind, misc, size) = record_header(data, at, big).unwrap_or_default();
        let body = RawData::Single(&data[at + 8..at + usize::from(size)]);
        offset += u64::from(size);
        let record_type = RecordType(kind);
        if kind == PERF_RECORD_FINISHED_ROUND {
            // Release what no later round can come before.
            if ready > 0 {
                let (done, _, _) = incoming.select_nth_unstable_by_key(ready - 1, |w| w.key);
                done.sort_unstable_by_key(|w| w.key);
                for w in incoming.drain(..ready) {
                    process(w, state)?;
                }
            }
            previous_max = current_max;
            ready = incoming.len();
            if let Some(release) = release {
                // Pages behind every waiting record and pending stack.
                let waiting = incoming
                    .iter()
                    .map(|w| w.key.1 as usize)
                    .min()
                    .unwrap_or(at);
                let low = state
                    .lowest_pending_stack()
                    .unwrap_or(usize::MAX)
                    .min(waiting);
                if low >= released + RELEASE_EVERY {
                    release(&data[released..low]);
                    released = low;
                }
            }
            continue;
        }
        let (attr, time) = if record_type.is_user_type() {
            (None, None)
        } else {
            let attr = attr_of(record_type, body);
            (Some(attr), time_of(record_type, body, &infos[attr]))
        };
        let key = (time, at as u64);
        if key <= previous_max {
            ready += 1;
        } else if key > current_max {
            current_max = key;
        }
        incoming.push(Waiting {
            key,
            attr,
            kind,
            misc,
            size,
        });
    }
    incoming.sort_unstable_by_key(|w| w.key);
    for w in incoming {
        process(w, state)?;
    }
    Ok(())
}

/// The input as `Read + Seek`, with the position shared so that errors
/// say how far the parser got.
struct Tracked<'a> {
    data: &'a [u8],
    position: Rc<Cell<u64>>,
    release: Option<fn(&[u8])>,
    /// Where the last release ended.
    released: usize,
}

/// How much is read between two releases.
const RELEASE_EVERY: usize = 16 << 20;

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let at = (self.position.get() as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - at);
        buf[..n].copy_from_slice(&self.data[at..at + n]);
        self.position.set((at + n) as u64);
        if let Some(release) = self.release {
            if at < self.released {
                // A seek back (the header, then the data section).
                self.released = at;
            }
            if at + n >= self.released + RELEASE_EVERY {
                release(&self.data[self.released..at + n]);
                self.released = at + n;
            }
        }
        Ok(n)
    }
}

impl Seek for Tracked<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let len = self.data.len() as i128;
        let new = match pos {
            SeekFrom::Start(p) => i128::from(p),
            SeekFrom::End(d) => len + i128::from(d),
            SeekFrom::Current(d) => i128::from(self.position.get()) + i128::from(d),
        };
        if new < 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start",
            ));
        }
        let new = u64::try_from(new).unwrap_or(u64::MAX);
        self.position.set(new);
        Ok(new)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One event of the file.
struct Event {
    /// The period when the attr fixes one (not a frequency).
    fixed_period: Option<u64>,
    /// Its sample type; None for perf's side-band `dummy` event.
    slot: Option<usize>,
}

/// A process: its name and its mappings by start address.
#[derive(Clone, Default)]
struct Process {
    comm: Option<Arc<str>>,
    /// start → (end, mapping).
    maps: BTreeMap<u64, (u64, MappingId)>,
    /// The executable file mappings as last handed to the unwinder; None
    /// after a change.
    space: Option<Arc<AddressSpace>>,
}

/// What a sample becomes once its stack is known.
struct Pending {
    /// Index into `State::jobs`.
    job: usize,
    pid: i32,
    kernel: Vec<u64>,
    values: Vec<i64>,
    labels: Vec<Label>,
}

struct State<'u> {
    unwinder: Option<&'u dyn StackUnwinder>,
    /// The whole file when its records are read in place
    /// ([`read_in_place`]): the jobs' stacks are then ranges of it, not
    /// copies in `stacks`.
    file: Option<&'u [u8]>,
    x86_64: bool,
    events: Vec<Event>,
    profile: Profile,
    processes: FxHashMap<i32, Process>,
    threads: FxHashMap<i32, Arc<str>>,
    build_ids: FxHashMap<DsoKey, String>,
    mapping_index: FxHashMap<(u64, u64, u64, String, String), MappingId>,
    kernel_mapping: Option<MappingId>,
    location_index: FxHashMap<(Option<MappingId>, u64), LocationId>,
    jobs: Vec<UnwindJob>,
    /// The stack bytes of `jobs`, one after the other.
    stacks: Vec<u8>,
    pending: Vec<Pending>,
    /// The unwinding thread, when there is one.
    pipe: Option<Pipe>,
    /// The samples of the batch the unwinding thread has, and where its
    /// first stack starts in the file.
    in_flight: Option<(Vec<Pending>, Option<usize>)>,
    /// The `tid` and `timestamp_ns` label values of every sample so far.
    /// Two samples can have the same labels only if they have the same pair.
    seen: FxHashSet<(i64, Option<i64>)>,
    /// The pairs seen more than once: only their samples may merge.
    twice: FxHashSet<(i64, Option<i64>)>,
}

impl<'u> State<'u> {
    fn new(unwinder: Option<&'u dyn StackUnwinder>) -> State<'u> {
        State {
            unwinder,
            file: None,
            x86_64: true,
            events: Vec::new(),
            profile: Profile::default(),
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
            build_ids: FxHashMap::default(),
            mapping_index: FxHashMap::default(),
            kernel_mapping: None,
            location_index: FxHashMap::default(),
            jobs: Vec::new(),
            stacks: Vec::new(),
            pending: Vec::new(),
            pipe: None,
            in_flight: None,
            seen: FxHashSet::default(),
            twice: FxHashSet::default(),
        }
    }

    /// The sample types: one per event, named after it.
    fn set_events(&mut self, file: &linux_perf_data::PerfFile) {
        let attrs = file.event_attributes();
        if attrs.len() <= self.events.len() {
            return;
        }
        self.events.clear();
        self.profile.sample_types.clear();
        let mut seen: Vec<String> = Vec::new();
        for (i, desc) in attrs.iter().enumerate() {
            let attr = desc.attributes();
            let fixed_period = match attr.sampling_policy {
                SamplingPolicy::Period(p) => Some(p.get()),
                _ => None,
            };
            if matches!(
                attr.type_,
                PerfEventType::Software(SoftwareCounterType::Dummy)
            ) {
                self.events.push(Event {
                    fixed_period,
                    slot: None,
                });
                continue;
            }
            let (name, unit) = event_name(&attr.type_);
            let mut name = desc.name().map(str::to_string).unwrap_or(name);
            // perf writes `cpu-clock:u` style modifiers; keep them but make
            // every name unique.
            if seen.contains(&name) {
                name = format!("{name}#{i}");
            }
            seen.push(name.clone());
            self.events.push(Event {
                fixed_period,
                slot: Some(self.profile.sample_types.len()),
            });
            self.profile.sample_types.push(ValueType::new(&name, unit));
        }
        if let (Some(first), Some(event)) = (
            self.profile.sample_types.first(),
            self.events.iter().find(|e| e.slot == Some(0)),
        ) {
            self.profile.default_sample_type = first.kind.clone();
            self.profile.period_type = first.clone();
            self.profile.period = event.fixed_period.map_or(0, |p| p as i64);
        }
        // Samples read before an attribute record arrived (pipe mode)
        // get the new sample types' width.
        let n = self.profile.sample_types.len();
        for s in &mut self.profile.samples {
            s.values.resize(n, 0);
        }
    }

    fn build_id_record(&mut self, body: &[u8], misc: u16) {
        let Some((name, id, kernel)) = build_id_event(body, misc) else {
            return;
        };
        let mode = if kernel {
            CpuMode::Kernel
        } else {
            CpuMode::User
        };
        if let Some(key) = DsoKey::detect(name, mode) {
            self.build_ids.insert(key, id);
        }
    }

    fn event(
        &mut self,
        attr_index: usize,
        record: EventRecord,
        misc: u16,
    ) -> Result<(), ParseError> {
        match record {
            EventRecord::Comm(c) => {
                let name: Arc<str> = String::from_utf8_lossy(&c.name.as_slice()).into();
                if c.is_execve {
                    // A new program: the old mappings are gone (the
                    // samples waiting are named from them first).
                    self.drain_unwinds();
                    let p = self.processes.entry(c.pid).or_default();
                    p.maps.clear();
                    p.space = None;
                }
                if c.pid == c.tid || c.is_execve {
                    self.processes.entry(c.pid).or_default().comm = Some(name.clone());
                }
                self.threads.insert(c.tid, name);
            }
            EventRecord::Fork(f) => {
                if f.pid != f.ppid {
                    let parent = self.processes.get(&f.ppid).cloned().unwrap_or_default();
                    self.processes.insert(f.pid, parent);
                }
                if let Some(name) = self.threads.get(&f.ptid).cloned() {
                    self.threads.insert(f.tid, name);
                }
            }
            EventRecord::Exit(_) => {}
            EventRecord::Mmap(m) => {
                let path = m.path.as_slice();
                self.mmap(
                    m.pid,
                    m.address,
                    m.length,
                    m.page_offset,
                    &path,
                    m.cpu_mode,
                    None,
                    m.is_executable,
                );
            }
            EventRecord::Mmap2(m) => {
                let path = m.path.as_slice();
                let build_id = match &m.file_id {
                    Mmap2FileId::BuildId(id) => Some(hex(id)),
                    Mmap2FileId::InodeAndVersion(_) => None,
                };
                let exec = m.protection & 4 != 0;
                self.mmap(
                    m.pid,
                    m.address,
                    m.length,
                    m.page_offset,
                    &path,
                    m.cpu_mode,
                    build_id,
                    exec,
                );
            }
            EventRecord::Sample(s) => {
                let _ = misc;
                self.sample(attr_index, s);
            }
            _ => {}
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn mmap(
        &mut self,
        pid: i32,
        start: u64,
        length: u64,
        offset: u64,
        path: &[u8],
        mode: CpuMode,
        build_id: Option<String>,
        executable: bool,
    ) {
        let limit = start.saturating_add(length);
        let kernel = matches!(mode, CpuMode::Kernel) || pid == -1;
        if kernel {
            // The kernel and its modules: one mapping, named from kallsyms.
            if self.kernel_mapping.is_none() {
                let build_id = self
                    .build_ids
                    .get(&DsoKey::Kernel)
                    .cloned()
                    .unwrap_or_default();
                let id = MappingId::from_index(self.profile.mappings.len());
                self.profile.mappings.push(Mapping {
                    start: start.min(0xffff_8000_0000_0000),
                    limit: u64::MAX,
                    offset: 0,
                    path: KERNEL_MAPPING.to_string(),
                    build_id,
                    perms: "r-xp".to_string(),
                    ..Mapping::default()
                });
                self.kernel_mapping = Some(id);
            }
            return;
        }
        if !executable {
            return;
        }
        let text = String::from_utf8_lossy(path);
        let anonymous = text.is_empty()
            || text == "//anon"
            || text.starts_with("/anon_hugepage")
            || text.starts_with("/dev/zero")
            || text.starts_with("[anon")
            || text.starts_with("/memfd:");
        let path = if anonymous {
            format!("/tmp/perf-{pid}.map")
        } else {
            text.into_owned()
        };
        let build_id = build_id
            .or_else(|| {
                let key = DsoKey::detect(path.as_bytes(), CpuMode::User)?;
                self.build_ids.get(&key).cloned()
            })
            .unwrap_or_default();
        let offset = if anonymous { 0 } else { offset };
        let key = (start, limit, offset, path, build_id);
        let id = match self.mapping_index.get(&key) {
            Some(&id) => id,
            None => {
                let id = MappingId::from_index(self.profile.mappings.len());
                self.profile.mappings.push(Mapping {
                    start,
                    limit,
                    offset,
                    path: key.3.clone(),
                    build_id: key.4.clone(),
                    perms: "r-xp".to_string(),
                    ..Mapping::default()
                });
                self.mapping_index.insert(key, id);
                id
            }
        };
        // The samples waiting are named from the mappings they were taken
        // under.
        self.drain_unwinds();
        let process = self.processes.entry(pid).or_default();
        // A new mapping replaces what it overlaps.
        let overlapping: Vec<u64> = process
            .maps
            .range(..limit)
            .filter(|(_, (end, _))| *end > start)
            .map(|(s, _)| *s)
            .collect();
        for s in overlapping {
            if let Some((end, old)) = process.maps.remove(&s) {
                if s < start {
                    process.maps.insert(s, (start, old));
                }
                if end > limit {
                    process.maps.insert(limit, (end, old));
                }
            }
        }
        process.maps.insert(start, (limit, id));
        process.space = None;
    }

    fn user_mapping(&self, pid: i32, address: u64) -> Option<MappingId> {
        let process = self.processes.get(&pid)?;
        let (_, &(end, id)) = process.maps.range(..=address).next_back()?;
        (address < end).then_some(id)
    }

    fn location(&mut self, pid: i32, address: u64, kernel: bool) -> LocationId {
        let mapping = if kernel {
            self.kernel_mapping.or_else(|| {
                let id = MappingId::from_index(self.profile.mappings.len());
                self.profile.mappings.push(Mapping {
                    start: 0xffff_8000_0000_0000,
                    limit: u64::MAX,
                    path: KERNEL_MAPPING.to_string(),
                    perms: "r-xp".to_string(),
                    ..Mapping::default()
                });
                self.kernel_mapping = Some(id);
                Some(id)
            })
        } else {
            self.user_mapping(pid, address)
        };
        let next = LocationId::from_index(self.profile.locations.len());
        let id = *self
            .location_index
            .entry((mapping, address))
            .or_insert(next);
        if id == next {
            self.profile.locations.push(crate::Location {
                address,
                mapping,
                ..crate::Location::default()
            });
        }
        id
    }

    fn space(&mut self, pid: i32) -> Arc<AddressSpace> {
        let mappings = &self.profile.mappings;
        let process = self.processes.entry(pid).or_default();
        if let Some(space) = &process.space {
            return space.clone();
        }
        let mut list: Vec<Mapping> = Vec::new();
        for (&start, &(end, id)) in &process.maps {
            let m = &mappings[id.index()];
            if m.path.starts_with("/tmp/perf-") {
                continue;
            }
            let mut m = m.clone();
            // A part left by an overlapping mapping (the file's offsets
            // are whatever it says: they wrap, as perf's do).
            m.offset = m.offset.wrapping_add(start.wrapping_sub(m.start));
            m.start = start;
            m.limit = end;
            list.push(m);
        }
        let space = Arc::new(AddressSpace {
            id: NEXT_SPACE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            mappings: list,
        });
        process.space = Some(space.clone());
        space
    }

    fn sample(
        &mut self,
        attr_index: usize,
        s: linux_perf_data::linux_perf_event_reader::SampleRecord,
    ) {
        while self.events.len() <= attr_index {
            // An event without an attribute description: named by index.
            let slot = self.profile.sample_types.len();
            self.profile.sample_types.push(ValueType::new(
                &format!("event{}", self.events.len()),
                "count",
            ));
            self.events.push(Event {
                fixed_period: None,
                slot: Some(slot),
            });
            for s in &mut self.profile.samples {
                s.values.resize(slot + 1, 0);
            }
        }
        let event = &self.events[attr_index];
        let Some(slot) = event.slot else { return };
        let period = s.period.or(event.fixed_period).unwrap_or(1);
        let mut values = vec![0i64; self.profile.sample_types.len()];
        values[slot] = i64::try_from(period).unwrap_or(i64::MAX);
        let pid = s.pid.unwrap_or(-1);
        let tid = s.tid.unwrap_or(pid);
        let mut labels = Vec::with_capacity(6);
        labels.push(Label::num("pid", i64::from(pid), ""));
        labels.push(Label::num("tid", i64::from(tid), ""));
        let thread_comm = self.threads.get(&tid).cloned();
        let comm = self
            .processes
            .get(&pid)
            .and_then(|p| p.comm.clone())
            .or_else(|| thread_comm.clone());
        if let Some(comm) = comm {
            labels.push(Label::str("comm", &comm));
        }
        if let Some(name) = thread_comm {
            labels.push(Label::str("thread_comm", &name));
        }
        if let Some(cpu) = s.cpu {
            labels.push(Label::num("cpu", i64::from(cpu), ""));
        }
        let time = s.timestamp.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        if let Some(time) = time {
            labels.push(Label::num("timestamp_ns", time, "nanoseconds"));
        }
        if !self.seen.insert((i64::from(tid), time)) {
            self.twice.insert((i64::from(tid), time));
        }

        // Callchain addresses, split by context.
        let mut kernel: Vec<u64> = Vec::new();
        let mut user: Vec<u64> = Vec::new();
        let leaf_in_kernel = matches!(s.cpu_mode, CpuMode::Kernel);
        if let Some(chain) = &s.callchain {
            let mut in_kernel = leaf_in_kernel;
            for i in 0..chain.len() {
                let Some(a) = chain.get(i) else { break };
                if a >= PERF_CONTEXT_MAX {
                    in_kernel = a == PERF_CONTEXT_KERNEL;
                    if a != PERF_CONTEXT_KERNEL && a != PERF_CONTEXT_USER {
                        // Hypervisor and guest frames: none of ours.
                        in_kernel = false;
                    }
                    continue;
                }
                if in_kernel {
                    kernel.push(a);
                } else {
                    user.push(a);
                }
            }
        } else if let Some(ip) = s.ip {
            if leaf_in_kernel {
                kernel.push(ip);
            } else {
                user.push(ip);
            }
        }
        // `--call-graph dwarf`: unwind the user stack.
        if let (Some(regs), Some((stack, dyn_size)), Some(_), true) =
            (&s.user_regs, &s.user_stack, self.unwinder, self.x86_64)
        {
            // perf's x86_64 register numbers: BP 6, SP 7, IP 8.
            if let (Some(_), Some(_), Some(pc)) = (regs.get(6), regs.get(7), regs.get(8)) {
                let size = (*dyn_size as usize).min(stack.len());
                let bytes = stack.get(0..size).unwrap_or(RawData::Single(&[]));
                let range = match (self.file, bytes) {
                    (Some(file), RawData::Single(bytes)) => {
                        // Where the bytes lie in the file (they are a part of it).
                        let start = (bytes.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
                        start..start + bytes.len()
                    }
                    _ => {
                        let start = self.stacks.len();
                        self.stacks.extend_from_slice(&bytes.as_slice());
                        start..self.stacks.len()
                    }
                };
                let space = self.space(pid);
                self.jobs.push(UnwindJob {
                    space,
                    pc,
                    regs: PERF_OF_DWARF.map(|perf| regs.get(perf)),
                    stack: range,
                    frames: Vec::new(),
                });
                self.pending.push(Pending {
                    job: self.jobs.len() - 1,
                    pid,
                    kernel,
                    values,
                    labels,
                });
                if self.jobs.len() >= UNWIND_BATCH {
                    self.flush_unwinds();
                }
                return;
            }
        }
        let locations = self.stack(pid, &kernel, &user);
        self.profile.samples.push(Sample {
            locations,
            values,
            labels,
        });
    }

    /// The locations of a stack: kernel frames then user frames, leaf
    /// first. The first frame of each part is where that mode was
    /// interrupted (the user part's first is the user instruction pointer
    /// saved on entering the kernel: a faulting instruction, often a
    /// function's first byte, or the one after a `syscall`); every other
    /// frame is a return address, stored minus one so that it names the
    /// call.
    fn stack(&mut self, pid: i32, kernel: &[u64], user: &[u64]) -> Vec<LocationId> {
        let mut locations = Vec::with_capacity(kernel.len() + user.len());
        for (i, &a) in kernel.iter().enumerate() {
            let a = if i == 0 { a } else { a.wrapping_sub(1) };
            locations.push(self.location(pid, a, true));
        }
        for (i, &a) in user.iter().enumerate() {
            let a = if i == 0 { a } else { a.wrapping_sub(1) };
            locations.push(self.location(pid, a, false));
        }
        locations
    }

    /// Sends the batch of jobs to be unwound: to the unwinding thread once
    /// the batch before it is done, or unwinds it here without one.
    fn flush_unwinds(&mut self) {
        if self.jobs.is_empty() {
            return;
        }
        let batch = Batch {
            jobs: std::mem::take(&mut self.jobs),
            stacks: std::mem::take(&mut self.stacks),
        };
        let pending = std::mem::take(&mut self.pending);
        self.finish_in_flight();
        let batch = match &self.pipe {
            Some(pipe) => {
                let lowest = self
                    .file
                    .and_then(|_| batch.jobs.iter().map(|j| j.stack.start).min());
                match pipe.to.send(batch) {
                    Ok(()) => {
                        self.in_flight = Some((pending, lowest));
                        return;
                    }
                    // The thread is gone: unwind here.
                    Err(std::sync::mpsc::SendError(batch)) => batch,
                }
            }
            None => batch,
        };
        let mut batch = batch;
        if let Some(unwinder) = self.unwinder {
            match self.file {
                Some(file) => unwinder.unwind(&mut batch.jobs, file),
                None => unwinder.unwind(&mut batch.jobs, &batch.stacks),
            }
        }
        self.add_unwound(pending, batch);
    }

    /// Adds the samples of the batch the unwinding thread has, once it is
    /// done.
    fn finish_in_flight(&mut self) {
        let Some((pending, _)) = self.in_flight.take() else {
            return;
        };
        let batch = match self.pipe.as_ref().map(|pipe| pipe.from.recv()) {
            Some(Ok(batch)) => batch,
            // The thread is gone (it panicked, with the batch: the scope
            // raises its panic when it ends).
            _ => return,
        };
        self.add_unwound(pending, batch);
    }

    /// Unwinds every sample read so far, and adds them: before the
    /// mappings their user frames are named from change, and at the end.
    fn drain_unwinds(&mut self) {
        self.flush_unwinds();
        self.finish_in_flight();
    }

    /// Adds the samples `pending` of an unwound batch, in order.
    fn add_unwound(&mut self, pending: Vec<Pending>, mut batch: Batch) {
        for p in pending {
            let job = &mut batch.jobs[p.job];
            let mut frames: Vec<u64> = std::mem::take(&mut job.frames);
            // Not unwound: the interrupted instruction alone, if it lies
            // in a mapping (perf shows no user frame for one in none: a
            // sample inside `execve`, whose old image is gone).
            if frames.is_empty() && self.user_mapping(p.pid, job.pc).is_some() {
                frames.push(job.pc);
            }
            let locations = self.stack(p.pid, &p.kernel, &frames);
            self.profile.samples.push(Sample {
                locations,
                values: p.values,
                labels: p.labels,
            });
        }
        // Its buffer serves the next batch.
        if self.stacks.is_empty() {
            batch.stacks.clear();
            self.stacks = batch.stacks;
        }
    }

    /// Where the first stack waiting to be unwound starts in the file.
    fn lowest_pending_stack(&self) -> Option<usize> {
        self.file?;
        let in_flight = self.in_flight.as_ref().and_then(|(_, lowest)| *lowest);
        self.jobs
            .iter()
            .map(|j| j.stack.start)
            .chain(in_flight)
            .min()
    }

    fn finish(mut self) -> Profile {
        // Mappings of processes and of the kernel that no sample touched
        // are kept: reports list only what samples use.
        self.profile.sort_mappings();
        // Samples with the same tid and time are the only ones that can
        // have the same labels (each carries both): only they are hashed
        // (perf writes a few such pairs in a long recording; hashing every
        // sample's labels for them took a tenth of the reading).
        if !self.twice.is_empty() {
            let twice = std::mem::take(&mut self.twice);
            self.profile
                .merge_samples_where(|s| twice.contains(&sample_tid_time(s)));
        }
        self.profile
    }
}

/// A sample's `tid` and `timestamp_ns` label values ([`State::sample`]
/// gives every sample a `tid`).
fn sample_tid_time(sample: &Sample) -> (i64, Option<i64>) {
    let num = |key: &str| {
        sample.labels.iter().find_map(|l| match &l.value {
            LabelValue::Num { value, .. } if l.key == key => Some(*value),
            _ => None,
        })
    };
    (num("tid").unwrap_or_default(), num("timestamp_ns"))
}

/// The name perf gives an event of this type, and the unit of its period.
fn event_name(kind: &PerfEventType) -> (String, &'static str) {
    use linux_perf_data::linux_perf_event_reader::HardwareEventId as H;
    match kind {
        PerfEventType::Software(SoftwareCounterType::CpuClock) => {
            ("cpu-clock".to_string(), "nanoseconds")
        }
        PerfEventType::Software(SoftwareCounterType::TaskClock) => {
            ("task-clock".to_string(), "nanoseconds")
        }
        PerfEventType::Software(SoftwareCounterType::PageFaults) => {
            ("page-faults".to_string(), "count")
        }
        PerfEventType::Software(SoftwareCounterType::ContextSwitches) => {
            ("context-switches".to_string(), "count")
        }
        PerfEventType::Hardware(H::CpuCycles, _) => ("cycles".to_string(), "count"),
        PerfEventType::Hardware(H::Instructions, _) => ("instructions".to_string(), "count"),
        PerfEventType::Hardware(H::CacheReferences, _) => ("cache-references".to_string(), "count"),
        PerfEventType::Hardware(H::CacheMisses, _) => ("cache-misses".to_string(), "count"),
        PerfEventType::Hardware(H::BranchInstructions, _) => {
            ("branch-instructions".to_string(), "count")
        }
        PerfEventType::Hardware(H::BranchMisses, _) => ("branch-misses".to_string(), "count"),
        other => (format!("{other:?}").to_lowercase(), "count"),
    }
}

/// Whether a clock event's name (perf writes `cpu-clock`, `cpu-clock:u`,
/// `task-clock:ppp` ...) counts time.
pub fn is_clock_event(name: &str) -> bool {
    let base = name.split(':').next().unwrap_or(name);
    base == "cpu-clock" || base == "task-clock"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header whose attribute entry size is 0 is refused with its offset
    /// (the parser divided by it: found by the perf_data fuzz target).
    #[test]
    fn zero_attribute_entry_size_is_refused() {
        let mut header = b"PERFILE2".to_vec();
        for word in [104u64, 0, 104, 0, 104, 0, 104, 0, 0, 0, 0, 0] {
            header.extend(word.to_le_bytes());
        }
        let e = read(&header, None).unwrap_err().to_string();
        assert!(
            e.contains("offset 16") && e.contains("attribute entry size 0"),
            "{e}"
        );
        // With perf's size (136-byte attributes + 16) that check passes.
        header[16..24].copy_from_slice(&152u64.to_le_bytes());
        let other = read(&header, None).err().map(|e| e.to_string());
        assert!(!other.is_some_and(|e| e.contains("attribute entry size")));
    }

    /// An event description whose counts say more than its bytes hold is
    /// refused before the parser reserves room for them (a corrupt
    /// `nr` of 0xffffffff made it ask for 115 GB).
    #[test]
    fn event_descriptions_larger_than_their_section_are_refused() {
        let mut huge = vec![0xff, 0xff, 0xff, 0xff, 0x88, 0, 0, 0];
        huge.extend([0u8; 64]);
        assert!(check_event_desc(&huge, false).is_err());
        // One event: 8 bytes of attributes, one id, the name "ab".
        let mut one = vec![1, 0, 0, 0, 8, 0, 0, 0];
        one.extend([0u8; 8]);
        one.extend([1, 0, 0, 0, 2, 0, 0, 0, b'a', b'b']);
        one.extend(7u64.to_le_bytes());
        assert_eq!(check_event_desc(&one, false), Ok(()));
        // The same with its id cut off.
        assert!(check_event_desc(&one[..one.len() - 1], false).is_err());
        // Many ids announced, none there.
        let mut ids = one.clone();
        ids[16] = 0xff;
        ids[17] = 0xff;
        assert!(check_event_desc(&ids, false).is_err());
    }
}
