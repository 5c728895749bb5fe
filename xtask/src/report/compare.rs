//! The comparisons table of summary.md: one row per comparison with the
//! medians, the change and its CI, the p-value and the verdict in words.
//! Rendering only: the comparisons are computed in `crate::stats::compare`.

use super::{ci_pct, fixed, pct, verdict_words};
use crate::schema::{Comparison, ComparisonKind, PTest};

// Callers outside report/ still reach the computation through here.
#[cfg(test)]
pub(crate) use crate::stats::compare::aa_fixture;

/// The CI's level when it is not 95%: a planned look's (`Comparison::level`).
fn level_note(c: &Comparison) -> String {
    if c.level == 0.05 || !c.ci95_lo.is_finite() {
        String::new()
    } else {
        format!(
            " ({:.1}%, look at {} boots)",
            100.0 * (1.0 - c.level),
            c.boots_new
        )
    }
}

pub fn markdown(cs: &[Comparison]) -> String {
    if cs.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n## Comparisons\n\n| new | vs base | median base | median new | change | CI | p | verdict |\n|---|---|---|---|---|---|---|---|\n");
    for c in cs {
        let new = format!("{} {}{}", c.new_cell, c.new_metric, c.split_note());
        let base = match c.kind {
            ComparisonKind::Within => c.base_metric.clone(),
            ComparisonKind::Variants => c.base_cell.clone(),
        };
        let boots = if c.p_test == PTest::PairedBootMedians {
            format!(" ({} pairs of boots)", c.boots_base)
        } else if c.boots_base > 1 || c.boots_new > 1 {
            format!(" ({} vs {} boots)", c.boots_base, c.boots_new)
        } else {
            String::new()
        };
        let p_note = match c.p_test {
            PTest::WelchBootMedians => " (Welch, boot medians)",
            PTest::PairedBootMedians => " (paired t, boot medians)",
            PTest::MannWhitney => "",
        };
        // Medians unless the metric declares another quantile: then named.
        let stat = if c.quantile == 0.5 {
            String::new()
        } else {
            format!("{} ", crate::schema::quantile_label(c.quantile))
        };
        // A comparison that could not be made has no change, CI or p.
        let p = if c.p_value.is_finite() {
            format!("{:.4}{p_note}", c.p_value)
        } else {
            "-".into()
        };
        s += &format!(
            "| {new} | {base} | {stat}{} | {stat}{} {} | {} | {}{boots} | {p} | {} |\n",
            fixed(c.median_base, 3),
            fixed(c.median_new, 3),
            c.unit,
            pct(c.pct_change, 1),
            ci_pct(c.ci95_lo, c.ci95_hi) + &level_note(c),
            {
                let mut v = verdict_words(c);
                if let Some(sd) = c.boot_sd_pct {
                    let (what, unit) = if c.kind == ComparisonKind::Within {
                        ("the ratio moves from boot to boot by", "boots")
                    } else if c.p_test == PTest::PairedBootMedians {
                        ("pairs of boots differ", "pairs")
                    } else {
                        ("boots vary", "boots a side")
                    };
                    v += &format!(
                        " ({what} {sd:.1}%: {} for +-{}%)",
                        c.boots_needed
                            .map_or(format!("more than 50 {unit}"), |n| format!(
                                "about {n} {unit}"
                            )),
                        c.min_effect_pct
                    );
                }
                if c.futile {
                    v += "; no more boots: more than the run may give";
                }
                match &c.reference {
                    Some(r) => format!("{v}; {r}"),
                    None => v,
                }
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Verdict;
    use crate::stats::compare::compare;

    #[test]
    fn table_names_the_base_by_kind_and_gives_the_verdict_in_words() {
        let c = Comparison {
            kind: ComparisonKind::Within,
            new_metric: "b.sync.x".into(),
            n_base: 30,
            n_new: 30,
            median_base: 100.0,
            median_new: 80.0,
            pct_change: -20.0,
            ci95_lo: -30.5,
            ci95_hi: -9.25,
            p_value: 0.001,
            cv_new: 0.2,
            ..Comparison::fixture(
                "6.1/s/x86_64/tiny",
                "6.1/s/x86_64/tiny",
                "b.default.x",
                Verdict::TooNoisy,
            )
        };
        let variants = Comparison {
            kind: ComparisonKind::Variants,
            base_cell: "6.1/base/x86_64/tiny".into(),
            base_metric: "b.sync.x".into(),
            verdict: Verdict::NoChange,
            boots_base: 1,
            boots_new: 1,
            p_test: PTest::MannWhitney,
            ..c.clone()
        };
        let md = markdown(&[c, variants]);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| 6.1")).collect();
        assert_eq!(
            rows,
            [
                "| 6.1/s/x86_64/tiny b.sync.x | b.default.x | 100.000 | 80.000 us/op | -20.0% | [-30.5%, -9.2%] (3 vs 3 boots) | 0.0010 (Welch, boot medians) | too noisy to judge |",
                "| 6.1/s/x86_64/tiny b.sync.x | 6.1/base/x86_64/tiny | 100.000 | 80.000 us/op | -20.0% | [-30.5%, -9.2%] | 0.0010 | no significant change |",
            ],
            "{md}"
        );
        assert_eq!(markdown(&[]), "");
    }

    /// A "too noisy" verdict says how much the boots moved and how many
    /// boots a side would settle it, or that more than 50 would.
    #[test]
    fn too_noisy_rows_say_the_boot_spread_and_the_boots_it_would_take() {
        let c = Comparison {
            verdict: Verdict::TooNoisy,
            boot_sd_pct: Some(6.8352),
            boots_needed: Some(30),
            ..aa_fixture::sample_comparison()
        };
        let md = markdown(std::slice::from_ref(&c));
        assert!(
            md.contains("too noisy to judge (boots vary 6.8%: about 30 boots a side for +-5%)"),
            "{md}"
        );
        let md = markdown(&[Comparison {
            boots_needed: None,
            ..c
        }]);
        assert!(md.contains("more than 50 boots a side for +-5%"), "{md}");
    }

    /// Paired boots say how much a pair's two boots differ, in pairs.
    #[test]
    fn too_noisy_pairs_say_how_much_pairs_differ_and_the_pairs_it_would_take() {
        let c = Comparison {
            verdict: Verdict::TooNoisy,
            p_test: PTest::PairedBootMedians,
            boots_base: 18,
            boots_new: 18,
            min_effect_pct: 3.0,
            boot_sd_pct: Some(5.1504),
            boots_needed: Some(25),
            ..aa_fixture::sample_comparison()
        };
        let md = markdown(&[c]);
        assert!(
            md.contains(" (18 pairs of boots) | 0.9000 (paired t, boot medians) |"),
            "{md}"
        );
        assert!(
            md.contains("(pairs of boots differ 5.2%: about 25 pairs for +-3%)"),
            "{md}"
        );
    }

    /// A split pair's row names the state of the host its boots were in;
    /// a state no boot saw is said in words, and the schedule boots on for
    /// it.
    #[test]
    fn a_split_row_names_the_state_of_the_host() {
        let (run, m) = aa_fixture::fixture_run("sync-host-phases");
        let cs = compare(&run, &m);
        let claim = |cell: &str| -> Vec<&Comparison> {
            cs.iter()
                .filter(|c| {
                    c.new_cell == cell
                        && c.new_metric == "seccomp_notify.sync.unpinned"
                        && c.kind == ComparisonKind::Within
                })
                .collect()
        };
        let hi = claim("6.1/seccomp-sync-wakeup/x86_64/tiny")[0];
        assert_eq!(
            markdown(std::slice::from_ref(hi)).lines().nth(5).unwrap().split(" | ").next().unwrap(),
            "| 6.1/seccomp-sync-wakeup/x86_64/tiny seccomp_notify.sync.unpinned, in the 7 boots, where \
             seccomp_notify.host.wake_gap_pct >= 17 % (median 49.0; 11 boots below)"
        );
        let arm = claim("6.1/seccomp-sync-wakeup/arm64/tiny");
        assert!(
            arm[0].split_note().contains(
                "all 6 boots, where seccomp_notify.host.wake_gap_pct < 17 % (median 11.3; no boot at or above)"
            ),
            "{}",
            arm[0].split_note()
        );
    }
}
