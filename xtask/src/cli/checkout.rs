//! `cargo xtask checkout KERNEL DEST`: a git tree of a matrix kernel with a
//! series applied as commits, to work in and to give to `--tree`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Env, HostOpts, MatrixOpt, SourceArgs};

#[derive(Args, Debug)]
pub struct CheckoutCmd {
    /// The kernel, as named in the matrix (e.g. 6.1).
    kernel: String,
    dest: PathBuf,
    #[command(flatten)]
    matrix: MatrixOpt,
    #[command(flatten)]
    source: SourceArgs,
    #[arg(long)]
    no_setup: bool,
}

impl CheckoutCmd {
    pub fn run(mut self, env: &Env) -> Result<u8> {
        self.source.resolve(env);
        let m = self.matrix.load(env)?;
        let host = HostOpts {
            no_setup: self.no_setup,
            no_wait: false,
        };
        let cache = host.prepare(&m)?;
        crate::bisect::checkout(
            m,
            &env.root,
            &cache,
            &self.kernel,
            &env.path(&self.dest),
            &self.source.spec(),
        )
    }
}
