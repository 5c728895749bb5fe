//! Which patch did it: `bisect` over the prefixes of a series, `sweep`
//! (every prefix as one run), and `bisect-step` for `git bisect run`.
//! The drivers call the cell runner one cell at a time; the search and the
//! judgement are pure (search.rs, predicate.rs), the reports are report.rs.
//!
//! A bisect's run directory holds `bisect.json` (its arguments, every step
//! and the answer: the state it resumes from), `bisect.log` (one line per
//! step as it happens), `results.json` (every step's cell, the usual
//! schema), `bisect.md` and the cells' logs.

pub mod predicate;
pub mod report;
pub mod search;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::build::source::{self, PatchInfo, Series};
use crate::host::{cache, setup, signals, ui};
use crate::plan::matrix::{Cell, Matrix};
use crate::plan::{arch::Arch, variants};
use crate::runner;
use crate::schema::{self as results, CellResult, Outcome};
use predicate::{Predicate, Verdict};
use search::{Judgement, Next};

/// Where the kernel and the series come from, when not from matrix.toml.
#[derive(Args, Clone, Default, Debug)]
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
}

fn absolute(cwd: &Path, p: &Path, what: &str) -> Result<PathBuf> {
    std::fs::canonicalize(cwd.join(p)).with_context(|| format!("{what} {}", p.display()))
}

/// Applies --tree/--range/--rev/--series/--patches to the matrix; returns
/// the kernel the command is about when it can tell (the tree's, or
/// `kernel`, or the matrix's only one).
pub fn apply_sources(
    m: &mut Matrix,
    s: &SourceArgs,
    cwd: &Path,
    cache: &cache::Cache,
    kernel: Option<&str>,
) -> Result<Option<String>> {
    let mut kernel = kernel.map(str::to_string);
    if let Some(tree) = &s.tree {
        let tree = absolute(cwd, tree, "--tree")?;
        if !tree.join(".git").exists() {
            bail!("--tree {}: not a git checkout", tree.display());
        }
        let name = variants::name_of(&tree);
        if let Some(range) = &s.range {
            let (base, dir) = source::export_range(&tree, range, cache)?;
            variants::use_tree(m, &name, &tree, &base);
            let sname = variants::name_of(Path::new(&range.replace('/', "-")));
            variants::use_series(m, &name, &sname, &dir)?;
        } else {
            let rev = source::resolve_rev(&tree, s.rev.as_deref().unwrap_or("HEAD"))?;
            variants::use_tree(m, &name, &tree, &rev);
        }
        // matrix.toml's expectations describe its own kernels, not yours.
        m.expect.clear();
        kernel = Some(name);
    }
    if s.series_dir.is_some() || s.patches.is_some() || s.series_name.is_some() {
        let k = variants::pick_kernel(m, kernel.as_deref())?;
        if let Some(dir) = &s.series_dir {
            let dir = absolute(cwd, dir, "--series")?;
            Series::files("--series", &dir)?;
            variants::use_series(m, &k, &variants::name_of(&dir), &dir)?;
        }
        if let Some(n) = s.patches {
            let name = variants::pick_series(m, &k, s.series_name.as_deref())?;
            let total = Series::files(&name, &crate::repo_root().join(&m.series[&name].dir))?.len();
            if n == 0 || n > total {
                bail!("--patches {n}: series {name} has {total} patches");
            }
            m.series.get_mut(&name).unwrap().take = Some(n);
        }
        kernel = Some(k);
    }
    Ok(kernel)
}

/// What makes a step bad, from the command line.
#[derive(Args, Clone, Debug, Default)]
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
#[derive(Args, Clone, Debug, Default)]
pub struct StepOpts {
    #[arg(long, default_value = "matrix.toml")]
    pub matrix: PathBuf,
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
    #[arg(long)]
    pub no_setup: bool,
    #[arg(long)]
    pub no_wait: bool,
    #[arg(long)]
    pub cell_timeout: Option<u64>,
}

#[derive(Args, Clone, Debug, Default)]
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

/// One judged step of a bisect.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// Patches applied (0: the base).
    pub prefix: usize,
    pub cell: String,
    pub judgement: Judgement,
    pub reason: String,
    pub outcome: Outcome,
    pub boots: u32,
    pub build_s: f64,
    pub build_cached: bool,
    pub build_incremental: bool,
    pub total_s: f64,
    pub started: String,
    pub reproduce: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Answer {
    /// Patch `index` (1-based) is the first bad one.
    Found {
        index: usize,
        patch: PatchInfo,
        bad: String,
        good: String,
    },
    /// The first bad patch is one of these; the others could not be judged.
    Range {
        indices: Vec<usize>,
        patches: Vec<PatchInfo>,
    },
    /// Nothing to bisect (the ends are not good and bad).
    NotBisectable { why: String },
}

/// bisect.json: the arguments, every step, and the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub schema: u32,
    pub kind: String,
    /// The command line after `bisect`, and where it was given: what
    /// `--resume` re-reads.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub kernel: String,
    pub series: String,
    pub arch: String,
    pub config: String,
    pub predicate: Predicate,
    pub predicate_text: String,
    pub patches: Vec<PatchInfo>,
    pub steps: Vec<Step>,
    pub answer: Option<Answer>,
    /// ceil(log2(n)) + 2: the steps a bisect needs without skips.
    pub expected_steps: usize,
}

impl State {
    fn judgements(&self) -> BTreeMap<usize, Judgement> {
        self.steps.iter().map(|s| (s.prefix, s.judgement)).collect()
    }
}

/// The command stored in a run dir's `file` (`bisect.json`, `sweep.json`),
/// parsed again as `cargo xtask SUB ...`, with its argv and the directory
/// it was given in: what `--resume DIR` continues.
fn stored_command(dir: &Path, file: &str, sub: &str) -> Result<(crate::Cmd, Vec<String>, PathBuf)> {
    #[derive(Deserialize)]
    struct Stored {
        argv: Vec<String>,
        cwd: PathBuf,
    }
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("--resume {}: reading {}", dir.display(), path.display()))?;
    let s: Stored = serde_json::from_str(&text)
        .with_context(|| format!("--resume: {} is not a kmatrix {file}", path.display()))?;
    let parsed = <crate::Cli as clap::Parser>::try_parse_from(
        ["cargo xtask".to_string(), sub.to_string()]
            .into_iter()
            .chain(s.argv.iter().cloned()),
    )
    .with_context(|| format!("--resume: the command in {}", path.display()))?;
    Ok((parsed.cmd, s.argv, s.cwd))
}

/// The command line after the subcommand, without --resume/--out.
fn own_argv() -> Vec<String> {
    let mut out = vec![];
    let mut it = std::env::args().skip(2);
    while let Some(a) = it.next() {
        if a == "--resume" || a == "--out" {
            it.next();
        } else if !(a.starts_with("--resume=") || a.starts_with("--out=")) {
            out.push(a);
        }
    }
    out
}

/// Runs one step's cell, booting it again with twice the boots while a
/// metric's verdict is unclear (up to `max_boots`); unclear then is skip.
#[allow(clippy::too_many_arguments)]
fn run_judged(
    ctx: &mut runner::Ctx,
    cell: &Cell,
    pred: &Predicate,
    base: Option<&CellResult>,
    boots: u32,
    max_boots: u32,
    sink: &ui::CellUi,
) -> (CellResult, Verdict, u32) {
    let (better, min_effect) = match pred {
        Predicate::Threshold { metric, .. } | Predicate::Regression { metric, .. } => {
            ctx.matrix.metric_spec(metric)
        }
        _ => (results::Better::Lower, 5.0),
    };
    let mut boots = boots;
    loop {
        ctx.boots = Some(boots);
        let r = runner::run_cell(ctx, cell, sink);
        // The base step of a relative predicate is its own reference: it
        // is good when it ran and reports what the predicate reads.
        let reference = base.or(pred.needs_base().then_some(&r));
        let v = predicate::judge(pred, &r, reference, better, min_effect);
        match v {
            Verdict::Unclear(why) if boots * 2 <= max_boots && !signals::interrupted() => {
                sink.note(&format!(
                    "unclear with {boots} boots ({why}); {} boots",
                    boots * 2
                ));
                boots *= 2;
            }
            Verdict::Unclear(why) => {
                return (
                    r,
                    Verdict::Skip(format!("unclear after {boots} boots: {why}")),
                    boots,
                )
            }
            v => return (r, v, boots),
        }
    }
}

fn step_of(prefix: usize, r: &CellResult, v: &Verdict, boots: u32, reproduce: String) -> Step {
    let (judgement, reason) = match v {
        Verdict::Good(s) => (Judgement::Good, s.clone()),
        Verdict::Bad(s) => (Judgement::Bad, s.clone()),
        Verdict::Skip(s) | Verdict::Unclear(s) => (Judgement::Skip, s.clone()),
    };
    Step {
        prefix,
        cell: r.id.clone(),
        judgement,
        reason,
        outcome: r.outcome,
        boots,
        build_s: r.timings.build_s,
        build_cached: r.timings.build_cached,
        build_incremental: r.timings.build_incremental,
        total_s: r.timings.total_s,
        started: crate::timestamp(),
        reproduce,
    }
}

fn append_log(path: &Path, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{} {line}", crate::timestamp());
    }
}

fn load_run(path: &Path) -> Result<results::Run> {
    if path.exists() {
        let r = results::Run::load(path)?;
        if r.schema != results::SCHEMA_VERSION {
            bail!(
                "{} has schema {}; this harness writes {}",
                path.display(),
                r.schema,
                results::SCHEMA_VERSION
            );
        }
        Ok(r)
    } else {
        Ok(results::Run {
            schema: results::SCHEMA_VERSION,
            started: crate::timestamp(),
            host: crate::host_info(),
            matrix: String::new(),
            cells: vec![],
            comparisons: vec![],
        })
    }
}

pub fn cmd_bisect(root: &Path, cwd: &Path, mut a: BisectArgs) -> Result<u8> {
    let mut argv = own_argv();
    let mut cwd = cwd.to_path_buf();
    if let Some(dir) = a.resume.clone() {
        let dir = absolute(&cwd, &dir, "--resume")?;
        let (cmd, stored, stored_cwd) = stored_command(&dir, "bisect.json", "bisect")?;
        let crate::Cmd::Bisect(b) = cmd else {
            unreachable!("parsed as bisect")
        };
        a = BisectArgs {
            resume: Some(dir),
            opts: StepOpts {
                no_wait: a.opts.no_wait,
                no_setup: a.opts.no_setup,
                ..b.opts
            },
            ..b
        };
        argv = stored;
        cwd = stored_cwd;
    }
    let mut m = crate::load_matrix(&cwd.join(&a.opts.matrix))?;
    if !a.opts.no_setup {
        setup::ensure(&crate::debian_packages(&m))?;
    }
    let cache = cache::Cache::open(cache::default_root(), !a.opts.no_wait)?;
    let kernel = match apply_sources(&mut m, &a.source, &cwd, &cache, a.kernel.as_deref())? {
        Some(k) => k,
        None => variants::pick_kernel(&m, a.kernel.as_deref())?,
    };
    let sname = variants::pick_series(&m, &kernel, a.source.series_name.as_deref())?;
    let sdir = root.join(&m.series[&sname].dir);
    let full = Series::load_prefix(&sname, &sdir, m.series[&sname].take)?;
    let n = full.patches.len();
    let patches = full.info();
    variants::prefixes(&mut m, &kernel, &sname, n);
    let arch = variants::pick_one(
        "arch",
        a.opts.arch.as_deref(),
        m.run.arches.iter().map(|x| x.get_ref().clone()).collect(),
    )?;
    let config = variants::pick_one(
        "config",
        a.opts.config.as_deref(),
        m.kernel_configs(&kernel),
    )?;
    let pred = a.pred.predicate(&m)?;
    let better = match &pred {
        Predicate::Threshold { metric, .. } | Predicate::Regression { metric, .. } => {
            m.metric_spec(metric).0
        }
        _ => results::Better::Lower,
    };
    let tests = pred.tests().unwrap_or_else(|| m.config_tests(&config));
    let boots = a.opts.boots.unwrap_or(match pred {
        Predicate::Threshold { .. } | Predicate::Regression { .. } => m.run.boots,
        _ => 1,
    });

    let run_dir = match (&a.resume, &a.out) {
        (Some(d), _) => d.clone(),
        (None, Some(d)) => absolute(&cwd, Path::new("."), "cwd")?.join(d),
        (None, None) => root
            .join("results")
            .join(format!("bisect-{}", crate::timestamp())),
    };
    std::fs::create_dir_all(&run_dir)?;
    let run_dir = std::fs::canonicalize(&run_dir)?;
    let state_path = run_dir.join("bisect.json");
    let results_path = run_dir.join("results.json");
    let log_path = run_dir.join("bisect.log");
    let mut state = if a.resume.is_some() && state_path.exists() {
        let s: State = serde_json::from_str(&std::fs::read_to_string(&state_path)?)
            .with_context(|| format!("reading {}", state_path.display()))?;
        if s.patches != patches {
            bail!(
                "--resume {}: the series changed since this bisect started ({} patches then, {n} now); start a new bisect",
                run_dir.display(),
                s.patches.len()
            );
        }
        s
    } else {
        State {
            schema: results::SCHEMA_VERSION,
            kind: "bisect".into(),
            argv,
            cwd: cwd.clone(),
            kernel: kernel.clone(),
            series: sname.clone(),
            arch: arch.clone(),
            config: config.clone(),
            predicate_text: pred.describe(better),
            predicate: pred.clone(),
            patches: patches.clone(),
            steps: vec![],
            answer: None,
            expected_steps: search::expected_steps(n),
        }
    };
    let mut run = load_run(&results_path)?;
    run.matrix = a.opts.matrix.display().to_string();

    let ui = ui::Ui::new();
    ui.println(&format!(
        "kmatrix bisect: {n} patches of {sname} on {kernel} {arch}/{config}; bad when {}; results {}",
        state.predicate_text,
        run_dir.display()
    ));
    if !state.steps.is_empty() {
        ui.println(&format!(
            "resuming: {} steps already judged",
            state.steps.len()
        ));
    }
    let mut ctx = runner::Ctx::new(&m, root.to_path_buf(), &cache, run_dir.clone());
    ctx.cell_timeout_s = a.opts.cell_timeout;
    let cell_for = |k: usize| Cell {
        kernel: kernel.clone(),
        variant: variants::prefix_name(&sname, k),
        arch: Arch::parse(&arch).expect("validated"),
        config: config.clone(),
        tests: tests.clone(),
    };
    let base_id = cell_for(0).id();
    let answer = loop {
        if signals::interrupted() {
            break None;
        }
        match search::next(n, &state.judgements()) {
            Next::Test(k) => {
                let cell = cell_for(k);
                // The base is judged on its own (against nothing).
                let base = run.cells.iter().find(|c| c.id == base_id && k > 0).cloned();
                let what = if k == 0 {
                    "base".to_string()
                } else {
                    format!("{k}/{n} {}", patches[k - 1].subject)
                };
                let cu = ui.cell(
                    state.steps.len() + 1,
                    state.expected_steps.max(state.steps.len() + 1),
                    &format!("{} ({what})", cell.id()),
                );
                let (r, v, used) = run_judged(
                    &mut ctx,
                    &cell,
                    &pred,
                    base.as_ref(),
                    boots,
                    a.opts.max_boots,
                    &cu,
                );
                if signals::interrupted() {
                    cu.finish("interrupted: not recorded");
                    break None;
                }
                let reproduce = report::step_reproducer(&a, &sname, k, &arch, &tests);
                let step = step_of(k, &r, &v, used, reproduce);
                cu.finish(&format!(
                    "{}: {} (build {})",
                    step.judgement_str(),
                    step.reason,
                    step.build_text()
                ));
                append_log(
                    &log_path,
                    &format!(
                        "step {} prefix {k} {}: {} ({}); build {}, {:.0}s",
                        state.steps.len() + 1,
                        step.cell,
                        step.judgement_str(),
                        step.reason,
                        step.build_text(),
                        step.total_s
                    ),
                );
                state.steps.push(step);
                run.upsert(r);
                run.comparisons = crate::report::compare::compare(&run, &m);
                run.save(&results_path)?;
                cache::write_atomic(
                    &state_path,
                    serde_json::to_string_pretty(&state)?.as_bytes(),
                )?;
            }
            Next::Found(k) => {
                let find = |p: usize| {
                    state
                        .steps
                        .iter()
                        .rev()
                        .find(|s| s.prefix == p)
                        .map(|s| s.reason.clone())
                        .unwrap_or_default()
                };
                break Some(Answer::Found {
                    index: k,
                    patch: patches[k - 1].clone(),
                    bad: find(k),
                    good: find(k - 1),
                });
            }
            Next::Range(ks) => {
                break Some(Answer::Range {
                    patches: ks.iter().map(|k| patches[k - 1].clone()).collect(),
                    indices: ks,
                })
            }
            Next::BadEnds(why) => break Some(Answer::NotBisectable { why }),
        }
    };
    state.answer = answer.clone();
    cache::write_atomic(
        &state_path,
        serde_json::to_string_pretty(&state)?.as_bytes(),
    )?;
    let md = report::bisect_markdown(&state, &run_dir);
    std::fs::write(run_dir.join("bisect.md"), &md)?;
    println!("{md}");
    println!("bisect: {}", run_dir.display());
    match answer {
        None => {
            eprintln!(
                "interrupted: {} steps saved; continue with: cargo xtask bisect --resume {}",
                state.steps.len(),
                run_dir.display()
            );
            Ok(2)
        }
        Some(Answer::Found { .. }) | Some(Answer::Range { .. }) => Ok(0),
        Some(Answer::NotBisectable { .. }) => Ok(1),
    }
}

impl Step {
    pub fn judgement_str(&self) -> &'static str {
        match self.judgement {
            Judgement::Good => "good",
            Judgement::Bad => "bad",
            Judgement::Skip => "skip",
        }
    }

    pub fn build_text(&self) -> String {
        if self.outcome == Outcome::BuildError {
            "failed".into()
        } else if self.outcome == Outcome::ApplyError {
            "not applied".into()
        } else if self.build_cached {
            "cached".into()
        } else {
            format!(
                "{:.1}s{}",
                self.build_s,
                if self.build_incremental {
                    " incremental"
                } else {
                    " cold"
                }
            )
        }
    }
}

/// `cargo xtask sweep`: the matrix run over the prefixes of one series.
pub fn cmd_sweep(root: &Path, cwd: &Path, a: crate::MatrixArgs) -> Result<u8> {
    let mut a = a;
    let mut cwd = cwd.to_path_buf();
    let mut argv = own_argv();
    if let Some(dir) = a.resume.clone() {
        let dir = absolute(&cwd, &dir, "--resume")?;
        if dir.join("sweep.json").exists() {
            let (cmd, stored, stored_cwd) = stored_command(&dir, "sweep.json", "sweep")?;
            let crate::Cmd::Sweep(b) = cmd else {
                unreachable!("parsed as sweep")
            };
            a = crate::MatrixArgs {
                resume: Some(dir),
                no_wait: a.no_wait,
                no_setup: a.no_setup,
                ..b
            };
            argv = stored;
            cwd = stored_cwd;
        }
    }
    let mut found: Option<(String, String, Vec<PatchInfo>)> = None;
    let wanted_kernel = a.kernel.first().cloned();
    let series_name = a.source.series_name.clone();
    let (code, run_dir) = crate::cmd_matrix(root, &cwd, a, &mut |m, _cache| {
        let kernel = variants::pick_kernel(m, wanted_kernel.as_deref())?;
        let sname = variants::pick_series(m, &kernel, series_name.as_deref())?;
        let s = Series::load_prefix(
            &sname,
            &root.join(&m.series[&sname].dir),
            m.series[&sname].take,
        )?;
        variants::prefixes(m, &kernel, &sname, s.patches.len());
        found = Some((kernel, sname, s.info()));
        Ok(())
    })?;
    let Some((kernel, sname, patches)) = found else {
        return Ok(code);
    };
    #[derive(Serialize)]
    struct Stored<'a> {
        argv: &'a [String],
        cwd: &'a Path,
        kernel: &'a str,
        series: &'a str,
        patches: &'a [PatchInfo],
    }
    cache::write_atomic(
        &run_dir.join("sweep.json"),
        serde_json::to_string_pretty(&Stored {
            argv: &argv,
            cwd: &cwd,
            kernel: &kernel,
            series: &sname,
            patches: &patches,
        })?
        .as_bytes(),
    )?;
    if let Ok(run) = results::Run::load(&run_dir.join("results.json")) {
        let md = report::sweep_markdown(&run, &kernel, &sname, &patches);
        std::fs::write(run_dir.join("sweep.md"), &md)?;
        println!("{md}");
        println!("sweep: {}", run_dir.join("sweep.md").display());
    }
    Ok(code)
}

#[derive(Args, Clone, Debug, Default)]
pub struct StepArgs {
    /// The kernel git checkout whose HEAD is judged (default: the current
    /// directory, which is where `git bisect run` runs its command).
    #[arg(long, value_name = "PATH")]
    pub tree: Option<PathBuf>,
    /// The known-good commit, for --new-failures and --regressed-by (judged
    /// once and kept in the state directory).
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    #[command(flatten)]
    pub opts: StepOpts,
    #[command(flatten)]
    pub pred: PredicateArgs,
    /// Where the steps' results and log go (default
    /// results/bisect-step/<tree name>).
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

/// `cargo xtask bisect-step`: judge the checked-out commit of --tree.
pub fn cmd_step(root: &Path, cwd: &Path, a: StepArgs) -> Result<u8> {
    let tree = absolute(cwd, a.tree.as_deref().unwrap_or(Path::new(".")), "--tree")?;
    let head = source::resolve_rev(&tree, "HEAD")?;
    let template = crate::load_matrix(&cwd.join(&a.opts.matrix))
        .or_else(|_| crate::load_matrix(&root.join(&a.opts.matrix)))?;
    if !a.opts.no_setup {
        setup::ensure(&crate::debian_packages(&template))?;
    }
    let cache = cache::Cache::open(cache::default_root(), !a.opts.no_wait)?;
    let name = variants::name_of(&tree);
    let arch = variants::pick_one(
        "arch",
        a.opts.arch.as_deref(),
        template
            .run
            .arches
            .iter()
            .map(|x| x.get_ref().clone())
            .collect(),
    )?;
    let config = variants::pick_one(
        "config",
        a.opts.config.as_deref(),
        template
            .run
            .configs
            .iter()
            .map(|x| x.get_ref().clone())
            .collect(),
    )?;
    let pred = a.pred.predicate(&template)?;
    let tests = pred.tests().unwrap_or_else(|| {
        template
            .run
            .tests
            .iter()
            .map(|t| t.get_ref().clone())
            .collect()
    });
    let boots = a.opts.boots.unwrap_or(match pred {
        Predicate::Threshold { .. } | Predicate::Regression { .. } => template.run.boots,
        _ => 1,
    });
    let state = match &a.state {
        Some(s) => cwd.join(s),
        None => root.join("results/bisect-step").join(&name),
    };
    std::fs::create_dir_all(&state)?;
    let ui = ui::Ui::new();
    // Runs one commit of the tree as the base of a one-kernel matrix.
    let judge_commit = |commit: &str,
                        base: Option<&CellResult>,
                        label: &str|
     -> Result<(CellResult, Verdict, u32)> {
        let mut m = crate::load_matrix(&cwd.join(&a.opts.matrix))
            .or_else(|_| crate::load_matrix(&root.join(&a.opts.matrix)))?;
        variants::use_tree(&mut m, &name, &tree, commit);
        m.expect.clear();
        let dir = state.join(format!("{}-{label}", &commit[..12]));
        let mut ctx = runner::Ctx::new(&m, root.to_path_buf(), &cache, dir);
        ctx.cell_timeout_s = a.opts.cell_timeout;
        let cell = Cell {
            kernel: name.clone(),
            variant: "base".into(),
            arch: Arch::parse(&arch).expect("validated"),
            config: config.clone(),
            tests: tests.clone(),
        };
        let cu = ui.cell(1, 1, &format!("{} at {}", cell.id(), &commit[..12]));
        let (mut r, v, used) =
            run_judged(&mut ctx, &cell, &pred, base, boots, a.opts.max_boots, &cu);
        cu.finish(&format!("{v:?}"));
        r.id = format!("{}@{}", r.id, &commit[..12]);
        Ok((r, v, used))
    };
    let reference = if pred.needs_base() {
        let Some(good) = &a.good else {
            bail!(
                "{} compares with a good commit: give --good REV",
                pred.describe(results::Better::Lower)
            );
        };
        let good = source::resolve_rev(&tree, good)?;
        let path = state.join(format!("reference-{}.json", &good[..12]));
        let r = match std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<CellResult>(&t).ok())
        {
            Some(r) => r,
            None => {
                let (r, _, _) = judge_commit(&good, None, "good")?;
                if let Some(why) = predicate::not_judgeable(&r) {
                    bail!("the good commit {} could not be judged: {why}", &good[..12]);
                }
                cache::write_atomic(&path, serde_json::to_string_pretty(&r)?.as_bytes())?;
                r
            }
        };
        Some(r)
    } else {
        None
    };
    let (mut r, v, used) = judge_commit(&head, reference.as_ref(), "step")?;
    if signals::interrupted() {
        return Ok(128);
    }
    let step = step_of(
        0,
        &r,
        &v,
        used,
        format!(
            "git -C {} checkout {head} && cargo xtask bisect-step --tree {} {}",
            tree.display(),
            tree.display(),
            std::env::args().skip(2).collect::<Vec<_>>().join(" ")
        ),
    );
    r.reproduce.xtask = step.reproduce.clone();
    let line = format!(
        "{head} {}: {} (cell {}, build {}, {:.0}s)",
        step.judgement_str(),
        step.reason,
        step.outcome,
        step.build_text(),
        step.total_s
    );
    append_log(&state.join("steps.log"), &line);
    let mut run = load_run(&state.join("results.json"))?;
    run.upsert(r);
    run.save(&state.join("results.json"))?;
    println!("bisect-step {line}");
    Ok(match step.judgement {
        Judgement::Good => 0,
        Judgement::Bad => 1,
        Judgement::Skip => 125,
    })
}

/// `cargo xtask checkout`: a git tree of a matrix kernel with a series
/// applied as commits, for your own work, `--tree` and `git bisect`.
pub fn cmd_checkout(
    root: &Path,
    cwd: &Path,
    kernel: &str,
    dest: &Path,
    matrix: &Path,
    source_args: &SourceArgs,
    no_setup: bool,
) -> Result<u8> {
    let dest = cwd.join(dest);
    if dest.exists() && std::fs::read_dir(&dest)?.next().is_some() {
        bail!("{} exists and is not empty", dest.display());
    }
    let mut m = crate::load_matrix(&cwd.join(matrix))?;
    if !no_setup {
        setup::ensure(&crate::debian_packages(&m))?;
    }
    let cache = cache::Cache::open(cache::default_root(), true)?;
    let kernel = match apply_sources(&mut m, source_args, cwd, &cache, Some(kernel))? {
        Some(k) => k,
        None => variants::pick_kernel(&m, Some(kernel))?,
    };
    let mut log = |s: &str| eprintln!("{s}");
    let base = source::prepare_base(m.kernel[&kernel].source.get_ref(), &cache, &mut log)?;
    let trees = source::Trees::open(&base, &kernel, &cache, &mut log)?;
    let series = match m.kernel[&kernel].series.first() {
        Some(s) if source_args.series_dir.is_some() || source_args.series_name.is_some() => {
            let name = variants::pick_series(&m, &kernel, source_args.series_name.as_deref())
                .unwrap_or_else(|_| s.get_ref().clone());
            let spec = &m.series[&name];
            Some(Series::load_prefix(
                &name,
                &root.join(&spec.dir),
                spec.take,
            )?)
        }
        _ => None,
    };
    let commit = match trees.variant_commit(series.as_ref(), &mut log)? {
        Ok(c) => c,
        Err(e) => bail!("{} does not apply:\n{}", e.patch.display(), e.detail),
    };
    source::export_tree(&trees.repo, &base.commit, &commit, &dest)?;
    println!(
        "{}: branch kmatrix at {} ({} patches on tag kmatrix-base)",
        dest.display(),
        &commit[..12],
        series.as_ref().map_or(0, |s| s.patches.len())
    );
    Ok(0)
}
