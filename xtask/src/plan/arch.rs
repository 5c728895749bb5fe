//! The kernel architectures, and every fact the harness needs about one in
//! a single table: adding an arch is adding a row here (and its config
//! fragment), not a `match` in every module. x86_64 and arm64 are guests;
//! i386 is built only (`run.build_only`), never booted.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    X86_64,
    Arm64,
    I386,
}

/// What differs between guest architectures.
#[derive(Debug)]
pub struct ArchInfo {
    /// The kernel's `ARCH=` and the name used in cell ids and matrix.toml.
    pub name: &'static str,
    /// `CROSS_COMPILE=` when the host is x86_64 (None: the host's own gcc).
    pub cross_prefix: Option<&'static str>,
    /// `make` target and where the image lands in the O= dir.
    pub image_target: &'static str,
    pub image_path: &'static str,
    pub qemu_binary: &'static str,
    /// `-M` (None: QEMU's default machine).
    pub machine: Option<&'static str>,
    /// `-cpu` model. arm64: pauth-impdef avoids TCG's slow architected
    /// pointer-authentication algorithm; GICv3 (in `machine`) allows more
    /// than 8 vCPUs.
    pub cpu: &'static str,
    /// The kernel's serial console device.
    pub console: &'static str,
    /// The virtio-serial transport for the results channel.
    pub virtio_serial: &'static str,
    /// Debian's architecture name (dpkg, multiarch packages).
    pub debian: &'static str,
    /// Where the static busybox comes from: the host's /bin/busybox when the
    /// guest arch is the host's, else this package downloaded and unpacked.
    pub busybox_package: &'static str,
    /// Booted in QEMU (a guest arch). False: built only, because its guest
    /// programs would need a C library of that arch, which set-up does not
    /// install.
    pub boots: bool,
    /// make variables a `tools/` build (perf) for this arch needs on an
    /// x86_64 host beyond `CROSS_COMPILE`.
    pub tools_make: &'static [&'static str],
    /// Where this host keeps the `asm/` headers a `tools/` build for this
    /// arch includes, when its compiler does not search them: Debian's
    /// amd64 ones are bi-arch, and `gcc -m32` finds them only through the
    /// `/usr/include/asm` link of gcc-multilib, which conflicts with
    /// gcc-aarch64-linux-gnu.
    pub tools_asm: Option<&'static str>,
    /// Where this (Debian, x86_64) host keeps the arch's shared libraries
    /// and loader: a kselftest target's programs take them into the guest.
    pub lib_dirs: &'static [&'static str],
    /// Debian's multiarch directory for the arch: where its loader looks
    /// for libraries first, so the guest gets them there.
    pub multiarch: &'static str,
}

const X86_64: ArchInfo = ArchInfo {
    name: "x86_64",
    cross_prefix: None,
    image_target: "bzImage",
    image_path: "arch/x86/boot/bzImage",
    qemu_binary: "qemu-system-x86_64",
    machine: None,
    cpu: "max",
    console: "ttyS0",
    virtio_serial: "virtio-serial-pci",
    debian: "amd64",
    busybox_package: "busybox-static:amd64",
    boots: true,
    tools_make: &[],
    tools_asm: None,
    lib_dirs: &[
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
    ],
    multiarch: "x86_64-linux-gnu",
};

const ARM64: ArchInfo = ArchInfo {
    name: "arm64",
    cross_prefix: Some("aarch64-linux-gnu-"),
    image_target: "Image",
    image_path: "arch/arm64/boot/Image",
    qemu_binary: "qemu-system-aarch64",
    machine: Some("virt,gic-version=3"),
    cpu: "max,pauth-impdef=on",
    console: "ttyAMA0",
    virtio_serial: "virtio-serial-device",
    debian: "arm64",
    busybox_package: "busybox-static:arm64",
    boots: true,
    tools_make: &[],
    tools_asm: None,
    // libc6-arm64-cross's, then multiarch arm64 packages' (libcap2:arm64).
    lib_dirs: &[
        "/usr/aarch64-linux-gnu/lib",
        "/usr/lib/aarch64-linux-gnu",
        "/lib/aarch64-linux-gnu",
    ],
    multiarch: "aarch64-linux-gnu",
};

/// 32-bit x86: the host's gcc with `ARCH=i386` (it builds `-m32` kernels
/// without a 32-bit C library). Catches what only a 32-bit build shows: a
/// 64-bit division that needs libgcc, a `long` that is 4 bytes.
const I386: ArchInfo = ArchInfo {
    name: "i386",
    cross_prefix: None,
    image_target: "bzImage",
    image_path: "arch/x86/boot/bzImage",
    qemu_binary: "qemu-system-i386",
    machine: None,
    cpu: "max",
    console: "ttyS0",
    virtio_serial: "virtio-serial-pci",
    debian: "i386",
    busybox_package: "busybox-static:i386",
    boots: false,
    // The host gcc and binutils, 32-bit (libc6-dev-i386 and lib32gcc-N-dev,
    // from set-up, hold the C library and libgcc).
    tools_make: &["CC=gcc -m32", "LD=ld -m elf_i386"],
    tools_asm: Some("/usr/include/x86_64-linux-gnu/asm"),
    lib_dirs: &["/usr/lib32", "/lib32"],
    multiarch: "i386-linux-gnu",
};

impl Arch {
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::Arm64, Arch::I386];

    pub fn info(self) -> &'static ArchInfo {
        match self {
            Arch::X86_64 => &X86_64,
            Arch::Arm64 => &ARM64,
            Arch::I386 => &I386,
        }
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn parse(s: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == s)
    }

    pub fn names() -> Vec<&'static str> {
        Arch::ALL.iter().map(|a| a.name()).collect()
    }

    /// The arches a cell can boot on (`run.arches`).
    pub fn guest_names() -> Vec<&'static str> {
        Arch::ALL
            .iter()
            .filter(|a| a.info().boots)
            .map(|a| a.name())
            .collect()
    }

    /// The guest arch that runs natively on this host (KVM is possible).
    pub fn host() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Arm64)
        } else {
            None
        }
    }

    /// The C compiler for kernel and guest programs of this arch.
    pub fn gcc(self) -> String {
        format!("{}gcc", self.info().cross_prefix.unwrap_or(""))
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Arch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Arch, D::Error> {
        let s = String::deserialize(d)?;
        Arch::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown arch `{s}`, expected one of {:?}",
                Arch::names()
            ))
        })
    }
}

/// The accelerator a guest runs under (chosen by boot::accel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    /// Multi-threaded TCG is fast but has raced the kernel's runtime code
    /// patching on these hosts: results record which one ran.
    Tcg {
        multi_thread: bool,
    },
}

impl Accel {
    pub fn qemu_arg(&self) -> String {
        match self {
            Accel::Kvm => "kvm".into(),
            Accel::Tcg { multi_thread: true } => "tcg,thread=multi".into(),
            Accel::Tcg {
                multi_thread: false,
            } => "tcg,thread=single".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_refused() {
        for a in Arch::ALL {
            assert_eq!(Arch::parse(a.name()), Some(a));
            assert_eq!(
                serde_json::from_str::<Arch>(&serde_json::to_string(&a).unwrap()).unwrap(),
                a
            );
        }
        assert_eq!(Arch::parse("riscv"), None);
        assert!(serde_json::from_str::<Arch>("\"mips\"")
            .unwrap_err()
            .to_string()
            .contains("unknown arch `mips`"));
    }

    #[test]
    fn cross_compiler_only_for_the_foreign_arch() {
        assert_eq!(Arch::X86_64.gcc(), "gcc");
        assert_eq!(Arch::Arm64.gcc(), "aarch64-linux-gnu-gcc");
        assert_eq!(Arch::I386.gcc(), "gcc");
    }

    #[test]
    fn i386_is_built_not_booted() {
        assert_eq!(Arch::parse("i386"), Some(Arch::I386));
        assert_eq!(Arch::guest_names(), ["x86_64", "arm64"]);
        assert!(!Arch::I386.info().boots);
    }

    #[test]
    fn accelerators_as_qemu_names_them() {
        assert_eq!(Accel::Kvm.qemu_arg(), "kvm");
        assert_eq!(
            Accel::Tcg { multi_thread: true }.qemu_arg(),
            "tcg,thread=multi"
        );
        assert_eq!(
            Accel::Tcg {
                multi_thread: false
            }
            .qemu_arg(),
            "tcg,thread=single"
        );
    }
}
