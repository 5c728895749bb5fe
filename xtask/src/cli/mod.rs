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
mod report;
mod reports;
mod setup;
mod step;
mod sweep;

mod bisect;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use serde::{Deserialize, Serialize};

use crate::plan::matrix::{Filters, Matrix};
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
    /// Install the host packages the harness needs (Debian 12, root or sudo),
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
}

impl HostOpts {
    /// Installs what the matrix needs (unless --no-setup) and opens the
    /// cache (waiting for its lock unless --no-wait).
    pub fn prepare(&self, m: &Matrix) -> Result<crate::host::cache::Cache> {
        if !self.no_setup {
            crate::host::setup::ensure(&crate::plan::debian_packages(m))?;
        }
        crate::host::cache::Cache::open(crate::host::cache::default_root(), !self.no_wait)
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
}

impl Selection {
    pub fn filters(&self) -> Filters {
        Filters {
            arch: self.arch.clone(),
            kernel: self.kernel.clone(),
            variant: self.variant.clone(),
            test: self.test.clone(),
            cell: self.cell.clone(),
        }
    }
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
}

impl PolicyArgs {
    pub fn policy(&self) -> Result<Policy> {
        let mut p = Policy::from_env()?;
        p.pin_vcpus &= !self.no_pin;
        p.keep_busy &= !self.no_keep_busy;
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
    /// the order of its `series` file, else by name). Replaces the
    /// kernel's series.
    #[arg(long = "series", value_name = "DIR", conflicts_with = "range")]
    pub series_dir: Option<PathBuf>,
    /// Which of the kernel's series, when it has several.
    #[arg(long, value_name = "NAME")]
    pub series_name: Option<String>,
    /// Only the first N patches of the series (what a sweep or bisect step
    /// built; its reproducer uses this).
    #[arg(long, value_name = "N")]
    pub patches: Option<usize>,
}

impl SourceArgs {
    /// Makes --tree and --series absolute against the user's directory.
    pub fn resolve(&mut self, env: &Env) {
        for p in [&mut self.tree, &mut self.series_dir].into_iter().flatten() {
            *p = env.path(p);
        }
    }

    /// The flags again, for a reproducer command.
    pub fn flags(&self) -> String {
        let mut s = String::new();
        if let Some(t) = &self.tree {
            s += &format!(" --tree {}", t.display());
        }
        if let Some(r) = &self.range {
            s += &format!(" --range {r}");
        }
        if let Some(r) = &self.rev {
            s += &format!(" --rev {r}");
        }
        if let Some(d) = &self.series_dir {
            s += &format!(" --series {}", d.display());
        }
        s
    }

    /// The source options as the bisect layer takes them.
    pub fn spec(&self) -> crate::bisect::Sources {
        crate::bisect::Sources {
            tree: self.tree.clone(),
            range: self.range.clone(),
            rev: self.rev.clone(),
            series_dir: self.series_dir.clone(),
            series_name: self.series_name.clone(),
            patches: self.patches,
        }
    }
}

/// The harness's own checkout: where matrix.toml, kernels/ and rootfs/ are.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the repository")
        .to_path_buf()
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
            Cmd::Compare(c) => c.run(env),
            Cmd::AaRate(c) => c.run(env),
            Cmd::Merge(c) => c.run(env),
            Cmd::Report(c) => c.run(env),
        }
    }
}

/// Parses, dispatches, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
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

/// Prints a REGRESSION line per regressed comparison; true when any.
pub fn report_regressions(cs: &[crate::schema::Comparison]) -> bool {
    let mut any = false;
    for c in cs
        .iter()
        .filter(|c| c.verdict == crate::schema::Verdict::Regressed)
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
    }

    #[test]
    fn conflicting_and_out_of_range_flags_are_refused_by_the_parser() {
        for bad in [
            &["matrix", "--out", "a", "--resume", "b"][..],
            &["matrix", "--boots", "0"],
            &["matrix", "--boots", "51"],
            &["matrix", "--range", "a..b"],
            &["matrix", "--tree", "t", "--rev", "x", "--range", "a..b"],
            &["compare", "--out", "x"],
            &["merge", "run"],
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
}
