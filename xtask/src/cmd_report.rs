//! CLI glue for the commands that read finished runs: `merge` (several
//! results.json into one, comparisons recomputed), `report` (JUnit, HTML,
//! KCIDB, GitHub step summary and annotations), `compare RUN_A RUN_B`
//! (the same statistics across two runs), `aa-rate` (A/A false alarms over
//! runs made with `matrix --aa`) and `list --groups` (the CI fan-out: one
//! job per kernel/arch/config running all its variants).
//!
//! The file IO and environment live here; what is computed lives in
//! `report/` and is pure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::plan::matrix::{Filters, Matrix};
use crate::report::{aa, compare, gha, html, junit, kcidb, markdown, merge};
use crate::schema::{Comparison, Run, SCHEMA_VERSION};

/// `DIR/results.json`, or the file itself when given one.
fn results_file(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("results.json")
    } else {
        p.to_path_buf()
    }
}

/// Loads a results.json, checking its schema version before its shape so
/// the refusal says "schema N" rather than a serde error.
pub fn load_run(p: &Path) -> Result<Run> {
    let file = results_file(p);
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", file.display()))?;
    match v.get("schema").and_then(|s| s.as_u64()) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => {}
        Some(n) => bail!(
            "{} has results.json schema {n}; this harness reads and writes schema {SCHEMA_VERSION}",
            file.display()
        ),
        None => bail!("{} has no results.json schema number", file.display()),
    }
    serde_json::from_value(v).with_context(|| format!("{} is not a results.json", file.display()))
}

/// The patch set of every variant of `run` that is a series of the matrix
/// (`NAME`, or `NAME@K` for its first K patches, as sweep and bisect name
/// them). Patch URLs point at the GitHub blob of this commit in Actions,
/// else at the local file.
fn patchsets(root: &Path, m: &Matrix, run: &Run) -> BTreeMap<String, kcidb::Patchset> {
    let github = match (
        std::env::var("GITHUB_SERVER_URL"),
        std::env::var("GITHUB_REPOSITORY"),
        std::env::var("GITHUB_SHA"),
    ) {
        (Ok(s), Ok(r), Ok(c)) => Some(format!("{s}/{r}/raw/{c}")),
        _ => None,
    };
    let mut out = BTreeMap::new();
    for variant in run.cells.iter().map(|c| &c.variant) {
        if variant == "base" || out.contains_key(variant) {
            continue;
        }
        let (name, take) = match variant.split_once('@') {
            Some((n, k)) => (n, k.parse::<usize>().ok()),
            None => (variant.as_str(), None),
        };
        let Some(s) = m.series.get(name) else {
            continue;
        };
        let Ok(mut patches) = crate::build::source::Series::files(name, &root.join(&s.dir)) else {
            continue;
        };
        if let Some(k) = take {
            patches.truncate(k);
        }
        let bytes: Vec<Vec<u8>> = patches
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .collect();
        if bytes.len() != patches.len() {
            continue;
        }
        let refs: Vec<&[u8]> = bytes.iter().map(|b| &b[..]).collect();
        let files = patches
            .iter()
            .map(|p| {
                let file = p
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let url = match (&github, p.strip_prefix(root)) {
                    (Some(base), Ok(rel)) => format!("{base}/{}", rel.display()),
                    _ => format!(
                        "file://{}",
                        std::fs::canonicalize(p).unwrap_or(p.clone()).display()
                    ),
                };
                (file, url)
            })
            .collect();
        out.insert(
            variant.clone(),
            kcidb::Patchset {
                files,
                hash: kcidb::patchset_hash(&refs),
            },
        );
    }
    out
}

/// Where `report` writes each file (None: not written).
#[derive(Default)]
pub struct Targets {
    pub junit: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub kcidb: Option<PathBuf>,
}

impl Targets {
    /// All three, under their default names in `dir`.
    pub fn all_in(dir: &Path) -> Targets {
        Targets {
            junit: Some(dir.join("junit.xml")),
            html: Some(dir.join("report.html")),
            kcidb: Some(dir.join("kcidb.json")),
        }
    }
}

/// Writes the reports of `run`; `m` gives the series for KCIDB's patch sets.
pub fn write_reports(root: &Path, run: &Run, m: Option<&Matrix>, t: &Targets) -> Result<()> {
    if let Some(p) = &t.junit {
        let xml = junit::junit(run)
            .to_string()
            .map_err(|e| anyhow::anyhow!("JUnit: {e}"))?;
        std::fs::write(p, xml).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &t.html {
        std::fs::write(p, html::html(run)).with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &t.kcidb {
        let ps = m.map(|m| patchsets(root, m, run)).unwrap_or_default();
        let doc = kcidb::kcidb(run, &ps);
        std::fs::write(p, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// The reports `matrix` writes beside results.json; a failure is a
/// warning, not the run's failure (results.json and summary.md are saved).
/// No step summary or annotations here: the test suite runs `matrix` on
/// purpose-broken cells, which would annotate the suite's own job; CI runs
/// `report` (or `merge`) after `matrix` for that.
pub fn write_run_reports(root: &Path, run: &Run, m: &Matrix, dir: &Path) {
    if let Err(e) = write_reports(root, run, Some(m), &Targets::all_in(dir)) {
        eprintln!("warning: writing the reports in {}: {e:#}", dir.display());
    }
}

/// summary.md (made only when wanted: its CIs are bootstraps) to the
/// job's step summary, and annotations, when in Actions.
pub fn publish_github(run: &Run, summary: impl FnOnce() -> String) {
    if let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let summary = summary();
        use std::io::Write;
        let r = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&p)
            .and_then(|mut f| f.write_all(summary.as_bytes()));
        if let Err(e) = r {
            eprintln!("warning: cannot append to GITHUB_STEP_SUMMARY {:?}: {e}", p);
        }
    }
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true") {
        for l in gha::annotations(run) {
            println!("{l}");
        }
    }
}

fn summary(run: &Run) -> String {
    markdown::markdown(run) + &compare::markdown(&run.comparisons)
}

/// Exit code as `matrix` gives it: 1 when a cell is not as expected (each
/// mismatch printed) or, asked to, when a metric regressed.
fn verdict_code(run: &Run, fail_on_regression: bool) -> u8 {
    let mut code = 0;
    for c in run.cells.iter().filter(|c| !c.as_expected) {
        for mm in &c.mismatches {
            eprintln!("MISMATCH {mm}");
        }
        code = 1;
    }
    if fail_on_regression && crate::report_regressions(&run.comparisons) {
        code = 1;
    }
    code
}

/// `cargo xtask merge --out DIR RUN...`
pub fn cmd_merge(
    root: &Path,
    out: &Path,
    inputs: &[PathBuf],
    matrix_path: &Path,
    fail_on_regression: bool,
) -> Result<u8> {
    let m = crate::load_matrix(matrix_path)?;
    let mut runs = Vec::new();
    for p in inputs {
        runs.push((results_file(p).display().to_string(), load_run(p)?));
    }
    let order: Vec<String> = m
        .cells(&Filters::default())
        .map(|cs| cs.iter().map(|c| c.id()).collect())
        .unwrap_or_default();
    let mut run = merge::merge(&runs, &order)?;
    run.comparisons = compare::compare(&run, &m);
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let results = out.join("results.json");
    run.save(&results)?;
    let summary = summary(&run);
    std::fs::write(out.join("summary.md"), &summary)?;
    write_reports(root, &run, Some(&m), &Targets::all_in(out))?;
    println!("{summary}");
    println!(
        "merged {} cells from {} files into {} (summary.md, junit.xml, report.html, kcidb.json beside it)",
        run.cells.len(),
        runs.len(),
        results.display()
    );
    publish_github(&run, || summary);
    Ok(verdict_code(&run, fail_on_regression))
}

/// `cargo xtask report RUN [--junit F] [--html F] [--kcidb F]`; without a
/// file flag, all three into the run directory.
pub fn cmd_report(root: &Path, run_dir: &Path, t: Targets, matrix_path: &Path) -> Result<u8> {
    let run = load_run(run_dir)?;
    let t = if t.junit.is_none() && t.html.is_none() && t.kcidb.is_none() {
        let dir = results_file(run_dir)
            .parent()
            .map_or(PathBuf::from("."), Path::to_path_buf);
        Targets::all_in(&dir)
    } else {
        t
    };
    // The matrix only names the series (KCIDB patch sets): without it the
    // reports are still written.
    let m = match crate::load_matrix(matrix_path) {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("warning: {e:#}: KCIDB checkouts will have no patch files");
            None
        }
    };
    write_reports(root, &run, m.as_ref(), &t)?;
    for p in [&t.junit, &t.html, &t.kcidb].into_iter().flatten() {
        println!("wrote {}", p.display());
    }
    publish_github(&run, || summary(&run));
    Ok(0)
}

/// What `compare RUN_A RUN_B` writes: both runs and the comparisons.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RunComparison {
    pub schema: u32,
    pub base_run: String,
    pub new_run: String,
    pub comparisons: Vec<Comparison>,
}

/// `cargo xtask compare RUN_A RUN_B`: cell X of A (base) against cell X of
/// B (new), metric by metric.
pub fn cmd_compare_runs(
    a: &Path,
    b: &Path,
    matrix_path: &Path,
    out: Option<PathBuf>,
    fail_on_regression: bool,
) -> Result<u8> {
    let m = crate::load_matrix(matrix_path)?;
    let (ra, rb) = (load_run(a)?, load_run(b)?);
    let cs = compare::compare_runs(&ra, &rb, &m);
    let table = compare::markdown(&cs);
    let heading = format!(
        "# {} (new) vs {} (base)\n",
        results_file(b).display(),
        results_file(a).display()
    );
    if table.is_empty() {
        println!("no cell has the same metric in both runs");
    } else {
        println!("{heading}{table}");
    }
    let out = out.unwrap_or_else(|| {
        results_file(b)
            .parent()
            .map_or(PathBuf::from("."), Path::to_path_buf)
            .join("compare.json")
    });
    let doc = RunComparison {
        schema: SCHEMA_VERSION,
        base_run: results_file(a).display().to_string(),
        new_run: results_file(b).display().to_string(),
        comparisons: cs,
    };
    std::fs::write(&out, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", out.display()))?;
    std::fs::write(out.with_extension("md"), heading + &table)?;
    println!("comparison: {}", out.display());
    Ok(
        if fail_on_regression && crate::report_regressions(&doc.comparisons) {
            1
        } else {
            0
        },
    )
}

/// One CI job: a kernel/arch/config with all its variants (compared cells
/// run on the same machine).
#[derive(serde::Serialize, Debug, PartialEq)]
pub struct Group {
    /// A name fit for an artifact or job: `6.1-x86_64-tiny`.
    pub name: String,
    /// The `--cell` glob that selects it: `6.1/*/x86_64/tiny`.
    pub cell: String,
    pub cells: Vec<String>,
}

pub fn groups(m: &Matrix) -> Result<Vec<Group>> {
    let mut out: Vec<Group> = Vec::new();
    for c in m.cells(&Filters::default())? {
        let cell = format!("{}/*/{}/{}", c.kernel, c.arch, c.config);
        match out.iter_mut().find(|g| g.cell == cell) {
            Some(g) => g.cells.push(c.id()),
            None => out.push(Group {
                name: format!("{}-{}-{}", c.kernel, c.arch, c.config),
                cell,
                cells: vec![c.id()],
            }),
        }
    }
    Ok(out)
}

/// `cargo xtask list --groups [--json]`.
pub fn cmd_list_groups(matrix_path: &Path, json: bool) -> Result<u8> {
    let gs = groups(&crate::load_matrix(matrix_path)?)?;
    if json {
        println!("{}", serde_json::to_string(&gs)?);
    } else {
        for g in gs {
            println!("{} {}", g.cell, g.cells.join(" "));
        }
    }
    Ok(0)
}

/// `aa-rate RUN...`: the comparisons of each run recomputed with the
/// matrix's declarations, the A/A ones counted per arch. 0 when every goal
/// is met, 1 otherwise.
pub fn cmd_aa_rate(runs: &[PathBuf], matrix: &Path, metrics: &[String]) -> Result<u8> {
    let m = crate::load_matrix(matrix)?;
    let mut all = Vec::new();
    let mut loaded = Vec::new();
    for p in runs {
        let run = load_run(p)?;
        all.push((p.display().to_string(), compare::compare(&run, &m)));
        loaded.push(run);
    }
    let t = aa::tally(&all, metrics);
    print!("{}", aa::text(&t));
    let mut noise = aa::noise(&loaded.iter().collect::<Vec<_>>(), &m);
    noise.retain(|(_, name), _| metrics.is_empty() || metrics.iter().any(|p| name.starts_with(p)));
    print!("{}", aa::noise_text(&noise));
    Ok(if aa::all_met(&t) { 0 } else { 1 })
}
