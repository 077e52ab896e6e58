//! `--tagfocus`/`--tagignore` values (Go pprof's tag filter grammar) must
//! parse into a filter or a one-line error naming the option, never
//! panic; a filter matches any labels without panicking, and the
//! settings table's check agrees with the parser.
#![no_main]
use cpuprof_profile::Label;
use cpuprof_report::measure::scaled_label;
use cpuprof_report::tags::{parse_keys, TagFilter, TagOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line is the filter, the others labels: key=value strings,
    // key#number#unit numbers.
    let mut lines = text.lines();
    let filter = lines.next().unwrap_or("");
    let labels: Vec<Label> = lines
        .filter_map(|l| {
            if let Some((key, rest)) = l.split_once('#') {
                let (number, unit) = rest.split_once('#').unwrap_or((rest, ""));
                let value: i64 = number.parse().ok()?;
                let _ = scaled_label(value, unit, "auto");
                return Some(Label::num(key.to_string(), value, unit.to_string()));
            }
            let (key, value) = l.split_once('=')?;
            Some(Label::str(key.to_string(), value))
        })
        .collect();
    let parsed = TagFilter::parse("tagfocus", filter);
    let checked = cpuprof_driver::settings::setting("tagfocus")
        .expect("tagfocus is a setting")
        .check(filter);
    match &parsed {
        Ok(f) => {
            let _ = f.matches(&labels);
            let _ = f.is_range();
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "{message}");
            assert!(message.starts_with("tagfocus="), "{message}");
        }
    }
    // The table accepts what the parser accepts (of the trimmed value;
    // empty: no filter).
    let trimmed = filter.trim();
    assert_eq!(
        checked.is_ok(),
        trimmed.is_empty() || TagFilter::parse("tagfocus", trimmed).is_ok()
    );
    let options = TagOptions {
        focus: parsed.ok(),
        root: parse_keys(filter),
        ..Default::default()
    };
    let _ = options.keeps(&labels);
    for key in &options.root {
        let _ = options.frame_name(&labels, key);
    }
});
