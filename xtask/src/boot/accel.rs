//! Which accelerator a cell boots under, and why.
//!
//! /dev/kvm on hosts that are themselves VMs cannot be trusted: on one machine a
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
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

/// What a cell falls back to.
const TCG: Accel = Accel::Tcg { multi_thread: true };

/// How long the probe waits for the kernel's first console line under KVM.
/// A working KVM prints it in well under a second; TCG in about 2 s.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// Per-run accelerator state: one decision per arch, changed only by
/// `give_up` (QEMU died under KVM in a cell).
pub struct Chooser {
    scratch: PathBuf,
    decided: Mutex<HashMap<Arch, Choice>>,
    /// The accelerator the user forced (`KMATRIX_ACCEL`): no probe, no memo.
    forced: Option<Accel>,
    /// The KVM device to check (`/dev/kvm`; fault tests point elsewhere).
    kvm_device: PathBuf,
    launch: qemu::Launch,
}

impl Chooser {
    /// A chooser keeping its probes and memos in `scratch`; `forced`,
    /// `kvm_device` and `launch` come from the run-time policy.
    pub fn new(
        scratch: PathBuf,
        forced: Option<Accel>,
        kvm_device: PathBuf,
        launch: qemu::Launch,
    ) -> Chooser {
        Chooser {
            scratch,
            decided: Mutex::new(HashMap::new()),
            forced,
            kvm_device,
            launch,
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
        match crate::host::proc::which(bin) {
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
        if let Some(c) = self.decided.lock().unwrap().get(&arch) {
            return c.clone();
        }
        let c = self.decide(arch, probe_guest);
        self.decided.lock().unwrap().insert(arch, c.clone());
        c
    }

    fn decide(&self, arch: Arch, probe_guest: impl FnOnce() -> anyhow::Result<Guest>) -> Choice {
        let bin = qemu::binary(arch, &self.launch);
        let memo = self.memo(arch, &bin);
        let kvm_device = self.kvm_device.clone();
        let facts = Facts {
            forced: Ok(self.forced.clone()),
            arch,
            host: Arch::host(),
            host_name: std::env::consts::ARCH,
            kvm_usable: std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&kvm_device)
                .is_ok(),
            kvm_device,
            earlier: std::fs::read_to_string(&memo)
                .ok()
                .map(|text| (memo.clone(), text)),
        };
        if let Some(c) = without_probe(&facts) {
            return c;
        }
        let c = match probe_guest() {
            Ok(g) => probe(&bin, &g, &self.scratch, &self.launch),
            Err(e) => Choice {
                accel: TCG,
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
        self.decided.lock().unwrap().get(&arch).cloned()
    }

    /// QEMU died under KVM in a cell: TCG for this arch from now on, in this
    /// run and (through the memo) later runs this host boot.
    pub fn give_up(&self, arch: Arch, why: &str) -> Choice {
        let c = Choice {
            accel: TCG,
            why: format!("KVM given up: {why}"),
        };
        self.decided.lock().unwrap().insert(arch, c.clone());
        if self.forced.is_none() {
            self.remember(&self.memo(arch, &qemu::binary(arch, &self.launch)), &c);
        }
        c
    }
}

/// What the decision is made from, besides the probe.
#[derive(Debug, Clone)]
struct Facts {
    /// `KMATRIX_ACCEL`, parsed (`forced`).
    forced: Result<Option<Accel>, String>,
    arch: Arch,
    /// The guest arch this host runs natively (`Arch::host`), and the
    /// host's own name for its arch (for the reason).
    host: Option<Arch>,
    host_name: &'static str,
    /// The KVM device, and whether it opens for reading and writing.
    kvm_device: PathBuf,
    kvm_usable: bool,
    /// An earlier probe's verdict this host boot: the memo and its text.
    earlier: Option<(PathBuf, String)>,
}

/// The choice when no probe is needed: forced, a foreign arch, no usable
/// KVM device, or an earlier verdict. None: only a probe can tell.
fn without_probe(f: &Facts) -> Option<Choice> {
    match &f.forced {
        Ok(Some(a)) => {
            return Some(Choice {
                why: format!("KMATRIX_ACCEL={}", a.qemu_arg()),
                accel: a.clone(),
            })
        }
        Ok(None) => {}
        Err(e) => {
            return Some(Choice {
                accel: TCG,
                why: e.clone(),
            })
        }
    }
    if f.host != Some(f.arch) {
        return Some(Choice {
            accel: TCG,
            why: format!("{} guest on a {} host", f.arch, f.host_name),
        });
    }
    if !f.kvm_usable {
        return Some(Choice {
            accel: TCG,
            why: format!("{} is not usable", f.kvm_device.display()),
        });
    }
    let (memo, text) = f.earlier.as_ref()?;
    let (a, why) = text.split_once('\n')?;
    Some(Choice {
        accel: if a == "kvm" { Accel::Kvm } else { TCG },
        why: format!("{why} (probed earlier this host boot; {})", memo.display()),
    })
}

/// Boots `g` under KVM until the kernel's first console line: KVM if it
/// prints one and QEMU neither dies nor hangs, TCG with the reason otherwise.
fn probe(bin: &str, g: &Guest, scratch: &Path, launch: &qemu::Launch) -> Choice {
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
    let r = qemu::run_until(bin, &args, &console, PROBE_TIMEOUT, launch, |l| {
        printed = l.contains("Linux version ");
        printed
    });
    verdict(bin, printed, r)
}

/// The probe's verdict from whether the kernel printed its first line and
/// how QEMU ended (or why it could not start).
fn verdict(bin: &str, printed: bool, r: std::io::Result<qemu::Exit>) -> Choice {
    let e = match r {
        Err(e) => {
            return Choice {
                accel: TCG,
                why: format!("KVM probe could not start {bin}: {e}"),
            }
        }
        Ok(e) => e,
    };
    if printed && e.signal.is_none_or(|_| e.stopped) {
        return Choice {
            accel: Accel::Kvm,
            why: format!(
                "KVM probe: the kernel printed its first line under -accel kvm in {:.1}s",
                e.elapsed.as_secs_f64()
            ),
        };
    }
    if e.timed_out {
        return Choice {
            accel: TCG,
            why: format!(
                "KVM probe: no kernel output under -accel kvm within {}s (/dev/kvm present but not running guests)",
                PROBE_TIMEOUT.as_secs()
            ),
        };
    }
    let how = e.signal.map_or(
        format!("exited with status {}", e.status.unwrap_or(-1)),
        |s| format!("was killed by signal {s}"),
    );
    let when = if printed {
        "after the kernel's first line"
    } else {
        "before the kernel printed anything"
    };
    let stderr = e
        .stderr
        .trim()
        .lines()
        .take(3)
        .collect::<Vec<_>>()
        .join(" | ");
    Choice {
        accel: TCG,
        why: format!("KVM probe: QEMU {how} under -accel kvm {when}: {stderr}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An x86_64 host with a usable /dev/kvm, nothing forced, nothing
    /// probed yet.
    fn host() -> Facts {
        Facts {
            forced: Ok(None),
            arch: Arch::X86_64,
            host: Some(Arch::X86_64),
            host_name: "x86_64",
            kvm_device: "/dev/kvm".into(),
            kvm_usable: true,
            earlier: None,
        }
    }

    fn choice(accel: Accel, why: &str) -> Option<Choice> {
        Some(Choice {
            accel,
            why: why.into(),
        })
    }

    const SINGLE: Accel = Accel::Tcg {
        multi_thread: false,
    };

    #[test]
    fn forced_foreign_unusable_or_probed_earlier_needs_no_probe() {
        // Nothing known: only a probe can tell.
        assert_eq!(without_probe(&host()), None);
        // KMATRIX_ACCEL wins over everything, a usable device or none.
        let forced = |a: Accel| Facts {
            forced: Ok(Some(a)),
            kvm_usable: false,
            ..host()
        };
        assert_eq!(
            without_probe(&forced(Accel::Kvm)),
            choice(Accel::Kvm, "KMATRIX_ACCEL=kvm")
        );
        assert_eq!(
            without_probe(&forced(SINGLE)),
            choice(SINGLE, "KMATRIX_ACCEL=tcg,thread=single")
        );
        let bad = Facts {
            forced: Err("KMATRIX_ACCEL=hvf: expected ...".into()),
            ..host()
        };
        assert_eq!(
            without_probe(&bad),
            choice(TCG, "KMATRIX_ACCEL=hvf: expected ...")
        );
        let foreign = Facts {
            arch: Arch::Arm64,
            ..host()
        };
        assert_eq!(
            without_probe(&foreign),
            choice(TCG, "arm64 guest on a x86_64 host")
        );
        let unknown_host = Facts {
            host: None,
            host_name: "riscv64",
            ..host()
        };
        assert_eq!(
            without_probe(&unknown_host),
            choice(TCG, "x86_64 guest on a riscv64 host")
        );
        let no_kvm = Facts {
            kvm_device: "/tmp/no-kvm".into(),
            kvm_usable: false,
            ..host()
        };
        assert_eq!(
            without_probe(&no_kvm),
            choice(TCG, "/tmp/no-kvm is not usable")
        );
        // An earlier verdict this host boot, either way.
        let earlier = |text: &str| Facts {
            earlier: Some(("/s/accel-x86_64-ab".into(), text.into())),
            ..host()
        };
        assert_eq!(
            without_probe(&earlier("kvm\nKVM probe: fine")),
            choice(
                Accel::Kvm,
                "KVM probe: fine (probed earlier this host boot; /s/accel-x86_64-ab)"
            )
        );
        assert_eq!(
            without_probe(&earlier("tcg,thread=multi\nKVM given up: x")),
            choice(
                TCG,
                "KVM given up: x (probed earlier this host boot; /s/accel-x86_64-ab)"
            )
        );
        // A memo without a reason is no verdict.
        assert_eq!(without_probe(&earlier("kvm")), None);
    }

    fn exit() -> qemu::Exit {
        qemu::Exit {
            status: Some(0),
            signal: None,
            timed_out: false,
            stopped: false,
            elapsed: Duration::from_millis(800),
            console_truncated: false,
            stderr: String::new(),
            pinned_vcpus: 0,
            busy_cpus: 0,
        }
    }

    #[test]
    fn probe_verdicts() {
        let q = "qemu-system-x86_64";
        // Stopped by the probe at the kernel's first line: KVM works.
        let stopped = qemu::Exit {
            status: None,
            signal: Some(9),
            stopped: true,
            ..exit()
        };
        assert_eq!(
            Some(verdict(q, true, Ok(stopped))),
            choice(
                Accel::Kvm,
                "KVM probe: the kernel printed its first line under -accel kvm in 0.8s"
            )
        );
        // QEMU aborted at once under -accel kvm -cpu max (failed to set MSR).
        let aborted = qemu::Exit {
            status: None,
            signal: Some(6),
            stderr: "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0\n\
                     qemu-system-x86_64: ../target/i386/kvm/kvm.c:3017: kvm_buf_set_msrs: Assertion failed.\n\
                     more\nand more\n"
                .into(),
            ..exit()
        };
        assert_eq!(
            Some(verdict(q, false, Ok(aborted))),
            choice(
                TCG,
                "KVM probe: QEMU was killed by signal 6 under -accel kvm before the kernel printed anything: \
                 qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0 | \
                 qemu-system-x86_64: ../target/i386/kvm/kvm.c:3017: kvm_buf_set_msrs: Assertion failed. | more"
            )
        );
        // Died after the kernel's first line, without being stopped.
        let died = qemu::Exit {
            status: None,
            signal: Some(11),
            ..exit()
        };
        assert_eq!(
            Some(verdict(q, true, Ok(died))),
            choice(
                TCG,
                "KVM probe: QEMU was killed by signal 11 under -accel kvm after the kernel's first line: "
            )
        );
        let failed = qemu::Exit {
            status: Some(1),
            stderr: "no".into(),
            ..exit()
        };
        assert_eq!(
            Some(verdict(q, false, Ok(failed))),
            choice(
                TCG,
                "KVM probe: QEMU exited with status 1 under -accel kvm before the kernel printed anything: no"
            )
        );
        // Hung at 100% sys without a word.
        let hung = qemu::Exit {
            status: None,
            signal: Some(9),
            timed_out: true,
            ..exit()
        };
        assert_eq!(
            Some(verdict(q, false, Ok(hung))),
            choice(
                TCG,
                "KVM probe: no kernel output under -accel kvm within 20s (/dev/kvm present but not running guests)"
            )
        );
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            Some(verdict(q, false, Err(missing))),
            choice(
                TCG,
                "KVM probe could not start qemu-system-x86_64: entity not found"
            )
        );
    }

    /// QEMU died under KVM in a cell: the cell and every later one of the
    /// arch boot under TCG without another probe, and a later run this host
    /// boot reads the same verdict from the memo.
    #[test]
    fn a_cell_whose_qemu_died_under_kvm_falls_back_to_tcg() {
        let scratch = crate::util::test_tmp().join(format!("kmatrix-accel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let c = Chooser::new(
            scratch.clone(),
            None,
            "/dev/kvm".into(),
            qemu::Launch::default(),
        );
        let why = "QEMU was killed by signal 6 under -accel kvm before the guest's first report";
        let given_up = choice(TCG, &format!("KVM given up: {why}"));
        assert_eq!(Some(c.give_up(Arch::X86_64, why)), given_up);
        assert_eq!(c.current(Arch::X86_64), given_up);
        assert_eq!(
            Some(c.choose(Arch::X86_64, || panic!("no probe after giving up"))),
            given_up
        );
        assert_eq!(c.current(Arch::Arm64), None);
        // What give_up leaves for later runs (unless KMATRIX_ACCEL is set).
        let memo = scratch.join("memo");
        c.remember(&memo, &given_up.clone().unwrap());
        let later = Facts {
            earlier: Some((memo.clone(), std::fs::read_to_string(&memo).unwrap())),
            ..host()
        };
        assert_eq!(
            without_probe(&later),
            choice(
                TCG,
                &format!(
                    "KVM given up: {why} (probed earlier this host boot; {})",
                    memo.display()
                )
            )
        );
        std::fs::remove_dir_all(&scratch).unwrap();
    }
}
