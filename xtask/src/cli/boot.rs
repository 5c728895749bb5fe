//! `cargo xtask boot CELL`: prepare one cell like a test run, then hand its
//! console to the user with a busybox shell instead of the tests.

use anyhow::Result;
use clap::Args;

use super::{Env, MatrixOpt};
use crate::host::{cache, ui};
use crate::plan::matrix::Filters;
use crate::runner::{self, policy::Policy};

#[derive(Args, Debug)]
pub struct BootCmd {
    /// Cell id: kernel/variant/arch/config.
    cell: String,
    #[command(flatten)]
    matrix: MatrixOpt,
}

impl BootCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let m = self.matrix.load_checked(env)?;
        let filters = Filters {
            cell: vec![self.cell.clone()],
            ..Default::default()
        };
        // CELL is checked before the cache is opened, like --cell.
        let cells = m
            .cells(&filters)
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().replacen("--cell ", "CELL ", 1)))?;
        let Some(cell) = cells.first() else {
            anyhow::bail!(
                "{}: no such cell in the matrix (see `cargo xtask list`)",
                self.cell
            );
        };
        let cache = cache::Cache::open(cache::default_root(), true)?;
        let dir = std::env::temp_dir().join(format!("kmatrix-boot-{}", std::process::id()));
        let ui = ui::Ui::new();
        let ctx = runner::Ctx::new(&m, env.root.clone(), &cache, dir, Policy::from_env()?);
        let cu = ui.cell(1, 1, &cell.id());
        runner::boot_interactive(&ctx, cell, &cu)?;
        Ok(0)
    }
}
