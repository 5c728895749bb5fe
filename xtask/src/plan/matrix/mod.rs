//! matrix.toml: the schema, its validation, and expansion into cells.
//!
//! Pure: parsing and planning never touch the file system beyond reading the
//! one TOML file handed in, so every rule is unit-tested on strings.

mod expand;
mod schema;
#[cfg(test)]
mod tests;
mod validate;

pub use expand::*;
pub use schema::*;
pub use validate::*;
