//! Expectations: does a cell show what matrix.toml says it should?
//!
//! Pure. By default every test and every case must pass, with no skips; an
//! `[[expect]]` entry overrides that for a test or a single case. Crashes,
//! timeouts and build/apply/config/infra errors are always mismatches.

use crate::plan::glob::name_matches;
use crate::plan::matrix::{Expect, ExpectedOutcome, Known};
use crate::schema::{CellResult, Evidence, EvidenceKind, Outcome};

/// The first evidence of something going wrong; notes about how the cell
/// ran (KVM given up for TCG, an earlier attempt) explain no failure.
fn failure_evidence(cell: &CellResult) -> Option<&Evidence> {
    cell.evidence.iter().find(|e| {
        !matches!(
            e.kind,
            EvidenceKind::Accel | EvidenceKind::Attempt | EvidenceKind::Known
        )
    })
}

fn matches(expected: ExpectedOutcome, got: Outcome) -> bool {
    matches!(
        (expected, got),
        (ExpectedOutcome::Pass, Outcome::Pass)
            | (ExpectedOutcome::Fail, Outcome::Fail)
            | (ExpectedOutcome::Skip, Outcome::Skip)
    )
}

fn name(o: ExpectedOutcome) -> &'static str {
    match o {
        ExpectedOutcome::Pass => "pass",
        ExpectedOutcome::Fail => "fail",
        ExpectedOutcome::Skip => "skip",
    }
}

/// A crashed cell whose splat evidence matches a `[[known]]` entry: the
/// sentence saying so (None: not a known crash).
pub fn known_crash(cell: &CellResult, known: &[&Known]) -> Option<String> {
    if cell.outcome != Outcome::Crash {
        return None;
    }
    known.iter().find_map(|k| {
        let re = regex::Regex::new(&k.splat).ok()?;
        let hit = cell
            .evidence
            .iter()
            .filter(|e| e.kind == EvidenceKind::Splat)
            .find(|e| {
                re.is_match(&e.what)
                    || re.is_match(&e.excerpt)
                    || e.crash.as_ref().is_some_and(|c| re.is_match(&c.title))
            })?;
        Some(format!(
            "known crash (matrix.toml [[known]] `{}`): {}; {}",
            k.splat, k.reason, hit.what
        ))
    })
}

/// Returns (as_expected, mismatches), each mismatch a readable sentence.
/// `own_skips`: the tests (the kernel's own kselftest targets and KUnit
/// suites) whose skips are the test's own word that it cannot run here,
/// as kselftest and kunit_tool count them: as expected unless an
/// `[[expect]]` says otherwise.
pub fn check(cell: &CellResult, expects: &[&Expect], own_skips: &[String]) -> (bool, Vec<String>) {
    let mut out = Vec::new();
    match cell.outcome {
        Outcome::Pass | Outcome::Fail | Outcome::Flaky => {}
        o => {
            let why = failure_evidence(cell).map_or(String::new(), |e| format!(": {}", e.what));
            out.push(format!("{}: cell outcome {o}{why}", cell.id));
            return (false, out);
        }
    }
    for t in &cell.tests {
        let test_expect = expects
            .iter()
            .find(|e| e.test.get_ref() == &t.name && e.case.is_none());
        let mut explained_by_cases = false;
        let skip_is_fine = |o: Outcome, explicit: bool| {
            !explicit && o == Outcome::Skip && own_skips.contains(&t.name)
        };
        for c in &t.cases {
            let e = expects.iter().find(|e| {
                e.test.get_ref() == &t.name
                    && e.case.as_deref().is_some_and(|p| name_matches(p, &c.name))
            });
            let want = e
                .map(|e| e.outcome)
                .or(test_expect.map(|e| e.outcome))
                .unwrap_or(ExpectedOutcome::Pass);
            if skip_is_fine(c.outcome, e.is_some() || test_expect.is_some()) {
                continue;
            }
            if matches(want, c.outcome) {
                explained_by_cases |= c.outcome == Outcome::Fail;
            } else {
                let reason = c
                    .reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(" ({r})"));
                out.push(format!(
                    "{} {}/{}: {}{reason}, expected {}",
                    cell.id,
                    t.name,
                    c.name,
                    c.outcome,
                    name(want)
                ));
            }
        }
        for e in expects.iter().filter(|e| e.test.get_ref() == &t.name) {
            if let Some(case) = &e.case {
                if !e.for_replaced_series && !t.cases.iter().any(|c| name_matches(case, &c.name)) {
                    out.push(format!(
                        "{} {}/{case}: did not run, expected {} ({})",
                        cell.id,
                        t.name,
                        name(e.outcome),
                        e.reason
                    ));
                }
            }
        }
        let want = test_expect.map_or(ExpectedOutcome::Pass, |e| e.outcome);
        // A test that failed only through expected case failures is fine.
        let test_ok = matches(want, t.outcome)
            || skip_is_fine(t.outcome, test_expect.is_some())
            || (t.outcome == Outcome::Fail && explained_by_cases && t.failed_by_cases);
        if !test_ok {
            let reason = t
                .reason
                .as_deref()
                .map_or(String::new(), |r| format!(" ({r})"));
            out.push(format!(
                "{} {}: {}{reason}, expected {}",
                cell.id,
                t.name,
                t.outcome,
                name(want)
            ));
        }
    }
    for e in expects {
        if !cell.tests.iter().any(|t| &t.name == e.test.get_ref()) {
            out.push(format!(
                "{} {}: did not run, expected {}",
                cell.id,
                e.test.get_ref(),
                name(e.outcome)
            ));
        }
    }
    if cell.outcome == Outcome::Fail && out.is_empty() {
        // Failed for a reason outside the tests: a kernel warning, say.
        if let Some(e) = failure_evidence(cell) {
            out.push(format!("{}: {}", cell.id, e.what));
        }
    }
    (out.is_empty(), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::matrix::Matrix;
    use crate::schema::*;

    fn matrix() -> Matrix {
        let text = r#"
[run]
arches = ["x86_64"]
configs = ["c"]
tests = ["t"]
[kernel.k]
source = { debian = "linux-source-6.1" }
[config.c]
base = "tinyconfig"
[test.t]
kind = "kselftest"
dir = "d"
sources = ["t.c"]
[[expect]]
cell = "*/base/*/*"
test = "t"
case = "sync"
outcome = "fail"
reason = "no feature"
"#;
        Matrix::parse("m.toml", text).unwrap()
    }

    fn cell(cases: &[(&str, Outcome)], outcome: Outcome) -> CellResult {
        let failed = cases.iter().filter(|c| c.1 == Outcome::Fail).count();
        CellResult {
            tests: vec![TestResult {
                name: "t".into(),
                outcome: if failed > 0 {
                    Outcome::Fail
                } else {
                    Outcome::Pass
                },
                reason: (failed > 0).then(|| format!("{failed} of {} cases failed", cases.len())),
                duration_s: None,
                cases: cases
                    .iter()
                    .map(|(n, o)| CaseResult {
                        name: n.to_string(),
                        outcome: *o,
                        reason: None,
                    })
                    .collect(),
                failed_by_cases: failed > 0,
            }],
            ..CellResult::blank("k/base/x86_64/c", outcome)
        }
    }

    #[test]
    fn expected_failure_is_as_expected() {
        let m = matrix();
        let e: Vec<&Expect> = m.expect.iter().collect();
        let (ok, mm) = check(
            &cell(
                &[("a", Outcome::Pass), ("sync", Outcome::Fail)],
                Outcome::Fail,
            ),
            &e,
            &[],
        );
        assert!(ok, "{mm:?}");
    }

    /// Seen on a host whose KVM aborts QEMU: the cell fell back to TCG and
    /// failed only its expected case. The fallback note explains nothing
    /// and must not turn into a mismatch; a splat beside it still does.
    #[test]
    fn a_note_about_the_accelerator_is_not_a_failure() {
        let m = matrix();
        let e: Vec<&Expect> = m.expect.iter().collect();
        let mut c = cell(
            &[("a", Outcome::Pass), ("sync", Outcome::Fail)],
            Outcome::Fail,
        );
        let note = |kind, what: &str| Evidence {
            kind,
            what: what.into(),
            excerpt: String::new(),
            path: None,
            crash: None,
        };
        c.evidence.push(note(
            EvidenceKind::Accel,
            "KVM given up: QEMU was killed by signal 6",
        ));
        let (ok, mm) = check(&c, &e, &[]);
        assert!(ok, "{mm:?}");
        c.evidence
            .push(note(EvidenceKind::Splat, "Warning at console line 9"));
        let (ok, mm) = check(&c, &e, &[]);
        assert!(!ok);
        assert_eq!(mm, ["k/base/x86_64/c: Warning at console line 9"]);
        c.outcome = Outcome::Crash;
        assert_eq!(
            check(&c, &e, &[]).1,
            ["k/base/x86_64/c: cell outcome crash: Warning at console line 9"]
        );
    }

    #[test]
    fn unexpected_pass_skip_and_missing_case_are_mismatches() {
        let m = matrix();
        let e: Vec<&Expect> = m.expect.iter().collect();
        let (ok, mm) = check(
            &cell(
                &[("a", Outcome::Pass), ("sync", Outcome::Pass)],
                Outcome::Pass,
            ),
            &e,
            &[],
        );
        assert!(!ok);
        assert_eq!(mm, ["k/base/x86_64/c t/sync: pass, expected fail"]);
        let (_, mm) = check(
            &cell(
                &[("a", Outcome::Skip), ("sync", Outcome::Fail)],
                Outcome::Fail,
            ),
            &e,
            &[],
        );
        assert_eq!(mm, ["k/base/x86_64/c t/a: skip, expected pass"]);
        // The kernel's own tests say skip of themselves: as expected
        // unless an [[expect]] names the case or the test.
        let c = cell(
            &[("a", Outcome::Skip), ("sync", Outcome::Fail)],
            Outcome::Fail,
        );
        let (_, mm) = check(&c, &e, &["t".to_string()]);
        assert!(mm.is_empty(), "{mm:?}");
        let mut whole = cell(&[], Outcome::Pass);
        whole.tests[0].outcome = Outcome::Skip;
        assert!(check(&whole, &[], &["t".to_string()]).0);
        assert!(!check(&whole, &[], &[]).0);
        let (_, mm) = check(&cell(&[("a", Outcome::Pass)], Outcome::Pass), &e, &[]);
        assert_eq!(
            mm,
            ["k/base/x86_64/c t/sync: did not run, expected fail (no feature)"]
        );
        // Written for a series `--series` replaced: a case the new series'
        // tests do not have is no mismatch; one they run is still held.
        let mut m = matrix();
        for e in &mut m.expect {
            e.for_replaced_series = true;
        }
        let e: Vec<&Expect> = m.expect.iter().collect();
        let (ok, mm) = check(&cell(&[("a", Outcome::Pass)], Outcome::Pass), &e, &[]);
        assert!(ok && mm.is_empty(), "{mm:?}");
        let (_, mm) = check(
            &cell(
                &[("a", Outcome::Pass), ("sync", Outcome::Pass)],
                Outcome::Pass,
            ),
            &e,
            &[],
        );
        assert_eq!(mm, ["k/base/x86_64/c t/sync: pass, expected fail"]);
    }

    #[test]
    fn a_test_cut_short_is_not_explained_by_its_expected_case_failure() {
        let m = matrix();
        let e: Vec<&Expect> = m.expect.iter().collect();
        let mut c = cell(
            &[("a", Outcome::Pass), ("sync", Outcome::Fail)],
            Outcome::Fail,
        );
        c.tests[0].failed_by_cases = false;
        c.tests[0].reason = Some("output cut short: 2 of 3 cases reported, last was sync".into());
        let (ok, mm) = check(&c, &e, &[]);
        assert!(!ok);
        assert_eq!(mm, ["k/base/x86_64/c t: fail (output cut short: 2 of 3 cases reported, last was sync), expected pass"]);
    }

    #[test]
    fn crash_is_always_a_mismatch() {
        let (ok, mm) = check(&cell(&[("a", Outcome::Pass)], Outcome::Crash), &[], &[]);
        assert!(!ok);
        assert!(mm[0].contains("cell outcome crash"));
    }

    #[test]
    fn a_known_crash_is_named_and_only_when_its_splat_matches() {
        let known: crate::plan::matrix::Known = toml::from_str(
            "cell = \"6.12/mm-cid-work/*/*\"\nsplat = \"rcu_core|NULL pointer\"\nreason = \"r\"\n",
        )
        .unwrap();
        let mut c = CellResult::blank("6.12/mm-cid-work/x86_64/wide", Outcome::Crash);
        c.evidence.push(Evidence::new(
            EvidenceKind::Splat,
            "Warning at console line 208",
            "WARNING: CPU: 0 PID: 0 at kernel/rcu/tree.c:2636 rcu_core+0x350/0x3b6",
            None,
        ));
        let why = known_crash(&c, &[&known]).expect("known");
        assert!(
            why.contains("known crash") && why.contains("Warning at console line 208"),
            "{why}"
        );
        // Another splat is not this known crash; neither is a pass.
        c.evidence[0].excerpt = "BUG: unable to handle page fault in seccomp_notify_recv".into();
        assert_eq!(known_crash(&c, &[&known]), None);
        let pass = CellResult::blank("6.12/mm-cid-work/x86_64/wide", Outcome::Pass);
        assert_eq!(known_crash(&pass, &[&known]), None);
        // A regex may name a crash title, which neither line nor excerpt
        // holds as such.
        let by_title: crate::plan::matrix::Known = toml::from_str(
            "cell = \"*/*/*/*\"\nsplat = \"^WARNING in rcu_core$\"\nreason = \"r\"\n",
        )
        .unwrap();
        assert_eq!(known_crash(&c, &[&by_title]), None);
        c.evidence[0].crash = Some(Box::new(crate::schema::Crash {
            title: "WARNING in rcu_core".into(),
            frames: vec!["rcu_core".into()],
            fingerprint: "0123456789abcdef".into(),
        }));
        assert!(known_crash(&c, &[&by_title]).is_some());
    }
}
