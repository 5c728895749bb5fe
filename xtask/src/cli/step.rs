//! `cargo xtask bisect-step`: for `git bisect run`. Builds and boots the
//! checked-out commit of a tree and exits 0 good, 1 bad, 125 skip, 128
//! harness error.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::bisect::{PredicateArgs, StepOpts};
use super::Env;
use crate::bisect::{first_boots, CommitJudge, StepPlan};
use crate::host::ui;
use crate::plan::variants;
use crate::runner::policy::Policy;

#[derive(Args, Clone, Debug, Default)]
pub struct StepCmd {
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

impl StepCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        let a = self;
        let tree = std::fs::canonicalize(env.path(a.tree.as_deref().unwrap_or(Path::new("."))))
            .map_err(|e| {
                anyhow::anyhow!(
                    "--tree {}: {e}",
                    a.tree.as_deref().unwrap_or(Path::new(".")).display()
                )
            })?;
        if !tree.join(".git").exists() {
            anyhow::bail!("--tree {}: not a git checkout", tree.display());
        }
        let mut template = a.opts.matrix.load_checked(env)?;
        a.pred.declare(&mut template)?;
        let strings = |v: &[toml::Spanned<String>]| -> Vec<String> {
            v.iter().map(|x| x.get_ref().clone()).collect()
        };
        // Every flag is checked before the host is set up or the cache
        // opened.
        a.opts
            .validate(&template, strings(&template.run.configs), &a.pred)?;
        let name = variants::name_of(&tree);
        let pred = a.pred.predicate(&template)?;
        let arch = variants::pick_one(
            "arch",
            a.pred.arch(a.opts.arch.as_deref())?,
            pred.arches(&template),
        )?;
        let config = pred.pick_config(
            &template,
            &arch,
            a.opts.config.as_deref(),
            strings(&template.run.configs),
        )?;
        let tests = pred.tests().unwrap_or_else(|| strings(&template.run.tests));
        let plan = StepPlan {
            boots: first_boots(a.opts.boots, &pred, &template),
            max_boots: a.opts.max_boots(),
            cell_timeout_s: a.opts.cell_timeout,
        };
        let state_dir = match &a.state {
            Some(s) => env.path(s),
            None => env.results("bisect-step").join(&name),
        };
        if state_dir.exists() && !state_dir.is_dir() {
            anyhow::bail!("--state {}: not a directory", state_dir.display());
        }
        let cache = a.opts.host.prepare(&template)?;
        std::fs::create_dir_all(&state_dir)?;
        let judge = CommitJudge {
            matrix_file: a.opts.matrix.file(env),
            kselftest: a.pred.kselftest.iter().cloned().collect(),
            kunit: a.pred.kunit.clone(),
            kunitconfig: a.pred.kunitconfig.clone(),
            root: &env.root,
            cache: &cache,
            policy: Policy::from_env()?,
            tree,
            name,
            arch,
            config,
            tests,
            pred,
            plan,
            state_dir,
        };
        // As given, each argument quoted for a shell.
        let flags = crate::util::shell_line(std::env::args().skip(2));
        judge.judge_head(a.good.as_deref(), &flags, &ui::Ui::new())
    }
}
