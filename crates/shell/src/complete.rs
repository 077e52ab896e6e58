//! Tab completion: of the first word (commands, settings as `name=`,
//! stand-alone choices, sample types, the shell's words), of a setting's
//! value after `name=` (its choices; function names for the regex
//! settings), of `help`'s word, and of function names wherever a command
//! takes a regex (`list`, `peek`, focus and `-ignore` arguments).
//! Function names are inserted as regexes matching them literally.

use cpuprof_driver::commands::{self, COMMANDS};
use cpuprof_driver::settings::{self, Kind, SETTINGS};

/// What can be completed.
pub struct Vocabulary {
    /// First words.
    first: Vec<String>,
    /// `help`'s words.
    help: Vec<String>,
    /// The profile's function names, sorted.
    functions: Vec<String>,
}

impl Vocabulary {
    /// The words of the tables, the profile's `sample_types` and its
    /// `functions`.
    pub fn new(sample_types: &[String], mut functions: Vec<String>) -> Vocabulary {
        let mut first = cpuprof_driver::line::known_words(sample_types);
        first.sort_unstable();
        first.dedup();
        let mut help: Vec<String> = COMMANDS
            .iter()
            .map(|c| c.name.to_string())
            .chain(SETTINGS.iter().map(|s| s.name.to_string()))
            .collect();
        help.sort_unstable();
        functions.sort_unstable();
        functions.dedup();
        Vocabulary {
            first,
            help,
            functions,
        }
    }
}

/// Completes the word before the cursor (`line` is the text up to it):
/// where the word starts, and the candidates as (shown, inserted).
pub fn complete(line: &str, vocabulary: &Vocabulary) -> (usize, Vec<(String, String)>) {
    let start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let word = &line[start..];
    let before: Vec<&str> = line[..start].split_whitespace().collect();
    if before.is_empty() {
        if let Some((name, value)) = word.split_once('=') {
            let value_start = start + name.len() + 1;
            return (value_start, setting_values(name, value, vocabulary));
        }
        return (start, words(&vocabulary.first, word));
    }
    let first = before[0];
    if first == "help" && before.len() == 1 {
        return (start, words(&vocabulary.help, word));
    }
    let Some(command) = commands::command(first).or_else(|| {
        // `top10 ...`
        let bare = first.trim_end_matches(|c: char| c.is_ascii_digit());
        commands::command(bare)
    }) else {
        return (start, Vec::new());
    };
    if command.takes_regex && before.len() == 1 && word.starts_with('-') {
        // The command's own regex comes first.
        return (start, Vec::new());
    }
    if before.last().is_some_and(|b| b.starts_with('>')) {
        // A file name.
        return (start, Vec::new());
    }
    // A regex argument, a focus regex, or `-ignore`.
    match word.strip_prefix('-') {
        Some(rest) if !rest.starts_with('-') => (start + 1, functions(vocabulary, rest)),
        Some(_) => (start, Vec::new()),
        None if word.starts_with('>') => (start, Vec::new()),
        None => (start, functions(vocabulary, word)),
    }
}

/// Candidates among `list` starting with `prefix`.
fn words(list: &[String], prefix: &str) -> Vec<(String, String)> {
    list.iter()
        .filter(|w| w.starts_with(prefix))
        .map(|w| (w.clone(), w.clone()))
        .collect()
}

/// The values of setting `name` starting with `prefix`.
fn setting_values(name: &str, prefix: &str, vocabulary: &Vocabulary) -> Vec<(String, String)> {
    let Some(setting) = settings::setting(name) else {
        return Vec::new();
    };
    match setting.kind {
        Kind::Choice(choices) => choices
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| (c.to_string(), c.to_string()))
            .collect(),
        Kind::Bool => ["true", "false"]
            .iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| (c.to_string(), c.to_string()))
            .collect(),
        Kind::Regex => functions(vocabulary, prefix),
        _ => Vec::new(),
    }
}

/// The function names starting with `prefix` (as typed, or as the regex
/// that matches it literally), each inserted as a literal regex.
fn functions(vocabulary: &Vocabulary, prefix: &str) -> Vec<(String, String)> {
    let unescaped = unescape(prefix);
    let first = vocabulary
        .functions
        .partition_point(|f| f.as_str() < unescaped.as_str());
    vocabulary.functions[first..]
        .iter()
        .take_while(|f| f.starts_with(unescaped.as_str()))
        .take(500)
        .map(|f| (f.clone(), regex::escape(f)))
        .collect()
}

/// A regex typed so far, with `\` escapes removed (`std::vector<int>::\(`
/// is the name prefix `std::vector<int>::(`).
fn unescape(typed: &str) -> String {
    let mut out = String::with_capacity(typed.len());
    let mut chars = typed.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Vocabulary {
        Vocabulary::new(
            &["samples".into(), "cpu".into()],
            vec![
                "burn_a".into(),
                "burn_b".into(),
                "main".into(),
                "std::vector<int>::push_back(int const&)".into(),
            ],
        )
    }

    fn inserted(line: &str) -> Vec<String> {
        complete(line, &vocabulary())
            .1
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    }

    #[test]
    fn commands_settings_and_choices() {
        // The shorthands of the settings table are words too.
        assert_eq!(inserted("to"), ["top", "total_delay"]);
        assert_eq!(inserted("mean_"), ["mean_delay"]);
        assert_eq!(inserted("foc"), ["focus="]);
        assert_eq!(inserted("li"), ["lines", "list"]);
        assert!(inserted("c").contains(&"cum".to_string()));
        assert!(inserted("c").contains(&"cpu".to_string()));
        assert_eq!(inserted("granularity=a"), ["addresses"]);
        assert_eq!(
            complete("granularity=a", &vocabulary()).0,
            "granularity=".len()
        );
        assert_eq!(inserted("help tr"), ["traces", "tree", "trim_path"]);
    }

    #[test]
    fn function_names() {
        assert_eq!(inserted("list bu"), ["burn_a", "burn_b"]);
        assert_eq!(inserted("top10 ma"), ["main"]);
        assert_eq!(inserted("peek burn_a -ma"), ["main"]);
        assert_eq!(
            complete("peek burn_a -ma", &vocabulary()).0,
            "peek burn_a -".len()
        );
        assert_eq!(inserted("focus=burn_"), ["burn_a", "burn_b"]);
        assert_eq!(
            inserted("list std::vector<int>::push_back\\("),
            ["std::vector<int>::push_back\\(int const\\&\\)"]
        );
        assert!(inserted("top > ma").is_empty());
        assert!(inserted("frob ma").is_empty());
    }
}
