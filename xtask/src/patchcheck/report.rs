//! patchcheck.md: the answer first (the first patch that breaks each
//! target, the patches that add warnings or checkpatch findings), then one
//! row a patch and one column a target, then each patch's details.

use super::{Built, Check};

fn cell(b: &Built, prev_ok: bool) -> String {
    if !b.ok() {
        let first = if b.first_error.is_empty() {
            b.outcome.clone()
        } else {
            format!("{}: `{}`", b.outcome, b.first_error.replace('|', "\\|"))
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

pub fn markdown(c: &Check) -> String {
    let mut s = format!(
        "# patchcheck: {} on {}\n\n{} patches, {} targets ({}); checkpatch fails at `{}`.\n\n",
        c.series,
        c.kernel,
        c.patches.len(),
        c.targets.len(),
        c.targets.join(", "),
        c.fail_on
    );
    // The answer.
    let mut answer: Vec<String> = Vec::new();
    for (t, target) in c.targets.iter().enumerate() {
        if c.base.get(t).is_some_and(|b| !b.ok()) {
            answer.push(format!(
                "- {target}: the base itself does not build ({})",
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
                "- {target}: first broken by patch {} \"{}\": `{}`",
                p.number, p.info.subject, p.builds[t].first_error
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
                "- patch {} \"{}\": {} new compiler warning{} on {}",
                p.number,
                p.info.subject,
                texts.len(),
                if texts.len() == 1 { "" } else { "s" },
                on.join(", ")
            ));
        }
        let cp = super::parse::counts_at(&p.checkpatch, &c.fail_on);
        if cp > 0 {
            answer.push(format!(
                "- patch {} \"{}\": {cp} checkpatch finding{} at {} or worse",
                p.number,
                p.info.subject,
                if cp == 1 { "" } else { "s" },
                c.fail_on
            ));
        }
    }
    if answer.is_empty() {
        s += "Every patch builds on every target with no new warnings and no checkpatch finding at that level.\n\n";
    } else {
        s += &answer.join("\n");
        s += "\n\n";
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
            let prev_ok = if p.number == 1 {
                c.base.get(t).is_some_and(Built::ok)
            } else {
                c.patches[p.number - 2].builds.get(t).is_some_and(Built::ok)
            };
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
        if warnings.is_empty() && p.checkpatch.is_empty() && p.kernel_doc.is_empty() {
            continue;
        }
        s += &format!("\n## Patch {}: {}\n\n", p.number, p.info.subject);
        if !warnings.is_empty() {
            s += "New compiler warnings:\n\n";
            s += &warnings.join("\n");
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
