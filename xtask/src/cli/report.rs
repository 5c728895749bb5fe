//! `cargo xtask report RUN [--junit F] [--html F] [--kcidb F]`: the reports
//! of any results.json; without a file flag, all three into the run
//! directory. All of them are written or none: every target's directory is
//! checked first, each file is rendered to a temporary name beside it and
//! renamed when all are done, and Ctrl-C leaves nothing new.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::{Env, MatrixOpt};
use crate::report::files::{self as reports, load_run, results_file, stop, Staged, Targets};
use crate::stats::intervals::MedianCis;

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
        let t = Targets {
            junit: self.junit.map(|p| env.path(&p)),
            html: self.html.map(|p| env.path(&p)),
            kcidb: self.kcidb.map(|p| env.path(&p)),
        };
        let t = if t.paths().is_empty() {
            let dir = results_file(&run_dir)
                .parent()
                .map_or(PathBuf::from("."), Path::to_path_buf);
            Targets::all_in(&dir)
        } else {
            t
        };
        Staged::check(&t.paths())?;
        let run = load_run(&run_dir)?;
        // The matrix only names the series (KCIDB patch sets): without it
        // the reports are still written.
        let m = match self.matrix.load(env) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("warning: {e:#}: KCIDB checkouts will have no patch files");
                None
            }
        };
        let cis = MedianCis::new(&stop);
        let mut staged = Staged::default();
        reports::stage_reports(&mut staged, &env.root, &run, m.as_ref(), &t, &cis)?;
        staged.commit()?;
        for p in t.paths() {
            println!("wrote {}", p.display());
        }
        reports::publish_github(&run, || reports::summary_with(&run, &cis));
        Ok(0)
    }
}
