//! How many boots (or pairs of boots) a comparison needs to conclude "no
//! change" within the minimum effect 80% of the time, given the noise on
//! the log scale. Sample sizes only: the noise itself is `noise`'s.

use super::distributions::t975;

/// Boots per side for an equivalence verdict at 80% power: the smallest n
/// with se * (t(0.975, 2n-2) + 0.84) <= h, se = sd * sqrt(2/n), all on the
/// log scale (sd and h as fractions). The CI half-width is t*se and its
/// centre strays by more than 0.84 se one way or the other 20% of the time
/// (on the side that matters, a normal approximation).
pub fn boots_needed(sd: f64, h: f64) -> Option<usize> {
    (2..=50).find(|&n| {
        let se = sd * (2.0 / n as f64).sqrt();
        se * (t975((2 * n - 2) as f64) + 0.84) <= h
    })
}

/// Pairs of boots for the same verdict from a paired comparison: the
/// smallest n with sd_d / sqrt(n) * (t(0.975, n-1) + 0.84) <= h, sd_d the SD
/// of the pairs' log ratios (a host state shared by both boots of a pair
/// cancels out of it).
pub fn pairs_needed(sd_d: f64, h: f64) -> Option<usize> {
    (2..=50).find(|&n| sd_d / (n as f64).sqrt() * (t975((n - 1) as f64) + 0.84) <= h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sample sizes worked out outside the harness: the smallest n that
    /// meets each inequality, with t(0.975, df) from mpmath, for a minimum
    /// effect of 5% (h = ln 1.05).
    #[test]
    fn boots_and_pairs_needed_match_the_inequalities_solved_by_hand() {
        let h = 1.05_f64.ln();
        // sd: (boots a side, pairs)
        for (sd, boots, pairs) in [
            // No noise: the fewest that give a CI at all.
            (0.0, Some(2), Some(2)),
            (0.02, Some(4), Some(4)),
            (0.03, Some(7), Some(5)),
            // Twice the noise, about four times the boots.
            (0.04, Some(12), Some(8)),
            (0.06, Some(25), Some(14)),
            // More than 50.
            (0.5, None, None),
        ] {
            assert_eq!(boots_needed(sd, h), boots, "boots for sd {sd}");
            assert_eq!(pairs_needed(sd, h), pairs, "pairs for sd {sd}");
        }
        // n = 7 at sd 0.03: 0.03 sqrt(2/7) (t(0.975, 12) + 0.84) = 0.048409
        // <= ln 1.05 = 0.048790, while n = 6 gives 0.053142; just below
        // 0.048409 it takes n = 8 (0.044772).
        assert_eq!(boots_needed(0.03, 0.04841), Some(7));
        assert_eq!(boots_needed(0.03, 0.04840), Some(8));
    }
}
