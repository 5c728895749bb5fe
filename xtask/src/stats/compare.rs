//! A/B comparison of metrics with statistics: base vs series cells of the
//! same kernel/arch/config, declared within-cell pairs (sync vs default)
//! and declared pairs of configs.
//!
//! Pure: a `Run` and the matrix's metric declarations in, `Comparison`
//! records out; no text (the table is `report::compare`'s).
//! The verdict needs both a rank test (Mann-Whitney U, p < alpha) and a
//! bootstrap CI of the median change that excludes zero, and a change at
//! least as large as the metric's declared minimum effect. Otherwise the CI
//! decides between "no significant change" (it lies within +-min effect, so
//! no change worth reporting is plausible) and "too noisy to judge" (it
//! reaches past the minimum effect: more samples could still find one).

use super::bootstrap::ChangeCi;
use super::bootstrap::{never, quantile_change_ci_boots, Draws};
use super::hypothesis::{mann_whitney_u, paired_t, welch_t};
use super::intervals::paired_log_change_ci;
use super::location::{location, summarize};
use super::noise::{boot_noise, pair_log_ss, pooled_noise};
use std::collections::HashMap;

use crate::plan::matrix::{Across, Matrix, Within};
use crate::schema::{
    Better, CellResult, Comparison, ComparisonKind, Looks, Metric, PTest, Run, Split, Verdict,
};

pub const ALPHA: f64 = 0.05;
pub const RESAMPLES: usize = 10_000;
pub const SEED: u64 = 0x006b_6d61_7472_6978;

#[cfg(test)]
pub fn compare_samples(
    base: &[f64],
    new: &[f64],
    better: Better,
    min_effect_pct: f64,
) -> Option<(ChangeCi, f64, Verdict, f64, f64)> {
    compare_boots(&[base], &[new], Pairing::None, better, min_effect_pct, 0.5)
}

/// How the boots of the two sides of a comparison relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Different boots, not paired (two runs, or boots not interleaved).
    None,
    /// The same boots: two metrics of one cell.
    SameBoots,
    /// Boot i of one cell ran right next to boot i of the other
    /// (`interleaved`): each pair shares the host's state of the moment.
    BootPairs,
}

/// Whether two cells' boots ran in pairs: the same number (at least 2) of
/// boot records, as many as the metric has boots on each side, and boot i
/// of each before boot i+1 of either (matrix's interleaved schedule, in
/// either order within a pair). Cells run one after the other are not.
pub fn interleaved(bc: &CellResult, nc: &CellResult, nb: usize, nn: usize) -> bool {
    let seqs = |c: &CellResult| {
        let mut b: Vec<(u32, u32)> = c.boots.iter().map(|r| (r.boot, r.seq)).collect();
        b.sort();
        b.into_iter().map(|(_, s)| s).collect::<Vec<u32>>()
    };
    let (sb, sn) = (seqs(bc), seqs(nc));
    bc.id != nc.id
        && sb.len() >= 2
        && sb.len() == sn.len()
        && sb.len() == nb
        && sn.len() == nn
        && (0..sb.len() - 1).all(|i| sb[i].max(sn[i]) < sb[i + 1].min(sn[i + 1]))
}

/// `compare_samples` for samples from one or more boots per side: the CI
/// resamples boots too (stats::median_change_ci_boots), so a difference no
/// bigger than the boot-to-boot spread is not called significant. The
/// p-value: for two metrics of the same boots (`paired`), or with one boot
/// on a side, Mann-Whitney U on the samples; for different boots on both
/// sides, Welch's t on the log of the per-boot medians, because then the
/// boot, not the sample, is the unit that was repeated. `q`: the quantile
/// compared (0.5, the median; the per-boot statistic of Welch's t too).
/// A `cannot-compare` verdict comes with NaN figures (`judge` says why).
#[cfg(test)]
pub fn compare_boots(
    base_boots: &[&[f64]],
    new_boots: &[&[f64]],
    pairing: Pairing,
    better: Better,
    min_effect_pct: f64,
    q: f64,
) -> Option<(ChangeCi, f64, Verdict, f64, f64)> {
    let j = judge(
        base_boots,
        new_boots,
        pairing,
        better,
        min_effect_pct,
        q,
        ALPHA,
        &never,
    )?;
    Some((j.ci, j.p, j.verdict, j.cv_base, j.cv_new))
}

/// A comparison's figures and verdict; for `cannot-compare`, why (and the
/// change, its CI and p are NaN: there is no number to give).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub ci: ChangeCi,
    pub p: f64,
    pub verdict: Verdict,
    pub cv_base: f64,
    pub cv_new: f64,
    pub reason: Option<String>,
}

/// `compare_boots`, with the reason of a `cannot-compare` verdict, given
/// up (None) when `stop` says so. None too when a side has no samples at
/// all (nothing was measured: no comparison).
#[allow(clippy::too_many_arguments)]
pub fn judge(
    base_boots: &[&[f64]],
    new_boots: &[&[f64]],
    pairing: Pairing,
    better: Better,
    min_effect_pct: f64,
    q: f64,
    level: f64,
    stop: &dyn Fn() -> bool,
) -> Option<Judged> {
    let (base, new) = (&base_boots.concat()[..], &new_boots.concat()[..]);
    let sb = summarize(base)?;
    let sn = summarize(new)?;
    let cannot = |reason: String| Judged {
        ci: ChangeCi {
            pct_change: f64::NAN,
            lo: f64::NAN,
            hi: f64::NAN,
        },
        p: f64::NAN,
        verdict: Verdict::CannotCompare,
        cv_base: sb.cv,
        cv_new: sn.cv,
        reason: Some(reason),
    };
    let test = p_test(base_boots, new_boots, pairing);
    if let Some(why) = degenerate(base_boots, new_boots, q, test) {
        return Some(cannot(why));
    }
    // Per boot, the compared quantile (the median unless declared; the
    // p_test keeps its name for results.json), on the log scale.
    let log_stats = |bs: &[&[f64]]| bs.iter().map(|b| location(b, q).ln()).collect::<Vec<f64>>();
    let (lb, ln) = (log_stats(base_boots), log_stats(new_boots));
    // Boot pairs: ln(new_i / base_i) of each pair's statistics.
    let d: Vec<f64> = ln.iter().zip(&lb).map(|(n, b)| n - b).collect();
    let ci = match test {
        PTest::PairedBootMedians => paired_log_change_ci(&d, level),
        _ => {
            let draws = Draws {
                confidence: 1.0 - level,
                resamples: RESAMPLES,
                seed: SEED,
                stop,
            };
            quantile_change_ci_boots(base_boots, new_boots, q, pairing != Pairing::None, &draws)
        }
    };
    if stop() {
        return None;
    }
    let Some(ci) = ci else {
        return Some(cannot("no interval of the change could be drawn".into()));
    };
    let p = match test {
        PTest::WelchBootMedians => welch_t(&lb, &ln).map_or(1.0, |(_, _, p)| p),
        PTest::PairedBootMedians => paired_t(&d).map_or(1.0, |(_, _, p)| p),
        PTest::MannWhitney => mann_whitney_u(base, new).map_or(f64::NAN, |u| u.p_two_sided),
    };
    let figures = [
        ("the change", ci.pct_change),
        ("the CI of the change", ci.lo),
        ("the CI of the change", ci.hi),
        ("the p-value", p),
        ("the base's mean", sb.mean),
        ("the base's standard deviation", sb.stddev),
        ("the new side's mean", sn.mean),
        ("the new side's standard deviation", sn.stddev),
    ];
    if let Some((what, v)) = figures.iter().find(|(_, v)| !v.is_finite()) {
        let why = if v.is_nan() {
            "is not a number"
        } else {
            "overflows"
        };
        return Some(cannot(format!(
            "{what} {why}: the samples are beyond what double precision computes with"
        )));
    }
    let few = base.len() < 3 || new.len() < 3;
    Some(Judged {
        verdict: verdict(few, &ci, p, better, min_effect_pct, level),
        ci,
        p,
        cv_base: sb.cv,
        cv_new: sn.cv,
        reason: None,
    })
}

/// Why samples cannot be compared before any figure is computed: a boot
/// without samples, a sample that is not a finite number, a base
/// statistic of 0 (a change in percent of it is undefined), or, for the
/// tests across boots (on logarithms), a boot's statistic that is not
/// positive.
fn degenerate(base: &[&[f64]], new: &[&[f64]], q: f64, test: PTest) -> Option<String> {
    let stat = crate::schema::quantile_label(q);
    for (side, boots) in [("base", base), ("new side", new)] {
        if boots.len() > 1 {
            if let Some(i) = boots.iter().position(|b| b.is_empty()) {
                return Some(format!("boot {} of the {side} has no samples", i + 1));
            }
        }
        if boots.iter().any(|b| b.iter().any(|x| !x.is_finite())) {
            return Some(format!(
                "the {side} has a sample that is not a finite number"
            ));
        }
    }
    if location(&base.concat(), q) == 0.0 {
        return Some(format!(
            "the base {stat} is 0: a change in percent of it is undefined"
        ));
    }
    if matches!(test, PTest::WelchBootMedians | PTest::PairedBootMedians) {
        for (side, boots) in [("base", base), ("new side", new)] {
            for (i, b) in boots.iter().enumerate() {
                let v = location(b, q);
                if v <= 0.0 {
                    return Some(format!(
                        "the {stat} of boot {} of the {side} is {v}: the test across boots compares logarithms of positive figures",
                        i + 1
                    ));
                }
            }
        }
    }
    None
}

/// The verdict on a change: improved or regressed only when the p-value is
/// below `level` (ALPHA, or a planned look's nominal level), the CI (at 1 -
/// `level`) excludes zero and the change reaches the minimum effect;
/// otherwise "too noisy" while the CI reaches past the minimum effect
/// either way, "no change" once it lies within it. `few`: a side has fewer
/// than 3 samples, too few to judge at all.
fn verdict(
    few: bool,
    ci: &ChangeCi,
    p: f64,
    better: Better,
    min_effect_pct: f64,
    level: f64,
) -> Verdict {
    if few {
        Verdict::TooFewSamples
    } else if p < level && (ci.lo > 0.0 || ci.hi < 0.0) && ci.pct_change.abs() >= min_effect_pct {
        let lower = ci.pct_change < 0.0;
        match (better, lower) {
            (Better::Lower, true) | (Better::Higher, false) => Verdict::Improved,
            _ => Verdict::Regressed,
        }
    } else if ci.lo < -min_effect_pct || ci.hi > min_effect_pct {
        Verdict::TooNoisy
    } else {
        Verdict::NoChange
    }
}

/// The layout bound `l` that turns a verdict into "too noisy": Some(l)
/// when the verdict is improved or regressed but the CI reaches inside
/// +-`l` percent, where code layout alone moves the metric; None when the
/// verdict stands (not significant, or the whole CI past the bound).
fn within_layout(verdict: Verdict, ci: &ChangeCi, l: f64) -> Option<f64> {
    let significant = matches!(verdict, Verdict::Improved | Verdict::Regressed);
    (significant && !(ci.lo > l || ci.hi < -l)).then_some(l)
}

/// The reason a change inside the layout bound gives.
fn layout_reason(l: f64) -> String {
    format!(
        "inside the +-{l}% code layout alone moves this metric ([metric] layout_pct): not the series' doing unless the CI lies beyond it"
    )
}

fn p_test(base_boots: &[&[f64]], new_boots: &[&[f64]], pairing: Pairing) -> PTest {
    match pairing {
        Pairing::BootPairs if base_boots.len() == new_boots.len() && base_boots.len() > 1 => {
            PTest::PairedBootMedians
        }
        Pairing::None | Pairing::BootPairs if base_boots.len() > 1 && new_boots.len() > 1 => {
            PTest::WelchBootMedians
        }
        _ => PTest::MannWhitney,
    }
}

/// How two cells' boots relate for a comparison of `kind`: two metrics of
/// one cell come from the same boots (resampled paired); two cells of one
/// run whose boots alternated pair boot i with boot i, so a host state
/// that lasts minutes cancels out; anything else is independent.
fn pairing(
    kind: ComparisonKind,
    same_run: bool,
    bc: &CellResult,
    nc: &CellResult,
    nb: usize,
    nn: usize,
) -> Pairing {
    if kind == ComparisonKind::Within {
        Pairing::SameBoots
    } else if same_run && interleaved(bc, nc, nb, nn) {
        Pairing::BootPairs
    } else {
        Pairing::None
    }
}

/// For a "too noisy" verdict, the noise behind it (SD in percent) and the
/// boots a side (or pairs) that would settle it; (None, None) otherwise.
/// Two metrics of the same boots are pairs too: what is left of their
/// noise is how their ratio moves from boot to boot.
fn too_noisy_noise(
    verdict: Verdict,
    pairing: Pairing,
    test: PTest,
    base_boots: &[&[f64]],
    new_boots: &[&[f64]],
    q: f64,
    min_effect_pct: f64,
) -> (Option<f64>, Option<u32>) {
    match (verdict, pairing, test) {
        (Verdict::TooNoisy, Pairing::SameBoots, _)
        | (Verdict::TooNoisy, _, PTest::PairedBootMedians)
            if base_boots.len() == new_boots.len() && base_boots.len() > 1 =>
        {
            // Pairs: the noise that is left once each pair's shared host
            // state cancels, and the pairs it calls for.
            let (ss, df) = pair_log_ss(base_boots, new_boots, q);
            if df == 0 {
                (None, None)
            } else {
                let (sd, n) = pooled_noise(ss, df, min_effect_pct, true);
                (Some(sd), n.map(|n| n as u32))
            }
        }
        (Verdict::TooNoisy, Pairing::None | Pairing::BootPairs, _) => {
            boot_noise(&[base_boots, new_boots], q, min_effect_pct)
        }
        _ => (None, None),
    }
}

#[allow(clippy::too_many_arguments)]
fn make(
    kind: ComparisonKind,
    m: &Matrix,
    bc: &CellResult,
    bm: &Metric,
    nc: &CellResult,
    nm: &Metric,
    same_run: bool,
    looks: Option<&Looks>,
    stop: &dyn Fn() -> bool,
) -> Option<Comparison> {
    if bm.skip.is_some() || nm.skip.is_some() || !m.compared(&bm.name) || !m.compared(&nm.name) {
        return None;
    }
    let (better, min_effect_pct) = m.metric_spec(&nm.name);
    let q = m.metric_quantile(&nm.name);
    let (base_boots, new_boots) = (bm.by_boot(), nm.by_boot());
    let pairing = pairing(kind, same_run, bc, nc, base_boots.len(), new_boots.len());
    // Boots that ran together in a run with planned looks are judged at
    // their look's nominal level; anything else at ALPHA, one look.
    let n = base_boots.len().min(new_boots.len()) as u32;
    let seq = looks.filter(|_| same_run && pairing != Pairing::None);
    let level = seq.map_or(ALPHA, |l| l.level_at(n, ALPHA));
    let j = judge(
        &base_boots,
        &new_boots,
        pairing,
        better,
        min_effect_pct,
        q,
        level,
        stop,
    )?;
    let (ci, p, mut verdict, mut reason) = (j.ci, j.p, j.verdict, j.reason);
    if let Some(why) = m.metric_power(&nm.name).and_then(|pw| no_power(pw, bc, nc)) {
        if reason.is_none() {
            (verdict, reason) = (Verdict::CannotCompare, Some(why));
        }
    }
    // Two images (a series, another config, another run's build): their
    // code lies elsewhere, and layout alone moves some metrics.
    let two_images = kind != ComparisonKind::Within && bc.build_key != nc.build_key;
    let layout = m.metric_layout(&nm.name).filter(|_| two_images);
    let layout_bound = layout.and_then(|l| within_layout(verdict, &ci, l));
    if let Some(l) = layout_bound {
        verdict = Verdict::TooNoisy;
        reason = Some(layout_reason(l));
    }
    let test = p_test(&base_boots, &new_boots, pairing);
    // Two metrics of the same boots give their noise where it can stop
    // boots, in a run with planned looks; a run without looks reads as it
    // always has.
    let (boot_sd_pct, boots_needed) = if pairing == Pairing::SameBoots && seq.is_none() {
        (None, None)
    } else {
        too_noisy_noise(
            verdict,
            pairing,
            test,
            &base_boots,
            &new_boots,
            q,
            min_effect_pct,
        )
    };
    // A spread that is not a number (a boot statistic of 0) is not shown.
    let boot_sd_pct = boot_sd_pct.filter(|x| x.is_finite());
    // Futility: past the first look, a comparison whose noise so far asks
    // for more boots than the run may give (None: more than 50) is not
    // worth more. Only where the noise is measured (boots of two cells).
    let futile = verdict == Verdict::TooNoisy
        && boot_sd_pct.is_some()
        && seq.is_some_and(|l| l.look_of(n) >= 1 && boots_needed.is_none_or(|b| b > l.max));
    // A change inside what layout moves the metric by stays inside as
    // boots narrow its CI: more boots cannot attribute it.
    let futile = futile || layout_bound.is_some_and(|l| ci.pct_change.abs() <= l);
    Some(Comparison {
        kind,
        base_cell: bc.id.clone(),
        new_cell: nc.id.clone(),
        base_metric: bm.name.clone(),
        new_metric: nm.name.clone(),
        unit: nm.unit.clone(),
        n_base: bm.samples.len(),
        n_new: nm.samples.len(),
        median_base: location(&bm.samples, q),
        median_new: location(&nm.samples, q),
        pct_change: ci.pct_change,
        ci95_lo: ci.lo,
        ci95_hi: ci.hi,
        p_value: p,
        cv_base: j.cv_base,
        cv_new: j.cv_new,
        better,
        min_effect_pct,
        verdict,
        boots_base: base_boots.len(),
        boots_new: new_boots.len(),
        p_test: test,
        reference: None,
        quantile: q,
        boot_sd_pct,
        boots_needed,
        split: None,
        reason,
        level,
        futile,
        layout_pct: layout_bound,
    })
}

/// Why the cells' boots could not have seen an effect: the power figure's
/// median at or above its bound on either side ("no power on this
/// host: ..."). None when both are below it, or a side did not measure
/// the figure (nothing to go by: the comparison is judged as usual).
fn no_power(pw: &crate::plan::matrix::Power, bc: &CellResult, nc: &CellResult) -> Option<String> {
    let figure = |c: &CellResult| {
        c.metrics
            .iter()
            .find(|x| x.name == pw.metric && x.skip.is_none() && !x.samples.is_empty())
            .map(|x| location(&x.samples, 0.5))
    };
    let sides = if bc.id == nc.id {
        vec![("", figure(bc)?)]
    } else {
        vec![
            (" on the base", figure(bc)?),
            (" on the new side", figure(nc)?),
        ]
    };
    if sides.iter().all(|(_, v)| *v < pw.below) {
        return None;
    }
    let seen: Vec<String> = sides
        .iter()
        .map(|(side, v)| format!("{v:.1}{side}"))
        .collect();
    Some(format!(
        "no power on this host: {} median {} (judged below {}){}",
        pw.metric,
        seen.join(", "),
        pw.below,
        pw.why
            .as_ref()
            .map(|w| format!("; {w}"))
            .unwrap_or_default()
    ))
}

/// The host's state in each boot of cell `c` for a `[within.split]`: the
/// split metric (its unit, and its per-boot median, None for a boot that
/// did not report it), when it has one entry per boot of a pair with
/// `boots` entries (`boot_sizes`; 0 for one boot). None: no such metric,
/// so no split.
fn host_states<'a>(
    c: &'a CellResult,
    metric: &str,
    boots: usize,
) -> Option<(&'a str, Vec<Option<f64>>)> {
    let sm = c
        .metrics
        .iter()
        .find(|x| x.name == metric && x.skip.is_none())?;
    if sm.boot_sizes.len() != boots || sm.samples.is_empty() {
        return None;
    }
    let values = sm
        .by_boot()
        .iter()
        .map(|b| (!b.is_empty()).then(|| location(b, 0.5)))
        .collect();
    Some((&sm.unit, values))
}

/// The metric as measured in the boots where `keep` is true (`keep` has an
/// entry per boot, as `boot_sizes` or a single boot).
fn select_boots(x: &Metric, keep: &[bool]) -> Metric {
    let boots = x.by_boot();
    let mut out = Metric {
        samples: vec![],
        boot_sizes: vec![],
        ..x.clone()
    };
    for (b, _) in boots.iter().zip(keep).filter(|(_, k)| **k) {
        out.samples.extend_from_slice(b);
        out.boot_sizes.push(b.len());
    }
    if out.boot_sizes.len() < 2 {
        out.boot_sizes.clear();
    }
    out
}

/// Every comparison of a run: series vs base, the declared within-cell
/// pairs, the declared pairs of configs.
pub fn compare(run: &Run, m: &Matrix) -> Vec<Comparison> {
    compare_until(run, m, &never).unwrap_or_default()
}

/// The run's comparisons and cross-checks recomputed from its cells, as
/// every writer of a results.json does before saving. False (and the run
/// unchanged) when `stop` gave up.
pub fn reanalyse(run: &mut Run, m: &Matrix, stop: &dyn Fn() -> bool) -> bool {
    let Some(cs) = compare_until(run, m, stop) else {
        return false;
    };
    run.comparisons = cs;
    run.cross_checks = super::crosscheck::cross_checks(run, m);
    true
}

/// `compare`, given up (None) as soon as `stop` says so: it is asked
/// between comparisons and inside each bootstrap.
pub fn compare_until(run: &Run, m: &Matrix, stop: &dyn Fn() -> bool) -> Option<Vec<Comparison>> {
    let e = Env {
        m,
        stop,
        looks: run.looks,
    };
    let mut out = Vec::new();
    variants(&mut out, &e, run)?;
    for c in &run.cells {
        for w in &m.within {
            within(&mut out, &e, c, w)?;
        }
    }
    for a in &m.across {
        across(&mut out, &e, run, a)?;
    }
    Some(out)
}

/// What every comparison of one call needs: the matrix's declarations,
/// and when to give up.
struct Env<'a> {
    m: &'a Matrix,
    stop: &'a dyn Fn() -> bool,
    /// The run's planned looks (None across runs).
    looks: Option<Looks>,
}

impl Env<'_> {
    /// `make`'s comparison into `out`; None once `stop` says so.
    fn add(
        &self,
        out: &mut Vec<Comparison>,
        kind: ComparisonKind,
        (bc, bm): (&CellResult, &Metric),
        (nc, nm): (&CellResult, &Metric),
        same_run: bool,
        then: impl FnOnce(&mut Comparison),
    ) -> Option<()> {
        let c = make(
            kind,
            self.m,
            bc,
            bm,
            nc,
            nm,
            same_run,
            self.looks.as_ref(),
            self.stop,
        );
        if (self.stop)() {
            return None;
        }
        out.extend(c.map(|mut c| {
            then(&mut c);
            c
        }));
        Some(())
    }
}

/// A cell, and its metrics by name.
type Indexed<'a> = (&'a CellResult, HashMap<&'a str, &'a Metric>);

/// A cell's metrics by name (the first of a name, as a search in order
/// finds it).
fn by_name(c: &CellResult) -> HashMap<&str, &Metric> {
    let mut out = HashMap::with_capacity(c.metrics.len());
    for x in &c.metrics {
        out.entry(x.name.as_str()).or_insert(x);
    }
    out
}

/// Series vs base of the same kernel/arch/config, metric by metric.
fn variants(out: &mut Vec<Comparison>, e: &Env, run: &Run) -> Option<()> {
    // The first base cell of each kernel/arch/config, as a search in
    // order would find it, and its metrics by name.
    let mut bases: HashMap<(&str, &str, &str), Indexed> = HashMap::new();
    for c in run.cells.iter().filter(|c| c.variant == "base") {
        bases
            .entry((&c.kernel, &c.arch, &c.config))
            .or_insert_with(|| (c, by_name(c)));
    }
    for nc in run.cells.iter().filter(|c| c.variant != "base") {
        let Some((bc, metrics)) = bases.get(&(&nc.kernel, &nc.arch, &nc.config)) else {
            continue;
        };
        for nm in &nc.metrics {
            if let Some(bm) = metrics.get(nm.name.as_str()) {
                e.add(
                    out,
                    ComparisonKind::Variants,
                    (bc, bm),
                    (nc, nm),
                    true,
                    |_| {},
                )?;
            }
        }
    }
    Some(())
}

/// A declared pair inside cell `c` (sync vs default), for every metric of
/// the pair's base prefix; with a `[within.split]` and its metric in the
/// cell, one comparison per state of the host its boots were in.
fn within(out: &mut Vec<Comparison>, e: &Env, c: &CellResult, w: &Within) -> Option<()> {
    let metrics = by_name(c);
    for bm in c.metrics.iter().filter(|x| x.name.starts_with(&w.base)) {
        let suffix = &bm.name[w.base.len()..];
        let Some(nm) = metrics.get(format!("{}{suffix}", w.new).as_str()) else {
            continue;
        };
        let states = w
            .split
            .as_ref()
            .and_then(|sp| Some((sp, host_states(c, &sp.metric, bm.boot_sizes.len())?)));
        let Some((sp, (unit, values))) = states else {
            let then = |x: &mut Comparison| x.reference = w.reference.clone();
            e.add(out, ComparisonKind::Within, (c, bm), (c, nm), true, then)?;
            continue;
        };
        // The claim's state first, then the other; a state no boot was in
        // has no comparison (boots_other = 0 says so).
        let seen: Vec<f64> = values.iter().flatten().copied().collect();
        for above in [true, false] {
            let side = |v: f64| (v >= sp.at) == above;
            let here: Vec<f64> = seen.iter().copied().filter(|&v| side(v)).collect();
            if here.is_empty() {
                continue;
            }
            let keep: Vec<bool> = values.iter().map(|v| v.is_some_and(side)).collect();
            let (b, nw) = (select_boots(bm, &keep), select_boots(nm, &keep));
            let then = |x: &mut Comparison| {
                x.reference = w.reference.clone();
                x.split = Some(Split {
                    metric: sp.metric.clone(),
                    unit: unit.to_string(),
                    at: sp.at,
                    above,
                    median: location(&here, 0.5),
                    boots_other: seen.len() - here.len(),
                });
            };
            e.add(out, ComparisonKind::Within, (c, &b), (c, &nw), true, then)?;
        }
    }
    Some(())
}

/// A declared pair of configs: the same kernel variant on two configs (2
/// vs 255 possible CPUs), independent boots like two variants.
fn across(out: &mut Vec<Comparison>, e: &Env, run: &Run, a: &Across) -> Option<()> {
    let mut bases: HashMap<(&str, &str, &str), Indexed> = HashMap::new();
    for c in run.cells.iter().filter(|c| c.config == a.base_config) {
        bases
            .entry((&c.kernel, &c.variant, &c.arch))
            .or_insert_with(|| (c, by_name(c)));
    }
    for nc in run.cells.iter().filter(|c| c.config == a.new_config) {
        let Some((bc, metrics)) = bases.get(&(&nc.kernel, &nc.variant, &nc.arch)) else {
            continue;
        };
        for nm in nc.metrics.iter().filter(|x| x.name.starts_with(&a.metrics)) {
            if let Some(bm) = metrics.get(nm.name.as_str()) {
                let then = |x: &mut Comparison| x.reference = a.reference.clone();
                e.add(
                    out,
                    ComparisonKind::Variants,
                    (bc, bm),
                    (nc, nm),
                    true,
                    then,
                )?;
            }
        }
    }
    Some(())
}

/// Run A against run B: every cell id present in both, every metric name
/// present in both, A's samples as the base and B's as the new side. The
/// same statistics and verdicts as `compare` (the kind is `variants`: two
/// kernels' independent boots, never paired). None as soon as `stop` says
/// so.
pub fn compare_runs_until(
    a: &Run,
    b: &Run,
    m: &Matrix,
    stop: &dyn Fn() -> bool,
) -> Option<Vec<Comparison>> {
    let e = Env {
        m,
        stop,
        looks: None,
    };
    let mut cells: HashMap<&str, &CellResult> = HashMap::with_capacity(a.cells.len());
    for c in &a.cells {
        cells.entry(c.id.as_str()).or_insert(c);
    }
    let mut out = Vec::new();
    for nc in &b.cells {
        let Some(bc) = cells.get(nc.id.as_str()) else {
            continue;
        };
        let metrics = by_name(bc);
        for nm in &nc.metrics {
            if let Some(bm) = metrics.get(nm.name.as_str()) {
                e.add(
                    &mut out,
                    ComparisonKind::Variants,
                    (bc, bm),
                    (nc, nm),
                    false,
                    |_| {},
                )?;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The repository's matrix.toml.
    fn default_matrix() -> Matrix {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix.toml");
        Matrix::parse("m.toml", &std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn clear_speedup_is_an_improvement_for_lower_is_better() {
        let base = [180.0, 176.0, 185.0, 179.0, 182.0, 178.0, 181.0];
        let new = [85.0, 83.0, 86.0, 84.0, 82.0, 88.0, 85.0];
        let (ci, p, v, _, _) = compare_samples(&base, &new, Better::Lower, 5.0).unwrap();
        assert_eq!(v, Verdict::Improved);
        // One boot a side: Mann-Whitney. Every base sample above every new
        // one, U = 49, and new's tied pair of 85s puts it on the normal
        // approximation: z = (49 - 24.5 - 0.5) / sqrt(49/12 (15 - 6/182)),
        // p = erfc(z / sqrt 2) = 0.0021407097315851235 (mpmath).
        crate::stats::testutil::assert_rel(p, 0.002_140_709_731_585_123_5, 1e-12);
        // The medians, 180 and 85: 100 (85/180 - 1).
        assert_eq!(ci.pct_change, -52.777_777_777_777_78);
        assert!(ci.hi < -40.0, "{ci:?}");
        let (_, _, v, _, _) = compare_samples(&base, &new, Better::Higher, 5.0).unwrap();
        assert_eq!(v, Verdict::Regressed);
    }

    /// The decision rule on its own, case by case.
    #[test]
    fn the_verdict_needs_p_the_ci_and_the_minimum_effect_together() {
        let ci = |pct_change: f64, lo: f64, hi: f64| ChangeCi { pct_change, lo, hi };
        let v = |few, c: &ChangeCi, p, b, min| verdict(few, c, p, b, min, ALPHA);
        let faster = ci(-10.0, -12.0, -8.0);
        assert_eq!(
            v(true, &faster, 0.01, Better::Lower, 5.0),
            Verdict::TooFewSamples
        );
        assert_eq!(
            v(false, &faster, 0.01, Better::Lower, 5.0),
            Verdict::Improved
        );
        assert_eq!(
            v(false, &faster, 0.01, Better::Higher, 5.0),
            Verdict::Regressed
        );
        // Exactly the minimum effect is enough.
        assert_eq!(
            v(false, &faster, 0.01, Better::Lower, 10.0),
            Verdict::Improved
        );
        // Not significant (p, or a CI across zero): the CI's reach decides.
        assert_eq!(
            v(false, &faster, 0.05, Better::Lower, 5.0),
            Verdict::TooNoisy
        );
        assert_eq!(
            v(false, &ci(-2.0, -4.0, 1.0), 0.01, Better::Lower, 5.0),
            Verdict::NoChange
        );
        // Significant but smaller than the minimum effect.
        assert_eq!(
            v(false, &ci(2.0, 1.0, 3.0), 0.001, Better::Lower, 5.0),
            Verdict::NoChange
        );
        assert_eq!(
            v(false, &faster, 0.01, Better::Lower, 11.0),
            Verdict::TooNoisy
        );
        // A CI reaching exactly the minimum effect is within it.
        assert_eq!(
            v(false, &ci(0.0, -5.0, 5.0), 0.9, Better::Lower, 5.0),
            Verdict::NoChange
        );
    }

    #[test]
    fn overlap_is_no_change_and_noise_is_flagged() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [100.2, 99.8, 100.9, 99.1, 100.4];
        assert_eq!(
            compare_samples(&a, &b, Better::Lower, 5.0).unwrap().2,
            Verdict::NoChange
        );
        let noisy_a = [50.0, 150.0, 100.0, 60.0, 140.0];
        let noisy_b = [55.0, 145.0, 90.0, 70.0, 150.0];
        assert_eq!(
            compare_samples(&noisy_a, &noisy_b, Better::Lower, 5.0)
                .unwrap()
                .2,
            Verdict::TooNoisy
        );
    }

    #[test]
    fn significant_but_below_min_effect_is_no_change() {
        let a = [100.0, 100.1, 100.2, 100.3, 100.4, 100.5];
        let b = [101.0, 101.1, 101.2, 101.3, 101.4, 101.5];
        assert_eq!(
            compare_samples(&a, &b, Better::Lower, 5.0).unwrap().2,
            Verdict::NoChange
        );
        assert_eq!(
            compare_samples(&a, &b, Better::Lower, 0.5).unwrap().2,
            Verdict::Regressed
        );
    }

    #[test]
    fn noisy_samples_with_a_narrow_ci_are_no_change() {
        // Like the benchmark under host noise: most samples near 100, a
        // quarter spread up to 400 (CV > 50%). 200 samples each still pin
        // the medians down: the change's CI sits inside +-10%, so "no
        // change" is the answer however noisy single samples are.
        let mut rng = 0x1234_5678_u64;
        let mut draw = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let u = (rng % 10_000) as f64 / 10_000.0;
            if rng.is_multiple_of(4) {
                100.0 + 300.0 * u
            } else {
                95.0 + 10.0 * u
            }
        };
        let a: Vec<f64> = (0..200).map(|_| draw()).collect();
        let b: Vec<f64> = (0..200).map(|_| draw()).collect();
        assert!(summarize(&a).unwrap().cv > 0.5);
        let (ci, _, v, _, _) = compare_samples(&a, &b, Better::Lower, 10.0).unwrap();
        assert!(ci.lo > -10.0 && ci.hi < 10.0, "{ci:?}");
        assert_eq!(v, Verdict::NoChange);
        // The same data against a 1% minimum effect cannot rule one out.
        assert_eq!(
            compare_samples(&a, &b, Better::Lower, 1.0).unwrap().2,
            Verdict::TooNoisy
        );
    }

    #[test]
    fn across_boots_the_boot_is_the_unit() {
        // Base and new differ by 3% in every sample, but the boots move by
        // +-15%: three boots a side cannot tell 3% apart from that.
        let boot = |level: f64| {
            (0..40)
                .map(|i| level * (1.0 + 0.002 * (i % 5) as f64))
                .collect::<Vec<f64>>()
        };
        let base = [boot(100.0), boot(115.0), boot(85.0)];
        let new = [boot(103.0), boot(118.5), boot(87.5)];
        let (b, n): (Vec<&[f64]>, Vec<&[f64]>) = (
            base.iter().map(|v| &v[..]).collect(),
            new.iter().map(|v| &v[..]).collect(),
        );
        let (_, p, v, _, _) =
            compare_boots(&b, &n, Pairing::None, Better::Lower, 1.0, 0.5).unwrap();
        assert!(p > 0.5, "{p}");
        assert_ne!(v, Verdict::Regressed);
        // Paired (two metrics of the same boots): the boot shifts cancel.
        let (ci, _, v, _, _) =
            compare_boots(&b, &n, Pairing::SameBoots, Better::Lower, 1.0, 0.5).unwrap();
        assert!(ci.lo > 0.0, "{ci:?}");
        assert_eq!(v, Verdict::Regressed);
    }

    /// A metric declared `compare = false` (the benchmark's placement
    /// shares) is in neither a base-vs-series nor a within comparison,
    /// while the latencies beside it are.
    #[test]
    fn metrics_declared_not_compared_are_left_out() {
        let m = default_matrix();
        let metric = |name: &str, samples: &[f64]| Metric::fixture(name, "us/op", samples);
        let cell = |id: &str, shift: f64| CellResult {
            metrics: vec![
                metric(
                    "seccomp_notify.default.unpinned",
                    &[10.0 + shift, 11.0, 12.0, 13.0],
                ),
                metric("seccomp_notify.sync.unpinned", &[5.0, 6.0, 7.0, 8.0]),
                metric(
                    "seccomp_notify.placement.default.unpinned.same_cpu_share",
                    &[50.0 + shift, 60.0, 70.0],
                ),
                metric(
                    "seccomp_notify.placement.sync.unpinned.same_cpu_share",
                    &[10.0, 20.0, 30.0],
                ),
            ],
            ..CellResult::blank(id, crate::schema::Outcome::Pass)
        };
        let run = Run {
            started: String::new(),
            ..Run::fixture(vec![
                cell("6.1/base/x86_64/tiny", 0.0),
                cell("6.1/seccomp-sync-wakeup/x86_64/tiny", 1.0),
            ])
        };
        assert!(!m.compared("seccomp_notify.placement.default.unpinned.mixed_share"));
        assert!(m.compared("seccomp_notify.default.unpinned"));
        let cs = compare(&run, &m);
        let names: Vec<(&str, &str)> = cs
            .iter()
            .map(|c| (c.base_metric.as_str(), c.new_metric.as_str()))
            .collect();
        assert!(!names.is_empty());
        assert!(
            names
                .iter()
                .all(|(b, n)| !b.contains("placement") && !n.contains("placement")),
            "{names:?}"
        );
        assert!(cs.iter().any(|c| c.kind == ComparisonKind::Within));
        assert!(cs.iter().any(|c| c.kind == ComparisonKind::Variants));
    }

    /// The mm_cid gap scan is judged only where its power figure says the
    /// boots could have seen an effect; the work's own timing is judged
    /// whatever the host; the guest's CPU counts are never compared.
    #[test]
    fn a_comparison_without_power_says_so_and_facts_are_never_compared() {
        let m = default_matrix();
        let metric = |name: &str, unit: &str, samples: Vec<f64>, boot_sizes: Vec<usize>| Metric {
            boot_sizes,
            ..Metric::fixture(name, unit, &samples)
        };
        // Three boots; the work's runs 20 a boot.
        let cell = |id: &str, config_cpus: f64, chance: [f64; 3], work_us: f64| {
            // Boots a little apart, as real ones are.
            let work: Vec<f64> = (0..60)
                .map(|i| work_us * (1.0 + 0.02 * (i / 20) as f64) + (i % 7) as f64)
                .collect();
            CellResult {
                metrics: vec![
                    metric(
                        "mm_cid.cpus.possible",
                        "cpus",
                        vec![config_cpus; 3],
                        vec![1, 1, 1],
                    ),
                    metric(
                        "mm_cid.gap.p99",
                        "us",
                        vec![250.0, 262.0, 240.0],
                        vec![1, 1, 1],
                    ),
                    metric(
                        "mm_cid.periodic.chance_pct",
                        "%",
                        chance.to_vec(),
                        vec![1, 1, 1],
                    ),
                    metric("mm_cid.work.us", "us", work, vec![20, 20, 20]),
                ],
                ..CellResult::blank(id, crate::schema::Outcome::Pass)
            }
        };
        let run = |chance_new: [f64; 3]| Run {
            started: String::new(),
            ..Run::fixture(vec![
                cell("6.12/base/x86_64/tiny", 2.0, [30.0, 35.0, 40.0], 10.0),
                cell("6.12/base/x86_64/wide", 255.0, [30.0, 35.0, 40.0], 100.0),
                cell("6.12/mm-cid-work@1/x86_64/wide", 255.0, chance_new, 40.0),
            ])
        };
        let find = |cs: &[Comparison], new_cell: &str, metric: &str| {
            cs.iter()
                .find(|c| {
                    c.new_cell == new_cell && c.new_metric == metric && c.base_cell != c.new_cell
                })
                .cloned()
        };
        let noisy = compare(&run([80.0, 95.0, 97.0]), &m);
        let gap = find(&noisy, "6.12/mm-cid-work@1/x86_64/wide", "mm_cid.gap.p99").unwrap();
        assert_eq!(gap.verdict, Verdict::CannotCompare);
        assert_eq!(
            gap.reason.as_deref(),
            Some("no power on this host: mm_cid.periodic.chance_pct median 35.0 on the base, 95.0 on the new side (judged below 90); the host's own big gaps hide a 10 Hz train")
        );
        // The figures stay: only the verdict is withheld.
        assert!(gap.pct_change.is_finite());
        let work = find(&noisy, "6.12/mm-cid-work@1/x86_64/wide", "mm_cid.work.us").unwrap();
        assert_eq!(work.verdict, Verdict::Improved, "{work:?}");
        // Tiny vs wide on the base: the premise, judged on the work.
        let wide = find(&noisy, "6.12/base/x86_64/wide", "mm_cid.work.us").unwrap();
        assert_eq!(wide.base_cell, "6.12/base/x86_64/tiny");
        assert_eq!(wide.verdict, Verdict::Regressed, "{wide:?}");
        for c in &noisy {
            assert!(
                !c.new_metric.starts_with("mm_cid.cpus.")
                    && c.new_metric != "mm_cid.periodic.chance_pct",
                "{c:?}"
            );
        }
        // With power on both sides the gap figure gets a verdict.
        let quiet = compare(&run([20.0, 25.0, 30.0]), &m);
        let gap = find(&quiet, "6.12/mm-cid-work@1/x86_64/wide", "mm_cid.gap.p99").unwrap();
        assert_ne!(gap.verdict, Verdict::CannotCompare, "{gap:?}");
        assert_eq!(gap.reason, None);
    }

    #[test]
    fn tiny_samples() {
        assert_eq!(
            compare_samples(&[1.0, 2.0], &[5.0, 6.0], Better::Lower, 1.0)
                .unwrap()
                .2,
            Verdict::TooFewSamples
        );
        assert!(compare_samples(&[], &[1.0], Better::Lower, 1.0).is_none());
    }
}

/// Real A/A data: the same 6.1 x86_64 kernel booted 6 times as `base` and
/// 6 times as `base~aa`, interleaved, pinned vCPUs, under TCG on a 2-core
/// host with slow episodes (a boot's same-CPU median 57 to 107 us).
#[cfg(test)]
pub(crate) mod aa_fixture {
    use super::*;
    use crate::kinds::bench::{bench_lines, BenchLine};

    fn boots(side: &str, metric: &str) -> Vec<Vec<f64>> {
        (1..=6)
            .map(|i| {
                let f = format!(
                    "{}/../tests/fixtures/aa-6.1-x86_64-6boots/{side}/results.boot{i}.log",
                    env!("CARGO_MANIFEST_DIR")
                );
                bench_lines(&std::fs::read_to_string(&f).unwrap())
                    .into_iter()
                    .filter_map(|l| match l {
                        BenchLine::Metric { name, value, .. } if name == metric => Some(value),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    }

    fn verdict(metric: &str, q: f64) -> (ChangeCi, Verdict) {
        let (b, n) = (boots("base", metric), boots("aa", metric));
        let (b, n): (Vec<&[f64]>, Vec<&[f64]>) = (
            b.iter().map(|v| &v[..]).collect(),
            n.iter().map(|v| &v[..]).collect(),
        );
        let (ci, _, v, _, _) = compare_boots(&b, &n, Pairing::None, Better::Lower, 5.0, q).unwrap();
        (ci, v)
    }

    /// Same-CPU round trips: the boots' medians range over 57..107 us, their
    /// 10th percentiles over a few percent. Compared by median the two
    /// sides' CI spans about 45 points; by p10 under 7, around zero.
    #[test]
    fn low_quantile_sees_through_slow_episodes_that_the_median_cannot() {
        let m = "seccomp_notify.default.same-cpu";
        let (ci, v) = verdict(m, 0.5);
        let (ci10, v10) = verdict(m, 0.1);
        assert_eq!(v, Verdict::TooNoisy, "{ci:?}");
        assert!(ci.hi - ci.lo > 40.0, "{ci:?}");
        assert!(ci10.hi - ci10.lo < 8.0, "{ci10:?}");
        assert!(ci10.lo < 0.0 && ci10.hi > 0.0, "{ci10:?}");
        assert!(
            !matches!(v10, Verdict::Improved | Verdict::Regressed),
            "{v10:?}"
        );
        // Cross-CPU round trips also move between boots at their low end
        // (p5 98.6..114.3 us on both sides): p10 narrows the CI there less.
        let (cc, _) = verdict("seccomp_notify.default.cross-cpu", 0.5);
        let (cc10, _) = verdict("seccomp_notify.default.cross-cpu", 0.1);
        assert!(cc10.hi - cc10.lo < cc.hi - cc.lo, "{cc10:?} vs {cc:?}");
        assert!(cc10.hi - cc10.lo > 10.0, "{cc10:?}");
    }

    /// A "too noisy" verdict says how much the boots moved and how many
    /// boots a side would settle it; one boot a side cannot say.
    #[test]
    fn too_noisy_says_the_boot_spread_and_the_boots_it_would_take() {
        let m = "seccomp_notify.default.cross-cpu";
        let (b, n) = (boots("base", m), boots("aa", m));
        let (b, n): (Vec<&[f64]>, Vec<&[f64]>) = (
            b.iter().map(|v| &v[..]).collect(),
            n.iter().map(|v| &v[..]).collect(),
        );
        // Computed outside the harness from the fixture's METRIC lines: the
        // p10 (numpy's linear method) of each boot, base 111.405 99.765
        // 120.895 119.088 108.070 110.111 and aa 103.197 100.452 117.763
        // 109.599 109.677 115.805 us; their logs' pooled SD over 10 df is
        // 6.8352%; the smallest n with sd sqrt(2/n) (t(0.975, 2n-2) + 0.84)
        // <= ln 1.05, t from mpmath, is 30.
        let (sd, needed) = boot_noise(&[&b, &n], 0.1, 5.0);
        assert!((sd.unwrap() - 6.8352).abs() < 1e-4, "{sd:?}");
        assert_eq!(needed, Some(30));
        assert_eq!(boot_noise(&[&b[..1], &n[..1]], 0.1, 5.0), (None, None));
    }

    /// A real -15% between two images: the seccomp series (which does not
    /// touch membarrier.c, but changes code built into the same object)
    /// against its base, 6.1 x86_64, `membarrier.private_expedited.idle`, 3
    /// boots a side. Per boot medians, from the fixture's samples outside
    /// the harness: base 0.589 0.601 0.618, series 0.508 0.538 0.505
    /// us/call; every series boot below every base boot.
    #[test]
    fn a_change_inside_the_layout_bound_is_not_the_series_doing() {
        let (run, mut m) = fixture_run("layout-membarrier");
        let idle = |cs: &[Comparison]| {
            cs.iter()
                .find(|c| {
                    c.kind == ComparisonKind::Variants
                        && c.new_metric == "membarrier.private_expedited.idle"
                })
                .cloned()
                .unwrap()
        };
        let set = |m: &mut Matrix, l: Option<f64>| {
            m.metric.get_mut("membarrier").unwrap().layout_pct = l;
        };
        // The default matrix's bound (6%: the layout twins' largest mean
        // change, with a margin): the CI lies past it, the verdict stands.
        let c = idle(&compare(&run, &m));
        assert_eq!(
            (c.verdict, c.layout_pct),
            (Verdict::Improved, None),
            "{c:?}"
        );
        // No bound declared: improved, as the run said.
        set(&mut m, None);
        let c = idle(&compare(&run, &m));
        assert_eq!(c.verdict, Verdict::Improved, "{c:?}");
        assert!(c.ci95_hi < -10.0 && c.ci95_lo > -20.0, "{c:?}");
        assert_eq!((c.layout_pct, c.reason.as_deref()), (None, None));
        // Layout moves it up to 20%: the CI reaches inside, the change is
        // not the series' doing, and more boots cannot make it so.
        set(&mut m, Some(20.0));
        let c = idle(&compare(&run, &m));
        assert_eq!(c.verdict, Verdict::TooNoisy, "{c:?}");
        assert_eq!(c.layout_pct, Some(20.0));
        assert!(c.futile);
        assert!(c
            .reason
            .as_deref()
            .unwrap()
            .contains("+-20% code layout alone moves"));
        // The figures stay what they were.
        assert!(c.pct_change < -14.0 && c.pct_change > -16.0, "{c:?}");
        // Up to 10%: the whole CI lies past it, the verdict stands.
        set(&mut m, Some(10.0));
        let c = idle(&compare(&run, &m));
        assert_eq!((c.verdict, c.layout_pct), (Verdict::Improved, None));
        // One image (an A/A of `base~aa`): layout cannot differ, the bound
        // does not apply.
        set(&mut m, Some(20.0));
        let mut one_image = run.clone();
        let key = one_image.cells[0].build_key.clone();
        one_image.cells[1].build_key = key;
        let c = idle(&compare(&one_image, &m));
        assert_eq!((c.verdict, c.layout_pct), (Verdict::Improved, None));
        // A `[[within]]` pair (same boots) is never held to it either.
        for c in compare(&run, &m) {
            if c.kind == ComparisonKind::Within {
                assert_eq!(c.layout_pct, None, "{c:?}");
            }
        }
    }

    #[test]
    fn the_layout_rule_keeps_verdicts_whose_ci_lies_past_the_bound() {
        let ci = |pct_change: f64, lo: f64, hi: f64| ChangeCi { pct_change, lo, hi };
        // Regressed +12% [+8, +16] against a 10% bound: reaches inside.
        assert_eq!(
            within_layout(Verdict::Regressed, &ci(12.0, 8.0, 16.0), 10.0),
            Some(10.0)
        );
        // [+11, +16]: past it.
        assert_eq!(
            within_layout(Verdict::Regressed, &ci(13.0, 11.0, 16.0), 10.0),
            None
        );
        assert_eq!(
            within_layout(Verdict::Improved, &ci(-13.0, -16.0, -11.0), 10.0),
            None
        );
        // Only improved and regressed are ever turned.
        for v in [
            Verdict::NoChange,
            Verdict::TooNoisy,
            Verdict::TooFewSamples,
            Verdict::CannotCompare,
        ] {
            assert_eq!(within_layout(v, &ci(1.0, -2.0, 4.0), 10.0), None);
        }
    }

    /// A captured run from tests/fixtures/runs/NAME and the default matrix.
    pub(crate) fn fixture_run(name: &str) -> (Run, Matrix) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let run = Run::load(std::path::Path::new(&format!(
            "{dir}/tests/fixtures/runs/{name}/results.json"
        )))
        .unwrap();
        let m = Matrix::parse(
            "matrix.toml",
            &std::fs::read_to_string(format!("{dir}/matrix.toml")).unwrap(),
        )
        .unwrap();
        (run, m)
    }

    pub(crate) fn sample_comparison() -> Comparison {
        Comparison {
            n_base: 600,
            n_new: 600,
            median_base: 110.0,
            median_new: 110.0,
            ci95_lo: -9.0,
            ci95_hi: 9.0,
            p_value: 0.9,
            boots_base: 6,
            boots_new: 6,
            quantile: 0.1,
            ..Comparison::fixture(
                "6.1/base/x86_64/tiny",
                "6.1/base~aa/x86_64/tiny",
                "seccomp_notify.default.cross-cpu",
                Verdict::NoChange,
            )
        }
    }

    /// Two metrics of the same boots are pairs: a too-noisy within
    /// comparison says how their ratio moves from boot to boot, and the
    /// boots that would settle it.
    #[test]
    fn a_within_comparison_says_how_its_ratio_moves_between_boots() {
        let base: Vec<Vec<f64>> = vec![vec![100.0; 5]; 4];
        let new: Vec<Vec<f64>> = [100.0, 110.0, 95.0, 105.0]
            .iter()
            .map(|&x| vec![x; 5])
            .collect();
        let b: Vec<&[f64]> = base.iter().map(|v| &v[..]).collect();
        let n: Vec<&[f64]> = new.iter().map(|v| &v[..]).collect();
        // By hand: the log ratios 0, ln 1.10, ln 0.95, ln 1.05 have an SD
        // of 0.063093 (3 df), shown as 100 (e^sd - 1) = 6.513%; the
        // smallest n with sd / sqrt(n) (t(0.975, n-1) + 0.84) <= ln 1.05
        // is 15 (t(0.975, 14) = 2.1448 from mpmath; n = 14 misses).
        let (sd, needed) = too_noisy_noise(
            Verdict::TooNoisy,
            Pairing::SameBoots,
            PTest::MannWhitney,
            &b,
            &n,
            0.5,
            5.0,
        );
        assert!((sd.unwrap() - 6.513).abs() < 2e-3, "{sd:?}");
        assert_eq!(needed, Some(15));
        // Decided comparisons carry no such figures.
        let none = too_noisy_noise(
            Verdict::NoChange,
            Pairing::SameBoots,
            PTest::MannWhitney,
            &b,
            &n,
            0.5,
            5.0,
        );
        assert_eq!(none, (None, None));
    }

    /// The same A/A run as if it had planned looks at 3, 6, ..., 18 boots:
    /// each paired comparison is judged at its look's nominal level, with
    /// the wider interval that level gives; one too noisy whose pairs' spread
    /// asks for more boots than the plan's maximum is given up (futile).
    #[test]
    fn a_run_with_planned_looks_judges_at_the_look_and_gives_up_when_futile() {
        let (mut run, m) = fixture_run("aa-host-phase");
        let name = "seccomp_notify.default.cross-cpu";
        let arm = "6.1/base~aa/arm64/tiny";
        let pick = |cs: &[Comparison]| {
            cs.iter()
                .find(|c| c.new_cell == arm && c.new_metric == name)
                .cloned()
                .unwrap()
        };
        let fixed = pick(&compare(&run, &m));
        assert_eq!(fixed.level, 0.05);
        run.looks = Some(Looks {
            first: 3,
            step: 3,
            max: 18,
        });
        let seq = pick(&compare(&run, &m));
        // Pocock-type boundaries for 5 or 6 looks lie between 2.38 and
        // 2.44 (published tables): a two-sided level of 1.5% to 1.7%.
        assert!(seq.level > 0.014 && seq.level < 0.018, "{seq:?}");
        assert!(
            seq.ci95_hi - seq.ci95_lo > fixed.ci95_hi - fixed.ci95_lo,
            "{seq:?} vs {fixed:?}"
        );
        assert_eq!(seq.pct_change, fixed.pct_change);
        assert!(!seq.futile);
        // Within +-3%, the pairs' spread asks for 25 pairs (worked out in
        // the test below): more than 18, so no more boots; with up to 30
        // boots it is still worth booting.
        let (_, mut m3) = fixture_run("aa-host-phase");
        m3.metric.get_mut("seccomp_notify").unwrap().min_effect_pct = 3.0;
        let c3 = pick(&compare(&run, &m3));
        assert_eq!(c3.verdict, Verdict::TooNoisy, "{c3:?}");
        assert!(c3.futile, "{c3:?}");
        run.looks = Some(Looks {
            first: 3,
            step: 3,
            max: 30,
        });
        assert!(!pick(&compare(&run, &m3)).futile);
        // Across runs nothing ran in pairs: one look, at ALPHA.
        let across = compare_runs_until(&run, &run, &m, &never).unwrap();
        assert!(across.iter().all(|c| c.level == ALPHA && !c.futile));
    }

    /// A real A/A run (6.1, arm64 and x86_64, interleaved, boots added to
    /// 18 on arm64) during which the host changed state for minutes: the
    /// arm64 cross-CPU boot medians went from ~49 to ~61 us and back, on
    /// both cells at once. Pooled, the two cells' medians fall in
    /// different modes (+15.8%); paired boot by boot, the state cancels.
    #[test]
    fn boots_that_ran_in_pairs_are_compared_pair_by_pair() {
        let (run, m) = fixture_run("aa-host-phase");
        let cell = |id: &str| run.cells.iter().find(|c| c.id == id).unwrap();
        let (bc, nc) = (cell("6.1/base/arm64/tiny"), cell("6.1/base~aa/arm64/tiny"));
        let name = "seccomp_notify.default.cross-cpu";
        fn metric<'a>(c: &'a CellResult, name: &str) -> Vec<&'a [f64]> {
            c.metrics.iter().find(|x| x.name == name).unwrap().by_boot()
        }
        let (b, n) = (metric(bc, name), metric(nc, name));
        assert_eq!((b.len(), n.len()), (18, 18));
        assert!(interleaved(bc, nc, 18, 18));
        let cs = compare(&run, &m);
        let c = cs
            .iter()
            .find(|c| c.new_cell == nc.id && c.new_metric == name)
            .unwrap();
        assert_eq!(c.p_test, PTest::PairedBootMedians);
        assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        assert!(
            c.pct_change.abs() < 2.0 && c.ci95_lo > -5.0 && c.ci95_hi < 5.0,
            "{c:?}"
        );
        // Against a 3% minimum effect the same pairs are too noisy, and
        // say so in pairs: how much a pair's two boots differ (SD of the
        // log ratio, 5.1504% over 17 df) and the pairs that would do: the
        // smallest n with sd / sqrt(n) (t(0.975, n-1) + 0.84) <= ln 1.03,
        // 25 (both computed outside the harness from results.json, t from
        // mpmath).
        let (_, mut m3) = fixture_run("aa-host-phase");
        m3.metric.get_mut("seccomp_notify").unwrap().min_effect_pct = 3.0;
        let cs3 = compare(&run, &m3);
        let c3 = cs3
            .iter()
            .find(|c| c.new_cell == nc.id && c.new_metric == name)
            .unwrap();
        assert_eq!(c3.verdict, Verdict::TooNoisy, "{c3:?}");
        assert!((c3.boot_sd_pct.unwrap() - 5.1504).abs() < 1e-4, "{c3:?}");
        assert_eq!(c3.boots_needed, Some(25), "{c3:?}");
        // The same boots taken as unpaired: the pooled medians sit in the
        // two modes, and the boots' spread leaves it too noisy.
        let (ci, _, v, _, _) =
            compare_boots(&b, &n, Pairing::None, Better::Lower, 5.0, 0.5).unwrap();
        assert_eq!(v, Verdict::TooNoisy);
        assert!(ci.pct_change > 10.0, "{ci:?}");
        // Cells booted one after the other are not pairs; nor is a cell
        // with itself, nor boots that do not match the metric's.
        let mut apart = nc.clone();
        for r in apart.boots.iter_mut() {
            r.seq += 100;
        }
        assert!(!interleaved(bc, &apart, 18, 18));
        assert!(!interleaved(bc, bc, 18, 18));
        assert!(!interleaved(bc, nc, 18, 17));
        // Either order inside a pair (the schedule turns every round).
        let (mut tb, mut tn) = (bc.clone(), nc.clone());
        for (b, n) in tb.boots.iter_mut().zip(tn.boots.iter_mut()) {
            let first = 2 * b.boot - 1;
            (b.seq, n.seq) = if b.boot % 2 == 1 {
                (first, first + 1)
            } else {
                (first + 1, first)
            };
        }
        assert!(interleaved(&tb, &tn, 18, 18));
    }

    /// A real run (`matrix --kernel 6.1 --test seccomp_notify`)
    /// where the host's cross-CPU wakeup cost fell from ~47% of a same-CPU
    /// round trip to ~8% after x86_64's 7th boot and stayed low for all 6
    /// of arm64's. Pooled, x86_64's sync vs default was "too noisy" at
    /// -4.6%; per state it is "improved" by ~26% where wakeups cost, and
    /// "no change" where they do not. (wake_gap_pct was derived from the
    /// boots' own default-mode medians, as the bench now prints it:
    /// tests/fixtures/runs/sync-host-phases/README.)
    #[test]
    fn a_split_pair_is_judged_apart_in_each_state_of_the_host() {
        let (run, m) = fixture_run("sync-host-phases");
        let cs = compare(&run, &m);
        let claim = |cell: &str, metric: &str| -> Vec<&Comparison> {
            cs.iter()
                .filter(|c| {
                    c.new_cell == cell && c.new_metric == metric && c.kind == ComparisonKind::Within
                })
                .collect()
        };
        let x86 = "6.1/seccomp-sync-wakeup/x86_64/tiny";
        let unpinned = claim(x86, "seccomp_notify.sync.unpinned");
        assert_eq!(unpinned.len(), 2, "{unpinned:?}");
        let (hi, lo) = (unpinned[0], unpinned[1]);
        let (shi, slo) = (hi.split.as_ref().unwrap(), lo.split.as_ref().unwrap());
        assert!(shi.above && !slo.above);
        assert_eq!(
            (hi.boots_new, shi.boots_other, lo.boots_new, slo.boots_other),
            (7, 11, 11, 7)
        );
        assert_eq!(hi.p_test, PTest::MannWhitney, "same boots: paired samples");
        assert_eq!(hi.verdict, Verdict::Improved, "{hi:?}");
        assert!(hi.pct_change < -20.0 && hi.ci95_hi < -15.0, "{hi:?}");
        assert_eq!(lo.verdict, Verdict::NoChange, "{lo:?}");
        assert!(lo.pct_change.abs() < 2.0, "{lo:?}");
        assert!(shi.median > 40.0 && slo.median < 10.0, "{shi:?} {slo:?}");
        // Each state's comparison holds only its boots' samples.
        let all = |name: &str| {
            run.cells
                .iter()
                .find(|c| c.id == x86)
                .unwrap()
                .metrics
                .iter()
                .find(|x| x.name == name)
                .unwrap()
                .samples
                .len()
        };
        assert_eq!(hi.n_new + lo.n_new, all("seccomp_notify.sync.unpinned"));
        assert_eq!(
            hi.n_base + lo.n_base,
            all("seccomp_notify.default.unpinned")
        );
        // Same-CPU does not depend on the wakeup: no change in either state.
        for c in claim(x86, "seccomp_notify.sync.same-cpu") {
            assert_eq!(c.verdict, Verdict::NoChange, "{c:?}");
        }
        // arm64 stayed in the cheap state: one comparison, over all 6 boots,
        // which says the other state was never seen.
        let arm = claim(
            "6.1/seccomp-sync-wakeup/arm64/tiny",
            "seccomp_notify.sync.unpinned",
        );
        assert_eq!(arm.len(), 1, "{arm:?}");
        let s = arm[0].split.as_ref().unwrap();
        assert!(
            !s.above && s.boots_other == 0 && arm[0].boots_new == 6,
            "{s:?}"
        );
        // Base vs series is not split (no [within.split] there); neither is
        // a pair whose cell lacks the split metric: one comparison, no split.
        assert!(cs
            .iter()
            .filter(|c| c.kind == ComparisonKind::Variants)
            .all(|c| c.split.is_none()));
        let mut old = run.clone();
        for c in old.cells.iter_mut() {
            c.metrics
                .retain(|x| !x.name.starts_with("seccomp_notify.host.wake_gap"));
        }
        let plain = compare(&old, &m);
        let one: Vec<&Comparison> = plain
            .iter()
            .filter(|c| c.new_cell == x86 && c.new_metric == "seccomp_notify.sync.unpinned")
            .collect();
        assert_eq!(one.len(), 1);
        assert!(one[0].split.is_none() && one[0].boots_new == 18);
        assert_ne!(
            one[0].verdict,
            Verdict::Improved,
            "pooled over both states: {:?}",
            one[0]
        );
    }
}
