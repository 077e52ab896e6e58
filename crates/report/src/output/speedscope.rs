//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`):
//! one `sampled` profile per thread, so that the profile opens in
//! speedscope's Time Order, Left Heavy and Sandwich views.
//!
//! - Frames are the report's ([`Stacks`]: its granularity, inline calls as
//!   frames of their own, the profiler's frames removed, the filters
//!   applied), shared by every profile (`shared.frames`: name, and the
//!   source file and line when known), in order of first use.
//! - Threads are told apart and named as [`crate::threads`] reads their
//!   labels (the one reading the timelines share), within processes
//!   (`pid`, named by `comm`). A profile
//!   is named `NAME (tid TID)`, prefixed by `COMM (pid PID): ` when the
//!   samples come from several processes; samples without thread labels
//!   go to one profile of their own. Profiles are in order of process and
//!   thread id; the one opened first is the busiest.
//! - Each profile's samples are in time order (the `timestamp_ns` label,
//!   as `perf_to_profile` names it); each sample's weight is its value in
//!   the report's sample type, in speedscope's unit for it (`nanoseconds`,
//!   `bytes`, `none` for counts). A profile without times (gperftools
//!   profiles have none) keeps the profile's sample order: the Time Order
//!   view is then no timeline, which [`write`] says in a note.
//! - speedscope's weights are positive: samples of value 0 are left out,
//!   and those below 0 (a diff's) too, with a note.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::escape::push_json_string;
use crate::stacks::{FrameId, Stacks};
use crate::threads::{thread_of, SampleThread, ThreadKey};

/// The schema the file declares (speedscope checks it to recognize the
/// format).
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// One thread's profile under construction.
#[derive(Default)]
struct Thread {
    /// The thread's name (the last one seen in time order) and its
    /// process's.
    name: Option<String>,
    /// The time of the sample that gave `name`.
    named_at: Option<i64>,
    process: Option<String>,
    tid: Option<i64>,
    /// (time, position in the profile, stack (an index into the distinct
    /// stacks), weight).
    samples: Vec<(Option<i64>, usize, u32, i64)>,
    total: i64,
}

/// speedscope's unit for a sample type's unit (`none` for counts and
/// units it does not know).
pub fn unit(unit: &str) -> &'static str {
    match unit {
        "nanoseconds" => "nanoseconds",
        "microseconds" => "microseconds",
        "milliseconds" => "milliseconds",
        "seconds" => "seconds",
        "bytes" => "bytes",
        _ => "none",
    }
}

/// Writes the speedscope file of `stacks`, named `name` (the program);
/// returns the notes for standard error (samples without times, samples
/// left out).
pub fn write(out: &mut dyn Write, stacks: &Stacks, name: &str) -> io::Result<Vec<String>> {
    let mut threads: BTreeMap<ThreadKey, Thread> = BTreeMap::new();
    // Frames in order of first use: the report's id -> the file's index.
    let mut frame_index: Vec<Option<u32>> = vec![None; stacks.frames.len()];
    let mut used: Vec<FrameId> = Vec::new();
    let mut frames = Vec::with_capacity(256);
    let mut stack: Vec<u32> = Vec::with_capacity(256);
    let mut stack_ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let mut stacks_by_id: Vec<Vec<u32>> = Vec::new();
    let (mut timed, mut untimed, mut negative) = (0usize, 0usize, 0usize);
    for i in 0..stacks.len() {
        let value = stacks.expand(i, &mut frames);
        if value == 0 || frames.is_empty() {
            continue;
        }
        if value < 0 {
            negative += 1;
            continue;
        }
        let sample = stacks.sample(i);
        let time = crate::time::sample_time(sample);
        if time.is_some() {
            timed += 1;
        } else {
            untimed += 1;
        }
        let sample_thread = thread_of(sample);
        let thread_name = sample_thread.name.map(str::to_string);
        let key = sample_thread.key();
        // Distinct stacks are kept once (a long recording repeats them).
        stack.clear();
        stack.extend(frames.iter().rev().map(|&f| {
            *frame_index[f.index()].get_or_insert_with(|| {
                used.push(f);
                (used.len() - 1) as u32
            })
        }));
        let stack_id = match stack_ids.get(stack.as_slice()) {
            Some(&id) => id,
            None => {
                let id = stacks_by_id.len() as u32;
                stacks_by_id.push(stack.clone());
                stack_ids.insert(stack.clone(), id);
                id
            }
        };
        let thread = threads.entry(key).or_default();
        // The name the thread had last (perf.data names samples by the
        // thread's name at the time; a thread renames itself early).
        if thread_name.is_some() {
            let later = match (thread.named_at, time) {
                (Some(then), Some(now)) => now >= then,
                _ => true,
            };
            if later || thread.name.is_none() {
                thread.name = thread_name;
                thread.named_at = time;
            }
        }
        if thread.process.is_none() {
            thread.process = sample_thread.process_label();
        }
        thread.tid = sample_thread.tid;
        thread.total = thread.total.saturating_add(value);
        thread.samples.push((time, i, stack_id, value));
    }

    let mut notes = Vec::new();
    if timed == 0 && untimed > 0 {
        notes.push(
            "the profile has no sample times (timestamp_ns labels): each thread's samples are in \
             the profile's order, so speedscope's Time Order view is no timeline (Left Heavy and \
             Sandwich are exact)"
                .to_string(),
        );
    } else if untimed > 0 {
        notes.push(format!(
            "{untimed} of {} samples have no time (timestamp_ns label): they follow the timed \
             samples of their thread",
            timed + untimed
        ));
    }
    if negative > 0 {
        notes.push(format!(
            "{negative} samples with a negative value left out (speedscope's weights are positive; \
             a diff's removed samples have no place there)"
        ));
    }

    let processes = {
        let mut pids: Vec<Option<i64>> = threads
            .keys()
            .map(|k| match k {
                ThreadKey::Id { pid, .. } => *pid,
                ThreadKey::Name(_) => None,
            })
            .collect();
        pids.dedup();
        pids.len()
    };
    let busiest = threads
        .values()
        .enumerate()
        .max_by_key(|(i, t)| (t.total, std::cmp::Reverse(*i)))
        .map_or(0, |(i, _)| i);

    let mut s = String::with_capacity(1 << 16);
    s.push_str("{\"$schema\":");
    push_json_string(&mut s, SCHEMA, false);
    s.push_str(",\"name\":");
    push_json_string(&mut s, name, false);
    s.push_str(",\"exporter\":");
    push_json_string(
        &mut s,
        concat!("cpuprof ", env!("CARGO_PKG_VERSION")),
        false,
    );
    s.push_str(&format!(",\"activeProfileIndex\":{busiest}"));
    s.push_str(",\"shared\":{\"frames\":[");
    for (n, &f) in used.iter().enumerate() {
        let frame = stacks.frame(f);
        if n > 0 {
            s.push(',');
        }
        s.push_str("{\"name\":");
        push_json_string(&mut s, &frame.name, false);
        if !frame.file.is_empty() {
            s.push_str(",\"file\":");
            push_json_string(&mut s, &frame.file, false);
            if frame.line > 0 {
                s.push_str(&format!(",\"line\":{}", frame.line));
            }
        }
        s.push('}');
    }
    s.push_str("]},\"profiles\":[");
    let unit = unit(&stacks.sample_type.unit);
    let only_one = threads.len() == 1;
    for (n, thread) in threads.values_mut().enumerate() {
        if n > 0 {
            s.push(',');
        }
        let mut title = match (&thread.name, thread.tid) {
            (None, None) if only_one => name.to_string(),
            (None, None) => "samples without a thread".to_string(),
            (name, tid) => SampleThread {
                name: name.as_deref(),
                tid,
                ..Default::default()
            }
            .label(),
        };
        if processes > 1 {
            if let Some(process) = &thread.process {
                title.insert_str(0, &format!("{process}: "));
            }
        }
        // Timed samples by time, then the untimed ones; the profile's
        // order among equals.
        thread
            .samples
            .sort_by_key(|&(time, at, _, _)| (time.is_none(), time, at));
        s.push_str("{\"type\":\"sampled\",\"name\":");
        push_json_string(&mut s, &title, false);
        s.push_str(&format!(
            ",\"unit\":\"{unit}\",\"startValue\":0,\"endValue\":{},\"samples\":[",
            thread.total
        ));
        for (m, &(_, _, stack, _)) in thread.samples.iter().enumerate() {
            if m > 0 {
                s.push(',');
            }
            s.push('[');
            for (k, f) in stacks_by_id[stack as usize].iter().enumerate() {
                if k > 0 {
                    s.push(',');
                }
                let _ = write!(s, "{f}");
            }
            s.push(']');
            if s.len() > 1 << 16 {
                out.write_all(s.as_bytes())?;
                s.clear();
            }
        }
        s.push_str("],\"weights\":[");
        for (m, (_, _, _, weight)) in thread.samples.iter().enumerate() {
            if m > 0 {
                s.push(',');
            }
            let _ = write!(s, "{weight}");
            if s.len() > 1 << 16 {
                out.write_all(s.as_bytes())?;
                s.clear();
            }
        }
        s.push_str("]}");
    }
    s.push_str("]}\n");
    out.write_all(s.as_bytes())?;
    Ok(notes)
}
