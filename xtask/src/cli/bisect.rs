//! `cargo xtask bisect`: the first patch of a series at which a predicate
//! turns bad, for one arch/config. The command's parsed arguments are
//! stored in bisect.json, so `--resume DIR` continues it from anywhere.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::{Env, HostOpts, MatrixOpt, SourceArgs};
use crate::bisect::predicate::Predicate;
use crate::bisect::{self, report::Reproducer, BisectRequest, Bisection};
use crate::host::ui;
use crate::plan::matrix::{self as plan_matrix, Matrix, TestKind};
use crate::plan::variants;
use crate::runner::driver::{Driver, Opened, RunOptions};
use crate::runner::policy::Policy;
use crate::schema::Outcome;

#[derive(Args, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct BisectArgs {
    #[command(flatten)]
    pub opts: StepOpts,
    /// The kernel of the matrix (when it has several).
    #[arg(long)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub pred: PredicateArgs,
    /// Run directory (default results/bisect-<timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue the bisect in DIR (its arguments are read from DIR/bisect.json).
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
}

impl BisectArgs {
    /// Every path made absolute against the user's directory.
    pub fn resolve(&mut self, env: &Env) {
        self.opts.matrix.resolve(env);
        self.source.resolve(env);
        for p in [&mut self.out, &mut self.resume].into_iter().flatten() {
            *p = env.path(p);
        }
    }

    /// Everything the flags say that can be checked before any work:
    /// against each other, the matrix (kernel, series, arch, config, the
    /// predicate's test or metric) and the file system.
    pub fn validate(&self, m: &Matrix, env: &Env) -> Result<()> {
        if let Some(dir) = &self.out {
            super::check_out(dir)?;
        }
        let (preview, kernel) = self.source.check(m, &env.root, self.kernel.as_deref())?;
        if let Some(k) = &self.kernel {
            plan_matrix::known_value("kernel", k, &preview.kernels)?;
        }
        let k = match kernel {
            Some(k) => k,
            None => variants::pick_one("kernel", self.kernel.as_deref(), preview.kernels.clone())?,
        };
        let series = preview.series_of(m, &env.root, &k, None);
        let names: Vec<String> = series.iter().map(|(s, _)| s.clone()).collect();
        variants::pick_series_in(&k, &names, self.source.series_name.as_deref())?;
        // A --tree is built with run.configs (it replaces the kernels).
        let configs = match &preview.tree {
            Some(_) => m.run.configs.iter().map(|c| c.get_ref().clone()).collect(),
            None => m.kernel_configs(&k),
        };
        self.opts.validate(m, configs, &self.pred)
    }

    /// What a step's reproducer repeats of this command line.
    fn reproducer(&self) -> Reproducer {
        Reproducer {
            matrix: self
                .opts
                .matrix
                .matrix
                .as_ref()
                .map(|p| p.display().to_string()),
            source_flags: self.source.flags() + &self.pred.own_test_flags(),
            kernel: self.kernel.clone(),
            config: self.opts.config.clone(),
            series_named: self.source.series_name.is_some(),
        }
    }
}

#[derive(Args, Debug)]
pub struct BisectCmd {
    #[command(flatten)]
    pub args: BisectArgs,
}

/// The arguments stored in `DIR/bisect.json`, with this invocation's
/// --no-setup/--no-wait: what `--resume DIR` continues.
fn resumed(dir: PathBuf, now: &BisectArgs) -> Result<BisectArgs> {
    let Some(state) =
        bisect::State::load(&dir).with_context(|| format!("--resume {}", dir.display()))?
    else {
        bail!("--resume {}: no bisect.json there", dir.display());
    };
    let stored: BisectArgs = serde_json::from_value(state.command).with_context(|| {
        format!(
            "--resume {}: bisect.json holds no command this version can read",
            dir.display()
        )
    })?;
    Ok(BisectArgs {
        resume: Some(dir),
        out: None,
        opts: StepOpts {
            host: now.opts.host.clone(),
            ..stored.opts
        },
        ..stored
    })
}

impl BisectCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let mut a = self.args;
        a.resolve(env);
        a.source.fetch_lore(&a.opts.host)?;
        if let Some(dir) = a.resume.clone() {
            super::check_resume(&dir, "bisect")?;
            a = resumed(dir, &a)?;
        }
        let mut m = a.opts.matrix.load_checked(env)?;
        a.pred.declare(&mut m)?;
        a.validate(&m, env)?;
        let cache = a.opts.host.prepare(&m)?;
        let pred_args = a.pred.clone();
        let b = Bisection::plan(
            m,
            &env.root,
            &cache,
            BisectRequest {
                kernel: a.kernel.as_deref(),
                sources: &a.source.spec(),
                arch: a.pred.arch(a.opts.arch.as_deref())?,
                config: a.opts.config.as_deref(),
                pred: &move |m: &Matrix| pred_args.predicate(m),
                boots: a.opts.boots,
                max_boots: a.opts.max_boots(),
                cell_timeout_s: a.opts.cell_timeout,
                reproducer: a.reproducer(),
            },
        )?;
        let run_dir = match (&a.resume, &a.out) {
            (Some(d), _) | (None, Some(d)) => d.clone(),
            (None, None) => env.results(&format!("bisect-{}", crate::util::timestamp())),
        };
        let ui = ui::Ui::new();
        let opts = RunOptions {
            cell_timeout_s: a.opts.cell_timeout,
            matrix_shown: a.opts.matrix.shown(),
            source_flags: a.source.flags() + &a.pred.own_test_flags(),
            ..Default::default()
        };
        let mut d = match Driver::open(
            &b.m,
            &env.root,
            &cache,
            Policy::from_env()?,
            run_dir,
            opts,
            &ui,
        )? {
            Opened::Ready(d) => d,
            Opened::Refused { why, .. } => {
                eprintln!("error: {why}");
                return Ok(2);
            }
        };
        let run_dir = d.run_dir().to_path_buf();
        let mut state = b.state(&run_dir, a.resume.is_some(), serde_json::to_value(&a)?)?;
        ui.println(&format!(
            "kmatrix bisect: {} patches of {} on {} {}/{}; bad when {}; results {}",
            b.patches.len(),
            b.series,
            b.kernel,
            b.arch,
            b.config,
            state.predicate_text,
            run_dir.display()
        ));
        if !state.steps.is_empty() {
            ui.println(&format!(
                "resuming: {} steps already judged",
                state.steps.len()
            ));
        }
        let answer = b.run(&mut d, &mut state, &ui)?;
        bisect::conclude(&mut state, answer, &run_dir)
    }
}

/// What makes a step bad, from the command line.
#[derive(Args, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[command(group(clap::ArgGroup::new("subject").args(["test", "kselftest", "kunit"])))]
pub struct PredicateArgs {
    /// Judge by this test's outcome (or one case's, with --case).
    #[arg(long, conflicts_with = "metric")]
    pub test: Option<String>,
    /// Judge by a kselftest target of the tree, as `matrix --kselftest`
    /// runs it (`TARGET[:PROGRAM]`), like --test.
    #[arg(long, value_name = "TARGET[:PROGRAM]", conflicts_with_all = ["test", "metric"])]
    #[serde(default)]
    pub kselftest: Option<String>,
    /// Judge by KUnit suites of the tree, as `matrix --kunit` runs them
    /// (the test `kunit`, a case a suite or `SUITE.CASE`), like --test.
    #[arg(long, value_name = "GLOB", conflicts_with_all = ["test", "metric", "kselftest"])]
    #[serde(default)]
    pub kunit: Option<String>,
    /// With --kunit: the tree's .kunitconfig that builds the suites.
    #[arg(long, value_name = "PATH", requires = "kunit")]
    #[serde(default)]
    pub kunitconfig: Option<String>,
    /// With --test, --kselftest or --kunit: the case, e.g.
    /// global.user_notification_sync.
    #[arg(long, requires = "subject")]
    pub case: Option<String>,
    /// With --test, --kselftest or --kunit: the outcomes that are bad
    /// (comma-separated: fail, pass, skip, crash, timeout).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fail",
        requires = "subject"
    )]
    pub bad: Vec<String>,
    /// Bad when a test or case that passes on the base does not.
    #[arg(long, conflicts_with_all = ["test", "metric"])]
    pub new_failures: bool,
    /// Bad when the step's kernel does not build for ARCH (its config or
    /// make fails); nothing is booted. A patch that does not apply is a
    /// skip. ARCH is the bisect's arch (--arch, if given, must agree).
    #[arg(long, value_name = "ARCH", conflicts_with_all = ["test", "metric", "new_failures"])]
    pub builds: Option<String>,
    /// Bad when a crash whose title matches this glob appears
    /// (`'BUG: kernel NULL pointer dereference in *'`); other crashes at a
    /// step are reported, not taken for it. With --test, only that test
    /// runs at each step.
    #[arg(long, value_name = "TITLE_GLOB",
          conflicts_with_all = ["metric", "kselftest", "kunit", "new_failures", "builds", "case"])]
    #[serde(default)]
    pub crash: Option<String>,
    /// Judge by this metric, e.g. seccomp_notify.default.same-cpu.
    #[arg(long)]
    pub metric: Option<String>,
    /// With --metric: bad when the median is above this (its 95% CI is).
    #[arg(long, requires = "metric", conflicts_with_all = ["below", "regressed_by"],
          value_parser = super::finite, allow_negative_numbers = true)]
    pub above: Option<f64>,
    /// With --metric: bad when the median is below this.
    #[arg(long, requires = "metric", conflicts_with = "regressed_by",
          value_parser = super::finite, allow_negative_numbers = true)]
    pub below: Option<f64>,
    /// With --metric: bad when worse than the base by more than PCT %
    /// (the 95% CI of the change, over repeated boots), 0-1000.
    #[arg(long, value_name = "PCT", requires = "metric",
          value_parser = super::percent, allow_negative_numbers = true)]
    pub regressed_by: Option<f64>,
}

/// `--case` against what the matrix declares of the test: a `programs` or
/// `perf` test's cases are listed in matrix.toml, and a `shell` test has
/// none, so a case they do not have is refused before any work. A
/// kselftest's or bench's cases are known once it has run: the first step
/// names the nearest when it has no such case.
fn check_case(m: &Matrix, test: &str, case: &str) -> Result<()> {
    let t = &m.test[test];
    let declared: Vec<String> = match t.kind {
        TestKind::Programs | TestKind::Perf => t.cases.iter().map(|c| c.name.clone()).collect(),
        TestKind::Shell => bail!("--case {case}: test {test} is a shell command, which reports no cases; judge it whole, without --case"),
        TestKind::Kselftest | TestKind::Bench | TestKind::Target | TestKind::Kunit => {
            return Ok(())
        }
    };
    if declared.iter().any(|c| c == case) {
        return Ok(());
    }
    bail!(
        "--case {case}: not a case of test {test}; its cases (matrix.toml): {}",
        declared.join(", ")
    )
}

impl PredicateArgs {
    /// Declares the --kselftest target or --kunit test in `m` (before
    /// `predicate`).
    pub fn declare(&self, m: &mut Matrix) -> Result<()> {
        crate::plan::targets::declare(m, self.kselftest.as_slice())?;
        crate::plan::targets::declare_kunit(m, self.kunit.as_deref(), self.kunitconfig.as_deref())?;
        Ok(())
    }

    /// `--kselftest`, `--kunit`, `--kunitconfig` again, for a reproducer:
    /// a space before each.
    pub fn own_test_flags(&self) -> String {
        super::own_test_flags(self.kselftest.as_slice(), &self.kunit, &self.kunitconfig)
    }

    pub fn predicate(&self, m: &Matrix) -> Result<Predicate> {
        let tests: Vec<String> = m.test.keys().cloned().collect();
        if let Some(title) = &self.crash {
            crate::plan::glob::check(title).map_err(|e| anyhow::anyhow!("--crash {title}: {e}"))?;
            if let Some(test) = &self.test {
                plan_matrix::known_value("test", test, &tests)?;
            }
            return Ok(Predicate::Crash {
                title: title.clone(),
                test: self.test.clone(),
            });
        }
        let target = self
            .kselftest
            .as_deref()
            .map(crate::plan::targets::test_of)
            .or(self
                .kunit
                .as_ref()
                .map(|_| crate::plan::targets::KUNIT_TEST.to_string()));
        if let Some(test) = self.test.as_ref().or(target.as_ref()) {
            plan_matrix::known_value("test", test, &tests)?;
            let bad =
                self.bad
                    .iter()
                    .map(|b| {
                        serde_json::from_value::<Outcome>(serde_json::Value::String(b.clone()))
                            .map_err(|_| {
                                anyhow::anyhow!(
                                    "--bad {b}: expected fail, pass, skip, crash or timeout"
                                )
                            })
                    })
                    .collect::<Result<Vec<_>>>()?;
            if let Some(case) = &self.case {
                check_case(m, test, case)?;
            }
            return Ok(Predicate::Outcome {
                test: test.clone(),
                case: self.case.clone(),
                bad,
            });
        }
        if self.new_failures {
            return Ok(Predicate::NewFailures);
        }
        if let Some(arch) = &self.builds {
            plan_matrix::known_value("arch", arch, &m.build_arches())
                .map_err(|e| anyhow::anyhow!("--builds {arch}: {e}"))?;
            return Ok(Predicate::Builds { arch: arch.clone() });
        }
        if let Some(metric) = &self.metric {
            let test = metric.split('.').next().unwrap_or_default();
            if !tests.iter().any(|t| t == test) {
                bail!(
                    "--metric {metric}: no test `{test}` in the matrix (a metric is named TEST.config.placement); known tests: {}",
                    tests.join(", ")
                );
            }
            return match (self.above, self.below, self.regressed_by) {
                (Some(v), None, None) => Ok(Predicate::Threshold {
                    metric: metric.clone(),
                    value: v,
                    bad_above: true,
                }),
                (None, Some(v), None) => Ok(Predicate::Threshold {
                    metric: metric.clone(),
                    value: v,
                    bad_above: false,
                }),
                (None, None, Some(p)) => Ok(Predicate::Regression {
                    metric: metric.clone(),
                    pct: p,
                }),
                _ => bail!("--metric needs one of --above X, --below X, --regressed-by PCT"),
            };
        }
        bail!("say what is bad: --test T [--case C] [--bad fail], --new-failures, --crash TITLE_GLOB, --builds ARCH, or --metric M with --above/--below/--regressed-by")
    }

    /// The arch the predicate names (`--builds ARCH`), reconciled with
    /// `--arch`: either alone, or both the same.
    pub fn arch<'a>(&'a self, arch: Option<&'a str>) -> Result<Option<&'a str>> {
        match (self.builds.as_deref(), arch) {
            (Some(b), Some(a)) if a != b => {
                bail!("--builds {b} and --arch {a}: a build bisect judges the arch it builds")
            }
            (b, a) => Ok(a.or(b)),
        }
    }
}

/// What every step of `bisect` and `bisect-step` is run with.
#[derive(Args, Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct StepOpts {
    #[command(flatten)]
    pub matrix: MatrixOpt,
    /// The arch (when the matrix has several).
    #[arg(long)]
    pub arch: Option<String>,
    /// The config (when the matrix has several).
    #[arg(long)]
    pub config: Option<String>,
    /// Boots per step (default: 1 for a test predicate, run.boots for a metric).
    #[arg(long, value_parser = super::in_range_u32(plan_matrix::BOOTS))]
    pub boots: Option<u32>,
    /// A metric step whose CI straddles the threshold is booted again with
    /// twice the boots, up to this many (default 12); then it is skipped
    /// as unclear.
    #[arg(long, value_name = "N", value_parser = super::in_range_u32(plan_matrix::BOOTS))]
    pub max_boots: Option<u32>,
    #[command(flatten)]
    pub host: HostOpts,
    /// QEMU budget per boot in seconds (overrides run.cell_timeout_s).
    #[arg(long, value_parser = super::in_range_u64(plan_matrix::CELL_TIMEOUT_S))]
    pub cell_timeout: Option<u64>,
}

impl StepOpts {
    /// `--max-boots` unless given.
    pub const DEFAULT_MAX_BOOTS: u32 = 12;

    /// The most boots a step gets.
    pub fn max_boots(&self) -> u32 {
        self.max_boots.unwrap_or(Self::DEFAULT_MAX_BOOTS)
    }

    /// --arch among the matrix's arches, --config among `configs`, the
    /// predicate's names, and --max-boots not below the boots a step
    /// starts with (it would be ignored). `--boots N` alone may exceed the
    /// default --max-boots: N boots a step, none added.
    pub fn validate(&self, m: &Matrix, configs: Vec<String>, pred: &PredicateArgs) -> Result<()> {
        // The predicate first: `--builds ARCH` names the arch.
        let p = pred.predicate(m)?;
        let arch = variants::pick_one("arch", pred.arch(self.arch.as_deref())?, p.arches(m))?;
        p.pick_config(m, &arch, self.config.as_deref(), configs)?;
        let first = bisect::first_boots(self.boots, &p, m);
        if let Some(mb) = self.max_boots.filter(|mb| *mb < first) {
            bail!(
                "--max-boots {mb} is below the {first} boots a step starts with ({}): expected --max-boots {first}..={}",
                if self.boots.is_some() {
                    "--boots"
                } else {
                    "1 for a test predicate, run.boots for a metric"
                },
                plan_matrix::BOOTS.end()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> BisectArgs {
        let cli =
            super::super::Cli::try_parse_from(["cargo xtask", "bisect"].iter().chain(args.iter()))
                .unwrap();
        match cli.cmd {
            super::super::Cmd::Bisect(b) => b.args,
            other => panic!("parsed as {other:?}"),
        }
    }

    /// A step's reproducer is a command the CLI takes: `patchcheck` for a
    /// build bisect (i386 is no cell's arch, `matrix` would refuse it),
    /// `matrix` otherwise; the base step of a build bisect is patchcheck's
    /// first column.
    #[test]
    fn step_reproducers_are_commands_the_cli_takes() {
        let b = parse(&[
            "--kernel",
            "6.1",
            "--series",
            "tests/patchcheck/planted",
            "--builds",
            "i386",
        ]);
        let r = b.reproducer();
        let build = crate::bisect::report::step_reproducer(&r, "planted", 3, "i386", &[], true);
        assert!(
            build.starts_with("cargo xtask patchcheck --series ")
                && build.ends_with(" --kernel 6.1 --patches 3 --arch i386"),
            "{build}"
        );
        let base = crate::bisect::report::step_reproducer(&r, "planted", 0, "i386", &[], true);
        assert!(base.ends_with(" --patches 1 --arch i386"), "{base}");
        let boot = crate::bisect::report::step_reproducer(
            &r,
            "planted",
            2,
            "x86_64",
            &["seccomp_bpf".to_string()],
            false,
        );
        assert!(
            boot.starts_with("cargo xtask matrix --series ")
                && boot
                    .ends_with(" --patches 2 --variant planted --arch x86_64 --test seccomp_bpf"),
            "{boot}"
        );
        for cmd in [build, base, boot] {
            let words: Vec<&str> = cmd.split(' ').skip(1).collect();
            assert!(
                super::super::Cli::try_parse_from(words.iter()).is_ok(),
                "the CLI refuses {cmd}"
            );
        }
    }

    #[test]
    fn a_stored_bisect_command_round_trips_with_absolute_paths() {
        let env = Env {
            root: "/opt/kmatrix".into(),
            cwd: "/home/dev/linux".into(),
        };
        let mut a = parse(&[
            "--matrix",
            "my.toml",
            "--series",
            "../patches/v2",
            "--arch",
            "arm64",
            "--metric",
            "seccomp_notify.default.same-cpu",
            "--regressed-by",
            "20",
            "--out",
            "out/b1",
        ]);
        a.resolve(&env);
        assert_eq!(
            a.opts.matrix.matrix,
            Some(PathBuf::from("/home/dev/linux/my.toml"))
        );
        assert_eq!(
            a.source.series_dir,
            Some(PathBuf::from("/home/dev/linux/../patches/v2"))
        );
        assert_eq!(a.out, Some(PathBuf::from("/home/dev/linux/out/b1")));
        assert_eq!(a.opts.arch.as_deref(), Some("arm64"));
        assert_eq!(a.pred.regressed_by, Some(20.0));
        assert_eq!(a.opts.max_boots(), 12);
        let stored = serde_json::to_value(&a).unwrap();
        let back: BisectArgs = serde_json::from_value(stored).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn a_resumed_bisect_keeps_its_command_but_takes_this_invocations_host_flags() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut first = parse(&[
            "--test",
            "seccomp_bpf",
            "--case",
            "global.kcmp",
            "--arch",
            "x86_64",
        ]);
        first.out = Some(dir.clone());
        let state = serde_json::json!({
            "schema": crate::schema::SCHEMA_VERSION, "kind": "bisect",
            "command": serde_json::to_value(&first).unwrap(),
            "kernel": "6.1", "series": "s", "arch": "x86_64", "config": "tiny",
            "predicate": {"kind": "new-failures"}, "predicate_text": "",
            "patches": [], "steps": [], "answer": null, "expected_steps": 2
        });
        std::fs::write(dir.join("bisect.json"), state.to_string()).unwrap();
        let now = parse(&["--resume", "x", "--no-setup", "--no-wait"]);
        let r = resumed(dir.clone(), &now).unwrap();
        assert_eq!(r.pred.test.as_deref(), Some("seccomp_bpf"));
        assert_eq!(r.pred.case.as_deref(), Some("global.kcmp"));
        assert_eq!(r.opts.arch.as_deref(), Some("x86_64"));
        assert!(r.opts.host.no_setup && r.opts.host.no_wait);
        assert_eq!((r.resume, r.out), (Some(dir.clone()), None));
        std::fs::remove_dir_all(&dir).unwrap();
        let e = resumed(dir.clone(), &now).unwrap_err();
        assert!(format!("{e:#}").contains("no bisect.json there"), "{e:#}");
    }

    #[test]
    fn bisect_flags_are_checked_against_the_matrix_before_any_work() {
        let env = Env {
            root: crate::golden::repo_file(""),
            cwd: crate::golden::repo_file(""),
        };
        let m =
            crate::plan::load_checked(&crate::golden::repo_file("matrix.toml"), &env.root).unwrap();
        let check = |args: &[&str]| -> Option<String> {
            let cli = super::super::Cli::try_parse_from(
                ["cargo xtask", "bisect"].iter().chain(args.iter()),
            );
            let mut a = match cli {
                Ok(c) => match c.cmd {
                    super::super::Cmd::Bisect(b) => b.args,
                    other => panic!("parsed as {other:?}"),
                },
                Err(e) => return Some(e.to_string()),
            };
            a.resolve(&env);
            a.validate(&m, &env).err().map(|e| format!("{e:#}"))
        };
        let t = [
            "--kernel",
            "6.1",
            "--arch",
            "x86_64",
            "--test",
            "seccomp_bpf",
        ];
        let metric = [
            "--kernel",
            "6.1",
            "--arch",
            "x86_64",
            "--metric",
            "seccomp_notify.default.same-cpu",
        ];
        let rseq = [
            "--kernel",
            "6.12",
            "--arch",
            "x86_64",
            "--config",
            "tiny",
            "--test",
            "rseq_selftests",
        ];
        let with = |base: &[&str], more: &[&str]| -> Vec<String> {
            base.iter().chain(more).map(|s| s.to_string()).collect()
        };
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                with(
                    &["--kernel", "6.1", "--arch", "arm64"],
                    &["--builds", "x86_64"],
                ),
                "--builds x86_64 and --arch arm64: a build bisect judges the arch it builds",
            ),
            (
                with(&["--kernel", "6.1"], &["--builds", "riscv64"]),
                "--builds riscv64",
            ),
            (with(&t, &["--builds", "x86_64"]), "cannot be used with"),
            (
                with(&metric, &["--regressed-by", "NaN"]),
                "`NaN` is not a finite number",
            ),
            (
                with(&metric, &["--regressed-by", "-5"]),
                "expected a percentage in 0..=1000",
            ),
            (
                with(&metric, &["--above", "inf"]),
                "`inf` is not a finite number",
            ),
            (
                with(&metric, &["--below", "nan"]),
                "`nan` is not a finite number",
            ),
            (with(&t, &["--max-boots", "0"]), "0 is not in 1..=50"),
            (with(&t, &["--cell-timeout", "0"]), "0 is not in 1..=86400"),
            (
                with(
                    &metric,
                    &["--regressed-by", "10", "--boots", "5", "--max-boots", "2"],
                ),
                "--max-boots 2 is below the 5 boots a step starts with (--boots)",
            ),
            (
                with(&metric, &["--regressed-by", "10", "--max-boots", "2"]),
                "--max-boots 2 is below the 3 boots a step starts with",
            ),
            (
                with(&["--arch", "x86_64", "--test", "seccomp_bpf"], &[]),
                "say which --kernel: the matrix has 6.1, 6.12",
            ),
            (
                with(
                    &[
                        "--kernel",
                        "9.9",
                        "--arch",
                        "x86_64",
                        "--test",
                        "seccomp_bpf",
                    ],
                    &[],
                ),
                "--kernel 9.9: not in the matrix; known: 6.1, 6.12",
            ),
            (
                with(&["--kernel", "6.1", "--test", "seccomp_bpf"], &[]),
                "say which --arch: the matrix has x86_64, arm64",
            ),
            (
                with(
                    &[
                        "--kernel",
                        "6.1",
                        "--arch",
                        "riscv",
                        "--test",
                        "seccomp_bpf",
                    ],
                    &[],
                ),
                "--arch riscv: not in the matrix; known: x86_64, arm64",
            ),
            (
                with(&t, &["--config", "wide"]),
                "--config wide: not in the matrix; known: tiny",
            ),
            (
                with(
                    &["--kernel", "6.1", "--arch", "x86_64", "--test", "nope"],
                    &[],
                ),
                "--test nope: not in the matrix; known: ",
            ),
            (
                with(
                    &[
                        "--kernel", "6.1", "--arch", "x86_64", "--metric", "nope.x", "--above", "1",
                    ],
                    &[],
                ),
                "--metric nope.x: no test `nope` in the matrix",
            ),
            (
                with(&t, &["--bad", "fial"]),
                "--bad fial: expected fail, pass, skip, crash or timeout",
            ),
            (
                with(&t, &["--series-name", "nope"]),
                "--series-name nope: not a series of kernel 6.1",
            ),
            (with(&t, &["--out", "matrix.toml"]), "not a directory"),
            (
                with(&rseq, &["--case", "basic_tset"]),
                "--case basic_tset: not a case of test rseq_selftests; its cases (matrix.toml): basic_test, ",
            ),
        ];
        for (args, says) in &cases {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let e = check(&args).unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.contains(says), "{args:?}: {e}");
        }
        for ok in [
            with(&t, &[]),
            with(&["--kernel", "6.1"], &["--builds", "arm64"]),
            with(
                &["--kernel", "6.1", "--arch", "arm64"],
                &["--builds", "arm64"],
            ),
            with(&t, &["--boots", "20"]),
            with(&t, &["--max-boots", "3"]),
            with(&metric, &["--regressed-by", "10", "--max-boots", "6"]),
            with(&metric, &["--below=-1.5"]),
            with(&rseq, &["--case", "basic_test"]),
            with(
                &[
                    "--kernel",
                    "6.12",
                    "--arch",
                    "arm64",
                    "--config",
                    "wide",
                    "--new-failures",
                ],
                &[],
            ),
        ] {
            let args: Vec<&str> = ok.iter().map(String::as_str).collect();
            assert_eq!(check(&args), None, "{args:?}");
        }
    }
}
