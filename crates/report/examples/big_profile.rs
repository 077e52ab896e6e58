//! Writes a big synthetic gperftools CPU profile for the call-graph speed
//! benchmark (`scripts/bench-callgraph`):
//! `big_profile OUT.prof [FUNCTIONS] [STACKS]`.
//!
//! The program is a random call tree over FUNCTIONS functions (each calling
//! 2–8 others, deeper ones called from several places); each of STACKS
//! distinct stacks walks down it 8–40 frames and gets 1–20 samples. The
//! addresses have no symbols, so reports run with `--no-symbolize` and
//! every function is one address.
use cpuprof_profile::{cpu_sample_types, gperftools, ProfileBuilder, ValueType};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: big_profile OUT.prof [FUNCTIONS] [STACKS]");
    let functions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let stacks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let mut rng = Rng(0x5eed);
    // Callees of each function: later functions, so the tree has depth.
    let callees: Vec<Vec<usize>> = (0..functions)
        .map(|f| {
            let count = 2 + rng.below(7) as usize;
            (0..count)
                .filter_map(|_| {
                    let remaining = functions - f - 1;
                    (remaining > 0).then(|| f + 1 + rng.below(remaining.min(400) as u64) as usize)
                })
                .collect()
        })
        .collect();
    let address = |f: usize| 0x40_0000u64 + 0x40 * f as u64;
    let mut builder = ProfileBuilder::new(cpu_sample_types());
    builder.profile.period_type = ValueType::new("cpu", "nanoseconds");
    builder.profile.period = 10_000_000;
    let mut total = 0i64;
    for _ in 0..stacks {
        let depth = 8 + rng.below(33) as usize;
        let mut frames = vec![0usize];
        while frames.len() < depth {
            let here = *frames.last().unwrap();
            if callees[here].is_empty() {
                break;
            }
            frames.push(callees[here][rng.below(callees[here].len() as u64) as usize]);
        }
        // Leaf first; callers' PCs are return addresses (+1 inside).
        let locations = frames
            .iter()
            .rev()
            .enumerate()
            .map(|(i, &f)| builder.location_at(address(f) + u64::from(i > 0)))
            .collect();
        let count = 1 + rng.below(20) as i64;
        total += count;
        builder.add_sample(locations, vec![count, count * 10_000_000]);
    }
    let profile = builder.finish();
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(&out).expect("cannot create the output"));
    gperftools::write(&profile, &mut file).expect("cannot write the profile");
    eprintln!(
        "{out}: {} distinct stacks, {total} samples, {functions} functions",
        profile.samples.len()
    );
}
