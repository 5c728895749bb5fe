//! What to run: matrix.toml, its cells, and what each cell is expected to
//! do. Pure, but for listing a series directory (series.rs).
pub mod arch;
pub mod expect;
pub mod matrix;
pub mod series;
pub mod variants;
