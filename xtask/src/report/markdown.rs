//! Markdown summary of a run (cells x tests), printed at the end and saved as
//! summary.md. Pure: a `Run` in, a string out.

use std::fmt::Write;

use super::fixed;
use crate::schema::{CellResult, GuestInfo, Metric, Outcome, Run, TestResult, Verdict};
use crate::stats::intervals::{ci_half_pct, MedianCis};
use crate::stats::location::{median, summarize, Summary};

fn test_cell(t: &TestResult) -> String {
    let took = t
        .duration_s
        .map_or(String::new(), |d| format!(" ({d:.1}s)"));
    if t.cases.is_empty() {
        return format!("{}{took}", t.outcome);
    }
    let n = t.cases.len();
    let pass = t
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .count();
    let fail = t
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .count();
    let skip = t
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Skip)
        .count();
    let mut s = format!("{} {pass}/{n}", t.outcome);
    if fail > 0 {
        s += &format!(", {fail} fail");
    }
    if skip > 0 {
        s += &format!(", {skip} skip");
    }
    s + &took
}

/// "2/255": the guest's online and possible CPUs, from its first report.
fn cpus(c: &CellResult) -> String {
    let count = |l: &Option<String>| l.as_deref().and_then(GuestInfo::count);
    match c
        .guest
        .as_ref()
        .map(|g| (count(&g.online), count(&g.possible)))
    {
        Some((Some(on), Some(pos))) => format!("{on}/{pos}"),
        _ => "-".into(),
    }
}

/// The summary; `cis` gives the metrics' median CIs (and gives up on
/// them when the caller is interrupted).
pub fn markdown(run: &Run, cis: &MedianCis) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# kmatrix run {}\n", run.started);
    s += &super::answer::markdown(run);
    prefixes(&mut s, run);
    cells_table(&mut s, run);
    metrics_table(&mut s, run, cis);
    cross_checks(&mut s, run);
    not_as_expected(&mut s, run);
    s
}

/// `[[agree]]`: two tools on one quantity, cell by cell.
fn cross_checks(s: &mut String, run: &Run) {
    if run.cross_checks.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Cross-checks\n");
    for x in &run.cross_checks {
        let _ = writeln!(
            s,
            "- {}: {}{}",
            x.cell,
            if x.agree { "" } else { "**DISAGREE** " },
            super::cross_check_words(x)
        );
    }
}

/// What a `NAME@K` variant is: the first K patches of series NAME.
fn prefixes(s: &mut String, run: &Run) {
    let mut seen: Vec<&str> = Vec::new();
    for c in &run.cells {
        if let Some((series, k)) = crate::plan::matrix::split_prefix(&c.variant) {
            if !seen.contains(&c.variant.as_str()) {
                seen.push(&c.variant);
                let what = if k == 1 {
                    "patch".to_string()
                } else {
                    format!("{k} patches")
                };
                let _ = writeln!(
                    s,
                    "`{}`: the first {what} of series `{series}` alone, compared with the base like a series.",
                    c.variant
                );
            }
        }
    }
    if !seen.is_empty() {
        let _ = writeln!(s);
    }
}

/// Cells x tests: outcome, expectation, accel, CPUs, each test, build,
/// boot and guest time.
fn cells_table(s: &mut String, run: &Run) {
    let mut tests: Vec<String> = Vec::new();
    for c in &run.cells {
        for t in &c.tests {
            if !tests.contains(&t.name) {
                tests.push(t.name.clone());
            }
        }
    }
    let _ = write!(
        s,
        "| cell | outcome | expected | accel | CPUs online/possible |"
    );
    for t in &tests {
        let _ = write!(s, " {t} |");
    }
    let _ = writeln!(s, " build | boot (wall) | guest |");
    let _ = write!(s, "|---|---|---|---|---|");
    for _ in &tests {
        let _ = write!(s, "---|");
    }
    let _ = writeln!(s, "---|---|---|");
    for c in &run.cells {
        let _ = write!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.id,
            c.outcome,
            if c.as_expected { "yes" } else { "**NO**" },
            c.accel,
            cpus(c)
        );
        for t in &tests {
            let v = c
                .tests
                .iter()
                .find(|x| &x.name == t)
                .map_or("-".to_string(), test_cell);
            let _ = write!(s, " {v} |");
        }
        let build = if c.timings.build_cached {
            "cached".to_string()
        } else {
            format!("{:.0}s", c.timings.build_s)
        };
        let _ = writeln!(
            s,
            " {build} | {:.1}s | {:.1}s |",
            c.timings.boot_s, c.timings.guest_s
        );
    }
}

/// Every metric of every cell: n, median (per boot too), its 95% CI and
/// precision against `target_ci_pct`, min, max, CV; then how many miss
/// their target.
fn metrics_table(s: &mut String, run: &Run, cis: &MedianCis) {
    let metrics: Vec<_> = run
        .cells
        .iter()
        .flat_map(|c| c.metrics.iter().map(move |m| (c, m)))
        .collect();
    if metrics.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Metrics\n\n| cell | metric | n | median | 95% CI of median (resampling boots when several) | min | max | CV |\n|---|---|---|---|---|---|---|---|");
    let (mut judged, mut missed) = (0, 0);
    for (c, m) in metrics {
        match (&m.skip, summarize(&m.samples)) {
            (Some(why), _) => {
                let _ = writeln!(s, "| {} | {} | - | skip: {why} | | | | |", c.id, m.name);
            }
            (None, Some(x)) => {
                let (row, over) = metric_row(c, m, &x, cis);
                *s += &row;
                if let Some(over) = over {
                    judged += 1;
                    missed += usize::from(over);
                }
            }
            (None, None) => {}
        }
    }
    if missed > 0 {
        let _ = writeln!(
            s,
            "\n{missed} of {judged} metrics miss their precision target (`target_ci_pct`): more samples or a quieter host would narrow them; a comparison with them may say \"{}\".",
            Verdict::TooNoisy.describe()
        );
    }
}

/// A measured metric's row, and whether it is over its precision target
/// (None: no target declared).
fn metric_row(c: &CellResult, m: &Metric, x: &Summary, cis: &MedianCis) -> (String, Option<bool>) {
    let median_ci = cis.get(m, x);
    let half = ci_half_pct(median_ci, x.median);
    let mut ci = match (median_ci, half) {
        (Some((lo, hi)), Some(h)) if h.is_finite() => format!("[{lo:.3}, {hi:.3}] ±{h:.1}%"),
        // Samples too large for the precision figure.
        (Some(_), Some(_)) => "-".to_string(),
        // No interval over several boots, one of them without samples.
        (None, _) if x.n >= 6 => "-".to_string(),
        _ => "n < 6".to_string(),
    };
    let half = half.filter(|h| h.is_finite());
    let over = m.target_ci_pct.map(|target| {
        let over = half.is_none_or(|h| h > target);
        if over {
            ci += &format!(" (**over ±{target}**)");
        }
        over
    });
    let by_boot = m.by_boot();
    let boots = if by_boot.len() > 1 {
        let meds: Vec<String> = by_boot.iter().map(|b| fixed(median(b), 1)).collect();
        format!(" (boots: {})", meds.join(", "))
    } else {
        String::new()
    };
    let cv = if (100.0 * x.cv).is_finite() {
        format!("{:.1}%", 100.0 * x.cv)
    } else {
        "-".into()
    };
    let row = format!(
        "| {} | {} | {} | {} {}{boots} | {ci} | {} | {} | {cv} |\n",
        c.id,
        m.name,
        x.n,
        fixed(x.median, 3),
        m.unit,
        fixed(x.min, 3),
        fixed(x.max, 3),
    );
    (row, over)
}

/// The cells not as expected: mismatches, the first three pieces of
/// evidence, how to reproduce and boot by hand.
fn not_as_expected(s: &mut String, run: &Run) {
    let bad: Vec<_> = run.cells.iter().filter(|c| !c.as_expected).collect();
    if bad.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Not as expected\n");
    for c in bad {
        let _ = writeln!(s, "### {} ({})\n", c.id, c.outcome);
        for m in &c.mismatches {
            let _ = writeln!(s, "- {m}");
        }
        for e in c.evidence.iter().take(3) {
            let path = e
                .path
                .as_ref()
                .map_or(String::new(), |p| format!(" ({})", p.display()));
            if let Some(c) = &e.crash {
                let _ = writeln!(
                    s,
                    "\n**{}** (fingerprint {}; frames: {})",
                    c.title,
                    c.fingerprint,
                    c.frames
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" < ")
                );
            }
            let _ = writeln!(s, "\n{}{path}\n", e.what);
            if !e.excerpt.is_empty() {
                let excerpt: Vec<&str> = e.excerpt.lines().take(30).collect();
                let _ = writeln!(s, "```\n{}\n```", excerpt.join("\n"));
            }
        }
        let _ = writeln!(s, "\nReproduce: `{}`", c.reproduce.xtask);
        if let Some(q) = &c.reproduce.qemu {
            let boot = if c.reproduce.boot.is_empty() {
                format!("cargo xtask boot {}", c.id)
            } else {
                c.reproduce.boot.clone()
            };
            let _ = writeln!(s, "\nBoot by hand: `{boot}` or\n```\n{q}\n```");
            if c.outcome == Outcome::Crash {
                let _ = writeln!(
                    s,
                    "\nUnder a debugger: `{boot} --gdb` (halted until gdb attaches; it prints the gdb command)"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::bench::{bench_lines, BenchLine};
    use crate::schema::*;
    use crate::stats::bootstrap::never;

    fn markdown_of(run: &Run) -> String {
        markdown(run, &MedianCis::new(&never))
    }

    /// A crashed cell's section offers its boot under a debugger; a
    /// failed one does not.
    #[test]
    fn a_crashed_cell_is_offered_a_debugger() {
        let cell = |outcome| CellResult {
            reproduce: Reproduce {
                xtask: "cargo xtask matrix --cell 6.1/base/x86_64/tiny".into(),
                qemu: Some("qemu-system-x86_64 -kernel bzImage".into()),
                boot: "cargo xtask boot 6.1/base/x86_64/tiny".into(),
                ..Reproduce::default()
            },
            ..CellResult::blank("6.1/base/x86_64/tiny", outcome)
        };
        let md = markdown_of(&Run::fixture(vec![cell(Outcome::Crash)]));
        assert!(
            md.contains("Under a debugger: `cargo xtask boot 6.1/base/x86_64/tiny --gdb`"),
            "{md}"
        );
        let md = markdown_of(&Run::fixture(vec![cell(Outcome::Fail)]));
        assert!(!md.contains("--gdb"), "{md}");
    }

    /// Metrics from a real guest run of the benchmark (6.1 + series, x86_64,
    /// TCG, 400 loops per sample under a 55 s budget).
    fn fixture_metrics(target: Option<f64>) -> Vec<Metric> {
        let p = format!(
            "{}/../tests/fixtures/seccomp_notify-x86_64-series.results",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut ms: Vec<Metric> = Vec::new();
        for l in bench_lines(&std::fs::read_to_string(p).unwrap()) {
            if let BenchLine::Metric { name, value, unit } = l {
                match ms.iter_mut().find(|m| m.name == name) {
                    Some(m) => m.samples.push(value),
                    None => ms.push(Metric {
                        target_ci_pct: target,
                        ..Metric::fixture(&name, &unit, &[value])
                    }),
                }
            }
        }
        ms
    }

    fn run_with(metrics: Vec<Metric>) -> Run {
        Run::fixture(vec![CellResult {
            as_expected: true,
            tests: vec![TestResult {
                name: "seccomp_notify".into(),
                outcome: Outcome::Pass,
                reason: None,
                duration_s: Some(55.75),
                cases: vec![],
                failed_by_cases: false,
            }],
            metrics,
            ..CellResult::blank("6.1/s/x86_64/tiny", Outcome::Pass)
        }])
    }

    /// The metrics table's row for `metric`.
    fn row<'a>(md: &'a str, metric: &str) -> &'a str {
        md.lines()
            .find(|l| l.contains(&format!("| {metric} |")))
            .unwrap_or_else(|| panic!("no row for {metric} in\n{md}"))
    }

    /// The metrics whose row is marked over `target`.
    fn marked_over(md: &str, target: &str) -> Vec<String> {
        md.lines()
            .filter(|l| l.contains(&format!("(**over ±{target}**)")))
            .map(|l| l.split(" | ").nth(1).unwrap().to_string())
            .collect()
    }

    fn case(name: &str, outcome: Outcome, reason: Option<&str>) -> CaseResult {
        CaseResult {
            name: name.into(),
            outcome,
            reason: reason.map(Into::into),
        }
    }

    /// A run whose summary shows every part of the report: a base cell with
    /// an expected and an unexpected case failure, skipped cases and a
    /// skipped metric; the series cell with the real benchmark fixture (its
    /// first metric split into two boots of 50 and 56 samples, to show the
    /// per-boot medians and the boot-resampled CI); and a cell that did not
    /// build, with more evidence and a longer excerpt than the report shows.
    fn golden_run() -> Run {
        let base = "6.1/base/x86_64/tiny";
        let base_cell = CellResult {
            accel: "tcg,thread=multi".into(),
            as_expected: false,
            mismatches: vec![format!(
                "{base} seccomp_bpf/global.user_notification_filter_empty: fail (Test terminated by timeout), expected pass"
            )],
            evidence: vec![Evidence {
                kind: EvidenceKind::Other,
                what: "seccomp_bpf: 2 of 4 cases failed".into(),
                excerpt: "# global.user_notification_filter_empty: Test terminated by timeout\nnot ok 4 global.user_notification_filter_empty".into(),
                path: Some(format!("results/run/{base}/results.log").into()),
                crash: None,
            }],
            tests: vec![
                TestResult {
                    name: "seccomp_bpf".into(),
                    outcome: Outcome::Fail,
                    reason: Some("2 of 4 cases failed".into()),
                    duration_s: Some(12.34),
                    cases: vec![
                        case("global.kcmp", Outcome::Pass, None),
                        case("TRAP.dfl", Outcome::Skip, Some("no kcmp")),
                        case(
                            "global.user_notification_sync",
                            Outcome::Fail,
                            Some("Expected 0 (0) == ret (-1)"),
                        ),
                        case(
                            "global.user_notification_filter_empty",
                            Outcome::Fail,
                            Some("Test terminated by timeout"),
                        ),
                    ],
                    failed_by_cases: true,
                },
                TestResult {
                    name: "seccomp_notify".into(),
                    outcome: Outcome::Pass,
                    reason: None,
                    duration_s: Some(18.0),
                    cases: vec![
                        case("seccomp_notify.default.unpinned", Outcome::Pass, None),
                        case(
                            "seccomp_notify.sync.unpinned",
                            Outcome::Skip,
                            Some("SECCOMP_IOCTL_NOTIF_SET_FLAGS: EINVAL"),
                        ),
                    ],
                    failed_by_cases: false,
                },
            ],
            metrics: vec![
                Metric {
                    target_ci_pct: Some(10.0),
                    ..Metric::fixture(
                        "seccomp_notify.default.unpinned",
                        "us/op",
                        &[301.5, 288.0, 295.25, 310.0, 279.5, 305.75, 292.0, 299.0],
                    )
                },
                Metric {
                    skip: Some("SECCOMP_IOCTL_NOTIF_SET_FLAGS: EINVAL".into()),
                    target_ci_pct: Some(10.0),
                    ..Metric::fixture("seccomp_notify.sync.unpinned", "us/op", &[])
                },
            ],
            timings: Timings {
                build_s: 312.4,
                boot_s: 45.25,
                guest_s: 40.1,
                ..Timings::default()
            },
            reproduce: Reproduce {
                xtask: format!("cargo xtask matrix --cell {base}"),
                qemu: Some("qemu-system-x86_64 -accel tcg,thread=multi -kernel bzImage -initrd initramfs.cpio.gz".into()),
                ..Reproduce::default()
            },
            ..CellResult::blank(base, Outcome::Fail)
        };
        let mut series_metrics = fixture_metrics(Some(10.0));
        series_metrics[0].boot_sizes = vec![50, 56];
        let series_cell = CellResult {
            accel: "kvm".into(),
            as_expected: true,
            tests: vec![
                TestResult {
                    name: "seccomp_bpf".into(),
                    outcome: Outcome::Pass,
                    reason: None,
                    duration_s: Some(11.9),
                    cases: vec![
                        case("global.kcmp", Outcome::Pass, None),
                        case("global.user_notification_sync", Outcome::Pass, None),
                    ],
                    failed_by_cases: false,
                },
                TestResult {
                    name: "seccomp_notify".into(),
                    outcome: Outcome::Pass,
                    reason: None,
                    duration_s: Some(55.75),
                    cases: vec![],
                    failed_by_cases: false,
                },
            ],
            metrics: series_metrics,
            timings: Timings {
                build_cached: true,
                boot_s: 61.0,
                guest_s: 58.4,
                ..Timings::default()
            },
            ..CellResult::blank("6.1/seccomp-sync-wakeup/x86_64/tiny", Outcome::Pass)
        };
        let arm = "6.1/base/arm64/tiny";
        let log: String = (1..=32).map(|i| format!("  CC kernel/f{i}.o\n")).collect();
        let ev = |what: &str, excerpt: &str| Evidence {
            kind: EvidenceKind::Host,
            what: what.into(),
            excerpt: excerpt.into(),
            path: None,
            crash: None,
        };
        let build_error = CellResult {
            mismatches: vec![format!(
                "{arm}: cell outcome build-error: make Image failed"
            )],
            evidence: vec![
                Evidence {
                    path: Some(format!("results/run/{arm}/build.log").into()),
                    crash: None,
                    ..ev("make Image failed", &log)
                },
                ev("the first compiler error", ""),
                ev("third", "shown"),
                ev("fourth", "not shown: the report keeps three"),
            ],
            timings: Timings {
                build_s: 12.0,
                ..Timings::default()
            },
            reproduce: Reproduce {
                xtask: format!("cargo xtask matrix --cell {arm}"),
                ..Reproduce::default()
            },
            ..CellResult::blank(arm, Outcome::BuildError)
        };
        Run {
            started: "2025-01-01T00:00:00Z".into(),
            ..Run::fixture(vec![base_cell, series_cell, build_error])
        }
    }

    /// The whole summary against the checked-in
    /// tests/fixtures/golden/summary.md (regenerate: KMATRIX_BLESS=1, see
    /// golden.rs; read the diff before committing it).
    #[test]
    fn summary_matches_the_golden_file() {
        crate::golden::check("summary.md", markdown_of(&golden_run()).as_bytes());
    }

    /// Expected values computed outside the harness from the fixture's
    /// samples (n = 106 per metric): the distribution-free 95% CI of a median
    /// is (x(43), x(64)) of the sorted samples (k = 43: the largest k with
    /// P(Binom(106, 1/2) <= k - 1) <= 0.025), and its half-width in % of the
    /// median is 50 (x(64) - x(43)) / median:
    ///
    ///   default.unpinned  [254.359, 269.852]  2.97%
    ///   default.same-cpu  [125.030, 137.671]  4.79%
    ///   default.cross-cpu [232.022, 251.763]  4.14%
    ///   sync.unpinned     [120.917, 136.620]  6.05%
    ///   sync.same-cpu     [103.718, 127.914] 10.11%
    ///   sync.cross-cpu    [244.403, 263.938]  3.90%
    #[test]
    fn precision_target_marks_exactly_the_wide_intervals() {
        let ms = fixture_metrics(Some(10.0));
        assert_eq!(ms.len(), 6);
        assert!(
            ms.iter().all(|m| m.samples.len() == 106),
            "one sample per round for every configuration"
        );
        let md = markdown_of(&run_with(ms));
        assert!(md.contains("| pass (55.8s) |"), "{md}");
        assert_eq!(marked_over(&md, "10"), ["seccomp_notify.sync.same-cpu"]);
        assert!(
            row(&md, "seccomp_notify.sync.same-cpu")
                .contains("| [103.718, 127.914] ±10.1% (**over ±10**) |"),
            "{md}"
        );
        assert!(
            row(&md, "seccomp_notify.default.unpinned")
                .contains("| 106 | 260.750 us/op | [254.359, 269.852] ±3.0% |"),
            "{md}"
        );
        assert!(
            md.contains("\n1 of 6 metrics miss their precision target"),
            "{md}"
        );
        // A tighter target: four over, two within.
        let md = markdown_of(&run_with(fixture_metrics(Some(4.0))));
        assert_eq!(
            marked_over(&md, "4"),
            [
                "seccomp_notify.default.same-cpu",
                "seccomp_notify.default.cross-cpu",
                "seccomp_notify.sync.unpinned",
                "seccomp_notify.sync.same-cpu",
            ]
        );
        assert!(md.contains("\n4 of 6 metrics miss"), "{md}");
        // No target declared: nothing is judged.
        let md = markdown_of(&run_with(fixture_metrics(None)));
        assert!(
            !md.contains("over ±") && !md.contains("precision target"),
            "{md}"
        );
    }

    /// Two boots of 50 and 56 samples: their medians (254.9805, 268.0925,
    /// computed outside the harness) are shown, and the CI is no longer the
    /// single-boot one: it resamples boots, so it reaches from the lower
    /// boot's median to past the upper one's.
    #[test]
    fn several_boots_show_each_median_and_widen_the_ci() {
        let mut two = fixture_metrics(None);
        two[0].boot_sizes = vec![50, 56];
        let md = markdown_of(&run_with(two));
        let r = row(&md, "seccomp_notify.default.unpinned");
        assert!(r.contains("| 260.750 us/op (boots: 255.0, 268.1) |"), "{r}");
        let ci = r.split('[').nth(1).unwrap().split(']').next().unwrap();
        let (lo, hi) = ci.split_once(", ").unwrap();
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        assert!(lo < 254.9805 && hi > 268.0925, "{r}");
        assert!(hi - lo > 269.852 - 254.359, "{r}");
    }
}
