//! Writes a large gperftools CPU profile whose PCs fall in real functions of
//! real files (libc, libstdc++ and a given binary), laid out as a process
//! would map them, for benchmarks.
//!
//! usage: gen-big-profile OUT [--binary PATH] [--records N] [--pcs N] [--seed S]
//! defaults: 300000 records, 50000 distinct PCs, stacks 8..46 frames deep
//! (about 70 MB).

use std::path::{Path, PathBuf};

use cpuprof_profile::{cpu_sample_types, gperftools, Mapping, ProfileBuilder, ValueType};
use object::{Object, ObjectSegment, ObjectSymbol, SegmentFlags};

/// A mapped file: its executable mapping and the runtime ranges of its functions.
struct Image {
    mapping: Mapping,
    functions: Vec<(u64, u64)>,
}

fn image(path: &Path, base: u64) -> Image {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = object::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = file
        .segments()
        .find(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0))
        .expect("an executable segment");
    let (file_offset, _) = text.file_range();
    let page = |v: u64| v & !0xfff;
    let start = base + page(text.address());
    let limit = base + ((text.address() + text.size() + 0xfff) & !0xfff);
    let mut functions: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() >= 8)
        .map(|s| (base + s.address(), s.size()))
        .filter(|(a, _)| *a >= start && *a < limit)
        .collect();
    functions.sort_unstable();
    functions.dedup();
    Image {
        mapping: Mapping {
            start,
            limit,
            offset: page(file_offset),
            path: path.display().to_string(),
            perms: "r-xp".into(),
            ..Mapping::default()
        },
        functions,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    let mut binary = PathBuf::from("/proc/self/exe");
    let (mut records, mut pcs, mut seed) = (300_000usize, 50_000usize, 0x9e3779b97f4a7c15u64);
    while let Some(a) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--binary" => binary = PathBuf::from(value()),
            "--records" => records = value().parse().expect("--records N"),
            "--pcs" => pcs = value().parse().expect("--pcs N"),
            "--seed" => seed = value().parse().expect("--seed S"),
            _ if out.is_none() => out = Some(PathBuf::from(a)),
            _ => panic!(
                "usage: gen-big-profile OUT [--binary PATH] [--records N] [--pcs N] [--seed S]"
            ),
        }
    }
    let out = out.expect("usage: gen-big-profile OUT [--binary PATH] [--records N] [--pcs N]");
    let binary = std::fs::canonicalize(&binary).expect("the binary");
    let images = [
        image(&binary, 0x5555_5555_4000),
        image(
            Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6"),
            0x7f00_0000_0000,
        ),
        image(
            Path::new("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
            0x7f10_0000_0000,
        ),
    ];
    let mut rng = cpuprof_testkit::XorShift(seed | 1);
    // Distinct PCs inside functions, a share of each image by its code
    // size (a small binary cannot hold a third of 50k distinct PCs).
    let weights: Vec<u64> = images
        .iter()
        .map(|i| i.functions.iter().map(|f| f.1).sum::<u64>())
        .collect();
    let total_weight: u64 = weights.iter().sum();
    assert!(
        total_weight as usize > pcs * 2,
        "the images hold only {total_weight} bytes of code for {pcs} PCs"
    );
    let mut pool: Vec<u64> = Vec::with_capacity(pcs);
    let mut seen = std::collections::HashSet::new();
    while pool.len() < pcs {
        let mut pick = rng.below(total_weight);
        let img = images
            .iter()
            .zip(&weights)
            .find(|(_, &w)| {
                let hit = pick < w;
                pick = pick.saturating_sub(w);
                hit
            })
            .map(|(i, _)| i)
            .unwrap_or(&images[0]);
        let (start, size) = img.functions[rng.below(img.functions.len() as u64) as usize];
        let pc = start + rng.below(size);
        if seen.insert(pc) {
            pool.push(pc);
        }
    }
    // Shuffle so that every prefix of the pool spans all images.
    for i in (1..pool.len()).rev() {
        pool.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut builder = ProfileBuilder::new(cpu_sample_types());
    let mut mappings: Vec<Mapping> = images.iter().map(|i| i.mapping.clone()).collect();
    mappings.sort_by_key(|m| m.start);
    builder.profile.mappings = mappings;
    builder.profile.period_type = ValueType::new("cpu", "nanoseconds");
    builder.profile.period = 10_000_000;
    builder.profile.default_sample_type = "samples".into();
    // Roots come from a few PCs, frames nearer the leaf from ever more.
    let mut next_unused = 0usize;
    for _ in 0..records {
        let depth = 8 + rng.below(39) as usize;
        let mut stack = Vec::with_capacity(depth);
        for level in 0..depth {
            let from_root = depth - 1 - level;
            let width = (16usize << from_root.min(12)).min(pcs) as u64;
            let pc = if level == 0 && next_unused < pcs {
                next_unused += 1;
                pool[next_unused - 1]
            } else {
                pool[rng.below(width) as usize]
            };
            stack.push(builder.location_at(pc));
        }
        let count = 1 + rng.below(3) as i64;
        builder.add_sample(stack, vec![count, count * 10_000_000]);
    }
    let profile = builder.profile;
    let mut file = std::io::BufWriter::new(std::fs::File::create(&out).expect("create OUT"));
    gperftools::write(&profile, &mut file).expect("write");
    eprintln!(
        "gen-big-profile: {} records, {} distinct PCs, {} bytes -> {}",
        profile.samples.len(),
        profile.locations.len(),
        std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0),
        out.display()
    );
}
