//! Shared by the statistics tests: tolerances and deterministic noise.

use super::rng::Xoshiro256;

/// |a - b| <= tol * max(1, |a|, |b|): relative for large values, absolute near zero.
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    if a == b {
        return true;
    }
    (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
}

#[track_caller]
pub fn assert_close(actual: f64, expected: f64, tol: f64) {
    assert!(
        close(actual, expected, tol),
        "expected {expected:e}, got {actual:e} (tol {tol:e})"
    );
}

/// Relative comparison for tiny p-values, where `close` would accept anything.
#[track_caller]
pub fn assert_rel(actual: f64, expected: f64, rel: f64) {
    assert!(
        (actual - expected).abs() <= rel * expected.abs(),
        "expected {expected:e}, got {actual:e} (rel {rel:e})"
    );
}

/// Deterministic pseudo-noise so the tests need no randomness of their own:
/// `n` values uniform in `centre` +- `spread` / 2.
pub fn wobbly(n: usize, centre: f64, spread: f64, phase: u64) -> Vec<f64> {
    let mut rng = Xoshiro256::new(phase);
    (0..n)
        .map(|_| centre + spread * ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5))
        .collect()
}
