//! What a history says: per metric its runs in order and the change
//! points found in them (`stats::changepoint`); per test case a state
//! (regression, fixed, unstable, persistent failure, new, missing) with
//! the run it began at; crashes by title. `history show --json` writes
//! this document (docs/history.md).

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use serde::Serialize;

use super::store::{failed, Store};
use globset::GlobMatcher;

use crate::plan::glob;
use crate::stats::changepoint::{self, Params};

/// Bumped when a change would make an older reader misread `--json`.
pub const SCHEMA: u32 = 1;

/// What to look at.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub cell: Vec<String>,
    pub metric: Vec<String>,
    pub test: Vec<String>,
    /// Only the last N runs (0: all).
    pub last: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub schema: u32,
    pub runs: Vec<RunRef>,
    pub metrics: Vec<MetricTrend>,
    pub cases: Vec<CaseTrend>,
    pub crashes: Vec<CrashTrend>,
    /// What the last run brought: regressions and new failures of cases
    /// that began there, and crash titles first seen there.
    pub since_last: Vec<String>,
}

/// A run in the history's order (1-based `n`).
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    pub n: usize,
    pub id: i64,
    pub started: String,
    pub source: String,
    pub hostname: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub run: usize,
    pub median: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The first run of the new level.
    pub run: usize,
    pub started: String,
    pub source: String,
    pub before: f64,
    pub after: f64,
    pub pct: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
    pub p: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricTrend {
    pub cell: String,
    pub metric: String,
    pub unit: String,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum CaseState {
    Regression,
    Unstable,
    New,
    Missing,
    PersistentFailure,
    Fixed,
}

impl CaseState {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseState::Regression => "regression",
            CaseState::Unstable => "unstable",
            CaseState::New => "new",
            CaseState::Missing => "missing",
            CaseState::PersistentFailure => "persistent failure",
            CaseState::Fixed => "fixed",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseTrend {
    pub cell: String,
    pub test: String,
    /// None: the test as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub state: CaseState,
    /// The run the state began at.
    pub since: usize,
    /// Pass/fail changes over the runs shown.
    pub flips: usize,
    /// One letter a run the cell ran in: P pass, F fail, S skip, - absent.
    pub outcomes: String,
    /// The outcome in the last run of the cell.
    pub last: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CrashTrend {
    pub title: String,
    pub fingerprint: String,
    pub cells: Vec<String>,
    pub first: usize,
    pub last: usize,
    pub runs: usize,
}

/// A case's state from its letters over the runs its cell ran in, with
/// the index (into `letters`) where it began; None when it only passes
/// (or only skips).
pub fn classify(letters: &[u8]) -> Option<(CaseState, usize, usize)> {
    let n = letters.len();
    let first_present = letters.iter().position(|&l| l != b'-')?;
    if letters[n - 1] == b'-' {
        let since = (0..n)
            .rev()
            .take_while(|&i| letters[i] == b'-')
            .last()
            .unwrap();
        return Some((CaseState::Missing, since, 0));
    }
    // Pass/fail only, with where each came from.
    let pf: Vec<(usize, u8)> = letters
        .iter()
        .enumerate()
        .filter(|(_, &l)| l == b'P' || l == b'F')
        .map(|(i, &l)| (i, l))
        .collect();
    let flips_at: Vec<usize> = pf
        .windows(2)
        .filter(|w| w[0].1 != w[1].1)
        .map(|w| w[1].0)
        .collect();
    let flips = flips_at.len();
    let last_fail = pf.last().map(|p| p.1) == Some(b'F');
    if first_present > 0 {
        return Some((CaseState::New, first_present, flips)).filter(|_| last_fail || flips > 0);
    }
    // Unstable: two changes or more among the last ten pass/fail runs.
    let recent = pf.len().saturating_sub(10);
    let recent_flips: Vec<usize> = pf[recent..]
        .windows(2)
        .filter(|w| w[0].1 != w[1].1)
        .map(|w| w[1].0)
        .collect();
    if recent_flips.len() >= 2 {
        return Some((CaseState::Unstable, recent_flips[0], flips));
    }
    match (flips_at.last(), last_fail) {
        (None, true) => Some((CaseState::PersistentFailure, pf[0].0, 0)),
        (None, false) => None,
        (Some(&at), true) => Some((CaseState::Regression, at, flips)),
        (Some(&at), false) => Some((CaseState::Fixed, at, flips)),
    }
}

fn letter(outcome: &str) -> u8 {
    if failed(outcome) {
        b'F'
    } else if outcome == "pass" || outcome == "flaky" {
        b'P'
    } else {
        b'S'
    }
}

fn matches(globs: &[GlobMatcher], s: &str) -> bool {
    globs.is_empty() || globs.iter().any(|g| g.is_match(s))
}

/// The history in `store` through `filter`, change points found with `p`.
pub fn history(store: &mut Store, filter: &Filter, p: &Params) -> Result<History> {
    let mut all = store.runs()?;
    if filter.last > 0 && all.len() > filter.last {
        all.drain(..all.len() - filter.last);
    }
    let runs: Vec<RunRef> = all
        .iter()
        .enumerate()
        .map(|(i, r)| RunRef {
            n: i + 1,
            id: r.id,
            started: r.started.clone(),
            source: r.source.clone(),
            hostname: r.hostname.clone(),
        })
        .collect();
    let from = runs.first().map(|r| r.started.clone()).unwrap_or_default();
    let order: HashMap<i64, usize> = runs.iter().map(|r| (r.id, r.n)).collect();
    let globs = |v: &[String], cell: bool| -> Result<Vec<GlobMatcher>> {
        v.iter()
            .map(|g| glob::compile(g, cell).map_err(anyhow::Error::msg))
            .collect()
    };
    let (cells, metrics, tests) = (
        globs(&filter.cell, true)?,
        globs(&filter.metric, false)?,
        globs(&filter.test, false)?,
    );

    // Metrics.
    let mut series: BTreeMap<(String, String), (String, Vec<Point>)> = BTreeMap::new();
    for m in store.metric_points(&from)? {
        let Some(&n) = order.get(&m.run) else {
            continue;
        };
        if !matches(&cells, &m.cell) || !matches(&metrics, &m.metric) {
            continue;
        }
        let e = series.entry((m.cell, m.metric)).or_insert((m.unit, vec![]));
        e.1.push(Point {
            run: n,
            median: m.median,
            ci: m.ci,
        });
    }
    let mut metric_trends = Vec::new();
    for ((cell, metric), (unit, mut points)) in series {
        points.sort_by_key(|p| p.run);
        let xs: Vec<f64> = points.iter().map(|p| p.median).collect();
        let changes = changepoint::detect(&xs, p)
            .into_iter()
            .map(|c| {
                let r = &runs[points[c.at].run - 1];
                Change {
                    run: r.n,
                    started: r.started.clone(),
                    source: r.source.clone(),
                    before: c.before,
                    after: c.after,
                    pct: c.pct,
                    ci: c.ci,
                    p: c.p,
                }
            })
            .collect();
        metric_trends.push(MetricTrend {
            cell,
            metric,
            unit,
            points,
            changes,
        });
    }

    // Cases, over the runs each cell ran in.
    let mut ran: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (run, cell) in store.cell_points(&from)? {
        if let Some(&n) = order.get(&run) {
            if matches(&cells, &cell) {
                ran.entry(cell).or_default().push(n);
            }
        }
    }
    for v in ran.values_mut() {
        v.sort_unstable();
    }
    let mut outcomes: BTreeMap<(String, String, String), BTreeMap<usize, String>> = BTreeMap::new();
    for (run, cell, test, name, outcome) in store.case_points(&from)? {
        let Some(&n) = order.get(&run) else { continue };
        if !matches(&cells, &cell) || !matches(&tests, &test) {
            continue;
        }
        outcomes
            .entry((cell, test, name))
            .or_default()
            .insert(n, outcome);
    }
    let mut cases = Vec::new();
    let mut since_last = Vec::new();
    let last_n = runs.len();
    for ((cell, test, name), by_run) in outcomes {
        let Some(cell_runs) = ran.get(&cell) else {
            continue;
        };
        let letters: Vec<u8> = cell_runs
            .iter()
            .map(|n| by_run.get(n).map_or(b'-', |o| letter(o)))
            .collect();
        let Some((state, at, flips)) = classify(&letters) else {
            continue;
        };
        let since = cell_runs[at];
        let last = cell_runs
            .last()
            .and_then(|n| by_run.get(n))
            .cloned()
            .unwrap_or_else(|| "absent".into());
        let case = (!name.is_empty()).then_some(name);
        if since == last_n
            && matches!(
                state,
                CaseState::Regression | CaseState::New | CaseState::Unstable
            )
        {
            since_last.push(format!(
                "{cell} {test}{}: {} in run {since}",
                case.as_deref().map(|c| format!("/{c}")).unwrap_or_default(),
                state.as_str()
            ));
        }
        cases.push(CaseTrend {
            cell,
            test,
            case,
            state,
            since,
            flips,
            outcomes: String::from_utf8(letters).unwrap_or_default(),
            last,
        });
    }
    cases.sort_by(|a, b| (a.state, &a.cell, &a.test).cmp(&(b.state, &b.cell, &b.test)));

    // Crashes by fingerprint.
    let mut by_print: BTreeMap<String, CrashTrend> = BTreeMap::new();
    let mut seen_runs: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (run, cell, title, print) in store.crash_points(&from)? {
        let Some(&n) = order.get(&run) else { continue };
        if !matches(&cells, &cell) {
            continue;
        }
        let e = by_print.entry(print.clone()).or_insert(CrashTrend {
            title,
            fingerprint: print.clone(),
            cells: vec![],
            first: n,
            last: n,
            runs: 0,
        });
        if !e.cells.contains(&cell) {
            e.cells.push(cell);
        }
        e.first = e.first.min(n);
        e.last = e.last.max(n);
        seen_runs.entry(print).or_default().push(n);
    }
    let mut crashes: Vec<CrashTrend> = by_print
        .into_values()
        .map(|mut c| {
            let mut r = seen_runs.remove(&c.fingerprint).unwrap_or_default();
            r.sort_unstable();
            r.dedup();
            c.runs = r.len();
            c.cells.sort();
            c
        })
        .collect();
    crashes.sort_by(|a, b| b.last.cmp(&a.last).then(a.title.cmp(&b.title)));
    for c in &crashes {
        if c.first == last_n && last_n > 1 {
            since_last.push(format!(
                "new crash in run {last_n}: {} ({})",
                c.title,
                c.cells.join(", ")
            ));
        }
    }
    Ok(History {
        schema: SCHEMA,
        runs,
        metrics: metric_trends,
        cases,
        crashes,
        since_last,
    })
}

/// The history as Markdown: what the last run brought, the change points,
/// the cases that are not plainly passing, the crashes.
pub fn markdown(h: &History) -> String {
    let mut s = String::new();
    let Some(last) = h.runs.last() else {
        return "# History\n\nNo run stored.\n".into();
    };
    s += &format!(
        "# History: {} runs, {} to {}\n\n",
        h.runs.len(),
        h.runs[0].started,
        last.started
    );
    s += "## Since the last run\n\n";
    if h.since_last.is_empty() {
        s += &format!(
            "Run {} ({}) brought no new failure and no new crash.\n\n",
            last.n, last.started
        );
    } else {
        for l in &h.since_last {
            s += &format!("- {l}\n");
        }
        s += "\n";
    }
    s += "## Change points\n\n";
    let changed: Vec<&MetricTrend> = h.metrics.iter().filter(|m| !m.changes.is_empty()).collect();
    if changed.is_empty() {
        s += &format!("None in {} metrics.\n\n", h.metrics.len());
    } else {
        s += "| cell | metric | run | source | before | after | change | CI | p |\n|---|---|---|---|---|---|---|---|---|\n";
        for m in &changed {
            for c in &m.changes {
                s += &format!(
                    "| {} | {} | {} ({}) | {} | {:.4} | {:.4} {} | {:+.1}% | {} | {:.3} |\n",
                    m.cell,
                    m.metric,
                    c.run,
                    c.started,
                    if c.source.is_empty() { "-" } else { &c.source },
                    c.before,
                    c.after,
                    m.unit,
                    c.pct,
                    c.ci.map(|(lo, hi)| format!("[{lo:+.1}%, {hi:+.1}%]"))
                        .unwrap_or_else(|| "-".into()),
                    c.p
                );
            }
        }
        s += &format!(
            "\n{} of {} metrics changed level.\n\n",
            changed.len(),
            h.metrics.len()
        );
    }
    s += "## Cases\n\n";
    if h.cases.is_empty() {
        s += "Every case passed (or skipped) in every run.\n\n";
    } else {
        s += "| state | cell | test | since run | outcomes (oldest first, the last 40) | last |\n|---|---|---|---|---|---|\n";
        for c in &h.cases {
            s += &format!(
                "| {} | {} | {}{} | {} | `{}` | {} |\n",
                c.state.as_str(),
                c.cell,
                c.test,
                c.case
                    .as_deref()
                    .map(|k| format!("/{k}"))
                    .unwrap_or_default(),
                c.since,
                last_letters(&c.outcomes, 40),
                c.last
            );
        }
        s += "\n";
    }
    if !h.crashes.is_empty() {
        s += "## Crashes\n\n| title | cells | first run | last run | runs |\n|---|---|---|---|---|\n";
        for c in &h.crashes {
            s += &format!(
                "| {} | {} | {} | {} | {} |\n",
                c.title,
                c.cells.join(", "),
                c.first,
                c.last,
                c.runs
            );
        }
        s += "\n";
    }
    s
}

/// The last `n` letters of a case's outcomes, `...` before them when
/// some are left out.
fn last_letters(s: &str, n: usize) -> String {
    match s.len().checked_sub(n) {
        Some(cut) if cut > 0 => format!("...{}", &s[cut..]),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Option<(CaseState, usize, usize)> {
        classify(s.as_bytes())
    }

    #[test]
    fn each_state_and_where_it_began() {
        assert_eq!(c("PPPP"), None);
        assert_eq!(c("PPSP"), None);
        assert_eq!(c("PPPFF"), Some((CaseState::Regression, 3, 1)));
        assert_eq!(c("FFPP"), Some((CaseState::Fixed, 2, 1)));
        assert_eq!(c("FFFF"), Some((CaseState::PersistentFailure, 0, 0)));
        assert_eq!(c("PFPPFP"), Some((CaseState::Unstable, 1, 4)));
        assert_eq!(c("PPP--"), Some((CaseState::Missing, 3, 0)));
        assert_eq!(c("--PF"), Some((CaseState::New, 2, 1)));
        assert_eq!(c("---F"), Some((CaseState::New, 3, 0)));
        // A new case that passes is not news.
        assert_eq!(c("--PP"), None);
        // A skip between two fails is no flip.
        assert_eq!(c("PPFSF"), Some((CaseState::Regression, 2, 1)));
        // An old flake, then a long pass: fixed, not unstable.
        assert_eq!(c("PFPPPPPPPPPPP"), Some((CaseState::Fixed, 2, 2)));
    }
}
