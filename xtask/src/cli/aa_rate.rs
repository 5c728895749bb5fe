//! `cargo xtask aa-rate RUN...`: the comparisons of each run recomputed with
//! the matrix's declarations, the A/A ones (base vs base~aa, or base vs a
//! layout twin with `--twin`) counted per arch against the goals, and the
//! boot-to-boot noise of each metric. Exit 0 when every goal is met, 1
//! otherwise.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::{Env, MatrixOpt};
use crate::report::aa as text;
use crate::report::files::{check_interrupted, load_run, stop};
use crate::stats::{aa, compare};

#[derive(Args, Debug)]
pub struct AaRateCmd {
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    #[command(flatten)]
    matrix: MatrixOpt,
    /// Only metrics starting with PREFIX (repeatable; default all).
    #[arg(long, value_name = "PREFIX")]
    metric: Vec<String>,
    /// The variant that must behave as the base: `base~aa` (the same image,
    /// `matrix --aa`) or a layout twin, a series whose code differs but
    /// whose behaviour does not (tests/planted/layout).
    #[arg(long, value_name = "VARIANT", default_value = crate::plan::matrix::AA_VARIANT)]
    twin: String,
}

impl AaRateCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        if self.twin == "base" {
            bail!(
                "--twin base: the twin is what is compared with the base, so it cannot be the base; give `{}` (the default) or a layout twin's series name",
                crate::plan::matrix::AA_VARIANT
            );
        }
        let m = self.matrix.load(env)?;
        let mut all = Vec::new();
        let mut loaded = Vec::new();
        for p in &self.runs {
            check_interrupted()?;
            let run = load_run(&env.path(p))?;
            let Some(cs) = compare::compare_until(&run, &m, &stop) else {
                bail!("interrupted");
            };
            all.push((p.display().to_string(), cs));
            loaded.push(run);
        }
        let t = aa::tally(&all, &self.metric, &self.twin);
        print!("{}", text::text(&t, &self.twin));
        let mut noise = aa::noise(&loaded.iter().collect::<Vec<_>>(), &m, &self.twin);
        noise.retain(|(_, name), _| {
            self.metric.is_empty() || self.metric.iter().any(|p| name.starts_with(p))
        });
        print!("{}", text::noise_text(&noise, &self.twin));
        Ok(if aa::all_met(&t) { 0 } else { 1 })
    }
}
