//! matrix.toml's schema: the tables and keys serde reads, with
//! `deny_unknown_fields`, and the names built from them (a variant's
//! build, a series prefix `NAME@K`, a kernel.org release's tarball).

use std::collections::BTreeMap;
use std::fmt;

use anyhow::Result;
use serde::Deserialize;
use toml::Spanned;

use crate::plan::arch::Arch;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub run: RunSettings,
    pub kernel: BTreeMap<String, Kernel>,
    #[serde(default)]
    pub series: BTreeMap<String, SeriesSpec>,
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

pub(super) fn default_min_effect() -> f64 {
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

/// kernel.org's tarball directory: a release's URL starts with it (a
/// mirror may stand in for it at download time, `host::download::mirrored`).
pub const KERNEL_ORG: &str = "https://cdn.kernel.org/pub/linux/kernel";

/// The file a download `url` names: an `http://` or `https://` URL with a
/// host, whose last path component (before any `?` or `#`) is a file name.
/// Anything else (`file://`, a URL ending in `/`) is refused with what it
/// should be.
pub fn url_file_name(url: &str) -> Result<&str, String> {
    let lower = url.to_ascii_lowercase();
    let rest = ["https://", "http://"]
        .iter()
        .find_map(|p| lower.starts_with(p).then(|| &url[p.len()..]))
        .ok_or_else(|| {
            format!("source url `{url}`: expected an http:// or https:// URL of a tarball")
        })?;
    let path = rest.split(['?', '#']).next().unwrap_or(rest);
    let (host, path) = path.split_once('/').unwrap_or((path, ""));
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "source url `{url}`: expected a host after the scheme"
        ));
    }
    match path.rsplit('/').next() {
        Some(n) if !n.is_empty() && n != "." && n != ".." => Ok(n),
        _ => Err(format!(
            "source url `{url}`: expected a URL that ends in the tarball's file name"
        )),
    }
}

/// A `release` version's tarball URL: `v6.x/linux-6.6.63.tar.xz`.
pub fn release_url(version: &str) -> Option<String> {
    let major = version.split('.').next()?;
    let ok = version.split('.').count() >= 2
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    ok.then(|| format!("{KERNEL_ORG}/v{major}.x/linux-{version}.tar.xz"))
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
pub struct SeriesSpec {
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
    /// A kselftest target as the kernel builds it (`make -C
    /// tools/testing/selftests TARGETS=... install`): every program of its
    /// list a case, with the cases of its KTAP output nested under it.
    Target,
    /// KUnit suites built into the cell's kernel (the options of a
    /// `.kunitconfig`, or kunit_tool's default), run at boot under
    /// `kunit.filter_glob`, their results read from debugfs: each suite
    /// a case, each of its cases one nested under it.
    Kunit,
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
    /// kind = "target": run only these programs of the target (default:
    /// every program its kselftest-list.txt names).
    #[serde(default)]
    pub only: Vec<String>,
    /// kind = "kunit": the suites to run, as `kunit.filter_glob` takes
    /// them (`cmdline*`, `kunit*.example_simple_test`); default `*`.
    #[serde(default)]
    pub glob: Option<String>,
    /// kind = "kunit": the tree's `.kunitconfig` (a file, or a directory
    /// holding one) whose options build the suites; default kunit_tool's
    /// `tools/testing/kunit/configs/default.config`.
    #[serde(default)]
    pub kunitconfig: Option<String>,
}

/// Where the kernel keeps its selftest targets.
pub const SELFTESTS: &str = "tools/testing/selftests/";

/// The target a selftests directory is (`tools/testing/selftests/pidfd`
/// -> `pidfd`, `.../net/forwarding` -> `net/forwarding`): None for a path
/// outside it, or one with a part that is empty, `.` or `..`, or a
/// character a make variable or a path would read otherwise.
pub fn target_name(dir: &str) -> Option<&str> {
    let t = dir.strip_prefix(SELFTESTS)?.trim_end_matches('/');
    let part_ok = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    t.split('/').all(part_ok).then_some(t)
}

impl TestSpec {
    /// A `kind = "target"` test of the selftests directory `dir`, running
    /// `only` these programs (all when empty): what `--kselftest` declares.
    pub fn target(dir: &str, only: Vec<String>) -> TestSpec {
        TestSpec {
            kind: TestKind::Target,
            dir: Some(dir.to_string()),
            sources: vec![],
            source: None,
            command: None,
            libs: vec![],
            args: vec![],
            config: vec![],
            timeout_s: None,
            needs: vec![],
            boots: None,
            includes: vec![],
            programs: vec![],
            cases: vec![],
            rounds: None,
            only,
            glob: None,
            kunitconfig: None,
        }
    }

    /// A `kind = "kunit"` test: what `--kunit` and `--kunitconfig` declare.
    pub fn kunit(glob: Option<String>, kunitconfig: Option<String>) -> TestSpec {
        TestSpec {
            kind: TestKind::Kunit,
            dir: None,
            glob,
            kunitconfig,
            ..TestSpec::target("", vec![])
        }
    }
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
    /// Written for a series `--series` replaced (`variants::use_series`):
    /// its case may not exist in the new series' tests, so a case that
    /// does not run is no mismatch; one that runs is still held to it.
    #[serde(skip)]
    pub for_replaced_series: bool,
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
