//! Test kinds: the one seam a new kind of guest test plugs into.
//!
//! A kind says three things, and nothing else in the harness knows them:
//! how its guest program is built (`recipe`: C sources and flags, or a
//! script), what it runs in the guest (the program with its args, under the
//! init's per-test timeout), and how its output becomes cases, metrics and
//! errors (`interpret`, pure). The runner, the initramfs writer and the
//! classifier call these through `of(kind)`; adding a kind is a variant of
//! `plan::matrix::TestKind`, an impl here, and a row in `of`.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::plan::matrix::{TestKind, TestSpec};
use crate::schema::{CaseResult, Metric, Outcome};

pub mod bench;
mod kselftest;
mod ktap;
pub mod kunit;
mod perf;
pub mod programs;
mod shell;
pub mod target;

/// How a test's guest program comes to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Recipe {
    /// A busybox sh script carried in the initramfs as-is.
    Script(String),
    /// A static C program for the guest arch.
    Compile {
        sources: Vec<PathBuf>,
        /// Compile against the tree's `make headers_install` (kselftests).
        tree_headers: bool,
        /// Extra `-I` directories.
        includes: Vec<PathBuf>,
        /// Content that identifies the program beyond its sources' bytes
        /// (e.g. the selftest dir's tree id, the harness header).
        key_parts: Vec<(String, String)>,
        /// Guest timeout when the matrix gives none (seconds, real hardware).
        default_timeout_s: u64,
    },
    /// Several static programs from a tree directory (against the tree's
    /// exported headers), run as cases by a generated script.
    Programs {
        programs: Vec<programs::ProgramRecipe>,
        includes: Vec<PathBuf>,
        key_parts: Vec<(String, String)>,
        default_timeout_s: u64,
    },
    /// The tree's `tools/perf`, built static (`build::perf`), run as cases
    /// by a generated script.
    Perf {
        /// The tree's perf directory (`tools/perf`), built with its
        /// Makefile; None when the tree lacks the bench: nothing is built,
        /// and the script skips its cases saying why.
        dir: Option<PathBuf>,
        script: String,
        key_parts: Vec<(String, String)>,
        default_timeout_s: u64,
    },
    /// A kselftest target built and installed by the tree's own selftests
    /// Makefile (`build::ksft`), its programs run as cases by a script
    /// made from what it installed (`target::script`).
    Target {
        /// The kernel tree.
        tree: PathBuf,
        /// As `make TARGETS=` names it (`pidfd`, `net/forwarding`).
        target: String,
        /// Only these programs (all when empty).
        only: Vec<String>,
        key_parts: Vec<(String, String)>,
        /// Each program's guest timeout (the target's `settings`).
        program_timeout_s: u64,
    },
}

/// What a test's output says, before the runner weighs exit status,
/// timeouts and splats.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Interpreted {
    pub cases: Vec<CaseResult>,
    pub metrics: Vec<Metric>,
    /// The output stopped before the program said it was done (a cut TAP
    /// plan): the test fails with this reason.
    pub incomplete: Option<String>,
    /// Errors the program reported about itself (bench ERROR lines).
    pub errors: Vec<String>,
}

/// What a kind may ask of its surroundings while interpreting.
pub trait MetricDecls {
    /// The matrix's `target_ci_pct` for a metric name, if declared.
    fn target_ci_pct(&self, metric: &str) -> Option<f64>;
}

pub trait Kind: Sync {
    /// How the guest program is built from the spec, the kernel tree the
    /// tests come from, and this repository.
    fn recipe(&self, test: &str, spec: &TestSpec, tree: &Path, repo_root: &Path) -> Result<Recipe>;
    /// The test's output (from the results channel) as cases and metrics.
    fn interpret(&self, test: &str, output: &str, decls: &dyn MetricDecls) -> Interpreted;
    /// Whether the program comes from the cell's own tree even where the
    /// kernel's tests come from another variant's (`selftests_from`).
    fn own_tree(&self) -> bool {
        false
    }
    /// What a guest build that failed makes of the test when the cell
    /// still boots: its outcome and what did not build (`the tree's
    /// tools/perf`). None: the cell is a build-error.
    fn unbuilt(&self) -> Option<(Outcome, &'static str)> {
        None
    }
}

pub fn of(kind: TestKind) -> &'static dyn Kind {
    match kind {
        TestKind::Kselftest => &kselftest::Kselftest,
        TestKind::Bench => &bench::Bench,
        TestKind::Shell => &shell::Shell,
        TestKind::Programs => &programs::Programs,
        TestKind::Perf => &perf::Perf,
        TestKind::Target => &target::Target,
        TestKind::Kunit => &kunit::Kunit,
    }
}
