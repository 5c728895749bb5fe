//! Host set-up: installs the Debian packages the harness needs (`cargo
//! xtask setup`, also run by `matrix` when something is missing), and
//! fetches the arm64 static busybox that cannot be installed beside the
//! amd64 one.
//!
//! Supported hosts: Debian 12 (bookworm) and 13 (trixie) on amd64, as root
//! or with sudo. The default matrix's kernels are Debian 12 packages at
//! pinned versions, which host/debian fetches on either release; elsewhere
//! the set-up refuses with one message that says what to do instead. A
//! package apt would remove to install ours is removed only with `--yes`,
//! or with a yes to the question asked at a terminal.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::host::proc::{self, limit};

/// Host packages, and why each is needed.
const PACKAGES: &[(&str, &str)] = &[
    ("make", "kernel build"),
    ("gcc", "kernel build, x86_64 guest programs"),
    ("libc6-dev", "static x86_64 guest programs"),
    ("flex", "kconfig"),
    ("bison", "kconfig"),
    ("bc", "kernel build"),
    ("libelf-dev", "objtool"),
    ("libssl-dev", "kernel build (certs)"),
    ("rsync", "make headers_install"),
    ("cpio", "tests: reading back our initramfs"),
    ("xz-utils", "unpacking linux-source tarballs"),
    ("git", "variant trees with the series as commits"),
    ("busybox-static", "x86_64 guest userland"),
    ("libcap-dev", "seccomp_bpf links libcap (x86_64)"),
    ("libcap-dev:arm64", "seccomp_bpf links libcap (arm64)"),
    ("gcc-aarch64-linux-gnu", "arm64 kernel and guest programs"),
    ("libc6-dev-arm64-cross", "static arm64 guest programs"),
    // Not gcc-multilib: on Debian it conflicts with gcc-aarch64-linux-gnu.
    // The 32-bit libgcc beside it is named by gcc's version (`lib32gcc`).
    ("libc6-dev-i386", "32-bit x86 tools/perf (patchcheck)"),
    ("qemu-system-x86", "x86_64 guests"),
    ("qemu-system-arm", "arm64 guests"),
];

/// A value of /etc/os-release (`KEY=value`, quotes removed).
fn os_release_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_string())
}

/// `PRETTY_NAME` from /etc/os-release, for messages.
fn host_name(os_release: &str) -> String {
    os_release_value(os_release, "PRETTY_NAME")
        .unwrap_or_else(|| "an unknown system (no /etc/os-release)".into())
}

/// Another distribution's package manager, and what it calls the host
/// packages. Names as each distribution's package index gives them; the
/// set-up does not run these, it prints them.
#[derive(Debug, PartialEq)]
pub struct OtherManager {
    /// os-release `ID` or `ID_LIKE` words that mean this manager.
    ids: &'static [&'static str],
    /// The install command, before the package names.
    pub install: &'static str,
    pub packages: &'static [&'static str],
    /// What it has no package for, and what that costs.
    pub gaps: &'static str,
}

/// The package managers the refusal knows besides apt.
pub const OTHER_MANAGERS: &[OtherManager] = &[
    OtherManager {
        ids: &["fedora", "rhel", "centos"],
        install: "sudo dnf install",
        packages: &[
            "make",
            "gcc",
            "glibc-static",
            "flex",
            "bison",
            "bc",
            "elfutils-libelf-devel",
            "openssl-devel",
            "rsync",
            "cpio",
            "xz",
            "git",
            "busybox",
            "libcap-devel",
            "gcc-aarch64-linux-gnu",
            "qemu-system-x86",
            "qemu-system-aarch64",
        ],
        gaps:
            "gcc-aarch64-linux-gnu builds kernels only (there is no arm64 C library to link guest \
               programs with), and there is no static arm64 busybox: select --arch x86_64, or run \
               arm64 cells in the Debian container",
    },
    OtherManager {
        ids: &["arch"],
        install: "sudo pacman -S --needed",
        packages: &[
            "base-devel",
            "bc",
            "libelf",
            "openssl",
            "rsync",
            "cpio",
            "xz",
            "git",
            "busybox",
            "libcap",
            "aarch64-linux-gnu-gcc",
            "aarch64-linux-gnu-glibc",
            "qemu-system-x86",
            "qemu-system-aarch64",
        ],
        gaps: "there is no static arm64 busybox or arm64 libcap: select --arch x86_64, or run \
               arm64 cells in the Debian container",
    },
];

/// The package manager of the host /etc/os-release describes, when it
/// is one of OTHER_MANAGERS (by `ID`, then `ID_LIKE`).
pub fn other_manager(os_release: &str) -> Option<&'static OtherManager> {
    let id = os_release_value(os_release, "ID").unwrap_or_default();
    let like = os_release_value(os_release, "ID_LIKE").unwrap_or_default();
    std::iter::once(id.as_str())
        .chain(like.split_whitespace())
        .find_map(|w| OTHER_MANAGERS.iter().find(|m| m.ids.contains(&w)))
}

/// What to do on a host the set-up cannot serve.
fn unsupported(what: &str) -> anyhow::Error {
    let os_release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    anyhow::anyhow!("{}", refusal(what, &os_release))
}

/// The refusal on the host /etc/os-release describes: what failed, what
/// the set-up supports, and what to install instead with this host's own
/// package manager when it is one the set-up knows.
fn refusal(what: &str, os_release: &str) -> String {
    let yourself = match other_manager(os_release) {
        Some(m) => format!(
            "- install the tools with this host's package manager:\n    {} {}\n  \
             ({}), point [kernel.NAME] source in matrix.toml at a kernel.org release, a tarball or \
             a git tree (the default matrix's Debian packages need apt): \
             source = {{ release = \"6.1.119\" }} or {{ tarball = \"/path/linux-6.1.tar.xz\" }}, \
             then run with --no-setup.",
            m.install,
            m.packages.join(" "),
            m.gaps
        ),
        None => "- install the tools yourself (qemu-system-x86, qemu-system-arm, gcc-aarch64-linux-gnu, \
                 busybox-static, libcap-dev, flex, bison, bc, libelf-dev, libssl-dev, rsync, cpio, git; \
                 Debian's names) and point [kernel.NAME] source in matrix.toml at a kernel.org release, a \
                 tarball or a git tree (source = { release = \"6.1.119\" } or \
                 { tarball = \"/path/linux-6.1.tar.xz\" }), then run with --no-setup."
            .to_string(),
    };
    format!(
        "{what}\n\
         This host is {}. kmatrix's set-up supports Debian 12 (bookworm) and 13 (trixie) on amd64, \
         with apt and Debian's archive keyring (the default matrix's kernels are Debian 12 packages).\n\
         What to do instead:\n\
         - run it in a Debian 12 container, e.g. `podman run --rm -it -v \"$PWD\":/src -w /src \
         --device /dev/kvm debian:bookworm` (install rustup, then `cargo xtask matrix`); or\n\
         {yourself}",
        host_name(os_release)
    )
}

fn missing(packages: &[String]) -> Result<Vec<String>> {
    let sh = xshell::Shell::new()?;
    // dpkg-query exits 1 when some package is unknown: the output still
    // lists the known ones, which is all we need.
    let format = "-f=${Package}:${Architecture} ${db:Status-Abbrev}\n";
    let out = xshell::cmd!(sh, "dpkg-query -W {format} {packages...}")
        .quiet()
        .ignore_status()
        .output()
        .map_err(|e| {
            unsupported(&format!(
                "cannot run dpkg-query ({e}): this is not a Debian system"
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let native = native_arch();
    let installed = |p: &str| {
        let (name, arch) = p.split_once(':').unwrap_or((p, native.as_str()));
        text.lines().any(|l| {
            let (id, status) = l.split_once(' ').unwrap_or((l, ""));
            let (n, a) = id.split_once(':').unwrap_or((id, ""));
            n == name && (a == arch || a == "all") && status.starts_with("ii")
        })
    };
    Ok(packages.iter().filter(|p| !installed(p)).cloned().collect())
}

/// The 32-bit libgcc (crt files, libgcc.a) of the host gcc's version,
/// `lib32gcc-12-dev` on Debian 12: an installed gcc's major version, else
/// the one apt would install. None when neither can say.
fn lib32gcc() -> Option<String> {
    let sh = xshell::Shell::new().ok()?;
    let installed = xshell::cmd!(sh, "gcc -dumpversion").quiet().read().ok();
    let major = match installed {
        Some(v) => gcc_major(&v),
        None => {
            let deps = xshell::cmd!(sh, "apt-cache depends gcc")
                .quiet()
                .ignore_status()
                .read()
                .ok()?;
            deps.lines()
                .filter_map(|l| l.trim().strip_prefix("Depends: gcc-"))
                .find_map(gcc_major)
        }
    }?;
    Some(format!("lib32gcc-{major}-dev"))
}

/// The major version in `12`, `12.2.0` or `14`.
fn gcc_major(v: &str) -> Option<u32> {
    v.trim().split('.').next()?.parse().ok()
}

/// dpkg's native architecture (amd64 when dpkg cannot say).
pub fn native_arch() -> String {
    let Ok(sh) = xshell::Shell::new() else {
        return "amd64".into();
    };
    xshell::cmd!(sh, "dpkg --print-architecture")
        .quiet()
        .read()
        .unwrap_or_else(|_| "amd64".into())
}

/// Packages apt has no candidate for (Ubuntu has no linux-source-6.1).
fn uninstallable(packages: &[String]) -> Result<Vec<String>> {
    let sh = xshell::Shell::new()?;
    let text = xshell::cmd!(sh, "apt-cache policy {packages...}")
        .quiet()
        .ignore_status()
        .read()?;
    // `pkg:` blocks; a package apt does not know prints no block at all.
    let mut ok = Vec::new();
    let mut current: Option<String> = None;
    for l in text.lines() {
        if !l.starts_with(' ') && l.ends_with(':') {
            current = Some(l.trim_end_matches(':').to_string());
        } else if let (Some(p), Some(c)) = (&current, l.trim().strip_prefix("Candidate:")) {
            if c.trim() != "(none)" {
                ok.push(p.clone());
            }
        }
    }
    let native = native_arch();
    Ok(packages
        .iter()
        .filter(|p| {
            let bare = p.strip_suffix(&format!(":{native}")).unwrap_or(p);
            !ok.iter().any(|o| o == *p || o == bare)
        })
        .cloned()
        .collect())
}

/// Runs a command as root: directly when we are root, else through sudo.
fn as_root(args: &[&str]) -> Result<()> {
    let is_root = nix::unistd::geteuid().is_root();
    let mut cmd = if is_root {
        let mut c = Command::new(args[0]);
        c.args(&args[1..]);
        c
    } else {
        let mut c = Command::new("sudo");
        c.args(args);
        c
    };
    cmd.env("DEBIAN_FRONTEND", "noninteractive");
    let shown = format!("{}{}", if is_root { "" } else { "sudo " }, args.join(" "));
    // apt's own output goes to the log as it comes: it can take minutes.
    let f = proc::stream(cmd, limit::scaled(limit::APT), |l| eprintln!("{l}"))
        .with_context(|| format!("running {shown}"))?;
    if !f.success() {
        bail!(
            "`{shown}` {}\n{}",
            f.describe(),
            crate::util::tail(&f.stderr, 20)
        );
    }
    Ok(())
}

/// `question [y/N]` when both stdin and stderr are a terminal: Some(yes)
/// (`y` or `yes`; anything else, an empty line or the end of input is no);
/// None without a terminal, where nobody could answer. Ctrl-C while it
/// waits is a no.
fn ask(question: &str) -> Option<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    eprint!("{question} [y/N] ");
    // The answer is read aside, so an interruption is seen while waiting.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let _ = tx.send(line);
    });
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(line) => {
                let a = line.trim().to_ascii_lowercase();
                return Some(a == "y" || a == "yes");
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                if !crate::host::signals::interrupted() => {}
            Err(_) => {
                eprintln!();
                return Some(false);
            }
        }
    }
}

/// The packages `apt-get install -s` says it would remove (`Remv NAME
/// [VERSION]` lines), with the version apt printed.
pub fn removals(simulation: &str) -> Vec<String> {
    simulation
        .lines()
        .filter_map(|l| l.strip_prefix("Remv "))
        .map(|rest| rest.split(" (").next().unwrap_or(rest).trim().to_string())
        .collect()
}

/// Ensures every package is installed; `extra` adds packages a matrix
/// needs. A package apt would have to remove for that is removed only
/// with `allow_removal` (`--yes`); otherwise nothing is installed and the
/// error names what would go.
pub fn ensure(extra: &[String], allow_removal: bool) -> Result<()> {
    let mut wanted: Vec<String> = PACKAGES.iter().map(|(p, _)| p.to_string()).collect();
    wanted.extend(extra.iter().cloned());
    let lib32 = lib32gcc();
    wanted.extend(lib32.clone());
    let mut todo = missing(&wanted)?;
    if todo.is_empty() {
        return Ok(());
    }
    eprintln!("kmatrix setup: installing {}", todo.join(" "));
    if native_arch() != "amd64" {
        return Err(unsupported(&format!(
            "the host architecture is {}, not amd64",
            native_arch()
        )));
    }
    let sh = xshell::Shell::new()?;
    let foreign = xshell::cmd!(sh, "dpkg --print-foreign-architectures")
        .quiet()
        .read()
        .unwrap_or_default();
    if !foreign.lines().any(|a| a == "arm64") {
        as_root(&["dpkg", "--add-architecture", "arm64"])?;
    }
    as_root(&["apt-get", "update", "-q"])?;
    // Without gcc and apt's lists, gcc's version was unknown until now.
    if lib32.is_none() {
        if let Some(p) = lib32gcc() {
            todo.extend(missing(std::slice::from_ref(&p))?);
            wanted.push(p);
        }
    }
    let none = uninstallable(&todo)?;
    if !none.is_empty() {
        return Err(unsupported(&format!(
            "apt has no installable candidate for: {}",
            none.join(" ")
        )));
    }
    // --no-install-recommends keeps the image small. A package Debian's
    // own would conflict with (a backported qemu-utils beside QEMU 7.2) is
    // found by a dry run first and removed only with the user's yes.
    let mut sim = Command::new("apt-get");
    sim.args(["install", "-s", "-q", "--no-install-recommends"])
        .args(&todo)
        .env("DEBIAN_FRONTEND", "noninteractive");
    let dry = proc::run(sim, limit::scaled(limit::APT)).context("running apt-get install -s")?;
    let gone = removals(&dry.stdout);
    if !gone.is_empty() && !allow_removal {
        let what = format!(
            "installing {} would remove {} from this host",
            todo.join(" "),
            gone.join(", ")
        );
        // A person at a terminal is asked, the way apt asks; anything else
        // is refused, saying --yes.
        let question = format!(
            "kmatrix setup: {what} (apt replaces a package Debian's own conflicts with, such as a backported qemu-utils beside Debian's QEMU).\nRemove it and go on?"
        );
        match ask(&question) {
            Some(true) => eprintln!("kmatrix setup: yes: apt removes {}", gone.join(", ")),
            Some(false) => bail!("{what}: nothing was changed (the answer was no)"),
            None => bail!(
                "{what}: nothing was changed.\n\
                 Run again with --yes to allow it (at a terminal setup asks), or install the packages yourself and use --no-setup."
            ),
        }
    } else if !gone.is_empty() {
        eprintln!("kmatrix setup: --yes: apt removes {}", gone.join(", "));
    }
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    if gone.is_empty() {
        args.push("--no-remove");
    }
    args.extend(todo.iter().map(String::as_str));
    as_root(&args)?;
    let still = missing(&wanted)?;
    if !still.is_empty() {
        bail!(
            "packages still missing after apt-get install: {}",
            still.join(" ")
        );
    }
    Ok(())
}

/// The static busybox for a guest arch. arm64's comes from the Debian
/// package, downloaded and unpacked into the cache (it cannot be installed
/// beside the amd64 one).
pub fn busybox(
    arch: crate::plan::arch::Arch,
    cache: &crate::host::cache::Cache,
) -> Result<PathBuf> {
    if Some(arch) == crate::plan::arch::Arch::host() {
        let p = PathBuf::from("/bin/busybox");
        if !p.exists() {
            bail!("/bin/busybox is missing: run `cargo xtask setup` (package busybox-static)");
        }
        return Ok(p);
    }
    let dir = cache.dir(&["busybox", arch.name()]);
    // Where the package puts it: /bin in Debian 12, /usr/bin once /usr
    // is merged (Debian 13).
    if let Some(bin) = ["usr/bin/busybox", "bin/busybox"]
        .iter()
        .map(|p| dir.join(p))
        .find(|p| p.is_file())
    {
        return Ok(bin);
    }
    let dl = cache.dir(&["busybox", "download"]);
    std::fs::create_dir_all(&dl)?;
    let mut get = Command::new("apt-get");
    // Root downloading into a root-owned dir: no _apt sandbox user needed.
    get.args([
        "-o",
        "APT::Sandbox::User=root",
        "download",
        arch.info().busybox_package,
    ])
    .current_dir(&dl);
    proc::checked(
        &format!(
            "downloading {} into {}",
            arch.info().busybox_package,
            dl.display()
        ),
        get,
        limit::scaled(limit::APT),
    )?;
    let deb = std::fs::read_dir(&dl)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.to_string_lossy()
                .ends_with(&format!("_{}.deb", arch.info().debian))
        })
        .with_context(|| format!("no {} .deb downloaded", arch.info().busybox_package))?;
    let mut list = Command::new("dpkg-deb");
    list.arg("-c").arg(&deb);
    let listing = proc::checked("dpkg-deb -c", list, limit::scaled(limit::TAR))?;
    let Some(inside) = busybox_in(&listing.stdout) else {
        bail!(
            "{} holds no bin/busybox (dpkg-deb -c lists no such file)",
            deb.display()
        );
    };
    let mut x = Command::new("dpkg");
    x.arg("-x").arg(&deb).arg(&dir);
    proc::checked("dpkg -x", x, limit::scaled(limit::TAR))?;
    let bin = dir.join(&inside);
    if !bin.is_file() {
        bail!("unpacking {} did not give {}", deb.display(), bin.display());
    }
    Ok(bin)
}

/// The busybox binary of a busybox-static package, from `dpkg-deb -c`'s
/// listing: the regular file `./bin/busybox` or `./usr/bin/busybox`, as a
/// path relative to where the package is unpacked.
pub fn busybox_in(listing: &str) -> Option<String> {
    listing
        .lines()
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().last())
        .find(|p| *p == "./bin/busybox" || *p == "./usr/bin/busybox")
        .map(|p| p.trim_start_matches("./").to_string())
}

#[cfg(test)]
mod tests {

    /// gcc's major version as `gcc -dumpversion` prints it on Debian 12
    /// and 13 and as `apt-cache depends gcc` names it; a package that only
    /// starts with the name is no version.
    #[test]
    fn gcc_major_version_is_read_as_gcc_and_apt_give_it() {
        assert_eq!(gcc_major("12\n"), Some(12));
        assert_eq!(gcc_major("14"), Some(14));
        assert_eq!(gcc_major("12.2.0"), Some(12));
        assert_eq!(gcc_major("12-base"), None);
        assert_eq!(gcc_major(""), None);
    }

    /// Debian 12's busybox-static has /bin/busybox, Debian 13's (merged
    /// /usr) /usr/bin/busybox: the real packages' listings.
    #[test]
    fn busybox_is_found_where_each_debian_release_puts_it() {
        let list = |name: &str| {
            std::fs::read_to_string(format!(
                "{}/../tests/fixtures/busybox/{name}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap()
        };
        assert_eq!(
            busybox_in(&list(
                "bookworm-busybox-static_1.35.0-4+deb12u1+b1_arm64.list"
            ))
            .as_deref(),
            Some("bin/busybox")
        );
        assert_eq!(
            busybox_in(&list("trixie-busybox-static_1.37.0-6+b9_arm64.list")).as_deref(),
            Some("usr/bin/busybox")
        );
        // The initramfs hook named zz-busybox is not it.
        assert_eq!(
            busybox_in("-rwxr-xr-x root/root 1019 2025-05-19 11:29 ./usr/share/initramfs-tools/hooks/zz-busybox"),
            None
        );
    }
    use super::*;

    /// The refusal names the host and both ways out; what it names must be
    /// true of this harness (a tarball source, --no-setup).
    #[test]
    fn refusal_names_the_host_and_what_to_do() {
        let os = include_str!("../../../tests/fixtures/os-release/debian-12");
        let e = refusal("apt has no installable candidate for: linux-source-6.1", os);
        assert!(
            e.starts_with("apt has no installable candidate for: linux-source-6.1\nThis host is "),
            "{e}"
        );
        assert!(
            e.contains("Debian 12 (bookworm)")
                && e.contains("debian:bookworm")
                && e.contains("--no-setup"),
            "{e}"
        );
        assert!(e.contains("source = { release = "), "{e}");
        assert!(
            e.contains("This host is Debian GNU/Linux 12 (bookworm)."),
            "{e}"
        );
    }

    /// /etc/os-release as Fedora 41, Arch and openSUSE Tumbleweed ship it:
    /// the refusal gives this host's own install command and what it
    /// lacks; a host whose manager is not known gets Debian's names.
    #[test]
    fn the_refusal_speaks_the_hosts_package_manager() {
        let fx = |name: &str| {
            std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../tests/fixtures/os-release")
                    .join(name),
            )
            .unwrap()
        };
        let fedora = refusal("cannot run dpkg-query", &fx("fedora-41"));
        assert!(
            fedora.contains("This host is Fedora Linux 41 (Forty One)."),
            "{fedora}"
        );
        assert!(
            fedora.contains("\n    sudo dnf install make gcc glibc-static flex bison"),
            "{fedora}"
        );
        assert!(fedora.contains("builds kernels only") && fedora.contains("--no-setup"));
        let arch = refusal("cannot run dpkg-query", &fx("arch"));
        assert!(
            arch.contains("\n    sudo pacman -S --needed base-devel bc"),
            "{arch}"
        );
        assert!(arch.contains("aarch64-linux-gnu-glibc"), "{arch}");
        // Rocky says it is like Fedora.
        let rocky = "NAME=\"Rocky Linux\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\n";
        assert_eq!(
            other_manager(rocky).map(|m| m.install),
            Some("sudo dnf install")
        );
        let suse = refusal("cannot run dpkg-query", &fx("opensuse-tumbleweed"));
        assert!(suse.contains("This host is openSUSE Tumbleweed."), "{suse}");
        assert!(
            suse.contains("busybox-static, libcap-dev") && !suse.contains("sudo "),
            "{suse}"
        );
        for debian in ["debian-12", "debian-13"] {
            assert_eq!(other_manager(&fx(debian)), None);
        }
        assert!(refusal("x", "").contains("This host is an unknown system"));
    }

    /// `apt-get install -s busybox` on a host with busybox-static (the
    /// capture): the package apt would remove is found, with its version;
    /// the packages it would install are not.
    #[test]
    fn a_dry_run_names_what_apt_would_remove() {
        let sim = include_str!("../../../tests/fixtures/apt/install-busybox-simulated.txt");
        assert_eq!(removals(sim), ["busybox-static [1:1.35.0-4+deb12u1+b1]"]);
        let none = sim.replace("Remv ", "Inst ");
        assert!(removals(&none).is_empty());
    }

    /// On this (Debian) host apt knows the packages; a made-up one has no
    /// candidate. Skips, saying so, where apt-cache is absent; fails there
    /// under CI.
    #[test]
    fn uninstallable_finds_packages_apt_cannot_install() {
        if !std::path::Path::new("/usr/bin/apt-cache").exists() {
            assert!(
                !crate::host::ui::ci(),
                "uninstallable_finds_packages_apt_cannot_install: apt-cache is missing, and CI is set"
            );
            eprintln!(
                "uninstallable_finds_packages_apt_cannot_install: SKIPPED: no apt-cache here"
            );
            return;
        }
        let got =
            uninstallable(&["make".to_string(), "kmatrix-no-such-package".to_string()]).unwrap();
        assert_eq!(got, ["kmatrix-no-such-package"]);
    }
}
