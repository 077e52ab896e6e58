//! Which thread took a sample: the one reading of a sample's thread
//! labels that every per-thread output shares (the terminal timeline, the
//! web UI's timeline, the speedscope export).
//!
//! The formats name threads differently:
//! - the cpuprof agent: `thread_id` (a string) and `thread_name`, `pid`;
//! - perf.data (and `perf_to_profile`): `tid`, `thread_comm` (the thread's
//!   own name), `pid`, `comm` (its process's name);
//! - `perf script` text: `tid`, `pid`, `comm` (the thread's name as perf
//!   prints it).
//!
//! So a thread's id is `tid`, else `thread_id` (the kernel's id under
//! either name); its name is `thread_name`, else `thread_comm`, else
//! `comm` (the most specific name first); its process is `pid`, named by
//! `comm`. A thread is told apart by its process and id, or by its name
//! when it has no id ([`ThreadKey`]).

use cpuprof_profile::{LabelValue, Profile, Sample};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::PIECE;

/// The label keys that may hold a thread's id, in order of preference.
pub const THREAD_ID_KEYS: [&str; 2] = ["tid", "thread_id"];

/// The label keys that may hold a thread's name, in order of preference.
pub const THREAD_NAME_KEYS: [&str; 3] = ["thread_name", "thread_comm", "comm"];

/// The thread of one sample, borrowed from its labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SampleThread<'s> {
    /// The process id (`pid`).
    pub pid: Option<i64>,
    /// The thread id (the first of [`THREAD_ID_KEYS`] it has).
    pub tid: Option<i64>,
    /// The thread's name (the first of [`THREAD_NAME_KEYS`] it has).
    pub name: Option<&'s str>,
    /// The process's name (`comm`).
    pub process: Option<&'s str>,
}

/// What tells threads apart: the process and thread ids, or the name
/// when there is no thread id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadKey<'s> {
    /// A thread with an id.
    Id {
        /// Its process's id.
        pid: Option<i64>,
        /// Its id.
        tid: i64,
    },
    /// A thread known by its name only (`None`: samples without thread
    /// labels).
    Name(Option<&'s str>),
}

/// A label's value as a number (the agent writes ids as strings).
fn number(value: &LabelValue) -> Option<i64> {
    match value {
        LabelValue::Num { value, .. } => Some(*value),
        LabelValue::Str(s) => s.trim().parse().ok(),
    }
}

/// A label's value as a name (empty: none).
fn name(value: &LabelValue) -> Option<&str> {
    match value {
        LabelValue::Str(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// The thread of `sample`, from its labels.
pub fn thread_of(sample: &Sample) -> SampleThread<'_> {
    let mut thread = SampleThread::default();
    let mut id_rank = THREAD_ID_KEYS.len();
    let mut name_rank = THREAD_NAME_KEYS.len();
    for label in &sample.labels {
        let key = &*label.key;
        if key == "pid" {
            thread.pid = thread.pid.or_else(|| number(&label.value));
            continue;
        }
        if let Some(rank) = THREAD_ID_KEYS.iter().position(|k| *k == key) {
            if rank < id_rank {
                if let Some(id) = number(&label.value) {
                    id_rank = rank;
                    thread.tid = Some(id);
                }
            }
            continue;
        }
        if let Some(rank) = THREAD_NAME_KEYS.iter().position(|k| *k == key) {
            let text = name(&label.value);
            if key == "comm" {
                thread.process = thread.process.or(text);
            }
            if rank < name_rank && text.is_some() {
                name_rank = rank;
                thread.name = text;
            }
        }
    }
    thread
}

impl<'s> SampleThread<'s> {
    /// What tells this thread apart from others.
    pub fn key(&self) -> ThreadKey<'s> {
        match self.tid {
            Some(tid) => ThreadKey::Id { pid: self.pid, tid },
            None => ThreadKey::Name(self.name),
        }
    }

    /// The thread as people read it: `NAME (tid TID)`, `tid TID`, `NAME`,
    /// or `(no thread)`.
    pub fn label(&self) -> String {
        match (self.name, self.tid) {
            (Some(name), Some(tid)) => format!("{name} (tid {tid})"),
            (None, Some(tid)) => format!("tid {tid}"),
            (Some(name), None) => name.to_string(),
            (None, None) => "(no thread)".to_string(),
        }
    }

    /// The thread's process as people read it, `COMM (pid PID)`, when the
    /// sample names one.
    pub fn process_label(&self) -> Option<String> {
        match (self.process, self.pid) {
            (Some(comm), Some(pid)) => Some(format!("{comm} (pid {pid})")),
            (None, Some(pid)) => Some(format!("pid {pid}")),
            (Some(comm), None) => Some(comm.to_string()),
            (None, None) => None,
        }
    }
}

/// Every sample's thread, read from its labels once: the distinct
/// readings ([`SampleThread`]s: a thread renamed has two) and, per
/// sample, which one it is.
#[derive(Clone, Debug)]
pub struct ThreadIndex {
    /// Per sample of the profile, in order: its entry in `threads`.
    pub of_sample: Vec<u32>,
    /// The distinct readings, in order of first appearance.
    pub threads: Vec<IndexedThread>,
    /// The number of distinct threads (keys).
    pub keys: usize,
}

/// One distinct reading of a sample's thread labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedThread {
    /// The process id.
    pub pid: Option<i64>,
    /// The thread id.
    pub tid: Option<i64>,
    /// The thread's name.
    pub name: Option<String>,
    /// The process's name.
    pub process: Option<String>,
    /// The thread it is (the same for two names of one thread), from 0 to
    /// [`ThreadIndex::keys`].
    pub key: u32,
}

impl IndexedThread {
    /// As the samples' labels read.
    pub fn thread(&self) -> SampleThread<'_> {
        SampleThread {
            pid: self.pid,
            tid: self.tid,
            name: self.name.as_deref(),
            process: self.process.as_deref(),
        }
    }
}

impl ThreadIndex {
    /// The threads of `profile`'s samples (read in parallel).
    pub fn of(profile: &Profile) -> ThreadIndex {
        // Each piece: its distinct readings and its samples' ids in them.
        let pieces: Vec<(Vec<SampleThread>, Vec<u32>)> = profile
            .samples
            .par_chunks(PIECE)
            .map(|chunk| {
                let mut seen: FxHashMap<SampleThread, u32> = FxHashMap::default();
                let mut list = Vec::new();
                let ids = chunk
                    .iter()
                    .map(|sample| {
                        let thread = thread_of(sample);
                        *seen.entry(thread).or_insert_with(|| {
                            list.push(thread);
                            list.len() as u32 - 1
                        })
                    })
                    .collect();
                (list, ids)
            })
            .collect();
        let mut global: FxHashMap<SampleThread, u32> = FxHashMap::default();
        let mut keys: FxHashMap<ThreadKey, u32> = FxHashMap::default();
        let mut threads = Vec::new();
        let mut of_sample = Vec::with_capacity(profile.samples.len());
        for (list, ids) in pieces {
            let to_global: Vec<u32> = list
                .iter()
                .map(|thread| {
                    *global.entry(*thread).or_insert_with(|| {
                        let next = keys.len() as u32;
                        let key = *keys.entry(thread.key()).or_insert(next);
                        threads.push(IndexedThread {
                            pid: thread.pid,
                            tid: thread.tid,
                            name: thread.name.map(str::to_string),
                            process: thread.process.map(str::to_string),
                            key,
                        });
                        threads.len() as u32 - 1
                    })
                })
                .collect();
            of_sample.extend(ids.iter().map(|&id| to_global[id as usize]));
        }
        ThreadIndex {
            of_sample,
            threads,
            keys: keys.len(),
        }
    }

    /// The thread of the profile's sample `index`.
    pub fn thread(&self, index: usize) -> &IndexedThread {
        &self.threads[self.of_sample[index] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cpuprof_profile::Label;

    fn num(key: &'static str, value: i64) -> Label {
        Label::num(key, value, "")
    }

    fn text(key: &'static str, value: &str) -> Label {
        Label::str(key, value)
    }

    fn sample(labels: Vec<Label>) -> Sample {
        Sample {
            locations: vec![],
            values: vec![1],
            labels,
        }
    }

    proptest::proptest! {
        /// The index reads every sample's thread as `thread_of` does, and
        /// two readings are one thread exactly when their keys are equal
        /// (samples spread over pieces of the parallel read).
        #[test]
        fn the_index_reads_threads_as_thread_of(
            readings in proptest::collection::vec(
                (proptest::option::of(0i64..3), proptest::option::of(0i64..3), proptest::option::of(0usize..3)),
                1..20,
            ),
            picks in proptest::collection::vec(0usize..20, 0..200),
            spread in 0usize..3,
        ) {
            let names = ["a", "b", ""];
            let make = |(pid, tid, name): &(Option<i64>, Option<i64>, Option<usize>)| {
                let mut labels = Vec::new();
                if let Some(pid) = pid { labels.push(num("pid", *pid)); }
                if let Some(tid) = tid { labels.push(text("thread_id", &tid.to_string())); }
                if let Some(n) = name { labels.push(text("thread_name", names[*n])); }
                sample(labels)
            };
            // Pieces are PIECE samples long: pad so that the picks span
            // several of them.
            let mut samples: Vec<Sample> = vec![make(&readings[0]); spread * PIECE];
            samples.extend(picks.iter().map(|&p| make(&readings[p % readings.len()])));
            let profile = Profile { samples, ..Profile::default() };
            let index = ThreadIndex::of(&profile);
            proptest::prop_assert_eq!(index.of_sample.len(), profile.samples.len());
            let step = (profile.samples.len() / 500).max(1);
            let checked: Vec<usize> = (0..profile.samples.len()).step_by(step).chain(spread * PIECE..profile.samples.len()).collect();
            for &i in &checked {
                proptest::prop_assert_eq!(index.thread(i).thread(), thread_of(&profile.samples[i]));
                for &j in checked.iter().step_by(7) {
                    let same_key = thread_of(&profile.samples[i]).key() == thread_of(&profile.samples[j]).key();
                    proptest::prop_assert_eq!(index.thread(i).key == index.thread(j).key, same_key);
                }
            }
        }
    }

    #[test]
    fn every_format_names_its_threads() {
        // perf.data: the thread's own name before its process's.
        let perf = sample(vec![
            num("pid", 7),
            num("tid", 9),
            text("comm", "app"),
            text("thread_comm", "worker"),
        ]);
        let t = thread_of(&perf);
        assert_eq!(t.label(), "worker (tid 9)");
        assert_eq!(t.process_label().as_deref(), Some("app (pid 7)"));
        assert_eq!(
            t.key(),
            ThreadKey::Id {
                pid: Some(7),
                tid: 9
            }
        );
        // perf script: comm is the thread's name.
        let script = sample(vec![num("tid", 9), text("comm", "app")]);
        assert_eq!(thread_of(&script).label(), "app (tid 9)");
        // The agent: ids as strings; thread_name first.
        let agent = sample(vec![
            text("pid", "3"),
            text("thread_id", "4"),
            text("thread_name", "io"),
        ]);
        assert_eq!(thread_of(&agent).label(), "io (tid 4)");
        assert_eq!(thread_of(&agent).pid, Some(3));
        // Both ids: tid wins, whatever the order.
        let both = sample(vec![num("thread_id", 4), num("tid", 5)]);
        assert_eq!(thread_of(&both).tid, Some(5));
        // No thread labels.
        let none = sample(vec![]);
        assert_eq!(thread_of(&none).label(), "(no thread)");
        assert_eq!(thread_of(&none).key(), ThreadKey::Name(None));
        // A name alone tells threads apart.
        let named = sample(vec![text("thread_name", "gc")]);
        assert_eq!(thread_of(&named).key(), ThreadKey::Name(Some("gc")));
    }
}
