//! Run-time policy: how guests run on this host. Read once, from the
//! command line's flags and the environment, by the CLI (`Policy::from_env`
//! and `cli::PolicyArgs`), then passed down as one value. Nothing below
//! the CLI reads these variables.
//!
//! | variable | meaning |
//! |---|---|
//! | `KMATRIX_ACCEL` | `kvm`, `tcg` (`tcg,thread=multi`) or `tcg,thread=single`: no probe |
//! | `KMATRIX_KVM_DEVICE` | the KVM device to probe (default `/dev/kvm`) |
//! | `KMATRIX_PIN_VCPUS=0` | as `--no-pin` |
//! | `KMATRIX_KEEP_BUSY=0` | as `--no-keep-busy` |
//! | `KMATRIX_STEP_TIMEOUT_SCALE` | scales every host step's time bound (a float > 0) |
//! | `KMATRIX_CONSOLE_CAP` | bytes of guest console kept (default 64 MiB) |
//! | `KMATRIX_QEMU_DIR` | the directory QEMU's binaries are taken from (default: PATH) |

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::boot::qemu;
use crate::plan::arch::Accel;

#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The accelerator forced by the user; None: probe and decide.
    pub accel: Option<Accel>,
    pub kvm_device: PathBuf,
    /// Pin each vCPU thread to a host CPU.
    pub pin_vcpus: bool,
    /// Keep the host CPUs busy with SCHED_IDLE spinners while a guest runs.
    pub keep_busy: bool,
    pub step_timeout_scale: f64,
    pub console_cap: u64,
    pub qemu_dir: Option<PathBuf>,
    /// Boots run at the same time when none runs a benchmark (`--jobs`);
    /// None: as many guests as the CPUs xtask may use hold.
    pub boot_jobs: Option<usize>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            accel: None,
            kvm_device: "/dev/kvm".into(),
            pin_vcpus: true,
            keep_busy: true,
            step_timeout_scale: 1.0,
            console_cap: crate::boot::qemu::CONSOLE_CAP,
            qemu_dir: None,
            boot_jobs: None,
        }
    }
}

impl Policy {
    /// The policy the environment asks for; a value that does not parse is
    /// refused, naming the variable.
    pub fn from_env() -> Result<Policy> {
        Policy::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// `from_env` over any source of variables (tests).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Policy> {
        let mut p = Policy::default();
        if let Some(v) = var("KMATRIX_ACCEL") {
            p.accel = Some(match v.as_str() {
                "kvm" => Accel::Kvm,
                "tcg" | "tcg,thread=multi" => Accel::Tcg { multi_thread: true },
                "tcg,thread=single" => Accel::Tcg {
                    multi_thread: false,
                },
                other => bail!(
                    "KMATRIX_ACCEL={other}: expected kvm, tcg, tcg,thread=multi or tcg,thread=single"
                ),
            });
        }
        if let Some(v) = var("KMATRIX_KVM_DEVICE") {
            p.kvm_device = v.into();
        }
        p.pin_vcpus = var("KMATRIX_PIN_VCPUS").is_none_or(|v| v != "0");
        p.keep_busy = var("KMATRIX_KEEP_BUSY").is_none_or(|v| v != "0");
        if let Some(v) = var("KMATRIX_STEP_TIMEOUT_SCALE") {
            p.step_timeout_scale = match v.parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 => f,
                _ => bail!("KMATRIX_STEP_TIMEOUT_SCALE={v}: expected a number > 0"),
            };
        }
        if let Some(v) = var("KMATRIX_CONSOLE_CAP") {
            p.console_cap = match v.parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => bail!("KMATRIX_CONSOLE_CAP={v}: expected a number of bytes > 0"),
            };
        }
        p.qemu_dir = var("KMATRIX_QEMU_DIR").map(PathBuf::from);
        Ok(p)
    }

    /// How QEMU is launched under this policy.
    pub fn launch(&self) -> qemu::Launch {
        qemu::Launch {
            pin_vcpus: self.pin_vcpus,
            keep_busy: self.keep_busy,
            console_cap: self.console_cap,
            qemu_dir: self.qemu_dir.clone(),
            cpus: None,
        }
    }

    /// Puts the process-wide parts in force: the host steps' time bounds.
    pub fn apply(&self) {
        crate::host::proc::limit::set_scale(self.step_timeout_scale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_variables_give_the_defaults() {
        let p = Policy::from_vars(vars(&[])).unwrap();
        assert_eq!(p.accel, None);
        assert_eq!(p.kvm_device, PathBuf::from("/dev/kvm"));
        assert!(p.pin_vcpus && p.keep_busy);
        assert_eq!(p.step_timeout_scale, 1.0);
        assert_eq!(p.console_cap, 64 << 20);
        assert_eq!(p.qemu_dir, None);
    }

    #[test]
    fn each_variable_sets_its_field() {
        let p = Policy::from_vars(vars(&[
            ("KMATRIX_ACCEL", "tcg,thread=single"),
            ("KMATRIX_KVM_DEVICE", "/tmp/fake-kvm"),
            ("KMATRIX_PIN_VCPUS", "0"),
            ("KMATRIX_KEEP_BUSY", "0"),
            ("KMATRIX_STEP_TIMEOUT_SCALE", "0.25"),
            ("KMATRIX_CONSOLE_CAP", "65536"),
            ("KMATRIX_QEMU_DIR", "/opt/qemu/bin"),
        ]))
        .unwrap();
        assert_eq!(
            p.accel,
            Some(Accel::Tcg {
                multi_thread: false
            })
        );
        assert_eq!(p.kvm_device, PathBuf::from("/tmp/fake-kvm"));
        assert!(!p.pin_vcpus && !p.keep_busy);
        assert_eq!(p.step_timeout_scale, 0.25);
        assert_eq!(p.console_cap, 65536);
        assert_eq!(p.qemu_dir, Some(PathBuf::from("/opt/qemu/bin")));
        let kvm = Policy::from_vars(vars(&[("KMATRIX_ACCEL", "kvm")])).unwrap();
        assert_eq!(kvm.accel, Some(Accel::Kvm));
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable() {
        for (k, v) in [
            ("KMATRIX_ACCEL", "hvf"),
            ("KMATRIX_STEP_TIMEOUT_SCALE", "0"),
            ("KMATRIX_STEP_TIMEOUT_SCALE", "fast"),
            ("KMATRIX_CONSOLE_CAP", "-1"),
        ] {
            let e = Policy::from_vars(vars(&[(k, v)])).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{k}={v}: expected")), "{e}");
        }
    }
}
