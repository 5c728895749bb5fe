//! `kind = "kselftest"`: a selftest program compiled from the kernel tree
//! (`dir`, `sources`, `libs`) against the tree's exported headers, as the
//! selftests Makefile does; its TAP/KTAP output gives the cases.

use std::path::Path;

use anyhow::Result;

use super::{ktap, Interpreted, Kind, MetricDecls, Recipe};
use crate::host::git::subtree_id;
use crate::plan::matrix::TestSpec;

pub struct Kselftest;

/// kselftest `settings`: `timeout=N`.
pub fn settings_timeout(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("settings")).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("timeout=")?.trim().parse().ok())
}

impl Kind for Kselftest {
    fn recipe(
        &self,
        test: &str,
        spec: &TestSpec,
        tree: &Path,
        _repo_root: &Path,
    ) -> Result<Recipe> {
        let dir = spec
            .dir
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("test {test}: kind = \"kselftest\" needs `dir`"))?;
        let src_dir = tree.join(dir);
        let harness = "tools/testing/selftests/kselftest_harness.h";
        Ok(Recipe::Compile {
            sources: spec.sources.iter().map(|s| src_dir.join(s)).collect(),
            tree_headers: true,
            includes: vec![tree.join("tools/testing/selftests")],
            key_parts: vec![
                // Everything the sources may include from their own dir and
                // the shared harness; the sources' bytes are keyed anyway.
                ("tree-dir".into(), subtree_id(tree, dir)?),
                (
                    "harness".into(),
                    subtree_id(tree, harness).unwrap_or_default(),
                ),
            ],
            default_timeout_s: settings_timeout(&src_dir).unwrap_or(45),
        })
    }

    fn interpret(&self, _test: &str, output: &str, _decls: &dyn MetricDecls) -> Interpreted {
        let parsed = ktap::parse(output);
        Interpreted {
            cases: parsed.cases,
            incomplete: parsed.incomplete,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_file_timeout() {
        let d = crate::util::test_tmp().join(format!("kmatrix-settings-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(settings_timeout(&d), None);
        std::fs::write(d.join("settings"), "timeout=120\n").unwrap();
        assert_eq!(settings_timeout(&d), Some(120));
        std::fs::remove_dir_all(d).unwrap();
    }
}
