//! Markdown summary of a run (cells x tests), printed at the end and saved as
//! summary.md. Pure: a `Run` in, a string out.

use std::fmt::Write;

use crate::schema::{Outcome, Run, TestResult, Verdict};

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

/// The 95% CI of a metric's median: distribution-free for one boot; over
/// several boots a bootstrap that resamples boots, then samples, so the
/// spread between boots counts.
pub fn median_ci(
    m: &crate::schema::Metric,
    x: &crate::report::stats::Summary,
) -> Option<(f64, f64)> {
    let boots = m.by_boot();
    if boots.len() > 1 {
        crate::report::stats::median_ci_boots(&boots, 0.95, 4000, 0x6b6d)
    } else {
        x.median_ci
    }
}

/// Half the width of a median's CI in percent of the median: the precision
/// figure reported per metric and compared with `target_ci_pct`.
pub fn ci_half_pct(ci: Option<(f64, f64)>, median: f64) -> Option<f64> {
    ci.filter(|_| median > 0.0)
        .map(|(lo, hi)| 50.0 * (hi - lo) / median)
}

pub fn markdown(run: &Run) -> String {
    let mut tests: Vec<String> = Vec::new();
    for c in &run.cells {
        for t in &c.tests {
            if !tests.contains(&t.name) {
                tests.push(t.name.clone());
            }
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "# kmatrix run {}\n", run.started);
    let _ = write!(s, "| cell | outcome | expected | accel |");
    for t in &tests {
        let _ = write!(s, " {t} |");
    }
    let _ = writeln!(s, " build | boot (wall) | guest |");
    let _ = write!(s, "|---|---|---|---|");
    for _ in &tests {
        let _ = write!(s, "---|");
    }
    let _ = writeln!(s, "---|---|---|");
    for c in &run.cells {
        let _ = write!(
            s,
            "| {} | {} | {} | {} |",
            c.id,
            c.outcome,
            if c.as_expected { "yes" } else { "**NO**" },
            c.accel
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
    let metrics: Vec<_> = run
        .cells
        .iter()
        .flat_map(|c| c.metrics.iter().map(move |m| (c, m)))
        .collect();
    if !metrics.is_empty() {
        let _ = writeln!(s, "\n## Metrics\n\n| cell | metric | n | median | 95% CI of median (resampling boots when several) | min | max | CV |\n|---|---|---|---|---|---|---|---|");
        let (mut judged, mut missed) = (0, 0);
        for (c, m) in metrics {
            match (&m.skip, crate::report::stats::summarize(&m.samples)) {
                (Some(why), _) => {
                    let _ = writeln!(s, "| {} | {} | - | skip: {why} | | | | |", c.id, m.name);
                }
                (None, Some(x)) => {
                    let median_ci = median_ci(m, &x);
                    let half = ci_half_pct(median_ci, x.median);
                    let mut ci = match (median_ci, half) {
                        (Some((lo, hi)), Some(h)) => format!("[{lo:.3}, {hi:.3}] ±{h:.1}%"),
                        _ => "n < 6".to_string(),
                    };
                    if let Some(target) = m.target_ci_pct {
                        judged += 1;
                        if half.map_or(true, |h| h > target) {
                            missed += 1;
                            ci += &format!(" (**over ±{target}**)");
                        }
                    }
                    let by_boot = m.by_boot();
                    let boots = if by_boot.len() > 1 {
                        let meds: Vec<String> = by_boot
                            .iter()
                            .map(|b| format!("{:.1}", crate::report::stats::median(b)))
                            .collect();
                        format!(" (boots: {})", meds.join(", "))
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {:.3} {}{boots} | {ci} | {:.3} | {:.3} | {:.1}% |",
                        c.id,
                        m.name,
                        x.n,
                        x.median,
                        m.unit,
                        x.min,
                        x.max,
                        100.0 * x.cv
                    );
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
    let bad: Vec<_> = run.cells.iter().filter(|c| !c.as_expected).collect();
    if !bad.is_empty() {
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
                let _ = writeln!(s, "\n{}{path}\n", e.what);
                if !e.excerpt.is_empty() {
                    let excerpt: Vec<&str> = e.excerpt.lines().take(30).collect();
                    let _ = writeln!(s, "```\n{}\n```", excerpt.join("\n"));
                }
            }
            let _ = writeln!(s, "\nReproduce: `{}`", c.reproduce.xtask);
            if let Some(q) = &c.reproduce.qemu {
                let _ = writeln!(
                    s,
                    "\nBoot by hand: `cargo xtask boot {}` or\n```\n{q}\n```",
                    c.id
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::guestlog::{bench_lines, BenchLine};
    use crate::schema::*;

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
                        name,
                        unit,
                        samples: vec![value],
                        skip: None,
                        target_ci_pct: target,
                        boot_sizes: vec![],
                    }),
                }
            }
        }
        ms
    }

    fn run_with(metrics: Vec<Metric>) -> Run {
        Run {
            schema: SCHEMA_VERSION,
            started: "t".into(),
            host: Host::default(),
            matrix: "matrix.toml".into(),
            cells: vec![CellResult {
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
            }],
            comparisons: vec![],
        }
    }

    #[test]
    fn precision_target_marks_exactly_the_wide_intervals() {
        let ms = fixture_metrics(Some(10.0));
        assert_eq!(ms.len(), 6);
        assert!(
            ms.iter().all(|m| m.samples.len() == 106),
            "one sample per round for every configuration"
        );
        let md = markdown(&run_with(ms.clone()));
        assert!(md.contains("pass (55.8s)"), "{md}");
        let mut over = 0;
        for m in &ms {
            let x = crate::report::stats::summarize(&m.samples).unwrap();
            let half = ci_half_pct(median_ci(m, &x), x.median).unwrap();
            let row = md
                .lines()
                .find(|l| l.contains(&format!("| {} |", m.name)))
                .unwrap();
            assert_eq!(
                row.contains("over ±10"),
                half > 10.0,
                "{row} (half-width {half:.2}%)"
            );
            over += (half > 10.0) as usize;
        }
        // The fixture has both kinds, so both branches above were exercised.
        assert!(over > 0 && over < ms.len(), "{over} of {} over", ms.len());
        assert!(
            md.contains(&format!("{over} of 6 metrics miss their precision target")),
            "{md}"
        );
        // Two boots: each boot's median is shown.
        let mut two = fixture_metrics(None);
        two[0].boot_sizes = vec![50, 56];
        let meds = [
            crate::report::stats::median(&two[0].samples[..50]),
            crate::report::stats::median(&two[0].samples[50..]),
        ];
        let md2 = markdown(&run_with(two.clone()));
        assert!(
            md2.contains(&format!("(boots: {:.1}, {:.1})", meds[0], meds[1])),
            "{md2}"
        );
        // ... and the CI is the one that resamples boots.
        let (lo, hi) =
            crate::report::stats::median_ci_boots(&two[0].by_boot(), 0.95, 4000, 0x6b6d).unwrap();
        let row = md2
            .lines()
            .find(|l| l.contains(&format!("| {} |", two[0].name)))
            .unwrap();
        assert!(row.contains(&format!("[{lo:.3}, {hi:.3}]")), "{row}");
        // No target declared: nothing is judged.
        let md = markdown(&run_with(fixture_metrics(None)));
        assert!(
            !md.contains("over ±") && !md.contains("precision target"),
            "{md}"
        );
    }
}
