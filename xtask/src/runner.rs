//! The cell runner: source -> config -> build -> rootfs -> boot -> parse,
//! one cell at a time. Every failure becomes the cell's outcome with its
//! evidence; only bugs in the harness itself return Err.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cache::Cache;
use crate::console::{self, Splat};
use crate::guest::{self, CompileOutcome, Program};
use crate::guestlog::{self, BenchLine};
use crate::kbuild::{self, BuildOutcome, ConfigOutcome, ConfigRequest};
use crate::matrix::{Cell, Matrix, TestKind};
use crate::qemu::{self, Accel};
use crate::results::*;
use crate::source::{self, Base, Series, Tree};
use crate::ui::{CellUi, Ui};

pub struct Ctx<'a> {
    pub matrix: &'a Matrix,
    pub repo_root: PathBuf,
    pub cache: &'a Cache,
    pub run_dir: PathBuf,
    pub ui: &'a Ui,
    pub jobs: usize,
    /// Extra kernel command line (fault injection, debugging).
    pub extra_cmdline: Vec<String>,
    /// Overrides run.cell_timeout_s.
    pub cell_timeout_s: Option<u64>,
    /// Overrides run.boots.
    pub boots: Option<u32>,
    accels: RefCell<HashMap<String, (Accel, String)>>,
    bases: RefCell<HashMap<String, std::rc::Rc<Base>>>,
}

impl<'a> Ctx<'a> {
    pub fn new(matrix: &'a Matrix, repo_root: PathBuf, cache: &'a Cache, run_dir: PathBuf, ui: &'a Ui) -> Ctx<'a> {
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()) + 1;
        Ctx { matrix, repo_root, cache, run_dir, ui, jobs, extra_cmdline: vec![], cell_timeout_s: None, boots: None, accels: Default::default(), bases: Default::default() }
    }

    fn accel(&self, arch: &str) -> (Accel, String) {
        if let Some(a) = self.accels.borrow().get(arch) {
            return a.clone();
        }
        let scratch = self.cache.dir(&["probe"]);
        let _ = std::fs::create_dir_all(&scratch);
        let a = qemu::choose_accel(arch, &scratch);
        self.ui.println(&format!("accelerator for {arch}: {} ({})", a.0.qemu_arg(), a.1));
        self.accels.borrow_mut().insert(arch.to_string(), a.clone());
        a
    }

    fn base(&self, kernel: &str, log: &mut dyn FnMut(&str)) -> Result<std::rc::Rc<Base>> {
        if let Some(b) = self.bases.borrow().get(kernel) {
            return Ok(b.clone());
        }
        let spec = self.matrix.kernel[kernel].source.get_ref();
        let b = std::rc::Rc::new(source::prepare_base(spec, self.cache, log)?);
        self.bases.borrow_mut().insert(kernel.to_string(), b.clone());
        Ok(b)
    }

    fn series(&self, name: &str) -> Result<Series> {
        Series::load(name, &self.repo_root.join(&self.matrix.series[name].dir))
    }

    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.run_dir.join("cells").join(cell.id().replace('/', "__"))
    }
}

/// What a run of `run_cell` produced before it stopped, for the result.
struct Partial {
    r: CellResult,
}

impl Partial {
    fn fail(mut self, outcome: Outcome, what: &str, excerpt: String, path: Option<PathBuf>) -> CellResult {
        self.r.outcome = outcome;
        self.r.evidence.push(Evidence { what: what.to_string(), excerpt, path });
        self.r
    }
}

fn new_result(cell: &Cell, ctx: &Ctx) -> CellResult {
    CellResult {
        reproduce: Reproduce { xtask: format!("cargo xtask matrix --cell {} --out {}", cell.id(), ctx.run_dir.display()), ..Default::default() },
        ..CellResult::blank(&cell.id(), Outcome::InfraError)
    }
}

/// Prepares (or reuses) the variant tree; Err(result) is an apply-error.
fn variant_tree(ctx: &Ctx, cell_ui: &CellUi, kernel: &str, variant: &str) -> Result<std::result::Result<Tree, (PathBuf, String)>> {
    let mut log = |s: &str| cell_ui.detail(s);
    let base = ctx.base(kernel, &mut log)?;
    let series = if variant == "base" { None } else { Some(ctx.series(variant)?) };
    Ok(source::prepare_variant(&base, kernel, variant, series.as_ref(), ctx.cache, &mut log)?.map_err(|e| (e.patch, e.detail)))
}

pub fn run_cell(ctx: &Ctx, cell: &Cell, cell_ui: &CellUi) -> CellResult {
    let started = Instant::now();
    let dir = ctx.cell_dir(cell);
    let _ = std::fs::create_dir_all(&dir);
    let p = Partial { r: new_result(cell, ctx) };
    let mut r = match run_phases(ctx, cell, cell_ui, &dir, p) {
        Ok(r) => r,
        Err(e) => {
            let mut r = new_result(cell, ctx);
            r.outcome = Outcome::InfraError;
            r.evidence.push(Evidence { what: "harness error".into(), excerpt: format!("{e:#}"), path: None });
            r
        }
    };
    r.timings.total_s = started.elapsed().as_secs_f64();
    let (ok, mismatches) = crate::expect::check(&r, &ctx.matrix.expectations(cell));
    r.as_expected = ok;
    r.mismatches = mismatches;
    r
}

/// Everything a boot needs, once source, config, build and rootfs are done.
struct Prepared {
    p: Partial,
    image: PathBuf,
    initrd: PathBuf,
    accel: Accel,
}

/// Source, config, build and rootfs. Err(result): a recorded failure.
fn prepare(ctx: &Ctx, cell: &Cell, ui: &CellUi, dir: &Path, mut p: Partial) -> Result<std::result::Result<Prepared, CellResult>> {
    // --- source
    let t = Instant::now();
    ui.phase("source", &format!("{} + {}", cell.kernel, cell.variant));
    let tree = match variant_tree(ctx, ui, &cell.kernel, &cell.variant)? {
        Ok(t) => t,
        Err((patch, detail)) => {
            return Ok(Err(p.fail(Outcome::ApplyError, &format!("patch {} does not apply", patch.display()), detail, Some(patch))));
        }
    };
    let kernel_cfg = &ctx.matrix.kernel[&cell.kernel];
    let test_tree = match kernel_cfg.selftests_from.as_ref().map(|s| s.get_ref().as_str()) {
        Some(v) if v != cell.variant => match variant_tree(ctx, ui, &cell.kernel, v)? {
            Ok(t) => t,
            Err((patch, detail)) => {
                return Ok(Err(p.fail(Outcome::ApplyError, &format!("selftests_from = {v}: patch {} does not apply", patch.display()), detail, Some(patch))));
            }
        },
        _ => Tree { path: tree.path.clone(), head: tree.head.clone() },
    };
    let kernel_id = source::kernel_tree_id(&tree.path)?;
    let test_kernel_id = source::kernel_tree_id(&test_tree.path)?;
    p.r.timings.source_s = t.elapsed().as_secs_f64();

    // --- config
    let t = Instant::now();
    ui.phase("config", &cell.config);
    let cspec = &ctx.matrix.config[&cell.config];
    let mut req = ConfigRequest { base_target: cspec.base.clone(), ..Default::default() };
    req.fragments.extend(cspec.fragments.iter().map(|f| ctx.repo_root.join(f)));
    for (a, frags) in &cspec.arch_fragments {
        if a.get_ref() == &cell.arch {
            req.fragments.extend(frags.iter().map(|f| ctx.repo_root.join(f)));
        }
    }
    // Every test the matrix lists shapes the kernel, not only the selected
    // ones: `--test` filters what runs, it never changes what is built.
    for tname in ctx.matrix.run.tests.iter().map(|t| t.get_ref()) {
        let spec = &ctx.matrix.test[tname];
        if spec.kind == TestKind::Kselftest {
            let rel = format!("{}/config", spec.dir.as_deref().unwrap());
            if let Ok(text) = std::fs::read_to_string(tree.path.join(&rel)) {
                for l in text.lines().filter(|l| crate::matrix::parse_config_line(l).is_some()) {
                    req.lines.push((l.trim().to_string(), rel.clone()));
                }
            }
        }
        for l in &spec.config {
            req.lines.push((l.get_ref().clone(), format!("matrix.toml [test.{tname}]")));
        }
    }
    let config_log = dir.join("config.log");
    p.r.logs.config = Some(config_log.clone());
    let config = match kbuild::configure(ctx.cache, &tree.path, &kernel_id, &cell.arch, &req, &config_log) {
        Ok(ConfigOutcome::Ok { config, cached }) => {
            if cached {
                ui.detail("config: cached");
            }
            config
        }
        Ok(ConfigOutcome::Dropped { missing, config }) => {
            let lines: Vec<String> = missing.iter().map(|(l, o, got)| format!("{l} (from {o}): final .config has {got}")).collect();
            let names: Vec<&str> = missing.iter().map(|(l, _, _)| l.as_str()).collect();
            return Ok(Err(p.fail(Outcome::ConfigError, &format!("requested options dropped by olddefconfig: {}", names.join(", ")), lines.join("\n"), Some(config))));
        }
        Err(e) => return Ok(Err(p.fail(Outcome::ConfigError, "kernel configuration failed", format!("{e:#}"), Some(config_log)))),
    };
    let _ = std::fs::copy(&config, dir.join("config"));
    p.r.timings.config_s = t.elapsed().as_secs_f64();

    // --- build
    let t = Instant::now();
    ui.phase("build", &format!("{} {}", cell.arch, kbuild::image_target(&cell.arch).0));
    let job = kbuild::BuildJob {
        cache: ctx.cache,
        tree: &tree.path,
        kernel_id: &kernel_id,
        arch: &cell.arch,
        config: &config,
        build_dir: ctx.cache.dir(&["build", &cell.kernel, &cell.variant, &cell.arch, &cell.config]),
    };
    let built = match kbuild::build(&job, ctx.jobs, &mut |l| ui.detail(l.trim()), &mut |w| ui.note(w))? {
        BuildOutcome::Ok(b) => b,
        BuildOutcome::Failed { log, excerpt, make_cmd } => {
            p.r.reproduce.make = make_cmd;
            p.r.logs.build = Some(log.clone());
            return Ok(Err(p.fail(Outcome::BuildError, "kernel build failed", excerpt, Some(log))));
        }
    };
    p.r.build_key = built.key.clone();
    p.r.reproduce.make = built.make_cmd.clone();
    p.r.logs.build = Some(built.log.clone());
    p.r.timings.build_s = t.elapsed().as_secs_f64();
    p.r.timings.build_cached = built.cached;
    if built.cached {
        ui.note(&format!("build: cached kernel {}", built.key));
    }

    // --- rootfs
    let t = Instant::now();
    ui.phase("rootfs", "guest programs + initramfs");
    let accel = ctx.accel(&cell.arch);
    let job = guest::CompileJob {
        cache: ctx.cache,
        repo_root: &ctx.repo_root,
        arch: &cell.arch,
        tree: &test_tree.path,
        tree_kernel_id: &test_kernel_id,
        // kselftest timeouts assume real hardware; emulation is slower.
        scale_timeouts: if accel.0 == Accel::Kvm { 1 } else { 3 },
    };
    let mut programs: Vec<Program> = Vec::new();
    for tname in &cell.tests {
        match guest::compile(&job, tname, &ctx.matrix.test[tname])? {
            CompileOutcome::Ok(prog) => {
                if !prog.compile_cmd.is_empty() {
                    p.r.reproduce.guest.push(prog.compile_cmd.clone());
                }
                programs.push(prog)
            }
            CompileOutcome::Failed { test, cmd, stderr } => {
                let excerpt = format!("$ {cmd}\n{}", kbuild::first_errors(&stderr.lines().map(str::to_string).collect::<Vec<_>>()));
                return Ok(Err(p.fail(Outcome::BuildError, &format!("guest program for test {test} failed to compile"), excerpt, None)));
            }
        }
    }
    let busybox = crate::setup::busybox(&cell.arch, ctx.cache)?;
    let initrd = dir.join("initramfs.cpio.gz");
    std::fs::write(&initrd, guest::initramfs(&ctx.repo_root, &busybox, &programs)?)?;
    p.r.timings.rootfs_s = t.elapsed().as_secs_f64();

    Ok(Ok(Prepared { p, image: built.image, initrd, accel: accel.0 }))
}

fn run_phases(ctx: &Ctx, cell: &Cell, ui: &CellUi, dir: &Path, p: Partial) -> Result<CellResult> {
    let Prepared { mut p, image, initrd, accel } = match prepare(ctx, cell, ui, dir, p)? {
        Ok(x) => x,
        Err(r) => return Ok(r),
    };
    // --- boot + tests, `boots` times: repeat boots pool benchmark samples
    // and expose boot-to-boot spread; a test must pass in every boot.
    p.r.accel = accel.qemu_arg();
    let boots = ctx.boots.unwrap_or(ctx.matrix.run.boots).max(1);
    let pre_boot = p.r.clone();
    let mut r = boot_once(ctx, cell, ui, dir, pre_boot.clone(), &image, &initrd, &accel, 1, boots)?;
    for i in 2..=boots {
        // A kernel that crashed or hung is not worth more boots.
        if !matches!(r.outcome, Outcome::Pass | Outcome::Fail) || crate::signals::interrupted() {
            break;
        }
        let next = boot_once(ctx, cell, ui, dir, pre_boot.clone(), &image, &initrd, &accel, i, boots)?;
        merge_boot(&mut r, next, i);
    }
    Ok(r)
}

/// File name for boot `i` of a cell's logs: boot 1 keeps the plain name.
fn boot_file(name: &str, ext: &str, i: u32) -> String {
    if i == 1 { format!("{name}.{ext}") } else { format!("{name}.boot{i}.{ext}") }
}

#[allow(clippy::too_many_arguments)]
fn boot_once(ctx: &Ctx, cell: &Cell, ui: &CellUi, dir: &Path, mut r: CellResult, image: &Path, initrd: &Path, accel: &Accel, i: u32, boots: u32) -> Result<CellResult> {
    ui.phase("boot", &if boots > 1 { format!("{} ({i} of {boots})", accel.qemu_arg()) } else { accel.qemu_arg() });
    let console_log = dir.join(boot_file("console", "log", i));
    let results_log = dir.join(boot_file("results", "log", i));
    let _ = std::fs::remove_file(&results_log);
    let g = qemu::Guest {
        arch: cell.arch.clone(),
        accel: accel.clone(),
        smp: ctx.matrix.run.smp,
        memory_mb: ctx.matrix.run.memory_mb,
        kernel: image.to_path_buf(),
        initrd: initrd.to_path_buf(),
        extra_cmdline: ctx.extra_cmdline.clone(),
        results: Some(results_log.clone()),
        interactive: false,
    };
    let bin = &qemu::binary(&cell.arch);
    let args = qemu::args(&g);
    r.reproduce.qemu = Some(qemu::shell_line(bin, &args));
    r.logs.console = Some(console_log.clone());
    r.logs.results = Some(results_log.clone());
    let budget = Duration::from_secs(ctx.cell_timeout_s.unwrap_or(ctx.matrix.run.cell_timeout_s));
    let t = Instant::now();
    let exit = qemu::run(bin, &args, &console_log, budget, |line| {
        let l = console::strip_timestamp(line);
        if let Some(rest) = l.strip_prefix("kmatrix: test ") {
            ui.phase("tests", rest);
        } else {
            ui.detail(l);
        }
    });
    r.timings.boot_s = t.elapsed().as_secs_f64();
    let exit = match exit {
        Ok(e) => e,
        Err(e) => {
            let line = qemu::shell_line(bin, &args);
            return Ok(Partial { r }.fail(Outcome::InfraError, &format!("could not start {bin}"), format!("{e}\n$ {line}"), None));
        }
    };
    let console_text = String::from_utf8_lossy(&std::fs::read(&console_log).unwrap_or_default()).into_owned();
    let results_text = String::from_utf8_lossy(&std::fs::read(&results_log).unwrap_or_default()).into_owned();
    Ok(classify(r, ctx, cell, &exit, &console_text, &results_text, &console_log))
}

/// How bad an outcome is when boots disagree: the worst boot speaks for the cell.
fn severity(o: Outcome) -> u8 {
    match o {
        Outcome::Pass => 0,
        Outcome::Skip => 1,
        Outcome::Flaky => 2,
        Outcome::Fail => 3,
        _ => 4,
    }
}

/// Folds boot `i` into the result of the boots before it: metric samples are
/// appended (with `boot_sizes`), a test or case keeps its worst outcome (the
/// reason names the boot), evidence is kept with the boot number, and
/// guest/boot times add up. Logs and the QEMU line stay those of boot 1.
fn merge_boot(r: &mut CellResult, b: CellResult, i: u32) {
    if severity(b.outcome) > severity(r.outcome) {
        r.outcome = b.outcome;
    }
    for mut e in b.evidence {
        e.what = format!("boot {i}: {}", e.what);
        r.evidence.push(e);
    }
    let tag = |reason: Option<String>| Some(format!("boot {i}: {}", reason.unwrap_or_default()).trim_end_matches(": ").to_string());
    for bt in b.tests {
        match r.tests.iter_mut().find(|t| t.name == bt.name) {
            None => r.tests.push(bt),
            Some(t) => {
                if severity(bt.outcome) > severity(t.outcome) {
                    t.outcome = bt.outcome;
                    t.reason = tag(bt.reason.clone());
                    t.failed_by_cases = bt.failed_by_cases;
                }
                t.duration_s = match (t.duration_s, bt.duration_s) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                for bc in bt.cases {
                    match t.cases.iter_mut().find(|c| c.name == bc.name) {
                        None => t.cases.push(bc),
                        Some(c) if severity(bc.outcome) > severity(c.outcome) => {
                            c.outcome = bc.outcome;
                            c.reason = tag(bc.reason);
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    for bm in b.metrics {
        match r.metrics.iter_mut().find(|m| m.name == bm.name) {
            None => r.metrics.push(bm),
            Some(m) => {
                if m.skip.is_some() || bm.skip.is_some() {
                    m.skip = m.skip.take().or(bm.skip);
                    continue;
                }
                // A boot that gave no samples (it crashed first) is no boot
                // of this metric; empty clusters would only confuse stats.
                if bm.samples.is_empty() {
                    continue;
                }
                if m.boot_sizes.is_empty() {
                    m.boot_sizes.push(m.samples.len());
                }
                m.boot_sizes.push(bm.samples.len());
                m.samples.extend(bm.samples);
            }
        }
    }
    r.timings.boot_s += b.timings.boot_s;
    r.timings.guest_s += b.timings.guest_s;
}

/// Turns what the guest left behind into test results and the cell outcome.
fn classify(mut r: CellResult, ctx: &Ctx, cell: &Cell, exit: &qemu::Exit, console_text: &str, results_text: &str, console_log: &Path) -> CellResult {
    let session = guestlog::parse(results_text);
    let splats = console::scan(console_text);
    if let (Some(b), Some(d)) = (session.begin_uptime, session.done_uptime.or_else(|| session.tests.last().and_then(|t| t.end_uptime))) {
        r.timings.guest_s = d - b;
    }
    let fatal: Option<&Splat> = splats.iter().find(|s| s.kind.is_fatal());
    for s in &splats {
        let during = s.during_test.as_deref().map_or("during boot or between tests".to_string(), |t| format!("while test {t} ran"));
        r.evidence.push(Evidence {
            what: format!("{:?} at console line {} {during}: {}", s.kind, s.line, s.headline),
            excerpt: s.excerpt.clone(),
            path: Some(console_log.to_path_buf()),
        });
    }
    if exit.console_truncated {
        r.evidence.push(Evidence { what: format!("console log truncated at {} bytes (guest flooded the console)", qemu::console_cap()), excerpt: String::new(), path: Some(console_log.to_path_buf()) });
    }
    // Test results, in the order the matrix lists them.
    let mut reached_end = true;
    for tname in &cell.tests {
        let spec = &ctx.matrix.test[tname];
        let Some(block) = session.tests.iter().find(|b| &b.name == tname) else {
            let why = if !reached_end || !session.done { "not reached: the guest stopped before this test" } else { "missing from the results channel" };
            r.tests.push(TestResult { name: tname.clone(), outcome: Outcome::Skip, reason: Some(why.into()), duration_s: None, cases: vec![], failed_by_cases: false });
            continue;
        };
        let mut t = TestResult { name: tname.clone(), outcome: Outcome::Pass, reason: None, duration_s: block.duration(), cases: vec![], failed_by_cases: false };
        match spec.kind {
            TestKind::Kselftest => {
                let parsed = crate::ktap::parse(&block.output);
                t.cases = parsed.cases.clone();
                if let Some(why) = parsed.incomplete {
                    t.outcome = Outcome::Fail;
                    t.reason = Some(why);
                } else if t.cases.iter().any(|c| c.outcome == Outcome::Fail) {
                    t.outcome = Outcome::Fail;
                    let n = t.cases.iter().filter(|c| c.outcome == Outcome::Fail).count();
                    t.reason = Some(format!("{n} of {} cases failed", t.cases.len()));
                    t.failed_by_cases = true;
                }
            }
            TestKind::Shell => {}
            TestKind::Bench => {
                let mut errors = Vec::new();
                for l in guestlog::bench_lines(&block.output) {
                    match l {
                        BenchLine::Metric { name, value, unit } => match r.metrics.iter_mut().find(|m| m.name == name) {
                            Some(m) => m.samples.push(value),
                            None => {
                                let target_ci_pct = ctx.matrix.metric_decl(&name).and_then(|d| d.target_ci_pct);
                                r.metrics.push(Metric { name, unit, samples: vec![value], skip: None, target_ci_pct, boot_sizes: vec![] })
                            }
                        },
                        BenchLine::Skip { name, reason } => {
                            if !r.metrics.iter().any(|m| m.name == name) {
                                r.metrics.push(Metric { name, unit: String::new(), samples: vec![], skip: Some(reason), target_ci_pct: None, boot_sizes: vec![] });
                            }
                        }
                        BenchLine::Error(e) => errors.push(e),
                    }
                }
                for m in r.metrics.iter().filter(|m| m.name.starts_with(&format!("{tname}.")) || !m.name.contains('.')) {
                    let (outcome, reason) = match &m.skip {
                        Some(why) => (Outcome::Skip, Some(why.clone())),
                        None => (Outcome::Pass, None),
                    };
                    t.cases.push(CaseResult { name: m.name.clone(), outcome, reason });
                }
                if !errors.is_empty() {
                    t.outcome = Outcome::Fail;
                    t.reason = Some(errors.join(" | "));
                }
            }
        }
        match block.rc {
            None => {
                reached_end = false;
                t.outcome = if fatal.is_some() { Outcome::Crash } else if exit.timed_out { Outcome::Timeout } else { Outcome::Fail };
                t.reason = Some(format!("the guest stopped while this test ran; its output so far: {} bytes", block.output.len()));
            }
            Some(_) if block.timed_out() => {
                t.outcome = Outcome::Timeout;
                t.reason = Some(format!("killed after its {} s timeout; output so far: {}", block.timeout_s.unwrap_or(0.0), console::tail(&block.output, 5)));
            }
            Some(rc) if rc > 128 => {
                t.outcome = Outcome::Fail;
                t.reason = Some(format!("killed by signal {} ({}); last output: {}", rc - 128, signal_name(rc - 128), console::tail(&block.output, 5)));
            }
            Some(rc) if rc != 0 && t.outcome == Outcome::Pass => {
                t.outcome = Outcome::Fail;
                t.reason = Some(format!("exit status {rc}"));
            }
            _ => {}
        }
        r.tests.push(t);
    }
    // The cell outcome: the worst thing that happened.
    r.outcome = if fatal.is_some() {
        Outcome::Crash
    } else if exit.timed_out {
        let running = session.tests.iter().find(|b| b.rc.is_none()).map(|b| b.name.clone());
        r.evidence.push(Evidence {
            what: format!(
                "QEMU killed after the {} s cell budget{}",
                exit.elapsed.as_secs(),
                running.map_or(String::new(), |t| format!(" while test {t} ran"))
            ),
            excerpt: console::tail(console_text, 25),
            path: Some(console_log.to_path_buf()),
        });
        Outcome::Timeout
    } else if !session.began {
        r.evidence.push(Evidence {
            what: format!("the guest never reported (QEMU exit status {:?})", exit.status),
            excerpt: format!("{}\n--- console tail ---\n{}", exit.stderr.trim(), console::tail(console_text, 25)),
            path: Some(console_log.to_path_buf()),
        });
        if exit.status.unwrap_or(0) != 0 && !exit.stderr.is_empty() { Outcome::InfraError } else { Outcome::Crash }
    } else if !session.done {
        r.evidence.push(Evidence { what: "the guest ended before its init reported DONE".into(), excerpt: console::tail(console_text, 25), path: Some(console_log.to_path_buf()) });
        Outcome::Crash
    } else if !splats.is_empty() || r.tests.iter().any(|t| t.outcome != Outcome::Pass) {
        Outcome::Fail
    } else {
        Outcome::Pass
    };
    r
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "signal",
    }
}

/// `cargo xtask boot`: prepare the cell like a test run, then hand the
/// console to the user with a shell instead of running the tests.
pub fn boot_interactive(ctx: &Ctx, cell: &Cell, ui: &CellUi) -> Result<()> {
    let dir = ctx.cell_dir(cell);
    std::fs::create_dir_all(&dir)?;
    let p = Partial { r: new_result(cell, ctx) };
    let prep = match prepare(ctx, cell, ui, &dir, p)? {
        Ok(x) => x,
        Err(r) => {
            let e = r.evidence.first().map_or(String::new(), |e| format!("{}\n{}", e.what, e.excerpt));
            anyhow::bail!("{} cannot boot: {}\n{e}", cell.id(), r.outcome);
        }
    };
    ui.finish("booting; Ctrl-A X quits QEMU, `reboot -f` ends the guest");
    let mut extra = ctx.extra_cmdline.clone();
    extra.push("kmatrix.shell".into());
    let g = qemu::Guest {
        arch: cell.arch.clone(),
        accel: prep.accel,
        smp: ctx.matrix.run.smp,
        memory_mb: ctx.matrix.run.memory_mb,
        kernel: prep.image,
        initrd: prep.initrd,
        extra_cmdline: extra,
        results: None,
        interactive: true,
    };
    let bin = &qemu::binary(&cell.arch);
    let args = qemu::args(&g);
    eprintln!("$ {}", qemu::shell_line(bin, &args));
    let st = std::process::Command::new(bin).args(&args).status()?;
    anyhow::ensure!(st.success() || st.code() == Some(0), "{bin} exited with {st}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(outcome: Outcome, case_b: Outcome, samples: &[f64], evidence: &[&str]) -> CellResult {
        CellResult {
            evidence: evidence.iter().map(|w| Evidence { what: w.to_string(), excerpt: String::new(), path: None }).collect(),
            tests: vec![TestResult {
                name: "t".into(),
                outcome: if case_b == Outcome::Fail { Outcome::Fail } else { Outcome::Pass },
                reason: (case_b == Outcome::Fail).then(|| "1 of 2 cases failed".to_string()),
                duration_s: Some(2.0),
                cases: vec![CaseResult { name: "a".into(), outcome: Outcome::Pass, reason: None }, CaseResult { name: "b".into(), outcome: case_b, reason: None }],
                failed_by_cases: case_b == Outcome::Fail,
            }],
            metrics: vec![
                Metric { name: "m.x".into(), unit: "us/op".into(), samples: samples.to_vec(), skip: None, target_ci_pct: None, boot_sizes: vec![] },
                Metric { name: "m.y".into(), unit: String::new(), samples: vec![], skip: Some("EINVAL".into()), target_ci_pct: None, boot_sizes: vec![] },
            ],
            timings: Timings { boot_s: 10.0, guest_s: 8.0, ..Default::default() },
            ..CellResult::blank("k/s/x86_64/c", outcome)
        }
    }

    #[test]
    fn boots_pool_samples_and_the_worst_boot_speaks_for_tests() {
        let mut r = boot(Outcome::Pass, Outcome::Pass, &[1.0, 2.0, 3.0], &[]);
        merge_boot(&mut r, boot(Outcome::Fail, Outcome::Fail, &[4.0, 5.0], &["WARNING at x"]), 2);
        merge_boot(&mut r, boot(Outcome::Pass, Outcome::Pass, &[6.0], &[]), 3);
        assert_eq!(r.outcome, Outcome::Fail);
        assert_eq!(r.evidence[0].what, "boot 2: WARNING at x");
        let t = &r.tests[0];
        assert_eq!((t.outcome, t.reason.as_deref(), t.failed_by_cases), (Outcome::Fail, Some("boot 2: 1 of 2 cases failed"), true));
        assert_eq!(t.cases[1].outcome, Outcome::Fail);
        assert_eq!(t.cases[1].reason.as_deref(), Some("boot 2"));
        assert_eq!(t.duration_s, Some(6.0));
        let m = &r.metrics[0];
        assert_eq!(m.samples, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(m.boot_sizes, [3, 2, 1]);
        assert_eq!(m.by_boot(), [&[1.0, 2.0, 3.0][..], &[4.0, 5.0][..], &[6.0][..]]);
        assert_eq!(r.metrics[1].skip.as_deref(), Some("EINVAL"));
        assert!(r.metrics[1].boot_sizes.is_empty());
        assert_eq!((r.timings.boot_s, r.timings.guest_s), (30.0, 24.0));
        // A crash in a later boot outranks everything.
        merge_boot(&mut r, boot(Outcome::Crash, Outcome::Pass, &[], &["panic"]), 4);
        assert_eq!(r.outcome, Outcome::Crash);
        assert_eq!(r.metrics[0].boot_sizes, [3, 2, 1], "a boot without samples adds no cluster");
        assert_eq!(boot_file("console", "log", 1), "console.log");
        assert_eq!(boot_file("console", "log", 4), "console.boot4.log");
    }
}
