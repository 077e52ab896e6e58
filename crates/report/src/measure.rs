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
}
