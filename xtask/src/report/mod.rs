//! The reports people read: the markdown summary, HTML, KCIDB, JUnit, GitHub
//! annotations, and the text of comparisons and of A/A counts and noise.
//! Rendering only: every figure shown is computed in `crate::stats` (or is
//! in results.json already); nothing here computes a statistic or merges
//! data.
pub mod aa;
pub mod compare;
pub mod gha;
pub mod html;
pub mod junit;
pub mod kcidb;
pub mod markdown;
