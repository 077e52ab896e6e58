//! Deterministic synthetic call graphs shaped like real ones (a root,
//! fan-out that narrows with depth, shared callees, recursion, long C++
//! names), for layout tests and benchmarks.

use cpuprof_report::output::svg::layout::{Align, TextLine};
use cpuprof_report::output::svg::{GraphPicture, PictureEdge, PictureNode};

/// xorshift64*: a fixed sequence for a fixed seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "std",
    "vector",
    "map",
    "Parser",
    "Lexer",
    "Tokenize",
    "ReadBlock",
    "Mutex",
    "Lock",
    "Unlock",
    "hash",
    "Rehash",
    "compute",
    "Matrix",
    "Multiply",
    "operator()",
    "Render",
    "Scene",
    "Mesh",
    "Allocate",
    "free",
    "malloc",
    "memcpy",
    "Decode",
    "Huffman",
    "Inflate",
    "Table",
    "Lookup",
    "Insert",
    "Compare<std::string>",
    "Session",
    "Dispatch",
    "Worker",
];

/// A call graph of `count` nodes drawn the way the call-graph outputs draw
/// them: name lines split at `::`, then `flat (x%)` and `of cum (y%)`.
pub fn call_graph(count: usize, seed: u64) -> GraphPicture {
    let mut rng = Rng::new(seed);
    let total = 100_000.0;
    let mut nodes = Vec::with_capacity(count);
    let mut edges: Vec<PictureEdge> = Vec::new();
    let mut outdegree = vec![0usize; count];
    let mut by_depth: Vec<Vec<usize>> = Vec::new();
    let mut depth: Vec<usize> = Vec::new();
    for index in 0..count {
        let parts = 1 + rng.below(3) as usize;
        let mut name_parts: Vec<String> = (0..parts)
            .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize].to_string())
            .collect();
        name_parts.push(format!("fn{index}"));
        let name = if index == 0 {
            "main".to_string()
        } else {
            name_parts.join("::")
        };
        // Heavy tail: a few hot nodes, many cold ones.
        let flat = if index == 0 {
            0.0
        } else {
            let r = rng.below(1000) as f64 / 1000.0;
            (total * 0.3 * r.powi(12)).floor()
        };
        let cum = (flat + total * 0.9 / (1.0 + index as f64 * 0.3))
            .min(total)
            .floor();
        let _ = &depth;
        let mut lines: Vec<TextLine> = name
            .split("::")
            .map(|part| TextLine {
                text: part.to_string(),
                align: Align::Center,
            })
            .collect();
        lines.push(TextLine {
            text: format!("{} ({:.1}%)", flat, 100.0 * flat / total),
            align: Align::Right,
        });
        if cum != flat {
            lines.push(TextLine {
                text: format!("of {} ({:.1}%)", cum, 100.0 * cum / total),
                align: Align::Right,
            });
        }
        nodes.push(PictureNode {
            name: name.clone(),
            lines,
            font_size: 8.0 + 50.0 * (flat / total).sqrt(),
            cum_fraction: cum / total,
            change: None,
        });
        if index == 0 {
            by_depth.push(vec![0]);
            depth.push(0);
        } else {
            // Depth grows like the square root of the count, up to 40:
            // real call graphs are wide rather than deep.
            let deepest = by_depth.len() - 1;
            let d = 1 + rng.below((deepest + 1).min(40) as u64) as usize;
            // The main caller is one level up; others up to three levels
            // up (long edges).
            for attempt in 0..6 {
                let extra = attempt > 0;
                if extra && rng.below(3) != 0 {
                    continue;
                }
                let level = if extra {
                    d - 1 - rng.below(d.min(3) as u64) as usize
                } else {
                    d - 1
                };
                let candidates = &by_depth[level];
                let caller = candidates[rng.below(candidates.len() as u64) as usize];
                if outdegree[caller] >= 8 || edges.iter().any(|e| e.from == caller && e.to == index)
                {
                    continue;
                }
                outdegree[caller] += 1;
                let weight = (cum * (0.3 + 0.7 * rng.below(100) as f64 / 100.0))
                    .floor()
                    .max(1.0);
                edges.push(edge(caller, index, weight, total, &nodes));
            }
            if d == by_depth.len() {
                by_depth.push(Vec::new());
            }
            by_depth[d].push(index);
            depth.push(d);
            // Occasional recursion and calls back up.
            if rng.below(15) == 0 {
                edges.push(edge(
                    index,
                    index,
                    (cum * 0.5).floor().max(1.0),
                    total,
                    &nodes,
                ));
            }
            if index > 3 && rng.below(40) == 0 {
                let target = rng.below(index as u64 - 1) as usize + 1;
                edges.push(edge(
                    index,
                    target,
                    (cum * 0.2).floor().max(1.0),
                    total,
                    &nodes,
                ));
            }
        }
    }
    GraphPicture {
        title: format!("synthetic{count}; {total} samples"),
        legend: vec![
            format!("synthetic call graph of {count} nodes"),
            format!("Total samples: {total}"),
            format!("Focusing on: {total}"),
            "Dropped nodes with <= 500 abs(samples)".to_string(),
            "Dropped edges with <= 100 samples".to_string(),
        ],
        nodes,
        edges,
    }
}

fn edge(from: usize, to: usize, weight: f64, total: f64, nodes: &[PictureNode]) -> PictureEdge {
    PictureEdge {
        from,
        to,
        weight,
        label: format!("{weight}"),
        fraction: weight / total,
        dashed: false,
        tooltip: format!(
            "{} -> {} ({weight})",
            nodes[from].name,
            nodes.get(to).map_or("?", |n| &n.name)
        ),
    }
}
