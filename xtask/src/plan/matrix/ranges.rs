//! The ranges of matrix.toml's numbers, one rule a row: the table checks
//! a value after parsing and explains serde's refusal of one of the wrong
//! type (`-1`, `nan`, too large) at parse time, so both say the same
//! range. docs/matrix-toml.md states them.

use std::fmt::Display;
use std::ops::RangeInclusive;

use anyhow::Result;

use crate::plan::spans::{Seg, Spans};

/// `[run] smp`, and `--smp`.
pub const SMP: RangeInclusive<u32> = 1..=64;
/// `[config] smp`: possible CPUs (with `maxcpus=`, more than are online).
pub const CONFIG_SMP: RangeInclusive<u32> = 1..=512;
pub const MEMORY_MB: RangeInclusive<u32> = 128..=65_536;
/// Seconds of QEMU for one boot, a day at most (`--cell-timeout` too).
pub const CELL_TIMEOUT_S: RangeInclusive<u64> = 1..=86_400;
/// Seconds a test may take in the guest (x3 under TCG), a day at most.
pub const TEST_TIMEOUT_S: RangeInclusive<u64> = 1..=86_400;
/// Boots of a cell: run.boots, run.max_boots, `[test] boots`, and the
/// `--boots`/`--max-boots` flags of every command.
pub const BOOTS: RangeInclusive<u32> = 1..=50;
/// `[test.*] rounds` (kind = "perf").
pub const ROUNDS: RangeInclusive<u32> = 1..=100;
/// `[metric] min_effect_pct`, a change in percent.
pub const MIN_EFFECT_PCT: RangeInclusive<f64> = 0.0..=1000.0;

/// Where a value may lie.
#[derive(Clone, Copy)]
enum Bounds {
    /// `lo..=hi`, said as such with the unit after it.
    Closed(f64, f64),
    /// `(lo, hi)`, ends excluded, said as "NOUN in (lo, hi)".
    Open(f64, f64),
    /// Above `lo`, excluded, said as "NOUN above lo".
    Above(f64),
}

/// One numeric key of matrix.toml: its table and key, where its value may
/// lie, and the words after the range (a unit, or what the key means).
pub struct Rule {
    table: &'static str,
    key: &'static str,
    bounds: Bounds,
    /// For a closed range: the unit (" CPUs"); for an open one: the noun
    /// before it ("a percentage").
    words: &'static str,
    /// What the key means, after the range: " (0.5: the median)".
    note: &'static str,
}

const fn closed(
    table: &'static str,
    key: &'static str,
    lo: f64,
    hi: f64,
    words: &'static str,
) -> Rule {
    Rule {
        table,
        key,
        bounds: Bounds::Closed(lo, hi),
        words,
        note: "",
    }
}

const fn open(
    table: &'static str,
    key: &'static str,
    bounds: Bounds,
    noun: &'static str,
    note: &'static str,
) -> Rule {
    Rule {
        table,
        key,
        bounds,
        words: noun,
        note,
    }
}

/// Every bounded number of matrix.toml but `run.max_boots`, whose lower
/// end is `run.boots` (checked beside the table, said in `number_at`).
const RULES: [Rule; 14] = [
    closed(
        "run",
        "smp",
        *SMP.start() as f64,
        *SMP.end() as f64,
        " CPUs",
    ),
    closed(
        "run",
        "memory_mb",
        *MEMORY_MB.start() as f64,
        *MEMORY_MB.end() as f64,
        " MB",
    ),
    closed(
        "run",
        "cell_timeout_s",
        *CELL_TIMEOUT_S.start() as f64,
        *CELL_TIMEOUT_S.end() as f64,
        " seconds",
    ),
    closed(
        "run",
        "boots",
        *BOOTS.start() as f64,
        *BOOTS.end() as f64,
        "",
    ),
    closed(
        "config",
        "smp",
        *CONFIG_SMP.start() as f64,
        *CONFIG_SMP.end() as f64,
        " CPUs",
    ),
    closed(
        "test",
        "boots",
        *BOOTS.start() as f64,
        *BOOTS.end() as f64,
        " (the first N boots of a cell; a test that never runs is left out of the tests)",
    ),
    closed(
        "test",
        "rounds",
        *ROUNDS.start() as f64,
        *ROUNDS.end() as f64,
        " (runs of each case in a boot)",
    ),
    closed(
        "test",
        "timeout_s",
        *TEST_TIMEOUT_S.start() as f64,
        *TEST_TIMEOUT_S.end() as f64,
        " seconds",
    ),
    closed(
        "metric",
        "min_effect_pct",
        *MIN_EFFECT_PCT.start(),
        *MIN_EFFECT_PCT.end(),
        " (percent)",
    ),
    open(
        "metric",
        "target_ci_pct",
        Bounds::Open(0.0, 100.0),
        "a percentage",
        "",
    ),
    open(
        "metric",
        "quantile",
        Bounds::Open(0.0, 1.0),
        "a number",
        " (0.5: the median)",
    ),
    open(
        "metric",
        "layout_pct",
        Bounds::Open(0.0, 100.0),
        "a percentage",
        " (what code layout alone moves the metric by)",
    ),
    open(
        "agree",
        "factor",
        Bounds::Above(1.0),
        "a ratio",
        " (2.0: the medians within 2x of each other)",
    ),
    open(
        "metric.power",
        "below",
        Bounds::Above(f64::NEG_INFINITY),
        "a finite number",
        " (the bound of the power figure)",
    ),
];

/// A number the rules can check and print as written.
pub trait Number: Copy + Display {
    fn value(self) -> f64;
}

impl Number for u32 {
    fn value(self) -> f64 {
        self.into()
    }
}

impl Number for u64 {
    fn value(self) -> f64 {
        // Exact below 2^53; beyond it every range here is left far behind.
        self as f64
    }
}

impl Number for f64 {
    fn value(self) -> f64 {
        self
    }
}

impl Rule {
    /// The rule of `table`'s `key` (a table's first name: "test" for
    /// `[test.NAME]`). Only the keys in RULES are asked for.
    pub fn of(table: &str, key: &str) -> &'static Rule {
        RULES
            .iter()
            .find(|r| r.table == table && r.key == key)
            .unwrap_or_else(|| panic!("no range rule for {table}.{key}"))
    }

    fn holds(&self, v: f64) -> bool {
        v.is_finite()
            && match self.bounds {
                Bounds::Closed(lo, hi) => lo <= v && v <= hi,
                Bounds::Open(lo, hi) => lo < v && v < hi,
                Bounds::Above(lo) => lo < v,
            }
    }

    /// What the key expects: "1..=64 CPUs", "a percentage in (0, 100)".
    pub fn expected(&self) -> String {
        let w = self.words;
        let range = match self.bounds {
            Bounds::Closed(lo, hi) => format!("{lo}..={hi}{w}"),
            Bounds::Open(lo, hi) => format!("{w} in ({lo}, {hi})"),
            Bounds::Above(lo) if lo.is_finite() => format!("{w} above {lo}"),
            Bounds::Above(_) => w.to_string(),
        };
        range + self.note
    }

    /// `NAME = v` within the rule, else an error at the value (`keys`)
    /// saying what was expected.
    pub fn check(&self, at: &Spans, keys: &[Seg], name: &str, v: impl Number) -> Result<()> {
        if self.holds(v.value()) {
            return Ok(());
        }
        Err(at.err_at(
            keys,
            format!("{name} = {v} is out of range, expected {}", self.expected()),
        ))
    }
}

/// What a numeric key expects, for serde's refusals of a value of the
/// wrong type: by the key on `offset`'s line and the table header above
/// it ("run.smp: expected 1..=64 CPUs").
pub(super) fn number_at(text: &str, offset: usize) -> Option<String> {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line.split_once('=')?.0.trim();
    let header = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))?;
    let path: Vec<&str> = header
        .trim_matches(['[', ']'])
        .split('.')
        .map(str::trim)
        .collect();
    let table = match path.as_slice() {
        [t, _, "power"] => format!("{t}.power"),
        [t, ..] => t.to_string(),
        [] => return None,
    };
    if (table.as_str(), key) == ("run", "max_boots") {
        return Some(format!(
            "run.max_boots: expected run.boots..={}",
            BOOTS.end()
        ));
    }
    let rule = RULES.iter().find(|r| r.table == table && r.key == key)?;
    let name = match table.as_str() {
        "run" => format!("run.{key}"),
        t => format!("[{t}] {key}"),
    };
    Some(format!("{name}: expected {}", rule.expected()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_says_its_range_and_holds_its_own_ends() {
        assert_eq!(Rule::of("run", "smp").expected(), "1..=64 CPUs");
        assert_eq!(
            Rule::of("metric", "target_ci_pct").expected(),
            "a percentage in (0, 100)"
        );
        assert_eq!(
            Rule::of("agree", "factor").expected(),
            "a ratio above 1 (2.0: the medians within 2x of each other)"
        );
        let smp = Rule::of("run", "smp");
        assert!(smp.holds(1.0) && smp.holds(64.0) && !smp.holds(0.0) && !smp.holds(65.0));
        let q = Rule::of("metric", "quantile");
        assert!(q.holds(0.5) && !q.holds(0.0) && !q.holds(1.0) && !q.holds(f64::NAN));
        let below = Rule::of("metric.power", "below");
        assert!(below.holds(-1e300) && !below.holds(f64::INFINITY));
    }

    #[test]
    fn a_key_of_the_wrong_type_is_explained_by_its_table() {
        let text = "[run]\nsmp = -1\n[metric.x.power]\nbelow = \"a\"\n[test.t]\nrounds = 1.5\n";
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(
            number_at(text, at("-1")).as_deref(),
            Some("run.smp: expected 1..=64 CPUs")
        );
        assert_eq!(
            number_at(text, at("\"a\"")).as_deref(),
            Some("[metric.power] below: expected a finite number (the bound of the power figure)")
        );
        assert_eq!(
            number_at(text, at("1.5")).as_deref(),
            Some("[test] rounds: expected 1..=100 (runs of each case in a boot)")
        );
        assert_eq!(number_at("[run]\nname = x\n", 12), None);
    }
}
