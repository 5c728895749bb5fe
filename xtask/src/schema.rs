//! results.json: the one schema every report, comparison and bisect reads.
//!
//! Written after every cell through a temporary file and a rename, so a run
//! killed at any point leaves the last complete document behind.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Bumped when a change would make an older reader misread a document.
/// 2: evidence kinds, accel_reason / kvm_given_up, build_incremental.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    Skip,
    /// Failed, then passed on a retry.
    Flaky,
    Crash,
    Timeout,
    BuildError,
    ApplyError,
    ConfigError,
    InfraError,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Skip => "skip",
            Outcome::Flaky => "flaky",
            Outcome::Crash => "crash",
            Outcome::Timeout => "timeout",
            Outcome::BuildError => "build-error",
            Outcome::ApplyError => "apply-error",
            Outcome::ConfigError => "config-error",
            Outcome::InfraError => "infra-error",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Run {
    pub schema: u32,
    pub started: String,
    pub host: Host,
    pub matrix: String,
    pub cells: Vec<CellResult>,
    /// A/B comparisons of metrics (compare.rs), refreshed after every cell.
    #[serde(default)]
    pub comparisons: Vec<crate::report::compare::Comparison>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Host {
    pub hostname: String,
    pub cpus: usize,
    pub kernel: String,
    pub qemu: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CellResult {
    pub id: String,
    pub kernel: String,
    pub variant: String,
    pub arch: String,
    pub config: String,
    /// `kvm` or `tcg,thread=multi`...: a crash under TCG may be the emulator's.
    pub accel: String,
    /// Why this accelerator: the probe's verdict, KMATRIX_ACCEL, or why KVM
    /// was given up for this cell (QEMU died under it before the guest's
    /// first report; the cell was booted again under TCG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel_reason: Option<String>,
    /// Set when this cell started under KVM and fell back to TCG.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kvm_given_up: Option<String>,
    pub outcome: Outcome,
    /// Does the outcome match what matrix.toml expects? Each mismatch listed.
    pub as_expected: bool,
    #[serde(default)]
    pub mismatches: Vec<String>,
    /// Why the outcome is what it is: a log excerpt and where it came from.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    #[serde(default)]
    pub tests: Vec<TestResult>,
    #[serde(default)]
    pub metrics: Vec<Metric>,
    pub timings: Timings,
    #[serde(default)]
    pub logs: Logs,
    #[serde(default)]
    pub reproduce: Reproduce,
    /// Content hash of the kernel build (see build.rs), for bisect and CI.
    #[serde(default)]
    pub build_key: String,
}

/// What a piece of evidence is, so reports and CI annotations can group
/// and filter without reading its text.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceKind {
    /// A kernel splat on the console (panic, oops, BUG, WARNING, ...).
    Splat,
    /// The guest stopped, hung, or never reported.
    Guest,
    /// QEMU itself failed (abort, assertion, signal, bad arguments).
    Qemu,
    /// The accelerator changed (KVM given up for TCG).
    Accel,
    /// A host step failed: patch, config, build, guest compile.
    Host,
    /// A bug or failure of the harness itself.
    Harness,
    /// Earlier attempts and boots (retries, flaky).
    Attempt,
    #[default]
    Other,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Evidence {
    #[serde(default)]
    pub kind: EvidenceKind,
    pub what: String,
    pub excerpt: String,
    pub path: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TestResult {
    pub name: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub reason: Option<String>,
    /// Guest seconds the test ran.
    #[serde(default)]
    pub duration_s: Option<f64>,
    #[serde(default)]
    pub cases: Vec<CaseResult>,
    /// The test failed only because some of its cases failed (not a crash,
    /// a timeout or a cut-off stream), so expected case failures explain it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed_by_cases: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub name: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub samples: Vec<f64>,
    /// Set when the metric could not be measured (e.g. the feature is absent).
    #[serde(default)]
    pub skip: Option<String>,
    /// The matrix's precision target for this metric (`target_ci_pct`), kept
    /// with the samples so a report needs nothing but results.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci_pct: Option<f64>,
    /// With `boots` > 1: how many of `samples`, in order, each boot gave.
    /// Empty means one boot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boot_sizes: Vec<usize>,
}

impl CellResult {
    /// An empty result for cell `id` (kernel/variant/arch/config).
    pub fn blank(id: &str, outcome: Outcome) -> CellResult {
        let part = |i: usize| id.split('/').nth(i).unwrap_or_default().to_string();
        CellResult {
            id: id.into(),
            kernel: part(0),
            variant: part(1),
            arch: part(2),
            config: part(3),
            accel: String::new(),
            accel_reason: None,
            kvm_given_up: None,
            outcome,
            as_expected: false,
            mismatches: vec![],
            evidence: vec![],
            tests: vec![],
            metrics: vec![],
            timings: Timings::default(),
            logs: Logs::default(),
            reproduce: Reproduce::default(),
            build_key: String::new(),
        }
    }
}

impl Metric {
    /// The samples split by boot (one slice when there was one boot).
    pub fn by_boot(&self) -> Vec<&[f64]> {
        if self.boot_sizes.iter().sum::<usize>() != self.samples.len() || self.boot_sizes.len() < 2
        {
            return vec![&self.samples[..]];
        }
        let mut out = Vec::new();
        let mut at = 0;
        for &n in &self.boot_sizes {
            out.push(&self.samples[at..at + n]);
            at += n;
        }
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Timings {
    pub source_s: f64,
    pub config_s: f64,
    pub build_s: f64,
    pub build_cached: bool,
    /// Built in the kernel/arch/config's persistent O= dir over an earlier
    /// variant's build (make rebuilt only what changed), not cold.
    #[serde(default)]
    pub build_incremental: bool,
    pub rootfs_s: f64,
    pub boot_s: f64,
    /// Guest time from init start to the last test's end (guest clock).
    pub guest_s: f64,
    pub total_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Logs {
    pub console: Option<PathBuf>,
    pub results: Option<PathBuf>,
    pub build: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Reproduce {
    pub make: Vec<String>,
    /// How each guest program was compiled.
    #[serde(default)]
    pub guest: Vec<String>,
    pub qemu: Option<String>,
    pub xtask: String,
}

impl Run {
    pub fn load(path: &Path) -> Result<Run> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// Atomic replace: readers see the old or the new file, never half of one.
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
        Ok(())
    }

    pub fn upsert(&mut self, cell: CellResult) {
        match self.cells.iter_mut().find(|c| c.id == cell.id) {
            Some(c) => *c = cell,
            None => self.cells.push(cell),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_are_kebab_case_in_json() {
        let s = serde_json::to_string(&[Outcome::BuildError, Outcome::ApplyError, Outcome::Pass])
            .unwrap();
        assert_eq!(s, r#"["build-error","apply-error","pass"]"#);
        for o in [
            Outcome::ConfigError,
            Outcome::InfraError,
            Outcome::Timeout,
            Outcome::Flaky,
        ] {
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                format!("\"{}\"", o.as_str())
            );
        }
    }

    #[test]
    fn save_is_atomic_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("kmatrix-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        let run = Run {
            schema: SCHEMA_VERSION,
            started: "t".into(),
            host: Host::default(),
            matrix: "matrix.toml".into(),
            cells: vec![],
            comparisons: vec![],
        };
        run.save(&path).unwrap();
        assert!(!path.with_extension("json.tmp").exists());
        assert_eq!(Run::load(&path).unwrap(), run);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
