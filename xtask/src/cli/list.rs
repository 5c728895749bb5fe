//! `cargo xtask list`: the cell ids the matrix expands to, narrowed as
//! `matrix` narrows them (`--tests`: with the tests each would run);
//! `--groups`: one entry per kernel/arch/config with all its variants,
//! the unit of CI fan-out (compared cells run on the same machine).

use anyhow::Result;
use clap::Args;

use super::{Env, MatrixOpt, Selection};
use crate::plan::matrix::{Filters, Matrix};

#[derive(Args, Debug)]
pub struct ListCmd {
    #[command(flatten)]
    matrix: MatrixOpt,
    #[arg(long)]
    json: bool,
    /// One line (JSON object) per kernel/arch/config with its `--cell` glob.
    #[arg(long)]
    groups: bool,
    /// The cells and tests a `matrix` run with the same selection would
    /// boot (`--kselftest`, `--kunit` declare theirs as it does).
    #[command(flatten)]
    select: Selection,
    /// Each cell with the tests it runs: `CELL TEST...` (with --json, an
    /// object per cell: `{"cell": ..., "tests": [...]}`).
    #[arg(long, conflicts_with = "groups")]
    tests: bool,
}

/// One CI job: a kernel/arch/config with all its variants.
#[derive(serde::Serialize, Debug, PartialEq)]
pub struct Group {
    /// A name fit for an artifact or job: `6.1-x86_64-tiny`.
    pub name: String,
    /// The `--cell` glob that selects it: `6.1/*/x86_64/tiny`.
    pub cell: String,
    pub cells: Vec<String>,
}

pub fn groups(m: &Matrix) -> Result<Vec<Group>> {
    let mut out: Vec<Group> = Vec::new();
    for c in m.cells(&Filters::default())? {
        let cell = format!("{}/*/{}/{}", c.kernel, c.arch, c.config);
        match out.iter_mut().find(|g| g.cell == cell) {
            Some(g) => g.cells.push(c.id()),
            None => out.push(Group {
                name: format!("{}-{}-{}", c.kernel, c.arch, c.config),
                cell,
                cells: vec![c.id()],
            }),
        }
    }
    Ok(out)
}

impl ListCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let mut m = self.matrix.load_checked(env)?;
        self.select.declare(&mut m)?;
        self.select.check(&m.names())?;
        if self.groups {
            let gs = groups(&m)?;
            if self.json {
                println!("{}", serde_json::to_string(&gs)?);
            } else {
                for g in gs {
                    println!("{} {}", g.cell, g.cells.join(" "));
                }
            }
            return Ok(0);
        }
        let cells = m.cells(&self.select.filters())?;
        if self.tests {
            for c in &cells {
                if self.json {
                    let o = serde_json::json!({"cell": c.id(), "tests": c.tests});
                    println!("{o}");
                } else {
                    println!("{} {}", c.id(), c.tests.join(" "));
                }
            }
            return Ok(0);
        }
        let ids: Vec<String> = cells.iter().map(|c| c.id()).collect();
        if self.json {
            println!("{}", serde_json::to_string(&ids)?);
        } else {
            for id in ids {
                println!("{id}");
            }
        }
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_a_kernel_arch_config_with_all_its_variants() {
        let text = std::fs::read_to_string(crate::golden::repo_file("matrix.toml")).unwrap();
        let m = Matrix::parse("matrix.toml", &text).unwrap();
        let gs = groups(&m).unwrap();
        let first = &gs[0];
        assert_eq!(first.name, "6.1-x86_64-tiny");
        assert_eq!(first.cell, "6.1/*/x86_64/tiny");
        assert_eq!(
            first.cells,
            [
                "6.1/base/x86_64/tiny",
                "6.1/seccomp-sync-wakeup/x86_64/tiny"
            ]
        );
        assert_eq!(
            gs.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(),
            [
                "6.1-x86_64-tiny",
                "6.1-arm64-tiny",
                "6.12-x86_64-tiny",
                "6.12-x86_64-wide",
                "6.12-arm64-tiny",
                "6.12-arm64-wide"
            ]
        );
    }
}
