//! matrix.toml: the schema, its validation (the numbers by `ranges`), and
//! expansion into cells.
//!
//! Pure: parsing and planning never touch the file system beyond reading the
//! one TOML file handed in, so every rule is unit-tested on strings.

mod expand;
mod ranges;
mod schema;
#[cfg(test)]
mod tests;
mod validate;

pub use expand::*;
pub use ranges::{BOOTS, CELL_TIMEOUT_S, MIN_EFFECT_PCT};
pub use schema::*;
