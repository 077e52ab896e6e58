//! The one table of report settings ([`SETTINGS`]) and a set of values for
//! them ([`Config`]).
//!
//! Every report setting is defined here once — name, kind, default, help,
//! choices, its web UI query parameter and its other command-line
//! spellings — and everything else is derived from the table: the
//! `cpuprof report` flags ([`crate::cli`]), the shell's `name=value`
//! assignments and its `o`/`options` listing ([`Config::listing`]), and
//! the web UI's query strings ([`Setting::url`]). [`Config::set`] is the
//! one place a value is checked, whoever gives it.

use std::fmt;

use anyhow::{bail, Result};
use cpuprof_profile::Profile;
use cpuprof_report::tags::{parse_keys, TagFilter, TagOptions};
use cpuprof_report::time::TimeRange;
use cpuprof_report::{Granularity, Options};
use regex::Regex;

/// What values a setting takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `true` or `false` (also `1`/`0`, `yes`/`no`, `t`/`f`).
    Bool,
    /// A whole number.
    Int,
    /// A number.
    Float,
    /// A regular expression (empty: none).
    Regex,
    /// Free text (a path, a list of paths, a sample type).
    Text,
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
    /// A confidence level in percent (`95`, `99.9`), `0` for off; the
    /// name alone (a flag without a value) means 95.
    Level,
    /// A label filter in Go pprof's syntax (`key=regex[,regex]`,
    /// `regex[,regex]`, `key=1kb:64kb`); empty: none.
    TagFilter,
    /// The unit values are printed in: `minimum`, `auto`, or a unit
    /// (`ms`, `kB`), as Go pprof's `-unit`.
    Unit,
    /// A time range, `START:END` offsets from the profile's start with
    /// units (`1.5s:2s`, `:500ms`, `2s:`); empty: the whole profile.
    TimeRange,
}

/// One report setting.
#[derive(Debug)]
pub struct Setting {
    /// The name: the shell's `name=value`, the long flag `--name`.
    pub name: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Its value when nothing sets it.
    pub default: &'static str,
    /// One-line help (the shell's `help NAME`, the flag's help).
    pub help: &'static str,
    /// Its web UI query parameter (Go pprof's name where Go has one), or
    /// `None` when it is not carried in URLs.
    pub url: Option<&'static str>,
    /// Other command-line spellings (`--full-names` for `full_names`).
    pub aliases: &'static [&'static str],
    /// For a choice: each choice is also a setting of its own
    /// (`--lines`, and `lines` alone in the shell, mean `granularity=lines`).
    pub choices_stand_alone: bool,
    /// Cleared by the shell's `:`.
    pub filter: bool,
    /// The command-line flag's value name.
    pub value_name: &'static str,
}

impl Setting {
    /// The choices of a [`Kind::Choice`] setting (empty otherwise).
    pub fn choices(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Choice(choices) => choices,
            _ => &[],
        }
    }

    /// Checks `value` for this setting and returns it in canonical form
    /// (booleans as `true`/`false`, numbers as given). The error is one
    /// line even when the value holds a line break (a URL's `%0A`): the
    /// control characters it echoes are escaped.
    pub fn check(&self, value: &str) -> Result<String> {
        self.check_trimmed(value.trim()).map_err(|e| {
            let mut message = String::new();
            for c in e.to_string().chars() {
                if c.is_control() {
                    message.extend(c.escape_default());
                } else {
                    message.push(c);
                }
            }
            anyhow::anyhow!(message)
        })
    }

    fn check_trimmed(&self, value: &str) -> Result<String> {
        Ok(match self.kind {
            Kind::Bool => match parse_bool(value) {
                Some(b) => b.to_string(),
                None => bail!("{}={value}: expected true or false", self.name),
            },
            Kind::Int => match value.parse::<i64>() {
                Ok(n) if n >= -1 => n.to_string(),
                _ => bail!("{}={value}: expected a whole number", self.name),
            },
            Kind::Float => match value.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => value.to_string(),
                _ => bail!(
                    "{}={value}: expected a number (a fraction, e.g. 0.005)",
                    self.name
                ),
            },
            Kind::Regex => {
                compile_regex(self.name, value)?;
                value.to_string()
            }
            Kind::Text => value.to_string(),
            Kind::TagFilter => {
                if !value.is_empty() {
                    TagFilter::parse(self.name, value)?;
                }
                value.to_string()
            }
            Kind::Level => match value {
                "0" | "off" | "false" => "0".to_string(),
                _ => match cpuprof_report::stats::parse_level(value) {
                    Some(level) => cpuprof_report::stats::level_text(level),
                    None => bail!(
                        "{}={value}: expected a confidence level in percent (e.g. 95), or 0 for off",
                        self.name
                    ),
                },
            },
            Kind::TimeRange => {
                if !value.is_empty() {
                    TimeRange::parse(self.name, value).map_err(|e| anyhow::anyhow!(e))?;
                }
                value.to_string()
            }
            Kind::Unit => match cpuprof_report::measure::check_unit(value) {
                Ok(()) => value.to_string(),
                Err(e) => bail!("{e}"),
            },
            Kind::Choice(choices) => match choices.iter().find(|c| **c == value) {
                Some(c) => c.to_string(),
                None => bail!(
                    "{}={value}: expected one of {}",
                    self.name,
                    choices.join(", ")
                ),
            },
        })
    }
}

/// Parses the boolean spellings Go pprof accepts.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "" | "true" | "t" | "yes" | "y" | "1" | "on" => Some(true),
        "false" | "f" | "no" | "n" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// Compiles a setting's regular expression; the error is one line.
pub fn compile_regex(name: &str, re: &str) -> Result<Regex> {
    Regex::new(re).map_err(|e| {
        let message = e.to_string();
        let last = message.lines().last().unwrap_or("").trim();
        let last = last.strip_prefix("error: ").unwrap_or(last);
        anyhow::anyhow!("{name}={re}: invalid regular expression: {last}")
    })
}

/// The granularities, as the `granularity` setting names them.
pub const GRANULARITIES: &[&str] = &["functions", "lines", "addresses", "files"];

/// Every report setting. Kept in alphabetical order (the order of `o`).
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: "base_time",
        kind: Kind::TimeRange,
        default: "",
        help: "With --base: keep only the base's samples taken in START:END, offsets from the base's own start (see time)",
        url: Some("bt"),
        aliases: &["base-time"],
        choices_stand_alone: false,
        filter: true,
        value_name: "START:END",
    },
    Setting {
        name: "confidence",
        kind: Kind::Level,
        default: "0",
        help: "Show the interval of each share at this confidence level in percent (95 when given alone; 0: off): Wilson score intervals of k of n samples",
        url: Some("ci"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "PCT",
    },
    Setting {
        name: "drop_negative",
        kind: Kind::Bool,
        default: "false",
        help: "With --base, hide rows and nodes whose value went down",
        url: Some("dropneg"),
        aliases: &["drop-negative"],
        choices_stand_alone: false,
        filter: false,
        value_name: "BOOL",
    },
    Setting {
        name: "edgefraction",
        kind: Kind::Float,
        default: "0.001",
        help: "Graphs and tree: hide edges below this fraction of the total",
        url: Some("ef"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "F",
    },
    Setting {
        name: "focus",
        kind: Kind::Regex,
        default: "",
        help: "Keep only samples with a frame matching RE (function, file:line or address)",
        url: Some("f"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "full_names",
        kind: Kind::Bool,
        default: "false",
        help: "Keep C++ argument lists and template parameters in names",
        url: Some("fullnames"),
        aliases: &["full-names"],
        choices_stand_alone: false,
        filter: false,
        value_name: "BOOL",
    },
    Setting {
        name: "granularity",
        kind: Kind::Choice(GRANULARITIES),
        default: "functions",
        help: "One row or node per function, source line, address or source file",
        url: Some("g"),
        aliases: &[],
        choices_stand_alone: true,
        filter: false,
        value_name: "G",
    },
    Setting {
        name: "hide",
        kind: Kind::Regex,
        default: "",
        help: "Remove frames matching RE from the stacks (their samples stay)",
        url: Some("h"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "ignore",
        kind: Kind::Regex,
        default: "",
        help: "Drop samples with a frame matching RE",
        url: Some("i"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "keep_profiler_frames",
        kind: Kind::Bool,
        default: "false",
        help: "Keep the profiler's own signal-handling frames (removed by default)",
        url: Some("keepprof"),
        aliases: &["keep-profiler-frames"],
        choices_stand_alone: false,
        filter: false,
        value_name: "BOOL",
    },
    Setting {
        name: "layout",
        kind: Kind::Choice(&["auto", "builtin", "dot"]),
        default: "auto",
        help: "Who lays out SVG call graphs: dot when installed (auto), our own layout, or dot",
        url: Some("layout"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "ENGINE",
    },
    Setting {
        name: "maxdegree",
        kind: Kind::Int,
        default: "8",
        help: "Graphs: keep at most N edges in and out of a node",
        url: Some("md"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "N",
    },
    Setting {
        name: "mean",
        kind: Kind::Bool,
        default: "false",
        help: "Report each sample's value divided by its count (its first value), summed: the mean delay of a contention profile, as perl pprof's --mean_delay",
        url: Some("mean"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "BOOL",
    },
    Setting {
        name: "nodecount",
        kind: Kind::Int,
        default: "-1",
        help: "Show at most N rows or nodes (-1: the output's default: text all, shell top 10, graphs and tree 80; 0: all)",
        url: Some("n"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "N",
    },
    Setting {
        name: "nodefraction",
        kind: Kind::Float,
        default: "0.005",
        help: "Graphs and tree: hide nodes below this fraction of the total",
        url: Some("nf"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "F",
    },
    Setting {
        name: "noinlines",
        kind: Kind::Bool,
        default: "false",
        help: "Count inlined code in its physical function (Go pprof's -noinlines); addresses and lines follow",
        url: Some("noinlines"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "BOOL",
    },
    Setting {
        name: "output",
        kind: Kind::Text,
        default: "",
        help: "Write reports to this file instead of standard output",
        url: None,
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "FILE",
    },
    Setting {
        name: "sample_index",
        kind: Kind::Text,
        default: "",
        help: "Which sample value to report: an index or a sample type (e.g. cpu, samples); empty: the profile's default",
        url: Some("si"),
        aliases: &["sample-index"],
        choices_stand_alone: false,
        filter: false,
        value_name: "N|NAME",
    },
    Setting {
        name: "show",
        kind: Kind::Regex,
        default: "",
        help: "Keep only frames matching RE in the stacks (their samples stay)",
        url: Some("s"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "show_from",
        kind: Kind::Regex,
        default: "",
        help: "Drop the frames above (callers of) the outermost frame matching RE",
        url: Some("sf"),
        aliases: &["show-from"],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "sort",
        kind: Kind::Choice(&["flat", "cum"]),
        default: "flat",
        help: "Sort rows by flat or by cumulative value",
        url: Some("sort"),
        aliases: &[],
        choices_stand_alone: true,
        filter: false,
        value_name: "ORDER",
    },
    Setting {
        name: "source_path",
        kind: Kind::Text,
        default: "",
        help: "list, disasm, weblist: directories to search for source files (`:`-separated)",
        url: None,
        aliases: &["source-path"],
        choices_stand_alone: false,
        filter: false,
        value_name: "DIR[:DIR...]",
    },
    Setting {
        name: "tagfocus",
        kind: Kind::TagFilter,
        default: "",
        help: "Keep only samples whose labels match: key=RE[,RE] (any RE on key's values), RE[,RE] (each RE on some key:value), key=RANGE of a numeric label (bytes=1kb:64kb, :4ms)",
        url: Some("tf"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "FILTER",
    },
    Setting {
        name: "taghide",
        kind: Kind::Regex,
        default: "",
        help: "Do not show labels whose key matches RE (tags, traces, tagroot, tagleaf)",
        url: Some("th"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "tagignore",
        kind: Kind::TagFilter,
        default: "",
        help: "Drop samples whose labels match (tagfocus's syntax)",
        url: Some("ti"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "FILTER",
    },
    Setting {
        name: "tagleaf",
        kind: Kind::Text,
        default: "",
        help: "Add each sample's values of these label keys as pseudo-frames at the leaf (last key innermost)",
        url: Some("tagleaf"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "KEY[,KEY...]",
    },
    Setting {
        name: "tagroot",
        kind: Kind::Text,
        default: "",
        help: "Add each sample's values of these label keys as pseudo-frames at the root (first key outermost): one flame tower per value",
        url: Some("tagroot"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "KEY[,KEY...]",
    },
    Setting {
        name: "tagshow",
        kind: Kind::Regex,
        default: "",
        help: "Show only labels whose key matches RE (tags, traces, tagroot, tagleaf)",
        url: Some("ts"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "RE",
    },
    Setting {
        name: "time",
        kind: Kind::TimeRange,
        default: "",
        help: "Keep only the samples taken in START:END, offsets from the profile's start (1.5s:2s, :500ms, 2s:; ns, us, ms, s, min, h; a bare number is seconds), before every other filter",
        url: Some("t"),
        aliases: &[],
        choices_stand_alone: false,
        filter: true,
        value_name: "START:END",
    },
    Setting {
        name: "trim_path",
        kind: Kind::Text,
        default: "",
        help: "list, disasm, weblist: prefixes to remove from source paths before searching (`:`-separated)",
        url: None,
        aliases: &["trim-path"],
        choices_stand_alone: false,
        filter: false,
        value_name: "PREFIX[:PREFIX...]",
    },
    Setting {
        name: "unit",
        kind: Kind::Unit,
        default: "minimum",
        help: "Print time and byte values in this unit: minimum (one unit per report, that of its smallest value), auto (each value its own), or a unit (ns, us, ms, s, hrs; B, kB, MB, GB, TB, PB)",
        url: Some("unit"),
        aliases: &[],
        choices_stand_alone: false,
        filter: false,
        value_name: "UNIT",
    },
];

/// A name that stands for settings: perl and Go pprof's sample flags
/// (`--inuse_space` is `sample_index=inuse_space`), a flag and a shell
/// word of its own that takes no value.
#[derive(Debug)]
pub struct Shorthand {
    /// The flag's and the shell word's name.
    pub name: &'static str,
    /// One-line help.
    pub help: &'static str,
    /// The settings it sets, `(name, value)`.
    pub sets: &'static [(&'static str, &'static str)],
}

/// Every shorthand, in alphabetical order.
pub static SHORTHANDS: &[Shorthand] = &[
    Shorthand {
        name: "alloc_objects",
        help: "Heap profiles: objects allocated (sample_index=alloc_objects)",
        sets: &[("sample_index", "alloc_objects")],
    },
    Shorthand {
        name: "alloc_space",
        help: "Heap profiles: bytes allocated (sample_index=alloc_space)",
        sets: &[("sample_index", "alloc_space")],
    },
    Shorthand {
        name: "contentions",
        help: "Contention profiles: number of contentions (sample_index=contentions)",
        sets: &[("sample_index", "contentions")],
    },
    Shorthand {
        name: "delay",
        help: "Contention profiles: time spent waiting (sample_index=delay)",
        sets: &[("sample_index", "delay")],
    },
    Shorthand {
        name: "inuse_objects",
        help: "Heap profiles: objects in use (sample_index=inuse_objects)",
        sets: &[("sample_index", "inuse_objects")],
    },
    Shorthand {
        name: "inuse_space",
        help: "Heap profiles: bytes in use, the default (sample_index=inuse_space)",
        sets: &[("sample_index", "inuse_space")],
    },
    Shorthand {
        name: "mean_delay",
        help: "Contention profiles: mean delay per contention (sample_index=delay mean=true)",
        sets: &[("sample_index", "delay"), ("mean", "true")],
    },
    Shorthand {
        name: "total_delay",
        help: "Contention profiles: total delay, the default (sample_index=delay)",
        sets: &[("sample_index", "delay")],
    },
];

/// The shorthand called `name`.
pub fn shorthand(name: &str) -> Option<&'static Shorthand> {
    SHORTHANDS.iter().find(|s| s.name == name)
}

impl Shorthand {
    /// What it sets, as `name=value` words.
    pub fn describe(&self) -> String {
        let sets: Vec<String> = self.sets.iter().map(|(n, v)| format!("{n}={v}")).collect();
        sets.join(" ")
    }
}

/// The setting called `name` (or one of its aliases).
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS
        .iter()
        .find(|s| s.name == name || s.aliases.contains(&name))
}

/// The choice setting that has `choice` as a stand-alone choice
/// (`lines` → granularity, `cum` → sort).
pub fn choice_group(choice: &str) -> Option<&'static Setting> {
    SETTINGS
        .iter()
        .find(|s| s.choices_stand_alone && s.choices().contains(&choice))
}

/// A value for every setting of [`SETTINGS`].
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    values: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            values: SETTINGS.iter().map(|s| s.default.to_string()).collect(),
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (s, v) in SETTINGS.iter().zip(&self.values) {
            if v != s.default {
                map.entry(&s.name, v);
            }
        }
        map.finish()
    }
}

impl Config {
    fn index(name: &str) -> usize {
        SETTINGS
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no setting {name} in the table"))
    }

    /// The value of the setting `name` (its canonical name).
    pub fn get(&self, name: &str) -> &str {
        &self.values[Self::index(name)]
    }

    /// Sets `name` (a setting, an alias, or a stand-alone choice such as
    /// `lines` or `cum`, which takes no value) to `value`, after checking
    /// it. A boolean given no value is set to true.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        if let Some(shorthand) = shorthand(name) {
            match value.map(parse_bool) {
                None | Some(Some(true)) => {}
                _ => bail!("{name} takes no value: it sets {}", shorthand.describe()),
            }
            for (setting, value) in shorthand.sets {
                self.values[Self::index(setting)] = value.to_string();
            }
            return Ok(());
        }
        if let Some(group) = choice_group(name) {
            match value.map(parse_bool) {
                None | Some(Some(true)) => {}
                _ => bail!("{name} takes no value: it sets {}={name}", group.name),
            }
            self.values[Self::index(group.name)] = name.to_string();
            return Ok(());
        }
        let Some(setting) = setting(name) else {
            bail!("unknown setting {name}");
        };
        let value = match (value, setting.kind) {
            (Some(v), _) => v,
            (None, Kind::Bool) => "true",
            (None, Kind::Level) => "95",
            (None, _) => bail!("please specify a value, e.g. {}=<val>", setting.name),
        };
        self.values[Self::index(setting.name)] = setting.check(value)?;
        Ok(())
    }

    /// Sets a setting without checking (the caller checked it).
    pub(crate) fn set_checked(&mut self, name: &str, value: String) {
        self.values[Self::index(name)] = value;
    }

    /// The value of a boolean setting.
    pub fn bool(&self, name: &str) -> bool {
        self.get(name) == "true"
    }

    /// The value of a whole-number setting.
    pub fn int(&self, name: &str) -> i64 {
        self.get(name).parse().unwrap_or(-1)
    }

    /// The value of a number setting.
    pub fn float(&self, name: &str) -> f64 {
        self.get(name).parse().unwrap_or(0.0)
    }

    /// A text setting's value, `None` when empty.
    pub fn text(&self, name: &str) -> Option<&str> {
        Some(self.get(name)).filter(|v| !v.is_empty())
    }

    /// Resets every filter (`focus`, `ignore`, `hide`, `show`,
    /// `show_from`, `tagfocus`, `tagignore`, `tagshow`, `taghide`, `time`,
    /// `base_time`): the shell's `:`.
    pub fn clear_filters(&mut self) {
        for (s, v) in SETTINGS.iter().zip(&mut self.values) {
            if s.filter {
                *v = s.default.to_string();
            }
        }
    }

    /// Every setting that differs from its default, as `(name, value)`.
    pub fn changed(&self) -> impl Iterator<Item = (&'static str, &str)> {
        SETTINGS
            .iter()
            .zip(&self.values)
            .filter(|(s, v)| *v != s.default)
            .map(|(s, v)| (s.name, v.as_str()))
    }

    /// The shell's `o` listing: one line per setting, `name = value` and
    /// the choices as a comment (`//: [a | b]`), as Go pprof prints it;
    /// `sample_types` are the loaded profile's.
    pub fn listing(&self, sample_types: &[String]) -> String {
        let mut out = String::new();
        for (s, v) in SETTINGS.iter().zip(&self.values) {
            let mut value = v.clone();
            let comment = match s.kind {
                Kind::Choice(choices) => {
                    let mut sorted = choices.to_vec();
                    sorted.sort_unstable();
                    format!("[{}]", sorted.join(" | "))
                }
                _ if s.name == "sample_index" => {
                    if value.is_empty() {
                        value = sample_types.last().cloned().unwrap_or_default();
                    }
                    format!("[{}]", sample_types.join(" | "))
                }
                _ if s.name == "nodecount" && value == "-1" => "default".to_string(),
                _ => {
                    if value.is_empty() {
                        value = "\"\"".to_string();
                    }
                    String::new()
                }
            };
            let line = if comment.is_empty() {
                format!("  {:<25} = {}", s.name, value)
            } else {
                format!("  {:<25} = {:<20} //: {}", s.name, value, comment)
            };
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The `confidence` level as a fraction, `None` when off.
    pub fn confidence(&self) -> Option<f64> {
        match self.get("confidence") {
            "0" => None,
            level => cpuprof_report::stats::parse_level(level),
        }
    }

    /// The granularity asked for.
    pub fn granularity(&self) -> Granularity {
        match self.get("granularity") {
            "lines" => Granularity::Lines,
            "addresses" => Granularity::Addresses,
            "files" => Granularity::Files,
            _ => Granularity::Functions,
        }
    }

    /// The report options these settings mean for `profile` (whose sample
    /// types `sample_index` names).
    pub fn report_options(&self, profile: &Profile) -> Result<Options> {
        let regex = |name: &str| -> Result<Option<Regex>> {
            self.text(name)
                .map(|re| compile_regex(name, re))
                .transpose()
        };
        let nodecount = match self.int("nodecount") {
            n if n < 0 => None,
            0 => Some(usize::MAX),
            n => Some(n as usize),
        };
        Ok(Options {
            granularity: self.granularity(),
            focus: regex("focus")?,
            ignore: regex("ignore")?,
            hide: regex("hide")?,
            show: regex("show")?,
            show_from: regex("show_from")?,
            cum: self.get("sort") == "cum",
            full_names: self.bool("full_names"),
            noinlines: self.bool("noinlines"),
            sample_index: sample_index(profile, self.text("sample_index"))?,
            mean: self.bool("mean"),
            drop_negative: self.bool("drop_negative"),
            nodecount,
            nodefraction: self.float("nodefraction"),
            edgefraction: self.float("edgefraction"),
            maxdegree: self.int("maxdegree").max(0) as usize,
            keep_profiler_frames: self.bool("keep_profiler_frames"),
            tags: self.tag_options()?,
            unit: self.get("unit").to_string(),
            // The session sets them (a window of its profile's samples,
            // their values in columns).
            window: None,
            columns: None,
        })
    }

    /// The `time` range (`which` = `"time"`) or the `base_time` range
    /// asked for, if any.
    pub fn time_range(&self, which: &str) -> Result<Option<TimeRange>> {
        self.text(which)
            .map(|v| TimeRange::parse(which, v).map_err(|e| anyhow::anyhow!(e)))
            .transpose()
    }

    /// The label options these settings mean.
    pub fn tag_options(&self) -> Result<TagOptions> {
        let filter = |name: &str| -> Result<Option<TagFilter>> {
            Ok(self
                .text(name)
                .map(|value| TagFilter::parse(name, value))
                .transpose()?)
        };
        let regex = |name: &str| -> Result<Option<Regex>> {
            self.text(name)
                .map(|re| compile_regex(name, re))
                .transpose()
        };
        Ok(TagOptions {
            focus: filter("tagfocus")?,
            ignore: filter("tagignore")?,
            show: regex("tagshow")?,
            hide: regex("taghide")?,
            root: parse_keys(self.get("tagroot")),
            leaf: parse_keys(self.get("tagleaf")),
        })
    }
}

/// Decodes one `application/x-www-form-urlencoded` component (`+` is a
/// space, `%XX` a byte); invalid escapes are kept as they are.
pub fn url_decode(component: &str) -> String {
    let bytes = component.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes `value` as one query string component (unreserved characters
/// as they are, everything else `%XX`).
pub fn url_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The `(name, value)` pairs of a query string, decoded, in order.
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => (url_decode(k), url_decode(v)),
            None => (url_decode(pair), String::new()),
        })
        .collect()
}

impl Config {
    /// The settings of `base` changed by the URL parameters of `query`
    /// (each setting's [`Setting::url`] name, as Go pprof's web UI names
    /// them: `f`, `i`, `h`, `s`, `sf`, `si`, `g`, `n`, ...). Parameters
    /// that name no setting are left to the caller; a value that fails
    /// its setting's check is an error.
    pub fn with_query(base: &Config, query: &str) -> Result<Config> {
        let mut config = base.clone();
        for (key, value) in query_pairs(query) {
            if let Some(s) = SETTINGS.iter().find(|s| s.url == Some(key.as_str())) {
                let value = if value.is_empty() { s.default } else { &value };
                config.values[Self::index(s.name)] = s.check(value)?;
            }
        }
        Ok(config)
    }

    /// [`Config::with_query`] over the defaults.
    pub fn from_query(query: &str) -> Result<Config> {
        Config::with_query(&Config::default(), query)
    }

    /// The query string of every URL-carried setting that differs from
    /// `base` (`f=burn&g=lines`), in table order: what
    /// [`Config::with_query`] reads back over the same `base`.
    pub fn to_query(&self, base: &Config) -> String {
        let mut pairs = Vec::new();
        for ((s, v), b) in SETTINGS.iter().zip(&self.values).zip(&base.values) {
            if let Some(url) = s.url {
                if v != b {
                    pairs.push(format!("{url}={}", url_encode(v)));
                }
            }
        }
        pairs.join("&")
    }
}

/// The sample value `name` (an index or a sample type's name) selects in
/// `profile`; `None` for the profile's default.
pub fn sample_index(profile: &Profile, name: Option<&str>) -> Result<Option<usize>> {
    let Some(s) = name else { return Ok(None) };
    Ok(Some(match s.parse::<usize>() {
        Ok(i) if i < profile.sample_types.len() => i,
        // `inuse_space` and `inuse_objects` also name the `space` and
        // `objects` of heap profiles without alloc columns, as in Go pprof.
        _ => match profile
            .sample_index(s)
            .or_else(|| profile.sample_index(s.strip_prefix("inuse_")?))
        {
            Some(i) => i,
            None => {
                let types: Vec<String> = profile
                    .sample_types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("{i}={}", t.kind))
                    .collect();
                bail!(
                    "sample_index={s}: the profile's sample types are {}",
                    types.join(", ")
                )
            }
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_names_are_unique() {
        let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "SETTINGS in alphabetical order");
        let mut all: Vec<&str> = SETTINGS
            .iter()
            .flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()))
            .chain(
                SETTINGS
                    .iter()
                    .filter(|s| s.choices_stand_alone)
                    .flat_map(|s| s.choices().iter().copied()),
            )
            .chain(SHORTHANDS.iter().map(|s| s.name))
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(
            all.len(),
            count,
            "a name, alias or stand-alone choice used twice"
        );
    }

    #[test]
    fn every_default_passes_its_own_check() {
        for s in SETTINGS {
            assert_eq!(s.check(s.default).unwrap(), s.default, "{}", s.name);
        }
    }

    #[test]
    fn set_checks_and_canonicalizes() {
        let mut c = Config::default();
        c.set("cum", None).unwrap();
        assert_eq!(c.get("sort"), "cum");
        c.set("lines", None).unwrap();
        assert_eq!(c.get("granularity"), "lines");
        c.set("full-names", Some("yes")).unwrap();
        assert_eq!(c.get("full_names"), "true");
        c.set("drop_negative", None).unwrap();
        assert!(c.bool("drop_negative"));
        assert!(c.set("nodecount", Some("ten")).is_err());
        assert!(c.set("nodecount", Some("-2")).is_err());
        assert!(c.set("nodefraction", Some("-0.1")).is_err());
        assert!(c.set("granularity", Some("bytes")).is_err());
        let err = c.set("focus", Some("(")).unwrap_err().to_string();
        assert!(
            err.starts_with("focus=(: invalid regular expression"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
        assert_eq!(
            c.set("focus", None).unwrap_err().to_string(),
            "please specify a value, e.g. focus=<val>"
        );
        c.set("focus", Some("burn")).unwrap();
        c.set("show", Some("x")).unwrap();
        c.clear_filters();
        assert_eq!(c.get("focus"), "");
        assert_eq!(c.get("show"), "");
        assert_eq!(c.get("granularity"), "lines", ": keeps non-filters");
    }

    #[test]
    fn shorthands_set_the_sample_index() {
        let mut c = Config::default();
        c.set("total_delay", None).unwrap();
        assert_eq!(c.get("sample_index"), "delay");
        c.set("alloc_space", Some("true")).unwrap();
        assert_eq!(c.get("sample_index"), "alloc_space");
        let e = c.set("inuse_space", Some("false")).unwrap_err().to_string();
        assert_eq!(
            e,
            "inuse_space takes no value: it sets sample_index=inuse_space"
        );
        for s in SHORTHANDS {
            assert!(
                setting(s.name).is_none() && choice_group(s.name).is_none(),
                "{}",
                s.name
            );
        }
        let mut heap = Profile::default();
        heap.sample_types = cpuprof_profile::heap::sample_types(false);
        assert_eq!(sample_index(&heap, Some("inuse_space")).unwrap(), Some(1));
        assert_eq!(sample_index(&heap, Some("inuse_objects")).unwrap(), Some(0));
        assert!(sample_index(&heap, Some("alloc_space")).is_err());
    }

    #[test]
    fn nodecount_meanings() {
        let profile = Profile::default();
        let mut c = Config::default();
        assert_eq!(c.report_options(&profile).unwrap().nodecount, None);
        c.set("nodecount", Some("0")).unwrap();
        assert_eq!(
            c.report_options(&profile).unwrap().nodecount,
            Some(usize::MAX)
        );
        c.set("nodecount", Some("7")).unwrap();
        assert_eq!(c.report_options(&profile).unwrap().nodecount, Some(7));
    }

    #[test]
    fn query_strings_round_trip_through_url_names() {
        let c = Config::from_query("f=%5Eburn_%28a%7Cb%29%24&g=lines&si=cpu&n=20&x=1&h=").unwrap();
        assert_eq!(c.get("focus"), "^burn_(a|b)$");
        assert_eq!(c.get("granularity"), "lines");
        assert_eq!(c.get("sample_index"), "cpu");
        assert_eq!(c.int("nodecount"), 20);
        let q = c.to_query(&Config::default());
        assert_eq!(Config::from_query(&q).unwrap(), c);
        assert!(q.starts_with("f=%5Eburn_%28a%7Cb%29%24&g=lines"), "{q}");
        assert!(Config::from_query("g=bytes").is_err());
        assert!(Config::from_query("f=(").is_err());
        assert_eq!(url_decode("a+b%2"), "a b%2");
        assert_eq!(url_decode("%zz%41"), "%zzA");
    }

    #[test]
    fn time_ranges_are_checked_cleared_and_carried_in_urls() {
        let mut c = Config::default();
        assert_eq!(c.time_range("time").unwrap(), None);
        c.set("time", Some("1.5s:2s")).unwrap();
        let range = c.time_range("time").unwrap().unwrap();
        assert_eq!(
            (range.start, range.end),
            (1_500_000_000, Some(2_000_000_000))
        );
        let e = c.set("time", Some("2s:1s")).unwrap_err().to_string();
        assert_eq!(e, "time=2s:1s: the end must come after the start");
        let e = c.set("base-time", Some("1x:")).unwrap_err().to_string();
        assert!(e.starts_with("base_time=1x:: 1x: expected a unit"), "{e}");
        assert_eq!(c.to_query(&Config::default()), "t=1.5s%3A2s");
        let back = Config::from_query("t=1.5s%3A2s&bt=%3A1s").unwrap();
        assert_eq!(back.get("time"), "1.5s:2s");
        assert_eq!(
            back.time_range("base_time").unwrap().unwrap().end,
            Some(1_000_000_000)
        );
        assert!(Config::from_query("t=3s%3A1s").is_err());
        c.clear_filters();
        assert_eq!(c.get("time"), "");
    }

    #[test]
    fn listing_has_every_setting_with_choices() {
        let listing = Config::default().listing(&["samples".into(), "cpu".into()]);
        assert_eq!(listing.lines().count(), SETTINGS.len());
        assert!(listing.contains(
            "  granularity               = functions            //: [addresses | files | functions | lines]"
        ));
        assert!(listing
            .contains("  sample_index              = cpu                  //: [samples | cpu]"));
        assert!(listing.contains("  nodecount                 = -1                   //: default"));
        assert!(listing.contains("  focus                     = \"\""));
    }
}
