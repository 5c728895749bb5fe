//! Dependency-free statistics for comparing benchmark runs: summaries, Mann-Whitney U, bootstrap CIs.
//!
//! Everything here is written to reproduce what numpy/scipy report for the same input, so a
//! result printed by the harness can be cross-checked with a one-line Python command.
//! NaN filtering is the caller's job: NaNs are neither rejected nor skipped here.

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

/// Bootstrap confidence interval of the percent change between two medians.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeCi {
    /// 100 * (median(new) / median(base) - 1)
    pub pct_change: f64,
    /// Interval bounds, in percent.
    pub lo: f64,
    pub hi: f64,
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
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor();
    let t = h - lo;
    let i = lo as usize;
    // An exact hit must not touch the neighbour: with an infinite neighbour numpy's
    // lerp would turn inf * 0 into NaN, and bootstrap ratios can be infinite.
    if t == 0.0 || i + 1 >= sorted.len() {
        return sorted[i];
    }
    let (a, b) = (sorted[i], sorted[i + 1]);
    let d = b - a;
    // Same two-sided lerp as numpy's `_lerp`, so results agree to the last bit and the
    // upper end is hit exactly.
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
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

/// 1-indexed rank k such that (x(k), x(n+1-k)) is the narrowest order-statistic interval
/// covering the median with probability >= 95%; `None` if no such k >= 1 exists (n < 6).
///
/// The count of samples below the true median is Binomial(n, 1/2), so the interval misses
/// with probability 2 * P(B <= k-1). We take the largest k with P(B <= k-1) <= 0.025.
fn median_ci_rank(n: usize) -> Option<usize> {
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

/// The 0.975 quantile of Student's t with `df` degrees of freedom (the
/// half-width factor of a 95% interval), by bisection.
pub fn t975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 100.0_f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if student_t_two_sided(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The change of paired boots: `d` = ln(new_i / base_i) of each pair's
/// statistics (boot i of each side, run back to back). The change is the
/// geometric mean of the pair ratios, its 95% CI the t interval of the
/// mean log ratio (n - 1 df), both in percent. A host state shared by the
/// two boots of a pair cancels; a pair split by a change of host state
/// widens the interval instead of moving a pooled median between modes.
/// None for fewer than 2 pairs.
pub fn paired_log_change_ci(d: &[f64]) -> Option<ChangeCi> {
    if d.len() < 2 || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = d.len() as f64;
    let (mean, var) = mean_var(d);
    let h = t975(n - 1.0) * (var / n).sqrt();
    let pct = |x: f64| 100.0 * (x.exp() - 1.0);
    Some(ChangeCi {
        pct_change: pct(mean),
        lo: pct(mean - h),
        hi: pct(mean + h),
    })
}

/// Mean and sample variance (n - 1) of at least 2 values.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (
        mean,
        x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0),
    )
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

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom:
/// I_{df/(df+t^2)}(df/2, 1/2).
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Regularized incomplete beta I_x(a, b), by its continued fraction
/// (modified Lentz), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) where
/// the fraction converges slowly.
fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b;
    }
    ln_front.exp() * beta_cf(a, b, x) / a
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, n = 9; ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1-x) = pi / sin(pi x).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut s = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        s += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
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
        let z = (u - mu - 0.5) / s;
        // 2 * Phi(-z) == erfc(z / sqrt 2)
        erfc(z * std::f64::consts::FRAC_1_SQRT_2)
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

/// Complementary error function, accurate to ~1e-13 relative over the whole real line.
///
/// std has no erfc. Below 2 the everywhere-positive series
/// erf(x) = 2/sqrt(pi) * exp(-x^2) * sum (2x^2)^k x / (2k+1)!! avoids cancellation, and
/// erfc >= 0.0047 there, so 1 - erf loses little. From 2 up, the Laplace continued fraction
/// converges quickly and keeps full relative accuracy deep into the tail.
fn erfc(x: f64) -> f64 {
    const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    // erfc(28) < 1e-341 is below the smallest subnormal; stopping here also keeps infinity
    // out of the continued fraction, where it would produce inf * 0.
    if x >= 28.0 {
        return 0.0;
    }
    if x < 2.0 {
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut k = 0.0;
        loop {
            k += 1.0;
            term *= 2.0 * x2 / (2.0 * k + 1.0);
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        return 1.0 - 2.0 * FRAC_1_SQRT_PI * (-x2).exp() * sum;
    }
    // erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))),
    // evaluated with the modified Lentz algorithm.
    const TINY: f64 = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..10_000 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        if d.abs() < TINY {
            d = TINY;
        }
        d = 1.0 / d;
        c = x + a / c;
        if c.abs() < TINY {
            c = TINY;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    FRAC_1_SQRT_PI * (-x * x).exp() / f
}

/// Bootstrap percentile confidence interval for the percent change of medians from `base`
/// to `new`.
///
/// Each resample draws both sides independently with replacement; the interval is the
/// (1-c)/2 and (1+c)/2 quantiles of the resampled percent changes. The same seed always
/// gives the same interval. Returns `None` if either side is empty, the base median is 0,
/// `resamples` is 0, or `confidence` is not strictly between 0 and 1.
#[cfg(test)]
pub fn median_change_ci(
    base: &[f64],
    new: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    quantile_change_ci(base, new, 0.5, confidence, resamples, seed)
}

/// [`median_change_ci`] for the `q` quantile (0.5: the median).
pub fn quantile_change_ci(
    base: &[f64],
    new: &[f64],
    q: f64,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    if base.is_empty() || new.is_empty() || resamples == 0 {
        return None;
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let base_med = location(base, q);
    if base_med == 0.0 {
        return None;
    }
    let pct_change = pct_of(location(new, q), base_med);

    let mut rng = Xoshiro256::new(seed);
    let mut buf_base = vec![0.0; base.len()];
    let mut buf_new = vec![0.0; new.len()];
    let mut pcts = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in buf_base.iter_mut() {
            *slot = base[rng.below(base.len())];
        }
        for slot in buf_new.iter_mut() {
            *slot = new[rng.below(new.len())];
        }
        let mb = location_in_place(&mut buf_base, q);
        let mn = location_in_place(&mut buf_new, q);
        // A resampled base median of 0 (possible only when half the base is 0) yields an
        // infinite ratio; keeping it widens the interval, which is the honest outcome.
        // 0/0 means both medians vanished: call that no change rather than poison the sort.
        let pct = if mb == 0.0 && mn == 0.0 {
            0.0
        } else {
            pct_of(mn, mb)
        };
        pcts.push(pct);
    }
    pcts.sort_by(f64::total_cmp);
    Some(ChangeCi {
        pct_change,
        lo: quantile(&pcts, (1.0 - confidence) / 2.0),
        hi: quantile(&pcts, (1.0 + confidence) / 2.0),
    })
}

/// Like [`median_change_ci`], for samples taken in several boots (clusters):
/// each resample first draws boots with replacement, then samples with
/// replacement within each drawn boot, so the interval widens when boots
/// disagree (boot-to-boot spread is part of the uncertainty). `paired`: both
/// sides come from the same boots (two metrics of one cell, measured
/// interleaved), so one draw of boot indices serves both and a shift that
/// moves a whole boot cancels out. With one boot a side it is
/// `median_change_ci`.
#[cfg(test)]
pub fn median_change_ci_boots(
    base: &[&[f64]],
    new: &[&[f64]],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    quantile_change_ci_boots(base, new, 0.5, paired, confidence, resamples, seed)
}

/// [`median_change_ci_boots`] for the `q` quantile (0.5: the median).
pub fn quantile_change_ci_boots(
    base: &[&[f64]],
    new: &[&[f64]],
    q: f64,
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    if base.len() <= 1 && new.len() <= 1 {
        return quantile_change_ci(base.first()?, new.first()?, q, confidence, resamples, seed);
    }
    if base.iter().chain(new).any(|b| b.is_empty())
        || resamples == 0
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let paired = paired && base.len() == new.len();
    let base_med = location(&base.concat(), q);
    if base_med == 0.0 {
        return None;
    }
    let pct_change = pct_of(location(&new.concat(), q), base_med);
    let mut rng = Xoshiro256::new(seed);
    let mut pick_b = vec![0; base.len()];
    let mut pick_n = vec![0; new.len()];
    let mut pcts = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        pick_b.iter_mut().for_each(|p| *p = rng.below(base.len()));
        if paired {
            pick_n.copy_from_slice(&pick_b);
        } else {
            pick_n.iter_mut().for_each(|p| *p = rng.below(new.len()));
        }
        let mb = resampled_location(base, &pick_b, &mut rng, q);
        let mn = resampled_location(new, &pick_n, &mut rng, q);
        pcts.push(if mb == 0.0 && mn == 0.0 {
            0.0
        } else {
            pct_of(mn, mb)
        });
    }
    pcts.sort_by(f64::total_cmp);
    Some(ChangeCi {
        pct_change,
        lo: quantile(&pcts, (1.0 - confidence) / 2.0),
        hi: quantile(&pcts, (1.0 + confidence) / 2.0),
    })
}

/// Percentile-bootstrap CI of the median of samples from several boots
/// (boots, then samples within them, drawn with replacement); None for one
/// boot (use the distribution-free `Summary::median_ci` there).
pub fn median_ci_boots(
    boots: &[&[f64]],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if boots.len() < 2
        || boots.iter().any(|b| b.is_empty())
        || resamples == 0
        || !(confidence > 0.0 && confidence < 1.0)
    {
        return None;
    }
    let mut rng = Xoshiro256::new(seed);
    let mut pick = vec![0; boots.len()];
    let mut meds = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        pick.iter_mut().for_each(|p| *p = rng.below(boots.len()));
        meds.push(resampled_location(boots, &pick, &mut rng, 0.5));
    }
    meds.sort_by(f64::total_cmp);
    Some((
        quantile(&meds, (1.0 - confidence) / 2.0),
        quantile(&meds, (1.0 + confidence) / 2.0),
    ))
}

/// Median of one two-stage resample: the boots in `pick`, each resampled
/// with replacement to its own size.
fn resampled_location(boots: &[&[f64]], pick: &[usize], rng: &mut Xoshiro256, q: f64) -> f64 {
    let mut buf = Vec::with_capacity(boots.iter().map(|b| b.len()).sum());
    for &i in pick {
        let c = boots[i];
        for _ in 0..c.len() {
            buf.push(c[rng.below(c.len())]);
        }
    }
    location_in_place(&mut buf, q)
}

/// Boot-to-boot spread of one cell: the sum of squared deviations of the
/// logs of `values` (one statistic per boot) from their mean, and its
/// degrees of freedom (n - 1). Summed over cells, ss/df is the pooled
/// variance of the log.
pub fn log_ss(values: &[f64]) -> (f64, usize) {
    if values.len() < 2 {
        return (0.0, 0);
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    (
        logs.iter().map(|x| (x - mean).powi(2)).sum(),
        logs.len() - 1,
    )
}

/// The `q` quantile of `xs` (numpy's linear method); 0.5 is the median.
pub fn location(xs: &[f64], q: f64) -> f64 {
    let mut buf = xs.to_vec();
    location_in_place(&mut buf, q)
}

/// `location` that reorders `buf`: the median by selection (the bootstrap
/// calls this thousands of times), other quantiles by a sort.
fn location_in_place(buf: &mut [f64], q: f64) -> f64 {
    if q == 0.5 {
        return median_in_place(buf);
    }
    buf.sort_unstable_by(f64::total_cmp);
    quantile(buf, q)
}

fn pct_of(new_med: f64, base_med: f64) -> f64 {
    100.0 * (new_med / base_med - 1.0)
}

/// Median that reorders `buf`; selection instead of a full sort because the bootstrap calls
/// this thousands of times.
fn median_in_place(buf: &mut [f64]) -> f64 {
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
    (lower + upper) / 2.0
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// xoshiro256** seeded through splitmix64: tiny, fast, and reproducible across platforms,
/// which is all the bootstrap needs (not cryptographic).
struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    fn new(seed: u64) -> Self {
        // splitmix64 spreads any seed, including 0, into a state that is never all-zero.
        let mut sm = seed;
        let mut next = || {
            sm = sm.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = sm;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Xoshiro256 {
            s: [next(), next(), next(), next()],
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in [0, n) for n > 0, by Lemire's multiply-and-reject: a plain modulo
    /// would favour small indices.
    fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as usize;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// |a - b| <= tol * max(1, |a|, |b|): relative for large values, absolute near zero.
    fn close(a: f64, b: f64, tol: f64) -> bool {
        if a == b {
            return true;
        }
        (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
    }

    #[track_caller]
    fn assert_close(actual: f64, expected: f64, tol: f64) {
        assert!(
            close(actual, expected, tol),
            "expected {expected:e}, got {actual:e} (tol {tol:e})"
        );
    }

    /// Relative comparison for tiny p-values, where `close` would accept anything.
    #[track_caller]
    fn assert_rel(actual: f64, expected: f64, rel: f64) {
        assert!(
            (actual - expected).abs() <= rel * expected.abs(),
            "expected {expected:e}, got {actual:e} (rel {rel:e})"
        );
    }

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
    fn erfc_matches_scipy() {
        // From scipy 1.17.1: python -c "from scipy.special import erfc; print(repr(erfc(X)))"
        let cases = [
            (0.0, 1.0),
            (1e-8, 0.9999999887162083),
            (0.3, 0.6713732405408726),
            (0.5, 0.4795001221869535),
            (0.9, 0.20309178757716784),
            (1.0, 0.15729920705028516),
            (1.5, 0.03389485352468927),
            (2.0, 0.004677734981047266),
            (2.4999, 0.0004071699003334512),
            (2.5, 0.00040695201744495886),
            (3.0, 2.2090496998585445e-05),
            (4.0, 1.541725790028002e-08),
            (6.0, 2.1519736712498913e-17),
            (10.0, 2.0884875837625446e-45),
            (26.0, 5.663192408856145e-296),
            (-0.7, 1.6778011938374182),
            (-3.0, 1.9999779095030015),
        ];
        for (x, want) in cases {
            let got = erfc(x);
            assert!(
                (got - want).abs() <= 1e-13 * want,
                "erfc({x}) = {got:e}, scipy says {want:e}"
            );
        }
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert_eq!(erfc(f64::NEG_INFINITY), 2.0);
    }

    // ---- median / quantile / summarize ------------------------------------------------

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

    // ---- bootstrap -------------------------------------------------------------------

    /// Deterministic pseudo-noise so the tests need no randomness of their own.
    fn wobbly(n: usize, centre: f64, spread: f64, phase: u64) -> Vec<f64> {
        let mut rng = Xoshiro256::new(phase);
        (0..n)
            .map(|_| centre + spread * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5))
            .collect()
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        let base = wobbly(15, 100.0, 6.0, 1);
        let new = wobbly(12, 103.0, 6.0, 2);
        let a = median_change_ci(&base, &new, 0.95, 2000, 42).unwrap();
        let b = median_change_ci(&base, &new, 0.95, 2000, 42).unwrap();
        assert_eq!(a, b);
        let c = median_change_ci(&base, &new, 0.95, 2000, 43).unwrap();
        assert_eq!(a.pct_change, c.pct_change);
        assert!(
            a.lo != c.lo || a.hi != c.hi,
            "a different seed should resample differently"
        );
        assert!(a.lo <= a.pct_change && a.pct_change <= a.hi);
    }

    #[test]
    fn bootstrap_contains_true_shift() {
        // new is drawn from base's distribution scaled by 1.10 (uniform 110 +- 2.2 vs
        // 100 +- 2), so the true change of medians is exactly +10%.
        let base = wobbly(30, 100.0, 4.0, 7);
        let new = wobbly(30, 110.0, 4.4, 8);
        let ci = median_change_ci(&base, &new, 0.95, 4000, 1).unwrap();
        assert!(ci.lo < 10.0 && 10.0 < ci.hi, "{ci:?}");
        // Clearly separated: the interval must exclude "no change".
        assert!(ci.lo > 0.0, "{ci:?}");
        // A pure rescaling shifts every resampled median by the same factor.
        let scaled: Vec<f64> = base.iter().map(|x| x * 1.25).collect();
        let ci = median_change_ci(&base, &scaled, 0.95, 2000, 9).unwrap();
        assert_close(ci.pct_change, 25.0, 1e-12);
        assert!(ci.lo < 25.0 + 1e-9 && 25.0 - 1e-9 < ci.hi, "{ci:?}");
    }

    #[test]
    fn boot_clusters_carry_boot_to_boot_spread_into_the_interval() {
        let base = wobbly(60, 100.0, 4.0, 11);
        let new = wobbly(60, 100.0, 4.0, 12);
        // One boot a side: exactly the plain bootstrap.
        assert_eq!(
            median_change_ci_boots(&[&base], &[&new], false, 0.95, 2000, 5),
            median_change_ci(&base, &new, 0.95, 2000, 5)
        );
        // Boots that agree: about as narrow as pooling them.
        let (b1, b2) = base.split_at(30);
        let (n1, n2) = new.split_at(30);
        let agree = median_change_ci_boots(&[b1, b2], &[n1, n2], false, 0.95, 2000, 5).unwrap();
        let pooled = median_change_ci(&base, &new, 0.95, 2000, 5).unwrap();
        assert!(
            agree.hi - agree.lo < 2.0 * (pooled.hi - pooled.lo),
            "{agree:?} vs {pooled:?}"
        );
        // Three boots a side, each with its own level (a host state that lasted
        // the boot) and little noise inside it. Pooled, the samples look like
        // 180 precise ones; the boots say the level is only known to a few %.
        let boots = |levels: [f64; 3], seed: u64| -> Vec<Vec<f64>> {
            levels
                .iter()
                .enumerate()
                .map(|(i, l)| wobbly(60, *l, 1.0, seed + i as u64))
                .collect()
        };
        let b = boots([100.0, 106.0, 96.0], 20);
        let n = boots([105.0, 97.0, 101.0], 30);
        let bs: Vec<&[f64]> = b.iter().map(|v| &v[..]).collect();
        let ns: Vec<&[f64]> = n.iter().map(|v| &v[..]).collect();
        let clustered = median_change_ci_boots(&bs, &ns, false, 0.95, 2000, 5).unwrap();
        let flat = median_change_ci(&b.concat(), &n.concat(), 0.95, 2000, 5).unwrap();
        assert!(
            clustered.hi - clustered.lo > 2.0 * (flat.hi - flat.lo),
            "{clustered:?} vs {flat:?}"
        );
        assert!(clustered.lo < 0.0 && clustered.hi > 0.0, "{clustered:?}");
        // Paired: the same boots on both sides, the new metric 10% below the
        // base in every boot while whole boots move by up to 20%.
        let levels = [100.0, 120.0, 95.0];
        let pb: Vec<Vec<f64>> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| wobbly(60, *l, 2.0, 40 + i as u64))
            .collect();
        let pn: Vec<Vec<f64>> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| wobbly(60, 0.9 * l, 1.8, 50 + i as u64))
            .collect();
        let (pbs, pns): (Vec<&[f64]>, Vec<&[f64]>) = (
            pb.iter().map(|v| &v[..]).collect(),
            pn.iter().map(|v| &v[..]).collect(),
        );
        let paired = median_change_ci_boots(&pbs, &pns, true, 0.95, 2000, 5).unwrap();
        let unpaired = median_change_ci_boots(&pbs, &pns, false, 0.95, 2000, 5).unwrap();
        assert!(
            paired.lo < -10.0 + 3.0 && paired.hi > -10.0 - 3.0 && paired.hi < 0.0,
            "{paired:?}"
        );
        assert!(
            unpaired.hi - unpaired.lo > 3.0 * (paired.hi - paired.lo),
            "{unpaired:?} vs {paired:?}"
        );
        // The median's own CI across boots spans the boot levels' spread.
        let (lo, hi) = median_ci_boots(&pbs, 0.95, 2000, 5).unwrap();
        assert!(lo < 100.0 && hi > 110.0, "[{lo}, {hi}]");
        assert!(median_ci_boots(&pbs[..1], 0.95, 2000, 5).is_none());
        assert!(median_change_ci_boots(&[b1, &[]], &[n1], false, 0.95, 100, 1).is_none());
    }

    #[test]
    fn student_t_matches_table_values() {
        // Textbook critical values t(0.975, df): two-sided p = 0.05.
        for (t, df) in [
            (12.706, 1.0),
            (4.303, 2.0),
            (2.776, 4.0),
            (2.228, 10.0),
            (1.960, 1e6),
        ] {
            assert_close(student_t_two_sided(t, df), 0.05, 2e-4);
        }
        // t(0.995, 5) = 4.032: p = 0.01. Cauchy (df 1): P(|T| > 1) = 1/2.
        assert_close(student_t_two_sided(4.032, 5.0), 0.01, 1e-4);
        assert_close(student_t_two_sided(1.0, 1.0), 0.5, 1e-12);
        assert_close(student_t_two_sided(0.0, 3.0), 1.0, 1e-12);
        assert_close(student_t_two_sided(-2.776, 4.0), 0.05, 2e-4);
        // ln Gamma at known points: Gamma(5) = 24, Gamma(1/2) = sqrt(pi).
        assert_close(ln_gamma(5.0), 24f64.ln(), 1e-12);
        assert_close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-12);
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
        // The change of pairs: the same d on the log scale, t(0.975, 4) =
        // 2.776445105197793 (tables: 2.776).
        assert_close(t975(4.0), 2.776445105197793, 1e-9);
        let d = [0.01, 0.02, 0.03, 0.04, 0.05];
        let ci = paired_log_change_ci(&d).unwrap();
        let h = 2.776445105197793 * (0.00025f64 / 5.0).sqrt();
        assert_close(ci.pct_change, 100.0 * (0.03f64.exp() - 1.0), 1e-9);
        assert_close(ci.lo, 100.0 * ((0.03 - h).exp() - 1.0), 1e-6);
        assert_close(ci.hi, 100.0 * ((0.03 + h).exp() - 1.0), 1e-6);
        assert!(paired_log_change_ci(&d[..1]).is_none());
        assert!(paired_t(&[0.5, 0.5, 0.5]).is_none());
    }

    #[test]
    fn bootstrap_constant_samples_collapse() {
        let ci = median_change_ci(&[2.0; 8], &[3.0; 5], 0.95, 500, 3).unwrap();
        assert_eq!(ci.pct_change, 50.0);
        assert_eq!((ci.lo, ci.hi), (ci.pct_change, ci.pct_change));
        let ci = median_change_ci(&[4.0; 8], &[4.0; 8], 0.95, 500, 3).unwrap();
        assert_eq!((ci.pct_change, ci.lo, ci.hi), (0.0, 0.0, 0.0));
    }

    #[test]
    fn bootstrap_rejects_degenerate_input() {
        assert!(median_change_ci(&[], &[1.0], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[0.0, 0.0, 1.0], &[1.0], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], 0.95, 0, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], 1.0, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], f64::NAN, 100, 0).is_none());
    }

    #[test]
    fn median_in_place_agrees_with_sorting() {
        for n in 1..40 {
            let xs = wobbly(n, 0.0, 10.0, n as u64);
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(median(&xs), median_of_sorted(&sorted), "n = {n}");
        }
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = Xoshiro256::new(0);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            seen[rng.below(7)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }
}
