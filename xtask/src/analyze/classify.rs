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
use crate::util::tail;

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
    /// Killed by the harness at this console line, after which the kernel
    /// cannot go on (console::BEYOND_REPAIR).
    pub stopped_at: Option<String>,
}

impl QemuEnd {
    /// QEMU's own failure: a signal the harness did not send, or a non-zero
    /// exit. Both mean QEMU, not the guest, went wrong.
    pub fn qemu_failed(&self) -> Option<String> {
        if self.timed_out || self.stopped_at.is_some() {
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
    /// The guest's CPUs, from its first report.
    pub guest: Option<GuestInfo>,
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

pub fn classify(b: &BootInput) -> Classified {
    let channel = guestlog::parse(b.results);
    let splats = console::scan(b.console);
    let qemu_failure = b.exit.qemu_failed();
    let fate = Fate {
        splats: &splats,
        // The guest finished on its own: it survived whatever it printed.
        died: splats.iter().any(|s| is_fatal(s) && !s.caught_by_kunit) && !channel.done,
        done: channel.done,
        qemu_failed: qemu_failure.is_some(),
        timed_out: b.exit.timed_out,
    };
    let mut evidence = splat_evidence(b, &fate);
    let (tests, metrics) = judge_tests(b, &channel, &fate);
    let outcome = boot_outcome(
        b,
        &channel,
        &fate,
        &tests,
        qemu_failure.as_deref(),
        &mut evidence,
    );
    Classified {
        outcome,
        tests,
        metrics,
        evidence,
        guest_s: guest_seconds(&channel),
        guest_reported: channel.began,
        guest: channel.began.then(|| GuestInfo {
            kernel: channel.kernel.clone(),
            nproc: channel.nproc,
            possible: channel.possible.clone(),
            online: channel.online.clone(),
        }),
        qemu_failure,
    }
}

/// What the boot as a whole says, which every test's verdict may depend on.
struct Fate<'a> {
    splats: &'a [Splat],
    /// A fatal splat, and the guest did not finish.
    died: bool,
    /// The guest's init reported DONE.
    done: bool,
    qemu_failed: bool,
    /// The cell budget ran out (QEMU killed by the harness).
    timed_out: bool,
}

/// From the guest's first report to DONE (or the last test's end).
fn guest_seconds(channel: &guestlog::Session) -> f64 {
    match (
        channel.begin_uptime,
        channel
            .done_uptime
            .or_else(|| channel.tests.last().and_then(|t| t.end_uptime)),
    ) {
        (Some(start), Some(end)) => end - start,
        _ => 0.0,
    }
}

/// One piece of evidence per splat (what it was, when, whether the kernel
/// went on), and one for a truncated console.
fn splat_evidence(b: &BootInput, fate: &Fate) -> Vec<Evidence> {
    let mut evidence = Vec::new();
    for s in fate.splats {
        let during = s
            .during_test
            .as_deref()
            .map_or("during boot or between tests".to_string(), |t| {
                format!("while test {t} ran")
            });
        let verdict = if s.caught_by_kunit {
            "in KUnit's try-catch thread: KUnit caught it, and its case's verdict says what it means"
        } else if is_fatal(s) && !fate.done {
            "fatal"
        } else if fate.died {
            // E.g. a hung task report, then the panic it led to
            // (hung_task_panic) or another splat's.
            "not fatal by itself"
        } else {
            "the kernel went on"
        };
        let mut e = Evidence::new(
            EvidenceKind::Splat,
            format!(
                "{:?} at console line {} {during} ({verdict}): {}",
                s.kind, s.line, s.headline
            ),
            s.excerpt.clone(),
            Some(b.console_log.to_path_buf()),
        );
        e.crash = Some(Box::new(super::crash::report(s)));
        evidence.push(e);
    }
    if b.exit.console_truncated {
        evidence.push(Evidence::new(
            EvidenceKind::Guest,
            format!(
                "console log truncated at {} bytes (guest flooded the console)",
                b.exit.console_cap
            ),
            String::new(),
            Some(b.console_log.to_path_buf()),
        ));
    }
    evidence
}

/// Tests, in the order the guest ran them, and the metrics they reported
/// (samples of one name from several tests are pooled).
fn judge_tests(
    b: &BootInput,
    channel: &guestlog::Session,
    fate: &Fate,
) -> (Vec<TestResult>, Vec<Metric>) {
    let mut tests = Vec::new();
    let mut metrics: Vec<Metric> = Vec::new();
    let mut reached_end = true;
    for (tname, kind) in b.tests {
        let Some(block) = channel.tests.iter().find(|x| &x.name == tname) else {
            let why = if !reached_end || !channel.done {
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
        let mut got = kinds::of(*kind).interpret(tname, &block.output, b.decls);
        for m in std::mem::take(&mut got.metrics) {
            match metrics.iter_mut().find(|x| x.name == m.name) {
                Some(x) => x.samples.extend(m.samples),
                None => metrics.push(m),
            }
        }
        if block.rc.is_none() {
            reached_end = false;
        }
        tests.push(judge_test(tname, block, got, fate));
    }
    (tests, metrics)
}

/// One test that ran: what its output says, then how it ended, then a
/// splat the kernel printed while it ran.
fn judge_test(
    tname: &str,
    block: &guestlog::Block,
    got: kinds::Interpreted,
    fate: &Fate,
) -> TestResult {
    let mut t = TestResult {
        name: tname.to_string(),
        outcome: Outcome::Pass,
        reason: None,
        duration_s: block.duration(),
        cases: got.cases,
        failed_by_cases: false,
    };
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
    judge_end(&mut t, block, fate);
    // A splat the kernel survived fails the test that was running.
    if t.outcome == Outcome::Pass {
        if let Some(s) = fate
            .splats
            .iter()
            .find(|s| s.during_test.as_deref() == Some(tname))
        {
            t.outcome = Outcome::Fail;
            t.reason = Some(format!(
                "kernel {:?} while it ran (console line {}): {}",
                s.kind, s.line, s.headline
            ));
        }
    }
    t
}

/// How the test's program ended: not at all (the guest stopped while it
/// ran), by its own timeout, by a signal, or with a non-zero status.
fn judge_end(t: &mut TestResult, block: &guestlog::Block, fate: &Fate) {
    match block.rc {
        None => {
            t.outcome = if fate.qemu_failed {
                Outcome::InfraError
            } else if fate.died {
                Outcome::Crash
            } else if fate.timed_out {
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
                tail(&block.output, 5)
            ));
            t.failed_by_cases = false;
        }
        Some(rc) if rc > 128 => {
            t.outcome = Outcome::Fail;
            t.reason = Some(format!(
                "killed by signal {} ({}); last output: {}",
                rc - 128,
                signal_name(rc - 128),
                tail(&block.output, 5)
            ));
            t.failed_by_cases = false;
        }
        Some(rc) if rc != 0 && t.outcome == Outcome::Pass => {
            t.outcome = Outcome::Fail;
            t.reason = Some(format!("exit status {rc}"));
        }
        _ => {}
    }
}

/// The boot's outcome, worst first (see the module doc), with the evidence
/// that says why.
fn boot_outcome(
    b: &BootInput,
    channel: &guestlog::Session,
    fate: &Fate,
    tests: &[TestResult],
    qemu_failure: Option<&str>,
    evidence: &mut Vec<Evidence>,
) -> Outcome {
    let guest = |what: String, excerpt: String| {
        Evidence::new(
            EvidenceKind::Guest,
            what,
            excerpt,
            Some(b.console_log.to_path_buf()),
        )
    };
    if let Some(how) = qemu_failure {
        let when = if channel.began {
            "after the guest began reporting"
        } else {
            "before the guest's first report"
        };
        evidence.push(Evidence::new(
            EvidenceKind::Qemu,
            format!("{how} {when} (QEMU's own failure, not the guest's)"),
            format!(
                "{}\n--- console tail ---\n{}",
                b.exit.stderr.trim(),
                tail(b.console, 15)
            ),
            Some(b.console_log.to_path_buf()),
        ));
        Outcome::InfraError
    } else if fate.died || b.exit.stopped_at.is_some() {
        if let Some(line) = &b.exit.stopped_at {
            evidence.push(guest(
                format!(
                    "QEMU stopped by the harness after {:.0} s at the kernel's \"{line}\": the task that oopsed never exits, so its test would wait for its timeout",
                    b.exit.elapsed_s
                ),
                tail(b.console, 25),
            ));
        }
        Outcome::Crash
    } else if b.exit.timed_out {
        let running = channel
            .tests
            .iter()
            .find(|x| x.rc.is_none())
            .map(|x| x.name.clone());
        evidence.push(guest(
            format!(
                "QEMU killed after the {:.0} s cell budget{}",
                b.exit.elapsed_s,
                running.map_or(String::new(), |t| format!(" while test {t} ran"))
            ),
            tail(b.console, 25),
        ));
        Outcome::Timeout
    } else if !channel.began {
        evidence.push(guest(
            "the guest never reported (QEMU exited by itself: the kernel or init stopped the guest)"
                .into(),
            tail(b.console, 25),
        ));
        Outcome::Crash
    } else if !channel.done {
        evidence.push(guest(
            "the guest ended before its init reported DONE".into(),
            tail(b.console, 25),
        ));
        Outcome::Crash
    } else if fate.splats.iter().any(|s| !s.caught_by_kunit)
        || tests.iter().any(|t| t.outcome != Outcome::Pass)
    {
        Outcome::Fail
    } else {
        Outcome::Pass
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    struct NoDecls;
    impl MetricDecls for NoDecls {
        fn target_ci_pct(&self, _: &str) -> Option<f64> {
            None
        }
    }

    fn tests(names: &[(&str, TestKind)]) -> Vec<(String, TestKind)> {
        names.iter().map(|(n, k)| (n.to_string(), *k)).collect()
    }

    fn run(t: &[(String, TestKind)], exit: &QemuEnd, console: &str, results: &str) -> Classified {
        classify(&BootInput {
            tests: t,
            decls: &NoDecls,
            exit,
            console,
            results,
            console_log: Path::new("/c/console.log"),
        })
    }

    const SECCOMP: &[(&str, TestKind)] = &[
        ("seccomp_bpf", TestKind::Kselftest),
        ("seccomp_notify", TestKind::Bench),
    ];

    fn clean_exit() -> QemuEnd {
        QemuEnd {
            status: Some(0),
            elapsed_s: 30.0,
            console_cap: 64 << 20,
            ..Default::default()
        }
    }

    /// The results channel up to (not including) the line holding `marker`.
    fn cut_before(text: &str, marker: &str) -> String {
        let i = text
            .find(marker)
            .unwrap_or_else(|| panic!("{marker} not in the fixture"));
        text[..i].to_string()
    }

    #[test]
    fn pass_a_clean_boot_whose_tests_all_pass() {
        // Base 6.1 x86_64 (real console and results channel), the benchmark
        // alone: its sync-mode metrics are skips, which is not a failure.
        let c = run(
            &tests(&[("seccomp_notify", TestKind::Bench)]),
            &clean_exit(),
            &fixture("console-x86_64-clean.log"),
            &fixture("results-x86_64-base.log"),
        );
        assert_eq!(c.outcome, Outcome::Pass, "{:?}", c.evidence);
        assert_eq!(c.tests[0].outcome, Outcome::Pass);
        assert!(c.evidence.is_empty());
        let sync = c
            .metrics
            .iter()
            .find(|m| m.name == "seccomp_notify.sync.unpinned")
            .unwrap();
        assert!(
            sync.samples.is_empty() && sync.skip.as_deref().unwrap().contains("EINVAL"),
            "{sync:?}"
        );
        // "# stop: budget after 8 rounds (1 warm-up)": 7 samples per configuration.
        assert_eq!(
            c.metrics
                .iter()
                .find(|m| m.name == "seccomp_notify.default.unpinned")
                .unwrap()
                .samples
                .len(),
            7
        );
        assert!((c.guest_s - 24.12).abs() < 0.01, "{}", c.guest_s);
        assert!(c.guest_reported && c.qemu_failure.is_none());
    }

    #[test]
    fn fail_a_selftest_case_fails_on_base() {
        let c = run(
            &tests(SECCOMP),
            &clean_exit(),
            &fixture("console-x86_64-clean.log"),
            &fixture("results-x86_64-base.log"),
        );
        assert_eq!(c.outcome, Outcome::Fail);
        let bpf = &c.tests[0];
        assert_eq!((bpf.outcome, bpf.failed_by_cases), (Outcome::Fail, true));
        assert_eq!(bpf.reason.as_deref(), Some("1 of 96 cases failed"));
        let bad: Vec<&str> = bpf
            .cases
            .iter()
            .filter(|x| x.outcome == Outcome::Fail)
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(bad, ["global.user_notification_sync"]);
        assert_eq!(c.tests[1].outcome, Outcome::Pass);
    }

    #[test]
    fn crash_a_panic_kills_the_guest_and_later_tests_are_not_reached() {
        // The real console of a sysrq-c panic; the results channel as the
        // guest left it: `panic` started and never ended.
        let results = "@@KMATRIX@@ BEGIN uptime=2.10 nproc=2 kernel=6.1.192+ machine=x86_64\n\
                       @@KMATRIX@@ START after uptime=2.14 timeout=180\nstill running after the hang\n\
                       @@KMATRIX@@ END after rc=0 uptime=2.18\n@@KMATRIX@@ START panic uptime=2.19 timeout=180\n";
        let t = tests(&[
            ("after", TestKind::Shell),
            ("panic", TestKind::Shell),
            ("flood", TestKind::Shell),
        ]);
        let c = run(
            &t,
            &clean_exit(),
            &fixture("console-x86_64-sysrq-panic.log"),
            results,
        );
        assert_eq!(c.outcome, Outcome::Crash);
        assert_eq!(c.tests[0].outcome, Outcome::Pass);
        assert_eq!(c.tests[1].outcome, Outcome::Crash);
        assert_eq!(
            (c.tests[2].outcome, c.tests[2].reason.as_deref()),
            (
                Outcome::Skip,
                Some("not reached: the guest stopped before this test")
            )
        );
        let e = &c.evidence[0];
        assert_eq!(e.kind, EvidenceKind::Splat);
        assert!(
            e.what.contains("while test panic ran") && e.what.contains("(fatal)"),
            "{}",
            e.what
        );
        assert!(e.excerpt.contains("sysrq"));
    }

    /// The real console of a task asleep in the kernel for good (the fault
    /// tests' hungtask, detector timeout 2 s): the hung task report, then
    /// the panic that sysctl.kernel.hung_task_panic=1 (every guest's
    /// command line) turns it into, and QEMU's exit on the reboot.
    #[test]
    fn crash_a_hung_task_report_and_the_panic_it_led_to() {
        let t = tests(&[("hungtask", TestKind::Bench), ("after", TestKind::Shell)]);
        let exit = QemuEnd {
            elapsed_s: 5.0,
            ..clean_exit()
        };
        let c = run(
            &t,
            &exit,
            &fixture("console-x86_64-hung-task.log"),
            &fixture("results-x86_64-hung-task.log"),
        );
        assert_eq!(c.outcome, Outcome::Crash);
        assert!(c.qemu_failure.is_none());
        assert_eq!(c.tests[0].outcome, Outcome::Crash);
        assert_eq!(c.tests[1].outcome, Outcome::Skip);
        let what: Vec<&str> = c.evidence.iter().map(|e| e.what.as_str()).collect();
        assert!(
            what[0].starts_with("HungTask at console line")
                && what[0].contains("while test hungtask ran (not fatal by itself): INFO: task hungtask:50 blocked for more than 2 seconds."),
            "{what:?}"
        );
        assert!(
            c.evidence[0].excerpt.contains("state:D"),
            "{}",
            c.evidence[0].excerpt
        );
        assert!(
            what[1].starts_with("Panic at console line")
                && what[1].ends_with("while test hungtask ran (fatal): Kernel panic - not syncing: hung_task: blocked tasks"),
            "{what:?}"
        );
    }

    /// A real 6.12 x86_64 boot with every KUnit suite `tiny` allows: the
    /// `kunit_fault` suite dereferences NULL in KUnit's try-catch thread on
    /// purpose, KUnit catches it and the case passes. The oops is evidence,
    /// not a failure of the cell; an oops in any other task still is.
    #[test]
    fn an_oops_kunit_caught_in_its_try_catch_thread_is_its_cases_to_judge() {
        let console = fixture("console-x86_64-kunit-fault-6.12.log");
        let results = fixture("results-x86_64-kunit-fault-6.12.log");
        let t = tests(&[("kunit", TestKind::Kunit)]);
        let c = run(&t, &clean_exit(), &console, &results);
        assert_eq!(c.outcome, Outcome::Pass, "{:?}", c.evidence);
        assert_eq!(c.tests[0].outcome, Outcome::Pass);
        assert!(c.tests[0].cases.iter().any(|k| k.name
            == "kunit_fault.kunit_test_fault_null_dereference"
            && k.outcome == Outcome::Pass));
        assert!(
            c.evidence[0].what.starts_with(
                "Bug at console line 320 during boot or between tests (in KUnit's try-catch thread"
            ),
            "{:?}",
            c.evidence[0].what
        );
        // The same oops in another task fails the cell.
        let other = console.replace("Comm: kunit_try_catch ", "Comm: swapper ");
        let c = run(&t, &clean_exit(), &other, &results);
        assert_eq!(c.outcome, Outcome::Fail);
    }

    /// The real console of an oops in a task already exiting (the fault
    /// tests' deadtask): the kernel says "Fixing recursive fault but reboot
    /// is needed!" and the runner stopped QEMU there (SIGKILL, its own).
    #[test]
    fn crash_the_harness_stopped_the_guest_at_a_recursive_fault() {
        let console = fixture("console-x86_64-recursive-fault.log");
        let line = console
            .lines()
            .map(console::strip_timestamp)
            .find_map(console::beyond_repair)
            .expect("the marker in the real log");
        let exit = QemuEnd {
            status: None,
            signal: Some(9),
            elapsed_s: 1.8,
            stopped_at: Some(line.to_string()),
            ..clean_exit()
        };
        let t = tests(&[("deadtask", TestKind::Bench), ("after", TestKind::Shell)]);
        let c = run(
            &t,
            &exit,
            &console,
            &fixture("results-x86_64-recursive-fault.log"),
        );
        // Not QEMU's failure (the harness killed it), not a timeout.
        assert_eq!(c.outcome, Outcome::Crash);
        assert!(c.qemu_failure.is_none());
        assert_eq!(c.tests[0].outcome, Outcome::Crash);
        assert_eq!(c.tests[1].outcome, Outcome::Skip);
        let what: Vec<&str> = c.evidence.iter().map(|e| e.what.as_str()).collect();
        assert!(
            what[0].contains("NULL pointer dereference")
                && what[0].contains("while test deadtask ran"),
            "{what:?}"
        );
        assert!(
            what.iter().any(|w| w.starts_with("QEMU stopped by the harness after 2 s at the kernel's \"Fixing recursive fault but reboot is needed!\"")),
            "{what:?}"
        );
        // The same exit without the marker is QEMU killed by a signal it
        // was not sent by a timeout: its own failure.
        let killed = QemuEnd {
            stopped_at: None,
            ..exit
        };
        assert!(killed.qemu_failed().is_some());
    }

    #[test]
    fn timeout_the_cell_budget_ran_out_inside_a_test() {
        let console = fixture("console-x86_64-clean.log");
        let console = cut_before(&console, "kmatrix: test seccomp_notify end");
        let results = cut_before(
            &fixture("results-x86_64-base.log"),
            "@@KMATRIX@@ END seccomp_notify",
        );
        let exit = QemuEnd {
            status: None,
            signal: Some(9),
            timed_out: true,
            elapsed_s: 600.0,
            ..clean_exit()
        };
        let c = run(&tests(SECCOMP), &exit, &console, &results);
        assert_eq!(c.outcome, Outcome::Timeout);
        assert_eq!(c.tests[1].outcome, Outcome::Timeout);
        assert!(c.tests[1]
            .reason
            .as_deref()
            .unwrap()
            .contains("stopped while this test ran"));
        assert!(
            c.evidence.iter().any(|e| e.what
                == "QEMU killed after the 600 s cell budget while test seccomp_notify ran"),
            "{:?}",
            c.evidence
        );
        // What was measured before the budget ran out is kept.
        assert!(!c.metrics.is_empty());
    }

    #[test]
    fn infra_error_qemu_aborts_under_kvm_before_the_guest_says_anything() {
        // What QEMU printed on the fresh machine, and died of.
        let exit = QemuEnd {
            status: None,
            signal: Some(6),
            stderr: "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69\nqemu-system-x86_64: ../../target/i386/kvm/kvm.c:3054: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed.\n".into(),
            elapsed_s: 0.3,
            ..clean_exit()
        };
        let c = run(&tests(SECCOMP), &exit, "", "");
        assert_eq!(
            c.outcome,
            Outcome::InfraError,
            "never `crash`: the guest never ran"
        );
        assert!(!c.guest_reported);
        assert_eq!(
            c.qemu_failure.as_deref(),
            Some("QEMU was killed by signal 6 (SIGABRT)")
        );
        let e = c
            .evidence
            .iter()
            .find(|e| e.kind == EvidenceKind::Qemu)
            .unwrap();
        assert!(
            e.what.contains("before the guest's first report")
                && e.excerpt.contains("failed to set MSR 0x10a"),
            "{e:?}"
        );
        assert!(c.tests.iter().all(|t| t.outcome == Outcome::Skip));
        // Bad arguments: QEMU exits 1 by itself. Also QEMU's failure.
        let c = run(
            &tests(SECCOMP),
            &QemuEnd {
                status: Some(1),
                stderr: "qemu: -cpu maxx: unknown".into(),
                ..clean_exit()
            },
            "",
            "",
        );
        assert_eq!(
            (c.outcome, c.qemu_failure.as_deref()),
            (Outcome::InfraError, Some("QEMU exited with status 1"))
        );
    }

    #[test]
    fn infra_error_qemu_killed_while_a_test_ran() {
        let console = cut_before(
            &fixture("console-x86_64-clean.log"),
            "kmatrix: test seccomp_notify end",
        );
        let results = cut_before(
            &fixture("results-x86_64-base.log"),
            "@@KMATRIX@@ END seccomp_notify",
        );
        let c = run(
            &tests(SECCOMP),
            &QemuEnd {
                status: None,
                signal: Some(9),
                ..clean_exit()
            },
            &console,
            &results,
        );
        assert_eq!(c.outcome, Outcome::InfraError);
        assert_eq!(c.tests[1].outcome, Outcome::InfraError);
        assert!(c.guest_reported);
        assert!(c
            .evidence
            .iter()
            .any(|e| e.what.contains("after the guest began reporting")));
    }

    #[test]
    fn crash_the_guest_never_reported_and_qemu_exited_by_itself() {
        // The kernel booted (real console up to init) and QEMU exited 0 with
        // nothing on the results channel: the guest stopped itself.
        let console = cut_before(
            &fixture("console-x86_64-clean.log"),
            "kmatrix: test seccomp_bpf start",
        );
        let c = run(&tests(SECCOMP), &clean_exit(), &console, "");
        assert_eq!(c.outcome, Outcome::Crash);
        assert!(c.evidence[0].what.starts_with("the guest never reported"));
    }

    /// Console lines of a survivable BUG report (as __might_resched prints
    /// it) spliced into the real console while seccomp_notify ran.
    fn console_with(splat: &str) -> String {
        let console = fixture("console-x86_64-clean.log");
        let at = console
            .find("[   18.995007] kmatrix: test seccomp_notify end")
            .unwrap();
        format!("{}{splat}{}", &console[..at], &console[at..])
    }

    const SLEEPING_BUG: &str = "[   10.100000] BUG: sleeping function called from invalid context at kernel/sys.c:2401\n\
        [   10.100100] in_atomic(): 0, irqs_disabled(): 0, non_block: 0, pid: 60, name: seccomp_notify\n\
        [   10.100200] CPU: 1 PID: 60 Comm: seccomp_notify Not tainted 6.1.192+ #1\n\
        [   10.100300] Call Trace:\n[   10.100400]  <TASK>\n[   10.100500]  dump_stack_lvl+0x33/0x42\n\
        [   10.100600]  __do_sys_prctl+0x4d/0x5f0\n[   10.100700]  do_syscall_64+0x35/0x80\n[   10.100800]  </TASK>\n";

    #[test]
    fn fail_a_bug_report_the_kernel_survived_fails_the_test_that_ran() {
        let c = run(
            &tests(SECCOMP),
            &clean_exit(),
            &console_with(SLEEPING_BUG),
            &fixture("results-x86_64-base.log"),
        );
        assert_eq!(c.outcome, Outcome::Fail, "not a crash: the guest finished");
        let t = &c.tests[1];
        assert_eq!(t.outcome, Outcome::Fail);
        assert!(
            t.reason
                .as_deref()
                .unwrap()
                .contains("BUG: sleeping function called from invalid context"),
            "{t:?}"
        );
        let e = &c.evidence[0];
        assert!(
            e.what.contains("while test seccomp_notify ran")
                && e.what.contains("the kernel went on"),
            "{}",
            e.what
        );
    }

    #[test]
    fn crash_a_fatal_bug_after_which_the_guest_stopped() {
        let null = "[   10.100000] BUG: kernel NULL pointer dereference, address: 0000000000000000\n\
            [   10.100100] #PF: supervisor read access in kernel mode\n[   10.100200] Oops: 0000 [#1] SMP\n";
        let results = cut_before(
            &fixture("results-x86_64-base.log"),
            "@@KMATRIX@@ END seccomp_notify",
        );
        let console = cut_before(
            &console_with(null),
            "[   18.995007] kmatrix: test seccomp_notify end",
        );
        let c = run(&tests(SECCOMP), &clean_exit(), &console, &results);
        assert_eq!(c.outcome, Outcome::Crash);
        assert_eq!(c.tests[1].outcome, Outcome::Crash);
        // The same report, but the guest went on to DONE: it survived.
        let c = run(
            &tests(SECCOMP),
            &clean_exit(),
            &console_with(null),
            &fixture("results-x86_64-base.log"),
        );
        assert_eq!(c.outcome, Outcome::Fail);
    }

    #[test]
    fn which_bugs_are_fatal() {
        let s = |h: &str| Splat {
            kind: console::SplatKind::Bug,
            line: 1,
            headline: h.into(),
            excerpt: String::new(),
            during_test: None,
            caught_by_kunit: false,
        };
        assert!(!is_fatal(&s(
            "BUG: sleeping function called from invalid context at mm/slab.h:723"
        )));
        assert!(!is_fatal(&s(
            "BUG: KASAN: slab-out-of-bounds in foo+0x1/0x2"
        )));
        assert!(!is_fatal(&s(
            "BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 33s!"
        )));
        assert!(is_fatal(&s(
            "BUG: kernel NULL pointer dereference, address: 0000000000000008"
        )));
        assert!(is_fatal(&s("kernel BUG at mm/slub.c:123!")));
        // The scanner classifies the real headline the same way.
        let found = console::scan(SLEEPING_BUG);
        assert_eq!(found.len(), 1);
        assert!(!is_fatal(&found[0]));
    }

    #[test]
    fn merge_boot_pools_samples_and_the_worst_boot_speaks_for_tests() {
        fn boot(
            outcome: Outcome,
            case_b: Outcome,
            samples: &[f64],
            evidence: &[&str],
        ) -> CellResult {
            CellResult {
                evidence: evidence
                    .iter()
                    .map(|w| Evidence {
                        kind: EvidenceKind::Splat,
                        what: w.to_string(),
                        excerpt: String::new(),
                        path: None,
                        crash: None,
                    })
                    .collect(),
                tests: vec![TestResult {
                    name: "t".into(),
                    outcome: if case_b == Outcome::Fail {
                        Outcome::Fail
                    } else {
                        Outcome::Pass
                    },
                    reason: (case_b == Outcome::Fail).then(|| "1 of 2 cases failed".to_string()),
                    duration_s: Some(2.0),
                    cases: vec![
                        CaseResult {
                            name: "a".into(),
                            outcome: Outcome::Pass,
                            reason: None,
                        },
                        CaseResult {
                            name: "b".into(),
                            outcome: case_b,
                            reason: None,
                        },
                    ],
                    failed_by_cases: case_b == Outcome::Fail,
                }],
                metrics: vec![
                    Metric::fixture("m.x", "us/op", samples),
                    Metric {
                        skip: Some("EINVAL".into()),
                        ..Metric::fixture("m.y", "", &[])
                    },
                ],
                timings: Timings {
                    boot_s: 10.0,
                    guest_s: 8.0,
                    ..Default::default()
                },
                ..CellResult::blank("k/s/x86_64/c", outcome)
            }
        }
        let mut r = boot(Outcome::Pass, Outcome::Pass, &[1.0, 2.0, 3.0], &[]);
        merge_boot(
            &mut r,
            boot(Outcome::Fail, Outcome::Fail, &[4.0, 5.0], &["WARNING at x"]),
            2,
        );
        merge_boot(&mut r, boot(Outcome::Pass, Outcome::Pass, &[6.0], &[]), 3);
        assert_eq!(r.outcome, Outcome::Fail);
        assert_eq!(r.evidence[0].what, "boot 2: WARNING at x");
        let t = &r.tests[0];
        assert_eq!(
            (t.outcome, t.reason.as_deref(), t.failed_by_cases),
            (Outcome::Fail, Some("boot 2: 1 of 2 cases failed"), true)
        );
        assert_eq!(t.cases[1].outcome, Outcome::Fail);
        assert_eq!(t.cases[1].reason.as_deref(), Some("boot 2"));
        assert_eq!(t.duration_s, Some(6.0));
        let m = &r.metrics[0];
        assert_eq!(m.samples, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(m.boot_sizes, [3, 2, 1]);
        assert_eq!(r.metrics[1].skip.as_deref(), Some("EINVAL"));
        assert!(r.metrics[1].boot_sizes.is_empty());
        assert_eq!((r.timings.boot_s, r.timings.guest_s), (30.0, 24.0));
        // A crash in a later boot outranks everything.
        merge_boot(
            &mut r,
            boot(Outcome::Crash, Outcome::Pass, &[], &["panic"]),
            4,
        );
        assert_eq!(r.outcome, Outcome::Crash);
        assert_eq!(
            r.metrics[0].boot_sizes,
            [3, 2, 1],
            "a boot without samples adds no cluster"
        );
    }
}
