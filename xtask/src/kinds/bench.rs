//! `kind = "bench"`: a C program from this repository (`source`) that
//! prints `METRIC name value unit` per sample, `SKIP name reason` for what
//! it cannot measure, and `ERROR text` for its own failures. Each metric is
//! a case: pass when it has samples, skip with the reason otherwise.

use std::path::Path;

use anyhow::Result;

use super::{Interpreted, Kind, MetricDecls, Recipe};
use crate::analyze::guestlog::{bench_lines, BenchLine};
use crate::plan::matrix::TestSpec;
use crate::schema::{CaseResult, Metric, Outcome};

pub struct Bench;

impl Kind for Bench {
    fn recipe(
        &self,
        test: &str,
        spec: &TestSpec,
        _tree: &Path,
        repo_root: &Path,
    ) -> Result<Recipe> {
        let src = spec
            .source
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("test {test}: kind = \"bench\" needs `source`"))?;
        Ok(Recipe::Compile {
            sources: vec![repo_root.join(src)],
            tree_headers: false,
            includes: vec![],
            key_parts: vec![],
            default_timeout_s: 120,
        })
    }

    fn interpret(&self, test: &str, output: &str, decls: &dyn MetricDecls) -> Interpreted {
        let mut out = Interpreted::default();
        for l in bench_lines(output) {
            match l {
                BenchLine::Metric { name, value, unit } => {
                    match out.metrics.iter_mut().find(|m| m.name == name) {
                        Some(m) => m.samples.push(value),
                        None => {
                            let target_ci_pct = decls.target_ci_pct(&name);
                            out.metrics.push(Metric {
                                name,
                                unit,
                                samples: vec![value],
                                skip: None,
                                target_ci_pct,
                                boot_sizes: vec![],
                            })
                        }
                    }
                }
                BenchLine::Skip { name, reason } => {
                    if !out.metrics.iter().any(|m| m.name == name) {
                        out.metrics.push(Metric {
                            name,
                            unit: String::new(),
                            samples: vec![],
                            skip: Some(reason),
                            target_ci_pct: None,
                            boot_sizes: vec![],
                        });
                    }
                }
                BenchLine::Error(e) => out.errors.push(e),
            }
        }
        let prefix = format!("{test}.");
        for m in out
            .metrics
            .iter()
            .filter(|m| m.name.starts_with(&prefix) || !m.name.contains('.'))
        {
            let (outcome, reason) = match &m.skip {
                Some(why) => (Outcome::Skip, Some(why.clone())),
                None => (Outcome::Pass, None),
            };
            out.cases.push(CaseResult {
                name: m.name.clone(),
                outcome,
                reason,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Decl;
    impl MetricDecls for Decl {
        fn target_ci_pct(&self, m: &str) -> Option<f64> {
            m.starts_with("b.").then_some(3.0)
        }
    }

    /// The real benchmark's output (x86_64, 6.1 + series, TCG): six metrics.
    #[test]
    fn metrics_skips_and_errors_from_real_output() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/seccomp_notify-x86_64-series.results"
        );
        let text = std::fs::read_to_string(fixture).unwrap();
        let i = Bench.interpret("seccomp_notify", &text, &Decl);
        assert_eq!(
            i.metrics.len(),
            6,
            "{:?}",
            i.metrics.iter().map(|m| &m.name).collect::<Vec<_>>()
        );
        assert!(i
            .metrics
            .iter()
            .all(|m| m.skip.is_some() || !m.samples.is_empty()));
        assert_eq!(i.cases.len(), i.metrics.len());
        let i = Bench.interpret("b", "METRIC b.x 1.5 us/op\nMETRIC b.x 2.5 us/op\nSKIP b.y needs the series (EINVAL)\nERROR setup failed\n", &Decl);
        assert_eq!(i.metrics[0].samples, [1.5, 2.5]);
        assert_eq!(i.metrics[0].target_ci_pct, Some(3.0));
        assert_eq!(i.cases[1].outcome, Outcome::Skip);
        assert_eq!(i.errors, ["setup failed"]);
    }
}
