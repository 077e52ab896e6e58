//! `--callgrind`: the report in callgrind's format, for KCachegrind and
//! `callgrind_annotate`.
//!
//! ```text
//! # callgrind format
//! version: 1
//! creator: cpuprof
//! cmd: ./spin
//! positions: line
//! events: samples
//! summary: 491
//!
//! fl=(1) /src/spin.c
//! fn=(1) burn_a
//! 35 280
//! cfl=(1)
//! cfn=(2) cpu_now
//! calls=4 28
//! 35 4
//! ```
//!
//! One `fn=` block per function (per file at `--files`), sorted by file
//! and name. In a block: the self cost lines (the flat value of each of the
//! function's report frames, at its position), then one call per callee
//! frame (`cfl=`/`cfn=`, `calls=WEIGHT TARGET`, then `POSITION WEIGHT`: the
//! inclusive cost of the call, counted once per sample as in the call
//! graph). Calls are counted in samples: a profile does not know how many
//! calls there were. Positions are source lines (`positions: line`; at
//! `--functions` the first line seen of the function, at `--files` 0), or
//! with `--addresses` instruction addresses at their link-time value
//! (`positions: instr`), so that they match `objdump -d`. File and function
//! names are compressed (`(N) name` the first time, `(N)` after).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::executable::LinkAddresses;
use crate::graph::Graph;
use crate::names;
use crate::options::{Granularity, Options};
use crate::stacks::{Frame, Stacks};

/// Where a report frame sits in callgrind's terms.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    file: String,
    function: String,
    position: u64,
}

/// Writes the callgrind file of `stacks`; `program` is the `cmd:` line.
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    program: &str,
) -> io::Result<()> {
    let addresses = stacks.granularity == Granularity::Addresses;
    let link = addresses.then(|| LinkAddresses::new(stacks.profile()));
    let places: Vec<Place> = stacks
        .frames
        .iter()
        .map(|f| place(f, stacks, options, link.as_ref()))
        .collect();

    // Per function (file, name): self cost per position, and calls per
    // (caller position, callee place).
    #[derive(Default)]
    struct Block {
        costs: BTreeMap<u64, i64>,
        calls: BTreeMap<(u64, Place), i64>,
    }
    let mut blocks: BTreeMap<(String, String), Block> = BTreeMap::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.flat == 0 {
            continue;
        }
        let p = &places[i];
        let block = blocks
            .entry((p.file.clone(), p.function.clone()))
            .or_default();
        *block.costs.entry(p.position).or_insert(0) += node.flat;
    }
    for edge in &graph.edges {
        if edge.weight == 0 {
            continue;
        }
        let caller = &places[edge.caller.index()];
        let callee = &places[edge.callee.index()];
        let block = blocks
            .entry((caller.file.clone(), caller.function.clone()))
            .or_default();
        *block
            .calls
            .entry((caller.position, callee.clone()))
            .or_insert(0) += edge.weight;
    }

    let total: i64 = graph.nodes.iter().map(|n| n.flat).sum();
    let mut s = String::with_capacity(1 << 16);
    s.push_str("# callgrind format\nversion: 1\ncreator: cpuprof\n");
    let _ = writeln!(s, "cmd: {}", one_line(program));
    let _ = writeln!(s, "positions: {}", if addresses { "instr" } else { "line" });
    let _ = writeln!(s, "events: {}", event_name(stacks));
    let _ = writeln!(s, "summary: {total}");
    let mut files = Names::default();
    let mut functions = Names::default();
    let position = |p: u64| {
        if addresses {
            format!("{p:#x}")
        } else {
            p.to_string()
        }
    };
    for ((file, function), block) in &blocks {
        s.push('\n');
        let _ = writeln!(s, "fl={}", files.name(file));
        let _ = writeln!(s, "fn={}", functions.name(function));
        for (p, cost) in &block.costs {
            let _ = writeln!(s, "{} {cost}", position(*p));
        }
        for ((from, callee), weight) in &block.calls {
            let _ = writeln!(s, "cfl={}", files.name(&callee.file));
            let _ = writeln!(s, "cfn={}", functions.name(&callee.function));
            let _ = writeln!(s, "calls={weight} {}", position(callee.position));
            let _ = writeln!(s, "{} {weight}", position(*from));
        }
        if s.len() > 1 << 16 {
            out.write_all(s.as_bytes())?;
            s.clear();
        }
    }
    out.write_all(s.as_bytes())
}

/// The event name: the sample type's kind as an identifier (`samples`,
/// `cpu`), `samples` if it has none.
fn event_name(stacks: &Stacks) -> String {
    let kind: String = stacks
        .sample_type
        .kind
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    match kind.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => kind,
        Some(_) => format!("_{kind}"),
        None => "samples".to_string(),
    }
}

/// Callgrind names end at the line's end.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// Name compression: `(N) name` the first time a name is written, `(N)`
/// after.
#[derive(Default)]
struct Names {
    ids: FxHashMap<String, usize>,
}

impl Names {
    fn name(&mut self, name: &str) -> String {
        if let Some(id) = self.ids.get(name) {
            return format!("({id})");
        }
        let id = self.ids.len() + 1;
        self.ids.insert(name.to_string(), id);
        format!("({id}) {}", one_line(name))
    }
}

/// The file, function and position of a report frame.
fn place(frame: &Frame, stacks: &Stacks, options: &Options, link: Option<&LinkAddresses>) -> Place {
    let file = if frame.file.is_empty() {
        "???".to_string()
    } else {
        frame.file.clone()
    };
    let function = match stacks.granularity {
        Granularity::Functions | Granularity::Files => frame.name.clone(),
        Granularity::Lines | Granularity::Addresses => {
            if frame.function.is_empty() {
                names::address(frame.address)
            } else if options.full_names {
                frame.function.clone()
            } else {
                names::short_name(&frame.function)
            }
        }
    };
    let position = match stacks.granularity {
        Granularity::Functions | Granularity::Lines => frame.line.max(0) as u64,
        Granularity::Files => 0,
        Granularity::Addresses => match link {
            Some(link) => link.link_address(stacks.profile(), frame.mapping, frame.address),
            None => frame.address,
        },
    };
    Place {
        file,
        function,
        position,
    }
}
