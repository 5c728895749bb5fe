//! QEMU: argument construction (pure, unit-tested), the accelerator probe,
//! and running a guest with a console cap and a hard timeout.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// Console logs beyond this are cut (and marked) so a flooding guest cannot
/// fill the disk; the guest keeps running.
pub const CONSOLE_CAP: u64 = 64 << 20;

/// The cap in force: `KMATRIX_CONSOLE_CAP` (bytes) overrides it for tests.
pub fn console_cap() -> u64 {
    std::env::var("KMATRIX_CONSOLE_CAP").ok().and_then(|v| v.parse().ok()).unwrap_or(CONSOLE_CAP)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    /// Multi-threaded TCG is fast but has raced runtime code patching
    /// (CONTEXT.md): results record which one ran.
    Tcg { multi_thread: bool },
}

impl Accel {
    pub fn qemu_arg(&self) -> String {
        match self {
            Accel::Kvm => "kvm".into(),
            Accel::Tcg { multi_thread: true } => "tcg,thread=multi".into(),
            Accel::Tcg { multi_thread: false } => "tcg,thread=single".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Guest {
    pub arch: String,
    pub accel: Accel,
    pub smp: u32,
    pub memory_mb: u32,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub extra_cmdline: Vec<String>,
    /// Where the results virtio port is written; None for interactive boots.
    pub results: Option<PathBuf>,
    pub interactive: bool,
}

pub fn binary(arch: &str) -> String {
    let name = match arch {
        "arm64" => "qemu-system-aarch64",
        _ => "qemu-system-x86_64",
    };
    // KMATRIX_QEMU_DIR picks another QEMU build (and lets tests make it vanish).
    match std::env::var("KMATRIX_QEMU_DIR") {
        Ok(dir) => format!("{dir}/{name}"),
        Err(_) => name.to_string(),
    }
}

pub fn console_device(arch: &str) -> &'static str {
    match arch {
        "arm64" => "ttyAMA0",
        _ => "ttyS0",
    }
}

pub fn cmdline(g: &Guest) -> String {
    let mut c = vec![
        format!("console={}", console_device(&g.arch)),
        // A panic reboots at once, and -no-reboot turns that into QEMU exiting.
        "panic=-1".to_string(),
        "rdinit=/init".to_string(),
    ];
    c.extend(g.extra_cmdline.iter().cloned());
    c.join(" ")
}

pub fn args(g: &Guest) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(|s| s.to_string()));
    match g.arch.as_str() {
        // GICv3 allows more than 8 vCPUs; pauth-impdef avoids TCG's slow
        // architected pointer-authentication algorithm.
        "arm64" => push(&["-M", "virt,gic-version=3", "-cpu", "max,pauth-impdef=on"]),
        _ => push(&["-cpu", "max"]),
    }
    push(&["-accel", &g.accel.qemu_arg()]);
    push(&["-smp", &g.smp.to_string(), "-m", &g.memory_mb.to_string()]);
    // No default devices: no NIC (the guest never has a network), no VGA.
    push(&["-nodefaults", "-no-user-config", "-display", "none", "-nic", "none"]);
    // A guest reboot (our init's final `reboot -f`, or panic=-1) ends QEMU.
    push(&["-no-reboot"]);
    push(&["-kernel", &g.kernel.to_string_lossy(), "-initrd", &g.initrd.to_string_lossy()]);
    push(&["-append", &cmdline(g)]);
    if g.interactive {
        // mon:stdio multiplexes the monitor: Ctrl-A X quits, Ctrl-A C monitor.
        push(&["-serial", "mon:stdio"]);
    } else {
        push(&["-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con"]);
    }
    if let Some(r) = &g.results {
        // Test results travel on their own virtio port, apart from the kernel
        // console, so a splat in the middle of a line cannot corrupt them.
        let bus = if g.arch == "arm64" { "virtio-serial-device" } else { "virtio-serial-pci" };
        push(&["-device", bus]);
        push(&["-chardev", &format!("file,id=results,path={}", r.display())]);
        push(&["-device", "virtserialport,chardev=results,name=kmatrix.results"]);
    }
    a
}

/// A shell-quoted command line, for `reproduce` and error messages.
pub fn shell_line(bin: &str, args: &[String]) -> String {
    let q = |s: &str| {
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_=,./:+@".contains(c)) {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    std::iter::once(bin).chain(args.iter().map(String::as_str)).map(q).collect::<Vec<_>>().join(" ")
}

#[derive(Debug)]
pub struct Exit {
    pub status: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub console_truncated: bool,
    pub stderr: String,
}

/// Runs QEMU, streaming its serial console into `console` (capped), killing
/// it after `timeout`. `on_line` sees each console line (progress display).
pub fn run(
    bin: &str,
    args: &[String],
    console: &Path,
    timeout: Duration,
    mut on_line: impl FnMut(&str) + Send,
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
    crate::signals::register_child(child.id());
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut file = std::fs::File::create(console)?;
    let result = std::thread::scope(|s| {
        let err_thread = s.spawn(move || {
            let mut buf = Vec::new();
            let _ = (&mut stderr).take(1 << 20).read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        });
        let out_thread = s.spawn(move || {
            let cap = console_cap();
            let mut written: u64 = 0;
            let mut truncated = false;
            let mut chunk = [0u8; 64 * 1024];
            let mut partial = Vec::new();
            loop {
                let n = match stdout.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if written < cap {
                    let take = n.min((cap - written) as usize);
                    let _ = file.write_all(&chunk[..take]);
                    written += take as u64;
                    if take < n {
                        truncated = true;
                        let _ = writeln!(file, "\n[kmatrix: console truncated at {cap} bytes]");
                    }
                    partial.extend_from_slice(&chunk[..take]);
                    while let Some(pos) = partial.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = partial.drain(..=pos).collect();
                        on_line(String::from_utf8_lossy(&line).trim_end());
                    }
                    if partial.len() > 4096 {
                        partial.clear();
                    }
                } else if !truncated {
                    // The cap fell exactly on a read boundary: the first byte
                    // past it is here.
                    truncated = true;
                    let _ = writeln!(file, "\n[kmatrix: console truncated at {cap} bytes]");
                }
                // Past the cap: keep draining so the guest never blocks on us.
            }
            truncated
        });
        let status = child.wait_timeout(timeout);
        let (status, timed_out) = match status {
            Ok(Some(st)) => (st.code(), false),
            Ok(None) | Err(_) => {
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.kill();
                let st = child.wait().ok().and_then(|s| s.code());
                (st, true)
            }
        };
        let truncated = out_thread.join().unwrap_or(false);
        let stderr = err_thread.join().unwrap_or_default();
        Exit { status, timed_out, elapsed: start.elapsed(), console_truncated: truncated, stderr }
    });
    crate::signals::unregister_child(child.id());
    Ok(result)
}

/// A 512-byte x86 boot sector that writes `K` to COM1 and exits QEMU via
/// isa-debug-exit. It proves guest code runs under an accelerator without
/// needing a kernel: on these machines /dev/kvm exists but guests hang.
fn probe_boot_sector() -> Vec<u8> {
    let code: &[u8] = &[
        0xBA, 0xF8, 0x03, // mov dx, 0x3f8
        0xB0, b'K', // mov al, 'K'
        0xEE, // out dx, al
        0xB0, 0x00, // mov al, 0
        0xE6, 0xF4, // out 0xf4, al  (isa-debug-exit)
        0xF4, // hlt
        0xEB, 0xFD, // jmp $-3
    ];
    let mut s = vec![0u8; 512];
    s[..code.len()].copy_from_slice(code);
    s[510] = 0x55;
    s[511] = 0xAA;
    s
}

/// Decides the accelerator for `arch` on this host: KVM only when a guest
/// provably runs under it within a few seconds, TCG otherwise. Returns the
/// choice and a one-line reason for the log. The probe's answer is kept for
/// the rest of this host boot (keyed by boot_id), so re-runs do not pay the
/// 5 s it takes to see a hang.
pub fn choose_accel(arch: &str, scratch: &Path) -> (Accel, String) {
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let memo = scratch.join(format!("accel-{arch}-{}", boot_id.trim()));
    if let Ok(text) = std::fs::read_to_string(&memo) {
        if let Some((accel, why)) = text.split_once('\n') {
            let a = if accel == "kvm" { Accel::Kvm } else { Accel::Tcg { multi_thread: true } };
            return (a, format!("{why} (probed earlier this host boot)"));
        }
    }
    let (a, why) = probe_accel(arch, scratch);
    if std::env::var("KMATRIX_ACCEL").is_err() {
        let _ = std::fs::write(&memo, format!("{}\n{why}", a.qemu_arg()));
    }
    (a, why)
}

fn probe_accel(arch: &str, scratch: &Path) -> (Accel, String) {
    let tcg = Accel::Tcg { multi_thread: true };
    if std::env::var("KMATRIX_ACCEL").as_deref() == Ok("tcg") {
        return (tcg, "KMATRIX_ACCEL=tcg".into());
    }
    let host_arch = if cfg!(target_arch = "x86_64") { "x86_64" } else { "other" };
    if arch != host_arch {
        return (tcg, format!("{arch} guest on a {host_arch} host"));
    }
    if std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_err() {
        return (tcg, "/dev/kvm is not usable".into());
    }
    let img = scratch.join("kvm-probe.img");
    if std::fs::write(&img, probe_boot_sector()).is_err() {
        return (tcg, "could not write the KVM probe image".into());
    }
    let args: Vec<String> = [
        "-accel", "kvm", "-nodefaults", "-display", "none", "-no-user-config",
        "-drive", &format!("file={},format=raw,if=floppy", img.display()),
        "-serial", "stdio", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let console = scratch.join("kvm-probe.log");
    match run("qemu-system-x86_64", &args, &console, Duration::from_secs(5), |_| {}) {
        Ok(e) if !e.timed_out && std::fs::read(&console).map(|c| c.contains(&b'K')).unwrap_or(false) => {
            (Accel::Kvm, format!("KVM probe guest ran in {:.1}s", e.elapsed.as_secs_f64()))
        }
        Ok(e) if e.timed_out => (tcg, "KVM probe guest hung for 5s (/dev/kvm present but not working)".into()),
        Ok(e) => (tcg, format!("KVM probe guest failed: {}", e.stderr.trim())),
        Err(e) => (tcg, format!("KVM probe could not start qemu: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guest(arch: &str) -> Guest {
        Guest {
            arch: arch.into(),
            accel: Accel::Tcg { multi_thread: true },
            smp: 2,
            memory_mb: 1024,
            kernel: "/k/Image".into(),
            initrd: "/k/initrd.gz".into(),
            extra_cmdline: vec![],
            results: Some("/r/results.log".into()),
            interactive: false,
        }
    }

    fn has_pair(a: &[String], flag: &str, value: &str) -> bool {
        a.windows(2).any(|w| w[0] == flag && w[1] == value)
    }

    #[test]
    fn x86_64_args() {
        let a = args(&guest("x86_64"));
        assert!(has_pair(&a, "-accel", "tcg,thread=multi"));
        assert!(has_pair(&a, "-append", "console=ttyS0 panic=-1 rdinit=/init"));
        assert!(has_pair(&a, "-device", "virtio-serial-pci"));
        assert!(has_pair(&a, "-chardev", "file,id=results,path=/r/results.log"));
        assert!(a.contains(&"-no-reboot".to_string()));
        assert!(has_pair(&a, "-nic", "none"));
        assert!(!a.iter().any(|x| x == "-M"));
    }

    #[test]
    fn arm64_args() {
        let a = args(&guest("arm64"));
        assert!(has_pair(&a, "-M", "virt,gic-version=3"));
        assert!(has_pair(&a, "-cpu", "max,pauth-impdef=on"));
        assert!(has_pair(&a, "-device", "virtio-serial-device"));
        assert!(a.iter().any(|x| x.starts_with("console=ttyAMA0")));
        assert!(binary("arm64").ends_with("qemu-system-aarch64"));
    }

    #[test]
    fn interactive_uses_a_multiplexed_stdio() {
        let mut g = guest("x86_64");
        g.interactive = true;
        g.results = None;
        let a = args(&g);
        assert!(has_pair(&a, "-serial", "mon:stdio"));
        assert!(!a.iter().any(|x| x.contains("virtserialport")));
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_line("q", &["-append".into(), "a b".into(), "it's".into()]), "q -append 'a b' 'it'\\''s'");
    }

    #[test]
    fn boot_sector_is_bootable() {
        let s = probe_boot_sector();
        assert_eq!(s.len(), 512);
        assert_eq!(&s[510..], &[0x55, 0xAA]);
    }

    /// Process handling with a stand-in for QEMU: a flood is capped, a hang
    /// is killed at the timeout. (The real QEMU runs in tests/e2e.rs.)
    #[test]
    fn run_caps_console_and_times_out() {
        let dir = std::env::temp_dir().join(format!("kmatrix-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("c.log");
        let e = run("sh", &["-c".into(), "echo one; echo two; sleep 30".into()], &log, Duration::from_millis(500), |_| {}).unwrap();
        assert!(e.timed_out);
        assert!(e.elapsed < Duration::from_secs(5));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        let mut lines = 0;
        let e = run("sh", &["-c".into(), "echo x; echo err >&2; exit 3".into()], &log, Duration::from_secs(10), |_| lines += 1).unwrap();
        assert_eq!((e.status, e.timed_out, e.stderr.as_str()), (Some(3), false, "err\n"));
        assert_eq!(lines, 1);
        // A flood whose size is an exact multiple of the read size still
        // gets its truncation marker.
        std::env::set_var("KMATRIX_CONSOLE_CAP", "65536");
        let e = run("sh", &["-c".into(), "head -c 1048576 /dev/zero".into()], &log, Duration::from_secs(20), |_| {}).unwrap();
        std::env::remove_var("KMATRIX_CONSOLE_CAP");
        assert!(e.console_truncated);
        let text = std::fs::read(&log).unwrap();
        assert!(text.len() < 65536 + 100 && String::from_utf8_lossy(&text).contains("console truncated at 65536 bytes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
