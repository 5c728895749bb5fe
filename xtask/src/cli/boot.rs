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
        let cell = match cells.as_slice() {
            [] => anyhow::bail!(
                "{}: no such cell in the matrix (see `cargo xtask list`)",
                self.cell
            ),
            [one] => one,
            many => {
                let ids: Vec<String> = many.iter().take(10).map(|c| c.id()).collect();
                anyhow::bail!(
                    "CELL {}: matches {} cells ({}{}), expected one: name it whole",
                    self.cell,
                    many.len(),
                    ids.join(", "),
                    if many.len() > 10 { ", ..." } else { "" }
                )
            }
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

#[cfg(test)]
mod tests {
    use super::super::{Cli, Cmd, Env};
    use clap::Parser;

    #[test]
    fn a_cell_glob_must_name_one_cell_before_any_work() {
        let root = crate::golden::repo_file("");
        let env = Env {
            root: root.clone(),
            cwd: root,
        };
        let refusal = |cell: &str| {
            let cli = Cli::try_parse_from(["cargo xtask", "boot", cell]).unwrap();
            let Cmd::Boot(b) = cli.cmd else {
                panic!("parsed as another command")
            };
            b.run(&env).unwrap_err().to_string()
        };
        assert_eq!(
            refusal("6.1/*/x86_64/tiny"),
            "CELL 6.1/*/x86_64/tiny: matches 2 cells (6.1/base/x86_64/tiny, 6.1/seccomp-sync-wakeup/x86_64/tiny), expected one: name it whole"
        );
        assert_eq!(
            refusal("6.1/nope/x86_64/tiny"),
            "CELL 6.1/nope/x86_64/tiny: no variant `nope` in the matrix; known: base, mm-cid-work, mm-cid-work@1, seccomp-sync-wakeup"
        );
    }
}
