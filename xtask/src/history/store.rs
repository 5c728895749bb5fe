//! The history database: SQLite (compiled in), one file, a versioned
//! schema (`PRAGMA user_version`) brought up to date by the migrations
//! below when it is opened. Two writers are safe: the journal is WAL, a
//! writer waits for the other (`busy_timeout`), and a run is added in one
//! `BEGIN IMMEDIATE` transaction, so a reader sees all of it or none.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::schema::{Outcome, Run};
use crate::stats::intervals::median_ci;
use crate::stats::location::{median, summarize};

/// Each entry brings the schema from its index to the next version.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their cells, tests and cases, metrics, crashes.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        started TEXT NOT NULL,
        hostname TEXT NOT NULL,
        cpus INTEGER NOT NULL,
        host_kernel TEXT NOT NULL,
        qemu TEXT NOT NULL,
        matrix TEXT NOT NULL,
        source TEXT NOT NULL,
        dir TEXT NOT NULL,
        added TEXT NOT NULL
    );
    CREATE INDEX runs_started ON runs(started);
    CREATE TABLE cells (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        cell TEXT NOT NULL,
        outcome TEXT NOT NULL,
        as_expected INTEGER NOT NULL,
        accel TEXT NOT NULL,
        build_key TEXT NOT NULL,
        boots INTEGER NOT NULL,
        PRIMARY KEY (run, cell)
    );
    CREATE TABLE cases (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        cell TEXT NOT NULL,
        test TEXT NOT NULL,
        name TEXT NOT NULL,
        outcome TEXT NOT NULL,
        PRIMARY KEY (run, cell, test, name)
    );
    CREATE TABLE metrics (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        cell TEXT NOT NULL,
        metric TEXT NOT NULL,
        unit TEXT NOT NULL,
        n INTEGER NOT NULL,
        median REAL,
        ci_lo REAL,
        ci_hi REAL,
        boot_medians TEXT NOT NULL,
        skip TEXT,
        PRIMARY KEY (run, cell, metric)
    );
    CREATE TABLE crashes (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        cell TEXT NOT NULL,
        title TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        PRIMARY KEY (run, cell, fingerprint)
    );",
];

/// The schema version this harness writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;

pub struct Store {
    conn: Connection,
}

/// A stored run, as `history list` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub id: i64,
    pub started: String,
    pub hostname: String,
    pub source: String,
    pub dir: String,
    pub cells: i64,
    pub not_as_expected: i64,
}

/// What `add` did with a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    New(i64),
    /// The run was stored already (same host, start and matrix): its rows
    /// are replaced by the document's (a resumed run grows).
    Replaced(i64),
}

impl Store {
    /// Opens (creating) the database at `path` and migrates it; a file of
    /// a newer schema than this harness knows is refused.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let what = || format!("history database {}", path.display());
        let mut conn = Connection::open(path).with_context(what)?;
        conn.busy_timeout(Duration::from_secs(60))
            .with_context(what)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(what)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .with_context(what)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .with_context(what)?;
        let v: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if v > VERSION {
            bail!(
                "{}: schema version {v}, newer than this harness's {VERSION}: update kmatrix to read it",
                path.display()
            );
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("{}: migrating to schema {}", path.display(), i + 1))?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
        }
        tx.commit().with_context(what)?;
        Ok(Store { conn })
    }

    /// Adds `run` (read from `dir`; `source` names the commit or series
    /// it tested). A run is known by its host, start and matrix: adding
    /// it again replaces its rows, so it stays one run.
    pub fn add(&mut self, run: &Run, dir: &Path, source: &str, now: &str) -> Result<Added> {
        let key = format!("{}/{}/{}", run.host.hostname, run.started, run.matrix);
        let rows = rows_of(run);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let old: Option<i64> = tx
            .query_row("SELECT id FROM runs WHERE key = ?1", [&key], |r| r.get(0))
            .optional()?;
        if let Some(id) = old {
            tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
        }
        tx.execute(
            "INSERT INTO runs (id, key, started, hostname, cpus, host_kernel, qemu, matrix, source, dir, added)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                old,
                key,
                run.started,
                run.host.hostname,
                run.host.cpus as i64,
                run.host.kernel,
                run.host.qemu,
                run.matrix,
                source,
                dir.display().to_string(),
                now
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut cell = tx.prepare(
                "INSERT INTO cells (run, cell, outcome, as_expected, accel, build_key, boots)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for c in &run.cells {
                cell.execute(params![
                    id,
                    c.id,
                    c.outcome.as_str(),
                    c.as_expected,
                    c.accel,
                    c.build_key,
                    c.boots.len().max(1) as i64
                ])?;
            }
            let mut case = tx.prepare(
                "INSERT OR REPLACE INTO cases (run, cell, test, name, outcome) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for r in &rows.cases {
                case.execute(params![id, r.0, r.1, r.2, r.3])?;
            }
            let mut metric = tx.prepare(
                "INSERT OR REPLACE INTO metrics (run, cell, metric, unit, n, median, ci_lo, ci_hi, boot_medians, skip)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for m in &rows.metrics {
                metric.execute(params![
                    id,
                    m.cell,
                    m.metric,
                    m.unit,
                    m.n as i64,
                    m.median,
                    m.ci.map(|c| c.0),
                    m.ci.map(|c| c.1),
                    serde_json::to_string(&m.boot_medians)?,
                    m.skip
                ])?;
            }
            let mut crash = tx.prepare(
                "INSERT OR IGNORE INTO crashes (run, cell, title, fingerprint) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for c in &rows.crashes {
                crash.execute(params![id, c.0, c.1, c.2])?;
            }
        }
        tx.commit()?;
        Ok(match old {
            Some(_) => Added::Replaced(id),
            None => Added::New(id),
        })
    }

    /// Every stored run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        let mut q = self.conn.prepare(
            "SELECT r.id, r.started, r.hostname, r.source, r.dir,
                    (SELECT COUNT(*) FROM cells c WHERE c.run = r.id),
                    (SELECT COUNT(*) FROM cells c WHERE c.run = r.id AND NOT c.as_expected)
             FROM runs r ORDER BY r.started, r.id",
        )?;
        let rows = q.query_map([], |r| {
            Ok(RunRow {
                id: r.get(0)?,
                started: r.get(1)?,
                hostname: r.get(2)?,
                source: r.get(3)?,
                dir: r.get(4)?,
                cells: r.get(5)?,
                not_as_expected: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every stored metric value of the given runs, as (run id, cell,
    /// metric, unit, median, CI).
    pub fn metric_points(&self, first_run: &str) -> Result<Vec<MetricPoint>> {
        let mut q = self.conn.prepare(
            "SELECT m.run, m.cell, m.metric, m.unit, m.median, m.ci_lo, m.ci_hi
             FROM metrics m JOIN runs r ON r.id = m.run
             WHERE r.started >= ?1 AND m.median IS NOT NULL AND m.skip IS NULL",
        )?;
        let rows = q.query_map([first_run], |r| {
            let lo: Option<f64> = r.get(5)?;
            let hi: Option<f64> = r.get(6)?;
            Ok(MetricPoint {
                run: r.get(0)?,
                cell: r.get(1)?,
                metric: r.get(2)?,
                unit: r.get(3)?,
                median: r.get(4)?,
                ci: lo.zip(hi),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every stored case (the test as a whole has the name ""), as (run
    /// id, cell, test, name, outcome).
    pub fn case_points(&self, first_run: &str) -> Result<Vec<CasePoint>> {
        let mut q = self.conn.prepare(
            "SELECT c.run, c.cell, c.test, c.name, c.outcome
             FROM cases c JOIN runs r ON r.id = c.run WHERE r.started >= ?1",
        )?;
        let rows = q.query_map([first_run], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The cells each run ran, as (run id, cell).
    pub fn cell_points(&self, first_run: &str) -> Result<Vec<(i64, String)>> {
        let mut q = self.conn.prepare(
            "SELECT c.run, c.cell FROM cells c JOIN runs r ON r.id = c.run WHERE r.started >= ?1",
        )?;
        let rows = q.query_map([first_run], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every stored crash, as (run id, cell, title, fingerprint).
    pub fn crash_points(&self, first_run: &str) -> Result<Vec<(i64, String, String, String)>> {
        let mut q = self.conn.prepare(
            "SELECT c.run, c.cell, c.title, c.fingerprint
             FROM crashes c JOIN runs r ON r.id = c.run WHERE r.started >= ?1",
        )?;
        let rows = q.query_map([first_run], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// (run id, cell, test, case or "", outcome).
pub type CasePoint = (i64, String, String, String, String);

/// One metric of one cell in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPoint {
    pub run: i64,
    pub cell: String,
    pub metric: String,
    pub unit: String,
    pub median: f64,
    pub ci: Option<(f64, f64)>,
}

struct MetricRow {
    cell: String,
    metric: String,
    unit: String,
    n: usize,
    median: Option<f64>,
    ci: Option<(f64, f64)>,
    boot_medians: Vec<f64>,
    skip: Option<String>,
}

#[derive(Default)]
struct Rows {
    /// (cell, test, case or "", outcome)
    cases: Vec<(String, String, String, &'static str)>,
    metrics: Vec<MetricRow>,
    /// (cell, title, fingerprint)
    crashes: Vec<(String, String, String)>,
}

/// The rows of a run, computed before the transaction (a metric's CI is
/// a bootstrap over its boots).
fn rows_of(run: &Run) -> Rows {
    let mut rows = Rows::default();
    for c in &run.cells {
        for t in &c.tests {
            rows.cases.push((
                c.id.clone(),
                t.name.clone(),
                String::new(),
                t.outcome.as_str(),
            ));
            for k in &t.cases {
                rows.cases.push((
                    c.id.clone(),
                    t.name.clone(),
                    k.name.clone(),
                    k.outcome.as_str(),
                ));
            }
        }
        for m in &c.metrics {
            let x = summarize(&m.samples);
            rows.metrics.push(MetricRow {
                cell: c.id.clone(),
                metric: m.name.clone(),
                unit: m.unit.clone(),
                n: m.samples.len(),
                median: x.as_ref().map(|x| x.median),
                ci: x.as_ref().and_then(|x| median_ci(m, x)),
                boot_medians: m
                    .by_boot()
                    .iter()
                    .filter(|b| !b.is_empty())
                    .map(|b| median(b))
                    .collect(),
                skip: m.skip.clone(),
            });
        }
        for e in &c.evidence {
            if let Some(k) = &e.crash {
                rows.crashes
                    .push((c.id.clone(), k.title.clone(), k.fingerprint.clone()));
            }
        }
    }
    rows
}

/// Whether an outcome counts as a failure in a history.
pub fn failed(outcome: &str) -> bool {
    [
        Outcome::Fail,
        Outcome::Crash,
        Outcome::Timeout,
        Outcome::BuildError,
        Outcome::ApplyError,
        Outcome::ConfigError,
    ]
    .iter()
    .any(|o| o.as_str() == outcome)
}
