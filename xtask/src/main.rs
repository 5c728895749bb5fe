//! `cargo xtask`: what does this kernel patch series do to the kernel?
//!
//! Parses flags and dispatches; each subcommand's work lives in its module.
//! Exit codes: 0 every cell as expected, 1 some cell differs from its
//! expectation, 2 the harness could not run (bad input, missing tools).

mod analyze;
mod bisect;
mod boot;
mod build;
mod cmd_report;
mod host;
mod kinds;
mod plan;
mod report;
mod runner;
mod schema;
mod util;

#[cfg(test)]
mod golden;

use host::{cache, setup, signals, ui};
use plan::matrix;
use report::compare;
use schema as results;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Build, boot and test kernel patch series in QEMU"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build, boot and test every selected cell; write results.json + summary.md.
    Matrix(MatrixArgs),
    /// Boot one cell with an interactive busybox shell on the console.
    Boot {
        /// Cell id: kernel/variant/arch/config.
        cell: String,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
    },
    /// Install the host packages the harness needs (Debian 12, root or sudo),
    /// and the tools its test suite checks reports with (cache/tools).
    Setup,
    /// Print the cell ids the matrix expands to (one per line, or JSON for CI fan-out).
    List {
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
        #[arg(long)]
        json: bool,
        /// One line (JSON object) per kernel/arch/config with its `--cell` glob.
        #[arg(long)]
        groups: bool,
    },
    /// Every prefix of a series (base, +1, ..., +N) as one run: each test
    /// and metric patch by patch (sweep.md beside summary.md).
    Sweep(MatrixArgs),
    /// Find the first patch of a series at which a predicate turns bad.
    Bisect(bisect::BisectArgs),
    /// For `git bisect run`: build and boot the checked-out commit of
    /// --tree, exit 0 good, 1 bad, 125 skip, 128 harness error.
    BisectStep(bisect::StepArgs),
    /// Write a git checkout of a matrix kernel to DEST, with a series
    /// applied as commits (branch `kmatrix` on tag `kmatrix-base`): a tree
    /// to work in, and to give to --tree or `git bisect run`.
    Checkout {
        /// The kernel, as named in the matrix (e.g. 6.1).
        kernel: String,
        dest: PathBuf,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
        #[command(flatten)]
        source: bisect::SourceArgs,
        #[arg(long)]
        no_setup: bool,
    },
    /// Compare metrics of a finished run (default results/latest) with
    /// statistics; with two runs, each cell of RUN_B against the same cell of RUN_DIR.
    Compare {
        run_dir: Option<PathBuf>,
        #[arg(value_name = "RUN_B")]
        other: Option<PathBuf>,
        /// With two runs: where to write the comparison (default RUN_B/compare.json).
        #[arg(long, requires = "other")]
        out: Option<PathBuf>,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
        /// Exit 1 when a metric regressed significantly beyond its threshold.
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// A/A false-alarm rate over runs made with `matrix --aa`: per arch the
    /// verdicts of base vs base~aa and the goals (exit 1 when one is not met).
    AaRate {
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
        /// Only metrics starting with PREFIX (repeatable; default all).
        #[arg(long, value_name = "PREFIX")]
        metric: Vec<String>,
    },
    /// Merge results.json files (dirs or files) into one run; recompute comparisons and reports.
    Merge {
        #[arg(long)]
        out: PathBuf,
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
        #[arg(long)]
        fail_on_regression: bool,
    },
    /// Write JUnit XML, HTML and KCIDB JSON of a run (all three into RUN_DIR by default).
    Report {
        run_dir: PathBuf,
        #[arg(long)]
        junit: Option<PathBuf>,
        #[arg(long)]
        html: Option<PathBuf>,
        #[arg(long)]
        kcidb: Option<PathBuf>,
        #[arg(long, default_value = "matrix.toml")]
        matrix: PathBuf,
    },
}

#[derive(Args, Clone, Default)]
pub struct MatrixArgs {
    #[arg(long, default_value = "matrix.toml")]
    pub matrix: PathBuf,
    #[arg(long)]
    arch: Vec<String>,
    #[arg(long)]
    kernel: Vec<String>,
    #[arg(long)]
    variant: Vec<String>,
    #[arg(long)]
    test: Vec<String>,
    /// Cell id or glob (`*` matches one component), e.g. `*/base/arm64/*`.
    #[arg(long)]
    cell: Vec<String>,
    /// Run directory (default results/<timestamp>; results/latest links to it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not install missing host packages.
    #[arg(long)]
    no_setup: bool,
    /// Refuse instead of waiting when another run holds the cache lock.
    #[arg(long)]
    no_wait: bool,
    /// Extra kernel command line for every guest (debugging, fault injection).
    #[arg(long)]
    cmdline: Vec<String>,
    /// Exit 1 when a metric regressed significantly beyond its threshold.
    #[arg(long)]
    fail_on_regression: bool,
    /// Continue the run in DIR: cells already in its results.json are skipped.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    resume: Option<PathBuf>,
    /// Re-run a cell that is not as expected up to N times (boot only; the
    /// build is cached). Passing on a retry is recorded as `flaky`.
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// Whole-cell QEMU budget in seconds (overrides run.cell_timeout_s).
    #[arg(long)]
    cell_timeout: Option<u64>,
    /// Boot each cell N times (overrides run.boots): benchmark samples are
    /// pooled and comparisons count the spread between boots.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=50))]
    boots: Option<u32>,
    /// Boot the cells of a comparison still too noisy to judge after their
    /// boots 3 more times each, alternating, up to N boots (overrides
    /// run.max_boots; with --boots alone, no boots are added).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=50))]
    max_boots: Option<u32>,
    /// A/A: every kernel's base also runs as `base~aa` (the same cached
    /// kernel), compared with `base` like a series; count the verdicts of
    /// several such runs with `aa-rate`.
    #[arg(long)]
    pub aa: bool,
    /// Run cell after cell, each with all its boots in a row. By default
    /// every cell is prepared (built) first, then the boots of compared
    /// cells (base and variants of one kernel/arch/config) alternate: base
    /// 1, series 1, base 2, series 2, ...
    #[arg(long)]
    pub no_interleave: bool,
    /// Leave QEMU's vCPU threads to the host scheduler. By default each
    /// vCPU thread is pinned to a host CPU (round-robin over the CPUs
    /// xtask may use); results record it per boot (`pinned_vcpus`).
    #[arg(long)]
    pub no_pin: bool,
    /// Let the host CPUs idle while a guest runs. By default a SCHED_IDLE
    /// thread spins on each CPU xtask may use, so no host CPU is ever
    /// halted (on a host that is itself a VM, a halted CPU comes back
    /// slow); results record it per boot (`busy_cpus`).
    #[arg(long)]
    pub no_keep_busy: bool,
    #[command(flatten)]
    source: bisect::SourceArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    signals::install();
    let root = repo_root();
    // Paths on the command line (--tree, --series) are the caller's: kept
    // before the harness moves to its own directory.
    let cwd = std::env::current_dir().unwrap_or_else(|_| root.clone());
    if let Err(e) = std::env::set_current_dir(&root) {
        eprintln!("error: cannot enter {}: {e}", root.display());
        return ExitCode::from(2);
    }
    if let Err(e) = boot::accel::forced() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let r = match cli.cmd {
        Cmd::Matrix(a) => cmd_matrix(&root, &cwd, a, &mut |_, _| Ok(())).map(|(c, _)| c),
        Cmd::Sweep(a) => bisect::cmd_sweep(&root, &cwd, a),
        Cmd::Bisect(a) => bisect::cmd_bisect(&root, &cwd, a),
        Cmd::Checkout {
            kernel,
            dest,
            matrix,
            source,
            no_setup,
        } => bisect::cmd_checkout(&root, &cwd, &kernel, &dest, &matrix, &source, no_setup),
        Cmd::BisectStep(a) => {
            // git bisect run: 125 is skip, 1-127 bad, 128+ aborts the bisect.
            // A harness error must abort, never pass for "bad".
            return ExitCode::from(bisect::cmd_step(&root, &cwd, a).unwrap_or_else(|e| {
                eprintln!("error: {e:#}");
                128
            }));
        }
        Cmd::Boot { cell, matrix } => cmd_boot(&root, &cell, &matrix).map(|_| 0),
        Cmd::Setup => setup::ensure(&[])
            .and_then(|_| host::tools::ensure())
            .map(|_| 0),
        Cmd::List {
            matrix,
            json,
            groups: true,
        } => cmd_report::cmd_list_groups(&matrix, json),
        Cmd::List { matrix, json, .. } => cmd_list(&matrix, json).map(|_| 0),
        Cmd::Compare {
            run_dir: Some(a),
            other: Some(b),
            matrix,
            out,
            fail_on_regression,
        } => cmd_report::cmd_compare_runs(&a, &b, &matrix, out, fail_on_regression),
        Cmd::Compare {
            run_dir,
            matrix,
            fail_on_regression,
            ..
        } => cmd_compare(&root, run_dir, &matrix, fail_on_regression),
        Cmd::AaRate {
            runs,
            matrix,
            metric,
        } => cmd_report::cmd_aa_rate(&runs, &matrix, &metric),
        Cmd::Merge {
            out,
            runs,
            matrix,
            fail_on_regression,
        } => cmd_report::cmd_merge(&root, &out, &runs, &matrix, fail_on_regression),
        Cmd::Report {
            run_dir,
            junit,
            html,
            kcidb,
            matrix,
        } => cmd_report::cmd_report(
            &root,
            &run_dir,
            cmd_report::Targets { junit, html, kcidb },
            &matrix,
        ),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn load_matrix(path: &Path) -> Result<matrix::Matrix> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    matrix::Matrix::parse(&path.display().to_string(), &text)
}

pub fn debian_packages(m: &matrix::Matrix) -> Vec<String> {
    m.kernel
        .values()
        .filter_map(|k| match k.source.get_ref() {
            matrix::SourceSpec::Debian(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

/// UTC `YYYYmmdd-HHMMSS` without a date crate (days-from-civil inverse).
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn host_info() -> results::Host {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let qemu = std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    results::Host {
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read("/proc/sys/kernel/osrelease"),
        qemu,
    }
}

/// Runs the selected cells of the matrix, after `derive` has adapted it
/// (sweep's prefixes); returns the exit code and the run directory.
pub fn cmd_matrix(
    root: &Path,
    cwd: &Path,
    a: MatrixArgs,
    derive: &mut dyn FnMut(&mut matrix::Matrix, &cache::Cache) -> Result<()>,
) -> Result<(u8, PathBuf)> {
    let mut m = load_matrix(&a.matrix)?;
    if !a.no_setup {
        setup::ensure(&debian_packages(&m))?;
    }
    let cache = cache::Cache::open(cache::default_root(), !a.no_wait)?;
    bisect::apply_sources(
        &mut m,
        &a.source,
        cwd,
        &cache,
        a.kernel.first().map(String::as_str),
    )?;
    derive(&mut m, &cache)?;
    m.aa = a.aa;
    if a.no_pin {
        // Read by qemu::pin_vcpus; set before any QEMU thread starts.
        std::env::set_var("KMATRIX_PIN_VCPUS", "0");
    }
    if a.no_keep_busy {
        // Read by qemu::keep_busy, likewise.
        std::env::set_var("KMATRIX_KEEP_BUSY", "0");
    }
    let filters = matrix::Filters {
        arch: a.arch,
        kernel: a.kernel,
        variant: a.variant,
        test: a.test,
        cell: a.cell,
    };
    let cells = m.cells(&filters)?;
    let resuming = a.resume.is_some();
    let run_dir = match a.out.or(a.resume) {
        Some(d) => d,
        None => {
            let d = root.join("results").join(timestamp());
            std::fs::create_dir_all(&d)?;
            let latest = root.join("results/latest");
            let _ = std::fs::remove_file(&latest);
            let _ = std::os::unix::fs::symlink(d.file_name().unwrap(), &latest);
            d
        }
    };
    std::fs::create_dir_all(&run_dir)?;
    let run_dir = std::fs::canonicalize(&run_dir)?;
    let results_path = run_dir.join("results.json");
    // An existing results.json in --out/--resume is extended: cells re-run
    // replace theirs. One that cannot be read is never replaced: its
    // finished cells would be lost.
    let mut run = if results_path.exists() {
        let loaded = results::Run::load(&results_path).and_then(|r| {
            anyhow::ensure!(
                r.schema == results::SCHEMA_VERSION,
                "{} has results.json schema {}; this harness writes schema {}",
                results_path.display(),
                r.schema,
                results::SCHEMA_VERSION
            );
            Ok(r)
        });
        match loaded {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "error: {e:#}\nrefusing to overwrite {}: it holds results this version cannot read. Move it away, or pick another --out.",
                    results_path.display()
                );
                return Ok((2, run_dir));
            }
        }
    } else {
        results::Run {
            schema: results::SCHEMA_VERSION,
            started: timestamp(),
            host: host_info(),
            matrix: a.matrix.display().to_string(),
            cells: vec![],
            comparisons: vec![],
        }
    };
    let ui = ui::Ui::new();
    ui.println(&format!(
        "kmatrix: {} cells, cache {}, results {}",
        cells.len(),
        cache.root.display(),
        run_dir.display()
    ));
    let mut ctx = runner::Ctx::new(&m, root.to_path_buf(), &cache, run_dir.clone());
    ctx.extra_cmdline = a.cmdline;
    ctx.cell_timeout_s = a.cell_timeout;
    ctx.boots = a.boots;
    ctx.max_boots = a.max_boots;
    ctx.matrix_path = Some(a.matrix.display().to_string());
    // Cells to run: those not already in results.json (--resume).
    let mut todo: Vec<(usize, &matrix::Cell)> = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if resuming && run.cells.iter().any(|c| c.id == cell.id()) {
            ui.cell(i + 1, cells.len(), &cell.id())
                .finish("already in results.json (--resume): skipped");
        } else {
            todo.push((i, cell));
        }
    }
    // Records a finished cell: its line, run.log, results.json. False when
    // the run was interrupted (whatever the cell shows was caused by that).
    let mut record = |r: results::CellResult, cu: &ui::CellUi| -> Result<bool> {
        let t = &r.timings;
        let line = format!(
            "{}{} (source {:.1}s, config {:.1}s, build {}, rootfs {:.1}s, boot {:.1}s, guest {:.1}s; {})",
            r.outcome,
            if r.as_expected { "" } else { " NOT AS EXPECTED" },
            t.source_s,
            t.config_s,
            if t.build_cached {
                "cached".to_string()
            } else {
                format!("{:.1}s{}", t.build_s, if t.build_incremental { " incremental" } else { "" })
            },
            t.rootfs_s,
            t.boot_s,
            t.guest_s,
            r.accel
        );
        cu.finish(&line);
        if signals::interrupted() {
            ui.println(&format!(
                "{}: interrupted; not recorded (finish it with --resume {})",
                r.id,
                run_dir.display()
            ));
            return Ok(false);
        }
        // One line per finished cell, kept with the run (a sweep's step log).
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(run_dir.join("run.log"))
        {
            use std::io::Write;
            let _ = writeln!(f, "{} {} {line}", timestamp(), r.id);
        }
        run.upsert(r);
        run.comparisons = compare::compare(&run, &m);
        run.save(&results_path)?;
        Ok(true)
    };
    if a.no_interleave {
        for (i, cell) in &todo {
            if signals::interrupted() {
                break;
            }
            let cu = ui.cell(i + 1, cells.len(), &cell.id());
            let r = runner::run_cell_with_retries(&ctx, cell, a.retries, &cu);
            if !record(r, &cu)? {
                break;
            }
        }
    } else {
        // A progress line per cell from the start: all are in flight.
        let uis: Vec<ui::CellUi> = todo
            .iter()
            .map(|(i, c)| ui.cell(i + 1, cells.len(), &c.id()))
            .collect();
        // Every cell prepared (built) first; a cell that fails there is
        // finished at once. Then the schedule picks each next boot.
        let mut live: Vec<Option<runner::CellRun>> = Vec::new();
        for ((_, cell), cu) in todo.iter().zip(&uis) {
            if signals::interrupted() {
                break;
            }
            live.push(Some(runner::start_cell(&ctx, cell, cu)));
        }
        let refs: Vec<&matrix::Cell> = todo.iter().map(|(_, c)| *c).collect();
        let groups = runner::schedule::groups(&refs);
        let max_boots = ctx.max_boots();
        let mut go = true;
        while go {
            // A group through its planned boots with a comparison still too
            // noisy: more boots for the cells it compares (run.max_boots).
            for g in 0..groups.iter().max().map_or(0, |g| g + 1) {
                let members: Vec<usize> = (0..live.len())
                    .filter(|&k| groups[k] == g && live[k].is_some())
                    .collect();
                let all_done = members.iter().all(|&k| !live[k].as_ref().unwrap().wants_boot());
                if members.is_empty()
                    || !all_done
                    || !members.iter().any(|&k| live[k].as_ref().unwrap().may_boot_more(max_boots))
                    || signals::interrupted()
                {
                    continue;
                }
                more_boots_for_group(&m, &ui, &mut live, &members, &refs, max_boots);
            }
            // Finish the cells that want no more boots, in matrix order; a
            // cell that may still get boots waits for the rest of its group.
            for k in 0..live.len() {
                let waits = live[k].as_ref().is_some_and(|c| c.may_boot_more(max_boots))
                    && live
                        .iter()
                        .zip(&groups)
                        .any(|(o, &g)| g == groups[k] && o.as_ref().is_some_and(|o| o.wants_boot()));
                let slot = &mut live[k];
                if slot.as_ref().is_some_and(|c| !c.wants_boot()) && !waits && !signals::interrupted() {
                    let first = slot.take().unwrap().finish(&ctx);
                    let r = runner::retry(&ctx, todo[k].1, first, a.retries, &uis[k]);
                    if !record(r, &uis[k])? {
                        go = false;
                        break;
                    }
                }
            }
            let slots: Vec<runner::schedule::Slot> = live
                .iter()
                .zip(&groups)
                .map(|(c, &group)| runner::schedule::Slot {
                    group,
                    booted: c.as_ref().map_or(0, |c| c.booted()),
                    wants: c.as_ref().is_some_and(|c| c.wants_boot()),
                })
                .collect();
            match runner::schedule::next(&slots) {
                Some(k) if go && !signals::interrupted() => {
                    live[k].as_mut().unwrap().boot_next(&ctx, &uis[k])
                }
                _ => go = false,
            }
        }
        // Only an interruption leaves cells unfinished (or unprepared).
        for (k, cu) in uis.iter().enumerate() {
            if live.get(k).is_some_and(|c| c.is_none()) {
                continue;
            }
            cu.finish(&format!(
                "interrupted; not recorded (finish it with --resume {})",
                run_dir.display()
            ));
        }
    }
    // An A/A run (--aa) also says how much a boot's figure moves here.
    let summary = report::markdown::markdown(&run)
        + &compare::markdown(&run.comparisons)
        + &report::aa::noise_text(&report::aa::noise(&[&run], &m));
    std::fs::write(run_dir.join("summary.md"), &summary)?;
    cmd_report::write_run_reports(root, &run, &m, &run_dir);
    println!("{summary}");
    println!("results: {}", results_path.display());
    if signals::interrupted() {
        eprintln!(
            "interrupted: results so far saved in {}",
            results_path.display()
        );
        return Ok((2, run_dir));
    }
    let selected: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let bad: Vec<&results::CellResult> = run
        .cells
        .iter()
        .filter(|c| selected.contains(&c.id) && !c.as_expected)
        .collect();
    for c in &bad {
        for mm in &c.mismatches {
            eprintln!("MISMATCH {mm}");
        }
    }
    if a.fail_on_regression && report_regressions(&run.comparisons) {
        return Ok((1, run_dir));
    }
    Ok((if bad.is_empty() { 0 } else { 1 }, run_dir))
}

/// Plans more boots for the cells of a group (all through their boots) that
/// a too-noisy comparison of the group's results so far needs, and says so.
fn more_boots_for_group(
    m: &matrix::Matrix,
    ui: &ui::Ui,
    live: &mut [Option<runner::CellRun>],
    members: &[usize],
    cells: &[&matrix::Cell],
    max_boots: u32,
) {
    let so_far = results::Run {
        schema: results::SCHEMA_VERSION,
        started: String::new(),
        host: Default::default(),
        matrix: String::new(),
        cells: members
            .iter()
            .filter_map(|&k| live[k].as_ref().and_then(|c| c.so_far()).cloned())
            .collect(),
        comparisons: vec![],
    };
    let cs = compare::compare(&so_far, m);
    let member = |id: &str| members.iter().copied().find(|&k| cells[k].id() == id);
    let wanted = runner::schedule::undecided(&cs, |id, metric| {
        member(id).is_some_and(|k| {
            let booted = live[k].as_ref().map_or(0, |c| c.booted());
            m.measured_in_boot(cells[k], metric, booted + 1)
        })
    });
    // Every cell of the group boots again, not only those of the undecided
    // comparisons: the group's cells stay in step, so their boots still
    // pair up one for one (compare::interleaved).
    let Some(&(_, why)) = wanted.first() else { return };
    for &k in members {
        let id = cells[k].id();
        let why = wanted.iter().find(|(w, _)| *w == id).map_or(why, |(_, c)| *c);
        let Some(c) = live[k].as_mut() else { continue };
        let from = c.booted() + 1;
        // No more than the cell's tests want (`[test] boots`).
        let to = c.more_boots(runner::schedule::MORE_BOOTS, m.cell_boots(cells[k], max_boots));
        if to > 0 {
            let boots = if from == to { format!("boot {to}") } else { format!("boots {from}-{to}") };
            ui.println(&format!(
                "{id}: {boots} (of up to {max_boots}): {}",
                runner::schedule::why_more(why)
            ));
        }
    }
}

pub fn report_regressions(cs: &[results::Comparison]) -> bool {
    let mut any = false;
    for c in cs
        .iter()
        .filter(|c| c.verdict == results::Verdict::Regressed)
    {
        eprintln!(
            "REGRESSION {} {} vs {} {}: {:+.1}% [{:+.1}%, {:+.1}%], p={:.4}",
            c.new_cell,
            c.new_metric,
            c.base_cell,
            c.base_metric,
            c.pct_change,
            c.ci95_lo,
            c.ci95_hi,
            c.p_value
        );
        any = true;
    }
    any
}

fn cmd_compare(
    root: &Path,
    run_dir: Option<PathBuf>,
    matrix_path: &Path,
    fail_on_regression: bool,
) -> Result<u8> {
    let m = load_matrix(matrix_path)?;
    let dir = run_dir.unwrap_or_else(|| root.join("results/latest"));
    let path = dir.join("results.json");
    let mut run = results::Run::load(&path)?;
    run.comparisons = compare::compare(&run, &m);
    run.save(&path)?;
    let table = compare::markdown(&run.comparisons);
    println!(
        "{}",
        if table.is_empty() {
            "no metric appears in two variants or a declared pair".to_string()
        } else {
            table
        }
    );
    Ok(
        if fail_on_regression && report_regressions(&run.comparisons) {
            1
        } else {
            0
        },
    )
}

fn cmd_list(matrix_path: &Path, json: bool) -> Result<()> {
    let m = load_matrix(matrix_path)?;
    let ids: Vec<String> = m
        .cells(&matrix::Filters::default())?
        .iter()
        .map(|c| c.id())
        .collect();
    if json {
        println!("{}", serde_json::to_string(&ids)?);
    } else {
        for id in ids {
            println!("{id}");
        }
    }
    Ok(())
}

fn cmd_boot(root: &Path, id: &str, matrix_path: &Path) -> Result<()> {
    let m = load_matrix(matrix_path)?;
    let filters = matrix::Filters {
        cell: vec![id.to_string()],
        ..Default::default()
    };
    let cells = m.cells(&filters)?;
    let cell = &cells[0];
    let cache = cache::Cache::open(cache::default_root(), true)?;
    let dir = std::env::temp_dir().join(format!("kmatrix-boot-{}", std::process::id()));
    let ui = ui::Ui::new();
    let ctx = runner::Ctx::new(&m, root.to_path_buf(), &cache, dir);
    let cu = ui.cell(1, 1, &cell.id());
    runner::boot_interactive(&ctx, cell, &cu)
}
