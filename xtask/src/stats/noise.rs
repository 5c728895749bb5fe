//! Boot-to-boot noise: the spread of per-boot statistics (and of paired
//! boots' ratios) on the log scale, pooled over cells, in percent, with the
//! boots or pairs it calls for. Numbers only; the tables people read are
//! rendered in report/.

use super::location::location;
use super::power::{boots_needed, pairs_needed};

/// Boot-to-boot spread of one cell: the sum of squared deviations of the
/// logs of `values` (one statistic per boot) from their mean, and its
/// degrees of freedom (n - 1). Summed over cells, ss/df is the pooled
/// variance of the log. A cell with a statistic that has no logarithm (0,
/// negative, not a number) gives nothing: (0, 0).
pub fn log_ss(values: &[f64]) -> (f64, usize) {
    if values.len() < 2 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return (0.0, 0);
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    (
        logs.iter().map(|x| (x - mean).powi(2)).sum(),
        logs.len() - 1,
    )
}

/// From a pooled sum of squares of logs and its degrees of freedom
/// (df > 0): the SD in percent, and `boots_needed` (of per-boot
/// statistics) or `pairs_needed` (of pair log ratios, `paired`) for
/// `min_effect_pct`.
pub fn pooled_noise(ss: f64, df: usize, min_effect_pct: f64, paired: bool) -> (f64, Option<usize>) {
    let sd = (ss / df as f64).sqrt();
    let h = (1.0 + min_effect_pct / 100.0).ln();
    (
        100.0 * (sd.exp() - 1.0),
        if paired {
            pairs_needed(sd, h)
        } else {
            boots_needed(sd, h)
        },
    )
}

/// Sum of squares about their mean (and df) of the log ratios of the `q`
/// quantile of paired boots: boot i of `new` over boot i of `base`.
pub fn pair_log_ss(base: &[&[f64]], new: &[&[f64]], q: f64) -> (f64, usize) {
    let ratios: Vec<f64> = base
        .iter()
        .zip(new)
        .map(|(b, n)| location(n, q) / location(b, q))
        .collect();
    log_ss(&ratios)
}

/// Pooled boot-to-boot SD (percent) of the `q` quantile's log over cells
/// of at least two boots each, and the boots a side that noise calls for
/// (None past 50); (None, None) when no cell has two boots.
pub fn boot_noise(cells: &[&[&[f64]]], q: f64, min_effect_pct: f64) -> (Option<f64>, Option<u32>) {
    let (mut ss, mut df) = (0.0, 0usize);
    for boots in cells {
        let per_boot: Vec<f64> = boots.iter().map(|b| location(b, q)).collect();
        let (s, d) = log_ss(&per_boot);
        ss += s;
        df += d;
    }
    if df == 0 {
        return (None, None);
    }
    let (sd_pct, needed) = pooled_noise(ss, df, min_effect_pct, false);
    (Some(sd_pct), needed.map(|n| n as u32))
}
