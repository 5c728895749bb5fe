//! Statistics of benchmark samples and the comparisons built on them:
//! quantiles and summaries, intervals, the bootstrap (plain and clustered
//! by boot), hypothesis tests, power, boot-to-boot noise, the verdicts of
//! base-vs-series and within-cell comparisons, and A/A counting.
//!
//! Numbers and `crate::schema` records in, numbers and records out. Nothing
//! here renders text for people, reads or writes files outside tests, or
//! runs anything; it imports nothing from report/, runner/, bisect/ or the
//! commands (only `crate::schema` and `crate::plan`'s metric declarations).
pub mod aa;
pub mod bootstrap;
pub mod changepoint;
pub mod compare;
pub mod crosscheck;
pub mod distributions;
pub mod hypothesis;
pub mod intervals;
pub mod location;
pub mod noise;
pub mod power;
mod rng;
pub mod sequential;
#[cfg(test)]
mod testutil;
