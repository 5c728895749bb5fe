//! QEMU: argument construction (pure, unit-tested) and running a guest with
//! a console cap and a hard timeout. The accelerator decision is boot::accel.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::host::proc;
/// The accelerator value lives in plan::arch; this path is kept for runner/.
use crate::plan::arch::Accel;
use crate::plan::arch::Arch;
use crate::util::shell_quote;

/// Console logs beyond this are cut (and marked) so a flooding guest cannot
/// fill the disk; the guest keeps running.
pub const CONSOLE_CAP: u64 = 64 << 20;

/// How QEMU is launched on this host: the boot side of the run-time
/// policy, decided once by the CLI and passed down.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// Pin each vCPU thread to a host CPU (default yes; `--no-pin` or
    /// `KMATRIX_PIN_VCPUS=0` turns it off). On a 2-core host, left to the
    /// host scheduler a busy vCPU thread shares a core with the other vCPU
    /// or QEMU's main loop now and then, and a benchmark's round trip takes
    /// 1.8x as long for seconds at a time (measured: same-CPU seccomp
    /// notify medians per 5 samples 57..120 us unpinned, 56..73 us pinned,
    /// 6.1 x86_64 under TCG).
    pub pin_vcpus: bool,
    /// Keep the host CPUs busy while a guest runs (default yes;
    /// `--no-keep-busy` or `KMATRIX_KEEP_BUSY=0` turns it off): one
    /// SCHED_IDLE thread per CPU xtask may use spins until QEMU exits.
    /// SCHED_IDLE runs only when nothing else wants the CPU and a waking
    /// thread preempts it at once, so QEMU loses next to nothing; what it
    /// buys is a host CPU that never goes idle. On a host that is itself a
    /// VM, an idle CPU is halted by the hypervisor and comes back slow:
    /// every time a vCPU thread sleeps (a guest CPU idles, a cross-CPU
    /// wakeup), its host CPU did, and the guest ran at about half speed for
    /// a while after. Measured (6.1 A/A under TCG, 6 boots a side,
    /// seccomp_notify): boot-to-boot SD of the median 9-35% without, 3-7%
    /// with; x86_64 cross-CPU round trip median 150-180 us without, 86-89
    /// us with.
    pub keep_busy: bool,
    /// Console bytes kept (`CONSOLE_CAP`; `KMATRIX_CONSOLE_CAP` for tests).
    pub console_cap: u64,
    /// Where QEMU's binaries are (`KMATRIX_QEMU_DIR`); None: PATH.
    pub qemu_dir: Option<PathBuf>,
    /// The host CPUs this guest's vCPUs are pinned to and kept busy, when
    /// it boots beside others (`--jobs`); None: every CPU xtask may use.
    pub cpus: Option<Vec<usize>>,
}

impl Default for Launch {
    fn default() -> Launch {
        Launch {
            pin_vcpus: true,
            keep_busy: true,
            console_cap: CONSOLE_CAP,
            qemu_dir: None,
            cpus: None,
        }
    }
}

/// Spins on `cpu` at SCHED_IDLE until `done`. False (and no spinning) when
/// the thread cannot be moved there or made SCHED_IDLE: a spinner at
/// normal priority would take half a CPU from QEMU.
fn keep_cpu_busy(cpu: usize, done: &AtomicBool) -> bool {
    if !set_affinity(Pid::from_raw(0), cpu) || !sched_idle() {
        return false;
    }
    while !done.load(Ordering::Relaxed) {
        for _ in 0..1000 {
            std::hint::spin_loop();
        }
    }
    true
}

/// Makes the calling thread SCHED_IDLE (nix has no sched_setscheduler).
fn sched_idle() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread, and `param` is a valid
    // sched_param that outlives the call; the kernel only reads it.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
}

/// The vCPU index of a QEMU thread named by `-name debug-threads=on`
/// ("CPU 3/TCG", "CPU 0/KVM"); None for its other threads.
pub fn vcpu_of_thread(comm: &str) -> Option<usize> {
    let rest = comm.trim_end().strip_prefix("CPU ")?;
    let (n, accel) = rest.split_once('/')?;
    if accel.is_empty() {
        return None;
    }
    n.parse().ok()
}

/// The host CPU vCPU `vcpu` is pinned to: vCPUs round-robin over the
/// CPUs this process may run on, so vCPU 0 and 1 of a 2-vCPU guest get a
/// core each.
pub fn host_cpu_for(vcpu: usize, allowed: &[usize]) -> Option<usize> {
    (!allowed.is_empty()).then(|| allowed[vcpu % allowed.len()])
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Moves thread `tid` (0: the calling one) onto `cpu` alone.
fn set_affinity(tid: Pid, cpu: usize) -> bool {
    let mut set = CpuSet::new();
    set.set(cpu).is_ok() && sched_setaffinity(tid, &set).is_ok()
}

/// Pins the vCPU threads of QEMU process `pid` as they appear, until
/// `want` of them are pinned, `done` is set or 60 s pass. Returns how many
/// it pinned.
fn pin_vcpu_threads(pid: u32, want: usize, allowed: &[usize], done: &AtomicBool) -> usize {
    let mut pinned: Vec<i32> = Vec::new();
    let start = Instant::now();
    while pinned.len() < want
        && !done.load(Ordering::Relaxed)
        && start.elapsed() < Duration::from_secs(60)
    {
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                if pinned.contains(&tid) {
                    continue;
                }
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                if let Some(cpu) = vcpu_of_thread(&comm).and_then(|v| host_cpu_for(v, allowed)) {
                    if set_affinity(Pid::from_raw(tid), cpu) {
                        pinned.push(tid);
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pinned.len()
}

#[derive(Debug, Clone)]
pub struct Guest {
    pub arch: Arch,
    pub accel: Accel,
    pub smp: u32,
    pub memory_mb: u32,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub extra_cmdline: Vec<String>,
    /// Where the results virtio port is written; None for interactive boots.
    pub results: Option<PathBuf>,
    pub interactive: bool,
    /// A gdbstub on this loopback port, the guest halted until a debugger
    /// continues it (`boot --gdb`).
    pub gdb: Option<u16>,
}

/// QEMU's binary for `arch`: from `launch.qemu_dir` (another QEMU build,
/// or one that tests make vanish), else found on PATH.
pub fn binary(arch: Arch, launch: &Launch) -> String {
    let name = arch.info().qemu_binary;
    match &launch.qemu_dir {
        Some(dir) => format!("{}/{name}", dir.display()),
        None => name.to_string(),
    }
}

pub fn cmdline(g: &Guest) -> String {
    let mut c = vec![
        format!("console={}", g.arch.info().console),
        // A panic reboots at once, and -no-reboot turns that into QEMU exiting.
        "panic=-1".to_string(),
        // A task asleep in the kernel (state D) past the hung task
        // detector's timeout (CONFIG_DEFAULT_HUNG_TASK_TIMEOUT, 120 s) panics
        // the guest after its report, instead of leaving the boot to wait
        // out the cell's budget: the re-created mm-cid-work series left
        // tasks in synchronize_rcu() for good, a 600 s "timeout" that hid
        // the known flaw (a sysctl set from the command line, 5.8+).
        "sysctl.kernel.hung_task_panic=1".to_string(),
        "rdinit=/init".to_string(),
    ];
    if g.gdb.is_some() {
        // The addresses of vmlinux's symbols are the running kernel's.
        c.push("nokaslr".to_string());
    }
    c.extend(g.extra_cmdline.iter().cloned());
    c.join(" ")
}

/// `-M` and `-cpu` for an arch: what the cells run, and so what the KVM
/// probe runs.
pub fn machine_args(arch: Arch) -> Vec<String> {
    let info = arch.info();
    let mut a = Vec::new();
    if let Some(m) = info.machine {
        a.extend(["-M".to_string(), m.to_string()]);
    }
    a.extend(["-cpu".to_string(), info.cpu.to_string()]);
    a
}

pub fn args(g: &Guest) -> Vec<String> {
    let mut a: Vec<String> = machine_args(g.arch);
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    push(&["-accel", &g.accel.qemu_arg()]);
    push(&["-smp", &g.smp.to_string(), "-m", &g.memory_mb.to_string()]);
    // No default devices: no NIC (the guest never has a network), no VGA.
    push(&[
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-nic",
        "none",
    ]);
    // A guest reboot (our init's final `reboot -f`, or panic=-1) ends QEMU.
    push(&["-no-reboot"]);
    // Named threads ("CPU 0/TCG", ...): the runner pins each vCPU thread
    // to a host CPU by that name, and `top -H` shows which vCPU is busy.
    push(&["-name", "kmatrix,debug-threads=on"]);
    push(&[
        "-kernel",
        &g.kernel.to_string_lossy(),
        "-initrd",
        &g.initrd.to_string_lossy(),
    ]);
    push(&["-append", &cmdline(g)]);
    if g.interactive {
        // mon:stdio multiplexes the monitor: Ctrl-A X quits, Ctrl-A C monitor.
        push(&["-serial", "mon:stdio"]);
    } else {
        push(&[
            "-chardev",
            "stdio,id=con,signal=off",
            "-serial",
            "chardev:con",
        ]);
    }
    if let Some(port) = g.gdb {
        push(&["-gdb", &format!("tcp:127.0.0.1:{port}"), "-S"]);
    }
    if let Some(r) = &g.results {
        // Test results travel on their own virtio port, apart from the kernel
        // console, so a splat in the middle of a line cannot corrupt them.
        push(&["-device", g.arch.info().virtio_serial]);
        push(&["-chardev", &format!("file,id=results,path={}", r.display())]);
        push(&[
            "-device",
            "virtserialport,chardev=results,name=kmatrix.results",
        ]);
    }
    a
}

/// A shell-quoted command line, for `reproduce` and error messages.
/// Words in QEMU's own option syntax (`key=value,...`, paths) stay bare, as
/// recorded reproducers always had them; any other word is quoted by shlex.
pub fn shell_line(bin: &str, args: &[String]) -> String {
    let word = |s: &str| {
        let bare = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_=,./:+@".contains(c));
        if bare {
            s.to_string()
        } else {
            shell_quote(s).into_owned()
        }
    };
    std::iter::once(bin)
        .chain(args.iter().map(String::as_str))
        .map(word)
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug)]
pub struct Exit {
    /// QEMU's exit code; None when a signal killed it (then `signal`).
    pub status: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// `run_until`'s callback stopped it (then `signal` is SIGKILL).
    pub stopped: bool,
    pub elapsed: Duration,
    pub console_truncated: bool,
    pub stderr: String,
    /// vCPU threads pinned to host CPUs (0 when pinning is off).
    pub pinned_vcpus: usize,
    /// Host CPUs kept busy by a SCHED_IDLE spinner while QEMU ran (0 when
    /// that is off: `keep_busy`).
    pub busy_cpus: usize,
}

/// Runs QEMU, streaming its serial console into `console` (capped), killing
/// it after `timeout`. `on_line` sees each console line (progress display);
/// returning true stops QEMU there (`Exit::stopped`).
pub fn run_until(
    bin: &str,
    args: &[String],
    console: &Path,
    timeout: Duration,
    launch: &Launch,
    on_line: impl FnMut(&str) -> bool + Send,
) -> std::io::Result<Exit> {
    let cpus = launch.cpus.clone().unwrap_or_else(allowed_cpus);
    let placement = Placement::of(args, launch.pin_vcpus, launch.keep_busy, &cpus);
    run_placed(
        bin,
        args,
        console,
        timeout,
        &placement,
        launch.console_cap,
        on_line,
    )
}

/// What is done about QEMU's threads while it runs.
#[derive(Debug, Clone, PartialEq, Default)]
struct Placement {
    /// vCPU threads to pin to host CPUs (0: none).
    pin_vcpus: usize,
    /// Host CPUs to keep busy with a SCHED_IDLE spinner each.
    busy: Vec<usize>,
    /// The host CPUs the vCPUs are pinned to, round-robin.
    cpus: Vec<usize>,
}

impl Placement {
    /// For a real guest (QEMU named its threads: `-name ...,debug-threads=on`)
    /// with pinning on: pin its `-smp` vCPUs; with keep-busy on: keep every
    /// CPU in `allowed` busy. Nothing for anything else (a stand-in).
    fn of(args: &[String], pin: bool, keep_busy: bool, allowed: &[usize]) -> Placement {
        let real_guest = args.iter().any(|a| a.contains("debug-threads=on"));
        let smp = || {
            args.iter()
                .position(|a| a == "-smp")
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.split(',').next()?.parse::<usize>().ok())
                .unwrap_or(1)
        };
        Placement {
            pin_vcpus: if pin && real_guest { smp() } else { 0 },
            busy: if keep_busy && real_guest {
                allowed.to_vec()
            } else {
                Vec::new()
            },
            cpus: allowed.to_vec(),
        }
    }
}

/// `run_until` with the placement decided.
fn run_placed(
    bin: &str,
    args: &[String],
    console: &Path,
    timeout: Duration,
    placement: &Placement,
    cap: u64,
    on_line: impl FnMut(&str) -> bool + Send,
) -> std::io::Result<Exit> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills every process holding
        // the console pipe, not just the first.
        .process_group(0)
        .spawn()?;
    crate::host::signals::register_child(child.id());
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let file = std::fs::File::create(console)?;
    let pid = child.id();
    let want_pinned = placement.pin_vcpus;
    let pin_on = &placement.cpus;
    let qemu_done = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let qemu_done = &qemu_done;
        let spinners: Vec<_> = placement
            .busy
            .iter()
            .map(|&cpu| s.spawn(move || keep_cpu_busy(cpu, qemu_done)))
            .collect();
        let pin_thread = s.spawn(move || {
            if want_pinned == 0 {
                0
            } else {
                pin_vcpu_threads(pid, want_pinned, pin_on, qemu_done)
            }
        });
        let err_thread = s.spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut stderr).take(1 << 20).read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        let out_thread = s.spawn(move || copy_console(stdout, file, cap, pid, on_line));
        let (status, timed_out) = proc::wait_or_kill(&mut child, timeout);
        qemu_done.store(true, Ordering::Relaxed);
        let pinned_vcpus = pin_thread.join().unwrap_or(0);
        let busy_cpus = spinners
            .into_iter()
            .map(|t| t.join().unwrap_or(false))
            .filter(|&b| b)
            .count();
        let (truncated, stopped) = out_thread.join().unwrap_or((false, false));
        Exit {
            status: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            timed_out,
            stopped,
            elapsed: start.elapsed(),
            console_truncated: truncated,
            stderr: err_thread.join().unwrap_or_default(),
            pinned_vcpus,
            busy_cpus,
        }
    });
    crate::host::signals::unregister_child(child.id());
    Ok(result)
}

/// Copies QEMU's console from `from` into `to` up to `cap` bytes, then a
/// truncation marker; past the cap it keeps draining, so the guest never
/// blocks on a full pipe. Each line within the cap goes to `on_line` until
/// it returns true: then QEMU's process group (`pid`) is killed. Returns
/// (truncated, stopped).
fn copy_console(
    mut from: impl Read,
    mut to: impl Write,
    cap: u64,
    pid: u32,
    mut on_line: impl FnMut(&str) -> bool,
) -> (bool, bool) {
    let mut written: u64 = 0;
    let mut truncated = false;
    let mut chunk = [0u8; 64 * 1024];
    let mut partial = Vec::new();
    let mut stopped = false;
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if written < cap {
            let take = n.min((cap - written) as usize);
            let _ = to.write_all(&chunk[..take]);
            written += take as u64;
            if take < n {
                truncated = true;
                let _ = writeln!(to, "\n[kmatrix: console truncated at {cap} bytes]");
            }
            partial.extend_from_slice(&chunk[..take]);
            while let Some(pos) = partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = partial.drain(..=pos).collect();
                if !stopped && on_line(String::from_utf8_lossy(&line).trim_end()) {
                    stopped = true;
                    proc::kill_group(pid);
                }
            }
            if partial.len() > 4096 {
                partial.clear();
            }
        } else if !truncated {
            // The cap fell exactly on a read boundary: the first byte
            // past it is here.
            truncated = true;
            let _ = writeln!(to, "\n[kmatrix: console truncated at {cap} bytes]");
        }
        // Past the cap: keep draining so the guest never blocks on us.
    }
    (truncated, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `run_until` that never stops QEMU itself.
    fn run(
        bin: &str,
        args: &[String],
        console: &Path,
        timeout: Duration,
        mut on_line: impl FnMut(&str) + Send,
    ) -> std::io::Result<Exit> {
        run_until(bin, args, console, timeout, &Launch::default(), move |l| {
            on_line(l);
            false
        })
    }

    /// The CPUs thread `tid` may run on.
    fn affinity(tid: Pid) -> Vec<usize> {
        let set = sched_getaffinity(tid).unwrap();
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap())
            .collect()
    }

    /// Thread `tid`'s scheduling policy: field 41 of its /proc stat.
    fn sched_policy(tid: Pid) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Fields after the command's closing parenthesis start at field 3.
        let after: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        after[41 - 3].parse().unwrap()
    }

    #[test]
    fn vcpu_threads_are_found_by_name_and_spread_over_host_cpus() {
        // Thread names of qemu-system-x86_64 8.x/7.x with debug-threads=on
        // (from /proc/PID/task/*/comm of a real TCG run).
        assert_eq!(vcpu_of_thread("CPU 0/TCG\n"), Some(0));
        assert_eq!(vcpu_of_thread("CPU 254/TCG"), Some(254));
        assert_eq!(vcpu_of_thread("CPU 1/KVM"), Some(1));
        for other in [
            "qemu-system-x86",
            "call_rcu",
            "worker",
            "CPU x/TCG",
            "CPU 0/",
            "CPU 0",
        ] {
            assert_eq!(vcpu_of_thread(other), None, "{other}");
        }
        assert_eq!(host_cpu_for(0, &[0, 1]), Some(0));
        assert_eq!(host_cpu_for(1, &[0, 1]), Some(1));
        assert_eq!(host_cpu_for(2, &[0, 1]), Some(0));
        // An affinity mask that is not 0..n (taskset -c 2,5 cargo xtask ...).
        assert_eq!(host_cpu_for(1, &[2, 5]), Some(5));
        assert_eq!(host_cpu_for(0, &[]), None);
    }

    /// The pinning itself, on real threads of this process named as QEMU
    /// names its vCPUs: each lands on the CPU `host_cpu_for` picks from
    /// this process's affinity, whatever the host has (1 CPU or many), and
    /// other threads are left alone.
    #[test]
    fn vcpu_threads_of_a_process_are_pinned_by_name() {
        use std::sync::atomic::AtomicBool;
        use std::sync::mpsc;
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        for name in ["CPU 0/TCG", "CPU 1/TCG", "not-a-vcpu"] {
            let (stop, tx) = (stop.clone(), tx.clone());
            handles.push(
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn(move || {
                        tx.send(nix::unistd::gettid()).unwrap();
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                    })
                    .unwrap(),
            );
        }
        let tids: Vec<Pid> = (0..3).map(|_| rx.recv().unwrap()).collect();
        let done = AtomicBool::new(false);
        let pid = std::process::id();
        assert_eq!(pin_vcpu_threads(pid, 2, &allowed, &done), 2);
        for &tid in &tids {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap();
            match vcpu_of_thread(&comm) {
                Some(v) => assert_eq!(
                    affinity(tid),
                    [host_cpu_for(v, &allowed).unwrap()],
                    "{comm}"
                ),
                None => assert_eq!(affinity(tid), allowed, "{comm}"),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        handles.into_iter().for_each(|h| h.join().unwrap());
        // Told QEMU is gone, it gives up at once with what it has.
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(pin_vcpu_threads(pid, 2, &allowed, &done), 0);
    }

    /// A keep-busy spinner on a real CPU of this process (the last it may
    /// use; the only one under `taskset -c 1`): while it runs it is
    /// SCHED_IDLE, on that CPU alone, and running; told QEMU is gone, it
    /// stops and says it ran.
    #[test]
    fn a_host_cpu_is_kept_busy_at_idle_priority_until_qemu_exits() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let cpu = *allowed_cpus().last().unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            let done = &done;
            let h = s.spawn(move || {
                tx.send(nix::unistd::gettid()).unwrap();
                keep_cpu_busy(cpu, done)
            });
            let tid = rx.recv().unwrap();
            let start = Instant::now();
            while sched_policy(tid) != libc::SCHED_IDLE {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "never became SCHED_IDLE"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(affinity(tid), [cpu]);
            // Spinning, not sleeping: its state in /proc is R (running or
            // runnable) every time we look.
            for _ in 0..5 {
                let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
                let state = stat
                    .rsplit(')')
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .next()
                    .unwrap();
                assert_eq!(state, "R", "{stat}");
                std::thread::sleep(Duration::from_millis(2));
            }
            done.store(true, Ordering::Relaxed);
            assert!(h.join().unwrap());
        });
        // A host where the spinner cannot go where it should (here: a CPU
        // this machine does not have) gets none, rather than a spinner at
        // normal priority somewhere else: false at once, `done` unset.
        let never = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            let never = &never;
            s.spawn(move || tx.send(keep_cpu_busy(CpuSet::count() - 1, never)).unwrap());
            let r = rx.recv_timeout(Duration::from_secs(5));
            never.store(true, Ordering::Relaxed); // a spinning thread must not hang the test
            assert_eq!(r, Ok(false));
        });
    }

    fn strings(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|a| a.to_string()).collect()
    }

    /// What is done about a guest's threads: a real guest (named threads)
    /// gets its -smp vCPUs pinned and every allowed CPU kept busy, each
    /// only when switched on; a stand-in without the name gets nothing.
    #[test]
    fn placement_of_a_real_guest_and_of_a_stand_in() {
        let placed = |pin_vcpus: usize, busy: &[usize], cpus: &[usize]| Placement {
            pin_vcpus,
            busy: busy.to_vec(),
            cpus: cpus.to_vec(),
        };
        let real = args(&guest(Arch::X86_64));
        assert_eq!(
            Placement::of(&real, true, true, &[0, 1]),
            placed(2, &[0, 1], &[0, 1])
        );
        assert_eq!(
            Placement::of(&real, false, true, &[2, 5]),
            placed(0, &[2, 5], &[2, 5])
        );
        assert_eq!(
            Placement::of(&real, true, false, &[0, 1]),
            placed(2, &[], &[0, 1])
        );
        assert_eq!(
            Placement::of(&real, false, false, &[0, 1]),
            placed(0, &[], &[0, 1])
        );
        let named = strings(&["-smp", "4,sockets=1", "-name", "kmatrix,debug-threads=on"]);
        assert_eq!(
            Placement::of(&named, true, true, &[3]),
            placed(4, &[3], &[3])
        );
        let no_smp = strings(&["-name", "kmatrix,debug-threads=on"]);
        assert_eq!(
            Placement::of(&no_smp, true, true, &[0]),
            placed(1, &[0], &[0])
        );
        let stand_in = strings(&["-smp", "2", "-c", "true"]);
        assert_eq!(
            Placement::of(&stand_in, true, true, &[0, 1]),
            placed(0, &[], &[0, 1])
        );
    }

    /// A run keeps busy the CPUs it is given while QEMU runs and counts the
    /// spinners that ran: two on a CPU of this process, none on a CPU this
    /// host does not have. The pinner gives up when QEMU exits.
    #[test]
    fn run_counts_the_cpus_it_kept_busy() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-busy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("c.log");
        let cpu = *allowed_cpus().last().unwrap();
        let run_with = |pin_vcpus: usize, busy: Vec<usize>| {
            let placement = Placement {
                pin_vcpus,
                busy,
                cpus: allowed_cpus(),
            };
            let sleep = strings(&["-c", "sleep 0.3"]);
            run_placed(
                "sh",
                &sleep,
                &log,
                Duration::from_secs(10),
                &placement,
                CONSOLE_CAP,
                |_| false,
            )
            .unwrap()
        };
        let e = run_with(0, vec![cpu, CpuSet::count() - 1, cpu]);
        assert_eq!((e.status, e.busy_cpus, e.pinned_vcpus), (Some(0), 2, 0));
        let e = run_with(1, vec![]);
        assert_eq!((e.status, e.busy_cpus, e.pinned_vcpus), (Some(0), 0, 0));
        assert!(e.elapsed < Duration::from_secs(5), "{e:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn qemu_threads_are_named_so_they_can_be_pinned() {
        let a = args(&guest(Arch::X86_64));
        assert!(has_pair(&a, "-name", "kmatrix,debug-threads=on"), "{a:?}");
    }

    fn guest(arch: Arch) -> Guest {
        Guest {
            arch,
            accel: Accel::Tcg { multi_thread: true },
            smp: 2,
            memory_mb: 1024,
            kernel: "/k/Image".into(),
            initrd: "/k/initrd.gz".into(),
            extra_cmdline: vec![],
            results: Some("/r/results.log".into()),
            interactive: false,
            gdb: None,
        }
    }

    fn has_pair(a: &[String], flag: &str, value: &str) -> bool {
        a.windows(2).any(|w| w[0] == flag && w[1] == value)
    }

    #[test]
    fn x86_64_args() {
        let a = args(&guest(Arch::X86_64));
        assert!(has_pair(&a, "-accel", "tcg,thread=multi"));
        assert!(has_pair(
            &a,
            "-append",
            "console=ttyS0 panic=-1 sysctl.kernel.hung_task_panic=1 rdinit=/init"
        ));
        assert!(has_pair(&a, "-device", "virtio-serial-pci"));
        assert!(has_pair(
            &a,
            "-chardev",
            "file,id=results,path=/r/results.log"
        ));
        assert!(a.contains(&"-no-reboot".to_string()));
        assert!(has_pair(&a, "-nic", "none"));
        assert!(!a.iter().any(|x| x == "-M"));
    }

    #[test]
    fn arm64_args() {
        let a = args(&guest(Arch::Arm64));
        assert!(has_pair(&a, "-M", "virt,gic-version=3"));
        assert!(has_pair(&a, "-cpu", "max,pauth-impdef=on"));
        assert!(has_pair(&a, "-device", "virtio-serial-device"));
        assert!(a.iter().any(|x| x.starts_with("console=ttyAMA0")));
        assert_eq!(
            binary(Arch::Arm64, &Launch::default()),
            "qemu-system-aarch64"
        );
        let other = Launch {
            qemu_dir: Some("/opt/qemu/bin".into()),
            ..Launch::default()
        };
        assert_eq!(
            binary(Arch::Arm64, &other),
            "/opt/qemu/bin/qemu-system-aarch64"
        );
    }

    #[test]
    fn interactive_uses_a_multiplexed_stdio() {
        let mut g = guest(Arch::X86_64);
        g.interactive = true;
        g.results = None;
        let a = args(&g);
        assert!(has_pair(&a, "-serial", "mon:stdio"));
        assert!(!a.iter().any(|x| x.contains("virtserialport")));
        assert!(!a.iter().any(|x| x == "-gdb" || x == "-S"));
        // --gdb: a gdbstub on loopback, the guest halted, no KASLR.
        g.gdb = Some(1234);
        let a = args(&g);
        assert!(has_pair(&a, "-gdb", "tcp:127.0.0.1:1234"));
        assert!(a.contains(&"-S".to_string()));
        assert!(has_pair(
            &a,
            "-append",
            "console=ttyS0 panic=-1 sysctl.kernel.hung_task_panic=1 rdinit=/init nokaslr"
        ));
    }

    /// QEMU's option words stay bare, as in every recorded reproducer;
    /// others are quoted so that a shell gives QEMU the same words.
    #[test]
    fn shell_quoting() {
        assert_eq!(
            shell_line("q", &strings(&["-append", "a b", "it's", ""])),
            "q -append 'a b' \"it's\" ''"
        );
        assert_eq!(
            shell_line("qemu-system-x86_64", &args(&guest(Arch::X86_64))),
            "qemu-system-x86_64 -cpu max -accel tcg,thread=multi -smp 2 -m 1024 \
             -nodefaults -no-user-config -display none -nic none -no-reboot \
             -name kmatrix,debug-threads=on -kernel /k/Image -initrd /k/initrd.gz \
             -append 'console=ttyS0 panic=-1 sysctl.kernel.hung_task_panic=1 rdinit=/init' \
             -chardev stdio,id=con,signal=off -serial chardev:con -device virtio-serial-pci \
             -chardev file,id=results,path=/r/results.log \
             -device virtserialport,chardev=results,name=kmatrix.results"
        );
        let words = strings(&["%s|", "-append", "a b", "it's $HOME", "", "x=1,y=2"]);
        let out = Command::new("sh")
            .arg("-c")
            .arg(shell_line("printf", &words))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "-append|a b|it's $HOME||x=1,y=2|"
        );
    }

    /// Process handling with a stand-in for QEMU: a flood is capped, a hang
    /// is killed at the timeout. (The real QEMU runs in tests/e2e.rs.)
    #[test]
    fn run_caps_console_and_times_out() {
        let dir = crate::util::test_tmp().join(format!("kmatrix-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("c.log");
        let e = run(
            "sh",
            &["-c".into(), "echo one; echo two; sleep 30".into()],
            &log,
            Duration::from_millis(500),
            |_| {},
        )
        .unwrap();
        assert!(e.timed_out);
        assert!(e.elapsed < Duration::from_secs(5));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        let mut lines = 0;
        let e = run(
            "sh",
            &["-c".into(), "echo x; echo err >&2; exit 3".into()],
            &log,
            Duration::from_secs(10),
            |_| lines += 1,
        )
        .unwrap();
        assert_eq!(
            (e.status, e.signal, e.timed_out, e.stderr.as_str()),
            (Some(3), None, false, "err\n")
        );
        // QEMU's own death (an assertion) is a signal, not an exit code.
        let e = run(
            "sh",
            &[
                "-c".into(),
                "echo 'qemu: assertion failed' >&2; kill -ABRT $$".into(),
            ],
            &log,
            Duration::from_secs(10),
            |_| {},
        )
        .unwrap();
        assert_eq!((e.status, e.signal, e.timed_out), (None, Some(6), false));
        // A caller can stop QEMU at a console line (the KVM probe does).
        let t = Instant::now();
        let e = run_until(
            "sh",
            &[
                "-c".into(),
                "echo booting; echo 'Linux version 6.1'; sleep 30".into(),
            ],
            &log,
            Duration::from_secs(20),
            &Launch::default(),
            |l| l.starts_with("Linux version"),
        )
        .unwrap();
        assert!(
            e.stopped && !e.timed_out && t.elapsed() < Duration::from_secs(10),
            "{e:?}"
        );
        assert_eq!(lines, 1);
        // A flood whose size is an exact multiple of the read size still
        // gets its truncation marker.
        let small = Launch {
            console_cap: 65536,
            ..Launch::default()
        };
        let e = run_until(
            "sh",
            &["-c".into(), "head -c 1048576 /dev/zero".into()],
            &log,
            Duration::from_secs(20),
            &small,
            |_| false,
        )
        .unwrap();
        assert!(e.console_truncated);
        let text = std::fs::read(&log).unwrap();
        assert!(
            text.len() < 65536 + 100
                && String::from_utf8_lossy(&text).contains("console truncated at 65536 bytes")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
