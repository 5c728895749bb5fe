//! The reports people read: the markdown summary, HTML, KCIDB, JUnit, GitHub
//! annotations, and the text of comparisons and of A/A counts and noise.
//! Rendering only: every figure shown is computed in `crate::stats` (or is
//! in results.json already); nothing here computes a statistic or merges
//! data.
pub mod aa;
pub mod answer;
pub mod compare;
pub mod gha;
pub mod html;
pub mod junit;
pub mod kcidb;
pub mod markdown;

/// `x` with `places` decimals, or "-" when it is not a finite number (a
/// figure of a `cannot-compare` comparison, one an older harness wrote as
/// null): no report shows "NaN" or "inf".
pub fn fixed(x: f64, places: usize) -> String {
    if x.is_finite() {
        format!("{x:.places$}")
    } else {
        "-".into()
    }
}

/// `fixed` with a sign and a percent sign: "+1.2%", or "-".
pub fn pct(x: f64, places: usize) -> String {
    if x.is_finite() {
        format!("{x:+.places$}%")
    } else {
        "-".into()
    }
}

/// A comparison's CI, "[-3.1%, +2.0%]", or "-" unless both ends are
/// finite numbers.
pub fn ci_pct(lo: f64, hi: f64) -> String {
    if lo.is_finite() && hi.is_finite() {
        format!("[{lo:+.1}%, {hi:+.1}%]")
    } else {
        "-".into()
    }
}

/// The verdict in words, and for `cannot-compare` why.
pub fn verdict_words(c: &crate::schema::Comparison) -> String {
    match (&c.verdict, &c.reason) {
        (crate::schema::Verdict::CannotCompare, Some(r)) => {
            format!("{}: {r}", c.verdict.describe())
        }
        (v, _) => v.describe().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_that_are_not_numbers_read_as_a_dash() {
        assert_eq!(fixed(1.23456, 3), "1.235");
        assert_eq!(fixed(f64::NAN, 3), "-");
        assert_eq!(fixed(f64::INFINITY, 1), "-");
        assert_eq!(pct(-2.25, 1), "-2.2%");
        assert_eq!(pct(f64::NEG_INFINITY, 1), "-");
        assert_eq!(ci_pct(-30.5, -9.25), "[-30.5%, -9.2%]");
        assert_eq!(ci_pct(1.0, f64::NAN), "-");
    }
}
