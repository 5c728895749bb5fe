//! The run history through the CLI, on a real SQLite file: histories made
//! from a real run of the default matrix (tests/fixtures/runs/default-1:
//! 4 cells x 3 boots, 24 metrics, 204 cases), each copy moved by a
//! run-to-run drift like this host's, with a step and a failing case
//! planted at known runs; adding twice, two writers at once, a database
//! of a newer schema refused.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("history")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn xtask(args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(args).current_dir(repo()).env_remove("GITHUB_SHA");
    c.output().expect("running xtask")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A normal draw from a fixed stream (Box-Muller over SplitMix64), so
/// every history is the same on every machine.
struct Draw(u64);

impl Draw {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// What is planted in a synthetic history.
struct Plant<'a> {
    /// (cell, metric, first run 1-based, factor)
    step: Option<(&'a str, &'a str, usize, f64)>,
    /// (cell, test, case, first run 1-based)
    failing: Option<(&'a str, &'a str, &'a str, usize)>,
}

/// `runs` copies of the captured run in `dir`/run-NN/results.json. Each
/// run moves every metric by a factor exp(N(0, 5%) for the run + N(0, 5%)
/// for the metric): two real runs of the default matrix on this host, 8
/// minutes apart, differed by +8% on average over their 18 shared
/// metrics with a spread of 4.9%.
fn synthetic(dir: &Path, runs: usize, seed: u64, plant: &Plant) -> Vec<PathBuf> {
    let base: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/runs/default-1/results.json"))
            .unwrap(),
    )
    .unwrap();
    let mut draw = Draw(seed);
    let mut out = Vec::new();
    for i in 1..=runs {
        let mut r = base.clone();
        r["started"] = Value::from(format!("20261201-{:02}{:02}00", i / 60, i % 60));
        let shared = 0.05 * draw.normal();
        for c in r["cells"].as_array_mut().unwrap() {
            let id = c["id"].as_str().unwrap().to_string();
            for m in c["metrics"].as_array_mut().unwrap() {
                let name = m["name"].as_str().unwrap().to_string();
                let mut f = (shared + 0.05 * draw.normal()).exp();
                if let Some((pc, pm, from, by)) = plant.step {
                    if pc == id && pm == name && i >= from {
                        f *= by;
                    }
                }
                for s in m["samples"].as_array_mut().unwrap() {
                    *s = Value::from(s.as_f64().unwrap() * f);
                }
            }
            if let Some((pc, pt, pk, from)) = plant.failing {
                if pc == id && i >= from {
                    for t in c["tests"].as_array_mut().unwrap() {
                        if t["name"] == pt {
                            for k in t["cases"].as_array_mut().unwrap() {
                                if k["name"] == pk {
                                    k["outcome"] = Value::from("fail");
                                }
                            }
                        }
                    }
                }
            }
        }
        let d = dir.join(format!("run-{i:02}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("results.json"), serde_json::to_string(&r).unwrap()).unwrap();
        out.push(d);
    }
    out
}

/// `history add --db DB RUNS...` (DB a file or a URL).
fn add(db: impl AsRef<OsStr>, runs: &[PathBuf]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(["history", "add", "--db"])
        .arg(db)
        .args(["--source", "synthetic"])
        .args(runs)
        .current_dir(repo())
        .env_remove("GITHUB_SHA");
    c.output().expect("running xtask")
}

/// `history add` started, not waited for: one of two writers at once.
fn spawn_add(db: impl AsRef<OsStr>, runs: &[PathBuf]) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(["history", "add", "--db"])
        .arg(db)
        .args(runs)
        .current_dir(repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.spawn().unwrap()
}

fn show(db: impl AsRef<OsStr>) -> (Output, Value) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(["history", "show", "--json", "--db"])
        .arg(db)
        .current_dir(repo());
    let o = c.output().expect("running xtask");
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o, v)
}

/// Every change point as (cell, metric, run).
fn changes(h: &Value) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for m in h["metrics"].as_array().unwrap() {
        for c in m["changes"].as_array().unwrap() {
            out.push((
                m["cell"].as_str().unwrap().to_string(),
                m["metric"].as_str().unwrap().to_string(),
                c["run"].as_u64().unwrap(),
            ));
        }
    }
    out
}

const CELL: &str = "6.1/seccomp-sync-wakeup/x86_64/tiny";
const METRIC: &str = "seccomp_notify.sync.cross-cpu";
const CASE: &str = "global.user_notification_sync";

#[test]
fn a_planted_step_and_a_planted_failure_are_found_at_their_runs_and_nothing_else() {
    let d = tmp("planted");
    let runs = synthetic(
        &d,
        30,
        7,
        &Plant {
            step: Some((CELL, METRIC, 18, 1.25)),
            failing: Some((CELL, "seccomp_bpf", CASE, 23)),
        },
    );
    let db = d.join("h.sqlite");
    let o = add(&db, &runs);
    assert!(o.status.success(), "{}", text(&o));
    let (o, h) = show(&db);
    // The failure began at run 23, not at the last run: no gate.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(h["runs"].as_array().unwrap().len(), 30);
    // The base cells' sync metrics are skipped (no sync mode there).
    assert_eq!(h["metrics"].as_array().unwrap().len(), 18);
    assert_eq!(
        changes(&h),
        vec![(CELL.to_string(), METRIC.to_string(), 18)]
    );
    let step = &h["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == METRIC && m["cell"] == CELL)
        .unwrap()["changes"][0];
    let pct = step["pct"].as_f64().unwrap();
    assert!((15.0..35.0).contains(&pct), "{step}");
    // The cases: the planted regression, and the base's expected failures
    // (the series' own cases, failing in every run).
    let mut news = Vec::new();
    for c in h["cases"].as_array().unwrap() {
        if c["state"] == "persistent-failure" {
            assert!(c["cell"].as_str().unwrap().contains("/base/"), "{c}");
        } else {
            news.push((
                c["cell"].clone(),
                c["case"].clone(),
                c["state"].clone(),
                c["since"].clone(),
            ));
        }
    }
    assert_eq!(
        news,
        vec![(
            Value::from(CELL),
            Value::from(CASE),
            Value::from("regression"),
            Value::from(23)
        )]
    );
    // The text says the same.
    let o = xtask(&["history", "show", "--db", &db.display().to_string()]);
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains(&format!(
            "| {CELL} | {METRIC} | 18 (20261201-001800) | synthetic |"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| regression | {CELL} | seccomp_bpf/{CASE} | 23 |"
        )),
        "{md}"
    );
    // The page: a trend per metric, the one that changed first and marked,
    // nothing fetched.
    let page = d.join("history.html");
    let o = xtask(&[
        "history",
        "show",
        "--db",
        &db.display().to_string(),
        "--html",
        &page.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 18);
    let first = html.find("<h3>").unwrap();
    assert!(
        html[first..].starts_with(&format!("<h3>{CELL} <code>{METRIC}</code>")),
        "{}",
        &html[first..first + 200]
    );
    assert_eq!(html.matches("class=\"t-cp-label\"").count(), 1);
    assert!(!html.contains("src=") && !html.contains("href="));
}

#[test]
fn histories_with_nothing_planted_raise_few_false_alarms() {
    let d = tmp("null");
    let mut alarms = 0;
    let mut series = 0;
    for k in 0..20u64 {
        let hd = d.join(format!("h{k:02}"));
        let runs = synthetic(
            &hd,
            30,
            1000 + k,
            &Plant {
                step: None,
                failing: None,
            },
        );
        let db = hd.join("h.sqlite");
        let o = add(&db, &runs);
        assert!(o.status.success(), "{}", text(&o));
        let (o, h) = show(&db);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        series += h["metrics"].as_array().unwrap().len();
        let c = changes(&h);
        println!("history {k}: {} change points {c:?}", c.len());
        alarms += c.len();
        let moving: Vec<&Value> = h["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] != "persistent-failure")
            .collect();
        assert!(moving.is_empty(), "{moving:?}");
    }
    println!(
        "false alarms: {alarms} change points in {series} metric histories of 30 runs with nothing planted ({:.2}%)",
        100.0 * alarms as f64 / series as f64
    );
    assert_eq!(series, 360);
    // At a 1% level per history, 4.8 expected: more than 15 is not chance.
    assert!(alarms <= 15, "{alarms} false alarms in {series}");
}

#[test]
fn a_run_added_twice_is_one_run_and_two_writers_both_land() {
    let d = tmp("twice");
    let runs = synthetic(
        &d,
        6,
        3,
        &Plant {
            step: None,
            failing: None,
        },
    );
    let db = d.join("h.sqlite");
    let o = add(&db, &runs[..1]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("added as run 1"),
        "{}",
        text(&o)
    );
    let o = add(&db, &runs[..1]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("stored already: run 1 replaced"),
        "{}",
        text(&o)
    );
    // Two processes at once, each with its own runs.
    let a = spawn_add(&db, &runs[1..4]);
    let b = spawn_add(&db, &runs[3..6]);
    for p in [a, b] {
        let o = p.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = xtask(&[
        "history",
        "list",
        "--db",
        &db.display().to_string(),
        "--json",
    ]);
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let dirs: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dir"].as_str().unwrap())
        .collect();
    assert_eq!(dirs.len(), 6, "{dirs:?}");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(dirs[i], r.display().to_string());
    }
}

#[test]
fn a_new_failure_in_the_last_run_fails_the_gate_and_bad_databases_are_refused() {
    let d = tmp("gate");
    let runs = synthetic(
        &d,
        8,
        11,
        &Plant {
            step: None,
            failing: Some((CELL, "seccomp_bpf", CASE, 8)),
        },
    );
    let db = d.join("h.sqlite");
    assert!(add(&db, &runs).status.success());
    let o = xtask(&["history", "show", "--db", &db.display().to_string()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains(&format!("- {CELL} seccomp_bpf/{CASE}: regression in run 8")),
        "{md}"
    );
    // No database: refused, naming it and how to make one.
    let none = d.join("none.sqlite");
    let o = xtask(&["history", "show", "--db", &none.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no history database"),
        "{}",
        text(&o)
    );
    assert!(!none.exists());
    // A schema from a newer harness: refused, not rewritten.
    let newer = d.join("newer.sqlite");
    let ok = Command::new("python3")
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version=99'); c.commit()"])
        .arg(&newer)
        .status()
        .unwrap();
    assert!(ok.success());
    let o = xtask(&["history", "list", "--db", &newer.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("schema version 99, newer than this harness's 1"),
        "{}",
        text(&o)
    );
}

/// A PostgreSQL server of the test's own on loopback (Debian's
/// `postgresql` package, which `cargo xtask setup` installs): a cluster
/// made by initdb in a directory of its own, started by pg_ctl on a free
/// port, stopped and removed when dropped. As root, the server runs as
/// the package's `postgres` user (PostgreSQL refuses to run as root).
struct Server {
    bin: PathBuf,
    data: PathBuf,
    as_postgres: bool,
    url: String,
}

impl Server {
    /// The newest installed server's programs; None (or, under CI=true, a
    /// failure naming the set-up) when there is none.
    fn start(name: &str) -> Option<Server> {
        let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
            .unwrap_or_default();
        bins.retain(|b| b.join("initdb").exists());
        bins.sort_by_key(|b| {
            b.parent()
                .and_then(|v| v.file_name())
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<u32>().ok())
        });
        let Some(bin) = bins.pop() else {
            let why = "no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb): `cargo xtask setup` installs Debian's postgresql";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
            eprintln!("skipped: {why}");
            return None;
        };
        let as_postgres = nix::unistd::geteuid().is_root();
        // Outside the checkout: as root, the server's user must reach it.
        let data = std::env::temp_dir().join(format!("kmatrix-pg-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Server {
            url: format!("postgres://kmatrix@127.0.0.1:{port}/postgres"),
            bin,
            data,
            as_postgres,
        };
        if as_postgres {
            let ok = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&server.data)
                .status()
                .unwrap();
            assert!(ok.success(), "chown postgres {}", server.data.display());
        }
        let cluster = server.data.join("cluster");
        let o = server
            .run("initdb")
            .arg("-D")
            .arg(&cluster)
            .args([
                "-U",
                "kmatrix",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "initdb: {}", text(&o));
        let o = server
            .run("pg_ctl")
            .arg("-D")
            .arg(&cluster)
            .arg("-l")
            .arg(server.data.join("log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!(
                "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off",
                server.data.display()
            ))
            .arg("start")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "pg_ctl start: {}\nlog:\n{}",
            text(&o),
            std::fs::read_to_string(server.data.join("log")).unwrap_or_default()
        );
        Some(server)
    }

    /// One of the server's programs, as its user.
    fn run(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    /// One SQL statement through the server's own client.
    fn psql(&self, sql: &str) -> String {
        let o = self
            .run("psql")
            .args([
                "-X",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.url,
                "-c",
                sql,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "psql {sql}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self
            .run("pg_ctl")
            .arg("-D")
            .arg(self.data.join("cluster"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

#[test]
fn postgres_holds_the_same_history_as_sqlite_and_is_as_safe() {
    let Some(pg) = Server::start("same") else {
        return;
    };
    let d = tmp("postgres");
    let runs = synthetic(
        &d,
        12,
        5,
        &Plant {
            step: Some((CELL, METRIC, 7, 0.7)),
            failing: Some((CELL, "seccomp_bpf", CASE, 12)),
        },
    );
    let file = d.join("h.sqlite");
    // The first runs twice (one writer after the other), the rest from
    // two writers at once, each with its own runs.
    for db in [file.as_os_str(), OsStr::new(&pg.url)] {
        let o = add(db, &runs[..4]);
        assert!(o.status.success(), "{}", text(&o));
        let o = add(db, &runs[..2]);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("stored already: run 1 replaced"),
            "{}",
            text(&o)
        );
        let a = spawn_add(db, &runs[4..9]);
        let b = spawn_add(db, &runs[8..12]);
        for p in [a, b] {
            let o = p.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", text(&o));
        }
    }
    assert_eq!(pg.psql("SELECT count(*) FROM runs"), "12");
    // The same document from both, the planted step and failure in it.
    let (o_file, h_file) = show(&file);
    let (o_pg, h_pg) = show(&pg.url);
    assert_eq!(
        h_pg["runs"].as_array().map(Vec::len),
        Some(12),
        "{}",
        text(&o_pg)
    );
    assert_eq!(o_file.status.code(), Some(1), "{}", text(&o_file));
    assert_eq!(o_pg.status.code(), Some(1), "{}", text(&o_pg));
    assert!(
        changes(&h_pg).contains(&(CELL.to_string(), METRIC.to_string(), 7)),
        "{:?}",
        changes(&h_pg)
    );
    // Run ids follow the order the two writers happened to take turns.
    let no_ids = |mut h: Value| {
        for r in h["runs"].as_array_mut().unwrap() {
            r["id"] = Value::Null;
        }
        h
    };
    assert_eq!(
        no_ids(h_file),
        no_ids(h_pg),
        "SQLite and PostgreSQL disagree"
    );
    let o = xtask(&["history", "list", "--db", &pg.url]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{}: 12 runs", pg.url)),
        "{}",
        text(&o)
    );
    // A schema from a newer harness: refused, not rewritten.
    pg.psql("UPDATE kmatrix_schema SET version = 99");
    let o = xtask(&["history", "list", "--db", &pg.url]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("schema version 99, newer than this harness's 1"),
        "{}",
        text(&o)
    );
    // A server that refuses: the error names it, never its password.
    let bad = pg
        .url
        .replace("kmatrix@", "kmatrix:s3cr3t@")
        .replace("/postgres", "/nosuchdb");
    let o = xtask(&["history", "list", "--db", &bad]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("kmatrix:***@127.0.0.1"), "{}", text(&o));
    assert!(err.contains("nosuchdb"), "{}", text(&o));
    assert!(!err.contains("s3cr3t"), "{}", text(&o));
}

#[test]
fn a_run_report_closes_with_its_cells_trends_across_the_history() {
    let d = tmp("report");
    let runs = synthetic(
        &d,
        20,
        9,
        &Plant {
            step: Some((CELL, METRIC, 11, 0.7)),
            failing: None,
        },
    );
    let db = d.join("h.sqlite");
    assert!(add(&db, &runs[..19]).status.success());
    // The 20th run arrives as CI's merge of its job's results.
    let out = d.join("merged");
    let o = xtask(&[
        "merge",
        "--db",
        &db.display().to_string(),
        "--out",
        &out.display().to_string(),
        &runs[19].display().to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("history: run 20 in ",),
        "{}",
        text(&o)
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let across = page
        .split("<h2>Across runs</h2>")
        .nth(1)
        .unwrap_or_else(|| panic!("no Across runs section:\n{page}"));
    assert!(
        across.contains("This run and the 19 before it in its history (since 20261201-000100)"),
        "{across}"
    );
    // The planted step, shown (not folded) with its run; the 18 metrics
    // with a median (of default-1's 24), each a plot; the only change
    // point is the planted one.
    let (shown, folded) = across.split_once("<details>").unwrap();
    assert!(shown.contains("1 of 18 metrics changed level"), "{shown}");
    assert!(shown.contains(&format!("<code>{METRIC}</code>")), "{shown}");
    assert!(shown.contains(" · run 11: -"), "{shown}");
    assert!(
        folded.contains("17 metrics without a change point"),
        "{folded}"
    );
    assert_eq!(across.matches("<svg").count(), 18);
    // Nothing fetched: no script, stylesheet, image or frame source.
    for tag in [" src=", "<link", "<script", "@import"] {
        assert!(!page.contains(tag), "the page fetches something ({tag})");
    }
}
