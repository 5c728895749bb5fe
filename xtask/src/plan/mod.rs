//! What to run: matrix.toml, its cells, and what each cell is expected to do. Pure.
pub mod arch;
pub mod expect;
pub mod matrix;
pub mod variants;
