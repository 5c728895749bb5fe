//! Matrices derived from matrix.toml by the command line: your own kernel
//! tree (`--tree`), your own patches (`--series`, `--range`), and the
//! prefixes of a series that sweep and bisect step through (`NAME@K`).
//!
//! Pure apart from reading the patch directory: the git work (resolving
//! revs, `format-patch` of a range) happens in build/source.rs and hands
//! its results in.

use std::path::Path;

use anyhow::{bail, Result};
use toml::Spanned;

use crate::plan::matrix::{Kernel, Matrix, SeriesSpec, SourceSpec};

fn spanned<T>(v: T) -> Spanned<T> {
    Spanned::new(0..0, v)
}

/// The variant name of the first `k` patches of `series` (0: the base).
pub fn prefix_name(series: &str, k: usize) -> String {
    if k == 0 {
        "base".to_string()
    } else {
        format!("{series}@{k}")
    }
}

/// A name for a directory or tree usable in a cell id: its last component
/// with anything but `[A-Za-z0-9._-]` replaced.
pub fn name_of(path: &Path) -> String {
    let mut raw = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "tree".into());
    // An mbox file is named without its extension (b4 am's `.mbx`).
    for ext in [".mbx", ".mbox", ".eml"] {
        if let Some(stem) = raw.strip_suffix(ext).filter(|s| !s.is_empty()) {
            raw = stem.to_string();
        }
    }
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if clean.is_empty() || clean == "base" {
        "tree".into()
    } else {
        clean
    }
}

/// The series name `--range BASE..TIP` gives its commits (as
/// `bisect::apply_sources` names it).
pub fn range_name(range: &str) -> String {
    // A full commit id (what CI passes) is shortened as git log does.
    let short = |end: &str| -> String {
        if end.len() == 40 && end.bytes().all(|b| b.is_ascii_hexdigit()) {
            end[..12].to_string()
        } else {
            end.to_string()
        }
    };
    let named = match range.split_once("..") {
        Some((a, b)) => format!("{}..{}", short(a), short(b)),
        None => range.to_string(),
    };
    name_of(Path::new(&named.replace('/', "-")))
}

/// Replaces the matrix's kernels by one built from a local git tree at
/// `rev`, named `name`, with no series (add one with `use_series`).
pub fn use_tree(m: &mut Matrix, name: &str, tree: &Path, rev: &str) {
    m.kernel.clear();
    m.kernel.insert(
        name.to_string(),
        Kernel {
            source: spanned(SourceSpec::Git {
                path: tree.display().to_string(),
                rev: rev.to_string(),
            }),
            series: vec![],
            selftests_from: None,
            configs: vec![],
        },
    );
}

/// The one value of a setting (kernel, arch, config): `--WHAT` when given,
/// else the matrix's only one.
pub fn pick_one(what: &str, given: Option<&str>, known: Vec<String>) -> Result<String> {
    match given {
        Some(g) if known.iter().any(|k| k == g) => Ok(g.to_string()),
        Some(g) => bail!(
            "--{what} {g}: not in the matrix; known: {}",
            known.join(", ")
        ),
        None if known.len() == 1 => Ok(known[0].clone()),
        None => bail!("say which --{what}: the matrix has {}", known.join(", ")),
    }
}

/// The one kernel the command means: `--kernel K`, or the matrix's only one.
pub fn pick_kernel(m: &Matrix, wanted: Option<&str>) -> Result<String> {
    pick_one("kernel", wanted, m.kernel.keys().cloned().collect())
}

/// Makes the series in `dir` (named `name`) the only series of `kernel`.
/// Its selftests come from each variant's own tree unless the matrix's
/// `selftests_from` still names a series of the kernel.
pub fn use_series(m: &mut Matrix, kernel: &str, name: &str, dir: &Path) -> Result<()> {
    if name == "base" {
        bail!("a series cannot be called `base`: rename {}", dir.display());
    }
    m.series.insert(
        name.to_string(),
        SeriesSpec {
            dir: dir.display().to_string(),
            take: None,
            origin: None,
        },
    );
    let k = m.kernel.get_mut(kernel).expect("picked from the matrix");
    k.series = vec![spanned(name.to_string())];
    if k.selftests_from
        .as_ref()
        .is_some_and(|s| s.get_ref() != name)
    {
        k.selftests_from = None;
    }
    // The kernel's case expectations were written knowing the series
    // replaced (and whose selftests its base ran): a case of theirs that
    // the new series' cells do not run is no mismatch.
    for e in &mut m.expect {
        let of_kernel = e
            .cell
            .split('/')
            .next()
            .is_some_and(|k| crate::plan::glob::name_matches(k, kernel));
        if of_kernel && e.case.is_some() {
            e.for_replaced_series = true;
        }
    }
    Ok(())
}

/// The one series of `kernel` the command means: `--series-name`, or the
/// kernel's only series.
pub fn pick_series(m: &Matrix, kernel: &str, wanted: Option<&str>) -> Result<String> {
    let names: Vec<String> = m.kernel[kernel]
        .series
        .iter()
        .map(|s| s.get_ref().clone())
        .collect();
    pick_series_in(kernel, &names, wanted)
}

/// `pick_series` over the series `names` of `kernel` (what the source
/// flags will have made of them, when checked before any work).
pub fn pick_series_in(kernel: &str, names: &[String], wanted: Option<&str>) -> Result<String> {
    // A prefix (`NAME@K`) of another listed series is part of it: with no
    // --series-name, the whole series is meant.
    let whole: Vec<String> = names
        .iter()
        .filter(|n| {
            crate::plan::matrix::split_prefix(n).is_none_or(|(s, _)| !names.iter().any(|m| m == s))
        })
        .cloned()
        .collect();
    match wanted {
        None if whole.len() == 1 => Ok(whole[0].clone()),
        Some(s) if names.iter().any(|n| n == s) => Ok(s.to_string()),
        Some(s) => bail!(
            "--series-name {s}: not a series of kernel {kernel}; it has: {}",
            names.join(", ")
        ),
        None if names.len() == 1 => Ok(names[0].clone()),
        None if names.is_empty() => bail!(
            "kernel {kernel} has no series: give one with --series DIR or --tree PATH --range A..B"
        ),
        None => bail!(
            "kernel {kernel} has several series ({}): say which with --series-name",
            names.join(", ")
        ),
    }
}

/// Replaces `series` of `kernel` by its `n` prefixes `series@1..=n`: the
/// variants of a sweep or bisect (the base is the 0th). Each prefix is a
/// series of its own whose first `k` patches git applies once (source.rs
/// keeps every prefix's commit, so the prefixes cost one `git am` pass).
pub fn prefixes(m: &mut Matrix, kernel: &str, series: &str, n: usize) -> Vec<String> {
    let dir = m.series[series].dir.clone();
    let origin = m.series[series].origin.clone();
    let names: Vec<String> = (1..=n).map(|k| prefix_name(series, k)).collect();
    for (k, name) in names.iter().enumerate() {
        m.series.insert(
            name.clone(),
            SeriesSpec {
                dir: dir.clone(),
                take: Some(k + 1),
                origin: origin.clone(),
            },
        );
    }
    let kern = m.kernel.get_mut(kernel).expect("picked from the matrix");
    kern.series = names.iter().cloned().map(spanned).collect();
    // Every prefix builds its selftests from the full series' tree when the
    // matrix asked for that: one test binary for the whole sweep.
    if kern
        .selftests_from
        .as_ref()
        .is_some_and(|s| s.get_ref() == series)
    {
        kern.selftests_from = Some(spanned(names[n - 1].clone()));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        Matrix::parse(
            "m.toml",
            r#"
[run]
arches = ["x86_64", "arm64"]
configs = ["tiny"]
tests = ["t"]
[kernel."6.1"]
source = { debian = "linux-source-6.1" }
series = ["s"]
selftests_from = "s"
[series.s]
dir = "kernels/series/s"
[config.tiny]
base = "tinyconfig"
[test.t]
kind = "shell"
command = "true"
"#,
        )
        .unwrap()
    }

    #[test]
    fn prefixes_become_variants_in_order_after_the_base() {
        let mut m = matrix();
        let names = prefixes(&mut m, "6.1", "s", 3);
        assert_eq!(names, ["s@1", "s@2", "s@3"]);
        assert_eq!(m.series["s@2"].take, Some(2));
        assert_eq!(m.series["s@2"].dir, "kernels/series/s");
        let ids: Vec<String> = m
            .cells(&crate::plan::matrix::Filters {
                arch: vec!["x86_64".into()],
                ..Default::default()
            })
            .unwrap()
            .iter()
            .map(|c| c.id())
            .collect();
        assert_eq!(
            ids,
            [
                "6.1/base/x86_64/tiny",
                "6.1/s@1/x86_64/tiny",
                "6.1/s@2/x86_64/tiny",
                "6.1/s@3/x86_64/tiny"
            ]
        );
        // One selftest binary for the whole sweep: the full series' tree.
        assert_eq!(
            m.kernel["6.1"].selftests_from.as_ref().unwrap().get_ref(),
            "s@3"
        );
    }

    #[test]
    fn a_tree_replaces_the_kernels_and_a_series_dir_replaces_the_series() {
        let mut m = matrix();
        use_tree(&mut m, "linux", Path::new("/src/linux"), "abc123");
        assert_eq!(m.kernel.keys().collect::<Vec<_>>(), ["linux"]);
        use_series(&mut m, "linux", "mine", Path::new("/p/mine")).unwrap();
        assert_eq!(pick_series(&m, "linux", None).unwrap(), "mine");
        assert!(pick_series(&m, "linux", Some("s")).is_err());
        let ids: Vec<String> = m
            .cells(&Default::default())
            .unwrap()
            .iter()
            .map(|c| c.id())
            .collect();
        assert!(
            ids.contains(&"linux/mine/arm64/tiny".to_string()),
            "{ids:?}"
        );
        assert!(use_series(&mut m, "linux", "base", Path::new("/p/base")).is_err());
    }

    #[test]
    fn a_replaced_series_case_expectations_hold_only_for_cases_that_run() {
        let text = r#"
[run]
arches = ["x86_64"]
configs = ["tiny"]
tests = ["t"]
[kernel."6.1"]
source = { debian = "linux-source-6.1" }
series = ["s"]
selftests_from = "s"
[series.s]
dir = "kernels/series/s"
[config.tiny]
base = "tinyconfig"
[test.t]
kind = "shell"
command = "true"
[[expect]]
cell = "6.1/base/*/*"
test = "t"
case = "sync"
outcome = "fail"
reason = "the series adds it"
[[expect]]
cell = "*/*/*/*"
test = "t"
outcome = "pass"
reason = "a whole test"
"#;
        let mut m = Matrix::parse("m.toml", text).unwrap();
        assert!(m.expect.iter().all(|e| !e.for_replaced_series));
        use_series(&mut m, "6.1", "mine", Path::new("/p/mine")).unwrap();
        let marked: Vec<bool> = m.expect.iter().map(|e| e.for_replaced_series).collect();
        assert_eq!(marked, [true, false]);
        assert!(m.kernel["6.1"].selftests_from.is_none());
    }

    #[test]
    fn names_from_paths_are_cell_id_safe() {
        assert_eq!(name_of(Path::new("/home/me/linux")), "linux");
        assert_eq!(name_of(Path::new("/tmp/my series")), "my-series");
        assert_eq!(name_of(Path::new("/x/base")), "tree");
        assert_eq!(name_of(Path::new("/")), "tree");
        assert_eq!(range_name("v6.12..my/branch"), "v6.12..my-branch");
        assert_eq!(
            range_name("ad28805fe2c01cb6d2b70d35eb922512db3f8e31..b515d3cfbac8d865d527c6281b3d0ea67256a6c4"),
            "ad28805fe2c0..b515d3cfbac8"
        );
    }

    #[test]
    fn the_kernel_must_be_named_when_there_are_several() {
        let mut m = matrix();
        assert_eq!(pick_kernel(&m, None).unwrap(), "6.1");
        let k = Kernel {
            source: spanned(SourceSpec::Tarball("/x.tar".into())),
            series: vec![],
            selftests_from: None,
            configs: vec![],
        };
        m.kernel.insert("6.12".into(), k);
        let e = pick_kernel(&m, None).unwrap_err().to_string();
        assert!(e.contains("--kernel"), "{e}");
        assert!(pick_kernel(&m, Some("7.0")).is_err());
    }

    /// With no --series-name, a kernel's only whole series is meant: a
    /// listed prefix of it (`NAME@K`) is part of it, not a rival.
    #[test]
    fn a_prefix_of_a_listed_series_is_not_another_series_to_choose() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pick = |v: &[&str], w| pick_series_in("6.12", &names(v), w);
        assert_eq!(
            pick(&["mm-cid-work@1", "mm-cid-work"], None).unwrap(),
            "mm-cid-work"
        );
        assert_eq!(pick(&["mm-cid-work@1"], None).unwrap(), "mm-cid-work@1");
        assert_eq!(
            pick(&["mm-cid-work@1", "mm-cid-work"], Some("mm-cid-work@1")).unwrap(),
            "mm-cid-work@1"
        );
        let e = pick(&["a@1", "a", "b"], None).unwrap_err().to_string();
        assert!(e.contains("several series (a@1, a, b)"), "{e}");
    }
}
