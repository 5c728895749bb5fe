//! The commands that read finished runs, through the CLI, on real
//! results.json files of real runs (tests/fixtures/runs/: two runs of the
//! default matrix, 4 cells x 3 boots each, and one cell with a kernel
//! splat): merge, compare RUN_A RUN_B, and the reports checked by their
//! consumers: JUnit read back by junitparser, KCIDB validated by kcidb-io,
//! the HTML rendered by headless Chromium.
//!
//! The consumers come from `cargo xtask setup` (chromium from apt;
//! junitparser and kcidb-io in a venv under the cache). A test whose
//! consumer is absent says so and passes, unless CI is set: there setup
//! has run and a missing consumer is a failure.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/runs").join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn xtask(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(args).current_dir(repo());
    // The reports must not depend on the caller being in Actions.
    c.env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("running xtask")
}

/// `got` equals what a real run recorded: strings, counts and verdicts
/// exactly, numbers to 1e-12 relative. The captured runs' comparisons were
/// recorded when Student's t and erfc were computed by hand; statrs and
/// libm agree with those to about 1e-13 (p-values and paired t intervals),
/// and with mpmath to within the same.
#[track_caller]
fn same_as_recorded(got: &Value, recorded: &Value, path: &str) {
    match (got, recorded) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let scale = a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
            assert!(
                (a - b).abs() / scale <= 1e-12,
                "{path}: {a} vs recorded {b}"
            );
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same_as_recorded(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<_>, Vec<_>) = (a.keys().collect(), b.keys().collect());
            assert_eq!(ka, kb, "{path}: fields");
            for (k, x) in a {
                same_as_recorded(x, &b[k], &format!("{path}.{k}"));
            }
        }
        _ => assert_eq!(got, recorded, "{path}"),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn load(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &Value) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// The run with only the cells `keep` says yes to, and no comparisons.
fn subset(run: &Value, keep: impl Fn(&Value) -> bool) -> Value {
    let mut r = run.clone();
    let cells: Vec<Value> = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| keep(c))
        .cloned()
        .collect();
    r["cells"] = Value::Array(cells);
    r["comparisons"] = Value::Array(vec![]);
    r
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The kmatrix cache's tools directory (as host/cache.rs finds the root).
fn tools() -> PathBuf {
    let root = if let Some(p) = std::env::var_os("KMATRIX_CACHE") {
        PathBuf::from(p)
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"))
            .join("kmatrix")
    };
    root.join("tools")
}

/// The venv's python with junitparser and kcidb-io, or None (skipped).
fn venv_python(test: &str) -> Option<PathBuf> {
    let py = tools().join("py/bin/python");
    if py.exists() {
        return Some(py);
    }
    support::missing(test, &py.display().to_string());
    None
}

fn python(py: &Path, script: &str, args: &[&str]) -> Output {
    Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("running python")
}

#[test]
fn merging_a_split_run_gives_back_its_comparisons_exactly() {
    let original = load(&fixture("default-1/results.json"));
    let d = tmp("merge-split");
    // Base cells in one job's results, series cells in another's: every
    // comparison of variants needs both.
    let base = subset(&original, |c| c["variant"] == "base");
    let series = subset(&original, |c| c["variant"] != "base");
    write_json(&d.join("job-base/results.json"), &base);
    write_json(&d.join("job-series/results.json"), &series);
    let out = d.join("merged");
    let o = xtask(
        &[
            "merge",
            "--out",
            s(&out),
            s(&d.join("job-series")),
            s(&d.join("job-base/results.json")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let merged = load(&out.join("results.json"));
    assert_eq!(merged["schema"], original["schema"]);
    // The bootstrap is seeded: the same samples give the same numbers, so
    // the comparisons are compared field by field (see `same_as_recorded`).
    assert_eq!(merged["comparisons"].as_array().unwrap().len(), 12);
    same_as_recorded(
        &merged["comparisons"],
        &original["comparisons"],
        "comparisons",
    );
    // Cells in the matrix's order, which is the order the run wrote them.
    assert_eq!(merged["cells"], original["cells"]);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for c in original["comparisons"].as_array().unwrap() {
        let words = match c["verdict"].as_str().unwrap() {
            "too-noisy" => "too noisy to judge",
            "no-change" => "no significant change",
            other => other,
        };
        let row = format!(
            "| {} {} |",
            c["new_cell"].as_str().unwrap(),
            c["new_metric"].as_str().unwrap()
        );
        assert!(
            summary
                .lines()
                // The verdict leads the last column ("too noisy to judge"
                // goes on with the boots' spread).
                .any(|l| l.starts_with(&row)
                    && l.rsplit('|')
                        .nth(1)
                        .is_some_and(|v| v.trim().starts_with(words))),
            "no row {row} ... {words} in\n{summary}"
        );
    }
    for f in ["junit.xml", "report.html", "kcidb.json"] {
        assert!(out.join(f).exists(), "{f} not written by merge");
    }
}

#[test]
fn merge_refuses_conflicts_other_schemas_and_unreadable_files() {
    let original = load(&fixture("default-1/results.json"));
    let d = tmp("merge-refusals");
    let a = d.join("a/results.json");
    write_json(&a, &original);
    // The same cell with other content.
    let mut b = subset(&original, |c| c["id"] == "6.1/base/x86_64/tiny");
    b["cells"][0]["outcome"] = "crash".into();
    let bp = d.join("b/results.json");
    write_json(&bp, &b);
    let o = xtask(&["merge", "--out", s(&d.join("o1")), s(&a), s(&bp)], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cell 6.1/base/x86_64/tiny") && err.contains(s(&a)) && err.contains(s(&bp)),
        "{err}"
    );
    assert!(!d.join("o1/results.json").exists());
    // The same cell with the same content is no conflict.
    let same = subset(&original, |c| c["id"] == "6.1/base/x86_64/tiny");
    let sp = d.join("same/results.json");
    write_json(&sp, &same);
    let o = xtask(&["merge", "--out", s(&d.join("o2")), s(&a), s(&sp)], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        load(&d.join("o2/results.json"))["cells"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    // Another schema.
    let mut old = same.clone();
    old["schema"] = 1.into();
    let op = d.join("old/results.json");
    write_json(&op, &old);
    let o = xtask(&["merge", "--out", s(&d.join("o3")), s(&a), s(&op)], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{} has results.json schema 1", op.display())),
        "{err}"
    );
    // Unreadable: missing, and not JSON.
    let missing = d.join("nowhere");
    let o = xtask(
        &["merge", "--out", s(&d.join("o4")), s(&a), s(&missing)],
        &[],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot read results file {}", missing.display())),
        "{err}"
    );
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\"schema\": 2, \"cells\": [").unwrap();
    let o = xtask(&["merge", "--out", s(&d.join("o5")), s(&junk)], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(s(&junk)), "{err}");
}

#[test]
fn compare_two_runs_cell_by_cell_and_one_run_as_before() {
    let d = tmp("compare-runs");
    let out = d.join("cmp.json");
    let o = xtask(
        &[
            "compare",
            s(&fixture("default-1")),
            s(&fixture("default-2")),
            "--out",
            s(&out),
        ],
        &[],
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let doc = load(&out);
    let cs = doc["comparisons"].as_array().unwrap();
    // Base cells measure 3 metrics (sync is skipped there), series cells 6.
    assert_eq!(cs.len(), 3 + 3 + 6 + 6, "{doc}");
    let b = load(&fixture("default-2/results.json"));
    for c in cs {
        assert_eq!(c["base_cell"], c["new_cell"]);
        assert_eq!(c["base_metric"], c["new_metric"]);
        assert_eq!(c["kind"], "variants");
        // Run B's own samples give the new side's median.
        let cell = b["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == c["new_cell"])
            .unwrap();
        let m = cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == c["new_metric"])
            .unwrap();
        assert_eq!(c["n_new"], m["samples"].as_array().unwrap().len());
        assert!(stdout.contains(&format!(
            "| {} {} | {} |",
            c["new_cell"].as_str().unwrap(),
            c["new_metric"].as_str().unwrap(),
            c["base_cell"].as_str().unwrap()
        )));
    }
    assert!(out.with_extension("md").exists());
    // A run against itself: no change anywhere.
    let o = xtask(
        &[
            "compare",
            s(&fixture("default-1")),
            s(&fixture("default-1")),
            "--out",
            s(&d.join("self.json")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0));
    for c in load(&d.join("self.json"))["comparisons"]
        .as_array()
        .unwrap()
    {
        assert_eq!(c["pct_change"], 0.0, "{c}");
        assert_ne!(c["verdict"], "improved");
        assert_ne!(c["verdict"], "regressed");
    }
    // One run: recomputes its own comparisons in place, as before.
    let one = d.join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::copy(fixture("default-1/results.json"), one.join("results.json")).unwrap();
    let o = xtask(&["compare", s(&one)], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    same_as_recorded(
        &load(&one.join("results.json"))["comparisons"],
        &load(&fixture("default-1/results.json"))["comparisons"],
        "comparisons",
    );
    assert!(text(&o.stdout).contains("## Comparisons"));
}

const JUNIT_SUMMARY: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error, Skipped
out = []
for suite in JUnitXml.fromfile(sys.argv[1]):
    cases = []
    for case in suite:
        res = [{"kind": type(r).__name__, "message": r.message, "type": r.type, "text": r.text} for r in case.result]
        cases.append({"name": case.name, "classname": case.classname, "result": res})
    out.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                "errors": suite.errors, "skipped": suite.skipped, "cases": cases})
print(json.dumps(out))
"#;

#[test]
fn junit_is_read_back_by_junitparser() {
    let Some(py) = venv_python("junit_is_read_back_by_junitparser") else {
        return;
    };
    let d = tmp("junit");
    for run in ["default-1", "splat"] {
        let f = d.join(format!("{run}.xml"));
        let o = xtask(&["report", s(&fixture(run)), "--junit", s(&f)], &[]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let o = python(&py, JUNIT_SUMMARY, &[s(&f)]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let suites: Value = serde_json::from_slice(&o.stdout).unwrap();
        let results = load(&fixture(run).join("results.json"));
        let cells = results["cells"].as_array().unwrap();
        assert_eq!(suites.as_array().unwrap().len(), cells.len());
        for (suite, cell) in suites.as_array().unwrap().iter().zip(cells) {
            assert_eq!(suite["name"], cell["id"]);
            // One testcase per case, or per test without cases.
            let expected: usize = cell["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["cases"].as_array().unwrap().len().max(1))
                .sum();
            assert_eq!(suite["tests"], expected, "{}", cell["id"]);
            let count = |outcome: &str| {
                cell["tests"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|t| {
                        let cs = t["cases"].as_array().unwrap();
                        if cs.is_empty() {
                            vec![t["outcome"].clone()]
                        } else {
                            cs.iter().map(|c| c["outcome"].clone()).collect()
                        }
                    })
                    .filter(|o| o == outcome)
                    .count()
            };
            assert_eq!(suite["failures"], count("fail"), "{}", cell["id"]);
            assert_eq!(suite["skipped"], count("skip"), "{}", cell["id"]);
            assert_eq!(suite["errors"], 0);
        }
    }
    // The splat: the failing test carries the kernel's reason, the console
    // log as evidence, and is typed as not expected.
    let o = python(&py, JUNIT_SUMMARY, &[s(&d.join("splat.xml"))]);
    let suites: Value = serde_json::from_slice(&o.stdout).unwrap();
    let splat = suites[0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "splat")
        .unwrap();
    let r = &splat["result"][0];
    assert_eq!(r["kind"], "Failure");
    assert_eq!(r["type"], "fail");
    assert!(r["message"]
        .as_str()
        .unwrap()
        .contains("BUG: sleeping function called from invalid context"));
    assert!(r["text"]
        .as_str()
        .unwrap()
        .contains("evidence: /tmp/run-splat2/cells/6.1__splat__x86_64__tiny/console.log"));
    // The base cells' expected failure is a failure typed expected-fail.
    let o = python(&py, JUNIT_SUMMARY, &[s(&d.join("default-1.xml"))]);
    let suites: Value = serde_json::from_slice(&o.stdout).unwrap();
    let case = suites[0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "global.user_notification_sync")
        .unwrap();
    assert_eq!(case["classname"], "6.1/base/x86_64/tiny.seccomp_bpf");
    assert_eq!(case["result"][0]["type"], "expected-fail");
}

const KCIDB_VALIDATE: &str = r#"
import json, sys, kcidb_io
data = json.load(open(sys.argv[1]))
try:
    kcidb_io.schema.LATEST.validate(data)
    print("valid", kcidb_io.schema.LATEST)
except Exception as e:
    print("invalid", type(e).__name__, str(e).splitlines()[0])
    sys.exit(1)
"#;

#[test]
fn kcidb_json_is_valid_for_kcidb_io_and_carries_the_patchset() {
    let Some(py) = venv_python("kcidb_json_is_valid_for_kcidb_io_and_carries_the_patchset") else {
        return;
    };
    let d = tmp("kcidb");
    for (run, matrix) in [
        ("default-1", "matrix.toml"),
        ("splat", "tests/faults/faults.toml"),
    ] {
        let f = d.join(format!("{run}.json"));
        let o = xtask(
            &[
                "report",
                s(&fixture(run)),
                "--kcidb",
                s(&f),
                "--matrix",
                matrix,
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let o = python(&py, KCIDB_VALIDATE, &[s(&f)]);
        assert!(
            o.status.success(),
            "{run}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        assert!(
            text(&o.stdout).starts_with("valid v5."),
            "{}",
            text(&o.stdout)
        );
    }
    // Every outcome maps to a status the schema accepts: the splat cell
    // as each of the other outcomes (a build error has no tests).
    let splat = load(&fixture("splat/results.json"));
    let mut variants = Vec::new();
    for outcome in [
        "pass",
        "crash",
        "timeout",
        "infra-error",
        "build-error",
        "apply-error",
        "config-error",
        "flaky",
        "skip",
    ] {
        let mut r = splat.clone();
        r["cells"][0]["outcome"] = outcome.into();
        r["cells"][0]["tests"][0]["outcome"] = outcome.into();
        if outcome.ends_with("-error") && outcome != "infra-error" {
            r["cells"][0]["tests"] = Value::Array(vec![]);
        }
        variants.push((format!("as-{outcome}"), r));
    }
    // A crash report on the splat (its title as analyze::crash gives it
    // for this excerpt): an issue and an incident the schema accepts.
    let mut r = splat.clone();
    r["cells"][0]["evidence"][0]["crash"] = serde_json::json!({
        "title": "BUG: sleeping function called from invalid context in __x64_sys_prctl",
        "frames": ["__x64_sys_prctl"],
        "fingerprint": "0123456789abcdef",
    });
    variants.push(("with-crash".into(), r));
    for (name, r) in &variants {
        let dir = d.join(name);
        write_json(&dir.join("results.json"), r);
        let f = dir.join("kcidb.json");
        let o = xtask(
            &[
                "report",
                s(&dir),
                "--kcidb",
                s(&f),
                "--matrix",
                "tests/faults/faults.toml",
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let o = python(&py, KCIDB_VALIDATE, &[s(&f)]);
        assert!(o.status.success(), "{name}: {}", text(&o.stdout));
    }
    let f = d.join("with-crash/kcidb.json");
    let doc = load(&f);
    assert_eq!(
        doc["issues"][0]["report_subject"],
        "BUG: sleeping function called from invalid context in __x64_sys_prctl"
    );
    assert_eq!(
        doc["incidents"][0]["issue_id"],
        "kmatrix:crash-0123456789abcdef"
    );
    assert_eq!(doc["incidents"][0]["present"], true);
    let doc = load(&d.join("default-1.json"));
    assert!(doc.get("issues").is_none(), "no crash, no issue");
    // The series' checkout: KCIDB's patchset hash, as its schema defines it.
    let want = Command::new("sh")
        .arg("-c")
        .arg("cd kernels/series/seccomp-sync-wakeup && sha256sum $(cat series) | cut -c-64 | sha256sum | cut -c-64")
        .current_dir(repo())
        .output()
        .unwrap();
    let want = text(&want.stdout).trim().to_string();
    assert_eq!(want.len(), 64);
    let series = doc["checkouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["misc"]["variant"] == "seccomp-sync-wakeup")
        .unwrap();
    assert_eq!(series["patchset_hash"], want.as_str());
    assert_eq!(series["patchset_files"].as_array().unwrap().len(), 6);
    // Metrics are DONE with the median; sync mode on base is SKIP.
    let tests = doc["tests"].as_array().unwrap();
    let metric = |build: &str, name: &str| {
        tests
            .iter()
            .find(|t| {
                t["path"] == format!("metric.{name}")
                    && t["build_id"].as_str().unwrap().ends_with(build)
            })
            .unwrap_or_else(|| panic!("no {name} on {build}"))
            .clone()
    };
    let t = metric(
        "/6.1/seccomp-sync-wakeup/x86_64/tiny",
        "seccomp_notify.sync.unpinned",
    );
    assert_eq!(t["status"], "DONE");
    assert!(
        (t["number"]["value"].as_f64().unwrap() - 82.136).abs() < 0.001,
        "{t}"
    );
    assert_eq!(t["misc"]["comparisons"][0]["verdict"], "improved");
    assert_eq!(
        metric("/6.1/base/x86_64/tiny", "seccomp_notify.sync.unpinned")["status"],
        "SKIP"
    );
    // The validator is not a rubber stamp: a bad status is refused.
    let mut bad = doc.clone();
    bad["tests"][0]["status"] = "BROKEN".into();
    let bp = d.join("bad.json");
    write_json(&bp, &bad);
    let o = python(&py, KCIDB_VALIDATE, &[s(&bp)]);
    assert!(!o.status.success(), "{}", text(&o.stdout));
}

#[test]
fn html_renders_in_chromium_with_every_verdict_and_sample() {
    let chromium = ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(chromium) = chromium else {
        support::missing(
            "html_renders_in_chromium_with_every_verdict_and_sample",
            "chromium (on PATH)",
        );
        return;
    };
    let d = tmp("html");
    let f = d.join("report.html");
    let o = xtask(&["report", s(&fixture("default-1")), "--html", s(&f)], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&f).unwrap();
    // Self-contained: nothing to fetch (the only URL is the SVG namespace).
    for bad in ["src=", "href=", "<link", "<script", "url(", "@import"] {
        assert!(!html.contains(bad), "the report has {bad}");
    }
    assert_eq!(
        html.matches("http").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    let url = format!("file://{}", f.display());
    let headless = |extra: &[&str]| {
        Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", d.join("profile").display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("running chromium")
    };
    let o = headless(&["--dump-dom"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dom = text(&o.stdout);
    // The rendered text, tags stripped.
    let mut rendered = String::new();
    let mut in_tag = false;
    for ch in dom.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                rendered.push(' ');
            }
            c if !in_tag => rendered.push(c),
            _ => {}
        }
    }
    let run = load(&fixture("default-1/results.json"));
    for c in run["comparisons"].as_array().unwrap() {
        let words = match c["verdict"].as_str().unwrap() {
            "too-noisy" => "too noisy to judge",
            "no-change" => "no significant change",
            other => other,
        };
        assert!(rendered.contains(words), "{words} not rendered");
    }
    for c in run["cells"].as_array().unwrap() {
        assert!(rendered.contains(c["id"].as_str().unwrap()));
    }
    // Every sample of every measured metric is a dot in the rendered DOM.
    let samples: usize = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["metrics"].as_array().unwrap())
        .map(|m| m["samples"].as_array().unwrap().len())
        .sum();
    assert!(samples > 1000);
    assert_eq!(
        dom.matches("<circle").count(),
        samples + run["comparisons"].as_array().unwrap().len()
    );
    // A screenshot to look at (target/tmp/html/report.png).
    let png = d.join("report.png");
    let shot = format!("--screenshot={}", png.display());
    let o = headless(&[&shot, "--window-size=1400,3000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::metadata(&png).unwrap().len() > 50_000);
}

#[test]
fn github_actions_get_the_summary_and_annotations() {
    let d = tmp("gha");
    let summary = d.join("step-summary.md");
    let o = xtask(
        &[
            "merge",
            "--out",
            s(&d.join("merged")),
            "--matrix",
            "tests/faults/faults.toml",
            s(&fixture("splat")),
        ],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", s(&summary)),
        ],
    );
    // The splat cell is not as expected: exit 1, as `matrix` would.
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("MISMATCH 6.1/splat/x86_64/tiny splat: fail"));
    let out = text(&o.stdout);
    assert!(
        out.contains("\n::group::6.1/splat/x86_64/tiny (fail): not as expected\n"),
        "{out}"
    );
    assert!(out.contains("\n::endgroup::\n"));
    assert!(
        out.contains("\n::error title=kmatrix 6.1/splat/x86_64/tiny fail::6.1/splat/x86_64/tiny splat: fail (kernel Bug"),
        "{out}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("# kmatrix run 20261130-"), "{md}");
    assert!(md.contains("## Not as expected"));
    // Outside Actions: neither.
    let o = xtask(
        &[
            "merge",
            "--out",
            s(&d.join("merged2")),
            "--matrix",
            "tests/faults/faults.toml",
            s(&fixture("splat")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!text(&o.stdout).contains("::group::"));
}

/// Every file under `d` (relative names), sorted.
fn listing(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![d.to_path_buf()];
    while let Some(x) = todo.pop() {
        for e in std::fs::read_dir(&x).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p.strip_prefix(d).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// Documents each reading command must refuse, with the JSON path its
/// refusal names: a boot size that overflows (it used to panic every
/// reader), a cell twice, an id that is not its cell's, boot sizes that
/// do not add up, a sample that is not a number (with line:column).
#[test]
fn every_reader_refuses_a_bad_results_json_naming_the_file_and_the_place() {
    let original = load(&fixture("default-1/results.json"));
    let d = tmp("refusals");
    let mut cases: Vec<(&str, Value, &str)> = Vec::new();
    let mut v = original.clone();
    v["cells"][0]["metrics"][3]["boot_sizes"] = serde_json::json!([u64::MAX, 218]);
    cases.push(("overflow", v, ": cells[0].metrics[3].boot_sizes: "));
    let mut v = original.clone();
    let again = v["cells"][0].clone();
    v["cells"].as_array_mut().unwrap().push(again);
    cases.push((
        "twice",
        v,
        ": cells[4].id: 6.1/base/x86_64/tiny is also the id of cells[0]",
    ));
    let mut v = original.clone();
    v["cells"][2]["arch"] = "arm64".into();
    cases.push(("id", v, ": cells[2].id: "));
    let mut v = original.clone();
    v["cells"][1]["metrics"][4]["boot_sizes"] = serde_json::json!([1, 2]);
    cases.push((
        "sizes",
        v,
        ": cells[1].metrics[4].boot_sizes: the boot sizes add up to 3",
    ));
    let mut v = original.clone();
    v["cells"][1]["metrics"][4]["samples"][5] = Value::Null;
    cases.push((
        "null",
        v,
        ": not a results.json: cells[1].metrics[4].samples[5]: invalid type: null",
    ));
    let m = fixture("default-2");
    let (out, cmp) = (d.join("out"), d.join("cmp.json"));
    for (name, doc, place) in &cases {
        let dir = d.join(name);
        let f = dir.join("results.json");
        write_json(&f, doc);
        let before = listing(&d);
        let runs = [
            vec!["report", s(&dir)],
            vec!["merge", "--out", s(&out), s(&dir)],
            vec!["compare", s(&m), s(&dir), "--out", s(&cmp)],
            vec!["aa-rate", s(&dir)],
        ];
        for args in &runs {
            let o = xtask(args, &[]);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {err}");
            assert!(!err.contains("panicked"), "{name} {args:?}: {err}");
            assert!(
                err.contains(&format!("{}", f.display())),
                "{name} {args:?}: {err}"
            );
            assert!(err.contains(place), "{name} {args:?}: {err}");
            assert_eq!(listing(&d), before, "{name} {args:?} wrote something");
        }
    }
    // line:column where serde stopped.
    let o = xtask(&["report", s(&d.join("null"))], &[]);
    assert!(
        text(&o.stderr).contains(&format!("{}:", d.join("null/results.json").display())),
        "{}",
        text(&o.stderr)
    );
}

/// `aa-rate --twin base` would compare the base with itself: refused,
/// naming the flag.
#[test]
fn aa_rate_refuses_the_base_as_its_own_twin() {
    let o = xtask(&["aa-rate", "--twin", "base", s(&fixture("aa-1"))], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--twin base: the twin is what is compared with the base"),
        "{err}"
    );
    assert!(text(&o.stdout).is_empty(), "{}", text(&o.stdout));
}

/// Samples the statistics cannot compare give a `cannot-compare` verdict
/// with its reason, in results.json and every report, and never a NaN,
/// an infinity or a null where a number belongs: a series whose samples
/// are all 0, samples of 1e308 (their mean overflows), a boot without
/// samples.
#[test]
fn degenerate_samples_cannot_be_compared_and_say_why() {
    let original = load(&fixture("default-1/results.json"));
    let d = tmp("cannot-compare");
    let bad = regex::Regex::new(r"\b(NaN|inf)\b").unwrap();
    let each_sample = |f: &dyn Fn(&mut Value)| {
        let mut v = original.clone();
        for c in v["cells"].as_array_mut().unwrap() {
            for m in c["metrics"].as_array_mut().unwrap() {
                f(m);
            }
        }
        v
    };
    let mut zeros = original.clone();
    for c in zeros["cells"].as_array_mut().unwrap() {
        if c["variant"] != "base" {
            for m in c["metrics"].as_array_mut().unwrap() {
                let n = m["samples"].as_array().unwrap().len();
                m["samples"] = serde_json::json!(vec![0.0; n]);
            }
        }
    }
    let huge = each_sample(&|m| {
        let n = m["samples"].as_array().unwrap().len();
        m["samples"] = serde_json::json!(vec![1e308; n]);
    });
    let empty_boot = each_sample(&|m| {
        if let Some(sizes) = m.get_mut("boot_sizes").and_then(Value::as_array_mut) {
            sizes.insert(0, 0.into());
        }
    });
    for (name, doc, why) in [
        ("zeros", zeros, "of boot 1 of the new side is 0"),
        ("huge", huge, "the base's mean overflows"),
        (
            "empty-boot",
            empty_boot,
            "boot 1 of the base has no samples",
        ),
    ] {
        let input = d.join(name).join("in");
        write_json(&input.join("results.json"), &doc);
        let out = d.join(name).join("out");
        let o = xtask(&["merge", "--out", s(&out), s(&input)], &[]);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{name}: {}",
            text(&o.stderr)
        );
        let merged = load(&out.join("results.json"));
        let cs = merged["comparisons"].as_array().unwrap();
        let cannot: Vec<&Value> = cs
            .iter()
            .filter(|c| c["verdict"] == "cannot-compare")
            .collect();
        assert!(!cannot.is_empty(), "{name}: {merged}");
        assert!(
            cannot
                .iter()
                .any(|c| c["reason"].as_str().unwrap().contains(why)),
            "{name}: {merged}"
        );
        for c in &cannot {
            assert!(!c["reason"].as_str().unwrap().is_empty(), "{name}: {c}");
            for k in ["pct_change", "ci95_lo", "ci95_hi", "p_value"] {
                assert!(c.get(k).is_none(), "{name}: {k} in {c}");
            }
        }
        for c in cs {
            for (k, v) in c.as_object().unwrap() {
                assert!(!v.is_null(), "{name}: {k} is null in {c}");
            }
        }
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(summary.contains("cannot compare: "), "{name}");
        assert!(text(&o.stdout).contains(why), "{name}");
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        assert!(
            html.contains("cannot compare</span> <span class=\"meta\">"),
            "{name}"
        );
        let kcidb = load(&out.join("kcidb.json"));
        let verdicts: Vec<&Value> = kcidb["tests"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["misc"]["comparisons"].as_array().into_iter().flatten())
            .collect();
        assert!(
            verdicts
                .iter()
                .any(|v| v["verdict"] == "cannot-compare" && v["reason"].is_string()),
            "{name}"
        );
        for t in kcidb["tests"].as_array().unwrap() {
            if let Some(n) = t.get("number") {
                assert!(n["value"].is_number(), "{name}: {t}");
            }
        }
        for (file, body) in [
            ("summary.md", summary),
            ("report.html", html),
            ("stdout", text(&o.stdout)),
        ] {
            assert!(
                !bad.is_match(&body),
                "{name}: {:?} in {file}",
                bad.find(&body)
            );
        }
        // The merged run reads back, and its report renders the same way.
        let o = xtask(
            &[
                "report",
                s(&out),
                "--html",
                s(&d.join(name).join("again.html")),
            ],
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o.stderr));
    }
}

/// `report` checks every target's directory before it writes any, and
/// writes them all or none; `compare RUN_A RUN_B` too.
#[test]
fn report_and_compare_write_all_their_files_or_none() {
    let d = tmp("all-or-nothing");
    let a = d.join("a.xml");
    let missing = d.join("missing/b.html");
    let o = xtask(
        &[
            "report",
            s(&fixture("default-1")),
            "--junit",
            s(&a),
            "--html",
            s(&missing),
        ],
        &[],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("no directory {}", d.join("missing").display())),
        "{err}"
    );
    assert_eq!(listing(&d), Vec::<String>::new());
    let o = xtask(
        &[
            "compare",
            s(&fixture("default-1")),
            s(&fixture("default-2")),
            "--out",
            s(&missing.with_extension("json")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(listing(&d), Vec::<String>::new());
    // A good call writes all three and leaves no temporary file.
    let o = xtask(
        &[
            "report",
            s(&fixture("default-1")),
            "--junit",
            s(&a),
            "--html",
            s(&d.join("b.html")),
            "--kcidb",
            s(&d.join("c.json")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(listing(&d), ["a.xml", "b.html", "c.json"]);
}

/// `merge --out DIR` does not replace the run DIR holds unless told to.
#[test]
fn merge_over_an_existing_run_needs_force() {
    let d = tmp("merge-force");
    let out = d.join("out");
    let o = xtask(&["merge", "--out", s(&out), s(&fixture("splat"))], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let first = std::fs::read(out.join("results.json")).unwrap();
    let o = xtask(&["merge", "--out", s(&out), s(&fixture("default-1"))], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already holds a run") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), first);
    let o = xtask(
        &[
            "merge",
            "--force",
            "--out",
            s(&out),
            s(&fixture("default-1")),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        load(&out.join("results.json"))["cells"],
        load(&fixture("default-1/results.json"))["cells"]
    );
    assert_eq!(
        listing(&out),
        [
            "junit.xml",
            "kcidb.json",
            "report.html",
            "results.json",
            "summary.md"
        ]
    );
}

/// default-1 with every boot's samples repeated `k` times (each copy a
/// little apart, boot sizes to match): a run as large as one wants, to
/// check that reading it stays bounded. (`k` = 600 gives the 50 MB run
/// the timings in docs/commands.md were taken on.)
fn enlarged(k: usize) -> Value {
    let mut v = load(&fixture("default-1/results.json"));
    for c in v["cells"].as_array_mut().unwrap() {
        for m in c["metrics"].as_array_mut().unwrap() {
            let samples: Vec<f64> = m["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let sizes: Vec<usize> = match m["boot_sizes"].as_array() {
                Some(b) => b.iter().map(|x| x.as_u64().unwrap() as usize).collect(),
                None => vec![samples.len()],
            };
            let (mut out, mut new_sizes, mut at) = (Vec::new(), Vec::new(), 0);
            for n in sizes {
                let boot = &samples[at..at + n];
                at += n;
                for copy in 0..k {
                    for (i, x) in boot.iter().enumerate() {
                        let wobble = ((i * 7919 + copy * 104_729) % 201) as f64 - 100.0;
                        out.push(x * (1.0 + 0.005 * wobble / 100.0));
                    }
                }
                new_sizes.push(n * k);
            }
            m["samples"] = serde_json::json!(out);
            if m.get("boot_sizes").is_some() {
                m["boot_sizes"] = serde_json::json!(new_sizes);
            }
        }
    }
    v["comparisons"] = Value::Array(vec![]);
    v
}

/// A run of tens of thousands of samples a metric: report.html draws at
/// most a few thousand dots a metric and says so, and Ctrl-C (SIGINT)
/// stops compare, merge and report within a few seconds with exit 2,
/// leaving nothing behind.
#[test]
fn a_large_run_is_drawn_thinned_and_ctrl_c_stops_its_readers() {
    let d = tmp("large");
    let big = d.join("big");
    let doc = enlarged(20);
    write_json(&big.join("results.json"), &doc);
    let html = d.join("report.html");
    let o = xtask(&["report", s(&big), "--html", s(&html)], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("is drawn thinned"));
    // 217 samples x 20 in the first cell's metrics: every 3rd drawn.
    assert!(page.contains("1 in 3 drawn)"), "{}", page.len());
    // At most 2000 a metric of a cell (and a boot's remainder each).
    let lanes = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["metrics"].as_array().unwrap())
        .filter(|m| !m["samples"].as_array().unwrap().is_empty())
        .count();
    let dots = page.matches("<circle").count();
    assert!(
        dots <= lanes * 2010 && dots > lanes * 1000,
        "{dots} dots, {lanes} lanes"
    );
    std::fs::remove_file(&html).unwrap();
    // Six times larger: no command is done before the signal reaches it.
    std::fs::remove_dir_all(&big).unwrap();
    write_json(&big.join("results.json"), &enlarged(120));
    let before = listing(&d);
    let (cmp, merged) = (d.join("cmp.json"), d.join("merged"));
    for args in [
        vec!["compare", s(&big), s(&big), "--out", s(&cmp)],
        vec!["merge", "--out", s(&merged), s(&big)],
        vec!["report", s(&big), "--html", s(&html)],
    ] {
        let child = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .current_dir(repo())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // SIGINT, as Ctrl-C sends it, once the command catches it (before,
        // it would kill the process rather than ask it to stop).
        catches_sigint(child.id());
        let t = std::time::Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        let took = t.elapsed();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("interrupted"), "{args:?}: {err}");
        assert!(took.as_secs_f64() < 5.0, "{args:?} took {took:?} to stop");
        assert_eq!(listing(&d), before, "{args:?} left files");
    }
}

/// Waits until process `pid` has its SIGINT handler in place (bit 1 of
/// SigCgt in /proc/PID/status), at most a minute.
fn catches_sigint(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let caught = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or(0);
        if caught & (1 << (nix::sys::signal::Signal::SIGINT as u64 - 1)) != 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} never caught SIGINT:\n{status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
