//! Settings read from the environment, as gperftools reads them (see the
//! user guide, "Modifying Runtime Behavior"), plus our own
//! `CPUPROFILE_FLUSH_SECONDS`, `CPUPROFILE_TIMER`, `CPUPROFILE_FORMAT` and
//! `CPUPROFILE_TIME_RESOLUTION`. Invalid values are
//! reported on stderr and replaced by the default; nothing fails silently.

use crate::timers::ClockChoice;

/// Sampling settings of one session.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Samples per second (of CPU time, or of wall time when `realtime`).
    pub frequency: u32,
    /// Sample on wall-clock time instead of CPU time.
    pub realtime: bool,
    /// The signal that delivers samples; 0 (the default): a real-time
    /// signal with no handler, chosen at start (`SIGPROF` only with the
    /// `setitimer` fallback).
    pub signal: i32,
    /// Which clock implementations to try.
    pub clock: ClockChoice,
    /// Write the profile every this many seconds (0: only at the end).
    pub flush_seconds: u32,
    /// The profile's file format (`CPUPROFILE_FORMAT`).
    pub format: ProfileFormat,
    /// profile.proto: each sample's time (label `timestamp_ns`) rounded
    /// down to this many ns (`CPUPROFILE_TIME_RESOLUTION`); 1: full
    /// resolution (the default), 0: no times. Samples of one stack and
    /// thread whose rounded times are equal are merged. Long runs coarsen
    /// it further as they go (see the README, "Time in the profile").
    pub time_resolution_ns: u64,
    /// `CPUPROFILE_SIGWAIT`: the agent answers the program's `sigwait`,
    /// `sigwaitinfo`, `sigtimedwait` and `signalfd` on the sampling signal
    /// itself, so that a program waiting for that signal gets the ones
    /// others send (off by default: it changes how programs that wait on
    /// every signal run; Chromium's zygote aborts with it).
    pub hand_waits: bool,
}

/// The file format a session writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProfileFormat {
    /// gperftools' binary CPU profile (drop-in; no thread labels).
    #[default]
    Gperftools,
    /// pprof's gzipped profile.proto, each sample labelled with its
    /// thread (`thread_id`, `thread_name`, and `state` in realtime mode).
    Pprof,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            frequency: DEFAULT_FREQUENCY,
            realtime: false,
            signal: 0,
            clock: ClockChoice::Auto,
            flush_seconds: 0,
            format: ProfileFormat::Gperftools,
            time_resolution_ns: 1,
            hand_waits: false,
        }
    }
}

/// gperftools' default rate.
pub const DEFAULT_FREQUENCY: u32 = 100;
/// The highest rate accepted (one sample per 10 µs).
pub const MAX_FREQUENCY: u32 = 100_000;

impl Settings {
    /// Nanoseconds between samples.
    pub fn period_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.frequency.max(1))
    }

    /// Reads the settings from the environment, reporting invalid values
    /// through `warn`.
    pub fn from_env(warn: &mut dyn FnMut(String)) -> Settings {
        Settings::from_lookup(&|name| std::env::var(name).ok(), warn)
    }

    /// Reads the settings through `lookup` (testable without touching the
    /// process environment).
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
        warn: &mut dyn FnMut(String),
    ) -> Settings {
        let mut settings = Settings::default();
        if let Some(value) = lookup("CPUPROFILE_FREQUENCY") {
            match value.trim().parse::<u32>() {
                Ok(hz) if (1..=MAX_FREQUENCY).contains(&hz) => settings.frequency = hz,
                _ => warn(format!(
                    "CPUPROFILE_FREQUENCY={value:?} is not a rate between 1 and {MAX_FREQUENCY} samples per second; using {DEFAULT_FREQUENCY}"
                )),
            }
        }
        if let Some(value) = lookup("CPUPROFILE_REALTIME") {
            // gperftools turns realtime on when the variable is set at all.
            settings.realtime = !matches!(value.trim(), "0" | "false" | "no" | "off");
        }
        if let Some(value) = lookup("CPUPROFILE_SIGWAIT") {
            settings.hand_waits = !matches!(value.trim(), "" | "0" | "false" | "no" | "off");
        }
        if let Some(value) = lookup("CPUPROFILE_TIMER_SIGNAL") {
            match parse_signal(&value) {
                Some(signal) => settings.signal = signal,
                None => warn(format!(
                    "CPUPROFILE_TIMER_SIGNAL={value:?} is not a usable signal number (1-{}, not SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE); choosing a free real-time signal",
                    libc::SIGRTMAX()
                )),
            }
        }
        if let Some(value) = lookup("CPUPROFILE_PER_THREAD_TIMERS") {
            // Every thread always has its own timer here; the variable is
            // accepted for compatibility and only checked.
            if !matches!(
                value.trim(),
                "" | "0" | "1" | "true" | "false" | "yes" | "no" | "on" | "off"
            ) {
                warn(format!(
                    "CPUPROFILE_PER_THREAD_TIMERS={value:?} is not a boolean; every thread has its own timer anyway"
                ));
            }
        }
        if let Some(value) = lookup("CPUPROFILE_FLUSH_SECONDS") {
            match value.trim().parse::<u32>() {
                Ok(seconds) => settings.flush_seconds = seconds,
                Err(_) => warn(format!(
                    "CPUPROFILE_FLUSH_SECONDS={value:?} is not a whole number of seconds; writing only at the end"
                )),
            }
        }
        if let Some(value) = lookup("CPUPROFILE_FORMAT") {
            match value.trim() {
                "" | "gperftools" | "legacy" => settings.format = ProfileFormat::Gperftools,
                "pprof" | "proto" => settings.format = ProfileFormat::Pprof,
                _ => warn(format!(
                    "CPUPROFILE_FORMAT={value:?} is not one of gperftools, pprof; writing gperftools' format"
                )),
            }
        }
        if let Some(value) = lookup("CPUPROFILE_TIME_RESOLUTION") {
            match parse_time_resolution(&value) {
                Some(ns) => settings.time_resolution_ns = ns,
                None => warn(format!(
                    "CPUPROFILE_TIME_RESOLUTION={value:?} is not a duration (10ms, 1s, 500us, full) or off; keeping full-resolution times"
                )),
            }
        }
        if let Some(value) = lookup("CPUPROFILE_TIMER") {
            match value.trim() {
                "" | "auto" => {}
                "perf" => settings.clock = ClockChoice::Perf,
                "posix" => settings.clock = ClockChoice::Posix,
                "itimer" => settings.clock = ClockChoice::Itimer,
                _ => warn(format!(
                    "CPUPROFILE_TIMER={value:?} is not one of auto, perf, posix, itimer; using auto"
                )),
            }
        }
        settings
    }
}

/// Parses a time resolution: a duration with its unit (`10ms`, `1s`,
/// `0.5s`, `250us`, `1m`, `1h`; units ns, us, µs, ms, s, m, min, h), `full`
/// (1 ns: times as taken), or `off`/`0`/`none` (no times). Returns ns; 0
/// for off.
pub fn parse_time_resolution(value: &str) -> Option<u64> {
    let value = value.trim();
    match value {
        "off" | "0" | "none" | "no" => return Some(0),
        "full" | "on" => return Some(1),
        _ => {}
    }
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let scale: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    let number: f64 = number.parse().ok()?;
    let ns = (number * scale).round();
    // Up to a day: coarser says nothing about when.
    (ns.is_finite() && (0.0..=86_400e9).contains(&ns)).then_some(ns as u64)
}

/// Parses a signal number usable for profiling or as a switch.
pub fn parse_signal(value: &str) -> Option<i32> {
    let signal: i32 = value.trim().parse().ok()?;
    let forbidden = [
        libc::SIGKILL,
        libc::SIGSTOP,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
    ];
    ((1..=libc::SIGRTMAX()).contains(&signal) && !forbidden.contains(&signal)).then_some(signal)
}

/// The profile path from `CPUPROFILE`, made unique the way gperftools does:
/// the first process to start writes `path`; a process that inherited the
/// marker `CPUPROFILE_USE_PID` (a child, or an exec'd program) writes
/// `path_<pid>`. Sets the marker for this process's children. Returns None
/// when `CPUPROFILE` is unset or empty.
pub fn unique_path_from_env() -> Option<String> {
    let path = std::env::var("CPUPROFILE").ok().filter(|p| !p.is_empty())?;
    if std::env::var_os("CPUPROFILE_USE_PID").is_some() {
        Some(format!("{path}_{}", std::process::id()))
    } else {
        // SAFETY: called from the library constructor, before the program
        // starts threads (as gperftools does).
        unsafe { std::env::set_var("CPUPROFILE_USE_PID", "1") };
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> (Settings, Vec<String>) {
        let mut warnings = Vec::new();
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        let s = Settings::from_lookup(&lookup, &mut |w| warnings.push(w));
        (s, warnings)
    }

    #[test]
    fn defaults_match_gperftools() {
        let (s, w) = settings(&[]);
        assert_eq!(s.frequency, 100);
        assert_eq!(s.period_ns(), 10_000_000);
        assert!(!s.realtime);
        assert_eq!(s.signal, 0, "chosen at start");
        assert_eq!(s.time_resolution_ns, 1, "full-resolution times");
        assert!(w.is_empty());
    }

    #[test]
    fn time_resolutions_parse_with_units() {
        let cases = [
            ("10ms", Some(10_000_000)),
            ("1s", Some(1_000_000_000)),
            ("0.5s", Some(500_000_000)),
            ("250us", Some(250_000)),
            ("250µs", Some(250_000)),
            ("1m", Some(60_000_000_000)),
            ("full", Some(1)),
            ("off", Some(0)),
            ("0", Some(0)),
            ("0ms", Some(0)),
            ("10", None),
            ("ms", None),
            ("10 parsecs", None),
            ("2d", None),
            ("25h", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_time_resolution(text), expected, "{text}");
        }
        let (s, w) = settings(&[("CPUPROFILE_TIME_RESOLUTION", "soon")]);
        assert_eq!(s.time_resolution_ns, 1);
        assert!(
            w[0].contains("CPUPROFILE_TIME_RESOLUTION=\"soon\""),
            "{w:?}"
        );
        let (s, w) = settings(&[("CPUPROFILE_TIME_RESOLUTION", "10ms")]);
        assert_eq!((s.time_resolution_ns, w.len()), (10_000_000, 0));
    }

    #[test]
    fn invalid_values_are_reported() {
        let (s, w) = settings(&[
            ("CPUPROFILE_FREQUENCY", "fast"),
            ("CPUPROFILE_TIMER_SIGNAL", "9"),
            ("CPUPROFILE_FLUSH_SECONDS", "-1"),
            ("CPUPROFILE_TIMER", "hpet"),
            ("CPUPROFILE_FORMAT", "json"),
        ]);
        assert_eq!(s.frequency, 100);
        assert_eq!(s.signal, 0);
        assert_eq!(s.format, ProfileFormat::Gperftools);
        assert_eq!(w.len(), 5, "{w:?}");
        assert!(w[0].contains("CPUPROFILE_FREQUENCY=\"fast\""));
    }

    #[test]
    fn valid_values_are_used() {
        let (s, w) = settings(&[
            ("CPUPROFILE_FREQUENCY", "4000"),
            ("CPUPROFILE_REALTIME", "1"),
            ("CPUPROFILE_TIMER_SIGNAL", "34"),
            ("CPUPROFILE_FLUSH_SECONDS", "5"),
            ("CPUPROFILE_TIMER", "posix"),
            ("CPUPROFILE_FORMAT", "pprof"),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.frequency, 4000);
        assert_eq!(s.period_ns(), 250_000);
        assert!(s.realtime);
        assert_eq!(s.signal, 34);
        assert_eq!(s.flush_seconds, 5);
        assert_eq!(s.clock, ClockChoice::Posix);
        assert_eq!(s.format, ProfileFormat::Pprof);
    }
}
