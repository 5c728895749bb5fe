//! bisect.md and sweep.md: what a maintainer reads. Pure.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

use super::{Answer, State};
use crate::build::series::PatchInfo;
use crate::plan::variants::prefix_name;
use crate::report::{ci_pct, fixed, pct, verdict_words};
use crate::schema::{CellResult, ComparisonKind, Outcome, Run};
use crate::stats::{intervals, location};
use crate::util::{md_code, shell_line, shell_quote};

fn patch_line(i: usize, n: usize, p: &PatchInfo) -> String {
    format!(
        "{i}/{n} `{}`: \"{}\"{}{}",
        p.file,
        p.subject,
        if p.author.is_empty() {
            String::new()
        } else {
            format!(" by {}", p.author)
        },
        if p.commit.is_empty() {
            String::new()
        } else {
            format!(" (commit {})", &p.commit[..12])
        }
    )
}

/// What a step's reproducer repeats of the bisect's command line.
#[derive(Clone, Debug, Default)]
pub struct Reproducer {
    /// `--matrix` as given (None: the default matrix.toml).
    pub matrix: Option<String>,
    /// `--tree`, `--range`, `--rev`, `--series` as given.
    pub source_flags: String,
    pub kernel: Option<String>,
    pub config: Option<String>,
    /// Whether the bisect named its series (`--series-name`).
    pub series_named: bool,
}

/// The command that builds and runs what step `k` ran: `matrix` for a
/// boot, `patchcheck` up to the step's patch for a build (`builds`), which
/// builds on a build-only arch too (the base is its first column).
pub fn step_reproducer(
    a: &Reproducer,
    series: &str,
    k: usize,
    arch: &str,
    tests: &[String],
    builds: bool,
) -> String {
    let mut w: Vec<String> = Vec::new();
    let mut flag = |f: &str, v: &str| w.extend([f.to_string(), v.to_string()]);
    if let Some(m) = &a.matrix {
        flag("--matrix", m);
    }
    let mut tail: Vec<String> = Vec::new();
    let mut more = |f: &str, v: &str| tail.extend([f.to_string(), v.to_string()]);
    if let Some(kern) = &a.kernel {
        more("--kernel", kern);
    }
    if a.series_named && (builds || k > 0) {
        more("--series-name", series);
    }
    if builds {
        more("--patches", &k.max(1).to_string());
    } else if k == 0 {
        more("--variant", "base");
    } else {
        more("--patches", &k.to_string());
        more("--variant", series);
    }
    more("--arch", arch);
    if let Some(c) = &a.config {
        more("--config", c);
    }
    for t in tests {
        more("--test", t);
    }
    let cmd = if builds { "patchcheck" } else { "matrix" };
    let head = shell_line(std::iter::once(cmd.to_string()).chain(w));
    // The source flags come quoted already.
    format!("cargo xtask {head}{} {}", a.source_flags, shell_line(tail))
}

/// The answer in bold: the first bad patch with both sides' judgements, the
/// patches it is one of, why there is nothing to bisect, or how to resume.
fn answer(o: &mut String, st: &State, run_dir: &Path) {
    let n = st.patches.len();
    match &st.answer {
        Some(Answer::Found {
            index,
            patch,
            bad,
            good,
        }) => {
            let _ = writeln!(o, "**First bad patch: {}**\n", patch_line(*index, n, patch));
            let _ = writeln!(o, "- with it ({index} patches): {bad}");
            let _ = writeln!(
                o,
                "- without it ({} patches{}): {good}",
                index - 1,
                if *index == 1 { ", the base" } else { "" }
            );
        }
        Some(Answer::Range { indices, patches }) => {
            let _ = writeln!(
                o,
                "**The first bad patch is one of {} (the others between the last good and the first bad step could not be judged):**\n",
                indices.len()
            );
            for (i, p) in indices.iter().zip(patches) {
                let _ = writeln!(o, "- {}", patch_line(*i, n, p));
            }
        }
        Some(Answer::NotBisectable { why }) => {
            let _ = writeln!(o, "**Nothing to bisect: {why}.**");
        }
        None => {
            let _ = writeln!(
                o,
                "**Interrupted** after {} steps: {}",
                st.steps.len(),
                md_code(&format!(
                    "cargo xtask bisect --resume {}",
                    shell_quote(&run_dir.display().to_string())
                ))
            );
        }
    }
}

pub fn bisect_markdown(st: &State, run_dir: &Path) -> String {
    let n = st.patches.len();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Bisect: {} on {} {}/{}\n",
        st.series, st.kernel, st.arch, st.config
    );
    let _ = writeln!(o, "Bad when: {}.\n", st.predicate_text);
    answer(&mut o, st, run_dir);
    let skips = st
        .steps
        .iter()
        .filter(|s| s.judgement == super::Judgement::Skip)
        .count();
    let _ = writeln!(
        o,
        "\n{} steps for {n} patches (ceil(log2 {n}) + 2 end checks = {}{}).\n",
        st.steps.len(),
        st.expected_steps,
        if skips > 0 {
            format!("; {skips} skipped")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "| step | patches | last patch | judgement | why | cell | boots | build | time |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|");
    for (i, s) in st.steps.iter().enumerate() {
        let last = if s.prefix == 0 {
            "(base)".to_string()
        } else {
            st.patches[s.prefix - 1].subject.replace('|', "\\|")
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | **{}** | {} | {} | {} | {} | {:.0}s |",
            i + 1,
            s.prefix,
            last,
            s.judgement_str(),
            s.reason.replace('|', "\\|").replace('\n', " "),
            s.outcome,
            s.boots,
            s.build_text(),
            s.total_s
        );
    }
    let _ = writeln!(o, "\nReproduce a step:\n");
    for s in &st.steps {
        let _ = writeln!(o, "    {}", s.reproduce);
    }
    o
}

/// A metric's median, its CI ("-" where none can be had) and its unit.
fn median_ci(c: &CellResult, metric: &str) -> Option<(f64, String, String)> {
    let m = c.metrics.iter().find(|m| m.name == metric)?;
    if m.skip.is_some() || m.samples.is_empty() {
        return None;
    }
    let s = location::summarize(&m.samples)?;
    let med = s.median;
    let ci = match intervals::median_ci(m, &s) {
        Some((lo, hi)) => format!("[{}, {}]", fixed(lo, 2), fixed(hi, 2)),
        None => "-".into(),
    };
    Some((med, ci, m.unit.clone()))
}

fn failing(c: &CellResult) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in &c.tests {
        if t.cases.is_empty() && t.outcome != Outcome::Pass && t.outcome != Outcome::Skip {
            out.insert(format!("{} ({})", t.name, t.outcome));
        }
        for cs in &t.cases {
            if cs.outcome == Outcome::Fail {
                out.insert(format!("{} {}", t.name, cs.name));
            }
        }
    }
    out
}

/// Patch by patch: each prefix's outcome, the cases that changed against
/// the prefix before, and every metric's median with its CI and its change
/// against the base (the comparison statistics of results.json).
pub fn sweep_markdown(run: &Run, kernel: &str, series: &str, patches: &[PatchInfo]) -> String {
    let n = patches.len();
    let mut o = String::new();
    let _ = writeln!(o, "# Sweep: {series} on {kernel}, patch by patch\n");
    for (i, p) in patches.iter().enumerate() {
        let _ = writeln!(o, "- {}", patch_line(i + 1, n, p));
    }
    let groups: BTreeSet<(String, String)> = run
        .cells
        .iter()
        .filter(|c| c.kernel == kernel)
        .map(|c| (c.arch.clone(), c.config.clone()))
        .collect();
    for (arch, config) in groups {
        // The cell of prefix k (0: the base) on this arch and config.
        let cells: Vec<Option<&CellResult>> = (0..=n)
            .map(|k| {
                let id = format!("{kernel}/{}/{arch}/{config}", prefix_name(series, k));
                run.cells.iter().find(|c| c.id == id)
            })
            .collect();
        let _ = writeln!(o, "\n## {arch}/{config}\n");
        sweep_outcomes(&mut o, &cells);
        let metrics: BTreeSet<String> = cells
            .iter()
            .flatten()
            .flat_map(|c| c.metrics.iter().map(|m| m.name.clone()))
            .collect();
        for metric in metrics {
            sweep_metric(&mut o, run, &cells, &metric);
        }
    }
    o
}

/// Prefix by prefix: the outcome, the failing count, what changed from the
/// prefix before, the build.
fn sweep_outcomes(o: &mut String, cells: &[Option<&CellResult>]) {
    let _ = writeln!(
        o,
        "| patches | outcome | failing | changed from the step before | build |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|");
    let mut before: Option<BTreeSet<String>> = None;
    for (k, cell) in cells.iter().enumerate() {
        let Some(c) = cell else {
            let _ = writeln!(o, "| {k} | not run | | | |");
            before = None;
            continue;
        };
        let now = failing(c);
        let change = match &before {
            Some(b) => {
                let fixed: Vec<String> = b
                    .difference(&now)
                    .map(|x| format!("now passes: {x}"))
                    .collect();
                let broke: Vec<String> = now
                    .difference(b)
                    .map(|x| format!("now fails: {x}"))
                    .collect();
                fixed
                    .into_iter()
                    .chain(broke)
                    .collect::<Vec<_>>()
                    .join("; ")
            }
            None => String::new(),
        };
        let build = if c.timings.build_cached {
            "cached".to_string()
        } else {
            format!(
                "{:.0}s{}",
                c.timings.build_s,
                if c.timings.build_incremental {
                    " incr."
                } else {
                    ""
                }
            )
        };
        let _ = writeln!(
            o,
            "| {k} | {} | {} | {} | {build} |",
            c.outcome,
            now.len(),
            change
        );
        before = Some(now);
    }
}

/// One metric prefix by prefix: its median and CI, its change against the
/// base with the verdict, and the cell's own declared pairs.
fn sweep_metric(o: &mut String, run: &Run, cells: &[Option<&CellResult>], metric: &str) {
    let _ = writeln!(o, "\n`{metric}`\n");
    let _ = writeln!(
        o,
        "| patches | median | 95% CI | vs base | verdict | within the cell |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for (k, cell) in cells.iter().enumerate() {
        let Some(c) = cell else { continue };
        let Some((med, ci, unit)) = median_ci(c, metric) else {
            let why = c
                .metrics
                .iter()
                .find(|m| m.name == metric)
                .and_then(|m| m.skip.clone())
                .unwrap_or_else(|| format!("no samples ({})", c.outcome));
            let _ = writeln!(o, "| {k} | skip: {why} | | | | |");
            continue;
        };
        let cmp = run.comparisons.iter().find(|x| {
            x.kind == ComparisonKind::Variants && x.new_cell == c.id && x.new_metric == metric
        });
        let (vs, verdict) = match cmp {
            Some(x) => (
                format!("{} {}", pct(x.pct_change, 1), ci_pct(x.ci95_lo, x.ci95_hi)),
                verdict_words(x),
            ),
            None if k == 0 => ("(base)".into(), String::new()),
            None => ("-".into(), String::new()),
        };
        let within = within_claims(run, c, metric);
        let _ = writeln!(
            o,
            "| {k} | {} {unit} | {ci} | {vs} | {verdict} | {within} |",
            fixed(med, 2)
        );
    }
}

/// A declared pair inside the cell (sync vs default): the series' own
/// claim, patch by patch.
fn within_claims(run: &Run, c: &CellResult, metric: &str) -> String {
    run.comparisons
        .iter()
        .filter(|x| {
            x.kind == ComparisonKind::Within && x.new_cell == c.id && x.new_metric == metric
        })
        .map(|x| {
            format!(
                "vs {}{}: {} {} {}",
                x.base_metric,
                x.split_note(),
                pct(x.pct_change, 1),
                ci_pct(x.ci95_lo, x.ci95_hi),
                verdict_words(x)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::compare;

    fn default_matrix() -> crate::plan::matrix::Matrix {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
        let text = std::fs::read_to_string(path).unwrap();
        crate::plan::matrix::Matrix::parse("matrix.toml", &text).unwrap()
    }

    /// The real default-matrix run, its series cells renamed as the one
    /// and only prefix of a one-patch sweep.
    fn sweep_run() -> (Run, Vec<PatchInfo>) {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/results-default-matrix.json"
        ))
        .unwrap();
        let mut run: Run = serde_json::from_str(&text).unwrap();
        for c in run.cells.iter_mut().filter(|c| c.variant != "base") {
            c.variant = "s@1".into();
            c.id = format!("{}/s@1/{}/{}", c.kernel, c.arch, c.config);
        }
        run.comparisons = compare::compare(&run, &default_matrix());
        let p = PatchInfo {
            file: "0001-x.patch".into(),
            subject: "seccomp: the whole series as one".into(),
            author: "A <a@b>".into(),
            commit: String::new(),
        };
        (run, vec![p])
    }

    #[test]
    fn a_sweep_shows_where_a_case_starts_to_pass_and_each_metric_per_patch() {
        let (run, patches) = sweep_run();
        let md = sweep_markdown(&run, "6.1", "s", &patches);
        assert!(
            md.contains("## x86_64/tiny") && md.contains("## arm64/tiny"),
            "{md}"
        );
        assert!(
            md.contains("now passes: seccomp_bpf global.user_notification_sync"),
            "{md}"
        );
        // Sync mode: a skip on the base, a median with a CI on the series.
        let sync = md.split("`seccomp_notify.sync.same-cpu`").nth(1).unwrap();
        let rows: Vec<&str> = sync
            .lines()
            .filter(|l| l.starts_with("| 0 ") || l.starts_with("| 1 "))
            .take(2)
            .collect();
        assert!(rows[0].contains("skip"), "{rows:?}");
        assert!(
            rows[1].contains("us/op") && rows[1].contains('['),
            "{rows:?}"
        );
        // Default mode: the change against the base with its verdict.
        let default = md
            .split("`seccomp_notify.default.same-cpu`")
            .nth(1)
            .unwrap();
        let row1 = default.lines().find(|l| l.starts_with("| 1 ")).unwrap();
        assert!(
            row1.contains('%') && row1.matches('|').count() == 7,
            "{row1}"
        );
        // Sync vs default inside the series cell: the series' claim.
        let row1 = sync.lines().find(|l| l.starts_with("| 1 ")).unwrap();
        assert!(
            row1.contains("vs seccomp_notify.default.same-cpu:"),
            "{row1}"
        );
    }

    /// A metric the statistics cannot take (every sample 0 on the series
    /// side): its rows say why in words and show "-" for the figures it
    /// has none of; no NaN anywhere in the sweep.
    #[test]
    fn a_metric_that_cannot_be_compared_reads_as_words_and_dashes() {
        let (mut run, patches) = sweep_run();
        let name = "seccomp_notify.default.same-cpu";
        for c in run.cells.iter_mut().filter(|c| c.variant != "base") {
            for m in c.metrics.iter_mut().filter(|m| m.name == name) {
                m.samples.iter_mut().for_each(|x| *x = 0.0);
            }
        }
        run.comparisons = compare::compare(&run, &default_matrix());
        let md = sweep_markdown(&run, "6.1", "s", &patches);
        assert!(!md.contains("NaN") && !md.contains("inf"), "{md}");
        let section = md.split(&format!("`{name}`")).nth(1).unwrap();
        let row1 = section.lines().find(|l| l.starts_with("| 1 ")).unwrap();
        assert!(row1.contains("cannot compare: "), "{row1}");
        assert!(row1.contains("| - - |"), "{row1}");
    }
}
