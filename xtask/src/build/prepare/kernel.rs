//! The kernel phase: the image, built in one of the kernel/arch/config's
//! persistent O= dirs (`build::slots`), shared by the variants
//! (incremental), images cached by content; and the make line that
//! reproduces it.

use std::path::Path;

use super::{stop, Phased, Source, Stage};
use crate::build::kbuild::{self, BuildOutcome};
use crate::build::slots::Slots;
use crate::build::source::Trees;
use crate::host::cache::Cache;
use crate::host::events::{CellEvents, Phase};
use crate::plan::matrix::Cell;
use crate::schema::{CellResult, Evidence, EvidenceKind, Outcome};

/// The kernel image: built in one of the kernel/arch/config's O= dirs,
/// shared by the variants (incremental), images cached by content.
pub fn kernel(
    st: &Stage,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    src: &Source,
    config: &Path,
    r: &mut CellResult,
) -> Phased<kbuild::Built> {
    ev.phase(
        Phase::Build,
        &format!("{} {}", cell.arch, cell.arch.info().image_target),
    );
    let job = kbuild::BuildJob {
        cache: st.cache,
        tree: &src.trees.build,
        checkout: &|| src.checkout(),
        kernel_id: &src.kernel_id,
        arch: cell.arch,
        llvm: st.matrix.config[&cell.config].llvm,
        config,
        commit: &src.commit,
        slots: &slots(st.cache, cell),
        log: dir.join("build.log"),
    };
    let mut on_line = |l: &str| ev.detail(l.trim());
    let mut warn = |w: &str| ev.note(w);
    match kbuild::build(&job, st.jobs, &mut on_line, &mut warn)? {
        BuildOutcome::Ok(b) => {
            r.build_key = b.key.clone();
            r.reproduce.make =
                reproduce_make(&src.trees, &src.commit, config, dir, b.make_cmd.clone());
            r.logs.build = Some(b.log.clone());
            r.timings.build_cached = b.cached;
            r.timings.build_incremental = b.incremental;
            Ok(b)
        }
        BuildOutcome::Failed {
            log,
            excerpt,
            make_cmd,
        } => {
            r.reproduce.make = reproduce_make(&src.trees, &src.commit, config, dir, make_cmd);
            r.logs.build = Some(log.clone());
            stop(
                Outcome::BuildError,
                Evidence::new(
                    EvidenceKind::Host,
                    "kernel build failed",
                    excerpt,
                    Some(log),
                ),
            )
        }
    }
}

/// The reproducer for a build: the tree at the variant's commit, and make
/// in an O= dir of the cell's own (`<cell dir>/o`, from scratch): the
/// harness's O= dirs are kept for its own incremental builds, whose mtimes
/// it sets itself (build::slots).
fn reproduce_make(
    trees: &Trees,
    commit: &str,
    config: &Path,
    cell_dir: &Path,
    make_cmd: Vec<String>,
) -> Vec<String> {
    let o = cell_dir.join("o");
    let make: Vec<String> = make_cmd
        .into_iter()
        .map(|a| {
            if a.starts_with("O=") {
                format!("O={}", o.display())
            } else {
                a
            }
        })
        .collect();
    vec![
        format!(
            "git -C {} checkout --detach {commit}",
            trees.build.display()
        ),
        format!(
            "mkdir -p {o} && cp {} {o}/.config",
            config.display(),
            o = o.display()
        ),
        make.join(" "),
    ]
}

/// The persistent O= dirs of a cell's kernel/arch/config.
pub fn slots(cache: &Cache, cell: &Cell) -> Slots {
    Slots::new(cache.dir(&["build", &cell.kernel, cell.arch.name(), &cell.config]))
}
