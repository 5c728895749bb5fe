//! The answer first: what each series did against its base, in one short
//! block. Per series: cells whose outcome is not a test result (a crash, a
//! build error), crash titles new against the base or also on it, cases
//! newly failing or newly passing, cases that passed
//! on the base and did not run (a test that still ran), and every
//! significant change with its CI, base against series, the changes no
//! larger than what code layout alone does (`[metric] layout_pct`), the
//! comparisons with the base left too noisy to judge (so that silence is
//! not read as "no change"), plus the pairs
//! only the series can measure (sync vs default where the base has no
//! sync mode), and two tools on one quantity that disagree in a series
//! cell (`[[agree]]`: the series' own benchmark timing something else).
//! summary.md, the terminal's last lines and the HTML report
//! open with it; the tables follow. Rendering only.

use std::collections::BTreeMap;

use super::{ci_pct, cross_check_words, pct, verdict_words};
use crate::schema::{CellResult, Comparison, ComparisonKind, Outcome, Run, Verdict};

/// One series of one kernel, and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    /// "6.1/seccomp-sync-wakeup against 6.1/base".
    pub title: String,
    /// "x86_64/tiny: newly passing: seccomp_bpf global.user_notification_sync".
    pub items: Vec<String>,
}

/// Said when a series did nothing the run can see.
pub const NOTHING: &str = "no new failure, no crash, no significant change";

/// Said when the run has no series at all.
pub const NO_SERIES: &str = "No series in this run: nothing was compared with a base.";

/// The answer, series by series in the order of the run's cells.
pub fn answer(run: &Run) -> Vec<Said> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for c in run.cells.iter().filter(|c| c.variant != "base") {
        if !groups.contains(&(c.kernel.as_str(), c.variant.as_str())) {
            groups.push((&c.kernel, &c.variant));
        }
    }
    groups
        .into_iter()
        .map(|(kernel, variant)| {
            let mut items = Vec::new();
            for nc in run
                .cells
                .iter()
                .filter(|c| c.kernel == kernel && c.variant == variant)
            {
                let base = run.cells.iter().find(|c| {
                    c.kernel == nc.kernel
                        && c.variant == "base"
                        && c.arch == nc.arch
                        && c.config == nc.config
                });
                items.extend(cell_items(run, nc, base));
            }
            if items.is_empty() {
                items.push(NOTHING.to_string());
            }
            Said {
                title: format!("{kernel}/{variant} against {kernel}/base"),
                items,
            }
        })
        .collect()
}

fn cell_items(run: &Run, nc: &CellResult, base: Option<&CellResult>) -> Vec<String> {
    let at = format!("{}/{}", nc.arch, nc.config);
    let mut out = Vec::new();
    let disagree: Vec<String> = run
        .cross_checks
        .iter()
        .filter(|x| x.cell == nc.id && !x.agree)
        .map(|x| format!("{at}: {}", cross_check_words(x)))
        .collect();
    if !is_test_result(nc.outcome) {
        let base_too = base.is_some_and(|b| b.outcome == nc.outcome);
        out.push(format!(
            "{at}: {}{}, {}",
            nc.outcome,
            if base_too { " (the base too)" } else { "" },
            if nc.as_expected {
                "as the matrix expects"
            } else {
                "NOT as the matrix expects"
            }
        ));
    }
    let Some(bc) = base else {
        out.push(format!("{at}: no base cell in this run to compare with"));
        out.extend(disagree);
        return out;
    };
    let (theirs, ours) = (crash_titles(bc), crash_titles(nc));
    let (new, both): (Vec<&String>, Vec<&String>) = ours.iter().partition(|t| !theirs.contains(t));
    if !new.is_empty() {
        out.push(format!(
            "{at}: new crash: {}",
            new.iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !both.is_empty() {
        out.push(format!(
            "{at}: crash also on the base: {}",
            both.iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let (was, now) = (cases(bc), cases(nc));
    let moved = |from: Outcome, to: Outcome| -> Vec<String> {
        now.iter()
            .filter(|(k, &o)| o == to && was.get(*k) == Some(&from))
            .map(|(k, _)| k.clone())
            .collect()
    };
    let mut failing = moved(Outcome::Pass, Outcome::Fail);
    failing.extend(whole_failures(bc, nc, &failing));
    if !failing.is_empty() {
        out.push(format!("{at}: newly failing: {}", failing.join(", ")));
    }
    let passing = moved(Outcome::Fail, Outcome::Pass);
    if !passing.is_empty() {
        out.push(format!("{at}: newly passing: {}", passing.join(", ")));
    }
    let gone = no_longer_run(&was, &now, nc, &failing);
    if !gone.is_empty() {
        let more = match gone.len() {
            n if n > 5 => format!(", and {} more", n - 5),
            _ => String::new(),
        };
        out.push(format!(
            "{at}: passed on the base, not run here: {}{more}",
            gone[..gone.len().min(5)].join(", ")
        ));
    }
    for c in run.comparisons.iter().filter(|c| significant(c)) {
        let against_base = c.kind == ComparisonKind::Variants && c.base_cell == bc.id;
        let series_only = c.kind == ComparisonKind::Within
            && !run.comparisons.iter().any(|b| {
                b.kind == ComparisonKind::Within
                    && b.new_cell == bc.id
                    && b.base_metric == c.base_metric
                    && b.new_metric == c.new_metric
            });
        if c.new_cell != nc.id || !(against_base || series_only) {
            continue;
        }
        let what = if against_base {
            c.new_metric.clone()
        } else {
            format!(
                "{} vs {}{} (a pair the base does not measure)",
                c.new_metric,
                c.base_metric,
                c.split_note()
            )
        };
        out.push(format!(
            "{at}: {what}: {} {} {}",
            pct(c.pct_change, 1),
            ci_pct(c.ci95_lo, c.ci95_hi),
            verdict_words(c)
        ));
    }
    let judged_here = |c: &&Comparison| {
        c.kind == ComparisonKind::Variants && c.base_cell == bc.id && c.new_cell == nc.id
    };
    let all = run.comparisons.iter().filter(judged_here).count();
    // Significant, but no larger than what layout alone does: shown with
    // their figures, as changes the run saw and cannot attribute.
    for (c, l) in run
        .comparisons
        .iter()
        .filter(judged_here)
        .filter_map(|c| c.layout_pct.map(|l| (c, l)))
    {
        out.push(format!(
            "{at}: {}: {} {}, inside the +-{l}% code layout alone moves it: not counted as the series' doing",
            c.new_metric,
            pct(c.pct_change, 1),
            ci_pct(c.ci95_lo, c.ci95_hi),
        ));
    }
    let noisy: Vec<&Comparison> = run
        .comparisons
        .iter()
        .filter(judged_here)
        .filter(|c| c.verdict == Verdict::TooNoisy && c.layout_pct.is_none())
        .collect();
    if !noisy.is_empty() {
        let shown: Vec<String> = noisy
            .iter()
            .take(3)
            .map(|c| {
                format!(
                    "{} {} {}",
                    c.new_metric,
                    pct(c.pct_change, 1),
                    ci_pct(c.ci95_lo, c.ci95_hi)
                )
            })
            .collect();
        let more = match noisy.len() {
            n if n > 3 => format!(", and {} more", n - 3),
            _ => String::new(),
        };
        out.push(format!(
            "{at}: {} of {all} comparisons with the base too noisy to judge, not a verdict of no change: {}{more}",
            noisy.len(),
            shown.join(", ")
        ));
    }
    out.extend(disagree);
    out
}

/// Tests that fail as a whole in `nc`, having passed on the base or lost
/// cases that passed there, with no case of theirs among `failing` (a kselftest that bails out before its cases,
/// a program that aborts): "seccomp_bpf (as a whole; 97 cases that passed
/// on the base did not run)".
fn whole_failures(bc: &CellResult, nc: &CellResult, failing: &[String]) -> Vec<String> {
    nc.tests
        .iter()
        .filter(|t| matches!(t.outcome, Outcome::Fail | Outcome::Timeout))
        .filter_map(|t| {
            let b = bc.tests.iter().find(|b| b.name == t.name)?;
            let own = format!("{} ", t.name);
            if failing.iter().any(|f| f == &t.name || f.starts_with(&own)) {
                return None;
            }
            let lost = b
                .cases
                .iter()
                .filter(|c| c.outcome == Outcome::Pass)
                .filter(|c| !t.cases.iter().any(|x| x.name == c.name))
                .count();
            // Passed on the base, or lost cases that passed there (a base
            // that fails only as the matrix expects still ran them).
            if b.outcome != Outcome::Pass && lost == 0 {
                return None;
            }
            Some(match lost {
                0 => format!("{} (as a whole, {})", t.name, t.outcome),
                n => format!(
                    "{} (as a whole, {}; {n} case{} that passed on the base did not run)",
                    t.name,
                    t.outcome,
                    if n == 1 { "" } else { "s" }
                ),
            })
        })
        .collect()
}

/// Nested cases (`suite.case`, `program.case` of the kernel's own tests)
/// that passed on the base and are missing from `nc` though their parent
/// case ran there, in a test not already said to fail as a whole
/// (`failing`): a KUnit case the series dropped, a subtest a program
/// stopped reporting.
fn no_longer_run(
    was: &BTreeMap<String, Outcome>,
    now: &BTreeMap<String, Outcome>,
    nc: &CellResult,
    failing: &[String],
) -> Vec<String> {
    was.iter()
        .filter(|(k, &o)| o == Outcome::Pass && !now.contains_key(*k))
        .filter(|(k, _)| {
            let Some((test, case)) = k.split_once(' ') else {
                return false;
            };
            let whole = format!("{test} (as a whole");
            let parent_ran = case
                .rsplit_once('.')
                .is_some_and(|(parent, _)| now.contains_key(&format!("{test} {parent}")));
            parent_ran
                && nc.tests.iter().any(|t| t.name == test)
                && !failing.iter().any(|f| f.starts_with(&whole))
        })
        .map(|(k, _)| k.clone())
        .collect()
}

/// The titles of a cell's crash reports, once each, in order.
fn crash_titles(c: &CellResult) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in c.evidence.iter().filter_map(|e| e.crash.as_ref()) {
        if !out.contains(&t.title) {
            out.push(t.title.clone());
        }
    }
    out
}

/// Passed, failed or was skipped: the cell ran its tests. Anything else
/// (a crash, a timeout, a build or apply error) is news of its own.
fn is_test_result(o: Outcome) -> bool {
    matches!(
        o,
        Outcome::Pass | Outcome::Fail | Outcome::Skip | Outcome::Flaky
    )
}

fn significant(c: &Comparison) -> bool {
    matches!(c.verdict, Verdict::Improved | Verdict::Regressed)
}

/// Every case of a cell ("test case"), and every test without cases
/// ("test"), with its outcome.
fn cases(c: &CellResult) -> BTreeMap<String, Outcome> {
    let mut out = BTreeMap::new();
    for t in &c.tests {
        if t.cases.is_empty() {
            out.insert(t.name.clone(), t.outcome);
        }
        for cs in &t.cases {
            out.insert(format!("{} {}", t.name, cs.name), cs.outcome);
        }
    }
    out
}

/// The answer as summary.md and the terminal show it.
pub fn markdown(run: &Run) -> String {
    let said = answer(run);
    let mut s = String::from("## The answer\n\n");
    if said.is_empty() {
        s += NO_SERIES;
        s += "\n\n";
        return s;
    }
    for g in said {
        s += &format!("**{}**\n\n", g.title);
        for i in g.items {
            s += &format!("- {i}\n");
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_run() -> Run {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/results-default-matrix.json"
        ))
        .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The real 6.1 run: the series' new case passes on both arches (it
    /// fails on the base), and sync vs default improved in the series'
    /// cells, where the base has no sync mode to compare; the base-vs-series
    /// comparisons were all too noisy, and each cell says so with their
    /// CIs rather than keep silent.
    #[test]
    fn the_answer_names_new_passes_and_the_series_own_claim() {
        let said = answer(&default_run());
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].title, "6.1/seccomp-sync-wakeup against 6.1/base");
        let items = &said[0].items;
        for arch in ["x86_64", "arm64"] {
            assert!(
                items.contains(&format!(
                    "{arch}/tiny: newly passing: seccomp_bpf global.user_notification_sync"
                )),
                "{items:?}"
            );
        }
        let claims: Vec<&String> = items
            .iter()
            .filter(|i| {
                i.contains("seccomp_notify.sync.unpinned vs seccomp_notify.default.unpinned")
            })
            .collect();
        assert_eq!(claims.len(), 2, "{items:?}");
        assert!(claims[0].starts_with("x86_64/tiny: ") && claims[0].ends_with(" improved"));
        assert!(claims[0].contains("-46.0% ["), "{}", claims[0]);
        assert!(
            items.contains(
                &"x86_64/tiny: 3 of 3 comparisons with the base too noisy to judge, not a \
                  verdict of no change: seccomp_notify.default.unpinned -1.6% [-15.4%, +8.3%], \
                  seccomp_notify.default.same-cpu -4.0% [-15.1%, +4.8%], \
                  seccomp_notify.default.cross-cpu -1.8% [-14.7%, +11.6%]"
                    .to_string()
            ),
            "{items:?}"
        );
        assert_eq!(items.len(), 6, "{items:?}");
    }

    /// A significant change inside the layout bound is said apart, with
    /// its figures and the bound, and is not among the too-noisy ones:
    /// the captured 6.1 membarrier run, its -14.9% held to a 20% bound.
    #[test]
    fn a_change_inside_the_layout_bound_is_said_apart() {
        let (mut run, mut m) = crate::stats::compare::aa_fixture::fixture_run("layout-membarrier");
        m.metric.get_mut("membarrier").unwrap().layout_pct = Some(20.0);
        run.comparisons = crate::stats::compare::compare(&run, &m);
        let said = answer(&run);
        let items = &said[0].items;
        let layout: Vec<&String> = items.iter().filter(|i| i.contains("code layout")).collect();
        assert_eq!(layout.len(), 1, "{items:?}");
        assert!(
            layout[0].starts_with("x86_64/tiny: membarrier.private_expedited.idle: -14.")
                && layout[0].ends_with(
                    ", inside the +-20% code layout alone moves it: not counted as the series' doing"
                ),
            "{}",
            layout[0]
        );
        assert!(
            items
                .iter()
                .filter(|i| i.contains("too noisy to judge"))
                .all(|i| !i.contains("private_expedited.idle")),
            "{items:?}"
        );
    }

    /// A crash is said first with whether the matrix expected it; a case
    /// the base passed and the series fails is newly failing; a series
    /// that changed nothing says so in one line; a run without series
    /// says that.
    #[test]
    fn crashes_new_failures_and_silence_are_each_said() {
        let mut run = default_run();
        let x86 = run
            .cells
            .iter_mut()
            .find(|c| c.id == "6.1/seccomp-sync-wakeup/x86_64/tiny")
            .unwrap();
        x86.outcome = Outcome::Crash;
        x86.as_expected = false;
        let arm = run
            .cells
            .iter_mut()
            .find(|c| c.id == "6.1/seccomp-sync-wakeup/arm64/tiny")
            .unwrap();
        let t = arm
            .tests
            .iter_mut()
            .find(|t| t.name == "seccomp_bpf")
            .unwrap();
        let first = t
            .cases
            .iter_mut()
            .find(|c| c.outcome == Outcome::Pass)
            .unwrap();
        first.outcome = Outcome::Fail;
        let name = format!("seccomp_bpf {}", first.name);
        let items = &answer(&run)[0].items;
        assert_eq!(items[0], "x86_64/tiny: crash, NOT as the matrix expects");
        assert!(
            items.contains(&format!("arm64/tiny: newly failing: {name}")),
            "{items:?}"
        );

        // A test that bails out before its cases (`Bail out!`, no case
        // reported) fails as a whole: newly failing, its lost cases counted.
        let mut bail = default_run();
        let arm = bail
            .cells
            .iter_mut()
            .find(|c| c.id == "6.1/seccomp-sync-wakeup/arm64/tiny")
            .unwrap();
        let t = arm
            .tests
            .iter_mut()
            .find(|t| t.name == "seccomp_bpf")
            .unwrap();
        t.outcome = Outcome::Fail;
        t.cases.clear();
        let base_passed = bail
            .cells
            .iter()
            .find(|c| c.id == "6.1/base/arm64/tiny")
            .unwrap()
            .tests
            .iter()
            .find(|t| t.name == "seccomp_bpf")
            .unwrap()
            .cases
            .iter()
            .filter(|c| c.outcome == Outcome::Pass)
            .count();
        assert!(base_passed > 50, "{base_passed}");
        let items = &answer(&bail)[0].items;
        assert!(
            items.contains(&format!(
                "arm64/tiny: newly failing: seccomp_bpf (as a whole, fail; {base_passed} cases that passed on the base did not run)"
            )),
            "{items:?}"
        );

        // A nested case that passed on the base and is gone while its
        // parent case ran is said; a case without a parent that ran (a
        // bench's, which follow its budget) is not.
        let mut lost = default_run();
        for c in lost.cells.iter_mut().filter(|c| c.arch == "arm64") {
            let t = c
                .tests
                .iter_mut()
                .find(|t| t.name == "seccomp_bpf")
                .unwrap();
            t.cases.push(crate::schema::CaseResult {
                name: "global".into(),
                outcome: Outcome::Pass,
                reason: None,
            });
            if c.variant != "base" {
                t.cases.retain(|k| k.name != "global.kcmp");
            }
        }
        let items = &answer(&lost)[0].items;
        assert!(
            items.contains(
                &"arm64/tiny: passed on the base, not run here: seccomp_bpf global.kcmp"
                    .to_string()
            ),
            "{items:?}"
        );
        let mut unparented = default_run();
        for c in unparented.cells.iter_mut().filter(|c| c.variant != "base") {
            let t = c
                .tests
                .iter_mut()
                .find(|t| t.name == "seccomp_bpf")
                .unwrap();
            t.cases.retain(|k| k.name != "global.kcmp");
        }
        assert!(
            !answer(&unparented)[0]
                .items
                .iter()
                .any(|i| i.contains("not run here")),
            "{:?}",
            answer(&unparented)[0].items
        );

        // A crash title the base never showed is new; one it showed too
        // is said as such.
        let mut crashed = default_run();
        let oops = |title: &str| {
            let mut e = crate::schema::Evidence::new(
                crate::schema::EvidenceKind::Splat,
                "Oops at console line 9",
                "",
                None,
            );
            e.crash = Some(Box::new(crate::schema::Crash {
                title: title.into(),
                frames: vec![],
                fingerprint: "0123456789abcdef".into(),
            }));
            e
        };
        for c in crashed.cells.iter_mut().filter(|c| c.arch == "arm64") {
            c.evidence.push(oops("WARNING in rcu_core"));
            if c.variant != "base" {
                c.evidence
                    .push(oops("BUG: kernel NULL pointer dereference in do_sys_poll"));
            }
        }
        let items = &answer(&crashed)[0].items;
        assert!(
            items.contains(
                &"arm64/tiny: new crash: BUG: kernel NULL pointer dereference in do_sys_poll"
                    .to_string()
            ),
            "{items:?}"
        );
        assert!(
            items.contains(&"arm64/tiny: crash also on the base: WARNING in rcu_core".to_string()),
            "{items:?}"
        );

        // No test moved and no change was significant: one line.
        let mut quiet = default_run();
        quiet
            .comparisons
            .retain(|c| !significant(c) && c.verdict != Verdict::TooNoisy);
        let base_tests = quiet.cells[0].tests.clone();
        for c in quiet.cells.iter_mut().filter(|c| c.variant != "base") {
            c.tests = base_tests.clone();
        }
        let said = answer(&quiet);
        assert_eq!(said[0].items, [NOTHING]);

        let mut bare = default_run();
        bare.cells.retain(|c| c.variant == "base");
        assert!(markdown(&bare).contains(NO_SERIES));
    }

    /// Two tools on one round trip that disagree in a series cell are
    /// named last in its items, with both medians and the factor; a pair
    /// that agrees, or a base cell's, is not news of the series.
    #[test]
    fn a_cross_check_that_fails_in_a_series_cell_is_said() {
        let mut run = default_run();
        let check = |cell: &str, a: f64, b: f64, agree: bool| crate::schema::CrossCheck {
            cell: cell.into(),
            a: "perf_bench.seccomp_notify.default".into(),
            b: "seccomp_notify.default.unpinned".into(),
            unit_a: "us".into(),
            unit_b: "us/op".into(),
            median_a: a,
            median_b: b,
            ratio: a / b,
            factor: 2.0,
            agree,
            what: Some("one round trip".into()),
        };
        run.cross_checks = vec![
            check("6.1/seccomp-sync-wakeup/x86_64/tiny", 0.466, 81.9, false),
            check("6.1/seccomp-sync-wakeup/arm64/tiny", 86.1, 83.4, true),
            check("6.1/base/arm64/tiny", 0.5, 90.0, false),
        ];
        let items = &answer(&run)[0].items;
        assert_eq!(
            items.iter().filter(|i| i.contains("perf_bench")).collect::<Vec<_>>(),
            ["x86_64/tiny: perf_bench.seccomp_notify.default 0.466 us is 176x below seccomp_notify.default.unpinned 81.9 us/op, where the two should agree within 2x (one round trip)"]
        );
        let no_cis = || true;
        let md = crate::report::markdown::markdown(
            &run,
            &crate::stats::intervals::MedianCis::new(&no_cis),
        );
        assert!(md.contains("\n## Cross-checks\n\n- 6.1/seccomp-sync-wakeup/x86_64/tiny: **DISAGREE** perf_bench"), "{md}");
        assert!(md.contains("- 6.1/seccomp-sync-wakeup/arm64/tiny: perf_bench.seccomp_notify.default 86.1 us is 1.03x above seccomp_notify.default.unpinned 83.4 us/op, within 2x\n"), "{md}");
    }
}
