//! What makes a step bad: a test or case outcome, new failures against the
//! base, or a metric past a threshold (absolute, or relative to the base),
//! decided with the comparison statistics. Pure: cell results in, a
//! judgement with its reason out.
//!
//! A metric step is judged only when the 95% CI lies entirely on one side
//! of the threshold; a CI that straddles it is `Unclear` (the driver boots
//! more, then skips), never a guess.

use serde::{Deserialize, Serialize};

use crate::schema::{Better, CellResult, Outcome};
use crate::stats::bootstrap::never;
use crate::stats::compare::{self, Pairing};
use crate::stats::intervals::median_ci;
use crate::stats::location::{median, summarize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Predicate {
    /// The test (or one case of it) ends with one of `bad`.
    Outcome {
        test: String,
        case: Option<String>,
        bad: Vec<Outcome>,
    },
    /// A case (or case-less test) that passes on the base does not pass.
    NewFailures,
    /// The metric's median is above (`bad_above`) or below `value`.
    Threshold {
        metric: String,
        value: f64,
        bad_above: bool,
    },
    /// The metric is worse than on the base by more than `pct` percent.
    Regression { metric: String, pct: f64 },
    /// The kernel does not build for `arch` (config or make fails);
    /// nothing is booted.
    Builds { arch: String },
    /// A crash whose title (`analyze::crash`) matches the glob `title`
    /// appears; `test` alone runs, when given.
    Crash { title: String, test: Option<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Good(String),
    Bad(String),
    /// Not judgeable: does not apply/build/boot, or the test did not run.
    Skip(String),
    /// A metric whose CI straddles the threshold: boot more, then skip.
    Unclear(String),
}

impl Predicate {
    /// The arches a step may be judged on: any the matrix builds for a
    /// build (run.build_only's too), the booted ones otherwise.
    pub fn arches(&self, m: &crate::plan::matrix::Matrix) -> Vec<String> {
        match self {
            Predicate::Builds { .. } => m.build_arches(),
            _ => m.run.arches.iter().map(|a| a.get_ref().clone()).collect(),
        }
    }

    /// The config a step is built with: `given` among `configs`, or, for a
    /// build predicate, also a run.build_only config of `arch` (such as
    /// arm64/tiny-clang). A build-only config is taken only when named: the
    /// default is the one of `configs`.
    pub fn pick_config(
        &self,
        m: &crate::plan::matrix::Matrix,
        arch: &str,
        given: Option<&str>,
        configs: Vec<String>,
    ) -> anyhow::Result<String> {
        let mut known = configs;
        if let (Predicate::Builds { .. }, Some(_)) = (self, given) {
            for (a, c) in m.build_only() {
                if a.name() == arch && !known.contains(&c) {
                    known.push(c);
                }
            }
        }
        crate::plan::variants::pick_one("config", given, known)
    }

    /// The tests a step must run to be judged (None: all of the matrix's).
    pub fn tests(&self) -> Option<Vec<String>> {
        match self {
            Predicate::Outcome { test, .. } => Some(vec![test.clone()]),
            Predicate::NewFailures => None,
            Predicate::Crash { test, .. } => test.clone().map(|t| vec![t]),
            Predicate::Builds { .. } => Some(vec![]),
            Predicate::Threshold { metric, .. } | Predicate::Regression { metric, .. } => {
                Some(vec![metric.split('.').next().unwrap_or(metric).to_string()])
            }
        }
    }

    /// Needs the base's result to judge a step.
    pub fn needs_base(&self) -> bool {
        matches!(self, Predicate::NewFailures | Predicate::Regression { .. })
    }

    pub fn describe(&self, better: Better) -> String {
        let _ = better;
        match self {
            Predicate::Outcome { test, case, bad } => format!(
                "{}{} is {}",
                test,
                case.as_ref()
                    .map(|c| format!(" case {c}"))
                    .unwrap_or_default(),
                bad.iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Predicate::NewFailures => "a test or case that passes on the base does not".into(),
            Predicate::Threshold {
                metric,
                value,
                bad_above,
            } => {
                let side = if *bad_above { "above" } else { "below" };
                format!("median of {metric} is {side} {value} (95% CI)")
            }
            Predicate::Regression { metric, pct } => {
                format!("{metric} is worse than on the base by more than {pct}% (95% CI)")
            }
            Predicate::Builds { arch } => format!("the kernel does not build for {arch}"),
            Predicate::Crash { title, .. } => format!("a crash titled `{title}` appears"),
        }
    }
}

/// A cell that did not get as far as running its tests cannot be judged.
pub fn not_judgeable(step: &CellResult) -> Option<String> {
    matches!(
        step.outcome,
        Outcome::ApplyError | Outcome::BuildError | Outcome::ConfigError | Outcome::InfraError
    )
    .then(|| {
        let ev = step
            .evidence
            .first()
            .map(|e| format!(": {} {}", e.what, first_lines(&e.excerpt, 3)))
            .unwrap_or_default();
        format!("{}{ev}", step.outcome)
    })
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join(" | ")
}

pub fn judge(
    p: &Predicate,
    step: &CellResult,
    base: Option<&CellResult>,
    better: Better,
    min_effect_pct: f64,
) -> Verdict {
    if let Predicate::Builds { arch } = p {
        return judge_build(step, arch);
    }
    if let Some(why) = not_judgeable(step) {
        return Verdict::Skip(why);
    }
    match p {
        Predicate::Builds { arch } => judge_build(step, arch),
        Predicate::Outcome { test, case, bad } => judge_outcome(step, test, case.as_deref(), bad),
        Predicate::Crash { title, .. } => judge_crash(step, title),
        Predicate::NewFailures => match base {
            Some(base) => judge_new_failures(step, base),
            None => Verdict::Skip("no base result to compare with".into()),
        },
        Predicate::Threshold {
            metric,
            value,
            bad_above,
        } => judge_threshold(step, metric, *value, *bad_above),
        Predicate::Regression { metric, pct } => match base {
            Some(base) => judge_regression(step, base, metric, *pct, better, min_effect_pct),
            None => Verdict::Skip("no base result to compare with".into()),
        },
    }
}

/// A build step: bad when its config or make failed (with the first lines
/// of the error), good when it built; a patch that does not apply, or the
/// harness failing, cannot be judged.
fn judge_build(step: &CellResult, arch: &str) -> Verdict {
    // The error's own line when the excerpt has one (its context lines
    // come first), else the excerpt's start.
    let why = || {
        step.evidence
            .first()
            .map(|e| {
                let line = crate::build::kbuild::first_error(&e.excerpt);
                let said = if line.is_empty() {
                    first_lines(&e.excerpt, 3)
                } else {
                    line
                };
                format!(": {} {said}", e.what)
            })
            .unwrap_or_default()
    };
    match step.outcome {
        Outcome::BuildError | Outcome::ConfigError => {
            Verdict::Bad(format!("{} for {arch}{}", step.outcome, why()))
        }
        Outcome::ApplyError | Outcome::InfraError => {
            Verdict::Skip(format!("{}{}", step.outcome, why()))
        }
        _ => Verdict::Good(format!("builds for {arch}")),
    }
}

/// Bad when a crash of the step has a title `glob` matches; the others
/// are named, not taken for it.
fn judge_crash(step: &CellResult, glob: &str) -> Verdict {
    let mut titles: Vec<&str> = Vec::new();
    for c in step.evidence.iter().filter_map(|e| e.crash.as_ref()) {
        if !titles.contains(&c.title.as_str()) {
            titles.push(&c.title);
        }
    }
    if let Some(t) = titles
        .iter()
        .find(|t| crate::plan::glob::name_matches(glob, t))
    {
        return Verdict::Bad(format!("crash: {t}"));
    }
    match titles.is_empty() {
        true => Verdict::Good(format!("no crash ({})", step.outcome)),
        false => Verdict::Good(format!(
            "no crash titled `{glob}`; other crashes: {}",
            titles.join("; ")
        )),
    }
}

/// The test's (or its case's) outcome is one of `bad`.
fn judge_outcome(step: &CellResult, test: &str, case: Option<&str>, bad: &[Outcome]) -> Verdict {
    let Some(t) = step.tests.iter().find(|t| t.name == test) else {
        // The kernel died before the test reported.
        return if bad.contains(&step.outcome) {
            Verdict::Bad(format!("cell {} before {test} reported", step.outcome))
        } else {
            Verdict::Skip(format!("{test} did not run (cell {})", step.outcome))
        };
    };
    let (what, outcome, reason) = match case {
        None => (test.to_string(), t.outcome, t.reason.clone()),
        Some(c) => match t.cases.iter().find(|x| x.name == c) {
            Some(x) => (format!("{test} {c}"), x.outcome, x.reason.clone()),
            None if bad.contains(&t.outcome) && t.outcome != Outcome::Fail => {
                // The test crashed or timed out before the case.
                (format!("{test} (before {c})"), t.outcome, t.reason.clone())
            }
            None => {
                return Verdict::Skip(format!(
                    "{test} ran ({}) but has no case {c}{}",
                    t.outcome,
                    nearest_cases(t, c)
                ))
            }
        },
    };
    let why = format!(
        "{what}: {outcome}{}",
        reason
            .map(|r| format!(" ({})", first_lines(&r, 3)))
            .unwrap_or_default()
    );
    if bad.contains(&outcome) {
        Verdict::Bad(why)
    } else {
        Verdict::Good(why)
    }
}

/// What a misspelt `--case` may have meant: how many cases the test ran
/// and the three names nearest `c`.
fn nearest_cases(t: &crate::schema::TestResult, c: &str) -> String {
    if t.cases.is_empty() {
        return " (it reports no cases: judge the test as a whole, without --case)".into();
    }
    let mut by: Vec<(f64, &str)> = t
        .cases
        .iter()
        .map(|x| (strsim::jaro_winkler(c, &x.name), x.name.as_str()))
        .collect();
    by.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let near: Vec<&str> = by.iter().take(3).map(|(_, n)| *n).collect();
    format!(
        " (it ran {} cases; the nearest: {})",
        t.cases.len(),
        near.join(", ")
    )
}

/// Every case (or case-less test) that passes on the base passes here.
fn judge_new_failures(step: &CellResult, base: &CellResult) -> Verdict {
    let mut newly = vec![];
    let mut checked = 0;
    for bt in &base.tests {
        let st = step.tests.iter().find(|t| t.name == bt.name);
        if bt.cases.is_empty() {
            if bt.outcome == Outcome::Pass {
                checked += 1;
                match st {
                    Some(t) if t.outcome == Outcome::Pass => {}
                    Some(t) => newly.push(format!("{}: {}", t.name, t.outcome)),
                    None => newly.push(format!("{}: did not run", bt.name)),
                }
            }
            continue;
        }
        for bc in bt.cases.iter().filter(|c| c.outcome == Outcome::Pass) {
            checked += 1;
            let sc = st.and_then(|t| t.cases.iter().find(|c| c.name == bc.name));
            match sc {
                Some(c) if c.outcome == Outcome::Pass => {}
                Some(c) => newly.push(format!(
                    "{} {}: {}{}",
                    bt.name,
                    c.name,
                    c.outcome,
                    c.reason
                        .as_ref()
                        .map(|r| format!(" ({})", first_lines(r, 2)))
                        .unwrap_or_default()
                )),
                None => newly.push(format!("{} {}: did not run", bt.name, bc.name)),
            }
        }
    }
    if newly.is_empty() {
        Verdict::Good(format!("all {checked} passing on the base pass"))
    } else {
        Verdict::Bad(format!(
            "{} of {checked} passing on the base do not: {}",
            newly.len(),
            newly.join("; ")
        ))
    }
}

/// The metric's median CI lies past `value` (bad), within it (good), or
/// straddles it (unclear).
fn judge_threshold(step: &CellResult, metric: &str, value: f64, bad_above: bool) -> Verdict {
    let m = match metric_of(step, metric) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let boots = m.by_boot();
    let med = median(&m.samples);
    let ci = summarize(&m.samples).and_then(|s| median_ci(m, &s));
    let Some((lo, hi)) = ci else {
        return Verdict::Unclear(format!(
            "{metric}: {} samples are too few for a CI",
            m.samples.len()
        ));
    };
    let desc = format!(
        "{metric} median {med:.3} {} [{lo:.3}, {hi:.3}] over {} boots, threshold {value}",
        m.unit,
        boots.len()
    );
    let (past, within) = if bad_above {
        (lo > value, hi <= value)
    } else {
        (hi < value, lo >= value)
    };
    if past {
        Verdict::Bad(desc)
    } else if within {
        Verdict::Good(desc)
    } else {
        Verdict::Unclear(desc)
    }
}

/// The CI of the change against the base lies past `pct` percent worse
/// (bad), below it (good), or straddles it (unclear).
fn judge_regression(
    step: &CellResult,
    base: &CellResult,
    metric: &str,
    pct: f64,
    better: Better,
    min_effect_pct: f64,
) -> Verdict {
    let bm = match metric_of(base, metric) {
        Ok(m) => m,
        Err(v) => return Verdict::Skip(format!("on the base: {}", describe(&v))),
    };
    let sm = match metric_of(step, metric) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let (bb, sb) = (bm.by_boot(), sm.by_boot());
    // Bisect judges medians, as its threshold predicate does, whatever
    // quantile the matrix's comparisons use.
    let judged = compare::judge(
        &bb,
        &sb,
        Pairing::None,
        better,
        min_effect_pct,
        0.5,
        compare::ALPHA,
        &never,
    );
    let Some(compare::Judged { ci, p, reason, .. }) = judged else {
        return Verdict::Unclear(format!("{metric}: too few samples to compare"));
    };
    if let Some(why) = reason {
        return Verdict::Unclear(format!("{metric}: cannot compare: {why}"));
    }
    // Percent worse: positive is a regression whichever way is better.
    let (w, wlo, whi) = match better {
        Better::Lower => (ci.pct_change, ci.lo, ci.hi),
        Better::Higher => (-ci.pct_change, -ci.hi, -ci.lo),
    };
    let desc = format!(
        "{metric}: {:.3} -> {:.3} {} ({w:+.1}% worse [{wlo:+.1}, {whi:+.1}], p={p:.2e}; threshold +{pct}%)",
        median(&bm.samples),
        median(&sm.samples),
        sm.unit,
    );
    if wlo > pct {
        Verdict::Bad(desc)
    } else if whi < pct {
        Verdict::Good(desc)
    } else {
        Verdict::Unclear(desc)
    }
}

fn describe(v: &Verdict) -> String {
    match v {
        Verdict::Good(s) | Verdict::Bad(s) | Verdict::Skip(s) | Verdict::Unclear(s) => s.clone(),
    }
}

fn metric_of<'a>(c: &'a CellResult, name: &str) -> Result<&'a crate::schema::Metric, Verdict> {
    match c.metrics.iter().find(|m| m.name == name) {
        Some(m) if m.skip.is_some() => Err(Verdict::Skip(format!(
            "{name} skipped: {}",
            m.skip.as_deref().unwrap_or_default()
        ))),
        Some(m) if m.samples.is_empty() => Err(Verdict::Skip(format!("{name}: no samples"))),
        Some(m) => Ok(m),
        None => Err(Verdict::Skip(format!(
            "{name} not reported (cell {}; metrics: {})",
            c.outcome,
            c.metrics
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{CaseResult, EvidenceKind, Metric, Run, TestResult};

    /// The real default-matrix run: base and series cells of 6.1 x86_64.
    fn real() -> (CellResult, CellResult) {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/results-default-matrix.json"
        ))
        .unwrap();
        let run: Run = serde_json::from_str(&text).unwrap();
        let get = |id: &str| run.cells.iter().find(|c| c.id == id).unwrap().clone();
        (
            get("6.1/base/x86_64/tiny"),
            get("6.1/seccomp-sync-wakeup/x86_64/tiny"),
        )
    }

    fn case_pred(case: &str) -> Predicate {
        Predicate::Outcome {
            test: "seccomp_bpf".into(),
            case: Some(case.into()),
            bad: vec![Outcome::Fail],
        }
    }

    #[test]
    fn a_case_outcome_judges_base_bad_and_series_good() {
        let (base, series) = real();
        let p = case_pred("global.user_notification_sync");
        let j = |c: &CellResult| judge(&p, c, None, Better::Lower, 5.0);
        assert!(
            matches!(j(&base), Verdict::Bad(ref s) if s.contains("fail")),
            "{:?}",
            j(&base)
        );
        assert!(matches!(j(&series), Verdict::Good(ref s) if s.contains("pass")));
        // A case the test does not have cannot be judged.
        let q = case_pred("global.no_such_case");
        assert!(matches!(
            judge(&q, &series, None, Better::Lower, 5.0),
            Verdict::Skip(_)
        ));
        // A misspelt one is named with the nearest the test has.
        let q = case_pred("global.user_notification_snyc");
        let Verdict::Skip(why) = judge(&q, &series, None, Better::Lower, 5.0) else {
            panic!("judged")
        };
        let n = series
            .tests
            .iter()
            .find(|t| t.name == "seccomp_bpf")
            .unwrap()
            .cases
            .len();
        assert!(n > 50, "{n}");
        assert!(
            why.starts_with(&format!(
                "seccomp_bpf ran (pass) but has no case global.user_notification_snyc (it ran {n} cases; the nearest: global.user_notification_sync, "
            )),
            "{why}"
        );
    }

    /// A build predicate: a build or config error is bad, with its
    /// evidence; a patch that does not apply is a skip; a kernel that
    /// built is good whatever its tests did (they did not run).
    /// A step is bad for a crash of the title asked for, on a real
    /// console (the planted NULL dereference in prctl); another crash is
    /// named, not taken for it; a step that did not build is no verdict.
    #[test]
    fn a_crash_step_is_bad_only_for_the_title_asked_for() {
        let console = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/console-x86_64-recursive-fault.log"
        ))
        .unwrap();
        let mut step = CellResult::blank("6.1/crash-culprit@2/x86_64/tiny", Outcome::Crash);
        for s in crate::analyze::console::scan(&console) {
            let mut e = crate::schema::Evidence::new(EvidenceKind::Splat, "splat", "", None);
            e.crash = Some(Box::new(crate::analyze::crash::report(&s)));
            step.evidence.push(e);
        }
        let p = |glob: &str| Predicate::Crash {
            title: glob.into(),
            test: Some("deadtask".into()),
        };
        assert_eq!(p("x").tests(), Some(vec!["deadtask".to_string()]));
        let judge = |glob: &str, s: &CellResult| judge(&p(glob), s, None, Better::Lower, 5.0);
        assert_eq!(
            judge("BUG: kernel NULL pointer dereference in *", &step),
            Verdict::Bad("crash: BUG: kernel NULL pointer dereference in __x64_sys_prctl".into())
        );
        assert_eq!(
            judge("WARNING in *", &step),
            Verdict::Good("no crash titled `WARNING in *`; other crashes: BUG: kernel NULL pointer dereference in __x64_sys_prctl".into())
        );
        let clean = CellResult::blank("6.1/base/x86_64/tiny", Outcome::Pass);
        assert_eq!(judge("*", &clean), Verdict::Good("no crash (pass)".into()));
        let unbuilt = CellResult::blank("6.1/crash-culprit@2/x86_64/tiny", Outcome::BuildError);
        assert!(matches!(judge("*", &unbuilt), Verdict::Skip(_)));
    }

    #[test]
    fn a_build_step_is_bad_only_when_the_build_fails() {
        let (base, _) = real();
        let p = Predicate::Builds {
            arch: "arm64".into(),
        };
        let j = |c: &CellResult| judge(&p, c, None, Better::Lower, 5.0);
        assert_eq!(j(&base), Verdict::Good("builds for arm64".into()));
        let mut broken = base.clone();
        broken.outcome = Outcome::BuildError;
        broken.evidence = vec![crate::schema::Evidence::new(
            crate::schema::EvidenceKind::Host,
            "make failed",
            "kernel/seccomp.c:12:2: error: #error \"planted\"\nmake[3]: *** Error 1",
            None,
        )];
        assert_eq!(
            j(&broken),
            Verdict::Bad(
                "build-error for arm64: make failed kernel/seccomp.c:12:2: error: #error \"planted\""
                    .into()
            )
        );
        broken.outcome = Outcome::ApplyError;
        assert!(matches!(j(&broken), Verdict::Skip(ref s) if s.starts_with("apply-error")));
        assert_eq!(p.tests(), Some(vec![]));
        assert!(!p.needs_base());
    }

    /// `--builds arm64 --config tiny-clang` takes the default matrix's
    /// build-only config; it is never the default, and another arch's
    /// build-only config or a test predicate does not get it.
    #[test]
    fn a_build_step_may_name_a_build_only_config_of_its_arch() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let m = crate::plan::matrix::Matrix::parse("matrix.toml", &text).unwrap();
        let configs = || vec!["tiny".to_string()];
        let arm = Predicate::Builds {
            arch: "arm64".into(),
        };
        let pick = |p: &Predicate, arch: &str, given: Option<&str>| {
            p.pick_config(&m, arch, given, configs())
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            pick(&arm, "arm64", Some("tiny-clang")),
            Ok("tiny-clang".into())
        );
        assert_eq!(pick(&arm, "arm64", None), Ok("tiny".into()));
        let i386 = Predicate::Builds {
            arch: "i386".into(),
        };
        let e = pick(&i386, "i386", Some("tiny-clang")).unwrap_err();
        assert!(e.contains("tiny-clang"), "{e}");
        let e = pick(
            &case_pred("global.user_notification_sync"),
            "arm64",
            Some("tiny-clang"),
        )
        .unwrap_err();
        assert!(e.contains("tiny-clang"), "{e}");
    }

    #[test]
    fn build_errors_and_missing_tests_are_skips() {
        let (_, mut series) = real();
        let p = case_pred("global.user_notification_sync");
        let mut broken = series.clone();
        broken.outcome = Outcome::BuildError;
        assert!(
            matches!(judge(&p, &broken, None, Better::Lower, 5.0), Verdict::Skip(ref s) if s.starts_with("build-error"))
        );
        series.tests.clear();
        series.outcome = Outcome::Crash;
        assert!(matches!(
            judge(&p, &series, None, Better::Lower, 5.0),
            Verdict::Skip(_)
        ));
        // ... unless a crash is what the bisect looks for.
        let crash = Predicate::Outcome {
            test: "seccomp_bpf".into(),
            case: None,
            bad: vec![Outcome::Crash],
        };
        assert!(matches!(
            judge(&crash, &series, None, Better::Lower, 5.0),
            Verdict::Bad(_)
        ));
    }

    #[test]
    fn new_failures_are_cases_that_passed_on_the_base() {
        let (base, series) = real();
        let p = Predicate::NewFailures;
        // The series passes everything the base passes.
        assert!(matches!(
            judge(&p, &series, Some(&base), Better::Lower, 5.0),
            Verdict::Good(_)
        ));
        // The base fails user_notification_sync, which passes on the
        // series: seen from the series, the base has a new failure.
        match judge(&p, &base, Some(&series), Better::Lower, 5.0) {
            Verdict::Bad(s) => assert!(s.contains("global.user_notification_sync"), "{s}"),
            v => panic!("{v:?}"),
        }
    }

    fn shifted(c: &CellResult, metric: &str, factor: f64) -> CellResult {
        let mut c = c.clone();
        for m in c.metrics.iter_mut().filter(|m| m.name == metric) {
            m.samples.iter_mut().for_each(|x| *x *= factor);
        }
        c
    }

    #[test]
    fn a_metric_regression_is_judged_by_its_ci_against_the_threshold() {
        let (base, _) = real();
        let metric = "seccomp_notify.default.same-cpu";
        let p = Predicate::Regression {
            metric: metric.into(),
            pct: 20.0,
        };
        let j = |c: &CellResult| judge(&p, c, Some(&base), Better::Lower, 5.0);
        // The same samples: no change, well inside the threshold.
        assert!(matches!(j(&base), Verdict::Good(_)), "{:?}", j(&base));
        // Twice as slow: bad.
        assert!(matches!(j(&shifted(&base, metric, 2.0)), Verdict::Bad(_)));
        // Exactly at the threshold: the CI straddles it.
        assert!(
            matches!(j(&shifted(&base, metric, 1.2)), Verdict::Unclear(_)),
            "{:?}",
            j(&shifted(&base, metric, 1.2))
        );
        // Faster is never a regression.
        assert!(matches!(j(&shifted(&base, metric, 0.5)), Verdict::Good(_)));
    }

    #[test]
    fn an_absolute_threshold_uses_the_median_ci() {
        let (base, _) = real();
        let metric = "seccomp_notify.default.same-cpu";
        let med = median(
            &base
                .metrics
                .iter()
                .find(|m| m.name == metric)
                .unwrap()
                .samples,
        );
        let p = |value: f64, bad_above: bool| Predicate::Threshold {
            metric: metric.into(),
            value,
            bad_above,
        };
        let j = |v: f64, above: bool| judge(&p(v, above), &base, None, Better::Lower, 5.0);
        assert!(matches!(j(med * 0.5, true), Verdict::Bad(_)));
        assert!(matches!(j(med * 2.0, true), Verdict::Good(_)));
        assert!(matches!(j(med, true), Verdict::Unclear(_)));
        // --below flips the side.
        assert!(matches!(j(med * 2.0, false), Verdict::Bad(_)));
        assert!(matches!(j(med * 0.5, false), Verdict::Good(_)));
    }

    #[test]
    fn a_skipped_metric_is_a_skip_not_a_verdict() {
        let mut c = CellResult::blank("k/v/x86_64/tiny", Outcome::Pass);
        c.metrics.push(
            serde_json::from_str::<Metric>(
                r#"{"name":"m.x","unit":"us","samples":[],"skip":"needs the series"}"#,
            )
            .unwrap(),
        );
        c.tests.push(TestResult {
            name: "m".into(),
            outcome: Outcome::Pass,
            reason: None,
            duration_s: None,
            cases: vec![CaseResult {
                name: "c".into(),
                outcome: Outcome::Pass,
                reason: None,
            }],
            failed_by_cases: false,
        });
        let p = Predicate::Threshold {
            metric: "m.x".into(),
            value: 1.0,
            bad_above: true,
        };
        assert!(
            matches!(judge(&p, &c, None, Better::Lower, 5.0), Verdict::Skip(ref s) if s.contains("needs the series"))
        );
    }
}
