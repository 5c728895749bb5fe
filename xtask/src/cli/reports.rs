//! Reading finished runs and writing their reports: shared by `matrix`,
//! `merge`, `report`, `compare`, `aa-rate` and `sweep`. File IO and the
//! GitHub Actions environment live here; what is computed lives in
//! `stats/`, what is rendered in `report/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::plan::matrix::Matrix;
use crate::report::{compare, gha, html, junit, kcidb, markdown};
use crate::schema::Run;
use crate::stats::bootstrap::never;
use crate::stats::intervals::MedianCis;

/// `DIR/results.json`, or the file itself when given one.
pub fn results_file(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.join("results.json")
    } else {
        p.to_path_buf()
    }
}

/// Loads and checks a results.json (`schema::Run::load`: an error names
/// the file and what is wrong in it).
pub fn load_run(p: &Path) -> Result<Run> {
    Run::load(&results_file(p))
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
        let Ok(mut patches) = crate::plan::series::files(name, &root.join(&s.dir)) else {
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

impl Targets {
    /// The files to be written.
    pub fn paths(&self) -> Vec<&Path> {
        [&self.junit, &self.html, &self.kcidb]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path)
            .collect()
    }
}

/// Whether the command was interrupted (Ctrl-C, SIGTERM): the reading
/// commands ask between runs, comparisons and reports, and the
/// statistics inside each bootstrap.
pub fn stop() -> bool {
    crate::host::signals::interrupted()
}

/// An error once interrupted: the command ends (exit 2) before it writes
/// anything more.
pub fn check_interrupted() -> Result<()> {
    if stop() {
        bail!("interrupted: nothing written");
    }
    Ok(())
}

/// Files written all or nothing: each first to a temporary name in its
/// own directory; `commit` renames them all into place once every one is
/// written. Whatever is not committed (an error, an interrupt) is removed
/// when this is dropped, so a failed command leaves no file behind and
/// replaces none.
#[derive(Default)]
pub struct Staged {
    /// (temporary, final) paths.
    files: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    /// Refuses before anything is made when a target's directory does not
    /// exist (a typo must not cost a run's other files) or the target is a
    /// directory.
    pub fn check(paths: &[&Path]) -> Result<()> {
        for p in paths {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if !dir.is_dir() {
                bail!(
                    "cannot write {}: no directory {} (nothing was written)",
                    p.display(),
                    dir.display()
                );
            }
            if p.is_dir() {
                bail!(
                    "cannot write {}: it is a directory (nothing was written)",
                    p.display()
                );
            }
        }
        Ok(())
    }

    /// Writes `data` to a temporary file beside `path`.
    pub fn add(&mut self, path: &Path, data: &[u8]) -> Result<()> {
        let name = path
            .file_name()
            .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        self.files.push((tmp.clone(), path.to_path_buf()));
        std::fs::write(&tmp, data).with_context(|| format!("writing {}", path.display()))
    }

    /// Every file into place, unless interrupted meanwhile.
    pub fn commit(mut self) -> Result<()> {
        check_interrupted()?;
        for (tmp, path) in std::mem::take(&mut self.files) {
            std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in &self.files {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Renders the reports of `run` into `staged`; `m` gives the series for
/// KCIDB's patch sets, `cis` the metrics' median CIs (shared with the
/// summary, given up on when interrupted).
pub fn stage_reports(
    staged: &mut Staged,
    root: &Path,
    run: &Run,
    m: Option<&Matrix>,
    t: &Targets,
    cis: &MedianCis,
) -> Result<()> {
    if let Some(p) = &t.junit {
        let xml = junit::junit(run)
            .to_string()
            .map_err(|e| anyhow::anyhow!("JUnit: {e}"))?;
        staged.add(p, xml.as_bytes())?;
    }
    check_interrupted()?;
    if let Some(p) = &t.html {
        staged.add(p, html::html(run, cis).as_bytes())?;
    }
    check_interrupted()?;
    if let Some(p) = &t.kcidb {
        let ps = m.map(|m| patchsets(root, m, run)).unwrap_or_default();
        let doc = kcidb::kcidb(run, &ps, cis);
        staged.add(p, serde_json::to_string_pretty(&doc)?.as_bytes())?;
    }
    check_interrupted()
}

/// Writes the reports of `run`, all or none; `m` gives the series for
/// KCIDB's patch sets.
pub fn write_reports(root: &Path, run: &Run, m: Option<&Matrix>, t: &Targets) -> Result<()> {
    Staged::check(&t.paths())?;
    let mut staged = Staged::default();
    stage_reports(&mut staged, root, run, m, t, &MedianCis::new(&never))?;
    staged.commit()
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

pub fn summary(run: &Run) -> String {
    summary_with(run, &MedianCis::new(&never))
}

/// `summary` with the metrics' median CIs from `cis`.
pub fn summary_with(run: &Run, cis: &MedianCis) -> String {
    markdown::markdown(run, cis) + &compare::markdown(&run.comparisons)
}

/// Exit code as `matrix` gives it: 1 when a cell is not as expected (each
/// mismatch printed) or, asked to, when a metric regressed.
pub fn verdict_code(run: &Run, fail_on_regression: bool) -> u8 {
    let mut code = 0;
    for c in run.cells.iter().filter(|c| !c.as_expected) {
        for mm in &c.mismatches {
            eprintln!("MISMATCH {mm}");
        }
        code = 1;
    }
    if fail_on_regression && super::report_regressions(&run.comparisons) {
        code = 1;
    }
    code
}
