//! `patchcheck`: what a maintainer checks before applying a series, patch
//! by patch. For each patch in order and each arch/config of the matrix:
//! the kernel built with the series up to that patch (incremental, in the
//! kernel's shared O= directory, through the runner's own source, config
//! and build phases, so the last step is the matrix's own cached build),
//! and the `.c` files the patch touches compiled alone before and after
//! it, with and without `W=1`, so the warnings it adds are found by their
//! text; `scripts/checkpatch.pl --strict` on the patch and `scripts/
//! kernel-doc -none` on its files, both from the tree. Nothing is booted.

pub mod parse;
pub mod report;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::series::PatchInfo;
use crate::build::slots::Slots;
use crate::build::source::Trees;
use crate::build::{guest, kbuild};
use crate::host::proc::{self, limit};
use crate::plan::arch::Arch;
use crate::plan::matrix::{target_name, Cell, Filters, Matrix, TestKind, SELFTESTS};
use crate::runner::{self, Ctx};
use crate::schema::Outcome;
use parse::Finding;

pub const SCHEMA: u32 = 1;

/// patchcheck.json.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    pub schema: u32,
    pub kernel: String,
    pub series: String,
    /// `ARCH/CONFIG`, the columns.
    pub targets: Vec<String>,
    /// The base alone, per target.
    pub base: Vec<TargetBuild>,
    pub patches: Vec<PatchCheck>,
    /// checkpatch severities that fail the check: error, warning or check.
    pub fail_on: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PatchCheck {
    /// 1-based place in the series.
    pub number: usize,
    pub info: PatchInfo,
    pub files: Vec<String>,
    /// One per target, in `targets` order.
    pub builds: Vec<TargetBuild>,
    pub checkpatch: Vec<Finding>,
    /// kernel-doc warnings in the patch's files that the patch adds.
    pub kernel_doc: Vec<String>,
    /// The matrix's selftests whose directory the patch touches, compiled
    /// for each booted arch before and after it.
    #[serde(default)]
    pub selftests: Vec<SelftestBuild>,
}

/// A compiled test of the matrix (kind `kselftest`, `programs` or `perf`)
/// whose directory a patch touches, compiled for one arch as the matrix
/// compiles it for the guest, at the patch and at the step before it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SelftestBuild {
    pub arch: String,
    /// The matrix test.
    pub test: String,
    /// The tree directory it is built from, when it is not a selftest's
    /// (`tools/perf`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dir: String,
    /// `pass` or `build-error`.
    pub outcome: String,
    /// The first error line of a failed compile.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_error: String,
    /// It compiled at the step before the patch.
    pub built_before: bool,
    /// Compiler warnings the patch adds in the files it touches.
    #[serde(default)]
    pub new_warnings: Vec<String>,
}

impl SelftestBuild {
    /// How the reports name it: `selftest seccomp_bpf`, `tools/perf
    /// (perf_bench)`.
    pub fn label(&self) -> String {
        if self.dir.is_empty() {
            format!("selftest {}", self.test)
        } else {
            format!("{} ({})", self.dir, self.test)
        }
    }

    /// Broken by this patch, or warning anew.
    pub fn is_bad(&self) -> bool {
        (self.outcome != "pass" && self.built_before) || !self.new_warnings.is_empty()
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetBuild {
    pub target: String,
    /// `pass`, `build-error`, `config-error`, `apply-error`, `infra-error`.
    pub outcome: String,
    /// The first error line of a failed build.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub first_error: String,
    /// Compiler warnings the patch adds in its files (default flags).
    #[serde(default)]
    pub new_warnings: Vec<String>,
    /// Warnings the patch adds that only `W=1` shows.
    #[serde(default)]
    pub new_w1_warnings: Vec<String>,
    pub build_s: f64,
    pub cached: bool,
    pub incremental: bool,
    /// The build log, when one was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
}

impl TargetBuild {
    pub fn ok(&self) -> bool {
        self.outcome == "pass"
    }
}

impl Check {
    /// Whether a patch brings something new: a build that fails where the
    /// previous step built, new warnings, or checkpatch findings at
    /// `fail_on`.
    pub fn patch_is_bad(&self, p: &PatchCheck) -> bool {
        p.builds
            .iter()
            .enumerate()
            .any(|(t, b)| (!b.ok() && self.built_before(p, t)) || !b.new_warnings.is_empty())
            || parse::counts_at(&p.checkpatch, &self.fail_on) > 0
            || p.selftests.iter().any(SelftestBuild::is_bad)
    }

    /// Whether target `t` built one step before patch `p` (the base before
    /// patch 1).
    pub fn built_before(&self, p: &PatchCheck, t: usize) -> bool {
        if p.number == 1 {
            self.base.get(t).is_some_and(TargetBuild::ok)
        } else {
            self.patches[p.number - 2]
                .builds
                .get(t)
                .is_some_and(TargetBuild::ok)
        }
    }

    /// The exit code: 0 nothing new, 1 a patch brought something.
    pub fn code(&self) -> u8 {
        u8::from(self.patches.iter().any(|p| self.patch_is_bad(p)))
    }
}

/// What to check: the matrix with the source flags applied, the kernel,
/// its series (already cut to `--patches`) and the run directory.
pub struct Plan<'a> {
    pub matrix: Matrix,
    pub root: &'a Path,
    pub cache: &'a crate::host::cache::Cache,
    pub kernel: String,
    pub series: String,
    pub arches: Vec<String>,
    /// Only these configs (empty: all).
    pub configs: Vec<String>,
    pub run_dir: PathBuf,
    pub fail_on: String,
}

/// Runs the check; writes patchcheck.json, .md and .html into the run
/// directory.
pub fn run(plan: Plan<'_>, ui: &crate::host::ui::Ui) -> Result<Check> {
    let mut m = plan.matrix;
    let spec = &m.series[&plan.series];
    let series = crate::build::series::Series::load_prefix(
        &plan.series,
        &plan.root.join(&spec.dir),
        spec.take,
    )?;
    let n = series.patches.len();
    let names = crate::plan::variants::prefixes(&mut m, &plan.kernel, &plan.series, n);
    let targets = targets(&m, &plan.arches, &plan.configs, &plan.kernel)?;
    let ctx = Ctx::new(
        &m,
        plan.root.to_path_buf(),
        plan.cache,
        plan.run_dir.clone(),
        Default::default(),
    );
    let files: Vec<Vec<String>> = series
        .patches
        .iter()
        .map(|p| parse::touched(&std::fs::read_to_string(p).unwrap_or_default()))
        .collect();
    let mut check = Check {
        schema: SCHEMA,
        kernel: plan.kernel.clone(),
        series: plan.series.clone(),
        targets: targets.iter().map(|(a, c)| format!("{a}/{c}")).collect(),
        base: vec![],
        patches: series
            .info()
            .into_iter()
            .enumerate()
            .map(|(i, info)| PatchCheck {
                number: i + 1,
                info,
                files: files[i].clone(),
                builds: vec![],
                checkpatch: vec![],
                kernel_doc: vec![],
                selftests: vec![],
            })
            .collect(),
        fail_on: plan.fail_on.clone(),
    };
    let mut progress = Progress {
        ui,
        step: 0,
        total: targets.len() * (n + 1),
    };
    let mut docs_done = false;
    let mut selftest_arches: Vec<Arch> = Vec::new();
    for (arch, config) in &targets {
        let target = Target {
            ctx: &ctx,
            kernel: &plan.kernel,
            root: plan.root,
            cache: plan.cache,
            run_dir: &plan.run_dir,
            arch: *arch,
            config,
            files: &files,
        };
        let steps = target.build_steps(&names, &mut check, &mut progress)?;
        let Some(trees) = &steps.trees else {
            continue;
        };
        // The selftests a patch touches, once an arch: for each booted arch
        // as its guests get them (gcc's, not a clang config's); for a
        // build-only arch, tools/perf alone (32-bit x86 has a C library
        // from set-up, which the selftests' own libraries lack).
        if !steps.llvm && !selftest_arches.contains(arch) {
            selftest_arches.push(*arch);
            target.selftest_steps(trees, &steps.commits, &mut check, &progress)?;
        }
        // kernel-doc and checkpatch once, from the first target's trees.
        if !docs_done {
            doc_steps(trees, &steps.commits, &files, &series.patches, &mut check)?;
            docs_done = true;
        }
    }
    for (name, text) in [
        ("patchcheck.json", serde_json::to_string_pretty(&check)?),
        ("patchcheck.md", report::markdown(&check)),
        ("patchcheck.html", report::html(&check)),
    ] {
        crate::host::cache::write_atomic(&plan.run_dir.join(name), text.as_bytes())?;
    }
    Ok(check)
}

/// The kernel/arch/config targets to build: the booted arches' as the
/// matrix's cells have them, then the build-only ones; `arches` and
/// `configs` narrow them (empty: all).
fn targets(
    m: &Matrix,
    arches: &[String],
    configs: &[String],
    kernel: &str,
) -> Result<Vec<(Arch, String)>> {
    let wanted = |a: &str| arches.is_empty() || arches.iter().any(|x| x == a);
    let wanted_config = |c: &str| configs.is_empty() || configs.iter().any(|x| x == c);
    let guest_arches: Vec<String> = m
        .run
        .arches
        .iter()
        .map(|a| a.get_ref().clone())
        .filter(|a| wanted(a))
        .collect();
    let mut targets: Vec<(Arch, String)> = Vec::new();
    if !guest_arches.is_empty() {
        let filters = Filters {
            kernel: vec![kernel.to_string()],
            arch: guest_arches,
            ..Default::default()
        };
        for c in m.cells(&filters)? {
            let t = (c.arch, c.config.clone());
            if wanted_config(&c.config) && !targets.contains(&t) {
                targets.push(t);
            }
        }
    }
    for t in m.build_only() {
        if wanted(t.0.name()) && wanted_config(&t.1) && !targets.contains(&t) {
            targets.push(t);
        }
    }
    if targets.is_empty() {
        anyhow::bail!("--arch {arches:?} --config {configs:?}: select no target to build");
    }
    Ok(targets)
}

/// The check's progress lines: step `step` of `total` builds.
struct Progress<'a> {
    ui: &'a crate::host::ui::Ui,
    step: usize,
    total: usize,
}

/// One kernel/arch/config target of the check, and the patches' files.
struct Target<'a> {
    ctx: &'a Ctx<'a>,
    kernel: &'a str,
    root: &'a Path,
    cache: &'a crate::host::cache::Cache,
    run_dir: &'a Path,
    arch: Arch,
    config: &'a str,
    files: &'a [Vec<String>],
}

/// What a target's builds leave for the steps after them: each prefix's
/// commit (None where it did not apply), the kernel's trees, and whether
/// the config builds with clang.
struct Steps {
    commits: Vec<Option<String>>,
    trees: Option<std::sync::Arc<Trees>>,
    llvm: bool,
}

impl Target<'_> {
    fn cell(&self, variant: &str) -> Cell {
        Cell {
            kernel: self.kernel.to_string(),
            variant: variant.to_string(),
            arch: self.arch,
            config: self.config.to_string(),
            tests: self.ctx.matrix.config_tests(self.config),
        }
    }

    /// The base and each prefix built in turn; each patch's files compiled
    /// alone before and after it, for the warnings it adds.
    fn build_steps(
        &self,
        names: &[String],
        check: &mut Check,
        progress: &mut Progress,
    ) -> Result<Steps> {
        let (arch, config, files) = (self.arch, self.config, self.files);
        let llvm = self.ctx.matrix.config[config].llvm;
        let mut steps = Steps {
            commits: Vec::new(),
            trees: None,
            llvm,
        };
        let mut slots: Option<Slots> = None;
        let mut step_config: Option<PathBuf> = None;
        // A patch's files compiled alone at `commit`, in the build dir and
        // with the .config of the step before.
        let objects_at = |trees: &Option<std::sync::Arc<Trees>>,
                          slots: &Option<Slots>,
                          cf: &Option<PathBuf>,
                          commit: &str,
                          touched: &[String]| match (trees, slots, cf) {
            (Some(t), Some(sl), Some(cf)) => {
                objects(t, commit, sl, cf, arch, llvm, touched, self.run_dir).map(Some)
            }
            _ => Ok(None),
        };
        let variants = std::iter::once("base").chain(names.iter().map(String::as_str));
        for (k, v) in variants.enumerate() {
            progress.step += 1;
            let cell = self.cell(v);
            let cui = progress.ui.cell(progress.step, progress.total, &cell.id());
            // The patch's files before it: compiled at the previous step's
            // commit, with its .config.
            let before = match (k, steps.commits.last()) {
                (1.., Some(Some(prev))) => {
                    objects_at(&steps.trees, &slots, &step_config, prev, &files[k - 1])?
                }
                _ => None,
            };
            let t0 = Instant::now();
            let (r, built) = runner::build_only(self.ctx, &cell, &cui)?;
            let mut b = TargetBuild {
                target: format!("{arch}/{config}"),
                outcome: r.outcome.as_str().to_string(),
                build_s: t0.elapsed().as_secs_f64(),
                cached: r.timings.build_cached,
                incremental: r.timings.build_incremental,
                log: r.logs.build.clone(),
                ..Default::default()
            };
            if r.outcome != Outcome::Pass {
                b.first_error = r
                    .evidence
                    .iter()
                    .map(|e| kbuild::first_error(&e.excerpt))
                    .find(|l| !l.is_empty())
                    .or_else(|| r.evidence.first().map(|e| e.what.clone()))
                    .unwrap_or_default();
                // Paths as in the tree, not in the cache's worktree.
                if let Some(x) = &built {
                    let prefix = format!("{}/", x.trees.build.display());
                    b.first_error = b.first_error.replace(&prefix, "");
                }
            }
            let commit = built.as_ref().map(|x| x.commit.clone());
            if let Some(x) = &built {
                steps.trees = Some(x.trees.clone());
                slots = Some(x.slots.clone());
                step_config = x.config.clone();
            }
            if let (1.., true, Some(c), Some(before)) = (k, b.ok(), &commit, before) {
                if let Some(after) =
                    objects_at(&steps.trees, &slots, &step_config, c, &files[k - 1])?
                {
                    b.new_warnings = after.0.difference(&before.0).cloned().collect();
                    b.new_w1_warnings = after
                        .1
                        .difference(&before.1)
                        .filter(|w| !after.0.contains(*w))
                        .cloned()
                        .collect();
                }
            }
            cui.finish(&format!(
                "{} {:.0}s{}",
                b.outcome,
                b.build_s,
                count_of("new warnings", b.new_warnings.len())
            ));
            if k == 0 {
                check.base.push(b);
            } else {
                check.patches[k - 1].builds.push(b);
            }
            steps.commits.push(commit);
        }
        Ok(steps)
    }

    /// The selftests each patch touches (the matrix's, and any other
    /// kselftest target of the tree), compiled before and after it for
    /// this arch: a build it breaks, warnings it adds.
    fn selftest_steps(
        &self,
        trees: &Trees,
        commits: &[Option<String>],
        check: &mut Check,
        progress: &Progress,
    ) -> Result<()> {
        let (m, arch) = (self.ctx.matrix, self.arch);
        for k in 1..commits.len() {
            let (Some(Some(prev)), Some(Some(cur))) = (commits.get(k - 1), commits.get(k)) else {
                continue;
            };
            let has_makefile = |dir: &str| {
                crate::build::source::read_at(&trees.repo, cur, &format!("{dir}/Makefile"))
                    .is_some()
            };
            let targets = touched_targets(m, &self.files[k - 1], has_makefile);
            let targets: Vec<(String, crate::plan::matrix::TestSpec)> = targets
                .iter()
                .map(|dir| {
                    let name = target_name(dir).unwrap_or(dir);
                    (
                        crate::plan::targets::test_name(name),
                        crate::plan::matrix::TestSpec::target(dir, vec![]),
                    )
                })
                .collect();
            let touched = touched_tests(m, &self.files[k - 1])
                .into_iter()
                .map(|t| (t.clone(), &m.test[&t]))
                .chain(targets.iter().map(|(n, s)| (n.clone(), s)));
            for (test, spec) in touched {
                if !arch.info().boots && spec.kind != TestKind::Perf {
                    continue;
                }
                let dir = match spec.kind {
                    TestKind::Perf => spec.dir.clone().unwrap_or_default(),
                    _ => String::new(),
                };
                let mut sb = SelftestBuild {
                    arch: arch.name().to_string(),
                    test: test.clone(),
                    dir,
                    ..Default::default()
                };
                let sui = progress.ui.cell(
                    progress.step,
                    progress.total,
                    &format!("{} for {arch} at patch {k}", sb.label()),
                );
                let before =
                    compile_selftest(self.cache, self.root, trees, prev, arch, &test, spec)?;
                let after = compile_selftest(self.cache, self.root, trees, cur, arch, &test, spec)?;
                sb.outcome = if after.0 { "pass" } else { "build-error" }.into();
                sb.built_before = before.0;
                if after.0 {
                    for f in self.files[k - 1]
                        .iter()
                        .filter(|f| f.ends_with(".c") || f.ends_with(".h"))
                    {
                        // perf's make prints paths from tools/perf.
                        let dir = match spec.kind {
                            TestKind::Perf => spec.dir.as_deref().unwrap_or(""),
                            _ => "",
                        };
                        let was = parse::compiler_warnings_in(&before.1, f, dir);
                        sb.new_warnings.extend(
                            parse::compiler_warnings_in(&after.1, f, dir)
                                .difference(&was)
                                .cloned(),
                        );
                    }
                } else {
                    sb.first_error = kbuild::first_error(&after.1);
                }
                sui.finish(&format!(
                    "{}{}",
                    sb.outcome,
                    count_of("new warnings", sb.new_warnings.len())
                ));
                check.patches[k - 1].selftests.push(sb);
            }
        }
        Ok(())
    }
}

/// ", new warnings: N", or nothing for none.
fn count_of(what: &str, n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(", {what}: {n}")
    }
}

/// kernel-doc's new complaints about each patch's files, and checkpatch
/// on each patch, from `trees` at the base's and the prefixes' commits.
fn doc_steps(
    trees: &Trees,
    commits: &[Option<String>],
    files: &[Vec<String>],
    patches: &[PathBuf],
    check: &mut Check,
) -> Result<()> {
    for k in 1..commits.len() {
        if let (Some(Some(prev)), Some(Some(cur))) = (commits.get(k - 1), commits.get(k)) {
            check.patches[k - 1].kernel_doc = match (
                kernel_doc(trees, prev, &files[k - 1])?,
                kernel_doc(trees, cur, &files[k - 1])?,
            ) {
                (Ok(before), Ok(after)) => after.difference(&before).cloned().collect(),
                (Err(why), _) | (_, Err(why)) => vec![why],
            };
        }
    }
    if let Some(Some(base)) = commits.first() {
        let work = trees.checkout_work(base)?.to_path_buf();
        for (k, p) in patches.iter().enumerate() {
            check.patches[k].checkpatch = checkpatch(&work, p)?;
        }
    }
    Ok(())
}

/// The kselftest targets `files` lie in that no compiled test of the
/// matrix covers: for each file under tools/testing/selftests, the
/// deepest directory holding it that has a Makefile (`net/forwarding`
/// before `net`), as `make kselftest TARGETS=` names a target.
fn touched_targets(
    m: &Matrix,
    files: &[String],
    has_makefile: impl Fn(&str) -> bool,
) -> Vec<String> {
    let covered: Vec<String> = m
        .test
        .values()
        .filter(|t| t.kind != TestKind::Perf)
        .filter_map(|t| t.dir.as_ref())
        .map(|d| format!("{}/", d.trim_end_matches('/')))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for f in files {
        if !f.starts_with(SELFTESTS) || covered.iter().any(|d| f.starts_with(d.as_str())) {
            continue;
        }
        let mut dir = f.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            dir = parent;
            if target_name(dir).is_none() {
                break;
            }
            if has_makefile(dir) {
                if !out.iter().any(|o| o == dir) {
                    out.push(dir.to_string());
                }
                break;
            }
        }
    }
    out
}

/// Where tools/perf builds from besides its own directory.
const PERF_INPUTS: &[&str] = &["tools/arch/", "tools/include/", "tools/lib/"];

/// The matrix's compiled tests (`kselftest`, `programs`, `perf`) whose
/// directory holds one of `files` (for `perf`, also the tools/ directories
/// it builds from).
fn touched_tests(m: &Matrix, files: &[String]) -> Vec<String> {
    m.test
        .iter()
        .filter(|(_, t)| {
            matches!(
                t.kind,
                TestKind::Kselftest | TestKind::Programs | TestKind::Perf | TestKind::Target
            )
        })
        .filter(|(_, t)| {
            t.dir.as_ref().is_some_and(|d| {
                let d = format!("{}/", d.trim_end_matches('/'));
                files.iter().any(|f| {
                    f.starts_with(&d)
                        || (t.kind == TestKind::Perf
                            && PERF_INPUTS.iter().any(|p| f.starts_with(p)))
                })
            })
        })
        .map(|(n, _)| n.clone())
        .collect()
}

/// Test `name` compiled for `arch` from the work tree at `commit`, as the
/// runner compiles it for a guest (cached by content, with what the
/// compiler said): (compiled, the compiler's output).
fn compile_selftest(
    cache: &crate::host::cache::Cache,
    root: &Path,
    trees: &Trees,
    commit: &str,
    arch: Arch,
    name: &str,
    spec: &crate::plan::matrix::TestSpec,
) -> Result<(bool, String)> {
    let tree = trees.checkout_work(commit)?.to_path_buf();
    let uapi = crate::build::source::uapi_id(&trees.repo, commit, arch.name())?;
    let job = guest::CompileJob {
        cache,
        repo_root: root,
        arch,
        tree: &tree,
        uapi_id: &uapi,
        absent: &[],
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()) + 1,
    };
    Ok(match guest::compile(&job, name, spec)? {
        guest::CompileOutcome::Ok(p) => (true, p.compiler_output),
        guest::CompileOutcome::Failed { stderr, .. } => (false, stderr),
    })
}

/// The warnings of each `.c` file of `files` compiled alone at `commit`
/// with `config` (default flags, then `W=1`), in the kernel/arch/config's
/// O= dir with least to rebuild; a file this config does not build gives
/// none.
#[allow(clippy::too_many_arguments)]
fn objects(
    trees: &Trees,
    commit: &str,
    slots: &Slots,
    config: &Path,
    arch: crate::plan::arch::Arch,
    llvm: bool,
    files: &[String],
    run_dir: &Path,
) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let sources: Vec<&String> = files
        .iter()
        .filter(|f| f.ends_with(".c") && !f.starts_with("tools/") && !f.starts_with("scripts/"))
        .collect();
    let mut plain = BTreeSet::new();
    let mut w1 = BTreeSet::new();
    if sources.is_empty() {
        return Ok((plain, w1));
    }
    let tree = trees.checkout_build(commit)?.to_path_buf();
    let lease = slots.enter(&tree, commit, false, &mut |_| {})?;
    let build_dir = lease.dir.clone();
    kbuild::put_config(&build_dir, &std::fs::read(config)?)?;
    let log = run_dir.join("patchcheck-objects.log");
    for f in sources {
        if !tree.join(f).exists() {
            continue; // the patch removed it
        }
        let obj = f.trim_end_matches(".c").to_string() + ".o";
        for (extra, into) in [(None, &mut plain), (Some("W=1"), &mut w1)] {
            let _ = std::fs::remove_file(build_dir.join(&obj));
            let mut make = Command::new("make");
            make.args(kbuild::make_args(&tree, &build_dir, arch, llvm))
                .args(extra)
                .arg(&obj)
                .env("KBUILD_BUILD_TIMESTAMP", "1970-01-01")
                // The compiler's own words, in ASCII quotes, on any host.
                .env("LC_ALL", "C");
            let done = proc::run(make, limit::scaled(limit::MAKE_CONFIG))
                .with_context(|| format!("make {obj}"))?;
            let text = format!("{}\n{}", done.stdout, done.stderr);
            append(
                &log,
                &format!("== {commit} {arch} {} {obj}\n{text}", extra.unwrap_or("")),
            );
            into.extend(parse::compiler_warnings(&text, f));
        }
    }
    lease.done(false)?;
    Ok((plain, w1))
}

/// kernel-doc's warnings on the patch's files at `commit`; Err(why) when
/// the script itself failed (with `-none` it exits 0 whatever it warns).
fn kernel_doc(
    trees: &Trees,
    commit: &str,
    files: &[String],
) -> Result<std::result::Result<BTreeSet<String>, String>> {
    let docs: Vec<&String> = files
        .iter()
        .filter(|f| (f.ends_with(".c") || f.ends_with(".h")) && !f.starts_with("tools/"))
        .collect();
    let mut out = BTreeSet::new();
    if docs.is_empty() {
        return Ok(Ok(out));
    }
    let tree = trees.checkout_build(commit)?.to_path_buf();
    let present: Vec<&&String> = docs.iter().filter(|f| tree.join(f).exists()).collect();
    if present.is_empty() {
        return Ok(Ok(out));
    }
    // Run as the tree has it (Perl, or Python in later kernels).
    let mut c = Command::new(tree.join("scripts/kernel-doc"));
    c.arg("-none")
        .args(present.iter().map(|f| f.as_str()))
        .current_dir(&tree);
    let done = proc::run(c, limit::scaled(limit::GIT)).context("scripts/kernel-doc -none")?;
    if !done.success() {
        return Ok(Err(format!(
            "scripts/kernel-doc -none at {} {}: {}",
            &commit[..12.min(commit.len())],
            done.describe(),
            crate::util::tail(&done.stderr, 3)
        )));
    }
    out.extend(parse::kernel_doc(&format!(
        "{}\n{}",
        done.stdout, done.stderr
    )));
    Ok(Ok(out))
}

fn checkpatch(work: &Path, patch: &Path) -> Result<Vec<Finding>> {
    let mut c = Command::new("perl");
    c.arg(work.join("scripts/checkpatch.pl"))
        .args(["--strict", "--show-types", "--color=never"])
        .arg(patch)
        .current_dir(work);
    let done = proc::run(c, limit::scaled(limit::GIT)).context("scripts/checkpatch.pl")?;
    // It exits 1 on findings too; one that ran always ends with `total:`.
    if !done.stdout.lines().any(|l| l.starts_with("total: ")) {
        return Ok(vec![Finding {
            severity: "ERROR".into(),
            kind: "CHECKPATCH_DID_NOT_RUN".into(),
            message: format!(
                "scripts/checkpatch.pl {}: {}",
                done.describe(),
                crate::util::tail(&format!("{}\n{}", done.stdout, done.stderr), 3)
            ),
            location: String::new(),
        }]);
    }
    Ok(parse::checkpatch(&done.stdout))
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A selftest file no test of the matrix covers is its target's: the
    /// deepest directory with a Makefile; a file of the selftests' own
    /// top directory, or of a declared test's, is no target's.
    #[test]
    fn a_touched_selftest_the_matrix_lacks_is_built_as_its_target() {
        let m = crate::plan::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../matrix.toml"
        )))
        .unwrap();
        let makefiles = [
            "tools/testing/selftests/pidfd",
            "tools/testing/selftests/net",
            "tools/testing/selftests/net/forwarding",
        ];
        let t = |files: &[&str]| {
            touched_targets(
                &m,
                &files.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
                |d| makefiles.contains(&d),
            )
        };
        assert_eq!(
            t(&[
                "tools/testing/selftests/pidfd/pidfd_open_test.c",
                "tools/testing/selftests/pidfd/pidfd.h",
                "tools/testing/selftests/net/forwarding/lib/x.sh",
                "tools/testing/selftests/net/tls.c",
                "tools/testing/selftests/lib.mk",
                "tools/testing/selftests/seccomp/seccomp_bpf.c",
                "tools/testing/selftests/nomake/a.c",
                "kernel/pid.c",
            ]),
            [
                "tools/testing/selftests/pidfd",
                "tools/testing/selftests/net/forwarding",
                "tools/testing/selftests/net"
            ]
        );
    }

    /// The default matrix's compiled tests a patch touches: by directory,
    /// every test of that directory, none for a kernel file or a
    /// directory that only shares a prefix.
    #[test]
    fn the_selftests_a_patch_touches_are_those_of_its_directories() {
        let m = crate::plan::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../matrix.toml"
        )))
        .unwrap();
        let t = |files: &[&str]| {
            touched_tests(&m, &files.iter().map(|f| f.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            t(&[
                "kernel/seccomp.c",
                "tools/testing/selftests/seccomp/seccomp_bpf.c"
            ]),
            ["seccomp_bpf"]
        );
        assert_eq!(
            t(&["tools/testing/selftests/rseq/rseq.h"]),
            ["rseq_percpu_ops", "rseq_selftests"]
        );
        assert!(t(&["kernel/sched/core.c"]).is_empty());
        // perf builds from tools/arch, tools/include and tools/lib too.
        assert_eq!(
            t(&["tools/arch/x86/include/uapi/asm/unistd_32.h"]),
            ["perf_bench"]
        );
        assert_eq!(t(&["tools/lib/api/fs/fs.c"]), ["perf_bench"]);
        assert!(t(&["tools/testing/selftests/lib/config"]).is_empty());
        assert!(t(&["tools/testing/selftests/seccompx/a.c"]).is_empty());
        // A guest program of rootfs/ is not in the tree.
        assert!(t(&["rootfs/guest/seccomp_notify_bench.c"]).is_empty());
    }
}
