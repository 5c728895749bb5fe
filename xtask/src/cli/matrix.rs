//! `cargo xtask matrix`: the selected cells of the matrix, built, booted and
//! judged by the run driver (`runner::driver`); then summary.md, the
//! reports, and the exit code.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::{Env, HostOpts, MatrixOpt, PolicyArgs, Selection, SourceArgs};
use crate::host::{cache::Cache, ui};
use crate::plan::matrix::{self as plan_matrix, Matrix};
use crate::plan::variants;
use crate::runner::driver::{self, Driver, Opened, RunOptions};
use crate::schema as results;

/// The options of a matrix run (also sweep's, which adds nothing).
#[derive(Args, Clone, Default, Debug, Serialize, Deserialize, PartialEq)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub matrix: MatrixOpt,
    #[command(flatten)]
    pub select: Selection,
    /// Run directory (default results/<timestamp>; results/latest links to it).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub host: HostOpts,
    /// Extra kernel command line for every guest (debugging, fault injection).
    #[arg(long)]
    pub cmdline: Vec<String>,
    /// Exit 1 when a metric regressed significantly beyond its threshold.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Continue the run in DIR: cells already in its results.json are skipped.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
    /// Re-run a cell that is not as expected up to N times (boot only; the
    /// build is cached). Passing on a retry is recorded as `flaky`.
    #[arg(long, default_value_t = 0, value_parser = super::in_range_u32(super::RETRIES))]
    pub retries: u32,
    /// Whole-cell QEMU budget in seconds (overrides run.cell_timeout_s).
    #[arg(long, value_parser = super::in_range_u64(plan_matrix::CELL_TIMEOUT_S))]
    pub cell_timeout: Option<u64>,
    /// Boot each cell N times (overrides run.boots): benchmark samples are
    /// pooled and comparisons count the spread between boots.
    #[arg(long, value_name = "N", value_parser = super::in_range_u32(plan_matrix::BOOTS))]
    pub boots: Option<u32>,
    /// Boot the cells of a comparison still too noisy to judge after their
    /// boots 3 more times each, alternating, up to N boots (overrides
    /// run.max_boots; with --boots alone, no boots are added).
    #[arg(long, value_name = "N", value_parser = super::in_range_u32(plan_matrix::BOOTS))]
    pub max_boots: Option<u32>,
    /// A/A: every kernel's base also runs as `base~aa` (the same cached
    /// kernel), compared with `base` like a series; count the verdicts of
    /// several such runs with `aa-rate`.
    #[arg(long)]
    pub aa: bool,
    /// Run cell after cell, each with all its boots in a row. By default
    /// every cell is prepared (built) first, then the boots of compared
    /// cells (base and variants of one kernel/arch/config) alternate: base
    /// 1, series 1, base 2, series 2, ...
    #[arg(long, conflicts_with = "jobs")]
    pub no_interleave: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    #[serde(default)]
    pub history: super::history::DbOpt,
}

impl MatrixArgs {
    /// Every path but --matrix made absolute against the user's directory
    /// (--matrix is kept as typed for results.json and reproducers, and
    /// resolved when read).
    pub fn resolve(&mut self, env: &Env) {
        self.source.resolve(env);
        for p in [&mut self.out, &mut self.resume].into_iter().flatten() {
            *p = env.path(p);
        }
    }

    /// Everything the flags say that can be checked before any work,
    /// against each other, the matrix and the file system (paths already
    /// resolved). `sweep`: the run is a sweep's (its variants are the
    /// prefixes of one series; its state is sweep.json).
    pub fn validate(&self, m: &Matrix, env: &Env, sweep: bool) -> Result<()> {
        if let Some(dir) = &self.resume {
            super::check_resume(dir, if sweep { "sweep" } else { "matrix" })?;
        }
        if let Some(dir) = &self.out {
            super::check_out(dir)?;
        }
        super::check_boots(m, self.boots, self.max_boots)?;
        let wanted = self.select.kernel.first().map(String::as_str);
        let (preview, kernel) = self.source.check(m, &env.root, wanted)?;
        let mut names = preview.names(m, self.aa);
        if sweep {
            // The kernel and series a sweep steps through; its variants
            // are their prefixes.
            let k = match kernel {
                Some(k) => k,
                None => variants::pick_one("kernel", wanted, preview.kernels.clone())?,
            };
            let dir_count = self
                .source
                .series_dir
                .as_ref()
                .and_then(|d| crate::plan::series::count("--series", d).ok());
            let series = preview.series_of(m, &env.root, &k, dir_count);
            let all: Vec<String> = series.iter().map(|(s, _)| s.clone()).collect();
            let s = variants::pick_series_in(&k, &all, self.source.series_name.as_deref())?;
            let n = self.source.patches.or_else(|| {
                series
                    .iter()
                    .find(|(name, _)| *name == s)
                    .and_then(|(_, n)| *n)
            });
            match n {
                Some(n) => names
                    .variant
                    .extend((1..=n).map(|k| variants::prefix_name(&s, k))),
                // A --range's length is known once git has exported it:
                // its prefixes are checked then.
                None => names.variant.extend(
                    self.select
                        .variant
                        .iter()
                        .filter(|v| v.strip_prefix(&format!("{s}@")).is_some())
                        .cloned(),
                ),
            }
        }
        self.select.check(&names)
    }
}

#[derive(Args, Debug)]
pub struct MatrixCmd {
    #[command(flatten)]
    pub args: MatrixArgs,
}

impl MatrixCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let mut a = self.args;
        a.resolve(env);
        a.source.fetch_lore(&a.host)?;
        execute(env, a, false, &mut |_, _| Ok(()), &mut |_| Ok(())).map(|(code, _)| code)
    }
}

/// Runs the selected cells of the matrix, after `derive` has adapted it
/// (sweep's prefixes); `started` is given the run directory once it exists,
/// before the first cell (sweep keeps its state there). Returns the exit
/// code and the run directory.
/// `a.matrix` may still be as typed (for results.json and reproducers);
/// the file read is resolved against the user's directory. The matrix and
/// the flags are checked first (`sweep`: for a sweep), before the host is
/// set up or the cache opened.
pub fn execute(
    env: &Env,
    a: MatrixArgs,
    sweep: bool,
    derive: &mut dyn FnMut(&mut Matrix, &Cache) -> Result<()>,
    started: &mut dyn FnMut(&std::path::Path) -> Result<()>,
) -> Result<(u8, PathBuf)> {
    let policy = a.policy.policy()?;
    let mut m = a.matrix.load_checked(env)?;
    a.select.declare(&mut m)?;
    a.validate(&m, env, sweep)?;
    let cache = a.host.prepare(&m)?;
    crate::bisect::apply_sources(
        &mut m,
        &a.source.spec(),
        &env.root,
        &cache,
        a.select.kernel.first().map(String::as_str),
    )?;
    derive(&mut m, &cache)?;
    m.aa = a.aa;
    let cells = m.cells(&a.select.filters())?;
    fetch_sources(&m, &cells, &cache)?;
    let run_dir = match a.out.clone().or(a.resume.clone()) {
        Some(d) => d,
        None => driver::new_run_dir(&env.root)?,
    };
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("creating the run directory {}", run_dir.display()))?;
    started(&run_dir)?;
    let ui = ui::Ui::new();
    let opts = RunOptions {
        extra_cmdline: a.cmdline.clone(),
        cell_timeout_s: a.cell_timeout,
        boots: a.boots,
        max_boots: a.max_boots,
        retries: a.retries,
        resume: a.resume.is_some(),
        matrix_shown: a.matrix.shown(),
        source_flags: a.source.flags() + &a.select.own_test_flags(),
    };
    let mut d = match Driver::open(&m, &env.root, &cache, policy, run_dir, opts, &ui)? {
        Opened::Ready(d) => d,
        Opened::Refused { run_dir, why } => {
            eprintln!("error: {why}");
            return Ok((2, run_dir));
        }
    };
    if a.no_interleave {
        d.run_in_turn(&cells)?;
    } else {
        // summary.md and the reports after each group: the first answer
        // does not wait for the last group's builds.
        d.run_interleaved(&cells, &mut |run, dir, done, groups| {
            write_summary(run, &m, dir);
            crate::report::files::write_run_reports(&env.root, run, &m, dir);
            if done < groups && !crate::host::signals::interrupted() {
                println!(
                    "after {done} of {groups} groups ({} rewritten):\n{}",
                    dir.join("summary.md").display(),
                    crate::report::answer::markdown(run)
                );
            }
        })?;
    }
    let (run, run_dir) = d.into_run();
    Ok((conclude(env, &m, &run, &run_dir, &cells, &a)?, run_dir))
}

/// Every kernel the cells need, fetched (and checked against its pinned
/// SHA-256) before any cell starts: a source that cannot be had is the
/// run's error (exit 2), not each cell's infra-error.
fn fetch_sources(m: &Matrix, cells: &[crate::plan::matrix::Cell], cache: &Cache) -> Result<()> {
    let mut kernels: Vec<&str> = cells.iter().map(|c| c.kernel.as_str()).collect();
    kernels.sort_unstable();
    kernels.dedup();
    for k in kernels {
        let spec = m.kernel[k].source.get_ref();
        crate::build::source::locate(spec, cache, &mut |l| eprintln!("kernel {k}: {l}"))
            .with_context(|| {
                format!("kernel {k}: its source cannot be had, so no cell was started")
            })?;
    }
    Ok(())
}

/// summary.md of a run (an A/A run, `--aa`, also says how much a boot's
/// figure moves here), written; its text.
fn write_summary(run: &results::Run, m: &Matrix, run_dir: &std::path::Path) -> String {
    let twin = crate::plan::matrix::AA_VARIANT;
    let summary = crate::report::files::summary(run)
        + &crate::report::aa::noise_text(&crate::stats::aa::noise(&[run], m, twin), twin);
    if let Err(e) =
        crate::host::cache::write_atomic(&run_dir.join("summary.md"), summary.as_bytes())
    {
        eprintln!(
            "warning: writing {}: {e:#}",
            run_dir.join("summary.md").display()
        );
    }
    summary
}

/// summary.md and the reports of a matrix run, printed; the exit code.
fn conclude(
    env: &Env,
    m: &Matrix,
    run: &results::Run,
    run_dir: &std::path::Path,
    cells: &[crate::plan::matrix::Cell],
    a: &MatrixArgs,
) -> Result<u8> {
    let results_path = run_dir.join("results.json");
    let summary = write_summary(run, m, run_dir);
    crate::report::files::write_run_reports(&env.root, run, m, run_dir);
    println!("{summary}");
    // The answer again, last, where the terminal leaves the eye.
    print!("{}", crate::report::answer::markdown(run));
    println!("results: {}", results_path.display());
    if crate::host::signals::interrupted() {
        eprintln!(
            "interrupted: results so far saved in {}",
            results_path.display()
        );
        return Ok(2);
    }
    super::history::record(env, &a.history, run, run_dir);
    let selected: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let bad: Vec<&results::CellResult> = run
        .cells
        .iter()
        .filter(|c| selected.contains(&c.id) && !c.as_expected)
        .collect();
    for c in &bad {
        for mm in &c.mismatches {
            eprintln!("MISMATCH {mm}");
        }
    }
    if a.fail_on_regression && crate::report::files::report_regressions(&run.comparisons) {
        return Ok(1);
    }
    Ok(if bad.is_empty() { 0 } else { 1 })
}
