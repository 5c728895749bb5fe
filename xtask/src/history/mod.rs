//! The run history: every `matrix`, `sweep` and `merge` run added to a
//! database (`store`: SQLite, one file, results/history.sqlite by
//! default), and what the runs say together (`trend`: per metric its
//! change points, per case its state across runs, crashes by title).
//!
//! Reads `crate::schema` runs and computes with `crate::stats`; writes
//! nothing but its database, prints nothing.

pub mod store;
pub mod trend;

use std::path::{Path, PathBuf};

pub use store::{Added, Store};

/// The database a run in `run_dir` is added to when no `--db` is given:
/// `history.sqlite` beside the run directory (results/history.sqlite for
/// the runs under results/).
pub fn default_db(run_dir: &Path) -> PathBuf {
    run_dir
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("history.sqlite")
}
