//! The command line: one clap declaration, one module per command, each a
//! struct with its own `run`. Options shared by several commands are
//! declared once here and flattened into them.
//!
//! Everything the user typed is resolved here, before any work: relative
//! paths against the directory the command was typed in (`Env::path`), the
//! run-time policy from flags and environment in one place
//! (`runner::policy::Policy`). Below this layer nothing reads argv, the
//! process's working directory, or a `KMATRIX_*` variable.
//!
//! Exit codes: 0 every cell as expected, 1 some cell differs from its
//! expectation (or a regression with `--fail-on-regression`), 2 the harness
//! could not run (bad input, missing tools, interrupted). `bisect-step`
//! speaks `git bisect run`'s codes instead (0 good, 1 bad, 125 skip, 128
//! abort).

mod aa_rate;
mod boot;
mod checkout;
mod compare;
mod list;
mod matrix;
mod merge;
mod patchcheck;
mod report;
mod setup;
mod step;
mod sweep;

mod bisect;
mod history;

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::plan::matrix::{self as plan_matrix, Filters, Matrix, Names};
use crate::plan::variants;
use crate::runner::policy::Policy;

#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask",
    about = "Build, boot and test kernel patch series in QEMU"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Build, boot and test every selected cell; write results.json + summary.md.
    Matrix(matrix::MatrixCmd),
    /// Boot one cell with an interactive busybox shell on the console.
    Boot(boot::BootCmd),
    /// Install the host packages the harness needs (Debian 12 or 13, root or sudo),
    /// and the tools its test suite checks reports with (cache/tools).
    Setup(setup::SetupCmd),
    /// Print the cell ids the matrix expands to (one per line, or JSON for CI fan-out).
    List(list::ListCmd),
    /// Every prefix of a series (base, +1, ..., +N) as one run: each test
    /// and metric patch by patch (sweep.md beside summary.md).
    Sweep(sweep::SweepCmd),
    /// Find the first patch of a series at which a predicate turns bad.
    Bisect(bisect::BisectCmd),
    /// For `git bisect run`: build and boot the checked-out commit of
    /// --tree, exit 0 good, 1 bad, 125 skip, 128 harness error.
    BisectStep(step::StepCmd),
    /// Write a git checkout of a matrix kernel to DEST, with a series
    /// applied as commits (branch `kmatrix` on tag `kmatrix-base`): a tree
    /// to work in, and to give to --tree or `git bisect run`.
    Checkout(checkout::CheckoutCmd),
    /// Each patch of a series built on every arch/config of its kernel
    /// (incremental), with the compiler warnings it adds in its files,
    /// checkpatch --strict and kernel-doc: patchcheck.md, patchcheck.json.
    Patchcheck(patchcheck::PatchcheckCmd),
    /// Compare metrics of a finished run (default results/latest) with
    /// statistics; with two runs, each cell of RUN_B against the same cell of RUN_DIR.
    Compare(compare::CompareCmd),
    /// A/A false-alarm rate over runs made with `matrix --aa`: per arch the
    /// verdicts of base vs base~aa and the goals (exit 1 when one is not met).
    AaRate(aa_rate::AaRateCmd),
    /// Merge results.json files (dirs or files) into one run; recompute comparisons and reports.
    Merge(merge::MergeCmd),
    /// Write JUnit XML, HTML and KCIDB JSON of a run (all three into RUN_DIR by default).
    Report(report::ReportCmd),
    /// The run history: `add` run directories, `list` them, `show` change
    /// points, case states across runs and crashes by title.
    History(history::HistoryCmd),
}

/// Where the command runs: the harness's own checkout (matrix.toml,
/// kernels/, rootfs/, results/) and the directory the user typed the
/// command in, against which every relative path they gave resolves.
#[derive(Debug, Clone)]
pub struct Env {
    pub root: PathBuf,
    pub cwd: PathBuf,
}

impl Env {
    /// A path the user typed, made absolute against their directory.
    pub fn path(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }

    /// The default run directory `results/<name>` of the harness.
    pub fn results(&self, name: &str) -> PathBuf {
        self.root.join("results").join(name)
    }
}

/// `--matrix FILE` (default: the harness's own matrix.toml).
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MatrixOpt {
    /// The matrix file (default: matrix.toml of this checkout).
    #[arg(long = "matrix", value_name = "FILE")]
    pub matrix: Option<PathBuf>,
}

impl MatrixOpt {
    /// The file to read.
    pub fn file(&self, env: &Env) -> PathBuf {
        match &self.matrix {
            Some(p) => env.path(p),
            None => env.root.join("matrix.toml"),
        }
    }

    /// As the user would type it again (results.json's `matrix`, reproducers).
    pub fn shown(&self) -> String {
        self.matrix
            .as_ref()
            .map_or("matrix.toml".to_string(), |p| p.display().to_string())
    }

    pub fn load(&self, env: &Env) -> Result<Matrix> {
        crate::plan::load(&self.file(env))
    }

    /// The matrix to run: also every file it names must exist (series
    /// directories, tarballs, git trees, config fragments, guest sources).
    pub fn load_checked(&self, env: &Env) -> Result<Matrix> {
        crate::plan::load_checked(&self.file(env), &env.root)
    }

    /// Makes a typed path absolute (stored commands do not depend on where
    /// they are resumed from).
    pub fn resolve(&mut self, env: &Env) {
        if let Some(p) = &mut self.matrix {
            *p = env.path(p);
        }
    }
}

/// `--no-setup` and `--no-wait`: what may happen to the host before work.
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostOpts {
    /// Do not install missing host packages.
    #[arg(long)]
    pub no_setup: bool,
    /// Refuse instead of waiting when another run holds the cache lock.
    #[arg(long)]
    pub no_wait: bool,
    /// Let the set-up remove a host package that conflicts with one it
    /// installs (named first); without it such an install is refused.
    #[arg(long)]
    #[serde(default)]
    pub yes: bool,
}

impl HostOpts {
    /// Installs what the matrix needs (unless --no-setup) and opens the
    /// cache (waiting for its lock unless --no-wait).
    pub fn prepare(&self, m: &Matrix) -> Result<crate::host::cache::Cache> {
        if !self.no_setup {
            crate::host::setup::ensure(&crate::plan::debian_packages(m), self.yes)?;
        }
        let cache =
            crate::host::cache::Cache::open(crate::host::cache::default_root(), !self.no_wait)?;
        if let Some(w) = cache.check_space()? {
            eprintln!("{w}");
        }
        Ok(cache)
    }
}

/// Which cells of the matrix (`--arch`, `--kernel`, `--variant`, `--test`, `--cell`).
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Selection {
    #[arg(long)]
    pub arch: Vec<String>,
    #[arg(long)]
    pub kernel: Vec<String>,
    #[arg(long)]
    pub variant: Vec<String>,
    #[arg(long)]
    pub test: Vec<String>,
    /// Cell id or glob (`*` matches one component), e.g. `*/base/arm64/*`.
    #[arg(long)]
    pub cell: Vec<String>,
    /// A kselftest target of the kernel tree, as `make kselftest TARGETS=`
    /// names it (`pidfd`, `net/forwarding`; `TARGET:PROGRAM` for one of
    /// its programs), built by the tree's own Makefile and run as a test
    /// of every config. Alone it selects just those tests, as --test does.
    #[arg(long, value_name = "TARGET[:PROGRAM]")]
    #[serde(default)]
    pub kselftest: Vec<String>,
    /// KUnit suites of the kernel tree, built into each kernel and run at
    /// boot: a glob as `kunit.filter_glob` takes it (`cmdline*`,
    /// `kunit*.example_simple_test`), run as the test `kunit` of every
    /// config. Alone it selects just that test, as --test does.
    #[arg(long, value_name = "GLOB")]
    #[serde(default)]
    pub kunit: Option<String>,
    /// The tree's .kunitconfig (or its directory) whose options build the
    /// suites (`lib/kunit/.kunitconfig`); default: kunit_tool's
    /// default.config, every test the config allows.
    #[arg(long, value_name = "PATH")]
    #[serde(default)]
    pub kunitconfig: Option<String>,
}

impl Selection {
    /// Every value names something the run will have (`names`: the
    /// matrix's, as the source flags will change them); refused with the
    /// flag and the known values otherwise.
    pub fn check(&self, names: &Names) -> Result<()> {
        names.check(&self.filters())
    }

    pub fn filters(&self) -> Filters {
        let mut test = self.test.clone();
        let kunit = (self.kunit.is_some() || self.kunitconfig.is_some())
            .then(|| crate::plan::targets::KUNIT_TEST.to_string());
        for name in self
            .kselftest
            .iter()
            .map(|k| crate::plan::targets::test_of(k))
            .chain(kunit)
        {
            if !test.contains(&name) {
                test.push(name);
            }
        }
        Filters {
            arch: self.arch.clone(),
            kernel: self.kernel.clone(),
            variant: self.variant.clone(),
            test,
            cell: self.cell.clone(),
        }
    }

    /// `--kselftest`, `--kunit` and `--kunitconfig` again, for a
    /// reproducer: a space before each flag.
    pub fn own_test_flags(&self) -> String {
        own_test_flags(&self.kselftest, &self.kunit, &self.kunitconfig)
    }

    /// Declares the tests of `--kselftest`, `--kunit` and `--kunitconfig`.
    pub fn declare(&self, m: &mut Matrix) -> Result<()> {
        crate::plan::targets::declare(m, &self.kselftest)?;
        crate::plan::targets::declare_kunit(m, self.kunit.as_deref(), self.kunitconfig.as_deref())?;
        Ok(())
    }
}

/// The flags that declare the kernel's own tests, for a reproducer.
pub fn own_test_flags(
    kselftest: &[String],
    kunit: &Option<String>,
    kunitconfig: &Option<String>,
) -> String {
    let q = crate::util::shell_quote;
    let mut s: String = kselftest
        .iter()
        .map(|k| format!(" --kselftest {}", q(k)))
        .collect();
    if let Some(g) = kunit {
        s += &format!(" --kunit {}", q(g));
    }
    if let Some(p) = kunitconfig {
        s += &format!(" --kunitconfig {}", q(p));
    }
    s
}

/// How guests run on this host: pinning and keep-busy (the accelerator
/// and step-timeout scale come from the environment, `Policy::from_env`).
#[derive(Args, Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PolicyArgs {
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
    /// Boots run at the same time, 1-64, when none of them runs a
    /// benchmark (a `bench` or `perf` test): each guest gets its own host
    /// CPUs, and results name the cells that booted beside it (`beside`).
    /// Default: as many guests as the CPUs xtask may use hold (2 CPUs,
    /// 2-vCPU guests: 1). A benchmark boot always runs alone.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    #[serde(default)]
    pub jobs: Option<u16>,
}

impl PolicyArgs {
    pub fn policy(&self) -> Result<Policy> {
        let mut p = Policy::from_env()?;
        p.pin_vcpus &= !self.no_pin;
        p.keep_busy &= !self.no_keep_busy;
        p.boot_jobs = self.jobs.map(usize::from).or(p.boot_jobs);
        Ok(p)
    }
}

/// Where the kernel and the series come from, when not from matrix.toml.
#[derive(Args, Clone, Default, Debug, Serialize, Deserialize, PartialEq)]
pub struct SourceArgs {
    /// Your kernel git checkout (only read: the harness clones it with
    /// shared objects into its cache). Replaces the matrix's kernels.
    #[arg(long, value_name = "PATH")]
    pub tree: Option<PathBuf>,
    /// With --tree: the base is BASE and the series the commits of
    /// BASE..TIP, one patch each (e.g. v6.1..my-branch).
    #[arg(long, value_name = "BASE..TIP", requires = "tree")]
    pub range: Option<String>,
    /// With --tree and no --range: the commit to build (default HEAD).
    #[arg(long, requires = "tree", conflicts_with = "range")]
    pub rev: Option<String>,
    /// A directory of patch files (`git format-patch` output; applied in
    /// the order of its `series` file, else by name), or one mbox (what
    /// `b4 am` writes: patches by their `[PATCH M/N]`, the cover letter
    /// and replies left out). Replaces the kernel's series.
    #[arg(long = "series", value_name = "DIR|MBOX", conflicts_with = "range")]
    pub series_dir: Option<PathBuf>,
    /// A series from the mailing list by the message id of any of its
    /// messages: `b4 am` fetches it (from KMATRIX_LORE, default
    /// https://lore.kernel.org/all) and it is used as --series.
    #[arg(long, value_name = "MSGID", conflicts_with_all = ["range", "series_dir"], value_parser = msgid)]
    pub lore: Option<String>,
    /// What --lore fetched (set by `fetch_lore`).
    #[arg(skip)]
    #[serde(skip)]
    pub origin: Option<crate::host::lore::Origin>,
    /// Which of the kernel's series, when it has several.
    #[arg(long, value_name = "NAME")]
    pub series_name: Option<String>,
    /// Only the first N patches of the series (what a sweep or bisect step
    /// built; its reproducer uses this).
    #[arg(long, value_name = "N", value_parser = patches)]
    pub patches: Option<usize>,
}

impl SourceArgs {
    /// Makes --tree and --series absolute against the user's directory.
    pub fn resolve(&mut self, env: &Env) {
        for p in [&mut self.tree, &mut self.series_dir].into_iter().flatten() {
            *p = env.path(p);
        }
    }

    /// The flags again, for a reproducer command: each value quoted for a
    /// shell, with a space before each flag.
    pub fn flags(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        let mut flag = |f: &str, v: String| words.extend([f.to_string(), v]);
        if let Some(t) = &self.tree {
            flag("--tree", t.display().to_string());
        }
        if let Some(r) = &self.range {
            flag("--range", r.clone());
        }
        if let Some(r) = &self.rev {
            flag("--rev", r.clone());
        }
        match (&self.lore, &self.series_dir) {
            (Some(id), _) => flag("--lore", id.clone()),
            (None, Some(d)) => flag("--series", d.display().to_string()),
            _ => {}
        }
        if words.is_empty() {
            return String::new();
        }
        format!(" {}", crate::util::shell_line(&words))
    }

    /// With --lore: fetches the series with b4 and points --series at the
    /// mbox it wrote (kept in the cache by message id). b4 runs from the
    /// tools venv, so python3-venv and the venv are installed first unless
    /// --no-setup (which refuses a host without them).
    pub fn fetch_lore(&mut self, host: &HostOpts) -> Result<()> {
        if let Some(id) = &self.lore {
            if !host.no_setup {
                crate::host::setup::ensure(&crate::host::tools::venv_packages(), host.yes)?;
            }
            let got = crate::host::lore::am(id, !host.no_setup, &mut |l| eprintln!("{l}"))?;
            self.series_dir = Some(got.mbox);
            self.origin = Some(got.origin);
        }
        Ok(())
    }

    /// The source options as the bisect layer takes them.
    pub fn spec(&self) -> crate::bisect::Sources {
        crate::bisect::Sources {
            tree: self.tree.clone(),
            range: self.range.clone(),
            rev: self.rev.clone(),
            series_dir: self.series_dir.clone(),
            lore: self.origin.clone(),
            series_name: self.series_name.clone(),
            patches: self.patches,
        }
    }
}

/// What the source flags will make of the matrix, found before any work
/// (`bisect::apply_sources` does the work): the kernels of the run, the
/// kernel the series flags are about, and its series.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Preview {
    /// The run's kernels: the tree's name with --tree, else the matrix's.
    pub kernels: Vec<String>,
    /// With --tree: its name (the one kernel).
    pub tree: Option<String>,
    /// The series a --series DIR or --range adds.
    pub new_series: Option<String>,
}

impl Preview {
    /// The names a selection may use: the matrix's, with the kernels and
    /// series the source flags bring (and `base~aa` with --aa).
    pub fn names(&self, m: &Matrix, aa: bool) -> Names {
        let mut n = m.names();
        n.kernel = self.kernels.clone();
        if aa {
            n.variant.insert(1, plan_matrix::AA_VARIANT.to_string());
        }
        n.variant.extend(self.new_series.clone());
        n
    }

    /// The series of `kernel` once the flags are applied, with their
    /// patch counts when a directory says (a --range's is known only
    /// after git has exported it).
    pub fn series_of(
        &self,
        m: &Matrix,
        root: &Path,
        kernel: &str,
        dir_count: Option<usize>,
    ) -> Vec<(String, Option<usize>)> {
        if let Some(s) = &self.new_series {
            return vec![(s.clone(), dir_count)];
        }
        if self.tree.is_some() {
            return vec![];
        }
        m.kernel.get(kernel).map_or(vec![], |k| {
            k.series
                .iter()
                .map(|s| {
                    let name = s.get_ref().clone();
                    let n = m.series.get(&name).and_then(|spec| {
                        crate::plan::series::count(&name, &root.join(&spec.dir)).ok()
                    });
                    (name, n)
                })
                .collect()
        })
    }
}

impl SourceArgs {
    /// Checks the source flags against the matrix and the file system
    /// before any work: --tree a git checkout, --series a directory of
    /// patches, --series-name one of the kernel's series, --patches within
    /// its length. `kernel`: the --kernel given. Returns what they will
    /// make of the matrix, and the kernel the series flags are about.
    pub fn check(
        &self,
        m: &Matrix,
        root: &Path,
        kernel: Option<&str>,
    ) -> Result<(Preview, Option<String>)> {
        let mut p = Preview {
            kernels: m.kernel.keys().cloned().collect(),
            ..Default::default()
        };
        let mut kernel = kernel.map(str::to_string);
        if let Some(tree) = &self.tree {
            let t = std::fs::canonicalize(tree).map_err(|e| {
                anyhow::anyhow!(
                    "--tree {}: {e}, expected a kernel git checkout",
                    tree.display()
                )
            })?;
            if !t.join(".git").exists() {
                bail!("--tree {}: not a git checkout", tree.display());
            }
            let name = variants::name_of(&t);
            p.kernels = vec![name.clone()];
            p.tree = Some(name.clone());
            kernel = Some(name);
            if let Some(r) = &self.range {
                let ends = r.split_once("..");
                if ends.is_none_or(|(a, b)| a.is_empty() || b.is_empty() || b.starts_with('.')) {
                    bail!("--range {r}: expected BASE..TIP (e.g. v6.12..my-branch)");
                }
                p.new_series = Some(variants::range_name(r));
            }
        }
        if let (None, Some(k)) = (&self.tree, &kernel) {
            plan_matrix::known_value("kernel", k, &p.kernels)?;
        }
        if self.series_dir.is_none() && self.patches.is_none() && self.series_name.is_none() {
            return Ok((p, kernel));
        }
        let k = variants::pick_one("kernel", kernel.as_deref(), p.kernels.clone())?;
        let mut dir_count = None;
        if let Some(dir) = &self.series_dir {
            let d = std::fs::canonicalize(dir).map_err(|e| {
                anyhow::anyhow!(
                    "--series {}: {e}, expected a directory of patch files or an mbox",
                    dir.display()
                )
            })?;
            let n = crate::plan::series::count("--series", &d)
                .with_context(|| format!("--series {}", dir.display()))?;
            // The variant is named after the directory (an mbox after its
            // stem): `base` would be taken for the base itself.
            let stem = d.file_stem().map(|s| s.to_string_lossy().to_string());
            if d.file_name().is_some_and(|n| n == "base") || stem.as_deref() == Some("base") {
                bail!(
                    "--series {}: a series cannot be called `base` (its variant is named after the {}): rename it",
                    dir.display(),
                    if d.is_dir() { "directory" } else { "file" }
                );
            }
            let name = variants::name_of(&d);
            p.new_series = Some(name);
            dir_count = Some(n);
        }
        let series = p.series_of(m, root, &k, dir_count);
        let names: Vec<String> = series.iter().map(|(s, _)| s.clone()).collect();
        if self.patches.is_some() || self.series_name.is_some() {
            let name = variants::pick_series_in(&k, &names, self.series_name.as_deref())?;
            let total = series
                .iter()
                .find(|(s, _)| *s == name)
                .and_then(|(_, n)| *n);
            if let (Some(n), Some(total)) = (self.patches, total) {
                if n > total {
                    bail!("--patches {n}: series {name} has {total} patches, expected 1..={total}");
                }
            }
        }
        Ok((p, Some(k)))
    }
}

/// The commands whose runs resume, each by the state file it keeps (a
/// sweep's and a bisect's directories may hold a results.json too, so
/// theirs are looked for first).
const RUN_STATES: [(&str, &str); 3] = [
    ("sweep", "sweep.json"),
    ("bisect", "bisect.json"),
    ("matrix", "results.json"),
];

/// `--resume DIR` of `command`: a directory holding that command's state,
/// else refused naming the flag: a missing or unrelated directory would
/// silently start a new run, and another command's run would be rewritten
/// as this one's (a sweep's cells run again as a matrix's, or a matrix run
/// grown into a sweep).
pub fn check_resume(dir: &Path, command: &str) -> Result<()> {
    if !dir.is_dir() {
        bail!(
            "--resume {}: no such directory, expected the run directory of an earlier run",
            dir.display()
        );
    }
    let shown = crate::util::shell_quote(&dir.display().to_string()).into_owned();
    match RUN_STATES.iter().find(|(_, f)| dir.join(f).exists()) {
        Some((c, _)) if *c == command => Ok(()),
        Some((c, f)) => bail!(
            "--resume {}: a {c} run (it holds {f}), not a {command} run: resume it with `cargo xtask {c} --resume {shown}`",
            dir.display(),
        ),
        None => {
            let f = RUN_STATES
                .iter()
                .find(|(c, _)| *c == command)
                .map_or("results.json", |(_, f)| *f);
            bail!(
                "--resume {}: nothing to resume, no {f} there (the {command} stopped before it wrote one); to run into it anyway, give it as --out",
                dir.display(),
            )
        }
    }
}

/// `--out DIR`: a directory, or a path to make one at.
pub fn check_out(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "--out {}: not a directory, expected a run directory",
            dir.display()
        );
    }
    Ok(())
}

/// The boots flags against each other and the matrix, as
/// `runner::Ctx::max_boots` combines them: `--max-boots` below the boots a
/// cell starts with (`--boots`, else run.boots) would be ignored, so it is
/// refused. `--boots N` alone is N boots and none added, whatever
/// run.max_boots says.
pub fn check_boots(m: &Matrix, boots: Option<u32>, max_boots: Option<u32>) -> Result<()> {
    match (boots, max_boots) {
        (Some(b), Some(mb)) if mb < b => bail!(
            "--max-boots {mb} is below --boots {b}: expected --max-boots {b}..={}",
            plan_matrix::BOOTS.end()
        ),
        (None, Some(mb)) if mb < m.run.boots => bail!(
            "--max-boots {mb} is below the matrix's run.boots = {}: expected --max-boots {}..={}, or fewer boots with --boots",
            m.run.boots,
            m.run.boots,
            plan_matrix::BOOTS.end()
        ),
        _ => Ok(()),
    }
}

/// The most `--retries` a cell gets.
pub const RETRIES: RangeInclusive<u32> = 0..=10;

/// A clap parser for an integer flag in `range` (matrix.toml's, where the
/// flag overrides a key).
pub fn in_range_u32(range: RangeInclusive<u32>) -> RangedU64ValueParser<u32> {
    RangedU64ValueParser::<u32>::new().range(u64::from(*range.start())..=u64::from(*range.end()))
}

/// The same for a u64 flag.
pub fn in_range_u64(range: RangeInclusive<u64>) -> RangedU64ValueParser<u64> {
    RangedU64ValueParser::<u64>::new().range(*range.start()..=*range.end())
}

/// `--patches N`: 1 or more (how many the series has is checked with the
/// matrix).
pub fn patches(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a number of patches, expected 1 or more (the first N of the series)"
        )),
    }
}

/// A finite number (`--above`, `--below`): NaN and infinities refused.
pub fn finite(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{s}` is not a finite number"))
    }
}

/// `--lore`: a message id, checked before any work (`host::lore`); the
/// error names the id and what is wrong with it.
fn msgid(s: &str) -> std::result::Result<String, String> {
    crate::host::lore::msgid_of(s)
}

/// A change in percent (`--regressed-by`): finite, in matrix.toml's range
/// for `min_effect_pct`.
pub fn percent(s: &str) -> std::result::Result<f64, String> {
    let v = finite(s)?;
    let r = plan_matrix::MIN_EFFECT_PCT;
    if r.contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{v} is out of range, expected a percentage in {}..={}",
            r.start(),
            r.end()
        ))
    }
}

/// The harness's own checkout: where matrix.toml, kernels/ and rootfs/ are.
fn repo_root() -> PathBuf {
    crate::util::checkout_root()
}

impl Cmd {
    fn run(self, env: &Env) -> Result<u8> {
        match self {
            Cmd::Matrix(c) => c.run(env),
            Cmd::Boot(c) => c.run(env),
            Cmd::Setup(c) => c.run(env),
            Cmd::List(c) => c.run(env),
            Cmd::Sweep(c) => c.run(env),
            Cmd::Bisect(c) => c.run(env),
            Cmd::BisectStep(c) => c.run(env),
            Cmd::Checkout(c) => c.run(env),
            Cmd::Patchcheck(c) => c.run(env),
            Cmd::Compare(c) => c.run(env),
            Cmd::AaRate(c) => c.run(env),
            Cmd::Merge(c) => c.run(env),
            Cmd::Report(c) => c.run(env),
            Cmd::History(c) => c.run(env),
        }
    }
}

/// Parses, dispatches, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A bad flag to bisect-step must abort `git bisect run` (128),
        // never pass for "bad" (clap's 2).
        Err(e) if e.use_stderr() && std::env::args().nth(1).as_deref() == Some("bisect-step") => {
            let _ = e.print();
            return ExitCode::from(128);
        }
        Err(e) => e.exit(),
    };
    crate::host::signals::install();
    let root = repo_root();
    let cwd = std::env::current_dir().unwrap_or_else(|_| root.clone());
    let env = Env { root, cwd };
    // The harness's own files are named relative to its checkout.
    if let Err(e) = std::env::set_current_dir(&env.root) {
        eprintln!("error: cannot enter {}: {e}", env.root.display());
        return ExitCode::from(2);
    }
    let step = matches!(cli.cmd, Cmd::BisectStep(_));
    // A bad KMATRIX_ACCEL (or other policy variable) is refused before any
    // command, whether or not it boots anything.
    match Policy::from_env() {
        Ok(p) => p.apply(),
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    }
    match cli.cmd.run(&env) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            // git bisect run: 125 is skip, 1-127 bad, 128+ aborts the
            // bisect. A harness error must abort, never pass for "bad".
            ExitCode::from(if step { 128 } else { 2 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matrix::MatrixArgs;
    use super::*;

    fn env() -> Env {
        Env {
            root: "/opt/kmatrix".into(),
            cwd: "/home/dev/linux".into(),
        }
    }

    fn matrix_args(args: &[&str]) -> MatrixArgs {
        let cli = Cli::try_parse_from(["cargo xtask", "matrix"].iter().chain(args)).unwrap();
        match cli.cmd {
            Cmd::Matrix(m) => m.args,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn typed_paths_resolve_against_the_directory_they_were_typed_in() {
        let e = env();
        let mut a = matrix_args(&[
            "--matrix",
            "mine.toml",
            "--series",
            "patches",
            "--tree",
            "/src/linux",
            "--out",
            "runs/a",
        ]);
        a.resolve(&e);
        assert_eq!(a.source.series_dir, Some("/home/dev/linux/patches".into()));
        assert_eq!(a.source.tree, Some("/src/linux".into()));
        assert_eq!(a.out, Some("/home/dev/linux/runs/a".into()));
        // --matrix is kept as typed (results.json, reproducers) and read
        // from the user's directory.
        assert_eq!(a.matrix.shown(), "mine.toml");
        assert_eq!(
            a.matrix.file(&e),
            PathBuf::from("/home/dev/linux/mine.toml")
        );
    }

    #[test]
    fn the_default_matrix_is_the_harness_own() {
        let a = matrix_args(&[]);
        assert_eq!(
            a.matrix.file(&env()),
            PathBuf::from("/opt/kmatrix/matrix.toml")
        );
        assert_eq!(a.matrix.shown(), "matrix.toml");
        assert_eq!(
            env().results("latest"),
            PathBuf::from("/opt/kmatrix/results/latest")
        );
    }

    #[test]
    fn policy_flags_turn_pinning_and_keep_busy_off() {
        let a = matrix_args(&["--no-pin"]);
        assert!(a.policy.no_pin && !a.policy.no_keep_busy);
        let p = Policy::default();
        let mut q = p.clone();
        q.pin_vcpus &= !a.policy.no_pin;
        q.keep_busy &= !a.policy.no_keep_busy;
        assert!(!q.pin_vcpus && q.keep_busy);
        assert_eq!(
            matrix_args(&["--jobs", "3"])
                .policy
                .policy()
                .unwrap()
                .boot_jobs,
            Some(3)
        );
        assert_eq!(matrix_args(&[]).policy.policy().unwrap().boot_jobs, None);
    }

    #[test]
    fn conflicting_and_out_of_range_flags_are_refused_by_the_parser() {
        for bad in [
            &["matrix", "--out", "a", "--resume", "b"][..],
            &["matrix", "--boots", "0"],
            &["matrix", "--boots", "51"],
            &["matrix", "--jobs", "0"],
            &["matrix", "--jobs", "65"],
            &["matrix", "--jobs", "2", "--no-interleave"],
            &["matrix", "--range", "a..b"],
            &["matrix", "--tree", "t", "--rev", "x", "--range", "a..b"],
            &["compare", "--out", "x"],
            &["merge", "run"],
            // A bisect judges one test: a target or a matrix test.
            &["bisect", "--kselftest", "pidfd", "--test", "seccomp_bpf"],
            &[
                "bisect",
                "--kselftest",
                "pidfd",
                "--metric",
                "m",
                "--above",
                "1",
            ],
            &["bisect", "--case", "c"],
        ] {
            let r = Cli::try_parse_from(["cargo xtask"].iter().chain(bad));
            assert!(r.is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_stored_matrix_command_round_trips() {
        let mut a = matrix_args(&[
            "--kernel",
            "6.1",
            "--test",
            "seccomp_bpf",
            "--boots",
            "2",
            "--no-keep-busy",
            "--series",
            "p",
            "--patches",
            "3",
            "--cmdline",
            "quiet",
        ]);
        a.resolve(&env());
        let back: MatrixArgs = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.select.kernel, ["6.1"]);
        assert_eq!(back.boots, Some(2));
        assert_eq!(back.source.patches, Some(3));
        assert!(back.policy.no_keep_busy);
    }

    /// The harness's own checkout as both root and working directory.
    fn here() -> Env {
        Env {
            root: repo_root(),
            cwd: repo_root(),
        }
    }

    /// `matrix ARGS` (or `sweep ARGS`) checked against the default matrix:
    /// the refusal, or None.
    fn refusal(sweep: bool, args: &[&str]) -> Option<String> {
        let env = here();
        let cmd = if sweep { "sweep" } else { "matrix" };
        let cli = match Cli::try_parse_from(["cargo xtask", cmd].iter().chain(args)) {
            Ok(c) => c,
            Err(e) => return Some(e.to_string()),
        };
        let mut a = match cli.cmd {
            Cmd::Matrix(m) => m.args,
            Cmd::Sweep(s) => s.args,
            other => panic!("parsed as {other:?}"),
        };
        a.resolve(&env);
        let m = a.matrix.load_checked(&env).unwrap();
        a.validate(&m, &env, sweep).err().map(|e| format!("{e:#}"))
    }

    #[test]
    fn a_series_dir_gets_the_checks_a_matrix_series_gets() {
        // Outside the checkout, as a user's own series is (it removes it).
        let d = std::env::temp_dir().join(format!("kmatrix-series-flag-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let patch = "From: a <a@b>\nSubject: [PATCH] x\n\n---\n";
        let mk = |name: &str, series: &str| {
            let dir = d.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("0001-x.patch"), patch).unwrap();
            std::fs::write(dir.join("series"), series).unwrap();
            dir.display().to_string()
        };
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("outside.patch"), patch).unwrap();
        let escape = mk("escape", "0001-x.patch\n../outside.patch\n");
        let absolute = mk("absolute", "/etc/passwd\n");
        let missing = mk("missing", "# order\n0001-x.patch\n0002-y.patch\n");
        let linked = mk("linked", "0001-x.patch\nlink.patch\n");
        std::os::unix::fs::symlink("/etc/passwd", d.join("linked/link.patch")).unwrap();
        let dir = mk("dir", "0001-x.patch\nsub\n");
        std::fs::create_dir_all(d.join("dir/sub")).unwrap();
        let base = mk("base", "0001-x.patch\n");
        let cases = [
            (
                escape.as_str(),
                format!("--series {escape}: series --series: {escape}/series:2: `../outside.patch` leads out of the series directory (to {}/outside.patch)", d.display()),
            ),
            (
                absolute.as_str(),
                format!("{absolute}/series:1: `/etc/passwd` leads out of the series directory (to /etc/passwd)"),
            ),
            (
                missing.as_str(),
                format!("{missing}/series:3: `0002-y.patch` is listed but there is no such file"),
            ),
            (
                linked.as_str(),
                format!("{linked}/series:2: `link.patch` leads out of the series directory (to /etc/passwd)"),
            ),
            (
                dir.as_str(),
                format!("{dir}/series:2: `sub` is listed but is not a regular file"),
            ),
            (
                base.as_str(),
                format!("--series {base}: a series cannot be called `base` (its variant is named after the directory): rename it"),
            ),
        ];
        for (dir, says) in &cases {
            let e = refusal(false, &["--kernel", "6.1", "--series", dir])
                .unwrap_or_else(|| panic!("{dir} accepted"));
            assert!(e.contains(says.as_str()), "{dir}:\n{e}\nexpected: {says}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn flags_that_contradict_each_other_or_the_matrix_are_refused_before_any_work() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--max-boots", "2", "--boots", "5"],
                "--max-boots 2 is below --boots 5: expected --max-boots 5..=50",
            ),
            (
                &["--max-boots", "2"],
                "--max-boots 2 is below the matrix's run.boots = 3",
            ),
            (&["--cell-timeout", "0"], "0 is not in 1..=86400"),
            (&["--retries", "11"], "11 is not in 0..=10"),
            (&["--boots", "51"], "51 is not in 1..=50"),
            (&["--patches", "0"], "expected 1 or more"),
            (
                &["--kernel", "6.1", "--patches", "99"],
                "--patches 99: series seccomp-sync-wakeup has 6 patches, expected 1..=6",
            ),
            (
                &["--kernel", "6.1", "--series-name", "nope"],
                "--series-name nope: not a series of kernel 6.1; it has: seccomp-sync-wakeup",
            ),
            (
                &["--patches", "2"],
                "say which --kernel: the matrix has 6.1, 6.12",
            ),
            (
                &["--arch", "riscv"],
                "--arch riscv: not in the matrix; known: x86_64, arm64",
            ),
            (
                &["--kernel", "9.9"],
                "--kernel 9.9: not in the matrix; known: 6.1, 6.12",
            ),
            (
                &["--variant", "nope"],
                "--variant nope: not in the matrix; known: base, mm-cid-work, mm-cid-work@1, seccomp-sync-wakeup",
            ),
            (&["--variant", "base~aa"], "--variant base~aa: not in the matrix"),
            (&["--test", "nope"], "--test nope: not in the matrix; known: seccomp_bpf"),
            (
                &["--cell", "6.1/base/x86_64/huge"],
                "--cell 6.1/base/x86_64/huge: no config `huge` in the matrix; known: tiny, wide",
            ),
            (
                &["--kernel", "6.1", "--series", "no/such/dir"],
                "no/such/dir: No such file or directory (os error 2), expected a directory of patch files",
            ),
            (
                &["--kernel", "6.1", "--series", "kernels/configs"],
                "series --series: no patches in",
            ),
            (&["--tree", "no/such/tree"], "no/such/tree: No such file"),
            (&["--tree", "kernels"], "kernels: not a git checkout"),
            (&["--out", "matrix.toml"], "--out"),
            (&["--resume", "no/such/run"], "no such directory"),
            (&["--resume", "kernels"], "nothing to resume, no results.json there"),
        ];
        for (args, says) in cases {
            let e = refusal(false, args).unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(says), "{args:?}: {e}");
        }
        // What the runner makes of them: --boots alone is that many boots,
        // none added (above run.max_boots too); the A/A twin with --aa;
        // a --series DIR's variant; a --tree's kernel.
        for ok in [
            &["--boots", "20"][..],
            &["--boots", "2", "--max-boots", "6"],
            &["--max-boots", "6"],
            &["--aa", "--variant", "base~aa", "--kernel", "6.1"],
            &[
                "--kernel",
                "6.1",
                "--series",
                "tests/faults/splat",
                "--variant",
                "splat",
            ],
            &["--kernel", "6.1", "--patches", "6", "--test", "mm_cid"],
            &[
                "--cell",
                "*/base/*/wide",
                "--retries",
                "10",
                "--cell-timeout",
                "86400",
            ],
        ] {
            assert_eq!(refusal(false, ok), None, "{ok:?}");
        }
        if repo_root().join(".git").exists() {
            let name = variants::name_of(&std::fs::canonicalize(repo_root()).unwrap());
            let tree = repo_root().display().to_string();
            assert_eq!(refusal(false, &["--tree", &tree, "--kernel", &name]), None);
            let e = refusal(false, &["--tree", &tree, "--kernel", "6.1"]).unwrap();
            assert!(
                e.starts_with("--kernel 6.1: not in the matrix; known: "),
                "{e}"
            );
            let e = refusal(false, &["--tree", &tree, "--range", "v6.1"]).unwrap();
            assert!(e.contains("expected BASE..TIP"), "{e}");
        }
        // A sweep's variants are the prefixes of its series.
        assert_eq!(
            refusal(
                true,
                &["--kernel", "6.1", "--variant", "seccomp-sync-wakeup@6"]
            ),
            None
        );
        let e = refusal(
            true,
            &["--kernel", "6.1", "--variant", "seccomp-sync-wakeup@7"],
        )
        .unwrap();
        assert!(
            e.starts_with("--variant seccomp-sync-wakeup@7: not in the matrix"),
            "{e}"
        );
        let e = refusal(true, &[]).unwrap();
        assert!(e.contains("say which --kernel"), "{e}");
        let e = refusal(true, &["--kernel", "9.9"]).unwrap();
        assert!(e.starts_with("--kernel 9.9: not in the matrix"), "{e}");
    }

    #[test]
    fn resume_wants_a_run_directory_of_its_own_command() {
        let dir =
            crate::util::test_tmp().join(format!("kmatrix-resume-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = check_resume(&dir, "matrix").unwrap_err().to_string();
        assert!(e.contains("no such directory"), "{e}");
        std::fs::create_dir_all(&dir).unwrap();
        let e = check_resume(&dir, "sweep").unwrap_err().to_string();
        assert!(
            e.contains(
                "nothing to resume, no sweep.json there (the sweep stopped before it wrote one)"
            ) && e.contains("give it as --out"),
            "{e}"
        );
        std::fs::write(dir.join("results.json"), "{}").unwrap();
        check_resume(&dir, "matrix").unwrap();
        let d = dir.display();
        for (cmd, says) in [
            ("sweep", format!("--resume {d}: a matrix run (it holds results.json), not a sweep run: resume it with `cargo xtask matrix --resume {d}`")),
            ("bisect", format!("--resume {d}: a matrix run (it holds results.json), not a bisect run")),
        ] {
            let e = check_resume(&dir, cmd).unwrap_err().to_string();
            assert_eq!(e.lines().next().unwrap().split(": resume").next(), says.split(": resume").next(), "{e}");
            assert!(e.starts_with(&says), "{e}");
        }
        std::fs::write(dir.join("sweep.json"), "{}").unwrap();
        check_resume(&dir, "sweep").unwrap();
        let e = check_resume(&dir, "matrix").unwrap_err().to_string();
        assert_eq!(
            e,
            format!("--resume {d}: a sweep run (it holds sweep.json), not a matrix run: resume it with `cargo xtask sweep --resume {d}`")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn number_flags_refuse_what_is_not_a_finite_number_in_range() {
        assert_eq!(finite("-2.5"), Ok(-2.5));
        for bad in ["NaN", "nan", "inf", "-inf", "x", ""] {
            assert!(finite(bad).is_err(), "{bad}");
        }
        assert_eq!(percent("10"), Ok(10.0));
        assert_eq!(percent("0"), Ok(0.0));
        for bad in ["-5", "NaN", "1001", "inf"] {
            assert!(percent(bad).is_err(), "{bad}");
        }
        assert_eq!(patches("3"), Ok(3));
        for bad in ["0", "-1", "x"] {
            assert!(patches(bad).is_err(), "{bad}");
        }
    }

    /// bisect-step speaks `git bisect run`'s codes: a flag clap refuses is
    /// never an exit 2 (which git would take for "bad").
    #[test]
    fn a_bisect_step_flag_refused_by_the_parser_is_not_a_bad_commit() {
        let r = Cli::try_parse_from([
            "cargo xtask",
            "bisect-step",
            "--boots",
            "0",
            "--new-failures",
        ]);
        let e = r.unwrap_err();
        assert!(e.use_stderr(), "{e}");
    }
}
