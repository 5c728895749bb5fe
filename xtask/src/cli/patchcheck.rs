//! `cargo xtask patchcheck`: each patch of a series built on every
//! arch/config of its kernel, with the warnings it adds, checkpatch and
//! kernel-doc; patchcheck.md and patchcheck.json in the run directory.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::{Env, HostOpts, MatrixOpt, SourceArgs};
use crate::plan::variants;

#[derive(Args, Debug)]
pub struct PatchcheckCmd {
    #[command(flatten)]
    matrix: MatrixOpt,
    #[command(flatten)]
    source: SourceArgs,
    /// The kernel whose series is checked (default: the matrix's only one).
    #[arg(long)]
    kernel: Option<String>,
    /// Only these arches (default: the matrix's, with run.build_only's).
    #[arg(long)]
    arch: Vec<String>,
    /// Only these configs (default: the kernel's, and run.build_only's).
    #[arg(long)]
    config: Vec<String>,
    /// checkpatch findings that fail the check: error (default), warning
    /// (errors and warnings) or check (all of --strict).
    #[arg(long, default_value = "error", value_parser = ["error", "warning", "check"])]
    checkpatch_fails_at: String,
    /// Run directory (default results/patchcheck-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    host: HostOpts,
}

impl PatchcheckCmd {
    pub fn run(mut self, env: &Env) -> Result<u8> {
        self.source.resolve(env);
        self.source.fetch_lore(&self.host)?;
        let mut m = self.matrix.load_checked(env)?;
        let (_, kernel) = self.source.check(&m, &env.root, self.kernel.as_deref())?;
        let arches = m.build_arches();
        for a in &self.arch {
            crate::plan::matrix::known_value("arch", a, &arches)?;
        }
        let configs: Vec<String> = m.config.keys().cloned().collect();
        for c in &self.config {
            crate::plan::matrix::known_value("config", c, &configs)?;
        }
        let out = match &self.out {
            Some(d) => env.path(d),
            None => env.results(&format!("patchcheck-{}", crate::util::timestamp())),
        };
        if out.join("patchcheck.json").exists() {
            bail!(
                "--out {}: holds a patchcheck.json already; pick another directory",
                out.display()
            );
        }
        let cache = self.host.prepare(&m)?;
        let kernel = crate::bisect::apply_sources(
            &mut m,
            &self.source.spec(),
            &env.root,
            &cache,
            kernel.as_deref().or(self.kernel.as_deref()),
        )?;
        let kernel = match kernel {
            Some(k) => k,
            None => variants::pick_kernel(&m, self.kernel.as_deref())?,
        };
        let series = variants::pick_series(&m, &kernel, self.source.series_name.as_deref())?;
        std::fs::create_dir_all(&out)?;
        let ui = crate::host::ui::Ui::new();
        let check = crate::patchcheck::run(
            crate::patchcheck::Plan {
                matrix: m,
                root: &env.root,
                cache: &cache,
                kernel,
                series,
                arches: self.arch.clone(),
                configs: self.config.clone(),
                run_dir: out.clone(),
                fail_on: self.checkpatch_fails_at.clone(),
            },
            &ui,
        )?;
        println!("{}", crate::patchcheck::report::markdown(&check));
        println!("patchcheck: {}", out.join("patchcheck.md").display());
        Ok(check.code())
    }
}
