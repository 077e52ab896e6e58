//! gprof's own report (`gprof -b`): the flat profile, the call graph and
//! the index by function name, from a [`GmonFile`] and the executable.
//!
//! This reproduces GNU gprof 2.40's analysis step by step, because its
//! numbers depend on details no generic report shares:
//!
//! - the symbol table is gprof's, not the symbolizer's: every symbol `nm`
//!   would class as `T`/`t`/`W` (text, including weak symbols anywhere and
//!   untyped labels), locals with `.` or `$` in their names left out,
//!   symbols at the same address resolved as gprof does, each symbol
//!   reaching up to the next one ([`GprofSymbols`]);
//! - histogram bins are credited with gprof's fractional `hist_scale`:
//!   bin `i` covers 2-byte units `[low/2 + trunc(scale·i),
//!   low/2 + trunc(scale·(i+1)))` and a symbol gets
//!   `overlap × count / scale` (so a row can exceed 100%);
//! - arcs are tallied between the symbols containing `from_pc` and
//!   `self_pc`; self-recursive calls are shown as `+N`;
//! - the call graph is numbered depth first, cycles are found and named
//!   `<cycle N>` the way gprof's `cg_dfn` does, time propagates from
//!   callees to callers in proportion to call counts, and entries are
//!   sorted and printed with gprof's comparison functions and `printf`
//!   formats (the per-call unit is scaled like gprof's: `ms/call`,
//!   `us/call`, ...).

use std::fmt::Write as _;
use std::io::{self, Write};

use cpuprof_profile::gmon::GmonFile;

use crate::executable::GprofSymbols;

const NONE: usize = usize::MAX;
const DFN_NAN: i64 = 0;
const DFN_BUSY: i64 = -1;

#[derive(Clone)]
struct Node {
    name: Option<String>,
    hist_time: f64,
    ncalls: u64,
    self_calls: u64,
    child_time: f64,
    fract: f64,
    prop_self: f64,
    prop_child: f64,
    print_flag: bool,
    top_order: i64,
    cyc_num: usize,
    cyc_head: usize,
    cyc_next: usize,
    index: usize,
    /// Arc ids, in gprof's linked-list order (most recently added first).
    parents: Vec<usize>,
    children: Vec<usize>,
}

impl Node {
    fn new(name: Option<String>, me: usize) -> Node {
        Node {
            name,
            hist_time: 0.0,
            ncalls: 0,
            self_calls: 0,
            child_time: 0.0,
            fract: 0.0,
            prop_self: 0.0,
            prop_child: 0.0,
            print_flag: false,
            top_order: DFN_NAN,
            cyc_num: 0,
            cyc_head: me,
            cyc_next: NONE,
            index: 0,
            parents: Vec::new(),
            children: Vec::new(),
        }
    }

    fn is_cycle_header(&self) -> bool {
        self.name.is_none() && self.cyc_num != 0
    }
}

#[derive(Clone)]
struct Arc {
    parent: usize,
    child: usize,
    count: u64,
    time: f64,
    child_time: f64,
}

/// The analysed profile: gprof's symbols with their times, calls and
/// call-graph arcs.
struct Analysis {
    nodes: Vec<Node>,
    arcs: Vec<Arc>,
    nsyms: usize,
    hz: f64,
    hist_scale: f64,
    dimension: String,
    dimension_abbrev: char,
    total_time: f64,
    print_time: f64,
    has_histogram: bool,
    has_arcs: bool,
    /// The source file printed after each static function in the index.
    static_files: Vec<Option<String>>,
    /// The printed (demangled) name of each symbol; nodes carry the
    /// symbol-table name, which gprof sorts by.
    shown: Vec<String>,
}

impl Analysis {
    fn new(gmon: &GmonFile, symbols: &GprofSymbols) -> Analysis {
        let nsyms = symbols.symbols.len();
        let nodes = symbols
            .symbols
            .iter()
            .enumerate()
            .map(|(i, s)| Node::new(Some(s.system_name.clone()), i))
            .collect();
        let first = gmon.histograms.first();
        let mut a = Analysis {
            nodes,
            arcs: Vec::new(),
            nsyms,
            hz: first.map_or(100.0, |h| f64::from(h.prof_rate)),
            hist_scale: first.map_or(1.0, |h| h.scale()),
            dimension: first.map_or("seconds".into(), |h| h.dimension.clone()),
            dimension_abbrev: first.map_or('s', |h| h.dimension_abbrev as char),
            total_time: 0.0,
            print_time: 0.0,
            has_histogram: first.is_some(),
            has_arcs: !gmon.arcs.is_empty(),
            shown: symbols.symbols.iter().map(|s| s.name.clone()).collect(),
            static_files: symbols
                .symbols
                .iter()
                .map(|s| s.file.clone().filter(|_| s.is_static))
                .collect(),
        };
        a.assign_samples(gmon, symbols);
        for arc in &gmon.arcs {
            a.tally(symbols, arc.from_pc, arc.self_pc, arc.count);
        }
        a
    }

    /// gprof's `hist_assign_samples`.
    fn assign_samples(&mut self, gmon: &GmonFile, symbols: &GprofSymbols) {
        let scaled: Vec<u64> = symbols.symbols.iter().map(|s| s.address / 2).collect();
        let scale = self.hist_scale;
        for h in &gmon.histograms {
            let lowpc = h.low_pc / 2;
            let mut j = 1usize;
            for (i, &count) in h.bins.iter().enumerate() {
                if count == 0 {
                    continue;
                }
                let bin_low = lowpc + (scale * i as f64) as u64;
                let bin_high = lowpc + (scale * (i + 1) as f64) as u64;
                let count_time = count as f64;
                self.total_time += count_time;
                j -= 1;
                while j < self.nsyms {
                    let sym_low = scaled[j];
                    let sym_high = scaled
                        .get(j + 1)
                        .copied()
                        .unwrap_or_else(|| symbols.symbols[j].end.saturating_add(1) / 2);
                    if bin_high < sym_low {
                        break;
                    }
                    let k = j + 1;
                    if bin_low >= sym_high {
                        j = k;
                        continue;
                    }
                    let overlap = bin_high.min(sym_high) - bin_low.max(sym_low);
                    if overlap > 0 {
                        self.nodes[j].hist_time += overlap as f64 * count_time / scale;
                    }
                    j = k;
                }
                // gprof restarts the walk one symbol back for the next bin.
                j = j.max(1);
            }
        }
    }

    /// gprof's `cg_tally` and `arc_add`.
    fn tally(&mut self, symbols: &GprofSymbols, from_pc: u64, self_pc: u64, count: u64) {
        let (Some(parent), Some(mut child)) = (symbols.lookup(from_pc), symbols.lookup(self_pc))
        else {
            return;
        };
        while !symbols.symbols[child].is_func {
            if child == 0 {
                return;
            }
            child -= 1;
        }
        self.nodes[child].ncalls += count;
        if let Some(&id) = self.nodes[parent]
            .children
            .iter()
            .rev()
            .find(|&&id| self.arcs[id].child == child)
        {
            self.arcs[id].count += count;
            return;
        }
        let id = self.arcs.len();
        self.arcs.push(Arc {
            parent,
            child,
            count,
            time: 0.0,
            child_time: 0.0,
        });
        // Pushed at the end; lists are read from the end (prepend order).
        self.nodes[parent].children.push(id);
        self.nodes[child].parents.push(id);
    }

    fn children_in_order(&self, n: usize) -> Vec<usize> {
        self.nodes[n].children.iter().rev().copied().collect()
    }

    fn parents_in_order(&self, n: usize) -> Vec<usize> {
        self.nodes[n].parents.iter().rev().copied().collect()
    }

    /// gprof's `cg_assemble`: returns the nodes sorted for printing.
    fn assemble(&mut self) -> Vec<usize> {
        for p in 0..self.nsyms {
            self.nodes[p].child_time = 0.0;
            let self_arc = self.nodes[p]
                .children
                .iter()
                .rev()
                .find(|&&id| self.arcs[id].child == p)
                .copied();
            if let Some(id) = self_arc {
                let c = self.arcs[id].count;
                self.nodes[p].ncalls -= c;
                self.nodes[p].self_calls = c;
            }
        }
        let mut dfn = Dfn {
            stack: vec![NONE],
            counter: DFN_NAN,
        };
        for p in 0..self.nsyms {
            if self.nodes[p].top_order == DFN_NAN {
                self.dfn(&mut dfn, p);
            }
        }
        self.cycle_link();
        let mut top_sorted: Vec<usize> = (0..self.nsyms).collect();
        top_sorted.sort_by_key(|&i| self.nodes[i].top_order);
        self.propagate_flags(&top_sorted);
        self.cycle_time();
        for &p in &top_sorted {
            self.propagate_time(p);
        }
        let mut time_sorted: Vec<usize> = (0..self.nodes.len()).collect();
        time_sorted.sort_by(|&l, &r| self.cmp_total(l, r));
        for (i, &n) in time_sorted.iter().enumerate() {
            self.nodes[n].index = i + 1;
        }
        time_sorted
    }

    fn dfn(&mut self, dfn: &mut Dfn, parent: usize) {
        let top = self.nodes[parent].top_order;
        if top != DFN_NAN && top != DFN_BUSY {
            return;
        }
        if top == DFN_BUSY {
            self.find_cycle(dfn, parent);
            return;
        }
        dfn.stack.push(parent);
        self.nodes[parent].top_order = DFN_BUSY;
        for id in self.children_in_order(parent) {
            let child = self.arcs[id].child;
            self.dfn(dfn, child);
        }
        // post_visit: number the function and its cycle, unless it is part
        // of a cycle headed elsewhere.
        if self.nodes[parent].cyc_head == parent {
            dfn.counter += 1;
            let mut m = parent;
            while m != NONE {
                self.nodes[m].top_order = dfn.counter;
                m = self.nodes[m].cyc_next;
            }
        }
        dfn.stack.pop();
    }

    fn find_cycle(&mut self, dfn: &mut Dfn, child: usize) {
        let depth = dfn.stack.len() - 1;
        let mut cycle_top = depth;
        let mut head = NONE;
        while cycle_top > 0 {
            head = dfn.stack[cycle_top];
            if child == head {
                break;
            }
            if self.nodes[child].cyc_head != child && self.nodes[child].cyc_head == head {
                break;
            }
            cycle_top -= 1;
        }
        if cycle_top == 0 || cycle_top == depth {
            // A self call (cycle_top == depth): nothing to glom.
            return;
        }
        let mut tail = head;
        while self.nodes[tail].cyc_next != NONE {
            tail = self.nodes[tail].cyc_next;
        }
        if self.nodes[head].cyc_head != head {
            head = self.nodes[head].cyc_head;
        }
        for index in cycle_top + 1..=depth {
            let c = dfn.stack[index];
            if self.nodes[c].cyc_head == c {
                self.nodes[tail].cyc_next = c;
                self.nodes[c].cyc_head = head;
                tail = c;
                while self.nodes[tail].cyc_next != NONE {
                    let next = self.nodes[tail].cyc_next;
                    self.nodes[next].cyc_head = head;
                    tail = next;
                }
            }
        }
    }

    fn cycle_link(&mut self) {
        let mut num = 0;
        for sym in 0..self.nsyms {
            if !(self.nodes[sym].cyc_head == sym && self.nodes[sym].cyc_next != NONE) {
                continue;
            }
            num += 1;
            let cyc = self.nodes.len();
            let mut header = Node::new(None, cyc);
            header.print_flag = true;
            header.cyc_num = num;
            header.cyc_next = sym;
            self.nodes.push(header);
            let mut m = sym;
            while m != NONE {
                self.nodes[m].cyc_num = num;
                self.nodes[m].cyc_head = cyc;
                m = self.nodes[m].cyc_next;
            }
            let mut m = sym;
            while m != NONE {
                for id in self.parents_in_order(m) {
                    let a = &self.arcs[id];
                    if a.parent == m {
                        continue;
                    }
                    if self.nodes[a.parent].cyc_num == num {
                        self.nodes[cyc].self_calls += a.count;
                    } else {
                        self.nodes[cyc].ncalls += a.count;
                    }
                }
                m = self.nodes[m].cyc_next;
            }
        }
    }

    fn inherit_flags(&mut self, child: usize) {
        let head = self.nodes[child].cyc_head;
        if child == head {
            self.nodes[child].print_flag = false;
            self.nodes[child].fract = 0.0;
            for id in self.parents_in_order(child) {
                let parent = self.arcs[id].parent;
                if parent == child {
                    continue;
                }
                self.nodes[child].print_flag |= self.nodes[parent].print_flag;
                if self.nodes[child].ncalls != 0 {
                    self.nodes[child].fract += self.nodes[parent].fract
                        * (self.arcs[id].count as f64 / self.nodes[child].ncalls as f64);
                }
            }
        } else {
            self.nodes[head].print_flag = false;
            self.nodes[head].fract = 0.0;
            let mut m = self.nodes[head].cyc_next;
            while m != NONE {
                for id in self.parents_in_order(m) {
                    let parent = self.arcs[id].parent;
                    if self.nodes[parent].cyc_head == head {
                        continue;
                    }
                    self.nodes[head].print_flag |= self.nodes[parent].print_flag;
                    if self.nodes[head].ncalls != 0 {
                        self.nodes[head].fract += self.nodes[parent].fract
                            * (self.arcs[id].count as f64 / self.nodes[head].ncalls as f64);
                    }
                }
                m = self.nodes[m].cyc_next;
            }
            let (flag, fract) = (self.nodes[head].print_flag, self.nodes[head].fract);
            let mut m = self.nodes[head].cyc_next;
            while m != NONE {
                self.nodes[m].print_flag = flag;
                self.nodes[m].fract = fract;
                m = self.nodes[m].cyc_next;
            }
        }
    }

    fn propagate_flags(&mut self, top_sorted: &[usize]) {
        let mut old_head = NONE;
        for &child in top_sorted.iter().rev() {
            if self.nodes[child].cyc_head != old_head {
                old_head = self.nodes[child].cyc_head;
                self.inherit_flags(child);
            }
            // No include/exclude tables: everything prints and passes time.
            self.nodes[child].print_flag = true;
            if self.nodes[child].fract == 0.0 {
                self.nodes[child].fract = 1.0;
            }
            self.nodes[child].prop_self = self.nodes[child].hist_time * self.nodes[child].fract;
            self.print_time += self.nodes[child].prop_self;
        }
    }

    fn cycle_time(&mut self) {
        for cyc in self.nsyms..self.nodes.len() {
            let mut m = self.nodes[cyc].cyc_next;
            while m != NONE {
                if self.nodes[m].fract != 0.0 {
                    self.nodes[cyc].hist_time += self.nodes[m].hist_time;
                }
                m = self.nodes[m].cyc_next;
            }
            self.nodes[cyc].prop_self = self.nodes[cyc].fract * self.nodes[cyc].hist_time;
        }
    }

    fn propagate_time(&mut self, parent: usize) {
        if self.nodes[parent].fract == 0.0 {
            return;
        }
        for id in self.children_in_order(parent) {
            let mut child = self.arcs[id].child;
            if self.arcs[id].count == 0 || child == parent || self.nodes[child].fract == 0.0 {
                continue;
            }
            if self.nodes[child].cyc_head != child {
                if self.nodes[parent].cyc_num == self.nodes[child].cyc_num {
                    continue;
                }
                child = self.nodes[child].cyc_head;
            } else if self.nodes[parent].top_order <= self.nodes[child].top_order {
                continue;
            }
            if self.nodes[child].ncalls == 0 {
                continue;
            }
            let ratio = self.arcs[id].count as f64 / self.nodes[child].ncalls as f64;
            let time = self.nodes[child].hist_time * ratio;
            let child_time = self.nodes[child].child_time * ratio;
            let share = time + child_time;
            self.nodes[parent].child_time += share;
            let fract = self.nodes[parent].fract;
            let prop_share = fract * share;
            self.nodes[parent].prop_child += prop_share;
            self.arcs[id].time = time * fract;
            self.arcs[id].child_time = child_time * fract;
            let head = self.nodes[parent].cyc_head;
            if head != parent {
                self.nodes[head].child_time += share;
                self.nodes[head].prop_child += prop_share;
            }
        }
    }

    /// gprof's `cmp_total`.
    fn cmp_total(&self, l: usize, r: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let (a, b) = (&self.nodes[l], &self.nodes[r]);
        let diff = (a.prop_self + a.prop_child) - (b.prop_self + b.prop_child);
        if diff < 0.0 {
            return Greater;
        }
        if diff > 0.0 {
            return Less;
        }
        if a.is_cycle_header() {
            return Less;
        }
        if b.is_cycle_header() {
            return Greater;
        }
        let (an, bn) = (
            a.name.as_deref().unwrap_or(""),
            b.name.as_deref().unwrap_or(""),
        );
        let au = an.starts_with('_');
        let bu = bn.starts_with('_');
        if !au && bu {
            return Less;
        }
        if au && !bu {
            return Greater;
        }
        b.ncalls
            .cmp(&a.ncalls)
            .then_with(|| an.as_bytes().cmp(bn.as_bytes()))
    }

    /// gprof's `cmp_time` for the flat profile.
    fn cmp_time(&self, l: usize, r: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let (a, b) = (&self.nodes[l], &self.nodes[r]);
        let diff = b.hist_time - a.hist_time;
        if diff > 0.0 {
            return Greater;
        }
        if diff < 0.0 {
            return Less;
        }
        b.ncalls.cmp(&a.ncalls).then_with(|| {
            a.name
                .as_deref()
                .unwrap_or("")
                .cmp(b.name.as_deref().unwrap_or(""))
        })
    }

    /// The symbol-table name (for sorting).
    fn name(&self, n: usize) -> &str {
        self.nodes[n].name.as_deref().unwrap_or("")
    }

    /// The printed name.
    fn shown(&self, n: usize) -> &str {
        self.shown.get(n).map_or("", String::as_str)
    }

    /// gprof's `print_name`: the name, its cycle and its index.
    fn full_name(&self, n: usize) -> String {
        let node = &self.nodes[n];
        let mut s = self.shown(n).to_string();
        if node.cyc_num != 0 {
            let _ = write!(s, " <cycle {}>", node.cyc_num);
        }
        if node.index != 0 {
            if node.print_flag {
                let _ = write!(s, " [{}]", node.index);
            } else {
                let _ = write!(s, " ({})", node.index);
            }
        }
        s
    }

    fn flat_profile(&self, out: &mut String) {
        out.push_str("Flat profile:\n");
        let mut order: Vec<usize> = (0..self.nsyms).collect();
        order.sort_by(|&l, &r| self.cmp_time(l, r));
        // Scale the per-call unit so the largest per-call time reads
        // between 1 and 1000 (gprof's SI table).
        const SI: [(char, f64); 11] = [
            ('T', 1e-12),
            ('G', 1e-09),
            ('M', 1e-06),
            ('K', 1e-03),
            (' ', 1e-00),
            ('m', 1e+03),
            ('u', 1e+06),
            ('n', 1e+09),
            ('p', 1e+12),
            ('f', 1e+15),
            ('a', 1e+18),
        ];
        let mut top_time = 0.0f64;
        let mut top_dog = false;
        for &n in &order {
            let s = &self.nodes[n];
            if s.ncalls != 0 {
                let call_time = (s.hist_time + s.child_time) / s.ncalls as f64;
                if call_time > top_time {
                    top_time = call_time;
                    top_dog = true;
                }
            }
        }
        let mut log_scale = 0;
        if top_dog && top_time > 0.0 {
            top_time /= self.hz;
            while log_scale < SI.len() {
                let v = SI[log_scale].1 * top_time;
                if (1.0..1000.0).contains(&v) {
                    break;
                }
                log_scale += 1;
            }
        }
        let (prefix, scale) = SI.get(log_scale).copied().unwrap_or((' ', f64::NAN));
        let unit = format!("{prefix}{}/call", self.dimension_abbrev);
        let _ = writeln!(
            out,
            "\nEach sample counts as {} {}.",
            format_g(1.0 / self.hz),
            self.dimension
        );
        let mut total_time = self.total_time;
        if total_time <= 0.0 {
            out.push_str(" no time accumulated\n\n");
            total_time = 1.0;
        }
        let _ = writeln!(
            out,
            "{:>5} {:>10} {:>8} {:>8} {:>8} {:>8}  {:<8}",
            "%  ", "cumulative", "self  ", "", "self  ", "total ", ""
        );
        let _ = writeln!(
            out,
            "{:>5} {:>9}  {:>8} {:>8} {:>8} {:>8}  {:<8}",
            "time",
            trunc(&self.dimension, 9),
            trunc(&self.dimension, 8),
            "calls",
            trunc(&unit, 8),
            trunc(&unit, 8),
            "name"
        );
        let mut accum = 0.0;
        for &n in &order {
            let s = &self.nodes[n];
            if s.ncalls == 0 && s.hist_time == 0.0 {
                continue;
            }
            accum += s.hist_time;
            let _ = write!(
                out,
                "{:6.2} {:9.2} {:8.2}",
                if total_time > 0.0 {
                    100.0 * s.hist_time / total_time
                } else {
                    0.0
                },
                accum / self.hz,
                s.hist_time / self.hz
            );
            if s.ncalls != 0 {
                let _ = write!(
                    out,
                    " {:8} {:8.2} {:8.2}  ",
                    s.ncalls,
                    scale * s.hist_time / self.hz / s.ncalls as f64,
                    scale * (s.hist_time + s.child_time) / self.hz / s.ncalls as f64
                );
            } else {
                let _ = write!(out, " {:8} {:8} {:8}  ", "", "", "");
            }
            out.push_str(self.shown(n));
            out.push('\n');
        }
    }

    fn call_graph(&mut self, time_sorted: &[usize], out: &mut String, first_output: bool) {
        if !first_output {
            out.push_str("\x0c\n");
        }
        out.push_str("\t\t\tCall graph\n\n");
        let _ = write!(
            out,
            "\ngranularity: each sample hit covers {} byte(s)",
            (self.hist_scale as i64) * 2
        );
        let mut print_time = self.print_time;
        if print_time > 0.0 {
            let _ = write!(
                out,
                " for {:.2}% of {:.2} seconds\n\n",
                100.0 / print_time,
                print_time / self.hz
            );
        } else {
            out.push_str(" no time propagated\n\n");
            print_time = 1.0;
        }
        out.push_str("index % time    self  children    called     name\n");
        for &n in time_sorted {
            let node = &self.nodes[n];
            if (node.ncalls == 0
                && node.self_calls == 0
                && node.prop_self == 0.0
                && node.prop_child == 0.0)
                || !node.print_flag
            {
                continue;
            }
            if node.is_cycle_header() {
                self.print_cycle(n, print_time, out);
                self.print_members(n, out);
            } else {
                self.print_parents(n, out);
                self.print_line(n, print_time, out);
                self.print_children(n, out);
            }
            out.push_str("-----------------------------------------------\n");
        }
    }

    fn print_cycle(&self, cyc: usize, print_time: f64, out: &mut String) {
        let c = &self.nodes[cyc];
        let _ = write!(
            out,
            "{:<6} {:5.1} {:7.2} {:7.2} {:7}",
            trunc(&format!("[{}]", c.index), 6),
            100.0 * (c.prop_self + c.prop_child) / print_time,
            c.prop_self / self.hz,
            c.prop_child / self.hz,
            c.ncalls
        );
        if c.self_calls != 0 {
            let _ = write!(out, "+{:<7}", c.self_calls);
        } else {
            let _ = write!(out, " {:7}", "");
        }
        let _ = writeln!(out, " <cycle {} as a whole> [{}]", c.cyc_num, c.index);
    }

    fn print_members(&mut self, cyc: usize, out: &mut String) {
        // Insertion sort of the members by time, then calls (sort_members).
        let mut members = Vec::new();
        let mut m = self.nodes[cyc].cyc_next;
        while m != NONE {
            members.push(m);
            m = self.nodes[m].cyc_next;
        }
        let mut sorted: Vec<usize> = Vec::with_capacity(members.len());
        for doing in members {
            let pos = sorted
                .iter()
                .position(|&other| self.cmp_member(doing, other) == std::cmp::Ordering::Greater)
                .unwrap_or(sorted.len());
            sorted.insert(pos, doing);
        }
        for w in sorted.windows(2) {
            self.nodes[w[0]].cyc_next = w[1];
        }
        if let Some(&last) = sorted.last() {
            self.nodes[last].cyc_next = NONE;
            self.nodes[cyc].cyc_next = sorted[0];
        }
        for &member in &sorted {
            let n = &self.nodes[member];
            let _ = write!(
                out,
                "{:6} {:5} {:7.2} {:7.2} {:7}",
                "",
                "",
                n.prop_self / self.hz,
                n.prop_child / self.hz,
                n.ncalls
            );
            if n.self_calls != 0 {
                let _ = write!(out, "+{:<7}", n.self_calls);
            } else {
                let _ = write!(out, " {:7}", "");
            }
            let _ = writeln!(out, "     {}", self.full_name(member));
        }
    }

    fn cmp_member(&self, l: usize, r: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let (a, b) = (&self.nodes[l], &self.nodes[r]);
        let lt = a.prop_self + a.prop_child;
        let rt = b.prop_self + b.prop_child;
        if lt > rt {
            return Greater;
        }
        if lt < rt {
            return Less;
        }
        (a.ncalls + a.self_calls).cmp(&(b.ncalls + b.self_calls))
    }

    /// gprof's `cmp_arc`.
    fn cmp_arc(&self, l: usize, r: usize) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let (a, b) = (&self.arcs[l], &self.arcs[r]);
        if a.parent == a.child {
            return Less;
        }
        if b.parent == b.child {
            return Greater;
        }
        let within = |arc: &Arc| {
            let p = self.nodes[arc.parent].cyc_num;
            let c = self.nodes[arc.child].cyc_num;
            p != 0 && c != 0 && p == c
        };
        match (within(a), within(b)) {
            (true, true) => a.count.cmp(&b.count),
            (true, false) => Less,
            (false, true) => Greater,
            (false, false) => {
                let lt = a.time + a.child_time;
                let rt = b.time + b.child_time;
                if lt < rt {
                    Less
                } else if lt > rt {
                    Greater
                } else {
                    a.count.cmp(&b.count)
                }
            }
        }
    }

    fn print_parents(&mut self, child: usize, out: &mut String) {
        let cycle_head = self.nodes[child].cyc_head;
        if self.nodes[child].parents.is_empty() {
            let _ = writeln!(
                out,
                "{:6} {:5} {:7} {:7} {:7} {:7}     <spontaneous>",
                "", "", "", "", "", ""
            );
            return;
        }
        // sort_parents: insert each before the first it is not greater than.
        let mut sorted: Vec<usize> = Vec::new();
        for id in self.parents_in_order(child) {
            let pos = sorted
                .iter()
                .position(|&o| self.cmp_arc(id, o) != std::cmp::Ordering::Greater)
                .unwrap_or(sorted.len());
            sorted.insert(pos, id);
        }
        self.nodes[child].parents = sorted.iter().rev().copied().collect();
        for id in sorted {
            let arc = &self.arcs[id];
            let parent = arc.parent;
            let c = &self.nodes[child];
            if child == parent || (c.cyc_num != 0 && self.nodes[parent].cyc_num == c.cyc_num) {
                let _ = writeln!(
                    out,
                    "{:6} {:5} {:7} {:7} {:7} {:7}     {}",
                    "",
                    "",
                    "",
                    "",
                    arc.count,
                    "",
                    self.full_name(parent)
                );
            } else {
                let _ = writeln!(
                    out,
                    "{:6} {:5} {:7.2} {:7.2} {:7}/{:<7}     {}",
                    "",
                    "",
                    arc.time / self.hz,
                    arc.child_time / self.hz,
                    arc.count,
                    self.nodes[cycle_head].ncalls,
                    self.full_name(parent)
                );
            }
        }
    }

    fn print_line(&self, n: usize, print_time: f64, out: &mut String) {
        let node = &self.nodes[n];
        let _ = write!(
            out,
            "{:<6} {:5.1} {:7.2} {:7.2}",
            trunc(&format!("[{}]", node.index), 6),
            100.0 * (node.prop_self + node.prop_child) / print_time,
            node.prop_self / self.hz,
            node.prop_child / self.hz
        );
        if node.ncalls + node.self_calls != 0 {
            let _ = write!(out, " {:7}", node.ncalls);
            if node.self_calls != 0 {
                let _ = write!(out, "+{:<7} ", node.self_calls);
            } else {
                let _ = write!(out, " {:7} ", "");
            }
        } else {
            let _ = write!(out, " {:7} {:7} ", "", "");
        }
        out.push_str(&self.full_name(n));
        out.push('\n');
    }

    fn print_children(&mut self, parent: usize, out: &mut String) {
        // sort_children: insert each before the first it is not less than.
        let mut sorted: Vec<usize> = Vec::new();
        for id in self.children_in_order(parent) {
            let pos = sorted
                .iter()
                .position(|&o| self.cmp_arc(id, o) != std::cmp::Ordering::Less)
                .unwrap_or(sorted.len());
            sorted.insert(pos, id);
        }
        self.nodes[parent].children = sorted.iter().rev().copied().collect();
        for id in sorted {
            let arc = &self.arcs[id];
            let child = arc.child;
            let p = &self.nodes[parent];
            if child == parent
                || (self.nodes[child].cyc_num != 0 && self.nodes[child].cyc_num == p.cyc_num)
            {
                let _ = writeln!(
                    out,
                    "{:6} {:5} {:7} {:7} {:7} {:7}     {}",
                    "",
                    "",
                    "",
                    "",
                    arc.count,
                    "",
                    self.full_name(child)
                );
            } else {
                let head = self.nodes[child].cyc_head;
                let _ = writeln!(
                    out,
                    "{:6} {:5} {:7.2} {:7.2} {:7}/{:<7}     {}",
                    "",
                    "",
                    arc.time / self.hz,
                    arc.child_time / self.hz,
                    arc.count,
                    self.nodes[head].ncalls,
                    self.full_name(child)
                );
            }
        }
    }

    /// gprof's `cg_print_index`: names in three columns, cycles last.
    fn index(&self, out: &mut String) {
        let mut names: Vec<usize> = (0..self.nsyms)
            .filter(|&i| !(self.nodes[i].ncalls == 0 && self.nodes[i].hist_time == 0.0))
            .collect();
        names.sort_by(|&l, &r| self.name(l).as_bytes().cmp(self.name(r).as_bytes()));
        let nnames = names.len();
        names.extend(self.nsyms..self.nodes.len());
        out.push_str("\x0c\nIndex by function name\n\n");
        let todo = names.len();
        let rows = todo.div_ceil(3);
        let column_width = (80 - 1) / 3;
        for i in 0..rows {
            let mut col = 0usize;
            let mut starting_col = 0usize;
            let mut j = i;
            while j < todo {
                let n = names[j];
                let node = &self.nodes[n];
                let buf = if node.print_flag {
                    format!("[{}]", node.index)
                } else {
                    format!("({})", node.index)
                };
                col += buf.len();
                while col < starting_col + 5 {
                    out.push(' ');
                    col += 1;
                }
                let _ = write!(out, " {buf} ");
                let name = if j < nnames {
                    self.shown(n).to_string()
                } else {
                    format!("<cycle {}>", node.cyc_num)
                };
                out.push_str(&name);
                col += name.len();
                if let Some(file) = self.static_files.get(n).and_then(|f| f.as_deref()) {
                    let base = file.rsplit('/').next().unwrap_or(file);
                    let _ = write!(out, " ({base})");
                    col += base.len() + 3;
                }
                starting_col += column_width;
                j += rows;
            }
            out.push('\n');
        }
    }
}

struct Dfn {
    /// The DFN stack; index 0 is unused, as in gprof.
    stack: Vec<usize>,
    counter: i64,
}

/// `%.Ns`: at most `n` characters.
fn trunc(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// C's `%g`: 6 significant digits, trailing zeros dropped, exponent form
/// for very small or large numbers.
pub fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    // Round to 6 significant digits first: it may bump the exponent.
    let sci = format!("{:.5e}", v);
    let (mantissa, e) = sci.split_once('e').unwrap();
    let e: i32 = e.parse().unwrap_or(exp);
    if !(-4..6).contains(&e) {
        let m = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - e).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Writes gprof's brief report (`gprof -b`) of `gmon` for the executable
/// whose symbols are `symbols`: the flat profile when the file has a
/// histogram, the call graph and the index when it has arcs.
pub fn write_report(
    gmon: &GmonFile,
    symbols: &GprofSymbols,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut a = Analysis::new(gmon, symbols);
    let time_sorted = a.assemble();
    let mut text = String::new();
    let mut first = true;
    if a.has_histogram {
        a.flat_profile(&mut text);
        first = false;
    }
    if a.has_arcs {
        a.call_graph(&time_sorted, &mut text, first);
        a.index(&mut text);
    }
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_printf() {
        assert_eq!(format_g(0.01), "0.01");
        assert_eq!(format_g(0.001), "0.001");
        assert_eq!(format_g(1.0 / 60.0), "0.0166667");
        assert_eq!(format_g(1.0), "1");
        assert_eq!(format_g(0.00001), "1e-05");
        assert_eq!(format_g(1234567.0), "1.23457e+06");
    }
}
