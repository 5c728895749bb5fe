//! `cargo xtask checkout KERNEL DEST`: a git tree of a matrix kernel with a
//! series applied as commits, to work in and to give to `--tree`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::{Env, HostOpts, MatrixOpt, SourceArgs};
use crate::plan::matrix::Matrix;

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
    /// KERNEL, DEST and the source flags, before the host is set up or
    /// the cache opened.
    fn validate(&self, m: &Matrix, env: &Env) -> Result<()> {
        let dest = env.path(&self.dest);
        // A DEST under a file can never be made: say so before cloning.
        if let Some(file) = dest.ancestors().skip(1).find(|a| a.is_file()) {
            anyhow::bail!(
                "DEST {}: {} is a file, so no directory can be made under it; expected a new or empty directory",
                dest.display(),
                file.display()
            );
        }
        if dest.is_file() || (dest.is_dir() && std::fs::read_dir(&dest)?.next().is_some()) {
            bail!(
                "DEST {}: exists and is not an empty directory, expected a new or empty one",
                dest.display()
            );
        }
        // With --tree the tree is the kernel, whatever KERNEL says.
        if self.source.tree.is_none() && !m.kernel.contains_key(&self.kernel) {
            bail!(
                "KERNEL {}: not in the matrix; known: {}",
                self.kernel,
                m.kernel.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
        self.source.check(m, &env.root, Some(&self.kernel))?;
        Ok(())
    }

    pub fn run(mut self, env: &Env) -> Result<u8> {
        self.source.resolve(env);
        let host = HostOpts {
            no_setup: self.no_setup,
            ..Default::default()
        };
        self.source.fetch_lore(&host)?;
        let m = self.matrix.load_checked(env)?;
        self.validate(&m, env)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn an_unknown_kernel_or_a_used_dest_is_refused_before_setup() {
        let root = crate::golden::repo_file("");
        let env = Env {
            root: root.clone(),
            cwd: root.clone(),
        };
        let m = crate::plan::load_checked(&root.join("matrix.toml"), &root).unwrap();
        let check = |args: &[&str]| -> Option<String> {
            let cli = super::super::Cli::try_parse_from(
                ["cargo xtask", "checkout"].iter().chain(args.iter()),
            )
            .unwrap();
            match cli.cmd {
                super::super::Cmd::Checkout(mut c) => {
                    c.source.resolve(&env);
                    c.validate(&m, &env).err().map(|e| format!("{e:#}"))
                }
                other => panic!("parsed as {other:?}"),
            }
        };
        let new = crate::util::test_tmp().join(format!("kmatrix-checkout-{}", std::process::id()));
        let new = new.to_str().unwrap();
        assert_eq!(
            check(&["9.9", new]).as_deref(),
            Some("KERNEL 9.9: not in the matrix; known: 6.1, 6.12")
        );
        let e = check(&["6.1", "kernels"]).unwrap();
        assert!(e.contains("exists and is not an empty directory"), "{e}");
        let under = root.join("matrix.toml/linux");
        let e = check(&["6.1", under.to_str().unwrap()]).unwrap();
        assert_eq!(
            e,
            format!(
                "DEST {}: {} is a file, so no directory can be made under it; expected a new or empty directory",
                under.display(),
                root.join("matrix.toml").display()
            )
        );
        let e = check(&[
            "6.1",
            new,
            "--patches",
            "7",
            "--series-name",
            "seccomp-sync-wakeup",
        ]);
        assert!(e
            .unwrap()
            .contains("--patches 7: series seccomp-sync-wakeup has 6 patches"));
        assert_eq!(check(&["6.12", new]), None);
    }
}
