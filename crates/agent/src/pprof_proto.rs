//! Encoding samples as gzipped profile.proto (the schema in
//! `proto/profile.proto`), for session files (`CPUPROFILE_FORMAT=pprof`)
//! and HTTP windows, as Go's `net/http/pprof` serves
//! `/debug/pprof/profile`: sample types `samples/count` and
//! `cpu/nanoseconds` (`wall/nanoseconds` in realtime mode), the same
//! period type, labelled samples (`thread_id`, `thread_name`, `state`:
//! string labels, as `pprof -tags` lists them; `timestamp_ns`: a numeric
//! label in nanoseconds, the sample's time since the Unix epoch on the
//! clock of `time_nanos`, as `perf_to_profile` names it, so that
//! `pprof -tagfocus=timestamp_ns=FROM:TO` selects a time range), one mapping per executable
//! mapping (the main program first) with its build id, and function names
//! from the objects' symbol tables. Protobuf is written by hand ("Protocol
//! Buffers encoding": varints, length-delimited fields, packed repeated
//! scalars); gzip with stored deflate blocks (RFC 1951 section 3.2.4,
//! RFC 1952): no compression library in the agent.

use std::collections::HashMap;

use crate::collector::{Stacks, TimeKeeping, TABLE_TIMES, TIMED_SAMPLES_MAX};
use crate::signal_path::{tag_state, tag_tid, STATE_RUNNING, STATE_WAITING};
use crate::symbols::Symbolizer;
use crate::thread_names::name_index;

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    /// A varint field (omitted when zero, as proto3 does).
    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.varint(u64::from(field) << 3);
            self.varint(v);
        }
    }
    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.varint(u64::from(field) << 3 | 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }
    fn packed(&mut self, field: u32, values: &[u64]) {
        let mut inner = Message::default();
        for &v in values {
            inner.varint(v);
        }
        self.bytes(field, &inner.0);
    }
}

/// The string table (index 0 is "").
struct Strings {
    table: Vec<String>,
    index: HashMap<String, u64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }
    fn id(&mut self, s: &str) -> u64 {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = self.table.len() as u64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), id);
        id
    }
}

/// The samples to encode.
pub(crate) struct WindowSamples<'a> {
    pub(crate) stacks: &'a Stacks,
    /// Thread names by index - 1 (see [`crate::thread_names`]).
    pub(crate) names: &'a [String],
    /// Wall-clock samples (realtime mode) rather than CPU time.
    pub(crate) wall: bool,
    pub(crate) period_ns: u64,
    pub(crate) start_time_ns: u64,
    pub(crate) duration_ns: u64,
    /// How the samples kept their times (said in the profile's comments).
    pub(crate) times: TimeKeeping,
    /// Labels every sample carries and comments of the profile: which
    /// process wrote it (see [`process_identity`]).
    pub(crate) process: ProcessIdentity,
}

/// Which process a profile is of, so that the profiles of a
/// multi-process program (one file per process) tell themselves apart
/// when summed: labels `pid` and `process` on every sample, and comments
/// `pid N` and `command line: ...`.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProcessIdentity {
    pub(crate) pid: u32,
    /// The value of a `--type=` argument (Chromium's and Electron's
    /// processes: `renderer`, `gpu-process`, `zygote`, `utility`), else
    /// the program's file name.
    pub(crate) kind: String,
    pub(crate) command_line: String,
}

/// The calling process's identity, from `/proc/self/cmdline`.
pub(crate) fn process_identity() -> ProcessIdentity {
    let raw = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let kind = args
        .iter()
        .find_map(|a| a.strip_prefix("--type="))
        .map(str::to_string)
        .or_else(|| {
            args.first()
                .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        })
        .unwrap_or_default();
    let mut command_line = args.join(" ");
    if command_line.len() > 4096 {
        let mut end = 4096;
        while !command_line.is_char_boundary(end) {
            end -= 1;
        }
        command_line.truncate(end);
    }
    ProcessIdentity {
        pid: std::process::id(),
        kind,
        command_line,
    }
}

/// Encodes `window` as (uncompressed) profile.proto. `main_path` is the
/// program's file, whose mapping goes first.
pub(crate) fn encode(
    window: &WindowSamples,
    symbolizer: &mut Symbolizer,
    main_path: &str,
) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut profile = Message::default();
    let value_type = |strings: &mut Strings, kind: &str, unit: &str| {
        let mut m = Message::default();
        m.uint(1, strings.id(kind));
        m.uint(2, strings.id(unit));
        m.0
    };
    let time_kind = if window.wall { "wall" } else { "cpu" };
    let samples_count = value_type(&mut strings, "samples", "count");
    let cpu_ns = value_type(&mut strings, time_kind, "nanoseconds");
    profile.bytes(1, &samples_count);
    profile.bytes(1, &cpu_ns);

    // Mapping ids: the main program's mappings first, then by address.
    let mut order: Vec<usize> = (0..symbolizer.mappings().len()).collect();
    order.sort_by_key(|&i| symbolizer.mappings()[i].path != main_path);
    let mut mapping_ids = vec![0u64; order.len()];
    for (n, &i) in order.iter().enumerate() {
        mapping_ids[i] = n as u64 + 1;
    }
    let mut mapping_used = vec![false; order.len()];

    // Locations: one per address. Callers are return addresses: the
    // address recorded is the one before (inside the call instruction),
    // as pprof expects of every frame but the leaf.
    let mut location_ids: HashMap<u64, u64> = HashMap::new();
    let mut locations = Vec::new();
    let mut function_ids: HashMap<String, u64> = HashMap::new();
    let mut functions = Vec::new();
    let mut records: Vec<(&[u64], u64, u64, u64)> = window
        .stacks
        .iter()
        .map(|(k, &c)| (&*k.stack, k.labels, c, k.time))
        .collect();
    records.sort_unstable_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| a.0.cmp(b.0))
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| a.3.cmp(&b.3))
    });
    // Times were rounded down (or, in a window, taken by its session a
    // moment before it opened): every one lies within the profile.
    let end_ns = window.start_time_ns.saturating_add(window.duration_ns);
    let mut any_time = false;
    let label = |strings: &mut Strings, key: &str, value: &str| {
        let mut m = Message::default();
        m.uint(1, strings.id(key));
        m.uint(2, strings.id(value));
        m.0
    };
    for (stack, labels, count, time) in records {
        if stack.is_empty() || count == 0 {
            continue;
        }
        let mut ids = Vec::with_capacity(stack.len());
        for (depth, &pc) in stack.iter().enumerate() {
            let address = if depth == 0 { pc } else { pc.wrapping_sub(1) };
            let next_id = location_ids.len() as u64 + 1;
            let id = *location_ids.entry(address).or_insert_with(|| {
                let mut location = Message::default();
                location.uint(1, next_id);
                if let Some(index) = symbolizer.mapping_index(address) {
                    location.uint(2, mapping_ids[index]);
                    mapping_used[index] = true;
                }
                location.uint(3, address);
                if let Some(name) = symbolizer.function_name(address) {
                    let next_function = function_ids.len() as u64 + 1;
                    let function_id = *function_ids.entry(name.clone()).or_insert_with(|| {
                        let mut function = Message::default();
                        function.uint(1, next_function);
                        let name_id = strings.id(&name);
                        function.uint(2, name_id);
                        function.uint(3, name_id);
                        functions.push(function.0);
                        next_function
                    });
                    let mut line = Message::default();
                    line.uint(1, function_id);
                    location.bytes(4, &line.0);
                }
                locations.push(location.0);
                next_id
            });
            ids.push(id);
        }
        let mut sample = Message::default();
        sample.packed(1, &ids);
        sample.packed(2, &[count, count.saturating_mul(window.period_ns)]);
        if window.process.pid != 0 {
            let pid = window.process.pid.to_string();
            sample.bytes(3, &label(&mut strings, "pid", &pid));
            sample.bytes(3, &label(&mut strings, "process", &window.process.kind));
        }
        if tag_tid(labels) != 0 {
            let tid = tag_tid(labels).to_string();
            sample.bytes(3, &label(&mut strings, "thread_id", &tid));
        }
        if labels != 0 {
            let name = name_index(labels)
                .checked_sub(1)
                .and_then(|i| window.names.get(i));
            if let Some(name) = name {
                sample.bytes(3, &label(&mut strings, "thread_name", name));
            }
            let state = match tag_state(labels) {
                STATE_RUNNING => Some("running"),
                STATE_WAITING => Some("waiting"),
                _ => None,
            };
            if let Some(state) = state {
                sample.bytes(3, &label(&mut strings, "state", state));
            }
        }
        if time != 0 {
            any_time = true;
            let mut m = Message::default();
            m.uint(1, strings.id("timestamp_ns"));
            m.uint(3, time.clamp(window.start_time_ns, end_ns));
            m.uint(4, strings.id("nanoseconds"));
            sample.bytes(3, &m.0);
        }
        profile.bytes(2, &sample.0);
    }

    for &i in &order {
        let (start, end, offset, path) = {
            let m = &symbolizer.mappings()[i];
            (m.start, m.end, m.offset, m.path.clone())
        };
        let (build_id, has_functions) = match symbolizer.object(i) {
            Some(object) => (object.build_id.clone(), object.has_functions()),
            None => (None, false),
        };
        let mut mapping = Message::default();
        mapping.uint(1, mapping_ids[i]);
        mapping.uint(2, start);
        mapping.uint(3, end);
        mapping.uint(4, offset);
        mapping.uint(5, strings.id(&path));
        mapping.uint(6, strings.id(build_id.as_deref().unwrap_or("")));
        // Every location of a used mapping got a name if its object has
        // symbols: consumers need not symbolize again.
        mapping.uint(7, u64::from(has_functions && mapping_used[i]));
        profile.bytes(3, &mapping.0);
    }
    for location in &locations {
        profile.bytes(4, location);
    }
    for function in &functions {
        profile.bytes(5, function);
    }
    let period_type = value_type(&mut strings, time_kind, "nanoseconds");
    let mut comments = Vec::new();
    if window.process.pid != 0 {
        comments.push(strings.id(&format!("pid {}", window.process.pid)));
        comments.push(strings.id(&format!("command line: {}", window.process.command_line)));
    }
    if any_time {
        for comment in time_comments(&window.times) {
            comments.push(strings.id(&comment));
        }
    }
    for s in &strings.table {
        profile.bytes(6, s.as_bytes());
    }
    profile.uint(9, window.start_time_ns);
    profile.uint(10, window.duration_ns);
    profile.bytes(11, &period_type);
    profile.uint(12, window.period_ns);
    for comment in comments {
        profile.uint(13, comment);
    }
    profile.0
}

/// The profile's comments on sample times: their resolution, whether it
/// was coarsened to bound the profile, and samples that have no time.
pub(crate) fn time_comments(times: &TimeKeeping) -> Vec<String> {
    let mut comments = Vec::new();
    let resolution = match times.resolution_ns {
        0 | 1 => "at full resolution".to_string(),
        ns => format!("rounded down to {}", duration_text(ns)),
    };
    comments.push(format!(
        "timestamp_ns: each sample's time in ns since the Unix epoch (the clock of time_nanos), {resolution}"
    ));
    if times.resolution_ns != times.asked_ns {
        comments.push(format!(
            "timestamp_ns: coarsened from {} to {} as the run went, to bound memory and file size (at most {TIMED_SAMPLES_MAX} distinct samples; {TABLE_TIMES} time records per table between drains)",
            match times.asked_ns {
                0 | 1 => "full resolution".to_string(),
                ns => duration_text(ns),
            },
            duration_text(times.resolution_ns)
        ));
    }
    if times.untimed > 0 {
        comments.push(format!(
            "timestamp_ns: {} samples have none (the agent's time records were full); they count in every total",
            times.untimed
        ));
    }
    comments
}

/// A duration in ns in its largest whole unit: `10ms`, `1s`, `2h`.
pub(crate) fn duration_text(ns: u64) -> String {
    const UNITS: [(u64, &str); 6] = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    UNITS
        .iter()
        .find(|(unit, _)| ns >= *unit && ns % unit == 0)
        .map_or_else(
            || "0s".to_string(),
            |(unit, name)| format!("{}{name}", ns / unit),
        )
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) as gzip uses.
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

/// `data` as a gzip member of stored (uncompressed) deflate blocks.
pub(crate) fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len() / 0xffff + 1;
    let mut out = Vec::with_capacity(data.len() + blocks * 5 + 18);
    // ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=unix
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    let mut chunks = data.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        // BFINAL in bit 0, BTYPE=00 (stored); the rest of the byte pads to
        // the boundary where LEN starts.
        out.push(u8::from(last));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn gzip_round_trips_through_flate2() {
        for size in [0usize, 1, 0xffff, 0x10000, 200_000] {
            let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&gzip_stored(&data)[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "size {size}");
        }
    }

    #[test]
    fn profile_reads_back_with_our_proto_reader() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut symbolizer = Symbolizer::new(&maps);
        let here = profile_reads_back_with_our_proto_reader as *const () as u64;
        let mut stacks = Stacks::default();
        stacks.insert(
            crate::collector::SampleKey {
                stack: vec![here + 4, here + 9].into(),
                labels: 0,
                time: 0,
            },
            7,
        );
        let window = WindowSamples {
            stacks: &stacks,
            names: &[],
            wall: false,
            period_ns: 10_000_000,
            start_time_ns: 1,
            duration_ns: 2_000_000_000,
            times: TimeKeeping::default(),
            process: ProcessIdentity::default(),
        };
        let exe = std::env::current_exe().unwrap();
        let bytes = gzip_stored(&encode(&window, &mut symbolizer, exe.to_str().unwrap()));
        let profile = cpuprof_profile::proto::read(&bytes).unwrap();
        assert_eq!(profile.samples.len(), 1);
        assert_eq!(profile.samples[0].values, vec![7, 70_000_000]);
        let types: Vec<String> = profile
            .sample_types
            .iter()
            .map(|t| format!("{}/{}", t.kind, t.unit))
            .collect();
        assert_eq!(types, ["samples/count", "cpu/nanoseconds"]);
        assert_eq!(profile.period, 10_000_000);
        assert_eq!(profile.duration_nanos, 2_000_000_000);
        assert!(profile.mappings[0]
            .path
            .ends_with(exe.file_name().unwrap().to_str().unwrap()));
        assert!(!profile.mappings[0].build_id.is_empty());
    }

    /// Labels as the handler and the drain pack them come out as pprof's
    /// string labels; samples that differ only by thread stay apart.
    #[test]
    fn labels_are_written_per_sample() {
        use crate::signal_path::{sample_tag, STATE_RUNNING, STATE_WAITING};
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut symbolizer = Symbolizer::new(&maps);
        let here = labels_are_written_per_sample as *const () as u64;
        let name = |index: u64| index << 34;
        let mut stacks = Stacks::default();
        for (labels, count) in [
            (sample_tag(41, STATE_RUNNING) | name(1), 3),
            (sample_tag(42, STATE_WAITING) | name(2), 5),
            (sample_tag(0, STATE_WAITING), 7),
        ] {
            stacks.insert(
                crate::collector::SampleKey {
                    stack: vec![here + 4].into(),
                    labels,
                    time: 0,
                },
                count,
            );
        }
        let names = ["compute-1".to_string(), "io".to_string()];
        let window = WindowSamples {
            stacks: &stacks,
            names: &names,
            wall: true,
            period_ns: 10_000_000,
            start_time_ns: 1,
            duration_ns: 1,
            times: TimeKeeping::default(),
            process: ProcessIdentity::default(),
        };
        let bytes = gzip_stored(&encode(&window, &mut symbolizer, ""));
        let profile = cpuprof_profile::proto::read(&bytes).unwrap();
        assert_eq!(profile.sample_types[1].kind, "wall");
        let mut seen: Vec<(i64, Vec<String>)> = profile
            .samples
            .iter()
            .map(|s| {
                let mut labels: Vec<String> = s
                    .labels
                    .iter()
                    .map(|l| match &l.value {
                        cpuprof_profile::LabelValue::Str(v) => format!("{}={v}", l.key),
                        other => format!("{}={other:?}", l.key),
                    })
                    .collect();
                labels.sort();
                (s.values[0], labels)
            })
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                (
                    3,
                    vec![
                        "state=running".to_string(),
                        "thread_id=41".to_string(),
                        "thread_name=compute-1".to_string()
                    ]
                ),
                (
                    5,
                    vec![
                        "state=waiting".to_string(),
                        "thread_id=42".to_string(),
                        "thread_name=io".to_string()
                    ]
                ),
                (7, vec!["state=waiting".to_string()]),
            ]
        );
    }

    /// Samples keep their time as the numeric label timestamp_ns (unit
    /// nanoseconds), clamped into [time_nanos, time_nanos + duration];
    /// one stack at two times is two samples; the comments say the
    /// resolution, the coarsening and the samples without a time.
    #[test]
    fn times_are_numeric_labels_within_the_profile() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut symbolizer = Symbolizer::new(&maps);
        let here = times_are_numeric_labels_within_the_profile as *const () as u64;
        let start = 1_700_000_000_000_000_000u64;
        let mut stacks = Stacks::default();
        for (time, count) in [
            (start - 5_000_000, 1),
            (start + 10_000_000, 2),
            (start + 20_000_000, 3),
            (0, 4),
        ] {
            stacks.insert(
                crate::collector::SampleKey {
                    stack: vec![here + 4].into(),
                    labels: 0,
                    time,
                },
                count,
            );
        }
        let window = WindowSamples {
            stacks: &stacks,
            names: &[],
            wall: false,
            period_ns: 10_000_000,
            start_time_ns: start,
            duration_ns: 1_000_000_000,
            times: TimeKeeping {
                asked_ns: 1,
                resolution_ns: 10_000_000,
                untimed: 4,
            },
            process: ProcessIdentity::default(),
        };
        let bytes = gzip_stored(&encode(&window, &mut symbolizer, ""));
        let profile = cpuprof_profile::proto::read(&bytes).unwrap();
        let mut seen: Vec<(Option<(i64, String)>, i64)> = profile
            .samples
            .iter()
            .map(|s| {
                let time =
                    s.labels
                        .iter()
                        .find(|l| l.key == "timestamp_ns")
                        .map(|l| match &l.value {
                            cpuprof_profile::LabelValue::Num { value, unit } => {
                                (*value, unit.to_string())
                            }
                            other => panic!("{other:?}"),
                        });
                (time, s.values[0])
            })
            .collect();
        seen.sort();
        let ns = |t: u64| Some((t as i64, "nanoseconds".to_string()));
        assert_eq!(
            seen,
            [
                (None, 4),
                (ns(start), 1),
                (ns(start + 10_000_000), 2),
                (ns(start + 20_000_000), 3)
            ]
        );
        let comments = profile.comments.join("\n");
        assert!(comments.contains("rounded down to 10ms"), "{comments}");
        assert!(
            comments.contains("coarsened from full resolution to 10ms"),
            "{comments}"
        );
        assert!(comments.contains("4 samples have none"), "{comments}");
    }

    #[test]
    fn durations_are_written_in_their_largest_whole_unit() {
        assert_eq!(duration_text(10_000_000), "10ms");
        assert_eq!(duration_text(1_000_000_000), "1s");
        assert_eq!(duration_text(1_500_000_000), "1500ms");
        assert_eq!(duration_text(7_200_000_000_000), "2h");
        assert_eq!(duration_text(1), "1ns");
    }

    /// The projection the README states: a 24-hour run at 100 Hz on one
    /// thread cycling through 20 stacks 10 frames deep, drained every
    /// second as the control thread does, at the default (full)
    /// resolution. The times coarsen as the run goes (to 10 s here), the
    /// distinct samples stay within the bound, every sample counts, and
    /// the file stays small enough for Go pprof to read in seconds.
    /// `CPUPROF_KEEP_PROJECTION=FILE` keeps the profile (for timing pprof).
    #[test]
    fn a_day_at_100_hz_stays_bounded() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut symbolizer = Symbolizer::new(&maps);
        let here = a_day_at_100_hz_stays_bounded as *const () as u64;
        let stacks_used: Vec<std::sync::Arc<[u64]>> = (0..20u64)
            .map(|k| (0..10u64).map(|d| here + k * 64 + d * 4).collect())
            .collect();
        let start = 1_700_000_000_000_000_000u64;
        let labels = crate::signal_path::sample_tag(4242, 0) | 1 << 34;
        let mut times = TimeKeeping::new(1);
        let mut stacks = Stacks::default();
        let mut per_stack: Vec<Vec<(u64, u64)>> = vec![Vec::new(); 20];
        for second in 0..86_400u64 {
            for list in per_stack.iter_mut() {
                list.clear();
            }
            for i in 0..100u64 {
                let t = start + second * 1_000_000_000 + i * 10_000_000 + 12_345;
                per_stack[((second * 100 + i) % 20) as usize].push((t, 1));
            }
            for (stack, list) in stacks_used.iter().zip(&per_stack) {
                times.add(&mut stacks, stack, labels, list.len() as u64, list);
            }
            times.bound(&mut stacks);
        }
        assert_eq!(stacks.values().sum::<u64>(), 8_640_000);
        assert!(stacks.len() <= TIMED_SAMPLES_MAX, "{}", stacks.len());
        assert_eq!(times.resolution_ns, 10_000_000_000);
        let names = ["worker".to_string()];
        let window = WindowSamples {
            stacks: &stacks,
            names: &names,
            wall: false,
            period_ns: 10_000_000,
            start_time_ns: start,
            duration_ns: 86_400_000_000_000,
            times,
            process: ProcessIdentity {
                pid: 4242,
                kind: "server".to_string(),
                command_line: "./server --port 8080".to_string(),
            },
        };
        let bytes = gzip_stored(&encode(&window, &mut symbolizer, ""));
        eprintln!(
            "24 h at 100 Hz: {} samples, {} distinct, {} bytes",
            8_640_000,
            stacks.len(),
            bytes.len()
        );
        assert!(bytes.len() < 16 << 20, "{} bytes", bytes.len());
        if let Some(path) = std::env::var_os("CPUPROF_KEEP_PROJECTION") {
            std::fs::write(path, &bytes).unwrap();
        }
        let profile = cpuprof_profile::proto::read(&bytes).unwrap();
        let total: i64 = profile.samples.iter().map(|s| s.values[0]).sum();
        assert_eq!(total, 8_640_000);
    }

    /// A drained stack whose count exceeds its recorded times (the time
    /// records were full): the rest count without a time, and are counted
    /// as such; times are rounded to the resolution in use.
    #[test]
    fn samples_without_a_recorded_time_still_count() {
        let mut times = TimeKeeping::new(10_000_000);
        let mut stacks = Stacks::default();
        let stack: std::sync::Arc<[u64]> = vec![1, 2, 3].into();
        let t = 1_700_000_000_000_000_000u64;
        times.add(&mut stacks, &stack, 7, 5, &[(t + 1, 1), (t + 9_999_999, 1)]);
        times.add(&mut stacks, &stack, 7, 2, &[(t + 10_000_001, 2)]);
        assert_eq!(times.untimed, 3);
        let mut seen: Vec<(u64, u64)> = stacks.iter().map(|(k, &c)| (k.time, c)).collect();
        seen.sort();
        assert_eq!(seen, [(0, 3), (t, 2), (t + 10_000_000, 2)]);
        // Off: every sample without a time, none counted as lost.
        let mut off = TimeKeeping::new(0);
        let mut stacks = Stacks::default();
        off.add(&mut stacks, &stack, 7, 4, &[]);
        assert_eq!((off.untimed, stacks.len()), (0, 1));
    }
}
