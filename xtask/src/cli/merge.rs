//! `cargo xtask merge --out DIR RUN...`: several results.json (one per CI
//! job, say) into one run, comparisons recomputed exactly as `matrix`
//! computes them, with summary.md and the reports.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::reports::{self, load_run, results_file, Targets};
use super::{Env, MatrixOpt};
use crate::plan::matrix::Filters;
use crate::schema::merge;
use crate::stats::compare;

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
}

impl MergeCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let m = self.matrix.load(env)?;
        let out = env.path(&self.out);
        let mut runs = Vec::new();
        for p in &self.runs {
            let p = env.path(p);
            runs.push((results_file(&p).display().to_string(), load_run(&p)?));
        }
        let order: Vec<String> = m
            .cells(&Filters::default())
            .map(|cs| cs.iter().map(|c| c.id()).collect())
            .unwrap_or_default();
        let mut run = merge::merge(&runs, &order)?;
        run.comparisons = compare::compare(&run, &m);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let results = out.join("results.json");
        run.save(&results)?;
        let summary = reports::summary(&run);
        std::fs::write(out.join("summary.md"), &summary)?;
        reports::write_reports(&env.root, &run, Some(&m), &Targets::all_in(&out))?;
        println!("{summary}");
        println!(
            "merged {} cells from {} files into {} (summary.md, junit.xml, report.html, kcidb.json beside it)",
            run.cells.len(),
            runs.len(),
            results.display()
        );
        reports::publish_github(&run, || summary);
        Ok(reports::verdict_code(&run, self.fail_on_regression))
    }
}
