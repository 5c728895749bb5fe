//! Confidence intervals that need no resampling: the order-statistic
//! interval of a median, the t interval of paired log ratios, and a metric's
//! median CI as the reports show it (distribution-free for one boot, the
//! clustered bootstrap for several). Computation only: no text.

use std::cell::RefCell;
use std::collections::HashMap;

use super::bootstrap::{median_ci_boots, never, ChangeCi, Draws};
use super::distributions::t_two_sided_quantile;
use super::location::{mean_var, Summary};
use crate::schema::Metric;

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
