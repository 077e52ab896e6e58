//! pprof's `profile.proto` (gzip-compressed or raw): read and write.
//!
//! The schema is `proto/profile.proto` at the repository root; the prost
//! structs in [`wire`] mirror it field for field. Conversion to the model
//! translates string-table indexes to strings and the proto's arbitrary
//! non-zero ids to dense indexes (and back: ids are written as index + 1).
//!
//! Names are written as pprof's own symbolizer writes them:
//! `Function.name` the short name ([`crate::names::short_name`]: what our
//! `--text` prints and what Go pprof, speedscope and Pyroscope then show),
//! `Function.system_name` the mangled one.
//!
//! Everything the model holds survives a write and a read, including what
//! the proto has no field for, carried in fields of our own that other
//! readers skip as unknown (protobuf's rule; Go pprof's decoder skips
//! them too) so that nothing of ours shows in their output:
//! [`wire::Mapping::perms`] (mapping permissions, from gperftools
//! profiles) and [`wire::Function::full_name`] (the demangled name with
//! its arguments, when the short name differs). Profiles written before
//! carried the permissions in a comment line starting with
//! [`PERMS_COMMENT`]; the reader still takes it, and removes it.

use std::io::{self, Read, Write};

use prost::Message;
use rustc_hash::FxHashMap;

use crate::error::ParseError;
use crate::model::{
    FunctionId, Label, LabelValue, Line, Location, LocationId, Mapping, MappingId, Profile, Sample,
    ValueType,
};

const FORMAT: &str = "pprof profile.proto";
/// The comment line that carried mapping permissions in profiles written
/// by earlier versions (read, never written).
pub const PERMS_COMMENT: &str = "cpuprof:mapping-perms";

/// The messages of `proto/profile.proto`, written out for prost.
#[allow(missing_docs)]
pub mod wire {
    /// `perftools.profiles.Profile`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    /// `ValueType`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// `Sample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// `Label`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    /// `Mapping`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
        /// Ours: the mapping's permissions (`r-xp`), empty when unknown.
        #[prost(string, tag = "47101")]
        pub perms: String,
    }

    /// `Location`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    /// `Line`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    /// `Function`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
        /// Ours: the full demangled name, when `name` (the short name)
        /// differs from it.
        #[prost(string, tag = "47102")]
        pub full_name: String,
    }
}

/// True when `data` is gzip-compressed (the usual form of a .pb.gz).
pub fn is_gzip(data: &[u8]) -> bool {
    data.len() >= 2 && data[0] == 0x1f && data[1] == 0x8b
}

/// True when `data` looks like a profile.proto: gzip, or a raw protobuf
/// whose top-level fields all parse and include a string table starting
/// with "".
pub fn sniff(data: &[u8]) -> bool {
    if is_gzip(data) {
        return true;
    }
    match scan_top_level(data) {
        Ok(fields) => {
            fields.iter().any(|f| f.number == 6) && starts_with_empty_string(data, &fields)
        }
        Err(_) => false,
    }
}

fn starts_with_empty_string(data: &[u8], fields: &[TopField]) -> bool {
    fields
        .iter()
        .find(|f| f.number == 6)
        .is_some_and(|f| f.value_len == 0 && f.wire_type == 2 && data.len() >= f.value_start)
}

/// One top-level field as found by [`scan_top_level`].
struct TopField {
    number: u64,
    wire_type: u8,
    /// Offset of the field's tag.
    start: usize,
    value_start: usize,
    value_len: usize,
}

fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Walks the top-level fields of a protobuf message, checking the wire
/// format, so errors can name the offset prost does not give.
fn scan_top_level(data: &[u8]) -> Result<Vec<TopField>, (usize, String)> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let start = pos;
        let key = varint(data, &mut pos).ok_or_else(|| {
            (
                start,
                "a field tag (varint) that ends within the data".to_string(),
            )
        })?;
        let number = key >> 3;
        let wire_type = (key & 7) as u8;
        if number == 0 || number > 536_870_911 {
            return Err((start, format!("field number {number}: expected 1..2^29")));
        }
        let value_start;
        let value_len;
        match wire_type {
            0 => {
                value_start = pos;
                varint(data, &mut pos).ok_or_else(|| {
                    (
                        value_start,
                        "a varint value that ends within the data".to_string(),
                    )
                })?;
                value_len = pos - value_start;
            }
            1 | 5 => {
                let n = if wire_type == 1 { 8 } else { 4 };
                if data.len() - pos < n {
                    return Err((
                        pos,
                        format!("a {n}-byte fixed value, {} bytes remain", data.len() - pos),
                    ));
                }
                value_start = pos;
                value_len = n;
                pos += n;
            }
            2 => {
                let len_at = pos;
                let n = varint(data, &mut pos)
                    .ok_or_else(|| (len_at, "a length (varint)".to_string()))?;
                if n > (data.len() - pos) as u64 {
                    return Err((
                        len_at,
                        format!(
                            "a field {number} of {n} bytes, but only {} bytes remain",
                            data.len() - pos
                        ),
                    ));
                }
                value_start = pos;
                value_len = n as usize;
                pos += n as usize;
            }
            other => {
                return Err((
                    start,
                    format!("wire type {other} in field {number}: expected 0, 1, 2 or 5"),
                ));
            }
        }
        fields.push(TopField {
            number,
            wire_type,
            start,
            value_start,
            value_len,
        });
    }
    Ok(fields)
}

/// Reads a profile.proto, gzip-compressed or raw.
pub fn read(data: &[u8]) -> Result<Profile, ParseError> {
    if data.is_empty() {
        return Err(ParseError::new(
            FORMAT,
            0,
            "empty file: expected a profile.proto",
        ));
    }
    if is_gzip(data) {
        let raw = inflate(data)?;
        return read_decompressed(&raw);
    }
    read_raw(data, "")
}

/// Decompresses a gzip stream (all its members). A damaged stream, and
/// one that holds no data, are errors.
pub fn inflate(data: &[u8]) -> Result<Vec<u8>, ParseError> {
    let mut out = Vec::new();
    let mut dec = flate2::read::MultiGzDecoder::new(data);
    if let Err(e) = dec.read_to_end(&mut out) {
        return Err(ParseError::new(
            "gzip",
            0,
            format!("gzip stream is damaged ({e}): expected a gzip-compressed profile"),
        ));
    }
    if out.is_empty() {
        return Err(ParseError::new(
            "gzip",
            0,
            "the gzip stream holds no data (an empty file, compressed): expected a gzip-compressed profile",
        ));
    }
    Ok(out)
}

/// Reads the raw profile.proto that a gzip stream held (offsets in errors
/// are those of the decompressed data).
pub fn read_decompressed(raw: &[u8]) -> Result<Profile, ParseError> {
    read_raw(raw, " of the decompressed data")
}

fn read_raw(raw: &[u8], inside: &str) -> Result<Profile, ParseError> {
    let err = |offset: usize, msg: String| {
        ParseError::new(
            FORMAT,
            offset as u64,
            format!(
                "{msg}{}",
                if inside.is_empty() {
                    String::new()
                } else {
                    format!(" (at offset {offset}{inside})")
                }
            ),
        )
    };
    let fields = scan_top_level(raw)
        .map_err(|(at, expected)| err(at, format!("bad protobuf: expected {expected}")))?;
    let wire = wire::Profile::decode(raw).map_err(|e| {
        // prost does not say where; name the first field that fails alone.
        let at = fields
            .iter()
            .find(|f| decode_field_alone(raw, f).is_err())
            .map_or(0, |f| f.start);
        err(at, format!("bad protobuf message: {e}"))
    })?;
    let offsets = FieldOffsets::new(&fields);
    from_wire(wire, &offsets).map_err(|(at, msg)| err(at, msg))
}

fn decode_field_alone(raw: &[u8], f: &TopField) -> Result<wire::Profile, prost::DecodeError> {
    let end = f.value_start + f.value_len;
    wire::Profile::decode(&raw[f.start..end])
}

/// Offsets of the i-th sample, mapping, location and function, for errors.
struct FieldOffsets {
    by_number: FxHashMap<u64, Vec<usize>>,
}

impl FieldOffsets {
    fn new(fields: &[TopField]) -> FieldOffsets {
        let mut by_number: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for f in fields {
            by_number.entry(f.number).or_default().push(f.start);
        }
        FieldOffsets { by_number }
    }

    fn of(&self, number: u64, i: usize) -> usize {
        self.by_number
            .get(&number)
            .and_then(|v| v.get(i).or(v.last()))
            .copied()
            .unwrap_or(0)
    }
}

fn from_wire(w: wire::Profile, at: &FieldOffsets) -> Result<Profile, (usize, String)> {
    let strings = &w.string_table;
    if strings.first().is_some_and(|s| !s.is_empty()) {
        return Err((
            at.of(6, 0),
            "string_table[0] is not \"\": expected the empty string first".into(),
        ));
    }
    let string = |i: i64, field: u64, n: usize, what: &str| -> Result<String, (usize, String)> {
        if i == 0 {
            return Ok(String::new());
        }
        usize::try_from(i)
            .ok()
            .and_then(|i| strings.get(i))
            .cloned()
            .ok_or_else(|| {
                (
                    at.of(field, n),
                    format!(
                        "{what} is string {i}, but the string table has {} entries",
                        strings.len()
                    ),
                )
            })
    };
    let value_type =
        |v: &wire::ValueType, field: u64, n: usize| -> Result<ValueType, (usize, String)> {
            Ok(ValueType {
                kind: string(v.r#type, field, n, "a value type")?,
                unit: string(v.unit, field, n, "a value type's unit")?,
            })
        };
    let mut p = Profile::default();
    for (i, t) in w.sample_type.iter().enumerate() {
        p.sample_types.push(value_type(t, 1, i)?);
    }
    p.default_sample_type = string(w.default_sample_type, 14, 0, "default_sample_type")?;
    p.drop_frames = string(w.drop_frames, 7, 0, "drop_frames")?;
    p.keep_frames = string(w.keep_frames, 8, 0, "keep_frames")?;
    p.time_nanos = w.time_nanos;
    p.duration_nanos = w.duration_nanos;
    if let Some(t) = &w.period_type {
        p.period_type = value_type(t, 11, 0)?;
    }
    p.period = w.period;
    let mut perms: Vec<String> = Vec::new();
    for (i, &c) in w.comment.iter().enumerate() {
        let text = string(c, 13, i, "a comment")?;
        if let Some(rest) = text.strip_prefix(PERMS_COMMENT) {
            perms = rest
                .split_whitespace()
                .map(|s| {
                    if s == "-" {
                        String::new()
                    } else {
                        s.to_string()
                    }
                })
                .collect();
        } else {
            p.comments.push(text);
        }
    }

    let mut mapping_index: FxHashMap<u64, MappingId> = FxHashMap::default();
    for (i, m) in w.mapping.iter().enumerate() {
        if m.id == 0 {
            return Err((
                at.of(3, i),
                "mapping with id 0: expected a non-zero id".into(),
            ));
        }
        if mapping_index
            .insert(m.id, MappingId::from_index(i))
            .is_some()
        {
            return Err((at.of(3, i), format!("mapping id {} appears twice", m.id)));
        }
        p.mappings.push(Mapping {
            start: m.memory_start,
            limit: m.memory_limit,
            offset: m.file_offset,
            path: string(m.filename, 3, i, "a mapping's file name")?,
            build_id: string(m.build_id, 3, i, "a mapping's build id")?,
            perms: if m.perms.is_empty() {
                perms.get(i).cloned().unwrap_or_default()
            } else {
                m.perms.clone()
            },
            has_functions: m.has_functions,
            has_filenames: m.has_filenames,
            has_line_numbers: m.has_line_numbers,
            has_inline_frames: m.has_inline_frames,
        });
    }
    let mut function_index: FxHashMap<u64, FunctionId> = FxHashMap::default();
    for (i, f) in w.function.iter().enumerate() {
        if f.id == 0 {
            return Err((
                at.of(5, i),
                "function with id 0: expected a non-zero id".into(),
            ));
        }
        if function_index
            .insert(f.id, FunctionId::from_index(i))
            .is_some()
        {
            return Err((at.of(5, i), format!("function id {} appears twice", f.id)));
        }
        let name = string(f.name, 5, i, "a function name")?;
        p.functions.push(crate::model::Function {
            name: if f.full_name.is_empty() {
                name
            } else {
                f.full_name.clone()
            },
            system_name: string(f.system_name, 5, i, "a function's system name")?,
            filename: string(f.filename, 5, i, "a function's file name")?,
            start_line: f.start_line,
        });
    }
    let mut location_index: FxHashMap<u64, LocationId> = FxHashMap::default();
    for (i, l) in w.location.iter().enumerate() {
        if l.id == 0 {
            return Err((
                at.of(4, i),
                "location with id 0: expected a non-zero id".into(),
            ));
        }
        if location_index
            .insert(l.id, LocationId::from_index(i))
            .is_some()
        {
            return Err((at.of(4, i), format!("location id {} appears twice", l.id)));
        }
        let mapping = match l.mapping_id {
            0 => None,
            id => Some(*mapping_index.get(&id).ok_or_else(|| {
                (
                    at.of(4, i),
                    format!(
                        "location {} refers to mapping {id}, which does not exist",
                        l.id
                    ),
                )
            })?),
        };
        let mut lines = Vec::with_capacity(l.line.len());
        for line in &l.line {
            let function = *function_index.get(&line.function_id).ok_or_else(|| {
                (
                    at.of(4, i),
                    format!(
                        "location {} refers to function {}, which does not exist",
                        l.id, line.function_id
                    ),
                )
            })?;
            lines.push(Line {
                function,
                line: line.line,
                column: line.column,
            });
        }
        p.locations.push(Location {
            address: l.address,
            mapping,
            lines,
            is_folded: l.is_folded,
        });
    }
    let ntypes = p.sample_types.len();
    for (i, s) in w.sample.iter().enumerate() {
        if s.value.len() != ntypes {
            return Err((
                at.of(2, i),
                format!(
                    "sample {i} has {} values: expected {ntypes}, one per sample type",
                    s.value.len()
                ),
            ));
        }
        let mut locations = Vec::with_capacity(s.location_id.len());
        for id in &s.location_id {
            locations.push(*location_index.get(id).ok_or_else(|| {
                (
                    at.of(2, i),
                    format!("sample {i} refers to location {id}, which does not exist"),
                )
            })?);
        }
        let mut labels = Vec::with_capacity(s.label.len());
        for l in &s.label {
            let key = string(l.key, 2, i, "a label key")?;
            let value = if l.str != 0 {
                LabelValue::Str(string(l.str, 2, i, "a label value")?)
            } else {
                LabelValue::Num {
                    value: l.num,
                    unit: string(l.num_unit, 2, i, "a label unit")?.into(),
                }
            };
            labels.push(Label {
                key: key.into(),
                value,
            });
        }
        p.samples.push(Sample {
            locations,
            values: s.value.clone(),
            labels,
        });
    }
    Ok(p)
}

/// Interns strings into a string table whose entry 0 is "".
struct Strings {
    table: Vec<String>,
    index: FxHashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut index = FxHashMap::default();
        index.insert(String::new(), 0);
        Strings {
            table: vec![String::new()],
            index,
        }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// Converts the model to the proto's messages.
pub fn to_wire(p: &Profile) -> wire::Profile {
    let mut st = Strings::new();
    let vt = |t: &ValueType, st: &mut Strings| wire::ValueType {
        r#type: st.id(&t.kind),
        unit: st.id(&t.unit),
    };
    let sample_type = p.sample_types.iter().map(|t| vt(t, &mut st)).collect();
    let sample = p
        .samples
        .iter()
        .map(|s| wire::Sample {
            location_id: s.locations.iter().map(|l| l.0 as u64 + 1).collect(),
            value: s.values.clone(),
            label: s
                .labels
                .iter()
                .map(|l| match &l.value {
                    LabelValue::Str(v) => wire::Label {
                        key: st.id(&l.key),
                        str: st.id(v),
                        num: 0,
                        num_unit: 0,
                    },
                    LabelValue::Num { value, unit } => wire::Label {
                        key: st.id(&l.key),
                        str: 0,
                        num: *value,
                        num_unit: st.id(unit),
                    },
                })
                .collect(),
        })
        .collect();
    let mapping = p
        .mappings
        .iter()
        .enumerate()
        .map(|(i, m)| wire::Mapping {
            id: i as u64 + 1,
            memory_start: m.start,
            memory_limit: m.limit,
            file_offset: m.offset,
            filename: st.id(&m.path),
            build_id: st.id(&m.build_id),
            has_functions: m.has_functions,
            has_filenames: m.has_filenames,
            has_line_numbers: m.has_line_numbers,
            has_inline_frames: m.has_inline_frames,
            perms: m.perms.clone(),
        })
        .collect();
    let location = p
        .locations
        .iter()
        .enumerate()
        .map(|(i, l)| wire::Location {
            id: i as u64 + 1,
            mapping_id: l.mapping.map_or(0, |m| m.0 as u64 + 1),
            address: l.address,
            line: l
                .lines
                .iter()
                .map(|line| wire::Line {
                    function_id: line.function.0 as u64 + 1,
                    line: line.line,
                    column: line.column,
                })
                .collect(),
            is_folded: l.is_folded,
        })
        .collect();
    let function = p
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let short = crate::names::short_name(&f.name);
            let full_name = if short == f.name {
                String::new()
            } else {
                f.name.clone()
            };
            wire::Function {
                id: i as u64 + 1,
                name: st.id(&short),
                system_name: st.id(&f.system_name),
                filename: st.id(&f.filename),
                start_line: f.start_line,
                full_name,
            }
        })
        .collect();
    let comment: Vec<i64> = p.comments.iter().map(|c| st.id(c)).collect();
    let period_type = if p.period_type == ValueType::default() {
        None
    } else {
        Some(vt(&p.period_type, &mut st))
    };
    wire::Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        drop_frames: st.id(&p.drop_frames),
        keep_frames: st.id(&p.keep_frames),
        time_nanos: p.time_nanos,
        duration_nanos: p.duration_nanos,
        period_type,
        period: p.period,
        comment,
        default_sample_type: st.id(&p.default_sample_type),
        string_table: st.table,
    }
}

/// Writes `profile` as a gzip-compressed profile.proto (what pprof writes
/// and reads).
pub fn write(profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
    let bytes = to_wire(profile).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

/// Writes `profile` as a raw (uncompressed) profile.proto.
pub fn write_raw(profile: &Profile, out: &mut dyn Write) -> io::Result<()> {
    out.write_all(&to_wire(profile).encode_to_vec())
}

#[cfg(test)]
mod tests;
