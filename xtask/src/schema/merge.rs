//! Merging results.json documents (one per CI job, each holding some cells)
//! into one run of the same schema.
//!
//! Pure: documents in, one document or the reason it cannot be made out.
//! The merged run has no comparisons: the caller recomputes them with
//! `compare::reanalyse`, the same path the matrix driver takes, so a merged
//! run says what one run of all its cells would have said.

use std::collections::HashMap;
use std::fmt;

use crate::schema::{Run, SCHEMA_VERSION};

/// Why documents cannot be merged. Each names the file(s) at fault.
#[derive(Debug, PartialEq)]
pub enum MergeError {
    /// A document of another schema version than this harness writes.
    Schema { file: String, found: u32 },
    /// Two documents hold the same cell id with different content.
    Conflict {
        id: String,
        first: String,
        second: String,
    },
    /// Nothing to merge.
    NoInput,
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Schema { file, found } => write!(
                f,
                "{file} has results.json schema {found}; this harness reads and writes schema {SCHEMA_VERSION}"
            ),
            MergeError::Conflict { id, first, second } => write!(
                f,
                "cell {id} is in both {first} and {second} with different results; \
                 merge runs that each hold their own cells (or remove one of the two)"
            ),
            MergeError::NoInput => write!(f, "no results.json to merge"),
        }
    }
}

impl std::error::Error for MergeError {}

/// Merges `(file name, run)` pairs. Cells come out in `order` (the matrix's
/// expansion order, so a merged run reads like a single one), cells the
/// order does not know after them in input order. A cell present in several
/// documents with identical content is kept once. `started` is the
/// earliest; `host` and `matrix` are the first document's.
pub fn merge(inputs: &[(String, Run)], order: &[String]) -> Result<Run, MergeError> {
    let Some((_, first)) = inputs.first() else {
        return Err(MergeError::NoInput);
    };
    for (file, run) in inputs {
        if run.schema != SCHEMA_VERSION {
            return Err(MergeError::Schema {
                file: file.clone(),
                found: run.schema,
            });
        }
    }
    // Each id met so far: the input it came from, its place in out.cells.
    let mut cells: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut out = Run {
        schema: SCHEMA_VERSION,
        started: inputs
            .iter()
            .map(|(_, r)| r.started.as_str())
            .min()
            .unwrap_or_default()
            .to_string(),
        host: first.host.clone(),
        matrix: first.matrix.clone(),
        cells: vec![],
        comparisons: vec![],
        origins: vec![],
        // The jobs of one fan-out run the same flags, so the same looks.
        looks: first.looks,
        cross_checks: Vec::new(),
    };
    for (_, run) in inputs.iter() {
        for o in &run.origins {
            if !out.origins.contains(o) {
                out.origins.push(o.clone());
            }
        }
    }
    for (i, (file, run)) in inputs.iter().enumerate() {
        for c in &run.cells {
            if let Some(&(j, at)) = cells.get(c.id.as_str()) {
                if out.cells[at] != *c {
                    return Err(MergeError::Conflict {
                        id: c.id.clone(),
                        first: inputs[j].0.clone(),
                        second: file.clone(),
                    });
                }
                continue;
            }
            cells.insert(&c.id, (i, out.cells.len()));
            out.cells.push(c.clone());
        }
    }
    let mut place: HashMap<&str, usize> = HashMap::with_capacity(order.len());
    for (i, o) in order.iter().enumerate() {
        place.entry(o.as_str()).or_insert(i);
    }
    let rank = |id: &str| place.get(id).copied().unwrap_or(usize::MAX);
    // Stable: cells the order does not know keep their input order.
    out.cells.sort_by_key(|c| rank(&c.id));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{CellResult, Host, Outcome};

    fn run(started: &str, ids: &[&str]) -> Run {
        Run {
            started: started.into(),
            host: Host {
                hostname: started.into(),
                ..Host::default()
            },
            ..Run::fixture(
                ids.iter()
                    .map(|id| CellResult::blank(id, Outcome::Pass))
                    .collect(),
            )
        }
    }

    #[test]
    fn cells_follow_the_matrix_order_and_identical_duplicates_are_kept_once() {
        let a = run("20261130-2", &["k/s/x86_64/t", "k/base/arm64/t"]);
        let b = run(
            "20261130-1",
            &["k/base/x86_64/t", "k/base/arm64/t", "k/x/y/z"],
        );
        let order: Vec<String> = ["k/base/x86_64/t", "k/base/arm64/t", "k/s/x86_64/t"]
            .map(String::from)
            .to_vec();
        let m = merge(&[("a".into(), a), ("b".into(), b)], &order).unwrap();
        let ids: Vec<&str> = m.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "k/base/x86_64/t",
                "k/base/arm64/t",
                "k/s/x86_64/t",
                "k/x/y/z"
            ]
        );
        assert_eq!(m.started, "20261130-1");
        assert_eq!(m.host.hostname, "20261130-2");
    }

    #[test]
    fn a_conflicting_cell_or_another_schema_is_refused_naming_the_files() {
        let a = run("1", &["k/base/x86_64/t"]);
        let mut b = run("2", &["k/base/x86_64/t"]);
        b.cells[0].outcome = Outcome::Fail;
        let e = merge(
            &[
                ("a/results.json".into(), a.clone()),
                ("b/results.json".into(), b),
            ],
            &[],
        )
        .unwrap_err();
        assert_eq!(
            e,
            MergeError::Conflict {
                id: "k/base/x86_64/t".into(),
                first: "a/results.json".into(),
                second: "b/results.json".into()
            }
        );
        assert!(e.to_string().contains("a/results.json and b/results.json"));
        let mut old = a.clone();
        old.schema = 1;
        let e = merge(&[("a".into(), a), ("old.json".into(), old)], &[]).unwrap_err();
        assert_eq!(e.to_string(), format!("old.json has results.json schema 1; this harness reads and writes schema {SCHEMA_VERSION}"));
        assert_eq!(merge(&[], &[]).unwrap_err(), MergeError::NoInput);
    }
}
