//! The reports people read: the markdown summary, HTML, KCIDB, JUnit, GitHub
//! annotations, the text of comparisons and of A/A counts and noise, and
//! the history's HTML page.
//! Rendering only, but for `files` (which reads runs and writes the
//! rendered files): every figure shown is computed in `crate::stats` (or
//! is in results.json already); nothing here computes a statistic or
//! merges data.
pub mod aa;
pub mod answer;
pub mod compare;
pub mod files;
pub mod gha;
pub mod html;
pub mod junit;
pub mod kcidb;
pub mod markdown;
pub mod trend;

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

/// A measured figure with three significant digits or so: "0.466",
/// "81.9", "261"; "-" when it is not a finite number.
pub fn sig3(x: f64) -> String {
    let a = x.abs();
    let places = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    fixed(x, places)
}

/// One `[[agree]]` check in words: "perf_bench.seccomp_notify.default
/// 0.466 us is 176x below seccomp_notify.default.unpinned 81.9 us/op,
/// where the two should agree within 2x (WHAT)", or for a pair that
/// agrees "... is 1.03x above ..., within 2x".
pub fn cross_check_words(x: &crate::schema::CrossCheck) -> String {
    let how = if x.ratio >= 1.0 {
        format!("{}x above", sig3(x.ratio))
    } else {
        format!("{}x below", sig3(1.0 / x.ratio))
    };
    let what = x
        .what
        .as_deref()
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let verdict = if x.agree {
        format!("within {}x", x.factor)
    } else {
        format!("where the two should agree within {}x{what}", x.factor)
    };
    format!(
        "{} {} {} is {how} {} {} {}, {verdict}",
        x.a,
        sig3(x.median_a),
        x.unit_a,
        x.b,
        sig3(x.median_b),
        x.unit_b
    )
}

/// The verdict in words, and why where results.json says (a
/// `cannot-compare`, or a change inside the layout bound).
pub fn verdict_words(c: &crate::schema::Comparison) -> String {
    match &c.reason {
        Some(r) => format!("{}: {r}", c.verdict.describe()),
        None => c.verdict.describe().to_string(),
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
