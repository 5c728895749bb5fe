//! JUnit XML of a run, for CI test-report viewers. Pure: a `Run` in, a
//! `quick_junit::Report` out (the crate writes the XML).
//!
//! One testsuite per cell, one testcase per case (per test when it has no
//! cases). The XML states what happened, not what was expected: a case the
//! matrix expects to fail is still a `<failure>`, typed `expected-fail`
//! when its cell is as expected (every failure in it was expected), so a
//! viewer can tell them apart. A cell that never ran its tests (build,
//! apply, config or infra error) is one `<error>` testcase named after the
//! phase that failed.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use crate::schema::{CellResult, Outcome, Run};

/// The reason and the cell's evidence (what, path, excerpt), for a
/// failure's text.
fn description(reason: Option<&str>, cell: &CellResult) -> String {
    let mut s = reason.unwrap_or_default().to_string();
    for e in &cell.evidence {
        if let Some(c) = &e.crash {
            s += &format!("\n\n{} (fingerprint {})", c.title, c.fingerprint);
        }
        s += &format!("\n\n{}", e.what);
        if let Some(p) = &e.path {
            s += &format!("\nevidence: {}", p.display());
        }
        if !e.excerpt.is_empty() {
            let lines: Vec<&str> = e.excerpt.lines().take(40).collect();
            s += &format!("\n{}", lines.join("\n"));
        }
    }
    if !cell.reproduce.xtask.is_empty() {
        s += &format!("\n\nreproduce: {}", cell.reproduce.xtask);
    }
    s.trim().to_string()
}

fn status(outcome: Outcome, reason: Option<&str>, cell: &CellResult) -> TestCaseStatus {
    let failure = |kind: NonSuccessKind, ty: &str| {
        let mut st = TestCaseStatus::non_success(kind);
        st.set_message(reason.unwrap_or(outcome.as_str()))
            .set_type(ty)
            .set_description(description(reason, cell));
        st
    };
    match outcome {
        Outcome::Pass | Outcome::Flaky => TestCaseStatus::success(),
        Outcome::Skip => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(reason.unwrap_or("skipped"));
            st
        }
        Outcome::Fail if cell.as_expected => failure(NonSuccessKind::Failure, "expected-fail"),
        Outcome::Fail | Outcome::Crash | Outcome::Timeout => {
            failure(NonSuccessKind::Failure, outcome.as_str())
        }
        Outcome::BuildError | Outcome::ApplyError | Outcome::ConfigError | Outcome::InfraError => {
            failure(NonSuccessKind::Error, outcome.as_str())
        }
    }
}

/// Seconds as a Duration; none for a figure no Duration holds (a
/// results.json may say 1e308 s: the time is then left out, never a
/// panic).
fn secs(x: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(x.max(0.0)).ok()
}

fn suite(cell: &CellResult) -> TestSuite {
    let mut s = TestSuite::new(&cell.id);
    s.add_property(Property::new("outcome", cell.outcome.as_str()));
    s.add_property(Property::new("as_expected", cell.as_expected.to_string()));
    s.add_property(Property::new("accel", &cell.accel));
    if !cell.build_key.is_empty() {
        s.add_property(Property::new("build_key", &cell.build_key));
    }
    for m in &cell.mismatches {
        s.add_property(Property::new("mismatch", m));
    }
    if let Some(t) = secs(cell.timings.total_s) {
        s.set_time(t);
    }
    if cell.tests.is_empty() {
        let reason = cell.evidence.first().map(|e| e.what.as_str());
        let mut tc = TestCase::new(cell.outcome.as_str(), status(cell.outcome, reason, cell));
        tc.set_classname(&cell.id);
        s.add_test_case(tc);
        return s;
    }
    for t in &cell.tests {
        let class = format!("{}.{}", cell.id, t.name);
        if t.cases.is_empty() {
            let mut tc = TestCase::new(&t.name, status(t.outcome, t.reason.as_deref(), cell));
            tc.set_classname(&cell.id);
            if let Some(d) = t.duration_s.and_then(secs) {
                tc.set_time(d);
            }
            s.add_test_case(tc);
            continue;
        }
        for c in &t.cases {
            let mut tc = TestCase::new(&c.name, status(c.outcome, c.reason.as_deref(), cell));
            tc.set_classname(&class);
            s.add_test_case(tc);
        }
        // A test can fail beyond its cases (a crash, a cut-off stream):
        // say so, or the suite would look green.
        if t.outcome != Outcome::Pass && !t.failed_by_cases && t.outcome != Outcome::Skip {
            let mut tc = TestCase::new(
                format!("{} (whole test)", t.name),
                status(t.outcome, t.reason.as_deref(), cell),
            );
            tc.set_classname(&class);
            s.add_test_case(tc);
        }
    }
    s
}

pub fn junit(run: &Run) -> Report {
    let mut r = Report::new(format!("kmatrix {}", run.started));
    r.add_test_suites(run.cells.iter().map(suite));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::*;

    #[test]
    fn a_build_error_cell_is_one_error_testcase_with_its_evidence() {
        let mut c = CellResult::blank("6.1/b/x86_64/tiny", Outcome::BuildError);
        c.evidence.push(Evidence::new(
            EvidenceKind::Host,
            "kernel build failed",
            "error: foo.c:1",
            Some("/r/build.log".into()),
        ));
        let run = Run {
            matrix: "m".into(),
            ..Run::fixture(vec![c])
        };
        let xml = junit(&run).to_string().unwrap();
        assert!(
            xml.contains(r#"<testcase name="build-error" classname="6.1/b/x86_64/tiny""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<error message="kernel build failed" type="build-error">"#),
            "{xml}"
        );
        assert!(xml.contains("evidence: /r/build.log"), "{xml}");
    }

    #[test]
    fn a_time_no_duration_holds_is_left_out() {
        assert_eq!(secs(1.5), Some(Duration::from_millis(1500)));
        assert_eq!(secs(-3.0), Some(Duration::ZERO));
        assert_eq!(secs(1e308), None);
        let mut c = CellResult::blank("6.1/b/x86_64/tiny", Outcome::Pass);
        c.timings.total_s = 1e308;
        let run = Run {
            matrix: "m".into(),
            ..Run::fixture(vec![c])
        };
        junit(&run).to_string().unwrap();
    }
}
