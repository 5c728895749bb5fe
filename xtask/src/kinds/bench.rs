//! `kind = "bench"`: a C program from this repository (`source`) that
//! prints `METRIC name value unit` per sample, `SKIP name reason` for what
//! it cannot measure, and `ERROR text` for its own failures. Each metric is
//! a case: pass when it has samples, skip with the reason otherwise.

use std::path::Path;

use anyhow::Result;

use super::{Interpreted, Kind, MetricDecls, Recipe};
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

#[derive(Debug, Clone, PartialEq)]
pub enum BenchLine {
    Metric {
        name: String,
        value: f64,
        unit: String,
    },
    Skip {
        name: String,
        reason: String,
    },
    Error(String),
}

/// `METRIC name value unit` / `SKIP name reason...` / `ERROR text`.
pub fn bench_lines(output: &str) -> Vec<BenchLine> {
    let mut out = Vec::new();
    for line in output.lines() {
        let mut w = line.splitn(2, ' ');
        match (w.next(), w.next()) {
            (Some("METRIC"), Some(rest)) => {
                let p: Vec<&str> = rest.split_whitespace().collect();
                if let [name, value, unit] = p[..] {
                    if let Ok(v) = value.parse::<f64>() {
                        if v.is_finite() {
                            out.push(BenchLine::Metric {
                                name: name.into(),
                                value: v,
                                unit: unit.into(),
                            });
                            continue;
                        }
                    }
                }
                out.push(BenchLine::Error(format!("malformed METRIC line: {line}")));
            }
            (Some("SKIP"), Some(rest)) => {
                let (name, reason) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push(BenchLine::Skip {
                    name: name.into(),
                    reason: reason.trim().into(),
                });
            }
            (Some("ERROR"), rest) => out.push(BenchLine::Error(rest.unwrap_or("").into())),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_output() {
        let l = bench_lines("header\nMETRIC seccomp_notify.default.unpinned 84.125 us/op\nSKIP seccomp_notify.sync.unpinned SECCOMP_IOCTL_NOTIF_SET_FLAGS: EINVAL\nMETRIC x nan us\nERROR boom\n");
        assert_eq!(
            l[0],
            BenchLine::Metric {
                name: "seccomp_notify.default.unpinned".into(),
                value: 84.125,
                unit: "us/op".into()
            }
        );
        assert_eq!(
            l[1],
            BenchLine::Skip {
                name: "seccomp_notify.sync.unpinned".into(),
                reason: "SECCOMP_IOCTL_NOTIF_SET_FLAGS: EINVAL".into()
            }
        );
        assert!(matches!(&l[2], BenchLine::Error(e) if e.contains("malformed")));
        assert_eq!(l[3], BenchLine::Error("boom".into()));
    }

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

    /// The benchmark with a fresh target per unpinned sample, its real
    /// output on the development host (x86_64, 2 vCPUs, not a guest, 2 s
    /// budget, stdout and stderr): the six latencies, one sample each per
    /// round, and per unpinned configuration three placement shares (one
    /// value each, summing to 100%) after the last sample. On that host
    /// default mode drew both placements (3 of 16 samples on one CPU, 8
    /// across, 5 mixed) and sync mode kept every pair on one CPU.
    #[test]
    fn seccomp_notify_placement_shares() {
        let i = Bench.interpret(
            "seccomp_notify",
            &fixture("seccomp_notify-host-fresh.results"),
            &Decl,
        );
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        let latencies: Vec<&Metric> = i.metrics.iter().filter(|m| m.unit == "us/op").collect();
        assert_eq!(latencies.len(), 6);
        assert!(latencies.iter().all(|m| m.samples.len() == 16));
        let share = |mode: &str, class: &str| {
            let m = metric(
                &i,
                &format!("seccomp_notify.placement.{mode}.unpinned.{class}_share"),
            );
            assert_eq!(m.unit, "%");
            assert_eq!(m.samples.len(), 1, "{}", m.name);
            m.samples[0]
        };
        for mode in ["default", "sync"] {
            let sum: f64 = ["same_cpu", "cross_cpu", "mixed"]
                .iter()
                .map(|c| share(mode, c))
                .sum();
            assert!((sum - 100.0).abs() < 0.2, "{mode}: {sum}");
        }
        assert_eq!(
            (
                share("default", "same_cpu"),
                share("default", "cross_cpu"),
                share("default", "mixed")
            ),
            (18.8, 50.0, 31.2)
        );
        assert_eq!(share("sync", "same_cpu"), 100.0);
        // The mixture is visible in the samples: the fastest unpinned
        // sample runs at same-CPU speed, the median at cross-CPU speed.
        let lo = |n: &str| {
            metric(&i, n)
                .samples
                .iter()
                .cloned()
                .fold(f64::INFINITY, f64::min)
        };
        let same = median(metric(&i, "seccomp_notify.default.same-cpu"));
        let cross = median(metric(&i, "seccomp_notify.default.cross-cpu"));
        assert!(lo("seccomp_notify.default.unpinned") < 2.0 * same);
        assert!(median(metric(&i, "seccomp_notify.default.unpinned")) > cross / 2.0);
        // The shares are metrics of the test, hence cases: 6 + 2 x 3.
        assert_eq!(i.metrics.len(), 12);
        assert_eq!(i.cases.len(), 12);
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Pass));
    }

    /// The benchmark with speed checks (`--calib-max 1.3`), its real guest
    /// output (6.1 x86_64 under TCG, host CPUs kept busy, boot 1 of an A/A
    /// run while the host was slow: 181 of 276 samples set aside). A
    /// set-aside sample is a `# disturbed` line: never a sample of its
    /// metric. The share the benchmark reports is the share of those lines,
    /// and what it set aside was in fact slow.
    #[test]
    fn speed_checks_set_slow_samples_aside_and_count_them() {
        let text = fixture("seccomp_notify-x86_64-speedchecks.results");
        let i = Bench.interpret("seccomp_notify", &text, &Decl);
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        let values = |prefix: &str| -> Vec<f64> {
            text.lines()
                .filter_map(|l| l.strip_prefix(prefix))
                .map(|rest| rest.split_whitespace().next().unwrap().parse().unwrap())
                .collect()
        };
        let (mut kept, mut aside) = (0, 0);
        for pl in ["unpinned", "same-cpu", "cross-cpu"] {
            let name = format!("seccomp_notify.default.{pl}");
            let m = metric(&i, &name);
            assert_eq!(m.samples, values(&format!("METRIC {name} ")), "{name}");
            kept += m.samples.len();
            aside += values(&format!("# disturbed {name} ")).len();
        }
        assert_eq!((kept, aside), (95, 181));
        let share = metric(&i, "seccomp_notify.host.disturbed_share");
        assert_eq!((share.unit.as_str(), share.samples.len()), ("%", 1));
        let expect = 100.0 * aside as f64 / (kept + aside) as f64;
        assert!(
            (share.samples[0] - expect).abs() < 0.05,
            "{} vs {expect}",
            share.samples[0]
        );
        let speed = metric(&i, "seccomp_notify.host.check_speed");
        assert_eq!((speed.unit.as_str(), speed.samples.len()), ("iter/us", 1));
        // Same-CPU round trips are pure CPU work for the guest: the ones
        // set aside ran at the host's slow speed, those kept at full speed.
        let mid = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let same = "seccomp_notify.default.same-cpu";
        let slow = mid(values(&format!("# disturbed {same} ")));
        let fast = mid(metric(&i, same).samples.clone());
        // 80.2 vs 57.1 us here.
        assert!(slow > 1.3 * fast, "set aside {slow} vs kept {fast}");
    }

    // The rseq, membarrier and mm_cid guest programs: their real stdout on the development host
    // (x86_64, 2 vCPUs, not a guest), through the same `interpret`.

    fn fixture(name: &str) -> String {
        let path = format!("{}/../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn metric<'a>(i: &'a Interpreted, name: &str) -> &'a Metric {
        i.metrics
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no metric {name}"))
    }

    fn median(m: &Metric) -> f64 {
        let mut x = m.samples.clone();
        x.sort_by(f64::total_cmp);
        let n = x.len();
        assert!(n > 0, "{} has no samples", m.name);
        if n % 2 == 1 {
            x[n / 2]
        } else {
            (x[n / 2 - 1] + x[n / 2]) / 2.0
        }
    }

    const RSEQ_METRICS: [&str; 5] = [
        "rseq.counter.rseq",
        "rseq.counter.atomic",
        "rseq.cpu_id.rseq_area",
        "rseq.cpu_id.sched_getcpu",
        "rseq.cpu_id.getcpu_syscall",
    ];

    /// Five metrics in ns/op, one sample each per round (round-robin, so
    /// equal counts), every one a passing case of the test `rseq`.
    fn check_rseq_measured(i: &Interpreted, samples: usize) {
        let names: Vec<&str> = i.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, RSEQ_METRICS);
        for m in &i.metrics {
            assert_eq!(m.unit, "ns/op", "{}", m.name);
            assert_eq!(m.samples.len(), samples, "{}", m.name);
            assert!(m.skip.is_none());
            assert!(m.samples.iter().all(|&v| v > 0.0));
        }
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        assert_eq!(i.cases.len(), 5);
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Pass));
        // The merge's table, in order: rseq beats getcpu+atomic, and the
        // rseq area beats the syscall by far.
        let med = |n| median(metric(i, n));
        assert!(med("rseq.counter.rseq") < med("rseq.counter.atomic"));
        assert!(med("rseq.cpu_id.rseq_area") < med("rseq.cpu_id.sched_getcpu"));
        assert!(med("rseq.cpu_id.rseq_area") * 10.0 < med("rseq.cpu_id.getcpu_syscall"));
    }

    #[test]
    fn rseq_bench_glibc_registration() {
        let i = Bench.interpret("rseq", &fixture("rseq_bench-host.results"), &Decl);
        check_rseq_measured(&i, 30);
    }

    /// GLIBC_TUNABLES=glibc.pthread.rseq=0: the program registers its own
    /// area; the names stay the same, and sched_getcpu takes the vDSO path
    /// (slower than reading glibc's rseq area, faster than the syscall).
    #[test]
    fn rseq_bench_own_registration() {
        let own = Bench.interpret("rseq", &fixture("rseq_bench-host-norseq.results"), &Decl);
        check_rseq_measured(&own, 30);
        let glibc = Bench.interpret("rseq", &fixture("rseq_bench-host.results"), &Decl);
        let getcpu = |i: &Interpreted| median(metric(i, "rseq.cpu_id.sched_getcpu"));
        assert!(getcpu(&own) > 2.0 * getcpu(&glibc));
        assert!(getcpu(&own) < median(metric(&own, "rseq.cpu_id.getcpu_syscall")));
    }

    /// rseq(2) failing with ENOSYS (injected with strace on the host, as a
    /// kernel without CONFIG_RSEQ would): the two rseq configurations are
    /// skipped cases, the other three still measured.
    #[test]
    fn rseq_bench_without_rseq_skips() {
        let i = Bench.interpret("rseq", &fixture("rseq_bench-host-enosys.results"), &Decl);
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        assert_eq!(i.metrics.len(), 5);
        for name in ["rseq.counter.rseq", "rseq.cpu_id.rseq_area"] {
            let m = metric(&i, name);
            assert!(m.samples.is_empty());
            assert!(m.skip.as_deref().unwrap().contains("CONFIG_RSEQ"), "{m:?}");
            let c = i.cases.iter().find(|c| c.name == name).unwrap();
            assert_eq!(c.outcome, Outcome::Skip);
            assert_eq!(c.reason, m.skip);
        }
        for name in [
            "rseq.counter.atomic",
            "rseq.cpu_id.sched_getcpu",
            "rseq.cpu_id.getcpu_syscall",
        ] {
            assert_eq!(metric(&i, name).samples.len(), 12);
        }
        assert_eq!(
            i.cases
                .iter()
                .filter(|c| c.outcome == Outcome::Pass)
                .count(),
            3
        );
    }

    const MEMBARRIER_METRICS: [&str; 5] = [
        "membarrier.private_expedited.ipi",
        "membarrier.private_expedited_rseq.ipi",
        "membarrier.global_expedited.ipi",
        "membarrier.private_expedited.idle",
        "membarrier.global_expedited.idle",
    ];

    #[test]
    fn membarrier_bench_metrics() {
        let i = Bench.interpret(
            "membarrier",
            &fixture("membarrier_bench-host.results"),
            &Decl,
        );
        let names: Vec<&str> = i.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, MEMBARRIER_METRICS);
        for m in &i.metrics {
            assert_eq!(m.unit, "us/call", "{}", m.name);
            assert_eq!(m.samples.len(), 13, "{}", m.name);
        }
        assert!(i.errors.is_empty());
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Pass));
        assert_eq!(i.cases.len(), 5);
        // An IPI to the spinning sibling costs more than no IPI at all.
        assert!(
            median(metric(&i, "membarrier.private_expedited.ipi"))
                > median(metric(&i, "membarrier.private_expedited.idle"))
        );
    }

    /// membarrier(2) failing with ENOSYS (injected with strace): every
    /// configuration a skipped case with the reason, no error.
    #[test]
    fn membarrier_bench_without_membarrier_skips() {
        let i = Bench.interpret(
            "membarrier",
            &fixture("membarrier_bench-host-enosys.results"),
            &Decl,
        );
        assert!(i.errors.is_empty());
        let names: Vec<&str> = i.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, MEMBARRIER_METRICS);
        for m in &i.metrics {
            assert!(m.samples.is_empty());
            assert!(m.skip.as_deref().unwrap().contains("CONFIG_MEMBARRIER"));
        }
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Skip));
        assert_eq!(i.cases.len(), 5);
    }

    /// A real guest run (6.12.117 + mm-cid-work, x86_64 TCG, 255 possible
    /// CPUs, 2 online): the train net of chance, and the chance itself.
    #[test]
    fn mm_cid_gaps_guest_run_with_excess_and_chance() {
        let i = Bench.interpret(
            "mm_cid",
            &fixture("mm_cid_gaps-guest-6.12-series-wide.results"),
            &Decl,
        );
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        let one = |n| metric(&i, n).samples[0];
        assert_eq!(one("mm_cid.cpus.possible"), 255.0);
        assert_eq!(one("mm_cid.cpus.online"), 2.0);
        assert_eq!(
            one("mm_cid.periodic.excess"),
            one("mm_cid.periodic.count") - one("mm_cid.control.count")
        );
        assert_eq!(one("mm_cid.periodic.excess"), -11.0);
        assert_eq!(metric(&i, "mm_cid.periodic.chance_pct").unit, "%");
        // Every big gap as a raw sample, pooled across boots by the harness.
        assert_eq!(
            metric(&i, "mm_cid.gap_big").samples.len() as f64,
            one("mm_cid.big.count")
        );
    }

    /// A real guest run with the kprobes (6.12.117 base, arm64 TCG, 255
    /// possible CPUs, 2 online): every run of task_mm_cid_work is a sample,
    /// as many as the program counted, with the median and maximum its
    /// own stderr line gives ("97 runs", "median 149.120 us, max 810.112
    /// us"); rate, share of the run and big gaps holding a run, one each.
    #[test]
    fn mm_cid_gaps_guest_run_times_every_run_of_the_work() {
        let i = Bench.interpret(
            "mm_cid",
            &fixture("mm_cid_gaps-guest-6.12-base-wide-kprobes.results"),
            &Decl,
        );
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        let work = metric(&i, "mm_cid.work.us");
        assert_eq!(work.unit, "us");
        assert_eq!(work.samples.len(), 97);
        let mut sorted = work.samples.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted[48], 149.12);
        assert_eq!(sorted[96], 810.112);
        let one = |n| metric(&i, n).samples[0];
        assert_eq!(one("mm_cid.work.rate"), 9.7);
        assert_eq!(metric(&i, "mm_cid.work.rate").unit, "1/s");
        assert_eq!(one("mm_cid.work.busy_pct"), 0.1799);
        assert_eq!(one("mm_cid.big.work_pct"), 51.3);
        assert_eq!(one("mm_cid.cpus.possible"), 255.0);
        // This boot could see the 10 Hz train: 51 more partners at 100 ms
        // than at the control lag, at a chance of 67.8%.
        assert_eq!(one("mm_cid.periodic.excess"), 51.0);
        assert_eq!(one("mm_cid.periodic.chance_pct"), 67.8);
        assert!(i.cases.iter().all(|c| c.outcome == Outcome::Pass));
    }

    #[test]
    fn mm_cid_gaps_metrics() {
        let i = Bench.interpret("mm_cid", &fixture("mm_cid_gaps-host.results"), &Decl);
        assert!(i.errors.is_empty(), "{:?}", i.errors);
        let units = [
            ("mm_cid.cpus.possible", "cpus"),
            ("mm_cid.cpus.online", "cpus"),
            ("mm_cid.gap.rate", "1/s"),
            ("mm_cid.gap.p50", "us"),
            ("mm_cid.gap.p99", "us"),
            ("mm_cid.gap.max", "us"),
            ("mm_cid.big.rate", "1/s"),
            ("mm_cid.big.count", "gaps"),
            ("mm_cid.periodic.count", "gaps"),
            ("mm_cid.control.count", "gaps"),
            ("mm_cid.periodic.excess", "gaps"),
            ("mm_cid.periodic.chance_pct", "%"),
            ("mm_cid.periodic.pct", "%"),
            ("mm_cid.periodic.size_p50", "us"),
            ("mm_cid.periodic.spacing_p50", "ms"),
        ];
        // One run = one sample of each summary metric.
        for (name, unit) in units {
            let m = metric(&i, name);
            assert_eq!(m.unit, unit, "{name}");
            assert_eq!(m.samples.len(), 1, "{name}");
        }
        let one = |n| metric(&i, n).samples[0];
        assert_eq!(one("mm_cid.cpus.possible"), 2.0);
        assert_eq!(one("mm_cid.cpus.online"), 2.0);
        assert!(one("mm_cid.gap.p50") <= one("mm_cid.gap.p99"));
        assert!(one("mm_cid.gap.p99") <= one("mm_cid.gap.max"));
        assert!(one("mm_cid.periodic.count") <= one("mm_cid.big.count"));
        // The raw big gaps: one sample each, as many as counted, all big.
        let raw = metric(&i, "mm_cid.gap_big");
        assert_eq!(raw.unit, "us");
        assert_eq!(raw.samples.len() as f64, one("mm_cid.big.count"));
        assert!(raw.samples.iter().all(|&v| v >= 150.0));
        // This host has no kprobe PMU: the work's own timing is four
        // skips that say why, the gap scan ran as ever.
        let work = [
            "mm_cid.work.us",
            "mm_cid.work.rate",
            "mm_cid.work.busy_pct",
            "mm_cid.big.work_pct",
        ];
        for name in work {
            let m = metric(&i, name);
            assert!(m.samples.is_empty(), "{name}");
            assert!(
                m.skip.as_deref().unwrap().contains("no kprobe PMU")
                    && m.skip.as_deref().unwrap().contains("CONFIG_KPROBE_EVENTS"),
                "{name}: {:?}",
                m.skip
            );
        }
        assert_eq!(i.metrics.len(), units.len() + 1 + work.len());
        assert_eq!(i.cases.len(), i.metrics.len());
        for c in &i.cases {
            let skipped = work.iter().any(|w| c.name == *w);
            let want = if skipped {
                Outcome::Skip
            } else {
                Outcome::Pass
            };
            assert_eq!(c.outcome, want, "{}", c.name);
        }
    }

    /// A quiet run: no big gap, so the periodic figures and the raw series
    /// are skipped cases, not errors and not zeros.
    #[test]
    fn mm_cid_gaps_without_big_gaps() {
        let out = "METRIC mm_cid.cpus.possible 255 cpus\n\
                   METRIC mm_cid.cpus.online 2 cpus\n\
                   METRIC mm_cid.gap.rate 250.000 1/s\n\
                   METRIC mm_cid.gap.p50 23.000 us\n\
                   METRIC mm_cid.big.count 0 gaps\n\
                   SKIP mm_cid.periodic.pct no gaps >= 150 us\n\
                   SKIP mm_cid.periodic.size_p50 no big gap has a partner 100+-15 ms away\n\
                   SKIP mm_cid.gap_big no gaps >= 150 us\n";
        let i = Bench.interpret("mm_cid", out, &Decl);
        assert_eq!(metric(&i, "mm_cid.cpus.possible").samples, [255.0]);
        assert_eq!(metric(&i, "mm_cid.big.count").samples, [0.0]);
        let raw = metric(&i, "mm_cid.gap_big");
        assert_eq!(raw.skip.as_deref(), Some("no gaps >= 150 us"));
        assert_eq!(
            i.cases
                .iter()
                .filter(|c| c.outcome == Outcome::Skip)
                .count(),
            3
        );
    }
}
