//! What patchcheck reads from the tools it runs: checkpatch.pl's findings,
//! the compiler's warnings about one file, kernel-doc's warnings. Text in,
//! findings out; line numbers are dropped from warnings, so a warning that
//! only moved is not new.

use std::collections::BTreeSet;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// One checkpatch.pl finding (`--show-types`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// ERROR, WARNING or CHECK.
    pub severity: String,
    /// checkpatch's type, e.g. CODE_INDENT.
    pub kind: String,
    pub message: String,
    /// `FILE:LINE` for a finding in the diff; empty for the commit message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub location: String,
}

/// The findings of `checkpatch.pl --strict --show-types PATCH`.
pub fn checkpatch(output: &str) -> Vec<Finding> {
    let head = Regex::new(r"^(ERROR|WARNING|CHECK):([A-Z0-9_]+): (.*)$").unwrap();
    let at = Regex::new(r"^#\d+: FILE: (\S+?):(\d+):").unwrap();
    let mut out: Vec<Finding> = Vec::new();
    let mut lines = output.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(c) = head.captures(l) else {
            continue;
        };
        let location = lines
            .peek()
            .and_then(|n| at.captures(n))
            .map(|c| format!("{}:{}", &c[1], &c[2]))
            .unwrap_or_default();
        out.push(Finding {
            severity: c[1].to_string(),
            kind: c[2].to_string(),
            message: c[3].trim().to_string(),
            location,
        });
    }
    out
}

/// Severities at or above `level` (error < warning < check in strictness).
pub fn counts_at(findings: &[Finding], level: &str) -> usize {
    let rank = |s: &str| match s {
        "ERROR" => 0,
        "WARNING" => 1,
        _ => 2,
    };
    let max = rank(&level.to_ascii_uppercase());
    findings.iter().filter(|f| rank(&f.severity) <= max).count()
}

/// GCC/clang warnings about `file` (a path relative to the tree; the
/// compiler may print it with any prefix), as `FILE: warning: MESSAGE`.
pub fn compiler_warnings(output: &str, file: &str) -> BTreeSet<String> {
    compiler_warnings_in(output, file, "")
}

/// The same for a make run in the tree's directory `dir` (perf's own
/// Makefile prints `bench/x.c` for `tools/perf/bench/x.c`).
pub fn compiler_warnings_in(output: &str, file: &str, dir: &str) -> BTreeSet<String> {
    let re = Regex::new(r"^(\S+?):\d+:\d+: warning: (.*)$").unwrap();
    let printed = file
        .strip_prefix(&format!("{}/", dir.trim_end_matches('/')))
        .filter(|_| !dir.is_empty())
        .unwrap_or(file);
    output
        .lines()
        .filter_map(|l| re.captures(l.trim_end()))
        .filter(|c| &c[1] == printed || c[1].ends_with(&format!("/{printed}")))
        .map(|c| format!("{file}: warning: {}", ascii_quotes(c[2].trim())))
        .collect()
}

/// GCC quotes with ‘’ in a UTF-8 locale and '' in C (the kernel's
/// Makefile unexports LC_ALL, so the host's LANG decides): one form, so a
/// warning compares equal across hosts.
fn ascii_quotes(s: &str) -> String {
    s.replace(['\u{2018}', '\u{2019}'], "'")
}

/// kernel-doc's warnings (`scripts/kernel-doc -none FILE`), as
/// `FILE: warning: MESSAGE`.
pub fn kernel_doc(output: &str) -> BTreeSet<String> {
    let re = Regex::new(r"^(\S+?):\d+: warning: (.*)$").unwrap();
    output
        .lines()
        .filter_map(|l| re.captures(l.trim_end()))
        .map(|c| format!("{}: warning: {}", &c[1], c[2].trim()))
        .collect()
}

/// Files a patch's diff touches (`diff --git a/X b/X`), in order.
pub fn touched(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in patch.lines() {
        if let Some(rest) = l.strip_prefix("diff --git a/") {
            if let Some((_, b)) = rest.split_once(" b/") {
                if !out.iter().any(|f| f == b) {
                    out.push(b.to_string());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/../tests/fixtures/patchcheck/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// checkpatch.pl of 6.1 on the planted patch that indents with spaces
    /// and leaves a trailing space (the capture): each finding with its
    /// type and place.
    #[test]
    fn checkpatch_findings_come_with_type_and_place() {
        let f = checkpatch(&fixture("checkpatch-6.1-spaces.txt"));
        assert!(
            f.iter().any(|x| x.severity == "ERROR"
                && x.kind == "CODE_INDENT"
                && x.location.starts_with("kernel/seccomp.c:")),
            "{f:?}"
        );
        assert_eq!(
            counts_at(&f, "error"),
            f.iter().filter(|x| x.severity == "ERROR").count()
        );
        assert!(counts_at(&f, "check") >= counts_at(&f, "warning"));
    }

    /// gcc 12's output for a planted unused variable, from a real W=1
    /// object build: the warning about the file, without its line.
    #[test]
    fn compiler_warnings_about_one_file_without_line_numbers() {
        let w = compiler_warnings(&fixture("gcc-unused-variable.txt"), "kernel/seccomp.c");
        assert_eq!(
            w.into_iter().collect::<Vec<_>>(),
            ["kernel/seccomp.c: warning: unused variable 'waited' [-Wunused-variable]"],
            "the kernel-doc lines W=1 also prints (no column) are not the compiler's"
        );
        assert!(compiler_warnings(&fixture("gcc-unused-variable.txt"), "kernel/fork.c").is_empty());
    }

    /// perf's own make output (a real static build of 6.1 with the
    /// seccomp series, x86_64): it prints paths from tools/perf, and the
    /// series' new bench warns three times.
    #[test]
    fn perf_warnings_are_matched_from_its_own_directory() {
        let out = fixture("perf-make-6.1-series-x86_64.txt");
        let f = "tools/perf/bench/sched-seccomp-notify.c";
        let w: Vec<String> = compiler_warnings_in(&out, f, "tools/perf")
            .into_iter()
            .collect();
        assert_eq!(
            w,
            [
                "tools/perf/bench/sched-seccomp-notify.c: warning: unused parameter 'listener' [-Wunused-parameter]",
                "tools/perf/bench/sched-seccomp-notify.c: warning: unused variable 'status' [-Wunused-variable]",
                "tools/perf/bench/sched-seccomp-notify.c: warning: variable 'resp' set but not used [-Wunused-but-set-variable]",
            ]
        );
        // From the tree's top, the printed path does not name the file.
        assert!(compiler_warnings(&out, f).is_empty());
        // The linker's warnings about dlopen are not about the file.
        assert!(compiler_warnings_in(&out, "tools/perf/util/dlfilter.c", "tools/perf").is_empty());
    }

    #[test]
    fn touched_files_in_diff_order() {
        let p = "Subject: x\n\ndiff --git a/kernel/a.c b/kernel/a.c\n+x\ndiff --git a/include/b.h b/include/b.h\n";
        assert_eq!(touched(p), ["kernel/a.c", "include/b.h"]);
    }
}
