//! A series as one mbox: what `b4 am` writes (`.mbx`), `git format-patch
//! --stdout`, or a thread saved from lore (`t.mbox`). The patches are the
//! messages numbered `[PATCH vN M/N]`, in the order of M; the cover letter
//! (0/N), replies (`Re:`) and messages without a diff are left out. Every
//! number from 1 to N must be there exactly once, and one version only.

use anyhow::{bail, Result};
use mailparse::MailHeaderMap;
use regex::Regex;

/// One patch of the series: its place and the message, ready for `git am`.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    pub number: usize,
    pub subject: String,
    pub text: String,
}

/// A message without its mbox `From ` line.
fn without_from_line(msg: &str) -> &str {
    match msg.strip_prefix("From ") {
        Some(rest) => rest.split_once('\n').map_or("", |(_, m)| m),
        None => msg,
    }
}

/// A header of a message, after its mbox `From ` line if it has one:
/// folded lines joined, RFC 2047 words (`=?UTF-8?q?J=C3=B6rg?=`) decoded;
/// None when absent.
pub fn header(msg: &str, name: &str) -> Option<String> {
    let (headers, _) = mailparse::parse_headers(without_from_line(msg).as_bytes()).ok()?;
    headers
        .get_first_value(name)
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The messages of an mbox, each starting with its `From ` line (mboxrd's
/// `>From ` quoting undone).
pub fn messages(text: &str) -> Vec<String> {
    // The separator: `From <sender> <asctime date>`, e.g. git's
    // `From 0123abcd Mon Sep 17 00:00:00 2001` or b4's `From git@z Thu Jan  1
    // 00:00:00 1970`; a line in a commit message that merely starts with
    // "From " has no such date.
    let sep =
        Regex::new(r"^From \S+ +[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}\s*$")
            .unwrap();
    let quoted = Regex::new(r"^>(>*From )").unwrap();
    let mut out: Vec<String> = Vec::new();
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if sep.is_match(bare) {
            out.push(String::new());
        }
        if let Some(cur) = out.last_mut() {
            cur.push_str(&quoted.replace(line, "$1"));
        }
    }
    out
}

/// `[PATCH v2 3/7]` of a subject: (version, M, N); a bare `[PATCH]` is
/// (1, 1, 1). None for a subject that is not a patch's, or a reply's.
pub fn numbering(subject: &str) -> Option<(u32, usize, usize)> {
    let s = subject.trim_start();
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("re:") || lower.starts_with("aw:") || lower.starts_with("fwd:") {
        return None;
    }
    let tag = Regex::new(r"^\[([^\]]*)\]").unwrap();
    let inner = tag.captures(s)?.get(1)?.as_str().to_string();
    if !inner
        .to_ascii_uppercase()
        .split_whitespace()
        .any(|w| w == "PATCH")
    {
        return None;
    }
    let mut version = 1;
    let mut counter = None;
    for w in inner.split_whitespace() {
        if let Some(v) = w.strip_prefix(['v', 'V']).and_then(|v| v.parse().ok()) {
            version = v;
        } else if let Some((m, n)) = w.split_once('/') {
            if let (Ok(m), Ok(n)) = (m.parse(), n.parse()) {
                counter = Some((m, n));
            }
        }
    }
    let (m, n) = counter.unwrap_or((1, 1));
    Some((version, m, n))
}

/// Whether a message carries a diff: in its body or an attachment, as its
/// mailer encoded it (quoted-printable, base64) or plain.
fn has_diff(msg: &str) -> bool {
    fn diff_in(text: &str) -> bool {
        text.lines()
            .any(|l| l.starts_with("diff --git ") || l.starts_with("+++ "))
    }
    fn part_has(p: &mailparse::ParsedMail) -> bool {
        p.get_body().is_ok_and(|b| diff_in(&b)) || p.subparts.iter().any(part_has)
    }
    diff_in(msg)
        || mailparse::parse_mail(without_from_line(msg).as_bytes()).is_ok_and(|m| part_has(&m))
}

/// The patches of the mbox `shown` (for messages), in order.
pub fn patches(shown: &str, text: &str) -> Result<Vec<Patch>> {
    let mut found: Vec<(u32, usize, usize, Patch)> = Vec::new();
    for msg in messages(text) {
        let subject = header(&msg, "Subject").unwrap_or_default();
        let Some((v, m, n)) = numbering(&subject) else {
            continue;
        };
        if m == 0 || !has_diff(&msg) {
            continue; // the cover letter, or a patch-less note
        }
        found.push((
            v,
            m,
            n,
            Patch {
                number: m,
                subject,
                text: msg,
            },
        ));
    }
    if found.is_empty() {
        bail!("{shown}: no patch in this mbox (no message with a [PATCH] subject and a diff)");
    }
    let mut versions: Vec<u32> = found.iter().map(|f| f.0).collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.len() > 1 {
        let vs: Vec<String> = versions.iter().map(|v| format!("v{v}")).collect();
        bail!(
            "{shown}: holds {} of the series; keep one (e.g. `b4 am -v {}`)",
            vs.join(" and "),
            versions.last().unwrap()
        );
    }
    let mut totals: Vec<usize> = found.iter().map(|f| f.2).collect();
    totals.sort_unstable();
    totals.dedup();
    if totals.len() > 1 {
        bail!(
            "{shown}: the patches disagree on the series' length ({})",
            totals
                .iter()
                .map(|t| format!("of {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let total = totals[0];
    if total > MAX_PATCHES {
        bail!(
            "{shown}: {:?} numbers a series of {total} patches; expected at most {MAX_PATCHES}",
            found[0].3.subject
        );
    }
    found.sort_by_key(|f| f.1);
    let numbers: Vec<usize> = found.iter().map(|f| f.1).collect();
    if let Some(w) = numbers.windows(2).find(|w| w[0] == w[1]) {
        bail!("{shown}: patch {}/{total} appears twice", w[0]);
    }
    let missing: Vec<usize> = (1..=total)
        .filter(|k| numbers.binary_search(k).is_err())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{shown}: patch {} missing (the mbox has {} of {total})",
            listed(&missing, total),
            numbers
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(k) = numbers.iter().find(|k| **k > total) {
        bail!("{shown}: patch {k}/{total} is numbered past the series' end");
    }
    Ok(found.into_iter().map(|f| f.3).collect())
}

/// The longest series read: the counter's width in a file name
/// (`0003-...`) and a bound on what a subject line can ask for.
pub const MAX_PATCHES: usize = 9999;

/// "3/7 is" or "2/7, 3/7 are", the first ten of a long list named and the
/// rest counted.
fn listed(missing: &[usize], total: usize) -> String {
    let named: Vec<String> = missing
        .iter()
        .take(10)
        .map(|k| format!("{k}/{total}"))
        .collect();
    let more = match missing.len().saturating_sub(named.len()) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let verb = if missing.len() == 1 { "is" } else { "are" };
    format!("{}{more} {verb}", named.join(", "))
}

/// A file name for patch `p`: `0003-the-subject.patch`, like format-patch.
pub fn file_name(p: &Patch) -> String {
    let bare = Regex::new(r"^\s*\[[^\]]*\]\s*")
        .unwrap()
        .replace(&p.subject, "")
        .to_string();
    let mut slug = String::new();
    for c in bare.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches(['-', '.']).chars().take(52).collect();
    format!("{:04}-{}.patch", p.number, slug.trim_end_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_reads_version_and_counter() {
        assert_eq!(numbering("[PATCH v2 3/7] seccomp: x"), Some((2, 3, 7)));
        assert_eq!(numbering("[PATCH] one"), Some((1, 1, 1)));
        assert_eq!(
            numbering("[RFC PATCH net-next v3 0/2] cover"),
            Some((3, 0, 2))
        );
        assert_eq!(numbering("Re: [PATCH v2 3/7] seccomp: x"), None);
        assert_eq!(numbering("[GIT PULL] x"), None);
        assert_eq!(numbering("plain"), None);
    }

    fn msg(subject: &str, diff: bool) -> String {
        format!(
            "From git@z Thu Jan  1 00:00:00 1970\nSubject: {subject}\n\nbody\n{}",
            if diff {
                "---\ndiff --git a/f b/f\n+++ b/f\n"
            } else {
                ""
            }
        )
    }

    #[test]
    fn patches_come_in_order_without_cover_replies_or_notes() {
        let t = [
            msg("[PATCH v2 2/2] b", true),
            msg("[PATCH v2 0/2] cover", false),
            msg("Re: [PATCH v2 1/2] a", true),
            msg("[PATCH v2 1/2] a", true),
        ]
        .concat();
        let p = patches("s.mbx", &t).unwrap();
        assert_eq!(p.iter().map(|p| p.number).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(file_name(&p[0]), "0001-a.patch");
    }

    #[test]
    fn a_gap_a_repeat_two_versions_or_nothing_is_refused_by_name() {
        let cases = [
            (
                vec![msg("[PATCH 1/3] a", true), msg("[PATCH 3/3] c", true)],
                "s.mbx: patch 2/3 is missing (the mbox has 1, 3 of 3)",
            ),
            (
                vec![
                    msg("[PATCH 1/2] a", true),
                    msg("[PATCH 1/2] a", true),
                    msg("[PATCH 2/2] b", true),
                ],
                "s.mbx: patch 1/2 appears twice",
            ),
            (
                vec![msg("[PATCH 1/1] a", true), msg("[PATCH v2 1/1] a", true)],
                "s.mbx: holds v1 and v2 of the series; keep one (e.g. `b4 am -v 2`)",
            ),
            (
                vec![msg("[PATCH 1/2] a", true), msg("[PATCH 2/3] b", true)],
                "s.mbx: the patches disagree on the series' length (of 2, of 3)",
            ),
            (vec![msg("hello", false)], "s.mbx: no patch in this mbox"),
            // A subject asks for no memory: the count is bounded, the
            // missing ones are counted past the first ten.
            (
                vec![msg("[PATCH 1/1000000000] a", true)],
                "s.mbx: \"[PATCH 1/1000000000] a\" numbers a series of 1000000000 patches; expected at most 9999",
            ),
            (
                vec![msg("[PATCH 1/30] a", true)],
                "s.mbx: patch 2/30, 3/30, 4/30, 5/30, 6/30, 7/30, 8/30, 9/30, 10/30, 11/30 and 19 more are missing (the mbox has 1 of 30)",
            ),
        ];
        for (msgs, says) in cases {
            let e = patches("s.mbx", &msgs.concat()).unwrap_err().to_string();
            assert!(e.starts_with(says), "{e}");
        }
    }

    #[test]
    fn a_commit_message_line_starting_with_from_is_not_a_separator() {
        let t = "From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH 1/1] a\n\nFrom here on.\n>From quoted\n\
                 diff --git a/x b/x\n";
        let m = messages(t);
        assert_eq!(m.len(), 1);
        assert!(m[0].contains("\nFrom here on.\nFrom quoted\n"), "{}", m[0]);
    }

    #[test]
    fn encoded_subjects_names_and_bodies_are_read() {
        let qp = "From git@z Thu Jan  1 00:00:00 1970\n\
                  From: =?UTF-8?q?J=C3=B6rg=20R=C3=B6del?= <j@example.org>\n\
                  Subject: =?UTF-8?q?=5BPATCH=201/1=5D=20seccomp:=20fix=20?=\n\
                  \t=?UTF-8?q?=C3=BCber?=\n\
                  MIME-Version: 1.0\n\
                  Content-Type: text/plain; charset=UTF-8\n\
                  Content-Transfer-Encoding: base64\n\n";
        let body = "body\n---\ndiff --git a/f b/f\n+++ b/f\n";
        let b64 = "Ym9keQotLS0KZGlmZiAtLWdpdCBhL2YgYi9mCisrKyBiL2YK\n";
        assert_eq!(
            header(qp, "From").as_deref(),
            Some("Jörg Rödel <j@example.org>")
        );
        assert_eq!(
            header(qp, "subject").as_deref(),
            Some("[PATCH 1/1] seccomp: fix über")
        );
        // The diff is only there once base64 is decoded.
        assert!(!b64.contains("diff"));
        let p = patches("s.mbx", &format!("{qp}{b64}")).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].subject, "[PATCH 1/1] seccomp: fix über");
        assert!(has_diff(&format!("{qp}{body}")));
        assert!(!has_diff(&format!("{qp}Ym9keQo=\n")));
    }
}
