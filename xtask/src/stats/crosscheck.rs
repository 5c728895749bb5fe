//! Two tools on one quantity: matrix.toml's `[[agree]]` pairs, checked in
//! every cell that measured both. The series' own `perf bench sched
//! seccomp-notify` and kmatrix's seccomp_notify both time a user
//! notification's round trip; when their medians lie further apart than
//! the declared factor, one of them is not timing what it says (the bench
//! as posted for 6.1 makes its ioctls inside assert(), which perf's
//! -DNDEBUG compiles out, and times an empty loop). A ratio of medians, not
//! a test: the tools differ in what they add around the round trip, and a
//! factor is what such a check can promise.

use super::location::median;
use crate::plan::matrix::Matrix;
use crate::schema::{CrossCheck, Metric, Run};

/// Every `[[agree]]` pair in every cell that has both metrics measured
/// (not skipped, with samples, medians above zero), in cell order.
pub fn cross_checks(run: &Run, m: &Matrix) -> Vec<CrossCheck> {
    let mut out = Vec::new();
    for c in &run.cells {
        let measured = |name: &str| -> Option<(&Metric, f64)> {
            let x = c
                .metrics
                .iter()
                .find(|x| x.name == name && x.skip.is_none() && !x.samples.is_empty())?;
            let med = median(&x.samples);
            (med.is_finite() && med > 0.0).then_some((x, med))
        };
        for a in &m.agree {
            let (Some((xa, ma)), Some((xb, mb))) = (measured(&a.a), measured(&a.b)) else {
                continue;
            };
            let ratio = ma / mb;
            out.push(CrossCheck {
                cell: c.id.clone(),
                a: a.a.clone(),
                b: a.b.clone(),
                unit_a: xa.unit.clone(),
                unit_b: xb.unit.clone(),
                median_a: ma,
                median_b: mb,
                ratio,
                factor: a.factor,
                agree: ratio <= a.factor && ratio >= 1.0 / a.factor,
                what: a.what.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(path: &str) -> Run {
        let text = std::fs::read_to_string(format!(
            "{}/../tests/fixtures/runs/{path}/results.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn default_matrix() -> Matrix {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
        Matrix::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A real run of the seccomp cells, one boot each (2026-12-04, a slow
    /// host: seccomp_notify's round trip 148-265 us): on 6.1 with the
    /// series its own bench gives 0.8-1.2 usecs/op, 160-220x below (its
    /// ioctls are compiled out); on 6.12 the two agree within 2%. A metric
    /// the cell skipped is not checked.
    #[test]
    fn the_series_bench_on_6_1_disagrees_and_6_12_agrees() {
        let mut r = run("perf-bench");
        let xs = cross_checks(&r, &default_matrix());
        assert_eq!(xs.len(), 8, "{xs:?}");
        let on = |cell: &str, a: &str| {
            xs.iter()
                .find(|x| x.cell == cell && x.a == a)
                .unwrap_or_else(|| panic!("{cell} {a}: {xs:?}"))
                .clone()
        };
        for arch in ["x86_64", "arm64"] {
            for mode in ["default", "sync"] {
                let a = format!("perf_bench.seccomp_notify.{mode}");
                let x = on(&format!("6.1/seccomp-sync-wakeup/{arch}/tiny"), &a);
                assert!(!x.agree, "{x:?}");
                assert!(x.ratio < 0.01, "{x:?}");
                assert_eq!(x.b, format!("seccomp_notify.{mode}.unpinned"));
                let y = on(&format!("6.12/base/{arch}/tiny"), &a);
                assert!(y.agree, "{y:?}");
                assert!((0.98..1.05).contains(&y.ratio), "{y:?}");
            }
        }
        // The 6.1 base has no bench: its perf metrics are skips.
        for m in r.cells[0].metrics.iter_mut() {
            if m.name.starts_with("perf_bench.") {
                m.skip = Some("the tree has no seccomp-notify bench".into());
            }
        }
        let left = cross_checks(&r, &default_matrix());
        assert_eq!(left.len(), 6);
        assert!(left.iter().all(|x| x.cell != r.cells[0].id));
    }
}
