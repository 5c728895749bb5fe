//! `cargo xtask setup`: the host packages the harness needs, and the tools
//! its test suite checks reports with. Nothing else does this but `matrix`
//! (unless --no-setup), which installs only what its matrix needs.

use anyhow::Result;
use clap::Args;

use super::Env;

#[derive(Args, Debug)]
pub struct SetupCmd {
    /// Let apt remove a package that conflicts with one the harness needs
    /// (named first); without it such an install is refused.
    #[arg(long)]
    yes: bool,
}

impl SetupCmd {
    pub fn run(self, _env: &Env) -> Result<u8> {
        crate::host::setup::ensure(&[], self.yes)?;
        crate::host::tools::ensure(self.yes)?;
        Ok(0)
    }
}
