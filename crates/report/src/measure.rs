//! The measure module: the only place where a value becomes text.
//!
//! Values with a unit are scaled for people, by the rules of Go pprof's
//! `internal/measurement` package: time (`ns`, `us`, `ms`, `s`, `min`,
//! `hrs`), bytes (`B`, `kB`, `MB`, `GB`, `TB`, `PB`), counts as they are.
//! Percentages are printed as perl pprof prints them ([`percent`],
//! `%.1f%%`) or as Go pprof does ([`percentage`]). Every output asks this
//! module; none formats a value on its own. It imports nothing else of
//! the crate.

use cpuprof_profile::ValueType;

/// A unit Go pprof knows: its printed name, its spellings, its factor to
/// its type's base unit.
struct Unit {
    name: &'static str,
    aliases: &'static [&'static str],
    factor: f64,
}

/// A family of units (memory, time) and its default.
struct UnitType {
    units: &'static [Unit],
    default: (&'static str, f64),
}

/// The units Go pprof's `measurement` package scales between.
static UNIT_TYPES: &[UnitType] = &[
    UnitType {
        units: &[
            Unit {
                name: "B",
                aliases: &["b", "byte"],
                factor: 1.0,
            },
            Unit {
                name: "kB",
                aliases: &["kb", "kbyte", "kilobyte"],
                factor: 1024.0,
            },
            Unit {
                name: "MB",
                aliases: &["mb", "mbyte", "megabyte"],
                factor: 1048576.0,
            },
            Unit {
                name: "GB",
                aliases: &["gb", "gbyte", "gigabyte"],
                factor: 1073741824.0,
            },
            Unit {
                name: "TB",
                aliases: &["tb", "tbyte", "terabyte"],
                factor: 1099511627776.0,
            },
            Unit {
                name: "PB",
                aliases: &["pb", "pbyte", "petabyte"],
                factor: 1125899906842624.0,
            },
        ],
        default: ("B", 1.0),
    },
    UnitType {
        units: &[
            Unit {
                name: "ns",
                aliases: &["ns", "nanosecond"],
                factor: 1.0,
            },
            Unit {
                name: "us",
                aliases: &["μs", "us", "microsecond"],
                factor: 1e3,
            },
            Unit {
                name: "ms",
                aliases: &["ms", "millisecond"],
                factor: 1e6,
            },
            Unit {
                name: "s",
                aliases: &["s", "sec", "second"],
                factor: 1e9,
            },
            Unit {
                name: "hrs",
                aliases: &["hour", "hr"],
                factor: 3.6e12,
            },
        ],
        default: ("s", 1e9),
    },
];

impl UnitType {
    /// The unit spelled `unit` (any case, a plural `s` dropped).
    fn sniff(&self, unit: &str) -> Option<&Unit> {
        let lower = unit.to_lowercase();
        let lower = if lower.chars().count() > 2 {
            lower.strip_suffix('s').unwrap_or(&lower)
        } else {
            &lower
        };
        self.units.iter().find(|u| u.aliases.contains(&lower))
    }
}

/// Scales `value` in `from` to `to` (`auto`/`minimum`: the largest unit
/// that keeps it at least 1), as Go pprof's `measurement.Scale`: returns
/// the value and the printed unit, empty for counts.
pub fn scale(value: i64, from: &str, to: &str) -> (f64, String) {
    if value < 0 && value != i64::MIN {
        let (v, u) = scale(-value, from, to);
        return (-v, u);
    }
    for unit_type in UNIT_TYPES {
        let Some(from_unit) = unit_type.sniff(from) else {
            continue;
        };
        let v = value as f64 * from_unit.factor;
        if to == "minimum" || to == "auto" {
            // The fitting unit with the largest factor, as Go's autoScale.
            let mut best: Option<&Unit> = None;
            for u in unit_type.units {
                if v / u.factor >= 1.0 && best.is_none_or(|b| u.factor >= b.factor) {
                    best = Some(u);
                }
            }
            return match best {
                Some(u) => (v / u.factor, u.name.to_string()),
                None => (v / unit_type.default.1, unit_type.default.0.to_string()),
            };
        }
        return match unit_type.sniff(to) {
            Some(u) => (v / u.factor, u.name.to_string()),
            None => (v / unit_type.default.1, unit_type.default.0.to_string()),
        };
    }
    match to {
        "count" | "sample" | "unit" | "minimum" | "auto" => (value as f64, String::new()),
        _ => (value as f64, to.to_string()),
    }
}

/// A value as Go pprof's `measurement.ScaledLabel` prints it: two
/// decimals unless whole, then the unit (`1.50ms`, `4kB`, `1234`).
pub fn scaled_label(value: i64, from: &str, to: &str) -> String {
    if from.is_empty() && to == "count" {
        return value.to_string();
    }
    let (v, unit) = scale(value, from, to);
    let text = format!("{v:.2}");
    let text = text.strip_suffix(".00").unwrap_or(&text);
    if text == "0" || text == "-0" {
        return "0".to_string();
    }
    format!("{text}{unit}")
}

/// True when `unit` is one Go pprof scales (time or bytes): reports then
/// print values scaled (`1.82s`), in Go pprof's layout; counts (`count`,
/// `samples`, anything else) print as they are.
pub fn is_scaled_unit(unit: &str) -> bool {
    UNIT_TYPES.iter().any(|t| t.sniff(unit).is_some())
}

/// The values of the `unit` setting besides a unit: `minimum` (Go's
/// default: one unit for a whole report, that of its smallest value) and
/// `auto` (each value in its own unit).
pub const UNIT_CHOICES: &[&str] = &["minimum", "auto"];

/// Checks a `unit` setting: `minimum`, `auto`, or a unit Go pprof knows
/// (`ms`, `seconds`, `kb`, `count`, ...). Go takes any word and prints
/// values of another family in that family's default unit; an unknown
/// word is refused here, so that a typo does not pass unnoticed.
pub fn check_unit(setting: &str) -> Result<(), String> {
    if UNIT_CHOICES.contains(&setting)
        || is_scaled_unit(setting)
        || matches!(setting, "count" | "sample" | "unit")
    {
        Ok(())
    } else {
        Err(format!(
            "unit={setting}: expected minimum, auto, or a unit (ns, us, ms, s, hrs; B, kB, MB, GB, TB, PB)"
        ))
    }
}

/// How one report prints its values: the unit the samples are in and the
/// unit they are printed in, as Go pprof's report chooses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    /// The sample type's unit, lower case as Go takes it (`nanoseconds`).
    pub sample_unit: String,
    /// The unit values are printed in: a unit (`ms`), `auto` (each value
    /// its own), or the sample unit.
    pub output_unit: String,
}

impl Measure {
    /// The measure of a report of values in `sample_unit` under the
    /// `unit` setting `setting`, whose values (each node's flat, or its
    /// cum when its flat is zero) are `values` and whose total is
    /// `total`: Go pprof's `selectOutputUnit`. For `minimum`, the unit of
    /// the smallest non-zero value; when it differs from the total's and
    /// the smallest is below a hundredth of the total, the unit of a
    /// hundred times the smallest (so that it prints as at least 0.01);
    /// `integer` (callgrind) keeps the smallest's unit.
    pub fn select(
        sample_unit: &str,
        setting: &str,
        values: impl IntoIterator<Item = i64>,
        total: i64,
        integer: bool,
    ) -> Measure {
        let sample_unit = sample_unit.to_lowercase();
        if setting != "minimum" {
            return Measure {
                sample_unit,
                output_unit: setting.to_string(),
            };
        }
        let mut min = 0i64;
        for v in values {
            let v = v.saturating_abs();
            if v > 0 && (min == 0 || v < min) {
                min = v;
            }
        }
        let max = total;
        if min == 0 {
            min = max;
        }
        let (_, min_unit) = scale(min, &sample_unit, "minimum");
        let (_, max_unit) = scale(max, &sample_unit, "minimum");
        let mut unit = min_unit.clone();
        if min_unit != max_unit && min.saturating_mul(100) < max && !integer {
            unit = scale(min.saturating_mul(100), &sample_unit, "minimum").1;
        }
        let output_unit = if unit.is_empty() {
            sample_unit.clone()
        } else {
            unit
        };
        Measure {
            sample_unit,
            output_unit,
        }
    }

    /// A measure that prints values as they are, in `sample_unit`.
    pub fn raw(sample_unit: &str) -> Measure {
        let sample_unit = sample_unit.to_lowercase();
        Measure {
            output_unit: sample_unit.clone(),
            sample_unit,
        }
    }

    /// True when values are scaled (time or bytes), false for counts.
    pub fn is_scaled(&self) -> bool {
        is_scaled_unit(&self.sample_unit)
    }

    /// `value` as Go pprof's report prints it (`1.82s`, `330ms`, `66`).
    pub fn label(&self, value: i64) -> String {
        scaled_label(value, &self.sample_unit, &self.output_unit)
    }

    /// `value` in the output unit, and that unit's printed name (empty
    /// for counts).
    pub fn scale(&self, value: i64) -> (f64, String) {
        scale(value, &self.sample_unit, &self.output_unit)
    }
}

/// The unit word printed after totals: the kind for counts (`samples`),
/// else the unit (`nanoseconds`).
pub fn unit_word(t: &ValueType) -> String {
    if t.unit == "count" || t.unit.is_empty() {
        if t.kind.is_empty() {
            "samples".to_string()
        } else {
            t.kind.clone()
        }
    } else {
        t.unit.clone()
    }
}

/// A percentage as pprof prints it: `%.1f%%`, `nan` of a zero total.
pub fn percent(value: i64, total: i64) -> String {
    Percent(value, total).to_string()
}

/// [`percent`] without an allocation, for `{:>6}` in row formatting.
#[derive(Clone, Copy, Debug)]
pub struct Percent(pub i64, pub i64);

impl std::fmt::Display for Percent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::io::Write as _;
        let Percent(value, total) = *self;
        let mut buf = [0u8; 40];
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        let _ = if total != 0 {
            let x = value as f64 * 100.0 / total as f64;
            let tenths = x * 10.0;
            let fraction = tenths - tenths.floor();
            if tenths.abs() < 1e15 && (fraction - 0.5).abs() > 1e-6 {
                // Far from a rounding midpoint, rounding the scaled value
                // gives what `%.1f` prints, without float formatting.
                let t = tenths.round() as i64;
                let negative = t < 0 || (t == 0 && x < 0.0);
                let mut digits = [0u8; 24];
                let mut i = digits.len();
                let mut rest = t.unsigned_abs();
                // The tenths digit, the point, then at least one more digit.
                let mut written = 0;
                while written < 2 || rest != 0 {
                    i -= 1;
                    digits[i] = b'0' + (rest % 10) as u8;
                    rest /= 10;
                    written += 1;
                    if written == 1 {
                        i -= 1;
                        digits[i] = b'.';
                    }
                }
                if negative {
                    i -= 1;
                    digits[i] = b'-';
                }
                let _ = cursor.write_all(&digits[i..]);
                cursor.write_all(b"%")
            } else {
                write!(cursor, "{x:.1}%")
            }
        } else if value == 0 {
            write!(cursor, "nan")
        } else if value > 0 {
            write!(cursor, "+inf")
        } else {
            write!(cursor, "-inf")
        };
        let len = cursor.position() as usize;
        f.pad(std::str::from_utf8(&buf[..len]).unwrap_or("?"))
    }
}

/// [`percentage`] as a `Display`, for formatting in place.
pub struct Percentage(pub i64, pub i64);

impl std::fmt::Display for Percentage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ratio = ratio(self.0, self.1);
        if (99.95..=100.05).contains(&ratio) {
            f.write_str("  100%")
        } else if ratio >= 1.0 {
            write!(f, "{ratio:5.2}%")
        } else {
            write!(f, "{:>5}%", go_g2(ratio))
        }
    }
}

fn ratio(value: i64, total: i64) -> f64 {
    if total != 0 {
        (value as f64 / total as f64).abs() * 100.0
    } else {
        0.0
    }
}

/// A percentage as Go pprof's `measurement.Percentage` prints it.
pub fn percentage(value: i64, total: i64) -> String {
    Percentage(value, total).to_string()
}

/// Go's `%.2g` of a non-negative value below 1: two significant digits,
/// without trailing zeros (`0`, `0.5`, `0.012`, `1e-05`).
fn go_g2(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    let exponent = x.log10().floor() as i32;
    // Round to two significant digits first: the exponent may move.
    let scale = 10f64.powi(1 - exponent);
    let rounded = (x * scale).round() / scale;
    let exponent = rounded.log10().floor() as i32;
    if exponent < -4 {
        let mantissa = rounded / 10f64.powi(exponent);
        let m = format!("{mantissa:.1}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e-{:02}", -exponent);
    }
    let decimals = (1 - exponent).max(0) as usize;
    let s = format!("{rounded:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A count as perl pprof prints it in listings: `.` for zero.
pub fn count(value: i64) -> String {
    if value == 0 {
        ".".to_string()
    } else {
        value.to_string()
    }
}

/// A unit's printed name and its factor in sample units.
pub type UnitStep = (&'static str, f64);

/// How the outputs in perl pprof's layout (the call graph in DOT and SVG,
/// `--list`, `--disasm`, `--weblist`) print a value and name its unit:
/// a count as it is (`Total samples: 1234`, a gperftools CPU profile); a
/// heap or contention profile read from its text form as perl pprof
/// prints it (`Total MB: 28.0`, [`PerlLegacyUnit`]); any other value with
/// a unit as Go pprof labels it, each value in its own unit under the
/// `unit` setting's `minimum`/`auto`, else in the unit asked
/// (`Total cpu: 25.80s`, a node's `13.65s (52.9%)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueFormat {
    /// Counts, printed as they are; the word after totals (`samples`).
    Count(String),
    /// A legacy text profile's values, as perl pprof prints them.
    Perl(PerlLegacyUnit),
    /// Time or bytes: the sample type's name (the word after totals) and
    /// how values are scaled.
    Scaled {
        /// The sample type's name (`cpu`, `inuse_space`).
        kind: String,
        /// The scaling.
        measure: Measure,
    },
}

impl Default for ValueFormat {
    /// Sample counts.
    fn default() -> ValueFormat {
        ValueFormat::count("samples")
    }
}

impl ValueFormat {
    /// The format of values of type `t` of `profile` under the `unit`
    /// setting `unit`.
    pub fn of(profile: &cpuprof_profile::Profile, t: &ValueType, unit: &str) -> ValueFormat {
        if let Some(perl) = PerlLegacyUnit::of(profile, t) {
            return ValueFormat::Perl(perl);
        }
        if is_scaled_unit(&t.unit) {
            let kind = if t.kind.is_empty() {
                t.unit.clone()
            } else {
                t.kind.clone()
            };
            return ValueFormat::Scaled {
                kind,
                measure: Measure {
                    sample_unit: t.unit.to_lowercase(),
                    output_unit: unit.to_string(),
                },
            };
        }
        ValueFormat::Count(unit_word(t))
    }

    /// Counts named `word`, printed as they are.
    pub fn count(word: &str) -> ValueFormat {
        ValueFormat::Count(word.to_string())
    }

    /// The word after totals: `samples`, `MB`, `cpu`.
    pub fn word(&self) -> &str {
        match self {
            ValueFormat::Count(word) => word,
            ValueFormat::Perl(perl) => perl.word(),
            ValueFormat::Scaled { kind, .. } => kind,
        }
    }

    /// `value` printed.
    pub fn value(&self, value: i64) -> String {
        match self {
            ValueFormat::Count(_) => value.to_string(),
            ValueFormat::Perl(perl) => perl.format(value),
            ValueFormat::Scaled { measure, .. } => measure.label(value),
        }
    }

    /// `value` with its unit: `1234 samples`, `24.0 MB`, `1.82s`.
    pub fn with_unit(&self, value: i64) -> String {
        match self {
            ValueFormat::Scaled { .. } => self.value(value),
            _ => format!("{} {}", self.value(value), self.word()),
        }
    }

    /// For a script that prints values as this format does (the flame
    /// graph's page): the units of a scaled value's family as (name,
    /// factor in sample units), smallest first, and the unit of values
    /// that fit none; `None` unless the values are scaled per value.
    pub fn ladder(&self) -> Option<(Vec<UnitStep>, UnitStep)> {
        let ValueFormat::Scaled { measure, .. } = self else {
            return None;
        };
        if !UNIT_CHOICES.contains(&measure.output_unit.as_str()) {
            return None;
        }
        UNIT_TYPES.iter().find_map(|t| {
            let from = t.sniff(&measure.sample_unit)?.factor;
            let units = t.units.iter().map(|u| (u.name, u.factor / from)).collect();
            Some((units, (t.default.0, t.default.1 / from)))
        })
    }

    /// `value` in a listing's column: `.` for zero, as perl pprof.
    pub fn cell(&self, value: i64) -> String {
        if value == 0 {
            ".".to_string()
        } else {
            self.value(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_matches_printf_rounding() {
        // Values checked against C's printf("%.1f%%").
        let cases = [
            ((1, 3), "33.3%"),
            ((2, 3), "66.7%"),
            ((1, 2000), "0.1%"),
            ((3, 2000), "0.1%"),
            ((1, 8), "12.5%"),
            ((1, 1600), "0.1%"),
            ((-1, 3), "-33.3%"),
            ((-1, 2001), "-0.0%"),
            ((0, 5), "0.0%"),
            ((5, 5), "100.0%"),
            ((0, 0), "nan"),
            ((2, 0), "+inf"),
        ];
        for ((v, t), expected) in cases {
            assert_eq!(Percent(v, t).to_string(), expected, "{v}/{t}");
        }
        for total in 1..400 {
            for v in -total..=total {
                let slow = format!("{:.1}%", v as f64 * 100.0 / total as f64);
                assert_eq!(Percent(v, total).to_string(), slow, "{v}/{total}");
            }
        }
    }

    #[test]
    fn percentages_as_go_prints_them() {
        assert_eq!(percentage(1, 1), "  100%");
        assert_eq!(percentage(57, 100), "57.00%");
        assert_eq!(percentage(5, 1000), "  0.5%");
        assert_eq!(percentage(12, 100_000), "0.012%");
        assert_eq!(percentage(0, 10), "    0%");
        assert_eq!(percentage(3, 0), "    0%");
        assert_eq!(percentage(1, 3), "33.33%");
        assert_eq!(percentage(1, 10_000_000), "1e-05%");
    }

    #[test]
    fn scaling_as_go_measurement() {
        assert_eq!(
            scale(770_000_000, "nanoseconds", "minimum"),
            (770.0, "ms".to_string())
        );
        assert_eq!(scale(77, "count", "minimum"), (77.0, String::new()));
        assert_eq!(scale(0, "nanoseconds", "minimum"), (0.0, "s".to_string()));
        assert_eq!(scaled_label(4096, "bytes", "auto"), "4kB");
        assert_eq!(scaled_label(1536, "bytes", "auto"), "1.50kB");
        assert_eq!(scaled_label(1234, "thread_id", "auto"), "1234");
        assert_eq!(scaled_label(0, "bytes", "auto"), "0");
        assert_eq!(scaled_label(-2048, "b", "auto"), "-2kB");
    }

    #[test]
    fn the_report_unit_as_go_selects_it() {
        // Go pprof -top -sample_index=cpu on fuzz/seeds/proto/spin.pb.gz:
        // 175ms, 110ms, 45ms of 330ms.
        let values = [175_000_000, 110_000_000, 45_000_000];
        let m = Measure::select("nanoseconds", "minimum", values, 330_000_000, false);
        assert_eq!(m.output_unit, "ms");
        assert_eq!(m.label(175_000_000), "175ms");
        assert_eq!(m.label(330_000_000), "330ms");
        // -unit=s: 0.17s (%.2f of 0.175 rounds down, as Go's), 0.33s.
        let s = Measure::select("nanoseconds", "s", values, 330_000_000, false);
        assert_eq!(s.label(175_000_000), "0.17s");
        assert_eq!(s.label(45_000_000), "0.04s");
        // -unit=hrs: everything rounds to 0, printed without a unit.
        let h = Measure::select("nanoseconds", "hrs", values, 330_000_000, false);
        assert_eq!(h.label(175_000_000), "0");
        // auto: each value its own unit.
        let a = Measure::select("nanoseconds", "auto", values, 330_000_000, false);
        assert_eq!(a.label(2_500_000_000), "2.50s");
        assert_eq!(a.label(1_500), "1.50us");
        // A smallest value below a hundredth of the total in another unit:
        // the unit of a hundred times it (25.80s total, 10ms smallest → s;
        // 5ms smallest → 500ms → ms).
        let m = Measure::select(
            "nanoseconds",
            "minimum",
            [10_000_000],
            25_797_000_000,
            false,
        );
        assert_eq!(m.output_unit, "s");
        assert_eq!(m.label(25_797_000_000), "25.80s");
        assert_eq!(m.label(10_000_000), "0.01s");
        let m = Measure::select("nanoseconds", "minimum", [5_000_000], 25_797_000_000, false);
        assert_eq!(m.output_unit, "ms");
        assert_eq!(m.label(25_797_000_000), "25797ms");
        // ... except for callgrind, which prints whole numbers.
        let c = Measure::select("nanoseconds", "minimum", [10_000_000], 25_797_000_000, true);
        assert_eq!(c.output_unit, "ms");
        // Counts stay as they are; Go puts a unit asked for after them.
        let n = Measure::select("count", "minimum", [35, 22, 9], 66, false);
        assert_eq!(n.label(66), "66");
        assert!(!n.is_scaled());
        assert_eq!(
            Measure::select("count", "ms", [35], 66, false).label(66),
            "66ms"
        );
        // Bytes.
        let b = Measure::select("bytes", "minimum", [1536, 4096], 1 << 20, false);
        assert_eq!(b.output_unit, "kB");
        assert_eq!(b.label(1536), "1.50kB");
        assert_eq!(b.label(1 << 20), "1024kB");
    }

    #[test]
    fn unit_settings_are_checked() {
        for ok in [
            "minimum", "auto", "ms", "seconds", "kb", "MB", "count", "hrs",
        ] {
            assert!(check_unit(ok).is_ok(), "{ok}");
        }
        let e = check_unit("parsecs").unwrap_err();
        assert!(
            e.starts_with("unit=parsecs: expected minimum, auto, or a unit"),
            "{e}"
        );
    }
}

/// How perl pprof prints the values of a heap, growth or contention
/// profile read from its text form (gperftools' formats): bytes as MB
/// (`%.1f`, `Total: 28.0 MB`), delays as seconds (`%.3f`), counts as
/// they are, with its unit words (`objects`; `samples` for contentions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerlLegacyUnit {
    /// Bytes, printed in MB with one decimal.
    Megabytes,
    /// Nanoseconds, printed in seconds with three decimals.
    Seconds,
    /// A count, printed as it is, after `Total:` with this word.
    Count(&'static str),
}

impl PerlLegacyUnit {
    /// The unit of a value of type `t` of `profile`, when `profile` was
    /// read from a heap or contention profile's text form (its reader
    /// leaves a `heap profile type:` or `contention profile type:`
    /// comment); `None` for every other profile.
    pub fn of(profile: &cpuprof_profile::Profile, t: &ValueType) -> Option<PerlLegacyUnit> {
        let heap = profile
            .comments
            .iter()
            .any(|c| c.starts_with("heap profile type:"));
        let contention = profile
            .comments
            .iter()
            .any(|c| c.starts_with("contention profile type:"));
        match t.unit.as_str() {
            "bytes" if heap => Some(PerlLegacyUnit::Megabytes),
            "count" if heap => Some(PerlLegacyUnit::Count("objects")),
            "nanoseconds" if contention => Some(PerlLegacyUnit::Seconds),
            "count" if contention => Some(PerlLegacyUnit::Count("samples")),
            _ => None,
        }
    }

    /// `value` as perl pprof prints it.
    pub fn format(self, value: i64) -> String {
        match self {
            PerlLegacyUnit::Count(_) => value.to_string(),
            _ => {
                let (divisor, decimals) = self.divisor_and_decimals();
                format!("{:.*}", decimals, value as f64 / divisor)
            }
        }
    }

    /// What a value is divided by, and the decimals it is printed with.
    pub fn divisor_and_decimals(self) -> (f64, usize) {
        match self {
            PerlLegacyUnit::Megabytes => (1048576.0, 1),
            PerlLegacyUnit::Seconds => (1e9, 3),
            PerlLegacyUnit::Count(_) => (1.0, 0),
        }
    }

    /// The word after the total.
    pub fn word(self) -> &'static str {
        match self {
            PerlLegacyUnit::Megabytes => "MB",
            PerlLegacyUnit::Seconds => "seconds",
            PerlLegacyUnit::Count(word) => word,
        }
    }
}
