//! TAP / KTAP parsing of kselftest output, case by case.
//!
//! Pure: text in, cases out. Handles SKIP and XFAIL directives, diagnostic
//! lines as failure reasons, nested (indented) subtests, `Bail out!`, and a
//! stream cut short of its plan.

use crate::schema::{CaseResult, Outcome};

#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub cases: Vec<CaseResult>,
    /// Number of cases the plan line announced, if there was one.
    pub planned: Option<usize>,
    /// Set when the stream ended before the plan was fulfilled, or bailed out.
    pub incomplete: Option<String>,
    /// The `# Totals:` line of the kselftest harness, when present.
    pub totals: Option<String>,
}

#[cfg(test)]
impl Parsed {
    pub fn count(&self, o: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == o).count()
    }
}

fn strip_indent(line: &str) -> (usize, &str) {
    let trimmed = line.trim_start_matches([' ', '\t']);
    (line.len() - trimmed.len(), trimmed)
}

/// Parses `ok 3 name # SKIP why` / `not ok 4 name`. Returns (ok, name, directive).
fn parse_result(line: &str) -> Option<(bool, String, Option<String>)> {
    let (ok, rest) = if let Some(r) = line.strip_prefix("not ok ") {
        (false, r)
    } else if let Some(r) = line.strip_prefix("ok ") {
        (true, r)
    } else {
        return None;
    };
    // The number is optional in TAP; kselftest always prints it.
    let rest = rest.trim_start();
    let rest = match rest.split_once(' ') {
        Some((num, tail)) if num.chars().all(|c| c.is_ascii_digit()) => tail,
        None if rest.chars().all(|c| c.is_ascii_digit()) => "",
        _ => rest,
    };
    let (name, directive) = match rest.split_once(" # ") {
        Some((n, d)) => (n, Some(d.trim().to_string())),
        None => match rest.strip_prefix("# ") {
            Some(d) => ("", Some(d.trim().to_string())),
            None => (rest, None),
        },
    };
    Some((
        ok,
        name.trim().trim_start_matches("- ").to_string(),
        directive,
    ))
}

pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed {
        cases: vec![],
        planned: None,
        incomplete: None,
        totals: None,
    };
    // The indentation of the outermost plan/results; deeper lines are subtests.
    let mut level: Option<usize> = None;
    let mut diag: Vec<String> = Vec::new();
    for raw in text.lines() {
        let raw = raw.trim_end_matches('\r');
        let (indent, line) = strip_indent(raw);
        if line.starts_with("TAP version") || line.starts_with("KTAP version") {
            level.get_or_insert(indent);
            continue;
        }
        if let Some(plan) = line.strip_prefix("1..") {
            if level.is_none() || level == Some(indent) {
                level = Some(indent);
                out.planned = plan.split_whitespace().next().and_then(|n| n.parse().ok());
            }
            continue;
        }
        if let Some(why) = line.strip_prefix("Bail out!") {
            out.incomplete = Some(format!("bailed out:{why}"));
            break;
        }
        if let Some(d) = line.strip_prefix('#') {
            let d = d.trim();
            if d.starts_with("Totals:") {
                out.totals = Some(d.to_string());
            } else if !d.is_empty() && !d.starts_with("RUN ") && !d.starts_with("OK ") {
                diag.push(d.to_string());
            }
            continue;
        }
        if let Some((ok, name, directive)) = parse_result(line) {
            if level.is_some_and(|l| indent > l) {
                continue; // a subtest; its parent's line carries the verdict
            }
            level.get_or_insert(indent);
            let upper = directive.as_deref().map(str::to_ascii_uppercase);
            let (outcome, reason) = match (ok, upper.as_deref()) {
                (_, Some(d)) if d.starts_with("SKIP") => {
                    (Outcome::Skip, directive.map(|d| d[4..].trim().to_string()))
                }
                (true, Some(d)) if d.starts_with("XFAIL") => (Outcome::Pass, directive),
                (true, _) => (Outcome::Pass, None),
                (false, _) => {
                    let why = directive.or_else(|| last_lines(&diag, 3));
                    (Outcome::Fail, why)
                }
            };
            // A SKIP directive with no text: use what the test printed.
            let reason = match (outcome, reason) {
                (Outcome::Skip, Some(r)) if r.is_empty() => last_lines(&diag, 1),
                (_, r) => r,
            };
            out.cases.push(CaseResult {
                name,
                outcome,
                reason,
            });
            diag.clear();
        }
    }
    if out.incomplete.is_none() {
        if let Some(n) = out.planned {
            if out.cases.len() < n {
                let last = out
                    .cases
                    .last()
                    .map_or("the start".to_string(), |c| c.name.clone());
                out.incomplete = Some(format!(
                    "output cut short: {} of {n} cases reported, last was {last}",
                    out.cases.len()
                ));
            }
        } else if out.cases.is_empty() {
            out.incomplete = Some("no TAP output".to_string());
        }
    }
    out
}

fn last_lines(diag: &[String], n: usize) -> Option<String> {
    (!diag.is_empty()).then(|| diag[diag.len().saturating_sub(n)..].join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn result_lines() {
        assert_eq!(
            parse_result("ok 1 global.kcmp"),
            Some((true, "global.kcmp".into(), None))
        );
        assert_eq!(
            parse_result("not ok 52 global.user_notification_sync"),
            Some((false, "global.user_notification_sync".into(), None))
        );
        assert_eq!(
            parse_result("ok 7 TRAP.dfl # SKIP no kcmp"),
            Some((true, "TRAP.dfl".into(), Some("SKIP no kcmp".into())))
        );
        assert_eq!(parse_result("ok 2 - foo"), Some((true, "foo".into(), None)));
        assert_eq!(parse_result("okay"), None);
    }

    #[test]
    fn skip_xfail_fail_reasons() {
        let p = parse(
            "TAP version 13\n1..4\n# RUN a\nok 1 a\n# no kcmp available\nok 2 b # SKIP\nok 3 c # XFAIL known\n# t.c:12:d:Expected 0 == -1\n# d: Test terminated by assertion\nnot ok 4 d\n",
        );
        assert_eq!(p.planned, Some(4));
        assert_eq!(p.incomplete, None);
        let o: Vec<_> = p
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.outcome))
            .collect();
        assert_eq!(
            o,
            [
                ("a", Outcome::Pass),
                ("b", Outcome::Skip),
                ("c", Outcome::Pass),
                ("d", Outcome::Fail)
            ]
        );
        assert_eq!(p.cases[1].reason.as_deref(), Some("no kcmp available"));
        assert_eq!(
            p.cases[3].reason.as_deref(),
            Some("t.c:12:d:Expected 0 == -1 | d: Test terminated by assertion")
        );
    }

    #[test]
    fn cut_short_and_bail_out() {
        let p = parse("TAP version 13\n1..3\nok 1 a\n");
        assert_eq!(
            p.incomplete.as_deref(),
            Some("output cut short: 1 of 3 cases reported, last was a")
        );
        let p = parse("TAP version 13\n1..3\nok 1 a\nBail out! no memory\nok 2 b\n");
        assert_eq!(p.cases.len(), 1);
        assert_eq!(p.incomplete.as_deref(), Some("bailed out: no memory"));
        assert_eq!(parse("").incomplete.as_deref(), Some("no TAP output"));
    }

    #[test]
    fn nested_subtests_do_not_count_as_cases() {
        let p = parse("KTAP version 1\n1..1\n    KTAP version 1\n    1..2\n    ok 1 sub1\n    not ok 2 sub2\nnot ok 1 parent\n");
        assert_eq!(p.cases.len(), 1);
        assert_eq!(p.cases[0].name, "parent");
        assert_eq!(p.planned, Some(1));
    }

    #[test]
    fn real_seccomp_bpf_with_series_all_pass() {
        let p = parse(&fixture("seccomp_bpf-x86_64-series.tap"));
        assert_eq!(p.incomplete, None);
        assert!(p.planned.unwrap() > 90);
        assert_eq!(p.count(Outcome::Pass), p.planned.unwrap());
        assert!(p
            .cases
            .iter()
            .any(|c| c.name == "global.user_notification_sync" && c.outcome == Outcome::Pass));
        assert!(p.totals.as_deref().unwrap().contains("fail:0"));
    }

    #[test]
    fn real_seccomp_bpf_on_base_fails_only_sync() {
        let p = parse(&fixture("seccomp_bpf-x86_64-base.tap"));
        let failed: Vec<_> = p
            .cases
            .iter()
            .filter(|c| c.outcome != Outcome::Pass)
            .collect();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].name, "global.user_notification_sync");
        assert!(
            failed[0]
                .reason
                .as_deref()
                .unwrap()
                .contains("user_notification_sync"),
            "{:?}",
            failed[0].reason
        );
    }
}
