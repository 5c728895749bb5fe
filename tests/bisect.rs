//! Bisect on real kernels: a series with known culprits
//! (tests/bisect/culprit: the seccomp series, then 7 patches of which #8
//! stops advertising SECCOMP_RET_LOG, #9 does not build, #10 fixes it and
//! #12 adds a 1 ms busy wait to every user notification). Bisect must name
//! #8 for the selftest case and #12 for the benchmark, going around #9,
//! and `git bisect run` with `bisect-step` must name the same commit on a
//! git tree of the same patches.
//!
//! Through the CLI and the reports only. Steps of one bisect share images
//! with the others by content, so after the first test most are cached.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn matrix() -> String {
    root()
        .join("tests/bisect/matrix.toml")
        .display()
        .to_string()
}

/// `xtask bisect ... --out DIR`: (exit code, bisect.json, bisect.md).
fn bisect(name: &str, args: &[&str]) -> (i32, Value, String) {
    let out = out_dir(name);
    let st = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bisect", "--matrix", &matrix(), "--arch", "x86_64", "--out"])
        .arg(&out)
        .args(args)
        .current_dir(root())
        .status()
        .expect("running xtask bisect");
    let state = std::fs::read_to_string(out.join("bisect.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    let md = std::fs::read_to_string(out.join("bisect.md")).unwrap_or_default();
    (
        st.code().unwrap_or(-1),
        serde_json::from_str(&state).unwrap(),
        md,
    )
}

fn steps(state: &Value) -> Vec<(u64, String, String)> {
    state["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["prefix"].as_u64().unwrap(),
                s["judgement"].as_str().unwrap().to_string(),
                s["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Steps must stay within ceil(log2 n) + 2, plus one per skipped step.
fn check_step_count(state: &Value) {
    let s = steps(state);
    let skips = s.iter().filter(|(_, j, _)| j == "skip").count();
    let expected = state["expected_steps"].as_u64().unwrap() as usize;
    assert!(
        s.len() <= expected + skips,
        "{} steps, expected at most {expected} + {skips} skipped: {s:?}",
        s.len()
    );
    // The ends come first.
    assert_eq!(s[0].0, 0);
    assert_eq!(s[1].0, state["patches"].as_array().unwrap().len() as u64);
}

#[test]
fn bisect_names_the_patch_that_fails_a_case_and_goes_around_one_that_does_not_build() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, state, md) = bisect(
        "bisect-case",
        &[
            "--series",
            "tests/bisect/culprit",
            "--test",
            "seccomp_bpf",
            "--case",
            "global.get_action_avail",
        ],
    );
    assert_eq!(code, 0, "{md}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 8, "{md}");
    assert_eq!(
        ans["patch"]["subject"],
        "seccomp: stop advertising SECCOMP_RET_LOG"
    );
    assert_eq!(
        ans["patch"]["author"],
        "Case Culprit <case.culprit@example.org>"
    );
    // The evidence: the failing case's reason, and its good neighbour.
    assert!(ans["bad"].as_str().unwrap().contains("fail"), "{ans}");
    assert!(ans["good"].as_str().unwrap().contains("pass"), "{ans}");
    check_step_count(&state);
    // Patch 9 does not build: if the search landed on it, it was skipped
    // as a build error, never judged.
    for (k, j, o) in steps(&state) {
        if k == 9 {
            assert_eq!((j.as_str(), o.as_str()), ("skip", "build-error"));
        }
    }
    assert!(md.contains("First bad patch: 8/13"), "{md}");

    // Interrupted after 3 steps (the state file cut back to them): --resume
    // keeps those, runs only the rest, and reaches the same answer.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bisect-case");
    let mut cut = state.clone();
    let all = steps(&state);
    cut["steps"] = Value::Array(cut["steps"].as_array().unwrap()[..3].to_vec());
    cut["answer"] = Value::Null;
    std::fs::write(
        dir.join("bisect.json"),
        serde_json::to_string(&cut).unwrap(),
    )
    .unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["bisect", "--resume"])
        .arg(&dir)
        .current_dir(root())
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0));
    let resumed: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bisect.json")).unwrap()).unwrap();
    assert_eq!(steps(&resumed), all, "the resumed bisect took other steps");
    for i in 0..3 {
        assert_eq!(
            resumed["steps"][i]["started"], state["steps"][i]["started"],
            "step {i} was redone"
        );
    }
    assert_eq!(resumed["answer"], state["answer"]);
}

#[test]
fn bisect_names_the_patch_that_slows_the_measured_path() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, state, md) = bisect(
        "bisect-metric",
        &[
            "--series",
            "tests/bisect/culprit",
            "--metric",
            "seccomp_notify.default.same-cpu",
            "--regressed-by",
            "300",
        ],
    );
    assert_eq!(code, 0, "{md}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 12, "{md}");
    assert_eq!(ans["patch"]["subject"], "seccomp: pace user notifications");
    // Both medians and the CI of the change are in the evidence.
    let bad = ans["bad"].as_str().unwrap();
    assert!(bad.contains("worse [") && bad.contains("->"), "{bad}");
    check_step_count(&state);
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn git_bisect_run_with_bisect_step_names_the_same_commit_as_bisect_on_the_tree() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A git tree of 6.1 with the culprit series as 13 commits.
    let tree = out_dir("bisect-tree");
    let st = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["checkout", "6.1"])
        .arg(&tree)
        .args(["--matrix", &matrix(), "--series", "tests/bisect/culprit"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        git(&tree, &["rev-list", "--count", "kmatrix-base..kmatrix"]),
        "13"
    );
    let culprit = git(&tree, &["rev-parse", "kmatrix~5"]);
    assert_eq!(
        git(&tree, &["log", "-1", "--format=%s", &culprit]),
        "seccomp: stop advertising SECCOMP_RET_LOG"
    );
    let status_before = git(&tree, &["status", "--porcelain"]);

    // The harness's bisect over the last 6 commits of the tree.
    let (code, state, md) = bisect(
        "bisect-tree-range",
        &[
            "--tree",
            tree.to_str().unwrap(),
            "--range",
            "kmatrix~6..kmatrix",
            "--test",
            "seccomp_bpf",
            "--case",
            "global.get_action_avail",
        ],
    );
    assert_eq!(code, 0, "{md}");
    assert_eq!(state["answer"]["patch"]["commit"], culprit.as_str(), "{md}");
    assert_eq!(
        git(&tree, &["status", "--porcelain"]),
        status_before,
        "the tree was written to"
    );

    // git bisect run over the same commits, one bisect-step per commit.
    let state_dir = out_dir("bisect-step-state");
    git(&tree, &["bisect", "start", "kmatrix", "kmatrix~6"]);
    let out = Command::new("git")
        .arg("-C")
        .arg(&tree)
        .args(["bisect", "run"])
        .arg(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "bisect-step",
            "--no-setup",
            "--matrix",
            &matrix(),
            "--arch",
            "x86_64",
        ])
        .args([
            "--test",
            "seccomp_bpf",
            "--case",
            "global.get_action_avail",
            "--state",
        ])
        .arg(&state_dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    git(&tree, &["bisect", "reset", "kmatrix"]);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("{culprit} is the first bad commit")),
        "git bisect run did not name {culprit}:\n{text}"
    );
    // Every step is logged with its verdict.
    let log = std::fs::read_to_string(state_dir.join("steps.log")).unwrap();
    assert!(log.lines().count() >= 2, "{log}");
    assert!(log.contains(&format!("{culprit} bad")), "{log}");
}

/// `bisect --kselftest`: a kselftest target matrix.toml does not declare,
/// built by the tree's Makefile at every step, judges the steps; the
/// planted series of tests/bisect/ksft-culprit breaks the kernel's own
/// sigaltstack selftest at patch 2, between two comment-only patches.
#[test]
fn bisect_by_a_kselftest_target_names_the_patch_that_breaks_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, state, md) = bisect(
        "bisect-kselftest",
        &[
            "--kernel",
            "6.1",
            "--series",
            "tests/bisect/ksft-culprit",
            "--kselftest",
            "sigaltstack",
        ],
    );
    eprintln!("{md}");
    assert_eq!(code, 0, "{md}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 2, "{md}");
    assert_eq!(
        ans["patch"]["subject"],
        "signal: report only the stack's state from sigaltstack()"
    );
    check_step_count(&state);
    for (prefix, judgement, _) in steps(&state) {
        let want = if prefix >= 2 { "bad" } else { "good" };
        assert_eq!(judgement, want, "step at {prefix}: {md}");
    }
    // Each step's reproducer declares the target again.
    assert!(
        md.contains(" --kselftest sigaltstack ") && md.contains(" --patches 2 "),
        "{md}"
    );
}

/// A planted series whose middle patch breaks one case of a KUnit suite
/// (tests/bisect/kunit-culprit): bisected by that case, the suites built
/// into every step's kernel by the tree's own .kunitconfig.
#[test]
fn bisect_by_a_kunit_case_names_the_patch_that_breaks_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, state, md) = bisect(
        "bisect-kunit",
        &[
            "--kernel",
            "6.1",
            "--series",
            "tests/bisect/kunit-culprit",
            "--kunit",
            "string-stream-test",
            "--kunitconfig",
            "lib/kunit/.kunitconfig",
            "--case",
            "string-stream-test.string_stream_test_empty_on_creation",
        ],
    );
    eprintln!("{md}");
    assert_eq!(code, 0, "{md}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 2, "{md}");
    assert_eq!(
        ans["patch"]["subject"],
        "kunit: string-stream: a stream of empty fragments is empty too"
    );
    check_step_count(&state);
    for (prefix, judgement, _) in steps(&state) {
        let want = if prefix >= 2 { "bad" } else { "good" };
        assert_eq!(judgement, want, "step at {prefix}: {md}");
    }
    assert!(
        md.contains(" --kunit string-stream-test --kunitconfig lib/kunit/.kunitconfig "),
        "{md}"
    );
}

/// The fault patches alone on 6.1 (tests/bisect/crash-culprit): patch 1's
/// non-fatal BUG is another crash, named at its step but not taken for
/// the NULL dereference asked for; patch 2 is named.
#[test]
fn bisect_by_a_crash_title_names_the_patch_that_brings_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (code, state, md) = bisect(
        "bisect-crash",
        &[
            "--kernel",
            "6.1",
            "--series",
            "tests/bisect/crash-culprit",
            "--crash",
            "BUG: kernel NULL pointer dereference in *",
            "--test",
            "deadtask",
        ],
    );
    eprintln!("{md}");
    assert_eq!(code, 0, "{md}");
    let ans = &state["answer"];
    assert_eq!(ans["kind"], "found", "{md}");
    assert_eq!(ans["index"], 2, "{md}");
    check_step_count(&state);
    for (prefix, judgement, _) in steps(&state) {
        let want = if prefix >= 2 { "bad" } else { "good" };
        assert_eq!(judgement, want, "step at {prefix}: {md}");
    }
    assert!(
        md.contains("crash: BUG: kernel NULL pointer dereference in __x64_sys_prctl"),
        "{md}"
    );
    if steps(&state).iter().any(|(p, _, _)| *p == 1) {
        assert!(
            md.contains("other crashes: BUG: sleeping function called from invalid context in __x64_sys_prctl"),
            "{md}"
        );
    }
}
