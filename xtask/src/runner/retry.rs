//! The retry policy: a cell not as expected whose outcome a reboot could
//! change runs again, whole, up to `--retries` times; passing on a retry
//! is `flaky`, the failed attempt's logs kept beside as evidence.

use std::path::PathBuf;

use super::{run_cell, Ctx};
use crate::host::events::{CellEvents, Sink};
use crate::plan::matrix::Cell;
use crate::schema::*;

/// Only outcomes a reboot could change are worth a retry.
pub fn retryable(o: Outcome) -> bool {
    matches!(o, Outcome::Fail | Outcome::Crash | Outcome::Timeout)
}

/// `run_cell`, re-run up to `retries` times while it is not as expected
/// and a reboot could change that. Passing on a retry is `flaky`, with the
/// failed attempt's logs kept beside (`<cell>.attemptN/`) as evidence.
pub fn run_cell_with_retries(ctx: &Ctx, cell: &Cell, retries: u32, sink: &dyn Sink) -> CellResult {
    let first = run_cell(ctx, cell, sink);
    retry(ctx, cell, first, retries, sink)
}

/// The retry policy of `run_cell_with_retries` for a cell whose first
/// result `r` is in (however its boots were scheduled): retries run the
/// whole cell again, one at a time.
pub fn retry(
    ctx: &Ctx,
    cell: &Cell,
    mut r: CellResult,
    retries: u32,
    sink: &dyn Sink,
) -> CellResult {
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let mut attempt = 0;
    while !r.as_expected
        && attempt < retries
        && !crate::host::signals::interrupted()
        && retryable(r.outcome)
    {
        attempt += 1;
        ev.note(&format!(
            "not as expected ({}); retry {attempt} of {retries}",
            r.outcome
        ));
        let dir = ctx.cell_dir(cell);
        let kept = PathBuf::from(format!("{}.attempt{attempt}", dir.display()));
        let _ = std::fs::rename(&dir, &kept);
        let again = run_cell(ctx, cell, sink);
        if again.as_expected {
            let first = r;
            r = again;
            r.outcome = Outcome::Flaky;
            r.evidence.insert(
                0,
                Evidence::new(
                    EvidenceKind::Attempt,
                    format!(
                        "flaky: attempt 1 was {} and attempt {} was as expected",
                        first.outcome,
                        attempt + 1
                    ),
                    first.mismatches.join("\n"),
                    Some(kept.join("console.log")),
                ),
            );
        } else {
            r = again;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn only_outcomes_a_reboot_could_change_are_retried() {
        for o in [Outcome::Fail, Outcome::Crash, Outcome::Timeout] {
            assert!(retryable(o));
        }
        for o in [
            Outcome::Pass,
            Outcome::BuildError,
            Outcome::ApplyError,
            Outcome::ConfigError,
            Outcome::InfraError,
        ] {
            assert!(!retryable(o));
        }
    }
}
