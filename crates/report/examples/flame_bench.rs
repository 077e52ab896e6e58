//! Times the flame graph on a big synthetic profile: 300,000 samples over
//! 50,000 distinct leaf functions, each sample its own stack (the worst
//! case for the caller: nothing merged before the tree is built), on 50,000
//! call paths 5 to 40 frames deep.
//!
//!     cargo run --release -p cpuprof-report --example flame_bench [OUT_DIR] [SAMPLES]
//!
//! FLAME_BENCH_WORST_CASE=1 makes every sample a random path of its own
//! instead (the merged tree then has as many frames as the input).
//!
//! Prints the median of 5 runs of each stage; with OUT_DIR, also writes
//! `flame.html`, `flame.svg` and `icicle.html` there.
//!
//!     cargo run --release -p cpuprof-report --example flame_bench -- --profile BINARY PROFILE
//!
//! times the stages of `cpuprof report` on a real profile instead: reading,
//! symbolizing, the report's stacks, then `--text` (graph and rows) against
//! the flame graph (its input, tree and rendering).

use std::time::{Duration, Instant};

use cpuprof_report::output::flame::{
    render, FlameFormat, FlameInput, FlameOptions, FlameOrientation, FrameName, FrameTree,
};

/// A small deterministic generator (64-bit LCG, high bits out), so every
/// run times the same profile.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn synthetic(samples: usize, worst_case: bool) -> FlameInput {
    let mut input = FlameInput::new("synthetic", "samples", samples as i64);
    let mut rng = Lcg(42);
    // 50,000 leaves (one per distinct PC), 2,000 interior functions, 2 roots.
    let leaves: Vec<FrameName> = (0..50_000)
        .map(|i| input.frame_name(&format!("leaf_function_{i}(int, char const*)")))
        .collect();
    let interior: Vec<FrameName> = (0..2_000)
        .map(|i| input.frame_name(&format!("ns::Interior{i}::call")))
        .collect();
    let roots = [input.frame_name("main"), input.frame_name("thread_main")];
    let mut stack = Vec::with_capacity(64);
    if worst_case {
        // Every sample its own random path: the tree is as big as the input.
        for _ in 0..samples {
            stack.clear();
            stack.push(roots[rng.below(2) as usize]);
            let depth = 5 + rng.below(36) as usize;
            for level in 1..depth - 1 {
                let spread = (20 * level as u64).min(interior.len() as u64);
                stack.push(interior[rng.below(spread) as usize]);
            }
            stack.push(leaves[rng.below(leaves.len() as u64) as usize]);
            input.add_stack(&stack, 1, None);
        }
        return input;
    }
    // A program's call tree: each call path (5 to 40 frames) ends in its
    // own leaf PC; samples fall on the paths with a skew (a few hot
    // paths, a long tail), as real profiles do.
    let mut paths: Vec<Vec<FrameName>> = Vec::with_capacity(leaves.len());
    for &leaf in &leaves {
        // Most paths share a prefix with an earlier one.
        let mut path = match paths.len() {
            0 => vec![roots[0]],
            n => {
                let earlier = &paths[rng.below(n as u64) as usize];
                let keep = 1 + rng.below(earlier.len() as u64 - 1) as usize;
                earlier[..keep].to_vec()
            }
        };
        if paths.len() % 4 == 1 && path.len() == 1 {
            path[0] = roots[1];
        }
        let depth = 5 + rng.below(36) as usize;
        while path.len() < depth - 1 {
            let spread = (20 * path.len() as u64).min(interior.len() as u64);
            path.push(interior[rng.below(spread) as usize]);
        }
        path.push(leaf);
        paths.push(path);
    }
    for _ in 0..samples {
        // u^3 skews towards the first paths.
        let u = rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
        let path = &paths[(u * u * u * paths.len() as f64) as usize];
        input.add_stack(path, 1, None);
    }
    input
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut runs = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let t = Instant::now();
        last = Some(f());
        runs.push(t.elapsed());
    }
    (median(runs), last.unwrap())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The stages of `cpuprof report` on a real profile.
fn real_profile(binary: &str, path: &str) {
    use cpuprof_report::{output::text, Graph, Options, Stacks};
    let data = std::fs::read(path).expect("read the profile");
    let (read, profile) = time(|| {
        cpuprof_profile::read_profile(&data, &Default::default())
            .unwrap()
            .1
    });
    let symbolize_options = cpuprof_symbolize::Options {
        binaries: vec![binary.into()],
        ..cpuprof_symbolize::Options::default()
    };
    let (symbolize, profile) = time(|| {
        let mut p = profile.clone();
        cpuprof_symbolize::symbolize(&mut p, &symbolize_options);
        p
    });
    let options = Options::default();
    let (stacks_time, stacks) = time(|| Stacks::build(&profile, &options));
    let (text_time, text_bytes) = time(|| {
        let graph = Graph::build(&stacks, false);
        let mut out = Vec::new();
        text::write(&mut out, &stacks, &graph, &options).unwrap();
        out.len()
    });
    let (input_time, input) =
        time(|| cpuprof_report::output::flame::input_from_stacks("t", &stacks, None));
    let html_options = FlameOptions::default();
    let svg_options = FlameOptions {
        format: FlameFormat::Svg,
        ..FlameOptions::default()
    };
    // Each output prunes its tree as `write_flame` does.
    let (tree_time, tree) =
        time(|| FrameTree::build_pruned(&input, html_options.prune_fraction()).unwrap());
    let (svg_tree_time, svg_tree) =
        time(|| FrameTree::build_pruned(&input, svg_options.prune_fraction()).unwrap());
    let (html_time, html) = time(|| render(&tree, &input, &html_options));
    let (svg_time, svg) = time(|| render(&svg_tree, &input, &svg_options));
    println!(
        "{} samples, {} distinct stacks, {} locations",
        profile.samples.iter().map(|s| s.values[0]).sum::<i64>(),
        profile.samples.len(),
        profile.locations.len()
    );
    println!(
        "read {:.1} ms, symbolize {:.1} ms, stacks {:.1} ms",
        ms(read),
        ms(symbolize),
        ms(stacks_time)
    );
    let text_total = ms(read) + ms(symbolize) + ms(stacks_time) + ms(text_time);
    println!("--text output (graph + rows): {:.1} ms, {text_bytes} bytes; whole --text run {text_total:.1} ms", ms(text_time));
    let flame = ms(input_time) + ms(tree_time);
    println!(
        "flame input {:.1} ms + tree {:.1} ms ({} frames kept, {} pruned) + html {:.1} ms ({} bytes) = {:.1} ms, {:.0}% of the --text run",
        ms(input_time),
        ms(tree_time),
        tree.len(),
        tree.pruned(),
        ms(html_time),
        html.len(),
        flame + ms(html_time),
        (flame + ms(html_time)) * 100.0 / text_total
    );
    let svg_flame = ms(input_time) + ms(svg_tree_time);
    println!(
        "flame input + tree {:.1} ms ({} frames kept) + svg {:.1} ms ({} bytes) = {:.1} ms, {:.0}% of the --text run",
        ms(svg_tree_time),
        svg_tree.len(),
        ms(svg_time),
        svg.len(),
        svg_flame + ms(svg_time),
        (svg_flame + ms(svg_time)) * 100.0 / text_total
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--profile") {
        real_profile(&args[2], &args[3]);
        return;
    }
    let out_dir = args.get(1).filter(|a| !a.is_empty());
    let samples: usize = args.get(2).map_or(300_000, |s| s.parse().expect("SAMPLES"));
    let worst_case = std::env::var_os("FLAME_BENCH_WORST_CASE").is_some();
    let (gen, input) = time(|| synthetic(samples, worst_case));
    let (build, tree) = time(|| FrameTree::build(&input).unwrap());
    let opts = |format, orientation| FlameOptions {
        format,
        orientation,
        ..FlameOptions::default()
    };
    let (svg_time, svg) = time(|| {
        render(
            &tree,
            &input,
            &opts(FlameFormat::Svg, FlameOrientation::Flame),
        )
    });
    let (html_time, html) = time(|| {
        render(
            &tree,
            &input,
            &opts(FlameFormat::Html, FlameOrientation::Flame),
        )
    });
    println!(
        "input: {} stacks, {} distinct names (generated in {:.1} ms)",
        input.stack_count(),
        tree.names().len(),
        gen.as_secs_f64() * 1e3
    );
    println!(
        "tree: {} frames, built in {:.1} ms",
        tree.len(),
        build.as_secs_f64() * 1e3
    );
    println!(
        "svg: {:.1} ms, {} bytes, {} frames drawn",
        svg_time.as_secs_f64() * 1e3,
        svg.len(),
        svg.matches("<g class=\"frame\">").count()
    );
    println!(
        "html: {:.1} ms, {} bytes",
        html_time.as_secs_f64() * 1e3,
        html.len()
    );
    if let Some(dir) = out_dir {
        std::fs::write(format!("{dir}/flame.html"), &html).unwrap();
        std::fs::write(format!("{dir}/flame.svg"), &svg).unwrap();
        let icicle = render(
            &tree,
            &input,
            &opts(FlameFormat::Html, FlameOrientation::Icicle),
        );
        std::fs::write(format!("{dir}/icicle.html"), icicle).unwrap();
        println!("wrote {dir}/flame.html, {dir}/flame.svg, {dir}/icicle.html");
    }
}
