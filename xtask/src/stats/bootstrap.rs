//! Percentile bootstrap of quantiles and of the change between two
//! samples' quantiles, plain and clustered by boot (boots drawn, then
//! samples within them; paired when both sides share their boots). Seeded,
//! so the same input always gives the same interval. No tests or verdicts.
//!
//! A resample's quantile is found from ranks, not by moving samples: each
//! side's samples are ranked once (their order under `f64::total_cmp`),
//! a resample draws ranks (the same random indices, in the same order, as
//! drawing the samples themselves), and its k-th smallest rank names the
//! k-th smallest sample. A histogram of the ranks' high bits finds the few
//! draws that can be the k-th, so a resample of n samples costs n draws
//! and two passes over n integers: the intervals are those of sorting
//! every resample, to the bit, at a fraction of the cost on runs of
//! tens of thousands of samples. Past `SPLIT_ABOVE` samples a side even
//! that is too much (4000 resamples of 130,000 samples, for each of dozens
//! of comparisons): there the k-th smallest draw is found by binomial
//! splits of the rank range, a few dozen draws a resample whatever the
//! size, from the same distribution. Every loop over the resamples asks
//! `Draws::stop` first and gives up (None) when it says so.

use super::location::{location, location_by, pct_of, quantile};
use super::rng::Xoshiro256;

/// Bootstrap confidence interval of the percent change between two medians.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeCi {
    /// 100 * (median(new) / median(base) - 1)
    pub pct_change: f64,
    /// Interval bounds, in percent.
    pub lo: f64,
    pub hi: f64,
}

/// How to resample: the confidence of the interval, how many resamples,
/// the seed, and when to give up (an interrupt: the answer is None then).
pub struct Draws<'a> {
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
    pub stop: &'a dyn Fn() -> bool,
}

/// Never stop.
pub fn never() -> bool {
    false
}

impl Draws<'_> {
    fn valid(&self) -> bool {
        self.resamples > 0 && self.confidence > 0.0 && self.confidence < 1.0
    }

    /// The interval of the sorted resampled figures.
    fn interval(&self, sorted: &[f64]) -> (f64, f64) {
        (
            quantile(sorted, (1.0 - self.confidence) / 2.0),
            quantile(sorted, (1.0 + self.confidence) / 2.0),
        )
    }
}

/// One side of a bootstrap made ready to resample: each sample's rank
/// among all of the side's samples, by boot, and the samples by rank.
struct Ranked {
    /// ranks[b][i]: the place of boots[b][i] among the side's samples in
    /// `total_cmp` order (ties by position).
    ranks: Vec<Vec<u32>>,
    by_rank: Vec<f64>,
    /// A rank's bucket in a resample's histogram: rank >> shift.
    shift: u32,
    /// Past `SPLIT_ABOVE` samples: each boot's ranks in order, for drawing a
    /// resample's order statistics by binomial splits (`Ranked::split`).
    sorted: Option<Vec<Vec<u32>>>,
}

/// Above this many samples a side, a resample's k-th smallest is drawn by
/// splitting the rank range in halves (`Ranked::split`) rather than by
/// drawing every sample: the same distribution, at about 20 binomial draws
/// per boot instead of one draw per sample. Below it every resample is the
/// one-draw-per-sample stream, to the bit, as intervals always were.
const SPLIT_ABOVE: usize = 20_000;

/// Buckets of a resample's histogram, at most: enough that the k-th
/// smallest rank is looked for among a few draws, few enough to stay in
/// the cache.
const BUCKETS: usize = 2048;

impl Ranked {
    /// None past u32::MAX samples (a results.json of 80 GB).
    fn new(boots: &[&[f64]]) -> Option<Ranked> {
        Ranked::splitting_above(boots, SPLIT_ABOVE)
    }

    fn splitting_above(boots: &[&[f64]], split_above: usize) -> Option<Ranked> {
        let mut all: Vec<(f64, u32, u32)> = Vec::new();
        for (b, xs) in boots.iter().enumerate() {
            let b = u32::try_from(b).ok()?;
            for (i, &x) in xs.iter().enumerate() {
                all.push((x, b, u32::try_from(i).ok()?));
            }
        }
        let total = u32::try_from(all.len()).ok()?;
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        let mut ranks: Vec<Vec<u32>> = boots.iter().map(|xs| vec![0; xs.len()]).collect();
        for (r, &(_, b, i)) in all.iter().enumerate() {
            ranks[b as usize][i as usize] = r as u32;
        }
        let mut shift = 0;
        while (total as usize >> shift) >= BUCKETS {
            shift += 1;
        }
        let sorted = (total as usize > split_above).then(|| {
            ranks
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    r.sort_unstable();
                    r
                })
                .collect()
        });
        Some(Ranked {
            ranks,
            by_rank: all.into_iter().map(|(x, _, _)| x).collect(),
            shift,
            sorted,
        })
    }

    /// The `q` quantile of one resample: the boots in `pick` (a boot may
    /// come twice), each drawn with replacement to its own size.
    fn resampled(&self, pick: &[usize], rng: &mut Xoshiro256, s: &mut Resample, q: f64) -> f64 {
        if let Some(sorted) = &self.sorted {
            return self.split(sorted, pick, rng, q);
        }
        for &b in pick {
            self.draw_boot(b, rng, s);
        }
        s.location(self, q)
    }

    /// `resampled` without drawing the samples. A resample gives boot b
    /// `n_b` draws (times the picks of b), each uniform over b's samples;
    /// of those that fall in a rank range, the number in its lower half is
    /// binomial with the share of b's samples there. Halving the range
    /// towards the k-th smallest draw, one binomial per boot a level, finds
    /// it exactly as often as drawing the samples and sorting them would.
    fn split(&self, sorted: &[Vec<u32>], pick: &[usize], rng: &mut Xoshiro256, q: f64) -> f64 {
        let mut counts = vec![0u64; sorted.len()];
        for &b in pick {
            counts[b] += sorted[b].len() as u64;
        }
        let n = counts.iter().sum::<u64>() as usize;
        let mut cached: Option<(usize, f64, Option<f64>)> = None;
        location_by(n, q, |k| match cached {
            Some((i, a, _)) if i == k => a,
            Some((i, _, Some(b))) if i + 1 == k => b,
            _ => {
                let whole = (0, self.by_rank.len() as u32);
                let (a, b) = self.kth_by_split(sorted, counts.clone(), whole, k as u64, rng, true);
                let (a, b) = (
                    self.by_rank[a as usize],
                    b.map(|r| self.by_rank[r as usize]),
                );
                cached = Some((k, a, b));
                a
            }
        })
    }

    /// The ranks of the k-th smallest draw and (with `next`) the one after
    /// it, given `counts[b]` draws of boot b in the rank range `lo..hi`.
    fn kth_by_split(
        &self,
        sorted: &[Vec<u32>],
        mut counts: Vec<u64>,
        (mut lo, mut hi): (u32, u32),
        mut k: u64,
        rng: &mut Xoshiro256,
        next: bool,
    ) -> (u32, Option<u32>) {
        let within = |b: usize, lo: u32, hi: u32| {
            let r = &sorted[b];
            (r.partition_point(|&x| x < hi) - r.partition_point(|&x| x < lo)) as u64
        };
        // Upper halves passed over on the way down, for the draw after k.
        let mut passed: Vec<(u32, u32, Vec<u64>)> = Vec::new();
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let mut upper = vec![0u64; counts.len()];
            for (b, c) in counts.iter_mut().enumerate() {
                if *c > 0 {
                    let share = within(b, lo, mid) as f64 / within(b, lo, hi) as f64;
                    let down = rng.binomial(*c, share);
                    upper[b] = *c - down;
                    *c = down;
                }
            }
            let below: u64 = counts.iter().sum();
            if k < below {
                if next {
                    passed.push((mid, hi, upper));
                }
                hi = mid;
            } else {
                k -= below;
                counts = upper;
                lo = mid;
            }
        }
        if !next {
            return (lo, None);
        }
        if k + 1 < counts.iter().sum::<u64>() {
            return (lo, Some(lo));
        }
        // The next draw is the smallest in the nearest passed-over half
        // holding any.
        while let Some((plo, phi, upper)) = passed.pop() {
            if upper.iter().any(|&c| c > 0) {
                let (r, _) = self.kth_by_split(sorted, upper, (plo, phi), 0, rng, false);
                return (lo, Some(r));
            }
        }
        (lo, None)
    }

    fn resample(&self) -> Resample {
        // The split draws no samples: nothing to hold them in.
        let n = if self.sorted.is_some() {
            0
        } else {
            self.by_rank.len()
        };
        Resample {
            drawn: Vec::with_capacity(n),
            hist: vec![0; (n >> self.shift) + 1],
            near: Vec::new(),
        }
    }

    /// Boot `b` resampled to its own size into `out`: `rng.below(len)` per
    /// sample, as drawing the samples would.
    fn draw_boot(&self, b: usize, rng: &mut Xoshiro256, out: &mut Resample) {
        let ranks = &self.ranks[b][..];
        let n = ranks.len();
        let start = out.drawn.len();
        out.drawn.resize(start + n, 0);
        let (drawn, hist) = (&mut out.drawn[start..], &mut out.hist[..]);
        for slot in drawn.iter_mut() {
            let r = ranks[rng.below(n)];
            hist[(r >> self.shift) as usize] += 1;
            *slot = r;
        }
    }
}

/// The ranks one resample drew, with the histogram of their buckets.
struct Resample {
    drawn: Vec<u32>,
    hist: Vec<u32>,
    near: Vec<u32>,
}

impl Resample {
    /// The `q` quantile of the drawn samples (as `location` of them would
    /// give it, to the bit), and ready for the next resample.
    fn location(&mut self, side: &Ranked, q: f64) -> f64 {
        let n = self.drawn.len();
        // location_by asks for order statistic i, then maybe i + 1: both
        // come out of one look at the buckets around i.
        let mut cached: Option<(usize, f64, Option<f64>)> = None;
        let v = location_by(n, q, |k| match cached {
            Some((i, a, _)) if i == k => a,
            Some((i, _, Some(b))) if i + 1 == k => b,
            _ => {
                let (a, b) = self.kth_pair(side, k);
                cached = Some((k, a, b));
                a
            }
        });
        self.drawn.clear();
        self.hist.iter_mut().for_each(|h| *h = 0);
        v
    }

    /// The k-th smallest drawn sample and the next one (None past the end).
    fn kth_pair(&mut self, side: &Ranked, k: usize) -> (f64, Option<f64>) {
        // The bucket of the k-th, and the first bucket after it with a draw
        // when the k-th is its bucket's last.
        let (mut below, mut first) = (0usize, 0usize);
        while below + self.hist[first] as usize <= k {
            below += self.hist[first] as usize;
            first += 1;
        }
        let mut last = first;
        if k + 1 == below + self.hist[first] as usize {
            last += 1;
            while last < self.hist.len() && self.hist[last] == 0 {
                last += 1;
            }
            last = last.min(self.hist.len() - 1);
        }
        // The draws in buckets first..=last, without a branch per draw:
        // each is written, and kept when in range.
        let (lo, span) = (first as u32, (last - first) as u32);
        if self.near.len() < self.drawn.len() {
            self.near.resize(self.drawn.len(), 0);
        }
        let near = &mut self.near[..];
        let mut len = 0;
        for &r in &self.drawn {
            near[len] = r;
            len += usize::from((r >> side.shift).wrapping_sub(lo) <= span);
        }
        let near = &mut near[..len];
        near.sort_unstable();
        let at = k - below;
        (
            side.by_rank[near[at] as usize],
            near.get(at + 1).map(|&r| side.by_rank[r as usize]),
        )
    }
}

/// Bootstrap percentile confidence interval for the percent change of medians from `base`
/// to `new`.
///
/// Each resample draws both sides independently with replacement; the interval is the
/// (1-c)/2 and (1+c)/2 quantiles of the resampled percent changes. The same seed always
/// gives the same interval. Returns `None` if either side is empty, the base median is 0,
/// `resamples` is 0, or `confidence` is not strictly between 0 and 1.
#[cfg(test)]
pub fn median_change_ci(
    base: &[f64],
    new: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    let d = Draws {
        confidence,
        resamples,
        seed,
        stop: &never,
    };
    quantile_change_ci(base, new, 0.5, &d)
}

/// The percent change of the `q` quantile (0.5: the median) from `base`
/// to `new`, with its bootstrap interval (see `median_change_ci`).
pub fn quantile_change_ci(base: &[f64], new: &[f64], q: f64, d: &Draws) -> Option<ChangeCi> {
    if base.is_empty() || new.is_empty() || !d.valid() {
        return None;
    }
    let base_med = location(base, q);
    if base_med == 0.0 {
        return None;
    }
    let pct_change = pct_of(location(new, q), base_med);
    let (bs, ns) = ([base], [new]);
    let (rb, rn) = (Ranked::new(&bs)?, Ranked::new(&ns)?);
    let (mut sb, mut sn) = (rb.resample(), rn.resample());
    let mut rng = Xoshiro256::new(d.seed);
    let mut pcts = Vec::with_capacity(d.resamples);
    for _ in 0..d.resamples {
        if (d.stop)() {
            return None;
        }
        let mb = rb.resampled(&[0], &mut rng, &mut sb, q);
        let mn = rn.resampled(&[0], &mut rng, &mut sn, q);
        // A resampled base median of 0 (possible only when half the base is 0) yields an
        // infinite ratio; keeping it widens the interval, which is the honest outcome.
        // 0/0 means both medians vanished: call that no change rather than poison the sort.
        let pct = if mb == 0.0 && mn == 0.0 {
            0.0
        } else {
            pct_of(mn, mb)
        };
        pcts.push(pct);
    }
    pcts.sort_by(f64::total_cmp);
    let (lo, hi) = d.interval(&pcts);
    Some(ChangeCi { pct_change, lo, hi })
}

/// Like [`median_change_ci`], for samples taken in several boots (clusters):
/// each resample first draws boots with replacement, then samples with
/// replacement within each drawn boot, so the interval widens when boots
/// disagree (boot-to-boot spread is part of the uncertainty). `paired`: both
/// sides come from the same boots (two metrics of one cell, measured
/// interleaved), so one draw of boot indices serves both and a shift that
/// moves a whole boot cancels out. With one boot a side it is
/// `median_change_ci`.
#[cfg(test)]
pub fn median_change_ci_boots(
    base: &[&[f64]],
    new: &[&[f64]],
    paired: bool,
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<ChangeCi> {
    let d = Draws {
        confidence,
        resamples,
        seed,
        stop: &never,
    };
    quantile_change_ci_boots(base, new, 0.5, paired, &d)
}

/// [`median_change_ci_boots`] for the `q` quantile (0.5: the median).
pub fn quantile_change_ci_boots(
    base: &[&[f64]],
    new: &[&[f64]],
    q: f64,
    paired: bool,
    d: &Draws,
) -> Option<ChangeCi> {
    if base.len() <= 1 && new.len() <= 1 {
        return quantile_change_ci(base.first()?, new.first()?, q, d);
    }
    if base.iter().chain(new).any(|b| b.is_empty()) || !d.valid() {
        return None;
    }
    let paired = paired && base.len() == new.len();
    let base_med = location(&base.concat(), q);
    if base_med == 0.0 {
        return None;
    }
    let pct_change = pct_of(location(&new.concat(), q), base_med);
    let (rb, rn) = (Ranked::new(base)?, Ranked::new(new)?);
    let (mut sb, mut sn) = (rb.resample(), rn.resample());
    let mut rng = Xoshiro256::new(d.seed);
    let mut pick_b = vec![0; base.len()];
    let mut pick_n = vec![0; new.len()];
    let mut pcts = Vec::with_capacity(d.resamples);
    for _ in 0..d.resamples {
        if (d.stop)() {
            return None;
        }
        pick_b.iter_mut().for_each(|p| *p = rng.below(base.len()));
        if paired {
            pick_n.copy_from_slice(&pick_b);
        } else {
            pick_n.iter_mut().for_each(|p| *p = rng.below(new.len()));
        }
        let mb = rb.resampled(&pick_b, &mut rng, &mut sb, q);
        let mn = rn.resampled(&pick_n, &mut rng, &mut sn, q);
        pcts.push(if mb == 0.0 && mn == 0.0 {
            0.0
        } else {
            pct_of(mn, mb)
        });
    }
    pcts.sort_by(f64::total_cmp);
    let (lo, hi) = d.interval(&pcts);
    Some(ChangeCi { pct_change, lo, hi })
}

/// Percentile-bootstrap CI of the median of samples from several boots
/// (boots, then samples within them, drawn with replacement); None for one
/// boot (use the distribution-free `Summary::median_ci` there).
pub fn median_ci_boots(boots: &[&[f64]], d: &Draws) -> Option<(f64, f64)> {
    if boots.len() < 2 || boots.iter().any(|b| b.is_empty()) || !d.valid() {
        return None;
    }
    let side = Ranked::new(boots)?;
    let mut s = side.resample();
    let mut rng = Xoshiro256::new(d.seed);
    let mut pick = vec![0; boots.len()];
    let mut meds = Vec::with_capacity(d.resamples);
    for _ in 0..d.resamples {
        if (d.stop)() {
            return None;
        }
        pick.iter_mut().for_each(|p| *p = rng.below(boots.len()));
        meds.push(side.resampled(&pick, &mut rng, &mut s, 0.5));
    }
    meds.sort_by(f64::total_cmp);
    Some(d.interval(&meds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::testutil::{assert_close, wobbly};

    fn draws(confidence: f64, resamples: usize, seed: u64) -> Draws<'static> {
        Draws {
            confidence,
            resamples,
            seed,
            stop: &never,
        }
    }

    #[test]
    fn bootstrap_is_deterministic_for_a_seed() {
        let base = wobbly(15, 100.0, 6.0, 1);
        let new = wobbly(12, 103.0, 6.0, 2);
        let a = median_change_ci(&base, &new, 0.95, 2000, 42).unwrap();
        let b = median_change_ci(&base, &new, 0.95, 2000, 42).unwrap();
        assert_eq!(a, b);
        let c = median_change_ci(&base, &new, 0.95, 2000, 43).unwrap();
        assert_eq!(a.pct_change, c.pct_change);
        assert!(
            a.lo != c.lo || a.hi != c.hi,
            "a different seed should resample differently"
        );
        assert!(a.lo <= a.pct_change && a.pct_change <= a.hi);
    }

    #[test]
    fn bootstrap_contains_true_shift() {
        // new is drawn from base's distribution scaled by 1.10 (uniform 110 +- 2.2 vs
        // 100 +- 2), so the true change of medians is exactly +10%.
        let base = wobbly(30, 100.0, 4.0, 7);
        let new = wobbly(30, 110.0, 4.4, 8);
        let ci = median_change_ci(&base, &new, 0.95, 4000, 1).unwrap();
        assert!(ci.lo < 10.0 && 10.0 < ci.hi, "{ci:?}");
        // Clearly separated: the interval must exclude "no change".
        assert!(ci.lo > 0.0, "{ci:?}");
        // A pure rescaling shifts every resampled median by the same factor.
        let scaled: Vec<f64> = base.iter().map(|x| x * 1.25).collect();
        let ci = median_change_ci(&base, &scaled, 0.95, 2000, 9).unwrap();
        assert_close(ci.pct_change, 25.0, 1e-12);
        assert!(ci.lo < 25.0 + 1e-9 && 25.0 - 1e-9 < ci.hi, "{ci:?}");
    }

    #[test]
    fn boot_clusters_carry_boot_to_boot_spread_into_the_interval() {
        let base = wobbly(60, 100.0, 4.0, 11);
        let new = wobbly(60, 100.0, 4.0, 12);
        // One boot a side: exactly the plain bootstrap.
        assert_eq!(
            median_change_ci_boots(&[&base], &[&new], false, 0.95, 2000, 5),
            median_change_ci(&base, &new, 0.95, 2000, 5)
        );
        // Boots that agree: about as narrow as pooling them.
        let (b1, b2) = base.split_at(30);
        let (n1, n2) = new.split_at(30);
        let agree = median_change_ci_boots(&[b1, b2], &[n1, n2], false, 0.95, 2000, 5).unwrap();
        let pooled = median_change_ci(&base, &new, 0.95, 2000, 5).unwrap();
        assert!(
            agree.hi - agree.lo < 2.0 * (pooled.hi - pooled.lo),
            "{agree:?} vs {pooled:?}"
        );
        // Three boots a side, each with its own level (a host state that lasted
        // the boot) and little noise inside it. Pooled, the samples look like
        // 180 precise ones; the boots say the level is only known to a few %.
        let boots = |levels: [f64; 3], seed: u64| -> Vec<Vec<f64>> {
            levels
                .iter()
                .enumerate()
                .map(|(i, l)| wobbly(60, *l, 1.0, seed + i as u64))
                .collect()
        };
        let b = boots([100.0, 106.0, 96.0], 20);
        let n = boots([105.0, 97.0, 101.0], 30);
        let bs: Vec<&[f64]> = b.iter().map(|v| &v[..]).collect();
        let ns: Vec<&[f64]> = n.iter().map(|v| &v[..]).collect();
        let clustered = median_change_ci_boots(&bs, &ns, false, 0.95, 2000, 5).unwrap();
        let flat = median_change_ci(&b.concat(), &n.concat(), 0.95, 2000, 5).unwrap();
        assert!(
            clustered.hi - clustered.lo > 2.0 * (flat.hi - flat.lo),
            "{clustered:?} vs {flat:?}"
        );
        assert!(clustered.lo < 0.0 && clustered.hi > 0.0, "{clustered:?}");
        // Paired: the same boots on both sides, the new metric 10% below the
        // base in every boot while whole boots move by up to 20%.
        let levels = [100.0, 120.0, 95.0];
        let pb: Vec<Vec<f64>> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| wobbly(60, *l, 2.0, 40 + i as u64))
            .collect();
        let pn: Vec<Vec<f64>> = levels
            .iter()
            .enumerate()
            .map(|(i, l)| wobbly(60, 0.9 * l, 1.8, 50 + i as u64))
            .collect();
        let (pbs, pns): (Vec<&[f64]>, Vec<&[f64]>) = (
            pb.iter().map(|v| &v[..]).collect(),
            pn.iter().map(|v| &v[..]).collect(),
        );
        let paired = median_change_ci_boots(&pbs, &pns, true, 0.95, 2000, 5).unwrap();
        let unpaired = median_change_ci_boots(&pbs, &pns, false, 0.95, 2000, 5).unwrap();
        assert!(
            paired.lo < -10.0 + 3.0 && paired.hi > -10.0 - 3.0 && paired.hi < 0.0,
            "{paired:?}"
        );
        assert!(
            unpaired.hi - unpaired.lo > 3.0 * (paired.hi - paired.lo),
            "{unpaired:?} vs {paired:?}"
        );
        // The median's own CI across boots spans the boot levels' spread.
        let (lo, hi) = median_ci_boots(&pbs, &draws(0.95, 2000, 5)).unwrap();
        assert!(lo < 100.0 && hi > 110.0, "[{lo}, {hi}]");
        assert!(median_ci_boots(&pbs[..1], &draws(0.95, 2000, 5)).is_none());
        assert!(median_change_ci_boots(&[b1, &[]], &[n1], false, 0.95, 100, 1).is_none());
    }

    #[test]
    fn bootstrap_constant_samples_collapse() {
        let ci = median_change_ci(&[2.0; 8], &[3.0; 5], 0.95, 500, 3).unwrap();
        assert_eq!(ci.pct_change, 50.0);
        assert_eq!((ci.lo, ci.hi), (ci.pct_change, ci.pct_change));
        let ci = median_change_ci(&[4.0; 8], &[4.0; 8], 0.95, 500, 3).unwrap();
        assert_eq!((ci.pct_change, ci.lo, ci.hi), (0.0, 0.0, 0.0));
    }

    #[test]
    fn bootstrap_rejects_degenerate_input() {
        assert!(median_change_ci(&[], &[1.0], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[0.0, 0.0, 1.0], &[1.0], 0.95, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], 0.95, 0, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], 1.0, 100, 0).is_none());
        assert!(median_change_ci(&[1.0], &[1.0], f64::NAN, 100, 0).is_none());
    }

    /// Intervals computed outside the harness by a Python replica of the
    /// resampling (splitmix64 seeding, xoshiro256**, Lemire's draw, the
    /// medians of each resample, numpy's linear quantile of the sorted
    /// changes), to the last bit: the stream, the order of draws and the
    /// quantiles are all what results.json's intervals were made of.
    #[test]
    fn intervals_match_an_independent_replica_to_the_bit() {
        let base = [10.0, 12.0, 11.0, 13.0, 9.0, 14.0];
        let new = [12.0, 15.0, 13.0, 14.0, 16.0];
        let ci = median_change_ci(&base, &new, 0.95, 200, 42).unwrap();
        assert_eq!(
            (ci.pct_change, ci.lo, ci.hi),
            (21.739130434782616, 0.0, 57.947368421052644)
        );
        let b: [&[f64]; 3] = [
            &[100.0, 101.0, 99.0, 102.0],
            &[110.0, 108.0, 111.0],
            &[95.0, 96.0, 97.0, 94.0, 98.0],
        ];
        let n: [&[f64]; 3] = [
            &[104.0, 103.0, 105.0],
            &[112.0, 115.0, 113.0, 114.0],
            &[99.0, 100.0, 98.0],
        ];
        let ci = median_change_ci_boots(&b, &n, false, 0.9, 300, 7).unwrap();
        assert_eq!(
            (ci.pct_change, ci.lo, ci.hi),
            (5.025125628140703, -8.333333333333337, 16.49484536082475)
        );
        let ci = median_change_ci_boots(&b, &n, true, 0.9, 300, 7).unwrap();
        assert_eq!(
            (ci.pct_change, ci.lo, ci.hi),
            (5.025125628140703, 2.253487933634984, 5.555555555555558)
        );
        assert_eq!(
            median_ci_boots(&b, &draws(0.95, 400, 0x6b6d)),
            Some((96.0, 110.0))
        );
    }

    /// The resampling as it was first written: each resample's samples
    /// copied, then their quantile by selection (`location_in_place`).
    /// The ranks must give the same intervals to the bit.
    fn by_copying(base: &[&[f64]], new: &[&[f64]], q: f64, paired: bool, d: &Draws) -> (f64, f64) {
        use crate::stats::location::location_in_place;
        let copy = |boots: &[&[f64]], pick: &[usize], rng: &mut Xoshiro256| {
            let mut buf = Vec::new();
            for &i in pick {
                let c = boots[i];
                for _ in 0..c.len() {
                    buf.push(c[rng.below(c.len())]);
                }
            }
            location_in_place(&mut buf, q)
        };
        let mut rng = Xoshiro256::new(d.seed);
        let mut pcts = Vec::new();
        for _ in 0..d.resamples {
            let (mb, mn) = if base.len() <= 1 && new.len() <= 1 {
                (copy(base, &[0], &mut rng), copy(new, &[0], &mut rng))
            } else {
                let pb: Vec<usize> = (0..base.len()).map(|_| rng.below(base.len())).collect();
                let pn: Vec<usize> = if paired && base.len() == new.len() {
                    pb.clone()
                } else {
                    (0..new.len()).map(|_| rng.below(new.len())).collect()
                };
                (copy(base, &pb, &mut rng), copy(new, &pn, &mut rng))
            };
            pcts.push(if mb == 0.0 && mn == 0.0 {
                0.0
            } else {
                pct_of(mn, mb)
            });
        }
        pcts.sort_by(f64::total_cmp);
        d.interval(&pcts)
    }

    /// Samples with ties, zeros of both signs and boots of every size,
    /// every quantile the matrix declares: the intervals from ranks are
    /// those from copying and selecting, bit for bit.
    #[test]
    fn ranks_give_the_intervals_of_copying_every_resample() {
        let mut rng = Xoshiro256::new(99);
        for case in 0..60u64 {
            let boots = |rng: &mut Xoshiro256, k: usize| -> Vec<Vec<f64>> {
                (0..k)
                    .map(|_| {
                        let n = 1 + rng.below(if case % 3 == 0 { 300 } else { 12 });
                        (0..n)
                            .map(|_| match rng.below(10) {
                                0 => 0.0,
                                1 => -0.0,
                                2 => 7.0,
                                _ => 50.0 + rng.below(1000) as f64 / 7.0,
                            })
                            .collect()
                    })
                    .collect()
            };
            let (kb, kn) = (1 + rng.below(4), 1 + rng.below(4));
            let (b, n) = (boots(&mut rng, kb), boots(&mut rng, kn));
            let (b, n): (Vec<&[f64]>, Vec<&[f64]>) = (
                b.iter().map(|v| &v[..]).collect(),
                n.iter().map(|v| &v[..]).collect(),
            );
            let q = [0.5, 0.1, 0.9, 0.25][rng.below(4)];
            let paired = rng.below(2) == 0;
            let d = draws(0.95, 300, case);
            let Some(ci) = quantile_change_ci_boots(&b, &n, q, paired, &d) else {
                continue;
            };
            let want = by_copying(&b, &n, q, paired, &d);
            assert_eq!(
                (ci.lo.to_bits(), ci.hi.to_bits()),
                (want.0.to_bits(), want.1.to_bits()),
                "case {case}: q {q} paired {paired} {kb} vs {kn} boots"
            );
        }
    }

    /// How long a resample of many samples takes, ranks against copying:
    /// `cargo test --bin xtask resampling_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn resampling_cost() {
        let big: Vec<Vec<f64>> = (0..3).map(|i| wobbly(43_400, 100.0, 6.0, i)).collect();
        let b: Vec<&[f64]> = big.iter().map(|v| &v[..]).collect();
        let d = draws(0.95, 200, 1);
        let t = std::time::Instant::now();
        let ci = quantile_change_ci_boots(&b, &b, 0.5, false, &d).unwrap();
        let ranks = t.elapsed();
        let t = std::time::Instant::now();
        let want = by_copying(&b, &b, 0.5, false, &d);
        let copying = t.elapsed();
        assert_eq!((ci.lo, ci.hi), want);
        eprintln!(
            "200 resamples of 3 x 43400 samples a side: ranks {ranks:?}, copying {copying:?}"
        );
    }

    /// The resampled median of `n` draws from `boots` (split or not), many
    /// times over: how often each value came out.
    fn resampled_medians(boots: &[&[f64]], split: bool, times: usize) -> Vec<f64> {
        let side = Ranked::splitting_above(boots, if split { 0 } else { usize::MAX }).unwrap();
        let mut s = side.resample();
        let mut rng = Xoshiro256::new(3);
        let pick: Vec<usize> = (0..boots.len()).collect();
        (0..times)
            .map(|_| side.resampled(&pick, &mut rng, &mut s, 0.5))
            .collect()
    }

    fn share(xs: &[f64], v: f64) -> f64 {
        xs.iter().filter(|&&x| x == v).count() as f64 / xs.len() as f64
    }

    /// Three draws from {1, 2, 3}: the median is 1 when at least two draws
    /// are 1, (3 * 2 + 1) / 27 = 7/27, the same for 3, and 2 otherwise
    /// (13/27). Two draws from {0, 10}: the median is 0 or 10 a quarter of
    /// the time each, 5 (a mixed pair) half of it. Boots {0, 10} and {20}:
    /// two draws from the first, one from the second; the median is 0 when
    /// both first draws are 0 (1/4), else 10. 27,000 resamples put each
    /// share within 0.01 (over 3 standard errors).
    #[test]
    fn split_resamples_give_the_medians_drawing_every_sample_gives() {
        for split in [false, true] {
            let m = resampled_medians(&[&[3.0, 1.0, 2.0]], split, 27_000);
            for (v, p) in [(1.0, 7.0 / 27.0), (2.0, 13.0 / 27.0), (3.0, 7.0 / 27.0)] {
                assert!(
                    (share(&m, v) - p).abs() < 0.01,
                    "split {split}: {v}: {}",
                    share(&m, v)
                );
            }
            let m = resampled_medians(&[&[10.0, 0.0]], split, 27_000);
            for (v, p) in [(0.0, 0.25), (5.0, 0.5), (10.0, 0.25)] {
                assert!(
                    (share(&m, v) - p).abs() < 0.01,
                    "split {split}: {v}: {}",
                    share(&m, v)
                );
            }
            let m = resampled_medians(&[&[10.0, 0.0], &[20.0]], split, 27_000);
            for (v, p) in [(0.0, 0.25), (10.0, 0.75)] {
                assert!(
                    (share(&m, v) - p).abs() < 0.01,
                    "split {split}: {v}: {}",
                    share(&m, v)
                );
            }
        }
    }

    /// Three boots that disagree (so a boot's share of a rank range is not
    /// the side's), 30,000 samples: the split's resampled medians spread
    /// as the sample-by-sample ones do, to within the resampling's own
    /// error, and its intervals bracket the same change.
    #[test]
    fn split_and_sample_by_sample_resampling_agree_on_a_large_side() {
        let b: Vec<Vec<f64>> = (0..3)
            .map(|i| wobbly(10_000, 100.0 + 3.0 * i as f64, 8.0 + i as f64, 40 + i))
            .collect();
        let boots: Vec<&[f64]> = b.iter().map(|v| &v[..]).collect();
        let spread = |split| {
            let mut m = resampled_medians(&boots, split, 4000);
            m.sort_by(f64::total_cmp);
            [0.025, 0.5, 0.975].map(|q| quantile(&m, q))
        };
        let (direct, split) = (spread(false), spread(true));
        let width = direct[2] - direct[0];
        assert!(width > 0.0, "{direct:?}");
        for (d, s) in direct.iter().zip(&split) {
            assert!(
                (d - s).abs() < 0.1 * width,
                "direct {direct:?} split {split:?}"
            );
        }
    }
}
