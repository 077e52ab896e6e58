//! `--time`/`--base_time` values (and the web UI's `t=`/`bt=`) must parse
//! into a range or a one-line error naming the setting, never panic; a
//! parsed range filters any sample times without panicking (offsets are
//! taken in 128 bits), and the settings table's check agrees with the
//! parser.
#![no_main]
use cpuprof_report::time::{offset_text, parse_offset, TimeRange};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line is the range, the others sample times (origin first).
    let mut lines = text.lines();
    let value = lines.next().unwrap_or("");
    let times: Vec<i64> = lines.filter_map(|l| l.trim().parse().ok()).collect();
    let parsed = TimeRange::parse("time", value);
    match &parsed {
        Ok(range) => {
            assert!(range.start >= 0);
            assert!(range.end.is_none_or(|end| end > range.start));
            let origin = times.first().copied().unwrap_or(0);
            for &t in &times {
                let _ = range.contains(origin, t);
            }
            // What is printed reads back.
            assert_eq!(parse_offset(&offset_text(range.start)), Ok(range.start));
        }
        Err(e) => {
            assert!(!e.contains('\n'), "{e}");
            assert!(e.starts_with("time="), "{e}");
        }
    }
    let checked = cpuprof_driver::settings::setting("time")
        .expect("time is a setting")
        .check(value);
    let trimmed = value.trim();
    assert_eq!(
        checked.is_ok(),
        trimmed.is_empty() || TimeRange::parse("time", trimmed).is_ok()
    );
});
