//! git as the harness runs it: a fixed identity and no user or system
//! configuration, within the git bound of host::proc.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::host::proc::{self, limit};

/// `git -C dir` with the harness's identity and no user hooks/config.
pub fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    // Commits made here are ours: a fixed identity, and no user hooks/config.
    c.env("GIT_AUTHOR_NAME", "kmatrix")
        .env("GIT_AUTHOR_EMAIL", "kmatrix@localhost")
        .env("GIT_COMMITTER_NAME", "kmatrix")
        .env("GIT_COMMITTER_EMAIL", "kmatrix@localhost")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    c
}

/// Runs a git command within the git bound; its trimmed stdout, or Err
/// naming `what`.
pub fn run_ok(c: Command, what: &str) -> Result<String> {
    let out = proc::run(c, limit::scaled(limit::GIT))
        .with_context(|| format!("{what}: could not run git"))?;
    if !out.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.describe(),
            out.stderr,
            out.stdout
        );
    }
    Ok(out.stdout.trim().to_string())
}

/// `git -C dir args...` within the git bound; its stdout, or Err naming `what`.
pub fn git_ok(dir: &Path, args: &[&str], what: &str) -> Result<String> {
    let mut c = git(dir);
    c.args(args);
    run_ok(c, what)
}

/// Identity of one subdirectory's content (e.g. a selftest dir).
pub fn subtree_id(tree: &Path, sub: &str) -> Result<String> {
    run_ok(
        {
            let mut c = git(tree);
            c.args(["rev-parse", &format!("HEAD:{sub}")]);
            c
        },
        &format!("git rev-parse HEAD:{sub}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of a directory follows its content only: a commit that
    /// changes a file elsewhere keeps it, one that changes a file inside
    /// changes it; it is git's tree hash of that path.
    #[test]
    fn subtree_id_is_the_tree_hash_of_the_path() {
        let d = crate::util::test_tmp().join(format!("kmatrix-git-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub")).unwrap();
        git_ok(&d, &["init", "-q"], "init").unwrap();
        let commit = |file: &str, text: &str| {
            std::fs::write(d.join(file), text).unwrap();
            git_ok(&d, &["add", "-A"], "add").unwrap();
            git_ok(&d, &["commit", "-q", "-m", file], "commit").unwrap();
        };
        commit("sub/a.c", "int a;\n");
        let first = subtree_id(&d, "sub").unwrap();
        // `sub` holds only a.c with these bytes: its tree hash is fixed,
        // whoever committed it and when.
        assert_eq!(first, "45a6148d8444ee98f120f8b97689448c7fff40e9");
        commit("top.c", "int t;\n");
        assert_eq!(subtree_id(&d, "sub").unwrap(), first);
        commit("sub/a.c", "int b;\n");
        assert_ne!(subtree_id(&d, "sub").unwrap(), first);
        let e = subtree_id(&d, "nope").unwrap_err().to_string();
        assert!(e.starts_with("git rev-parse HEAD:nope failed"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
