//! patchcheck.md and patchcheck.html: the answer first (the first patch that breaks each
//! target, the patches that add warnings or checkpatch findings), then one
//! row a patch and one column a target, then each patch's details.

use maud::{html, Markup};

use super::{Check, TargetBuild};
use crate::report::html::{esc_md, page};

fn cell(b: &TargetBuild, prev_ok: bool) -> String {
    if !b.ok() {
        let first = if b.first_error.is_empty() {
            b.outcome.clone()
        } else {
            format!(
                "{}: {}",
                b.outcome,
                crate::util::md_code(&b.first_error).replace('|', "\\|")
            )
        };
        return if prev_ok {
            format!("**{first}**")
        } else {
            format!("{first} (as before)")
        };
    }
    match (b.new_warnings.len(), b.new_w1_warnings.len()) {
        (0, 0) => "ok".into(),
        (0, w1) => format!("ok, {w1} new with W=1"),
        (w, 0) => format!("**{w} new warning{}**", if w == 1 { "" } else { "s" }),
        (w, w1) => format!(
            "**{w} new warning{}**, {w1} more with W=1",
            if w == 1 { "" } else { "s" }
        ),
    }
}

/// What the series did, one line each: the first patch that breaks each
/// target, the patches that add compiler warnings or checkpatch findings
/// at the failing severity. Empty: nothing.
pub fn answer(c: &Check) -> Vec<String> {
    let mut answer: Vec<String> = Vec::new();
    for (t, target) in c.targets.iter().enumerate() {
        if c.base.get(t).is_some_and(|b| !b.ok()) {
            answer.push(format!(
                "{target}: the base itself does not build ({})",
                c.base[t].first_error
            ));
            continue;
        }
        if let Some(p) = c
            .patches
            .iter()
            .find(|p| p.builds.get(t).is_some_and(|b| !b.ok()))
        {
            answer.push(format!(
                "{target}: first broken by patch {} \"{}\": {}",
                p.number,
                p.info.subject,
                crate::util::md_code(&p.builds[t].first_error)
            ));
        }
    }
    for p in &c.patches {
        let mut texts: Vec<&String> = p.builds.iter().flat_map(|b| &b.new_warnings).collect();
        texts.sort();
        texts.dedup();
        if !texts.is_empty() {
            let on: Vec<&str> = p
                .builds
                .iter()
                .filter(|b| !b.new_warnings.is_empty())
                .map(|b| b.target.as_str())
                .collect();
            answer.push(format!(
                "patch {} \"{}\": {} new compiler warning{} on {}",
                p.number,
                p.info.subject,
                texts.len(),
                if texts.len() == 1 { "" } else { "s" },
                on.join(", ")
            ));
        }
        // One line a test: the arches it broke on, then those it warns on.
        let mut tests: Vec<&str> = p.selftests.iter().map(|t| t.test.as_str()).collect();
        tests.dedup();
        for test in tests {
            let what = p
                .selftests
                .iter()
                .find(|t| t.test == test)
                .map_or_else(|| format!("selftest {test}"), super::SelftestBuild::label);
            let of: Vec<&super::SelftestBuild> = p
                .selftests
                .iter()
                .filter(|t| t.test == test && t.is_bad())
                .collect();
            let broken: Vec<&super::SelftestBuild> =
                of.iter().copied().filter(|t| t.outcome != "pass").collect();
            if let Some(first) = broken.first() {
                let on: Vec<&str> = broken.iter().map(|t| t.arch.as_str()).collect();
                answer.push(format!(
                    "patch {} \"{}\": {what} no longer builds for {}: {}",
                    p.number,
                    p.info.subject,
                    on.join(", "),
                    crate::util::md_code(&first.first_error)
                ));
            }
            let warned: Vec<&super::SelftestBuild> = of
                .iter()
                .copied()
                .filter(|t| !t.new_warnings.is_empty())
                .collect();
            if !warned.is_empty() {
                let mut texts: Vec<&String> = warned.iter().flat_map(|t| &t.new_warnings).collect();
                texts.sort();
                texts.dedup();
                let on: Vec<&str> = warned.iter().map(|t| t.arch.as_str()).collect();
                answer.push(format!(
                    "patch {} \"{}\": {what} has {} new compiler warning{} for {}",
                    p.number,
                    p.info.subject,
                    texts.len(),
                    if texts.len() == 1 { "" } else { "s" },
                    on.join(", ")
                ));
            }
        }
        let cp = super::parse::counts_at(&p.checkpatch, &c.fail_on);
        if cp > 0 {
            answer.push(format!(
                "patch {} \"{}\": {cp} checkpatch finding{} at {} or worse",
                p.number,
                p.info.subject,
                if cp == 1 { "" } else { "s" },
                c.fail_on
            ));
        }
    }
    answer
}

/// `1 patch`, `4 patches`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn markdown(c: &Check) -> String {
    let mut s = format!(
        "# patchcheck: {} on {}\n\n{}, {} ({}); checkpatch fails at `{}`.\n\n",
        c.series,
        c.kernel,
        counted(c.patches.len(), "patch", "patches"),
        counted(c.targets.len(), "target", "targets"),
        c.targets.join(", "),
        c.fail_on
    );
    let answer = answer(c);
    if answer.is_empty() {
        s += "Every patch builds on every target with no new warnings and no checkpatch finding at that level.\n\n";
    } else {
        for a in &answer {
            s += &format!("- {a}\n");
        }
        s += "\n";
    }
    // The table.
    s += "| patch |";
    for t in &c.targets {
        s += &format!(" {t} |");
    }
    s += " checkpatch E/W/C | kernel-doc new |\n|---|";
    s += &"---|".repeat(c.targets.len() + 2);
    s += "\n| base |";
    for b in &c.base {
        s += &format!(" {} |", cell(b, true));
    }
    s += " | |\n";
    for p in &c.patches {
        s += &format!("| {} {} |", p.number, p.info.subject.replace('|', "\\|"));
        for (t, b) in p.builds.iter().enumerate() {
            let prev_ok = c.built_before(p, t);
            s += &format!(" {} |", cell(b, prev_ok));
        }
        let n = |sev: &str| p.checkpatch.iter().filter(|f| f.severity == sev).count();
        s += &format!(
            " {}/{}/{} | {} |\n",
            n("ERROR"),
            n("WARNING"),
            n("CHECK"),
            p.kernel_doc.len()
        );
    }
    // Details.
    for p in &c.patches {
        let warnings: Vec<String> = p
            .builds
            .iter()
            .flat_map(|b| {
                b.new_warnings
                    .iter()
                    .map(move |w| format!("- {}: {w}", b.target))
                    .chain(
                        b.new_w1_warnings
                            .iter()
                            .map(move |w| format!("- {} (W=1): {w}", b.target)),
                    )
            })
            .collect();
        let selftests: Vec<String> = p
            .selftests
            .iter()
            .map(|t| {
                let how = if t.outcome != "pass" {
                    format!("{} {}", t.outcome, crate::util::md_code(&t.first_error))
                } else if t.new_warnings.is_empty() {
                    "builds, no new warning".to_string()
                } else {
                    t.new_warnings.join("; ")
                };
                format!("- {} for {}: {how}", t.label(), t.arch)
            })
            .collect();
        if warnings.is_empty()
            && p.checkpatch.is_empty()
            && p.kernel_doc.is_empty()
            && selftests.is_empty()
        {
            continue;
        }
        s += &format!("\n## Patch {}: {}\n\n", p.number, p.info.subject);
        if !warnings.is_empty() {
            s += "New compiler warnings:\n\n";
            s += &warnings.join("\n");
            s += "\n\n";
        }
        if !selftests.is_empty() {
            s += "The selftests it touches, compiled as the guests get them:\n\n";
            s += &selftests.join("\n");
            s += "\n\n";
        }
        if !p.checkpatch.is_empty() {
            s += "checkpatch.pl --strict:\n\n";
            for f in &p.checkpatch {
                let at = if f.location.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", f.location)
                };
                s += &format!("- {}:{}: {}{at}\n", f.severity, f.kind, f.message);
            }
            s += "\n";
        }
        if !p.kernel_doc.is_empty() {
            s += "New kernel-doc warnings:\n\n";
            for w in &p.kernel_doc {
                s += &format!("- {w}\n");
            }
        }
    }
    s
}

/// The same, as one self-contained HTML page: the answer, the table (one
/// row a patch, one column a target; a break or new warnings marked), and
/// each patch's findings.
pub fn html(c: &Check) -> String {
    let body = html! {
        h1 { "patchcheck: " (c.series) " on " (c.kernel) }
        p.meta {
            (counted(c.patches.len(), "patch", "patches")) ", "
            (counted(c.targets.len(), "target", "targets"))
            " (" (c.targets.join(", ")) "); checkpatch fails at " code { (c.fail_on) } "."
        }
        (html_answer(c))
        (html_table(c))
        @for p in &c.patches {
            (html_findings(p))
        }
    };
    page(&format!("kmatrix patchcheck {}", c.series), body)
}

/// The answer as a list, its code spans as `<code>`.
fn html_answer(c: &Check) -> Markup {
    let answer = answer(c);
    html! {
        @if answer.is_empty() {
            p { "Every patch builds on every target with no new warnings and no checkpatch finding at that level." }
        } @else {
            ul.verdicts {
                @for a in &answer { li { (esc_md(a)) } }
            }
        }
    }
}

/// The table: the base's row, then one a patch.
fn html_table(c: &Check) -> Markup {
    html! {
        table {
            tr {
                th { "patch" }
                @for t in &c.targets { th { (t) } }
                th { "checkpatch E/W/C" } th { "kernel-doc new" }
            }
            tr {
                td { "base" }
                @for b in &c.base { (html_cell(b, true)) }
                td {} td {}
            }
            @for p in &c.patches {
                // Marked when bad; else no class attribute at all.
                tr class=[c.patch_is_bad(p).then_some("bad")] {
                    td { (p.number) " " (p.info.subject) }
                    @for (t, b) in p.builds.iter().enumerate() {
                        (html_cell(b, c.built_before(p, t)))
                    }
                    @let n = |sev: &str| p.checkpatch.iter().filter(|f| f.severity == sev).count();
                    td.num { (n("ERROR")) "/" (n("WARNING")) "/" (n("CHECK")) }
                    td.num { (p.kernel_doc.len()) }
                }
            }
        }
    }
}

/// A patch's findings: new compiler warnings, checkpatch's and
/// kernel-doc's; nothing without one.
fn html_findings(p: &super::PatchCheck) -> Markup {
    let mut items: Vec<String> = Vec::new();
    for b in &p.builds {
        items.extend(b.new_warnings.iter().map(|w| format!("{}: {w}", b.target)));
        items.extend(
            b.new_w1_warnings
                .iter()
                .map(|w| format!("{} (W=1): {w}", b.target)),
        );
    }
    items.extend(p.checkpatch.iter().map(|f| {
        let at = if f.location.is_empty() {
            String::new()
        } else {
            format!(" ({})", f.location)
        };
        format!("checkpatch {}:{}: {}{at}", f.severity, f.kind, f.message)
    }));
    items.extend(p.kernel_doc.iter().map(|w| format!("kernel-doc: {w}")));
    html! {
        @if !items.is_empty() {
            h3 { "Patch " (p.number) ": " (p.info.subject) }
            ul.cases {
                @for i in &items { li { (i) } }
            }
        }
    }
}

/// A table cell of a build: its outcome (a break that is new, in the
/// outcome's colour) or its new warnings.
fn html_cell(b: &TargetBuild, prev_ok: bool) -> Markup {
    if !b.ok() {
        // A break the step before had too is grey.
        let tone = if prev_ok { b.outcome.as_str() } else { "skip" };
        return html! {
            td {
                span.o.{ "o-" (tone) } { (b.outcome) }
                @if !b.first_error.is_empty() { " " (b.first_error) }
                @if !prev_ok { " (as before)" }
            }
        };
    }
    let (w, w1) = (b.new_warnings.len(), b.new_w1_warnings.len());
    html! {
        td {
            @if w == 0 {
                span.o.o-pass { "ok" }
                @if w1 > 0 { " " (w1) " new with W=1" }
            } @else {
                span.o.o-fail { (w) " new warning" @if w > 1 { "s" } }
                @if w1 > 0 { " " (w1) " more with W=1" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// patchcheck.json of a real run on the planted series (6.1, three
    /// targets, four patches).
    fn planted() -> Check {
        serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/fixtures/patchcheck/planted-6.1.json"
            ))
            .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn the_answer_names_each_fault_once_with_its_patch() {
        let c = planted();
        assert_eq!(
            answer(&c),
            [
                "i386/tiny: first broken by patch 3 \"seccomp: a change that only 32-bit x86 does not build\": ``kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'``",
                "patch 1 \"seccomp: count the wake-ups of a user notification\": 1 new compiler warning on x86_64/tiny, arm64/tiny, i386/tiny",
                "patch 2 \"seccomp: add a helper that says whether a notification is planted\": 1 checkpatch finding at error or worse",
                "patch 4 \"selftests/seccomp: count the tries of the strict mode test\": selftest seccomp_bpf has 1 new compiler warning for x86_64, arm64",
            ]
        );
        assert_eq!(c.code(), 1);
        // The HTML page's answer: code spans as <code>, no backticks.
        let page = html(&c);
        assert!(
            page.contains("first broken by patch 3 &quot;seccomp: a change that only 32-bit x86 does not build&quot;: <code>kernel/seccomp.o: in function `seccomp_do_user_notification': undefined reference to `__udivdi3'</code>"),
            "{page}"
        );
    }

    /// A selftest that stops compiling on one arch is named with its
    /// error; one that did not compile before either is not news.
    #[test]
    fn a_selftest_that_stops_building_is_named_with_its_arch() {
        let mut c = planted();
        let t = &mut c.patches[3].selftests[1];
        t.outcome = "build-error".into();
        t.new_warnings.clear();
        t.first_error = "seccomp_bpf.c:1:1: error: x".into();
        let a = answer(&c);
        assert!(a.contains(&"patch 4 \"selftests/seccomp: count the tries of the strict mode test\": selftest seccomp_bpf no longer builds for arm64: `seccomp_bpf.c:1:1: error: x`".to_string()), "{a:?}");
        assert!(a.contains(&"patch 4 \"selftests/seccomp: count the tries of the strict mode test\": selftest seccomp_bpf has 1 new compiler warning for x86_64".to_string()), "{a:?}");
        c.patches[3].selftests[1].built_before = false;
        c.patches[3].selftests[0].new_warnings.clear();
        assert!(!answer(&c).iter().any(|l| l.starts_with("patch 4")));
    }
}
