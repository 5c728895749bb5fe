//! `kind = "perf"`: `perf bench` as the tree has it. The cell's own
//! `tools/perf` (never `selftests_from`'s: the benchmark is part of what a
//! series may add) is built static for the guest arch (`build::perf`);
//! each case is one `perf` command line, run `rounds` times in turn by a
//! generated script with the `programs` kind's case brackets. A run's
//! `N usecs/op` line is one sample of the metric named after the case.
//! A tree without the files in `sources` (the bench is not there) skips
//! every case with that reason.

use std::path::Path;

use anyhow::Result;

use super::programs::{self, case_of, never_ended, End};
use super::{Interpreted, Kind, MetricDecls, Recipe};
use crate::host::git::subtree_id;
use crate::plan::matrix::{CaseSpec, TestSpec};
use crate::schema::{CaseResult, Metric, Outcome};

pub struct Perf;

/// Runs of each case in a boot when the matrix gives no `rounds`.
pub const DEFAULT_ROUNDS: u32 = 5;

impl Kind for Perf {
    fn recipe(
        &self,
        test: &str,
        spec: &TestSpec,
        tree: &Path,
        _repo_root: &Path,
    ) -> Result<Recipe> {
        let dir = spec
            .dir
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("test {test}: kind = \"perf\" needs `dir`"))?;
        let absent: Vec<&str> = spec
            .sources
            .iter()
            .filter(|s| !tree.join(dir).join(s).exists())
            .map(String::as_str)
            .collect();
        let missing = (!absent.is_empty()).then(|| {
            format!(
                "this tree has no {} (the benchmark is not in it)",
                absent
                    .iter()
                    .map(|s| format!("{dir}/{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        let script = match &missing {
            Some(why) => programs::script(&rounds(&spec.cases, 1), &[("perf".into(), why.clone())]),
            None => programs::script(
                &rounds(&spec.cases, spec.rounds.unwrap_or(DEFAULT_ROUNDS)),
                &[],
            ),
        };
        let key_parts = match missing {
            Some(_) => vec![],
            None => vec![
                ("dir".into(), dir.to_string()),
                ("tools".into(), subtree_id(tree, "tools")?),
            ],
        };
        Ok(Recipe::Perf {
            dir: missing.is_none().then(|| tree.join(dir)),
            script,
            key_parts,
            default_timeout_s: 120,
        })
    }

    fn interpret(&self, _test: &str, output: &str, decls: &dyn MetricDecls) -> Interpreted {
        parse(output, decls)
    }

    // A perf that does not build (a newer compiler, a host without a
    // library) fails its test; the kernel and the other tests are still
    // worth booting.
    fn unbuilt(&self) -> Option<(Outcome, &'static str)> {
        Some((Outcome::Fail, "the tree's tools/perf"))
    }

    fn own_tree(&self) -> bool {
        true
    }
}

/// Every case `n` times, in turn (a, b, a, b, ...), each as `./perf ARGS`:
/// a slow stretch of the host falls on both alike.
fn rounds(cases: &[CaseSpec], n: u32) -> Vec<CaseSpec> {
    (0..n)
        .flat_map(|_| cases.iter())
        .map(|c| CaseSpec {
            name: c.name.clone(),
            run: format!("./perf {}", c.run),
        })
        .collect()
}

/// `      2.769629 usecs/op`: perf bench's default format.
fn usecs_per_op(lines: &[&str]) -> Option<f64> {
    lines.iter().find_map(|l| {
        let mut w = l.split_whitespace();
        match (w.next(), w.next()) {
            (Some(v), Some("usecs/op")) => v.parse::<f64>().ok().filter(|v| v.is_finite()),
            _ => None,
        }
    })
}

pub fn parse(output: &str, decls: &dyn MetricDecls) -> Interpreted {
    let (sections, open) = programs::sections(output);
    let mut out = Interpreted {
        incomplete: open.as_deref().map(never_ended),
        ..Default::default()
    };
    for (round, s) in sections.iter().enumerate() {
        let value = match s.end {
            End::Status(Some(0)) => usecs_per_op(&s.lines),
            _ => None,
        };
        let mut case = case_of(s);
        if case.outcome == Outcome::Pass && value.is_none() {
            case = CaseResult {
                outcome: Outcome::Fail,
                reason: Some(format!(
                    "exit status 0 but no `usecs/op` line\n{}",
                    s.lines.join("\n").trim()
                )),
                ..case
            };
        }
        let runs = sections[..round]
            .iter()
            .filter(|p| p.name == s.name)
            .count();
        match out.cases.iter_mut().find(|c| c.name == s.name) {
            None => out.cases.push(case),
            // The case is its worst run; the first failure says why.
            Some(c) if c.outcome != Outcome::Fail && case.outcome == Outcome::Fail => {
                c.outcome = Outcome::Fail;
                c.reason = case.reason.map(|r| format!("run {}: {r}", runs + 1));
            }
            Some(_) => {}
        }
        let m = match out.metrics.iter_mut().position(|m| m.name == s.name) {
            Some(i) => &mut out.metrics[i],
            None => {
                out.metrics.push(Metric {
                    name: s.name.clone(),
                    unit: "us".into(),
                    samples: vec![],
                    skip: None,
                    target_ci_pct: decls.target_ci_pct(&s.name),
                    boot_sizes: vec![],
                });
                out.metrics.last_mut().unwrap()
            }
        };
        if let End::Skipped(why) = &s.end {
            m.skip = Some(why.clone());
        }
        m.samples.extend(value);
    }
    // A case that failed every run has no figure: no metric, its case says why.
    out.metrics
        .retain(|m| !m.samples.is_empty() || m.skip.is_some());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoDecls;
    impl MetricDecls for NoDecls {
        fn target_ci_pct(&self, _: &str) -> Option<f64> {
            None
        }
    }

    fn case(name: &str, run: &str) -> CaseSpec {
        CaseSpec {
            name: name.into(),
            run: run.into(),
        }
    }

    #[test]
    fn rounds_alternate_the_cases() {
        let r = rounds(&[case("a", "bench x"), case("b", "bench x --sync-mode")], 2);
        let got: Vec<(&str, &str)> = r
            .iter()
            .map(|c| (c.name.as_str(), c.run.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "./perf bench x"),
                ("b", "./perf bench x --sync-mode"),
                ("a", "./perf bench x"),
                ("b", "./perf bench x --sync-mode"),
            ]
        );
    }

    /// The series' own example output (its patch 6's message), as the
    /// script brackets it.
    #[test]
    fn usecs_per_op_of_each_run_is_a_sample() {
        let run = |name: &str, v: &str| {
            format!(
                "KMATRIX-CASE {name} start uptime=1.0\n# Running 'sched/seccomp-notify' benchmark:\n\
                 # Executed 1000000 system calls\n\n     Total time: 2.769 [sec]\n\n       {v} usecs/op\n\
                 \x20        361059 ops/sec\n\nKMATRIX-CASE {name} end rc=0 uptime=3.8\n"
            )
        };
        let out = [
            run("p.default", "8.571119"),
            run("p.sync", "2.769629"),
            run("p.default", "8.4"),
            run("p.sync", "2.8"),
        ]
        .concat();
        let i = parse(&out, &NoDecls);
        assert_eq!(i.incomplete, None);
        assert_eq!(i.cases.len(), 2);
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Pass));
        assert_eq!(i.metrics[0].name, "p.default");
        assert_eq!(i.metrics[0].samples, [8.571119, 8.4]);
        assert_eq!(i.metrics[1].samples, [2.769629, 2.8]);
        assert_eq!(i.metrics[1].unit, "us");
    }

    /// A real guest run: 6.1.192 with the seccomp series, x86_64 under
    /// TCG, 5 rounds. The series' bench as posted checks its ioctls inside
    /// assert(), which perf's -DNDEBUG=1 compiles out: the figures are of
    /// an empty loop (under 1 us, where a round trip there takes 45-80).
    #[test]
    fn guest_run_of_the_series_perf_bench() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/perf_bench-guest-6.1-series-x86_64.results"
        ))
        .unwrap();
        let i = parse(&text, &NoDecls);
        assert_eq!(i.incomplete, None);
        let got: Vec<(&str, Outcome)> = i
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.outcome))
            .collect();
        assert_eq!(
            got,
            [
                ("perf_bench.seccomp_notify.default", Outcome::Pass),
                ("perf_bench.seccomp_notify.sync", Outcome::Pass),
            ]
        );
        assert_eq!(i.metrics[0].samples.len(), 5);
        assert_eq!(i.metrics[0].samples[0], 0.755);
        assert_eq!(i.metrics[1].samples[0], 0.446);
        assert_eq!(i.metrics[1].samples.len(), 5);
    }

    #[test]
    fn a_failed_run_fails_its_case_and_keeps_the_others_samples() {
        let out = "KMATRIX-CASE p.sync start\n       3.1 usecs/op\n\nKMATRIX-CASE p.sync end rc=0\n\
                   KMATRIX-CASE p.sync start\nperf: bench/sched-seccomp-notify.c:212: bench_sched_seccomp_notify: Assertion `ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) == 0' failed.\n\n\
                   KMATRIX-CASE p.sync end rc=134\n\
                   KMATRIX-CASE p.quiet start\n# Running\n\nKMATRIX-CASE p.quiet end rc=0\n";
        let i = parse(out, &NoDecls);
        assert_eq!(i.cases[0].outcome, Outcome::Fail);
        let why = i.cases[0].reason.as_deref().unwrap();
        assert!(why.starts_with("run 2: exit status 134\n"), "{why}");
        assert!(why.contains("Assertion"), "{why}");
        assert_eq!(i.metrics[0].samples, [3.1]);
        // Exit 0 without a figure is a failure too, and leaves no metric.
        assert_eq!(i.cases[1].outcome, Outcome::Fail);
        assert!(i.cases[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("no `usecs/op`"));
        assert_eq!(i.metrics.len(), 1);
    }

    #[test]
    fn a_tree_without_the_bench_skips_each_case_with_the_reason() {
        let script = programs::script(
            &rounds(
                &[case("p.default", "bench x"), case("p.sync", "bench x -s")],
                1,
            ),
            &[(
                "perf".into(),
                "this tree has no tools/perf/bench/x.c".into(),
            )],
        );
        // What busybox sh prints for the script's echo lines.
        let out: String = script
            .lines()
            .filter_map(|l| l.strip_prefix("echo '"))
            .map(|l| format!("{}\n", l.trim_end_matches('\'')))
            .collect();
        let i = parse(&out, &NoDecls);
        assert_eq!(i.cases.len(), 2);
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Skip));
        assert_eq!(
            i.metrics[1].skip.as_deref(),
            Some("perf not built: this tree has no tools/perf/bench/x.c")
        );
    }
}
