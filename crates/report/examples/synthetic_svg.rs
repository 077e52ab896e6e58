//! Writes the SVG of a synthetic call graph: `synthetic_svg NODES SEED > out.svg`.
#[path = "../tests/support/synthetic.rs"]
mod synthetic;

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(80);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let picture = synthetic::call_graph(count, seed);
    print!("{}", cpuprof_report::output::svg::render_svg(&picture));
}
