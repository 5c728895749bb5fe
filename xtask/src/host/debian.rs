//! A pinned Debian package fetched into the cache with apt, on any host
//! that has apt and Debian's archive keyring (Debian 12 or 13): apt runs
//! with its own sources list, package lists and download directory under
//! the cache, so the host's apt configuration, lists and installed
//! packages are neither read nor changed. This is how a Debian 13 host
//! builds Debian 12's `linux-source-6.1`, and every host builds the same
//! `linux-source-6.12` whatever its own release ships.
//!
//! The archive: `KMATRIX_DEBIAN_MIRROR` (default http://deb.debian.org/debian)
//! for SUITE and SUITE-updates, `KMATRIX_DEBIAN_SECURITY` (default: the
//! mirror's URL with `-security`) for SUITE-security, checked against
//! `KMATRIX_DEBIAN_KEYRING` (default Debian's archive keyring).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::host::cache::Cache;
use crate::host::proc::{self, limit};

pub const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";
pub const DEFAULT_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Where a suite's packages come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Archive {
    pub mirror: String,
    pub security: String,
    pub keyring: String,
    /// dpkg's native architecture: the only one whose lists are fetched
    /// (the kernel source packages are `all`).
    pub arch: String,
}

impl Archive {
    pub fn from_env() -> Archive {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let mirror = var("KMATRIX_DEBIAN_MIRROR")
            .unwrap_or_else(|| DEFAULT_MIRROR.into())
            .trim_end_matches('/')
            .to_string();
        let security = var("KMATRIX_DEBIAN_SECURITY")
            .unwrap_or_else(|| format!("{mirror}-security"))
            .trim_end_matches('/')
            .to_string();
        let keyring = var("KMATRIX_DEBIAN_KEYRING").unwrap_or_else(|| DEFAULT_KEYRING.into());
        Archive {
            mirror,
            security,
            keyring,
            arch: crate::host::setup::native_arch(),
        }
    }

    /// apt's deb822 sources for `suite`.
    pub fn sources(&self, suite: &str) -> String {
        format!(
            "Types: deb\nURIs: {m}\nSuites: {suite} {suite}-updates\nComponents: main\n\
             Architectures: {a}\nSigned-By: {k}\n\n\
             Types: deb\nURIs: {s}\nSuites: {suite}-security\nComponents: main\n\
             Architectures: {a}\nSigned-By: {k}\n",
            m = self.mirror,
            s = self.security,
            k = self.keyring,
            a = self.arch
        )
    }
}

/// The version of `package` dpkg has installed, if any.
pub fn installed_version(package: &str) -> Option<String> {
    let mut c = Command::new("dpkg-query");
    c.args(["-W", "-f=${db:Status-Abbrev} ${Version}", package]);
    let out = crate::host::proc::query(c)?;
    let (status, version) = out.stdout.trim().split_once(' ')?;
    (out.success() && status.starts_with("ii")).then(|| version.trim().to_string())
}

/// apt with every path under `dir`: nothing of the host's apt is used but
/// its binaries and the keyring.
fn apt(program: &str, dir: &Path) -> Command {
    let mut c = Command::new(program);
    let o = |k: &str, v: &Path| format!("{k}={}", v.display());
    c.arg("-o")
        .arg("Dir::Etc::SourceList=/dev/null")
        .arg("-o")
        .arg(o("Dir::Etc::SourceParts", &dir.join("sources.list.d")))
        .arg("-o")
        .arg(o("Dir::Etc::Preferences", Path::new("/dev/null")))
        .arg("-o")
        .arg(o("Dir::Etc::PreferencesParts", &dir.join("preferences.d")))
        .arg("-o")
        .arg(o("Dir::State::Lists", &dir.join("lists")))
        .arg("-o")
        .arg(o("Dir::Cache", &dir.join("cache")))
        .arg("-o")
        .arg("Acquire::Languages=none")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("LC_ALL", "C");
    if nix::unistd::geteuid().is_root() {
        // Root downloading into root's cache: no _apt sandbox user.
        c.args(["-o", "APT::Sandbox::User=root"]);
    }
    c
}

/// `cache/src/debian/PACKAGE_VERSION/`, holding the package's files
/// (`usr/src/...`), fetched from `suite` unless already there.
pub fn fetch(
    package: &str,
    version: &str,
    suite: &str,
    cache: &Cache,
    log: &mut dyn FnMut(&str),
) -> Result<PathBuf> {
    let root = cache.dir(&["src", "debian"]);
    let out = root.join(format!("{package}_{version}"));
    let done = out.join(".kmatrix-unpacked");
    if done.exists() {
        return Ok(out);
    }
    let archive = Archive::from_env();
    if !Path::new(&archive.keyring).exists() {
        bail!(
            "{package} {version}: apt needs Debian's archive keyring at {} to check the \
             download (package debian-archive-keyring; or set KMATRIX_DEBIAN_KEYRING), \
             or point the kernel's source at a tarball",
            archive.keyring
        );
    }
    let dir = root.join(format!("apt-{suite}"));
    for sub in [
        "sources.list.d",
        "preferences.d",
        "lists/partial",
        "cache/archives/partial",
    ] {
        std::fs::create_dir_all(dir.join(sub))
            .with_context(|| format!("creating {}", dir.join(sub).display()))?;
    }
    crate::host::cache::write_atomic(
        &dir.join("sources.list.d/kmatrix.sources"),
        archive.sources(suite).as_bytes(),
    )?;
    log(&format!(
        "fetching {package} {version} from {} ({suite}, {suite}-updates, {suite}-security) \
         into the cache; the host's packages are not changed",
        archive.mirror
    ));
    let mut up = apt("apt-get", &dir);
    up.args(["update", "-q"]);
    let f = proc::run(up, limit::scaled(limit::APT)).context("running apt-get update")?;
    // apt-get update exits 0 on some failed sources: its W:/E: lines tell.
    let bad: Vec<&str> = f
        .stdout
        .lines()
        .chain(f.stderr.lines())
        .filter(|l| l.starts_with("E:") || l.starts_with("Err:"))
        .collect();
    if !f.success() || !bad.is_empty() {
        bail!(
            "apt-get update for {suite} at {} failed:\n{}",
            archive.mirror,
            crate::util::tail(&format!("{}\n{}", f.stdout, f.stderr), 12)
        );
    }
    let debs = dir.join("debs");
    let _ = std::fs::remove_dir_all(&debs);
    std::fs::create_dir_all(&debs)?;
    let mut get = apt("apt-get", &dir);
    get.args(["download", "-q", &format!("{package}={version}")])
        .current_dir(&debs);
    let f = proc::run(get, limit::scaled(limit::APT)).context("running apt-get download")?;
    if !f.success() {
        let mut madison = apt("apt-cache", &dir);
        madison.args(["madison", package]);
        let known = proc::run(madison, limit::scaled(limit::APT))
            .map(|m| {
                m.stdout
                    .lines()
                    .filter_map(|l| l.split('|').nth(1).map(|v| v.trim().to_string()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        bail!(
            "{package} {version} is not in {suite}, {suite}-updates or {suite}-security at {} \
             ({}):\n{}",
            archive.mirror,
            if known.is_empty() {
                "no version of it there".to_string()
            } else {
                format!("it has {}", known.join(", "))
            },
            crate::util::tail(&f.stderr, 5)
        );
    }
    let deb = std::fs::read_dir(&debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .with_context(|| format!("apt-get download {package}={version} wrote no .deb"))?;
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    let mut x = Command::new("dpkg-deb");
    x.arg("-x").arg(&deb).arg(&out);
    proc::checked(
        &format!("unpacking {}", deb.display()),
        x,
        limit::scaled(limit::TAR),
    )?;
    std::fs::write(&done, format!("{package} {version}\n"))?;
    let _ = std::fs::remove_dir_all(&debs);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_the_suite_its_updates_and_security_with_the_keyring() {
        let a = Archive {
            mirror: "http://m/debian".into(),
            security: "http://m/debian-security".into(),
            keyring: "/k.gpg".into(),
            arch: "amd64".into(),
        };
        assert_eq!(
            a.sources("bookworm"),
            "Types: deb\nURIs: http://m/debian\nSuites: bookworm bookworm-updates\n\
             Components: main\nArchitectures: amd64\nSigned-By: /k.gpg\n\n\
             Types: deb\nURIs: http://m/debian-security\nSuites: bookworm-security\n\
             Components: main\nArchitectures: amd64\nSigned-By: /k.gpg\n"
        );
    }
}
