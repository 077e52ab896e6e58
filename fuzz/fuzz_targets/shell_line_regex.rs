//! The shell's command lines as the shell runs them: `line::parse` with
//! the regexes compiled, and the settings applied (compiling dominates,
//! so this runs to a time bound; the grammar alone is `shell_line`). Any
//! line gives a line or a one-line error, never a panic; a report's
//! one-time settings, applied to the session's, pass the settings table's
//! own checks; a `name=value` it accepts either sets the setting or is
//! refused in one line.
#![no_main]
use cpuprof_driver::line::{self, Line};
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
        match line::parse(input, &types) {
            Ok(Line::Report(invocation)) => {
                // Checked in parse: the per-command settings are valid.
                invocation
                    .config(&Config::default())
                    .expect("parse checked the arguments");
            }
            Ok(Line::Set { name, value }) => {
                let mut config = Config::default();
                if let Err(e) = config.set(&name, value.as_deref()) {
                    assert!(!e.to_string().contains('\n'), "{e}");
                }
            }
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
