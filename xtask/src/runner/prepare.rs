//! The order of a cell's phases before its boots: the build stage's
//! source, config, needs, kernel (`build::prepare`), then the
//! accelerator (`boot::cell`), the guest programs and the initramfs; each
//! phase's time kept in the cell's result, and a stop turned into the
//! cell's outcome. Also `build_only` (patchcheck's steps: source, config,
//! kernel) and `boot_interactive` (`cargo xtask boot`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use super::Ctx;
use crate::boot::accel::Choice;
use crate::boot::cell as boot_cell;
use crate::build::guest::{self, Program};
use crate::build::prepare::{self as stage, Stop};
use crate::build::slots::Slots;
use crate::build::source::Trees;
use crate::host::events::{CellEvents, Phase, Sink};
use crate::plan::arch::Accel;
use crate::plan::matrix::Cell;
use crate::schema::*;
use crate::util::shell_quote;

/// Everything a boot needs, once source, config, build and rootfs are done.
pub(super) struct Prepared {
    pub r: CellResult,
    pub image: PathBuf,
    pub initrd: PathBuf,
    pub choice: Choice,
    pub programs: Vec<Program>,
    pub busybox: PathBuf,
    /// Tests settled before any boot, as results: skipped (their Kconfig
    /// symbol is absent) or failed (a `perf` that did not build).
    pub settled: Vec<TestResult>,
}

pub(super) fn failed(mut r: CellResult, outcome: Outcome, e: Evidence) -> CellResult {
    r.outcome = outcome;
    r.evidence.push(e);
    r
}

/// A cell's result before any phase: `infra-error` until one says
/// otherwise, with the commands that reproduce it.
pub(super) fn new_result(cell: &Cell, ctx: &Ctx) -> CellResult {
    let (xtask, boot) = reproducers(
        cell,
        ctx.matrix_path.as_deref(),
        &ctx.source_flags,
        &ctx.run_dir,
    );
    CellResult {
        reproduce: Reproduce {
            xtask,
            boot,
            ..Default::default()
        },
        ..CellResult::blank(&cell.id(), Outcome::InfraError)
    }
}

/// `cargo xtask matrix ...` that runs `cell` again into `run_dir`, and
/// `cargo xtask boot ...` for a shell on its kernel: every argument
/// quoted, the matrix and the source flags (`flags`, already quoted) kept
/// on both.
fn reproducers(cell: &Cell, matrix: Option<&str>, flags: &str, run_dir: &Path) -> (String, String) {
    let matrix = match matrix {
        Some(p) if p != "matrix.toml" => format!(" --matrix {}", shell_quote(p)),
        _ => String::new(),
    };
    // The A/A twin exists with --aa only; it boots its base's kernel.
    let (aa, boot_id) = if cell.variant == crate::plan::matrix::AA_VARIANT {
        let base = Cell {
            variant: "base".into(),
            ..cell.clone()
        };
        (" --aa", base.id())
    } else {
        ("", cell.id())
    };
    let xtask = format!(
        "cargo xtask matrix{matrix}{flags}{aa} --cell {} --out {}",
        shell_quote(&cell.id()),
        shell_quote(&run_dir.display().to_string())
    );
    let boot = format!("cargo xtask boot{matrix}{flags} {}", shell_quote(&boot_id));
    (xtask, boot)
}

pub(super) fn harness_error(cell: &Cell, ctx: &Ctx, e: &anyhow::Error) -> CellResult {
    harness_failed(new_result(cell, ctx), e)
}

/// `r`, with what it has so far, as an infra-error cell for `e`.
fn harness_failed(r: CellResult, e: &anyhow::Error) -> CellResult {
    failed(
        r,
        Outcome::InfraError,
        Evidence::new(
            EvidenceKind::Harness,
            "harness error",
            format!("{e:#}"),
            None,
        ),
    )
}

/// Source, config, needs, build, accelerator, guest programs, initramfs:
/// each phase returns its product or stops the cell. Err(result): a
/// recorded failure.
pub(super) fn prepare(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
) -> Result<std::result::Result<Prepared, CellResult>> {
    let mut r = new_result(cell, ctx);
    match phases(ctx, cell, ev, dir, &mut r) {
        Ok(p) => Ok(Ok(p)),
        Err(Stop::Cell(outcome, e)) => Ok(Err(failed(r, outcome, e))),
        // Still an infra-error cell, with the times and logs of the phases
        // that ran (a harness error after a ten-minute build keeps it).
        Err(Stop::Harness(e)) => Ok(Err(harness_failed(r, &e))),
    }
}

fn phases(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    r: &mut CellResult,
) -> stage::Phased<Prepared> {
    let st = ctx.stage();
    let t = Instant::now();
    let src = stage::source(&st, cell, ev)?;
    r.timings.source_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let config = stage::config(&st, cell, ev, dir, &src, r)?;
    let mut needs = stage::needs(&st, cell, ev, &src, &config)?;
    r.timings.config_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let built = stage::kernel(&st, cell, ev, dir, &src, &config, r)?;
    r.timings.build_s = t.elapsed().as_secs_f64();
    if built.cached {
        ev.note(&format!("build: cached kernel {}", built.key));
    } else {
        ev.note(&format!(
            "build: {:.1}s ({})",
            r.timings.build_s,
            if built.incremental {
                "incremental, over an earlier variant's build"
            } else {
                "cold"
            }
        ));
    }

    let t = Instant::now();
    ev.phase(Phase::Rootfs, "guest programs + initramfs");
    let busybox = crate::host::setup::busybox(cell.arch, ctx.cache)?;
    let choice = boot_cell::choose_accel(
        &ctx.boot_env(),
        &ctx.accel,
        cell,
        ev,
        dir,
        &built.image,
        &busybox,
    );
    let programs = stage::programs(&st, cell, ev, &src, &mut needs, r)?;
    let initrd = dir.join("initramfs.cpio.gz");
    stage::initramfs(
        &st,
        &initrd,
        &busybox,
        &programs,
        guest::timeout_scale(&choice.accel),
    )?;
    r.timings.rootfs_s = t.elapsed().as_secs_f64();
    Ok(Prepared {
        r: r.clone(),
        image: built.image,
        initrd,
        choice,
        programs,
        busybox,
        settled: needs.settled,
    })
}

/// The initramfs again, its tests' timeouts scaled for `accel` (a cell
/// prepared for KVM that boots under TCG).
pub(super) fn rewrite_initrd(ctx: &Ctx, prep: &Prepared, accel: &Accel) -> Result<()> {
    stage::initramfs(
        &ctx.stage(),
        &prep.initrd,
        &prep.busybox,
        &prep.programs,
        guest::timeout_scale(accel),
    )
}

/// Where a cell built and never booted (patchcheck's per-patch steps)
/// has its tree and build directory.
pub struct BuiltOnly {
    /// The kernel's trees; `commit` is the variant's.
    pub trees: Arc<Trees>,
    pub commit: String,
    /// The persistent O= dirs of the cell's kernel/arch/config.
    pub slots: Slots,
    /// The final .config, once the config step made it.
    pub config: Option<PathBuf>,
}

/// Source, config and build of a cell, nothing after: its result (`pass`
/// when it built; a patch that does not apply, a config or build error is
/// its outcome with the evidence) and, once the source phase got that
/// far, where it was built. Err: a failure of the harness.
pub fn build_only(
    ctx: &Ctx,
    cell: &Cell,
    sink: &dyn Sink,
) -> Result<(CellResult, Option<BuiltOnly>)> {
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let dir = ctx.cell_dir(cell);
    std::fs::create_dir_all(&dir)?;
    let st = ctx.stage();
    let mut r = new_result(cell, ctx);
    let t = Instant::now();
    let src = match stage::source(&st, cell, &ev) {
        Ok(s) => s,
        Err(Stop::Cell(o, e)) => return Ok((failed(r, o, e), None)),
        Err(Stop::Harness(e)) => return Err(e),
    };
    r.timings.source_s = t.elapsed().as_secs_f64();
    let mut built = BuiltOnly {
        trees: src.trees.clone(),
        commit: src.commit.clone(),
        slots: stage::slots(ctx.cache, cell),
        config: None,
    };
    let t = Instant::now();
    let rest = stage::config(&st, cell, &ev, &dir, &src, &mut r).and_then(|config| {
        built.config = Some(config.clone());
        r.timings.config_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = stage::kernel(&st, cell, &ev, &dir, &src, &config, &mut r);
        r.timings.build_s = t.elapsed().as_secs_f64();
        b
    });
    let r = match rest {
        Ok(_) => {
            r.outcome = Outcome::Pass;
            r
        }
        Err(Stop::Cell(o, e)) => failed(r, o, e),
        Err(Stop::Harness(e)) => return Err(e),
    };
    Ok((r, Some(built)))
}

/// `cargo xtask boot`: prepare the cell like a test run, then hand the
/// console to the user with a shell instead of running the tests.
pub fn boot_interactive(
    ctx: &Ctx,
    cell: &Cell,
    sink: &dyn Sink,
    gdb_port: Option<u16>,
) -> Result<()> {
    let dir = ctx.cell_dir(cell);
    std::fs::create_dir_all(&dir)?;
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let prep = match prepare(ctx, cell, &ev, &dir)? {
        Ok(x) => x,
        Err(r) => {
            let e = r
                .evidence
                .first()
                .map_or(String::new(), |e| format!("{}\n{}", e.what, e.excerpt));
            anyhow::bail!("{} cannot boot: {}\n{e}", cell.id(), r.outcome);
        }
    };
    let gdb = gdb_port.map(|port| boot_cell::Gdb {
        port,
        vmlinux: crate::build::kbuild::vmlinux_of(
            &prep.image,
            cell.arch,
            &crate::build::prepare::slots(ctx.cache, cell),
        ),
    });
    boot_cell::interactive(
        &ctx.boot_env(),
        cell,
        &ev,
        &prep.image,
        &prep.initrd,
        prep.choice.accel,
        gdb.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::arch::Arch;

    /// The words a real shell makes of `line` after `cargo xtask`.
    fn words_of(line: &str) -> Vec<String> {
        let rest = line.strip_prefix("cargo xtask ").unwrap();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {rest}"))
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}");
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn a_reproducer_pasted_into_a_shell_runs_that_command_and_nothing_else() {
        let marker = std::env::temp_dir().join("kmatrix-reproducer-ran");
        let _ = std::fs::remove_file(&marker);
        let hostile = format!("a'$(touch {})'@b `id` x", marker.display());
        let cell = Cell {
            kernel: "6.1".into(),
            variant: "my$series".into(),
            arch: Arch::X86_64,
            config: "tiny".into(),
            tests: vec![],
        };
        let flags = format!(" {}", crate::util::shell_line(["--lore", hostile.as_str()]));
        let dir = Path::new("/tmp/out dir/it's");
        let (xtask, boot) = reproducers(&cell, Some("my matrix.toml"), &flags, dir);
        assert_eq!(
            words_of(&xtask),
            [
                "matrix",
                "--matrix",
                "my matrix.toml",
                "--lore",
                &hostile,
                "--cell",
                "6.1/my$series/x86_64/tiny",
                "--out",
                "/tmp/out dir/it's",
            ]
        );
        assert_eq!(
            words_of(&boot),
            [
                "boot",
                "--matrix",
                "my matrix.toml",
                "--lore",
                &hostile,
                "6.1/my$series/x86_64/tiny"
            ]
        );
        assert!(
            !marker.exists(),
            "the reproducer ran a command substitution"
        );
        // Plain words stay plain.
        let plain = Cell {
            variant: "base".into(),
            ..cell
        };
        let (xtask, _) = reproducers(&plain, Some("matrix.toml"), "", Path::new("/r/1"));
        assert_eq!(
            xtask,
            "cargo xtask matrix --cell 6.1/base/x86_64/tiny --out /r/1"
        );
    }
}
