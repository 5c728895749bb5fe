//! `cargo xtask sweep`: the matrix run over the prefixes of one series
//! (base, +1, ..., +N as variants), then sweep.md: each test and metric
//! patch by patch. The parsed arguments are stored in sweep.json, so
//! `--resume DIR` continues it from anywhere.

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::matrix::{execute, MatrixArgs};
use super::Env;
use crate::build::series::{PatchInfo, Series};
use crate::host::cache;
use crate::plan::variants;
use crate::schema as results;
use crate::util::{read_input_text, MAX_RESULTS};

#[derive(Args, Debug)]
pub struct SweepCmd {
    #[command(flatten)]
    pub args: MatrixArgs,
}

/// sweep.json: the command and what it swept.
#[derive(Serialize, Deserialize)]
struct Stored {
    command: MatrixArgs,
    kernel: String,
    series: String,
    patches: Vec<PatchInfo>,
}

impl SweepCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let mut a = self.args;
        a.resolve(env);
        a.matrix.resolve(env);
        a.source.fetch_lore(&a.host)?;
        if let Some(dir) = a.resume.clone() {
            let path = dir.join("sweep.json");
            if path.exists() {
                let text =
                    read_input_text(&path, MAX_RESULTS, "sweep state").context("--resume")?;
                let s: Stored = serde_json::from_str(&text).with_context(|| {
                    format!(
                        "--resume: {} is not a sweep.json this version can read",
                        path.display()
                    )
                })?;
                a = MatrixArgs {
                    resume: Some(dir),
                    out: None,
                    host: a.host,
                    ..s.command
                };
            }
        }
        let command = a.clone();
        // What derive finds (the kernel, the series and its patches), kept
        // in sweep.json as soon as the run directory exists, so an
        // interrupted sweep resumes as a sweep.
        let found: std::cell::RefCell<Option<Stored>> = std::cell::RefCell::new(None);
        let wanted_kernel = a.select.kernel.first().cloned();
        let series_name = a.source.series_name.clone();
        let root = env.root.clone();
        let (code, run_dir) = execute(
            env,
            a,
            true,
            &mut |m, _cache| {
                let kernel = variants::pick_kernel(m, wanted_kernel.as_deref())?;
                let sname = variants::pick_series(m, &kernel, series_name.as_deref())?;
                let s = Series::load_prefix(
                    &sname,
                    &root.join(&m.series[&sname].dir),
                    m.series[&sname].take,
                )?;
                variants::prefixes(m, &kernel, &sname, s.patches.len());
                *found.borrow_mut() = Some(Stored {
                    command: command.clone(),
                    kernel,
                    series: sname,
                    patches: s.info(),
                });
                Ok(())
            },
            &mut |dir| match &*found.borrow() {
                Some(stored) => store(dir, stored),
                None => Ok(()),
            },
        )?;
        let Some(stored) = found.into_inner() else {
            return Ok(code);
        };
        if let Ok(run) = results::Run::load(&run_dir.join("results.json")) {
            let md = crate::bisect::report::sweep_markdown(
                &run,
                &stored.kernel,
                &stored.series,
                &stored.patches,
            );
            crate::host::cache::write_atomic(&run_dir.join("sweep.md"), md.as_bytes())?;
            println!("{md}");
            println!("sweep: {}", run_dir.join("sweep.md").display());
        }
        Ok(code)
    }
}

/// sweep.json in the run directory.
fn store(dir: &std::path::Path, stored: &Stored) -> Result<()> {
    cache::write_atomic(
        &dir.join("sweep.json"),
        serde_json::to_string_pretty(stored)?.as_bytes(),
    )
}
