//! Host set-up: installs the Debian/Ubuntu packages the harness needs
//! (`cargo xtask setup`, also run by `matrix` when something is missing),
//! and fetches the arm64 static busybox that has no installable package.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

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
    ("ccache", "faster rebuilds"),
    ("busybox-static", "x86_64 guest userland"),
    ("libcap-dev", "seccomp_bpf links libcap (x86_64)"),
    ("libcap-dev:arm64", "seccomp_bpf links libcap (arm64)"),
    ("gcc-aarch64-linux-gnu", "arm64 kernel and guest programs"),
    ("libc6-dev-arm64-cross", "static arm64 guest programs"),
    ("qemu-system-x86", "x86_64 guests"),
    ("qemu-system-arm", "arm64 guests"),
];

fn missing(packages: &[String]) -> Result<Vec<String>> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Package}:${Architecture} ${db:Status-Abbrev}\n"])
        .args(packages)
        .output()
        .context("running dpkg-query: is this a Debian/Ubuntu machine?")?;
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

fn native_arch() -> String {
    Command::new("dpkg")
        .arg("--print-architecture")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "amd64".into())
}

/// Runs a command as root: directly when we are root, else through sudo.
fn as_root(args: &[&str]) -> Result<()> {
    let is_root = unsafe { libc::geteuid() } == 0;
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
    let st = cmd.status().with_context(|| format!("running {}", args.join(" ")))?;
    if !st.success() {
        bail!("`{}{}` failed ({st})", if is_root { "" } else { "sudo " }, args.join(" "));
    }
    Ok(())
}

/// Ensures every package is installed; `extra` adds e.g. linux-source-X.Y.
pub fn ensure(extra: &[String]) -> Result<()> {
    let mut wanted: Vec<String> = PACKAGES.iter().map(|(p, _)| p.to_string()).collect();
    wanted.extend(extra.iter().cloned());
    let todo = missing(&wanted)?;
    if todo.is_empty() {
        return Ok(());
    }
    eprintln!("kmatrix setup: installing {}", todo.join(" "));
    let foreign = Command::new("dpkg").arg("--print-foreign-architectures").output()?;
    if !String::from_utf8_lossy(&foreign.stdout).lines().any(|a| a == "arm64") {
        as_root(&["dpkg", "--add-architecture", "arm64"])?;
    }
    as_root(&["apt-get", "update", "-q"])?;
    // --no-install-recommends keeps the image small; on these machines it also
    // lets apt replace the backported qemu-utils that conflicts with 7.2.
    let mut args = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    args.extend(todo.iter().map(String::as_str));
    as_root(&args)?;
    let still = missing(&wanted)?;
    if !still.is_empty() {
        bail!("packages still missing after apt-get install: {}", still.join(" "));
    }
    Ok(())
}

/// The static busybox for a guest arch. arm64's comes from the Debian
/// package, downloaded and unpacked into the cache (it cannot be installed
/// beside the amd64 one).
pub fn busybox(arch: &str, cache: &crate::cache::Cache) -> Result<PathBuf> {
    if arch == "x86_64" {
        let p = PathBuf::from("/bin/busybox");
        if !p.exists() {
            bail!("/bin/busybox is missing: run `cargo xtask setup` (package busybox-static)");
        }
        return Ok(p);
    }
    let dir = cache.dir(&["busybox", arch]);
    let bin = dir.join("bin/busybox");
    if bin.exists() {
        return Ok(bin);
    }
    let dl = cache.dir(&["busybox", "download"]);
    std::fs::create_dir_all(&dl)?;
    let st = Command::new("apt-get")
        // Root downloading into a root-owned dir: no _apt sandbox user needed.
        .args(["-o", "APT::Sandbox::User=root", "download", "busybox-static:arm64"])
        .current_dir(&dl)
        .status()
        .context("apt-get download busybox-static:arm64")?;
    if !st.success() {
        bail!("`apt-get download busybox-static:arm64` failed in {}", dl.display());
    }
    let deb = std::fs::read_dir(&dl)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("_arm64.deb"))
        .context("no busybox-static arm64 .deb downloaded")?;
    let st = Command::new("dpkg").arg("-x").arg(&deb).arg(&dir).status()?;
    if !st.success() || !bin.exists() {
        bail!("unpacking {} did not give {}", deb.display(), bin.display());
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_package_says_why() {
        for (p, why) in super::PACKAGES {
            assert!(!p.is_empty() && !why.is_empty());
        }
    }
}
