//! The text of A/A results: per arch the counts against the goals and the
//! false alarms one by one, and the boot-to-boot noise table. Rendering
//! only: the counting and the noise are `crate::stats::aa`'s.

use std::collections::BTreeMap;

use crate::plan::matrix::AA_VARIANT;
use crate::stats::aa::{
    Alarm, Goal, Noise, Tally, MAX_FALSE_ALARM_PCT, MIN_COMPARISONS, MIN_NO_CHANGE_PCT,
};

// Callers outside report/ still reach the computation through here.

/// One false alarm: run, cell, metric, change and CI.
fn alarm(a: &Alarm) -> String {
    let c = &a.comparison;
    format!(
        "{}: {} {} {} {:+.1}% [{:+.1}%, {:+.1}%] p={:.4}{}",
        a.label,
        c.new_cell,
        c.new_metric,
        c.verdict,
        c.pct_change,
        c.ci95_lo,
        c.ci95_hi,
        c.p_value,
        if a.past_min_effect {
            format!(", CI past min_effect_pct {}%", c.min_effect_pct)
        } else {
            String::new()
        }
    )
}

/// A goal in words, with where the tally stands.
fn goal(t: &Tally, g: Goal) -> String {
    match g {
        Goal::FalseAlarms => format!(
            "false alarms <= {MAX_FALSE_ALARM_PCT}% ({:.1}%) and none with its CI past min_effect_pct ({})",
            t.pct(t.false_alarms()),
            t.past_min_effect
        ),
        Goal::NoChange => format!(
            "\"no change\" >= {MIN_NO_CHANGE_PCT}% ({:.1}%)",
            t.pct(t.no_change)
        ),
        Goal::Comparisons => format!(
            "at least {MIN_COMPARISONS} comparisons ({})",
            t.comparisons
        ),
    }
}

/// The report: per arch the counts, the goals met or not, the false
/// alarms one by one.
pub fn text(tallies: &BTreeMap<String, Tally>, twin: &str) -> String {
    if tallies.is_empty() {
        return if twin == AA_VARIANT {
            "no A/A comparison (base vs base~aa) in these runs: run them with `matrix --aa`\n"
                .into()
        } else {
            format!("no A/A comparison (base vs {twin}) in these runs: run both variants with `matrix --variant base --variant {twin}`\n")
        };
    }
    let mut s = String::new();
    for (arch, t) in tallies {
        s += &format!(
            "{arch}: {} A/A comparisons from {} runs: {} no change ({:.1}%), {} too noisy, {} too few samples,{} {} false alarms ({:.1}%: {} improved, {} regressed; {} with the CI past min_effect_pct)\n",
            t.comparisons,
            t.runs,
            t.no_change,
            t.pct(t.no_change),
            t.too_noisy,
            t.too_few_samples,
            if t.cannot_compare > 0 {
                format!(" {} cannot compare,", t.cannot_compare)
            } else {
                String::new()
            },
            t.false_alarms(),
            t.pct(t.false_alarms()),
            t.improved,
            t.regressed,
            t.past_min_effect
        );
        if t.comparisons > 0 {
            s += &format!(
                "  boots a side: {:.1} on average, at most {}\n",
                t.boots as f64 / (2 * t.comparisons) as f64,
                t.max_boots
            );
        }
        for (g, met) in t.goals() {
            s += &format!(
                "  goal {}: {}\n",
                goal(t, g),
                if met { "met" } else { "NOT MET" }
            );
        }
        for a in &t.alarms {
            s += &format!("  false alarm {}\n", alarm(a));
        }
    }
    s
}

pub fn noise_text(n: &BTreeMap<(String, String), Noise>, twin: &str) -> String {
    if n.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\nBoot-to-boot noise on this host (from these runs; the boot is the unit comparisons repeat):\n",
    );
    for ((arch, metric), x) in n {
        s += &format!(
            "  {arch} {metric}: {} varies {:.1}% (SD) from boot to boot ({} df); for \"no change\" within +-{}% in 80% of A/A comparisons: {}\n",
            crate::schema::quantile_label(x.quantile),
            x.sd_pct,
            x.df,
            x.min_effect_pct,
            match x.boots_needed {
                Some(b) => format!("{b} boots a side"),
                None => "more than 50 boots a side".into(),
            }
        );
        if let Some((sd, df, needed)) = x.paired {
            s += &format!(
                "    in pairs of boots ({twin} over base, boot by boot): the ratio varies {sd:.1}% (SD, {df} df); {}\n",
                match needed {
                    Some(n) => format!("{n} pairs"),
                    None => "more than 50 pairs".into(),
                }
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::matrix::AA_VARIANT;
    use crate::schema::{Comparison, Verdict};
    use crate::stats::aa::{noise, tally};
    use crate::stats::compare::aa_fixture::{fixture_run, sample_comparison};

    fn cmp(v: Verdict, ci: (f64, f64)) -> Comparison {
        Comparison {
            base_cell: "6.1/base/arm64/tiny".into(),
            new_cell: format!("6.1/{AA_VARIANT}/arm64/tiny"),
            base_metric: "m.a".into(),
            new_metric: "m.a".into(),
            pct_change: (ci.0 + ci.1) / 2.0,
            ci95_lo: ci.0,
            ci95_hi: ci.1,
            p_value: 0.01,
            verdict: v,
            boots_base: 3,
            boots_new: 3,
            ..sample_comparison()
        }
    }

    #[test]
    fn a_false_alarm_says_where_and_how_far_its_ci_reaches() {
        let t = tally(
            &[(
                "r1".into(),
                vec![
                    cmp(Verdict::Regressed, (53.4, 58.4)),
                    cmp(Verdict::Improved, (-9.0, -1.0)),
                ],
            )],
            &[],
            AA_VARIANT,
        );
        let s = text(&t, AA_VARIANT);
        assert!(
            s.contains("  false alarm r1: 6.1/base~aa/arm64/tiny m.a regressed +55.9% [+53.4%, +58.4%] p=0.0100, CI past min_effect_pct 5%\n"),
            "{s}"
        );
        assert!(
            s.contains("  false alarm r1: 6.1/base~aa/arm64/tiny m.a improved -5.0% [-9.0%, -1.0%] p=0.0100\n"),
            "{s}"
        );
    }

    #[test]
    fn the_text_gives_the_counts_and_each_goal_met_or_not() {
        // 19 comparisons: 15 no change, 4 too noisy; one got boots added.
        let mut cs: Vec<Comparison> = (0..15)
            .map(|_| cmp(Verdict::NoChange, (-2.0, 2.0)))
            .collect();
        cs.extend((0..4).map(|_| cmp(Verdict::TooNoisy, (-8.0, 2.0))));
        cs[2].boots_base = 12;
        cs[2].boots_new = 12;
        let s = text(&tally(&[("r".into(), cs)], &[], AA_VARIANT), AA_VARIANT);
        assert!(s.starts_with("arm64: 19 A/A comparisons from 1 runs: 15 no change (78.9%), 4 too noisy, 0 too few samples, 0 false alarms (0.0%"), "{s}");
        // (18 x 3 + 12) / 19 = 3.47 boots a side.
        assert!(
            s.contains("  boots a side: 3.5 on average, at most 12\n"),
            "{s}"
        );
        assert!(
            s.contains("  goal false alarms <= 5% (0.0%) and none with its CI past min_effect_pct (0): met\n"),
            "{s}"
        );
        assert!(
            s.contains("  goal \"no change\" >= 80% (78.9%): NOT MET\n"),
            "{s}"
        );
        assert!(
            s.contains("  goal at least 20 comparisons (19): NOT MET\n"),
            "{s}"
        );
        assert!(text(&BTreeMap::new(), AA_VARIANT).contains("matrix --aa"));
        assert!(text(&BTreeMap::new(), "layout").contains("(base vs layout)"));
    }

    /// The noise of the real A/A runs, in words (the figures are checked in
    /// `crate::stats::aa`).
    #[test]
    fn the_noise_table_gives_each_figure_with_its_df() {
        let (run, m) = fixture_run("aa-1");
        let t = noise_text(&noise(&[&run], &m, AA_VARIANT), AA_VARIANT);
        assert!(t.contains("x86_64 seccomp_notify.default.same-cpu: median varies 18.2% (SD) from boot to boot (4 df)"), "{t}");
        let (run, m) = fixture_run("aa-host-phase");
        let t = noise_text(&noise(&[&run], &m, AA_VARIANT), AA_VARIANT);
        assert!(
            t.contains("in pairs of boots (base~aa over base, boot by boot): the ratio varies"),
            "{t}"
        );
        assert_eq!(noise_text(&BTreeMap::new(), AA_VARIANT), "");
    }
}
