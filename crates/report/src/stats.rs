//! Sampling error: how well a profile's shares are known, and which
//! changes between two profiles are more than noise.
//!
//! A profile is a sample: each of `n` samples lands in a function with
//! some probability `p`, and a function seen in `k` samples has a share
//! `k/n` that is only an estimate of `p`. The model assumes independent
//! samples (a binomial count); timer-driven sampling of periodic work can
//! alias with it, which no interval can see.
//!
//! - [`wilson`]: the Wilson score interval of `k` of `n` (good also for
//!   small `k`, unlike `k/n ± z·√(p(1-p)/n)`).
//! - [`two_proportions`]: the z-test of a change of share between two
//!   profiles (each share of its own total), with Newcombe's interval of
//!   the change (from the two Wilson intervals).
//! - [`holm`]: Holm–Bonferroni across the functions tested, so that a
//!   report of many functions does not find changes by chance.
//! - [`z_for`], [`normal_cdf`]: the normal distribution.

/// The two-sided z for a confidence `level` (0.95 → 1.959964).
pub fn z_for(level: f64) -> f64 {
    inverse_normal_cdf(1.0 - (1.0 - level) / 2.0)
}

/// The standard normal distribution function Φ(x).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The complementary error function, to about 1e-15 relative error
/// (a continued fraction for large |x|, the series below).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        // erf(x) = 2/√π · Σ (-1)^n x^(2n+1) / (n! (2n+1))
        let mut sum = x;
        let mut term = x;
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    // erfc(x) = exp(-x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...))))
    let mut fraction = 0.0;
    for n in (1..=60).rev() {
        fraction = (n as f64 / 2.0) / (x + fraction);
    }
    (-x * x).exp() / std::f64::consts::PI.sqrt() / (x + fraction)
}

/// Φ⁻¹(p), by bisection then Newton steps on [`normal_cdf`] (exact to
/// double precision; it runs once per report).
fn inverse_normal_cdf(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    let mut x = (lo + hi) / 2.0;
    for _ in 0..3 {
        let density = (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
        if density > 0.0 {
            x -= (normal_cdf(x) - p) / density;
        }
    }
    x
}

/// The Wilson score interval of a proportion of `k` in `n`, at `z`; as
/// fractions in [0, 1]. `n == 0` knows nothing: [0, 1].
pub fn wilson(k: f64, n: f64, z: f64) -> (f64, f64) {
    if n <= 0.0 {
        return (0.0, 1.0);
    }
    let k = k.clamp(0.0, n);
    let p = k / n;
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// A change of share between two profiles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// The old share (`k1/n1`).
    pub old: f64,
    /// The new share (`k2/n2`).
    pub new: f64,
    /// `new - old`, as a fraction.
    pub delta: f64,
    /// Newcombe's interval of `delta`.
    pub interval: (f64, f64),
    /// The two-sided p-value of the pooled two-proportion z-test.
    pub p_value: f64,
}

/// The change from `k1` of `n1` (old) to `k2` of `n2` (new), each a share
/// of its own total; `z` sets the interval's level.
pub fn two_proportions(k1: f64, n1: f64, k2: f64, n2: f64, z: f64) -> Change {
    let old = if n1 > 0.0 {
        (k1 / n1).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let new = if n2 > 0.0 {
        (k2 / n2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let delta = new - old;
    let pooled = if n1 + n2 > 0.0 {
        ((k1 + k2) / (n1 + n2)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let se = (pooled * (1.0 - pooled) * (1.0 / n1.max(1e-300) + 1.0 / n2.max(1e-300))).sqrt();
    let p_value = if n1 <= 0.0 || n2 <= 0.0 {
        1.0
    } else if se == 0.0 {
        if delta == 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        2.0 * (1.0 - normal_cdf((delta / se).abs()))
    };
    let (l1, u1) = wilson(k1, n1, z);
    let (l2, u2) = wilson(k2, n2, z);
    let interval = (
        delta - ((new - l2).powi(2) + (u1 - old).powi(2)).sqrt(),
        delta + ((u2 - new).powi(2) + (old - l1).powi(2)).sqrt(),
    );
    Change {
        old,
        new,
        delta,
        interval,
        p_value,
    }
}

/// Holm–Bonferroni at `alpha`: which of `p_values` are significant, the
/// family-wise error across all of them at most `alpha`.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut significant = vec![false; m];
    for (rank, &i) in order.iter().enumerate() {
        if p_values[i] <= alpha / (m - rank) as f64 {
            significant[i] = true;
        } else {
            break;
        }
    }
    significant
}

/// Parses a confidence level: `95`, `95%`, `0.95`, `99.9`; `None` when
/// it is not in (0, 100) percent.
pub fn parse_level(text: &str) -> Option<f64> {
    let text = text.trim().trim_end_matches('%');
    let value: f64 = text.parse().ok()?;
    let level = if value >= 1.0 { value / 100.0 } else { value };
    (level > 0.0 && level < 1.0).then_some(level)
}

/// `[lo, hi]` of a fraction pair as percentages with one decimal, as the
/// text report prints them.
pub fn format_interval(interval: (f64, f64)) -> String {
    format!("[{:.1},{:.1}]", interval.0 * 100.0, interval.1 * 100.0)
}

/// The value one sample stands for in `stacks`' sample type: 1 for
/// counts, the profile's period when the value is in the period's unit
/// (CPU nanoseconds), else 1 (the values are taken as counts).
pub fn value_per_sample(stacks: &Stacks) -> f64 {
    value_per_sample_of(stacks.profile(), &stacks.sample_type)
}

/// [`value_per_sample`] for the values of `sample_type` in `profile`.
pub fn value_per_sample_of(
    profile: &cpuprof_profile::Profile,
    sample_type: &cpuprof_profile::ValueType,
) -> f64 {
    let unit = &sample_type.unit;
    if unit != "count"
        && !unit.is_empty()
        && profile.period > 0
        && &profile.period_type.unit == unit
    {
        profile.period as f64
    } else {
        1.0
    }
}

/// How well the shares of one report are known.
#[derive(Clone, Copy, Debug)]
pub struct Shares {
    /// Samples the shares are of.
    pub samples: f64,
    /// Value per sample.
    pub scale: f64,
    /// The confidence level.
    pub level: f64,
    z: f64,
}

impl Shares {
    /// The shares of `total` (in the stacks' values) in `stacks`.
    pub fn new(stacks: &Stacks, total: i64, level: f64) -> Shares {
        let scale = value_per_sample(stacks);
        Shares {
            samples: total.unsigned_abs() as f64 / scale,
            scale,
            level,
            z: z_for(level),
        }
    }

    /// The interval of the share of `value`, as fractions.
    pub fn interval(&self, value: i64) -> (f64, f64) {
        wilson(
            value.unsigned_abs() as f64 / self.scale,
            self.samples,
            self.z,
        )
    }

    /// When the largest of `values` is not known within ±10% of itself:
    /// the one-line note saying so and what to do.
    pub fn too_few(&self, largest: i64) -> Option<String> {
        if largest <= 0 {
            return None;
        }
        let share = largest as f64 / self.scale / self.samples;
        let (lo, hi) = self.interval(largest);
        let relative = (hi - lo) / 2.0 / share;
        (relative > 0.10).then(|| {
            format!(
                "{:.0} samples: the top row's share ({:.1}%) is known only within ±{:.0}% of itself at {}% confidence; record longer, at a higher rate, or sum several runs",
                self.samples,
                share * 100.0,
                relative * 100.0,
                level_text(self.level)
            )
        })
    }
}

/// A level as the reports print it (`95`, `99.9`).
pub fn level_text(level: f64) -> String {
    let percent = level * 100.0;
    if (percent - percent.round()).abs() < 1e-9 {
        format!("{percent:.0}")
    } else {
        format!("{percent}")
    }
}

/// One function's change between a base and a new profile.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionChange {
    /// The frame's name.
    pub name: String,
    /// Its cum in the base, in samples.
    pub old_samples: f64,
    /// Its cum in the new profile, in samples.
    pub new_samples: f64,
    /// The change of its cum share.
    pub change: Change,
    /// Significant after Holm–Bonferroni across the functions compared.
    pub significant: bool,
}

/// The changes of every function between two profiles' reports.
#[derive(Clone, Debug, Default)]
pub struct DiffTable {
    /// Per function, by name.
    pub changes: rustc_hash::FxHashMap<String, FunctionChange>,
    /// Samples in the base (after the filters).
    pub old_samples: f64,
    /// Samples in the new profile (after the filters).
    pub new_samples: f64,
    /// The confidence level of the intervals and tests.
    pub level: f64,
}

impl DiffTable {
    /// Compares the cum share of every function of `new` and `old` (each
    /// share of its own total) at `level`, Holm–Bonferroni across them.
    pub fn compare(new: (&Stacks, &Graph), old: (&Stacks, &Graph), level: f64) -> DiffTable {
        let cums = |(stacks, graph): (&Stacks, &Graph)| {
            let scale = value_per_sample(stacks);
            let mut by_name: rustc_hash::FxHashMap<String, f64> = Default::default();
            for (i, node) in graph.nodes.iter().enumerate() {
                if node.cum != 0 {
                    let name = &stacks.frames[i].name;
                    *by_name.entry(name.clone()).or_insert(0.0) += node.cum as f64 / scale;
                }
            }
            (by_name, stacks.total as f64 / scale)
        };
        let (new_cums, new_n) = cums(new);
        let (old_cums, old_n) = cums(old);
        let mut names: Vec<&String> = new_cums.keys().chain(old_cums.keys()).collect();
        names.sort_unstable();
        names.dedup();
        let z = z_for(level);
        let changes: Vec<FunctionChange> = names
            .iter()
            .map(|name| {
                let k2 = new_cums.get(*name).copied().unwrap_or(0.0);
                let k1 = old_cums.get(*name).copied().unwrap_or(0.0);
                FunctionChange {
                    name: (*name).clone(),
                    old_samples: k1,
                    new_samples: k2,
                    change: two_proportions(k1, old_n, k2, new_n, z),
                    significant: false,
                }
            })
            .collect();
        let p_values: Vec<f64> = changes.iter().map(|c| c.change.p_value).collect();
        let significant = holm(&p_values, 1.0 - level);
        DiffTable {
            changes: changes
                .into_iter()
                .zip(significant)
                .map(|(mut c, s)| {
                    c.significant = s;
                    (c.name.clone(), c)
                })
                .collect(),
            old_samples: old_n,
            new_samples: new_n,
            level,
        }
    }

    /// The functions whose cum share grew significantly by more than
    /// `points` percentage points of the total, largest growth first.
    pub fn grown_by_more_than(&self, points: f64) -> Vec<&FunctionChange> {
        let mut grown: Vec<&FunctionChange> = self
            .changes
            .values()
            .filter(|c| c.significant && c.change.delta * 100.0 > points)
            .collect();
        grown.sort_by(|a, b| {
            b.change
                .delta
                .total_cmp(&a.change.delta)
                .then_with(|| a.name.cmp(&b.name))
        });
        grown
    }

    /// The text report's column for `name`: the cum share before → after,
    /// the change in points with its interval, `*` when significant, `~`
    /// when not.
    pub fn column(&self, name: &str) -> String {
        match self.changes.get(name) {
            Some(c) => format!(
                "{:>5.1}%->{:>5.1}% {:>+6.1} {:<13} {}",
                c.change.old * 100.0,
                c.change.new * 100.0,
                c.change.delta * 100.0,
                format_interval(c.change.interval),
                if c.significant { "*" } else { "~" }
            ),
            None => format!("{:>35}", "~"),
        }
    }
}

use crate::graph::Graph;
use crate::stacks::Stacks;

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn normal_distribution() {
        assert!(close(normal_cdf(0.0), 0.5, 1e-15));
        assert!(close(normal_cdf(1.959963984540054), 0.975, 1e-12));
        assert!(close(normal_cdf(-3.0), 0.0013498980316301, 1e-13));
        assert!(close(normal_cdf(6.0), 1.0 - 9.865876450377e-10, 1e-15));
        assert!(close(z_for(0.95), 1.959963984540054, 1e-9));
        assert!(close(z_for(0.99), 2.575829303548901, 1e-9));
        assert!(close(z_for(0.90), 1.644853626951472, 1e-9));
    }

    #[test]
    fn wilson_by_hand_for_11_of_113() {
        // p = 11/113 = 0.0973451; z = 1.959964, z² = 3.841459;
        // denominator 1 + z²/n = 1.0339952;
        // centre (p + z²/2n)/den = (0.0973451 + 0.0169976)/1.0339952 = 0.1105839;
        // half z·√(p(1-p)/n + z²/4n²)/den
        //   = 1.959964·√(0.00077766 + 0.00007521)/1.0339952 = 0.0553553;
        // [0.0552, 0.1659]: "about 5% to 17%".
        let (lo, hi) = wilson(11.0, 113.0, z_for(0.95));
        assert!(close(lo, 0.055229, 2e-6), "{lo}");
        assert!(close(hi, 0.165939, 2e-6), "{hi}");
        assert_eq!(format_interval((lo, hi)), "[5.5,16.6]");
        // Edges: none and all.
        let (lo, hi) = wilson(0.0, 10.0, z_for(0.95));
        assert_eq!(lo, 0.0);
        assert!(close(hi, 0.277533, 1e-5), "{hi}");
        let (lo, hi) = wilson(10.0, 10.0, z_for(0.95));
        assert!(
            close(lo, 1.0 - 0.277533, 1e-5) && close(hi, 1.0, 1e-12),
            "{lo} {hi}"
        );
    }

    #[test]
    fn two_proportion_test_by_hand() {
        // 50 of 1000 → 80 of 1000: pooled 0.065, se = √(0.065·0.935·0.002)
        // = 0.0110250; z = 0.03/0.0110250 = 2.721095; p = 2(1 - Φ(z))
        // = 0.0065066 (Python's statistics.NormalDist gives the same).
        let c = two_proportions(50.0, 1000.0, 80.0, 1000.0, z_for(0.95));
        assert!(close(c.delta, 0.03, 1e-12));
        assert!(close(c.p_value, 0.0065066, 1e-6), "{}", c.p_value);
        // Newcombe's interval from the two Wilson intervals
        // (0.0381303, 0.0653138) and (0.0647480, 0.0984664):
        // lower 0.03 - √((0.08 - 0.0647480)² + (0.0653138 - 0.05)²) = 0.0083867,
        // upper 0.03 + √((0.0984664 - 0.08)² + (0.05 - 0.0381303)²) = 0.0519522.
        assert!(close(c.interval.0, 0.0083867, 1e-6), "{:?}", c.interval);
        assert!(close(c.interval.1, 0.0519522, 1e-6), "{:?}", c.interval);
        // Different lengths compare by share.
        let c = two_proportions(100.0, 1000.0, 200.0, 2000.0, z_for(0.95));
        assert!(close(c.delta, 0.0, 1e-15) && close(c.p_value, 1.0, 1e-12));
    }

    #[test]
    fn holm_bonferroni() {
        // m = 4 at 0.05: thresholds 0.0125, 0.01667, 0.025, 0.05.
        assert_eq!(
            holm(&[0.01, 0.04, 0.03, 0.005], 0.05),
            [true, false, false, true]
        );
        assert_eq!(
            holm(&[0.01, 0.012, 0.02, 0.04], 0.05),
            [true, true, true, true]
        );
        assert_eq!(holm(&[0.02, 0.001], 0.05), [true, true]);
        assert_eq!(holm(&[0.03, 0.04], 0.05), [false, false]);
        assert!(holm(&[], 0.05).is_empty());
    }

    #[test]
    fn levels() {
        assert_eq!(parse_level("95"), Some(0.95));
        assert_eq!(parse_level("95%"), Some(0.95));
        assert_eq!(parse_level("0.99"), Some(0.99));
        assert_eq!(parse_level("100"), None);
        assert_eq!(parse_level("0"), None);
        assert_eq!(parse_level("x"), None);
    }

    /// A seeded generator for the simulations.
    struct XorShift(u64);

    impl XorShift {
        fn unit(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }

        /// `n` draws among the categories of `shares`: counts per category.
        fn multinomial(&mut self, shares: &[f64], n: usize) -> Vec<f64> {
            let mut counts = vec![0.0; shares.len()];
            for _ in 0..n {
                let mut u = self.unit();
                let mut i = 0;
                while i + 1 < shares.len() && u >= shares[i] {
                    u -= shares[i];
                    i += 1;
                }
                counts[i] += 1.0;
            }
            counts
        }
    }

    /// The gate's decision on two draws: any function's share grew
    /// significantly (Holm at 95%) by more than `points`.
    fn gate_fires(old: &[f64], new: &[f64], points: f64) -> bool {
        let (n1, n2): (f64, f64) = (old.iter().sum(), new.iter().sum());
        let z = z_for(0.95);
        let changes: Vec<Change> = old
            .iter()
            .zip(new)
            .map(|(&k1, &k2)| two_proportions(k1, n1, k2, n2, z))
            .collect();
        let significant = holm(&changes.iter().map(|c| c.p_value).collect::<Vec<_>>(), 0.05);
        changes
            .iter()
            .zip(significant)
            .any(|(c, s)| s && c.delta * 100.0 > points)
    }

    #[test]
    fn gate_fires_at_most_5_percent_of_the_time_on_noise() {
        // Pairs of profiles drawn from one distribution (ten functions,
        // 2000 samples each): the gate at 0 points fires in at most 5%.
        let shares = [0.30, 0.20, 0.12, 0.10, 0.08, 0.06, 0.05, 0.04, 0.03, 0.02];
        let mut rng = XorShift(0x9e3779b97f4a7c15);
        let fired = (0..1000)
            .filter(|_| {
                let a = rng.multinomial(&shares, 2000);
                let b = rng.multinomial(&shares, 2000);
                gate_fires(&a, &b, 0.0)
            })
            .count();
        eprintln!("noise: the gate fired {fired} times in 1000");
        assert!(fired <= 50, "fired {fired} times in 1000");
    }

    #[test]
    fn gate_fires_at_least_95_percent_of_the_time_on_a_doubling() {
        // One function's share doubles from 5% to 10% (2000 samples each).
        let before = [0.50, 0.25, 0.15, 0.05, 0.05];
        let after = [0.475, 0.2375, 0.1425, 0.10, 0.045];
        let mut rng = XorShift(0x2545f4914f6cdd1d);
        let fired = (0..1000)
            .filter(|_| {
                let a = rng.multinomial(&before, 2000);
                let b = rng.multinomial(&after, 2000);
                gate_fires(&a, &b, 1.0)
            })
            .count();
        eprintln!("doubling: the gate fired {fired} times in 1000");
        assert!(fired >= 950, "fired {fired} times in 1000");
    }
}
