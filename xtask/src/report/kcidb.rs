//! KCIDB JSON (the KernelCI database's submission schema, v5.3 as
//! `kcidb-io` 141 validates it) of a run. Pure: a `Run` and the patch sets
//! in, a JSON value out.
//!
//! Mapping: one checkout per kernel/variant (the series as `patchset_files`
//! and `patchset_hash`; base has none), one build per cell, and tests per
//! cell: `boot` (did the kernel boot and run its tests), one per test, one
//! per case (`test.case`), and one per metric with status `DONE`, the
//! median as `number` and the samples, CI and comparison verdicts in
//! `misc`. A skipped metric is `SKIP`. Each crash title (by fingerprint)
//! is an issue (`kmatrix:crash-FINGERPRINT`, the title its report
//! subject, the kernel its culprit), with an incident per cell's boot: it
//! was seen there (`present`), or, in a cell of the same kernel, arch and
//! config that booted, it was not (so a series' new crash reads as present
//! on the series and absent on its base).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::schema::{CellResult, Comparison, Outcome, Run};
use crate::stats::intervals::MedianCis;
use crate::stats::location::summarize;

pub const ORIGIN: &str = "kmatrix";

/// A series as KCIDB names it: patch files (name, URL) in order and the hash.
#[derive(Debug, Clone, Default)]
pub struct Patchset {
    pub files: Vec<(String, String)>,
    pub hash: String,
}

/// KCIDB's patchset hash: sha256 over the newline-terminated hex sha256 of
/// each patch, in order (`sha256sum *.patch | cut -c-64 | sha256sum`).
pub fn patchset_hash(patches: &[&[u8]]) -> String {
    if patches.is_empty() {
        return String::new();
    }
    let mut outer = Sha256::new();
    for p in patches {
        outer.update(format!("{:x}\n", Sha256::digest(p)));
    }
    format!("{:x}", outer.finalize())
}

/// `20261130-172344` (results.json's `started`) as RFC 3339.
pub fn rfc3339(started: &str) -> Option<String> {
    let b = started.as_bytes();
    if b.len() != 15
        || b[8] != b'-'
        || !started
            .chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let s = |a: usize, z: usize| &started[a..z];
    Some(format!(
        "{}-{}-{}T{}:{}:{}+00:00",
        s(0, 4),
        s(4, 6),
        s(6, 8),
        s(9, 11),
        s(11, 13),
        s(13, 15)
    ))
}

/// A KCIDB test path component: `[a-zA-Z0-9_-]+`, anything else becomes `_`.
fn component(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

/// A dotted path whose components are each made valid.
fn path(parts: &[&str]) -> String {
    parts
        .iter()
        .flat_map(|p| p.split('.'))
        .map(component)
        .collect::<Vec<_>>()
        .join(".")
}

fn status(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass | Outcome::Flaky => "PASS",
        Outcome::Fail | Outcome::Crash => "FAIL",
        Outcome::Skip => "SKIP",
        Outcome::Timeout => "ERROR",
        Outcome::InfraError => "MISS",
        Outcome::BuildError | Outcome::ApplyError | Outcome::ConfigError => "MISS",
    }
}

fn file_url(p: &std::path::Path) -> String {
    format!("file://{}", p.display()).replace(' ', "%20")
}

fn build_status(c: &CellResult) -> &'static str {
    match c.outcome {
        Outcome::BuildError | Outcome::ConfigError => "FAIL",
        Outcome::ApplyError => "MISS",
        _ => "PASS",
    }
}

fn boot_status(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass | Outcome::Fail | Outcome::Flaky | Outcome::Skip => "PASS",
        Outcome::Crash => "FAIL",
        Outcome::Timeout => "ERROR",
        _ => "MISS",
    }
}

/// The comparisons of a cell's metric; a figure that is not a number (of
/// a `cannot-compare` one) is left out, its reason given.
fn verdicts(cs: &[&Comparison], metric: &str) -> Vec<Value> {
    cs.iter()
        .filter(|c| c.new_metric == metric)
        .map(|c| {
            let mut v = json!({
                "kind": c.kind.as_str(),
                "base_cell": c.base_cell,
                "base_metric": c.base_metric,
                "p_test": c.p_test,
                "verdict": c.verdict.as_str(),
                "split": c.split,
            });
            if c.pct_change.is_finite() {
                v["pct_change"] = json!(c.pct_change);
            }
            if c.ci95_lo.is_finite() && c.ci95_hi.is_finite() {
                v["ci95"] = json!([c.ci95_lo, c.ci95_hi]);
            }
            if c.p_value.is_finite() {
                v["p_value"] = json!(c.p_value);
            }
            if let Some(r) = &c.reason {
                v["reason"] = json!(r);
            }
            v
        })
        .collect()
}

fn test(
    id: &str,
    build_id: &str,
    path: String,
    status: &str,
    start: &Option<String>,
) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("id".into(), json!(format!("{id}:{path}")));
    t.insert("build_id".into(), json!(build_id));
    t.insert("origin".into(), json!(ORIGIN));
    t.insert("path".into(), json!(path));
    t.insert("status".into(), json!(status));
    if let Some(s) = start {
        t.insert("start_time".into(), json!(s));
    }
    t
}

/// The KCIDB document. `patchsets` maps a variant (series name) to its
/// patch set; a variant without one (base) has an empty patch set.
/// `cis` gives the metrics' median CIs (and gives up on them when the
/// caller is interrupted).
pub fn kcidb(run: &Run, patchsets: &BTreeMap<String, Patchset>, cis: &MedianCis) -> Value {
    let start = rfc3339(&run.started);
    let run_id = format!("{ORIGIN}:{}", run.started);
    let mut checkouts: Vec<Value> = Vec::new();
    let mut builds = Vec::new();
    let mut tests = Vec::new();
    let mut compared: BTreeMap<&str, Vec<&Comparison>> = BTreeMap::new();
    for c in &run.comparisons {
        compared.entry(c.new_cell.as_str()).or_default().push(c);
    }
    let mut seen = std::collections::HashSet::new();
    for c in &run.cells {
        let checkout_id = format!("{run_id}/{}/{}", c.kernel, c.variant);
        if seen.insert(checkout_id.clone()) {
            let ps = patchsets.get(&c.variant).cloned().unwrap_or_default();
            checkouts.push(checkout(run, c, &checkout_id, &ps, &start));
        }
        let build_id = format!("{run_id}/{}", c.id);
        builds.push(build(c, &build_id, &checkout_id, &start));
        if matches!(
            c.outcome,
            Outcome::BuildError | Outcome::ApplyError | Outcome::ConfigError
        ) {
            continue;
        }
        let env = json!({
            "comment": format!("QEMU {} ({}), host {}", c.accel, c.arch, run.host.hostname),
            "misc": {"accel": c.accel, "accel_reason": c.accel_reason, "kvm_given_up": c.kvm_given_up, "qemu": run.host.qemu},
        });
        tests.push(boot_test(c, &build_id, &env, &start));
        test_results(c, &build_id, &env, &start, &mut tests);
        let cs = compared.get(c.id.as_str()).map_or(&[][..], Vec::as_slice);
        let t = Tested {
            build_id: &build_id,
            env: &env,
            start: &start,
        };
        metric_tests(c, cs, &t, cis, &mut tests);
    }
    let (issues, incidents) = crash_issues(run, &run_id);
    let mut doc = json!({
        "version": {"major": 5, "minor": 3},
        "checkouts": checkouts,
        "builds": builds,
        "tests": tests,
    });
    if !issues.is_empty() {
        doc["issues"] = Value::Array(issues);
        doc["incidents"] = Value::Array(incidents);
    }
    doc
}

/// A crash's issue: the same id for the same fingerprint in every run.
fn issue_id(fingerprint: &str) -> String {
    format!("{ORIGIN}:crash-{fingerprint}")
}

/// A crash, and the cells that showed it (each with whether matrix.toml
/// lists the crash as known there).
type Shown<'a> = (&'a crate::schema::Crash, Vec<(&'a CellResult, bool)>);

/// One issue per crash fingerprint of the run, and its incidents: present
/// in each cell whose boots showed it, absent in each other cell of the
/// same kernel, arch and config whose kernel booted.
fn crash_issues(run: &Run, run_id: &str) -> (Vec<Value>, Vec<Value>) {
    let booted = |c: &CellResult| {
        !matches!(
            c.outcome,
            Outcome::BuildError | Outcome::ApplyError | Outcome::ConfigError | Outcome::InfraError
        )
    };
    let group = |c: &CellResult| (c.kernel.clone(), c.arch.clone(), c.config.clone());
    let mut seen: BTreeMap<&str, Shown> = BTreeMap::new();
    for c in &run.cells {
        let known = c
            .evidence
            .iter()
            .any(|e| e.kind == crate::schema::EvidenceKind::Known);
        for k in c.evidence.iter().filter_map(|e| e.crash.as_deref()) {
            let e = seen
                .entry(k.fingerprint.as_str())
                .or_insert((k, Vec::new()));
            if !e.1.iter().any(|(x, _)| x.id == c.id) {
                e.1.push((c, known));
            }
        }
    }
    let mut issues = Vec::new();
    let mut incidents = Vec::new();
    for (print, (k, cells)) in &seen {
        let id = issue_id(print);
        issues.push(json!({
            "id": id,
            "version": 1,
            "origin": ORIGIN,
            "report_subject": k.title,
            "culprit": {"code": true, "tool": false, "harness": false},
            "comment": if k.frames.is_empty() { k.title.clone() } else { format!("{} (frames: {})", k.title, k.frames.join(" < ")) },
            "misc": {"fingerprint": print, "frames": k.frames},
        }));
        let groups: Vec<_> = cells.iter().map(|(c, _)| group(c)).collect();
        for c in &run.cells {
            let here = cells.iter().find(|(x, _)| x.id == c.id);
            if here.is_none() && !(booted(c) && groups.contains(&group(c))) {
                continue;
            }
            let build_id = format!("{run_id}/{}", c.id);
            let mut x = json!({
                "id": format!("{build_id}/crash-{print}"),
                "origin": ORIGIN,
                "issue_id": id,
                "issue_version": 1,
                "build_id": build_id,
                "test_id": format!("{build_id}:boot"),
                "present": here.is_some(),
                "misc": {"cell": c.id},
            });
            if let Some((_, known)) = here {
                x["comment"] = json!(if *known {
                    format!("{} (known: matrix.toml lists it)", k.title)
                } else {
                    k.title.clone()
                });
            }
            incidents.push(x);
        }
    }
    (issues, incidents)
}

/// The checkout of a cell's kernel and variant: the series as its patch set.
fn checkout(run: &Run, c: &CellResult, id: &str, ps: &Patchset, start: &Option<String>) -> Value {
    let mut co = json!({
        "id": id,
        "origin": ORIGIN,
        "tree_name": c.kernel,
        "patchset_files": ps.files.iter().map(|(n, u)| json!({"name": n, "url": u})).collect::<Vec<_>>(),
        "patchset_hash": ps.hash,
        "comment": format!("kernel {} with {}", c.kernel, if c.variant == "base" { "no series".to_string() } else { format!("series {}", c.variant) }),
        "valid": c.outcome != Outcome::ApplyError,
        "misc": {"variant": c.variant, "matrix": run.matrix},
    });
    if let Some(s) = start {
        co["start_time"] = json!(s);
    }
    // A series fetched from the list: the message that brought it.
    if let Some(o) = run
        .origins
        .iter()
        .find(|o| c.variant == o.series || c.variant.starts_with(&format!("{}@", o.series)))
    {
        co["message_id"] = json!(format!("<{}>", o.message_id));
        co["misc"]["lore"] = json!({"archive": o.archive, "b4": o.b4});
    }
    co
}

/// A cell's build: config and build time, the make command and log.
fn build(c: &CellResult, id: &str, checkout_id: &str, start: &Option<String>) -> Value {
    let mut b = json!({
        "id": id,
        "checkout_id": checkout_id,
        "origin": ORIGIN,
        "architecture": c.arch,
        "config_name": c.config,
        "status": build_status(c),
        "duration": c.timings.config_s + c.timings.build_s,
        "misc": {
            "cell": c.id,
            "build_key": c.build_key,
            "build_cached": c.timings.build_cached,
            "build_incremental": c.timings.build_incremental,
        },
    });
    if !c.reproduce.make.is_empty() {
        b["command"] = json!(c.reproduce.make.join(" && "));
    }
    if let Some(p) = &c.logs.build {
        b["log_url"] = json!(file_url(p));
    }
    if let Some(s) = start {
        b["start_time"] = json!(s);
    }
    b
}

/// `boot`: did the kernel boot and run its tests.
fn boot_test(c: &CellResult, build_id: &str, env: &Value, start: &Option<String>) -> Value {
    let mut boot = test(
        build_id,
        build_id,
        "boot".into(),
        boot_status(c.outcome),
        start,
    );
    boot.insert("environment".into(), env.clone());
    boot.insert("duration".into(), json!(c.timings.boot_s));
    boot.insert(
        "misc".into(),
        json!({"outcome": c.outcome.as_str(), "as_expected": c.as_expected, "mismatches": c.mismatches}),
    );
    if let Some(e) = c.evidence.first() {
        boot.insert(
            "log_excerpt".into(),
            json!(e.excerpt.chars().take(16 * 1024).collect::<String>()),
        );
    }
    if let Some(p) = &c.logs.console {
        boot.insert("log_url".into(), json!(file_url(p)));
    }
    Value::Object(boot)
}

/// One test per test the cell ran, and one per case of it.
fn test_results(
    c: &CellResult,
    build_id: &str,
    env: &Value,
    start: &Option<String>,
    tests: &mut Vec<Value>,
) {
    for t in &c.tests {
        let mut x = test(
            build_id,
            build_id,
            path(&[&t.name]),
            status(t.outcome),
            start,
        );
        x.insert("environment".into(), env.clone());
        if let Some(d) = t.duration_s {
            x.insert("duration".into(), json!(d.max(0.0)));
        }
        if let Some(r) = &t.reason {
            x.insert("comment".into(), json!(r));
        }
        x.insert("misc".into(), json!({"outcome": t.outcome.as_str()}));
        tests.push(Value::Object(x));
        for k in &t.cases {
            let mut x = test(
                build_id,
                build_id,
                path(&[&t.name, &k.name]),
                status(k.outcome),
                start,
            );
            x.insert("environment".into(), env.clone());
            if let Some(r) = &k.reason {
                x.insert("comment".into(), json!(r));
            }
            x.insert(
                "misc".into(),
                json!({"outcome": k.outcome.as_str(), "name": k.name}),
            );
            tests.push(Value::Object(x));
        }
    }
}

/// Where a cell's tests are reported from: its build, environment and
/// start.
struct Tested<'a> {
    build_id: &'a str,
    env: &'a Value,
    start: &'a Option<String>,
}

/// One test per metric: `DONE` with the median as its number and the
/// samples, CI and verdicts (`compared`: the cell's comparisons) in
/// `misc`, or `SKIP` with the reason. A figure that is not a finite number
/// is left out rather than written as null.
fn metric_tests(
    c: &CellResult,
    compared: &[&Comparison],
    t: &Tested,
    cis: &MedianCis,
    tests: &mut Vec<Value>,
) {
    let Tested {
        build_id,
        env,
        start,
    } = *t;
    for m in &c.metrics {
        let p = path(&["metric", &m.name]);
        if let Some(why) = &m.skip {
            let mut x = test(build_id, build_id, p, "SKIP", start);
            x.insert("comment".into(), json!(why));
            tests.push(Value::Object(x));
            continue;
        }
        let Some(s) = summarize(&m.samples) else {
            continue;
        };
        let ci = cis
            .get(m, &s)
            .filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
        let mut x = test(build_id, build_id, p, "DONE", start);
        x.insert("environment".into(), env.clone());
        if s.median.is_finite() {
            let mut number = json!({"value": s.median});
            if !m.unit.is_empty() {
                number["unit"] = json!(m.unit);
            }
            x.insert("number".into(), number);
        }
        let mut misc = json!({
            "metric": m.name,
            "n": s.n,
            "median_ci95": ci.map(|(lo, hi)| [lo, hi]),
            "target_ci_pct": m.target_ci_pct,
            "boot_sizes": m.boot_sizes,
            "samples": m.samples,
            "comparisons": verdicts(compared, &m.name),
        });
        if s.cv.is_finite() {
            misc["cv"] = json!(s.cv);
        }
        x.insert("misc".into(), misc);
        tests.push(Value::Object(x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A series fetched with --lore: its checkouts carry the message id
    /// (KCIDB's `message_id`, with its angle brackets) and b4's version;
    /// the base's do not.
    #[test]
    fn a_series_from_the_list_names_its_message() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/runs/default-1/results.json"
        ))
        .unwrap();
        let mut run = Run::parse(&text).unwrap();
        run.origins.push(crate::schema::SeriesOrigin {
            series: "seccomp-sync-wakeup".into(),
            message_id: "20230308073201.3102738-1-avagin@google.com".into(),
            archive: "https://lore.kernel.org/all".into(),
            b4: "0.16.0".into(),
        });
        let never = || false;
        let doc = kcidb(
            &run,
            &BTreeMap::new(),
            &crate::stats::intervals::MedianCis::new(&never),
        );
        let checkouts = doc["checkouts"].as_array().unwrap();
        let (series, base): (Vec<&Value>, Vec<&Value>) = checkouts
            .iter()
            .partition(|c| c["misc"]["variant"] == "seccomp-sync-wakeup");
        assert!(!series.is_empty() && !base.is_empty());
        for c in series {
            assert_eq!(
                c["message_id"],
                "<20230308073201.3102738-1-avagin@google.com>"
            );
            assert_eq!(c["misc"]["lore"]["b4"], "0.16.0");
        }
        for c in base {
            assert!(c.get("message_id").is_none(), "{c}");
        }
    }

    /// A crash seen on the series' x86_64 cell: one issue, present there,
    /// absent on the base of the same kernel, arch and config, and not
    /// said of the arm64 cells at all.
    #[test]
    fn a_crash_is_an_issue_present_on_the_series_and_absent_on_its_base() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/runs/default-1/results.json"
        ))
        .unwrap();
        let mut run = Run::parse(&text).unwrap();
        let cell = "6.1/seccomp-sync-wakeup/x86_64/tiny";
        let mut e = crate::schema::Evidence::new(
            crate::schema::EvidenceKind::Splat,
            "BUG",
            "BUG: kernel NULL pointer dereference, address: 0000000000000000",
            None,
        );
        e.crash = Some(Box::new(crate::schema::Crash {
            title: "BUG: kernel NULL pointer dereference in __x64_sys_prctl".into(),
            frames: vec!["__x64_sys_prctl".into()],
            fingerprint: "5eb1c0de5eb1c0de".into(),
        }));
        let c = run.cells.iter_mut().find(|c| c.id == cell).unwrap();
        c.evidence.push(e.clone());
        c.evidence.push(e);
        let never = || false;
        let doc = kcidb(
            &run,
            &BTreeMap::new(),
            &crate::stats::intervals::MedianCis::new(&never),
        );
        let issues = doc["issues"].as_array().unwrap();
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0]["id"], "kmatrix:crash-5eb1c0de5eb1c0de");
        assert_eq!(
            issues[0]["report_subject"],
            "BUG: kernel NULL pointer dereference in __x64_sys_prctl"
        );
        assert_eq!(issues[0]["culprit"]["code"], true);
        let seen: Vec<(&str, bool, &str)> = doc["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["misc"]["cell"].as_str().unwrap(),
                    i["present"].as_bool().unwrap(),
                    i["test_id"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    "6.1/base/x86_64/tiny",
                    false,
                    "kmatrix:20261130-172344/6.1/base/x86_64/tiny:boot"
                ),
                (
                    cell,
                    true,
                    "kmatrix:20261130-172344/6.1/seccomp-sync-wakeup/x86_64/tiny:boot"
                ),
            ]
        );
        // Each incident's test is one the document holds.
        for i in doc["incidents"].as_array().unwrap() {
            assert!(doc["tests"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["id"] == i["test_id"]));
        }
        // A cell whose boot ended as the harness's error still says the
        // crash it showed.
        run.cells.iter_mut().find(|c| c.id == cell).unwrap().outcome = Outcome::InfraError;
        let doc = kcidb(
            &run,
            &BTreeMap::new(),
            &crate::stats::intervals::MedianCis::new(&never),
        );
        let present: Vec<&str> = doc["incidents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["present"] == true)
            .map(|i| i["misc"]["cell"].as_str().unwrap())
            .collect();
        assert_eq!(present, vec![cell]);
    }

    /// The schema's own recipe, run by hand on two one-byte patches:
    /// `sha256sum a.patch b.patch | cut -c-64 | sha256sum | cut -c-64`.
    #[test]
    fn patchset_hash_is_the_hash_of_the_hash_lines() {
        assert_eq!(
            patchset_hash(&[b"a", b"b"]),
            "bf75fafab8e46555836b92f1b04106b795a9ed36bd39b351f103b28819895f33"
        );
        assert_eq!(patchset_hash(&[]), "");
    }

    #[test]
    fn paths_and_times_fit_the_schema_patterns() {
        assert_eq!(
            path(&["seccomp_bpf", "global.user notif/x"]),
            "seccomp_bpf.global.user_notif_x"
        );
        assert_eq!(path(&["t", ""]), "t._");
        assert_eq!(
            rfc3339("20261130-172344").as_deref(),
            Some("2026-11-30T17:23:44+00:00")
        );
        assert_eq!(rfc3339("t"), None);
    }
}
