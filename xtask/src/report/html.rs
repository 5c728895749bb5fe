//! A self-contained HTML report of a run: one file, inline CSS and SVG, no
//! script and nothing fetched. Pure: a `Run` in, a string out.
//!
//! Sections: cells x tests (outcomes, failing cases with reasons), the
//! comparisons with their verdicts (each with a small interval plot against
//! zero and the minimum effect), one strip plot per kernel/arch/config and
//! metric with every sample of every variant drawn, grouped per boot, with
//! the median and its 95% CI, and the cells not as expected with evidence.
//!
//! The HTML and the SVG are maud templates (`html!`): their tags are
//! checked when compiled, and every text and attribute value spliced in is
//! escaped. The plots are drawn by hand: a strip plot is a few dozen lines
//! of circles and rectangles, and a plotting crate (plotters) would add a
//! font stack and many dependencies for no better picture.

use std::collections::{HashMap, HashSet};

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{ci_pct, fixed, pct};
use crate::schema::{
    CellResult, Comparison, ComparisonKind, Metric, Outcome, Run, TestResult, Verdict,
};
use crate::stats::intervals::{ci_half_pct, MedianCis};
use crate::stats::location::{median, summarize};

/// Dots drawn per lane (a metric of one cell) at most: past it, every
/// k-th sample of each boot is drawn, and the boot's label says so. The
/// medians, CIs and ticks are of all the samples.
pub const MAX_DOTS: usize = 2000;

/// A piece of a line written for markdown: plain text, or the inside of a
/// code span.
enum Piece<'a> {
    Text(&'a str),
    Code(&'a str),
}

/// A markdown line's code spans (in backticks, as util::md_code makes
/// them) and the text around them. An unclosed run of backticks is text.
fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('`') {
        out.push(Piece::Text(&rest[..i]));
        let tick = rest[i..].len() - rest[i..].trim_start_matches('`').len();
        let fence = &rest[i..i + tick];
        let body = &rest[i + tick..];
        // The closing fence: the same number of backticks, no more.
        let close = body.char_indices().map(|(j, _)| j).find(|&j| {
            body[j..].starts_with(fence)
                && !body[j + tick..].starts_with('`')
                && (j == 0 || !body[..j].ends_with('`'))
        });
        match close {
            Some(j) => {
                let code = &body[..j];
                let code = match (code.strip_prefix(' '), code.ends_with(' ')) {
                    (Some(c), true) if c.len() > 1 => &c[..c.len() - 1],
                    _ => code,
                };
                out.push(Piece::Code(code));
                rest = &body[j + tick..];
            }
            None => {
                out.push(Piece::Text(fence));
                rest = body;
            }
        }
    }
    out.push(Piece::Text(rest));
    out
}

/// A line written for markdown as HTML: each code span a `<code>`.
pub fn esc_md(s: &str) -> Markup {
    html! {
        @for piece in pieces(s) {
            @match piece {
                Piece::Text(t) => (t),
                Piece::Code(c) => code { (c) },
            }
        }
    }
}

/// A self-contained page with the report's style: `body` inside.
pub fn page(title: &str, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                // CSS as it is: a style element's text is not HTML.
                style { (PreEscaped(STYLE)) }
            }
            body { (body) }
        }
    };
    page.into_string() + "\n"
}

const STYLE: &str = r#"
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; margin: 24px; color: #1d2126; max-width: 1400px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.meta { color: #57606a; font-size: 13px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.o { display: inline-block; padding: 1px 6px; border-radius: 10px; font-weight: 600; font-size: 12px; }
.o-pass, .o-flaky { background: #dafbe1; color: #116329; }
.o-fail { background: #ffebe9; color: #a40e26; }
.o-skip { background: #eaeef2; color: #57606a; }
.o-crash, .o-timeout, .o-infra-error, .o-build-error, .o-apply-error, .o-config-error { background: #a40e26; color: #fff; }
.v { display: inline-block; padding: 1px 6px; border-radius: 4px; font-weight: 600; font-size: 12px; white-space: nowrap; }
.v-improved { background: #dafbe1; color: #116329; }
.v-regressed { background: #ffebe9; color: #a40e26; }
.v-no-change { background: #ddf4ff; color: #0a3069; }
.v-too-noisy, .v-too-few-samples { background: #fff8c5; color: #7d4e00; }
.no { color: #a40e26; font-weight: 700; }
tr.bad td { background: #fff5f5; }
details { margin-top: 4px; } summary { cursor: pointer; color: #0969da; }
pre { background: #f6f8fa; padding: 8px; font-size: 12px; overflow-x: auto; max-height: 420px; }
.plot { margin: 6px 0 2px; }
.verdicts { font-size: 13px; margin: 2px 0 14px 0; padding-left: 18px; }
ul.cases { margin: 4px 0 0 0; padding-left: 18px; }
.t-pt { fill: #1f6fb2; } .t-ci { stroke: #1f6fb2; stroke-opacity: .45; } .t-ax { stroke: #999; }
.t-cp { stroke: #c0392b; stroke-dasharray: 4 3; } .t-lvl { stroke: #555; stroke-width: 1.5; }
.t-lab { font-size: 11px; fill: #555; } .t-cp-label { font-size: 11px; fill: #c0392b; }
"#;

/// An outcome's badge.
fn outcome(o: Outcome) -> Markup {
    html! { span.o.{ "o-" (o.as_str()) } { (o.as_str()) } }
}

/// A comparison's verdict badge and, when it has one, its reason.
fn verdict(c: &Comparison) -> Markup {
    // Styled here, not in STYLE: a page without such a comparison is
    // the same as before the verdict existed.
    let style =
        (c.verdict == Verdict::CannotCompare).then_some("background: #eaeef2; color: #1d2126");
    html! {
        span.v.{ "v-" (c.verdict.as_str()) } style=[style] { (c.verdict.describe()) }
        // Why: a `cannot-compare`'s reason, or the layout bound a
        // significant change stayed inside.
        @if let Some(r) = &c.reason {
            " " span.meta { (r) }
        }
    }
}

/// A test's cell of the cells table: outcome, cases passed, duration,
/// reason and the cases not passing.
fn test_cell(t: &TestResult) -> Markup {
    let pass = t
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .count();
    let odd: Vec<_> = t
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Pass)
        .collect();
    html! {
        (outcome(t.outcome))
        @if !t.cases.is_empty() {
            (format!(" {pass}/{} pass", t.cases.len()))
        }
        @if let Some(d) = t.duration_s {
            " " span.meta { (format!("({d:.1}s)")) }
        }
        @if let Some(r) = &t.reason {
            br;
            span.meta { (r) }
        }
        @if !odd.is_empty() {
            details {
                summary { (odd.len()) " not passing" }
                ul.cases {
                    @for c in &odd {
                        li {
                            (outcome(c.outcome)) " " (c.name)
                            @if let Some(r) = &c.reason { ": " (r) }
                        }
                    }
                }
            }
        }
    }
}

/// 4-9 round tick values covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-9);
    let raw = span / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A coordinate or length in SVG user units, to one decimal.
fn d1(v: f64) -> String {
    format!("{v:.1}")
}

/// Deterministic jitter in [-1, 1] for sample `i` (a spread of dots, the
/// same picture every time).
fn jitter(i: usize) -> f64 {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491;
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    (x % 2001) as f64 / 1000.0 - 1.0
}

const BOOT_COLOURS: [&str; 6] = [
    "#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e",
];

/// The strip plot's geometry (SVG user units).
mod strip {
    pub const W: f64 = 1100.0;
    pub const LEFT: f64 = 330.0;
    pub const RIGHT: f64 = 30.0;
    pub const ROW: f64 = 22.0;
    pub const GAP: f64 = 14.0;
    pub const TOP: f64 = 8.0;
}

/// The value axis of a strip plot: [lo, hi] onto the plot's width.
struct Axis {
    lo: f64,
    hi: f64,
}

impl Axis {
    /// The samples' range, padded a little; None without a finite sample.
    fn of(lanes: &[(String, &Metric)]) -> Option<Axis> {
        let all: Vec<f64> = lanes
            .iter()
            .flat_map(|(_, m)| m.samples.iter().copied())
            .filter(|v| v.is_finite())
            .collect();
        if all.is_empty() {
            return None;
        }
        let (lo, hi) = all
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let pad = ((hi - lo) * 0.03).max(hi.abs() * 0.01).max(1e-9);
        let padded = Axis {
            lo: lo - pad,
            hi: hi + pad,
        };
        // Samples near f64's ends: no padding past them, no axis wider
        // than f64 can measure (every position on it a finite number).
        [padded, Axis { lo, hi }]
            .into_iter()
            .find(|a| (a.hi - a.lo).is_finite() && a.hi > a.lo)
    }

    fn x(&self, v: f64) -> f64 {
        use strip::{LEFT, RIGHT, W};
        LEFT + (v - self.lo) / (self.hi - self.lo) * (W - LEFT - RIGHT)
    }
}

/// One lane per (label, metric): every sample a dot, one row per boot with
/// that boot's median as a tick; the lane's median as a line and its 95%
/// CI as a band. Nothing without a finite sample.
pub fn strip_svg(lanes: &[(String, &Metric)], cis: &MedianCis) -> Markup {
    use strip::{GAP, ROW, TOP, W};
    let Some(ax) = Axis::of(lanes) else {
        return Markup::default();
    };
    let heights: Vec<f64> = lanes
        .iter()
        .map(|(_, m)| (m.by_boot().len() as f64).max(2.0) * ROW)
        .collect();
    let plot_h: f64 = heights.iter().sum::<f64>() + GAP * lanes.len() as f64;
    let h = TOP + plot_h + 34.0;
    let mut y0 = TOP;
    let placed: Vec<Lane> = lanes
        .iter()
        .zip(&heights)
        .map(|((label, m), &lane_h)| {
            let lane = Lane {
                label,
                m,
                y0,
                h: lane_h,
            };
            y0 += lane_h + GAP;
            lane
        })
        .collect();
    let unit = lanes.first().map_or("", |(_, m)| m.unit.as_str());
    // Dots are numbered across the whole plot, so the jitter never repeats.
    let mut k = 0usize;
    html! {
        svg.plot xmlns="http://www.w3.org/2000/svg" width="100%"
            viewBox={ "0 0 " (W) " " (h) } style={ "max-width: " (W) "px" }
            font-family="system-ui, sans-serif" font-size="12" {
            (strip_axis(&ax, TOP + plot_h, unit))
            @for lane in &placed {
                (strip_lane(&ax, lane, cis, &mut k))
            }
        }
    }
}

/// The grid, the value axis at `axis_y` with its ticks, and the unit.
fn strip_axis(ax: &Axis, axis_y: f64, unit: &str) -> Markup {
    use strip::{LEFT, RIGHT, TOP, W};
    html! {
        @for t in ticks(ax.lo, ax.hi) {
            @let tx = d1(ax.x(t));
            line x1=(tx) y1=(TOP) x2=(tx) y2=(axis_y) stroke="#eaeef2" {}
            text x=(tx) y=(d1(axis_y + 16.0)) text-anchor="middle" fill="#57606a" {
                (fmt_tick(t))
            }
        }
        line x1=(LEFT) y1=(axis_y) x2=(d1(W - RIGHT)) y2=(axis_y) stroke="#57606a" {}
        text x=(d1(W - RIGHT)) y=(d1(axis_y + 30.0)) text-anchor="end" fill="#57606a" {
            (unit)
        }
    }
}

/// A lane of a strip plot: its label (name, then details after a line
/// break), the metric, where it starts and how high it is.
struct Lane<'a> {
    label: &'a str,
    m: &'a Metric,
    y0: f64,
    h: f64,
}

/// One lane: the median and its CI behind, the label, then a row per
/// boot (its dots numbered from `k` on).
fn strip_lane(ax: &Axis, lane: &Lane, cis: &MedianCis, k: &mut usize) -> Markup {
    use strip::ROW;
    let Lane { label, m, y0, .. } = *lane;
    let (name, detail) = label.split_once('\n').unwrap_or((label, ""));
    let boots = m.by_boot();
    let every = thinning(m.samples.len());
    html! {
        (lane_median(ax, lane, cis))
        text x="8" y=(d1(y0 + 13.0)) font-weight="600" fill="#1d2126" { (name) }
        text x="8" y=(d1(y0 + 29.0)) fill="#57606a" { (detail) }
        @for (b, samples) in boots.iter().enumerate() {
            @let cy = y0 + ROW * (b as f64 + 0.5);
            (strip_boot(ax, (b, boots.len()), samples, cy, every, k))
        }
    }
}

/// A lane's median as a line and its 95% CI as a band (boots resampled
/// when several); nothing without a finite sample.
fn lane_median(ax: &Axis, lane: &Lane, cis: &MedianCis) -> Markup {
    let Lane { m, y0, h, .. } = *lane;
    let Some(sum) = summarize(&m.samples) else {
        return Markup::default();
    };
    let mx = d1(ax.x(sum.median));
    html! {
        @if let Some((clo, chi)) = cis.get(m, &sum) {
            rect x=(d1(ax.x(clo))) y=(d1(y0 - 3.0))
                width=(d1((ax.x(chi) - ax.x(clo)).max(1.0))) height=(d1(h + 6.0))
                fill="#fb8500" fill-opacity="0.16" stroke="#fb8500" stroke-opacity="0.5" {
                title { (format!("95% CI of the median: [{clo:.3}, {chi:.3}]")) }
            }
        }
        line x1=(mx) y1=(d1(y0 - 3.0)) x2=(mx) y2=(d1(y0 + h + 3.0))
            stroke="#c2410c" stroke-width="2.5" {
            title { (format!("median {:.3}", sum.median)) }
        }
    }
}

/// Every how many samples a lane of `n` draws one: 1 up to `MAX_DOTS`.
fn thinning(n: usize) -> usize {
    n.div_ceil(MAX_DOTS).max(1)
}

/// Boot `b` of `n`'s row at height `cy`: its label, its samples as dots
/// (every `every`-th; numbered from `k` for the jitter) and its median as
/// a tick.
fn strip_boot(
    ax: &Axis,
    (b, n): (usize, usize),
    samples: &[f64],
    cy: f64,
    every: usize,
    k: &mut usize,
) -> Markup {
    use strip::{LEFT, ROW};
    let colour = BOOT_COLOURS[b % BOOT_COLOURS.len()];
    let drawn = if every > 1 {
        format!(", 1 in {every} drawn")
    } else {
        String::new()
    };
    // A lone boot is not named, and not coloured.
    let (label, fill) = if n > 1 {
        (
            format!("boot {} (n={}{drawn})", b + 1, samples.len()),
            colour,
        )
    } else {
        (format!("n={}{drawn}", samples.len()), "#57606a")
    };
    let dots: Vec<f64> = samples
        .iter()
        .step_by(every)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let first = *k;
    *k += dots.len();
    let mid = median(samples);
    html! {
        text x=(d1(LEFT - 8.0)) y=(d1(cy + 4.0)) text-anchor="end" fill=(fill) { (label) }
        @for (i, v) in dots.iter().enumerate() {
            circle cx=(d1(ax.x(*v))) cy=(d1(cy + jitter(first + i) * ROW * 0.3)) r="2.4"
                fill=(colour) fill-opacity="0.5" {}
        }
        @if mid.is_finite() {
            @let bx = d1(ax.x(mid));
            line x1=(bx) y1=(d1(cy - ROW * 0.42)) x2=(bx) y2=(d1(cy + ROW * 0.42))
                stroke=(colour) stroke-width="2" {}
        }
    }
}

/// A comparison's change and CI against zero and +-min effect; nothing
/// for one without (`cannot-compare`).
fn interval_svg(c: &Comparison, span: f64) -> Markup {
    const W: f64 = 130.0;
    if ![c.pct_change, c.ci95_lo, c.ci95_hi, c.min_effect_pct]
        .iter()
        .all(|v| v.is_finite())
    {
        return Markup::default();
    }
    let x = |v: f64| W / 2.0 + v.clamp(-span, span) / span * (W / 2.0 - 6.0);
    let colour = match c.verdict.as_str() {
        "improved" => "#1a7f37",
        "regressed" => "#cf222e",
        "no-change" => "#0969da",
        _ => "#9a6700",
    };
    let band = (x(-c.min_effect_pct), x(c.min_effect_pct));
    let title = format!(
        "change {:+.1}%, 95% CI [{:+.1}%, {:+.1}%]; shaded: within ±{}%",
        c.pct_change, c.ci95_lo, c.ci95_hi, c.min_effect_pct
    );
    html! {
        svg xmlns="http://www.w3.org/2000/svg" width=(W) height="18" viewBox={ "0 0 " (W) " 18" } {
            rect x=(d1(band.0)) y="2" width=(d1(band.1 - band.0)) height="14" fill="#eaeef2" {}
            line x1=(d1(x(0.0))) y1="0" x2=(d1(x(0.0))) y2="18" stroke="#57606a" {}
            line x1=(d1(x(c.ci95_lo))) y1="9" x2=(d1(x(c.ci95_hi))) y2="9"
                stroke=(colour) stroke-width="3" {}
            circle cx=(d1(x(c.pct_change))) cy="9" r="4" fill=(colour) {}
            title { (title) }
        }
    }
}

/// A comparison in a sentence: verdict, what against what, the medians
/// and, when computed, the change, its CI and p.
fn comparison_sentence(c: &Comparison) -> Markup {
    let against = match c.kind {
        ComparisonKind::Variants => format!("{} vs {}", c.new_cell, c.base_cell),
        ComparisonKind::Within => {
            format!(
                "{} vs {} in {}{}",
                c.new_metric,
                c.base_metric,
                c.new_cell,
                c.split_note()
            )
        }
    };
    let medians = format!(
        "median {} → {} {}",
        fixed(c.median_base, 3),
        fixed(c.median_new, 3),
        c.unit
    );
    html! {
        (verdict(c)) " " (against) ": " (medians)
        @if c.verdict != Verdict::CannotCompare {
            (format!(
                " ({}, 95% CI {}, p={})",
                pct(c.pct_change, 1),
                ci_pct(c.ci95_lo, c.ci95_hi),
                fixed(c.p_value, 4)
            ))
        }
    }
}

fn group_of(c: &CellResult) -> String {
    format!("{}/*/{}/{}", c.kernel, c.arch, c.config)
}

/// The report; `cis` gives the metrics' median CIs (and gives up on them
/// when the caller is interrupted).
pub fn html(run: &Run, cis: &MedianCis) -> String {
    with_end(run, cis, None)
}

/// The report, closed by `end` (the trends of its cells across the
/// history, `report::trend::across_runs`) when one is given.
pub fn with_end(run: &Run, cis: &MedianCis, end: Option<Markup>) -> String {
    let body = html! {
        (heading(run))
        (answer(run))
        (cells_table(run))
        @if !run.comparisons.is_empty() {
            (comparisons_table(&run.comparisons))
        }
        (metrics(run, cis))
        (not_as_expected(run))
        @if let Some(e) = end { (e) }
    };
    page(&format!("kmatrix run {}", run.started), body)
}

/// The run's title and one-line description.
fn heading(run: &Run) -> Markup {
    let n_bad = run.cells.iter().filter(|c| !c.as_expected).count();
    let h = &run.host;
    html! {
        h1 { "kmatrix run " (run.started) }
        p.meta {
            (format!(
                "{} cells, {} not as expected; {} comparisons. Host {} ({} CPUs, {}), {}; matrix {}.",
                run.cells.len(),
                n_bad,
                run.comparisons.len(),
                h.hostname,
                h.cpus,
                h.kernel,
                h.qemu,
                run.matrix
            ))
        }
    }
}

/// What each series did, before any table (`report::answer`).
fn answer(run: &Run) -> Markup {
    let said = super::answer::answer(run);
    html! {
        h2 { "The answer" }
        @if said.is_empty() {
            p { (super::answer::NO_SERIES) }
        }
        @for g in &said {
            p { b { (g.title) } }
            ul {
                @for i in &g.items { li { (i) } }
            }
        }
    }
}

/// Cells x tests: outcome, expectation, accel, each test, build and boot.
fn cells_table(run: &Run) -> Markup {
    let mut tests: Vec<&str> = Vec::new();
    for c in &run.cells {
        for t in &c.tests {
            if !tests.contains(&t.name.as_str()) {
                tests.push(&t.name);
            }
        }
    }
    html! {
        h2 { "Cells" }
        table {
            tr {
                th { "cell" } th { "outcome" } th { "as expected" } th { "accel" }
                @for t in &tests { th { (t) } }
                th { "build" } th { "boot (wall)" }
            }
            @for c in &run.cells {
                (cell_row(c, &tests))
            }
        }
    }
}

/// A cell's row of the cells table, one column a test of `tests`.
fn cell_row(c: &CellResult, tests: &[&str]) -> Markup {
    let build = if c.timings.build_cached {
        "cached".to_string()
    } else {
        format!("{:.0}s", c.timings.build_s)
    };
    html! {
        // Marked when not as expected; else no class attribute at all.
        tr class=[(!c.as_expected).then_some("bad")] {
            td { (c.id) }
            td { (outcome(c.outcome)) }
            td {
                @if c.as_expected { "yes" } @else { span.no { "NO" } }
            }
            td { (c.accel) }
            @for t in tests {
                td {
                    @match c.tests.iter().find(|x| x.name == *t) {
                        Some(r) => (test_cell(r)),
                        None => "-",
                    }
                }
            }
            td.num { (build) }
            td.num { (format!("{:.1}s", c.timings.boot_s)) }
        }
    }
}

/// Every comparison: verdict, medians, change with its CI drawn against
/// zero and the minimum effect, p and boots.
fn comparisons_table(comparisons: &[Comparison]) -> Markup {
    let span = comparisons
        .iter()
        .map(|c| {
            c.ci95_lo
                .abs()
                .max(c.ci95_hi.abs())
                .max(c.min_effect_pct * 2.0)
        })
        .filter(|v| v.is_finite())
        .fold(10.0f64, f64::max)
        .min(100.0);
    html! {
        h2 { "Comparisons" }
        p.meta {
            (format!("Change of the median, new vs base, with the bootstrap 95% CI (boots resampled when several); the shaded band is ±min_effect_pct, the axis spans ±{span:.0}%."))
        }
        table {
            tr {
                th { "new cell" } th { "metric" } th { "vs base" } th { "verdict" }
                th { "median base → new" } th { "change [95% CI]" } th {} th { "p (boots)" }
            }
            @for c in comparisons {
                (comparison_row(c, span))
            }
        }
    }
}

/// A comparison's row of the comparisons table; its interval plot's axis
/// spans ±`span`%.
fn comparison_row(c: &Comparison, span: f64) -> Markup {
    let base = match c.kind {
        ComparisonKind::Within => format!("{} (same cell{})", c.base_metric, c.split_note()),
        ComparisonKind::Variants => c.base_cell.clone(),
    };
    html! {
        tr {
            td { (c.new_cell) }
            td { (c.new_metric) }
            td { (base) }
            td { (verdict(c)) }
            td.num {
                (fixed(c.median_base, 3)) " → " (fixed(c.median_new, 3)) " " (c.unit)
            }
            td.num { (pct(c.pct_change, 1)) " " (ci_pct(c.ci95_lo, c.ci95_hi)) }
            td { (interval_svg(c, span)) }
            td.num {
                (fixed(c.p_value, 4))
                br;
                span.meta { (c.boots_base) " vs " (c.boots_new) }
            }
        }
    }
}

/// One strip plot per kernel/arch/config and metric, variants side by
/// side, each with the comparisons that name it.
fn metrics(run: &Run, cis: &MedianCis) -> Markup {
    let mut groups: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for c in &run.cells {
        for m in &c.metrics {
            let key = (group_of(c), m.name.clone());
            if seen.insert(key.clone()) {
                groups.push(key);
            }
        }
    }
    // Each group's members, found once: (cell, metric) in cell order.
    let mut members: HashMap<(String, &str), Vec<(&CellResult, &Metric)>> = HashMap::new();
    for c in &run.cells {
        for m in &c.metrics {
            let e = members.entry((group_of(c), m.name.as_str())).or_default();
            // The first metric of a name in a cell, as a search finds it.
            if !e.iter().any(|(x, _)| std::ptr::eq(*x, c)) {
                e.push((c, m));
            }
        }
    }
    // The comparisons by the cell they judge, with their place in the run.
    let mut by_cell: HashMap<&str, Vec<(usize, &Comparison)>> = HashMap::new();
    for (i, c) in run.comparisons.iter().enumerate() {
        by_cell.entry(c.new_cell.as_str()).or_default().push((i, c));
    }
    html! {
        @if !groups.is_empty() {
            (metrics_intro(run))
        }
        @for (group, name) in &groups {
            @let ms = members
                .get(&(group.clone(), name.as_str()))
                .map_or(&[][..], Vec::as_slice);
            (metric_group(ms, &by_cell, (group, name), cis))
        }
    }
}

/// The metrics' heading and how to read their plots.
fn metrics_intro(run: &Run) -> Markup {
    let thinned = run
        .cells
        .iter()
        .flat_map(|c| &c.metrics)
        .any(|m| m.samples.len() > MAX_DOTS);
    html! {
        h2 { "Metrics" }
        p.meta {
            "Every sample is a dot, one row per boot (colour = boot, tick = that boot's median); the orange line is the median of all samples and the band its 95% CI (resampling boots, then samples)."
            @if thinned {
                (format!(" A metric of more than {MAX_DOTS} samples in a cell is drawn thinned: every k-th sample of each boot, as the boot's label says; its medians, ticks and CI are of all its samples."))
            }
        }
    }
}

/// One metric of one kernel/arch/config: its heading, skips, plot and
/// verdicts.
fn metric_group(
    members: &[(&CellResult, &Metric)],
    by_cell: &HashMap<&str, Vec<(usize, &Comparison)>>,
    (group, name): (&str, &str),
    cis: &MedianCis,
) -> Markup {
    let lanes: Vec<(String, &Metric)> = members
        .iter()
        .filter(|(_, m)| m.skip.is_none() && !m.samples.is_empty())
        .map(|(c, m)| {
            let sum = summarize(&m.samples);
            let med = sum.as_ref().map_or(String::new(), |x| {
                let half = ci_half_pct(cis.get(m, x), x.median)
                    .filter(|h| h.is_finite())
                    .map_or(String::new(), |h| format!(" ±{h:.1}%"));
                format!("median {}{half}", fixed(x.median, 1))
            });
            (format!("{}\n{med}", c.variant), *m)
        })
        .collect();
    // The comparisons of the members' cells that name this metric, in the
    // run's order.
    let mut related: Vec<(usize, &Comparison)> = members
        .iter()
        .flat_map(|(c, _)| by_cell.get(c.id.as_str()).into_iter().flatten())
        .filter(|(_, c)| c.new_metric == *name || c.base_metric == *name)
        .copied()
        .collect();
    related.sort_by_key(|(i, _)| *i);
    related.dedup_by_key(|(i, _)| *i);
    html! {
        h3 { (name) " — " (group) }
        @for (c, m) in members {
            @if let Some(why) = &m.skip {
                p.meta { (c.variant) ": skipped: " (why) }
            }
        }
        (strip_svg(&lanes, cis))
        @if !related.is_empty() {
            ul.verdicts {
                @for (_, c) in &related { li { (comparison_sentence(c)) } }
            }
        }
    }
}

/// The cells not as expected: mismatches, evidence and how to reproduce.
fn not_as_expected(run: &Run) -> Markup {
    let bad: Vec<&CellResult> = run.cells.iter().filter(|c| !c.as_expected).collect();
    html! {
        @if !bad.is_empty() {
            h2 { "Not as expected" }
        }
        @for c in &bad {
            h3 { (c.id) " " (outcome(c.outcome)) }
            ul {
                @for m in &c.mismatches { li { (m) } }
            }
            @for e in &c.evidence {
                @if let Some(k) = &e.crash {
                    p { strong { (k.title) } " (fingerprint " code { (k.fingerprint) } ")" }
                }
                p {
                    (e.what)
                    @if let Some(p) = &e.path { " (" (p.display()) ")" }
                }
                @if !e.excerpt.is_empty() {
                    pre { (e.excerpt) }
                }
            }
            @if !c.reproduce.xtask.is_empty() {
                p { "Reproduce: " code { (c.reproduce.xtask) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::bootstrap::never;

    /// Code spans as markdown writes them (one backtick, a longer fence
    /// around backticks, a space beside a fence's backtick) become <code>;
    /// an unclosed backtick stays text; the rest is escaped.
    #[test]
    fn markdown_code_spans_become_code_elements() {
        let md = |s: &str| esc_md(s).into_string();
        assert_eq!(md("a `b<c` d"), "a <code>b&lt;c</code> d");
        assert_eq!(md("``x `y` z``"), "<code>x `y` z</code>");
        assert_eq!(md("`` `q` ``!"), "<code>`q`</code>!");
        assert_eq!(md("it's `open & <shut>"), "it's `open &amp; &lt;shut&gt;");
        assert_eq!(md("no code"), "no code");
        assert_eq!(md(&crate::util::md_code("a `b` c")), "<code>a `b` c</code>");
        // gcc's words in a UTF-8 locale: quotes of three bytes each.
        assert_eq!(
            md("patch 6: `x.c:45:24: error: ‘__NR_seccomp’ undeclared`"),
            "patch 6: <code>x.c:45:24: error: ‘__NR_seccomp’ undeclared</code>"
        );
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(123.4, 389.0);
        assert_eq!(t.first(), Some(&150.0));
        assert_eq!(t.last(), Some(&350.0));
    }

    /// What a run names (its matrix, a cell, a reason) is text on the
    /// page, never markup.
    #[test]
    fn text_is_escaped() {
        let run = Run {
            matrix: r#"<a href="x">&m"#.into(),
            ..Run::fixture(vec![CellResult::blank(
                "6.1/<b>/x86_64/tiny",
                Outcome::Pass,
            )])
        };
        let page = html(&run, &MedianCis::new(&never));
        assert!(
            page.contains("matrix &lt;a href=&quot;x&quot;&gt;&amp;m."),
            "{page}"
        );
        assert!(
            page.contains("<td>6.1/&lt;b&gt;/x86_64/tiny</td>"),
            "{page}"
        );
        assert!(!page.contains("<a ") && !page.contains("<b>/"), "{page}");
    }

    #[test]
    fn every_sample_is_a_dot() {
        let m = Metric {
            boot_sizes: vec![2, 3],
            ..Metric::fixture("b.x", "us/op", &[1.0, 2.0, 3.0, 4.0, 5.0])
        };
        let cis = MedianCis::new(&never);
        let svg = strip_svg(&[("base".into(), &m), ("new".into(), &m)], &cis).into_string();
        assert_eq!(svg.matches("<circle").count(), 10);
        assert_eq!(svg.matches(">boot 2 (n=3)<").count(), 2);
    }

    /// Past MAX_DOTS samples in a lane, every k-th sample of each boot is
    /// drawn and the boots' labels say so; the page says why.
    #[test]
    fn a_metric_of_many_samples_is_drawn_thinned_and_says_so() {
        let n = 3 * MAX_DOTS + 7;
        let samples: Vec<f64> = (0..n).map(|i| 100.0 + (i % 97) as f64).collect();
        let m = Metric {
            boot_sizes: vec![n - 1000, 1000],
            ..Metric::fixture("b.x", "us/op", &samples)
        };
        let cis = MedianCis::new(&never);
        let svg = strip_svg(&[("base".into(), &m)], &cis).into_string();
        let dots = svg.matches("<circle").count();
        assert!(dots <= MAX_DOTS && dots > MAX_DOTS / 2, "{dots}");
        assert!(
            svg.contains(&format!(">boot 1 (n={}, 1 in 4 drawn)<", n - 1000)),
            "{svg}"
        );
        assert_eq!(thinning(MAX_DOTS), 1);
        assert_eq!(thinning(MAX_DOTS + 1), 2);
        let run = Run {
            matrix: "m".into(),
            ..Run::fixture(vec![CellResult {
                metrics: vec![m],
                ..CellResult::blank("6.1/base/x86_64/tiny", Outcome::Pass)
            }])
        };
        let page = html(&run, &cis);
        assert!(page.contains("is drawn thinned"), "{page}");
        assert!(page.len() < 400_000, "{}", page.len());
    }
}
