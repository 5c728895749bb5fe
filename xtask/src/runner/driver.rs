//! The run driver: a results.json being filled cell by cell. `matrix` and
//! `sweep` run their selected cells through it (in turn, or interleaved:
//! every cell prepared first, then the boots of compared cells alternated
//! as `schedule` says, with more boots for a comparison still undecided);
//! `bisect` and `bisect-step` run one cell at a time through it and record
//! each. It owns resuming (cells already in results.json are skipped),
//! recording (run.log, results.json rewritten atomically with the
//! comparisons after every cell) and what an interruption leaves (nothing
//! unfinished is recorded).
//!
//! It decides nothing about which cells (the CLI and bisect do) and renders
//! nothing but progress lines (summary.md and the reports are the caller's).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{policy::Policy, schedule, CellRun, Ctx};
use crate::host::{cache::Cache, signals, ui};
use crate::plan::matrix::{Cell, Matrix};
use crate::schema::{self as results, CellResult, Run};
use crate::stats::compare;

/// What a run is asked for beyond its cells.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Extra kernel command line (fault injection, debugging).
    pub extra_cmdline: Vec<String>,
    /// Overrides run.cell_timeout_s.
    pub cell_timeout_s: Option<u64>,
    /// Overrides run.boots.
    pub boots: Option<u32>,
    /// Overrides run.max_boots.
    pub max_boots: Option<u32>,
    /// Re-runs of a cell not as expected (`runner::retry`).
    pub retries: u32,
    /// Continue the run: cells already in results.json are skipped.
    pub resume: bool,
    /// The matrix file as the user gave it (results.json, reproducers).
    pub matrix_shown: String,
    /// The source flags of the command (`--tree`, `--series`, `--lore`
    /// ...), quoted, each after a space: a cell's reproducer repeats them.
    pub source_flags: String,
}

pub enum Opened<'a> {
    Ready(Box<Driver<'a>>),
    /// results.json exists and cannot be read: it is never replaced (its
    /// finished cells would be lost); `why` says so, for the caller to print.
    Refused {
        run_dir: PathBuf,
        why: String,
    },
}

pub struct Driver<'a> {
    pub ctx: Ctx<'a>,
    ui: &'a ui::Ui,
    run: Run,
    run_dir: PathBuf,
    results_path: PathBuf,
    retries: u32,
    resume: bool,
    /// Comparisons already said to be given up (said once).
    told: std::cell::RefCell<std::collections::HashSet<String>>,
}

/// `results/<timestamp>` under the harness's checkout, with
/// `results/latest` pointing at it.
pub fn new_run_dir(root: &Path) -> Result<PathBuf> {
    let d = root.join("results").join(crate::util::timestamp());
    std::fs::create_dir_all(&d)?;
    let latest = root.join("results/latest");
    let _ = std::fs::remove_file(&latest);
    let _ = std::os::unix::fs::symlink(d.file_name().expect("named"), &latest);
    Ok(d)
}

/// The results.json at `path`, read and checked as every reader does
/// (`Run::load`: this schema, consistent cell ids, boot sizes that add
/// up), or a new empty run when there is none.
pub fn load_or_new(path: &Path, matrix_shown: &str) -> Result<Run> {
    if path.exists() {
        Run::load(path)
    } else {
        Ok(Run {
            schema: results::SCHEMA_VERSION,
            started: crate::util::timestamp(),
            host: crate::host::info::host_info(),
            matrix: matrix_shown.to_string(),
            cells: vec![],
            comparisons: vec![],
            origins: vec![],
            looks: None,
            cross_checks: Vec::new(),
        })
    }
}

impl<'a> Driver<'a> {
    /// The run in `run_dir`: its results.json extended (cells re-run
    /// replace theirs), or a new one.
    pub fn open(
        m: &'a Matrix,
        root: &Path,
        cache: &'a Cache,
        policy: Policy,
        run_dir: PathBuf,
        opts: RunOptions,
        ui: &'a ui::Ui,
    ) -> Result<Opened<'a>> {
        std::fs::create_dir_all(&run_dir)?;
        let run_dir = std::fs::canonicalize(&run_dir)?;
        let results_path = run_dir.join("results.json");
        let mut run = match load_or_new(&results_path, &opts.matrix_shown) {
            Ok(r) => r,
            Err(e) => {
                let why = format!(
                    "{e:#}\nrefusing to overwrite {}: it holds results this version cannot read. Move it away, or pick another --out.",
                    results_path.display()
                );
                return Ok(Opened::Refused { run_dir, why });
            }
        };
        for o in m.series.values().filter_map(|s| s.origin.as_ref()) {
            if !run.origins.iter().any(|r| r.series == o.series) {
                run.origins.push(o.clone());
            }
        }
        let mut ctx = Ctx::new(m, root.to_path_buf(), cache, run_dir.clone(), policy);
        ctx.extra_cmdline = opts.extra_cmdline;
        ctx.cell_timeout_s = opts.cell_timeout_s;
        ctx.boots = opts.boots;
        ctx.max_boots = opts.max_boots;
        ctx.matrix_path = Some(opts.matrix_shown);
        ctx.source_flags = opts.source_flags;
        Ok(Opened::Ready(Box::new(Driver {
            ctx,
            ui,
            run,
            run_dir,
            results_path,
            retries: opts.retries,
            resume: opts.resume,
            told: Default::default(),
        })))
    }

    pub fn run(&self) -> &Run {
        &self.run
    }

    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The run as recorded, and where.
    pub fn into_run(self) -> (Run, PathBuf) {
        (self.run, self.run_dir)
    }

    /// The cells still to run, with their place in `cells` (with --resume,
    /// those in results.json are said to be skipped).
    fn todo<'c>(&self, cells: &'c [Cell]) -> Vec<(usize, &'c Cell)> {
        let mut todo = Vec::new();
        for (i, cell) in cells.iter().enumerate() {
            if self.resume && self.run.cells.iter().any(|c| c.id == cell.id()) {
                self.ui
                    .cell(i + 1, cells.len(), &cell.id())
                    .finish("already in results.json (--resume): skipped");
            } else {
                todo.push((i, cell));
            }
        }
        todo
    }

    fn announce(&self, n: usize) {
        self.ui.println(&format!(
            "kmatrix: {n} cell{}, cache {}, results {}",
            if n == 1 { "" } else { "s" },
            self.ctx.cache.root.display(),
            self.run_dir.display()
        ));
    }

    /// How to carry on after an interruption: `--resume` once results.json
    /// holds a finished cell (it refuses a run directory without one), else
    /// the same directory again as `--out`.
    fn continue_hint(&self) -> String {
        if self.results_path.exists() {
            format!("finish it with --resume {}", self.run_dir.display())
        } else {
            format!(
                "nothing finished yet: run again with --out {}",
                self.run_dir.display()
            )
        }
    }

    /// Records a finished cell: its progress line, run.log, results.json
    /// with the comparisons. False when the run was interrupted (whatever
    /// the cell shows was caused by that): nothing is recorded.
    pub fn record(&mut self, r: CellResult, cu: &ui::CellUi) -> Result<bool> {
        let line = outcome_line(&r);
        cu.finish(&line);
        if signals::interrupted() {
            self.ui.println(&format!(
                "{}: interrupted; not recorded ({})",
                r.id,
                self.continue_hint()
            ));
            return Ok(false);
        }
        // One line per finished cell, kept with the run (a sweep's step log).
        append_line(&self.run_dir.join("run.log"), &format!("{} {line}", r.id));
        self.save(r)?;
        Ok(true)
    }

    /// Puts a cell's result into results.json (replacing one of the same
    /// id) with the comparisons recomputed, atomically.
    pub fn save(&mut self, r: CellResult) -> Result<()> {
        self.run.upsert(r);
        compare::reanalyse(
            &mut self.run,
            self.ctx.matrix,
            &crate::stats::bootstrap::never,
        );
        self.run.save(&self.results_path)
    }

    /// Cell after cell, each with all its boots in a row (`--no-interleave`).
    pub fn run_in_turn(&mut self, cells: &[Cell]) -> Result<()> {
        self.announce(cells.len());
        for (i, cell) in self.todo(cells) {
            if signals::interrupted() {
                break;
            }
            let cu = self.ui.cell(i + 1, cells.len(), &cell.id());
            let r = super::run_cell_with_retries(&self.ctx, cell, self.retries, &cu);
            if !self.record(r, &cu)? {
                break;
            }
        }
        Ok(())
    }

    /// Group by group (`schedule::groups`: a kernel/arch/config and all
    /// its variants), in matrix order: a group's cells are prepared
    /// (built), then booted as the schedule says (compared cells
    /// alternating, more boots while a comparison is undecided), and each
    /// cell is recorded as soon as it wants no more boots; only then is
    /// the next group prepared. `after_group` sees results.json after each
    /// group (and how many of how many groups are done) (the caller rewrites summary.md and the reports), so the
    /// first group's answer comes after its own builds and boots.
    pub fn run_interleaved(
        &mut self,
        cells: &[Cell],
        after_group: &mut dyn FnMut(&Run, &Path, usize, usize),
    ) -> Result<()> {
        self.announce(cells.len());
        // Boots are added while a comparison is undecided: its verdicts
        // are reached at planned looks (stats::sequential).
        self.run.looks = crate::stats::sequential::Plan::new(
            self.ctx.boots.unwrap_or(self.ctx.matrix.run.boots),
            schedule::MORE_BOOTS,
            self.ctx.max_boots(),
        );
        let todo = self.todo(cells);
        let refs: Vec<&Cell> = todo.iter().map(|(_, c)| *c).collect();
        let groups = schedule::groups(&refs);
        let n_groups = groups.iter().max().map_or(0, |g| g + 1);
        let ui = self.ui;
        for g in 0..n_groups {
            let members: Vec<usize> = (0..refs.len()).filter(|&k| groups[k] == g).collect();
            if signals::interrupted() {
                for &k in &members {
                    ui.cell(todo[k].0 + 1, cells.len(), &refs[k].id())
                        .finish(&format!(
                            "interrupted; not recorded ({})",
                            self.continue_hint()
                        ));
                }
                continue;
            }
            // A progress line per cell of the group: all are in flight.
            let uis: Vec<ui::CellUi> = members
                .iter()
                .map(|&k| ui.cell(todo[k].0 + 1, cells.len(), &refs[k].id()))
                .collect();
            let group: Vec<&Cell> = members.iter().map(|&k| refs[k]).collect();
            let went_on = self.run_group(&group, &uis)?;
            after_group(&self.run, &self.run_dir, g + 1, n_groups);
            if !went_on {
                break;
            }
        }
        Ok(())
    }

    /// One comparison group: its cells prepared, then booted and recorded.
    /// False when the run was interrupted.
    fn run_group(&mut self, cells: &[&Cell], uis: &[ui::CellUi]) -> Result<bool> {
        let mut live: Vec<Option<CellRun>> = Vec::new();
        for (cell, cu) in cells.iter().zip(uis) {
            if signals::interrupted() {
                break;
            }
            live.push(Some(super::start_cell(&self.ctx, cell, cu)));
        }
        let groups = vec![0; live.len()];
        let mut first_round_told = false;
        let mut go = true;
        while go {
            if !first_round_told {
                first_round_told = self.tell_first_round(&live, cells);
            }
            self.extend_undecided_groups(&mut live, &groups, cells);
            go = self.finish_done(&mut live, &groups, cells, uis)?;
            let slots: Vec<schedule::Slot> = live
                .iter()
                .zip(&groups)
                .map(|(c, &group)| schedule::Slot {
                    group,
                    booted: c.as_ref().map_or(0, |c| c.booted()),
                    wants: c.as_ref().is_some_and(|c| c.wants_boot()),
                })
                .collect();
            let together = (go && !signals::interrupted())
                .then(|| {
                    let measures: Vec<bool> =
                        cells.iter().map(|c| self.ctx.matrix.measures(c)).collect();
                    let vcpus: Vec<usize> = cells
                        .iter()
                        .map(|c| self.ctx.matrix.config_smp(&c.config) as usize)
                        .collect();
                    schedule::together(
                        &slots,
                        &measures,
                        &vcpus,
                        self.ctx.policy.boot_jobs,
                        &crate::boot::qemu::allowed_cpus(),
                    )
                })
                .flatten();
            if let Some(picked) = together {
                self.boot_together(&mut live, cells, uis, &picked);
                continue;
            }
            match schedule::next(&slots) {
                Some(k) if go && !signals::interrupted() => live[k]
                    .as_mut()
                    .expect("wants a boot")
                    .boot_next(&self.ctx, &uis[k]),
                _ => go = false,
            }
        }
        // Only an interruption leaves cells unfinished (or unprepared).
        let mut interrupted = false;
        for (k, cu) in uis.iter().enumerate() {
            if live.get(k).is_some_and(|c| c.is_none()) {
                continue;
            }
            interrupted = true;
            cu.finish(&format!(
                "interrupted; not recorded ({})",
                self.continue_hint()
            ));
        }
        Ok(!interrupted && !signals::interrupted())
    }

    /// Boots the `picked` cells at the same time, each on its CPUs
    /// (correctness boots: none runs a benchmark, schedule::together).
    fn boot_together(
        &self,
        live: &mut [Option<CellRun>],
        cells: &[&Cell],
        uis: &[ui::CellUi],
        picked: &[(usize, Vec<usize>)],
    ) {
        let ids: Vec<String> = picked.iter().map(|(k, _)| cells[*k].id()).collect();
        let ctx = &self.ctx;
        std::thread::scope(|s| {
            for (k, c) in live.iter_mut().enumerate() {
                let Some(j) = picked.iter().position(|(p, _)| *p == k) else {
                    continue;
                };
                let Some(c) = c.as_mut() else { continue };
                let slot = super::BootSlot {
                    cpus: Some(picked[j].1.clone()),
                    beside: ids.iter().filter(|&i| *i != ids[j]).cloned().collect(),
                };
                let cu = &uis[k];
                s.spawn(move || c.boot_next_in(ctx, cu, slot));
            }
        });
    }

    /// Once every cell of a group has had its first boot (the correctness
    /// tests run there) or ended before it, says at once whether the
    /// group's tests are as expected, before any further benchmark boot.
    /// True once said (or when there is nothing to say).
    fn tell_first_round(&self, live: &[Option<CellRun>], cells: &[&Cell]) -> bool {
        let mut bad: Vec<String> = Vec::new();
        for (k, cell) in cells.iter().enumerate() {
            match live.get(k) {
                None => return true,
                Some(Some(c)) => match c.expected_so_far(&self.ctx) {
                    // Not booted yet; or ended before its first boot (a
                    // build error, say): said once it is recorded.
                    None if c.booted() == 0 => return false,
                    Some((false, mm)) => bad.extend(mm),
                    _ => {}
                },
                Some(None) => {
                    let id = cell.id();
                    if let Some(r) = self.run.cells.iter().find(|r| r.id == id) {
                        if !r.as_expected {
                            bad.extend(r.mismatches.iter().cloned());
                        }
                    }
                }
            }
        }
        let c = cells[0];
        let group = format!("{}/*/{}/{}", c.kernel, c.arch.name(), c.config);
        if bad.is_empty() {
            self.ui.println(&format!(
                "{group}: tests as expected after the first boot ({})",
                match cells.len() {
                    1 => "its one cell".to_string(),
                    n => format!("each of its {n} cells"),
                }
            ));
        } else {
            self.ui.println(&format!(
                "{group}: NOT AS EXPECTED after the first boot:\n  {}",
                bad.join("\n  ")
            ));
        }
        true
    }

    /// Each live cell as the schedule's end-of-round rules see it.
    fn standings(
        &self,
        live: &[Option<CellRun>],
        groups: &[usize],
    ) -> Vec<Option<schedule::Standing>> {
        let max_boots = self.ctx.max_boots();
        live.iter()
            .zip(groups)
            .map(|(c, &group)| {
                c.as_ref().map(|c| schedule::Standing {
                    group,
                    wants: c.wants_boot(),
                    may_more: c.may_boot_more(max_boots),
                })
            })
            .collect()
    }

    /// A group through its planned boots with a comparison still too noisy
    /// (or a split pair's claimed state unseen): more boots for its cells,
    /// up to the run's maximum.
    fn extend_undecided_groups(
        &self,
        live: &mut [Option<CellRun>],
        groups: &[usize],
        cells: &[&Cell],
    ) {
        if signals::interrupted() {
            return;
        }
        for g in schedule::groups_to_extend(&self.standings(live, groups)) {
            let members: Vec<usize> = (0..live.len())
                .filter(|&k| groups[k] == g && live[k].is_some())
                .collect();
            self.more_boots_for_group(live, &members, cells, self.ctx.max_boots());
        }
    }

    /// Finishes (merges, checks, retries, records) the cells that want no
    /// more boots, in matrix order; a cell that may still get boots waits
    /// for the rest of its group. False when the run was interrupted.
    fn finish_done(
        &mut self,
        live: &mut [Option<CellRun>],
        groups: &[usize],
        cells: &[&Cell],
        uis: &[ui::CellUi],
    ) -> Result<bool> {
        // One cell finished changes no other's standing: the group's
        // boots are all planned before any of its cells is finished.
        for k in schedule::finishable(&self.standings(live, groups)) {
            if signals::interrupted() {
                break;
            }
            let first = live[k].take().expect("finishable").finish(&self.ctx);
            let r = super::retry(&self.ctx, cells[k], first, self.retries, &uis[k]);
            if !self.record(r, &uis[k])? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Plans more boots for the cells of a group (all through their boots)
    /// that a too-noisy comparison of the group's results so far needs, and
    /// says so.
    fn more_boots_for_group(
        &self,
        live: &mut [Option<CellRun>],
        members: &[usize],
        cells: &[&Cell],
        max_boots: u32,
    ) {
        let m = self.ctx.matrix;
        let so_far = Run {
            schema: results::SCHEMA_VERSION,
            started: String::new(),
            host: Default::default(),
            matrix: String::new(),
            cells: members
                .iter()
                .filter_map(|&k| live[k].as_ref().and_then(|c| c.so_far()))
                .collect(),
            comparisons: vec![],
            origins: vec![],
            looks: self.run.looks,
            cross_checks: Vec::new(),
        };
        let cs = compare::compare(&so_far, m);
        let member = |id: &str| members.iter().copied().find(|&k| cells[k].id() == id);
        let wanted = schedule::undecided(&cs, |id, metric| {
            member(id).is_some_and(|k| {
                let booted = live[k].as_ref().map_or(0, |c| c.booted());
                m.measured_in_boot(cells[k], metric, booted + 1)
            })
        });
        for c in schedule::given_up(&cs) {
            let key = format!(
                "{} {} {} {}",
                c.base_cell, c.new_cell, c.base_metric, c.new_metric
            );
            if self.told.borrow_mut().insert(key) {
                self.ui.println(&format!(
                    "{}: {}",
                    c.new_cell,
                    schedule::why_given_up(c, max_boots)
                ));
            }
        }
        // Every cell of the group boots again, not only those of the
        // undecided comparisons: the group's cells stay in step, so their
        // boots still pair up one for one (compare::interleaved).
        let Some(&(_, why)) = wanted.first() else {
            return;
        };
        for &k in members {
            let id = cells[k].id();
            let why = wanted
                .iter()
                .find(|(w, _)| *w == id)
                .map_or(why, |(_, c)| *c);
            let Some(c) = live[k].as_mut() else { continue };
            let from = c.booted() + 1;
            // No more than the cell's tests want (`[test] boots`).
            let to = c.more_boots(schedule::MORE_BOOTS, m.cell_boots(cells[k], max_boots));
            if to > 0 {
                let boots = if from == to {
                    format!("boot {to}")
                } else {
                    format!("boots {from}-{to}")
                };
                self.ui.println(&format!(
                    "{id}: {boots} (of up to {max_boots}): {}",
                    schedule::why_more(why, &id)
                ));
            }
        }
    }
}

/// A finished cell's progress line: outcome, whether as expected, where
/// its time went.
pub fn outcome_line(r: &CellResult) -> String {
    let t = &r.timings;
    let build = if t.build_cached {
        "cached".to_string()
    } else {
        format!(
            "{:.1}s{}",
            t.build_s,
            if t.build_incremental {
                " incremental"
            } else {
                ""
            }
        )
    };
    // A cell that never booted says why, in the evidence's first words.
    let why = match r.outcome {
        results::Outcome::InfraError
        | results::Outcome::BuildError
        | results::Outcome::ConfigError
        | results::Outcome::ApplyError => r
            .evidence
            .first()
            .map(|e| {
                let first = e
                    .excerpt
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                format!(": {}: {}", e.what, first.trim())
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    let accel = if r.accel.is_empty() {
        String::new()
    } else {
        format!("; {}", r.accel)
    };
    format!(
        "{}{}{why} (source {:.1}s, config {:.1}s, build {build}, rootfs {:.1}s, boot {:.1}s, guest {:.1}s{accel})",
        r.outcome,
        // A newcomer's first finished cell may well be a `fail` the matrix
        // expects (a base without the series' new case): say so.
        match (r.as_expected, r.outcome) {
            (false, _) => " NOT AS EXPECTED",
            (true, results::Outcome::Pass) => "",
            (true, _) => ", as expected",
        },
        t.source_s,
        t.config_s,
        t.rootfs_s,
        t.boot_s,
        t.guest_s,
    )
}

/// Appends a timestamped line to a log kept with a run (best effort: a
/// log that cannot be written loses a line, never the run).
pub fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{} {line}", crate::util::timestamp());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Outcome, Timings};

    #[test]
    fn the_outcome_line_says_where_the_time_went() {
        let mut r = CellResult::blank("6.1/base/x86_64/tiny", Outcome::Pass);
        r.as_expected = true;
        r.accel = "tcg,thread=multi".into();
        r.timings = Timings {
            source_s: 1.04,
            config_s: 0.5,
            build_s: 6.66,
            build_incremental: true,
            rootfs_s: 2.0,
            boot_s: 30.25,
            guest_s: 20.0,
            ..Default::default()
        };
        assert_eq!(
            outcome_line(&r),
            "pass (source 1.0s, config 0.5s, build 6.7s incremental, rootfs 2.0s, boot 30.2s, guest 20.0s; tcg,thread=multi)"
        );
        r.as_expected = false;
        r.outcome = Outcome::Crash;
        r.timings.build_cached = true;
        assert_eq!(
            outcome_line(&r),
            "crash NOT AS EXPECTED (source 1.0s, config 0.5s, build cached, rootfs 2.0s, boot 30.2s, guest 20.0s; tcg,thread=multi)"
        );
        // A failure the matrix expects (6.1 lacks the series' new case).
        r.outcome = Outcome::Fail;
        r.as_expected = true;
        assert!(
            outcome_line(&r).starts_with("fail, as expected (source 1.0s,"),
            "{}",
            outcome_line(&r)
        );
        // The words of a real harness error (Debian 13's busybox-static
        // moved to /usr/bin), on a cell that never booted.
        let mut r = CellResult::blank("6.1/base/arm64/tiny", Outcome::InfraError);
        r.evidence.push(crate::schema::Evidence::new(
            crate::schema::EvidenceKind::Harness,
            "harness error",
            "unpacking /root/.cache/kmatrix/busybox/download/busybox-static_1%3a1.37.0-6+b9_arm64.deb did not give /root/.cache/kmatrix/busybox/arm64/bin/busybox",
            None,
        ));
        assert_eq!(
            outcome_line(&r),
            "infra-error NOT AS EXPECTED: harness error: unpacking /root/.cache/kmatrix/busybox/download/busybox-static_1%3a1.37.0-6+b9_arm64.deb did not give /root/.cache/kmatrix/busybox/arm64/bin/busybox (source 0.0s, config 0.0s, build 0.0s, rootfs 0.0s, boot 0.0s, guest 0.0s)"
        );
    }
}
