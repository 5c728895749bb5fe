//! The host: packages, the cache and its lock, signals, the terminal, and
//! bounded subprocesses.
pub mod cache;
pub mod debian;
pub mod download;
pub mod events;
pub mod git;
pub mod info;
pub mod lore;
pub mod proc;
pub mod setup;
pub mod signals;
pub mod tools;
pub mod ui;
