//! The cell runner: source -> config -> build -> rootfs -> boot -> classify,
//! one cell at a time (`run_cell`), with the retry policy beside it
//! (`run_cell_with_retries`). Every failure becomes the cell's outcome with
//! its evidence; only bugs in the harness itself return Err, and even those
//! become an `infra-error` cell. Progress goes out as events (events.rs).
//!
//! A cell can also be run in steps: `start_cell` (everything up to the
//! boots), `CellRun::boot_next` (one boot, merged), `CellRun::finish`
//! (the result, checked), so a driver can hold several prepared cells and
//! interleave their boots (`schedule.rs` says which boots next).
//!
//! Drivers (matrix, bisect, sweep) call these functions and decide what to
//! run; this module decides nothing about which cells.

pub mod driver;
pub mod policy;
pub mod schedule;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::analyze::classify::{self, BootInput, QemuEnd};
use crate::boot::accel::{self, Choice};
use crate::boot::qemu;
use crate::build::guest::{self, CompileOutcome, Program};
use crate::build::kbuild::{self, BuildOutcome, ConfigOutcome, ConfigRequest};
use crate::build::slots::Slots;
use crate::build::source::{self, Base, Series, Trees};
use crate::host::cache::Cache;
use crate::host::events::{CellEvents, Phase, Sink};
use crate::kinds;
use crate::plan::arch::Accel;
use crate::plan::matrix::{Cell, Matrix, TestKind};
use crate::schema::*;

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
    /// How guests run on this host (pinning, keep-busy, accelerator, ...).
    pub policy: policy::Policy,
    accel: accel::Chooser,
    trees: std::sync::Mutex<HashMap<String, Arc<Trees>>>,
    /// Boots run so far by this driver (BootRecord::seq).
    boot_seq: std::sync::atomic::AtomicU32,
}

/// Where one boot runs: its share of the host's CPUs when it runs beside
/// others (`--jobs`), the cells booting at the same time, and what QEMU's
/// threads got (qemu::Exit::pinned_vcpus, busy_cpus).
#[derive(Debug, Default, Clone)]
pub struct BootSlot {
    /// Host CPUs for this guest's vCPUs; None: every CPU xtask may use.
    pub cpus: Option<Vec<usize>>,
    /// The cells booting at the same time (BootRecord::beside).
    pub beside: Vec<String>,
    placement: (usize, usize),
}

/// The metric declarations of the matrix, as test kinds see them.
struct Decls<'a>(&'a Matrix);

impl crate::kinds::MetricDecls for Decls<'_> {
    fn target_ci_pct(&self, metric: &str) -> Option<f64> {
        self.0.metric_decl(metric).and_then(|d| d.target_ci_pct)
    }
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

    fn trees(&self, kernel: &str, log: &mut dyn FnMut(&str)) -> Result<Arc<Trees>> {
        if let Some(t) = self.trees.lock().unwrap().get(kernel) {
            return Ok(t.clone());
        }
        let spec = self.matrix.kernel[kernel].source.get_ref();
        let base: Base = source::prepare_base(spec, self.cache, log)?;
        let t = Arc::new(Trees::open(&base, kernel, self.cache, log)?);
        self.trees
            .lock()
            .unwrap()
            .insert(kernel.to_string(), t.clone());
        Ok(t)
    }

    fn series(&self, name: &str) -> Result<Series> {
        let spec = &self.matrix.series[name];
        Series::load_prefix(name, &self.repo_root.join(&spec.dir), spec.take)
    }

    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.run_dir
            .join("cells")
            .join(cell.id().replace('/', "__"))
    }
}

fn failed(mut r: CellResult, outcome: Outcome, e: Evidence) -> CellResult {
    r.outcome = outcome;
    r.evidence.push(e);
    r
}

fn new_result(cell: &Cell, ctx: &Ctx) -> CellResult {
    let matrix = match ctx.matrix_path.as_deref() {
        Some(p) if p != "matrix.toml" => format!(" --matrix {p}"),
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
    CellResult {
        reproduce: Reproduce {
            xtask: format!(
                "cargo xtask matrix{matrix}{aa} --cell {} --out {}",
                cell.id(),
                ctx.run_dir.display()
            ),
            boot: format!("cargo xtask boot{matrix} {boot_id}"),
            ..Default::default()
        },
        ..CellResult::blank(&cell.id(), Outcome::InfraError)
    }
}

/// The commit of a variant (base or a series); Err(result): apply-error.
fn variant_commit(
    ctx: &Ctx,
    ev: &CellEvents,
    trees: &Trees,
    variant: &str,
) -> Result<std::result::Result<String, (PathBuf, String)>> {
    let series = if crate::plan::matrix::built_as(variant) == "base" {
        None
    } else {
        Some(ctx.series(variant)?)
    };
    Ok(trees
        .variant_commit(series.as_ref(), &mut |s| ev.detail(s))?
        .map_err(|e| (e.patch, e.detail)))
}

/// Runs one cell (all its boots) and checks it against its expectations.
pub fn run_cell(ctx: &Ctx, cell: &Cell, sink: &dyn Sink) -> CellResult {
    let mut c = start_cell(ctx, cell, sink);
    while c.wants_boot() {
        c.boot_next(ctx, sink);
    }
    c.finish(ctx)
}

/// A cell between `start_cell` and `finish`: prepared (or already failed),
/// with the boots it has had so far. A driver may hold several and boot
/// them in any order (`matrix` interleaves compared cells); `run_cell`
/// boots one to its end.
pub struct CellRun<'c> {
    cell: &'c Cell,
    dir: PathBuf,
    /// Time spent on this cell (prepare and its own boots), not the wall
    /// time since it started: other cells' boots may run in between.
    busy: Duration,
    state: State,
}

enum State {
    /// Failed before or during its boots: the result is final.
    Done(Box<CellResult>),
    Booting(Box<Booting>),
}

struct Booting {
    prep: Prepared,
    /// The result as it stands before any boot: each boot starts from it.
    pre_boot: CellResult,
    accel: Accel,
    boots: u32,
    /// Boots merged into `merged` so far.
    booted: u32,
    merged: Option<CellResult>,
    records: Vec<BootRecord>,
    /// Where the next boot runs.
    slot: BootSlot,
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
    let mut r = new_result(cell, ctx);
    let t = Instant::now();
    let src = match source_phase(ctx, cell, &ev) {
        Ok(s) => s,
        Err(Stop::Cell(o, e)) => return Ok((failed(r, o, e), None)),
        Err(Stop::Harness(e)) => return Err(e),
    };
    r.timings.source_s = t.elapsed().as_secs_f64();
    let mut built = BuiltOnly {
        trees: src.trees.clone(),
        commit: src.commit.clone(),
        slots: build_slots(ctx, cell),
        config: None,
    };
    let t = Instant::now();
    let rest = config_phase(ctx, cell, &ev, &dir, &src, &mut r).and_then(|config| {
        built.config = Some(config.clone());
        r.timings.config_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let b = build_phase(ctx, cell, &ev, &dir, &src, &config, &mut r);
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

/// Source, config, build and rootfs of a cell; no boot yet.
pub fn start_cell<'c>(ctx: &Ctx, cell: &'c Cell, sink: &dyn Sink) -> CellRun<'c> {
    let started = Instant::now();
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let dir = ctx.cell_dir(cell);
    let _ = std::fs::create_dir_all(&dir);
    let state = match prepare(ctx, cell, &ev, &dir) {
        Ok(Ok(prep)) => {
            let mut pre_boot = prep.r.clone();
            pre_boot.accel = prep.choice.accel.qemu_arg();
            pre_boot.accel_reason = Some(prep.choice.why.clone());
            State::Booting(Box::new(Booting {
                accel: prep.choice.accel.clone(),
                prep,
                pre_boot,
                boots: ctx
                    .matrix
                    .cell_boots(cell, ctx.boots.unwrap_or(ctx.matrix.run.boots)),
                booted: 0,
                merged: None,
                records: vec![],
                slot: BootSlot::default(),
            }))
        }
        Ok(Err(r)) => State::Done(Box::new(r)),
        Err(e) => State::Done(Box::new(harness_error(cell, ctx, &e))),
    };
    CellRun {
        cell,
        dir,
        busy: started.elapsed(),
        state,
    }
}

fn harness_error(cell: &Cell, ctx: &Ctx, e: &anyhow::Error) -> CellResult {
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

impl CellRun<'_> {
    /// Boots merged so far.
    pub fn booted(&self) -> u32 {
        match &self.state {
            State::Done(_) => 0,
            State::Booting(b) => b.booted,
        }
    }

    /// Whether another boot is due: boots remain, and the kernel neither
    /// crashed nor hung (such a kernel is not worth more boots).
    pub fn wants_boot(&self) -> bool {
        match &self.state {
            State::Done(_) => false,
            State::Booting(b) => {
                b.booted < b.boots
                    && b.merged
                        .as_ref()
                        .is_none_or(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
                    && !crate::host::signals::interrupted()
            }
        }
    }

    /// The cell's boots merged so far, with their boot records (None
    /// before its first boot, or once it failed for good): what a
    /// comparison can already be made from, paired boot by boot as the
    /// finished cell's will be.
    pub fn so_far(&self) -> Option<CellResult> {
        match &self.state {
            State::Done(_) => None,
            State::Booting(b) => b.merged.as_ref().map(|m| {
                let mut r = m.clone();
                r.boots = b.records.clone();
                r
            }),
        }
    }

    /// Whether `more_boots` could add a boot: booted fewer than `max` times,
    /// and every boot so far ended with the kernel alive.
    pub fn may_boot_more(&self, max: u32) -> bool {
        match &self.state {
            State::Booting(b) => {
                b.booted < max
                    && b.merged
                        .as_ref()
                        .is_some_and(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
            }
            State::Done(_) => false,
        }
    }

    /// Plans `n` more boots, up to `max` in all, for a cell whose kernel
    /// neither crashed nor hung; returns the number of boots it now plans
    /// (0 when none were added).
    pub fn more_boots(&mut self, n: u32, max: u32) -> u32 {
        if !self.may_boot_more(max) {
            return 0;
        }
        match &mut self.state {
            State::Booting(b) => {
                let before = b.boots;
                b.boots = (b.boots.max(b.booted) + n).min(max);
                if b.boots > before {
                    b.boots
                } else {
                    0
                }
            }
            _ => 0,
        }
    }

    /// Runs the next boot and merges it; a harness error ends the cell as
    /// `infra-error`.
    pub fn boot_next(&mut self, ctx: &Ctx, sink: &dyn Sink) {
        self.boot_next_in(ctx, sink, BootSlot::default());
    }

    /// `boot_next` in `slot`: on its CPUs, beside its other cells.
    pub fn boot_next_in(&mut self, ctx: &Ctx, sink: &dyn Sink, slot: BootSlot) {
        if let State::Booting(b) = &mut self.state {
            b.slot = slot;
        }
        let t = Instant::now();
        let id = self.cell.id();
        let ev = CellEvents { cell: &id, sink };
        if let State::Booting(b) = &mut self.state {
            if let Err(e) = boot_step(ctx, self.cell, &ev, &self.dir, b) {
                self.state = State::Done(Box::new(harness_error(self.cell, ctx, &e)));
            }
        }
        self.busy += t.elapsed();
    }

    /// The cell's result: its boots merged, checked against its
    /// expectations.
    pub fn finish(self, ctx: &Ctx) -> CellResult {
        let mut r = match self.state {
            State::Done(r) => *r,
            State::Booting(b) => {
                let Booting {
                    prep,
                    merged,
                    pre_boot,
                    records,
                    ..
                } = *b;
                let mut r = merged.unwrap_or_else(|| {
                    failed(
                        pre_boot,
                        Outcome::InfraError,
                        Evidence::new(
                            EvidenceKind::Harness,
                            "never booted (interrupted)",
                            String::new(),
                            None,
                        ),
                    )
                });
                r.boots = records;
                // Tests settled before the boots never ran: added once,
                // after them (merge_boot never sees them). A failed one (a
                // perf that did not build) fails a cell that passed.
                if r.outcome == Outcome::Pass
                    && prep.settled.iter().any(|t| t.outcome == Outcome::Fail)
                {
                    r.outcome = Outcome::Fail;
                }
                r.tests.extend(prep.settled);
                r
            }
        };
        r.timings.total_s = self.busy.as_secs_f64();
        check_expected(ctx, self.cell, &mut r);
        r
    }

    /// Whether the boots so far are as expected, with the mismatches:
    /// None before the first boot, or once the cell is finished.
    pub fn expected_so_far(&self, ctx: &Ctx) -> Option<(bool, Vec<String>)> {
        let State::Booting(b) = &self.state else {
            return None;
        };
        let mut r = b.merged.clone()?;
        r.tests.extend(b.prep.settled.iter().cloned());
        check_expected(ctx, self.cell, &mut r);
        Some((r.as_expected, r.mismatches))
    }
}

/// Checks a cell's result against its expectations and known crashes.
fn check_expected(ctx: &Ctx, cell: &Cell, r: &mut CellResult) {
    let (ok, mismatches) = crate::plan::expect::check(r, &ctx.matrix.expectations(cell));
    r.as_expected = ok;
    r.mismatches = mismatches;
    if let Some(why) = crate::plan::expect::known_crash(r, &ctx.matrix.known_crashes(cell)) {
        r.as_expected = true;
        r.mismatches.clear();
        r.evidence.insert(
            0,
            Evidence::new(EvidenceKind::Known, why, String::new(), None),
        );
    }
}

/// Only outcomes a reboot could change are worth a retry.
pub fn retryable(o: Outcome) -> bool {
    matches!(o, Outcome::Fail | Outcome::Crash | Outcome::Timeout)
}

/// `run_cell`, re-run up to `retries` times while it is not as expected
/// and a reboot could change that. Passing on a retry is `flaky`, with the
/// failed attempt's logs kept beside (`<cell>.attemptN/`) as evidence.
pub fn run_cell_with_retries(ctx: &Ctx, cell: &Cell, retries: u32, sink: &dyn Sink) -> CellResult {
    let first = run_cell(ctx, cell, sink);
    retry(ctx, cell, first, retries, sink)
}

/// The retry policy of `run_cell_with_retries` for a cell whose first
/// result `r` is in (however its boots were scheduled): retries run the
/// whole cell again, one at a time.
pub fn retry(
    ctx: &Ctx,
    cell: &Cell,
    mut r: CellResult,
    retries: u32,
    sink: &dyn Sink,
) -> CellResult {
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let mut attempt = 0;
    while !r.as_expected
        && attempt < retries
        && !crate::host::signals::interrupted()
        && retryable(r.outcome)
    {
        attempt += 1;
        ev.note(&format!(
            "not as expected ({}); retry {attempt} of {retries}",
            r.outcome
        ));
        let dir = ctx.cell_dir(cell);
        let kept = PathBuf::from(format!("{}.attempt{attempt}", dir.display()));
        let _ = std::fs::rename(&dir, &kept);
        let again = run_cell(ctx, cell, sink);
        if again.as_expected {
            let first = r;
            r = again;
            r.outcome = Outcome::Flaky;
            r.evidence.insert(
                0,
                Evidence::new(
                    EvidenceKind::Attempt,
                    format!(
                        "flaky: attempt 1 was {} and attempt {} was as expected",
                        first.outcome,
                        attempt + 1
                    ),
                    first.mismatches.join("\n"),
                    Some(kept.join("console.log")),
                ),
            );
        } else {
            r = again;
        }
    }
    r
}

/// Everything a boot needs, once source, config, build and rootfs are done.
struct Prepared {
    r: CellResult,
    image: PathBuf,
    initrd: PathBuf,
    choice: Choice,
    programs: Vec<Program>,
    busybox: PathBuf,
    /// Tests settled before any boot, as results: skipped (their Kconfig
    /// symbol is absent) or failed (a `perf` that did not build).
    settled: Vec<TestResult>,
}

/// Why a phase of `prepare` stopped: a failure of the cell (its outcome
/// and evidence: a patch that does not apply, a config or build error),
/// or of the harness itself (becomes `infra-error`).
enum Stop {
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

type Phased<T> = std::result::Result<T, Stop>;

fn stop<T>(outcome: Outcome, e: Evidence) -> Phased<T> {
    Err(Stop::Cell(outcome, e))
}

/// The source phase's product: the trees of the kernel, the variant's
/// commit and the one the selftests come from.
struct Source {
    trees: Arc<Trees>,
    commit: String,
    test_commit: String,
    /// The commit's kernel tree without tools/ (the build's cache key).
    kernel_id: String,
    /// What the config step reads of the commit (the config's cache key).
    kconfig_id: String,
    /// Whether the build tree is at `commit` yet: it is switched only when
    /// something is built from it (a config or a kernel not in the cache).
    switched: std::cell::Cell<bool>,
}

impl Source {
    fn checkout(&self) -> Result<()> {
        if !self.switched.get() {
            self.trees.checkout_build(&self.commit)?;
            self.switched.set(true);
        }
        Ok(())
    }
}

/// What the tests are about (`needs`): the symbols this kernel lacks and
/// the tests settled before any boot (skipped for a missing symbol; the
/// programs phase adds a `perf` test whose perf did not build).
struct Needs {
    absent: Vec<String>,
    settled: Vec<TestResult>,
}

/// Source, config, needs, build, accelerator, guest programs, initramfs:
/// each phase returns its product or stops the cell. Err(result): a
/// recorded failure.
fn prepare(
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
) -> Phased<Prepared> {
    let t = Instant::now();
    let src = source_phase(ctx, cell, ev)?;
    r.timings.source_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let config = config_phase(ctx, cell, ev, dir, &src, r)?;
    let mut needs = needs_phase(ctx, cell, ev, &src, &config)?;
    r.timings.config_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let built = build_phase(ctx, cell, ev, dir, &src, &config, r)?;
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
    let choice = accel_phase(ctx, cell, ev, dir, &built.image, &busybox)?;
    let programs = programs_phase(ctx, cell, ev, &src, &mut needs, r)?;
    let initrd = dir.join("initramfs.cpio.gz");
    std::fs::write(
        &initrd,
        guest::initramfs(
            &ctx.repo_root,
            &busybox,
            &programs,
            guest::timeout_scale(&choice.accel),
        )?,
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

/// The variant's commit (the series applied), and the selftests' commit
/// (`selftests_from`).
fn source_phase(ctx: &Ctx, cell: &Cell, ev: &CellEvents) -> Phased<Source> {
    ev.phase(
        Phase::Source,
        &format!("{} + {}", cell.kernel, cell.variant),
    );
    let trees = ctx.trees(&cell.kernel, &mut |s| ev.detail(s))?;
    let not_applied = |what: String, patch: PathBuf, detail: String| {
        stop(
            Outcome::ApplyError,
            Evidence::new(EvidenceKind::Host, what, detail, Some(patch)),
        )
    };
    let commit = match variant_commit(ctx, ev, &trees, &cell.variant)? {
        Ok(c) => c,
        Err((patch, detail)) => {
            return not_applied(
                format!("patch {} does not apply", patch.display()),
                patch,
                detail,
            )
        }
    };
    let from = ctx.matrix.kernel[&cell.kernel]
        .selftests_from
        .as_ref()
        .map(|s| s.get_ref().as_str());
    let test_commit = match from {
        Some(v) if v != cell.variant => match variant_commit(ctx, ev, &trees, v)? {
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

/// What the kernel config is made of: the config's base target and
/// fragments, and every option the config's tests ask for.
fn config_request(ctx: &Ctx, cell: &Cell, src: &Source) -> ConfigRequest {
    let cspec = &ctx.matrix.config[&cell.config];
    let mut req = ConfigRequest {
        base_target: cspec.base.clone(),
        llvm: cspec.llvm,
        ..Default::default()
    };
    req.fragments
        .extend(cspec.fragments.iter().map(|f| ctx.repo_root.join(f)));
    for (a, frags) in &cspec.arch_fragments {
        if a.get_ref() == cell.arch.name() {
            req.fragments
                .extend(frags.iter().map(|f| ctx.repo_root.join(f)));
        }
    }
    // Every test of the cell's config shapes the kernel, not only the
    // selected ones: `--test` filters what runs, it never changes what is
    // built.
    for tname in &ctx.matrix.config_tests(&cell.config) {
        let spec = &ctx.matrix.test[tname];
        if matches!(spec.kind, TestKind::Kselftest | TestKind::Programs) {
            let rel = format!("{}/config", spec.dir.as_deref().unwrap_or_default());
            // From the commit, not the build tree: that is switched only
            // when something is built.
            if let Some(text) = source::read_at(&src.trees.repo, &src.commit, &rel) {
                for l in text
                    .lines()
                    .filter(|l| crate::plan::matrix::parse_config_line(l).is_some())
                {
                    req.lines.push((l.trim().to_string(), rel.clone()));
                }
            }
        }
        for l in &spec.config {
            req.lines
                .push((l.get_ref().clone(), format!("matrix.toml [test.{tname}]")));
        }
    }
    req
}

/// The final .config (cached by its inputs), every requested option checked.
fn config_phase(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    src: &Source,
    r: &mut CellResult,
) -> Phased<PathBuf> {
    ev.phase(Phase::Config, &cell.config);
    let req = config_request(ctx, cell, src);
    let config_log = dir.join("config.log");
    r.logs.config = Some(config_log.clone());
    let outcome = kbuild::configure(
        ctx.cache,
        &src.trees.build,
        &|| src.checkout(),
        &src.kconfig_id,
        cell.arch,
        &req,
        &config_log,
    );
    let config = match outcome {
        Ok(ConfigOutcome::Ok { config, cached }) => {
            if cached {
                ev.detail("config: cached");
            }
            config
        }
        Ok(ConfigOutcome::Dropped { missing, config }) => {
            let lines: Vec<String> = missing
                .iter()
                .map(|(l, o, got)| format!("{l} (from {o}): final .config has {got}"))
                .collect();
            let names: Vec<&str> = missing.iter().map(|(l, _, _)| l.as_str()).collect();
            let what = format!(
                "requested options dropped by olddefconfig: {}",
                names.join(", ")
            );
            return stop(
                Outcome::ConfigError,
                Evidence::new(EvidenceKind::Host, what, lines.join("\n"), Some(config)),
            );
        }
        Err(e) => {
            return stop(
                Outcome::ConfigError,
                Evidence::new(
                    EvidenceKind::Host,
                    "kernel configuration failed",
                    format!("{e:#}"),
                    Some(config_log),
                ),
            )
        }
    };
    let _ = std::fs::copy(&config, dir.join("config"));
    Ok(config)
}

/// A symbol a test `needs` that the tree lacks skips the test (or
/// program); one the tree defines but the config left off is an error.
fn needs_phase(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    src: &Source,
    config: &Path,
) -> Phased<Needs> {
    let final_config = std::fs::read_to_string(config).unwrap_or_default();
    let mut needs = Needs {
        absent: Vec::new(),
        settled: Vec::new(),
    };
    for tname in &cell.tests {
        let spec = &ctx.matrix.test[tname];
        for sym in spec
            .needs
            .iter()
            .chain(spec.programs.iter().flat_map(|p| &p.needs))
        {
            if needs.absent.contains(sym)
                || final_config.lines().any(|l| l.trim() == format!("{sym}=y"))
            {
                continue;
            }
            if source::kconfig_defines(&src.trees.repo, &src.commit, sym)? {
                let what = format!(
                    "{sym} (needed by test {tname}) is not set in the final .config, though this tree defines it"
                );
                let excerpt = format!(
                    "{what}: one of its dependencies is off; add them to the test's `config` in matrix.toml.\n{}",
                    final_config
                        .lines()
                        .filter(|l| l.contains(sym.as_str()))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                return stop(
                    Outcome::ConfigError,
                    Evidence::new(
                        EvidenceKind::Host,
                        what,
                        excerpt,
                        Some(config.to_path_buf()),
                    ),
                );
            }
            needs.absent.push(sym.clone());
        }
        if let Some(sym) = spec.needs.iter().find(|s| needs.absent.contains(s)) {
            ev.note(&format!("test {tname}: skipped, no {sym} in this kernel"));
            needs.settled.push(TestResult {
                name: tname.clone(),
                outcome: Outcome::Skip,
                reason: Some(format!("no {sym} in this kernel ({})", cell.kernel)),
                duration_s: None,
                cases: vec![],
                failed_by_cases: false,
            });
        }
    }
    Ok(needs)
}

/// The kernel image: built in one of the kernel/arch/config's O= dirs,
/// shared by the variants (incremental), images cached by content.
fn build_phase(
    ctx: &Ctx,
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
        cache: ctx.cache,
        tree: &src.trees.build,
        checkout: &|| src.checkout(),
        kernel_id: &src.kernel_id,
        arch: cell.arch,
        llvm: ctx.matrix.config[&cell.config].llvm,
        config,
        commit: &src.commit,
        slots: &build_slots(ctx, cell),
        log: dir.join("build.log"),
    };
    let mut on_line = |l: &str| ev.detail(l.trim());
    let mut warn = |w: &str| ev.note(w);
    match kbuild::build(&job, ctx.jobs, &mut on_line, &mut warn)? {
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

/// The accelerator, which also decides the test timeouts' scale. A probe,
/// when one runs, boots this cell's kernel on an initramfs without tests.
fn accel_phase(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    image: &Path,
    busybox: &Path,
) -> Phased<Choice> {
    let probe_initrd = dir.join("probe-initramfs.cpio.gz");
    let choice = ctx.accel.choose(cell.arch, || {
        std::fs::write(
            &probe_initrd,
            guest::initramfs(&ctx.repo_root, busybox, &[], 1)?,
        )?;
        Ok(guest_for(
            ctx,
            cell,
            image,
            &probe_initrd,
            Accel::Kvm,
            None,
            1,
        ))
    });
    let _ = std::fs::remove_file(&probe_initrd);
    ev.note(&format!(
        "accelerator: {} ({})",
        choice.accel.qemu_arg(),
        choice.why
    ));
    Ok(choice)
}

/// The static guest programs of the tests that run, from the selftests'
/// tree (cached by content).
fn programs_phase(
    ctx: &Ctx,
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
        let spec = &ctx.matrix.test[tname];
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
            cache: ctx.cache,
            repo_root: &ctx.repo_root,
            arch: cell.arch,
            tree: &tree,
            uapi_id: &uapi_id,
            absent: &needs.absent,
            jobs: ctx.jobs,
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
                // A perf that does not build (a newer compiler, a host
                // without a library) fails its test; the kernel and the
                // other tests are still worth booting.
                if spec.kind == TestKind::Perf {
                    ev.note(&format!("test {test}: its tools/perf did not build"));
                    r.reproduce.guest.push(cmd.clone());
                    needs.settled.push(TestResult {
                        name: test.clone(),
                        outcome: Outcome::Fail,
                        reason: Some(format!("the tree's tools/perf did not build:\n{excerpt}")),
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
pub fn build_slots(ctx: &Ctx, cell: &Cell) -> Slots {
    Slots::new(
        ctx.cache
            .dir(&["build", &cell.kernel, cell.arch.name(), &cell.config]),
    )
}

fn guest_for(
    ctx: &Ctx,
    cell: &Cell,
    image: &Path,
    initrd: &Path,
    accel: Accel,
    results: Option<PathBuf>,
    boot: u32,
) -> qemu::Guest {
    qemu::Guest {
        arch: cell.arch,
        accel,
        smp: ctx.matrix.config_smp(&cell.config),
        memory_mb: ctx.matrix.run.memory_mb,
        kernel: image.to_path_buf(),
        initrd: initrd.to_path_buf(),
        extra_cmdline: ctx.matrix.config[&cell.config]
            .cmdline
            .iter()
            .chain(&ctx.extra_cmdline)
            .cloned()
            .chain((boot > 1).then(|| format!("kmatrix.boot={boot}")))
            .collect(),
        results,
        interactive: false,
    }
}

/// One boot of a prepared cell, merged into its result. Boot 1 under KVM
/// whose QEMU died before the guest said anything: KVM on this host does
/// not run what the cells run; the boot runs again under TCG, for this cell
/// and the rest of the run, and the cell says so. A cell prepared for KVM
/// after the run gave KVM up for its arch (another cell's boot, with
/// interleaved boots) switches to TCG before its first boot.
fn boot_step(ctx: &Ctx, cell: &Cell, ev: &CellEvents, dir: &Path, b: &mut Booting) -> Result<()> {
    let i = b.booted + 1;
    if i == 1 && b.accel == Accel::Kvm {
        if let Some(c) = ctx
            .accel
            .current(cell.arch)
            .filter(|c| c.accel != Accel::Kvm)
        {
            b.accel = c.accel.clone();
            b.pre_boot.accel = c.accel.qemu_arg();
            b.pre_boot.accel_reason = Some(c.why.clone());
            rewrite_initrd(ctx, &b.prep, &b.accel)?;
        }
    }
    let (mut r, kvm_failed) = timed_boot(ctx, cell, ev, dir, b, b.pre_boot.clone(), i)?;
    if let (1, Accel::Kvm, Some(why)) = (i, &b.accel, kvm_failed) {
        let c = ctx.accel.give_up(cell.arch, &why);
        ev.note(&format!(
            "KVM given up for {}: {why}; booting again under {}",
            cell.arch,
            c.accel.qemu_arg()
        ));
        let first = r;
        b.accel = c.accel.clone();
        // The tests' timeouts were scaled for KVM: rewrite for TCG.
        rewrite_initrd(ctx, &b.prep, &b.accel)?;
        let mut again = b.pre_boot.clone();
        again.accel = b.accel.qemu_arg();
        again.accel_reason = Some(c.why.clone());
        again.kvm_given_up = Some(why.clone());
        again.evidence.push(Evidence::new(
            EvidenceKind::Accel,
            format!(
                "KVM given up: {why}; the cell was booted again under {}",
                b.accel.qemu_arg()
            ),
            first
                .evidence
                .iter()
                .filter(|e| e.kind == EvidenceKind::Qemu)
                .map(|e| e.excerpt.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            first.logs.console.clone().map(|p| keep_as(&p, "kvm")),
        ));
        // Later boots start from `pre_boot` again: merge_boot keeps the
        // first boot's accelerator fields and evidence, once.
        r = timed_boot(ctx, cell, ev, dir, b, again, 1)?.0;
    }
    // Repeat boots pool benchmark samples and expose boot-to-boot spread;
    // a test must pass in every boot.
    match &mut b.merged {
        None => b.merged = Some(r),
        Some(m) => classify::merge_boot(m, r, i),
    }
    b.booted = i;
    Ok(())
}

/// `boot_once`, with its place in the run's order of boots recorded.
fn timed_boot(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    b: &mut Booting,
    pre: CellResult,
    i: u32,
) -> Result<(CellResult, Option<String>)> {
    let seq = ctx
        .boot_seq
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let started = crate::util::timestamp();
    let t = Instant::now();
    b.slot.placement = (0, 0);
    let out = boot_once(
        ctx,
        cell,
        ev,
        dir,
        pre,
        &b.prep.image,
        &b.prep.initrd,
        &b.prep.programs,
        &b.accel,
        i,
        b.boots,
        &mut b.slot,
    )?;
    b.records.push(BootRecord {
        boot: i,
        seq,
        started,
        duration_s: t.elapsed().as_secs_f64(),
        accel: b.accel.qemu_arg(),
        pinned_vcpus: b.slot.placement.0 as u32,
        busy_cpus: b.slot.placement.1 as u32,
        beside: b.slot.beside.clone(),
    });
    Ok(out)
}

fn rewrite_initrd(ctx: &Ctx, prep: &Prepared, accel: &Accel) -> Result<()> {
    std::fs::write(
        &prep.initrd,
        guest::initramfs(
            &ctx.repo_root,
            &prep.busybox,
            &prep.programs,
            guest::timeout_scale(accel),
        )?,
    )?;
    Ok(())
}

/// Renames a boot's log aside (`console.log` -> `console.kvm.log`) so the
/// retry under TCG does not overwrite the evidence; returns the new path.
fn keep_as(p: &Path, tag: &str) -> PathBuf {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    let new = p.with_file_name(name.replacen(".log", &format!(".{tag}.log"), 1));
    let _ = std::fs::rename(p, &new);
    new
}

/// File name for boot `i` of a cell's logs: boot 1 keeps the plain name.
fn boot_file(name: &str, ext: &str, i: u32) -> String {
    if i == 1 {
        format!("{name}.{ext}")
    } else {
        format!("{name}.boot{i}.{ext}")
    }
}

/// One boot. Also returns why KVM failed, when QEMU died under KVM before
/// the guest's first report (the caller falls back to TCG).
#[allow(clippy::too_many_arguments)]
fn boot_once(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    mut r: CellResult,
    image: &Path,
    initrd: &Path,
    programs: &[Program],
    accel: &Accel,
    i: u32,
    boots: u32,
    slot: &mut BootSlot,
) -> Result<(CellResult, Option<String>)> {
    ev.phase(
        Phase::Boot,
        &if boots > 1 {
            format!("{} ({i} of {boots})", accel.qemu_arg())
        } else {
            accel.qemu_arg()
        },
    );
    let console_log = dir.join(boot_file("console", "log", i));
    let results_log = dir.join(boot_file("results", "log", i));
    let _ = std::fs::remove_file(&results_log);
    let g = guest_for(
        ctx,
        cell,
        image,
        initrd,
        accel.clone(),
        Some(results_log.clone()),
        i,
    );
    let bin = qemu::binary(cell.arch, &ctx.policy.launch());
    let args = qemu::args(&g);
    r.reproduce.qemu = Some(qemu::shell_line(&bin, &args));
    r.logs.console = Some(console_log.clone());
    r.logs.results = Some(results_log.clone());
    let budget = Duration::from_secs(ctx.cell_timeout_s.unwrap_or(ctx.matrix.run.cell_timeout_s));
    let t = Instant::now();
    let launch = qemu::Launch {
        cpus: slot.cpus.clone(),
        ..ctx.policy.launch()
    };
    let run = run_qemu(&bin, &args, &console_log, budget, &launch, ev);
    r.timings.boot_s = t.elapsed().as_secs_f64();
    let (exit, beyond_repair) = match run {
        Ok(x) => x,
        Err(e) => {
            let line = qemu::shell_line(&bin, &args);
            return Ok((
                failed(
                    r,
                    Outcome::InfraError,
                    Evidence::new(
                        EvidenceKind::Qemu,
                        format!("could not start {bin}"),
                        format!("{e}\n$ {line}"),
                        None,
                    ),
                ),
                None,
            ));
        }
    };
    slot.placement = (exit.pinned_vcpus, exit.busy_cpus);
    let console_text =
        String::from_utf8_lossy(&std::fs::read(&console_log).unwrap_or_default()).into_owned();
    let results_text =
        String::from_utf8_lossy(&std::fs::read(&results_log).unwrap_or_default()).into_owned();
    let end = QemuEnd {
        status: exit.status,
        signal: exit.signal,
        timed_out: exit.timed_out,
        elapsed_s: exit.elapsed.as_secs_f64(),
        console_truncated: exit.console_truncated,
        console_cap: ctx.policy.console_cap,
        stderr: exit.stderr.clone(),
        stopped_at: beyond_repair
            .filter(|_| exit.stopped)
            .map(|m| m.to_string()),
    };
    // The tests this boot runs: built, and not limited to earlier boots.
    let tests: Vec<(String, TestKind)> = programs
        .iter()
        .filter(|p| p.last_boot == 0 || i <= p.last_boot)
        .map(|p| (p.test.clone(), ctx.matrix.test[&p.test].kind))
        .collect();
    let c = classify::classify(&BootInput {
        tests: &tests,
        decls: &Decls(ctx.matrix),
        exit: &end,
        console: &console_text,
        results: &results_text,
        console_log: &console_log,
    });
    let kvm_failed = kvm_failure(accel, &c, &exit, &console_text);
    r.outcome = c.outcome;
    r.tests = c.tests;
    r.metrics = c.metrics;
    r.evidence.extend(c.evidence);
    r.timings.guest_s = c.guest_s;
    r.guest = c.guest;
    Ok((r, kvm_failed))
}

/// Runs QEMU to its end, the console streamed as progress; QEMU is
/// stopped at a kernel line after which the kernel cannot go on (returned
/// with the exit) rather than left to the tests' timeouts.
fn run_qemu(
    bin: &str,
    args: &[String],
    console_log: &Path,
    budget: Duration,
    launch: &qemu::Launch,
    ev: &CellEvents,
) -> std::io::Result<(qemu::Exit, Option<&'static str>)> {
    let beyond_repair = std::sync::OnceLock::<&'static str>::new();
    let exit = qemu::run_until(bin, args, console_log, budget, launch, |line| {
        let l = crate::analyze::console::strip_timestamp(line);
        if let Some(rest) = l.strip_prefix("kmatrix: test ") {
            ev.phase(Phase::Tests, rest);
        } else {
            ev.detail(l);
        }
        let stop = crate::analyze::console::beyond_repair(l);
        if let Some(m) = stop {
            let _ = beyond_repair.set(m);
        }
        stop.is_some()
    })?;
    Ok((exit, beyond_repair.get().copied()))
}

/// Under KVM, QEMU dying (or hanging without a word) before the guest's
/// first report is KVM's failure on this host, not the kernel's: why, for
/// the fallback to TCG.
fn kvm_failure(
    accel: &Accel,
    c: &classify::Classified,
    exit: &qemu::Exit,
    console_text: &str,
) -> Option<String> {
    if *accel != Accel::Kvm || c.guest_reported {
        return None;
    }
    match &c.qemu_failure {
        Some(f) => Some(format!(
            "{f} under -accel kvm before the guest's first report: {}",
            first_line(&exit.stderr)
        )),
        None if exit.timed_out && console_text.trim().is_empty() => {
            Some("no console output at all under -accel kvm within the cell budget".into())
        }
        None => None,
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(2)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// `cargo xtask boot`: prepare the cell like a test run, then hand the
/// console to the user with a shell instead of running the tests.
pub fn boot_interactive(ctx: &Ctx, cell: &Cell, sink: &dyn Sink) -> Result<()> {
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
    ev.note("booting; Ctrl-A X quits QEMU, `reboot -f` ends the guest");
    let mut g = guest_for(
        ctx,
        cell,
        &prep.image,
        &prep.initrd,
        prep.choice.accel,
        None,
        1,
    );
    g.extra_cmdline.push("kmatrix.shell".into());
    g.interactive = true;
    let bin = qemu::binary(cell.arch, &ctx.policy.launch());
    let args = qemu::args(&g);
    ev.note(&format!("$ {}", qemu::shell_line(&bin, &args)));
    let st = std::process::Command::new(&bin).args(&args).status()?;
    anyhow::ensure!(st.success(), "{bin} exited with {st}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_logs_are_numbered_and_kept_aside() {
        assert_eq!(boot_file("console", "log", 1), "console.log");
        assert_eq!(boot_file("console", "log", 4), "console.boot4.log");
        let d = std::env::temp_dir().join(format!("kmatrix-keep-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("console.log"), "kvm boot").unwrap();
        let kept = keep_as(&d.join("console.log"), "kvm");
        assert_eq!(kept, d.join("console.kvm.log"));
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "kvm boot");
        assert!(!d.join("console.log").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn only_outcomes_a_reboot_could_change_are_retried() {
        for o in [Outcome::Fail, Outcome::Crash, Outcome::Timeout] {
            assert!(retryable(o));
        }
        for o in [
            Outcome::Pass,
            Outcome::BuildError,
            Outcome::ApplyError,
            Outcome::ConfigError,
            Outcome::InfraError,
        ] {
            assert!(!retryable(o));
        }
    }
}
