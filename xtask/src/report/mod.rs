//! Statistics, comparisons and the reports people read. Pure.
pub mod compare;
pub mod markdown;
pub mod stats;
