//! The shell's command lines: both peers' syntaxes, parsed into a
//! [`Line`] with no side effect (so that the grammar is tested and fuzzed
//! alone).
//!
//! - `name=value` sets a setting for the rest of the session (`focus=RE`,
//!   `nodecount=20`); a boolean or a stand-alone choice alone sets it
//!   (`cum`, `lines`, `drop_negative`), and so does a sample type's name
//!   (`cpu`); `:` clears every filter.
//! - Go pprof's `cmd [n] [focus_re]* [-ignore_re]* [-cum] [> file]`: the
//!   arguments apply to that one command; `topN` is `top N`; several focus
//!   (ignore) regexes are joined with `|`.
//! - perl pprof's forms are the same grammar (`top10 --cum Mutex`,
//!   `list RE -ignore`, `gv focus -ignore`), plus `callgrind [file]`.
//! - `o`/`options`, `help [cmd|setting]`, `quit`/`exit`/`q`.

use crate::commands::{self, CommandDef, Output, COMMANDS, SHELL_WORDS};
use crate::settings::{self, Config, Kind, SETTINGS};

/// What a line asks for.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// Nothing (a blank line or a comment).
    Empty,
    /// Set a setting: `name=value`, or a boolean or choice alone (`value`
    /// `None`). The name is as typed (an alias or a choice).
    Set {
        /// The setting, alias, or stand-alone choice.
        name: String,
        /// The value after `=`.
        value: Option<String>,
    },
    /// `sample_index=NAME` by a sample type's name alone (`cpu`).
    SampleType(String),
    /// `:`: clear every filter.
    ClearFilters,
    /// `o` or `options`.
    Options,
    /// `help` or `help WORD`.
    Help(Option<String>),
    /// `quit`, `exit`, `q`.
    Quit,
    /// A report.
    Report(Invocation),
}

/// A report command with its one-time arguments.
#[derive(Debug, PartialEq)]
pub struct Invocation {
    /// The command.
    pub command: &'static CommandDef,
    /// Its regex (`list RE`).
    pub regex: Option<String>,
    /// `n`: rows or nodes shown.
    pub count: Option<i64>,
    /// Focus regexes, joined with `|`.
    pub focus: Option<String>,
    /// Ignore regexes, joined with `|`.
    pub ignore: Option<String>,
    /// `-cum` (or `--cum`).
    pub cum: bool,
    /// `-flat` (or `--flat`).
    pub flat: bool,
    /// `> file` (or `callgrind file`).
    pub output: Option<String>,
}

impl Invocation {
    /// The settings for this one command: `session`'s, with the command's
    /// own arguments applied (checked as any setting is), and the shell's
    /// default of 10 rows for `top`.
    pub fn config(&self, session: &Config) -> anyhow::Result<Config> {
        let mut config = session.clone();
        if let Some(n) = self.count {
            config.set("nodecount", Some(&n.to_string()))?;
        }
        let (focus_name, ignore_name) = self.filter_names();
        if let Some(focus) = &self.focus {
            config.set(focus_name, Some(focus))?;
        }
        if let Some(ignore) = &self.ignore {
            config.set(ignore_name, Some(ignore))?;
        }
        if self.cum {
            config.set("cum", None)?;
        }
        if self.flat {
            config.set("flat", None)?;
        }
        if let Some(output) = &self.output {
            config.set("output", Some(output))?;
        }
        if self.command.output == Output::Text && config.int("nodecount") == -1 {
            config.set("nodecount", Some("10"))?;
        }
        Ok(config)
    }
}

/// A line the shell cannot take, with a suggestion when a word is close
/// to a known one.
#[derive(Debug, PartialEq, Eq)]
pub struct LineError(pub String);

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LineError {}

/// Parses one shell line; `sample_types` are the loaded profile's (their
/// names alone select them).
pub fn parse(line: &str, sample_types: &[String]) -> Result<Line, LineError> {
    let parsed = parse_grammar(line, sample_types)?;
    if let Line::Report(invocation) = &parsed {
        invocation.check_regexes()?;
    }
    Ok(parsed)
}

/// [`parse`] without compiling a report's regexes: the grammar alone
/// (compiling dominates a parse's time, so the fuzz target `shell_line`
/// runs this millions of times, and `shell_line_regex` the whole).
pub fn parse_grammar(line: &str, sample_types: &[String]) -> Result<Line, LineError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(Line::Empty);
    }
    if line == ":" {
        return Ok(Line::ClearFilters);
    }
    // Assignments: `name=value` (Go: the first `=` splits; a `//:` comment,
    // as `o` prints them, is dropped).
    if let Some((name, value)) = line.split_once('=') {
        let name = name.trim();
        if settings::setting(name).is_some() {
            let value = match value.rfind("//:") {
                Some(comment) => &value[..comment],
                None => value,
            };
            return Ok(Line::Set {
                name: name.to_string(),
                value: Some(value.trim().to_string()),
            });
        }
        if !name.contains(char::is_whitespace) && !name.starts_with(['>', '-']) {
            let mut message = format!("unknown setting \"{name}\"");
            let settings: Vec<String> = SETTINGS.iter().map(|s| format!("{}=", s.name)).collect();
            if let Some(s) = closest(name, &settings) {
                message.push_str(&format!(" (did you mean {s}?)"));
            }
            message.push_str("; type \"o\" for settings");
            return Err(LineError(message));
        }
    }
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let word = tokens[0];
    match word {
        "o" | "options" if tokens.len() == 1 => return Ok(Line::Options),
        "quit" | "exit" | "q" if tokens.len() == 1 => return Ok(Line::Quit),
        "help" => {
            return match tokens.len() {
                1 => Ok(Line::Help(None)),
                2 => Ok(Line::Help(Some(tokens[1].to_string()))),
                _ => Err(LineError(
                    "help takes one word: help [command|setting]".into(),
                )),
            }
        }
        _ => {}
    }
    if tokens.len() == 1 {
        if sample_types.iter().any(|t| t == word) {
            return Ok(Line::SampleType(word.to_string()));
        }
        if settings::choice_group(word).is_some()
            || settings::shorthand(word).is_some()
            || settings::setting(word).is_some_and(|s| matches!(s.kind, Kind::Bool | Kind::Level))
        {
            return Ok(Line::Set {
                name: word.to_string(),
                value: None,
            });
        }
    }
    if let Some(setting) = settings::setting(word) {
        let value = tokens.get(1).copied().unwrap_or("<val>");
        return Err(LineError(format!(
            "{word} is a setting: did you mean {}={value}?",
            setting.name
        )));
    }
    let (command, mut args) = match commands::command(word) {
        Some(c) => (c, tokens[1..].to_vec()),
        None => match split_count(word) {
            // `top10`: the digits are the count.
            Some((name, digits)) => {
                let c = commands::command(name).ok_or_else(|| unknown(word, sample_types))?;
                let mut args = vec![digits];
                args.extend_from_slice(&tokens[1..]);
                (c, args)
            }
            None => return Err(unknown(word, sample_types)),
        },
    };
    let mut invocation = Invocation {
        command,
        regex: None,
        count: None,
        focus: None,
        ignore: None,
        cum: false,
        flat: false,
        output: None,
    };
    if command.takes_regex {
        if args.is_empty() {
            return Err(LineError(format!(
                "{} needs a regular expression: {} {}",
                command.name, command.name, command.usage
            )));
        }
        invocation.regex = Some(args.remove(0).to_string());
    } else if command.output == Output::Timeline {
        // `timeline [RE]`: the first word that is not a count, an ignore
        // regex or a file is the regex highlighted.
        if let Some(first) = args.first() {
            if !first.starts_with(['-', '>']) && first.parse::<i64>().is_err() {
                invocation.regex = Some(args.remove(0).to_string());
            }
        }
    } else if command.output == Output::Callgrind {
        // perl pprof: `callgrind [file]`.
        if let Some(first) = args.first() {
            if !first.starts_with(['-', '>']) && first.parse::<i64>().is_err() {
                invocation.output = Some(args.remove(0).to_string());
            }
        }
    }
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if let Ok(n) = arg.parse::<i64>() {
            if n < 0 {
                return Err(LineError(format!("{arg}: a count must be 0 or more")));
            }
            invocation.count = Some(n);
            continue;
        }
        if let Some(file) = arg.strip_prefix('>') {
            let file = if file.is_empty() {
                let Some(next) = args.get(i) else {
                    return Err(LineError("a file name must follow >".into()));
                };
                i += 1;
                *next
            } else {
                file
            };
            invocation.output = Some(file.to_string());
            continue;
        }
        match arg {
            "-cum" | "--cum" => invocation.cum = true,
            "-flat" | "--flat" => invocation.flat = true,
            _ => match arg.strip_prefix('-') {
                Some(ignore) => {
                    let ignore = ignore.strip_prefix('-').unwrap_or(ignore);
                    if ignore.is_empty() {
                        return Err(LineError(format!("{arg}: an ignore regex must follow -")));
                    }
                    join(&mut invocation.ignore, ignore);
                }
                None => join(&mut invocation.focus, arg),
            },
        }
    }
    Ok(Line::Report(invocation))
}

impl Invocation {
    /// Compiles the focus, ignore and command regexes: an error names the
    /// first that is not one.
    pub fn check_regexes(&self) -> Result<(), LineError> {
        let (focus_name, ignore_name) = self.filter_names();
        for (name, re) in [(focus_name, &self.focus), (ignore_name, &self.ignore)] {
            if let Some(re) = re {
                let setting = settings::setting(name).expect("a filter setting");
                setting.check(re).map_err(|e| LineError(e.to_string()))?;
            }
        }
        if let Some(re) = &self.regex {
            settings::compile_regex(self.command.name, re).map_err(|e| LineError(e.to_string()))?;
        }
        Ok(())
    }

    /// The settings the command's regexes set: `tagfocus`/`tagignore` for
    /// `tags` (as Go pprof's shell), else `focus`/`ignore`.
    fn filter_names(&self) -> (&'static str, &'static str) {
        if self.command.output == Output::Tags {
            ("tagfocus", "tagignore")
        } else {
            ("focus", "ignore")
        }
    }
}

/// `top10` → (`top`, `10`).
fn split_count(word: &str) -> Option<(&str, &str)> {
    let digits = word.len() - word.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && digits < word.len()).then(|| word.split_at(word.len() - digits))
}

/// Joins regexes with `|`, as Go pprof's `catRegex`.
fn join(slot: &mut Option<String>, re: &str) {
    match slot {
        Some(s) => {
            s.push('|');
            s.push_str(re);
        }
        None => *slot = Some(re.to_string()),
    }
}

/// Every word the shell knows: commands, settings, stand-alone choices,
/// its own words, and `sample_types`.
pub fn known_words(sample_types: &[String]) -> Vec<String> {
    let mut words: Vec<String> = COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
        .chain(SHELL_WORDS.iter().map(|(w, _)| *w))
        .chain(["options", "exit"])
        .map(str::to_string)
        .collect();
    for s in SETTINGS {
        words.push(format!("{}=", s.name));
        if s.choices_stand_alone {
            words.extend(s.choices().iter().map(|c| c.to_string()));
        }
    }
    words.extend(settings::SHORTHANDS.iter().map(|s| s.name.to_string()));
    words.extend(sample_types.iter().cloned());
    words
}

/// The unknown-word error, with the closest known word when there is one.
fn unknown(word: &str, sample_types: &[String]) -> LineError {
    let mut message = format!("unrecognized command: \"{word}\"");
    if let Some(suggestion) = closest(word, &known_words(sample_types)) {
        message.push_str(&format!(" (did you mean {suggestion}?)"));
    }
    message.push_str("; type \"help\" for commands");
    LineError(message)
}

/// The word of `candidates` closest to `word`, if close enough to be a
/// typo: at most one edit in four letters, at least one.
pub fn closest<'a>(word: &str, candidates: &'a [String]) -> Option<&'a str> {
    let length = word.chars().count();
    let limit = (length / 4).max(1);
    candidates
        .iter()
        // The lengths' difference is a lower bound of the distance: a long
        // pasted line costs nothing.
        .filter(|c| c.chars().count().abs_diff(length) <= limit + 1)
        .map(|c| {
            let bare = c.trim_end_matches('=');
            (edit_distance(word, bare).min(edit_distance(word, c)), c)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c.as_str())
}

/// Levenshtein distance, with a swap of neighbours counting once.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// The shell's `help`: every command and shell word, one line each.
pub fn help() -> String {
    let mut out = String::from("  Commands:\n");
    for c in COMMANDS {
        let name = if c.aliases.is_empty() {
            c.name.to_string()
        } else {
            format!("{} ({})", c.name, c.aliases.join(", "))
        };
        out.push_str(&format!("    {:<14} {}\n", name, c.help));
    }
    out.push_str("\n  Settings (name=value, persist; \"o\" lists them):\n");
    for s in SETTINGS {
        out.push_str(&format!("    {:<20} {}\n", s.name, s.help));
    }
    out.push('\n');
    for (word, help) in SHELL_WORDS {
        out.push_str(&format!("    {word:<14} {help}\n"));
    }
    out.push_str("\n  type \"help <command|setting>\" for more information\n");
    out
}

/// `help WORD`: a command's syntax and help, or a setting's help, type,
/// default and choices (the table's).
pub fn help_for(word: &str, sample_types: &[String]) -> Result<String, LineError> {
    if let Some(c) = commands::command(word) {
        return Ok(format!("{} {}\n  {}\n", c.name, c.usage, c.help));
    }
    let setting =
        settings::setting(word.trim_end_matches('=')).or_else(|| settings::choice_group(word));
    if let Some(s) = setting {
        let kind = match s.kind {
            Kind::Bool => "true or false".to_string(),
            Kind::Int => "a whole number".to_string(),
            Kind::Float => "a number".to_string(),
            Kind::Regex => "a regular expression".to_string(),
            Kind::Text if s.name == "sample_index" => {
                format!("an index or one of {}", sample_types.join(", "))
            }
            Kind::Text => "text".to_string(),
            Kind::Choice(choices) => format!("one of {}", choices.join(", ")),
            Kind::Level => "a confidence level in percent, or 0 for off".to_string(),
            Kind::Unit => {
                "minimum, auto, or a unit (ns, us, ms, s, hrs; B, kB, MB, GB, TB, PB)".to_string()
            }
            Kind::TimeRange => {
                "START:END, offsets from the profile's start with units (1.5s:2s, :500ms, 2s:)"
                    .to_string()
            }
            Kind::TagFilter => {
                "a label filter: key=RE[,RE], RE[,RE] on key:value, or key=RANGE (bytes=1kb:64kb)"
                    .to_string()
            }
        };
        let default = if s.default.is_empty() {
            "\"\""
        } else {
            s.default
        };
        let mut text = format!(
            "{}={}\n  {}\n  Value: {kind}; default {default}.\n",
            s.name, s.value_name, s.help
        );
        if s.choices_stand_alone {
            text.push_str(&format!(
                "  Each choice alone also sets it: {}.\n",
                s.choices().join(", ")
            ));
        }
        return Ok(text);
    }
    if let Some(s) = settings::shorthand(word) {
        return Ok(format!(
            "{}\n  {}\n  Sets {}.\n",
            s.name,
            s.help,
            s.describe()
        ));
    }
    if let Some((_, help)) = SHELL_WORDS.iter().find(|(w, _)| *w == word) {
        return Ok(format!("{word}\n  {help}\n"));
    }
    let mut message = format!("no command or setting \"{word}\"");
    if let Some(s) = closest(word, &known_words(sample_types)) {
        message.push_str(&format!(" (did you mean {s}?)"));
    }
    Err(LineError(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types() -> Vec<String> {
        vec!["samples".into(), "cpu".into()]
    }

    fn report(line: &str) -> Invocation {
        match parse(line, &types()) {
            Ok(Line::Report(i)) => i,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn go_syntax() {
        let i = report("top 5 burn -cpu_now -cum > out.txt");
        assert_eq!(i.command.name, "top");
        assert_eq!(i.count, Some(5));
        assert_eq!(i.focus.as_deref(), Some("burn"));
        assert_eq!(i.ignore.as_deref(), Some("cpu_now"));
        assert!(i.cum);
        assert_eq!(i.output.as_deref(), Some("out.txt"));
        let i = report("top10 a b -c -d >f");
        assert_eq!(i.count, Some(10));
        assert_eq!(i.focus.as_deref(), Some("a|b"));
        assert_eq!(i.ignore.as_deref(), Some("c|d"));
        assert_eq!(i.output.as_deref(), Some("f"));
        let i = report("list burn_b -main");
        assert_eq!(i.regex.as_deref(), Some("burn_b"));
        assert_eq!(i.ignore.as_deref(), Some("main"));
        assert_eq!(report("text").command.name, "top");
    }

    #[test]
    fn perl_syntax() {
        let i = report("top10 --cum Mutex");
        assert_eq!(
            (i.count, i.cum, i.focus.as_deref()),
            (Some(10), true, Some("Mutex"))
        );
        let i = report("gv focus -ignore");
        assert_eq!(
            (i.focus.as_deref(), i.ignore.as_deref()),
            (Some("focus"), Some("ignore"))
        );
        let i = report("callgrind out.callgrind");
        assert_eq!(i.output.as_deref(), Some("out.callgrind"));
        assert_eq!(parse("quit", &types()), Ok(Line::Quit));
    }

    #[test]
    fn settings_and_words() {
        assert_eq!(
            parse("focus=burn.*", &types()),
            Ok(Line::Set {
                name: "focus".into(),
                value: Some("burn.*".into())
            })
        );
        assert_eq!(
            parse("nodecount = 20   //: default", &types()),
            Ok(Line::Set {
                name: "nodecount".into(),
                value: Some("20".into())
            })
        );
        assert_eq!(
            parse("cum", &types()),
            Ok(Line::Set {
                name: "cum".into(),
                value: None
            })
        );
        assert_eq!(
            parse("lines", &types()),
            Ok(Line::Set {
                name: "lines".into(),
                value: None
            })
        );
        assert_eq!(parse("cpu", &types()), Ok(Line::SampleType("cpu".into())));
        assert_eq!(parse(":", &types()), Ok(Line::ClearFilters));
        assert_eq!(parse("o", &types()), Ok(Line::Options));
        assert_eq!(
            parse("help top", &types()),
            Ok(Line::Help(Some("top".into())))
        );
        assert_eq!(parse("   ", &types()), Ok(Line::Empty));
    }

    #[test]
    fn errors_are_one_line_with_suggestions() {
        let e = parse("tpo", &types()).unwrap_err().0;
        assert_eq!(
            e,
            "unrecognized command: \"tpo\" (did you mean top?); type \"help\" for commands"
        );
        let e = parse("focus burn", &types()).unwrap_err().0;
        assert_eq!(e, "focus is a setting: did you mean focus=burn?");
        let e = parse("focsu=x", &types()).unwrap_err().0;
        assert!(e.contains("did you mean focus=?"), "{e}");
        let e = parse("list", &types()).unwrap_err().0;
        assert!(e.starts_with("list needs a regular expression"), "{e}");
        let e = parse("top (", &types()).unwrap_err().0;
        assert!(e.starts_with("focus=(: invalid regular expression"), "{e}");
        assert!(parse("top >", &types()).is_err());
        assert!(parse("top -", &types()).is_err());
        assert!(parse("top -5", &types()).is_err(), "a negative count");
        for line in ["tpo", "list", "top (", "frobnicate x y"] {
            assert!(!parse(line, &types()).unwrap_err().0.contains('\n'));
        }
    }

    #[test]
    fn invocation_config_is_local_and_top_shows_ten() {
        let session = Config::default();
        let c = report("top").config(&session).unwrap();
        assert_eq!(c.int("nodecount"), 10);
        let c = report("tree").config(&session).unwrap();
        assert_eq!(c.int("nodecount"), -1);
        let c = report("top 3 x -cum").config(&session).unwrap();
        assert_eq!(
            (c.int("nodecount"), c.get("focus"), c.get("sort")),
            (3, "x", "cum")
        );
        assert_eq!(session, Config::default());
    }

    #[test]
    fn closest_words() {
        let words = known_words(&types());
        assert_eq!(closest("lsit", &words), Some("list"));
        assert_eq!(closest("focsu", &words), Some("focus="));
        assert_eq!(closest("zzzzzz", &words), None);
    }

    #[test]
    fn help_covers_every_command_and_setting() {
        let h = help();
        for c in COMMANDS {
            assert!(h.contains(c.name), "{}", c.name);
            assert!(help_for(c.name, &types()).is_ok());
        }
        for s in SETTINGS {
            assert!(h.contains(s.name), "{}", s.name);
            let text = help_for(s.name, &types()).unwrap();
            assert!(text.contains(s.help), "{}", s.name);
        }
        assert!(help_for("nope", &types()).is_err());
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn types() -> Vec<String> {
        vec!["samples".into(), "cpu".into()]
    }

    proptest! {
        /// Any line parses or is refused in one line; never a panic.
        #[test]
        fn any_line_parses_or_fails_in_one_line(line in "\\PC{0,60}") {
            match parse(&line, &types()) {
                Ok(Line::Report(i)) => { i.config(&Config::default()).unwrap(); }
                Ok(_) => {}
                Err(e) => prop_assert!(!e.0.contains('\n')),
            }
        }

        /// A command line written from its parts parses back to them.
        #[test]
        fn written_invocations_parse_back(
            command in proptest::sample::select(
                COMMANDS.iter().filter(|c| !c.takes_regex && !matches!(c.output, Output::Callgrind | Output::Timeline))
                    .map(|c| c.name).collect::<Vec<_>>()),
            count in proptest::option::of(0i64..1000),
            focus in proptest::collection::vec("[a-z_][a-z_0-9]{0,8}", 0..3),
            ignore in proptest::collection::vec("[a-z_][a-z_0-9]{0,8}", 0..3),
            cum in any::<bool>(),
            output in proptest::option::of("[a-z]{1,8}\\.out"),
        ) {
            let mut words = vec![command.to_string()];
            if let Some(n) = count { words.push(n.to_string()); }
            words.extend(focus.iter().cloned());
            words.extend(ignore.iter().map(|i| format!("-{i}")));
            if cum { words.push("-cum".into()); }
            if let Some(o) = &output { words.push(format!("> {o}")); }
            let Ok(Line::Report(i)) = parse(&words.join(" "), &types()) else {
                return Err(TestCaseError::fail(format!("{words:?}")));
            };
            prop_assert_eq!(i.command.name, command);
            prop_assert_eq!(i.count, count);
            prop_assert_eq!(i.focus, (!focus.is_empty()).then(|| focus.join("|")));
            prop_assert_eq!(i.ignore, (!ignore.is_empty()).then(|| ignore.join("|")));
            prop_assert_eq!(i.cum, cum);
            prop_assert_eq!(i.output, output);
        }

        /// `name=value` of every setting parses to that assignment, and
        /// setting it agrees with the table's check.
        #[test]
        fn assignments_parse_to_the_setting(
            setting in proptest::sample::select(SETTINGS.iter().collect::<Vec<_>>()),
            value in "[a-z0-9_.|]{0,10}",
        ) {
            let line = format!("{}={value}", setting.name);
            prop_assert_eq!(
                parse(&line, &types()),
                Ok(Line::Set { name: setting.name.to_string(), value: Some(value.clone()) })
            );
            let mut config = Config::default();
            prop_assert_eq!(config.set(setting.name, Some(&value)).is_ok(), setting.check(&value).is_ok());
        }
    }
}
