//! Change points in a metric's history: E-divisive means (Matteson and
//! James, "A Nonparametric Approach for Multiple Change Point Analysis of
//! Multivariate Data", JASA 2014), with exponent 1 and each split's
//! right end at its segment's end (as Apache Otava/hunter does), and a
//! permutation test deciding each split.
//!
//! One value a run in run order (each run's median of the metric). The
//! best split of every segment is found; the strongest is tested by
//! shuffling its segment `permutations` times: its p-value is the share
//! of shuffles whose best split is at least as strong (counting the
//! observed order once). Below `significance` the split is kept and both
//! halves are searched again; otherwise the search ends. Distances are
//! absolute differences of logs, so a step of +10% weighs the same at
//! 1 us as at 100 us.

use super::bootstrap::{never, quantile_change_ci, Draws};
use super::location::median;
use super::rng::Xoshiro256;

/// The detector's parameters (docs/statistics.md gives the defaults and
/// the false-alarm rate they were measured at).
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// A split is kept when its permutation p-value is at most this.
    pub significance: f64,
    pub permutations: usize,
    /// The fewest runs on either side of a split.
    pub min_size: usize,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            significance: 0.001,
            permutations: 999,
            min_size: 3,
            seed: 0x6b6d_6370,
        }
    }
}

/// A change point: the value at index `at` is the first of the new level.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    pub at: usize,
    pub p: f64,
    /// Medians of the runs since the previous change point (or the
    /// start) and up to the next one (or the end).
    pub before: f64,
    pub after: f64,
    /// after against before, in percent, with a 95% bootstrap CI.
    pub pct: f64,
    pub ci: Option<(f64, f64)>,
}

/// The change points of `xs` (positive, finite values; others make no
/// split), in order.
pub fn detect(xs: &[f64], p: &Params) -> Vec<ChangePoint> {
    if xs.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return vec![];
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let mut rng = Xoshiro256::new(p.seed);
    let mut cuts: Vec<usize> = vec![0, xs.len()];
    let mut found: Vec<(usize, f64)> = Vec::new();
    loop {
        // The strongest split over all segments.
        let best = cuts
            .windows(2)
            .filter_map(|w| {
                best_split(&logs[w[0]..w[1]], p.min_size).map(|(t, q)| (w[0], w[1], t, q))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((a, b, t, q)) = best else { break };
        let pv = permutation_p(&logs[a..b], q, p, &mut rng);
        if pv > p.significance {
            break;
        }
        found.push((a + t, pv));
        cuts.push(a + t);
        cuts.sort_unstable();
    }
    found.sort_by_key(|f| f.0);
    let mut out = Vec::new();
    for (i, &(at, pv)) in found.iter().enumerate() {
        let from = if i == 0 { 0 } else { found[i - 1].0 };
        let to = found.get(i + 1).map_or(xs.len(), |f| f.0);
        let (l, r) = (&xs[from..at], &xs[at..to]);
        let (before, after) = (median(l), median(r));
        let d = Draws {
            confidence: 0.95,
            resamples: 2000,
            seed: p.seed,
            stop: &never,
        };
        let ci = quantile_change_ci(l, r, 0.5, &d).map(|c| (c.lo, c.hi));
        out.push(ChangePoint {
            at,
            p: pv,
            before,
            after,
            pct: 100.0 * (after / before - 1.0),
            ci,
        });
    }
    out
}

/// The split of `x` with the largest divergence statistic, as (index of
/// the first value after it, statistic); None when `x` is too short. The
/// left sample is `x[..t]`, the right one `x[t..k]` for the best `k`
/// (the paper's kappa): a level that comes back later does not hide the
/// step.
fn best_split(x: &[f64], min_size: usize) -> Option<(usize, f64)> {
    let n = x.len();
    let min = min_size.max(2);
    if n < 2 * min {
        return None;
    }
    // to[j * (n + 1) + t] = sum of |x_i - x_j| over i < t (t <= j).
    let w = n + 1;
    let mut to = vec![0.0; n * w];
    for j in 0..n {
        for t in 0..j {
            to[j * w + t + 1] = to[j * w + t] + (x[t] - x[j]).abs();
        }
    }
    // Pairs within x[..t].
    let mut within_left = vec![0.0; w];
    for t in 1..n {
        within_left[t + 1] = within_left[t] + to[t * w + t];
    }
    let mut best: Option<(usize, f64)> = None;
    for t in min..=n - min {
        let m = t as f64;
        let wx = within_left[t] / (m * (m - 1.0) / 2.0);
        let (mut cross, mut wy) = (0.0, 0.0);
        for k in t + 1..=n {
            let j = k - 1;
            cross += to[j * w + t];
            // |x_j - x_l| over t <= l < j.
            wy += to[j * w + j] - to[j * w + t];
            if k - t < min {
                continue;
            }
            let kk = (k - t) as f64;
            let e = 2.0 * cross / (m * kk) - wx - wy / (kk * (kk - 1.0) / 2.0);
            let q = m * kk / (m + kk) * e;
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((t, q));
            }
        }
    }
    best
}

/// The permutation p-value of a best split of strength `q` in `x`; stops
/// early once it cannot fall to `significance`.
fn permutation_p(x: &[f64], q: f64, p: &Params, rng: &mut Xoshiro256) -> f64 {
    let mut y = x.to_vec();
    let mut at_least = 1usize;
    let limit = (p.significance * (p.permutations + 1) as f64).floor() as usize;
    for done in 1..=p.permutations {
        for i in (1..y.len()).rev() {
            y.swap(i, rng.below(i + 1));
        }
        if best_split(&y, p.min_size).map_or(0.0, |b| b.1) >= q {
            at_least += 1;
            if at_least > limit {
                return at_least as f64 / (done + 1) as f64;
            }
        }
    }
    at_least as f64 / (p.permutations + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level with a deterministic wobble of +-`amp` (fraction), period 5.
    fn level(n: usize, at: f64, amp: f64) -> Vec<f64> {
        let w = [0.0, 1.0, -1.0, 0.5, -0.5];
        (0..n).map(|i| at * (1.0 + amp * w[i % 5])).collect()
    }

    #[test]
    fn one_step_is_found_where_it_was_planted() {
        let mut xs = level(15, 100.0, 0.02);
        xs.extend(level(15, 115.0, 0.02));
        let cps = detect(&xs, &Params::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].at, 15);
        assert!(cps[0].p <= 0.01, "{}", cps[0].p);
        assert!((cps[0].pct - 15.0).abs() < 1.0, "{}", cps[0].pct);
        let (lo, hi) = cps[0].ci.unwrap();
        assert!(lo > 5.0 && hi < 25.0, "{lo} {hi}");
    }

    #[test]
    fn two_steps_are_both_found_in_order() {
        let mut xs = level(10, 100.0, 0.02);
        xs.extend(level(10, 130.0, 0.02));
        xs.extend(level(10, 100.0, 0.02));
        let at: Vec<usize> = detect(&xs, &Params::default())
            .iter()
            .map(|c| c.at)
            .collect();
        assert_eq!(at, vec![10, 20]);
    }

    #[test]
    fn a_flat_wobbling_history_has_no_change_point() {
        let xs = level(30, 100.0, 0.05);
        assert_eq!(detect(&xs, &Params::default()), vec![]);
    }

    #[test]
    fn a_step_too_near_an_end_or_a_bad_value_makes_no_split() {
        let mut xs = level(20, 100.0, 0.01);
        xs.extend([150.0, 150.0]);
        assert!(detect(&xs, &Params::default()).is_empty());
        assert!(detect(&[1.0, 2.0, f64::NAN, 1.0, 2.0, 1.0], &Params::default()).is_empty());
        assert!(detect(&[], &Params::default()).is_empty());
    }

    #[test]
    fn a_short_history_cannot_show_a_change_at_the_default_level() {
        // A clean step, 3 runs a side: one order in C(6, 3) = 20 splits
        // it as well, so p >= 1/20 whatever the step's size. Eight a
        // side, C(16, 8) = 12870 orders: found.
        let step = |k: usize| -> Vec<f64> {
            let mut xs = level(k, 100.0, 0.01);
            xs.extend(level(k, 150.0, 0.01));
            xs
        };
        assert!(detect(&step(3), &Params::default()).is_empty());
        let cps = detect(&step(8), &Params::default());
        assert_eq!(cps.iter().map(|c| c.at).collect::<Vec<_>>(), vec![8]);
    }

    #[test]
    fn white_noise_raises_about_the_nominal_rate_of_alarms() {
        // 400 histories of 30 log-normal values (5% spread): at the 0.1%
        // level 0.4 histories with an alarm are expected.
        let mut rng = Xoshiro256::new(42);
        let mut u = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let mut alarms = 0;
        for _ in 0..400 {
            let xs: Vec<f64> = (0..30)
                .map(|_| {
                    let (a, b) = (u(), u());
                    let z = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
                    100.0 * (0.05 * z).exp()
                })
                .collect();
            alarms += usize::from(!detect(&xs, &Params::default()).is_empty());
        }
        assert!(alarms <= 3, "{alarms} of 400");
    }

    #[test]
    fn the_statistic_is_the_papers_on_a_small_example() {
        // x = 0,0,1,1 split at 2: cross mean 1, within means 0, so
        // E = 2*1 - 0 - 0 = 2 and Q = (2*2/4) * 2 = 2. At 1 or 3 the
        // split is shorter than min_size 2.
        assert_eq!(best_split(&[0.0, 0.0, 1.0, 1.0], 2), Some((2, 2.0)));
        // x = 0,1,0,1: cross |0-0|,|0-1|,|1-0|,|1-1| mean 0.5, within
        // means 1 and 1: E = 1 - 1 - 1 = -1, Q = -1.
        assert_eq!(best_split(&[0.0, 1.0, 0.0, 1.0], 2), Some((2, -1.0)));
    }
}
