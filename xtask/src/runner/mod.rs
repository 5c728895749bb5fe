//! The cell runner: source -> config -> build -> rootfs -> boot -> classify,
//! one cell at a time (`run_cell`), with the retry policy beside it
//! (`run_cell_with_retries`). Every failure becomes the cell's outcome with
//! its evidence; only bugs in the harness itself return Err, and even those
//! become an `infra-error` cell. Progress goes out as events (events.rs).
//!
//! Drivers (matrix today; bisect and sweep next) call these functions and
//! decide what to run; this module decides nothing about which cells.

pub mod events;

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::analyze::classify::{self, BootInput, QemuEnd};
use crate::boot::accel::{self, Choice};
use crate::boot::qemu::{self, Accel};
use crate::build::guest::{self, CompileOutcome, Program};
use crate::build::kbuild::{self, BuildOutcome, ConfigOutcome, ConfigRequest};
use crate::build::source::{self, Base, Series, Trees};
use crate::host::cache::Cache;
use crate::plan::matrix::{Cell, Matrix, TestKind};
use crate::schema::*;
use events::{CellEvents, Phase, Sink};

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
    /// The matrix file as given on the command line, for reproducers.
    pub matrix_path: Option<String>,
    accel: accel::Chooser,
    trees: RefCell<HashMap<String, Rc<Trees>>>,
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
    ) -> Ctx<'a> {
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        let accel = accel::Chooser::new(cache.dir(&["probe"]));
        Ctx {
            matrix,
            repo_root,
            cache,
            run_dir,
            jobs,
            extra_cmdline: vec![],
            cell_timeout_s: None,
            boots: None,
            matrix_path: None,
            accel,
            trees: Default::default(),
        }
    }

    fn trees(&self, kernel: &str, log: &mut dyn FnMut(&str)) -> Result<Rc<Trees>> {
        if let Some(t) = self.trees.borrow().get(kernel) {
            return Ok(t.clone());
        }
        let spec = self.matrix.kernel[kernel].source.get_ref();
        let base: Base = source::prepare_base(spec, self.cache, log)?;
        let t = Rc::new(Trees::open(&base, kernel, self.cache, log)?);
        self.trees
            .borrow_mut()
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
    CellResult {
        reproduce: Reproduce {
            xtask: format!(
                "cargo xtask matrix{matrix} --cell {} --out {}",
                cell.id(),
                ctx.run_dir.display()
            ),
            boot: format!("cargo xtask boot{matrix} {}", cell.id()),
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
    let series = if variant == "base" {
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
    let started = Instant::now();
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let dir = ctx.cell_dir(cell);
    let _ = std::fs::create_dir_all(&dir);
    let mut r = match run_phases(ctx, cell, &ev, &dir) {
        Ok(r) => r,
        Err(e) => failed(
            new_result(cell, ctx),
            Outcome::InfraError,
            Evidence::new(
                EvidenceKind::Harness,
                "harness error",
                format!("{e:#}"),
                None,
            ),
        ),
    };
    r.timings.total_s = started.elapsed().as_secs_f64();
    let (ok, mismatches) = crate::plan::expect::check(&r, &ctx.matrix.expectations(cell));
    r.as_expected = ok;
    r.mismatches = mismatches;
    if let Some(why) = crate::plan::expect::known_crash(&r, &ctx.matrix.known_crashes(cell)) {
        ev.note(&why);
        r.as_expected = true;
        r.mismatches.clear();
        r.evidence.insert(
            0,
            Evidence::new(EvidenceKind::Known, why, String::new(), None),
        );
    }
    r
}

/// Only outcomes a reboot could change are worth a retry.
pub fn retryable(o: Outcome) -> bool {
    matches!(o, Outcome::Fail | Outcome::Crash | Outcome::Timeout)
}

/// `run_cell`, re-run up to `retries` times while it is not as expected
/// and a reboot could change that. Passing on a retry is `flaky`, with the
/// failed attempt's logs kept beside (`<cell>.attemptN/`) as evidence.
pub fn run_cell_with_retries(ctx: &Ctx, cell: &Cell, retries: u32, sink: &dyn Sink) -> CellResult {
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let mut r = run_cell(ctx, cell, sink);
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
    /// Tests not run at all (their Kconfig symbol is absent), as results.
    skipped: Vec<TestResult>,
}

/// Source, config, build and rootfs. Err(result): a recorded failure.
fn prepare(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
) -> Result<std::result::Result<Prepared, CellResult>> {
    let mut r = new_result(cell, ctx);
    // --- source: the variant's commit, and the one the selftests come from.
    let t = Instant::now();
    ev.phase(
        Phase::Source,
        &format!("{} + {}", cell.kernel, cell.variant),
    );
    let trees = ctx.trees(&cell.kernel, &mut |s| ev.detail(s))?;
    let commit = match variant_commit(ctx, ev, &trees, &cell.variant)? {
        Ok(c) => c,
        Err((patch, detail)) => {
            return Ok(Err(failed(
                r,
                Outcome::ApplyError,
                Evidence::new(
                    EvidenceKind::Host,
                    format!("patch {} does not apply", patch.display()),
                    detail,
                    Some(patch),
                ),
            )));
        }
    };
    let kernel_cfg = &ctx.matrix.kernel[&cell.kernel];
    let test_commit = match kernel_cfg
        .selftests_from
        .as_ref()
        .map(|s| s.get_ref().as_str())
    {
        Some(v) if v != cell.variant => match variant_commit(ctx, ev, &trees, v)? {
            Ok(c) => c,
            Err((patch, detail)) => {
                let what = format!(
                    "selftests_from = {v}: patch {} does not apply",
                    patch.display()
                );
                return Ok(Err(failed(
                    r,
                    Outcome::ApplyError,
                    Evidence::new(EvidenceKind::Host, what, detail, Some(patch)),
                )));
            }
        },
        _ => commit.clone(),
    };
    // The build tree is switched to this commit only when something is
    // built from it (a config or a kernel not in the cache).
    let tree = trees.build.clone();
    let switched = std::cell::Cell::new(false);
    let checkout = || -> Result<()> {
        if !switched.get() {
            trees.checkout_build(&commit)?;
            switched.set(true);
        }
        Ok(())
    };
    let kernel_id = source::kernel_tree_id(&trees.repo, &commit)?;
    r.timings.source_s = t.elapsed().as_secs_f64();

    // --- config
    let t = Instant::now();
    ev.phase(Phase::Config, &cell.config);
    let cspec = &ctx.matrix.config[&cell.config];
    let mut req = ConfigRequest {
        base_target: cspec.base.clone(),
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
            if let Some(text) = source::read_at(&trees.repo, &commit, &rel) {
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
    let config_log = dir.join("config.log");
    r.logs.config = Some(config_log.clone());
    let config = match kbuild::configure(
        ctx.cache,
        &tree,
        &checkout,
        &kernel_id,
        cell.arch,
        &req,
        &config_log,
    ) {
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
            return Ok(Err(failed(
                r,
                Outcome::ConfigError,
                Evidence::new(EvidenceKind::Host, what, lines.join("\n"), Some(config)),
            )));
        }
        Err(e) => {
            return Ok(Err(failed(
                r,
                Outcome::ConfigError,
                Evidence::new(
                    EvidenceKind::Host,
                    "kernel configuration failed",
                    format!("{e:#}"),
                    Some(config_log),
                ),
            )))
        }
    };
    let _ = std::fs::copy(&config, dir.join("config"));
    // --- what the tests are about (`needs`): a symbol the tree lacks
    // skips the test (or program); one it has but left off is an error.
    let final_config = std::fs::read_to_string(&config).unwrap_or_default();
    let mut absent: Vec<String> = Vec::new();
    let mut skipped: Vec<TestResult> = Vec::new();
    for tname in &cell.tests {
        let spec = &ctx.matrix.test[tname];
        for sym in spec
            .needs
            .iter()
            .chain(spec.programs.iter().flat_map(|p| &p.needs))
        {
            if absent.contains(sym) || final_config.lines().any(|l| l.trim() == format!("{sym}=y"))
            {
                continue;
            }
            if source::kconfig_defines(&trees.repo, &commit, sym)? {
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
                return Ok(Err(failed(
                    r,
                    Outcome::ConfigError,
                    Evidence::new(EvidenceKind::Host, what, excerpt, Some(config)),
                )));
            }
            absent.push(sym.clone());
        }
        if let Some(sym) = spec.needs.iter().find(|s| absent.contains(s)) {
            ev.note(&format!("test {tname}: skipped, no {sym} in this kernel"));
            skipped.push(TestResult {
                name: tname.clone(),
                outcome: Outcome::Skip,
                reason: Some(format!("no {sym} in this kernel ({})", cell.kernel)),
                duration_s: None,
                cases: vec![],
                failed_by_cases: false,
            });
        }
    }
    r.timings.config_s = t.elapsed().as_secs_f64();

    // --- build: one O= dir per kernel/arch/config, shared by the variants.
    let t = Instant::now();
    ev.phase(
        Phase::Build,
        &format!("{} {}", cell.arch, cell.arch.info().image_target),
    );
    let job = kbuild::BuildJob {
        cache: ctx.cache,
        tree: &tree,
        checkout: &checkout,
        kernel_id: &kernel_id,
        arch: cell.arch,
        config: &config,
        build_dir: ctx
            .cache
            .dir(&["build", &cell.kernel, cell.arch.name(), &cell.config]),
        log: dir.join("build.log"),
    };
    let mut on_line = |l: &str| ev.detail(l.trim());
    let mut warn = |w: &str| ev.note(w);
    let built = match kbuild::build(&job, ctx.jobs, &mut on_line, &mut warn)? {
        BuildOutcome::Ok(b) => b,
        BuildOutcome::Failed {
            log,
            excerpt,
            make_cmd,
        } => {
            r.reproduce.make = reproduce_make(&trees, &commit, make_cmd);
            r.logs.build = Some(log.clone());
            return Ok(Err(failed(
                r,
                Outcome::BuildError,
                Evidence::new(
                    EvidenceKind::Host,
                    "kernel build failed",
                    excerpt,
                    Some(log),
                ),
            )));
        }
    };
    r.build_key = built.key.clone();
    r.reproduce.make = reproduce_make(&trees, &commit, built.make_cmd.clone());
    r.logs.build = Some(built.log.clone());
    r.timings.build_s = t.elapsed().as_secs_f64();
    r.timings.build_cached = built.cached;
    r.timings.build_incremental = built.incremental;
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

    // --- rootfs: guest programs from the selftests' tree, and the initramfs.
    let t = Instant::now();
    ev.phase(Phase::Rootfs, "guest programs + initramfs");
    let test_tree = trees.checkout_work(&test_commit)?.to_path_buf();
    let uapi_id = source::uapi_id(&trees.repo, &test_commit, cell.arch.name())?;
    let busybox = crate::host::setup::busybox(cell.arch, ctx.cache)?;
    let initrd = dir.join("initramfs.cpio.gz");
    // The accelerator decides the test timeouts' scale. A probe, when one
    // runs, boots this cell's kernel on an initramfs without tests.
    let probe_initrd = dir.join("probe-initramfs.cpio.gz");
    let choice = ctx.accel.choose(cell.arch, || {
        std::fs::write(
            &probe_initrd,
            guest::initramfs(&ctx.repo_root, &busybox, &[], 1)?,
        )?;
        Ok(guest_for(
            ctx,
            cell,
            &built.image,
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
    let job = guest::CompileJob {
        cache: ctx.cache,
        repo_root: &ctx.repo_root,
        arch: cell.arch,
        tree: &test_tree,
        uapi_id: &uapi_id,
        absent: &absent,
    };
    let mut programs: Vec<Program> = Vec::new();
    for tname in cell
        .tests
        .iter()
        .filter(|t| !skipped.iter().any(|s| &s.name == *t))
    {
        match guest::compile(&job, tname, &ctx.matrix.test[tname])? {
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
                return Ok(Err(failed(
                    r,
                    Outcome::BuildError,
                    Evidence::new(
                        EvidenceKind::Host,
                        format!("guest program for test {test} failed to compile"),
                        excerpt,
                        None,
                    ),
                )));
            }
        }
    }
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
    Ok(Ok(Prepared {
        r,
        image: built.image,
        initrd,
        choice,
        programs,
        busybox,
        skipped,
    }))
}

/// The reproducer for a build: the tree must be at the variant's commit.
fn reproduce_make(trees: &Trees, commit: &str, make_cmd: Vec<String>) -> Vec<String> {
    let mut v = vec![format!(
        "git -C {} checkout --detach {commit}",
        trees.build.display()
    )];
    v.push(make_cmd.join(" "));
    v
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

fn run_phases(ctx: &Ctx, cell: &Cell, ev: &CellEvents, dir: &Path) -> Result<CellResult> {
    let Prepared {
        mut r,
        image,
        initrd,
        choice,
        programs,
        busybox,
        skipped,
    } = match prepare(ctx, cell, ev, dir)? {
        Ok(x) => x,
        Err(r) => return Ok(r),
    };
    // --- boot + tests, `boots` times: repeat boots pool benchmark samples
    // and expose boot-to-boot spread; a test must pass in every boot.
    r.accel = choice.accel.qemu_arg();
    r.accel_reason = Some(choice.why.clone());
    let boots = ctx.boots.unwrap_or(ctx.matrix.run.boots).max(1);
    let pre_boot = r.clone();
    let mut accel = choice.accel;
    let mut r = boot_once(
        ctx,
        cell,
        ev,
        dir,
        pre_boot.clone(),
        &image,
        &initrd,
        &programs,
        &accel,
        1,
        boots,
    )?;
    // QEMU died under KVM before the guest said anything: KVM on this host
    // does not run what the cells run. Boot again under TCG, for this cell
    // and the rest of the run, and say so.
    if accel == Accel::Kvm && r.1.is_some() {
        let why = r.1.clone().unwrap_or_default();
        let c = ctx.accel.give_up(cell.arch, &why);
        ev.note(&format!(
            "KVM given up for {}: {why}; booting again under {}",
            cell.arch,
            c.accel.qemu_arg()
        ));
        let first = r.0;
        accel = c.accel.clone();
        // The tests' timeouts were scaled for KVM: rewrite for TCG.
        std::fs::write(
            &initrd,
            guest::initramfs(
                &ctx.repo_root,
                &busybox,
                &programs,
                guest::timeout_scale(&accel),
            )?,
        )?;
        let mut again = pre_boot.clone();
        again.accel = accel.qemu_arg();
        again.accel_reason = Some(c.why.clone());
        again.kvm_given_up = Some(why.clone());
        again.evidence.push(Evidence::new(
            EvidenceKind::Accel,
            format!(
                "KVM given up: {why}; the cell was booted again under {}",
                accel.qemu_arg()
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
        r = boot_once(
            ctx, cell, ev, dir, again, &image, &initrd, &programs, &accel, 1, boots,
        )?;
    }
    let mut r = r.0;
    for i in 2..=boots {
        // A kernel that crashed or hung is not worth more boots.
        if !matches!(r.outcome, Outcome::Pass | Outcome::Fail)
            || crate::host::signals::interrupted()
        {
            break;
        }
        let (next, _) = boot_once(
            ctx,
            cell,
            ev,
            dir,
            pre_boot.clone(),
            &image,
            &initrd,
            &programs,
            &accel,
            i,
            boots,
        )?;
        classify::merge_boot(&mut r, next, i);
    }
    r.tests.extend(skipped);
    Ok(r)
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
    let bin = qemu::binary(cell.arch);
    let args = qemu::args(&g);
    r.reproduce.qemu = Some(qemu::shell_line(&bin, &args));
    r.logs.console = Some(console_log.clone());
    r.logs.results = Some(results_log.clone());
    let budget = Duration::from_secs(ctx.cell_timeout_s.unwrap_or(ctx.matrix.run.cell_timeout_s));
    let t = Instant::now();
    let exit = qemu::run(&bin, &args, &console_log, budget, |line| {
        let l = crate::analyze::console::strip_timestamp(line);
        if let Some(rest) = l.strip_prefix("kmatrix: test ") {
            ev.phase(Phase::Tests, rest);
        } else {
            ev.detail(l);
        }
    });
    r.timings.boot_s = t.elapsed().as_secs_f64();
    let exit = match exit {
        Ok(e) => e,
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
        console_cap: qemu::console_cap(),
        stderr: exit.stderr.clone(),
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
    // Under KVM, QEMU dying (or hanging without a word) before the guest's
    // first report is KVM's failure on this host, not the kernel's.
    let kvm_failed = (*accel == Accel::Kvm && !c.guest_reported)
        .then(|| match &c.qemu_failure {
            Some(f) => Some(format!(
                "{f} under -accel kvm before the guest's first report: {}",
                first_line(&exit.stderr)
            )),
            None if exit.timed_out && console_text.trim().is_empty() => {
                Some("no console output at all under -accel kvm within the cell budget".into())
            }
            None => None,
        })
        .flatten();
    r.outcome = c.outcome;
    r.tests = c.tests;
    r.metrics = c.metrics;
    r.evidence.extend(c.evidence);
    r.timings.guest_s = c.guest_s;
    r.guest = c.guest;
    Ok((r, kvm_failed))
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
    let bin = qemu::binary(cell.arch);
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
