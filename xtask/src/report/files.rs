//! A run's report files: reading a finished run (results.json, checked),
//! writing summary.md, report.html, junit.xml, kcidb.json and compare.json
//! all or none (staged beside their targets, renamed when all are done),
//! GitHub Actions' step summary, the REGRESSION lines and the exit code of
//! a verdict. Shared by `matrix`, `merge`, `report`, `compare`, `aa-rate`
//! and `sweep`. The one file of report/ that touches files: what is
//! computed lives in `stats/`, what is rendered in the other files here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::history::trend::History;
use crate::plan::matrix::Matrix;
use crate::report::{compare, gha, html, junit, kcidb, markdown, trend};
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
        let Ok(mut patches) = crate::build::series::patch_files(name, &root.join(&s.dir)) else {
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

/// Rewrites `dir`/report.html with the trends of the run's cells across
/// the history `h` at its end.
pub fn write_html_with_history(run: &Run, dir: &Path, h: &History) -> Result<()> {
    let page = html::with_end(run, &MedianCis::new(&never), Some(trend::across_runs(h)));
    let path = dir.join("report.html");
    crate::host::cache::write_atomic(&path, page.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
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
    if fail_on_regression && report_regressions(&run.comparisons) {
        code = 1;
    }
    code
}

/// What `compare RUN_A RUN_B` writes: both runs and the comparisons.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RunComparison {
    pub schema: u32,
    pub base_run: String,
    pub new_run: String,
    pub comparisons: Vec<crate::schema::Comparison>,
}

/// Prints a REGRESSION line per regressed comparison; true when any.
pub fn report_regressions(cs: &[crate::schema::Comparison]) -> bool {
    let mut any = false;
    for c in cs
        .iter()
        .filter(|c| c.verdict == crate::schema::Verdict::Regressed)
    {
        eprintln!(
            "REGRESSION {} {} vs {} {}: {:+.1}% [{:+.1}%, {:+.1}%], p={:.4}",
            c.new_cell,
            c.new_metric,
            c.base_cell,
            c.base_metric,
            c.pct_change,
            c.ci95_lo,
            c.ci95_hi,
            c.p_value
        );
        any = true;
    }
    any
}

/// The readers' code path (load and check, merge, compare, every report)
/// on real results.json documents mutated at random: numbers to 0, -1,
/// 1e308, u64::MAX, null; arrays cut, emptied or doubled; ids changed;
/// fields removed. Whatever the document, no panic; a document that is
/// read gives comparisons whose figures are numbers unless the verdict is
/// `cannot-compare` (with a reason), and reports with no NaN, no
/// infinity, and no null where a number belongs.
#[cfg(test)]
mod mutations {
    use std::collections::BTreeMap;

    use rand_xoshiro::rand_core::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256StarStar;
    use serde_json::{json, Value};

    use super::*;
    use crate::plan::matrix::Filters;
    use crate::schema::{merge, Verdict, SCHEMA_VERSION};
    use crate::stats::{aa, compare as stats_compare};

    struct Draw(Xoshiro256StarStar);

    impl Draw {
        fn below(&mut self, n: usize) -> usize {
            (self.0.next_u64() % n.max(1) as u64) as usize
        }
    }

    /// The captured runs, each cut to at most 4 samples a boot (so a
    /// bootstrap of 10000 resamples stays cheap in a debug build).
    fn corpus() -> Vec<(String, Value)> {
        let repo = crate::golden::repo_file("");
        let mut files: Vec<std::path::PathBuf> =
            std::fs::read_dir(repo.join("tests/fixtures/runs"))
                .unwrap()
                .map(|e| e.unwrap().path().join("results.json"))
                .collect();
        files.push(repo.join("tests/fixtures/results-default-matrix.json"));
        files.sort();
        files
            .into_iter()
            .map(|f| {
                let mut v: Value =
                    serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
                for c in v["cells"].as_array_mut().unwrap() {
                    for m in c["metrics"].as_array_mut().unwrap() {
                        shrink(m, 4);
                    }
                }
                (f.display().to_string(), v)
            })
            .collect()
    }

    fn shrink(m: &mut Value, per_boot: usize) {
        if !m.is_object() {
            return;
        }
        let samples: Vec<Value> = m["samples"].as_array().cloned().unwrap_or_default();
        let sizes: Option<Vec<usize>> = match m["boot_sizes"].as_array() {
            Some(b) => b.iter().map(|x| x.as_u64().map(|n| n as usize)).collect(),
            None => Some(vec![samples.len()]),
        };
        // Sizes a change made unusable: one boot.
        let sizes = sizes
            .filter(|s| s.iter().try_fold(0usize, |a, &n| a.checked_add(n)) == Some(samples.len()))
            .unwrap_or_else(|| vec![samples.len()]);
        let (mut out, mut new_sizes, mut at) = (Vec::new(), Vec::new(), 0);
        for n in sizes {
            out.extend(samples[at..at + n].iter().take(per_boot).cloned());
            new_sizes.push(n.min(per_boot));
            at += n;
        }
        m["samples"] = Value::Array(out);
        if m.get("boot_sizes").is_some() {
            m["boot_sizes"] = json!(new_sizes);
        }
    }

    /// Every place in `v`: (path as indices/keys), for the mutations to
    /// pick from.
    fn places(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(at.clone());
        match v {
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    at.push(i.to_string());
                    places(x, at, out);
                    at.pop();
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    at.push(k.clone());
                    places(x, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }

    fn at_mut<'a>(v: &'a mut Value, path: &[String]) -> &'a mut Value {
        path.iter().fold(v, |v, k| match v {
            Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
            Value::Object(o) => o.get_mut(k).unwrap(),
            _ => unreachable!(),
        })
    }

    const NUMBERS: [f64; 8] = [0.0, -1.0, 1e308, -1e308, 1.8e19, 5e-324, 0.5, 1e-9];

    /// One random change somewhere in `doc`; what it did.
    fn mutate(doc: &mut Value, r: &mut Draw) -> String {
        // Most changes aim at what the statistics read.
        if r.below(3) == 0 {
            return mutate_metric(doc, r);
        }
        let mut all = Vec::new();
        places(doc, &mut Vec::new(), &mut all);
        let path = all[r.below(all.len())].clone();
        let shown = path.join(".");
        let x = at_mut(doc, &path);
        match x {
            Value::Number(_) => {
                let k = r.below(NUMBERS.len() + 2);
                *x = match k {
                    k if k < NUMBERS.len() => json!(NUMBERS[k]),
                    k if k == NUMBERS.len() => json!(u64::MAX),
                    _ => Value::Null,
                };
                format!("{shown} = {x}")
            }
            Value::Array(a) if !a.is_empty() => match r.below(4) {
                0 => {
                    let n = r.below(a.len());
                    a.truncate(n);
                    format!("{shown} cut to {n}")
                }
                1 => {
                    let copy = a.clone();
                    a.extend(copy);
                    format!("{shown} doubled")
                }
                2 => {
                    let i = r.below(a.len());
                    let e = a[i].clone();
                    a.insert(i, e);
                    format!("{shown}[{i}] twice")
                }
                _ => {
                    a.clear();
                    format!("{shown} emptied")
                }
            },
            Value::Object(o) if !o.is_empty() => {
                let keys: Vec<String> = o.keys().cloned().collect();
                let k = &keys[r.below(keys.len())];
                o.remove(k);
                format!("{shown}.{k} removed")
            }
            Value::String(s) => {
                let new = match r.below(5) {
                    0 => String::new(),
                    1 => format!("{s}@0123456789ab"),
                    2 => "6.1/base/x86_64/tiny".into(),
                    3 => "cannot-compare".into(),
                    _ => format!("{s}/x"),
                };
                let was = std::mem::replace(s, new);
                format!("{shown}: {was} -> {s}")
            }
            Value::Bool(b) => {
                *b = !*b;
                format!("{shown} flipped")
            }
            _ => {
                *x = json!(NUMBERS[r.below(NUMBERS.len())]);
                format!("{shown} = {x}")
            }
        }
    }

    /// A change to one metric's samples or boot sizes, keeping the
    /// document valid more often than not.
    fn mutate_metric(doc: &mut Value, r: &mut Draw) -> String {
        // Earlier changes may have taken the cells or metrics away.
        let Some(cells) = doc.get_mut("cells").and_then(Value::as_array_mut) else {
            return "no cells".into();
        };
        if cells.is_empty() {
            return "no cell".into();
        }
        let ci = r.below(cells.len());
        let Some(ms) = cells[ci].get_mut("metrics").and_then(Value::as_array_mut) else {
            return "no metrics".into();
        };
        if ms.is_empty() {
            return "no metric".into();
        }
        let mi = r.below(ms.len());
        let m = &mut ms[mi];
        if !m.is_object() {
            return "a metric that is no object".into();
        }
        let n = m["samples"].as_array().map_or(0, Vec::len);
        let what = match r.below(6) {
            0 => {
                let v = NUMBERS[r.below(NUMBERS.len())];
                m["samples"] = json!(vec![v; n]);
                format!("every sample {v}")
            }
            1 if n > 0 => {
                let v = NUMBERS[r.below(NUMBERS.len())];
                let i = r.below(n);
                m["samples"][i] = json!(v);
                format!("sample {i} = {v}")
            }
            2 => {
                m["boot_sizes"] = json!([0, n]);
                "an empty first boot".into()
            }
            3 if n > 1 => {
                m["boot_sizes"] = json!([u64::MAX, n as u64 + 1]);
                "boot sizes that overflow".into()
            }
            4 => {
                m["skip"] = Value::Null;
                m["samples"] = json!([]);
                m["boot_sizes"] = json!([]);
                "no samples".into()
            }
            _ => {
                let k = 1 + r.below(3);
                shrink(m, k);
                format!("{k} samples a boot")
            }
        };
        format!("cells[{ci}].metrics[{mi}]: {what}")
    }

    /// Keys whose values are numbers wherever they appear in what the
    /// readers write.
    const NUMERIC: &[&str] = &[
        "pct_change",
        "ci95_lo",
        "ci95_hi",
        "p_value",
        "median_base",
        "median_new",
        "cv_base",
        "cv_new",
        "min_effect_pct",
        "boot_sd_pct",
        "value",
        "cv",
        "median",
        "at",
        "samples",
        "ci95",
        "median_ci95",
        "n",
        "n_base",
        "n_new",
        "quantile",
        "duration",
    ];

    /// Numeric keys whose null says "none" (KCIDB's `median_ci95` of a
    /// metric of fewer than 6 samples): only their elements must be
    /// numbers.
    const NONE_AS_NULL: &[&str] = &["median_ci95"];

    /// Nulls under a numeric key (or inside one of their arrays).
    fn nulls(v: &Value, key: &str, at: &str, out: &mut Vec<String>) {
        walk(v, key, false, at, out);
    }

    fn walk(v: &Value, key: &str, element: bool, at: &str, out: &mut Vec<String>) {
        match v {
            Value::Null if NUMERIC.contains(&key) && (element || !NONE_AS_NULL.contains(&key)) => {
                out.push(at.to_string())
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, key, true, &format!("{at}[{i}]"), out);
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    walk(x, k, false, &format!("{at}.{k}"), out);
                }
            }
            _ => {}
        }
    }

    fn no_nan_or_inf(what: &str, text: &str) -> Result<(), String> {
        let re = regex::Regex::new(r"\b(NaN|inf)\b").unwrap();
        match re.find(text) {
            Some(m) => {
                let from = m.start().saturating_sub(80);
                Err(format!(
                    "{what}: {:?}",
                    &text[from..(m.end() + 40).min(text.len())]
                ))
            }
            None => Ok(()),
        }
    }

    fn no_nulls(what: &str, v: &Value) -> Result<(), String> {
        let mut found = Vec::new();
        nulls(v, "", "", &mut found);
        if found.is_empty() {
            Ok(())
        } else {
            Err(format!("{what}: null at {found:?}"))
        }
    }

    /// Everything `merge`, `report`, `compare` and `aa-rate` do with a
    /// document after reading it, as they do it; the first thing wrong.
    fn read_as_the_commands_do(
        text: &str,
        base: &crate::schema::Run,
        m: &crate::plan::matrix::Matrix,
    ) -> Result<bool, String> {
        let Ok(run) = crate::schema::Run::parse(text) else {
            return Ok(false);
        };
        let cis = MedianCis::new(&never);
        // `report`: the document's own comparisons, as stored.
        no_nan_or_inf("report: summary.md", &summary_with(&run, &cis))?;
        no_nan_or_inf("report: report.html", &html::html(&run, &cis))?;
        let k = kcidb::kcidb(&run, &BTreeMap::new(), &cis);
        no_nulls("report: kcidb.json", &k)?;
        no_nan_or_inf("report: kcidb.json", &k.to_string())?;
        let xml = junit::junit(&run).to_string().map_err(|e| e.to_string())?;
        no_nan_or_inf("report: junit.xml", &xml)?;
        no_nan_or_inf("report: annotations", &gha::annotations(&run).join("\n"))?;
        // `merge`.
        let order: Vec<String> = m
            .cells(&Filters::default())
            .map(|cs| cs.iter().map(|c| c.id()).collect())
            .unwrap_or_default();
        if let Ok(mut merged) = merge::merge(&[("a".into(), run.clone())], &order) {
            merged.comparisons = stats_compare::compare(&merged, m);
            for c in &merged.comparisons {
                let figures = [c.pct_change, c.ci95_lo, c.ci95_hi, c.p_value];
                match c.verdict {
                    Verdict::CannotCompare if c.reason.is_none() => {
                        return Err(format!("cannot-compare without a reason: {c:?}"))
                    }
                    Verdict::CannotCompare => {}
                    _ if figures.iter().any(|x| !x.is_finite()) => {
                        return Err(format!("{} with a figure not a number: {c:?}", c.verdict))
                    }
                    _ => {}
                }
            }
            let written = serde_json::to_value(&merged).map_err(|e| e.to_string())?;
            no_nulls("merge: results.json", &written)?;
            let again = crate::schema::Run::parse(&written.to_string())
                .map_err(|e| format!("merge: results.json does not read back: {e}"))?;
            if again.comparisons.len() != merged.comparisons.len() {
                return Err("merge: comparisons lost on reading back".into());
            }
            no_nan_or_inf("merge: summary.md", &summary_with(&merged, &cis))?;
            no_nan_or_inf("merge: report.html", &html::html(&merged, &cis))?;
            no_nulls(
                "merge: kcidb.json",
                &kcidb::kcidb(&merged, &BTreeMap::new(), &cis),
            )?;
            no_nan_or_inf("merge: annotations", &gha::annotations(&merged).join("\n"))?;
        }
        // `compare RUN_A RUN_B`, with the unchanged document as the base.
        let cs = stats_compare::compare_runs_until(base, &run, m, &never).unwrap_or_default();
        no_nan_or_inf("compare: compare.md", &compare::markdown(&cs))?;
        let doc = RunComparison {
            schema: SCHEMA_VERSION,
            base_run: "a".into(),
            new_run: "b".into(),
            comparisons: cs.clone(),
        };
        no_nulls(
            "compare: compare.json",
            &serde_json::to_value(&doc).unwrap(),
        )?;
        // `aa-rate`.
        let twin = crate::plan::matrix::AA_VARIANT;
        let t = aa::tally(&[("b".into(), cs)], &[], twin);
        no_nan_or_inf("aa-rate", &crate::report::aa::text(&t, twin))?;
        no_nan_or_inf(
            "aa-rate: noise",
            &crate::report::aa::noise_text(&aa::noise(&[&run], m, twin), twin),
        )?;
        Ok(true)
    }

    /// Seeds from `start` until `budget` has passed (and at least 30): a
    /// few seconds in every `cargo test`; KMATRIX_MUTATIONS_SECONDS runs a
    /// longer campaign.
    #[test]
    fn mutated_runs_never_panic_nor_show_a_figure_that_is_not_a_number() {
        let budget: f64 = std::env::var("KMATRIX_MUTATIONS_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4.0);
        let m = crate::plan::matrix::Matrix::parse(
            "matrix.toml",
            &std::fs::read_to_string(crate::golden::repo_file("matrix.toml")).unwrap(),
        )
        .unwrap();
        let corpus = corpus();
        let bases: Vec<crate::schema::Run> = corpus
            .iter()
            .map(|(_, v)| crate::schema::Run::parse(&v.to_string()).unwrap())
            .collect();
        let t = std::time::Instant::now();
        let (mut n, mut read) = (0u64, 0u64);
        let mut failures = Vec::new();
        while n < 30 || t.elapsed().as_secs_f64() < budget {
            let mut r = Draw(Xoshiro256StarStar::seed_from_u64(n));
            let which = r.below(corpus.len());
            let (file, mut doc) = corpus[which].clone();
            // A few cells, so each try is cheap.
            let cells = doc["cells"].as_array_mut().unwrap();
            let keep = 1 + r.below(3);
            let from = r.below(cells.len().saturating_sub(keep) + 1);
            *cells = cells.iter().skip(from).take(keep).cloned().collect();
            let changes: Vec<String> = (0..1 + r.below(3))
                .map(|_| mutate(&mut doc, &mut r))
                .collect();
            let text = doc.to_string();
            let outcome =
                std::panic::catch_unwind(|| read_as_the_commands_do(&text, &bases[which], &m));
            match outcome {
                Ok(Ok(was_read)) => read += u64::from(was_read),
                Ok(Err(e)) => failures.push(format!("seed {n} ({file}, {changes:?}): {e}")),
                Err(_) => failures.push(format!("seed {n} ({file}, {changes:?}): panicked")),
            }
            n += 1;
        }
        eprintln!(
            "mutations: {n} documents ({read} read, {} refused) in {:.1}s",
            n - read,
            t.elapsed().as_secs_f64()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
