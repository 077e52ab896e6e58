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
use std::sync::Arc;

use rustc_hash::FxHashMap;

use cpuprof_symbolize::Binary;

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
/// At [`Granularity::Addresses`], positions are link-time addresses
/// through `binaries` (one per mapping of the profile, as
/// [`cpuprof_symbolize::Symbolizer::binaries_for`] gives them); addresses
/// of mappings without one stay as they are (gmon.out and DCPI hold
/// link-time addresses already).
pub fn write(
    out: &mut dyn Write,
    stacks: &Stacks,
    graph: &Graph,
    options: &Options,
    program: &str,
    binaries: &[Option<Arc<Binary>>],
) -> io::Result<()> {
    let addresses = stacks.granularity == Granularity::Addresses;
    let places: Vec<Place> = stacks
        .frames
        .iter()
        .map(|f| place(f, stacks, options, binaries))
        .collect();

    // Functions (file, name) ranked in output order; frames point at
    // their function's rank, so that costs and calls are tallied on
    // integers (a big profile has millions of edges).
    let mut keys: Vec<(&str, &str)> = places
        .iter()
        .map(|p| (p.file.as_str(), p.function.as_str()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let rank: FxHashMap<(&str, &str), u32> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u32))
        .collect();
    let function_of: Vec<u32> = places
        .iter()
        .map(|p| rank[&(p.file.as_str(), p.function.as_str())])
        .collect();

    // Per function: self cost per position, and calls per (caller
    // position, callee function, callee position).
    #[derive(Default)]
    struct Block {
        costs: BTreeMap<u64, i64>,
        calls: FxHashMap<(u64, u32, u64), i64>,
    }
    let mut blocks: BTreeMap<u32, Block> = BTreeMap::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.flat == 0 {
            continue;
        }
        let block = blocks.entry(function_of[i]).or_default();
        *block.costs.entry(places[i].position).or_insert(0) += node.flat;
    }
    for edge in &graph.edges {
        if edge.weight == 0 {
            continue;
        }
        let (caller, callee) = (edge.caller.index(), edge.callee.index());
        let block = blocks.entry(function_of[caller]).or_default();
        *block
            .calls
            .entry((
                places[caller].position,
                function_of[callee],
                places[callee].position,
            ))
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
    // Lines are built in place: a big profile has millions of calls.
    let position = |s: &mut String, p: u64| {
        let _ = if addresses {
            write!(s, "{p:#x}")
        } else {
            write!(s, "{p}")
        };
    };
    for (key, block) in &blocks {
        let (file, function) = keys[*key as usize];
        s.push_str("\nfl=");
        files.write(&mut s, file);
        s.push_str("\nfn=");
        functions.write(&mut s, function);
        s.push('\n');
        for (p, cost) in &block.costs {
            position(&mut s, *p);
            let _ = writeln!(s, " {cost}");
        }
        let mut calls: Vec<(&(u64, u32, u64), &i64)> = block.calls.iter().collect();
        calls.sort_unstable();
        for ((from, callee, to), weight) in calls {
            let (callee_file, callee_function) = keys[*callee as usize];
            s.push_str("cfl=");
            files.write(&mut s, callee_file);
            s.push_str("\ncfn=");
            functions.write(&mut s, callee_function);
            let _ = write!(s, "\ncalls={weight} ");
            position(&mut s, *to);
            s.push('\n');
            position(&mut s, *from);
            let _ = writeln!(s, " {weight}");
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
    fn write(&mut self, s: &mut String, name: &str) {
        if let Some(id) = self.ids.get(name) {
            let _ = write!(s, "({id})");
            return;
        }
        let id = self.ids.len() + 1;
        self.ids.insert(name.to_string(), id);
        let _ = write!(s, "({id}) {}", one_line(name));
    }
}

/// The file, function and position of a report frame.
fn place(
    frame: &Frame,
    stacks: &Stacks,
    options: &Options,
    binaries: &[Option<Arc<Binary>>],
) -> Place {
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
        Granularity::Addresses => frame
            .mapping
            .and_then(|m| {
                let binary = binaries.get(m.index())?.as_ref()?;
                binary.runtime_to_file(stacks.profile().mapping(m), frame.address)
            })
            .unwrap_or(frame.address),
    };
    Place {
        file,
        function,
        position,
    }
}
