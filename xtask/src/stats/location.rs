//! Where a sample lies: median, quantiles (numpy's linear method), the
//! descriptive summary. Plain arithmetic on slices; no resampling, tests or
//! intervals beyond the summary's order-statistic one live here.
//!
//! Everything here is written to reproduce what numpy reports for the same
//! input, so a figure printed by the harness can be cross-checked with a
//! one-line Python command. NaN filtering is the caller's job: NaNs are
//! neither rejected nor skipped here.

/// Descriptive statistics of one sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub mean: f64,
    /// Sample standard deviation (divides by n-1); 0 when n < 2.
    pub stddev: f64,
    /// stddev / mean; 0 when n < 2 or when all samples are equal.
    pub cv: f64,
    /// Distribution-free 95% confidence interval of the median, taken from order statistics
    /// (binomial rule); `None` when n < 6, where even (min, max) covers less than 95%.
    pub median_ci: Option<(f64, f64)>,
}

/// Median; the mean of the two middle values for even n, NaN for an empty slice.
pub fn median(xs: &[f64]) -> f64 {
    let mut buf = xs.to_vec();
    median_in_place(&mut buf)
}

/// Quantile of an already sorted (ascending) slice with numpy's default 'linear' method.
///
/// Returns NaN for an empty slice or a `q` outside [0, 1], rather than panicking, because
/// callers feed it computed confidence levels and a NaN is easier to spot than a crash.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    quantile_by(sorted.len(), q, |k| sorted[k])
}

/// `quantile` of `n` values given by their order statistics: `os(k)` is
/// the k-th smallest (0-based). Only `os(i)` and `os(i + 1)` are asked
/// for, in that order; the bootstrap answers from counts of ranks.
pub(super) fn quantile_by(n: usize, q: f64, mut os: impl FnMut(usize) -> f64) -> f64 {
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q;
    let lo = h.floor();
    let t = h - lo;
    let i = lo as usize;
    // An exact hit must not touch the neighbour: with an infinite neighbour numpy's
    // lerp would turn inf * 0 into NaN, and bootstrap ratios can be infinite.
    if t == 0.0 || i + 1 >= n {
        return os(i);
    }
    let a = os(i);
    let b = os(i + 1);
    let d = b - a;
    if !d.is_finite() && a.is_finite() && b.is_finite() {
        // Finite ends further apart than f64 reaches (-1e308 and 1e308):
        // weigh them apart rather than overflow.
        return a * (1.0 - t) + b * t;
    }
    // Same two-sided lerp as numpy's `_lerp`, so results agree to the last bit and the
    // upper end is hit exactly.
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// The mean of two middle values: (a + b) / 2, or a / 2 + b / 2 when the
/// sum of two finite values overflows (1e308 twice), so the median of
/// finite samples is finite. Halving is exact, so the two agree whenever
/// the sum does not overflow.
pub(super) fn midpoint(a: f64, b: f64) -> f64 {
    let s = a + b;
    if s.is_finite() || !(a.is_finite() && b.is_finite()) {
        s / 2.0
    } else {
        a / 2.0 + b / 2.0
    }
}

/// `location` of `n` values given by their order statistics, as
/// `quantile_by` takes them: the median (`q` 0.5) is the middle one, or
/// the `midpoint` of the two, as `median_in_place` finds it.
pub(super) fn location_by(n: usize, q: f64, mut os: impl FnMut(usize) -> f64) -> f64 {
    if q != 0.5 {
        return quantile_by(n, q, os);
    }
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    if n % 2 == 1 {
        return os(mid);
    }
    let lower = os(mid - 1);
    midpoint(lower, os(mid))
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

/// Summary statistics of `samples`; `None` for an empty slice.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let stddev = if n < 2 {
        0.0
    } else {
        // Two-pass form: the one-pass sum-of-squares formula cancels catastrophically for
        // benchmark timings, which have a large mean and a tiny spread.
        let ss: f64 = sorted.iter().map(|x| (x - mean) * (x - mean)).sum();
        (ss / (n - 1) as f64).sqrt()
    };
    let cv = if n < 2 || stddev == 0.0 {
        0.0
    } else {
        stddev / mean
    };
    let median_ci = median_ci_rank(n).map(|k| (sorted[k - 1], sorted[n - k]));
    Some(Summary {
        n,
        min: sorted[0],
        median: median_of_sorted(&sorted),
        max: sorted[n - 1],
        mean,
        stddev,
        cv,
        median_ci,
    })
}

/// The `q` quantile of `xs` (numpy's linear method); 0.5 is the median.
pub fn location(xs: &[f64], q: f64) -> f64 {
    let mut buf = xs.to_vec();
    location_in_place(&mut buf, q)
}

/// `location` that reorders `buf`: the median by selection (the bootstrap
/// calls this thousands of times), other quantiles by a sort.
pub(super) fn location_in_place(buf: &mut [f64], q: f64) -> f64 {
    if q == 0.5 {
        return median_in_place(buf);
    }
    buf.sort_unstable_by(f64::total_cmp);
    quantile(buf, q)
}

pub(super) fn pct_of(new_med: f64, base_med: f64) -> f64 {
    100.0 * (new_med / base_med - 1.0)
}

/// Median that reorders `buf`; selection instead of a full sort because the bootstrap calls
/// this thousands of times.
pub(super) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    if n == 0 {
        return f64::NAN;
    }
    let mid = n / 2;
    let (left, &mut upper, _) = buf.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        return upper;
    }
    let lower = left
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .expect("even n >= 2 leaves a non-empty left half");
    midpoint(lower, upper)
}

pub(super) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        midpoint(sorted[n / 2 - 1], sorted[n / 2])
    }
}

/// Mean and sample variance (n - 1) of at least 2 values.
pub(super) fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (
        mean,
        x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    use crate::stats::testutil::assert_close;

    #[test]
    fn median_basic() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[42.0]), 42.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn quantile_matches_numpy_linear() {
        // numpy 2.4.6: python -c "import numpy as np; print([np.quantile([3.0,1.0,4.0,1.5,9.0,2.6], q) for q in (0,.025,.1,.5,.9,.975,1)])"
        let mut xs = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6];
        xs.sort_by(f64::total_cmp);
        let expected = [
            (0.0, 1.0),
            (0.025, 1.0625),
            (0.1, 1.25),
            (0.5, 2.8),
            (0.9, 6.5),
            (0.975, 8.375),
            (1.0, 9.0),
        ];
        for (q, want) in expected {
            assert_close(quantile(&xs, q), want, 1e-15);
        }
        assert_eq!(quantile(&[5.0], 0.3), 5.0);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(quantile(&xs, 1.5).is_nan());
        assert!(quantile(&xs, f64::NAN).is_nan());
    }

    #[test]
    fn summarize_odd_even_and_single() {
        // numpy 2.4.6: np.median, np.mean, np.std(x, ddof=1), and std/mean for each sample.
        let s = summarize(&[3.0, 1.0, 2.0, 7.0, 5.0]).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max), (5, 1.0, 3.0, 7.0));
        assert_close(s.mean, 3.6, 1e-15);
        assert_close(s.stddev, 2.4083189157584592, 1e-14);
        assert_close(s.cv, 0.668977476599572, 1e-14);
        assert_eq!(s.median_ci, None);

        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max), (4, 1.0, 2.5, 4.0));
        assert_close(s.mean, 2.5, 1e-15);
        assert_close(s.stddev, 1.2909944487358056, 1e-14);
        assert_close(s.cv, 0.5163977794943222, 1e-14);

        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.median, 4.5);
        assert_close(s.stddev, 2.138089935299395, 1e-14);
        assert_close(s.cv, 0.427617987059879, 1e-14);
        // n = 8 gives k = 1: the interval is the full range.
        assert_eq!(s.median_ci, Some((2.0, 9.0)));

        let s = summarize(&[42.0]).unwrap();
        assert_eq!(
            s,
            Summary {
                n: 1,
                min: 42.0,
                median: 42.0,
                max: 42.0,
                mean: 42.0,
                stddev: 0.0,
                cv: 0.0,
                median_ci: None,
            }
        );
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn summarize_constant_has_zero_cv() {
        let s = summarize(&[3.5; 10]).unwrap();
        assert_eq!((s.stddev, s.cv), (0.0, 0.0));
        assert_eq!(s.median_ci, Some((3.5, 3.5)));
    }

    #[test]
    fn summarize_median_ci_uses_order_statistics() {
        // Shuffled 1..=10: the CI must be (x(2), x(9)) of the sorted sample.
        let xs = [7.0, 3.0, 10.0, 1.0, 5.0, 9.0, 2.0, 8.0, 4.0, 6.0];
        let s = summarize(&xs).unwrap();
        assert_eq!(s.median, 5.5);
        assert_eq!(s.median_ci, Some((2.0, 9.0)));
        // n = 6 is the smallest n with a 95% interval: the full range.
        let s = summarize(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]).unwrap();
        assert_eq!(s.median_ci, Some((1.0, 6.0)));
        assert_eq!(
            summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap().median_ci,
            None
        );
    }

    #[test]
    fn every_median_is_the_middle_value_or_the_mean_of_the_two() {
        // By hand: sorted, the middle value, or the mean of the two middle
        // ones.
        let cases: [(&[f64], f64); 5] = [
            (&[5.0, -1.0, 3.0, 3.0, 8.0], 3.0),
            (&[9.0, 2.0, 7.0, 4.0, 6.0, 1.0], 5.0),
            (&[0.5, 0.25], 0.375),
            (&[2.0, 2.0, 2.0, 1.0], 2.0),
            (&[10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0], 5.5),
        ];
        for (xs, want) in cases {
            assert_eq!(median(xs), want, "{xs:?}");
            assert_eq!(median_in_place(&mut xs.to_vec()), want, "{xs:?}");
            assert_eq!(location(xs, 0.5), want, "{xs:?}");
            let mut sorted = xs.to_vec();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(median_of_sorted(&sorted), want, "{xs:?}");
        }
        // 1..=n in a scrambled order (odd values up, even values down):
        // the median is (n + 1) / 2.
        for n in 1..40u32 {
            let xs: Vec<f64> = (1..=n)
                .filter(|i| i % 2 == 1)
                .chain((1..=n).rev().filter(|i| i % 2 == 0))
                .map(f64::from)
                .collect();
            assert_eq!(median(&xs), f64::from(n + 1) / 2.0, "n = {n}");
        }
    }
}
