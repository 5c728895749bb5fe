//! Statistics, comparisons and the reports people read. Pure.
pub mod aa;
pub mod compare;
pub mod gha;
pub mod html;
pub mod junit;
pub mod kcidb;
pub mod markdown;
pub mod merge;
pub mod stats;
