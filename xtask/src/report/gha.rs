//! GitHub Actions workflow commands for a run: a collapsible group per cell
//! not as expected (its mismatches and evidence) and an `::error::` that
//! the run page lists; a `::warning::` per regressed comparison and per
//! comparison that could not be made (`cannot-compare`). Pure: a
//! `Run` in, the lines out (the caller prints them when GITHUB_ACTIONS is
//! `true`).

use crate::schema::{Run, Verdict};

/// A workflow command's message: `%`, CR and LF escaped.
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

pub fn annotations(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for c in run.cells.iter().filter(|c| !c.as_expected) {
        out.push(format!(
            "::group::{} ({}): not as expected",
            c.id, c.outcome
        ));
        for m in &c.mismatches {
            out.push(m.clone());
        }
        for e in &c.evidence {
            let path = e
                .path
                .as_ref()
                .map_or(String::new(), |p| format!(" ({})", p.display()));
            out.push(format!("{}{path}", e.what));
            out.extend(e.excerpt.lines().take(40).map(str::to_string));
        }
        if !c.reproduce.xtask.is_empty() {
            out.push(format!("reproduce: {}", c.reproduce.xtask));
        }
        out.push("::endgroup::".into());
        let what = c
            .mismatches
            .first()
            .cloned()
            .unwrap_or_else(|| format!("{} is {}", c.id, c.outcome));
        out.push(format!(
            "::error title={}::{}",
            property(&format!("kmatrix {} {}", c.id, c.outcome)),
            data(&what)
        ));
    }
    for c in run
        .comparisons
        .iter()
        .filter(|c| c.verdict == Verdict::Regressed)
    {
        out.push(format!(
            "::warning title={}::{} {} vs {} {}: {:+.1}% [{:+.1}%, {:+.1}%], p={:.4}",
            property(&format!("kmatrix regression {}", c.new_metric)),
            data(&c.new_cell),
            data(&c.new_metric),
            data(&c.base_cell),
            data(&c.base_metric),
            c.pct_change,
            c.ci95_lo,
            c.ci95_hi,
            c.p_value
        ));
    }
    // A comparison the statistics could not make is worth a look too.
    for c in run
        .comparisons
        .iter()
        .filter(|c| c.verdict == Verdict::CannotCompare)
    {
        out.push(format!(
            "::warning title={}::{} {} vs {} {}: {}",
            property(&format!("kmatrix cannot compare {}", c.new_metric)),
            data(&c.new_cell),
            data(&c.new_metric),
            data(&c.base_cell),
            data(&c.base_metric),
            data(&super::verdict_words(c))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::*;

    #[test]
    fn a_cell_not_as_expected_is_a_group_and_an_escaped_error() {
        let mut c = CellResult::blank("6.1/s/x86_64/tiny", Outcome::Crash);
        c.mismatches
            .push("6.1/s/x86_64/tiny: crash, 100% bad\nsecond line".into());
        let ok = CellResult {
            as_expected: true,
            ..CellResult::blank("6.1/base/x86_64/tiny", Outcome::Pass)
        };
        let run = Run {
            matrix: "m".into(),
            ..Run::fixture(vec![ok, c])
        };
        let lines = annotations(&run);
        assert_eq!(
            lines[0],
            "::group::6.1/s/x86_64/tiny (crash): not as expected"
        );
        assert_eq!(lines.iter().filter(|l| *l == "::endgroup::").count(), 1);
        assert_eq!(
            lines.last().unwrap(),
            "::error title=kmatrix 6.1/s/x86_64/tiny crash::6.1/s/x86_64/tiny: crash, 100%25 bad%0Asecond line"
        );
    }

    #[test]
    fn a_comparison_that_cannot_be_made_is_a_warning_with_its_reason() {
        let c = Comparison {
            verdict: Verdict::CannotCompare,
            reason: Some("boot 2 of the base has no samples".into()),
            ..crate::stats::compare::aa_fixture::sample_comparison()
        };
        let run = Run {
            matrix: "m".into(),
            comparisons: vec![c],
            ..Run::fixture(vec![])
        };
        assert_eq!(
            annotations(&run),
            ["::warning title=kmatrix cannot compare seccomp_notify.default.cross-cpu::6.1/base~aa/x86_64/tiny seccomp_notify.default.cross-cpu vs 6.1/base/x86_64/tiny seccomp_notify.default.cross-cpu: cannot compare: boot 2 of the base has no samples"]
        );
    }
}
