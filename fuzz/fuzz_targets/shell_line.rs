//! The shell's command-line grammar (`line::parse_grammar`: `line::parse`
//! without compiling regexes, which dominates its time; the whole is
//! `shell_line_regex`): any line gives a line or a one-line error, never a
//! panic; a report's arguments are what the grammar says (a regex exactly
//! when the command takes one, counts of 0 or more, no empty focus,
//! ignore or file name); a `name=value` or a word alone that sets a
//! setting names one of the table; settings with no regex in them are
//! applied and accepted or refused in one line.
#![no_main]
use cpuprof_driver::line::{self, Line};
use cpuprof_driver::settings::{self, Kind};
use cpuprof_driver::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let types = ["samples".to_string(), "cpu".to_string()];
    // One input is one line, as the shell reads it: an input of many
    // lines would pay for each line's unknown-word suggestions (an edit
    // distance to every known word) in one execution.
    if let Some(input) = text.lines().next() {
        match line::parse_grammar(input, &types) {
            Ok(Line::Report(invocation)) => {
                assert_eq!(invocation.regex.is_some(), invocation.command.takes_regex);
                assert!(invocation.count.is_none_or(|n| n >= 0));
                for re in [&invocation.focus, &invocation.ignore, &invocation.output] {
                    assert!(re.as_ref().is_none_or(|r| !r.is_empty()));
                }
            }
            Ok(Line::Set { name, value }) => {
                let setting = settings::choice_group(&name).or_else(|| settings::setting(&name));
                let setting = setting.expect("a setting of the table");
                if !matches!(setting.kind, Kind::Regex | Kind::TagFilter) {
                    let mut config = Config::default();
                    if let Err(e) = config.set(&name, value.as_deref()) {
                        assert!(!e.to_string().contains('\n'), "{e}");
                    }
                }
            }
            Ok(Line::SampleType(name)) => assert!(types.contains(&name)),
            Ok(Line::Help(Some(word))) => {
                if let Err(e) = line::help_for(&word, &types) {
                    assert!(!e.0.contains('\n'));
                }
            }
            Ok(_) => {}
            Err(e) => assert!(!e.0.contains('\n'), "{e}"),
        }
    }
});
