//! What to run: matrix.toml, its cells, and what each cell is expected to
//! do. Pure, but for listing a series directory (series.rs).
pub mod arch;
pub mod expect;
pub mod matrix;
pub mod series;
pub mod variants;

use std::path::Path;

use anyhow::{Context, Result};

/// Reads and validates a matrix file (errors name file:line:col).
pub fn load(path: &Path) -> Result<matrix::Matrix> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    matrix::Matrix::parse(&path.display().to_string(), &text)
}

/// The Debian source packages the matrix's kernels come from.
pub fn debian_packages(m: &matrix::Matrix) -> Vec<String> {
    m.kernel
        .values()
        .filter_map(|k| match k.source.get_ref() {
            matrix::SourceSpec::Debian(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}
