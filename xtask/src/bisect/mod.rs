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
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::series::{PatchInfo, Series};
use crate::build::source;
use crate::host::{cache, signals, ui};
use crate::plan::matrix::{Cell, Matrix};
use crate::plan::{arch::Arch, variants};
use crate::runner::{self, driver, driver::Driver};
use crate::schema::{self as results, CellResult, Outcome};
use predicate::{Predicate, Verdict};
use search::{Judgement, Next};

/// Where the kernel and the series come from, when not from matrix.toml
/// (the CLI's `--tree`, `--range`, `--rev`, `--series`, `--series-name`,
/// `--patches`; paths already absolute).
#[derive(Clone, Default, Debug)]
pub struct Sources {
    pub tree: Option<PathBuf>,
    pub range: Option<String>,
    pub rev: Option<String>,
    pub series_dir: Option<PathBuf>,
    /// Where --lore fetched the --series mbox from.
    pub lore: Option<crate::host::lore::Origin>,
    pub series_name: Option<String>,
    pub patches: Option<usize>,
}

fn existing(p: &Path, what: &str) -> Result<PathBuf> {
    std::fs::canonicalize(p).with_context(|| format!("{what} {}", p.display()))
}

/// Applies --tree/--range/--rev/--series/--patches to the matrix; returns
/// the kernel the command is about when it can tell (the tree's, or
/// `kernel`, or the matrix's only one). `root` is the harness's checkout,
/// against which the matrix names its series directories.
pub fn apply_sources(
    m: &mut Matrix,
    s: &Sources,
    root: &Path,
    cache: &cache::Cache,
    kernel: Option<&str>,
) -> Result<Option<String>> {
    let mut kernel = kernel.map(str::to_string);
    if let Some(tree) = &s.tree {
        let tree = existing(tree, "--tree")?;
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
            let dir = existing(dir, "--series")?;
            crate::plan::series::count("--series", &dir)?;
            let name = variants::name_of(&dir);
            variants::use_series(m, &k, &name, &dir)?;
            if let (Some(o), Some(spec)) = (&s.lore, m.series.get_mut(&name)) {
                spec.origin = Some(crate::host::lore::Origin {
                    series: name.clone(),
                    ..o.clone()
                });
            }
        }
        if let Some(n) = s.patches {
            let name = variants::pick_series(m, &k, s.series_name.as_deref())?;
            let total = crate::plan::series::count(&name, &root.join(&m.series[&name].dir))?;
            if n == 0 || n > total {
                bail!("--patches {n}: series {name} has {total} patches");
            }
            m.series.get_mut(&name).expect("picked").take = Some(n);
        }
        kernel = Some(k);
    }
    Ok(kernel)
}

/// What every step of `bisect` and `bisect-step` is run with.
#[derive(Clone, Debug)]
pub struct StepPlan {
    /// Boots per step at first.
    pub boots: u32,
    /// A metric step whose CI straddles the threshold is booted again with
    /// twice the boots, up to this many; then it is skipped as unclear.
    pub max_boots: u32,
    pub cell_timeout_s: Option<u64>,
}

/// The boots a step starts with: `given`, else one for a test predicate
/// and the matrix's `run.boots` for a metric.
pub fn first_boots(given: Option<u32>, pred: &Predicate, m: &Matrix) -> u32 {
    given.unwrap_or(match pred {
        Predicate::Threshold { .. } | Predicate::Regression { .. } => m.run.boots,
        _ => 1,
    })
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

/// bisect.json: the command, every step, and the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub schema: u32,
    pub kind: String,
    /// The command's parsed arguments, paths absolute: what `--resume`
    /// continues (the CLI reads it back; opaque here).
    pub command: serde_json::Value,
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

    /// The bisect.json in `dir`, when there is one.
    pub fn load(dir: &Path) -> Result<Option<State>> {
        let path = dir.join("bisect.json");
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::util::read_input_text(&path, crate::util::MAX_RESULTS, "bisect state")?;
        let s = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a kmatrix bisect.json", path.display()))?;
        Ok(Some(s))
    }

    fn save(&self, dir: &Path) -> Result<()> {
        cache::write_atomic(
            &dir.join("bisect.json"),
            serde_json::to_string_pretty(self)?.as_bytes(),
        )
    }
}

/// Runs one step's cell, booting it again with twice the boots while a
/// metric's verdict is unclear (up to `max_boots`); unclear then is skip.
fn run_judged(
    ctx: &mut runner::Ctx,
    cell: &Cell,
    pred: &Predicate,
    base: Option<&CellResult>,
    plan: &StepPlan,
    sink: &ui::CellUi,
) -> (CellResult, Verdict, u32) {
    let (better, min_effect) = match pred {
        Predicate::Threshold { metric, .. } | Predicate::Regression { metric, .. } => {
            ctx.matrix.metric_spec(metric)
        }
        _ => (results::Better::Lower, 5.0),
    };
    if let Predicate::Builds { .. } = pred {
        let t = std::time::Instant::now();
        let mut r = match runner::build_only(ctx, cell, sink) {
            Ok((r, _)) => r,
            Err(e) => {
                let mut r = CellResult::blank(&cell.id(), results::Outcome::InfraError);
                r.evidence.push(results::Evidence::new(
                    results::EvidenceKind::Harness,
                    "harness error",
                    format!("{e:#}"),
                    None,
                ));
                r
            }
        };
        r.timings.total_s = t.elapsed().as_secs_f64();
        let v = predicate::judge(pred, &r, base, better, min_effect);
        return (r, v, 0);
    }
    let mut boots = plan.boots;
    loop {
        ctx.boots = Some(boots);
        let r = runner::run_cell(ctx, cell, sink);
        // The base step of a relative predicate is its own reference: it
        // is good when it ran and reports what the predicate reads.
        let reference = base.or(pred.needs_base().then_some(&r));
        let v = predicate::judge(pred, &r, reference, better, min_effect);
        match v {
            Verdict::Unclear(why) if boots * 2 <= plan.max_boots && !signals::interrupted() => {
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
        started: crate::util::timestamp(),
        reproduce,
    }
}

/// A bisect over the prefixes of one series, for one arch/config: its
/// matrix (with the prefixes as variants), predicate and state.
pub struct Bisection {
    pub m: Matrix,
    pub kernel: String,
    pub series: String,
    pub arch: String,
    pub config: String,
    pub pred: Predicate,
    pub tests: Vec<String>,
    pub patches: Vec<PatchInfo>,
    pub plan: StepPlan,
    /// How a step is reproduced: `cargo xtask matrix` with these flags.
    pub reproducer: report::Reproducer,
}

/// What the CLI asks a bisection for.
pub struct BisectRequest<'a> {
    pub kernel: Option<&'a str>,
    pub sources: &'a Sources,
    pub arch: Option<&'a str>,
    pub config: Option<&'a str>,
    pub pred: &'a dyn Fn(&Matrix) -> Result<Predicate>,
    pub boots: Option<u32>,
    pub max_boots: u32,
    pub cell_timeout_s: Option<u64>,
    pub reproducer: report::Reproducer,
}

impl Bisection {
    /// The matrix with the series' prefixes, and everything a step needs.
    pub fn plan(
        mut m: Matrix,
        root: &Path,
        cache: &cache::Cache,
        q: BisectRequest,
    ) -> Result<Bisection> {
        let kernel = match apply_sources(&mut m, q.sources, root, cache, q.kernel)? {
            Some(k) => k,
            None => variants::pick_kernel(&m, q.kernel)?,
        };
        let series = variants::pick_series(&m, &kernel, q.sources.series_name.as_deref())?;
        let full = Series::load_prefix(
            &series,
            &root.join(&m.series[&series].dir),
            m.series[&series].take,
        )?;
        let patches = full.info();
        variants::prefixes(&mut m, &kernel, &series, patches.len());
        let pred = (q.pred)(&m)?;
        let arch = variants::pick_one("arch", q.arch, pred.arches(&m))?;
        let config = pred.pick_config(&m, &arch, q.config, m.kernel_configs(&kernel))?;
        let tests = pred.tests().unwrap_or_else(|| m.config_tests(&config));
        let plan = StepPlan {
            boots: first_boots(q.boots, &pred, &m),
            max_boots: q.max_boots,
            cell_timeout_s: q.cell_timeout_s,
        };
        Ok(Bisection {
            m,
            kernel,
            series,
            arch,
            config,
            pred,
            tests,
            patches,
            plan,
            reproducer: q.reproducer,
        })
    }

    fn better(&self) -> results::Better {
        match &self.pred {
            Predicate::Threshold { metric, .. } | Predicate::Regression { metric, .. } => {
                self.m.metric_spec(metric).0
            }
            _ => results::Better::Lower,
        }
    }

    /// A new state, or the one in `run_dir` when resuming (refused when the
    /// series changed since).
    pub fn state(&self, run_dir: &Path, resume: bool, command: serde_json::Value) -> Result<State> {
        let n = self.patches.len();
        if resume {
            if let Some(s) = State::load(run_dir)? {
                if s.patches != self.patches {
                    bail!(
                        "--resume {}: the series changed since this bisect started ({} patches then, {n} now); start a new bisect",
                        run_dir.display(),
                        s.patches.len()
                    );
                }
                return Ok(s);
            }
        }
        Ok(State {
            schema: results::SCHEMA_VERSION,
            kind: "bisect".into(),
            command,
            kernel: self.kernel.clone(),
            series: self.series.clone(),
            arch: self.arch.clone(),
            config: self.config.clone(),
            predicate_text: self.pred.describe(self.better()),
            predicate: self.pred.clone(),
            patches: self.patches.clone(),
            steps: vec![],
            answer: None,
            expected_steps: search::expected_steps(n),
        })
    }

    fn cell(&self, k: usize) -> Cell {
        Cell {
            kernel: self.kernel.clone(),
            variant: variants::prefix_name(&self.series, k),
            arch: Arch::parse(&self.arch).expect("validated"),
            config: self.config.clone(),
            tests: self.tests.clone(),
        }
    }

    /// Judges steps until the search has its answer (None: interrupted),
    /// recording each step in the driver's results.json, bisect.log and
    /// bisect.json as it is judged.
    pub fn run(&self, d: &mut Driver, state: &mut State, ui: &ui::Ui) -> Result<Option<Answer>> {
        let n = self.patches.len();
        let run_dir = d.run_dir().to_path_buf();
        let base_id = self.cell(0).id();
        loop {
            if signals::interrupted() {
                return Ok(None);
            }
            let k = match search::next(n, &state.judgements()) {
                Next::Test(k) => k,
                Next::Found(k) => return Ok(Some(self.found(state, k))),
                Next::Range(ks) => {
                    return Ok(Some(Answer::Range {
                        patches: ks.iter().map(|k| self.patches[k - 1].clone()).collect(),
                        indices: ks,
                    }))
                }
                Next::BadEnds(why) => return Ok(Some(Answer::NotBisectable { why })),
            };
            let cell = self.cell(k);
            // The base is judged on its own (against nothing).
            let base = d
                .run()
                .cells
                .iter()
                .find(|c| c.id == base_id && k > 0)
                .cloned();
            let what = if k == 0 {
                "base".to_string()
            } else {
                format!("{k}/{n} {}", self.patches[k - 1].subject)
            };
            let cu = ui.cell(
                state.steps.len() + 1,
                state.expected_steps.max(state.steps.len() + 1),
                &format!("{} ({what})", cell.id()),
            );
            let (r, v, used) = run_judged(
                &mut d.ctx,
                &cell,
                &self.pred,
                base.as_ref(),
                &self.plan,
                &cu,
            );
            if signals::interrupted() {
                cu.finish("interrupted: not recorded");
                return Ok(None);
            }
            let reproduce = report::step_reproducer(
                &self.reproducer,
                &self.series,
                k,
                &self.arch,
                &self.tests,
                matches!(self.pred, Predicate::Builds { .. }),
            );
            let step = step_of(k, &r, &v, used, reproduce);
            cu.finish(&format!(
                "{}: {} (build {})",
                step.judgement_str(),
                step.reason,
                step.build_text()
            ));
            driver::append_line(
                &run_dir.join("bisect.log"),
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
            d.save(r)?;
            state.save(&run_dir)?;
        }
    }

    fn found(&self, state: &State, k: usize) -> Answer {
        let reason = |p: usize| {
            state
                .steps
                .iter()
                .rev()
                .find(|s| s.prefix == p)
                .map(|s| s.reason.clone())
                .unwrap_or_default()
        };
        Answer::Found {
            index: k,
            patch: self.patches[k - 1].clone(),
            bad: reason(k),
            good: reason(k - 1),
        }
    }
}

/// Writes the answer into bisect.json and bisect.md, prints it; the exit
/// code (0 found, 1 not bisectable, 2 interrupted).
pub fn conclude(state: &mut State, answer: Option<Answer>, run_dir: &Path) -> Result<u8> {
    state.answer = answer.clone();
    state.save(run_dir)?;
    let md = report::bisect_markdown(state, run_dir);
    crate::host::cache::write_atomic(&run_dir.join("bisect.md"), md.as_bytes())?;
    println!("{md}");
    println!("bisect: {}", run_dir.display());
    Ok(match answer {
        None => {
            eprintln!(
                "interrupted: {} steps saved; continue with: cargo xtask bisect --resume {}",
                state.steps.len(),
                crate::util::shell_quote(&run_dir.display().to_string())
            );
            2
        }
        Some(Answer::Found { .. }) | Some(Answer::Range { .. }) => 0,
        Some(Answer::NotBisectable { .. }) => 1,
    })
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

/// `bisect-step`: one commit of the user's tree judged as the base of a
/// one-kernel matrix, for `git bisect run`.
pub struct CommitJudge<'a> {
    /// The matrix file; each commit gets its own copy, pointing at it.
    pub matrix_file: PathBuf,
    /// `--kselftest` targets, declared in the matrix at every step.
    pub kselftest: Vec<String>,
    /// `--kunit` and `--kunitconfig`, declared the same way.
    pub kunit: Option<String>,
    pub kunitconfig: Option<String>,
    pub root: &'a Path,
    pub cache: &'a cache::Cache,
    pub policy: runner::policy::Policy,
    /// The tree (absolute) and its name as a kernel of the matrix.
    pub tree: PathBuf,
    pub name: String,
    pub arch: String,
    pub config: String,
    pub tests: Vec<String>,
    pub pred: Predicate,
    pub plan: StepPlan,
    /// Where the steps' cells, results.json and steps.log go.
    pub state_dir: PathBuf,
}

impl CommitJudge<'_> {
    /// Builds and boots `commit` (its logs in the state directory under
    /// `<commit>-<label>`), judged against `base` when the predicate needs
    /// one. The cell id carries the commit: `<id>@<commit>`.
    pub fn judge(
        &self,
        commit: &str,
        base: Option<&CellResult>,
        label: &str,
        ui: &ui::Ui,
    ) -> Result<(CellResult, Verdict, u32)> {
        let mut m = crate::plan::load(&self.matrix_file)?;
        crate::plan::targets::declare(&mut m, &self.kselftest)?;
        crate::plan::targets::declare_kunit(
            &mut m,
            self.kunit.as_deref(),
            self.kunitconfig.as_deref(),
        )?;
        variants::use_tree(&mut m, &self.name, &self.tree, commit);
        m.expect.clear();
        let dir = self.state_dir.join(format!("{}-{label}", &commit[..12]));
        let opts = driver::RunOptions {
            cell_timeout_s: self.plan.cell_timeout_s,
            ..Default::default()
        };
        let mut d = match Driver::open(
            &m,
            self.root,
            self.cache,
            self.policy.clone(),
            dir,
            opts,
            ui,
        )? {
            driver::Opened::Ready(d) => d,
            driver::Opened::Refused { why, .. } => bail!("{why}"),
        };
        let cell = Cell {
            kernel: self.name.clone(),
            variant: "base".into(),
            arch: Arch::parse(&self.arch).expect("validated"),
            config: self.config.clone(),
            tests: self.tests.clone(),
        };
        let cu = ui.cell(1, 1, &format!("{} at {}", cell.id(), &commit[..12]));
        let (mut r, v, used) = run_judged(&mut d.ctx, &cell, &self.pred, base, &self.plan, &cu);
        cu.finish(&format!("{v:?}"));
        r.id = format!("{}@{}", r.id, &commit[..12]);
        Ok((r, v, used))
    }

    /// The known-good commit's result, judged once and kept in the state
    /// directory (`reference-<commit>.json`); None when the predicate
    /// needs no reference.
    pub fn reference(&self, good: Option<&str>, ui: &ui::Ui) -> Result<Option<CellResult>> {
        if !self.pred.needs_base() {
            return Ok(None);
        }
        let Some(good) = good else {
            bail!(
                "{} compares with a good commit: give --good REV",
                self.pred.describe(results::Better::Lower)
            );
        };
        let good = source::resolve_rev(&self.tree, good)?;
        let path = self
            .state_dir
            .join(format!("reference-{}.json", &good[..12]));
        if let Some(r) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<CellResult>(&t).ok())
        {
            return Ok(Some(r));
        }
        let (r, _, _) = self.judge(&good, None, "good", ui)?;
        if let Some(why) = predicate::not_judgeable(&r) {
            bail!("the good commit {} could not be judged: {why}", &good[..12]);
        }
        cache::write_atomic(&path, serde_json::to_string_pretty(&r)?.as_bytes())?;
        Ok(Some(r))
    }

    /// Judges the tree's HEAD; records it in the state directory's
    /// results.json and steps.log; `git bisect run`'s exit code.
    pub fn judge_head(&self, good: Option<&str>, reproduce_flags: &str, ui: &ui::Ui) -> Result<u8> {
        let head = source::resolve_rev(&self.tree, "HEAD")?;
        let reference = self.reference(good, ui)?;
        let (mut r, v, used) = self.judge(&head, reference.as_ref(), "step", ui)?;
        if signals::interrupted() {
            return Ok(128);
        }
        let tree = crate::util::shell_quote(&self.tree.display().to_string()).into_owned();
        let reproduce = format!(
            "git -C {tree} checkout {head} && cargo xtask bisect-step --tree {tree} {reproduce_flags}"
        );
        let step = step_of(0, &r, &v, used, reproduce);
        r.reproduce.xtask = step.reproduce.clone();
        let line = format!(
            "{head} {}: {} (cell {}, build {}, {:.0}s)",
            step.judgement_str(),
            step.reason,
            step.outcome,
            step.build_text(),
            step.total_s
        );
        driver::append_line(&self.state_dir.join("steps.log"), &line);
        let results_path = self.state_dir.join("results.json");
        let mut run = driver::load_or_new(&results_path, "")?;
        run.upsert(r);
        run.save(&results_path)?;
        println!("bisect-step {line}");
        Ok(match step.judgement {
            Judgement::Good => 0,
            Judgement::Bad => 1,
            Judgement::Skip => 125,
        })
    }
}

/// `cargo xtask checkout`: a git tree of a matrix kernel with a series
/// applied as commits (branch `kmatrix` on tag `kmatrix-base`), for your
/// own work, `--tree` and `git bisect`. `dest` is absolute.
pub fn checkout(
    mut m: Matrix,
    root: &Path,
    cache: &cache::Cache,
    kernel: &str,
    dest: &Path,
    sources: &Sources,
) -> Result<u8> {
    if dest.exists() && std::fs::read_dir(dest)?.next().is_some() {
        bail!("{} exists and is not empty", dest.display());
    }
    if !m.kernel.contains_key(kernel) && sources.tree.is_none() {
        bail!(
            "kernel {kernel} is not in the matrix; known: {}",
            m.kernel.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    let kernel = match apply_sources(&mut m, sources, root, cache, Some(kernel))? {
        Some(k) => k,
        None => variants::pick_kernel(&m, Some(kernel))?,
    };
    let mut log = |s: &str| eprintln!("{s}");
    let base = source::prepare_base(m.kernel[&kernel].source.get_ref(), cache, &mut log)?;
    let trees = source::Trees::open(&base, &kernel, cache, &mut log)?;
    // The kernel's series (the one --series, --series-name or --patches
    // names, else its first), as the docs promise; none for a kernel
    // without one.
    let series = match m.kernel[&kernel].series.first() {
        Some(s) => {
            let name = variants::pick_series(&m, &kernel, sources.series_name.as_deref())
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
    source::export_tree(&trees.repo, &base.commit, &commit, dest)?;
    println!(
        "{}: branch kmatrix at {} ({} patches on tag kmatrix-base)",
        dest.display(),
        &commit[..12],
        series.as_ref().map_or(0, |s| s.patches.len())
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        let text = std::fs::read_to_string(crate::golden::repo_file("matrix.toml")).unwrap();
        Matrix::parse("matrix.toml", &text).unwrap()
    }

    #[test]
    fn a_test_step_boots_once_and_a_metric_step_as_often_as_the_matrix_says() {
        let m = matrix();
        let case = Predicate::Outcome {
            test: "seccomp_bpf".into(),
            case: None,
            bad: vec![Outcome::Fail],
        };
        let metric = Predicate::Regression {
            metric: "seccomp_notify.default.same-cpu".into(),
            pct: 10.0,
        };
        assert_eq!(first_boots(None, &case, &m), 1);
        assert_eq!(first_boots(None, &Predicate::NewFailures, &m), 1);
        assert_eq!(first_boots(None, &metric, &m), m.run.boots);
        assert_eq!(m.run.boots, 3, "the default matrix's run.boots");
        assert_eq!(first_boots(Some(4), &metric, &m), 4);
    }

    #[test]
    fn a_step_records_its_verdict_and_where_its_build_came_from() {
        let mut r = CellResult::blank("6.1/s@3/x86_64/tiny", Outcome::Fail);
        r.timings.build_s = 6.66;
        r.timings.build_incremental = true;
        let s = step_of(
            3,
            &r,
            &Verdict::Bad("fail".into()),
            2,
            "cargo xtask matrix".into(),
        );
        assert_eq!((s.prefix, s.judgement, s.boots), (3, Judgement::Bad, 2));
        assert_eq!(
            (s.judgement_str(), s.build_text()),
            ("bad", "6.7s incremental".to_string())
        );
        let s = step_of(
            0,
            &r,
            &Verdict::Unclear("straddles".into()),
            1,
            String::new(),
        );
        assert_eq!(
            (s.judgement, s.reason.as_str()),
            (Judgement::Skip, "straddles")
        );
        r.outcome = Outcome::BuildError;
        assert_eq!(
            step_of(9, &r, &Verdict::Skip("no".into()), 1, String::new()).build_text(),
            "failed"
        );
        r.outcome = Outcome::ApplyError;
        assert_eq!(
            step_of(9, &r, &Verdict::Skip("no".into()), 1, String::new()).build_text(),
            "not applied"
        );
    }

    #[test]
    fn checkout_refuses_a_kernel_the_matrix_does_not_have() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-co-{}", std::process::id()));
        let cache = cache::Cache::open(dir.join("cache"), false).unwrap();
        let e = checkout(
            matrix(),
            Path::new("/"),
            &cache,
            "9.9",
            &dir.join("dest"),
            &Sources::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel 9.9 is not in the matrix; known: 6.1, 6.12"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
