//! Sample labels (tags): Go pprof's `pprof.Do` labels, Pyroscope's, the
//! cpuprof agent's `thread_id`/`thread_name`/`state`, any profile.proto's.
//!
//! - [`TagFilter`]: `--tagfocus`/`--tagignore`, in Go pprof's syntax
//!   (`key=regex[,regex]`, `regex[,regex]` on `key:value`, numeric ranges
//!   with units `bytes=1kb:64kb`);
//! - [`TagOptions`]: those filters, `--tagshow`/`--taghide` (which keys are
//!   shown) and `--tagroot`/`--tagleaf` (labels as pseudo-frames);
//! - [`LabelFormat`]: label values as Go prints them (numbers scaled by
//!   their unit, `4kB`, `1.50ms`), shared by `--tags`
//!   ([`crate::output::tags`]), `--traces` and the pseudo-frames.
//!
//! Go pprof's rules, kept here: without a key, every comma-separated regex
//! must match some `key:value` of the sample; with a key, any regex
//! matching any value of that key keeps it. A value like `32kb`, `:64kb`,
//! `4mb:` or `12kb:64mb` is a range (with a unit: digits alone are a
//! regex) and matches numeric labels only, scaled through their unit (the
//! label's unit, else its key, as Go does: `bytes=1kb:`). One extension:
//! regexes also match numeric labels' values as `--tags` prints them
//! (`thread_id=^1234$`); Go's regexes see string labels only.

use std::fmt;

use cpuprof_profile::{Label, LabelValue, Profile};
use regex::Regex;
use rustc_hash::FxHashMap;

use crate::measure::{scale, scaled_label};

/// A malformed `--tagfocus`/`--tagignore` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TagFilterError {
    /// The option (`tagfocus`, `tagignore`).
    pub option: String,
    /// The value given.
    pub value: String,
    /// What is wrong, one line.
    pub reason: String,
}

impl fmt::Display for TagFilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}: {}", self.option, self.value, self.reason)
    }
}

impl std::error::Error for TagFilterError {}

/// What a [`TagFilter`] compares label values with.
#[derive(Clone, Debug)]
enum Matcher {
    /// Regexes on string values (and on numeric ones as printed).
    Regexes(Vec<Regex>),
    /// A numeric range: values scaled to `unit`, within `[low, high]`.
    Range(NumRange),
}

/// A numeric range of a tag filter, in one unit.
#[derive(Clone, Debug, PartialEq)]
struct NumRange {
    unit: String,
    low: Option<f64>,
    high: Option<f64>,
}

/// `--tagfocus`/`--tagignore`: which samples' labels match.
#[derive(Clone, Debug)]
pub struct TagFilter {
    key: Option<String>,
    matcher: Matcher,
}

impl TagFilter {
    /// Parses `value`, the `option`'s (named in errors), in Go pprof's
    /// syntax (see the module documentation).
    pub fn parse(option: &str, value: &str) -> Result<TagFilter, TagFilterError> {
        let error = |reason: String| TagFilterError {
            option: option.to_string(),
            value: value.to_string(),
            reason,
        };
        if value.is_empty() {
            return Err(error("expected key=regex, regex or key=range".to_string()));
        }
        let (key, rest) = match value.split_once('=') {
            Some((key, rest)) => (Some(key.to_string()), rest),
            None => (None, value),
        };
        if key.as_deref() == Some("") {
            return Err(error("the key before '=' is empty".to_string()));
        }
        if let Some(range) = parse_range(rest) {
            return Ok(TagFilter {
                key,
                matcher: Matcher::Range(range),
            });
        }
        let mut regexes = Vec::new();
        for part in rest.split(',') {
            let re = Regex::new(part).map_err(|e| {
                let message = e.to_string();
                let last = message.lines().last().unwrap_or("").trim();
                let last = last.strip_prefix("error: ").unwrap_or(last);
                error(format!("invalid regular expression {part:?}: {last}"))
            })?;
            regexes.push(re);
        }
        Ok(TagFilter {
            key,
            matcher: Matcher::Regexes(regexes),
        })
    }

    /// True when the filter is a numeric range (Go says so on stderr).
    pub fn is_range(&self) -> bool {
        matches!(self.matcher, Matcher::Range(_))
    }

    /// True when a sample with `labels` matches.
    pub fn matches(&self, labels: &[Label]) -> bool {
        match &self.matcher {
            Matcher::Range(range) => labels.iter().any(|l| {
                let LabelValue::Num { value, unit } = &l.value else {
                    return false;
                };
                if self.key.as_deref().is_some_and(|k| k != l.key) {
                    return false;
                }
                // Go scales through the key (`bytes=1kb:`); a label's own
                // unit comes first here.
                let unit = if unit.is_empty() { &*l.key } else { unit };
                range.contains(*value, unit)
            }),
            Matcher::Regexes(regexes) => match &self.key {
                None => regexes.iter().all(|re| {
                    labels.iter().any(|l| {
                        let text = format!("{}:{}", l.key, value_text(&l.value));
                        re.is_match(&text)
                    })
                }),
                Some(key) => labels
                    .iter()
                    .filter(|l| &l.key == key)
                    .any(|l| regexes.iter().any(|re| re.is_match(&value_text(&l.value)))),
            },
        }
    }
}

/// A label's value as a regex sees it: the string, or the number as
/// printed with its own unit.
fn value_text(value: &LabelValue) -> String {
    match value {
        LabelValue::Str(s) => s.clone(),
        LabelValue::Num { value, unit } => scaled_label(*value, unit, "auto"),
    }
}

/// Go's range syntax: `NU`, `NU:`, `:NU`, `NU:MU` where N, M are digits
/// and U, M's unit letters; `None` when `text` is not one (a regex).
fn parse_range(text: &str) -> Option<NumRange> {
    // The first two digits-then-letters runs, as Go's
    // `([[:digit:]]+)([[:alpha:]]+)` finds them.
    let bytes = text.as_bytes();
    let mut found: Vec<(usize, usize, usize)> = Vec::new(); // start, letters start, end
    let mut i = 0;
    while i < bytes.len() && found.len() < 2 {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let letters = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            if i > letters {
                found.push((start, letters, i));
            }
        } else {
            i += 1;
        }
    }
    let number = |(start, letters, end): (usize, usize, usize)| -> Option<(i64, &str)> {
        Some((text[start..letters].parse().ok()?, &text[letters..end]))
    };
    let whole = |(start, _, end): (usize, usize, usize)| &text[start..end];
    let (&first, rest) = found.split_first()?;
    let (n, u) = number(first)?;
    let (low_value, unit) = scale(n, u, u);
    match rest.first() {
        None => {
            let m = whole(first);
            let (low, high) = if text == m {
                (Some(low_value), Some(low_value))
            } else if text == format!("{m}:") {
                (Some(low_value), None)
            } else if text == format!(":{m}") {
                (None, Some(low_value))
            } else {
                return None;
            };
            Some(NumRange { unit, low, high })
        }
        Some(&second) => {
            if text != format!("{}:{}", whole(first), whole(second)) {
                return None;
            }
            let (n2, u2) = number(second)?;
            let (high_value, unit2) = scale(n2, u2, &unit);
            if unit2 != unit {
                return None;
            }
            Some(NumRange {
                unit,
                low: Some(low_value),
                high: Some(high_value),
            })
        }
    }
}

impl NumRange {
    fn contains(&self, value: i64, unit: &str) -> bool {
        let (v, u) = scale(value, unit, &self.unit);
        u == self.unit
            && self.low.is_none_or(|low| v >= low)
            && self.high.is_none_or(|high| v <= high)
    }
}

/// The unit of each numeric label key, as Go pprof infers it: the unit
/// its values carry, else `bytes` for `alignment` and `request`, else
/// the key itself.
pub fn num_label_units(profile: &Profile) -> FxHashMap<String, String> {
    let mut units: FxHashMap<String, String> = FxHashMap::default();
    for sample in &profile.samples {
        for label in &sample.labels {
            if let LabelValue::Num { unit, .. } = &label.value {
                // The first unit given wins; a key is copied once.
                match units.get_mut(&*label.key) {
                    Some(known) if known.is_empty() => known.push_str(unit),
                    Some(_) => {}
                    None => {
                        units.insert(label.key.to_string(), unit.to_string());
                    }
                }
            }
        }
    }
    for (key, unit) in units.iter_mut() {
        if unit.is_empty() {
            *unit = match key.as_str() {
                "alignment" | "request" => "bytes".to_string(),
                _ => key.clone(),
            };
        }
    }
    units
}

/// Prints label values as Go pprof does in `-tags` and `-traces`:
/// strings as they are, numbers scaled by their key's unit.
#[derive(Clone, Debug, Default)]
pub struct LabelFormat {
    units: FxHashMap<String, String>,
}

impl LabelFormat {
    /// The format of `profile`'s labels.
    pub fn new(profile: &Profile) -> LabelFormat {
        LabelFormat {
            units: num_label_units(profile),
        }
    }

    /// `label`'s value as printed.
    pub fn value(&self, label: &Label) -> String {
        match &label.value {
            LabelValue::Str(s) => s.clone(),
            LabelValue::Num { value, .. } => {
                let unit = self.units.get(&*label.key).map_or("", String::as_str);
                scaled_label(*value, unit, "auto")
            }
        }
    }
}

/// The label options of a report.
#[derive(Clone, Debug, Default)]
pub struct TagOptions {
    /// Keep only samples whose labels match.
    pub focus: Option<TagFilter>,
    /// Drop samples whose labels match.
    pub ignore: Option<TagFilter>,
    /// Show only labels whose key matches.
    pub show: Option<Regex>,
    /// Do not show labels whose key matches.
    pub hide: Option<Regex>,
    /// Keys whose values become pseudo-frames at the root, first key
    /// outermost.
    pub root: Vec<String>,
    /// Keys whose values become pseudo-frames at the leaf, last key
    /// innermost.
    pub leaf: Vec<String>,
}

impl TagOptions {
    /// True when a sample with `labels` passes `focus` and `ignore`.
    pub fn keeps(&self, labels: &[Label]) -> bool {
        self.focus.as_ref().is_none_or(|f| f.matches(labels))
            && !self.ignore.as_ref().is_some_and(|f| f.matches(labels))
    }

    /// True when a label with `key` is shown (`show`, `hide`).
    pub fn shows(&self, key: &str) -> bool {
        self.show.as_ref().is_none_or(|re| re.is_match(key))
            && !self.hide.as_ref().is_some_and(|re| re.is_match(key))
    }

    /// True when any sample filter is set.
    pub fn filters_samples(&self) -> bool {
        self.focus.is_some() || self.ignore.is_some()
    }

    /// True when `--tagroot` or `--tagleaf` adds pseudo-frames.
    pub fn adds_frames(&self) -> bool {
        !self.root.is_empty() || !self.leaf.is_empty()
    }

    /// True when any label option is set.
    pub fn any(&self) -> bool {
        self.filters_samples() || self.show.is_some() || self.hide.is_some() || self.adds_frames()
    }

    /// The pseudo-frame name of `key` in a sample with `labels`: its
    /// values joined with `,` (strings first, then numbers with their own
    /// unit, as Go pprof's `-tagroot`, which makes them before
    /// `-tagshow`/`-taghide` apply), `None` when it has none.
    pub fn frame_name(&self, labels: &[Label], key: &str) -> Option<String> {
        let of_key = || labels.iter().filter(|l| l.key == key);
        let strings = of_key().filter_map(|l| match &l.value {
            LabelValue::Str(s) => Some(s.clone()),
            LabelValue::Num { .. } => None,
        });
        let numbers = of_key()
            .filter(|l| matches!(l.value, LabelValue::Num { .. }))
            .map(|l| value_text(&l.value));
        let values: Vec<String> = strings.chain(numbers).collect();
        (!values.is_empty()).then(|| values.join(","))
    }
}

/// The name Go pprof prints for a frame without a name, as a pseudo-frame
/// of a sample without the label is.
pub const NO_VALUE: &str = "<unknown>";

/// Parses a `--tagroot`/`--tagleaf` list: keys separated by commas.
pub fn parse_keys(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect()
}

/// The lines Go pprof's `-traces` prints above a sample's stack: one per
/// shown key, `%10s:  values` (values joined by a space), string labels
/// first, each group sorted by its lines.
pub fn trace_lines(labels: &[Label], format: &LabelFormat, options: &TagOptions) -> String {
    let mut groups: [Vec<(&str, Vec<String>)>; 2] = [Vec::new(), Vec::new()];
    for label in labels {
        if !options.shows(&label.key) {
            continue;
        }
        let group = &mut groups[matches!(label.value, LabelValue::Num { .. }) as usize];
        let value = format.value(label);
        match group.iter_mut().find(|(k, _)| *k == label.key) {
            Some((_, values)) => values.push(value),
            None => group.push((&label.key, vec![value])),
        }
    }
    let mut text = String::new();
    for group in groups {
        let mut lines: Vec<String> = group
            .into_iter()
            .map(|(key, values)| format!("{key:>10}:  {}\n", values.join(" ")))
            .collect();
        lines.sort();
        lines.into_iter().for_each(|l| text.push_str(&l));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn s(key: &str, value: &str) -> Label {
        Label::str(key.to_string(), value)
    }

    fn n(key: &str, value: i64, unit: &str) -> Label {
        Label::num(key.to_string(), value, unit.to_string())
    }

    fn matches(filter: &str, labels: &[Label]) -> bool {
        TagFilter::parse("tagfocus", filter)
            .unwrap()
            .matches(labels)
    }

    #[test]
    fn key_and_regexes_any_of_them() {
        let labels = [s("worker", "a"), s("kind", "heavy")];
        assert!(matches("worker=a", &labels));
        assert!(matches("worker=^a$", &labels));
        assert!(matches("worker=x,a", &labels));
        assert!(!matches("worker=b", &labels));
        assert!(!matches("kind=z", &labels));
        assert!(!matches("other=a", &labels));
        // Unanchored, as Go's MatchString.
        assert!(matches("kind=ea", &labels));
    }

    #[test]
    fn no_key_every_regex_on_key_colon_value() {
        let labels = [s("worker", "a"), s("kind", "heavy")];
        assert!(matches("worker:a", &labels));
        assert!(matches("heavy", &labels));
        assert!(matches("worker:a,kind:heavy", &labels));
        assert!(!matches("worker:a,kind:light", &labels));
        assert!(!matches("light", &labels));
        assert!(!matches("light", &[]));
    }

    #[test]
    fn ranges_with_units() {
        let labels = [n("bytes", 4096, "")];
        assert!(matches("bytes=4kb", &labels));
        assert!(matches("bytes=1kb:", &labels));
        assert!(matches("bytes=:4kb", &labels));
        assert!(!matches("bytes=:3kb", &labels));
        assert!(matches("bytes=1kb:1mb", &labels));
        assert!(!matches("bytes=5kb:1mb", &labels));
        assert!(matches("4096b", &labels));
        assert!(!matches("other=1kb:", &labels));
        // The label's own unit before its key.
        assert!(matches(
            "size=1ms:2ms",
            &[n("size", 1_500_000, "nanoseconds")]
        ));
        assert!(!matches("size=1ms:2ms", &[n("size", 1_500, "bytes")]));
        // Ranges never match strings.
        assert!(!matches("bytes=1kb:", &[s("bytes", "4096")]));
        assert!(TagFilter::parse("tagfocus", "bytes=1kb:")
            .unwrap()
            .is_range());
    }

    #[test]
    fn what_is_not_a_range_is_a_regex() {
        for text in ["32", "a1b", "1kb:2kb:3kb", "1kb-2kb", "x=1:2", "4kb:1ms"] {
            let f = TagFilter::parse("tagfocus", text).unwrap();
            assert!(!f.is_range(), "{text}");
        }
        // Numbers as printed, for numeric labels without units.
        assert!(matches("thread_id=^1234$", &[n("thread_id", 1234, "")]));
        assert!(matches("thread_id:1234", &[n("thread_id", 1234, "")]));
    }

    #[test]
    fn bad_filters_name_the_option() {
        let e = TagFilter::parse("tagfocus", "=(").unwrap_err();
        assert_eq!(e.to_string(), "tagfocus==(: the key before '=' is empty");
        let e = TagFilter::parse("tagignore", "k=(")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("tagignore=k=(: invalid regular expression \"(\""),
            "{e}"
        );
        assert!(!e.contains('\n'));
        assert!(TagFilter::parse("tagfocus", "").is_err());
    }

    #[test]
    fn trace_lines_as_go_prints_them() {
        let labels = [
            s("worker", "a"),
            s("kind", "heavy"),
            n("bytes", 2048, ""),
            s("worker", "b"),
        ];
        let format = LabelFormat::default();
        let text = trace_lines(&labels, &format, &TagOptions::default());
        assert_eq!(
            text,
            "      kind:  heavy\n    worker:  a b\n     bytes:  2048\n"
        );
        let hide = TagOptions {
            hide: Some(Regex::new("kind").unwrap()),
            ..Default::default()
        };
        assert_eq!(
            trace_lines(&labels, &format, &hide),
            "    worker:  a b\n     bytes:  2048\n"
        );
    }

    #[test]
    fn frame_names_join_values() {
        let labels = [s("worker", "a"), n("worker", 3, ""), s("worker", "b")];
        let o = TagOptions::default();
        assert_eq!(o.frame_name(&labels, "worker").as_deref(), Some("a,b,3"));
        assert_eq!(o.frame_name(&labels, "kind"), None);
        assert_eq!(parse_keys("a, b,,c"), vec!["a", "b", "c"]);
    }

    proptest! {
        #[test]
        fn parse_never_panics(text in ".{0,40}") {
            let _ = TagFilter::parse("tagfocus", &text).map(|f| f.matches(&[s("k", "v"), n("bytes", 5, "")]));
        }

        #[test]
        fn key_filter_is_the_keys_values(key in "[a-z]{1,8}", value in "[a-z]{1,8}", other in "[a-z]{1,8}") {
            let labels = [s(&key, &value)];
            let exact = format!("{key}=^{value}$");
            let other_filter = format!("{key}=^{other}$");
            let any_key = format!("^{key}:{value}$");
            prop_assert!(matches(&exact, &labels));
            prop_assert_eq!(matches(&other_filter, &labels), other == value);
            prop_assert!(matches(&any_key, &labels));
        }

        #[test]
        fn byte_ranges_agree_with_arithmetic(v in 0i64..1 << 30, lo in 0i64..1024, hi in 0i64..1024) {
            let labels = [n("bytes", v, "")];
            let kb = |x: i64| x * 1024;
            let (from, to, both) = (
                format!("bytes={lo}kb:"),
                format!("bytes=:{hi}kb"),
                format!("bytes={lo}kb:{hi}kb"),
            );
            prop_assert_eq!(matches(&from, &labels), v >= kb(lo));
            prop_assert_eq!(matches(&to, &labels), v <= kb(hi));
            prop_assert_eq!(matches(&both, &labels), v >= kb(lo) && v <= kb(hi));
        }
    }
}
