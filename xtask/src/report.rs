//! Markdown summary of a run (cells x tests), printed at the end and saved as
//! summary.md. Pure: a `Run` in, a string out.

use std::fmt::Write;

use crate::results::{Outcome, Run, TestResult};

fn test_cell(t: &TestResult) -> String {
    if t.cases.is_empty() {
        return t.outcome.to_string();
    }
    let n = t.cases.len();
    let pass = t.cases.iter().filter(|c| c.outcome == Outcome::Pass).count();
    let fail = t.cases.iter().filter(|c| c.outcome == Outcome::Fail).count();
    let skip = t.cases.iter().filter(|c| c.outcome == Outcome::Skip).count();
    let mut s = format!("{} {pass}/{n}", t.outcome);
    if fail > 0 {
        s += &format!(", {fail} fail");
    }
    if skip > 0 {
        s += &format!(", {skip} skip");
    }
    s
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
        let _ = write!(s, "| {} | {} | {} | {} |", c.id, c.outcome, if c.as_expected { "yes" } else { "**NO**" }, c.accel);
        for t in &tests {
            let v = c.tests.iter().find(|x| &x.name == t).map_or("-".to_string(), test_cell);
            let _ = write!(s, " {v} |");
        }
        let build = if c.timings.build_cached { "cached".to_string() } else { format!("{:.0}s", c.timings.build_s) };
        let _ = writeln!(s, " {build} | {:.1}s | {:.1}s |", c.timings.boot_s, c.timings.guest_s);
    }
    let metrics: Vec<_> = run.cells.iter().flat_map(|c| c.metrics.iter().map(move |m| (c, m))).collect();
    if !metrics.is_empty() {
        let _ = writeln!(s, "\n## Metrics\n\n| cell | metric | n | median | 95% CI of median | min | max | CV |\n|---|---|---|---|---|---|---|---|");
        for (c, m) in metrics {
            match (&m.skip, crate::stats::summarize(&m.samples)) {
                (Some(why), _) => {
                    let _ = writeln!(s, "| {} | {} | - | skip: {why} | | | | |", c.id, m.name);
                }
                (None, Some(x)) => {
                    let ci = match x.median_ci {
                        Some((lo, hi)) => format!("[{lo:.3}, {hi:.3}] ±{:.1}%", 50.0 * (hi - lo) / x.median),
                        None => "n < 6".to_string(),
                    };
                    let _ = writeln!(s, "| {} | {} | {} | {:.3} {} | {ci} | {:.3} | {:.3} | {:.1}% |", c.id, m.name, x.n, x.median, m.unit, x.min, x.max, 100.0 * x.cv);
                }
                (None, None) => {}
            }
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
                let path = e.path.as_ref().map_or(String::new(), |p| format!(" ({})", p.display()));
                let _ = writeln!(s, "\n{}{path}\n", e.what);
                if !e.excerpt.is_empty() {
                    let excerpt: Vec<&str> = e.excerpt.lines().take(30).collect();
                    let _ = writeln!(s, "```\n{}\n```", excerpt.join("\n"));
                }
            }
            let _ = writeln!(s, "\nReproduce: `{}`", c.reproduce.xtask);
            if let Some(q) = &c.reproduce.qemu {
                let _ = writeln!(s, "\nBoot by hand: `cargo xtask boot {}` or\n```\n{q}\n```", c.id);
            }
        }
    }
    s
}
