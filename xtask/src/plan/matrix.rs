//! matrix.toml: the schema, its validation, and expansion into cells.
//!
//! Pure: parsing and planning never touch the file system beyond reading the
//! one TOML file handed in, so every rule is unit-tested on strings.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeInclusive;

use anyhow::{bail, Result};
use serde::Deserialize;
use toml::Spanned;

use crate::plan::arch::Arch;
use crate::plan::spans::{keys, Seg, Spans};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub run: RunSettings,
    pub kernel: BTreeMap<String, Kernel>,
    #[serde(default)]
    pub series: BTreeMap<String, Series>,
    pub config: BTreeMap<String, ConfigSpec>,
    pub test: BTreeMap<String, TestSpec>,
    #[serde(default)]
    pub expect: Vec<Expect>,
    /// Crashes the matrix knows about (a series known to break the kernel).
    #[serde(default)]
    pub known: Vec<Known>,
    /// Metric declarations by name prefix (longest prefix wins).
    #[serde(default)]
    pub metric: BTreeMap<String, MetricSpec>,
    /// Pairs of metrics compared inside one cell, e.g. sync vs default.
    #[serde(default)]
    pub within: Vec<Within>,
    /// Declared comparisons of one variant across two configs.
    #[serde(default)]
    pub across: Vec<Across>,
    /// Pairs of metrics that measure one quantity with two tools, checked
    /// against each other in every cell that has both.
    #[serde(default)]
    pub agree: Vec<Agree>,
    /// `matrix --aa`: every kernel also runs `AA_VARIANT`, the base a
    /// second time under another name (not a matrix.toml key).
    #[serde(skip)]
    pub aa: bool,
}

/// The A/A twin of `base` (`matrix --aa`): the same commit, hence the same
/// cached kernel image and the same expectations, compared with `base`
/// like a series, where any verdict but "no change" is a false alarm.
pub const AA_VARIANT: &str = "base~aa";

/// The variant whose kernel and expectations a variant has: `base` for the
/// A/A twin, itself otherwise.
pub fn built_as(variant: &str) -> &str {
    if variant == AA_VARIANT {
        "base"
    } else {
        variant
    }
}

/// `NAME@K` as (NAME, K) for K >= 1: the first K patches of series NAME.
pub fn split_prefix(name: &str) -> Option<(&str, usize)> {
    let (series, k) = name.split_once('@')?;
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let k: usize = k.parse().ok().filter(|&k| k >= 1)?;
    (!series.is_empty() && !series.contains('@')).then_some((series, k))
}

/// Declared here, kept with every comparison in results.json.
pub use crate::schema::Better;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSpec {
    /// Lower when not given (a metric with `compare = false` has no good
    /// direction).
    #[serde(default = "default_better")]
    pub better: Better,
    /// Smallest change, in percent, worth calling improved or regressed.
    #[serde(default = "default_min_effect")]
    pub min_effect_pct: f64,
    /// Wanted precision: half the 95% CI of each sample's median, in percent
    /// of the median. Reported as met or not; the benchmark's own stopping
    /// rule (its arguments) decides how hard it tries.
    #[serde(default)]
    pub target_ci_pct: Option<f64>,
    /// `false`: reported (samples, median, CI) but never compared, neither
    /// base vs series nor in a `[[within]]` pair: context for other
    /// metrics, not a quantity a change of the kernel should move, e.g. the
    /// share of benchmark samples that landed on one CPU.
    #[serde(default = "default_compare")]
    pub compare: bool,
    /// The statistic comparisons use: this quantile of the samples, per
    /// boot and pooled (0.5, the median, unless given). A low quantile
    /// (0.1) for a latency whose noise only ever adds time: on a shared
    /// host the slow episodes move a boot's median by up to 1.8x while
    /// its 10th percentile stays within a few percent (seccomp notify
    /// under TCG, A/A runs: docs/measurements.md).
    #[serde(default)]
    pub quantile: Option<f64>,
    /// Whether the boots could have seen an effect at all: judged only
    /// when the median of another metric of the same cells (one value a
    /// boot) is below a bound on both sides; else the comparison is
    /// `cannot-compare`, "no power on this host", with that figure.
    #[serde(default)]
    pub power: Option<Power>,
    /// What code layout alone moves this metric by, in percent, measured
    /// by layout twins (a function nothing calls, added to a source file)
    /// against their base. Between two kernel images, a significant change
    /// is called improved or regressed only when its CI lies beyond it;
    /// inside, it is `too-noisy` with the bound as its reason, since the
    /// series' code cannot be told from where its code landed. Boots of one
    /// image (`[[within]]`, an A/A of `base~aa`) are not held to it.
    #[serde(default)]
    pub layout_pct: Option<f64>,
}

/// `power = { metric = "...", below = X }` of a `[metric]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Power {
    pub metric: String,
    pub below: f64,
    /// What a figure at or above `below` means, for the reason shown.
    #[serde(default)]
    pub why: Option<String>,
}

fn default_min_effect() -> f64 {
    5.0
}
fn default_better() -> Better {
    Better::Lower
}
fn default_compare() -> bool {
    true
}

/// `[[across]]`: metrics starting with `metrics` of a cell on
/// `base_config` against the same kernel/variant/arch on `new_config`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Across {
    pub base_config: String,
    pub new_config: String,
    pub metrics: String,
    #[serde(default)]
    pub reference: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Within {
    /// Metrics named `<base><suffix>` are compared with `<new><suffix>`.
    pub base: String,
    pub new: String,
    /// What the claim being checked says (a seed's figure), shown beside
    /// the measured change in the summary.
    #[serde(default)]
    pub reference: Option<String>,
    /// `[within.split]`: compare the pair separately in the boots of each
    /// of two host states, told apart by another metric of the cell.
    #[serde(default)]
    pub split: Option<WithinSplit>,
}

/// `[[agree]]`: two metrics of one cell that time the same thing with two
/// tools (the series' own perf bench and seccomp_notify, both one user
/// notification's round trip). Medians more than `factor` apart (either
/// way) mean one tool does not measure what it says: said in the answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agree {
    pub a: String,
    pub b: String,
    /// How far apart the two medians may be, as a ratio (> 1).
    pub factor: f64,
    /// What the two measure, said beside a disagreement.
    #[serde(default)]
    pub what: Option<String>,
}

/// `[within.split]`: a pair whose true difference depends on the host (sync
/// vs default mode saves a cross-CPU wakeup, which a shared TCG host
/// charges 2-5 us for or 15-18 us, in phases of minutes) is judged apart in
/// the boots where `metric` (its per-boot median) is at least `at`, and in
/// those where it is below. A pooled verdict over a mixture of both would
/// change with how many boots each phase got. The state at or above `at`
/// is the one the pair's claim needs: while no boot of a cell has reached
/// it, `matrix` boots the cell's group again (up to `run.max_boots`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithinSplit {
    pub metric: String,
    pub at: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    pub arches: Vec<Spanned<String>>,
    pub configs: Vec<Spanned<String>>,
    pub tests: Vec<Spanned<String>>,
    #[serde(default = "default_smp")]
    pub smp: u32,
    #[serde(default = "default_memory")]
    pub memory_mb: u32,
    #[serde(default = "default_cell_timeout")]
    pub cell_timeout_s: u64,
    /// QEMU runs per cell (same kernel and initramfs): benchmark samples are
    /// pooled by boot, and comparisons count boot-to-boot spread.
    #[serde(default = "default_boots")]
    pub boots: u32,
    /// Up to this many boots for compared cells whose comparison is still
    /// too noisy to judge after `boots` (runner::schedule::undecided): 3
    /// more a side at a time, interleaved, until every comparison of the
    /// group concludes. Default: `boots` (no boots added).
    #[serde(default)]
    pub max_boots: Option<u32>,
    /// `ARCH/CONFIG` targets built but never booted: `patchcheck` builds
    /// each at every patch; `bisect --builds ARCH` judges ARCH on the kernel's
    /// own configs (a build-only config such as tiny-clang not yet). The
    /// arch may be one no cell boots (i386).
    #[serde(default)]
    pub build_only: Vec<Spanned<String>>,
}
fn default_boots() -> u32 {
    1
}
fn default_smp() -> u32 {
    2
}
fn default_memory() -> u32 {
    1024
}
fn default_cell_timeout() -> u64 {
    600
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    pub source: Spanned<SourceSpec>,
    #[serde(default)]
    pub series: Vec<Spanned<String>>,
    #[serde(default)]
    pub selftests_from: Option<Spanned<String>>,
    /// The configs this kernel is built with; default: run.configs.
    #[serde(default)]
    pub configs: Vec<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Hash)]
#[serde(try_from = "RawSource")]
pub enum SourceSpec {
    /// A Debian `linux-source-X.Y` package: /usr/src/linux-source-X.Y.tar.xz.
    /// With a version, exactly that package, downloaded into the cache
    /// from `suite` (and its -updates and -security) unless the host has it
    /// installed: the same kernel on every host.
    Debian {
        package: String,
        version: Option<String>,
        suite: String,
    },
    /// A local tarball (any compression tar understands).
    Tarball(String),
    /// A local git tree and a revision in it.
    Git { path: String, rev: String },
    /// A tarball downloaded once into the cache and checked against its
    /// SHA-256 (`url` + `sha256`; `release = "X.Y.Z"` is kernel.org's
    /// tarball, its sum from kernel.org's list when not given).
    Download {
        url: String,
        sha256: Option<String>,
        release: Option<String>,
    },
}

/// The suite a pinned Debian package is looked for in by default.
pub const DEBIAN_SUITE: &str = "bookworm";

/// kernel.org's tarball directory (`KMATRIX_KERNEL_ORG` overrides it).
pub fn kernel_org() -> String {
    std::env::var("KMATRIX_KERNEL_ORG")
        .unwrap_or_else(|_| "https://cdn.kernel.org/pub/linux/kernel".into())
        .trim_end_matches('/')
        .to_string()
}

/// A `release` version's tarball URL: `v6.x/linux-6.6.63.tar.xz`.
pub fn release_url(version: &str) -> Option<String> {
    let major = version.split('.').next()?;
    let ok = version.split('.').count() >= 2
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| format!("{}/v{major}.x/linux-{version}.tar.xz", kernel_org()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    debian: Option<String>,
    version: Option<String>,
    suite: Option<String>,
    tarball: Option<String>,
    git: Option<RawGit>,
    release: Option<String>,
    url: Option<String>,
    sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGit {
    path: String,
    rev: String,
}

impl TryFrom<RawSource> for SourceSpec {
    type Error = String;
    fn try_from(r: RawSource) -> Result<Self, String> {
        let kinds = [
            r.debian.is_some(),
            r.tarball.is_some(),
            r.git.is_some(),
            r.release.is_some(),
            r.url.is_some(),
        ];
        let what = "expected one of debian, tarball, git, release or url";
        match kinds.iter().filter(|k| **k).count() {
            0 => return Err(format!("source: {what}")),
            1 => {}
            _ => return Err(format!("source: more than one kind of source; {what}")),
        }
        let only = |allowed: &[&str]| -> Result<(), String> {
            for (key, set) in [
                ("version", r.version.is_some()),
                ("suite", r.suite.is_some()),
                ("sha256", r.sha256.is_some()),
            ] {
                if set && !allowed.contains(&key) {
                    return Err(format!(
                        "source: `{key}` does not apply to this kind of source"
                    ));
                }
            }
            Ok(())
        };
        if let Some(package) = r.debian {
            only(&["version", "suite"])?;
            return Ok(SourceSpec::Debian {
                package,
                version: r.version,
                suite: r.suite.unwrap_or_else(|| DEBIAN_SUITE.into()),
            });
        }
        if let Some(t) = r.tarball {
            only(&[])?;
            return Ok(SourceSpec::Tarball(t));
        }
        if let Some(g) = r.git {
            only(&[])?;
            return Ok(SourceSpec::Git {
                path: g.path,
                rev: g.rev,
            });
        }
        if let Some(rel) = r.release {
            only(&["sha256"])?;
            let url = release_url(&rel).ok_or_else(|| {
                format!("source: release `{rel}` is not a kernel version like 6.6.63")
            })?;
            return Ok(SourceSpec::Download {
                url,
                sha256: r.sha256,
                release: Some(rel),
            });
        }
        only(&["sha256"])?;
        let url = r.url.unwrap();
        if r.sha256.is_none() {
            return Err(format!(
                "source: url `{url}` needs its sha256 (the download is checked against it)"
            ));
        }
        Ok(SourceSpec::Download {
            url,
            sha256: r.sha256,
            release: None,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    /// Directory of patch files; applied in the order of its `series` file,
    /// or in file-name order when there is none.
    pub dir: String,
    /// Only the first N patches: the variants a sweep or a bisect makes
    /// (`NAME@N`). Not a matrix.toml key.
    #[serde(skip)]
    pub take: Option<usize>,
    /// Where the series came from when it was fetched from the mailing
    /// list (`--lore`). Not a matrix.toml key.
    #[serde(skip)]
    pub origin: Option<crate::schema::SeriesOrigin>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSpec {
    /// A make target that writes the starting .config (tinyconfig, defconfig).
    pub base: String,
    #[serde(default)]
    pub fragments: Vec<String>,
    #[serde(default)]
    pub arch_fragments: BTreeMap<Spanned<String>, Vec<String>>,
    /// QEMU `-smp` for this config's cells (possible CPUs); default run.smp.
    #[serde(default)]
    pub smp: Option<u32>,
    /// Extra kernel parameters for this config's cells (e.g. `maxcpus=2`,
    /// which with a large `smp` gives many possible and few online CPUs).
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// The tests this config's cells run (and whose options it gets);
    /// default: run.tests.
    #[serde(default)]
    pub tests: Option<Vec<Spanned<String>>>,
    /// Build with clang and the LLVM tools (`make LLVM=1`) instead of the
    /// arch's gcc; set-up then installs clang and lld.
    #[serde(default)]
    pub llvm: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestKind {
    /// A kselftest program built from the kernel tree; TAP/KTAP output.
    Kselftest,
    /// A guest program from rootfs/ printing METRIC/SKIP lines.
    Bench,
    /// A busybox sh command run in the guest; passes when it exits 0.
    Shell,
    /// Several programs built from a kernel tree directory and run as
    /// cases (each invocation one case, passed by its exit status): for
    /// selftests that print no TAP (rseq).
    Programs,
    /// `perf bench` from the cell's own tree: its `tools/perf` built
    /// static for the guest arch, each case one `perf` command line, run
    /// `rounds` times in turn; each case's usecs/op is its metric.
    Perf,
}

/// `kind = "programs"`: one program of the test.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    pub name: String,
    /// C files in the test's `dir`.
    pub sources: Vec<String>,
    #[serde(default)]
    pub cflags: Vec<String>,
    /// Kconfig symbols the program is about: where the tree has none of
    /// them, it is not built and its cases are skipped with that reason.
    #[serde(default)]
    pub needs: Vec<String>,
}

/// `kind = "programs"`: one case, a busybox sh command line run in the
/// test's directory (the programs are there).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    pub name: String,
    pub run: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    pub kind: TestKind,
    /// kselftest: directory inside the kernel tree.
    #[serde(default)]
    pub dir: Option<String>,
    /// kselftest: C files in `dir` linked into one program named after the first.
    #[serde(default)]
    pub sources: Vec<String>,
    /// bench: C file in this repository.
    #[serde(default)]
    pub source: Option<String>,
    /// shell: the command (busybox sh).
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub libs: Vec<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Kconfig lines this test needs beyond the kselftest's own `config`.
    #[serde(default)]
    pub config: Vec<Spanned<String>>,
    /// Per-test timeout in the guest; default: the kselftest `settings`
    /// file's timeout, else 180 s.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Kconfig symbols this test is about (e.g. `CONFIG_SCHED_MM_CID`, a
    /// def_bool that cannot be requested): a tree without the symbol skips
    /// the test with that reason; a tree that has it but left it off is a
    /// config error.
    #[serde(default)]
    pub needs: Vec<String>,
    /// Run in the first N boots of a cell only (correctness tests whose
    /// result another boot would not change, but whose time it would);
    /// default: every boot.
    #[serde(default)]
    pub boots: Option<u32>,
    /// kselftest/programs: extra include directories, relative to the tree.
    #[serde(default)]
    pub includes: Vec<String>,
    /// kind = "programs": the programs and the cases that run them.
    #[serde(default)]
    pub programs: Vec<ProgramSpec>,
    #[serde(default)]
    pub cases: Vec<CaseSpec>,
    /// kind = "perf": how many times each case runs in a boot, in turn
    /// (one sample a run); default 5.
    #[serde(default)]
    pub rounds: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedOutcome {
    Pass,
    Fail,
    Skip,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Glob over cell ids; `*` matches one path component.
    pub cell: String,
    pub test: Spanned<String>,
    #[serde(default)]
    pub case: Option<String>,
    pub outcome: ExpectedOutcome,
    pub reason: String,
}

/// `[[known]]`: a crash of the matching cells whose splat matches `splat`
/// (a regex over the splat evidence) is expected: the cell's outcome stays
/// `crash`, with the reason beside it, and the run is as expected.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Known {
    pub cell: String,
    pub splat: String,
    pub reason: String,
}

/// One unit of work: a kernel tree variant, built for one arch and config,
/// booted once, running every selected test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub kernel: String,
    /// `base` or a series name.
    pub variant: String,
    pub arch: Arch,
    pub config: String,
    pub tests: Vec<String>,
}

impl Cell {
    pub fn id(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.kernel, self.variant, self.arch, self.config
        )
    }
}

impl fmt::Display for Cell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

#[derive(Debug, Default, Clone)]
pub struct Filters {
    pub arch: Vec<String>,
    pub kernel: Vec<String>,
    pub variant: Vec<String>,
    pub test: Vec<String>,
    pub cell: Vec<String>,
}

/// What a selection may name (`Matrix::names`): the matrix's arches,
/// kernels, variants, configs and tests. The CLI adjusts it for what its
/// source flags will make of the matrix before checking its flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Names {
    pub arch: Vec<String>,
    pub kernel: Vec<String>,
    pub variant: Vec<String>,
    pub config: Vec<String>,
    pub test: Vec<String>,
}

/// `--WHAT VALUE` is one of `known`, else an error naming the flag and
/// listing the known values.
pub fn known_value(what: &str, value: &str, known: &[String]) -> Result<()> {
    if known.iter().any(|k| k == value) {
        return Ok(());
    }
    bail!(
        "--{what} {value}: not in the matrix; known: {}",
        known.join(", ")
    )
}

impl Names {
    /// Every filter value is known; every `--cell` glob has four
    /// components, each `*` or a known value.
    pub fn check(&self, f: &Filters) -> Result<()> {
        for (what, wanted, known) in [
            ("arch", &f.arch, &self.arch),
            ("kernel", &f.kernel, &self.kernel),
            ("test", &f.test, &self.test),
            ("variant", &f.variant, &self.variant),
        ] {
            for w in wanted {
                known_value(what, w, known)?;
            }
        }
        for g in &f.cell {
            let parts: Vec<&str> = g.split('/').collect();
            if parts.len() != 4 {
                bail!("--cell {g}: expected kernel/variant/arch/config, `*` for any one");
            }
            let places = [
                ("kernel", &self.kernel),
                ("variant", &self.variant),
                ("arch", &self.arch),
                ("config", &self.config),
            ];
            for (part, (what, known)) in parts.iter().zip(places) {
                if *part != "*" && !known.iter().any(|k| k == part) {
                    bail!(
                        "--cell {g}: no {what} `{part}` in the matrix; known: {}",
                        known.join(", ")
                    );
                }
            }
        }
        Ok(())
    }
}

/// The ranges of matrix.toml's numbers (docs/matrix-toml.md states them);
/// a flag that overrides one of them takes the same range.
pub const SMP: RangeInclusive<u32> = 1..=64;
/// `[config] smp`: possible CPUs (with `maxcpus=`, more than are online).
pub const CONFIG_SMP: RangeInclusive<u32> = 1..=512;
pub const MEMORY_MB: RangeInclusive<u32> = 128..=65_536;
/// Seconds of QEMU for one boot, a day at most (`--cell-timeout` too).
pub const CELL_TIMEOUT_S: RangeInclusive<u64> = 1..=86_400;
/// Seconds a test may take in the guest (x3 under TCG), a day at most.
pub const TEST_TIMEOUT_S: RangeInclusive<u64> = 1..=86_400;
/// Boots of a cell: run.boots, run.max_boots, `[test] boots`, and the
/// `--boots`/`--max-boots` flags of every command.
pub const BOOTS: RangeInclusive<u32> = 1..=50;
/// `[test.*] rounds` (kind = "perf").
pub const ROUNDS: RangeInclusive<u32> = 1..=100;
/// `[metric] min_effect_pct`, a change in percent.
pub const MIN_EFFECT_PCT: RangeInclusive<f64> = 0.0..=1000.0;

/// What a numeric key expects, for serde's refusals of a value of the
/// wrong type (`-1`, `nan`, too large): by the key on `offset`'s line and
/// the table header above it.
fn number_at(text: &str, offset: usize) -> Option<String> {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line.split_once('=')?.0.trim();
    let header = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))?;
    let table = header
        .trim_start_matches('[')
        .split(['.', ']'])
        .next()?
        .trim();
    let (name, range) = match (table, key) {
        ("run", "smp") => ("run.smp", format!("{}..={} CPUs", SMP.start(), SMP.end())),
        ("run", "memory_mb") => (
            "run.memory_mb",
            format!("{}..={} MB", MEMORY_MB.start(), MEMORY_MB.end()),
        ),
        ("run", "cell_timeout_s") => (
            "run.cell_timeout_s",
            format!(
                "{}..={} seconds",
                CELL_TIMEOUT_S.start(),
                CELL_TIMEOUT_S.end()
            ),
        ),
        ("run", "boots") => ("run.boots", format!("{}..={}", BOOTS.start(), BOOTS.end())),
        ("run", "max_boots") => ("run.max_boots", format!("run.boots..={}", BOOTS.end())),
        ("config", "smp") => (
            "[config] smp",
            format!("{}..={} CPUs", CONFIG_SMP.start(), CONFIG_SMP.end()),
        ),
        ("test", "timeout_s") => (
            "[test] timeout_s",
            format!(
                "{}..={} seconds",
                TEST_TIMEOUT_S.start(),
                TEST_TIMEOUT_S.end()
            ),
        ),
        ("test", "boots") => (
            "[test] boots",
            format!("{}..={}", BOOTS.start(), BOOTS.end()),
        ),
        ("metric", "min_effect_pct") => (
            "[metric] min_effect_pct",
            format!(
                "{}..={} (percent)",
                MIN_EFFECT_PCT.start(),
                MIN_EFFECT_PCT.end()
            ),
        ),
        ("metric", "target_ci_pct") => {
            ("[metric] target_ci_pct", "a percentage in (0, 100)".into())
        }
        ("metric", "quantile") => ("[metric] quantile", "a number in (0, 1)".into()),
        _ => return None,
    };
    Some(format!("{name}: expected {range}"))
}

/// `NAME = v` in its range, else an error at its value saying the range.
fn in_range<T: PartialOrd + fmt::Display>(
    at: &Spans,
    keys: &[Seg],
    name: &str,
    v: T,
    range: &RangeInclusive<T>,
    unit: &str,
) -> Result<()> {
    if range.contains(&v) {
        return Ok(());
    }
    Err(at.err_at(
        keys,
        format!(
            "{name} = {v} is out of range, expected {}..={}{unit}",
            range.start(),
            range.end()
        ),
    ))
}

/// The first entry of a list that repeats an earlier one: its index.
fn repeated<'s>(items: impl IntoIterator<Item = &'s str>) -> Option<(usize, &'s str)> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .enumerate()
        .find(|(_, s)| !seen.insert(*s))
}

/// A list of names with each one at most once; the error is at the repeat.
fn once(at: &Spans, list: &[Spanned<String>], what: &str, why: &str) -> Result<()> {
    match repeated(list.iter().map(|s| s.get_ref().as_str())) {
        Some((i, s)) => Err(at.err(
            list[i].span(),
            format!("{what} lists `{s}` twice{why}; expected each once"),
        )),
        None => Ok(()),
    }
}

/// The same for a list without spans of its own, found by key path.
fn once_at(at: &Spans, keys: &[Seg], list: &[String], what: &str) -> Result<()> {
    match repeated(list.iter().map(String::as_str)) {
        Some((i, s)) => {
            let mut p = keys.to_vec();
            p.push(Seg::Index(i));
            Err(at.err_at(&p, format!("{what} lists `{s}` twice; expected each once")))
        }
        None => Ok(()),
    }
}

/// A kernel, series, config or test name: part of cell ids, of globs, and
/// of paths in the cache and the guest.
fn bad_name(name: &str) -> bool {
    name.is_empty()
        || name
            .chars()
            .any(|c| c == '/' || c == '*' || c.is_whitespace() || c.is_control())
}

const NAME_RULE: &str = "expected a name without `/`, `*` or white space";

impl Matrix {
    /// Parses and validates; errors name the file, line and column and what
    /// was expected. Reads nothing but `text` (the files it names are
    /// checked by `plan::files`).
    pub fn parse(path: &str, text: &str) -> Result<Matrix> {
        let m: Matrix = match toml::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let at = Spans::new(path, text);
                let offset = e.span().map_or(0, |s| s.start);
                let hint = number_at(text, offset)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                let mut msg = e.message().trim_end().to_string();
                if msg.is_empty() {
                    // toml says nothing of some characters (NUL, controls).
                    let c = text.get(offset..).and_then(|t| t.chars().next());
                    msg = match c {
                        Some(c) => format!("unexpected character {c:?}, expected TOML"),
                        None => "unexpected end of the file, expected TOML".to_string(),
                    };
                }
                bail!("{}: {msg}{hint}", at.place(offset));
            }
        };
        let mut m = m;
        m.validate(&Spans::new(path, text))?;
        m.add_prefix_series();
        Ok(m)
    }

    /// A kernel's `NAME@K` (validated): the first K patches of series NAME,
    /// as a series of its own, as sweep and bisect name them.
    fn add_prefix_series(&mut self) {
        let listed: Vec<String> = self
            .kernel
            .values()
            .flat_map(|k| k.series.iter().map(|s| s.get_ref().clone()))
            .collect();
        for name in listed {
            if let Some((series, k)) = split_prefix(&name) {
                let dir = self.series[series].dir.clone();
                let origin = self.series[series].origin.clone();
                self.series.insert(
                    name.clone(),
                    Series {
                        dir,
                        take: Some(k),
                        origin,
                    },
                );
            }
        }
    }

    /// Checks what serde cannot: names that refer to other tables, ranges,
    /// repeats, patterns. The first problem found is the error.
    fn validate(&self, at: &Spans) -> Result<()> {
        self.validate_run(at)?;
        self.validate_series(at)?;
        self.validate_kernels(at)?;
        self.validate_configs(at)?;
        self.validate_tests(at)?;
        self.validate_expectations(at)?;
        self.validate_comparisons(at)?;
        if self.cells(&Filters::default()).is_err() {
            return Err(at.err_at(
                keys!["run"],
                "the matrix makes no cell: expected a kernel with a config (its `configs`, else run.configs) whose tests (its `tests`, else run.tests) are not empty",
            ));
        }
        Ok(())
    }

    /// [run]: the arches, configs and tests it names, and its numbers.
    fn validate_run(&self, at: &Spans) -> Result<()> {
        let run = &self.run;
        if run.arches.is_empty() {
            return Err(at.err_at(
                keys!["run", "arches"],
                format!(
                    "run.arches is empty, expected some of {:?}",
                    Arch::guest_names()
                ),
            ));
        }
        for a in &run.arches {
            match Arch::parse(a.get_ref()) {
                Some(arch) if !arch.info().boots => {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "run.arches: {arch} is built, never booted (its guest programs would need a {arch} C library); name it in run.build_only as \"{arch}/CONFIG\" instead"
                        ),
                    ))
                }
                Some(_) => {}
                None => {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "unknown arch `{}`, expected one of {:?}",
                            a.get_ref(),
                            Arch::guest_names()
                        ),
                    ))
                }
            }
        }
        once(
            at,
            &run.arches,
            "run.arches",
            " (each cell would run twice)",
        )?;
        for c in &run.configs {
            if !self.config.contains_key(c.get_ref()) {
                return Err(at.err(
                    c.span(),
                    format!(
                        "config `{}` is not defined in a [config.{}] table",
                        c.get_ref(),
                        c.get_ref()
                    ),
                ));
            }
        }
        once(
            at,
            &run.configs,
            "run.configs",
            " (each cell would run twice)",
        )?;
        for t in &run.tests {
            if !self.test.contains_key(t.get_ref()) {
                return Err(at.err(
                    t.span(),
                    format!(
                        "test `{}` is not defined in a [test.{}] table",
                        t.get_ref(),
                        t.get_ref()
                    ),
                ));
            }
        }
        once(at, &run.tests, "run.tests", " (it would run twice a boot)")?;
        for t in &run.build_only {
            let (arch, config) = t.get_ref().split_once('/').unwrap_or((t.get_ref(), ""));
            if Arch::parse(arch).is_none() {
                return Err(at.err(
                    t.span(),
                    format!(
                        "run.build_only: `{}` names no arch, expected ARCH/CONFIG with ARCH one of {:?}",
                        t.get_ref(),
                        Arch::names()
                    ),
                ));
            }
            if !self.config.contains_key(config) {
                return Err(at.err(
                    t.span(),
                    format!(
                        "run.build_only: `{}` names no config, expected ARCH/CONFIG with CONFIG one of {:?}",
                        t.get_ref(),
                        self.config.keys().collect::<Vec<_>>()
                    ),
                ));
            }
        }
        once(
            at,
            &run.build_only,
            "run.build_only",
            " (it would be built twice a patch)",
        )?;
        in_range(at, keys!["run", "smp"], "run.smp", run.smp, &SMP, " CPUs")?;
        in_range(
            at,
            keys!["run", "memory_mb"],
            "run.memory_mb",
            run.memory_mb,
            &MEMORY_MB,
            " MB",
        )?;
        in_range(
            at,
            keys!["run", "cell_timeout_s"],
            "run.cell_timeout_s",
            run.cell_timeout_s,
            &CELL_TIMEOUT_S,
            " seconds",
        )?;
        in_range(
            at,
            keys!["run", "boots"],
            "run.boots",
            run.boots,
            &BOOTS,
            "",
        )?;
        if let Some(mb) = run.max_boots {
            if mb < run.boots || mb > *BOOTS.end() {
                return Err(at.err_at(
                    keys!["run", "max_boots"],
                    format!(
                        "run.max_boots = {mb} is out of range, expected run.boots ({})..={}",
                        run.boots,
                        BOOTS.end()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [kernel.*]: names, the series and configs they name, their sources.
    fn validate_kernels(&self, at: &Spans) -> Result<()> {
        if self.kernel.is_empty() {
            return Err(at.err_at(
                keys!["kernel"],
                "no kernel: expected a [kernel.NAME] table with a `source`",
            ));
        }
        for (name, k) in &self.kernel {
            if bad_name(name) || name == "base" {
                return Err(at.err_key(
                    keys!["kernel", name],
                    format!("kernel name `{name}`: {NAME_RULE}, and not `base`"),
                ));
            }
            for s in &k.series {
                if let Some((series, _)) = split_prefix(s.get_ref()) {
                    if !self.series.contains_key(series) {
                        return Err(at.err(
                            s.span(),
                            format!(
                                "`{}` names the first patches of series `{series}`, which is not defined in a [series.\"{series}\"] table",
                                s.get_ref()
                            ),
                        ));
                    }
                } else if s.get_ref().contains('@') {
                    return Err(at.err(
                        s.span(),
                        format!(
                            "`{}`: expected a series name, or NAME@K for its first K patches (K from 1)",
                            s.get_ref()
                        ),
                    ));
                } else if !self.series.contains_key(s.get_ref()) {
                    return Err(at.err(
                        s.span(),
                        format!(
                            "series `{}` is not defined in a [series.\"{}\"] table",
                            s.get_ref(),
                            s.get_ref()
                        ),
                    ));
                }
            }
            once(
                at,
                &k.series,
                &format!("kernel.{name}.series"),
                " (each of its cells would run twice)",
            )?;
            if let Some(from) = &k.selftests_from {
                if !k.series.iter().any(|s| s.get_ref() == from.get_ref())
                    && from.get_ref() != "base"
                {
                    return Err(at.err(
                        from.span(),
                        format!(
                            "selftests_from = `{}`: expected `base` or one of this kernel's series",
                            from.get_ref()
                        ),
                    ));
                }
            }
            for c in &k.configs {
                if !self.config.contains_key(c.get_ref()) {
                    return Err(at.err(
                        c.span(),
                        format!(
                            "config `{}` is not defined in a [config.{}] table",
                            c.get_ref(),
                            c.get_ref()
                        ),
                    ));
                }
            }
            once(
                at,
                &k.configs,
                &format!("kernel.{name}.configs"),
                " (each of its cells would run twice)",
            )?;
            let bad_source = match k.source.get_ref() {
                SourceSpec::Debian { package, .. } if !package.starts_with("linux-source-") => {
                    Some(format!(
                        "debian source `{package}`: expected a linux-source-X.Y package"
                    ))
                }
                SourceSpec::Download {
                    sha256: Some(sum), ..
                } if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) => Some(
                    format!("source sha256 `{sum}`: expected 64 hex digits"),
                ),
                SourceSpec::Tarball(p) if p.trim().is_empty() => {
                    Some("tarball source: expected the path of a kernel tarball".into())
                }
                SourceSpec::Git { path, rev } if path.trim().is_empty() || rev.trim().is_empty() => {
                    Some(format!(
                        "git source `{path}` at `{rev}`: expected the path of a git tree and a revision"
                    ))
                }
                _ => None,
            };
            if let Some(msg) = bad_source {
                return Err(at.err(k.source.span(), msg));
            }
        }
        Ok(())
    }

    /// [series.*]: names (variant names, hence part of cell ids) and dirs.
    fn validate_series(&self, at: &Spans) -> Result<()> {
        for (name, s) in &self.series {
            if bad_name(name) || name == "base" || name == AA_VARIANT || name.contains('@') {
                return Err(at.err_key(
                    keys!["series", name],
                    format!(
                        "series name `{name}`: {NAME_RULE} or `@`, and not `base` (it names a variant)"
                    ),
                ));
            }
            if s.dir.trim().is_empty() {
                return Err(at.err_at(
                    keys!["series", name, "dir"],
                    format!("[series.{name}] dir is empty, expected a directory of patch files"),
                ));
            }
        }
        Ok(())
    }

    /// [config.*]: smp, the tests and arch fragments they name.
    fn validate_configs(&self, at: &Spans) -> Result<()> {
        for (name, c) in &self.config {
            if bad_name(name) {
                return Err(at.err_key(
                    keys!["config", name],
                    format!("config name `{name}`: {NAME_RULE}"),
                ));
            }
            if c.base.trim().is_empty() {
                return Err(at.err_at(
                    keys!["config", name, "base"],
                    format!("[config.{name}] base is empty, expected a make target (tinyconfig, defconfig)"),
                ));
            }
            if let Some(smp) = c.smp {
                in_range(
                    at,
                    keys!["config", name, "smp"],
                    &format!("[config.{name}] smp"),
                    smp,
                    &CONFIG_SMP,
                    " CPUs",
                )?;
            }
            if let Some(tests) = &c.tests {
                if tests.is_empty() {
                    return Err(at.err_at(
                        keys!["config", name, "tests"],
                        format!("config.{name}.tests is empty, expected one or more tests (without the key: run.tests)"),
                    ));
                }
                for t in tests {
                    if !self.test.contains_key(t.get_ref()) {
                        return Err(at.err(
                            t.span(),
                            format!(
                                "config.{name}.tests: test `{}` is not defined in a [test.{}] table",
                                t.get_ref(),
                                t.get_ref()
                            ),
                        ));
                    }
                }
                once(
                    at,
                    tests,
                    &format!("config.{name}.tests"),
                    " (it would run twice a boot)",
                )?;
            }
            once_at(
                at,
                keys!["config", name, "fragments"],
                &c.fragments,
                &format!("config.{name}.fragments"),
            )?;
            for (a, frags) in &c.arch_fragments {
                if Arch::parse(a.get_ref()).is_none() {
                    return Err(at.err(
                        a.span(),
                        format!(
                            "config.{name}.arch_fragments: unknown arch `{}`, expected one of {:?}",
                            a.get_ref(),
                            Arch::names()
                        ),
                    ));
                }
                once_at(
                    at,
                    keys!["config", name, "arch_fragments", a.get_ref()],
                    frags,
                    &format!("config.{name}.arch_fragments.{}", a.get_ref()),
                )?;
            }
        }
        Ok(())
    }

    /// [test.*]: what each kind needs, Kconfig symbols, numbers, repeats.
    fn validate_tests(&self, at: &Spans) -> Result<()> {
        for (name, t) in &self.test {
            let here = keys!["test", name];
            if bad_name(name) {
                return Err(at.err_key(here, format!("test name `{name}`: {NAME_RULE}")));
            }
            let missing = match t.kind {
                TestKind::Kselftest if t.dir.is_none() || t.sources.is_empty() => {
                    Some("kind = \"kselftest\" needs `dir` and `sources`")
                }
                TestKind::Bench if t.source.is_none() => Some("kind = \"bench\" needs `source`"),
                TestKind::Shell if t.command.is_none() => Some("kind = \"shell\" needs `command`"),
                TestKind::Programs
                    if t.dir.is_none() || t.programs.is_empty() || t.cases.is_empty() =>
                {
                    Some("kind = \"programs\" needs `dir`, `programs` and `cases`")
                }
                TestKind::Perf if t.dir.is_none() || t.sources.is_empty() || t.cases.is_empty() => {
                    Some("kind = \"perf\" needs `dir` (tools/perf), `sources` (the files its benches are in) and `cases`")
                }
                _ => None,
            };
            if let Some(msg) = missing {
                return Err(at.err_key(here, format!("[test.{name}] {msg}")));
            }
            test_needs(at, name, t)?;
            if let Some(b) = t.boots {
                in_range(
                    at,
                    keys!["test", name, "boots"],
                    &format!("[test.{name}] boots"),
                    b,
                    &BOOTS,
                    " (the first N boots of a cell; a test that never runs is left out of the tests)",
                )?;
            }
            if let Some(r) = t.rounds {
                if t.kind != TestKind::Perf {
                    return Err(at.err_key(
                        keys!["test", name, "rounds"],
                        format!("[test.{name}] rounds: only kind = \"perf\" has rounds"),
                    ));
                }
                in_range(
                    at,
                    keys!["test", name, "rounds"],
                    &format!("[test.{name}] rounds"),
                    r,
                    &ROUNDS,
                    " (runs of each case in a boot)",
                )?;
            }
            if let Some(s) = t.timeout_s {
                in_range(
                    at,
                    keys!["test", name, "timeout_s"],
                    &format!("[test.{name}] timeout_s"),
                    s,
                    &TEST_TIMEOUT_S,
                    " seconds",
                )?;
            }
            test_config(at, name, t)?;
            once_at(
                at,
                keys!["test", name, "sources"],
                &t.sources,
                &format!("[test.{name}] sources"),
            )?;
            let programs: Vec<String> = t.programs.iter().map(|p| p.name.clone()).collect();
            let cases: Vec<String> = t.cases.iter().map(|c| c.name.clone()).collect();
            for (what, names) in [("programs", &programs), ("cases", &cases)] {
                if let Some((i, n)) = repeated(names.iter().map(String::as_str)) {
                    return Err(at.err_at(
                        keys!["test", name, what, i, "name"],
                        format!(
                            "[test.{name}] {what}: `{n}` is named twice; expected each name once"
                        ),
                    ));
                }
                if let Some(i) = names.iter().position(|n| bad_name(n)) {
                    return Err(at.err_at(
                        keys!["test", name, what, i, "name"],
                        format!("[test.{name}] {what}: name `{}`: {NAME_RULE}", names[i]),
                    ));
                }
            }
            if let Some(i) = t.programs.iter().position(|p| p.sources.is_empty()) {
                return Err(at.err_at(
                    keys!["test", name, "programs", i, "sources"],
                    format!(
                        "[test.{name}] program `{}` has no sources, expected C files in `dir`",
                        t.programs[i].name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [[expect]] and [[known]]: tests, cell patterns, splat regexes.
    fn validate_expectations(&self, at: &Spans) -> Result<()> {
        for (i, e) in self.expect.iter().enumerate() {
            if !self.test.contains_key(e.test.get_ref()) {
                return Err(at.err(
                    e.test.span(),
                    format!("expect: unknown test `{}`", e.test.get_ref()),
                ));
            }
            if e.cell.split('/').count() != 4 {
                return Err(at.err_at(
                    keys!["expect", i, "cell"],
                    format!("expect.cell `{}`: expected kernel/variant/arch/config (use * as a wildcard)", e.cell),
                ));
            }
        }
        for (i, k) in self.known.iter().enumerate() {
            if k.cell.split('/').count() != 4 {
                return Err(at.err_at(
                    keys!["known", i, "cell"],
                    format!("known.cell `{}`: expected kernel/variant/arch/config (use * as a wildcard)", k.cell),
                ));
            }
            if let Err(e) = regex::Regex::new(&k.splat) {
                return Err(at.err_at(
                    keys!["known", i, "splat"],
                    format!("known.splat `{}`: not a regex: {e}", k.splat),
                ));
            }
        }
        Ok(())
    }

    /// [[across]], [[within]] and [metric.*]: what is compared, and how.
    fn validate_comparisons(&self, at: &Spans) -> Result<()> {
        for (i, a) in self.across.iter().enumerate() {
            for (key, c) in [
                ("base_config", &a.base_config),
                ("new_config", &a.new_config),
            ] {
                if !self.config.contains_key(c) {
                    return Err(at.err_at(
                        keys!["across", i, key],
                        format!("[[across]] config `{c}` is not defined in a [config.{c}] table"),
                    ));
                }
            }
            if a.base_config == a.new_config {
                return Err(at.err_at(
                    keys!["across", i, "new_config"],
                    format!(
                        "[[across]] compares config `{}` with itself, expected two configs",
                        a.new_config
                    ),
                ));
            }
        }
        for (i, w) in self.within.iter().enumerate() {
            if w.base == w.new {
                return Err(at.err_at(
                    keys!["within", i, "new"],
                    format!(
                        "[[within]] compares `{}` with itself, expected two metric prefixes",
                        w.new
                    ),
                ));
            }
            if let Some(sp) = &w.split {
                if sp.metric.is_empty() || !sp.at.is_finite() {
                    return Err(at.err_at(
                        keys!["within", i, "split"],
                        format!(
                            "[[within]] {} vs {}: [within.split] needs a metric name and a finite `at` (got `{}`, {})",
                            w.new, w.base, sp.metric, sp.at
                        ),
                    ));
                }
                if sp.metric.starts_with(&w.base) || sp.metric.starts_with(&w.new) {
                    return Err(at.err_at(
                        keys!["within", i, "split", "metric"],
                        format!(
                            "[[within]] {} vs {}: [within.split] metric `{}` is one of the pair's own metrics; split by another (the host's state)",
                            w.new, w.base, sp.metric
                        ),
                    ));
                }
            }
        }
        for (i, a) in self.agree.iter().enumerate() {
            if a.a.is_empty() || a.b.is_empty() || a.a == a.b {
                return Err(at.err_at(
                    keys!["agree", i, "b"],
                    format!(
                        "[[agree]] needs two different metric names (got `{}` and `{}`)",
                        a.a, a.b
                    ),
                ));
            }
            if !(a.factor.is_finite() && a.factor > 1.0) {
                return Err(at.err_at(
                    keys!["agree", i, "factor"],
                    format!(
                        "[[agree]] {} vs {}: factor = {} must be a ratio above 1 (2.0: the medians within 2x of each other)",
                        a.a, a.b, a.factor
                    ),
                ));
            }
        }
        for (name, m) in &self.metric {
            in_range(
                at,
                keys!["metric", name, "min_effect_pct"],
                &format!("[metric.{name}] min_effect_pct"),
                m.min_effect_pct,
                &MIN_EFFECT_PCT,
                " (percent)",
            )?;
            if let Some(t) = m.target_ci_pct.filter(|t| !(*t > 0.0 && *t < 100.0)) {
                return Err(at.err_at(
                    keys!["metric", name, "target_ci_pct"],
                    format!("[metric.{name}] target_ci_pct = {t} must be a percentage in (0, 100)"),
                ));
            }
            if let Some(q) = m.quantile.filter(|q| !(*q > 0.0 && *q < 1.0)) {
                return Err(at.err_at(
                    keys!["metric", name, "quantile"],
                    format!("[metric.{name}] quantile = {q} must be in (0, 1) (0.5: the median)"),
                ));
            }
            if let Some(l) = m.layout_pct.filter(|l| !(*l > 0.0 && *l < 100.0)) {
                return Err(at.err_at(
                    keys!["metric", name, "layout_pct"],
                    format!("[metric.{name}] layout_pct = {l} must be a percentage in (0, 100): what code layout alone moves the metric by"),
                ));
            }
            if let Some(p) = &m.power {
                if !p.below.is_finite() {
                    return Err(at.err_at(
                        keys!["metric", name, "power", "below"],
                        format!("[metric.{name}] power.below = {} is not a finite number, expected the bound of the power figure", p.below),
                    ));
                }
                if self.compared(&p.metric) {
                    return Err(at.err_at(
                        keys!["metric", name, "power", "metric"],
                        format!("[metric.{name}] power.metric `{}` is itself compared; declare it `compare = false` (a figure about the host, not the kernel)", p.metric),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The values `--arch`, `--kernel`, `--variant`, `--test`, `--config`
    /// and `--cell` may name: what this matrix has.
    pub fn names(&self) -> Names {
        let mut tests: Vec<String> = Vec::new();
        for c in self.config.keys() {
            for t in self.config_tests(c) {
                if !tests.contains(&t) {
                    tests.push(t);
                }
            }
        }
        let mut variants = vec!["base".to_string()];
        if self.aa {
            variants.push(AA_VARIANT.to_string());
        }
        variants.extend(self.series.keys().cloned());
        Names {
            arch: self
                .run
                .arches
                .iter()
                .map(|a| a.get_ref().clone())
                .collect(),
            kernel: self.kernel.keys().cloned().collect(),
            variant: variants,
            // The configs cells have: a build-only one (tiny-clang) is no
            // cell's.
            config: self
                .config
                .keys()
                .filter(|c| {
                    self.kernel
                        .keys()
                        .any(|k| self.kernel_configs(k).contains(c))
                })
                .cloned()
                .collect(),
            test: tests,
        }
    }

    /// Expands the matrix into cells, in build order, keeping those the
    /// filters select. Unknown filter values are errors, not empty runs.
    pub fn cells(&self, f: &Filters) -> Result<Vec<Cell>> {
        self.names().check(f)?;
        let arches: Vec<String> = self
            .run
            .arches
            .iter()
            .map(|a| a.get_ref().clone())
            .collect();

        let keep = |wanted: &[String], v: &str| wanted.is_empty() || wanted.iter().any(|w| w == v);
        let mut cells = Vec::new();
        for (kname, k) in &self.kernel {
            let mut vs = vec!["base".to_string()];
            if self.aa {
                vs.push(AA_VARIANT.to_string());
            }
            vs.extend(k.series.iter().map(|s| s.get_ref().clone()));
            for v in &vs {
                for a in &arches {
                    for c in self.kernel_configs(kname) {
                        let tests: Vec<String> = self
                            .config_tests(&c)
                            .into_iter()
                            .filter(|t| keep(&f.test, t))
                            .collect();
                        let cell = Cell {
                            kernel: kname.clone(),
                            variant: v.clone(),
                            arch: Arch::parse(a).expect("validated"),
                            config: c,
                            tests,
                        };
                        // A config none of whose tests is selected has
                        // nothing to run.
                        if !cell.tests.is_empty()
                            && keep(&f.kernel, kname)
                            && keep(&f.variant, v)
                            && keep(&f.arch, a)
                            && (f.cell.is_empty()
                                || f.cell.iter().any(|g| glob_match(g, &cell.id())))
                        {
                            cells.push(cell);
                        }
                    }
                }
            }
        }
        for g in &f.cell {
            if !cells.iter().any(|c| glob_match(g, &c.id())) {
                bail!("--cell {g}: matches no cell of the matrix (ids are kernel/variant/arch/config)");
            }
        }
        if cells.is_empty() {
            bail!("the filters select no cell");
        }
        Ok(cells)
    }

    /// `run.build_only`: the targets built but never booted, as (arch,
    /// config), in the file's order.
    pub fn build_only(&self) -> Vec<(Arch, String)> {
        self.run
            .build_only
            .iter()
            .filter_map(|t| {
                let (a, c) = t.get_ref().split_once('/')?;
                Some((Arch::parse(a)?, c.to_string()))
            })
            .collect()
    }

    /// Every arch a kernel of the matrix is built for: run.arches, then the
    /// build-only targets' arches.
    pub fn build_arches(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .run
            .arches
            .iter()
            .map(|a| a.get_ref().clone())
            .collect();
        for (a, _) in self.build_only() {
            if !all.iter().any(|x| x == a.name()) {
                all.push(a.name().to_string());
            }
        }
        all
    }

    /// The configs a kernel is built with: its own `configs`, else run.configs.
    pub fn kernel_configs(&self, kernel: &str) -> Vec<String> {
        let own = self
            .kernel
            .get(kernel)
            .map(|k| &k.configs)
            .filter(|c| !c.is_empty());
        own.unwrap_or(&self.run.configs)
            .iter()
            .map(|c| c.get_ref().clone())
            .collect()
    }

    /// The tests a config's cells run and whose Kconfig options the config
    /// gets: its own `tests`, else run.tests.
    pub fn config_tests(&self, config: &str) -> Vec<String> {
        self.config
            .get(config)
            .and_then(|c| c.tests.as_ref())
            .unwrap_or(&self.run.tests)
            .iter()
            .map(|t| t.get_ref().clone())
            .collect()
    }

    /// QEMU `-smp` of a config's cells.
    /// Whether a boot of the cell runs a benchmark (a `bench` or `perf`
    /// test): such a boot runs alone (`--jobs`).
    pub fn measures(&self, cell: &Cell) -> bool {
        cell.tests.iter().any(|t| {
            self.test
                .get(t)
                .is_some_and(|t| matches!(t.kind, TestKind::Bench | TestKind::Perf))
        })
    }

    pub fn config_smp(&self, config: &str) -> u32 {
        self.config
            .get(config)
            .and_then(|c| c.smp)
            .unwrap_or(self.run.smp)
    }

    /// (good direction, minimum effect %) for a metric; lower-is-better and
    /// 5% when nothing is declared.
    pub fn metric_spec(&self, name: &str) -> (Better, f64) {
        self.metric_decl(name)
            .map_or((Better::Lower, default_min_effect()), |m| {
                (m.better, m.min_effect_pct)
            })
    }

    /// The quantile comparisons of this metric use (0.5 unless declared).
    pub fn metric_quantile(&self, name: &str) -> f64 {
        self.metric_decl(name)
            .and_then(|m| m.quantile)
            .unwrap_or(0.5)
    }

    /// The test of `cell` that measured `metric`: the one whose name and a
    /// dot begin it (the longest such: `rseq_own.x` is rseq_own's).
    pub fn metric_test<'c>(&self, cell: &'c Cell, metric: &str) -> Option<&'c str> {
        cell.tests
            .iter()
            .filter(|t| {
                metric
                    .strip_prefix(t.as_str())
                    .is_some_and(|r| r.starts_with('.'))
            })
            .max_by_key(|t| t.len())
            .map(String::as_str)
    }

    /// Whether boot `boot` of `cell` measures `metric` again: its test is
    /// not limited to earlier boots (`[test] boots`).
    pub fn measured_in_boot(&self, cell: &Cell, metric: &str, boot: u32) -> bool {
        self.metric_test(cell, metric).is_some_and(|t| {
            self.test
                .get(t)
                .is_none_or(|spec| spec.boots.is_none_or(|b| boot <= b))
        })
    }

    /// Boots a cell gets out of `boots` asked for (run.boots or --boots):
    /// no more than its longest-running test wants, so a cell whose tests
    /// all stop after boot 3 (`[test] boots = 3`) is not booted a 4th time
    /// for nothing. A cell with no tests boots once.
    pub fn cell_boots(&self, cell: &Cell, boots: u32) -> u32 {
        let boots = boots.max(1);
        cell.tests
            .iter()
            .map(|t| {
                self.test
                    .get(t)
                    .and_then(|spec| spec.boots)
                    .map_or(boots, |b| b.min(boots))
            })
            .max()
            .unwrap_or(1)
    }

    /// The power figure this metric's comparisons need (`[metric] power`).
    pub fn metric_power(&self, name: &str) -> Option<&Power> {
        self.metric_decl(name).and_then(|m| m.power.as_ref())
    }

    /// What code layout alone moves this metric by (`[metric] layout_pct`).
    pub fn metric_layout(&self, name: &str) -> Option<f64> {
        self.metric_decl(name).and_then(|m| m.layout_pct)
    }

    /// Whether comparisons take this metric: not when its declaration says
    /// `compare = false`.
    pub fn compared(&self, name: &str) -> bool {
        self.metric_decl(name).is_none_or(|m| m.compare)
    }

    /// The `[metric.PREFIX]` with the longest prefix of `name`.
    pub fn metric_decl(&self, name: &str) -> Option<&MetricSpec> {
        self.metric
            .iter()
            .filter(|(prefix, _)| name.starts_with(prefix.as_str()))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, m)| m)
    }

    /// The `[[known]]` crashes that apply to a cell.
    pub fn known_crashes<'a>(&'a self, cell: &Cell) -> Vec<&'a Known> {
        self.known
            .iter()
            .filter(|k| glob_match(&k.cell, &cell.id()))
            .collect()
    }

    /// Expectations that apply to a cell, in file order: its id matches and
    /// the test is one the cell runs (`--test` may have left tests out).
    /// The A/A twin has its base's expectations.
    pub fn expectations<'a>(&'a self, cell: &Cell) -> Vec<&'a Expect> {
        let id = Cell {
            variant: built_as(&cell.variant).to_string(),
            tests: vec![],
            ..cell.clone()
        }
        .id();
        self.expect
            .iter()
            .filter(|e| glob_match(&e.cell, &id) && cell.tests.contains(e.test.get_ref()))
            .collect()
    }
}

/// `*` matches exactly one path component; anything else matches literally.
pub fn glob_match(pattern: &str, id: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let i: Vec<&str> = id.split('/').collect();
    p.len() == i.len() && p.iter().zip(&i).all(|(p, i)| *p == "*" || p == i)
}

/// `CONFIG_FOO=y` -> ("CONFIG_FOO", "y"); `# CONFIG_FOO is not set` -> ("CONFIG_FOO", "n").
pub fn parse_config_line(line: &str) -> Option<(String, String)> {
    let line = line.trim();
    if let Some(rest) = line.strip_prefix("# ") {
        let name = rest.strip_suffix(" is not set")?;
        return name
            .starts_with("CONFIG_")
            .then(|| (name.to_string(), "n".to_string()));
    }
    let (k, v) = line.split_once('=')?;
    (k.starts_with("CONFIG_") && !v.is_empty()).then(|| (k.to_string(), v.to_string()))
}

/// A test's `needs` (and its programs'): Kconfig symbols, CONFIG_NAME.
fn test_needs(at: &Spans, name: &str, t: &TestSpec) -> Result<()> {
    let needs = t.needs.iter().enumerate().map(|(i, n)| {
        (
            n,
            [
                Seg::Key("test"),
                Seg::Key(name),
                Seg::Key("needs"),
                Seg::Index(i),
            ]
            .to_vec(),
        )
    });
    let program_needs = t.programs.iter().enumerate().flat_map(|(p, prog)| {
        prog.needs.iter().enumerate().map(move |(i, n)| {
            (
                n,
                [
                    Seg::Key("test"),
                    Seg::Key(name),
                    Seg::Key("programs"),
                    Seg::Index(p),
                    Seg::Key("needs"),
                    Seg::Index(i),
                ]
                .to_vec(),
            )
        })
    });
    for (n, keys) in needs.chain(program_needs) {
        if !n.starts_with("CONFIG_") || n.contains('=') || n.contains(char::is_whitespace) {
            return Err(at.err_at(
                &keys,
                format!("[test.{name}] needs `{n}`: expected a Kconfig symbol, CONFIG_NAME"),
            ));
        }
    }
    Ok(())
}

/// A test's `config` lines: each an option line, no option set twice.
fn test_config(at: &Spans, name: &str, t: &TestSpec) -> Result<()> {
    let mut symbols = Vec::new();
    for line in &t.config {
        match parse_config_line(line.get_ref()) {
            None => {
                return Err(at.err(
                    line.span(),
                    format!(
                        "`{}`: expected CONFIG_NAME=value or `# CONFIG_NAME is not set`",
                        line.get_ref()
                    ),
                ))
            }
            Some((sym, _)) if symbols.contains(&sym) => {
                return Err(at.err(
                    line.span(),
                    format!("[test.{name}] config sets {sym} twice; expected each option once"),
                ))
            }
            Some((sym, _)) => symbols.push(sym),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[run]
arches = ["x86_64", "arm64"]
configs = ["tiny"]
tests = ["t1"]

[kernel."6.1"]
source = { debian = "linux-source-6.1" }
series = ["s1"]

[series.s1]
dir = "kernels/series/s1"

[config.tiny]
base = "tinyconfig"

[test.t1]
kind = "kselftest"
dir = "tools/testing/selftests/seccomp"
sources = ["seccomp_bpf.c"]

[[expect]]
cell = "*/base/*/*"
test = "t1"
case = "global.x"
outcome = "fail"
reason = "r"
"#;

    fn parse_err(text: &str) -> String {
        Matrix::parse("matrix.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn expands_kernel_variant_arch_config() {
        let m = Matrix::parse("matrix.toml", GOOD).unwrap();
        let ids: Vec<String> = m
            .cells(&Filters::default())
            .unwrap()
            .iter()
            .map(Cell::id)
            .collect();
        assert_eq!(
            ids,
            [
                "6.1/base/x86_64/tiny",
                "6.1/base/arm64/tiny",
                "6.1/s1/x86_64/tiny",
                "6.1/s1/arm64/tiny"
            ]
        );
    }

    #[test]
    fn filters_select_and_reject() {
        let m = Matrix::parse("matrix.toml", GOOD).unwrap();
        let f = Filters {
            arch: vec!["arm64".into()],
            variant: vec!["s1".into()],
            ..Default::default()
        };
        let ids: Vec<String> = m.cells(&f).unwrap().iter().map(Cell::id).collect();
        assert_eq!(ids, ["6.1/s1/arm64/tiny"]);
        let f = Filters {
            cell: vec!["*/base/*/tiny".into()],
            ..Default::default()
        };
        assert_eq!(m.cells(&f).unwrap().len(), 2);
        // A glob naming what the matrix has not: the component and the
        // known values; one that selects nothing: said so.
        let f = Filters {
            cell: vec!["6.1/base/riscv/*".into()],
            ..Default::default()
        };
        assert_eq!(
            m.cells(&f).unwrap_err().to_string(),
            "--cell 6.1/base/riscv/*: no arch `riscv` in the matrix; known: x86_64, arm64"
        );
        let f = Filters {
            cell: vec!["6.1/base/*".into()],
            ..Default::default()
        };
        assert!(m
            .cells(&f)
            .unwrap_err()
            .to_string()
            .contains("expected kernel/variant/arch/config"));
        let f = Filters {
            arch: vec!["arm64".into()],
            cell: vec!["*/*/x86_64/*".into()],
            ..Default::default()
        };
        assert!(m
            .cells(&f)
            .unwrap_err()
            .to_string()
            .contains("matches no cell"));
        let f = Filters {
            arch: vec!["riscv".into()],
            ..Default::default()
        };
        assert!(m
            .cells(&f)
            .unwrap_err()
            .to_string()
            .contains("--arch riscv"));
    }

    #[test]
    fn unknown_key_names_file_and_line() {
        let bad = GOOD.replace(
            "base = \"tinyconfig\"",
            "base = \"tinyconfig\"\nfragmnets = []",
        );
        let e = parse_err(&bad);
        assert!(e.starts_with("matrix.toml:16:"), "{e}");
        assert!(e.contains("fragmnets"), "{e}");
    }

    #[test]
    fn bad_values_name_line_and_expectation() {
        let e = parse_err(&GOOD.replace("\"x86_64\", \"arm64\"", "\"x86_64\", \"mips\""));
        assert!(
            e.starts_with("matrix.toml:3:") && e.contains("unknown arch `mips`"),
            "{e}"
        );
        let e = parse_err(&GOOD.replace("series = [\"s1\"]", "series = [\"s2\"]"));
        assert!(
            e.starts_with("matrix.toml:9:") && e.contains("series `s2`"),
            "{e}"
        );
        let e = parse_err(&GOOD.replace("kind = \"kselftest\"", "kind = \"unit\""));
        assert!(
            e.starts_with("matrix.toml:18:") && e.contains("unknown variant `unit`"),
            "{e}"
        );
        let e = parse_err(&GOOD.replace(
            "tests = [\"t1\"]",
            "tests = [\"t1\"]\nboots = 6\nmax_boots = 4",
        ));
        assert!(
            e.contains("run.max_boots = 4 is out of range, expected run.boots (6)..=50"),
            "{e}"
        );
        // A split must name another metric than the pair's, and a number.
        let within = |split: &str| {
            format!(
                "{GOOD}\n[[within]]\nbase = \"b.default.\"\nnew = \"b.sync.\"\nsplit = {split}\n"
            )
        };
        let e = parse_err(&within("{ metric = \"b.sync.unpinned\", at = 20.0 }"));
        assert!(
            e.contains("[within.split] metric `b.sync.unpinned` is one of the pair's own metrics"),
            "{e}"
        );
        let e = parse_err(&within("{ metric = \"b.host.gap\", at = nan }"));
        assert!(
            e.contains(
                "b.sync. vs b.default.: [within.split] needs a metric name and a finite `at`"
            ),
            "{e}"
        );
        let e = parse_err(&within(
            "{ metric = \"b.host.gap\", at = 20.0, below = true }",
        ));
        assert!(e.contains("unknown field `below`"), "{e}");
        assert!(Matrix::parse(
            "matrix.toml",
            &within("{ metric = \"b.host.gap\", at = 20.0 }")
        )
        .is_ok());
        // Two tools on one quantity: two names, and a factor above 1.
        let agree = |a: &str, factor: &str| {
            format!("{GOOD}\n[[agree]]\na = \"{a}\"\nb = \"b.x\"\nfactor = {factor}\n")
        };
        let e = parse_err(&agree("b.x", "2.0"));
        assert!(
            e.contains("[[agree]] needs two different metric names (got `b.x` and `b.x`)"),
            "{e}"
        );
        for bad in ["1.0", "0.5", "nan", "inf", "-2.0"] {
            let e = parse_err(&agree("p.x", bad));
            assert!(
                e.contains("[[agree]] p.x vs b.x: factor = ")
                    && e.contains("must be a ratio above 1"),
                "{bad}: {e}"
            );
        }
        assert_eq!(
            Matrix::parse("matrix.toml", &agree("p.x", "2.0"))
                .unwrap()
                .agree[0]
                .factor,
            2.0
        );
        let e = parse_err(&GOOD.replace("outcome = \"fail\"", "outcome = 3"));
        assert!(
            e.starts_with("matrix.toml:26:11:") && e.contains("wanted string"),
            "{e}"
        );
    }

    /// i386 is built, never booted: refused in run.arches with the way to
    /// build it; run.build_only names an arch and a config of the file.
    #[test]
    fn build_only_targets_and_the_arches_cells_boot_on() {
        let e = parse_err(&GOOD.replace(
            "arches = [\"x86_64\", \"arm64\"]",
            "arches = [\"x86_64\", \"i386\"]",
        ));
        assert!(
            e.starts_with("matrix.toml:3:")
                && e.contains("run.arches: i386 is built, never booted")
                && e.contains("name it in run.build_only as \"i386/CONFIG\""),
            "{e}"
        );
        let with = |list: &str| {
            GOOD.replace(
                "tests = [\"t1\"]",
                &format!("tests = [\"t1\"]\nbuild_only = {list}"),
            )
        };
        let e = parse_err(&with("[\"i686/tiny\"]"));
        assert!(
            e.starts_with("matrix.toml:6:")
                && e.contains("run.build_only: `i686/tiny` names no arch"),
            "{e}"
        );
        let e = parse_err(&with("[\"i386/huge\"]"));
        assert!(
            e.contains("run.build_only: `i386/huge` names no config, expected ARCH/CONFIG with CONFIG one of [\"tiny\"]"),
            "{e}"
        );
        let e = parse_err(&with("[\"i386/tiny\", \"i386/tiny\"]"));
        assert!(e.contains("run.build_only lists `i386/tiny` twice"), "{e}");
        let m = Matrix::parse("matrix.toml", &with("[\"i386/tiny\", \"arm64/tiny\"]")).unwrap();
        assert_eq!(
            m.build_only(),
            [
                (Arch::I386, "tiny".to_string()),
                (Arch::Arm64, "tiny".to_string())
            ]
        );
        assert_eq!(m.build_arches(), ["x86_64", "arm64", "i386"]);
        // No cell boots i386.
        assert!(m
            .cells(&Filters::default())
            .unwrap()
            .iter()
            .all(|c| c.arch != Arch::I386));
        assert_eq!(crate::plan::debian_packages(&m), ["linux-source-6.1"]);
        // A config built with clang: set-up installs clang and lld for it;
        // it is no cell's config, so a selection cannot name it.
        let clang = format!(
            "{}\n[config.tiny-clang]\nbase = \"tinyconfig\"\nllvm = true\n",
            with("[\"arm64/tiny-clang\"]")
        );
        let m = Matrix::parse("matrix.toml", &clang).unwrap();
        assert!(m.config["tiny-clang"].llvm && !m.config["tiny"].llvm);
        assert_eq!(
            crate::plan::debian_packages(&m),
            ["linux-source-6.1", "clang", "lld", "llvm"]
        );
        assert_eq!(m.names().config, ["tiny"]);
    }

    #[test]
    fn config_lines() {
        assert_eq!(
            parse_config_line("CONFIG_KCMP=y"),
            Some(("CONFIG_KCMP".into(), "y".into()))
        );
        assert_eq!(
            parse_config_line("# CONFIG_KCMP is not set"),
            Some(("CONFIG_KCMP".into(), "n".into()))
        );
        assert_eq!(parse_config_line("KCMP=y"), None);
        assert_eq!(parse_config_line("CONFIG_KCMP="), None);
    }

    #[test]
    fn globs_match_whole_components() {
        assert!(glob_match("*/base/*/*", "6.1/base/arm64/tiny"));
        assert!(!glob_match("*/base/*/*", "6.1/base-x/arm64/tiny"));
        assert!(!glob_match("*/base/*", "6.1/base/arm64/tiny"));
    }

    #[test]
    fn metric_declarations_longest_prefix_and_ranges() {
        let text = format!("{GOOD}\n[metric.b]\nbetter = \"higher\"\n[metric.\"b.x\"]\nbetter = \"lower\"\nmin_effect_pct = 2.0\ntarget_ci_pct = 3.0\n");
        let m = Matrix::parse("matrix.toml", &text).unwrap();
        assert_eq!(m.metric_spec("b.x.y"), (Better::Lower, 2.0));
        assert_eq!(m.metric_decl("b.x.y").unwrap().target_ci_pct, Some(3.0));
        assert_eq!(m.metric_spec("b.z"), (Better::Higher, 5.0));
        assert_eq!(m.metric_decl("b.z").unwrap().target_ci_pct, None);
        assert_eq!(m.metric_spec("c"), (Better::Lower, 5.0));
        assert!(m.compared("b.x.y") && m.compared("c"));
        let e = parse_err(&text.replace("target_ci_pct = 3.0", "target_ci_pct = 0.0"));
        assert!(e.contains("[metric.b.x] target_ci_pct = 0"), "{e}");
        let e = parse_err(&text.replace("min_effect_pct = 2.0", "min_effect_pct = -1.0"));
        assert!(e.contains("min_effect_pct = -1"), "{e}");
        assert_eq!(m.metric_quantile("b.x.y"), 0.5);
        let q = Matrix::parse(
            "m.toml",
            &text.replace("target_ci_pct = 3.0", "quantile = 0.1"),
        )
        .unwrap();
        assert_eq!(q.metric_quantile("b.x.y"), 0.1);
        assert_eq!(q.metric_quantile("b.z"), 0.5);
        let e = parse_err(&text.replace("target_ci_pct = 3.0", "quantile = 1.0"));
        assert!(
            e.contains("[metric.b.x] quantile = 1 must be in (0, 1)"),
            "{e}"
        );
    }

    #[test]
    fn expectations_follow_the_cells_tests() {
        let text = format!("{GOOD}\n[test.t2]\nkind = \"shell\"\ncommand = \"true\"\n[[expect]]\ncell = \"*/*/*/*\"\ntest = \"t2\"\noutcome = \"skip\"\nreason = \"r2\"\n");
        let m = Matrix::parse("matrix.toml", &text).unwrap();
        let cell = |variant: &str, tests: &[&str]| Cell {
            kernel: "6.1".into(),
            variant: variant.into(),
            arch: Arch::X86_64,
            config: "tiny".into(),
            tests: tests.iter().map(|t| t.to_string()).collect(),
        };
        let reasons = |c: &Cell| {
            m.expectations(c)
                .iter()
                .map(|e| e.reason.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(reasons(&cell("base", &["t1", "t2"])), ["r", "r2"]);
        assert_eq!(reasons(&cell("s1", &["t1", "t2"])), ["r2"]);
        // `--test t1`: the expectation about t2 must not report it missing.
        assert_eq!(reasons(&cell("base", &["t1"])), ["r"]);
        assert_eq!(reasons(&cell(AA_VARIANT, &["t1"])), ["r"]);
    }

    /// tests/planted: base, four delay series and a layout twin per arch,
    /// one patch each, the benchmark only, its placement shares never
    /// compared.
    #[test]
    fn the_planted_matrix_is_valid() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let path = format!("{root}/tests/planted/matrix.toml");
        let m = Matrix::parse(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
        let cells = m.cells(&Filters::default()).unwrap();
        assert_eq!(cells.len(), 12);
        assert!(cells.iter().all(|c| c.tests == ["seccomp_notify"]));
        // The default matrix's boots, so what it detects is the default's.
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
        let d = Matrix::parse(default, &std::fs::read_to_string(default).unwrap()).unwrap();
        assert_eq!(
            (m.run.boots, m.run.max_boots),
            (d.run.boots, d.run.max_boots)
        );
        for (name, spec) in &m.series {
            let patches =
                crate::plan::series::files(name, &std::path::Path::new(root).join(&spec.dir))
                    .unwrap();
            assert_eq!(patches.len(), 1, "{name}");
            let patch = std::fs::read_to_string(&patches[0]).unwrap();
            if name == "layout" {
                // Code that moves what follows, and nothing that runs.
                assert!(patch.contains("+\tasm volatile(\".skip 1500\");\n"));
                assert!(!patch.contains("udelay"));
                continue;
            }
            let us = name.trim_start_matches("delay-").trim_end_matches("us");
            assert!(patch.contains(&format!("+\tudelay({us});\n")), "{name}");
        }
        assert!(!m.compared("seccomp_notify.placement.default.unpinned.same_cpu_share"));
        assert!(!m.compared("seccomp_notify.host.disturbed_share"));
        assert!(m.compared("seccomp_notify.default.same-cpu"));
    }

    /// The layout twins run with the default matrix (`--series DIR`): each
    /// one patch that adds never-run code of a stated size to one file,
    /// and nothing that runs.
    #[test]
    fn the_layout_twins_move_code_and_run_none() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for (dir, file, bytes) in [
            ("layout", "kernel/seccomp.c", 1500),
            ("layout-sched", "kernel/sched/core.c", 2900),
            ("layout-rseq", "kernel/rseq.c", 700),
            ("layout-wait", "kernel/sched/wait.c", 700),
            ("layout-wait-big", "kernel/sched/wait.c", 2900),
        ] {
            let path = std::path::Path::new(root).join("tests/planted").join(dir);
            let patches = crate::plan::series::files(dir, &path).unwrap();
            assert_eq!(patches.len(), 1, "{dir}");
            let patch = std::fs::read_to_string(&patches[0]).unwrap();
            assert!(patch.contains(&format!("+++ b/{file}\n")), "{dir}");
            assert_eq!(patch.matches("+++ b/").count(), 1, "{dir}");
            assert!(
                patch.contains(&format!("+\tasm volatile(\".skip {bytes}\");\n")),
                "{dir}"
            );
            let added: Vec<&str> = patch
                .lines()
                .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
                .collect();
            assert!(added.iter().all(|l| !l.contains("udelay")), "{dir}");
            assert_eq!(
                patch
                    .lines()
                    .filter(|l| l.starts_with('-') && !l.starts_with("--"))
                    .count(),
                0,
                "{dir}"
            );
        }
    }

    #[test]
    fn the_repository_matrix_is_valid() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml"))
            .unwrap();
        let mut m = Matrix::parse("matrix.toml", &text).unwrap();
        let cells = m.cells(&Filters::default()).unwrap();
        assert_eq!(cells.len(), 16);
        // 6.1 has no `wide` config; the wide cells run the mm_cid check only.
        let wide: Vec<&Cell> = cells.iter().filter(|c| c.config == "wide").collect();
        assert_eq!(wide.len(), 6);
        // Patch 1 of mm-cid-work alone, as sweep and bisect name it.
        assert_eq!(m.series["mm-cid-work@1"].take, Some(1));
        assert_eq!(m.series["mm-cid-work@1"].dir, m.series["mm-cid-work"].dir);
        assert!(cells
            .iter()
            .any(|c| c.id() == "6.12/mm-cid-work@1/arm64/wide"));
        assert!(wide
            .iter()
            .all(|c| c.kernel == "6.12" && c.tests == ["mm_cid"]));
        assert_eq!(m.config_smp("wide"), 255);
        assert_eq!(m.config_smp("tiny"), 2);
        // What the speed checks report is about the host: never compared.
        assert!(!m.compared("seccomp_notify.host.check_speed"));
        assert!(m.compared("seccomp_notify.sync.unpinned"));
        // Every boot of a cell runs seccomp_notify; the other benchmarks
        // stop after 3, the correctness tests after 1. A wide cell (only
        // mm_cid) stops when mm_cid does; --boots 2 caps everything.
        let cell = |variant: &str, config: &str| {
            cells
                .iter()
                .find(|c| {
                    c.kernel == "6.12"
                        && c.variant == variant
                        && c.config == config
                        && c.arch == Arch::X86_64
                })
                .unwrap()
        };
        // Up to the maximum a comparison may add: the tiny cells' benchmark
        // takes all of it, the wide cells' only their test's 3.
        let run_boots = m.run.max_boots.unwrap();
        assert!(run_boots > 3);
        assert_eq!(m.cell_boots(cell("base", "tiny"), run_boots), run_boots);
        assert_eq!(m.cell_boots(cell("base", "wide"), run_boots), 3);
        assert_eq!(m.cell_boots(cell("base", "wide"), 2), 2);
        assert_eq!(m.cell_boots(cell("base", "tiny"), 0), 1);
        for t in ["rseq", "rseq_own", "membarrier", "mm_cid"] {
            assert_eq!(m.test[t].boots, Some(3), "{t}");
        }
        assert_eq!(m.test["seccomp_notify"].boots, None);
        // Boots added to a too-noisy comparison measure what runs in every
        // boot: seccomp_notify, not rseq (first 3) nor rseq_own's metrics
        // under the rseq prefix.
        let tiny = cell("base", "tiny");
        assert_eq!(
            m.metric_test(tiny, "rseq_own.cpu_id.rseq"),
            Some("rseq_own")
        );
        assert_eq!(m.metric_test(tiny, "rseq.cpu_id.rseq"), Some("rseq"));
        assert_eq!(m.metric_test(tiny, "seccomp_notifyx.a"), None);
        assert!(m.measured_in_boot(tiny, "seccomp_notify.default.unpinned", 7));
        assert!(m.measured_in_boot(tiny, "rseq.cpu_id.rseq", 3));
        assert!(!m.measured_in_boot(tiny, "rseq_own.cpu_id.rseq", 4));
        assert!(!m.measured_in_boot(tiny, "unknown.metric", 1));
        assert!(m.run.max_boots.unwrap_or(m.run.boots) >= m.run.boots);
        // --aa: the base twice per kernel, arch and config, the twin right
        // after the base.
        m.aa = true;
        let ids: Vec<String> = m
            .cells(&Filters::default())
            .unwrap()
            .iter()
            .map(Cell::id)
            .collect();
        assert_eq!(
            ids,
            [
                "6.1/base/x86_64/tiny",
                "6.1/base/arm64/tiny",
                "6.1/base~aa/x86_64/tiny",
                "6.1/base~aa/arm64/tiny",
                "6.1/seccomp-sync-wakeup/x86_64/tiny",
                "6.1/seccomp-sync-wakeup/arm64/tiny",
                "6.12/base/x86_64/tiny",
                "6.12/base/x86_64/wide",
                "6.12/base/arm64/tiny",
                "6.12/base/arm64/wide",
                "6.12/base~aa/x86_64/tiny",
                "6.12/base~aa/x86_64/wide",
                "6.12/base~aa/arm64/tiny",
                "6.12/base~aa/arm64/wide",
                "6.12/mm-cid-work@1/x86_64/tiny",
                "6.12/mm-cid-work@1/x86_64/wide",
                "6.12/mm-cid-work@1/arm64/tiny",
                "6.12/mm-cid-work@1/arm64/wide",
                "6.12/mm-cid-work/x86_64/tiny",
                "6.12/mm-cid-work/x86_64/wide",
                "6.12/mm-cid-work/arm64/tiny",
                "6.12/mm-cid-work/arm64/wide"
            ]
        );
        let only_aa = Filters {
            variant: vec![AA_VARIANT.into()],
            ..Default::default()
        };
        assert_eq!(m.cells(&only_aa).unwrap().len(), 6);
        assert_eq!(built_as(AA_VARIANT), "base");
        assert_eq!(built_as("seccomp-sync-wakeup"), "seccomp-sync-wakeup");
    }

    #[test]
    fn configs_per_kernel_and_tests_per_config() {
        let text = GOOD.replace(
            "[config.tiny]",
            "[kernel.\"6.12\"]\nsource = { debian = \"linux-source-6.12\" }\nconfigs = [\"tiny\", \"wide\"]\n\n\
             [config.wide]\nbase = \"tinyconfig\"\nsmp = 255\ncmdline = [\"maxcpus=2\"]\ntests = [\"t2\"]\n\n[config.tiny]",
        ) + "\n[test.t2]\nkind = \"shell\"\ncommand = \"true\"\n";
        let m = Matrix::parse("m.toml", &text).unwrap();
        let ids = |f: &Filters| -> Vec<String> {
            m.cells(f)
                .unwrap()
                .iter()
                .map(|c| format!("{} {:?}", c.id(), c.tests))
                .collect()
        };
        let all = ids(&Filters {
            arch: vec!["x86_64".into()],
            ..Default::default()
        });
        assert_eq!(
            all,
            [
                "6.1/base/x86_64/tiny [\"t1\"]",
                "6.1/s1/x86_64/tiny [\"t1\"]",
                "6.12/base/x86_64/tiny [\"t1\"]",
                "6.12/base/x86_64/wide [\"t2\"]",
            ]
        );
        // A test only a config runs is a known --test; the cells that do
        // not run it drop out instead of running nothing.
        let t2 = ids(&Filters {
            test: vec!["t2".into()],
            arch: vec!["arm64".into()],
            ..Default::default()
        });
        assert_eq!(t2, ["6.12/base/arm64/wide [\"t2\"]"]);
        assert_eq!(m.config["wide"].cmdline, ["maxcpus=2"]);
        // Unknown names are errors that say where.
        let bad = text.replace(
            "configs = [\"tiny\", \"wide\"]",
            "configs = [\"tiny\", \"huge\"]",
        );
        let e = Matrix::parse("m.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("m.toml:") && e.contains("config `huge`"), "{e}");
        let bad = text.replace("tests = [\"t2\"]", "tests = [\"t3\"]");
        let e = Matrix::parse("m.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("config.wide.tests: test `t3`"), "{e}");
        let bad = text.replace("smp = 255", "smp = 4096");
        assert!(Matrix::parse("m.toml", &bad)
            .unwrap_err()
            .to_string()
            .contains("smp = 4096"));
    }

    /// The default matrix with `from` replaced by `to` (which must be there).
    fn default_with(from: &str, to: &str) -> String {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml"))
            .unwrap();
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1)
    }

    /// Where the last `to` is: the line and column of the last `value` in it.
    fn place_of(text: &str, to: &str, value: &str) -> String {
        let start = text.rfind(to).unwrap() + to.rfind(value).unwrap();
        let (l, c) = crate::plan::spans::line_col(text, start);
        format!("matrix.toml:{l}:{c}: ")
    }

    #[test]
    fn numbers_out_of_range_are_refused_at_their_value_with_the_range() {
        let cases = [
            (
                "cell_timeout_s = 600",
                "cell_timeout_s = 0",
                "0",
                "run.cell_timeout_s = 0 is out of range, expected 1..=86400 seconds",
            ),
            (
                "memory_mb = 1024",
                "memory_mb = 4294967295",
                "4294967295",
                "run.memory_mb = 4294967295 is out of range, expected 128..=65536 MB",
            ),
            (
                "memory_mb = 1024",
                "memory_mb = 64",
                "64",
                "run.memory_mb = 64 is out of range, expected 128..=65536 MB",
            ),
            (
                "smp = 2",
                "smp = 0",
                "0",
                "run.smp = 0 is out of range, expected 1..=64 CPUs",
            ),
            (
                "boots = 3",
                "boots = 0",
                "0",
                "run.boots = 0 is out of range, expected 1..=50",
            ),
            (
                "boots = 3",
                "boots = 51",
                "51",
                "run.boots = 51 is out of range, expected 1..=50",
            ),
            (
                "max_boots = 18",
                "max_boots = 51",
                "51",
                "run.max_boots = 51 is out of range, expected run.boots (3)..=50",
            ),
            (
                "max_boots = 18",
                "max_boots = 2",
                "2",
                "run.max_boots = 2 is out of range, expected run.boots (3)..=50",
            ),
            (
                "timeout_s = 300",
                "timeout_s = 0",
                "0",
                "[test.seccomp_notify] timeout_s = 0 is out of range, expected 1..=86400 seconds",
            ),
            (
                "timeout_s = 60\nboots = 3",
                "timeout_s = 60\nboots = 4000000000",
                "4000000000",
                "[test.mm_cid] boots = 4000000000 is out of range, expected 1..=50",
            ),
            (
                "timeout_s = 60\nboots = 3",
                "timeout_s = 60\nboots = 0",
                "0",
                "[test.mm_cid] boots = 0 is out of range, expected 1..=50",
            ),
            (
                "smp = 255",
                "smp = 513",
                "513",
                "[config.wide] smp = 513 is out of range, expected 1..=512 CPUs",
            ),
            (
                "min_effect_pct = 20.0",
                "min_effect_pct = inf",
                "inf",
                "[metric.mm_cid] min_effect_pct = inf is out of range, expected 0..=1000 (percent)",
            ),
            (
                "min_effect_pct = 20.0",
                "min_effect_pct = nan",
                "nan",
                "[metric.mm_cid] min_effect_pct = NaN is out of range, expected 0..=1000 (percent)",
            ),
            (
                "min_effect_pct = 20.0",
                "min_effect_pct = -5.0",
                "-5.0",
                "[metric.mm_cid] min_effect_pct = -5 is out of range, expected 0..=1000 (percent)",
            ),
            (
                "min_effect_pct = 20.0",
                "min_effect_pct = 1e9",
                "1e9",
                "[metric.mm_cid] min_effect_pct = 1000000000 is out of range",
            ),
            (
                "target_ci_pct = 3.0\n#",
                "target_ci_pct = inf\n#",
                "inf",
                "[metric.seccomp_notify] target_ci_pct = inf must be a percentage in (0, 100)",
            ),
            (
                "split = { metric = \"seccomp_notify.host.wake_gap_pct\", at = 17.0 }",
                "split = { metric = \"seccomp_notify.host.wake_gap_pct\", at = inf }",
                "{ metric",
                "[within.split] needs a metric name and a finite `at`",
            ),
        ];
        for (from, to, value, says) in cases {
            let bad = default_with(from, to);
            let e = parse_err(&bad);
            let place = place_of(&bad, to, value);
            assert!(
                e.starts_with(&place) && e.contains(says),
                "{to}: {e}, wanted {place}{says}"
            );
        }
        // Beyond the type: serde's refusal, also at the value.
        for (to, says) in [
            ("cell_timeout_s = -1", "invalid value: integer `-1`"),
            ("cell_timeout_s = 18446744073709551616", "number too large"),
            ("cell_timeout_s = nan", "invalid type: floating point `NaN`"),
            ("cell_timeout_s = \"600\"", "invalid type: string"),
        ] {
            let bad = default_with("cell_timeout_s = 600", to);
            let e = parse_err(&bad);
            assert!(
                e.starts_with("matrix.toml:18:")
                    && e.contains(says)
                    && e.ends_with("; run.cell_timeout_s: expected 1..=86400 seconds"),
                "{to}: {e}"
            );
        }
        // A character toml names no problem for: it, and where.
        let bad = default_with("# Per-boot budget", "# Per-boot\u{0} budget");
        let e = parse_err(&bad);
        assert!(
            e.starts_with("matrix.toml:17:11: unexpected character '\\0', expected TOML"),
            "{e}"
        );
        let bad = default_with("timeout_s = 300", "timeout_s = -300");
        assert!(
            parse_err(&bad).ends_with("; [test] timeout_s: expected 1..=86400 seconds"),
            "{}",
            parse_err(&bad)
        );
    }

    /// `NAME@K` in a kernel's series: the first K >= 1 patches of a
    /// declared series (whether it has K: `plan::files`).
    #[test]
    fn a_series_prefix_names_a_declared_series_and_a_count_from_1() {
        for (to, says) in [
            (
                "mm-cid-work@0",
                "`mm-cid-work@0`: expected a series name, or NAME@K",
            ),
            (
                "mm-cid-work@+1",
                "`mm-cid-work@+1`: expected a series name, or NAME@K",
            ),
            (
                "mm-cid-work@",
                "`mm-cid-work@`: expected a series name, or NAME@K",
            ),
            ("mm@cid@1", "`mm@cid@1`: expected a series name, or NAME@K"),
            (
                "mm-cid@1",
                "`mm-cid@1` names the first patches of series `mm-cid`, which is not defined",
            ),
        ] {
            let bad = default_with("[\"mm-cid-work@1\",", &format!("[\"{to}\","));
            let e = parse_err(&bad);
            assert!(
                e.starts_with("matrix.toml:60:11: ") && e.contains(says),
                "{to}: {e}"
            );
        }
    }

    #[test]
    fn a_source_is_one_kind_with_only_its_own_keys() {
        let from = "source = { debian = \"linux-source-6.12\", version = \"6.12.117-1~deb12u1\" }";
        for (to, says) in [
            (
                "source = { }",
                "source: expected one of debian, tarball, git, release or url",
            ),
            (
                "source = { debian = \"linux-source-6.12\", tarball = \"/x.tar\" }",
                "source: more than one kind of source",
            ),
            (
                "source = { tarball = \"/x.tar\", version = \"1\" }",
                "source: `version` does not apply to this kind of source",
            ),
            (
                "source = { url = \"https://h/linux.tar.xz\" }",
                "source: url `https://h/linux.tar.xz` needs its sha256",
            ),
            (
                "source = { release = \"6.6.x\" }",
                "source: release `6.6.x` is not a kernel version like 6.6.63",
            ),
            (
                "source = { release = \"6.6.63\", sha256 = \"abc\" }",
                "source sha256 `abc`: expected 64 hex digits",
            ),
            (
                "source = { debian = \"linux-6.12\" }",
                "expected a linux-source-X.Y package",
            ),
        ] {
            let e = parse_err(&default_with(from, to));
            assert!(e.starts_with("matrix.toml:57:10: "), "{to}: {e}");
            assert!(e.contains(says), "{to}: {e}");
        }
        let m = Matrix::parse(
            "matrix.toml",
            &default_with(from, "source = { release = \"6.6.63\" }"),
        )
        .unwrap();
        assert_eq!(
            m.kernel["6.12"].source.get_ref(),
            &SourceSpec::Download {
                url: "https://cdn.kernel.org/pub/linux/kernel/v6.x/linux-6.6.63.tar.xz".into(),
                sha256: None,
                release: Some("6.6.63".into()),
            }
        );
        let m = Matrix::parse("matrix.toml", &default_with("[run]", "[run]")).unwrap();
        assert_eq!(
            m.kernel["6.1"].source.get_ref(),
            &SourceSpec::Debian {
                package: "linux-source-6.1".into(),
                version: Some("6.1.192-3".into()),
                suite: "bookworm".into(),
            }
        );
    }

    #[test]
    fn a_name_listed_twice_is_refused_at_the_repeat() {
        let cases = [
            (
                "arches = [\"x86_64\", \"arm64\"]",
                "arches = [\"x86_64\", \"arm64\", \"x86_64\"]",
                "\"x86_64\"]",
                "run.arches lists `x86_64` twice (each cell would run twice)",
            ),
            (
                "\"seccomp_bpf\", \"seccomp_notify\", \"perf_bench\",\n",
                "\"seccomp_bpf\", \"seccomp_notify\", \"perf_bench\", \"seccomp_bpf\",\n",
                "\"seccomp_bpf\",\n",
                "run.tests lists `seccomp_bpf` twice",
            ),
            (
                "configs = [\"tiny\"]",
                "configs = [\"tiny\", \"tiny\"]",
                "\"tiny\"]",
                "run.configs lists `tiny` twice",
            ),
            (
                "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
                "series = [\"mm-cid-work@1\", \"mm-cid-work\", \"mm-cid-work\"]",
                "\"mm-cid-work\"]",
                "kernel.6.12.series lists `mm-cid-work` twice",
            ),
            (
                "configs = [\"tiny\", \"wide\"]",
                "configs = [\"tiny\", \"wide\", \"tiny\"]",
                "\"tiny\"]",
                "kernel.6.12.configs lists `tiny` twice",
            ),
            (
                "tests = [\"mm_cid\"]",
                "tests = [\"mm_cid\", \"mm_cid\"]",
                "\"mm_cid\"]",
                "config.wide.tests lists `mm_cid` twice",
            ),
            (
                "fragments = [\"kernels/configs/base.config\"]",
                "fragments = [\"kernels/configs/base.config\", \"kernels/configs/base.config\"]",
                "\"kernels/configs/base.config\"]",
                "config.tiny.fragments lists `kernels/configs/base.config` twice",
            ),
            (
                "config = [\"CONFIG_RSEQ=y\"]\nboots = 1",
                "config = [\"CONFIG_RSEQ=y\", \"CONFIG_RSEQ=n\"]\nboots = 1",
                "\"CONFIG_RSEQ=n",
                "[test.rseq_selftests] config sets CONFIG_RSEQ twice",
            ),
            (
                "{ name = \"param_test.list\",",
                "{ name = \"param_test.spinlock\",",
                "\"param_test.spinlock",
                "[test.rseq_selftests] cases: `param_test.spinlock` is named twice",
            ),
        ];
        for (from, to, value, says) in cases {
            let bad = default_with(from, to);
            let e = parse_err(&bad);
            let place = place_of(&bad, to, value);
            assert!(
                e.starts_with(&place) && e.contains(says),
                "{to}: {e}, wanted {place}{says}"
            );
        }
    }

    #[test]
    fn names_that_would_break_cell_ids_and_empty_lists_are_refused() {
        let cases = [
            (
                "[series.mm-cid-work]",
                "[series.\"mm/cid\"]",
                "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
                "series = [\"mm/cid\"]",
                "series name `mm/cid`",
            ),
            (
                "[series.mm-cid-work]",
                "[series.\"mm@2\"]",
                "series = [\"mm-cid-work@1\", \"mm-cid-work\"]",
                "series = [\"mm@2\"]",
                "series name `mm@2`",
            ),
            (
                "[config.wide]",
                "[config.\"wi de\"]",
                "configs = [\"tiny\", \"wide\"]",
                "configs = [\"tiny\", \"wi de\"]",
                "config name `wi de`",
            ),
            (
                "arches = [\"x86_64\", \"arm64\"]",
                "arches = []",
                "x",
                "x",
                "run.arches is empty",
            ),
            (
                "configs = [\"tiny\"]",
                "configs = []",
                "configs = [\"tiny\", \"wide\"]",
                "configs = []",
                "matrix.toml:7:1: the matrix makes no cell",
            ),
            (
                "tests = [\"mm_cid\"]",
                "tests = []",
                "x",
                "x",
                "config.wide.tests is empty",
            ),
            (
                "base = \"seccomp_notify.default.\"\nnew = \"seccomp_notify.sync.\"",
                "base = \"seccomp_notify.sync.\"\nnew = \"seccomp_notify.sync.\"",
                "x",
                "x",
                "[[within]] compares `seccomp_notify.sync.` with itself",
            ),
            (
                "new_config = \"wide\"",
                "new_config = \"tiny\"",
                "x",
                "x",
                "[[across]] compares config `tiny` with itself",
            ),
        ];
        for (from, to, from2, to2, says) in cases {
            let mut bad = default_with(from, to);
            if from2 != "x" {
                bad = bad.replacen(from2, to2, 1);
            }
            let e = parse_err(&bad);
            assert!(
                e.starts_with("matrix.toml:") && e.contains(says),
                "{to}: {e}"
            );
        }
    }
}
