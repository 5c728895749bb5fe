//! The cell runner: the order of a cell's phases (`prepare`: the build
//! stage's source, config and kernel, the accelerator, guest programs and
//! initramfs), its boots (`cell`: one at a time, merged, the KVM
//! fallback), the retry policy (`retry`), and the run driver over them
//! (`driver`, with `schedule` saying which boots next). Every failure
//! becomes the cell's outcome with its evidence; only bugs in the harness
//! itself return Err, and even those become an `infra-error` cell.
//! Progress goes out as events (`host::events`).
//!
//! The phases themselves live with their stages (`build::prepare`,
//! `boot::cell`); this module decides their order and which cells run,
//! nothing about how a kernel is built or booted.

mod cell;
mod ctx;
pub mod driver;
pub mod policy;
mod prepare;
mod retry;
pub mod schedule;

pub use cell::{run_cell, start_cell, CellRun};
pub use ctx::{BootSlot, Ctx};
pub use prepare::{boot_interactive, build_only};
pub use retry::{retry, run_cell_with_retries};
