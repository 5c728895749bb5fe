//! End to end: real kernels built from Debian's linux-source-6.1 and
//! -6.12, booted in real QEMU, running the real seccomp selftest and
//! benchmark and the rseq/membarrier/mm_cid checks. Which kernels the
//! suite builds, and which tests share them: docs/ci.md. The cache outside
//! the checkout keeps them for later runs.
//!
//! The checks go through the stable interfaces only: the CLI and
//! results.json.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// Cells share the cache lock anyway; running them one at a time keeps the
/// 2-core machine from building two kernels at once.
static SERIAL: Mutex<()> = Mutex::new(());

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The seccomp tests of the default matrix (the cells build with every
/// test's options; `--test` only picks what runs), the series' own perf
/// bench among them, in 3 boots rather than the matrix's 6: these tests
/// check what the harness does, and 3 boots already give every per-boot
/// and across-boot path.
const SECCOMP_ONLY: &[&str] = &[
    "--test",
    "seccomp_bpf",
    "--test",
    "seccomp_notify",
    "--test",
    "perf_bench",
    "--boots",
    "3",
];

/// Runs `xtask matrix` on one cell; returns (exit code, results.json).
fn run_cell(cell: &str, name: &str, extra: &[&str]) -> (i32, Value, PathBuf) {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = out_dir(name);
    let st = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["matrix", "--cell", cell, "--out"])
        .arg(&out)
        .args(extra)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .status()
        .expect("running xtask");
    let text = std::fs::read_to_string(out.join("results.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    (
        st.code().unwrap_or(-1),
        serde_json::from_str(&text).unwrap(),
        out,
    )
}

/// A matrix run that must have exited 0: what it said (stdout, where the
/// summary goes, then stderr's progress lines) and its results.json.
fn finished(o: &std::process::Output, out: &Path) -> (String, Value) {
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let run =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    (said, run)
}

fn test<'a>(cell: &'a Value, name: &str) -> &'a Value {
    cell["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no test {name} in {cell}"))
}

fn case_outcomes(t: &Value) -> Vec<(String, String)> {
    t["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn x86_64_with_series_passes_every_seccomp_case() {
    let (code, run, out) = run_cell(
        "6.1/seccomp-sync-wakeup/x86_64/tiny",
        "e2e-x86-series",
        SECCOMP_ONLY,
    );
    let cell = &run["cells"][0];
    assert_eq!(
        cell["outcome"],
        "pass",
        "{}",
        serde_json::to_string_pretty(cell).unwrap()
    );
    assert_eq!(code, 0);
    assert!(cell["accel"].as_str().unwrap().starts_with("tcg") || cell["accel"] == "kvm");
    let cases = case_outcomes(test(cell, "seccomp_bpf"));
    assert!(cases.len() >= 90, "{cases:?}");
    assert!(cases.iter().all(|(_, o)| o == "pass"), "{cases:?}");
    assert!(cases
        .iter()
        .any(|(n, _)| n == "global.user_notification_sync"));
    // The benchmark measured both modes, as raw samples.
    let metrics = cell["metrics"].as_array().unwrap();
    for m in [
        "seccomp_notify.default.unpinned",
        "seccomp_notify.sync.unpinned",
    ] {
        let m = metrics
            .iter()
            .find(|x| x["name"] == m)
            .unwrap_or_else(|| panic!("{m} missing"));
        assert!(m["samples"].as_array().unwrap().len() >= 3, "{m}");
        assert_eq!(m["unit"], "us/op");
        // The default matrix boots each cell several times: samples by
        // boot, each boot with some. How many a boot keeps is the host's
        // doing: the speed checks set aside the samples of slow stretches,
        // and on a noisy host the budget ends with as few as 2 kept
        // (boot_sizes [2, 2, 4] on this machine, where a quiet hour gives
        // dozens), so no count beyond one is the harness's to promise.
        let sizes: Vec<u64> = m["boot_sizes"]
            .as_array()
            .map_or(vec![], |a| a.iter().map(|x| x.as_u64().unwrap()).collect());
        assert!(sizes.len() >= 2 && sizes.iter().all(|&n| n >= 1), "{m}");
        assert_eq!(
            sizes.iter().sum::<u64>() as usize,
            m["samples"].as_array().unwrap().len()
        );
    }
    // The series' claim, judged within the cell across its boots, apart in
    // the boots of each state of the host (matrix.toml [within.split]).
    // Sync mode saves a cross-CPU wakeup, so it gains about what one costs
    // in a boot (seccomp_notify.host.wake_gap_pct, one value per boot). On
    // the shared hosts measured that cost switches between ~40% and ~10%
    // of a same-CPU round trip for minutes at a time: where it is large,
    // sync must not come out behind. Where it is small sync runs the
    // supervisor on the waker's CPU for nothing, and on a slow host cost
    // +2 to +21% there (docs/measurements.md, "perf bench seccomp-notify"):
    // "regressed" is the host's answer then, and only a sync path far
    // slower than any boot measured (+50%) is wrong.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let pct = metrics
        .iter()
        .find(|x| x["name"] == "seccomp_notify.host.wake_gap_pct")
        .expect("wake_gap_pct reported");
    assert_eq!(pct["unit"], "%");
    let g: Vec<f64> = pct["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    // One per boot that measured both modes' cross-CPU samples: a boot
    // whose speed checks set all of one aside has none.
    assert!(!g.is_empty() && g.len() <= 3, "at most one per boot: {pct}");
    let claims: Vec<&serde_json::Value> = run["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["new_metric"] == "seccomp_notify.sync.unpinned")
        .collect();
    println!("wake gap by boot: {g:?} %; sync vs default: {claims:?}");
    assert!(!claims.is_empty() && claims.len() <= 2, "{claims:?}");
    // A boot whose speed checks set aside every sample of a metric has no
    // samples of it: the pair's boots no longer line up with the host
    // states, and the pair is judged once, unsplit (on a noisy hour here
    // 96-98% of the samples were set aside and one boot kept none). Its
    // boots may all be of the cheap state, so, as there, only a sync path
    // far slower than any boot measured is wrong.
    let boots_of = |name: &str| {
        metrics
            .iter()
            .find(|x| x["name"] == name)
            .and_then(|x| x["boot_sizes"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    if boots_of("seccomp_notify.sync.unpinned") < g.len()
        || boots_of("seccomp_notify.default.unpinned") < g.len()
    {
        assert_eq!(claims.len(), 1, "{claims:?}");
        assert!(claims[0]["split"].is_null(), "{}", claims[0]);
        assert!(
            claims[0]["pct_change"].as_f64().unwrap() < 50.0,
            "{}",
            claims[0]
        );
    }
    for c in claims.iter().filter(|c| !c["split"].is_null()) {
        let split = &c["split"];
        assert_eq!(split["metric"], "seccomp_notify.host.wake_gap_pct", "{c}");
        let at = split["at"].as_f64().unwrap();
        let above = split["above"].as_bool().unwrap();
        // Each state's comparison has exactly the boots that were in it.
        let here = g.iter().filter(|&&v| (v >= at) == above).count();
        assert_eq!(c["boots_new"].as_u64().unwrap() as usize, here, "{c}");
        assert_eq!(
            split["boots_other"].as_u64().unwrap() as usize,
            g.len() - here,
            "{c}"
        );
        // Never "regressed" in the costly state, where sync is the faster
        // mode. "improved" is the default matrix's claim, not this test's:
        // one boot in that state on a noisy hour here gave -8.7% [-19.2,
        // +3.0] (24 and 28 samples kept, wake gap 27.5%), "too noisy". A
        // sync path that saves nothing fails the direction check about
        // half the time; the claim itself is measured in
        // docs/measurements.md.
        if above {
            assert_ne!(c["verdict"], "regressed", "wake gap {g:?}: {c}");
        } else {
            assert!(
                c["pct_change"].as_f64().unwrap() < 50.0,
                "sync far slower where the wakeup is cheap, wake gap {g:?}: {c}"
            );
        }
        let judged = c["n_base"].as_u64().unwrap() >= 10 && c["n_new"].as_u64().unwrap() >= 10;
        if above && judged {
            assert!(
                c["verdict"] == "improved" || c["verdict"] == "too-noisy",
                "wake gap {g:?}: {c}"
            );
            assert!(
                c["pct_change"].as_f64().unwrap() < 0.0,
                "sync slower where the wakeup is costly, wake gap {g:?}: {c}"
            );
        }
    }
    // Never compared: it is about the host.
    assert!(!run["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["new_metric"]
            .as_str()
            .unwrap()
            .starts_with("seccomp_notify.host.")));
    // The series' own benchmark, from the cell's tree: its perf built
    // static and run 5 times a mode a boot, each run's usecs/op a sample.
    let cases = case_outcomes(test(cell, "perf_bench"));
    assert_eq!(
        cases,
        [
            ("perf_bench.seccomp_notify.default".into(), "pass".into()),
            ("perf_bench.seccomp_notify.sync".into(), "pass".into()),
        ],
        "{}",
        test(cell, "perf_bench")
    );
    for name in [
        "perf_bench.seccomp_notify.default",
        "perf_bench.seccomp_notify.sync",
    ] {
        let m = metrics.iter().find(|x| x["name"] == name).unwrap();
        assert_eq!(m["unit"], "us", "{m}");
        let sizes: Vec<u64> = m["boot_sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(sizes, [5, 5, 5], "{m}");
        // The series' bench as posted checks its ioctls inside assert(),
        // which perf's own -DNDEBUG=1 compiles out: it times an empty loop,
        // far below the round trip seccomp_notify measures in the same
        // boots (under 1 us against 45-80 us here). That it does shows the
        // cell's own tree's perf ran, as the series ships it.
        let med = median(cell, name);
        let round_trip = median(cell, "seccomp_notify.default.same-cpu");
        assert!(
            med > 0.0 && med < round_trip / 10.0,
            "{name}: {med} us against a round trip of {round_trip} us"
        );
    }
    assert!(
        cell["reproduce"]["guest"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c.as_str().unwrap().contains("tools/perf 'O=")
                && c.as_str().unwrap().contains(" 'LDFLAGS=-static' ")),
        "{}",
        cell["reproduce"]["guest"]
    );
    let perf_claim: Vec<&serde_json::Value> = run["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["new_metric"] == "perf_bench.seccomp_notify.sync")
        .collect();
    println!("perf bench sync vs default: {perf_claim:?}");
    assert!(!perf_claim.is_empty(), "the within pair is compared");
    assert!(
        perf_claim.iter().all(|c| c["verdict"] != "regressed"),
        "{perf_claim:?}"
    );
    // Logs and reproducers are where results.json says.
    assert!(Path::new(cell["logs"]["console"].as_str().unwrap()).exists());
    // The build's reproducer: the tree at the commit, the cell's .config
    // into an O= dir of the cell's own, make there from scratch (never in
    // the harness's O= dirs, whose mtimes it sets itself).
    let make: Vec<&str> = cell["reproduce"]["make"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(make.len(), 3, "{make:?}");
    assert!(
        make[0].starts_with("git -C ") && make[0].contains(" checkout --detach "),
        "{make:?}"
    );
    let o = make[1]
        .strip_prefix("mkdir -p ")
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let config = make[1]
        .split(" && cp ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(
        o.starts_with(out.to_str().unwrap()) && o.ends_with("/o"),
        "{make:?}"
    );
    assert!(Path::new(config).is_file(), "{make:?}");
    assert!(make[1].ends_with(&format!(" {o}/.config")), "{make:?}");
    assert!(
        make[2].starts_with("make ") && make[2].contains(&format!(" O={o} ")),
        "{make:?}"
    );
    assert!(cell["reproduce"]["qemu"]
        .as_str()
        .unwrap()
        .contains("qemu-system-x86_64"));
    assert!(out.join("summary.md").exists());
}

#[test]
fn arm64_base_fails_only_the_sync_case_as_expected() {
    let (code, run, _) = run_cell("6.1/base/arm64/tiny", "e2e-arm64-base", SECCOMP_ONLY);
    let cell = &run["cells"][0];
    assert_eq!(
        cell["outcome"],
        "fail",
        "{}",
        serde_json::to_string_pretty(cell).unwrap()
    );
    assert_eq!(cell["as_expected"], true, "{}", cell["mismatches"]);
    assert_eq!(code, 0);
    let t = test(cell, "seccomp_bpf");
    let bad: Vec<_> = case_outcomes(t)
        .into_iter()
        .filter(|(_, o)| o != "pass")
        .collect();
    assert_eq!(
        bad,
        [(
            "global.user_notification_sync".to_string(),
            "fail".to_string()
        )]
    );
    // Sync mode is absent on base: a skip with the reason, never a number.
    let m = cell["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "seccomp_notify.sync.unpinned")
        .unwrap();
    assert!(m["samples"].as_array().unwrap().is_empty());
    assert!(m["skip"].as_str().unwrap().contains("EINVAL"), "{m}");
    // The base tree has no perf bench seccomp-notify: nothing is built,
    // each case is a skip that names the missing file (as matrix.toml
    // expects, so the cell is still as expected).
    let t = test(cell, "perf_bench");
    assert_eq!(case_outcomes(t).len(), 2, "{t}");
    for (name, outcome) in case_outcomes(t) {
        assert_eq!(outcome, "skip", "{name}");
    }
    let why = t["cases"][0]["reason"].as_str().unwrap();
    assert!(
        why.contains("tools/perf/bench/sched-seccomp-notify.c"),
        "{why}"
    );
}

/// `xtask boot` hands the console to the user: commands typed on stdin run
/// in the guest's shell, and `reboot -f` ends QEMU.
#[test]
fn boot_gives_an_interactive_shell() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Its own temporary directory, to see that the boot leaves nothing.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("boot-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let (mut child, seen) = boot_shell(&[], &tmp, |_| {});
    assert!(child.wait().unwrap().success());
    assert!(seen.contains("guest-says-42"), "{seen}");
    assert!(seen.contains("seccomp_bpf"), "{seen}");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "the boot left {left:?} behind");
}

/// Starts `xtask boot 6.1/seccomp-sync-wakeup/x86_64/tiny EXTRA...` and
/// drives its shell: `on_line` sees each line of its stdout and stderr as
/// it comes; once the shell answers, a few commands and `reboot -f`.
/// Returns the process (ended) and everything it printed.
fn boot_shell(
    extra: &[&str],
    tmp: &Path,
    mut on_line: impl FnMut(&str),
) -> (std::process::Child, String) {
    use std::io::{BufRead, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["boot", "6.1/seccomp-sync-wakeup/x86_64/tiny"])
        .args(extra)
        .env("TMPDIR", tmp)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx2.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let mut seen = String::new();
    // Input sent before the shell owns the console is dropped: once it
    // says it starts, a probe is typed each second until the shell's own
    // answer to it (`kmatrix-ready-2`, not the echoed `$((1+1))`) shows,
    // and only then the commands.
    const PROBE: &[u8] = b"echo kmatrix-ready-$((1+1))\n";
    let (mut shell, mut ready) = (false, false);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            let _ = child.kill();
            panic!("no shell within 300 s:\n{seen}");
        }
        match rx.recv_timeout(left.min(std::time::Duration::from_secs(1))) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                on_line(&line);
                if !shell && line.contains("kmatrix: interactive shell") {
                    shell = true;
                    stdin.write_all(PROBE).unwrap();
                }
                if shell && !ready && line.contains("kmatrix-ready-2") {
                    ready = true;
                    stdin
                        .write_all(b"echo guest-says-$((6*7)); ls /tests; reboot -f\n")
                        .unwrap();
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if shell && !ready {
                    stdin.write_all(PROBE).unwrap();
                }
            }
        }
    }
    (child, seen)
}

/// `xtask boot --gdb PORT`: the guest waits, halted, for a debugger on the
/// port; the printed command names the image's vmlinux. Spoken to in gdb's
/// remote protocol: asked why it stopped (a trap), then told to continue,
/// it boots to the shell.
#[test]
fn boot_gdb_halts_the_guest_for_a_debugger() {
    use std::io::{Read, Write};
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("boot-gdb-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut stop_reply = String::new();
    let mut command = String::new();
    let (mut child, seen) = boot_shell(&["--gdb", &port.to_string()], &tmp, |line| {
        let Some(i) = line.find("halted for a debugger: ") else {
            return;
        };
        command = line[i..].to_string();
        // QEMU is about to start: its stub listens once it runs.
        let start = std::time::Instant::now();
        let mut s = loop {
            match std::net::TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(_) if start.elapsed().as_secs() < 60 => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => panic!("no gdbstub on port {port}: {e}"),
            }
        };
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        s.write_all(b"$?#3f").unwrap();
        let mut buf = [0u8; 512];
        while !stop_reply.contains('#') {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "the stub closed the connection");
            stop_reply.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        s.write_all(b"+$c#63").unwrap();
        // The stub keeps the guest running while the connection is open.
        std::mem::forget(s);
    });
    assert!(child.wait().unwrap().success(), "{seen}");
    assert!(seen.contains("guest-says-42"), "{seen}");
    eprintln!("{command}\nthe stub's stop reply: {stop_reply}");
    // Stopped by a trap (signal 5) before the first instruction ran.
    assert!(
        stop_reply.contains("$T05") || stop_reply.contains("$S05"),
        "{stop_reply}"
    );
    assert!(
        command.contains(&format!("-ex 'target remote 127.0.0.1:{port}'")),
        "{command}"
    );
    let vmlinux = command
        .split_whitespace()
        .find(|w| w.ends_with("/vmlinux"))
        .unwrap_or_else(|| panic!("no vmlinux named: {command}"));
    let head = std::fs::read(vmlinux).unwrap();
    assert_eq!(&head[..4], b"\x7fELF", "{vmlinux}");
}

/// The rseq, membarrier and mm_cid checks (tests/checks/matrix.toml: the default matrix's
/// kernels and options, lighter selftest cases and budgets).
const CHECKS: &[&str] = &[
    "--matrix",
    "tests/checks/matrix.toml",
    "--test",
    "rseq_selftests",
    "--test",
    "membarrier_single",
    "--test",
    "membarrier_multi",
    "--test",
    "rseq",
    "--test",
    "membarrier",
    "--test",
    "mm_cid",
];

fn median(cell: &Value, metric: &str) -> f64 {
    let m = cell["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap_or_else(|| panic!("{metric} missing: {cell}"));
    let mut s: Vec<f64> = m["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("{metric}: no samples: {m}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(!s.is_empty(), "{metric}: no samples: {m}");
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

#[test]
fn rseq_membarrier_mm_cid_checks_run_on_6_12_and_skip_mm_cid_on_6_1() {
    let (code, run, _) = run_cell("6.12/base/x86_64/tiny", "e2e-checks-6.12", CHECKS);
    let cell = &run["cells"][0];
    assert_eq!(
        cell["outcome"],
        "pass",
        "{}",
        serde_json::to_string_pretty(cell).unwrap()
    );
    assert_eq!(code, 0);
    // The guest says what it had: 2 possible CPUs without a `wide` config.
    assert_eq!(cell["guest"]["possible"], "0-1", "{}", cell["guest"]);
    // rseq selftests: every invocation a case, the mm_cid builds included.
    let rseq = case_outcomes(test(cell, "rseq_selftests"));
    for name in [
        "basic_test",
        "basic_test.own_registration",
        "param_test.membarrier",
        "param_test_mm_cid.spinlock",
    ] {
        assert!(
            rseq.iter().any(|(n, o)| n == name && o == "pass"),
            "{name}: {rseq:?}"
        );
    }
    for t in ["membarrier_single", "membarrier_multi"] {
        let cases = case_outcomes(test(cell, t));
        assert!(
            cases.len() >= 13 && cases.iter().all(|(_, o)| o == "pass"),
            "{t}: {cases:?}"
        );
    }
    // The orderings the rseq merge (2018) reported, which hold by a wide margin under TCG too.
    assert!(median(cell, "rseq.counter.rseq") < median(cell, "rseq.counter.atomic"));
    assert!(median(cell, "rseq.cpu_id.rseq_area") < median(cell, "rseq.cpu_id.getcpu_syscall"));
    // An IPI to the other vCPU costs more than none.
    assert!(
        median(cell, "membarrier.private_expedited.ipi")
            > median(cell, "membarrier.private_expedited.idle")
    );
    // mm_cid ran (SCHED_MM_CID=y was verified) and saw the guest's CPUs.
    assert_eq!(median(cell, "mm_cid.cpus.possible"), 2.0);
    assert!(median(cell, "mm_cid.gap.p50") > 0.0);
    // The kprobes timed task_mm_cid_work itself: it runs at most every
    // 100 ms per mm (MM_CID_SCAN_DELAY), so at most ~10 times a second,
    // and each run takes some microseconds.
    let rate = median(cell, "mm_cid.work.rate");
    assert!(rate > 1.0 && rate <= 11.0, "mm_cid.work.rate {rate}");
    assert!(median(cell, "mm_cid.work.us") > 0.0);

    // 6.1 has no mm_cid: the check and the mm_cid builds are skipped, by
    // name, and that is what the matrix expects.
    let (code, run, _) = run_cell(
        "6.1/seccomp-sync-wakeup/x86_64/tiny",
        "e2e-checks-6.1",
        CHECKS,
    );
    let cell = &run["cells"][0];
    assert_eq!(code, 0, "{}", serde_json::to_string_pretty(cell).unwrap());
    let mm = test(cell, "mm_cid");
    assert_eq!(mm["outcome"], "skip");
    assert!(
        mm["reason"]
            .as_str()
            .unwrap()
            .contains("no CONFIG_SCHED_MM_CID in this kernel"),
        "{mm}"
    );
    let rseq = case_outcomes(test(cell, "rseq_selftests"));
    assert!(
        rseq.iter()
            .any(|(n, o)| n == "param_test_mm_cid.spinlock" && o == "skip"),
        "{rseq:?}"
    );
    assert!(
        rseq.iter()
            .any(|(n, o)| n == "param_test.spinlock" && o == "pass"),
        "{rseq:?}"
    );
}

/// A 200 us busy wait planted at the start of task_mm_cid_work
/// (tests/checks/slow-cid-work, an incremental build of the 6.12 kernel
/// the checks use): the kprobes time every run, so the base-vs-series
/// comparison of mm_cid.work.us names it regressed, by far more than 100%
/// (each run is a few us to tens of us under TCG without it).
#[test]
fn a_task_mm_cid_work_slowed_on_purpose_is_named_regressed() {
    let (code, run, out) = run_cell(
        "6.12/*/x86_64/tiny",
        "e2e-slow-cid-work",
        &[
            "--matrix",
            "tests/checks/matrix.toml",
            "--test",
            "mm_cid",
            "--boots",
            "3",
        ],
    );
    let ids: Vec<&str> = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["6.12/base/x86_64/tiny", "6.12/slow-cid-work/x86_64/tiny"],
        "{}",
        out.display()
    );
    assert_eq!(code, 0, "{}", out.display());
    let work = run["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["new_cell"] == "6.12/slow-cid-work/x86_64/tiny" && c["new_metric"] == "mm_cid.work.us"
        })
        .unwrap_or_else(|| panic!("no mm_cid.work.us comparison: {}", run["comparisons"]));
    assert_eq!(work["verdict"], "regressed", "{work}");
    assert!(work["ci95_lo"].as_f64().unwrap() > 100.0, "{work}");
    // The summary names it too.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("mm_cid.work.us"), "{summary}");
}

/// A comparison still too noisy after the planned boots gets more boots,
/// base and twin alternating, 3 at a time, until it concludes or reaches
/// --max-boots; but never a boot its test would not run in. An A/A of
/// `rseq` judged against a minimum effect of 0.001% stays too noisy (2
/// boots a side: Welch's t has 2 df), and rseq runs in the first 3 boots
/// only: from 2 boots, 1 more each, then no more although --max-boots
/// allows 6.
#[test]
fn too_noisy_comparisons_get_alternating_boots_their_tests_run_in() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("matrix.toml")).unwrap();
    let decl = "[metric.rseq]\n# ns per operation.\nbetter = \"lower\"\nmin_effect_pct = 5.0\n";
    assert!(text.contains(decl), "matrix.toml's [metric.rseq] changed");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let matrix = tmp.join("matrix-rseq-strict.toml");
    std::fs::write(&matrix, text.replace(decl, &decl.replace("5.0", "0.001"))).unwrap();
    let out = out_dir("e2e-more-boots");
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["matrix", "--matrix"])
        .arg(&matrix)
        .args([
            "--aa",
            "--kernel",
            "6.1",
            "--arch",
            "x86_64",
            "--variant",
            "base",
        ])
        .args([
            "--variant",
            "base~aa",
            "--test",
            "rseq",
            "--boots",
            "2",
            "--max-boots",
            "6",
            "--out",
        ])
        .arg(&out)
        .current_dir(root)
        .output()
        .expect("running xtask");
    let (stdout, run) = finished(&o, &out);
    let seqs = |id: &str| -> Vec<u64> {
        let c = run["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap();
        c["boots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["seq"].as_u64().unwrap())
            .collect()
    };
    // Pairs back to back, the order turning every round: base, twin,
    // twin, base, base, twin.
    assert_eq!(seqs("6.1/base/x86_64/tiny"), [1, 4, 5], "{stdout}");
    assert_eq!(seqs("6.1/base~aa/x86_64/tiny"), [2, 3, 6], "{stdout}");
    // Each added boot is announced with the comparison that asked for it.
    assert!(
        stdout.contains("6.1/base~aa/x86_64/tiny: boot 3 (of up to 6): rseq.")
            && stdout.contains("is too noisy to judge"),
        "{stdout}"
    );
    let ab: Vec<&Value> = run["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "variants")
        .collect();
    assert!(!ab.is_empty());
    // Compared pair by pair.
    for c in ab {
        assert_eq!(
            (c["boots_base"].as_u64(), c["boots_new"].as_u64()),
            (Some(3), Some(3)),
            "{c}"
        );
        assert_eq!(c["p_test"], "paired-boot-medians", "{c}");
    }
}

/// Correctness boots run side by side where the host's CPUs hold the
/// guests: with 1-vCPU guests (run.smp = 1) on a host of 2 CPUs or more,
/// the two 6.1 x86_64 cells' boots of membarrier_single (no benchmark)
/// run at the same time by default, each pinned to a CPU of its own, and
/// results.json names the cell that booted beside each. On a 1-CPU host
/// the default is one at a time: `--jobs 2` asks for two anyway.
#[test]
fn correctness_boots_of_one_vcpu_guests_run_side_by_side() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("matrix.toml")).unwrap();
    assert!(
        text.contains("\nsmp = 2\n"),
        "matrix.toml's run.smp changed"
    );
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let matrix = tmp.join("matrix-1-vcpu.toml");
    std::fs::write(&matrix, text.replace("\nsmp = 2\n", "\nsmp = 1\n")).unwrap();
    let out = out_dir("e2e-side-by-side");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs: &[&str] = if cpus >= 2 { &[] } else { &["--jobs", "2"] };
    let cells = [
        "--kernel",
        "6.1",
        "--arch",
        "x86_64",
        "--test",
        "membarrier_single",
    ];
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["matrix", "--matrix"])
        .arg(&matrix)
        .args(cells)
        .args(jobs)
        .arg("--out")
        .arg(&out)
        .current_dir(root)
        .output()
        .expect("running xtask");
    let (said, run) = finished(&o, &out);
    let base = "6.1/base/x86_64/tiny";
    let series = "6.1/seccomp-sync-wakeup/x86_64/tiny";
    let boot = |id: &str| -> Value {
        let c = run["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no cell {id}: {said}"));
        assert_eq!(c["outcome"], "pass", "{c}");
        assert_eq!(test(c, "membarrier_single")["outcome"], "pass", "{c}");
        let boots = c["boots"].as_array().unwrap();
        assert_eq!(boots.len(), 1, "{c}");
        boots[0].clone()
    };
    let (a, b) = (boot(base), boot(series));
    assert_eq!(a["beside"], serde_json::json!([series]), "{a}");
    assert_eq!(b["beside"], serde_json::json!([base]), "{b}");
    if cpus >= 2 {
        assert_eq!(
            (a["pinned_vcpus"].as_u64(), b["pinned_vcpus"].as_u64()),
            (Some(1), Some(1))
        );
    }
    // Their times overlap: each started before the other ended
    // (`started` is to the second).
    let secs = |b: &Value| -> (f64, f64) {
        let s = b["started"].as_str().unwrap();
        let hms = &s[s.len() - 6..];
        let t: f64 = (0..3)
            .map(|i| hms[2 * i..2 * i + 2].parse::<f64>().unwrap() * [3600.0, 60.0, 1.0][i])
            .sum();
        (t, t + b["duration_s"].as_f64().unwrap())
    };
    let ((s1, e1), (s2, e2)) = (secs(&a), secs(&b));
    assert!(s2 < e1 + 1.0 && s1 < e2 + 1.0, "{a} {b}");
    assert!(
        e1 - s1 > 2.0 && e2 - s2 > 2.0,
        "a boot takes seconds: {a} {b}"
    );
    assert!((s1 - s2).abs() <= 1.0, "they started together: {a} {b}");
    // The same run on a host of one CPU (`taskset -c 0`): by default the
    // boots run one after the other, and name no cell beside them.
    let out1 = out_dir("e2e-one-cpu");
    let o = Command::new("taskset")
        .args(["-c", "0", env!("CARGO_BIN_EXE_xtask"), "matrix", "--matrix"])
        .arg(&matrix)
        .args(cells)
        .arg("--out")
        .arg(&out1)
        .current_dir(root)
        .output()
        .expect("running taskset (util-linux)");
    let (said, run) = finished(&o, &out1);
    let seqs: Vec<(u64, bool)> = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["boots"].as_array().unwrap().clone())
        .map(|b| (b["seq"].as_u64().unwrap(), b.get("beside").is_none()))
        .collect();
    assert_eq!(seqs, [(1, true), (2, true)], "{said}");
}

/// Kselftest targets matrix.toml does not declare, built by the tree's own
/// selftests Makefile and run as the kernel's runner would, on both
/// arches: `sigaltstack` (linked against the C library: the library and
/// its loader go into the guest with it) and `size` (static, no C
/// library). Neither has a `config` file, so the kernels are the base's.
/// Each program is a case, and the cases of its KTAP output are nested
/// under it; nothing else runs.
#[test]
fn kselftest_targets_run_as_the_kernel_builds_them_on_both_arches() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = out_dir("e2e-kselftest-targets");
    let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "matrix",
            "--kernel",
            "6.1",
            "--variant",
            "base",
            "--kselftest",
            "sigaltstack",
            "--kselftest",
            "size:get_size",
            "--kunitconfig",
            "lib/kunit/.kunitconfig",
            "--boots",
            "1",
            "--out",
        ])
        .arg(&out)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .output()
        .expect("running xtask");
    let (_, run) = finished(&o, &out);
    let cells = run["cells"].as_array().unwrap();
    let ids: Vec<&str> = cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["6.1/base/x86_64/tiny", "6.1/base/arm64/tiny"]);
    for cell in cells {
        let names: Vec<&str> = cell["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["sigaltstack", "size", "kunit"], "{}", cell["id"]);
        // The suites of lib/kunit/.kunitconfig, run by the kernel at boot
        // and read from debugfs: each suite a case, its cases under it.
        let t = test(cell, "kunit");
        assert_eq!(t["outcome"], "pass", "{t}");
        let cases = case_outcomes(t);
        let suites: Vec<&str> = cases
            .iter()
            .filter(|(n, _)| !n.contains('.'))
            .map(|(n, _)| n.as_str())
            .collect();
        for s in ["example", "kunit-try-catch-test", "string-stream-test"] {
            assert!(suites.contains(&s), "{s}: {suites:?}");
        }
        let case = |n: &str| cases.iter().find(|(c, _)| c == n).map(|(_, o)| o.as_str());
        assert_eq!(case("example.example_simple_test"), Some("pass"), "{t}");
        assert_eq!(case("example.example_skip_test"), Some("skip"), "{t}");
        assert_eq!(
            case("string-stream-test.string_stream_test_empty_on_creation"),
            Some("pass"),
            "{t}"
        );
        let cmdline = cell["reproduce"]["qemu"].as_str().unwrap_or_default();
        assert!(cmdline.contains(" kunit.filter_glob=*"), "{cmdline}");
        let again = cell["reproduce"]["xtask"].as_str().unwrap();
        assert!(
            again.contains(" --kunitconfig lib/kunit/.kunitconfig"),
            "{again}"
        );
        let t = test(cell, "sigaltstack");
        assert_eq!(t["outcome"], "pass", "{t}");
        let cases = case_outcomes(t);
        assert_eq!(cases[0], ("sas".to_string(), "pass".to_string()), "{t}");
        let nested: Vec<&(String, String)> = cases
            .iter()
            .filter(|(n, _)| n.starts_with("sas."))
            .collect();
        assert!(nested.len() >= 2, "{t}");
        assert!(nested.iter().all(|(_, o)| o == "pass"), "{t}");
        let t = test(cell, "size");
        assert_eq!(t["outcome"], "pass", "{t}");
        assert_eq!(
            case_outcomes(t)[0],
            ("get_size".to_string(), "pass".to_string()),
            "{t}"
        );
        // How the target was built: the tree's Makefile, the arch's compiler.
        let guest = cell["reproduce"]["guest"].as_array().unwrap();
        let make = guest
            .iter()
            .map(|g| g.as_str().unwrap())
            .find(|g| g.contains("TARGETS=sigaltstack"))
            .unwrap_or_else(|| panic!("{guest:?}"));
        assert!(
            make.starts_with("make -C ") && make.ends_with(" install"),
            "{make}"
        );
        if cell["arch"] == "arm64" {
            assert!(
                make.contains(" 'CROSS_COMPILE=aarch64-linux-gnu-' "),
                "{make}"
            );
        }
    }
}
