//! Layout and SVG speed on synthetic call graphs of 80 and 1000 nodes
//! (pprof's default `--nodecount` and `--nodecount=1000`).
//!
//! `cargo bench -p cpuprof-report --bench layout` prints the median of
//! several runs for each size, in wall time and in the thread's CPU time
//! (which a loaded machine inflates less).
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::time::{Duration, Instant};

use cpuprof_report::output::svg::layout::{layout, LayoutOptions};
use cpuprof_report::output::svg::{layout_graph, render_svg};

/// CPU time of this thread.
fn cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is a filter we ignore.
    for &(count, repeats) in &[(80usize, 50usize), (1000, 7)] {
        let picture = synthetic::call_graph(count, 1);
        let graph = layout_graph(&picture);
        let options = LayoutOptions::default();
        let mut layout_runs = Vec::new();
        let mut layout_cpu = Vec::new();
        let mut svg_runs = Vec::new();
        let mut svg_cpu = Vec::new();
        let mut bytes = 0;
        for _ in 0..repeats {
            let (start, cpu) = (Instant::now(), cpu_time());
            let placed = layout(&graph, &options);
            layout_runs.push(start.elapsed());
            layout_cpu.push(cpu_time() - cpu);
            std::hint::black_box(placed);
            let (start, cpu) = (Instant::now(), cpu_time());
            bytes = render_svg(&picture).len();
            svg_runs.push(start.elapsed());
            svg_cpu.push(cpu_time() - cpu);
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{count:5} nodes {:5} edges: layout {:7.2} ms wall {:7.2} ms cpu; layout+SVG {:7.2} ms wall {:7.2} ms cpu ({bytes} bytes); median of {repeats}",
            picture.edges.len(),
            ms(median(layout_runs)),
            ms(median(layout_cpu)),
            ms(median(svg_runs)),
            ms(median(svg_cpu)),
        );
    }
}
