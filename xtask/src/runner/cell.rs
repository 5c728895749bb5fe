//! A cell from its start to its result: `start_cell` (every phase up to
//! the boots), `CellRun::boot_next` (one boot, merged into the boots so
//! far), `CellRun::finish` (the result, checked against its
//! expectations and known crashes). A driver may hold several prepared
//! cells and interleave their boots (`schedule.rs` says which boots next);
//! `run_cell` boots one to its end. The first boot under KVM whose QEMU
//! dies before the guest reports is booted again under TCG here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::prepare::{failed, harness_error, prepare, rewrite_initrd, Prepared};
use super::{BootSlot, Ctx};
use crate::analyze::classify;
use crate::boot::cell::{self as boot_cell, BootJob};
use crate::host::events::{CellEvents, Sink};
use crate::plan::arch::Accel;
use crate::plan::matrix::{Cell, TestKind};
use crate::schema::*;

/// Runs one cell (all its boots) and checks it against its expectations.
pub fn run_cell(ctx: &Ctx, cell: &Cell, sink: &dyn Sink) -> CellResult {
    let mut c = start_cell(ctx, cell, sink);
    while c.wants_boot() {
        c.boot_next(ctx, sink);
    }
    c.finish(ctx)
}

/// A cell between `start_cell` and `finish`: prepared (or already failed),
/// with the boots it has had so far. A driver may hold several and boot
/// them in any order (`matrix` interleaves compared cells); `run_cell`
/// boots one to its end.
pub struct CellRun<'c> {
    cell: &'c Cell,
    dir: PathBuf,
    /// Time spent on this cell (prepare and its own boots), not the wall
    /// time since it started: other cells' boots may run in between.
    busy: Duration,
    state: State,
}

enum State {
    /// Failed before or during its boots: the result is final.
    Done(Box<CellResult>),
    Booting(Box<Booting>),
}

struct Booting {
    prep: Prepared,
    /// The result as it stands before any boot: each boot starts from it.
    pre_boot: CellResult,
    accel: Accel,
    boots: u32,
    /// Boots merged into `merged` so far.
    booted: u32,
    merged: Option<CellResult>,
    records: Vec<BootRecord>,
    /// Where the next boot runs.
    slot: BootSlot,
}

/// Source, config, build and rootfs of a cell; no boot yet.
pub fn start_cell<'c>(ctx: &Ctx, cell: &'c Cell, sink: &dyn Sink) -> CellRun<'c> {
    let started = Instant::now();
    let id = cell.id();
    let ev = CellEvents { cell: &id, sink };
    let dir = ctx.cell_dir(cell);
    let _ = std::fs::create_dir_all(&dir);
    let state = match prepare(ctx, cell, &ev, &dir) {
        Ok(Ok(prep)) => {
            let mut pre_boot = prep.r.clone();
            pre_boot.accel = prep.choice.accel.qemu_arg();
            pre_boot.accel_reason = Some(prep.choice.why.clone());
            State::Booting(Box::new(Booting {
                accel: prep.choice.accel.clone(),
                prep,
                pre_boot,
                boots: ctx
                    .matrix
                    .cell_boots(cell, ctx.boots.unwrap_or(ctx.matrix.run.boots)),
                booted: 0,
                merged: None,
                records: vec![],
                slot: BootSlot::default(),
            }))
        }
        Ok(Err(r)) => State::Done(Box::new(r)),
        Err(e) => State::Done(Box::new(harness_error(cell, ctx, &e))),
    };
    CellRun {
        cell,
        dir,
        busy: started.elapsed(),
        state,
    }
}

impl CellRun<'_> {
    /// Boots merged so far.
    pub fn booted(&self) -> u32 {
        match &self.state {
            State::Done(_) => 0,
            State::Booting(b) => b.booted,
        }
    }

    /// Whether another boot is due: boots remain, and the kernel neither
    /// crashed nor hung (such a kernel is not worth more boots).
    pub fn wants_boot(&self) -> bool {
        match &self.state {
            State::Done(_) => false,
            State::Booting(b) => {
                b.booted < b.boots
                    && b.merged
                        .as_ref()
                        .is_none_or(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
                    && !crate::host::signals::interrupted()
            }
        }
    }

    /// The cell's boots merged so far, with their boot records (None
    /// before its first boot, or once it failed for good): what a
    /// comparison can already be made from, paired boot by boot as the
    /// finished cell's will be.
    pub fn so_far(&self) -> Option<CellResult> {
        match &self.state {
            State::Done(_) => None,
            State::Booting(b) => b.merged.as_ref().map(|m| {
                let mut r = m.clone();
                r.boots = b.records.clone();
                r
            }),
        }
    }

    /// Whether `more_boots` could add a boot: booted fewer than `max` times,
    /// and every boot so far ended with the kernel alive.
    pub fn may_boot_more(&self, max: u32) -> bool {
        match &self.state {
            State::Booting(b) => {
                b.booted < max
                    && b.merged
                        .as_ref()
                        .is_some_and(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail))
            }
            State::Done(_) => false,
        }
    }

    /// Plans `n` more boots, up to `max` in all, for a cell whose kernel
    /// neither crashed nor hung; returns the number of boots it now plans
    /// (0 when none were added).
    pub fn more_boots(&mut self, n: u32, max: u32) -> u32 {
        if !self.may_boot_more(max) {
            return 0;
        }
        match &mut self.state {
            State::Booting(b) => {
                let before = b.boots;
                b.boots = (b.boots.max(b.booted) + n).min(max);
                if b.boots > before {
                    b.boots
                } else {
                    0
                }
            }
            _ => 0,
        }
    }

    /// Runs the next boot and merges it; a harness error ends the cell as
    /// `infra-error`.
    pub fn boot_next(&mut self, ctx: &Ctx, sink: &dyn Sink) {
        self.boot_next_in(ctx, sink, BootSlot::default());
    }

    /// `boot_next` in `slot`: on its CPUs, beside its other cells.
    pub fn boot_next_in(&mut self, ctx: &Ctx, sink: &dyn Sink, slot: BootSlot) {
        if let State::Booting(b) = &mut self.state {
            b.slot = slot;
        }
        let t = Instant::now();
        let id = self.cell.id();
        let ev = CellEvents { cell: &id, sink };
        if let State::Booting(b) = &mut self.state {
            if let Err(e) = boot_step(ctx, self.cell, &ev, &self.dir, b) {
                self.state = State::Done(Box::new(harness_error(self.cell, ctx, &e)));
            }
        }
        self.busy += t.elapsed();
    }

    /// The cell's result: its boots merged, checked against its
    /// expectations.
    pub fn finish(self, ctx: &Ctx) -> CellResult {
        let mut r = match self.state {
            State::Done(r) => *r,
            State::Booting(b) => {
                let Booting {
                    prep,
                    merged,
                    pre_boot,
                    records,
                    ..
                } = *b;
                let mut r = merged.unwrap_or_else(|| {
                    failed(
                        pre_boot,
                        Outcome::InfraError,
                        Evidence::new(
                            EvidenceKind::Harness,
                            "never booted (interrupted)",
                            String::new(),
                            None,
                        ),
                    )
                });
                r.boots = records;
                // Tests settled before the boots never ran: added once,
                // after them (merge_boot never sees them). A failed one (a
                // perf that did not build) fails a cell that passed.
                if r.outcome == Outcome::Pass
                    && prep.settled.iter().any(|t| t.outcome == Outcome::Fail)
                {
                    r.outcome = Outcome::Fail;
                }
                r.tests.extend(prep.settled);
                r
            }
        };
        r.timings.total_s = self.busy.as_secs_f64();
        check_expected(ctx, self.cell, &mut r);
        r
    }

    /// Whether the boots so far are as expected, with the mismatches:
    /// None before the first boot, or once the cell is finished.
    pub fn expected_so_far(&self, ctx: &Ctx) -> Option<(bool, Vec<String>)> {
        let State::Booting(b) = &self.state else {
            return None;
        };
        let mut r = b.merged.clone()?;
        r.tests.extend(b.prep.settled.iter().cloned());
        check_expected(ctx, self.cell, &mut r);
        Some((r.as_expected, r.mismatches))
    }
}

/// Checks a cell's result against its expectations and known crashes.
fn check_expected(ctx: &Ctx, cell: &Cell, r: &mut CellResult) {
    let own: Vec<String> = cell
        .tests
        .iter()
        .filter(|t| matches!(ctx.matrix.test[*t].kind, TestKind::Target | TestKind::Kunit))
        .cloned()
        .collect();
    let (ok, mismatches) = crate::plan::expect::check(r, &ctx.matrix.expectations(cell), &own);
    r.as_expected = ok;
    r.mismatches = mismatches;
    if let Some(why) = crate::plan::expect::known_crash(r, &ctx.matrix.known_crashes(cell)) {
        r.as_expected = true;
        r.mismatches.clear();
        r.evidence.insert(
            0,
            Evidence::new(EvidenceKind::Known, why, String::new(), None),
        );
    }
}

/// One boot of a prepared cell, merged into its result. Boot 1 under KVM
/// whose QEMU died before the guest said anything: KVM on this host does
/// not run what the cells run; the boot runs again under TCG, for this cell
/// and the rest of the run, and the cell says so. A cell prepared for KVM
/// after the run gave KVM up for its arch (another cell's boot, with
/// interleaved boots) switches to TCG before its first boot.
fn boot_step(ctx: &Ctx, cell: &Cell, ev: &CellEvents, dir: &Path, b: &mut Booting) -> Result<()> {
    let i = b.booted + 1;
    if i == 1 && b.accel == Accel::Kvm {
        if let Some(c) = ctx
            .accel
            .current(cell.arch)
            .filter(|c| c.accel != Accel::Kvm)
        {
            b.accel = c.accel.clone();
            b.pre_boot.accel = c.accel.qemu_arg();
            b.pre_boot.accel_reason = Some(c.why.clone());
            rewrite_initrd(ctx, &b.prep, &b.accel)?;
        }
    }
    let (mut r, kvm_failed) = timed_boot(ctx, cell, ev, dir, b, b.pre_boot.clone(), i);
    if let (1, Accel::Kvm, Some(why)) = (i, &b.accel, kvm_failed) {
        let c = ctx.accel.give_up(cell.arch, &why);
        ev.note(&format!(
            "KVM given up for {}: {why}; booting again under {}",
            cell.arch,
            c.accel.qemu_arg()
        ));
        let first = r;
        b.accel = c.accel.clone();
        // The tests' timeouts were scaled for KVM: rewrite for TCG.
        rewrite_initrd(ctx, &b.prep, &b.accel)?;
        let mut again = b.pre_boot.clone();
        again.accel = b.accel.qemu_arg();
        again.accel_reason = Some(c.why.clone());
        again.kvm_given_up = Some(why.clone());
        again.evidence.push(Evidence::new(
            EvidenceKind::Accel,
            format!(
                "KVM given up: {why}; the cell was booted again under {}",
                b.accel.qemu_arg()
            ),
            first
                .evidence
                .iter()
                .filter(|e| e.kind == EvidenceKind::Qemu)
                .map(|e| e.excerpt.clone())
                .collect::<Vec<_>>()
                .join("\n"),
            first
                .logs
                .console
                .clone()
                .map(|p| boot_cell::keep_as(&p, "kvm")),
        ));
        // Later boots start from `pre_boot` again: merge_boot keeps the
        // first boot's accelerator fields and evidence, once.
        r = timed_boot(ctx, cell, ev, dir, b, again, 1).0;
    }
    // Repeat boots pool benchmark samples and expose boot-to-boot spread;
    // a test must pass in every boot.
    match &mut b.merged {
        None => b.merged = Some(r),
        Some(m) => classify::merge_boot(m, r, i),
    }
    b.booted = i;
    Ok(())
}

/// `boot_cell::boot_once`, with its place in the run's order of boots
/// recorded.
fn timed_boot(
    ctx: &Ctx,
    cell: &Cell,
    ev: &CellEvents,
    dir: &Path,
    b: &mut Booting,
    pre: CellResult,
    i: u32,
) -> (CellResult, Option<String>) {
    let seq = ctx
        .boot_seq
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let started = crate::util::timestamp();
    let t = Instant::now();
    let job = BootJob {
        image: &b.prep.image,
        initrd: &b.prep.initrd,
        programs: &b.prep.programs,
        accel: &b.accel,
        boot: i,
        boots: b.boots,
        cpus: b.slot.cpus.clone(),
    };
    let out = boot_cell::boot_once(&ctx.boot_env(), cell, ev, dir, pre, job);
    b.records.push(BootRecord {
        boot: i,
        seq,
        started,
        duration_s: t.elapsed().as_secs_f64(),
        accel: b.accel.qemu_arg(),
        pinned_vcpus: out.placement.0 as u32,
        busy_cpus: out.placement.1 as u32,
        beside: b.slot.beside.clone(),
    });
    (out.result, out.kvm_failed)
}
