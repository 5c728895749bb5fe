//! A cell's build stage, phase by phase: the variant's source
//! (`source`), its kernel config and what its tests need of it
//! (`config`), the kernel image (`kernel`), the tests' static guest
//! programs (`programs`). Each phase returns its product or a `Stop`: the
//! cell's failure (its outcome and evidence) or the harness's own. The
//! runner calls them in order; nothing here boots.

mod config;
mod kernel;
mod programs;
mod source;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use crate::build::source::{Base, Trees};
use crate::host::cache::Cache;
use crate::plan::matrix::Matrix;
use crate::schema::{Evidence, Outcome};

pub use config::{config, needs, Needs};
pub use kernel::{kernel, slots};
pub use programs::{initramfs, programs};
pub use source::{source, Source};

/// What the phases read: the matrix, the harness's checkout, the cache,
/// make's jobs, and the kernels' source trees (opened once a run).
pub struct Stage<'a> {
    pub matrix: &'a Matrix,
    pub repo_root: &'a Path,
    pub cache: &'a Cache,
    pub jobs: usize,
    pub trees: &'a TreeCache,
}

/// The source trees of the kernels a run has opened, one per kernel.
#[derive(Default)]
pub struct TreeCache(Mutex<HashMap<String, Arc<Trees>>>);

impl TreeCache {
    /// The trees of `kernel`, its base prepared and imported the first time.
    pub fn get(
        &self,
        matrix: &Matrix,
        cache: &Cache,
        kernel: &str,
        log: &mut dyn FnMut(&str),
    ) -> Result<Arc<Trees>> {
        if let Some(t) = self.0.lock().unwrap().get(kernel) {
            return Ok(t.clone());
        }
        let spec = matrix.kernel[kernel].source.get_ref();
        let base: Base = crate::build::source::prepare_base(spec, cache, log)?;
        let t = Arc::new(Trees::open(&base, kernel, cache, log)?);
        self.0.lock().unwrap().insert(kernel.to_string(), t.clone());
        Ok(t)
    }
}

/// Why a phase stopped: a failure of the cell (its outcome and evidence:
/// a patch that does not apply, a config or build error), or of the
/// harness itself (becomes `infra-error`).
pub enum Stop {
    Cell(Outcome, Evidence),
    Harness(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Stop {
        Stop::Harness(e)
    }
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::Harness(e.into())
    }
}

pub type Phased<T> = std::result::Result<T, Stop>;

pub fn stop<T>(outcome: Outcome, e: Evidence) -> Phased<T> {
    Err(Stop::Cell(outcome, e))
}
