//! `cargo xtask merge --out DIR RUN...`: several results.json (one per CI
//! job, say) into one run, comparisons recomputed exactly as `matrix`
//! computes them, with summary.md and the reports. All of DIR's files are
//! written or none (an error or Ctrl-C leaves it as it was); a DIR that
//! holds a run already is replaced only with `--force`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::{Env, MatrixOpt};
use crate::plan::matrix::Filters;
use crate::report::files::{
    self as reports, check_interrupted, load_run, results_file, stop, Staged, Targets,
};
use crate::schema::merge;
use crate::stats::compare;
use crate::stats::intervals::MedianCis;

#[derive(Args, Debug)]
pub struct MergeCmd {
    #[arg(long)]
    out: PathBuf,
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    #[command(flatten)]
    matrix: MatrixOpt,
    #[arg(long)]
    fail_on_regression: bool,
    /// Replace the run already in --out (its results.json and reports);
    /// without it, a --out that holds a results.json is refused.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    history: super::history::DbOpt,
}

impl MergeCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let m = self.matrix.load(env)?;
        let out = env.path(&self.out);
        let results = out.join("results.json");
        if results.exists() && !self.force {
            bail!(
                "{} already holds a run ({}): merging there would replace its cells; \
                 pick another --out, or pass --force to replace it",
                out.display(),
                results.display()
            );
        }
        let mut runs = Vec::new();
        for p in &self.runs {
            check_interrupted()?;
            let p = env.path(p);
            runs.push((results_file(&p).display().to_string(), load_run(&p)?));
        }
        let order: Vec<String> = m
            .cells(&Filters::default())
            .map(|cs| cs.iter().map(|c| c.id()).collect())
            .unwrap_or_default();
        let mut run = merge::merge(&runs, &order)?;
        if !compare::reanalyse(&mut run, &m, &stop) {
            bail!("interrupted: nothing written");
        }
        let cis = MedianCis::new(&stop);
        let summary = reports::summary_with(&run, &cis);
        check_interrupted()?;
        let made = !out.exists();
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let written = (|| {
            let t = Targets::all_in(&out);
            Staged::check(&t.paths())?;
            let mut staged = Staged::default();
            staged.add(&results, serde_json::to_string_pretty(&run)?.as_bytes())?;
            staged.add(&out.join("summary.md"), summary.as_bytes())?;
            reports::stage_reports(&mut staged, &env.root, &run, Some(&m), &t, &cis)?;
            staged.commit()
        })();
        if let Err(e) = written {
            if made {
                let _ = std::fs::remove_dir(&out);
            }
            return Err(e);
        }
        println!("{summary}");
        println!(
            "merged {} cells from {} files into {} (summary.md, junit.xml, report.html, kcidb.json beside it)",
            run.cells.len(),
            runs.len(),
            results.display()
        );
        reports::publish_github(&run, || summary);
        super::history::record(env, &self.history, &run, &out);
        Ok(reports::verdict_code(&run, self.fail_on_regression))
    }
}
