//! Layout and SVG speed on synthetic call graphs of 80 and 1000 nodes
//! (pprof's default `--nodecount` and `--nodecount=1000`).
//!
//! `cargo bench -p cpuprof-report --bench layout` prints the median of
//! several runs for each size.
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

use std::time::{Duration, Instant};

use cpuprof_report::layout::{layout, LayoutOptions};
use cpuprof_report::svg::{layout_graph, render_svg};

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
        let mut svg_runs = Vec::new();
        let mut bytes = 0;
        for _ in 0..repeats {
            let start = Instant::now();
            let placed = layout(&graph, &options);
            layout_runs.push(start.elapsed());
            std::hint::black_box(placed);
            let start = Instant::now();
            bytes = render_svg(&picture).len();
            svg_runs.push(start.elapsed());
        }
        println!(
            "{count:5} nodes {:5} edges: layout {:8.2} ms, layout+SVG {:8.2} ms ({bytes} bytes of SVG), median of {repeats}",
            picture.edges.len(),
            median(layout_runs).as_secs_f64() * 1e3,
            median(svg_runs).as_secs_f64() * 1e3,
        );
    }
}
