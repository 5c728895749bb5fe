//! A splat as a crash report a kernel developer can act on, in syzbot's
//! convention: a one-line title (the kind of report, then ` in ` and the
//! first frame that is not a reporting or helper function:
//! `BUG: kernel NULL pointer dereference in kunit_test_null_dereference`),
//! the frames it was read from (offsets dropped, compiler suffixes such as
//! `.constprop.0` too), and a fingerprint over the title and the top
//! frames it knows (not the `?` guesses of a stack scan), free of
//! addresses, offsets, pids, CPU numbers and times, so the same bug has
//! the same fingerprint over boots, cells and runs.
//!
//! Frames come from the faulting instruction (`RIP:` on x86, `pc :` on
//! arm64), a WARNING's or KASAN report's own function, then the call trace.
//! A kernel without a reliable unwinder marks every trace frame `?`; those
//! are used when they are all there is. Pure: text in, report out.

use std::sync::OnceLock;

use regex::Regex;

use super::console::{strip_timestamp, Splat, SplatKind};
use crate::schema::Crash;

/// How many known frames (after the skipped ones) the fingerprint covers.
const FINGERPRINT_FRAMES: usize = 3;

/// Functions that report or relay a splat rather than cause it, and the
/// scheduler, entry and thread plumbing every stack passes through.
const SKIP: &[&str] = &[
    "dump_stack",
    "dump_stack_lvl",
    "show_stack",
    "show_regs",
    "panic",
    "__warn",
    "warn_slowpath_fmt",
    "report_bug",
    "handle_bug",
    "exc_invalid_op",
    "do_error_trap",
    "die",
    "oops_end",
    "page_fault_oops",
    "kernelmode_fixup_or_oops",
    "__bad_area_nosemaphore",
    "do_user_addr_fault",
    "exc_page_fault",
    "__do_kernel_fault",
    "do_page_fault",
    "do_translation_fault",
    "do_mem_abort",
    "el1_abort",
    "el1h_64_sync_handler",
    "el1h_64_sync",
    "__might_sleep",
    "__might_resched",
    "___might_sleep",
    "__schedule",
    "schedule",
    "schedule_timeout",
    "io_schedule",
    "kasan_report",
    "print_report",
    "print_address_description",
    "kthread",
    "ret_from_fork",
    "ret_from_fork_asm",
    "kunit_generic_run_threadfn_adapter",
    "do_syscall_64",
    "invoke_syscall",
    "el0_svc_common",
    "do_el0_svc",
    "el0_svc",
    "el0t_64_sync_handler",
    "el0t_64_sync",
    "watchdog",
    "sysrq_handle_crash",
];

fn skipped(f: &str) -> bool {
    SKIP.contains(&f) || f.starts_with("asm_") || f.starts_with("entry_SYSCALL")
}

/// `func+0x1f/0x30` (with an optional module in brackets after it): the
/// function, without a compiler suffix (`.constprop.0`, `.isra.0`).
fn function(token: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"^([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+").unwrap()
    });
    let name = re.captures(token.trim())?.get(1)?.as_str();
    let base = name.split('.').next().unwrap_or(name);
    Some(base.to_string())
}

/// The frames of a splat's excerpt, top first: the faulting function, the
/// function a WARNING or KASAN report names, then the call trace (its
/// reliable frames, or its `?` frames when it has no other).
#[cfg(test)]
fn frames(excerpt: &str) -> Vec<String> {
    read_frames(excerpt).0
}

/// (the frames shown, the frames known: without the `?` guesses of a
/// stack scan, which stale stack contents change from boot to boot),
/// reporting and plumbing functions left out, a repeat once.
fn read_frames(excerpt: &str) -> (Vec<String>, Vec<String>) {
    let mut top: Vec<String> = Vec::new();
    let mut reliable: Vec<String> = Vec::new();
    let mut guessed: Vec<String> = Vec::new();
    let mut in_trace = false;
    let mut traced = false;
    for raw in excerpt.lines() {
        let l = strip_timestamp(raw).trim();
        if let Some(rest) = l
            .strip_prefix("RIP: ")
            .and_then(|r| r.split_once(':').map(|(_, f)| f))
            .or_else(|| l.strip_prefix("pc : "))
        {
            if top.is_empty() {
                top.extend(function(rest));
            }
            continue;
        }
        if let Some((_, at)) = l.split_once(" at ").filter(|_| l.starts_with("WARNING: ")) {
            // WARNING: CPU: 0 PID: 1 at kernel/foo.c:12 func+0x1/0x2
            if let Some(f) = at.split_whitespace().nth(1).and_then(function) {
                top.push(f);
            }
            continue;
        }
        if let Some(rest) = l.strip_prefix("BUG: KASAN: ") {
            if let Some(f) = rest.split(" in ").nth(1).and_then(function) {
                top.push(f);
            }
            continue;
        }
        // The first call trace only: a panic the splat led to prints its
        // own, of the reporting thread.
        if l.eq_ignore_ascii_case("call trace:") {
            in_trace = !traced;
            traced = true;
            continue;
        }
        if !in_trace {
            continue;
        }
        if l.starts_with("</TASK>") || l.starts_with("---[ end") || l.starts_with("Code:") {
            in_trace = false;
            continue;
        }
        let (guess, token) = match l.strip_prefix("? ") {
            Some(t) => (true, t),
            None => (false, l),
        };
        if let Some(f) = function(token) {
            if guess {
                guessed.push(f);
            } else {
                reliable.push(f);
            }
        }
    }
    let dedup = |frames: Vec<String>| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in frames.into_iter().filter(|f| !skipped(f)) {
            if out.last() != Some(&f) {
                out.push(f);
            }
        }
        out
    };
    let known = dedup(top.iter().chain(&reliable).cloned().collect());
    let trace = if reliable.is_empty() {
        guessed
    } else {
        reliable
    };
    let shown = dedup(top.into_iter().chain(trace).collect());
    (shown, known)
}

/// The kind of report a headline is, as the title starts: the same words
/// for the same bug on both arches.
fn report_kind(kind: SplatKind, headline: &str) -> String {
    let h = strip_timestamp(headline).trim();
    let after = |p: &str| h.split_once(p).map(|(_, r)| r.trim().to_string());
    match kind {
        SplatKind::Panic => {
            let msg = after("Kernel panic - not syncing:").unwrap_or_default();
            format!("kernel panic: {}", normalize(&msg))
        }
        SplatKind::HungTask => "INFO: task hung".into(),
        SplatKind::RcuStall => "INFO: rcu detected stall".into(),
        SplatKind::SoftLockup if h.contains("hard LOCKUP") => "BUG: hard lockup".into(),
        SplatKind::SoftLockup => "BUG: soft lockup".into(),
        SplatKind::Lockdep => {
            let what = after("WARNING:").unwrap_or_default();
            match what.as_str() {
                w if w.starts_with("possible circular locking") => "possible deadlock".into(),
                w if w.starts_with("possible recursive locking") => {
                    "possible recursive locking".into()
                }
                w => normalize(w.trim_end_matches(['!', '.'])),
            }
        }
        SplatKind::Warning => "WARNING".into(),
        SplatKind::Bug | SplatKind::Oops => {
            if h.contains("NULL pointer dereference") {
                "BUG: kernel NULL pointer dereference".into()
            } else if h.contains("Unable to handle kernel paging request")
                || h.contains("unable to handle page fault")
            {
                "BUG: unable to handle kernel paging request".into()
            } else if h.contains("general protection fault") {
                "general protection fault".into()
            } else if h.contains("kernel BUG at ") {
                "kernel BUG".into()
            } else if let Some(k) = after("BUG: KASAN: ") {
                format!("KASAN: {}", k.split(" in ").next().unwrap_or(&k))
            } else if let Some(rest) = after("BUG: ") {
                // "sleeping function called from invalid context at FILE:LINE"
                let cut = rest
                    .split(" at ")
                    .next()
                    .unwrap_or(&rest)
                    .split([',', ':'])
                    .next()
                    .unwrap_or(&rest)
                    .to_string();
                format!("BUG: {}", normalize(&cut))
            } else if let Some(rest) = after("Internal error: ") {
                normalize(rest.split(':').next().unwrap_or(&rest))
            } else {
                normalize(h)
            }
        }
    }
}

/// Numbers and addresses out of a message: `hung_task: blocked tasks`
/// stays, `Attempted to kill init! exitcode=0x0000000b` loses its code.
fn normalize(s: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"(0x)?[0-9a-f]{6,}|\b\d+\b").unwrap());
    re.replace_all(s, "N").trim().to_string()
}

/// A stable 64-bit FNV-1a hash, as 16 hex digits.
fn fnv(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// The report of one splat.
pub fn report(s: &Splat) -> Crash {
    let kind = report_kind(s.kind, &s.headline);
    let (frames, known) = read_frames(&s.excerpt);
    let title = match (s.kind, frames.first()) {
        (SplatKind::Panic, _) | (_, None) => kind,
        (_, Some(f)) => format!("{kind} in {f}"),
    };
    let top: Vec<&str> = known
        .iter()
        .take(FINGERPRINT_FRAMES)
        .map(String::as_str)
        .collect();
    Crash {
        fingerprint: fnv(&format!("{title}\n{}", top.join("\n"))),
        title,
        frames,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::console::scan;

    fn fixture(name: &str) -> String {
        let p = format!("{}/../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn reports(name: &str) -> Vec<Crash> {
        scan(&fixture(name)).iter().map(report).collect()
    }

    /// KUnit's own fault test on 6.12, x86_64 and arm64: one title, one
    /// fingerprint, from `RIP:` and from `pc :`.
    #[test]
    fn the_same_null_dereference_has_one_title_and_fingerprint_on_both_arches() {
        let x86 = reports("console-x86_64-kunit-fault-6.12.log");
        let arm = reports("console-arm64-kunit-fault-6.12.log");
        assert_eq!(
            x86[0].title,
            "BUG: kernel NULL pointer dereference in kunit_test_null_dereference"
        );
        assert_eq!(arm[0].title, x86[0].title);
        assert_eq!(
            x86[0].frames,
            ["kunit_test_null_dereference", "kthread_park"],
            "the guessed frames are shown, a repeat once"
        );
        assert_eq!(arm[0].frames[0], "kunit_test_null_dereference");
        // The fingerprint covers the known frames: x86's trace is all `?`
        // guesses (no unwinder in `tiny`), arm64's is KUnit's thread
        // plumbing, so both come to the faulting function.
        assert_eq!(arm[0].fingerprint, x86[0].fingerprint, "{x86:?} {arm:?}");
        assert_eq!(x86[0].fingerprint.len(), 16);
    }

    /// A page fault in `cat` (6.1, reading a KUnit debugfs file after a
    /// filtered run), a planted NULL dereference in prctl that the kernel
    /// could not recover from, a hung task and the panic it led to, a
    /// sleeping function called from atomic context, a sysrq panic: each
    /// with the title syzbot's convention gives it.
    #[test]
    fn each_splat_of_the_captured_consoles_gets_its_title() {
        let titles =
            |name: &str| -> Vec<String> { reports(name).into_iter().map(|c| c.title).collect() };
        assert_eq!(
            titles("console-x86_64-kunit-debugfs-6.1.log")[0],
            "BUG: unable to handle kernel paging request in string_nocheck"
        );
        assert_eq!(
            titles("console-x86_64-recursive-fault.log")[0],
            "BUG: kernel NULL pointer dereference in __x64_sys_prctl"
        );
        assert_eq!(
            titles("console-x86_64-hung-task.log"),
            [
                "INFO: task hung in __x64_sys_prctl",
                "kernel panic: hung_task: blocked tasks"
            ]
        );
        assert_eq!(
            titles("console-x86_64-sleeping-in-atomic.log"),
            ["BUG: sleeping function called from invalid context in __x64_sys_prctl"]
        );
        assert_eq!(
            titles("console-x86_64-sysrq-panic.log"),
            ["kernel panic: sysrq triggered crash"]
        );
    }

    /// Addresses, offsets, pids, CPUs and times change between boots; the
    /// fingerprint does not.
    #[test]
    fn a_fingerprint_ignores_what_changes_between_boots() {
        let text = fixture("console-x86_64-recursive-fault.log");
        let a = &scan(&text).iter().map(report).collect::<Vec<_>>()[0];
        let moved = text
            .replace("__x64_sys_prctl+0x4ea/0x55d", "__x64_sys_prctl+0x4f0/0x563")
            .replace("PID: 51", "PID: 77")
            .replace("CPU: 0", "CPU: 1")
            .replace("[    1.1", "[    7.3");
        let b = &scan(&moved).iter().map(report).collect::<Vec<_>>()[0];
        assert_eq!(a.fingerprint, b.fingerprint);
        let other = text.replace("__x64_sys_prctl", "__x64_sys_getpid");
        let c = &scan(&other).iter().map(report).collect::<Vec<_>>()[0];
        assert_ne!(a.fingerprint, c.fingerprint);
    }

    #[test]
    fn frames_drop_offsets_and_compiler_suffixes() {
        assert_eq!(
            function("__refcount_add.constprop.0+0x24/0x24").as_deref(),
            Some("__refcount_add")
        );
        assert_eq!(function("0x7f00+0x1/0x2"), None);
        let w = "WARNING: CPU: 1 PID: 9 at kernel/rcu/tree.c:2100 rcu_core+0x5c/0x1a0\nCall Trace:\n <TASK>\n rcu_do_batch+0x1/0x2\n </TASK>";
        assert_eq!(frames(w), ["rcu_core", "rcu_do_batch"]);
    }
}
