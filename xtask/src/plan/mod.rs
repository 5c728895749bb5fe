//! What to run: matrix.toml, its cells, and what each cell is expected to
//! do. Pure, but for listing a series directory (series.rs) and checking
//! that the files a matrix names exist (files.rs).
pub mod arch;
#[cfg(test)]
mod doc_examples;
pub mod expect;
pub mod files;
pub mod glob;
pub mod matrix;
#[cfg(test)]
mod mutations;
pub mod series;
pub mod spans;
pub mod targets;
pub mod variants;

use std::path::Path;

use anyhow::Result;

use crate::util::{read_input_text, MAX_MATRIX};

/// Reads and validates a matrix file (errors name file:line:col).
pub fn load(path: &Path) -> Result<matrix::Matrix> {
    let text = read_input_text(path, MAX_MATRIX, "matrix file")?;
    matrix::Matrix::parse(&path.display().to_string(), &text)
}

/// Reads and validates a matrix file to run: also every file it names
/// exists under `root`, the harness's checkout (errors name
/// file:line:col).
pub fn load_checked(path: &Path, root: &Path) -> Result<matrix::Matrix> {
    let text = read_input_text(path, MAX_MATRIX, "matrix file")?;
    let shown = path.display().to_string();
    let m = matrix::Matrix::parse(&shown, &text)?;
    files::check(&m, &shown, &text, root)?;
    Ok(m)
}

/// The Debian packages the host installs for this matrix beyond the
/// harness's own: the source packages of its kernels without a pinned
/// version (a pinned one is downloaded into the cache, the host's packages
/// untouched), and clang with lld when a config builds with LLVM.
pub fn debian_packages(m: &matrix::Matrix) -> Vec<String> {
    let mut p: Vec<String> = m
        .kernel
        .values()
        .filter_map(|k| match k.source.get_ref() {
            matrix::SourceSpec::Debian {
                package,
                version: None,
                ..
            } => Some(package.clone()),
            _ => None,
        })
        .collect();
    if m.config.values().any(|c| c.llvm) {
        p.extend(["clang", "lld", "llvm"].map(String::from));
    }
    p
}
