//! The one table of report commands ([`COMMANDS`]): each name of the shell
//! and each output flag of `cpuprof report` is an entry, mapped to the
//! output ([`Output`]) that [`crate::Session::run`] dispatches on.

/// The outputs: one variant per output module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// `flat flat% sum% cum cum% name` rows.
    Text,
    /// Each node with its callers and callees.
    Tree,
    /// The tree of the functions matching a regex.
    Peek,
    /// Every distinct stack.
    Traces,
    /// The labels' keys and values with their shares.
    Tags,
    /// Annotated source.
    List,
    /// Annotated disassembly.
    Disasm,
    /// Annotated source with instructions, as a web page.
    Weblist,
    /// perl pprof's symbolized raw profile.
    Raw,
    /// Folded stacks.
    Collapsed,
    /// The text report as JSON.
    Json,
    /// Callgrind format.
    Callgrind,
    /// gzipped profile.proto.
    Proto,
    /// The profile's comments.
    Comments,
    /// A call graph in one of its formats, maybe shown by a viewer.
    Graph(GraphFormat, Option<Viewer>),
    /// A flame graph.
    Flame(FlameKind),
    /// DCPI's dcpiprof report.
    Dcpiprof,
    /// gprof's own report of gmon.out files.
    Gprof,
    /// Each thread's activity over time, in block characters.
    Timeline,
}

/// A file format of the call graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz source.
    Dot,
    /// SVG (built-in layout or dot).
    Svg,
    /// PostScript (dot -Tps2, as pprof).
    Ps,
    /// PDF (dot -Tpdf).
    Pdf,
    /// GIF (dot -Tgif).
    Gif,
    /// PNG (dot -Tpng).
    Png,
}

/// A program that shows a written file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// `gv` on PostScript.
    Gv,
    /// `evince` on PDF.
    Evince,
    /// `$BROWSER` (else `xdg-open`) on SVG or HTML.
    Web,
}

/// Flame or icicle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlameKind {
    /// Root at the bottom.
    Flame,
    /// Root on top.
    Icicle,
}

/// How a command appears on `cpuprof report`'s command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// Shell only.
    None,
    /// `--NAME`.
    Switch,
    /// `--NAME=RE` (the command's regex).
    Regex,
    /// `--NAME[=html|svg]`.
    FlameFormat,
    /// `--NAME[=RE]` (an optional regex).
    OptionalRegex,
}

/// One report command.
#[derive(Debug)]
pub struct CommandDef {
    /// The shell's command name and the output flag's name.
    pub name: &'static str,
    /// Other names (`text` for `top`).
    pub aliases: &'static [&'static str],
    /// What it writes.
    pub output: Output,
    /// It needs a regex argument (`list RE`).
    pub takes_regex: bool,
    /// Its flag on `cpuprof report`.
    pub flag: Flag,
    /// One line of help.
    pub help: &'static str,
    /// Its syntax in the shell.
    pub usage: &'static str,
}

impl PartialEq for CommandDef {
    /// Commands are the table's entries: equal when the same entry.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl CommandDef {
    /// True when the output is not text for a terminal: the shell writes
    /// it to a temporary file (its path printed) unless `> FILE` or
    /// `output=` says where, as Go pprof does.
    pub fn away_from_terminal(&self) -> bool {
        matches!(
            self.output,
            Output::Proto
                | Output::Callgrind
                | Output::Flame(_)
                | Output::Graph(
                    GraphFormat::Svg
                        | GraphFormat::Ps
                        | GraphFormat::Pdf
                        | GraphFormat::Gif
                        | GraphFormat::Png,
                    None
                )
        )
    }

    /// The extension of the temporary file of [`Self::away_from_terminal`]
    /// outputs and viewers.
    pub fn extension(&self) -> &'static str {
        match self.output {
            Output::Proto => "pb.gz",
            Output::Callgrind => "callgrind.out",
            Output::Flame(_) | Output::Weblist => "html",
            Output::Graph(format, _) => format.extension(),
            _ => "txt",
        }
    }
}

impl GraphFormat {
    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            GraphFormat::Dot => "DOT",
            GraphFormat::Svg => "SVG",
            GraphFormat::Ps => "PostScript",
            GraphFormat::Pdf => "PDF",
            GraphFormat::Gif => "GIF",
            GraphFormat::Png => "PNG",
        }
    }

    /// The file name extension.
    pub fn extension(self) -> &'static str {
        match self {
            GraphFormat::Dot => "dot",
            GraphFormat::Svg => "svg",
            GraphFormat::Ps => "ps",
            GraphFormat::Pdf => "pdf",
            GraphFormat::Gif => "gif",
            GraphFormat::Png => "png",
        }
    }

    /// dot's `-T` argument.
    pub fn dot_format(self) -> &'static str {
        match self {
            GraphFormat::Ps => "ps2",
            other => other.extension(),
        }
    }

    /// Formats that would garble a terminal.
    pub fn is_binary(self) -> bool {
        matches!(self, GraphFormat::Pdf | GraphFormat::Gif | GraphFormat::Png)
    }
}

const GRAPH_USAGE: &str = "[n] [focus_regex]* [-ignore_regex]* [-cum] [> file]";

macro_rules! command {
    ($name:literal, $output:expr, $flag:expr, $help:literal) => {
        command!($name, [], $output, false, $flag, $help, GRAPH_USAGE)
    };
    ($name:literal, [$($alias:literal),*], $output:expr, $regex:expr, $flag:expr, $help:literal, $usage:expr) => {
        CommandDef {
            name: $name,
            aliases: &[$($alias),*],
            output: $output,
            takes_regex: $regex,
            flag: $flag,
            help: $help,
            usage: $usage,
        }
    };
}

use GraphFormat as G;
use Output as O;

/// Every report command, in the order `help` lists them.
pub static COMMANDS: &[CommandDef] = &[
    command!("top", ["text"], O::Text, false, Flag::Switch,
        "Top entries in text form: flat, flat%, sum%, cum, cum%, name (shell: 10 rows unless n given)",
        "[n] [focus_regex]* [-ignore_regex]* [-cum] [> file]"),
    command!("tree", O::Tree, Flag::Switch, "Each node with its callers and callees, as text"),
    command!("peek", [], O::Peek, true, Flag::Regex,
        "Callers and callees of the functions matching a regex",
        "func_regex [focus_regex]* [-ignore_regex]* [> file]"),
    command!("traces", [], O::Traces, false, Flag::Switch,
        "Every distinct stack with its value, leaf first",
        "[focus_regex]* [-ignore_regex]* [> file]"),
    command!("tags", [], O::Tags, false, Flag::Switch,
        "The sample labels: each key's values with their values and shares (Go pprof's -tags); its regexes are tagfocus and tagignore",
        "[tag_regex]* [-tag_regex]* [> file]"),
    command!("list", [], O::List, true, Flag::Regex,
        "Annotated source of the functions matching a regex",
        "func_regex [focus_regex]* [-ignore_regex]* [> file]"),
    command!("disasm", [], O::Disasm, true, Flag::Regex,
        "Annotated disassembly of the functions matching a regex",
        "func_regex [focus_regex]* [-ignore_regex]* [> file]"),
    command!("weblist", [], O::Weblist, true, Flag::Regex,
        "Annotated source with its instructions, in a web browser",
        "func_regex [focus_regex]* [-ignore_regex]*"),
    command!("raw", [], O::Raw, false, Flag::Switch,
        "perl pprof's symbolized raw profile (reads back without the binary)",
        "[focus_regex]* [-ignore_regex]* [> file]"),
    command!("collapsed", [], O::Collapsed, false, Flag::Switch,
        "Folded stacks, `root;...;leaf count` per distinct stack",
        "[focus_regex]* [-ignore_regex]* [> file]"),
    command!("json", [], O::Json, false, Flag::Switch,
        "The text report's totals and rows as JSON (schema cpuprof-report/1)",
        "[n] [focus_regex]* [-ignore_regex]* [-cum] [> file]"),
    command!("callgrind", [], O::Callgrind, false, Flag::Switch,
        "Callgrind format, for KCachegrind and callgrind_annotate",
        "[file] [focus_regex]* [-ignore_regex]* [> file]"),
    command!("proto", [], O::Proto, false, Flag::Switch,
        "The (summed, symbolized) profile as gzipped profile.proto",
        "[> file]"),
    command!("comments", [], O::Comments, false, Flag::Switch,
        "The profile's comments", ""),
    command!("dot", O::Graph(G::Dot, None), Flag::Switch, "Call graph in Graphviz DOT"),
    command!("svg", O::Graph(G::Svg, None), Flag::Switch, "Call graph in SVG (built-in layout, or dot: see layout=)"),
    command!("pdf", O::Graph(G::Pdf, None), Flag::Switch, "Call graph in PDF (needs dot)"),
    command!("ps", O::Graph(G::Ps, None), Flag::Switch, "Call graph in PostScript (needs dot)"),
    command!("png", O::Graph(G::Png, None), Flag::Switch, "Call graph in PNG (needs dot)"),
    command!("gif", O::Graph(G::Gif, None), Flag::Switch, "Call graph in GIF (needs dot)"),
    command!("web", O::Graph(G::Svg, Some(Viewer::Web)), Flag::Switch, "Call graph in SVG, shown in $BROWSER (else xdg-open)"),
    command!("gv", O::Graph(G::Ps, Some(Viewer::Gv)), Flag::Switch, "Call graph in PostScript, shown with gv (needs dot)"),
    command!("evince", O::Graph(G::Pdf, Some(Viewer::Evince)), Flag::Switch, "Call graph in PDF, shown with evince (needs dot)"),
    command!("flame", [], O::Flame(FlameKind::Flame), false, Flag::FlameFormat,
        "Flame graph: interactive HTML (zoom, search), or SVG (--flame=svg; shell: > file.svg)",
        "[focus_regex]* [-ignore_regex]* [> file.html|file.svg]"),
    command!("icicle", [], O::Flame(FlameKind::Icicle), false, Flag::FlameFormat,
        "The flame graph with the root on top",
        "[focus_regex]* [-ignore_regex]* [> file.html|file.svg]"),
    command!("timeline", [], O::Timeline, false, Flag::OptionalRegex,
        "Each thread's CPU activity over time in block characters (60 columns); with RE, a second line per thread for the samples with a frame matching RE",
        "[RE] [focus_regex]* [-ignore_regex]* [> file]"),
    command!("dcpiprof", [], O::Dcpiprof, false, Flag::Switch,
        "One row per procedure and image, like DCPI's dcpiprof",
        "[> file]"),
    command!("gprof", [], O::Gprof, false, Flag::Switch,
        "gprof's own report (flat profile, call graph, index) of gmon.out files",
        "[> file]"),
];

/// The command called `name` (or one of its aliases).
pub fn command(name: &str) -> Option<&'static CommandDef> {
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// The shell's words that are not report commands, with their help.
pub const SHELL_WORDS: &[(&str, &str)] = &[
    (
        "o",
        "Show every setting, its value and its choices (also: options)",
    ),
    (
        "help",
        "help [command|setting]: this list, or the help of one",
    ),
    (
        ":",
        "Clear every filter (focus, ignore, hide, show, show_from, tagfocus, tagignore, tagshow, taghide, time, base_time)",
    ),
    ("quit", "Leave the shell (also: exit, q, Ctrl-D)"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_not_settings() {
        let mut names: Vec<&str> = COMMANDS
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        for name in names {
            assert!(
                crate::settings::setting(name).is_none()
                    && crate::settings::choice_group(name).is_none(),
                "{name} is both a command and a setting"
            );
        }
    }

    #[test]
    fn regex_commands_have_regex_flags() {
        for c in COMMANDS {
            assert_eq!(c.takes_regex, c.flag == Flag::Regex, "{}", c.name);
        }
    }
}
