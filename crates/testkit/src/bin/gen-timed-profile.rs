//! Writes a large gzipped profile.proto of timestamped CPU samples for the
//! timeline benchmark (scripts/bench-timeline): N samples across T threads
//! (perf.data's labels: `pid`, `tid`, `thread_comm`, and `timestamp_ns`,
//! the name `perf_to_profile` gives a sample's time), each thread sampled
//! every millisecond, in time order.
//!
//! usage: gen-timed-profile OUT [--samples N] [--threads T] [--seed S]
//! defaults: 10,000,000 samples, 16 threads (625 s of 16 busy threads).
//!
//! What the threads do changes every 30 s (a phase picks another family of
//! stacks), and threads 0 to 3 run `gc_tick` from 300 to 340 ms of every
//! second (periodic work for the subsecond heat map). The file is encoded
//! here, sample by sample (protobuf by hand, profile.proto's field
//! numbers), so that generating it needs no model of 10 million samples in
//! memory.

use std::io::Write;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
fn field(out: &mut Vec<u8>, number: u32, v: u64) {
    varint(out, u64::from(number) << 3);
    varint(out, v);
}

/// A length-delimited field.
fn bytes(out: &mut Vec<u8>, number: u32, body: &[u8]) {
    varint(out, (u64::from(number) << 3) | 2);
    varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

struct Strings {
    table: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u64 {
        if let Some(i) = self.table.iter().position(|t| t == s) {
            return i as u64;
        }
        self.table.push(s.to_string());
        (self.table.len() - 1) as u64
    }
}

const FUNCTIONS: usize = 400;
const STACKS: usize = 4000;
const PHASE_NS: u64 = 30_000_000_000;
const PERIOD_NS: u64 = 1_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let out_path = args.next().unwrap_or_else(|| {
        eprintln!("usage: gen-timed-profile OUT [--samples N] [--threads T] [--seed S]");
        std::process::exit(2)
    });
    let (mut samples, mut threads, mut seed) = (10_000_000u64, 16u64, 0x5eed_u64);
    while let Some(flag) = args.next() {
        let value: u64 = args
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{flag} needs a number"));
        match flag.as_str() {
            "--samples" => samples = value,
            "--threads" => threads = value.max(1),
            "--seed" => seed = value | 1,
            _ => panic!("unknown option {flag}"),
        }
    }
    let mut rng = cpuprof_testkit::XorShift(seed);
    let mut strings = Strings {
        table: vec![String::new()],
    };
    let mut head = Vec::new();
    // sample_type: samples/count, cpu/nanoseconds; period type cpu/ns.
    for (kind, unit) in [("samples", "count"), ("cpu", "nanoseconds")] {
        let mut vt = Vec::new();
        field(&mut vt, 1, strings.id(kind));
        field(&mut vt, 2, strings.id(unit));
        bytes(&mut head, 1, &vt);
    }
    // Functions and one location each (ids from 1).
    let modules = ["server", "codec", "storage", "net", "util"];
    for f in 0..FUNCTIONS {
        let name = match f {
            0 => "main".to_string(),
            1 => "worker_loop".to_string(),
            2 => "gc_tick".to_string(),
            _ => format!("{}::step_{f}", modules[f % modules.len()]),
        };
        let file = format!("src/{}.rs", modules[f % modules.len()]);
        let mut func = Vec::new();
        field(&mut func, 1, f as u64 + 1);
        field(&mut func, 2, strings.id(&name));
        field(&mut func, 3, strings.id(&name));
        field(&mut func, 4, strings.id(&file));
        field(&mut func, 5, (f as u64 % 97) * 10 + 1);
        bytes(&mut head, 5, &func);
        let mut line = Vec::new();
        field(&mut line, 1, f as u64 + 1);
        field(&mut line, 2, (f as u64 % 97) * 10 + 3);
        let mut loc = Vec::new();
        field(&mut loc, 1, f as u64 + 1);
        field(&mut loc, 3, 0x40_0000 + f as u64 * 64);
        bytes(&mut loc, 4, &line);
        bytes(&mut head, 4, &loc);
    }
    // The distinct stacks (location ids, leaf first), packed once.
    let pack = |ids: &[u64]| {
        let mut p = Vec::new();
        for &id in ids {
            varint(&mut p, id);
        }
        p
    };
    let stacks: Vec<Vec<u8>> = (0..STACKS)
        .map(|_| {
            let depth = 4 + rng.below(14) as usize;
            let mut ids: Vec<u64> = (0..depth)
                .map(|_| 4 + rng.below(FUNCTIONS as u64 - 3))
                .collect();
            ids.extend([2, 1]); // worker_loop, main
            pack(&ids)
        })
        .collect();
    let gc = pack(&[3, 4 + rng.below(50), 2, 1]);
    let start_ns: u64 = 1_750_000_000_000_000_000;
    let names: Vec<u64> = (0..threads)
        .map(|t| strings.id(&format!("worker-{t}")))
        .collect();
    let (k_pid, k_tid, k_comm, k_time) = (
        strings.id("pid"),
        strings.id("tid"),
        strings.id("thread_comm"),
        strings.id("timestamp_ns"),
    );
    let duration = samples.div_ceil(threads) * PERIOD_NS;

    let file = std::fs::File::create(&out_path).unwrap_or_else(|e| panic!("{out_path}: {e}"));
    let mut gz = flate2::write::GzEncoder::new(
        std::io::BufWriter::with_capacity(1 << 20, file),
        flate2::Compression::fast(),
    );
    gz.write_all(&head).unwrap();
    let mut sample = Vec::with_capacity(256);
    let mut framed = Vec::with_capacity(256);
    let mut label = Vec::with_capacity(32);
    for k in 0..samples {
        let thread = k % threads;
        let step = k / threads;
        let offset = step * PERIOD_NS + thread * 60_000 + rng.below(20_000);
        let in_second = offset % 1_000_000_000;
        let stack = if thread < 4 && (300_000_000..340_000_000).contains(&in_second) {
            &gc
        } else {
            let phase = offset / PHASE_NS;
            &stacks[((phase * 211 + thread * 31 + rng.below(150)) % STACKS as u64) as usize]
        };
        sample.clear();
        bytes(&mut sample, 1, stack);
        let mut values = Vec::with_capacity(8);
        varint(&mut values, 1);
        varint(&mut values, PERIOD_NS);
        bytes(&mut sample, 2, &values);
        for (key, num, text) in [
            (k_pid, Some(4242), None),
            (k_tid, Some(4242 + thread), None),
            (k_comm, None, Some(names[thread as usize])),
            (k_time, Some(start_ns + offset), None),
        ] {
            label.clear();
            field(&mut label, 1, key);
            if let Some(s) = text {
                field(&mut label, 2, s);
            }
            if let Some(n) = num {
                field(&mut label, 3, n);
            }
            bytes(&mut sample, 3, &label);
        }
        framed.clear();
        bytes(&mut framed, 2, &sample);
        gz.write_all(&framed).unwrap();
    }
    let mut tail = Vec::new();
    for s in &strings.table {
        bytes(&mut tail, 6, s.as_bytes());
    }
    field(&mut tail, 9, start_ns);
    field(&mut tail, 10, duration);
    let mut pt = Vec::new();
    field(&mut pt, 1, strings.id("cpu"));
    field(&mut pt, 2, strings.id("nanoseconds"));
    // The string table is written above: these two are already in it.
    bytes(&mut tail, 11, &pt);
    field(&mut tail, 12, PERIOD_NS);
    gz.write_all(&tail).unwrap();
    gz.finish().unwrap().flush().unwrap();
}
