//! Distributions: Student's t (two-sided tail, 0.975 quantile) from statrs,
//! and the normal two-sided tail from libm's erfc. Thin wrappers over the
//! crates' special functions: no algorithm of our own, no test statistic,
//! interval or decision lives here.
//!
//! Why libm for the normal tail: statrs 0.19.1's erf/erfc carry Boost's
//! interval constants truncated to 10 digits (about 5e-11 relative error
//! from 0.6 up; fixed upstream after that release), while libm's erfc (a
//! port of musl's) is within 2 ulps, and libm is already built as
//! num-traits' float backend under statrs.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Standard Student's t with `df` degrees of freedom (df > 0).
fn student_t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (the
/// half-width factor of a 95% interval); NaN unless df > 0.
pub fn t975(df: f64) -> f64 {
    student_t(df).map_or(f64::NAN, |t| t.inverse_cdf(0.975))
}

/// P(|T| >= |t|) for Student's t with `df` degrees of freedom:
/// I_{df/(df+t^2)}(df/2, 1/2). NaN for a NaN `t` or unless df > 0.
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    // sf is half the regularized incomplete beta for t > 0: doubling it is
    // exact.
    student_t(df).map_or(f64::NAN, |d| 2.0 * d.sf(t.abs()))
}

/// The standard normal distribution function Phi(x) = erfc(-x / sqrt 2) / 2.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

/// The standard normal quantile: Phi^-1(p), for 0 < p < 1 (statrs).
pub fn normal_quantile(p: f64) -> f64 {
    statrs::distribution::Normal::new(0.0, 1.0).map_or(f64::NAN, |n| n.inverse_cdf(p))
}

/// The two-sided (1 - level) quantile of Student's t: the half-width
/// factor of a (1 - level) interval; NaN unless df > 0.
pub fn t_two_sided_quantile(level: f64, df: f64) -> f64 {
    student_t(df).map_or(f64::NAN, |t| t.inverse_cdf(1.0 - level / 2.0))
}

/// P(|Z| >= z) for a standard normal Z and z >= 0: 2 Phi(-z) = erfc(z / sqrt 2).
pub fn normal_two_sided(z: f64) -> f64 {
    libm::erfc(z * std::f64::consts::FRAC_1_SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testutil::{assert_close, assert_rel};

    /// The erfc under `normal_two_sided` against scipy, to 1e-13 relative
    /// (statrs 0.19.1's erfc misses most of these by about 5e-11).
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
            let got = libm::erfc(x);
            assert!(
                (got - want).abs() <= 1e-13 * want,
                "erfc({x}) = {got:e}, scipy says {want:e}"
            );
        }
        assert_eq!(libm::erfc(f64::INFINITY), 0.0);
        assert_eq!(libm::erfc(f64::NEG_INFINITY), 2.0);
    }

    /// 2 Phi(-z), from mpmath at 40 digits:
    /// python -c "import mpmath as mp; mp.mp.dps=40; print(mp.erfc(mp.mpf(Z)/mp.sqrt(2)))"
    #[test]
    fn normal_two_sided_matches_mpmath() {
        for (z, want) in [
            (0.5, 0.617_075_077_451_973_8),
            (1.0, 0.317_310_507_862_914_1),
            (1.96, 0.049_995_790_296_440_87),
            (3.0, 0.002_699_796_063_260_189),
            (5.0, 5.733_031_437_583_878e-7),
            (8.0, 1.244_192_114_854_356_8e-15),
        ] {
            assert_rel(normal_two_sided(z), want, 1e-13);
        }
        assert_eq!(normal_two_sided(0.0), 1.0);
        assert_eq!(normal_two_sided(f64::INFINITY), 0.0);
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
        assert_eq!(student_t_two_sided(0.0, 3.0), 1.0);
        assert_close(student_t_two_sided(-2.776, 4.0), 0.05, 2e-4);
        assert_eq!(student_t_two_sided(f64::INFINITY, 3.0), 0.0);
        assert!(student_t_two_sided(f64::NAN, 3.0).is_nan());
        assert!(student_t_two_sided(1.0, 0.0).is_nan());
    }

    /// I_{df/(df+t^2)}(df/2, 1/2) from mpmath at 40 digits:
    /// python -c "import mpmath as mp; mp.mp.dps=40; t,df=mp.mpf(T),mp.mpf(DF); print(mp.betainc(df/2, 0.5, 0, df/(df+t*t), regularized=True))"
    /// statrs is good to a few 1e-13 here (its ln-gamma and continued
    /// fraction); 1e-12 leaves room, and no more.
    #[test]
    fn student_t_two_sided_matches_mpmath() {
        for (t, df, want) in [
            (1.0, 4.0, 0.373_900_966_300_058_89),
            (2.5, 7.0, 0.040_992_218_585_752_897),
            (-3.0, 10.0, 0.013_343_655_022_569_577),
            (0.1, 17.0, 0.921_514_158_370_230_4),
            (4.0, 3.3, 0.023_412_152_287_569_628),
            (6.0, 34.5, 8.150_294_075_350_814e-7),
        ] {
            assert_rel(student_t_two_sided(t, df), want, 1e-12);
        }
    }

    /// t(0.975, df), the root of I_{df/(df+t^2)}(df/2, 1/2) = 0.05 found by
    /// mpmath at 40 digits (tables: 12.706, 4.303, 2.776, 2.228, 2.110,
    /// 2.042, 1.984).
    #[test]
    fn t975_matches_mpmath() {
        for (df, want) in [
            (1.0, 12.706_204_736_174_705),
            (2.0, 4.302_652_729_749_464),
            (4.0, 2.776_445_105_197_794_4),
            (10.0, 2.228_138_851_986_275),
            (17.0, 2.109_815_577_833_317),
            (30.0, 2.042_272_456_301_238),
            (98.0, 1.984_467_454_508_481_8),
        ] {
            assert_rel(t975(df), want, 1e-12);
        }
        assert!(t975(0.0).is_nan());
    }
}
