//! Writes a big gperftools CPU profile of a real binary, for timing report
//! outputs against each other (scripts/bench-flame): SAMPLES samples on
//! 50,000 call paths whose leaves are 50,000 distinct PCs, spread over the
//! functions that `nm -S` lists for the binary (a non-PIE build, mapped at
//! 0x400000), 5 to 40 frames deep, skewed towards a few hot paths.
//!
//!     nm -S --defined-only BINARY > syms.txt
//!     cargo run --release -p cpuprof-report --example flame_big_profile -- BINARY syms.txt OUT.prof [SAMPLES]

use cpuprof_profile::{cpu_sample_types, gperftools, Mapping, ProfileBuilder};

/// A small deterministic generator (64-bit LCG, high bits out).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: flame_big_profile BINARY NM_SYMBOLS OUT [SAMPLES]");
        std::process::exit(2);
    }
    let (binary, symbols, out) = (&args[1], &args[2], &args[3]);
    let samples: usize = args.get(4).map_or(300_000, |s| s.parse().expect("SAMPLES"));
    // Text symbols with a size: (start, size).
    let mut functions: Vec<(u64, u64)> = std::fs::read_to_string(symbols)
        .expect("read the nm output")
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 4 || !matches!(f[2], "T" | "t") {
                return None;
            }
            let start = u64::from_str_radix(f[0], 16).ok()?;
            let size = u64::from_str_radix(f[1], 16).ok()?;
            (size >= 16).then_some((start, size))
        })
        .collect();
    functions.sort();
    assert!(functions.len() > 100, "too few functions in {symbols}");

    let mut builder = ProfileBuilder::new(cpu_sample_types());
    builder.profile.mappings.push(Mapping {
        start: 0x400000,
        limit: 0x4000000,
        offset: 0,
        path: binary.clone(),
        perms: "r-xp".into(),
        ..Mapping::default()
    });
    let mut rng = Lcg(42);
    // 50,000 distinct leaf PCs: each round takes the next offset (7 bytes
    // on) in every function still long enough.
    let mut leaves: Vec<u64> = Vec::with_capacity(50_000);
    'rounds: for round in 0u64.. {
        let offset = 1 + round * 7;
        let before = leaves.len();
        for &(start, size) in &functions {
            if offset < size {
                leaves.push(start + offset);
                if leaves.len() == 50_000 {
                    break 'rounds;
                }
            }
        }
        assert!(
            leaves.len() > before,
            "functions too small for 50,000 distinct PCs"
        );
    }
    // Call sites: one PC (a return address) inside each function.
    let call_site = |f: usize| functions[f].0 + functions[f].1 / 2;
    let mut paths: Vec<Vec<u64>> = Vec::with_capacity(leaves.len());
    for &leaf in &leaves {
        let mut path = match paths.len() {
            0 => vec![call_site(0)],
            n => {
                let earlier = &paths[rng.below(n as u64) as usize];
                let keep = 1 + rng.below(earlier.len() as u64 - 1) as usize;
                earlier[..keep].to_vec()
            }
        };
        let depth = 5 + rng.below(36) as usize;
        while path.len() < depth - 1 {
            let spread = (20 * path.len() as u64).min(functions.len() as u64 - 1);
            path.push(call_site(1 + rng.below(spread) as usize));
        }
        path.push(leaf);
        paths.push(path);
    }
    for _ in 0..samples {
        let u = rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
        let path = &paths[(u * u * u * paths.len() as f64) as usize];
        // Stored leaf first; the reader subtracts 1 from callers, the writer
        // adds it back, so store callers as the call site itself.
        let locations = path
            .iter()
            .rev()
            .map(|&pc| builder.location_at(pc))
            .collect();
        builder.add_sample(locations, vec![1, 10_000_000]);
    }
    let profile = builder.finish();
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).expect("create OUT"));
    gperftools::write(&profile, &mut file).expect("write the profile");
    eprintln!(
        "{out}: {samples} samples, {} distinct stacks, {} locations, {} functions in {binary}",
        profile.samples.len(),
        profile.locations.len(),
        functions.len()
    );
}
