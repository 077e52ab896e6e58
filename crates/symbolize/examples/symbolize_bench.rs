//! Times symbolization of many distinct addresses spread over real
//! binaries: libc (with its build-id debug file from libc6-dbg), libstdc++
//! and a C++ test program compiled with `g++ -O2 -g`.
//!
//! ```text
//! cargo run --release -p cpuprof-symbolize --example symbolize_bench -- [--addresses N] [--runs R] [--warm W] [--binary PATH]...
//! ```
//!
//! It builds a profile whose mappings place each binary the way the kernel
//! would (PIE and libraries at made-up bases, `PT_LOAD` segments page by
//! page), picks N distinct addresses inside function symbols (40% libc,
//! 30% libstdc++, 30% the test program, by default 50,000), and times
//! `symbolize()` from scratch R times (opening the files, decompressing
//! DWARF, resolving), then once more with a warm `Symbolizer`. It prints
//! the times, the number of locations resolved to a name and to a line,
//! and the peak RSS of the process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cpuprof_profile::{Location, Mapping, MappingId, Profile};
use cpuprof_symbolize::{symbolize, Binary, Kind, Options, Symbolizer};

/// The C++ program compiled for the benchmark: enough templates, inlining
/// and library calls to give a few thousand functions.
const WORKLOAD: &str = r#"
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
#include <sstream>
#include <iostream>
template <int N> struct Unroll {
  static long run(long x) { return Unroll<N - 1>::run(x * 31 + N) ^ (x >> 3); }
};
template <> struct Unroll<0> { static long run(long x) { return x; } };
template <typename K, typename V> long churn(int n) {
  std::map<K, V> m; std::unordered_map<K, V> u; std::vector<K> v;
  for (int i = 0; i < n; i++) { m[K(i)] = V(i); u[K(i)] = V(i); v.push_back(K(i)); }
  std::sort(v.begin(), v.end());
  long s = 0; for (auto& kv : m) s += (long)kv.second; return s + (long)u.size();
}
int main(int argc, char** argv) {
  long s = Unroll<200>::run(argc);
  s += churn<int, long>(100) + churn<long, int>(100) + churn<double, double>(100);
  s += churn<int, double>(100) + churn<long, long>(100) + churn<unsigned, float>(100);
  std::ostringstream os; os << s; std::cout << os.str().size() << std::endl;
  return (int)(s & 1);
}
"#;

/// CPU time used by the whole process (all threads), in seconds: wall
/// time is meaningless on a machine shared with other jobs.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// VmHWM, the peak resident set size of the process, in MB.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn compile_workload(dir: &Path) -> PathBuf {
    let source = dir.join("bench_workload.cc");
    let binary = dir.join("bench_workload");
    std::fs::write(&source, WORKLOAD).expect("write workload");
    let status = Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("run g++");
    assert!(status.success(), "g++ failed");
    binary
}

/// Mappings for `binary` loaded at `base`, one per `PT_LOAD` segment, page
/// aligned as the kernel maps them.
fn mappings_for(binary: &Binary, path: &Path, base: u64) -> Vec<Mapping> {
    let base = if binary.kind() == Kind::Executable {
        0
    } else {
        base
    };
    binary
        .segments()
        .iter()
        .map(|s| {
            let start = base + (s.address & !0xfff);
            let limit = (base + s.address + s.memory_size + 0xfff) & !0xfff;
            Mapping {
                start,
                limit,
                offset: s.file_offset & !0xfff,
                path: path.display().to_string(),
                perms: if s.executable { "r-xp" } else { "r--p" }.to_string(),
                ..Mapping::default()
            }
        })
        .collect()
}

fn main() {
    let mut addresses = 50_000usize;
    let mut runs = 3usize;
    let mut warm_runs = 1usize;
    let mut binaries: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addresses" => {
                addresses = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--addresses N")
            }
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs R"),
            "--warm" => warm_runs = args.next().and_then(|v| v.parse().ok()).expect("--warm W"),
            "--binary" => binaries.push(args.next().expect("--binary PATH").into()),
            _ => {
                eprintln!("usage: symbolize_bench [--addresses N] [--runs R] [--warm W] [--binary PATH]...");
                std::process::exit(2);
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("cpuprof-symbolize-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    if binaries.is_empty() {
        binaries = vec![
            "/lib/x86_64-linux-gnu/libc.so.6".into(),
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6".into(),
            compile_workload(&dir),
        ];
    }
    let weights = [40u64, 30, 30];

    // Build the profile: mappings, and distinct addresses inside symbols.
    let options = Options::default();
    let mut profile = Profile::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut picked: Vec<u64> = Vec::new();
    let mut base = 0x7f00_0000_0000u64;
    let total_weight: u64 = weights.iter().take(binaries.len()).sum::<u64>().max(1);
    for (i, path) in binaries.iter().enumerate() {
        let binary = Binary::open(path, &options).unwrap_or_else(|e| panic!("{e}"));
        let mappings = mappings_for(&binary, path, base);
        base += 0x1000_0000;
        let symbols: Vec<(u64, u64)> = binary
            .symbols()
            .iter()
            .filter(|s| s.size > 1)
            .map(|s| (s.address, s.size))
            .collect();
        let want = addresses as u64 * weights.get(i).copied().unwrap_or(10) / total_weight;
        let capacity: u64 = symbols.iter().map(|s| s.1).sum();
        let want = want.min(capacity / 2);
        let mut seen = std::collections::HashSet::new();
        while (seen.len() as u64) < want {
            let (address, size) = symbols[(rng.next() % symbols.len() as u64) as usize];
            let file_address = address + rng.next() % size;
            let mapping = mappings
                .iter()
                .find_map(|m| binary.file_to_runtime(m, file_address));
            if let Some(runtime) = mapping {
                if seen.insert(runtime) {
                    picked.push(runtime);
                }
            }
        }
        profile.mappings.extend(mappings);
    }
    profile.sort_mappings();
    for &address in &picked {
        let mapping = profile.mapping_of(address).map(|m: MappingId| m);
        profile.locations.push(Location {
            address,
            mapping,
            ..Location::default()
        });
    }
    println!(
        "{} distinct addresses over {} binaries: {}",
        picked.len(),
        binaries.len(),
        binaries
            .iter()
            .map(|b| b.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("rayon threads: {}", rayon::current_num_threads());
    println!("peak RSS before symbolizing: {:.1} MB", peak_rss_mb());

    let mut times = Vec::new();
    let mut cpu_times = Vec::new();
    let mut last = profile.clone();
    for _ in 0..runs {
        let mut p = profile.clone();
        let start = Instant::now();
        let cpu = cpu_seconds();
        let warnings = symbolize(&mut p, &options);
        cpu_times.push(cpu_seconds() - cpu);
        times.push(start.elapsed().as_secs_f64());
        for w in warnings {
            eprintln!("warning: {w}");
        }
        last = p;
    }
    let named = last
        .locations
        .iter()
        .filter(|l| !l.lines.is_empty())
        .count();
    let with_line = last
        .locations
        .iter()
        .filter(|l| l.lines.iter().any(|x| x.line > 0))
        .count();
    let inlined = last.locations.iter().filter(|l| l.lines.len() > 1).count();
    times.sort_by(f64::total_cmp);
    cpu_times.sort_by(f64::total_cmp);
    if runs > 0 {
        println!(
        "cold symbolize(): wall min {:.1} ms, median {:.1} ms; CPU (all threads) min {:.1} ms, median {:.1} ms; over {runs} runs",
        times[0] * 1e3,
        times[times.len() / 2] * 1e3,
        cpu_times[0] * 1e3,
        cpu_times[cpu_times.len() / 2] * 1e3
        );
    }
    let symbolizer = Symbolizer::new(options.clone());
    let mut p = profile.clone();
    symbolizer.symbolize(&mut p);
    for _ in 0..warm_runs {
        let mut p = profile.clone();
        let start = Instant::now();
        let cpu = cpu_seconds();
        symbolizer.symbolize(&mut p);
        println!(
            "warm Symbolizer (binaries and DWARF already parsed): wall {:.1} ms, CPU {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3,
            (cpu_seconds() - cpu) * 1e3
        );
    }
    println!(
        "resolved: {named} with a function, {with_line} with a line, {inlined} with inline frames; {} functions",
        last.functions.len()
    );
    println!("peak RSS: {:.1} MB", peak_rss_mb());
    let _ = std::fs::remove_dir_all(&dir);
}
