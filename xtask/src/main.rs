//! `cargo xtask`: what does this kernel patch series do to the kernel?
//!
//! The command line is `cli/`; this file only declares the modules and
//! hands over. See ARCHITECTURE.md for the map.

mod analyze;
mod bisect;
mod boot;
mod build;
mod cli;
mod history;
mod host;
mod kinds;
mod patchcheck;
mod plan;
mod report;
mod runner;
mod schema;
mod stats;
mod util;

#[cfg(test)]
mod golden;

fn main() -> std::process::ExitCode {
    cli::main()
}
