//! results.json: the one schema every report, comparison and bisect reads.
//!
//! Written after every cell through a temporary file and a rename, so a run
//! killed at any point leaves the last complete document behind.
//!
//! Every reader goes through `Run::load`: the document parsed (an error
//! names the file, line:column and JSON path) and checked (`validate`:
//! schema, cell ids, boot sizes, finite samples), so no command computes
//! on a document it cannot trust.
//!
//! A leaf: it imports nothing of the harness (std, serde, anyhow,
//! serde_json and serde_path_to_error only), so every stage can depend on
//! it and it on none of them. What is computed (classification,
//! statistics, verdicts) lives with the stage that computes it; only the
//! serialized shapes live here, their checks (`validate`), and the merging
//! of several documents into one (`merge`).

pub mod merge;
pub mod validate;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};

pub use validate::validate;

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
    /// A/B comparisons of metrics (stats/compare.rs), refreshed after every cell.
    #[serde(default)]
    pub comparisons: Vec<Comparison>,
    /// Series fetched from the mailing list (`--lore`): message id, archive
    /// and b4's version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<SeriesOrigin>,
    /// The planned looks of a run that adds boots while comparisons are
    /// undecided (stats::sequential); None: one look, at ALPHA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<Looks>,
    /// Two tools' figures for one quantity, checked against each other
    /// (matrix.toml `[[agree]]`, stats/crosscheck.rs), refreshed with the
    /// comparisons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cross_checks: Vec<CrossCheck>,
}

/// One `[[agree]]` pair in one cell: both medians, their ratio, and
/// whether it lies within the declared factor either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossCheck {
    pub cell: String,
    pub a: String,
    pub b: String,
    pub unit_a: String,
    pub unit_b: String,
    pub median_a: f64,
    pub median_b: f64,
    /// median_a / median_b.
    pub ratio: f64,
    pub factor: f64,
    pub agree: bool,
    /// What both measure (matrix.toml `what`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
}

/// A run's planned looks: every cell boots `first` times, then `step`
/// more at a time while a comparison is undecided, up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Looks {
    pub first: u32,
    pub step: u32,
    pub max: u32,
}

/// Where a series came from when it was fetched from the mailing list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeriesOrigin {
    /// The series' name in the run (its variant).
    pub series: String,
    pub message_id: String,
    /// The archive b4 fetched it from.
    pub archive: String,
    /// `b4 --version`.
    pub b4: String,
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
    /// The guest's kernel and CPUs (possible/online), from its first report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<GuestInfo>,
    /// Every boot of the cell in the order it ran (a KVM boot given up for
    /// TCG included): with interleaved boots, the place of each among the
    /// boots of the whole run. Empty in results.json written before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boots: Vec<BootRecord>,
}

/// When one boot of a cell ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BootRecord {
    /// 1-based boot number of the cell.
    pub boot: u32,
    /// 1-based place among all boots the driver ran in this invocation
    /// (`matrix`, a `--resume` starts again at 1).
    pub seq: u32,
    /// UTC start, YYYYmmdd-HHMMSS.
    pub started: String,
    pub duration_s: f64,
    /// The accelerator it ran under (`kvm`, `tcg,thread=multi`).
    pub accel: String,
    /// QEMU vCPU threads pinned to a host CPU each (qemu::pin_vcpus);
    /// 0 when pinning was off (or a results file from before it).
    #[serde(default)]
    pub pinned_vcpus: u32,
    /// Host CPUs kept from idling by a SCHED_IDLE spinner while it ran
    /// (qemu::keep_busy); 0 when that was off (or before it existed).
    #[serde(default)]
    pub busy_cpus: u32,
    /// The cells booting at the same time (`--jobs`, boots that run no
    /// benchmark); empty when it ran alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<String>,
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
    /// The crash is one matrix.toml lists as known (`[[known]]`).
    Known,
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
    /// A splat's crash report (`analyze::crash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<Box<Crash>>,
}

/// A splat as a crash report: syzbot's kind of title, the frames it was
/// read from, and a fingerprint stable over boots, cells and runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Crash {
    /// `BUG: kernel NULL pointer dereference in do_sys_poll`.
    pub title: String,
    /// Functions, top first, without the reporting and helper ones.
    pub frames: Vec<String>,
    /// 16 hex digits over the title and the top three known frames (not
    /// a stack scan's `?` guesses).
    pub fingerprint: String,
}

impl Evidence {
    pub fn new(
        kind: EvidenceKind,
        what: impl Into<String>,
        excerpt: impl Into<String>,
        path: Option<PathBuf>,
    ) -> Evidence {
        Evidence {
            kind,
            what: what.into(),
            excerpt: excerpt.into(),
            path,
            crash: None,
        }
    }
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
            guest: None,
            boots: vec![],
        }
    }
}

impl Metric {
    /// The sum of `boot_sizes`, None when it overflows.
    pub fn boot_total(&self) -> Option<usize> {
        self.boot_sizes
            .iter()
            .try_fold(0usize, |sum, &n| sum.checked_add(n))
    }

    /// The samples split by boot (one slice when there was one boot, or
    /// when `boot_sizes` does not add up to the samples: `validate`
    /// refuses such a document, this never panics on one).
    pub fn by_boot(&self) -> Vec<&[f64]> {
        if self.boot_total() != Some(self.samples.len()) || self.boot_sizes.len() < 2 {
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

/// Which way a metric is better; declared per metric in matrix.toml
/// (`better = "lower"`) and kept with every comparison.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// What a comparison compares.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ComparisonKind {
    /// The base cell against a series cell of the same kernel/arch/config,
    /// one metric name on both sides.
    Variants,
    /// Two metrics of one cell (a `[[within]]` pair), from the same boots.
    Within,
}

impl ComparisonKind {
    /// The name in results.json.
    pub fn as_str(self) -> &'static str {
        match self {
            ComparisonKind::Variants => "variants",
            ComparisonKind::Within => "within",
        }
    }
}

impl std::fmt::Display for ComparisonKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The judgement of a comparison. `as_str` (and Display, as for `Outcome`) is
/// its name in results.json; `describe` is the words a report shows.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Improved,
    Regressed,
    NoChange,
    TooNoisy,
    TooFewSamples,
    /// The statistics cannot be computed on these samples (a base median
    /// of 0, a boot without samples, a figure that is not a finite
    /// number): the comparison's `reason` says which. Its figures that are
    /// not numbers are left out of results.json.
    CannotCompare,
}

impl Verdict {
    /// The name in results.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no-change",
            Verdict::TooNoisy => "too-noisy",
            Verdict::TooFewSamples => "too-few-samples",
            Verdict::CannotCompare => "cannot-compare",
        }
    }

    /// The verdict in words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::NoChange => "no significant change",
            Verdict::TooNoisy => "too noisy to judge",
            Verdict::TooFewSamples => "too few samples",
            Verdict::CannotCompare => "cannot compare",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The test that gave a comparison's p-value.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PTest {
    /// Mann-Whitney U on the samples (one boot on a side, or paired metrics).
    MannWhitney,
    /// Welch's t on the log of the per-boot medians (several boots a side).
    WelchBootMedians,
    /// Paired t on the log ratio of the per-boot medians, boot i of one
    /// cell against boot i of the other: their boots were interleaved, so
    /// each pair ran back to back and shares the host's state.
    PairedBootMedians,
}

/// JSON has no NaN: serde_json would write a NaN f64 as `null`. A
/// comparison's figure that is not a finite number (of a `cannot-compare`
/// comparison) is left out instead (`not_finite`); one written as `null`
/// by an older harness (a p-value of a test with no spread, a change
/// against a zero median) or left out reads back as NaN, so such a
/// results.json stays readable (merge, report, resume).
fn nan_as_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

fn nan() -> f64 {
    f64::NAN
}

fn not_finite(x: &f64) -> bool {
    !x.is_finite()
}

/// One A/B comparison of a metric, as stats/compare.rs computed it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub kind: ComparisonKind,
    pub base_cell: String,
    pub new_cell: String,
    pub base_metric: String,
    pub new_metric: String,
    pub unit: String,
    pub n_base: usize,
    pub n_new: usize,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub median_base: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub median_new: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub pct_change: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub ci95_lo: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub ci95_hi: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub p_value: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub cv_base: f64,
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub cv_new: f64,
    pub better: Better,
    pub min_effect_pct: f64,
    pub verdict: Verdict,
    /// Boots the samples came from (the CI accounts for boot-to-boot spread).
    #[serde(default = "one")]
    pub boots_base: usize,
    #[serde(default = "one")]
    pub boots_new: usize,
    /// Which test gave `p_value`.
    #[serde(default = "mann_whitney")]
    pub p_test: PTest,
    /// What the claim being checked says (matrix.toml `reference`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The statistic compared: this quantile of the samples (matrix.toml
    /// `[metric] quantile`; 0.5, the median, unless declared).
    /// `median_base`/`median_new`, `pct_change` and the CI are of it.
    /// Written only when not the median, so comparisons of medians read
    /// as they always have.
    #[serde(default = "half", skip_serializing_if = "is_half")]
    pub quantile: f64,
    /// For a base-vs-series "too noisy" verdict with several boots a side:
    /// how much the compared statistic moved from boot to boot within the
    /// two cells (pooled SD of its log, in percent), and the boots a side
    /// that would pin a change down to +-min_effect_pct on this host
    /// (stats::power::boots_needed; None past 50). The noise, from the data.
    /// For boots compared pair by pair (`p_test` paired-boot-medians): the
    /// SD of the pairs' log ratios, and the pairs needed
    /// (stats::power::pairs_needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_sd_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boots_needed: Option<u32>,
    /// A within comparison of only the boots in one state of the host
    /// (matrix.toml `[within.split]`); None: every boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
    /// Why the verdict is `cannot-compare`, or why a significant change
    /// is `too-noisy` (within `layout_pct`); None otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What code layout alone moves this metric by, in percent (its
    /// `[metric] layout_pct`), where that bound turned a significant change
    /// between two kernel images into `too-noisy`: the CI did not lie
    /// beyond it, so the change cannot be told from the layout's. None
    /// where it did not apply (one image, a `[[within]]` pair, no bound
    /// declared, or a change past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_pct: Option<f64>,
    /// The two-sided level the verdict was reached at, and the CI's
    /// (`ci95_lo`/`ci95_hi` are at 1 - this): 0.05 for one look, the
    /// look's nominal level in a run with planned looks (`Run::looks`).
    #[serde(default = "alpha", skip_serializing_if = "is_alpha")]
    pub level: f64,
    /// "Too noisy" and given up: the noise so far says even the run's
    /// maximum boots could not decide it (`boots_needed` says how many).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub futile: bool,
}

fn alpha() -> f64 {
    0.05
}

fn is_alpha(x: &f64) -> bool {
    *x == 0.05
}

/// Which boots a split within comparison judged: those where `metric`'s
/// per-boot median was at least `at` (`above`), or below it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Split {
    pub metric: String,
    pub unit: String,
    pub at: f64,
    pub above: bool,
    /// The median over these boots of `metric`'s per-boot median.
    #[serde(
        default = "nan",
        deserialize_with = "nan_as_null",
        skip_serializing_if = "not_finite"
    )]
    pub median: f64,
    /// Boots of the cell in the other state; 0: the run never saw it.
    pub boots_other: usize,
}

impl Comparison {
    /// ", in the 12 boots where ..." for a split comparison, else "".
    pub fn split_note(&self) -> String {
        self.split.as_ref().map_or(String::new(), |s| {
            format!(", in {}", s.label(self.boots_new))
        })
    }
}

impl Split {
    /// "the 12 boots where seccomp_notify.host.wake_gap >= 10 us (median
    /// 15.8; 6 boots below)", `boots` being this comparison's.
    pub fn label(&self, boots: usize) -> String {
        let (this, other) = if self.above {
            (">=", "below")
        } else {
            ("<", "at or above")
        };
        let which = match (self.boots_other, boots) {
            (0, 1) => "its one boot".to_string(),
            (0, _) => format!("all {boots} boots"),
            (_, 1) => "1 boot".to_string(),
            _ => format!("the {boots} boots"),
        };
        let rest = match self.boots_other {
            0 => format!("no boot {other}"),
            n => format!("{n} boot{} {other}", if n == 1 { "" } else { "s" }),
        };
        format!(
            "{which}, where {} {this} {} {} (median {:.1}; {rest})",
            self.metric, self.at, self.unit, self.median
        )
    }
}

fn half() -> f64 {
    0.5
}

fn is_half(q: &f64) -> bool {
    *q == 0.5
}

/// "median", "p10", ...: how reports name a quantile.
pub fn quantile_label(q: f64) -> String {
    if q == 0.5 {
        "median".into()
    } else {
        format!("p{}", (q * 100.0 * 10.0).round() / 10.0)
    }
}

fn mann_whitney() -> PTest {
    PTest::MannWhitney
}

fn one() -> usize {
    1
}

/// What the guest said about itself in its first report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GuestInfo {
    pub kernel: Option<String>,
    pub nproc: Option<u32>,
    /// CPU lists as in /sys/devices/system/cpu/{possible,online}, "0-254".
    pub possible: Option<String>,
    pub online: Option<String>,
}

impl GuestInfo {
    /// Number of CPUs in a sysfs CPU list ("0-3,8" -> 5).
    pub fn count(list: &str) -> Option<u32> {
        let mut n = 0;
        for part in list.trim().split(',').filter(|p| !p.is_empty()) {
            n += match part.split_once('-') {
                Some((a, b)) => b.parse::<u32>().ok()? + 1 - a.parse::<u32>().ok()?,
                None => {
                    part.parse::<u32>().ok()?;
                    1
                }
            };
        }
        Some(n)
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
    /// `cargo xtask boot ...` for an interactive shell on the cell's kernel.
    #[serde(default)]
    pub boot: String,
}

impl Run {
    /// Reads and checks a results.json: every command that reads one
    /// (report, merge, compare, aa-rate, sweep, a resumed run) comes
    /// through here. An error names the file and what is wrong in it: the
    /// line:column and JSON path serde stopped at, a schema this harness
    /// does not read, or what `validate` refused.
    pub fn load(path: &Path) -> Result<Run> {
        let text = crate::util::read_input_text(path, crate::util::MAX_RESULTS, "results file")?;
        Run::parse(&text).map_err(|e| anyhow!("{}{e}", path.display()))
    }

    /// `load` of a document's text; the error reads after the file's name.
    pub fn parse(text: &str) -> std::result::Result<Run, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        let run: Run = match serde_path_to_error::deserialize(&mut de) {
            Ok(run) => run,
            Err(e) => return Err(parse_error(text, e)),
        };
        if let Err(e) = de.end() {
            return Err(format!(
                ":{}:{}: not valid JSON: {}",
                e.line(),
                e.column(),
                bare(&e)
            ));
        }
        if run.schema != SCHEMA_VERSION {
            return Err(other_schema(run.schema.into()));
        }
        validate(&run).map_err(|e| format!(": {e}"))?;
        Ok(run)
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
impl Run {
    /// A run of `cells`: schema SCHEMA_VERSION, started "t", the default
    /// host, matrix "matrix.toml"; no comparisons, origins, looks or cross
    /// checks.
    pub fn fixture(cells: Vec<CellResult>) -> Run {
        Run {
            schema: SCHEMA_VERSION,
            started: "t".into(),
            host: Host::default(),
            matrix: "matrix.toml".into(),
            cells,
            comparisons: vec![],
            origins: vec![],
            looks: None,
            cross_checks: vec![],
        }
    }
}

#[cfg(test)]
impl Metric {
    /// `samples` of metric `name` in `unit`, from one boot: no skip, no
    /// target_ci_pct, empty boot_sizes.
    pub fn fixture(name: &str, unit: &str, samples: &[f64]) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            samples: samples.to_vec(),
            skip: None,
            target_ci_pct: None,
            boot_sizes: vec![],
        }
    }
}

#[cfg(test)]
impl Comparison {
    /// A variants comparison of `metric` (on both sides) from `base_cell`
    /// to `new_cell` with `verdict`: unit "us/op", better lower,
    /// min_effect_pct 5, 3 boots a side by Welch's t on boot medians,
    /// cv 0.1 a side, the median at level 0.05; every other count and
    /// figure 0, every option None, not futile.
    pub fn fixture(base_cell: &str, new_cell: &str, metric: &str, verdict: Verdict) -> Comparison {
        Comparison {
            kind: ComparisonKind::Variants,
            base_cell: base_cell.into(),
            new_cell: new_cell.into(),
            base_metric: metric.into(),
            new_metric: metric.into(),
            unit: "us/op".into(),
            n_base: 0,
            n_new: 0,
            median_base: 0.0,
            median_new: 0.0,
            pct_change: 0.0,
            ci95_lo: 0.0,
            ci95_hi: 0.0,
            p_value: 0.0,
            cv_base: 0.1,
            cv_new: 0.1,
            better: Better::Lower,
            min_effect_pct: 5.0,
            verdict,
            boots_base: 3,
            boots_new: 3,
            p_test: PTest::WelchBootMedians,
            reference: None,
            quantile: 0.5,
            boot_sd_pct: None,
            boots_needed: None,
            split: None,
            reason: None,
            layout_pct: None,
            level: 0.05,
            futile: false,
        }
    }
}

fn other_schema(n: u64) -> String {
    format!(" has results.json schema {n}; this harness reads and writes schema {SCHEMA_VERSION}")
}

/// serde_json's message without its " at line L column C".
fn bare(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let tail = format!(" at line {} column {}", e.line(), e.column());
    s.strip_suffix(&tail).unwrap_or(&s).to_string()
}

/// Why `text` is not a results.json: not JSON, another schema (checked
/// before the shape, so the refusal says "schema N" rather than a serde
/// error), or the shape, at line:column and JSON path.
fn parse_error(text: &str, e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let at = format!(":{}:{}", inner.line(), inner.column());
    if inner.is_syntax() || inner.is_eof() {
        return format!("{at}: not valid JSON: {}", bare(&inner));
    }
    #[derive(Deserialize)]
    struct Head {
        schema: Option<serde_json::Value>,
    }
    match serde_json::from_str::<Head>(text).map(|h| h.schema.as_ref().map(|v| v.as_u64())) {
        Ok(Some(Some(n))) if n != u64::from(SCHEMA_VERSION) => return other_schema(n),
        Ok(None | Some(None)) => return " has no results.json schema number".into(),
        _ => {}
    }
    let path = if path == "." {
        String::new()
    } else {
        format!(" {path}:")
    };
    format!("{at}: not a results.json:{path} {}", bare(&inner))
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

    /// A comparison as results.json has always spelt it (kind, verdict,
    /// better and p_test by name).
    const COMPARISON_JSON: &str = r#"{"kind":"within","base_cell":"6.1/s/x86_64/tiny","new_cell":"6.1/s/x86_64/tiny","base_metric":"b.default.x","new_metric":"b.sync.x","unit":"us/op","n_base":30,"n_new":30,"median_base":100.0,"median_new":80.0,"pct_change":-20.0,"ci95_lo":-30.5,"ci95_hi":-9.25,"p_value":0.001,"cv_base":0.1,"cv_new":0.2,"better":"lower","min_effect_pct":5.0,"verdict":"too-noisy","boots_base":3,"boots_new":3,"p_test":"welch-boot-medians"}"#;

    fn comparison() -> Comparison {
        serde_json::from_str(COMPARISON_JSON).unwrap()
    }

    #[test]
    fn comparison_json_is_unchanged_by_typing_it() {
        let c = comparison();
        assert_eq!(
            (c.kind, c.verdict, c.better, c.p_test),
            (
                ComparisonKind::Within,
                Verdict::TooNoisy,
                Better::Lower,
                PTest::WelchBootMedians
            )
        );
        assert_eq!(serde_json::to_string(&c).unwrap(), COMPARISON_JSON);
        assert_eq!(c.quantile, 0.5);
        // Another quantile is written, and read back.
        let p10 = Comparison {
            quantile: 0.1,
            ..c.clone()
        };
        let j = serde_json::to_string(&p10).unwrap();
        assert!(j.ends_with(r#","quantile":0.1}"#), "{j}");
        assert_eq!(serde_json::from_str::<Comparison>(&j).unwrap(), p10);
        assert_eq!(quantile_label(0.1), "p10");
        assert_eq!(quantile_label(0.5), "median");
        // Documents written before boots and p_test were recorded.
        let old = COMPARISON_JSON
            .replace(
                r#","boots_base":3,"boots_new":3,"p_test":"welch-boot-medians""#,
                "",
            )
            .replace(r#""kind":"within""#, r#""kind":"variants""#);
        let c: Comparison = serde_json::from_str(&old).unwrap();
        assert_eq!(
            (c.kind, c.boots_base, c.boots_new, c.p_test),
            (ComparisonKind::Variants, 1, 1, PTest::MannWhitney)
        );
        assert!(
            serde_json::from_str::<Comparison>(&COMPARISON_JSON.replace("within", "inside"))
                .is_err()
        );
    }

    #[test]
    fn a_split_says_which_boots_and_what_the_other_state_had() {
        let s = |above: bool, boots_other: usize| Split {
            metric: "seccomp_notify.host.wake_gap_pct".into(),
            unit: "%".into(),
            at: 17.0,
            above,
            median: 38.14,
            boots_other,
        };
        let w = "where seccomp_notify.host.wake_gap_pct";
        assert_eq!(
            s(true, 2).label(16),
            format!("the 16 boots, {w} >= 17 % (median 38.1; 2 boots below)")
        );
        assert_eq!(
            s(false, 16).label(2),
            format!("the 2 boots, {w} < 17 % (median 38.1; 16 boots at or above)")
        );
        assert_eq!(
            s(false, 5).label(1),
            format!("1 boot, {w} < 17 % (median 38.1; 5 boots at or above)")
        );
        assert_eq!(
            s(true, 1).label(5),
            format!("the 5 boots, {w} >= 17 % (median 38.1; 1 boot below)")
        );
        assert_eq!(
            s(false, 0).label(18),
            format!("all 18 boots, {w} < 17 % (median 38.1; no boot at or above)")
        );
        assert_eq!(
            s(true, 0).label(1),
            format!("its one boot, {w} >= 17 % (median 38.1; no boot below)")
        );
        // In results.json only when set; older comparisons read as unsplit.
        let c: Comparison = serde_json::from_str(COMPARISON_JSON).unwrap();
        assert_eq!((c.split.as_ref(), c.split_note()), (None, String::new()));
        let with = Comparison {
            split: Some(s(true, 2)),
            boots_new: 16,
            ..c
        };
        let back: Comparison =
            serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
        assert!(back.split_note().starts_with(", in the 16 boots, where"));
    }

    #[test]
    fn verdict_and_kind_names_are_serdes_and_reports_get_words() {
        // Every variant, by construction: a new one does not compile until
        // it is added to this match and to the tables below.
        let json_and_words = |v: Verdict| match v {
            Verdict::Improved => ("improved", "improved"),
            Verdict::Regressed => ("regressed", "regressed"),
            Verdict::NoChange => ("no-change", "no significant change"),
            Verdict::TooNoisy => ("too-noisy", "too noisy to judge"),
            Verdict::TooFewSamples => ("too-few-samples", "too few samples"),
            Verdict::CannotCompare => ("cannot-compare", "cannot compare"),
        };
        for v in [
            Verdict::Improved,
            Verdict::Regressed,
            Verdict::NoChange,
            Verdict::TooNoisy,
            Verdict::TooFewSamples,
            Verdict::CannotCompare,
        ] {
            let (json, words) = json_and_words(v);
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{json}\""));
            assert_eq!(v.as_str(), json);
            assert_eq!(v.to_string(), json);
            assert_eq!(v.describe(), words);
            assert_eq!(
                serde_json::from_str::<Verdict>(&format!("\"{json}\"")).unwrap(),
                v
            );
        }
        let kind_json = |k: ComparisonKind| match k {
            ComparisonKind::Variants => "variants",
            ComparisonKind::Within => "within",
        };
        for k in [ComparisonKind::Variants, ComparisonKind::Within] {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", kind_json(k))
            );
            assert_eq!(k.as_str(), kind_json(k));
        }
        assert_eq!(
            serde_json::to_string(&[PTest::MannWhitney, PTest::WelchBootMedians]).unwrap(),
            r#"["mann-whitney","welch-boot-medians"]"#
        );
        assert_eq!(
            serde_json::to_string(&[Better::Lower, Better::Higher]).unwrap(),
            r#"["lower","higher"]"#
        );
    }

    #[test]
    fn save_is_atomic_and_round_trips() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        let run = Run {
            comparisons: vec![comparison()],
            ..Run::fixture(vec![CellResult::blank("6.1/s/x86_64/tiny", Outcome::Pass)])
        };
        run.save(&path).unwrap();
        assert!(!path.with_extension("json.tmp").exists());
        assert_eq!(Run::load(&path).unwrap(), run);
        // Boot records: absent from results.json when empty (files written
        // before they existed read back the same), kept when present.
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"boots\""));
        let mut run = run;
        run.cells[0].boots = vec![BootRecord {
            boot: 1,
            seq: 2,
            started: "20261130-221500".into(),
            duration_s: 20.5,
            accel: "tcg,thread=multi".into(),
            pinned_vcpus: 2,
            busy_cpus: 2,
            beside: vec!["6.1/seccomp-sync-wakeup/x86_64/tiny".into()],
        }];
        run.save(&path).unwrap();
        assert_eq!(Run::load(&path).unwrap(), run);
        // A record from before pinning and keep-busy (neither field) reads
        // as 0 for both.
        let mut old: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let rec = old["cells"][0]["boots"][0].as_object_mut().unwrap();
        assert!(rec.remove("pinned_vcpus").is_some() && rec.remove("busy_cpus").is_some());
        assert!(rec.remove("beside").is_some());
        std::fs::write(&path, old.to_string()).unwrap();
        let back = &Run::load(&path).unwrap().cells[0].boots[0];
        assert_eq!((back.pinned_vcpus, back.busy_cpus), (0, 0));
        assert!(back.beside.is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A NaN p-value (no spread on either side) is written as null and
    /// must read back: seen on a real 12-cell run, where it made
    /// results.json unreadable for report, merge and --resume.
    #[test]
    fn a_nan_in_a_comparison_survives_a_round_trip() {
        let text = r#"{"kind":"variants","base_cell":"a","new_cell":"b","base_metric":"m","new_metric":"m","unit":"gaps","n_base":3,"n_new":3,"median_base":-6.0,"median_new":0.0,"pct_change":-100.0,"ci95_lo":-150.0,"ci95_hi":50.0,"p_value":null,"cv_base":1.0,"cv_new":0.0,"better":"lower","min_effect_pct":20.0,"verdict":"too-noisy"}"#;
        let c: Comparison = serde_json::from_str(text).unwrap();
        assert!(c.p_value.is_nan());
        let again: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert!(again.p_value.is_nan());
        assert_eq!(again.median_base, -6.0);
    }
}
