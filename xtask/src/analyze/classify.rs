//! What a boot means: QEMU's exit, the kernel console and the results
//! channel in; tests (with cases), metrics, evidence and the boot's outcome
//! out. And `merge_boot`, which folds repeat boots of one cell into one
//! result. Pure: the runner reads the files and passes text.
//!
//! The outcome, worst first:
//! - `infra-error`: QEMU itself failed (killed by a signal we did not send,
//!   or exited non-zero, which a guest cannot make it do: our guests end by
//!   `reboot -f`/`panic=-1` with `-no-reboot`, exit 0). Never `crash`.
//! - `crash`: the guest kernel died: a fatal splat (panic, oops, `kernel
//!   BUG at`, a fatal `BUG:` such as a NULL dereference) and the guest did
//!   not finish, or it never reported / stopped before DONE on its own.
//! - `timeout`: the cell budget ran out (QEMU killed by us).
//! - `fail`: the guest finished, but a test failed or the kernel printed a
//!   splat it survived (WARNING, non-fatal `BUG:` reports, lockdep, ...):
//!   the test that ran at the time fails with the splat as its reason.
//! - `pass`.

use std::path::Path;

use crate::analyze::console::{self, Splat};
use crate::analyze::guestlog;
use crate::kinds::{self, MetricDecls};
use crate::plan::matrix::TestKind;
use crate::schema::*;

/// How QEMU ended (boot::qemu::Exit without the process handles).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QemuEnd {
    pub status: Option<i32>,
    pub signal: Option<i32>,
    /// Killed by the harness at the cell budget.
    pub timed_out: bool,
    pub elapsed_s: f64,
    pub console_truncated: bool,
    pub console_cap: u64,
    pub stderr: String,
}

impl QemuEnd {
    /// QEMU's own failure: a signal the harness did not send, or a non-zero
    /// exit. Both mean QEMU, not the guest, went wrong.
    pub fn qemu_failed(&self) -> Option<String> {
        if self.timed_out {
            return None;
        }
        let how = match (self.signal, self.status) {
            (Some(s), _) => format!("QEMU was killed by signal {s} ({})", signal_name(s)),
            (None, Some(c)) if c != 0 => format!("QEMU exited with status {c}"),
            _ => return None,
        };
        Some(how)
    }
}

/// One boot's inputs.
pub struct BootInput<'a> {
    /// The tests the guest was given, in order, with their kinds.
    pub tests: &'a [(String, TestKind)],
    pub decls: &'a dyn MetricDecls,
    pub exit: &'a QemuEnd,
    pub console: &'a str,
    pub results: &'a str,
    /// Where the console log lives (for evidence paths only).
    pub console_log: &'a Path,
}

/// One boot's meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    pub outcome: Outcome,
    pub tests: Vec<TestResult>,
    pub metrics: Vec<Metric>,
    pub evidence: Vec<Evidence>,
    pub guest_s: f64,
    /// The guest wrote its first report (BEGIN) on the results channel.
    pub guest_reported: bool,
    /// QEMU's own failure, when there was one (see `QemuEnd::qemu_failed`).
    pub qemu_failure: Option<String>,
}

/// `BUG:` reports after which the kernel goes on (the task or the kernel
/// survives): they fail the test that ran, they are not a crash by
/// themselves. Every other `BUG:` (NULL dereference, paging request, ...)
/// comes with an oops and is fatal.
const SURVIVABLE_BUGS: &[&str] = &[
    "BUG: sleeping function called from invalid context",
    "BUG: scheduling while atomic",
    "BUG: KASAN:",
    "BUG: KFENCE:",
    "BUG: KCSAN:",
    "BUG: workqueue lockup",
    "BUG: Bad page state",
    "BUG: Bad page map",
    "BUG: Bad rss-counter state",
    "BUG: using smp_processor_id() in preemptible",
    "BUG: spinlock",
    "BUG: rwlock",
    "BUG: non-zero pgtables_bytes",
    "BUG: MAX_LOCKDEP",
    "BUG: key",
];

/// Is this splat one the kernel does not survive?
pub fn is_fatal(s: &Splat) -> bool {
    use console::SplatKind::*;
    match s.kind {
        Panic | Oops => true,
        Bug => !SURVIVABLE_BUGS.iter().any(|b| s.headline.contains(b)),
        Warning | Lockdep | HungTask | RcuStall | SoftLockup => false,
    }
}

fn ev(kind: EvidenceKind, what: String, excerpt: String, path: Option<&Path>) -> Evidence {
    Evidence {
        kind,
        what,
        excerpt,
        path: path.map(Path::to_path_buf),
    }
}

pub fn classify(b: &BootInput) -> Classified {
    let session = guestlog::parse(b.results);
    let splats = console::scan(b.console);
    let mut evidence = Vec::new();
    let mut guest_s = 0.0;
    if let (Some(start), Some(end)) = (
        session.begin_uptime,
        session
            .done_uptime
            .or_else(|| session.tests.last().and_then(|t| t.end_uptime)),
    ) {
        guest_s = end - start;
    }
    let fatal: Option<&Splat> = splats.iter().find(|s| is_fatal(s));
    let qemu_failure = b.exit.qemu_failed();
    // The guest finished on its own: it survived whatever it printed.
    let died = fatal.is_some() && !session.done;
    for s in &splats {
        let during = s
            .during_test
            .as_deref()
            .map_or("during boot or between tests".to_string(), |t| {
                format!("while test {t} ran")
            });
        let fate = if is_fatal(s) && !session.done {
            "fatal"
        } else {
            "the kernel went on"
        };
        evidence.push(ev(
            EvidenceKind::Splat,
            format!(
                "{:?} at console line {} {during} ({fate}): {}",
                s.kind, s.line, s.headline
            ),
            s.excerpt.clone(),
            Some(b.console_log),
        ));
    }
    if b.exit.console_truncated {
        evidence.push(ev(
            EvidenceKind::Guest,
            format!(
                "console log truncated at {} bytes (guest flooded the console)",
                b.exit.console_cap
            ),
            String::new(),
            Some(b.console_log),
        ));
    }

    // Tests, in the order the guest ran them.
    let mut tests = Vec::new();
    let mut metrics: Vec<Metric> = Vec::new();
    let mut reached_end = true;
    for (tname, kind) in b.tests {
        let Some(block) = session.tests.iter().find(|x| &x.name == tname) else {
            let why = if !reached_end || !session.done {
                "not reached: the guest stopped before this test"
            } else {
                "missing from the results channel"
            };
            tests.push(TestResult {
                name: tname.clone(),
                outcome: Outcome::Skip,
                reason: Some(why.into()),
                duration_s: None,
                cases: vec![],
                failed_by_cases: false,
            });
            continue;
        };
        let got = kinds::of(*kind).interpret(tname, &block.output, b.decls);
        let mut t = TestResult {
            name: tname.clone(),
            outcome: Outcome::Pass,
            reason: None,
            duration_s: block.duration(),
            cases: got.cases,
            failed_by_cases: false,
        };
        for m in got.metrics {
            match metrics.iter_mut().find(|x| x.name == m.name) {
                Some(x) => x.samples.extend(m.samples),
                None => metrics.push(m),
            }
        }
        if let Some(why) = got.incomplete {
            t.outcome = Outcome::Fail;
            t.reason = Some(why);
        } else if t.cases.iter().any(|c| c.outcome == Outcome::Fail) {
            t.outcome = Outcome::Fail;
            let n = t
                .cases
                .iter()
                .filter(|c| c.outcome == Outcome::Fail)
                .count();
            t.reason = Some(format!("{n} of {} cases failed", t.cases.len()));
            t.failed_by_cases = true;
        }
        if !got.errors.is_empty() {
            t.outcome = Outcome::Fail;
            t.reason = Some(got.errors.join(" | "));
            t.failed_by_cases = false;
        }
        match block.rc {
            None => {
                reached_end = false;
                t.outcome = if qemu_failure.is_some() {
                    Outcome::InfraError
                } else if died {
                    Outcome::Crash
                } else if b.exit.timed_out {
                    Outcome::Timeout
                } else {
                    Outcome::Fail
                };
                t.reason = Some(format!(
                    "the guest stopped while this test ran; its output so far: {} bytes",
                    block.output.len()
                ));
                t.failed_by_cases = false;
            }
            Some(_) if block.timed_out() => {
                t.outcome = Outcome::Timeout;
                t.reason = Some(format!(
                    "killed after its {} s timeout; output so far: {}",
                    block.timeout_s.unwrap_or(0.0),
                    console::tail(&block.output, 5)
                ));
                t.failed_by_cases = false;
            }
            Some(rc) if rc > 128 => {
                t.outcome = Outcome::Fail;
                t.reason = Some(format!(
                    "killed by signal {} ({}); last output: {}",
                    rc - 128,
                    signal_name(rc - 128),
                    console::tail(&block.output, 5)
                ));
                t.failed_by_cases = false;
            }
            Some(rc) if rc != 0 && t.outcome == Outcome::Pass => {
                t.outcome = Outcome::Fail;
                t.reason = Some(format!("exit status {rc}"));
            }
            _ => {}
        }
        // A splat the kernel survived fails the test that was running.
        if t.outcome == Outcome::Pass {
            if let Some(s) = splats
                .iter()
                .find(|s| s.during_test.as_deref() == Some(tname.as_str()))
            {
                t.outcome = Outcome::Fail;
                t.reason = Some(format!(
                    "kernel {:?} while it ran (console line {}): {}",
                    s.kind, s.line, s.headline
                ));
            }
        }
        tests.push(t);
    }

    let outcome = if let Some(how) = &qemu_failure {
        let when = if session.began {
            "after the guest began reporting"
        } else {
            "before the guest's first report"
        };
        evidence.push(ev(
            EvidenceKind::Qemu,
            format!("{how} {when} (QEMU's own failure, not the guest's)"),
            format!(
                "{}\n--- console tail ---\n{}",
                b.exit.stderr.trim(),
                console::tail(b.console, 15)
            ),
            Some(b.console_log),
        ));
        Outcome::InfraError
    } else if died {
        Outcome::Crash
    } else if b.exit.timed_out {
        let running = session
            .tests
            .iter()
            .find(|x| x.rc.is_none())
            .map(|x| x.name.clone());
        let what = format!(
            "QEMU killed after the {:.0} s cell budget{}",
            b.exit.elapsed_s,
            running.map_or(String::new(), |t| format!(" while test {t} ran"))
        );
        evidence.push(ev(
            EvidenceKind::Guest,
            what,
            console::tail(b.console, 25),
            Some(b.console_log),
        ));
        Outcome::Timeout
    } else if !session.began {
        evidence.push(ev(EvidenceKind::Guest, "the guest never reported (QEMU exited by itself: the kernel or init stopped the guest)".into(), console::tail(b.console, 25), Some(b.console_log)));
        Outcome::Crash
    } else if !session.done {
        evidence.push(ev(
            EvidenceKind::Guest,
            "the guest ended before its init reported DONE".into(),
            console::tail(b.console, 25),
            Some(b.console_log),
        ));
        Outcome::Crash
    } else if !splats.is_empty() || tests.iter().any(|t| t.outcome != Outcome::Pass) {
        Outcome::Fail
    } else {
        Outcome::Pass
    };
    Classified {
        outcome,
        tests,
        metrics,
        evidence,
        guest_s,
        guest_reported: session.began,
        qemu_failure,
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "signal",
    }
}

/// How bad an outcome is when boots disagree: the worst boot speaks for the cell.
pub fn severity(o: Outcome) -> u8 {
    match o {
        Outcome::Pass => 0,
        Outcome::Skip => 1,
        Outcome::Flaky => 2,
        Outcome::Fail => 3,
        _ => 4,
    }
}

/// Folds boot `i` into the result of the boots before it: metric samples are
/// appended (with `boot_sizes`), a test or case keeps its worst outcome (the
/// reason names the boot), evidence is kept with the boot number, and
/// guest/boot times add up. Logs and the QEMU line stay those of boot 1.
pub fn merge_boot(r: &mut CellResult, b: CellResult, i: u32) {
    if severity(b.outcome) > severity(r.outcome) {
        r.outcome = b.outcome;
    }
    for mut e in b.evidence {
        e.what = format!("boot {i}: {}", e.what);
        r.evidence.push(e);
    }
    let tag = |reason: Option<String>| {
        Some(
            format!("boot {i}: {}", reason.unwrap_or_default())
                .trim_end_matches(": ")
                .to_string(),
        )
    };
    for bt in b.tests {
        match r.tests.iter_mut().find(|t| t.name == bt.name) {
            None => r.tests.push(bt),
            Some(t) => {
                if severity(bt.outcome) > severity(t.outcome) {
                    t.outcome = bt.outcome;
                    t.reason = tag(bt.reason.clone());
                    t.failed_by_cases = bt.failed_by_cases;
                }
                t.duration_s = match (t.duration_s, bt.duration_s) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                for bc in bt.cases {
                    match t.cases.iter_mut().find(|c| c.name == bc.name) {
                        None => t.cases.push(bc),
                        Some(c) if severity(bc.outcome) > severity(c.outcome) => {
                            c.outcome = bc.outcome;
                            c.reason = tag(bc.reason);
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    for bm in b.metrics {
        match r.metrics.iter_mut().find(|m| m.name == bm.name) {
            None => r.metrics.push(bm),
            Some(m) => {
                if m.skip.is_some() || bm.skip.is_some() {
                    m.skip = m.skip.take().or(bm.skip);
                    continue;
                }
                // A boot that gave no samples (it crashed first) is no boot
                // of this metric; empty clusters would only confuse stats.
                if bm.samples.is_empty() {
                    continue;
                }
                if m.boot_sizes.is_empty() {
                    m.boot_sizes.push(m.samples.len());
                }
                m.boot_sizes.push(bm.samples.len());
                m.samples.extend(bm.samples);
            }
        }
    }
    r.timings.boot_s += b.timings.boot_s;
    r.timings.guest_s += b.timings.guest_s;
}
