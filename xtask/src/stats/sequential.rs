//! Planned looks at a comparison while its boots come in: the group
//! sequential design behind adaptive boots. A run boots every cell
//! `first` times, then `step` more at a time while a comparison is
//! undecided, up to `max`: the looks are at first, first + step, ..., max
//! boots (pairs). At each look the comparison is judged with a repeated
//! confidence interval at that look's nominal level, so that over all
//! looks together the chance that any interval misses the true change is
//! at most ALPHA (Jennison and Turnbull, "Group Sequential Methods with
//! Applications to Clinical Trials", 2000, ch. 9). "Improved"/"regressed"
//! (the interval excludes zero) and "no change" (it lies within +-min
//! effect) are then both wrong at most that often, however many looks a
//! comparison took.
//!
//! The nominal levels come from an alpha-spending function (Lan and
//! DeMets, Biometrika 1983): the Pocock-type `ALPHA * ln(1 + (e - 1) t)`,
//! t the share of the maximum boots reached, which spends alpha evenly
//! enough that an early look can stop a comparison. The two-sided
//! boundaries are exact for the correlated looks of a sum of independent
//! increments (the recursion of Armitage, McPherson and Rowe, JRSS A 1969,
//! integrated numerically); each look's nominal level is the two-sided
//! normal tail of its boundary, used with the t distribution of the
//! boots at hand (the "significance level approach" of Jennison and
//! Turnbull, ch. 3.8). Pure numbers: no runs, no cells.

use super::distributions::{normal_cdf, normal_quantile};

pub use crate::schema::Looks as Plan;

/// How alpha is spent over the looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spending {
    /// `alpha * ln(1 + (e - 1) t)`: about even, so early looks can stop.
    Pocock,
    /// Each side `2 - 2 Phi(z(1 - alpha/4) / sqrt t)`: almost nothing early.
    /// Not used by a run: its published table checks the recursion.
    #[cfg_attr(not(test), allow(dead_code))]
    OBrienFleming,
}

/// Alpha spent by information fraction `t` (0..=1).
pub fn spent(s: Spending, alpha: f64, t: f64) -> f64 {
    let t = t.clamp(0.0, 1.0);
    match s {
        Spending::Pocock => alpha * (1.0 + (std::f64::consts::E - 1.0) * t).ln(),
        Spending::OBrienFleming => {
            if t == 0.0 {
                0.0
            } else {
                2.0 * (2.0 - 2.0 * normal_cdf(normal_quantile(1.0 - alpha / 4.0) / t.sqrt()))
            }
        }
    }
}

/// Grid points across a look's continuation interval (odd, for Simpson).
const GRID: usize = 401;

/// The two-sided boundaries |Z_k| >= c_k of looks at information
/// `info` (increasing; boots or pairs), spending `alpha` in all by `s`:
/// under no change, the chance of crossing at look k and at no earlier
/// look is the alpha spent between the two.
pub fn boundaries(info: &[f64], alpha: f64, s: Spending) -> Vec<f64> {
    let Some(&last) = info.last() else {
        return vec![];
    };
    let mut out = Vec::with_capacity(info.len());
    // Sub-density of Z at the previous look over its continuation
    // interval, on a grid: (z values, density values).
    let mut prev: Option<(Vec<f64>, Vec<f64>)> = None;
    let mut spent_before = 0.0;
    for (k, &n) in info.iter().enumerate() {
        let a = (spent(s, alpha, n / last) - spent_before).max(0.0);
        spent_before += a;
        let c = match &prev {
            None => normal_quantile(1.0 - a / 2.0),
            Some((z, g)) => {
                let (n0, sigma) = (info[k - 1], (n - info[k - 1]).sqrt());
                // Crossing mass at c: every surviving path's chance to land
                // beyond +-c at this look.
                let cross = |c: f64| {
                    let w = simpson_weights(z);
                    z.iter()
                        .zip(g)
                        .zip(&w)
                        .map(|((&u, &gu), &wu)| {
                            let m = u * n0.sqrt();
                            let hi = (c * n.sqrt() - m) / sigma;
                            let lo = (-c * n.sqrt() - m) / sigma;
                            wu * gu * (normal_cdf(lo) + (1.0 - normal_cdf(hi)))
                        })
                        .sum::<f64>()
                };
                bisect_down(cross, a)
            }
        };
        out.push(c);
        // The surviving sub-density at this look, for the next.
        let z: Vec<f64> = (0..GRID)
            .map(|i| -c + 2.0 * c * i as f64 / (GRID - 1) as f64)
            .collect();
        let g: Vec<f64> = match &prev {
            None => z.iter().map(|&x| phi(x)).collect(),
            Some((pz, pg)) => {
                let (n0, sigma) = (info[k - 1], (n - info[k - 1]).sqrt());
                let w = simpson_weights(pz);
                z.iter()
                    .map(|&x| {
                        pz.iter()
                            .zip(pg)
                            .zip(&w)
                            .map(|((&u, &gu), &wu)| {
                                wu * gu * phi((x * n.sqrt() - u * n0.sqrt()) / sigma) * n.sqrt()
                                    / sigma
                            })
                            .sum()
                    })
                    .collect()
            }
        };
        prev = Some((z, g));
    }
    out
}

/// The c in [0, 40] with f(c) = target, f decreasing in c.
fn bisect_down(f: impl Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 40.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

fn phi(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Simpson's weights for an evenly spaced grid of odd length.
fn simpson_weights(z: &[f64]) -> Vec<f64> {
    let n = z.len();
    if n < 3 {
        return vec![0.0; n];
    }
    let h = (z[n - 1] - z[0]) / (n - 1) as f64;
    (0..n)
        .map(|i| {
            let m = if i == 0 || i == n - 1 {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            m * h / 3.0
        })
        .collect()
}

impl Plan {
    /// The plan of a run that boots `first` times and may add boots `step`
    /// at a time up to `max`; None when no boot may be added (one look: a
    /// fixed number of boots, judged at ALPHA).
    pub fn new(first: u32, step: u32, max: u32) -> Option<Plan> {
        (max > first && first >= 1 && step >= 1).then_some(Plan { first, step, max })
    }

    /// The looks' boots: first, first + step, ..., max.
    pub fn looks(&self) -> Vec<u32> {
        let mut v: Vec<u32> = (0..)
            .map(|i| self.first + i * self.step)
            .take_while(|&n| n < self.max)
            .collect();
        v.push(self.max);
        v
    }

    /// The look a comparison of `n` boots (pairs) is at: the last look at
    /// or below n (the first, below it), counted from 0.
    pub fn look_of(&self, n: u32) -> usize {
        self.looks().iter().rposition(|&l| l <= n).unwrap_or(0)
    }

    /// The nominal two-sided level of each look, spending `alpha` in all
    /// (computed once per plan and alpha in a thread).
    pub fn nominal_levels(&self, alpha: f64) -> Vec<f64> {
        type Known = Vec<((Plan, u64), Vec<f64>)>;
        thread_local! {
            static KNOWN: std::cell::RefCell<Known> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let key = (*self, alpha.to_bits());
        if let Some(v) = KNOWN.with(|k| {
            k.borrow()
                .iter()
                .find(|(x, _)| *x == key)
                .map(|(_, v)| v.clone())
        }) {
            return v;
        }
        let info: Vec<f64> = self.looks().iter().map(|&n| n as f64).collect();
        let v: Vec<f64> = boundaries(&info, alpha, Spending::Pocock)
            .into_iter()
            .map(|c| 2.0 * (1.0 - normal_cdf(c)))
            .collect();
        KNOWN.with(|k| k.borrow_mut().push((key, v.clone())));
        v
    }

    /// The nominal level a comparison of `n` boots (pairs) is judged at.
    pub fn level_at(&self, n: u32, alpha: f64) -> f64 {
        self.nominal_levels(alpha)[self.look_of(n)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testutil::assert_close;
    use rand_xoshiro::rand_core::{Rng, SeedableRng};

    /// Lan-DeMets boundaries for 5 equally spaced looks, 0.025 a side, as
    /// gsDesign prints them (`gsDesign(k = 5, test.type = 2, sfu = sfLDOF)`
    /// and `sfu = sfLDPocock`, `$upper$bound`).
    #[test]
    fn boundaries_match_published_tables() {
        let info = [1.0, 2.0, 3.0, 4.0, 5.0];
        let obf = boundaries(&info, 0.05, Spending::OBrienFleming);
        for (got, want) in obf.iter().zip([4.877, 3.357, 2.680, 2.290, 2.031]) {
            assert_close(*got, want, 2e-3);
        }
        let poc = boundaries(&info, 0.05, Spending::Pocock);
        for (got, want) in poc.iter().zip([2.438, 2.427, 2.410, 2.397, 2.386]) {
            assert_close(*got, want, 2e-3);
        }
    }

    /// Under no change, paths of a sum of independent N(0, 1) steps cross
    /// the boundaries somewhere over the looks about alpha of the time,
    /// and a single look at the same levels each would cross more often.
    #[test]
    fn simulated_paths_cross_at_alpha_over_all_looks() {
        let plan = Plan::new(3, 3, 18).expect("sequential");
        let looks = plan.looks();
        assert_eq!(looks, [3, 6, 9, 12, 15, 18]);
        let info: Vec<f64> = looks.iter().map(|&n| n as f64).collect();
        let c = boundaries(&info, 0.05, Spending::Pocock);
        let mut rng = rand_xoshiro::Xoshiro256StarStar::seed_from_u64(7);
        let mut normal = || {
            // Box-Muller from two uniforms in (0, 1].
            let u = |r: &mut rand_xoshiro::Xoshiro256StarStar| -> f64 {
                ((r.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
            };
            let (a, b) = (u(&mut rng), u(&mut rng));
            (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
        };
        let paths = 200_000;
        let (mut crossed, mut crossed_uncorrected) = (0, 0);
        for _ in 0..paths {
            let mut sum = 0.0;
            let mut done = (false, false);
            let mut step = 0;
            for (k, &n) in looks.iter().enumerate() {
                while step < n {
                    sum += normal();
                    step += 1;
                }
                let z = (sum / (n as f64).sqrt()).abs();
                done.0 |= z >= c[k];
                done.1 |= z >= 1.959_964;
            }
            crossed += done.0 as u32;
            crossed_uncorrected += done.1 as u32;
        }
        let rate = crossed as f64 / paths as f64;
        // 200,000 paths: the rate's SD is 0.0005.
        assert!((rate - 0.05).abs() < 0.002, "{rate}");
        assert!(crossed_uncorrected as f64 / paths as f64 > 0.09);
    }

    #[test]
    fn the_plan_knows_its_looks() {
        assert_eq!(Plan::new(6, 3, 6), None);
        let p = Plan::new(3, 3, 10).unwrap();
        assert_eq!(p.looks(), [3, 6, 9, 10]);
        assert_eq!(p.look_of(2), 0);
        assert_eq!(p.look_of(7), 1);
        assert_eq!(p.look_of(10), 3);
        let levels = p.nominal_levels(0.05);
        // The first look spends alpha * ln(1 + (e - 1) 3/10) alone.
        assert_close(
            levels[0],
            0.05 * (1.0 + (std::f64::consts::E - 1.0) * 0.3).ln(),
            1e-9,
        );
        assert!(levels.iter().all(|&l| l > 0.005 && l < 0.05), "{levels:?}");
    }
}
