//! `cpuprof demo`: profiles a built-in workload of known proportions with
//! the agent (in this process, through `cpuprof::ProfilerGuard`) and prints
//! the report. Builds nothing external.
//!
//! Each worker thread spends its CPU time 60% in [`demo_hot`], 30% in
//! [`demo_warm`] and 10% in [`demo_cool`] (the hot part through a short
//! recursion, so stacks have depth), measured on its own CPU clock, so the
//! report should show that split whatever the machine's load.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

/// Arguments of `cpuprof demo`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Worker threads.
    #[arg(short = 't', long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// CPU seconds each worker burns.
    #[arg(short = 's', long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Samples per CPU-second.
    #[arg(short = 'F', long = "frequency", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub frequency: u32,
    /// Where to write the profile [default: a file in the temporary directory].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Rows of the report to print.
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub nodecount: usize,
}

/// Runs `cpuprof demo`.
pub fn run(args: Args) -> Result<i32> {
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        anyhow::bail!("--seconds must be between 0 and 3600, got {}", args.seconds);
    }
    let output = args.output.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("cpuprof-demo-{}.prof", std::process::id()))
    });
    println!(
        "cpuprof demo: {} threads x {:.1} CPU-s, each 60% demo_hot / 30% demo_warm / 10% demo_cool, sampled at {} Hz",
        args.threads, args.seconds, args.frequency
    );
    let settings = cpuprof::Settings {
        frequency: args.frequency,
        ..cpuprof::Settings::default()
    };
    let guard =
        cpuprof::ProfilerGuard::start_with(&output, settings).context("starting the profiler")?;
    let budget = Duration::from_secs_f64(args.seconds);
    let workers: Vec<_> = (0..args.threads)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("demo-worker-{i}"))
                .spawn(move || demo_worker(budget))
        })
        .collect::<Result<_, _>>()
        .context("starting the demo threads")?;
    for worker in workers {
        black_box(
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a demo thread panicked"))?,
        );
    }
    let summary = guard.stop().context("stopping the profiler")?;
    let expected = args.seconds * f64::from(args.threads) * f64::from(args.frequency);
    println!(
        "{} samples ({:.0}% of the {:.0} expected from the CPU time), clock: {}, profile: {}\n",
        summary.samples,
        100.0 * summary.samples as f64 / expected,
        expected,
        summary.clock,
        output.display()
    );
    let exe = std::env::current_exe().ok().into_iter().collect::<Vec<_>>();
    crate::record::print_report(&output, &exe, args.nodecount)?;
    Ok(0)
}

/// The CPU time used by the calling thread, in nanoseconds.
#[inline(never)]
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One worker: 10 ms slices split 60/30/10.
fn demo_worker(budget: Duration) -> u64 {
    let budget = budget.as_nanos() as u64;
    let slice = 10_000_000u64;
    let start = thread_cpu_ns();
    let mut total = 0u64;
    while thread_cpu_ns() - start < budget {
        total ^= demo_recurse(8, slice * 6 / 10);
        total ^= demo_warm(slice * 3 / 10);
        total ^= demo_cool(slice / 10);
    }
    total
}

/// Reaches [`demo_hot`] through `depth` frames.
#[inline(never)]
fn demo_recurse(depth: u32, budget_ns: u64) -> u64 {
    let result = if depth <= 1 {
        demo_hot(budget_ns)
    } else {
        demo_recurse(depth - 1, budget_ns)
    };
    black_box(result)
}

/// Hides `x` from the optimizer without a function call (so no inlined
/// helper shows up in the report).
#[inline(always)]
fn opaque(mut x: u64) -> u64 {
    // SAFETY: an empty asm block that only claims to modify a register.
    unsafe { std::arch::asm!("/* {0} */", inout(reg) x, options(nomem, nostack, preserves_flags)) };
    x
}

/// 60% of the time: integer mixing.
#[inline(never)]
fn demo_hot(budget_ns: u64) -> u64 {
    let end = thread_cpu_ns() + budget_ns;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while thread_cpu_ns() < end {
        let mut i = 0;
        while i < 20_000 {
            i += 1;
            x = opaque(((x << 13) ^ (x >> 51)) ^ (x >> 7));
        }
    }
    x
}

/// 30% of the time: floating point.
#[inline(never)]
fn demo_warm(budget_ns: u64) -> u64 {
    let end = thread_cpu_ns() + budget_ns;
    let mut x = 1.0f64;
    while thread_cpu_ns() < end {
        let mut i = 0;
        while i < 20_000 {
            i += 1;
            x = x * 1.000_000_1 + 1e-9;
            x = f64::from_bits(opaque(x.to_bits()));
        }
    }
    x.to_bits()
}

/// 10% of the time: shifts.
#[inline(never)]
fn demo_cool(budget_ns: u64) -> u64 {
    let end = thread_cpu_ns() + budget_ns;
    let mut x = 12345u64;
    while thread_cpu_ns() < end {
        let mut i = 0;
        while i < 20_000 {
            i += 1;
            x = opaque(x ^ (x >> 3) ^ 0x5555);
        }
    }
    x
}
