//! `cpuprof report [OUTPUT] [OPTIONS] [BINARY] PROFILE...`: the whole
//! analysis run in one function ([`run`]): parse flags → read (and sum, and
//! subtract a base) → symbolize → build the stacks (drop profiler frames,
//! focus, ignore, granularity) → build the graph → render.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use cpuprof_profile::{gmon, Format, Profile, ReadOptions};
use cpuprof_report::callgraph::CallGraph;
use cpuprof_report::flame::{self, FlameFormat, FlameOptions, FlameOrientation};
use cpuprof_report::source::SourceFiles;
use cpuprof_report::{disasm, listing, text, Granularity, Graph, Options, Stacks};

use crate::graph_output::{self, GraphFormat, GraphRequest, LayoutEngine, Viewer};
use crate::inputs::{Inputs, Loader};
use regex::Regex;

/// Arguments of `cpuprof report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Inputs are recognized by content: ELF files are binaries (each serves the \
mapping of the profile with the same path, else the main executable's), \
everything else is read as a profile. Several profiles are summed.

Examples:
  cpuprof report --text ./prog prog.prof
  cpuprof report --lines --focus='^burn' --nodecount=20 ./prog prog.prof
  cpuprof report --text --base=before.prof ./prog after.prof
  cpuprof report --svg -o graph.svg ./prog prog.prof
  cpuprof report --dot --nodecount=20 --focus=Mutex ./prog prog.prof | dot -Tpng > graph.png
  cpuprof report --web ./prog prog.prof
  cpuprof report --collapsed ./prog prog.prof | flamegraph.pl > prog.svg
  cpuprof report --callgrind ./prog prog.prof -o callgrind.out.prog
  cpuprof report --raw ./prog prog.prof -o prog.raw && cpuprof report --text prog.raw
  echo 0x1480 0x1750 | cpuprof report --symbols ./prog")]
pub struct Args {
    #[command(flatten)]
    pub output: OutputArgs,

    #[command(flatten)]
    pub granularity: GranularityArgs,

    /// Keep only samples with a frame matching RE (function name, file:line or address).
    #[arg(long, value_name = "RE")]
    pub focus: Option<String>,
    /// Drop samples with a frame matching RE.
    #[arg(long, value_name = "RE")]
    pub ignore: Option<String>,
    /// Remove frames matching RE from stacks (their samples stay).
    #[arg(long, value_name = "RE")]
    pub hide: Option<String>,
    /// Sort by cumulative value instead of flat.
    #[arg(long)]
    pub cum: bool,
    /// Show at most N rows or nodes (--text: all; graphs and --tree: 80).
    #[arg(long, value_name = "N")]
    pub nodecount: Option<usize>,
    /// Graphs and --tree: drop nodes whose cum is below this fraction of the total.
    #[arg(long, value_name = "F", default_value_t = 0.005)]
    pub nodefraction: f64,
    /// Graphs and --tree: drop edges whose weight is below this fraction of the total.
    #[arg(long, value_name = "F", default_value_t = 0.001)]
    pub edgefraction: f64,
    /// Graphs: keep at most N edges in and out of a node.
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub maxdegree: usize,
    /// Keep C++ argument lists and template parameters in names.
    #[arg(long = "full-names", alias = "full_names")]
    pub full_names: bool,
    /// Which sample value to report: an index or a sample type name (e.g. `cpu`).
    #[arg(long = "sample_index", alias = "sample-index", value_name = "N|NAME")]
    pub sample_index: Option<String>,
    /// Subtract this profile (a diff: negative values are shown).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// With --base, hide rows whose value went down.
    #[arg(long = "drop_negative", alias = "drop-negative")]
    pub drop_negative: bool,
    /// Keep the profiler's own signal-handling frames.
    #[arg(long = "keep-profiler-frames")]
    pub keep_profiler_frames: bool,
    /// DCPI database directories: read only this epoch (subdirectory).
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
    /// Do not symbolize (print addresses).
    #[arg(long = "no-symbolize")]
    pub no_symbolize: bool,
    /// Also look for separate debug files under DIR (default /usr/lib/debug).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// Call graphs: who lays out --svg and --web (default: dot when installed, else builtin).
    #[arg(long, value_enum, value_name = "ENGINE")]
    pub layout: Option<LayoutEngine>,
    /// --list, --disasm: directories to search for source files (`:`-separated).
    #[arg(
        long = "source_path",
        alias = "source-path",
        value_name = "DIR[:DIR...]"
    )]
    pub source_path: Option<String>,
    /// --list, --disasm: prefixes to remove from source paths before searching.
    #[arg(
        long = "trim_path",
        alias = "trim-path",
        value_name = "PREFIX[:PREFIX...]"
    )]
    pub trim_path: Option<String>,
    /// Write the report to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output_file: Option<PathBuf>,

    /// [BINARY...] PROFILE...: binaries (ELF) and profiles, in any order.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
}

/// The output kind (one at a time; `--text` by default).
#[derive(clap::Args, Debug, Default)]
#[group(multiple = false)]
pub struct OutputArgs {
    /// One line per node: flat, flat%, sum%, cum, cum%, name (the default).
    #[arg(long)]
    pub text: bool,
    /// Call graph in Graphviz DOT.
    #[arg(long)]
    pub dot: bool,
    /// Call graph in SVG (built-in layout, or dot when installed: see --layout).
    #[arg(long)]
    pub svg: bool,
    /// Call graph in PostScript (needs dot).
    #[arg(long)]
    pub ps: bool,
    /// Call graph in PDF (needs dot).
    #[arg(long)]
    pub pdf: bool,
    /// Call graph in GIF (needs dot).
    #[arg(long)]
    pub gif: bool,
    /// Call graph in PNG (needs dot).
    #[arg(long)]
    pub png: bool,
    /// Call graph in PostScript, shown with gv (needs dot).
    #[arg(long)]
    pub gv: bool,
    /// Call graph in PDF, shown with evince (needs dot).
    #[arg(long)]
    pub evince: bool,
    /// Call graph in SVG, shown in $BROWSER (else xdg-open).
    #[arg(long)]
    pub web: bool,
    /// Flame graph: a self-contained interactive HTML page (zoom, search,
    /// tooltips), or a static SVG with `--flame=svg`. With --base, widths
    /// are the profile's and colours the change (red grew, blue shrank).
    #[arg(long, value_name = "html|svg", num_args = 0..=1, require_equals = true, default_missing_value = "html")]
    pub flame: Option<FlameFormat>,
    /// Icicle graph: the flame graph with the root on top (`--icicle=svg`
    /// for a static SVG).
    #[arg(long, value_name = "html|svg", num_args = 0..=1, require_equals = true, default_missing_value = "html")]
    pub icicle: Option<FlameFormat>,
    /// gprof's own report (`gprof -b`: flat profile, call graph, index) of
    /// gmon.out files; needs the executable. Several files are summed.
    #[arg(long)]
    pub gprof: bool,
    /// One row per procedure and image, like DCPI's dcpiprof: samples, %,
    /// cum %, procedure, image.
    #[arg(long)]
    pub dcpiprof: bool,
    /// The (summed, symbolized) profile as a gzip-compressed pprof
    /// profile.proto, for Go pprof and other tools (use -o FILE).
    #[arg(long)]
    pub proto: bool,
    /// Annotated source of the functions matching RE: flat and cum per
    /// line (see --source_path, --trim_path).
    #[arg(long, value_name = "RE")]
    pub list: Option<String>,
    /// Annotated x86-64 disassembly of the functions matching RE: flat and
    /// cum per instruction, source lines interleaved (needs the binaries).
    #[arg(long, value_name = "RE")]
    pub disasm: Option<String>,
    /// One line per distinct stack, `root;...;leaf count` (folded stacks
    /// for flamegraph.pl, inferno, speedscope), inline frames expanded.
    #[arg(long)]
    pub collapsed: bool,
    /// Every distinct stack with its value, leaf first, as Go pprof's
    /// -traces prints them.
    #[arg(long)]
    pub traces: bool,
    /// Each node with its callers and callees, as Go pprof's -tree.
    #[arg(long)]
    pub tree: bool,
    /// The text report's totals and rows as JSON (schema cpuprof-report/1).
    #[arg(long)]
    pub json: bool,
    /// Callgrind format, for KCachegrind and callgrind_annotate (with
    /// --addresses: instruction positions at link-time addresses).
    #[arg(long)]
    pub callgrind: bool,
    /// The symbolized raw profile, as perl pprof --raw writes it: a
    /// `--- symbol` section, then the profile; reads back without the
    /// binary.
    #[arg(long)]
    pub raw: bool,
    /// Read hex addresses (link-time addresses of BINARY) from standard
    /// input and print their function names, one per address, as pprof
    /// --symbols does.
    #[arg(long)]
    pub symbols: bool,
}

/// The one output of a run; each output is one variant, dispatched in
/// [`render`].
enum Output {
    Text,
    Flame(FlameOptions),
    Graph(GraphRequest),
    Gprof,
    Dcpiprof,
    Proto,
    List(String),
    Disasm(String),
    Collapsed,
    Traces,
    Tree,
    Json,
    Callgrind,
    Raw,
    Symbols,
}

impl OutputArgs {
    /// The output asked for (`--text` when none is).
    fn output(&self, layout: Option<LayoutEngine>, file: Option<PathBuf>) -> Output {
        if let Some(request) = self.graph(layout, file) {
            return Output::Graph(request);
        }
        if self.gprof {
            return Output::Gprof;
        }
        if self.dcpiprof {
            return Output::Dcpiprof;
        }
        if self.proto {
            return Output::Proto;
        }
        if let Some(re) = &self.list {
            return Output::List(re.clone());
        }
        if let Some(re) = &self.disasm {
            return Output::Disasm(re.clone());
        }
        for (asked, output) in [
            (self.collapsed, Output::Collapsed),
            (self.traces, Output::Traces),
            (self.tree, Output::Tree),
            (self.json, Output::Json),
            (self.callgrind, Output::Callgrind),
            (self.raw, Output::Raw),
            (self.symbols, Output::Symbols),
        ] {
            if asked {
                return output;
            }
        }
        let flame = |format, orientation| {
            Output::Flame(FlameOptions {
                format,
                orientation,
                ..FlameOptions::default()
            })
        };
        match (self.flame, self.icicle) {
            (Some(format), _) => flame(format, FlameOrientation::Flame),
            (None, Some(format)) => flame(format, FlameOrientation::Icicle),
            (None, None) => Output::Text,
        }
    }

    /// The call-graph output asked for, if any.
    fn graph(&self, layout: Option<LayoutEngine>, output: Option<PathBuf>) -> Option<GraphRequest> {
        let (format, viewer) = if self.dot {
            (GraphFormat::Dot, None)
        } else if self.svg {
            (GraphFormat::Svg, None)
        } else if self.ps {
            (GraphFormat::Ps, None)
        } else if self.pdf {
            (GraphFormat::Pdf, None)
        } else if self.gif {
            (GraphFormat::Gif, None)
        } else if self.png {
            (GraphFormat::Png, None)
        } else if self.gv {
            (GraphFormat::Ps, Some(Viewer::Gv))
        } else if self.evince {
            (GraphFormat::Pdf, Some(Viewer::Evince))
        } else if self.web {
            (GraphFormat::Svg, Some(Viewer::Web))
        } else {
            return None;
        };
        Some(GraphRequest {
            format,
            viewer,
            layout,
            output,
        })
    }
}

/// Node granularity (one at a time; `--functions` by default).
#[derive(clap::Args, Debug, Default)]
#[group(multiple = false)]
pub struct GranularityArgs {
    /// One node per function (the default).
    #[arg(long)]
    pub functions: bool,
    /// One node per source line.
    #[arg(long)]
    pub lines: bool,
    /// One node per program address.
    #[arg(long)]
    pub addresses: bool,
    /// One node per source file.
    #[arg(long)]
    pub files: bool,
}

impl GranularityArgs {
    fn granularity(&self) -> Granularity {
        if self.lines {
            Granularity::Lines
        } else if self.addresses {
            Granularity::Addresses
        } else if self.files {
            Granularity::Files
        } else {
            Granularity::Functions
        }
    }
}

/// Runs `cpuprof report`.
pub fn run(args: Args) -> Result<i32> {
    let output = args.output.output(args.layout, args.output_file.clone());
    if matches!(output, Output::Symbols) {
        // --symbols reads addresses, not profiles.
        return symbols_report(&args);
    }
    let Inputs { binaries, profiles } = Inputs::classify(&args.inputs)?;
    if matches!(output, Output::Gprof) {
        // gprof's report reads gmon.out natively, not the profile model.
        return gprof_report(&args, &binaries, &profiles);
    }
    let loader = Loader::new(
        args.epoch.clone(),
        symbolize_options(&args, &binaries),
        !args.no_symbolize,
    );
    let (profile, base) = match (&output, &args.base) {
        // Flame graph widths cannot be negative: the base colours them.
        (Output::Flame(_), Some(base)) => {
            (loader.load_sum(&profiles, None)?, Some(loader.load(base)?))
        }
        _ => (loader.load_sum(&profiles, args.base.as_deref())?, None),
    };

    let mut options = report_options(&args, &profile)?;
    match output {
        // Listings need each frame's line or address.
        Output::List(_) => options.granularity = Granularity::Lines,
        Output::Disasm(_) => options.granularity = Granularity::Addresses,
        _ => {}
    }
    let stacks = Stacks::build(&profile, &options);
    let base_stacks = base.as_ref().map(|b| Stacks::build(b, &options));
    let context = RenderContext {
        args: &args,
        options: &options,
        binaries: &binaries,
        profile: &profile,
        symbolizer: loader.symbolizer(),
    };
    render(&output, &context, &stacks, base_stacks.as_ref())?;
    // The process ends here: freeing hundreds of thousands of samples one
    // by one would only add time.
    std::mem::forget(stacks);
    std::mem::forget(profile);
    Ok(0)
}

/// What outputs may need besides the stacks.
struct RenderContext<'a> {
    args: &'a Args,
    options: &'a Options,
    binaries: &'a [PathBuf],
    profile: &'a Profile,
    /// The symbolizer that read the profiles, for outputs that read the
    /// binaries themselves.
    symbolizer: &'a cpuprof_symbolize::Symbolizer,
}

/// Writes `output` of `stacks`: the one dispatch point of outputs.
fn render(
    output: &Output,
    cx: &RenderContext,
    stacks: &Stacks,
    base: Option<&Stacks>,
) -> Result<()> {
    match output {
        Output::Text => {
            let graph = Graph::build(stacks, false);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            text::write(&mut out, stacks, &graph, cx.options)?;
            out.flush()?;
            std::mem::forget(graph);
        }
        Output::Flame(flame_options) => {
            let mut title: Vec<String> = cx
                .args
                .inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            if let Some(note) = flat_profile_note(cx) {
                title.push(format!("({note})"));
            }
            let input = flame::input_from_stacks(&title.join(" "), stacks, base);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            flame::write_flame(&input, flame_options, &mut out)?;
            out.flush()?;
        }
        Output::Graph(request) => {
            let graph = Graph::build(stacks, false);
            let program = program_name(cx.binaries, cx.profile);
            let mut call_graph = CallGraph::build(&program, stacks, &graph, cx.options)?;
            call_graph.notes.extend(flat_profile_note(cx));
            if call_graph.node_limit > 0 || call_graph.edge_limit > 0 {
                // As pprof says it.
                eprintln!(
                    "Dropping nodes with <= {} {unit}; edges with <= {} abs({unit})",
                    call_graph.node_limit,
                    call_graph.edge_limit,
                    unit = call_graph.unit
                );
            }
            graph_output::write(&call_graph, request)?;
        }
        Output::Dcpiprof => {
            let index = cx
                .options
                .sample_index
                .unwrap_or_else(|| cx.profile.default_sample_index());
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::dcpiprof::write(cx.profile, index, &mut out)?;
            out.flush()?;
        }
        Output::Proto => {
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_profile::proto::write(cx.profile, &mut out)?;
            out.flush()?;
        }
        Output::List(re) => {
            let re = listing_regex("list", re)?;
            let mut listings = listing::listings(stacks, &re, cx.options.full_names);
            if listings.is_empty() {
                bail!("--list={re}: no function with samples matches");
            }
            if !cx.args.no_symbolize {
                let binaries = cx.symbolizer.binaries_for(cx.profile);
                listing::extend_from_binaries(&mut listings, stacks, &binaries);
            }
            let mut sources =
                SourceFiles::new(cx.args.source_path.as_deref(), cx.args.trim_path.as_deref());
            let mut out = output_file(cx.args.output_file.as_deref())?;
            listing::write(&mut out, &listings, &text::unit_word(stacks), &mut sources)?;
            out.flush()?;
        }
        Output::Disasm(re) => {
            let re = listing_regex("disasm", re)?;
            let binaries = cx.symbolizer.binaries_for(cx.profile);
            let disassemblies = disasm::disassemble(stacks, &re, cx.options.full_names, &binaries)
                .map_err(|e| anyhow::anyhow!("--disasm={re}: {e}"))?;
            let mut sources =
                SourceFiles::new(cx.args.source_path.as_deref(), cx.args.trim_path.as_deref());
            let mut out = output_file(cx.args.output_file.as_deref())?;
            disasm::write(
                &mut out,
                &disassemblies,
                &text::unit_word(stacks),
                stacks.total,
                &mut sources,
            )?;
            out.flush()?;
        }
        Output::Collapsed => {
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::collapsed::write(&mut out, stacks)?;
            out.flush()?;
        }
        Output::Traces => {
            let program = program_name(cx.binaries, cx.profile);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::traces::write(&mut out, stacks, &program)?;
            out.flush()?;
        }
        Output::Tree => {
            flat_profile_note(cx);
            let graph = Graph::build(stacks, false);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::tree::write(&mut out, stacks, &graph, cx.options)?;
            out.flush()?;
        }
        Output::Json => {
            let graph = Graph::build(stacks, false);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::json::write(&mut out, stacks, &graph, cx.options)?;
            out.flush()?;
        }
        Output::Callgrind => {
            flat_profile_note(cx);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            write_callgrind(&mut out, cx.binaries, cx.symbolizer, stacks, cx.options)?;
            out.flush()?;
        }
        Output::Raw => {
            let program = program_name(cx.binaries, cx.profile);
            let mut out = output_file(cx.args.output_file.as_deref())?;
            cpuprof_report::raw::write(&mut out, stacks, &program)?;
            out.flush()?;
        }
        Output::Gprof => bail!("--gprof reads gmon.out files itself (see gprof_report)"),
        Output::Symbols => bail!("--symbols reads addresses itself (see symbols_report)"),
    }
    Ok(())
}

/// For outputs drawn from call stacks: the note that the profile has none
/// (DCPI, gmon.out histograms), also printed on stderr.
fn flat_profile_note(cx: &RenderContext) -> Option<String> {
    let index = cx
        .options
        .sample_index
        .unwrap_or_else(|| cx.profile.default_sample_index());
    if !cpuprof_report::has_no_call_stacks(cx.profile, index) {
        return None;
    }
    let note = cpuprof_report::no_call_stacks_note(cx.profile, index);
    eprintln!("cpuprof: note: {note}");
    Some(note)
}

/// The regular expression of `--list` or `--disasm`, with regex's
/// multi-line message cut to its last line.
fn listing_regex(flag: &str, re: &str) -> Result<Regex> {
    Regex::new(re).map_err(|e| {
        let message = e.to_string();
        let last = message.lines().last().unwrap_or("").trim();
        let last = last.strip_prefix("error: ").unwrap_or(last);
        anyhow::anyhow!("--{flag}={re}: invalid regular expression: {last}")
    })
}

/// Writes the callgrind file of `stacks`: the one writer of `report
/// --callgrind` and `convert --to callgrind`, so that both give the same
/// bytes.
pub fn write_callgrind(
    out: &mut dyn Write,
    binaries: &[PathBuf],
    symbolizer: &cpuprof_symbolize::Symbolizer,
    stacks: &Stacks,
    options: &Options,
) -> Result<()> {
    let graph = Graph::build(stacks, true);
    let program = program_name(binaries, stacks.profile());
    // Link-time positions (--addresses) come from the binaries.
    let files = if stacks.granularity == Granularity::Addresses {
        symbolizer.binaries_for(stacks.profile())
    } else {
        Vec::new()
    };
    cpuprof_report::callgrind::write(out, stacks, &graph, options, &program, &files)?;
    Ok(())
}

/// The program named in a call graph's legend: the first binary as given,
/// else the first mapped file of the profile (the main executable).
pub fn program_name(binaries: &[PathBuf], profile: &Profile) -> String {
    binaries
        .first()
        .map(|path| path.display().to_string())
        .or_else(|| {
            profile
                .mappings
                .iter()
                .find(|m| !m.path.is_empty())
                .map(|m| m.path.clone())
        })
        .or_else(|| {
            // A symbolized raw profile names its program.
            profile.comments.iter().find_map(|c| {
                c.strip_prefix(cpuprof_profile::symbolized::BINARY_COMMENT)
                    .map(str::to_string)
            })
        })
        .unwrap_or_else(|| "(unknown program)".to_string())
}

/// `--gprof`: gprof's brief report of the summed gmon.out files.
fn gprof_report(args: &Args, binaries: &[PathBuf], profiles: &[PathBuf]) -> Result<i32> {
    let Some(binary) = binaries.first() else {
        bail!("--gprof needs the executable the gmon.out files were written by");
    };
    let exe =
        std::fs::read(binary).with_context(|| format!("{}: cannot read", binary.display()))?;
    let mut symbols = cpuprof_report::gprof::GprofSymbols::from_elf(&exe)
        .map_err(|e| anyhow::anyhow!("{}: {e}", binary.display()))?;
    symbols.resolve_source_files(binary);
    let target = cpuprof_report::executable::elf_target(&exe);
    let mut sum: Option<gmon::GmonFile> = None;
    for path in profiles {
        let data =
            std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let options = ReadOptions {
            target,
            ..ReadOptions::default()
        };
        match cpuprof_profile::detect_format_with(&data, &options) {
            Some(Format::Gmon) => {}
            Some(other) => bail!(
                "{}: a {}, but --gprof reads gmon.out files only",
                path.display(),
                other.name()
            ),
            None => {}
        }
        let file =
            gmon::read(&data, target).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        match &mut sum {
            None => sum = Some(file),
            Some(s) => s
                .merge(file)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        }
    }
    let mut out = output_file(args.output_file.as_deref())?;
    cpuprof_report::gprof::write_report(&sum.expect("at least one profile"), &symbols, &mut out)?;
    out.flush()?;
    Ok(0)
}

fn symbolize_options(args: &Args, binaries: &[PathBuf]) -> cpuprof_symbolize::Options {
    let mut options = cpuprof_symbolize::Options {
        binaries: binaries.to_vec(),
        ..cpuprof_symbolize::Options::default()
    };
    if !args.debug_dirs.is_empty() {
        options.debug_dirs.extend(args.debug_dirs.iter().cloned());
    }
    options
}

fn report_options(args: &Args, profile: &Profile) -> Result<Options> {
    let regex = |flag: &str, re: &Option<String>| -> Result<Option<Regex>> {
        re.as_deref()
            .map(|r| Regex::new(r).with_context(|| format!("--{flag}: invalid regular expression")))
            .transpose()
    };
    let sample_index = match &args.sample_index {
        None => None,
        Some(s) => Some(match s.parse::<usize>() {
            Ok(i) if i < profile.sample_types.len() => i,
            _ => profile.sample_index(s).with_context(|| {
                let types: Vec<String> = profile
                    .sample_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("{i}={}", t.kind))
                    .collect();
                format!(
                    "--sample_index={s}: the profile's sample types are {}",
                    types.join(", ")
                )
            })?,
        }),
    };
    Ok(Options {
        granularity: args.granularity.granularity(),
        focus: regex("focus", &args.focus)?,
        ignore: regex("ignore", &args.ignore)?,
        hide: regex("hide", &args.hide)?,
        cum: args.cum,
        full_names: args.full_names,
        sample_index,
        drop_negative: args.drop_negative,
        nodecount: args.nodecount,
        nodefraction: args.nodefraction,
        edgefraction: args.edgefraction,
        maxdegree: args.maxdegree,
        keep_profiler_frames: args.keep_profiler_frames,
        ..Options::default()
    })
}

/// Standard output (buffered) or the file named by `-o`.
fn output_file(path: Option<&Path>) -> Result<Box<dyn Write>> {
    Ok(match path {
        Some(path) => Box::new(BufWriter::new(
            File::create(path).with_context(|| format!("{}: cannot create", path.display()))?,
        )),
        None => Box::new(BufWriter::with_capacity(1 << 16, io::stdout().lock())),
    })
}

/// `--symbols`: reads addresses from standard input (hex `0x...`, one or
/// several per line; `/proc/maps` lines among them say where the binaries
/// were loaded, else the addresses are the binary's link-time ones) and
/// prints one name per address: the function (outermost of an inline
/// chain, short form as `--text` prints it), `??` when unknown.
fn symbols_report(args: &Args) -> Result<i32> {
    let (binaries, others): (Vec<PathBuf>, Vec<PathBuf>) = args
        .inputs
        .iter()
        .cloned()
        .partition(|p| crate::inputs::is_elf(p));
    if let Some(other) = others.first() {
        bail!(
            "{}: not an ELF binary: --symbols takes binaries and reads addresses on standard input",
            other.display()
        );
    }
    if binaries.is_empty() {
        bail!("--symbols needs the binary whose addresses are read on standard input");
    }
    let mut input = String::new();
    io::Read::read_to_string(&mut io::stdin().lock(), &mut input)
        .context("--symbols: standard input is not text")?;
    let cpuprof_profile::addresses::AddressList {
        mappings,
        addresses,
    } = cpuprof_profile::addresses::parse(&input)
        .map_err(|e| anyhow::anyhow!("--symbols: standard input {e}"))?;
    let mut builder = cpuprof_profile::ProfileBuilder::new(vec![cpuprof_profile::ValueType::new(
        "samples", "count",
    )]);
    builder.profile.mappings = mappings;
    builder.profile.sort_mappings();
    let locations: Vec<_> = addresses.iter().map(|&a| builder.location_at(a)).collect();
    let mut profile = builder.profile;
    for warning in cpuprof_symbolize::symbolize(&mut profile, &symbolize_options(args, &binaries)) {
        eprintln!("cpuprof: warning: {warning}");
    }
    let mut out = output_file(args.output_file.as_deref())?;
    for l in locations {
        let location = profile.location(l);
        let name = match location.lines.last() {
            Some(line) => {
                let name = &profile.function(line.function).name;
                if args.full_names {
                    name.clone()
                } else {
                    cpuprof_report::names::short_name(name)
                }
            }
            None => "??".to_string(),
        };
        writeln!(out, "{name}")?;
    }
    out.flush()?;
    Ok(0)
}
