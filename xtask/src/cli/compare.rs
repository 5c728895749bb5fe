//! `cargo xtask compare [RUN]`: the comparisons of a finished run
//! recomputed (results.json updated); `compare RUN_A RUN_B`: each cell of
//! B against the same cell of A (the base), written to compare.json/.md
//! (both or neither). Ctrl-C stops either between comparisons and writes
//! nothing.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;

use super::{Env, MatrixOpt};
use crate::report::compare as table;
use crate::report::files::{
    load_run, report_regressions, results_file, stop, RunComparison, Staged,
};
use crate::schema::{Comparison, Run, SCHEMA_VERSION};
use crate::stats::compare;

#[derive(Args, Debug)]
pub struct CompareCmd {
    run_dir: Option<PathBuf>,
    #[arg(value_name = "RUN_B")]
    other: Option<PathBuf>,
    /// With two runs: where to write the comparison (default RUN_B/compare.json).
    #[arg(long, requires = "other")]
    out: Option<PathBuf>,
    #[command(flatten)]
    matrix: MatrixOpt,
    /// Exit 1 when a metric regressed significantly beyond its threshold.
    #[arg(long)]
    fail_on_regression: bool,
}

impl CompareCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let m = self.matrix.load(env)?;
        let cs = match (&self.run_dir, &self.other) {
            (Some(a), Some(b)) => {
                let out = self.out.as_ref().map(|o| env.path(o));
                two_runs(&env.path(a), &env.path(b), &m, out)?
            }
            _ => {
                let dir = self
                    .run_dir
                    .as_ref()
                    .map_or_else(|| env.results("latest"), |d| env.path(d));
                one_run(&dir, &m)?
            }
        };
        Ok(u8::from(self.fail_on_regression && report_regressions(&cs)))
    }
}

fn one_run(dir: &Path, m: &crate::plan::matrix::Matrix) -> Result<Vec<Comparison>> {
    let path = results_file(dir);
    let mut run = Run::load(&path)?;
    if !compare::reanalyse(&mut run, m, &stop) {
        bail!("interrupted: {} left as it was", path.display());
    }
    run.save(&path)?;
    let table = table::markdown(&run.comparisons);
    println!(
        "{}",
        if table.is_empty() {
            "no metric appears in two variants or a declared pair".to_string()
        } else {
            table
        }
    );
    Ok(run.comparisons)
}

fn two_runs(
    a: &Path,
    b: &Path,
    m: &crate::plan::matrix::Matrix,
    out: Option<PathBuf>,
) -> Result<Vec<Comparison>> {
    let out = out.unwrap_or_else(|| {
        results_file(b)
            .parent()
            .map_or(PathBuf::from("."), Path::to_path_buf)
            .join("compare.json")
    });
    let md = out.with_extension("md");
    Staged::check(&[&out, &md])?;
    let ra = load_run(a)?;
    let rb = load_run(b)?;
    let Some(cs) = compare::compare_runs_until(&ra, &rb, m, &stop) else {
        bail!("interrupted: nothing written");
    };
    let table = table::markdown(&cs);
    let heading = format!(
        "# {} (new) vs {} (base)\n",
        results_file(b).display(),
        results_file(a).display()
    );
    if table.is_empty() {
        println!("no cell has the same metric in both runs");
    } else {
        println!("{heading}{table}");
    }
    let doc = RunComparison {
        schema: SCHEMA_VERSION,
        base_run: results_file(a).display().to_string(),
        new_run: results_file(b).display().to_string(),
        comparisons: cs,
    };
    let mut staged = Staged::default();
    staged.add(&out, serde_json::to_string_pretty(&doc)?.as_bytes())?;
    staged.add(&md, (heading + &table).as_bytes())?;
    staged.commit()?;
    println!("comparison: {}", out.display());
    Ok(doc.comparisons)
}
