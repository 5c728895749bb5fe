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
use crate::plan::matrix::Matrix;
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

    /// What a step's reproducer repeats of this command line.
    fn reproducer(&self) -> Reproducer {
        Reproducer {
            matrix: self
                .opts
                .matrix
                .matrix
                .as_ref()
                .map(|p| p.display().to_string()),
            source_flags: self.source.flags(),
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
        if let Some(dir) = a.resume.clone() {
            a = resumed(dir, &a)?;
        }
        let m = a.opts.matrix.load(env)?;
        let cache = a.opts.host.prepare(&m)?;
        let pred_args = a.pred.clone();
        let b = Bisection::plan(
            m,
            &env.root,
            &cache,
            BisectRequest {
                kernel: a.kernel.as_deref(),
                sources: &a.source.spec(),
                arch: a.opts.arch.as_deref(),
                config: a.opts.config.as_deref(),
                pred: &move |m: &Matrix| pred_args.predicate(m),
                boots: a.opts.boots,
                max_boots: a.opts.max_boots,
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
            Opened::Refused(_) => return Ok(2),
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
pub struct PredicateArgs {
    /// Judge by this test's outcome (or one case's, with --case).
    #[arg(long, conflicts_with = "metric")]
    pub test: Option<String>,
    /// With --test: the case, e.g. global.user_notification_sync.
    #[arg(long, requires = "test")]
    pub case: Option<String>,
    /// With --test: the outcomes that are bad (comma-separated: fail,
    /// pass, skip, crash, timeout).
    #[arg(long, value_delimiter = ',', default_value = "fail", requires = "test")]
    pub bad: Vec<String>,
    /// Bad when a test or case that passes on the base does not.
    #[arg(long, conflicts_with_all = ["test", "metric"])]
    pub new_failures: bool,
    /// Judge by this metric, e.g. seccomp_notify.default.same-cpu.
    #[arg(long)]
    pub metric: Option<String>,
    /// With --metric: bad when the median is above this (its 95% CI is).
    #[arg(long, requires = "metric", conflicts_with_all = ["below", "regressed_by"])]
    pub above: Option<f64>,
    /// With --metric: bad when the median is below this.
    #[arg(long, requires = "metric", conflicts_with = "regressed_by")]
    pub below: Option<f64>,
    /// With --metric: bad when worse than the base by more than PCT %
    /// (the 95% CI of the change, over repeated boots).
    #[arg(long, value_name = "PCT", requires = "metric")]
    pub regressed_by: Option<f64>,
}

impl PredicateArgs {
    pub fn predicate(&self, m: &Matrix) -> Result<Predicate> {
        let known_test = |t: &str| -> Result<()> {
            if !m.test.contains_key(t) {
                bail!(
                    "test {t} is not in the matrix; known: {}",
                    m.test.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
            Ok(())
        };
        if let Some(test) = &self.test {
            known_test(test)?;
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
            return Ok(Predicate::Outcome {
                test: test.clone(),
                case: self.case.clone(),
                bad,
            });
        }
        if self.new_failures {
            return Ok(Predicate::NewFailures);
        }
        if let Some(metric) = &self.metric {
            known_test(metric.split('.').next().unwrap_or_default())
                .with_context(|| format!("--metric {metric} (named TEST.config.placement)"))?;
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
        bail!("say what is bad: --test T [--case C] [--bad fail], --new-failures, or --metric M with --above/--below/--regressed-by")
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
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub boots: Option<u32>,
    /// A metric step whose CI straddles the threshold is booted again with
    /// twice the boots, up to this many; then it is skipped as unclear.
    #[arg(long, default_value_t = 12)]
    pub max_boots: u32,
    #[command(flatten)]
    pub host: HostOpts,
    #[arg(long)]
    pub cell_timeout: Option<u64>,
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
        assert_eq!(a.opts.max_boots, 12);
        let stored = serde_json::to_value(&a).unwrap();
        let back: BisectArgs = serde_json::from_value(stored).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn a_resumed_bisect_keeps_its_command_but_takes_this_invocations_host_flags() {
        let dir = std::env::temp_dir().join(format!("kmatrix-resume-{}", std::process::id()));
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
}
