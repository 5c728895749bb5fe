//! Kernel console classification: panics, oopses, BUG, WARNING, lockdep,
//! hung tasks, RCU stalls, each with an excerpt and the test that was running.
//!
//! Pure: a console log in, findings out. The guest's init writes
//! `kmatrix: test <name> start` to /dev/kmsg, which is how a splat is tied
//! to the test running at the time.

use std::sync::OnceLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplatKind {
    Panic,
    Oops,
    Bug,
    Warning,
    Lockdep,
    HungTask,
    RcuStall,
    SoftLockup,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Splat {
    pub kind: SplatKind,
    /// 1-based line in the console log.
    pub line: usize,
    pub headline: String,
    pub excerpt: String,
    pub during_test: Option<String>,
    /// The faulting task is KUnit's try-catch thread: KUnit caught the
    /// fault and its case's verdict says what it means (its own
    /// `kunit_fault` suite faults on purpose; a case that faults by
    /// accident is reported failed, "try faulted").
    pub caught_by_kunit: bool,
}

fn patterns() -> &'static [(SplatKind, Regex)] {
    static P: OnceLock<Vec<(SplatKind, Regex)>> = OnceLock::new();
    P.get_or_init(|| {
        let p = |k, re: &str| (k, Regex::new(re).unwrap());
        // Order matters: the first match on a line wins, most specific first.
        vec![
            p(SplatKind::Panic, r"Kernel panic - not syncing"),
            p(SplatKind::Lockdep, r"WARNING: (possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|bad unlock balance|held lock freed)"),
            p(SplatKind::SoftLockup, r"(watchdog: )?BUG: soft lockup|hard LOCKUP"),
            p(SplatKind::Bug, r"BUG: |kernel BUG at "),
            p(SplatKind::Oops, r"Oops: |Internal error: Oops|general protection fault|Unable to handle kernel"),
            p(SplatKind::Warning, r"WARNING: CPU: \d+ PID: \d+ at |WARNING: at "),
            p(SplatKind::HungTask, r"INFO: task \S+ blocked for more than \d+ seconds"),
            p(SplatKind::RcuStall, r"rcu: INFO: \S+ (self-)?detected stall|rcu_\w+ detected stalls"),
        ]
    })
}

pub use crate::util::strip_timestamp;

const EXCERPT_LINES: usize = 40;

/// Lines after which the kernel cannot go on, although it does not panic:
/// the task that oopsed inside its own exit sleeps forever, so whatever
/// waits for it (the test, the guest's init) waits until its timeout. The
/// runner stops QEMU at such a line.
pub const BEYOND_REPAIR: &[&str] = &["Fixing recursive fault but reboot is needed!"];

/// The `BEYOND_REPAIR` text this console line carries, if any.
pub fn beyond_repair(line: &str) -> Option<&'static str> {
    BEYOND_REPAIR.iter().copied().find(|m| line.contains(m))
}

pub fn scan(log: &str) -> Vec<Splat> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out: Vec<Splat> = Vec::new();
    let mut test: Option<String> = None;
    let mut skip_until = 0;
    for (i, raw) in lines.iter().enumerate() {
        let line = strip_timestamp(raw);
        if let Some(rest) = line.strip_prefix("kmatrix: test ") {
            let mut w = rest.split_whitespace();
            match (w.next(), w.next()) {
                (Some(name), Some("start")) => test = Some(name.to_string()),
                (Some(_), Some("end")) => test = None,
                _ => {}
            }
            continue;
        }
        if i < skip_until {
            continue; // inside an excerpt already recorded
        }
        let Some(kind) = patterns()
            .iter()
            .find(|(_, re)| re.is_match(line))
            .map(|(k, _)| *k)
        else {
            continue;
        };
        let end = excerpt_end(&lines, i);
        let excerpt = lines[i..end]
            .iter()
            .map(|l| strip_timestamp(l))
            .collect::<Vec<_>>()
            .join("\n");
        out.push(Splat {
            kind,
            line: i + 1,
            headline: line.trim().to_string(),
            caught_by_kunit: excerpt.contains(" Comm: kunit_try_catch "),
            excerpt,
            during_test: test.clone(),
        });
        // A panic's own trace repeats the oops that caused it; keep the oops
        // as its own finding but do not re-report lines inside this excerpt.
        skip_until = end;
    }
    out
}

/// An excerpt runs to the end-of-trace marker, or EXCERPT_LINES lines.
fn excerpt_end(lines: &[&str], start: usize) -> usize {
    let limit = (start + EXCERPT_LINES).min(lines.len());
    for (j, l) in lines.iter().enumerate().take(limit).skip(start + 1) {
        let l = strip_timestamp(l);
        if l.contains("---[ end trace") || l.contains("---[ end Kernel panic") {
            return j + 1;
        }
        // The next independent splat starts here.
        if patterns()
            .iter()
            .any(|(k, re)| *k == SplatKind::Panic && re.is_match(l))
        {
            return j;
        }
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn kinds(log: &str) -> Vec<SplatKind> {
        scan(log).iter().map(|s| s.kind).collect()
    }

    #[test]
    fn timestamps_are_stripped() {
        assert_eq!(
            strip_timestamp("[    1.234567] Kernel panic"),
            "Kernel panic"
        );
        assert_eq!(strip_timestamp("[not a stamp] x"), "[not a stamp] x");
    }

    #[test]
    fn synthetic_lines_map_to_kinds() {
        assert_eq!(
            kinds("[ 1.0] WARNING: CPU: 1 PID: 42 at kernel/seccomp.c:100 foo+0x1/0x2\n"),
            [SplatKind::Warning]
        );
        assert_eq!(
            kinds("WARNING: possible circular locking dependency detected\n"),
            [SplatKind::Lockdep]
        );
        assert_eq!(
            kinds("INFO: task sh:12 blocked for more than 120 seconds.\n"),
            [SplatKind::HungTask]
        );
        assert_eq!(
            kinds("rcu: INFO: rcu_sched self-detected stall on CPU\n"),
            [SplatKind::RcuStall]
        );
        assert_eq!(
            kinds("watchdog: BUG: soft lockup - CPU#0 stuck for 22s!\n"),
            [SplatKind::SoftLockup]
        );
        assert_eq!(
            kinds("BUG: kernel NULL pointer dereference, address: 0000000000000000\n"),
            [SplatKind::Bug]
        );
        assert_eq!(
            kinds("Internal error: Oops: 96000004 [#1] SMP\n"),
            [SplatKind::Oops]
        );
        assert!(kinds("seccomp: all fine\nBUGS: none\n").is_empty());
    }

    #[test]
    fn splat_is_attributed_to_the_running_test() {
        let log = "[ 1.0] kmatrix: test a start\n[ 1.1] kmatrix: test a end\n[ 2.0] kmatrix: test b start\n[ 2.5] WARNING: CPU: 0 PID: 9 at x.c:1 f\n[ 2.6] ---[ end trace 0000 ]---\n";
        let s = scan(log);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].during_test.as_deref(), Some("b"));
        assert_eq!(s[0].line, 4);
        assert!(s[0].excerpt.ends_with("---[ end trace 0000 ]---"));
    }

    #[test]
    fn clean_boot_logs_have_no_findings() {
        for f in ["console-x86_64-clean.log", "console-arm64-clean.log"] {
            assert_eq!(scan(&fixture(f)), vec![], "{f}");
        }
    }

    #[test]
    fn real_sysrq_panic_is_a_panic_with_trace() {
        let s = scan(&fixture("console-x86_64-sysrq-panic.log"));
        assert!(s.iter().any(|s| s.kind == SplatKind::Panic), "{s:?}");
        let first = &s[0];
        assert!(crate::analyze::classify::is_fatal(first));
        assert!(first.excerpt.contains("sysrq"), "{}", first.excerpt);
    }
}
