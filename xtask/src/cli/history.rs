//! `cargo xtask history add|list|show`: the run history database
//! (`crate::history`). `matrix`, `sweep` and `merge` add their runs
//! themselves (`record`); `add` imports run directories made before, or
//! elsewhere.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use super::Env;
use crate::history::{self, trend, Added, Location, Store};
use crate::report::files::load_run;
use crate::schema::Run;
use crate::stats::changepoint::Params;
use crate::util::shell_quote;

#[derive(Args, Debug)]
pub struct HistoryCmd {
    #[command(subcommand)]
    cmd: HistorySub,
}

#[derive(Subcommand, Debug)]
enum HistorySub {
    /// Add run directories (or results.json files) to the database; a run
    /// added again replaces itself.
    Add {
        #[command(flatten)]
        db: DbOpt,
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<PathBuf>,
        /// What the runs tested, kept with each (default: this checkout's
        /// commit, or $GITHUB_SHA in GitHub Actions).
        #[arg(long)]
        source: Option<String>,
    },
    /// The stored runs, oldest first.
    List {
        #[command(flatten)]
        db: DbOpt,
        #[arg(long)]
        json: bool,
    },
    /// Per metric its change points, per case its state across runs,
    /// crashes by title; exit 1 when the last run brought a regression,
    /// a new failure or a new crash.
    Show {
        #[command(flatten)]
        db: DbOpt,
        /// Cells (glob, repeatable).
        #[arg(long)]
        cell: Vec<String>,
        /// Metrics (glob, repeatable).
        #[arg(long)]
        metric: Vec<String>,
        /// Tests (glob, repeatable).
        #[arg(long)]
        test: Vec<String>,
        /// Only the last N runs.
        #[arg(long, value_name = "N", default_value_t = 0)]
        last: usize,
        /// The history document (docs/history.md) instead of Markdown.
        #[arg(long)]
        json: bool,
        /// Also write the history as one HTML page (a trend per metric).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

/// `--db PATH|URL`: the history database.
#[derive(Args, Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct DbOpt {
    /// History database: a SQLite file (default results/history.sqlite;
    /// for a run, history.sqlite beside its directory) or a PostgreSQL
    /// URL (postgres://USER@HOST:PORT/DB; the password from $PGPASSWORD).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<String>,
}

impl DbOpt {
    fn location(&self, env: &Env) -> Location {
        self.db.as_deref().map_or_else(
            || Location::File(env.root.join("results/history.sqlite")),
            |d| located(d, env),
        )
    }

    /// The database a run in `run_dir` goes to.
    pub fn for_run(&self, env: &Env, run_dir: &Path) -> Location {
        self.db.as_deref().map_or_else(
            || Location::File(history::default_db(run_dir)),
            |d| located(d, env),
        )
    }
}

/// `--db` as a location; a server's user and password, when its URL
/// names none, from libpq's variables (`$PGUSER`, else the login name;
/// `$PGPASSWORD`), so a secret need not be on the command line.
fn located(db: &str, env: &Env) -> Location {
    match Location::parse(db, &env.cwd) {
        Location::Postgres(s) => Location::Postgres(history::Server {
            user: std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .ok(),
            password: std::env::var("PGPASSWORD").ok(),
            ..s
        }),
        file => file,
    }
}

impl HistoryCmd {
    pub fn run(self, env: &Env) -> Result<u8> {
        match self.cmd {
            HistorySub::Add { db, runs, source } => {
                let at = db.location(env);
                let mut store = Store::open(&at)?;
                let source = source.unwrap_or_else(|| source_of(env));
                let mut loaded: Vec<(PathBuf, Run)> = Vec::new();
                // Every run read and checked before the first is added.
                for r in &runs {
                    let p = env.path(r);
                    loaded.push((p.clone(), load_run(&p)?));
                }
                for (p, run) in &loaded {
                    let how = match store
                        .add(run, p, &source, &crate::util::timestamp())
                        .with_context(|| format!("adding {} to {at}", p.display()))?
                    {
                        Added::New(id) => format!("added as run {id}"),
                        Added::Replaced(id) => format!("stored already: run {id} replaced"),
                    };
                    println!("{}: {how}", p.display());
                }
                Ok(0)
            }
            HistorySub::List { db, json } => {
                let at = db.location(env);
                let mut store = open_existing(&at)?;
                let runs = store.runs()?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&runs)?);
                } else {
                    println!("{at}: {} runs", runs.len());
                    for r in &runs {
                        println!(
                            "{:>5}  {}  {:<16} {:<14} {:>3} cells, {} not as expected  {}",
                            r.id,
                            r.started,
                            r.hostname,
                            if r.source.is_empty() { "-" } else { &r.source },
                            r.cells,
                            r.not_as_expected,
                            r.dir
                        );
                    }
                }
                Ok(0)
            }
            HistorySub::Show {
                db,
                cell,
                metric,
                test,
                last,
                json,
                html,
            } => {
                for g in &cell {
                    crate::plan::glob::check(g).map_err(|e| anyhow::anyhow!("--cell {e}"))?;
                }
                let at = db.location(env);
                let mut store = open_existing(&at)?;
                let f = trend::Filter {
                    cell,
                    metric,
                    test,
                    last,
                };
                let h = trend::history(&mut store, &f, &Params::default())?;
                if let Some(file) = html {
                    let file = env.path(&file);
                    crate::host::cache::write_atomic(
                        &file,
                        crate::report::trend::html(&h).as_bytes(),
                    )
                    .with_context(|| format!("writing {}", file.display()))?;
                    eprintln!("history: {}", file.display());
                }
                if json {
                    println!("{}", serde_json::to_string_pretty(&h)?);
                } else {
                    print!("{}", trend::markdown(&h));
                }
                Ok(u8::from(!h.since_last.is_empty()))
            }
        }
    }
}

fn open_existing(at: &Location) -> Result<Store> {
    if !at.exists() {
        bail!(
            "{at}: no history database (a matrix run makes one; `cargo xtask history add --db {} RUN...` imports runs)",
            shell_quote(&at.to_string())
        );
    }
    Store::open(at)
}

/// What a run of this checkout tests: $GITHUB_SHA in GitHub Actions,
/// else the checkout's commit (with `-dirty` for uncommitted changes),
/// else "".
pub fn source_of(env: &Env) -> String {
    if let Ok(sha) = std::env::var("GITHUB_SHA") {
        if !sha.is_empty() {
            return sha.chars().take(12).collect();
        }
    }
    let git = |args: &[&str]| {
        let mut c = std::process::Command::new("git");
        c.arg("-C").arg(&env.root).args(args);
        crate::host::proc::query(c)
            .filter(|f| f.success())
            .map(|f| f.stdout.trim().to_string())
    };
    match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(head) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                head + "-dirty"
            } else {
                head
            }
        }
        None => String::new(),
    }
}

/// Adds a finished run to its history database and says what it brought
/// against the runs before it (its cells, the last 50 runs); a failure is
/// a warning, never the run's (its results are on disk either way).
pub fn record(env: &Env, db: &DbOpt, run: &Run, run_dir: &Path) {
    let at = db.for_run(env, run_dir);
    let added = Store::open(&at).and_then(|mut s| {
        let a = s.add(run, run_dir, &source_of(env), &crate::util::timestamp())?;
        Ok((s, a))
    });
    match added {
        Ok((mut store, a)) => {
            let id = match a {
                Added::New(id) | Added::Replaced(id) => id,
            };
            let f = trend::Filter {
                cell: run.cells.iter().map(|c| glob_literal(&c.id)).collect(),
                last: 50,
                ..Default::default()
            };
            let h = trend::history(&mut store, &f, &Params::default());
            match h {
                Ok(h) if h.runs.len() > 1 => {
                    if h.since_last.is_empty() {
                        println!("history: run {id} in {at}; no regression, new failure or new crash against the runs before it");
                    } else {
                        println!("history: run {id} in {at}; against the runs before it:");
                        for l in &h.since_last {
                            println!("  {l}");
                        }
                    }
                    if let Err(e) = crate::report::files::write_html_with_history(run, run_dir, &h) {
                        eprintln!("warning: the trends across runs are not in the report: {e:#}");
                    }
                }
                _ => println!("history: run {id} in {at}"),
            }
        }
        Err(e) => eprintln!(
            "warning: the run was not added to the history {at}: {e:#} (add it later with `cargo xtask history add --db {} {}`)",
            shell_quote(&at.to_string()),
            shell_quote(&run_dir.display().to_string())
        ),
    }
}

/// A cell id as a glob that matches only itself.
fn glob_literal(id: &str) -> String {
    let mut g = String::new();
    for ch in id.chars() {
        if "*?[]{}\\".contains(ch) {
            g.push('\\');
        }
        g.push(ch);
    }
    g
}
