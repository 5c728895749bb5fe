//! The source phase: the variant's commit (its series applied once with
//! `git am`) and the commit its selftests come from (`selftests_from`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;

use super::{stop, Phased, Stage};
use crate::build::series::Series;
use crate::build::source::{self, Trees};
use crate::host::events::{CellEvents, Phase};
use crate::plan::matrix::Cell;
use crate::schema::{Evidence, EvidenceKind, Outcome};

/// The source phase's product: the trees of the kernel, the variant's
/// commit and the one the selftests come from.
pub struct Source {
    pub trees: Arc<Trees>,
    pub commit: String,
    pub test_commit: String,
    /// The commit's kernel tree without tools/ (the build's cache key).
    pub kernel_id: String,
    /// What the config step reads of the commit (the config's cache key).
    pub kconfig_id: String,
    /// Whether the build tree is at `commit` yet: it is switched only when
    /// something is built from it (a config or a kernel not in the cache).
    switched: std::cell::Cell<bool>,
}

impl Source {
    /// Switches the build tree to `commit`, once.
    pub fn checkout(&self) -> Result<()> {
        if !self.switched.get() {
            self.trees.checkout_build(&self.commit)?;
            self.switched.set(true);
        }
        Ok(())
    }
}

/// The variant's commit (the series applied), and the selftests' commit
/// (`selftests_from`).
pub fn source(st: &Stage, cell: &Cell, ev: &CellEvents) -> Phased<Source> {
    ev.phase(
        Phase::Source,
        &format!("{} + {}", cell.kernel, cell.variant),
    );
    let trees = st
        .trees
        .get(st.matrix, st.cache, &cell.kernel, &mut |s| ev.detail(s))?;
    let not_applied = |what: String, patch: PathBuf, detail: String| {
        stop(
            Outcome::ApplyError,
            Evidence::new(EvidenceKind::Host, what, detail, Some(patch)),
        )
    };
    let commit = match variant_commit(st, ev, &trees, &cell.variant)? {
        Ok(c) => c,
        Err((patch, detail)) => {
            return not_applied(
                format!("patch {} does not apply", patch.display()),
                patch,
                detail,
            )
        }
    };
    let from = st.matrix.kernel[&cell.kernel]
        .selftests_from
        .as_ref()
        .map(|s| s.get_ref().as_str());
    let test_commit = match from {
        Some(v) if v != cell.variant => match variant_commit(st, ev, &trees, v)? {
            Ok(c) => c,
            Err((patch, detail)) => {
                let what = format!(
                    "selftests_from = {v}: patch {} does not apply",
                    patch.display()
                );
                return not_applied(what, patch, detail);
            }
        },
        _ => commit.clone(),
    };
    let kernel_id = source::kernel_tree_id(&trees.repo, &commit)?;
    let kconfig_id = source::kconfig_id(&trees.repo, &commit)?;
    Ok(Source {
        trees,
        commit,
        test_commit,
        kernel_id,
        kconfig_id,
        switched: std::cell::Cell::new(false),
    })
}

/// The commit of a variant (base or a series); Err(result): apply-error.
fn variant_commit(
    st: &Stage,
    ev: &CellEvents,
    trees: &Trees,
    variant: &str,
) -> Result<std::result::Result<String, (PathBuf, String)>> {
    let series = if crate::plan::matrix::built_as(variant) == "base" {
        None
    } else {
        let spec = &st.matrix.series[variant];
        Some(Series::load_prefix(
            variant,
            &st.repo_root.join(&spec.dir),
            spec.take,
        )?)
    };
    Ok(trees
        .variant_commit(series.as_ref(), &mut |s| ev.detail(s))?
        .map_err(|e| (e.patch, e.detail)))
}
