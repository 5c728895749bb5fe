//! `cargo xtask report RUN [--junit F] [--html F] [--kcidb F]`: the reports
//! of any results.json; without a file flag, all three into the run
//! directory.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::reports::{self, load_run, results_file, Targets};
use super::{Env, MatrixOpt};

#[derive(Args, Debug)]
pub struct ReportCmd {
    run_dir: PathBuf,
    #[arg(long)]
    junit: Option<PathBuf>,
    #[arg(long)]
    html: Option<PathBuf>,
    #[arg(long)]
    kcidb: Option<PathBuf>,
    #[command(flatten)]
    matrix: MatrixOpt,
}

impl ReportCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let run_dir = env.path(&self.run_dir);
        let run = load_run(&run_dir)?;
        let t = Targets {
            junit: self.junit.map(|p| env.path(&p)),
            html: self.html.map(|p| env.path(&p)),
            kcidb: self.kcidb.map(|p| env.path(&p)),
        };
        let t = if t.junit.is_none() && t.html.is_none() && t.kcidb.is_none() {
            let dir = results_file(&run_dir)
                .parent()
                .map_or(PathBuf::from("."), Path::to_path_buf);
            Targets::all_in(&dir)
        } else {
            t
        };
        // The matrix only names the series (KCIDB patch sets): without it
        // the reports are still written.
        let m = match self.matrix.load(env) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("warning: {e:#}: KCIDB checkouts will have no patch files");
                None
            }
        };
        reports::write_reports(&env.root, &run, m.as_ref(), &t)?;
        for p in [&t.junit, &t.html, &t.kcidb].into_iter().flatten() {
            println!("wrote {}", p.display());
        }
        reports::publish_github(&run, || reports::summary(&run));
        Ok(0)
    }
}
