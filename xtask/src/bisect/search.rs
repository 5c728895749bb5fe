//! The search of a bisect over the prefixes 0..=n of a series (0 is the
//! base, k the first k patches). Pure: it is handed the judgements made so
//! far and says what to test next, so an interrupted bisect resumes by
//! replaying its recorded judgements.
//!
//! Both ends are checked first (0 must be good, n bad). A step that cannot
//! be judged (does not apply or build, boots into something unrelated, a
//! metric too noisy to call) is skipped and the search picks the untested
//! prefix nearest the middle instead; when only skipped prefixes remain
//! between the last good and the first bad, the answer is the range, never
//! a guess.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Judgement {
    Good,
    Bad,
    Skip,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Judge the prefix of this many patches.
    Test(usize),
    /// Patch `k` (1-based) is the first bad one: prefix k-1 good, k bad.
    Found(usize),
    /// The first bad patch is one of these (the rest could not be judged).
    Range(Vec<usize>),
    /// The ends are not good and bad: nothing to bisect.
    BadEnds(String),
}

/// What to do next, given the judgements so far (prefix -> judgement).
pub fn next(n: usize, seen: &BTreeMap<usize, Judgement>) -> Next {
    // The ends first, base before the full series.
    for end in [0, n] {
        match seen.get(&end) {
            None => return Next::Test(end),
            Some(Judgement::Good) if end == n => {
                return Next::BadEnds(format!(
                    "the full series (all {n} patches) is good: there is no regression to find"
                ))
            }
            Some(Judgement::Bad) if end == 0 => {
                return Next::BadEnds(
                    "the base (no patch applied) is already bad: the series did not cause it"
                        .into(),
                )
            }
            Some(Judgement::Skip) => {
                return Next::BadEnds(format!(
                    "the {} could not be judged (see its step): a bisect needs both ends",
                    if end == 0 {
                        "base".to_string()
                    } else {
                        format!("full series ({n} patches)")
                    }
                ))
            }
            _ => {}
        }
    }
    let good = seen
        .iter()
        .filter(|(_, j)| **j == Judgement::Good)
        .map(|(k, _)| *k)
        .max()
        .unwrap_or(0);
    let bad = seen
        .iter()
        .filter(|(k, j)| **j == Judgement::Bad && **k > good)
        .map(|(k, _)| *k)
        .min()
        .unwrap_or(n);
    if bad == good + 1 {
        return Next::Found(bad);
    }
    let mid = (good + bad) as f64 / 2.0;
    let open: Vec<usize> = (good + 1..bad).filter(|k| !seen.contains_key(k)).collect();
    match open.iter().min_by(|a, b| {
        ((**a as f64 - mid).abs())
            .partial_cmp(&(**b as f64 - mid).abs())
            .unwrap()
            .then(a.cmp(b))
    }) {
        Some(&k) => Next::Test(k),
        None => Next::Range((good + 1..=bad).collect()),
    }
}

/// The most steps a bisect of `n` patches should take with no skip:
/// ceil(log2(n)) plus the two end checks.
pub fn expected_steps(n: usize) -> usize {
    (n.max(1) as f64).log2().ceil() as usize + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against an oracle and returns (answer, steps).
    fn run(n: usize, oracle: impl Fn(usize) -> Judgement) -> (Next, Vec<usize>) {
        let mut seen = BTreeMap::new();
        let mut steps = vec![];
        loop {
            match next(n, &seen) {
                Next::Test(k) => {
                    assert!(!seen.contains_key(&k), "prefix {k} tested twice");
                    steps.push(k);
                    seen.insert(k, oracle(k));
                }
                other => return (other, steps),
            }
        }
    }

    #[test]
    fn every_culprit_of_every_length_is_found_within_log2_plus_two() {
        for n in 1..=40 {
            for culprit in 1..=n {
                let (ans, steps) = run(n, |k| {
                    if k >= culprit {
                        Judgement::Bad
                    } else {
                        Judgement::Good
                    }
                });
                assert_eq!(ans, Next::Found(culprit), "n={n} culprit={culprit}");
                assert!(
                    steps.len() <= expected_steps(n),
                    "n={n} culprit={culprit}: {} steps {steps:?}",
                    steps.len()
                );
                assert_eq!(&steps[..2], &[0, n]);
            }
        }
    }

    #[test]
    fn skipped_steps_are_gone_around() {
        // 8 patches, patch 4 does not build (prefix 4 skips), culprit 6.
        let (ans, steps) = run(8, |k| match k {
            4 => Judgement::Skip,
            k if k >= 6 => Judgement::Bad,
            _ => Judgement::Good,
        });
        assert_eq!(ans, Next::Found(6));
        assert!(steps.contains(&4), "{steps:?}");
        // Skip right before the culprit: 5 can't be judged, 6 is the first
        // bad, so the answer is 5 or 6, not a guess.
        let (ans, _) = run(8, |k| match k {
            5 => Judgement::Skip,
            k if k >= 6 => Judgement::Bad,
            _ => Judgement::Good,
        });
        assert_eq!(ans, Next::Range(vec![5, 6]));
    }

    #[test]
    fn ends_that_are_not_good_then_bad_stop_the_search() {
        let (ans, steps) = run(5, |_| Judgement::Good);
        assert!(matches!(ans, Next::BadEnds(ref m) if m.contains("full series")));
        assert_eq!(steps, [0, 5]);
        let (ans, steps) = run(5, |_| Judgement::Bad);
        assert!(matches!(ans, Next::BadEnds(ref m) if m.contains("base")));
        assert_eq!(steps, [0]);
        let (ans, _) = run(5, |k| {
            if k == 5 {
                Judgement::Skip
            } else {
                Judgement::Good
            }
        });
        assert!(matches!(ans, Next::BadEnds(ref m) if m.contains("could not be judged")));
    }

    #[test]
    fn a_one_patch_series_needs_only_the_ends() {
        let (ans, steps) = run(1, |k| {
            if k == 1 {
                Judgement::Bad
            } else {
                Judgement::Good
            }
        });
        assert_eq!(ans, Next::Found(1));
        assert_eq!(steps, [0, 1]);
    }
}
