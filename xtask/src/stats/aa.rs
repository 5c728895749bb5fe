//! A/A false alarms and boot-to-boot noise: `matrix --aa` runs the base
//! kernel a second time as `base~aa` and compares the two like base and
//! series. Any verdict but "no significant change" there is about the
//! harness, not the kernel. This counts those verdicts over several runs,
//! per arch, against the goals below, and measures from the same runs how
//! much a boot's figure moves on this host and how many boots a comparison
//! would need. Runs and comparisons in, counts and numbers out: the text
//! people read is `report::aa`'s.

use std::collections::BTreeMap;

use super::compare::interleaved;
use super::location::location;
use super::noise::{log_ss, pair_log_ss, pooled_noise};
use crate::plan::matrix::Matrix;
use crate::schema::{CellResult, Comparison, ComparisonKind, Run, Verdict};

/// At most this share of A/A comparisons may say improved or regressed.
pub const MAX_FALSE_ALARM_PCT: f64 = 5.0;
/// At least this share must conclude "no significant change".
pub const MIN_NO_CHANGE_PCT: f64 = 80.0;
/// Fewer comparisons than this per arch cannot show a rate near 5%.
pub const MIN_COMPARISONS: usize = 20;

/// A false alarm: an A/A comparison that said improved or regressed.
#[derive(Debug, Clone, PartialEq)]
pub struct Alarm {
    /// The run it came from.
    pub label: String,
    pub comparison: Comparison,
    /// Its whole 95% CI lies beyond the metric's min_effect_pct.
    pub past_min_effect: bool,
}

/// The goals an arch's A/A comparisons must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// At most MAX_FALSE_ALARM_PCT false alarms, none with its CI past the
    /// minimum effect.
    FalseAlarms,
    /// At least MIN_NO_CHANGE_PCT "no significant change".
    NoChange,
    /// At least MIN_COMPARISONS comparisons.
    Comparisons,
}

/// The A/A comparisons of one arch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// Runs that gave at least one.
    pub runs: usize,
    pub comparisons: usize,
    pub no_change: usize,
    pub too_noisy: usize,
    pub too_few_samples: usize,
    /// Comparisons the statistics could not make (`cannot-compare`).
    pub cannot_compare: usize,
    pub improved: usize,
    pub regressed: usize,
    /// False alarms whose whole 95% CI of the change lies beyond the
    /// metric's min_effect_pct (a false alarm's point estimate always
    /// does: the verdict requires it): confident and large.
    pub past_min_effect: usize,
    /// Every false alarm, in the order met.
    pub alarms: Vec<Alarm>,
    /// Boots behind each comparison, summed over both sides (with
    /// run.max_boots, too-noisy comparisons get more).
    pub boots: usize,
    /// The most boots a side any comparison had.
    pub max_boots: usize,
}

impl Tally {
    pub fn false_alarms(&self) -> usize {
        self.improved + self.regressed
    }

    /// `n` in percent of the comparisons (0 for none).
    pub fn pct(&self, n: usize) -> f64 {
        if self.comparisons == 0 {
            0.0
        } else {
            100.0 * n as f64 / self.comparisons as f64
        }
    }

    /// The goals, each with whether it is met.
    pub fn goals(&self) -> [(Goal, bool); 3] {
        let some = self.comparisons > 0;
        [
            (
                Goal::FalseAlarms,
                some && self.pct(self.false_alarms()) <= MAX_FALSE_ALARM_PCT
                    && self.past_min_effect == 0,
            ),
            (
                Goal::NoChange,
                some && self.pct(self.no_change) >= MIN_NO_CHANGE_PCT,
            ),
            (Goal::Comparisons, self.comparisons >= MIN_COMPARISONS),
        ]
    }
}

/// Whether a comparison is an A/A one: base against `twin`, one metric.
/// The twin is `base~aa` (the same image) or a variant whose code differs
/// from the base's but whose behaviour does not (a layout twin): either
/// way any verdict but "no change" is a false alarm.
pub fn is_aa(c: &Comparison, twin: &str) -> bool {
    let variant = |id: &str| id.split('/').nth(1).unwrap_or_default().to_string();
    c.kind == ComparisonKind::Variants
        && variant(&c.base_cell) == "base"
        && variant(&c.new_cell) == twin
        && c.base_metric == c.new_metric
}

/// Tallies per arch over `runs` (a label and its comparisons each), of
/// base against `twin`, keeping metrics that start with one of `metrics`
/// (all when empty).
pub fn tally(
    runs: &[(String, Vec<Comparison>)],
    metrics: &[String],
    twin: &str,
) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for (label, cs) in runs {
        let mut seen: Vec<String> = Vec::new();
        for c in cs.iter().filter(|c| {
            is_aa(c, twin)
                && (metrics.is_empty() || metrics.iter().any(|p| c.new_metric.starts_with(p)))
        }) {
            let arch = c.new_cell.split('/').nth(2).unwrap_or_default().to_string();
            let t = out.entry(arch.clone()).or_default();
            if !seen.contains(&arch) {
                seen.push(arch);
                t.runs += 1;
            }
            t.comparisons += 1;
            t.boots += c.boots_base + c.boots_new;
            t.max_boots = t.max_boots.max(c.boots_base).max(c.boots_new);
            match c.verdict {
                Verdict::NoChange => t.no_change += 1,
                Verdict::TooNoisy => t.too_noisy += 1,
                Verdict::TooFewSamples => t.too_few_samples += 1,
                Verdict::CannotCompare => t.cannot_compare += 1,
                Verdict::Improved | Verdict::Regressed => {
                    if c.verdict == Verdict::Improved {
                        t.improved += 1;
                    } else {
                        t.regressed += 1;
                    }
                    let past = c.ci95_lo > c.min_effect_pct || c.ci95_hi < -c.min_effect_pct;
                    t.past_min_effect += usize::from(past);
                    t.alarms.push(Alarm {
                        label: label.clone(),
                        comparison: c.clone(),
                        past_min_effect: past,
                    });
                }
            }
        }
    }
    out
}

/// The boot-to-boot noise of one metric on one arch, from the A/A runs'
/// data: what decides how many boots a comparison needs on this host.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Pooled SD, in percent, of the log of each boot's statistic (the
    /// metric's declared quantile of that boot's samples) within a cell.
    pub sd_pct: f64,
    /// Degrees of freedom behind it (boots minus one, summed over cells).
    pub df: usize,
    /// Boots per side with which a comparison of two unchanged kernels
    /// concludes "no change" 80% of the time (its CI within
    /// +-min_effect_pct); None past 50.
    pub boots_needed: Option<usize>,
    pub min_effect_pct: f64,
    pub quantile: f64,
    /// From base and base~aa cells whose boots ran in pairs
    /// (compare::interleaved): the pooled SD, in percent, of each pair's
    /// log ratio (twin over base), its degrees of freedom (pairs minus one,
    /// summed), and the pairs with which a paired comparison concludes "no
    /// change" 80% of the time (`pairs_needed`). None: no such pairs.
    pub paired: Option<(f64, usize, Option<usize>)>,
}

/// Per (arch, metric): the boot-to-boot noise of the A/A runs' cells (base
/// and its `twin`), for every compared metric with at least two boots.
pub fn noise(runs: &[&Run], m: &Matrix, twin: &str) -> BTreeMap<(String, String), Noise> {
    let mut acc = Pooled::new();
    let mut pairs = Pooled::new();
    for run in runs {
        pool_pairs(&mut pairs, run, m, twin);
        pool_boots(&mut acc, run, m, twin);
    }
    acc.into_iter()
        .filter(|(_, (_, df))| *df > 0)
        .map(|((arch, metric), (ss, df))| {
            let min_effect_pct = m.metric_spec(&metric).1;
            let (sd_pct, boots_needed) = pooled_noise(ss, df, min_effect_pct, false);
            let paired = pairs
                .get(&(arch.clone(), metric.clone()))
                .filter(|(_, df)| *df > 0)
                .map(|&(ss, df)| {
                    let (sd, needed) = pooled_noise(ss, df, min_effect_pct, true);
                    (sd, df, needed)
                });
            let n = Noise {
                sd_pct,
                df,
                boots_needed,
                min_effect_pct,
                quantile: m.metric_quantile(&metric),
                paired,
            };
            ((arch, metric), n)
        })
        .collect()
}

/// Per (arch, metric): a sum of squared deviations of logs and its degrees
/// of freedom, pooled over cells.
type Pooled = BTreeMap<(String, String), (f64, usize)>;

fn add(p: &mut Pooled, arch: &str, metric: &str, (ss, df): (f64, usize)) {
    let e = p.entry((arch.to_string(), metric.to_string())).or_default();
    e.0 += ss;
    e.1 += df;
}

/// The twin against its base, pair by pair, where the boots paired.
fn pool_pairs(pairs: &mut Pooled, run: &Run, m: &Matrix, twin: &str) {
    for t in run.cells.iter().filter(|c| c.variant == twin) {
        let base_id = t.id.replacen(&format!("/{twin}/"), "/base/", 1);
        let Some(b) = run.cells.iter().find(|c| c.id == base_id) else {
            continue;
        };
        for tm in t
            .metrics
            .iter()
            .filter(|x| x.skip.is_none() && m.compared(&x.name))
        {
            let Some(bm) = b
                .metrics
                .iter()
                .find(|x| x.name == tm.name && x.skip.is_none())
            else {
                continue;
            };
            let (bb, tb) = (bm.by_boot(), tm.by_boot());
            if !interleaved(b, t, bb.len(), tb.len()) {
                continue;
            }
            let q = m.metric_quantile(&tm.name);
            add(pairs, &t.arch, &tm.name, pair_log_ss(&bb, &tb, q));
        }
    }
}

/// Boot to boot within each cell of an A/A pair (base and its twin), for
/// every compared metric with at least two boots.
fn pool_boots(acc: &mut Pooled, run: &Run, m: &Matrix, twin: &str) {
    let has_twin = |c: &CellResult| {
        let id =
            c.id.replacen(&format!("/{}/", c.variant), &format!("/{twin}/"), 1);
        c.variant == "base" && run.cells.iter().any(|x| x.id == id)
    };
    for c in run
        .cells
        .iter()
        .filter(|c| c.variant == twin || has_twin(c))
    {
        for metric in c
            .metrics
            .iter()
            .filter(|x| x.skip.is_none() && m.compared(&x.name))
        {
            let boots = metric.by_boot();
            if boots.len() < 2 {
                continue;
            }
            let q = m.metric_quantile(&metric.name);
            let per_boot: Vec<f64> = boots.iter().map(|b| location(b, q)).collect();
            add(acc, &c.arch, &metric.name, log_ss(&per_boot));
        }
    }
}

/// Every goal of every arch met.
pub fn all_met(tallies: &BTreeMap<String, Tally>) -> bool {
    !tallies.is_empty() && tallies.values().all(|t| t.goals().iter().all(|g| g.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::matrix::AA_VARIANT;

    fn cmp(arch: &str, new_variant: &str, metric: &str, v: Verdict, ci: (f64, f64)) -> Comparison {
        Comparison {
            n_base: 100,
            n_new: 100,
            median_base: 50.0,
            median_new: 50.0,
            pct_change: (ci.0 + ci.1) / 2.0,
            ci95_lo: ci.0,
            ci95_hi: ci.1,
            p_value: 0.01,
            ..Comparison::fixture(
                &format!("6.1/base/{arch}/tiny"),
                &format!("6.1/{new_variant}/{arch}/tiny"),
                metric,
                v,
            )
        }
    }

    #[test]
    fn counts_per_arch_only_base_against_its_twin() {
        let run1 = vec![
            cmp("x86_64", AA_VARIANT, "m.a", Verdict::NoChange, (-2.0, 2.0)),
            cmp("x86_64", AA_VARIANT, "m.b", Verdict::TooNoisy, (-9.0, 3.0)),
            cmp("arm64", AA_VARIANT, "m.a", Verdict::Regressed, (53.4, 58.4)),
            cmp("arm64", AA_VARIANT, "m.b", Verdict::Improved, (-9.0, -1.0)),
            // Not A/A: a series against the base, and a within pair.
            cmp("x86_64", "series", "m.a", Verdict::Improved, (-40.0, -30.0)),
            Comparison {
                kind: ComparisonKind::Within,
                ..cmp(
                    "x86_64",
                    AA_VARIANT,
                    "m.a",
                    Verdict::Improved,
                    (-40.0, -30.0),
                )
            },
        ];
        let run2 = vec![cmp(
            "x86_64",
            AA_VARIANT,
            "m.a",
            Verdict::TooFewSamples,
            (-1.0, 1.0),
        )];
        let t = tally(
            &[("r1".into(), run1.clone()), ("r2".into(), run2)],
            &[],
            AA_VARIANT,
        );
        // A layout twin is counted only when asked for, and then alone.
        let mut with_layout = run1.clone();
        with_layout.push(cmp(
            "arm64",
            "layout",
            "m.a",
            Verdict::Improved,
            (-12.0, -6.0),
        ));
        let l = tally(&[("r1".into(), with_layout.clone())], &[], "layout");
        assert_eq!(l.keys().collect::<Vec<_>>(), ["arm64"]);
        assert_eq!((l["arm64"].comparisons, l["arm64"].improved), (1, 1));
        assert_eq!(
            l["arm64"].alarms[0].comparison.new_cell,
            "6.1/layout/arm64/tiny"
        );
        let aa_only = tally(&[("r1".into(), with_layout)], &[], AA_VARIANT);
        assert_eq!(aa_only["arm64"].comparisons, 2);
        let x = &t["x86_64"];
        assert_eq!(
            (
                x.runs,
                x.comparisons,
                x.no_change,
                x.too_noisy,
                x.too_few_samples
            ),
            (2, 3, 1, 1, 1)
        );
        assert_eq!(x.false_alarms(), 0);
        let a = &t["arm64"];
        assert_eq!(
            (a.runs, a.comparisons, a.improved, a.regressed),
            (1, 2, 1, 1)
        );
        // The regression's whole CI is past 5%; the improvement's is not.
        assert_eq!(a.past_min_effect, 1);
        assert_eq!(a.alarms.len(), 2);
        let alarm = |i: usize| {
            let a = &a.alarms[i];
            (
                a.label.as_str(),
                a.comparison.new_cell.as_str(),
                a.comparison.new_metric.as_str(),
                a.comparison.verdict,
                a.past_min_effect,
            )
        };
        assert_eq!(
            alarm(0),
            (
                "r1",
                "6.1/base~aa/arm64/tiny",
                "m.a",
                Verdict::Regressed,
                true
            )
        );
        assert_eq!(
            alarm(1),
            (
                "r1",
                "6.1/base~aa/arm64/tiny",
                "m.b",
                Verdict::Improved,
                false
            )
        );
        // A metric filter.
        let t = tally(&[("r1".into(), run1)], &["m.b".into()], AA_VARIANT);
        assert_eq!(t["arm64"].comparisons, 1);
        assert_eq!(t["x86_64"].comparisons, 1);
    }

    #[test]
    fn goals_met_and_not_met() {
        // 20 comparisons: 17 no change, 2 too noisy, 1 false alarm inside
        // the minimum effect: 5% false alarms, 85% no change: all met.
        let mut cs: Vec<Comparison> = (0..17)
            .map(|_| cmp("arm64", AA_VARIANT, "m", Verdict::NoChange, (-2.0, 2.0)))
            .collect();
        cs.push(cmp(
            "arm64",
            AA_VARIANT,
            "m",
            Verdict::TooNoisy,
            (-8.0, 2.0),
        ));
        cs.push(cmp(
            "arm64",
            AA_VARIANT,
            "m",
            Verdict::TooNoisy,
            (-8.0, 2.0),
        ));
        cs.push(cmp(
            "arm64",
            AA_VARIANT,
            "m",
            Verdict::Regressed,
            (1.0, 11.0),
        ));
        let t = tally(&[("r".into(), cs.clone())], &[], AA_VARIANT);
        assert!(
            t["arm64"].goals().iter().all(|g| g.1),
            "{:?}",
            t["arm64"].goals()
        );
        assert!(all_met(&t));
        // The same false alarm with its CI past 5%: the first goal fails.
        cs[19] = cmp("arm64", AA_VARIANT, "m", Verdict::Regressed, (6.0, 11.0));
        let t = tally(&[("r".into(), cs.clone())], &[], AA_VARIANT);
        let g: Vec<bool> = t["arm64"].goals().iter().map(|g| g.1).collect();
        assert_eq!(g, [false, true, true]);
        // Two more too noisy instead of no change: 75% no change; and 19
        // comparisons are too few.
        cs[0] = cmp("arm64", AA_VARIANT, "m", Verdict::TooNoisy, (-8.0, 2.0));
        cs[1] = cmp("arm64", AA_VARIANT, "m", Verdict::TooNoisy, (-8.0, 2.0));
        cs.pop();
        // One comparison got boots added (run.max_boots): 3 a side else.
        cs[2].boots_base = 12;
        cs[2].boots_new = 12;
        let t = tally(&[("r".into(), cs)], &[], AA_VARIANT);
        let g: Vec<bool> = t["arm64"].goals().iter().map(|g| g.1).collect();
        assert_eq!(g, [true, false, false]);
        let x = &t["arm64"];
        assert_eq!(
            (
                x.comparisons,
                x.no_change,
                x.too_noisy,
                x.boots,
                x.max_boots
            ),
            (19, 15, 4, 132, 12)
        );
        assert!(!all_met(&t));
        assert!(!all_met(&BTreeMap::new()));
    }

    /// A real `matrix --aa --test seccomp_notify` run (6.1, 3 boots a cell,
    /// TCG, before keep-busy): one noise figure per arch and compared
    /// metric, from the base and base~aa cells' boots; the pooled SD as
    /// computed by hand (the median of each boot, log, pooled over the two
    /// cells, as exp(sd) - 1). The x86_64 same-CPU boots include one of the
    /// slow stretches (a boot median 1.5x the others).
    #[test]
    fn noise_from_a_real_aa_run() {
        let (run, m) = crate::stats::compare::aa_fixture::fixture_run("aa-1");
        let n = noise(&[&run], &m, AA_VARIANT);
        let keys: Vec<String> = n.keys().map(|(a, m)| format!("{a} {m}")).collect();
        assert_eq!(
            keys,
            [
                "arm64 seccomp_notify.default.cross-cpu",
                "arm64 seccomp_notify.default.same-cpu",
                "arm64 seccomp_notify.default.unpinned",
                "x86_64 seccomp_notify.default.cross-cpu",
                "x86_64 seccomp_notify.default.same-cpu",
                "x86_64 seccomp_notify.default.unpinned",
            ]
        );
        let x = &n[&(
            "x86_64".to_string(),
            "seccomp_notify.default.same-cpu".to_string(),
        )];
        assert_eq!((x.df, x.quantile, x.min_effect_pct), (4, 0.5, 5.0));
        assert!((x.sd_pct - 18.1736).abs() < 0.001, "{x:?}");
        let a = &n[&(
            "arm64".to_string(),
            "seccomp_notify.default.same-cpu".to_string(),
        )];
        assert!((a.sd_pct - 1.0761).abs() < 0.001, "{a:?}");
        assert_eq!(x.boots_needed, None);
    }

    /// The host-phase run (tests/fixtures/runs/aa-host-phase): arm64's
    /// cross-CPU medians jump between ~49 and ~61 us for minutes on both
    /// cells at once. Boot to boot that is a large SD, pair by pair it
    /// mostly cancels, and a comparison needs 11 pairs, not over 50 boots.
    #[test]
    fn paired_noise_is_what_is_left_once_a_shared_host_state_cancels() {
        let (run, m) = crate::stats::compare::aa_fixture::fixture_run("aa-host-phase");
        let n = noise(&[&run], &m, AA_VARIANT);
        let x = &n[&(
            "arm64".to_string(),
            "seccomp_notify.default.cross-cpu".to_string(),
        )];
        let (sd, df, pairs) = x.paired.expect("the fixture's boots ran in pairs");
        assert_eq!(df, 17);
        // 17 of the 18 pairs agree within 2%; one pair straddles the
        // moment the host changed state (+23%), which is most of the 5.15%
        // (Python's statistics.stdev of the 18 log ratios gives the same).
        assert!(x.sd_pct > 11.0 && (sd - 5.1504).abs() < 0.001, "{x:?}");
        assert_eq!((pairs, x.boots_needed), (Some(11), None), "{x:?}");
        // Not paired (the twin moved apart): no paired figure.
        let mut apart = run.clone();
        for c in apart.cells.iter_mut().filter(|c| c.variant == AA_VARIANT) {
            for b in c.boots.iter_mut() {
                b.seq += 1000;
            }
        }
        assert!(noise(&[&apart], &m, AA_VARIANT)
            .values()
            .all(|x| x.paired.is_none()));
    }
}
