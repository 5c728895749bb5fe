//! A run's context (`Ctx`): the matrix, the cache, the run directory,
//! the overrides of the command line, the run-time policy, the
//! accelerator's decisions and the kernels' trees, shared by every cell;
//! and where one boot runs (`BootSlot`).

use std::path::PathBuf;
use std::time::Duration;

use crate::boot::accel;
use crate::boot::cell::BootEnv;
use crate::build::prepare::{Stage, TreeCache};
use crate::host::cache::Cache;
use crate::plan::matrix::{Cell, Matrix};

use super::policy;

pub struct Ctx<'a> {
    pub matrix: &'a Matrix,
    pub repo_root: PathBuf,
    pub cache: &'a Cache,
    pub run_dir: PathBuf,
    pub jobs: usize,
    /// Extra kernel command line (fault injection, debugging).
    pub extra_cmdline: Vec<String>,
    /// Overrides run.cell_timeout_s.
    pub cell_timeout_s: Option<u64>,
    /// Overrides run.boots.
    pub boots: Option<u32>,
    /// Overrides run.max_boots. With `boots` set and this not, no boots
    /// are added: `--boots N` alone means N.
    pub max_boots: Option<u32>,
    /// The matrix file as given on the command line, for reproducers.
    pub matrix_path: Option<String>,
    /// The command's source flags, quoted (`RunOptions::source_flags`).
    pub source_flags: String,
    /// How guests run on this host (pinning, keep-busy, accelerator, ...).
    pub policy: policy::Policy,
    pub(super) accel: accel::Chooser,
    trees: TreeCache,
    /// Boots run so far by this driver (BootRecord::seq).
    pub(super) boot_seq: std::sync::atomic::AtomicU32,
}

/// Where one boot runs: its share of the host's CPUs when it runs beside
/// others (`--jobs`) and the cells booting at the same time.
#[derive(Debug, Default, Clone)]
pub struct BootSlot {
    /// Host CPUs for this guest's vCPUs; None: every CPU xtask may use.
    pub cpus: Option<Vec<usize>>,
    /// The cells booting at the same time (BootRecord::beside).
    pub beside: Vec<String>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        matrix: &'a Matrix,
        repo_root: PathBuf,
        cache: &'a Cache,
        run_dir: PathBuf,
        policy: policy::Policy,
    ) -> Ctx<'a> {
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        let accel = accel::Chooser::new(
            cache.dir(&["probe"]),
            policy.accel.clone(),
            policy.kvm_device.clone(),
            policy.launch(),
        );
        Ctx {
            matrix,
            repo_root,
            cache,
            run_dir,
            jobs,
            extra_cmdline: vec![],
            cell_timeout_s: None,
            boots: None,
            max_boots: None,
            matrix_path: None,
            source_flags: String::new(),
            policy,
            accel,
            trees: Default::default(),
            boot_seq: Default::default(),
        }
    }

    /// Boots a compared cell may get when a comparison stays too noisy
    /// (run.max_boots, --max-boots; `--boots N` alone: N).
    pub fn max_boots(&self) -> u32 {
        let boots = self.boots.unwrap_or(self.matrix.run.boots);
        let max = match (self.max_boots, self.boots) {
            (Some(m), _) => m,
            (None, Some(b)) => b,
            (None, None) => self.matrix.run.max_boots.unwrap_or(boots),
        };
        max.max(boots)
    }

    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.run_dir
            .join("cells")
            .join(cell.id().replace('/', "__"))
    }

    /// What the build stage's phases read.
    pub fn stage(&self) -> Stage<'_> {
        Stage {
            matrix: self.matrix,
            repo_root: &self.repo_root,
            cache: self.cache,
            jobs: self.jobs,
            trees: &self.trees,
        }
    }

    /// What every boot reads.
    pub fn boot_env(&self) -> BootEnv<'_> {
        BootEnv {
            matrix: self.matrix,
            repo_root: &self.repo_root,
            launch: self.policy.launch(),
            extra_cmdline: &self.extra_cmdline,
            budget: Duration::from_secs(
                self.cell_timeout_s
                    .unwrap_or(self.matrix.run.cell_timeout_s),
            ),
        }
    }
}
