//! Which accelerator a cell boots under, and why.
//!
//! /dev/kvm on these hosts cannot be trusted (CONTEXT.md): on one machine a
//! guest hung forever at 100% sys, on another a boot-sector probe ran and
//! then `-accel kvm -cpu max` aborted QEMU at once (`failed to set MSR
//! 0x10a`, an assertion in kvm_buf_set_msrs). So:
//!
//! - `KMATRIX_ACCEL=tcg|kvm` always wins (no probe, no memo).
//! - Otherwise KVM is used only after a probe that runs what the cells run:
//!   the cell's own kernel, with the cell's `-M` and `-cpu`, under
//!   `-accel kvm`, to the kernel's first console line. The verdict is kept
//!   for this host boot, keyed by the QEMU binary and the machine args, so a
//!   different QEMU (or a fake one on PATH) is probed afresh.
//! - Whatever the probe said, a cell whose QEMU dies under KVM before the
//!   guest's first report is booted again under TCG (runner), and `give_up`
//!   makes the rest of the run, and later runs this host boot, use TCG.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::boot::qemu::{self, Guest};
use crate::host::cache::KeyBuilder;
use crate::plan::arch::{Accel, Arch};

/// The chosen accelerator and a one-line reason (recorded per cell).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub accel: Accel,
    pub why: String,
}

/// How long the probe waits for the kernel's first console line under KVM.
/// A working KVM prints it in well under a second; TCG in about 2 s.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// `KMATRIX_ACCEL`, parsed. Err: a value that is neither (refused up front).
pub fn forced() -> Result<Option<Accel>, String> {
    match std::env::var("KMATRIX_ACCEL").ok().as_deref() {
        None | Some("") => Ok(None),
        Some("kvm") => Ok(Some(Accel::Kvm)),
        Some("tcg") | Some("tcg,thread=multi") => Ok(Some(Accel::Tcg { multi_thread: true })),
        Some("tcg,thread=single") => Ok(Some(Accel::Tcg {
            multi_thread: false,
        })),
        Some(other) => Err(format!(
            "KMATRIX_ACCEL={other}: expected kvm, tcg, tcg,thread=multi or tcg,thread=single"
        )),
    }
}

/// The KVM device; `KMATRIX_KVM_DEVICE` points elsewhere (fault tests
/// pretend a host has one).
fn kvm_device() -> PathBuf {
    std::env::var_os("KMATRIX_KVM_DEVICE")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/dev/kvm".into())
}

/// Resolves `bin` on PATH (or as given when it has a slash).
pub fn resolve(bin: &str) -> Option<PathBuf> {
    if bin.contains('/') {
        return Path::new(bin).is_file().then(|| PathBuf::from(bin));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
}

/// Per-run accelerator state: one decision per arch, changed only by
/// `give_up` (QEMU died under KVM in a cell).
pub struct Chooser {
    scratch: PathBuf,
    decided: RefCell<HashMap<Arch, Choice>>,
}

impl Chooser {
    pub fn new(scratch: PathBuf) -> Chooser {
        Chooser {
            scratch,
            decided: RefCell::new(HashMap::new()),
        }
    }

    /// The memo file for (host boot, QEMU binary, machine args).
    fn memo(&self, arch: Arch, bin: &str) -> PathBuf {
        let boot_id =
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let mut k = KeyBuilder::new("accel-probe");
        k.add("boot", boot_id.trim().as_bytes())
            .add("arch", arch.name().as_bytes());
        k.add("machine", qemu::machine_args(arch).join(" ").as_bytes());
        match resolve(bin) {
            Some(p) => {
                let meta = std::fs::metadata(&p).ok();
                k.add("qemu", p.to_string_lossy().as_bytes());
                k.add(
                    "qemu-id",
                    format!(
                        "{:?} {:?}",
                        meta.as_ref().map(|m| m.len()),
                        meta.and_then(|m| m.modified().ok())
                    )
                    .as_bytes(),
                );
            }
            None => {
                k.add("qemu", bin.as_bytes());
            }
        }
        self.scratch
            .join(format!("accel-{arch}-{}", &k.finish()[..16]))
    }

    /// Decides for `arch`. Only when KVM is possible at all and nothing is
    /// known yet, `probe_guest` makes the probe's guest (the cell's kernel
    /// with its machine and CPU) and the probe runs.
    pub fn choose(
        &self,
        arch: Arch,
        probe_guest: impl FnOnce() -> anyhow::Result<Guest>,
    ) -> Choice {
        if let Some(c) = self.decided.borrow().get(&arch) {
            return c.clone();
        }
        let c = self.decide(arch, probe_guest);
        self.decided.borrow_mut().insert(arch, c.clone());
        c
    }

    fn decide(&self, arch: Arch, probe_guest: impl FnOnce() -> anyhow::Result<Guest>) -> Choice {
        let tcg = Accel::Tcg { multi_thread: true };
        match forced() {
            Ok(Some(a)) => {
                return Choice {
                    why: format!("KMATRIX_ACCEL={}", a.qemu_arg()),
                    accel: a,
                }
            }
            Ok(None) => {}
            Err(e) => return Choice { accel: tcg, why: e },
        }
        if Arch::host() != Some(arch) {
            return Choice {
                accel: tcg,
                why: format!("{arch} guest on a {} host", std::env::consts::ARCH),
            };
        }
        let dev = kvm_device();
        if std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&dev)
            .is_err()
        {
            return Choice {
                accel: tcg,
                why: format!("{} is not usable", dev.display()),
            };
        }
        let bin = qemu::binary(arch);
        let memo = self.memo(arch, &bin);
        if let Ok(text) = std::fs::read_to_string(&memo) {
            if let Some((a, why)) = text.split_once('\n') {
                let accel = if a == "kvm" { Accel::Kvm } else { tcg };
                return Choice {
                    accel,
                    why: format!("{why} (probed earlier this host boot; {})", memo.display()),
                };
            }
        }
        let c = match probe_guest() {
            Ok(g) => probe(&bin, &g, &self.scratch),
            Err(e) => Choice {
                accel: tcg,
                why: format!("KVM probe could not be prepared: {e:#}"),
            },
        };
        self.remember(&memo, &c);
        c
    }

    fn remember(&self, memo: &Path, c: &Choice) {
        let _ = std::fs::create_dir_all(&self.scratch);
        let _ = std::fs::write(memo, format!("{}\n{}", c.accel.qemu_arg(), c.why));
    }

    /// The decision for `arch` so far, if any (no probe).
    pub fn current(&self, arch: Arch) -> Option<Choice> {
        self.decided.borrow().get(&arch).cloned()
    }

    /// QEMU died under KVM in a cell: TCG for this arch from now on, in this
    /// run and (through the memo) later runs this host boot.
    pub fn give_up(&self, arch: Arch, why: &str) -> Choice {
        let c = Choice {
            accel: Accel::Tcg { multi_thread: true },
            why: format!("KVM given up: {why}"),
        };
        self.decided.borrow_mut().insert(arch, c.clone());
        if forced().ok().flatten().is_none() {
            self.remember(&self.memo(arch, &qemu::binary(arch)), &c);
        }
        c
    }
}

/// Boots `g` under KVM until the kernel's first console line: KVM if it
/// prints one and QEMU neither dies nor hangs, TCG with the reason otherwise.
fn probe(bin: &str, g: &Guest, scratch: &Path) -> Choice {
    let tcg = Accel::Tcg { multi_thread: true };
    let _ = std::fs::create_dir_all(scratch);
    let mut g = g.clone();
    g.accel = Accel::Kvm;
    g.results = None;
    g.interactive = false;
    // The init hangs before running anything: the probe only needs the kernel.
    g.extra_cmdline.push("kmatrix.hang_boot".into());
    let args = qemu::args(&g);
    let console = scratch.join("kvm-probe.log");
    // Stop at the first line the kernel prints: that is past where both
    // failures seen on these hosts happen (vCPU set-up, the first
    // instructions under the cells' CPU model).
    let mut printed = false;
    let r = qemu::run_until(bin, &args, &console, PROBE_TIMEOUT, |l| {
        printed = l.contains("Linux version ");
        printed
    });
    match r {
        Err(e) => Choice { accel: tcg, why: format!("KVM probe could not start {bin}: {e}") },
        Ok(e) if printed && e.signal.is_none_or(|_| e.stopped) => Choice { accel: Accel::Kvm, why: format!("KVM probe: the kernel printed its first line under -accel kvm in {:.1}s", e.elapsed.as_secs_f64()) },
        Ok(e) if e.timed_out => Choice { accel: tcg, why: format!("KVM probe: no kernel output under -accel kvm within {}s (/dev/kvm present but not running guests)", PROBE_TIMEOUT.as_secs()) },
        Ok(e) => Choice {
            accel: tcg,
            why: format!(
                "KVM probe: QEMU {} under -accel kvm {}: {}",
                e.signal.map_or(format!("exited with status {}", e.status.unwrap_or(-1)), |s| format!("was killed by signal {s}")),
                if printed { "after the kernel's first line" } else { "before the kernel printed anything" },
                e.stderr.trim().lines().take(3).collect::<Vec<_>>().join(" | ")
            ),
        },
    }
}
