//! What a results.json must hold beyond its shape before anything computes
//! on it: this harness's schema, cell ids that say what their cells are
//! (`kernel/variant/arch/config`, a bisect step's with `@COMMIT` after
//! it), each cell once, boot sizes that add up to the samples (without
//! overflow), and samples that are finite numbers.
//!
//! Pure: a `Run` in, the first thing wrong with it (where, as a JSON path,
//! and what) out. `Run::load` calls it on every document it reads.

use std::collections::HashMap;
use std::fmt;

use super::{CellResult, Metric, Run, SCHEMA_VERSION};

/// The first thing wrong with a document: where (a JSON path such as
/// `cells[3].metrics[2].boot_sizes`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub path: String,
    pub what: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.what)
    }
}

impl std::error::Error for Invalid {}

fn invalid(path: impl Into<String>, what: impl Into<String>) -> Invalid {
    Invalid {
        path: path.into(),
        what: what.into(),
    }
}

/// Checks `run` as every reader needs it; the first problem found.
pub fn validate(run: &Run) -> Result<(), Invalid> {
    if run.schema != SCHEMA_VERSION {
        return Err(invalid(
            "schema",
            format!(
                "results.json schema {}; this harness reads and writes schema {SCHEMA_VERSION}",
                run.schema
            ),
        ));
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(run.cells.len());
    for (i, c) in run.cells.iter().enumerate() {
        let at = format!("cells[{i}]");
        check_id(&at, c)?;
        if let Some(j) = seen.insert(&c.id, i) {
            return Err(invalid(
                format!("{at}.id"),
                format!(
                    "{} is also the id of cells[{j}]: a run holds each cell once",
                    c.id
                ),
            ));
        }
        for (k, m) in c.metrics.iter().enumerate() {
            check_metric(&format!("{at}.metrics[{k}]"), m)?;
        }
    }
    Ok(())
}

/// `kernel/variant/arch/config`, or that and `@COMMIT` (a bisect step).
fn check_id(at: &str, c: &CellResult) -> Result<(), Invalid> {
    let want = format!("{}/{}/{}/{}", c.kernel, c.variant, c.arch, c.config);
    let step =
        c.id.strip_prefix(want.as_str())
            .and_then(|rest| rest.strip_prefix('@'))
            .is_some_and(|commit| !commit.is_empty() && !commit.contains('/'));
    if c.id == want || step {
        return Ok(());
    }
    Err(invalid(
        format!("{at}.id"),
        format!(
            "{} is not the cell's kernel/variant/arch/config, {want} (a bisect step's id may add @COMMIT)",
            c.id
        ),
    ))
}

fn check_metric(at: &str, m: &Metric) -> Result<(), Invalid> {
    if let Some((s, x)) = m.samples.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(invalid(
            format!("{at}.samples[{s}]"),
            format!("{x} is not a finite number ({})", m.name),
        ));
    }
    if m.boot_sizes.is_empty() {
        return Ok(());
    }
    match m.boot_total() {
        None => Err(invalid(
            format!("{at}.boot_sizes"),
            format!(
                "the boot sizes add up to more than {} (they overflow); {} has {} samples",
                usize::MAX,
                m.name,
                m.samples.len()
            ),
        )),
        Some(n) if n != m.samples.len() => Err(invalid(
            format!("{at}.boot_sizes"),
            format!(
                "the boot sizes add up to {n}; {} has {} samples",
                m.name,
                m.samples.len()
            ),
        )),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{CellResult, Outcome};
    use std::path::Path;

    fn metric(samples: &[f64], boot_sizes: &[usize]) -> Metric {
        Metric {
            boot_sizes: boot_sizes.to_vec(),
            ..Metric::fixture("b.x", "us", samples)
        }
    }

    fn cell(id: &str, metrics: Vec<Metric>) -> CellResult {
        CellResult {
            metrics,
            ..CellResult::blank(id, Outcome::Pass)
        }
    }

    #[test]
    fn every_captured_run_is_valid() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = repo.join("tests/fixtures/runs");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path().join("results.json");
            Run::load(&p).unwrap_or_else(|e| panic!("{e:#}"));
            n += 1;
        }
        assert!(n >= 6, "{n} runs");
        Run::load(&repo.join("tests/fixtures/results-default-matrix.json")).unwrap();
    }

    #[test]
    fn ids_must_say_what_the_cell_is_and_a_bisect_step_may_add_its_commit() {
        let ok = Run::fixture(vec![
            cell("6.1/base/x86_64/tiny", vec![]),
            cell("6.1/base/x86_64/tiny@0123456789ab", vec![]),
            cell("6.1/s@3/arm64/tiny", vec![]),
        ]);
        // blank() took the fields from the id; the step's commit went into
        // the config field there, so set it as bisect has it.
        let mut ok = ok;
        ok.cells[1].config = "tiny".into();
        assert_eq!(validate(&ok), Ok(()));
        let mut bad = ok.clone();
        bad.cells[2].arch = "x86_64".into();
        let e = validate(&bad).unwrap_err();
        assert_eq!(e.path, "cells[2].id");
        assert!(e.what.contains("6.1/s@3/x86_64/tiny"), "{e}");
        for id in ["6.1/base/x86_64/tiny@", "6.1/base/x86_64/tinyX", "x"] {
            let mut bad = ok.clone();
            bad.cells[0].id = id.into();
            assert_eq!(validate(&bad).unwrap_err().path, "cells[0].id", "{id}");
        }
    }

    #[test]
    fn a_cell_twice_is_refused_naming_both() {
        let r = Run::fixture(vec![
            cell("6.1/base/x86_64/tiny", vec![]),
            cell("6.1/s/x86_64/tiny", vec![]),
            cell("6.1/base/x86_64/tiny", vec![]),
        ]);
        let e = validate(&r).unwrap_err();
        assert_eq!(e.path, "cells[2].id");
        assert!(e.what.contains("also the id of cells[0]"), "{e}");
    }

    #[test]
    fn boot_sizes_must_add_up_without_overflow_and_samples_be_finite() {
        let id = "6.1/base/x86_64/tiny";
        let check = |m: Metric| validate(&Run::fixture(vec![cell(id, vec![metric(&[], &[]), m])]));
        assert_eq!(check(metric(&[1.0, 2.0, 3.0], &[1, 2])), Ok(()));
        assert_eq!(check(metric(&[1.0, 2.0, 3.0], &[])), Ok(()));
        assert_eq!(check(metric(&[1.0, 2.0, 3.0], &[0, 3])), Ok(()));
        let e = check(metric(&[1.0, 2.0, 3.0], &[usize::MAX, 4])).unwrap_err();
        assert_eq!(e.path, "cells[0].metrics[1].boot_sizes");
        assert!(e.what.contains("more than"), "{e}");
        let e = check(metric(&[1.0, 2.0, 3.0], &[1, 1])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cells[0].metrics[1].boot_sizes: the boot sizes add up to 2; b.x has 3 samples"
        );
        let e = check(metric(&[1.0, f64::NAN], &[])).unwrap_err();
        assert_eq!(e.path, "cells[0].metrics[1].samples[1]");
        let e = check(metric(&[f64::INFINITY], &[])).unwrap_err();
        assert!(e.what.starts_with("inf is not a finite number"), "{e}");
        let mut other = Run::fixture(vec![]);
        other.schema = 1;
        assert_eq!(validate(&other).unwrap_err().path, "schema");
    }

    /// What `Run::load` says of a file that is not a results.json this
    /// harness reads: the file, where (line:column, JSON path) and what.
    #[test]
    fn load_names_the_file_the_place_and_the_problem() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-validate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("results.json");
        let load = |text: &str| {
            std::fs::write(&f, text).unwrap();
            format!("{:#}", Run::load(&f).unwrap_err())
        };
        let good = serde_json::to_string_pretty(&Run::fixture(vec![cell(
            "6.1/base/x86_64/tiny",
            vec![metric(&[1.0, 2.0, 3.0], &[1, 2])],
        )]))
        .unwrap();
        std::fs::write(&f, &good).unwrap();
        Run::load(&f).unwrap();
        let name = f.display().to_string();
        assert_eq!(
            load("{\"schema\": 2, \"cells\": ["),
            format!("{name}:1:24: not valid JSON: EOF while parsing a list")
        );
        assert_eq!(
            load(&good.replace("\"schema\": 2", "\"schema\": 1")),
            format!("{name} has results.json schema 1; this harness reads and writes schema 2")
        );
        assert_eq!(
            load(&good.replace("\"schema\": 2,", "")),
            format!("{name} has no results.json schema number")
        );
        let e = load(&good.replace("2.0,", "null,"));
        assert!(
            e.starts_with(&format!("{name}:"))
                && e.contains(": not a results.json: cells[0].metrics[0].samples[1]: invalid type: null, expected f64"),
            "{e}"
        );
        let e = load(&good.replace(
            "\"boot_sizes\": [\n            1,",
            "\"boot_sizes\": [\n            18446744073709551615,",
        ));
        assert_eq!(
            e,
            format!("{name}: cells[0].metrics[0].boot_sizes: the boot sizes add up to more than {} (they overflow); b.x has 3 samples", usize::MAX)
        );
        assert_eq!(
            load(&format!("{good} {{}}")).split(": ").nth(1),
            Some("not valid JSON")
        );
        let missing = dir.join("nowhere.json");
        assert!(format!("{:#}", Run::load(&missing).unwrap_err())
            .starts_with(&format!("cannot read results file {}", missing.display())));
        // A FIFO or a device is refused before it is opened: nothing blocks.
        let e = format!("{:#}", Run::load(Path::new("/dev/zero")).unwrap_err());
        assert_eq!(
            e,
            "results file /dev/zero is not a regular file (a FIFO, socket or device); expected a regular file"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
