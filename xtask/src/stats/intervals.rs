//! Confidence intervals that need no resampling: the order-statistic
//! interval of a median, the t interval of paired log ratios, and a metric's
//! median CI as the reports show it (distribution-free for one boot, the
//! clustered bootstrap for several). Computation only: no text.

use std::cell::RefCell;
use std::collections::HashMap;

use super::bootstrap::{median_ci_boots, never, Draws};
use super::distributions::t_two_sided_quantile;
use super::location::{mean_var, Summary};
use crate::schema::Metric;

/// Bootstrap confidence interval of the percent change between two medians.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeCi {
    /// 100 * (median(new) / median(base) - 1)
    pub pct_change: f64,
    /// Interval bounds, in percent.
    pub lo: f64,
    pub hi: f64,
}

/// 1-indexed rank k such that (x(k), x(n+1-k)) is the narrowest order-statistic interval
/// covering the median with probability >= 95%; `None` if no such k >= 1 exists (n < 6).
///
/// The count of samples below the true median is Binomial(n, 1/2), so the interval misses
/// with probability 2 * P(B <= k-1). We take the largest k with P(B <= k-1) <= 0.025.
pub(super) fn median_ci_rank(n: usize) -> Option<usize> {
    const TAIL: f64 = 0.025;
    // Log space because 2^-n underflows past n = 1074; terms that underflow there are far
    // below TAIL and cannot move the answer.
    let nf = n as f64;
    let mut ln_pmf = -nf * std::f64::consts::LN_2;
    let mut cdf = 0.0;
    for i in 0..=n {
        cdf += ln_pmf.exp();
        if cdf > TAIL {
            return if i == 0 { None } else { Some(i) };
        }
        ln_pmf += ((nf - i as f64) / (i as f64 + 1.0)).ln();
    }
    None
}

/// The change of paired boots: `d` = ln(new_i / base_i) of each pair's
/// statistics (boot i of each side, run back to back). The change is the
/// geometric mean of the pair ratios, its (1 - `level`) CI the t interval
/// of the mean log ratio (n - 1 df), both in percent. A host state shared by the
/// two boots of a pair cancels; a pair split by a change of host state
/// widens the interval instead of moving a pooled median between modes.
/// None for fewer than 2 pairs.
pub fn paired_log_change_ci(d: &[f64], level: f64) -> Option<ChangeCi> {
    if d.len() < 2 || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = d.len() as f64;
    let (mean, var) = mean_var(d);
    let h = t_two_sided_quantile(level, n - 1.0) * (var / n).sqrt();
    let pct = |x: f64| 100.0 * (x.exp() - 1.0);
    Some(ChangeCi {
        pct_change: pct(mean),
        lo: pct(mean - h),
        hi: pct(mean + h),
    })
}

/// The 95% CI of a metric's median: distribution-free for one boot; over
/// several boots a bootstrap that resamples boots, then samples, so the
/// spread between boots counts.
pub fn median_ci(m: &Metric, x: &Summary) -> Option<(f64, f64)> {
    median_ci_until(m, x, &never)
}

/// `median_ci`, given up (None) when `stop` says so.
fn median_ci_until(m: &Metric, x: &Summary, stop: &dyn Fn() -> bool) -> Option<(f64, f64)> {
    let boots = m.by_boot();
    if boots.len() > 1 {
        let d = Draws {
            confidence: 0.95,
            resamples: 4000,
            seed: 0x6b6d,
            stop,
        };
        median_ci_boots(&boots, &d)
    } else {
        x.median_ci
    }
}

/// A median's CI, or none.
type Ci = Option<(f64, f64)>;

/// The median CIs of a run's metrics as its reports show them, each
/// computed once however many reports show it (a bootstrap of a metric of
/// many samples is the costly part of a report), and none once `stop`
/// says so (the reports are then not written).
pub struct MedianCis<'a> {
    stop: &'a dyn Fn() -> bool,
    /// By the metric's address: the run is borrowed while reports are made.
    done: RefCell<HashMap<(usize, usize), Ci>>,
}

impl<'a> MedianCis<'a> {
    pub fn new(stop: &'a dyn Fn() -> bool) -> MedianCis<'a> {
        MedianCis {
            stop,
            done: RefCell::new(HashMap::new()),
        }
    }

    /// `median_ci` of `m` (`x` its summary).
    pub fn get(&self, m: &Metric, x: &Summary) -> Option<(f64, f64)> {
        let key = (m as *const Metric as usize, m.samples.as_ptr() as usize);
        if let Some(&ci) = self.done.borrow().get(&key) {
            return ci;
        }
        if (self.stop)() {
            return None;
        }
        let ci = median_ci_until(m, x, self.stop);
        if !(self.stop)() {
            self.done.borrow_mut().insert(key, ci);
        }
        ci
    }
}

/// Half the width of a median's CI in percent of the median: the precision
/// figure reported per metric and compared with `target_ci_pct`.
pub fn ci_half_pct(ci: Option<(f64, f64)>, median: f64) -> Option<f64> {
    ci.filter(|_| median > 0.0)
        .map(|(lo, hi)| 50.0 * (hi - lo) / median)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testutil::assert_close;

    #[test]
    fn median_ci_rank_matches_binomial_rule() {
        // k = largest rank with P(Binom(n, 1/2) <= k-1) <= 0.025, so (x(k), x(n+1-k)) covers
        // the median with probability 1 - 2 P(B <= k-1) >= 95%. For n = 10:
        // P(B <= 1) = 11/1024 = 0.0107 but P(B <= 2) = 56/1024 = 0.0547, so k = 2 and the
        // interval is (x(2), x(9)) with coverage 1002/1024 = 97.85%.
        // Expected k from scipy 1.17.1: python -c "from scipy.stats import binom; print(int(binom.ppf(0.025, N, 0.5)))"
        // (ppf is the smallest j with cdf(j) >= 0.025, i.e. exactly this k; cross-checked
        // with exact integer arithmetic using math.comb.) n = 5 gives 0: no 95% interval.
        let table = [
            (1, 0),
            (5, 0),
            (6, 1),
            (7, 1),
            (8, 1),
            (9, 2),
            (10, 2),
            (11, 2),
            (12, 3),
            (15, 4),
            (20, 6),
            (25, 8),
            (30, 10),
            (50, 18),
            (100, 40),
            (101, 41),
            (1000, 469),
            (5000, 2431),
        ];
        for (n, k) in table {
            let want = if k == 0 { None } else { Some(k) };
            assert_eq!(median_ci_rank(n), want, "n = {n}");
        }
    }

    #[test]
    fn paired_log_change_is_the_t_interval_of_the_mean_log_ratio() {
        // d = 0.01..0.05: mean 0.03, variance 0.00025, 4 df; t(0.975, 4) =
        // 2.776445105197793 (tables: 2.776).
        let d = [0.01, 0.02, 0.03, 0.04, 0.05];
        let ci = paired_log_change_ci(&d, 0.05).unwrap();
        let h = 2.776445105197793 * (0.00025f64 / 5.0).sqrt();
        assert_close(ci.pct_change, 100.0 * (0.03f64.exp() - 1.0), 1e-9);
        assert_close(ci.lo, 100.0 * ((0.03 - h).exp() - 1.0), 1e-6);
        assert_close(ci.hi, 100.0 * ((0.03 + h).exp() - 1.0), 1e-6);
        assert!(paired_log_change_ci(&d[..1], 0.05).is_none());
        // A 99% interval: t(0.995, 4) = 4.604094 (tables: 4.604).
        let ci99 = paired_log_change_ci(&d, 0.01).unwrap();
        let h99 = 4.604094 * (0.00025f64 / 5.0).sqrt();
        assert_close(ci99.lo, 100.0 * ((0.03 - h99).exp() - 1.0), 1e-4);
    }
}
