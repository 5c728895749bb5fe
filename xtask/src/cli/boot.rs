//! `cargo xtask boot CELL`: prepare one cell like a test run, then hand its
//! console to the user with a busybox shell instead of the tests (with
//! `--gdb`, halted for a debugger first).

use anyhow::Result;
use clap::Args;

use super::{Env, HostOpts, MatrixOpt, SourceArgs};
use crate::host::{cache, ui};
use crate::plan::matrix::{Cell, Filters, Matrix};
use crate::runner::{self, policy::Policy};

#[derive(Args, Debug)]
pub struct BootCmd {
    /// Cell id: kernel/variant/arch/config.
    cell: String,
    #[command(flatten)]
    matrix: MatrixOpt,
    /// Where the kernel and series come from, as for `matrix` (a cell of a
    /// `--series` or `--lore` run boots with the same flags).
    #[command(flatten)]
    source: SourceArgs,
    /// Install nothing (with `--lore`: b4's venv must be there).
    #[arg(long)]
    no_setup: bool,
    /// A kselftest target, as for `matrix`: its `config` shapes the
    /// kernel, and the shell finds it under /tests.
    #[arg(long, value_name = "TARGET[:PROGRAM]")]
    kselftest: Vec<String>,
    /// KUnit suites, as for `matrix`: built into the kernel and run at
    /// boot (`dmesg` shows their KTAP; /tests/kunit reads it).
    #[arg(long, value_name = "GLOB")]
    kunit: Option<String>,
    /// With or without --kunit: the tree's .kunitconfig, as for `matrix`.
    #[arg(long, value_name = "PATH")]
    kunitconfig: Option<String>,
    /// Start the guest halted with QEMU's gdbstub on 127.0.0.1:PORT (1234
    /// when no port is given), and print the gdb command that attaches.
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "1234")]
    gdb: Option<u16>,
}

impl BootCmd {
    pub fn run(mut self, env: &Env) -> Result<u8> {
        self.source.resolve(env);
        let mut m = self.matrix.load_checked(env)?;
        crate::plan::targets::declare(&mut m, &self.kselftest)?;
        crate::plan::targets::declare_kunit(
            &mut m,
            self.kunit.as_deref(),
            self.kunitconfig.as_deref(),
        )?;
        let kernel = self.cell.split('/').next().map(str::to_string);
        let sourced = self.source.tree.is_some()
            || self.source.series_dir.is_some()
            || self.source.lore.is_some();
        // CELL is checked before the cache is opened, like --cell; a cell
        // of a --series, --lore or --tree kernel once the flags made it.
        let cell = if sourced {
            self.source.check(&m, &env.root, kernel.as_deref())?;
            let host = HostOpts {
                no_setup: self.no_setup,
                ..Default::default()
            };
            self.source.fetch_lore(&host)?;
            None
        } else {
            Some(one_cell(&m, &self.cell)?)
        };
        let cache = cache::Cache::open(cache::default_root(), true)?;
        let cell = match cell {
            Some(c) => c,
            None => {
                crate::bisect::apply_sources(
                    &mut m,
                    &self.source.spec(),
                    &env.root,
                    &cache,
                    kernel.as_deref(),
                )?;
                one_cell(&m, &self.cell)?
            }
        };
        // The cell's initramfs and logs, for this boot only: removed when
        // it ends, however it ends.
        let dir = std::env::temp_dir().join(format!("kmatrix-boot-{}", std::process::id()));
        let ui = ui::Ui::new();
        let ctx = runner::Ctx::new(
            &m,
            env.root.clone(),
            &cache,
            dir.clone(),
            Policy::from_env()?,
        );
        let cu = ui.cell(1, 1, &cell.id());
        let booted = runner::boot_interactive(&ctx, &cell, &cu, self.gdb);
        let _ = std::fs::remove_dir_all(&dir);
        booted?;
        Ok(0)
    }
}

/// The one cell of `m` that `pattern` names; refused when it names none or
/// several.
fn one_cell(m: &Matrix, pattern: &str) -> Result<Cell> {
    let filters = Filters {
        cell: vec![pattern.to_string()],
        ..Default::default()
    };
    let cells = m
        .cells(&filters)
        .map_err(|e| anyhow::anyhow!("{}", e.to_string().replacen("--cell ", "CELL ", 1)))?;
    match cells.as_slice() {
        [] => anyhow::bail!("{pattern}: no such cell in the matrix (see `cargo xtask list`)"),
        [one] => Ok(one.clone()),
        many => {
            let ids: Vec<String> = many.iter().take(10).map(|c| c.id()).collect();
            anyhow::bail!(
                "CELL {pattern}: matches {} cells ({}{}), expected one: name it whole",
                many.len(),
                ids.join(", "),
                if many.len() > 10 { ", ..." } else { "" }
            )
        }
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
        let refused = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            let Cmd::Boot(b) = cli.cmd else {
                panic!("parsed as another command")
            };
            b.run(&env).unwrap_err().to_string()
        };
        let refusal = |cell: &str| refused(&["cargo xtask", "boot", cell]);
        assert_eq!(
            refusal("6.1/*/x86_64/tiny"),
            "CELL 6.1/*/x86_64/tiny: matches 2 cells (6.1/base/x86_64/tiny, 6.1/seccomp-sync-wakeup/x86_64/tiny), expected one: name it whole"
        );
        // The source flags of a --series run, checked before any work.
        let e = refused(&[
            "cargo xtask",
            "boot",
            "--series",
            "no/such/dir",
            "6.1/dir/x86_64/tiny",
        ]);
        assert!(
            e.starts_with("--series ") && e.contains("no/such/dir: No such file or directory"),
            "{e}"
        );
        assert_eq!(
            refusal("6.1/nope/x86_64/tiny"),
            "CELL 6.1/nope/x86_64/tiny: no variant `nope` in the matrix; known: base, mm-cid-work, mm-cid-work@1, seccomp-sync-wakeup"
        );
    }
}
