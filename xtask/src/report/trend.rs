//! The history as one self-contained HTML page (`history show --html`):
//! what the last run brought, then a trend per metric (each run's median
//! with its 95% CI, change points marked, the level of each segment
//! drawn), the cases that are not plainly passing, the crashes. In the
//! run report's page and style (`html::page`): inline SVG, no script,
//! nothing fetched. The same trends close a run's own report.html
//! (`across_runs`). Pure: a `History` in, a string out.

use maud::{html, Markup};

use super::{pct, sig3};
use crate::history::trend::{History, MetricTrend};

const W: f64 = 760.0;
const H: f64 = 150.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 24.0;

/// The page.
pub fn html(h: &History) -> String {
    let title = match (h.runs.first(), h.runs.last()) {
        (Some(a), Some(b)) => format!(
            "kmatrix history: {} runs, {} to {}",
            h.runs.len(),
            a.started,
            b.started
        ),
        _ => "kmatrix history: no run".to_string(),
    };
    let body = html! {
        h1 { (title) }
        h2 { "Since the last run" }
        @if h.since_last.is_empty() {
            p { "Nothing new: no regression, new failure or new crash in the last run." }
        } @else {
            ul { @for l in &h.since_last { li { (l) } } }
        }
        h2 { "Metrics" }
        p {
            (h.metrics.iter().filter(|m| !m.changes.is_empty()).count())
            " of " (h.metrics.len())
            " metrics changed level. Each dot is a run's median with its 95% CI; a dashed line is a change point, a grey line the level of each segment."
        }
        // Those that changed level first.
        @for m in h.metrics.iter().filter(|m| !m.changes.is_empty()) { (metric(m, h.runs.len())) }
        @for m in h.metrics.iter().filter(|m| m.changes.is_empty()) { (metric(m, h.runs.len())) }
        h2 { "Cases" }
        @if h.cases.is_empty() {
            p { "Every case passed (or skipped) in every run." }
        } @else {
            table {
                tr { th { "state" } th { "cell" } th { "test" } th { "since run" } th { "outcomes" } th { "last" } }
                @for c in &h.cases {
                    tr {
                        td { (c.state.as_str()) }
                        td { (c.cell) }
                        td { (c.test) @if let Some(k) = &c.case { "/" (k) } }
                        td { (c.since) }
                        td { code { (c.outcomes) } }
                        td { (c.last) }
                    }
                }
            }
        }
        @if !h.crashes.is_empty() {
            h2 { "Crashes" }
            table {
                tr { th { "title" } th { "cells" } th { "first run" } th { "last run" } th { "runs" } }
                @for c in &h.crashes {
                    tr { td { (c.title) } td { (c.cells.join(", ")) } td { (c.first) } td { (c.last) } td { (c.runs) } }
                }
            }
        }
    };
    super::html::page(&title, body)
}

/// "Across runs", for a run's report.html: what the run brought against
/// the runs before it, then its cells' metrics over the history (those
/// that changed level shown, the others folded).
pub fn across_runs(h: &History) -> Markup {
    let (changed, flat): (Vec<&MetricTrend>, Vec<&MetricTrend>) =
        h.metrics.iter().partition(|m| !m.changes.is_empty());
    html! {
        h2 { "Across runs" }
        p {
            "This run and the " (h.runs.len() - 1) " before it in its history"
            @if let Some(r) = h.runs.first() { " (since " (r.started) ")" }
            ". "
            @if h.since_last.is_empty() {
                "Against the runs before it: no regression, new failure or new crash."
            } @else {
                "Against the runs before it:"
            }
        }
        @if !h.since_last.is_empty() {
            ul { @for l in &h.since_last { li { (l) } } }
        }
        p {
            (changed.len()) " of " (h.metrics.len())
            " metrics changed level. Each dot is a run's median with its 95% CI; a dashed line is a change point."
        }
        @for m in &changed { (metric(m, h.runs.len())) }
        @if !flat.is_empty() {
            details {
                summary { (flat.len()) " metrics without a change point" }
                @for m in &flat { (metric(m, h.runs.len())) }
            }
        }
    }
}

/// One metric's trend: a heading with its change points, and the plot.
fn metric(m: &MetricTrend, runs: usize) -> Markup {
    let lo = m
        .points
        .iter()
        .map(|p| p.ci.map_or(p.median, |c| c.0.min(p.median)))
        .fold(f64::INFINITY, f64::min);
    let hi = m
        .points
        .iter()
        .map(|p| p.ci.map_or(p.median, |c| c.1.max(p.median)))
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let n = runs.max(2) as f64;
    let x = |run: usize| LEFT + (W - LEFT - RIGHT) * (run as f64 - 1.0) / (n - 1.0);
    let y = |v: f64| TOP + (H - TOP - BOTTOM) * (1.0 - (v - lo) / (hi - lo));
    // The level of each segment between change points.
    let mut bounds: Vec<usize> = vec![m.points.first().map_or(1, |p| p.run)];
    bounds.extend(m.changes.iter().map(|c| c.run));
    bounds.push(m.points.last().map_or(1, |p| p.run) + 1);
    let levels: Vec<(usize, usize, f64)> = bounds
        .windows(2)
        .filter_map(|w| {
            let v: Vec<f64> = m
                .points
                .iter()
                .filter(|p| p.run >= w[0] && p.run < w[1])
                .map(|p| p.median)
                .collect();
            (!v.is_empty()).then(|| (w[0], w[1] - 1, crate::stats::location::median(&v)))
        })
        .collect();
    html! {
        h3 {
            (m.cell) " " code { (m.metric) } " (" (m.unit) ")"
            @for c in &m.changes {
                " · run " (c.run) ": " (pct(c.pct, 1))
                @if let Some((a, b)) = c.ci { " [" (pct(a, 1)) ", " (pct(b, 1)) "]" }
                " p=" (format!("{:.3}", c.p))
            }
        }
        svg xmlns="http://www.w3.org/2000/svg" width=(W) height=(H) viewBox={ "0 0 " (W) " " (H) } {
            line.t-ax x1=(LEFT) y1=(H - BOTTOM) x2=(W - RIGHT) y2=(H - BOTTOM) {}
            line.t-ax x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(H - BOTTOM) {}
            text.t-lab x="2" y=(y(hi) + 10.0) { (sig3(hi)) }
            text.t-lab x="2" y=(y(lo)) { (sig3(lo)) }
            text.t-lab x=(LEFT) y=(H - 6.0) { "run 1" }
            text.t-lab x=(W - RIGHT - 50.0) y=(H - 6.0) { "run " (runs) }
            @for (a, b, v) in &levels {
                line.t-lvl x1=(x(*a)) y1=(y(*v)) x2=(x(*b)) y2=(y(*v)) {}
            }
            @for c in &m.changes {
                line.t-cp x1=(x(c.run) - 0.5 * (W - LEFT - RIGHT) / (n - 1.0)) y1=(TOP)
                    x2=(x(c.run) - 0.5 * (W - LEFT - RIGHT) / (n - 1.0)) y2=(H - BOTTOM) {}
                text.t-cp-label x=(x(c.run) + 2.0) y=(TOP + 10.0) { "run " (c.run) " " (pct(c.pct, 1)) }
            }
            @for p in &m.points {
                @if let Some((a, b)) = p.ci {
                    line.t-ci x1=(x(p.run)) y1=(y(a)) x2=(x(p.run)) y2=(y(b)) {}
                }
                circle.t-pt cx=(x(p.run)) cy=(y(p.median)) r="2.5" {
                    title { "run " (p.run) ": " (sig3(p.median)) " " (m.unit) }
                }
            }
        }
    }
}
