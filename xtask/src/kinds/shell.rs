//! `kind = "shell"`: a busybox sh command; it passes when it exits 0.

use std::path::Path;

use anyhow::{Context, Result};

use super::{Interpreted, Kind, MetricDecls, Recipe};
use crate::plan::matrix::TestSpec;

pub struct Shell;

impl Kind for Shell {
    fn recipe(
        &self,
        test: &str,
        spec: &TestSpec,
        _tree: &Path,
        _repo_root: &Path,
    ) -> Result<Recipe> {
        let command = spec
            .command
            .as_deref()
            .with_context(|| format!("test {test}: kind = \"shell\" needs `command`"))?;
        Ok(Recipe::Script(format!("#!/bin/sh\n{command}\n")))
    }

    fn interpret(&self, _test: &str, _output: &str, _decls: &dyn MetricDecls) -> Interpreted {
        Interpreted::default()
    }
}
