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

    #[test]
    fn boots_needed_grows_with_the_square_of_the_noise() {
        let h = 1.05_f64.ln();
        // No noise: the fewest boots that give a CI at all.
        assert_eq!(boots_needed(0.0, h), Some(2));
        let (a, b) = (boots_needed(0.02, h).unwrap(), boots_needed(0.04, h).unwrap());
        assert!((3..=6).contains(&a), "{a}");
        // Twice the noise, about four times the boots.
        assert!(b >= 3 * a && b <= 5 * a, "{a} {b}");
        assert_eq!(boots_needed(0.5, h), None);
        // t(0.975) for 4 df is 2.776 (tables).
        assert!((t975(4.0) - 2.776).abs() < 0.001, "{}", t975(4.0));
    }

    #[test]
    fn pairs_need_fewer_than_boots_a_side_and_more_as_the_noise_grows() {
        // The same ratio SD needs fewer pairs than boots a side (n-1 df,
        // one difference per pair, against two independent means), and
        // more pairs as it grows; none past 50.
        let h = 1.05_f64.ln();
        assert!(pairs_needed(0.03, h).unwrap() <= boots_needed(0.03, h).unwrap());
        assert!(pairs_needed(0.06, h).unwrap() > pairs_needed(0.03, h).unwrap());
        assert_eq!(pairs_needed(0.5, h), None);
    }
}
