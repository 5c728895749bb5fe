//! The programs phase: each test's static guest program, from the
//! selftests' tree (or the cell's own, for a kind that says so), cached by
//! content; a test whose kind says so (`perf`, `target`) is settled when
//! it does not build and leaves the rest; and the initramfs that carries
//! them.

use std::path::Path;

use anyhow::Result;

use super::{stop, Needs, Phased, Source, Stage};
use crate::build::guest::{self, CompileOutcome, Program};
use crate::build::kbuild;
use crate::build::source;
use crate::host::events::CellEvents;
use crate::kinds;
use crate::plan::matrix::{Cell, TestKind};
use crate::schema::{CellResult, Evidence, EvidenceKind, Outcome, TestResult};

/// The static guest programs of the tests that run, from the selftests'
/// tree (cached by content).
pub fn programs(
    st: &Stage,
    cell: &Cell,
    ev: &CellEvents,
    src: &Source,
    needs: &mut Needs,
    r: &mut CellResult,
) -> Phased<Vec<Program>> {
    let mut programs: Vec<Program> = Vec::new();
    let tests: Vec<&String> = cell
        .tests
        .iter()
        .filter(|t| !needs.settled.iter().any(|s| &s.name == *t))
        .collect();
    for tname in tests {
        let spec = &st.matrix.test[tname];
        // The one work tree is switched to the commit each test is built
        // from; a switch between variants moves only what the series does.
        let commit = if kinds::of(spec.kind).own_tree() {
            &src.commit
        } else {
            &src.test_commit
        };
        let tree = src.trees.checkout_work(commit)?.to_path_buf();
        let uapi_id = source::uapi_id(&src.trees.repo, commit, cell.arch.name())?;
        let job = guest::CompileJob {
            cache: st.cache,
            repo_root: st.repo_root,
            arch: cell.arch,
            tree: &tree,
            uapi_id: &uapi_id,
            absent: &needs.absent,
            jobs: st.jobs,
        };
        if spec.kind == TestKind::Perf {
            // Minutes on a small host the first time, then cached.
            ev.detail(&format!(
                "test {tname}: the tree's tools/perf, static, for {} (once per tools/ tree)",
                cell.arch
            ));
        }
        match guest::compile(&job, tname, spec)? {
            CompileOutcome::Ok(prog) => {
                if !prog.compile_cmd.is_empty() {
                    r.reproduce.guest.push(prog.compile_cmd.clone());
                }
                programs.push(prog)
            }
            CompileOutcome::Failed { test, cmd, stderr } => {
                let excerpt = format!(
                    "$ {cmd}\n{}",
                    kbuild::first_errors(&stderr.lines().map(str::to_string).collect::<Vec<_>>())
                );
                if let Some((outcome, what)) = kinds::of(spec.kind).unbuilt() {
                    let said = format!("{what} did not build for {}", cell.arch);
                    ev.note(&format!("test {test}: {said}"));
                    r.reproduce.guest.push(cmd.clone());
                    needs.settled.push(TestResult {
                        name: test.clone(),
                        outcome,
                        reason: Some(format!("{said}:\n{excerpt}")),
                        duration_s: None,
                        cases: vec![],
                        failed_by_cases: false,
                    });
                    continue;
                }
                return stop(
                    Outcome::BuildError,
                    Evidence::new(
                        EvidenceKind::Host,
                        format!("guest program for test {test} failed to compile"),
                        excerpt,
                        None,
                    ),
                );
            }
        }
    }
    Ok(programs)
}

/// Writes the cell's initramfs to `path`: busybox, `rootfs/init` and the
/// programs, the tests' timeouts multiplied by `timeout_scale`.
pub fn initramfs(
    st: &Stage,
    path: &Path,
    busybox: &Path,
    programs: &[Program],
    timeout_scale: u64,
) -> Result<()> {
    std::fs::write(
        path,
        guest::initramfs(st.repo_root, busybox, programs, timeout_scale)?,
    )?;
    Ok(())
}
