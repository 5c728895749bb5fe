//! When things break: each fault from the fault table becomes the right
//! cell outcome with its evidence, on real kernels and real QEMU
//! (tests/faults/faults.toml shares the default matrix's kernel, so the
//! kernel build is cached). Each test prints how long detection took.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

mod support;

static SERIAL: Mutex<()> = Mutex::new(());

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn xtask() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.current_dir(repo());
    c
}

struct Ran {
    code: i32,
    run: Option<Value>,
    stderr: String,
    secs: f64,
}

fn faults(name: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let _guard = serial();
    faults_unlocked(name, args, env)
}

/// One fault run at a time (they share the kernel cache and 2 cores).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `faults` for a test that already holds `serial()` across several steps.
fn faults_unlocked(name: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let out = out_dir(name);
    let t = Instant::now();
    let o = xtask()
        .args(["matrix", "--matrix", "tests/faults/faults.toml", "--out"])
        .arg(&out)
        .args(args)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("{stderr}");
    let run = std::fs::read_to_string(out.join("results.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    println!("fault {name}: detected in {secs:.1}s");
    Ran {
        code: o.status.code().unwrap_or(-1),
        run,
        stderr,
        secs,
    }
}

fn cell(r: &Ran) -> &Value {
    &r.run.as_ref().expect("results.json")["cells"][0]
}

fn test<'a>(cell: &'a Value, name: &str) -> &'a Value {
    cell["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name}: {cell}"))
}

fn evidence(cell: &Value) -> String {
    cell["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}\n{}\n", e["what"], e["excerpt"].as_str().unwrap_or("")))
        .collect()
}

/// The cells tests/e2e.rs builds, so these tests find their kernels cached.
/// Which kernel it is does not matter to the faults (shell tests).
const BASE: &str = "6.1/seccomp-sync-wakeup/x86_64/tiny";
const OTHER: &str = "6.1/base/arm64/tiny";

fn cache_root() -> PathBuf {
    std::env::var("KMATRIX_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(
                std::env::var("XDG_CACHE_HOME")
                    .unwrap_or_else(|_| format!("{}/.cache", std::env::var("HOME").unwrap())),
            )
            .join("kmatrix")
        })
}

#[test]
fn segfault_and_hang_fail_their_tests_and_the_rest_still_runs() {
    let r = faults(
        "segv-hang",
        &[
            "--cell", BASE, "--test", "segv", "--test", "hang", "--test", "after",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "fail", "{c}");
    assert_eq!(r.code, 1, "a failing test is a mismatch");
    let segv = test(c, "segv");
    assert_eq!(segv["outcome"], "fail");
    assert!(
        segv["reason"].as_str().unwrap().contains("SIGSEGV"),
        "{segv}"
    );
    assert!(
        segv["reason"].as_str().unwrap().contains("about to crash"),
        "{segv}"
    );
    let hang = test(c, "hang");
    assert_eq!(hang["outcome"], "timeout", "{hang}");
    assert!(
        hang["reason"].as_str().unwrap().contains("going to sleep"),
        "{hang}"
    );
    assert_eq!(test(c, "after")["outcome"], "pass");
}

#[test]
fn kernel_panic_is_a_crash_with_the_trace_and_the_test() {
    // --boots 3: a kernel that panicked is not booted again.
    let r = faults(
        "panic",
        &[
            "--cell", BASE, "--test", "panic", "--test", "after", "--boots", "3",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "crash", "{c}");
    let dir = out_dir_of(&r, "panic");
    assert!(dir.join("console.log").exists() && !dir.join("console.boot2.log").exists());
    let ev = evidence(c);
    assert!(
        ev.contains("Panic") && ev.contains("while test panic ran"),
        "{ev}"
    );
    assert!(ev.contains("sysrq"), "{ev}");
    assert_eq!(test(c, "panic")["outcome"], "crash");
    assert_eq!(test(c, "after")["outcome"], "skip", "not reached");
    assert!(r.stderr.contains("MISMATCH"));
}

/// The cell directory of BASE in a fault run.
fn out_dir_of(_r: &Ran, name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(name)
        .join("cells")
        .join(BASE.replace('/', "__"))
}

#[test]
fn repeat_boots_pool_benchmark_samples_by_boot() {
    let r = faults(
        "boots",
        &[
            "--cell",
            BASE,
            "--test",
            "seccomp_notify",
            "--test",
            "after",
            "--boots",
            "2",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "pass", "{c}");
    assert_eq!(test(c, "after")["outcome"], "pass");
    let dir = out_dir_of(&r, "boots");
    for f in [
        "console.log",
        "results.log",
        "console.boot2.log",
        "results.boot2.log",
    ] {
        assert!(dir.join(f).exists(), "{f} missing in {}", dir.display());
    }
    // Each boot's samples, in order: the bench's default 5 per configuration.
    let m = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "seccomp_notify.sync.unpinned")
        .unwrap();
    assert_eq!(m["boot_sizes"], serde_json::json!([5, 5]), "{m}");
    assert_eq!(m["samples"].as_array().unwrap().len(), 10);
    let within = r.run.as_ref().unwrap()["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "within")
        .cloned()
        .unwrap();
    assert_eq!(
        (within["boots_base"].as_u64(), within["boots_new"].as_u64()),
        (Some(2), Some(2)),
        "{within}"
    );
}

#[test]
fn guest_hanging_at_boot_is_a_timeout_with_the_console_tail() {
    let r = faults(
        "boot-hang",
        &[
            "--cell",
            BASE,
            "--test",
            "after",
            "--cmdline",
            "kmatrix.hang_boot",
            "--cell-timeout",
            "40",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "timeout", "{c}");
    assert!(
        evidence(c).contains("hanging before the first report"),
        "{}",
        evidence(c)
    );
    assert!(r.secs < 120.0);
}

#[test]
fn console_flood_is_capped_and_the_run_continues() {
    let r = faults(
        "flood",
        &["--cell", BASE, "--test", "flood", "--test", "after"],
        &[("KMATRIX_CONSOLE_CAP", "200000")],
    );
    let c = cell(&r);
    let console = std::fs::read_to_string(c["logs"]["console"].as_str().unwrap()).unwrap();
    let tail: String = console
        .chars()
        .rev()
        .take(2000)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert!(console.len() < 200_200, "{}", console.len());
    assert!(
        console.contains("console truncated at 200000 bytes"),
        "console is {} bytes; tests {}; tail:\n{tail}",
        console.len(),
        c["tests"]
    );
    assert!(evidence(c).contains("truncated"));
    assert_eq!(test(c, "flood")["outcome"], "pass");
    assert_eq!(test(c, "after")["outcome"], "pass");
}

#[test]
fn missing_qemu_is_an_infra_error_naming_the_command() {
    let r = faults(
        "no-qemu",
        &["--cell", BASE, "--test", "after"],
        &[("KMATRIX_QEMU_DIR", "/nonexistent")],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "infra-error", "{c}");
    assert!(
        evidence(c).contains("/nonexistent/qemu-system-x86_64"),
        "{}",
        evidence(c)
    );
}

#[test]
fn patch_that_does_not_apply_names_patch_file_and_hunk() {
    let r = faults("apply", &["--cell", "6.1/broken-series/x86_64/tiny"], &[]);
    let c = cell(&r);
    assert_eq!(c["outcome"], "apply-error", "{c}");
    let ev = evidence(c);
    assert!(ev.contains("0002-damaged-seccomp-sync-mode.patch"), "{ev}");
    assert!(ev.contains("kernel/seccomp.c"), "{ev}");
    assert_eq!(r.code, 1);
}

#[test]
fn dropped_config_option_is_a_config_error_naming_it() {
    let r = faults("config", &["--cell", "6.1/base/x86_64/impossible"], &[]);
    let c = cell(&r);
    assert_eq!(c["outcome"], "config-error", "{c}");
    assert!(evidence(c).contains("CONFIG_LOCKDEP=y"), "{}", evidence(c));
    assert!(evidence(c).contains("impossible.config"), "{}", evidence(c));
}

#[test]
fn compile_error_is_a_build_error_with_the_first_error() {
    let r = faults("build", &["--cell", "6.1/broken-build/x86_64/tiny"], &[]);
    let c = cell(&r);
    assert_eq!(c["outcome"], "build-error", "{c}");
    let ev = evidence(c);
    assert!(
        ev.contains("init/version.c") && ev.contains("injected build failure"),
        "{ev}"
    );
    assert!(Path::new(c["logs"]["build"].as_str().unwrap()).exists());
}

#[test]
fn bad_matrix_is_refused_before_any_work() {
    let dir = out_dir("bad-matrix");
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(repo().join("matrix.toml"))
        .unwrap()
        .replace("smp = 2", "smp = 2\nsmpp = 3");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, text).unwrap();
    let t = Instant::now();
    let o = xtask()
        .args(["matrix", "--no-setup", "--matrix"])
        .arg(&bad)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("bad.toml:") && err.contains("smpp"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn sigint_stops_qemu_and_keeps_finished_cells() {
    let _guard = serial();
    let out = out_dir("sigint");
    let marker = format!("kmatrix.sigint_test={}", std::process::id());
    let mut child = xtask()
        .args([
            "matrix",
            "--matrix",
            "tests/faults/faults.toml",
            "--cell",
            BASE,
            "--cell",
            OTHER,
        ])
        .args([
            "--test",
            "after",
            "--test",
            "hang",
            "--cmdline",
            &marker,
            "--out",
        ])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first cell is saved and the second one's QEMU runs.
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let saved = std::fs::read_to_string(out.join("results.json")).unwrap_or_default();
        let qemu_up = !qemu_with(&marker).is_empty();
        // Cells run in matrix order: base/arm64 first, then the series cell.
        if saved.contains(OTHER) && qemu_up {
            break;
        }
        assert!(Instant::now() < deadline, "second cell never started");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("xtask exited ({st}) before the second cell's QEMU ran");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let t = Instant::now();
    signal(child.id(), Signal::SIGINT);
    let st = child.wait().unwrap();
    println!("fault sigint: stopped in {:.1}s", t.elapsed().as_secs_f64());
    assert_eq!(st.code(), Some(2));
    // xtask waited for QEMU before it exited: nothing of it is left (a
    // process being reaped still shows in /proc for a moment).
    let gone = Instant::now() + Duration::from_secs(5);
    while !qemu_with(&marker).is_empty() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = qemu_with(&marker);
    assert!(left.is_empty(), "QEMU left running: pids {left:?}");
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let ids: Vec<&str> = run["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [OTHER]);
    // --resume finishes the interrupted run without redoing the first cell.
    let o = xtask()
        .args([
            "matrix",
            "--matrix",
            "tests/faults/faults.toml",
            "--cell",
            BASE,
            "--cell",
            OTHER,
        ])
        .args(["--test", "after", "--resume"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("already in results.json"), "{err}");
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(run["cells"].as_array().unwrap().len(), 2);
}

/// Pids of QEMU processes whose command line contains `marker` (read from
/// /proc: a minimal Debian has no pgrep).
fn qemu_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("qemu-system") && cmd.contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// Sends `sig` to `pid`.
fn signal(pid: u32, sig: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

#[test]
fn busy_cache_is_refused_with_no_wait() {
    let _guard = serial();
    let cache = cache_root();
    // The holder says when it has the lock: its first line.
    let mut holder = Command::new("flock")
        .arg(cache.join("lock"))
        .args(["sh", "-c", "echo locked; exec sleep 30"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, "locked\n");
    let o = xtask()
        .args(["matrix", "--no-setup", "--no-wait", "--cell", BASE, "--out"])
        .arg(out_dir("lock"))
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("in use by another run"), "{err}");
}

/// A host whose disk is all but full: the cache on a real 256 MiB tmpfs
/// (mounted by the test; root only) is refused before any work, naming
/// the cache, what is free and what to do; the run directory stays empty.
#[test]
fn a_cache_on_a_full_disk_is_refused_before_any_work() {
    let mnt = out_dir("small-disk");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256m", "kmatrix-test"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        support::missing(
            "a_cache_on_a_full_disk_is_refused_before_any_work",
            "mount -t tmpfs (root)",
        );
        return;
    }
    let out = out_dir("small-disk-run");
    let o = xtask()
        .args(["matrix", "--no-setup", "--cell", BASE, "--out"])
        .arg(&out)
        .env("KMATRIX_CACHE", mnt.join("cache"))
        .output()
        .unwrap();
    let _ = Command::new("umount").arg(&mnt).status();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "the cache {} has 0.2 GiB free, less than the 1.0 GiB a run needs at least",
            mnt.join("cache").display()
        )),
        "{err}"
    );
    assert!(err.contains("KMATRIX_CACHE"), "{err}");
    assert!(!out.exists(), "a run directory was made");
}

#[test]
fn corrupt_cached_kernel_is_detected_and_rebuilt() {
    // Find the cached image of the base cell and damage it. Hold the lock
    // throughout: another test's run in between would find the damage first
    // and rebuild (seen in a fresh-machine run).
    let _guard = serial();
    let first = faults_unlocked("corrupt-1", &["--cell", BASE, "--test", "after"], &[]);
    let c = cell(&first);
    assert_eq!(c["outcome"], "pass", "{c}");
    let key = c["build_key"].as_str().unwrap().to_string();
    let image = cache_root().join("kernels").join(&key).join("bzImage");
    let mut bytes = std::fs::read(&image).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&image, bytes).unwrap();
    let second = faults_unlocked("corrupt-2", &["--cell", BASE, "--test", "after"], &[]);
    assert!(
        second.stderr.contains("corrupt cache entry"),
        "{}",
        second.stderr
    );
    let c = cell(&second);
    assert_eq!(c["outcome"], "pass", "{c}");
    assert_eq!(c["timings"]["build_cached"], false);
    assert_eq!(c["build_key"].as_str().unwrap(), key);
}

/// A copy of the fake half-working-KVM QEMU in a directory of its own, so
/// its accelerator verdicts (kept per QEMU binary and host boot) start
/// fresh in every run of this suite. Returns (dir, PATH with it first).
fn fake_kvm_host(name: &str) -> (PathBuf, String) {
    let dir = out_dir(&format!("{name}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("qemu-system-x86_64");
    std::fs::copy(
        repo().join("tests/faults/fake-kvm/qemu-system-x86_64"),
        &fake,
    )
    .unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    (dir, path)
}

/// Fields of a cell as strings, for messages.
fn field<'a>(c: &'a Value, k: &str) -> &'a str {
    c[k].as_str().unwrap_or("")
}

/// The host a fresh machine turned out to be: /dev/kvm exists, a probe
/// that does not use the cells' CPU model runs, and then `-accel kvm -cpu
/// max` aborts QEMU (`failed to set MSR 0x10a`, an assertion). The fake
/// lets the probe through (it has no results port) and aborts every cell
/// under KVM: the cell must be booted again under TCG and pass, record why
/// KVM was given up, and never be called a crash.
#[test]
fn kvm_that_passes_the_probe_then_aborts_falls_back_to_tcg() {
    let (dir, path) = fake_kvm_host("kvm-abort-cells");
    let kvm = dir.join("kvm");
    std::fs::write(&kvm, "").unwrap();
    let log = dir.join("fake.log");
    let r = faults(
        "kvm-abort-cells",
        // The base cell: its expected failing case, beside the fallback
        // note, must leave it as expected (a fresh-machine-like run of the
        // default matrix once called this a mismatch).
        &[
            "--cell",
            "6.1/base/x86_64/tiny",
            "--test",
            "seccomp_bpf",
            "--test",
            "after",
        ],
        &[
            ("PATH", &path),
            ("KMATRIX_KVM_DEVICE", kvm.to_str().unwrap()),
            ("KMATRIX_FAKE_KVM", "abort-cells"),
            ("KMATRIX_FAKE_KVM_LOG", log.to_str().unwrap()),
        ],
    );
    let c = cell(&r);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(c["outcome"], "fail", "{c}\nfake QEMU calls:\n{calls}");
    assert_eq!(c["as_expected"], true, "{}", c["mismatches"]);
    assert_eq!(r.code, 0);
    assert_eq!(test(c, "after")["outcome"], "pass");
    assert!(
        calls.contains("action=exec-tcg"),
        "the probe ran through the fake: {calls}"
    );
    assert!(
        calls.contains("action=abort"),
        "a cell ran under KVM and QEMU aborted: {calls}"
    );
    assert!(field(c, "accel").starts_with("tcg"), "{c}");
    assert!(field(c, "kvm_given_up").contains("signal 6"), "{c}");
    assert!(field(c, "accel_reason").contains("KVM given up"), "{c}");
    let ev = evidence(c);
    assert!(
        ev.contains("failed to set MSR 0x10a"),
        "QEMU's stderr is the evidence: {ev}"
    );
    // The KVM attempt's console is kept beside the TCG boot's.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("kvm-abort-cells/cells/6.1__base__x86_64__tiny");
    assert!(dir.join("console.kvm.log").exists(), "{}", dir.display());
}

/// The same host, but the probe is the one cells run: with the fake
/// aborting under KVM whatever it runs, the probe itself says TCG, and no
/// cell ever starts under KVM.
#[test]
fn kvm_probe_runs_the_cells_cpu_model_and_says_tcg() {
    let (dir, path) = fake_kvm_host("kvm-abort-all");
    let kvm = dir.join("kvm");
    std::fs::write(&kvm, "").unwrap();
    let log = dir.join("fake.log");
    let r = faults(
        "kvm-abort-all",
        &["--cell", BASE, "--test", "after"],
        &[
            ("PATH", &path),
            ("KMATRIX_KVM_DEVICE", kvm.to_str().unwrap()),
            ("KMATRIX_FAKE_KVM", "abort-all"),
            ("KMATRIX_FAKE_KVM_LOG", log.to_str().unwrap()),
        ],
    );
    let c = cell(&r);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(c["outcome"], "pass", "{c}\n{calls}");
    assert!(field(c, "accel").starts_with("tcg"), "{c}");
    assert!(
        field(c, "accel_reason").contains("KVM probe")
            && field(c, "accel_reason").contains("signal 6"),
        "{c}"
    );
    assert!(
        c["kvm_given_up"].is_null(),
        "the probe caught it; no cell fell back: {c}"
    );
    assert_eq!(
        calls.matches("action=abort").count(),
        1,
        "only the probe met KVM: {calls}"
    );
}

/// KMATRIX_ACCEL=kvm always wins over the probe and its memo; and when
/// QEMU then dies under KVM, the cell still falls back to TCG.
#[test]
fn forced_kvm_is_obeyed_and_still_falls_back() {
    let (_dir, path) = fake_kvm_host("kvm-forced");
    let r = faults(
        "kvm-forced",
        &["--cell", BASE, "--test", "after"],
        &[
            ("PATH", &path),
            ("KMATRIX_ACCEL", "kvm"),
            ("KMATRIX_FAKE_KVM", "abort-all"),
        ],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "pass", "{c}");
    assert!(field(c, "kvm_given_up").contains("signal 6"), "{c}");
    // A value that is neither is refused before any work.
    let o = xtask()
        .args(["list"])
        .env("KMATRIX_ACCEL", "kvmm")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KMATRIX_ACCEL=kvmm"));
}

/// QEMU killed under a running test (the OOM killer, a user's kill -9) is
/// QEMU's failure: infra-error with the signal, not a kernel crash.
#[test]
fn qemu_killed_mid_run_is_an_infra_error() {
    let _guard = serial();
    let out = out_dir("qemu-killed");
    let marker = format!("kmatrix.killed_test={}", std::process::id());
    let mut child = xtask()
        .args([
            "matrix",
            "--matrix",
            "tests/faults/faults.toml",
            "--cell",
            BASE,
            "--test",
            "longsleep",
            "--test",
            "after",
            "--cmdline",
            &marker,
            "--out",
        ])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = out
        .join("cells")
        .join(BASE.replace('/', "__"))
        .join("results.log");
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        if std::fs::read_to_string(&results)
            .unwrap_or_default()
            .contains("START longsleep")
        {
            break;
        }
        assert!(Instant::now() < deadline, "longsleep never started");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("xtask exited ({st}) before the test started");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for pid in qemu_with(&marker) {
        signal(pid, Signal::SIGKILL);
    }
    let st = child.wait().unwrap();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let c = &run["cells"][0];
    assert_eq!(c["outcome"], "infra-error", "{c}");
    assert_eq!(st.code(), Some(1));
    let ev = evidence(c);
    assert!(
        ev.contains("killed by signal 9") && ev.contains("not the guest's"),
        "{ev}"
    );
    assert_eq!(test(c, "longsleep")["outcome"], "infra-error", "{c}");
}

/// A results.json the harness cannot read (damaged, or another schema) is
/// never replaced: --resume and --out refuse with exit 2 and the reason.
#[test]
fn unreadable_results_json_is_refused_not_overwritten() {
    let _guard = serial();
    for (name, text) in [
        (
            "damaged",
            "{\"schema\": 2, \"cells\": [ {\"id\": \"6.1/base",
        ),
        (
            "old-schema",
            "{\"schema\": 1, \"started\": \"x\", \"cells\": []}",
        ),
    ] {
        let out = out_dir(&format!("unreadable-{name}"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("results.json"), text).unwrap();
        for flag in ["--resume", "--out"] {
            let o = xtask()
                .args([
                    "matrix",
                    "--no-setup",
                    "--matrix",
                    "tests/faults/faults.toml",
                    "--cell",
                    BASE,
                    "--test",
                    "after",
                    flag,
                ])
                .arg(&out)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} {flag}: {err}");
            assert!(
                err.contains("refusing to overwrite") && err.contains("results.json"),
                "{name} {flag}: {err}"
            );
            assert_eq!(
                std::fs::read_to_string(out.join("results.json")).unwrap(),
                text,
                "{name} {flag}: the file was changed"
            );
        }
    }
}

/// A BUG: report the kernel survives (a real one, from a real kernel: the
/// splat patch's prctl prints what __might_resched() prints) fails the test
/// that ran, with the splat as evidence; it is not a crash, and the tests
/// after it run. The splat kernel differs from base in kernel/sys.c only:
/// its build reuses the shared O= dir (timings.build_incremental).
#[test]
fn non_fatal_bug_splat_fails_the_test_not_the_kernel() {
    let r = faults(
        "splat",
        &[
            "--cell",
            "6.1/splat/x86_64/tiny",
            "--test",
            "splat",
            "--test",
            "after",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "fail", "{c}");
    let t = test(c, "splat");
    assert_eq!(t["outcome"], "fail", "{t}");
    assert!(
        t["reason"]
            .as_str()
            .unwrap()
            .contains("BUG: sleeping function called from invalid context"),
        "{t}"
    );
    assert_eq!(test(c, "after")["outcome"], "pass");
    let ev = evidence(c);
    assert!(
        ev.contains("while test splat ran") && ev.contains("the kernel went on"),
        "{ev}"
    );
    assert!(
        ev.contains("dump_stack") || ev.contains("Call Trace"),
        "{ev}"
    );
    let tm = &c["timings"];
    println!(
        "splat variant build: {:.1}s, cached {}, incremental {} (a cold build here is ~230 s)",
        tm["build_s"].as_f64().unwrap_or(0.0),
        tm["build_cached"],
        tm["build_incremental"]
    );
    if tm["build_cached"] == false {
        assert_eq!(
            tm["build_incremental"], true,
            "the O= dir held an earlier variant's build: {tm}"
        );
    }
}

/// A perf that does not build fails its test, with make's words and the
/// command; it does not stop the cell: the kernel boots and the other
/// tests run.
#[test]
fn a_perf_that_does_not_build_fails_its_test_not_the_cell() {
    let r = faults(
        "brokenperf",
        &[
            "--cell",
            "6.1/seccomp-sync-wakeup/x86_64/tiny",
            "--test",
            "brokenperf",
            "--test",
            "after",
        ],
        &[],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let c = cell(&r);
    assert_eq!(c["outcome"], "fail", "{c}");
    let t = test(c, "brokenperf");
    assert_eq!(t["outcome"], "fail", "{t}");
    let why = t["reason"].as_str().unwrap();
    assert!(why.contains("tools/perf did not build"), "{why}");
    assert!(
        why.contains("tools/perf/bench 'O="),
        "the make command: {why}"
    );
    assert!(why.contains("make"), "{why}");
    assert_eq!(test(c, "after")["outcome"], "pass", "{c}");
    assert!(
        r.stderr
            .contains("test brokenperf: the tree's tools/perf did not build for x86_64"),
        "{}",
        r.stderr
    );
}

/// Every host step has a bound. Scaled down to almost nothing, the first
/// bounded step of a cell that is not cached runs out: the cell is an
/// infra-error (or build-error) naming the step, not a hang.
#[test]
fn a_host_step_that_runs_out_of_time_is_named() {
    let r = faults(
        "step-timeout",
        &["--cell", "6.1/broken-series/x86_64/tiny"],
        &[("KMATRIX_STEP_TIMEOUT_SCALE", "0.00001")],
    );
    let c = cell(&r);
    let ev = evidence(c);
    assert!(
        matches!(
            c["outcome"].as_str(),
            Some("infra-error" | "build-error" | "apply-error")
        ),
        "{c}"
    );
    assert!(ev.contains("timed out after"), "{ev}");
    assert!(r.secs < 120.0, "{}", r.secs);
}

/// An oops the kernel cannot recover from without panicking (the splat
/// patch's prctl with arg2 = 1: an oops in a task already exiting, as the
/// re-created mm-cid-work series hit inside seccomp_bpf) leaves its task
/// unkillable: the test would wait out its timeout (200 s, 600 s under TCG),
/// and the cell its 240 s budget. The harness stops
/// QEMU at the kernel's "Fixing recursive fault but reboot is needed!"
/// instead: a crash, with the oops and that line as evidence.
#[test]
fn an_oops_in_an_exiting_task_stops_the_guest_at_once() {
    let r = faults(
        "deadtask",
        &[
            "--cell",
            "6.1/splat/x86_64/tiny",
            "--test",
            "deadtask",
            "--test",
            "after",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "crash", "{c}");
    let t = test(c, "deadtask");
    assert_eq!(t["outcome"], "crash", "{t}");
    assert_eq!(test(c, "after")["outcome"], "skip", "not reached: {c}");
    let ev = evidence(c);
    assert!(
        ev.contains("stopped by the harness")
            && ev.contains("Fixing recursive fault but reboot is needed!"),
        "{ev}"
    );
    assert!(ev.contains("NULL pointer") || ev.contains("Oops"), "{ev}");
    // Stopped, not waited out: the boot ended well inside the cell's 240 s.
    let boot = &c["boots"][0];
    let took = boot["duration_s"].as_f64().unwrap();
    println!("deadtask boot: {took:.1} s (the cell's budget: 240 s)");
    assert!(took < 150.0, "{boot}");
}

/// A task asleep in the kernel for good (state D, as tasks waiting for an
/// RCU grace period that never ends): the hung task detector reports it,
/// and with the harness's sysctl.kernel.hung_task_panic=1 the guest panics
/// there. A crash with the report as evidence, in seconds, rather than a
/// "timeout" after the cell's whole budget that hides what the kernel said.
#[test]
fn a_task_hung_in_the_kernel_panics_the_guest_with_the_report() {
    let r = faults(
        "hungtask",
        &[
            "--cell",
            "6.1/splat/x86_64/tiny",
            "--test",
            "hungtask",
            "--test",
            "after",
        ],
        &[],
    );
    let c = cell(&r);
    assert_eq!(c["outcome"], "crash", "{c}");
    let t = test(c, "hungtask");
    assert_eq!(t["outcome"], "crash", "{t}");
    assert_eq!(test(c, "after")["outcome"], "skip", "not reached: {c}");
    let ev = evidence(c);
    assert!(
        ev.contains("HungTask at console line")
            && ev.contains("while test hungtask ran (not fatal by itself): INFO: task hungtask:")
            && ev.contains("blocked for more than 2 seconds"),
        "{ev}"
    );
    assert!(
        ev.contains("(fatal): Kernel panic - not syncing: hung_task: blocked tasks"),
        "the panic: {ev}"
    );
    let boot = &c["boots"][0];
    let took = boot["duration_s"].as_f64().unwrap();
    println!("hungtask boot: {took:.1} s (the cell's budget: 240 s)");
    assert!(took < 150.0, "{boot}");
    // The reproducer boots the same way.
    assert!(
        c["reproduce"]["qemu"]
            .as_str()
            .unwrap()
            .contains("sysctl.kernel.hung_task_panic=1"),
        "{c}"
    );
}

/// A host where installing QEMU would remove a package (a backported
/// qemu-utils, as fresh machines of this kind have): without a terminal
/// `setup` names it and changes nothing; at a terminal it asks; with
/// `--yes` it installs and says what apt removes.
/// apt, dpkg and dpkg-query are the stand-ins of tests/faults/fake-apt.
#[test]
fn setup_names_a_package_it_would_remove_and_removes_it_only_with_yes() {
    if !nix_root() {
        support::missing(
            "setup_names_a_package_it_would_remove_and_removes_it_only_with_yes",
            "root (sudo would not run the stand-in apt-get)",
        );
        return;
    }
    let dir = out_dir("fake-apt");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["apt-get", "apt-cache", "dpkg", "dpkg-query"] {
        std::fs::copy(
            repo().join("tests/faults/fake-apt/fake-apt"),
            bin.join(name),
        )
        .unwrap();
    }
    let log = dir.join("apt.log");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    // The stand-in apt installs nothing, so the tools setup makes after the
    // packages must already be there: a cache of its own whose venv and
    // node_modules carry the stamps of the pinned versions.
    let cache = dir.join("cache");
    let src = std::fs::read_to_string(repo().join("xtask/src/host/tools.rs")).unwrap();
    for (sub, constant) in [("py", "PYTHON_PACKAGES"), ("node", "NPM_PACKAGES")] {
        let re = regex::Regex::new(&format!(r"{constant}: &\[&str\] = &\[([^\]]*)\]")).unwrap();
        let list = &re
            .captures(&src)
            .unwrap_or_else(|| panic!("{constant} in tools.rs"))[1];
        let pins: Vec<&str> = list
            .split(',')
            .map(|p| p.trim().trim_matches('"'))
            .filter(|p| !p.is_empty())
            .collect();
        assert!(!pins.is_empty(), "{constant}: {list}");
        let d = cache.join("tools").join(sub);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(".kmatrix-stamp"), pins.join("\n")).unwrap();
    }
    let setup = |args: &[&str]| {
        let o = xtask()
            .arg("setup")
            .args(args)
            .env("PATH", &path)
            .env("KMATRIX_CACHE", &cache)
            .env("FAKE_APT_LOG", &log)
            .env("FAKE_APT_STATE", &dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        eprintln!("setup {args:?}: {:?}\n{err}", o.status.code());
        (o.status.code(), err)
    };
    let (code, err) = setup(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "installing qemu-system-x86 would remove qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1] from this host: nothing was changed"
        ),
        "{err}"
    );
    assert!(err.contains("Run again with --yes"), "{err}");
    for step in ["Python venv", "npm install"] {
        assert!(
            !err.contains(step),
            "the stamped tools were made again:\n{err}"
        );
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("apt-get install -s"), "{calls}");
    assert!(
        !calls.contains("install -y"),
        "installed without a yes:\n{calls}"
    );
    assert!(!dir.join("installed").exists());

    // At a terminal (a pseudo-terminal from util-linux's `script`, which
    // passes on what it reads), setup asks the way apt does: a no changes
    // nothing, a yes installs and says what apt removed.
    let at_terminal = |answer: &str| {
        let mut c = Command::new("script");
        c.args([
            "-qec",
            &format!("'{}' setup", env!("CARGO_BIN_EXE_xtask")),
            "/dev/null",
        ])
        .current_dir(repo())
        .env("PATH", &path)
        .env("KMATRIX_CACHE", &cache)
        .env("FAKE_APT_LOG", &log)
        .env("FAKE_APT_STATE", &dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("util-linux's script runs");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), answer.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout).replace('\r', "");
        eprintln!(
            "setup at a terminal, answering {answer:?}: {:?}\n{out}",
            o.status.code()
        );
        (o.status.code(), out)
    };
    let (code, out) = at_terminal("n\n");
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("kmatrix setup: installing qemu-system-x86 would remove qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1] from this host (apt replaces")
            && out.contains("Remove it and go on? [y/N] ")
            && out.contains("would remove qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1] from this host: nothing was changed (the answer was no)"),
        "{out}"
    );
    assert!(!dir.join("installed").exists());
    let (code, out) = at_terminal("y\n");
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("Remove it and go on? [y/N] ")
            && out.contains(
                "kmatrix setup: yes: apt removes qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1]"
            ),
        "{out}"
    );
    assert!(dir.join("installed").exists());
    std::fs::remove_file(dir.join("installed")).unwrap();

    let (code, err) = setup(&["--yes"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("--yes: apt removes qemu-utils [1:10.0.2+ds-2+deb13u1~bpo12+1]"),
        "{err}"
    );
    for step in ["Python venv", "npm install"] {
        assert!(
            !err.contains(step),
            "the stamped tools were made again:\n{err}"
        );
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains("apt-get install -y -q --no-install-recommends qemu-system-x86"),
        "{calls}"
    );
}

fn nix_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `list --tests`: what a run with the same selection would boot, the
/// tree's own tests declared by their flags as `matrix` declares them.
#[test]
fn list_shows_each_cell_with_the_tests_a_run_would_boot() {
    let o = xtask()
        .args([
            "list",
            "--tests",
            "--kernel",
            "6.1",
            "--arch",
            "x86_64",
            "--kselftest",
            "pidfd",
            "--kunit",
            "cmdline*",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "6.1/base/x86_64/tiny pidfd kunit\n6.1/seccomp-sync-wakeup/x86_64/tiny pidfd kunit\n"
    );
    let o = xtask()
        .args([
            "list",
            "--tests",
            "--json",
            "--cell",
            "6.12/base/x86_64/wide",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "{\"cell\":\"6.12/base/x86_64/wide\",\"tests\":[\"mm_cid\"]}\n"
    );
    let o = xtask().args(["list", "--kunit", "a b"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--kunit a b: `a b` is no KUnit filter glob"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
