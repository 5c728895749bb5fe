//! Which prepared cell boots next, when `matrix` interleaves the boots of
//! compared cells. Pure: no cells, no boots, only their counts.
//!
//! Cells compared with each other (base and series of one
//! kernel/arch/config, as report/compare.rs pairs them) form a group.
//! Groups run one after another in matrix order; inside a group the cell
//! with the fewest boots so far boots next (ties: matrix order), so the
//! boots alternate: base 1, series 1, base 2, series 2, ... A host state
//! that lasts minutes then falls on both sides of a comparison instead of
//! on one cell.

//!
//! When the planned boots of a group are done and one of its comparisons is
//! still too noisy to judge, `undecided` names the cells that need more
//! boots (run.max_boots): the schedule then alternates their extra boots
//! the same way.

use crate::plan::matrix::Cell;
use crate::schema::{Comparison, Verdict};

/// Boots added at a time to the cells of a comparison still too noisy.
pub const MORE_BOOTS: u32 = 3;

/// One prepared cell as the schedule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Its group (`groups`).
    pub group: usize,
    /// Boots it has had.
    pub booted: u32,
    /// Whether it wants another boot.
    pub wants: bool,
}

/// The group of each cell: cells of one kernel/arch/config share one,
/// numbered in order of first appearance.
pub fn groups(cells: &[&Cell]) -> Vec<usize> {
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    cells
        .iter()
        .map(|c| {
            let k = (c.kernel.as_str(), c.arch.name(), c.config.as_str());
            match keys.iter().position(|x| *x == k) {
                Some(i) => i,
                None => {
                    keys.push(k);
                    keys.len() - 1
                }
            }
        })
        .collect()
}

/// Boots that may run at the same time (`--jobs`): up to `jobs` of the
/// slots that want a boot and run no benchmark (`measures` false), each
/// with its share of `cpus` (`vcpus[k]` of them, in order, wrapping when
/// more are asked for than there are). None when fewer than two qualify:
/// a benchmark boot always runs alone, with the host to itself. `jobs`
/// None: as many as `cpus` holds guests of the widest such slot.
pub fn together(
    slots: &[Slot],
    measures: &[bool],
    vcpus: &[usize],
    jobs: Option<usize>,
    cpus: &[usize],
) -> Option<Vec<(usize, Vec<usize>)>> {
    let free: Vec<usize> = (0..slots.len())
        .filter(|&k| slots[k].wants && !measures[k])
        .collect();
    let widest = free.iter().map(|&k| vcpus[k].max(1)).max()?;
    let n = jobs.unwrap_or(cpus.len() / widest).max(1).min(free.len());
    if n < 2 || cpus.is_empty() {
        return None;
    }
    let mut at = 0;
    Some(
        free[..n]
            .iter()
            .map(|&k| {
                let share = (0..vcpus[k].max(1))
                    .map(|j| cpus[(at + j) % cpus.len()])
                    .collect();
                at += vcpus[k].max(1);
                (k, share)
            })
            .collect(),
    )
}

/// The slot to boot next, None when no slot wants a boot: the first group
/// with a boot to run, in it the slot with the fewest boots, then the first
/// in matrix order, or the last when that number is odd. Rounds alternate
/// direction (base, series, series, base, base, series, ...), so a host that
/// drifts steadily during a run does not always favour the cell booted
/// second of each pair (compare.rs pairs boot i with boot i).
pub fn next(slots: &[Slot]) -> Option<usize> {
    let group = slots.iter().filter(|s| s.wants).map(|s| s.group).min()?;
    slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.wants && s.group == group)
        .min_by_key(|(i, s)| {
            (
                s.booted,
                if s.booted % 2 == 0 {
                    *i as isize
                } else {
                    -(*i as isize)
                },
            )
        })
        .map(|(i, _)| i)
}

/// The cells more boots could settle, each with the first comparison
/// that wants them (in the order of `cs`): comparisons too noisy to judge,
/// and split within comparisons (`[within.split]`) whose cell has not yet
/// had a boot in the state the claim needs, whose metrics another boot of
/// their cells measures again (`remeasured(cell, metric)`; a test limited
/// to earlier boots does not).
pub fn undecided(
    cs: &[Comparison],
    remeasured: impl Fn(&str, &str) -> bool,
) -> Vec<(&str, &Comparison)> {
    let mut out: Vec<(&str, &Comparison)> = Vec::new();
    for c in cs
        .iter()
        .filter(|c| (c.verdict == Verdict::TooNoisy && !c.futile) || state_unseen(c))
    {
        if !(remeasured(&c.base_cell, &c.base_metric) && remeasured(&c.new_cell, &c.new_metric)) {
            continue;
        }
        for cell in [c.base_cell.as_str(), c.new_cell.as_str()] {
            if !out.iter().any(|(id, _)| *id == cell) {
                out.push((cell, c));
            }
        }
    }
    out
}

/// The comparisons given up as futile (`Comparison::futile`): too noisy,
/// and the noise so far asks for more boots than the run may give.
pub fn given_up(cs: &[Comparison]) -> impl Iterator<Item = &Comparison> {
    cs.iter().filter(|c| c.futile)
}

/// Why a futile comparison gets no more boots, for the progress line.
pub fn why_given_up(c: &Comparison, max_boots: u32) -> String {
    let need = c
        .boots_needed
        .map_or("more than 50".to_string(), |n| n.to_string());
    format!(
        "{} vs {}: too noisy, {:+.1}% [{:+.1}, {:+.1}] after {} boots; no more boots for it: its spread (SD {}) would need {need} a side, more than the {max_boots} the run may give",
        c.new_metric,
        if c.base_cell == c.new_cell { &c.base_metric } else { &c.base_cell },
        c.pct_change,
        c.ci95_lo,
        c.ci95_hi,
        c.boots_new,
        c.boot_sd_pct.map_or("?".into(), |s| format!("{s:.1}%")),
    )
}

/// A split comparison of a cell none of whose boots was in the state its
/// claim needs (at or above the split).
fn state_unseen(c: &Comparison) -> bool {
    c.split
        .as_ref()
        .is_some_and(|s| !s.above && s.boots_other == 0)
}

/// Why `undecided` wants more boots in `cell` for comparison `c`, for the
/// progress line: "seccomp_notify.sync.unpinned is too noisy to judge,
/// ...". A cell that boots for another cell's comparison (its base, or a
/// cell of the same group kept in step) has that cell named.
pub fn why_more(c: &Comparison, cell: &str) -> String {
    let against = if c.base_cell == c.new_cell {
        c.base_metric.as_str()
    } else if cell == c.base_cell {
        "this cell"
    } else {
        c.base_cell.as_str()
    };
    if cell != c.new_cell && !state_unseen(c) {
        return format!(
            "{}'s {} is too noisy to judge against {against}, {:+.1}% [{:+.1}, {:+.1}]",
            c.new_cell, c.new_metric, c.pct_change, c.ci95_lo, c.ci95_hi
        );
    }
    match &c.split {
        Some(s) if state_unseen(c) => format!(
            "{} vs {}: no boot yet where {} >= {} {} (median {:.1} over {} boots), the state the claim needs",
            c.new_metric, c.base_metric, s.metric, s.at, s.unit, s.median, c.boots_new
        ),
        _ => format!(
            "{} is too noisy to judge, {:+.1}% [{:+.1}, {:+.1}] against {against}",
            c.new_metric, c.pct_change, c.ci95_lo, c.ci95_hi
        ),
    }
}

/// A cell still in flight, as the end of a round of the schedule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub group: usize,
    /// It wants another of its planned boots.
    pub wants: bool,
    /// More boots could still be added to it (below the maximum, kernel alive).
    pub may_more: bool,
}

/// The groups whose cells are all through their planned boots and of
/// which some cell could still get more: where an undecided comparison
/// may add boots. `None`: a cell already finished.
pub fn groups_to_extend(cells: &[Option<Standing>]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for s in cells.iter().flatten() {
        if out.contains(&s.group) {
            continue;
        }
        let members = || cells.iter().flatten().filter(|o| o.group == s.group);
        if !members().any(|o| o.wants) && members().any(|o| o.may_more) {
            out.push(s.group);
        }
    }
    out.sort_unstable();
    out
}

/// The cells to finish now, in matrix order: those that want no more
/// boots, except one that may still get more while another cell of its
/// group is booting (its group's comparisons are not made yet).
pub fn finishable(cells: &[Option<Standing>]) -> Vec<usize> {
    cells
        .iter()
        .enumerate()
        .filter_map(|(k, s)| Some((k, (*s)?)))
        .filter(|(_, s)| {
            let group_boots = cells
                .iter()
                .flatten()
                .any(|o| o.group == s.group && o.wants);
            !s.wants && (!s.may_more || !group_boots)
        })
        .map(|(k, _)| k)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the schedule to the end: slot i wants `boots[i]` boots, or
    /// stops after boot `stop[i]` (a crash) when that is set.
    fn order(group: &[usize], boots: &[u32], stop: &[Option<u32>]) -> Vec<(usize, u32)> {
        let mut slots: Vec<Slot> = group
            .iter()
            .zip(boots)
            .map(|(&g, &b)| Slot {
                group: g,
                booted: 0,
                wants: b > 0,
            })
            .collect();
        let mut out = vec![];
        while let Some(i) = next(&slots) {
            let s = &mut slots[i];
            s.booted += 1;
            out.push((i, s.booted));
            s.wants = s.booted < boots[i] && stop[i].is_none_or(|n| s.booted < n);
        }
        out
    }

    #[test]
    fn compared_cells_alternate_and_groups_follow_each_other() {
        // Two groups (x86_64: base, series; arm64: base, series), 3 boots.
        let o = order(&[0, 0, 1, 1], &[3; 4], &[None; 4]);
        // Each pair of boots back to back, the order turning every round.
        assert_eq!(
            o,
            [
                (0, 1),
                (1, 1),
                (1, 2),
                (0, 2),
                (0, 3),
                (1, 3),
                (2, 1),
                (3, 1),
                (3, 2),
                (2, 2),
                (2, 3),
                (3, 3)
            ]
        );
    }

    /// Two 1-vCPU correctness cells of a 2-CPU host boot together, a CPU
    /// each; a benchmark cell never joins; 2-vCPU guests on 2 CPUs boot
    /// alone unless --jobs asks, and then share the CPUs round-robin.
    #[test]
    fn correctness_boots_run_together_where_the_cpus_allow() {
        let s = |wants: bool| Slot {
            group: 0,
            booted: 0,
            wants,
        };
        let slots = [s(true), s(true), s(true), s(false)];
        let none = [false; 4];
        assert_eq!(
            together(&slots, &none, &[1; 4], None, &[0, 1]),
            Some(vec![(0, vec![0]), (1, vec![1])])
        );
        assert_eq!(
            together(&slots, &[true, false, false, false], &[1; 4], None, &[4, 7]),
            Some(vec![(1, vec![4]), (2, vec![7])])
        );
        assert_eq!(
            together(&slots, &[true, true, false, false], &[1; 4], None, &[0, 1]),
            None
        );
        assert_eq!(together(&slots, &none, &[2; 4], None, &[0, 1]), None);
        assert_eq!(
            together(&slots, &none, &[2; 4], Some(2), &[0, 1]),
            Some(vec![(0, vec![0, 1]), (1, vec![0, 1])])
        );
        assert_eq!(
            together(&slots, &none, &[1; 4], Some(1), &[0, 1, 2, 3]),
            None
        );
        assert_eq!(
            together(&slots, &none, &[1; 4], None, &[0, 1, 2, 3]).map(|v| v.len()),
            Some(3)
        );
    }

    #[test]
    fn three_variants_round_robin_and_a_lone_cell_boots_in_a_row() {
        let o = order(&[0, 0, 0, 1], &[2, 2, 2, 2], &[None; 4]);
        let cells: Vec<usize> = o.iter().map(|x| x.0).collect();
        assert_eq!(cells, [0, 1, 2, 2, 1, 0, 3, 3]);
    }

    #[test]
    fn a_cell_that_stops_early_leaves_the_others_to_finish() {
        // Base crashes in boot 1 (no more boots); a cell that failed to
        // build wants none at all.
        let o = order(&[0, 0, 0], &[3, 3, 0], &[Some(1), None, None]);
        assert_eq!(o, [(0, 1), (1, 1), (1, 2), (1, 3)]);
        assert_eq!(next(&[]), None);
    }

    #[test]
    fn groups_by_kernel_arch_config_in_order_of_appearance() {
        use crate::plan::arch::Arch;
        let cell = |variant: &str, arch: Arch, config: &str| Cell {
            kernel: "6.1".into(),
            variant: variant.into(),
            arch,
            config: config.into(),
            tests: vec![],
        };
        let cells = [
            cell("base", Arch::X86_64, "tiny"),
            cell("base", Arch::Arm64, "tiny"),
            cell("s", Arch::X86_64, "tiny"),
            cell("s", Arch::Arm64, "tiny"),
            cell("s", Arch::Arm64, "debug"),
        ];
        let refs: Vec<&Cell> = cells.iter().collect();
        assert_eq!(groups(&refs), [0, 1, 0, 1, 2]);
    }

    fn comparison(base: &str, new: &str, metric: &str, verdict: Verdict) -> Comparison {
        let mut c = crate::stats::compare::aa_fixture::sample_comparison();
        c.base_cell = base.into();
        c.new_cell = new.into();
        c.base_metric = metric.into();
        c.new_metric = metric.into();
        c.verdict = verdict;
        c
    }

    #[test]
    fn only_too_noisy_comparisons_of_metrics_measured_again_get_boots() {
        let (b, s, t) = (
            "6.1/base/x86_64/tiny",
            "6.1/series/x86_64/tiny",
            "6.1/t/x86_64/tiny",
        );
        let cs = [
            comparison(b, s, "seccomp_notify.default.same-cpu", Verdict::NoChange),
            comparison(b, t, "rseq.cpu_id.rseq", Verdict::TooNoisy),
            comparison(b, s, "seccomp_notify.default.unpinned", Verdict::TooNoisy),
            comparison(s, s, "seccomp_notify.default.cross-cpu", Verdict::TooNoisy),
            comparison(b, s, "seccomp_notify.default.cross-cpu", Verdict::Regressed),
        ];
        // rseq stopped after its boots: more boots would not measure it.
        let more = undecided(&cs, |_, m| m.starts_with("seccomp_notify."));
        let ids: Vec<(&str, &str)> = more
            .iter()
            .map(|(id, c)| (*id, c.base_metric.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                (b, "seccomp_notify.default.unpinned"),
                (s, "seccomp_notify.default.unpinned")
            ]
        );
        // Nothing undecided: no boots added.
        assert!(undecided(&cs[..1], |_, _| true).is_empty());
        assert!(undecided(&cs[1..2], |_, _| false).is_empty());
        // A within-cell comparison (sync vs default) boots its one cell.
        let one = undecided(&cs[3..4], |_, _| true);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].0, s);
        // Given up as futile: too noisy, but no more boots, and said why.
        let mut futile = cs[2].clone();
        futile.futile = true;
        futile.boots_needed = Some(40);
        futile.boot_sd_pct = Some(9.5);
        assert!(undecided(std::slice::from_ref(&futile), |_, _| true).is_empty());
        assert_eq!(given_up(std::slice::from_ref(&futile)).count(), 1);
        let why = why_given_up(&futile, 18);
        assert!(
            why.contains("SD 9.5%") && why.contains("need 40") && why.contains("the 18 the run"),
            "{why}"
        );
    }

    #[test]
    fn a_cell_booting_for_another_cells_comparison_names_that_cell() {
        let (b, s, t) = (
            "6.1/base/x86_64/tiny",
            "6.1/series/x86_64/tiny",
            "6.1/t/x86_64/tiny",
        );
        let mut c = comparison(b, s, "seccomp_notify.default.same-cpu", Verdict::TooNoisy);
        c.pct_change = 5.7;
        c.ci95_lo = -1.9;
        c.ci95_hi = 13.9;
        assert_eq!(
            why_more(&c, s),
            "seccomp_notify.default.same-cpu is too noisy to judge, +5.7% [-1.9, +13.9] \
             against 6.1/base/x86_64/tiny"
        );
        assert_eq!(
            why_more(&c, b),
            "6.1/series/x86_64/tiny's seccomp_notify.default.same-cpu is too noisy to judge \
             against this cell, +5.7% [-1.9, +13.9]"
        );
        assert_eq!(
            why_more(&c, t),
            "6.1/series/x86_64/tiny's seccomp_notify.default.same-cpu is too noisy to judge \
             against 6.1/base/x86_64/tiny, +5.7% [-1.9, +13.9]"
        );
    }

    #[test]
    fn a_split_pair_boots_on_until_a_boot_is_in_the_state_its_claim_needs() {
        let s = "6.1/series/x86_64/tiny";
        let split = |above: bool, boots_other: usize| {
            let mut c = comparison(s, s, "seccomp_notify.default.unpinned", Verdict::NoChange);
            c.new_metric = "seccomp_notify.sync.unpinned".into();
            c.boots_new = 6;
            c.split = Some(crate::schema::Split {
                metric: "seccomp_notify.host.wake_gap".into(),
                unit: "us".into(),
                at: 10.0,
                above,
                median: if above { 15.8 } else { 2.9 },
                boots_other,
            });
            c
        };
        // Only boots below: more, and the progress line says why.
        let cs = [split(false, 0)];
        let more = undecided(&cs, |_, _| true);
        assert_eq!(more.len(), 1);
        assert_eq!(
            why_more(more[0].1, s),
            "seccomp_notify.sync.unpinned vs seccomp_notify.default.unpinned: no boot yet where \
             seccomp_notify.host.wake_gap >= 10 us (median 2.9 over 6 boots), the state the claim needs"
        );
        // Not when the test is over, nor once a boot reached the state
        // (whichever side's comparison is looked at), nor when every
        // boot was in it.
        assert!(undecided(&cs, |_, _| false).is_empty());
        assert!(undecided(&[split(false, 2), split(true, 4)], |_, _| true).is_empty());
        assert!(undecided(&[split(true, 0)], |_, _| true).is_empty());
        // A too-noisy state still asks for boots, as any comparison does.
        let mut noisy = split(true, 3);
        noisy.verdict = Verdict::TooNoisy;
        assert_eq!(undecided(&[noisy], |_, _| true).len(), 1);
    }

    fn st(group: usize, wants: bool, may_more: bool) -> Option<Standing> {
        Some(Standing {
            group,
            wants,
            may_more,
        })
    }

    #[test]
    fn a_group_is_extended_only_when_all_its_cells_are_through_their_boots() {
        // Group 0: both through their boots, one may get more. Group 1:
        // one still booting. Group 2: through, none may get more (crashed
        // or at the maximum). Group 3: its only live cell may get more; the
        // other is finished.
        let cells = [
            st(0, false, true),
            st(0, false, false),
            st(1, true, true),
            st(1, false, true),
            st(2, false, false),
            st(2, false, false),
            None,
            st(3, false, true),
        ];
        assert_eq!(groups_to_extend(&cells), vec![0, 3]);
        assert_eq!(groups_to_extend(&[]), Vec::<usize>::new());
    }

    #[test]
    fn a_cell_that_may_get_more_boots_waits_for_its_group() {
        let cells = [
            st(0, false, true),  // may get more, its partner still boots: waits
            st(0, true, true),   // still booting
            st(1, false, false), // done for good (crashed): finished at once
            st(1, true, true),
            st(2, false, true), // its group is through: finished (not extended)
            None,
        ];
        assert_eq!(finishable(&cells), vec![2, 4]);
    }

    /// On a real run whose arm64 boots never reached the costly host state
    /// (all 6 below the split), the split pair wants more boots.
    #[test]
    fn a_real_run_that_never_saw_the_claimed_state_wants_more_boots() {
        let (run, m) = crate::stats::compare::aa_fixture::fixture_run("sync-host-phases");
        let cs = crate::stats::compare::compare(&run, &m);
        let more = undecided(&cs, |_, _| true);
        assert!(
            more.iter()
                .any(|(id, c)| *id == "6.1/seccomp-sync-wakeup/arm64/tiny" && c.split.is_some()),
            "{more:?}"
        );
    }
}
