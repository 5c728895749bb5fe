//! `cargo xtask setup`: the host packages the harness needs, and the tools
//! its test suite checks reports with. Nothing else does this but `matrix`
//! (unless --no-setup), which installs only what its matrix needs.

use anyhow::Result;
use clap::Args;

use super::Env;

#[derive(Args, Debug)]
pub struct SetupCmd {}

impl SetupCmd {
    pub fn run(self, _env: &Env) -> Result<u8> {
        crate::host::setup::ensure(&[])?;
        crate::host::tools::ensure()?;
        Ok(0)
    }
}
