//! Hypothesis tests: Mann-Whitney U (exact without ties, normal with tie
//! and continuity corrections otherwise, as scipy's 'auto'), Welch's t and
//! the paired t. Test statistics and p-values only: distributions come from
//! `distributions`, and deciding what a p-value means is `compare`'s job.

use super::distributions::{normal_two_sided, student_t_two_sided};
use super::location::mean_var;

/// Result of a two-sided Mann-Whitney U test, as `scipy.stats.mannwhitneyu` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct MannWhitney {
    /// U statistic of the first sample: R1 - n1(n1+1)/2.
    pub u: f64,
    pub p_two_sided: f64,
    /// True when the p-value comes from the exact null distribution rather than the
    /// normal approximation.
    pub exact: bool,
}

/// Welch's two-sample t-test (unequal variances), two-sided: `(t, df, p)`.
/// `None` when a side has fewer than 2 values or both have zero variance.
/// Used on per-boot medians, where each boot is one observation.
pub fn welch_t(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let var = |x: &[f64], m: f64| {
        x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
    };
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (var(a, ma) / na, var(b, mb) / nb);
    if va + vb <= 0.0 {
        return None;
    }
    let t = (ma - mb) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some((t, df, student_t_two_sided(t, df)))
}

/// One-sample (paired) t-test of mean zero, two-sided: `(t, df, p)` for
/// the differences `d` of pairs. `None` for fewer than 2 or no spread.
pub fn paired_t(d: &[f64]) -> Option<(f64, f64, f64)> {
    if d.len() < 2 {
        return None;
    }
    let n = d.len() as f64;
    let (mean, var) = mean_var(d);
    if var <= 0.0 {
        return None;
    }
    let t = mean / (var / n).sqrt();
    Some((t, n - 1.0, student_t_two_sided(t, n - 1.0)))
}

/// Two-sided Mann-Whitney U test matching
/// `scipy.stats.mannwhitneyu(a, b, alternative='two-sided', method='auto', use_continuity=True)`.
///
/// scipy's 'auto' uses the exact null distribution when at least one sample has <= 8
/// observations and there are no ties; otherwise the normal approximation with tie and
/// continuity corrections. One deliberate divergence: if the exact table would be
/// impractically large (the other sample has ~10^5 or more observations), this
/// falls back to the normal approximation and reports `exact: false`.
///
/// Returns `None` if either sample is empty.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let n = n1 + n2;

    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));

    let mut r1 = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Positions i..j share the average of 1-based ranks i+1..=j.
        let avg_rank = (i + 1 + j) as f64 / 2.0;
        let from_a = pooled[i..j].iter().filter(|p| p.1).count();
        r1 += avg_rank * from_a as f64;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let has_ties = tie_term > 0.0;

    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u1 = r1 - n1f * (n1f + 1.0) / 2.0;
    let u2 = n1f * n2f - u1;
    // The two-sided p-value is twice the upper tail of the larger U.
    let u = u1.max(u2);

    let want_exact = (n1 <= 8 || n2 <= 8) && !has_ties;
    if want_exact {
        // No ties, so U is integral and u >= n1*n2/2 makes the complement non-negative.
        let kc = (n1 * n2) - u as usize;
        if let Some(p_lower) = exact_cdf(n1.min(n2), n1.max(n2), kc) {
            return Some(MannWhitney {
                u: u1,
                p_two_sided: (2.0 * p_lower).clamp(0.0, 1.0),
                exact: true,
            });
        }
    }

    let mu = n1f * n2f / 2.0;
    let s = (n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0))))
        .max(0.0)
        .sqrt();
    // s == 0 only when every observation is tied, which forces u == mu: no evidence at all.
    let p = if s == 0.0 {
        1.0
    } else {
        // Subtracting 0.5 is scipy's continuity correction for the upper tail.
        normal_two_sided((u - mu - 0.5) / s)
    };
    Some(MannWhitney {
        u: u1,
        p_two_sided: p.clamp(0.0, 1.0),
        exact: false,
    })
}

/// Largest exact-distribution table (entries of u128, so 64 MiB) we are willing to build;
/// a sample big enough to need more is far past where the normal approximation is accurate.
const EXACT_TABLE_LIMIT: usize = 1 << 22;

/// P(U <= kc) under H0 for samples of sizes m <= n without ties, or `None` if that is too
/// expensive to compute exactly.
///
/// The number of arrangements with U = k is the coefficient of q^k in the Gaussian
/// binomial [m+n choose m]_q = prod_{j=1..m} (1 - q^(n+j)) / (1 - q^j). Building it factor
/// by factor costs O(m * kc), which stays cheap because 'auto' only goes exact when m <= 8.
/// Dividing before multiplying keeps every intermediate a non-negative integer bounded by
/// the final total, so u128 arithmetic is exact and cannot underflow.
fn exact_cdf(m: usize, n: usize, kc: usize) -> Option<f64> {
    if kc > EXACT_TABLE_LIMIT {
        return None;
    }
    let mut total: u128 = 1;
    for j in 1..=m {
        // C(n+j-1, j-1) * (n+j) / j = C(n+j, j), always an integer.
        total = total.checked_mul((n + j) as u128)? / j as u128;
    }
    let mut poly = vec![0u128; kc + 1];
    poly[0] = 1;
    for j in 1..=m {
        for k in j..=kc {
            poly[k] += poly[k - j];
        }
        let s = n + j;
        for k in (s..=kc).rev() {
            poly[k] -= poly[k - s];
        }
    }
    let lower: u128 = poly.iter().sum();
    Some(lower as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testutil::{assert_close, assert_rel};

    // ---- Mann-Whitney U -------------------------------------------------------------
    // Every expected (U, p) below came from scipy 1.17.1 (numpy 2.4.6) via
    //   python -c "from scipy.stats import mannwhitneyu as m; print(m(A, B, alternative='two-sided', method='auto', use_continuity=True))"
    // with A and B the two literals of the test.

    #[track_caller]
    fn check_mwu(a: &[f64], b: &[f64], u: f64, p: f64, exact: bool) {
        let r = mann_whitney_u(a, b).expect("non-empty samples");
        assert_eq!(r.u, u, "U statistic");
        assert_eq!(r.exact, exact, "exact vs asymptotic path");
        assert_rel(r.p_two_sided, p, 1e-10);
    }

    #[test]
    fn mwu_textbook_exact() {
        // The scipy documentation's example (Conover's males vs females ages).
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        check_mwu(&males, &females, 17.0, 0.1111111111111111, true);
        // Swapping the samples swaps U1 for U2 but not the two-sided p.
        check_mwu(&females, &males, 3.0, 0.1111111111111111, true);
    }

    #[test]
    fn mwu_large_sample_normal_approximation() {
        // 20 vs 25 without ties: both > 8, so 'auto' goes asymptotic.
        let a = [
            12.1, 14.3, 11.8, 15.2, 13.7, 12.9, 16.4, 13.1, 14.8, 12.4, 15.9, 13.3, 14.1, 11.5,
            16.0, 13.9, 12.6, 15.5, 14.6, 13.5,
        ];
        let b = [
            13.2, 15.1, 16.8, 14.4, 17.2, 15.7, 16.1, 14.9, 17.9, 15.3, 16.6, 14.2, 17.5, 15.8,
            16.3, 14.7, 18.1, 15.0, 16.9, 17.0, 14.0, 16.2, 15.4, 17.7, 16.7,
        ];
        check_mwu(&a, &b, 75.0, 6.723590018984687e-05, false);
    }

    #[test]
    fn mwu_auto_rule_boundaries() {
        // 9 vs 9, no ties: neither side <= 8, asymptotic.
        let a = [1.0, 3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0, 17.0];
        let b = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.5];
        check_mwu(&a, &b, 36.0, 0.7239320396139757, false);
        // 8 vs 30: one side <= 8 is enough for the exact path.
        let a = [0.3, 5.2, 9.9, 14.1, 22.7, 28.3, 33.6, 40.2];
        let b: Vec<f64> = (0..30).map(f64::from).collect();
        check_mwu(&a, &b, 144.0, 0.40749175948416944, true);
        // 3 vs 50 (b = [i + 0.5 for i in range(50)]): small first, large second, exact.
        let b: Vec<f64> = (0..50).map(|i| f64::from(i) + 0.5).collect();
        check_mwu(&[10.25, 20.75, 45.1], &b, 76.0, 0.9855715871254161, true);
        // 8 vs 200 (b = range(200)): exact counts beyond 2^53, so exercises the u128 table.
        let a = [199.5, 170.5, 150.5, 120.5, 99.5, 60.5, 40.5, 10.5];
        let b: Vec<f64> = (0..200).map(f64::from).collect();
        check_mwu(&a, &b, 856.0, 0.7441319702102311, true);
    }

    #[test]
    fn mwu_huge_exact_case_falls_back_to_normal() {
        // 8 vs 300000 without ties: scipy's 'auto' would go exact, but C(300008, 8) overflows
        // u128, so this implementation uses the normal approximation instead. Expected values
        // are scipy 1.17.1 with method='asymptotic':
        //   python -c "from scipy.stats import mannwhitneyu as m; print(m([0.25+i*37501.3 for i in range(8)], [float(i) for i in range(300000)], method='asymptotic'))"
        let a: Vec<f64> = (0..8).map(|i| 0.25 + f64::from(i) * 37501.3).collect();
        let b: Vec<f64> = (0..300_000).map(f64::from).collect();
        check_mwu(&a, &b, 1050043.0, 0.5404149248147063, false);
    }

    #[test]
    fn mwu_ties_use_tie_corrected_normal() {
        let a = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 5.0, 6.0];
        let b = [2.0, 3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0, 7.0, 8.0, 9.0];
        check_mwu(&a, &b, 23.5, 0.027640884214298913, false);
        // Small samples with ties still go asymptotic under 'auto'.
        check_mwu(
            &[1.0, 2.0, 2.0, 3.0],
            &[2.0, 3.0, 4.0, 5.0, 5.0],
            2.5,
            0.07854585095119067,
            false,
        );
    }

    #[test]
    fn mwu_tiny_samples() {
        check_mwu(&[1.0], &[2.0], 0.0, 1.0, true);
        check_mwu(&[2.0], &[1.0], 1.0, 1.0, true);
        check_mwu(&[2.5], &[1.0, 2.0, 3.0], 2.0, 1.0, true);
        check_mwu(&[4.0], &[1.0, 2.0, 3.0], 3.0, 0.5, true);
    }

    #[test]
    fn mwu_identical_samples_give_p_one() {
        check_mwu(&[5.0; 3], &[5.0; 4], 6.0, 1.0, false);
        check_mwu(&[5.0], &[5.0], 0.5, 1.0, false);
        let big = [7.25; 40];
        let r = mann_whitney_u(&big, &big).unwrap();
        assert_eq!(r.p_two_sided, 1.0);
        assert_eq!(r.u, 800.0);
    }

    #[test]
    fn mwu_fully_separated() {
        check_mwu(
            &[1.0, 2.0, 3.0, 4.0, 5.0],
            &[10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
            0.0,
            0.004329004329004329,
            true,
        );
        // a = range(20), b = range(100, 120)
        let a: Vec<f64> = (0..20).map(f64::from).collect();
        let b: Vec<f64> = (100..120).map(f64::from).collect();
        check_mwu(&a, &b, 0.0, 6.795615128173358e-08, false);
        check_mwu(&b, &a, 400.0, 6.795615128173358e-08, false);
    }

    #[test]
    fn mwu_empty_is_none() {
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
        assert!(mann_whitney_u(&[1.0], &[]).is_none());
    }

    #[test]
    fn welch_t_on_boot_medians() {
        // Equal variances and sizes: Welch's t is Student's t with df = 2n-2.
        let (t, df, p) = welch_t(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_close(t, -3.0 / (2.0f64 / 3.0).sqrt(), 1e-12);
        assert_close(df, 4.0, 1e-12);
        // For df = 4 the t distribution has a closed form,
        // F(t) = 1/2 + 3/8 u (1 - t^2 / (12 (1 + t^2/4))), u = t / sqrt(1 + t^2/4),
        // so with t^2 = 13.5, p = 2 (1 - F(|t|)) = 0.02131164112875661
        // (and numerical integration of the density agrees to 1e-15).
        assert_close(p, 0.02131164112875661, 1e-12);
        // Welch-Satterthwaite df for unequal variances, by hand:
        // va/na = 1/3, vb/nb = 25/3 -> df = (26/3)^2 / ((1/9 + 625/9)/2) = 676/313.
        let (_, df, _) = welch_t(&[1.0, 2.0, 3.0], &[10.0, 15.0, 20.0]).unwrap();
        assert_close(df, 676.0 / 313.0, 1e-12);
        assert!(welch_t(&[1.0], &[2.0, 3.0]).is_none());
        assert!(welch_t(&[1.0, 1.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn paired_t_on_pair_differences() {
        // d = 1..5: mean 3, variance 2.5, t = 3 / sqrt(0.5) = sqrt(18), df 4;
        // the df = 4 closed form above gives p = 0.013235599563682587.
        let (t, df, p) = paired_t(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_close(t, 18f64.sqrt(), 1e-12);
        assert_close(df, 4.0, 1e-12);
        assert_close(p, 0.013235599563682587, 1e-12);
        assert!(paired_t(&[1.0]).is_none());
        assert!(paired_t(&[0.5, 0.5, 0.5]).is_none());
    }
}
